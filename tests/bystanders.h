/*
 * bystanders.h - the clients beside an attack on a live link, which must
 * see nothing of it (the rule for attack tests, docs/security.md): a stream of
 * BYS_STREAM_N messages of 1000 bytes from node x to node y (at most 8 in
 * flight, each checked byte-exact and in order, received from x's node
 * only) and a ping-pong of 64-byte messages from y to an echo on x, each
 * round checked byte-exact.  Every operation must complete SL_OK; a client
 * that sees no progress for BYS_STALL_MS gives up and says why.  Four
 * client processes (h_fork), bookkeeping in shared memory.
 */
#ifndef SL_TEST_BYSTANDERS_H
#define SL_TEST_BYSTANDERS_H

#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define BYS_STREAM_N 3000u
/* A client gives up when nothing completes for this long. */
#define BYS_STALL_MS 15000

struct bys_shared {
	_Atomic int stop;
	_Atomic uint64_t stream_rx;	/* messages received in order, byte-exact */
	_Atomic uint64_t pp_rounds;
};

struct bystanders {
	struct bys_shared *sh;
	pid_t pids[4];
	const char *names[4];
};

/* Start them (ports 7100 and 7200 on x and y) and return once traffic
 * flows both ways (10 round trips, 50 stream messages); fatal if it never
 * does. */
void bystanders_start(struct bystanders *b, const struct h_daemon *x, const struct h_daemon *y);

/* Let them run on (20 more round trips), stop them, and fail the test
 * unless every one exited 0 with the whole stream received. */
void bystanders_finish(struct bystanders *b);

#endif
