/*
 * client_kit.c - the integration tests' shared client and test-process
 * loops (client_kit.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sluice.h"
#include "testutil.h"

/* ---- client processes: memory ---- */

uint8_t *cl_alloc(struct cl *c, size_t len)
{
	uint8_t *p = sl_alloc(c->q, len);

	CL_REQUIRE(p, CL_E_SETUP, "sl_alloc %zu (arena %zu): %s", len, sl_arena_size(c->q),
		   strerror(errno));
	return p;
}

void *cl_calloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	CL_REQUIRE(p, CL_E_SETUP, "out of memory (%zu x %zu)", n, size);
	return p;
}

void pool_init(struct pool *p, struct sl_queue *q, uint32_t n, size_t size)
{
	uint32_t i;

	p->buf = calloc(n, sizeof(*p->buf));
	p->free = calloc(n, sizeof(*p->free));
	CL_REQUIRE(p->buf && p->free, CL_E_SETUP, "out of memory");
	for (i = 0; i < n; i++) {
		p->buf[i] = sl_alloc(q, size);
		CL_REQUIRE(p->buf[i], CL_E_SETUP, "sl_alloc %zu: %s", size, strerror(errno));
		p->free[i] = n - 1 - i;
	}
	p->n_free = n;
	p->size = size;
}

uint32_t pool_get(struct pool *p)
{
	CL_REQUIRE(p->n_free > 0, CL_E_SETUP, "buffer pool empty");
	return p->free[--p->n_free];
}

void pool_put(struct pool *p, uint32_t i)
{
	p->free[p->n_free++] = i;
}

/* ---- client processes: completions ---- */

int cl_pump(struct cl *c, cqe_fn fn, void *arg, int wait_ms, bool gone_ok)
{
	struct sl_cqe cqes[64];
	int n = sl_poll(c->q, cqes, 64), i, rc;

	CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
	if (n == 0 && wait_ms != CL_PUMP_NO_WAIT) {
		rc = sl_wait(c->q, wait_ms);
		if (rc == -ECONNRESET && gone_ok)
			return -ECONNRESET;
		CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
		n = sl_poll(c->q, cqes, 64);
		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
	}
	for (i = 0; i < n; i++)
		fn(arg, &cqes[i]);
	return n;
}

void cl_post(struct cl *c, bool send, sl_addr_t peer, uint64_t tag, void *buf, size_t len,
	     uint64_t ctx, cqe_fn fn, void *arg)
{
	int64_t t0 = h_now_ms();

	for (;;) {
		int rc = send ? sl_send(c->q, peer, tag, buf, len, ctx)
			      : sl_recv(c->q, peer, tag, ~0ull, buf, len, ctx);

		if (rc == 0)
			return;
		CL_REQUIRE(rc == -EAGAIN, CL_E_POST, "%s ctx %#llx: %s", send ? "sl_send" : "sl_recv",
			   (unsigned long long)ctx, strerror(-rc));
		CL_REQUIRE(h_now_ms() - t0 < CL_STALL_MS, CL_E_TIMEOUT, "SQ full for %d ms",
			   CL_STALL_MS);
		(void)cl_pump(c, fn, arg, 1, false);
	}
}

void cl_pump_until(struct cl *c, cqe_fn fn, void *arg, const uint32_t *count, uint32_t target,
		   const char *what)
{
	int64_t last = h_now_ms();

	while (*count < target) {
		if (cl_pump(c, fn, arg, 10, false) > 0)
			last = h_now_ms();
		CL_REQUIRE(h_now_ms() - last < CL_STALL_MS, CL_E_TIMEOUT, "%s: %u of %u", what,
			   *count, target);
	}
}

void cl_idle(struct cl *c, int64_t last_progress, const char *fmt, ...)
{
	int rc;

	if (h_now_ms() - last_progress >= CL_STALL_MS) {
		char why[CL_WORDS_MAX];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
		cl_die(CL_E_TIMEOUT, "%s", why);
	}
	rc = sl_wait(c->q, 1);
	CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
}

uint32_t ctx_once(const struct sl_cqe *e, uint64_t kind, uint32_t n, uint8_t *seen)
{
	uint32_t k = CTX_INDEX(e->user_ctx);

	CL_REQUIRE(CTX_KIND(e->user_ctx) == kind && k < n && !seen[k], CL_E_CTX,
		   "%s ctx %#llx: unknown or completed before", kind == CTX_SEND ? "send" : "recv",
		   (unsigned long long)e->user_ctx);
	seen[k] = 1;
	return k;
}

void cqe_expect_ok(const struct sl_cqe *e, uint32_t k, uint8_t opcode, uint64_t len,
		   uint64_t tag, sl_addr_t peer)
{
	const char *op = opcode == SL_OP_SEND ? "send" : "recv";

	CL_REQUIRE(e->status == SL_OK, CL_E_STATUS, "%s %u: %s", op, k, sl_strerror(e->status));
	CL_REQUIRE(e->opcode == opcode && e->len == len && e->tag == tag && addr_eq(e->peer, peer),
		   CL_E_META, "%s %u: opcode %u len %llu tag %llu peer %08x:%u", op, k, e->opcode,
		   (unsigned long long)e->len, (unsigned long long)e->tag, e->peer.node,
		   e->peer.port);
}

/* ---- traffic plans ---- */

const uint64_t tag_values[N_TAGS] = {
	0, 1, 2, 0x7f, 1ull << 32, 1ull << 63, 0xdeadbeefcafef00dull, UINT64_MAX,
};

/* ---- pacing clients and the test process ---- */

void chan_init(struct chan *c)
{
	H_ASSERT(pipe2(c->fd, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
}

void chan_close(struct chan *c)
{
	H_ASSERT(close(c->fd[0]) == 0 && close(c->fd[1]) == 0, "close: %s", strerror(errno));
}

void chan_expect(struct chan *c, int ms, const pid_t *pids, const char *const *names,
		 unsigned n, const char *what)
{
	uint8_t x;
	int rc = h_read_byte(c->fd[0], &x, ms);

	if (rc != 1) {
		char why[128];

		snprintf(why, sizeof(why), "no \"%s\" within %d ms (rc %d)", what, ms, rc);
		fail_clients(pids, names, n, why);
	}
}

void chan_send(struct chan *c)
{
	int rc = h_write_byte(c->fd[1], 1);

	H_ASSERT(rc == 0, "chan write: %s", strerror(-rc));
}

void hold_init(struct hold *h)
{
	H_ASSERT(pipe2(h->done, O_CLOEXEC) == 0 && pipe2(h->go, O_CLOEXEC) == 0, "pipe: %s",
		 strerror(errno));
}

void hold_here(struct hold *h)
{
	cl_signal(h->done[1], "hold done");
	cl_await(h->go[0], 60000, "hold go");
}

void hold_wait_done(struct hold *h, unsigned n_hold, int ms, const pid_t *pids,
		    const char *const *names, unsigned n)
{
	int64_t deadline = h_now_ms() + ms;
	unsigned i;

	for (i = 0; i < n_hold; i++) {
		int64_t left = deadline - h_now_ms();
		uint8_t x;
		int rc = h_read_byte(h->done[0], &x, left > 0 ? (int)left : 0);

		if (rc != 1) {
			char why[96];

			snprintf(why, sizeof(why), "only %u of %u clients done within %d ms", i,
				 n_hold, ms);
			fail_clients(pids, names, n, why);
		}
	}
}

void hold_release(struct hold *h, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		H_ASSERT(h_write_byte(h->go[1], 1) == 0, "hold release: %s", strerror(errno));
	H_ASSERT(close(h->go[1]) == 0 && close(h->go[0]) == 0 && close(h->done[0]) == 0 &&
		 close(h->done[1]) == 0, "close: %s", strerror(errno));
}

/* ---- test process: one operation at a time ---- */

struct sl_cqe send_wait(struct sl_queue *q, sl_addr_t dst, uint64_t tag, const void *buf,
			size_t len, uint64_t ctx, int ms)
{
	struct sl_cqe cqe;
	int rc = sl_send(q, dst, tag, buf, len, ctx);

	H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	wait_cqes(q, &cqe, 1, ms);
	H_EQ(cqe.user_ctx, ctx);
	H_EQ(cqe.opcode, SL_OP_SEND);
	H_EQ(cqe.len, len);
	return cqe;
}

void ping(struct sl_queue *from, struct sl_queue *to, uint64_t tag, uint32_t seq)
{
	uint8_t *sb = sl_alloc(from, 256), *rb = sl_alloc(to, 256);
	sl_addr_t src = sl_queue_addr(from), dst = sl_queue_addr(to);
	struct sl_cqe sc, rcq;
	int rc;

	H_ASSERT(sb && rb, "sl_alloc: %s", strerror(errno));
	msg_fill(sb, 200, 99, seq, tag);
	rc = sl_recv(to, src, tag, ~0ull, rb, 256, 0x7100 + seq);
	H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	rc = sl_send(from, dst, tag, sb, 200, 0x7200 + seq);
	H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	wait_cqes(from, &sc, 1, 5000);
	H_ASSERT(sc.status == SL_OK && sc.user_ctx == 0x7200 + seq && sc.len == 200,
		 "ping send: %s ctx %#llx len %llu", sl_strerror(sc.status),
		 (unsigned long long)sc.user_ctx, (unsigned long long)sc.len);
	wait_cqes(to, &rcq, 1, 5000);
	H_ASSERT(rcq.status == SL_OK && rcq.user_ctx == 0x7100 + seq && rcq.len == 200 &&
		 rcq.tag == tag && addr_eq(rcq.peer, src),
		 "ping recv: %s ctx %#llx len %llu", sl_strerror(rcq.status),
		 (unsigned long long)rcq.user_ctx, (unsigned long long)rcq.len);
	H_ASSERT(msg_check(rb, 200, 99, seq, tag), "ping payload differs");
	sl_free(from, sb);
	sl_free(to, rb);
}

void expect_cqe(struct sl_queue *q, uint8_t opcode, uint64_t ctx, int status, uint64_t len,
		uint64_t tag, sl_addr_t peer)
{
	struct sl_cqe cqe;

	wait_cqes(q, &cqe, 1, 10000);
	H_ASSERT(cqe.opcode == opcode && cqe.user_ctx == ctx && cqe.status == status &&
		 cqe.len == len && cqe.tag == tag && addr_eq(cqe.peer, peer),
		 "got opcode %u ctx %#llx %s len %llu tag %llu peer %08x:%u; want opcode %u "
		 "ctx %#llx %s len %llu tag %llu peer %08x:%u", cqe.opcode,
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status),
		 (unsigned long long)cqe.len, (unsigned long long)cqe.tag, cqe.peer.node,
		 cqe.peer.port, opcode, (unsigned long long)ctx, sl_strerror(status),
		 (unsigned long long)len, (unsigned long long)tag, peer.node, peer.port);
}

void settle_baseline(const struct h_daemon *d, int *fds, int *maps)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	int rc = sl_open(d->sock, &ctx);

	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	rc = sl_queue_open(ctx, 0, 8, &q);
	H_ASSERT(rc == 0, "sl_queue_open: %s", strerror(-rc));
	H_EQ(sl_queue_close(q), 0);
	sl_close(ctx);
	h_daemon_settle(d, fds, maps);
}

void expect_baseline(const struct h_daemon *d, int fds, int maps)
{
	int64_t deadline = h_now_ms() + 2000;
	int f, m;

	for (;;) {
		f = h_proc_fds(d->pid);
		m = h_proc_memfd_maps(d->pid);
		H_ASSERT(f >= 0 && m >= 0, "/proc of %s: %d %d", d->name, f, m);
		if ((f == fds && m == maps) || h_now_ms() >= deadline)
			break;
		h_sleep_ms(20);
	}
	H_ASSERT(f == fds && m == maps,
		 "daemon %s: %d fds and %d memfd mappings 2 s after its clients left; "
		 "baseline %d and %d", d->name, f, m, fds, maps);
}

void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	H_ASSERT(f, "%s: %s", path, strerror(errno));
	H_ASSERT(fputs(text, f) >= 0, "%s: write", path);
	H_ASSERT(fclose(f) == 0, "%s: %s", path, strerror(errno));
}

void daemon_reload(const struct h_daemon *d, int wait_ms)
{
	unsigned before = tu_log_lines(d, "changes applied");
	int64_t deadline = h_now_ms() + wait_ms;

	H_ASSERT(kill(d->pid, SIGHUP) == 0, "kill %s: %s", d->name, strerror(errno));
	while (tu_log_lines(d, "changes applied") == before) {
		H_ASSERT(h_now_ms() < deadline, "%s: no reload summary within %d ms", d->name,
			 wait_ms);
		h_sleep_ms(10);
	}
}
