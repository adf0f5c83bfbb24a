/*
 * harness.h - helpers for integration tests: real sluiced processes on
 * TCP loopback, each in a fresh runtime directory under /tmp.
 *
 * Conventions.  Functions meant for the test process itself (h_daemon_*,
 * h_cluster_*, h_wait_*) are fatal on any error: they fail the Check test
 * through h_fail(), which first prints every running daemon's log path and
 * last lines, so a failure always comes with the daemons' side of the
 * story.  Functions that client child processes may call (h_now_ms,
 * h_proc_*, h_read_byte, ...) never abort: they return a value or -errno.
 *
 * Daemons are started with PR_SET_PDEATHSIG, so a test process that dies
 * (failed assertion, Check timeout) does not leave daemons behind; on a
 * failure the runtime directory is kept for the log.
 */
#ifndef SL_TEST_HARNESS_H
#define SL_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sluice.h"

#define H_NAME_MAX 32
#define H_PATH_MAX 108		/* sun_path */
#define H_MAX_NODES 8
/* Bounded waits, milliseconds. */
#define H_START_TIMEOUT_MS 5000
#define H_STOP_TIMEOUT_MS 5000
#define H_LINK_TIMEOUT_MS 5000
/* A port nobody binds in these tests (privileged, tests do not use it). */
#define H_PORT_NOBODY 1u

struct h_daemon {
	char name[H_NAME_MAX];
	uint32_t node;			/* sl_node_id(name) */
	uint16_t tcp_port;		/* --listen port, 0 = no transport listener */
	pid_t pid;			/* 0 when not running */
	char dir[H_PATH_MAX];		/* runtime directory */
	char sock[H_PATH_MAX];		/* dir/sluiced.sock */
	char log[H_PATH_MAX];		/* dir/sluiced.log, the daemon's stderr */
};

/* Fail the current test with a message, after dumping the daemon logs. */
void h_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

#define H_ASSERT(cond, ...) \
	do { \
		if (!(cond)) \
			h_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* Integer equality with both values in the message. */
#define H_EQ(a, b) \
	do { \
		long long h_a_ = (long long)(a), h_b_ = (long long)(b); \
		if (h_a_ != h_b_) \
			h_fail(__FILE__, __LINE__, #a " == " #b, "%lld != %lld", h_a_, h_b_); \
	} while (0)

/* Print every registered daemon's log path and last lines to stderr. */
void h_dump_logs(void);

/* A TCP port on 127.0.0.1 that was free a moment ago (bind port 0). */
uint16_t h_free_port(void);

/*
 * h_daemon_start - fork+exec $top_builddir/daemon/sluiced for node @name
 * with a fresh runtime dir; @tcp_port 0 runs without --listen; @peers (each
 * with name and tcp_port set) become --peer options.  Returns once the
 * control socket answers sl_open().  Fatal on error.
 */
void h_daemon_start(struct h_daemon *d, const char *name, uint16_t tcp_port,
		    const struct h_daemon *peers, unsigned n_peers);

/*
 * h_daemon_start_conf - h_daemon_start() with @conf (NULL: none), the text
 * of a sluiced.conf, written to the runtime dir and passed with -c.  The
 * options above still override the file's node, listen and peers.
 */
void h_daemon_start_conf(struct h_daemon *d, const char *name, uint16_t tcp_port,
			 const struct h_daemon *peers, unsigned n_peers, const char *conf);

/*
 * h_daemon_restart - start @d again after h_daemon_kill() or
 * h_daemon_stop(): same name and TCP port (so its peers redial it), a
 * fresh runtime dir, @peers and @conf as for h_daemon_start_conf().
 * Returns once its control socket answers; does not wait for links (use
 * h_wait_link).  Fatal on error.
 */
void h_daemon_restart(struct h_daemon *d, const struct h_daemon *peers, unsigned n_peers,
		      const char *conf);

/* SIGTERM, wait (bounded), require exit status 0 and the socket removed,
 * then remove the runtime directory.  Fatal on error. */
void h_daemon_stop(struct h_daemon *d);

/* SIGKILL the daemon, reap it, and remove its runtime directory (the
 * daemon cannot).  Fatal on error. */
void h_daemon_kill(struct h_daemon *d);

/* Remove a directory and the files in it.  Fatal on error. */
void h_remove_dir(const char *dir);

/* Is the daemon process still there (kill(pid, 0) == 0 and not a zombie)? */
bool h_daemon_alive(const struct h_daemon *d);

/*
 * h_cluster_start - start @n daemons named @names, each listening on a
 * free port and peered with every other, then wait until every pair of
 * nodes has a working link.  Fatal on error.
 */
void h_cluster_start(struct h_daemon *ds, const char *const *names, unsigned n);
/* h_cluster_start() with every daemon reading @conf (see h_daemon_start_conf). */
void h_cluster_start_conf(struct h_daemon *ds, const char *const *names, unsigned n,
			  const char *conf);
/* h_cluster_start() with daemon i reading @confs[i] (@confs NULL, or an
 * entry NULL: no file), for clusters whose nodes differ. */
void h_cluster_start_confs(struct h_daemon *ds, const char *const *names, unsigned n,
			   const char *const *confs);
void h_cluster_stop(struct h_daemon *ds, unsigned n);

/*
 * Daemon statistics.  On SIGUSR1 sluiced writes every counter and gauge,
 * one "name value" line each, to runtime_dir/sluiced.stats (written
 * beside and renamed into place; names in daemon/stats.c, e.g.
 * rcache.regions, xport.post_enomem, link.B.backlog, link.B.state).
 *
 * h_daemon_stats - one consistent snapshot: remove the old file, signal
 * the daemon, wait (bounded, H_STATS_TIMEOUT_MS) for the new file and
 * read it into @st.  Fatal on error (daemon gone, no file in time, file
 * larger than H_STATS_MAX).  Values read from one snapshot were true at
 * the same instant of the daemon's loop.
 * h_stats_u64 - the value of @name in @st as a number; fatal if there is
 * no such line or its value is not a decimal number.
 * h_stats_str - the value of @name as text, copied into @buf (@cap bytes,
 * NUL-terminated); fatal if there is no such line or it does not fit.
 * Returns @buf.
 * h_daemon_stat / h_daemon_stat_str - a fresh snapshot and one value of
 * it: for a single value; take a snapshot to compare values.
 */
#define H_STATS_MAX 16384
#define H_STATS_TIMEOUT_MS 2000
struct h_stats {
	char daemon[H_NAME_MAX];	/* for messages */
	size_t len;
	char text[H_STATS_MAX];
};

void h_daemon_stats(const struct h_daemon *d, struct h_stats *st);
uint64_t h_stats_u64(const struct h_stats *st, const char *name);
const char *h_stats_str(const struct h_stats *st, const char *name, char *buf, size_t cap);
uint64_t h_daemon_stat(const struct h_daemon *d, const char *name);
const char *h_daemon_stat_str(const struct h_daemon *d, const char *name, char *buf,
			      size_t cap);

/*
 * h_wait_link - wait until a message from @from reaches @to's daemon: a
 * 0-byte send to an unbound port on @to must complete SL_ERR_NO_ENDPOINT
 * (repeated while it completes SL_ERR_PEER_DOWN or a NAK).  Fatal on error
 * or after H_LINK_TIMEOUT_MS.
 */
void h_wait_link(const struct h_daemon *from, const struct h_daemon *to);

/* Wait for one completion on @q (bounded).  Returns 1, 0 on timeout, or
 * -errno.  Never aborts. */
int h_wait_cqe(struct sl_queue *q, struct sl_cqe *cqe, int timeout_ms);

/* Resources of a process, from /proc.  Return the value or -errno. */
int h_proc_fds(pid_t pid);		/* entries of /proc/PID/fd */
int h_proc_memfd_maps(pid_t pid);	/* lines of /proc/PID/maps with "memfd:" */
long h_proc_rss_kb(pid_t pid);		/* VmRSS */
long h_proc_hwm_kb(pid_t pid);		/* VmHWM: peak RSS since start */
long h_proc_cpu_ticks(pid_t pid);	/* utime + stime, clock ticks */

/* Poll until the fd and memfd-mapping counts of @d read the same value
 * five times 20 ms apart (bounded); fatal if they never settle. */
void h_daemon_settle(const struct h_daemon *d, int *fds, int *maps);

/* fork() with stdio flushed; the child gets PR_SET_PDEATHSIG(SIGKILL).
 * Fatal in the parent on error. */
pid_t h_fork(void);

/*
 * h_wait_children - reap @n children (bounded by @timeout_ms overall);
 * their wait statuses go to @status.  Children still running at the
 * deadline are SIGKILLed and the test fails.
 */
void h_wait_children(const pid_t *pids, unsigned n, int timeout_ms, int *status);

/* Monotonic milliseconds. */
int64_t h_now_ms(void);
/* Sleep @ms milliseconds (restarts on EINTR). */
void h_sleep_ms(int ms);

/* Pipe helpers for child coordination.  h_read_byte waits up to
 * @timeout_ms; returns 1, 0 on EOF, -ETIMEDOUT, or -errno. */
int h_write_byte(int fd, uint8_t b);
int h_read_byte(int fd, uint8_t *b, int timeout_ms);

#endif
