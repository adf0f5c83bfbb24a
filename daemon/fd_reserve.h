/*
 * fd_reserve.h - one spare descriptor, so that a client that connects while
 * the daemon is at RLIMIT_NOFILE is refused with a reason (fd_limits.h
 * sizes the limit itself).
 *
 * When the limit is reached, accept() fails with EMFILE but the kernel
 * has already completed the client's connect(): the client would wait for
 * a reply that never comes.  So the daemon keeps one spare descriptor
 * (an open /dev/null) for exactly this: close it, accept the connection,
 * tell the client why it is refused, close it, open the spare again (the
 * well-known "EMFILE accept trick", as in libuv and nginx).  A client
 * thus gets a definite error at once instead of hanging.  The daemon is
 * single-threaded: nothing else can take the slot between the close and
 * the accept.
 */
#ifndef SLD_FD_RESERVE_H
#define SLD_FD_RESERVE_H

#include <stdint.h>

/* Open the spare descriptor.  Returns 0 or -errno (logged). */
int fd_spare_open(void);

/* Close the spare (teardown). */
void fd_spare_close(void);

/*
 * fd_accept - accept4(@listen_fd, SOCK_NONBLOCK | SOCK_CLOEXEC); at the
 * descriptor limit (EMFILE, ENFILE), accept one pending connection in the
 * spare's place instead, pass it to @refuse (which writes the reason; the
 * connection is closed after), and take the spare back.  @what names the
 * socket for the log, which says once per episode (and then at most every
 * FD_REFUSE_LOG_S) how many were refused and the limit; each refusal
 * counts in *@refused.
 * Returns the new descriptor; FD_REFUSED when a connection was refused
 * (accept again); or -1 with errno: EAGAIN (none pending), EMFILE when
 * there is no spare either (the caller pauses accepting, accept_pause.h),
 * or accept4's.
 */
#define FD_REFUSE_LOG_S 10.0
#define FD_REFUSED (-2)
int fd_accept(int listen_fd, const char *what, void (*refuse)(int fd, void *arg), void *arg,
	      uint64_t *refused);

#endif
