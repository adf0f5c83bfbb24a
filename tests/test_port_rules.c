/*
 * test_port_rules.c - who may bind which port (taken, out of range,
 * privileged, ephemeral, bound again after a close), what a send to a
 * port nobody bound completes (locally, over the link, to a node nobody
 * configured), and messages over the eager maximum waiting at the sender
 * until a receive matches.
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

/* Send @len bytes with tag 3 to @dst and return the completion. */
static struct sl_cqe g_send(struct sl_queue *q, sl_addr_t dst, const void *buf, size_t len,
			    uint64_t ctx)
{
	return send_wait(q, dst, 3, buf, len, ctx, 5000);
}

START_TEST(port_rules)
{
	static const char *const names[] = { "A", "B" };
	struct h_daemon nodes[2];
	struct sl_ctx *c1, *c2, *cb;
	struct sl_queue *q1, *qx, *e1, *e2, *qp, *qr, *qb;
	struct sl_cqe cqe;
	sl_addr_t a1, a2, gone_local, gone_remote;
	uint8_t *big, *rbig;
	unsigned i;
	int rc;

	h_cluster_start(nodes, names, 2);
	H_EQ(sl_open(nodes[0].sock, &c1), 0);
	H_EQ(sl_open(nodes[0].sock, &c2), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_local_node(c1), nodes[0].node);
	H_EQ(sl_local_node(cb), nodes[1].node);

	H_EQ(sl_queue_open(c1, 5001, 16, &q1), 0);
	H_EQ(sl_queue_open(c1, 5001, 16, &qx), -EADDRINUSE);
	H_EQ(sl_queue_open(c2, 5001, 16, &qx), -EADDRINUSE);
	H_EQ(sl_queue_open(c1, 65536, 16, &qx), -EINVAL);
	H_EQ(sl_queue_open(c1, 5003, 0, &qx), -EINVAL);
	H_EQ(sl_queue_open(c1, 5003, SL_QUEUE_DEPTH_MAX + 1, &qx), -EINVAL);
	rc = sl_queue_open(c2, 80, 16, &qx);
	if (geteuid() == 0) {
		H_ASSERT(rc == 0, "root binding port 80: %s", strerror(-rc));
		H_EQ(sl_queue_close(qx), 0);
	} else {
		H_EQ(rc, -EACCES);
	}

	/* Ephemeral ports: in range, distinct, with the real node id. */
	H_EQ(sl_queue_open(c1, 0, 64, &e1), 0);
	H_EQ(sl_queue_open(c2, 0, 16, &e2), 0);
	a1 = sl_queue_addr(e1);
	a2 = sl_queue_addr(e2);
	H_ASSERT(a1.port >= SL_PORT_EPHEMERAL_MIN && a1.port <= SL_PORT_EPHEMERAL_MAX &&
		 a2.port >= SL_PORT_EPHEMERAL_MIN && a2.port <= SL_PORT_EPHEMERAL_MAX &&
		 a1.port != a2.port, "ephemeral ports %u and %u", a1.port, a2.port);
	H_EQ(a1.node, nodes[0].node);
	H_EQ(sl_queue_open(c2, a1.port, 16, &qx), -EADDRINUSE);

	/* Closed ports can be bound again, by anyone. */
	H_EQ(sl_queue_close(q1), 0);
	H_EQ(sl_queue_open(c2, 5001, 16, &q1), 0);
	H_EQ(sl_queue_close(e2), 0);
	H_EQ(sl_queue_open(c1, a2.port, 16, &e2), 0);

	/* Nothing bound: NO_ENDPOINT, locally and across the link, and for a
	 * node nobody configured.  A burst of them must leave the link up. */
	gone_local = (sl_addr_t){ nodes[0].node, 5002 };
	gone_remote = (sl_addr_t){ nodes[1].node, 5002 };
	cqe = g_send(e1, (sl_addr_t){ SL_NODE_LOCAL, 5002 }, NULL, 0, 1);
	H_ASSERT(cqe.status == SL_ERR_NO_ENDPOINT && addr_eq(cqe.peer, gone_local),
		 "local: %s to %08x:%u", sl_strerror(cqe.status), cqe.peer.node, cqe.peer.port);
	cqe = g_send(e1, gone_local, NULL, 0, 2);
	H_EQ(cqe.status, SL_ERR_NO_ENDPOINT);
	cqe = g_send(e1, gone_remote, NULL, 0, 3);
	H_ASSERT(cqe.status == SL_ERR_NO_ENDPOINT && addr_eq(cqe.peer, gone_remote),
		 "remote: %s", sl_strerror(cqe.status));
	/* A node in no configuration is not an unbound port (test_operator.c). */
	cqe = g_send(e1, (sl_addr_t){ sl_node_id("nowhere"), 5002 }, NULL, 0, 4);
	H_EQ(cqe.status, SL_ERR_UNKNOWN_NODE);
	/* Refused descriptors name this node too, never SL_NODE_LOCAL. */
	cqe = g_send(e1, (sl_addr_t){ SL_NODE_LOCAL, 0 }, NULL, 0, 5);
	H_ASSERT(cqe.status == SL_ERR_INVALID &&
		 addr_eq(cqe.peer, ((sl_addr_t){ nodes[0].node, 0 })),
		 "port 0: %s to %08x:%u", sl_strerror(cqe.status), cqe.peer.node, cqe.peer.port);
	big = sl_alloc(e1, 65537);
	H_ASSERT(big, "sl_alloc");
	for (i = 0; i < 32; i++) {
		rc = sl_send(e1, gone_remote, 3, big, i * 100, 100 + i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	}
	for (i = 0; i < 32; i++) {
		wait_cqes(e1, &cqe, 1, 5000);
		H_ASSERT(cqe.status == SL_ERR_NO_ENDPOINT && cqe.user_ctx >= 100 &&
			 cqe.user_ctx < 132, "burst to an unbound remote port: ctx %llu %s",
			 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	}

	/* Over eager_max: a rendezvous, which waits at the sender until a
	 * receive matches, remotely and locally. */
	H_EQ(sl_queue_open(cb, 6001, 16, &qb), 0);
	H_EQ(sl_queue_open(c2, 6002, 16, &qr), 0);
	H_EQ(sl_queue_open(c1, 6003, 16, &qp), 0);
	msg_fill(big, 65537, 1, 1, 3);
	H_EQ(sl_send(e1, sl_queue_addr(qb), 3, big, 65537, 5), 0);
	expect_no_cqe(e1, 50);
	expect_no_cqe(qb, 10);
	rbig = sl_alloc(qb, 65537);
	H_ASSERT(rbig, "sl_alloc");
	H_EQ(sl_recv(qb, a1, 3, ~0ull, rbig, 65537, 4), 0);
	wait_cqes(qb, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.len == 65537 && addr_eq(cqe.peer, a1) &&
		 cqe.user_ctx == 4, "remote rendezvous recv: %s len %llu",
		 sl_strerror(cqe.status), (unsigned long long)cqe.len);
	H_ASSERT(msg_check(rbig, 65537, 1, 1, 3), "remote rendezvous payload");
	wait_cqes(e1, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 5 && cqe.len == 65537,
		 "remote rendezvous send: %s", sl_strerror(cqe.status));
	sl_free(qb, rbig);
	rbig = sl_alloc(qr, 65537);
	H_ASSERT(rbig, "sl_alloc");
	H_EQ(sl_recv(qr, a1, 3, ~0ull, rbig, 65537, 6), 0);
	cqe = g_send(e1, (sl_addr_t){ SL_NODE_LOCAL, 6002 }, big, 65537, 7);
	H_ASSERT(cqe.status == SL_OK, "65537 bytes local: %s", sl_strerror(cqe.status));
	wait_cqes(qr, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.len == 65537 && addr_eq(cqe.peer, a1),
		 "local big recv: %s len %llu", sl_strerror(cqe.status),
		 (unsigned long long)cqe.len);
	H_ASSERT(msg_check(rbig, 65537, 1, 1, 3), "local big payload");
	/* The largest remote message is fine, and the link is still up. */
	sl_free(qr, rbig);
	rbig = sl_alloc(qb, 65536);
	H_ASSERT(rbig, "sl_alloc");
	msg_fill(big, 65536, 1, 2, 3);
	H_EQ(sl_recv(qb, a1, 3, ~0ull, rbig, 65536, 8), 0);
	cqe = g_send(e1, sl_queue_addr(qb), big, 65536, 9);
	H_ASSERT(cqe.status == SL_OK, "65536 bytes remote: %s", sl_strerror(cqe.status));
	wait_cqes(qb, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.len == 65536 && addr_eq(cqe.peer, a1),
		 "remote max recv: %s", sl_strerror(cqe.status));
	H_ASSERT(msg_check(rbig, 65536, 1, 2, 3), "remote max payload");
	ping(qp, qb, 11, 0);

	H_EQ(sl_queue_close(q1), 0);
	H_EQ(sl_queue_close(e1), 0);
	H_EQ(sl_queue_close(e2), 0);
	/* sl_close() closes the queues still open: qp, qr, qb. */
	sl_close(c1);
	sl_close(c2);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *port_rules_suite(void)
{
	Suite *s = suite_create("port_rules");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, port_rules);
	return s;
}

int main(void)
{
	return h_run_suite(port_rules_suite());
}
