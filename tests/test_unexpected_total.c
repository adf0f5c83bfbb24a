/*
 * test_unexpected_total.c - the memory a daemon holds for unexpected
 * messages, over all its endpoints: the daemon-wide bound ([limits]
 * unexpected_total_bytes) and what a burst leaves behind once it has been
 * received.
 *
 *   total_bound      three endpoints on one daemon that post nothing, each
 *                    under its own unexpected_max_bytes, together reach
 *                    unexpected_total_bytes: exactly as many messages as
 *                    the two bounds let through are taken, local and over a
 *                    link, one at a time and 60 in flight; each refused send
 *                    completes SL_NAK_RECEIVER_FULL once, its buffer
 *                    untouched; a receive posted still takes its message;
 *                    once receives have taken some, sends succeed again.
 *   total_reload     a reload that lowers the bound under what is held
 *                    drops nothing and refuses new messages until the
 *                    total is under the new bound.
 *   burst_returns_memory  senders on several daemons push into one
 *                         receiver that posts nothing until every sender
 *                         finished or was refused; then it takes them
 *                         all.  Every message arrives once, and the
 *                         receiving daemon's RSS comes back to within
 *                         B_RSS_SLACK_KB of what it was before the burst.
 *
 * The burst's size comes from the environment, so that the same test
 * measures larger bursts than the suite runs (defaults in brackets):
 * SLUICE_BURST_NODES daemons [2], SLUICE_BURST_SENDERS queues sending on
 * each [4], SLUICE_BURST_MSGS messages per sender [16000] of
 * SLUICE_BURST_LEN bytes [200].  The defaults are a burst whose memory
 * the daemon once kept: 128,000 messages, 33.8 MB charged, RSS 5.8 MiB
 * before and 39 MiB after, for good.
 *
 * Real daemons on TCP loopback (tests/harness.c).  The bound's tests are
 * their own client, with the round trips of tests/client_kit.h; the
 * burst's clients run in forked processes (testutil.h), one per daemon
 * for its senders and one for the receiver, reporting through pages
 * shared with the test process.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sluice.h"
#include "testutil.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define CHARGE_OVERHEAD 64u	/* per unexpected message, sluiced.conf(5) */

/* ------------------------------------------------------------------ */
/* total_bound, total_reload                                            */
/* ------------------------------------------------------------------ */

/* Each unexpected eager message is charged its length + 64 (sluiced.conf(5)),
 * so the numbers that fit are exact. */
#define T_LEN 65536u
#define T_CHARGE ((uint64_t)T_LEN + CHARGE_OVERHEAD)
#define T_ENDPOINT_MAX (1ull * MIB)
#define T_TOTAL_MAX (2ull * MIB)
#define T_ENDPOINT_FIT ((unsigned)(T_ENDPOINT_MAX / T_CHARGE))	/* 15 */
#define T_TOTAL_FIT ((unsigned)(T_TOTAL_MAX / T_CHARGE))	/* 31 */
#define T_PORT0 7101u		/* the endpoints that post nothing: T_PORT0 + i */
#define T_ENDPOINTS 3u
#define T_RECV_PORT 7110u	/* posts its receive first */
#define T_TAG 0x70a1u
#define T_SIDE_LEN 1000u
#define T_FLOOD 60u		/* sends in flight at once, round robin */

_Static_assert(T_ENDPOINT_FIT == 15 && T_TOTAL_FIT == 31, "the plan below counts on these");

/* One send of message (@src_id, @seq), @len bytes written into @q's
 * buffer @buf first, waited for; its status returned (a refused send's
 * buffer checked untouched). */
static int t_send(struct sl_queue *q, sl_addr_t dst, uint8_t *buf, size_t len, uint32_t src_id,
		  uint32_t seq)
{
	struct sl_cqe cqe;

	msg_fill(buf, len, src_id, seq, T_TAG);
	cqe = send_wait(q, dst, T_TAG, buf, len, ((uint64_t)src_id << 32) | seq, 5000);
	H_ASSERT(addr_eq(cqe.peer, dst), "send peer %08x:%u, want %08x:%u", cqe.peer.node,
		 cqe.peer.port, dst.node, dst.port);
	if (cqe.status != SL_OK)
		H_ASSERT(msg_check(buf, len, src_id, seq, T_TAG), "refused send %u/%u: buffer "
			 "changed", src_id, seq);
	return cqe.status;
}

#define T_SEND_OK(q, dst, buf, len, id, seq) \
	do { \
		int st_ = t_send((q), (dst), (buf), (len), (id), (seq)); \
		H_ASSERT(st_ == SL_OK, "send %u/%u of %u B: %s", (id), (seq), (unsigned)(len), \
			 sl_strerror(st_)); \
	} while (0)
#define T_SEND_FULL(q, dst, buf, len, id, seq) \
	do { \
		int st_ = t_send((q), (dst), (buf), (len), (id), (seq)); \
		H_ASSERT(st_ == SL_NAK_RECEIVER_FULL, "send %u/%u of %u B: %s, want receiver " \
			 "full", (id), (seq), (unsigned)(len), sl_strerror(st_)); \
	} while (0)

/* Post one receive on @q for the next message from @src and require it
 * to be message (@src_id, @seq) of @len bytes. */
static void t_recv(struct sl_queue *q, sl_addr_t src, uint8_t *buf, size_t len,
		   uint32_t src_id, uint32_t seq)
{
	struct sl_cqe cqe;
	int rc;

	memset(buf, 0, T_LEN);
	rc = sl_recv(q, src, T_TAG, ~0ull, buf, T_LEN, 0x9000 + seq);
	H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	wait_cqes(q, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 0x9000 + seq && cqe.len == len &&
		 addr_eq(cqe.peer, src), "receive of %u/%u: %s ctx %#llx len %llu (want %zu) "
		 "from %08x:%u", src_id, seq, sl_strerror(cqe.status),
		 (unsigned long long)cqe.user_ctx, (unsigned long long)cqe.len, len,
		 cqe.peer.node, cqe.peer.port);
	H_ASSERT(msg_check(buf, len, src_id, seq, T_TAG), "receive of %u/%u: payload differs",
		 src_id, seq);
}

/* What daemon @d holds and has refused, exactly. */
static void t_expect_held(const struct h_daemon *d, uint64_t n, uint64_t bytes,
			  uint64_t limit, uint64_t naks, uint64_t naks_daemon)
{
	struct h_stats st;

	h_daemon_stats(d, &st);
	H_EQ(h_stats_u64(&st, "daemon.unexpected"), n);
	H_EQ(h_stats_u64(&st, "daemon.unexpected_bytes"), bytes);
	H_EQ(h_stats_u64(&st, "daemon.unexpected_limit_bytes"), limit);
	H_EQ(h_stats_u64(&st, "daemon.naks_receiver_full"), naks);
	H_EQ(h_stats_u64(&st, "daemon.naks_daemon_full"), naks_daemon);
}

/* Wait (up to 5 s) until daemon @d holds @n posted receives. */
static void t_wait_posted(const struct h_daemon *d, uint64_t n)
{
	int64_t deadline = h_now_ms() + 5000;
	uint64_t got;

	while ((got = h_daemon_stat(d, "daemon.posted_recvs")) != n) {
		H_ASSERT(h_now_ms() < deadline, "daemon %s: %llu receives posted after 5 s, want "
			 "%llu", d->name, (unsigned long long)got, (unsigned long long)n);
		h_sleep_ms(5);
	}
}

START_TEST(total_bound)
{
	static const char *const names[] = { "A", "B" };
	char conf[160];
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *e[T_ENDPOINTS], *rq, *sa, *sb;
	sl_addr_t ea[T_ENDPOINTS], rqa, saa, sba;
	uint8_t *abuf, *bbuf, *rbuf, *ebuf[T_ENDPOINTS], *fbuf;
	struct sl_cqe cqe[T_FLOOD], side[2];
	uint64_t held_bytes;
	uint32_t i, k, next_e[T_ENDPOINTS] = { 0 };
	unsigned naks = 0, naks_daemon = 0, held = 0;

	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_TOTAL_MAX);
	h_cluster_start_conf(nodes, names, 2, conf);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	for (i = 0; i < T_ENDPOINTS; i++) {
		H_EQ(sl_queue_open(ca, T_PORT0 + i, 64, &e[i]), 0);
		ea[i] = sl_queue_addr(e[i]);
		ebuf[i] = sl_alloc(e[i], T_LEN);
		H_ASSERT(ebuf[i], "sl_alloc");
	}
	H_EQ(sl_queue_open(ca, T_RECV_PORT, 64, &rq), 0);
	H_EQ(sl_queue_open(ca, 0, 64, &sa), 0);
	H_EQ(sl_queue_open(cb, 0, 64, &sb), 0);
	rqa = sl_queue_addr(rq);
	saa = sl_queue_addr(sa);
	sba = sl_queue_addr(sb);
	abuf = sl_alloc(sa, T_LEN);
	bbuf = sl_alloc(sb, T_LEN);
	fbuf = sl_alloc(sb, (size_t)T_FLOOD * T_LEN);
	rbuf = sl_alloc(rq, T_LEN);
	H_ASSERT(abuf && bbuf && fbuf && rbuf, "sl_alloc");
	t_expect_held(&nodes[0], 0, 0, T_TOTAL_MAX, 0, 0);

	/* Two endpoints filled to their own bound: the 16th is refused by
	 * the endpoint's, not the daemon's. */
	for (k = 0; k < 2; k++) {
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			T_SEND_OK(sa, ea[k], abuf, T_LEN, 1, next_e[k]++);
		T_SEND_FULL(sa, ea[k], abuf, T_LEN, 1, 1000 + k);
		naks++;
	}
	held = 2 * T_ENDPOINT_FIT;
	/* The third takes one more (31 in all), then the daemon is full
	 * although this endpoint holds one message: locally and over the
	 * link. */
	T_SEND_OK(sa, ea[2], abuf, T_LEN, 1, next_e[2]++);
	held++;
	T_SEND_FULL(sa, ea[2], abuf, T_LEN, 1, 1002);
	T_SEND_FULL(sb, ea[2], bbuf, T_LEN, 2, 1003);
	naks += 2;
	naks_daemon += 2;
	held_bytes = (uint64_t)held * T_CHARGE;
	/* The room left, to the byte: 63,552 = 63,488 bytes + 64. */
	T_SEND_FULL(sa, ea[2], abuf, T_TOTAL_MAX - held_bytes - CHARGE_OVERHEAD + 1, 1, 1004);
	naks++;
	naks_daemon++;
	T_SEND_OK(sa, ea[2], abuf, T_TOTAL_MAX - held_bytes - CHARGE_OVERHEAD, 1, next_e[2]++);
	held++;
	held_bytes = T_TOTAL_MAX;
	/* Even an empty message is charged 64: refused everywhere. */
	T_SEND_FULL(sb, ea[0], bbuf, 0, 2, 1005);
	naks++;
	naks_daemon++;
	t_expect_held(&nodes[0], held, held_bytes, T_TOTAL_MAX, naks, naks_daemon);

	/* A message that meets a posted receive is never refused (posted
	 * means taken by the daemon, not only written to rq's ring). */
	H_EQ(sl_recv(rq, saa, T_TAG, ~0ull, rbuf, T_LEN, 0xa000), 0);
	H_EQ(sl_recv(rq, sba, T_TAG, ~0ull, rbuf + T_SIDE_LEN, T_LEN - T_SIDE_LEN, 0xa001), 0);
	t_wait_posted(&nodes[0], 2);
	T_SEND_OK(sa, rqa, abuf, T_SIDE_LEN, 3, 0);
	T_SEND_OK(sb, rqa, bbuf, T_SIDE_LEN, 4, 0);
	wait_cqes(rq, side, 2, 5000);
	for (i = 0; i < 2; i++) {
		H_ASSERT(side[i].status == SL_OK && side[i].user_ctx == 0xa000 + i &&
			 side[i].len == T_SIDE_LEN, "posted receive %u: %s ctx %#llx", i,
			 sl_strerror(side[i].status), (unsigned long long)side[i].user_ctx);
		H_ASSERT(msg_check(rbuf + i * T_SIDE_LEN, T_SIDE_LEN, 3 + i, 0, T_TAG),
			 "posted receive %u: payload differs", i);
	}
	t_expect_held(&nodes[0], held, held_bytes, T_TOTAL_MAX, naks, naks_daemon);

	/* One receive makes room for exactly one more 64 KiB message, at any
	 * endpoint: to the byte again. */
	t_recv(e[0], saa, ebuf[0], T_LEN, 1, 0);
	T_SEND_OK(sb, ea[2], bbuf, T_LEN, 2, 0);
	T_SEND_FULL(sa, ea[1], abuf, 0, 1, 1006);
	naks++;
	naks_daemon++;
	t_expect_held(&nodes[0], held, T_TOTAL_MAX, T_TOTAL_MAX, naks, naks_daemon);

	/* Everything held comes out, in order, refused sends absent. */
	for (i = 1; i < T_ENDPOINT_FIT; i++)
		t_recv(e[0], saa, ebuf[0], T_LEN, 1, i);
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[1], saa, ebuf[1], T_LEN, 1, i);
	t_recv(e[2], saa, ebuf[2], T_LEN, 1, 0);
	t_recv(e[2], saa, ebuf[2], T_TOTAL_MAX - (uint64_t)T_TOTAL_FIT * T_CHARGE -
	       CHARGE_OVERHEAD, 1, 1);
	t_recv(e[2], sba, ebuf[2], T_LEN, 2, 0);
	for (i = 0; i < T_ENDPOINTS; i++)
		expect_no_cqe(e[i], 20);
	t_expect_held(&nodes[0], 0, 0, T_TOTAL_MAX, naks, naks_daemon);

	/*
	 * 60 sends in flight at once over the link, round robin over the
	 * three endpoints.  The link delivers them in order, so the bounds
	 * decide each exactly: 10 rounds fit (30 messages), the 31st fits
	 * the total, and the daemon refuses every later one, each endpoint
	 * being far under its own bound.
	 */
	for (k = 0; k < T_FLOOD; k++) {
		msg_fill(fbuf + (size_t)k * T_LEN, T_LEN, 5, k, T_TAG);
		H_EQ(sl_send(sb, ea[k % T_ENDPOINTS], T_TAG, fbuf + (size_t)k * T_LEN, T_LEN, k),
		     0);
	}
	wait_cqes(sb, cqe, T_FLOOD, 10000);
	{
		bool seen[T_FLOOD] = { false };

		for (i = 0; i < T_FLOOD; i++) {
			uint64_t c = cqe[i].user_ctx;

			H_ASSERT(c < T_FLOOD && !seen[c], "flood completion ctx %llu %s",
				 (unsigned long long)c, c < T_FLOOD ? "twice" : "unknown");
			seen[c] = true;
			H_ASSERT(cqe[i].status == (c < T_TOTAL_FIT ? SL_OK : SL_NAK_RECEIVER_FULL),
				 "flood send %llu: %s", (unsigned long long)c,
				 sl_strerror(cqe[i].status));
			if (c >= T_TOTAL_FIT)
				H_ASSERT(msg_check(fbuf + c * T_LEN, T_LEN, 5, (uint32_t)c, T_TAG),
					 "refused flood send %llu: buffer changed", (unsigned long long)c);
		}
	}
	expect_no_cqe(sb, 20);
	naks += T_FLOOD - T_TOTAL_FIT;
	naks_daemon += T_FLOOD - T_TOTAL_FIT;
	t_expect_held(&nodes[0], T_TOTAL_FIT, (uint64_t)T_TOTAL_FIT * T_CHARGE, T_TOTAL_MAX, naks,
		      naks_daemon);
	for (k = 0; k < T_TOTAL_FIT; k++)
		t_recv(e[k % T_ENDPOINTS], sba, ebuf[k % T_ENDPOINTS], T_LEN, 5, k);
	for (i = 0; i < T_ENDPOINTS; i++)
		expect_no_cqe(e[i], 20);

	/* Empty again: an endpoint takes its own bound's worth once more. */
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		T_SEND_OK(sb, ea[0], bbuf, T_LEN, 2, 100 + i);
	T_SEND_FULL(sb, ea[0], bbuf, T_LEN, 2, 100 + T_ENDPOINT_FIT);
	naks++;
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[0], sba, ebuf[0], T_LEN, 2, 100 + i);
	t_expect_held(&nodes[0], 0, 0, T_TOTAL_MAX, naks, naks_daemon);
	expect_no_cqe(sa, 10);
	expect_no_cqe(sb, 10);
	expect_no_cqe(rq, 10);
	printf("total_bound: %u x %u B fit per endpoint (%llu), %u over all (%llu); %u refused, "
	       "%u of them by the daemon-wide bound\n", T_ENDPOINT_FIT, T_LEN,
	       (unsigned long long)T_ENDPOINT_MAX, T_TOTAL_FIT, (unsigned long long)T_TOTAL_MAX,
	       naks, naks_daemon);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* Rewrite @d's configuration file with @conf and reload it; returns once
 * the daemon says it applied @n_changes. */
static void t_reload(const struct h_daemon *d, const char *conf, unsigned n_changes,
		     unsigned n_reloads)
{
	char path[H_PATH_MAX + 16], want[64];
	FILE *f;
	int64_t deadline;

	snprintf(path, sizeof(path), "%s/sluiced.conf", d->dir);
	f = fopen(path, "w");
	H_ASSERT(f && fputs(conf, f) >= 0 && fclose(f) == 0, "writing %s: %s", path,
		 strerror(errno));
	H_EQ(kill(d->pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "%u changes applied, 0 need a restart", n_changes);
	deadline = h_now_ms() + 5000;
	while (tu_log_lines(d, want) < n_reloads) {
		H_ASSERT(h_now_ms() < deadline, "no '%s' in %s within 5 s", want, d->log);
		h_sleep_ms(10);
	}
}

START_TEST(total_reload)
{
	char conf[160];
	struct h_daemon a;
	struct sl_ctx *ca;
	struct sl_queue *e[2], *sa;
	sl_addr_t ea[2], saa;
	uint8_t *abuf, *rbuf[2];
	uint32_t i, k;
	unsigned naks = 0, naks_daemon = 0;

	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_TOTAL_MAX);
	h_daemon_start_conf(&a, "A", 0, NULL, 0, conf);
	H_EQ(sl_open(a.sock, &ca), 0);
	for (i = 0; i < 2; i++) {
		H_EQ(sl_queue_open(ca, T_PORT0 + i, 64, &e[i]), 0);
		ea[i] = sl_queue_addr(e[i]);
		rbuf[i] = sl_alloc(e[i], T_LEN);
		H_ASSERT(rbuf[i], "sl_alloc");
	}
	H_EQ(sl_queue_open(ca, 0, 64, &sa), 0);
	saa = sl_queue_addr(sa);
	abuf = sl_alloc(sa, T_LEN);
	H_ASSERT(abuf, "sl_alloc");
	for (k = 0; k < 2; k++)
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			T_SEND_OK(sa, ea[k], abuf, T_LEN, k, i);
	t_expect_held(&a, 2 * T_ENDPOINT_FIT, 2ull * T_ENDPOINT_FIT * T_CHARGE, T_TOTAL_MAX, 0,
		      0);

	/* Lowered under what is held (1,968,000 bytes > 1 MiB): all of it
	 * stays, and nothing new is taken. */
	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_ENDPOINT_MAX);
	t_reload(&a, conf, 1, 1);
	t_expect_held(&a, 2 * T_ENDPOINT_FIT, 2ull * T_ENDPOINT_FIT * T_CHARGE, T_ENDPOINT_MAX,
		      0, 0);
	T_SEND_FULL(sa, ea[1], abuf, 0, 9, 0);
	naks++;
	naks_daemon++;
	/* Taking one endpoint's messages brings the total under the new
	 * bound (984,000 bytes): 64 KiB more would pass it, 1000 bytes not. */
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[0], saa, rbuf[0], T_LEN, 0, i);
	T_SEND_FULL(sa, ea[0], abuf, T_LEN, 9, 1);
	naks++;
	naks_daemon++;
	T_SEND_OK(sa, ea[0], abuf, T_SIDE_LEN, 9, 2);
	t_expect_held(&a, T_ENDPOINT_FIT + 1, T_ENDPOINT_FIT * T_CHARGE + T_SIDE_LEN +
		      CHARGE_OVERHEAD, T_ENDPOINT_MAX, naks, naks_daemon);
	/* Every message held across the reload is received whole. */
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[1], saa, rbuf[1], T_LEN, 1, i);
	t_recv(e[0], saa, rbuf[0], T_SIDE_LEN, 9, 2);
	t_expect_held(&a, 0, 0, T_ENDPOINT_MAX, naks, naks_daemon);

	/* Raised again: two endpoints' worth fit once more. */
	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_TOTAL_MAX);
	t_reload(&a, conf, 1, 2);
	for (k = 0; k < 2; k++)
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			T_SEND_OK(sa, ea[k], abuf, T_LEN, k, 100 + i);
	for (k = 0; k < 2; k++)
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			t_recv(e[k], saa, rbuf[k], T_LEN, k, 100 + i);
	t_expect_held(&a, 0, 0, T_TOTAL_MAX, naks, naks_daemon);
	expect_no_cqe(sa, 10);
	sl_close(ca);
	h_daemon_stop(&a);
}
END_TEST

/* ------------------------------------------------------------------ */
/* burst_returns_memory                                                 */
/* ------------------------------------------------------------------ */

#define B_NODES_MAX 8
#define B_SENDERS_MAX 16		/* per daemon */
#define B_RECV_PORT 7300u
#define B_SEND_PORT0 7400u		/* sender j of a daemon: B_SEND_PORT0 + j */
#define B_TAG 0xb0b5u
#define B_SQ_DEPTH 64u
#define B_INFLIGHT 32u			/* sends in flight per sender queue */
#define B_WINDOW 256u			/* receives posted at once */
#define B_BACKOFF_MIN_US 1000
#define B_BACKOFF_MAX_US 32000
/* The goal: within 10 MiB of the RSS before, 5 s after the last message
 * was taken.  The test waits longer than 5 s (B_RSS_WAIT_MS) before it
 * fails, so that a busy machine that runs the daemon's timer late does
 * not fail it; the figure at 5 s is printed either way. */
#define B_RSS_SLACK_KB (10l * 1024)
#define B_RSS_GOAL_MS 5000
#define B_RSS_WAIT_MS 30000
/* The default bound of one endpoint (sluiced.conf(5)): what the
 * receiver's daemon may hold of the burst at most. */
#define B_ENDPOINT_MAX (64ull * MIB)

struct b_plan {
	unsigned nodes, senders;	/* daemons, sender queues on each */
	uint32_t msgs;			/* per sender queue */
	uint32_t len;			/* bytes per message */
};

/* What the clients tell the test process. */
struct b_shared {
	uint32_t flagged;		/* sender processes that were refused once or
					 * are done (atomic) */
	uint32_t ok[B_NODES_MAX * B_SENDERS_MAX];
	uint32_t naks_full[B_NODES_MAX * B_SENDERS_MAX];
	uint32_t naks_busy[B_NODES_MAX * B_SENDERS_MAX];
	uint32_t received;		/* atomic: the test process watches it */
	int64_t consumed_at;		/* h_now_ms() of the last receive; 0 before */
	uint8_t got[];			/* [sender id * msgs + seq]: deliveries */
};

static const char *b_names[B_NODES_MAX + 1];
static char b_name_buf[B_NODES_MAX + 1][16];

static unsigned env_num(const char *name, unsigned def, unsigned lo, unsigned hi)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoul(v, &end, 10);
	H_ASSERT(!errno && !*end && x >= lo && x <= hi, "%s=%s: want %u..%u", name, v, lo, hi);
	return (unsigned)x;
}

static sl_addr_t b_sender_addr(const struct h_daemon *nodes, const struct b_plan *p,
			       uint32_t id)
{
	return (sl_addr_t){ nodes[id / p->senders].node, B_SEND_PORT0 + id % p->senders };
}

/* One sender queue of a sender process. */
enum b_slot_state { B_FREE, B_POSTED, B_WAITING };
struct b_sq {
	struct cl c;
	uint32_t id;			/* global sender id: node x senders + j */
	uint8_t *bufs;			/* B_INFLIGHT buffers of len bytes */
	uint32_t next_seq, ok;
	uint32_t seq[B_INFLIGHT];
	uint8_t state[B_INFLIGHT];
	int64_t retry_at_us[B_INFLIGHT];
	uint32_t backoff_us[B_INFLIGHT];
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Post what is free or due on @s; returns how many were posted. */
static unsigned b_sq_post(struct b_sq *s, const struct b_plan *p, sl_addr_t dst)
{
	unsigned k, posted = 0;
	int64_t now = now_us();

	for (k = 0; k < B_INFLIGHT; k++) {
		uint8_t *buf = s->bufs + (size_t)k * p->len;
		int rc;

		if (s->state[k] == B_FREE) {
			if (s->next_seq == p->msgs)
				continue;
			s->seq[k] = s->next_seq;
			msg_fill(buf, p->len, s->id, s->seq[k], B_TAG);
		} else if (s->state[k] != B_WAITING || s->retry_at_us[k] > now) {
			continue;
		}
		rc = sl_send(s->c.q, dst, B_TAG, buf, p->len, CTX_SEND | k);
		if (rc == -EAGAIN)
			break;
		CL_REQUIRE(rc == 0, CL_E_POST, "sender %u: sl_send seq %u: %s", s->id, s->seq[k],
			   strerror(-rc));
		if (s->state[k] == B_FREE)
			s->next_seq++;
		s->state[k] = B_POSTED;
		posted++;
	}
	return posted;
}

/* Take @s's completions; returns how many; *@refused is set on a NAK. */
static unsigned b_sq_reap(struct b_sq *s, struct b_shared *sh, bool *refused)
{
	struct sl_cqe e[64];
	int n = sl_poll(s->c.q, e, 64), i;

	CL_REQUIRE(n >= 0, CL_E_POLL, "sender %u: sl_poll: %s", s->id, strerror(-n));
	for (i = 0; i < n; i++) {
		uint32_t k = CTX_INDEX(e[i].user_ctx);

		CL_REQUIRE(CTX_KIND(e[i].user_ctx) == CTX_SEND && k < B_INFLIGHT &&
			   s->state[k] == B_POSTED, CL_E_CTX, "sender %u: completion ctx %#llx",
			   s->id, (unsigned long long)e[i].user_ctx);
		switch (e[i].status) {
		case SL_OK:
			s->state[k] = B_FREE;
			s->backoff_us[k] = B_BACKOFF_MIN_US;
			s->ok++;
			sh->ok[s->id]++;
			break;
		case SL_NAK_RECEIVER_FULL:
		case SL_NAK_BUSY:
			if (e[i].status == SL_NAK_RECEIVER_FULL)
				sh->naks_full[s->id]++;
			else
				sh->naks_busy[s->id]++;
			*refused = true;
			s->state[k] = B_WAITING;
			s->retry_at_us[k] = now_us() + s->backoff_us[k];
			if (s->backoff_us[k] < B_BACKOFF_MAX_US)
				s->backoff_us[k] *= 2;
			break;
		default:
			cl_die(CL_E_STATUS, "sender %u: seq %u: %s", s->id, s->seq[k],
			       sl_strerror(e[i].status));
		}
	}
	return (unsigned)n;
}

/* The senders of daemon @node: each sends its messages to the receiver,
 * B_INFLIGHT at a time, and posts a refused one again after a back-off. */
static void b_senders_run(const struct h_daemon *nodes, const struct b_plan *p, unsigned node,
			  struct barrier *b, struct hold *h, struct b_shared *sh)
{
	static struct b_sq sq[B_SENDERS_MAX];
	sl_addr_t dst = { nodes[0].node, B_RECV_PORT };
	bool refused = false, flagged = false;
	int64_t last;
	unsigned j, k, done = 0;

	cl_name = b_names[1 + node];
	for (j = 0; j < p->senders; j++) {
		cl_open(&sq[j].c, &nodes[node], B_SEND_PORT0 + j, B_SQ_DEPTH);
		sq[j].id = node * p->senders + j;
		sq[j].bufs = cl_alloc(&sq[j].c, (size_t)B_INFLIGHT * p->len);
		for (k = 0; k < B_INFLIGHT; k++)
			sq[j].backoff_us[k] = B_BACKOFF_MIN_US;
	}
	barrier_arrive(b);
	last = h_now_ms();
	while (done < p->senders) {
		unsigned moved = 0;

		done = 0;
		for (j = 0; j < p->senders; j++) {
			moved += b_sq_post(&sq[j], p, dst);
			if (b_sq_reap(&sq[j], sh, &refused))
				last = h_now_ms();
			done += sq[j].ok == p->msgs;
		}
		if ((refused || done == p->senders) && !flagged) {
			__atomic_add_fetch(&sh->flagged, 1, __ATOMIC_RELEASE);
			flagged = true;
		}
		if (!moved)
			h_sleep_ms(1);
		CL_REQUIRE(h_now_ms() - last < CL_STALL_MS, CL_E_TIMEOUT,
			   "no completion for %d ms: sender %u has %u of %u OK", CL_STALL_MS,
			   sq[0].id, sq[0].ok, p->msgs);
	}
	for (j = 0; j < p->senders; j++)
		cl_expect_quiet(&sq[j].c, 20);
	hold_here(h);
	for (j = 0; j < p->senders; j++)
		cl_close(&sq[j].c);
	_exit(CL_OK);
}

/* The receiver: binds its port, waits for @go, then takes every message
 * with wildcard receives, B_WINDOW posted at a time. */
static void b_receiver_run(const struct h_daemon *nodes, const struct b_plan *p,
			   struct barrier *b, struct chan *go, struct hold *h,
			   struct b_shared *sh)
{
	static struct cl c;
	const sl_addr_t any = { SL_NODE_ANY, SL_PORT_ANY };
	uint32_t total = p->nodes * p->senders * p->msgs, posted = 0, taken = 0;
	uint8_t *bufs;
	int64_t last;

	cl_name = b_names[0];
	cl_open(&c, &nodes[0], B_RECV_PORT, B_WINDOW);
	bufs = cl_alloc(&c, (size_t)B_WINDOW * p->len);
	barrier_arrive(b);
	cl_await(go->fd[0], 120000, "the go to consume");
	last = h_now_ms();
	while (taken < total) {
		struct sl_cqe e[64];
		int n, i;

		while (posted < total && posted - taken < B_WINDOW) {
			int rc = sl_recv(c.q, any, 0, 0, bufs + (size_t)(posted % B_WINDOW) * p->len,
					 p->len, CTX_RECV | posted);

			if (rc == -EAGAIN)
				break;
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv %u: %s", posted, strerror(-rc));
			posted++;
		}
		n = sl_poll(c.q, e, 64);
		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
		if (n == 0) {
			int rc = sl_wait(c.q, 10);

			CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
			CL_REQUIRE(h_now_ms() - last < CL_STALL_MS, CL_E_TIMEOUT,
				   "no message for %d ms: %u of %u taken", CL_STALL_MS, taken, total);
			continue;
		}
		last = h_now_ms();
		for (i = 0; i < n; i++) {
			uint32_t k = CTX_INDEX(e[i].user_ctx);
			const uint8_t *buf = bufs + (size_t)(k % B_WINDOW) * p->len;
			struct msg_hdr mh;
			uint32_t id;

			/* Receives complete in the order they were posted. */
			CL_REQUIRE(CTX_KIND(e[i].user_ctx) == CTX_RECV && k == taken, CL_E_CTX,
				   "receive ctx %#llx, want %u", (unsigned long long)e[i].user_ctx,
				   taken);
			CL_REQUIRE(e[i].status == SL_OK && e[i].len == p->len && e[i].tag == B_TAG,
				   CL_E_STATUS, "receive %u: %s, len %llu, tag %#llx", k,
				   sl_strerror(e[i].status), (unsigned long long)e[i].len,
				   (unsigned long long)e[i].tag);
			CL_REQUIRE(msg_decode(buf, p->len, &mh) && mh.src < p->nodes * p->senders &&
				   mh.seq < p->msgs, CL_E_DATA, "receive %u: no message header", k);
			id = mh.src;
			CL_REQUIRE(addr_eq(e[i].peer, b_sender_addr(nodes, p, id)), CL_E_META,
				   "receive %u: sender %u's message from %08x:%u", k, id,
				   e[i].peer.node, e[i].peer.port);
			CL_REQUIRE(msg_check(buf, p->len, id, mh.seq, B_TAG), CL_E_DATA,
				   "receive %u: sender %u seq %u: payload differs", k, id, mh.seq);
			CL_REQUIRE(!sh->got[(size_t)id * p->msgs + mh.seq]++, CL_E_DUP,
				   "sender %u seq %u delivered twice", id, mh.seq);
			taken++;
		}
		__atomic_store_n(&sh->received, taken, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&sh->consumed_at, h_now_ms(), __ATOMIC_RELEASE);
	cl_expect_quiet(&c, 20);
	hold_here(h);
	cl_close(&c);
	_exit(CL_OK);
}

/* Wait until *@what reaches @target (atomic), failing after @stall_ms
 * in which *@progress did not move. */
static void b_wait_for(const uint32_t *what, uint32_t target, const uint32_t *progress,
		       unsigned n_progress, int stall_ms, const pid_t *pids, unsigned n_pids,
		       const char *why)
{
	struct progress pr;

	progress_start(&pr, 0, 0);
	while (__atomic_load_n(what, __ATOMIC_ACQUIRE) < target) {
		uint64_t sum = 0;
		unsigned i;

		for (i = 0; i < n_progress; i++)
			sum += __atomic_load_n(&progress[i], __ATOMIC_RELAXED);
		if (progress_note(&pr, sum) > stall_ms)
			fail_clients(pids, b_names, n_pids, why);
		h_sleep_ms(10);
	}
}

START_TEST(burst_returns_memory)
{
	struct b_plan p;
	struct h_daemon nodes[B_NODES_MAX];
	struct b_shared *sh;
	struct barrier b;
	struct chan go;
	struct hold h;
	pid_t pids[B_NODES_MAX + 1];
	int status[B_NODES_MAX + 1];
	struct h_stats st;
	uint64_t held_n, held_bytes, naks_full = 0, naks_busy = 0, naks_daemon, expect_bytes;
	long rss0, rss_peak, rss_goal = -1, rss_back = -1, rss_closed, hwm;
	int64_t t_consumed, t_back = -1;
	uint32_t n_senders, total, i, s;
	size_t shared_len;
	unsigned n;

	p.nodes = env_num("SLUICE_BURST_NODES", 2, 1, B_NODES_MAX);
	p.senders = env_num("SLUICE_BURST_SENDERS", 4, 1, B_SENDERS_MAX);
	p.msgs = env_num("SLUICE_BURST_MSGS", 16000, 1, 1000000);
	p.len = env_num("SLUICE_BURST_LEN", 200, (unsigned)sizeof(struct msg_hdr), 65536);
	n_senders = p.nodes * p.senders;
	total = n_senders * p.msgs;
	for (n = 0; n <= p.nodes; n++) {
		if (n == 0)
			snprintf(b_name_buf[n], sizeof(b_name_buf[n]), "R");
		else
			snprintf(b_name_buf[n], sizeof(b_name_buf[n]), "senders@%c", 'A' + n - 1);
		b_names[n] = b_name_buf[n];
	}
	{
		static const char *const node_names[B_NODES_MAX] = { "A", "B", "C", "D",
								     "E", "F", "G", "H" };

		h_cluster_start(nodes, node_names, p.nodes);
	}
	shared_len = sizeof(*sh) + (size_t)total;
	sh = shared_alloc(shared_len);
	barrier_init(&b);
	chan_init(&go);
	hold_init(&h);
	rss0 = h_proc_rss_kb(nodes[0].pid);
	H_ASSERT(rss0 > 0, "VmRSS of A: %ld", rss0);
	for (n = 0; n <= p.nodes; n++) {
		pids[n] = h_fork();
		if (pids[n] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			if (n == 0)
				b_receiver_run(nodes, &p, &b, &go, &h, sh);
			b_senders_run(nodes, &p, n - 1, &b, &h, sh);
		}
	}
	barrier_release(&b, pids, b_names, p.nodes + 1);
	/* Until every sender process is done or was refused once: the
	 * receiving daemon holds all it will hold. */
	b_wait_for(&sh->flagged, p.nodes, sh->ok, n_senders, 30000, pids, p.nodes + 1,
		   "senders stalled before the receiver began");
	h_daemon_stats(&nodes[0], &st);
	held_n = h_stats_u64(&st, "daemon.unexpected");
	held_bytes = h_stats_u64(&st, "daemon.unexpected_bytes");
	rss_peak = h_proc_rss_kb(nodes[0].pid);
	chan_send(&go);
	b_wait_for(&sh->received, total, &sh->received, 1, 30000, pids, p.nodes + 1,
		   "the receiver stalled");
	t_consumed = __atomic_load_n(&sh->consumed_at, __ATOMIC_ACQUIRE);
	hold_wait_done(&h, p.nodes + 1, 30000, pids, b_names, p.nodes + 1);
	/* When the RSS comes back within the slack, and what it is at the
	 * goal's 5 s, polled from the last receive on. */
	while (h_now_ms() < t_consumed + B_RSS_WAIT_MS && (rss_back < 0 || rss_goal < 0)) {
		long kb = h_proc_rss_kb(nodes[0].pid);
		int64_t at = h_now_ms() - t_consumed;

		H_ASSERT(kb > 0, "VmRSS of A: %ld", kb);
		if (rss_back < 0 && kb <= rss0 + B_RSS_SLACK_KB) {
			rss_back = kb;
			t_back = at;
		}
		if (rss_goal < 0 && at >= B_RSS_GOAL_MS)
			rss_goal = kb;
		h_sleep_ms(50);
	}
	hwm = h_proc_hwm_kb(nodes[0].pid);
	naks_daemon = h_daemon_stat(&nodes[0], "daemon.naks_receiver_full");
	hold_release(&h, p.nodes + 1);
	h_wait_children(pids, p.nodes + 1, 30000, status);
	for (n = 0; n <= p.nodes; n++)
		H_ASSERT(WIFEXITED(status[n]) && WEXITSTATUS(status[n]) == 0, "%s: %s", b_names[n],
			 client_status_str(pids[n], status[n]));
	h_sleep_ms(200);
	rss_closed = h_proc_rss_kb(nodes[0].pid);

	for (s = 0; s < n_senders; s++) {
		H_EQ(sh->ok[s], p.msgs);
		naks_full += sh->naks_full[s];
		naks_busy += sh->naks_busy[s];
		for (i = 0; i < p.msgs; i++)
			H_ASSERT(sh->got[(size_t)s * p.msgs + i] == 1, "sender %u seq %u delivered "
				 "%u times", s, i, sh->got[(size_t)s * p.msgs + i]);
	}
	H_EQ(sh->received, total);
	printf("burst_returns_memory: %u senders on %u daemons, %u messages of %u B, each "
	       "delivered once; receiving daemon held %llu messages, %llu B charged, when the "
	       "receiver began; %llu refused (receiver full), %llu busy; its RSS %ld KiB before, "
	       "%ld KiB held (VmHWM %ld KiB), %ld KiB %d ms after the last receive, %s; "
	       "%ld KiB with the clients gone\n", n_senders, p.nodes, total, p.len,
	       (unsigned long long)held_n, (unsigned long long)held_bytes,
	       (unsigned long long)naks_full, (unsigned long long)naks_busy, rss0, rss_peak, hwm,
	       rss_goal, B_RSS_GOAL_MS,
	       rss_back < 0 ? "never back within the slack" : "back within the slack",
	       rss_closed);
	if (rss_back >= 0)
		printf("burst_returns_memory: back to %ld KiB (within %ld KiB of before) %lld ms "
		       "after the last receive\n", rss_back, B_RSS_SLACK_KB, (long long)t_back);
	H_EQ(naks_full, naks_daemon);
	/* Each message's charge is its length + 64; the burst was held whole,
	 * or up to the endpoint's bound. */
	expect_bytes = (uint64_t)total * (p.len + CHARGE_OVERHEAD);
	if (!naks_full) {
		H_EQ(held_n, total);
		H_EQ(held_bytes, expect_bytes);
	}
	H_ASSERT(held_bytes <= B_ENDPOINT_MAX, "held %llu B, over the endpoint's bound",
		 (unsigned long long)held_bytes);
	/* The check means something only if the burst dwarfs the slack. */
	H_ASSERT(held_bytes >= 3ull * B_RSS_SLACK_KB * KIB, "a burst of %llu B proves nothing "
		 "against a slack of %ld KiB", (unsigned long long)held_bytes, B_RSS_SLACK_KB);
	if (H_UNDER_ASAN) {
		printf("burst_returns_memory: RSS not checked under AddressSanitizer (its "
		       "allocator keeps freed memory)\n");
	} else {
		H_ASSERT(rss_back >= 0, "the receiving daemon's RSS stayed over %ld KiB (before "
			 "%ld + %ld) for %d ms after the burst was received: %ld KiB at %d ms",
			 rss0 + B_RSS_SLACK_KB, rss0, B_RSS_SLACK_KB, B_RSS_WAIT_MS, rss_goal,
			 B_RSS_GOAL_MS);
	}
	chan_close(&go);
	shared_free(sh, shared_len);
	h_cluster_stop(nodes, p.nodes);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *unexpected_total_suite(void)
{
	Suite *s = suite_create("unexpected_total");
	TCase *tc;

	tc = h_tcase(s, "total_bound", 120);
	tcase_add_test(tc, total_bound);
	tcase_add_test(tc, total_reload);
	tc = h_tcase(s, "burst_returns_memory", 300);
	tcase_add_test(tc, burst_returns_memory);
	return s;
}

int main(void)
{
	return h_run_suite(unexpected_total_suite());
}
