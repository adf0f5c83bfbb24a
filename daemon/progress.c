/*
 * progress.c - the progress engine: spin while there is work, then block.
 *
 * An ev_idle watcher runs passes while work keeps coming.  A pass drains
 * every awake queue round-robin with a budget (fairness), hands the
 * backlogs of the links with work to the transport and writes them out
 * (one writev() per link per pass), and then wakes the clients whose CQ
 * got entries (one eventfd write per queue per pass, and only if the
 * client sleeps).  A queue that gave nothing for spin_s goes to sleep on
 * its own (NEED_WAKEUP) and leaves the pass; after spin_s with no work at
 * all the engine puts the rest to sleep, re-checks, and stops the idle
 * watcher so the loop blocks in epoll.  Queues and links enter a pass
 * through their ready lists (queue_activate, link_kick): its cost follows
 * what is active, not what exists.
 */
#include "autoconfig.h"

#include <sched.h>

#include "copy.h"
#include "daemon.h"
#include "engine.h"
#include "link.h"
#include "log.h"
#include "progress.h"
#include "queue.h"
#include "session.h"
#include "sl_barrier.h"
#include "wake.h"

/* Passes before libev polls fds again or the spin yields.  Measured on 2
 * cores: 1 costs intra-node latency (~2 µs instead of ~1), 32 and more
 * starve the clients and the peer daemon (inter-node 10-35 µs instead of
 * ~6); see docs/progress-engine.md. */
#define PASSES_PER_IDLE 8
/* Loop iterations without an idle pass before the check watcher runs one. */
#define STARVED_ITERATIONS 1

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
	struct queue *q, *next;
	ev_tstamp now = ev_now(d->loop);
	unsigned work = 0;

	if (d->xp && d->xp->ops->poll)
		work += d->xp->ops->poll(d->xp);

	for (q = TAILQ_FIRST(&d->active); q; q = next) {
		struct desc taken[PASS_BUDGET];
		int i, rc;

		next = TAILQ_NEXT(q, active_link);
		rc = queue_drain(q, taken, PASS_BUDGET);

		if (rc < 0) {
			/* Drop the client after the walk: its queues may sit
			 * anywhere in the list. */
			d->ctr.ring_errors++;
			bad = q->owner;
			log_warn("client pid %d: queue %u: corrupt ring index; dropping client",
				 bad ? (int)bad->pid : -1, q->id);
			break;
		}
		for (i = 0; i < rc; i++)
			engine_submit(&taken[i]);
		work += (unsigned)rc;
		if (rc)
			q->worked_at = now;
		else if (now - q->worked_at >= d->spin_s)
			queue_prepare_sleep(q);	/* leaves the list unless work came */
	}
	if (bad)
		session_destroy(bad);
	work += link_flush_all(d, false);
	daemon_flush_cq_wakeups(d);
	return work;
}

/*
 * Announce sleep everywhere; false (and everyone awake) if work arrived.
 * Delayed ACKs go out first: nothing else would send them.  Data posted
 * here is work too, and so is a kick from the flush itself: the tcp
 * transport completes what it wrote inside the flush, which frees the
 * link's budget (up_send_done kicks), and no later event would say so.
 * daemon_wake() cannot restart a watcher that is still active, so it
 * leaves d->kicked.  Before that, the engine slept with data and budget
 * both there, and a 4 KiB message waited 100-360 ms for the next frame
 * from the peer to wake it (scripts/hol).  link_any_can_post() checks the
 * rule itself: finding work there means a kick was missed somewhere.
 */
static bool try_sleep(struct daemon *d)
{
	struct queue *q, *next;
	unsigned posted;

	d->kicked = false;
	posted = link_flush_all(d, true);
	daemon_flush_cq_wakeups(d);	/* flushing may have completed sends */
	if (posted || d->kicked)
		return false;

	/* The queues asleep already stay so: their doorbells are armed. */
	for (q = TAILQ_FIRST(&d->active); q; q = next) {
		next = TAILQ_NEXT(q, active_link);
		if (queue_prepare_sleep(q))
			return false;
	}
	if (link_any_can_post(d)) {
		if (d->ctr.lost_wakeups++ == 0)
			log_warn("progress: about to sleep with a link that can post; "
				 "staying awake (a missed link_kick, counted in lost_wakeups)");
		return false;
	}
	return true;
}

/* After passes that did @work at @now: the spin window learns how long
 * the engine waited for work (sl_spin.h), each stretch of empty passes
 * once, the sleeps in epoll included. */
static void spin_note(struct daemon *d, unsigned work, ev_tstamp now)
{
	if (!work) {
		d->idle_passes = true;
		return;
	}
	if (d->idle_passes && !d->spin_fixed)
		d->spin_s = (double)sl_spin_learn(&d->spin,
						  (int64_t)((now - d->worked_at) * 1e9)) / 1e9;
	d->idle_passes = false;
	d->worked_at = now;
}

/* Up to PASSES_PER_IDLE passes; returns the units of work done. */
static unsigned run_passes(struct daemon *d)
{
	unsigned i, work = 0, n;

	/* One slice of each local copy per call, so per loop iteration at
	 * most twice (idle and starvation guard): bounded (copy.h). */
	work += copy_run(d, engine_fail_queue);
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
	return work;
}

static void progress_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct daemon *d = w->data;
	unsigned work;
	ev_tstamp now;

	(void)revents;
	d->idle_ran = true;
	work = run_passes(d);
	now = ev_time();
	spin_note(d, work, now);
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

/*
 * Starvation guard.  libev runs an idle watcher only in iterations where no
 * fd is ready, so a client ringing its doorbell in a loop kept progress
 * from running at all (20,000 local round trips of another client took
 * 3.7 s instead of 0.03 s).  Check watchers run after every poll; when the
 * engine should be spinning but the idle watcher was kept out for
 * STARVED_ITERATIONS iterations, the passes run from here.  Running them
 * here always would cost latency: libev invokes the check watcher ahead of
 * the socket callbacks (8 B inter-node one-way went from 6.4 to 10-20 us
 * that way, and to 10-13 us with the idle watcher at EV_MAXPRI).
 */
static void starvation_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	struct daemon *d = w->data;
	unsigned work;
	ev_tstamp now;

	(void)loop;
	(void)revents;
	if (!ev_is_active(&d->progress_w) || d->idle_ran) {
		d->idle_ran = false;
		d->starved = 0;
		return;
	}
	if (++d->starved < STARVED_ITERATIONS) {
		if (d->starved > d->ctr.passless_iterations_max)
			d->ctr.passless_iterations_max = d->starved;
		return;
	}
	d->starved = 0;
	d->ctr.guard_passes++;
	work = run_passes(d);
	now = ev_time();
	spin_note(d, work, now);
	if (work)
		d->last_work = now;
	else
		sched_yield();	/* as in progress_cb: the clients need the core */
}

void daemon_progress_init(struct daemon *d)
{
	ev_idle_init(&d->progress_w, progress_cb);
	d->progress_w.data = d;
	ev_check_init(&d->starvation_w, starvation_cb);
	d->starvation_w.data = d;
	ev_check_start(d->loop, &d->starvation_w);
	daemon_wake(d);
}
