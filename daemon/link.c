/*
 * link.c - links to peer nodes: HELLO, sequencing, cumulative ACKs, NAKs,
 * backlog and completion of remote sends.  See link.h.
 *
 * A data frame is completed (its descriptor gets its CQE) only when both
 * its send completion and the peer's ACK or NAK for it have arrived; each
 * frame has exactly one owner at a time: the backlog, the transport
 * (posted), or the unacked list.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "engine.h"
#include "link.h"
#include "log.h"
#include "queue.h"

#define LINK_REDIAL_MIN 0.05	/* seconds */
#define LINK_REDIAL_MAX 2.0	/* seconds */
/* A link down this long fails what waits for it (the link issue makes
 * this configurable and adds retransmission). */
#define LINK_PEER_TIMEOUT 30.0	/* seconds */
#define LINK_ACK_EVERY 32	/* frames received before a lone ACK */
#define LINK_ACK_DELAY 20e-6	/* seconds a lone ACK may wait */

static const char *state_name(enum link_state s)
{
	switch (s) {
	case LINK_DOWN: return "down";
	case LINK_CONNECTING: return "connecting";
	case LINK_HELLO: return "hello";
	case LINK_UP: return "up";
	}
	return "?";
}

struct link *link_find(struct daemon *d, uint32_t node_id)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (d->links[i]->node_id == node_id)
			return d->links[i];
	return NULL;
}

/* ---- completing data frames ---- */

/* The end of every frame, already unlinked: a data frame's descriptor gets
 * its completion and its queue reference back. */
static void frame_finish(struct link_frame *f, int status)
{
	if (f->type == SL_WIRE_EAGER) {
		engine_complete(f->q, SL_OP_SEND, f->dst, f->tag, f->len, f->user_ctx, status);
		queue_put(f->q);
	}
	free(f);
}

static void frame_complete(struct link *l, struct link_frame *f)
{
	TAILQ_REMOVE(&l->unacked, f, link);
	l->n_unacked--;
	frame_finish(f, f->status);
}

/* Fail every data frame in @list with @status (link down, shutdown). */
static void fail_list(struct link *l, struct link_frame_list *list, uint32_t *count,
		      int status)
{
	struct link_frame *f;

	while ((f = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, f, link);
		(*count)--;
		frame_finish(f, status);
	}
}

/* ---- sending ---- */

/*
 * The cumulative ack a frame may carry: never one covering a seq whose NAK
 * is still waiting in the backlog, or the peer would complete that send OK
 * and then find no frame for the NAK.  NAKs sit first in the backlog, in
 * seq order; a NAK being posted may cover its own seq (the peer handles the
 * NAK before the ack).
 */
static uint64_t ack_limit(const struct link *l, const struct sl_wire_frame *wf)
{
	const struct link_frame *f;

	TAILQ_FOREACH(f, &l->backlog, link) {
		if (f->type == SL_WIRE_EAGER)
			break;
		if (wf->type != SL_WIRE_NAK || f->nak_seq != wf->u.nak.nak_seq)
			return f->nak_seq - 1;
	}
	return l->rx_seq;
}

static int post_frame(struct link *l, struct sl_wire_frame *wf, const void *payload,
		      uint64_t wr_id)
{
	uint8_t hdr[SL_WIRE_HDR_MAX];
	struct xport_send_wr wr;
	int n;

	wf->ack = ack_limit(l, wf);
	n = sl_wire_encode(wf, hdr, sizeof(hdr));
	if (n < 0)
		return n;
	wr = (struct xport_send_wr){ .wr_id = wr_id, .hdr = hdr, .hdr_len = (uint32_t)n,
				     .payload = payload, .payload_len = wf->payload_len };
	n = l->d->xp->ops->post_send(l->conn, &wr);
	if (n == 0) {
		l->ack_sent = wf->ack;
		l->frames_tx++;
	}
	return n;
}

static int post_hello(struct link *l)
{
	struct sl_wire_frame wf = { .type = SL_WIRE_HELLO };

	wf.u.hello.node_id = l->d->cfg.node_id;
	wf.u.hello.eager_max = l->d->cfg.eager_max;
	wf.u.hello.incarnation = l->d->incarnation;
	wf.u.hello.last_rx_seq = l->rx_seq;
	return post_frame(l, &wf, NULL, 0);
}

/* Is a standalone ACK due?  Delayed like TCP's: data going back carries
 * the ack for free, so a lone ACK waits for LINK_ACK_EVERY frames, for
 * LINK_ACK_DELAY, or for the engine going to sleep (@force). */
static bool ack_due(const struct link *l, bool force)
{
	if (l->rx_seq == l->ack_sent)
		return false;
	return force || l->rx_seq - l->ack_sent >= LINK_ACK_EVERY ||
	       ev_time() - l->ack_pending_since >= LINK_ACK_DELAY;
}

/* Move what fits from the backlog into the transport SQ, control first;
 * then an ACK if one is due and nothing else carried it. */
static void link_post_backlog(struct link *l, bool force_ack)
{
	const struct xport_ops *ops = l->d->xp->ops;
	struct link_frame *f;

	while ((f = TAILQ_FIRST(&l->backlog)) && ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = f->type };
		const void *payload = NULL;
		uint64_t wr_id = 0;
		int rc;

		if (f->type == SL_WIRE_EAGER) {
			wf.seq = l->tx_seq + 1;
			wf.payload_len = f->len;
			wf.u.eager.src_port = f->src_port;
			wf.u.eager.dst_port = f->dst.port;
			wf.u.eager.dst_node = f->dst.node;
			wf.u.eager.tag = f->tag;
			payload = f->q->arena + f->addr;
			wr_id = (uintptr_t)f;
		} else {
			wf.u.nak.nak_seq = f->nak_seq;
			wf.u.nak.status = f->nak_status;
		}
		rc = post_frame(l, &wf, payload, wr_id);
		if (rc == -ENOMEM)
			break;	/* SQ full: stays first in the backlog */
		TAILQ_REMOVE(&l->backlog, f, link);
		l->n_backlog--;
		if (rc < 0) {
			/* Cannot happen for a frame we built; never drop it
			 * silently all the same. */
			log_err("link %s: cannot post frame: %s", l->peer->name, strerror(-rc));
			frame_finish(f, SL_ERR_INVALID);
			continue;
		}
		if (f->type == SL_WIRE_EAGER) {
			f->seq = ++l->tx_seq;
			f->posted = true;
			TAILQ_INSERT_TAIL(&l->unacked, f, link);
			l->n_unacked++;
		} else {
			free(f);	/* the transport copied the header */
		}
	}
	if (ack_due(l, force_ack) && ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK };

		post_frame(l, &wf, NULL, 0);
	}
}

void link_cancel_queue(struct daemon *d, struct queue *q)
{
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];
		struct link_frame *f, *next;

		for (f = TAILQ_FIRST(&l->backlog); f; f = next) {
			next = TAILQ_NEXT(f, link);
			if (f->type != SL_WIRE_EAGER || f->q != q)
				continue;
			TAILQ_REMOVE(&l->backlog, f, link);
			l->n_backlog--;
			/* Discarded: the queue is dead; this returns its slot
			 * reservation and its reference. */
			frame_finish(f, SL_ERR_CANCELED);
		}
	}
}

int link_send(struct link *l, struct queue *q, const struct sl_sqe *sqe)
{
	struct link_frame *f;

	if (l->timed_out)
		return -EHOSTDOWN;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->type = SL_WIRE_EAGER;
	f->q = q;
	f->src_port = q->port;
	f->dst = sqe->peer;
	f->tag = sqe->tag;
	f->addr = sqe->addr;
	f->len = (uint32_t)sqe->len;
	f->user_ctx = sqe->user_ctx;
	f->status = SL_OK;
	queue_get(q);
	TAILQ_INSERT_TAIL(&l->backlog, f, link);
	l->n_backlog++;
	return 0;
}

static void queue_nak(struct link *l, uint64_t seq, uint32_t status)
{
	struct link_frame *f = calloc(1, sizeof(*f)), *it;

	if (!f) {
		/* Without memory for the NAK the only safe answer is to break
		 * the connection: the sender then learns of the failure. */
		log_err("link %s: out of memory for a NAK", l->peer->name);
		l->d->xp->ops->close(l->conn, -ENOMEM);
		return;
	}
	f->type = SL_WIRE_NAK;
	f->nak_seq = seq;
	f->nak_status = status;
	/* Control frames go ahead of data, in their own order. */
	TAILQ_FOREACH(it, &l->backlog, link)
		if (it->type == SL_WIRE_EAGER)
			break;
	if (it)
		TAILQ_INSERT_BEFORE(it, f, link);
	else
		TAILQ_INSERT_TAIL(&l->backlog, f, link);
	l->n_backlog++;
	l->naks_tx++;
}

void link_flush_all(struct daemon *d, bool force_ack)
{
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		if (l->state != LINK_UP)
			continue;
		link_post_backlog(l, force_ack);
		if (l->conn)
			d->xp->ops->flush(l->conn);
	}
}

/* ---- connection management ---- */

static void link_schedule_redial(struct link *l)
{
	if (!l->dialer || l->d->stopping)
		return;
	ev_timer_stop(l->d->loop, &l->redial_w);
	ev_timer_set(&l->redial_w, l->redial_delay, 0.0);
	ev_timer_start(l->d->loop, &l->redial_w);
	l->redial_delay *= 2;
	if (l->redial_delay > LINK_REDIAL_MAX)
		l->redial_delay = LINK_REDIAL_MAX;
}

static void link_went_down(struct link *l, int err)
{
	struct link_frame *f, *next;

	if (l->state == LINK_UP)
		log_warn("link %s: down: %s", l->peer->name, strerror(err < 0 ? -err : err));
	l->conn = NULL;
	l->state = LINK_DOWN;
	l->down_since = ev_now(l->d->loop);
	/* Frames that reached the transport may or may not have arrived;
	 * until retransmission lands they fail, each with its own status. */
	fail_list(l, &l->unacked, &l->n_unacked,
		  l->d->stopping ? SL_ERR_CANCELED : SL_ERR_PEER_DOWN);
	/* Control frames belong to the dead connection; data waits. */
	for (f = TAILQ_FIRST(&l->backlog); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (f->type != SL_WIRE_EAGER) {
			TAILQ_REMOVE(&l->backlog, f, link);
			l->n_backlog--;
			free(f);
		}
	}
	l->tx_seq = l->rx_seq = l->ack_sent = 0;
	link_schedule_redial(l);
}

/* The first failure of an episode is worth a warning; retries are not. */
static void link_dial_failed(struct link *l, int err)
{
	if (!l->dial_warned)
		log_warn("link %s: cannot connect to %s:%u: %s (retrying up to every %.0f s)",
			 l->peer->name, l->peer->host, l->peer->port,
			 err == -EHOSTUNREACH ? "host unknown or unreachable" : strerror(-err),
			 LINK_REDIAL_MAX);
	else
		log_debug("link %s: connect: %s", l->peer->name, strerror(-err));
	l->dial_warned = true;
}

static void link_dial(struct link *l)
{
	struct daemon *d = l->d;
	int rc;

	l->state = LINK_CONNECTING;
	rc = d->xp->ops->connect(d->xp, l->peer->host, l->peer->port, l, &l->conn);
	if (rc < 0) {
		link_dial_failed(l, rc);
		l->conn = NULL;
		l->state = LINK_DOWN;
		link_schedule_redial(l);
	}
}

static void redial_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	if (l->state == LINK_DOWN)
		link_dial(l);
}

/* Runs once a second while anything waits on a link that is not up. */
static void peer_timeout_check(struct daemon *d)
{
	ev_tstamp now = ev_now(d->loop);
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		if (l->state == LINK_UP || now - l->down_since <= LINK_PEER_TIMEOUT)
			continue;
		if (!l->timed_out) {
			log_warn("link %s: down for %.0f s: failing its %u queued sends and "
				 "new ones until it is back", l->peer->name,
				 now - l->down_since, l->n_backlog);
			l->timed_out = true;
		}
		fail_list(l, &l->backlog, &l->n_backlog, SL_ERR_PEER_DOWN);
	}
}

static void link_up(struct link *l)
{
	/* Frames over our eager_max are NAKed one by one, not fatal: the
	 * peer may be configured differently. */
	l->d->xp->ops->set_rx_limit(l->conn, SL_WIRE_PAYLOAD_MAX);
	l->state = LINK_UP;
	l->timed_out = false;
	l->dial_warned = false;
	l->redial_delay = LINK_REDIAL_MIN;
	l->connects++;
	log_info("link %s: up (%s, incarnation %016llx)", l->peer->name,
		 l->d->xp->ops->peer_name(l->conn), (unsigned long long)l->peer_incarnation);
	daemon_kick(l->d);
}

static void up_connected(struct xport_conn *c, void *ctx, int err)
{
	struct link *l = ctx;

	if (err) {
		link_dial_failed(l, err);
		l->conn = NULL;
		l->state = LINK_DOWN;
		link_schedule_redial(l);
		return;
	}
	l->state = LINK_HELLO;
	if (post_hello(l) < 0) {
		l->d->xp->ops->close(c, -ENOMEM);
		return;
	}
	l->d->xp->ops->flush(c);
}

static void up_accepted(struct xport *x, struct xport_conn *c)
{
	(void)x;
	(void)c;	/* anonymous until its HELLO names the peer */
}

static void up_send_done(struct xport_conn *c, void *ctx, uint64_t wr_id, int status)
{
	struct link *l = ctx;
	struct link_frame *f = (struct link_frame *)(uintptr_t)wr_id;

	(void)c;
	(void)status;	/* an error is followed by closed(), which fails it */
	if (!l)
		return;
	/* An SQ slot is free: the backlog may move on the next pass. */
	if (l->n_backlog)
		daemon_kick(l->d);
	if (!f)
		return;
	f->posted = false;
	if (f->acked)
		frame_complete(l, f);
}

static int process_ack(struct link *l, uint64_t ack)
{
	struct link_frame *f, *next;

	if (ack > l->tx_seq) {
		log_warn("link %s: ack %llu beyond last sent %llu", l->peer->name,
			 (unsigned long long)ack, (unsigned long long)l->tx_seq);
		return -EPROTO;
	}
	for (f = TAILQ_FIRST(&l->unacked); f && f->seq <= ack; f = next) {
		next = TAILQ_NEXT(f, link);
		f->acked = true;
		if (!f->posted)
			frame_complete(l, f);
	}
	return 0;
}

static int process_nak(struct link *l, const struct sl_wire_frame *wf)
{
	struct link_frame *f;

	l->naks_rx++;
	TAILQ_FOREACH(f, &l->unacked, link) {
		if (f->seq == wf->u.nak.nak_seq) {
			f->status = (int32_t)wf->u.nak.status;
			f->acked = true;
			if (!f->posted)
				frame_complete(l, f);
			return 0;
		}
	}
	log_warn("link %s: NAK for unknown seq %llu", l->peer->name,
		 (unsigned long long)wf->u.nak.nak_seq);
	return -EPROTO;
}

static int process_eager(struct link *l, const struct sl_wire_frame *wf,
			 const uint8_t *payload)
{
	struct daemon *d = l->d;
	int status;

	if (wf->seq <= l->rx_seq)
		return 0;	/* duplicate: already delivered */
	if (wf->seq != l->rx_seq + 1) {
		log_warn("link %s: seq gap: got %llu after %llu", l->peer->name,
			 (unsigned long long)wf->seq, (unsigned long long)l->rx_seq);
		return -EPROTO;
	}
	if (l->rx_seq == l->ack_sent)
		l->ack_pending_since = ev_time();
	l->rx_seq = wf->seq;
	if (wf->u.eager.dst_node != d->cfg.node_id) {
		status = SL_ERR_NO_ENDPOINT;
	} else if (wf->payload_len > d->cfg.eager_max) {
		status = SL_ERR_INVALID;
	} else {
		status = engine_deliver(d, (sl_addr_t){ l->node_id, wf->u.eager.src_port },
					wf->u.eager.dst_port, wf->u.eager.tag, payload,
					wf->payload_len);
		d->ctr.remote_msgs_rx++;
	}
	if (status != SL_OK)
		queue_nak(l, wf->seq, (uint32_t)status);
	return 0;
}

/* HELLO on an accepted connection: find the link it belongs to. */
static int attach_accepted(struct daemon *d, struct xport_conn *c,
			   const struct sl_wire_frame *wf)
{
	struct link *l = link_find(d, wf->u.hello.node_id);

	if (!l || l->dialer) {
		log_warn("tcp: %s: HELLO from unexpected node %08x", d->xp->ops->peer_name(c),
			 wf->u.hello.node_id);
		return -EPROTO;
	}
	if (l->conn) {
		/* The peer dialled again: its old connection is dead. */
		log_info("link %s: replacing connection", l->peer->name);
		d->xp->ops->close(l->conn, -ECONNRESET);
	}
	l->conn = c;
	d->xp->ops->set_ctx(c, l);
	l->peer_incarnation = wf->u.hello.incarnation;
	l->peer_eager_max = wf->u.hello.eager_max;
	if (post_hello(l) < 0)
		return -ENOMEM;
	link_up(l);
	return 0;
}

static int up_recv(struct xport *x, struct xport_conn *c, void *ctx,
		   const struct sl_wire_frame *wf, const uint8_t *payload)
{
	struct link *l = ctx;
	int rc = 0;

	if (!l) {
		if (wf->type != SL_WIRE_HELLO)
			return -EPROTO;
		return attach_accepted(x->ctx, c, wf);
	}
	l->frames_rx++;
	switch (wf->type) {
	case SL_WIRE_HELLO:
		if (l->state != LINK_HELLO || wf->u.hello.node_id != l->node_id)
			return -EPROTO;
		l->peer_incarnation = wf->u.hello.incarnation;
		l->peer_eager_max = wf->u.hello.eager_max;
		link_up(l);
		return 0;
	case SL_WIRE_EAGER:
		if (l->state != LINK_UP)
			return -EPROTO;
		rc = process_eager(l, wf, payload);
		break;
	case SL_WIRE_NAK:
		rc = process_nak(l, wf);
		break;
	case SL_WIRE_ACK:
		break;
	default:
		return -EPROTO;
	}
	if (rc == 0)
		rc = process_ack(l, wf->ack);
	daemon_kick(l->d);
	return rc;
}

static void up_closed(struct xport_conn *c, void *ctx, int err)
{
	struct link *l = ctx;

	if (!l || l->conn != c)
		return;
	link_went_down(l, err);
}

const struct xport_upcalls link_upcalls = {
	.connected = up_connected,
	.accepted = up_accepted,
	.send_done = up_send_done,
	.recv = up_recv,
	.closed = up_closed,
};

/* ---- setup ---- */

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	peer_timeout_check(w->data);
}

int link_setup_all(struct daemon *d)
{
	size_t i;

	d->links = calloc(d->cfg.n_peers ? d->cfg.n_peers : 1, sizeof(*d->links));
	if (!d->links)
		return -ENOMEM;
	for (i = 0; i < d->cfg.n_peers; i++) {
		struct link *l = calloc(1, sizeof(*l));

		if (!l)
			return -ENOMEM;
		l->d = d;
		l->peer = &d->cfg.peers[i];
		l->node_id = l->peer->node_id;
		l->dialer = d->cfg.node_id < l->node_id;
		l->state = LINK_DOWN;
		l->redial_delay = LINK_REDIAL_MIN;
		l->down_since = ev_now(d->loop);
		TAILQ_INIT(&l->backlog);
		TAILQ_INIT(&l->unacked);
		ev_timer_init(&l->redial_w, redial_cb, 0.0, 0.0);
		l->redial_w.data = l;
		d->links[d->n_links++] = l;
		if (l->dialer)
			link_dial(l);
		log_info("link %s (%08x) at %s:%u: %s", l->peer->name, l->node_id,
			 l->peer->host, l->peer->port, l->dialer ? "dialing" : "waiting");
	}
	ev_timer_init(&d->peer_timeout_w, timeout_cb, 1.0, 1.0);
	d->peer_timeout_w.data = d;
	if (d->n_links)
		ev_timer_start(d->loop, &d->peer_timeout_w);
	return 0;
}

void link_teardown_all(struct daemon *d)
{
	size_t i;

	ev_timer_stop(d->loop, &d->peer_timeout_w);
	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		ev_timer_stop(d->loop, &l->redial_w);
		if (l->conn)
			d->xp->ops->close(l->conn, -ECONNABORTED);
		fail_list(l, &l->unacked, &l->n_unacked, SL_ERR_CANCELED);
		fail_list(l, &l->backlog, &l->n_backlog, SL_ERR_CANCELED);
		log_debug("link %s: %s at teardown", l->peer->name, state_name(l->state));
		free(l);
	}
	free(d->links);
	d->links = NULL;
	d->n_links = 0;
}
