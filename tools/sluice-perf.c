/*
 * sluice-perf - latency, bandwidth and message-rate benchmark over libsluice.
 *
 *   sluice-perf --server --port P [--socket PATH] [--ready-file F] [--busy-poll]
 *   sluice-perf --client --to NODE:PORT [--socket PATH] [--test lat|bw|rate|all]
 *               [--sizes LIST] [--iters N] [--warmup N] [--window W]
 *               [--busy-poll] [--json]
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
 * as unexpected.
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
#define ACK_LEN 8
#define WINDOW_MAX 1024u
#define SIZE_LIMIT (64u << 20)
#define LAT_SLOTS 4		/* server ping buffers; see srv_ping() */
#define MAX_SIZES 64

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
	.arena_hint = "; use a smaller --window or size",
	.invalid_hint = " (size above the daemon's eager_max?)",
};

/* ------------------------------------------------------------------ */
/* Server                                                               */
/* ------------------------------------------------------------------ */

struct srv {
	struct ep e;
	struct op ctrl_rx, done_rx, ready_tx, ack_tx;
	uint8_t *ctrl_buf, *ack_buf;

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
	for (i = 0; i < s->nslots; i++) {
		s->bufs[i] = ep_alloc(&s->e, c->size);
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
	op_init(&s->ready_tx, K_READY, true, client, TAG(K_READY, c->phase),
		NULL, 0);
	op_post(&s->e, &s->ready_tx);
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
	return 0;
}

/* ------------------------------------------------------------------ */
/* Client                                                               */
/* ------------------------------------------------------------------ */

struct result {
	const char *test;
	uint64_t size, iters;
	double median_us, p99_us;	/* < 0: not applicable */
	double mbps, msgps;		/* < 0: not applicable */
};

struct cli {
	struct ep e;
	sl_addr_t dst;		/* as given: node may be SL_NODE_LOCAL */
	sl_addr_t server;	/* as completions name it */
	uint32_t phase;
	unsigned window;
	uint8_t *ctrl_buf;
};

/*
 * Start a phase: announce it and wait until the server has posted its
 * receives.  The READY receive is posted before CTRL is sent, so it is
 * never unexpected either.
 */
static void cli_phase(struct cli *k, uint32_t op, uint64_t size, uint64_t count)
{
	struct ctrl c = { op, ++k->phase, size, count, k->window };
	struct op ctrl_tx, ready_rx;

	op_init(&ready_rx, K_READY, false, SL_ANY_SOURCE,
		TAG(K_READY, k->phase), NULL, 0);
	op_post(&k->e, &ready_rx);
	ctrl_encode(k->ctrl_buf, &c);
	op_init(&ctrl_tx, K_CTRL, true, k->dst, TAG(K_CTRL, k->phase),
		k->ctrl_buf, CTRL_LEN);
	op_post(&k->e, &ctrl_tx);
	while (ready_rx.inflight || ctrl_tx.inflight) {
		struct sl_cqe cqe = ep_next(&k->e);
		struct op *o = op_complete(&k->e, &cqe);

		if (o == &ready_rx) {
			check_len(&k->e, &cqe, o, 0);
			k->server = cqe.peer;
		} else if (o && o != &ctrl_tx) {
			unexpected(&k->e, o);
		}
	}
}

static void cli_lat(struct cli *k, uint64_t size, uint64_t warmup,
		    uint64_t iters, struct result *r)
{
	uint64_t total = warmup + iters, i, *rtt;
	size_t stamp = size < 8 ? size : 8;
	uint8_t *txb, *rxb;
	struct op tx, rx;

	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt)
		die("out of memory");
	txb = ep_alloc(&k->e, size);
	rxb = ep_alloc(&k->e, size);
	memset(txb, 0xa5, size);
	cli_phase(k, OP_LAT, size, total);
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
	r->median_us = percentile(rtt, iters, 50) / 2e3;
	r->p99_us = percentile(rtt, iters, 99) / 2e3;
	r->mbps = r->msgps = -1;
	free(rtt);
}

/* One stream of @count messages; returns nanoseconds from first send to ACK. */
static uint64_t cli_stream(struct cli *k, uint64_t size, uint64_t count)
{
	unsigned w = k->window, nfree = 0, i;
	uint64_t sent = 0, t0, t1 = 0;
	struct op *tx, ack, **freel;
	uint8_t *ackb, **bufs;
	bool acked = false;

	tx = calloc(w, sizeof(*tx));
	freel = calloc(w, sizeof(*freel));
	bufs = calloc(w, sizeof(*bufs));
	if (!tx || !freel || !bufs)
		die("out of memory");
	for (i = 0; i < w; i++) {
		bufs[i] = ep_alloc(&k->e, size);
		memset(bufs[i], (int)i, size);
	}
	ackb = ep_alloc(&k->e, ACK_LEN);
	cli_phase(k, OP_STREAM, size, count);
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
		   uint64_t warmup, uint64_t iters, struct result *r)
{
	double secs;

	if (warmup)
		cli_stream(k, size, warmup);
	secs = cli_stream(k, size, iters) / 1e9;
	r->test = test;
	r->size = size;
	r->iters = iters;
	r->median_us = r->p99_us = -1;
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
	char med[32], p99[32], mbps[32], msgps[32];

	fmt_num(med, sizeof(med), r->median_us, 2);
	fmt_num(p99, sizeof(p99), r->p99_us, 2);
	fmt_num(mbps, sizeof(mbps), r->mbps, 1);
	fmt_num(msgps, sizeof(msgps), r->msgps, 0);
	printf("%-5s %9" PRIu64 " %10" PRIu64 " %10s %10s %10s %11s\n",
	       r->test, r->size, r->iters, med, p99, mbps, msgps);
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
		printf(",\"mb_s\":");
		json_num(r->mbps, 3);
		printf(",\"msg_s\":");
		json_num(r->msgps, 1);
		printf("}");
	}
	printf("\n]\n");
}

struct cli_opts {
	const char *sock;
	sl_addr_t dst;
	bool lat, bw, rate;
	uint64_t sizes[MAX_SIZES];
	unsigned nsizes;
	uint64_t iters;		/* 0: per-test default */
	uint64_t warmup;
	unsigned window;
	bool busy, json;
};

/*
 * Default stream length: 64 MiB of payload, at least 10000 and at most
 * 1e6 messages, so that small sizes run long enough to be measured and
 * large ones do not run for minutes.
 */
static uint64_t bw_iters(uint64_t size)
{
	uint64_t n = size ? (64u << 20) / size : 1000000;

	return n < 10000 ? 10000 : n > 1000000 ? 1000000 : n;
}

static int run_client(const struct cli_opts *o)
{
	struct result *res;
	unsigned n = 0, i;
	struct op done;
	struct cli k;

	memset(&k, 0, sizeof(k));
	k.dst = o->dst;
	k.window = o->window;
	ep_open(&k.e, o->sock, 0, o->window, o->busy, &perf_conf);
	k.ctrl_buf = ep_alloc(&k.e, CTRL_LEN);
	res = calloc(2 * o->nsizes + 1, sizeof(*res));
	if (!res)
		die("out of memory");
	if (!o->json)
		printf("%-5s %9s %10s %10s %10s %10s %11s\n", "test", "size(B)",
		       "iterations", "median(us)", "p99(us)", "MB/s", "msg/s");

	if (o->lat)
		for (i = 0; i < o->nsizes; i++) {
			cli_lat(&k, o->sizes[i], o->warmup,
				o->iters ? o->iters : 10000, &res[n]);
			if (!o->json)
				print_row(&res[n]);
			n++;
		}
	if (o->bw)
		for (i = 0; i < o->nsizes; i++) {
			cli_bw(&k, "bw", o->sizes[i], o->warmup,
			       o->iters ? o->iters : bw_iters(o->sizes[i]),
			       &res[n]);
			if (!o->json)
				print_row(&res[n]);
			n++;
		}
	if (o->rate) {
		cli_bw(&k, "rate", 8, o->warmup, o->iters ? o->iters : 1000000,
		       &res[n]);
		if (!o->json)
			print_row(&res[n]);
		n++;
	}
	if (o->json)
		print_json(res, n);

	/* DONE is accepted by the server's daemon before we close. */
	op_init(&done, K_DONE, true, k.dst, TAG(K_DONE, k.phase + 1), NULL, 0);
	op_post(&k.e, &done);
	while (done.inflight) {
		struct sl_cqe c = ep_next(&k.e);
		struct op *op = op_complete(&k.e, &c);

		if (op && op != &done)
			unexpected(&k.e, op);
	}
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
		"  --sizes LIST      comma-separated sizes, K/M suffix allowed\n"
		"                    (default 8,64,512,4096,16384,65536); lat and bw\n"
		"                    run each, rate always uses 8 B\n"
		"  --iters N         round trips (lat) or messages (bw, rate); default\n"
		"                    10000 for lat, 64 MiB / size within 1e4..1e6\n"
		"                    for bw, 1e6 for rate\n"
		"  --warmup N        unrecorded round trips / messages first (1000)\n"
		"  --window W        sends in flight and receives posted ahead, 1..%u\n"
		"                    (default 64)\n"
		"  --busy-poll       spin on sl_poll() instead of sleeping in sl_wait()\n"
		"  --json            print a JSON array instead of the table\n"
		"  --help            this text\n"
		"Latencies are one-way (RTT/2), nearest-rank median and p99;\n"
		"MB/s is 1e6 payload bytes per second.\n", WINDOW_MAX);
}

static void parse_sizes(const char *arg, struct cli_opts *o)
{
	char *copy = strdup(arg), *save = NULL, *tok;

	if (!copy)
		die("out of memory");
	o->nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == MAX_SIZES)
			bad_usage("--sizes: at most %d sizes", MAX_SIZES);
		if (parse_u64(tok, 0, SIZE_LIMIT, &o->sizes[o->nsizes]) < 0)
			bad_usage("--sizes: bad size '%s' (0..64M)", tok);
		o->nsizes++;
	}
	if (o->nsizes == 0)
		bad_usage("--sizes: empty list");
	free(copy);
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
	struct cli_opts o = { .warmup = 1000, .window = 64 };
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
			parse_sizes(optarg, &o);
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
