/*
 * mem_usage.h - what the daemon holds in memory, read from where it is
 * allocated (never estimated), for `sluicectl memory` and the memory line
 * of `sluicectl status` (admin.c): the process's resident set, the queue
 * segments it shares with clients, the unexpected messages it buffers,
 * and what each link and its transport connection hold.
 *
 * Every function runs on the loop thread (it walks the daemon's lists)
 * and is O(queues + links + unacknowledged frames).
 */
#ifndef SLD_MEM_USAGE_H
#define SLD_MEM_USAGE_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct link;

/* One link's memory. */
struct mem_link {
	bool xport_known;	/* the transport reports buffer_bytes (xport.h) */
	uint64_t xport_tx;	/* bytes: the connection's send buffers; 0 when
				 * the link has no connection */
	uint64_t xport_rx;	/* bytes: its receive buffers */
	uint64_t retransmit_frames;	/* frames kept until the peer's ACK */
	uint64_t retransmit_bytes;	/* payload bytes of those (eager
					 * messages, in the senders' arenas) */
};

/* The daemon's totals. */
struct mem_totals {
	uint64_t rss;		/* bytes resident; 0 if /proc could not tell */
	uint64_t arena;		/* bytes of the arenas of every queue */
	uint64_t mapped;	/* bytes of the queue segments mapped (header,
				 * rings and arena): what clients map too */
	uint64_t unexpected;	/* bytes of unexpected messages held */
	uint64_t link_buffers;	/* bytes: xport_tx + xport_rx of every link */
	uint64_t retransmit;	/* bytes: retransmit_bytes of every link */
};

/* The resident set size of this process, from /proc/self/statm (pages
 * times the page size).  Returns 0 with *@bytes set, or -errno (the file
 * cannot be read, or is not as proc(5) says: -EPROTO). */
int mem_rss_bytes(uint64_t *bytes);

/* Fill @m for link @l. */
void mem_link_usage(const struct link *l, struct mem_link *m);

/* Fill @t for the whole daemon (the RSS as mem_rss_bytes, 0 on error). */
void mem_totals(struct daemon *d, struct mem_totals *t);

#endif
