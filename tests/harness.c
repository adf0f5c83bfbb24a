/*
 * harness.c - integration-test helpers; see harness.h.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <limits.h>
#include <net/if.h>

#include "harness.h"

#define LOG_TAIL_LINES 40
#define LOG_TAIL_BYTES (64 * 1024)

/* Daemons started by this process and not yet stopped, for h_dump_logs(). */
static const struct h_daemon *registry[H_MAX_NODES * 2];

static void registry_add(const struct h_daemon *d)
{
	unsigned i;

	for (i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
		if (!registry[i]) {
			registry[i] = d;
			return;
		}
	}
	h_fail(__FILE__, __LINE__, "registry_add", "too many daemons");
}

static void registry_del(const struct h_daemon *d)
{
	unsigned i;

	for (i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
		if (registry[i] == d)
			registry[i] = NULL;
}

static void dump_tail(const char *path)
{
	static char buf[LOG_TAIL_BYTES + 1];
	ssize_t n;
	off_t end;
	int fd = open(path, O_RDONLY | O_CLOEXEC), lines = 0;
	char *p;

	if (fd < 0) {
		fprintf(stderr, "    (cannot open %s: %s)\n", path, strerror(errno));
		return;
	}
	end = lseek(fd, 0, SEEK_END);
	if (end < 0 || lseek(fd, end > LOG_TAIL_BYTES ? end - LOG_TAIL_BYTES : 0, SEEK_SET) < 0) {
		fprintf(stderr, "    (cannot seek %s: %s)\n", path, strerror(errno));
		(void)close(fd);	/* read-only; nothing to lose */
		return;
	}
	n = read(fd, buf, LOG_TAIL_BYTES);
	(void)close(fd);
	if (n < 0) {
		fprintf(stderr, "    (cannot read %s: %s)\n", path, strerror(errno));
		return;
	}
	buf[n] = '\0';
	/* Walk back over the last LOG_TAIL_LINES newlines. */
	for (p = buf + n; p > buf; p--) {
		if (p[-1] == '\n' && p != buf + n && ++lines == LOG_TAIL_LINES)
			break;
	}
	fprintf(stderr, "%s%s", p, (n && buf[n - 1] != '\n') ? "\n" : "");
}

void h_dump_logs(void)
{
	unsigned i;

	for (i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
		const struct h_daemon *d = registry[i];

		if (!d)
			continue;
		fprintf(stderr, "--- daemon %s (pid %d): log %s, last %d lines:\n",
			d->name, (int)d->pid, d->log, LOG_TAIL_LINES);
		dump_tail(d->log);
		fprintf(stderr, "--- end of %s\n", d->log);
	}
}

static void netpair_cleanup_all(void);

void h_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	char msg[4096];	/* room for the clients' last words (testutil.h) */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "%s:%d: FAILED: %s: %s\n", file, line, expr, msg);
	h_dump_logs();
	netpair_cleanup_all();
	/* Check's own assertion entry point, so the report names the caller's
	 * file and line, not this function. */
	_ck_assert_failed(file, line, expr, "%s: %s", expr, msg);
}

int64_t h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Bind @n sockets to port 0 at once (so the kernel hands out distinct
 * ports), read their ports, then close them all. */
static void free_ports(uint16_t *ports, unsigned n)
{
	int fds[H_MAX_NODES];
	unsigned i;

	H_ASSERT(n <= H_MAX_NODES, "%u ports", n);
	for (i = 0; i < n; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(sin);

		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		H_ASSERT(fds[i] >= 0, "socket: %s", strerror(errno));
		H_ASSERT(bind(fds[i], (struct sockaddr *)&sin, sizeof(sin)) == 0,
			 "bind: %s", strerror(errno));
		H_ASSERT(getsockname(fds[i], (struct sockaddr *)&sin, &len) == 0,
			 "getsockname: %s", strerror(errno));
		ports[i] = ntohs(sin.sin_port);
		H_ASSERT(ports[i] != 0, "port 0 after bind");
	}
	for (i = 0; i < n; i++)
		H_ASSERT(close(fds[i]) == 0, "close: %s", strerror(errno));
}

uint16_t h_free_port(void)
{
	uint16_t port;

	free_ports(&port, 1);
	return port;
}

int h_tcp_connect(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	H_ASSERT(fd >= 0, "socket: %s", strerror(errno));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	H_ASSERT(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0, "connect to port %u: %s",
		 port, strerror(errno));
	return fd;
}

static void daemon_path(char *buf, size_t len)
{
	const char *top = getenv("top_builddir");
	int n;

	if (!top || !*top)
		top = ".";
	n = snprintf(buf, len, "%s/daemon/sluiced", top);
	H_ASSERT(n > 0 && (size_t)n < len, "daemon path too long");
	H_ASSERT(access(buf, X_OK) == 0, "%s: %s (set top_builddir)", buf, strerror(errno));
}

void h_remove_dir(const char *dir)
{
	char path[H_PATH_MAX + 256 + 2];
	struct dirent *e;
	DIR *dp = opendir(dir);

	H_ASSERT(dp, "opendir %s: %s", dir, strerror(errno));
	while ((errno = 0, e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		H_ASSERT(unlink(path) == 0, "unlink %s: %s", path, strerror(errno));
	}
	H_ASSERT(errno == 0, "readdir %s: %s", dir, strerror(errno));
	H_ASSERT(closedir(dp) == 0, "closedir: %s", strerror(errno));
	H_ASSERT(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

/* Write @text to @path (a fresh file). */
bool h_links_always;

static void write_conf(const char *path, const char *text)
{
	size_t len = strlen(text), off = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	H_ASSERT(fd >= 0, "%s: %s", path, strerror(errno));
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		H_ASSERT(n > 0, "write %s: %s", path, strerror(errno));
		off += (size_t)n;
	}
	H_ASSERT(close(fd) == 0, "close %s: %s", path, strerror(errno));
}

void h_daemon_start(struct h_daemon *d, const char *name, uint16_t tcp_port,
		    const struct h_daemon *peers, unsigned n_peers)
{
	h_daemon_start_conf(d, name, tcp_port, peers, n_peers, NULL);
}

void h_daemon_start_conf(struct h_daemon *d, const char *name, uint16_t tcp_port,
			 const struct h_daemon *peers, unsigned n_peers, const char *conf)
{
	h_daemon_start_ns(d, name, NULL, NULL, tcp_port, peers, n_peers, conf);
}

/* The inode number in a /proc/PID/ns/net link ("net:[4026531840]"), or 0. */
static unsigned long long netns_ino(const char *link)
{
	char buf[64];
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);

	if (n < 0)
		return 0;
	buf[n] = '\0';
	if (strncmp(buf, "net:[", 5) != 0)
		return 0;
	return strtoull(buf + 5, NULL, 10);
}

/*
 * A daemon started under "ip netns exec": its pid must be the daemon
 * itself (ip execs it, no fork in between), running @bin, in the
 * namespace named d->netns, which is not ours.
 */
static void check_netns_daemon(const struct h_daemon *d, const char *bin)
{
	char link[64], exe[PATH_MAX], want[PATH_MAX], nsfile[64 + H_NETNS_MAX];
	unsigned long long ino, own;
	struct stat st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)d->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	H_ASSERT(n > 0, "readlink %s: %s", link, strerror(errno));
	exe[n] = '\0';
	H_ASSERT(realpath(bin, want), "realpath %s: %s", bin, strerror(errno));
	H_ASSERT(strcmp(exe, want) == 0,
		 "daemon %s: pid %d runs %s, not %s (did ip fork instead of exec?)", d->name,
		 (int)d->pid, exe, want);
	snprintf(link, sizeof(link), "/proc/%d/ns/net", (int)d->pid);
	ino = netns_ino(link);
	own = netns_ino("/proc/self/ns/net");
	H_ASSERT(ino && own, "cannot read the network namespaces of %d and of this process",
		 (int)d->pid);
	snprintf(nsfile, sizeof(nsfile), "/run/netns/%s", d->netns);
	H_ASSERT(stat(nsfile, &st) == 0, "stat %s: %s", nsfile, strerror(errno));
	H_ASSERT((unsigned long long)st.st_ino == ino,
		 "daemon %s (pid %d) is in network namespace %llu, not %s (%llu)", d->name,
		 (int)d->pid, ino, d->netns, (unsigned long long)st.st_ino);
	H_ASSERT(ino != own, "daemon %s runs in the test's own network namespace", d->name);
}

/* A daemon's host for --listen and --peer. */
static const char *daemon_host(const struct h_daemon *d)
{
	return d->host[0] ? d->host : H_HOST_DEFAULT;
}

void h_daemon_start_ns(struct h_daemon *d, const char *name, const char *netns,
		       const char *host, uint16_t tcp_port, const struct h_daemon *peers,
		       unsigned n_peers, const char *conf)
{
	char bin[H_PATH_MAX + 32], listen[H_HOST_MAX + 16];
	char peer_args[H_MAX_NODES][H_NAME_MAX + H_HOST_MAX + 16];
	char conf_path[H_PATH_MAX + 16], ip[PATH_MAX];
	char *always_conf = NULL;
	char ns_buf[H_NETNS_MAX], host_buf[H_HOST_MAX], name_buf[H_NAME_MAX];
	const char *argv[20 + 2 * H_MAX_NODES];
	unsigned argc = 0, i;
	int logfd, st;
	pid_t parent = getpid();
	int64_t deadline;

	H_ASSERT(n_peers < H_MAX_NODES, "%u peers", n_peers);
	H_ASSERT(strlen(name) < H_NAME_MAX, "name %s too long", name);
	H_ASSERT(!netns || strlen(netns) < H_NETNS_MAX, "netns %s too long", netns);
	H_ASSERT(!host || strlen(host) < H_HOST_MAX, "host %s too long", host);
	/* @name, @netns and @host may point into @d: copy them first. */
	snprintf(ns_buf, sizeof(ns_buf), "%s", netns ? netns : "");
	snprintf(host_buf, sizeof(host_buf), "%s", host && *host ? host : H_HOST_DEFAULT);
	snprintf(name_buf, sizeof(name_buf), "%s", name);
	memset(d, 0, sizeof(*d));
	strcpy(d->name, name_buf);
	d->node = sl_node_id(name_buf);
	d->tcp_port = tcp_port;
	strcpy(d->netns, ns_buf);
	strcpy(d->host, host_buf);
	name = d->name;
	strcpy(d->dir, "/tmp/sluice-it-XXXXXX");
	H_ASSERT(mkdtemp(d->dir), "mkdtemp: %s", strerror(errno));
	snprintf(d->sock, sizeof(d->sock), "%s/sluiced.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/sluiced.log", d->dir);
	daemon_path(bin, sizeof(bin));

	if (d->netns[0]) {
		/* ip execs the daemon (no fork): the pid stays the daemon's,
		 * and PR_SET_PDEATHSIG survives both execs. */
		H_ASSERT(h_tool("ip", ip, sizeof(ip)), "no ip (iproute2) for netns %s", d->netns);
		argv[argc++] = ip;
		argv[argc++] = "netns";
		argv[argc++] = "exec";
		argv[argc++] = d->netns;
	}
	argv[argc++] = bin;
	if (h_links_always) {
		/* A later [transport] idle_link_ms of @conf still wins. */
		H_ASSERT(asprintf(&always_conf, "%s%s", H_LINKS_ALWAYS_CONF, conf ? conf : "") > 0,
			 "asprintf");
		conf = always_conf;
	}
	if (conf) {
		/* In the runtime dir: h_daemon_stop() removes it with the rest. */
		snprintf(conf_path, sizeof(conf_path), "%s/sluiced.conf", d->dir);
		write_conf(conf_path, conf);
		free(always_conf);
		always_conf = NULL;
		argv[argc++] = "-c";
		argv[argc++] = conf_path;
	}
	argv[argc++] = "--runtime-dir";
	argv[argc++] = d->dir;
	argv[argc++] = "--node";
	argv[argc++] = d->name;
	argv[argc++] = "--log-level";
	argv[argc++] = getenv("SLUICE_TEST_LOG_LEVEL") ? getenv("SLUICE_TEST_LOG_LEVEL")
						       : "debug";
	if (tcp_port) {
		snprintf(listen, sizeof(listen), "%s:%u", daemon_host(d), tcp_port);
		argv[argc++] = "--listen";
		argv[argc++] = listen;
	}
	for (i = 0; i < n_peers; i++) {
		H_ASSERT(peers[i].tcp_port, "peer %s has no port", peers[i].name);
		snprintf(peer_args[i], sizeof(peer_args[i]), "%s=%s:%u",
			 peers[i].name, daemon_host(&peers[i]), peers[i].tcp_port);
		argv[argc++] = "--peer";
		argv[argc++] = peer_args[i];
	}
	argv[argc] = NULL;

	logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	H_ASSERT(logfd >= 0, "%s: %s", d->log, strerror(errno));
	fflush(stdout);
	fflush(stderr);
	d->pid = fork();
	H_ASSERT(d->pid >= 0, "fork: %s", strerror(errno));
	if (d->pid == 0) {
		int nullfd = open("/dev/null", O_RDONLY);

		/* The daemon must not outlive a test process that died. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(126);
		if (nullfd < 0 || dup2(nullfd, 0) < 0 || dup2(logfd, 1) < 0 ||
		    dup2(logfd, 2) < 0)
			_exit(126);
		/* Nothing of the test process (Check's pipes, other daemons'
		 * sockets) may leak into the daemon's fd table. */
		if (close_range(3, ~0u, 0) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	H_ASSERT(close(logfd) == 0, "close: %s", strerror(errno));
	registry_add(d);

	deadline = h_now_ms() + H_START_TIMEOUT_MS;
	for (;;) {
		struct sl_ctx *ctx;
		pid_t w = waitpid(d->pid, &st, WNOHANG);
		int rc;

		H_ASSERT(w == 0, "daemon %s exited during start (status 0x%x)", name,
			 w > 0 ? st : -1);
		if (access(d->sock, F_OK) == 0) {
			rc = sl_open(d->sock, &ctx);
			if (rc == 0) {
				H_EQ(sl_local_node(ctx), d->node);
				sl_close(ctx);
				/* The socket answered this namespace's client. */
				if (d->netns[0])
					check_netns_daemon(d, bin);
				return;
			}
			H_ASSERT(rc == -ECONNREFUSED || rc == -ENOENT, "sl_open %s: %s",
				 d->sock, strerror(-rc));
		}
		H_ASSERT(h_now_ms() < deadline, "daemon %s: no socket after %d ms", name,
			 H_START_TIMEOUT_MS);
		h_sleep_ms(10);
	}
}

bool h_daemon_alive(const struct h_daemon *d)
{
	siginfo_t si = { 0 };

	if (d->pid <= 0 || kill(d->pid, 0) != 0)
		return false;
	/* A zombie still answers kill(0): peek at its state without reaping. */
	if (waitid(P_PID, (id_t)d->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	    si.si_pid == d->pid)
		return false;
	return true;
}

/*
 * What every daemon must show at the end of every test, whatever the test
 * did: local operations are never replayed, so each registration was
 * either deregistered once or is still live (rcache.regs = rcache.deregs
 * + rcache.regions), and no link frame ever made an illegal move.
 */
static void expect_daemon_books_balance(const struct h_daemon *d)
{
	struct h_stats *st = malloc(sizeof(*st));
	const char *p;

	H_ASSERT(st, "malloc");
	h_daemon_stats(d, st);
	H_ASSERT(h_stats_u64(st, "rcache.regs") ==
		 h_stats_u64(st, "rcache.deregs") + h_stats_u64(st, "rcache.regions"),
		 "daemon %s: %llu registrations, %llu deregistrations, %llu live", d->name,
		 (unsigned long long)h_stats_u64(st, "rcache.regs"),
		 (unsigned long long)h_stats_u64(st, "rcache.deregs"),
		 (unsigned long long)h_stats_u64(st, "rcache.regions"));
	for (p = strstr(st->text, ".illegal_moves "); p; p = strstr(p + 1, ".illegal_moves "))
		H_ASSERT(strtoull(p + strlen(".illegal_moves "), NULL, 10) == 0,
			 "daemon %s: a link frame made an illegal move (see its log)", d->name);
	free(st);
}

void h_daemon_stop(struct h_daemon *d)
{
	H_ASSERT(d->pid > 0, "daemon %s not running", d->name);
	expect_daemon_books_balance(d);
	h_daemon_term(d);
}

void h_daemon_term(struct h_daemon *d)
{
	int64_t deadline;
	pid_t w;
	int st = 0;

	H_ASSERT(d->pid > 0, "daemon %s not running", d->name);
	H_ASSERT(kill(d->pid, SIGTERM) == 0, "kill %s: %s", d->name, strerror(errno));
	deadline = h_now_ms() + H_STOP_TIMEOUT_MS;
	while ((w = waitpid(d->pid, &st, WNOHANG)) == 0) {
		if (h_now_ms() >= deadline) {
			H_ASSERT(kill(d->pid, SIGKILL) == 0, "kill: %s", strerror(errno));
			H_ASSERT(waitpid(d->pid, &st, 0) == d->pid, "waitpid: %s",
				 strerror(errno));
			h_fail(__FILE__, __LINE__, "h_daemon_stop",
			       "daemon %s did not stop within %d ms of SIGTERM", d->name,
			       H_STOP_TIMEOUT_MS);
		}
		h_sleep_ms(5);
	}
	H_ASSERT(w == d->pid, "waitpid %s: %s", d->name, strerror(errno));
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "daemon %s: %s %d", d->name, WIFEXITED(st) ? "exit status" : "killed by signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	H_ASSERT(access(d->sock, F_OK) < 0 && errno == ENOENT,
		 "daemon %s left its socket %s", d->name, d->sock);
	registry_del(d);
	h_remove_dir(d->dir);
	d->pid = 0;
}

void h_daemon_restart(struct h_daemon *d, const struct h_daemon *peers, unsigned n_peers,
		      const char *conf)
{
	char name[H_NAME_MAX], netns[H_NETNS_MAX], host[H_HOST_MAX];
	uint16_t port = d->tcp_port;

	H_ASSERT(d->pid == 0, "daemon %s is still running (pid %d)", d->name, (int)d->pid);
	snprintf(name, sizeof(name), "%s", d->name);
	snprintf(netns, sizeof(netns), "%s", d->netns);
	snprintf(host, sizeof(host), "%s", d->host);
	h_daemon_start_ns(d, name, netns, host, port, peers, n_peers, conf);
}

void h_daemon_kill(struct h_daemon *d)
{
	int st;

	H_ASSERT(d->pid > 0, "daemon %s not running", d->name);
	H_ASSERT(kill(d->pid, SIGKILL) == 0, "kill %s: %s", d->name, strerror(errno));
	H_ASSERT(waitpid(d->pid, &st, 0) == d->pid, "waitpid %s: %s", d->name,
		 strerror(errno));
	registry_del(d);
	h_remove_dir(d->dir);
	d->pid = 0;
}

void h_wait_link(const struct h_daemon *from, const struct h_daemon *to)
{
	h_wait_link_ms(from, to, H_LINK_TIMEOUT_MS);
}

void h_wait_link_ms(const struct h_daemon *from, const struct h_daemon *to, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	int rc;

	rc = sl_open(from->sock, &ctx);
	H_ASSERT(rc == 0, "sl_open %s: %s", from->sock, strerror(-rc));
	rc = sl_queue_open(ctx, 0, 4, &q);
	H_ASSERT(rc == 0, "sl_queue_open: %s", strerror(-rc));
	for (;;) {
		struct sl_cqe cqe;
		int64_t left = deadline - h_now_ms();

		H_ASSERT(left > 0, "no link %s -> %s after %d ms", from->name, to->name,
			 timeout_ms);
		rc = sl_send(q, (sl_addr_t){ to->node, H_PORT_NOBODY }, 0, NULL, 0, 1);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		rc = h_wait_cqe(q, &cqe, (int)left);
		H_ASSERT(rc >= 0, "wait: %s", strerror(-rc));
		H_ASSERT(rc == 1, "no link %s -> %s after %d ms", from->name, to->name,
			 timeout_ms);
		H_EQ(cqe.user_ctx, 1);
		if (cqe.status == SL_ERR_NO_ENDPOINT)
			break;
		H_ASSERT(cqe.status == SL_ERR_PEER_DOWN || cqe.status == SL_NAK_BUSY,
			 "link probe %s -> %s: status %s", from->name, to->name,
			 sl_strerror(cqe.status));
		h_sleep_ms(10);
	}
	H_EQ(sl_queue_close(q), 0);
	sl_close(ctx);
}

void h_cluster_start(struct h_daemon *ds, const char *const *names, unsigned n)
{
	h_cluster_start_conf(ds, names, n, NULL);
}

void h_cluster_start_conf(struct h_daemon *ds, const char *const *names, unsigned n,
			  const char *conf)
{
	const char *confs[H_MAX_NODES];
	unsigned i;

	H_ASSERT(n >= 1 && n <= H_MAX_NODES, "%u nodes", n);
	for (i = 0; i < n; i++)
		confs[i] = conf;
	h_cluster_start_confs(ds, names, n, confs);
}

void h_cluster_start_confs(struct h_daemon *ds, const char *const *names, unsigned n,
			   const char *const *confs)
{
	h_cluster_start_netns(ds, names, n, NULL, NULL, confs);
}

static void cluster_start(struct h_daemon *ds, const char *const *names, unsigned n,
			  const char *const *netns, const char *const *hosts,
			  const char *const *confs, bool wait_links)
{
	struct h_daemon peers[H_MAX_NODES];
	uint16_t ports[H_MAX_NODES];
	unsigned i, j, k;

	H_ASSERT(n >= 1 && n <= H_MAX_NODES, "%u nodes", n);
	/* Free on 127.0.0.1 here; a fresh namespace has every port free. */
	free_ports(ports, n);
	for (i = 0; i < n; i++) {
		const char *host = hosts && hosts[i] && *hosts[i] ? hosts[i] : H_HOST_DEFAULT;

		memset(&ds[i], 0, sizeof(ds[i]));
		snprintf(ds[i].name, sizeof(ds[i].name), "%s", names[i]);
		ds[i].tcp_port = ports[i];
		H_ASSERT(strlen(host) < sizeof(ds[i].host), "host %s too long", host);
		strcpy(ds[i].host, host);
	}
	for (i = 0; i < n; i++) {
		for (j = 0, k = 0; j < n; j++)
			if (j != i)
				peers[k++] = ds[j];
		h_daemon_start_ns(&ds[i], names[i], netns ? netns[i] : NULL,
				  hosts ? hosts[i] : NULL, ports[i], peers, k,
				  confs ? confs[i] : NULL);
	}
	if (!wait_links)
		return;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			h_wait_link(&ds[i], &ds[j]);
}

void h_cluster_start_netns(struct h_daemon *ds, const char *const *names, unsigned n,
			   const char *const *netns, const char *const *hosts,
			   const char *const *confs)
{
	cluster_start(ds, names, n, netns, hosts, confs, true);
}

void h_cluster_start_cold(struct h_daemon *ds, const char *const *names, unsigned n,
			  const char *const *confs)
{
	cluster_start(ds, names, n, NULL, NULL, confs, false);
}

void h_cluster_stop(struct h_daemon *ds, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		h_daemon_stop(&ds[i]);
}

int h_wait_cqe(struct sl_queue *q, struct sl_cqe *cqe, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;

	for (;;) {
		int64_t left;
		int rc = sl_poll(q, cqe, 1);

		if (rc != 0)
			return rc;
		left = deadline - h_now_ms();
		if (left <= 0)
			return 0;
		rc = sl_wait(q, (int)left);
		if (rc < 0 && rc != -EINTR)
			return rc;
	}
}

int h_proc_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *dp;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dp = opendir(path);
	if (!dp)
		return -errno;
	while ((errno = 0, e = readdir(dp)))
		if (e->d_name[0] != '.')
			n++;
	if (errno) {
		int rc = -errno;

		(void)closedir(dp);
		return rc;
	}
	if (closedir(dp) < 0)
		return -errno;
	return n;
}

int h_proc_memfd_maps(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int n = 0, rc;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0)
		if (strstr(line, "memfd:"))
			n++;
	rc = ferror(f) ? -EIO : n;
	free(line);
	if (fclose(f) != 0 && rc >= 0)
		rc = -errno;
	return rc;
}

/* A "Key:   N kB" line of /proc/PID/status; @key includes the colon. */
static long proc_status_kb(pid_t pid, const char *key)
{
	char path[64], *line = NULL;
	size_t cap = 0, klen = strlen(key);
	long kb = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0) {
		if (!strncmp(line, key, klen)) {
			char *end;

			errno = 0;
			kb = strtol(line + klen, &end, 10);
			if (errno || end == line + klen)
				kb = -EPROTO;
			break;
		}
	}
	free(line);
	if (fclose(f) != 0 && kb >= 0)
		kb = -errno;
	return kb;
}

long h_proc_rss_kb(pid_t pid)
{
	return proc_status_kb(pid, "VmRSS:");
}

long h_proc_hwm_kb(pid_t pid)
{
	return proc_status_kb(pid, "VmHWM:");
}

/* /proc/@pid/@file into @buf (@cap bytes, NUL-terminated): its length or
 * -errno. */
static ssize_t read_proc(pid_t pid, const char *file, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0) {
		int rc = -errno;

		(void)close(fd);
		return rc;
	}
	if (close(fd) < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

long h_proc_cpu_ticks(pid_t pid)
{
	char buf[1024], *p;
	unsigned long ut, st;
	ssize_t n = read_proc(pid, "stat", buf, sizeof(buf));
	int i;

	if (n < 0)
		return (long)n;
	/* The command name may hold spaces: fields count from its ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EPROTO;
	p++;
	for (i = 0; i < 11 && p; i++)		/* from field 3 to field 14, utime */
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %lu %lu", &ut, &st) != 2)
		return -EPROTO;
	return (long)(ut + st);
}

/* Nanoseconds the main thread of @pid waited for a core, or -errno. */
static int64_t runq_wait_ns(pid_t pid)
{
	char buf[128];
	unsigned long long run_ns, wait_ns;
	/* The main thread's: /proc/PID/schedstat is the thread group
	 * leader's "on-cpu waiting timeslices" (ns, ns, count). */
	ssize_t n = read_proc(pid, "schedstat", buf, sizeof(buf));

	if (n < 0)
		return (int64_t)n;
	if (sscanf(buf, "%llu %llu", &run_ns, &wait_ns) != 2)
		return -EPROTO;
	return (int64_t)wait_ns;
}

long h_proc_runq_wait_ms(pid_t pid)
{
	int64_t ns = runq_wait_ns(pid);

	return ns < 0 ? (long)ns : (long)(ns / 1000000);
}

int64_t h_procs_runq_wait_us(const pid_t *pids, unsigned n)
{
	int64_t sum = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		int64_t ns = runq_wait_ns(pids[i]);

		if (ns < 0)
			return ns;
		sum += ns / 1000;
	}
	return sum;
}

void h_daemon_settle(const struct h_daemon *d, int *fds, int *maps)
{
	int64_t deadline = h_now_ms() + 3000;
	int last_fds = -1, last_maps = -1, same = 0;

	for (;;) {
		int f = h_proc_fds(d->pid), m = h_proc_memfd_maps(d->pid);

		H_ASSERT(f >= 0 && m >= 0, "daemon %s: /proc: %s", d->name,
			 strerror(f < 0 ? -f : -m));
		if (f == last_fds && m == last_maps) {
			if (++same == 4) {
				*fds = f;
				*maps = m;
				return;
			}
		} else {
			same = 0;
		}
		last_fds = f;
		last_maps = m;
		H_ASSERT(h_now_ms() < deadline, "daemon %s: fd/mapping counts never settle",
			 d->name);
		h_sleep_ms(20);
	}
}

pid_t h_fork(void)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	H_ASSERT(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(126);
	}
	return pid;
}

void h_wait_children(const pid_t *pids, unsigned n, int timeout_ms, int *status)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	bool done[64] = { false };
	unsigned i, left = n;

	H_ASSERT(n <= 64, "%u children", n);
	while (left) {
		for (i = 0; i < n; i++) {
			pid_t w;

			if (done[i])
				continue;
			w = waitpid(pids[i], &status[i], WNOHANG);
			H_ASSERT(w >= 0, "waitpid %d: %s", (int)pids[i], strerror(errno));
			if (w == pids[i]) {
				done[i] = true;
				left--;
			}
		}
		if (!left)
			break;
		if (h_now_ms() >= deadline) {
			for (i = 0; i < n; i++) {
				if (done[i])
					continue;
				fprintf(stderr, "child %u (pid %d) still running: killing it\n", i,
					(int)pids[i]);
				(void)kill(pids[i], SIGKILL);
				(void)waitpid(pids[i], &status[i], 0);
			}
			h_fail(__FILE__, __LINE__, "h_wait_children",
			       "%u of %u children did not finish within %d ms", left, n,
			       timeout_ms);
		}
		h_sleep_ms(5);
	}
}

int h_write_byte(int fd, uint8_t b)
{
	ssize_t n;

	do {
		n = write(fd, &b, 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 1 ? 0 : -EIO;
}

int h_read_byte(int fd, uint8_t *b, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int64_t deadline = h_now_ms() + timeout_ms;
	ssize_t n;
	int rc;

	for (;;) {
		int64_t left = deadline - h_now_ms();

		if (left < 0)
			left = 0;
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
		do {
			n = read(fd, b, 1);
		} while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		return (int)n;
	}
}

/* ---- statistics ---- */

void h_daemon_stats(const struct h_daemon *d, struct h_stats *st)
{
	char path[H_PATH_MAX + 32];
	int64_t deadline;
	ssize_t n;
	int fd;

	H_ASSERT(d->pid > 0, "daemon %s not running", d->name);
	snprintf(st->daemon, sizeof(st->daemon), "%s", d->name);
	snprintf(path, sizeof(path), "%s/sluiced.stats", d->dir);
	/* A file still there is an older snapshot: the new one replaces it
	 * by rename, so its appearance says the daemon answered. */
	H_ASSERT(unlink(path) == 0 || errno == ENOENT, "unlink %s: %s", path, strerror(errno));
	H_ASSERT(kill(d->pid, SIGUSR1) == 0, "kill -USR1 %s: %s", d->name, strerror(errno));
	deadline = h_now_ms() + H_STATS_TIMEOUT_MS;
	while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		H_ASSERT(errno == ENOENT, "open %s: %s", path, strerror(errno));
		H_ASSERT(h_daemon_alive(d), "daemon %s died (asked for its stats)", d->name);
		H_ASSERT(h_now_ms() < deadline, "daemon %s wrote no %s within %d ms of SIGUSR1",
			 d->name, path, H_STATS_TIMEOUT_MS);
		h_sleep_ms(2);
	}
	st->len = 0;
	for (;;) {
		n = read(fd, st->text + st->len, sizeof(st->text) - 1 - st->len);
		if (n < 0 && errno == EINTR)
			continue;
		H_ASSERT(n >= 0, "read %s: %s", path, strerror(errno));
		if (n == 0)
			break;
		st->len += (size_t)n;
		H_ASSERT(st->len < sizeof(st->text) - 1, "%s: over %zu bytes", path,
			 sizeof(st->text) - 1);
	}
	H_ASSERT(close(fd) == 0, "close: %s", strerror(errno));
	st->text[st->len] = '\0';
}

/* The value of line "@name value" in @st, and its length; NULL if none. */
static const char *stats_find(const struct h_stats *st, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *p = st->text;

	while (*p) {
		const char *eol = strchr(p, '\n');

		if (!eol)
			eol = p + strlen(p);
		if ((size_t)(eol - p) > nlen && !strncmp(p, name, nlen) && p[nlen] == ' ') {
			*vlen = (size_t)(eol - (p + nlen + 1));
			return p + nlen + 1;
		}
		p = *eol ? eol + 1 : eol;
	}
	return NULL;
}

uint64_t h_stats_u64(const struct h_stats *st, const char *name)
{
	char buf[32], *end;
	unsigned long long v;

	h_stats_str(st, name, buf, sizeof(buf));
	errno = 0;
	v = strtoull(buf, &end, 10);
	H_ASSERT(buf[0] >= '0' && buf[0] <= '9' && !*end && errno == 0,
		 "daemon %s: stat %s = \"%s\" is not a number", st->daemon, name, buf);
	return (uint64_t)v;
}

const char *h_stats_str(const struct h_stats *st, const char *name, char *buf, size_t cap)
{
	size_t vlen = 0;
	const char *v = stats_find(st, name, &vlen);

	H_ASSERT(v, "daemon %s: no stat named %s", st->daemon, name);
	H_ASSERT(vlen < cap, "daemon %s: stat %s: %zu bytes do not fit in %zu", st->daemon,
		 name, vlen, cap);
	memcpy(buf, v, vlen);
	buf[vlen] = '\0';
	return buf;
}

uint64_t h_daemon_stat(const struct h_daemon *d, const char *name)
{
	static struct h_stats st;	/* H_STATS_MAX: not on the stack */

	h_daemon_stats(d, &st);
	return h_stats_u64(&st, name);
}

const char *h_daemon_stat_str(const struct h_daemon *d, const char *name, char *buf,
			      size_t cap)
{
	static struct h_stats st;

	h_daemon_stats(d, &st);
	return h_stats_str(&st, name, buf, cap);
}

/* ---- network namespaces ---- */

int h_run(const char *const *argv, char *out, size_t cap, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	char scratch[512];
	size_t len = 0;
	bool timed_out = false, to_out;
	int pfd[2], st, rc;
	pid_t pid, w;

	if (out && cap)
		out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		(void)close(pfd[0]);
		(void)close(pfd[1]);
		return rc;
	}
	if (pid == 0) {
		int nullfd = open("/dev/null", O_RDONLY);

		if (nullfd < 0 || dup2(nullfd, 0) < 0 || dup2(pfd[1], 1) < 0 ||
		    dup2(pfd[1], 2) < 0 || close_range(3, ~0u, 0) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	(void)close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int64_t left = deadline - h_now_ms();
		ssize_t n;

		if (left <= 0) {
			timed_out = true;
			(void)kill(pid, SIGKILL);
			break;
		}
		rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;	/* the deadline check ends it */
		/* Into @out while it has room, then discarded (the pipe
		 * must keep draining, or the command blocks). */
		to_out = out && len + 1 < cap;
		if (to_out)
			n = read(pfd[0], out + len, cap - 1 - len);
		else
			n = read(pfd[0], scratch, sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (to_out) {
			len += (size_t)n;
			out[len] = '\0';
		}
	}
	(void)close(pfd[0]);
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w != pid)
		return -ECHILD;
	if (timed_out)
		return -ETIMEDOUT;
	if (!WIFEXITED(st))
		return -EINTR;
	return WEXITSTATUS(st);
}

bool h_tool(const char *name, char *path, size_t cap)
{
	static const char fallback[] = "/usr/sbin:/sbin:/usr/bin:/bin";
	const char *env = getenv("PATH");
	const char *lists[2] = { env ? env : "", fallback };
	unsigned i;

	for (i = 0; i < 2; i++) {
		const char *p = lists[i];

		while (*p) {
			size_t dlen = strcspn(p, ":");
			int n;

			if (dlen) {
				n = snprintf(path, cap, "%.*s/%s", (int)dlen, p, name);
				if (n > 0 && (size_t)n < cap && access(path, X_OK) == 0)
					return true;
			}
			p += dlen;
			if (*p == ':')
				p++;
		}
	}
	return false;
}

/* Pairs made by this process and not yet destroyed, for h_fail(). */
static struct h_netpair *netpairs[4];

/* Nothing a test does with namespaces takes long; a hung command must
 * not hang the test. */
#define NETNS_CMD_TIMEOUT_MS 10000

/*
 * Run the command given as NULL-terminated arguments after @tool ("ip"
 * or "nft", found with h_tool()), its output in @res (@res_cap bytes; may
 * be NULL).  Returns 0, or -1 with "<command>: <status>: <first line of
 * its output>" in @why.
 */
static int netns_cmd_out(char *res, size_t res_cap, char *why, size_t cap, const char *tool,
			 ...)
{
	char path[PATH_MAX], buf[4096], cmdline[512], *out = res ? res : buf;
	size_t out_cap = res ? res_cap : sizeof(buf);
	const char *argv[24];
	unsigned argc = 0;
	size_t off;
	va_list ap;
	int rc;

	if (!h_tool(tool, path, sizeof(path))) {
		snprintf(why, cap, "%s not found", tool);
		return -1;
	}
	argv[argc++] = path;
	va_start(ap, tool);
	while (argc < sizeof(argv) / sizeof(argv[0]) - 1 &&
	       (argv[argc] = va_arg(ap, const char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	rc = h_run(argv, out, out_cap, NETNS_CMD_TIMEOUT_MS);
	if (rc == 0)
		return 0;
	off = (size_t)snprintf(cmdline, sizeof(cmdline), "%s", tool);
	for (unsigned i = 1; i < argc && off < sizeof(cmdline); i++)
		off += (size_t)snprintf(cmdline + off, sizeof(cmdline) - off, " %s", argv[i]);
	out[strcspn(out, "\n")] = '\0';
	if (rc > 0)
		snprintf(why, cap, "%s: exit %d: %s", cmdline, rc, out);
	else
		snprintf(why, cap, "%s: %s", cmdline,
			 rc == -ETIMEDOUT ? "timed out" : rc == -EINTR ? "killed" : strerror(-rc));
	return -1;
}

#define netns_cmd(why, cap, ...) netns_cmd_out(NULL, 0, why, cap, __VA_ARGS__)

/* Is process @pid gone (so what it named may be removed)? */
static bool pid_gone(long pid)
{
	return pid > 0 && pid <= INT_MAX && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* The pid in a name "<prefix><digits><rest>", or -1. */
static long name_pid(const char *name, const char *prefix)
{
	size_t plen = strlen(prefix);
	char *end;
	long pid;

	if (strncmp(name, prefix, plen) != 0 || name[plen] < '0' || name[plen] > '9')
		return -1;
	pid = strtol(name + plen, &end, 10);
	return end == name + plen ? -1 : pid;
}

int h_netns_stale_cleanup(void)
{
	char why[256];
	struct if_nameindex *ifs, *it;
	struct dirent *e;
	DIR *dp;
	int removed = 0;

	dp = opendir("/run/netns");
	if (dp) {
		while ((e = readdir(dp))) {
			long pid = name_pid(e->d_name, H_NETNS_PREFIX);

			if (pid < 0 || !pid_gone(pid))
				continue;
			if (netns_cmd(why, sizeof(why), "ip", "netns", "del", e->d_name, NULL) == 0)
				removed++;
			else
				fprintf(stderr, "stale namespace %s: %s\n", e->d_name, why);
		}
		(void)closedir(dp);
	}
	/* Veths are made inside their namespaces; one here would be the
	 * leftover of a run that died half-way through. */
	ifs = if_nameindex();
	for (it = ifs; it && it->if_index; it++) {
		long pid = name_pid(it->if_name, H_VETH_PREFIX);

		if (pid < 0 || !pid_gone(pid))
			continue;
		if (netns_cmd(why, sizeof(why), "ip", "link", "del", it->if_name, NULL) == 0)
			removed++;
		else if (!strstr(why, "Cannot find device"))	/* went with its peer */
			fprintf(stderr, "stale veth %s: %s\n", it->if_name, why);
	}
	if (ifs)
		if_freenameindex(ifs);
	if (removed)
		fprintf(stderr, "removed %d stale namespaces and veths of earlier runs\n", removed);
	return removed;
}

#define PARTITION_TABLE "sluice_partition"

/* nft with the one argument @cmd, inside @np's namespace @side; its
 * output in @out (@out_cap bytes, may be NULL). */
static int nft_in(struct h_netpair *np, unsigned side, char *out, size_t out_cap, char *why,
		  size_t cap, const char *cmd)
{
	char nft[PATH_MAX];

	if (!h_tool("nft", nft, sizeof(nft))) {
		snprintf(why, cap, "nft (nftables) not found");
		return -1;
	}
	return netns_cmd_out(out, out_cap, why, cap, "ip", "netns", "exec", np->ns[side], nft,
			     cmd, NULL);
}

/*
 * Load the drop table into @np's namespace @side: packets arriving on its
 * veth end, and unless @ingress_only those leaving by it.  @netdev: at the
 * device (netdev ingress and egress hooks); else by interface name in
 * inet input and output.
 */
static int partition_load(struct h_netpair *np, unsigned side, bool netdev, bool ingress_only,
			  char *why, size_t cap)
{
	const char *dev = np->dev[side];
	char in[160], out[160] = "", rules[512];

	if (netdev) {
		snprintf(in, sizeof(in), "chain in { type filter hook ingress device \"%s\" "
			 "priority 0; policy accept; counter drop; }; ", dev);
		if (!ingress_only)
			snprintf(out, sizeof(out), "chain out { type filter hook egress device "
				 "\"%s\" priority 0; policy accept; counter drop; }; ", dev);
	} else {
		snprintf(in, sizeof(in), "chain in { type filter hook input priority 0; "
			 "policy accept; iifname \"%s\" counter drop; }; ", dev);
		if (!ingress_only)
			snprintf(out, sizeof(out), "chain out { type filter hook output priority 0; "
				 "policy accept; oifname \"%s\" counter drop; }; ", dev);
	}
	snprintf(rules, sizeof(rules), "table %s " PARTITION_TABLE " { %s%s}",
		 netdev ? "netdev" : "inet", in, out);
	return nft_in(np, side, NULL, 0, why, cap, rules);
}

static void netpair_register(struct h_netpair *np)
{
	unsigned i;

	for (i = 0; i < sizeof(netpairs) / sizeof(netpairs[0]); i++) {
		if (!netpairs[i]) {
			netpairs[i] = np;
			return;
		}
	}
	fprintf(stderr, "harness: more than %zu namespace pairs: the extra one is not "
		"removed on a failure\n", sizeof(netpairs) / sizeof(netpairs[0]));
}

static void netpair_unregister(struct h_netpair *np)
{
	unsigned i;

	for (i = 0; i < sizeof(netpairs) / sizeof(netpairs[0]); i++)
		if (netpairs[i] == np)
			netpairs[i] = NULL;
}

/* From h_fail(): the test is about to end; its namespaces go with it
 * (its daemons, still in them, end on their parent-death signal). */
static void netpair_cleanup_all(void)
{
	unsigned i;

	for (i = 0; i < sizeof(netpairs) / sizeof(netpairs[0]); i++) {
		struct h_netpair *np = netpairs[i];

		if (!np || np->owner != getpid())
			continue;
		fprintf(stderr, "harness: removing namespaces %s and %s after the failure\n",
			np->ns[0], np->ns[1]);
		(void)h_netpair_destroy(np);
	}
}

int h_netpair_destroy(struct h_netpair *np)
{
	char why[512];
	int rc = 0;
	unsigned i;

	netpair_unregister(np);
	if (np->owner != getpid())
		return 0;	/* a forked client: not its to remove */
	/* The veth first: both ends go at once, even while a daemon keeps
	 * its namespace alive. */
	if (np->made[0] && np->made[1] &&
	    netns_cmd(why, sizeof(why), "ip", "-n", np->ns[0], "link", "del", np->dev[0],
		      NULL) < 0 && !strstr(why, "Cannot find device")) {
		fprintf(stderr, "harness: %s\n", why);
		rc = -1;
	}
	for (i = 0; i < 2; i++) {
		if (!np->made[i])
			continue;
		if (netns_cmd(why, sizeof(why), "ip", "netns", "del", np->ns[i], NULL) < 0) {
			fprintf(stderr, "harness: %s\n", why);
			rc = -1;
		}
		np->made[i] = false;
		np->dropping[i] = false;
	}
	np->wire = false;
	return rc;
}

int h_netpair_create(struct h_netpair *np, char *why, size_t cap)
{
	char path[PATH_MAX], addr[2][24], probe[256];
	unsigned subnet, i;
	pid_t me = getpid();

	memset(np, 0, sizeof(*np));
	np->owner = me;
	if (geteuid() != 0) {
		snprintf(why, cap, "not root (euid %d): network namespaces need root",
			 (int)geteuid());
		return -1;
	}
	if (!h_tool("ip", path, sizeof(path))) {
		snprintf(why, cap, "ip (iproute2) not found");
		return -1;
	}
	if (!h_tool("nft", path, sizeof(path))) {
		snprintf(why, cap, "nft (nftables) not found");
		return -1;
	}
	(void)h_netns_stale_cleanup();
	subnet = (unsigned)me % 250 + 1;
	for (i = 0; i < 2; i++) {
		snprintf(np->ns[i], sizeof(np->ns[i]), H_NETNS_PREFIX "%d-%c", (int)me, 'a' + i);
		snprintf(np->dev[i], sizeof(np->dev[i]), H_VETH_PREFIX "%d%c", (int)me, 'a' + i);
		snprintf(np->ip[i], sizeof(np->ip[i]), "10.77.%u.%u", subnet, i + 1);
		snprintf(addr[i], sizeof(addr[i]), "%s/24", np->ip[i]);
	}
	netpair_register(np);
	for (i = 0; i < 2; i++) {
		if (netns_cmd(why, cap, "ip", "netns", "add", np->ns[i], NULL) < 0)
			goto fail;
		np->made[i] = true;
	}
	/* Both ends made straight in their namespaces: none is ever left in
	 * ours. */
	if (netns_cmd(why, cap, "ip", "link", "add", np->dev[0], "netns", np->ns[0], "type",
		      "veth", "peer", "name", np->dev[1], "netns", np->ns[1], NULL) < 0)
		goto fail;
	for (i = 0; i < 2; i++) {
		if (netns_cmd(why, cap, "ip", "-n", np->ns[i], "addr", "add", addr[i], "dev",
			      np->dev[i], NULL) < 0 ||
		    netns_cmd(why, cap, "ip", "-n", np->ns[i], "link", "set", "lo", "up", NULL) < 0 ||
		    netns_cmd(why, cap, "ip", "-n", np->ns[i], "link", "set", np->dev[i], "up",
			      NULL) < 0)
			goto fail;
	}
	/* Can nft drop here?  Device hooks first (egress: Linux 5.16). */
	np->netdev_hooks = true;
	if (partition_load(np, 1, true, false, probe, sizeof(probe)) < 0) {
		np->netdev_hooks = false;
		if (partition_load(np, 1, false, false, why, cap) < 0)
			goto fail;
		fprintf(stderr, "harness: nft has no netdev egress hook here (%s): partitions "
			"drop in inet input/output instead\n", probe);
	}
	if (nft_in(np, 1, NULL, 0, why, cap, np->netdev_hooks ? "delete table netdev " PARTITION_TABLE
						      : "delete table inet " PARTITION_TABLE) < 0)
		goto fail;
	return 0;

fail:
	(void)h_netpair_destroy(np);
	return -1;
}

bool h_netpair_open(struct h_netpair *np, const char *test)
{
	const char *strict = getenv("SLUICE_STRICT_NETNS");
	char why[512];

	if (h_netpair_create(np, why, sizeof(why)) == 0)
		return true;
	if (strict && strcmp(strict, "1") == 0)
		h_fail(__FILE__, __LINE__, "h_netpair_open",
		       "%s: no network namespaces (SLUICE_STRICT_NETNS=1): %s", test, why);
	printf("SKIPPED: %s (%s)\n", why, test);
	fflush(stdout);
	return false;
}

void h_netpair_drop(struct h_netpair *np, unsigned side)
{
	char why[512];
	unsigned i;

	H_ASSERT(side <= H_NETPAIR_WIRE, "side %u", side);
	for (i = 0; i < 2; i++) {
		if (side != H_NETPAIR_WIRE && side != i)
			continue;
		H_ASSERT(np->made[i], "namespace %u not made", i);
		H_ASSERT(!np->dropping[i], "%s already drops", np->ns[i]);
		H_ASSERT(partition_load(np, i, np->netdev_hooks, side == H_NETPAIR_WIRE, why,
					sizeof(why)) == 0, "%s", why);
		np->dropping[i] = true;
	}
	np->wire = side == H_NETPAIR_WIRE;
}

uint64_t h_netpair_heal(struct h_netpair *np, unsigned side)
{
	const char *family = np->netdev_hooks ? "netdev" : "inet";
	char why[512], cmd[128], out[4096];
	uint64_t packets = 0;
	const char *p;
	unsigned i;

	H_ASSERT(side <= H_NETPAIR_WIRE, "side %u", side);
	H_ASSERT(np->wire == (side == H_NETPAIR_WIRE), "heal side %u of a drop %s", side,
		 np->wire ? "on the wire" : "in one namespace");
	for (i = 0; i < 2; i++) {
		if (side != H_NETPAIR_WIRE && side != i)
			continue;
		H_ASSERT(np->dropping[i], "%s does not drop", np->ns[i]);
		snprintf(cmd, sizeof(cmd), "list table %s " PARTITION_TABLE, family);
		H_ASSERT(nft_in(np, i, out, sizeof(out), why, sizeof(why), cmd) == 0, "%s", why);
		for (p = out; (p = strstr(p, "counter packets ")); ) {
			p += strlen("counter packets ");
			packets += strtoull(p, NULL, 10);
		}
		snprintf(cmd, sizeof(cmd), "delete table %s " PARTITION_TABLE, family);
		H_ASSERT(nft_in(np, i, NULL, 0, why, sizeof(why), cmd) == 0, "%s", why);
		np->dropping[i] = false;
	}
	np->wire = false;
	return packets;
}

void h_netpair_sysctl(struct h_netpair *np, unsigned side, const char *key, const char *value)
{
	char nsfile[64 + H_NETNS_MAX], path[256];
	pid_t pid;
	int st;

	H_ASSERT(side < 2 && np->made[side], "namespace side %u not made", side);
	snprintf(nsfile, sizeof(nsfile), "/run/netns/%s", np->ns[side]);
	snprintf(path, sizeof(path), "/proc/sys/%s", key);
	pid = h_fork();
	if (pid == 0) {
		/* /proc/sys/net is the namespace of the task that opens it. */
		int nsfd = open(nsfile, O_RDONLY | O_CLOEXEC), fd;
		size_t len = strlen(value);

		if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
			_exit(10);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(11);
		if (write(fd, value, len) != (ssize_t)len || close(fd) < 0)
			_exit(12);
		_exit(0);
	}
	h_wait_children(&pid, 1, 5000, &st);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s = %s in %s: %s", key, value,
		 np->ns[side], WIFEXITED(st) ? (WEXITSTATUS(st) == 10 ? "setns failed" :
		 WEXITSTATUS(st) == 11 ? "cannot open it" : "cannot write it") : "child killed");
}

TCase *h_tcase(Suite *s, const char *name, int timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, timeout_s);
	suite_add_tcase(s, tc);
	return tc;
}

int h_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
