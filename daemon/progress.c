/*
 * progress.c - the progress engine: spin while there is work, then block.
 *
 * An ev_idle watcher runs passes while work keeps coming.  A pass drains
 * every queue round-robin with a budget (fairness), hands link backlogs to
 * the transport and writes them out (one writev() per link per pass), and
 * then wakes the clients whose CQ got entries (one eventfd write per queue
 * per pass, and only if the client sleeps).  After spin_s with no work the
 * engine announces sleep on every SQ (NEED_WAKEUP), re-checks, and stops
 * the idle watcher so the loop blocks in epoll.
 */
#include "autoconfig.h"

#include "daemon.h"
#include "link.h"
#include "log.h"
#include "queue.h"
#include "session.h"

#define PASS_BUDGET 64		/* SQEs per queue per pass */
#define PASSES_PER_IDLE 32	/* passes before libev polls fds again */

void daemon_flush_cq_wakeups(struct daemon *d)
{
	struct queue *q;

	while ((q = TAILQ_FIRST(&d->cq_dirty))) {
		TAILQ_REMOVE(&d->cq_dirty, q, dirty);
		q->in_dirty = false;
		queue_wake_client(q);
	}
}

unsigned daemon_progress(struct daemon *d)
{
	struct session *bad = NULL;
	struct queue *q;
	unsigned work = 0;

	TAILQ_FOREACH(q, &d->queues, all) {
		int rc = queue_drain(q, PASS_BUDGET);

		if (rc < 0) {
			/* Drop the client after the walk: its queues may sit
			 * anywhere in the list. */
			d->ctr.ring_errors++;
			bad = q->owner;
			log_warn("client pid %d: queue %u: corrupt ring index; dropping client",
				 bad ? (int)bad->pid : -1, q->id);
			break;
		}
		work += (unsigned)rc;
	}
	if (bad)
		session_destroy(bad);
	link_flush_all(d);
	daemon_flush_cq_wakeups(d);
	return work;
}

/* Wake every sleeping queue: while the engine spins, clients must not pay
 * for doorbells. */
static void wake_all(struct daemon *d)
{
	struct queue *q;

	TAILQ_FOREACH(q, &d->queues, all) {
		if (q->sleeping) {
			q->sleeping = false;
			sl_ring_cons_wake(&q->sq);
		}
	}
}

void daemon_kick(struct daemon *d)
{
	if (ev_is_active(&d->progress_w))
		return;
	wake_all(d);
	d->last_work = ev_time();
	ev_idle_start(d->loop, &d->progress_w);
}

/* Announce sleep everywhere; false (and everyone awake) if work arrived. */
static bool try_sleep(struct daemon *d)
{
	struct queue *q;

	TAILQ_FOREACH(q, &d->queues, all) {
		if (queue_prepare_sleep(q)) {
			wake_all(d);
			return false;
		}
	}
	return true;
}

static void progress_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct daemon *d = w->data;
	unsigned i, work = 0, n;
	ev_tstamp now;

	(void)revents;
	for (i = 0; i < PASSES_PER_IDLE; i++) {
		n = daemon_progress(d);
		work += n;
		if (n == 0)
			break;
	}
	now = ev_time();
	if (work) {
		d->last_work = now;
		return;
	}
	if (now - d->last_work < d->spin_s)
		return;
	if (try_sleep(d)) {
		ev_idle_stop(loop, w);
		d->ctr.sleeps++;
	} else {
		d->last_work = now;
	}
}

void daemon_progress_init(struct daemon *d)
{
	ev_idle_init(&d->progress_w, progress_cb);
	d->progress_w.data = d;
	daemon_kick(d);
}
