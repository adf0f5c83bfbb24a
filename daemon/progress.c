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

#include <sched.h>

#include "daemon.h"
#include "link.h"
#include "log.h"
#include "queue.h"
#include "session.h"
#include "sl_barrier.h"

#define PASS_BUDGET 64		/* SQEs per queue per pass */
/* Passes before libev polls fds again or the spin yields.  Measured on 2
 * cores: 1 costs intra-node latency (~2 µs instead of ~1), 32 and more
 * starve the clients and the peer daemon (inter-node 10-35 µs instead of
 * ~6); see the issue 2 closing note. */
#define PASSES_PER_IDLE 8

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
	link_flush_all(d, false);
	daemon_flush_cq_wakeups(d);
	return work;
}

/* Wake every sleeping queue: while the engine spins, clients must not pay
 * for doorbells. */
static void wake_all(struct daemon *d)
{
	struct queue *q;

	TAILQ_FOREACH(q, &d->queues, all)
		if (q->sleeping)
			queue_wake(q);
}

void daemon_kick(struct daemon *d)
{
	if (ev_is_active(&d->progress_w))
		return;
	wake_all(d);
	d->last_work = ev_time();
	ev_idle_start(d->loop, &d->progress_w);
}

/* Announce sleep everywhere; false (and everyone awake) if work arrived.
 * Delayed ACKs go out first: nothing else would send them. */
static bool try_sleep(struct daemon *d)
{
	struct queue *q;

	link_flush_all(d, true);
	daemon_flush_cq_wakeups(d);	/* flushing may have completed sends */

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
	/* Polling rings is cheap and a system call is not: look a few times
	 * before going back to libev (epoll) or yielding. */
	for (i = 0; i < PASSES_PER_IDLE; i++) {
		n = daemon_progress(d);
		work += n;
		if (n == 0 && work)
			break;	/* let libev look at sockets now */
		if (n == 0)
			sl_cpu_relax();
	}
	now = ev_time();
	if (work) {
		d->last_work = now;
		return;
	}
	if (now - d->last_work < d->spin_s) {
		/* Spin politely: on a machine with more busy processes than
		 * cores, plain spinning starves the clients we wait for. */
		sched_yield();
		return;
	}
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
	/* libev runs an idle watcher only when nothing of its priority or
	 * higher is pending: at the default priority, one fd that stays
	 * ready (a client hammering its doorbell) would starve progress. */
	ev_set_priority(&d->progress_w, EV_MAXPRI);
	d->progress_w.data = d;
	daemon_kick(d);
}
