/*
 * test_contract.c - what the manual pages promise, held to the daemon's
 * numbers (issue 13, section 4): real daemons (tests/harness.c), clients in
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
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "harness.h"
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

/* Is every byte of @buf @byte? */
static bool all_bytes(const uint8_t *buf, size_t len, uint8_t byte)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != byte)
			return false;
	return true;
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

/* What the daemon's gauge and sluicectl say now, both @want. */
static void expect_gauge(const struct h_daemon *d, uint64_t want, const char *when)
{
	uint64_t file = h_daemon_stat(d, "daemon.unexpected_bytes");
	uint64_t ctl = ctl_queue_unexpected_bytes(d, U_DST_PORT);

	H_ASSERT(file == want && ctl == want,
		 "%s: unexpected_bytes %llu (stats file), %llu (sluicectl), charged %llu", when,
		 (unsigned long long)file, (unsigned long long)ctl, (unsigned long long)want);
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

int main(void)
{
	Suite *s = suite_create("contract");
	TCase *tc;

	tc = h_tcase(s, "unexpected_charge", 60);
	tcase_add_test(tc, unexpected_charge);
	return h_run_suite(s);
}
