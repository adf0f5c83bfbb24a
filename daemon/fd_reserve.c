/*
 * fd_reserve.c - see fd_reserve.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_reserve.h"
#include "log.h"
#include "rate_log.h"

static int spare_fd = -1;

/* The refusal's log line, FD_REFUSE_LOG_S apart at most. */
static struct rate_log refusal_log;

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
