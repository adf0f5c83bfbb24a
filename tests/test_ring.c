/*
 * test_ring.c - the shared-memory SPSC ring (sl_ring.h): offset
 * validation, index wrap-around, full/empty edges, corrupt indices, the
 * sleep/wake-up handshake, and a producer and consumer in two processes.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sl_ring.h"

/*
 * ck_assert() marks a point on every pass, which in fork mode is a message
 * to the parent; loops of millions of checks test first and assert only on
 * failure.
 */
#define HOT_ASSERT(expr, ...) \
	do { \
		if (!(expr)) \
			ck_assert_msg(expr, __VA_ARGS__); \
	} while (0)

/* A segment holding one ring: [ struct sl_ring_ctl | entries ]. */
struct test_seg {
	uint8_t *base;
	uint64_t size;
	struct sl_ring_ctl *ctl;
	struct sl_ring_offsets off;
};

static uint64_t seg_bytes(uint32_t n, uint32_t esz)
{
	return sizeof(struct sl_ring_ctl) + (uint64_t)n * esz;
}

static void seg_layout(struct test_seg *s, uint32_t n, uint32_t esz)
{
	memset(&s->off, 0, sizeof(s->off));
	s->off.head = offsetof(struct sl_ring_ctl, head);
	s->off.tail = offsetof(struct sl_ring_ctl, tail);
	s->off.flags = offsetof(struct sl_ring_ctl, flags);
	s->off.entries = sizeof(struct sl_ring_ctl);
	s->off.ring_entries = n;
	s->off.entry_size = esz;
	s->off.rsvd = 0;
	s->size = seg_bytes(n, esz);
	s->ctl = (struct sl_ring_ctl *)s->base;
}

/*
 * Heap segment of exactly the ring's size, so valgrind flags any access
 * the ring makes outside it.
 */
static void seg_alloc(struct test_seg *s, uint32_t n, uint32_t esz)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, SL_CACHELINE, (size_t)seg_bytes(n, esz)), 0);
	memset(p, 0, (size_t)seg_bytes(n, esz));
	s->base = p;
	seg_layout(s, n, esz);
}

static void seg_free(struct test_seg *s)
{
	free(s->base);
	s->base = NULL;
}

/* Both views of one ring, with both indices starting at @start. */
static void ring_pair(struct test_seg *s, uint32_t start, uint32_t esz,
		      struct sl_ring *prod, struct sl_ring *cons)
{
	SL_WRITE_ONCE(&s->ctl->tail, start);
	SL_WRITE_ONCE(&s->ctl->head, start);
	ck_assert_int_eq(sl_ring_init(prod, s->base, s->size, &s->off, esz, true), 0);
	ck_assert_int_eq(sl_ring_init(cons, s->base, s->size, &s->off, esz, false), 0);
}

/* Push up to @want consecutive values from *@next; returns how many. */
static uint32_t push_u32(struct sl_ring *p, uint32_t want, uint32_t *next)
{
	int64_t space = sl_ring_prod_space(p, want);
	uint32_t n;

	ck_assert_int_ge(space, 0);
	n = (uint32_t)space < want ? (uint32_t)space : want;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = (*next)++;

		memcpy(sl_ring_prod_slot(p, i), &v, sizeof(v));
	}
	sl_ring_prod_commit(p, n);
	return n;
}

/* Pop up to @want values, each of which must be *@expect, then +1. */
static uint32_t pop_u32(struct sl_ring *c, uint32_t want, uint32_t *expect)
{
	int64_t avail = sl_ring_cons_avail(c);
	uint32_t n;

	ck_assert_int_ge(avail, 0);
	n = (uint32_t)avail < want ? (uint32_t)avail : want;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v;

		memcpy(&v, sl_ring_cons_slot(c, i), sizeof(v));
		HOT_ASSERT(v == *expect, "got %u, expected %u", v, *expect);
		(*expect)++;
	}
	sl_ring_cons_release(c, n);
	return n;
}

/* xorshift64*: fixed seed, so a failure reproduces. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* ------------------------------------------------------------------ */

START_TEST(test_init_ok)
{
	struct test_seg s;
	struct sl_ring p, c;

	seg_alloc(&s, 8, 4);
	SL_WRITE_ONCE(&s.ctl->tail, 7u);
	SL_WRITE_ONCE(&s.ctl->head, 5u);
	ck_assert_int_eq(sl_ring_init(&p, s.base, s.size, &s.off, 4, true), 0);
	ck_assert_int_eq(sl_ring_init(&c, s.base, s.size, &s.off, 4, false), 0);
	ck_assert_uint_eq(sl_ring_capacity(&p), 8);
	ck_assert_uint_eq(p.local, 7);
	ck_assert_uint_eq(p.cached, 5);
	ck_assert_uint_eq(c.local, 5);
	ck_assert_uint_eq(c.cached, 7);
	ck_assert_ptr_eq(p.shm_tail, &s.ctl->tail);
	ck_assert_ptr_eq(p.shm_head, &s.ctl->head);
	ck_assert_ptr_eq(p.shm_flags, &s.ctl->flags);
	ck_assert_ptr_eq(p.entries, s.base + sizeof(struct sl_ring_ctl));
	ck_assert_int_eq(sl_ring_cons_avail(&c), 2);
	ck_assert_int_eq(sl_ring_prod_space(&p, 1), 6);

	/* A single-entry ring and the largest ring are valid. */
	s.off.ring_entries = 1;
	ck_assert_int_eq(sl_ring_init(&p, s.base, s.size, &s.off, 4, true), 0);
	ck_assert_uint_eq(sl_ring_capacity(&p), 1);
	seg_free(&s);

	s.base = calloc(1, (size_t)seg_bytes(1u << 24, 1));
	ck_assert_ptr_nonnull(s.base);
	seg_layout(&s, 1u << 24, 1);
	ck_assert_int_eq(sl_ring_init(&p, s.base, s.size, &s.off, 1, true), 0);
	ck_assert_uint_eq(sl_ring_capacity(&p), 1u << 24);
	seg_free(&s);
}
END_TEST

/* Each mutated offsets block must be rejected against the same segment. */
static void expect_init_eproto(const struct test_seg *s,
			       const struct sl_ring_offsets *off,
			       uint64_t seg_size, uint32_t want_esz)
{
	struct sl_ring r;

	ck_assert_int_eq(sl_ring_init(&r, s->base, seg_size, off, want_esz, true), -EPROTO);
	ck_assert_int_eq(sl_ring_init(&r, s->base, seg_size, off, want_esz, false), -EPROTO);
}

START_TEST(test_init_bad_offsets)
{
	struct test_seg s;
	struct sl_ring_offsets o;
	struct sl_ring r;

	seg_alloc(&s, 8, 8);
	ck_assert_int_eq(sl_ring_init(&r, s.base, s.size, &s.off, 8, true), 0);

	/* ring_entries: zero, not a power of two, over 1 << 24. */
	static const uint32_t bad_n[] = {
		0, 3, 6, 7, 9, 12, 1000, (1u << 24) + 1, 1u << 25, 1u << 31,
		UINT32_MAX,
	};
	for (size_t i = 0; i < sizeof(bad_n) / sizeof(bad_n[0]); i++) {
		o = s.off;
		o.ring_entries = bad_n[i];
		expect_init_eproto(&s, &o, s.size, 8);
	}

	/* entry_size not the one the caller expects. */
	o = s.off;
	o.entry_size = 4;
	expect_init_eproto(&s, &o, s.size, 8);
	o.entry_size = 16;
	expect_init_eproto(&s, &o, s.size, 8);
	o.entry_size = 0;
	expect_init_eproto(&s, &o, s.size, 8);
	o = s.off;
	expect_init_eproto(&s, &o, s.size, 64);	/* SQE-sized caller */

	/* rsvd must be 0. */
	o = s.off;
	o.rsvd = 1;
	expect_init_eproto(&s, &o, s.size, 8);
	o.rsvd = 1ull << 63;
	expect_init_eproto(&s, &o, s.size, 8);

	/* Entries beyond the segment, partly or wholly, or overflowing. */
	o = s.off;
	o.entries = s.size - 8 * 8 + 8;
	expect_init_eproto(&s, &o, s.size, 8);
	o.entries = s.size;
	expect_init_eproto(&s, &o, s.size, 8);
	o.entries = s.size + 8;
	expect_init_eproto(&s, &o, s.size, 8);
	o.entries = UINT64_MAX - 7;
	expect_init_eproto(&s, &o, s.size, 8);
	o = s.off;
	expect_init_eproto(&s, &o, s.size - 1, 8);	/* segment one short */
	o = s.off;
	o.ring_entries = 1u << 24;	/* n * size far over the mapping */
	expect_init_eproto(&s, &o, s.size, 8);

	/* Entries misaligned. */
	for (uint64_t d = 1; d < 8; d++) {
		o = s.off;
		o.entries = s.off.entries - 8 + d;
		expect_init_eproto(&s, &o, s.size, 8);
	}

	/* head / tail / flags misaligned, or not wholly inside the segment. */
	for (int which = 0; which < 3; which++) {
		const uint64_t bad_off[] = {
			1, 2, 3, 129, 130, 131, s.size - 3, s.size - 2, s.size,
			s.size + 4, UINT64_MAX - 3,
		};

		for (size_t i = 0; i < sizeof(bad_off) / sizeof(bad_off[0]); i++) {
			uint64_t *field;

			o = s.off;
			field = which == 0 ? &o.head : which == 1 ? &o.tail : &o.flags;
			*field = bad_off[i];
			expect_init_eproto(&s, &o, s.size, 8);
		}
	}

	/* The last word of the segment is a valid place for an index. */
	o = s.off;
	o.flags = s.size - 4;
	ck_assert_int_eq(sl_ring_init(&r, s.base, s.size, &o, 8, false), 0);

	/* A segment too small for anything. */
	o = s.off;
	o.entries = 0;
	o.head = o.tail = o.flags = 0;
	expect_init_eproto(&s, &o, 2, 8);
	seg_free(&s);
}
END_TEST

START_TEST(test_wraparound)
{
	struct test_seg s;
	struct sl_ring p, c;
	uint32_t next = 0, expect = 0;
	uint64_t seed = 0x243f6a8885a308d3ull;
	const uint32_t total = 1000, start = 0xfffffff0u;
	int rounds = 0;

	seg_alloc(&s, 8, sizeof(uint32_t));
	ring_pair(&s, start, sizeof(uint32_t), &p, &c);
	ck_assert_uint_eq(sl_ring_capacity(&p), 8);

	while (expect < total) {
		uint32_t pw = 1 + (uint32_t)(rng_next(&seed) % 8);
		uint32_t cw = 1 + (uint32_t)(rng_next(&seed) % 8);

		if (pw > total - next)
			pw = total - next;
		if (pw > 0)
			push_u32(&p, pw, &next);
		/* Occupancy is never more than the capacity, and both sides
		 * agree on it once their caches are refreshed. */
		ck_assert_uint_le(next - expect, 8);
		ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->tail) - SL_READ_ONCE(&s.ctl->head),
				  next - expect);
		pop_u32(&c, cw, &expect);
		ck_assert_uint_le(expect, next);
		rounds++;
	}
	ck_assert_uint_eq(next, total);
	ck_assert_uint_eq(expect, total);
	/* The indices really did pass UINT32_MAX. */
	ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->tail), start + total);
	ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->head), start + total);
	ck_assert_uint_lt(SL_READ_ONCE(&s.ctl->tail), start);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 0);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 8);
	ck_assert_int_gt(rounds, (int)(total / 8));
	seg_free(&s);
}
END_TEST

START_TEST(test_full_edge)
{
	/* Once from 0, once straddling the wrap of the uint32 indices. */
	static const uint32_t starts[] = { 0, 0xfffffffcu, 0xfffffff8u };
	uint32_t start = starts[_i];
	struct test_seg s;
	struct sl_ring p, c;
	uint32_t next = 100, expect = 100;

	seg_alloc(&s, 8, sizeof(uint32_t));
	ring_pair(&s, start, sizeof(uint32_t), &p, &c);

	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 8);
	/* Asking for more than fits still reports what fits. */
	ck_assert_int_eq(sl_ring_prod_space(&p, 9), 8);
	ck_assert_uint_eq(push_u32(&p, 5, &next), 5);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 3);
	ck_assert_uint_eq(push_u32(&p, 8, &next), 3);
	ck_assert_int_eq(sl_ring_prod_space(&p, 1), 0);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 0);
	ck_assert_uint_eq(push_u32(&p, 1, &next), 0);
	ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->tail), start + 8);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 8);

	/* One slot freed is one slot available, and no more. */
	ck_assert_uint_eq(pop_u32(&c, 1, &expect), 1);
	ck_assert_int_eq(sl_ring_prod_space(&p, 1), 1);
	ck_assert_uint_eq(push_u32(&p, 2, &next), 1);
	ck_assert_int_eq(sl_ring_prod_space(&p, 1), 0);

	/*
	 * Drain.  The consumer saw 8 before the last publish and reloads the
	 * tail only when its cache says empty, so this takes two rounds.
	 */
	ck_assert_uint_eq(pop_u32(&c, 8, &expect), 7);
	ck_assert_uint_eq(pop_u32(&c, 8, &expect), 1);
	ck_assert_uint_eq(expect, next);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 8);
	seg_free(&s);
}
END_TEST

START_TEST(test_empty_edge)
{
	struct test_seg s;
	struct sl_ring p, c;
	uint32_t next = 0, expect = 0;

	seg_alloc(&s, 8, sizeof(uint32_t));
	ring_pair(&s, 0xfffffffeu, sizeof(uint32_t), &p, &c);

	ck_assert_int_eq(sl_ring_cons_avail(&c), 0);
	ck_assert_uint_eq(pop_u32(&c, 4, &expect), 0);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 0);

	ck_assert_uint_eq(push_u32(&p, 3, &next), 3);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 3);
	ck_assert_uint_eq(pop_u32(&c, 2, &expect), 2);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 1);
	ck_assert_uint_eq(pop_u32(&c, 2, &expect), 1);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 0);
	ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->head), 0xfffffffeu + 3);

	/* The consumer sees a later publish without re-initialising. */
	ck_assert_uint_eq(push_u32(&p, 8, &next), 8);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 8);
	ck_assert_uint_eq(pop_u32(&c, 8, &expect), 8);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 0);
	seg_free(&s);
}
END_TEST

START_TEST(test_corrupt_tail)
{
	struct test_seg s;
	struct sl_ring p, c;
	uint32_t next = 0, expect = 0, head;
	const uint32_t bad_delta[] = {
		9,		/* more published than the ring holds */
		100,
		0x80000000u,
		UINT32_MAX,	/* the tail moved behind the head */
		UINT32_MAX - 7,
	};

	seg_alloc(&s, 8, sizeof(uint32_t));
	ring_pair(&s, 0xfffffffau, sizeof(uint32_t), &p, &c);
	push_u32(&p, 5, &next);
	pop_u32(&c, 5, &expect);
	head = SL_READ_ONCE(&s.ctl->head);

	/* Exactly full is still a valid state. */
	SL_WRITE_ONCE(&s.ctl->tail, head + 8);
	ck_assert_int_eq(sl_ring_cons_avail(&c), 8);

	/*
	 * The consumer keeps an impossible tail in its cache, so every case
	 * starts from a fresh, empty view that has to reload the bad value.
	 */
	for (size_t i = 0; i < sizeof(bad_delta) / sizeof(bad_delta[0]); i++) {
		SL_WRITE_ONCE(&s.ctl->tail, head);
		ck_assert_int_eq(sl_ring_init(&c, s.base, s.size, &s.off, 4, false), 0);
		ck_assert_int_eq(sl_ring_cons_avail(&c), 0);
		SL_WRITE_ONCE(&s.ctl->tail, head + bad_delta[i]);
		ck_assert_int_eq(sl_ring_cons_avail(&c), -EPROTO);

		SL_WRITE_ONCE(&s.ctl->tail, head);
		ck_assert_int_eq(sl_ring_init(&c, s.base, s.size, &s.off, 4, false), 0);
		SL_WRITE_ONCE(&s.ctl->tail, head + bad_delta[i]);
		ck_assert_int_eq(sl_ring_cons_prepare_sleep(&c), -EPROTO);
		sl_ring_cons_wake(&c);
	}

	/* Corrupt before the consumer ever looked. */
	SL_WRITE_ONCE(&s.ctl->tail, 1000);
	SL_WRITE_ONCE(&s.ctl->head, 0);
	ck_assert_int_eq(sl_ring_init(&c, s.base, s.size, &s.off, 4, false), 0);
	ck_assert_int_eq(sl_ring_cons_avail(&c), -EPROTO);
	seg_free(&s);
}
END_TEST

START_TEST(test_corrupt_head)
{
	struct test_seg s;
	struct sl_ring p, c;
	uint32_t next = 0, tail;

	seg_alloc(&s, 8, sizeof(uint32_t));
	ring_pair(&s, 0xfffffffdu, sizeof(uint32_t), &p, &c);
	push_u32(&p, 3, &next);
	tail = SL_READ_ONCE(&s.ctl->tail);

	/*
	 * The producer reloads the consumer's index only when its cached one
	 * shows too little space, so each check asks for the whole ring.
	 */
	SL_WRITE_ONCE(&s.ctl->head, tail + 1);	/* consumed what was never produced */
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), -EPROTO);
	SL_WRITE_ONCE(&s.ctl->head, tail + 5);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), -EPROTO);
	SL_WRITE_ONCE(&s.ctl->head, tail - 9);	/* more in flight than fits */
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), -EPROTO);
	SL_WRITE_ONCE(&s.ctl->head, tail + 0x80000000u);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), -EPROTO);
	/* Exactly full and exactly empty are valid. */
	SL_WRITE_ONCE(&s.ctl->head, tail - 8);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 0);
	SL_WRITE_ONCE(&s.ctl->head, tail);
	ck_assert_int_eq(sl_ring_prod_space(&p, 8), 8);

	/* Corrupt before the producer ever looked. */
	SL_WRITE_ONCE(&s.ctl->tail, 0);
	SL_WRITE_ONCE(&s.ctl->head, 1);
	ck_assert_int_eq(sl_ring_init(&p, s.base, s.size, &s.off, 4, true), 0);
	ck_assert_int_eq(sl_ring_prod_space(&p, 1), -EPROTO);
	seg_free(&s);
}
END_TEST

START_TEST(test_wakeup_handshake)
{
	struct test_seg s;
	struct sl_ring p, c;
	uint32_t next = 0, expect = 0;

	seg_alloc(&s, 8, sizeof(uint32_t));
	ring_pair(&s, 0, sizeof(uint32_t), &p, &c);
	/* A bit the ring does not own must survive the handshake. */
	SL_WRITE_ONCE(&s.ctl->flags, 0x100u);

	ck_assert(!sl_ring_prod_needs_wakeup(&p));
	/* Empty: the consumer may sleep, and has said so. */
	ck_assert_int_eq(sl_ring_cons_prepare_sleep(&c), 0);
	ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->flags), 0x100u | SL_RING_NEED_WAKEUP);
	ck_assert(sl_ring_prod_needs_wakeup(&p));

	push_u32(&p, 2, &next);
	ck_assert(sl_ring_prod_needs_wakeup(&p));
	sl_ring_cons_wake(&c);
	ck_assert_uint_eq(SL_READ_ONCE(&s.ctl->flags), 0x100u);
	ck_assert(!sl_ring_prod_needs_wakeup(&p));
	ck_assert_uint_eq(pop_u32(&c, 8, &expect), 2);

	/*
	 * Entries published before the announcement: prepare_sleep must see
	 * them even though the consumer's cache says empty.
	 */
	ck_assert_int_eq(sl_ring_cons_avail(&c), 0);
	push_u32(&p, 3, &next);
	ck_assert_int_eq(sl_ring_cons_prepare_sleep(&c), 3);
	sl_ring_cons_wake(&c);
	ck_assert(!sl_ring_prod_needs_wakeup(&p));

	/* Also with a stale non-empty cache. */
	ck_assert_uint_eq(pop_u32(&c, 1, &expect), 1);
	push_u32(&p, 4, &next);
	ck_assert_int_eq(sl_ring_cons_prepare_sleep(&c), 6);
	sl_ring_cons_wake(&c);
	ck_assert_uint_eq(pop_u32(&c, 8, &expect), 6);
	ck_assert_uint_eq(expect, next);
	seg_free(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Two processes                                                        */
/* ------------------------------------------------------------------ */

#define XP_COUNT 1000000u
#define XP_ENTRIES 1024u
#define XP_BATCH 64u
#define XP_START 0xffff0000u	/* indices wrap during the run */

/* Child exit codes, distinct so a failure says where. */
enum { XP_EXIT_OK = 0, XP_EXIT_INIT = 10, XP_EXIT_PROTO = 11, XP_EXIT_EVFD = 12 };

static struct test_seg xp_seg;

static void xp_map(void)
{
	uint64_t size = seg_bytes(XP_ENTRIES, sizeof(uint64_t));
	void *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(m, MAP_FAILED);
	xp_seg.base = m;
	seg_layout(&xp_seg, XP_ENTRIES, sizeof(uint64_t));
	SL_WRITE_ONCE(&xp_seg.ctl->tail, XP_START);
	SL_WRITE_ONCE(&xp_seg.ctl->head, XP_START);
}

static void xp_unmap(void)
{
	munmap(xp_seg.base, (size_t)xp_seg.size);
	xp_seg.base = NULL;
}

/*
 * The producer child.  No Check calls here: the child must report through
 * its exit status only, and _exit() so that it never runs the parent's
 * test machinery or atexit handlers.  @kick_fd >= 0 enables the wake-up
 * protocol.
 */
static void __attribute__((noreturn)) xp_producer(pid_t parent, int kick_fd)
{
	struct sl_ring p;
	uint64_t seed = 0x13198a2e03707344ull;
	uint64_t next = 1;

	/* Do not outlive a parent that died or timed out. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(XP_EXIT_INIT);
	if (sl_ring_init(&p, xp_seg.base, xp_seg.size, &xp_seg.off,
			 sizeof(uint64_t), true) != 0)
		_exit(XP_EXIT_INIT);

	while (next <= XP_COUNT) {
		uint32_t want = 1 + (uint32_t)(rng_next(&seed) % XP_BATCH);
		int64_t space;
		uint32_t n;
		unsigned spins = 0;

		if (want > XP_COUNT - next + 1)
			want = (uint32_t)(XP_COUNT - next + 1);
		while ((space = sl_ring_prod_space(&p, want)) == 0) {
			sl_cpu_relax();
			if (++spins % 64 == 0)
				sched_yield();
		}
		if (space < 0)
			_exit(XP_EXIT_PROTO);
		n = (uint32_t)space < want ? (uint32_t)space : want;
		for (uint32_t i = 0; i < n; i++, next++)
			memcpy(sl_ring_prod_slot(&p, i), &next, sizeof(next));
		sl_ring_prod_commit(&p, n);
		if (kick_fd >= 0) {
			if (sl_ring_prod_needs_wakeup(&p)) {
				uint64_t one = 1;

				if (write(kick_fd, &one, sizeof(one)) != sizeof(one))
					_exit(XP_EXIT_EVFD);
			}
			/*
			 * Fall behind now and then, by a little or a lot, so
			 * that the consumer empties the ring and goes to sleep
			 * often, and publishes land at every point of its
			 * sleep announcement.
			 */
			uint64_t r = rng_next(&seed);

			if (r % 32 == 0) {
				struct timespec ts = { 0, 20000 };

				nanosleep(&ts, NULL);
			} else if (r % 4 == 0) {
				for (uint64_t i = (r >> 8) % 256; i > 0; i--)
					sl_cpu_relax();
			}
		}
	}
	_exit(XP_EXIT_OK);
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The consumer, in the test process.  Returns the number of entries
 * received in order; stops early on a wrong value, a corrupt ring, or no
 * progress for a long time, so that the child can be reaped either way.
 */
static uint64_t xp_consume(int kick_fd, uint64_t *bad_value, int64_t *err,
			   unsigned long *sleeps)
{
	struct sl_ring c;
	uint64_t expect = 1, seed = 0xa4093822299f31d0ull;
	double last_progress = now_sec();
	unsigned spins = 0;

	*bad_value = 0;
	*sleeps = 0;
	*err = sl_ring_init(&c, xp_seg.base, xp_seg.size, &xp_seg.off,
			    sizeof(uint64_t), false);
	if (*err)
		return 0;

	while (expect <= XP_COUNT) {
		int64_t avail = sl_ring_cons_avail(&c);
		uint32_t want = 1 + (uint32_t)(rng_next(&seed) % XP_BATCH);
		uint32_t n;

		if (avail < 0) {
			*err = avail;
			break;
		}
		if (avail == 0) {
			if (++spins % 1024 == 0 && now_sec() - last_progress > 30) {
				*err = -ETIMEDOUT;
				break;
			}
			if (kick_fd >= 0) {
				/* io_uring's order: announce, re-check, sleep. */
				int64_t a = sl_ring_cons_prepare_sleep(&c);

				if (a == 0) {
					struct pollfd pfd = { .fd = kick_fd, .events = POLLIN };
					uint64_t cnt;

					(*sleeps)++;
					/* A lost wake-up shows as this timing out. */
					if (poll(&pfd, 1, 20000) != 1) {
						*err = -ETIMEDOUT;
						break;
					}
					if (read(kick_fd, &cnt, sizeof(cnt)) != sizeof(cnt)) {
						*err = -EIO;
						break;
					}
				}
				sl_ring_cons_wake(&c);
				if (a < 0) {
					*err = a;
					break;
				}
				continue;
			}
			sl_cpu_relax();
			if (spins % 64 == 0)
				sched_yield();
			continue;
		}
		spins = 0;
		last_progress = now_sec();
		n = (uint32_t)avail < want ? (uint32_t)avail : want;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t v;

			memcpy(&v, sl_ring_cons_slot(&c, i), sizeof(v));
			if (v != expect) {
				*bad_value = v;
				return expect - 1;
			}
			expect++;
		}
		sl_ring_cons_release(&c, n);
	}
	return expect - 1;
}

static void run_two_process(bool use_wakeup)
{
	int kick_fd = -1, status = 0;
	uint64_t got, bad;
	int64_t err;
	unsigned long sleeps;
	pid_t pid, parent = getpid();

	xp_map();
	if (use_wakeup) {
		kick_fd = eventfd(0, EFD_CLOEXEC);
		ck_assert_int_ge(kick_fd, 0);
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		xp_producer(parent, kick_fd);

	got = xp_consume(kick_fd, &bad, &err, &sleeps);
	if (got != XP_COUNT)
		kill(pid, SIGKILL);	/* it may be spinning on a full ring */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (kick_fd >= 0)
		close(kick_fd);

	ck_assert_msg(bad == 0, "entry %llu was %llu",
		      (unsigned long long)got + 1, (unsigned long long)bad);
	ck_assert_int_eq(err, 0);
	ck_assert_msg(WIFEXITED(status), "producer died, status 0x%x", status);
	ck_assert_int_eq(WEXITSTATUS(status), XP_EXIT_OK);
	ck_assert_uint_eq(got, XP_COUNT);
	/* Nothing left over, and the indices wrapped past UINT32_MAX. */
	ck_assert_uint_eq(SL_READ_ONCE(&xp_seg.ctl->tail), XP_START + XP_COUNT);
	ck_assert_uint_eq(SL_READ_ONCE(&xp_seg.ctl->head), XP_START + XP_COUNT);
	if (use_wakeup) {
		ck_assert_uint_eq(SL_READ_ONCE(&xp_seg.ctl->flags) & SL_RING_NEED_WAKEUP, 0);
		/* The producer's pauses make sleeping all but certain; without
		 * any sleep the handshake was not tested at all. */
		ck_assert_uint_gt(sleeps, 0);
	}
	xp_unmap();
}

START_TEST(test_two_process_spin)
{
	run_two_process(false);
}
END_TEST

START_TEST(test_two_process_sleep)
{
	run_two_process(true);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc;

	tc = tcase_create("local");
	tcase_add_test(tc, test_init_ok);
	tcase_add_test(tc, test_init_bad_offsets);
	tcase_add_test(tc, test_wraparound);
	tcase_add_loop_test(tc, test_full_edge, 0, 3);
	tcase_add_test(tc, test_empty_edge);
	tcase_add_test(tc, test_corrupt_tail);
	tcase_add_test(tc, test_corrupt_head);
	tcase_add_test(tc, test_wakeup_handshake);
	suite_add_tcase(s, tc);

	tc = tcase_create("two_process");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_process_spin);
	tcase_add_test(tc, test_two_process_sleep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ring_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
