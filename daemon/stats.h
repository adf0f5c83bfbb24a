/*
 * stats.h - the daemon's statistics as one list of named values, read by
 * both of their consumers: the SIGUSR1 file runtime_dir/sluiced.stats
 * ("daemon.sqes 12" lines, stats.c) and the admin socket's JSON replies
 * (admin.c).  Adding a statistic here shows it in both, under one name.
 *
 * A visitor is called once per value, in a fixed order (the file's).
 * Values are numbers, or text for the few that are not (a link's state,
 * a peer incarnation in hex).  Names carry no group prefix: the file
 * writer adds "daemon.", "rcache.", "xport." or "link.PEER.".
 */
#ifndef SLD_STATS_H
#define SLD_STATS_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct link_stats;

struct stat_value {
	const char *name;	/* e.g. "sqes", "tx_seq" */
	bool is_text;
	uint64_t num;		/* when !is_text */
	const char *text;	/* when is_text; valid during the call only */
};

typedef void (*stat_visit_fn)(void *arg, const struct stat_value *v);

/* Every daemon.* value: counters of struct daemon_counters and gauges
 * summed over the live queues. */
void stats_visit_daemon(struct daemon *d, stat_visit_fn fn, void *arg);
/* Every rcache.* value (struct rcache_stats). */
void stats_visit_rcache(struct daemon *d, stat_visit_fn fn, void *arg);
/* Every loop.* value (loop_watch.h): iteration_max_ms, stalls,
 * stall_max_ms.  They may change while nothing else does (a timer runs
 * late), so they are not among the counters. */
void stats_visit_loop(struct daemon *d, stat_visit_fn fn, void *arg);
/* Every xport.* value (struct xport_stats of the transport). */
void stats_visit_xport(struct daemon *d, stat_visit_fn fn, void *arg);
/* Every link.PEER.* value of @st (struct link_stats, filled by
 * link_get_stats()). */
void stats_visit_link(const struct link_stats *st, stat_visit_fn fn, void *arg);

#endif
