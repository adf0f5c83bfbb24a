/*
 * test_crossing_rendezvous.c - two nodes that start rendezvous sends to
 * each other before either posts its receive, up to the largest message:
 * neither holds up the other.
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

/*
 * Two nodes that both start rendezvous sends to each other before either
 * posts its receive: both RTS wait unexpected, then each receive matches
 * and both transfers finish.  Neither side's send may hold up the other's
 * RTR or write (no deadlock), and 1 GiB, the largest message, works.
 */
START_TEST(crossing_rendezvous)
{
	static const char *const names[] = { "A", "B" };
	static const size_t sizes[] = { 4u << 20, SL_MSG_MAX };
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct sl_cqe cqe;
	size_t k;

	h_cluster_start_conf(nodes, names, 2, "[limits]\narena_bytes = 2200M\n");
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 7001, 16, &qa), 0);
	H_EQ(sl_queue_open(cb, 7002, 16, &qb), 0);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint8_t *sa = sl_alloc(qa, n), *sb = sl_alloc(qb, n);
		uint8_t *ra = sl_alloc(qa, n), *rb = sl_alloc(qb, n);
		bool got_send[2] = { false, false }, got_recv[2] = { false, false };
		unsigned i;

		H_ASSERT(sa && sb && ra && rb, "sl_alloc of 4 x %zu bytes", n);
		msg_fill(sa, n, 1, (uint32_t)k, 21);
		msg_fill(sb, n, 2, (uint32_t)k, 22);
		H_EQ(sl_send(qa, sl_queue_addr(qb), 21, sa, n, 1), 0);
		H_EQ(sl_send(qb, sl_queue_addr(qa), 22, sb, n, 2), 0);
		/* Both RTS are in and unmatched: nothing completes yet. */
		expect_no_cqe(qa, 100);
		expect_no_cqe(qb, 10);
		H_EQ(sl_recv(qa, sl_queue_addr(qb), 22, ~0ull, ra, n, 3), 0);
		H_EQ(sl_recv(qb, sl_queue_addr(qa), 21, ~0ull, rb, n, 4), 0);
		for (i = 0; i < 4; i++) {
			struct sl_queue *q = i % 2 ? qb : qa;

			wait_cqes(q, &cqe, 1, 60000);
			H_ASSERT(cqe.status == SL_OK && cqe.len == n,
				 "size %zu, ctx %llu: %s len %llu", n,
				 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status),
				 (unsigned long long)cqe.len);
			switch (cqe.user_ctx) {
			case 1: case 2:
				H_ASSERT(!got_send[cqe.user_ctx - 1], "send %llu twice",
					 (unsigned long long)cqe.user_ctx);
				got_send[cqe.user_ctx - 1] = true;
				break;
			case 3: case 4:
				H_ASSERT(!got_recv[cqe.user_ctx - 3], "recv %llu twice",
					 (unsigned long long)cqe.user_ctx);
				got_recv[cqe.user_ctx - 3] = true;
				break;
			default:
				H_ASSERT(false, "completion with ctx %llu",
					 (unsigned long long)cqe.user_ctx);
			}
		}
		H_ASSERT(msg_check(ra, n, 2, (uint32_t)k, 22), "A's %zu-byte payload", n);
		H_ASSERT(msg_check(rb, n, 1, (uint32_t)k, 21), "B's %zu-byte payload", n);
		expect_no_cqe(qa, 10);
		expect_no_cqe(qb, 10);
		sl_free(qa, sa);
		sl_free(qa, ra);
		sl_free(qb, sb);
		sl_free(qb, rb);
	}
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *crossing_rendezvous_suite(void)
{
	Suite *s = suite_create("crossing_rendezvous");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, crossing_rendezvous);
	return s;
}

int main(void)
{
	return h_run_suite(crossing_rendezvous_suite());
}
