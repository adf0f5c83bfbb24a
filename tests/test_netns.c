/*
 * test_netns.c - a real network partition between two daemons: each in
 * its own network namespace, joined by a veth pair, with nftables
 * dropping every packet on the link, in both directions, for a while
 * (silently for the daemons: no RST, no ICMP, no socket error).  What
 * test_links.c stands in for with SIGSTOP, here with the kernels of both
 * ends alive.
 *
 * Needs root, ip (iproute2) and nft (nftables); without them, or when a
 * namespace cannot be made, each test prints "SKIPPED: <reason>" and
 * passes (SLUICE_STRICT_NETNS=1 makes that a failure).  Namespaces and
 * veths are named after the test process (tests/harness.h, struct
 * h_netpair), removed at the end of each test and on a failure, and those
 * of a test killed by Check's timeout are removed by the next run.
 *
 * The daemons listen on their namespace's veth address; the test and its
 * clients stay in the root namespace and reach the daemons' control
 * sockets by path.  A (node id below B's) dials; B accepts.  The first two
 * tests drop in B's namespace, both directions (h_netpair_drop(np, 1));
 * the third cuts the cable (H_NETPAIR_WIRE: drops as packets arrive, in
 * both namespaces), so that B's kernel transmits as it would into a real
 * partition.
 *   partition_peer_timeout  A (peer_timeout_ms 1000, ack_timeout_ms 200)
 *                      has 54 sends to B1 on the wire when the link drops
 *                      everything: each fails SL_ERR_PEER_DOWN once, 1.0 to
 *                      1.5 s after the drop, a new one fails at once; once
 *                      the link passes packets again it comes back with the
 *                      same incarnation and carries a new message
 *   partition_heals    cases C14 (variant 3b) and C08 over a 3 s partition:
 *                      200 x 1 MiB and 2,000 x 1 KiB from A1 to B1 all
 *                      complete SL_OK once and arrive once, verified, and
 *                      both links end idle with registrations balanced
 *   partition_idle_dialer  the node that accepts sends, the node that
 *                      dials only receives; after a cut longer than the
 *                      kernel keeps the closed socket, the link must come
 *                      back once the cable is whole
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"

/* Node 0 (A) in np.ns[0], node 1 (B) in np.ns[1]: the cluster. */
static void netns_cluster(struct h_daemon *nodes, const struct h_netpair *np,
			  const char *conf_a, const char *conf_b)
{
	static const char *const names[] = { "A", "B" };
	const char *ns[2] = { np->ns[0], np->ns[1] };
	const char *hosts[2] = { np->ip[0], np->ip[1] };
	const char *confs[2] = { conf_a, conf_b };

	h_cluster_start_netns(nodes, names, 2, ns, hosts, confs);
}

/*
 * The link of @d to @peer is up and holds nothing (backlog, control
 * frames, unacked frames, rendezvous, writes), its retransmission timer
 * is idle, no peer timeout, restart or illegal frame move happened, and
 * registrations balance (regs == deregs + regions, nothing waiting).
 * Polls (bounded): the last acks may still be on their way.  The last
 * snapshot goes to @st.
 */
static void expect_link_idle(const struct h_daemon *d, const char *peer, struct h_stats *st)
{
	static const char *const zero[] = { "backlog", "ctl_queued", "unacked", "rndv_tx",
					    "rndv_rx", "writes_pending", "retransmit_timer",
					    "peer_timeouts", "peer_restarts", "illegal_moves" };
	int64_t deadline = h_now_ms() + 3000;
	char name[128], state[16];
	unsigned i;

	for (;;) {
		bool idle = true;

		h_daemon_stats(d, st);
		for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
			snprintf(name, sizeof(name), "link.%s.%s", peer, zero[i]);
			idle = idle && h_stats_u64(st, name) == 0;
		}
		snprintf(name, sizeof(name), "link.%s.state", peer);
		h_stats_str(st, name, state, sizeof(state));
		idle = idle && strcmp(state, "up") == 0;
		if (idle || h_now_ms() > deadline)
			break;
		h_sleep_ms(50);
	}
	for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
		snprintf(name, sizeof(name), "link.%s.%s", peer, zero[i]);
		H_ASSERT(h_stats_u64(st, name) == 0, "%s: %s = %llu", d->name, name,
			 (unsigned long long)h_stats_u64(st, name));
	}
	H_ASSERT(strcmp(state, "up") == 0, "%s: link to %s is %s", d->name, peer, state);
	H_EQ(h_stats_u64(st, "rcache.regs"),
	     h_stats_u64(st, "rcache.deregs") + h_stats_u64(st, "rcache.regions"));
	H_EQ(h_stats_u64(st, "rcache.waiting"), 0);
}

/* link.@peer.@what in @st. */
static uint64_t link_stat(const struct h_stats *st, const char *peer, const char *what)
{
	char name[128];

	snprintf(name, sizeof(name), "link.%s.%s", peer, what);
	return h_stats_u64(st, name);
}

/* ------------------------------------------------------------------ */
/* partition_peer_timeout                                               */
/* ------------------------------------------------------------------ */

#define PA_PORT 620
#define PA_TAG 5
#define PA_SMALL 50u			/* 1 KiB sends: eager */
#define PA_SMALL_LEN 1024u
#define PA_BIG 4u			/* 1 MiB sends: rendezvous */
#define PA_BIG_LEN (1u << 20)
#define PA_SENDS (PA_SMALL + PA_BIG)
#define PA_RECVS 5u			/* B1 has receives posted for the first few */
#define PA_TIMEOUT_MS 1000
#define PA_ACK_TIMEOUT_MS 200
#define PA_LATE_MS 500			/* every failure within 1.5 s of the drop */
#define PA_OUTAGE_MS 3000
#define PA_IDLE_MS 500			/* the link idle before the drop */
#define PA_FAST_MS 100			/* a new send fails this fast */
#define PA_RELINK_MS 20000		/* bound for the link to come back */
#define PA_AFTER_CTX 1000000u
#define PA_NEW_CTX 2000000u

static uint32_t pa_len(uint32_t i)
{
	return i < PA_SMALL ? PA_SMALL_LEN : PA_BIG_LEN;
}

/*
 * A (peer_timeout_ms 1000, ack_timeout_ms 200) in one namespace, B in the
 * other; B1 (a client of B, from the root namespace) has a few receives
 * posted.  After PA_IDLE_MS with nothing on the link, nft in B's
 * namespace drops everything on the veth (T0), and only then A1 posts 50
 * sends of 1 KiB and 4 of 1 MiB to B1: all are on the wire (unacked),
 * none can arrive.  The ack timeout breaks the connection; every send
 * completes SL_ERR_PEER_DOWN exactly once, between 1.0 and 1.5 s after
 * T0; a new send then fails within 100 ms; both daemons live on.  At T0 +
 * 3 s the rule goes: A redials, the link comes back with B's incarnation
 * unchanged (no restart on either side), a new send completes SL_OK and
 * B1 receives it.  B1 may also have received some of the 54, each at
 * most once and intact (PEER_DOWN says the outcome is unknown): A closed
 * the broken connection normally, so its kernel goes on retransmitting
 * the data, which reaches B's old connection once the path is back,
 * before A's new one replaces it.  A 1 MiB one that a receive met then
 * finds its send gone; such a receive must complete, if it does, with the
 * status sluice.h gives that case.
 */
START_TEST(partition_peer_timeout)
{
	struct h_netpair np;
	struct h_daemon nodes[2];
	struct h_stats st;
	struct sl_ctx *actx, *bctx;
	struct sl_queue *aq, *bq;
	struct sl_cqe cqe;
	uint8_t *abuf, *anew, *rbuf, seen[PA_SENDS] = { 0 };
	size_t off[PA_SENDS + 1];
	sl_addr_t a1, b1;
	int64_t t0, first = -1, last = -1, fast, healed, relink;
	uint64_t unacked_at_drop, backlog_at_drop, dropped;
	char inc_before[32], inc_after[32], state[16];
	uint32_t i, got = 0, early = 0, failed_recvs = 0;
	int32_t wrong_status = 0;
	bool got_new = false;
	int rc;

	if (!h_netpair_open(&np, "partition_peer_timeout"))
		return;
	netns_cluster(nodes, &np, "[transport]\npeer_timeout_ms = 1000\nack_timeout_ms = 200\n",
		      NULL);

	/* A1 and B1, both from this (the root) namespace. */
	H_EQ(sl_open(nodes[0].sock, &actx), 0);
	H_EQ(sl_queue_open(actx, 0, 128, &aq), 0);
	a1 = sl_queue_addr(aq);
	H_EQ(sl_open(nodes[1].sock, &bctx), 0);
	H_EQ(sl_queue_open(bctx, PA_PORT, 64, &bq), 0);
	b1 = sl_queue_addr(bq);
	H_EQ(b1.node, nodes[1].node);
	for (i = 0, off[0] = 0; i < PA_SENDS; i++)
		off[i + 1] = off[i] + pa_len(i);
	abuf = sl_alloc(aq, off[PA_SENDS]);
	anew = sl_alloc(aq, 64);
	rbuf = sl_alloc(bq, (size_t)PA_RECVS * PA_BIG_LEN);
	H_ASSERT(abuf && anew && rbuf, "sl_alloc");
	for (i = 0; i < PA_SENDS; i++)
		msg_fill(abuf + off[i], pa_len(i), 1, i, PA_TAG);
	/* B1: receives (room for any of the messages) for the first few;
	 * each is posted again when it completes. */
	for (i = 0; i < PA_RECVS; i++)
		H_EQ(sl_recv(bq, a1, PA_TAG, ~0ull, rbuf + (size_t)i * PA_BIG_LEN, PA_BIG_LEN, i),
		     0);
	h_daemon_stat_str(&nodes[0], "link.B.incarnation", inc_before, sizeof(inc_before));

	/* Nothing on the link for a while: no frame waits, no ack comes. */
	h_sleep_ms(PA_IDLE_MS);
	h_netpair_drop(&np, 1);
	t0 = h_now_ms();
	for (i = 0; i < PA_SENDS; i++)
		H_EQ(sl_send(aq, b1, PA_TAG, abuf + off[i], pa_len(i), i), 0);
	/* All on the wire or queued for it once A has taken them (they stay
	 * there, unacked, until the peer timeout), none acked. */
	for (;;) {
		h_daemon_stats(&nodes[0], &st);
		unacked_at_drop = link_stat(&st, "B", "unacked");
		backlog_at_drop = link_stat(&st, "B", "backlog");
		if (unacked_at_drop + backlog_at_drop >= PA_SENDS ||
		    h_now_ms() - t0 > PA_TIMEOUT_MS / 2)
			break;
		h_sleep_ms(5);
	}
	H_EQ(unacked_at_drop + backlog_at_drop, PA_SENDS);
	H_ASSERT(unacked_at_drop > 0, "nothing on the wire when the link dropped");

	/* Every send fails SL_ERR_PEER_DOWN once, 1.0 to 1.5 s after T0. */
	for (i = 0; i < PA_SENDS; i++) {
		int64_t now;

		H_ASSERT(h_wait_cqe(aq, &cqe, PA_TIMEOUT_MS + 5000) == 1,
			 "%u of %u sends completed, then none for %d ms", i, PA_SENDS,
			 PA_TIMEOUT_MS + 5000);
		now = h_now_ms() - t0;
		H_ASSERT(cqe.user_ctx < PA_SENDS && !seen[cqe.user_ctx], "send completion ctx %llu %s",
			 (unsigned long long)cqe.user_ctx,
			 cqe.user_ctx < PA_SENDS ? "twice" : "unknown");
		seen[cqe.user_ctx] = 1;
		H_ASSERT(cqe.status == SL_ERR_PEER_DOWN,
			 "send %llu: %s after %lld ms, not SL_ERR_PEER_DOWN",
			 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status), (long long)now);
		if (first < 0)
			first = now;
		last = now;
		if (now < PA_TIMEOUT_MS)
			early++;
	}
	memset(seen, 0, sizeof(seen));
	H_ASSERT(first >= PA_TIMEOUT_MS && last <= PA_TIMEOUT_MS + PA_LATE_MS,
		 "sends failed from %lld to %lld ms after the drop (%u before %d ms); "
		 "peer_timeout_ms %d, ack_timeout_ms %d, link idle for %d ms before it",
		 (long long)first, (long long)last, early, PA_TIMEOUT_MS, PA_TIMEOUT_MS,
		 PA_ACK_TIMEOUT_MS, PA_IDLE_MS);
	expect_no_cqe(aq, 200);

	/* While it is down, a new send fails at once. */
	fast = h_now_ms();
	H_EQ(sl_send(aq, b1, PA_TAG, anew, 64, PA_NEW_CTX), 0);
	H_EQ(h_wait_cqe(aq, &cqe, 1000), 1);
	fast = h_now_ms() - fast;
	H_ASSERT(cqe.user_ctx == PA_NEW_CTX && cqe.status == SL_ERR_PEER_DOWN, "ctx %llu: %s",
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	H_ASSERT(fast < PA_FAST_MS, "a new send failed after %lld ms", (long long)fast);
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[1]), "a daemon died");
	h_daemon_stats(&nodes[0], &st);
	/* A noticed the partition: no ack, or nothing at all, for long enough. */
	H_ASSERT(link_stat(&st, "B", "ack_timeouts") + link_stat(&st, "B", "silences") >= 1,
		 "A: neither an ack timeout nor a silence");
	H_EQ(link_stat(&st, "B", "peer_timeouts"), 1);
	H_EQ(link_stat(&st, "B", "unacked"), 0);
	H_EQ(link_stat(&st, "B", "rndv_tx"), 0);
	h_stats_str(&st, "link.B.state", state, sizeof(state));
	H_ASSERT(strcmp(state, "up") != 0, "A: link to B up through a partition");

	/* Heal at T0 + 3 s: the link comes back, same incarnation. */
	while (h_now_ms() - t0 < PA_OUTAGE_MS)
		h_sleep_ms(20);
	dropped = h_netpair_heal(&np, 1);
	healed = h_now_ms();
	h_wait_link_ms(&nodes[0], &nodes[1], PA_RELINK_MS);
	relink = h_now_ms() - healed;
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[1]), "a daemon died");
	h_daemon_stats(&nodes[0], &st);
	H_EQ(link_stat(&st, "B", "peer_restarts"), 0);
	h_stats_str(&st, "link.B.incarnation", inc_after, sizeof(inc_after));
	H_ASSERT(strcmp(inc_before, inc_after) == 0, "B's incarnation %s, was %s", inc_after,
		 inc_before);
	H_EQ(h_daemon_stat(&nodes[1], "link.A.peer_restarts"), 0);

	/* A new send arrives. */
	memcpy(anew, "after the partition", 20);
	H_EQ(sl_send(aq, b1, PA_TAG, anew, 20, PA_AFTER_CTX), 0);
	H_EQ(h_wait_cqe(aq, &cqe, 5000), 1);
	H_ASSERT(cqe.user_ctx == PA_AFTER_CTX && cqe.status == SL_OK, "ctx %llu: %s",
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	/*
	 * B1: the new message, and whatever it got of the 54: their data may
	 * still have been in a socket of the broken connection (PEER_DOWN
	 * leaves the outcome unknown), each at most once, intact.  A receive
	 * that met one of the 1 MiB messages, whose send A had already
	 * failed, cannot get its data: it goes back to its place, or, if a
	 * later message met a later receive meanwhile, completes with the
	 * reason, which sluice.h names for this case: SL_ERR_PEER_DOWN.
	 * Drained until B1 has been quiet for 500 ms after the new message.
	 */
	for (;;) {
		struct msg_hdr h;
		uint8_t *p;

		rc = h_wait_cqe(bq, &cqe, got_new ? 500 : 5000);
		H_ASSERT(rc >= 0, "B1: wait: %s", strerror(-rc));
		if (rc == 0) {
			H_ASSERT(got_new, "B1: the new message never came");
			break;
		}
		H_ASSERT(cqe.user_ctx < PA_RECVS, "B1: receive ctx %llu",
			 (unsigned long long)cqe.user_ctx);
		p = rbuf + (size_t)cqe.user_ctx * PA_BIG_LEN;
		if (cqe.status != SL_OK) {
			/* A rendezvous that could not be moved. */
			H_ASSERT(cqe.len == PA_BIG_LEN && cqe.tag == PA_TAG && addr_eq(cqe.peer, a1),
				 "B1: receive %llu: %s for %llu B, tag %llu",
				 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status),
				 (unsigned long long)cqe.len, (unsigned long long)cqe.tag);
			if (cqe.status != SL_ERR_PEER_DOWN)
				wrong_status = cqe.status;
			failed_recvs++;
		} else if (cqe.len == 20 && memcmp(p, "after the partition", 20) == 0) {
			H_ASSERT(!got_new, "B1: the new message twice");
			got_new = true;
		} else {
			H_ASSERT(!got_new, "B1: an old message (%llu B) after the new one",
				 (unsigned long long)cqe.len);
			H_ASSERT(msg_decode(p, cqe.len, &h) && h.seq < PA_SENDS &&
				 cqe.len == pa_len(h.seq) &&
				 msg_check(p, cqe.len, 1, h.seq, PA_TAG),
				 "B1: %llu bytes that are none of the messages",
				 (unsigned long long)cqe.len);
			H_ASSERT(!seen[h.seq], "B1: message %u delivered twice", h.seq);
			seen[h.seq] = 1;
			got++;
		}
		H_EQ(sl_recv(bq, a1, PA_TAG, ~0ull, p, PA_BIG_LEN, cqe.user_ctx), 0);
	}
	h_daemon_stats(&nodes[0], &st);
	h_stats_str(&st, "link.B.state", state, sizeof(state));
	H_ASSERT(strcmp(state, "up") == 0, "A: link to B %s", state);
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[1]), "a daemon died");

	printf("partition_peer_timeout: daemons in %s (%s) and %s (%s), clients in the root "
	       "namespace; %u sends (%u x 1 KiB, %u x 1 MiB; %llu unacked, %llu queued at the "
	       "drop) failed SL_ERR_PEER_DOWN once each, %lld to %lld ms after the drop "
	       "(peer_timeout_ms %d, ack_timeout_ms %d, link idle %d ms before); a new send failed "
	       "in %lld ms; nft dropped %llu packets in %d ms; link back %lld ms after the heal "
	       "(A: %llu connects, %llu ack timeouts, %llu retransmits, %llu peer restarts); B1 "
	       "received %u of the %u failed sends (late, from the broken connection), then the "
	       "new one; %u receives failed (%s)\n",
	       np.ns[0], np.ip[0], np.ns[1], np.ip[1], PA_SENDS, PA_SMALL, PA_BIG,
	       (unsigned long long)unacked_at_drop, (unsigned long long)backlog_at_drop,
	       (long long)first, (long long)last, PA_TIMEOUT_MS, PA_ACK_TIMEOUT_MS, PA_IDLE_MS,
	       (long long)fast, (unsigned long long)dropped, PA_OUTAGE_MS, (long long)relink,
	       (unsigned long long)link_stat(&st, "B", "connects"),
	       (unsigned long long)link_stat(&st, "B", "ack_timeouts"),
	       (unsigned long long)link_stat(&st, "B", "retransmits"),
	       (unsigned long long)link_stat(&st, "B", "peer_restarts"), got, PA_SENDS,
	       failed_recvs, failed_recvs ? sl_strerror(wrong_status ? wrong_status
							      : SL_ERR_PEER_DOWN) : "-");
	H_ASSERT(wrong_status == 0,
		 "B1: a receive that met a 1 MiB message whose send A had failed with "
		 "SL_ERR_PEER_DOWN completed %s (sluice.h: that is for a sender's queue that "
		 "closed; this one's send failed SL_ERR_PEER_DOWN)", sl_strerror(wrong_status));
	H_EQ(sl_queue_close(bq), 0);
	sl_close(bctx);
	H_EQ(sl_queue_close(aq), 0);
	sl_close(actx);
	h_cluster_stop(nodes, 2);
	H_EQ(h_netpair_destroy(&np), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* partition_heals (C14 variant 3b, C08)                                */
/* ------------------------------------------------------------------ */

#define PH_PORT 630
#define PH_TAG_BIG 5
#define PH_TAG_SMALL 6
#define PH_BIG 200u
#define PH_BIG_LEN (1u << 20)
#define PH_SMALL 2000u
#define PH_SMALL_LEN 1024u
#define PH_BIG_WIN 16u			/* outstanding 1 MiB sends, and receives */
#define PH_SMALL_WIN 128u		/* outstanding 1 KiB sends, and receives */
#define PH_SMALL_PER_BIG (PH_SMALL / PH_BIG)
#define PH_OUTAGE_MS 3000
#define PH_DEADLINE_MS 45000		/* the whole transfer */
/* After the drop, what was already on its way has landed by then. */
#define PH_SETTLE_MS 100
/* Bit 32 of user_ctx: a 1 KiB message; the low bits: its seq. */
#define PH_CTX_SMALL (1ull << 32)

struct ph_shared {
	_Atomic uint32_t big;		/* B1: received, verified, once */
	_Atomic uint32_t small;
};

/*
 * B1: 200 x 1 MiB (tag 5) and 2,000 x 1 KiB (tag 6) from @a1, with 16
 * and 128 receives posted ahead.  One source, one tag: receive k of a tag
 * must hold message k of that tag (matched in post order), verified with
 * msg_check; each message counted once.  Receives may complete out of
 * post order (a rendezvous when its data is in), so each frees its own
 * buffer.
 */
static void ph_receiver_run(const struct h_daemon *b, sl_addr_t a1, struct ph_shared *sh)
{
	static uint8_t done_big[PH_BIG], done_small[PH_SMALL];
	uint32_t slot_big[PH_BIG], slot_small[PH_SMALL];
	uint32_t free_big[PH_BIG_WIN], free_small[PH_SMALL_WIN];
	uint32_t n_free_big = PH_BIG_WIN, n_free_small = PH_SMALL_WIN;
	uint32_t posted_big = 0, posted_small = 0, got_big = 0, got_small = 0, i;
	uint8_t *big, *small;
	struct sl_cqe cqe;
	struct cl c;
	int rc;

	cl_name = "B1";
	cl_open(&c, b, PH_PORT, 256);
	big = sl_alloc(c.q, (size_t)PH_BIG_WIN * PH_BIG_LEN);
	small = sl_alloc(c.q, (size_t)PH_SMALL_WIN * PH_SMALL_LEN);
	CL_REQUIRE(big && small, CL_E_SETUP, "sl_alloc");
	for (i = 0; i < PH_BIG_WIN; i++)
		free_big[i] = i;
	for (i = 0; i < PH_SMALL_WIN; i++)
		free_small[i] = i;
	while (got_big < PH_BIG || got_small < PH_SMALL) {
		bool is_small;
		uint8_t *p;

		while (posted_big < PH_BIG && n_free_big) {
			slot_big[posted_big] = free_big[--n_free_big];
			rc = sl_recv(c.q, a1, PH_TAG_BIG, ~0ull,
				     big + (size_t)slot_big[posted_big] * PH_BIG_LEN, PH_BIG_LEN,
				     posted_big);
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv big %u: %s", posted_big,
				   strerror(-rc));
			posted_big++;
		}
		while (posted_small < PH_SMALL && n_free_small) {
			slot_small[posted_small] = free_small[--n_free_small];
			rc = sl_recv(c.q, a1, PH_TAG_SMALL, ~0ull,
				     small + (size_t)slot_small[posted_small] * PH_SMALL_LEN,
				     PH_SMALL_LEN, PH_CTX_SMALL | posted_small);
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv small %u: %s", posted_small,
				   strerror(-rc));
			posted_small++;
		}
		rc = h_wait_cqe(c.q, &cqe, CL_STALL_MS);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "%u + %u received, then nothing for %d s", got_big,
			   got_small, CL_STALL_MS / 1000);
		is_small = (cqe.user_ctx & PH_CTX_SMALL) != 0;
		i = (uint32_t)cqe.user_ctx;
		CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "receive %s %u: %s",
			   is_small ? "small" : "big", i, sl_strerror(cqe.status));
		CL_REQUIRE(cqe.user_ctx >> 33 == 0 && i < (is_small ? posted_small : posted_big),
			   CL_E_CTX, "receive ctx %#llx never posted",
			   (unsigned long long)cqe.user_ctx);
		CL_REQUIRE(!(is_small ? done_small[i] : done_big[i]), CL_E_DUP,
			   "receive %s %u completed twice", is_small ? "small" : "big", i);
		CL_REQUIRE(cqe.len == (is_small ? PH_SMALL_LEN : PH_BIG_LEN) &&
			   cqe.tag == (is_small ? PH_TAG_SMALL : PH_TAG_BIG) &&
			   addr_eq(cqe.peer, a1), CL_E_META, "receive %s %u: %llu B, tag %llu",
			   is_small ? "small" : "big", i, (unsigned long long)cqe.len,
			   (unsigned long long)cqe.tag);
		if (is_small) {
			p = small + (size_t)slot_small[i] * PH_SMALL_LEN;
			CL_REQUIRE(msg_check(p, PH_SMALL_LEN, 1, i, PH_TAG_SMALL), CL_E_DATA,
				   "small receive %u does not hold small message %u", i, i);
			done_small[i] = 1;
			free_small[n_free_small++] = slot_small[i];
			got_small++;
			atomic_store(&sh->small, got_small);
		} else {
			p = big + (size_t)slot_big[i] * PH_BIG_LEN;
			CL_REQUIRE(msg_check(p, PH_BIG_LEN, 1, i, PH_TAG_BIG), CL_E_DATA,
				   "big receive %u does not hold big message %u", i, i);
			done_big[i] = 1;
			free_big[n_free_big++] = slot_big[i];
			got_big++;
			atomic_store(&sh->big, got_big);
		}
	}
	/* Nothing twice: no completion after the last one. */
	cl_expect_quiet(&c, 300);
	cl_close(&c);
	_exit(CL_OK);
}

/*
 * Case C14 variant 3b (a partition that heals before peer_timeout_ms)
 * and C08 (rendezvous caught at every stage), over a real partition.  A
 * and B (ack_timeout_ms 300, peer_timeout_ms the default 30 s): A1 streams
 * 200 x 1 MiB (rendezvous) and 2,000 x 1 KiB (eager), interleaved, 16 and
 * 128 outstanding, to B1 (another process).  Halfway through, nft drops
 * everything on the link for 3 s; then the link passes packets again.
 * Every send completes SL_OK exactly once, B1 receives every message
 * once, verified, in its receive; both links end idle (nothing queued,
 * unacked or under way, no peer timeout or restart), registrations
 * balance on both nodes, and A reconnected (link.B.connects >= 2).
 */
START_TEST(partition_heals)
{
	static const char conf[] = "[transport]\nack_timeout_ms = 300\n";
	static uint8_t done_big[PH_BIG], done_small[PH_SMALL];
	uint32_t slot_big[PH_BIG], slot_small[PH_SMALL];
	uint32_t free_big[PH_BIG_WIN], free_small[PH_SMALL_WIN];
	uint32_t n_free_big = PH_BIG_WIN, n_free_small = PH_SMALL_WIN;
	uint32_t next_big = 0, next_small = 0, done_b = 0, done_s = 0, i;
	uint32_t at_drop_b = 0, at_drop_s = 0, total = PH_BIG + PH_SMALL;
	uint64_t acked_frozen = 0, rx_frozen = 0, acked_heal = 0, rx_heal = 0;
	bool frozen = false;
	char caught[256] = "";
	struct h_netpair np;
	struct h_daemon nodes[2];
	struct h_stats sa, sb;
	struct ph_shared *sh;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe cqe;
	uint8_t *big, *small;
	sl_addr_t b1;
	pid_t pid;
	int rc;
	int64_t t0, dropped_at = -1, healed_at = -1, first_after = -1, elapsed;
	uint64_t dropped_pkts = 0;
	const char *const names[] = { "B1" };

	if (!h_netpair_open(&np, "partition_heals"))
		return;
	netns_cluster(nodes, &np, conf, conf);
	b1 = (sl_addr_t){ nodes[1].node, PH_PORT };
	sh = shared_alloc(sizeof(*sh));
	H_EQ(sl_open(nodes[0].sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 0, 256, &q), 0);
	big = sl_alloc(q, (size_t)PH_BIG_WIN * PH_BIG_LEN);
	small = sl_alloc(q, (size_t)PH_SMALL_WIN * PH_SMALL_LEN);
	H_ASSERT(big && small, "sl_alloc");
	pid = h_fork();
	if (pid == 0)
		ph_receiver_run(&nodes[1], sl_queue_addr(q), sh);
	/* B1 is bound before the first message (else: SL_ERR_NO_ENDPOINT). */
	{
		int64_t bound_by = h_now_ms() + 5000;

		while (h_daemon_stat(&nodes[1], "daemon.posted_recvs") <
		       PH_BIG_WIN + PH_SMALL_WIN) {
			H_ASSERT(h_now_ms() < bound_by, "B1 did not post its receives in 5 s");
			h_sleep_ms(10);
		}
	}

	for (i = 0; i < PH_BIG_WIN; i++)
		free_big[i] = i;
	for (i = 0; i < PH_SMALL_WIN; i++)
		free_small[i] = i;
	t0 = h_now_ms();
	while (done_b + done_s < total) {
		/* The 1 MiB window always full (rendezvous at every stage);
		 * 1 KiB messages in between, PH_SMALL_PER_BIG per 1 MiB one. */
		for (;;) {
			uint8_t *p;

			if (next_big < PH_BIG && n_free_big) {
				slot_big[next_big] = free_big[--n_free_big];
				p = big + (size_t)slot_big[next_big] * PH_BIG_LEN;
				msg_fill(p, PH_BIG_LEN, 1, next_big, PH_TAG_BIG);
				H_EQ(sl_send(q, b1, PH_TAG_BIG, p, PH_BIG_LEN, next_big), 0);
				next_big++;
			} else if (next_small < PH_SMALL && n_free_small &&
				   next_small < next_big * PH_SMALL_PER_BIG) {
				slot_small[next_small] = free_small[--n_free_small];
				p = small + (size_t)slot_small[next_small] * PH_SMALL_LEN;
				msg_fill(p, PH_SMALL_LEN, 1, next_small, PH_TAG_SMALL);
				H_EQ(sl_send(q, b1, PH_TAG_SMALL, p, PH_SMALL_LEN,
					     PH_CTX_SMALL | next_small), 0);
				next_small++;
			} else {
				break;
			}
		}
		rc = h_wait_cqe(q, &cqe, 50);
		H_ASSERT(rc >= 0, "wait: %s", strerror(-rc));
		if (rc == 1) {
			bool is_small = (cqe.user_ctx & PH_CTX_SMALL) != 0;

			i = (uint32_t)cqe.user_ctx;
			H_ASSERT(cqe.user_ctx >> 33 == 0 && i < (is_small ? next_small : next_big),
				 "send completion ctx %#llx unknown",
				 (unsigned long long)cqe.user_ctx);
			H_ASSERT(!(is_small ? done_small[i] : done_big[i]),
				 "send %s %u completed twice", is_small ? "small" : "big", i);
			H_ASSERT(cqe.status == SL_OK, "send %s %u: %s (%lld ms after the drop)",
				 is_small ? "small" : "big", i, sl_strerror(cqe.status),
				 (long long)(dropped_at < 0 ? -1 : h_now_ms() - dropped_at));
			/* Rendezvous sends complete on their DONE, not in order:
			 * each frees its own slot. */
			if (is_small) {
				done_small[i] = 1;
				free_small[n_free_small++] = slot_small[i];
				done_s++;
			} else {
				done_big[i] = 1;
				free_big[n_free_big++] = slot_big[i];
				done_b++;
			}
			if (healed_at >= 0 && first_after < 0)
				first_after = h_now_ms() - healed_at;
		}
		/* Halfway through the 1 KiB messages (not on a 1 MiB completion:
		 * rendezvous are caught wherever they are). */
		if (dropped_at < 0 && done_s >= PH_SMALL / 2) {
			h_netpair_drop(&np, 1);
			dropped_at = h_now_ms();
			at_drop_b = done_b;
			at_drop_s = done_s;
		}
		/* Once what was on its way has landed, nothing gets through:
		 * A hears no ack, B gets no frame, until the heal. */
		if (dropped_at >= 0 && !frozen && h_now_ms() - dropped_at >= PH_SETTLE_MS) {
			h_daemon_stats(&nodes[0], &sa);
			h_daemon_stats(&nodes[1], &sb);
			acked_frozen = link_stat(&sa, "B", "acked");
			rx_frozen = link_stat(&sb, "A", "rx_seq");
			snprintf(caught, sizeof(caught), "A: %llu unacked, %llu queued, %llu "
				 "rendezvous past their RTS, %llu writing; B: %llu rendezvous "
				 "receiving, %llu unacked",
				 (unsigned long long)link_stat(&sa, "B", "unacked"),
				 (unsigned long long)link_stat(&sa, "B", "backlog"),
				 (unsigned long long)link_stat(&sa, "B", "rndv_tx"),
				 (unsigned long long)link_stat(&sa, "B", "writes_pending"),
				 (unsigned long long)link_stat(&sb, "A", "rndv_rx"),
				 (unsigned long long)link_stat(&sb, "A", "unacked"));
			frozen = true;
		}
		if (frozen && healed_at < 0 && h_now_ms() - dropped_at >= PH_OUTAGE_MS) {
			acked_heal = h_daemon_stat(&nodes[0], "link.B.acked");
			rx_heal = h_daemon_stat(&nodes[1], "link.A.rx_seq");
			dropped_pkts = h_netpair_heal(&np, 1);
			healed_at = h_now_ms();
			H_ASSERT(acked_heal == acked_frozen && rx_heal == rx_frozen,
				 "through the partition: A's acked %llu -> %llu, B's rx_seq %llu -> "
				 "%llu", (unsigned long long)acked_frozen,
				 (unsigned long long)acked_heal, (unsigned long long)rx_frozen,
				 (unsigned long long)rx_heal);
		}
		H_ASSERT(h_now_ms() - t0 < PH_DEADLINE_MS,
			 "%u + %u of %u + %u sends completed in %d ms (dropped after %u + %u, "
			 "%s)", done_b, done_s, PH_BIG, PH_SMALL, PH_DEADLINE_MS, at_drop_b,
			 at_drop_s, healed_at < 0 ? "not healed yet" : "healed");
	}
	elapsed = h_now_ms() - t0;
	expect_no_cqe(q, 200);
	H_ASSERT(healed_at >= 0, "the transfer ended before the partition healed");
	expect_clients_ok(&pid, names, 1, 30000);
	H_EQ(atomic_load(&sh->big), PH_BIG);
	H_EQ(atomic_load(&sh->small), PH_SMALL);
	expect_link_idle(&nodes[0], "B", &sa);
	expect_link_idle(&nodes[1], "A", &sb);
	printf("partition_heals: %u x 1 MiB + %u x 1 KiB A1->B1 in %lld ms, every send SL_OK "
	       "once, every message received once, verified; nft dropped %llu packets for %d "
	       "ms after %u + %u completions (caught: %s; A's acked stayed %llu, B's rx_seq "
	       "%llu); first "
	       "completion %lld ms after the heal; A: %llu ack timeouts, %llu connects, %llu "
	       "frames sent again, %llu rendezvous restarted, %llu duplicates received; B: %llu "
	       "ack timeouts, %llu connects, %llu frames sent again, %llu duplicates received; "
	       "rcache A %llu regs = %llu deregs + %llu regions, B %llu = %llu + %llu\n",
	       PH_BIG, PH_SMALL, (long long)elapsed, (unsigned long long)dropped_pkts,
	       PH_OUTAGE_MS, at_drop_b, at_drop_s, caught, (unsigned long long)acked_frozen,
	       (unsigned long long)rx_frozen, (long long)first_after,
	       (unsigned long long)link_stat(&sa, "B", "ack_timeouts"),
	       (unsigned long long)link_stat(&sa, "B", "connects"),
	       (unsigned long long)link_stat(&sa, "B", "retransmits"),
	       (unsigned long long)link_stat(&sa, "B", "rndv_restarts"),
	       (unsigned long long)link_stat(&sa, "B", "rx_duplicates"),
	       (unsigned long long)link_stat(&sb, "A", "ack_timeouts"),
	       (unsigned long long)link_stat(&sb, "A", "connects"),
	       (unsigned long long)link_stat(&sb, "A", "retransmits"),
	       (unsigned long long)link_stat(&sb, "A", "rx_duplicates"),
	       (unsigned long long)h_stats_u64(&sa, "rcache.regs"),
	       (unsigned long long)h_stats_u64(&sa, "rcache.deregs"),
	       (unsigned long long)h_stats_u64(&sa, "rcache.regions"),
	       (unsigned long long)h_stats_u64(&sb, "rcache.regs"),
	       (unsigned long long)h_stats_u64(&sb, "rcache.deregs"),
	       (unsigned long long)h_stats_u64(&sb, "rcache.regions"));
	/* The partition was real: A's connection broke and came back. */
	H_ASSERT(link_stat(&sa, "B", "connects") >= 2, "A: %llu connects to B",
		 (unsigned long long)link_stat(&sa, "B", "connects"));
	H_ASSERT(dropped_pkts > 0, "nft dropped nothing");
	H_EQ(sl_queue_close(q), 0);
	sl_close(ctx);
	shared_free(sh, sizeof(*sh));
	h_cluster_stop(nodes, 2);
	H_EQ(h_netpair_destroy(&np), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* partition_idle_dialer                                                */
/* ------------------------------------------------------------------ */

#define PI_PORT 640
#define PI_TAG 7
#define PI_SENDS 10u
#define PI_IDLE_MS 1000			/* nothing pending in A's socket */
#define PI_OUTAGE_MS 5000
#define PI_RELINK_MS 10000		/* bound for the link to come back */

/*
 * The other way round: the node that accepts (B) sends, the node that
 * dials (A) only receives.  The link is idle for a second, then the cable
 * is cut (drops as packets arrive, in both namespaces: both kernels send
 * as usual) and B1 posts 10 sends to A1.  B's ack timeout (200 ms) breaks
 * B's connection; A, with nothing to send, keeps its own.  B's kernel
 * keeps the closed socket for a while to deliver its data (an orphan:
 * about 100 s with the default net.ipv4.tcp_orphan_retries); a partition
 * longer than that is what this test is about, made short by giving B's
 * namespace tcp_orphan_retries = 1 (its orphans die within ~2 s).  After
 * 5 s the cable is whole again: within 10 s the link must be back (B's
 * peer_timeout_ms is the default 30 s, so nothing has failed yet), the 10
 * sends complete SL_OK and A1 receives each once.
 */
START_TEST(partition_idle_dialer)
{
	struct h_netpair np;
	struct h_daemon nodes[2];
	struct h_stats sa, sb;
	struct sl_ctx *actx, *bctx;
	struct sl_queue *aq, *bq;
	struct sl_cqe cqe;
	uint8_t *abuf, *bbuf, seen[PI_SENDS] = { 0 };
	char a_state[16], b_state[16];
	int64_t t0, healed, relink = -1, broke = -1;
	uint64_t dropped;
	sl_addr_t a1;
	uint32_t i;

	if (!h_netpair_open(&np, "partition_idle_dialer"))
		return;
	h_netpair_sysctl(&np, 1, "net/ipv4/tcp_orphan_retries", "1");
	netns_cluster(nodes, &np, NULL, "[transport]\nack_timeout_ms = 200\n");
	H_ASSERT(nodes[0].node < nodes[1].node, "A must be the node that dials");
	H_EQ(sl_open(nodes[0].sock, &actx), 0);
	H_EQ(sl_queue_open(actx, PI_PORT, 64, &aq), 0);
	a1 = sl_queue_addr(aq);
	H_EQ(sl_open(nodes[1].sock, &bctx), 0);
	H_EQ(sl_queue_open(bctx, 0, 64, &bq), 0);
	abuf = sl_alloc(aq, PI_SENDS * 64);
	bbuf = sl_alloc(bq, PI_SENDS * 64);
	H_ASSERT(abuf && bbuf, "sl_alloc");
	for (i = 0; i < PI_SENDS; i++) {
		H_EQ(sl_recv(aq, SL_ANY_SOURCE, PI_TAG, ~0ull, abuf + i * 64, 64, i), 0);
		memset(bbuf + i * 64, (int)i + 1, 64);
	}

	h_sleep_ms(PI_IDLE_MS);
	h_netpair_drop(&np, H_NETPAIR_WIRE);
	t0 = h_now_ms();
	for (i = 0; i < PI_SENDS; i++)
		H_EQ(sl_send(bq, a1, PI_TAG, bbuf + i * 64, 64, i), 0);
	while (broke < 0) {
		h_daemon_stats(&nodes[1], &sb);
		if (link_stat(&sb, "A", "ack_timeouts") + link_stat(&sb, "A", "silences") >= 1)
			broke = h_now_ms() - t0;
		H_ASSERT(h_now_ms() - t0 < PI_OUTAGE_MS, "B: no ack timeout or silence in %d ms",
			 PI_OUTAGE_MS);
		h_sleep_ms(20);
	}
	while (h_now_ms() - t0 < PI_OUTAGE_MS)
		h_sleep_ms(20);
	dropped = h_netpair_heal(&np, H_NETPAIR_WIRE);
	healed = h_now_ms();
	for (;;) {
		h_daemon_stats(&nodes[1], &sb);
		h_stats_str(&sb, "link.A.state", b_state, sizeof(b_state));
		if (strcmp(b_state, "up") == 0) {
			relink = h_now_ms() - healed;
			break;
		}
		if (h_now_ms() - healed > PI_RELINK_MS)
			break;
		h_sleep_ms(50);
	}
	h_daemon_stats(&nodes[0], &sa);
	h_stats_str(&sa, "link.B.state", a_state, sizeof(a_state));
	printf("partition_idle_dialer: B1 -> A1, %u sends; cable cut for %d ms after %d ms idle "
	       "(%llu packets dropped), B's ack timeout after %lld ms; %lld ms after the heal B's "
	       "link to A is %s (connects %llu, ack timeouts %llu, unacked %llu), A's link to B "
	       "is %s (connects %llu, unacked %llu)\n",
	       PI_SENDS, PI_OUTAGE_MS, PI_IDLE_MS, (unsigned long long)dropped, (long long)broke,
	       (long long)(h_now_ms() - healed), b_state,
	       (unsigned long long)link_stat(&sb, "A", "connects"),
	       (unsigned long long)link_stat(&sb, "A", "ack_timeouts"),
	       (unsigned long long)link_stat(&sb, "A", "unacked"), a_state,
	       (unsigned long long)link_stat(&sa, "B", "connects"),
	       (unsigned long long)link_stat(&sa, "B", "unacked"));
	H_ASSERT(relink >= 0,
		 "the link never came back after the partition healed (%d ms): B, which accepts, "
		 "broke its connection for want of acks and waits for A to dial; A, which dials, "
		 "has nothing to send and still holds its connection from before the partition "
		 "(state %s, %llu connects): nothing tells it the connection is dead",
		 PI_RELINK_MS, a_state, (unsigned long long)link_stat(&sa, "B", "connects"));
	/* Back before peer_timeout_ms: every send completes SL_OK, once. */
	for (i = 0; i < PI_SENDS; i++) {
		H_EQ(h_wait_cqe(bq, &cqe, 5000), 1);
		H_ASSERT(cqe.user_ctx < PI_SENDS && !seen[cqe.user_ctx] && cqe.status == SL_OK,
			 "B1: send %llu: %s", (unsigned long long)cqe.user_ctx,
			 sl_strerror(cqe.status));
		seen[cqe.user_ctx] = 1;
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < PI_SENDS; i++) {
		uint8_t *p;

		H_EQ(h_wait_cqe(aq, &cqe, 5000), 1);
		H_ASSERT(cqe.user_ctx < PI_SENDS && cqe.status == SL_OK && cqe.len == 64,
			 "A1: receive %llu: %s", (unsigned long long)cqe.user_ctx,
			 sl_strerror(cqe.status));
		p = abuf + cqe.user_ctx * 64;
		H_ASSERT(p[0] >= 1 && p[0] <= PI_SENDS && !seen[p[0] - 1], "A1: message %u %s",
			 p[0], p[0] >= 1 && p[0] <= PI_SENDS ? "twice" : "unknown");
		seen[p[0] - 1] = 1;
	}
	expect_no_cqe(aq, 200);
	printf("partition_idle_dialer: link back %lld ms after the heal; %u sends SL_OK, each "
	       "received once\n", (long long)relink, PI_SENDS);
	H_EQ(sl_queue_close(bq), 0);
	sl_close(bctx);
	H_EQ(sl_queue_close(aq), 0);
	sl_close(actx);
	h_cluster_stop(nodes, 2);
	H_EQ(h_netpair_destroy(&np), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Runner                                                               */
/* ------------------------------------------------------------------ */

int main(void)
{
	Suite *s = suite_create("netns");

	tcase_add_test(h_tcase(s, "partition_peer_timeout", 60), partition_peer_timeout);
	tcase_add_test(h_tcase(s, "partition_heals", 60), partition_heals);
	tcase_add_test(h_tcase(s, "partition_idle_dialer", 60), partition_idle_dialer);
	return h_run_suite(s);
}
