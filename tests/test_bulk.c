/*
 * test_bulk.c - one bulk transfer must never stall a shared link
 * (docs/link-scheduling.md): ACKs and keepalives overtake data that has not
 * left yet (the link's data budget, LINK_TX_BUDGET), a transfer longer
 * than ack_timeout_ms completes at the speed of its connection, a
 * rendezvous cut in the middle resumes from the last segment the receiver
 * had in place, and a small message of one client does not wait behind
 * another client's whole transfer.
 *
 * Real daemons on TCP loopback (tests/harness.c); the test process is the
 * client.  No wall-clock bound on a transfer: a wait fails only when the
 * daemons made no progress at all (bytes placed, frames received) for
 * BULK_STALL_MS, and then says so with the figures it watched.
 *   slow_link          [transport] socket_buffer = 1K (tens of MB/s):
 *                      256 MiB by rendezvous completes OK, byte-exact,
 *                      on the first connection, with no ack timeout, no
 *                      silence and no rendezvous restart, and no control
 *                      frame posted behind more than the budget
 *   short_ack_timeout  ack_timeout_ms = 100 on both daemons: 1 GiB each
 *                      way at once, receives posted 20 ms later: all four
 *                      operations complete OK on the first connection
 *   resume_after_cuts  the receiving daemon breaks its connection every 7
 *                      frames it receives ([fault] cut_every_frames): a
 *                      32 MiB rendezvous completes, byte-exact, and each
 *                      cut costs the segments in flight, not the message
 *   small_beside_bulk  a pair exchanges 512 MiB each way while another
 *                      pair on the same daemons ping-pongs 4 KiB: the
 *                      ping-pong keeps going during the exchange, and no
 *                      control frame waited behind more than the budget
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"

#define MIB (1ull << 20)
/* No progress anywhere for this long fails a wait (ms). */
#define BULK_STALL_MS 15000
/* daemon/link.h: LINK_WRITE_SEGMENT, and LINK_TX_BUDGET + a segment, the
 * most payload a control frame may be posted behind (the eager sends here
 * are smaller than a segment). */
#define BULK_SEGMENT (512ull << 10)
#define BULK_AHEAD_MAX (3 * BULK_SEGMENT)

/* ---- payload ---- */

/* Word i of a buffer of stream @seed. */
static uint64_t pattern_word(uint64_t seed, uint64_t i)
{
	return mix64(seed * 0x9e3779b97f4a7c15ull + i);
}

static void pattern_fill(void *buf, uint64_t len, uint64_t seed)
{
	uint64_t *w = buf, i;

	for (i = 0; i < len / 8; i++)
		w[i] = pattern_word(seed, i);
}

/* The first word that differs, or -1. */
static int64_t pattern_check(const void *buf, uint64_t len, uint64_t seed)
{
	const uint64_t *w = buf;
	uint64_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != pattern_word(seed, i))
			return (int64_t)i;
	return -1;
}

/* ---- progress ---- */

/* What moves while a transfer is under way: bytes placed and frames
 * received, summed over the daemons. */
static uint64_t progress_mark(const struct h_daemon *ds, unsigned n)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		struct h_stats st;

		h_daemon_stats(&ds[i], &st);
		sum += h_stats_u64(&st, "xport.writes_rx");
		sum += h_stats_u64(&st, "daemon.remote_msgs_rx");
	}
	return sum;
}

struct waiter {
	struct sl_queue *q;
	const char *name;
	unsigned want;		/* completions still to come */
	struct sl_cqe *cqes;	/* where they go, in arrival order */
	unsigned got;
};

/*
 * Collect every completion the waiters want.  Fails only when, for
 * BULK_STALL_MS, no completion came and the daemons @ds moved nothing.
 */
static void wait_all(struct waiter *w, unsigned nw, const struct h_daemon *ds, unsigned nd)
{
	uint64_t mark = progress_mark(ds, nd);
	int64_t last_progress = h_now_ms(), last_check = h_now_ms();
	unsigned i;

	for (;;) {
		bool done = true, moved = false;

		for (i = 0; i < nw; i++) {
			struct sl_cqe cqe;
			int rc;

			if (w[i].got == w[i].want)
				continue;
			done = false;
			rc = h_wait_cqe(w[i].q, &cqe, 20);
			H_ASSERT(rc >= 0, "%s: sl_poll: %s", w[i].name, strerror(-rc));
			if (rc == 1) {
				w[i].cqes[w[i].got++] = cqe;
				moved = true;
			}
		}
		if (done)
			return;
		if (moved)
			last_progress = h_now_ms();
		if (h_now_ms() - last_check >= 1000) {
			uint64_t m = progress_mark(ds, nd);

			last_check = h_now_ms();
			if (m != mark) {
				mark = m;
				last_progress = h_now_ms();
			}
		}
		if (h_now_ms() - last_progress > BULK_STALL_MS) {
			for (i = 0; i < nw; i++)
				fprintf(stderr, "%s: %u of %u completions\n", w[i].name, w[i].got,
					w[i].want);
			h_fail(__FILE__, __LINE__, "progress", "no completion, no byte placed and "
			       "no frame received for %d ms (progress mark %" PRIu64 ")",
			       BULK_STALL_MS, mark);
		}
	}
}

/* ---- the links' own account ---- */

struct link_account {
	uint64_t connects, silences, ack_timeouts, rndv_restarts, rndv_resumed_bytes;
	uint64_t tx_ahead_max, writes_tx, cuts, lost_wakeups;
};

static void link_account(const struct h_daemon *d, const char *peer, struct link_account *a)
{
	struct h_stats st;
	char name[128];

	h_daemon_stats(d, &st);
#define LINK_FIELD(f) \
	(snprintf(name, sizeof(name), "link.%s." #f, peer), a->f = h_stats_u64(&st, name))
	LINK_FIELD(connects);
	LINK_FIELD(silences);
	LINK_FIELD(ack_timeouts);
	LINK_FIELD(rndv_restarts);
	LINK_FIELD(rndv_resumed_bytes);
	LINK_FIELD(tx_ahead_max);
	LINK_FIELD(writes_tx);
#undef LINK_FIELD
	a->cuts = h_stats_u64(&st, "xport.cuts");
	a->lost_wakeups = h_stats_u64(&st, "daemon.lost_wakeups");
	printf("  %s -> %s: connects %" PRIu64 ", silences %" PRIu64 ", ack_timeouts %" PRIu64
	       ", rndv_restarts %" PRIu64 " (resumed %" PRIu64 " bytes), writes_tx %" PRIu64
	       ", tx_ahead_max %" PRIu64 ", cuts %" PRIu64 ", lost_wakeups %" PRIu64 "\n",
	       d->name, peer, a->connects, a->silences, a->ack_timeouts, a->rndv_restarts,
	       a->rndv_resumed_bytes, a->writes_tx, a->tx_ahead_max, a->cuts, a->lost_wakeups);
}

/* The link held up under the load: the first connection, never judged
 * silent or unacknowledged, no rendezvous started again, no control
 * frame posted behind more than the data budget, and the progress engine
 * never about to sleep while the link could post (before the fix, the
 * flush's own completions freed the budget, their kick was lost, and data
 * waited for the peer's next frame: lost_wakeups 100s per exchange). */
static void expect_link_steady(const struct h_daemon *d, const char *peer)
{
	struct link_account a;

	link_account(d, peer, &a);
	H_EQ(a.connects, 1);
	H_EQ(a.silences, 0);
	H_EQ(a.ack_timeouts, 0);
	H_EQ(a.rndv_restarts, 0);
	H_ASSERT(a.tx_ahead_max <= BULK_AHEAD_MAX, "%s: a control frame waited behind %" PRIu64
		 " bytes of data", d->name, a.tx_ahead_max);
	H_EQ(a.lost_wakeups, 0);
}

/* ---- one message each way ---- */

struct endpoint {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	sl_addr_t addr;
	uint8_t *buf;
};

static void endpoint_open(struct endpoint *e, const struct h_daemon *d, uint32_t port,
			  uint64_t len)
{
	H_EQ(sl_open(d->sock, &e->ctx), 0);
	H_EQ(sl_queue_open(e->ctx, port, 16, &e->q), 0);
	e->addr = sl_queue_addr(e->q);
	e->buf = sl_alloc(e->q, len);
	H_ASSERT(e->buf, "sl_alloc %" PRIu64 " bytes on %s", len, d->name);
}

static void endpoint_close(struct endpoint *e)
{
	H_EQ(sl_queue_close(e->q), 0);
	sl_close(e->ctx);
}

static void expect_cqe(const struct sl_cqe *c, uint8_t op, int32_t status, uint64_t len,
		       uint64_t user_ctx)
{
	H_EQ(c->opcode, op);
	H_ASSERT(c->status == status, "status %s, not %s", sl_strerror(c->status),
		 sl_strerror(status));
	H_EQ(c->len, len);
	H_EQ(c->user_ctx, user_ctx);
}

/*
 * One message of @len bytes from A (port @port) to B (@port + 1), the
 * receive posted first: both complete OK, byte-exact.  Returns the
 * milliseconds from the send to the last completion.
 */
static int64_t one_way(const struct h_daemon *nodes, uint32_t port, uint64_t len)
{
	struct endpoint tx, rx;
	struct sl_cqe ctx_c, crx_c;
	struct waiter w[2] = {
		{ .name = "sender", .want = 1, .cqes = &ctx_c },
		{ .name = "receiver", .want = 1, .cqes = &crx_c },
	};
	int64_t t0;

	endpoint_open(&tx, &nodes[0], port, len);
	endpoint_open(&rx, &nodes[1], port + 1, len);
	pattern_fill(tx.buf, len, port);
	memset(rx.buf, 0, len);
	H_EQ(sl_recv(rx.q, tx.addr, port, ~0ull, rx.buf, len, 2), 0);
	t0 = h_now_ms();
	H_EQ(sl_send(tx.q, rx.addr, port, tx.buf, len, 1), 0);
	w[0].q = tx.q;
	w[1].q = rx.q;
	wait_all(w, 2, nodes, 2);
	t0 = h_now_ms() - t0;
	expect_cqe(&ctx_c, SL_OP_SEND, SL_OK, len, 1);
	expect_cqe(&crx_c, SL_OP_RECV, SL_OK, len, 2);
	H_EQ(pattern_check(rx.buf, len, port), -1);
	endpoint_close(&tx);
	endpoint_close(&rx);
	return t0;
}

/* ------------------------------------------------------------------ */

/*
 * A 1K socket buffer: about 35 MB/s, so 256 MiB takes about 7 s, longer
 * than ack_timeout_ms (2 s) and the silence limit.  Before the data
 * budget, up to sq_depth 1 MiB segments sat ahead of every ACK and
 * keepalive: the receiver heard nothing for 4 s, reconnected, and the
 * rendezvous started again from byte 0, nine times; 0 of 3 runs
 * completed in 40 s.
 */
START_TEST(slow_link)
{
	static const char *const names[] = { "A", "B" };
	static const char conf[] = "[transport]\nsocket_buffer = 1K\n"
				   "[limits]\narena_bytes = 512M\n";
	struct h_daemon nodes[2];

	h_cluster_start_conf(nodes, names, 2, conf);
	h_wait_link(&nodes[0], &nodes[1]);
	printf("slow_link: 256 MiB in %.1f s\n", one_way(nodes, 1301, 256 * MIB) / 1e3);
	expect_link_steady(&nodes[0], "B");
	expect_link_steady(&nodes[1], "A");
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ---- one message each way at once ---- */

/* A sender and a receiver on each of two nodes: A's sender to B's
 * receiver and B's to A's. */
struct two_way {
	struct endpoint atx, arx, btx, brx;
	uint64_t len;
	struct sl_cqe c[4];
	struct waiter w[4];
};

static void two_way_open(struct two_way *t, const struct h_daemon *nodes, uint32_t port,
			 uint64_t len)
{
	static const char *const names[4] = { "A sender", "B sender", "A receiver",
					      "B receiver" };
	unsigned i;

	t->len = len;
	endpoint_open(&t->atx, &nodes[0], port, len);
	endpoint_open(&t->arx, &nodes[0], port + 1, len);
	endpoint_open(&t->btx, &nodes[1], port, len);
	endpoint_open(&t->brx, &nodes[1], port + 1, len);
	pattern_fill(t->atx.buf, len, port);
	pattern_fill(t->btx.buf, len, port + 1);
	for (i = 0; i < 4; i++)
		t->w[i] = (struct waiter){ .name = names[i], .want = 1, .cqes = &t->c[i] };
	t->w[0].q = t->atx.q;
	t->w[1].q = t->btx.q;
	t->w[2].q = t->arx.q;
	t->w[3].q = t->brx.q;
}

/* Post both receives (tag @tag, user_ctx 3 and 4), or both sends (1, 2). */
static void two_way_post_recvs(struct two_way *t, uint64_t tag)
{
	H_EQ(sl_recv(t->arx.q, t->btx.addr, tag, ~0ull, t->arx.buf, t->len, 3), 0);
	H_EQ(sl_recv(t->brx.q, t->atx.addr, tag, ~0ull, t->brx.buf, t->len, 4), 0);
}

static void two_way_post_sends(struct two_way *t, uint64_t tag)
{
	H_EQ(sl_send(t->atx.q, t->brx.addr, tag, t->atx.buf, t->len, 1), 0);
	H_EQ(sl_send(t->btx.q, t->arx.addr, tag, t->btx.buf, t->len, 2), 0);
}

/* All four complete OK with the right lengths, the data is byte-exact,
 * and both links held up. */
static void two_way_finish(struct two_way *t, const struct h_daemon *nodes, uint32_t port)
{
	wait_all(t->w, 4, nodes, 2);
	expect_cqe(&t->c[0], SL_OP_SEND, SL_OK, t->len, 1);
	expect_cqe(&t->c[1], SL_OP_SEND, SL_OK, t->len, 2);
	expect_cqe(&t->c[2], SL_OP_RECV, SL_OK, t->len, 3);
	expect_cqe(&t->c[3], SL_OP_RECV, SL_OK, t->len, 4);
	H_EQ(pattern_check(t->arx.buf, t->len, port + 1), -1);
	H_EQ(pattern_check(t->brx.buf, t->len, port), -1);
	expect_link_steady(&nodes[0], "B");
	expect_link_steady(&nodes[1], "A");
	endpoint_close(&t->atx);
	endpoint_close(&t->arx);
	endpoint_close(&t->btx);
	endpoint_close(&t->brx);
}

/*
 * The same problem in a second form: ack_timeout_ms = 100 (valid) on both,
 * 1 GiB each way at once, the receives posted 20 ms after the sends.
 * Before: 0 of 4 operations completed in 60 s, 67 to 787 reconnects.
 */
START_TEST(short_ack_timeout)
{
	static const char *const names[] = { "A", "B" };
	static const char conf[] = "[transport]\nack_timeout_ms = 100\n"
				   "[limits]\narena_bytes = 1100M\n";
	struct h_daemon nodes[2];
	struct two_way *t = malloc(sizeof(*t));

	H_ASSERT(t, "malloc");
	h_cluster_start_conf(nodes, names, 2, conf);
	h_wait_link(&nodes[0], &nodes[1]);
	two_way_open(t, nodes, 1401, 1024 * MIB);
	two_way_post_sends(t, 14);
	h_sleep_ms(20);
	two_way_post_recvs(t, 14);
	two_way_finish(t, nodes, 1401);
	free(t);
	h_cluster_stop(nodes, 2);
}
END_TEST

/*
 * The receiving daemon B breaks its connection at every 7th frame it
 * receives (HELLO, ACKs and keepalives count, and each RDMA write), so no
 * connection carries more than a few of the 32 segments of the message.
 * Before: each reconnect wrote the message again from byte 0, and it
 * never completed.  Now each RTR sent again names the bytes in place, and
 * a cut costs only what was in flight: at most the data budget, the
 * socket buffers (64 KiB here) and the segment being read.
 */
START_TEST(resume_after_cuts)
{
	static const char *const names[] = { "A", "B" };
	const char *const confs[2] = {
		"[transport]\nsocket_buffer = 64K\nredial_min_ms = 1\n",
		"[transport]\nsocket_buffer = 64K\n[fault]\ncut_every_frames = 7\n",
	};
	const uint64_t segments = 32 * MIB / BULK_SEGMENT;
	struct h_daemon nodes[2];
	struct link_account a, b;

	h_cluster_start_confs(nodes, names, 2, confs);
	h_wait_link(&nodes[0], &nodes[1]);
	one_way(nodes, 1501, 32 * MIB);
	link_account(&nodes[0], "B", &a);
	link_account(&nodes[1], "A", &b);
	/* The faults fired, the rendezvous resumed each time from where the
	 * receiver was, and the bytes it had were not written again. */
	H_ASSERT(b.cuts >= 3, "only %" PRIu64 " cuts", b.cuts);
	H_ASSERT(a.rndv_restarts >= 1, "no rendezvous restart");
	H_ASSERT(a.rndv_resumed_bytes >= MIB, "resumed only %" PRIu64 " bytes",
		 a.rndv_resumed_bytes);
	/* Each cut loses at most the budget in the send queue (2 segments),
	 * the one being posted, what the kernel holds (64 KiB buffers,
	 * doubled, each way: less than a segment) and the write being read: 5
	 * segments. */
	H_ASSERT(a.writes_tx <= segments + 5 * b.cuts, "%" PRIu64 " writes for %" PRIu64
		 " segments and %" PRIu64 " cuts", a.writes_tx, segments, b.cuts);
	h_cluster_stop(nodes, 2);
}
END_TEST

/*
 * Head-of-line, as a test (the latency figures are in scripts/hol):
 * P1 exchanges 512 MiB each way between the nodes, P2 on the same two
 * daemons ping-pongs 4 KiB, one message at a time, in a child process.
 * Before: P2's slowest message took 631 to 772 ms, 7 to 9 messages in
 * 1.5 s.  Asserted here: P2 keeps completing round trips while P1's
 * exchange is under way (at least 20 of them: the exchange takes about a
 * second on loopback, a round trip behind the budget a few ms), and no
 * control frame waited behind more than the budget.
 */
#define HOL_PORT_PING 1601
#define HOL_PORT_PONG 1602
#define HOL_TAG_PING 16
#define HOL_TAG_PONG 17
#define HOL_MIN_DURING 20

struct hol_shared {
	_Atomic int pong_ready;		/* its first receive is posted */
	_Atomic int stop_ping;		/* after the round trip under way */
	_Atomic int stop;		/* the pong, once the ping has ended */
	_Atomic int bulk_running;
	_Atomic uint64_t round_trips;
	_Atomic uint64_t during_bulk;	/* round trips completed while P1 ran */
	_Atomic uint64_t worst_us;
};

/* P2's pong side (on B): answers each 4 KiB ping until told to stop. */
static void hol_pong(const struct h_daemon *b, struct hol_shared *sh)
{
	struct cl c;
	uint8_t *buf;
	struct sl_cqe cqe;

	cl_name = "pong";
	cl_open(&c, b, HOL_PORT_PONG, 16);
	buf = sl_alloc(c.q, 8192);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	CL_REQUIRE(sl_recv(c.q, SL_ANY_SOURCE, HOL_TAG_PING, ~0ull, buf, 4096, 1) == 0,
		   CL_E_POST, "sl_recv");
	sh->pong_ready = 1;
	while (!sh->stop) {
		int rc = h_wait_cqe(c.q, &cqe, 100);

		if (rc == 0)
			continue;
		CL_REQUIRE(rc == 1, CL_E_POLL, "sl_poll: %d", rc);
		if (cqe.user_ctx == 2)
			continue;	/* our pong went out */
		CL_REQUIRE(cqe.status == SL_OK && cqe.len == 4096, CL_E_STATUS,
			   "ping: %s, %" PRIu64 " bytes", sl_strerror(cqe.status), cqe.len);
		memcpy(buf + 4096, buf, 4096);
		CL_REQUIRE(sl_recv(c.q, SL_ANY_SOURCE, HOL_TAG_PING, ~0ull, buf, 4096, 1) == 0,
			   CL_E_POST, "sl_recv");
		CL_REQUIRE(sl_send(c.q, cqe.peer, HOL_TAG_PONG, buf + 4096, 4096, 2) == 0,
			   CL_E_POST, "sl_send");
	}
	cl_close(&c);
	_exit(CL_OK);
}

/* P2's ping side (on A): one 4 KiB ping at a time; gives up when a round
 * trip makes no progress for CL_STALL_MS. */
static void hol_ping(const struct h_daemon *a, const struct h_daemon *b,
		     struct hol_shared *sh)
{
	struct cl c;
	uint8_t *buf;
	sl_addr_t to = { b->node, HOL_PORT_PONG };
	uint64_t n = 0;

	cl_name = "ping";
	cl_open(&c, a, HOL_PORT_PING, 16);
	buf = sl_alloc(c.q, 8192);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	while (!sh->pong_ready) {
		CL_REQUIRE(!sh->stop_ping, CL_E_SYNC, "the pong never got ready");
		h_sleep_ms(1);
	}
	while (!sh->stop_ping) {
		int64_t t0 = h_now_ms();
		struct timespec ts0, ts1;
		unsigned seen = 0;
		uint64_t us;
		int bulk = sh->bulk_running;

		clock_gettime(CLOCK_MONOTONIC, &ts0);
		memset(buf, (int)(n & 0xff), 4096);
		CL_REQUIRE(sl_recv(c.q, to, HOL_TAG_PONG, ~0ull, buf + 4096, 4096, 2) == 0,
			   CL_E_POST, "sl_recv");
		CL_REQUIRE(sl_send(c.q, to, HOL_TAG_PING, buf, 4096, 1) == 0, CL_E_POST,
			   "sl_send");
		while (seen != 3) {
			struct sl_cqe cqe;
			int rc = h_wait_cqe(c.q, &cqe, 100);

			CL_REQUIRE(rc >= 0, CL_E_POLL, "sl_poll: %d", rc);
			CL_REQUIRE(h_now_ms() - t0 < CL_STALL_MS, CL_E_TIMEOUT,
				   "round trip %" PRIu64 " not back after %d ms", n, CL_STALL_MS);
			if (rc == 0)
				continue;
			CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "%s",
				   sl_strerror(cqe.status));
			seen |= cqe.user_ctx == 1 ? 1u : 2u;
		}
		CL_REQUIRE(buf[4096] == (uint8_t)(n & 0xff) && buf[8191] == (uint8_t)(n & 0xff),
			   CL_E_DATA, "pong %" PRIu64 " is not the ping", n);
		clock_gettime(CLOCK_MONOTONIC, &ts1);
		us = (uint64_t)((ts1.tv_sec - ts0.tv_sec) * 1000000 +
				(ts1.tv_nsec - ts0.tv_nsec) / 1000);
		if (bulk && sh->bulk_running) {
			sh->during_bulk++;
			if (us > sh->worst_us)
				sh->worst_us = us;
		}
		sh->round_trips = ++n;
	}
	cl_close(&c);
	_exit(CL_OK);
}

/*
 * What the kernel holds for the link, bytes: the most any ESTABLISHED
 * socket to or from one of the daemons' listen ports has received and
 * not yet given to its daemon (rx_queue) or has not had acknowledged
 * (tx_queue), read from /proc/net/tcp.  A 4 KiB message waits behind all
 * of it: the tcp transport bounds both with its receive buffer and
 * window (TCP_WINDOW_MAX, 1 MiB) and TCP_NOTSENT_LOWAT.  Before the
 * receive buffer was fixed, autotuning grew the window past the clamp
 * and 20 MiB sat unread ahead of the ping-pong.
 */
#define KERNEL_UNREAD_MAX (2 * MIB)
#define KERNEL_UNACKED_MAX (3 * MIB)

struct kernel_queues {
	_Atomic int stop;
	_Atomic uint64_t samples;	/* of a link connection */
	_Atomic uint64_t unread_max;
	_Atomic uint64_t unacked_max;
};

static void kernel_queues_sample(const struct h_daemon *ds, unsigned n, struct kernel_queues *kq)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned lport, rport, st;
		unsigned long tx, rx;
		bool ours = false;

		if (sscanf(line, " %*u: %*x:%x %*x:%x %x %lx:%lx", &lport, &rport, &st, &tx,
			   &rx) != 5 || st != 1)
			continue;
		for (unsigned i = 0; i < n; i++)
			ours |= lport == ds[i].tcp_port || rport == ds[i].tcp_port;
		if (!ours)
			continue;
		kq->samples++;
		if (rx > kq->unread_max)
			kq->unread_max = rx;
		if (tx > kq->unacked_max)
			kq->unacked_max = tx;
	}
	fclose(f);
}

/* A child that samples every millisecond until told to stop. */
static pid_t kernel_queues_watch(const struct h_daemon *ds, unsigned n, struct kernel_queues *kq)
{
	pid_t pid = h_fork();

	if (pid == 0) {
		while (!kq->stop) {
			kernel_queues_sample(ds, n, kq);
			h_sleep_ms(1);
		}
		_exit(0);
	}
	return pid;
}

START_TEST(small_beside_bulk)
{
	static const char *const names[] = { "A", "B" };
	static const char *const pnames[] = { "pong", "ping" };
	static const char conf[] = "[limits]\narena_bytes = 1100M\n";
	struct h_daemon nodes[2];
	struct hol_shared *sh = shared_alloc(sizeof(*sh));
	struct two_way *t = malloc(sizeof(*t));
	struct kernel_queues *kq = shared_alloc(sizeof(*kq));
	pid_t pids[2], watcher;
	int64_t t0;
	int status;

	H_ASSERT(t, "malloc");
	h_cluster_start_conf(nodes, names, 2, conf);
	h_wait_link(&nodes[0], &nodes[1]);
	pids[0] = h_fork();
	if (pids[0] == 0)
		hol_pong(&nodes[1], sh);
	pids[1] = h_fork();
	if (pids[1] == 0)
		hol_ping(&nodes[0], &nodes[1], sh);
	/* P2 runs before P1 starts. */
	{
		uint64_t seen = 0;
		int64_t moved = h_now_ms();

		while (sh->round_trips < 100) {
			if (sh->round_trips != seen) {
				seen = sh->round_trips;
				moved = h_now_ms();
			}
			if (h_now_ms() - moved > BULK_STALL_MS)
				fail_clients(pids, pnames, 2, "the ping-pong stopped before the bulk");
			h_sleep_ms(10);
		}
	}
	two_way_open(t, nodes, 1603, 512 * MIB);
	two_way_post_recvs(t, 16);
	watcher = kernel_queues_watch(nodes, 2, kq);
	sh->bulk_running = 1;
	t0 = h_now_ms();
	two_way_post_sends(t, 16);
	wait_all(t->w, 4, nodes, 2);
	sh->bulk_running = 0;
	kq->stop = 1;
	H_ASSERT(waitpid(watcher, &status, 0) == watcher && WIFEXITED(status) &&
		 WEXITSTATUS(status) == 0, "the /proc/net/tcp sampler failed");
	printf("small_beside_bulk: 512 MiB each way in %.2f s; beside it %" PRIu64
	       " round trips of 4 KiB, the slowest %.1f ms; in the kernel at most %" PRIu64
	       " bytes unread, %" PRIu64 " unacknowledged (%" PRIu64 " samples)\n",
	       (h_now_ms() - t0) / 1e3, (uint64_t)sh->during_bulk, sh->worst_us / 1e3,
	       (uint64_t)kq->unread_max, (uint64_t)kq->unacked_max, (uint64_t)kq->samples);
	sh->stop_ping = 1;
	expect_clients_ok(&pids[1], &pnames[1], 1, 2 * CL_STALL_MS);
	sh->stop = 1;
	expect_clients_ok(pids, pnames, 1, 30000);
	H_ASSERT(sh->during_bulk >= HOL_MIN_DURING, "only %" PRIu64 " round trips of P2 "
		 "during P1's exchange", (uint64_t)sh->during_bulk);
	H_ASSERT(kq->samples > 0, "no link connection in /proc/net/tcp");
	H_ASSERT(kq->unread_max <= KERNEL_UNREAD_MAX, "%" PRIu64 " bytes unread in a link's "
		 "socket (the window bounds it to about 1 MiB)", (uint64_t)kq->unread_max);
	H_ASSERT(kq->unacked_max <= KERNEL_UNACKED_MAX, "%" PRIu64 " bytes unacknowledged in "
		 "a link's socket", (uint64_t)kq->unacked_max);
	two_way_finish(t, nodes, 1603);	/* already complete: checks them */
	free(t);
	shared_free(kq, sizeof(*kq));
	shared_free(sh, sizeof(*sh));
	h_cluster_stop(nodes, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bulk");

	/* Check's own timeouts are a backstop only: every wait above is
	 * bounded by a lack of progress. */
	tcase_add_test(h_tcase(s, "slow_link", 300), slow_link);
	tcase_add_test(h_tcase(s, "short_ack_timeout", 300), short_ack_timeout);
	tcase_add_test(h_tcase(s, "resume_after_cuts", 300), resume_after_cuts);
	tcase_add_test(h_tcase(s, "small_beside_bulk", 300), small_beside_bulk);
	return h_run_suite(s);
}
