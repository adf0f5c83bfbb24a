/*
 * test_random_traffic.c - four clients on two nodes exchange 10,000 eager
 * messages of random sizes (0 to the eager maximum) and tags, through
 * wildcard and specific receives posted in random batches, some before
 * and some after the messages arrive; every message arrives once, intact,
 * in MPI's matching order.
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

#define A_CLIENTS 4
#define A_MSGS 2500
#define A_MAX_LEN 65536u	/* the eager maximum */
#define A_DEPTH 256		/* CQ 512 >= both windows: the SQ never stalls on it */
#define A_SEND_WIN 64
#define A_RECV_WIN 128
#define A_FIRST_POST_MS 50	/* early messages must take the unexpected path */

struct a_msg {
	uint32_t len;
	uint8_t dst;		/* client index */
	uint8_t tidx;		/* tag_values[] index */
	bool local_alias;	/* same-node destination written as SL_NODE_LOCAL */
};

static const struct cl_place a_clients[A_CLIENTS] = {
	{ "A1", 0, 1001 }, { "A2", 0, 1002 }, { "B1", 1, 2001 }, { "B2", 1, 2002 },
};
static const char *const a_names[A_CLIENTS] = { "A1", "A2", "B1", "B2" };

struct a_result {
	uint64_t sent, received, bytes, wild, spec;
	int64_t ms;
};

/* Made in the test process before the fork; every client reads its copy. */
static struct a_msg a_plan[A_CLIENTS][A_MSGS];

static void a_make_plan(uint64_t seed)
{
	struct rng r = { seed };
	unsigned c, i, i0, i1;

	for (c = 0; c < A_CLIENTS; c++) {
		for (i = 0; i < A_MSGS; i++) {
			struct a_msg *m = &a_plan[c][i];

			m->dst = (uint8_t)((c + 1 + rng_below(&r, A_CLIENTS - 1)) % A_CLIENTS);
			m->len = rng_below(&r, A_MAX_LEN + 1);
			m->tidx = (uint8_t)rng_below(&r, N_TAGS);
			m->local_alias = a_clients[m->dst].node == a_clients[c].node &&
					 rng_below(&r, 2);
		}
		/* The two edge sizes, from every client. */
		i0 = rng_below(&r, A_MSGS);
		i1 = (i0 + 1 + rng_below(&r, A_MSGS - 1)) % A_MSGS;
		a_plan[c][i0].len = 0;
		a_plan[c][i1].len = A_MAX_LEN;
	}
}

/* What one receiver knows about one source. */
struct a_src {
	uint32_t n;		/* messages from it to me */
	uint32_t *seq;		/* their seqs, in send order */
	uint8_t *matched;
	uint32_t first;		/* first unmatched index */
	uint32_t unmatched[N_TAGS];
	uint32_t spec_out[N_TAGS];	/* posted specific receives not yet polled */
};

/* One posted receive. */
struct a_rrec {
	bool wild;
	uint8_t src;
	uint8_t tidx;
	uint32_t slot;
};

struct a_state {
	int me;
	struct cl c;
	struct rng r;
	sl_addr_t addr[A_CLIENTS];
	struct a_src src[A_CLIENTS];
	uint32_t n_in;
	struct pool sp, rp;
	/* Sends. */
	uint32_t next_send, send_out, send_done, pend_slot;
	bool have_pend;
	uint32_t send_slot[A_MSGS];
	uint8_t send_seen[A_MSGS];
	/* Receives. */
	struct a_rrec *rrec;
	uint8_t *recv_seen;
	uint32_t recv_posted, recv_out, recv_done, wild_out;
	struct a_result res;
};

static int a_client_of(const struct a_state *s, sl_addr_t a)
{
	int i;

	for (i = 0; i < A_CLIENTS; i++)
		if (addr_eq(s->addr[i], a))
			return i;
	return -1;
}

static void a_setup_incoming(struct a_state *s)
{
	unsigned c, i;

	for (c = 0; c < A_CLIENTS; c++) {
		struct a_src *src = &s->src[c];

		for (i = 0; i < A_MSGS; i++)
			if (a_plan[c][i].dst == s->me)
				src->n++;
		src->seq = calloc(src->n ? src->n : 1, sizeof(*src->seq));
		src->matched = calloc(src->n ? src->n : 1, 1);
		CL_REQUIRE(src->seq && src->matched, CL_E_SETUP, "out of memory");
		src->n = 0;
		for (i = 0; i < A_MSGS; i++) {
			if (a_plan[c][i].dst == s->me) {
				src->seq[src->n++] = i;
				src->unmatched[a_plan[c][i].tidx]++;
			}
		}
		s->n_in += src->n;
	}
	s->rrec = calloc(s->n_in ? s->n_in : 1, sizeof(*s->rrec));
	s->recv_seen = calloc(s->n_in ? s->n_in : 1, 1);
	CL_REQUIRE(s->rrec && s->recv_seen, CL_E_SETUP, "out of memory");
}

/* Post sends while the window and the SQ allow; returns true on progress. */
static bool a_post_sends(struct a_state *s)
{
	bool progress = false;

	while (s->next_send < A_MSGS && s->send_out < A_SEND_WIN) {
		const struct a_msg *m = &a_plan[s->me][s->next_send];
		uint64_t tag = tag_values[m->tidx];
		sl_addr_t dst = s->addr[m->dst];
		int rc;

		if (!s->have_pend) {
			s->pend_slot = pool_get(&s->sp);
			msg_fill(s->sp.buf[s->pend_slot], m->len, (uint32_t)s->me, s->next_send, tag);
			s->have_pend = true;
		}
		if (m->local_alias)
			dst.node = SL_NODE_LOCAL;
		rc = sl_send(s->c.q, dst, tag, s->sp.buf[s->pend_slot], m->len,
			     CTX_SEND | s->next_send);
		if (rc == -EAGAIN)
			break;
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send %u: %s", s->next_send, strerror(-rc));
		s->send_slot[s->next_send++] = s->pend_slot;
		s->have_pend = false;
		s->send_out++;
		progress = true;
	}
	return progress;
}

/*
 * A class (source, tag) for a specific receive.  Safe only while no
 * wildcard is outstanding (a wildcard posted earlier could take the
 * message the specific counts on) and while the class has more unmatched
 * messages than specific receives already waiting for it.
 */
static bool a_pick_class(struct a_state *s, unsigned *src_p, unsigned *tidx_p)
{
	unsigned tries, c, t;

	for (tries = 0; tries < 16; tries++) {
		c = rng_below(&s->r, A_CLIENTS);
		t = rng_below(&s->r, N_TAGS);
		if ((int)c != s->me && s->src[c].spec_out[t] < s->src[c].unmatched[t])
			goto found;
	}
	for (c = 0; c < A_CLIENTS; c++)
		for (t = 0; t < N_TAGS; t++)
			if ((int)c != s->me && s->src[c].spec_out[t] < s->src[c].unmatched[t])
				goto found;
	return false;
found:
	*src_p = c;
	*tidx_p = t;
	return true;
}

/* Post one receive; returns false on -EAGAIN (nothing consumed). */
static bool a_post_recv(struct a_state *s, bool wild, unsigned c, unsigned t)
{
	uint32_t k = s->recv_posted, slot = pool_get(&s->rp);
	int rc;

	if (wild)
		rc = sl_recv(s->c.q, SL_ANY_SOURCE, 0, 0, s->rp.buf[slot], A_MAX_LEN,
			     CTX_RECV | k);
	else
		rc = sl_recv(s->c.q, s->addr[c], tag_values[t], ~0ull, s->rp.buf[slot],
			     A_MAX_LEN, CTX_RECV | k);
	if (rc == -EAGAIN) {
		pool_put(&s->rp, slot);
		return false;
	}
	CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv %u: %s", k, strerror(-rc));
	s->rrec[k] = (struct a_rrec){ .wild = wild, .src = (uint8_t)c, .tidx = (uint8_t)t,
				      .slot = slot };
	s->recv_posted++;
	s->recv_out++;
	if (wild) {
		s->wild_out++;
		s->res.wild++;
	} else {
		s->src[c].spec_out[t]++;
		s->res.spec++;
	}
	return true;
}

/* One batch of receives: all specific (only with no wildcard out) or all
 * wildcard. */
static void a_post_batch(struct a_state *s)
{
	uint32_t room = A_RECV_WIN - s->recv_out, left = s->n_in - s->recv_posted;
	uint32_t n = 1 + rng_below(&s->r, 32), i;
	bool spec = s->wild_out == 0 && rng_below(&s->r, 2);

	/* Sometimes let the wildcards drain, or specifics would be rare. */
	if (s->wild_out && rng_below(&s->r, 3))
		return;
	if (n > room)
		n = room;
	if (n > left)
		n = left;
	for (i = 0; i < n; i++) {
		unsigned c = 0, t = 0;

		if (spec && !a_pick_class(s, &c, &t))
			CL_DIE(CL_E_STRANDED, "no class for a specific receive with %u posted of %u",
			       s->recv_posted, s->n_in);
		if (!a_post_recv(s, !spec, c, t))
			break;
	}
}

static void a_complete_send(struct a_state *s, const struct sl_cqe *cqe)
{
	uint32_t i = CTX_INDEX(cqe->user_ctx);
	const struct a_msg *m;

	CL_REQUIRE(i < s->next_send && !s->send_seen[i], CL_E_CTX, "send ctx %#llx %s",
		   (unsigned long long)cqe->user_ctx, i < s->next_send ? "twice" : "never posted");
	s->send_seen[i] = 1;
	m = &a_plan[s->me][i];
	CL_REQUIRE(cqe->status == SL_OK, CL_E_STATUS, "send %u to %s: %s", i,
		   a_clients[m->dst].name, sl_strerror(cqe->status));
	CL_REQUIRE(cqe->opcode == SL_OP_SEND && cqe->len == m->len &&
		   cqe->tag == tag_values[m->tidx] && addr_eq(cqe->peer, s->addr[m->dst]),
		   CL_E_META, "send %u: opcode %u len %llu tag %#llx peer %08x:%u", i, cqe->opcode,
		   (unsigned long long)cqe->len, (unsigned long long)cqe->tag, cqe->peer.node,
		   cqe->peer.port);
	pool_put(&s->sp, s->send_slot[i]);
	s->send_out--;
	s->send_done++;
}

static void a_complete_recv(struct a_state *s, const struct sl_cqe *cqe)
{
	uint32_t k = CTX_INDEX(cqe->user_ctx), j, seq;
	const struct a_rrec *rec;
	const struct a_msg *m;
	struct a_src *src;
	const uint8_t *buf;
	int c;

	CL_REQUIRE(k < s->recv_posted && !s->recv_seen[k], CL_E_CTX, "recv ctx %#llx %s",
		   (unsigned long long)cqe->user_ctx, k < s->recv_posted ? "twice" : "never posted");
	s->recv_seen[k] = 1;
	rec = &s->rrec[k];
	buf = s->rp.buf[rec->slot];
	CL_REQUIRE(cqe->opcode == SL_OP_RECV, CL_E_META, "recv %u: opcode %u", k, cqe->opcode);
	CL_REQUIRE(cqe->status == SL_OK, CL_E_STATUS, "recv %u: %s (len %llu)", k,
		   sl_strerror(cqe->status), (unsigned long long)cqe->len);
	c = a_client_of(s, cqe->peer);
	CL_REQUIRE(c >= 0 && c != s->me, CL_E_META, "recv %u: source %08x:%u is no client", k,
		   cqe->peer.node, cqe->peer.port);
	src = &s->src[c];
	CL_REQUIRE(rec->wild || (c == rec->src && cqe->tag == tag_values[rec->tidx]),
		   CL_E_META, "specific recv %u for %s tag %#llx got %s tag %#llx", k,
		   a_clients[rec->src].name, (unsigned long long)tag_values[rec->tidx],
		   a_clients[c].name, (unsigned long long)cqe->tag);
	/* MPI order: the earliest unmatched message from c this receive accepts. */
	for (j = src->first; j < src->n; j++)
		if (!src->matched[j] && (rec->wild || a_plan[c][src->seq[j]].tidx == rec->tidx))
			break;
	CL_REQUIRE(j < src->n, CL_E_ORDER, "recv %u: no message left from %s", k,
		   a_clients[c].name);
	seq = src->seq[j];
	m = &a_plan[c][seq];
	if (cqe->len != m->len || cqe->tag != tag_values[m->tidx] ||
	    !msg_check(buf, m->len, (uint32_t)c, seq, cqe->tag)) {
		struct msg_hdr h;

		if (cqe->len <= A_MAX_LEN && msg_decode(buf, cqe->len, &h) &&
		    h.src == (uint32_t)c && h.seq != seq)
			CL_DIE(CL_E_ORDER, "recv %u (%s) got %s seq %u, expected seq %u", k,
			       rec->wild ? "wildcard" : "specific", a_clients[c].name, h.seq, seq);
		CL_DIE(cqe->len != m->len || cqe->tag != tag_values[m->tidx] ? CL_E_META : CL_E_DATA,
		       "recv %u from %s seq %u: len %llu (want %u) tag %#llx (want %#llx)%s", k,
		       a_clients[c].name, seq, (unsigned long long)cqe->len, m->len,
		       (unsigned long long)cqe->tag, (unsigned long long)tag_values[m->tidx],
		       cqe->len == m->len ? ", payload differs" : "");
	}
	src->matched[j] = 1;
	while (src->first < src->n && src->matched[src->first])
		src->first++;
	src->unmatched[m->tidx]--;
	if (rec->wild)
		s->wild_out--;
	else
		src->spec_out[rec->tidx]--;
	pool_put(&s->rp, rec->slot);
	s->recv_out--;
	s->recv_done++;
	s->res.bytes += cqe->len;
}

static void a_client_run(int me, const struct h_daemon *nodes, struct barrier *b,
			 struct a_result *out)
{
	struct a_state *s = calloc(1, sizeof(*s));
	const struct cl_place *ci = &a_clients[me];
	int64_t t0, next_batch, last_progress;
	struct sl_cqe cqes[64];
	unsigned i;

	CL_REQUIRE(s, CL_E_SETUP, "out of memory");
	cl_name = ci->name;
	s->me = me;
	s->r.s = 0x5eed0000u + (unsigned)me;
	for (i = 0; i < A_CLIENTS; i++)
		s->addr[i] = (sl_addr_t){ nodes[a_clients[i].node].node, a_clients[i].port };
	cl_open(&s->c, &nodes[ci->node], ci->port, A_DEPTH);
	a_setup_incoming(s);
	pool_init(&s->sp, s->c.q, A_SEND_WIN, A_MAX_LEN);
	pool_init(&s->rp, s->c.q, A_RECV_WIN, A_MAX_LEN);
	barrier_arrive(b);

	t0 = last_progress = h_now_ms();
	next_batch = t0 + A_FIRST_POST_MS;
	while (s->send_done < A_MSGS || s->recv_done < s->n_in) {
		int64_t now = h_now_ms();
		bool progress = a_post_sends(s);
		int n;

		if (s->recv_posted < s->n_in && s->recv_out < A_RECV_WIN && now >= next_batch) {
			a_post_batch(s);
			next_batch = now + rng_below(&s->r, 4);
		}
		n = sl_poll(s->c.q, cqes, 64);
		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
		for (i = 0; i < (unsigned)n; i++) {
			if (CTX_KIND(cqes[i].user_ctx) == CTX_SEND)
				a_complete_send(s, &cqes[i]);
			else if (CTX_KIND(cqes[i].user_ctx) == CTX_RECV)
				a_complete_recv(s, &cqes[i]);
			else
				CL_DIE(CL_E_CTX, "completion with unknown ctx %#llx",
				       (unsigned long long)cqes[i].user_ctx);
		}
		if (n > 0 || progress) {
			last_progress = now;
			continue;
		}
		cl_idle(&s->c, last_progress,
			"stalled: sent %u/%u (out %u), received %u/%u (posted %u, out %u, "
			"wildcards out %u)", s->send_done, A_MSGS, s->send_out, s->recv_done,
			s->n_in, s->recv_posted, s->recv_out, s->wild_out);
	}
	cl_expect_quiet(&s->c, 20);
	s->res.sent = s->send_done;
	s->res.received = s->recv_done;
	s->res.ms = h_now_ms() - t0;
	*out = s->res;
	cl_close(&s->c);
	_exit(CL_OK);
}

START_TEST(two_nodes_random_traffic)
{
	static const char *const names[] = { "A", "B" };
	struct h_daemon nodes[2];
	struct a_result *res;
	struct barrier b;
	pid_t pids[A_CLIENTS];
	uint64_t sent = 0, received = 0, bytes = 0, wild = 0, spec = 0;
	int64_t t0;
	unsigned i, c, expect_in[A_CLIENTS] = { 0 };

	h_cluster_start(nodes, names, 2);
	a_make_plan(20240601);
	for (c = 0; c < A_CLIENTS; c++)
		for (i = 0; i < A_MSGS; i++)
			expect_in[a_plan[c][i].dst]++;
	res = shared_alloc(sizeof(*res) * A_CLIENTS);
	barrier_init(&b);
	t0 = h_now_ms();
	for (i = 0; i < A_CLIENTS; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			a_client_run((int)i, nodes, &b, &res[i]);
		}
	}
	barrier_release(&b, pids, a_names, A_CLIENTS);
	expect_clients_ok(pids, a_names, A_CLIENTS, 100000);
	for (i = 0; i < A_CLIENTS; i++) {
		H_EQ(res[i].sent, A_MSGS);
		H_EQ(res[i].received, expect_in[i]);
		sent += res[i].sent;
		received += res[i].received;
		bytes += res[i].bytes;
		wild += res[i].wild;
		spec += res[i].spec;
	}
	H_EQ(sent, A_CLIENTS * A_MSGS);
	H_EQ(received, A_CLIENTS * A_MSGS);
	printf("two_nodes_random_traffic: %llu messages, %.1f MiB, %llu wildcard and %llu "
	       "specific receives, %lld ms (clients %lld/%lld/%lld/%lld ms)\n",
	       (unsigned long long)received, bytes / 1048576.0, (unsigned long long)wild,
	       (unsigned long long)spec, (long long)(h_now_ms() - t0), (long long)res[0].ms,
	       (long long)res[1].ms, (long long)res[2].ms, (long long)res[3].ms);
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[1]), "a daemon died");
	shared_free(res, sizeof(*res) * A_CLIENTS);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *random_traffic_suite(void)
{
	Suite *s = suite_create("random_traffic");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, two_nodes_random_traffic);
	return s;
}

int main(void)
{
	return h_run_suite(random_traffic_suite());
}
