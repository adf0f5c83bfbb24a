/*
 * sl_shm.h - the shared-memory ABI between sluiced and libsluice.
 *
 * One segment per queue, created by the daemon as a memfd, sealed against
 * shrinking and growing, and passed to the client with SCM_RIGHTS.  Layout:
 *
 *   [ struct sl_shm_hdr | SQ ring control | CQ ring control |
 *     SQE array | CQE array | data arena ]
 *
 * The client finds each part through the offsets in the header (liburing's
 * io_sqring_offsets idea), so parts can move or be re-padded without a new
 * ABI version.  Everything is fixed-width, little-endian (host order; both
 * sides run on one host), and pointer-free.
 *
 * Trust.  The daemon never trusts anything the client can write: it copies
 * each SQE out before validating it, and it checks the client-written ring
 * index (SQ tail, CQ head) against the ring size on every read.
 */
#ifndef SL_SHM_H
#define SL_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* "SLUICESH" little-endian. */
#define SL_SHM_MAGIC 0x4853454349554c53ull
/* Version 1: the layout in this file. */
#define SL_SHM_ABI_VERSION 1u

#define SL_CACHELINE 64u
/* Producer- and consumer-written words are this far apart: one line each
 * plus a guard line against the adjacent-line prefetcher (DPDK). */
#define SL_RING_SEPARATION 128u

/* Ring flag: the consumer is about to sleep or is sleeping and must be
 * woken through the eventfd after the next publish.  Written by the
 * consumer (set, and cleared on wake), read by the producer. */
#define SL_RING_NEED_WAKEUP 1u
/* SQ flag, written by the daemon: it stopped taking SQEs because the CQ
 * has no free slot, and sleeps; the client must ring the SQ doorbell after
 * it frees CQ entries (io_uring's CQ-overflow idea).  Handshake: the daemon
 * sets the flag, full fence, re-checks the CQ head; the client stores the
 * CQ head, full fence, reads the flag. */
#define SL_RING_CQ_STALLED 2u

/*
 * Ring control block.  Indices are free-running uint32_t, masked with
 * (entries - 1) only on access; occupancy is tail - head.
 *   tail:  written by the producer only (store-release after filling slots).
 *   head:  written by the consumer only (store-release after reading slots).
 *   flags: written by the consumer only (SL_RING_NEED_WAKEUP).
 */
struct sl_ring_ctl {
	uint32_t tail;
	uint8_t pad0[SL_RING_SEPARATION - sizeof(uint32_t)];
	uint32_t head;
	uint8_t pad1[SL_RING_SEPARATION - sizeof(uint32_t)];
	uint32_t flags;
	uint32_t owner_pid;	/* pid of the consumer side, for diagnostics */
	uint8_t pad2[SL_RING_SEPARATION - 2 * sizeof(uint32_t)];
};
_Static_assert(sizeof(struct sl_ring_ctl) == 3 * SL_RING_SEPARATION, "ring ctl size");
_Static_assert(offsetof(struct sl_ring_ctl, tail) == 0, "tail offset");
_Static_assert(offsetof(struct sl_ring_ctl, head) == SL_RING_SEPARATION, "head offset");
_Static_assert(offsetof(struct sl_ring_ctl, flags) == 2 * SL_RING_SEPARATION, "flags offset");

/* Where one ring's parts are, as byte offsets from the segment start. */
struct sl_ring_offsets {
	uint64_t head;
	uint64_t tail;
	uint64_t flags;
	uint64_t entries;	/* first entry */
	uint32_t ring_entries;	/* power of two */
	uint32_t entry_size;	/* bytes */
	uint64_t rsvd;		/* 0 */
};
_Static_assert(sizeof(struct sl_ring_offsets) == 48, "ring offsets size");

/*
 * Segment header, at offset 0.  Written by the daemon before the memfd is
 * passed; read-only for both sides afterwards.
 */
struct sl_shm_hdr {
	uint64_t magic;		/* SL_SHM_MAGIC */
	uint32_t abi_version;	/* SL_SHM_ABI_VERSION */
	uint32_t hdr_size;	/* sizeof(struct sl_shm_hdr) */
	uint32_t flags;		/* 0; no flags defined in version 1 */
	uint32_t creator_pid;	/* the daemon */
	uint64_t seg_size;	/* bytes of the whole segment */
	struct sl_ring_offsets sq_off;
	struct sl_ring_offsets cq_off;
	uint64_t arena_off;	/* bytes from segment start, page aligned */
	uint64_t arena_size;	/* bytes */
	uint32_t node;		/* this queue's address */
	uint32_t port;
	uint32_t eager_max;	/* bytes; larger remote sends are invalid */
	uint32_t rsvd0;		/* 0 */
	uint64_t rsvd[4];	/* 0 */
};
_Static_assert(sizeof(struct sl_shm_hdr) == 192, "shm hdr size");
_Static_assert(offsetof(struct sl_shm_hdr, sq_off) == 32, "sq_off offset");
_Static_assert(offsetof(struct sl_shm_hdr, cq_off) == 80, "cq_off offset");
_Static_assert(offsetof(struct sl_shm_hdr, arena_off) == 128, "arena_off offset");
_Static_assert(offsetof(struct sl_shm_hdr, node) == 144, "node offset");

/* SQE opcodes: the first four are the numbers of enum sl_opcode that
 * their completions carry; RECV_CLAIMED completes as SL_OP_RECV. */
#define SL_SQE_OP_SEND SL_OP_SEND		/* 1 */
#define SL_SQE_OP_RECV SL_OP_RECV		/* 2 */
#define SL_SQE_OP_PROBE SL_OP_PROBE		/* 3 */
#define SL_SQE_OP_CANCEL SL_OP_CANCEL		/* 4 */
#define SL_SQE_OP_RECV_CLAIMED 5u

/*
 * Submission queue entry, 64 bytes, written by the client.  Every field a
 * kind does not use must be 0 (else the descriptor completes
 * SL_ERR_INVALID); rsvd0 and rsvd1 are 0 for all.
 * @opcode:   SL_SQE_OP_*.
 * @flags:    PROBE: SL_PROBE_CLAIM or SL_PROBE_DISCARD (not both), or 0.
 *            Every other kind: 0.
 * @peer:     SEND: destination.  RECV, PROBE: source filter (wildcards
 *            allowed).  RECV_CLAIMED, CANCEL: 0.
 * @tag:      SEND: the tag.  RECV, PROBE: the tag to match under
 *            @tag_mask.  RECV_CLAIMED, CANCEL: 0.
 * @tag_mask: RECV, PROBE only.
 * @addr:     SEND, RECV, RECV_CLAIMED: byte offset of the buffer in the
 *            arena.  PROBE, CANCEL: 0.
 * @len:      bytes: SEND payload length, RECV and RECV_CLAIMED capacity.
 *            PROBE, CANCEL: 0.
 * @user_ctx: copied to the completion; CANCEL: also the user_ctx of the
 *            receive to cancel.
 * @rsvd2:    RECV_CLAIMED: the claim (nonzero, from a PROBE's completion).
 *            Every other kind: 0.
 */
struct sl_sqe {
	uint8_t opcode;
	uint8_t flags;
	uint16_t rsvd0;		/* 0 */
	uint32_t rsvd1;		/* 0 */
	sl_addr_t peer;
	uint64_t tag;
	uint64_t tag_mask;
	uint64_t addr;
	uint64_t len;
	uint64_t user_ctx;
	uint64_t rsvd2;		/* RECV_CLAIMED: the claim; else 0 */
};
_Static_assert(sizeof(struct sl_sqe) == 64, "sqe size");
_Static_assert(offsetof(struct sl_sqe, peer) == 8, "sqe peer");
_Static_assert(offsetof(struct sl_sqe, tag) == 16, "sqe tag");
_Static_assert(offsetof(struct sl_sqe, addr) == 32, "sqe addr");
_Static_assert(offsetof(struct sl_sqe, user_ctx) == 48, "sqe user_ctx");
_Static_assert(offsetof(struct sl_sqe, rsvd2) == 56, "sqe rsvd2");

_Static_assert(sizeof(struct sl_cqe) == 64, "cqe size");
_Static_assert(offsetof(struct sl_cqe, len) == 8, "cqe len");
_Static_assert(offsetof(struct sl_cqe, tag) == 16, "cqe tag");
_Static_assert(offsetof(struct sl_cqe, peer) == 24, "cqe peer");
_Static_assert(offsetof(struct sl_cqe, status) == 32, "cqe status");
_Static_assert(offsetof(struct sl_cqe, opcode) == 36, "cqe opcode");
_Static_assert(offsetof(struct sl_cqe, sender_uid) == 40, "cqe sender_uid");
_Static_assert(offsetof(struct sl_cqe, claim) == 48, "cqe claim");

/* Queue depth limits (SQ entries); the CQ has SL_CQ_PER_SQ times more. */
#define SL_QUEUE_DEPTH_MAX 4096u
#define SL_CQ_PER_SQ 2u

/* ------------------------------------------------------------------ */
/* Control socket (UNIX SOCK_SEQPACKET): one message per request/reply  */
/* ------------------------------------------------------------------ */

/* Version 1: HELLO, QUEUE_OPEN, QUEUE_CLOSE and NODE_RESOLVE as below. */
#define SL_CTL_VERSION 1u

enum sl_ctl_op {
	SL_CTL_HELLO = 1,
	SL_CTL_QUEUE_OPEN = 2,
	SL_CTL_QUEUE_CLOSE = 3,
	SL_CTL_NODE_RESOLVE = 4,	/* struct sl_ctl_resolve_req */
};

/* Every request starts with this; the reply echoes op and seq.  A client
 * never uses seq 0: a reply with seq 0 (op SL_CTL_HELLO) is a refusal the
 * daemon sends right after accepting, before any request, and then it
 * closes the connection; its @error says why (ENFILE: the daemon is out
 * of file descriptors). */
struct sl_ctl_hdr {
	uint16_t version;	/* SL_CTL_VERSION */
	uint16_t op;		/* enum sl_ctl_op */
	uint32_t seq;		/* chosen by the client, echoed */
};

struct sl_ctl_req {
	struct sl_ctl_hdr hdr;
	uint32_t port;		/* QUEUE_OPEN */
	uint32_t depth;		/* QUEUE_OPEN */
	uint32_t queue_id;	/* QUEUE_CLOSE */
	uint32_t rsvd[5];	/* 0 */
};
_Static_assert(sizeof(struct sl_ctl_req) == 40, "ctl req size");

/*
 * NODE_RESOLVE's request (sl_node_resolve()): the only one longer than
 * struct sl_ctl_req, whose fields it starts with (all 0 but the header).
 * @name is a node name (1..63 characters from A-Z a-z 0-9 . _ -), NUL
 * padded to the end; the daemon refuses anything else with EINVAL.  The
 * reply, maybe seconds later (the daemon resolves the name meanwhile),
 * carries the node id in @node, or @error.
 */
#define SL_CTL_NAME_MAX 64	/* bytes of a node name with its NUL */
struct sl_ctl_resolve_req {
	struct sl_ctl_req req;
	char name[SL_CTL_NAME_MAX];
};
_Static_assert(sizeof(struct sl_ctl_resolve_req) == 104, "ctl resolve req size");

/*
 * Reply.  @error is 0 or a positive errno, the one sl_queue_open() returns
 * negated (sluice.h); a daemon out of its own descriptors says ENFILE,
 * never EMFILE, which the client keeps for its own.  A QUEUE_OPEN reply that
 * succeeds carries three fds with SCM_RIGHTS, in this order: the segment
 * memfd, the SQ doorbell eventfd (client writes to wake the daemon), the CQ
 * doorbell eventfd (daemon writes to wake the client).
 */
struct sl_ctl_rep {
	struct sl_ctl_hdr hdr;
	int32_t error;
	uint32_t node;		/* HELLO, QUEUE_OPEN and NODE_RESOLVE */
	uint32_t queue_id;	/* QUEUE_OPEN */
	uint32_t port;		/* QUEUE_OPEN: the bound port */
	uint64_t seg_size;	/* QUEUE_OPEN */
	uint64_t incarnation;	/* HELLO: daemon start id */
	uint32_t abi_version;	/* HELLO: SL_SHM_ABI_VERSION */
	uint32_t rsvd[3];
};
_Static_assert(sizeof(struct sl_ctl_rep) == 56, "ctl rep size");

#endif /* SL_SHM_H */
