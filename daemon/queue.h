/*
 * queue.h - one client queue in the daemon: the shared segment (memfd),
 * its SQ and CQ rings, doorbells, and its endpoint (port + matching).
 *
 * Lifetime: a queue is referenced by its owning session and by every
 * descriptor in flight on a link.  When the owner goes (close or death),
 * queue_kill() unbinds the port, drops posted receives and unexpected
 * messages, and marks the queue dead; completions for it are discarded.
 * The segment is unmapped when the last reference goes (queue_put), so a
 * frame still being written from the arena never reads freed memory.
 */
#ifndef SLD_QUEUE_H
#define SLD_QUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <ev.h>

#include "match.h"
#include "sl_ring.h"

struct daemon;
struct rndv_recv;
struct session;

TAILQ_HEAD(rndv_recv_list, rndv_recv);

struct queue {
	struct daemon *d;
	struct session *owner;		/* NULL once dead */
	TAILQ_ENTRY(queue) all;		/* daemon->queues while alive */
	TAILQ_ENTRY(queue) by_session;
	TAILQ_ENTRY(queue) dirty;	/* daemon->cq_dirty */
	bool in_dirty;
	bool dead;
	bool sleeping;			/* NEED_WAKEUP set on the SQ */
	int failed;			/* 0, or the status every descriptor of
					 * the queue gets from now on (queue_fail) */
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
	/* Completions that moved a message (engine.c, complete_from): sends
	 * and receives with SL_OK, their bytes (the CQE's len); sends
	 * refused by the receiver (SL_NAK_*).  sluicectl --watch makes rates
	 * of them. */
	uint64_t msgs_tx, bytes_tx, msgs_rx, bytes_rx, naks;
};

/*
 * queue_create - build a queue: memfd with header, rings and arena, sealed
 * against resizing; eventfds; the port binding.
 * @port: 0 for ephemeral.  @depth: SQ entries, 1..SL_QUEUE_DEPTH_MAX.
 * Returns 0 or -EINVAL, -EADDRINUSE, -EACCES, -EADDRNOTAVAIL, -EMFILE,
 * -ENOMEM, or another -errno from memfd/mmap/eventfd.
 */
int queue_create(struct daemon *d, struct session *s, uint32_t port,
		 uint32_t depth, struct queue **q_p);

/* Owner gone: unbind, drop matching state, discard future completions. */
void queue_kill(struct queue *q);

/* Complete every posted receive with SL_ERR_CANCELED (shutdown). */
void queue_cancel_receives(struct queue *q);

/*
 * queue_fail - the client of @q made the daemon's work on it impossible
 * (copy.h: it removed the pages under a copy again and again).  The queue
 * stays open but has failed: its local copies under way, its local
 * rendezvous sends still waiting for a receive and its posted receives
 * complete @status now, and every descriptor it posts from now on
 * completes @status at once; the other side of an ended copy gets
 * SL_ERR_NO_ENDPOINT.  Work of it already on a link finishes as it
 * would.  One log line with @why (rate-limited across queues).  Nothing
 * when @q is dead or failed already.
 */
void queue_fail(struct queue *q, int status, const char *why);

void queue_get(struct queue *q);
void queue_put(struct queue *q);

/*
 * queue_drain - take up to @budget SQEs, validate and dispatch each.
 * Accepts an SQE only while a CQ slot is held for it.
 * Returns the number taken, or -EPROTO when the client corrupted its ring
 * (the caller then drops the session).
 */
int queue_drain(struct queue *q, unsigned budget);

/*
 * queue_complete - write the completion of one accepted descriptor.
 * Never fails: the slot was reserved at accept time.  Discarded (and the
 * reservation returned) when the queue is dead.
 */
void queue_complete(struct queue *q, const struct sl_cqe *cqe);

/*
 * queue_prepare_sleep - announce sleep on the SQ (NEED_WAKEUP, and
 * CQ_STALLED when SQEs wait for CQ slots).  Returns true, with the queue
 * awake again, if it has work the daemon can do now.
 */
bool queue_prepare_sleep(struct queue *q);
/* The daemon is awake for this queue: clear its wake-up flags. */
void queue_wake(struct queue *q);
/* The client's CQ wake-up, if it asked for one. */
void queue_wake_client(struct queue *q);

#endif
