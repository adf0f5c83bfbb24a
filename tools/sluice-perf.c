/*
 * sluice-perf - latency, bandwidth and message-rate benchmark over libsluice.
 *
 *   sluice-perf --server --port P [--socket PATH] [--ready-file F] [--busy-poll]
 *   sluice-perf --client --to NODE:PORT [--socket PATH] [--test lat|bw|rate|all]
 *               [--sizes LIST] [--iters N] [--warmup N] [--window W]
 *               [--busy-poll] [--json]
 *
 * Sizes go from 0 to SL_MSG_MAX (1 GiB); between nodes, messages above the
 * daemons' eager_max go by rendezvous.  Every buffer lives in the queue's
 * arena, [limits] arena_bytes of the daemon (64 MiB by default): a stream
 * needs W buffers of the size on each side, a latency test 2 on the client
 * and 2 to 4 on the server.  The client checks its own arena before a
 * phase, the server its own when the phase is announced; either way a
 * phase that does not fit ends the run with the arena_bytes (or --window)
 * that would make it fit.  Without --window the window of a stream is 64,
 * but fewer for large messages: at most STREAM_INFLIGHT_MAX bytes and
 * half the arena in flight, and at least 2.
 *
 * Client and server are always two processes, each with its own queue, so
 * every message pays the real cost: client ring -> daemon -> (network ->
 * daemon ->) server ring.  The server binds port P; the client binds an
 * ephemeral port and the server answers to the peer address of what it
 * receives, so no address has to be exchanged.
 *
 * Protocol.  A tag is (phase << 8) | kind.  Every measurement is one phase
 * with a fresh number, so a late message of one phase can never match a
 * receive of another.  Per phase the client posts a receive for READY, sends
 * CTRL {op, phase, size, count, window}; the server allocates buffers, posts
 * its receives and only then sends READY, so that the measured messages
 * arrive to receives posted ahead (the expected path) rather than queueing
 * as unexpected.  READY {status, buffers, arena} says whether the server's
 * arena held the phase's buffers; if not (status READY_NO_ARENA: "buffers"
 * of the size do not fit its "arena" bytes) the server posted nothing and
 * exits 1 after DONE, and the client sends DONE and exits 1 with advice.
 *   lat:    count x (PING client->server, PONG server->client) of one size;
 *           the server posts the receive for the next PING before it sends
 *           the PONG.  One-way latency = RTT / 2; median and p99 by nearest
 *           rank.  The first --warmup round trips are not recorded.
 *   stream: count DATA messages with up to W sends in flight; the server
 *           keeps W receives posted and reposts each one as it completes,
 *           and sends one ACK when all arrived.  Time = first send .. ACK.
 *           bw runs it for each size, rate for 8 B; a --warmup stream of the
 *           same shape runs first and is discarded.
 * At the end the client sends DONE (its own kind), and the server exits 0.
 *
 * Completions.  user_ctx of every descriptor points to a struct op that
 * describes it, so a NAK (back-pressure: the buffer is untouched) is retried
 * by posting the same op again after a short back-off.  Every other status
 * but SL_OK, and every receive of an unexpected length, is fatal (exit 1).
 * When a post finds the SQ full (-EAGAIN), completions are polled into a
 * backlog (handled later, in order) to give the daemon CQ room, and the
 * post is retried.  That machinery (struct ep, struct op) is shared with
 * sluice-copy, in sl_common.c.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"
#include "common.h"
#include "sl_common.h"

#define PROG "sluice-perf"

#define KIND_MASK 0xffu
#define TAG(kind, phase) ((uint64_t)(kind) | ((uint64_t)(phase) << 8))
enum kind { K_CTRL = 1, K_READY, K_PING, K_PONG, K_DATA, K_ACK, K_DONE };
enum ctrl_op { OP_LAT = 1, OP_STREAM = 2 };

#define CTRL_LEN 32
#define READY_LEN 16
#define ACK_LEN 8
#define WINDOW_MAX 1024u
#define WINDOW_DEFAULT 64u
#define SIZE_LIMIT ((uint64_t)SL_MSG_MAX)
#define LAT_SLOTS 4		/* server ping buffers; see srv_ping() */
#define LAT_SLOTS_MIN 2		/* when 4 do not fit the arena */
#define MAX_SIZES 64

enum ready_status { READY_OK = 0, READY_NO_ARENA = 1 };

/* Control message, little-endian on the wire. */
struct ctrl {
	uint32_t op;
	uint32_t phase;
	uint64_t size;
	uint64_t count;
	uint32_t window;
};

static void ctrl_encode(uint8_t *p, const struct ctrl *c)
{
	memset(p, 0, CTRL_LEN);
	put_le32(p, c->op);
	put_le32(p + 4, c->phase);
	put_le64(p + 8, c->size);
	put_le64(p + 16, c->count);
	put_le32(p + 24, c->window);
}

static void ctrl_decode(const uint8_t *p, struct ctrl *c)
{
	c->op = get_le32(p);
	c->phase = get_le32(p + 4);
	c->size = get_le64(p + 8);
	c->count = get_le64(p + 16);
	c->window = get_le32(p + 24);
}

/* READY, little-endian on the wire. */
struct ready {
	uint32_t status;	/* enum ready_status */
	uint32_t bufs;		/* buffers of the phase's size it needed */
	uint64_t arena;		/* the server's arena, bytes */
};

static void ready_encode(uint8_t *p, const struct ready *r)
{
	memset(p, 0, READY_LEN);
	put_le32(p, r->status);
	put_le32(p + 4, r->bufs);
	put_le64(p + 8, r->arena);
}

static void ready_decode(const uint8_t *p, struct ready *r)
{
	r->status = get_le32(p);
	r->bufs = get_le32(p + 4);
	r->arena = get_le64(p + 8);
}

static const char *kind_name(int k)
{
	static const char *const names[] = {
		[K_CTRL] = "ctrl", [K_READY] = "ready", [K_PING] = "ping",
		[K_PONG] = "pong", [K_DATA] = "data", [K_ACK] = "ack",
		[K_DONE] = "done",
	};

	return k >= K_CTRL && k <= K_DONE ? names[k] : "?";
}

static const struct ep_conf perf_conf = {
	.kind_name = kind_name,
	.arena_hint = "; raise [limits] arena_bytes of sluiced",
	.invalid_hint = " (a size the daemons do not take: above SL_MSG_MAX,"
			" or above eager_max for a daemon without rendezvous?)",
};

/*
 * Allocate @n buffers of @size bytes into @bufs.  Returns true, or false
 * with none of them kept when the arena cannot hold them all.
 */
static bool alloc_bufs(struct ep *e, void **bufs, unsigned n, uint64_t size)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (!(bufs[i] = sl_alloc(e->q, size)))
			break;
	if (i == n)
		return true;
	while (i > 0)
		sl_free(e->q, bufs[--i]);
	return false;
}

/*
 * Advice for @n buffers of @size bytes that did not fit an arena of @arena
 * bytes: "<N> x <size> buffers do not fit the arena of <whose> queue
 * (<arena>): raise [limits] arena_bytes of <daemon> to at least <X>
 * [, or use --window <fits> or less]".  @window: whether a smaller
 * --window would do (a stream's buffers).
 */
static void arena_advice(char *b, size_t len, const char *whose,
			 const char *daemon, unsigned n, uint64_t size,
			 uint64_t arena, bool window)
{
	char sz[32], have[32], need[32], more[64] = "";
	uint64_t fits = arena_fits(arena, size);

	fmt_size(sz, sizeof(sz), size);
	fmt_conf_bytes(have, sizeof(have), arena);
	fmt_conf_bytes(need, sizeof(need), arena_needed(n, size));
	if (window && fits >= 1)
		snprintf(more, sizeof(more), ", or use --window %" PRIu64
			 " or less", fits < WINDOW_MAX ? fits : WINDOW_MAX);
	snprintf(b, len, "%u x %s buffers do not fit the arena of %s queue"
		 " (%s): raise [limits] arena_bytes of %s to at least %s%s",
		 n, sz, whose, have, daemon, need, more);
}

/* ------------------------------------------------------------------ */
/* Server                                                               */
/* ------------------------------------------------------------------ */

struct srv {
	struct ep e;
	struct op ctrl_rx, done_rx, ready_tx, ack_tx;
	uint8_t *ctrl_buf, *ack_buf, *ready_buf;
	unsigned refused;	/* phases refused: the arena was too small */

	/* A control message that arrived while a phase was still draining. */
	bool ctrl_pending, done_pending;
	struct ctrl pending;
	sl_addr_t pending_peer;

	/* The phase in progress. */
	bool active;
	struct ctrl cur;
	sl_addr_t client;
	unsigned nslots;
	void **bufs;
	struct op *rx, *tx;	/* tx: pongs, from the ping's buffer */
	uint64_t got, posted;
	int deferred;		/* lat: slot to post once its pong is sent */
};

/* Tell the client whether the phase's buffers fit: READY. */
static void srv_ready(struct srv *s, uint32_t status, uint32_t bufs)
{
	struct ready r = { status, bufs, sl_arena_size(s->e.q) };

	ready_encode(s->ready_buf, &r);
	op_init(&s->ready_tx, K_READY, true, s->client,
		TAG(K_READY, s->cur.phase), s->ready_buf, READY_LEN);
	op_post(&s->e, &s->ready_tx);
}

static void srv_start(struct srv *s, const struct ctrl *c, sl_addr_t client)
{
	bool lat = c->op == OP_LAT;
	unsigned i;

	if ((c->op != OP_LAT && c->op != OP_STREAM) || c->size > SIZE_LIMIT ||
	    c->count == 0 || c->window == 0 || c->window > WINDOW_MAX)
		die("bad control message (op %" PRIu32 ", size %" PRIu64
		    ", count %" PRIu64 ", window %" PRIu32 ")",
		    c->op, c->size, c->count, c->window);
	s->active = true;
	s->cur = *c;
	s->client = client;
	s->got = s->posted = 0;
	s->deferred = -1;
	s->nslots = lat ? LAT_SLOTS : c->window;
	s->bufs = calloc(s->nslots, sizeof(*s->bufs));
	s->rx = calloc(s->nslots, sizeof(*s->rx));
	s->tx = calloc(s->nslots, sizeof(*s->tx));
	if (!s->bufs || !s->rx || !s->tx)
		die("out of memory");
	if (!alloc_bufs(&s->e, s->bufs, s->nslots, c->size) &&
	    !(lat && alloc_bufs(&s->e, s->bufs, s->nslots = LAT_SLOTS_MIN,
				c->size))) {
		char why[256];

		/*
		 * Refused: nothing posted, READY says why, and the phase
		 * ends as soon as READY is sent (got = count, no slots).
		 */
		arena_advice(why, sizeof(why), "this server's", "its sluiced",
			     s->nslots, c->size, sl_arena_size(s->e.q), !lat);
		fprintf(stderr, PROG ": phase %" PRIu32 " refused: %s\n",
			c->phase, why);
		srv_ready(s, READY_NO_ARENA, s->nslots);
		s->nslots = 0;
		s->got = c->count;
		s->refused++;
		return;
	}
	for (i = 0; i < s->nslots; i++) {
		op_init(&s->rx[i], lat ? K_PING : K_DATA, false, client,
			TAG(lat ? K_PING : K_DATA, c->phase), s->bufs[i], c->size);
		op_init(&s->tx[i], K_PONG, true, client, TAG(K_PONG, c->phase),
			s->bufs[i], c->size);
		s->rx[i].slot = s->tx[i].slot = i;
	}
	/* lat: one receive ahead; stream: the whole window. */
	for (i = 0; i < (lat ? 1 : s->nslots) && s->posted < c->count; i++) {
		op_post(&s->e, &s->rx[i]);
		s->posted++;
	}
	srv_ready(s, READY_OK, s->nslots);
}

static bool srv_finished(const struct srv *s)
{
	unsigned i;

	if (s->got < s->cur.count || s->ready_tx.inflight || s->ack_tx.inflight)
		return false;
	for (i = 0; i < s->nslots; i++)
		if (s->tx[i].inflight)
			return false;
	return true;
}

static void srv_end(struct srv *s)
{
	unsigned i;

	for (i = 0; i < s->nslots; i++)
		sl_free(s->e.q, s->bufs[i]);
	free(s->bufs);
	free(s->rx);
	free(s->tx);
	s->bufs = NULL;
	s->rx = s->tx = NULL;
	s->active = false;
}

/*
 * A PING arrived in @slot.  The receive for the next PING goes into the next
 * slot before the PONG is sent, so it is posted ahead; that slot's previous
 * PONG may, rarely, not have completed yet (its buffer must stay unchanged),
 * and then the post waits for that completion (s->deferred).
 */
static void srv_ping(struct srv *s, unsigned slot)
{
	unsigned next = (slot + 1) % s->nslots;

	s->got++;
	if (s->posted < s->cur.count) {
		if (s->tx[next].inflight) {
			s->deferred = (int)next;
		} else {
			op_post(&s->e, &s->rx[next]);
			s->posted++;
		}
	}
	op_post(&s->e, &s->tx[slot]);
}

static void srv_data(struct srv *s, struct op *rx)
{
	s->got++;
	if (s->posted < s->cur.count) {
		op_post(&s->e, rx);
		s->posted++;
	}
	if (s->got == s->cur.count) {
		put_le64(s->ack_buf, s->got);
		op_init(&s->ack_tx, K_ACK, true, s->client,
			TAG(K_ACK, s->cur.phase), s->ack_buf, ACK_LEN);
		op_post(&s->e, &s->ack_tx);
	}
}

static void srv_ctrl(struct srv *s, sl_addr_t peer)
{
	struct ctrl c;

	ctrl_decode(s->ctrl_buf, &c);
	if (s->active) {
		/* The client finished the phase before our last sends did. */
		s->ctrl_pending = true;
		s->pending = c;
		s->pending_peer = peer;
		return;
	}
	op_post(&s->e, &s->ctrl_rx);
	srv_start(s, &c, peer);
}

static int run_server(const char *sock, uint32_t port, const char *ready_file,
		      bool busy)
{
	struct srv s;
	sl_addr_t me;

	memset(&s, 0, sizeof(s));
	ep_open(&s.e, sock, port, WINDOW_MAX, busy, &perf_conf);
	me = sl_queue_addr(s.e.q);
	s.ctrl_buf = ep_alloc(&s.e, CTRL_LEN);
	s.ack_buf = ep_alloc(&s.e, ACK_LEN);
	s.ready_buf = ep_alloc(&s.e, READY_LEN);
	op_init(&s.ctrl_rx, K_CTRL, false, SL_ANY_SOURCE, K_CTRL, s.ctrl_buf,
		CTRL_LEN);
	s.ctrl_rx.mask = KIND_MASK;
	op_init(&s.done_rx, K_DONE, false, SL_ANY_SOURCE, K_DONE, NULL, 0);
	s.done_rx.mask = KIND_MASK;
	op_post(&s.e, &s.ctrl_rx);
	op_post(&s.e, &s.done_rx);

	/* Written only now, so a script that waits for it finds us bound. */
	if (ready_file) {
		char text[32];

		snprintf(text, sizeof(text), "%" PRIu32 " %" PRIu32 "\n",
			 me.node, me.port);
		write_ready_file(ready_file, text);
	}
	fprintf(stderr, PROG ": serving on node %#" PRIx32 " port %" PRIu32 "\n",
		me.node, me.port);

	for (;;) {
		struct sl_cqe c = ep_next(&s.e);
		struct op *op = op_complete(&s.e, &c);

		if (!op)
			continue;
		switch (op->kind) {
		case K_CTRL:
			check_len(&s.e, &c, op, CTRL_LEN);
			srv_ctrl(&s, c.peer);
			break;
		case K_DONE:
			check_len(&s.e, &c, op, 0);
			s.done_pending = true;
			break;
		case K_PING:
			check_len(&s.e, &c, op, s.cur.size);
			srv_ping(&s, op->slot);
			break;
		case K_PONG:
			if (s.deferred == (int)op->slot) {
				op_post(&s.e, &s.rx[op->slot]);
				s.posted++;
				s.deferred = -1;
			}
			break;
		case K_DATA:
			check_len(&s.e, &c, op, s.cur.size);
			srv_data(&s, op);
			break;
		case K_READY:
		case K_ACK:
			break;
		default:
			unexpected(&s.e, op);
		}
		if (s.active && srv_finished(&s)) {
			srv_end(&s);
			if (s.ctrl_pending) {
				s.ctrl_pending = false;
				op_post(&s.e, &s.ctrl_rx);
				srv_start(&s, &s.pending, s.pending_peer);
			}
		}
		if (s.done_pending && !s.active)
			break;
	}
	if (s.e.naks)
		fprintf(stderr, PROG ": %" PRIu64 " NAKs retried\n", s.e.naks);
	ep_close(&s.e);
	return s.refused ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Client                                                               */
/* ------------------------------------------------------------------ */

struct result {
	const char *test;
	uint64_t size, iters;
	unsigned window;		/* 0: not applicable */
	double median_us, p99_us, max_us;	/* < 0: not applicable */
	double mbps, msgps;		/* < 0: not applicable */
};

struct cli {
	struct ep e;
	sl_addr_t dst;		/* as given: node may be SL_NODE_LOCAL */
	const char *to;		/* the --to argument, for messages */
	sl_addr_t server;	/* as completions name it */
	uint32_t phase;
	uint8_t *ctrl_buf, *ready_buf;
};

/* Send DONE and wait until the server's daemon has accepted it. */
static void cli_done(struct cli *k)
{
	struct op done;

	op_init(&done, K_DONE, true, k->dst, TAG(K_DONE, k->phase + 1), NULL, 0);
	op_post(&k->e, &done);
	while (done.inflight) {
		struct sl_cqe c = ep_next(&k->e);
		struct op *op = op_complete(&k->e, &c);

		if (op && op != &done)
			unexpected(&k->e, op);
	}
}

/*
 * End the run between phases (nothing in flight) with @why: DONE first,
 * so that the server exits too, then die().
 */
static void __attribute__((noreturn))
cli_fail(struct cli *k, const char *why)
{
	cli_done(k);
	die("%s", why);
}

/* @n buffers of @size for a phase of @test, or end the run with advice. */
static void cli_alloc(struct cli *k, const char *test, void **bufs,
		      unsigned n, uint64_t size, bool window)
{
	char why[320], adv[256];

	if (alloc_bufs(&k->e, bufs, n, size))
		return;
	arena_advice(adv, sizeof(adv), "this client's", "the client's sluiced",
		     n, size, sl_arena_size(k->e.q), window);
	snprintf(why, sizeof(why), "%s: %s", test, adv);
	cli_fail(k, why);
}

/*
 * Start a phase: announce it and wait until the server has posted its
 * receives.  The READY receive is posted before CTRL is sent, so it is
 * never unexpected either.  A server whose arena cannot hold the phase
 * ends the run.
 */
static void cli_phase(struct cli *k, const char *test, uint32_t op,
		      uint64_t size, uint64_t count, unsigned window)
{
	struct ctrl c = { op, ++k->phase, size, count, window };
	struct op ctrl_tx, ready_rx;
	struct ready r;

	op_init(&ready_rx, K_READY, false, SL_ANY_SOURCE,
		TAG(K_READY, k->phase), k->ready_buf, READY_LEN);
	op_post(&k->e, &ready_rx);
	ctrl_encode(k->ctrl_buf, &c);
	op_init(&ctrl_tx, K_CTRL, true, k->dst, TAG(K_CTRL, k->phase),
		k->ctrl_buf, CTRL_LEN);
	op_post(&k->e, &ctrl_tx);
	while (ready_rx.inflight || ctrl_tx.inflight) {
		struct sl_cqe cqe = ep_next(&k->e);
		struct op *o = op_complete(&k->e, &cqe);

		if (o == &ready_rx) {
			check_len(&k->e, &cqe, o, READY_LEN);
			k->server = cqe.peer;
		} else if (o && o != &ctrl_tx) {
			unexpected(&k->e, o);
		}
	}
	ready_decode(k->ready_buf, &r);
	if (r.status != READY_OK) {
		char why[384], adv[256], daemon[160];
		int node_len = (int)(strrchr(k->to, ':') - k->to);

		/* --to is NODE:PORT, checked by parse_to(). */
		if (k->dst.node == SL_NODE_LOCAL)
			snprintf(daemon, sizeof(daemon), "this node's sluiced");
		else
			snprintf(daemon, sizeof(daemon), "the sluiced of node %.*s",
				 node_len, k->to);
		arena_advice(adv, sizeof(adv), "the server's", daemon, r.bufs,
			     size, r.arena, op == OP_STREAM);
		snprintf(why, sizeof(why), "%s: %s", test, adv);
		cli_fail(k, why);
	}
}

static void cli_lat(struct cli *k, uint64_t size, uint64_t warmup,
		    uint64_t iters, struct result *r)
{
	uint64_t total = warmup + iters, i, *rtt;
	size_t stamp = size < 8 ? size : 8;
	void *b[2];
	uint8_t *txb, *rxb;
	struct op tx, rx;

	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt)
		die("out of memory");
	cli_alloc(k, "lat", b, 2, size, false);
	txb = b[0];
	rxb = b[1];
	memset(txb, 0xa5, size);
	cli_phase(k, "lat", OP_LAT, size, total, 1);
	op_init(&tx, K_PING, true, k->dst, TAG(K_PING, k->phase), txb, size);
	op_init(&rx, K_PONG, false, k->server, TAG(K_PONG, k->phase), rxb, size);

	for (i = 0; i < total; i++) {
		uint64_t t0, t1 = 0;

		/* The stamp proves that the PONG answers this very PING. */
		memcpy(txb, &i, stamp);
		op_post(&k->e, &rx);
		t0 = now_ns();
		op_post(&k->e, &tx);
		while (rx.inflight || tx.inflight) {
			struct sl_cqe c = ep_next(&k->e);
			struct op *o = op_complete(&k->e, &c);

			if (o == &rx) {
				t1 = now_ns();
				check_len(&k->e, &c, o, size);
				if (memcmp(rxb, txb, stamp) != 0)
					die("pong %" PRIu64 " does not echo its ping", i);
			} else if (o && o != &tx) {
				unexpected(&k->e, o);
			}
		}
		if (i >= warmup)
			rtt[i - warmup] = t1 - t0;
	}
	sl_free(k->e.q, txb);
	sl_free(k->e.q, rxb);

	qsort(rtt, iters, sizeof(*rtt), cmp_u64);
	r->test = "lat";
	r->size = size;
	r->iters = iters;
	r->window = 0;
	r->median_us = percentile(rtt, iters, 50) / 2e3;
	r->p99_us = percentile(rtt, iters, 99) / 2e3;
	r->max_us = rtt[iters - 1] / 2e3;
	r->mbps = r->msgps = -1;
	free(rtt);
}

/*
 * One stream of @count messages of @size bytes, @w sends in flight (@test
 * names it in messages); returns nanoseconds from first send to ACK.
 */
static uint64_t cli_stream(struct cli *k, const char *test, uint64_t size,
			   uint64_t count, unsigned w)
{
	unsigned nfree = 0, i;
	uint64_t sent = 0, t0, t1 = 0;
	struct op *tx, ack, **freel;
	uint8_t *ackb;
	void **bufs;
	bool acked = false;

	tx = calloc(w, sizeof(*tx));
	freel = calloc(w, sizeof(*freel));
	bufs = calloc(w, sizeof(*bufs));
	if (!tx || !freel || !bufs)
		die("out of memory");
	ackb = ep_alloc(&k->e, ACK_LEN);
	cli_alloc(k, test, bufs, w, size, true);
	for (i = 0; i < w; i++)
		memset(bufs[i], (int)i, size);
	cli_phase(k, test, OP_STREAM, size, count, w);
	for (i = 0; i < w; i++) {
		op_init(&tx[i], K_DATA, true, k->dst, TAG(K_DATA, k->phase),
			bufs[i], size);
		freel[nfree++] = &tx[i];
	}
	op_init(&ack, K_ACK, false, k->server, TAG(K_ACK, k->phase), ackb,
		ACK_LEN);
	op_post(&k->e, &ack);

	t0 = now_ns();
	while (!acked || nfree < w) {
		struct sl_cqe c;
		struct op *o;

		while (sent < count && nfree > 0) {
			op_post(&k->e, freel[--nfree]);
			sent++;
		}
		c = ep_next(&k->e);
		o = op_complete(&k->e, &c);
		if (!o)
			continue;
		if (o == &ack) {
			t1 = now_ns();
			check_len(&k->e, &c, o, ACK_LEN);
			if (get_le64(ackb) != count)
				die("server acknowledged %" PRIu64 " of %" PRIu64
				    " messages", get_le64(ackb), count);
			acked = true;
		} else if (o->kind == K_DATA && o->send) {
			freel[nfree++] = o;
		} else {
			unexpected(&k->e, o);
		}
	}
	for (i = 0; i < w; i++)
		sl_free(k->e.q, bufs[i]);
	sl_free(k->e.q, ackb);
	free(tx);
	free(freel);
	free(bufs);
	return t1 - t0;
}

static void cli_bw(struct cli *k, const char *test, uint64_t size,
		   uint64_t warmup, uint64_t iters, unsigned window,
		   struct result *r)
{
	double secs;

	if (warmup)
		cli_stream(k, test, size, warmup, window);
	secs = cli_stream(k, test, size, iters, window) / 1e9;
	r->test = test;
	r->size = size;
	r->iters = iters;
	r->window = window;
	r->median_us = r->p99_us = r->max_us = -1;
	r->mbps = (double)size * iters / secs / 1e6;
	r->msgps = iters / secs;
}

static void fmt_num(char *b, size_t n, double v, int prec)
{
	if (v < 0)
		b[0] = '\0';
	else
		snprintf(b, n, "%.*f", prec, v);
}

static void print_row(const struct result *r)
{
	char med[32], p99[32], max[32], mbps[32], msgps[32], win[16] = "";

	fmt_num(med, sizeof(med), r->median_us, 2);
	fmt_num(p99, sizeof(p99), r->p99_us, 2);
	fmt_num(max, sizeof(max), r->max_us, 2);
	fmt_num(mbps, sizeof(mbps), r->mbps, 1);
	fmt_num(msgps, sizeof(msgps), r->msgps, 0);
	if (r->window)
		snprintf(win, sizeof(win), "%u", r->window);
	/* max last: scripts read the columns before it by position. */
	printf("%-5s %10" PRIu64 " %10" PRIu64 " %10s %10s %10s %11s %6s %10s\n",
	       r->test, r->size, r->iters, med, p99, mbps, msgps, win, max);
	fflush(stdout);
}

static void json_num(double v, int prec)
{
	if (v < 0)
		printf("null");
	else
		printf("%.*f", prec, v);
}

static void print_json(const struct result *res, unsigned n)
{
	unsigned i;

	printf("[");
	for (i = 0; i < n; i++) {
		const struct result *r = &res[i];

		printf("%s\n  {\"test\":\"%s\",\"size\":%" PRIu64
		       ",\"iterations\":%" PRIu64 ",\"median_us\":",
		       i ? "," : "", r->test, r->size, r->iters);
		json_num(r->median_us, 3);
		printf(",\"p99_us\":");
		json_num(r->p99_us, 3);
		printf(",\"max_us\":");
		json_num(r->max_us, 3);
		printf(",\"mb_s\":");
		json_num(r->mbps, 3);
		printf(",\"msg_s\":");
		json_num(r->msgps, 1);
		if (r->window)
			printf(",\"window\":%u", r->window);
		else
			printf(",\"window\":null");
		printf("}");
	}
	printf("\n]\n");
}

struct cli_opts {
	const char *sock;
	sl_addr_t dst;
	const char *to;
	bool lat, bw, rate;
	uint64_t sizes[MAX_SIZES];
	unsigned nsizes;
	uint64_t iters;		/* 0: per-test default */
	uint64_t warmup;	/* UINT64_MAX: per-size default */
	unsigned window;	/* 0: per-size default */
	bool busy, json;
};

/*
 * Default round trips of a latency test: 10000, but at most 1 GiB each
 * way and at least 10 (1 MiB: 1024; 16 MiB: 64; 1 GiB: 10).
 */
static uint64_t lat_iters(uint64_t size)
{
	uint64_t n = size ? (1u << 30) / size : 10000;

	return n > 10000 ? 10000 : n < 10 ? 10 : n;
}

/*
 * Bytes a default stream keeps in flight at most.  A window is there to
 * cover latency, and 16 MiB covers it many times over on any link this
 * runs on; more only spreads the buffers past the caches.  On the 2-core
 * test VM 1 MiB messages streamed at 4.6 GB/s with 16 in flight and at
 * 3.4 GB/s with 64.
 */
#define STREAM_INFLIGHT_MAX (16ull << 20)

/*
 * The window of a stream of @size-byte messages: --window, else 64 but
 * at most STREAM_INFLIGHT_MAX bytes and half the arena's worth of
 * buffers, and at least 2.
 */
static unsigned stream_window(const struct cli *k, const struct cli_opts *o,
			      uint64_t size)
{
	uint64_t arena = sl_arena_size(k->e.q), w, fits;

	if (o->window)
		return o->window;
	w = size ? arena / 2 / size : WINDOW_DEFAULT;
	if (size && w > STREAM_INFLIGHT_MAX / size)
		w = STREAM_INFLIGHT_MAX / size;
	fits = arena_fits(arena, size);
	if (w > fits)
		w = fits;
	return w > WINDOW_DEFAULT ? WINDOW_DEFAULT : w < 2 ? 2 : (unsigned)w;
}

static uint64_t warmup_for(const struct cli_opts *o, uint64_t size)
{
	return o->warmup != UINT64_MAX ? o->warmup : warmup_iters(size);
}

static int run_client(const struct cli_opts *o)
{
	struct result *res;
	unsigned n = 0, i;
	struct cli k;

	memset(&k, 0, sizeof(k));
	k.dst = o->dst;
	k.to = o->to;
	ep_open(&k.e, o->sock, 0, o->window ? o->window : WINDOW_DEFAULT,
		o->busy, &perf_conf);
	k.ctrl_buf = ep_alloc(&k.e, CTRL_LEN);
	k.ready_buf = ep_alloc(&k.e, READY_LEN);
	res = calloc(2 * o->nsizes + 1, sizeof(*res));
	if (!res)
		die("out of memory");
	if (!o->json)
		printf("%-5s %10s %10s %10s %10s %10s %11s %6s %10s\n", "test",
		       "size(B)", "iterations", "median(us)", "p99(us)", "MB/s",
		       "msg/s", "window", "max(us)");

	if (o->lat)
		for (i = 0; i < o->nsizes; i++) {
			uint64_t sz = o->sizes[i];

			cli_lat(&k, sz, warmup_for(o, sz),
				o->iters ? o->iters : lat_iters(sz), &res[n]);
			if (!o->json)
				print_row(&res[n]);
			n++;
		}
	if (o->bw)
		for (i = 0; i < o->nsizes; i++) {
			uint64_t sz = o->sizes[i];

			cli_bw(&k, "bw", sz, warmup_for(o, sz),
			       o->iters ? o->iters : stream_iters(sz),
			       stream_window(&k, o, sz), &res[n]);
			if (!o->json)
				print_row(&res[n]);
			n++;
		}
	if (o->rate) {
		cli_bw(&k, "rate", 8, warmup_for(o, 8),
		       o->iters ? o->iters : 1000000, stream_window(&k, o, 8),
		       &res[n]);
		if (!o->json)
			print_row(&res[n]);
		n++;
	}
	if (o->json)
		print_json(res, n);

	/* DONE is accepted by the server's daemon before we close. */
	cli_done(&k);
	if (k.e.naks)
		fprintf(stderr, PROG ": %" PRIu64 " NAKs retried\n", k.e.naks);
	free(res);
	ep_close(&k.e);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Command line                                                         */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --server --port P [--socket PATH] [--ready-file F]\n"
		"                   [--busy-poll] [--once]\n"
		"       " PROG " --client --to NODE:PORT [--socket PATH]\n"
		"                   [--test lat|bw|rate|all] [--sizes LIST] [--iters N]\n"
		"                   [--warmup N] [--window W] [--busy-poll] [--json]\n"
		"\n"
		"Benchmark over libsluice between two processes.\n"
		"  --server          bind a queue on --port and serve one client\n"
		"                    until it sends DONE (--once: the default)\n"
		"  --ready-file F    server: create F (\"node port\") once bound\n"
		"  --client          run the tests against a server\n"
		"  --to NODE:PORT    server address; NODE is a node name or 'local'\n"
		"  --socket PATH     daemon socket (default $SLUICE_SOCKET, else "
		SL_DEFAULT_SOCKET ")\n"
		"  --test T          lat, bw, rate or all (default all)\n"
		"  --sizes LIST      comma-separated sizes, 0..1G, K/M/G suffix\n"
		"                    allowed (default 8,64,512,4096,16384,65536);\n"
		"                    lat and bw run each, rate always uses 8 B\n"
		"  --iters N         round trips (lat) or messages (bw, rate); default\n"
		"                    10000 for lat (at most 1 GiB each way, at least\n"
		"                    10), 64 MiB / size within 1e4..1e6 for bw (at\n"
		"                    most 1 GiB, at least 8), 1e6 for rate\n"
		"  --warmup N        unrecorded round trips / messages first (default\n"
		"                    1000, at most 64 MiB of payload, at least 1)\n"
		"  --window W        sends in flight and receives posted ahead, 1..%u\n"
		"                    (default 64, fewer for large sizes: at most 16 MiB\n"
		"                    and half the arena in flight, at least 2)\n"
		"  --busy-poll       spin on sl_poll() instead of sleeping in sl_wait()\n"
		"  --json            print a JSON array instead of the table\n"
		"  --help            this text\n"
		"Buffers live in each queue's arena, [limits] arena_bytes of sluiced\n"
		"(default 64M): bw needs window x size on both sides, lat 2 x size\n"
		"(the server 2 to 4 x size); a run that does not fit says what to raise.\n"
		"Latencies are one-way (RTT/2), nearest-rank median and p99, and the\n"
		"largest (max);\n"
		"MB/s is 1e6 payload bytes per second.\n", WINDOW_MAX);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "client", no_argument, NULL, 'C' },
		{ "port", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' },
		{ "socket", required_argument, NULL, 's' },
		{ "test", required_argument, NULL, 'T' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "window", required_argument, NULL, 'W' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "once", no_argument, NULL, 'o' },
		{ "busy-poll", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const uint64_t default_sizes[] = { 8, 64, 512, 4096, 16384, 65536 };
	struct cli_opts o = { .warmup = UINT64_MAX };
	const char *ready_file = NULL, *test = "all";
	bool have_to = false, server_only = false, client_only = false;
	uint64_t port = 0, v;
	int role = 0, c;

	tool_name = PROG;
	memcpy(o.sizes, default_sizes, sizeof(default_sizes));
	o.nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
		case 'C':
			if (role && role != c)
				bad_usage("--server and --client are exclusive");
			role = c;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &port) < 0)
				bad_usage("bad --port '%s' (1..65535)", optarg);
			server_only = true;
			break;
		case 't':
			parse_to(optarg, &o.dst);
			o.to = optarg;
			have_to = true;
			break;
		case 's':
			o.sock = optarg;
			break;
		case 'T':
			test = optarg;
			client_only = true;
			break;
		case 'z':
			o.nsizes = parse_size_list("--sizes", optarg, SIZE_LIMIT,
						   o.sizes, MAX_SIZES);
			client_only = true;
			break;
		case 'n':
			if (parse_u64(optarg, 1, 1000000000, &o.iters) < 0)
				bad_usage("bad --iters '%s' (1..1e9)", optarg);
			client_only = true;
			break;
		case 'w':
			if (parse_u64(optarg, 0, 1000000000, &o.warmup) < 0)
				bad_usage("bad --warmup '%s' (0..1e9)", optarg);
			client_only = true;
			break;
		case 'W':
			if (parse_u64(optarg, 1, WINDOW_MAX, &v) < 0)
				bad_usage("bad --window '%s' (1..%u)", optarg,
					  WINDOW_MAX);
			o.window = (unsigned)v;
			client_only = true;
			break;
		case 'r':
			ready_file = optarg;
			server_only = true;
			break;
		case 'o':
			server_only = true;
			break;
		case 'b':
			o.busy = true;
			break;
		case 'j':
			o.json = true;
			client_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt_long has already said what was wrong. */
			return try_help();
		}
	}
	reject_operands(argc, argv);
	if (!role)
		bad_usage("one of --server or --client is required");

	if (role == 'S') {
		if (client_only || have_to)
			bad_usage("client options given with --server");
		if (!port)
			bad_usage("--server needs --port");
		return run_server(o.sock, (uint32_t)port, ready_file, o.busy);
	}
	if (server_only)
		bad_usage("server options given with --client");
	if (!have_to)
		bad_usage("--client needs --to NODE:PORT");
	if (strcmp(test, "all") == 0)
		o.lat = o.bw = o.rate = true;
	else if (strcmp(test, "lat") == 0)
		o.lat = true;
	else if (strcmp(test, "bw") == 0)
		o.bw = true;
	else if (strcmp(test, "rate") == 0)
		o.rate = true;
	else
		bad_usage("bad --test '%s' (lat, bw, rate or all)", test);
	return run_client(&o);
}
