/*
 * link_announce.c - what a daemon tells its peers when it starts and when
 * it stops, outside any link's stream: the nudge (a starting accepter's
 * short connection with its HELLO, so that a peer dials at once) and the
 * BYE (so that the peers fail what waits on us at once, instead of after
 * peer_timeout_ms).  Part of the links' floor (link_impl.h).
 */
#include "autoconfig.h"

#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "link_impl.h"
#include "log.h"

/*
 * A starting accepter tells each peer that dials it that it is back (the
 * peer would otherwise learn it at its next redial, up to redial_max_ms
 * later): a short connection carrying our HELLO, closed once it has left.
 * A peer that is not there is not asked again: it dials us when it
 * starts.  dial_w bounds a connect that hangs.  Only over transports
 * whose short connections are cheap (xport_ops.short_connections: tcp);
 * on verbs the peer learns at its next redial.
 */
void link_nudge(struct link *l)
{
	struct daemon *d = l->d;
	int rc = d->xp->ops->connect(d->xp, l->peer->host, l->peer->port, l, &l->nudge);

	if (rc < 0) {
		l->nudge = NULL;
		log_debug("link %s: cannot tell it we started: %s", l->peer->name, strerror(-rc));
		return;
	}
	ev_timer_set(&l->dial_w, LINK_DIAL_TIMEOUT, 0.0);
	ev_timer_start(d->loop, &l->dial_w);
}

void link_nudge_connected(struct link *l, struct xport_conn *c, int err)
{
	const struct xport_ops *ops = l->d->xp->ops;
	struct sl_wire_frame wf;
	uint8_t hdr[SL_WIRE_HDR_MAX];
	struct xport_send_wr wr = { .hdr = hdr };
	int n;

	if (err) {
		log_debug("link %s: cannot tell it we started: %s", l->peer->name, strerror(-err));
		l->nudge = NULL;	/* the conn is gone after this call */
		ev_timer_stop(l->d->loop, &l->dial_w);
		return;
	}
	link_hello_fill(l, &wf);
	n = sl_wire_encode(&wf, hdr, sizeof(hdr));
	if (n > 0) {
		wr.hdr_len = (uint32_t)n;
		n = ops->post_send(c, &wr);
	}
	if (n < 0) {
		log_warn("link %s: cannot tell it we started: %s", l->peer->name, strerror(-n));
		ops->close(c, -ECONNABORTED);	/* -> closed() */
		return;
	}
	l->ctr.nudges_tx++;
	ops->flush(c);	/* its completion closes it */
}

/*
 * A HELLO on a connection that a peer we dial opened: it started, and
 * says so (it never dials us).  It carries no proof (link_auth.c only
 * checks that it comes from the peer's address), so it may only make us
 * act early, never break a link.  Down, we dial now rather than at the
 * end of the back-off; up,
 * a keepalive goes out on the connection (the host of a dead incarnation
 * answers it with a reset, and the link redials).  Connecting, the dial
 * under way goes on (LINK_DIAL_TIMEOUT bounds it).  The connection
 * carries nothing else: closed.
 */
void link_nudge_heard(struct link *l, struct xport_conn *c)
{
	struct daemon *d = l->d;

	l->ctr.nudges_rx++;
	d->xp->ops->close(c, -ECONNABORTED);
	if (d->stopping)
		return;
	if (l->state == LINK_IDLE) {
		/* On demand: the peer has something for us (and the cap on
		 * connected links holds for its wake-up too). */
		link_demand(l);
	} else if (l->state == LINK_DOWN) {
		log_info("link %s: the peer says it started: dialing now", l->peer->name);
		ev_timer_stop(d->loop, &l->redial_w);
		l->redial_delay = d->cfg.redial_min_ms / 1e3;
		link_dial(l);
	} else if (l->state == LINK_UP && d->xp->ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK };

		if (link_post_frame(l, &wf, NULL, 0) == 0)
			d->xp->ops->flush(l->conn);
	}
}

static void bye_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	*(bool *)w->data = true;
}

/* Work requests still posted on up links (a BYE among them). */
static uint32_t links_posted(struct daemon *d)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (d->links[i]->conn && d->links[i]->state == LINK_UP)
			n += d->xp->ops->sq_outstanding(d->links[i]->conn);
	return n;
}

/*
 * Tell every peer on an up link that this node is stopping: a BYE after
 * everything else on the connection, then an orderly close once it has
 * left (the loop runs up to LINK_BYE_WAIT for that), so that the peers
 * fail what waits on us at once instead of after peer_timeout_ms.
 */
void link_say_bye_all(struct daemon *d)
{
	bool expired = false;
	ev_timer wait_w;
	unsigned said = 0;
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];
		struct sl_wire_frame wf = { .type = SL_WIRE_BYE };

		if (!l->conn || l->state != LINK_UP)
			continue;
		wf.u.bye.incarnation = d->incarnation;
		if (d->xp->ops->sq_space(l->conn) == 0 || link_post_frame(l, &wf, NULL, 0) < 0) {
			log_info("link %s: no room for a BYE: the peer waits for its "
				 "peer_timeout_ms", l->peer->name);
			continue;
		}
		/* Written now: nothing else may flush this connection again (it
		 * was the peer's keepalives, which a quiet link no longer
		 * sends, that did). */
		d->xp->ops->flush(l->conn);
		said++;
	}
	if (!said)
		return;
	ev_timer_init(&wait_w, bye_wait_cb, LINK_BYE_WAIT, 0.0);
	wait_w.data = &expired;
	ev_timer_start(d->loop, &wait_w);
	while (!expired && links_posted(d))
		ev_run(d->loop, EVRUN_ONCE);
	ev_timer_stop(d->loop, &wait_w);
	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		/* 0: orderly (tcp: FIN after the bytes, not an RST that may
		 * overtake them). */
		if (l->conn && l->state == LINK_UP)
			d->xp->ops->close(l->conn, 0);
	}
	log_info("told %u peer%s that this node stops%s", said, said == 1 ? "" : "s",
		 expired ? " (some BYEs may not have left)" : "");
}

