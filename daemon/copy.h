/*
 * copy.h - the one copy of a local rendezvous (sender's arena to
 * receiver's), in slices across loop iterations, so that no copy holds
 * the daemon's loop however large it is or however slowly its pages come.
 *
 * A copy up to COPY_INLINE_BYTES is done at once, where it matched, as
 * eager messages are.  A larger one is queued on the daemon (d->copies)
 * and copy_run(), once per loop iteration (progress.c run_passes), moves
 * a slice of each: at most COPY_SLICE_BYTES or COPY_SLICE_NS, and all of
 * them together at most COPY_ROUND_NS, round-robin.  The time is checked
 * after every COPY_CHUNK_BYTES, and after every page once a chunk was
 * slow, so a slice overruns its time by at most one chunk's page faults,
 * and then by one page's.
 *
 * A copy that makes no progress is charged to the client that owns the
 * memory.  A slice that used its time and moved less than COPY_SLOW_BYTES
 * per COPY_SLICE_NS is slow; the pages it copied last are then looked up
 * (mincore(2)): pages of
 * one side gone again right after the copy touched them were removed by
 * that side's client (hole punching, MADV_REMOVE; there is no other way
 * to drop a memfd's pages from under a mapping but swap, which a just
 * touched page does not reach).  COPY_STALL_STRIKES such slices of one
 * side in one copy (not in a row: a client that punches now and then
 * lets some slices through at full speed) fail that side's queue
 * (engine_fail_queue(), through copy_run's caller, SL_ERR_STALLED); the other side's
 * descriptor completes SL_ERR_NO_ENDPOINT, as when a queue closes.  A
 * slow machine makes slow slices but takes no pages away: nobody is
 * charged for it.
 *
 * The idea is MPI's progress engines (a large message is a sequence of
 * segments the engine advances between other work), and io_uring's
 * bounded work per submission; the charging follows the rule of the
 * daemon that a client's failure costs only that client.
 * All calls on the loop thread.
 */
#ifndef SLD_COPY_H
#define SLD_COPY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "desc.h"
#include "match.h"
#include "sluice.h"

struct daemon;
struct queue;

/* Copied where they match, at once (bytes). */
#define COPY_INLINE_BYTES (256u << 10)
/* One slice: at most these many bytes or this long (ns). */
#define COPY_SLICE_BYTES (8u << 20)
#define COPY_SLICE_NS 2000000ull
/* Every copy's slice of one loop iteration together (ns). */
#define COPY_ROUND_NS 4000000ull
/* The clock is read after each chunk (bytes); after a chunk that took a
 * quarter of a slice's time, after each page. */
#define COPY_CHUNK_BYTES (64u << 10)
#define COPY_CHUNK_MIN 4096u
/* Less than this in a whole slice's time is slow (bytes: 512 MB/s, about
 * half of what a copy into pages never touched before moves here). */
#define COPY_SLOW_BYTES (1u << 20)
/* Slow slices of one copy with one side's pages gone fail that side: few,
 * as the evidence is strong (a 64 MiB copy under hole punching has some
 * ten slow slices before it ends anyway). */
#define COPY_STALL_STRIKES 4u

struct local_copy {
	TAILQ_ENTRY(local_copy) link;	/* daemon->copies, in turn */
	struct match_recv *r;		/* the receive: owned; its queue referenced */
	struct desc send;		/* the send; its queue referenced */
	uint64_t n;			/* bytes to move: the send's len, at most
					 * the receive's capacity */
	uint64_t done;			/* bytes moved */
	uint64_t chunk;			/* bytes between clock reads */
	bool backward;			/* same arena, destination above and
					 * overlapping the source: from the end */
	unsigned strikes[2];		/* slow slices with its pages gone:
					 * sender's side, receiver's side */
};

/*
 * copy_start - receive @r (unlinked; now owned here) takes the local
 * rendezvous message of send descriptor @send (copied here), sent from
 * its queue's port.  Both descriptors complete when the copy ends: the
 * send SL_OK, the receive SL_OK or SL_ERR_TRUNCATED (the send's len
 * above the receive's capacity).  Takes its own references to both
 * queues.  Never fails: without memory for its state the copy is done at
 * once.
 */
void copy_start(struct match_recv *r, const struct desc *send);

/* What copy_run() calls on a queue whose client stalled a copy
 * (engine_fail_queue). */
typedef void copy_fail_fn(struct queue *q, int status, const char *why);

/*
 * copy_run - one slice of every queued copy, within COPY_ROUND_NS;
 * completes the copies that end, and fails with @fail_queue the queue of
 * a side that stalled one.  Returns the number of copies still queued:
 * while there are, the progress engine keeps running.
 */
unsigned copy_run(struct daemon *d, copy_fail_fn *fail_queue);

/*
 * copy_end_queue - every queued copy to or from @q ends now: @q's
 * descriptor completes @status (discarded when @q is dead), the other
 * side's SL_ERR_NO_ENDPOINT.  @q is closing (queue_kill) or has failed
 * (engine_fail_queue).
 */
void copy_end_queue(struct daemon *d, struct queue *q, int status);

/* The daemon is stopping: every queued copy ends, both descriptors
 * SL_ERR_CANCELED. */
void copy_cancel_all(struct daemon *d);

/* Is a copy under way whose receive (@recv) or send (!@recv) is a
 * descriptor of @q with @user_ctx?  (sl_cancel(), engine.c; the daemon's
 * internal receives do not count.) */
bool copy_has_ctx(const struct daemon *d, const struct queue *q, uint64_t user_ctx, bool recv);

#endif
