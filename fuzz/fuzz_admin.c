/*
 * fuzz_admin.c - the admin socket's request parser (daemon/admin.c): the
 * input is one byte, the split point, then what an operator's client
 * (sluicectl, or anything in admin_group) writes to
 * runtime_dir/sluiced-admin.sock before it half-closes: the bytes before
 * the split point go first and the daemon's loop reads them, then the
 * rest (a request that arrives in pieces); the daemon answers and
 * closes.  The
 * daemon context has two links (down) and one client with a queue, so
 * that every command has something to report.
 *
 * Oracles beyond the sanitizers: a non-empty request gets exactly one
 * line, a JSON object (json-c parses it); the daemon answers within
 * FUZZ_ADMIN_SPINS loop iterations (it never waits for more input after
 * the half-close).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

#include "admin.h"
#include "fuzz_daemon.h"
#include "session.h"

/* Requests are at most ADMIN_REQUEST_MAX bytes; more tests the refusal
 * only, and must fit the socket buffer. */
#define FUZZ_ADMIN_MAX 4096
#define FUZZ_ADMIN_SPINS 100000
#define FUZZ_ADMIN_SPLIT_SPINS 3
#define FUZZ_REPLY_MAX (1u << 20)

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_admin: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static int admin_connect(const struct daemon *d)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		fail("socket", strerror(errno));
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s", d->cfg.runtime_dir,
			     SLD_ADMIN_SOCKET_NAME) >= sizeof(sun.sun_path))
		fail("admin socket path too long", d->cfg.runtime_dir);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		fail("connect", strerror(errno));
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char reply[FUZZ_REPLY_MAX + 1];
	static bool ready;
	struct daemon *d = fuzz_daemon(true);
	size_t got = 0, split;
	unsigned spins;
	bool eof = false;
	int fd;

	if (size > FUZZ_ADMIN_MAX + 1)
		return 0;
	if (!ready) {
		fuzz_links_setup(d);
		(void)fuzz_queue_open(fuzz_session_new(d), 5, 8);
		ready = true;
	}
	if (size < 1)
		return 0;
	split = data[0] < size - 1 ? data[0] : size - 1;
	data++;
	size--;
	fd = admin_connect(d);
	if (split) {
		if (send(fd, data, split, MSG_NOSIGNAL) != (ssize_t)split)
			fail("send", strerror(errno));
		for (spins = 0; spins < FUZZ_ADMIN_SPLIT_SPINS; spins++)
			ev_run(d->loop, EVRUN_NOWAIT);
	}
	/* EPIPE, ECONNRESET: the daemon answered the first part already. */
	if (size > split && send(fd, data + split, size - split, MSG_NOSIGNAL) < 0 &&
	    errno != EPIPE && errno != ECONNRESET)
		fail("send", strerror(errno));
	if (shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN)
		fail("shutdown", strerror(errno));
	for (spins = 0; !eof && spins < FUZZ_ADMIN_SPINS; spins++) {
		ssize_t n;

		ev_run(d->loop, EVRUN_NOWAIT);
		fuzz_xport_pump(d);
		n = recv(fd, reply + got, FUZZ_REPLY_MAX - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			eof = true;	/* ECONNRESET: an over-long request unread */
		if (got == FUZZ_REPLY_MAX)
			fail("reply over 1 MiB", NULL);
	}
	if (close(fd) < 0)
		fail("close", strerror(errno));
	if (!eof)
		fail("no answer to a half-closed request", NULL);
	reply[got] = '\0';
	if (size && got) {
		struct json_object *o;

		if (reply[got - 1] != '\n' || memchr(reply, '\n', got - 1))
			fail("reply is not one line", reply);
		o = json_tokener_parse(reply);
		if (!o || !json_object_is_type(o, json_type_object))
			fail("reply is not a JSON object", reply);
		json_object_put(o);
	}
	return 0;
}
