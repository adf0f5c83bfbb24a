/*
 * test_restart.c - a peer restart fails only what may have reached the
 * old incarnation (docs/peer-restart.md).
 *
 * Two daemons on TCP loopback: the one with the lower node id dials (the
 * "dialer"), the other accepts (the "accepter"); names are picked so that
 * either role is known (sl_node_id).  A client streams 512-byte eager
 * messages to a receiver on the other node, 64 in flight; every message
 * names itself (testutil's msg_fill), so each receiver knows which
 * arrived, and every send's completion is counted.  Each scenario is its
 * own Check test case (CK_RUN_CASE=accepter_killed, for instance):
 *   accepter_killed     the reported input: kill -9 the accepter while 64
 *                       sends are in flight, restart it 20 ms, 500 ms or
 *                       5 s later; a new receiver binds the same port and
 *                       posts 64 receives; only then does the client post
 *                       64 new sends: all complete SL_OK, arrive once, in
 *                       order, intact; each of the 64 in flight completes
 *                       once, SL_ERR_PEER_RESTARTED only if it was not
 *                       delivered again to the new incarnation
 *   unsent_keep_order   sends posted while the accepter is dead wait in
 *                       the dialer's backlog and go to the new
 *                       incarnation, ahead of the sends posted after
 *   accepter_sigterm    the same with SIGTERM (the peer says BYE): the
 *                       dialer hears of the return at once and the 64 new
 *                       sends complete SL_OK
 *   survivor_learns     redial_min_ms = redial_max_ms = 20 s: the dialer's
 *                       link is up again within 2 s of the restarted
 *                       accepter listening (its nudge)
 *   dialer_killed       the restarted node is the dialer: nothing posted
 *                       after it died, or left unsent, fails
 *   rndv_restart        an RTS the old incarnation acknowledged fails
 *                       SL_ERR_PEER_RESTARTED; rendezvous posted while it
 *                       was dead go to the new one, SL_OK, intact
 *   stranger_nudge      HELLOs claiming to be the accepter, from a
 *                       stranger, on the dialer's port: the healthy link
 *                       stays up on its connection and keeps working
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
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "harness.h"
#include "sl_wire.h"
#include "sluice.h"
#include "testutil.h"

#define RS_PORT 4200u
#define RS_TAG_OLD 1u
#define RS_TAG_NEW 2u
#define RS_INFLIGHT 64u
#define RS_MSG 512u			/* bytes, eager */
#define RS_STREAM 4000u			/* old messages posted at most */
#define RS_KILL_AFTER 1000u		/* old sends completed before the fault */
#define RS_UNSENT 16u			/* posted while the peer is dead */
#define RS_NEW 64u			/* posted after the new receiver is bound */
#define RS_IDS (RS_STREAM + RS_UNSENT + RS_NEW)
#define RS_FIRST_UNSENT RS_STREAM
#define RS_FIRST_NEW (RS_STREAM + RS_UNSENT)
/* Longest wait without progress (a busy machine is slow, not stuck). */
#define RS_QUIET_MS 10000
/* The survivor's link is up again within this of the restarted peer's
 * start (redial_max_ms is 20 s in those tests). */
#define RS_LEARN_MS 2000
#define RS_SLOW_REDIAL "[transport]\nredial_min_ms = 20000\nredial_max_ms = 20000\n"
/* ... and a SIGTERM that cancels the receives still posted soon. */
#define RS_SLOW_REDIAL_QUICK_DRAIN RS_SLOW_REDIAL "[daemon]\nshutdown_drain_ms = 200\n"

enum { ACC = 0, DIAL = 1 };	/* h_cluster_start starts the accepter first */

struct sender {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint8_t *buf;			/* RS_IDS messages of RS_MSG bytes */
	uint32_t src;			/* node id, named in the payloads */
	sl_addr_t dst;
	uint32_t next_old;		/* next old id to post */
	uint32_t outstanding;
	uint32_t completions;
	uint8_t done[RS_IDS];
	int32_t status[RS_IDS];
};

struct receiver {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint8_t *buf;			/* RS_INFLIGHT slots of RS_MSG bytes */
	uint32_t src;			/* the sender's node id */
	uint32_t n;			/* messages received */
	int64_t last[3];		/* per tag: the last id received */
	uint8_t got[RS_IDS];
};

static void roles(const char **names)
{
	bool a_dials = sl_node_id("A") < sl_node_id("B");

	names[ACC] = a_dials ? "B" : "A";
	names[DIAL] = a_dials ? "A" : "B";
}

static uint64_t tag_of(uint32_t id)
{
	return id < RS_STREAM ? RS_TAG_OLD : RS_TAG_NEW;
}

static void sender_open(struct sender *s, const struct h_daemon *d, const struct h_daemon *to)
{
	memset(s, 0, sizeof(*s));
	H_EQ(sl_open(d->sock, &s->ctx), 0);
	H_EQ(sl_queue_open(s->ctx, 0, 512, &s->q), 0);
	s->buf = sl_alloc(s->q, (size_t)RS_IDS * RS_MSG);
	H_ASSERT(s->buf, "sl_alloc");
	s->src = d->node;
	s->dst = (sl_addr_t){ to->node, RS_PORT };
}

static void sender_post(struct sender *s, uint32_t id)
{
	uint8_t *p = s->buf + (size_t)id * RS_MSG;

	msg_fill(p, RS_MSG, s->src, id, tag_of(id));
	H_EQ(sl_send(s->q, s->dst, tag_of(id), p, RS_MSG, id), 0);
	s->outstanding++;
}

/* Take every send completion there is; each send completes once. */
static unsigned sender_reap(struct sender *s)
{
	struct sl_cqe cqe;
	unsigned n = 0;

	while (sl_poll(s->q, &cqe, 1) == 1) {
		uint64_t id = cqe.user_ctx;

		H_ASSERT(cqe.opcode == SL_OP_SEND && id < RS_IDS, "opcode %u ctx %llu",
			 cqe.opcode, (unsigned long long)id);
		H_ASSERT(!s->done[id], "send %llu completed twice: %s, then %s",
			 (unsigned long long)id, sl_strerror(s->status[id]),
			 sl_strerror(cqe.status));
		s->done[id] = 1;
		s->status[id] = cqe.status;
		s->completions++;
		s->outstanding--;
		n++;
	}
	return n;
}

static void receiver_open(struct receiver *r, const struct h_daemon *d, uint32_t src)
{
	memset(r, 0, sizeof(*r));
	H_EQ(sl_open(d->sock, &r->ctx), 0);
	H_EQ(sl_queue_open(r->ctx, RS_PORT, 256, &r->q), 0);
	r->buf = sl_alloc(r->q, (size_t)RS_INFLIGHT * RS_MSG);
	H_ASSERT(r->buf, "sl_alloc");
	r->src = src;
	r->last[RS_TAG_OLD] = r->last[RS_TAG_NEW] = -1;
}

static void receiver_post_all(struct receiver *r, uint64_t tag)
{
	uint32_t i;

	for (i = 0; i < RS_INFLIGHT; i++)
		H_EQ(sl_recv(r->q, SL_ANY_SOURCE, tag, ~0ull, r->buf + (size_t)i * RS_MSG,
			     RS_MSG, i), 0);
}

/* Take every receive completion there is: each message intact, once, in
 * its tag's order; the receive goes again when @repost.  Without @repost
 * (its daemon has stopped), receives it canceled are passed over. */
static unsigned receiver_reap(struct receiver *r, bool repost)
{
	struct sl_cqe cqe;
	unsigned n = 0;

	while (sl_poll(r->q, &cqe, 1) == 1) {
		uint8_t *p = r->buf + (size_t)cqe.user_ctx * RS_MSG;
		struct msg_hdr h;

		if (!repost && cqe.status == SL_ERR_CANCELED)
			continue;

		H_ASSERT(cqe.opcode == SL_OP_RECV && cqe.status == SL_OK &&
			 cqe.user_ctx < RS_INFLIGHT && cqe.len == RS_MSG,
			 "receive %llu: %s, %llu bytes", (unsigned long long)cqe.user_ctx,
			 sl_strerror(cqe.status), (unsigned long long)cqe.len);
		H_ASSERT(msg_decode(p, RS_MSG, &h) && h.seq < RS_IDS && h.tag == cqe.tag &&
			 tag_of(h.seq) == cqe.tag && msg_check(p, RS_MSG, r->src, h.seq, h.tag),
			 "receive %llu: not a message of the test intact (tag %llu)",
			 (unsigned long long)cqe.user_ctx, (unsigned long long)cqe.tag);
		H_ASSERT((int64_t)h.seq > r->last[cqe.tag], "message %u after %lld (tag %llu)",
			 h.seq, (long long)r->last[cqe.tag], (unsigned long long)cqe.tag);
		r->last[cqe.tag] = h.seq;
		H_ASSERT(!r->got[h.seq], "message %u received twice", h.seq);
		r->got[h.seq] = 1;
		r->n++;
		n++;
		if (repost)
			H_EQ(sl_recv(r->q, SL_ANY_SOURCE, cqe.tag, ~0ull, p, RS_MSG, cqe.user_ctx), 0);
	}
	return n;
}

/* A wait that fails only when nothing moves for RS_QUIET_MS. */
struct rs_wait {
	int64_t at;
	const char *what;
};

static void rs_wait_start(struct rs_wait *pg, const char *what)
{
	pg->at = h_now_ms();
	pg->what = what;
}

static void rs_wait_note(struct rs_wait *pg, unsigned moved)
{
	if (moved) {
		pg->at = h_now_ms();
		return;
	}
	H_ASSERT(h_now_ms() - pg->at < RS_QUIET_MS, "%s: nothing moved for %d ms", pg->what,
		 RS_QUIET_MS);
	h_sleep_ms(1);
}

/* Stream old messages, 64 in flight, until @target sends completed; then
 * fill the window again, so that 64 are in flight. */
static void stream(struct sender *s, struct receiver *r, uint32_t target)
{
	struct rs_wait pg;

	rs_wait_start(&pg, "stream");
	while (s->completions < target) {
		while (s->outstanding < RS_INFLIGHT && s->next_old < RS_STREAM)
			sender_post(s, s->next_old++);
		rs_wait_note(&pg, sender_reap(s) + receiver_reap(r, true));
	}
	while (s->outstanding < RS_INFLIGHT && s->next_old < RS_STREAM)
		sender_post(s, s->next_old++);
	H_EQ(s->outstanding, RS_INFLIGHT);
}

static char *link_key(char *buf, size_t cap, const char *peer, const char *what)
{
	snprintf(buf, cap, "link.%s.%s", peer, what);
	return buf;
}

/* Wait until @d's link to @peer is up (@up) or not; returns the ms it
 * took.  Fatal after @bound_ms. */
static int64_t wait_link_state(const struct h_daemon *d, const char *peer, bool up,
			       int bound_ms)
{
	int64_t t0 = h_now_ms();
	char key[64], state[16];

	link_key(key, sizeof(key), peer, "state");
	for (;;) {
		h_daemon_stat_str(d, key, state, sizeof(state));
		if ((strcmp(state, "up") == 0) == up)
			return h_now_ms() - t0;
		H_ASSERT(h_now_ms() - t0 < bound_ms, "%s: link to %s still %s after %d ms",
			 d->name, peer, state, bound_ms);
		h_sleep_ms(2);
	}
}

static uint64_t link_stat(const struct h_daemon *d, const char *peer, const char *what)
{
	char key[64];

	return h_daemon_stat(d, link_key(key, sizeof(key), peer, what));
}

/* Until every send posted has completed and the receiver has those of
 * [@lo_new, @hi) that completed SL_OK (a failed one never arrives). */
static void finish(struct sender *s, struct receiver *r, uint32_t lo_new, uint32_t hi)
{
	struct rs_wait pg;
	uint32_t i, missing;

	rs_wait_start(&pg, "after the restart");
	for (;;) {
		missing = s->outstanding;
		for (i = lo_new; i < hi; i++)
			missing += !r->got[i] && (!s->done[i] || s->status[i] == SL_OK);
		if (!missing)
			break;
		rs_wait_note(&pg, sender_reap(s) + receiver_reap(r, true));
	}
}

struct old_fate {
	uint32_t in_flight;		/* old sends not complete at the fault */
	uint32_t ok_old;		/* of those: SL_OK, the old incarnation has it */
	uint32_t to_new;		/* SL_OK, delivered to the new incarnation */
	uint32_t failed;		/* the expected failure status */
	uint32_t no_endpoint;		/* reached the new incarnation before its receiver */
};

/*
 * The sends in flight at the fault ([@from, @to) of the old stream): each
 * completed once (sender_reap); SL_OK, @fail_status or, for one that went
 * to the new incarnation before its receiver was bound,
 * SL_ERR_NO_ENDPOINT.  A message the new incarnation received completed
 * SL_OK and never reached the old one; one that failed never reached the
 * new one.  The new receiver collects the old messages it has first.
 */
static void check_old(const struct sender *s, struct receiver *r_old, struct receiver *r_new,
		      uint32_t from, uint32_t to, int fail_status, struct old_fate *f)
{
	struct rs_wait pg;
	uint32_t i;

	receiver_post_all(r_new, RS_TAG_OLD);
	rs_wait_start(&pg, "old messages at the new incarnation");
	while (h_now_ms() - pg.at < 300)
		if (!receiver_reap(r_new, true))
			h_sleep_ms(5);
	memset(f, 0, sizeof(*f));
	f->in_flight = to - from;
	for (i = from; i < to; i++) {
		int st = s->status[i];

		H_ASSERT(s->done[i], "old send %u never completed", i);
		H_ASSERT(st == SL_OK || st == fail_status || st == SL_ERR_NO_ENDPOINT,
			 "old send %u: %s", i, sl_strerror(st));
		H_ASSERT(!(r_old->got[i] && r_new->got[i]), "message %u reached both incarnations",
			 i);
		if (r_new->got[i]) {
			H_ASSERT(st == SL_OK, "message %u reached the new incarnation: %s", i,
				 sl_strerror(st));
			f->to_new++;
		} else if (st == SL_OK) {
			f->ok_old++;
		} else if (st == fail_status) {
			f->failed++;
		} else {
			H_ASSERT(!r_old->got[i], "message %u reached the old incarnation, then "
				 "NO_ENDPOINT", i);
			f->no_endpoint++;
		}
	}
}

/* Every send of [@lo, @hi) completed SL_OK and arrived (in order, once:
 * receiver_reap). */
static void expect_all_ok(const struct sender *s, const struct receiver *r, uint32_t lo,
			  uint32_t hi, const char *what)
{
	uint32_t i, ok = 0, first_bad = hi;

	for (i = lo; i < hi; i++) {
		if (s->done[i] && s->status[i] == SL_OK && r->got[i])
			ok++;
		else if (first_bad == hi)
			first_bad = i;
	}
	H_ASSERT(ok == hi - lo, "%s: %u of %u SL_OK and delivered; the first other, %u: %s%s",
		 what, ok, hi - lo, first_bad - lo, first_bad < hi && s->done[first_bad] ?
		 sl_strerror(s->status[first_bad]) : "not completed",
		 first_bad < hi && r->got[first_bad] ? ", delivered" : "");
}

/* ------------------------------------------------------------------ */
/* A scenario: two daemons, a client streaming from one to the other     */
/* ------------------------------------------------------------------ */

struct scene {
	const char *names[2];
	struct h_daemon nodes[2];
	int from, to;			/* ACC or DIAL: the sender's node, the receiver's */
	uint32_t first_in_flight;	/* old sends [first_in_flight, s.next_old) were in
					 * flight at the fault */
	struct sender s;
	struct receiver r_old, r_new;
};

/* Start the daemons (@conf on both, NULL: none), then stream from @from
 * to @to until RS_KILL_AFTER sends completed, with 64 in flight. */
static struct scene *scene_start(const char *conf, int from, int to)
{
	struct scene *sc = calloc(1, sizeof(*sc));

	H_ASSERT(sc, "calloc");
	roles(sc->names);
	h_cluster_start_conf(sc->nodes, sc->names, 2, conf);
	sc->from = from;
	sc->to = to;
	receiver_open(&sc->r_old, &sc->nodes[to], sc->nodes[from].node);
	receiver_post_all(&sc->r_old, RS_TAG_OLD);
	sender_open(&sc->s, &sc->nodes[from], &sc->nodes[to]);
	stream(&sc->s, &sc->r_old, RS_KILL_AFTER);
	sc->first_in_flight = sc->s.next_old - RS_INFLIGHT;
	return sc;
}

/* The receiving daemon is gone (@killed: kill -9, else SIGTERM): take what
 * its receiver had, and wait until the sender's daemon sees the link down. */
static void scene_receiver_gone(struct scene *sc, bool killed)
{
	if (killed)
		h_daemon_kill(&sc->nodes[sc->to]);
	else
		h_daemon_stop(&sc->nodes[sc->to]);
	receiver_reap(&sc->r_old, false);
	sl_close(sc->r_old.ctx);
	wait_link_state(&sc->nodes[sc->from], sc->names[sc->to], false, 5000);
}

/* Restart the receiving daemon (@conf) and bind the new receiver there,
 * with 64 receives for the new sends. */
static void scene_restart(struct scene *sc, const char *conf)
{
	h_daemon_restart(&sc->nodes[sc->to], &sc->nodes[sc->from], 1, conf);
	receiver_open(&sc->r_new, &sc->nodes[sc->to], sc->nodes[sc->from].node);
	receiver_post_all(&sc->r_new, RS_TAG_NEW);
}

static uint64_t scene_stat(const struct scene *sc, const char *what)
{
	return link_stat(&sc->nodes[sc->from], sc->names[sc->to], what);
}

static void scene_end(struct scene *sc)
{
	sl_close(sc->r_new.ctx);
	sl_close(sc->s.ctx);
	h_cluster_stop(sc->nodes, 2);
	free(sc);
}

/*
 * The receiving node was killed; sends posted while it is dead (16) wait
 * in the sender's backlog.  The sending daemon stands still (SIGSTOP)
 * while the other restarts and its new receiver binds, so that nothing
 * reaches the new incarnation before a receiver is there (a dialer's
 * connection waits in the listen queue meanwhile).  Then 64 more: the 16
 * and the 64 complete SL_OK, arrive once, in order.
 */
static void scene_restart_with_unsent(struct scene *sc)
{
	uint64_t backlog = scene_stat(sc, "backlog");	/* old ones not posted */
	struct rs_wait pg;
	uint32_t i;

	for (i = RS_FIRST_UNSENT; i < RS_FIRST_NEW; i++)
		sender_post(&sc->s, i);
	rs_wait_start(&pg, "unsent sends reaching the backlog");
	while (scene_stat(sc, "backlog") != backlog + RS_UNSENT)
		rs_wait_note(&pg, sender_reap(&sc->s));
	H_EQ(kill(sc->nodes[sc->from].pid, SIGSTOP), 0);
	scene_restart(sc, NULL);
	H_EQ(kill(sc->nodes[sc->from].pid, SIGCONT), 0);
	for (i = RS_FIRST_NEW; i < RS_IDS; i++)
		sender_post(&sc->s, i);
	finish(&sc->s, &sc->r_new, RS_FIRST_UNSENT, RS_IDS);
	expect_all_ok(&sc->s, &sc->r_new, RS_FIRST_UNSENT, RS_FIRST_NEW,
		      "sends posted while it was dead");
	expect_all_ok(&sc->s, &sc->r_new, RS_FIRST_NEW, RS_IDS, "sends posted after the restart");
}

static void post_new(struct scene *sc)
{
	uint32_t i;

	for (i = RS_FIRST_NEW; i < RS_IDS; i++)
		sender_post(&sc->s, i);
	finish(&sc->s, &sc->r_new, RS_FIRST_NEW, RS_IDS);
	expect_all_ok(&sc->s, &sc->r_new, RS_FIRST_NEW, RS_IDS, "new sends after the restart");
}

/* ------------------------------------------------------------------ */

static const int restart_delay_ms[] = { 20, 500, 5000 };

/*
 * The reported input, with the restart delay of loop iteration @_i.  The
 * 64 sends posted after the new receiver was bound complete SL_OK; each
 * of the 64 in flight at the kill completes once.
 */
START_TEST(accepter_killed)
{
	struct scene *sc = scene_start(NULL, DIAL, ACC);
	int delay = restart_delay_ms[_i];
	int64_t t_kill = h_now_ms();
	struct old_fate f;

	scene_receiver_gone(sc, true);
	while (h_now_ms() - t_kill < delay)
		h_sleep_ms(1);
	scene_restart(sc, NULL);
	post_new(sc);
	check_old(&sc->s, &sc->r_old, &sc->r_new, sc->first_in_flight, sc->s.next_old,
		  SL_ERR_PEER_RESTARTED, &f);
	printf("accepter_killed (restart %d ms after the kill): 64 new sends SL_OK, in order; "
	       "of the %u in flight at the kill: %u SL_OK from the old incarnation, %u "
	       "SL_ERR_PEER_RESTARTED, %u delivered to the new one, %u SL_ERR_NO_ENDPOINT "
	       "there; restart_kept %llu\n", delay, f.in_flight, f.ok_old, f.failed, f.to_new,
	       f.no_endpoint, (unsigned long long)scene_stat(sc, "restart_kept"));
	H_EQ(scene_stat(sc, "peer_restarts"), 1);
	H_EQ(scene_stat(sc, "restart_failed"), f.failed);
	scene_end(sc);
}
END_TEST

/*
 * Kill the node a client on @from streams to (@to) with 64 in flight,
 * then scene_restart_with_unsent(): each of the 64 completes once;
 * every send posted after the kill completes SL_OK, once, in order.
 */
static void killed_with_unsent(int from, int to, const char *label)
{
	struct scene *sc = scene_start(NULL, from, to);
	struct old_fate f;

	scene_receiver_gone(sc, true);
	scene_restart_with_unsent(sc);
	check_old(&sc->s, &sc->r_old, &sc->r_new, sc->first_in_flight, sc->s.next_old,
		  SL_ERR_PEER_RESTARTED, &f);
	H_EQ(f.no_endpoint, 0);
	H_EQ(scene_stat(sc, "peer_restarts"), 1);
	H_EQ(scene_stat(sc, "restart_failed"), f.failed);
	/* And the new sends posted before the link was up again. */
	H_ASSERT(scene_stat(sc, "restart_kept") >= RS_UNSENT + f.to_new, "restart_kept %llu",
		 (unsigned long long)scene_stat(sc, "restart_kept"));
	printf("%s: %u sends posted while %s was dead and %u after its restart: all SL_OK, "
	       "delivered once, in order; of the %u in flight at the kill: %u SL_OK from the "
	       "old incarnation, %u SL_ERR_PEER_RESTARTED, %u delivered to the new one; "
	       "restart_kept %llu\n", label, RS_UNSENT, sc->names[to], RS_NEW, f.in_flight,
	       f.ok_old, f.failed, f.to_new, (unsigned long long)scene_stat(sc, "restart_kept"));
	scene_end(sc);
}

/* The sends posted while the accepter was dead go to its new
 * incarnation, in order, ahead of those posted after. */
START_TEST(unsent_keep_order)
{
	killed_with_unsent(DIAL, ACC, "unsent_keep_order");
}
END_TEST

/*
 * SIGTERM instead of kill -9: the accepter says BYE, the dialer fails what
 * waited on it SL_ERR_PEER_DOWN, each once.  Restarted 500 ms later, it
 * tells the dialer (redial_max_ms 20 s) that it is back: the link is up
 * within RS_LEARN_MS, and the 64 sends posted after the new receiver is
 * bound complete SL_OK.
 */
START_TEST(accepter_sigterm)
{
	struct scene *sc = scene_start(RS_SLOW_REDIAL_QUICK_DRAIN, DIAL, ACC);
	int64_t t_stop = h_now_ms(), learn_ms;
	struct old_fate f;

	scene_receiver_gone(sc, false);
	while (h_now_ms() - t_stop < 500)
		h_sleep_ms(1);
	scene_restart(sc, RS_SLOW_REDIAL_QUICK_DRAIN);
	learn_ms = wait_link_state(&sc->nodes[DIAL], sc->names[ACC], true, RS_LEARN_MS);
	post_new(sc);
	check_old(&sc->s, &sc->r_old, &sc->r_new, sc->first_in_flight, sc->s.next_old,
		  SL_ERR_PEER_DOWN, &f);
	H_EQ(f.to_new + f.no_endpoint, 0);
	H_EQ(scene_stat(sc, "byes_rx"), 1);
	printf("accepter_sigterm: link up %lld ms after the restarted accepter answered "
	       "(redial_max_ms 20000); 64 new sends SL_OK, in order; of the %u in flight at "
	       "the SIGTERM: %u SL_OK, %u SL_ERR_PEER_DOWN\n", (long long)learn_ms,
	       f.in_flight, f.ok_old, f.failed);
	scene_end(sc);
}
END_TEST

/*
 * The accepter dies (kill -9) with the link idle and comes back 300 ms
 * later; the dialer would redial only after redial_max_ms (20 s).  Its
 * link is up again within RS_LEARN_MS of the restarted daemon answering
 * (which it does after it listens), and a message goes through.
 */
START_TEST(survivor_learns)
{
	const char *names[2];
	struct h_daemon nodes[2];
	int64_t learn_ms;

	roles(names);
	h_cluster_start_conf(nodes, names, 2, RS_SLOW_REDIAL);
	h_daemon_kill(&nodes[ACC]);
	wait_link_state(&nodes[DIAL], names[ACC], false, 5000);
	h_sleep_ms(300);
	h_daemon_restart(&nodes[ACC], &nodes[DIAL], 1, RS_SLOW_REDIAL);
	learn_ms = wait_link_state(&nodes[DIAL], names[ACC], true, RS_LEARN_MS);
	h_wait_link(&nodes[DIAL], &nodes[ACC]);
	H_EQ(link_stat(&nodes[DIAL], names[ACC], "peer_restarts"), 1);
	H_EQ(link_stat(&nodes[DIAL], names[ACC], "nudges_rx"), 1);
	H_EQ(link_stat(&nodes[ACC], names[DIAL], "nudges_tx"), 1);
	printf("survivor_learns: the dialer's link was up %lld ms after the restarted accepter "
	       "answered (redial_max_ms 20000)\n", (long long)learn_ms);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* The restarted node is the dialer (a client on the accepter streams to
 * a receiver on the dialer): nothing posted after the kill fails. */
START_TEST(dialer_killed)
{
	killed_with_unsent(ACC, DIAL, "dialer_killed");
}
END_TEST

#define RV_LEN (1u << 20)		/* bytes: a rendezvous */
#define RV_UNSENT 4u
#define RV_TAG_REACHED 3u
#define RV_TAG_UNSENT 4u

/*
 * Rendezvous: an RTS that reached the old incarnation (acknowledged, no
 * receive there yet) fails SL_ERR_PEER_RESTARTED; four rendezvous sends
 * posted while the accepter was dead go to the new one as RTS and
 * complete SL_OK, the data intact, in order.
 */
START_TEST(rndv_restart)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct sl_ctx *sctx, *rctx;
	struct sl_queue *sq, *rq;
	struct sl_cqe cqe;
	struct rs_wait pg;
	sl_addr_t dst;
	uint8_t *sbuf, *rbuf;
	uint32_t i, seen = 0;

	roles(names);
	h_cluster_start(nodes, names, 2);
	dst = (sl_addr_t){ nodes[ACC].node, RS_PORT };
	H_EQ(sl_open(nodes[ACC].sock, &rctx), 0);
	H_EQ(sl_queue_open(rctx, RS_PORT, 64, &rq), 0);
	H_EQ(sl_open(nodes[DIAL].sock, &sctx), 0);
	H_EQ(sl_queue_open(sctx, 0, 64, &sq), 0);
	sbuf = sl_alloc(sq, (size_t)(RV_UNSENT + 1) * RV_LEN);
	H_ASSERT(sbuf, "sl_alloc");
	for (i = 0; i <= RV_UNSENT; i++)
		msg_fill(sbuf + (size_t)i * RV_LEN, RV_LEN, nodes[DIAL].node, i,
			 i ? RV_TAG_UNSENT : RV_TAG_REACHED);
	H_EQ(sl_send(sq, dst, RV_TAG_REACHED, sbuf, RV_LEN, 0), 0);
	rs_wait_start(&pg, "the first RTS acknowledged");
	while (link_stat(&nodes[DIAL], names[ACC], "rndv_tx") != 1 ||
	       link_stat(&nodes[DIAL], names[ACC], "unacked") != 0)
		rs_wait_note(&pg, 0);

	h_daemon_kill(&nodes[ACC]);
	sl_close(rctx);
	wait_link_state(&nodes[DIAL], names[ACC], false, 5000);
	for (i = 1; i <= RV_UNSENT; i++)
		H_EQ(sl_send(sq, dst, RV_TAG_UNSENT, sbuf + (size_t)i * RV_LEN, RV_LEN, i), 0);
	rs_wait_start(&pg, "unsent rendezvous reaching the backlog");
	while (link_stat(&nodes[DIAL], names[ACC], "backlog") != RV_UNSENT)
		rs_wait_note(&pg, 0);
	H_EQ(kill(nodes[DIAL].pid, SIGSTOP), 0);
	h_daemon_restart(&nodes[ACC], &nodes[DIAL], 1, NULL);
	H_EQ(sl_open(nodes[ACC].sock, &rctx), 0);
	H_EQ(sl_queue_open(rctx, RS_PORT, 64, &rq), 0);
	rbuf = sl_alloc(rq, (size_t)RV_UNSENT * RV_LEN);
	H_ASSERT(rbuf, "sl_alloc");
	for (i = 0; i < RV_UNSENT; i++)
		H_EQ(sl_recv(rq, SL_ANY_SOURCE, RV_TAG_UNSENT, ~0ull, rbuf + (size_t)i * RV_LEN,
			     RV_LEN, i), 0);
	H_EQ(kill(nodes[DIAL].pid, SIGCONT), 0);

	/* Each completes once; the receives were matched in post order (MPI's
	 * non-overtaking rule), so receive i holds message i + 1. */
	for (i = 0; i <= RV_UNSENT; i++) {
		H_EQ(h_wait_cqe(sq, &cqe, RS_QUIET_MS), 1);
		H_ASSERT(cqe.user_ctx <= RV_UNSENT && !(seen & (1u << cqe.user_ctx)) &&
			 cqe.status == (cqe.user_ctx ? SL_OK : SL_ERR_PEER_RESTARTED),
			 "send %llu: %s", (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
		seen |= 1u << cqe.user_ctx;
	}
	seen = 0;
	for (i = 0; i < RV_UNSENT; i++) {
		uint8_t *p;

		H_EQ(h_wait_cqe(rq, &cqe, RS_QUIET_MS), 1);
		p = rbuf + (size_t)cqe.user_ctx * RV_LEN;
		H_ASSERT(cqe.user_ctx < RV_UNSENT && !(seen & (1u << cqe.user_ctx)) &&
			 cqe.status == SL_OK && cqe.len == RV_LEN &&
			 msg_check(p, RV_LEN, nodes[DIAL].node, (uint32_t)cqe.user_ctx + 1,
				   RV_TAG_UNSENT), "receive %llu: %s, %llu bytes",
			 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status),
			 (unsigned long long)cqe.len);
		seen |= 1u << cqe.user_ctx;
	}
	H_EQ(link_stat(&nodes[DIAL], names[ACC], "restart_failed"), 1);
	H_EQ(link_stat(&nodes[DIAL], names[ACC], "restart_kept"), RV_UNSENT);
	printf("rndv_restart: the acknowledged RTS failed SL_ERR_PEER_RESTARTED; %u rendezvous "
	       "posted while the accepter was dead completed SL_OK at its new incarnation, "
	       "intact, in order\n", RV_UNSENT);
	sl_close(rctx);
	sl_close(sctx);
	h_cluster_stop(nodes, 2);
}
END_TEST

#define SN_NUDGES 20

/*
 * A stranger connects to the dialer's port 20 times and says HELLO as
 * the accepter (a new incarnation each time).  Each connection is closed
 * at once; the healthy link is never broken (same connection count, same
 * incarnation, no restart) and a message still goes through.
 */
START_TEST(stranger_nudge)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct h_stats *before = malloc(sizeof(*before)), *after = malloc(sizeof(*after));
	char key[64], inc0[32], inc1[32];
	uint8_t hdr[SL_WIRE_HDR_MAX], b;
	int i, n, fd, rc;

	H_ASSERT(before && after, "malloc");
	roles(names);
	h_cluster_start(nodes, names, 2);
	h_wait_link(&nodes[DIAL], &nodes[ACC]);
	h_daemon_stats(&nodes[DIAL], before);
	for (i = 0; i < SN_NUDGES; i++) {
		struct sl_wire_frame f = { .type = SL_WIRE_HELLO };

		f.u.hello.node_id = nodes[ACC].node;
		f.u.hello.eager_max = 65536;
		f.u.hello.incarnation = 0x5742414e47455200ull + (uint64_t)i;
		f.u.hello.credits = 16;
		n = sl_wire_encode(&f, hdr, sizeof(hdr));
		H_ASSERT(n > 0, "encode: %d", n);
		fd = h_tcp_connect(nodes[DIAL].tcp_port);
		H_EQ(write(fd, hdr, (size_t)n), n);
		/* Closed (reset) without a word. */
		rc = h_read_byte(fd, &b, 2000);
		H_ASSERT(rc == 0 || rc == -ECONNRESET, "nudge %d: %s", i,
			 rc > 0 ? "the daemon answered" : strerror(-rc));
		H_EQ(close(fd), 0);
	}
	h_wait_link(&nodes[DIAL], &nodes[ACC]);
	h_wait_link(&nodes[ACC], &nodes[DIAL]);
	h_daemon_stats(&nodes[DIAL], after);
	link_key(key, sizeof(key), names[ACC], "connects");
	H_EQ(h_stats_u64(after, key), h_stats_u64(before, key));
	link_key(key, sizeof(key), names[ACC], "peer_restarts");
	H_EQ(h_stats_u64(after, key), 0);
	link_key(key, sizeof(key), names[ACC], "incarnation");
	H_ASSERT(strcmp(h_stats_str(before, key, inc0, sizeof(inc0)),
			h_stats_str(after, key, inc1, sizeof(inc1))) == 0, "incarnation %s, was %s",
		 inc1, inc0);
	link_key(key, sizeof(key), names[ACC], "nudges_rx");
	H_EQ(h_stats_u64(after, key), SN_NUDGES);
	printf("stranger_nudge: %d forged HELLOs on the dialer's port: each connection closed, "
	       "the link kept its connection and incarnation\n", SN_NUDGES);
	h_cluster_stop(nodes, 2);
	free(before);
	free(after);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("restart");

	/* This file follows links that reconnect on their own after a
	 * restart, with no traffic to wake them: links on demand would wait
	 * (harness.h). */
	h_links_always = true;

	tcase_add_loop_test(h_tcase(s, "accepter_killed", 120), accepter_killed, 0,
			    (int)(sizeof(restart_delay_ms) / sizeof(restart_delay_ms[0])));
	tcase_add_test(h_tcase(s, "unsent_keep_order", 60), unsent_keep_order);
	tcase_add_test(h_tcase(s, "accepter_sigterm", 60), accepter_sigterm);
	tcase_add_test(h_tcase(s, "survivor_learns", 60), survivor_learns);
	tcase_add_test(h_tcase(s, "dialer_killed", 60), dialer_killed);
	tcase_add_test(h_tcase(s, "rndv_restart", 60), rndv_restart);
	tcase_add_test(h_tcase(s, "stranger_nudge", 60), stranger_nudge);
	return h_run_suite(s);
}
