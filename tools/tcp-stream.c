/*
 * tcp-stream - raw TCP streaming bandwidth, the baseline for sluice-perf's
 * bandwidth test (--test bw).
 *
 *   tcp-stream --server --port P [--host H]
 *   tcp-stream --client --host H --port P [--sizes LIST] [--iters N]
 *              [--warmup N] [--json]
 *
 * The client sends, the server receives, over one connection (TCP_NODELAY
 * on both sides, as sluiced sets on its links; kernel default buffers).
 * Per size the client runs a warm-up stream and then the measured one;
 * each stream is one phase:
 *   client -> server  header: magic "SLST", 0, size, count (u32, u32, u64,
 *                     u64, little-endian; 24 bytes)
 *   server -> client  READY (8 bytes), once its buffer of the size is
 *                     allocated and touched
 *   client -> server  count messages of size bytes, each one write loop
 *                     of the whole message from one buffer
 *   server -> client  ACK (8 bytes: count), once it has read every
 *                     message in full into its buffer
 * Time = first byte written .. ACK read, as sluice-perf's stream (first
 * send .. ACK).  Iteration and warm-up defaults are sluice-perf's for bw,
 * so both tools move the same bytes per size.  The server serves one
 * client and exits when it closes the connection between phases.
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

#include "common.h"
#include "tcp_common.h"

#define PROG "tcp-stream"
#define HDR_MAGIC 0x54534c53u	/* "SLST" little-endian */
#define HDR_LEN 24
#define SIZE_MAX_MSG ((uint64_t)1 << 30)	/* as SL_MSG_MAX of sluice.h */
#define MAX_SIZES 64

struct opts {
	int role;		/* 's' or 'c' */
	const char *host;
	const char *port;
	uint64_t sizes[MAX_SIZES];
	unsigned nsizes;
	uint64_t iters;		/* 0: stream_iters(size) */
	uint64_t warmup;	/* UINT64_MAX: warmup_iters(size) */
	bool json;
};

struct result {
	uint64_t size, iters;
	double secs;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --server --port P [--host H]\n"
		"       " PROG " --client --host H --port P [--sizes LIST]\n"
		"                  [--iters N] [--warmup N] [--json]\n"
		"\n"
		"Raw TCP streaming bandwidth (TCP_NODELAY), the baseline for\n"
		"sluice-perf --test bw: the client writes messages, the server reads\n"
		"each one in full.\n"
		"  --server         serve one client, exit when it closes\n"
		"  --client         send the streams to a server\n"
		"  --host H         address to bind (server, default 127.0.0.1) or\n"
		"                   connect to (client, required)\n"
		"  --port P         TCP port, 1..65535\n"
		"  --sizes LIST     comma-separated message sizes, 1..1G, K/M/G\n"
		"                   suffix allowed (default 64K,1M,16M)\n"
		"  --iters N        messages per size (default 64 MiB / size within\n"
		"                   1e4..1e6, at most 1 GiB, at least 8: as sluice-perf)\n"
		"  --warmup N       unmeasured messages first (default 1000, at most\n"
		"                   64 MiB of payload, at least 1)\n"
		"  --json           print a JSON array instead of the table\n"
		"  --help           this text\n"
		"MB/s is 1e6 and GB/s 1e9 payload bytes per second.\n");
}

/* ------------------------------------------------------------------ */
/* Server (receiver)                                                    */
/* ------------------------------------------------------------------ */

static void put_u64(int fd, uint64_t v)
{
	uint8_t b[8];

	put_le64(b, v);
	if (tcp_write_full(fd, b, sizeof(b), false) < 0)
		die("write: %s", strerror(errno));
}

static int run_server(const struct opts *o)
{
	uint64_t cap = 0, size, count, i;
	uint8_t hdr[HDR_LEN];
	char *buf = NULL;
	int fd, rc;

	fd = tcp_accept_one(tcp_listen(o->host, o->port));
	tcp_set_opts(fd, false);

	/* One phase per header, until the client closes between phases. */
	while ((rc = tcp_read_full(fd, hdr, sizeof(hdr), false)) == 1) {
		if (get_le32(hdr) != HDR_MAGIC)
			die("bad header from client (not " PROG "?)");
		size = get_le64(hdr + 8);
		count = get_le64(hdr + 16);
		if (size == 0 || size > SIZE_MAX_MSG || count == 0)
			die("client asked for %" PRIu64 " messages of %" PRIu64
			    " bytes (allowed 1..%" PRIu64 " bytes)", count, size,
			    SIZE_MAX_MSG);
		if (size > cap) {
			free(buf);
			buf = malloc(size);
			if (!buf)
				die("out of memory (%" PRIu64 " bytes)", size);
			memset(buf, 0, size);	/* no page faults in the stream */
			cap = size;
		}
		put_u64(fd, 0);		/* READY */
		for (i = 0; i < count; i++) {
			rc = tcp_read_full(fd, buf, size, false);
			if (rc <= 0)
				die("read: %s", rc == 0 ?
				    "client closed in the middle of a stream" :
				    strerror(errno));
		}
		put_u64(fd, count);	/* ACK */
	}
	if (rc < 0)
		die("reading header: %s", strerror(errno));
	free(buf);
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Client (sender)                                                      */
/* ------------------------------------------------------------------ */

static uint64_t get_u64(int fd, const char *what)
{
	uint8_t b[8];
	int rc = tcp_read_full(fd, b, sizeof(b), false);

	if (rc <= 0)
		die("reading %s: %s", what,
		    rc == 0 ? "server closed" : strerror(errno));
	return get_le64(b);
}

/* One stream of @count messages; returns nanoseconds from first write to ACK. */
static uint64_t stream(int fd, const char *buf, uint64_t size, uint64_t count)
{
	uint8_t hdr[HDR_LEN];
	uint64_t t0, i, acked;

	memset(hdr, 0, sizeof(hdr));
	put_le32(hdr, HDR_MAGIC);
	put_le64(hdr + 8, size);
	put_le64(hdr + 16, count);
	if (tcp_write_full(fd, hdr, sizeof(hdr), false) < 0)
		die("write: %s", strerror(errno));
	get_u64(fd, "READY");
	t0 = now_ns();
	for (i = 0; i < count; i++)
		if (tcp_write_full(fd, buf, size, false) < 0)
			die("write: %s", strerror(errno));
	acked = get_u64(fd, "ACK");
	if (acked != count)
		die("server acknowledged %" PRIu64 " of %" PRIu64 " messages",
		    acked, count);
	return now_ns() - t0;
}

static void print_row(const struct result *r)
{
	double bps = (double)r->size * (double)r->iters / r->secs;

	printf("%10" PRIu64 " %10" PRIu64 " %10.1f %10.3f %11.0f\n", r->size,
	       r->iters, bps / 1e6, bps / 1e9, (double)r->iters / r->secs);
	fflush(stdout);
}

static void print_json(const struct result *res, unsigned n)
{
	unsigned i;

	printf("[");
	for (i = 0; i < n; i++) {
		const struct result *r = &res[i];
		double bps = (double)r->size * (double)r->iters / r->secs;

		printf("%s\n  {\"test\":\"tcp-stream\",\"size\":%" PRIu64
		       ",\"iterations\":%" PRIu64 ",\"mb_s\":%.3f,\"gb_s\":%.6f"
		       ",\"msg_s\":%.1f}", i ? "," : "", r->size, r->iters,
		       bps / 1e6, bps / 1e9, (double)r->iters / r->secs);
	}
	printf("\n]\n");
}

static int run_client(const struct opts *o)
{
	struct result res[MAX_SIZES];
	uint64_t max = 0;
	unsigned i;
	char *buf;
	int fd;

	for (i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > max)
			max = o->sizes[i];
	buf = malloc(max);
	if (!buf)
		die("out of memory (%" PRIu64 " bytes)", max);
	memset(buf, 0xa5, max);
	fd = tcp_connect(o->host, o->port);
	tcp_set_opts(fd, false);

	if (!o->json)
		printf("%10s %10s %10s %10s %11s\n", "size(B)", "iterations",
		       "MB/s", "GB/s", "msg/s");
	for (i = 0; i < o->nsizes; i++) {
		uint64_t size = o->sizes[i];
		uint64_t warmup = o->warmup != UINT64_MAX ? o->warmup
			: warmup_iters(size);
		struct result *r = &res[i];

		if (warmup)
			stream(fd, buf, size, warmup);
		r->size = size;
		r->iters = o->iters ? o->iters : stream_iters(size);
		r->secs = stream(fd, buf, size, r->iters) / 1e9;
		if (!o->json)
			print_row(r);
	}
	if (o->json)
		print_json(res, o->nsizes);
	close(fd);
	free(buf);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Command line                                                         */
/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", no_argument, NULL, 'c' },
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.sizes = { 64u << 10, 1u << 20, 16u << 20 }, .nsizes = 3,
		.warmup = UINT64_MAX,
	};
	bool client_opts = false;
	uint64_t port;
	unsigned i;
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
			o.nsizes = parse_size_list("--sizes", optarg,
						   SIZE_MAX_MSG, o.sizes,
						   MAX_SIZES);
			for (i = 0; i < o.nsizes; i++)
				if (o.sizes[i] == 0)
					bad_usage("--sizes: 0 is not a message"
						  " size here (1..1G)");
			client_opts = true;
			break;
		case 'n':
			if (parse_u64(optarg, 1, 1000000000, &o.iters) < 0)
				bad_usage("bad --iters '%s' (1..1e9)", optarg);
			client_opts = true;
			break;
		case 'w':
			if (parse_u64(optarg, 0, 1000000000, &o.warmup) < 0)
				bad_usage("bad --warmup '%s' (0..1e9)", optarg);
			client_opts = true;
			break;
		case 'j':
			o.json = true;
			client_opts = true;
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
	if (o.role == 's' && client_opts)
		bad_usage("client options given with --server");
	if (!o.host)
		o.host = "127.0.0.1";	/* loopback only unless told otherwise */

	return o.role == 's' ? run_server(&o) : run_client(&o);
}
