/*
 * verbs_wr.h - the pure parts of the verbs transport (verbs.c): what a
 * work completion status means as an errno, how a work request is built,
 * the send queue's selective-signaling bookkeeping, the send staging
 * ring, and the lkey map.  Nothing here touches a device, so
 * tests/test_verbs.c checks it all on a machine without RDMA.
 */
#ifndef SLD_VERBS_WR_H
#define SLD_VERBS_WR_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* ---- errors ---- */

/*
 * verbs_wc_errno - the errno (negative) a work completion status means for
 * its connection, 0 for IBV_WC_SUCCESS.  Every error status breaks the
 * connection (an RC QP is in the error state after one): WR_FLUSH_ERR is
 * -ECONNRESET (the QP was already broken), RETRY_EXC -ETIMEDOUT (the peer
 * stopped acknowledging), RNR_RETRY_EXC -ENOBUFS (the peer posted no
 * receive buffer for too long), REM_ACCESS -EACCES (a bad rkey or range
 * at the peer), LOC_PROT and LOC_ACCESS -EFAULT (a bad lkey or range
 * here), LOC_LEN -EMSGSIZE (a frame larger than the receive buffer),
 * REM_INV_REQ, REM_INV_RD_REQ and BAD_RESP -EPROTO, REM_OP -EREMOTEIO,
 * REM_ABORT -ECONNABORTED, RESP_TIMEOUT -ETIMEDOUT; the rest (and values
 * unknown to this build) -EIO.
 */
int verbs_wc_errno(enum ibv_wc_status status);

/*
 * verbs_cm_errno - the errno (negative) a connection manager event means
 * for its connection, from the event and its status field (a negative
 * errno for address, route and connect errors; a positive IB reject
 * reason for REJECTED).  ADDR_ERROR -> status or -EHOSTUNREACH,
 * ROUTE_ERROR -> status or -ENETUNREACH, UNREACHABLE -> status or
 * -EHOSTUNREACH, REJECTED -> -ECONNREFUSED, CONNECT_ERROR -> status or
 * -ECONNRESET, DISCONNECTED -> -ECONNRESET, DEVICE_REMOVAL -> -ENODEV;
 * 0 for events that are not failures.
 */
int verbs_cm_errno(enum rdma_cm_event_type event, int status);

/* ---- work requests ---- */

/* A send of one frame already copied into registered memory: one SGE. */
void verbs_wr_send(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		   const void *addr, uint32_t len, uint32_t lkey);

/* A send of a frame as inline data (IBV_SEND_INLINE): the device copies
 * header and payload at post time, so neither needs a key; the payload
 * SGE is left out when @payload_len is 0.  @sge has room for two. */
void verbs_wr_send_inline(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
			  const void *hdr, uint32_t hdr_len, const void *payload,
			  uint32_t payload_len);

/* An RDMA write of @len bytes from (@laddr, @lkey) to (@raddr, @rkey),
 * with immediate @imm (sent in network order, IBV_WR_RDMA_WRITE_WITH_IMM)
 * when @has_imm.  A zero-length write has no SGE. */
void verbs_wr_write(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		    const void *laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
		    uint32_t rkey, bool has_imm, uint32_t imm);

/* Bind type-2 memory window @mw, under its new key @rkey (ibv_inc_rkey()
 * of its last one), to exactly [@addr, @addr + @len) of @mr with remote
 * write access only (IBV_WR_BIND_MW): a rendezvous grant. */
void verbs_wr_bind_mw(struct ibv_send_wr *wr, uint64_t wr_id, struct ibv_mw *mw,
		      uint32_t rkey, struct ibv_mr *mr, uint64_t addr, uint64_t len);

/* Request (or not) a completion for @wr. */
void verbs_wr_set_signaled(struct ibv_send_wr *wr, bool signaled);

/* A receive of up to @len bytes into (@addr, @lkey). */
void verbs_wr_recv(struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		   void *addr, uint32_t len, uint32_t lkey);

/* Does a frame of @hdr_len + @payload_len bytes go inline on a QP with
 * @max_inline bytes of inline data and @max_sge SGEs per send WR? */
bool verbs_frame_inline(uint32_t hdr_len, uint32_t payload_len, uint32_t max_inline,
			uint32_t max_sge);

/* ---- selective signaling ---- */

/*
 * The send queue of one QP as the transport counts it: WRs at free-running
 * positions head <= posted <= tail.  [head, posted) are on the device,
 * [posted, tail) wait for the next flush (one ibv_post_send() of the
 * chain), and tail - head never exceeds depth, so the device's SQ cannot
 * overflow.  Only some WRs are signaled (UCX's and libfabric's TX
 * moderation): at least every @every-th, and the last of every batch, so
 * that no WR waits for a later post to be completed.  RC completes WRs in
 * order, so the completion of a signaled WR completes every WR before it
 * too; verbs_sq_complete() says how many, and verbs_sq_pop() hands out
 * their ids in posting order.  A WR's position goes into its wr_id, so a
 * completion names its WR exactly.
 */
struct verbs_sq {
	uint32_t depth;		/* WRs outstanding at most */
	uint32_t mask;		/* slots - 1; slots is a power of two >= depth */
	uint32_t every;		/* a signaled WR at least this often */
	uint32_t head;		/* oldest not completed */
	uint32_t posted;	/* first not on the device */
	uint32_t tail;		/* next free */
	uint32_t since_signal;	/* unsignaled WRs on the device after the last signaled */
	uint64_t *wr_id;	/* per slot: the caller's id */
	bool *signaled;		/* per slot: asked for a completion */
};

/* Returns 0, -EINVAL (@depth or @every 0) or -ENOMEM.  @every is capped
 * at @depth. */
int verbs_sq_init(struct verbs_sq *sq, uint32_t depth, uint32_t every);
void verbs_sq_fini(struct verbs_sq *sq);
/* Free slots, and WRs not completed (on the device or waiting). */
uint32_t verbs_sq_space(const struct verbs_sq *sq);
uint32_t verbs_sq_outstanding(const struct verbs_sq *sq);
/* Take the next slot for a WR with the caller's @wr_id.  Returns its
 * position (the device wr_id) in *@pos, and 0, or -ENOMEM when full. */
int verbs_sq_push(struct verbs_sq *sq, uint64_t wr_id, uint32_t *pos);
/* The WRs to hand to the device next: *@first and the count; decides and
 * records which of them are signaled (verbs_sq_is_signaled()). */
uint32_t verbs_sq_batch(struct verbs_sq *sq, uint32_t *first);
bool verbs_sq_is_signaled(const struct verbs_sq *sq, uint32_t pos);
/* @n WRs of the batch (from its first) are on the device now. */
void verbs_sq_posted(struct verbs_sq *sq, uint32_t n);
/* A successful completion of the WR at @pos: returns how many WRs it
 * completes (head .. @pos), or -EINVAL when @pos is not a signaled WR on
 * the device. */
int verbs_sq_complete(const struct verbs_sq *sq, uint32_t pos);
/* Remove the oldest WR; returns its caller's id.  Also how a flush
 * completes everything: pop until verbs_sq_outstanding() is 0. */
uint64_t verbs_sq_pop(struct verbs_sq *sq);
/* Slot index of position @pos. */
static inline uint32_t verbs_sq_slot(const struct verbs_sq *sq, uint32_t pos)
{
	return pos & sq->mask;
}

/* ---- the send staging ring ---- */

/*
 * Bytes of one connection's registered send buffer, handed out in posting
 * order and given back in completion order (which RC makes the same), as
 * free-running counters: [freed, alloc) is in use.  A frame that does not
 * fit before the end wraps to the start, wasting the tail.  Frames with
 * a payload must leave @reserve bytes free, so that header-only control
 * frames find room even when eager data fills the ring.
 */
struct verbs_txring {
	uint64_t size;
	uint64_t alloc;
	uint64_t freed;
};

void verbs_txring_init(struct verbs_txring *r, uint64_t size);
/* @len bytes at *@off.  Returns 0, -ENOMEM (no room now: completions make
 * some) or -EINVAL (0, or more than the ring less @reserve). */
int verbs_txring_alloc(struct verbs_txring *r, uint32_t len, uint64_t reserve, uint64_t *off);
/* The end mark to record with a WR: releasing it frees everything the WR
 * and those before it took. */
uint64_t verbs_txring_mark(const struct verbs_txring *r);
void verbs_txring_release(struct verbs_txring *r, uint64_t mark);
uint64_t verbs_txring_used(const struct verbs_txring *r);

/* ---- lkey -> registration ---- */

/* Open addressing with linear probing and backward-shift deletion; values
 * are never 0 (0 marks an empty slot). */
struct verbs_keymap {
	uint32_t mask;
	uint32_t shift;
	uint32_t n;
	uint32_t cap_entries;
	struct verbs_keymap_ent {
		uint32_t key;
		uint32_t val;
	} *e;
};

/* Room for @max entries (the table is twice that, rounded up to a power
 * of two).  Returns 0, -EINVAL or -ENOMEM. */
int verbs_keymap_init(struct verbs_keymap *m, uint32_t max);
void verbs_keymap_fini(struct verbs_keymap *m);
/* Returns 0, -EEXIST, -ENOSPC (max entries) or -EINVAL (@val 0). */
int verbs_keymap_put(struct verbs_keymap *m, uint32_t key, uint32_t val);
/* The value of @key, or 0. */
uint32_t verbs_keymap_get(const struct verbs_keymap *m, uint32_t key);
/* Returns true when @key was there. */
bool verbs_keymap_del(struct verbs_keymap *m, uint32_t key);

#endif
