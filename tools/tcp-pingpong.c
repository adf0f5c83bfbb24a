/*
 * tcp-pingpong - raw TCP ping-pong, the baseline for sluice-perf's latency
 * test (tcp-stream is the one for its bandwidth test).
 *
 *   tcp-pingpong --server --port P [--host H] [--busy-poll]
 *   tcp-pingpong --client --host H --port P [--size 8] [--iters 100000]
 *                [--warmup 1000] [--busy-poll] [--json]
 *
 * The client first sends an 8-byte header (magic, message size; network
 * order) so that the server reads whole messages, as a real application
 * framing its stream would.  Then each iteration writes one message and
 * reads the echo.  TCP_NODELAY is set on both sides: without it Nagle's
 * algorithm would hold back small writes and measure the delayed-ACK timer
 * instead of the stack.  With --busy-poll the sockets are non-blocking and
 * both sides spin on recv(MSG_DONTWAIT), which removes the scheduler's
 * wake-up from the round trip (compare with sluice-perf --busy-poll).
 *
 * Each round trip is timed with CLOCK_MONOTONIC; the report gives the median
 * and 99th percentile of the one-way latency (RTT/2, nearest rank) and the
 * median RTT.  The server serves one client and exits when it closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common.h"
#include "tcp_common.h"

#define PROG "tcp-pingpong"
#define HDR_MAGIC 0x534c5050u	/* "SLPP" */
#define SIZE_MAX_MSG (1u << 30)	/* as SL_MSG_MAX of sluice.h */

struct opts {
	int role;		/* 's' or 'c' */
	const char *host;
	const char *port;
	uint64_t size;
	uint64_t iters;
	uint64_t warmup;
	bool busy;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --server --port P [--host H] [--busy-poll]\n"
		"       " PROG " --client --host H --port P [--size BYTES] [--iters N]\n"
		"                    [--warmup N] [--busy-poll] [--json]\n"
		"\n"
		"Raw TCP ping-pong (TCP_NODELAY), the baseline for sluice-perf.\n"
		"  --server         serve one client, exit when it closes\n"
		"  --client         measure round trips against a server\n"
		"  --host H         address to bind (server, default 127.0.0.1) or\n"
		"                   connect to (client, required)\n"
		"  --port P         TCP port, 1..65535\n"
		"  --size BYTES     message size, 1..1G, K/M/G suffix allowed\n"
		"                   (default 8)\n"
		"  --iters N        measured round trips (default 100000)\n"
		"  --warmup N       unmeasured round trips first (default 1000)\n"
		"  --busy-poll      non-blocking sockets, spin on recv(MSG_DONTWAIT)\n"
		"  --json           print one JSON object instead of text\n"
		"  --help           this text\n");
}

static int run_server(const struct opts *o)
{
	int fd, rc;
	uint32_t hdr[2];
	size_t size;
	char *buf;

	fd = tcp_accept_one(tcp_listen(o->host, o->port));
	tcp_set_opts(fd, o->busy);

	rc = tcp_read_full(fd, hdr, sizeof(hdr), o->busy);
	if (rc == 0) {
		close(fd);
		return 0;
	}
	if (rc < 0)
		die("reading header: %s", strerror(errno));
	if (ntohl(hdr[0]) != HDR_MAGIC)
		die("bad header from client (not " PROG "?)");
	size = ntohl(hdr[1]);
	if (size == 0 || size > SIZE_MAX_MSG)
		die("client asked for message size %zu (allowed 1..%" PRIu64 ")",
		    size, (uint64_t)SIZE_MAX_MSG);
	buf = malloc(size);
	if (!buf)
		die("out of memory");

	/* Echo whole messages until the client closes between two of them. */
	for (;;) {
		rc = tcp_read_full(fd, buf, size, o->busy);
		if (rc == 0)
			break;
		if (rc < 0)
			die("read: %s", strerror(errno));
		if (tcp_write_full(fd, buf, size, o->busy) < 0)
			die("write: %s", strerror(errno));
	}
	free(buf);
	close(fd);
	return 0;
}

static int run_client(const struct opts *o)
{
	uint64_t total = o->warmup + o->iters, i, *rtt;
	uint64_t med, p99;
	uint32_t hdr[2];
	char *tx, *rx;
	int fd;

	fd = tcp_connect(o->host, o->port);
	/* Non-blocking only after connect, so connect itself stays simple. */
	tcp_set_opts(fd, o->busy);

	tx = calloc(1, o->size);
	rx = calloc(1, o->size);
	rtt = calloc(o->iters, sizeof(*rtt));
	if (!tx || !rx || !rtt)
		die("out of memory");

	hdr[0] = htonl(HDR_MAGIC);
	hdr[1] = htonl((uint32_t)o->size);
	if (tcp_write_full(fd, hdr, sizeof(hdr), o->busy) < 0)
		die("write: %s", strerror(errno));

	for (i = 0; i < total; i++) {
		size_t stamp = o->size < sizeof(i) ? o->size : sizeof(i);
		uint64_t t0, t1;
		int rc;

		/* A per-iteration stamp proves the echo is this round trip's. */
		memcpy(tx, &i, stamp);
		t0 = now_ns();
		if (tcp_write_full(fd, tx, o->size, o->busy) < 0)
			die("write: %s", strerror(errno));
		rc = tcp_read_full(fd, rx, o->size, o->busy);
		t1 = now_ns();
		if (rc <= 0)
			die("read: %s", rc == 0 ? "server closed" : strerror(errno));
		if (memcmp(tx, rx, stamp) != 0)
			die("echo %" PRIu64 " does not match what was sent", i);
		if (i >= o->warmup)
			rtt[i - o->warmup] = t1 - t0;
	}
	close(fd);

	qsort(rtt, o->iters, sizeof(*rtt), cmp_u64);
	med = percentile(rtt, o->iters, 50);
	p99 = percentile(rtt, o->iters, 99);
	if (o->json) {
		printf("{\"test\":\"tcp-pingpong\",\"size\":%" PRIu64
		       ",\"iterations\":%" PRIu64 ",\"warmup\":%" PRIu64
		       ",\"busy_poll\":%s,\"median_us\":%.3f,\"p99_us\":%.3f"
		       ",\"rtt_median_us\":%.3f}\n",
		       o->size, o->iters, o->warmup, o->busy ? "true" : "false",
		       med / 2e3, p99 / 2e3, med / 1e3);
	} else {
		printf("%10s %10s %12s %12s %16s\n", "size(B)", "iterations",
		       "median(us)", "p99(us)", "rtt_median(us)");
		printf("%10" PRIu64 " %10" PRIu64 " %12.2f %12.2f %16.2f\n",
		       o->size, o->iters, med / 2e3, p99 / 2e3, med / 1e3);
	}
	free(tx);
	free(rx);
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", no_argument, NULL, 'c' },
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 'z' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "busy-poll", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .size = 8, .iters = 100000, .warmup = 1000 };
	uint64_t port;
	int c;

	tool_name = PROG;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'c':
			if (o.role && o.role != c)
				bad_usage("--server and --client are exclusive");
			o.role = c;
			break;
		case 'H':
			o.host = optarg;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &port) < 0)
				bad_usage("bad --port '%s' (1..65535)", optarg);
			o.port = optarg;
			break;
		case 'z':
			if (parse_u64(optarg, 1, SIZE_MAX_MSG, &o.size) < 0)
				bad_usage("bad --size '%s' (1..1G)", optarg);
			break;
		case 'n':
			if (parse_u64(optarg, 1, 1000000000, &o.iters) < 0)
				bad_usage("bad --iters '%s' (1..1e9)", optarg);
			break;
		case 'w':
			if (parse_u64(optarg, 0, 1000000000, &o.warmup) < 0)
				bad_usage("bad --warmup '%s' (0..1e9)", optarg);
			break;
		case 'b':
			o.busy = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt_long has already said what was wrong. */
			return try_help();
		}
	}
	reject_operands(argc, argv);
	if (!o.role)
		bad_usage("one of --server or --client is required");
	if (!o.port)
		bad_usage("--port is required");
	if (o.role == 'c' && !o.host)
		bad_usage("--client needs --host");
	if (!o.host)
		o.host = "127.0.0.1";	/* loopback only unless told otherwise */

	return o.role == 's' ? run_server(&o) : run_client(&o);
}
