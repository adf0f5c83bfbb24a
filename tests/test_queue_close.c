/*
 * test_queue_close.c - a queue closed with receives posted, completions
 * unpolled and messages waiting unexpected, from its node and over the
 * link: a new queue on the same port starts fresh, and both daemons are
 * back at their fd and mapping baselines.
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

#define H_PORT 4001u

START_TEST(queue_close_cancels)
{
	static const char *const names[] = { "A", "B" };
	struct h_daemon nodes[2];
	struct sl_ctx *cx, *cy, *cb, *cz;
	struct sl_queue *qx, *qy, *qb, *qz;
	sl_addr_t port = { 0, H_PORT };
	struct sl_cqe cqe[16];
	uint8_t *xb, *yb, *bb, *zb;
	int fds[2], maps[2];
	unsigned i;

	h_cluster_start(nodes, names, 2);
	for (i = 0; i < 2; i++)
		settle_baseline(&nodes[i], &fds[i], &maps[i]);
	port.node = nodes[0].node;
	H_EQ(sl_open(nodes[0].sock, &cx), 0);
	H_EQ(sl_open(nodes[0].sock, &cy), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(cx, H_PORT, 64, &qx), 0);
	H_EQ(sl_queue_open(cy, 4002, 64, &qy), 0);
	H_EQ(sl_queue_open(cb, 4003, 64, &qb), 0);
	xb = sl_alloc(qx, 16 * 256);
	yb = sl_alloc(qy, 256);
	bb = sl_alloc(qb, 256);
	H_ASSERT(xb && yb && bb, "sl_alloc");

	/* X leaves receives posted, completions unpolled and messages
	 * unexpected, from this node and over the link. */
	for (i = 0; i < 10; i++)
		H_EQ(sl_recv(qx, SL_ANY_SOURCE, 1, ~0ull, xb + i * 256, 256, i), 0);
	msg_fill(yb, 200, 1, 0, 2);
	msg_fill(bb, 200, 2, 0, 2);
	for (i = 0; i < 5; i++) {
		H_EQ(sl_send(qy, port, 2, yb, 200, i), 0);
		H_EQ(sl_send(qb, port, 2, bb, 200, i), 0);
	}
	H_EQ(sl_send(qy, port, 1, yb, 200, 5), 0);
	H_EQ(sl_send(qb, port, 1, bb, 200, 5), 0);
	wait_cqes(qy, cqe, 6, 5000);
	for (i = 0; i < 6; i++)
		H_EQ(cqe[i].status, SL_OK);
	wait_cqes(qb, cqe, 6, 5000);
	for (i = 0; i < 6; i++)
		H_EQ(cqe[i].status, SL_OK);
	H_EQ(sl_queue_close(qx), 0);
	sl_close(cx);

	/* Z binds the port in another process' place: a fresh endpoint. */
	H_EQ(sl_open(nodes[0].sock, &cz), 0);
	H_EQ(sl_queue_open(cz, H_PORT, 64, &qz), 0);
	zb = sl_alloc(qz, 256);
	H_ASSERT(zb, "sl_alloc");
	memset(zb, 0xee, 256);
	H_EQ(sl_recv(qz, SL_ANY_SOURCE, 0, 0, zb, 256, 42), 0);
	expect_no_cqe(qz, 300);
	for (i = 0; i < 256; i++)
		H_ASSERT(zb[i] == 0xee, "stale data in the new queue's buffer at %u", i);
	msg_fill(yb, 100, 1, 1, 3);
	H_EQ(sl_send(qy, port, 3, yb, 100, 6), 0);
	wait_cqes(qy, cqe, 1, 5000);
	H_EQ(cqe[0].status, SL_OK);
	wait_cqes(qz, cqe, 1, 5000);
	H_ASSERT(cqe[0].user_ctx == 42 && cqe[0].status == SL_OK && cqe[0].tag == 3 &&
		 cqe[0].len == 100 && addr_eq(cqe[0].peer, sl_queue_addr(qy)),
		 "fresh message: ctx %llu %s tag %llu len %llu", (unsigned long long)cqe[0].user_ctx,
		 sl_strerror(cqe[0].status), (unsigned long long)cqe[0].tag,
		 (unsigned long long)cqe[0].len);
	H_ASSERT(msg_check(zb, 100, 1, 1, 3), "fresh payload");
	H_EQ(sl_recv(qz, SL_ANY_SOURCE, 0, 0, zb, 256, 43), 0);
	msg_fill(bb, 100, 2, 1, 3);
	H_EQ(sl_send(qb, port, 3, bb, 100, 7), 0);
	wait_cqes(qz, cqe, 1, 5000);
	H_ASSERT(cqe[0].user_ctx == 43 && cqe[0].status == SL_OK &&
		 addr_eq(cqe[0].peer, sl_queue_addr(qb)), "fresh remote message");
	H_ASSERT(msg_check(zb, 100, 2, 1, 3), "fresh remote payload");
	wait_cqes(qb, cqe, 1, 5000);
	H_EQ(cqe[0].status, SL_OK);
	expect_no_cqe(qz, 50);

	H_EQ(sl_queue_close(qz), 0);
	sl_close(cz);
	sl_close(cy);
	sl_close(cb);
	for (i = 0; i < 2; i++)
		expect_baseline(&nodes[i], fds[i], maps[i]);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *queue_close_suite(void)
{
	Suite *s = suite_create("queue_close");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, queue_close_cancels);
	return s;
}

int main(void)
{
	return h_run_suite(queue_close_suite());
}
