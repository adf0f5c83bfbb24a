/*
 * test_unexpected_total.c - the memory a daemon holds for unexpected
 * messages, over all its endpoints: the daemon-wide bound ([limits]
 * unexpected_total_bytes).
 *
 *   total_bound      three endpoints on one daemon that post nothing, each
 *                    under its own unexpected_max_bytes, together reach
 *                    unexpected_total_bytes: exactly as many messages as
 *                    the two bounds let through are taken, local and over a
 *                    link, one at a time and 60 in flight; each refused send
 *                    completes SL_NAK_RECEIVER_FULL once, its buffer
 *                    untouched; a receive posted still takes its message;
 *                    once receives have taken some, sends succeed again.
 *   total_reload     a reload that lowers the bound under what is held
 *                    drops nothing and refuses new messages until the
 *                    total is under the new bound.
 *
 * Real daemons on TCP loopback (tests/harness.c); the test process is the
 * client, with the round trips of tests/client_kit.h.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sluice.h"
#include "testutil.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define CHARGE_OVERHEAD 64u	/* per unexpected message, sluiced.conf(5) */

/* ------------------------------------------------------------------ */
/* total_bound, total_reload                                            */
/* ------------------------------------------------------------------ */

/* Each unexpected eager message is charged its length + 64 (sluiced.conf(5)),
 * so the numbers that fit are exact. */
#define T_LEN 65536u
#define T_CHARGE ((uint64_t)T_LEN + CHARGE_OVERHEAD)
#define T_ENDPOINT_MAX (1ull * MIB)
#define T_TOTAL_MAX (2ull * MIB)
#define T_ENDPOINT_FIT ((unsigned)(T_ENDPOINT_MAX / T_CHARGE))	/* 15 */
#define T_TOTAL_FIT ((unsigned)(T_TOTAL_MAX / T_CHARGE))	/* 31 */
#define T_PORT0 7101u		/* the endpoints that post nothing: T_PORT0 + i */
#define T_ENDPOINTS 3u
#define T_RECV_PORT 7110u	/* posts its receive first */
#define T_TAG 0x70a1u
#define T_SIDE_LEN 1000u
#define T_FLOOD 60u		/* sends in flight at once, round robin */

_Static_assert(T_ENDPOINT_FIT == 15 && T_TOTAL_FIT == 31, "the plan below counts on these");

/* One send of message (@src_id, @seq), @len bytes written into @q's
 * buffer @buf first, waited for; its status returned (a refused send's
 * buffer checked untouched). */
static int t_send(struct sl_queue *q, sl_addr_t dst, uint8_t *buf, size_t len, uint32_t src_id,
		  uint32_t seq)
{
	struct sl_cqe cqe;

	msg_fill(buf, len, src_id, seq, T_TAG);
	cqe = send_wait(q, dst, T_TAG, buf, len, ((uint64_t)src_id << 32) | seq, 5000);
	H_ASSERT(addr_eq(cqe.peer, dst), "send peer %08x:%u, want %08x:%u", cqe.peer.node,
		 cqe.peer.port, dst.node, dst.port);
	if (cqe.status != SL_OK)
		H_ASSERT(msg_check(buf, len, src_id, seq, T_TAG), "refused send %u/%u: buffer "
			 "changed", src_id, seq);
	return cqe.status;
}

#define T_SEND_OK(q, dst, buf, len, id, seq) \
	do { \
		int st_ = t_send((q), (dst), (buf), (len), (id), (seq)); \
		H_ASSERT(st_ == SL_OK, "send %u/%u of %u B: %s", (id), (seq), (unsigned)(len), \
			 sl_strerror(st_)); \
	} while (0)
#define T_SEND_FULL(q, dst, buf, len, id, seq) \
	do { \
		int st_ = t_send((q), (dst), (buf), (len), (id), (seq)); \
		H_ASSERT(st_ == SL_NAK_RECEIVER_FULL, "send %u/%u of %u B: %s, want receiver " \
			 "full", (id), (seq), (unsigned)(len), sl_strerror(st_)); \
	} while (0)

/* Post one receive on @q for the next message from @src and require it
 * to be message (@src_id, @seq) of @len bytes. */
static void t_recv(struct sl_queue *q, sl_addr_t src, uint8_t *buf, size_t len,
		   uint32_t src_id, uint32_t seq)
{
	struct sl_cqe cqe;
	int rc;

	memset(buf, 0, T_LEN);
	rc = sl_recv(q, src, T_TAG, ~0ull, buf, T_LEN, 0x9000 + seq);
	H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	wait_cqes(q, &cqe, 1, 5000);
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 0x9000 + seq && cqe.len == len &&
		 addr_eq(cqe.peer, src), "receive of %u/%u: %s ctx %#llx len %llu (want %zu) "
		 "from %08x:%u", src_id, seq, sl_strerror(cqe.status),
		 (unsigned long long)cqe.user_ctx, (unsigned long long)cqe.len, len,
		 cqe.peer.node, cqe.peer.port);
	H_ASSERT(msg_check(buf, len, src_id, seq, T_TAG), "receive of %u/%u: payload differs",
		 src_id, seq);
}

/* What daemon @d holds and has refused, exactly. */
static void t_expect_held(const struct h_daemon *d, uint64_t n, uint64_t bytes,
			  uint64_t limit, uint64_t naks, uint64_t naks_daemon)
{
	struct h_stats st;

	h_daemon_stats(d, &st);
	H_EQ(h_stats_u64(&st, "daemon.unexpected"), n);
	H_EQ(h_stats_u64(&st, "daemon.unexpected_bytes"), bytes);
	H_EQ(h_stats_u64(&st, "daemon.unexpected_limit_bytes"), limit);
	H_EQ(h_stats_u64(&st, "daemon.naks_receiver_full"), naks);
	H_EQ(h_stats_u64(&st, "daemon.naks_daemon_full"), naks_daemon);
}

/* Wait (up to 5 s) until daemon @d holds @n posted receives. */
static void t_wait_posted(const struct h_daemon *d, uint64_t n)
{
	int64_t deadline = h_now_ms() + 5000;
	uint64_t got;

	while ((got = h_daemon_stat(d, "daemon.posted_recvs")) != n) {
		H_ASSERT(h_now_ms() < deadline, "daemon %s: %llu receives posted after 5 s, want "
			 "%llu", d->name, (unsigned long long)got, (unsigned long long)n);
		h_sleep_ms(5);
	}
}

START_TEST(total_bound)
{
	static const char *const names[] = { "A", "B" };
	char conf[160];
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *e[T_ENDPOINTS], *rq, *sa, *sb;
	sl_addr_t ea[T_ENDPOINTS], rqa, saa, sba;
	uint8_t *abuf, *bbuf, *rbuf, *ebuf[T_ENDPOINTS], *fbuf;
	struct sl_cqe cqe[T_FLOOD], side[2];
	uint64_t held_bytes;
	uint32_t i, k, next_e[T_ENDPOINTS] = { 0 };
	unsigned naks = 0, naks_daemon = 0, held = 0;

	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_TOTAL_MAX);
	h_cluster_start_conf(nodes, names, 2, conf);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	for (i = 0; i < T_ENDPOINTS; i++) {
		H_EQ(sl_queue_open(ca, T_PORT0 + i, 64, &e[i]), 0);
		ea[i] = sl_queue_addr(e[i]);
		ebuf[i] = sl_alloc(e[i], T_LEN);
		H_ASSERT(ebuf[i], "sl_alloc");
	}
	H_EQ(sl_queue_open(ca, T_RECV_PORT, 64, &rq), 0);
	H_EQ(sl_queue_open(ca, 0, 64, &sa), 0);
	H_EQ(sl_queue_open(cb, 0, 64, &sb), 0);
	rqa = sl_queue_addr(rq);
	saa = sl_queue_addr(sa);
	sba = sl_queue_addr(sb);
	abuf = sl_alloc(sa, T_LEN);
	bbuf = sl_alloc(sb, T_LEN);
	fbuf = sl_alloc(sb, (size_t)T_FLOOD * T_LEN);
	rbuf = sl_alloc(rq, T_LEN);
	H_ASSERT(abuf && bbuf && fbuf && rbuf, "sl_alloc");
	t_expect_held(&nodes[0], 0, 0, T_TOTAL_MAX, 0, 0);

	/* Two endpoints filled to their own bound: the 16th is refused by
	 * the endpoint's, not the daemon's. */
	for (k = 0; k < 2; k++) {
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			T_SEND_OK(sa, ea[k], abuf, T_LEN, 1, next_e[k]++);
		T_SEND_FULL(sa, ea[k], abuf, T_LEN, 1, 1000 + k);
		naks++;
	}
	held = 2 * T_ENDPOINT_FIT;
	/* The third takes one more (31 in all), then the daemon is full
	 * although this endpoint holds one message: locally and over the
	 * link. */
	T_SEND_OK(sa, ea[2], abuf, T_LEN, 1, next_e[2]++);
	held++;
	T_SEND_FULL(sa, ea[2], abuf, T_LEN, 1, 1002);
	T_SEND_FULL(sb, ea[2], bbuf, T_LEN, 2, 1003);
	naks += 2;
	naks_daemon += 2;
	held_bytes = (uint64_t)held * T_CHARGE;
	/* The room left, to the byte: 63,552 = 63,488 bytes + 64. */
	T_SEND_FULL(sa, ea[2], abuf, T_TOTAL_MAX - held_bytes - CHARGE_OVERHEAD + 1, 1, 1004);
	naks++;
	naks_daemon++;
	T_SEND_OK(sa, ea[2], abuf, T_TOTAL_MAX - held_bytes - CHARGE_OVERHEAD, 1, next_e[2]++);
	held++;
	held_bytes = T_TOTAL_MAX;
	/* Even an empty message is charged 64: refused everywhere. */
	T_SEND_FULL(sb, ea[0], bbuf, 0, 2, 1005);
	naks++;
	naks_daemon++;
	t_expect_held(&nodes[0], held, held_bytes, T_TOTAL_MAX, naks, naks_daemon);

	/* A message that meets a posted receive is never refused (posted
	 * means taken by the daemon, not only written to rq's ring). */
	H_EQ(sl_recv(rq, saa, T_TAG, ~0ull, rbuf, T_LEN, 0xa000), 0);
	H_EQ(sl_recv(rq, sba, T_TAG, ~0ull, rbuf + T_SIDE_LEN, T_LEN - T_SIDE_LEN, 0xa001), 0);
	t_wait_posted(&nodes[0], 2);
	T_SEND_OK(sa, rqa, abuf, T_SIDE_LEN, 3, 0);
	T_SEND_OK(sb, rqa, bbuf, T_SIDE_LEN, 4, 0);
	wait_cqes(rq, side, 2, 5000);
	for (i = 0; i < 2; i++) {
		H_ASSERT(side[i].status == SL_OK && side[i].user_ctx == 0xa000 + i &&
			 side[i].len == T_SIDE_LEN, "posted receive %u: %s ctx %#llx", i,
			 sl_strerror(side[i].status), (unsigned long long)side[i].user_ctx);
		H_ASSERT(msg_check(rbuf + i * T_SIDE_LEN, T_SIDE_LEN, 3 + i, 0, T_TAG),
			 "posted receive %u: payload differs", i);
	}
	t_expect_held(&nodes[0], held, held_bytes, T_TOTAL_MAX, naks, naks_daemon);

	/* One receive makes room for exactly one more 64 KiB message, at any
	 * endpoint: to the byte again. */
	t_recv(e[0], saa, ebuf[0], T_LEN, 1, 0);
	T_SEND_OK(sb, ea[2], bbuf, T_LEN, 2, 0);
	T_SEND_FULL(sa, ea[1], abuf, 0, 1, 1006);
	naks++;
	naks_daemon++;
	t_expect_held(&nodes[0], held, T_TOTAL_MAX, T_TOTAL_MAX, naks, naks_daemon);

	/* Everything held comes out, in order, refused sends absent. */
	for (i = 1; i < T_ENDPOINT_FIT; i++)
		t_recv(e[0], saa, ebuf[0], T_LEN, 1, i);
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[1], saa, ebuf[1], T_LEN, 1, i);
	t_recv(e[2], saa, ebuf[2], T_LEN, 1, 0);
	t_recv(e[2], saa, ebuf[2], T_TOTAL_MAX - (uint64_t)T_TOTAL_FIT * T_CHARGE -
	       CHARGE_OVERHEAD, 1, 1);
	t_recv(e[2], sba, ebuf[2], T_LEN, 2, 0);
	for (i = 0; i < T_ENDPOINTS; i++)
		expect_no_cqe(e[i], 20);
	t_expect_held(&nodes[0], 0, 0, T_TOTAL_MAX, naks, naks_daemon);

	/*
	 * 60 sends in flight at once over the link, round robin over the
	 * three endpoints.  The link delivers them in order, so the bounds
	 * decide each exactly: 10 rounds fit (30 messages), the 31st fits
	 * the total, and the daemon refuses every later one, each endpoint
	 * being far under its own bound.
	 */
	for (k = 0; k < T_FLOOD; k++) {
		msg_fill(fbuf + (size_t)k * T_LEN, T_LEN, 5, k, T_TAG);
		H_EQ(sl_send(sb, ea[k % T_ENDPOINTS], T_TAG, fbuf + (size_t)k * T_LEN, T_LEN, k),
		     0);
	}
	wait_cqes(sb, cqe, T_FLOOD, 10000);
	{
		bool seen[T_FLOOD] = { false };

		for (i = 0; i < T_FLOOD; i++) {
			uint64_t c = cqe[i].user_ctx;

			H_ASSERT(c < T_FLOOD && !seen[c], "flood completion ctx %llu %s",
				 (unsigned long long)c, c < T_FLOOD ? "twice" : "unknown");
			seen[c] = true;
			H_ASSERT(cqe[i].status == (c < T_TOTAL_FIT ? SL_OK : SL_NAK_RECEIVER_FULL),
				 "flood send %llu: %s", (unsigned long long)c,
				 sl_strerror(cqe[i].status));
			if (c >= T_TOTAL_FIT)
				H_ASSERT(msg_check(fbuf + c * T_LEN, T_LEN, 5, (uint32_t)c, T_TAG),
					 "refused flood send %llu: buffer changed", (unsigned long long)c);
		}
	}
	expect_no_cqe(sb, 20);
	naks += T_FLOOD - T_TOTAL_FIT;
	naks_daemon += T_FLOOD - T_TOTAL_FIT;
	t_expect_held(&nodes[0], T_TOTAL_FIT, (uint64_t)T_TOTAL_FIT * T_CHARGE, T_TOTAL_MAX, naks,
		      naks_daemon);
	for (k = 0; k < T_TOTAL_FIT; k++)
		t_recv(e[k % T_ENDPOINTS], sba, ebuf[k % T_ENDPOINTS], T_LEN, 5, k);
	for (i = 0; i < T_ENDPOINTS; i++)
		expect_no_cqe(e[i], 20);

	/* Empty again: an endpoint takes its own bound's worth once more. */
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		T_SEND_OK(sb, ea[0], bbuf, T_LEN, 2, 100 + i);
	T_SEND_FULL(sb, ea[0], bbuf, T_LEN, 2, 100 + T_ENDPOINT_FIT);
	naks++;
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[0], sba, ebuf[0], T_LEN, 2, 100 + i);
	t_expect_held(&nodes[0], 0, 0, T_TOTAL_MAX, naks, naks_daemon);
	expect_no_cqe(sa, 10);
	expect_no_cqe(sb, 10);
	expect_no_cqe(rq, 10);
	printf("total_bound: %u x %u B fit per endpoint (%llu), %u over all (%llu); %u refused, "
	       "%u of them by the daemon-wide bound\n", T_ENDPOINT_FIT, T_LEN,
	       (unsigned long long)T_ENDPOINT_MAX, T_TOTAL_FIT, (unsigned long long)T_TOTAL_MAX,
	       naks, naks_daemon);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* Rewrite @d's configuration file with @conf and reload it; returns once
 * the daemon says it applied @n_changes. */
static void t_reload(const struct h_daemon *d, const char *conf, unsigned n_changes,
		     unsigned n_reloads)
{
	char path[H_PATH_MAX + 16], want[64];
	FILE *f;
	int64_t deadline;

	snprintf(path, sizeof(path), "%s/sluiced.conf", d->dir);
	f = fopen(path, "w");
	H_ASSERT(f && fputs(conf, f) >= 0 && fclose(f) == 0, "writing %s: %s", path,
		 strerror(errno));
	H_EQ(kill(d->pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "%u changes applied, 0 need a restart", n_changes);
	deadline = h_now_ms() + 5000;
	while (tu_log_lines(d, want) < n_reloads) {
		H_ASSERT(h_now_ms() < deadline, "no '%s' in %s within 5 s", want, d->log);
		h_sleep_ms(10);
	}
}

START_TEST(total_reload)
{
	char conf[160];
	struct h_daemon a;
	struct sl_ctx *ca;
	struct sl_queue *e[2], *sa;
	sl_addr_t ea[2], saa;
	uint8_t *abuf, *rbuf[2];
	uint32_t i, k;
	unsigned naks = 0, naks_daemon = 0;

	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_TOTAL_MAX);
	h_daemon_start_conf(&a, "A", 0, NULL, 0, conf);
	H_EQ(sl_open(a.sock, &ca), 0);
	for (i = 0; i < 2; i++) {
		H_EQ(sl_queue_open(ca, T_PORT0 + i, 64, &e[i]), 0);
		ea[i] = sl_queue_addr(e[i]);
		rbuf[i] = sl_alloc(e[i], T_LEN);
		H_ASSERT(rbuf[i], "sl_alloc");
	}
	H_EQ(sl_queue_open(ca, 0, 64, &sa), 0);
	saa = sl_queue_addr(sa);
	abuf = sl_alloc(sa, T_LEN);
	H_ASSERT(abuf, "sl_alloc");
	for (k = 0; k < 2; k++)
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			T_SEND_OK(sa, ea[k], abuf, T_LEN, k, i);
	t_expect_held(&a, 2 * T_ENDPOINT_FIT, 2ull * T_ENDPOINT_FIT * T_CHARGE, T_TOTAL_MAX, 0,
		      0);

	/* Lowered under what is held (1,968,000 bytes > 1 MiB): all of it
	 * stays, and nothing new is taken. */
	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_ENDPOINT_MAX);
	t_reload(&a, conf, 1, 1);
	t_expect_held(&a, 2 * T_ENDPOINT_FIT, 2ull * T_ENDPOINT_FIT * T_CHARGE, T_ENDPOINT_MAX,
		      0, 0);
	T_SEND_FULL(sa, ea[1], abuf, 0, 9, 0);
	naks++;
	naks_daemon++;
	/* Taking one endpoint's messages brings the total under the new
	 * bound (984,000 bytes): 64 KiB more would pass it, 1000 bytes not. */
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[0], saa, rbuf[0], T_LEN, 0, i);
	T_SEND_FULL(sa, ea[0], abuf, T_LEN, 9, 1);
	naks++;
	naks_daemon++;
	T_SEND_OK(sa, ea[0], abuf, T_SIDE_LEN, 9, 2);
	t_expect_held(&a, T_ENDPOINT_FIT + 1, T_ENDPOINT_FIT * T_CHARGE + T_SIDE_LEN +
		      CHARGE_OVERHEAD, T_ENDPOINT_MAX, naks, naks_daemon);
	/* Every message held across the reload is received whole. */
	for (i = 0; i < T_ENDPOINT_FIT; i++)
		t_recv(e[1], saa, rbuf[1], T_LEN, 1, i);
	t_recv(e[0], saa, rbuf[0], T_SIDE_LEN, 9, 2);
	t_expect_held(&a, 0, 0, T_ENDPOINT_MAX, naks, naks_daemon);

	/* Raised again: two endpoints' worth fit once more. */
	snprintf(conf, sizeof(conf),
		 "[limits]\nunexpected_max_bytes = %llu\nunexpected_total_bytes = %llu\n",
		 (unsigned long long)T_ENDPOINT_MAX, (unsigned long long)T_TOTAL_MAX);
	t_reload(&a, conf, 1, 2);
	for (k = 0; k < 2; k++)
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			T_SEND_OK(sa, ea[k], abuf, T_LEN, k, 100 + i);
	for (k = 0; k < 2; k++)
		for (i = 0; i < T_ENDPOINT_FIT; i++)
			t_recv(e[k], saa, rbuf[k], T_LEN, k, 100 + i);
	t_expect_held(&a, 0, 0, T_TOTAL_MAX, naks, naks_daemon);
	expect_no_cqe(sa, 10);
	sl_close(ca);
	h_daemon_stop(&a);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *unexpected_total_suite(void)
{
	Suite *s = suite_create("unexpected_total");
	TCase *tc;

	tc = h_tcase(s, "total_bound", 120);
	tcase_add_test(tc, total_bound);
	tcase_add_test(tc, total_reload);
	return s;
}

int main(void)
{
	return h_run_suite(unexpected_total_suite());
}
