/*
 * fd_reserve.c - see fd_reserve.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "fd_reserve.h"
#include "log.h"
#include "rate_log.h"

static int spare_fd = -1;

/* The refusal's log line, FD_REFUSE_LOG_S apart at most. */
static struct rate_log refusal_log;

static uint64_t queue_needs(const struct config *c)
{
	/* Per queue the daemon keeps its two doorbell eventfds (the memfd
	 * is closed once passed), per client its socket: at most one
	 * client per queue. */
	return 3ull * c->max_queues + FD_RESERVE_BASE + c->n_peers;
}

/* The kernel's cap on RLIMIT_NOFILE (fs.nr_open; 1,048,576 by default). */
static rlim_t nr_open(void)
{
	unsigned long long n = 1048576;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");

	if (f) {
		if (fscanf(f, "%llu", &n) != 1)
			n = 1048576;
		if (fclose(f) != 0)
			log_debug("/proc/sys/fs/nr_open: close: %m");
	}
	return (rlim_t)n;
}

uint64_t fd_limit_raise(const struct config *c)
{
	struct rlimit rl;
	rlim_t before, target;
	uint64_t need = queue_needs(c);

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		log_warn("getrlimit(RLIMIT_NOFILE): %m");
		return 0;
	}
	before = rl.rlim_cur;
	/* An unlimited hard limit still stops at fs.nr_open. */
	target = rl.rlim_max == RLIM_INFINITY ? nr_open() : rl.rlim_max;
	if (rl.rlim_cur < target) {
		rl.rlim_cur = target;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			log_warn("setrlimit(RLIMIT_NOFILE, %llu): %m", (unsigned long long)target);
			rl.rlim_cur = before;
		}
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
		log_warn("file descriptors: limit %llu (was %llu, hard limit %llu), but "
			 "max_queues %u needs about %llu: queue opens will fail EMFILE first; "
			 "raise LimitNOFILE= or lower max_queues",
			 (unsigned long long)rl.rlim_cur, (unsigned long long)before,
			 (unsigned long long)rl.rlim_max, c->max_queues, (unsigned long long)need);
	else
		log_info("file descriptors: limit %llu (was %llu); max_queues %u needs about %llu",
			 (unsigned long long)rl.rlim_cur, (unsigned long long)before,
			 c->max_queues, (unsigned long long)need);
	return rl.rlim_cur;
}

int fd_spare_open(void)
{
	if (spare_fd >= 0)
		return 0;
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (spare_fd < 0) {
		int rc = -errno;

		log_warn("spare descriptor: /dev/null: %m");
		return rc;
	}
	return 0;
}

void fd_spare_close(void)
{
	if (spare_fd >= 0 && close(spare_fd) < 0)
		log_warn("spare descriptor: close: %m");
	spare_fd = -1;
}

static void log_refusal(const char *what)
{
	struct rlimit rl = { 0, 0 };
	uint64_t n;

	if (!rate_log_due(&refusal_log, FD_REFUSE_LOG_S, &n))
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 0;
	log_warn("%s: out of file descriptors (limit %llu): refused %llu connection%s "
		 "with a reason; next line in %.0f s at the earliest",
		 what, (unsigned long long)rl.rlim_cur, (unsigned long long)n, n == 1 ? "" : "s",
		 FD_REFUSE_LOG_S);
}

/* Refuse one connection with the spare: 1, 0 when none was pending, or
 * -errno (-EMFILE: no spare). */
static int spare_refuse(int listen_fd, const char *what, void (*refuse)(int fd, void *arg),
			void *arg, uint64_t *refused)
{
	int fd, err = 0;

	if (spare_fd < 0 && fd_spare_open() < 0)
		return -EMFILE;
	if (close(spare_fd) < 0)
		log_debug("spare descriptor: close: %m");
	spare_fd = -1;
	fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		err = errno;
	else {
		refuse(fd, arg);
		if (close(fd) < 0)
			log_debug("%s: close: %m", what);
		(*refused)++;
		log_refusal(what);
	}
	(void)fd_spare_open();	/* logged; without it the caller pauses next time */
	if (fd >= 0)
		return 1;
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED
		       ? 0 : -err;
}

int fd_accept(int listen_fd, const char *what, void (*refuse)(int fd, void *arg), void *arg,
	      uint64_t *refused)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), rc;

	if (fd >= 0 || (errno != EMFILE && errno != ENFILE))
		return fd;
	rc = spare_refuse(listen_fd, what, refuse, arg, refused);
	if (rc > 0)
		return FD_REFUSED;
	errno = rc == 0 ? EAGAIN : -rc;
	return -1;
}
