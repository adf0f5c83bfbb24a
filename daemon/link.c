/*
 * link.c - links to peer nodes: HELLO, sequencing, cumulative ACKs, NAKs,
 * backlog, retransmission after a reconnect, peer timeout and restart,
 * and completion of remote sends.  See link.h.
 *
 * A data frame is completed (its descriptor gets its CQE) only when both
 * its send completion and the peer's ACK or NAK for it have arrived; each
 * frame has exactly one owner at a time: the backlog, the transport
 * (posted), or the unacked list.  A sent frame waits in the unacked list
 * whatever happens to the connection; after a reconnect the part of it
 * the peer's HELLO does not cover goes back to the head of the backlog.
 */
#include "autoconfig.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "link.h"
#include "link_auth.h"
#include "link_diag.h"
#include "link_table.h"
#include "log.h"
#include "queue.h"
#include "wake.h"

#define LINK_ACK_EVERY 32	/* frames received before a lone ACK */
#define LINK_ACK_DELAY 20e-6	/* seconds a lone ACK may wait */
#define LINK_POST_RETRY 1e-3	/* seconds: a refused post with nothing in flight */
/* Liveness: an up link sends a frame at least every LINK_KEEPALIVE
 * seconds (a protocol constant, so that a peer configured differently
 * still hears it often enough), and one that hears nothing for
 * max(ack_timeout_ms, LINK_SILENCE_MIN) breaks its connection. */
#define LINK_KEEPALIVE 0.25
/* Stopping: how long the BYEs get to leave, seconds. */
#define LINK_BYE_WAIT 0.5
#define LINK_SILENCE_MIN 1.0
/* The shortest window in which a link proves that a smaller ack back-off
 * suffices (backoff_review): 8 keepalive rounds. */
#define LINK_PROVE_MIN 2.0
/* A dial that has not reached LINK_UP (connect and both HELLOs) after
 * this many seconds is abandoned and redialled: a connect can hang far
 * longer (TCP's SYN retries, the RDMA CM's REQ retries after a port
 * came back, a peer that accepts but never says HELLO). */
#define LINK_DIAL_TIMEOUT 3.0
/* Lines the peer causes at will (its connections coming and going, its
 * protocol errors): a buggy or hostile peer, even one with the key,
 * reconnects and breaks its stream as often as it likes
 * (tests/test_netfuzz.c).  Per link, a token bucket (log.h): this burst,
 * then this many lines a second; the counters (sluicectl links, stats)
 * keep the exact numbers. */
#define LINK_PEER_LOG_BURST 10
#define LINK_PEER_LOG_PER_SEC 0.2
#define peer_warn(l, ...) log_limited(&(l)->peer_log, LOG_LVL_WARN, __VA_ARGS__)
#define peer_info(l, ...) log_limited(&(l)->peer_log, LOG_LVL_INFO, __VA_ARGS__)

/* The layer above (link_setup_all). */
static const struct link_handlers *l_up(const struct link *l)
{
	return l->d->link_handlers;
}

const char *link_state_name(enum link_state s)
{
	switch (s) {
	case LINK_DOWN: return "down";
	case LINK_CONNECTING: return "connecting";
	case LINK_HELLO: return "hello";
	case LINK_UP: return "up";
	}
	return "?";
}

/* ---- who owns a frame ---- */

#define OWN(o) (1u << (o))

static const char *owner_name(unsigned o)
{
	static const char *const names[] = { "backlog", "wire", "rndv", "decided", "client" };

	return o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

/* Move @f to owner @to if its owner is one of @from (OWN() bits); see
 * enum frame_owner.  Returns false (and changes nothing) otherwise. */
static bool frame_move(struct link *l, struct link_frame *f, unsigned from,
		       enum frame_owner to)
{
	if (from & OWN(f->owner)) {
		f->owner = (uint8_t)to;
		return true;
	}
	l->illegal_moves++;
	log_err("link %s: frame type %u seq %llu: illegal move %s -> %s", l->peer->name,
		f->type, (unsigned long long)f->seq, owner_name(f->owner), owner_name(to));
	assert(!"illegal frame move");
	return false;
}

static bool frame_decided(const struct link_frame *f)
{
	return f->owner == FO_DECIDED;
}

/* ---- completing sends ---- */

/* @f has no RDMA write segment left to post (if it was on the list). */
static void writes_remove(struct link *l, struct link_frame *f)
{
	if (!f->in_writes)
		return;
	TAILQ_REMOVE(&l->writes, f, wlink);
	l->n_writes--;
	f->in_writes = false;
}

static void list_unlink(struct link *l, struct link_frame *f)
{
	if (f->where == FL_UNACKED) {
		TAILQ_REMOVE(&l->unacked, f, link);
		l->n_unacked--;
		l->n_unacked_data--;	/* only sends come here */
	} else if (f->where == FL_BACKLOG) {
		TAILQ_REMOVE(&l->backlog, f, link);
		l->n_backlog--;
	}
	f->where = FL_NONE;
	if (f->in_rndv) {
		TAILQ_REMOVE(&l->rndv_tx, f, rlink);
		l->n_rndv_tx--;
		f->in_rndv = false;
	}
	writes_remove(l, f);
	if (f->in_reap) {
		TAILQ_REMOVE(&l->reap, f, wlink);
		f->in_reap = false;
	}
}

/*
 * The end of every send: once its status is decided and no posted WR
 * names it, it leaves every list, returns its registration (or its place
 * in the registration queue), and its descriptor gets its completion and
 * its queue reference back.  Returns true when @f is gone.
 */
static bool send_try_finish(struct link *l, struct link_frame *f)
{
	struct daemon *d = l->d;

	if (!frame_decided(f) || f->wrs)
		return false;
	if (!frame_move(l, f, OWN(FO_DECIDED), FO_CLIENT))
		return false;
	list_unlink(l, f);
	if (f->reg_waiting) {
		rcache_cancel(d->rc, &f->req);
		f->reg_waiting = false;
	}
	if (f->mr)
		rcache_put(d->rc, f->mr);
	if (f->send_id && f->status != SL_OK) {
		/* A late RTR for it (or one sent again) will want to know why. */
		l->gone[l->gone_next].send_id = f->send_id;
		l->gone[l->gone_next].status = f->status;
		l->gone_next = (l->gone_next + 1) % LINK_GONE_MAX;
	}
	if (f->status == SL_OK) {
		l->msgs_tx++;
		l->bytes_tx += f->desc.len;
	}
	queue_complete(&f->desc, f->status, NULL);
	queue_put(f->desc.q);
	free(f);
	return true;
}

/* Decide @f's status; the first decision wins: one per descriptor. */
static void send_set_status(struct link *l, struct link_frame *f, int status)
{
	if (frame_decided(f))
		return;
	if (frame_move(l, f, OWN(FO_BACKLOG) | OWN(FO_WIRE) | OWN(FO_RNDV), FO_DECIDED))
		f->status = status;
}

static bool send_decide(struct link *l, struct link_frame *f, int status)
{
	send_set_status(l, f, status);
	return send_try_finish(l, f);
}

static bool is_send(const struct link_frame *f)
{
	return f->type == SL_WIRE_EAGER || f->type == SL_WIRE_RTS;
}

/* A control frame (NAK, RTR, FIN, DONE) leaves its list and is freed. */
static void ctl_free(struct link *l, struct link_frame *f)
{
	if (!frame_move(l, f, OWN(FO_BACKLOG) | OWN(FO_WIRE), FO_CLIENT))
		return;
	if (f->where == FL_BACKLOG) {
		TAILQ_REMOVE(&l->backlog, f, link);
		l->n_backlog--;
		l->n_ctl--;
	} else if (f->where == FL_UNACKED) {
		TAILQ_REMOVE(&l->unacked, f, link);
		l->n_unacked--;
	}
	free(f);
}

/* A data frame leaves the unacked list: its credit comes back. */
static void unacked_remove(struct link *l, struct link_frame *f)
{
	TAILQ_REMOVE(&l->unacked, f, link);
	l->n_unacked--;
	l->n_unacked_data--;
	f->where = FL_NONE;
}

/* Fail every send in @list with @status; with @drop_ctl, control frames
 * there go too (their peer is gone, or we are). */
static void fail_list(struct link *l, struct link_frame_list *list, int status, bool drop_ctl)
{
	struct link_frame *f, *next;

	for (f = TAILQ_FIRST(list); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (is_send(f))
			send_decide(l, f, status);
		else if (drop_ctl)
			ctl_free(l, f);
	}
}

/* ---- sending ---- */

/* SQ slots data may not take: ACK, NAK, RTR and FIN never wait behind
 * data for room. */
static uint32_t ctl_reserve(const struct link *l)
{
	return l->d->xp->params.sq_depth >= 16 ? 2 : 1;
}

static uint32_t data_space(const struct link *l)
{
	uint32_t space = l->d->xp->ops->sq_space(l->conn), r = ctl_reserve(l);

	return space > r ? space - r : 0;
}

/* A post was refused.  When nothing is in flight no completion will come
 * to drive the backlog again, so a timer does. */
static void post_refused(struct link *l)
{
	l->post_enomem++;
	if (l->d->xp->ops->sq_outstanding(l->conn) == 0 && !ev_is_active(&l->retry_w)) {
		ev_timer_set(&l->retry_w, LINK_POST_RETRY, 0.0);
		ev_timer_start(l->d->loop, &l->retry_w);
	}
}

/*
 * The cumulative ack a frame may carry: never one covering a seq whose NAK
 * is still waiting in the backlog, or the peer would complete that send OK
 * and then find no frame for the NAK.  NAKs sit among the control frames
 * at the head of the backlog, in seq order; a NAK being posted may cover
 * its own seq (the peer handles the NAK before the ack).
 */
static uint64_t ack_limit(const struct link *l, const struct sl_wire_frame *wf)
{
	const struct link_frame *f;

	TAILQ_FOREACH(f, &l->backlog, link) {
		if (is_send(f))
			break;
		if (f->type != SL_WIRE_NAK)
			continue;
		if (wf->type != SL_WIRE_NAK || f->nak_seq != wf->u.nak.nak_seq)
			return f->nak_seq - 1;
	}
	return l->rx_seq;
}

static int post_frame(struct link *l, struct sl_wire_frame *wf, const void *payload,
		      uint64_t wr_id)
{
	const struct xport_ops *ops = l->d->xp->ops;
	uint8_t hdr[SL_WIRE_HDR_MAX];
	struct xport_send_wr wr;
	int n;

	if (wf->type != SL_WIRE_EAGER && wf->type != SL_WIRE_RTS) {
		/* What the data budget promises: see LINK_TX_BUDGET. */
		uint64_t ahead = ops->sq_bytes(l->conn);

		if (ahead > l->tx_ahead_max)
			l->tx_ahead_max = ahead;
	}
	wf->ack = ack_limit(l, wf);
	n = sl_wire_encode(wf, hdr, sizeof(hdr));
	if (n < 0)
		return n;
	wr = (struct xport_send_wr){ .wr_id = wr_id, .hdr = hdr, .hdr_len = (uint32_t)n,
				     .payload = payload, .payload_len = wf->payload_len };
	n = ops->post_send(l->conn, &wr);
	if (n == 0) {
		ev_tstamp now = ev_now(l->d->loop);

		if (l->state == LINK_UP && now - l->tx_at > l->tx_gap_max)
			l->tx_gap_max = now - l->tx_at;
		l->ack_sent = wf->ack;
		l->frames_tx++;
		l->tx_at = now;
	} else if (n == -ENOMEM) {
		post_refused(l);
	}
	return n;
}

static void hello_fill(const struct link *l, struct sl_wire_frame *wf)
{
	*wf = (struct sl_wire_frame){ .type = SL_WIRE_HELLO };
	wf->u.hello.node_id = l->d->cfg.node_id;
	wf->u.hello.eager_max = l->d->cfg.eager_max;
	wf->u.hello.incarnation = l->d->incarnation;
	wf->u.hello.last_rx_seq = l->rx_seq;
	wf->u.hello.credits = l->d->cfg.eager_credits;
	wf->u.hello.peer_incarnation = l->peer_incarnation;
}

static int post_hello(struct link *l)
{
	struct sl_wire_frame wf;

	hello_fill(l, &wf);
	return post_frame(l, &wf, NULL, 0);
}

/* ---- the retransmission timer and its back-off ---- */

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

static void backoff_window(struct link *l, ev_tstamp now)
{
	l->backoff_since = now;
	l->backoff_ack_wait = l->backoff_rx_gap = 0;
}

static void backoff_set(struct link *l, uint32_t b)
{
	l->ack_backoff = b;
	l->ack_w.repeat = ack_period(l, b);	/* for ev_timer_again */
	backoff_window(l, ev_now(l->d->loop));
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
 * Run from alive_cb, every LINK_KEEPALIVE while up.
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
		backoff_window(l, now);
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
static void ack_timer_start(struct link *l)
{
	ev_tstamp t = ack_period(l, l->ack_backoff);

	if (ev_is_active(&l->ack_w))
		return;
	l->heard_at = ev_now(l->d->loop);	/* silence counts from here */
	ev_timer_set(&l->ack_w, t, t);
	ev_timer_start(l->d->loop, &l->ack_w);
}

static void ack_timer_progress(struct link *l)
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
		ack_timer_start(l);
}

/* A sequenced frame was handed to the transport: it waits for its ack. */
static void unacked_append(struct link *l, struct link_frame *f)
{
	frame_move(l, f, OWN(FO_BACKLOG), FO_WIRE);
	f->seq = ++l->tx_seq;
	f->where = FL_UNACKED;
	TAILQ_INSERT_TAIL(&l->unacked, f, link);
	l->n_unacked++;
	if (is_send(f))
		l->n_unacked_data++;
	ack_timer_start(l);
}

/* Is a standalone ACK due?  Delayed like TCP's: data going back carries
 * the ack for free, so a lone ACK waits for LINK_ACK_EVERY frames, for
 * LINK_ACK_DELAY, or for the engine going to sleep (@force). */
static bool ack_due(const struct link *l, bool force)
{
	uint64_t every = l->d->cfg.eager_credits / 2;

	if (l->rx_seq == l->ack_sent)
		return false;
	/* Never sit on more than half the credits we granted: the peer
	 * would stall waiting for them. */
	if (every > LINK_ACK_EVERY)
		every = LINK_ACK_EVERY;
	if (every == 0)
		every = 1;
	return force || l->rx_seq - l->ack_sent >= every ||
	       ev_time() - l->ack_pending_since >= LINK_ACK_DELAY;
}

uint64_t link_credits_left(const struct link *l)
{
	uint64_t used = l->n_unacked_data;

	if (l->state != LINK_UP)
		return 0;
	return used < l->peer_credits ? l->peer_credits - used : 0;
}

static void note_rtr_posted(struct link *l, const struct link_frame *f);
static int rtr_grant(struct link *l, struct link_frame *f);

/* Post control frame @f (NAK, RTR, FIN, DONE). */
static int post_ctl(struct link *l, struct link_frame *f)
{
	struct sl_wire_frame wf = { .type = f->type, .seq = l->tx_seq + 1 };

	switch (f->type) {
	case SL_WIRE_NAK:
		wf.u.nak.nak_seq = f->nak_seq;
		wf.u.nak.status = f->ctl_status;
		break;
	case SL_WIRE_RTR:
		wf.u.rtr.send_id = f->ctl_send_id;
		wf.u.rtr.raddr = f->rtr_raddr;
		wf.u.rtr.len = f->rtr_len;
		wf.u.rtr.rkey = f->rtr_rkey;
		wf.u.rtr.recv_id = f->ctl_recv_id;
		wf.u.rtr.status = f->ctl_status;
		wf.u.rtr.offset = f->rtr_offset;
		break;
	case SL_WIRE_FIN:
		wf.u.fin.recv_id = f->ctl_recv_id;
		wf.u.fin.status = f->ctl_status;
		break;
	case SL_WIRE_DONE:
		wf.u.done.send_id = f->ctl_send_id;
		break;
	default:
		return -EINVAL;
	}
	return post_frame(l, &wf, NULL, 0);
}

/* The largest message the peer takes eagerly: both ends' eager_max. */
static uint64_t eager_limit(const struct link *l)
{
	uint32_t own = l->d->cfg.eager_max;

	return l->peer_eager_max < own ? l->peer_eager_max : own;
}

/* Post send @f, the head of the backlog, as EAGER or RTS. */
static int post_send_frame(struct link *l, struct link_frame *f)
{
	/* A frame sent again keeps its kind: the peer is the same one. */
	bool rndv = f->type == SL_WIRE_RTS || f->desc.len > eager_limit(l);
	struct sl_wire_frame wf = { .type = rndv ? SL_WIRE_RTS : SL_WIRE_EAGER };
	const void *payload = NULL;
	int rc;

	wf.seq = l->tx_seq + 1;
	if (rndv) {
		if (!f->send_id)
			f->send_id = ++l->next_send_id;
		wf.u.rts.src_port = f->desc.q->port;
		wf.u.rts.dst_port = f->desc.peer.port;
		wf.u.rts.dst_node = f->desc.peer.node;
		wf.u.rts.sender_uid = (uint32_t)f->desc.q->uid;
		wf.u.rts.tag = f->desc.tag;
		wf.u.rts.msg_len = f->desc.len;
		wf.u.rts.send_id = f->send_id;
	} else {
		wf.payload_len = (uint32_t)f->desc.len;
		wf.u.eager.src_port = f->desc.q->port;
		wf.u.eager.dst_port = f->desc.peer.port;
		wf.u.eager.dst_node = f->desc.peer.node;
		wf.u.eager.sender_uid = (uint32_t)f->desc.q->uid;
		wf.u.eager.tag = f->desc.tag;
		payload = f->desc.q->arena + f->desc.addr;
	}
	rc = post_frame(l, &wf, payload, (uintptr_t)f);
	if (rc == -ENOMEM)
		return rc;	/* stays first in the backlog */
	list_unlink(l, f);
	if (rc < 0) {
		/* Cannot happen for a frame we built; never drop it silently
		 * all the same.  (A frame sent again is in rndv_tx already and
		 * list_unlink took it out; send_decide finishes it.) */
		log_err("link %s: cannot post frame: %s", l->peer->name, strerror(-rc));
		send_decide(l, f, SL_ERR_INVALID);
		return 0;
	}
	f->wrs++;
	unacked_append(l, f);
	if (rndv && !f->in_rndv) {
		f->type = SL_WIRE_RTS;
		f->in_rndv = true;
		TAILQ_INSERT_TAIL(&l->rndv_tx, f, rlink);
		l->n_rndv_tx++;
	}
	return 0;
}

/* Post the next RDMA write segment of @f, the head of the write list;
 * the last one carries the receiver's recv_id as its immediate. */
static int post_write_segment(struct link *l, struct link_frame *f)
{
	uint64_t left = f->wlen - f->w_off;
	uint32_t seg = left < LINK_WRITE_SEGMENT ? (uint32_t)left : LINK_WRITE_SEGMENT;
	bool last = f->w_off + seg == f->wlen;
	struct xport_write_wr wr = {
		.wr_id = (uintptr_t)f | 1,
		.laddr = f->desc.q->arena + f->desc.addr + f->w_off,
		.lkey = f->mr ? f->mr->lkey : 0,
		.len = seg,
		.raddr = f->raddr + f->w_off,
		.rkey = f->rkey,
		.has_imm = last,
		.imm = last ? f->recv_id : 0,
	};
	int rc = l->d->xp->ops->post_write(l->conn, &wr);

	if (rc == -ENOMEM) {
		post_refused(l);
		return rc;
	}
	if (rc < 0) {
		/* Our own registration refused: a bug, reported on the
		 * descriptor; the receiver's receive is given back. */
		log_err("link %s: cannot post RDMA write: %s", l->peer->name, strerror(-rc));
		list_unlink(l, f);
		f->w_off = f->wlen;
		link_queue_fin(l, f->recv_id, SL_ERR_ACCESS);
		send_decide(l, f, SL_ERR_ACCESS);
		return 0;
	}
	f->w_off += seg;
	f->wrs++;
	l->writes_tx++;
	TAILQ_REMOVE(&l->writes, f, wlink);
	if (last) {
		f->in_writes = false;
		l->n_writes--;
		f->last_posted = true;
	} else {
		/* Round robin between rendezvous: one segment each. */
		TAILQ_INSERT_TAIL(&l->writes, f, wlink);
	}
	return 0;
}

/*
 * Move what fits into the transport SQ: control frames first (they may
 * use the reserve), then data, alternating between queued sends and RDMA
 * write segments so that neither starves the other; then an ACK if one
 * is due and nothing else carried it.  Returns the frames and segments
 * posted (ACKs aside): the progress engine's work.
 */
static unsigned link_post_backlog(struct link *l, bool force_ack)
{
	const struct xport_ops *ops = l->d->xp->ops;
	struct link_frame *f;
	unsigned posted = 0;

	while ((f = TAILQ_FIRST(&l->backlog)) && !is_send(f)) {
		int rc = f->type == SL_WIRE_RTR ? rtr_grant(l, f) : 0;

		if (rc == 0)
			rc = post_ctl(l, f);

		if (rc == -ENOMEM) {
			if (!f->deferred) {
				f->deferred = true;
				l->ctl_deferred++;
			}
			return posted;
		}
		if (rc < 0) {
			log_err("link %s: cannot post control frame %u: %s", l->peer->name,
				f->type, strerror(-rc));
			ctl_free(l, f);
			continue;
		}
		TAILQ_REMOVE(&l->backlog, f, link);
		l->n_backlog--;
		l->n_ctl--;
		unacked_append(l, f);
		if (f->type == SL_WIRE_RTR && f->ctl_status == SL_OK)
			note_rtr_posted(l, f);
		posted++;
	}
	while (data_space(l) && ops->sq_bytes(l->conn) < LINK_TX_BUDGET) {
		struct link_frame *send = link_credits_left(l) ? TAILQ_FIRST(&l->backlog) : NULL;
		struct link_frame *write = TAILQ_FIRST(&l->writes);
		bool do_write = write && (!send || l->write_turn);

		if (!send && !write)
			break;
		/* The turn outlives the pass: a refused post (SQ full, -ENOMEM)
		 * keeps it, the other kind gets the next one after a success.
		 * Restarting each pass with the sends once let a sender's
		 * stream take every post that got through. */
		if ((do_write ? post_write_segment(l, write) : post_send_frame(l, send)) < 0)
			break;
		l->write_turn = !do_write;
		posted++;
	}
	if (ack_due(l, force_ack) && ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK };

		post_frame(l, &wf, NULL, 0);
	}
	return posted;
}

static void rndv_recv_abort(struct rndv_recv *rr, int status);

void link_cancel_queue(struct daemon *d, struct queue *q)
{
	struct rndv_recv *rr, *rnext;
	size_t i;

	/* Its receives matched to remote rendezvous: the senders must hear
	 * that nobody will take the data. */
	for (rr = TAILQ_FIRST(&q->claims); rr; rr = rnext) {
		rnext = TAILQ_NEXT(rr, qlink);
		if (!rr->aborted)
			rndv_recv_abort(rr, SL_ERR_NO_ENDPOINT);
	}

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];
		struct link_frame *f, *next;

		/* Discarded: the queue is dead; this returns each send's slot
		 * reservation and its reference. */
		for (f = TAILQ_FIRST(&l->backlog); f; f = next) {
			next = TAILQ_NEXT(f, link);
			if (is_send(f) && f->desc.q == q)
				send_decide(l, f, SL_ERR_CANCELED);
		}
		/* Rendezvous no receiver has answered yet would hold the
		 * dead client's arena until one does; a late RTR gets a FIN
		 * that gives the receive back. */
		for (f = TAILQ_FIRST(&l->rndv_tx); f; f = next) {
			next = TAILQ_NEXT(f, rlink);
			if (f->desc.q == q && f->recv_id == 0)
				send_decide(l, f, SL_ERR_CANCELED);
		}
	}
}

int link_send(struct link *l, const struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct link_frame *f;

	if (l->timed_out)
		return -EHOSTDOWN;
	if (l->n_backlog - l->n_ctl >= l->d->cfg.link_backlog_max) {
		l->backlog_naks++;
		return -ENOBUFS;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->type = SL_WIRE_EAGER;	/* or RTS, decided when posted */
	f->desc = *dsc;
	f->status = SL_OK;
	queue_get(q);
	f->where = FL_BACKLOG;
	TAILQ_INSERT_TAIL(&l->backlog, f, link);
	l->n_backlog++;
	return 0;
}

/* Queue a control frame ahead of data, after the control frames already
 * queued (their order is kept).  Returns the frame or NULL. */
static struct link_frame *queue_ctl(struct link *l, uint8_t type)
{
	struct link_frame *f = calloc(1, sizeof(*f)), *it;

	if (!f) {
		/* Without memory for it the only safe answer is to break the
		 * connection: both sides then fail what was under way, each
		 * operation with its own status. */
		log_err("link %s: out of memory for a control frame", l->peer->name);
		if (l->conn)
			l->d->xp->ops->close(l->conn, -ENOMEM);
		return NULL;
	}
	f->type = type;
	f->where = FL_BACKLOG;
	TAILQ_FOREACH(it, &l->backlog, link)
		if (is_send(it))
			break;
	if (it)
		TAILQ_INSERT_BEFORE(it, f, link);
	else
		TAILQ_INSERT_TAIL(&l->backlog, f, link);
	l->n_backlog++;
	l->n_ctl++;
	daemon_wake(l->d);
	return f;
}

static void queue_nak(struct link *l, uint64_t seq, uint32_t status)
{
	struct link_frame *f = queue_ctl(l, SL_WIRE_NAK);

	if (!f)
		return;
	f->nak_seq = seq;
	f->ctl_status = status;
	l->naks_tx++;
}

void link_queue_fin(struct link *l, uint32_t recv_id, uint32_t status)
{
	/* Queued whatever the link's state: control frames are sequenced
	 * and outlive a broken connection. */
	struct link_frame *f = queue_ctl(l, SL_WIRE_FIN);

	if (!f)
		return;
	f->ctl_recv_id = recv_id;
	f->ctl_status = status;
}

/* Queue an RTR; @offset bytes of @len are in place already (an RTR sent
 * again after a reconnect). */
static void queue_rtr_from(struct link *l, uint64_t send_id, uint32_t recv_id, uint64_t raddr,
			   uint64_t len, uint32_t rkey, uint32_t status, uint64_t offset)
{
	struct link_frame *f = queue_ctl(l, SL_WIRE_RTR);

	if (!f)
		return;
	f->ctl_send_id = send_id;
	f->ctl_recv_id = recv_id;
	f->rtr_raddr = raddr;
	f->rtr_len = len;
	f->rtr_rkey = rkey;
	f->ctl_status = status;
	f->rtr_offset = (uint32_t)offset;	/* <= len <= SL_WIRE_RNDV_MAX */
}

static void queue_rtr(struct link *l, uint64_t send_id, uint32_t recv_id, uint64_t raddr,
		      uint64_t len, uint32_t rkey, uint32_t status)
{
	queue_rtr_from(l, send_id, recv_id, raddr, len, rkey, status, 0);
}

/* What link_post_backlog() would find to post, without posting it. */
static bool link_can_post(const struct link *l)
{
	const struct xport_ops *ops = l->d->xp->ops;
	const struct link_frame *f = TAILQ_FIRST(&l->backlog);

	if (l->state != LINK_UP || !l->conn)
		return false;
	/* A control frame refused once (no SQ room, or no grant for an
	 * RTR) is driven again by the completion or the revoke that frees
	 * what it lacks (both kick the engine), not by spinning. */
	if (f && !is_send(f))
		return !f->deferred && ops->sq_space(l->conn) > 0;
	if (!data_space(l) || ops->sq_bytes(l->conn) >= LINK_TX_BUDGET)
		return false;
	return (f && link_credits_left(l)) || !TAILQ_EMPTY(&l->writes);
}

bool link_any_can_post(const struct daemon *d)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (link_can_post(d->links[i]))
			return true;
	return false;
}

unsigned link_flush_all(struct daemon *d, bool force_ack)
{
	unsigned posted = 0;
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		struct link_frame *f;

		while ((f = TAILQ_FIRST(&l->reap))) {
			TAILQ_REMOVE(&l->reap, f, wlink);
			f->in_reap = false;
			send_try_finish(l, f);	/* else at its last completion */
		}
		if (l->state != LINK_UP)
			continue;
		posted += link_post_backlog(l, force_ack);
		if (l->conn)
			d->xp->ops->flush(l->conn);
	}
	return posted;
}

/* ---- rendezvous: sending side ---- */

static struct link_frame *find_rndv_send(struct link *l, uint64_t send_id)
{
	struct link_frame *f;

	TAILQ_FOREACH(f, &l->rndv_tx, rlink)
		if (f->send_id == send_id)
			return f;
	return NULL;
}

static void start_writes(struct link *l, struct link_frame *f)
{
	f->in_writes = true;
	TAILQ_INSERT_TAIL(&l->writes, f, wlink);
	l->n_writes++;
	daemon_wake(l->d);
}

/* The source registration failed or could not be had in time: the
 * receiver gets its receive back, the send its status. */
static void send_reg_failed(struct link *l, struct link_frame *f, int err)
{
	int status = rcache_status(err, false);

	link_queue_fin(l, f->recv_id, (uint32_t)status);
	send_decide(l, f, status);
}

/*
 * A waiting source registration is settled.  This runs inside the cache
 * (a put, a cancel, an expiry), possibly while a caller walks this link's
 * lists, so a failure only decides the send and parks it on the reap
 * list; the next pass finishes it.
 */
static void send_reg_done(void *arg, int err, const struct rcache_mr *mr)
{
	struct link_frame *f = arg;
	struct link *l = link_find(f->desc.q->d, f->desc.peer.node);

	f->reg_waiting = false;
	if (err) {
		int status = rcache_status(err, false);

		link_queue_fin(l, f->recv_id, (uint32_t)status);
		send_set_status(l, f, status);
		f->in_reap = true;
		TAILQ_INSERT_TAIL(&l->reap, f, wlink);
		daemon_wake(l->d);
		return;
	}
	f->mr = mr;
	if (!f->rtr_stale)
		start_writes(l, f);	/* else on the RTR sent again */
}

/* Why rendezvous send @send_id ended before its RTR: SL_ERR_CANCELED (the
 * receiver hears SL_ERR_NO_ENDPOINT) unless it is remembered. */
static uint32_t gone_status(const struct link *l, uint64_t send_id)
{
	uint32_t i;

	for (i = 0; i < LINK_GONE_MAX; i++)
		if (l->gone[i].send_id == send_id)
			return (uint32_t)l->gone[i].status;
	return SL_ERR_CANCELED;
}

static int process_rtr(struct link *l, const struct sl_wire_frame *wf)
{
	struct daemon *d = l->d;
	struct link_frame *f = find_rndv_send(l, wf->u.rtr.send_id);
	int rc;

	if (!f || frame_decided(f)) {
		/* Its send was cancelled (the client closed its queue) or
		 * failed (peer timeout): give the receive back with the
		 * reason, or (an abort) let the receiver release it. */
		log_debug("link %s: RTR for finished send %llu", l->peer->name,
			  (unsigned long long)wf->u.rtr.send_id);
		if (wf->u.rtr.status == SL_OK || wf->u.rtr.recv_id)
			link_queue_fin(l, wf->u.rtr.recv_id,
				       f ? (uint32_t)f->status : gone_status(l, wf->u.rtr.send_id));
		return 0;
	}
	if (f->recv_id && wf->u.rtr.status != SL_OK && wf->u.rtr.recv_id == f->recv_id) {
		/* An abort: the receiving client went away.  Stop writing
		 * and say so with a FIN, unless the last write is on its way
		 * (its immediate releases the receiver). */
		writes_remove(l, f);
		if (!f->last_posted)
			link_queue_fin(l, f->recv_id, wf->u.rtr.status);
		send_decide(l, f, (int)wf->u.rtr.status);
		return 0;
	}
	if (f->recv_id && !f->rtr_stale) {
		peer_warn(l, "link %s: second RTR for rendezvous %llu", l->peer->name,
			  (unsigned long long)wf->u.rtr.send_id);
		return -EPROTO;
	}
	/* A first answer comes from whoever has the RTS: it is on the
	 * wire (not back in the backlog after a resume), and the RTR's ack
	 * covers it, so that the RTS leaves the unacked list with this
	 * frame and is never sent again once the rendezvous owns it
	 * (link_resume). */
	if (!f->recv_id && (f->owner != FO_WIRE || (f->where == FL_UNACKED && wf->ack < f->seq))) {
		log_warn("link %s: RTR for rendezvous %llu whose RTS it cannot have (ack %llu)",
			 l->peer->name, (unsigned long long)wf->u.rtr.send_id,
			 (unsigned long long)wf->ack);
		return -EPROTO;
	}
	if (wf->u.rtr.status != SL_OK) {
		send_decide(l, f, (int)wf->u.rtr.status);
		return 0;
	}
	if (f->rtr_stale) {
		/* The connection broke after the first RTR: write again what
		 * the receiver does not have in place (the same bytes to the
		 * same place: writes are idempotent), from its offset on.
		 * The decoder checked offset <= len. */
		if (wf->u.rtr.recv_id != f->recv_id || wf->u.rtr.len != f->wlen) {
			peer_warn(l, "link %s: RTR sent again for rendezvous %llu changed",
				  l->peer->name, (unsigned long long)wf->u.rtr.send_id);
			return -EPROTO;
		}
		if (!frame_move(l, f, OWN(FO_RNDV), FO_RNDV))
			return -EPROTO;
		f->rtr_stale = false;
		f->raddr = wf->u.rtr.raddr;
		f->rkey = wf->u.rtr.rkey;
		f->w_off = wf->u.rtr.offset;
		l->rndv_restarts++;
		l->rndv_resumed_bytes += wf->u.rtr.offset;
		if (f->mr || f->wlen == 0)
			start_writes(l, f);
		return 0;	/* or when its registration comes */
	}
	if (wf->u.rtr.len > f->desc.len || wf->u.rtr.offset) {
		peer_warn(l, "link %s: first RTR asks %llu bytes from %u of a %llu-byte message",
			  l->peer->name, (unsigned long long)wf->u.rtr.len, wf->u.rtr.offset,
			  (unsigned long long)f->desc.len);
		return -EPROTO;
	}
	if (!frame_move(l, f, OWN(FO_WIRE), FO_RNDV))
		return -EPROTO;
	f->recv_id = wf->u.rtr.recv_id;
	f->raddr = wf->u.rtr.raddr;
	f->rkey = wf->u.rtr.rkey;
	f->wlen = wf->u.rtr.len;
	if (f->wlen == 0) {
		start_writes(l, f);	/* one empty write carries the immediate */
		return 0;
	}
	rcache_req_init(&f->req, send_reg_done, f);
	rc = rcache_get(d->rc, f->desc.q->id, f->desc.addr, f->wlen, ev_now(d->loop), &f->req, &f->mr);
	if (rc == 0) {
		start_writes(l, f);
	} else if (rc == -EINPROGRESS) {
		f->reg_waiting = true;
		daemon_rcache_arm(d);
	} else {
		send_reg_failed(l, f, rc);
	}
	return 0;
}

/*
 * The receiver has the data and completed its receive: only now does the
 * send complete SL_OK.  A write that merely left this daemon (or that a
 * NIC acknowledged) could still die with the receiving daemon; then the
 * link fails the send instead.  Its last write may still wait for its own
 * completion (wrs > 0): the send finishes then.
 */
static int process_done(struct link *l, uint64_t send_id)
{
	struct link_frame *f = find_rndv_send(l, send_id);

	if (!f && send_id <= l->next_send_id)
		return 0;	/* failed here already (peer timeout) */
	if (!f || !f->recv_id || frame_decided(f)) {
		peer_warn(l, "link %s: DONE for rendezvous %llu that wrote nothing", l->peer->name,
			  (unsigned long long)send_id);
		return -EPROTO;
	}
	l->rndv_tx_done++;
	send_decide(l, f, SL_OK);
	return 0;
}

/* ---- rendezvous: receiving side ---- */

static struct rndv_recv *find_rndv_recv(struct link *l, uint32_t recv_id)
{
	struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &l->rndv_rx, link)
		if (rr->recv_id == recv_id)
			return rr;
	return NULL;
}

/* End @rr's grant: no write of the peer lands in its buffer after this. */
static void rndv_recv_revoke(struct rndv_recv *rr)
{
	struct link *l = rr->l;

	if (rr->grant_rkey && l->conn) {
		l->d->xp->ops->revoke(l->conn, rr->grant_rkey);
		/* An RTR refused for want of a grant may go now. */
		if (l->n_backlog)
			daemon_wake(l->d);
	}
	rr->grant_rkey = 0;
}

/* Unlink @rr and return its registration and queue; @r is the caller's. */
static void rndv_recv_free(struct rndv_recv *rr)
{
	struct link *l = rr->l;

	rndv_recv_revoke(rr);	/* before the registration can go */
	TAILQ_REMOVE(&l->rndv_rx, rr, link);
	l->n_rndv_rx--;
	TAILQ_REMOVE(&rr->q->claims, rr, qlink);
	if (rr->reg_waiting)
		rcache_cancel(l->d->rc, &rr->req);
	if (rr->mr)
		rcache_put(l->d->rc, rr->mr);
	queue_put(rr->q);
	free(rr);
}

/* The data is in place: the receive completes, and the sender hears so. */
static void rndv_recv_complete(struct rndv_recv *rr)
{
	struct match_recv *r = rr->r;
	struct link_frame *f = queue_ctl(rr->l, SL_WIRE_DONE);

	if (f)
		f->ctl_send_id = rr->send_id;
	rr->l->rndv_rx_done++;
	rr->l->msgs_rx++;
	rr->l->bytes_rx += rr->wlen;
	queue_complete(&r->desc, rr->msg_len <= r->desc.len ? SL_OK : SL_ERR_TRUNCATED,
		       &(struct desc_msg){ .src = rr->src, .sender_uid = rr->sender_uid,
					   .tag = rr->tag, .len = rr->msg_len });
	rndv_recv_free(rr);
	free(r);
}

/*
 * The receiving client of @rr is gone (its queue died): nothing will read
 * a completion, but the sender must hear @status, and must stop writing
 * before the registration and the queue's memory go.  Before our RTR a
 * refusal ends it at once; after, an RTR with @status and our recv_id
 * aborts it, and @rr stays (aborted) until the sender's FIN, or the
 * immediate of a last write already on its way, arrives.
 */
static void rndv_recv_abort(struct rndv_recv *rr, int status)
{
	struct link *l = rr->l;

	free(rr->r);
	rr->r = NULL;
	l->rndv_rx_failed++;
	if (!rr->rtr_sent) {
		queue_rtr(l, rr->send_id, 0, 0, 0, 0, (uint32_t)status);
		rndv_recv_free(rr);
		return;
	}
	rr->aborted = true;
	queue_rtr(l, rr->send_id, rr->recv_id, 0, 0, 0, (uint32_t)status);
}

/*
 * The rendezvous failed before any data moved.  The receive goes back to
 * its place, as if the message had never matched it, unless a message it
 * would also have taken has met a later-posted receive meanwhile: then
 * going back would let a still later message from that source land before
 * that one in post order (MPI's non-overtaking rule), so the receive
 * completes with @status instead, its buffer untouched.
 */
static void rndv_recv_giveback(struct rndv_recv *rr, int status)
{
	struct queue *q = rr->q;
	struct match_recv *r = rr->r;
	bool overtaken = rr->overtaken;

	queue_get(q);
	if (q->d->stopping)
		status = SL_ERR_CANCELED;	/* whatever failed, we are going */
	if (overtaken) {
		rr->l->rndv_rx_failed++;
		queue_complete(&r->desc, status, &(struct desc_msg){ .src = rr->src,
				.sender_uid = SL_UID_UNKNOWN, .tag = rr->tag, .len = rr->msg_len });
	}
	rndv_recv_free(rr);
	if (overtaken)
		free(r);
	else
		l_up(rr->l)->repost(q, r);
	queue_put(q);
}

/* The status a receive given back completes with, from the reason. */
static int giveback_status(uint32_t fin_status)
{
	/* The sender's queue closed: for the receiver, its source is gone. */
	return fin_status == SL_ERR_CANCELED ? SL_ERR_NO_ENDPOINT : (int)fin_status;
}

/* Where the data of @rr goes, in the transport's terms (the RTR's raddr). */
static uint64_t rndv_recv_raddr(const struct rndv_recv *rr)
{
	return rr->mr ? (uintptr_t)(rr->q->arena + rr->r->desc.addr) : 0;
}

/* (Again, after a reconnect: for what is not in place yet.)  Its key is
 * the grant's, made when it is posted (rtr_grant); the registration's own
 * key opens nothing to the peer. */
static void rndv_send_rtr(struct rndv_recv *rr)
{
	rr->rtr_sent = true;
	rr->rtr_seq = 0;	/* until it goes out */
	queue_rtr_from(rr->l, rr->send_id, rr->recv_id, rndv_recv_raddr(rr), rr->wlen, 0,
		       SL_OK, rr->placed);
}

static void recv_reg_done(void *arg, int err, const struct rcache_mr *mr)
{
	struct rndv_recv *rr = arg;

	rr->reg_waiting = false;
	if (err) {
		int status = rcache_status(err, true);

		queue_rtr(rr->l, rr->send_id, 0, 0, 0, 0, (uint32_t)status);
		rndv_recv_giveback(rr, status);
		return;
	}
	rr->mr = mr;
	rndv_send_rtr(rr);
}

void link_rndv_refuse(struct daemon *d, uint32_t node, uint64_t send_id, uint32_t status)
{
	struct link *l = link_find(d, node);

	if (l)
		queue_rtr(l, send_id, 0, 0, 0, 0, status);
}

bool link_rndv_recv_start(struct daemon *d, struct queue *q, struct match_recv *r,
			  sl_addr_t src, uint32_t sender_uid, uint64_t tag, uint64_t msg_len,
			  uint64_t send_id)
{
	struct link *l = link_find(d, src.node);
	struct rndv_recv *rr;
	int rc, status;

	/* A link that is down still takes it: the RTR waits for the
	 * reconnect like every control frame.  (Past peer_timeout_ms the
	 * peer's RTS headers were dropped, so none can match here.) */
	if (!l)
		return false;
	rr = calloc(1, sizeof(*rr));
	if (!rr) {
		queue_rtr(l, send_id, 0, 0, 0, 0, SL_NAK_BUSY);
		return false;
	}
	rr->l = l;
	rr->q = q;
	rr->r = r;
	rr->src = src;
	rr->sender_uid = sender_uid;
	rr->tag = tag;
	rr->msg_len = msg_len;
	rr->wlen = msg_len < r->desc.len ? msg_len : r->desc.len;
	rr->send_id = send_id;
	if (++l->next_recv_id == 0)
		l->next_recv_id = 1;
	rr->recv_id = l->next_recv_id;
	queue_get(q);
	TAILQ_INSERT_TAIL(&l->rndv_rx, rr, link);
	l->n_rndv_rx++;
	TAILQ_INSERT_TAIL(&q->claims, rr, qlink);
	if (rr->wlen == 0) {
		rndv_send_rtr(rr);
		return true;
	}
	rcache_req_init(&rr->req, recv_reg_done, rr);
	rc = rcache_get(d->rc, q->id, r->desc.addr, rr->wlen, ev_now(d->loop), &rr->req, &rr->mr);
	if (rc == 0) {
		rndv_send_rtr(rr);
		return true;
	}
	if (rc == -EINPROGRESS) {
		rr->reg_waiting = true;
		daemon_rcache_arm(d);
		return true;
	}
	status = rcache_status(rc, true);
	queue_rtr(l, send_id, 0, 0, 0, 0, (uint32_t)status);
	rr->r = NULL;
	rndv_recv_free(rr);
	if (status != SL_ERR_REG_LIMIT)
		return false;
	/* No retry would register that much here: back in its place the
	 * receive would fail every such message without its owner knowing. */
	l->rndv_rx_failed++;
	queue_complete(&r->desc, status, &(struct desc_msg){ .src = src,
			.sender_uid = SL_UID_UNKNOWN, .tag = tag, .len = msg_len });
	free(r);
	return true;
}

static int process_fin(struct link *l, uint32_t recv_id, uint32_t status)
{
	struct rndv_recv *rr = find_rndv_recv(l, recv_id);

	if (!rr && status != SL_OK && recv_id <= l->next_recv_id)
		return 0;	/* given back here already (peer timeout) */
	if (!rr || !rr->rtr_sent) {
		peer_warn(l, "link %s: write or FIN for unknown rendezvous %u", l->peer->name,
			  recv_id);
		return -EPROTO;
	}
	if (rr->aborted) {
		rndv_recv_free(rr);	/* no write of it will come now */
		return 0;
	}
	if (status == SL_OK)
		rndv_recv_complete(rr);
	else
		rndv_recv_giveback(rr, giveback_status(status));
	daemon_wake(l->d);
	return 0;
}

/* Take every request of this link out of the registration queue.  A
 * cancel may serve other waiters, whose callbacks may end operations, so
 * each walk starts again from the head; the link is down, so no new
 * request of it can be queued meanwhile. */
static void cancel_reg_waits(struct link *l)
{
	struct link_frame *f;
	struct rndv_recv *rr;

again_tx:
	TAILQ_FOREACH(f, &l->rndv_tx, rlink) {
		if (f->reg_waiting) {
			f->reg_waiting = false;
			rcache_cancel(l->d->rc, &f->req);
			goto again_tx;
		}
	}
again_rx:
	TAILQ_FOREACH(rr, &l->rndv_rx, link) {
		if (rr->reg_waiting) {
			rr->reg_waiting = false;
			rcache_cancel(l->d->rc, &rr->req);
			goto again_rx;
		}
	}
}

/* An RTR of ours went out (@f, just posted): remember its seq, so that a
 * reconnect knows whether the peer had it. */
static void note_rtr_posted(struct link *l, const struct link_frame *f)
{
	struct rndv_recv *rr = find_rndv_recv(l, f->ctl_recv_id);

	if (rr)
		rr->rtr_seq = f->seq;
}

/*
 * RTR @f is about to be posted: give it a grant of exactly its receive's
 * range on the current connection (one per rendezvous and connection;
 * an RTR sent again on the same connection names the same grant).
 * Returns 0 (post it), or -ENOMEM (the transport is out of grants or SQ
 * room for a bind: it waits in the backlog like a refused post; a revoke
 * or completion drives it again).  Any other failure is a bug: the
 * rendezvous is refused with SL_NAK_BUSY and @f turned into that
 * refusal, so the sender is never left waiting.
 */
static int rtr_grant(struct link *l, struct link_frame *f)
{
	struct rndv_recv *rr;
	int rc;

	if (f->ctl_status != SL_OK || f->rtr_len == 0)
		return 0;
	rr = find_rndv_recv(l, f->ctl_recv_id);
	if (!rr || rr->aborted || !rr->mr)
		return 0;
	if (!rr->grant_rkey) {
		rc = l->d->xp->ops->grant(l->conn, rr->mr->handle, rndv_recv_raddr(rr),
					  rr->wlen, &rr->grant_rkey);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) {
			log_err("link %s: no grant for rendezvous %u: %s", l->peer->name,
				rr->recv_id, strerror(-rc));
			rr->grant_rkey = 0;
			f->ctl_status = SL_NAK_BUSY;
			f->ctl_recv_id = 0;
			f->rtr_raddr = f->rtr_len = 0;
			f->rtr_rkey = f->rtr_offset = 0;
			rndv_recv_giveback(rr, SL_NAK_BUSY);
			return 0;
		}
	}
	f->rtr_rkey = rr->grant_rkey;
	return 0;
}

/* The connection is gone, and every grant with it (xport.h). */
static void rndv_recv_grants_lost(struct link *l)
{
	struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &l->rndv_rx, link)
		rr->grant_rkey = 0;
}

/*
 * A write of @rr's rendezvous was refused (outside its grant, or after
 * it): the rendezvous fails with @status on both sides, as an access
 * error, and its grant ends at once, so no later write of it lands
 * either.  The receive completes with @status (its buffer may hold part
 * of the data); the sender hears it through the abort's RTR.  The link
 * and every other rendezvous go on.
 */
static void rndv_recv_fail(struct rndv_recv *rr, int status)
{
	rndv_recv_revoke(rr);
	if (rr->aborted)
		return;
	queue_complete(&rr->r->desc, status, &(struct desc_msg){ .src = rr->src,
			.sender_uid = SL_UID_UNKNOWN, .tag = rr->tag, .len = rr->msg_len });
	rndv_recv_abort(rr, status);
}

static struct rndv_recv *find_rndv_recv_by_grant(struct link *l, uint32_t rkey)
{
	struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &l->rndv_rx, link)
		if (rr->grant_rkey == rkey)
			return rr;
	return NULL;
}

/* Forget every RTR for @recv_id not yet acked: queued, or sent on a
 * connection that broke (the peer may not have it; if it does, it has
 * stopped writing since, and waits for the next RTR). */
static void drop_queued_rtr(struct link *l, uint32_t recv_id)
{
	struct link_frame *f, *next;

	for (f = TAILQ_FIRST(&l->backlog); f && !is_send(f); f = next) {
		next = TAILQ_NEXT(f, link);
		if (f->type == SL_WIRE_RTR && f->ctl_recv_id == recv_id)
			ctl_free(l, f);
	}
	for (f = TAILQ_FIRST(&l->unacked); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (f->type == SL_WIRE_RTR && f->ctl_recv_id == recv_id)
			ctl_free(l, f);
	}
}

/*
 * Every operation waiting on this link ends with @status: sends queued,
 * in flight or in rendezvous; receiving rendezvous give their receive
 * back (completing it with @status only where it was overtaken); the
 * unexpected RTS headers from the peer go.  @tell: the peer is the same
 * incarnation and will hear of it (it may not have given up itself): each
 * rendezvous it started is refused with @status.  Control frames stay for
 * it, unless @drop_ctl (a new incarnation, or we are stopping).
 */
static void fail_everything(struct link *l, int status, bool tell, bool drop_ctl)
{
	struct daemon *d = l->d;
	struct link_frame *f, *next;
	struct rndv_recv *rr;

	/* First out of the registration queue: a registration freed below
	 * must not call back into an operation of this link while we walk
	 * its lists. */
	cancel_reg_waits(l);
	fail_list(l, &l->backlog, status, drop_ctl);
	for (f = TAILQ_FIRST(&l->unacked); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (is_send(f))
			send_decide(l, f, status);	/* its seq is abandoned */
		else if (drop_ctl)
			ctl_free(l, f);
	}
	/* Not "while first": a send whose WR were still posted would stay
	 * (it finishes at its last completion) and that loop never end. */
	for (f = TAILQ_FIRST(&l->rndv_tx); f; f = next) {
		next = TAILQ_NEXT(f, rlink);
		send_decide(l, f, status);
	}
	l_up(l)->drop_rndv_from(d, l->node_id, status, tell);
	while ((rr = TAILQ_FIRST(&l->rndv_rx))) {
		if (rr->aborted) {
			/* Its abort stays queued for the peer (or goes with a
			 * dead one); nothing writes until it has been heard. */
			rndv_recv_free(rr);
			continue;
		}
		if (tell) {
			/* Its buffer goes back: no RTR of ours may still send
			 * the peer writing into it. */
			drop_queued_rtr(l, rr->recv_id);
			queue_rtr(l, rr->send_id, 0, 0, 0, 0, (uint32_t)status);
		}
		rndv_recv_giveback(rr, status);
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
	if (l->redial_delay > l->d->cfg.redial_max_ms / 1e3)
		l->redial_delay = l->d->cfg.redial_max_ms / 1e3;
}

static void timeout_arm(struct link *l);

/*
 * The connection broke (or never came up).  Nothing fails here: every
 * sent frame stays in the unacked list until the next HELLO says which
 * the peer has, control frames stay queued, and rendezvous wait.  What
 * the broken connection took with it: the RDMA writes in flight, so each
 * rendezvous past its RTR writes again only on an RTR sent again.
 */
static void link_timed_out(struct link *l, bool bye);

/*
 * A write the peer's device refused (verbs: IBV_WC_REM_ACCESS_ERR, which
 * breaks the QP) went outside its grant: its rendezvous fails
 * SL_ERR_ACCESS at both ends (the FIN tells the receiver), as the tcp
 * transport's check makes it fail, instead of being written again after
 * the reconnect and breaking the next connection too.  Called once every
 * WR has completed (the connection is gone).
 */
static void rndv_tx_refused(struct link *l)
{
	struct link_frame *f;

again:
	TAILQ_FOREACH(f, &l->rndv_tx, rlink) {
		if (!f->write_refused)
			continue;
		f->write_refused = false;
		if (frame_decided(f))
			continue;
		link_queue_fin(l, f->recv_id, SL_ERR_ACCESS);
		if (send_decide(l, f, SL_ERR_ACCESS))
			goto again;	/* @f left the list */
	}
}

static void link_went_down(struct link *l, int err)
{
	struct link_frame *f;

	snprintf(l->last_error, sizeof(l->last_error), "%s: %s",
		 l->state == LINK_UP ? "connection lost" : "connecting",
		 err ? strerror(err < 0 ? -err : err) : "closed");
	/* Stopping, or the peer said BYE: said elsewhere, not a fault. */
	if (l->state == LINK_UP && !l->bye_rx && !l->d->stopping)
		peer_warn(l, "link %s: down: %s (%u frames unacknowledged, %u queued)",
			  l->peer->name, strerror(err < 0 ? -err : err), l->n_unacked,
			  l->n_backlog);
	/* The peer timeout counts from the last time the link was up (a
	 * connection that never got past its HELLO does not restart it). */
	if (l->state == LINK_UP) {
		l->down_since = ev_now(l->d->loop);
		l->updown_at = l->down_since;
		/* Broken for want of acks, or of any frame: silent since the
		 * last one. */
		if (err == -ETIMEDOUT) {
			ev_tstamp heard = l->heard_at > l->rx_at ? l->heard_at : l->rx_at;

			if (heard < l->down_since)
				l->down_since = heard;
		}
	}
	l->conn = NULL;
	l->state = LINK_DOWN;
	ev_timer_stop(l->d->loop, &l->retry_w);
	ev_timer_stop(l->d->loop, &l->ack_w);
	ev_timer_stop(l->d->loop, &l->alive_w);
	/* The transport has completed every WR (flush errors) before
	 * closed(), so nothing is posted any more. */
	while ((f = TAILQ_FIRST(&l->writes)))
		writes_remove(l, f);
	rndv_recv_grants_lost(l);
	TAILQ_FOREACH(f, &l->rndv_tx, rlink) {
		if (!f->recv_id || frame_decided(f))
			continue;
		f->rtr_stale = true;
		f->w_off = 0;
		f->last_posted = false;
		f->write_failed = false;
	}
	rndv_tx_refused(l);
	if (l->d->stopping)
		return;
	if (l->bye_rx) {
		/* It stopped on purpose: no point waiting for it. */
		l->bye_rx = false;
		ev_timer_stop(l->d->loop, &l->timeout_w);
		if (!l->timed_out)
			link_timed_out(l, true);
	} else {
		timeout_arm(l);
	}
	link_schedule_redial(l);
}

/* The first failure of an episode is worth a warning; retries are not. */
static void link_dial_failed(struct link *l, int err)
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
		timeout_arm(l);
		link_schedule_redial(l);
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
	if (l->state == LINK_DOWN)
		link_dial(l);
}

/*
 * A starting accepter tells each peer that dials it that it is back (the
 * peer would otherwise learn it at its next redial, up to redial_max_ms
 * later): a short connection carrying our HELLO, closed once it has left.
 * A peer that is not there is not asked again: it dials us when it
 * starts.  dial_w bounds a connect that hangs.  Only over transports
 * whose short connections are cheap (xport_ops.short_connections: tcp);
 * on verbs the peer learns at its next redial.
 */
static void link_nudge(struct link *l)
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

static void nudge_connected(struct link *l, struct xport_conn *c, int err)
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
	hello_fill(l, &wf);
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
	l->nudges_tx++;
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
static void nudge_heard(struct link *l, struct xport_conn *c)
{
	struct daemon *d = l->d;

	l->nudges_rx++;
	d->xp->ops->close(c, -ECONNABORTED);
	if (d->stopping)
		return;
	if (l->state == LINK_DOWN) {
		log_info("link %s: the peer says it started: dialing now", l->peer->name);
		ev_timer_stop(d->loop, &l->redial_w);
		l->redial_delay = d->cfg.redial_min_ms / 1e3;
		link_dial(l);
	} else if (l->state == LINK_UP && d->xp->ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK };

		if (post_frame(l, &wf, NULL, 0) == 0)
			d->xp->ops->flush(l->conn);
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
	l->timed_out = true;
	if (bye)
		peer_info(l, "link %s: the peer stopped (BYE): failing %u queued sends, %u "
			  "unacknowledged, %u rendezvous sending, %u receiving, and new ones "
			  "until it is back", l->peer->name, l->n_backlog - l->n_ctl,
			  l->n_unacked_data, l->n_rndv_tx, l->n_rndv_rx);
	else
		log_warn("link %s: down for %.1f s (peer_timeout_ms %u): failing %u queued "
			 "sends, %u unacknowledged, %u rendezvous sending, %u receiving, and new "
			 "ones until it is back", l->peer->name, ev_now(l->d->loop) - l->down_since,
			 l->d->cfg.peer_timeout_ms, l->n_backlog - l->n_ctl, l->n_unacked_data,
			 l->n_rndv_tx, l->n_rndv_rx);
	if (!bye)
		l->peer_timeouts++;
	if (!bye && !l->dialer && !l->connects)
		link_diag_never_dialed(l);
	/* After a BYE the incarnation is over: nothing to tell it later. */
	fail_everything(l, SL_ERR_PEER_DOWN, !bye, bye);
	l_up(l)->fail_recvs_from(l->d, l->node_id, SL_ERR_PEER_DOWN);
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
static void timeout_arm(struct link *l)
{
	ev_tstamp left;

	if (l->timed_out || ev_is_active(&l->timeout_w))
		return;
	left = l->down_since + l->d->cfg.peer_timeout_ms / 1e3 - ev_now(l->d->loop);
	ev_timer_set(&l->timeout_w, left > 0 ? left : 0, 0.0);
	ev_timer_start(l->d->loop, &l->timeout_w);
}

static bool judged_silent(struct link *l, ev_timer *w, ev_tstamp heard, ev_tstamp limit);

/* No ack progress for ack_timeout_ms with frames waiting: the peer or the
 * path is gone silently (no RST).  Break the connection; the redial and
 * the HELLO then say what arrived, and the peer timeout runs meanwhile. */
static void ack_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
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
	l->ack_timeouts++;
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

/*
 * Every LINK_KEEPALIVE while up: say something if we have been quiet that
 * long (so the peer hears us at least every 2 x LINK_KEEPALIVE, whatever
 * the phase of the two timers), and give up on a connection that has been
 * silent for ack_timeout_ms (times the back-off), but not less than
 * LINK_SILENCE_MIN.  Without it an idle dialer whose peer broke the
 * connection in a partition would never redial.
 *
 * Read, then judge (judged_silent).  A stall of ours is recognised here
 * by this timer running late, and counted apart (loop_watch).
 */
static void alive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;
	ev_tstamp now = ev_now(loop), limit = silence_limit(l, l->ack_backoff), heard;

	(void)revents;
	if (l->state != LINK_UP)
		return;
	loop_watch_late(l->d, l->alive_due);
	l->alive_due = now + LINK_KEEPALIVE;
	heard = link_heard_at(l);
	if (judged_silent(l, w, heard, limit)) {
		l->silences++;
		log_warn("link %s: nothing heard for %.0f ms (a frame %.0f ms ago): reconnecting",
			 l->peer->name, (now - heard) * 1e3, (now - l->rx_at) * 1e3);
		backoff_grow(l);
		l->d->xp->ops->close(l->conn, -ETIMEDOUT);
		return;
	}
	backoff_review(l, now);
	if (now - l->tx_at >= LINK_KEEPALIVE &&
	    l->d->xp->ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK };

		if (post_frame(l, &wf, NULL, 0) == 0)
			l->d->xp->ops->flush(l->conn);
	}
}

/* Send @f cannot have reached the peer's old incarnation: out of every
 * list and onto @keep, as if never posted (a new seq when it goes, EAGER
 * or RTS by the new incarnation's eager_max). */
static void restart_keep(struct link *l, struct link_frame *f, struct link_frame_list *keep)
{
	if (f->owner == FO_WIRE && !frame_move(l, f, OWN(FO_WIRE), FO_BACKLOG))
		return;
	list_unlink(l, f);
	f->type = SL_WIRE_EAGER;
	f->seq = 0;
	f->maybe_reached = false;
	TAILQ_INSERT_TAIL(keep, f, link);
}

/* Sends not yet decided that are unacknowledged or in rendezvous. */
static uint32_t sends_posted(const struct link *l)
{
	const struct link_frame *f;
	uint32_t n = 0;

	TAILQ_FOREACH(f, &l->unacked, link)
		n += is_send(f) && !frame_decided(f);
	TAILQ_FOREACH(f, &l->rndv_tx, rlink)
		n += f->where != FL_UNACKED && !frame_decided(f);
	return n;
}

/*
 * The peer came back as a new incarnation: nothing of the old one will
 * ever answer.  What may have reached it fails SL_ERR_PEER_RESTARTED, each
 * once: sends whose frame the transport handed on (maybe_reached), every
 * rendezvous past its RTS, and the rendezvous it was sending us.  Sends
 * that cannot have reached it (never posted, or their WR completed
 * XPORT_WR_UNSENT) go to the new incarnation, in their order: unacked
 * ones were posted before any in the backlog.  Both streams start again
 * from seq 1.
 */
static void link_peer_restarted(struct link *l, uint64_t incarnation)
{
	struct link_frame_list keep = TAILQ_HEAD_INITIALIZER(keep);
	struct link_frame *f, *next;
	uint32_t kept = 0, failed;

	l->peer_restarts++;
	for (f = TAILQ_FIRST(&l->unacked); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (is_send(f) && !f->maybe_reached && !f->wrs && !frame_decided(f)) {
			restart_keep(l, f, &keep);
			kept++;
		}
	}
	for (f = TAILQ_FIRST(&l->backlog); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (is_send(f)) {
			restart_keep(l, f, &keep);
			kept++;
		}
	}
	failed = sends_posted(l);
	l->restart_failed += failed;
	l->restart_kept += kept;
	peer_warn(l, "link %s: peer restarted (incarnation %016llx, was %016llx): %u sends that "
		  "may have reached it fail, %u that cannot have go to the new one; %u rendezvous "
		  "receiving end", l->peer->name, (unsigned long long)incarnation,
		  (unsigned long long)l->peer_incarnation, failed, kept, l->n_rndv_rx);
	fail_everything(l, SL_ERR_PEER_RESTARTED, false, true);
	l->tx_seq = l->rx_seq = l->ack_sent = l->ack_rx = 0;
	while ((f = TAILQ_FIRST(&keep))) {
		TAILQ_REMOVE(&keep, f, link);
		f->where = FL_BACKLOG;
		TAILQ_INSERT_TAIL(&l->backlog, f, link);
		l->n_backlog++;
	}
}

/*
 * Resume after a HELLO from the same incarnation: the peer has our frames
 * up to @peer_rx.  Those stay in the unacked list until an ack in the
 * stream covers them (a NAK for one may come first); the rest go back to
 * the head of the backlog, control frames ahead of data as always, each
 * kind in its order, and get new seqs from @peer_rx on as they go out.
 */
static int link_resume(struct link *l, uint64_t peer_rx)
{
	struct link_frame *f, *prev, *first_data;
	struct rndv_recv *rr;

	if (peer_rx > l->tx_seq) {
		peer_warn(l, "link %s: HELLO says %llu frames arrived of %llu sent", l->peer->name,
			  (unsigned long long)peer_rx, (unsigned long long)l->tx_seq);
		return -EPROTO;
	}
	/* It acked more than that before: numbering on from there would
	 * give new frames seqs it takes for duplicates. */
	if (peer_rx < l->ack_rx) {
		peer_warn(l, "link %s: HELLO says %llu frames arrived, but %llu were acked",
			  l->peer->name, (unsigned long long)peer_rx,
			  (unsigned long long)l->ack_rx);
		return -EPROTO;
	}
	for (f = TAILQ_LAST(&l->unacked, link_frame_list); f && f->seq > peer_rx; f = prev) {
		prev = TAILQ_PREV(f, link_frame_list, link);
		if (!frame_move(l, f, OWN(FO_WIRE), FO_BACKLOG))
			continue;
		TAILQ_REMOVE(&l->unacked, f, link);
		l->n_unacked--;
		f->seq = 0;
		f->where = FL_BACKLOG;
		l->n_backlog++;
		l->retransmits++;
		if (is_send(f)) {
			l->n_unacked_data--;
			TAILQ_FOREACH(first_data, &l->backlog, link)
				if (is_send(first_data))
					break;
			if (first_data)
				TAILQ_INSERT_BEFORE(first_data, f, link);
			else
				TAILQ_INSERT_TAIL(&l->backlog, f, link);
		} else {
			l->n_ctl++;
			TAILQ_INSERT_HEAD(&l->backlog, f, link);
		}
	}
	l->tx_seq = peer_rx;
	/* RTRs the peer had, for rendezvous whose writes the old connection
	 * cut: ask again.  (Those it did not have are in the backlog now.) */
	TAILQ_FOREACH(rr, &l->rndv_rx, link)
		if (rr->rtr_sent && !rr->aborted && rr->rtr_seq && rr->rtr_seq <= peer_rx)
			rndv_send_rtr(rr);
	return 0;
}

static void link_up(struct link *l)
{
	/* Frames over our eager_max are NAKed one by one, not fatal: the
	 * peer may be configured differently. */
	l->d->xp->ops->set_rx_limit(l->conn, SL_WIRE_PAYLOAD_MAX);
	l->state = LINK_UP;
	l->updown_at = ev_now(l->d->loop);
	l->timed_out = false;
	l->dial_warned = false;
	l->redial_delay = l->d->cfg.redial_min_ms / 1e3;
	l->connects++;
	ev_timer_stop(l->d->loop, &l->timeout_w);
	ev_timer_stop(l->d->loop, &l->dial_w);
	l->heard_at = l->rx_at = l->tx_at = ev_now(l->d->loop);
	backoff_window(l, l->rx_at);	/* down time proves nothing */
	l->alive_due = l->rx_at + LINK_KEEPALIVE;
	ev_timer_set(&l->alive_w, LINK_KEEPALIVE, LINK_KEEPALIVE);
	ev_timer_start(l->d->loop, &l->alive_w);
	/* Owe the peer an ack for what it sent before the break: the HELLO
	 * said how far it got, but only an ack in the stream completes. */
	l->ack_sent = 0;
	l->ack_pending_since = ev_time();
	if (!TAILQ_EMPTY(&l->unacked))
		ack_timer_start(l);
	peer_info(l, "link %s: up (%s, incarnation %016llx)", l->peer->name,
		  l->d->xp->ops->peer_name(l->conn), (unsigned long long)l->peer_incarnation);
	daemon_wake(l->d);
}

static void nudge_connected(struct link *l, struct xport_conn *c, int err);

static void up_connected(struct xport_conn *c, void *ctx, int err)
{
	struct link *l = ctx;

	if (c == l->nudge) {
		nudge_connected(l, c, err);
		return;
	}
	if (err) {
		link_dial_failed(l, err);
		l->conn = NULL;
		l->state = LINK_DOWN;
		timeout_arm(l);
		link_schedule_redial(l);
		return;
	}
	/* The handshake first (link_auth.h); our HELLO follows the
	 * accepter's proof. */
	l->state = LINK_HELLO;
	if (link_auth_dial_start(l) < 0) {
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
	struct link_frame *f = (struct link_frame *)(uintptr_t)(wr_id & ~(uint64_t)1);

	if (!l)
		return;
	if (c == l->nudge) {
		/* Our HELLO is out: an orderly close, after it. */
		l->d->xp->ops->close(c, 0);
		return;
	}
	/* An SQ slot is free: whatever waits for one may move next pass
	 * (any release re-drives the deferred work; Open MPI issue 92). */
	if (l->n_backlog || l->n_writes || l->rx_seq != l->ack_sent)
		daemon_wake(l->d);
	if (!f)
		return;	/* a control frame */
	f->wrs--;
	if (!(wr_id & 1))
		f->maybe_reached = status != XPORT_WR_UNSENT;
	/* An RDMA write error is followed by closed(), which fails the
	 * send; success waits for the receiver's DONE. */
	if ((wr_id & 1) && status)
		f->write_failed = true;
	if ((wr_id & 1) && status == -EACCES)
		f->write_refused = true;
	send_try_finish(l, f);
}

/* @ack is at most tx_seq: up_recv checked it before the frame acted. */
static int process_ack(struct link *l, uint64_t ack)
{
	struct link_frame *f, *next;

	if (ack <= l->ack_rx)
		return 0;
	l->ack_rx = ack;
	for (f = TAILQ_FIRST(&l->unacked); f && f->seq <= ack; f = next) {
		next = TAILQ_NEXT(f, link);
		if (f->type == SL_WIRE_RTS) {
			/* The RTS is in; the rendezvous goes on without it. */
			unacked_remove(l, f);
			send_try_finish(l, f);
		} else if (f->type == SL_WIRE_EAGER) {
			send_decide(l, f, SL_OK);
		} else {
			ctl_free(l, f);
		}
	}
	ack_timer_progress(l);
	return 0;
}

static int process_nak(struct link *l, const struct sl_wire_frame *wf)
{
	struct link_frame *f;

	l->naks_rx++;
	TAILQ_FOREACH(f, &l->unacked, link) {
		if (f->seq != wf->u.nak.nak_seq)
			continue;
		/* Only data frames are NAKed (sl_wire.h); one naming our
		 * RTR, FIN, DONE or NAK would complete no send. */
		if (!is_send(f))
			break;
		send_decide(l, f, (int32_t)wf->u.nak.status);
		return 0;
	}
	if (f) {
		peer_warn(l, "link %s: NAK for seq %llu, a control frame", l->peer->name,
			  (unsigned long long)wf->u.nak.nak_seq);
		return -EPROTO;
	}
	if (wf->u.nak.nak_seq <= l->tx_seq)
		return 0;	/* its send was cancelled already */
	peer_warn(l, "link %s: NAK for unknown seq %llu", l->peer->name,
		  (unsigned long long)wf->u.nak.nak_seq);
	return -EPROTO;
}

/* Sequence bookkeeping of every sequenced frame.  Returns 1 for a new
 * in-order frame, 0 for a duplicate, -EPROTO for a gap. */
static int rx_sequence(struct link *l, uint64_t seq)
{
	if (seq <= l->rx_seq) {
		l->rx_duplicates++;
		return 0;
	}
	if (seq != l->rx_seq + 1) {
		peer_warn(l, "link %s: seq gap: got %llu after %llu", l->peer->name,
			  (unsigned long long)seq, (unsigned long long)l->rx_seq);
		return -EPROTO;
	}
	if (l->rx_seq == l->ack_sent)
		l->ack_pending_since = ev_time();
	l->rx_seq = seq;
	return 1;
}

static int process_eager(struct link *l, const struct sl_wire_frame *wf,
			 const uint8_t *payload)
{
	struct daemon *d = l->d;
	int status;

	if (wf->u.eager.dst_node != d->cfg.node_id) {
		status = SL_ERR_NO_ENDPOINT;
	} else if (wf->payload_len > d->cfg.eager_max) {
		status = SL_ERR_INVALID;
	} else {
		status = l_up(l)->deliver(d, (sl_addr_t){ l->node_id, wf->u.eager.src_port },
					link_auth_sender_uid(l, wf->u.eager.sender_uid),
					wf->u.eager.dst_port, wf->u.eager.tag, payload,
					wf->payload_len);
		d->ctr.remote_msgs_rx++;
	}
	if (status == SL_OK) {
		l->msgs_rx++;
		l->bytes_rx += wf->payload_len;
	}
	if (status != SL_OK)
		queue_nak(l, wf->seq, (uint32_t)status);
	return 0;
}

static int process_rts(struct link *l, const struct sl_wire_frame *wf)
{
	struct daemon *d = l->d;
	int status;

	if (wf->u.rts.dst_node != d->cfg.node_id)
		status = SL_ERR_NO_ENDPOINT;
	else
		status = l_up(l)->deliver_rts(d, (sl_addr_t){ l->node_id, wf->u.rts.src_port },
					    link_auth_sender_uid(l, wf->u.rts.sender_uid),
					    wf->u.rts.dst_port, wf->u.rts.tag,
					    wf->u.rts.msg_len, wf->u.rts.send_id);
	if (status != SL_OK)
		queue_nak(l, wf->seq, (uint32_t)status);
	return 0;
}

/*
 * What a peer's HELLO tells about it: a new incarnation ends what was
 * pending for the old one; then our frames it does not have go again.
 * Its last_rx_seq counts our current stream only if it names our own
 * incarnation (else it is from before our start: nothing we have).
 */
static int hello_learn(struct link *l, const struct sl_wire_frame *wf)
{
	uint64_t peer_rx = 0;

	if (l->peer_incarnation && l->peer_incarnation != wf->u.hello.incarnation) {
		if (wf->u.hello.incarnation == l->peer_incarnation_prev)
			link_diag_two_daemons(l, wf->u.hello.incarnation);
		l->peer_incarnation_prev = l->peer_incarnation;
		link_peer_restarted(l, wf->u.hello.incarnation);
	}
	l->peer_incarnation = wf->u.hello.incarnation;
	l->peer_eager_max = wf->u.hello.eager_max;
	l->peer_credits = wf->u.hello.credits;
	if (wf->u.hello.peer_incarnation == l->d->incarnation)
		peer_rx = wf->u.hello.last_rx_seq;
	return link_resume(l, peer_rx);
}

/* The HELLO of a dialer that proved itself on @c (link_auth_anon_recv):
 * the connection becomes @l's. */
static int attach_accepted(struct daemon *d, struct xport_conn *c, struct link *l,
			   const struct sl_wire_frame *wf)
{
	if (l->conn) {
		/* The peer dialled again: its old connection is dead. */
		peer_info(l, "link %s: replacing connection", l->peer->name);
		d->xp->ops->close(l->conn, -ECONNRESET);
	}
	l->conn = c;
	d->xp->ops->set_ctx(c, l);
	if (hello_learn(l, wf) < 0)
		return -EPROTO;
	if (post_hello(l) < 0)
		return -ENOMEM;
	link_up(l);
	return 0;
}

/* A whole frame (or a write's immediate) from the peer on an up link. */
static void note_heard(struct link *l)
{
	ev_tstamp now = ev_now(l->d->loop), gap = now - l->rx_at;

	if (gap > l->rx_gap_max)
		l->rx_gap_max = gap;
	if (gap > l->backoff_rx_gap)
		l->backoff_rx_gap = gap;
	l->rx_at = now;
}

static int up_recv(struct xport *x, struct xport_conn *c, void *ctx,
		   const struct sl_wire_frame *wf, const uint8_t *payload)
{
	struct link *l = ctx;
	int rc = 0;

	if (!l) {
		/* Nothing reaches a link before the handshake says whose it is. */
		rc = link_auth_anon_recv(x->ctx, c, wf, payload, &l);
		if (rc == LINK_AUTH_NUDGE) {
			nudge_heard(l, c);
			return 0;
		}
		if (rc == LINK_AUTH_ATTACH)
			return attach_accepted(x->ctx, c, l, wf);
		return rc < 0 ? -EPROTO : 0;
	}
	if (c == l->nudge)
		return -EPROTO;	/* the peer has nothing to say on it */
	l->frames_rx++;
	if (l->state == LINK_UP)
		note_heard(l);
	else
		l->rx_at = ev_now(l->d->loop);
	if (wf->type == SL_WIRE_AUTH) {
		/* The accepter's proof; ours and our HELLO answer it. */
		if (l->state != LINK_HELLO)
			return -EPROTO;
		rc = link_auth_dial_recv(l, wf, payload);
		if (rc == 0)
			rc = post_hello(l);
		if (rc == 0)
			l->d->xp->ops->flush(c);
		return rc < 0 ? -EPROTO : 0;
	}
	if (wf->type == SL_WIRE_HELLO) {
		if (l->state != LINK_HELLO || wf->u.hello.node_id != l->node_id ||
		    !link_auth_dial_hello_ok(l, wf))
			return -EPROTO;
		rc = hello_learn(l, wf);
		if (rc == 0)
			link_up(l);
		return rc;
	}
	if (wf->type == SL_WIRE_BYE && wf->u.bye.reason && l->state == LINK_HELLO) {
		link_diag_dial_refused(l, wf);	/* the accepter says why; closes c */
		return -EPROTO;
	}
	if (l->state != LINK_UP)
		return -EPROTO;
	/* Checked before the frame acts: a frame refused after acting
	 * (process_ack below) would leave what it changed behind. */
	if (wf->ack > l->tx_seq) {
		peer_warn(l, "link %s: ack %llu beyond last sent %llu", l->peer->name,
			  (unsigned long long)wf->ack, (unsigned long long)l->tx_seq);
		return -EPROTO;
	}
	if (wf->seq) {
		rc = rx_sequence(l, wf->seq);
		if (rc < 0)
			return rc;
		if (rc == 0)
			goto acked;	/* seen before the reconnect */
		rc = 0;
	}
	switch (wf->type) {
	case SL_WIRE_EAGER:
		rc = process_eager(l, wf, payload);
		break;
	case SL_WIRE_RTS:
		rc = process_rts(l, wf);
		break;
	case SL_WIRE_NAK:
		rc = process_nak(l, wf);
		break;
	case SL_WIRE_RTR:
		rc = process_rtr(l, wf);
		break;
	case SL_WIRE_FIN:
		rc = process_fin(l, wf->u.fin.recv_id, wf->u.fin.status);
		break;
	case SL_WIRE_DONE:
		rc = process_done(l, wf->u.done.send_id);
		break;
	case SL_WIRE_ACK:
		break;
	case SL_WIRE_BYE:
		/* The last frame of a stopping peer: what it acks first, then
		 * the connection goes and, with it, what waits for the peer. */
		if (wf->u.bye.incarnation != l->peer_incarnation || wf->u.bye.reason)
			return -EPROTO;	/* a refusal belongs to a handshake */
		rc = process_ack(l, wf->ack);
		if (rc < 0)
			return rc;
		l->byes_rx++;
		l->bye_rx = true;
		l->d->xp->ops->close(l->conn, -ESHUTDOWN);	/* -> link_went_down() */
		return 0;
	default:
		return -EPROTO;
	}
acked:
	if (rc == 0)
		rc = process_ack(l, wf->ack);
	daemon_wake(l->d);
	return rc;
}

static int up_write_imm(struct xport_conn *c, void *ctx, uint32_t imm)
{
	struct link *l = ctx;

	if (!l || l->conn != c)
		return -EPROTO;
	note_heard(l);
	return process_fin(l, imm, SL_OK);
}

/* A whole RDMA write landed (tcp): the rendezvous it belongs to has its
 * bytes up to there in place, so that a reconnect resumes after them.
 * Writes of one rendezvous land in order, from the offset its last RTR
 * named, so the one whose next byte the write starts at is its owner
 * (receives on overlapping buffers could be told apart by nothing, but
 * their bytes are mixed up whatever we do).  Writes of a connection
 * already replaced do not count. */
static void up_write_placed(struct xport_conn *c, void *ctx, uint32_t rkey, uint64_t raddr,
			    uint32_t len)
{
	struct link *l = ctx;
	struct rndv_recv *rr;

	if (!l || l->conn != c || len == 0)
		return;
	TAILQ_FOREACH(rr, &l->rndv_rx, link) {
		if (rr->aborted || !rr->grant_rkey || rr->grant_rkey != rkey ||
		    raddr != rndv_recv_raddr(rr) + rr->placed)
			continue;
		if (len <= rr->wlen - rr->placed)
			rr->placed += len;
		return;
	}
}

/*
 * A write outside its grant (tcp): the transport placed none of it and
 * keeps the stream.  The rendezvous whose grant it named fails; so does
 * the one its immediate names, whose end that write was meant to be (no
 * FIN comes after a last write, so it is released here).  A key granted
 * to nobody now (a write after its rendezvous ended) costs nothing.
 */
static int up_write_refused(struct xport_conn *c, void *ctx, uint32_t rkey, bool has_imm,
			    uint32_t imm)
{
	struct link *l = ctx;
	struct rndv_recv *rr;

	if (!l || l->conn != c)
		return -EPROTO;
	if (rkey && (rr = find_rndv_recv_by_grant(l, rkey)))
		rndv_recv_fail(rr, SL_ERR_ACCESS);
	if (has_imm && (rr = find_rndv_recv(l, imm))) {
		if (!rr->rtr_sent)
			return -EPROTO;	/* as process_fin: it asked for no write */
		rndv_recv_fail(rr, SL_ERR_ACCESS);
		rndv_recv_free(rr);
	}
	daemon_wake(l->d);
	return 0;
}

static void up_closed(struct xport_conn *c, void *ctx, int err)
{
	struct link *l = ctx;

	if (l && c == l->nudge) {
		l->nudge = NULL;
		ev_timer_stop(l->d->loop, &l->dial_w);
		return;
	}
	if (!l) {
		link_auth_anon_closed(c, err);
		return;
	}
	if (l->conn != c)
		return;
	if (l->state == LINK_HELLO && l->dialer)
		link_auth_dial_closed(l, err);
	link_went_down(l, err);
}

const struct xport_upcalls link_upcalls = {
	.connected = up_connected,
	.accepted = up_accepted,
	.send_done = up_send_done,
	.recv = up_recv,
	.write_imm = up_write_imm,
	.write_placed = up_write_placed,
	.write_refused = up_write_refused,
	.closed = up_closed,
	.stranger = link_auth_stranger,
};

/* ---- setup ---- */

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link *l = w->data;

	(void)loop;
	(void)revents;
	daemon_wake(l->d);
}

int link_setup_all(struct daemon *d, const struct link_handlers *up)
{
	size_t i;

	d->link_handlers = up;
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
		l->peer_log = (struct log_limit)LOG_LIMIT_INIT("lines a link's peer caused",
							       LINK_PEER_LOG_BURST,
							       LINK_PEER_LOG_PER_SEC);
		l->dialer = d->cfg.node_id < l->node_id;
		l->state = LINK_DOWN;
		l->redial_delay = d->cfg.redial_min_ms / 1e3;
		l->ack_backoff = 1;
		l->down_since = ev_now(d->loop);
		l->updown_at = l->down_since;
		TAILQ_INIT(&l->backlog);
		TAILQ_INIT(&l->unacked);
		TAILQ_INIT(&l->rndv_tx);
		TAILQ_INIT(&l->writes);
		TAILQ_INIT(&l->rndv_rx);
		TAILQ_INIT(&l->reap);
		ev_timer_init(&l->retry_w, retry_cb, 0.0, 0.0);
		l->retry_w.data = l;
		ev_timer_init(&l->redial_w, redial_cb, 0.0, 0.0);
		l->redial_w.data = l;
		ev_timer_init(&l->ack_w, ack_timeout_cb, 0.0, 0.0);
		l->ack_w.data = l;
		ev_timer_init(&l->alive_w, alive_cb, 0.0, 0.0);
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
		d->links[d->n_links++] = l;
		timeout_arm(l);	/* a peer never seen times out too */
		if (l->dialer)
			link_dial(l);
		else if (d->xp->ops->short_connections)
			link_nudge(l);
		log_info("link %s (%08x) at %s:%u: %s", l->peer->name, l->node_id,
			 l->peer->host, l->peer->port, l->dialer ? "dialing" : "waiting");
	}
	return 0;
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
static void links_say_bye(struct daemon *d)
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
		if (d->xp->ops->sq_space(l->conn) == 0 || post_frame(l, &wf, NULL, 0) < 0) {
			log_info("link %s: no room for a BYE: the peer waits for its "
				 "peer_timeout_ms", l->peer->name);
			continue;
		}
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

void link_teardown_all(struct daemon *d)
{
	size_t i;

	links_say_bye(d);
	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];

		ev_timer_stop(d->loop, &l->redial_w);
		ev_timer_stop(d->loop, &l->retry_w);
		ev_timer_stop(d->loop, &l->ack_w);
		ev_timer_stop(d->loop, &l->alive_w);
		ev_timer_stop(d->loop, &l->dial_w);
		ev_timer_stop(d->loop, &l->timeout_w);
		if (l->conn)
			d->xp->ops->close(l->conn, -ECONNABORTED);
		if (l->nudge)
			d->xp->ops->close(l->nudge, -ECONNABORTED);
		/* The close flushed every WR: nothing is posted any more. */
		fail_everything(l, SL_ERR_CANCELED, false, true);
		log_debug("link %s: %s at teardown", l->peer->name, link_state_name(l->state));
		free(l);
	}
	free(d->links);
	d->links = NULL;
	d->n_links = 0;
}
