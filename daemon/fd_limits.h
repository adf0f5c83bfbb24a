/*
 * fd_limits.h - the daemon's descriptor budget under RLIMIT_NOFILE: what
 * the configuration needs, and the soft limit raised to meet it at start.
 *
 * The budget, per queue: its two doorbell eventfds (the memfd is closed
 * once the client has it) and the control socket of its client (at most
 * one client per queue counts); per configured peer, one socket; and
 * FD_LIMITS_OWN for the daemon itself.
 */
#ifndef SLD_FD_LIMITS_H
#define SLD_FD_LIMITS_H

#include <stdint.h>

struct config;

/* Descriptors the daemon needs beyond its queues', clients' and links':
 * listening sockets, the lock, the loop's epoll and signal fds, the spare
 * (fd_reserve.h). */
#define FD_LIMITS_OWN 32u

/*
 * fd_limits_raise - raise the soft RLIMIT_NOFILE to the hard limit and log
 * one line: the limit now, and the descriptors max_queues needs (2 per
 * queue, 1 per client, FD_LIMITS_OWN, 1 per peer); a warning when the
 * limit is below that.  Returns the soft limit now in force (0 when
 * getrlimit failed, logged).
 */
uint64_t fd_limits_raise(const struct config *c);

#endif
