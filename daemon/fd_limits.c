/*
 * fd_limits.c - see fd_limits.h.
 */
#include "autoconfig.h"

#include <stdio.h>
#include <sys/resource.h>

#include "config.h"
#include "fd_limits.h"
#include "log.h"

static uint64_t queue_needs(const struct config *c)
{
	/* Per queue the daemon keeps its two doorbell eventfds (the memfd
	 * is closed once passed), per client its socket: at most one
	 * client per queue. */
	return 3ull * c->max_queues + FD_LIMITS_OWN + c->n_peers;
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

uint64_t fd_limits_raise(const struct config *c)
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
