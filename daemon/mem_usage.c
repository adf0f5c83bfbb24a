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
#include "link_impl.h"
#include "mem_usage.h"
#include "queue.h"
#include "sl_wire.h"

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

void mem_link_usage(const struct link *l, struct mem_link *m)
{
	const struct xport_ops *ops = l->d->xp->ops;
	const struct link_msg *f;

	memset(m, 0, sizeof(*m));
	m->xport_known = ops->buffer_bytes != NULL;
	if (ops->buffer_bytes && l->conn)
		ops->buffer_bytes(l->conn, &m->xport_tx, &m->xport_rx);
	TAILQ_FOREACH(f, &l->unacked, link) {
		m->retransmit_frames++;
		if (f->type == SL_WIRE_EAGER)
			m->retransmit_bytes += f->payload_len;
	}
}

void mem_totals(struct daemon *d, struct mem_totals *t)
{
	const struct queue *q;
	size_t i;

	memset(t, 0, sizeof(*t));
	if (mem_rss_bytes(&t->rss) < 0)
		t->rss = 0;
	TAILQ_FOREACH(q, &d->queues, all) {
		t->arena += q->arena_size;
		t->mapped += q->seg_size;
		t->unexpected += q->mq.unexpected_bytes;
	}
	for (i = 0; i < d->n_links; i++) {
		struct mem_link m;

		mem_link_usage(d->links[i], &m);
		t->link_buffers += m.xport_tx + m.xport_rx;
		t->retransmit += m.retransmit_bytes;
	}
}
