/*
 * test_examples.c - the programs of examples/ run against real daemons and
 * say what they should (the README and the manual pages show them;
 * tests/examples.test checks that they show them unchanged).
 *   hello               on one node: its message to itself is sent and
 *                       received, "hello from <node>" from its own port
 *   pingpong            a server on node beta, a client on alpha: 200
 *                       round trips byte-exact, then the server stops and
 *                       both exit 0
 *   pingpong_no_daemon  with no daemon to reach, the programs say so and
 *                       exit 1 (the README's first version crashed)
 * Each program bounds its own waits (10 s without a completion); the
 * limits here are backstops for a program that hangs.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"

#define EX_TIMEOUT_MS 60000

/* The example @name, built in this tree. */
static void example_path(const char *name, char *path, size_t cap)
{
	const char *top = getenv("top_builddir");

	snprintf(path, cap, "%s/examples/%s", top ? top : ".", name);
	H_ASSERT(access(path, X_OK) == 0, "%s: %s (built by make?)", path, strerror(errno));
}

/* Run @argv against daemon @d; its output (stdout and stderr) in @out. */
static int run_on(const struct h_daemon *d, const char *const *argv, char *out, size_t cap)
{
	int rc;

	H_ASSERT(setenv("SLUICE_SOCKET", d ? d->sock : "/nonexistent/sluiced.sock", 1) == 0,
		 "setenv");
	rc = h_run(argv, out, cap, EX_TIMEOUT_MS);
	printf("$ %s%s%s%s%s\n%s", argv[0], argv[1] ? " " : "", argv[1] ? argv[1] : "",
	       argv[1] && argv[2] ? " " : "", argv[1] && argv[2] ? argv[2] : "", out);
	return rc;
}

START_TEST(hello)
{
	static const char *const names[] = { "alpha" };
	struct h_daemon nodes[1];
	char path[512], out[4096], want[128];
	const char *argv[] = { path, NULL };
	uint32_t me = sl_node_id("alpha");

	example_path("hello", path, sizeof(path));
	h_cluster_start(nodes, names, 1);
	H_EQ(run_on(&nodes[0], argv, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "received: ok \"hello from %08x\" from %08x:5000\n", me, me);
	H_ASSERT(strstr(out, want), "no line \"%s\" in:\n%s", want, out);
	H_ASSERT(strstr(out, "sent: ok\n"), "no \"sent: ok\" in:\n%s", out);
	h_cluster_stop(nodes, 1);
}
END_TEST

/* Start @argv against @d with its stdout on a pipe; wait until it printed
 * a line starting with @ready (or failed: then the test fails with what
 * it said).  Returns its pid; *@fd is the pipe's read end. */
static pid_t spawn_until(const struct h_daemon *d, const char *const *argv, const char *ready,
			 int *fd)
{
	char buf[4096];
	size_t len = 0;
	int pfd[2];
	pid_t pid;

	H_ASSERT(pipe2(pfd, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	pid = h_fork();
	if (pid == 0) {
		if (setenv("SLUICE_SOCKET", d->sock, 1) < 0 || dup2(pfd[1], 1) < 0 ||
		    dup2(pfd[1], 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	(void)close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		ssize_t n;

		H_ASSERT(poll(&p, 1, EX_TIMEOUT_MS) == 1, "%s said nothing for %d ms", argv[0],
			 EX_TIMEOUT_MS);
		n = read(pfd[0], buf + len, sizeof(buf) - 1 - len);
		H_ASSERT(n > 0, "%s ended before \"%s\": %.*s", argv[0], ready, (int)len, buf);
		len += (size_t)n;
		buf[len] = '\0';
		for (char *l = buf; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			if (strncmp(l, ready, strlen(ready)) == 0) {
				*fd = pfd[0];
				return pid;
			}
		H_ASSERT(len < sizeof(buf) - 1, "%s: too much output before \"%s\"", argv[0],
			 ready);
	}
}

START_TEST(pingpong)
{
	static const char *const names[] = { "alpha", "beta" };
	struct h_daemon nodes[2];
	char path[512], out[4096], server_out[4096];
	const char *serve[] = { path, "serve", "5000", NULL };
	const char *client[] = { path, "beta", "5000", "200", NULL };
	ssize_t n;
	size_t len = 0;
	int fd, st;
	pid_t server;

	example_path("pingpong", path, sizeof(path));
	h_cluster_start(nodes, names, 2);
	h_wait_link(&nodes[0], &nodes[1]);
	server = spawn_until(&nodes[1], serve, "bound ", &fd);
	H_EQ(run_on(&nodes[0], client, out, sizeof(out)), 0);
	H_ASSERT(strstr(out, "200 round trips of 64 bytes: mean "), "client said:\n%s", out);
	h_wait_children(&server, 1, EX_TIMEOUT_MS, &st);
	while ((n = read(fd, server_out + len, sizeof(server_out) - 1 - len)) > 0)
		len += (size_t)n;
	server_out[len] = '\0';
	(void)close(fd);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: status %#x, said:\n%s", st,
		 server_out);
	h_cluster_stop(nodes, 2);
}
END_TEST

START_TEST(pingpong_no_daemon)
{
	char hello_path[512], pingpong_path[512], out[4096];
	const char *a[] = { hello_path, NULL };
	const char *b[] = { pingpong_path, "serve", NULL };

	example_path("hello", hello_path, sizeof(hello_path));
	example_path("pingpong", pingpong_path, sizeof(pingpong_path));
	H_EQ(run_on(NULL, a, out, sizeof(out)), 1);
	H_ASSERT(strstr(out, "hello: no sluiced: No such file or directory"), "%s", out);
	H_EQ(run_on(NULL, b, out, sizeof(out)), 1);
	H_ASSERT(strstr(out, "sluiced: No such file or directory"), "%s", out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("examples");

	tcase_add_test(h_tcase(s, "hello", 120), hello);
	tcase_add_test(h_tcase(s, "pingpong", 120), pingpong);
	tcase_add_test(h_tcase(s, "pingpong_no_daemon", 120), pingpong_no_daemon);
	return h_run_suite(s);
}
