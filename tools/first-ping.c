/*
 * first-ping - the latency of one message, the first between two
 * endpoints: on a link that never carried a message, it is the cost of a
 * cold link (scripts/scale-bench).  Built by make, not installed.
 *
 *   first-ping --serve --port P [--socket PATH] [--ready-file F] [--timeout S]
 *   first-ping --to NODE:PORT [--socket PATH] [--size B] [--timeout S]
 *
 * The server binds P, posts one receive, says so in the ready file (not
 * over the link, which must stay untouched), and echoes the one message it
 * gets back to its sender.  The client opens its queue, posts the receive
 * for the echo, then times one send and its echo with CLOCK_MONOTONIC: it
 * prints "RTT_US ONE_WAY_US" (one-way = RTT / 2).  sluice-perf cannot
 * time this: its phase announcement crosses the link first.  Either side
 * gives up after --timeout seconds (default 30) without the completion it
 * waits for, and says which.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "sl_common.h"
#include "sluice.h"

#define PING_TAG 0x5049u	/* "PI" */
#define SIZE_MAX_PING (64u << 10)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: first-ping --serve --port P [--socket PATH] [--ready-file F] [--timeout S]\n"
		"       first-ping --to NODE:PORT [--socket PATH] [--size B] [--timeout S]\n"
		"\n"
		"Time one message and its echo, the first between two endpoints.\n"
		"  --serve          bind --port P, echo one message to its sender, exit\n"
		"  --to NODE:PORT   send one message there, print RTT_US ONE_WAY_US\n"
		"  --socket PATH    the daemon's control socket (default: $SLUICE_SOCKET,\n"
		"                   else " SL_DEFAULT_SOCKET ")\n"
		"  --size B         bytes of the message, 0 to 64K (default 8)\n"
		"  --ready-file F   server: created once the receive is posted\n"
		"  --timeout S      seconds to wait for a completion, 1 to 3600 (default 30)\n");
}

/* The next completion within @timeout_s seconds; dies naming @what. */
static struct sl_cqe next_cqe(struct sl_queue *q, uint64_t timeout_s, const char *what)
{
	uint64_t end = now_ns() + timeout_s * 1000000000ull;
	struct sl_cqe c;

	for (;;) {
		int rc = sl_poll(q, &c, 1);

		if (rc == 1)
			return c;
		if (rc < 0)
			die("sl_poll: %s", strerror(-rc));
		if (now_ns() >= end)
			die("no %s within %" PRIu64 " s", what, timeout_s);
		rc = sl_wait(q, 100);
		if (rc < 0 && rc != -EINTR)
			die("sl_wait while waiting for the %s: %s", what, strerror(-rc));
	}
}

static void check_ok(const struct sl_cqe *c, const char *what)
{
	if (c->status != SL_OK)
		die("%s completed %s", what, sl_strerror(c->status));
}

static void open_queue(const char *sock, uint32_t port, struct sl_ctx **ctx,
		       struct sl_queue **q)
{
	int rc = sl_open(sock, ctx);

	if (rc < 0)
		die("cannot connect to sluiced (%s): %s", sock ? sock : "default socket",
		    strerror(-rc));
	rc = sl_queue_open(*ctx, port, 16, q);
	if (rc < 0)
		die("cannot open a queue on port %" PRIu32 ": %s", port, strerror(-rc));
}

static void *alloc_or_die(struct sl_queue *q, size_t len)
{
	void *p = sl_alloc(q, len);

	if (!p)
		die("arena full: cannot allocate %zu bytes", len);
	return p;
}

static int serve(const char *sock, uint32_t port, const char *ready, uint64_t timeout_s)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe c;
	void *buf;
	int rc;

	open_queue(sock, port, &ctx, &q);
	buf = alloc_or_die(q, SIZE_MAX_PING);
	rc = sl_recv(q, SL_ANY_SOURCE, PING_TAG, ~0ull, buf, SIZE_MAX_PING, 1);
	if (rc < 0)
		die("sl_recv: %s", strerror(-rc));
	if (ready)
		write_ready_file(ready, "ready\n");
	c = next_cqe(q, timeout_s, "ping");
	check_ok(&c, "the receive of the ping");
	rc = sl_send(q, c.peer, PING_TAG, buf, c.len, 2);
	if (rc < 0)
		die("sl_send of the echo: %s", strerror(-rc));
	c = next_cqe(q, timeout_s, "completion of the echo");
	check_ok(&c, "the echo");
	sl_close(ctx);
	return 0;
}

static int ping(const char *sock, sl_addr_t to, uint64_t size, uint64_t timeout_s)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe c;
	void *sbuf, *rbuf;
	bool sent = false, echoed = false;
	uint64_t t0, t1 = 0;
	int rc;

	open_queue(sock, 0, &ctx, &q);
	sbuf = alloc_or_die(q, size ? size : 1);
	rbuf = alloc_or_die(q, size ? size : 1);
	memset(sbuf, 0x5a, size);
	rc = sl_recv(q, to, PING_TAG, ~0ull, rbuf, size, 1);
	if (rc < 0)
		die("sl_recv: %s", strerror(-rc));
	t0 = now_ns();
	rc = sl_send(q, to, PING_TAG, sbuf, size, 2);
	if (rc < 0)
		die("sl_send: %s", strerror(-rc));
	while (!sent || !echoed) {
		c = next_cqe(q, timeout_s, sent ? "echo" : "completion of the ping");
		if (c.user_ctx == 2) {
			check_ok(&c, "the ping");
			sent = true;
		} else {
			t1 = now_ns();
			check_ok(&c, "the receive of the echo");
			if (c.len != size)
				die("echo of %" PRIu64 " bytes, sent %" PRIu64, c.len, size);
			echoed = true;
		}
	}
	printf("%.2f %.2f\n", (double)(t1 - t0) / 1e3, (double)(t1 - t0) / 2e3);
	if (fflush(stdout) == EOF)
		die("cannot write the result: %s", strerror(errno));
	sl_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "serve", no_argument, NULL, 'S' },
		{ "port", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' },
		{ "socket", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *sock = NULL, *ready = NULL;
	uint64_t port = 0, size = 8, timeout_s = 30;
	bool server = false, have_to = false;
	sl_addr_t to = { 0, 0 };
	int c;

	tool_name = "first-ping";
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'S': server = true; break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &port) < 0)
				bad_usage("--port: 1 to 65535, got '%s'", optarg);
			break;
		case 't': parse_to(optarg, &to); have_to = true; break;
		case 's': sock = optarg; break;
		case 'z':
			if (parse_u64(optarg, 0, SIZE_MAX_PING, &size) < 0)
				bad_usage("--size: 0 to 64K, got '%s'", optarg);
			break;
		case 'r': ready = optarg; break;
		case 'T':
			if (parse_u64(optarg, 1, 3600, &timeout_s) < 0)
				bad_usage("--timeout: 1 to 3600 seconds, got '%s'", optarg);
			break;
		case 'h': usage(stdout); return 0;
		default: return try_help();
		}
	}
	reject_operands(argc, argv);
	if (server == have_to)
		bad_usage("one of --serve and --to");
	if (server && !port)
		bad_usage("--serve needs --port");
	return server ? serve(sock, (uint32_t)port, ready, timeout_s)
		      : ping(sock, to, size, timeout_s);
}
