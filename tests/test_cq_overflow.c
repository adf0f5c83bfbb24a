/*
 * test_cq_overflow.c - the completion ring never overflows: the daemon
 * takes a descriptor only with a completion slot held for it, the SQ
 * holds the rest, and a daemon whose client leaves its CQ full sleeps
 * instead of spinning until the client polls.
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

#define F_DEPTH 4
#define F_CQ (F_DEPTH * SL_CQ_PER_SQ)
#define F_TAG 77

START_TEST(cq_never_overflows)
{
	struct h_daemon node;
	struct sl_ctx *ctx;
	struct sl_queue *q, *sq;
	struct sl_cqe cqe[F_CQ + F_DEPTH + 1];
	uint8_t *rb, *sb;
	unsigned accepted = 0, i;
	int64_t eagain_since = -1;
	struct progress pg;
	bool seen[F_CQ + F_DEPTH] = { false };
	int rc;

	h_daemon_start(&node, "A", 0, NULL, 0);
	rc = sl_open(node.sock, &ctx);
	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	H_EQ(sl_queue_open(ctx, 4001, F_DEPTH, &q), 0);
	H_EQ(sl_queue_open(ctx, 4002, 64, &sq), 0);
	rb = sl_alloc(q, (F_CQ + F_DEPTH + 1) * 64);
	sb = sl_alloc(sq, (F_CQ + F_DEPTH) * 64);
	H_ASSERT(rb && sb, "sl_alloc");

	/* Receives nothing matches yet, until the SQ stays full: the daemon
	 * holds a CQ slot for each one it takes (8), the SQ holds 4 more.
	 * Posting goes on until all 12 are in (bounded by 10 s without one
	 * more: a busy machine's daemon may take its time), then 300 ms more
	 * in which no 13th may get in. */
	progress_start(&pg, 0, 0);
	for (;;) {
		rc = sl_recv(q, SL_ANY_SOURCE, F_TAG, ~0ull, rb + accepted * 64, 64, accepted);
		if (rc == 0) {
			accepted++;
			eagain_since = -1;
			H_ASSERT(accepted <= F_CQ + F_DEPTH,
				 "%u receives accepted with a CQ of %u and an SQ of %u", accepted,
				 F_CQ, F_DEPTH);
			continue;
		}
		H_ASSERT(rc == -EAGAIN, "sl_recv: %s", strerror(-rc));
		H_ASSERT(progress_note(&pg, accepted) < 10000, "%u receives accepted, no more for "
			 "10 s, want %u", accepted, F_CQ + F_DEPTH);
		if (accepted == F_CQ + F_DEPTH) {
			if (eagain_since < 0)
				eagain_since = h_now_ms();
			else if (h_now_ms() - eagain_since > 300)
				break;
		}
		h_sleep_ms(5);
	}
	H_EQ(accepted, F_CQ + F_DEPTH);
	H_EQ(sl_poll(q, cqe, F_CQ + F_DEPTH + 1), 0);

	/* Twelve messages: eight meet the accepted receives and fill the CQ;
	 * four wait unexpected until polling frees room for the SQ's four. */
	for (i = 0; i < F_CQ + F_DEPTH; i++) {
		msg_fill(sb + i * 64, 64, 3, i, F_TAG);
		rc = sl_send(sq, (sl_addr_t){ SL_NODE_LOCAL, 4001 }, F_TAG, sb + i * 64, 64, i);
		H_ASSERT(rc == 0, "sl_send %u: %s", i, strerror(-rc));
	}
	wait_cqes(sq, cqe, F_CQ + F_DEPTH, 5000);
	for (i = 0; i < F_CQ + F_DEPTH; i++)
		H_ASSERT(cqe[i].status == SL_OK && cqe[i].user_ctx == i, "send %u: %s", i,
			 sl_strerror(cqe[i].status));
	wait_cqes(q, cqe, F_CQ + F_DEPTH, 5000);
	for (i = 0; i < F_CQ + F_DEPTH; i++) {
		uint64_t k = cqe[i].user_ctx;

		H_ASSERT(k < F_CQ + F_DEPTH && !seen[k], "receive ctx %llu %s",
			 (unsigned long long)k, k < F_CQ + F_DEPTH ? "twice" : "unknown");
		seen[k] = true;
		H_ASSERT(cqe[i].status == SL_OK && cqe[i].len == 64 && cqe[i].tag == F_TAG,
			 "receive %llu: %s", (unsigned long long)k, sl_strerror(cqe[i].status));
		/* Receives match in posting order, messages in sending order. */
		H_EQ(k, i);
		H_ASSERT(msg_check(rb + k * 64, 64, 3, (uint32_t)k, F_TAG), "receive %llu payload",
			 (unsigned long long)k);
	}
	expect_no_cqe(q, 100);
	expect_no_cqe(sq, 10);
	H_EQ(sl_queue_close(q), 0);
	H_EQ(sl_queue_close(sq), 0);
	sl_close(ctx);
	h_daemon_stop(&node);
}
END_TEST

/*
 * Found while writing cq_never_overflows: SQEs that wait for CQ room keep
 * the daemon from ever going idle (try_sleep() sees them as work), so it
 * busy-polls a core for as long as the client does not poll its CQ.  The
 * daemon should sleep; the client then has to wake it when it frees CQ
 * room: the daemon sets SL_RING_CQ_STALLED before sleeping and sl_poll()
 * rings the SQ doorbell when it sees it.
 */
#define F_IDLE_MS 500

START_TEST(cq_full_daemon_sleeps)
{
	struct h_daemon node;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint8_t *rb;
	unsigned accepted = 0, tries;
	long t0, t1, hz = sysconf(_SC_CLK_TCK);
	int rc;

	H_ASSERT(hz > 0, "_SC_CLK_TCK: %s", strerror(errno));
	h_daemon_start(&node, "A", 0, NULL, 0);
	rc = sl_open(node.sock, &ctx);
	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	H_EQ(sl_queue_open(ctx, 4001, F_DEPTH, &q), 0);
	rb = sl_alloc(q, 64);
	H_ASSERT(rb, "sl_alloc");
	/* Eight receives in flight fill the CQ reservation; four wait in the SQ. */
	for (tries = 0; accepted < F_CQ + F_DEPTH && tries < 200; tries++) {
		rc = sl_recv(q, SL_ANY_SOURCE, F_TAG, ~0ull, rb, 64, accepted);
		if (rc == 0)
			accepted++;
		else if (rc == -EAGAIN)
			h_sleep_ms(5);
		else
			H_ASSERT(0, "sl_recv: %s", strerror(-rc));
	}
	H_EQ(accepted, F_CQ + F_DEPTH);
	h_sleep_ms(50);		/* past the daemon's spin window */
	t0 = h_proc_cpu_ticks(node.pid);
	h_sleep_ms(F_IDLE_MS);
	t1 = h_proc_cpu_ticks(node.pid);
	H_ASSERT(t0 >= 0 && t1 >= 0, "/proc/%d/stat: %ld %ld", (int)node.pid, t0, t1);
	H_ASSERT((t1 - t0) * 1000 / hz < F_IDLE_MS / 4,
		 "daemon used %ld ms of CPU in %d ms with nothing it can do (4 SQEs waiting "
		 "for CQ room): it busy-polls instead of sleeping", (t1 - t0) * 1000 / hz,
		 F_IDLE_MS);

	/*
	 * Resume: twelve messages arrive; eight match the receives in flight
	 * and four wait as unexpected, and the daemon goes back to sleep with
	 * the CQ full.  Only the client's sl_poll() (its CQ_STALLED doorbell)
	 * can now get the four waiting receives taken: all twelve must
	 * complete, in posting order, each exactly once.
	 */
	{
		struct sl_queue *tx;
		struct sl_cqe cqes[F_CQ + F_DEPTH], sc;
		uint8_t *sb;
		unsigned i;

		H_EQ(sl_queue_open(ctx, 4002, 64, &tx), 0);
		sb = sl_alloc(tx, 64);
		H_ASSERT(sb, "sl_alloc");
		for (i = 0; i < F_CQ + F_DEPTH; i++) {
			H_EQ(sl_send(tx, sl_queue_addr(q), F_TAG, sb, 8, 100 + i), 0);
			H_EQ(h_wait_cqe(tx, &sc, 2000), 1);
			H_EQ(sc.status, SL_OK);
		}
		h_sleep_ms(50);		/* past the spin window again */
		wait_cqes(q, cqes, F_CQ, 2000);
		wait_cqes(q, cqes + F_CQ, F_DEPTH, 2000);
		for (i = 0; i < F_CQ + F_DEPTH; i++) {
			H_EQ(cqes[i].user_ctx, i);
			H_EQ(cqes[i].status, SL_OK);
			H_EQ(cqes[i].len, 8);
		}
		expect_no_cqe(q, 50);
		H_EQ(sl_queue_close(tx), 0);
	}
	H_EQ(sl_queue_close(q), 0);
	sl_close(ctx);
	h_daemon_stop(&node);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *cq_overflow_suite(void)
{
	Suite *s = suite_create("cq_overflow");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, cq_never_overflows);
	tcase_add_test(tc, cq_full_daemon_sleeps);
	return s;
}

int main(void)
{
	return h_run_suite(cq_overflow_suite());
}
