/*
 * stats.c - counters and gauges written to runtime_dir/sluiced.stats on
 * SIGUSR1: "name value" lines, names dotted by subsystem.  The file is
 * written beside and renamed into place, so a reader never sees half of
 * it.  sluicectl will replace this as the operator's interface; the
 * names stay.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "link.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"

#define STATS_NAME "sluiced.stats"

static void write_all(struct daemon *d, FILE *f)
{
	const struct daemon_counters *c = &d->ctr;
	struct rcache_stats rs;
	struct xport_stats xs;
	uint64_t unexp = 0, unexp_bytes = 0, posted = 0;
	struct queue *q;
	size_t i;

	fprintf(f, "daemon.sqes %llu\n", (unsigned long long)c->sqes);
	fprintf(f, "daemon.cqes %llu\n", (unsigned long long)c->cqes);
	fprintf(f, "daemon.invalid %llu\n", (unsigned long long)c->invalid);
	fprintf(f, "daemon.no_endpoint %llu\n", (unsigned long long)c->no_endpoint);
	fprintf(f, "daemon.local_msgs %llu\n", (unsigned long long)c->local_msgs);
	fprintf(f, "daemon.remote_msgs_rx %llu\n", (unsigned long long)c->remote_msgs_rx);
	fprintf(f, "daemon.unexpected_total %llu\n", (unsigned long long)c->unexpected);
	fprintf(f, "daemon.naks_receiver_full %llu\n", (unsigned long long)c->naks_receiver_full);
	fprintf(f, "daemon.queues %u\n", d->n_queues);
	fprintf(f, "daemon.quota_stalls %llu\n", (unsigned long long)c->quota_stalls);
	TAILQ_FOREACH(q, &d->queues, all) {
		unexp += q->mq.n_unexpected;
		unexp_bytes += q->mq.unexpected_bytes;
		posted += q->mq.n_posted;
	}
	fprintf(f, "daemon.unexpected %llu\n", (unsigned long long)unexp);
	fprintf(f, "daemon.unexpected_bytes %llu\n", (unsigned long long)unexp_bytes);
	fprintf(f, "daemon.posted_recvs %llu\n", (unsigned long long)posted);

	rcache_get_stats(d->rc, &rs);
	fprintf(f, "rcache.hits %llu\n", (unsigned long long)rs.hits);
	fprintf(f, "rcache.misses %llu\n", (unsigned long long)rs.misses);
	fprintf(f, "rcache.evictions %llu\n", (unsigned long long)rs.evictions);
	fprintf(f, "rcache.waits %llu\n", (unsigned long long)rs.waits);
	fprintf(f, "rcache.naks %llu\n", (unsigned long long)rs.naks);
	fprintf(f, "rcache.timeouts %llu\n", (unsigned long long)rs.timeouts);
	fprintf(f, "rcache.cancels %llu\n", (unsigned long long)rs.cancels);
	fprintf(f, "rcache.reg_fails %llu\n", (unsigned long long)rs.reg_fails);
	fprintf(f, "rcache.regions %llu\n", (unsigned long long)rs.regions);
	fprintf(f, "rcache.bytes %llu\n", (unsigned long long)rs.bytes);
	fprintf(f, "rcache.waiting %llu\n", (unsigned long long)rs.waiting);
	fprintf(f, "rcache.regs %llu\n", (unsigned long long)rs.regs);
	fprintf(f, "rcache.deregs %llu\n", (unsigned long long)rs.deregs);

	d->xp->ops->get_stats(d->xp, &xs);
	fprintf(f, "xport.mrs %llu\n", (unsigned long long)xs.mrs);
	fprintf(f, "xport.reg_fails %llu\n", (unsigned long long)xs.reg_fails);
	fprintf(f, "xport.post_enomem %llu\n", (unsigned long long)xs.post_enomem);
	fprintf(f, "xport.faults_injected %llu\n", (unsigned long long)xs.faults_injected);
	fprintf(f, "xport.writes_rx %llu\n", (unsigned long long)xs.writes_rx);
	fprintf(f, "xport.access_errors %llu\n", (unsigned long long)xs.access_errors);
	fprintf(f, "xport.cuts %llu\n", (unsigned long long)xs.cuts);

	for (i = 0; i < d->n_links; i++) {
		const struct link *l = d->links[i];
		const char *n = l->peer->name;

		fprintf(f, "link.%s.state %s\n", n, link_state_name(l->state));
		fprintf(f, "link.%s.connects %llu\n", n, (unsigned long long)l->connects);
		fprintf(f, "link.%s.backlog %u\n", n, l->n_backlog);
		fprintf(f, "link.%s.ctl_queued %u\n", n, l->n_ctl);
		fprintf(f, "link.%s.credits %llu\n", n,
			(unsigned long long)link_credits_left(l));
		fprintf(f, "link.%s.backlog_naks %llu\n", n, (unsigned long long)l->backlog_naks);
		fprintf(f, "link.%s.unacked %u\n", n, l->n_unacked);
		fprintf(f, "link.%s.rndv_tx %u\n", n, l->n_rndv_tx);
		fprintf(f, "link.%s.rndv_rx %u\n", n, l->n_rndv_rx);
		fprintf(f, "link.%s.writes_pending %u\n", n, l->n_writes);
		fprintf(f, "link.%s.frames_tx %llu\n", n, (unsigned long long)l->frames_tx);
		fprintf(f, "link.%s.frames_rx %llu\n", n, (unsigned long long)l->frames_rx);
		fprintf(f, "link.%s.naks_tx %llu\n", n, (unsigned long long)l->naks_tx);
		fprintf(f, "link.%s.naks_rx %llu\n", n, (unsigned long long)l->naks_rx);
		fprintf(f, "link.%s.post_enomem %llu\n", n, (unsigned long long)l->post_enomem);
		fprintf(f, "link.%s.ctl_deferred %llu\n", n, (unsigned long long)l->ctl_deferred);
		fprintf(f, "link.%s.writes_tx %llu\n", n, (unsigned long long)l->writes_tx);
		fprintf(f, "link.%s.rndv_tx_done %llu\n", n, (unsigned long long)l->rndv_tx_done);
		fprintf(f, "link.%s.rndv_rx_done %llu\n", n, (unsigned long long)l->rndv_rx_done);
		fprintf(f, "link.%s.rndv_rx_failed %llu\n", n, (unsigned long long)l->rndv_rx_failed);
		fprintf(f, "link.%s.tx_seq %llu\n", n, (unsigned long long)l->tx_seq);
		fprintf(f, "link.%s.rx_seq %llu\n", n, (unsigned long long)l->rx_seq);
		fprintf(f, "link.%s.acked %llu\n", n, (unsigned long long)l->ack_rx);
		fprintf(f, "link.%s.retransmits %llu\n", n, (unsigned long long)l->retransmits);
		fprintf(f, "link.%s.retransmit_timer %d\n", n, ev_is_active(&l->ack_w) ? 1 : 0);
		fprintf(f, "link.%s.rx_duplicates %llu\n", n, (unsigned long long)l->rx_duplicates);
		fprintf(f, "link.%s.ack_timeouts %llu\n", n, (unsigned long long)l->ack_timeouts);
		fprintf(f, "link.%s.peer_timeouts %llu\n", n, (unsigned long long)l->peer_timeouts);
		fprintf(f, "link.%s.peer_restarts %llu\n", n, (unsigned long long)l->peer_restarts);
		fprintf(f, "link.%s.rndv_restarts %llu\n", n, (unsigned long long)l->rndv_restarts);
		fprintf(f, "link.%s.illegal_moves %llu\n", n, (unsigned long long)l->illegal_moves);
		fprintf(f, "link.%s.silences %llu\n", n, (unsigned long long)l->silences);
		fprintf(f, "link.%s.incarnation %016llx\n", n, (unsigned long long)l->peer_incarnation);
	}
}

int daemon_stats_write(struct daemon *d)
{
	char path[CONFIG_PATH_MAX + 32], tmp[CONFIG_PATH_MAX + 40];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", d->cfg.runtime_dir, STATS_NAME);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f) {
		rc = -errno;
		log_warn("stats: %s: %m", tmp);
		return rc;
	}
	write_all(d, f);
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		log_warn("stats: %s: %s", path, strerror(-rc));
		if (unlink(tmp) < 0 && errno != ENOENT)
			log_warn("stats: unlink %s: %m", tmp);
	}
	return rc;
}

static void sigusr1_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	daemon_stats_write(w->data);
}

void daemon_stats_init(struct daemon *d)
{
	ev_signal_init(&d->sigusr1_w, sigusr1_cb, SIGUSR1);
	d->sigusr1_w.data = d;
	ev_signal_start(d->loop, &d->sigusr1_w);
}
