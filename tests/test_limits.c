/*
 * test_limits.c - limits that one process or one user could exhaust for
 * every other (docs/limits.md): the daemon's file descriptors, ...
 * Each attack runs beside bystander clients that must see nothing.
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sl_shm.h"
#include "sluice.h"
#include "testutil.h"

#define RUN_TIMEOUT_MS 15000

/* ------------------------------------------------------------------ */
/* Bystanders: two queues of one context, sending to each other.       */
/* ------------------------------------------------------------------ */

struct bystander {
	struct sl_ctx *ctx;
	struct sl_queue *tx, *rx;
	uint8_t *sbuf, *rbuf;
	unsigned round;
};

#define BY_MSGS 16
#define BY_LEN 1000

static void bystander_open(struct bystander *b, const struct h_daemon *d, uint32_t port)
{
	memset(b, 0, sizeof(*b));
	H_EQ(sl_open(d->sock, &b->ctx), 0);
	H_EQ(sl_queue_open(b->ctx, port, 64, &b->tx), 0);
	H_EQ(sl_queue_open(b->ctx, port + 1, 64, &b->rx), 0);
	b->sbuf = sl_alloc(b->tx, BY_MSGS * BY_LEN);
	b->rbuf = sl_alloc(b->rx, BY_MSGS * BY_LEN);
	H_ASSERT(b->sbuf && b->rbuf, "bystander: sl_alloc");
}

/* BY_MSGS messages tx -> rx: every completion SL_OK, every byte right. */
static void bystander_exchange(struct bystander *b, const char *when)
{
	sl_addr_t to = sl_queue_addr(b->rx);
	unsigned i, sends = 0, recvs = 0;
	struct sl_cqe cqe;

	b->round++;
	for (i = 0; i < BY_MSGS; i++) {
		memset(b->sbuf + i * BY_LEN, (int)(b->round * 31 + i), BY_LEN);
		memset(b->rbuf + i * BY_LEN, 0, BY_LEN);
		H_EQ(sl_recv(b->rx, SL_ANY_SOURCE, i, ~0ull, b->rbuf + i * BY_LEN, BY_LEN, i), 0);
		H_EQ(sl_send(b->tx, to, i, b->sbuf + i * BY_LEN, BY_LEN, i), 0);
	}
	while (sends < BY_MSGS) {
		int rc = h_wait_cqe(b->tx, &cqe, 5000);

		H_ASSERT(rc == 1, "bystander %s: send completion %u: %d", when, sends, rc);
		H_ASSERT(cqe.status == SL_OK, "bystander %s: send status %s", when,
			 sl_strerror(cqe.status));
		sends++;
	}
	while (recvs < BY_MSGS) {
		int rc = h_wait_cqe(b->rx, &cqe, 5000);

		H_ASSERT(rc == 1, "bystander %s: receive completion %u: %d", when, recvs, rc);
		H_ASSERT(cqe.status == SL_OK && cqe.len == BY_LEN, "bystander %s: %s len %llu",
			 when, sl_strerror(cqe.status), (unsigned long long)cqe.len);
		recvs++;
	}
	for (i = 0; i < BY_MSGS; i++)
		H_ASSERT(memcmp(b->sbuf + i * BY_LEN, b->rbuf + i * BY_LEN, BY_LEN) == 0,
			 "bystander %s: message %u differs", when, i);
}

/* ------------------------------------------------------------------ */
/* File descriptors                                                     */
/* ------------------------------------------------------------------ */

#define FD_LIMIT 256
#define STORM 64
/* A refusal is immediate; on a busy machine 64 processes still need the
 * scheduler, so the bound per call is wider than case C20's 100 ms
 * (measured: see docs/limits.md). */
#define STORM_BOUND_MS 2000

static void set_daemon_fd_limit(const struct h_daemon *d, rlim_t n)
{
	struct rlimit rl = { .rlim_cur = n, .rlim_max = n };

	H_ASSERT(prlimit(d->pid, RLIMIT_NOFILE, &rl, NULL) == 0, "prlimit: %s",
		 strerror(errno));
}

/*
 * A raw control connection: connect, send HELLO, wait up to @wait_ms for
 * the reply.  Returns the fd (reply OK, *err 0), or -1 with *err the
 * refusal's errno, or -ETIMEDOUT when nothing came.
 */
static int raw_hello(const struct h_daemon *d, int wait_ms, int *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sl_ctl_req req = { .hdr = { .version = SL_CTL_VERSION, .op = SL_CTL_HELLO,
					   .seq = 1 } };
	struct sl_ctl_rep rep;
	struct pollfd p;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t n;

	H_ASSERT(fd >= 0, "socket: %s", strerror(errno));
	strcpy(sun.sun_path, d->sock);
	H_ASSERT(connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0, "connect: %s",
		 strerror(errno));
	(void)send(fd, &req, sizeof(req), MSG_NOSIGNAL);	/* a refusal may have closed */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, wait_ms) <= 0) {
		close(fd);
		*err = -ETIMEDOUT;
		return -1;
	}
	n = recv(fd, &rep, sizeof(rep), 0);
	if (n < 0 && errno == ECONNRESET)	/* reported ahead of queued data */
		n = recv(fd, &rep, sizeof(rep), MSG_DONTWAIT);
	if (n == (ssize_t)sizeof(rep) && rep.error == 0 && rep.hdr.seq == 1) {
		*err = 0;
		return fd;
	}
	*err = n == (ssize_t)sizeof(rep) ? rep.error : -ECONNRESET;
	close(fd);
	return -1;
}

struct storm_result {
	int done;		/* 1 once rc and ms are set */
	int rc;			/* sl_open's */
	int64_t ms;		/* how long it took */
};

static void storm_child(const struct h_daemon *d, int go_fd, struct storm_result *r)
{
	struct sl_ctx *ctx = NULL;
	uint8_t b;
	int64_t t0;

	if (h_read_byte(go_fd, &b, 20000) != 1)
		_exit(CL_E_SYNC);
	t0 = h_now_ms();
	r->rc = sl_open(d->sock, &ctx);
	r->ms = h_now_ms() - t0;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	if (r->rc == 0)
		sl_close(ctx);
	_exit(0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Descriptors (docs/limits.md): sluiced under a 256-descriptor limit;
 * one process opens contexts until the first failure; then 64 processes
 * call sl_open at once and `sluicectl status` runs.  Each must get a
 * definite error at once (sl_open -ENFILE, sluicectl a clear message),
 * the daemon must log it once, and the clients it has must not notice.
 * Before the fix the probe and every sl_open hung in recvmsg.
 */
START_TEST(fd_exhaustion_refuses_at_once)
{
	static int held[FD_LIMIT + 16];
	struct storm_result *res = shared_alloc(STORM * sizeof(*res));
	int64_t lat[STORM], t0, t_refuse;
	unsigned n_held = 0, answered, i, enfile = 0;
	const char *argv[] = { tu_sluicectl(), "-s", NULL, "status", NULL };
	char admin[H_PATH_MAX + 32], out[4096];
	struct bystander by;
	struct h_daemon d;
	pid_t pids[STORM];
	int go[2], err = 0, rc, status[STORM];

	h_daemon_start(&d, "fds", 0, NULL, 0);
	bystander_open(&by, &d, 5000);
	bystander_exchange(&by, "before");
	set_daemon_fd_limit(&d, FD_LIMIT);

	/* The hog: contexts until the first one is not answered. */
	for (;;) {
		H_ASSERT(n_held < sizeof(held) / sizeof(held[0]),
			 "%u contexts under a %d-descriptor limit", n_held, FD_LIMIT);
		held[n_held] = raw_hello(&d, 5000, &err);
		if (held[n_held] < 0)
			break;
		n_held++;
	}
	fprintf(stderr, "fd_exhaustion: %u contexts held, then %s\n", n_held,
		err == -ETIMEDOUT ? "no answer within 5 s" : strerror(err));
	H_ASSERT(err == ENFILE, "the context past the limit: %s (want a refusal, ENFILE)",
		 err == -ETIMEDOUT ? "no answer within 5 s" : strerror(err < 0 ? -err : err));

	/* The storm. */
	H_EQ(pipe(go), 0);
	for (i = 0; i < STORM; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			close(go[1]);
			storm_child(&d, go[0], &res[i]);
		}
	}
	close(go[0]);
	for (i = 0; i < STORM; i++)
		H_EQ(h_write_byte(go[1], 1), 0);
	t0 = h_now_ms();
	/* Bound the lack of progress: 3 s without one more answer. */
	for (answered = 0, t_refuse = t0; answered < STORM && h_now_ms() - t_refuse < 3000;) {
		unsigned now = 0;

		for (i = 0; i < STORM; i++)
			now += (unsigned)__atomic_load_n(&res[i].done, __ATOMIC_ACQUIRE);
		if (now > answered) {
			answered = now;
			t_refuse = h_now_ms();
		}
		h_sleep_ms(5);
	}
	H_ASSERT(answered == STORM, "%u of %d sl_open calls answered; the rest hung > 3 s",
		 answered, STORM);
	h_wait_children(pids, STORM, 10000, status);
	for (i = 0; i < STORM; i++) {
		lat[i] = res[i].ms;
		if (res[i].rc == -ENFILE)
			enfile++;
	}
	qsort(lat, STORM, sizeof(lat[0]), cmp_i64);
	fprintf(stderr, "fd_exhaustion: %u of %d sl_open -ENFILE; ms median %lld, "
		"90%% %lld, max %lld\n", enfile, STORM, (long long)lat[STORM / 2],
		(long long)lat[STORM * 9 / 10], (long long)lat[STORM - 1]);
	H_EQ(enfile, STORM);
	H_ASSERT(lat[STORM - 1] <= STORM_BOUND_MS, "slowest refusal %lld ms",
		 (long long)lat[STORM - 1]);

	/* The operator's view: a clear error, at once. */
	snprintf(admin, sizeof(admin), "%s/sluiced-admin.sock", d.dir);
	argv[2] = admin;
	t0 = h_now_ms();
	rc = h_run(argv, out, sizeof(out), 3000);
	t0 = h_now_ms() - t0;
	fprintf(stderr, "fd_exhaustion: sluicectl status: %d after %lld ms: %s", rc,
		(long long)t0, out);
	H_ASSERT(rc == 4 && strstr(out, "out of file descriptors"),
		 "sluicectl status: %d: %s", rc, out);
	H_ASSERT(t0 < STORM_BOUND_MS, "sluicectl took %lld ms", (long long)t0);

	/* The clients already there saw nothing, even at the limit. */
	bystander_exchange(&by, "at the limit");

	/* Free the descriptors: new clients get in again. */
	while (n_held)
		close(held[--n_held]);
	t0 = h_now_ms();
	for (;;) {
		struct sl_ctx *ctx;

		rc = sl_open(d.sock, &ctx);
		if (rc == 0) {
			sl_close(ctx);
			break;
		}
		H_ASSERT(rc == -ENFILE && h_now_ms() - t0 < 5000,
			 "sl_open after the hog left: %s", strerror(-rc));
		h_sleep_ms(10);
	}
	bystander_exchange(&by, "after");
	/* The hog's probe, the storm and sluicectl, once each. */
	H_EQ(h_daemon_stat(&d, "daemon.fd_refused"), 1 + STORM + 1);
	rc = (int)tu_log_lines(&d, "out of file descriptors");
	H_ASSERT(rc >= 1 && rc <= 2, "%d log lines about it", rc);
	sl_close(by.ctx);
	h_daemon_stop(&d);
	shared_free(res, STORM * sizeof(*res));
}
END_TEST

/*
 * A daemon that does not answer (stopped here with SIGSTOP) no longer
 * hangs sl_open(): it returns -ETIMEDOUT after $SLUICE_OPEN_TIMEOUT_MS.
 * Before, it waited in recvmsg for as long as the daemon was stopped.
 */
START_TEST(sl_open_times_out)
{
	struct sl_ctx *ctx = NULL;
	struct h_daemon d;
	int64_t t0, took;
	int rc;

	h_daemon_start(&d, "stopped", 0, NULL, 0);
	H_EQ(setenv("SLUICE_OPEN_TIMEOUT_MS", "300", 1), 0);
	H_EQ(kill(d.pid, SIGSTOP), 0);
	t0 = h_now_ms();
	rc = sl_open(d.sock, &ctx);
	took = h_now_ms() - t0;
	H_EQ(kill(d.pid, SIGCONT), 0);
	H_EQ(unsetenv("SLUICE_OPEN_TIMEOUT_MS"), 0);
	fprintf(stderr, "sl_open_times_out: %s after %lld ms\n", strerror(-rc), (long long)took);
	H_EQ(rc, -ETIMEDOUT);
	H_ASSERT(took >= 290 && took < 3000, "returned after %lld ms", (long long)took);
	/* The daemon, running again, serves the next one. */
	H_EQ(sl_open(d.sock, &ctx), 0);
	sl_close(ctx);
	h_daemon_stop(&d);
}
END_TEST

/* The limit the daemon runs with (/proc/PID/limits, soft). */
static long proc_fd_limit(pid_t pid)
{
	char path[64], line[256];
	long soft = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "re");
	H_ASSERT(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Max open files %ld", &soft) == 1)
			break;
	fclose(f);
	return soft;
}

/*
 * Measured before the fix: under the usual soft limit of 1,024 the 338th queue
 * failed EMFILE and nothing was logged.  The daemon raises its soft limit
 * to the hard one and says what it got against max_queues' needs; a queue
 * costs it two descriptors (the memfd is the client's once passed).  A
 * hard limit too low is a warning with the fix, at start and from
 * --check-config.
 */
START_TEST(fd_limit_raised_and_logged)
{
	struct rlimit low = { .rlim_cur = 512, .rlim_max = 4096 };
	struct sl_queue *qs[10];
	struct sl_ctx *ctx;
	struct h_daemon d, e;
	char bin[H_PATH_MAX + 32], out[1024];
	const char *top;
	int fds0, fds1, maps, i, rc;

	/* Inherited by the daemon.  Check runs each test in a process of its
	 * own: lowering this one's hard limit is harmless. */
	H_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	h_daemon_start(&d, "rl", 0, NULL, 0);
	H_EQ(proc_fd_limit(d.pid), 4096);
	H_EQ(tu_log_lines(&d, "file descriptors: limit 4096 (was 512); max_queues 1024 needs "
			   "about 3104"), 1);

	H_EQ(sl_open(d.sock, &ctx), 0);
	h_daemon_settle(&d, &fds0, &maps);
	for (i = 0; i < 10; i++)
		H_EQ(sl_queue_open(ctx, 0, 8, &qs[i]), 0);
	h_daemon_settle(&d, &fds1, &maps);
	H_EQ(fds1 - fds0, 2 * 10);
	sl_close(ctx);
	h_daemon_stop(&d);

	/* Too low for max_queues: a warning that says what to do. */
	low.rlim_cur = low.rlim_max = 1024;
	H_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	h_daemon_start(&e, "rl2", 0, NULL, 0);
	H_EQ(tu_log_lines(&e, "but max_queues 1024 needs about 3104 (3 a queue, 2 a peer, 32 "
			   "for itself): queue opens past the limit will fail; raise "
			   "LimitNOFILE= in sluiced.service (or ulimit -Hn where sluiced is "
			   "started) to 3104 or more, or lower [limits] max_queues to 330"), 1);
	h_daemon_stop(&e);

	/* --check-config warns the same way, against the hard limit, and
	 * the configuration stays valid. */
	top = getenv("top_builddir");
	snprintf(bin, sizeof(bin), "%s/daemon/sluiced", top && *top ? top : ".");
	rc = h_run((const char *const[]){ bin, "--check-config", NULL }, out, sizeof(out), 5000);
	H_EQ(rc, 0);
	H_ASSERT(strcmp(out, "sluiced: warning: file descriptors: hard limit 1024, but max_queues "
			"1024 needs about 3104 (3 a queue, 2 a peer, 32 for itself); raise "
			"LimitNOFILE= in sluiced.service (or ulimit -Hn where sluiced is "
			"started) to 3104 or more, or lower [limits] max_queues to 330\n"
			"sluiced: configuration OK\n") == 0, "%s", out);
}
END_TEST

/*
 * Thousands of queues.  The daemon starts with the usual low soft limit
 * under a higher hard one; 1,000 queues from 4 clients must all open and
 * work, which they can only if the daemon raised its soft limit: each
 * costs it 2 descriptors (the doorbell eventfds), 2,000 in all against a
 * soft limit of 64.  Each client holds 2 per queue too, and raises its
 * own soft limit for them.
 */
#define MANY_QUEUES 1000
#define MANY_CLIENTS 4
#define MANY_PER_CLIENT (MANY_QUEUES / MANY_CLIENTS)
#define MANY_LEN 64

/* Open MANY_PER_CLIENT queues, say so on @ready, wait for @go, then one
 * message from the last queue to itself: every byte and status right. */
static void many_queues_client(const struct h_daemon *d, int ready, int go)
{
	static struct sl_queue *qs[MANY_PER_CLIENT];
	struct sl_queue *last;
	struct sl_ctx *ctx;
	struct sl_cqe cqe;
	struct rlimit rl;
	uint8_t *sbuf, *rbuf;
	unsigned i, done = 0;
	int rc;

	CL_REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0, CL_E_SETUP, "getrlimit: %s",
		   strerror(errno));
	rl.rlim_cur = rl.rlim_max;
	CL_REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0, CL_E_SETUP, "setrlimit %llu: %s",
		   (unsigned long long)rl.rlim_max, strerror(errno));
	rc = sl_open(d->sock, &ctx);
	CL_REQUIRE(rc == 0, CL_E_SETUP, "sl_open: %s", strerror(-rc));
	for (i = 0; i < MANY_PER_CLIENT; i++) {
		rc = sl_queue_open(ctx, 0, 4, &qs[i]);
		CL_REQUIRE(rc == 0, CL_E_SETUP, "queue %u of %u: %s", i + 1, MANY_PER_CLIENT,
			   strerror(-rc));
	}
	cl_signal(ready, "queues open");
	cl_await(go, 30000, "go");
	last = qs[MANY_PER_CLIENT - 1];
	sbuf = sl_alloc(last, MANY_LEN);
	rbuf = sl_alloc(last, MANY_LEN);
	CL_REQUIRE(sbuf && rbuf, CL_E_SETUP, "sl_alloc");
	memset(sbuf, 0x5a, MANY_LEN);
	memset(rbuf, 0, MANY_LEN);
	CL_REQUIRE(sl_recv(last, SL_ANY_SOURCE, 7, ~0ull, rbuf, MANY_LEN, CTX_RECV) == 0,
		   CL_E_POST, "sl_recv");
	CL_REQUIRE(sl_send(last, sl_queue_addr(last), 7, sbuf, MANY_LEN, CTX_SEND) == 0,
		   CL_E_POST, "sl_send");
	while (done < 2) {
		rc = h_wait_cqe(last, &cqe, CL_STALL_MS);
		CL_REQUIRE(rc == 1, CL_E_TIMEOUT, "%u of 2 completions, then %d", done, rc);
		CL_REQUIRE(cqe.status == SL_OK && cqe.len == MANY_LEN, CL_E_STATUS,
			   "ctx %llx: %s, len %llu", (unsigned long long)cqe.user_ctx,
			   sl_strerror(cqe.status), (unsigned long long)cqe.len);
		done++;
	}
	CL_REQUIRE(all_bytes(rbuf, MANY_LEN, 0x5a), CL_E_DATA, "payload differs");
	sl_close(ctx);
	_exit(CL_OK);
}

START_TEST(thousand_queues_low_soft_limit)
{
	struct rlimit low = { .rlim_cur = 64, .rlim_max = 4096 };
	const char *names[MANY_CLIENTS] = { "c0", "c1", "c2", "c3" };
	pid_t pids[MANY_CLIENTS];
	int ready[2], go[2], fds0, fds1, maps0, maps1;
	struct h_daemon d;
	int64_t t0, opened_ms;
	unsigned i;
	uint8_t b;

	/* Inherited by the daemon and the clients (each test runs in a
	 * process of its own). */
	H_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	h_daemon_start_conf(&d, "many", 0, NULL, 0,
			    "[limits]\narena_bytes = 1M\nuid_max_queues = 1024\n");
	H_EQ(tu_log_lines(&d, "file descriptors: limit 4096 (was 64); max_queues 1024 needs "
			   "about 3104"), 1);
	h_daemon_settle(&d, &fds0, &maps0);
	H_EQ(pipe(ready), 0);
	H_EQ(pipe(go), 0);
	t0 = h_now_ms();
	for (i = 0; i < MANY_CLIENTS; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			cl_name = names[i];
			close(ready[0]);
			close(go[1]);
			many_queues_client(&d, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (i = 0; i < MANY_CLIENTS; i++)
		if (h_read_byte(ready[0], &b, 30000) != 1)
			fail_clients(pids, names, MANY_CLIENTS, "a client did not open its queues");
	opened_ms = h_now_ms() - t0;
	/* Every queue open at once: 2 descriptors each, 1 per client. */
	h_daemon_settle(&d, &fds1, &maps1);
	fprintf(stderr, "thousand_queues: %d queues open after %lld ms; daemon holds %d "
		"descriptors (%d before), %d segments mapped\n", MANY_QUEUES,
		(long long)opened_ms, fds1, fds0, maps1);
	H_EQ(fds1 - fds0, 2 * MANY_QUEUES + MANY_CLIENTS);
	H_EQ(maps1 - maps0, MANY_QUEUES);
	for (i = 0; i < MANY_CLIENTS; i++)
		H_EQ(h_write_byte(go[1], 1), 0);
	expect_clients_ok(pids, names, MANY_CLIENTS, 60000);
	close(ready[0]);
	close(go[1]);
	H_EQ(tu_log_lines(&d, "queue refused"), 0);
	h_daemon_stop(&d);
}
END_TEST

/*
 * The daemon's hard limit too low for max_queues: it warns at start, and
 * the queue opens past its limit fail -ENFILE (the daemon's descriptors;
 * -EMFILE is the client's own), with one log line for the whole episode
 * that gives the numbers and the fix.  Before, the client got -EMFILE,
 * the same as for its own limit or max_queues, and nothing was logged.
 */
#define LOW_LIMIT 96
#define LOW_RETRIES 20
#define LOW_QUEUES_MAX 256

struct low_result {
	unsigned opened;
	int first_err;
	int retry_err[LOW_RETRIES];
};

static void low_limit_client(const struct h_daemon *d, struct low_result *r, int ready, int go)
{
	static struct sl_queue *qs[LOW_QUEUES_MAX];
	struct sl_queue *extra;
	struct sl_ctx *ctx;
	unsigned i;
	int rc = 0;

	cl_await(go, 30000, "daemon started");
	rc = sl_open(d->sock, &ctx);
	CL_REQUIRE(rc == 0, CL_E_SETUP, "sl_open: %s", strerror(-rc));
	cl_signal(ready, "connected");
	cl_await(go, 30000, "descriptors counted");
	for (i = 0; i < LOW_QUEUES_MAX; i++) {
		rc = sl_queue_open(ctx, 0, 4, &qs[i]);
		if (rc)
			break;
	}
	r->opened = i;
	r->first_err = rc;
	for (i = 0; i < LOW_RETRIES; i++) {
		r->retry_err[i] = sl_queue_open(ctx, 0, 4, &extra);
		if (r->retry_err[i] == 0)
			(void)sl_queue_close(extra);
	}
	/* Everything back before the daemon is stopped: its statistics
	 * file needs a descriptor. */
	sl_close(ctx);
	cl_signal(ready, "refused");
	_exit(CL_OK);
}

START_TEST(queue_open_past_daemon_fd_limit)
{
	struct rlimit low = { .rlim_cur = LOW_LIMIT, .rlim_max = LOW_LIMIT };
	struct low_result *r = shared_alloc(sizeof(*r));
	/* The client reads the daemon's socket path here once it runs. */
	struct h_daemon *shown = shared_alloc(sizeof(*shown));
	const char *names[] = { "opener" };
	struct h_daemon dm, *d = &dm;
	int ready[2], go[2], fds, maps, expect;
	char line[512];
	unsigned i;
	pid_t pid;
	uint8_t b;

	/* The client is forked first: it keeps the test's own limit, so the
	 * daemon's runs out first. */
	H_EQ(pipe(ready), 0);
	H_EQ(pipe(go), 0);
	pid = h_fork();
	if (pid == 0) {
		cl_name = names[0];
		close(ready[0]);
		close(go[1]);
		low_limit_client(shown, r, ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	H_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	h_daemon_start_conf(d, "lowfd", 0, NULL, 0,
			    "[limits]\narena_bytes = 1M\nuid_max_queues = 1024\n");
	H_EQ(tu_log_lines(d, "file descriptors: limit 96 (was 96, hard limit 96), but "
			  "max_queues 1024 needs about 3104"), 1);
	*shown = *d;
	H_EQ(h_write_byte(go[1], 1), 0);
	if (h_read_byte(ready[0], &b, 30000) != 1)
		fail_clients(&pid, names, 1, "the client did not connect");
	/* A queue holds 2 descriptors, and needs a third (its memfd) while
	 * it is made: the opens that fit are known exactly. */
	h_daemon_settle(d, &fds, &maps);
	expect = (LOW_LIMIT - fds - 3) / 2 + 1;
	H_EQ(h_write_byte(go[1], 1), 0);
	if (h_read_byte(ready[0], &b, 30000) != 1)
		fail_clients(&pid, names, 1, "the client did not finish");
	expect_clients_ok(&pid, names, 1, 30000);
	fprintf(stderr, "past_fd_limit: %u queues opened (daemon at %d descriptors of %d "
		"before), then %s\n", r->opened, fds, LOW_LIMIT, strerror(-r->first_err));
	H_EQ(r->opened, expect);
	H_EQ(r->first_err, -ENFILE);
	for (i = 0; i < LOW_RETRIES; i++)
		H_EQ(r->retry_err[i], -ENFILE);
	/* One line for the 21 refusals, with the numbers and the fix. */
	H_EQ(tu_log_lines(d, "queue refused"), 1);
	snprintf(line, sizeof(line), "out of file descriptors: limit 96, %d queues open "
		 "(max_queues 1024) for 1 client; raise LimitNOFILE= in sluiced.service (or "
		 "ulimit -Hn where sluiced is started) to 3104 or more, or lower [limits] "
		 "max_queues to 21", expect);
	H_EQ(tu_log_lines(d, line), 1);
	close(ready[0]);
	close(go[1]);
	h_daemon_stop(d);
	shared_free(shown, sizeof(*shown));
	shared_free(r, sizeof(*r));
}
END_TEST

/* ------------------------------------------------------------------ */
/* The admin socket                                                     */
/* ------------------------------------------------------------------ */

#define ABUSERS 6
#define ABUSER_CONNS 4
#define WATCHERS 20
#define OPERATOR_CALLS 38
#define OPERATOR_BOUND_MS 1000
/* Calls that may take longer than that on a loaded machine (starting a
 * process can), as long as each is answered (exit 0). */
#define OPERATOR_SLOW_MAX 2

static void admin_sock(const struct h_daemon *d, char *buf, size_t cap)
{
	H_ASSERT((size_t)snprintf(buf, cap, "%s/sluiced-admin.sock", d->dir) < cap,
		 "admin path too long");
}

/* A connection to the admin socket, or -1. */
static int admin_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	strcpy(sun.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * An abuser: ABUSER_CONNS admin connections that never complete a
 * request (half a line, or nothing), each opened again at once when the
 * daemon closes it.  Runs until killed.
 */
static void __attribute__((noreturn)) admin_abuser(const char *path)
{
	int fds[ABUSER_CONNS];
	unsigned i;

	for (i = 0; i < ABUSER_CONNS; i++)
		fds[i] = -1;
	for (;;) {
		struct pollfd p[ABUSER_CONNS];

		for (i = 0; i < ABUSER_CONNS; i++) {
			if (fds[i] < 0) {
				fds[i] = admin_connect(path);
				if (fds[i] >= 0 && i % 2 == 0)
					(void)send(fds[i], "stat", 4, MSG_NOSIGNAL);
			}
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		}
		if (poll(p, ABUSER_CONNS, 50) < 0)
			continue;
		for (i = 0; i < ABUSER_CONNS; i++) {
			char junk[256];

			if (fds[i] >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    read(fds[i], junk, sizeof(junk)) <= 0) {
				close(fds[i]);
				fds[i] = -1;
			} else if (fds[i] >= 0 && (p[i].revents & POLLIN)) {
				close(fds[i]);	/* a refusal line */
				fds[i] = -1;
			}
		}
		if (fds[0] < 0)
			h_sleep_ms(1);	/* refused: do not spin the CPU away */
	}
}

/* `sluicectl --json -w 0.05 queues` writing into @out_fd, a pipe nobody
 * reads.  Returns its pid. */
static pid_t spawn_watcher(const char *admin, int out_fd)
{
	pid_t pid = h_fork();

	if (pid == 0) {
		if (dup2(out_fd, STDOUT_FILENO) < 0)
			_exit(127);
		execl(tu_sluicectl(), "sluicectl", "-s", admin, "--json", "-w", "0.05", "queues",
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * Admin slots (docs/limits.md): 20 `sluicectl --json -w 0.05 queues`
 * whose output pipe is never read, and raw admin clients that send half
 * a line or nothing, reconnecting as soon as they are dropped.  Every one
 * of 38 operator calls must answer (exit 0) within 1 s; before, 29 to 30
 * were refused ("too many admin connections") or unanswered.
 */
START_TEST(admin_abuse_operator_answered)
{
	const char *cmds[] = { "status", "queues", "counters", "clients" };
	char admin[H_PATH_MAX + 32], out[8192];
	pid_t abusers[ABUSERS], watchers[WATCHERS];
	int64_t worst = 0, t0, t_start;
	unsigned i, ok = 0, slow = 0;
	struct bystander by;
	struct h_daemon d;
	int pipefd[2], st[WATCHERS];

	h_daemon_start(&d, "adm", 0, NULL, 0);
	t_start = h_now_ms();
	bystander_open(&by, &d, 5000);
	bystander_exchange(&by, "before");
	admin_sock(&d, admin, sizeof(admin));
	H_EQ(pipe(pipefd), 0);
	for (i = 0; i < WATCHERS; i++)
		watchers[i] = spawn_watcher(admin, pipefd[1]);
	for (i = 0; i < ABUSERS; i++) {
		abusers[i] = h_fork();
		if (abusers[i] == 0)
			admin_abuser(admin);
	}
	h_sleep_ms(1500);	/* the pipe is full, every slot taken */

	for (i = 0; i < OPERATOR_CALLS; i++) {
		const char *argv[] = { tu_sluicectl(), "-s", admin, cmds[i % 4], NULL };
		int64_t ms;
		int rc;

		t0 = h_now_ms();
		rc = h_run(argv, out, sizeof(out), 3000);
		ms = h_now_ms() - t0;
		if (ms > worst)
			worst = ms;
		if (rc == 0 && ms <= OPERATOR_BOUND_MS)
			ok++;
		else if (rc == 0)
			slow++;
		else
			fprintf(stderr, "admin_abuse: call %u (%s): exit %d after %lld ms: %s", i,
				cmds[i % 4], rc, (long long)ms, out);
	}
	fprintf(stderr, "admin_abuse: %u of %d operator calls answered within %d ms, %u later, "
		"slowest %lld ms\n", ok, OPERATOR_CALLS, OPERATOR_BOUND_MS, slow,
		(long long)worst);
	bystander_exchange(&by, "during");
	for (i = 0; i < ABUSERS; i++)
		kill(abusers[i], SIGKILL);
	for (i = 0; i < WATCHERS; i++)
		kill(watchers[i], SIGKILL);
	h_wait_children(abusers, ABUSERS, 5000, st);
	h_wait_children(watchers, WATCHERS, 5000, st);
	close(pipefd[0]);
	close(pipefd[1]);
	H_ASSERT(ok + slow == OPERATOR_CALLS && slow <= OPERATOR_SLOW_MAX,
		 "%u answered within %d ms, %u later, %u not at all", ok, OPERATOR_BOUND_MS, slow,
		 OPERATOR_CALLS - ok - slow);
	H_ASSERT(h_daemon_stat(&d, "daemon.admin_evicted") > 0, "nothing evicted");
	/* Thousands of drops, a handful of lines (one per 10 s at most). */
	H_ASSERT(tu_log_lines(&d, "info: admin: pid") <= 1 + (unsigned)((h_now_ms() - t_start) / 10000),
		 "%u log lines about admin clients", tu_log_lines(&d, "info: admin: pid"));
	bystander_exchange(&by, "after");
	sl_close(by.ctx);
	h_daemon_stop(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Per-uid quotas                                                       */
/* ------------------------------------------------------------------ */

#define OTHER_UID 4242		/* no such user: only its number matters */
#define QUOTA_QUEUES 64		/* max_queues: a uid's share is 32 */
#define QUOTA_CONTEXTS 8	/* uid_max_contexts */
#define QUOTA_INFLIGHT 40	/* uid_max_inflight */
#define QDEPTH 16

struct other_result {
	int queues;		/* queues opened before the first failure */
	int queue_err;		/* that failure */
	int contexts;		/* contexts open before sl_open failed */
	int open_err;		/* that failure */
	int posted;		/* receives the daemon took or holds in SQs */
};

/* Become uid OTHER_UID in group @gid (the daemon's client_group). */
static void become_other(gid_t gid)
{
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(OTHER_UID) < 0)
		_exit(CL_E_SETUP);
}

/*
 * The other user: contexts of QDEPTH queues each until a queue open
 * fails, then contexts until sl_open fails, then receives on every queue
 * until the daemon takes no more.  Results in @r; then waits for a byte
 * on @hold_fd (holding everything) and exits.
 */
static void __attribute__((noreturn)) other_user(const struct h_daemon *d, gid_t gid,
						 struct other_result *r, int ready_fd,
						 int hold_fd, bool post)
{
	static struct sl_queue *qs[QUOTA_QUEUES];
	struct sl_ctx *ctx[QUOTA_CONTEXTS + 1];
	int nctx = 0, nq = 0, rc = 0, i, added;
	uint8_t b;

	become_other(gid);
	while (nctx < QUOTA_CONTEXTS && rc == 0) {
		if (sl_open(d->sock, &ctx[nctx]) != 0)
			_exit(CL_E_SETUP);
		nctx++;
		for (i = 0; i < QDEPTH && nq < QUOTA_QUEUES; i++) {
			rc = sl_queue_open(ctx[nctx - 1], 0, QDEPTH, &qs[nq]);
			if (rc)
				break;
			nq++;
		}
	}
	r->queues = nq;
	r->queue_err = rc;
	while (nctx <= QUOTA_CONTEXTS) {
		rc = sl_open(d->sock, &ctx[nctx]);
		if (rc)
			break;
		nctx++;
	}
	r->contexts = nctx;
	r->open_err = rc;
	/* Receives until a round in which the daemon took none. */
	do {
		added = 0;
		for (i = 0; post && i < nq; i++) {
			void *buf = sl_alloc(qs[i], 64);

			while (buf && sl_recv(qs[i], SL_ANY_SOURCE, 1, ~0ull, buf, 64, 1) == 0)
				added++;
		}
		r->posted += added;
		h_sleep_ms(100);
	} while (added);
	(void)h_write_byte(ready_fd, 1);
	(void)h_read_byte(hold_fd, &b, 60000);
	_exit(0);
}

static gid_t group_users(void)
{
	struct group *g = getgrnam("users");

	H_ASSERT(g, "no group 'users' to share the control socket with");
	return g->gr_gid;
}

/* What `sluicectl --json uids` shows while the other user holds its
 * share: its usage, and the limits in force (whitespace ignored). */
static void uids_shown(const struct h_daemon *d)
{
	char admin[H_PATH_MAX + 32], out[4096], want[256];
	const char *argv[] = { tu_sluicectl(), "-s", admin, "--json", "uids", NULL };
	unsigned long long arena = (unsigned long long)(QUOTA_QUEUES / 2) << 20;
	size_t i, n = 0;
	int rc;

	admin_sock(d, admin, sizeof(admin));
	rc = h_run(argv, out, sizeof(out), RUN_TIMEOUT_MS);
	H_ASSERT(rc == 0, "sluicectl uids: %d: %s", rc, out);
	for (i = 0; out[i]; i++)
		if (out[i] != ' ' && out[i] != '\n')
			out[n++] = out[i];
	out[n] = '\0';
	snprintf(want, sizeof(want),
		 "{\"uid\":%d,\"contexts\":%d,\"queues\":%d,\"arena_bytes\":%llu,"
		 "\"in_flight\":%d}", OTHER_UID, QUOTA_CONTEXTS, QUOTA_QUEUES / 2, arena,
		 QUOTA_INFLIGHT);
	H_ASSERT(strstr(out, want), "want %s in %s", want, out);
	snprintf(want, sizeof(want),
		 "\"limits\":{\"contexts\":%d,\"queues\":%d,\"arena_bytes\":%llu,"
		 "\"in_flight\":%d}", QUOTA_CONTEXTS, QUOTA_QUEUES / 2, arena, QUOTA_INFLIGHT);
	H_ASSERT(strstr(out, want), "want %s in %s", want, out);
}

/*
 * Per-user quotas (docs/limits.md): the daemon as root, client_group
 * shared by two users, max_queues 64, client_max_queues 16.  Before, the
 * other user took the queues over several contexts and root's next
 * sl_queue_open failed EMFILE.  Now a uid holds at most half of
 * max_queues (32), uid_max_contexts contexts and uid_max_inflight
 * descriptors in flight; root opens its queues and its bystander's
 * traffic completes; when the other user leaves, everything it held is
 * its uid's again (a second run gets the same).
 */
START_TEST(uid_quotas_leave_room_for_others)
{
	struct other_result *r = shared_alloc(2 * sizeof(*r));
	char conf[512];
	struct sl_queue *mine[QDEPTH];
	struct sl_ctx *root_ctx;
	struct bystander by;
	struct h_daemon d;
	gid_t gid = group_users();
	int ready[2], hold[2], st, i, run, fds, maps;
	pid_t pid;
	uint8_t b;

	snprintf(conf, sizeof(conf),
		 "[daemon]\nclient_group = users\n"
		 "[limits]\narena_bytes = 1M\nmax_queues = %d\nclient_max_queues = %d\n"
		 "uid_max_contexts = %d\nuid_max_inflight = %d\n",
		 QUOTA_QUEUES, QDEPTH, QUOTA_CONTEXTS, QUOTA_INFLIGHT);
	h_daemon_start_conf(&d, "uids", 0, NULL, 0, conf);
	H_EQ(chmod(d.dir, 0711), 0);	/* the other user reaches the socket */
	bystander_open(&by, &d, 5000);
	bystander_exchange(&by, "before");

	for (run = 0; run < 2; run++) {
		H_EQ(pipe(ready), 0);
		H_EQ(pipe(hold), 0);
		pid = h_fork();
		if (pid == 0)
			other_user(&d, gid, &r[run], ready[1], hold[0], run == 0);
		close(ready[1]);
		ready[1] = -1;
		H_ASSERT(h_read_byte(ready[0], &b, 30000) == 1,
			 "the other user never got ready (it exits %d when sl_open fails)",
			 CL_E_SETUP);
		fprintf(stderr, "uid_quotas: run %d: other uid: %d queues, then %s; %d contexts, "
			"then %s; %d receives posted\n", run, r[run].queues,
			strerror(-r[run].queue_err), r[run].contexts, strerror(-r[run].open_err),
			r[run].posted);
		H_EQ(r[run].queues, QUOTA_QUEUES / 2);
		H_EQ(r[run].queue_err, -EDQUOT);
		H_EQ(r[run].contexts, QUOTA_CONTEXTS);
		H_EQ(r[run].open_err, -EDQUOT);
		if (run == 0) {
			/* In flight: the uid's bound, plus what waits in the
			 * SQs (QDEPTH each). */
			H_EQ(r[run].posted, QUOTA_INFLIGHT + QUOTA_QUEUES / 2 * QDEPTH);
			/* Root still gets its queues, and its traffic flows. */
			H_EQ(sl_open(d.sock, &root_ctx), 0);
			for (i = 0; i < QDEPTH; i++)
				H_EQ(sl_queue_open(root_ctx, 0, QDEPTH, &mine[i]), 0);
			bystander_exchange(&by, "beside the other user");
			uids_shown(&d);
			sl_close(root_ctx);
		}
		H_EQ(h_write_byte(hold[1], 1), 0);
		H_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			 "the other user: status %#x", st);
		close(ready[0]);
		close(hold[0]);
		close(hold[1]);
		h_daemon_settle(&d, &fds, &maps);	/* its sessions are gone */
	}
	H_ASSERT(tu_log_lines(&d, "uid 4242: refused: [limits] uid_max_queues = 32 reached") >= 1,
		 "no log line about the quota");
	bystander_exchange(&by, "after");
	sl_close(by.ctx);
	h_daemon_stop(&d);
	shared_free(r, 2 * sizeof(*r));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Reserved ports                                                       */
/* ------------------------------------------------------------------ */

struct ports_result {
	int reserved_other;	/* sl_queue_open(6001): reserved for root */
	int reserved_group;	/* sl_queue_open(7001): reserved for group users */
	int free_port;		/* sl_queue_open(5100): not reserved */
	int ephemeral;		/* sl_queue_open(0) */
	uint32_t ephemeral_port;
	int got_root_msg;	/* 1 if its queue on 6001 received root's message */
};

#define PORT_ROOTS 6001u
#define PORT_GROUP 7001u
#define PORT_FREE 5100u

/* uid OTHER_UID, primary group nogroup, group @gid supplementary only:
 * the daemon must see it through SO_PEERGROUPS. */
static void __attribute__((noreturn)) ports_user(const struct h_daemon *d, gid_t gid,
						 struct ports_result *r, int ready_fd,
						 int hold_fd)
{
	struct sl_queue *q6 = NULL, *q7, *q5, *qe;
	struct sl_ctx *ctx;
	struct sl_cqe cqe;
	uint8_t b;
	void *buf;

	if (setgroups(1, &gid) < 0 || setgid(65534) < 0 || setuid(OTHER_UID) < 0)
		_exit(CL_E_SETUP);
	if (sl_open(d->sock, &ctx) != 0)
		_exit(CL_E_SETUP);
	r->reserved_other = sl_queue_open(ctx, PORT_ROOTS, 8, &q6);
	r->reserved_group = sl_queue_open(ctx, PORT_GROUP, 8, &q7);
	r->free_port = sl_queue_open(ctx, PORT_FREE, 8, &q5);
	r->ephemeral = sl_queue_open(ctx, 0, 8, &qe);
	if (r->ephemeral == 0)
		r->ephemeral_port = sl_queue_addr(qe).port;
	if (r->reserved_other == 0 && (buf = sl_alloc(q6, 64)))
		(void)sl_recv(q6, SL_ANY_SOURCE, 9, ~0ull, buf, 64, 1);
	(void)h_write_byte(ready_fd, 1);
	(void)h_read_byte(hold_fd, &b, 60000);
	if (r->reserved_other == 0 && h_wait_cqe(q6, &cqe, 500) == 1 && cqe.status == SL_OK)
		r->got_root_msg = 1;
	(void)h_write_byte(ready_fd, 1);
	_exit(0);
}

/*
 * Reserved ports (docs/limits.md): another user bound port 6001 before
 * its owner (root) and received the messages root sent there.  With
 * [ports] 6000-6999 = uid:0 its bind fails -EACCES (logged with the
 * range), root binds 6001 and gets its own message; a range reserved for
 * a group takes its members (here through a supplementary group), ports
 * outside every range are free for all, and ephemeral ports skip
 * reserved ranges.
 */
START_TEST(reserved_ports)
{
	struct ports_result *r = shared_alloc(sizeof(*r));
	struct sl_queue *root_q;
	struct sl_ctx *root_ctx;
	struct bystander by;
	struct h_daemon d;
	struct sl_cqe cqe;
	char conf[512];
	int ready[2], hold[2], st;
	uint8_t b, *buf;
	pid_t pid;

	snprintf(conf, sizeof(conf),
		 "[daemon]\nclient_group = users\n"
		 "[ports]\n6000-6999 = uid:0\n7000-7999 = group:users\n"
		 "49152-49407 = user:root\n");
	h_daemon_start_conf(&d, "ports", 0, NULL, 0, conf);
	H_EQ(chmod(d.dir, 0711), 0);
	bystander_open(&by, &d, 5000);
	H_EQ(pipe(ready), 0);
	H_EQ(pipe(hold), 0);
	pid = h_fork();
	if (pid == 0)
		ports_user(&d, group_users(), r, ready[1], hold[0]);
	H_ASSERT(h_read_byte(ready[0], &b, 30000) == 1, "the other user never got ready");
	fprintf(stderr, "reserved_ports: other uid: 6001 %s, 7001 %s, 5100 %s, port 0 %s (%u)\n",
		strerror(-r->reserved_other), strerror(-r->reserved_group),
		strerror(-r->free_port), strerror(-r->ephemeral), r->ephemeral_port);

	/* Root binds its port and sends itself a message there. */
	H_EQ(sl_open(d.sock, &root_ctx), 0);
	H_EQ(sl_queue_open(root_ctx, PORT_ROOTS, 8, &root_q), 0);
	buf = sl_alloc(root_q, 64);
	H_ASSERT(buf, "sl_alloc");
	H_EQ(sl_recv(root_q, SL_ANY_SOURCE, 9, ~0ull, buf, 64, 1), 0);
	memcpy(by.sbuf, "for root only", 14);
	H_EQ(sl_send(by.tx, (sl_addr_t){ SL_NODE_LOCAL, PORT_ROOTS }, 9, by.sbuf, 14, 77), 0);
	H_EQ(h_wait_cqe(by.tx, &cqe, 5000), 1);
	H_EQ(cqe.status, SL_OK);
	H_EQ(h_wait_cqe(root_q, &cqe, 5000), 1);
	H_ASSERT(cqe.status == SL_OK && cqe.len == 14 && !memcmp(buf, "for root only", 14),
		 "root's message: %s, %llu bytes", sl_strerror(cqe.status),
		 (unsigned long long)cqe.len);
	H_EQ(h_write_byte(hold[1], 1), 0);
	H_ASSERT(h_read_byte(ready[0], &b, 30000) == 1, "the other user never finished");
	H_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "the other user: status %#x", st);

	H_EQ(r->reserved_other, -EACCES);
	H_EQ(r->got_root_msg, 0);
	H_EQ(r->reserved_group, 0);
	H_EQ(r->free_port, 0);
	H_EQ(r->ephemeral, 0);
	H_ASSERT(r->ephemeral_port > 49407, "ephemeral port %u is reserved for root",
		 r->ephemeral_port);
	H_EQ(tu_log_lines(&d, "uid 4242: bind port 6001 refused: [ports] 6000-6999 = uid:0"), 1);
	bystander_exchange(&by, "after");
	sl_close(root_ctx);
	sl_close(by.ctx);
	close(ready[0]);
	close(ready[1]);
	close(hold[0]);
	close(hold[1]);
	h_daemon_stop(&d);
	shared_free(r, sizeof(*r));
}
END_TEST

/* ------------------------------------------------------------------ */
/* The sender's identity                                                */
/* ------------------------------------------------------------------ */

#define UID_PORT 6100u
#define RNDV_LEN (128u << 10)	/* above eager_max (64 KiB): one copy at the match */

/* As uid OTHER_UID: an eager and a rendezvous message to @port, then one
 * that waits unexpected until @go_fd says; every send must complete
 * SL_OK with no uid (sends carry none).  Exits 0 or a CL_E_* code. */
static void __attribute__((noreturn)) uid_sender(const struct h_daemon *d, gid_t gid,
						 int go_fd)
{
	sl_addr_t to = { SL_NODE_LOCAL, UID_PORT };
	struct sl_queue *q;
	struct sl_ctx *ctx;
	struct sl_cqe cqe;
	uint8_t *buf, b;
	int i;

	become_other(gid);
	if (sl_open(d->sock, &ctx) || sl_queue_open(ctx, 0, 8, &q) ||
	    !(buf = sl_alloc(q, RNDV_LEN)))
		_exit(CL_E_SETUP);
	memset(buf, 0x42, RNDV_LEN);
	if (sl_send(q, to, 1, buf, 100, 1) || sl_send(q, to, 2, buf, RNDV_LEN, 2) ||
	    sl_send(q, to, 3, buf, 100, 3))
		_exit(CL_E_POST);
	for (i = 0; i < 3; i++) {
		if (h_wait_cqe(q, &cqe, i == 1 ? 20000 : 10000) != 1)
			_exit(CL_E_TIMEOUT);
		if (cqe.status != SL_OK)
			_exit(CL_E_STATUS);
		if (cqe.sender_uid != SL_UID_UNKNOWN)
			_exit(CL_E_META);
	}
	(void)h_read_byte(go_fd, &b, 30000);
	sl_close(ctx);
	_exit(0);
}

/* One receive on @q of tag @tag; its completion. */
static struct sl_cqe recv_one(struct sl_queue *q, void *buf, uint64_t cap, uint64_t tag)
{
	struct sl_cqe cqe;

	H_EQ(sl_recv(q, SL_ANY_SOURCE, tag, ~0ull, buf, cap, tag), 0);
	H_EQ(h_wait_cqe(q, &cqe, 20000), 1);
	H_ASSERT(cqe.status == SL_OK && cqe.tag == tag, "tag %llu: %s",
		 (unsigned long long)tag, sl_strerror(cqe.status));
	return cqe;
}

/*
 * Before: completions carried no sender identity.  A receive
 * completion names the sending queue's uid when the sender is on this
 * node (eager, rendezvous, and a message that waited unexpected), so that
 * a server can authorize requests; SL_UID_UNKNOWN for a send's own
 * completion and for a message from another node without a cluster key
 * (these nodes run in mode none; test_senderuid has the keyed cases).
 * Before, the field was reserved and read 0, root, for everyone.
 */
START_TEST(sender_uid_in_completion)
{
	const char *names[] = { "ua", "ub" };
	struct h_daemon ds[2];
	struct sl_queue *rq, *bq;
	struct sl_ctx *ctx, *bctx;
	struct sl_cqe cqe;
	uint8_t *buf, *bbuf;
	int go[2], st;
	pid_t pid;

	h_cluster_start_conf(ds, names, 2, "[daemon]\nclient_group = users\n");
	H_EQ(chmod(ds[0].dir, 0711), 0);
	H_EQ(sl_open(ds[0].sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, UID_PORT, 8, &rq), 0);
	buf = sl_alloc(rq, RNDV_LEN);
	H_ASSERT(buf, "sl_alloc");
	/* Tag 1 finds its receive posted; 2 and 3 likely arrive first. */
	H_EQ(sl_recv(rq, SL_ANY_SOURCE, 1, ~0ull, buf, RNDV_LEN, 1), 0);
	H_EQ(pipe(go), 0);
	pid = h_fork();
	if (pid == 0)
		uid_sender(&ds[0], group_users(), go[0]);

	H_EQ(h_wait_cqe(rq, &cqe, 20000), 1);
	H_ASSERT(cqe.status == SL_OK && cqe.tag == 1, "tag 1: %s", sl_strerror(cqe.status));
	H_EQ(cqe.sender_uid, OTHER_UID);
	cqe = recv_one(rq, buf, RNDV_LEN, 2);
	H_EQ(cqe.len, RNDV_LEN);
	H_EQ(cqe.sender_uid, OTHER_UID);
	h_sleep_ms(100);	/* tag 3 waits unexpected */
	cqe = recv_one(rq, buf, RNDV_LEN, 3);
	H_EQ(cqe.sender_uid, OTHER_UID);
	H_EQ(h_write_byte(go[1], 1), 0);
	H_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "the sender: status %#x (%s)", st,
		 WIFEXITED(st) ? cl_exit_name(WEXITSTATUS(st)) : "signal");

	/* Root's own message: uid 0.  Another node's: unknown. */
	H_EQ(sl_open(ds[0].sock, &bctx), 0);
	H_EQ(sl_queue_open(bctx, 0, 8, &bq), 0);
	bbuf = sl_alloc(bq, 100);
	H_ASSERT(bbuf, "sl_alloc");
	H_EQ(sl_send(bq, (sl_addr_t){ SL_NODE_LOCAL, UID_PORT }, 4, bbuf, 100, 4), 0);
	cqe = recv_one(rq, buf, RNDV_LEN, 4);
	H_EQ(cqe.sender_uid, 0);
	H_EQ(h_wait_cqe(bq, &cqe, 5000), 1);
	H_EQ(cqe.sender_uid, SL_UID_UNKNOWN);
	sl_close(bctx);
	H_EQ(sl_open(ds[1].sock, &bctx), 0);
	H_EQ(sl_queue_open(bctx, 0, 8, &bq), 0);
	bbuf = sl_alloc(bq, 100);
	H_ASSERT(bbuf, "sl_alloc");
	H_EQ(sl_send(bq, (sl_addr_t){ ds[0].node, UID_PORT }, 5, bbuf, 100, 5), 0);
	cqe = recv_one(rq, buf, RNDV_LEN, 5);
	H_EQ(cqe.peer.node, ds[1].node);
	H_EQ(cqe.sender_uid, SL_UID_UNKNOWN);
	sl_close(bctx);
	sl_close(ctx);
	close(go[0]);
	close(go[1]);
	h_cluster_stop(ds, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = h_tcase(s, "fds", 120);

	tcase_add_test(tc, fd_exhaustion_refuses_at_once);
	tcase_add_test(tc, fd_limit_raised_and_logged);
	tcase_add_test(tc, thousand_queues_low_soft_limit);
	tcase_add_test(tc, queue_open_past_daemon_fd_limit);
	tcase_add_test(tc, sl_open_times_out);
	tc = h_tcase(s, "admin", 120);
	tcase_add_test(tc, admin_abuse_operator_answered);
	tc = h_tcase(s, "uids", 120);
	tcase_add_test(tc, uid_quotas_leave_room_for_others);
	tcase_add_test(tc, reserved_ports);
	tcase_add_test(tc, sender_uid_in_completion);
	return h_run_suite(s);
}
