/*
 * test_lifecycle.c - the daemon's and the client's edges of life: a daemon
 * that dies under a client, shutdown with work pending, two daemons on
 * one runtime directory, anonymous TCP peers, fd exhaustion in a client,
 * and a control-protocol version mismatch.  Each test here reproduces a
 * failure found by trying the daemon as a new user would.
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "harness.h"
#include "testutil.h"
#include "sl_shm.h"
#include "sl_wire.h"
#include "sluice.h"

/* CPU time this thread has used, microseconds. */
static int64_t thread_cpu_us(void)
{
	struct timespec ts;

	H_ASSERT(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0, "clock_gettime: %s",
		 strerror(errno));
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * After the daemon dies, a client spinning on -EAGAIN must learn it: the
 * README's retry loop used to spin forever.
 */
START_TEST(daemon_gone_is_reported)
{
	struct h_daemon a;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe cqe;
	uint8_t *buf;
	int64_t t0, cpu_us;
	int rc = 0, posted = 0;

	h_daemon_start(&a, "gone", 0, NULL, 0);
	H_EQ(sl_open(a.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 100, 4, &q), 0);
	buf = sl_alloc(q, 8);
	H_ASSERT(buf, "sl_alloc");
	h_daemon_kill(&a);

	/* The SQ (4) fills, then posts must fail within ~1 ms of polling.
	 * Counted in this thread's CPU time, which a busy machine does not
	 * stretch (wall time bounds only the wait for -ENOTCONN, generously):
	 * the bug spun on -EAGAIN for ever. */
	t0 = h_now_ms();
	cpu_us = thread_cpu_us();
	while (h_now_ms() - t0 < 10000) {
		rc = sl_send(q, (sl_addr_t){ SL_NODE_LOCAL, 100 }, 1, buf, 8, 0);
		if (rc == 0)
			posted++;
		else if (rc != -EAGAIN)
			break;
	}
	H_EQ(rc, -ENOTCONN);
	H_ASSERT(posted <= 4, "%d posts accepted into a 4-entry SQ", posted);
	cpu_us = thread_cpu_us() - cpu_us;
	H_ASSERT(cpu_us < 100000, "spun %lld us of CPU (%lld ms of wall time) before noticing",
		 (long long)cpu_us, (long long)(h_now_ms() - t0));
	H_EQ(sl_recv(q, SL_ANY_SOURCE, 0, 0, buf, 8, 0), -ENOTCONN);
	H_EQ(sl_wait(q, 0), -ECONNRESET);
	H_EQ(sl_wait(q, 1000), -ECONNRESET);
	H_EQ(sl_poll(q, &cqe, 1), 0);
	sl_close(ctx);
}
END_TEST

/*
 * SIGTERM with work pending and no drain (shutdown_drain_ms 0; the drain
 * is test_service's): every accepted descriptor gets exactly one
 * SL_ERR_CANCELED completion (receives posted; sends queued for a peer
 * that never came up).
 */
START_TEST(sigterm_cancels_pending)
{
	struct h_daemon a, ghost = { .name = "ghost" };
	struct sl_ctx *ctx;
	struct sl_queue *q, *q2;
	struct sl_cqe cqes[16];
	uint8_t *buf, *big;
	unsigned i, got = 0, recvs = 0, sends = 0;
	bool seen[9] = { false };
	int rc;

	ghost.tcp_port = h_free_port();	/* nothing listens there */
	h_daemon_start_conf(&a, "stopper", h_free_port(), &ghost, 1,
			    "[daemon]\nshutdown_drain_ms = 0\n");
	H_EQ(sl_open(a.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 200, 16, &q), 0);
	/* Opened after q, so torn down after it: a local rendezvous send of
	 * q waiting unexpected at q2 used to lose its completion. */
	H_EQ(sl_queue_open(ctx, 201, 16, &q2), 0);
	buf = sl_alloc(q, 64);
	big = sl_alloc(q, 1u << 20);
	H_ASSERT(buf && big, "sl_alloc");
	for (i = 0; i < 5; i++)
		H_EQ(sl_recv(q, SL_ANY_SOURCE, 7, ~0ull, buf, 64, i), 0);
	for (i = 5; i < 8; i++)
		H_EQ(sl_send(q, (sl_addr_t){ sl_node_id("ghost"), 9 }, 7, buf, 8, i), 0);
	H_EQ(sl_send(q, (sl_addr_t){ SL_NODE_LOCAL, 201 }, 7, big, 1u << 20, 8), 0);
	/* Accepted: receives posted, sends in the backlog, the rendezvous
	 * waiting unexpected at q2. */
	h_sleep_ms(100);
	H_EQ(sl_poll(q, cqes, 16), 0);
	h_daemon_stop(&a);	/* SIGTERM; exit status 0; socket removed */

	while (got < 9) {
		rc = sl_poll(q, cqes + got, 16 - got);
		H_ASSERT(rc > 0, "completion %u of 9: sl_poll %d", got + 1, rc);
		got += (unsigned)rc;
	}
	H_EQ(sl_poll(q, cqes + got, 16 - got), 0);
	for (i = 0; i < got; i++) {
		H_EQ(cqes[i].status, SL_ERR_CANCELED);
		H_ASSERT(cqes[i].user_ctx < 9 && !seen[cqes[i].user_ctx], "ctx %llu",
			 (unsigned long long)cqes[i].user_ctx);
		seen[cqes[i].user_ctx] = true;
		H_EQ(cqes[i].opcode, cqes[i].user_ctx < 5 ? SL_OP_RECV : SL_OP_SEND);
		if (cqes[i].opcode == SL_OP_RECV)
			recvs++;
		else
			sends++;
	}
	H_EQ(recvs, 5);
	H_EQ(sends, 4);
	H_EQ(sl_poll(q2, cqes, 16), 0);
	H_EQ(sl_wait(q, 100), -ECONNRESET);
	sl_close(ctx);
}
END_TEST

/*
 * A completion written outside a progress pass (here: the link breaks and,
 * peer_timeout_ms later, the unacknowledged send fails) must wake a client
 * asleep in sl_wait(): it used to sit in the CQ until the wait timed out.
 */
START_TEST(link_down_wakes_client)
{
	struct h_daemon ds[2];
	static const char *const names[] = { "left", "right" };
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe cqe;
	uint8_t *buf;
	int64_t t0, woke, killed_at = 0;
	int kill_pipe[2];
	pid_t killer;
	int st;

	h_cluster_start_conf(ds, names, 2, "[transport]\npeer_timeout_ms = 500\n");
	H_EQ(pipe2(kill_pipe, O_CLOEXEC), 0);
	H_EQ(sl_open(ds[0].sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 300, 8, &q), 0);
	buf = sl_alloc(q, 64);
	H_ASSERT(buf, "sl_alloc");
	/* A stopped peer takes the frame into its socket but never ACKs. */
	H_EQ(kill(ds[1].pid, SIGSTOP), 0);
	H_EQ(sl_send(q, (sl_addr_t){ ds[1].node, 9 }, 1, buf, 8, 42), 0);
	h_sleep_ms(200);	/* the daemon is asleep again */
	/* Kill the peer only once this client sleeps in sl_wait(). */
	killer = h_fork();
	if (killer == 0) {
		int64_t at;

		h_sleep_ms(300);
		if (kill(ds[1].pid, SIGKILL) != 0)
			_exit(1);
		at = h_now_ms();	/* the parent measures from the kill */
		_exit(write(kill_pipe[1], &at, sizeof(at)) == (ssize_t)sizeof(at) ? 0 : 2);
	}
	/* The bug slept until this wait's timeout: 20 s, far from the
	 * peer_timeout_ms (500) after the kill it must wake at.  Timed from
	 * the kill (a busy machine may delay the killer), and bounded
	 * generously above. */
	t0 = h_now_ms();
	H_EQ(sl_wait(q, 20000), 1);
	woke = h_now_ms();
	H_EQ(waitpid(killer, &st, 0), killer);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "killer status %#x", st);
	H_EQ(read(kill_pipe[0], &killed_at, sizeof(killed_at)), (ssize_t)sizeof(killed_at));
	H_ASSERT(close(kill_pipe[0]) == 0 && close(kill_pipe[1]) == 0, "close: %s",
		 strerror(errno));
	printf("link_down_wakes_client: woke %lld ms after the wait began, %lld ms after the "
	       "kill\n", (long long)(woke - t0), (long long)(woke - killed_at));
	H_ASSERT(woke - killed_at >= 400 && woke - killed_at < 5000, "completion woke the "
		 "client %lld ms after the peer was killed (%lld ms after the wait began), "
		 "peer_timeout_ms 500", (long long)(woke - killed_at), (long long)(woke - t0));
	h_daemon_kill(&ds[1]);	/* reap it */
	H_EQ(sl_poll(q, &cqe, 1), 1);
	H_EQ(cqe.user_ctx, 42);
	H_EQ(cqe.status, SL_ERR_PEER_DOWN);
	sl_close(ctx);
	h_daemon_stop(&ds[0]);
}
END_TEST

/*
 * Out of fds, accept() fails while the connection stays queued: the loop
 * spun on the listening socket (88% CPU, 9 million log lines in 9 s) and
 * starved the clients it already had.  It now pauses accepting.
 */
START_TEST(accept_at_fd_limit_backs_off)
{
	struct h_daemon a;
	struct rlimit low, saved;
	struct sl_ctx *ctx, *late;
	struct sl_queue *q;
	struct sl_cqe cqe;
	struct stat st;
	sl_addr_t self;
	uint8_t *buf;
	int conns[40], i, got, n;
	long t0, t1, hz = sysconf(_SC_CLK_TCK);
	int64_t start;

	h_daemon_start(&a, "fds", 0, NULL, 0);
	H_EQ(sl_open(a.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 400, 8, &q), 0);
	self = sl_queue_addr(q);
	buf = sl_alloc(q, 64);
	H_ASSERT(buf, "sl_alloc");
	n = h_proc_fds(a.pid);
	H_ASSERT(n > 0, "fds %d", n);
	H_EQ(prlimit(a.pid, RLIMIT_NOFILE, NULL, &saved), 0);
	low = (struct rlimit){ (rlim_t)n + 2, saved.rlim_max };
	H_EQ(prlimit(a.pid, RLIMIT_NOFILE, &low, NULL), 0);
	for (i = 0; i < 40; i++) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		conns[i] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		H_ASSERT(conns[i] >= 0, "socket");
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", a.sock);
		H_EQ(connect(conns[i], (struct sockaddr *)&sun, sizeof(sun)), 0);
	}
	h_sleep_ms(200);
	t0 = h_proc_cpu_ticks(a.pid);
	start = h_now_ms();
	/* The client it has is still served: every completion comes (a
	 * starved one never did; 10 s is for a busy machine).  The spin is
	 * told by the daemon's CPU time below, not by these round trips'
	 * total time, which a busy machine stretches too. */
	for (i = 0; i < 100; i++) {
		H_EQ(sl_recv(q, self, 1, ~0ull, buf + 32, 32, 1), 0);
		H_EQ(sl_send(q, self, 1, buf, 8, 2), 0);
		for (got = 0; got < 2; got++) {
			int rc = h_wait_cqe(q, &cqe, 10000);

			H_ASSERT(rc == 1, "round trip %d: completion %d not there after 10 s "
				 "(rc %d)", i + 1, got + 1, rc);
			H_EQ(cqe.status, SL_OK);
		}
	}
	printf("accept_at_fd_limit_backs_off: 100 round trips in %lld ms at the fd limit\n",
	       (long long)(h_now_ms() - start));
	h_sleep_ms(1000);
	t1 = h_proc_cpu_ticks(a.pid);
	H_ASSERT((t1 - t0) * 1000 / hz < 300, "daemon used %ld ms of CPU in ~1 s at its "
		 "fd limit", (t1 - t0) * 1000 / hz);
	H_EQ(stat(a.log, &st), 0);
	H_ASSERT(st.st_size < 16384, "log grew to %lld bytes", (long long)st.st_size);
	for (i = 0; i < 40; i++)
		close(conns[i]);
	H_EQ(prlimit(a.pid, RLIMIT_NOFILE, &saved, NULL), 0);
	start = h_now_ms();
	while (sl_open(a.sock, &late) != 0)	/* accepting again */
		H_ASSERT(h_now_ms() - start < 2000, "no accept 2 s after fds came back");
	sl_close(late);
	sl_close(ctx);
	h_daemon_stop(&a);
}
END_TEST

/* [limits] max_queues is filled exactly: the next open gets -ENOSPC (not
 * -EMFILE, which is the client's own descriptor limit), and a closed
 * queue's slot is free again.  Both refusals make one log line. */
START_TEST(max_queues_bound)
{
	struct h_daemon a;
	struct sl_ctx *ctx;
	struct sl_queue *q[4], *extra;
	int i;

	h_daemon_start_conf(&a, "quota", 0, NULL, 0,
			    "[limits]\nmax_queues = 4\nuid_max_queues = 8\n");
	H_EQ(sl_open(a.sock, &ctx), 0);
	for (i = 0; i < 4; i++)
		H_EQ(sl_queue_open(ctx, 0, 4, &q[i]), 0);
	H_EQ(sl_queue_open(ctx, 0, 4, &extra), -ENOSPC);
	H_EQ(sl_queue_close(q[2]), 0);
	H_EQ(sl_queue_open(ctx, 0, 4, &q[2]), 0);
	H_EQ(sl_queue_open(ctx, 0, 4, &extra), -ENOSPC);
	H_EQ(tu_log_lines(&a, "queue refused"), 1);
	H_EQ(tu_log_lines(&a, "[limits] max_queues = 4 reached (4 queues open)"), 1);
	sl_close(ctx);
	h_daemon_stop(&a);
}
END_TEST

/*
 * Per-client quotas are filled exactly, hit only the client over them,
 * and free up again: [limits] client_max_queues and client_max_arena_bytes
 * refuse the next open with -EDQUOT.
 */
START_TEST(client_queue_quotas)
{
	struct h_daemon a;
	struct sl_ctx *c1, *c2;
	struct sl_queue *q[3], *extra, *other[3];
	int i;

	h_daemon_start_conf(&a, "cquota", 0, NULL, 0,
			    "[limits]\narena_bytes = 1M\nclient_max_queues = 3\n"
			    "client_max_arena_bytes = 2M\n");
	H_EQ(sl_open(a.sock, &c1), 0);
	H_EQ(sl_open(a.sock, &c2), 0);
	/* The arena quota (2 x 1M) binds first. */
	for (i = 0; i < 2; i++)
		H_EQ(sl_queue_open(c1, 0, 4, &q[i]), 0);
	H_EQ(sl_queue_open(c1, 0, 4, &extra), -EDQUOT);
	/* Another client is not affected. */
	for (i = 0; i < 2; i++)
		H_EQ(sl_queue_open(c2, 0, 4, &other[i]), 0);
	H_EQ(sl_queue_close(q[0]), 0);
	H_EQ(sl_queue_open(c1, 0, 4, &q[0]), 0);
	H_EQ(sl_queue_open(c1, 0, 4, &extra), -EDQUOT);
	sl_close(c1);
	sl_close(c2);
	h_daemon_stop(&a);

	/* With room for arenas, the queue count binds: 3, not 4. */
	h_daemon_start_conf(&a, "cquota2", 0, NULL, 0,
			    "[limits]\narena_bytes = 1M\nclient_max_queues = 3\n");
	H_EQ(sl_open(a.sock, &c1), 0);
	for (i = 0; i < 3; i++)
		H_EQ(sl_queue_open(c1, 0, 4, &q[i]), 0);
	H_EQ(sl_queue_open(c1, 0, 4, &extra), -EDQUOT);
	H_EQ(sl_queue_close(q[1]), 0);
	H_EQ(sl_queue_open(c1, 0, 4, &q[1]), 0);
	sl_close(c1);
	h_daemon_stop(&a);
}
END_TEST

/*
 * [limits] client_max_inflight = 4: of 10 receives a client posts, the
 * daemon takes exactly 4 and leaves the rest in the SQ; another client
 * still gets its own 4 taken.  Each completion lets one more in.
 */
START_TEST(client_inflight_quota)
{
	struct h_daemon a;
	struct sl_ctx *c1, *c2;
	struct sl_queue *q1, *q2;
	struct sl_cqe cqe;
	uint8_t *buf;
	unsigned i;

	h_daemon_start_conf(&a, "inflight", 0, NULL, 0, "[limits]\nclient_max_inflight = 4\n");
	H_EQ(sl_open(a.sock, &c1), 0);
	H_EQ(sl_open(a.sock, &c2), 0);
	H_EQ(sl_queue_open(c1, 601, 16, &q1), 0);
	H_EQ(sl_queue_open(c2, 602, 16, &q2), 0);
	buf = sl_alloc(q2, 64);
	H_ASSERT(buf, "sl_alloc");
	for (i = 0; i < 10; i++)
		H_EQ(sl_recv(q1, SL_ANY_SOURCE, i, ~0ull, NULL, 0, i), 0);
	h_sleep_ms(50);
	H_EQ(h_daemon_stat(&a, "daemon.posted_recvs"), 4);
	H_ASSERT(h_daemon_stat(&a, "daemon.quota_stalls") > 0, "no quota stall counted");
	for (i = 0; i < 4; i++)
		H_EQ(sl_recv(q2, SL_ANY_SOURCE, 100 + i, ~0ull, NULL, 0, 100 + i), 0);
	h_sleep_ms(50);
	H_EQ(h_daemon_stat(&a, "daemon.posted_recvs"), 8);
	/* c2's fifth descriptor, a send, waits too: no completion. */
	H_EQ(sl_send(q2, (sl_addr_t){ SL_NODE_LOCAL, 601 }, 0, buf, 8, 200), 0);
	H_EQ(h_wait_cqe(q2, &cqe, 100), 0);
	sl_close(c2);	/* its 4 receives and the send go; c1 is untouched */
	h_sleep_ms(50);
	H_EQ(h_daemon_stat(&a, "daemon.posted_recvs"), 4);
	/* c1: a message matching receive 0 completes it and lets receive 4
	 * in; the posted count stays at the quota. */
	H_EQ(sl_open(a.sock, &c2), 0);
	H_EQ(sl_queue_open(c2, 602, 16, &q2), 0);
	buf = sl_alloc(q2, 64);
	H_ASSERT(buf, "sl_alloc");
	H_EQ(sl_send(q2, (sl_addr_t){ SL_NODE_LOCAL, 601 }, 0, NULL, 0, 300), 0);
	H_EQ(h_wait_cqe(q2, &cqe, 2000), 1);
	H_EQ(cqe.status, SL_OK);
	H_EQ(h_wait_cqe(q1, &cqe, 2000), 1);
	H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == 0, "c1 got ctx %llu %s",
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	h_sleep_ms(50);
	H_EQ(h_daemon_stat(&a, "daemon.posted_recvs"), 4);
	sl_close(c1);
	sl_close(c2);
	h_daemon_stop(&a);
}
END_TEST

/*
 * [limits] link_backlog_max = 5 with the peer unreachable: 5 sends wait
 * in the backlog, the 6th and 7th complete SL_NAK_BUSY at once, buffers
 * untouched; the backlog gauge reads 5 exactly.
 */
START_TEST(link_backlog_bound)
{
	struct h_daemon a, ghost = { .name = "ghost" };
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe cqe;
	uint8_t *buf;
	unsigned i;

	ghost.tcp_port = h_free_port();	/* nothing listens there */
	h_daemon_start_conf(&a, "backlog", h_free_port(), &ghost, 1,
			    "[limits]\nlink_backlog_max = 5\n");
	H_EQ(sl_open(a.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 700, 16, &q), 0);
	buf = sl_alloc(q, 64);
	H_ASSERT(buf, "sl_alloc");
	for (i = 0; i < 7; i++)
		H_EQ(sl_send(q, (sl_addr_t){ sl_node_id("ghost"), 9 }, 7, buf, 8, i), 0);
	for (i = 5; i < 7; i++) {
		H_EQ(h_wait_cqe(q, &cqe, 2000), 1);
		H_ASSERT(cqe.status == SL_NAK_BUSY && cqe.user_ctx == i, "ctx %llu: %s",
			 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	}
	H_EQ(h_wait_cqe(q, &cqe, 50), 0);
	H_EQ(h_daemon_stat(&a, "link.ghost.backlog"), 5);
	H_EQ(h_daemon_stat(&a, "link.ghost.backlog_naks"), 2);
	sl_close(ctx);
	h_daemon_stop(&a);
}
END_TEST

/*
 * [transport] eager_credits = 4 at B: with B stopped (SIGSTOP), A sends
 * exactly 4 of 50 messages and keeps 46 in its backlog; when B runs again
 * its ACKs slide the window and all 50 arrive, in order, once.
 */
START_TEST(credit_window)
{
	static const char *const names[] = { "A", "B" };
	const char *confs[2] = { NULL, "[transport]\neager_credits = 4\n" };
	struct h_daemon nodes[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct sl_cqe cqe;
	uint8_t *buf, *rbuf;
	unsigned i;

	h_cluster_start_confs(nodes, names, 2, confs);
	H_EQ(sl_open(nodes[0].sock, &ca), 0);
	H_EQ(sl_open(nodes[1].sock, &cb), 0);
	H_EQ(sl_queue_open(ca, 801, 64, &qa), 0);
	H_EQ(sl_queue_open(cb, 802, 64, &qb), 0);
	buf = sl_alloc(qa, 50 * 64);
	rbuf = sl_alloc(qb, 50 * 64);
	H_ASSERT(buf && rbuf, "sl_alloc");
	for (i = 0; i < 50; i++) {
		memset(buf + i * 64, (int)i, 64);
		H_EQ(sl_recv(qb, SL_ANY_SOURCE, 5, ~0ull, rbuf + i * 64, 64, i), 0);
	}
	h_sleep_ms(50);
	H_EQ(kill(nodes[1].pid, SIGSTOP), 0);
	for (i = 0; i < 50; i++)
		H_EQ(sl_send(qa, sl_queue_addr(qb), 5, buf + i * 64, 64, i), 0);
	h_sleep_ms(200);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.unacked"), 4);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.backlog"), 46);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.credits"), 0);
	H_EQ(h_wait_cqe(qa, &cqe, 10), 0);
	H_EQ(kill(nodes[1].pid, SIGCONT), 0);
	for (i = 0; i < 50; i++) {
		H_EQ(h_wait_cqe(qb, &cqe, 5000), 1);
		H_ASSERT(cqe.status == SL_OK && cqe.user_ctx == i && cqe.len == 64,
			 "receive %u: ctx %llu %s", i, (unsigned long long)cqe.user_ctx,
			 sl_strerror(cqe.status));
		H_ASSERT(rbuf[i * 64] == i && rbuf[i * 64 + 63] == i, "payload %u", i);
	}
	for (i = 0; i < 50; i++) {
		H_EQ(h_wait_cqe(qa, &cqe, 5000), 1);
		H_EQ(cqe.status, SL_OK);
	}
	h_sleep_ms(50);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.backlog"), 0);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.unacked"), 0);
	H_EQ(h_daemon_stat(&nodes[0], "link.B.credits"), 4);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(nodes, 2);
}
END_TEST

/*
 * The arena is filled exactly: each block costs its length rounded up to
 * 64 bytes plus a 64-byte header (libclient/arena.c), so a 1 MiB arena
 * holds 15 blocks of 64 KiB; freed blocks coalesce back into one extent.
 */
START_TEST(arena_bound)
{
	struct h_daemon a;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	void *b[16], *whole;
	size_t fit = (1u << 20) / ((64u << 10) + 64);
	size_t i;

	h_daemon_start_conf(&a, "arena", 0, NULL, 0, "[limits]\narena_bytes = 1M\n");
	H_EQ(sl_open(a.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 500, 4, &q), 0);
	H_EQ(sl_arena_size(q), 1u << 20);
	H_EQ(fit, 15);
	for (i = 0; i < fit; i++) {
		b[i] = sl_alloc(q, 64u << 10);
		H_ASSERT(b[i], "block %zu of %zu", i, fit);
		H_EQ(((uintptr_t)b[i]) % 64, 0);
	}
	errno = 0;
	H_ASSERT(sl_alloc(q, 64u << 10) == NULL && errno == ENOMEM, "block 16 fit");
	sl_free(q, b[7]);
	b[7] = sl_alloc(q, 64u << 10);
	H_ASSERT(b[7], "a freed block is reused");
	for (i = 0; i < fit; i++)
		sl_free(q, b[i]);
	/* One block of the whole arena less its header: all extents merged. */
	whole = sl_alloc(q, (1u << 20) - 64);
	H_ASSERT(whole, "free extents did not coalesce");
	errno = 0;
	H_ASSERT(sl_alloc(q, 1) == NULL && errno == ENOMEM, "arena not full");
	sl_free(q, whole);
	sl_close(ctx);
	h_daemon_stop(&a);
}
END_TEST

static pid_t spawn_daemon(const char *dir)
{
	const char *top = getenv("top_builddir");
	char bin[512];
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/daemon/sluiced", top ? top : ".");
	pid = h_fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl(bin, bin, "--node", "race", "--runtime-dir", dir, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Two daemons started at the same moment on one directory: exactly one. */
START_TEST(one_daemon_per_runtime_dir)
{
	unsigned round;

	for (round = 0; round < 10; round++) {
		char dir[] = "/tmp/sluice-race-XXXXXX", sock[128];
		pid_t p[2];
		int st, alive = 0, refused = 0, i;
		int64_t t0;
		struct sl_ctx *ctx;

		H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
		p[0] = spawn_daemon(dir);
		p[1] = spawn_daemon(dir);
		/* The loser exits as soon as it finds the lock taken: wait for
		 * that (a fixed sleep failed on a loaded machine), then a
		 * little more for a second exit that must not come. */
		for (t0 = h_now_ms(); refused == 0 && h_now_ms() - t0 < 5000;) {
			h_sleep_ms(20);
			for (i = 0; i < 2; i++) {
				pid_t r = p[i] ? waitpid(p[i], &st, WNOHANG) : 0;

				if (r == 0)
					continue;
				H_EQ(r, p[i]);
				H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1,
					 "loser status %#x", st);
				refused++;
				p[i] = 0;
			}
		}
		h_sleep_ms(200);
		for (i = 0; i < 2; i++)
			if (p[i] && waitpid(p[i], &st, WNOHANG) == 0)
				alive++;
		H_EQ(alive, 1);
		H_EQ(refused, 1);
		snprintf(sock, sizeof(sock), "%s/sluiced.sock", dir);
		H_EQ(sl_open(sock, &ctx), 0);
		sl_close(ctx);
		for (i = 0; i < 2; i++) {
			if (p[i]) {
				H_EQ(kill(p[i], SIGTERM), 0);
				H_EQ(waitpid(p[i], &st, 0), p[i]);
				H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
			}
		}
		H_EQ(access(sock, F_OK), -1);	/* the survivor removed it */
		h_remove_dir(dir);
	}
}
END_TEST

/* Milliseconds until the peer closes @fd (read returns 0 or an error). */
static int64_t ms_until_closed(int fd, int limit_ms)
{
	int64_t t0 = h_now_ms();
	char b[256];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = limit_ms - (h_now_ms() - t0);

		if (left <= 0)
			return -1;
		if (poll(&pfd, 1, (int)left) == 1 && read(fd, b, sizeof(b)) <= 0)
			return h_now_ms() - t0;
	}
}

/*
 * A connection that has not said HELLO may not make the daemon buffer a
 * payload (16 MiB each, before), and must say HELLO within 5 s.
 */
START_TEST(anonymous_peers_are_bounded)
{
	struct h_daemon a;
	struct sl_wire_frame f = { .type = SL_WIRE_EAGER, .seq = 1,
				   .payload_len = SL_WIRE_PAYLOAD_MAX };
	uint8_t hdr[SL_WIRE_HDR_MAX];
	long rss0, rss1;
	int fds[20], n, i, idle;
	int64_t ms;

	h_daemon_start(&a, "anon", h_free_port(), NULL, 0);
	rss0 = h_proc_rss_kb(a.pid);
	n = sl_wire_encode(&f, hdr, sizeof(hdr));
	H_ASSERT(n > 0, "encode %d", n);
	for (i = 0; i < 20; i++) {
		fds[i] = h_tcp_connect(a.tcp_port);
		H_EQ(write(fds[i], hdr, (size_t)n), n);
		/* The start of a payload; the daemon may have refused the
		 * header and reset the connection already. */
		if (send(fds[i], hdr, 16, MSG_NOSIGNAL) != 16)
			H_ASSERT(errno == ECONNRESET || errno == EPIPE, "write: %s",
				 strerror(errno));
	}
	for (i = 0; i < 20; i++) {
		ms = ms_until_closed(fds[i], 2000);
		H_ASSERT(ms >= 0, "connection %d still open after 2 s", i);
		close(fds[i]);
	}
	rss1 = h_proc_rss_kb(a.pid);
	H_ASSERT(rss0 > 0 && rss1 > 0, "rss %ld %ld", rss0, rss1);
	H_ASSERT(rss1 - rss0 < 8 * 1024, "daemon grew by %ld KiB", rss1 - rss0);

	idle = h_tcp_connect(a.tcp_port);
	ms = ms_until_closed(idle, 7000);
	H_ASSERT(ms >= 4500 && ms <= 6500, "silent connection closed after %lld ms",
		 (long long)ms);
	close(idle);
	H_ASSERT(h_daemon_alive(&a), "daemon died");
	h_daemon_stop(&a);
}
END_TEST

/*
 * A client at its own fd limit cannot receive the queue's three fds (the
 * kernel drops what does not fit and says MSG_CTRUNC): with 0, 1 or 2
 * slots free the call fails -EMFILE, keeps none of the fds that did
 * arrive (the same slots are free after it), and the daemon's half of the
 * queue is undone (the port was left bound before).
 */
static int free_slots(int *filler, int cap)
{
	int n = 0, fd;

	while (n < cap && (fd = dup(0)) >= 0)
		filler[n++] = fd;
	return n < cap && errno == EMFILE ? n : -1;
}

START_TEST(queue_open_at_fd_limit)
{
	struct h_daemon a;
	pid_t pid;
	int st;

	h_daemon_start(&a, "fdlimit", 0, NULL, 0);
	pid = h_fork();
	if (pid == 0) {
		struct rlimit rl, low;
		struct sl_ctx *ctx;
		struct sl_queue *q;
		int filler[64], nfill, spare[4], nspare, slots, rc;

		if (sl_open(a.sock, &ctx) || getrlimit(RLIMIT_NOFILE, &rl))
			_exit(10);
		low = (struct rlimit){ 64, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &low))
			_exit(11);
		for (slots = 0; slots < 3; slots++) {
			/* Fill the fd table up to the low limit, then free
			 * @slots: the reply's three cannot all arrive. */
			nfill = free_slots(filler, 64);
			if (nfill < slots)
				_exit(15);
			for (rc = 0; rc < slots; rc++)
				close(filler[--nfill]);
			rc = sl_queue_open(ctx, 3333, 4, &q);
			if (rc != -EMFILE) {
				fprintf(stderr, "%d slots free: sl_queue_open %d\n", slots, rc);
				_exit(12);
			}
			/* None of the fds that came was kept. */
			nspare = free_slots(spare, 4);
			if (nspare != slots) {
				fprintf(stderr, "%d slots free: %d free after the failed open\n",
					slots, nspare);
				_exit(16);
			}
			while (nspare)
				close(spare[--nspare]);
			while (nfill)
				close(filler[--nfill]);
		}
		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(13);
		if (sl_queue_open(ctx, 3333, 4, &q) != 0)
			_exit(14);	/* port leaked by the failed open */
		sl_close(ctx);
		_exit(0);
	}
	H_EQ(waitpid(pid, &st, 0), pid);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	h_daemon_stop(&a);
}
END_TEST

/* A client of another control-protocol version is told so (EPROTO). */
START_TEST(control_version_mismatch)
{
	struct h_daemon a;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sl_ctl_req req = { .hdr = { .version = SL_CTL_VERSION + 1,
					   .op = SL_CTL_HELLO, .seq = 77 } };
	struct sl_ctl_rep rep;
	int fd;

	h_daemon_start(&a, "version", 0, NULL, 0);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	H_ASSERT(fd >= 0, "socket");
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", a.sock);
	H_EQ(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	H_EQ(send(fd, &req, sizeof(req), 0), sizeof(req));
	H_EQ(recv(fd, &rep, sizeof(rep), 0), sizeof(rep));
	H_EQ(rep.error, EPROTO);
	H_EQ(rep.hdr.seq, 77);
	H_EQ(recv(fd, &rep, sizeof(rep), 0), 0);	/* then dropped */
	close(fd);
	H_ASSERT(h_daemon_alive(&a), "daemon died");
	h_daemon_stop(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lifecycle");
	TCase *tc = h_tcase(s, "lifecycle", 60);

	tcase_add_test(tc, daemon_gone_is_reported);
	tcase_add_test(tc, sigterm_cancels_pending);
	tcase_add_test(tc, one_daemon_per_runtime_dir);
	tcase_add_test(tc, anonymous_peers_are_bounded);
	tcase_add_test(tc, queue_open_at_fd_limit);
	tcase_add_test(tc, control_version_mismatch);
	tcase_add_test(tc, link_down_wakes_client);
	tcase_add_test(tc, accept_at_fd_limit_backs_off);
	tcase_add_test(tc, max_queues_bound);
	tcase_add_test(tc, client_queue_quotas);
	tcase_add_test(tc, client_inflight_quota);
	tcase_add_test(tc, link_backlog_bound);
	tcase_add_test(tc, credit_window);
	tcase_add_test(tc, arena_bound);
	return h_run_suite(s);
}
