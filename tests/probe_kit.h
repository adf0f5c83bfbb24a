/*
 * probe_kit.h - the two-daemon world that the probe, cancel and claim
 * tests (test_probe, test_cancel, test_claim_links) share: daemons A and
 * B, a receiver R and a sender S on A, a sender T on B, each with its
 * buffer; the next completion, one probe checked to be the probe's, the
 * wait for a message to arrive and for a daemon statistic.
 *
 * Test process only: every function is fatal through h_fail() (the
 * message says what it waited for).  Times are milliseconds; every wait
 * is bounded by PK_WAIT_MS without progress.
 */
#ifndef SL_TEST_PROBE_KIT_H
#define SL_TEST_PROBE_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "sluice.h"

/* How long a wait of this kit may go without what it waits for. */
#define PK_WAIT_MS 10000

/* Daemons A (nodes[0]) and B (nodes[1]); R and S on A, T on B. */
struct world {
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *r, *s, *t;
	uint8_t *rbuf, *sbuf, *tbuf;	/* buf_len bytes each (world_start) */
	sl_addr_t r_addr, s_addr, t_addr;
	sl_addr_t a_none;		/* A's node, port 0: a cancel's peer */
};

/* The ports of R, S and T. */
struct world_ports {
	uint32_t r, s, t;
};

/*
 * world_start - start A and B (h_cluster_start) and fill in the
 * addresses of R, S and T at @ports.  With @with_queues, also open a
 * context on each daemon, the queues R, S (on A) and T (on B), 64 deep,
 * and a buffer of @buf_len bytes in each queue's arena; without, the
 * caller opens what it needs and stops the cluster itself.
 */
void world_start(struct world *w, struct world_ports ports, size_t buf_len, bool with_queues);
/* world_stop - close R, S, T and both contexts, stop A and B (only after
 * world_start(..., true)). */
void world_stop(struct world *w);

/* next_cqe - the next completion of @q (wait_cqes within PK_WAIT_MS). */
struct sl_cqe next_cqe(struct sl_queue *q);
/* probe - sl_probe(@q, @src, @tag, @mask, @flags, @ctx) and its
 * completion, checked to be the probe's (opcode, user_ctx). */
struct sl_cqe probe(struct sl_queue *q, sl_addr_t src, uint64_t tag, uint64_t mask,
		    unsigned flags, uint64_t ctx);
/* wait_arrival - probe @q (any source, exact @tag, no flags, user_ctx
 * 0xa77) until a message with @tag waits there: a message from another
 * node, or a rendezvous whose send completes only when received.  Fatal
 * on a status other than SL_OK or SL_ERR_NO_MESSAGE. */
void wait_arrival(struct sl_queue *q, uint64_t tag);
/* wait_stat - wait until @d's statistic @name is @want. */
void wait_stat(const struct h_daemon *d, const char *name, uint64_t want);

#endif
