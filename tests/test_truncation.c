/*
 * test_truncation.c - case C12's eager part (docs/cases.md): a message
 * longer than its receive completes SL_ERR_TRUNCATED with the whole
 * length, fills the receive exactly and writes nothing past it, on one
 * node and over the link, posted first or taken unexpected; the sender
 * completes SL_OK, and the link and both endpoints stay healthy.
 *
 * Real daemons on TCP loopback (tests/harness.c); the test process is the
 * client, with the round trips of tests/client_kit.h.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sl_barrier.h"
#include "sl_shm.h"
#include "sluice.h"
#include "testutil.h"

#define D_GUARD 64		/* bytes after a receive buffer that must stay */
#define D_TAIL_MSGS 1000

/*
 * One truncated message: @len bytes into a receive of @cap bytes, the
 * receive posted before the message (@recv_first) or after it sat
 * unexpected.
 */
static void d_truncate(struct sl_queue *sq, struct sl_queue *rq, size_t len, size_t cap,
		       bool recv_first, uint32_t seq)
{
	sl_addr_t src = sl_queue_addr(sq), dst = sl_queue_addr(rq);
	uint8_t *sb = sl_alloc(sq, len), *rb = sl_alloc(rq, cap + D_GUARD);
	struct sl_cqe sc, rc_;
	size_t i;
	int rc;

	H_ASSERT(sb && rb, "sl_alloc: %s", strerror(errno));
	msg_fill(sb, len, 7, seq, 4);
	memset(rb, 0xee, cap + D_GUARD);
	if (recv_first) {
		rc = sl_recv(rq, src, 4, ~0ull, rb, cap, 0xd000 + seq);
		H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	}
	rc = sl_send(sq, dst, 4, sb, len, 0xe000 + seq);
	H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	/* The sender's rule: the message was accepted, so OK. */
	wait_cqes(sq, &sc, 1, 5000);
	H_ASSERT(sc.status == SL_OK && sc.user_ctx == 0xe000 + seq && sc.len == len &&
		 sc.tag == 4 && addr_eq(sc.peer, dst) && sc.opcode == SL_OP_SEND,
		 "send of %zu: %s len %llu", len, sl_strerror(sc.status),
		 (unsigned long long)sc.len);
	if (!recv_first) {
		rc = sl_recv(rq, src, 4, ~0ull, rb, cap, 0xd000 + seq);
		H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	}
	wait_cqes(rq, &rc_, 1, 5000);
	H_ASSERT(rc_.status == SL_ERR_TRUNCATED, "%zu into %zu (%s): status %s", len, cap,
		 recv_first ? "posted first" : "unexpected", sl_strerror(rc_.status));
	H_EQ(rc_.len, len);
	H_EQ(rc_.user_ctx, 0xd000 + seq);
	H_EQ(rc_.tag, 4);
	H_EQ(rc_.opcode, SL_OP_RECV);
	H_ASSERT(addr_eq(rc_.peer, src), "peer %08x:%u", rc_.peer.node, rc_.peer.port);
	H_ASSERT(msg_check_prefix(rb, cap, len, 7, seq, 4), "first %zu bytes differ", cap);
	for (i = cap; i < cap + D_GUARD; i++)
		H_ASSERT(rb[i] == 0xee, "byte %zu after a %zu-byte receive written", i, cap);
	sl_free(sq, sb);
	sl_free(rq, rb);
}

/* @n messages of 64 bytes, tag 5, receives posted first: all OK, in order. */
static void d_stream(struct sl_queue *sq, struct sl_queue *rq, unsigned n)
{
	sl_addr_t src = sl_queue_addr(sq), dst = sl_queue_addr(rq);
	uint8_t *sb = sl_alloc(sq, (size_t)n * 64), *rb = sl_alloc(rq, (size_t)n * 64);
	struct sl_cqe *cq = calloc(n, sizeof(*cq));
	unsigned i;
	int rc;

	H_ASSERT(sb && rb && cq, "alloc: %s", strerror(errno));
	/* The CQs hold every completion; a full SQ only needs the daemon to
	 * drain it. */
	for (i = 0; i < n; i++) {
		int64_t t0 = h_now_ms();

		while ((rc = sl_recv(rq, src, 5, ~0ull, rb + i * 64, 64, i)) == -EAGAIN &&
		       h_now_ms() - t0 < 2000)
			h_sleep_ms(1);
		H_ASSERT(rc == 0, "sl_recv %u: %s", i, strerror(-rc));
	}
	for (i = 0; i < n; i++) {
		int64_t t0 = h_now_ms();

		msg_fill(sb + i * 64, 64, 7, i, 5);
		while ((rc = sl_send(sq, dst, 5, sb + i * 64, 64, i)) == -EAGAIN &&
		       h_now_ms() - t0 < 2000)
			h_sleep_ms(1);
		H_ASSERT(rc == 0, "sl_send %u: %s", i, strerror(-rc));
	}
	wait_cqes(sq, cq, n, 5000);
	for (i = 0; i < n; i++)
		H_ASSERT(cq[i].status == SL_OK && cq[i].user_ctx == i, "send %u: ctx %llu %s", i,
			 (unsigned long long)cq[i].user_ctx, sl_strerror(cq[i].status));
	wait_cqes(rq, cq, n, 5000);
	for (i = 0; i < n; i++) {
		H_ASSERT(cq[i].status == SL_OK && cq[i].user_ctx == i && cq[i].len == 64 &&
			 cq[i].tag == 5 && addr_eq(cq[i].peer, src),
			 "recv %u: ctx %llu %s len %llu", i, (unsigned long long)cq[i].user_ctx,
			 sl_strerror(cq[i].status), (unsigned long long)cq[i].len);
		H_ASSERT(msg_check(rb + i * 64, 64, 7, i, 5), "recv %u: payload", i);
	}
	expect_no_cqe(sq, 20);
	expect_no_cqe(rq, 20);
	free(cq);
	sl_free(sq, sb);
	sl_free(rq, rb);
}

START_TEST(truncation)
{
	static const char *const names[] = { "A", "B" };
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *a1, *a2, *b1;
	int rc;

	h_cluster_start(nodes, names, 2);
	rc = sl_open(nodes[0].sock, &ca);
	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	rc = sl_open(nodes[1].sock, &cb);
	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	H_EQ(sl_queue_open(ca, 1001, 1024, &a1), 0);
	H_EQ(sl_queue_open(ca, 1002, 128, &a2), 0);
	H_EQ(sl_queue_open(cb, 2001, 1024, &b1), 0);

	/* Same node. */
	d_truncate(a1, a2, 8, 4, true, 1);
	d_truncate(a1, a2, 8, 4, false, 2);
	d_truncate(a1, a2, 60 * 1024, 1024, true, 3);
	d_truncate(a1, a2, 60 * 1024, 1024, false, 4);
	/* Over the link. */
	d_truncate(a1, b1, 8, 4, true, 5);
	d_truncate(a1, b1, 8, 4, false, 6);
	d_truncate(a1, b1, 60 * 1024, 1024, true, 7);
	d_truncate(a1, b1, 60 * 1024, 1024, false, 8);
	/* The link and the endpoints stay healthy. */
	d_stream(a1, b1, D_TAIL_MSGS);
	d_stream(a1, a2, 100);

	H_EQ(sl_queue_close(a1), 0);
	H_EQ(sl_queue_close(a2), 0);
	H_EQ(sl_queue_close(b1), 0);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *truncation_suite(void)
{
	Suite *s = suite_create("truncation");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, truncation);
	return s;
}

int main(void)
{
	return h_run_suite(truncation_suite());
}
