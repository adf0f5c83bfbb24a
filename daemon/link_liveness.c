/*
 * link_liveness.c - when a link's peer counts as silent: the
 * retransmission timer (no ack progress for ack_timeout_ms while frames
 * wait for one) and its back-off, and the keepalive (while something
 * waits on the peer, a frame out every LINK_KEEPALIVE, asking for one
 * back; nothing heard for the silence limit breaks the connection).
 * Part of the links' floor (link_impl.h); docs/link-liveness.md has the
 * rules and their measurements.
 */
#include "autoconfig.h"

#include "daemon.h"
#include "link_impl.h"
#include "log.h"
#include "loop_watch.h"

/* The ack timer's period at back-off @b, seconds. */
static ev_tstamp ack_period(const struct link *l, uint32_t b)
{
	return b * (ev_tstamp)l->d->cfg.ack_timeout_ms / 1e3;
}

/* Nothing heard for this long breaks the connection, at back-off @b. */
static ev_tstamp silence_limit(const struct link *l, uint32_t b)
{
	ev_tstamp t = ack_period(l, b);

	return t < LINK_SILENCE_MIN ? LINK_SILENCE_MIN : t;
}

void link_backoff_window(struct link *l, ev_tstamp now)
{
	l->backoff_since = now;
	l->backoff_ack_wait = l->backoff_rx_gap = 0;
}

static void backoff_set(struct link *l, uint32_t b)
{
	l->ack_backoff = b;
	l->ack_w.repeat = ack_period(l, b);	/* for ev_timer_again */
	link_backoff_window(l, ev_now(l->d->loop));
}

/*
 * A timeout broke the connection (no ack progress, or nothing heard): the
 * next wait is twice as long, up to peer_timeout_ms, whatever the cause,
 * so that a peer that is slow rather than gone (acks behind bulk data, a
 * loaded machine) is not cut again and again, as TCP backs off its RTO.
 * It grows on every such timeout: a reconnect proves nothing, and the
 * acks of the frames sent again after it prove nothing either.
 */
static void backoff_grow(struct link *l)
{
	uint32_t b = l->ack_backoff;

	if ((double)b * 2 * l->d->cfg.ack_timeout_ms <= l->d->cfg.peer_timeout_ms)
		b *= 2;
	backoff_set(l, b);
}

/*
 * The back-off comes down one step (halves) only once the link has
 * proved that the smaller one suffices: up with no timeout for a whole
 * period at the current back-off, and LINK_PROVE_MIN at least (so that
 * the reconnect and the acks of what it sent again, quick by nature, are
 * not proof enough), and in that window every wait for
 * ack progress at most half the halved period, and (when halving lowers
 * the silence limit) every gap between frames heard at most 3/4 of the
 * halved limit (keepalives keep those gaps under 2 x LINK_KEEPALIVE, half
 * of LINK_SILENCE_MIN; the rest is room for a loaded machine).  A window
 * that does not prove it starts another at the same back-off: a link
 * whose acks take a second does not go back to timing out every 200 ms.
 * Run from link_alive_cb, every LINK_KEEPALIVE while up.
 */
static void backoff_review(struct link *l, ev_tstamp now)
{
	uint32_t b = l->ack_backoff;
	ev_tstamp lower;

	if (b == 1 || now - l->backoff_since < ack_period(l, b) ||
	    now - l->backoff_since < LINK_PROVE_MIN)
		return;
	lower = silence_limit(l, b / 2);
	if (l->backoff_ack_wait > ack_period(l, b / 2) / 2 ||
	    (lower < silence_limit(l, b) && l->backoff_rx_gap > lower * 0.75)) {
		link_backoff_window(l, now);
		return;
	}
	log_info("link %s: ack timeout back-off down to %u (%.0f ms): acks within %.0f ms "
		 "and frames heard every %.0f ms or less for %.1f s", l->peer->name, b / 2,
		 ack_period(l, b / 2) * 1e3, l->backoff_ack_wait * 1e3, l->backoff_rx_gap * 1e3,
		 now - l->backoff_since);
	backoff_set(l, b / 2);
}

/* Armed while frames wait for an ack: started by the first, pushed back
 * by every ack that covers something, stopped when nothing waits.  Its
 * period is ack_timeout_ms times the back-off above. */
void link_ack_timer_start(struct link *l)
{
	ev_tstamp t = ack_period(l, l->ack_backoff);

	if (ev_is_active(&l->ack_w))
		return;
	l->heard_at = ev_now(l->d->loop);	/* silence counts from here */
	ev_timer_set(&l->ack_w, t, t);
	ev_timer_start(l->d->loop, &l->ack_w);
}

void link_ack_timer_progress(struct link *l)
{
	ev_tstamp now = ev_now(l->d->loop);

	if (ev_is_active(&l->ack_w) && now - l->heard_at > l->backoff_ack_wait)
		l->backoff_ack_wait = now - l->heard_at;
	l->heard_at = now;
	if (TAILQ_EMPTY(&l->unacked))
		ev_timer_stop(l->d->loop, &l->ack_w);
	else if (ev_is_active(&l->ack_w))
		ev_timer_again(l->d->loop, &l->ack_w);
	else
		link_ack_timer_start(l);
}

static bool judged_silent(struct link *l, ev_timer *w, ev_tstamp heard, ev_tstamp limit);

/* No ack progress for ack_timeout_ms with frames waiting: the peer or the
 * path is gone silently (no RST).  Break the connection; the redial and
 * the HELLO then say what arrived, and the peer timeout runs meanwhile. */
void link_ack_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	if (l->state != LINK_UP || TAILQ_EMPTY(&l->unacked)) {
		ev_timer_stop(l->d->loop, w);
		return;
	}
	if (!judged_silent(l, w, l->heard_at, ack_period(l, l->ack_backoff)))
		return;
	ev_timer_stop(l->d->loop, w);
	l->ctr.ack_timeouts++;
	log_warn("link %s: no ack for %.0f ms with %u frames waiting: reconnecting", l->peer->name,
		 (ev_now(loop) - l->heard_at) * 1e3, l->n_unacked);
	backoff_grow(l);
	l->d->xp->ops->close(l->conn, -ETIMEDOUT);
}

/* When the peer was last heard: a whole frame, or any byte where the
 * transport can tell (part of a large frame or of an RDMA write). */
static ev_tstamp link_heard_at(const struct link *l)
{
	const struct xport_ops *ops = l->d->xp->ops;
	ev_tstamp bytes = ops->last_rx ? ops->last_rx(l->conn) : 0;

	return bytes > l->rx_at ? bytes : l->rx_at;
}

/*
 * Has the peer been silent for @limit since @heard, on what this daemon
 * has read?  Only what arrived before the loop's last poll began is sure
 * to have been read by now: that poll reported it, and its callbacks ran
 * before this timer's, which has the lowest priority (libev would
 * otherwise run timers first: it invokes one priority's pending watchers
 * last-queued first, and queues timers after the fds).  After a stall the
 * last poll began before it, and may have returned nothing (a stop signal
 * interrupts epoll_wait with EINTR).  So when the limit is reached only
 * counting the time since that poll began, @w runs again after one more
 * poll (non-blocking: it is due at once) and judges then.
 */
static bool judged_silent(struct link *l, ev_timer *w, ev_tstamp heard, ev_tstamp limit)
{
	struct ev_loop *loop = l->d->loop;

	/* A timer may run a rounding error before ev_now() says it is due. */
	limit -= 1e-3;
	if (ev_now(loop) - heard < limit)
		return false;
	if (l->d->loop_w.polled_at - heard >= limit)
		return true;
	ev_timer_stop(loop, w);
	ev_timer_set(w, 0.0, w->repeat);
	ev_timer_start(loop, w);
	return false;
}

/* The keepalive timer due in @delay seconds, then every @repeat. */
static void alive_arm(struct link *l, ev_tstamp delay, ev_tstamp repeat)
{
	struct ev_loop *loop = l->d->loop;

	ev_timer_stop(loop, &l->alive_w);
	ev_timer_set(&l->alive_w, delay, repeat);
	ev_timer_start(loop, &l->alive_w);
	l->alive_due = ev_now(loop) + delay;
}

void link_alive_start(struct link *l)
{
	l->alive_quiet = false;
	alive_arm(l, LINK_KEEPALIVE, LINK_KEEPALIVE);
}

void link_alive_wake(struct link *l)
{
	/* Not on a link being freed: its timers stopped for good. */
	if (l->state == LINK_UP && !l->removing)
		link_alive_start(l);
	else
		l->alive_quiet = false;
}

/*
 * Nothing waits on @l: its timer is left only what a quiet link still
 * does, the idle close's look on a link on demand (at its due time, but
 * at least every LINK_QUIET_TICK, for the max_links look of
 * link_idle_check); a link that is not on demand has nothing left, and
 * its timer stops.  So a quiet daemon of static links does not wake at
 * all.  Whatever may start a wait kicks the link, which brings the timer
 * back (link_alive_wake).
 */
static void alive_quiet(struct link *l, ev_tstamp now)
{
	ev_tstamp delay;

	l->alive_quiet = true;
	if (!link_on_demand(l->d)) {
		ev_timer_stop(l->d->loop, &l->alive_w);
		return;
	}
	delay = link_idle_due(l) - now;
	if (delay < LINK_KEEPALIVE)
		delay = LINK_KEEPALIVE;
	if (delay > LINK_QUIET_TICK)
		delay = LINK_QUIET_TICK;
	alive_arm(l, delay, delay);
}

/*
 * Every LINK_KEEPALIVE while up.  While something of ours waits on the
 * peer (link_waits): ask for a keepalive if we have said nothing that
 * long (an ACK with SL_WIRE_ACK_PING, which the peer answers at once, so
 * each side hears the other at least every 2 x LINK_KEEPALIVE, whatever
 * the phase of the timers), and give up on a connection that has been
 * silent since the wait began for ack_timeout_ms (times the back-off),
 * but not less than LINK_SILENCE_MIN.  While nothing waits: nothing to
 * say, nothing to judge (the peer asks when it waits), and the idle
 * close's look.  So a quiet link costs no frame, and a partition of one
 * is found when something next waits on it: the dialer redials then.
 *
 * Read, then judge (judged_silent).  A stall of ours is recognised here
 * by this timer running late, and counted apart (loop_watch).
 */
void link_alive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;
	ev_tstamp now = ev_now(loop), limit = silence_limit(l, l->ack_backoff), heard;

	(void)revents;
	if (l->state != LINK_UP)
		return;
	loop_watch_late(&l->d->loop_w, loop, l->alive_due);
	l->alive_due = now + w->repeat;
	if (!link_waits(l)) {
		l->waiting_since = 0;
		backoff_review(l, now);
		link_idle_check(l, now);
		if (l->state == LINK_UP)
			alive_quiet(l, now);
		return;
	}
	if (l->alive_quiet)
		link_alive_wake(l);	/* a wait that no kick announced */
	if (!l->waiting_since)
		l->waiting_since = now;	/* the silence counts from here */
	heard = link_heard_at(l);
	if (heard < l->waiting_since)
		heard = l->waiting_since;
	if (judged_silent(l, w, heard, limit)) {
		l->ctr.silences++;
		log_warn("link %s: nothing heard for %.0f ms (a frame %.0f ms ago): reconnecting",
			 l->peer->name, (now - heard) * 1e3, (now - l->rx_at) * 1e3);
		backoff_grow(l);
		l->d->xp->ops->close(l->conn, -ETIMEDOUT);
		return;
	}
	backoff_review(l, now);
	link_idle_check(l, now);	/* the cap's look; this link is not quiet */
	if (now - l->tx_at >= LINK_KEEPALIVE &&
	    l->d->xp->ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK, .flags = SL_WIRE_ACK_PING };

		if (link_post_frame(l, &wf, NULL, 0) == 0)
			l->d->xp->ops->flush(l->conn);
	}
}

