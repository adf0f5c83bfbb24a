/*
 * link_idle.c - links on demand: a link connects when it first has
 * something to carry and closes, by agreement with its peer, after
 * [transport] idle_link_ms with nothing to do; [limits] max_links bounds
 * the links connected at once, the least recently used quiet ones closing
 * first.  Part of the links' floor (link_impl.h); docs/link-lifecycle.md
 * has the rules.
 *
 * The close is not a break: both sides keep the sequence state, so the
 * next connection's HELLOs resume the same stream (link_resume) and
 * nothing fails.  Either side may ask, with a BYE of reason IDLE, when it
 * is quiet (nothing queued, unacknowledged, being written, acknowledged
 * late or in rendezvous with that peer).  A quiet peer answers with its
 * own and closes once the answer has left; the asker closes when the
 * answer arrives.  A busy peer does not answer, and the asker asks again
 * a period later.  Frames queued meanwhile are safe either way: a
 * connection that closes under them is a reconnect like any other.
 */
#include "autoconfig.h"

#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "link_impl.h"
#include "log.h"

/* Seconds before a link over [limits] max_links is asked to close again
 * (its peer was busy), or another is asked instead. */
#define LINK_CAP_RETRY 1.0

bool link_on_demand(const struct daemon *d)
{
	/* The accepter asks for a dial with a nudge, a short connection:
	 * where those are dear (verbs: a connection is a QP), links stay. */
	return d->cfg.idle_link_ms && d->xp->ops->short_connections;
}

bool link_waits(const struct link *l)
{
	uint32_t sending, receiving, past;

	if (l->n_backlog || l->n_unacked || l->n_writes || l->n_waiters)
		return true;
	l->d->link_handlers->counts(l, &sending, &receiving, &past);
	return sending || receiving;
}

bool link_is_quiet(const struct link *l)
{
	return l->rx_seq == l->ack_sent && !link_waits(l);
}

/* How many links hold or seek a connection now. */
static size_t links_connected(const struct daemon *d, struct link **lru)
{
	size_t i, n = 0;

	*lru = NULL;
	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		if (l->state == LINK_IDLE)
			continue;
		if (l->state != LINK_DOWN)
			n++;
		if (l->state == LINK_UP && !l->idle_closing &&
		    (!l->idle_asked || ev_now(d->loop) - l->idle_asked_at >= LINK_CAP_RETRY) &&
		    link_is_quiet(l) && (!*lru || l->used_at < (*lru)->used_at))
			*lru = l;
	}
	return n;
}

/* Ask the peer to close @l: our BYE IDLE. */
static int ask_idle(struct link *l, uint64_t wr_id)
{
	struct sl_wire_frame wf = { .type = SL_WIRE_BYE };
	int rc;

	if (!l->conn || l->d->xp->ops->sq_space(l->conn) == 0)
		return -ENOMEM;
	wf.u.bye.incarnation = l->d->incarnation;
	wf.u.bye.reason = SL_WIRE_BYE_IDLE;
	wf.u.bye.node_id = l->d->cfg.node_id;
	rc = link_post_frame(l, &wf, NULL, wr_id);
	if (rc == 0) {
		l->idle_asked = true;
		l->idle_asked_at = ev_now(l->d->loop);
		l->d->xp->ops->flush(l->conn);
	}
	return rc;
}

/* Over max_links: ask the least recently used quiet links to close. */
static void enforce_max_links(struct daemon *d)
{
	struct link *lru;
	size_t n = links_connected(d, &lru);

	d->link_cap_checked = ev_now(d->loop);
	if (n <= d->cfg.max_links)
		return;
	if (!lru) {
		if (d->ctr.links_over_max++ == 0)
			log_warn("%zu links connected, over [limits] max_links %u, and none of "
				 "them quiet: they stay (counted in links_over_max)", n,
				 d->cfg.max_links);
		return;
	}
	log_debug("link %s: closing, the least recently used of %zu (max_links %u)",
		  lru->peer->name, n, d->cfg.max_links);
	ask_idle(lru, 0);
}

void link_demand(struct link *l)
{
	struct daemon *d = l->d;

	l->used_at = ev_now(d->loop);
	if (l->state != LINK_IDLE || d->stopping)
		return;
	/* Waiting on the peer from now: it has peer_timeout_ms to answer. */
	l->state = LINK_DOWN;
	l->down_since = ev_now(d->loop);
	l->ctr.idle_wakes++;
	link_timeout_arm(l);
	if (l->dialer) {
		link_dial(l);
	} else {
		if (!l->nudge)	/* one may still be leaving from before */
			link_nudge(l);
		link_schedule_redial(l);	/* and again, until it dials */
	}
	enforce_max_links(d);
}

void link_wait_add(struct link *l, int delta)
{
	if (delta < 0 && l->n_waiters < (uint32_t)-delta) {
		log_err("link %s: %d receives naming the peer ended, %u counted", l->peer->name,
			-delta, l->n_waiters);
		l->n_waiters = 0;
		return;
	}
	l->n_waiters += (uint32_t)delta;
	if (delta > 0) {
		link_demand(l);
		if (l->alive_quiet)
			link_alive_wake(l);
	}
}

ev_tstamp link_idle_due(const struct link *l)
{
	ev_tstamp period = l->d->cfg.idle_link_ms / 1e3, due = l->used_at + period;

	if (l->idle_asked && l->idle_asked_at + period > due)
		due = l->idle_asked_at + period;
	return due;
}

void link_idle_check(struct link *l, ev_tstamp now)
{
	ev_tstamp period = l->d->cfg.idle_link_ms / 1e3;

	/* Over the cap still (a peer was busy when asked): look again, once
	 * a LINK_CAP_RETRY for the daemon. */
	if (link_on_demand(l->d) && l->d->n_links > l->d->cfg.max_links &&
	    now - l->d->link_cap_checked >= LINK_CAP_RETRY)
		enforce_max_links(l->d);
	/* An ask the peer left unanswered (it was busy) is made again a
	 * period later. */
	if (!link_on_demand(l->d) || l->state != LINK_UP || l->idle_closing ||
	    (l->idle_asked && now - l->idle_asked_at < period) ||
	    now - l->used_at < period || !link_is_quiet(l))
		return;
	ask_idle(l, 0);
}

int link_idle_heard(struct link *l)
{
	if (l->idle_asked) {
		/* The answer to ours: the peer closes once it has left.  If
		 * work came since, it goes on the next connection, at once
		 * (link_idle_went_down). */
		l->idle_closing = true;
		if (link_is_quiet(l))
			l->d->xp->ops->close(l->conn, 0);	/* -> link_went_down */
		return 0;
	}
	if (!link_is_quiet(l)) {
		/* Busy: no answer; the asker asks again a period later. */
		l->ctr.idle_refused++;
		return 0;
	}
	l->idle_closing = true;
	/* Answer, and close once the answer has left (link_idle_sent). */
	if (ask_idle(l, LINK_WR_IDLE_BYE) < 0) {
		l->idle_closing = false;
		l->idle_asked = false;
	}
	return 0;
}

void link_idle_sent(struct link *l)
{
	if (l->idle_closing && l->conn)
		l->d->xp->ops->close(l->conn, 0);	/* -> link_went_down */
}

bool link_idle_went_down(struct link *l)
{
	bool agreed = l->idle_closing;

	l->idle_asked = l->idle_closing = false;
	/* Agreed, or lost while quiet (the peer went, with nothing of ours
	 * or its own under way): nothing waits, so nothing to redial for or
	 * to time out; the next frame dials. */
	if (!link_on_demand(l->d) || l->timed_out || (!agreed && !link_is_quiet(l)))
		return false;
	if (agreed)
		l->ctr.idle_closes++;
	else
		peer_info(l, "link %s: connection lost while quiet: idle until needed",
			  l->peer->name);
	l->state = LINK_IDLE;
	ev_timer_stop(l->d->loop, &l->timeout_w);
	ev_timer_stop(l->d->loop, &l->redial_w);
	if (!link_is_quiet(l))
		link_demand(l);	/* queued while it closed */
	return true;
}
