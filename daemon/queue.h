/*
 * queue.h - one client queue in the daemon: the shared segment (memfd),
 * its SQ and CQ rings, doorbells, and its endpoint (port + matching).
 *
 * This is the segment and ring object only: it knows descriptors
 * (desc.h), the matcher's lists it holds (match.h) and the wake-up
 * primitive (wake.h), and nothing of what the engine, the links or the
 * rendezvous do with a descriptor.
 *
 * Awake and asleep (io_uring's SQPOLL rule, per queue): an awake queue is
 * on the daemon's active list and every pass drains it; its SQ has no
 * NEED_WAKEUP, so its client posts without a system call.  A queue that
 * gave the pass nothing for spin_s announces sleep (queue_prepare_sleep)
 * and leaves the list; its client then rings the doorbell with its next
 * post, or with its next poll when SQEs wait for CQ slots (CQ_STALLED),
 * and the doorbell makes it awake again (queue_activate).  SQEs held back
 * by client_max_inflight are woken by a completion of the same client or
 * uid.  So a pass, and the engine's going to sleep, cost what is awake.
 *
 * Lifetime: a queue is referenced by its owning session and by every
 * descriptor in flight on a link.  When the owner goes (close or death),
 * engine_close_queue() unwinds what refers to the queue and queue_kill()
 * unbinds the port, drops the posted receives and marks the queue dead;
 * completions for it are discarded.  The segment is unmapped when the
 * last reference goes (queue_put), so a frame still being written from
 * the arena never reads freed memory.
 */
#ifndef SLD_QUEUE_H
#define SLD_QUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <ev.h>

#include "desc.h"
#include "match.h"
#include "sl_ring.h"
#include "wake.h"

struct daemon;
struct rndv_recv;
struct session;
struct uid_usage;

/* What a queue charges its accepted descriptors to besides itself, filled
 * by its session: the client's in-flight count (client_max_inflight) and
 * its uid's (uid_quota.h). */
struct queue_owner {
	struct session *session;	/* opaque here */
	pid_t pid;
	uid_t uid;
	uint32_t *in_flight;		/* the client's */
	struct uid_usage *uq;		/* its uid's; NULL: none */
};

TAILQ_HEAD(rndv_recv_list, rndv_recv);

struct queue {
	struct daemon *d;
	struct session *owner;		/* NULL once dead */
	struct queue_owner charge;	/* while owner is set */
	TAILQ_ENTRY(queue) all;		/* daemon->queues while alive */
	TAILQ_ENTRY(queue) by_session;
	TAILQ_ENTRY(queue) dirty;	/* daemon->cq_dirty */
	bool in_dirty;
	bool dead;
	/* Awake: on daemon->active, drained by every pass, NEED_WAKEUP
	 * clear.  Asleep: NEED_WAKEUP set, its doorbell brings it back. */
	TAILQ_ENTRY(queue) active_link;
	bool awake;
	ev_tstamp worked_at;		/* ev_now() of its last drain that took an SQE */
	TAILQ_ENTRY(queue) quota_link;	/* daemon->quota_waiters */
	bool quota_waiting;
	int failed;			/* 0, or the status every descriptor of
					 * the queue gets from now on
					 * (engine_fail_queue) */
	uint32_t refs;
	uint32_t id;
	uint32_t port;
	uid_t uid;

	int memfd;
	uint8_t *base;			/* daemon's mapping of the segment */
	uint64_t seg_size;
	uint8_t *arena;
	uint64_t arena_size;
	struct sl_ring sq;		/* we consume */
	struct sl_ring cq;		/* we produce */
	uint32_t cq_cap;
	uint32_t in_flight;		/* accepted, not yet completed */

	int sq_efd;			/* client -> daemon doorbell */
	int cq_efd;			/* daemon -> client doorbell */
	ev_io sq_w;

	struct match_queues mq;
	/* Receives held by rendezvous under way (struct rndv_recv qlink). */
	struct rndv_recv_list claims;

	/* Counters for sluicectl. */
	uint64_t sqes, cqes;
	/* Completions that moved a message (queue_complete): sends
	 * and receives with SL_OK, their bytes (the CQE's len); sends
	 * refused by the receiver (SL_NAK_*).  sluicectl --watch makes rates
	 * of them. */
	uint64_t msgs_tx, bytes_tx, msgs_rx, bytes_rx, naks;
};

/*
 * queue_create - build a queue for @who's session: memfd with header,
 * rings and arena, sealed against resizing; eventfds; the port binding
 * (as @who's uid).
 * @port: 0 for ephemeral.  @depth: SQ entries, 1..SL_QUEUE_DEPTH_MAX.
 * Returns 0 or -EINVAL, -EADDRINUSE, -EACCES, -EADDRNOTAVAIL, -ENOSPC
 * ([limits] max_queues reached, and only then), -EMFILE / -ENFILE (out of
 * descriptors: the daemon's RLIMIT_NOFILE, the system's file table),
 * -ENOMEM, or another -errno from memfd/mmap/eventfd.
 */
int queue_create(struct daemon *d, const struct queue_owner *who, uint32_t port,
		 uint32_t depth, struct queue **q_p);

/*
 * queue_kill - the owner is gone: the port unbound, the doorbell watcher
 * stopped, the posted receives dropped (nobody reads their completions),
 * the queue dead: every later completion of it is discarded.  The caller
 * (engine_close_queue) unwinds the rest: unexpected messages, rendezvous,
 * copies, link frames, registrations.  Nothing when dead already.
 */
void queue_kill(struct queue *q);

/* Complete every posted receive of @q with @status (shutdown:
 * SL_ERR_CANCELED; a failed queue: its status). */
void queue_end_receives(struct queue *q, int status);

void queue_get(struct queue *q);
void queue_put(struct queue *q);

/*
 * queue_drain - take up to @max SQEs off @q's SQ into @out, one struct
 * desc each, copied once (the client may rewrite a slot as soon as it is
 * released).  Accepts an SQE only while a CQ slot is held for it and the
 * client (and its uid) are under client_max_inflight: each descriptor
 * taken counts as in flight until queue_complete().  The caller carries
 * each out (engine_submit); validation is the engine's.
 * Returns the number taken (0..@max), or -EPROTO when the client
 * corrupted its ring indices (the caller then drops the session).
 */
int queue_drain(struct queue *q, struct desc *out, unsigned max);

/*
 * queue_complete - the one completion of accepted descriptor @dsc with
 * @status: a CQE in the CQ of dsc->q, naming @msg (a receive that took a
 * message; desc.h) or, when @msg is NULL, the descriptor's own peer, tag
 * and len.  Never fails: the slot was reserved at accept time.
 * Discarded (and the reservation returned) when the queue is dead.
 * Counts the queue's moved messages and NAKs for sluicectl.
 * Every kind of descriptor reserves its one slot the same way, so none
 * may complete twice: a cancel's two CQEs are the cancelled receive's
 * and the cancel's own, each in the slot its descriptor holds.  A
 * descriptor the daemon made itself (dsc->internal) reserved nothing
 * and writes nothing.
 */
void queue_complete(const struct desc *dsc, int status, const struct desc_msg *msg);

/*
 * queue_prepare_sleep - announce sleep on the SQ (NEED_WAKEUP, and
 * CQ_STALLED when SQEs wait for CQ slots) and leave the active list.
 * Returns true, with the queue awake still, if it has work the daemon
 * can do now.
 */
bool queue_prepare_sleep(struct queue *q);
/* @q has work for the engine (its doorbell rang, its quota freed): awake,
 * on the active list, and the engine running.  Nothing when dead. */
void queue_activate(struct queue *q);
/* The client's CQ wake-up, if it asked for one. */
void queue_wake_client(struct queue *q);

#endif
