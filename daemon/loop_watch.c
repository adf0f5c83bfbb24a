/*
 * loop_watch.c - the loop's own figures: when it last polled, its longest
 * iteration, its stalls.  See loop_watch.h.
 */
#include "autoconfig.h"

#include "log.h"
#include "loop_watch.h"

/* Before poll: libev has just updated ev_now() (it does before computing
 * the poll's timeout), so this costs no clock read. */
static void loop_release(struct ev_loop *loop)
{
	struct loop_watch *w = ev_userdata(loop);
	ev_tstamp ran = ev_now(loop) - w->woke_at;

	w->polled_at = ev_now(loop);
	if (w->woke_at && ran > w->iteration_max)
		w->iteration_max = ran;
}

/* After poll: check watchers are queued last, so this runs first, and
 * ev_now() is when the poll returned (libev read the clock for it). */
static void loop_woke_cb(struct ev_loop *loop, ev_check *check, int revents)
{
	struct loop_watch *w = check->data;

	(void)revents;
	w->woke_at = ev_now(loop);
}

void loop_watch_init(struct loop_watch *w, struct ev_loop *loop)
{
	w->polled_at = ev_now(loop);
	ev_set_userdata(loop, w);
	ev_set_loop_release_cb(loop, loop_release, NULL);
	ev_check_init(&w->woke_w, loop_woke_cb);
	w->woke_w.data = w;
	ev_check_start(loop, &w->woke_w);
}

ev_tstamp loop_watch_late(struct loop_watch *w, struct ev_loop *loop, ev_tstamp due)
{
	ev_tstamp late = ev_now(loop) - due;

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

void loop_watch_watchdog_ping(struct loop_watch *w, ev_tstamp now)
{
	if (w->watchdog_sent && now - w->watchdog_sent > w->watchdog_gap_max)
		w->watchdog_gap_max = now - w->watchdog_sent;
	w->watchdog_sent = now;
}
