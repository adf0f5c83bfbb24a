/*
 * loop_watch.c - the loop's own figures: when it last polled, its longest
 * iteration, its stalls.  See loop_watch.h.
 */
#include "autoconfig.h"

#include "daemon.h"
#include "log.h"
#include "loop_watch.h"

/* Before poll: libev has just updated ev_now() (it does before computing
 * the poll's timeout), so this costs no clock read; the return costs one
 * (vDSO clock_gettime). */
static void loop_release(struct ev_loop *loop)
{
	struct daemon *d = ev_userdata(loop);
	struct loop_watch *w = &d->loop_w;
	ev_tstamp ran = ev_now(loop) - w->woke_at;

	w->polled_at = ev_now(loop);
	if (w->woke_at && ran > w->iteration_max)
		w->iteration_max = ran;
}

static void loop_acquire(struct ev_loop *loop)
{
	struct daemon *d = ev_userdata(loop);

	d->loop_w.woke_at = ev_time();
}

void loop_watch_init(struct daemon *d)
{
	d->loop_w.polled_at = ev_now(d->loop);
	ev_set_userdata(d->loop, d);
	ev_set_loop_release_cb(d->loop, loop_release, loop_acquire);
}

ev_tstamp loop_watch_late(struct daemon *d, ev_tstamp due)
{
	struct loop_watch *w = &d->loop_w;
	ev_tstamp late = ev_now(d->loop) - due;

	if (late < LOOP_STALL_MIN)
		return late > 0 ? late : 0;
	if (w->stall_counted == w->woke_at)
		return late;	/* this iteration's stall is counted */
	w->stall_counted = w->woke_at;
	w->stalls++;
	if (late > w->stall_max)
		w->stall_max = late;
	log_warn("loop stalled: timers ran %.0f ms late (this daemon did not run: stopped, "
		 "starved of CPU, or a long iteration; the longest so far %.0f ms); peers "
		 "are judged on what has been read since", late * 1e3, w->iteration_max * 1e3);
	return late;
}
