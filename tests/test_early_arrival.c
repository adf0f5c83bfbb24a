/*
 * test_early_arrival.c - case C09 (docs/cases.md): messages that arrive
 * before their receive is posted keep their source and tag, and are
 * matched from the unexpected queue in MPI's order by wildcard and
 * specific receives alike, beside receives posted in time.
 *
 * Real daemons on TCP loopback (tests/harness.c), clients in forked
 * processes (tests/client_kit.h) or in the test process.  Client
 * processes never use Check: they report through their exit code (enum
 * cl_exit in testutil.h, one code per kind of failure, with a line on
 * stderr) and through a shared result page; the test process asserts on
 * both.  Every traffic plan is made from a fixed seed in the test process
 * before the fork, so each client knows what it sends and exactly what
 * it must receive.
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
 * B1 on node B receives 3,000 messages from A1, A2 (node A) and C1 (node
 * C): 1,000 wildcard receives (any source, tag_mask 0) and 2,000 specific
 * ones (source, tag, full mask).  The senders go in chunks that B1
 * releases through pipes: chunk 0 (500 each) is all sent before B1 posts
 * anything, so it is matched from the unexpected queue; each later chunk
 * (100 each) meets receives B1 posted beforehand.
 *
 * Why this plan always matches everything: a wildcard posted before a
 * specific could take the message the specific counts on, leaving it
 * stranded.  So B1 posts a specific for class (source, tag) only while no
 * wildcard is outstanding and while the class has more unmatched messages
 * than specifics waiting for it; wildcards are posted only after the
 * specifics of a round, and either are taken from the unexpected queue at
 * once or are bound to match the round's arrivals (no more of them than
 * the arrivals that no waiting specific can take).
 */
#define C_SENDERS 3
#define C_MSGS 1000
#define C_TAGS 100
#define C_CHUNK0 500
#define C_CHUNK 100
#define C_ROUNDS 5
#define C_CAP 16384u
#define C_DEPTH 512
#define C_SEND_WIN 128
#define C_WILD 1000
#define C_SPEC 2000
#define C_P1_SPEC_BATCH 50
#define C_P1_WILD_BATCH 25
#define C_P1_SPEC 1000		/* phase 1: from the 1,500 unexpected */
#define C_P1_WILD 500
#define C_R_SPEC 200		/* per round, posted before the chunk */
#define C_R_WILD_PRE 50		/* per round, posted before the chunk */
#define C_R_WILD_POST 50	/* per round, after it: from the unexpected queue */

static const uint32_t c_sizes[3] = { 0, 64, 16384 };
static const struct cl_place c_senders[C_SENDERS] = {
	{ "A1", 0, 1001 }, { "A2", 0, 1002 }, { "C1", 2, 3001 },
};
static const struct cl_place c_recvr = { "B1", 1, 2001 };

struct c_msg {
	uint32_t len;
	uint8_t tag;
};

static struct c_msg c_plan[C_SENDERS][C_MSGS];

struct c_result {
	uint64_t wild, spec, wild_expected, spec_expected, zero_len;
};

static void c_make_plan(uint64_t seed)
{
	struct rng r = { seed };
	unsigned s, i;

	for (s = 0; s < C_SENDERS; s++) {
		for (i = 0; i < C_MSGS; i++) {
			c_plan[s][i].len = c_sizes[rng_below(&r, 3)];
			c_plan[s][i].tag = (uint8_t)rng_below(&r, C_TAGS);
		}
		/* Every size from every sender, early and late. */
		c_plan[s][0].len = 0;
		c_plan[s][1].len = 64;
		c_plan[s][2].len = C_CAP;
		c_plan[s][C_MSGS - 1].len = 0;
	}
}

static uint32_t c_chunk_end(unsigned chunk)
{
	return C_CHUNK0 + chunk * C_CHUNK;
}

static void c_sender_run(int me, const struct h_daemon *nodes, struct barrier *bar,
			 int ready_fd, int go_fd)
{
	const struct cl_place *ci = &c_senders[me];
	sl_addr_t dst = { nodes[c_recvr.node].node, c_recvr.port };
	uint32_t slot_of[C_MSGS], next = 0, done = 0, out = 0;
	uint8_t seen[C_MSGS] = { 0 };
	struct sl_cqe cqes[64];
	struct pool sp;
	struct cl c;
	unsigned chunk, i;
	int rc;

	cl_name = ci->name;
	cl_open(&c, &nodes[ci->node], ci->port, 256);
	pool_init(&sp, c.q, C_SEND_WIN, C_CAP);
	barrier_arrive(bar);
	for (chunk = 0; chunk <= C_ROUNDS; chunk++) {
		uint32_t end = c_chunk_end(chunk);
		int64_t last = h_now_ms();

		while (done < end) {
			while (next < end && out < C_SEND_WIN) {
				const struct c_msg *m = &c_plan[me][next];
				uint32_t slot = pool_get(&sp);

				msg_fill(sp.buf[slot], m->len, (uint32_t)me, next, m->tag);
				rc = sl_send(c.q, dst, m->tag, sp.buf[slot], m->len, next);
				if (rc == -EAGAIN) {
					pool_put(&sp, slot);
					break;
				}
				CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
				slot_of[next++] = slot;
				out++;
			}
			rc = sl_poll(c.q, cqes, 64);
			CL_REQUIRE(rc >= 0, CL_E_POLL, "sl_poll: %s", strerror(-rc));
			for (i = 0; i < (unsigned)rc; i++) {
				uint64_t k = cqes[i].user_ctx;

				CL_REQUIRE(k < next && !seen[k], CL_E_CTX, "send ctx %llu",
					   (unsigned long long)k);
				seen[k] = 1;
				CL_REQUIRE(cqes[i].status == SL_OK, CL_E_STATUS, "send %llu: %s",
					   (unsigned long long)k, sl_strerror(cqes[i].status));
				CL_REQUIRE(cqes[i].len == c_plan[me][k].len &&
					   cqes[i].tag == c_plan[me][k].tag &&
					   addr_eq(cqes[i].peer, dst), CL_E_META, "send %llu fields",
					   (unsigned long long)k);
				pool_put(&sp, slot_of[k]);
				out--;
				done++;
			}
			if (rc > 0)
				last = h_now_ms();
			else
				cl_idle(&c, last, "stalled at %u/%u", done, end);
		}
		/* Every send of the chunk completed: it is queued or matched at B. */
		cl_signal(ready_fd, "ready");
		if (chunk < C_ROUNDS)
			cl_await(go_fd, 60000, "go");
	}
	cl_expect_quiet(&c, 20);
	cl_close(&c);
	_exit(CL_OK);
}

struct c_rrec {
	bool wild;
	uint8_t src;
	uint8_t tag;
	bool after_go;		/* posted before its round's chunk was sent */
	uint32_t slot;
};

struct c_state {
	struct cl c;
	struct rng r;
	sl_addr_t addr[C_SENDERS];
	struct pool rp;
	uint8_t matched[C_SENDERS][C_MSGS];
	uint32_t first[C_SENDERS];	/* first unmatched seq */
	uint32_t sent[C_SENDERS];	/* seqs below this were sent (completed) */
	uint32_t unmatched[C_SENDERS][C_TAGS];
	uint32_t spec_out[C_SENDERS][C_TAGS];
	struct c_rrec rrec[C_WILD + C_SPEC];
	uint8_t seen[C_WILD + C_SPEC];
	uint32_t posted, out, wild_out, matched_total, wild_posted, spec_posted;
	bool in_round;		/* a chunk is being sent right now */
	struct c_result res;
};

static int c_sender_of(const struct c_state *s, sl_addr_t a)
{
	int i;

	for (i = 0; i < C_SENDERS; i++)
		if (addr_eq(s->addr[i], a))
			return i;
	return -1;
}

static void c_complete(struct c_state *s, const struct sl_cqe *e)
{
	uint64_t k = e->user_ctx;
	const struct c_rrec *rec;
	const uint8_t *buf;
	struct msg_hdr h;
	uint32_t seq;
	int src;

	CL_REQUIRE(k < s->posted && !s->seen[k], CL_E_CTX, "recv ctx %llu %s",
		   (unsigned long long)k, k < s->posted ? "twice" : "never posted");
	s->seen[k] = 1;
	rec = &s->rrec[k];
	buf = s->rp.buf[rec->slot];
	CL_REQUIRE(e->opcode == SL_OP_RECV, CL_E_META, "recv %llu: opcode %u",
		   (unsigned long long)k, e->opcode);
	CL_REQUIRE(e->status == SL_OK, CL_E_STATUS, "recv %llu: %s (len %llu)",
		   (unsigned long long)k, sl_strerror(e->status), (unsigned long long)e->len);
	/* The true source: node id and port of a sender, never 0 or garbage. */
	src = c_sender_of(s, e->peer);
	CL_REQUIRE(src >= 0, CL_E_META, "recv %llu: source %08x:%u is no sender",
		   (unsigned long long)k, e->peer.node, e->peer.port);
	CL_REQUIRE(rec->wild || (src == rec->src && e->tag == rec->tag), CL_E_META,
		   "specific recv %llu for %s tag %u got %s tag %llu", (unsigned long long)k,
		   c_senders[rec->src].name, rec->tag, c_senders[src].name,
		   (unsigned long long)e->tag);
	/* Per source (and tag, for a specific): the earliest unmatched message. */
	for (seq = s->first[src]; seq < C_MSGS; seq++)
		if (!s->matched[src][seq] && (rec->wild || c_plan[src][seq].tag == rec->tag))
			break;
	CL_REQUIRE(seq < C_MSGS, CL_E_ORDER, "recv %llu: nothing left from %s",
		   (unsigned long long)k, c_senders[src].name);
	CL_REQUIRE(seq < s->sent[src] || s->in_round, CL_E_ORDER,
		   "recv %llu: %s seq %u matched before it was sent", (unsigned long long)k,
		   c_senders[src].name, seq);
	if (e->len >= sizeof(h) && e->len <= C_CAP && msg_decode(buf, e->len, &h) &&
	    h.src == (uint32_t)src && h.seq != seq)
		CL_DIE(CL_E_ORDER, "recv %llu (%s): %s seq %u overtook seq %u (tag %u)",
		       (unsigned long long)k, rec->wild ? "wildcard" : "specific",
		       c_senders[src].name, h.seq, seq, c_plan[src][seq].tag);
	CL_REQUIRE(e->len == c_plan[src][seq].len && e->tag == c_plan[src][seq].tag, CL_E_META,
		   "recv %llu from %s seq %u: len %llu tag %llu, sent len %u tag %u",
		   (unsigned long long)k, c_senders[src].name, seq, (unsigned long long)e->len,
		   (unsigned long long)e->tag, c_plan[src][seq].len, c_plan[src][seq].tag);
	CL_REQUIRE(msg_check(buf, e->len, (uint32_t)src, seq, e->tag), CL_E_DATA,
		   "recv %llu from %s seq %u: payload", (unsigned long long)k,
		   c_senders[src].name, seq);
	s->matched[src][seq] = 1;
	while (s->first[src] < C_MSGS && s->matched[src][s->first[src]])
		s->first[src]++;
	s->unmatched[src][c_plan[src][seq].tag]--;
	if (rec->wild) {
		s->wild_out--;
		s->res.wild_expected += rec->after_go;
	} else {
		s->spec_out[src][rec->tag]--;
		s->res.spec_expected += rec->after_go;
	}
	s->res.zero_len += e->len == 0;
	pool_put(&s->rp, rec->slot);
	s->out--;
	s->matched_total++;
}

/* Poll everything there is; returns the count. */
static unsigned c_poll(struct c_state *s)
{
	struct sl_cqe cqes[64];
	unsigned total = 0;
	int n, i;

	do {
		n = sl_poll(s->c.q, cqes, 64);
		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
		for (i = 0; i < n; i++)
			c_complete(s, &cqes[i]);
		total += (unsigned)n;
	} while (n > 0);
	return total;
}

/* Wait until at most @target receives are outstanding. */
static void c_wait_out(struct c_state *s, uint32_t target, const char *what)
{
	int64_t deadline = h_now_ms() + 10000;

	while (c_poll(s), s->out > target) {
		int rc;

		CL_REQUIRE(h_now_ms() < deadline, CL_E_STRANDED,
			   "%s: %u receives outstanding, want %u (%u wildcards)", what, s->out,
			   target, s->wild_out);
		rc = sl_wait(s->c.q, 5);
		CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
	}
}

/* Wait until no wildcard is outstanding.  Not at once: a receive counts as
 * posted when the daemon drains it, which can be after the messages it
 * would have met arrived (they are then taken from the unexpected queue). */
static void c_wait_wild(struct c_state *s, const char *what)
{
	int64_t deadline = h_now_ms() + 10000;

	while (c_poll(s), s->wild_out > 0) {
		int rc;

		CL_REQUIRE(h_now_ms() < deadline, CL_E_STRANDED, "%s: %u wildcards unmatched", what,
			   s->wild_out);
		rc = sl_wait(s->c.q, 5);
		CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
	}
}

static void c_post(struct c_state *s, bool wild, unsigned src, unsigned tag, bool after_go)
{
	uint32_t k = s->posted, slot = pool_get(&s->rp);
	int rc;

	for (;;) {
		if (wild)
			rc = sl_recv(s->c.q, SL_ANY_SOURCE, 0, 0, s->rp.buf[slot], C_CAP, k);
		else
			rc = sl_recv(s->c.q, s->addr[src], tag, ~0ull, s->rp.buf[slot], C_CAP, k);
		if (rc != -EAGAIN)
			break;
		c_poll(s);
		rc = sl_wait(s->c.q, 1);
		CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
	}
	CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	s->rrec[k] = (struct c_rrec){ wild, (uint8_t)src, (uint8_t)tag, after_go, slot };
	s->posted++;
	s->out++;
	if (wild) {
		s->wild_out++;
		s->wild_posted++;
		s->res.wild++;
	} else {
		s->spec_out[src][tag]++;
		s->spec_posted++;
		s->res.spec++;
	}
}

/*
 * Post up to @n specifics for messages with seq in [lo, hi); with
 * @sent_only, only for classes that have a sent message no receive is
 * waiting for (so the receive is matched from the unexpected queue).
 */
static void c_post_specifics(struct c_state *s, uint32_t n, uint32_t lo, uint32_t hi,
			     bool sent_only, bool after_go)
{
	uint32_t i;

	CL_REQUIRE(s->wild_out == 0, CL_E_STRANDED, "specifics with %u wildcards out", s->wild_out);
	for (i = 0; i < n; i++) {
		unsigned tries, src = 0;
		uint32_t seq = 0;
		bool ok = false;

		for (tries = 0; tries < 256 && !ok; tries++) {
			src = rng_below(&s->r, C_SENDERS);
			seq = lo + rng_below(&s->r, hi - lo);
			ok = !s->matched[src][seq];
			if (ok) {
				unsigned t = c_plan[src][seq].tag;
				uint32_t avail = s->unmatched[src][t];

				if (sent_only) {
					uint32_t j;

					for (avail = 0, j = s->first[src]; j < s->sent[src]; j++)
						avail += !s->matched[src][j] && c_plan[src][j].tag == t;
				}
				ok = s->spec_out[src][t] < avail;
			}
		}
		if (!ok)
			return;	/* the leftover step makes up the count */
		c_post(s, false, src, c_plan[src][seq].tag, after_go);
	}
}

static uint32_t c_unexpected(const struct c_state *s)
{
	uint32_t i, sent = 0;

	for (i = 0; i < C_SENDERS; i++)
		sent += s->sent[i];
	return sent - s->matched_total;
}

static void c_read_ready(int ready_fd)
{
	unsigned i;

	for (i = 0; i < C_SENDERS; i++)
		cl_await(ready_fd, 60000, "ready from senders");
}

static void c_receiver_run(const struct h_daemon *nodes, struct barrier *bar, int ready_fd,
			   const int *go_fds, struct c_result *out)
{
	struct c_state *s = calloc(1, sizeof(*s));
	unsigned i, round;
	uint32_t n, left;

	CL_REQUIRE(s, CL_E_SETUP, "out of memory");
	cl_name = c_recvr.name;
	s->r.s = 909;
	for (i = 0; i < C_SENDERS; i++) {
		unsigned k;

		s->addr[i] = (sl_addr_t){ nodes[c_senders[i].node].node, c_senders[i].port };
		for (k = 0; k < C_MSGS; k++)
			s->unmatched[i][c_plan[i][k].tag]++;
	}
	cl_open(&s->c, &nodes[c_recvr.node], c_recvr.port, C_DEPTH);
	pool_init(&s->rp, s->c.q, C_DEPTH, C_CAP);
	barrier_arrive(bar);

	/* Phase 1: chunk 0 sits unexpected; interleaved batches take it. */
	c_read_ready(ready_fd);
	for (i = 0; i < C_SENDERS; i++)
		s->sent[i] = c_chunk_end(0);
	while (s->spec_posted < C_P1_SPEC || s->wild_posted < C_P1_WILD) {
		n = C_P1_SPEC - s->spec_posted;
		c_post_specifics(s, n < C_P1_SPEC_BATCH ? n : C_P1_SPEC_BATCH, 0, c_chunk_end(0),
				 true, false);
		c_wait_out(s, 0, "phase 1 specifics");
		n = C_P1_WILD - s->wild_posted;
		if (n > C_P1_WILD_BATCH)
			n = C_P1_WILD_BATCH;
		if (n > c_unexpected(s))
			n = c_unexpected(s);
		for (i = 0; i < n; i++)
			c_post(s, true, 0, 0, false);
		c_wait_out(s, 0, "phase 1 wildcards");
		if (c_unexpected(s) == 0)
			break;
	}

	/* Phase 2: each round, receives first, then the chunk. */
	for (round = 1; round <= C_ROUNDS; round++) {
		uint32_t lo = c_chunk_end(round - 1), hi = c_chunk_end(round);

		c_poll(s);
		n = C_SPEC - s->spec_posted;
		c_post_specifics(s, n < C_R_SPEC ? n : C_R_SPEC, lo, hi, false, true);
		/* Each arrival takes at most one waiting specific (this round's
		 * or an earlier one's); the rest reach the wildcards first. */
		c_poll(s);
		n = C_WILD - s->wild_posted;
		if (n > C_R_WILD_PRE)
			n = C_R_WILD_PRE;
		if (s->out >= C_SENDERS * C_CHUNK)
			n = 0;
		else if (n > C_SENDERS * C_CHUNK - s->out)
			n = C_SENDERS * C_CHUNK - s->out;
		for (i = 0; i < n; i++)
			c_post(s, true, 0, 0, true);
		s->in_round = true;
		for (i = 0; i < C_SENDERS; i++)
			cl_signal(go_fds[i], "go");
		c_read_ready(ready_fd);
		for (i = 0; i < C_SENDERS; i++)
			s->sent[i] = hi;
		c_wait_wild(s, "wildcards posted before the chunk");
		s->in_round = false;
		n = C_WILD - s->wild_posted;
		if (n > C_R_WILD_POST)
			n = C_R_WILD_POST;
		if (n > c_unexpected(s))
			n = c_unexpected(s);
		for (i = 0; i < n; i++)
			c_post(s, true, 0, 0, false);
		c_wait_wild(s, "wildcards posted after the chunk");
	}

	/* Everything is sent: nothing may still wait, then the rest. */
	c_wait_out(s, 0, "receives after all was sent");
	left = C_SENDERS * C_MSGS - s->matched_total;
	CL_REQUIRE(left == (C_SPEC - s->spec_posted) + (C_WILD - s->wild_posted), CL_E_MISSING,
		   "%u messages left for %u specific and %u wildcard receives", left,
		   C_SPEC - s->spec_posted, C_WILD - s->wild_posted);
	while (s->spec_posted < C_SPEC) {
		uint32_t before = s->spec_posted;

		c_post_specifics(s, C_SPEC - s->spec_posted, 0, C_MSGS, true, false);
		c_wait_out(s, 0, "final specifics");
		CL_REQUIRE(s->spec_posted > before, CL_E_STRANDED, "no class for final specifics");
	}
	for (n = C_WILD - s->wild_posted, i = 0; i < n; i++)
		c_post(s, true, 0, 0, false);
	c_wait_out(s, 0, "final wildcards");
	CL_REQUIRE(s->matched_total == C_SENDERS * C_MSGS, CL_E_MISSING, "matched %u",
		   s->matched_total);
	cl_expect_quiet(&s->c, 50);
	*out = s->res;
	cl_close(&s->c);
	_exit(CL_OK);
}

START_TEST(c09_early_arrival_keeps_source_and_tag)
{
	static const char *const names[] = { "A", "B", "C" };
	static const char *const cnames[] = { "A1", "A2", "C1", "B1" };
	struct h_daemon nodes[3];
	struct c_result *res;
	struct barrier bar;
	pid_t pids[C_SENDERS + 1];
	int ready[2], go[C_SENDERS][2], go_w[C_SENDERS];
	unsigned i, k;

	h_cluster_start(nodes, names, 3);
	c_make_plan(909090);
	res = shared_alloc(sizeof(*res));
	barrier_init(&bar);
	H_ASSERT(pipe2(ready, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	for (i = 0; i < C_SENDERS; i++) {
		H_ASSERT(pipe2(go[i], O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
		go_w[i] = go[i][1];
	}
	for (i = 0; i <= C_SENDERS; i++) {
		pids[i] = h_fork();
		if (pids[i] != 0)
			continue;
		(void)signal(SIGPIPE, SIG_IGN);
		/* Keep only this client's pipe ends, so a dead peer reads EOF. */
		if (i < C_SENDERS) {
			cl_close_fd(ready[0]);
			for (k = 0; k < C_SENDERS; k++) {
				cl_close_fd(go[k][1]);
				if (k != i)
					cl_close_fd(go[k][0]);
			}
			c_sender_run((int)i, nodes, &bar, ready[1], go[i][0]);
		}
		cl_close_fd(ready[1]);
		for (k = 0; k < C_SENDERS; k++)
			cl_close_fd(go[k][0]);
		c_receiver_run(nodes, &bar, ready[0], go_w, res);
	}
	H_ASSERT(close(ready[0]) == 0 && close(ready[1]) == 0, "close: %s", strerror(errno));
	for (i = 0; i < C_SENDERS; i++)
		H_ASSERT(close(go[i][0]) == 0 && close(go[i][1]) == 0, "close: %s", strerror(errno));
	barrier_release(&bar, pids, cnames, C_SENDERS + 1);
	expect_clients_ok(pids, cnames, C_SENDERS + 1, 60000);
	H_EQ(res->wild, C_WILD);
	H_EQ(res->spec, C_SPEC);
	H_ASSERT(res->zero_len > 0 && res->wild_expected > 0 && res->spec_expected > 0,
		 "zero-length %llu, expected-path wildcards %llu, specifics %llu",
		 (unsigned long long)res->zero_len, (unsigned long long)res->wild_expected,
		 (unsigned long long)res->spec_expected);
	printf("c09: 3000 messages: %llu wildcard (%llu posted before their chunk) and %llu "
	       "specific (%llu before) receives, %llu zero-length\n",
	       (unsigned long long)res->wild, (unsigned long long)res->wild_expected,
	       (unsigned long long)res->spec, (unsigned long long)res->spec_expected,
	       (unsigned long long)res->zero_len);
	shared_free(res, sizeof(*res));
	h_cluster_stop(nodes, 3);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *early_arrival_suite(void)
{
	Suite *s = suite_create("early_arrival");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, c09_early_arrival_keeps_source_and_tag);
	return s;
}

int main(void)
{
	return h_run_suite(early_arrival_suite());
}
