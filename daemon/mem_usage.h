/*
 * mem_usage.h - what the daemon holds in memory, read from where it is
 * allocated (never estimated), for `sluicectl memory` and the memory line
 * of `sluicectl status` (admin.c): the process's resident set, the queue
 * segments it shares with clients, the unexpected messages it buffers,
 * and what the links and their transport connections hold (each link's
 * own figures are in struct link_stats, link.h).
 *
 * Every function runs on the loop thread (it walks the daemon's lists)
 * and is O(queues + links + unacknowledged frames).
 */
#ifndef SLD_MEM_USAGE_H
#define SLD_MEM_USAGE_H

#include <stdint.h>

struct daemon;

/* The daemon's totals. */
struct mem_totals {
	uint64_t rss;		/* bytes resident; 0 if /proc could not tell */
	uint64_t arena;		/* bytes of the arenas of every queue */
	uint64_t mapped;	/* bytes of the queue segments mapped (header,
				 * rings and arena): what clients map too */
	uint64_t unexpected;	/* bytes of unexpected messages held (charged) */
	uint64_t unexpected_limit;	/* bytes: [limits] unexpected_total_bytes */
	uint64_t link_buffers;	/* bytes: xport_tx_bytes + xport_rx_bytes of
				 * every link (struct link_stats) */
	uint64_t retransmit;	/* bytes: retransmit_bytes of every link */
};

/* The resident set size of this process, from /proc/self/statm (pages
 * times the page size).  Returns 0 with *@bytes set, or -errno (the file
 * cannot be read, or is not as proc(5) says: -EPROTO). */
int mem_rss_bytes(uint64_t *bytes);

/* Fill @t for the whole daemon (the RSS as mem_rss_bytes, 0 on error). */
void mem_totals(struct daemon *d, struct mem_totals *t);

#endif
