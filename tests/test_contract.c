/*
 * test_contract.c - what the manual pages promise, held to the daemon's
 * numbers (docs/completions.md): real daemons (tests/harness.c), clients in
 * the test process.
 *
 * Cases (CK_RUN_CASE=name):
 *   unexpected_charge  one node, [limits] unexpected_max_bytes = 64K:
 *                      eager and rendezvous messages no receive is posted
 *                      for; after each, the unexpected_bytes gauge (the
 *                      statistics file, and sluicectl's queue row) equals
 *                      the charge sluiced.conf(5) gives (eager: length +
 *                      64, rendezvous: 96), the send past the bound
 *                      completes SL_NAK_RECEIVER_FULL exactly where that
 *                      formula says, and receives give the charge back
 *   reg_limit          two nodes, A with [rcache] chunk_bytes = 1M and
 *                      max_bytes = 4M: a rendezvous whose registration
 *                      would span more than 4M completes SL_ERR_REG_LIMIT,
 *                      on A's send side and on A's receive side, buffer
 *                      untouched; one spanning exactly 4M is delivered;
 *                      eager messages and rendezvous within a node never
 *                      register and are not limited
 *   strerror           sl_strerror() names the new status
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "harness.h"
#include "sl_shm.h"
#include "sluice.h"
#include "testutil.h"

#define CQE_WAIT_MS 10000	/* no completion this long: the test fails */
#define RUN_TIMEOUT_MS 10000
#define KIB 1024ull
#define MIB (1024ull * 1024)

static sl_addr_t addr_of(uint32_t node, uint32_t port)
{
	return (sl_addr_t){ .node = node, .port = port };
}

/* One completion of @q with @user_ctx and @status, within CQE_WAIT_MS. */
static struct sl_cqe expect_cqe(struct sl_queue *q, uint64_t user_ctx, int status,
				const char *what)
{
	struct sl_cqe c;

	wait_cqes(q, &c, 1, CQE_WAIT_MS);
	H_ASSERT(c.user_ctx == user_ctx, "%s: completion for ctx %llu, expected %llu", what,
		 (unsigned long long)c.user_ctx, (unsigned long long)user_ctx);
	H_ASSERT(c.status == status, "%s: %s (%d), expected %s (%d)", what, sl_strerror(c.status),
		 c.status, sl_strerror(status), status);
	return c;
}

static void post_send(struct sl_queue *q, sl_addr_t dst, uint64_t tag, const void *buf,
		      size_t len, uint64_t user_ctx)
{
	int rc = sl_send(q, dst, tag, buf, len, user_ctx);

	H_ASSERT(rc == 0, "sl_send %zu bytes: %s", len, strerror(-rc));
}

static void post_recv(struct sl_queue *q, uint64_t tag, void *buf, size_t capacity,
		      uint64_t user_ctx)
{
	int rc = sl_recv(q, SL_ANY_SOURCE, tag, ~0ull, buf, capacity, user_ctx);

	H_ASSERT(rc == 0, "sl_recv %zu bytes: %s", capacity, strerror(-rc));
}

/* ------------------------------------------------------------------ */
/* unexpected_charge                                                    */
/* ------------------------------------------------------------------ */

/* The charge sluiced.conf(5) gives for one unexpected message. */
#define DOC_EAGER_OVERHEAD 64u
#define DOC_RNDV_CHARGE 96u
#define U_BOUND (64 * KIB)	/* [limits] unexpected_max_bytes, the smallest */
#define U_EAGER_MAX (64 * KIB)	/* [transport] eager_max default */
#define U_RNDV_LEN (U_EAGER_MAX + 1)
#define U_SRC_PORT 100u
#define U_DST_PORT 200u
#define U_TAG 7u

/* sluicectl --json @command against @d, parsed (the caller puts it). */
static struct json_object *ctl_json(const struct h_daemon *d, const char *command)
{
	static char out[1 << 16];
	const char *top = getenv("top_builddir");
	char bin[512];
	const char *argv[] = { bin, "-r", d->dir, "--json", command, NULL };
	struct json_object *o;
	int rc;

	snprintf(bin, sizeof(bin), "%s/tools/sluicectl", top && *top ? top : ".");
	rc = h_run(argv, out, sizeof(out), RUN_TIMEOUT_MS);
	H_ASSERT(rc == 0, "sluicectl --json %s: %d: %s", command, rc, out);
	o = json_tokener_parse(out);
	H_ASSERT(o, "sluicectl --json %s: not JSON: %s", command, out);
	return o;
}

/* Numeric member @key of @o; fatal when missing. */
static uint64_t ju64(struct json_object *o, const char *key)
{
	struct json_object *v;

	H_ASSERT(json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int),
		 "no number %s in %s", key, json_object_to_json_string(o));
	return json_object_get_uint64(v);
}

/* The unexpected_bytes of the queue on @port in sluicectl's queue list. */
static uint64_t ctl_queue_unexpected_bytes(const struct h_daemon *d, uint64_t port)
{
	struct json_object *o = ctl_json(d, "queues"), *arr, *q;
	uint64_t bytes = UINT64_MAX;
	size_t i;

	H_ASSERT(json_object_object_get_ex(o, "queues", &arr), "sluicectl queues: no queues");
	for (i = 0; i < json_object_array_length(arr); i++) {
		q = json_object_array_get_idx(arr, i);
		if (ju64(q, "port") == port)
			bytes = ju64(q, "unexpected_bytes");
	}
	json_object_put(o);
	H_ASSERT(bytes != UINT64_MAX, "sluicectl: no queue on port %llu", (unsigned long long)port);
	return bytes;
}

/* Completions with status @name (sluicectl counters) written by @d. */
static uint64_t ctl_completions(const struct h_daemon *d, const char *name)
{
	struct json_object *o = ctl_json(d, "counters"), *comp;
	uint64_t n;

	H_ASSERT(json_object_object_get_ex(o, "completions", &comp), "sluicectl counters");
	n = ju64(comp, name);
	json_object_put(o);
	return n;
}

/* What the daemon's gauge and sluicectl say now, both @want. */
static void expect_gauge(const struct h_daemon *d, uint64_t want, const char *when)
{
	uint64_t file = h_daemon_stat(d, "daemon.unexpected_bytes");
	uint64_t ctl = ctl_queue_unexpected_bytes(d, U_DST_PORT);

	H_ASSERT(file == want && ctl == want,
		 "%s: unexpected_bytes %llu (stats file), %llu (sluicectl), charged %llu", when,
		 (unsigned long long)file, (unsigned long long)ctl, (unsigned long long)want);
}

/* Wait until @d holds @n unexpected messages: a rendezvous send is queued
 * without a completion to wait for.  Fatal after CQE_WAIT_MS. */
static void wait_unexpected(const struct h_daemon *d, uint64_t n)
{
	int64_t deadline = h_now_ms() + CQE_WAIT_MS;
	uint64_t got;

	while ((got = h_daemon_stat(d, "daemon.unexpected")) != n) {
		H_ASSERT(h_now_ms() < deadline, "%llu unexpected messages after %d ms, not %llu",
			 (unsigned long long)got, CQE_WAIT_MS, (unsigned long long)n);
		h_sleep_ms(5);
	}
}

START_TEST(unexpected_charge)
{
	/* Eager messages of 1000 bytes: with 64 bytes each of bookkeeping
	 * 61 fit in 64 KiB (64904 bytes) and the 62nd is refused; with the
	 * 48 the page used to give, 62 would fit.  Then a rendezvous
	 * header (96), an empty message (64) and one that fills the bound
	 * to the byte (408 + 64 = 472: 65536), after which even an empty
	 * message is refused. */
	static const struct {
		uint64_t len;
		int status;
	} tail[] = {
		{ 1000, SL_NAK_RECEIVER_FULL },
		{ U_RNDV_LEN, SL_OK },
		{ 0, SL_OK },
		{ 408, SL_OK },
		{ 0, SL_NAK_RECEIVER_FULL },
		{ 1, SL_NAK_RECEIVER_FULL },
	};
	const unsigned n_fit = 61;
	struct h_daemon d;
	struct sl_ctx *ctx;
	struct sl_queue *qs, *qr;
	uint8_t *sbuf, *rbuf;
	uint64_t charged = 0, ctx_id = 0, rndv_msgs = 0, msgs = 0;
	char when[64];
	unsigned i;

	h_daemon_start_conf(&d, "solo", 0, NULL, 0,
			    "[limits]\nunexpected_max_bytes = 64K\n");
	H_EQ(sl_open(d.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, U_SRC_PORT, 64, &qs), 0);
	H_EQ(sl_queue_open(ctx, U_DST_PORT, 64, &qr), 0);
	sbuf = sl_alloc(qs, U_RNDV_LEN);
	rbuf = sl_alloc(qr, U_RNDV_LEN);
	H_ASSERT(sbuf && rbuf, "sl_alloc: %s", strerror(errno));
	memset(sbuf, 0x3c, U_RNDV_LEN);
	expect_gauge(&d, 0, "before");

	for (i = 0; i < n_fit; i++) {
		post_send(qs, addr_of(SL_NODE_LOCAL, U_DST_PORT), U_TAG, sbuf, 1000, ++ctx_id);
		snprintf(when, sizeof(when), "eager message %u of 1000 bytes", i + 1);
		expect_cqe(qs, ctx_id, SL_OK, when);
		charged += 1000 + DOC_EAGER_OVERHEAD;
		msgs++;
		expect_gauge(&d, charged, when);
	}
	H_EQ(charged, 64904);
	for (i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
		bool rndv = tail[i].len > U_EAGER_MAX;

		post_send(qs, addr_of(SL_NODE_LOCAL, U_DST_PORT), U_TAG, sbuf, tail[i].len,
			  ++ctx_id);
		/* A rendezvous send completes when a receive takes it. */
		if (!rndv || tail[i].status != SL_OK) {
			snprintf(when, sizeof(when), "message %u of %llu bytes", n_fit + i + 1,
				 (unsigned long long)tail[i].len);
			expect_cqe(qs, ctx_id, tail[i].status, when);
		}
		if (tail[i].status == SL_OK) {
			charged += rndv ? DOC_RNDV_CHARGE : tail[i].len + DOC_EAGER_OVERHEAD;
			msgs++;
			rndv_msgs += rndv;
		}
		wait_unexpected(&d, msgs);
		snprintf(when, sizeof(when), "after message %u (%llu bytes, %s)", n_fit + i + 1,
			 (unsigned long long)tail[i].len, sl_strerror(tail[i].status));
		expect_gauge(&d, charged, when);
	}
	H_EQ(charged, U_BOUND);
	H_EQ(h_daemon_stat(&d, "daemon.unexpected"), msgs);
	H_EQ(h_daemon_stat(&d, "daemon.naks_receiver_full"), 3);

	/* Receives take them in order and give each charge back. */
	for (i = 0; i < msgs; i++) {
		struct sl_cqe c;
		uint64_t len;

		post_recv(qr, U_TAG, rbuf, U_RNDV_LEN, 1000 + i);
		c = expect_cqe(qr, 1000 + i, SL_OK, "receive");
		len = c.len;
		if (len > U_EAGER_MAX) {
			expect_cqe(qs, n_fit + 2, SL_OK, "rendezvous send, taken");
			charged -= DOC_RNDV_CHARGE;
		} else {
			charged -= len + DOC_EAGER_OVERHEAD;
		}
		H_ASSERT(all_bytes(rbuf, (size_t)len, 0x3c), "receive %u: payload", i);
	}
	H_EQ(charged, 0);
	H_EQ(rndv_msgs, 1);
	expect_gauge(&d, 0, "all received");
	printf("unexpected_charge: bound %llu B: %u x 1000 B eager (%u B each) = 64904 B, "
	       "62nd refused; + rendezvous 96 + empty 64 + 408 B (472) = %llu B, then refused\n",
	       (unsigned long long)U_BOUND, n_fit, 1000 + DOC_EAGER_OVERHEAD,
	       (unsigned long long)U_BOUND);
	H_EQ(sl_queue_close(qs), 0);
	H_EQ(sl_queue_close(qr), 0);
	sl_close(ctx);
	h_daemon_stop(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* reg_limit                                                            */
/* ------------------------------------------------------------------ */

#define R_CHUNK MIB		/* node A's [rcache] chunk_bytes */
#define R_MAX (4 * MIB)		/* node A's [rcache] max_bytes */
#define R_PORT_A 1001u
#define R_PORT_A2 1002u
#define R_PORT_B 2001u
#define R_SEND_BYTE 0xa5
#define R_UNTOUCHED 0xee

/*
 * A buffer at arena offset @off of @q, from a block taken at the start of
 * a fresh queue's arena: the first block's data begins ARENA_HDR bytes
 * in (a 64-byte header, libclient/arena.h), so @off is a real arena
 * offset and registrations cover known chunks.
 */
#define ARENA_HDR 64u
static uint8_t *arena_at(uint8_t *first_block, uint64_t off)
{
	return first_block - ARENA_HDR + off;
}

START_TEST(reg_limit)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[] = {
		"[rcache]\nchunk_bytes = 1M\nmax_bytes = 4M\n",
		NULL,
	};
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qa2, *qb;
	uint8_t *blk_a, *blk_a2, *blk_b, *buf;
	sl_addr_t a, a2, b;
	struct sl_cqe c;

	h_cluster_start_confs(nodes, names, 2, confs);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, R_PORT_A, 16, &qa), 0);
	H_EQ(sl_queue_open(ca, R_PORT_A2, 16, &qa2), 0);
	H_EQ(sl_queue_open(cb, R_PORT_B, 16, &qb), 0);
	a = sl_queue_addr(qa);
	a2 = sl_queue_addr(qa2);
	b = sl_queue_addr(qb);
	/* 12 MiB from offset 64: chunk-aligned buffers at 1M, 6M, ... */
	blk_a = sl_alloc(qa, 12 * MIB);
	blk_a2 = sl_alloc(qa2, 12 * MIB);
	blk_b = sl_alloc(qb, 12 * MIB);
	H_ASSERT(blk_a && blk_a2 && blk_b, "sl_alloc: %s", strerror(errno));
	memset(blk_a, R_SEND_BYTE, 12 * MIB);
	memset(blk_b, R_SEND_BYTE, 12 * MIB);

	/* Send side.  A sends 4M + 1 bytes from offset 1M: chunks 1M..6M,
	 * 5M registered > 4M.  B's receive stays posted (B could register
	 * it) and then takes a message spanning exactly 4M. */
	buf = arena_at(blk_b, 6 * MIB);
	memset(buf, R_UNTOUCHED, 5 * MIB);
	post_recv(qb, 1, buf, 5 * MIB, 10);
	post_send(qa, b, 1, arena_at(blk_a, 1 * MIB), R_MAX + 1, 11);
	c = expect_cqe(qa, 11, SL_ERR_REG_LIMIT, "A: send of 4M + 1 from a chunk boundary");
	H_EQ(c.len, R_MAX + 1);
	/* 4M from 64 bytes past a chunk boundary touches 5 chunks too. */
	post_send(qa, b, 1, arena_at(blk_a, 1 * MIB + 64), R_MAX, 12);
	expect_cqe(qa, 12, SL_ERR_REG_LIMIT, "A: send of 4M, 64 B past a chunk boundary");
	expect_no_cqe(qb, 200);
	H_ASSERT(all_bytes(buf, 5 * MIB, R_UNTOUCHED), "B's receive buffer was written");
	post_send(qa, b, 1, arena_at(blk_a, 1 * MIB), R_MAX, 13);
	expect_cqe(qa, 13, SL_OK, "A: send of exactly 4M from a chunk boundary");
	c = expect_cqe(qb, 10, SL_OK, "B: receive of the 4M message");
	H_EQ(c.len, R_MAX);
	H_ASSERT(all_bytes(buf, R_MAX, R_SEND_BYTE) &&
		 all_bytes(buf + R_MAX, MIB, R_UNTOUCHED), "B: 4M received");

	/* Receive side.  A's receive of 4M + 1 at offset 1M: A cannot
	 * register it, so both ends complete with the limit, A's buffer
	 * untouched. */
	buf = arena_at(blk_a, 1 * MIB);
	memset(buf, R_UNTOUCHED, 5 * MIB);
	post_recv(qa, 2, buf, R_MAX + 1, 20);
	post_send(qb, a, 2, arena_at(blk_b, 1 * MIB), R_MAX + 1, 21);
	expect_cqe(qb, 21, SL_ERR_REG_LIMIT, "B: send of 4M + 1 into A's receive");
	c = expect_cqe(qa, 20, SL_ERR_REG_LIMIT, "A: receive of 4M + 1 at a chunk boundary");
	H_EQ(c.len, R_MAX + 1);
	H_EQ(c.tag, 2);
	H_ASSERT(addr_eq(c.peer, b), "A: receive peer %08x:%u", c.peer.node, c.peer.port);
	H_ASSERT(all_bytes(buf, 5 * MIB, R_UNTOUCHED), "A's receive buffer was written");
	/* What is written is what counts: 4M + 1 into a 4M receive. */
	post_recv(qa, 2, buf, R_MAX, 22);
	post_send(qb, a, 2, arena_at(blk_b, 1 * MIB), R_MAX + 1, 23);
	expect_cqe(qb, 23, SL_OK, "B: send of 4M + 1 into a 4M receive");
	c = expect_cqe(qa, 22, SL_ERR_TRUNCATED, "A: 4M receive of 4M + 1");
	H_EQ(c.len, R_MAX + 1);
	H_ASSERT(all_bytes(buf, R_MAX, R_SEND_BYTE) && all_bytes(buf + R_MAX, MIB, R_UNTOUCHED),
		 "A: 4M received");

	/* No registration, no limit: an eager message into a receive far
	 * larger than 4M, and a 5M rendezvous within node A. */
	memset(buf, R_UNTOUCHED, 5 * MIB);
	post_recv(qa, 3, buf, 8 * MIB, 30);
	post_send(qb, a, 3, arena_at(blk_b, 1 * MIB), 1000, 31);
	expect_cqe(qb, 31, SL_OK, "B: eager send into an 8M receive");
	c = expect_cqe(qa, 30, SL_OK, "A: 8M receive of 1000 bytes");
	H_EQ(c.len, 1000);
	post_recv(qa, 4, buf, 5 * MIB, 40);
	memset(blk_a2, R_SEND_BYTE, 12 * MIB);
	post_send(qa2, a, 4, arena_at(blk_a2, 1 * MIB), 5 * MIB, 41);
	expect_cqe(qa2, 41, SL_OK, "A: 5M send within the node");
	c = expect_cqe(qa, 40, SL_OK, "A: 5M receive within the node");
	H_EQ(c.len, 5 * MIB);
	H_ASSERT(all_bytes(buf, 5 * MIB, R_SEND_BYTE), "A: 5M received within the node");
	(void)a2;

	H_EQ(ctl_completions(&nodes[0], "reg_limit"), 3);
	H_EQ(ctl_completions(&nodes[1], "reg_limit"), 1);
	H_EQ(ctl_completions(&nodes[0], "invalid"), 0);
	H_EQ(ctl_completions(&nodes[1], "invalid"), 0);
	printf("reg_limit: A (chunk 1M, max_bytes 4M): sends of 4M+1 @1M and 4M @1M+64 and a "
	       "receive of 4M+1 @1M complete SL_ERR_REG_LIMIT; 4M @1M, eager, and 5M within "
	       "the node complete SL_OK\n");
	H_EQ(sl_queue_close(qa), 0);
	H_EQ(sl_queue_close(qa2), 0);
	H_EQ(sl_queue_close(qb), 0);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* strerror                                                             */
/* ------------------------------------------------------------------ */

START_TEST(strerror_names)
{
	H_EQ(SL_ERR_REG_LIMIT, 23);
	ck_assert_str_eq(sl_strerror(SL_ERR_REG_LIMIT), "over registration limit");
	ck_assert_str_eq(sl_strerror(SL_ERR_INVALID), "invalid descriptor");
	ck_assert_str_eq(sl_strerror(SL_ERR_UNKNOWN_NODE), "unknown node");
	H_EQ(SL_ERR_STALLED, 25);
	ck_assert_str_eq(sl_strerror(SL_ERR_STALLED), "stalled: queue failed");
	H_EQ(SL_ERR_NO_MESSAGE, 26);
	ck_assert_str_eq(sl_strerror(SL_ERR_NO_MESSAGE), "no message");
	H_EQ(SL_ERR_NOT_FOUND, 27);
	ck_assert_str_eq(sl_strerror(SL_ERR_NOT_FOUND), "not found");
	ck_assert_str_eq(sl_strerror(SL_ERR_NOT_FOUND + 1), "unknown status");
	/* The probe, claim and cancel opcodes and the CQE's claim (ABI: offset 48). */
	H_EQ(SL_OP_PROBE, 3);
	H_EQ(SL_OP_CANCEL, 4);
	H_EQ(SL_SQE_OP_PROBE, 3);
	H_EQ(SL_SQE_OP_CANCEL, 4);
	H_EQ(SL_SQE_OP_RECV_CLAIMED, 5);
	H_EQ(SL_PROBE_CLAIM, 1);
	H_EQ(SL_PROBE_DISCARD, 2);
	H_EQ(offsetof(struct sl_cqe, claim), 48);
	H_EQ(offsetof(struct sl_sqe, rsvd2), 56);
	H_EQ(sizeof(struct sl_cqe), 64);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("contract");
	TCase *tc;

	tc = h_tcase(s, "unexpected_charge", 60);
	tcase_add_test(tc, unexpected_charge);
	tc = h_tcase(s, "reg_limit", 60);
	tcase_add_test(tc, reg_limit);
	tc = h_tcase(s, "strerror", 10);
	tcase_add_test(tc, strerror_names);
	return h_run_suite(s);
}
