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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

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

void h_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "%s:%d: FAILED: %s: %s\n", file, line, expr, msg);
	h_dump_logs();
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
	char bin[H_PATH_MAX + 32], listen[64], peer_args[H_MAX_NODES][H_NAME_MAX + 32];
	char conf_path[H_PATH_MAX + 16];
	const char *argv[16 + 2 * H_MAX_NODES];
	unsigned argc = 0, i;
	int logfd, st;
	pid_t parent = getpid();
	int64_t deadline;

	H_ASSERT(n_peers < H_MAX_NODES, "%u peers", n_peers);
	H_ASSERT(strlen(name) < H_NAME_MAX, "name %s too long", name);
	memset(d, 0, sizeof(*d));
	strcpy(d->name, name);
	d->node = sl_node_id(name);
	d->tcp_port = tcp_port;
	strcpy(d->dir, "/tmp/sluice-it-XXXXXX");
	H_ASSERT(mkdtemp(d->dir), "mkdtemp: %s", strerror(errno));
	snprintf(d->sock, sizeof(d->sock), "%s/sluiced.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/sluiced.log", d->dir);
	daemon_path(bin, sizeof(bin));

	argv[argc++] = bin;
	if (conf) {
		/* In the runtime dir: h_daemon_stop() removes it with the rest. */
		snprintf(conf_path, sizeof(conf_path), "%s/sluiced.conf", d->dir);
		write_conf(conf_path, conf);
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
		snprintf(listen, sizeof(listen), "127.0.0.1:%u", tcp_port);
		argv[argc++] = "--listen";
		argv[argc++] = listen;
	}
	for (i = 0; i < n_peers; i++) {
		H_ASSERT(peers[i].tcp_port, "peer %s has no port", peers[i].name);
		snprintf(peer_args[i], sizeof(peer_args[i]), "%s=127.0.0.1:%u",
			 peers[i].name, peers[i].tcp_port);
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
		execv(bin, (char *const *)argv);
		dprintf(2, "exec %s: %s\n", bin, strerror(errno));
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

void h_daemon_stop(struct h_daemon *d)
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
	char name[H_NAME_MAX];
	uint16_t port = d->tcp_port;

	H_ASSERT(d->pid == 0, "daemon %s is still running (pid %d)", d->name, (int)d->pid);
	snprintf(name, sizeof(name), "%s", d->name);
	h_daemon_start_conf(d, name, port, peers, n_peers, conf);
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
	int64_t deadline = h_now_ms() + H_LINK_TIMEOUT_MS;
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
			 H_LINK_TIMEOUT_MS);
		rc = sl_send(q, (sl_addr_t){ to->node, H_PORT_NOBODY }, 0, NULL, 0, 1);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		rc = h_wait_cqe(q, &cqe, (int)left);
		H_ASSERT(rc >= 0, "wait: %s", strerror(-rc));
		H_ASSERT(rc == 1, "no link %s -> %s after %d ms", from->name, to->name,
			 H_LINK_TIMEOUT_MS);
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
	struct h_daemon peers[H_MAX_NODES];
	uint16_t ports[H_MAX_NODES];
	unsigned i, j, k;

	H_ASSERT(n >= 1 && n <= H_MAX_NODES, "%u nodes", n);
	free_ports(ports, n);
	for (i = 0; i < n; i++) {
		memset(&ds[i], 0, sizeof(ds[i]));
		snprintf(ds[i].name, sizeof(ds[i].name), "%s", names[i]);
		ds[i].tcp_port = ports[i];
	}
	for (i = 0; i < n; i++) {
		for (j = 0, k = 0; j < n; j++)
			if (j != i)
				peers[k++] = ds[j];
		h_daemon_start_conf(&ds[i], names[i], ports[i], peers, k, confs ? confs[i] : NULL);
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			h_wait_link(&ds[i], &ds[j]);
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

long h_proc_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		int rc = -errno;

		(void)close(fd);
		return rc;
	}
	if (close(fd) < 0)
		return -errno;
	buf[n] = '\0';
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
	static struct h_stats st;	/* 16 KiB: not on the stack */

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
