/*
 * fd_limits.h - the daemon's descriptor budget under RLIMIT_NOFILE: what
 * the configuration needs, the soft limit raised to meet it at start, and
 * what is said when a queue is refused for want of descriptors.
 *
 * The budget:
 * - per queue (max_queues), FD_PER_QUEUE: its two doorbell eventfds (the
 *   memfd is closed once the client has it; only the queue being made
 *   holds one) and the control socket of its client (at most one client
 *   per queue counts: a client without a queue holds one too);
 * - per configured peer, FD_PER_PEER: the link's connection, and the
 *   nudge or the peer's new dial that may overlap it;
 * - FD_LIMITS_OWN for the daemon itself.
 * Connections from strangers waiting for their handshake are not counted.
 *
 * Past the limit the daemon keeps running: a queue open fails (the
 * client gets -ENFILE, the log says so once per episode), a new client is
 * refused with a reason (fd_reserve.h).  Refusing to start would stop a
 * node whose clients open far fewer queues than max_queues allows.
 */
#ifndef SLD_FD_LIMITS_H
#define SLD_FD_LIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct config;

#define FD_PER_QUEUE 3u
#define FD_PER_PEER 2u
/* The daemon's own: stdio, the lock, libev's epoll, signal pipe and
 * eventfd, the spare, the control, admin and tcp listening sockets
 * (9 to 13 measured idle), up to ADMIN_CONNS_MAX admin connections (16),
 * files opened for a moment (the statistics file, /proc, key files), and
 * the verbs device's channels. */
#define FD_LIMITS_OWN 32u

/* Seconds between two log lines about queues refused for descriptors. */
#define FD_LIMITS_LOG_S 10.0

/* The descriptors @c needs: FD_PER_QUEUE x max_queues + FD_PER_PEER x
 * peers + FD_LIMITS_OWN. */
uint64_t fd_limits_need(const struct config *c);

/*
 * fd_limits_raise - at start: raise the soft RLIMIT_NOFILE to the hard
 * limit (fs.nr_open when unlimited) and log one line: the limit now and
 * before, and what @c needs (fd_limits_need); a warning, naming the fix,
 * when the limit is below that or the raise failed.  Returns the soft
 * limit now in force (0 when getrlimit failed, logged).
 */
uint64_t fd_limits_raise(const struct config *c);

/*
 * fd_limits_check - for --check-config: would @c fit under the hard limit
 * that a start raises to?  Returns 0, or 1 with the warning (the numbers
 * and the fix) in @warn (@cap bytes).  The configuration stays valid
 * either way: a start only warns.
 */
int fd_limits_check(const struct config *c, char *warn, size_t cap);

/*
 * fd_limits_queue_refused - a queue for client @pid could not be made:
 * @err is EMFILE (the daemon's RLIMIT_NOFILE) or ENFILE (the system's
 * file table).  Logs a warning with the limit, @queues open, @clients
 * connected and the fix, once per episode: at once, then at most every
 * FD_LIMITS_LOG_S with the number refused since.
 */
void fd_limits_queue_refused(const struct config *c, pid_t pid, int err, unsigned queues,
			     unsigned clients);

#endif
