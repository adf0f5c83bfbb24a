/*
 * test_unexpected_bound.c - a receiver that posts nothing does not make
 * its daemon hold messages without bound: exactly as many as fit in
 * unexpected_max_bytes are taken, the next is refused with
 * SL_NAK_RECEIVER_FULL and its buffer untouched, per endpoint, locally
 * and over the link; and the flood of 20,000 sends of 64 KiB that once
 * took the daemon to 1.3 GB keeps it small.
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
 * A receiver that posts nothing must not make its daemon hold messages
 * without bound.  Each unexpected message is charged its length plus 64
 * bytes (sluiced.conf(5)), so the number that fit is exact.
 */
#define I_LEN 65536u
#define I_CHARGE ((uint64_t)I_LEN + 64u)
#define I_BOUND (1ull << 20)
#define I_FIT ((unsigned)(I_BOUND / I_CHARGE))
#define I_FLOOD_BOUND (8ull << 20)
#define I_FLOOD_FIT ((unsigned)(I_FLOOD_BOUND / I_CHARGE))
#define I_FLOOD_MSGS 20000u
#define I_FLOOD_DEPTH 64u
#define I_RSS_MAX_KB (64l * 1024)
#define I_TAG 0x1b0du
#define I_FULL_PORT 7001u	/* never posts a receive */
#define I_OTHER_PORT 7002u	/* another non-receiving endpoint */
#define I_RECV_PORT 7003u	/* posts its receives up front */
#define I_SIDE_MSGS 8u
#define I_SIDE_LEN 1000u

/* One send, waited for; returns its status after checking the rest. */
static int i_send(struct sl_queue *q, sl_addr_t dst, const void *buf, size_t len,
		  uint64_t ctx)
{
	struct sl_cqe cqe = send_wait(q, dst, I_TAG, buf, len, ctx, 5000);

	H_ASSERT(addr_eq(cqe.peer, dst), "send peer %08x:%u, want %08x:%u", cqe.peer.node,
		 cqe.peer.port, dst.node, dst.port);
	return cqe.status;
}

/* Message @seq of sender @src_id, I_LEN bytes, into @buf (own arena). */
static int i_send_seq(struct sl_queue *q, sl_addr_t dst, uint8_t *buf, uint32_t src_id,
		      uint32_t seq)
{
	msg_fill(buf, I_LEN, src_id, seq, I_TAG);
	return i_send(q, dst, buf, I_LEN, seq);
}

/* Post one receive on @q and require message @seq from @src. */
static void i_recv_seq(struct sl_queue *q, sl_addr_t src, uint8_t *buf, uint32_t src_id,
		       uint32_t seq)
{
	struct sl_cqe cqe;
	int rc;

	memset(buf, 0, I_LEN);
	rc = sl_recv(q, src, I_TAG, ~0ull, buf, I_LEN, 0x9000 + seq);
	H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	wait_cqes(q, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 0x9000 + seq && cqe.len == I_LEN &&
		 cqe.tag == I_TAG && addr_eq(cqe.peer, src),
		 "receive of seq %u: %s ctx %#llx len %llu from %08x:%u", seq,
		 sl_strerror(cqe.status), (unsigned long long)cqe.user_ctx,
		 (unsigned long long)cqe.len, cqe.peer.node, cqe.peer.port);
	H_ASSERT(msg_check(buf, I_LEN, src_id, seq, I_TAG), "receive of seq %u: payload differs",
		 seq);
}

/*
 * Fill @full from @sq up to the bound, then: the next send is refused with
 * its buffer untouched; one receive makes room for exactly one retry.
 * Leaves seqs 1..I_FIT queued at @full; returns the next free seq.
 */
static uint32_t i_fill_and_refill(struct sl_queue *sq, struct sl_queue *full, uint8_t *sb,
				  uint8_t *rb, uint32_t src_id)
{
	sl_addr_t dst = sl_queue_addr(full), src = sl_queue_addr(sq);
	uint32_t seq;
	int st;

	for (seq = 0; seq < I_FIT; seq++) {
		st = i_send_seq(sq, dst, sb, src_id, seq);
		H_ASSERT(st == SL_OK, "send %u of the %u that fit: %s", seq, I_FIT,
			 sl_strerror(st));
	}
	st = i_send_seq(sq, dst, sb, src_id, I_FIT);
	H_ASSERT(st == SL_NAK_RECEIVER_FULL, "send %u, over the bound: %s", I_FIT,
		 sl_strerror(st));
	H_ASSERT(msg_check(sb, I_LEN, src_id, I_FIT, I_TAG), "refused send's buffer changed");

	i_recv_seq(full, src, rb, src_id, 0);
	/* The same buffer, unchanged, is the retry. */
	st = i_send(sq, dst, sb, I_LEN, I_FIT);
	H_ASSERT(st == SL_OK, "retry after one receive: %s", sl_strerror(st));
	st = i_send_seq(sq, dst, sb, src_id, I_FIT + 1);
	H_ASSERT(st == SL_NAK_RECEIVER_FULL, "second send after one receive: %s",
		 sl_strerror(st));
	expect_no_cqe(full, 20);
	return I_FIT + 1;
}

START_TEST(unexpected_bound)
{
	static const char *const names[] = { "A", "B" };
	char conf[128];
	struct h_daemon nodes[2], fl;
	struct sl_ctx *ca, *cb, *cf;
	struct sl_queue *sa, *sb_q, *full, *other, *rq, *fs, *fr;
	struct sl_cqe cqe[2 * I_SIDE_MSGS], side[I_SIDE_MSGS];
	uint8_t *abuf, *bbuf, *rbuf, *obuf, *sidebuf, *rsidebuf, *fbuf;
	uint32_t seq, i;
	int st;

	snprintf(conf, sizeof(conf), "[limits]\nunexpected_max_bytes = %llu\n",
		 (unsigned long long)I_BOUND);
	h_cluster_start_conf(nodes, names, 2, conf);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 0, 64, &sa), 0);
	H_EQ(sl_queue_open(cb, 0, 64, &sb_q), 0);
	H_EQ(sl_queue_open(cb, I_FULL_PORT, 64, &full), 0);
	H_EQ(sl_queue_open(cb, I_OTHER_PORT, 64, &other), 0);
	H_EQ(sl_queue_open(cb, I_RECV_PORT, 64, &rq), 0);
	abuf = sl_alloc(sa, I_LEN);
	sidebuf = sl_alloc(sa, I_SIDE_MSGS * I_SIDE_LEN);
	bbuf = sl_alloc(sb_q, I_LEN);
	rbuf = sl_alloc(full, I_LEN);
	obuf = sl_alloc(other, I_LEN);
	rsidebuf = sl_alloc(rq, I_SIDE_MSGS * I_SIDE_LEN);
	H_ASSERT(abuf && sidebuf && bbuf && rbuf && obuf && rsidebuf, "sl_alloc");

	/* Intra-node: the engine's status is the sender's completion. */
	seq = i_fill_and_refill(sb_q, full, bbuf, rbuf, 1);
	/* The bound is per endpoint: another port on the node still takes one. */
	st = i_send_seq(sb_q, sl_queue_addr(other), bbuf, 1, 100);
	H_ASSERT(st == SL_OK, "send to another non-receiving port: %s", sl_strerror(st));
	/* Taking the rest releases their charge: in order, the refused one absent. */
	for (i = 1; i <= I_FIT; i++)
		i_recv_seq(full, sl_queue_addr(sb_q), rbuf, 1, i);
	expect_no_cqe(full, 20);
	for (i = 0; i < I_FIT; i++) {
		st = i_send_seq(sb_q, sl_queue_addr(full), bbuf, 1, seq + i);
		H_ASSERT(st == SL_OK, "send %u after draining: %s", i, sl_strerror(st));
	}
	st = i_send_seq(sb_q, sl_queue_addr(full), bbuf, 1, seq + I_FIT);
	H_ASSERT(st == SL_NAK_RECEIVER_FULL, "send over the bound after draining: %s",
		 sl_strerror(st));
	i_recv_seq(other, sl_queue_addr(sb_q), obuf, 1, 100);
	/* Empty the endpoint again for the remote part. */
	for (i = 0; i < I_FIT; i++)
		i_recv_seq(full, sl_queue_addr(sb_q), rbuf, 1, seq + i);
	expect_no_cqe(sb_q, 10);

	/* Across the link: the NAK comes back to node A. */
	seq = i_fill_and_refill(sa, full, abuf, rbuf, 2);
	/*
	 * The link stays up and refusals disturb nothing around them: NAKed
	 * sends to the full port interleaved with sends that are received.
	 */
	for (i = 0; i < I_SIDE_MSGS; i++)
		H_EQ(sl_recv(rq, sl_queue_addr(sa), I_TAG, ~0ull, rsidebuf + i * I_SIDE_LEN,
			     I_SIDE_LEN, 0xa000 + i), 0);
	msg_fill(abuf, I_LEN, 2, seq, I_TAG);
	for (i = 0; i < I_SIDE_MSGS; i++) {
		msg_fill(sidebuf + i * I_SIDE_LEN, I_SIDE_LEN, 3, i, I_TAG);
		H_EQ(sl_send(sa, sl_queue_addr(full), I_TAG, abuf, I_LEN, 0xb000 + i), 0);
		H_EQ(sl_send(sa, sl_queue_addr(rq), I_TAG, sidebuf + i * I_SIDE_LEN, I_SIDE_LEN,
			     0xc000 + i), 0);
	}
	wait_cqes(sa, cqe, 2 * I_SIDE_MSGS, 5000);
	{
		bool seen_nak[I_SIDE_MSGS] = { false }, seen_ok[I_SIDE_MSGS] = { false };

		for (i = 0; i < 2 * I_SIDE_MSGS; i++) {
			uint64_t c = cqe[i].user_ctx;
			bool nak = c >= 0xb000 && c < 0xb000 + I_SIDE_MSGS;
			bool ok = c >= 0xc000 && c < 0xc000 + I_SIDE_MSGS;
			bool *seen;

			H_ASSERT(nak || ok, "completion with unknown ctx %#llx",
				 (unsigned long long)c);
			seen = nak ? &seen_nak[c - 0xb000] : &seen_ok[c - 0xc000];
			H_ASSERT(!*seen, "ctx %#llx completed twice", (unsigned long long)c);
			*seen = true;
			H_ASSERT(cqe[i].status == (nak ? SL_NAK_RECEIVER_FULL : SL_OK),
				 "ctx %#llx: %s", (unsigned long long)c, sl_strerror(cqe[i].status));
			H_EQ(cqe[i].len, nak ? I_LEN : I_SIDE_LEN);
		}
	}
	H_ASSERT(msg_check(abuf, I_LEN, 2, seq, I_TAG), "refused sends' buffer changed");
	wait_cqes(rq, side, I_SIDE_MSGS, 5000);
	for (i = 0; i < I_SIDE_MSGS; i++) {
		H_ASSERT(side[i].status == SL_OK && side[i].user_ctx == 0xa000 + i &&
			 side[i].len == I_SIDE_LEN && addr_eq(side[i].peer, sl_queue_addr(sa)),
			 "side receive %u: %s ctx %#llx", i, sl_strerror(side[i].status),
			 (unsigned long long)side[i].user_ctx);
		H_ASSERT(msg_check(rsidebuf + i * I_SIDE_LEN, I_SIDE_LEN, 3, i, I_TAG),
			 "side receive %u payload", i);
	}
	/* Still exactly full: the queued messages are seqs 1..I_FIT, in order. */
	for (i = 1; i <= I_FIT; i++)
		i_recv_seq(full, sl_queue_addr(sa), rbuf, 2, i);
	expect_no_cqe(full, 20);
	expect_no_cqe(rq, 10);
	expect_no_cqe(sa, 10);
	ping(sa, rq, 5, 1);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);

	/*
	 * The flood that took the daemon to 1.3 GB: 20,000 sends of 64 KiB,
	 * as many in flight as the queue allows, at a port that never
	 * receives.  Local sends are taken in SQ order, so exactly the first
	 * I_FLOOD_FIT fit.
	 */
	snprintf(conf, sizeof(conf), "[limits]\nunexpected_max_bytes = %llu\n",
		 (unsigned long long)I_FLOOD_BOUND);
	h_daemon_start_conf(&fl, "F", 0, NULL, 0, conf);
	H_EQ(sl_open(fl.sock, &cf), 0);
	H_EQ(sl_queue_open(cf, 0, I_FLOOD_DEPTH, &fs), 0);
	H_EQ(sl_queue_open(cf, I_FULL_PORT, 16, &fr), 0);
	fbuf = sl_alloc(fs, I_LEN);
	H_ASSERT(fbuf, "sl_alloc");
	msg_fill(fbuf, I_LEN, 4, 0, I_TAG);
	{
		uint8_t *done = calloc(I_FLOOD_MSGS, 1);
		uint32_t posted = 0, completed = 0, ok = 0, nak = 0;
		long rss, max_rss = 0, hwm;
		int64_t stall = h_now_ms() + 10000;

		H_ASSERT(done, "calloc");
		while (completed < I_FLOOD_MSGS) {
			struct sl_cqe fc[I_FLOOD_DEPTH];
			int n, rc;

			while (posted < I_FLOOD_MSGS) {
				rc = sl_send(fs, sl_queue_addr(fr), I_TAG, fbuf, I_LEN, posted);
				if (rc == -EAGAIN)
					break;
				H_ASSERT(rc == 0, "sl_send %u: %s", posted, strerror(-rc));
				posted++;
			}
			n = sl_poll(fs, fc, I_FLOOD_DEPTH);
			H_ASSERT(n >= 0, "sl_poll: %s", strerror(-n));
			if (n == 0) {
				H_ASSERT(h_now_ms() < stall, "flood stalled at %u of %u completions",
					 completed, I_FLOOD_MSGS);
				rc = sl_wait(fs, 100);
				H_ASSERT(rc >= 0 || rc == -EINTR, "sl_wait: %s", strerror(-rc));
				continue;
			}
			stall = h_now_ms() + 10000;
			for (i = 0; i < (uint32_t)n; i++) {
				uint64_t c = fc[i].user_ctx;

				H_ASSERT(c < posted && !done[c], "flood completion ctx %llu %s",
					 (unsigned long long)c, c < posted ? "twice" : "unknown");
				done[c] = 1;
				H_ASSERT(fc[i].status == SL_OK || fc[i].status == SL_NAK_RECEIVER_FULL,
					 "flood send %llu: %s", (unsigned long long)c,
					 sl_strerror(fc[i].status));
				H_ASSERT((fc[i].status == SL_OK) == (c < I_FLOOD_FIT),
					 "flood send %llu: %s, but %u fit", (unsigned long long)c,
					 sl_strerror(fc[i].status), I_FLOOD_FIT);
				if (fc[i].status == SL_OK)
					ok++;
				else
					nak++;
			}
			completed += (uint32_t)n;
			if (completed % 1024 < (uint32_t)n) {
				rss = h_proc_rss_kb(fl.pid);
				H_ASSERT(rss > 0, "VmRSS: %ld", rss);
				if (rss > max_rss)
					max_rss = rss;
			}
		}
		free(done);
		H_EQ(ok, I_FLOOD_FIT);
		H_EQ(nak, I_FLOOD_MSGS - I_FLOOD_FIT);
		rss = h_proc_rss_kb(fl.pid);
		hwm = h_proc_hwm_kb(fl.pid);
		H_ASSERT(rss > 0 && hwm > 0, "VmRSS %ld VmHWM %ld", rss, hwm);
		H_ASSERT(max_rss < I_RSS_MAX_KB && rss < I_RSS_MAX_KB && hwm < I_RSS_MAX_KB,
			 "daemon RSS over %ld KiB: sampled peak %ld, now %ld, VmHWM %ld",
			 I_RSS_MAX_KB, max_rss, rss, hwm);
		printf("unexpected_bound: %u x %u bytes fit in %llu (charge %llu each); flood: "
		       "%u OK, %u receiver full, daemon VmHWM %ld KiB\n", I_FIT, I_LEN,
		       (unsigned long long)I_BOUND, (unsigned long long)I_CHARGE, ok, nak, hwm);
	}
	expect_no_cqe(fs, 20);
	fbuf = sl_alloc(fr, I_LEN);
	H_ASSERT(fbuf, "sl_alloc");
	i_recv_seq(fr, sl_queue_addr(fs), fbuf, 4, 0);
	sl_close(cf);
	h_daemon_stop(&fl);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *unexpected_bound_suite(void)
{
	Suite *s = suite_create("unexpected_bound");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, unexpected_bound);
	return s;
}

int main(void)
{
	return h_run_suite(unexpected_bound_suite());
}
