/*
 * tcp_common.h - the socket helpers of the raw TCP baselines, tcp-pingpong
 * and tcp-stream (libc only, like common.h).
 *
 * Every failure here but those of tcp_read_full() and tcp_write_full()
 * ends the program through die() (common.h): exit 1.
 */
#ifndef SLUICE_TOOLS_TCP_COMMON_H
#define SLUICE_TOOLS_TCP_COMMON_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A listening socket bound to @host:@port (numeric port; the first
 * address getaddrinfo() gives that binds), backlog 1, SO_REUSEADDR.
 */
int tcp_listen(const char *host, const char *port);

/* Accept one connection on @lfd, then close @lfd; returns the connection. */
int tcp_accept_one(int lfd);

/* A socket connected to @host:@port (numeric port). */
int tcp_connect(const char *host, const char *port);

/*
 * TCP_NODELAY on @fd (as sluiced sets on its links), and O_NONBLOCK when
 * @busy (the helpers below then spin instead of blocking).
 */
void tcp_set_opts(int fd, bool busy);

/*
 * Read exactly @n bytes.  Returns 1 when done, 0 on a clean EOF before the
 * first byte (the peer closed between messages), -1 on error or on EOF in
 * the middle of a message (errno set).  @busy: spin on recv(MSG_DONTWAIT).
 */
int tcp_read_full(int fd, void *buf, size_t n, bool busy);

/*
 * Write exactly @n bytes; MSG_NOSIGNAL turns a closed peer into EPIPE.
 * Returns 0, or -1 with errno set.  @busy: spin on send(MSG_DONTWAIT).
 */
int tcp_write_full(int fd, const void *buf, size_t n, bool busy);

#endif
