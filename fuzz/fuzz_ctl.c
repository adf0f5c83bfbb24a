/*
 * fuzz_ctl.c - the control socket (daemon/session.c) as a local client
 * reaches it: datagrams on runtime_dir/sluiced.sock (SOCK_SEQPACKET),
 * served by the daemon's loop: HELLO, QUEUE_OPEN (a queue, its segment
 * and doorbells passed back with SCM_RIGHTS), QUEUE_CLOSE, and anything
 * else a client may send.
 *
 * Input: messages, each a length byte and that many bytes (at most
 * FUZZ_CTL_MSG_MAX; the length byte 0xff instead closes the connection
 * and opens a new one, so that a client goes away with its queues).
 *
 * Oracles beyond the sanitizers: the daemon answers each datagram or
 * drops the client, within FUZZ_CTL_SPINS loop iterations; a reply is
 * one struct sl_ctl_rep that echoes the request's header, with error 0
 * or a positive errno; a QUEUE_OPEN that succeeds passes exactly three
 * fds, the first a segment of the size the reply names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz_daemon.h"
#include "sl_shm.h"

#define FUZZ_CTL_MSG_MAX 64
#define FUZZ_CTL_MSGS_MAX 64
#define FUZZ_CTL_SPINS 10000
#define FUZZ_CTL_RECONNECT 0xff

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_ctl: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static int ctl_connect(struct daemon *d)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	unsigned spins = 0;

	if (fd < 0)
		fail("socket", strerror(errno));
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", d->ctl_path) >=
	    sizeof(sun.sun_path))
		fail("control socket path too long", d->ctl_path);
	/* The backlog is the daemon's to empty: let its loop accept. */
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		if (errno != EAGAIN || ++spins > FUZZ_CTL_SPINS)
			fail("connect", strerror(errno));
		ev_run(d->loop, EVRUN_NOWAIT);
	}
	return fd;
}

/* Check reply @rep (@n bytes, @fds of @nfds) to request @req (@len bytes).
 * The fds are closed. */
static void check_reply(const uint8_t *req, size_t len, const struct sl_ctl_rep *rep,
			ssize_t n, const int *fds, unsigned nfds)
{
	struct sl_ctl_req r = { 0 };
	struct stat st;
	unsigned i;

	memcpy(&r, req, len < sizeof(r) ? len : sizeof(r));
	if (n != (ssize_t)sizeof(*rep))
		fail("a reply that is not one struct sl_ctl_rep", NULL);
	if (len >= sizeof(r.hdr) && memcmp(&rep->hdr, &r.hdr, sizeof(r.hdr)) != 0)
		fail("a reply that does not echo the request's header", NULL);
	if (rep->error < 0)
		fail("a negative error in a reply", NULL);
	if (nfds && (rep->error || r.hdr.op != SL_CTL_QUEUE_OPEN || nfds != 3))
		fail("fds passed with a reply other than a queue's", NULL);
	if (r.hdr.op == SL_CTL_QUEUE_OPEN && len == sizeof(r) && !rep->error) {
		if (nfds != 3)
			fail("a queue opened without its three fds", NULL);
		if (fstat(fds[0], &st) < 0 || (uint64_t)st.st_size != rep->seg_size)
			fail("a segment whose size is not the reply's", NULL);
		if (rep->port == 0 || rep->port > 65535)
			fail("a queue bound to no port", NULL);
	}
	for (i = 0; i < nfds; i++)
		if (close(fds[i]) < 0)
			fail("close", strerror(errno));
}

/* Send one datagram and wait for its answer.  Returns false when the
 * daemon dropped the client. */
static bool exchange(struct daemon *d, int fd, const uint8_t *msg, size_t len)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct sl_ctl_rep rep;
	unsigned spins;

	if (send(fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		return false;	/* EPIPE: dropped already */
	for (spins = 0; spins < FUZZ_CTL_SPINS; spins++) {
		struct iovec iov = { .iov_base = &rep, .iov_len = sizeof(rep) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		int fds[8];
		unsigned nfds = 0;
		struct cmsghdr *cm;
		ssize_t n;

		ev_run(d->loop, EVRUN_NOWAIT);
		n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return false;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; CMSG_LEN((i + 1) * sizeof(int)) <= cm->cmsg_len &&
					   nfds < 8; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		}
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			fail("a reply larger than struct sl_ctl_rep, or too many fds", NULL);
		check_reply(msg, len, &rep, n, fds, nfds);
		return true;
	}
	fail("no answer to a request", NULL);
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct daemon *d = fuzz_daemon(true);
	size_t off = 0;
	unsigned msgs = 0;
	bool alive = true;
	int fd = ctl_connect(d);

	while (off < size && msgs++ < FUZZ_CTL_MSGS_MAX) {
		size_t len = data[off++];

		if (len == FUZZ_CTL_RECONNECT || !alive) {
			if (close(fd) < 0)
				fail("close", strerror(errno));
			ev_run(d->loop, EVRUN_NOWAIT);	/* the client goes */
			fd = ctl_connect(d);
			alive = true;
			if (len == FUZZ_CTL_RECONNECT)
				continue;
		}
		len %= FUZZ_CTL_MSG_MAX + 1;
		if (len > size - off)
			len = size - off;
		alive = exchange(d, fd, data + off, len);
		off += len;
	}
	if (close(fd) < 0)
		fail("close", strerror(errno));
	/* The daemon sees the close and drops the client with its queues. */
	ev_run(d->loop, EVRUN_NOWAIT);
	return 0;
}
