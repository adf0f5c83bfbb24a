/*
 * tcp_common.c - the socket helpers of tcp-pingpong and tcp-stream; see
 * tcp_common.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "tcp_common.h"

static struct addrinfo *resolve(const char *host, const char *port)
{
	struct addrinfo hints = { 0 }, *res;
	int rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		die("%s:%s: %s", host, port, gai_strerror(rc));
	return res;
}

int tcp_listen(const char *host, const char *port)
{
	struct addrinfo *res = resolve(host, port), *ai;
	int lfd = -1, one = 1;

	for (ai = res; ai; ai = ai->ai_next) {
		lfd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			     ai->ai_protocol);
		if (lfd < 0)
			continue;
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(lfd, 1) == 0)
			break;
		close(lfd);
		lfd = -1;
	}
	if (lfd < 0)
		die("cannot listen on %s:%s: %s", host, port, strerror(errno));
	freeaddrinfo(res);
	return lfd;
}

int tcp_accept_one(int lfd)
{
	int fd;

	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	close(lfd);
	return fd;
}

int tcp_connect(const char *host, const char *port)
{
	struct addrinfo *res = resolve(host, port), *ai;
	int fd = -1, saved = 0;

	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		die("cannot connect to %s:%s: %s", host, port,
		    strerror(saved ? saved : errno));
	freeaddrinfo(res);
	return fd;
}

void tcp_set_opts(int fd, bool busy)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die("setsockopt(TCP_NODELAY): %s", strerror(errno));
	if (busy) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			die("fcntl(O_NONBLOCK): %s", strerror(errno));
	}
}

int tcp_read_full(int fd, void *buf, size_t n, bool busy)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, (char *)buf + got, n - got,
				 busy ? MSG_DONTWAIT : 0);

		if (r > 0) {
			got += (size_t)r;
		} else if (r == 0) {
			if (got == 0)
				return 0;
			errno = EPIPE;
			return -1;
		} else if (errno == EINTR ||
			   (busy && (errno == EAGAIN || errno == EWOULDBLOCK))) {
			continue;
		} else {
			return -1;
		}
	}
	return 1;
}

int tcp_write_full(int fd, const void *buf, size_t n, bool busy)
{
	size_t put = 0;

	while (put < n) {
		ssize_t r = send(fd, (const char *)buf + put, n - put,
				 MSG_NOSIGNAL | (busy ? MSG_DONTWAIT : 0));

		if (r >= 0)
			put += (size_t)r;
		else if (errno == EINTR ||
			 (busy && (errno == EAGAIN || errno == EWOULDBLOCK)))
			continue;
		else
			return -1;
	}
	return 0;
}
