/*
 * test_sigkill_cleanup.c - a client killed with SIGKILL in the middle of its
 * traffic: its port goes away at once on both nodes, the survivors'
 * traffic goes on untouched, sends to it complete OK until it died and
 * SL_ERR_NO_ENDPOINT after, and both daemons are back at their fd and
 * mapping baselines.
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

#define B_SURV 3		/* survivors: S0 on A, S1 and S2 on B */
#define B_S2S 1500		/* survivor-to-survivor sends, per survivor */
#define B_TO_V1 200		/* sends to the victim mixed into the stream */
#define B_TO_V2 100		/* sends to the victim once it is known gone */
#define B_TOTAL (B_S2S + B_TO_V1 + B_TO_V2)
#define B_MAX_LEN 16384u
#define B_DEPTH 256
#define B_SEND_WIN 64
#define B_RECV_WIN 32		/* per source */
#define B_VICTIM_PORT 1002u
#define B_VICTIM_SENDS 5000
#define B_VICTIM_KILL_AT 300	/* victim's completed sends before the kill */
/* Tags of traffic to and from the victim; survivors never receive it. */
#define B_TAG_TO_V 0x5600u	/* the victim posts receives for these */
#define B_TAG_TO_V_UNEXP 0x5601u	/* ... and never for these */
#define B_TAG_FROM_V 0x5700u
#define B_TAG_NEVER 0x5800u	/* nobody sends it */

struct b_msg {
	uint32_t len;
	uint8_t dst;		/* survivor index, or B_SURV for the victim */
	bool phase2;		/* only after the victim is known gone */
	uint64_t tag;
};

static const struct cl_place b_clients[B_SURV + 1] = {
	{ "S0", 0, 1001 }, { "S1", 1, 2001 }, { "S2", 1, 2002 }, { "V", 0, B_VICTIM_PORT },
};
static const char *const b_names[B_SURV] = { "S0", "S1", "S2" };

struct b_shared {
	_Atomic int victim_gone;
	struct b_result {
		uint64_t s2s_sent, received, v_ok, v_noep;
		int64_t ms;
	} res[B_SURV];
};

static struct b_msg b_plan[B_SURV][B_TOTAL];

static void b_make_plan(uint64_t seed)
{
	struct rng r = { seed };
	unsigned c, i;

	for (c = 0; c < B_SURV; c++) {
		struct b_msg *p = b_plan[c];

		for (i = 0; i < B_S2S + B_TO_V1 + B_TO_V2; i++) {
			p[i].len = rng_below(&r, B_MAX_LEN + 1);
			p[i].phase2 = i >= B_S2S + B_TO_V1;
			if (i < B_S2S) {
				p[i].dst = (uint8_t)((c + 1 + rng_below(&r, B_SURV - 1)) % B_SURV);
				p[i].tag = tag_values[rng_below(&r, N_TAGS)];
			} else {
				p[i].dst = B_SURV;
				p[i].tag = rng_below(&r, 2) ? B_TAG_TO_V : B_TAG_TO_V_UNEXP;
			}
		}
		/* Shuffle the first part so victim sends are spread in it. */
		for (i = B_S2S + B_TO_V1 - 1; i > 0; i--) {
			unsigned j = rng_below(&r, i + 1);
			struct b_msg t = p[i];

			p[i] = p[j];
			p[j] = t;
		}
	}
}

static void b_survivor_run(int me, const struct h_daemon *nodes, struct barrier *bar,
			   struct b_shared *sh)
{
	const struct cl_place *ci = &b_clients[me];
	sl_addr_t addr[B_SURV + 1];
	uint32_t n_from[B_SURV] = { 0 }, posted[B_SURV] = { 0 }, out[B_SURV] = { 0 };
	uint32_t done_from[B_SURV] = { 0 }, seq_from[B_SURV][B_TOTAL];
	uint32_t send_slot[B_TOTAL], next = 0, send_out = 0, send_done = 0, n_in = 0;
	uint32_t recv_done = 0, k;
	/* Per posted receive: source and slot; receives are numbered per source. */
	static uint32_t rslot[B_SURV][B_TOTAL];
	static int8_t vstatus[B_TOTAL];
	uint8_t seen[B_TOTAL] = { 0 };
	struct pool sp, rp;
	struct sl_cqe cqes[64];
	struct cl c;
	int64_t t0, last_progress;
	unsigned i, s;
	bool noep_seen = false;

	cl_name = ci->name;
	for (i = 0; i <= B_SURV; i++)
		addr[i] = (sl_addr_t){ nodes[b_clients[i].node].node, b_clients[i].port };
	for (s = 0; s < B_SURV; s++)
		for (i = 0; i < B_TOTAL; i++)
			if (b_plan[s][i].dst == me)
				seq_from[s][n_from[s]++] = i;
	for (s = 0; s < B_SURV; s++)
		n_in += n_from[s];
	cl_open(&c, &nodes[ci->node], ci->port, B_DEPTH);
	pool_init(&sp, c.q, B_SEND_WIN, B_MAX_LEN);
	pool_init(&rp, c.q, B_RECV_WIN * (B_SURV - 1), B_MAX_LEN);
	barrier_arrive(bar);

	t0 = last_progress = h_now_ms();
	while (send_done < B_TOTAL || recv_done < n_in) {
		int64_t now = h_now_ms();
		bool progress = false;
		int n, rc;

		/* Receives come only from the survivors' own addresses: the
		 * victim's messages must never take them. */
		for (s = 0; s < B_SURV; s++) {
			while (posted[s] < n_from[s] && out[s] < B_RECV_WIN) {
				uint32_t slot = pool_get(&rp);

				rc = sl_recv(c.q, addr[s], 0, 0, rp.buf[slot], B_MAX_LEN,
					     CTX_RECV | (s << 24) | posted[s]);
				if (rc == -EAGAIN) {
					pool_put(&rp, slot);
					break;
				}
				CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
				rslot[s][posted[s]++] = slot;
				out[s]++;
				progress = true;
			}
		}
		while (next < B_TOTAL && send_out < B_SEND_WIN) {
			const struct b_msg *m = &b_plan[me][next];
			uint32_t slot;

			if (m->phase2 && !atomic_load(&sh->victim_gone))
				break;
			slot = pool_get(&sp);
			msg_fill(sp.buf[slot], m->len, (uint32_t)me, next, m->tag);
			rc = sl_send(c.q, addr[m->dst], m->tag, sp.buf[slot], m->len, CTX_SEND | next);
			if (rc == -EAGAIN) {
				pool_put(&sp, slot);
				break;
			}
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
			send_slot[next++] = slot;
			send_out++;
			progress = true;
		}
		n = sl_poll(c.q, cqes, 64);
		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
		for (i = 0; i < (unsigned)n; i++) {
			const struct sl_cqe *e = &cqes[i];

			if (CTX_KIND(e->user_ctx) == CTX_SEND) {
				const struct b_msg *m;

				k = CTX_INDEX(e->user_ctx);
				CL_REQUIRE(k < next && !seen[k], CL_E_CTX, "send ctx %#llx",
					   (unsigned long long)e->user_ctx);
				seen[k] = 1;
				m = &b_plan[me][k];
				CL_REQUIRE(e->opcode == SL_OP_SEND && e->len == m->len &&
					   e->tag == m->tag && addr_eq(e->peer, addr[m->dst]),
					   CL_E_META, "send %u: wrong completion fields", k);
				if (m->dst == B_SURV) {
					CL_REQUIRE(e->status == SL_OK || e->status == SL_ERR_NO_ENDPOINT,
						   CL_E_STATUS, "send %u to the victim: %s", k,
						   sl_strerror(e->status));
					vstatus[k] = (int8_t)e->status;
				} else {
					CL_REQUIRE(e->status == SL_OK, CL_E_STATUS, "send %u to %s: %s",
						   k, b_clients[m->dst].name, sl_strerror(e->status));
				}
				pool_put(&sp, send_slot[k]);
				send_out--;
				send_done++;
			} else if (CTX_KIND(e->user_ctx) == CTX_RECV) {
				uint32_t j, seq;

				s = (e->user_ctx >> 24) & 0xff;
				j = e->user_ctx & 0xffffff;
				CL_REQUIRE(s < B_SURV && j < posted[s], CL_E_CTX, "recv ctx %#llx",
					   (unsigned long long)e->user_ctx);
				/* Receives of one source match in posting order. */
				CL_REQUIRE(j == done_from[s], CL_E_ORDER,
					   "receive %u from %s completed before %u", j,
					   b_clients[s].name, done_from[s]);
				CL_REQUIRE(e->status == SL_OK, CL_E_STATUS, "recv from %s: %s",
					   b_clients[s].name, sl_strerror(e->status));
				CL_REQUIRE(e->opcode == SL_OP_RECV && addr_eq(e->peer, addr[s]),
					   CL_E_META, "recv from %s: peer %08x:%u", b_clients[s].name,
					   e->peer.node, e->peer.port);
				seq = seq_from[s][j];
				CL_REQUIRE(e->len == b_plan[s][seq].len && e->tag == b_plan[s][seq].tag,
					   CL_E_META, "recv %u from %s: len %llu tag %#llx", j,
					   b_clients[s].name, (unsigned long long)e->len,
					   (unsigned long long)e->tag);
				CL_REQUIRE(msg_check(rp.buf[rslot[s][j]], e->len, s, seq, e->tag),
					   CL_E_DATA, "recv %u from %s: payload", j, b_clients[s].name);
				pool_put(&rp, rslot[s][j]);
				done_from[s]++;
				out[s]--;
				recv_done++;
			} else {
				CL_DIE(CL_E_CTX, "unknown ctx %#llx", (unsigned long long)e->user_ctx);
			}
		}
		if (n > 0 || progress) {
			last_progress = now;
			continue;
		}
		cl_idle(&c, last_progress, "stalled: sent %u/%u, received %u/%u, victim gone %d",
			send_done, B_TOTAL, recv_done, n_in, atomic_load(&sh->victim_gone));
	}
	cl_expect_quiet(&c, 20);
	/* Sends to the victim, in send order: OK until it died, then
	 * NO_ENDPOINT for good; and always NO_ENDPOINT once it was gone. */
	for (k = 0; k < B_TOTAL; k++) {
		const struct b_msg *m = &b_plan[me][k];

		if (m->dst != B_SURV)
			continue;
		if (vstatus[k] == SL_OK) {
			CL_REQUIRE(!noep_seen, CL_E_STATUS, "send %u to the dead victim completed OK", k);
			CL_REQUIRE(!m->phase2, CL_E_STATUS, "send %u after the victim was gone: OK", k);
			sh->res[me].v_ok++;
		} else {
			noep_seen = true;
			sh->res[me].v_noep++;
		}
	}
	sh->res[me].s2s_sent = B_S2S;
	sh->res[me].received = recv_done;
	sh->res[me].ms = h_now_ms() - t0;
	cl_close(&c);
	_exit(CL_OK);
}

/* The victim: streams to the survivors, has receives posted (some never
 * matched) and messages waiting unexpected, and is killed mid-stream. */
static void b_victim_run(const struct h_daemon *nodes, struct barrier *bar, int report_fd)
{
	uint32_t send_out = 0, sent = 0, ok = 0, posted = 0, slot_of[B_VICTIM_SENDS];
	struct rng r = { 77 };
	struct sl_cqe cqes[64];
	struct pool sp;
	struct cl c;
	uint8_t *rb;
	bool reported = false;
	int64_t t0;
	unsigned i;
	int rc;

	cl_name = "V";
	cl_open(&c, &nodes[0], B_VICTIM_PORT, B_DEPTH);
	pool_init(&sp, c.q, B_SEND_WIN, B_MAX_LEN);
	rb = sl_alloc(c.q, 104 * 4096);
	CL_REQUIRE(rb, CL_E_SETUP, "sl_alloc");
	for (i = 0; i < 104; i++) {
		rc = sl_recv(c.q, SL_ANY_SOURCE, i < 64 ? B_TAG_NEVER : B_TAG_TO_V, ~0ull,
			     rb + i * 4096, 4096, CTX_RECV | i);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	}
	barrier_arrive(bar);
	t0 = h_now_ms();
	for (;;) {
		while (posted < B_VICTIM_SENDS && send_out < B_SEND_WIN) {
			uint32_t slot = pool_get(&sp), len = rng_below(&r, B_MAX_LEN + 1);
			sl_addr_t dst = { nodes[b_clients[posted % B_SURV].node].node,
					  b_clients[posted % B_SURV].port };

			msg_fill(sp.buf[slot], len, B_SURV, posted, B_TAG_FROM_V);
			rc = sl_send(c.q, dst, B_TAG_FROM_V, sp.buf[slot], len, CTX_SEND | posted);
			if (rc == -EAGAIN) {
				pool_put(&sp, slot);
				break;
			}
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
			slot_of[posted++] = slot;
			send_out++;
		}
		rc = sl_poll(c.q, cqes, 64);
		CL_REQUIRE(rc >= 0, CL_E_POLL, "sl_poll: %s", strerror(-rc));
		for (i = 0; i < (unsigned)rc; i++) {
			if (CTX_KIND(cqes[i].user_ctx) != CTX_SEND)
				continue;
			pool_put(&sp, slot_of[CTX_INDEX(cqes[i].user_ctx)]);
			send_out--;
			sent++;
			ok += cqes[i].status == SL_OK;
		}
		if (!reported && ok >= B_VICTIM_KILL_AT) {
			cl_signal(report_fd, "report");
			reported = true;
		}
		CL_REQUIRE(h_now_ms() - t0 < 60000, CL_E_TIMEOUT, "never killed (%u sent)", sent);
		if (rc == 0) {
			rc = sl_wait(c.q, 1);
			CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
		}
	}
}

/* From a fresh client on @from: sends to @dst until one completes
 * SL_ERR_NO_ENDPOINT; returns the milliseconds that took. */
static int64_t wait_port_gone(const struct h_daemon *from, sl_addr_t dst, int timeout_ms)
{
	int64_t t0 = h_now_ms();
	struct sl_ctx *ctx;
	struct sl_queue *q;
	int rc = sl_open(from->sock, &ctx);

	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	rc = sl_queue_open(ctx, 0, 4, &q);
	H_ASSERT(rc == 0, "sl_queue_open: %s", strerror(-rc));
	for (;;) {
		struct sl_cqe cqe;

		rc = sl_send(q, dst, 0, NULL, 0, 5);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		wait_cqes(q, &cqe, 1, 5000);
		if (cqe.status == SL_ERR_NO_ENDPOINT)
			break;
		H_ASSERT(cqe.status == SL_OK, "probe to %08x:%u: %s", dst.node, dst.port,
			 sl_strerror(cqe.status));
		H_ASSERT(h_now_ms() - t0 < timeout_ms, "port %08x:%u still bound after %d ms",
			 dst.node, dst.port, timeout_ms);
		h_sleep_ms(5);
	}
	H_EQ(sl_queue_close(q), 0);
	sl_close(ctx);
	return h_now_ms() - t0;
}

START_TEST(sigkill_cleanup)
{
	static const char *const names[] = { "A", "B" };
	struct h_daemon nodes[2];
	struct b_shared *sh;
	struct barrier bar;
	pid_t pids[B_SURV + 1];
	int fds[2], maps[2], report[2], st;
	const char *all_names[B_SURV + 1] = { "S0", "S1", "S2", "V" };
	int64_t gone_ms;
	uint64_t noep = 0;
	unsigned i;
	uint8_t x;

	h_cluster_start(nodes, names, 2);
	for (i = 0; i < 2; i++)
		settle_baseline(&nodes[i], &fds[i], &maps[i]);
	b_make_plan(4242);
	sh = shared_alloc(sizeof(*sh));
	barrier_init(&bar);
	H_ASSERT(pipe2(report, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	for (i = 0; i <= B_SURV; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			cl_close_fd(report[0]);
			if (i == B_SURV)
				b_victim_run(nodes, &bar, report[1]);
			cl_close_fd(report[1]);
			b_survivor_run((int)i, nodes, &bar, sh);
		}
	}
	H_ASSERT(close(report[1]) == 0, "close: %s", strerror(errno));
	barrier_release(&bar, pids, all_names, B_SURV + 1);

	if (h_read_byte(report[0], &x, 30000) != 1)
		fail_clients(pids, all_names, B_SURV + 1, "the victim never reported progress");
	H_ASSERT(kill(pids[B_SURV], SIGKILL) == 0, "kill: %s", strerror(errno));
	H_ASSERT(waitpid(pids[B_SURV], &st, 0) == pids[B_SURV], "waitpid: %s", strerror(errno));
	H_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "victim: %s", wait_status_str(st));
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[1]), "a daemon died");
	/* Across the link: node B learns the port is gone from A's NAK. */
	gone_ms = wait_port_gone(&nodes[1], (sl_addr_t){ nodes[0].node, B_VICTIM_PORT }, 2000);
	atomic_store(&sh->victim_gone, 1);

	expect_clients_ok(pids, b_names, B_SURV, 60000);
	H_ASSERT(h_daemon_alive(&nodes[0]) && h_daemon_alive(&nodes[1]), "a daemon died");
	for (i = 0; i < B_SURV; i++) {
		H_EQ(sh->res[i].v_ok + sh->res[i].v_noep, B_TO_V1 + B_TO_V2);
		H_ASSERT(sh->res[i].v_noep >= B_TO_V2, "%s: %llu NO_ENDPOINT", b_names[i],
			 (unsigned long long)sh->res[i].v_noep);
		noep += sh->res[i].v_noep;
	}
	printf("sigkill_cleanup: victim's port gone %lld ms after its death; survivors' sends "
	       "to it: %llu/%llu/%llu OK, %llu NO_ENDPOINT; survivors %lld/%lld/%lld ms\n",
	       (long long)gone_ms, (unsigned long long)sh->res[0].v_ok,
	       (unsigned long long)sh->res[1].v_ok, (unsigned long long)sh->res[2].v_ok,
	       (unsigned long long)noep, (long long)sh->res[0].ms, (long long)sh->res[1].ms,
	       (long long)sh->res[2].ms);
	for (i = 0; i < 2; i++)
		expect_baseline(&nodes[i], fds[i], maps[i]);
	H_ASSERT(close(report[0]) == 0, "close: %s", strerror(errno));
	shared_free(sh, sizeof(*sh));
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *sigkill_cleanup_suite(void)
{
	Suite *s = suite_create("sigkill_cleanup");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, sigkill_cleanup);
	return s;
}

int main(void)
{
	return h_run_suite(sigkill_cleanup_suite());
}
