/*
 * sl_ring.h - single-producer single-consumer ring over shared memory.
 *
 * A local view (struct sl_ring) of a ring whose control block and entries
 * live in a shared segment (sl_shm.h).  Each side keeps its own index
 * privately and publishes it; it caches the other side's index and reloads
 * it only when the ring looks full (producer) or empty (consumer), as
 * DPDK's rte_ring and UCX's mm FIFO do.  The other side's index is never
 * trusted: if tail - head exceeds the capacity the ring is corrupt and the
 * call returns -EPROTO.
 *
 * Ordering edges:
 *   P1 producer fills entries, then store-release tail.   pairs with C1.
 *   C1 consumer load-acquire tail, then reads entries.     pairs with P1.
 *   C2 consumer reads entries, then store-release head.    pairs with P2.
 *   P2 producer load-acquire head, then overwrites slots.  pairs with C2.
 *
 * Sleep/wake handshake (io_uring SQPOLL):
 *   consumer: set NEED_WAKEUP; full fence (W1); re-check tail; sleep.
 *   producer: store-release tail; full fence (W2); read flags; if
 *             NEED_WAKEUP, kick the eventfd.
 *   W1 pairs with W2: either the consumer sees the new tail, or the
 *   producer sees the flag; a wake-up is never lost.
 */
#ifndef SL_RING_H
#define SL_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sl_barrier.h"
#include "sl_shm.h"

struct sl_ring {
	uint32_t *shm_head;	/* consumer-written */
	uint32_t *shm_tail;	/* producer-written */
	uint32_t *shm_flags;	/* consumer-written */
	uint8_t *entries;
	uint32_t mask;		/* ring_entries - 1 */
	uint32_t entry_size;	/* bytes */
	uint32_t local;		/* our own index: tail (producer) or head (consumer) */
	uint32_t cached;	/* last seen index of the other side */
};

static inline uint32_t sl_ring_capacity(const struct sl_ring *r)
{
	return r->mask + 1;
}

static inline void *sl_ring_slot(const struct sl_ring *r, uint32_t idx)
{
	return r->entries + (size_t)(idx & r->mask) * r->entry_size;
}

/*
 * sl_ring_init - build a local view from a segment and its offsets.
 * @base, @seg_size: the mapping.  @off: the ring's offsets from the header.
 * @producer: true for the producing side (initial local index = tail).
 * Validates every offset and size against the mapping.
 * Returns 0 or -EPROTO.
 */
static inline int sl_ring_init(struct sl_ring *r, void *base, uint64_t seg_size,
			       const struct sl_ring_offsets *off,
			       uint32_t want_entry_size, bool producer)
{
	uint64_t n = off->ring_entries;
	uint8_t *b = base;

	if (n == 0 || (n & (n - 1)) != 0 || n > (1u << 24) || want_entry_size == 0 ||
	    off->entry_size != want_entry_size || off->rsvd != 0 || seg_size < 4)
		return -EPROTO;
	if (off->head > seg_size - 4 || off->tail > seg_size - 4 ||
	    off->flags > seg_size - 4 || (off->head | off->tail | off->flags) & 3)
		return -EPROTO;
	if (off->entries > seg_size || n * off->entry_size > seg_size - off->entries ||
	    off->entries % 8)
		return -EPROTO;
	r->shm_head = (uint32_t *)(b + off->head);
	r->shm_tail = (uint32_t *)(b + off->tail);
	r->shm_flags = (uint32_t *)(b + off->flags);
	r->entries = b + off->entries;
	r->mask = (uint32_t)n - 1;
	r->entry_size = off->entry_size;
	if (producer) {
		r->local = SL_READ_ONCE(r->shm_tail);
		r->cached = SL_READ_ONCE(r->shm_head);
	} else {
		r->local = SL_READ_ONCE(r->shm_head);
		r->cached = SL_READ_ONCE(r->shm_tail);
	}
	return 0;
}

/*
 * sl_ring_prod_space - free slots for the producer, refreshing the cached
 * consumer index only when fewer than @want are known free.
 * Returns the count (0 = full) or -EPROTO when the consumer's index is
 * impossible.
 */
static inline int64_t sl_ring_prod_space(struct sl_ring *r, uint32_t want)
{
	uint32_t cap = sl_ring_capacity(r);
	uint32_t used = r->local - r->cached;

	if (used > cap || cap - used < want) {
		r->cached = sl_load_acquire(r->shm_head);	/* P2, pairs with C2 */
		used = r->local - r->cached;
		if (used > cap)
			return -EPROTO;
	}
	return cap - used;
}

/* The slot the next produced entry goes into; only valid if space > 0. */
static inline void *sl_ring_prod_slot(struct sl_ring *r, uint32_t i)
{
	return sl_ring_slot(r, r->local + i);
}

/* Publish @n filled slots. */
static inline void sl_ring_prod_commit(struct sl_ring *r, uint32_t n)
{
	r->local += n;
	sl_store_release(r->shm_tail, r->local);	/* P1, pairs with C1 */
}

/*
 * sl_ring_cons_avail - entries ready for the consumer, refreshing the cached
 * producer index only when the ring looks empty.
 * Returns the count or -EPROTO when the producer's index is impossible;
 * -EPROTO is final for the ring (the peer broke the protocol).
 */
static inline int64_t sl_ring_cons_avail(struct sl_ring *r)
{
	uint32_t cap = sl_ring_capacity(r);
	uint32_t avail = r->cached - r->local;

	if (avail == 0) {
		r->cached = sl_load_acquire(r->shm_tail);	/* C1, pairs with P1 */
		avail = r->cached - r->local;
	}
	if (avail > cap)
		return -EPROTO;
	return avail;
}

static inline void *sl_ring_cons_slot(struct sl_ring *r, uint32_t i)
{
	return sl_ring_slot(r, r->local + i);
}

/* Release @n consumed slots back to the producer. */
static inline void sl_ring_cons_release(struct sl_ring *r, uint32_t n)
{
	r->local += n;
	sl_store_release(r->shm_head, r->local);	/* C2, pairs with P2 */
}

/*
 * Wake-up handshake, producer side: call after sl_ring_prod_commit().
 * Returns true when the consumer asked to be woken (the caller then writes
 * the eventfd).  W2, pairs with W1.
 */
static inline bool sl_ring_prod_needs_wakeup(const struct sl_ring *r)
{
	sl_smp_mb();
	return SL_READ_ONCE(r->shm_flags) & SL_RING_NEED_WAKEUP;
}

/*
 * Wake-up handshake, consumer side: announce the intent to sleep.  Returns
 * the entries available after the announcement (> 0: do not sleep; the
 * caller should clear the flag with sl_ring_cons_wake()), or -EPROTO.
 * W1, pairs with W2.
 */
static inline int64_t sl_ring_cons_prepare_sleep(struct sl_ring *r)
{
	sl_flags_or(r->shm_flags, SL_RING_NEED_WAKEUP);
	sl_smp_mb();
	r->cached = r->local;	/* force a reload of the producer index */
	return sl_ring_cons_avail(r);
}

static inline void sl_ring_cons_wake(struct sl_ring *r)
{
	sl_flags_andnot(r->shm_flags, SL_RING_NEED_WAKEUP);
}

#endif /* SL_RING_H */
