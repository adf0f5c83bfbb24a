/*
 * loop_watch.h - how long the daemon's libev loop went without running
 * (SIGSTOP, a loaded machine, one long iteration), so that the log and the
 * counters tell a stall of this daemon apart from a peer's silence.
 *
 * Judging a peer only after reading what waits from it is the links'
 * business (link_liveness.c, link_alive_cb); this file gives them
 * polled_at, when the loop last entered its poll: everything that had
 * arrived by then was reported by that poll (an fd ready at entry is returned at once, even
 * by a poll that a stop signal then interrupts with EINTR), and measures:
 *   - the longest iteration: from a poll's return (an ev_check watcher) to
 *     the next poll (libev's release hook): no clock read of its own, no
 *     wake-up;
 *   - stalls: a timer that ran LOOP_STALL_MIN or more after it was due
 *     (link_liveness.c's keepalive timers report it), counted once per iteration,
 *     its lateness the stall's length.  A daemon stopped in its poll
 *     shows here, not in the iteration;
 *   - the longest gap between two systemd watchdog pings (service.c's
 *     timer reports each): the loop's longest hold as systemd saw it.
 * All calls on the loop thread.
 */
#ifndef SLD_LOOP_WATCH_H
#define SLD_LOOP_WATCH_H

#include <stdint.h>
#include <ev.h>

/* Seconds a timer may run late before the loop counts as stalled. */
#define LOOP_STALL_MIN 0.2

struct loop_watch {
	ev_tstamp polled_at;	/* ev_now() when the last poll began */
	ev_tstamp woke_at;	/* ev_now() at the last poll's return */
	ev_check woke_w;	/* records it */
	ev_tstamp iteration_max;	/* seconds, longest poll return -> next poll */
	uint64_t stalls;		/* times timers ran LOOP_STALL_MIN late */
	ev_tstamp stall_max;		/* seconds, the longest of them */
	ev_tstamp stall_counted;	/* woke_at of the iteration last counted */
	ev_tstamp watchdog_sent;	/* ev_now() of the last WATCHDOG=1, 0 none */
	ev_tstamp watchdog_gap_max;	/* seconds, the longest between two */
};

/*
 * loop_watch_init - start watching @loop into @w (zeroed): install the
 * release hook and the check watcher.  @loop's userdata becomes @w, so
 * nothing else may use ev_userdata on that loop.
 */
void loop_watch_init(struct loop_watch *w, struct ev_loop *loop);

/* A timer of @loop (watched into @w) due at @due (ev_now() time) runs
 * now: count a stall if it is LOOP_STALL_MIN late or more, once per loop
 * iteration, and log it.  Returns the lateness in seconds (0 when on
 * time). */
ev_tstamp loop_watch_late(struct loop_watch *w, struct ev_loop *loop, ev_tstamp due);

/* WATCHDOG=1 goes to systemd at @now (ev_now() time): keep the longest
 * gap, in seconds, since the one before. */
void loop_watch_watchdog_ping(struct loop_watch *w, ev_tstamp now);

#endif
