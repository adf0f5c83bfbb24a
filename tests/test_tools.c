/*
 * test_tools.c - the tools of tools/ run as a user runs them, against two
 * real daemons (tests/harness.c): sluice-copy's progress line on a
 * terminal (a pseudo-terminal, openpty(3)), its silence on a pipe, the
 * --progress / --no-progress overrides, and the copy still verified
 * (equal sha256 lines, the received file equal to the sent one).
 *
 * Cases (CK_RUN_CASE=name):
 *   copy_progress_tty   stderr of both sides on a terminal: at least two
 *                       progress lines each ("\r" rewritten, ESC [ K),
 *                       every one "of 24 MiB", the last 100%, no more
 *                       than one per 250 ms; the final report on its own
 *                       line after it
 *   copy_quiet_pipe     stderr of both sides on a pipe: exactly the one
 *                       report line, no "\r", no escape, no progress
 *   copy_overrides      --no-progress on a terminal prints none,
 *                       --progress on a pipe prints it
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "harness.h"

#define FILE_BYTES (24u << 20)		/* shown as "24 MiB" */
#define FILE_HUMAN "24 MiB"
#define CHUNK_ARG "1M"			/* 24 chunks: several refreshes */
#define COPY_PORT "700"
#define STALL_MS 30000			/* no output and no file growth */
#define OUT_CAP (64u << 10)
#define PERIOD_MS 250			/* progress.h: PROGRESS_PERIOD_NS */

/* A tool run with stdout on a pipe and stderr on a pipe or a terminal. */
struct child {
	pid_t pid;
	int fd[2];			/* read ends: stdout, stderr; -1 at EOF */
	char buf[2][OUT_CAP];		/* what came, NUL-terminated */
	size_t len[2];
	int status;			/* wait status once reaped */
	bool reaped;
};

static const char *copy_bin(void)
{
	static char path[512];
	const char *top = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/tools/sluice-copy", top && *top ? top : ".");
	H_ASSERT(access(path, X_OK) == 0, "%s: %s (set top_builddir)", path, strerror(errno));
	return path;
}

/*
 * Start @argv (argv[0] a path) with stdin /dev/null, stdout on a pipe and
 * stderr on the slave of a new pseudo-terminal (@tty, raw: no "\n" to
 * "\r\n", so the test sees the bytes the tool wrote) or on a pipe.
 */
static void child_start(struct child *c, const char *const *argv, bool tty)
{
	int out[2], err[2];

	memset(c, 0, sizeof(*c));
	H_ASSERT(pipe2(out, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	if (tty) {
		struct termios t;

		H_ASSERT(openpty(&err[0], &err[1], NULL, NULL, NULL) == 0, "openpty: %s",
			 strerror(errno));
		H_ASSERT(tcgetattr(err[1], &t) == 0, "tcgetattr: %s", strerror(errno));
		cfmakeraw(&t);
		H_ASSERT(tcsetattr(err[1], TCSANOW, &t) == 0, "tcsetattr: %s", strerror(errno));
	} else {
		H_ASSERT(pipe2(err, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	}
	c->pid = h_fork();
	if (c->pid == 0) {
		int nullfd = open("/dev/null", O_RDONLY);

		if (nullfd < 0 || dup2(nullfd, 0) < 0 || dup2(out[1], 1) < 0 ||
		    dup2(err[1], 2) < 0 || close_range(3, ~0u, 0) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	H_EQ(close(out[1]), 0);
	H_EQ(close(err[1]), 0);
	c->fd[0] = out[0];
	c->fd[1] = err[0];
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/*
 * Collect the output of the @n children until each has exited and closed
 * both outputs.  What bounds it is a lack of progress, not the total time
 * (the machine may be busy): STALL_MS without a byte of output, a child
 * ending or @watch (the receiver's output file) growing kills them all
 * and fails, with what each had said.
 */
static void children_wait(struct child *cs, unsigned n, const char *watch)
{
	int64_t last_progress = h_now_ms();
	off_t watched = file_size(watch);

	for (;;) {
		struct pollfd p[8];
		unsigned np = 0, open_fds = 0, i, k;
		bool progressed = false;

		for (i = 0; i < n; i++)
			for (k = 0; k < 2; k++)
				if (cs[i].fd[k] >= 0) {
					p[np].fd = cs[i].fd[k];
					p[np++].events = POLLIN;
					open_fds++;
				}
		if (np && poll(p, np, 100) < 0)
			H_ASSERT(errno == EINTR, "poll: %s", strerror(errno));
		for (i = 0; i < n; i++) {
			struct child *c = &cs[i];

			for (k = 0; k < 2; k++) {
				char scratch[4096];
				bool room = c->len[k] + 1 < OUT_CAP;
				ssize_t r;

				if (c->fd[k] < 0)
					continue;
				r = room ? read(c->fd[k], c->buf[k] + c->len[k],
						OUT_CAP - 1 - c->len[k])
					 : read(c->fd[k], scratch, sizeof(scratch));
				if (r > 0) {
					if (room)
						c->len[k] += (size_t)r;
					c->buf[k][c->len[k]] = '\0';
					progressed = true;
				} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
					/* EOF; a terminal's master reads EIO instead */
					H_EQ(close(c->fd[k]), 0);
					c->fd[k] = -1;
				}
			}
			if (!c->reaped && waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
				c->reaped = true;
				progressed = true;
			}
		}
		if (!open_fds) {
			for (i = 0; i < n; i++)
				if (!cs[i].reaped) {
					H_EQ(waitpid(cs[i].pid, &cs[i].status, 0), cs[i].pid);
					cs[i].reaped = true;
				}
			return;
		}
		if (file_size(watch) != watched) {
			watched = file_size(watch);
			progressed = true;
		}
		if (progressed) {
			last_progress = h_now_ms();
			continue;
		}
		if (h_now_ms() - last_progress > STALL_MS) {
			for (i = 0; i < n; i++)
				if (!cs[i].reaped)
					(void)kill(cs[i].pid, SIGKILL);
			for (i = 0; i < n; i++)
				fprintf(stderr, "child %u: stdout:\n%s\nstderr:\n%s\n", i,
					cs[i].buf[0], cs[i].buf[1]);
			h_fail(__FILE__, __LINE__, "children_wait",
			       "no output and %s not growing for %d ms", watch, STALL_MS);
		}
	}
}

/* Blocking reads would stall the loop above: both outputs non-blocking. */
static void child_nonblock(struct child *c)
{
	for (unsigned k = 0; k < 2; k++) {
		int fl = fcntl(c->fd[k], F_GETFL);

		H_ASSERT(fl >= 0 && fcntl(c->fd[k], F_SETFL, fl | O_NONBLOCK) == 0,
			 "fcntl: %s", strerror(errno));
	}
}

/* @len bytes of a fixed pseudo-random sequence (xorshift64) into @path. */
static void write_pattern(const char *path, size_t len)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint64_t *buf = malloc(len);
	int fd;

	H_ASSERT(buf, "out of memory");
	for (size_t i = 0; i < len / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	H_ASSERT(fd >= 0, "%s: %s", path, strerror(errno));
	H_EQ(write(fd, buf, len), (ssize_t)len);
	H_EQ(close(fd), 0);
	free(buf);
}

static bool files_equal(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;
	int ca, cb;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		same = ca == cb;
		if (ca == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static unsigned count_in(const char *text, const char *needle)
{
	unsigned n = 0;

	for (; (text = strstr(text, needle)); text++)
		n++;
	return n;
}

/* One copy's outcome: the receiver (index 0) and the sender (index 1). */
struct copy_run {
	struct child side[2];
	int64_t ms;			/* the sender's run, start to end */
};

/*
 * Copy a FILE_BYTES file from node a to node b with sluice-copy, the
 * receiver's stderr on a terminal when @tty_recv, the sender's when
 * @tty_send, each with @opt_recv / @opt_send (NULL: none) added; check
 * that it verified: both exit 0, equal "sha256 HEX 25165824 bytes
 * sent|received" lines, the files equal.
 */
static void copy_run(struct copy_run *r, bool tty_recv, const char *opt_recv,
		     bool tty_send, const char *opt_send)
{
	static const char *const names[] = { "a", "b" };
	char dir[] = "/tmp/sl-tools-XXXXXX", in[64], out[64], ready[64];
	char want_sent[128], want_recv[128], hex[65];
	const char *recv_argv[12], *send_argv[12];
	struct h_daemon ds[2];
	int64_t deadline, t0;
	unsigned n;

	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(in, sizeof(in), "%s/in.bin", dir);
	snprintf(out, sizeof(out), "%s/out.bin", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	write_pattern(in, FILE_BYTES);
	h_cluster_start(ds, names, 2);

	n = 0;
	recv_argv[n++] = copy_bin();
	recv_argv[n++] = "--recv";
	recv_argv[n++] = "--port";
	recv_argv[n++] = COPY_PORT;
	recv_argv[n++] = "--out";
	recv_argv[n++] = out;
	recv_argv[n++] = "--socket";
	recv_argv[n++] = ds[1].sock;
	recv_argv[n++] = "--ready-file";
	recv_argv[n++] = ready;
	if (opt_recv)
		recv_argv[n++] = opt_recv;
	recv_argv[n] = NULL;
	child_start(&r->side[0], recv_argv, tty_recv);
	child_nonblock(&r->side[0]);
	deadline = h_now_ms() + STALL_MS;	/* a busy machine starts it late */
	while (access(ready, F_OK) != 0) {
		H_ASSERT(waitpid(r->side[0].pid, &r->side[0].status, WNOHANG) == 0,
			 "the receiver exited before it was ready");
		H_ASSERT(h_now_ms() < deadline, "the receiver not ready after %d ms",
			 STALL_MS);
		h_sleep_ms(10);
	}

	n = 0;
	send_argv[n++] = copy_bin();
	send_argv[n++] = "--send";
	send_argv[n++] = in;
	send_argv[n++] = "--to";
	send_argv[n++] = "b:" COPY_PORT;
	send_argv[n++] = "--socket";
	send_argv[n++] = ds[0].sock;
	send_argv[n++] = "--chunk";
	send_argv[n++] = CHUNK_ARG;
	if (opt_send)
		send_argv[n++] = opt_send;
	send_argv[n] = NULL;
	t0 = h_now_ms();
	child_start(&r->side[1], send_argv, tty_send);
	child_nonblock(&r->side[1]);
	children_wait(r->side, 2, out);
	r->ms = h_now_ms() - t0;

	for (unsigned i = 0; i < 2; i++)
		H_ASSERT(WIFEXITED(r->side[i].status) && WEXITSTATUS(r->side[i].status) == 0,
			 "%s: wait status %#x; stdout '%s' stderr '%s'", i ? "sender" : "receiver",
			 r->side[i].status, r->side[i].buf[0], r->side[i].buf[1]);
	H_ASSERT(sscanf(r->side[1].buf[0], "sha256 %64[0-9a-f] ", hex) == 1,
		 "sender stdout '%s'", r->side[1].buf[0]);
	snprintf(want_sent, sizeof(want_sent), "sha256 %s %u bytes sent\n", hex, FILE_BYTES);
	snprintf(want_recv, sizeof(want_recv), "sha256 %s %u bytes received\n", hex,
		 FILE_BYTES);
	H_ASSERT(strcmp(r->side[1].buf[0], want_sent) == 0, "sender stdout '%s', want '%s'",
		 r->side[1].buf[0], want_sent);
	H_ASSERT(strcmp(r->side[0].buf[0], want_recv) == 0, "receiver stdout '%s', want '%s'",
		 r->side[0].buf[0], want_recv);
	H_ASSERT(files_equal(in, out), "%s differs from %s", out, in);

	h_cluster_stop(ds, 2);
	H_EQ(unlink(in), 0);
	H_EQ(unlink(out), 0);
	H_EQ(unlink(ready), 0);
	H_EQ(rmdir(dir), 0);
}

/*
 * @err, a stderr with progress (@verb "sent" or "received"): at least two
 * "\rsluice-copy: VERB " lines, each "of 24 MiB (", each erasing the rest
 * of the line, the last one 100%, at most one per PERIOD_MS of @ms (plus
 * the first and the last), then a newline and the report line.
 */
static void assert_progress(const char *err, const char *verb, int64_t ms)
{
	char head[64], last[128], report[64];
	unsigned lines, of_total;
	const char *p, *tail;

	snprintf(head, sizeof(head), "\rsluice-copy: %s ", verb);
	lines = count_in(err, head);
	of_total = count_in(err, " of " FILE_HUMAN " (");
	H_ASSERT(lines >= 2, "%u progress lines '%s' in '%s'", lines, verb, err);
	H_ASSERT(of_total == lines, "%u of %u lines say 'of " FILE_HUMAN "': '%s'", of_total,
		 lines, err);
	H_ASSERT(count_in(err, "\033[K") == lines, "%u erases for %u lines",
		 count_in(err, "\033[K"), lines);
	H_ASSERT(lines <= ms / PERIOD_MS + 2, "%u progress lines in %lld ms: more than one"
		 " per %d ms", lines, (long long)ms, PERIOD_MS);
	for (p = err, tail = NULL; (p = strstr(p, head)); p++)
		tail = p;
	snprintf(last, sizeof(last), "%s" FILE_HUMAN " of " FILE_HUMAN " (100%%), ", head);
	H_ASSERT(strncmp(tail, last, strlen(last)) == 0, "last progress line '%s'", tail + 1);
	tail = strchr(tail, '\n');
	H_ASSERT(tail, "the progress line is not ended: '%s'", err);
	snprintf(report, sizeof(report), "\nsluice-copy: %s %u bytes in ", verb, FILE_BYTES);
	H_ASSERT(strncmp(tail, report, strlen(report)) == 0, "after the progress: '%s'", tail);
}

/* @err, a stderr without progress: exactly the report line. */
static void assert_quiet(const char *err, const char *verb)
{
	char report[64];

	snprintf(report, sizeof(report), "sluice-copy: %s %u bytes in ", verb, FILE_BYTES);
	H_ASSERT(strncmp(err, report, strlen(report)) == 0, "stderr '%s'", err);
	H_ASSERT(count_in(err, "\n") == 1 && err[strlen(err) - 1] == '\n',
		 "more than the report line: '%s'", err);
	H_ASSERT(!strchr(err, '\r') && !strchr(err, '\033') && !strstr(err, " of "),
		 "progress on a pipe: '%s'", err);
}

START_TEST(copy_progress_tty)
{
	struct copy_run r;

	copy_run(&r, true, NULL, true, NULL);
	assert_progress(r.side[1].buf[1], "sent", r.ms);
	assert_progress(r.side[0].buf[1], "received", r.ms);
}
END_TEST

START_TEST(copy_quiet_pipe)
{
	struct copy_run r;

	copy_run(&r, false, NULL, false, NULL);
	assert_quiet(r.side[1].buf[1], "sent");
	assert_quiet(r.side[0].buf[1], "received");
}
END_TEST

START_TEST(copy_overrides)
{
	struct copy_run r;

	copy_run(&r, false, "--progress", true, "--no-progress");
	assert_quiet(r.side[1].buf[1], "sent");
	assert_progress(r.side[0].buf[1], "received", r.ms);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tools");
	TCase *tc;

	tc = h_tcase(s, "copy_progress_tty", 300);
	tcase_add_test(tc, copy_progress_tty);
	tc = h_tcase(s, "copy_quiet_pipe", 300);
	tcase_add_test(tc, copy_quiet_pipe);
	tc = h_tcase(s, "copy_overrides", 300);
	tcase_add_test(tc, copy_overrides);
	return h_run_suite(s);
}
