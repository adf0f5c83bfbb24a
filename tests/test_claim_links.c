/*
 * test_claim_links.c - a claimed rendezvous message (sl_probe with
 * SL_PROBE_CLAIM of an RTS from another daemon) whose link then fails:
 * sl_recv_claimed() completes with the link's failure, naming the
 * message (its source, tag and full length), its buffer untouched, the
 * claim's charge given back; the claim is spent (SL_ERR_NOT_FOUND after).
 * Each case has two claims: one whose sl_recv_claimed() was posted
 * before the failure (its RTR sent or waiting for the link: the
 * rendezvous gives its bound receive back with the failure, rndv.c), one
 * received after it (the claim holds the reason, match.h).
 *
 * Cases (CK_RUN_CASE=name):
 *   claimed_peer_down       B stopped, then killed; A's peer_timeout_ms
 *                           (1000) passes: SL_ERR_PEER_DOWN, both
 *   claimed_peer_restarted  B killed and started again (a new
 *                           incarnation) before A's peer_timeout_ms:
 *                           SL_ERR_PEER_RESTARTED, both
 *   claimed_node_removed    mb leaves ma's peers file and ma reloads
 *                           (SIGHUP): SL_ERR_PEER_DOWN, both, as every
 *                           operation waiting on a removed peer
 *                           (link_remove); a new receive naming mb then
 *                           completes SL_ERR_UNKNOWN_NODE
 *
 * Real daemons on TCP loopback (tests/harness.c); the test process is
 * every client.
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
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "probe_kit.h"
#include "sluice.h"
#include "testutil.h"

#define R_PORT 5101u		/* the receiver, on A */
#define T_PORT 5102u		/* the sender, on B */
#define BIG 100000u		/* above the default eager_max: a rendezvous */
#define TAG1 61u
#define TAG2 62u
#define CHARGE_RNDV 96u		/* a rendezvous message's charge (sluiced.conf(5)) */
#define WAIT_MS PK_WAIT_MS
#define PEER_TIMEOUT_MS 1000

struct pair {
	struct h_daemon *a, *b;		/* receiver's, sender's */
	const char *b_name;		/* as A's statistics name its link */
	struct sl_ctx *ca, *cb;
	struct sl_queue *r, *t;
	uint8_t *rbuf, *tbuf;		/* 2 * BIG each */
	sl_addr_t r_addr, t_addr;
	uint64_t claim[2];
};

/*
 * Queues R on @a and T on @b; T sends two rendezvous messages (TAG1,
 * TAG2) to R, which claims both by their RTS headers.  Nothing moved:
 * T's sends wait, A holds two claims charged CHARGE_RNDV each.
 */
static void pair_claim(struct pair *p, struct h_daemon *a, struct h_daemon *b,
		       const char *b_name)
{
	struct sl_cqe cqe;
	unsigned i;

	p->a = a;
	p->b = b;
	p->b_name = b_name;
	H_EQ(sl_open(a->sock, &p->ca), 0);
	H_EQ(sl_open(b->sock, &p->cb), 0);
	H_EQ(sl_queue_open(p->ca, R_PORT, 16, &p->r), 0);
	H_EQ(sl_queue_open(p->cb, T_PORT, 16, &p->t), 0);
	p->rbuf = sl_alloc(p->r, 2 * BIG);
	p->tbuf = sl_alloc(p->t, 2 * BIG);
	H_ASSERT(p->rbuf && p->tbuf, "sl_alloc");
	p->r_addr = (sl_addr_t){ a->node, R_PORT };
	p->t_addr = (sl_addr_t){ b->node, T_PORT };
	msg_fill(p->tbuf, BIG, T_PORT, 0, TAG1);
	msg_fill(p->tbuf + BIG, BIG, T_PORT, 1, TAG2);
	H_EQ(sl_send(p->t, p->r_addr, TAG1, p->tbuf, BIG, 1), 0);
	H_EQ(sl_send(p->t, p->r_addr, TAG2, p->tbuf + BIG, BIG, 2), 0);
	/* Both RTS headers arrive (probes take nothing), then are claimed. */
	for (i = 0; i < 2; i++) {
		wait_arrival(p->r, i ? TAG2 : TAG1);
		cqe = probe(p->r, SL_ANY_SOURCE, i ? TAG2 : TAG1, ~0ull, SL_PROBE_CLAIM, 10 + i);
		H_ASSERT(cqe.status == SL_OK && cqe.claim != 0 && cqe.len == BIG &&
			 addr_eq(cqe.peer, p->t_addr), "claim %u: %s, len %llu, claim %llu", i,
			 sl_strerror(cqe.status), (unsigned long long)cqe.len,
			 (unsigned long long)cqe.claim);
		p->claim[i] = cqe.claim;
	}
	H_EQ(h_daemon_stat(a, "daemon.unexpected_bytes"), 2 * CHARGE_RNDV);
	H_EQ(h_daemon_stat(a, "daemon.claimed"), 2);
	expect_no_cqe(p->t, 50);
	memset(p->rbuf, 0xee, 2 * BIG);
}

/* The first claim's sl_recv_claimed(), posted now: its rendezvous starts
 * (A's link to B holds one receiving rendezvous), nothing completes. */
static void recv_first(struct pair *p)
{
	char name[64];

	H_EQ(sl_recv_claimed(p->r, p->claim[0], p->rbuf, BIG, 20), 0);
	snprintf(name, sizeof(name), "link.%s.rndv_rx", p->b_name);
	wait_stat(p->a, name, 1);
	expect_no_cqe(p->r, 100);
}

/*
 * The link failed with @status: the first claim's receive completes so
 * (it was posted), the second's when it is posted, each naming its
 * message, neither buffer written; both claims are spent, the charge and
 * the claimed gauge are 0, and the claims counted as received.
 */
static void expect_claims_failed(struct pair *p, int status)
{
	expect_cqe(p->r, SL_OP_RECV, 20, status, BIG, TAG1, p->t_addr);
	H_EQ(sl_recv_claimed(p->r, p->claim[1], p->rbuf + BIG, BIG, 21), 0);
	expect_cqe(p->r, SL_OP_RECV, 21, status, BIG, TAG2, p->t_addr);
	H_ASSERT(all_bytes(p->rbuf, 2 * BIG, 0xee), "a failed claim's buffer was written");
	H_EQ(sl_recv_claimed(p->r, p->claim[0], p->rbuf, BIG, 22), 0);
	expect_cqe(p->r, SL_OP_RECV, 22, SL_ERR_NOT_FOUND, BIG, 0,
		   ((sl_addr_t){ p->a->node, 0 }));
	H_EQ(sl_recv_claimed(p->r, p->claim[1], p->rbuf, BIG, 23), 0);
	expect_cqe(p->r, SL_OP_RECV, 23, SL_ERR_NOT_FOUND, BIG, 0,
		   ((sl_addr_t){ p->a->node, 0 }));
	expect_no_cqe(p->r, 100);
	H_EQ(h_daemon_stat(p->a, "daemon.unexpected_bytes"), 0);
	H_EQ(h_daemon_stat(p->a, "daemon.claimed"), 0);
	H_EQ(h_daemon_stat(p->a, "daemon.claims"), 2);
	H_EQ(h_daemon_stat(p->a, "daemon.claims_received"), 2);
	H_EQ(h_daemon_stat(p->a, "daemon.posted_recvs"), 0);
}

/* ------------------------------------------------------------------ */

START_TEST(claimed_peer_down)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = { "[transport]\npeer_timeout_ms = 1000\n", NULL };
	struct h_daemon nodes[2];
	struct pair p;
	int64_t t0, waited;

	h_cluster_start_confs(nodes, names, 2, confs);
	pair_claim(&p, &nodes[0], &nodes[1], "B");
	/* B hears nothing more: the RTR of the first claim stays unanswered. */
	H_EQ(kill(nodes[1].pid, SIGSTOP), 0);
	recv_first(&p);
	t0 = h_now_ms();
	h_daemon_kill(&nodes[1]);
	sl_close(p.cb);		/* its daemon is gone */
	wait_stat(&nodes[0], "link.B.peer_timeouts", 1);
	waited = h_now_ms() - t0;
	expect_claims_failed(&p, SL_ERR_PEER_DOWN);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.rndv_rx"), 0);
	printf("claimed_peer_down: B killed, its link timed out after %lld ms (peer_timeout_ms "
	       "%d): a claimed receive in flight and one posted after both SL_ERR_PEER_DOWN, "
	       "then SL_ERR_NOT_FOUND; charge 0\n", (long long)waited, PEER_TIMEOUT_MS);
	sl_close(p.ca);
	h_daemon_stop(&nodes[0]);
}
END_TEST

START_TEST(claimed_peer_restarted)
{
	static const char *const names[] = { "A", "B" };
	const char *conf = "[transport]\nredial_min_ms = 20\nredial_max_ms = 200\n";
	struct h_daemon nodes[2];
	struct pair p;

	h_cluster_start_conf(nodes, names, 2, conf);
	pair_claim(&p, &nodes[0], &nodes[1], "B");
	sl_close(p.cb);
	h_daemon_kill(&nodes[1]);
	/* Posted while B is gone: its RTR waits for the link. */
	recv_first(&p);
	h_daemon_restart(&nodes[1], &nodes[0], 1, conf);
	h_wait_link(&nodes[0], &nodes[1]);
	expect_claims_failed(&p, SL_ERR_PEER_RESTARTED);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.rndv_rx"), 0);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.peer_timeouts"), 0);
	printf("claimed_peer_restarted: B killed and back as a new incarnation: a claimed "
	       "receive posted while it was gone and one posted after both "
	       "SL_ERR_PEER_RESTARTED, then SL_ERR_NOT_FOUND; charge 0\n");
	sl_close(p.ca);
	h_cluster_stop(nodes, 2);
}
END_TEST

START_TEST(claimed_node_removed)
{
	struct h_daemon a, b;
	struct pair p;
	char path[64], conf[256], peers[256];
	uint16_t pa = h_free_port(), pb = h_free_port();
	sl_addr_t at_b;

	snprintf(path, sizeof(path), "/tmp/sluice-claimlinks-%d.peers", (int)getpid());
	snprintf(peers, sizeof(peers), "ma 127.0.0.1:%u\nmb 127.0.0.1:%u\n", pa, pb);
	write_text(path, peers);
	snprintf(conf, sizeof(conf), "[daemon]\npeers_file = %s\n[transport]\nredial_min_ms = "
		 "20\nredial_max_ms = 200\npeer_timeout_ms = 600000\n", path);
	h_daemon_start_conf(&a, "ma", pa, NULL, 0, conf);
	h_daemon_start_conf(&b, "mb", pb, NULL, 0, conf);
	h_wait_link(&a, &b);
	h_wait_link(&b, &a);
	pair_claim(&p, &a, &b, "mb");
	/* mb holds still, so that the first claim's rendezvous stays under
	 * way until the reload ends it. */
	H_EQ(kill(b.pid, SIGSTOP), 0);
	recv_first(&p);

	snprintf(peers, sizeof(peers), "ma 127.0.0.1:%u\n", pa);
	write_text(path, peers);
	daemon_reload(&a, WAIT_MS);
	H_EQ(tu_log_lines(&a, "links: 0 added, 1 removed, 0 readdressed, 0 in all"), 1);
	expect_claims_failed(&p, SL_ERR_PEER_DOWN);
	/* From now on the node is unknown. */
	at_b = p.t_addr;
	H_EQ(sl_recv(p.r, at_b, TAG1, ~0ull, p.rbuf, 16, 30), 0);
	expect_cqe(p.r, SL_OP_RECV, 30, SL_ERR_UNKNOWN_NODE, 16, TAG1, at_b);
	printf("claimed_node_removed: mb removed by ma's reload: a claimed receive in flight and "
	       "one posted after both SL_ERR_PEER_DOWN, then SL_ERR_NOT_FOUND; a new receive "
	       "naming mb SL_ERR_UNKNOWN_NODE; charge 0\n");

	H_EQ(kill(b.pid, SIGCONT), 0);
	sl_close(p.cb);
	sl_close(p.ca);
	h_daemon_stop(&b);
	h_daemon_stop(&a);
	H_EQ(unlink(path), 0);
}
END_TEST

/* ------------------------------------------------------------------ */

int main(void)
{
	Suite *s = suite_create("claim_links");
	TCase *tc;

	tc = h_tcase(s, "claimed_peer_down", 60);
	tcase_add_test(tc, claimed_peer_down);
	tc = h_tcase(s, "claimed_peer_restarted", 60);
	tcase_add_test(tc, claimed_peer_restarted);
	tc = h_tcase(s, "claimed_node_removed", 60);
	tcase_add_test(tc, claimed_node_removed);
	return h_run_suite(s);
}
