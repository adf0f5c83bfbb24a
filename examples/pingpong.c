/* pingpong.c - timed round trips between two sluice queues.
 *   pingpong serve [PORT]            echo each message to its sender until
 *                                    one with tag 0x1ff (one client at a time)
 *   pingpong NODE [PORT [ROUNDS]]    ROUNDS round trips of 64 bytes (default
 *                                    1000) to NODE:PORT, then stop the server
 * PORT defaults to 5000.  The server runs its own poll() loop (sl_fd,
 * sl_arm); the client blocks in sl_wait.  The lines between "man:" markers
 * are the EXAMPLES of the manual pages they name; tests/examples.test
 * checks that the pages show them unchanged.
 * Build: cc pingpong.c $(pkg-config --cflags --libs sluice) */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sluice.h>

#define SIZE 64			/* bytes per message */
#define TAG_PING 0x100		/* 0x100..0x1fe: pings */
#define TAG_STOP 0x1ff
#define PING_CTX 1		/* user_ctx of the server's receive */
#define ECHO_CTX 2		/* ... of its sends */

static struct sl_ctx *open_ctx(void)
{
	struct sl_ctx *ctx;

	/* man: sl_open(3) */
	int rc = sl_open(NULL, &ctx);

	if (rc < 0) {
		fprintf(stderr, "sluiced: %s\n", strerror(-rc));
		exit(1);
	}
	printf("node %08x\n", sl_local_node(ctx));
	/* man: end */
	return ctx;
}

static struct sl_queue *open_queue(struct sl_ctx *ctx, uint32_t port)
{
	struct sl_queue *q;

	/* man: sl_queue_open(3) */
	int rc = sl_queue_open(ctx, port, 64, &q);     /* port 0: any free one */

	if (rc < 0) {
		fprintf(stderr, "port %u: %s\n", port, strerror(-rc));
		exit(1);
	}
	sl_addr_t me = sl_queue_addr(q);

	printf("bound %08x:%u\n", me.node, me.port);
	/* man: end */
	fflush(stdout);
	return q;
}

static void *alloc(struct sl_queue *q, size_t len)
{
	/* man: sl_alloc(3) */
	void *buf = sl_alloc(q, len);

	if (!buf) {
		fprintf(stderr, "arena full: free buffers, or a larger arena_bytes\n");
		exit(1);
	}
	/* man: end */
	return buf;
}

static unsigned echoes_out;	/* the server's sends not yet completed */

/* Send completions of the server's echoes: nothing to do but check.
 * @n: what sl_poll() returned. */
static int check_echoes(const struct sl_cqe *cqes, int n)
{
	int i;

	if (n < 0)
		return n;
	for (i = 0; i < n; i++, echoes_out--)
		if (cqes[i].status != SL_OK) {
			fprintf(stderr, "echo: %s\n", sl_strerror(cqes[i].status));
			return -1;
		}
	return 0;
}

/* Echo @in's message (now in @in_buf) from @out, then take the next one
 * (none after the stop message).  Returns 0 or -errno. */
static int echo(struct sl_queue *q, const struct sl_cqe *in, char *in_buf, char *out)
{
	struct sl_cqe done[16];
	int rc, n;

	if (in->status != SL_OK) {
		fprintf(stderr, "receive: %s\n", sl_strerror(in->status));
		return -EIO;
	}
	memcpy(out, in_buf, in->len);
	/* man: sl_send(3) */
	/* To the sender, with its tag.  A full SQ (-EAGAIN) waits for the
	 * completions of earlier echoes, which need nothing but a check. */
	while ((rc = sl_send(q, in->peer, in->tag, out, in->len, ECHO_CTX)) == -EAGAIN)
		if ((n = sl_wait(q, -1)) < 0 || check_echoes(done, sl_poll(q, done, 16)) < 0)
			return n < 0 ? n : -EIO;
	echoes_out += rc == 0;
	/* Any sender, tags 0x100..0x1ff. */
	if (rc == 0 && in->tag != TAG_STOP)
		rc = sl_recv(q, SL_ANY_SOURCE, 0x100, ~0xffull, in_buf, SIZE, PING_CTX);
	/* man: end */
	return rc;
}

static int serve(struct sl_queue *q)
{
	char *in_buf = alloc(q, SIZE), *out = alloc(q, SIZE);
	int rc = sl_recv(q, SL_ANY_SOURCE, 0x100, ~0xffull, in_buf, SIZE, PING_CTX);
	int i, n = 0, stop = 0;
	struct sl_cqe cqes[16];

	/* man: sl_poll(3) #2 */
	struct pollfd pfd = { .fd = sl_fd(q), .events = POLLIN };

	while (rc == 0 && !stop) {
		while (rc == 0 && (n = sl_poll(q, cqes, 16)) > 0)
			for (i = 0; rc == 0 && i < n; i++) {
				if (cqes[i].user_ctx != PING_CTX) {
					rc = check_echoes(&cqes[i], 1);
					continue;
				}
				rc = echo(q, &cqes[i], in_buf, out);
				stop = cqes[i].tag == TAG_STOP;
			}
		if (n < 0)
			rc = n;         /* -EPROTO: the ring is corrupt */
		else if (rc == 0 && !stop && sl_arm(q) == 0 && poll(&pfd, 1, -1) < 0)
			rc = errno == EINTR ? 0 : -errno;
	}
	/* man: end */
	/* The stop message's echo leaves before the queue closes. */
	while (rc == 0 && echoes_out > 0) {
		n = sl_wait(q, 10000);
		rc = n <= 0 ? (n ? n : -ETIMEDOUT) : check_echoes(cqes, sl_poll(q, cqes, 16));
	}
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One round trip: the pong in @rbuf must be the ping in @sbuf.
 * Returns 0, or -errno, or SL_ERR_* status (> 0). */
static int round_trip(struct sl_queue *q, sl_addr_t server, uint64_t tag, char *sbuf,
		      char *rbuf)
{
	struct sl_cqe cqes[2];
	int rc, n, i, got = 0;

	rc = sl_recv(q, server, tag, ~0ull, rbuf, SIZE, 1);
	if (rc == 0)
		rc = sl_send(q, server, tag, sbuf, SIZE, 2);
	/* man: sl_poll(3) #1 */
	while (rc == 0 && got < 2) {
		n = sl_wait(q, 10000);                  /* ms; 0: timed out */
		if (n <= 0)
			return n < 0 ? n : -ETIMEDOUT;
		n = sl_poll(q, cqes, 2);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++, got++)
			if (cqes[i].status != SL_OK)
				rc = cqes[i].status;
	}
	/* man: end */
	if (rc == 0 && memcmp(sbuf, rbuf, SIZE) != 0)
		rc = -EBADMSG;
	return rc;
}

static int ping(struct sl_queue *q, sl_addr_t server, unsigned rounds)
{
	char *sbuf = alloc(q, SIZE), *rbuf = alloc(q, SIZE);
	uint64_t t0, best = UINT64_MAX, sum = 0;
	unsigned i;
	int rc = 0;

	for (i = 0; rc == 0 && i < rounds; i++) {
		memset(sbuf, 'a' + (int)(i % 26), SIZE);
		t0 = now_ns();
		rc = round_trip(q, server, TAG_PING + i % (TAG_STOP - TAG_PING), sbuf, rbuf);
		t0 = now_ns() - t0;
		best = t0 < best ? t0 : best;
		sum += t0;
	}
	if (rc == 0)
		rc = round_trip(q, server, TAG_STOP, sbuf, rbuf);
	if (rc != 0) {
		fprintf(stderr, "round trip %u: %s\n", i,
			rc < 0 ? strerror(-rc) : sl_strerror(rc));
		return 1;
	}
	printf("%u round trips of %d bytes: mean %.1f us, best %.1f us\n", rounds, SIZE,
	       rounds ? sum / 1e3 / rounds : 0.0, rounds ? best / 1e3 : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	int serving = argc > 1 && strcmp(argv[1], "serve") == 0;
	uint32_t port = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 5000;
	unsigned rounds = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1000;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	int rc;

	if (argc < 2 || argc > 4 || port == 0 || port > 65535) {
		fprintf(stderr, "usage: pingpong serve [PORT] | pingpong NODE [PORT [ROUNDS]]\n");
		return 2;
	}
	ctx = open_ctx();
	q = open_queue(ctx, serving ? port : 0);
	if (serving) {
		rc = serve(q);
		if (rc < 0)
			fprintf(stderr, "serve: %s\n", strerror(-rc));
		rc = rc < 0;
	} else {
		/* man: sl_node_resolve(3) */
		uint32_t node;

		/* A node name: a peer, or one the daemon looks up. */
		rc = sl_node_resolve(ctx, argv[1], &node);
		if (rc < 0) {
			fprintf(stderr, "%s: %s\n", argv[1], strerror(-rc));
			rc = 1;
		} else {
			rc = ping(q, (sl_addr_t){ node, port }, rounds);
		}
		/* man: end */
	}
	sl_close(ctx);
	return rc;
}
