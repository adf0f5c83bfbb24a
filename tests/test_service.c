/*
 * test_service.c - sluiced as a service, with real daemons: SIGHUP reload
 * (log level at run time, a bad file changes nothing, keys that need a
 * restart say so, command-line options keep winning), the SIGTERM drain
 * (exactly one completion per descriptor, in time; posts during the drain
 * canceled; a second SIGTERM stops at once), sd_notify (READY=1,
 * WATCHDOG=1, STATUS=, STOPPING=1 on a socket the test owns),
 * --check-config / --print-config, and systemd-analyze verify of the unit.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"

#define EAGER_LEN 1024u
#define RNDV_LEN (256u * 1024u)		/* above the default eager_max (64K) */
#define RECV_PORT 300u
#define SEND_PORT 200u
#define TAG_DATA 1u
#define TAG_NOBODY 99u			/* receives no message will ever match */
#define MAX_SENDS 1000u
#define N_RECVS 10u
#define CTX_RECV0 100000u		/* user_ctx of the posted receives */
#define CTX_DRAIN_POST 200000u		/* the send posted during the drain */

static void daemon_bin(char *buf, size_t cap)
{
	const char *top = getenv("top_builddir");

	snprintf(buf, cap, "%s/daemon/sluiced", top && *top ? top : ".");
	H_ASSERT(access(buf, X_OK) == 0, "%s: %s (set top_builddir)", buf, strerror(errno));
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	H_ASSERT(f, "%s: %s", path, strerror(errno));
	H_ASSERT(fputs(text, f) >= 0, "%s: write", path);
	H_ASSERT(fclose(f) == 0, "%s: %s", path, strerror(errno));
}

/* The whole of @path (NUL-terminated, malloc'ed); "" if it does not exist. */
static char *read_text(const char *path)
{
	char *buf = calloc(1, 1 << 20);
	ssize_t n;
	int fd;

	H_ASSERT(buf, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return buf;
	n = read(fd, buf, (1 << 20) - 1);
	H_ASSERT(n >= 0, "%s: %s", path, strerror(errno));
	close(fd);
	return buf;
}

static unsigned count_in(const char *text, const char *needle)
{
	unsigned n = 0;

	for (; (text = strstr(text, needle)); text++)
		n++;
	return n;
}

/* Wait (bounded) until @path holds @n occurrences of @needle. */
static void wait_log(const char *path, const char *needle, unsigned n, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	unsigned got;
	char *t;

	for (;;) {
		t = read_text(path);
		got = count_in(t, needle);
		free(t);
		if (got >= n)
			return;
		H_ASSERT(h_now_ms() < deadline, "%s: %u of %u '%s' after %d ms", path, got, n,
			 needle, timeout_ms);
		h_sleep_ms(10);
	}
}

/* Connect and leave: a client the daemon logs at debug ("connected"). */
static void touch_daemon(const char *sock)
{
	struct sl_ctx *ctx;

	H_EQ(sl_open(sock, &ctx), 0);
	sl_close(ctx);
}

/*
 * A daemon of our own, started without --log-level (the harness always
 * passes one, and options win over the file, on reload too): -c
 * DIR/sluiced.conf, stderr to DIR/sluiced.log.  Returns its pid once the
 * control socket answers.
 */
static pid_t own_daemon_start(const char *dir, const char *name)
{
	char bin[256], conf[256], log[256], sock[256];
	struct sl_ctx *ctx;
	int64_t deadline;
	pid_t pid;

	daemon_bin(bin, sizeof(bin));
	snprintf(conf, sizeof(conf), "%s/sluiced.conf", dir);
	snprintf(log, sizeof(log), "%s/sluiced.log", dir);
	snprintf(sock, sizeof(sock), "%s/sluiced.sock", dir);
	pid = h_fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execl(bin, bin, "-c", conf, "--runtime-dir", dir, "--node", name, (char *)NULL);
		_exit(127);
	}
	deadline = h_now_ms() + H_START_TIMEOUT_MS;
	while (sl_open(sock, &ctx) != 0) {
		H_ASSERT(h_now_ms() < deadline, "own daemon %s did not start", name);
		H_ASSERT(waitpid(pid, NULL, WNOHANG) == 0, "own daemon %s exited", name);
		h_sleep_ms(10);
	}
	sl_close(ctx);
	return pid;
}

/* SIGTERM, and require exit status 0 within @timeout_ms. */
static void own_daemon_stop(pid_t pid, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	pid_t w;
	int st;

	H_EQ(kill(pid, SIGTERM), 0);
	while ((w = waitpid(pid, &st, WNOHANG)) == 0) {
		if (h_now_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			H_ASSERT(0, "daemon did not stop within %d ms", timeout_ms);
		}
		h_sleep_ms(5);
	}
	H_EQ(w, pid);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
}

/*
 * SIGHUP re-reads the file: debug lines appear only after a reload sets
 * log_level = debug; a file that does not parse is reported with
 * FILE:LINE and changes nothing (still debug, still running); a key that
 * cannot change at run time says it needs a restart.
 */
START_TEST(reload_log_level)
{
	char dir[] = "/tmp/sl-svc-XXXXXX", conf[64], log[64], sock[64], want[160], *t;
	unsigned before;
	pid_t pid;

	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(conf, sizeof(conf), "%s/sluiced.conf", dir);
	snprintf(log, sizeof(log), "%s/sluiced.log", dir);
	snprintf(sock, sizeof(sock), "%s/sluiced.sock", dir);
	write_text(conf, "[daemon]\nlog_level = info\n");
	pid = own_daemon_start(dir, "reloader");
	touch_daemon(sock);
	h_sleep_ms(100);
	t = read_text(log);
	H_ASSERT(!strstr(t, "debug:"), "debug lines at log_level info:\n%s", t);
	free(t);

	write_text(conf, "[daemon]\nlog_level = debug\n");
	H_EQ(kill(pid, SIGHUP), 0);
	wait_log(log, "reload: [daemon] log_level: info -> debug", 1, 2000);
	wait_log(log, "changes applied", 1, 2000);
	touch_daemon(sock);
	wait_log(log, "connected", 1, 2000);

	/* A bad value on line 3: nothing changes, the daemon keeps running. */
	write_text(conf, "[daemon]\n# comment\nlog_level = loud\n");
	H_EQ(kill(pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "reload: %s:3: [daemon] log_level: 'loud'", conf);
	wait_log(log, want, 1, 2000);
	H_EQ(waitpid(pid, NULL, WNOHANG), 0);
	t = read_text(log);
	before = count_in(t, "connected");
	H_ASSERT(count_in(t, "changes applied") == 1, "a bad file was applied:\n%s", t);
	free(t);
	touch_daemon(sock);
	wait_log(log, "connected", before + 1, 2000);	/* still debug */

	/* Keys that need a restart keep their value and say so. */
	write_text(conf, "[daemon]\nlog_level = debug\nclient_group = nosuchgroup\n"
			 "[transport]\neager_max = 32K\n");
	H_EQ(kill(pid, SIGHUP), 0);
	wait_log(log, "reload: [transport] eager_max changed: needs a restart", 1, 2000);
	wait_log(log, "reload: [daemon] client_group changed: needs a restart", 1, 2000);
	wait_log(log, "0 changes applied, 2 need a restart", 1, 2000);
	H_EQ(waitpid(pid, NULL, WNOHANG), 0);
	touch_daemon(sock);	/* the socket kept its group: still ours */

	own_daemon_stop(pid, 3000);
	h_remove_dir(dir);
}
END_TEST

/* --log-level on the command line keeps winning over the file on reload. */
START_TEST(reload_options_win)
{
	struct h_daemon a;
	char conf[160], *t;

	H_EQ(setenv("SLUICE_TEST_LOG_LEVEL", "info", 1), 0);	/* --log-level info */
	h_daemon_start_conf(&a, "optwins", 0, NULL, 0, "[daemon]\nlog_level = warn\n");
	snprintf(conf, sizeof(conf), "%s/sluiced.conf", a.dir);
	write_text(conf, "[daemon]\nlog_level = debug\nshutdown_drain_ms = 100\n");
	H_EQ(kill(a.pid, SIGHUP), 0);
	wait_log(a.log, "1 changes applied, 0 need a restart", 1, 2000);
	touch_daemon(a.sock);
	h_sleep_ms(100);
	t = read_text(a.log);
	H_ASSERT(!strstr(t, "log_level"), "log_level changed over --log-level:\n%s", t);
	H_ASSERT(!strstr(t, "connected"), "debug lines over --log-level info:\n%s", t);
	H_ASSERT(strstr(t, "reload: [daemon] shutdown_drain_ms: 5000 -> 100"), "%s", t);
	free(t);
	h_daemon_stop(&a);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The drain                                                            */
/* ------------------------------------------------------------------ */

/* What the sending client saw, reported to the test through a pipe. */
struct send_report {
	unsigned sends, ok, canceled, other, dups, unknown;
	unsigned recvs_canceled, recvs_other;
	int drain_post_status;		/* -1: no completion */
	int64_t drain_post_at, drain_post_done;	/* h_now_ms() */
	int drain_post_rc;
	int error;			/* a client call failed: -errno */
};

struct send_plan {
	const char *sock;		/* the sender's daemon */
	uint32_t dst_node;
	unsigned n_sends;
	unsigned rndv_every;		/* every Nth send is a rendezvous; 0 none */
	bool drain_post;		/* post one more send once the drain began */
};

static void report_put(int fd, const struct send_report *r)
{
	ssize_t n = write(fd, r, sizeof(*r));

	_exit(n == (ssize_t)sizeof(*r) ? 0 : 1);
}

static void tally(struct send_report *r, unsigned char *seen, const struct sl_cqe *c)
{
	uint64_t ctx = c->user_ctx;

	if (ctx == CTX_DRAIN_POST) {
		r->drain_post_status = c->status;
		r->drain_post_done = h_now_ms();
	} else if (ctx >= CTX_RECV0 && ctx < CTX_RECV0 + N_RECVS) {
		if (c->status == SL_ERR_CANCELED)
			r->recvs_canceled++;
		else
			r->recvs_other++;
		if (seen[MAX_SENDS + ctx - CTX_RECV0]++)
			r->dups++;
	} else if (ctx < MAX_SENDS) {
		if (seen[ctx]++)
			r->dups++;
		if (c->status == SL_OK)
			r->ok++;
		else if (c->status == SL_ERR_CANCELED)
			r->canceled++;
		else
			r->other++;
	} else {
		r->unknown++;
	}
}

/*
 * The sending client (a child): posts N_RECVS receives nobody will match
 * and @p->n_sends sends, says 'p' on @to_test, then collects completions
 * until the test says 'g' (the daemon is gone) on @from_test; meanwhile,
 * once the control socket disappears (the drain began), posts one more
 * send.  Reports on @to_test and exits.
 */
static void sender(const struct send_plan *p, int to_test, int from_test)
{
	static unsigned char seen[MAX_SENDS + N_RECVS];
	struct send_report r = { .drain_post_status = -1 };
	struct sl_cqe cqes[64];
	struct sl_queue *q;
	struct sl_ctx *ctx;
	uint8_t *eager, *big, *rbuf, b;
	unsigned i;
	int rc;

	if ((r.error = sl_open(p->sock, &ctx)) ||
	    (r.error = sl_queue_open(ctx, SEND_PORT, 2048, &q)))
		report_put(to_test, &r);
	eager = sl_alloc(q, EAGER_LEN);
	big = sl_alloc(q, RNDV_LEN);
	rbuf = sl_alloc(q, 64);
	if (!eager || !big || !rbuf) {
		r.error = -ENOMEM;
		report_put(to_test, &r);
	}
	for (i = 0; i < N_RECVS; i++)
		if ((r.error = sl_recv(q, SL_ANY_SOURCE, TAG_NOBODY, ~0ull, rbuf, 64,
				       CTX_RECV0 + i)))
			report_put(to_test, &r);
	for (i = 0; i < p->n_sends; i++) {
		bool rndv = p->rndv_every && i % p->rndv_every == p->rndv_every - 1;

		rc = sl_send(q, (sl_addr_t){ p->dst_node, RECV_PORT }, TAG_DATA,
			     rndv ? big : eager, rndv ? RNDV_LEN : EAGER_LEN, i);
		if (rc) {
			r.error = rc;
			report_put(to_test, &r);
		}
		r.sends++;
	}
	if (h_write_byte(to_test, 'p') < 0)
		_exit(1);
	for (;;) {
		rc = sl_poll(q, cqes, 64);
		for (i = 0; rc > 0 && i < (unsigned)rc; i++)
			tally(&r, seen, &cqes[i]);
		if (p->drain_post && !r.drain_post_at && access(p->sock, F_OK) < 0) {
			r.drain_post_at = h_now_ms();
			r.drain_post_rc = sl_send(q, (sl_addr_t){ p->dst_node, RECV_PORT },
						  TAG_DATA, eager, EAGER_LEN, CTX_DRAIN_POST);
		}
		if (rc > 0)
			continue;
		if (h_read_byte(from_test, &b, 1) == 1)
			break;
	}
	/* The daemon is gone: what it wrote is all in the ring. */
	while ((rc = sl_poll(q, cqes, 64)) > 0)
		for (i = 0; i < (unsigned)rc; i++)
			tally(&r, seen, &cqes[i]);
	report_put(to_test, &r);
}

/* The receiving client (a child): one receive at a time at RECV_PORT,
 * @delay_ms between them (negative: post none, only hold the port);
 * says 'r' on @ready once the port is bound, runs until killed. */
static void receiver(const char *sock, int delay_ms, int ready)
{
	struct sl_queue *q;
	struct sl_ctx *ctx;
	struct sl_cqe cqe;
	uint8_t *buf;
	unsigned i;

	if (sl_open(sock, &ctx) || sl_queue_open(ctx, RECV_PORT, 1024, &q))
		_exit(1);
	buf = sl_alloc(q, RNDV_LEN);
	if (!buf || h_write_byte(ready, 'r') < 0)
		_exit(1);
	if (delay_ms < 0)
		for (;;)
			pause();
	if (delay_ms == 0) {
		/* Fast: every receive posted up front. */
		for (i = 0; i < 1000; i++)
			if (sl_recv(q, SL_ANY_SOURCE, TAG_DATA, ~0ull, buf, RNDV_LEN, i))
				_exit(1);
		for (;;)
			pause();
	}
	for (i = 0;; i++) {
		if (sl_recv(q, SL_ANY_SOURCE, TAG_DATA, ~0ull, buf, RNDV_LEN, i))
			_exit(1);
		if (h_wait_cqe(q, &cqe, 60000) != 1)
			_exit(1);
		h_sleep_ms(delay_ms);
	}
}

struct drain_run {
	struct h_daemon a, b;		/* a sends to b */
	pid_t recv_pid, send_pid;
	int to_test[2], from_test[2];
	struct send_report r;
	int64_t stop_ms;		/* how long h_daemon_stop(a) took */
	int64_t stop_end;
};

static void drain_setup(struct drain_run *dr, const char *conf_a, int recv_delay_ms,
			const struct send_plan *plan_in)
{
	static const char *const names[] = { "drainer", "catcher" };
	const char *confs[2] = { conf_a, NULL };
	struct h_daemon ds[2];
	struct send_plan plan = *plan_in;
	int ready[2];
	uint8_t b;

	h_cluster_start_confs(ds, names, 2, confs);
	dr->a = ds[0];
	dr->b = ds[1];
	H_EQ(pipe(ready), 0);
	dr->recv_pid = h_fork();
	if (dr->recv_pid == 0)
		receiver(dr->b.sock, recv_delay_ms, ready[1]);
	H_EQ(h_read_byte(ready[0], &b, 5000), 1);
	close(ready[0]);
	close(ready[1]);
	H_EQ(pipe(dr->to_test), 0);
	H_EQ(pipe(dr->from_test), 0);
	plan.sock = dr->a.sock;
	plan.dst_node = dr->b.node;
	dr->send_pid = h_fork();
	if (dr->send_pid == 0)
		sender(&plan, dr->to_test[1], dr->from_test[0]);
	H_EQ(h_read_byte(dr->to_test[0], &b, 10000), 1);
	H_ASSERT(b == 'p', "sender failed before posting (%c)", b);
}

/* Stop a (one more SIGTERM through the harness: exit 0 required), time
 * it, collect the sender's report, stop b. */
static void drain_finish(struct drain_run *dr)
{
	int64_t t0 = h_now_ms();
	int st;

	h_daemon_stop(&dr->a);
	dr->stop_end = h_now_ms();
	dr->stop_ms = dr->stop_end - t0;
	H_EQ(h_write_byte(dr->from_test[1], 'g'), 0);
	H_EQ(read(dr->to_test[0], &dr->r, sizeof(dr->r)), (ssize_t)sizeof(dr->r));
	h_wait_children(&dr->send_pid, 1, 5000, &st);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender status %d", st);
	H_EQ(dr->r.error, 0);
	fprintf(stderr, "drain: %u sends: %u ok, %u canceled; stop took %lld ms\n",
		dr->r.sends, dr->r.ok, dr->r.canceled, (long long)dr->stop_ms);
	kill(dr->recv_pid, SIGKILL);
	h_wait_children(&dr->recv_pid, 1, 5000, &st);
	h_daemon_stop(&dr->b);
}

/* Every send and receive completed exactly once with an allowed status. */
static void expect_exactly_once(const struct drain_run *dr, unsigned n_sends)
{
	const struct send_report *r = &dr->r;

	H_EQ(r->sends, n_sends);
	H_EQ(r->dups, 0);
	H_EQ(r->unknown, 0);
	H_EQ(r->other, 0);
	H_EQ(r->ok + r->canceled, n_sends);
	H_EQ(r->recvs_canceled, N_RECVS);
	H_EQ(r->recvs_other, 0);
}

/*
 * SIGTERM with 1,000 sends (every fourth a rendezvous) in flight to a
 * receiver that takes one message every 5 ms: the drain runs its whole
 * shutdown_drain_ms, sends finish meanwhile, the rest complete canceled;
 * each send exactly once; the posted receives canceled once; a send
 * posted during the drain canceled at once, while the daemon drains.
 */
START_TEST(drain_deadline)
{
	const struct send_plan plan = { .n_sends = MAX_SENDS, .rndv_every = 4,
					.drain_post = true };
	struct drain_run dr;

	drain_setup(&dr, "[daemon]\nshutdown_drain_ms = 1500\n", 5, &plan);
	h_sleep_ms(200);
	drain_finish(&dr);
	expect_exactly_once(&dr, MAX_SENDS);
	H_ASSERT(dr.r.ok > 0 && dr.r.canceled > 0, "ok %u canceled %u: no drain to its end",
		 dr.r.ok, dr.r.canceled);
	H_ASSERT(dr.stop_ms >= 1400 && dr.stop_ms <= 1500 + 1500,
		 "stopped in %lld ms with shutdown_drain_ms 1500", (long long)dr.stop_ms);
	H_ASSERT(dr.r.drain_post_at, "the drain never closed the control socket");
	H_EQ(dr.r.drain_post_rc, 0);
	H_EQ(dr.r.drain_post_status, SL_ERR_CANCELED);
	H_ASSERT(dr.r.drain_post_done - dr.r.drain_post_at < 300,
		 "a post during the drain took %lld ms to be canceled",
		 (long long)(dr.r.drain_post_done - dr.r.drain_post_at));
	H_ASSERT(dr.r.drain_post_done < dr.stop_end - 500,
		 "the drain post completed only %lld ms before the exit",
		 (long long)(dr.stop_end - dr.r.drain_post_done));
}
END_TEST

/* A receiver that keeps up: the drain ends as soon as every send has
 * completed, all SL_OK, well before shutdown_drain_ms. */
START_TEST(drain_completes)
{
	const struct send_plan plan = { .n_sends = 200, .rndv_every = 4 };
	struct drain_run dr;

	drain_setup(&dr, "[daemon]\nshutdown_drain_ms = 4000\n", 0, &plan);
	drain_finish(&dr);
	expect_exactly_once(&dr, 200);
	H_EQ(dr.r.ok, 200);
	H_ASSERT(dr.stop_ms < 3000, "stopped in %lld ms: the drain did not end early",
		 (long long)dr.stop_ms);
}
END_TEST

/* A second SIGTERM during the drain stops at once; what was in flight
 * (rendezvous sends nobody receives) completes canceled, once. */
START_TEST(drain_second_signal)
{
	const struct send_plan plan = { .n_sends = 20, .rndv_every = 1 };
	struct drain_run dr;

	drain_setup(&dr, "[daemon]\nshutdown_drain_ms = 4500\n", -1, &plan);
	h_sleep_ms(100);
	H_EQ(kill(dr.a.pid, SIGTERM), 0);
	h_sleep_ms(300);
	H_ASSERT(h_daemon_alive(&dr.a), "the daemon did not drain");
	drain_finish(&dr);	/* the second SIGTERM */
	H_ASSERT(dr.stop_ms < 1000, "second SIGTERM: stopped in %lld ms",
		 (long long)dr.stop_ms);
	expect_exactly_once(&dr, 20);
	H_EQ(dr.r.canceled, 20);
}
END_TEST

/*
 * The stopping daemon as a receiver: nothing arriving during its drain
 * may be taken and then dropped.  B holds RECV_PORT with no receive
 * posted and keeps its drain going with a rendezvous send nobody takes;
 * A's client sends 10 messages before B's SIGTERM (SL_OK: they wait in
 * B) and 10 during the drain: each of those completes once with
 * SL_ERR_PEER_DOWN while B still drains (no receive could ever be
 * posted for them there), not SL_OK; a queue open on B meanwhile gets
 * -ESHUTDOWN.
 */
START_TEST(drain_refuses_arrivals)
{
	static const char *const names[] = { "sender", "stopper" };
	const char *confs[2] = { NULL, "[daemon]\nshutdown_drain_ms = 4000\n" };
	struct h_daemon ds[2];
	struct sl_ctx *actx, *bctx;
	struct sl_queue *aq, *bq, *bq2;
	struct sl_cqe cqe;
	uint8_t *abuf, *bbig;
	unsigned i;

	h_cluster_start_confs(ds, names, 2, confs);
	H_EQ(sl_open(ds[0].sock, &actx), 0);
	H_EQ(sl_queue_open(actx, SEND_PORT, 64, &aq), 0);
	H_EQ(sl_open(ds[1].sock, &bctx), 0);
	H_EQ(sl_queue_open(bctx, RECV_PORT, 64, &bq), 0);
	abuf = sl_alloc(aq, EAGER_LEN);
	bbig = sl_alloc(bq, RNDV_LEN);
	H_ASSERT(abuf && bbig, "sl_alloc");
	H_EQ(sl_send(bq, (sl_addr_t){ ds[0].node, SEND_PORT }, TAG_NOBODY, bbig, RNDV_LEN, 1), 0);
	for (i = 0; i < 10; i++)
		H_EQ(sl_send(aq, (sl_addr_t){ ds[1].node, RECV_PORT }, TAG_DATA, abuf, EAGER_LEN,
			     i), 0);
	for (i = 0; i < 10; i++) {
		H_EQ(h_wait_cqe(aq, &cqe, 5000), 1);
		H_ASSERT(cqe.user_ctx == i && cqe.status == SL_OK, "before: ctx %llu %s",
			 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	}
	H_EQ(kill(ds[1].pid, SIGTERM), 0);
	h_sleep_ms(300);
	H_ASSERT(h_daemon_alive(&ds[1]), "B did not drain");
	/* Nor does a client of B get a new queue meanwhile. */
	H_EQ(sl_queue_open(bctx, RECV_PORT + 1, 8, &bq2), -ESHUTDOWN);
	for (i = 10; i < 20; i++)
		H_EQ(sl_send(aq, (sl_addr_t){ ds[1].node, RECV_PORT }, TAG_DATA, abuf, EAGER_LEN,
			     i), 0);
	for (i = 10; i < 20; i++) {
		H_EQ(h_wait_cqe(aq, &cqe, 2000), 1);
		H_ASSERT(cqe.user_ctx == i && cqe.status == SL_ERR_PEER_DOWN,
			 "during the drain: ctx %llu %s", (unsigned long long)cqe.user_ctx,
			 sl_strerror(cqe.status));
	}
	H_ASSERT(h_daemon_alive(&ds[1]), "B stopped before the arrivals were refused");
	H_ASSERT(h_wait_cqe(aq, &cqe, 100) == 0, "one more: ctx %llu %s",
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	h_daemon_stop(&ds[1]);	/* the second SIGTERM ends its drain */
	sl_close(bctx);
	sl_close(actx);
	h_daemon_stop(&ds[0]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* sd_notify                                                            */
/* ------------------------------------------------------------------ */

/* Append datagrams from @fd to @acc (cap bytes) for up to @ms. */
static void notify_read(int fd, char *acc, size_t cap, int ms)
{
	int64_t deadline = h_now_ms() + ms;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t len = strlen(acc);
	ssize_t n;

	while (h_now_ms() < deadline && len + 1 < cap) {
		if (poll(&pfd, 1, (int)(deadline - h_now_ms())) <= 0)
			continue;
		n = recv(fd, acc + len, cap - len - 1, MSG_DONTWAIT);
		if (n <= 0)
			continue;
		len += (size_t)n;
		acc[len++] = '\n';	/* datagrams need not end in one */
		acc[len] = '\0';
	}
}

/* ------------------------------------------------------------------ */
/* Signals while the daemon starts                                      */
/* ------------------------------------------------------------------ */

/*
 * SIGHUP (reload) and SIGUSR1 (statistics) terminate a process by
 * default, and sluiced took them over only when its loop's watchers
 * started, after the configuration, the keys and the transport: a reload
 * or a statistics request (a monitoring timer, logrotate) that came while
 * it started killed it (exit by signal 10, seen in the Soft-RoCE suite).
 * The daemon now blocks both as main() begins, so they wait for the loop.
 * A second process signals every starting daemon, as soon as its
 * /proc/PID/status shows them blocked, until the start returns; each
 * daemon must come up, answer, and stop cleanly.
 */
#define STORM_SIGS ((1ull << (SIGHUP - 1)) | (1ull << (SIGUSR1 - 1)))
#define STORM_ROUNDS_MAX 100	/* starts until one was signalled while starting */

struct storm {
	volatile int stop;
	volatile int starting;		/* the parent is inside h_daemon_start() */
	volatile unsigned early;	/* signals sent while it was */
};

/* The pid of a running sluiced whose parent is @parent, or 0. */
static pid_t storm_find(pid_t parent)
{
	DIR *dp = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	if (!dp)
		return 0;
	while (!found && (e = readdir(dp))) {
		char path[300], buf[256], *close_paren;
		int ppid;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && strstr(buf, " (sluiced) ") &&
		    (close_paren = strrchr(buf, ')')) &&
		    sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == (int)parent)
			found = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(dp);
	return found;
}

/* Does @pid block SIGHUP and SIGUSR1 now? */
static bool storm_blocked(pid_t pid)
{
	char path[64], line[128];
	unsigned long long mask = 0;
	bool seen = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1) {
			seen = true;
			break;
		}
	fclose(f);
	return seen && (mask & STORM_SIGS) == STORM_SIGS;
}

START_TEST(signals_during_start)
{
	struct storm *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct h_daemon a;
	unsigned round, sent_before = 0;
	pid_t parent = getpid(), storm;
	int status;

	H_ASSERT(st != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(st, 0, sizeof(*st));
	storm = h_fork();
	if (storm == 0) {
		while (!st->stop) {
			pid_t pid = st->starting ? storm_find(parent) : 0;

			if (pid > 0 && storm_blocked(pid) && st->starting &&
			    kill(pid, SIGHUP) == 0 && kill(pid, SIGUSR1) == 0)
				st->early++;
			else
				sched_yield();
		}
		_exit(0);
	}
	for (round = 0; round < STORM_ROUNDS_MAX; round++) {
		st->starting = 1;
		h_daemon_start(&a, "stormed", 0, NULL, 0);
		st->starting = 0;
		/* Alive, and its statistics signal works (a fresh file). */
		H_EQ(h_daemon_stat(&a, "daemon.sqes"), 0);
		h_daemon_stop(&a);	/* asserts exit status 0, not a signal */
		if (st->early > sent_before)
			break;
		sent_before = st->early;
	}
	st->stop = 1;
	H_EQ(waitpid(storm, &status, 0), storm);
	H_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "signaller: status %#x", status);
	printf("signals_during_start: %u SIGHUP+SIGUSR1 pairs during %u start(s)\n", st->early,
	       round + 1 > STORM_ROUNDS_MAX ? STORM_ROUNDS_MAX : round + 1);
	H_ASSERT(st->early > 0, "in %u starts sluiced never showed SIGHUP and SIGUSR1 blocked "
		 "while starting (/proc/PID/status SigBlk): a reload or statistics request "
		 "during its start would kill it", STORM_ROUNDS_MAX);
	munmap(st, sizeof(*st));
}
END_TEST

START_TEST(notify_ready_watchdog_stopping)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	static char acc[1 << 16];
	struct h_daemon a;
	char *ready;
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/sl-notify-%d.sock", (int)getpid());
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	H_ASSERT(fd >= 0, "socket: %s", strerror(errno));
	H_EQ(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	H_EQ(setenv("NOTIFY_SOCKET", sun.sun_path, 1), 0);
	H_EQ(setenv("WATCHDOG_USEC", "200000", 1), 0);	/* pings every 100 ms */
	h_daemon_start(&a, "notified", 0, NULL, 0);
	H_EQ(unsetenv("NOTIFY_SOCKET"), 0);
	H_EQ(unsetenv("WATCHDOG_USEC"), 0);

	notify_read(fd, acc, sizeof(acc), 1000);
	ready = strstr(acc, "READY=1\n");
	H_ASSERT(ready, "no READY=1 within 1 s of the socket answering:\n%s", acc);
	H_ASSERT(strstr(acc, "STATUS=0 clients, 0 queues, links up 0/0"), "%s", acc);
	H_ASSERT(count_in(ready, "WATCHDOG=1") >= 5, "%u WATCHDOG=1 in 1 s:\n%s",
		 count_in(ready, "WATCHDOG=1"), acc);
	H_ASSERT(!strstr(acc, "STOPPING=1"), "%s", acc);
	h_daemon_stop(&a);
	notify_read(fd, acc, sizeof(acc), 300);
	H_ASSERT(strstr(ready, "STOPPING=1"), "no STOPPING=1 at SIGTERM:\n%s", acc);
	close(fd);
	unlink(sun.sun_path);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --check-config, --print-config, the unit                             */
/* ------------------------------------------------------------------ */

/* More --peer options than the old cap of 256: there is none now. */
#define CONFIG_TEST_PEERS 300

START_TEST(check_and_print_config)
{
	char dir[] = "/tmp/sl-svc-XXXXXX", bin[256], good[64], bad[64], printed[64];
	static char out[1 << 16], again[1 << 16];
	int rc;

	daemon_bin(bin, sizeof(bin));
	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(good, sizeof(good), "%s/good.conf", dir);
	snprintf(bad, sizeof(bad), "%s/bad.conf", dir);
	snprintf(printed, sizeof(printed), "%s/printed.conf", dir);
	/* max_queues 64: the check's descriptor warning (fd_limits.h) would
	 * join "configuration OK" under a hard RLIMIT_NOFILE below 3,106. */
	write_text(good, "[daemon]\nnode = n1\nshutdown_drain_ms = 77\n"
			 "[transport]\nlisten = 127.0.0.1:7400\n[limits]\nmax_queues = 64\n"
			 "[peers]\nn2 = 10.0.0.2:7400\n");
	write_text(bad, "[daemon]\nnode = n1\n\ncolour = blue\n");

	rc = h_run((const char *const[]){ bin, "--check-config", "-c", good, NULL }, out,
		   sizeof(out), 5000);
	H_EQ(rc, 0);
	H_ASSERT(strcmp(out, "sluiced: configuration OK\n") == 0, "%s", out);
	rc = h_run((const char *const[]){ bin, "--check-config", "-c", bad, NULL }, out,
		   sizeof(out), 5000);
	H_EQ(rc, 2);
	H_ASSERT(strstr(out, ":4: [daemon] colour: unknown key"), "%s", out);
	rc = h_run((const char *const[]){ bin, "--print-config", "-c", bad, NULL }, out,
		   sizeof(out), 5000);
	H_EQ(rc, 2);

	/* The command line obeys the file's rules for peers (before: two
	 * --peer of one name, or one for a name in [peers], passed the check
	 * and started two links for one node); their number has no cap. */
	rc = h_run((const char *const[]){ bin, "--check-config", "--listen", "127.0.0.1:7400",
					  "--peer", "a=127.0.0.1:7401", "--peer",
					  "a=127.0.0.1:7402", NULL }, out, sizeof(out), 5000);
	H_EQ(rc, 2);
	H_ASSERT(strcmp(out, "sluiced: the command line: peer 'a' is listed twice\n") == 0,
		 "%s", out);
	rc = h_run((const char *const[]){ bin, "--check-config", "-c", good, "--peer",
					  "n2=10.0.0.3:7400", NULL }, out, sizeof(out), 5000);
	H_EQ(rc, 2);
	H_ASSERT(strstr(out, "good.conf with the command line: peer 'n2' is listed twice\n"),
		 "%s", out);
	{
		static char peer_args[CONFIG_TEST_PEERS + 1][32];
		const char *argv[2 * (CONFIG_TEST_PEERS + 1) + 5] = { bin, "--check-config",
								      "--listen", "127.0.0.1:7400" };
		unsigned i, n = 4;

		for (i = 0; i <= CONFIG_TEST_PEERS; i++) {
			snprintf(peer_args[i], sizeof(peer_args[i]), "p%u=127.0.0.1:%u", i,
				 8000 + i);
			argv[n++] = "--peer";
			argv[n++] = peer_args[i];
		}
		argv[n] = NULL;
		rc = h_run(argv, out, sizeof(out), 5000);
		H_EQ(rc, 0);
		H_ASSERT(strcmp(out, "sluiced: configuration OK\n") == 0, "%s", out);
	}

	/* Options show in the effective configuration; printed, it reads back
	 * (as the only input) to the same text. */
	rc = h_run((const char *const[]){ bin, "--print-config", "-c", good, "--log-level",
					  "debug", NULL }, out, sizeof(out), 5000);
	H_EQ(rc, 0);
	H_ASSERT(strstr(out, "\nlog_level = debug\n") && strstr(out, "\nshutdown_drain_ms = 77\n") &&
		 strstr(out, "\nn2 = 10.0.0.2:7400\n") && strstr(out, "\n#reg_fail_after ="),
		 "%s", out);
	write_text(printed, out);
	rc = h_run((const char *const[]){ bin, "--print-config", "-c", printed, NULL }, again,
		   sizeof(again), 5000);
	H_EQ(rc, 0);
	H_ASSERT(strcmp(out, again) == 0, "printed config differs when read back:\n%s\n---\n%s",
		 out, again);
	h_remove_dir(dir);
}
END_TEST

/*
 * --check-config says what the start would refuse (before: the shipped
 * sluiced.conf passed the check, then the start stopped with "client_group
 * sluice: no such group", without file, line or way out).  Both name the
 * file and line and what to do; a missing admin_group is a warning only.
 */
START_TEST(check_config_agrees_with_start)
{
	char dir[] = "/tmp/sl-svc-XXXXXX", bin[256], conf[64], ok_conf[64], rt[64];
	static char out[1 << 16];
	const char *want = ":3: [daemon] client_group sl-no-such-group: no such group on this "
			   "host; create it (systemd-sysusers creates the package's groups from "
			   "sysusers.d/sluice.conf) or set client_group empty";
	int rc;

	daemon_bin(bin, sizeof(bin));
	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(conf, sizeof(conf), "%s/groups.conf", dir);
	snprintf(ok_conf, sizeof(ok_conf), "%s/admin.conf", dir);
	snprintf(rt, sizeof(rt), "%s/run", dir);
	write_text(conf, "[daemon]\nnode = n1\nclient_group = sl-no-such-group\n");
	write_text(ok_conf, "[daemon]\nnode = n1\nclient_group = root\n"
			    "admin_group = sl-no-such-admins\n");

	rc = h_run((const char *const[]){ bin, "--check-config", "-c", conf, NULL }, out,
		   sizeof(out), 5000);
	H_EQ(rc, 1);
	H_ASSERT(strstr(out, conf) && strstr(out, want), "--check-config said:\n%s", out);
	rc = h_run((const char *const[]){ bin, "-c", conf, "--runtime-dir", rt, NULL }, out,
		   sizeof(out), 5000);
	H_EQ(rc, 1);
	H_ASSERT(strstr(out, conf) && strstr(out, want), "the start said:\n%s", out);

	rc = h_run((const char *const[]){ bin, "--check-config", "-c", ok_conf, NULL }, out,
		   sizeof(out), 5000);
	H_EQ(rc, 0);
	H_ASSERT(strstr(out, ":4: [daemon] admin_group sl-no-such-admins: no such group on "
			"this host; until it exists only root and the daemon's own user may "
			"use sluicectl") && strstr(out, "sluiced: configuration OK\n"),
		 "--check-config said:\n%s", out);
	h_remove_dir(dir);
}
END_TEST

/* systemd-analyze verify of conf/sluiced.service, with its binary paths
 * pointed at the built daemon (verify wants them to exist). */
START_TEST(unit_verifies)
{
	char tool[256], bin[PATH_MAX], unit[PATH_MAX], dir[] = "/tmp/sl-unit-XXXXXX", copy[64];
	char *t, *p;
	const char *src = getenv("top_srcdir");
	static char out[1 << 16];
	FILE *f;
	int rc;

	if (!h_tool("systemd-analyze", tool, sizeof(tool))) {
		fprintf(stderr, "SKIPPED: unit_verifies: systemd-analyze is not installed\n");
		return;
	}
	daemon_bin(bin, sizeof(bin));
	H_ASSERT(realpath(bin, unit), "realpath %s: %s", bin, strerror(errno));
	memcpy(bin, unit, sizeof(bin));
	snprintf(unit, sizeof(unit), "%s/conf/sluiced.service", src && *src ? src : "..");
	t = read_text(unit);
	H_ASSERT(strstr(t, "Type=notify\n"), "%s: no Type=notify", unit);
	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(copy, sizeof(copy), "%s/sluiced.service", dir);
	f = fopen(copy, "w");
	H_ASSERT(f, "%s: %s", copy, strerror(errno));
	for (p = t; *p; p++) {
		if (strncmp(p, "/usr/sbin/sluiced", 17) == 0) {
			fputs(bin, f);
			p += 16;
		} else {
			fputc(*p, f);
		}
	}
	H_EQ(fclose(f), 0);
	free(t);
	rc = h_run((const char *const[]){ tool, "verify", "--man=no", copy, NULL }, out,
		   sizeof(out), 30000);
	H_ASSERT(rc == 0 && !strstr(out, "sluiced.service"), "systemd-analyze verify: %d\n%s",
		 rc, out);
	h_remove_dir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("service");
	TCase *tc;

	tc = h_tcase(s, "reload", 20);
	tcase_add_test(tc, reload_log_level);
	tcase_add_test(tc, reload_options_win);
	tc = h_tcase(s, "drain", 60);
	tcase_add_test(tc, drain_deadline);
	tcase_add_test(tc, drain_completes);
	tcase_add_test(tc, drain_second_signal);
	tcase_add_test(tc, drain_refuses_arrivals);
	tc = h_tcase(s, "notify", 20);
	tcase_add_test(tc, notify_ready_watchdog_stopping);
	tcase_add_test(tc, signals_during_start);
	tc = h_tcase(s, "config", 30);
	tcase_add_test(tc, check_and_print_config);
	tcase_add_test(tc, check_config_agrees_with_start);
	tcase_add_test(tc, unit_verifies);
	return h_run_suite(s);
}
