/*
 * link_connect.c - a link's connection over its life: dialing, the dial
 * timeout and the redial back-off, going down, the peer timeout (or the
 * peer's BYE), and the links' making and ending (link_add, link_remove,
 * link_readdress, link_teardown_all).  What a HELLO says (a restart, a
 * resume, the link up) and the transport's upcalls are link.c's.  Part
 * of the links' floor (link_impl.h).
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "link.h"
#include "link_auth.h"
#include "link_diag.h"
#include "link_impl.h"
#include "link_table.h"
#include "log.h"

/* Lines the peer causes at will (its connections coming and going, its
 * protocol errors): a buggy or hostile peer, even one with the key,
 * reconnects and breaks its stream as often as it likes
 * (tests/test_netfuzz.c).  Per link, a token bucket (log.h): this burst,
 * then this many lines a second; the counters (sluicectl links, stats)
 * keep the exact numbers. */
#define LINK_PEER_LOG_BURST 10
#define LINK_PEER_LOG_PER_SEC 0.2

/* ---- connection management ---- */

void link_schedule_redial(struct link *l)
{
	if (l->d->stopping)
		return;
	/* An accepter on demand nudges again while something waits on the
	 * peer; otherwise the dialer dials it. */
	if (!l->dialer && !(link_on_demand(l->d) && (l->timed_out || !link_is_quiet(l))))
		return;
	ev_timer_stop(l->d->loop, &l->redial_w);
	ev_timer_set(&l->redial_w, l->redial_delay, 0.0);
	ev_timer_start(l->d->loop, &l->redial_w);
	l->redial_delay *= 2;
	if (l->redial_delay > l->d->cfg.redial_max_ms / 1e3)
		l->redial_delay = l->d->cfg.redial_max_ms / 1e3;
}


/*
 * The connection broke (or never came up).  Nothing fails here: every
 * sent frame stays in the unacked list until the next HELLO says which
 * the peer has, control frames stay queued, and rendezvous wait.  What
 * the broken connection took with it: the RDMA writes in flight, so each
 * rendezvous past its RTR writes again only on an RTR sent again.
 */
static void link_timed_out(struct link *l, bool bye);

void link_went_down(struct link *l, int err)
{
	struct link_writer *w;

	if (!l->idle_closing)
		snprintf(l->last_error, sizeof(l->last_error), "%s: %s",
			 l->state == LINK_UP ? "connection lost" : "connecting",
			 err ? strerror(err < 0 ? -err : err) : "closed");
	/* Stopping, the peer said BYE, both agreed to close, or we closed
	 * it on purpose: said elsewhere, not a fault. */
	if (l->state == LINK_UP && !l->bye_rx && !l->d->stopping && !l->idle_closing &&
	    !l->quiet_close)
		peer_warn(l, "link %s: down: %s (%u frames unacknowledged, %u queued)",
			  l->peer->name, strerror(err < 0 ? -err : err), l->n_unacked,
			  l->n_backlog);
	/* The peer timeout counts from the last time the link was up (a
	 * connection that never got past its HELLO does not restart it). */
	if (l->state == LINK_UP) {
		l->down_since = ev_now(l->d->loop);
		l->updown_at = l->down_since;
		/* Broken for want of acks, or of any frame: silent since the
		 * last one, or since the wait that judged it began (a quiet
		 * link hears nothing and misses nothing: its silence before
		 * the wait counts for no peer timeout). */
		if (err == -ETIMEDOUT) {
			ev_tstamp heard = l->heard_at > l->rx_at ? l->heard_at : l->rx_at;

			if (heard < l->waiting_since)
				heard = l->waiting_since;
			if (heard < l->down_since)
				l->down_since = heard;
		}
	}
	l->conn = NULL;
	l->state = LINK_DOWN;
	link_up_forget(l);
	ev_timer_stop(l->d->loop, &l->retry_w);
	ev_timer_stop(l->d->loop, &l->ack_w);
	ev_timer_stop(l->d->loop, &l->alive_w);
	/* The transport has completed every WR (flush errors) before
	 * closed(), so nothing is posted any more. */
	while ((w = TAILQ_FIRST(&l->writes)))
		link_writer_stop(l, w);
	l_up(l)->went_down(l);
	if (l->d->stopping || l->removing)
		return;
	if (link_idle_went_down(l))
		return;
	if (l->bye_rx) {
		/* It stopped on purpose: no point waiting for it. */
		l->bye_rx = false;
		ev_timer_stop(l->d->loop, &l->timeout_w);
		if (!l->timed_out)
			link_timed_out(l, true);
	} else {
		link_timeout_arm(l);
	}
	link_schedule_redial(l);
}

/* A dial failed: the link is DOWN, its peer timeout armed and a redial
 * scheduled.  The first failure of an episode is worth a warning;
 * retries are not. */
void link_dial_failed(struct link *l, int err)
{
	snprintf(l->last_error, sizeof(l->last_error), "connect: %s",
		 err == -EHOSTUNREACH ? "host unknown or unreachable" : strerror(-err));
	if (!l->dial_warned)
		log_warn("link %s: cannot connect to %s:%u: %s (retrying up to every %.0f s)",
			 l->peer->name, l->peer->host, l->peer->port,
			 err == -EHOSTUNREACH ? "host unknown or unreachable" : strerror(-err),
			 l->d->cfg.redial_max_ms / 1e3);
	else
		log_debug("link %s: connect: %s", l->peer->name, strerror(-err));
	l->dial_warned = true;
	l->conn = NULL;
	l->state = LINK_DOWN;
	link_timeout_arm(l);
	link_schedule_redial(l);
}

void link_dial(struct link *l)
{
	struct daemon *d = l->d;
	int rc;

	l->state = LINK_CONNECTING;
	rc = d->xp->ops->connect(d->xp, l->peer->host, l->peer->port, l, &l->conn);
	if (rc < 0) {
		link_dial_failed(l, rc);
		return;
	}
	ev_timer_stop(d->loop, &l->dial_w);
	ev_timer_set(&l->dial_w, LINK_DIAL_TIMEOUT, 0.0);
	ev_timer_start(d->loop, &l->dial_w);
}

static void dial_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	if (!l->dialer) {
		if (l->nudge)
			l->d->xp->ops->close(l->nudge, -ETIMEDOUT);	/* -> closed() */
		return;
	}
	if (l->state == LINK_UP || !l->conn)
		return;
	log_debug("link %s: no link within %.0f s of dialing: dialing again", l->peer->name,
		  LINK_DIAL_TIMEOUT);
	l->d->xp->ops->close(l->conn, -ETIMEDOUT);	/* then closed() or connected(err) */
}

static void redial_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	if (l->state != LINK_DOWN)
		return;
	if (l->dialer) {
		link_dial(l);
	} else {
		if (!l->nudge)
			link_nudge(l);
		link_schedule_redial(l);
	}
}

unsigned link_count_up(const struct daemon *d)
{
	unsigned n = 0;
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (d->links[i]->state == LINK_UP)
			n++;
	return n;
}

bool link_node_timed_out(struct daemon *d, uint32_t node)
{
	struct link *l = link_find(d, node);

	return l && l->timed_out;
}

/*
 * Down for peer_timeout_ms, or the peer said BYE (@bye): every operation
 * waiting on the peer fails with SL_ERR_PEER_DOWN, each on its own, and
 * so do new sends and receives naming it until it is back.  After a
 * timeout control frames stay queued: when it comes back it hears which
 * of its rendezvous we refused; after a BYE its incarnation is over and
 * they go.
 */
static void link_timed_out(struct link *l, bool bye)
{
	uint32_t sending, receiving, past;

	l->timed_out = true;
	l_up(l)->counts(l, &sending, &receiving, &past);
	if (bye)
		peer_info(l, "link %s: the peer stopped (BYE): failing %u queued sends, %u "
			  "unacknowledged, %u rendezvous sending, %u receiving, and new ones "
			  "until it is back", l->peer->name, l->n_backlog - l->n_ctl,
			  l->n_unacked_data, sending, receiving);
	else
		log_warn("link %s: down for %.1f s (peer_timeout_ms %u): failing %u queued "
			 "sends, %u unacknowledged, %u rendezvous sending, %u receiving, and new "
			 "ones until it is back", l->peer->name, ev_now(l->d->loop) - l->down_since,
			 l->d->cfg.peer_timeout_ms, l->n_backlog - l->n_ctl, l->n_unacked_data,
			 sending, receiving);
	if (!bye)
		l->ctr.peer_timeouts++;
	if (!bye && !l->dialer && !l->ctr.connects)
		link_diag_never_dialed(l);
	/* After a BYE the incarnation is over: nothing to tell it later. */
	fail_everything(l, SL_ERR_PEER_DOWN, !bye, bye);
	l_up(l)->peer_timed_out(l);
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	if (l->state != LINK_UP && !l->timed_out)
		link_timed_out(l, false);
}

/* Counted from the moment the link was last up (or the daemon started). */
void link_timeout_arm(struct link *l)
{
	ev_tstamp left;

	if (l->timed_out || ev_is_active(&l->timeout_w))
		return;
	left = l->down_since + l->d->cfg.peer_timeout_ms / 1e3 - ev_now(l->d->loop);
	ev_timer_set(&l->timeout_w, left > 0 ? left : 0, 0.0);
	ev_timer_start(l->d->loop, &l->timeout_w);
}

/* ---- setup ---- */

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	link_kick(l);
}

int link_add(struct daemon *d, const struct peer_conf *pc)
{
	const struct link_handlers *up = d->link_handlers;
	struct link *l;
	int rc;

	if (link_find(d, pc->node_id))
		return -EEXIST;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->d = d;
	l->peer_conf = *pc;
	l->peer = &l->peer_conf;
	l->node_id = pc->node_id;
	l->peer_log = (struct log_limit)LOG_LIMIT_INIT("lines a link's peer caused",
						       LINK_PEER_LOG_BURST, LINK_PEER_LOG_PER_SEC);
	l->dialer = d->cfg.node_id < l->node_id;
	l->state = LINK_DOWN;
	l->redial_delay = d->cfg.redial_min_ms / 1e3;
	l->ack_backoff = 1;
	l->down_since = ev_now(d->loop);
	l->updown_at = l->down_since;
	TAILQ_INIT(&l->backlog);
	TAILQ_INIT(&l->unacked);
	TAILQ_INIT(&l->writes);
	rc = link_auth_link_new(l);
	if (rc < 0) {
		free(l);
		return rc;
	}
	l->upper = up->attach(l);
	if (!l->upper) {
		link_auth_link_free(l);
		free(l);
		return -ENOMEM;
	}
	rc = link_table_add(d, l);
	if (rc < 0) {
		up->detach(l, l->upper);
		link_auth_link_free(l);
		free(l);
		return rc;
	}
	ev_timer_init(&l->retry_w, retry_cb, 0.0, 0.0);
	l->retry_w.data = l;
	ev_timer_init(&l->redial_w, redial_cb, 0.0, 0.0);
	l->redial_w.data = l;
	ev_timer_init(&l->ack_w, link_ack_timeout_cb, 0.0, 0.0);
	l->ack_w.data = l;
	ev_timer_init(&l->alive_w, link_alive_cb, 0.0, 0.0);
	l->alive_w.data = l;
	ev_timer_init(&l->dial_w, dial_timeout_cb, 0.0, 0.0);
	l->dial_w.data = l;
	/* The timers that judge the peer run after the reads of their
	 * loop iteration (judged_silent). */
	ev_set_priority(&l->ack_w, EV_MINPRI);
	ev_set_priority(&l->alive_w, EV_MINPRI);
	ev_set_priority(&l->dial_w, EV_MINPRI);
	ev_timer_init(&l->timeout_w, timeout_cb, 0.0, 0.0);
	l->timeout_w.data = l;
	if (link_on_demand(d)) {
		/* Dialled by its first frame (link_idle.c). */
		l->state = LINK_IDLE;
		log_debug("link %s (%08x) at %s:%u: idle until needed", l->peer->name,
			  l->node_id, l->peer->host, l->peer->port);
		return 0;
	}
	link_timeout_arm(l);	/* a peer never seen times out too */
	if (l->dialer)
		link_dial(l);
	else if (d->xp->ops->short_connections)
		link_nudge(l);
	log_info("link %s (%08x) at %s:%u: %s", l->peer->name, l->node_id, l->peer->host,
		 l->peer->port, l->dialer ? "dialing" : "waiting");
	return 0;
}

int link_setup_all(struct daemon *d, const struct link_handlers *up)
{
	size_t i;
	int rc;

	d->link_handlers = up;
	rc = link_table_reserve(d, d->cfg.n_peers);
	if (rc < 0)
		return rc;
	for (i = 0; i < d->cfg.n_peers; i++) {
		rc = link_add(d, &d->cfg.peers[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Close @l's connections on purpose: each one's closed() comes at once
 * (xport.h), with every WR of it completed. */
static void close_quietly(struct link *l)
{
	const struct xport_ops *ops = l->d->xp->ops;

	l->quiet_close = true;
	if (l->conn)
		ops->close(l->conn, -ECONNABORTED);
	if (l->nudge)
		ops->close(l->nudge, -ECONNABORTED);
	l->quiet_close = false;
}

/*
 * The end of @l, removed (@status SL_ERR_PEER_DOWN) or at the daemon's
 * stop (SL_ERR_CANCELED): its connections close first, so that no WR
 * names anything of it, then every operation waiting on it ends with
 * @status, and it is freed.  @l is out of the table already.
 */
static void link_free(struct link *l, int status)
{
	struct daemon *d = l->d;

	l->removing = true;
	close_quietly(l);
	ev_timer_stop(d->loop, &l->redial_w);
	ev_timer_stop(d->loop, &l->retry_w);
	ev_timer_stop(d->loop, &l->ack_w);
	ev_timer_stop(d->loop, &l->alive_w);
	ev_timer_stop(d->loop, &l->dial_w);
	ev_timer_stop(d->loop, &l->timeout_w);
	/* Handshakes under way for it hold it too. */
	link_auth_link_free(l);
	fail_everything(l, status, false, true);
	if (status == SL_ERR_PEER_DOWN)
		l_up(l)->peer_timed_out(l);
	/* Sends the failures above parked for a flush (rndv.c's reap). */
	l_up(l)->flush(l);
	log_debug("link %s: %s at its end", l->peer->name, link_state_name(l->state));
	l_up(l)->detach(l, l->upper);
	/* Last: what failed above may have kicked it. */
	link_ready_forget(l);
	link_up_forget(l);
	free(l);
}

void link_remove(struct link *l)
{
	uint32_t sending, receiving, past;

	l_up(l)->counts(l, &sending, &receiving, &past);
	log_info("link %s (%08x): no longer a peer: failing %u queued sends, %u "
		 "unacknowledged, %u rendezvous sending, %u receiving, and the receives naming "
		 "it; the node is unknown from now on", l->peer->name, l->node_id,
		 l->n_backlog - l->n_ctl, l->n_unacked_data, sending, receiving);
	link_table_remove(l->d, l);
	link_free(l, SL_ERR_PEER_DOWN);
}

void link_readdress(struct link *l, const struct peer_conf *pc)
{
	struct daemon *d = l->d;

	log_info("link %s: now at %s:%u (was %s:%u)%s", l->peer->name, pc->host, pc->port,
		 l->peer->host, l->peer->port, l->conn ? ": closing its connection" : "");
	snprintf(l->peer_conf.host, sizeof(l->peer_conf.host), "%s", pc->host);
	l->peer_conf.port = pc->port;
	link_auth_link_readdress(l);
	close_quietly(l);	/* a dialer redials (link_went_down) */
	snprintf(l->last_error, sizeof(l->last_error), "readdressed (reload)");
	/* An idle link (links on demand) stays idle: its next use dials. */
	if (l->state == LINK_IDLE)
		return;
	if (l->dialer && l->state == LINK_DOWN && !ev_is_active(&l->redial_w))
		link_dial(l);
	else if (!l->dialer && d->xp->ops->short_connections && !l->nudge)
		link_nudge(l);	/* so that it dials us at once */
}

void link_teardown_all(struct daemon *d)
{
	struct link *l;

	link_say_bye_all(d);
	while (d->n_links) {
		l = d->links[d->n_links - 1];
		link_table_remove(d, l);
		link_free(l, SL_ERR_CANCELED);
	}
	link_table_free(d);
}
