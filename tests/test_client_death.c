/*
 * test_client_death.c - case C11 of docs/cases.md: a receiving
 * client killed (SIGKILL) in the middle of rendezvous traffic.  MPICH
 * issue 1421: rank 0 sent 1 MiB messages in a loop to rank 1; when rank 1
 * was killed, rank 0's send never returned.
 *
 *   rndv_receiver_killed  A1 (node A) streams 1 MiB rendezvous sends, four
 *                         in flight, to B1 (node B, fixed port), which
 *                         receives with 1..8 receives posted ahead.  B1 is
 *                         killed across many trials at varied points; every
 *                         trial's B1 is the "new client on the old port" of
 *                         the trial before.  A2 and B2 play ping-pong on the
 *                         same node pair throughout.
 *   eager_unexpected_receiver_killed
 *                         B1 killed while 100 eager messages for it wait
 *                         unexpected in daemon B.
 *
 * Conventions as in test_random_traffic.c and test_rndv.c: real daemons on
 * TCP loopback (tests/harness.c), clients in forked processes that report
 * through their exit code (enum cl_exit, with a line on stderr) and a
 * shared page, plans from a fixed seed, every wait bounded, daemon state
 * from its statistics (SIGUSR1).
 *
 * What "B1 received a message" means.  A send completes SL_OK when the
 * destination daemon has accepted it (sluice.h): for a rendezvous, when
 * the data is in the matched receive's buffer and that receive has
 * completed.  A receive that completed just before the kill may never
 * have been polled by B1, so B1's own record is not the whole truth.  The
 * daemon's is: every completion it wrote for B1 is in B1's CQ ring, in a
 * shared-memory segment.  So each B1 forks a keeper right after opening
 * its queue: the keeper closes every inherited fd (the daemon sees only
 * B1's control socket, and B1's death), keeps the segment mapped, and
 * after B1 is dead and daemon B has torn the queue down, reads the ring.
 * B1 never posts more receives than the CQ has entries, so the ring never
 * wraps: entries 0 .. tail-1 are every receive completion daemon B ever
 * wrote for that B1, polled or not.  A1's send of message k may complete
 * SL_OK only if one of these holds message k; and if one does, the send
 * must have completed SL_OK.  Over all generations each message is in at
 * most one receive completion, and every one holds the right payload.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "client_kit.h"
#include "sl_shm.h"
#include "sluice.h"
#include "testutil.h"

#define KiB 1024u
#define MiB (1024u * KiB)

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */
/* ------------------------------------------------------------------ */

/* Monotonic microseconds: the same clock as h_now_ms(), in every process. */
static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Client: one event byte to the test process or from it. */
static void ev_send(int fd, uint8_t b, const char *what)
{
	int rc = h_write_byte(fd, b);

	CL_REQUIRE(rc == 0, CL_E_SYNC, "%s: %s", what, strerror(-rc));
}

static void ev_await(int fd, uint8_t want, int ms, const char *what)
{
	uint8_t b = 0;
	int rc = h_read_byte(fd, &b, ms);

	CL_REQUIRE(rc == 1 && b == want, CL_E_SYNC, "%s: rc %d byte %#x", what, rc, b);
}

/* Test process: wait for event @want from a client; if it does not come,
 * kill the clients and fail with their exit statuses. */
static void t_expect(int fd, uint8_t want, int ms, const pid_t *pids, const char *const *names,
		     unsigned n, const char *what)
{
	uint8_t b = 0;
	int rc = h_read_byte(fd, &b, ms);

	if (rc != 1 || b != want) {
		char why[160];

		snprintf(why, sizeof(why), "no \"%s\" within %d ms (rc %d, byte %#x)", what, ms, rc,
			 b);
		fail_clients(pids, names, n, why);
	}
}

static void t_send(int fd, uint8_t b)
{
	int rc = h_write_byte(fd, b);

	H_ASSERT(rc == 0, "pipe write: %s", strerror(-rc));
}

/* Reap one child, bounded; returns its wait status. */
static int t_reap(pid_t pid, int ms)
{
	int st;

	h_wait_children(&pid, 1, ms, &st);
	return st;
}

/* Poll @d's statistic @name until it reads @want (bounded); returns the
 * milliseconds that took, or fails naming the last value. */
static int64_t wait_stat(const struct h_daemon *d, const char *name, uint64_t want, int ms)
{
	int64_t t0 = h_now_ms();

	for (;;) {
		uint64_t v = h_daemon_stat(d, name);

		if (v == want)
			return h_now_ms() - t0;
		H_ASSERT(h_now_ms() - t0 < ms, "daemon %s: %s is %llu, not %llu, after %d ms",
			 d->name, name, (unsigned long long)v, (unsigned long long)want, ms);
		h_sleep_ms(1);
	}
}

/* Poll until @d's fd and memfd-mapping counts are back at @fds, @maps
 * (bounded); returns the milliseconds that took. */
static int64_t wait_baseline(const struct h_daemon *d, int fds, int maps, int ms)
{
	int64_t t0 = h_now_ms();

	for (;;) {
		int f = h_proc_fds(d->pid), m = h_proc_memfd_maps(d->pid);

		H_ASSERT(f >= 0 && m >= 0, "/proc of %s: %d %d", d->name, f, m);
		if (f == fds && m == maps)
			return h_now_ms() - t0;
		H_ASSERT(h_now_ms() - t0 < ms, "daemon %s: %d fds and %d memfd mappings, %d and %d "
			 "before (after %d ms)", d->name, f, m, fds, maps, ms);
		h_sleep_ms(2);
	}
}

/* ------------------------------------------------------------------ */
/* 1. rndv_receiver_killed                                              */
/* ------------------------------------------------------------------ */

#define BIG_LEN MiB		/* above the default eager_max: rendezvous */
#define TAG_BIG 0u
#define SEND_WIN 4		/* A1's sends in flight */
#define PORT_A1 1001u
#define PORT_A2 1002u
#define PORT_B1 2001u
#define PORT_B2 2002u
/* msg_fill sources */
#define SRC_A1 1u
#define SRC_A2 2u
#define SRC_B2 3u
/* B1's queue: 256 SQ entries, so a CQ of 512; B1 posts at most
 * B1_MAX_POSTS receives and makes no sends, so its CQ never wraps. */
#define B1_DEPTH 256u
#define B1_MAX_POSTS 480u
#define B1_MAX_BUFS 8u
#define MAX_SEQ 16384u		/* A1's messages over the whole test */
#define N_TRIALS 48		/* killed B1s: 8 per kill point */
#define N_PROBES 4		/* later sends: 1 MiB and 1 KiB, alternating */
#define PROBE_SMALL KiB
#define FINAL_MSGS 8u		/* to the last B1, which is not killed */
/* Bounds (milliseconds). */
#define KILL_DRAIN_MS 2000	/* outstanding sends complete after the kill */
/* A later send fails this fast: a wrong path waits for a timer of the
 * link (ack_timeout_ms, 2 s), a busy machine delays one completion by far
 * less (100 ms left it little room). */
#define PROBE_MS 1000
#define NOTICE_MS 1000		/* daemon B tears B1's queue down */
/*
 * A2/B2's worst round trip.  A ping is one eager 256-byte message each
 * way; on an idle link it takes ~0.1-0.3 ms.  Here it shares the link with
 * RDMA write segments and the kills, and two cores with eight busy
 * processes (two daemons, A1, B1, A2, B2, the test process polling stats,
 * the keeper).  Measured on this 2-core VM: mean 0.5-0.8 ms, worst 9-17 ms
 * (the same under ASan, and with a second instance of this test running
 * beside it); on a machine loaded by other suites, round trips of 100 ms
 * and more (test_pressure c05).  A ping held up behind a dead client's
 * rendezvous waits for an ack timeout (2 s) or a stalled link: half that
 * still catches it and leaves room for a busy machine.
 */
#define RTT_BOUND_MS 1000
/*
 * Daemon B's RSS after the trials, beside its level before them (the same
 * queues open: B2's).  Everything a dead B1 held must be gone: its segment
 * mapping with 1..8 MiB of arena the RDMA writes touched, its
 * registrations, its unexpected headers.  That is checked exactly by the
 * daemon's fd and memfd-mapping counts after every trial; the RSS bound is
 * for what those do not see.  Measured growth over the 48 trials: about
 * 270 KiB (malloc keeps some freed heap), so 1 MiB of slack.  Under ASan
 * freed chunks sit in the allocator's quarantine (256 MiB by default), and
 * the daemon grew by about 3.4 MiB (some 70 KiB a trial, mostly the stats
 * snapshots' stdio buffers): 8 MiB there.
 */
#define RSS_SLACK_KB (H_UNDER_ASAN ? 8192 : 1024)

#define PP_LEN 256u
#define PP_TAG_PING 7u
#define PP_TAG_ECHO 8u
#define PP_TAG_BYE 9u

enum k_mode { K_START, K_TIMED, K_AFTER_K, K_IDLE, K_AFTER_POST, K_STOPPED, K_FINAL };
#define K_KILL_MODES 6
static const char *const k_mode_name[] = {
	"start", "timed", "after_k", "idle", "after_post", "stopped", "final",
};

enum { K_SEND_TRIAL = 1, K_SEND_PROBE = 2 };

/* One generation of B1 and what A1 does meanwhile; written by the test
 * process before the fork of B1 and the start of A1's trial. */
struct k_trial {
	uint32_t gen;
	uint32_t mode;		/* enum k_mode */
	uint32_t first_seq;	/* A1's first message of the trial */
	uint32_t limit;		/* A1: messages to send; UINT32_MAX: until stopped */
	uint32_t nbuf;		/* B1: receives kept posted */
	uint32_t signal_k;	/* B1: report after this many receives (0: never) */
	uint32_t delay_us;	/* timed, stopped: after A1 started */
	bool probes;		/* A1: later sends once drained */
};

struct k_send {
	int64_t t_post, t_done;	/* µs */
	int32_t status;		/* -1 until completed */
	uint8_t kind;		/* K_SEND_* */
};

struct k_shared {
	struct k_trial trial;
	_Atomic int a1_stop;
	uint32_t a1_next;		/* A1's next seq, valid while it is idle */
	int64_t t_kill;			/* µs */
	struct k_send snd[MAX_SEQ];	/* A1 */
	/* B1 of the current generation and its keeper. */
	pid_t keeper;
	uint32_t b1_posted;
	uint8_t b1_buf_of[B1_MAX_POSTS];	/* buffer of each posted receive */
	uint32_t k_unpolled;		/* completions B1 never polled */
	/* All generations, by message: polled and checked by a B1; receive
	 * completions daemon B wrote (from the keepers). */
	uint8_t polled[MAX_SEQ];
	uint8_t completed[MAX_SEQ];
	uint32_t completed_gen[MAX_SEQ];
	/* Ping-pong. */
	_Atomic int pp_stop;
	uint64_t pp_count;
	int64_t pp_worst_us, pp_sum_us;
};

/* ---- A1: the sender ---- */

struct a1_state {
	struct cl c;
	sl_addr_t dst;
	uint8_t *buf[SEND_WIN];
	uint32_t seq_of[SEND_WIN];
	bool busy[SEND_WIN];
	uint32_t next;
	uint32_t out;
	uint32_t first;
};

/* Take A1's completions: each send once, with its own fields. */
static void a1_reap(struct a1_state *s, struct k_shared *sh, int wait_ms)
{
	struct sl_cqe cqes[16];
	int n = sl_poll(s->c.q, cqes, 16), i, rc;

	CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
	if (n == 0) {
		rc = sl_wait(s->c.q, wait_ms);
		CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
		n = sl_poll(s->c.q, cqes, 16);
		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		const struct sl_cqe *e = &cqes[i];
		uint32_t k = CTX_INDEX(e->user_ctx);
		struct k_send *m = &sh->snd[k < MAX_SEQ ? k : 0];
		unsigned w;

		CL_REQUIRE(CTX_KIND(e->user_ctx) == CTX_SEND && k >= s->first && k < s->next &&
			   m->kind == K_SEND_TRIAL && m->status == -1, CL_E_CTX,
			   "send ctx %#llx (%s): unknown or completed before",
			   (unsigned long long)e->user_ctx, sl_strerror(e->status));
		CL_REQUIRE(e->opcode == SL_OP_SEND && e->len == BIG_LEN && e->tag == TAG_BIG &&
			   addr_eq(e->peer, s->dst), CL_E_META,
			   "send %u: opcode %u len %llu tag %llu peer %08x:%u", k, e->opcode,
			   (unsigned long long)e->len, (unsigned long long)e->tag, e->peer.node,
			   e->peer.port);
		m->t_done = now_us();
		m->status = e->status;
		for (w = 0; w < SEND_WIN; w++)
			if (s->busy[w] && s->seq_of[w] == k)
				break;
		CL_REQUIRE(w < SEND_WIN, CL_E_CTX, "send %u: no buffer", k);
		s->busy[w] = false;
		s->out--;
	}
}

/* Sends to B1's port after the drain: one at a time, each must come back
 * (the test process checks status and time). */
static void a1_probes(struct a1_state *s, struct k_shared *sh)
{
	unsigned i;

	for (i = 0; i < N_PROBES; i++) {
		uint32_t k = s->next++, len = i % 2 ? PROBE_SMALL : BIG_LEN;
		struct k_send *m = &sh->snd[k];
		struct sl_cqe e;
		int rc;

		msg_fill(s->buf[0], len, SRC_A1, k, TAG_BIG);
		*m = (struct k_send){ .t_post = now_us(), .status = -1, .kind = K_SEND_PROBE };
		rc = sl_send(s->c.q, s->dst, TAG_BIG, s->buf[0], len, CTX_SEND | k);
		CL_REQUIRE(rc == 0, CL_E_POST, "probe %u: sl_send: %s", k, strerror(-rc));
		rc = h_wait_cqe(s->c.q, &e, 2000);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "probe %u to the dead port: no completion in 2 s "
			   "(rc %d)", k, rc);
		m->t_done = now_us();
		CL_REQUIRE(e.user_ctx == (CTX_SEND | k) && e.opcode == SL_OP_SEND && e.len == len &&
			   e.tag == TAG_BIG && addr_eq(e.peer, s->dst), CL_E_META,
			   "probe %u: ctx %#llx opcode %u len %llu", k,
			   (unsigned long long)e.user_ctx, e.opcode, (unsigned long long)e.len);
		m->status = e.status;
	}
}

static void a1_trial(struct a1_state *s, struct k_shared *sh, int evt_fd)
{
	const struct k_trial *t = &sh->trial;
	uint32_t posted = 0;
	int64_t t0 = h_now_ms(), t_stop = 0;
	bool started = false;

	s->first = s->next;
	CL_REQUIRE(t->first_seq == s->first, CL_E_SYNC, "trial starts at %u, A1 at %u",
		   t->first_seq, s->first);
	for (;;) {
		bool stop = atomic_load(&sh->a1_stop);

		while (!stop && posted < t->limit && s->out < SEND_WIN) {
			uint32_t k = s->next;
			unsigned w;
			int rc;

			CL_REQUIRE(k + N_PROBES < MAX_SEQ, CL_E_SETUP, "out of message numbers");
			for (w = 0; s->busy[w]; w++)
				;
			msg_fill(s->buf[w], BIG_LEN, SRC_A1, k, TAG_BIG);
			sh->snd[k] = (struct k_send){ .t_post = now_us(), .status = -1,
						      .kind = K_SEND_TRIAL };
			rc = sl_send(s->c.q, s->dst, TAG_BIG, s->buf[w], BIG_LEN, CTX_SEND | k);
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_send %u: %s", k, strerror(-rc));
			s->busy[w] = true;
			s->seq_of[w] = k;
			s->next++;
			s->out++;
			posted++;
			stop = atomic_load(&sh->a1_stop);
		}
		if (!started) {
			ev_send(evt_fd, 'S', "A1 started");
			started = true;
		}
		if (stop) {
			if (!t_stop)
				t_stop = h_now_ms();
			if (s->out == 0)
				break;
			CL_REQUIRE(h_now_ms() - t_stop < 5000, CL_E_TIMEOUT, "%u sends to B1 (gen %u) "
				   "still pending 5 s after its death was noticed", s->out, t->gen);
		} else {
			CL_REQUIRE(h_now_ms() - t0 < 30000, CL_E_TIMEOUT, "trial %u never stopped",
				   t->gen);
		}
		a1_reap(s, sh, 1);
	}
	if (t->probes)
		a1_probes(s, sh);
	sh->a1_next = s->next;
}

static void a1_run(const struct h_daemon *nodes, struct k_shared *sh, struct barrier *bar,
		   int cmd_fd, int evt_fd)
{
	static struct a1_state s;
	unsigned w;

	cl_name = "A1";
	s.dst = (sl_addr_t){ nodes[1].node, PORT_B1 };
	cl_open(&s.c, &nodes[0], PORT_A1, 64);
	for (w = 0; w < SEND_WIN; w++)
		s.buf[w] = cl_alloc(&s.c, BIG_LEN);
	barrier_arrive(bar);
	for (;;) {
		uint8_t cmd = 0;
		int rc = h_read_byte(cmd_fd, &cmd, 60000);

		CL_REQUIRE(rc == 1, CL_E_SYNC, "A1 command: rc %d", rc);
		if (cmd == 'Q')
			break;
		CL_REQUIRE(cmd == 'T', CL_E_SYNC, "A1 command %#x", cmd);
		a1_trial(&s, sh, evt_fd);
		ev_send(evt_fd, 'D', "A1 trial done");
	}
	cl_expect_quiet(&s.c, 20);
	cl_close(&s.c);
	_exit(CL_OK);
}

/* ---- B1 and its keeper ---- */

/* The message B1's receive @p must hold. */
static uint32_t t_seq_of(const struct k_shared *sh, uint32_t p)
{
	return sh->trial.first_seq + p;
}

/* B1's receives: buffers in its arena, the free ones, and where each
 * posted receive's buffer is (in the shared page, for the keeper). */
struct b1_state {
	struct cl c;
	sl_addr_t a1;
	uint8_t *buf[B1_MAX_BUFS];
	uint8_t free_buf[B1_MAX_BUFS];
	uint32_t n_free;
	uint32_t cap;		/* receives this B1 may post */
};

/*
 * Receive completion @e of B1's receive @p, polled by B1 or found in its
 * CQ by the keeper (@who): SL_OK from A1, and unless @meta_only (the
 * buffer has been reused since), the trial's message p (one source, one
 * tag: receives match in post order); else the client ends naming what
 * the buffer holds.  Returns the message's number.
 */
static uint32_t b1_check_recv(const struct b1_state *s, const struct k_shared *sh,
			      const struct sl_cqe *e, bool meta_only, const char *who)
{
	const struct k_trial *t = &sh->trial;
	uint32_t p = CTX_INDEX(e->user_ctx), seq = t_seq_of(sh, p);
	const uint8_t *b;
	struct msg_hdr mh;

	CL_REQUIRE(CTX_KIND(e->user_ctx) == CTX_RECV && p < sh->b1_posted, CL_E_CTX,
		   "%s: completion ctx %#llx (%s) is not one of this B1's %u receives", who,
		   (unsigned long long)e->user_ctx, sl_strerror(e->status), sh->b1_posted);
	CL_REQUIRE(e->status == SL_OK, CL_E_STATUS, "%s: receive %u: %s", who, p,
		   sl_strerror(e->status));
	CL_REQUIRE(e->opcode == SL_OP_RECV && e->len == BIG_LEN && e->tag == TAG_BIG &&
		   addr_eq(e->peer, s->a1) && seq < MAX_SEQ, CL_E_META,
		   "%s: receive %u: opcode %u len %llu tag %llu peer %08x:%u", who, p, e->opcode,
		   (unsigned long long)e->len, (unsigned long long)e->tag, e->peer.node,
		   e->peer.port);
	b = s->buf[sh->b1_buf_of[p]];
	if (meta_only || msg_check(b, BIG_LEN, SRC_A1, seq, TAG_BIG))
		return seq;
	if (msg_decode(b, BIG_LEN, &mh))
		CL_DIE(CL_E_ORDER, "%s: gen %u receive %u holds message %u, not %u%s", who, t->gen,
		       p, mh.seq, seq, mh.seq < t->first_seq ? " (stale: sent before this B1 was "
		       "ready)" : "");
	CL_DIE(CL_E_DATA, "%s: gen %u receive %u (message %u): payload differs", who, t->gen, p,
	       seq);
}

/* Post receives into every free buffer, up to the cap. */
static void b1_post_all(struct b1_state *s, struct k_shared *sh)
{
	while (s->n_free > 0 && sh->b1_posted < s->cap) {
		uint32_t p = sh->b1_posted;
		uint8_t b = s->free_buf[--s->n_free];
		int rc;

		/* Recorded first: the keeper must know every posted receive. */
		sh->b1_buf_of[p] = b;
		sh->b1_posted++;
		rc = sl_recv(s->c.q, s->a1, TAG_BIG, ~0ull, s->buf[b], BIG_LEN, CTX_RECV | p);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv %u: %s", p, strerror(-rc));
	}
}

/* The start of this process's (only) queue segment. */
static const uint8_t *find_segment(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long start = 0;

	CL_REQUIRE(f, CL_E_SETUP, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:sluice-queue") && sscanf(line, "%lx-", &start) == 1)
			break;
	fclose(f);
	CL_REQUIRE(start, CL_E_SETUP, "no sluice-queue segment mapped");
	CL_REQUIRE(((const struct sl_shm_hdr *)start)->magic == SL_SHM_MAGIC, CL_E_SETUP,
		   "segment magic");
	return (const uint8_t *)start;
}

/*
 * After B1's death and the queue's teardown: every receive completion
 * daemon B wrote into B1's CQ (entries 0 .. tail-1; the ring never
 * wrapped), polled or not.  Those B1 did not record as polled are checked
 * here, in buffers B1 never reposted (it reposts only after recording).
 */
static void keeper_inspect(const struct b1_state *s, const uint8_t *base, struct k_shared *sh)
{
	const struct sl_shm_hdr *h = (const void *)base;
	const uint32_t *tailp = (const void *)(base + h->cq_off.tail);
	const uint32_t *headp = (const void *)(base + h->cq_off.head);
	const struct sl_cqe *ring = (const void *)(base + h->cq_off.entries);
	uint32_t tail = __atomic_load_n(tailp, __ATOMIC_ACQUIRE);
	uint32_t head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
	static uint8_t seen[B1_MAX_POSTS];
	uint32_t i;

	CL_REQUIRE(h->cq_off.ring_entries > B1_MAX_POSTS && tail <= h->cq_off.ring_entries &&
		   head <= tail, CL_E_POLL, "CQ ring: %u entries, head %u, tail %u",
		   h->cq_off.ring_entries, head, tail);
	for (i = 0; i < tail; i++) {
		const struct sl_cqe *e = &ring[i];
		uint32_t p = CTX_INDEX(e->user_ctx), seq;

		CL_REQUIRE(p >= sh->b1_posted || !seen[p], CL_E_CTX, "receive %u completed twice "
			   "(CQ entry %u)", p, i);
		/* B1 checked what it recorded, and may have reused the buffer. */
		seq = t_seq_of(sh, p);
		seq = b1_check_recv(s, sh, e, seq < MAX_SEQ && sh->polled[seq],
				    "in the dead B1's CQ");
		seen[p] = 1;
		if (i >= head)
			sh->k_unpolled++;
		sh->completed[seq]++;
		sh->completed_gen[seq] = sh->trial.gen;
	}
}

/* The keeper: holds B1's segment past B1's death, nothing else. */
static void keeper_run(const struct b1_state *s, const uint8_t *base, struct k_shared *sh,
		       int cmd_fd)
{
	uint8_t x = 0;
	int rc;

	cl_name = "B1-keeper";
	/* The daemon must see B1's death: drop the control socket, the
	 * doorbells and every pipe but ours. */
	if ((cmd_fd > 3 && close_range(3, (unsigned)cmd_fd - 1, 0) < 0) ||
	    close_range((unsigned)cmd_fd + 1, ~0u, 0) < 0)
		_exit(CL_E_SETUP);
	rc = h_read_byte(cmd_fd, &x, 60000);
	if (rc != 1 || x != 'I')
		_exit(CL_E_SYNC);	/* the test went away */
	keeper_inspect(s, base, sh);
	_exit(CL_OK);
}

static void b1_run(const struct h_daemon *nodes, struct k_shared *sh, int evt_fd, int cmd_fd,
		   int kcmd_rd, int kcmd_wr)
{
	const struct k_trial *t = &sh->trial;
	static struct b1_state s;
	static uint8_t seen[B1_MAX_POSTS];
	uint32_t received = 0, i;
	const uint8_t *base;
	int64_t t0;
	pid_t keeper;

	cl_name = "B1";
	s.a1 = (sl_addr_t){ nodes[0].node, PORT_A1 };
	s.cap = t->mode == K_FINAL ? t->limit : B1_MAX_POSTS;
	cl_open(&s.c, &nodes[1], PORT_B1, B1_DEPTH);
	for (i = 0; i < t->nbuf; i++) {
		s.buf[i] = cl_alloc(&s.c, BIG_LEN);
		s.free_buf[s.n_free++] = (uint8_t)i;
	}
	base = find_segment();
	keeper = fork();
	CL_REQUIRE(keeper >= 0, CL_E_SETUP, "fork: %s", strerror(errno));
	if (keeper == 0)
		keeper_run(&s, base, sh, kcmd_rd);
	sh->keeper = keeper;
	cl_close_fd(kcmd_rd);
	cl_close_fd(kcmd_wr);

	if (t->mode != K_AFTER_POST)
		b1_post_all(&s, sh);
	ev_send(evt_fd, 'R', "B1 ready");
	if (t->mode == K_AFTER_POST) {
		ev_await(cmd_fd, 'P', 10000, "go for the receives");
		b1_post_all(&s, sh);
		ev_send(evt_fd, 'P', "B1 posted");
	}
	t0 = h_now_ms();
	while (t->mode != K_FINAL || received < t->limit) {
		struct sl_cqe cqes[16];
		int n = sl_poll(s.c.q, cqes, 16), k, rc;

		CL_REQUIRE(n >= 0, CL_E_POLL, "sl_poll: %s", strerror(-n));
		if (n == 0) {
			CL_REQUIRE(h_now_ms() - t0 < 30000, CL_E_TIMEOUT, "gen %u: never killed, "
				   "%u received", t->gen, received);
			rc = sl_wait(s.c.q, 10);
			CL_REQUIRE(rc >= 0 || rc == -EINTR, CL_E_POLL, "sl_wait: %s", strerror(-rc));
			continue;
		}
		for (k = 0; k < n; k++) {
			uint32_t p = CTX_INDEX(cqes[k].user_ctx), seq;

			CL_REQUIRE(p >= sh->b1_posted || !seen[p], CL_E_CTX, "receive %u completed "
				   "twice", p);
			seq = b1_check_recv(&s, sh, &cqes[k], false, "B1");
			seen[p] = 1;
			sh->polled[seq] = 1;	/* before anything else */
			received++;
			if (received == t->signal_k)
				ev_send(evt_fd, 'K', "B1 k received");
			s.free_buf[s.n_free++] = sh->b1_buf_of[p];
		}
		b1_post_all(&s, sh);
	}
	cl_expect_quiet(&s.c, 50);
	cl_close(&s.c);
	_exit(CL_OK);
}

/* ---- A2 and B2: ping-pong ---- */

static void a2_run(const struct h_daemon *nodes, struct k_shared *sh, struct barrier *bar)
{
	sl_addr_t b2 = { nodes[1].node, PORT_B2 };
	uint8_t *sbuf, *rbuf;
	struct cl c;
	uint32_t seq;
	int rc;

	cl_name = "A2";
	cl_open(&c, &nodes[0], PORT_A2, 16);
	sbuf = cl_alloc(&c, PP_LEN);
	rbuf = cl_alloc(&c, PP_LEN);
	barrier_arrive(bar);
	for (seq = 0; !atomic_load(&sh->pp_stop); seq++) {
		bool sent = false, echoed = false;
		int64_t t0, rtt = 0;

		rc = sl_recv(c.q, b2, PP_TAG_ECHO, ~0ull, rbuf, PP_LEN, CTX_RECV | seq);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
		msg_fill(sbuf, PP_LEN, SRC_A2, seq, PP_TAG_PING);
		t0 = now_us();
		rc = sl_send(c.q, b2, PP_TAG_PING, sbuf, PP_LEN, CTX_SEND | seq);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
		while (!sent || !echoed) {
			struct sl_cqe e;

			rc = h_wait_cqe(c.q, &e, 10000);
			CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "ping %u: no completion in 10 s (rc %d)", seq,
				   rc);
			CL_REQUIRE(e.status == SL_OK, CL_E_STATUS, "ping %u ctx %#llx: %s", seq,
				   (unsigned long long)e.user_ctx, sl_strerror(e.status));
			if (e.user_ctx == (CTX_SEND | seq) && !sent) {
				sent = true;
				continue;
			}
			CL_REQUIRE(e.user_ctx == (CTX_RECV | seq) && !echoed, CL_E_CTX,
				   "ping %u: ctx %#llx", seq, (unsigned long long)e.user_ctx);
			rtt = now_us() - t0;
			CL_REQUIRE(e.len == PP_LEN && e.tag == PP_TAG_ECHO && addr_eq(e.peer, b2),
				   CL_E_META, "echo %u: len %llu tag %llu", seq,
				   (unsigned long long)e.len, (unsigned long long)e.tag);
			CL_REQUIRE(msg_check(rbuf, PP_LEN, SRC_B2, seq, PP_TAG_ECHO), CL_E_DATA,
				   "echo %u: payload differs", seq);
			echoed = true;
		}
		sh->pp_count++;
		sh->pp_sum_us += rtt;
		if (rtt > sh->pp_worst_us)
			sh->pp_worst_us = rtt;
		h_sleep_ms(1);
	}
	rc = sl_send(c.q, b2, PP_TAG_BYE, NULL, 0, CTX_SEND | 0xffffff);
	CL_REQUIRE(rc == 0, CL_E_POST, "sl_send bye: %s", strerror(-rc));
	{
		struct sl_cqe e;

		rc = h_wait_cqe(c.q, &e, 10000);
		CL_REQUIRE(rc == 1 && e.status == SL_OK && e.user_ctx == (CTX_SEND | 0xffffff),
			   CL_E_STATUS, "bye: rc %d %s", rc, sl_strerror(e.status));
	}
	cl_expect_quiet(&c, 20);
	cl_close(&c);
	_exit(CL_OK);
}

static void b2_run(const struct h_daemon *nodes, struct barrier *bar)
{
	sl_addr_t a2 = { nodes[0].node, PORT_A2 };
	uint8_t *sbuf[4], *rbuf;
	bool busy[4] = { false };
	struct cl c;
	uint32_t n = 0, i;
	int rc;

	cl_name = "B2";
	cl_open(&c, &nodes[1], PORT_B2, 16);
	for (i = 0; i < 4; i++)
		sbuf[i] = cl_alloc(&c, PP_LEN);
	rbuf = cl_alloc(&c, PP_LEN);
	/* Every ping meets a posted receive: B2 never holds unexpected ones. */
	rc = sl_recv(c.q, a2, 0, 0, rbuf, PP_LEN, CTX_RECV | 0);
	CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	barrier_arrive(bar);
	for (;;) {
		struct sl_cqe e;
		uint32_t w;

		rc = h_wait_cqe(c.q, &e, CL_STALL_MS);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "no ping for %d ms (rc %d)", CL_STALL_MS, rc);
		CL_REQUIRE(e.status == SL_OK, CL_E_STATUS, "ctx %#llx: %s",
			   (unsigned long long)e.user_ctx, sl_strerror(e.status));
		if (CTX_KIND(e.user_ctx) == CTX_SEND) {
			w = CTX_INDEX(e.user_ctx) % 4;
			CL_REQUIRE(busy[w], CL_E_CTX, "echo ctx %#llx", (unsigned long long)e.user_ctx);
			busy[w] = false;
			continue;
		}
		CL_REQUIRE(e.user_ctx == (CTX_RECV | n) && addr_eq(e.peer, a2), CL_E_CTX,
			   "ping ctx %#llx from %08x:%u", (unsigned long long)e.user_ctx, e.peer.node,
			   e.peer.port);
		if (e.tag == PP_TAG_BYE)
			break;
		CL_REQUIRE(e.tag == PP_TAG_PING && e.len == PP_LEN &&
			   msg_check(rbuf, PP_LEN, SRC_A2, n, PP_TAG_PING), CL_E_DATA,
			   "ping %u: tag %llu len %llu or payload differs", n,
			   (unsigned long long)e.tag, (unsigned long long)e.len);
		rc = sl_recv(c.q, a2, 0, 0, rbuf, PP_LEN, CTX_RECV | (n + 1));
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
		w = n % 4;
		while (busy[w]) {
			rc = h_wait_cqe(c.q, &e, 10000);
			CL_REQUIRE(rc == 1 && e.status == SL_OK && CTX_KIND(e.user_ctx) == CTX_SEND,
				   CL_E_STATUS, "echo completion: rc %d ctx %#llx %s", rc,
				   (unsigned long long)e.user_ctx, sl_strerror(e.status));
			busy[CTX_INDEX(e.user_ctx) % 4] = false;
		}
		msg_fill(sbuf[w], PP_LEN, SRC_B2, n, PP_TAG_ECHO);
		rc = sl_send(c.q, a2, PP_TAG_ECHO, sbuf[w], PP_LEN, CTX_SEND | n);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
		busy[w] = true;
		n++;
	}
	for (i = 0; i < 4; i++) {
		while (busy[i]) {
			struct sl_cqe e;

			rc = h_wait_cqe(c.q, &e, 10000);
			CL_REQUIRE(rc == 1 && e.status == SL_OK && CTX_KIND(e.user_ctx) == CTX_SEND,
				   CL_E_STATUS, "echo completion: rc %d %s", rc, sl_strerror(e.status));
			busy[CTX_INDEX(e.user_ctx) % 4] = false;
		}
	}
	cl_expect_quiet(&c, 20);
	cl_close(&c);
	_exit(CL_OK);
}

/* ---- the test process ---- */

enum { P_A1, P_A2, P_B2, P_B1, P_N };
static const char *const k_names[P_N] = { "A1", "A2", "B2", "B1" };

/* Per-trial figures. */
struct k_figures {
	uint32_t trials[K_FINAL + 1];
	uint32_t m_sent[K_FINAL + 1], m_ok[K_FINAL + 1], m_noep[K_FINAL + 1];
	uint32_t m_late[K_FINAL + 1], m_out[K_FINAL + 1];
	uint32_t sent, ok, noep, ok_polled, ok_unpolled, cq_unpolled;
	uint32_t outstanding, max_outstanding, probes;
	int64_t max_drain_us, max_probe_us, max_notice_ms;
	/* Contract violations, counted over all trials, reported at the end. */
	uint32_t late_ok;	/* SL_OK, but no receive of B1 completed with it */
	uint32_t lost_ok;	/* a receive completed with it, the send failed */
	char first_violation[512];
};

static void note_violation(struct k_figures *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note_violation(struct k_figures *f, const char *fmt, ...)
{
	size_t len = strlen(f->first_violation);
	va_list ap;

	if (len > 300)
		return;
	va_start(ap, fmt);
	vsnprintf(f->first_violation + len, sizeof(f->first_violation) - len, fmt, ap);
	va_end(ap);
}

/* The trial's messages, against what every B1 and keeper saw. */
static void k_check_trial(const struct k_shared *sh, const struct k_trial *t,
			  struct k_figures *f, uint32_t end)
{
	uint32_t k, outstanding = 0, trial_ok = 0;
	int64_t drain = 0;

	for (k = t->first_seq; k < end; k++) {
		const struct k_send *m = &sh->snd[k];

		H_ASSERT(m->status >= 0, "gen %u message %u: never completed", t->gen, k);
		H_ASSERT(sh->completed[k] <= 1, "message %u: in %u receive completions (last in gen "
			 "%u)", k, sh->completed[k], sh->completed_gen[k]);
		H_ASSERT(!sh->polled[k] || sh->completed[k], "message %u polled by B1 gen %u but "
			 "not in its CQ", k, t->gen);
		if (m->kind == K_SEND_PROBE) {
			int64_t us = m->t_done - m->t_post;

			H_ASSERT(m->status == SL_ERR_NO_ENDPOINT, "gen %u: later send %u to the dead "
				 "B1's port: %s, want %s", t->gen, k, sl_strerror(m->status),
				 sl_strerror(SL_ERR_NO_ENDPOINT));
			H_ASSERT(us <= PROBE_MS * 1000, "gen %u: later send %u took %lld us to fail "
				 "(bound %d ms)", t->gen, k, (long long)us, PROBE_MS);
			H_EQ(sh->completed[k], 0);
			if (us > f->max_probe_us)
				f->max_probe_us = us;
			f->probes++;
			continue;
		}
		H_EQ(m->kind, K_SEND_TRIAL);
		/* The documented statuses for a send whose receiver died:
		 * accepted (SL_OK) or "destination gone" (SL_ERR_NO_ENDPOINT). */
		H_ASSERT(m->status == SL_OK || m->status == SL_ERR_NO_ENDPOINT,
			 "gen %u (%s) message %u: %s", t->gen, k_mode_name[t->mode], k,
			 sl_strerror(m->status));
		f->sent++;
		f->m_sent[t->mode]++;
		if (t->mode != K_FINAL && m->t_done > sh->t_kill) {
			int64_t from = m->t_post > sh->t_kill ? m->t_post : sh->t_kill;

			if (m->t_post < sh->t_kill)
				outstanding++;
			if (m->t_done - from > drain)
				drain = m->t_done - from;
		}
		/* Completed (and polled by A1) while B1 was alive: accepted. */
		H_ASSERT(m->t_done < sh->t_kill ? m->status == SL_OK : true,
			 "gen %u (%s) message %u: %s %lld us before the kill", t->gen,
			 k_mode_name[t->mode], k, sl_strerror(m->status),
			 (long long)(sh->t_kill - m->t_done));
		if (m->status == SL_OK) {
			f->ok++;
			f->m_ok[t->mode]++;
			trial_ok++;
			if (!sh->completed[k]) {
				f->late_ok++;
				f->m_late[t->mode]++;
				note_violation(f, "%sgen %u (%s): send %u completed SL_OK %lld us after "
					       "the kill but no receive of B1 completed with it",
					       f->first_violation[0] ? "; " : "", t->gen,
					       k_mode_name[t->mode], k,
					       (long long)(m->t_done - sh->t_kill));
			} else if (sh->polled[k]) {
				f->ok_polled++;
			} else {
				f->ok_unpolled++;
			}
		} else {
			f->noep++;
			f->m_noep[t->mode]++;
			if (sh->completed[k]) {
				f->lost_ok++;
				note_violation(f, "%sgen %u (%s): message %u was received but its send "
					       "completed %s", f->first_violation[0] ? "; " : "",
					       t->gen, k_mode_name[t->mode], k,
					       sl_strerror(m->status));
			}
		}
	}
	if (t->mode == K_FINAL) {
		H_EQ(trial_ok, FINAL_MSGS);
		H_EQ(end - t->first_seq, FINAL_MSGS);
		for (k = t->first_seq; k < end; k++)
			H_ASSERT(sh->polled[k], "final B1 did not get message %u", k);
		return;
	}
	H_ASSERT(drain <= KILL_DRAIN_MS * 1000, "gen %u (%s): a send completed %lld us after the "
		 "kill (bound %d ms)", t->gen, k_mode_name[t->mode], (long long)drain,
		 KILL_DRAIN_MS);
	f->outstanding += outstanding;
	f->m_out[t->mode] += outstanding;
	if (outstanding > f->max_outstanding)
		f->max_outstanding = outstanding;
	if (drain > f->max_drain_us)
		f->max_drain_us = drain;
	f->cq_unpolled += sh->k_unpolled;
}

/* The plan of trial @g (the last one: the B1 that is not killed). */
static void k_plan(struct rng *r, uint32_t g, uint32_t first_seq, struct k_trial *t)
{
	static const uint32_t nbufs[] = { 1, 2, 4, 8 };

	memset(t, 0, sizeof(*t));
	t->gen = g;
	t->first_seq = first_seq;
	t->nbuf = nbufs[rng_below(r, 4)];
	t->limit = UINT32_MAX;
	t->probes = true;
	t->mode = g == N_TRIALS ? K_FINAL : g % K_KILL_MODES;
	switch (t->mode) {
	case K_TIMED:
		t->delay_us = rng_below(r, 40000);
		break;
	case K_STOPPED:
		t->delay_us = rng_below(r, 30000);
		break;
	case K_AFTER_K:
		t->signal_k = 1 + rng_below(r, 12);
		break;
	case K_IDLE:
		t->limit = rng_below(r, 5);
		t->signal_k = t->limit;
		break;
	case K_AFTER_POST:
		t->nbuf = 4 + 4 * rng_below(r, 2);	/* takes all the waiting RTSs */
		break;
	case K_FINAL:
		t->nbuf = 4;
		t->limit = FINAL_MSGS;
		t->probes = false;
		break;
	}
}

START_TEST(rndv_receiver_killed)
{
	static const char *const names[] = { "A", "B" };
	static struct h_stats sa, sb;
	static struct k_figures fig;
	struct h_daemon nodes[2];
	struct k_shared *sh;
	struct barrier bar;
	struct chan a1_cmd, a1_evt;
	struct rng r = { 20110122 };	/* the MPICH ticket's date */
	pid_t pids[P_N] = { 0 };
	uint64_t q_base, regs, deregs, regions, rx_done, tx_done, completed_total = 0;
	long rss_pre, rss_post, hwm;
	int fds_pre, maps_pre;
	int64_t t_start = h_now_ms();
	uint32_t g, i;
	int st;

	memset(&fig, 0, sizeof(fig));
	H_ASSERT(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "PR_SET_CHILD_SUBREAPER: %s",
		 strerror(errno));
	h_cluster_start(nodes, names, 2);
	sh = shared_alloc(sizeof(*sh));
	barrier_init(&bar);
	chan_init(&a1_cmd);
	chan_init(&a1_evt);
	for (i = 0; i < P_B1; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			if (i == P_A1)
				a1_run(nodes, sh, &bar, a1_cmd.fd[0], a1_evt.fd[1]);
			else if (i == P_A2)
				a2_run(nodes, sh, &bar);
			else
				b2_run(nodes, &bar);
		}
	}
	barrier_release(&bar, pids, k_names, P_B1);
	/* Before the trials: B2's queue open, B2's receive posted. */
	h_sleep_ms(50);
	h_daemon_stats(&nodes[1], &sb);
	q_base = h_stats_u64(&sb, "daemon.queues");
	H_EQ(q_base, 1);
	H_EQ(h_stats_u64(&sb, "daemon.unexpected"), 0);
	h_daemon_settle(&nodes[1], &fds_pre, &maps_pre);
	rss_pre = h_proc_rss_kb(nodes[1].pid);
	H_ASSERT(rss_pre > 0, "VmRSS of B: %ld", rss_pre);

	for (g = 0; g <= N_TRIALS; g++) {
		struct k_trial *t = &sh->trial;
		struct chan b_evt, b_cmd, k_cmd;
		int64_t notice_ms;
		pid_t keeper;

		k_plan(&r, g, sh->a1_next, t);
		fig.trials[t->mode]++;
		atomic_store(&sh->a1_stop, 0);
		sh->t_kill = INT64_MAX;
		sh->b1_posted = 0;
		sh->keeper = 0;
		sh->k_unpolled = 0;
		chan_init(&b_evt);
		chan_init(&b_cmd);
		chan_init(&k_cmd);
		pids[P_B1] = h_fork();
		if (pids[P_B1] == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			b1_run(nodes, sh, b_evt.fd[1], b_cmd.fd[0], k_cmd.fd[0], k_cmd.fd[1]);
		}
		t_expect(b_evt.fd[0], 'R', 10000, pids, k_names, P_N, "B1 ready");
		keeper = sh->keeper;
		H_ASSERT(keeper > 0, "no keeper pid");
		t_send(a1_cmd.fd[1], 'T');
		t_expect(a1_evt.fd[0], 'S', 10000, pids, k_names, P_N, "A1 started");

		if (t->mode == K_FINAL) {
			st = t_reap(pids[P_B1], 20000);
			H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "last B1: %s",
				 client_status_str(pids[P_B1], st));
			pids[P_B1] = 0;
			(void)wait_stat(&nodes[1], "daemon.queues", q_base, 2000);
			notice_ms = 0;
			atomic_store(&sh->a1_stop, 1);
			t_expect(a1_evt.fd[0], 'D', 10000, pids, k_names, P_N, "A1 trial done");
		} else {
			switch (t->mode) {
			case K_START:
				break;
			case K_TIMED:
				sleep_us(t->delay_us);
				break;
			case K_STOPPED:
				sleep_us(t->delay_us);
				H_ASSERT(kill(pids[P_B1], SIGSTOP) == 0, "SIGSTOP: %s", strerror(errno));
				h_sleep_ms(20);
				break;
			case K_AFTER_K:
				t_expect(b_evt.fd[0], 'K', 10000, pids, k_names, P_N, "B1 k received");
				break;
			case K_IDLE:
				if (t->signal_k)
					t_expect(b_evt.fd[0], 'K', 10000, pids, k_names, P_N,
						 "B1 k received");
				h_sleep_ms(5);	/* B1 waits for an RTS that never comes */
				break;
			case K_AFTER_POST:
				/* A1's RTSs wait unexpected (headers only) ... */
				(void)wait_stat(&nodes[1], "daemon.unexpected", SEND_WIN, 5000);
				/* ... B1 posts: they match, registrations, RTRs. */
				t_send(b_cmd.fd[1], 'P');
				t_expect(b_evt.fd[0], 'P', 10000, pids, k_names, P_N, "B1 posted");
				break;
			}
			sh->t_kill = now_us();
			H_ASSERT(kill(pids[P_B1], SIGKILL) == 0, "SIGKILL: %s", strerror(errno));
			st = t_reap(pids[P_B1], 5000);
			pids[P_B1] = 0;
			H_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "B1 gen %u (%s): %s", g,
				 k_mode_name[t->mode], wait_status_str(st));
			/* Daemon B notices and tears the queue down. */
			(void)wait_stat(&nodes[1], "daemon.queues", q_base, 2000);
			notice_ms = (now_us() - sh->t_kill) / 1000;
			atomic_store(&sh->a1_stop, 1);
			t_expect(a1_evt.fd[0], 'D', 10000, pids, k_names, P_N, "A1 trial done");
		}
		/* The daemon writes nothing more for the dead queue: read it. */
		t_send(k_cmd.fd[1], 'I');
		st = t_reap(keeper, 5000);
		H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "keeper of B1 gen %u: %s", g,
			 client_status_str(keeper, st));
		k_check_trial(sh, t, &fig, sh->a1_next);
		if (t->mode != K_FINAL) {
			H_ASSERT(notice_ms <= NOTICE_MS, "gen %u: daemon B took %lld ms to drop the "
				 "dead B1's queue", g, (long long)notice_ms);
			if (notice_ms > fig.max_notice_ms)
				fig.max_notice_ms = notice_ms;
		}
		/* Nothing of the dead B1 is left under way on either side. */
		(void)wait_stat(&nodes[0], "link.B.rndv_tx", 0, 2000);
		(void)wait_stat(&nodes[1], "link.A.rndv_rx", 0, 2000);
		h_daemon_stats(&nodes[1], &sb);
		H_EQ(h_stats_u64(&sb, "daemon.unexpected"), 0);
		H_EQ(h_stats_u64(&sb, "daemon.unexpected_bytes"), 0);
		H_EQ(h_stats_u64(&sb, "daemon.queues"), q_base);
		/* The dead B1's segment unmapped, its memfd and doorbells closed. */
		(void)wait_baseline(&nodes[1], fds_pre, maps_pre, 2000);
		chan_close(&b_evt);
		chan_close(&b_cmd);
		chan_close(&k_cmd);
	}

	/* After the trials, B2 still open as before them. */
	h_sleep_ms(50);
	rss_post = h_proc_rss_kb(nodes[1].pid);
	hwm = h_proc_hwm_kb(nodes[1].pid);
	H_ASSERT(rss_post > 0 && hwm > 0, "VmRSS %ld VmHWM %ld", rss_post, hwm);
	/* Every registration accounted for, A1 still open. */
	for (i = 0; i < 2; i++) {
		h_daemon_stats(&nodes[i], &sa);
		regs = h_stats_u64(&sa, "rcache.regs");
		deregs = h_stats_u64(&sa, "rcache.deregs");
		regions = h_stats_u64(&sa, "rcache.regions");
		H_ASSERT(regs == deregs + regions, "daemon %s: rcache regs %llu != deregs %llu + "
			 "regions %llu", nodes[i].name, (unsigned long long)regs,
			 (unsigned long long)deregs, (unsigned long long)regions);
	}

	atomic_store(&sh->pp_stop, 1);
	t_send(a1_cmd.fd[1], 'Q');
	expect_clients_ok(pids, k_names, P_B1, 20000);
	/* Every client gone.  Daemon A: nothing toward B queued or under
	 * way, every registration accounted for (and none left). */
	(void)wait_stat(&nodes[0], "rcache.regions", 0, 2000);
	(void)wait_stat(&nodes[1], "rcache.regions", 0, 2000);
	h_daemon_stats(&nodes[0], &sa);
	H_EQ(h_stats_u64(&sa, "link.B.rndv_tx"), 0);
	H_EQ(h_stats_u64(&sa, "link.B.backlog"), 0);
	H_EQ(h_stats_u64(&sa, "link.B.writes_pending"), 0);
	H_EQ(h_stats_u64(&sa, "rcache.regs"), h_stats_u64(&sa, "rcache.deregs"));
	/* Daemon B: no rendezvous receive left, no queue, nothing waiting. */
	(void)wait_stat(&nodes[1], "daemon.queues", 0, 2000);
	h_daemon_stats(&nodes[1], &sb);
	H_EQ(h_stats_u64(&sb, "link.A.rndv_rx"), 0);
	H_EQ(h_stats_u64(&sb, "daemon.unexpected"), 0);
	H_EQ(h_stats_u64(&sb, "daemon.unexpected_bytes"), 0);
	H_EQ(h_stats_u64(&sb, "daemon.posted_recvs"), 0);
	H_EQ(h_stats_u64(&sb, "rcache.regs"), h_stats_u64(&sb, "rcache.deregs"));
	/* The keepers' view against the daemons' counters: daemon B ran a
	 * rendezvous receive to its end for every receive completion in a
	 * CQ, and for every send that completed SL_OK without one; daemon A
	 * had a DONE for every send that completed SL_OK. */
	for (i = 0; i < MAX_SEQ; i++)
		completed_total += sh->completed[i];
	rx_done = h_stats_u64(&sb, "link.A.rndv_rx_done");
	tx_done = h_stats_u64(&sa, "link.B.rndv_tx_done");
	H_EQ(tx_done, fig.ok);
	H_EQ(rx_done, completed_total + fig.late_ok);

	printf("rndv_receiver_killed: %u trials (kill %s %u, %s %u, %s %u, %s %u, %s %u, %s %u; "
	       "then a B1 that is not killed), %lld ms\n", N_TRIALS, k_mode_name[0],
	       fig.trials[0], k_mode_name[1], fig.trials[1], k_mode_name[2], fig.trials[2],
	       k_mode_name[3], fig.trials[3], k_mode_name[4], fig.trials[4], k_mode_name[5],
	       fig.trials[5], (long long)(h_now_ms() - t_start));
	printf("rndv_receiver_killed: A1 sent %u x 1 MiB: %u SL_OK (%u polled by B1, %u received "
	       "but not seen by B1: %u still in its CQ), %u SL_ERR_NO_ENDPOINT; %u "
	       "outstanding at the kills (at most %u), last completion %.1f ms after a kill at "
	       "most (bound %d); death noticed in <= %lld ms (bound %d); %u later sends failed "
	       "SL_ERR_NO_ENDPOINT in <= %.2f ms (bound %d)\n", fig.sent, fig.ok, fig.ok_polled,
	       fig.ok_unpolled, fig.cq_unpolled, fig.noep, fig.outstanding,
	       fig.max_outstanding, fig.max_drain_us / 1000.0, KILL_DRAIN_MS,
	       (long long)fig.max_notice_ms, NOTICE_MS, fig.probes, fig.max_probe_us / 1000.0,
	       PROBE_MS);
	printf("rndv_receiver_killed: A2/B2 %llu round trips, mean %.2f ms, worst %.2f ms (bound "
	       "%d); daemon B VmRSS %ld KiB before the trials, %ld after (slack %d), VmHWM %ld; "
	       "contract violations: %u SL_OK without a completed receive, %u received but "
	       "failed; daemon B ran %llu rendezvous receives to the end, %llu of them with a "
	       "completion in a CQ\n", (unsigned long long)sh->pp_count,
	       sh->pp_count ? sh->pp_sum_us / 1000.0 / (double)sh->pp_count : 0.0,
	       sh->pp_worst_us / 1000.0, RTT_BOUND_MS, rss_pre, rss_post, RSS_SLACK_KB, hwm,
	       fig.late_ok, fig.lost_ok, (unsigned long long)rx_done,
	       (unsigned long long)completed_total);
	for (i = 0; i <= K_FINAL; i++)
		printf("rndv_receiver_killed:   %-10s %2u trials: %3u sent, %3u SL_OK (%2u of them "
		       "without a completed receive), %3u SL_ERR_NO_ENDPOINT; %2u outstanding at the "
		       "kills\n", k_mode_name[i], fig.trials[i], fig.m_sent[i], fig.m_ok[i],
		       fig.m_late[i], fig.m_noep[i], fig.m_out[i]);
	fflush(stdout);

	H_ASSERT(sh->pp_count > 0, "no ping-pong round trip");
	H_ASSERT(sh->pp_worst_us <= RTT_BOUND_MS * 1000, "A2/B2 worst round trip %.2f ms, bound "
		 "%d ms", sh->pp_worst_us / 1000.0, RTT_BOUND_MS);
	H_ASSERT(rss_post <= rss_pre + RSS_SLACK_KB, "daemon B VmRSS %ld KiB after the trials, "
		 "%ld before (slack %d KiB)", rss_post, rss_pre, RSS_SLACK_KB);
	H_ASSERT(fig.late_ok == 0 && fig.lost_ok == 0, "%u sends completed SL_OK though no "
		 "receive completed with their message, %u messages received whose send failed: %s",
		 fig.late_ok, fig.lost_ok, fig.first_violation);
	chan_close(&a1_cmd);
	chan_close(&a1_evt);
	shared_free(sh, sizeof(*sh));
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 2. eager_unexpected_receiver_killed                                  */
/* ------------------------------------------------------------------ */

/*
 * B1 posts no receive for A1's tag; A1 sends E_MSGS eager messages of
 * E_LEN bytes, which wait unexpected in daemon B.  Every send completes
 * SL_OK once (sluice.h: eager, "delivered it or queued it as
 * unexpected").  B1 is killed: daemon B's unexpected count and bytes go
 * back to 0, its queue count to the baseline; a later send fails fast
 * with SL_ERR_NO_ENDPOINT; a new B1 on the port sees none of the old
 * messages, and gets the next one.  In odd rounds B1 also has a receive
 * posted that nothing matches, which must go quietly too.
 */
#define E_MSGS 100u
#define E_LEN KiB
#define E_CHARGE (E_LEN + 64u)	/* unexpected_bytes per message: sluiced.conf(5) */
#define E_TAG 5u
#define E_TAG_NEVER 6u
#define E_ROUNDS 4u
#define E_SRC 7u

static void e_victim_run(const struct h_daemon *nodes, uint32_t round, int evt_fd, int cmd_fd)
{
	struct cl c;
	uint8_t *rb;
	int rc;

	cl_name = "B1";
	cl_open(&c, &nodes[1], PORT_B1, 16);
	rb = cl_alloc(&c, E_LEN);
	if (round % 2) {
		rc = sl_recv(c.q, SL_ANY_SOURCE, E_TAG_NEVER, ~0ull, rb, E_LEN, CTX_RECV | 1);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	}
	ev_send(evt_fd, 'R', "B1 ready");
	/* Nothing completes: the messages wait unexpected until the kill. */
	cl_expect_quiet(&c, 100);
	ev_await(cmd_fd, 'X', 30000, "the kill");
	_exit(CL_E_TIMEOUT);
}

static void e_new_run(const struct h_daemon *nodes, uint32_t seq, int evt_fd)
{
	sl_addr_t a1 = { nodes[0].node, PORT_A1 };
	struct sl_cqe e;
	struct cl c;
	uint8_t *rb;
	int rc;

	cl_name = "B1'";
	cl_open(&c, &nodes[1], PORT_B1, 16);
	rb = cl_alloc(&c, 2 * E_LEN);
	/* Any source, any tag: it would take a stale message if one were
	 * left for the port. */
	rc = sl_recv(c.q, SL_ANY_SOURCE, 0, 0, rb, 2 * E_LEN, CTX_RECV | 0);
	CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	cl_expect_quiet(&c, 100);
	ev_send(evt_fd, 'R', "B1' quiet");
	rc = h_wait_cqe(c.q, &e, 10000);
	CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "no message in 10 s (rc %d)", rc);
	CL_REQUIRE(e.status == SL_OK && e.user_ctx == (CTX_RECV | 0), CL_E_STATUS,
		   "receive: %s ctx %#llx", sl_strerror(e.status), (unsigned long long)e.user_ctx);
	CL_REQUIRE(e.len == E_LEN && e.tag == E_TAG && addr_eq(e.peer, a1), CL_E_META,
		   "len %llu tag %llu peer %08x:%u", (unsigned long long)e.len,
		   (unsigned long long)e.tag, e.peer.node, e.peer.port);
	if (!msg_check(rb, E_LEN, E_SRC, seq, E_TAG)) {
		struct msg_hdr mh;

		if (msg_decode(rb, E_LEN, &mh))
			CL_DIE(CL_E_ORDER, "got message %u, want %u (stale)", mh.seq, seq);
		CL_DIE(CL_E_DATA, "message %u: payload differs", seq);
	}
	cl_expect_quiet(&c, 20);
	cl_close(&c);
	_exit(CL_OK);
}

START_TEST(eager_unexpected_receiver_killed)
{
	static const char *const names[] = { "A", "B" };
	static const char *const v_names[1] = { "B1" };
	static struct h_stats sb;
	struct h_daemon nodes[2];
	struct sl_ctx *ctx;
	struct sl_queue *q;
	sl_addr_t dst;
	uint8_t *sbuf, seen[E_MSGS];
	uint64_t q_base;
	int64_t max_notice = 0, max_probe = 0, t_start = h_now_ms();
	uint32_t round, i, ok = 0;
	int st;

	h_cluster_start(nodes, names, 2);
	h_daemon_stats(&nodes[1], &sb);
	q_base = h_stats_u64(&sb, "daemon.queues");
	H_EQ(h_stats_u64(&sb, "daemon.unexpected"), 0);
	H_EQ(sl_open(nodes[0].sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, PORT_A1, 256, &q), 0);
	sbuf = sl_alloc(q, (size_t)(E_MSGS + 2) * E_LEN);
	H_ASSERT(sbuf, "sl_alloc");
	dst = (sl_addr_t){ nodes[1].node, PORT_B1 };

	for (round = 0; round < E_ROUNDS; round++) {
		uint32_t base = round * 1000;
		struct chan evt, cmd;
		struct sl_cqe e;
		pid_t pid;
		int64_t t_kill, notice, t0;

		chan_init(&evt);
		chan_init(&cmd);
		pid = h_fork();
		if (pid == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			e_victim_run(nodes, round, evt.fd[1], cmd.fd[0]);
		}
		t_expect(evt.fd[0], 'R', 10000, &pid, v_names, 1, "B1 ready");
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < E_MSGS; i++) {
			msg_fill(sbuf + (size_t)i * E_LEN, E_LEN, E_SRC, base + i, E_TAG);
			H_EQ(sl_send(q, dst, E_TAG, sbuf + (size_t)i * E_LEN, E_LEN, base + i), 0);
		}
		/* Each of the E_MSGS sends completes once, SL_OK: queued
		 * unexpected at B1's endpoint. */
		for (i = 0; i < E_MSGS; i++) {
			wait_cqes(q, &e, 1, 5000);
			H_ASSERT(e.user_ctx >= base && e.user_ctx < base + E_MSGS &&
				 !seen[e.user_ctx - base], "send ctx %llu: unknown or twice",
				 (unsigned long long)e.user_ctx);
			seen[e.user_ctx - base] = 1;
			H_ASSERT(e.status == SL_OK && e.opcode == SL_OP_SEND && e.len == E_LEN &&
				 e.tag == E_TAG && addr_eq(e.peer, dst), "send %llu: %s len %llu",
				 (unsigned long long)e.user_ctx, sl_strerror(e.status),
				 (unsigned long long)e.len);
			ok++;
		}
		expect_no_cqe(q, 20);
		h_daemon_stats(&nodes[1], &sb);
		H_EQ(h_stats_u64(&sb, "daemon.unexpected"), E_MSGS);
		H_EQ(h_stats_u64(&sb, "daemon.unexpected_bytes"), (uint64_t)E_MSGS * E_CHARGE);
		H_EQ(h_stats_u64(&sb, "daemon.queues"), q_base + 1);
		H_EQ(h_stats_u64(&sb, "daemon.posted_recvs"), round % 2);

		t_kill = h_now_ms();
		H_ASSERT(kill(pid, SIGKILL) == 0, "SIGKILL: %s", strerror(errno));
		st = t_reap(pid, 5000);
		H_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "B1: %s", wait_status_str(st));
		(void)wait_stat(&nodes[1], "daemon.queues", q_base, 2000);
		notice = h_now_ms() - t_kill;
		H_ASSERT(notice <= NOTICE_MS, "daemon B took %lld ms to drop the dead B1's queue",
			 (long long)notice);
		if (notice > max_notice)
			max_notice = notice;
		h_daemon_stats(&nodes[1], &sb);
		H_EQ(h_stats_u64(&sb, "daemon.unexpected"), 0);
		H_EQ(h_stats_u64(&sb, "daemon.unexpected_bytes"), 0);
		H_EQ(h_stats_u64(&sb, "daemon.posted_recvs"), 0);
		H_EQ(h_stats_u64(&sb, "daemon.queues"), q_base);
		/* The sends completed once: nothing more comes for them. */
		expect_no_cqe(q, 20);

		/* A later send fails fast. */
		msg_fill(sbuf + (size_t)E_MSGS * E_LEN, E_LEN, E_SRC, base + 999, E_TAG);
		t0 = now_us();
		H_EQ(sl_send(q, dst, E_TAG, sbuf + (size_t)E_MSGS * E_LEN, E_LEN, base + 999), 0);
		wait_cqes(q, &e, 1, 2000);
		t0 = now_us() - t0;
		H_ASSERT(e.user_ctx == base + 999 && e.status == SL_ERR_NO_ENDPOINT,
			 "later send: ctx %llu %s", (unsigned long long)e.user_ctx,
			 sl_strerror(e.status));
		H_ASSERT(t0 <= PROBE_MS * 1000, "later send took %lld us to fail", (long long)t0);
		if (t0 > max_probe)
			max_probe = t0;
		chan_close(&evt);
		chan_close(&cmd);

		/* A new client on the port: none of the old messages. */
		chan_init(&evt);
		pid = h_fork();
		if (pid == 0) {
			(void)signal(SIGPIPE, SIG_IGN);
			e_new_run(nodes, base + 500, evt.fd[1]);
		}
		t_expect(evt.fd[0], 'R', 10000, &pid, v_names, 1, "B1' quiet");
		msg_fill(sbuf + (size_t)(E_MSGS + 1) * E_LEN, E_LEN, E_SRC, base + 500, E_TAG);
		H_EQ(sl_send(q, dst, E_TAG, sbuf + (size_t)(E_MSGS + 1) * E_LEN, E_LEN, base + 500),
		     0);
		wait_cqes(q, &e, 1, 5000);
		H_ASSERT(e.user_ctx == base + 500 && e.status == SL_OK, "send to B1': ctx %llu %s",
			 (unsigned long long)e.user_ctx, sl_strerror(e.status));
		st = t_reap(pid, 10000);
		H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "B1': %s",
			 client_status_str(pid, st));
		chan_close(&evt);
		expect_no_cqe(q, 1);
	}
	(void)wait_stat(&nodes[1], "daemon.queues", q_base, 2000);
	h_daemon_stats(&nodes[1], &sb);
	H_EQ(h_stats_u64(&sb, "daemon.unexpected"), 0);
	H_EQ(h_stats_u64(&sb, "daemon.unexpected_bytes"), 0);
	/* Exactly the rounds' messages ever waited unexpected. */
	H_EQ(h_stats_u64(&sb, "daemon.unexpected_total"), (uint64_t)E_ROUNDS * E_MSGS);
	printf("eager_unexpected_receiver_killed: %u rounds x %u eager %u-byte sends: %u SL_OK "
	       "once each; daemon B unexpected %u -> 0 (bytes %u -> 0), queue dropped <= %lld ms "
	       "after the kill; later sends SL_ERR_NO_ENDPOINT in <= %.2f ms; new B1 saw none of "
	       "the old messages; %lld ms\n", E_ROUNDS, E_MSGS, E_LEN, ok, E_MSGS, E_MSGS * E_CHARGE,
	       (long long)max_notice, max_probe / 1000.0, (long long)(h_now_ms() - t_start));
	H_EQ(sl_queue_close(q), 0);
	sl_close(ctx);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Runner                                                               */
/* ------------------------------------------------------------------ */

static Suite *client_death_suite(void)
{
	Suite *s = suite_create("client_death");
	TCase *tc;

	tc = tcase_create("rndv_receiver_killed");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rndv_receiver_killed);
	suite_add_tcase(s, tc);
	tc = tcase_create("eager_unexpected_receiver_killed");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, eager_unexpected_receiver_killed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_run_suite(client_death_suite());
}
