/*
 * test_rndv.c - large messages end to end: rendezvous between daemons
 * (RTS, match, registration, RTR, RDMA writes emulated over tcp), the
 * registration cache at its limits, send-queue pressure with injected
 * -ENOMEM, cases C01, C04 and C08 of docs/cases.md, and the
 * one-copy path within a node.
 *
 * Real daemons on TCP loopback (tests/harness.c), clients in forked
 * processes (the loops of tests/client_kit.h) that report through
 * their exit code (enum cl_exit in testutil.h, with a line on stderr)
 * and a shared result page, traffic planned from fixed seeds before the
 * fork.  Daemon
 * state is read from its statistics (SIGUSR1, h_daemon_stats()).  Every
 * wait is bounded.  Each scenario is its own Check test case, so that
 * CK_RUN_CASE=c04_sq_burst (for instance) runs one of them:
 *   local_large            one copy within a node, truncation, 0 capacity
 *   rcache_full            64 concurrent 4 MiB rendezvous, 8 registrations
 *   sq_pressure            sq_depth 4, every 3rd post -ENOMEM, 1,000 msgs
 *   c01_deferred_rtr       RTRs deferred on a full SQ; FIN after a failed
 *                          registration gives the receive back
 *   c04_sq_burst           5,500 sends into a 64-WR SQ, peer killed midway
 *   c08_reset_during_rndv  peer killed with rendezvous in flight, cache
 *                          disabled and enabled
 * The kill-and-restart cases end with one more check, last so that the
 * others run first: every send that completed SL_OK reached a receiver.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sluice.h"
#include "testutil.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define EAGER_MAX 65536u	/* the daemons' default eager_max */
#define CHUNK (2u * MiB)	/* the default [rcache] chunk_bytes */
/* sl_alloc()'s block header (libclient/arena.c): the first allocation of
 * a fresh queue starts this far into the arena. */
#define ARENA_FIRST_OFF 64u

/* ------------------------------------------------------------------ */
/* Client processes: buffers, completions, posts                        */
/* ------------------------------------------------------------------ */

/*
 * @n buffers of @len bytes each starting on a multiple of @align arena
 * offset (the registration cache widens ranges to whole chunks of arena
 * offsets, so chunk-aligned buffers make its byte counts exact).  Must be
 * the queue's first allocation: that one starts at ARENA_FIRST_OFF.
 */
static void cl_alloc_aligned(struct cl *c, uint8_t **bufs, unsigned n, size_t len,
			     size_t align)
{
	size_t stride = (len + align - 1) / align * align;
	uint8_t *blk = cl_alloc(c, stride * n + align), *base = blk - ARENA_FIRST_OFF;
	size_t off = ((size_t)(blk - base) + align - 1) / align * align;
	unsigned i;

	for (i = 0; i < n; i++)
		bufs[i] = base + off + (size_t)i * stride;
}

/* ---- test process helpers ---- */

/* Post one send and wait for its completion, which names @tag too. */
static struct sl_cqe g_send(struct sl_queue *q, sl_addr_t dst, uint64_t tag, const void *buf,
			    size_t len, uint64_t ctx)
{
	struct sl_cqe cqe = send_wait(q, dst, tag, buf, len, ctx, 10000);

	H_EQ(cqe.tag, tag);
	return cqe;
}

/* ---- daemon statistics ---- */

static uint64_t link_stat(const struct h_stats *st, const char *peer, const char *field)
{
	char name[96];

	snprintf(name, sizeof(name), "link.%s.%s", peer, field);
	return h_stats_u64(st, name);
}

/* What must read 0 on a link once nothing is under way on it. */
static const char *const link_busy_fields[] = {
	"backlog", "unacked", "rndv_tx", "rndv_rx", "writes_pending",
};
#define N_LINK_BUSY (sizeof(link_busy_fields) / sizeof(link_busy_fields[0]))

/*
 * Poll @d's statistics (bounded by @ms) until its links to @peers have
 * nothing queued, unacknowledged or under way, and its registration cache
 * has no waiter and accounts for every registration (regs == deregs +
 * regions); fail naming what is left.  The last snapshot goes to @st.
 */
static void wait_daemon_idle(const struct h_daemon *d, const char *const *peers,
			     unsigned n_peers, int ms, struct h_stats *st)
{
	int64_t deadline = h_now_ms() + ms;
	char why[512];

	for (;;) {
		size_t len = 0;
		unsigned i, k;
		uint64_t regs, deregs, regions, waiting;

		h_daemon_stats(d, st);
		why[0] = '\0';
		for (i = 0; i < n_peers; i++) {
			for (k = 0; k < N_LINK_BUSY; k++) {
				uint64_t v = link_stat(st, peers[i], link_busy_fields[k]);

				if (v && len < sizeof(why))
					len += (size_t)snprintf(why + len, sizeof(why) - len,
								"link.%s.%s %llu; ", peers[i],
								link_busy_fields[k], (unsigned long long)v);
			}
		}
		regs = h_stats_u64(st, "rcache.regs");
		deregs = h_stats_u64(st, "rcache.deregs");
		regions = h_stats_u64(st, "rcache.regions");
		waiting = h_stats_u64(st, "rcache.waiting");
		if ((regs != deregs + regions || waiting) && len < sizeof(why))
			len += (size_t)snprintf(why + len, sizeof(why) - len,
						"rcache regs %llu deregs %llu regions %llu waiting %llu",
						(unsigned long long)regs, (unsigned long long)deregs,
						(unsigned long long)regions, (unsigned long long)waiting);
		if (!why[0])
			return;
		H_ASSERT(h_now_ms() < deadline, "daemon %s not idle %d ms after the traffic: %s",
			 d->name, ms, why);
		h_sleep_ms(20);
	}
}

/* The registration cache of @d holds at most @max_regions entries and
 * @max_bytes bytes, and accounts for every registration. */
static void expect_rcache_level(const struct h_daemon *d, const struct h_stats *st,
				uint64_t max_regions, uint64_t max_bytes)
{
	uint64_t regions = h_stats_u64(st, "rcache.regions");
	uint64_t bytes = h_stats_u64(st, "rcache.bytes");
	uint64_t regs = h_stats_u64(st, "rcache.regs");
	uint64_t deregs = h_stats_u64(st, "rcache.deregs");
	uint64_t mrs = h_stats_u64(st, "xport.mrs");

	H_ASSERT(regions <= max_regions && bytes <= max_bytes,
		 "daemon %s: rcache holds %llu regions, %llu bytes; at most %llu and %llu allowed",
		 d->name, (unsigned long long)regions, (unsigned long long)bytes,
		 (unsigned long long)max_regions, (unsigned long long)max_bytes);
	H_ASSERT(regs == deregs + regions, "daemon %s: rcache regs %llu != deregs %llu + "
		 "regions %llu", d->name, (unsigned long long)regs, (unsigned long long)deregs,
		 (unsigned long long)regions);
	H_ASSERT(mrs == regions, "daemon %s: the transport holds %llu MRs, the cache %llu "
		 "regions", d->name, (unsigned long long)mrs, (unsigned long long)regions);
}

/* Once every queue is closed nothing stays registered (bounded poll). */
static void wait_rcache_empty(const struct h_daemon *d, int ms)
{
	int64_t deadline = h_now_ms() + ms;
	static struct h_stats st;

	for (;;) {
		uint64_t regions, bytes, mrs, regs, deregs;

		h_daemon_stats(d, &st);
		regions = h_stats_u64(&st, "rcache.regions");
		bytes = h_stats_u64(&st, "rcache.bytes");
		mrs = h_stats_u64(&st, "xport.mrs");
		regs = h_stats_u64(&st, "rcache.regs");
		deregs = h_stats_u64(&st, "rcache.deregs");
		if (!regions && !bytes && !mrs && regs == deregs)
			return;
		H_ASSERT(h_now_ms() < deadline, "daemon %s: %d ms after its queues closed the "
			 "cache holds %llu regions, %llu bytes, the transport %llu MRs (regs %llu, "
			 "deregs %llu)", d->name, ms, (unsigned long long)regions,
			 (unsigned long long)bytes, (unsigned long long)mrs,
			 (unsigned long long)regs, (unsigned long long)deregs);
		h_sleep_ms(20);
	}
}

/* ------------------------------------------------------------------ */
/* 1. rcache_full: 64 concurrent 4 MiB rendezvous, 8 registrations      */
/* ------------------------------------------------------------------ */

/*
 * Four senders S0..S3 on node A, each paired with a receiver R0..R3 on
 * node B.  Every receiver posts 16 receives of 4 MiB with distinct tags
 * first; then every sender posts its 16 sends at once: 64 rendezvous that
 * each need a registration on both daemons, where [rcache] allows 8 (and 8
 * waiters).  Each send completes once, SL_OK or SL_NAK_BUSY; a NAKed send
 * left its receive posted and is posted again until it goes through.
 */
#define R_PAIRS 4
#define R_PER 16
#define R_TOTAL (R_PAIRS * R_PER)
#define R_LEN (4u * MiB)
#define R_TAG0 100u
#define R_MAX_ROUNDS 500

static const char *const r_names[2 * R_PAIRS] = {
	"S0", "S1", "S2", "S3", "R0", "R1", "R2", "R3",
};

struct r_result {
	uint32_t ok1, nak1;	/* first round */
	uint32_t naks, rounds;	/* all rounds */
	uint32_t received;
	int64_t ms;
};

struct r_shared {
	struct r_result snd[R_PAIRS], rcv[R_PAIRS];
};

struct r_sender {
	struct cl c;
	int me;
	sl_addr_t dst;
	uint8_t *buf[R_PER];
	bool pending[R_PER];
	bool seen[R_PER];	/* completed in this round */
	uint32_t round, n_in_round, done_in_round, ok, nak;
};

static void r_sender_cqe(void *arg, const struct sl_cqe *e)
{
	struct r_sender *s = arg;
	uint32_t j = CTX_INDEX(e->user_ctx) & 0xffff, round = CTX_INDEX(e->user_ctx) >> 16;

	CL_REQUIRE(CTX_KIND(e->user_ctx) == CTX_SEND && round == s->round && j < R_PER &&
		   s->pending[j] && !s->seen[j], CL_E_CTX, "send ctx %#llx in round %u",
		   (unsigned long long)e->user_ctx, s->round);
	s->seen[j] = true;
	CL_REQUIRE(e->opcode == SL_OP_SEND && e->len == R_LEN && e->tag == R_TAG0 + j &&
		   addr_eq(e->peer, s->dst), CL_E_META, "send %u: opcode %u len %llu tag %llu",
		   j, e->opcode, (unsigned long long)e->len, (unsigned long long)e->tag);
	if (e->status == SL_OK) {
		s->pending[j] = false;
		s->ok++;
	} else {
		CL_REQUIRE(e->status == SL_NAK_BUSY, CL_E_STATUS, "send %u round %u: %s", j,
			   s->round, sl_strerror(e->status));
		s->nak++;
	}
	s->done_in_round++;
}

static void r_sender_run(int me, const struct h_daemon *nodes, struct barrier *b,
			 struct hold *h, struct r_shared *sh)
{
	struct r_sender *s = calloc(1, sizeof(*s));
	char what[48];
	int64_t t0;
	unsigned j;

	CL_REQUIRE(s, CL_E_SETUP, "out of memory");
	cl_name = r_names[me];
	s->me = me;
	s->dst = (sl_addr_t){ nodes[1].node, 2001u + (unsigned)me };
	cl_open(&s->c, &nodes[0], 1001u + (unsigned)me, 64);
	cl_alloc_aligned(&s->c, s->buf, R_PER, R_LEN, CHUNK);
	for (j = 0; j < R_PER; j++) {
		msg_fill(s->buf[j], R_LEN, (uint32_t)me, j, R_TAG0 + j);
		s->pending[j] = true;
	}
	barrier_arrive(b);
	t0 = h_now_ms();
	while (s->ok < R_PER) {
		s->round++;
		CL_REQUIRE(s->round <= R_MAX_ROUNDS, CL_E_TIMEOUT, "%u sends still NAKed after %u "
			   "rounds", R_PER - s->ok, R_MAX_ROUNDS);
		memset(s->seen, 0, sizeof(s->seen));
		s->n_in_round = s->done_in_round = 0;
		/* All of the round's sends at once: they are concurrent. */
		for (j = 0; j < R_PER; j++) {
			if (!s->pending[j])
				continue;
			cl_post(&s->c, true, s->dst, R_TAG0 + j, s->buf[j], R_LEN,
				CTX_SEND | (uint64_t)s->round << 16 | j, r_sender_cqe, s);
			s->n_in_round++;
		}
		snprintf(what, sizeof(what), "round %u: sends completed", s->round);
		cl_pump_until(&s->c, r_sender_cqe, s, &s->done_in_round, s->n_in_round, what);
		if (s->round == 1) {
			sh->snd[me].ok1 = s->ok;
			sh->snd[me].nak1 = s->nak;
		}
	}
	cl_expect_quiet(&s->c, 20);
	sh->snd[me].naks = s->nak;
	sh->snd[me].rounds = s->round;
	sh->snd[me].ms = h_now_ms() - t0;
	hold_here(h);
	cl_close(&s->c);
	_exit(CL_OK);
}

struct r_receiver {
	struct cl c;
	int me;
	sl_addr_t src;
	uint8_t *buf[R_PER];
	uint8_t seen[R_PER];
	uint32_t received;
};

static void r_receiver_cqe(void *arg, const struct sl_cqe *e)
{
	struct r_receiver *r = arg;
	uint32_t j = ctx_once(e, CTX_RECV, R_PER, r->seen);

	cqe_expect_ok(e, j, SL_OP_RECV, R_LEN, R_TAG0 + j, r->src);
	CL_REQUIRE(msg_check(r->buf[j], R_LEN, (uint32_t)r->me, j, R_TAG0 + j), CL_E_DATA,
		   "recv %u: payload differs", j);
	r->received++;
}

static void r_receiver_run(int me, const struct h_daemon *nodes, struct barrier *b,
			   struct hold *h, struct r_shared *sh)
{
	struct r_receiver *r = calloc(1, sizeof(*r));
	int64_t t0;
	unsigned j;

	CL_REQUIRE(r, CL_E_SETUP, "out of memory");
	cl_name = r_names[R_PAIRS + me];
	r->me = me;
	r->src = (sl_addr_t){ nodes[0].node, 1001u + (unsigned)me };
	cl_open(&r->c, &nodes[1], 2001u + (unsigned)me, 64);
	cl_alloc_aligned(&r->c, r->buf, R_PER, R_LEN, CHUNK);
	for (j = 0; j < R_PER; j++)
		cl_post(&r->c, false, r->src, R_TAG0 + j, r->buf[j], R_LEN, CTX_RECV | j,
			r_receiver_cqe, r);
	barrier_arrive(b);
	t0 = h_now_ms();
	cl_pump_until(&r->c, r_receiver_cqe, r, &r->received, R_PER, "received");
	cl_expect_quiet(&r->c, 20);
	sh->rcv[me].received = r->received;
	sh->rcv[me].ms = h_now_ms() - t0;
	hold_here(h);
	cl_close(&r->c);
	_exit(CL_OK);
}

static void rcache_full_run(const char *label, uint32_t max_regions, const char *conf)
{
	static const char *const names[] = { "A", "B" };
	static const char *const peer_of[2][1] = { { "B" }, { "A" } };
	static struct h_stats st;
	struct h_daemon nodes[2];
	struct r_shared *sh;
	struct barrier b;
	struct hold h;
	pid_t pids[2 * R_PAIRS];
	uint32_t ok1 = 0, nak1 = 0, naks = 0, rounds = 0, received = 0;
	uint64_t regions[2], bytes[2], rnaks[2], waits[2], timeouts[2];
	int64_t t0;
	unsigned i;

	h_cluster_start_conf(nodes, names, 2, conf);
	sh = shared_alloc(sizeof(*sh));
	barrier_init(&b);
	hold_init(&h);
	for (i = 0; i < 2 * R_PAIRS; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			if (i < R_PAIRS)
				r_sender_run((int)i, nodes, &b, &h, sh);
			r_receiver_run((int)(i - R_PAIRS), nodes, &b, &h, sh);
		}
	}
	barrier_release(&b, pids, r_names, 2 * R_PAIRS);
	t0 = h_now_ms();
	hold_wait_done(&h, 2 * R_PAIRS, 90000, pids, r_names, 2 * R_PAIRS);
	/* Every queue still open: the cache is at its idle level, holding
	 * at most max_regions chunk-aligned 4 MiB buffers. */
	for (i = 0; i < 2; i++) {
		wait_daemon_idle(&nodes[i], peer_of[i], 1, 3000, &st);
		expect_rcache_level(&nodes[i], &st, max_regions,
				    (uint64_t)(max_regions < R_TOTAL ? max_regions : R_TOTAL) *
					    R_LEN + CHUNK);
		regions[i] = h_stats_u64(&st, "rcache.regions");
		bytes[i] = h_stats_u64(&st, "rcache.bytes");
		rnaks[i] = h_stats_u64(&st, "rcache.naks");
		waits[i] = h_stats_u64(&st, "rcache.waits");
		timeouts[i] = h_stats_u64(&st, "rcache.timeouts");
	}
	hold_release(&h, 2 * R_PAIRS);
	expect_clients_ok(pids, r_names, 2 * R_PAIRS, 30000);
	for (i = 0; i < R_PAIRS; i++) {
		ok1 += sh->snd[i].ok1;
		nak1 += sh->snd[i].nak1;
		naks += sh->snd[i].naks;
		if (sh->snd[i].rounds > rounds)
			rounds = sh->snd[i].rounds;
		H_EQ(sh->rcv[i].received, R_PER);
		received += sh->rcv[i].received;
	}
	printf("%s: first round %u OK + %u NAK_BUSY of %u; %u NAKs in all, up to %u rounds; "
	       "%u received and verified, %lld ms; rcache A/B: %llu/%llu regions, %llu/%llu "
	       "MiB, %llu/%llu NAKs, %llu/%llu waits, %llu/%llu timeouts\n", label, ok1, nak1,
	       R_TOTAL, naks, rounds, received, (long long)(h_now_ms() - t0),
	       (unsigned long long)regions[0], (unsigned long long)regions[1],
	       (unsigned long long)(bytes[0] / MiB), (unsigned long long)(bytes[1] / MiB),
	       (unsigned long long)rnaks[0], (unsigned long long)rnaks[1],
	       (unsigned long long)waits[0], (unsigned long long)waits[1],
	       (unsigned long long)timeouts[0], (unsigned long long)timeouts[1]);
	H_EQ(ok1 + nak1, R_TOTAL);
	H_EQ(received, R_TOTAL);
	if (max_regions >= R_TOTAL) {
		H_EQ(nak1, 0);
		H_EQ(naks, 0);
	} else {
		/* 64 at once against 8 regions and 8 waiters: the NAK path ran. */
		H_ASSERT(nak1 > 0, "no send was NAKed with %u regions for %u rendezvous",
			 max_regions, R_TOTAL);
	}
	for (i = 0; i < 2; i++) {
		H_ASSERT(h_daemon_alive(&nodes[i]), "daemon %s died", nodes[i].name);
		wait_rcache_empty(&nodes[i], 3000);
	}
	shared_free(sh, sizeof(*sh));
	h_cluster_stop(nodes, 2);
}

START_TEST(rcache_full_naks)
{
	rcache_full_run("rcache_full_naks", 8,
			"[rcache]\nmax_regions = 8\nmax_waiters = 8\n"
			"[limits]\narena_bytes = 96M\n");
}
END_TEST

START_TEST(rcache_roomy_no_naks)
{
	rcache_full_run("rcache_roomy_no_naks", 1024,
			"[rcache]\nmax_regions = 1024\n[limits]\narena_bytes = 96M\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* 2. sq_pressure: 4-entry send queues, every 3rd post fails -ENOMEM    */
/* ------------------------------------------------------------------ */

/*
 * A1 (node A) and B1 (node B) each send 500 messages to the other at the
 * same time, sizes 0 B to 8 MiB (most eager, about 1 in 10 rendezvous),
 * one tag, receives posted in order in a window that starts 20 ms late
 * (early arrivals take the unexpected path).  Messages from one source
 * match in send order, so receive k must get message k, eager or not.
 */
#define P_MSGS 500		/* per direction */
#define P_MAX (8u * MiB)
#define P_TAG 31u
#define P_SEND_WIN 32
#define P_RECV_WIN 32
#define P_RECV_DELAY_MS 20

static const char *const p_names[2] = { "A1", "B1" };
static uint32_t p_plan[2][P_MSGS];

static void p_make_plan(uint64_t seed)
{
	struct rng r = { seed };
	unsigned c, i;

	for (c = 0; c < 2; c++) {
		for (i = 0; i < P_MSGS; i++) {
			uint32_t len;

			if (rng_below(&r, 10) == 0) {
				/* (2^(k-1), 2^k] for k in 17..23: 64 KiB + 1 .. 8 MiB,
				 * spread over the sizes, not the bytes. */
				uint32_t k = 17 + rng_below(&r, 7);

				len = (1u << k) - rng_below(&r, 1u << (k - 1));
			} else if (rng_below(&r, 4) == 0) {
				len = rng_below(&r, EAGER_MAX + 1);
			} else {
				len = rng_below(&r, 4097);
			}
			p_plan[c][i] = len;
		}
		/* The edges, from both sides. */
		p_plan[c][0] = 0;
		p_plan[c][1] = EAGER_MAX;
		p_plan[c][2] = EAGER_MAX + 1;
		p_plan[c][3] = P_MAX;
		p_plan[c][4] = 1;
		p_plan[c][P_MSGS - 1] = P_MAX;
	}
}

struct p_result {
	uint64_t bytes_in, large_in;
	int64_t ms;
};

struct p_state {
	struct cl c;
	int me;
	sl_addr_t peer;
	uint8_t *sbuf[P_MSGS], *rbuf[P_MSGS];
	uint8_t sseen[P_MSGS], rseen[P_MSGS];
	uint32_t next_send, send_out, send_done, next_recv, recv_out, recv_done;
	struct p_result res;
};

static void p_cqe(void *arg, const struct sl_cqe *e)
{
	struct p_state *s = arg;
	uint32_t k = CTX_INDEX(e->user_ctx);
	int other = 1 - s->me;

	if (CTX_KIND(e->user_ctx) == CTX_SEND) {
		(void)ctx_once(e, CTX_SEND, s->next_send, s->sseen);
		cqe_expect_ok(e, k, SL_OP_SEND, p_plan[s->me][k], P_TAG, s->peer);
		s->send_out--;
		s->send_done++;
		return;
	}
	(void)ctx_once(e, CTX_RECV, s->next_recv, s->rseen);
	if (e->status != SL_OK || e->len != p_plan[other][k]) {
		struct msg_hdr h;
		size_t n = e->len < p_plan[other][k] ? e->len : p_plan[other][k];

		if (msg_decode(s->rbuf[k], n, &h))
			CL_DIE(CL_E_META, "recv %u (%u bytes): %s, len %llu; it holds message %u "
			       "(%llu bytes)", k, p_plan[other][k], sl_strerror(e->status),
			       (unsigned long long)e->len, h.seq, (unsigned long long)h.len);
		CL_DIE(CL_E_META, "recv %u (%u bytes): %s, len %llu", k, p_plan[other][k],
		       sl_strerror(e->status), (unsigned long long)e->len);
	}
	CL_REQUIRE(e->opcode == SL_OP_RECV && e->tag == P_TAG && addr_eq(e->peer, s->peer),
		   CL_E_META, "recv %u: opcode %u tag %llu peer %08x:%u", k, e->opcode,
		   (unsigned long long)e->tag, e->peer.node, e->peer.port);
	CL_REQUIRE(msg_check(s->rbuf[k], e->len, (uint32_t)other, k, P_TAG), CL_E_DATA,
		   "recv %u (%llu bytes): payload differs", k, (unsigned long long)e->len);
	s->res.bytes_in += e->len;
	s->res.large_in += e->len > EAGER_MAX;
	s->recv_out--;
	s->recv_done++;
}

static void p_client_run(int me, const struct h_daemon *nodes, struct barrier *b,
			 struct p_result *out)
{
	struct p_state *s = calloc(1, sizeof(*s));
	int other = 1 - me;
	int64_t t0, last;
	unsigned i;

	CL_REQUIRE(s, CL_E_SETUP, "out of memory");
	cl_name = p_names[me];
	s->me = me;
	s->peer = (sl_addr_t){ nodes[other].node, 1001u + (unsigned)other };
	cl_open(&s->c, &nodes[me], 1001u + (unsigned)me, 128);
	for (i = 0; i < P_MSGS; i++) {
		s->sbuf[i] = cl_alloc(&s->c, p_plan[me][i]);
		msg_fill(s->sbuf[i], p_plan[me][i], (uint32_t)me, i, P_TAG);
		s->rbuf[i] = cl_alloc(&s->c, p_plan[other][i]);
	}
	barrier_arrive(b);
	t0 = last = h_now_ms();
	while (s->send_done < P_MSGS || s->recv_done < P_MSGS) {
		bool progress = false;
		int rc;

		while (s->next_send < P_MSGS && s->send_out < P_SEND_WIN) {
			uint32_t k = s->next_send;

			rc = sl_send(s->c.q, s->peer, P_TAG, s->sbuf[k], p_plan[me][k], CTX_SEND | k);
			if (rc == -EAGAIN)
				break;
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_send %u: %s", k, strerror(-rc));
			s->next_send++;
			s->send_out++;
			progress = true;
		}
		while (s->next_recv < P_MSGS && s->recv_out < P_RECV_WIN &&
		       h_now_ms() - t0 >= P_RECV_DELAY_MS) {
			uint32_t k = s->next_recv;

			rc = sl_recv(s->c.q, s->peer, P_TAG, ~0ull, s->rbuf[k], p_plan[other][k],
				     CTX_RECV | k);
			if (rc == -EAGAIN)
				break;
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv %u: %s", k, strerror(-rc));
			s->next_recv++;
			s->recv_out++;
			progress = true;
		}
		if (cl_pump(&s->c, p_cqe, s, progress ? 0 : 1, false) > 0 || progress)
			last = h_now_ms();
		CL_REQUIRE(h_now_ms() - last < CL_STALL_MS, CL_E_TIMEOUT,
			   "stalled: sent %u/%u (out %u), received %u/%u (posted %u)", s->send_done,
			   P_MSGS, s->send_out, s->recv_done, P_MSGS, s->next_recv);
	}
	cl_expect_quiet(&s->c, 20);
	s->res.ms = h_now_ms() - t0;
	*out = s->res;
	cl_close(&s->c);
	_exit(CL_OK);
}

START_TEST(sq_pressure)
{
	static const char *const names[] = { "A", "B" };
	static const char *const peer_of[2][1] = { { "B" }, { "A" } };
	static struct h_stats st;
	struct h_daemon nodes[2];
	struct p_result *res;
	struct barrier b;
	pid_t pids[2];
	uint64_t planned = 0, large = 0, faults[2], enomem[2], deferred[2];
	int64_t t0;
	unsigned i, c;

	h_cluster_start_conf(nodes, names, 2,
			     "[transport]\nsq_depth = 4\n[fault]\npost_enomem_every = 3\n"
			     "[limits]\narena_bytes = 512M\n");
	p_make_plan(20240917);
	for (c = 0; c < 2; c++) {
		for (i = 0; i < P_MSGS; i++) {
			planned += p_plan[c][i];
			large += p_plan[c][i] > EAGER_MAX;
		}
	}
	res = shared_alloc(sizeof(*res) * 2);
	barrier_init(&b);
	for (i = 0; i < 2; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			p_client_run((int)i, nodes, &b, &res[i]);
		}
	}
	barrier_release(&b, pids, p_names, 2);
	t0 = h_now_ms();
	expect_clients_ok(pids, p_names, 2, 100000);
	for (i = 0; i < 2; i++) {
		H_ASSERT(h_daemon_alive(&nodes[i]), "daemon %s died", nodes[i].name);
		wait_daemon_idle(&nodes[i], peer_of[i], 1, 3000, &st);
		faults[i] = h_stats_u64(&st, "xport.faults_injected");
		enomem[i] = h_stats_u64(&st, "xport.post_enomem");
		deferred[i] = link_stat(&st, peer_of[i][0], "ctl_deferred");
		H_ASSERT(faults[i] > 0, "daemon %s: no fault injected", nodes[i].name);
	}
	H_EQ(res[0].bytes_in + res[1].bytes_in, planned);
	H_EQ(res[0].large_in + res[1].large_in, large);
	printf("sq_pressure: %u messages (%llu rendezvous), %.1f MiB, all delivered once and "
	       "verified in %lld ms; A/B: %llu/%llu posts refused (%llu/%llu injected), "
	       "%llu/%llu control frames deferred\n", 2 * P_MSGS, (unsigned long long)large,
	       planned / (double)MiB, (long long)(h_now_ms() - t0), (unsigned long long)enomem[0],
	       (unsigned long long)enomem[1], (unsigned long long)faults[0],
	       (unsigned long long)faults[1], (unsigned long long)deferred[0],
	       (unsigned long long)deferred[1]);
	shared_free(res, sizeof(*res) * 2);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 3. C01: an RTR that cannot be posted is sent later, by the daemon    */
/* ------------------------------------------------------------------ */

/*
 * Daemon B has a 4-entry send queue per connection (one slot reserved for
 * control frames) and reports send completions 300 ms after the data left,
 * so its queues stay full.  B1 sends 64 eager 1 KiB messages to C1, which
 * posts no receive yet, and D_FILL to A2: B's queue toward A is full of
 * data with more in its backlog.  A1 sends D_BIG rendezvous of 4 MiB to
 * B1; their RTSs wait unexpected at B (header only).  B1 posts the
 * receives: D_BIG RTRs at once find at most the one reserved slot, so at
 * least D_BIG - 1 are deferred.  B1 then only waits; 200 ms later C1
 * posts its receives.  The RTRs must go out as B's completions free
 * slots, with no call from any client.
 */
#define D_SMALL 64
#define D_SMALL_LEN 1024u
#define D_FILL 24
#define D_BIG 4
#define D_BIG_LEN (4u * MiB)
#define D_TAG_C 7u
#define D_TAG_BIG 1u
#define D_TAG_FILL 8u
#define D_DELAY_US 300000
#define D_RTR_BOUND_MS 2000	/* receive posted to data in place */

enum { D_A1, D_A2, D_B1, D_C1, D_N };
static const char *const d_names[D_N] = { "A1", "A2", "B1", "C1" };
static const unsigned d_node[D_N] = { 0, 0, 1, 2 };
static const uint32_t d_port[D_N] = { 1001, 1002, 2001, 3001 };

struct d_shared {
	int64_t big_recv_ms[D_BIG];	/* receive posted to its completion */
	int64_t big_send_ms[D_BIG];	/* A1: send posted to its completion */
	uint32_t c1_received, a2_received, b1_sent;
};

struct d_chans {
	struct chan b1_evt, b1_go, a1_evt, a1_go, c1_go;
};

static sl_addr_t d_addr(const struct h_daemon *nodes, int who)
{
	return (sl_addr_t){ nodes[d_node[who]].node, d_port[who] };
}

/* One client's bookkeeping: which completions it expects, and checks. */
struct d_state {
	struct cl c;
	const struct h_daemon *nodes;
	struct d_shared *sh;
	uint8_t *sbuf[D_SMALL + D_FILL], *rbig[D_BIG], *rsmall[D_SMALL];
	uint8_t seen[256];
	uint32_t expect, got;
	int64_t t_post;
};

static void d_b1_cqe(void *arg, const struct sl_cqe *e)
{
	struct d_state *s = arg;
	uint32_t k = CTX_INDEX(e->user_ctx);

	CL_REQUIRE(k < sizeof(s->seen) && !s->seen[k], CL_E_CTX, "ctx %#llx",
		   (unsigned long long)e->user_ctx);
	s->seen[k] = 1;
	CL_REQUIRE(e->status == SL_OK, CL_E_STATUS, "ctx %#llx: %s",
		   (unsigned long long)e->user_ctx, sl_strerror(e->status));
	if (CTX_KIND(e->user_ctx) == CTX_SEND) {
		bool to_c = k < D_SMALL;

		cqe_expect_ok(e, k, SL_OP_SEND, D_SMALL_LEN, to_c ? D_TAG_C : D_TAG_FILL,
			      d_addr(s->nodes, to_c ? D_C1 : D_A2));
		s->sh->b1_sent++;
	} else {
		uint32_t j = k - 128;

		CL_REQUIRE(CTX_KIND(e->user_ctx) == CTX_RECV && k >= 128 && j < D_BIG, CL_E_CTX,
			   "ctx %#llx", (unsigned long long)e->user_ctx);
		cqe_expect_ok(e, j, SL_OP_RECV, D_BIG_LEN, D_TAG_BIG, d_addr(s->nodes, D_A1));
		/* One source, one tag: receive j matched message j. */
		CL_REQUIRE(msg_check(s->rbig[j], D_BIG_LEN, D_A1, j, D_TAG_BIG), CL_E_DATA,
			   "big recv %u: payload differs", j);
		s->sh->big_recv_ms[j] = h_now_ms() - s->t_post;
	}
	s->got++;
}

static void d_b1_run(const struct h_daemon *nodes, struct barrier *b, struct d_chans *ch,
		     struct d_shared *sh)
{
	static struct d_state s;
	unsigned j;

	cl_name = d_names[D_B1];
	s.nodes = nodes;
	s.sh = sh;
	cl_open(&s.c, &nodes[1], d_port[D_B1], 256);
	for (j = 0; j < D_BIG; j++)
		s.rbig[j] = cl_alloc(&s.c, D_BIG_LEN);
	for (j = 0; j < D_SMALL + D_FILL; j++) {
		bool to_c = j < D_SMALL;

		s.sbuf[j] = cl_alloc(&s.c, D_SMALL_LEN);
		msg_fill(s.sbuf[j], D_SMALL_LEN, D_B1, j, to_c ? D_TAG_C : D_TAG_FILL);
	}
	barrier_arrive(b);
	for (j = 0; j < D_SMALL + D_FILL; j++) {
		bool to_c = j < D_SMALL;

		cl_post(&s.c, true, d_addr(nodes, to_c ? D_C1 : D_A2), to_c ? D_TAG_C : D_TAG_FILL,
			s.sbuf[j], D_SMALL_LEN, CTX_SEND | j, d_b1_cqe, &s);
	}
	cl_signal(ch->b1_evt.fd[1], "sends posted");
	cl_await(ch->b1_go.fd[0], 30000, "go for the receives");
	s.t_post = h_now_ms();
	for (j = 0; j < D_BIG; j++)
		cl_post(&s.c, false, d_addr(nodes, D_A1), D_TAG_BIG, s.rbig[j], D_BIG_LEN,
			CTX_RECV | (128 + j), d_b1_cqe, &s);
	cl_signal(ch->b1_evt.fd[1], "receives posted");
	/* From here B1 only waits: whatever is deferred, the daemon sends. */
	s.expect = D_SMALL + D_FILL + D_BIG;
	cl_pump_until(&s.c, d_b1_cqe, &s, &s.got, s.expect, "completions");
	cl_expect_quiet(&s.c, 20);
	cl_close(&s.c);
	_exit(CL_OK);
}

/* A2 and C1: receive B1's eager messages, verify them. */
static void d_sink_cqe(void *arg, const struct sl_cqe *e)
{
	struct d_state *s = arg;
	uint32_t k = ctx_once(e, CTX_RECV, s->expect, s->seen);
	bool c1 = s->expect == D_SMALL;
	uint64_t tag = c1 ? D_TAG_C : D_TAG_FILL;
	uint32_t seq = c1 ? k : D_SMALL + k;

	cqe_expect_ok(e, k, SL_OP_RECV, D_SMALL_LEN, tag, d_addr(s->nodes, D_B1));
	CL_REQUIRE(msg_check(s->rsmall[k], D_SMALL_LEN, D_B1, seq, tag), CL_E_DATA,
		   "recv %u: payload differs", k);
	s->got++;
}

static void d_sink_run(int who, const struct h_daemon *nodes, struct barrier *b,
		       struct d_chans *ch, struct d_shared *sh)
{
	static struct d_state s;
	bool c1 = who == D_C1;
	unsigned j;

	cl_name = d_names[who];
	s.nodes = nodes;
	s.sh = sh;
	s.expect = c1 ? D_SMALL : D_FILL;
	cl_open(&s.c, &nodes[d_node[who]], d_port[who], 128);
	for (j = 0; j < s.expect; j++)
		s.rsmall[j] = cl_alloc(&s.c, D_SMALL_LEN);
	if (!c1)
		for (j = 0; j < s.expect; j++)
			cl_post(&s.c, false, d_addr(nodes, D_B1), D_TAG_FILL, s.rsmall[j],
				D_SMALL_LEN, CTX_RECV | j, d_sink_cqe, &s);
	barrier_arrive(b);
	if (c1) {
		cl_await(ch->c1_go.fd[0], 30000, "go for the receives");
		for (j = 0; j < s.expect; j++)
			cl_post(&s.c, false, d_addr(nodes, D_B1), D_TAG_C, s.rsmall[j], D_SMALL_LEN,
				CTX_RECV | j, d_sink_cqe, &s);
	}
	cl_pump_until(&s.c, d_sink_cqe, &s, &s.got, s.expect, "received");
	cl_expect_quiet(&s.c, 20);
	if (c1)
		sh->c1_received = s.got;
	else
		sh->a2_received = s.got;
	cl_close(&s.c);
	_exit(CL_OK);
}

struct d_a1 {
	const struct h_daemon *nodes;
	struct d_shared *sh;
	int64_t t_post;
	uint8_t seen[D_BIG];
	uint32_t got;
};

static void d_a1_cqe(void *arg, const struct sl_cqe *e)
{
	struct d_a1 *s = arg;
	uint32_t j = ctx_once(e, CTX_SEND, D_BIG, s->seen);

	cqe_expect_ok(e, j, SL_OP_SEND, D_BIG_LEN, D_TAG_BIG, d_addr(s->nodes, D_B1));
	s->sh->big_send_ms[j] = h_now_ms() - s->t_post;
	s->got++;
}

static void d_a1_run(const struct h_daemon *nodes, struct barrier *b, struct d_chans *ch,
		     struct d_shared *sh)
{
	struct d_a1 s = { .nodes = nodes, .sh = sh };
	uint8_t *buf[D_BIG];
	struct cl c;
	unsigned j;

	cl_name = d_names[D_A1];
	cl_open(&c, &nodes[0], d_port[D_A1], 64);
	for (j = 0; j < D_BIG; j++) {
		buf[j] = cl_alloc(&c, D_BIG_LEN);
		msg_fill(buf[j], D_BIG_LEN, D_A1, j, D_TAG_BIG);
	}
	barrier_arrive(b);
	cl_await(ch->a1_go.fd[0], 30000, "go for the sends");
	s.t_post = h_now_ms();
	for (j = 0; j < D_BIG; j++)
		cl_post(&c, true, d_addr(nodes, D_B1), D_TAG_BIG, buf[j], D_BIG_LEN, CTX_SEND | j,
			d_a1_cqe, &s);
	cl_signal(ch->a1_evt.fd[1], "sends posted");
	cl_pump_until(&c, d_a1_cqe, &s, &s.got, D_BIG, "sends done");
	cl_expect_quiet(&c, 20);
	cl_close(&c);
	_exit(CL_OK);
}

/* Poll @d's stats until @name >= @min (bounded); returns the value. */
static uint64_t wait_stat_at_least(const struct h_daemon *d, const char *name, uint64_t min,
				   int ms)
{
	int64_t deadline = h_now_ms() + ms;

	for (;;) {
		uint64_t v = h_daemon_stat(d, name);

		if (v >= min)
			return v;
		H_ASSERT(h_now_ms() < deadline, "daemon %s: %s = %llu after %d ms, want >= %llu",
			 d->name, name, (unsigned long long)v, ms, (unsigned long long)min);
		h_sleep_ms(10);
	}
}

START_TEST(c01_deferred_rtr)
{
	static const char *const names[] = { "A", "B", "C" };
	static const char *const b_conf =
		"[transport]\nsq_depth = 4\n[fault]\ndelay_completions_us = 300000\n";
	static const char *const confs[] = { NULL, b_conf, NULL };
	static const char *const peers[3][2] = { { "B", "C" }, { "A", "C" }, { "A", "B" } };
	static struct h_stats st;
	struct h_daemon nodes[3];
	struct d_shared *sh;
	struct d_chans ch;
	struct barrier b;
	pid_t pids[D_N];
	uint64_t fill_backlog, unexp_bytes, deferred, queued;
	int64_t t0, max_recv = 0, max_send = 0;
	unsigned i, k;

	h_cluster_start_confs(nodes, names, 3, confs);
	sh = shared_alloc(sizeof(*sh));
	barrier_init(&b);
	chan_init(&ch.b1_evt);
	chan_init(&ch.b1_go);
	chan_init(&ch.a1_evt);
	chan_init(&ch.a1_go);
	chan_init(&ch.c1_go);
	for (i = 0; i < D_N; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			if (i == D_A1)
				d_a1_run(nodes, &b, &ch, sh);
			if (i == D_B1)
				d_b1_run(nodes, &b, &ch, sh);
			d_sink_run((int)i, nodes, &b, &ch, sh);
		}
	}
	barrier_release(&b, pids, d_names, D_N);
	t0 = h_now_ms();
	chan_expect(&ch.b1_evt, 10000, pids, d_names, D_N, "B1 posted its sends");
	/* B's queue toward A is full, the rest of the fill waits behind it. */
	h_sleep_ms(100);
	fill_backlog = h_daemon_stat(&nodes[1], "link.A.backlog");
	H_ASSERT(fill_backlog > 0, "B has no backlog toward A: the fill did not fill its SQ");
	chan_send(&ch.a1_go);
	chan_expect(&ch.a1_evt, 10000, pids, d_names, D_N, "A1 posted its sends");
	/* The RTSs wait at B, unexpected, holding only their headers. */
	wait_stat_at_least(&nodes[1], "daemon.unexpected", D_BIG, 5000);
	unexp_bytes = h_daemon_stat(&nodes[1], "daemon.unexpected_bytes");
	H_ASSERT(unexp_bytes < 64 * KiB, "B holds %llu bytes for %u unexpected RTSs of %u bytes",
		 (unsigned long long)unexp_bytes, D_BIG, D_BIG_LEN);
	chan_send(&ch.b1_go);
	chan_expect(&ch.b1_evt, 10000, pids, d_names, D_N, "B1 posted its receives");
	/* The RTRs found no SQ slot toward A ... */
	deferred = wait_stat_at_least(&nodes[1], "link.A.ctl_deferred", 1, 2000);
	/* ... and wait in the link's backlog, the deferred-control queue,
	 * until B's delayed completions free a slot (D_DELAY_US after the
	 * fill's posts): sampled now, before that. */
	queued = h_daemon_stat(&nodes[1], "link.A.ctl_queued");
	H_ASSERT(queued >= 1, "B: link.A.ctl_queued %llu with %llu control frames deferred and "
		 "the SQ toward A full: the deferred RTRs are not queued",
		 (unsigned long long)queued, (unsigned long long)deferred);
	h_sleep_ms(200);
	chan_send(&ch.c1_go);
	expect_clients_ok(pids, d_names, D_N, 60000);
	for (i = 0; i < D_BIG; i++) {
		if (sh->big_recv_ms[i] > max_recv)
			max_recv = sh->big_recv_ms[i];
		if (sh->big_send_ms[i] > max_send)
			max_send = sh->big_send_ms[i];
	}
	H_EQ(sh->c1_received, D_SMALL);
	H_EQ(sh->a2_received, D_FILL);
	H_EQ(sh->b1_sent, D_SMALL + D_FILL);
	H_ASSERT(max_recv < D_RTR_BOUND_MS, "a 4 MiB receive completed %lld ms after it was "
		 "posted (bound %d ms): the deferred RTR waited", (long long)max_recv,
		 D_RTR_BOUND_MS);
	for (i = 0; i < 3; i++) {
		H_ASSERT(h_daemon_alive(&nodes[i]), "daemon %s died", nodes[i].name);
		wait_daemon_idle(&nodes[i], peers[i], 2, 5000, &st);
		if (i == 1)
			deferred = link_stat(&st, "A", "ctl_deferred");
		/* Every deferred control frame went out. */
		for (k = 0; k < 2; k++)
			H_ASSERT(link_stat(&st, peers[i][k], "ctl_queued") == 0,
				 "daemon %s: link.%s.ctl_queued %llu once idle", nodes[i].name,
				 peers[i][k],
				 (unsigned long long)link_stat(&st, peers[i][k], "ctl_queued"));
	}
	printf("c01_deferred_rtr: B's backlog toward A %llu before the RTSs, unexpected bytes "
	       "%llu for %u RTSs of 4 MiB; %llu control frames deferred toward A, %llu queued "
	       "while the SQ was full, 0 once idle; 4 MiB receives done %lld ms after posting "
	       "(sends %lld ms); all done in %lld ms\n",
	       (unsigned long long)fill_backlog, (unsigned long long)unexp_bytes, D_BIG,
	       (unsigned long long)deferred, (unsigned long long)queued, (long long)max_recv,
	       (long long)max_send, (long long)(h_now_ms() - t0));
	chan_close(&ch.b1_evt);
	chan_close(&ch.b1_go);
	chan_close(&ch.a1_evt);
	chan_close(&ch.a1_go);
	chan_close(&ch.c1_go);
	shared_free(sh, sizeof(*sh));
	h_cluster_stop(nodes, 3);
}
END_TEST

/*
 * Daemon A can register nothing ([fault] reg_fail_after = 0), so after
 * B's RTR it cannot write: it completes the send SL_NAK_BUSY and tells B
 * with a FIN, and B gives the receive back.  The receive then takes the
 * next matching message, an eager one, with the right content, and B's
 * registration of the receive buffer is released.
 */
START_TEST(c01_fin_after_reg_failure)
{
	static const char *const names[] = { "A", "B" };
	static const char *const confs[] = { "[fault]\nreg_fail_after = 0\n", NULL };
	static const char *const peers[2][1] = { { "B" }, { "A" } };
	static struct h_stats st;
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct sl_cqe cqe;
	sl_addr_t a1, b1;
	uint8_t *sbuf, *small, *rbuf;
	unsigned attempt;

	h_cluster_start_confs(nodes, names, 2, confs);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 1001, 16, &qa), 0);
	H_EQ(sl_queue_open(cb, 2001, 16, &qb), 0);
	a1 = sl_queue_addr(qa);
	b1 = sl_queue_addr(qb);
	sbuf = sl_alloc(qa, D_BIG_LEN);
	small = sl_alloc(qa, 1000);
	rbuf = sl_alloc(qb, D_BIG_LEN);
	H_ASSERT(sbuf && small && rbuf, "sl_alloc: %s", strerror(errno));
	msg_fill(sbuf, D_BIG_LEN, 1, 0, D_TAG_BIG);
	msg_fill(small, 1000, 1, 1, D_TAG_BIG);
	memset(rbuf, 0x5a, D_BIG_LEN);

	H_EQ(sl_recv(qb, a1, D_TAG_BIG, ~0ull, rbuf, D_BIG_LEN, 10), 0);
	for (attempt = 0; attempt < 2; attempt++) {
		cqe = g_send(qa, b1, D_TAG_BIG, sbuf, D_BIG_LEN, 1 + attempt);
		H_ASSERT(cqe.status == SL_NAK_BUSY && addr_eq(cqe.peer, b1),
			 "4 MiB send with no registration possible, attempt %u: %s", attempt,
			 sl_strerror(cqe.status));
		/* The receive stays posted, its buffer untouched. */
		expect_no_cqe(qb, 100);
		H_EQ(h_daemon_stat(&nodes[1], "daemon.posted_recvs"), 1);
		H_ASSERT(all_bytes(rbuf, D_BIG_LEN, 0x5a), "the failed rendezvous wrote into the "
			 "receive buffer");
	}
	cqe = g_send(qa, b1, D_TAG_BIG, small, 1000, 3);
	H_ASSERT(cqe.status == SL_OK, "eager send after the NAKs: %s", sl_strerror(cqe.status));
	expect_cqe(qb, SL_OP_RECV, 10, SL_OK, 1000, D_TAG_BIG, a1);
	H_ASSERT(msg_check(rbuf, 1000, 1, 1, D_TAG_BIG), "eager payload in the given-back receive");
	H_ASSERT(all_bytes(rbuf + 1000, D_BIG_LEN - 1000, 0x5a), "bytes past the message changed");
	expect_no_cqe(qa, 20);

	/* A registered nothing; every attempt failed and was counted. */
	wait_daemon_idle(&nodes[0], peers[0], 1, 3000, &st);
	expect_rcache_level(&nodes[0], &st, 0, 0);
	H_ASSERT(h_stats_u64(&st, "rcache.reg_fails") >= 2 &&
		 h_stats_u64(&st, "xport.reg_fails") >= 2 &&
		 h_stats_u64(&st, "xport.faults_injected") >= 2,
		 "A: rcache.reg_fails %llu, xport.reg_fails %llu, faults %llu",
		 (unsigned long long)h_stats_u64(&st, "rcache.reg_fails"),
		 (unsigned long long)h_stats_u64(&st, "xport.reg_fails"),
		 (unsigned long long)h_stats_u64(&st, "xport.faults_injected"));
	/* B registered the receive buffer (one region, idle in the cache). */
	wait_daemon_idle(&nodes[1], peers[1], 1, 3000, &st);
	H_ASSERT(h_stats_u64(&st, "rcache.regs") >= 1, "B never registered the receive");
	expect_rcache_level(&nodes[1], &st, 1, D_BIG_LEN + CHUNK);
	printf("c01_fin_after_reg_failure: 2 x 4 MiB NAK_BUSY, receive given back and matched "
	       "by the next eager message; B: %llu regs, %llu regions (%llu MiB) idle\n",
	       (unsigned long long)h_stats_u64(&st, "rcache.regs"),
	       (unsigned long long)h_stats_u64(&st, "rcache.regions"),
	       (unsigned long long)(h_stats_u64(&st, "rcache.bytes") / MiB));
	H_EQ(sl_queue_close(qb), 0);
	wait_rcache_empty(&nodes[1], 3000);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Kill-and-restart cases: deliveries recorded across B1 generations    */
/* ------------------------------------------------------------------ */

/*
 * Phases of a run, as A1 sees them when it posts: before the kill, while
 * daemon B is down or coming back, and once the new B1 has its receives
 * posted.  A send posted in the last phase meets no failure: it must
 * complete SL_OK and reach the new B1.  While B is down A1 posts a limited
 * number of sends (they wait in A's backlog and go to the new daemon B,
 * where B1 may or may not be bound yet), then waits for the new B1: else
 * every remaining send could be spent on SL_ERR_NO_ENDPOINT in the
 * milliseconds between the link coming up and the new B1 binding its port.
 */
enum { PH_BEFORE = 0, PH_DOWN = 1, PH_READY = 2 };

/* What A1 sends in a run: @n messages, payload source KR_SRC; message i
 * is @len(i) bytes with tag @tag(i), a rendezvous if @is_rndv(i). */
struct kr_plan {
	uint32_t n;
	bool (*is_rndv)(uint32_t i);
	uint32_t (*len)(uint32_t i);
	uint64_t (*tag)(uint32_t i);
};

#define KR_MAX_MSGS 5500
#define KR_SRC 1

/* The record of a run, on a page shared by A1, the B1s and the test
 * process (each case's shared page starts with it). */
struct kr_shared {
	_Atomic int phase;			/* PH_*, set by the test process */
	_Atomic int stop;			/* new B1: A1 is done, drain and leave */
	int8_t status[KR_MAX_MSGS];		/* A1: completion status, -1 none */
	uint8_t post_phase[KR_MAX_MSGS];	/* A1: the phase it was posted in */
	_Atomic uint8_t delivered[KR_MAX_MSGS];	/* by either B1 */
	uint8_t deliv_gen[KR_MAX_MSGS];		/* 1 old B1, 2 new B1 */
	uint32_t received[3];			/* per B1 generation */
};

/* The B1 of generation @gen (1: the first daemon B, 2: the restarted
 * one); generation 1 reports ready on the barrier @b, 2 on @ready_fd. */
typedef void (*kr_b1_fn)(int gen, const struct h_daemon *nodes, struct barrier *b,
			 int ready_fd, struct kr_shared *kr);

/* May A1 post one more send, having posted @n_down while B was down? */
static bool may_post(struct kr_shared *kr, uint32_t n_down, uint32_t max_down)
{
	return atomic_load(&kr->phase) != PH_DOWN || n_down < max_down;
}

/*
 * A1: the completion @e of a send: one A1 posted (below @next) and not
 * completed before, SL_OK or failed by B's loss (SL_ERR_PEER_RESTARTED,
 * SL_ERR_NO_ENDPOINT), with the plan's length and tag and peer @dst.
 * Records its status; returns the message's index.
 */
static uint32_t kr_a1_cqe(const struct kr_plan *pl, struct kr_shared *kr,
			  const struct sl_cqe *e, uint32_t next, sl_addr_t dst)
{
	uint32_t i = CTX_INDEX(e->user_ctx);

	CL_REQUIRE(CTX_KIND(e->user_ctx) == CTX_SEND && i < next && kr->status[i] < 0,
		   CL_E_CTX, "send ctx %#llx %s", (unsigned long long)e->user_ctx,
		   i < next ? "twice" : "never posted");
	CL_REQUIRE(e->status == SL_OK || e->status == SL_ERR_PEER_RESTARTED ||
		   e->status == SL_ERR_NO_ENDPOINT, CL_E_STATUS, "send %u: %s", i,
		   sl_strerror(e->status));
	CL_REQUIRE(e->opcode == SL_OP_SEND && e->len == pl->len(i) && e->tag == pl->tag(i) &&
		   addr_eq(e->peer, dst), CL_E_META, "send %u: opcode %u len %llu tag %llu", i,
		   e->opcode, (unsigned long long)e->len, (unsigned long long)e->tag);
	kr->status[i] = (int8_t)e->status;
	return i;
}

/*
 * B1 of generation @gen: the completion @e of its receive @k into @p,
 * posted for @len bytes with tag @tag from @src, for a rendezvous or not
 * (@rndv): SL_OK with those fields, holding whole a message of the plan
 * of that kind, which no B1 received before.  Records the delivery.
 */
static void kr_b1_cqe(const struct kr_plan *pl, struct kr_shared *kr, int gen,
		      const struct sl_cqe *e, uint32_t k, const uint8_t *p, uint32_t len,
		      uint64_t tag, bool rndv, sl_addr_t src)
{
	struct msg_hdr h;

	cqe_expect_ok(e, k, SL_OP_RECV, len, tag, src);
	CL_REQUIRE(msg_decode(p, len, &h) && h.src == KR_SRC && h.seq < pl->n &&
		   pl->is_rndv(h.seq) == rndv, CL_E_DATA, "recv %u: no message header", k);
	CL_REQUIRE(msg_check(p, len, KR_SRC, h.seq, tag), CL_E_DATA, "recv %u (message %u): "
		   "payload differs", k, h.seq);
	CL_REQUIRE(atomic_fetch_add(&kr->delivered[h.seq], 1) == 0, CL_E_DUP,
		   "message %u delivered again (first to generation %u)", h.seq,
		   kr->deliv_gen[h.seq]);
	kr->deliv_gen[h.seq] = (uint8_t)gen;
	kr->received[gen]++;
}

/*
 * B1 of generation @gen, its receives posted on @c: tell the test
 * process (the barrier @b for generation 1, a byte on @ready_fd for 2),
 * then hand completions to @fn (with @arg), and after each batch call
 * @after (unless NULL, with @arg), until the end: generation 1 ends when
 * its daemon is gone (after taking every completion the daemon wrote),
 * generation 2 when told to stop and nothing more arrives for 200 ms.
 * Either must end within 90 s (CL_E_TIMEOUT).  Exits the client.
 */
static _Noreturn void kr_b1_serve(struct kr_shared *kr, int gen, struct cl *c,
				  struct barrier *b, int ready_fd, cqe_fn fn,
				  void (*after)(void *arg), void *arg)
{
	int64_t t0 = h_now_ms(), quiet_since = 0;

	if (b)
		barrier_arrive(b);
	else
		cl_signal(ready_fd, "new B1 ready");
	for (;;) {
		int n = cl_pump(c, fn, arg, 10, gen == 1);

		if (n == -ECONNRESET)
			break;	/* every completion the daemon wrote was taken */
		if (after)
			after(arg);
		if (gen == 2 && atomic_load(&kr->stop)) {
			if (n > 0 || !quiet_since)
				quiet_since = h_now_ms();
			else if (h_now_ms() - quiet_since > 200)
				break;
		}
		CL_REQUIRE(h_now_ms() - t0 < 90000, CL_E_TIMEOUT, "generation %d never ended", gen);
	}
	if (gen == 2)
		cl_close(c);
	_exit(CL_OK);
}

/*
 * The test process's side of a run: daemons @nodes (A and B first), the
 * clients @pids named @names, the barrier, and two channels: A1 reports
 * on kill_ch when it is far enough for daemon B to be killed, the new B1
 * on ready_ch when its receives are posted.
 */
struct kr_run {
	struct h_daemon *nodes;
	unsigned n_nodes;
	struct kr_shared *kr;
	pid_t *pids;
	const char *const *names;
	struct barrier b;
	struct chan kill_ch, ready_ch;
};

/* Start the @n_nodes daemons (@confs) and make the pipes; no send has
 * completed yet.  Fatal on error. */
static void kr_start(struct kr_run *r, const char *const *node_names, const char *const *confs)
{
	h_cluster_start_confs(r->nodes, node_names, r->n_nodes, confs);
	memset(r->kr->status, -1, sizeof(r->kr->status));
	barrier_init(&r->b);
	chan_init(&r->kill_ch);
	chan_init(&r->ready_ch);
}

/* Kill daemon B (kill -9); A1's posts are PH_DOWN from here. */
static void kr_kill_b(struct kr_run *r)
{
	h_daemon_kill(&r->nodes[1]);
	atomic_store(&r->kr->phase, PH_DOWN);
}

/*
 * Restart daemon B (same port, @peers, @conf), fork the new B1 (@run,
 * generation 2) as client @idx, and wait (30 s) until its receives are
 * posted: A1's posts are PH_READY from then on.  Fatal on error.
 */
static void kr_restart_b(struct kr_run *r, const struct h_daemon *peers, unsigned n_peers,
			 const char *conf, kr_b1_fn run, unsigned idx)
{
	h_daemon_restart(&r->nodes[1], peers, n_peers, conf);
	r->pids[idx] = h_fork();
	if (r->pids[idx] == 0) {
		(void)signal(SIGPIPE, SIG_IGN);
		run(2, r->nodes, NULL, r->ready_ch.fd[1], r->kr);
	}
	chan_expect(&r->ready_ch, 30000, r->pids, r->names, idx + 1, "new B1 ready");
	atomic_store(&r->kr->phase, PH_READY);
}

/* The outcome of a run, from kr_tally(). */
struct kr_tally {
	uint32_t ok, restarted, noep;	/* SL_OK, SL_ERR_PEER_RESTARTED, SL_ERR_NO_ENDPOINT */
	uint32_t late;			/* posted once the new B1 was ready */
	uint32_t deliv_failed;		/* failed, yet a B1 received it */
	uint32_t n_lost;		/* SL_OK, yet no B1 received it ... */
	uint32_t ok_lost[KR_MAX_MSGS];	/* ... these */
};

/*
 * Every client reaped: each send completed once, with a status A1
 * allows; no message reached a B1 twice; a send posted once the new B1
 * was ready completed SL_OK and reached it; whatever reached the new B1
 * completed SL_OK.  Fatal otherwise.  Allowed: a failed send whose frame
 * the peer took (its ACK lost).  The SL_OK sends that no B1 received are
 * only listed in @t, for expect_ok_delivered() at the very end.
 */
static void kr_tally(const struct kr_plan *pl, const struct kr_shared *kr, struct kr_tally *t)
{
	uint32_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < pl->n; i++) {
		int s = kr->status[i];

		H_ASSERT(s >= 0, "send %u has no completion", i);
		t->ok += s == SL_OK;
		t->restarted += s == SL_ERR_PEER_RESTARTED;
		t->noep += s == SL_ERR_NO_ENDPOINT;
		H_ASSERT(kr->delivered[i] <= 1, "message %u delivered %u times", i,
			 kr->delivered[i]);
		if (kr->post_phase[i] == PH_READY) {
			t->late++;
			H_ASSERT(s == SL_OK && kr->deliv_gen[i] == 2, "send %u posted after the new "
				 "B1 was ready: %s, delivered to generation %u", i, sl_strerror(s),
				 kr->deliv_gen[i]);
		}
		/* Nothing fails after the restart: the new B1's messages were OK. */
		if (kr->deliv_gen[i] == 2)
			H_ASSERT(s == SL_OK, "message %u reached the new B1 but completed %s", i,
				 sl_strerror(s));
		if (s == SL_OK && !kr->delivered[i])
			t->ok_lost[t->n_lost++] = i;	/* checked last */
		t->deliv_failed += s != SL_OK && kr->delivered[i];
	}
	H_EQ(t->ok + t->restarted + t->noep, pl->n);
}

/*
 * The last check of a kill-and-restart run: a send that completed SL_OK
 * reached a B1.  sluice.h: "The send completes SL_OK when the destination
 * daemon has accepted the message (eager: delivered it or queued it as
 * unexpected; rendezvous: written it into the matched receive's buffer)",
 * and C04/C08: every operation in flight at the failure is retransmitted
 * or completed with an error status.  An eager send is OK only after the
 * peer's ACK, which follows its delivery into B1's ring (and that ring
 * outlives the daemon); a rendezvous must not be OK before the receiving
 * daemon has the data either.  Fails naming the OK sends that no B1
 * received (@t->ok_lost), their kind and when they were posted.
 */
#define expect_ok_delivered(...) expect_ok_delivered_at(__LINE__, __VA_ARGS__)
static void expect_ok_delivered_at(int line, const char *label, const struct kr_plan *pl,
				   const struct kr_shared *kr, const struct kr_tally *t)
{
	const uint32_t *ok_lost = t->ok_lost;
	uint32_t i, n = t->n_lost, rndv = 0;
	char list[256];
	size_t len = 0;

	list[0] = '\0';
	for (i = 0; i < n; i++) {
		rndv += pl->is_rndv(ok_lost[i]);
		if (i < 6 && len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u (%s, %s)",
						i ? ", " : "", ok_lost[i],
						pl->is_rndv(ok_lost[i]) ? "rndv" : "eager",
						kr->post_phase[ok_lost[i]] == PH_BEFORE
							? "posted before the kill"
						: kr->post_phase[ok_lost[i]] == PH_DOWN
							? "posted while B was down"
							: "posted after the restart");
	}
	if (n)
		h_fail(__FILE__, line, "every SL_OK send reached a B1",
		       "%s: %u sends (%u rendezvous) completed SL_OK but no B1 received them "
		       "(lost, sender told OK): %s", label, n, rndv, list);
}

/* End of a run: no registration left at A once its queues are closed,
 * the daemons stopped; last, every SL_OK send reached a B1.  Fatal. */
static void kr_finish(struct kr_run *r, const char *label, const struct kr_plan *pl,
		      const struct kr_tally *t)
{
	wait_rcache_empty(&r->nodes[0], 3000);
	chan_close(&r->kill_ch);
	chan_close(&r->ready_ch);
	h_cluster_stop(r->nodes, r->n_nodes);
	expect_ok_delivered(label, pl, r->kr, t);
}

/* ------------------------------------------------------------------ */
/* 4. C04: a burst into a 64-entry send queue, the peer killed midway   */
/* ------------------------------------------------------------------ */

/*
 * A1 posts, as fast as its ring accepts, 5,000 eager sends of 256 B (tag
 * 11) and 500 rendezvous sends of 128 KiB (tag 12, every 11th message) to
 * B1, which has a receive posted for every one.  Daemon A's send queue
 * toward B holds 64 WRs.  At about the 2,500th completion daemon B is
 * killed (kill -9) and restarted a second later, with a new B1.
 *
 * The tcp transport has no way to force a QP into the error state, so the
 * daemon kill stands in for it: every WR in flight on the connection is
 * flushed with an error, as on a QP in error, and what was not posted yet
 * waits in A's backlog for the new connection.
 */
#define F_TOTAL 5500
#define F_EAGER_LEN 256u
#define F_RNDV_LEN (128u * KiB)
#define F_TAG_EAGER 11u
#define F_TAG_RNDV 12u
#define F_KILL_AT 2500
#define F_A_DEPTH 256		/* SQ 256, CQ 512: up to 768 sends in flight */
#define F_B_DEPTH 4096
#define F_MAX_DOWN 500		/* sends A1 posts while B is down */
#define F_N_RNDV (F_TOTAL / 11)
#define F_N_EAGER (F_TOTAL - F_N_RNDV)
_Static_assert(F_TOTAL <= KR_MAX_MSGS, "F_TOTAL: raise KR_MAX_MSGS");

static bool f_is_rndv(uint32_t i)
{
	return i % 11 == 10;
}

static uint32_t f_len(uint32_t i)
{
	return f_is_rndv(i) ? F_RNDV_LEN : F_EAGER_LEN;
}

static uint64_t f_tag(uint32_t i)
{
	return f_is_rndv(i) ? F_TAG_RNDV : F_TAG_EAGER;
}

static const struct kr_plan f_plan = { F_TOTAL, f_is_rndv, f_len, f_tag };

struct f_shared {
	struct kr_shared kr;
	uint32_t max_out;		/* A1: most sends in flight */
	int64_t a1_ms;
};

static const char *const f_names[3] = { "A1", "B1", "B1'" };

struct f_a1 {
	struct cl c;
	struct f_shared *sh;
	sl_addr_t dst;
	uint32_t next, done, out, n_down;
};

static void f_a1_cqe(void *arg, const struct sl_cqe *e)
{
	struct f_a1 *s = arg;

	(void)kr_a1_cqe(&f_plan, &s->sh->kr, e, s->next, s->dst);
	s->done++;
	s->out--;
}

static void f_a1_run(const struct h_daemon *nodes, struct barrier *b, int kill_fd,
		     struct f_shared *sh)
{
	static struct f_a1 s;
	uint8_t *ebuf, *rbuf, *buf[F_TOTAL];
	uint32_t ne = 0, nr = 0, i;
	bool reported = false;
	int64_t t0, last;

	cl_name = f_names[0];
	s.sh = sh;
	s.dst = (sl_addr_t){ nodes[1].node, 2001 };
	cl_open(&s.c, &nodes[0], 1001, F_A_DEPTH);
	ebuf = cl_alloc(&s.c, (size_t)F_N_EAGER * F_EAGER_LEN);
	rbuf = cl_alloc(&s.c, (size_t)F_N_RNDV * F_RNDV_LEN);
	for (i = 0; i < F_TOTAL; i++) {
		buf[i] = f_is_rndv(i) ? rbuf + (size_t)nr++ * F_RNDV_LEN
				      : ebuf + (size_t)ne++ * F_EAGER_LEN;
		msg_fill(buf[i], f_len(i), KR_SRC, i, f_tag(i));
	}
	barrier_arrive(b);
	t0 = last = h_now_ms();
	while (s.done < F_TOTAL) {
		bool posted = false;
		int n;

		/* As fast as the ring accepts: -EAGAIN means poll, then retry. */
		while (s.next < F_TOTAL && may_post(&sh->kr, s.n_down, F_MAX_DOWN)) {
			int ph = atomic_load(&sh->kr.phase);
			int rc = sl_send(s.c.q, s.dst, f_tag(s.next), buf[s.next], f_len(s.next),
					 CTX_SEND | s.next);

			if (rc == -EAGAIN)
				break;
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_send %u: %s", s.next, strerror(-rc));
			sh->kr.post_phase[s.next++] = (uint8_t)ph;
			s.n_down += ph == PH_DOWN;
			posted = true;
			if (++s.out > sh->max_out)
				sh->max_out = s.out;
		}
		/* The kill comes right after a refill of the ring, so that
		 * sends are surely in flight on the link when it happens. */
		if (!reported && s.done >= F_KILL_AT && posted) {
			cl_signal(kill_fd, "time to kill B");
			reported = true;
		}
		n = cl_pump(&s.c, f_a1_cqe, &s, posted ? 0 : 1, false);
		if (n > 0)
			last = h_now_ms();
		CL_REQUIRE(h_now_ms() - last < CL_STALL_MS, CL_E_TIMEOUT,
			   "stalled at %u of %u completions (%u posted)", s.done, F_TOTAL, s.next);
	}
	cl_expect_quiet(&s.c, 20);
	sh->a1_ms = h_now_ms() - t0;
	cl_close(&s.c);
	_exit(CL_OK);
}

struct f_b1 {
	struct cl c;
	struct kr_shared *kr;
	int gen;
	sl_addr_t src;
	uint8_t *ebuf, *rbuf;
	uint8_t seen[F_TOTAL];
};

static void f_b1_cqe(void *arg, const struct sl_cqe *e)
{
	struct f_b1 *s = arg;
	uint32_t k = ctx_once(e, CTX_RECV, F_TOTAL, s->seen);
	bool rndv = k >= F_N_EAGER;
	const uint8_t *p = rndv ? s->rbuf + (size_t)(k - F_N_EAGER) * F_RNDV_LEN
				: s->ebuf + (size_t)k * F_EAGER_LEN;

	kr_b1_cqe(&f_plan, s->kr, s->gen, e, k, p, rndv ? F_RNDV_LEN : F_EAGER_LEN,
		  rndv ? F_TAG_RNDV : F_TAG_EAGER, rndv, s->src);
}

/* B1 of generation @gen: a receive posted for every message, then
 * kr_b1_serve(). */
static void f_b1_run(int gen, const struct h_daemon *nodes, struct barrier *b, int ready_fd,
		     struct kr_shared *kr)
{
	static struct f_b1 s;
	uint32_t k;

	cl_name = f_names[gen];
	s.kr = kr;
	s.gen = gen;
	s.src = (sl_addr_t){ nodes[0].node, 1001 };
	cl_open(&s.c, &nodes[1], 2001, F_B_DEPTH);
	s.ebuf = cl_alloc(&s.c, (size_t)F_N_EAGER * F_EAGER_LEN);
	s.rbuf = cl_alloc(&s.c, (size_t)F_N_RNDV * F_RNDV_LEN);
	for (k = 0; k < F_TOTAL; k++) {
		bool rndv = k >= F_N_EAGER;

		cl_post(&s.c, false, s.src, rndv ? F_TAG_RNDV : F_TAG_EAGER,
			rndv ? s.rbuf + (size_t)(k - F_N_EAGER) * F_RNDV_LEN
			     : s.ebuf + (size_t)k * F_EAGER_LEN,
			rndv ? F_RNDV_LEN : F_EAGER_LEN, CTX_RECV | k, f_b1_cqe, &s);
	}
	kr_b1_serve(kr, gen, &s.c, b, ready_fd, f_b1_cqe, NULL, &s);
}

START_TEST(c04_sq_burst)
{
	static const char *const names[] = { "A", "B" };
	static const char *const a_conf = "[transport]\nsq_depth = 64\n[limits]\narena_bytes = 128M\n";
	static const char *const b_conf = "[limits]\narena_bytes = 128M\n";
	static const char *const confs[] = { a_conf, b_conf };
	static const char *const peer_b[] = { "B" };
	static struct h_stats st;
	static struct kr_tally t;
	struct h_daemon nodes[2];
	pid_t pids[3] = { 0, 0, 0 };
	struct f_shared *sh = shared_alloc(sizeof(*sh));
	struct kr_run r = { .nodes = nodes, .n_nodes = 2, .kr = &sh->kr, .pids = pids,
			  .names = f_names };
	uint64_t backlog_down, enomem, frames;
	char state[32], msg[512];
	int64_t t_kill, t_ready, t0;
	unsigned i;

	kr_start(&r, names, confs);
	for (i = 0; i < 2; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			if (i == 0)
				f_a1_run(nodes, &r.b, r.kill_ch.fd[1], sh);
			f_b1_run(1, nodes, &r.b, -1, &sh->kr);
		}
	}
	barrier_release(&r.b, pids, f_names, 2);
	t0 = h_now_ms();
	chan_expect(&r.kill_ch, 60000, pids, f_names, 2, "2,500 completions");
	kr_kill_b(&r);
	t_kill = h_now_ms();
	/* While B is away A's sends pile up in its backlog, none posted. */
	h_sleep_ms(300);
	h_daemon_stats(&nodes[0], &st);
	backlog_down = link_stat(&st, "B", "backlog");
	h_stats_str(&st, "link.B.state", state, sizeof(state));
	H_ASSERT(strcmp(state, "up"), "link A->B still up 300 ms after B was killed");
	H_ASSERT(backlog_down > 0, "no backlog toward B while it is down");
	h_sleep_ms(700);
	kr_restart_b(&r, &nodes[0], 1, b_conf, f_b1_run, 2);
	t_ready = h_now_ms();
	if (!reap_clients(pids, f_names, 1, 60000, msg, sizeof(msg)))
		fail_clients(pids + 1, f_names + 1, 2, msg);
	atomic_store(&sh->kr.stop, 1);
	expect_clients_ok(pids + 1, f_names + 1, 2, 20000);
	H_ASSERT(h_daemon_alive(&nodes[0]), "daemon A died");

	kr_tally(&f_plan, &sh->kr, &t);
	H_EQ(sh->kr.received[1] + sh->kr.received[2], t.ok - t.n_lost + t.deliv_failed);

	wait_daemon_idle(&nodes[0], peer_b, 1, 5000, &st);
	enomem = h_stats_u64(&st, "xport.post_enomem");
	frames = link_stat(&st, "B", "frames_tx");
	printf("c04_sq_burst: %u sends: %u OK, %u PEER_RESTARTED, %u NO_ENDPOINT, each completed "
	       "once; B1 received %u, the new B1 %u (%u of them posted after it was ready); "
	       "%u OK sends never arrived, %u failed sends had arrived; A: backlog %llu "
	       "while B was down, %llu frames, post_enomem %llu, up to %u sends in flight; "
	       "kill at %lld ms, new B1 ready %lld ms later, A1 done in %lld ms\n",
	       F_TOTAL, t.ok, t.restarted, t.noep, sh->kr.received[1], sh->kr.received[2], t.late,
	       t.n_lost, t.deliv_failed, (unsigned long long)backlog_down,
	       (unsigned long long)frames, (unsigned long long)enomem, sh->max_out,
	       (long long)(t_kill - t0), (long long)(t_ready - t_kill), (long long)sh->a1_ms);
	/* The daemon never posts more than its SQ holds. */
	H_EQ(enomem, 0);
	H_EQ(link_stat(&st, "B", "post_enomem"), 0);
	/* The kill hit the burst: sends waited in A's backlog while B was
	 * down (asserted above).  How many had been handed to the transport
	 * unacknowledged at that instant, and so fail PEER_RESTARTED, is
	 * the scheduler's: 0 happened on a loaded machine (5,500 OK, each
	 * received once, 512 in the backlog at the kill). */
	H_ASSERT(t.ok > 0, "%u OK, %u failed", t.ok, t.restarted + t.noep);
	kr_finish(&r, "c04_sq_burst", &f_plan, &t);
	shared_free(sh, sizeof(*sh));
}
END_TEST

/* ------------------------------------------------------------------ */
/* 5. C08: the peer daemon reset with rendezvous in flight              */
/* ------------------------------------------------------------------ */

/*
 * A1 sends 200 rendezvous of 1 MiB (tag 5) to B1, 16 outstanding; B1
 * keeps 32 receives posted.  After about 50 complete, daemon B is killed
 * (kill -9: RTS, RTR, RDMA writes and their completions are caught at
 * whatever stage) and restarted 3 s later with a new B1.  A1 keeps going
 * and never resends.  Run with daemon A's registration cache disabled and
 * enabled.  Meanwhile A2 and C1 ping-pong between nodes A and C.
 */
#define E_MSGS 200
#define E_LEN (1u * MiB)
#define E_TAG 5u
#define E_WIN 16
#define E_RWIN 32
#define E_KILL_AT 50
#define E_OUTAGE_MS 3000
#define E_PP_TAG 9u
#define E_PP_LEN 64u
#define E_PP_MAX_RTT_MS 1000
_Static_assert(E_MSGS <= KR_MAX_MSGS, "E_MSGS: raise KR_MAX_MSGS");

enum { E_A1, E_B1, E_A2, E_C1, E_B1N, E_N };

static bool e_is_rndv(uint32_t i)
{
	(void)i;
	return true;	/* E_LEN > eager_max */
}

static uint32_t e_len(uint32_t i)
{
	(void)i;
	return E_LEN;
}

static uint64_t e_tag(uint32_t i)
{
	(void)i;
	return E_TAG;
}

static const struct kr_plan e_plan = { E_MSGS, e_is_rndv, e_len, e_tag };
static const char *const e_names[E_N] = { "A1", "B1", "A2", "C1", "B1'" };

struct e_shared {
	struct kr_shared kr;
	uint32_t pp_rounds;
	int64_t pp_max_rtt_ms;
};

struct e_a1 {
	struct cl c;
	struct e_shared *sh;
	sl_addr_t dst;
	uint8_t *buf[E_WIN];
	uint32_t slot_of[E_MSGS], free_slots[E_WIN], n_free;
	uint32_t next, done, n_down;
};

static void e_a1_cqe(void *arg, const struct sl_cqe *e)
{
	struct e_a1 *s = arg;
	uint32_t i = kr_a1_cqe(&e_plan, &s->sh->kr, e, s->next, s->dst);

	s->free_slots[s->n_free++] = s->slot_of[i];
	s->done++;
}

static void e_a1_run(const struct h_daemon *nodes, struct barrier *b, int kill_fd,
		     struct hold *h, struct e_shared *sh)
{
	static struct e_a1 s;
	bool reported = false;
	int64_t last;
	uint32_t j;

	cl_name = e_names[E_A1];
	s.sh = sh;
	s.dst = (sl_addr_t){ nodes[1].node, 2001 };
	cl_open(&s.c, &nodes[0], 1001, 64);
	for (j = 0; j < E_WIN; j++) {
		s.buf[j] = cl_alloc(&s.c, E_LEN);
		s.free_slots[s.n_free++] = j;
	}
	barrier_arrive(b);
	last = h_now_ms();
	while (s.done < E_MSGS) {
		bool posted = false;

		while (s.next < E_MSGS && s.n_free && may_post(&sh->kr, s.n_down, E_WIN)) {
			uint32_t slot = s.free_slots[--s.n_free];
			int ph = atomic_load(&sh->kr.phase);

			msg_fill(s.buf[slot], E_LEN, KR_SRC, s.next, E_TAG);
			s.slot_of[s.next] = slot;
			sh->kr.post_phase[s.next] = (uint8_t)ph;
			s.n_down += ph == PH_DOWN;
			cl_post(&s.c, true, s.dst, E_TAG, s.buf[slot], E_LEN, CTX_SEND | s.next,
				e_a1_cqe, &s);
			s.next++;
			posted = true;
		}
		/* Right after a refill: the window is in flight. */
		if (!reported && s.done >= E_KILL_AT && posted) {
			cl_signal(kill_fd, "time to kill B");
			reported = true;
		}
		if (cl_pump(&s.c, e_a1_cqe, &s, 10, false) > 0)
			last = h_now_ms();
		CL_REQUIRE(h_now_ms() - last < CL_STALL_MS, CL_E_TIMEOUT,
			   "stalled at %u of %u completions", s.done, E_MSGS);
	}
	cl_expect_quiet(&s.c, 20);
	hold_here(h);
	cl_close(&s.c);
	_exit(CL_OK);
}

struct e_b1 {
	struct cl c;
	struct kr_shared *kr;
	int gen;
	sl_addr_t src;
	uint8_t *buf[E_RWIN];
	bool repost[E_RWIN];
};

static void e_b1_cqe(void *arg, const struct sl_cqe *e)
{
	struct e_b1 *s = arg;
	uint32_t slot = CTX_INDEX(e->user_ctx);

	CL_REQUIRE(CTX_KIND(e->user_ctx) == CTX_RECV && slot < E_RWIN && !s->repost[slot],
		   CL_E_CTX, "recv ctx %#llx", (unsigned long long)e->user_ctx);
	kr_b1_cqe(&e_plan, s->kr, s->gen, e, slot, s->buf[slot], E_LEN, E_TAG, true, s->src);
	s->repost[slot] = true;
}

/* Post again the receives that completed (their header cleared). */
static void e_b1_repost(void *arg)
{
	struct e_b1 *s = arg;
	uint32_t j;

	for (j = 0; j < E_RWIN; j++) {
		if (!s->repost[j])
			continue;
		s->repost[j] = false;
		memset(s->buf[j], 0, sizeof(struct msg_hdr));
		if (sl_recv(s->c.q, s->src, E_TAG, ~0ull, s->buf[j], E_LEN, CTX_RECV | j) < 0) {
			/* Only once the daemon is gone (generation 1). */
			CL_REQUIRE(s->gen == 1, CL_E_POST, "sl_recv failed");
		}
	}
}

/* B1 of generation @gen: E_RWIN receives kept posted, kr_b1_serve(). */
static void e_b1_run(int gen, const struct h_daemon *nodes, struct barrier *b, int ready_fd,
		     struct kr_shared *kr)
{
	static struct e_b1 s;
	uint32_t j;

	cl_name = e_names[gen == 1 ? E_B1 : E_B1N];
	s.kr = kr;
	s.gen = gen;
	s.src = (sl_addr_t){ nodes[0].node, 1001 };
	cl_open(&s.c, &nodes[1], 2001, 64);
	for (j = 0; j < E_RWIN; j++) {
		s.buf[j] = cl_alloc(&s.c, E_LEN);
		cl_post(&s.c, false, s.src, E_TAG, s.buf[j], E_LEN, CTX_RECV | j, e_b1_cqe, &s);
	}
	kr_b1_serve(kr, gen, &s.c, b, ready_fd, e_b1_cqe, e_b1_repost, &s);
}

/* A2 <-> C1: 64-byte ping-pong across nodes A and C until told to stop;
 * A2 ends it with an empty message.  Any error, wrong payload or lost
 * message fails the client. */
static void e_pp_run(bool a2, const struct h_daemon *nodes, struct barrier *b,
		     struct e_shared *sh)
{
	sl_addr_t peer = a2 ? (sl_addr_t){ nodes[2].node, 3001 } : (sl_addr_t){ nodes[0].node, 1002 };
	uint32_t me = a2 ? E_A2 : E_C1, other = a2 ? E_C1 : E_A2, round;
	uint8_t *sb, *rb;
	struct cl c;

	cl_name = e_names[me];
	cl_open(&c, &nodes[a2 ? 0 : 2], a2 ? 1002 : 3001, 16);
	sb = cl_alloc(&c, E_PP_LEN);
	rb = cl_alloc(&c, E_PP_LEN);
	barrier_arrive(b);
	for (round = 0;; round++) {
		bool stop = a2 && atomic_load(&sh->kr.stop);
		uint32_t len = stop ? 0 : E_PP_LEN;
		struct sl_cqe e;
		int64_t t0 = h_now_ms();
		int rc, k;

		CL_REQUIRE(sl_recv(c.q, peer, E_PP_TAG, ~0ull, rb, E_PP_LEN, 2) == 0, CL_E_POST,
			   "sl_recv");
		if (!a2) {
			rc = h_wait_cqe(c.q, &e, 20000);
			CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "round %u: nothing from A2 (rc %d)", round, rc);
			CL_REQUIRE(e.user_ctx == 2 && e.status == SL_OK && addr_eq(e.peer, peer),
				   CL_E_STATUS, "round %u recv: %s", round, sl_strerror(e.status));
			if (e.len == 0)
				break;
			CL_REQUIRE(e.len == E_PP_LEN && msg_check(rb, E_PP_LEN, other, round, E_PP_TAG),
				   CL_E_DATA, "round %u: ping differs", round);
		}
		msg_fill(sb, len, me, round, E_PP_TAG);
		CL_REQUIRE(sl_send(c.q, peer, E_PP_TAG, sb, len, 1) == 0, CL_E_POST, "sl_send");
		for (k = 0; k < (a2 && !stop ? 2 : 1); k++) {
			rc = h_wait_cqe(c.q, &e, 10000);
			CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "round %u: no completion (rc %d)", round, rc);
			CL_REQUIRE(e.status == SL_OK, CL_E_STATUS, "round %u ctx %llu: %s", round,
				   (unsigned long long)e.user_ctx, sl_strerror(e.status));
			if (e.user_ctx == 2)
				CL_REQUIRE(e.len == E_PP_LEN && addr_eq(e.peer, peer) &&
					   msg_check(rb, E_PP_LEN, other, round, E_PP_TAG), CL_E_DATA,
					   "round %u: pong differs", round);
			else
				CL_REQUIRE(e.user_ctx == 1 && e.len == len, CL_E_META, "round %u: ctx %llu",
					   round, (unsigned long long)e.user_ctx);
		}
		if (a2) {
			int64_t rtt = h_now_ms() - t0;

			if (stop)
				break;
			if (rtt > sh->pp_max_rtt_ms)
				sh->pp_max_rtt_ms = rtt;
			sh->pp_rounds = round + 1;
			h_sleep_ms(1);
		}
	}
	/* A2's last receive was posted for a pong that never comes. */
	cl_close(&c);
	_exit(CL_OK);
}

static void c08_run(const char *label, bool cache_off)
{
	static const char *const names[] = { "A", "B", "C" };
	static const char *const peers_a[] = { "B", "C" };
	const char *confs[] = { cache_off ? "[rcache]\nmax_regions = 0\n" : NULL, NULL, NULL };
	static struct h_stats st;
	static struct kr_tally t;
	struct h_daemon nodes[3], b_peers[2];
	pid_t pids[E_N] = { 0 };
	struct e_shared *sh = shared_alloc(sizeof(*sh));
	struct kr_run r = { .nodes = nodes, .n_nodes = 3, .kr = &sh->kr, .pids = pids,
			  .names = e_names };
	struct hold h;
	uint64_t regions, mrs, regs, deregs, hits, misses;
	char msg[512];
	unsigned i;

	kr_start(&r, names, confs);
	hold_init(&h);
	for (i = 0; i < E_B1N; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			if (i == E_A1)
				e_a1_run(nodes, &r.b, r.kill_ch.fd[1], &h, sh);
			if (i == E_B1)
				e_b1_run(1, nodes, &r.b, -1, &sh->kr);
			e_pp_run(i == E_A2, nodes, &r.b, sh);
		}
	}
	barrier_release(&r.b, pids, e_names, E_B1N);
	chan_expect(&r.kill_ch, 60000, pids, e_names, E_B1N, "50 completions");
	kr_kill_b(&r);
	h_sleep_ms(E_OUTAGE_MS);
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[2]), "a daemon died");
	b_peers[0] = nodes[0];
	b_peers[1] = nodes[2];
	kr_restart_b(&r, b_peers, 2, NULL, e_b1_run, E_B1N);
	hold_wait_done(&h, 1, 60000, pids, e_names, E_N);
	/* A1's queue is still open: what is registered now is the cache's
	 * idle level (nothing at all when it is disabled). */
	wait_daemon_idle(&nodes[0], peers_a, 2, 5000, &st);
	regions = h_stats_u64(&st, "rcache.regions");
	mrs = h_stats_u64(&st, "xport.mrs");
	regs = h_stats_u64(&st, "rcache.regs");
	deregs = h_stats_u64(&st, "rcache.deregs");
	hits = h_stats_u64(&st, "rcache.hits");
	misses = h_stats_u64(&st, "rcache.misses");
	if (cache_off)
		expect_rcache_level(&nodes[0], &st, 0, 0);
	else
		expect_rcache_level(&nodes[0], &st, E_WIN, (uint64_t)E_WIN * (E_LEN + CHUNK));
	hold_release(&h, 1);
	atomic_store(&sh->kr.stop, 1);
	if (!reap_clients(pids, e_names, E_N, 30000, msg, sizeof(msg)))
		h_fail(__FILE__, __LINE__, "clients", "%s", msg);

	kr_tally(&e_plan, &sh->kr, &t);
	H_ASSERT(t.restarted + t.noep > 0, "no send failed: the kill missed the transfers");
	H_ASSERT(sh->pp_rounds > 0 && sh->pp_max_rtt_ms < E_PP_MAX_RTT_MS,
		 "A2<->C1: %u rounds, slowest %lld ms", sh->pp_rounds, (long long)sh->pp_max_rtt_ms);
	printf("%s: 200 x 1 MiB: %u OK, %u PEER_RESTARTED, %u NO_ENDPOINT; B1 received %u, the new "
	       "B1 %u (%u posted after it was ready); %u OK never arrived, %u failed had arrived; "
	       "A rcache %llu hits %llu misses, regs %llu deregs %llu, %llu regions and %llu "
	       "MRs idle; A2<->C1 %u round trips, slowest %lld ms\n", label, t.ok, t.restarted, t.noep,
	       sh->kr.received[1], sh->kr.received[2], t.late, t.n_lost, t.deliv_failed,
	       (unsigned long long)hits, (unsigned long long)misses, (unsigned long long)regs,
	       (unsigned long long)deregs, (unsigned long long)regions, (unsigned long long)mrs,
	       sh->pp_rounds, (long long)sh->pp_max_rtt_ms);
	for (i = 0; i < 3; i++)
		H_ASSERT(h_daemon_alive(&nodes[i]), "daemon %s died", nodes[i].name);
	kr_finish(&r, label, &e_plan, &t);
	shared_free(sh, sizeof(*sh));
}

START_TEST(c08_reset_cache_off)
{
	c08_run("c08_reset_cache_off", true);
}
END_TEST

START_TEST(c08_reset_cache_on)
{
	c08_run("c08_reset_cache_on", false);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 6. Large messages within a node (one copy) and truncation             */
/* ------------------------------------------------------------------ */

#define L_BIG (16u * MiB)
#define L_CAP (1u * MiB + 1)
#define L_GUARD 4096u

START_TEST(local_large_and_truncation)
{
	static const char *const names[] = { "A", "B" };
	static const char *const peers[2][1] = { { "B" }, { "A" } };
	static struct h_stats st;
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *q1, *q2, *qb;
	sl_addr_t a1, a2, b1;
	uint8_t *sbuf, *rbuf, *tbuf, *bbuf;
	unsigned i;

	h_cluster_start(nodes, names, 2);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 1001, 16, &q1), 0);
	H_EQ(sl_queue_open(ca, 1002, 16, &q2), 0);
	H_EQ(sl_queue_open(cb, 2001, 16, &qb), 0);
	a1 = sl_queue_addr(q1);
	a2 = sl_queue_addr(q2);
	b1 = sl_queue_addr(qb);
	sbuf = sl_alloc(q1, L_BIG);
	rbuf = sl_alloc(q2, L_BIG);
	tbuf = sl_alloc(q2, L_CAP + L_GUARD);
	bbuf = sl_alloc(qb, L_CAP + L_GUARD);
	H_ASSERT(sbuf && rbuf && tbuf && bbuf, "sl_alloc: %s", strerror(errno));

	/* 16 MiB within the node, the receive posted first, then after. */
	for (i = 0; i < 2; i++) {
		bool recv_first = i == 0;
		uint64_t tag = 21 + i;

		msg_fill(sbuf, L_BIG, 1, i, tag);
		memset(rbuf, 0, L_BIG);
		if (recv_first)
			H_EQ(sl_recv(q2, a1, tag, ~0ull, rbuf, L_BIG, 100 + i), 0);
		H_EQ(sl_send(q1, (sl_addr_t){ SL_NODE_LOCAL, a2.port }, tag, sbuf, L_BIG, 200 + i), 0);
		if (!recv_first) {
			/* Above eager_max: the send waits for a receive. */
			expect_no_cqe(q1, 50);
			H_EQ(sl_recv(q2, a1, tag, ~0ull, rbuf, L_BIG, 100 + i), 0);
		}
		expect_cqe(q1, SL_OP_SEND, 200 + i, SL_OK, L_BIG, tag, a2);
		expect_cqe(q2, SL_OP_RECV, 100 + i, SL_OK, L_BIG, tag, a1);
		H_ASSERT(msg_check(rbuf, L_BIG, 1, i, tag), "16 MiB local payload (receive %s)",
			 recv_first ? "first" : "second");
	}

	/* Truncated within the node: the first capacity bytes, the full
	 * length reported, nothing past the buffer; the send is OK. */
	msg_fill(sbuf, L_BIG, 1, 2, 23);
	memset(tbuf, 0xee, L_CAP + L_GUARD);
	H_EQ(sl_recv(q2, a1, 23, ~0ull, tbuf, L_CAP, 102), 0);
	H_EQ(sl_send(q1, a2, 23, sbuf, L_BIG, 202), 0);
	expect_cqe(q2, SL_OP_RECV, 102, SL_ERR_TRUNCATED, L_BIG, 23, a1);
	expect_cqe(q1, SL_OP_SEND, 202, SL_OK, L_BIG, 23, a2);
	H_ASSERT(msg_check_prefix(tbuf, L_CAP, L_BIG, 1, 2, 23), "truncated local prefix");
	H_ASSERT(all_bytes(tbuf + L_CAP, L_GUARD, 0xee), "local truncation wrote past capacity");

	/* A 0-capacity receive takes a large local message whole. */
	H_EQ(sl_send(q1, a2, 24, sbuf, 2 * MiB, 203), 0);
	H_EQ(sl_recv(q2, a1, 24, ~0ull, NULL, 0, 103), 0);
	expect_cqe(q2, SL_OP_RECV, 103, SL_ERR_TRUNCATED, 2 * MiB, 24, a1);
	expect_cqe(q1, SL_OP_SEND, 203, SL_OK, 2 * MiB, 24, a2);

	/* One copy, arena to arena: nothing was registered for it. */
	h_daemon_stats(&nodes[0], &st);
	H_EQ(h_stats_u64(&st, "rcache.misses"), 0);
	H_EQ(h_stats_u64(&st, "rcache.regs"), 0);
	H_EQ(h_stats_u64(&st, "xport.mrs"), 0);

	/* Truncated across nodes, the RTS unexpected (receive posted after
	 * the send): the RTR asks for the capacity only. */
	msg_fill(sbuf, 4 * MiB, 1, 3, 25);
	memset(bbuf, 0xee, L_CAP + L_GUARD);
	H_EQ(sl_send(q1, b1, 25, sbuf, 4 * MiB, 204), 0);
	expect_no_cqe(q1, 50);
	H_EQ(sl_recv(qb, a1, 25, ~0ull, bbuf, L_CAP, 104), 0);
	expect_cqe(qb, SL_OP_RECV, 104, SL_ERR_TRUNCATED, 4 * MiB, 25, a1);
	expect_cqe(q1, SL_OP_SEND, 204, SL_OK, 4 * MiB, 25, b1);
	H_ASSERT(msg_check_prefix(bbuf, L_CAP, 4 * MiB, 1, 3, 25), "truncated remote prefix");
	H_ASSERT(all_bytes(bbuf + L_CAP, L_GUARD, 0xee), "remote truncation wrote past capacity");

	/* Across nodes, a 0-capacity receive posted first: an empty write
	 * with the immediate completes both. */
	H_EQ(sl_recv(qb, a1, 26, ~0ull, NULL, 0, 105), 0);
	H_EQ(sl_send(q1, b1, 26, sbuf, 4 * MiB, 205), 0);
	expect_cqe(qb, SL_OP_RECV, 105, SL_ERR_TRUNCATED, 4 * MiB, 26, a1);
	expect_cqe(q1, SL_OP_SEND, 205, SL_OK, 4 * MiB, 26, b1);

	/* The link still carries a full-size message afterwards. */
	msg_fill(sbuf, L_BIG, 1, 4, 27);
	{
		uint8_t *big = sl_alloc(qb, L_BIG);

		H_ASSERT(big, "sl_alloc");
		H_EQ(sl_recv(qb, a1, 27, ~0ull, big, L_BIG, 106), 0);
		H_EQ(sl_send(q1, b1, 27, sbuf, L_BIG, 206), 0);
		expect_cqe(qb, SL_OP_RECV, 106, SL_OK, L_BIG, 27, a1);
		expect_cqe(q1, SL_OP_SEND, 206, SL_OK, L_BIG, 27, b1);
		H_ASSERT(msg_check(big, L_BIG, 1, 4, 27), "16 MiB remote payload");
	}
	expect_no_cqe(q1, 20);
	expect_no_cqe(q2, 1);
	expect_no_cqe(qb, 1);
	for (i = 0; i < 2; i++) {
		wait_daemon_idle(&nodes[i], peers[i], 1, 3000, &st);
		expect_rcache_level(&nodes[i], &st, 1024, 64 * MiB);
	}
	printf("local_large_and_truncation: 16 MiB local (receive before and after), truncated "
	       "and 0-capacity receives local and remote, 16 MiB remote: OK\n");
	sl_close(ca);
	sl_close(cb);
	for (i = 0; i < 2; i++)
		wait_rcache_empty(&nodes[i], 3000);
	h_cluster_stop(nodes, 2);
}
END_TEST

/*
 * [transport] max_mr bounds the tcp transport's MR table like a device's
 * MR limit: with 2 entries at the receiver and 8 concurrent 4 MiB
 * rendezvous to distinct receives, registrations beyond 2 fail, the cache
 * evicts what is idle and otherwise answers SL_NAK_BUSY, and resending
 * the NAKed sends delivers all 8.  The table never holds more than 2.
 */
#define MAXMR_MSGS 8
#define MAXMR_LEN (4u << 20)

START_TEST(max_mr_bounds_registrations)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = {
		"[limits]\narena_bytes = 64M\n",
		"[limits]\narena_bytes = 64M\n[transport]\nmax_mr = 2\n",
	};
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	uint8_t *src[MAXMR_MSGS], *dst[MAXMR_MSGS];
	bool delivered[MAXMR_MSGS] = { false }, sent[MAXMR_MSGS] = { false };
	unsigned i, nsent = 0, naks = 0, rounds = 0, nrecv = 0;
	struct sl_cqe c;

	h_cluster_start_confs(nodes, names, 2, confs);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 7201, 64, &qa), 0);
	H_EQ(sl_queue_open(cb, 7202, 64, &qb), 0);
	for (i = 0; i < MAXMR_MSGS; i++) {
		src[i] = sl_alloc(qa, MAXMR_LEN);
		dst[i] = sl_alloc(qb, MAXMR_LEN);
		H_ASSERT(src[i] && dst[i], "sl_alloc %u", i);
		msg_fill(src[i], MAXMR_LEN, 1, i, 40 + i);
		H_EQ(sl_recv(qb, SL_ANY_SOURCE, 40 + i, ~0ull, dst[i], MAXMR_LEN, i), 0);
	}
	while (nsent < MAXMR_MSGS) {
		H_ASSERT(++rounds <= 50, "after 50 rounds %u of %u sent", nsent, MAXMR_MSGS);
		for (i = 0; i < MAXMR_MSGS; i++)
			if (!sent[i])
				H_EQ(sl_send(qa, sl_queue_addr(qb), 40 + i, src[i], MAXMR_LEN, i), 0);
		/* One completion per send of this round: OK, or NAK. */
		for (i = 0; i < MAXMR_MSGS - nsent;) {
			wait_cqes(qa, &c, 1, 10000);
			H_ASSERT(c.user_ctx < MAXMR_MSGS && !sent[c.user_ctx],
				 "send ctx %llu twice", (unsigned long long)c.user_ctx);
			if (c.status == SL_NAK_BUSY) {
				naks++;
				i++;
				continue;
			}
			H_ASSERT(c.status == SL_OK, "send %llu: %s", (unsigned long long)c.user_ctx,
				 sl_strerror(c.status));
			sent[c.user_ctx] = true;
			nsent++;
		}
		H_ASSERT(h_daemon_stat(&nodes[1], "xport.mrs") <= 2, "B's MR table over max_mr");
	}
	while (nrecv < MAXMR_MSGS) {
		wait_cqes(qb, &c, 1, 10000);
		H_ASSERT(c.status == SL_OK && c.user_ctx < MAXMR_MSGS && !delivered[c.user_ctx],
			 "receive ctx %llu: %s", (unsigned long long)c.user_ctx,
			 sl_strerror(c.status));
		delivered[c.user_ctx] = true;
		H_ASSERT(msg_check(dst[c.user_ctx], MAXMR_LEN, 1, (uint32_t)c.user_ctx,
				   40 + c.user_ctx), "payload %llu", (unsigned long long)c.user_ctx);
		nrecv++;
	}
	expect_no_cqe(qb, 20);
	H_ASSERT(naks > 0, "no registration was refused: max_mr not in force");
	H_ASSERT(h_daemon_stat(&nodes[1], "xport.reg_fails") > 0, "B counted no refused registration");
	H_ASSERT(h_daemon_stat(&nodes[1], "xport.mrs") <= 2, "B's MR table over max_mr");
	H_EQ(h_daemon_stat(&nodes[1], "rcache.regs"),
	     h_daemon_stat(&nodes[1], "rcache.deregs") + h_daemon_stat(&nodes[1], "rcache.regions"));
	fprintf(stderr, "max_mr_bounds_registrations: %u NAK_BUSY over %u rounds, all %u "
		"delivered and verified\n", naks, rounds, MAXMR_MSGS);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/*
 * A rendezvous that fails after its RTS matched (here: the sender cannot
 * register, so a FIN gives the receive back) must not break the order in
 * which one source's messages meet the receives.  A1 sends m1 (1 MiB, it
 * will fail), m2 and m3 (64 B) to B1's receives R1, R2, R3: m2 and m3
 * have already met R2 and R3 when m1 fails, so R1 cannot go back to its
 * place (a later m4 would land before m2 in post order).  It completes
 * instead, SL_NAK_BUSY, buffer untouched; sluice-stress found the old
 * silent misorder.
 */
START_TEST(failed_rndv_keeps_order)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = { "[fault]\nreg_fail_after = 0\n", NULL };
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct sl_cqe c[4];
	uint8_t *big, *small, *r[4];
	unsigned i, got_ok = 0;

	h_cluster_start_confs(nodes, names, 2, confs);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 7301, 64, &qa), 0);
	H_EQ(sl_queue_open(cb, 7302, 64, &qb), 0);
	big = sl_alloc(qa, 1u << 20);
	small = sl_alloc(qa, 3 * 64);
	H_ASSERT(big && small, "sl_alloc");
	for (i = 0; i < 4; i++) {
		r[i] = sl_alloc(qb, 1u << 20);
		H_ASSERT(r[i], "sl_alloc");
		memset(r[i], 0xee, 1u << 20);
	}
	for (i = 0; i < 3; i++)
		H_EQ(sl_recv(qb, sl_queue_addr(qa), 5, ~0ull, r[i], 1u << 20, 10 + i), 0);
	h_sleep_ms(20);
	msg_fill(big, 1u << 20, 1, 1, 5);
	for (i = 0; i < 3; i++)
		memset(small + i * 64, (int)(2 + i), 64);
	/* B reads RTS1, m2 and m3 in one go, so that m2 and m3 meet R2 and
	 * R3 while R1 is claimed, before A can even see the RTR: stopped,
	 * B lets them pile up in its socket. */
	H_EQ(kill(nodes[1].pid, SIGSTOP), 0);
	H_EQ(sl_send(qa, sl_queue_addr(qb), 5, big, 1u << 20, 1), 0);
	H_EQ(sl_send(qa, sl_queue_addr(qb), 5, small, 64, 2), 0);
	H_EQ(sl_send(qa, sl_queue_addr(qb), 5, small + 64, 64, 3), 0);
	h_sleep_ms(100);
	H_EQ(kill(nodes[1].pid, SIGCONT), 0);
	wait_cqes(qa, c, 3, 5000);
	for (i = 0; i < 3; i++) {
		if (c[i].user_ctx == 1)
			H_ASSERT(c[i].status == SL_NAK_BUSY, "m1: %s", sl_strerror(c[i].status));
		else
			H_ASSERT(c[i].status == SL_OK, "m%llu: %s",
				 (unsigned long long)c[i].user_ctx, sl_strerror(c[i].status));
	}
	/* m4, sent after m1 failed: it must not land in R1. */
	H_EQ(sl_send(qa, sl_queue_addr(qb), 5, small + 128, 64, 4), 0);
	wait_cqes(qa, c, 1, 5000);
	H_EQ(c[0].status, SL_OK);
	H_EQ(sl_recv(qb, sl_queue_addr(qa), 5, ~0ull, r[3], 1u << 20, 13), 0);
	wait_cqes(qb, c, 4, 5000);
	for (i = 0; i < 4; i++) {
		unsigned k = (unsigned)c[i].user_ctx - 10;

		H_ASSERT(k < 4, "receive ctx %llu", (unsigned long long)c[i].user_ctx);
		if (k == 0) {
			/* R1 met m1, which failed after m2 and m3 had met R2, R3. */
			H_ASSERT(c[i].status == SL_NAK_BUSY, "R1: %s len %llu",
				 sl_strerror(c[i].status), (unsigned long long)c[i].len);
			H_ASSERT(r[0][0] == 0xee && r[0][(1u << 20) - 1] == 0xee, "R1 written");
			continue;
		}
		/* R2, R3, R4 get m2, m3, m4: post order is send order. */
		H_ASSERT(c[i].status == SL_OK && c[i].len == 64 && r[k][0] == 1 + k &&
			 r[k][63] == 1 + k, "R%u: %s len %llu holds m%u", k + 1,
			 sl_strerror(c[i].status), (unsigned long long)c[i].len, r[k][0]);
		got_ok++;
	}
	H_EQ(got_ok, 3);
	expect_no_cqe(qb, 20);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Fairness between queued sends and RDMA writes                        */
/* ------------------------------------------------------------------ */

/*
 * A link alternates between its queued sends and its RDMA write segments.
 * The alternation must hold across passes: with every 2nd post refused
 * (injected ENOMEM), a pass that always began with the sends gave them
 * every post that succeeded, and a 4 MiB rendezvous waited 25 s behind a
 * stream of eager sends.  The starvation is told by how many eager sends
 * complete before the rendezvous does (the alternation lets a handful
 * through: 11 measured; starved, the sends run at their full rate for the
 * whole wait), not by the rendezvous' total time, which a busy machine
 * stretches as well; the wait is bounded by STARVE_STALL_MS without any
 * completion.
 */
#define STARVE_EAGER_WINDOW 8
#define STARVE_EAGER_LEN 1024u
#define STARVE_RNDV_LEN (4u << 20)
#define STARVE_EAGER_MAX 200
#define STARVE_STALL_MS 10000

START_TEST(writes_not_starved_by_sends)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = {
		"[transport]\nsq_depth = 4\n[fault]\npost_enomem_every = 2\n"
		"delay_completions_us = 20000\n",
		NULL,
	};
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	uint8_t *big, *rbig, *small, *rsmall;
	unsigned eager_done = 0, i;
	int64_t t0, rndv_ms = -1, idle_ms = 0;
	struct progress pg;

	h_cluster_start_confs(nodes, names, 2, confs);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 7101, 64, &qa), 0);
	H_EQ(sl_queue_open(cb, 7102, 64, &qb), 0);
	big = sl_alloc(qa, STARVE_RNDV_LEN);
	rbig = sl_alloc(qb, STARVE_RNDV_LEN);
	small = sl_alloc(qa, STARVE_EAGER_LEN);
	rsmall = sl_alloc(qb, STARVE_EAGER_LEN * STARVE_EAGER_WINDOW);
	H_ASSERT(big && rbig && small && rsmall, "sl_alloc");
	msg_fill(big, STARVE_RNDV_LEN, 1, 0, 1);
	memset(small, 0x5a, STARVE_EAGER_LEN);
	for (i = 0; i < STARVE_EAGER_WINDOW; i++)
		H_EQ(sl_recv(qb, SL_ANY_SOURCE, 2, ~0ull, rsmall + i * STARVE_EAGER_LEN,
			     STARVE_EAGER_LEN, 100 + i), 0);
	H_EQ(sl_recv(qb, SL_ANY_SOURCE, 1, ~0ull, rbig, STARVE_RNDV_LEN, 1), 0);
	t0 = h_now_ms();
	H_EQ(sl_send(qa, sl_queue_addr(qb), 1, big, STARVE_RNDV_LEN, 1), 0);
	for (i = 0; i < STARVE_EAGER_WINDOW; i++)
		H_EQ(sl_send(qa, sl_queue_addr(qb), 2, small, STARVE_EAGER_LEN, 2), 0);
	/* Keep the eager window full until the rendezvous is through, or
	 * the eager sends have had more than their share. */
	progress_start(&pg, 0, 0);
	while (rndv_ms < 0 && eager_done <= STARVE_EAGER_MAX &&
	       (idle_ms = progress_note(&pg, eager_done)) < STARVE_STALL_MS) {
		struct sl_cqe c;

		while (sl_poll(qb, &c, 1) == 1) {
			H_ASSERT(c.status == SL_OK, "B: ctx %llu: %s",
				 (unsigned long long)c.user_ctx, sl_strerror(c.status));
			if (c.user_ctx >= 100)
				H_EQ(sl_recv(qb, SL_ANY_SOURCE, 2, ~0ull,
					     rsmall + (c.user_ctx - 100) * STARVE_EAGER_LEN,
					     STARVE_EAGER_LEN, c.user_ctx), 0);
		}
		while (sl_poll(qa, &c, 1) == 1) {
			H_ASSERT(c.status == SL_OK, "A: ctx %llu: %s",
				 (unsigned long long)c.user_ctx, sl_strerror(c.status));
			if (c.user_ctx == 1) {
				rndv_ms = h_now_ms() - t0;
				continue;
			}
			eager_done++;
			H_EQ(sl_send(qa, sl_queue_addr(qb), 2, small, STARVE_EAGER_LEN, 2), 0);
		}
		sl_wait(qa, 1);
	}
	fprintf(stderr, "writes_not_starved_by_sends: 4 MiB rendezvous in %lld ms, "
		"%u eager sends meanwhile (at most %d)\n", (long long)rndv_ms, eager_done,
		STARVE_EAGER_MAX);
	H_ASSERT(eager_done <= STARVE_EAGER_MAX, "4 MiB rendezvous %s after %lld ms behind %u "
		 "eager sends: starved", rndv_ms < 0 ? "not done" : "done",
		 (long long)(h_now_ms() - t0), eager_done);
	H_ASSERT(rndv_ms >= 0, "4 MiB rendezvous not done: no completion for %lld ms (%u eager "
		 "sends done)", (long long)idle_ms, eager_done);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Runner                                                               */
/* ------------------------------------------------------------------ */

static Suite *rndv_suite(void)
{
	Suite *s = suite_create("rndv");
	TCase *tc;

	/* Generous timeouts: normally each case takes seconds. */
	tc = h_tcase(s, "local_large", 60);
	tcase_add_test(tc, local_large_and_truncation);
	tc = h_tcase(s, "rcache_full", 120);
	tcase_add_test(tc, rcache_full_naks);
	tcase_add_test(tc, rcache_roomy_no_naks);
	tcase_add_test(tc, max_mr_bounds_registrations);
	tc = h_tcase(s, "sq_pressure", 120);
	tcase_add_test(tc, sq_pressure);
	tcase_add_test(tc, writes_not_starved_by_sends);
	tc = h_tcase(s, "c01_deferred_rtr", 120);
	tcase_add_test(tc, c01_deferred_rtr);
	tcase_add_test(tc, c01_fin_after_reg_failure);
	tcase_add_test(tc, failed_rndv_keeps_order);
	tc = h_tcase(s, "c04_sq_burst", 120);
	tcase_add_test(tc, c04_sq_burst);
	tc = h_tcase(s, "c08_reset_during_rndv", 120);
	tcase_add_test(tc, c08_reset_cache_off);
	tcase_add_test(tc, c08_reset_cache_on);
	return s;
}

int main(void)
{
	return h_run_suite(rndv_suite());
}
