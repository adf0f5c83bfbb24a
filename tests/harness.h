/*
 * harness.h - helpers for integration tests: real sluiced processes on
 * TCP loopback, each in a fresh runtime directory under /tmp; or, for
 * partition tests, each in its own network namespace on a veth pair that
 * nftables can cut (h_netpair_*, h_daemon_start_ns, h_cluster_start_netns).
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
#include <check.h>

#include "sluice.h"

#define H_NAME_MAX 32
#define H_PATH_MAX 108		/* sun_path */
#define H_MAX_NODES 16

/*
 * Links on demand (daemon/link_idle.c) are the default: a link connects
 * when first used.  A test of what links do on their own from the start
 * (diagnostics of a peer's configuration, reconnects after a restart,
 * nudges) sets h_links_always before it starts daemons: each then reads
 * H_LINKS_ALWAYS_CONF ahead of its own configuration, so every link is
 * dialled at start and kept, as with idle_link_ms = 0 in production.
 */
extern bool h_links_always;
#define H_LINKS_ALWAYS_CONF "[transport]\nidle_link_ms = 0\n"
/* Bounded waits, milliseconds. */
#define H_START_TIMEOUT_MS 5000
#define H_STOP_TIMEOUT_MS 5000

/* 1 in a build with AddressSanitizer (gcc says so with a macro, clang
 * with __has_feature): slower, and freed memory sits in quarantine, so
 * some time and memory bounds are wider there. */
#if defined(__SANITIZE_ADDRESS__)
#define H_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H_UNDER_ASAN 1
#endif
#endif
#ifndef H_UNDER_ASAN
#define H_UNDER_ASAN 0
#endif
#define H_LINK_TIMEOUT_MS 5000
/* A port nobody binds in these tests (privileged, tests do not use it). */
#define H_PORT_NOBODY 1u
/* The address daemons listen on, and are dialled at, unless told. */
#define H_HOST_DEFAULT "127.0.0.1"
#define H_NETNS_MAX 32
#define H_HOST_MAX 64

struct h_daemon {
	char name[H_NAME_MAX];
	uint32_t node;			/* sl_node_id(name) */
	uint16_t tcp_port;		/* --listen port, 0 = no transport listener */
	pid_t pid;			/* 0 when not running */
	char dir[H_PATH_MAX];		/* runtime directory */
	char sock[H_PATH_MAX];		/* dir/sluiced.sock */
	char log[H_PATH_MAX];		/* dir/sluiced.log, the daemon's stderr */
	/* Network namespace the daemon runs in (ip netns exec), "" for the
	 * test's own; its control socket is a path in /tmp, so clients in
	 * any namespace reach it. */
	char netns[H_NETNS_MAX];
	/* IPv4 address for --listen and for the --peer options other daemons
	 * get; "" means H_HOST_DEFAULT. */
	char host[H_HOST_MAX];
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

/* A TCP connection to 127.0.0.1:@port, as a stranger (a raw peer, a
 * forged HELLO) would open one; returns its fd.  Fatal on error. */
int h_tcp_connect(uint16_t port);

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
 * h_daemon_start_ns - h_daemon_start_conf() inside network namespace
 * @netns (NULL or "": the test's own), listening on @host:@tcp_port
 * (@host NULL or "": H_HOST_DEFAULT); each peer is dialled at its host.
 * A daemon in a namespace runs under "ip netns exec", which execs it:
 * @d->pid is the daemon's own pid, and the start checks it (its
 * /proc/PID/exe is sluiced, its /proc/PID/ns/net the namespace's) once the
 * control socket answers from this namespace.  Fatal on error.
 */
void h_daemon_start_ns(struct h_daemon *d, const char *name, const char *netns,
		       const char *host, uint16_t tcp_port, const struct h_daemon *peers,
		       unsigned n_peers, const char *conf);

/*
 * h_daemon_restart - start @d again after h_daemon_kill() or
 * h_daemon_stop(): same name, TCP port, namespace and host (so its peers
 * redial it), a
 * fresh runtime dir, @peers and @conf as for h_daemon_start_conf().
 * Returns once its control socket answers; does not wait for links (use
 * h_wait_link).  Fatal on error.
 */
void h_daemon_restart(struct h_daemon *d, const struct h_daemon *peers, unsigned n_peers,
		      const char *conf);

/* Require that the daemon's books balance (registrations = deregistrations
 * + live, no illegal link-frame move: the link's frame discipline, checked at the
 * end of every test), then SIGTERM, wait (bounded), require exit status 0
 * and the socket removed, and remove the runtime directory.  Fatal on
 * error. */
void h_daemon_stop(struct h_daemon *d);

/* h_daemon_stop() without the books: for a daemon whose statistics do
 * not fit struct h_stats (thousands of links). */
void h_daemon_term(struct h_daemon *d);

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
/* h_cluster_start_confs() with daemon i in network namespace @netns[i]
 * listening on @hosts[i] (either array NULL, or an entry NULL or "": the
 * defaults of h_daemon_start_ns). */
void h_cluster_start_netns(struct h_daemon *ds, const char *const *names, unsigned n,
			   const char *const *netns, const char *const *hosts,
			   const char *const *confs);
/* h_cluster_start_confs() without the wait for every link (which sends a
 * message over each, waking links on demand): the links stay as they
 * start, idle (links on demand) or dialling. */
void h_cluster_start_cold(struct h_daemon *ds, const char *const *names, unsigned n,
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
#define H_STATS_MAX 65536	/* a 16-node mesh writes about 17 KB */
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
/* h_wait_link() bounded by @timeout_ms instead. */
void h_wait_link_ms(const struct h_daemon *from, const struct h_daemon *to, int timeout_ms);

/* Wait for one completion on @q (bounded).  Returns 1, 0 on timeout, or
 * -errno.  Never aborts. */
int h_wait_cqe(struct sl_queue *q, struct sl_cqe *cqe, int timeout_ms);

/* Resources of a process, from /proc.  Return the value or -errno. */
int h_proc_fds(pid_t pid);		/* entries of /proc/PID/fd */
int h_proc_memfd_maps(pid_t pid);	/* lines of /proc/PID/maps with "memfd:" */
long h_proc_rss_kb(pid_t pid);		/* VmRSS */
long h_proc_hwm_kb(pid_t pid);		/* VmHWM: peak RSS since start */
long h_proc_cpu_ticks(pid_t pid);	/* utime + stime, clock ticks */
/* Milliseconds the main thread of @pid has waited for a core since it
 * started (ready to run, not running: /proc/PID/schedstat), or -errno:
 * what a loaded machine added to its wall-clock times. */
long h_proc_runq_wait_ms(pid_t pid);
/* What the @n processes @pids waited for a core since they started,
 * summed (microseconds), or the -errno of the first that cannot be read.
 * A process asleep, waiting for an event, adds nothing: what a loaded
 * machine can excuse in a wall-clock time (test_loop_bound, the gaps of
 * struct progress), never a daemon that holds its loop with work. */
int64_t h_procs_runq_wait_us(const pid_t *pids, unsigned n);

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

/*
 * Network namespaces, for partition tests (root only; ip from iproute2,
 * nft from nftables).
 *
 * h_run - run @argv (argv[0] a path) with stdin from /dev/null, its
 * stdout and stderr captured in @out (@cap bytes, NUL-terminated, may be
 * NULL), bounded by @timeout_ms (then SIGKILLed).  Returns its exit
 * status (0..255), or -errno (-ETIMEDOUT, or it died of a signal:
 * -EINTR).  Never aborts.
 */
int h_run(const char *const *argv, char *out, size_t cap, int timeout_ms);

/*
 * h_tool - the path of program @name (searched in $PATH, then /usr/sbin,
 * /sbin, /usr/bin, /bin) in @path; false if there is none.  Never aborts.
 */
bool h_tool(const char *name, char *path, size_t cap);

/*
 * Two namespaces joined by a veth pair: side 0 has ns[0], dev[0],
 * ip[0] (10.77.X.1/24), side 1 the same with .2.  Names carry the pid of
 * the process that made them (Check forks each test), so runs never
 * collide and the leftovers of a dead process are recognised.
 */
#define H_NETNS_PREFIX "slns-"
#define H_VETH_PREFIX "slv"
struct h_netpair {
	char ns[2][H_NETNS_MAX];	/* "slns-PID-a", "slns-PID-b" */
	char dev[2][16];		/* "slvPIDa", "slvPIDb" (IFNAMSIZ) */
	char ip[2][16];			/* "10.77.X.1", "10.77.X.2" */
	bool made[2];			/* namespace i exists */
	bool dropping[2];		/* the drop table is in namespace i */
	bool wire;			/* dropping: H_NETPAIR_WIRE */
	bool netdev_hooks;		/* drop at the device (netdev ingress and
					 * egress: no socket sees an error), not
					 * in inet input/output */
	pid_t owner;			/* the process that made them */
};

/*
 * h_netns_stale_cleanup - remove the namespaces (and with them their
 * veths) and root-namespace veths named by this harness whose process is
 * gone: what a test killed by Check's timeout left.  Never aborts;
 * returns how many it removed.
 */
int h_netns_stale_cleanup(void);

/*
 * h_netpair_create - clean up stale ones, then make @np: both namespaces
 * (lo up), the veth pair with one end in each, addresses, links up, and
 * check that nft can load a drop rule there (added and removed at once).
 * Returns 0, or -1 with the reason in @why (@cap bytes) after undoing
 * what it made: not root, ip or nft missing, a step refused.  Never
 * aborts.  Until h_netpair_destroy(), a failing test (h_fail) removes
 * them too.
 */
int h_netpair_create(struct h_netpair *np, char *why, size_t cap);

/*
 * h_netpair_open - h_netpair_create(), with the policy of partition
 * tests: on failure print one line "SKIPPED: <reason>" and return false
 * (the caller returns, and the test passes), unless the environment says
 * SLUICE_STRICT_NETNS=1: then the test fails with the reason.
 */
bool h_netpair_open(struct h_netpair *np, const char *test);

/* h_netpair_destroy - remove the pair (veth, then both namespaces; a
 * daemon still in one keeps it alive, unnamed, until it exits).  Returns
 * 0 or -1 after trying every step (failures on stderr).  Never aborts. */
int h_netpair_destroy(struct h_netpair *np);

/*
 * h_netpair_drop - a partition of the link, by an nftables table (with
 * counters) that drops packets.  @side 0 or 1: inside that namespace
 * only, every packet in and out of its veth end.  Neither end nor any
 * application hears of it (no RST, no ICMP, no error on a socket: the
 * netdev ingress and egress hooks of the device), but the kernel of
 * @side does: a packet dropped at egress counts for its TCP as a local
 * drop (NET_XMIT_DROP, local congestion), so it probes every 500 ms
 * without back-off instead of retransmitting with back-off, and an
 * orphaned (closed) socket there dies within a few seconds.  (Where the kernel has no egress hook,
 * np->netdev_hooks false, inet input and output rules are used instead,
 * and a socket of @side then sees EPERM.)
 * @side H_NETPAIR_WIRE: the cable cut: packets are dropped as they arrive
 * in either namespace, so both kernels send as usual and nothing arrives.
 * Fatal on error.
 * h_netpair_heal - remove it again (the same @side); returns the packets
 * it dropped.  Fatal on error.
 */
#define H_NETPAIR_WIRE 2u
void h_netpair_drop(struct h_netpair *np, unsigned side);
uint64_t h_netpair_heal(struct h_netpair *np, unsigned side);

/* h_netpair_sysctl - write @value to /proc/sys/@key (e.g.
 * "net/ipv4/tcp_orphan_retries") inside namespace @side: settings of the
 * namespace's own network stack only.  Fatal on error. */
void h_netpair_sysctl(struct h_netpair *np, unsigned side, const char *key, const char *value);

/* Monotonic milliseconds. */
int64_t h_now_ms(void);
/* Sleep @ms milliseconds (restarts on EINTR). */
void h_sleep_ms(int ms);

/* Pipe helpers for child coordination.  h_read_byte waits up to
 * @timeout_ms; returns 1, 0 on EOF, -ETIMEDOUT, or -errno. */
int h_write_byte(int fd, uint8_t b);
int h_read_byte(int fd, uint8_t *b, int timeout_ms);

/* A Check test case named @name in @s, each test bounded by @timeout_s
 * seconds (tests that start daemons need more than Check's 4 s). */
TCase *h_tcase(Suite *s, const char *name, int timeout_s);

/* Run @s (forking per test, Check's default) and free it; returns the
 * process exit status: EXIT_SUCCESS when every test passed. */
int h_run_suite(Suite *s);

#endif
