/*
 * test_ondemand.c - links on demand ([transport] idle_link_ms, [limits]
 * max_links; daemon/link_idle.c): a link connects when it first carries
 * something and closes, both sides agreeing, when it has had nothing to
 * do for idle_link_ms; the next connection goes on with the same sequence
 * numbers, so nothing fails and the peer does not count as restarted.
 *   cold_link          two daemons just started: both links idle, no
 *                      connection; a message from the accepting side (it
 *                      asks the dialer to dial) and one from the dialing
 *                      side each arrive once, byte-exact, over one
 *                      connection
 *   idle_close_resumes after idle_link_ms both sides are idle again (one
 *                      close each, agreed), and 200 round trips after it
 *                      all complete SL_OK over a second connection: no
 *                      peer restart, no retransmission, nothing failed
 *   busy_stays_up      a ping-pong three idle periods long keeps its one
 *                      connection: no close is asked while frames move
 *   max_links_lru      max_links = 1 on A: A talks to B, then to C; B's
 *                      link, the least recently used and quiet, closes,
 *                      and talking to B again works
 *   ring_exchange      8 daemons, each sending to its two neighbours:
 *                      each has exactly those 2 links connected, the other
 *                      5 idle, and every message arrives once
 *   all_to_all_idle    8 daemons, every one sending to every other, then
 *                      quiet: after idle_link_ms no link is connected on
 *                      any of them, and another round over the woken links
 *                      arrives once too
 *   own_addresses      two daemons listening on 127.0.0.2 and 127.0.0.3 of
 *                      one host: the dialer dials from its own address,
 *                      which the accepter checks, so the link comes up
 *                      (it came from 127.0.0.1 and was refused)
 *   peer_absent        a send to a configured peer that is not running
 *                      dials it and completes SL_ERR_PEER_DOWN once, after
 *                      peer_timeout_ms
 *   quiet_link_silent  idle_link_ms = 0 (links always up, as on verbs): a
 *                      link on which nothing waits sends no frame at all,
 *                      either way (it sent a keepalive every 0.25 s); a
 *                      receive naming the peer makes both sides speak
 *                      (a ping, its answer) until it is cancelled
 *   named_recv_watched a receive naming a peer keeps the link up past
 *                      idle_link_ms and watched: the peer stopped
 *                      (SIGSTOP, no connection breaks), the receive
 *                      completes SL_ERR_PEER_DOWN once (it waited
 *                      forever: the link had closed as idle)
 *   quiet_then_hung    an always-up link quiet for longer than
 *                      peer_timeout_ms, then the peer stops and a receive
 *                      names it: the receive fails only after the peer was
 *                      silent peer_timeout_ms from the wait's start (the
 *                      quiet time before it counted: it failed with the
 *                      silence, 2 s after the stop)
 * Waits are bounded by the lack of progress (a state that does not come),
 * never by the total time, so a loaded machine only makes them slower.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"

#define IDLE_MS 400
/* A state that should come within a few idle periods; generous so that a
 * loaded machine (CI under ASan) does not miss it. */
#define STATE_WAIT_MS 20000
#define PORT_RX 4001
#define PORT_TX 4002

static const char conf_ondemand[] =
	"[transport]\nidle_link_ms = 400\npeer_timeout_ms = 3000\n";

/* The link of @d to @peer in state @want within STATE_WAIT_MS. */
static void wait_link_state(const struct h_daemon *d, const char *peer, const char *want)
{
	int64_t t0 = h_now_ms();
	char key[96], buf[32];

	snprintf(key, sizeof(key), "link.%s.state", peer);
	for (;;) {
		h_daemon_stat_str(d, key, buf, sizeof(buf));
		if (strcmp(buf, want) == 0)
			return;
		H_ASSERT(h_now_ms() - t0 < STATE_WAIT_MS, "%s: link to %s is %s after %d ms, "
			 "not %s", d->name, peer, buf, STATE_WAIT_MS, want);
		h_sleep_ms(20);
	}
}

static uint64_t link_stat(const struct h_daemon *d, const char *peer, const char *what)
{
	char key[96];

	snprintf(key, sizeof(key), "link.%s.%s", peer, what);
	return h_daemon_stat(d, key);
}

struct end {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint8_t *buf;
};

static void end_open(struct end *e, const struct h_daemon *d, uint32_t port)
{
	H_EQ(sl_open(d->sock, &e->ctx), 0);
	H_EQ(sl_queue_open(e->ctx, port, 64, &e->q), 0);
	e->buf = sl_alloc(e->q, 4096);
	H_ASSERT(e->buf, "sl_alloc");
}

static void end_close(struct end *e)
{
	sl_queue_close(e->q);
	sl_close(e->ctx);
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One message of @len bytes @from -> @to (a receive posted first); both
 * complete SL_OK, the bytes arrive; returns the microseconds from the
 * send to its completion (the receiver's daemon acknowledged it). */
static int64_t one_message(struct end *from, struct end *to, uint32_t len, uint8_t seed)
{
	struct sl_cqe cqe;
	int64_t t0, us;
	uint32_t i;

	for (i = 0; i < len; i++)
		from->buf[i] = (uint8_t)(seed + i);
	memset(to->buf, 0, len);
	H_EQ(sl_recv(to->q, sl_queue_addr(from->q), seed, 0, to->buf, len, 2), 0);
	t0 = now_us();
	H_EQ(sl_send(from->q, sl_queue_addr(to->q), seed, from->buf, len, 1), 0);
	H_EQ(h_wait_cqe(from->q, &cqe, 30000), 1);
	us = now_us() - t0;
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 1, "send: %s",
		 sl_strerror(cqe.status));
	H_EQ(h_wait_cqe(to->q, &cqe, 30000), 1);
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 2 && cqe.len == len, "receive: %s, %llu B",
		 sl_strerror(cqe.status), (unsigned long long)cqe.len);
	for (i = 0; i < len; i++)
		H_ASSERT(to->buf[i] == (uint8_t)(seed + i), "byte %u", i);
	return us;
}

/* Daemons a and b (their link woken by the harness's probe), an end on
 * each. */
static void pair_start(struct h_daemon *nodes, struct end *e)
{
	static const char *const names[] = { "a", "b" };

	h_cluster_start_conf(nodes, names, 2, conf_ondemand);
	end_open(&e[0], &nodes[0], PORT_RX);
	end_open(&e[1], &nodes[1], PORT_RX);
}

static void pair_stop(struct h_daemon *nodes, struct end *e)
{
	end_close(&e[0]);
	end_close(&e[1]);
	h_cluster_stop(nodes, 2);
}

/* The daemon of @nodes that dials the other (the lower node id). */
static unsigned dialer_of(const struct h_daemon *nodes)
{
	return nodes[0].node < nodes[1].node ? 0 : 1;
}

START_TEST(cold_link)
{
	static const char *const names[] = { "a", "b" };
	struct h_daemon nodes[2];
	struct end e[2];
	const char *const confs[] = { conf_ondemand, conf_ondemand };
	unsigned dl, ac;
	int64_t us;

	h_cluster_start_cold(nodes, names, 2, confs);
	dl = dialer_of(nodes);
	ac = 1 - dl;
	H_EQ(link_stat(&nodes[0], "b", "connects"), 0);
	H_EQ(link_stat(&nodes[1], "a", "connects"), 0);
	wait_link_state(&nodes[0], "b", "idle");
	wait_link_state(&nodes[1], "a", "idle");
	end_open(&e[0], &nodes[0], PORT_RX);
	end_open(&e[1], &nodes[1], PORT_RX);
	us = one_message(&e[ac], &e[dl], 8, 11);
	printf("cold_link: a first message from the accepter %s, over a cold link (nudge, "
	       "dial, handshake), completed in %" PRId64 " us\n", nodes[ac].name, us);
	us = one_message(&e[dl], &e[ac], 8, 12);
	printf("cold_link: then one from the dialer %s in %" PRId64 " us\n", nodes[dl].name, us);
	H_EQ(link_stat(&nodes[0], "b", "connects"), 1);
	H_EQ(link_stat(&nodes[1], "a", "connects"), 1);
	H_EQ(link_stat(&nodes[dl], names[ac], "nudges_rx"), 1);
	end_close(&e[0]);
	end_close(&e[1]);
	h_cluster_stop(nodes, 2);
}
END_TEST

START_TEST(idle_close_resumes)
{
	struct h_daemon nodes[2];
	struct end e[2];
	unsigned i;

	pair_start(nodes, e);
	one_message(&e[0], &e[1], 64, 1);
	wait_link_state(&nodes[0], "b", "idle");
	wait_link_state(&nodes[1], "a", "idle");
	H_EQ(link_stat(&nodes[0], "b", "idle_closes"), 1);
	H_EQ(link_stat(&nodes[1], "a", "idle_closes"), 1);
	for (i = 0; i < 200; i++)
		one_message(&e[i % 2], &e[1 - i % 2], 8 + i, (uint8_t)i);
	H_EQ(link_stat(&nodes[0], "b", "connects"), 2);
	H_EQ(link_stat(&nodes[1], "a", "connects"), 2);
	H_EQ(link_stat(&nodes[0], "b", "peer_restarts"), 0);
	H_EQ(link_stat(&nodes[1], "a", "peer_restarts"), 0);
	H_EQ(link_stat(&nodes[0], "b", "retransmits"), 0);
	H_EQ(link_stat(&nodes[1], "a", "retransmits"), 0);
	printf("idle_close_resumes: one agreed close each, then 200 round trips over the "
	       "second connection, no restart, no retransmission\n");
	wait_link_state(&nodes[0], "b", "idle");
	pair_stop(nodes, e);
}
END_TEST

START_TEST(busy_stays_up)
{
	struct h_daemon nodes[2];
	struct end e[2];
	int64_t t0, last, gap, gap_max = 0;
	unsigned n = 0;
	uint64_t closes;

	pair_start(nodes, e);
	t0 = last = h_now_ms();
	while (h_now_ms() - t0 < 3 * IDLE_MS) {
		one_message(&e[n % 2], &e[1 - n % 2], 16, (uint8_t)n);
		n++;
		gap = h_now_ms() - last;
		last = h_now_ms();
		if (gap > gap_max)
			gap_max = gap;
		h_sleep_ms(10);	/* well under idle_link_ms between frames */
	}
	closes = link_stat(&nodes[0], "b", "idle_closes") + link_stat(&nodes[1], "a", "idle_closes");
	printf("busy_stays_up: %u messages over %d ms, at most %" PRId64 " ms apart; %" PRIu64
	       " idle closes\n", n, 3 * IDLE_MS, gap_max, closes);
	/* A loaded machine may leave a gap of idle_link_ms, and then a close
	 * is right; with every gap shorter, none may come. */
	if (gap_max < IDLE_MS) {
		H_EQ(closes, 0);
		H_EQ(link_stat(&nodes[0], "b", "connects"), 1);
	}
	pair_stop(nodes, e);
}
END_TEST

START_TEST(max_links_lru)
{
	static const char *const names[] = { "a", "b", "c" };
	static const char conf_a[] =
		"[transport]\nidle_link_ms = 60000\n[limits]\nmax_links = 1\n";
	static const char conf_bc[] = "[transport]\nidle_link_ms = 60000\n";
	const char *const confs[] = { conf_a, conf_bc, conf_bc };
	struct h_daemon nodes[3];
	struct end e[3];
	unsigned i;

	h_cluster_start_cold(nodes, names, 3, confs);
	for (i = 0; i < 3; i++)
		end_open(&e[i], &nodes[i], PORT_RX);
	one_message(&e[0], &e[1], 8, 1);
	wait_link_state(&nodes[0], "b", "up");
	one_message(&e[0], &e[2], 8, 2);
	/* Long before idle_link_ms: closed for the cap. */
	wait_link_state(&nodes[0], "b", "idle");
	wait_link_state(&nodes[1], "a", "idle");
	H_EQ(link_stat(&nodes[0], "b", "idle_closes"), 1);
	one_message(&e[1], &e[0], 8, 3);
	H_EQ(link_stat(&nodes[0], "b", "connects"), 2);
	H_EQ(h_daemon_stat(&nodes[0], "daemon.links_over_max"), 0);
	printf("max_links_lru: b's link closed for c's, and came back for b\n");
	for (i = 0; i < 3; i++)
		end_close(&e[i]);
	h_cluster_stop(nodes, 3);
}
END_TEST

#define MESH_N 8

static const char *const mesh_names[MESH_N] = { "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7" };

static void mesh_start(struct h_daemon *nodes, struct end *e, const char *conf)
{
	const char *confs[MESH_N];
	unsigned i;

	for (i = 0; i < MESH_N; i++)
		confs[i] = conf;
	h_cluster_start_cold(nodes, mesh_names, MESH_N, confs);
	for (i = 0; i < MESH_N; i++)
		end_open(&e[i], &nodes[i], PORT_RX);
}

static void mesh_stop(struct h_daemon *nodes, struct end *e)
{
	unsigned i;

	for (i = 0; i < MESH_N; i++)
		end_close(&e[i]);
	h_cluster_stop(nodes, MESH_N);
}

/* Links of @d in state "up", of its MESH_N - 1. */
static unsigned links_up(const struct h_daemon *d)
{
	struct h_stats st;
	char key[96], buf[32];
	unsigned j, n = 0;

	h_daemon_stats(d, &st);
	for (j = 0; j < MESH_N; j++) {
		if (strcmp(mesh_names[j], d->name) == 0)
			continue;
		snprintf(key, sizeof(key), "link.%s.state", mesh_names[j]);
		n += strcmp(h_stats_str(&st, key, buf, sizeof(buf)), "up") == 0;
	}
	return n;
}

START_TEST(ring_exchange)
{
	struct h_daemon nodes[MESH_N];
	struct end e[MESH_N];
	unsigned i, round;

	/* Counted while up: no idle close may come first on a slow machine. */
	mesh_start(nodes, e, "[transport]\nidle_link_ms = 600000\n");
	for (round = 0; round < 3; round++)
		for (i = 0; i < MESH_N; i++) {
			one_message(&e[i], &e[(i + 1) % MESH_N], 32, (uint8_t)(round + i));
			one_message(&e[i], &e[(i + MESH_N - 1) % MESH_N], 32,
				    (uint8_t)(round + i + 1));
		}
	for (i = 0; i < MESH_N; i++)
		H_EQ(links_up(&nodes[i]), 2);
	printf("ring_exchange: %u messages, each daemon with its 2 neighbours' links up "
	       "and %u idle\n", 3 * 2 * MESH_N, MESH_N - 3);
	mesh_stop(nodes, e);
}
END_TEST

START_TEST(all_to_all_idle)
{
	struct h_daemon nodes[MESH_N];
	struct end e[MESH_N];
	unsigned i, j, round;

	mesh_start(nodes, e, conf_ondemand);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < MESH_N; i++)
			for (j = 0; j < MESH_N; j++)
				if (i != j)
					one_message(&e[i], &e[j], 16, (uint8_t)(i * MESH_N + j));
		for (i = 0; i < MESH_N; i++)
			for (j = 0; j < MESH_N; j++)
				if (i != j)
					wait_link_state(&nodes[i], mesh_names[j], "idle");
		for (i = 0; i < MESH_N; i++)
			H_EQ(links_up(&nodes[i]), 0);
	}
	printf("all_to_all_idle: 2 rounds of %u messages, every link idle after each\n",
	       MESH_N * (MESH_N - 1));
	mesh_stop(nodes, e);
}
END_TEST

START_TEST(own_addresses)
{
	static const char *const names[] = { "a", "b" };
	const char *const hosts[] = { "127.0.0.2", "127.0.0.3" };
	const char *const confs[] = { conf_ondemand, conf_ondemand };
	struct h_daemon nodes[2];
	struct end e[2];

	h_cluster_start_netns(nodes, names, 2, NULL, hosts, confs);
	end_open(&e[0], &nodes[0], PORT_RX);
	end_open(&e[1], &nodes[1], PORT_RX);
	one_message(&e[0], &e[1], 8, 1);
	one_message(&e[1], &e[0], 8, 2);
	H_EQ(link_stat(&nodes[0], "b", "connects"), 1);
	H_EQ(h_daemon_stat(&nodes[0], "daemon.auth_failures_address") +
	     h_daemon_stat(&nodes[1], "daemon.auth_failures_address"), 0);
	printf("own_addresses: a link between 127.0.0.2 and 127.0.0.3, one connection\n");
	end_close(&e[0]);
	end_close(&e[1]);
	h_cluster_stop(nodes, 2);
}
END_TEST

START_TEST(peer_absent)
{
	static const char *const names[] = { "a", "b" };
	struct h_daemon nodes[2];
	struct end e;
	struct sl_cqe cqe;
	const char *const confs[] = { conf_ondemand, conf_ondemand };
	int64_t t0, ms;

	h_cluster_start_cold(nodes, names, 2, confs);
	h_daemon_stop(&nodes[1]);
	end_open(&e, &nodes[0], PORT_TX);
	t0 = h_now_ms();
	H_EQ(sl_send(e.q, (sl_addr_t){ nodes[1].node, PORT_RX }, 1, e.buf, 8, 7), 0);
	H_EQ(h_wait_cqe(e.q, &cqe, 60000), 1);
	ms = h_now_ms() - t0;
	H_ASSERT(cqe.status == SL_ERR_PEER_DOWN && cqe.user_ctx == 7, "send: %s",
		 sl_strerror(cqe.status));
	H_ASSERT(ms >= 2900, "failed after %" PRId64 " ms, before peer_timeout_ms 3000", ms);
	H_EQ(h_wait_cqe(e.q, &cqe, 200), 0);	/* once */
	printf("peer_absent: the send failed SL_ERR_PEER_DOWN once, %" PRId64 " ms after it\n",
	       ms);
	end_close(&e);
	h_daemon_stop(&nodes[0]);
}
END_TEST

/* @d's frames sent to @peer and received from it. */
static uint64_t frames(const struct h_daemon *d, const char *peer)
{
	return link_stat(d, peer, "frames_tx") + link_stat(d, peer, "frames_rx");
}

/* Within STATE_WAIT_MS, a whole @ms in which a and b exchange no frame. */
static void wait_silent_for(const struct h_daemon *nodes, int64_t ms)
{
	int64_t t0 = h_now_ms();
	uint64_t fa, fb;

	for (;;) {
		fa = frames(&nodes[0], "b");
		fb = frames(&nodes[1], "a");
		h_sleep_ms(ms);
		if (frames(&nodes[0], "b") == fa && frames(&nodes[1], "a") == fb)
			return;
		H_ASSERT(h_now_ms() - t0 < STATE_WAIT_MS, "the a-b link never went %" PRId64
			 " ms without a frame in %d ms (a: %" PRIu64 " frames, b: %" PRIu64 ")",
			 ms, STATE_WAIT_MS, frames(&nodes[0], "b"), frames(&nodes[1], "a"));
	}
}

/* Within STATE_WAIT_MS, @d's frames sent to @peer grow by @n from @from. */
static void wait_frames_tx(const struct h_daemon *d, const char *peer, uint64_t from, uint64_t n)
{
	int64_t t0 = h_now_ms();

	while (link_stat(d, peer, "frames_tx") < from + n) {
		H_ASSERT(h_now_ms() - t0 < STATE_WAIT_MS, "%s sent %" PRIu64 " frames to %s in %d "
			 "ms, not %" PRIu64, d->name, link_stat(d, peer, "frames_tx") - from, peer,
			 STATE_WAIT_MS, n);
		h_sleep_ms(20);
	}
}

#define CTX_NAMED 9

/* A receive on @e naming @peer's node (any port, tag 5, 64 B), CTX_NAMED. */
static void post_named_recv(struct end *e, const struct h_daemon *peer)
{
	H_EQ(sl_recv(e->q, (sl_addr_t){ peer->node, SL_PORT_ANY }, 5, ~0ull, e->buf, 64,
		     CTX_NAMED), 0);
}

/* @peer hangs (SIGSTOP; @post: then the receive naming it is posted) until
 * the receive CTX_NAMED on @e completes, which must be SL_ERR_PEER_DOWN;
 * returns the milliseconds from the stop to it. */
static int64_t hang_until_recv_fails(struct end *e, const struct h_daemon *peer, bool post)
{
	struct sl_cqe cqe;
	int64_t t0, ms;

	H_EQ(kill(peer->pid, SIGSTOP), 0);
	t0 = h_now_ms();
	if (post)
		post_named_recv(e, peer);
	H_EQ(h_wait_cqe(e->q, &cqe, 60000), 1);
	ms = h_now_ms() - t0;
	H_EQ(kill(peer->pid, SIGCONT), 0);
	H_ASSERT(cqe.user_ctx == CTX_NAMED && cqe.status == SL_ERR_PEER_DOWN, "receive: %s",
		 sl_strerror(cqe.status));
	return ms;
}

START_TEST(quiet_link_silent)
{
	static const char *const names[] = { "a", "b" };
	static const char conf[] = "[transport]\nidle_link_ms = 0\n";
	struct h_daemon nodes[2];
	struct end e[2];
	struct sl_cqe cqe;
	uint64_t a_tx, b_tx;

	h_cluster_start_conf(nodes, names, 2, conf);
	end_open(&e[0], &nodes[0], PORT_RX);
	end_open(&e[1], &nodes[1], PORT_RX);
	one_message(&e[0], &e[1], 64, 1);
	/* Nothing waits: two seconds without a frame (8 keepalives each
	 * way before). */
	wait_silent_for(nodes, 2000);
	/* A receive on a naming b: a asks, b answers, every 0.25 s or so. */
	a_tx = link_stat(&nodes[0], "b", "frames_tx");
	b_tx = link_stat(&nodes[1], "a", "frames_tx");
	post_named_recv(&e[0], &nodes[1]);
	wait_frames_tx(&nodes[0], "b", a_tx, 4);
	wait_frames_tx(&nodes[1], "a", b_tx, 4);
	H_EQ(link_stat(&nodes[0], "b", "silences"), 0);
	H_EQ(link_stat(&nodes[1], "a", "silences"), 0);
	/* Cancelled, nothing waits again. */
	H_EQ(sl_cancel(e[0].q, CTX_NAMED), 0);
	H_EQ(h_wait_cqe(e[0].q, &cqe, 30000), 1);
	H_ASSERT(cqe.user_ctx == CTX_NAMED && cqe.status == SL_ERR_CANCELED, "receive: %s",
		 sl_strerror(cqe.status));
	H_EQ(h_wait_cqe(e[0].q, &cqe, 30000), 1);
	H_ASSERT(cqe.opcode == SL_OP_CANCEL && cqe.status == SL_OK, "cancel: %s",
		 sl_strerror(cqe.status));
	wait_silent_for(nodes, 1000);
	printf("quiet_link_silent: no frame either way while nothing waited; %" PRIu64
	       " from a and %" PRIu64 " from b while a receive named b\n",
	       link_stat(&nodes[0], "b", "frames_tx") - a_tx,
	       link_stat(&nodes[1], "a", "frames_tx") - b_tx);
	H_EQ(link_stat(&nodes[0], "b", "connects"), 1);
	H_EQ(link_stat(&nodes[1], "a", "connects"), 1);
	pair_stop(nodes, e);
}
END_TEST

START_TEST(named_recv_watched)
{
	struct h_daemon nodes[2];
	struct end e[2];
	struct sl_cqe cqe;
	uint64_t a_tx;
	int64_t ms;

	pair_start(nodes, e);
	one_message(&e[0], &e[1], 64, 1);
	wait_link_state(&nodes[0], "b", "idle");
	/* The receive wakes the link and holds it: three idle periods and
	 * it is still up, its keepalives going. */
	a_tx = link_stat(&nodes[0], "b", "frames_tx");
	post_named_recv(&e[0], &nodes[1]);
	wait_link_state(&nodes[0], "b", "up");
	h_sleep_ms(3 * IDLE_MS);
	wait_frames_tx(&nodes[0], "b", a_tx, 4);
	wait_link_state(&nodes[0], "b", "up");
	H_EQ(link_stat(&nodes[0], "b", "idle_closes"), 1);	/* the first one only */
	/* b hangs: a hears nothing, gives the connection up, and after
	 * peer_timeout_ms (3000) the receive fails, once. */
	ms = hang_until_recv_fails(&e[0], &nodes[1], false);
	/* peer_timeout_ms counts from the last frame heard, a ping's answer
	 * at most about two keepalive periods before the stop (1 s allowed
	 * for a loaded machine). */
	H_ASSERT(ms >= 2000, "failed after %" PRId64 " ms, long before peer_timeout_ms 3000",
		 ms);
	H_EQ(h_wait_cqe(e[0].q, &cqe, 200), 0);	/* once */
	H_ASSERT(link_stat(&nodes[0], "b", "silences") >= 1, "a judged b silent %" PRIu64
		 " times", link_stat(&nodes[0], "b", "silences"));
	printf("named_recv_watched: the link stayed up past idle_link_ms; b stopped, the "
	       "receive failed SL_ERR_PEER_DOWN %" PRId64 " ms later\n", ms);
	pair_stop(nodes, e);
}
END_TEST

START_TEST(quiet_then_hung)
{
	static const char *const names[] = { "a", "b" };
	static const char conf[] = "[transport]\nidle_link_ms = 0\npeer_timeout_ms = 3000\n";
	struct h_daemon nodes[2];
	struct end e[2];
	int64_t ms;

	h_cluster_start_conf(nodes, names, 2, conf);
	end_open(&e[0], &nodes[0], PORT_RX);
	end_open(&e[1], &nodes[1], PORT_RX);
	one_message(&e[0], &e[1], 64, 1);
	/* Quiet for longer than peer_timeout_ms: nothing heard, nothing owed. */
	wait_silent_for(nodes, 4000);
	ms = hang_until_recv_fails(&e[0], &nodes[1], true);
	/* Silence judged 1 s or more after the wait began, then 3 s down. */
	H_ASSERT(ms >= 3000, "failed after %" PRId64 " ms, before peer_timeout_ms 3000 from "
		 "the wait's start", ms);
	H_EQ(link_stat(&nodes[0], "b", "peer_timeouts"), 1);
	printf("quiet_then_hung: after 4 s of quiet, b stopped; the receive naming it failed "
	       "SL_ERR_PEER_DOWN %" PRId64 " ms later\n", ms);
	pair_stop(nodes, e);
}
END_TEST

static Suite *ondemand_suite(void)
{
	Suite *s = suite_create("ondemand");
	TCase *tc = tcase_create("ondemand");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, cold_link);
	tcase_add_test(tc, idle_close_resumes);
	tcase_add_test(tc, busy_stays_up);
	tcase_add_test(tc, max_links_lru);
	tcase_add_test(tc, ring_exchange);
	tcase_add_test(tc, all_to_all_idle);
	tcase_add_test(tc, own_addresses);
	tcase_add_test(tc, peer_absent);
	tcase_add_test(tc, quiet_link_silent);
	tcase_add_test(tc, named_recv_watched);
	tcase_add_test(tc, quiet_then_hung);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_run_suite(ondemand_suite());
}
