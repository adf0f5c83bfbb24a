/*
 * mem_return.h - memory given back to the kernel once a burst of
 * unexpected messages has been received.
 *
 * Each unexpected message is a malloc() of its own (endpoint.c).  free()
 * keeps nearly all of a burst's memory: glibc returns only the top of its
 * heap, and a single chunk above the freed ones, in use or kept in
 * malloc's thread cache (a receive posted after the burst came), holds
 * everything below it.
 * malloc_trim(0) releases every free page wherever it lies, but it walks
 * the free lists and the pages fault in again when used, so it runs from
 * a timer, off the hot path, when a burst has drained: at a tick where
 * the bytes held have fallen to half of their peak since the last trim.
 * The timer ticks every MEM_RETURN_PERIOD_S while that peak is at least
 * MEM_RETURN_MIN_BYTES, and stops after a trim leaves less held.  So a
 * daemon that holds about the same amount is never trimmed, one whose
 * bursts come and go is trimmed at most once per period, and an idle
 * daemon runs no timer.
 *
 * All calls on the loop thread.
 */
#ifndef SLD_MEM_RETURN_H
#define SLD_MEM_RETURN_H

#include <stdint.h>
#include <ev.h>

#define MEM_RETURN_MIN_BYTES (1u << 20)
#define MEM_RETURN_PERIOD_S 1.0

struct mem_return {
	ev_timer w;
	struct ev_loop *loop;
	const uint64_t *held;	/* bytes held now: the daemon's unexpected total */
	uint64_t peak;		/* the most *held was since the last trim */
	uint64_t trims;		/* malloc_trim() calls made */
};

/* Set up @mr (any memory) to watch *@held on @loop; no timer runs yet. */
void mem_return_init(struct mem_return *mr, struct ev_loop *loop, const uint64_t *held);

/* *@held has just grown: note its peak, and start the timer when that
 * peak is worth a trim later.  O(1), no system call but the timer's. */
void mem_return_grown(struct mem_return *mr);

/* Stop the timer (the daemon stops). */
void mem_return_stop(struct mem_return *mr);

#endif
