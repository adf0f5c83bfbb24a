/*
 * link_stats.c - a link as the files above it may see it: struct
 * link_stats, filled from struct link (link.h).  The one place outside
 * link.c, link_auth.c, link_diag.c and link_table.c that reads a link's
 * fields, so that stats.c, admin.c and mem_usage.c do not.
 */
#include "autoconfig.h"

#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "link.h"
#include "link_auth.h"
#include "link_impl.h"
#include "sl_wire.h"

_Static_assert(sizeof(((struct link_stats *)0)->last_error) >=
	       sizeof(((struct link *)0)->last_error),
	       "struct link_stats cuts a link's last_error");

/* Seconds as milliseconds, rounded to the nearest; 0 for none. */
static uint64_t to_ms(ev_tstamp s)
{
	return s > 0 ? (uint64_t)(s * 1e3 + 0.5) : 0;
}

/* The memory the link and its transport connection hold. */
static void get_memory(const struct link *l, struct link_stats *st)
{
	const struct xport_ops *ops = l->d->xp->ops;
	const struct link_msg *f;

	st->xport_buffers_known = ops->buffer_bytes != NULL;
	if (ops->buffer_bytes && l->conn)
		ops->buffer_bytes(l->conn, &st->xport_tx_bytes, &st->xport_rx_bytes);
	TAILQ_FOREACH(f, &l->unacked, link) {
		st->retransmit_frames++;
		if (f->type == SL_WIRE_EAGER)
			st->retransmit_bytes += f->payload_len;
	}
}

void link_get_stats(const struct link *l, struct link_stats *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", l->peer->name);
	st->node_id = l->node_id;
	snprintf(st->host, sizeof(st->host), "%s", l->peer->host);
	st->port = l->peer->port;
	st->state = l->state;
	snprintf(st->last_error, sizeof(st->last_error), "%s", l->last_error);
	st->auth = link_auth_how(l);
	st->credits = link_credits_left(l);
	st->retransmit_timer = ev_is_active(&l->ack_w);
	st->incarnation = l->peer_incarnation;
	st->updown_at = l->updown_at;
	st->rx_at = l->rx_at;

	st->backlog = l->n_backlog;
	st->ctl_queued = l->n_ctl;
	st->unacked = l->n_unacked;
	st->writes_pending = l->n_writes;
	st->tx_seq = l->tx_seq;
	st->rx_seq = l->rx_seq;
	st->acked = l->ack_rx;
	st->ack_backoff = l->ack_backoff;
	st->tx_gap_max_ms = to_ms(l->tx_gap_max);
	st->rx_gap_max_ms = to_ms(l->rx_gap_max);

	st->ctr = l->ctr;
	st->rc = l->rc;

	get_memory(l, st);
}
