/*
 * test_grant.c - rendezvous grants: every RDMA write is checked against
 * the exact (address, length) the receiver's RTR granted, for that
 * rendezvous only, and the grant ends with the rendezvous
 * (docs/rendezvous-grants.md).
 *
 * Two daemons, A and B.  The buggy peer is A's own transport with a
 * [fault] key (write_shift_bytes: every RDMA write lands N bytes from
 * where the RTR said; write_replay: a write with an immediate is followed
 * by 4 KiB more to the same place, after the rendezvous ended).  The
 * receiver on B has three adjacent buffers in one arena: a victim below,
 * the rendezvous target, a victim above.  Beside each attack, bystanders
 * on the same link: a rendezvous stream B -> A (B has no fault) and an
 * eager ping-pong A <-> B; they must complete SL_OK, byte-exact, and the
 * link must keep its first connection.  The table the tcp transport
 * checks against (daemon/xport/grant.c) is tested on its own first.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"
#include "xport/grant.h"

#define GRANT_LEN (1u << 20)		/* the rendezvous: two 512 KiB write segments */
#define VICTIM_LEN (64u << 10)
#define VICTIM_BYTE 0x5a
#define ATTACK_PORT 7000		/* receiver on B; sender on A: ATTACK_PORT + 1 */
#define ATTACK_TAG 77

#define STREAM_PORT 7100		/* receiver on A; sender on B: STREAM_PORT + 1 */
#define STREAM_N 16
#define STREAM_LEN (256u << 10)		/* over eager_max: rendezvous */
#define STREAM_TAG 5
#define PP_PORT 7200			/* echo server on B */
#define PP_ROUNDS 200
#define PP_LEN 64
#define PP_TAG 9
/* A client gives up after this long without a completion. */
#define NO_PROGRESS_MS 20000

/* ---- the table ---- */

/* Each verdict at its edges, overflow included. */
START_TEST(table_verdicts)
{
	struct grant_table t;
	const struct xport_grant *g = NULL;
	uint32_t key, other;

	grant_table_init(&t);
	ck_assert_int_eq(grant_add(&t, 0x10000, 0x1000, 42, &key), 0);
	ck_assert_uint_ne(key, 0);
	ck_assert_int_eq(grant_check(&t, key, 0x10000, 0x1000, &g), GRANT_OK);
	ck_assert_ptr_nonnull(g);
	ck_assert_uint_eq(g->cookie, 42);
	ck_assert_int_eq(grant_check(&t, key, 0x10fff, 1, NULL), GRANT_OK);
	ck_assert_int_eq(grant_check(&t, key, 0xffff, 1, NULL), GRANT_BELOW);
	ck_assert_int_eq(grant_check(&t, key, 0xe000, 0x2000, NULL), GRANT_BELOW);
	ck_assert_int_eq(grant_check(&t, key, 0x10000, 0x1001, NULL), GRANT_ABOVE);
	ck_assert_int_eq(grant_check(&t, key, 0x11000, 1, NULL), GRANT_ABOVE);
	ck_assert_int_eq(grant_check(&t, key, 0x10001, UINT64_MAX, NULL), GRANT_ABOVE);
	ck_assert_int_eq(grant_check(&t, key, UINT64_MAX, 2, NULL), GRANT_ABOVE);
	ck_assert_int_eq(grant_check(&t, key ^ 0x10000, 0x10000, 1, NULL), GRANT_UNKNOWN);
	ck_assert_int_eq(grant_check(&t, 0, 0x10000, 1, NULL), GRANT_UNKNOWN);
	/* Revoked: the key is dead, and named so, even with its slot reused. */
	ck_assert(grant_remove(&t, key));
	ck_assert(!grant_remove(&t, key));
	ck_assert_int_eq(grant_check(&t, key, 0x10000, 1, NULL), GRANT_REVOKED);
	ck_assert_int_eq(grant_add(&t, 0x10000, 0x1000, 43, &other), 0);
	ck_assert_uint_ne(other, key);
	ck_assert_int_eq(grant_check(&t, key, 0x10000, 1, NULL), GRANT_REVOKED);
	ck_assert_int_eq(grant_check(&t, other, 0x10000, 1, NULL), GRANT_OK);
	ck_assert_uint_eq(t.live, 1);
	ck_assert_int_eq(grant_add(&t, 1, 0, 0, &other), -EINVAL);
	ck_assert_int_eq(grant_add(&t, UINT64_MAX, 2, 0, &other), -EINVAL);
	grant_table_free(&t);
}
END_TEST

/* GRANT_TABLE_MAX live grants, no more; a revoke makes room. */
START_TEST(table_bound)
{
	struct grant_table t;
	uint32_t key, first = 0, i;

	grant_table_init(&t);
	for (i = 0; i < GRANT_TABLE_MAX; i++) {
		ck_assert_int_eq(grant_add(&t, 4096ull * i, 4096, i, &key), 0);
		if (i == 0)
			first = key;
	}
	ck_assert_int_eq(grant_add(&t, 0, 1, 0, &key), -ENOMEM);
	ck_assert(grant_remove(&t, first));
	ck_assert_int_eq(grant_add(&t, 0, 1, 0, &key), 0);
	ck_assert_uint_eq(t.live, GRANT_TABLE_MAX);
	grant_table_free(&t);
}
END_TEST

/* GRANT_LOG_PER_SEC lines a second; the rest counted for the next. */
START_TEST(log_limit)
{
	struct grant_log_limit rl = { 0 };
	uint64_t suppressed = 99;
	unsigned i, printed = 0;

	for (i = 0; i < 100; i++)
		printed += grant_log_allow(&rl, 10.0 + i * 0.001, &suppressed);
	ck_assert_uint_eq(printed, GRANT_LOG_PER_SEC);
	ck_assert_uint_eq(suppressed, 0);
	ck_assert(grant_log_allow(&rl, 11.5, &suppressed));
	ck_assert_uint_eq(suppressed, 100 - GRANT_LOG_PER_SEC);
}
END_TEST

/* ---- bystanders ---- */

static void stream_rx_run(const struct h_daemon *a, const struct h_daemon *b,
			  struct barrier *bar)
{
	sl_addr_t from = { b->node, STREAM_PORT + 1 };
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	unsigned i, got = 0;
	int rc;

	cl_name = "stream-rx";
	cl_open(&c, a, STREAM_PORT, 64);
	buf = sl_alloc(c.q, (size_t)STREAM_N * STREAM_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	for (i = 0; i < STREAM_N; i++) {
		rc = sl_recv(c.q, from, STREAM_TAG, ~0ull, buf + (size_t)i * STREAM_LEN,
			     STREAM_LEN, i);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv %u: %s", i, strerror(-rc));
	}
	barrier_arrive(bar);
	while (got < STREAM_N) {
		rc = h_wait_cqe(c.q, &cqe, NO_PROGRESS_MS);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "%u of %u received, then nothing for %d ms",
			   got, STREAM_N, NO_PROGRESS_MS);
		CL_REQUIRE(cqe.status == SL_OK && cqe.len == STREAM_LEN, CL_E_STATUS,
			   "receive %llu: %s, %llu bytes", (unsigned long long)cqe.user_ctx,
			   sl_strerror(cqe.status), (unsigned long long)cqe.len);
		/* Receives of one source match in post order. */
		CL_REQUIRE(cqe.user_ctx == got, CL_E_ORDER, "receive %llu completed %uth",
			   (unsigned long long)cqe.user_ctx, got);
		CL_REQUIRE(msg_check(buf + (size_t)got * STREAM_LEN, STREAM_LEN, 1, got,
				     STREAM_TAG), CL_E_DATA, "message %u differs", got);
		got++;
	}
	cl_close(&c);
	_exit(CL_OK);
}

static void stream_tx_run(const struct h_daemon *a, const struct h_daemon *b,
			  struct barrier *bar)
{
	sl_addr_t to = { a->node, STREAM_PORT };
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	unsigned i;
	int rc;

	cl_name = "stream-tx";
	cl_open(&c, b, STREAM_PORT + 1, 64);
	buf = sl_alloc(c.q, (size_t)STREAM_N * STREAM_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	for (i = 0; i < STREAM_N; i++)
		msg_fill(buf + (size_t)i * STREAM_LEN, STREAM_LEN, 1, i, STREAM_TAG);
	barrier_arrive(bar);
	for (i = 0; i < STREAM_N; i++) {
		rc = sl_send(c.q, to, STREAM_TAG, buf + (size_t)i * STREAM_LEN, STREAM_LEN, i);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send %u: %s", i, strerror(-rc));
	}
	for (i = 0; i < STREAM_N; i++) {
		rc = h_wait_cqe(c.q, &cqe, NO_PROGRESS_MS);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "%u of %u sends done, then nothing for %d ms",
			   i, STREAM_N, NO_PROGRESS_MS);
		CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "send %llu: %s",
			   (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	}
	cl_close(&c);
	_exit(CL_OK);
}

static void pp_server_run(const struct h_daemon *b, struct barrier *bar)
{
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	unsigned i;
	int rc;

	cl_name = "echo";
	cl_open(&c, b, PP_PORT, 8);
	buf = sl_alloc(c.q, 2 * PP_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	barrier_arrive(bar);
	for (i = 0; i < PP_ROUNDS; i++) {
		rc = sl_recv(c.q, SL_ANY_SOURCE, PP_TAG, ~0ull, buf, PP_LEN, CTX_RECV);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
		rc = h_wait_cqe(c.q, &cqe, NO_PROGRESS_MS);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "round %u: no ping for %d ms", i,
			   NO_PROGRESS_MS);
		CL_REQUIRE(cqe.status == SL_OK && cqe.len == PP_LEN, CL_E_STATUS,
			   "receive: %s", sl_strerror(cqe.status));
		memcpy(buf + PP_LEN, buf, PP_LEN);
		rc = sl_send(c.q, cqe.peer, PP_TAG, buf + PP_LEN, PP_LEN, CTX_SEND);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
		rc = h_wait_cqe(c.q, &cqe, NO_PROGRESS_MS);
		CL_REQUIRE(rc == 1 && cqe.status == SL_OK, CL_E_STATUS, "send: %s",
			   rc == 1 ? sl_strerror(cqe.status) : "no completion");
	}
	cl_close(&c);
	_exit(CL_OK);
}

static void pp_client_run(const struct h_daemon *a, const struct h_daemon *b,
			  struct barrier *bar)
{
	sl_addr_t srv = { b->node, PP_PORT };
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	unsigned i, got;
	int rc;

	cl_name = "ping";
	cl_open(&c, a, 0, 8);
	buf = sl_alloc(c.q, 2 * PP_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	barrier_arrive(bar);
	for (i = 0; i < PP_ROUNDS; i++) {
		msg_fill(buf, PP_LEN, 2, i, PP_TAG);
		memset(buf + PP_LEN, 0, PP_LEN);
		rc = sl_recv(c.q, srv, PP_TAG, ~0ull, buf + PP_LEN, PP_LEN, CTX_RECV);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
		rc = sl_send(c.q, srv, PP_TAG, buf, PP_LEN, CTX_SEND);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
		for (got = 0; got < 2; got++) {
			rc = h_wait_cqe(c.q, &cqe, NO_PROGRESS_MS);
			CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "round %u: nothing for %d ms", i,
				   NO_PROGRESS_MS);
			CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "round %u %s: %s", i,
				   cqe.opcode == SL_OP_SEND ? "send" : "receive",
				   sl_strerror(cqe.status));
		}
		CL_REQUIRE(msg_check(buf + PP_LEN, PP_LEN, 2, i, PP_TAG), CL_E_DATA,
			   "round %u: echo differs", i);
	}
	cl_close(&c);
	_exit(CL_OK);
}

struct bystanders {
	pid_t pids[4];
	struct barrier bar;
};

static const char *const bystander_names[4] = { "stream-rx", "stream-tx", "echo", "ping" };

static void bystanders_start(struct bystanders *bs, const struct h_daemon *nodes)
{
	unsigned i;

	barrier_init(&bs->bar);
	for (i = 0; i < 4; i++) {
		bs->pids[i] = h_fork();
		if (bs->pids[i] != 0)
			continue;
		switch (i) {
		case 0: stream_rx_run(&nodes[0], &nodes[1], &bs->bar); break;
		case 1: stream_tx_run(&nodes[0], &nodes[1], &bs->bar); break;
		case 2: pp_server_run(&nodes[1], &bs->bar); break;
		default: pp_client_run(&nodes[0], &nodes[1], &bs->bar); break;
		}
	}
	barrier_release(&bs->bar, bs->pids, bystander_names, 4);
}

static void bystanders_finish(struct bystanders *bs)
{
	expect_clients_ok(bs->pids, bystander_names, 4, 120000);
}

/* ---- the attack's two ends ---- */

struct attack {
	struct sl_ctx *rx_ctx, *tx_ctx;
	struct sl_queue *rx, *tx;
	uint8_t *victim_lo, *target, *victim_hi;	/* adjacent, in that order */
	uint8_t *src;
	struct sl_cqe rx_cqe, tx_cqe;
};

/* A receive of GRANT_LEN on B between two victims, and a send of that
 * length from A; both complete (bounded). */
static void attack_run(struct attack *at, const struct h_daemon *nodes)
{
	uint8_t *buf;

	H_EQ(sl_open(nodes[1].sock, &at->rx_ctx), 0);
	H_EQ(sl_queue_open(at->rx_ctx, ATTACK_PORT, 16, &at->rx), 0);
	H_EQ(sl_open(nodes[0].sock, &at->tx_ctx), 0);
	H_EQ(sl_queue_open(at->tx_ctx, ATTACK_PORT + 1, 16, &at->tx), 0);
	buf = sl_alloc(at->rx, 2 * VICTIM_LEN + GRANT_LEN);
	at->src = sl_alloc(at->tx, GRANT_LEN);
	H_ASSERT(buf && at->src, "sl_alloc");
	at->victim_lo = buf;
	at->target = buf + VICTIM_LEN;
	at->victim_hi = at->target + GRANT_LEN;
	memset(at->victim_lo, VICTIM_BYTE, VICTIM_LEN);
	memset(at->target, 0, GRANT_LEN);
	memset(at->victim_hi, VICTIM_BYTE, VICTIM_LEN);
	msg_fill(at->src, GRANT_LEN, 3, 0, ATTACK_TAG);
	H_EQ(sl_recv(at->rx, sl_queue_addr(at->tx), ATTACK_TAG, ~0ull, at->target, GRANT_LEN,
		     1), 0);
	H_EQ(sl_send(at->tx, sl_queue_addr(at->rx), ATTACK_TAG, at->src, GRANT_LEN, 2), 0);
	H_ASSERT(h_wait_cqe(at->tx, &at->tx_cqe, NO_PROGRESS_MS) == 1,
		 "the sender had no completion in %d ms", NO_PROGRESS_MS);
	H_ASSERT(h_wait_cqe(at->rx, &at->rx_cqe, NO_PROGRESS_MS) == 1,
		 "the receiver had no completion in %d ms", NO_PROGRESS_MS);
	printf("  sender: %s, receiver: %s (%" PRIu64 " bytes)\n",
	       sl_strerror(at->tx_cqe.status), sl_strerror(at->rx_cqe.status), at->rx_cqe.len);
}

static void attack_close(struct attack *at)
{
	H_EQ(sl_queue_close(at->rx), 0);
	H_EQ(sl_queue_close(at->tx), 0);
	sl_close(at->rx_ctx);
	sl_close(at->tx_ctx);
}

/* Bytes of @p (@n) that are not @b. */
static size_t bytes_changed(const uint8_t *p, size_t n, uint8_t b)
{
	size_t i, changed = 0;

	for (i = 0; i < n; i++)
		changed += p[i] != b;
	return changed;
}

/* Bytes where @p and @q (@n each) differ. */
static size_t bytes_differing(const uint8_t *p, const uint8_t *q, size_t n)
{
	size_t i, changed = 0;

	for (i = 0; i < n; i++)
		changed += p[i] != q[i];
	return changed;
}

static void expect_victims_untouched(const struct attack *at)
{
	size_t lo = bytes_changed(at->victim_lo, VICTIM_LEN, VICTIM_BYTE);
	size_t hi = bytes_changed(at->victim_hi, VICTIM_LEN, VICTIM_BYTE);

	printf("  victim bytes changed: %zu below, %zu above\n", lo, hi);
	H_ASSERT(lo == 0 && hi == 0, "victim bytes overwritten: %zu below the target, %zu above",
		 lo, hi);
}

/* Grant violations B counted, by reason, and the first connection kept
 * on both sides. */
struct grant_account {
	uint64_t violations, below, above, revoked, unknown, connects_a, connects_b;
};

static void grant_account(const struct h_daemon *nodes, struct grant_account *g)
{
	struct h_stats st;

	h_daemon_stats(&nodes[1], &st);
	g->connects_b = h_stats_u64(&st, "link.A.connects");
	g->violations = h_stats_u64(&st, "xport.grant_violations");
	g->below = h_stats_u64(&st, "xport.grant_below");
	g->above = h_stats_u64(&st, "xport.grant_above");
	g->revoked = h_stats_u64(&st, "xport.grant_revoked");
	g->unknown = h_stats_u64(&st, "xport.grant_unknown");
	g->connects_a = h_daemon_stat(&nodes[0], "link.B.connects");
	printf("  B: grant violations %" PRIu64 " (below %" PRIu64 ", above %" PRIu64
	       ", revoked %" PRIu64 ", unknown %" PRIu64 "); connects A %" PRIu64 ", B %" PRIu64
	       "\n", g->violations, g->below, g->above, g->revoked, g->unknown, g->connects_a,
	       g->connects_b);
	H_EQ(g->violations, g->below + g->above + g->revoked + g->unknown);
	H_EQ(g->connects_a, 1);
	H_EQ(g->connects_b, 1);
}

/* A shifted rendezvous fails SL_ERR_ACCESS on both sides, its receive
 * completing with no byte reported, and the link stays up. */
static void expect_access_failure(const struct attack *at)
{
	H_ASSERT(at->tx_cqe.status == SL_ERR_ACCESS, "sender: %s, not SL_ERR_ACCESS",
		 sl_strerror(at->tx_cqe.status));
	H_ASSERT(at->rx_cqe.status == SL_ERR_ACCESS, "receiver: %s, not SL_ERR_ACCESS",
		 sl_strerror(at->rx_cqe.status));
	H_EQ(at->rx_cqe.user_ctx, 1);
	H_EQ(at->tx_cqe.user_ctx, 2);
}

/* ------------------------------------------------------------------ */

/*
 * A's writes shifted by its [fault] @a_conf, bystanders beside: the
 * victims stay untouched, the rendezvous fails SL_ERR_ACCESS on both
 * sides (with @target_untouched, no byte of its buffer was written
 * either), the bystanders complete and the link keeps its connection.
 * Returns B's account in @g.
 */
static void shifted_rendezvous(const char *a_conf, bool target_untouched,
			       struct grant_account *g)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = { a_conf, NULL };
	struct h_daemon nodes[2];
	struct bystanders bs;
	struct attack at;

	h_cluster_start_confs(nodes, names, 2, confs);
	bystanders_start(&bs, nodes);
	attack_run(&at, nodes);
	expect_victims_untouched(&at);
	expect_access_failure(&at);
	if (target_untouched)
		H_ASSERT(all_bytes(at.target, GRANT_LEN, 0), "%zu bytes of the target written",
			 bytes_changed(at.target, GRANT_LEN, 0));
	bystanders_finish(&bs);
	grant_account(nodes, g);
	attack_close(&at);
	h_cluster_stop(nodes, 2);
}

/*
 * The write 8 KiB below the granted address (docs/rendezvous-grants.md): before
 * grants, B placed it (the whole 2 MiB chunk was registered): the last
 * 8 KiB of the victim below were overwritten and both ends said SL_OK.
 * Now the first segment is refused (below), the grant revoked at once, so
 * the second is refused too (revoked): the target stays untouched.
 */
START_TEST(write_below_grant)
{
	struct grant_account g;

	shifted_rendezvous("[fault]\nwrite_shift_bytes = -8192\n", true, &g);
	H_EQ(g.below, 1);
	H_EQ(g.above, 0);
	H_EQ(g.unknown, 0);
	H_ASSERT(g.revoked <= 1, "%" PRIu64 " writes refused as revoked, of 1 left", g.revoked);
}
END_TEST

/*
 * Every write 4 KiB above: the first segment lies inside the grant and is
 * placed (the receiver's own buffer, which the rendezvous may write); the
 * last, with the immediate, would end 4 KiB past the grant, over the
 * victim above.  It is refused (above); its immediate is not taken as
 * the end of the rendezvous.
 */
START_TEST(write_above_grant)
{
	struct grant_account g;

	shifted_rendezvous("[fault]\nwrite_shift_bytes = 4096\n", false, &g);
	H_EQ(g.below, 0);
	H_EQ(g.above, 1);
	H_EQ(g.revoked, 0);
	H_EQ(g.unknown, 0);
}
END_TEST

/*
 * A write after the rendezvous ended: A follows its last write (the one
 * with the immediate) with 4 KiB of 0xee to the same place.  Before
 * grants, B placed it into the completed receive's buffer (the cache
 * still held the chunk).  Now the grant died with the rendezvous: the
 * write is refused (revoked), the buffer keeps the message.
 */
START_TEST(write_after_end)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = { "[fault]\nwrite_replay = 1\n", NULL };
	struct h_daemon nodes[2];
	struct bystanders bs;
	struct attack at;
	struct grant_account g;
	int64_t t0;

	h_cluster_start_confs(nodes, names, 2, confs);
	bystanders_start(&bs, nodes);
	attack_run(&at, nodes);
	H_ASSERT(at.tx_cqe.status == SL_OK && at.rx_cqe.status == SL_OK, "sender %s, receiver %s",
		 sl_strerror(at.tx_cqe.status), sl_strerror(at.rx_cqe.status));
	H_EQ(at.rx_cqe.len, GRANT_LEN);
	/* The replay follows the immediate on the stream: wait until B
	 * handled it (placed or refused), watching the buffer. */
	t0 = h_now_ms();
	for (;;) {
		struct h_stats st;
		uint64_t writes;

		H_ASSERT(msg_check(at.target, GRANT_LEN, 3, 0, ATTACK_TAG),
			 "the completed receive's buffer was overwritten: %zu bytes differ",
			 bytes_differing(at.target, at.src, GRANT_LEN));
		h_daemon_stats(&nodes[1], &st);
		writes = h_stats_u64(&st, "xport.writes_rx");
		if (strstr(st.text, "xport.grant_violations ") &&
		    h_stats_u64(&st, "xport.grant_violations") > 0)
			break;
		H_ASSERT(h_now_ms() - t0 < 5000, "no refusal of the replay in 5 s (%" PRIu64
			 " writes placed)", writes);
		h_sleep_ms(20);
	}
	expect_victims_untouched(&at);
	H_ASSERT(msg_check(at.target, GRANT_LEN, 3, 0, ATTACK_TAG), "target changed");
	bystanders_finish(&bs);
	grant_account(nodes, &g);
	H_EQ(g.revoked, 1);
	H_EQ(g.violations, 1);
	attack_close(&at);
	h_cluster_stop(nodes, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("grant");

	/* Check's own timeouts are a backstop only: every wait above is
	 * bounded by a lack of progress. */
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, table_verdicts);
	tcase_add_test(tc, table_bound);
	tcase_add_test(tc, log_limit);
	suite_add_tcase(s, tc);
	tcase_add_test(h_tcase(s, "write_below_grant", 180), write_below_grant);
	tcase_add_test(h_tcase(s, "write_above_grant", 180), write_above_grant);
	tcase_add_test(h_tcase(s, "write_after_end", 180), write_after_end);
	return h_run_suite(s);
}
