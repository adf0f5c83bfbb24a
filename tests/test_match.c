/*
 * test_match.c - tag matching (daemon/match.c), table-driven.
 *
 * Each case is a script of posts and arrivals with the pairing each step
 * must produce, then the receives and messages left queued, in order.
 * Truncation is the endpoint's and the rendezvous' business (endpoint.c,
 * rndv.c, copy.c), tested with real daemons by test_truncation and
 * test_rndv.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "sluice.h"

#define MAX_OPS 16
#define MAX_IDS 10	/* ids 1..MAX_IDS-1; 0 means "none" */

#define N1 0x11111111u
#define N2 0x22222222u
#define P1 7u
#define P2 8u
#define NANY SL_NODE_ANY
#define PANY SL_PORT_ANY
#define ALL UINT64_MAX

enum op_kind { OP_END = 0, OP_POST, OP_ARRIVE };

struct op {
	enum op_kind kind;
	int id;			/* receive id (POST) or message id (ARRIVE) */
	uint32_t node, port;	/* POST: filter; ARRIVE: source */
	uint64_t tag;
	uint64_t mask;		/* POST only */
	uint64_t len;		/* ARRIVE only */
	int want;		/* id this step pairs with; 0 = it is queued */
};

#define POST(r, n, p, t, m, w)   { OP_POST, (r), (n), (p), (t), (m), 0, (w) }
#define ARRIVE(m, n, p, t, l, w) { OP_ARRIVE, (m), (n), (p), (t), 0, (l), (w) }

struct match_case {
	const char *name;
	struct op ops[MAX_OPS];
	int posted[MAX_IDS];		/* receive ids left posted, in order, 0-ended */
	int unexpected[MAX_IDS];	/* message ids left unexpected, in order, 0-ended */
	uint64_t unexpected_bytes;
};

static const struct match_case cases[] = {
	/* Exact filters. */
	{ "exact, receive first",
	  { POST(1, N1, P1, 5, ALL, 0), ARRIVE(1, N1, P1, 5, 100, 1) },
	  { 0 }, { 0 }, 0 },
	{ "exact, message first",
	  { ARRIVE(1, N1, P1, 5, 100, 0), POST(1, N1, P1, 5, ALL, 1) },
	  { 0 }, { 0 }, 0 },
	{ "exact filter rejects other node, port and tag",
	  { POST(1, N1, P1, 5, ALL, 0),
	    ARRIVE(1, N2, P1, 5, 10, 0), ARRIVE(2, N1, P2, 5, 20, 0),
	    ARRIVE(3, N1, P1, 6, 30, 0) },
	  { 1 }, { 1, 2, 3 }, 60 },
	{ "exact message-first does not match other source",
	  { ARRIVE(1, N2, P1, 5, 10, 0), POST(1, N1, P1, 5, ALL, 0) },
	  { 1 }, { 1 }, 10 },

	/* Source wildcards. */
	{ "ANY_SOURCE takes any sender",
	  { POST(1, NANY, PANY, 5, ALL, 0), ARRIVE(1, N2, P2, 5, 1, 1) },
	  { 0 }, { 0 }, 0 },
	{ "ANY_SOURCE takes unexpected in arrival order across sources",
	  { ARRIVE(1, N2, P1, 5, 1, 0), ARRIVE(2, N1, P2, 5, 2, 0),
	    POST(1, NANY, PANY, 5, ALL, 1), POST(2, NANY, PANY, 5, ALL, 2) },
	  { 0 }, { 0 }, 0 },
	{ "any node, specific port",
	  { POST(1, NANY, P2, 5, ALL, 0),
	    ARRIVE(1, N1, P1, 5, 1, 0), ARRIVE(2, N2, P2, 5, 2, 1),
	    ARRIVE(3, N1, P2, 5, 4, 0) },
	  { 0 }, { 1, 3 }, 5 },
	{ "any node, specific port, message first",
	  { ARRIVE(1, N1, P1, 5, 1, 0), ARRIVE(2, N1, P2, 5, 2, 0),
	    POST(1, NANY, P2, 5, ALL, 2) },
	  { 0 }, { 1 }, 1 },
	{ "specific node, any port",
	  { POST(1, N1, PANY, 5, ALL, 0),
	    ARRIVE(1, N2, P1, 5, 1, 0), ARRIVE(2, N1, P2, 5, 2, 1) },
	  { 0 }, { 1 }, 1 },
	{ "specific node, any port, message first",
	  { ARRIVE(1, N2, P2, 5, 1, 0), ARRIVE(2, N1, P1, 5, 2, 0),
	    POST(1, N1, PANY, 5, ALL, 2) },
	  { 0 }, { 1 }, 1 },
	/*
	 * The filter is literal: SL_NODE_LOCAL (0) is not a wildcard and no
	 * message carries it, so the engine must resolve it before posting.
	 */
	{ "SL_NODE_LOCAL in a filter matches nothing here",
	  { POST(1, SL_NODE_LOCAL, P1, 5, ALL, 0), ARRIVE(1, N1, P1, 5, 3, 0) },
	  { 1 }, { 1 }, 3 },

	/* Tag masks. */
	{ "mask 0 matches every tag",
	  { POST(1, NANY, PANY, 0xdead, 0, 0), ARRIVE(1, N1, P1, 0x1234, 1, 1),
	    POST(2, NANY, PANY, 0xdead, 0, 0), ARRIVE(2, N1, P1, 0, 1, 2),
	    POST(3, NANY, PANY, 0, 0, 0), ARRIVE(3, N1, P1, ALL, 1, 3) },
	  { 0 }, { 0 }, 0 },
	{ "partial mask compares only masked bits",
	  { POST(1, NANY, PANY, 0xab00, 0xff00, 0),
	    ARRIVE(1, N1, P1, 0xac01, 1, 0), ARRIVE(2, N1, P1, 0xabcd, 2, 1),
	    POST(2, NANY, PANY, 0xab00, 0xff00, 0), ARRIVE(3, N1, P1, 0xab00, 4, 2) },
	  { 0 }, { 1 }, 1 },
	{ "receive's tag bits outside its mask are ignored",
	  { POST(1, NANY, PANY, 0xff, 0x0f, 0), ARRIVE(1, N1, P1, 0x0f, 1, 1) },
	  { 0 }, { 0 }, 0 },
	{ "high-half mask",
	  { POST(1, NANY, PANY, 0x1234567800000000ull, 0xffffffff00000000ull, 0),
	    ARRIVE(1, N1, P1, 0x1234567900000000ull, 1, 0),
	    ARRIVE(2, N1, P1, 0x12345678deadbeefull, 2, 1) },
	  { 0 }, { 1 }, 1 },
	{ "full mask needs every bit",
	  { POST(1, NANY, PANY, 0x8000000000000001ull, ALL, 0),
	    ARRIVE(1, N1, P1, 0x0000000000000001ull, 1, 0),
	    ARRIVE(2, N1, P1, 0x8000000000000000ull, 2, 0),
	    ARRIVE(3, N1, P1, 0x8000000000000001ull, 4, 1) },
	  { 0 }, { 1, 2 }, 3 },
	{ "partial mask, message first, skips a non-matching tag",
	  { ARRIVE(1, N1, P1, 0x0100, 1, 0), ARRIVE(2, N1, P1, 0x0201, 2, 0),
	    ARRIVE(3, N1, P1, 0x0202, 4, 0),
	    POST(1, N1, P1, 0x0200, 0xff00, 2), POST(2, N1, P1, 0x0200, 0xff00, 3) },
	  { 0 }, { 1 }, 1 },

	/* Ordering. */
	{ "non-overtaking: one source, wildcard receives take arrival order",
	  { ARRIVE(1, N1, P1, 1, 1, 0), ARRIVE(2, N1, P1, 2, 2, 0),
	    ARRIVE(3, N1, P1, 3, 4, 0),
	    POST(1, N1, P1, 0, 0, 1), POST(2, N1, P1, 0, 0, 2), POST(3, N1, P1, 0, 0, 3) },
	  { 0 }, { 0 }, 0 },
	{ "non-overtaking under ANY_SOURCE",
	  { ARRIVE(1, N1, P1, 9, 1, 0), ARRIVE(2, N1, P1, 9, 2, 0),
	    ARRIVE(3, N1, P1, 9, 4, 0),
	    POST(1, NANY, PANY, 9, ALL, 1), POST(2, NANY, PANY, 9, ALL, 2) },
	  { 0 }, { 3 }, 4 },
	{ "receives in posting order: wildcard posted first wins",
	  { POST(1, NANY, PANY, 0, 0, 0), POST(2, N1, P1, 5, ALL, 0),
	    ARRIVE(1, N1, P1, 5, 1, 1), ARRIVE(2, N1, P1, 5, 2, 2) },
	  { 0 }, { 0 }, 0 },
	{ "receives in posting order: specific posted first wins",
	  { POST(1, N1, P1, 5, ALL, 0), POST(2, NANY, PANY, 0, 0, 0),
	    ARRIVE(1, N1, P1, 5, 1, 1), ARRIVE(2, N1, P1, 5, 2, 2) },
	  { 0 }, { 0 }, 0 },
	{ "identical receives complete in posting order",
	  { POST(1, N1, P1, 5, ALL, 0), POST(2, N1, P1, 5, ALL, 0),
	    POST(3, N1, P1, 5, ALL, 0),
	    ARRIVE(1, N1, P1, 5, 1, 1), ARRIVE(2, N1, P1, 5, 1, 2) },
	  { 3 }, { 0 }, 0 },
	{ "a non-matching earlier receive is skipped, not blocking",
	  { POST(1, N2, P1, 5, ALL, 0), POST(2, N1, P1, 5, ALL, 0),
	    ARRIVE(1, N1, P1, 5, 1, 2) },
	  { 1 }, { 0 }, 0 },
	{ "a non-matching message from another source leaves later ones matchable",
	  { ARRIVE(1, N2, P1, 5, 1, 0), ARRIVE(2, N1, P1, 5, 2, 0),
	    ARRIVE(3, N2, P1, 5, 4, 0),
	    POST(1, N1, P1, 5, ALL, 2), POST(2, N1, PANY, 5, ALL, 0) },
	  { 2 }, { 1, 3 }, 5 },
	{ "a non-matching tag from the same source does not block",
	  { ARRIVE(1, N1, P1, 1, 1, 0), ARRIVE(2, N1, P1, 2, 2, 0),
	    POST(1, N1, P1, 2, ALL, 2), POST(2, N1, P1, 1, ALL, 1) },
	  { 0 }, { 0 }, 0 },

	/* Early arrival keeps src and tag: checked on every pairing. */
	{ "early arrival matched later keeps its source and tag",
	  { ARRIVE(1, N2, P2, 0xfeedull << 32, 7, 0),
	    POST(1, NANY, PANY, 0, 0, 1) },
	  { 0 }, { 0 }, 0 },

	/* Mixed. */
	{ "mixed expected and unexpected",
	  { POST(1, N1, P1, 1, ALL, 0),
	    ARRIVE(1, N1, P1, 2, 10, 0),
	    ARRIVE(2, N1, P1, 1, 20, 1),
	    POST(2, N1, P1, 2, ALL, 1),
	    POST(3, NANY, PANY, 0, 0, 0),
	    ARRIVE(3, N2, P2, 9, 30, 3),
	    ARRIVE(4, N2, P2, 9, 40, 0),
	    POST(4, N1, P1, 7, ALL, 0),
	    ARRIVE(5, N1, P2, 7, 50, 0),
	    POST(5, N2, PANY, 0, 0, 4) },
	  { 4 }, { 5 }, 50 },

	/* Byte accounting. */
	{ "zero-length messages count zero bytes",
	  { ARRIVE(1, N1, P1, 1, 0, 0), ARRIVE(2, N1, P1, 1, 10, 0),
	    POST(1, NANY, PANY, 0, 0, 1) },
	  { 0 }, { 2 }, 10 },
	/* One charge is 32-bit (match.h), their sum is not. */
	{ "unexpected_bytes is 64-bit",
	  { ARRIVE(1, N1, P1, 1, 3ull << 30, 0), ARRIVE(2, N1, P1, 1, 3ull << 30, 0),
	    ARRIVE(3, N1, P1, 1, 3ull << 30, 0), POST(1, N1, P1, 1, ALL, 1) },
	  { 0 }, { 2, 3 }, 6ull << 30 },

	/* Teardown order. */
	{ "nothing matches: everything stays queued in order",
	  { POST(1, N1, P1, 1, ALL, 0), POST(2, N1, PANY, 2, ALL, 0),
	    POST(3, NANY, P1, 3, ALL, 0),
	    ARRIVE(1, N2, P2, 1, 1, 0), ARRIVE(2, N2, P2, 2, 2, 0),
	    ARRIVE(3, N2, P2, 3, 4, 0) },
	  { 1, 2, 3 }, { 1, 2, 3 }, 7 },
};

/* Check the counters against the lists after every step. */
static void check_invariants(const struct match_queues *mq, const char *name, int step)
{
	const struct match_recv *r;
	const struct match_msg *m;
	uint32_t nr = 0, nm = 0;
	uint64_t bytes = 0;

	TAILQ_FOREACH(r, &mq->posted, link)
		nr++;
	TAILQ_FOREACH(m, &mq->unexpected, link) {
		nm++;
		bytes += m->len;
	}
	ck_assert_msg(nr == mq->n_posted, "%s, step %d: n_posted %u, list has %u",
		      name, step, mq->n_posted, nr);
	ck_assert_msg(nm == mq->n_unexpected, "%s, step %d: n_unexpected %u, list has %u",
		      name, step, mq->n_unexpected, nm);
	ck_assert_msg(bytes == mq->unexpected_bytes,
		      "%s, step %d: unexpected_bytes %llu, list has %llu", name, step,
		      (unsigned long long)mq->unexpected_bytes, (unsigned long long)bytes);
}

static int ids_len(const int *ids)
{
	int n = 0;

	while (n < MAX_IDS && ids[n])
		n++;
	return n;
}

START_TEST(script)
{
	const struct match_case *tc = &cases[_i];
	struct match_queues mq;
	struct match_recv recvs[MAX_IDS];
	struct match_msg msgs[MAX_IDS];
	const struct op *arrived[MAX_IDS] = { NULL };	/* what each message was sent as */
	const struct match_recv *r;
	const struct match_msg *m;
	int step, got, n;

	memset(recvs, 0, sizeof(recvs));
	memset(msgs, 0, sizeof(msgs));
	match_init(&mq, NULL, NULL);

	for (step = 0; step < MAX_OPS && tc->ops[step].kind != OP_END; step++) {
		const struct op *op = &tc->ops[step];

		ck_assert(op->id > 0 && op->id < MAX_IDS);
		if (op->kind == OP_POST) {
			struct match_recv *pr = &recvs[op->id];
			struct match_msg *mm;

			pr->desc.peer = (sl_addr_t){ op->node, op->port };
			pr->desc.tag = op->tag;
			pr->desc.tag_mask = op->mask;
			pr->desc.addr = 0x1000u * (unsigned)op->id;
			pr->desc.len = 64;
			pr->desc.user_ctx = 100u + (unsigned)op->id;
			mm = match_post_recv(&mq, pr);
			got = mm ? (int)(mm - msgs) : 0;
			ck_assert_msg(got == op->want, "%s, step %d: receive %d got message %d, expected %d",
				      tc->name, step, op->id, got, op->want);
			if (mm) {
				const struct op *a = arrived[got];

				/* The message is returned as it arrived. */
				ck_assert_ptr_nonnull(a);
				ck_assert_uint_eq(mm->src.node, a->node);
				ck_assert_uint_eq(mm->src.port, a->port);
				ck_assert_uint_eq(mm->tag, a->tag);
				ck_assert_uint_eq(mm->len, a->len);
				ck_assert(match_accepts(pr, mm->src, mm->tag));
			}
		} else {
			struct match_msg *am = &msgs[op->id];
			struct match_recv *rr;

			am->src = (sl_addr_t){ op->node, op->port };
			am->tag = op->tag;
			am->len = op->len;
			am->charge = (uint32_t)op->len;	/* every script charge fits */
			arrived[op->id] = op;
			rr = match_arrival(&mq, am->src, am->tag);
			got = rr ? (int)(rr - recvs) : 0;
			ck_assert_msg(got == op->want, "%s, step %d: message %d got receive %d, expected %d",
				      tc->name, step, op->id, got, op->want);
			if (rr) {
				/* The receive is returned as posted. */
				ck_assert_uint_eq(rr->desc.user_ctx, 100u + (unsigned)got);
				ck_assert_uint_eq(rr->desc.addr, 0x1000u * (unsigned)got);
				ck_assert(match_accepts(rr, am->src, am->tag));
			} else {
				match_add_unexpected(&mq, am);
			}
		}
		check_invariants(&mq, tc->name, step);
	}

	/* What is left, in order, with exact counts. */
	n = 0;
	TAILQ_FOREACH(r, &mq.posted, link) {
		ck_assert_msg(n < ids_len(tc->posted) && r == &recvs[tc->posted[n]],
			      "%s: posted[%d] is receive %d", tc->name, n, (int)(r - recvs));
		n++;
	}
	ck_assert_int_eq(n, ids_len(tc->posted));
	ck_assert_uint_eq(mq.n_posted, (uint32_t)n);
	n = 0;
	TAILQ_FOREACH(m, &mq.unexpected, link) {
		ck_assert_msg(n < ids_len(tc->unexpected) && m == &msgs[tc->unexpected[n]],
			      "%s: unexpected[%d] is message %d", tc->name, n, (int)(m - msgs));
		n++;
	}
	ck_assert_int_eq(n, ids_len(tc->unexpected));
	ck_assert_uint_eq(mq.n_unexpected, (uint32_t)n);
	ck_assert_uint_eq(mq.unexpected_bytes, tc->unexpected_bytes);

	/* Teardown pops in list order and leaves the queues as match_init did. */
	for (n = 0; n < ids_len(tc->posted); n++)
		ck_assert_ptr_eq(match_pop_recv(&mq), &recvs[tc->posted[n]]);
	ck_assert_ptr_null(match_pop_recv(&mq));
	for (n = 0; n < ids_len(tc->unexpected); n++)
		ck_assert_ptr_eq(match_pop_unexpected(&mq), &msgs[tc->unexpected[n]]);
	ck_assert_ptr_null(match_pop_unexpected(&mq));
	ck_assert_uint_eq(mq.n_posted, 0);
	ck_assert_uint_eq(mq.n_unexpected, 0);
	ck_assert_uint_eq(mq.unexpected_bytes, 0);
	ck_assert(TAILQ_EMPTY(&mq.posted));
	ck_assert(TAILQ_EMPTY(&mq.unexpected));
}
END_TEST

/* match_accepts() alone: filter x source x tag. */
struct accept_case {
	uint32_t fnode, fport;
	uint64_t tag, mask;
	uint32_t snode, sport;
	uint64_t stag;
	bool want;
};

static const struct accept_case accept_cases[] = {
	{ N1, P1, 5, ALL, N1, P1, 5, true },
	{ N1, P1, 5, ALL, N2, P1, 5, false },
	{ N1, P1, 5, ALL, N1, P2, 5, false },
	{ N1, P1, 5, ALL, N1, P1, 4, false },
	{ NANY, PANY, 5, ALL, N2, P2, 5, true },
	{ NANY, P1, 5, ALL, N2, P1, 5, true },
	{ NANY, P1, 5, ALL, N2, P2, 5, false },
	{ N1, PANY, 5, ALL, N1, P2, 5, true },
	{ N1, PANY, 5, ALL, N2, P2, 5, false },
	{ NANY, PANY, 0, 0, N1, P1, ALL, true },
	{ NANY, PANY, ALL, 0, N1, P1, 0, true },
	{ NANY, PANY, 0xf0, 0xf0, N1, P1, 0x3f0, true },
	{ NANY, PANY, 0xf0, 0xf0, N1, P1, 0x0f0f, false },
	{ NANY, PANY, ALL, ALL, N1, P1, ALL, true },
	{ NANY, PANY, ALL, ALL, N1, P1, ALL - 1, false },
	/* Port 0 and node 0 are literal values, not wildcards. */
	{ N1, 0, 5, ALL, N1, P1, 5, false },
	{ SL_NODE_LOCAL, P1, 5, ALL, N1, P1, 5, false },
};

START_TEST(accepts)
{
	const struct accept_case *ac = &accept_cases[_i];
	struct match_recv r;

	memset(&r, 0, sizeof(r));
	r.desc.peer = (sl_addr_t){ ac->fnode, ac->fport };
	r.desc.tag = ac->tag;
	r.desc.tag_mask = ac->mask;
	ck_assert_msg(match_accepts(&r, (sl_addr_t){ ac->snode, ac->sport }, ac->stag) == ac->want,
		      "accept case %d", _i);
}
END_TEST

START_TEST(init_state)
{
	struct match_queues mq;
	struct match_recv r;

	/* match_init() must not depend on the memory being zeroed. */
	memset(&mq, 0xa5, sizeof(mq));
	match_init(&mq, NULL, NULL);
	ck_assert(TAILQ_EMPTY(&mq.posted));
	ck_assert(TAILQ_EMPTY(&mq.unexpected));
	ck_assert_uint_eq(mq.n_posted, 0);
	ck_assert_uint_eq(mq.n_unexpected, 0);
	ck_assert_uint_eq(mq.unexpected_bytes, 0);
	ck_assert_ptr_null(match_pop_recv(&mq));
	ck_assert_ptr_null(match_pop_unexpected(&mq));
	ck_assert_ptr_null(match_arrival(&mq, (sl_addr_t){ N1, P1 }, 1));

	/* A post into empty queues is linked and nothing is returned. */
	memset(&r, 0, sizeof(r));
	r.desc.peer = SL_ANY_SOURCE;
	ck_assert_ptr_null(match_post_recv(&mq, &r));
	ck_assert_uint_eq(mq.n_posted, 1);
	ck_assert_ptr_eq(TAILQ_FIRST(&mq.posted), &r);
	ck_assert_ptr_eq(match_pop_recv(&mq), &r);
	ck_assert(TAILQ_EMPTY(&mq.posted));
}
END_TEST

/* The queues can be used again after teardown (a queue reopened). */
START_TEST(reuse_after_pop)
{
	struct match_queues mq;
	struct match_msg m1, m2;
	struct match_recv r;

	match_init(&mq, NULL, NULL);
	memset(&m1, 0, sizeof(m1));
	memset(&m2, 0, sizeof(m2));
	m1.src = (sl_addr_t){ N1, P1 };
	m1.len = 3;
	m1.charge = 3;
	m2.src = (sl_addr_t){ N2, P2 };
	m2.len = 4;
	m2.charge = 4;
	match_add_unexpected(&mq, &m1);
	ck_assert_ptr_eq(match_pop_unexpected(&mq), &m1);
	match_add_unexpected(&mq, &m2);
	ck_assert_uint_eq(mq.n_unexpected, 1);
	ck_assert_uint_eq(mq.unexpected_bytes, 4);

	memset(&r, 0, sizeof(r));
	r.desc.peer = SL_ANY_SOURCE;
	ck_assert_ptr_eq(match_post_recv(&mq, &r), &m2);
	ck_assert_uint_eq(mq.n_unexpected, 0);
	ck_assert_uint_eq(mq.unexpected_bytes, 0);
	ck_assert_uint_eq(mq.n_posted, 0);
}
END_TEST

/* Endpoints that share a total: every link and unlink of one counts in
 * it, whichever function does it, and each keeps its own sum too. */
START_TEST(shared_total)
{
	struct match_queues a, b;
	struct match_msg m1, m2, m3;
	struct match_recv r;
	uint64_t total = 0;

	match_init(&a, &total, NULL);
	match_init(&b, &total, NULL);
	memset(&m1, 0, sizeof(m1));
	memset(&m2, 0, sizeof(m2));
	memset(&m3, 0, sizeof(m3));
	m1.src = m2.src = m3.src = (sl_addr_t){ N1, P1 };
	m1.charge = 100;
	m2.charge = 20;
	m3.charge = 3;
	match_add_unexpected(&a, &m1);
	match_add_unexpected(&a, &m2);
	match_add_unexpected(&b, &m3);
	ck_assert_uint_eq(a.unexpected_bytes, 120);
	ck_assert_uint_eq(b.unexpected_bytes, 3);
	ck_assert_uint_eq(total, 123);
	/* Taken by a receive. */
	memset(&r, 0, sizeof(r));
	r.desc.peer = SL_ANY_SOURCE;
	ck_assert_ptr_eq(match_post_recv(&a, &r), &m1);
	ck_assert_uint_eq(total, 23);
	/* Unlinked by hand, and popped at teardown. */
	match_remove_unexpected(&b, &m3);
	ck_assert_uint_eq(b.unexpected_bytes, 0);
	ck_assert_uint_eq(total, 20);
	ck_assert_ptr_eq(match_pop_unexpected(&a), &m2);
	ck_assert_uint_eq(a.unexpected_bytes, 0);
	ck_assert_uint_eq(total, 0);
	/* Taken by a receive given back (match_repost). */
	match_add_unexpected(&b, &m3);
	ck_assert_uint_eq(total, 3);
	ck_assert_ptr_eq(match_repost(&b, &r), &m3);
	ck_assert_uint_eq(total, 0);
}
END_TEST

/* Probe and claim: a probe finds the first accepted message in
 * arrival order and leaves it linked; a claim takes it off the matchable
 * list under a nonzero id and keeps it charged until it is taken; ids
 * are distinct; a receive does not see a claimed message; a find with a
 * wrong id is NULL; the posted receive of a user_ctx is the oldest. */
START_TEST(probe_and_claim)
{
	struct match_queues mq;
	struct match_msg m1, m2, m3;
	struct match_claim c1, c2;
	struct match_recv r1, r2, r3;
	struct desc f;
	uint64_t total = 0, id1, id2;

	match_init(&mq, &total, NULL);
	memset(&m1, 0, sizeof(m1));
	memset(&m2, 0, sizeof(m2));
	memset(&m3, 0, sizeof(m3));
	m1.src = (sl_addr_t){ N1, P1 };
	m1.tag = 5;
	m1.charge = 10;
	m2.src = (sl_addr_t){ N2, P2 };
	m2.tag = 5;
	m2.charge = 20;
	m3.src = (sl_addr_t){ N1, P1 };
	m3.tag = 6;
	m3.charge = 30;
	match_add_unexpected(&mq, &m1);
	match_add_unexpected(&mq, &m2);
	match_add_unexpected(&mq, &m3);

	memset(&f, 0, sizeof(f));
	f.peer = SL_ANY_SOURCE;
	ck_assert_ptr_eq(match_probe(&mq, &f), &m1);
	ck_assert_ptr_eq(match_probe(&mq, &f), &m1);	/* nothing taken */
	ck_assert_uint_eq(mq.n_unexpected, 3);
	f.peer = (sl_addr_t){ N2, PANY };
	ck_assert_ptr_eq(match_probe(&mq, &f), &m2);
	f.peer = SL_ANY_SOURCE;
	f.tag = 6;
	f.tag_mask = ALL;
	ck_assert_ptr_eq(match_probe(&mq, &f), &m3);
	f.tag = 7;
	ck_assert_ptr_null(match_probe(&mq, &f));

	id1 = match_claim(&mq, &m1, &c1);
	id2 = match_claim(&mq, &m3, &c2);
	ck_assert_uint_ne(id1, 0);
	ck_assert_uint_ne(id2, 0);
	ck_assert_uint_ne(id1, id2);
	ck_assert_uint_eq(mq.n_unexpected, 1);
	ck_assert_uint_eq(mq.n_claimed, 2);
	ck_assert_uint_eq(mq.unexpected_bytes, 60);	/* claimed ones still charged */
	ck_assert_uint_eq(total, 60);
	ck_assert_ptr_eq(match_find_claim(&mq, id1), &c1);
	ck_assert_ptr_eq(match_find_claim(&mq, id2), &c2);
	ck_assert_ptr_null(match_find_claim(&mq, 0));
	ck_assert_ptr_null(match_find_claim(&mq, id1 + id2));

	/* A receive for anything gets m2, not the claimed m1. */
	memset(&r1, 0, sizeof(r1));
	r1.desc.peer = SL_ANY_SOURCE;
	ck_assert_ptr_eq(match_post_recv(&mq, &r1), &m2);
	ck_assert_uint_eq(total, 40);
	f.tag = 0;
	f.tag_mask = 0;
	ck_assert_ptr_null(match_probe(&mq, &f));

	match_unclaim(&mq, &c1);
	ck_assert_ptr_eq(c1.m, &m1);
	ck_assert_ptr_null(match_find_claim(&mq, id1));
	ck_assert_uint_eq(total, 30);
	ck_assert_ptr_eq(match_pop_claim(&mq), &c2);
	ck_assert_ptr_null(match_pop_claim(&mq));
	ck_assert_uint_eq(mq.n_claimed, 0);
	ck_assert_uint_eq(mq.unexpected_bytes, 0);
	ck_assert_uint_eq(total, 0);

	/* Posted receives by user_ctx: the oldest first. */
	memset(&r2, 0, sizeof(r2));
	memset(&r3, 0, sizeof(r3));
	r2.desc.peer = r3.desc.peer = SL_ANY_SOURCE;
	r2.desc.user_ctx = r3.desc.user_ctx = 77;
	ck_assert_ptr_null(match_post_recv(&mq, &r2));
	ck_assert_ptr_null(match_post_recv(&mq, &r3));
	ck_assert_ptr_eq(match_find_recv(&mq, 77), &r2);
	match_remove_recv(&mq, &r2);
	ck_assert_ptr_eq(match_find_recv(&mq, 77), &r3);
	ck_assert_ptr_null(match_find_recv(&mq, 78));
}
END_TEST

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))


/* What the named hook was told: the sum of deltas per node, and the calls. */
static struct match_queues *told_mq;
static int told[3];	/* N1, N2, other */
static unsigned told_calls;

static void told_named(struct match_queues *mq, uint32_t node, int delta)
{
	ck_assert_ptr_eq(mq, told_mq);
	ck_assert(delta == 1 || delta == -1);
	told[node == N1 ? 0 : node == N2 ? 1 : 2] += delta;
	told_calls++;
}

static void recv_from(struct match_recv *r, uint32_t node, uint64_t tag)
{
	memset(r, 0, sizeof(*r));
	r->desc.peer = (sl_addr_t){ node, PANY };
	r->desc.tag = tag;
	r->desc.tag_mask = ALL;
}

/* Every way a receive naming a node joins or leaves the posted list is
 * told (+1, -1), and only those: the daemon keeps the link of a node a
 * receive waits on up and watched by this count. */
START_TEST(named_receives_told)
{
	struct match_queues mq;
	struct match_recv r1, r2, r3, r4, any;
	struct match_msg m;

	told_mq = &mq;
	match_init(&mq, NULL, told_named);
	recv_from(&r1, N1, 1);
	recv_from(&r2, N1, 2);
	recv_from(&r3, N2, 3);
	recv_from(&r4, N2, 4);
	recv_from(&any, NANY, 5);
	ck_assert_ptr_null(match_post_recv(&mq, &r1));
	ck_assert_ptr_null(match_post_recv(&mq, &r2));
	ck_assert_ptr_null(match_post_recv(&mq, &r3));
	ck_assert_ptr_null(match_post_recv(&mq, &r4));
	ck_assert_ptr_null(match_post_recv(&mq, &any));	/* names no node */
	ck_assert_int_eq(told[0], 2);
	ck_assert_int_eq(told[1], 2);
	ck_assert_int_eq(told[2], 0);
	ck_assert_uint_eq(told_calls, 4);
	/* Matched by an arrival, removed (a cancel), popped (a close). */
	ck_assert_ptr_eq(match_arrival(&mq, (sl_addr_t){ N1, P1 }, 1), &r1);
	match_remove_recv(&mq, &r3);
	ck_assert_ptr_eq(match_pop_recv(&mq), &r2);
	ck_assert_int_eq(told[0], 0);
	ck_assert_int_eq(told[1], 1);
	ck_assert_uint_eq(told_calls, 7);
	/* Given back (a rendezvous that failed), then taken by a message
	 * waiting unexpected: in and out of the list, or never in it. */
	ck_assert_ptr_null(match_repost(&mq, &r1));
	ck_assert_int_eq(told[0], 1);
	memset(&m, 0, sizeof(m));
	m.src = (sl_addr_t){ N2, P2 };
	m.tag = 3;
	match_add_unexpected(&mq, &m);
	ck_assert_ptr_eq(match_post_recv(&mq, &r3), &m);	/* never posted */
	ck_assert_int_eq(told[1], 1);
	ck_assert_uint_eq(told_calls, 8);
	/* The arrival for anything takes the oldest: r4 then any. */
	ck_assert_ptr_eq(match_arrival(&mq, (sl_addr_t){ N2, P2 }, 4), &r4);
	ck_assert_ptr_eq(match_arrival(&mq, (sl_addr_t){ N2, P2 }, 5), &any);
	ck_assert_ptr_eq(match_pop_recv(&mq), &r1);
	ck_assert_ptr_null(match_pop_recv(&mq));
	ck_assert_int_eq(told[0], 0);
	ck_assert_int_eq(told[1], 0);
	ck_assert_int_eq(told[2], 0);
	ck_assert_uint_eq(told_calls, 10);
	ck_assert_uint_eq(mq.n_posted, 0);
}
END_TEST

static Suite *match_suite(void)
{
	Suite *s = suite_create("match");
	TCase *tc;

	tc = tcase_create("scripts");
	tcase_add_loop_test(tc, script, 0, N_OF(cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("units");
	tcase_add_loop_test(tc, accepts, 0, N_OF(accept_cases));
	tcase_add_test(tc, init_state);
	tcase_add_test(tc, reuse_after_pop);
	tcase_add_test(tc, shared_total);
	tcase_add_test(tc, probe_and_claim);
	tcase_add_test(tc, named_receives_told);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(match_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
