/*
 * fd_limits.c - see fd_limits.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>

#include "config.h"
#include "fd_limits.h"
#include "log.h"
#include "rate_log.h"

/* Queues refused for descriptors: one line per episode. */
static struct rate_log refusal_log;

uint64_t fd_limits_need(const struct config *c)
{
	return (uint64_t)FD_PER_QUEUE * c->max_queues + (uint64_t)FD_PER_PEER * c->n_peers +
	       FD_LIMITS_OWN;
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

/* The max_queues that @limit holds, at least 1 (the key's minimum). */
static uint64_t queues_fitting(const struct config *c, uint64_t limit)
{
	uint64_t other = (uint64_t)FD_PER_PEER * c->n_peers + FD_LIMITS_OWN;

	return limit > other + FD_PER_QUEUE ? (limit - other) / FD_PER_QUEUE : 1;
}

/* What the figures are made of, and what to do when the limit is short. */
#define BREAKDOWN_FMT "%u a queue, %u a peer, %u for itself"
#define BREAKDOWN_ARGS FD_PER_QUEUE, FD_PER_PEER, FD_LIMITS_OWN
#define FIX_FMT "raise LimitNOFILE= in sluiced.service (or ulimit -Hn where sluiced is " \
		"started) to %llu or more, or lower [limits] max_queues to %llu"
#define FIX_ARGS(c, limit) (unsigned long long)fd_limits_need(c), \
		(unsigned long long)queues_fitting((c), (limit))

uint64_t fd_limits_raise(const struct config *c)
{
	struct rlimit rl;
	rlim_t before, target;
	uint64_t need = fd_limits_need(c);

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
			 "max_queues %u needs about %llu (" BREAKDOWN_FMT "): queue opens past "
			 "the limit will fail; " FIX_FMT,
			 (unsigned long long)rl.rlim_cur, (unsigned long long)before,
			 (unsigned long long)rl.rlim_max, c->max_queues, (unsigned long long)need,
			 BREAKDOWN_ARGS, FIX_ARGS(c, rl.rlim_cur));
	else
		log_info("file descriptors: limit %llu (was %llu); max_queues %u needs about %llu "
			 "(" BREAKDOWN_FMT ")",
			 (unsigned long long)rl.rlim_cur, (unsigned long long)before,
			 c->max_queues, (unsigned long long)need, BREAKDOWN_ARGS);
	return rl.rlim_cur;
}

int fd_limits_check(const struct config *c, char *warn, size_t cap)
{
	struct rlimit rl;
	rlim_t hard;
	uint64_t need = fd_limits_need(c);

	warn[0] = '\0';
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		snprintf(warn, cap, "file descriptors: getrlimit(RLIMIT_NOFILE): %m");
		return 1;
	}
	hard = rl.rlim_max == RLIM_INFINITY ? nr_open() : rl.rlim_max;
	if (hard >= need)
		return 0;
	snprintf(warn, cap, "file descriptors: hard limit %llu, but max_queues %u needs about "
		 "%llu (" BREAKDOWN_FMT "); " FIX_FMT, (unsigned long long)hard, c->max_queues,
		 (unsigned long long)need, BREAKDOWN_ARGS, FIX_ARGS(c, hard));
	return 1;
}

void fd_limits_queue_refused(const struct config *c, pid_t pid, int err, unsigned queues,
			     unsigned clients)
{
	struct rlimit rl = { 0, 0 };
	uint64_t n;

	if (!rate_log_due(&refusal_log, FD_LIMITS_LOG_S, &n))
		return;
	if (err == ENFILE) {
		log_warn("queue refused (client pid %d): the system's file table is full "
			 "(fs.file-max), %u queues open for %u client%s (%llu refusals since "
			 "the last such line)", (int)pid, queues, clients, clients == 1 ? "" : "s",
			 (unsigned long long)n);
		return;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 0;
	log_warn("queue refused (client pid %d): out of file descriptors: limit %llu, %u queues "
		 "open (max_queues %u) for %u client%s; " FIX_FMT " (%llu refusals since the "
		 "last such line)", (int)pid, (unsigned long long)rl.rlim_cur, queues,
		 c->max_queues, clients, clients == 1 ? "" : "s", FIX_ARGS(c, rl.rlim_cur),
		 (unsigned long long)n);
}
