/*
 * test_operator.c - what an operator sees when a client names something
 * that is not there.
 *   unknown_node   a send to a node in no daemon's configuration completed
 *                  SL_ERR_NO_ENDPOINT, the status of an unbound port, with
 *                  nothing logged, and a receive naming that node stayed
 *                  posted forever.  Now: both complete SL_ERR_UNKNOWN_NODE
 *                  (the receive at once), the node is logged once however
 *                  often it is named, daemon.unknown_node counts each, and
 *                  a send to an unbound port of a known node keeps
 *                  SL_ERR_NO_ENDPOINT.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"

#define UN_SENDS 10
#define UN_PORT 3100

/* Lines of @path containing @needle. */
static unsigned count_lines(const char *path, const char *needle)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(path, "r");

	H_ASSERT(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static void expect_one(struct sl_queue *q, uint8_t op, int32_t status, uint64_t ctx)
{
	struct sl_cqe cqe;
	int rc = h_wait_cqe(q, &cqe, 10000);

	H_ASSERT(rc == 1, "no completion for %" PRIu64 " in 10 s: %d", ctx, rc);
	H_ASSERT(cqe.opcode == op && cqe.status == status && cqe.user_ctx == ctx,
		 "completion: op %u status %s ctx %" PRIu64 ", want op %u %s ctx %" PRIu64,
		 cqe.opcode, sl_strerror(cqe.status), cqe.user_ctx, op, sl_strerror(status), ctx);
}

START_TEST(unknown_node)
{
	static const char *const names[] = { "A", "B" };
	struct h_daemon nodes[2];
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint32_t nowhere = sl_node_id("nowhere");
	sl_addr_t to_nowhere = { nowhere, UN_PORT }, to_b_unbound = { 0, H_PORT_NOBODY };
	char needle[64];
	uint8_t *buf;
	unsigned i;

	h_cluster_start(nodes, names, 2);
	h_wait_link(&nodes[0], &nodes[1]);
	to_b_unbound.node = nodes[1].node;
	H_EQ(sl_open(nodes[0].sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, UN_PORT, 64, &q), 0);
	buf = sl_alloc(q, 4096);
	H_ASSERT(buf, "sl_alloc");
	memset(buf, 0x5a, 4096);

	/* The receive first: before, it stayed posted for ever. */
	H_EQ(sl_recv(q, to_nowhere, 1, ~0ull, buf, 4096, 100), 0);
	expect_one(q, SL_OP_RECV, SL_ERR_UNKNOWN_NODE, 100);
	for (i = 0; i < UN_SENDS; i++) {
		H_EQ(sl_send(q, to_nowhere, 1, buf, 64, i), 0);
		expect_one(q, SL_OP_SEND, SL_ERR_UNKNOWN_NODE, i);
	}
	/* A known node's unbound port is another thing. */
	H_EQ(sl_send(q, to_b_unbound, 1, buf, 64, 200), 0);
	expect_one(q, SL_OP_SEND, SL_ERR_NO_ENDPOINT, 200);

	H_EQ(h_daemon_stat(&nodes[0], "daemon.unknown_node"), UN_SENDS + 1);
	H_EQ(h_daemon_stat(&nodes[0], "daemon.no_endpoint"), 0);
	snprintf(needle, sizeof(needle), "node %08x is not this node and not one of its", nowhere);
	H_EQ(count_lines(nodes[0].log, needle), 1);
	H_ASSERT(strcmp(sl_strerror(SL_ERR_UNKNOWN_NODE), "unknown node") == 0, "%s",
		 sl_strerror(SL_ERR_UNKNOWN_NODE));
	sl_close(ctx);
	h_cluster_stop(nodes, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("operator");

	tcase_add_test(h_tcase(s, "unknown_node", 60), unknown_node);
	return h_run_suite(s);
}
