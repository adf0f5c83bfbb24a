/*
 * client_kit.h - the loops that the integration tests' clients and test
 * processes share, so that each test file says only what its clients do:
 * buffers (one allocation, a pool of fixed-size ones), handing
 * completions to a callback with a bound on the lack of progress,
 * posting through a full SQ, checking a completion once, the pipes that
 * pace clients and the test process, and the test process's own round
 * trips (one send waited for, a ping, one exact completion, a daemon's
 * fds and mappings back at their baseline).
 *
 * Conventions of testutil.h: a function for client processes (cl_*,
 * pool_*, ctx_once, cqe_expect_ok, hold_here) never aborts, it ends the
 * client with cl_die() and an enum cl_exit code after saying why (the
 * message names what it waited for and how far it got); a function for
 * the test process (send_wait, ping, expect_cqe, *_baseline, chan_*, the
 * rest of hold_*) is fatal through h_fail().  Times are milliseconds.
 */
#ifndef SL_TEST_CLIENT_KIT_H
#define SL_TEST_CLIENT_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"

/* ---- client processes: memory ---- */

/* @len bytes of @c's arena; CL_E_SETUP (naming the arena's size) if it
 * has no room. */
uint8_t *cl_alloc(struct cl *c, size_t len);
/* calloc(@n, @size); CL_E_SETUP if there is no memory. */
void *cl_calloc(size_t n, size_t size);

/* @n buffers of @size bytes carved from a queue's arena, with a stack of
 * the free ones; buf[i] is buffer i. */
struct pool {
	uint8_t **buf;
	uint32_t *free;
	uint32_t n_free;
	size_t size;
};

/* pool_init - allocate the @n buffers from @q's arena (CL_E_SETUP if it
 * has no room); pool_get - a free buffer's index (CL_E_SETUP if none is
 * free); pool_put - give buffer @i back. */
void pool_init(struct pool *p, struct sl_queue *q, uint32_t n, size_t size);
uint32_t pool_get(struct pool *p);
void pool_put(struct pool *p, uint32_t i);

/* ---- client processes: completions ---- */

/* What a client does with each completion. */
typedef void (*cqe_fn)(void *arg, const struct sl_cqe *cqe);

/* A wait of cl_pump() that does not wait at all (not even sl_wait()'s
 * look at the daemon). */
#define CL_PUMP_NO_WAIT (-1)

/*
 * cl_pump - hand the completions there are to @fn, after waiting up to
 * @wait_ms (0: sl_wait(0), which only notes a daemon gone;
 * CL_PUMP_NO_WAIT: no wait) when there are none.  Returns how many, or
 * -ECONNRESET when the daemon has gone and every completion it wrote has
 * been taken (only with @gone_ok; else that ends the client, CL_E_POLL).
 */
int cl_pump(struct cl *c, cqe_fn fn, void *arg, int wait_ms, bool gone_ok);

/* cl_post - post a send (@send) or a receive (full tag mask); while the
 * SQ is full, completions go to @fn.  CL_E_POST on an error,
 * CL_E_TIMEOUT when the SQ stays full for CL_STALL_MS. */
void cl_post(struct cl *c, bool send, sl_addr_t peer, uint64_t tag, void *buf, size_t len,
	     uint64_t ctx, cqe_fn fn, void *arg);

/* cl_pump_until - hand completions to @fn until *@count (which @fn
 * advances) reaches @target.  CL_E_TIMEOUT after CL_STALL_MS without any
 * completion, the message naming @what and the count. */
void cl_pump_until(struct cl *c, cqe_fn fn, void *arg, const uint32_t *count, uint32_t target,
		   const char *what);

/*
 * cl_idle - a client's loop that posts and polls by itself got nothing
 * done this turn: wait up to 1 ms for a completion, and end the client
 * with CL_E_TIMEOUT and the message (what it has and still wants) when
 * nothing moved for CL_STALL_MS since @last_progress (h_now_ms()).
 */
void cl_idle(struct cl *c, int64_t last_progress, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The index of completion @e's user_ctx, which must be of @kind
 * (CTX_SEND or CTX_RECV), below @n and not marked in @seen (else
 * CL_E_CTX: unknown, or completed twice); marks it. */
uint32_t ctx_once(const struct sl_cqe *e, uint64_t kind, uint32_t n, uint8_t *seen);

/* Completion @e of the client's send or receive @k must be SL_OK (else
 * CL_E_STATUS) with @opcode, @len, @tag and @peer (else CL_E_META). */
void cqe_expect_ok(const struct sl_cqe *e, uint32_t k, uint8_t opcode, uint64_t len,
		   uint64_t tag, sl_addr_t peer);

/* ---- traffic plans ---- */

/* Where a client runs: its name, the index of its daemon, its port. */
struct cl_place {
	const char *name;
	unsigned node;
	uint32_t port;
};

/* The values of tags used by random traffic: small, large, all bits. */
#define N_TAGS 8
extern const uint64_t tag_values[N_TAGS];

/* ---- pacing clients and the test process ---- */

/* A one-way event pipe, child to test process or back. */
struct chan {
	int fd[2];
};

/* Test process: chan_init makes the pipe, chan_close closes both ends;
 * chan_send writes one byte.  chan_expect waits up to @ms for a byte, and
 * if none comes kills and reaps the @n clients @pids (named @names) and
 * fails with "no <what>" and their exit statuses. */
void chan_init(struct chan *c);
void chan_close(struct chan *c);
void chan_send(struct chan *c);
void chan_expect(struct chan *c, int ms, const pid_t *pids, const char *const *names,
		 unsigned n, const char *what);

/*
 * Clients that hold their queues open after their traffic, so that the
 * daemons can be read with every queue still there: each writes "done"
 * (hold_here, a client; then it waits up to 60 s for "go"), the test
 * process waits for @n_hold of them (hold_wait_done: within @ms, else it
 * fails the @n clients @pids with their statuses) and lets @n go on
 * (hold_release, which also closes the pipes).
 */
struct hold {
	int done[2];
	int go[2];
};

void hold_init(struct hold *h);
void hold_here(struct hold *h);
void hold_wait_done(struct hold *h, unsigned n_hold, int ms, const pid_t *pids,
		    const char *const *names, unsigned n);
void hold_release(struct hold *h, unsigned n);

/* ---- test process: one operation at a time (fatal) ---- */

/* Post one send of @len bytes and wait up to @ms for its completion,
 * which must have @ctx, SL_OP_SEND and @len; returns it (its status is
 * the caller's to judge). */
struct sl_cqe send_wait(struct sl_queue *q, sl_addr_t dst, uint64_t tag, const void *buf,
			size_t len, uint64_t ctx, int ms);

/* One 200-byte message from @from to @to with @tag: the receive posted
 * first, both completions SL_OK with the right ctx, length, tag and
 * source, the payload message (99, @seq, @tag); within 5 s each. */
void ping(struct sl_queue *from, struct sl_queue *to, uint64_t tag, uint32_t seq);

/* The next completion on @q (within 10 s) is exactly this one. */
void expect_cqe(struct sl_queue *q, uint8_t opcode, uint64_t ctx, int status, uint64_t len,
		uint64_t tag, sl_addr_t peer);

/* settle_baseline - @d's fd and memfd-mapping counts with no client
 * connected, after one came and went (h_daemon_settle).
 * expect_baseline - poll until @d's counts equal them, failing after 2 s. */
void settle_baseline(const struct h_daemon *d, int *fds, int *maps);
void expect_baseline(const struct h_daemon *d, int fds, int maps);

/* write_text - @path now holds @text (a peers or config file), fatal if
 * it cannot be written.  daemon_reload - SIGHUP @d and wait until its log
 * has one more reload summary ("changes applied"), failing after
 * @wait_ms without it. */
void write_text(const char *path, const char *text);
void daemon_reload(const struct h_daemon *d, int wait_ms);

#endif
