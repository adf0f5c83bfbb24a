/*
 * fuzz_tcp.c - the listen port as anything on the network reaches it: the
 * real tcp transport (daemon/xport/tcp.c: accept, reassembly of frames
 * across reads, the rx limit, WRITE placement against its MR table) under
 * the link layer, fed over a loopback TCP connection.
 *
 * Input: one mode byte (bits 1-4 as in fuzz_wire.c: receives posted on
 * FUZZ_PORT and sends queued toward fuzz-c, the peer that dials us; bits
 * 5-7: the size of the writes the bytes go in, 1 << (2 * n) bytes, so
 * that headers and payloads are cut across reads), then the byte stream.
 * The connection is half-closed after the last byte; the daemon's loop
 * runs until it closes the connection (a refused frame, or the end of the
 * stream) or has been idle FUZZ_TCP_IDLE_SPINS iterations in a row.
 *
 * The streams do the handshake in mode none: the real transport fills
 * in no proofs.  The network fuzzer (a live daemon with a peer and
 * clients beside it, after the authenticated handshake) is
 * tests/test_netfuzz.c (docs/security.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_daemon.h"
#include "link.h"
#include "queue.h"
#include "session.h"

#define FUZZ_TCP_IDLE_SPINS 200
#define FUZZ_TCP_SPINS_MAX 20000
#define FUZZ_TCP_MAX 8192

static uint16_t listen_port;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_tcp: %s: %s\n", what, strerror(errno));
	abort();
}

/* Swap the fake transport for tcp.c, listening on a free loopback port. */
static void use_tcp(struct daemon *d)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	struct xport_params p = d->xp->params;
	int fd, rc;

	d->xp = xport_tcp_create(d->loop, &link_upcalls, d, &p);
	if (!d->xp)
		fail("xport_tcp_create");
	/* A port the kernel picked is free; the race until listen is ours
	 * to lose (then the next one is tried). */
	do {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    getsockname(fd, (struct sockaddr *)&sin, &len) < 0 || close(fd) < 0)
			fail("a free port");
		listen_port = ntohs(sin.sin_port);
		sin.sin_port = 0;
		rc = d->xp->ops->listen(d->xp, "127.0.0.1", listen_port);
	} while (rc == -EADDRINUSE);
	if (rc) {
		errno = -rc;
		fail("listen");
	}
}

static int dial(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(listen_port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		fail("socket");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 && errno != EINPROGRESS)
		fail("connect");
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct daemon *d;
	size_t off = 1, chunk;
	unsigned spins, idle = 0;
	bool closed = false, shut = false;
	struct session *s;
	struct queue *q;
	char sink[65536];
	int fd;

	if (size < 1 || size > FUZZ_TCP_MAX)
		return 0;
	if (!d) {
		d = fuzz_daemon(false);
		use_tcp(d);
	}
	chunk = (size_t)1 << (2 * (data[0] >> 5));
	fuzz_security_from(d, data + 1, size - 1);
	fuzz_links_setup(d);
	s = fuzz_session_new(d);
	q = fuzz_queue_open(s, FUZZ_PORT, 16);
	if (q)
		fuzz_link_traffic(q, fuzz_peer_dialing_us(d), data[0]);
	fuzz_progress(d, 2);
	fd = dial();
	for (spins = 0; !closed && idle < FUZZ_TCP_IDLE_SPINS && spins < FUZZ_TCP_SPINS_MAX;
	     spins++) {
		bool moved = false;
		ssize_t n;

		if (off < size) {
			n = send(fd, data + off, size - off < chunk ? size - off : chunk,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0) {
				off += (size_t)n;
				moved = true;
			} else if (n < 0 && errno != EAGAIN && errno != ENOTCONN) {
				closed = true;	/* the daemon broke it: EPIPE, ECONNRESET */
			}
		} else if (!shut) {
			shut = shutdown(fd, SHUT_WR) == 0 || errno == ENOTCONN;
			moved = true;
		}
		ev_run(d->loop, EVRUN_NOWAIT);
		n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0)
			moved = true;
		else if (n == 0 || (errno != EAGAIN && errno != ENOTCONN))
			closed = true;
		if (q)
			fuzz_cq_consume(q);
		idle = moved ? 0 : idle + 1;
	}
	if (close(fd) < 0)
		fail("close");
	ev_run(d->loop, EVRUN_NOWAIT);	/* the daemon sees the close */
	fuzz_progress(d, 2);
	fuzz_session_free(s);
	fuzz_links_teardown(d);
	fuzz_progress(d, 1);
	return 0;
}
