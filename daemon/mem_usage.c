/*
 * mem_usage.c - the daemon's memory as sluicectl shows it (mem_usage.h).
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "link.h"
#include "mem_usage.h"
#include "queue.h"

int mem_rss_bytes(uint64_t *bytes)
{
	char buf[256];
	unsigned long long size, resident;
	long page = sysconf(_SC_PAGESIZE);
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc)
		return rc;
	buf[n] = '\0';
	/* "size resident shared text lib data dt", in pages. */
	if (page <= 0 || sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return -EPROTO;
	*bytes = (uint64_t)resident * (uint64_t)page;
	return 0;
}

void mem_totals(struct daemon *d, struct mem_totals *t)
{
	const struct queue *q;
	size_t i;

	memset(t, 0, sizeof(*t));
	if (mem_rss_bytes(&t->rss) < 0)
		t->rss = 0;
	t->unexpected = d->unexpected_bytes;
	t->unexpected_limit = d->cfg.unexpected_total_bytes;
	TAILQ_FOREACH(q, &d->queues, all) {
		t->arena += q->arena_size;
		t->mapped += q->seg_size;
	}
	for (i = 0; i < d->n_links; i++) {
		struct link_stats st;

		link_get_stats(d->links[i], &st);
		t->link_buffers += st.xport_tx_bytes + st.xport_rx_bytes;
		t->retransmit += st.retransmit_bytes;
	}
}
