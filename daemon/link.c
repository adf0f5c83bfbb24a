/*
 * link.c - links to peer nodes as reliable frame channels: HELLO,
 * sequencing, cumulative ACKs, NAKs, credits, backlog and control
 * reserve, retransmission after a reconnect, keepalive, peer restart,
 * BYE.  See link.h.  Dialing, going down, the peer timeout and the links'
 * making and ending are link_connect.c's.
 *
 * A data frame is done (its owner's done() runs) only when both its send
 * completion and the peer's ACK or NAK for it have arrived; each frame
 * has exactly one owner at a time (enum frame_owner below; the moves are
 * drawn in docs/state-machines.md).  A sent frame waits in the unacked
 * list whatever happens to the connection; after a reconnect the part of
 * it the peer's HELLO does not cover goes back to the head of the
 * backlog.  The frames a layer above owns go up through struct
 * link_handlers (l_up); this file names nothing above it.
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
#include "link_impl.h"
#include "log.h"
#include "wake.h"

#define LINK_ACK_EVERY 32	/* frames received before a lone ACK */
#define LINK_ACK_DELAY 20e-6	/* seconds a lone ACK may wait */
#define LINK_POST_RETRY 1e-3	/* seconds: a refused post with nothing in flight */

/* The layer above (link_setup_all). */
const struct link_handlers *l_up(const struct link *l)
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
	case LINK_IDLE: return "idle";
	}
	return "?";
}

/* ---- who owns a frame ---- */

/* Where a frame's main list entry is. */
enum frame_list { FL_NONE, FL_BACKLOG, FL_UNACKED };

/* Who decides what happens to a frame next (struct link_msg in link.h
 * has the legal moves).  Control frames go BACKLOG -> WIRE (and back
 * after a reconnect) and are freed from either. */
enum frame_owner { FO_BACKLOG, FO_WIRE, FO_DECIDED, FO_CLIENT };

/* A control frame (NAK, RTR, FIN, DONE) of the link's own. */
struct link_ctl {
	struct link_msg m;		/* m.ops NULL */
	struct sl_wire_frame wf;	/* as queued; seq and ack set when posted */
};

#define OWN(o) (1u << (o))

static struct link_ctl *to_ctl(struct link_msg *m)
{
	return (struct link_ctl *)(void *)m;	/* m is its first member */
}

static const char *owner_name(unsigned o)
{
	static const char *const names[] = { "backlog", "wire", "decided", "client" };

	return o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

/* Move @f to owner @to if its owner is one of @from (OWN() bits); see
 * enum frame_owner.  Returns false (and changes nothing) otherwise. */
static bool frame_move(struct link *l, struct link_msg *f, unsigned from, enum frame_owner to)
{
	if (from & OWN(f->owner)) {
		f->owner = (uint8_t)to;
		return true;
	}
	l->ctr.illegal_moves++;
	log_err("link %s: frame type %u seq %llu: illegal move %s -> %s", l->peer->name,
		f->type, (unsigned long long)f->seq, owner_name(f->owner), owner_name(to));
	assert(!"illegal frame move");
	return false;
}

static bool frame_decided(const struct link_msg *f)
{
	return f->owner == FO_DECIDED;
}

static bool is_send(const struct link_msg *f)
{
	return f->ops != NULL;
}

/* ---- ending messages ---- */

static void list_unlink(struct link *l, struct link_msg *f)
{
	if (f->where == FL_UNACKED) {
		TAILQ_REMOVE(&l->unacked, f, link);
		l->n_unacked--;
		l->n_unacked_data--;	/* only messages come here */
	} else if (f->where == FL_BACKLOG) {
		TAILQ_REMOVE(&l->backlog, f, link);
		l->n_backlog--;
	}
	f->where = FL_NONE;
}

/*
 * The end of every message: once its status is decided and no posted WR
 * names it, it leaves every list and goes back to its owner (done()).
 * Returns true when it is no longer the link's.
 */
static bool msg_try_finish(struct link *l, struct link_msg *f)
{
	if (!frame_decided(f) || f->wrs)
		return false;
	if (!frame_move(l, f, OWN(FO_DECIDED), FO_CLIENT))
		return false;
	list_unlink(l, f);
	f->ops->done(f, l, f->status);
	return true;
}

/* Decide @f's status; the first decision wins: one per message. */
static void msg_set_status(struct link *l, struct link_msg *f, int status)
{
	if (frame_decided(f))
		return;
	if (frame_move(l, f, OWN(FO_BACKLOG) | OWN(FO_WIRE), FO_DECIDED))
		f->status = status;
}

static bool msg_decide(struct link *l, struct link_msg *f, int status)
{
	msg_set_status(l, f, status);
	return msg_try_finish(l, f);
}

/* A control frame leaves its list and is freed. */
static void ctl_free(struct link *l, struct link_msg *f)
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
	free(to_ctl(f));
}

/* End every message in @list with @status; with @drop_ctl, control
 * frames there go too (their peer is gone, or we are). */
static void fail_list(struct link *l, struct link_msg_list *list, int status, bool drop_ctl)
{
	struct link_msg *f, *next;

	for (f = TAILQ_FIRST(list); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (is_send(f))
			msg_decide(l, f, status);
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
	l->ctr.post_enomem++;
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
	const struct link_msg *f;

	TAILQ_FOREACH(f, &l->backlog, link) {
		uint64_t nak_seq;

		if (is_send(f))
			break;
		if (f->type != SL_WIRE_NAK)
			continue;
		nak_seq = ((const struct link_ctl *)(const void *)f)->wf.u.nak.nak_seq;
		if (wf->type != SL_WIRE_NAK || nak_seq != wf->u.nak.nak_seq)
			return nak_seq - 1;
	}
	return l->rx_seq;
}

int link_post_frame(struct link *l, struct sl_wire_frame *wf, const void *payload,
		      uint64_t wr_id)
{
	const struct xport_ops *ops = l->d->xp->ops;
	uint8_t hdr[SL_WIRE_HDR_MAX];
	struct xport_send_wr wr;
	int n;

	if (wf->type != SL_WIRE_EAGER && wf->type != SL_WIRE_RTS) {
		/* What the data budget promises: see LINK_TX_BUDGET. */
		uint64_t ahead = ops->sq_bytes(l->conn);

		if (ahead > l->ctr.tx_ahead_max)
			l->ctr.tx_ahead_max = ahead;
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
		ev_tstamp gap = now - (l->tx_at > l->waiting_since ? l->tx_at : l->waiting_since);

		/* Only while we wait on the peer are we bound to speak. */
		if (l->state == LINK_UP && l->waiting_since && gap > l->tx_gap_max)
			l->tx_gap_max = gap;
		l->ack_sent = wf->ack;
		l->ping_owed = false;	/* any frame answers a ping */
		l->ctr.frames_tx++;
		l->tx_at = now;
	} else if (n == -ENOMEM) {
		post_refused(l);
	}
	return n;
}

void link_hello_fill(const struct link *l, struct sl_wire_frame *wf)
{
	*wf = (struct sl_wire_frame){ .type = SL_WIRE_HELLO };
	wf->u.hello.node_id = l->d->cfg.node_id;
	wf->u.hello.eager_max = l->d->cfg.eager_max;
	wf->u.hello.incarnation = l->d->incarnation;
	wf->u.hello.last_rx_seq = l->rx_seq;
	wf->u.hello.credits = l->d->cfg.eager_credits;
	wf->u.hello.peer_incarnation = l->hello_forget ? 0 : l->peer_incarnation;
}

static int post_hello(struct link *l)
{
	struct sl_wire_frame wf;

	link_hello_fill(l, &wf);
	return link_post_frame(l, &wf, NULL, 0);
}

/* A sequenced frame was handed to the transport: it waits for its ack. */
static void unacked_append(struct link *l, struct link_msg *f)
{
	frame_move(l, f, OWN(FO_BACKLOG), FO_WIRE);
	f->seq = ++l->tx_seq;
	f->where = FL_UNACKED;
	TAILQ_INSERT_TAIL(&l->unacked, f, link);
	l->n_unacked++;
	if (is_send(f))
		l->n_unacked_data++;
	link_ack_timer_start(l);
}

/* Is a standalone ACK due?  Delayed like TCP's: data going back carries
 * the ack for free, so a lone ACK waits for LINK_ACK_EVERY frames, for
 * LINK_ACK_DELAY, or for the engine going to sleep (@force). */
static bool ack_due(const struct link *l, bool force)
{
	uint64_t every = l->d->cfg.eager_credits / 2;

	if (l->ping_owed)
		return true;	/* the peer waits on us: answer at once */
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

/* Post control frame @f (NAK, RTR, FIN, DONE). */
static int post_ctl(struct link *l, struct link_msg *f)
{
	struct sl_wire_frame wf = to_ctl(f)->wf;

	wf.seq = l->tx_seq + 1;
	return link_post_frame(l, &wf, NULL, 0);
}

/* The largest message the peer takes eagerly: both ends' eager_max. */
static uint64_t eager_limit(const struct link *l)
{
	uint32_t own = l->d->cfg.eager_max;

	return l->peer_eager_max < own ? l->peer_eager_max : own;
}

/* Post message @f, the head of the backlog, as its owner encodes it. */
static int post_msg(struct link *l, struct link_msg *f)
{
	struct sl_wire_frame wf;
	const void *payload = NULL;
	int rc;

	f->ops->encode(f, l, f->type, eager_limit(l), &wf, &payload);
	/* Its kind holds from the first try: a post the SQ refused is tried
	 * again as what it was encoded as (same peer, same eager_max). */
	f->type = wf.type;
	f->payload_len = wf.payload_len;
	wf.seq = l->tx_seq + 1;
	rc = link_post_frame(l, &wf, payload, (uintptr_t)f);
	if (rc == -ENOMEM)
		return rc;	/* stays first in the backlog */
	list_unlink(l, f);
	if (rc < 0) {
		/* Cannot happen for a frame we built; never drop it silently
		 * all the same. */
		log_err("link %s: cannot post frame: %s", l->peer->name, strerror(-rc));
		msg_decide(l, f, SL_ERR_INVALID);
		return 0;
	}
	f->wrs++;
	unacked_append(l, f);
	return 0;
}

/* Post the next RDMA write segment of @w, the head of the write queue. */
static int post_write_segment(struct link *l, struct link_writer *w)
{
	struct xport_write_wr wr;
	int rc;

	w->ops->segment(w, l, &wr);
	wr.wr_id = (uintptr_t)w | 1;
	rc = l->d->xp->ops->post_write(l->conn, &wr);
	if (rc == -ENOMEM) {
		post_refused(l);
		return rc;
	}
	TAILQ_REMOVE(&l->writes, w, link);
	if (rc < 0) {
		w->queued = false;
		l->n_writes--;
		w->ops->refused(w, l, rc);
		return 0;
	}
	l->ctr.writes_tx++;
	if (wr.has_imm) {
		w->queued = false;
		l->n_writes--;
	} else {
		/* Round robin between rendezvous: one segment each. */
		TAILQ_INSERT_TAIL(&l->writes, w, link);
	}
	w->ops->posted(w, l, wr.len, wr.has_imm);
	return 0;
}

/*
 * Move what fits into the transport SQ: control frames first (they may
 * use the reserve), then data, alternating between queued messages and
 * RDMA write segments so that neither starves the other; then an ACK if
 * one is due and nothing else carried it.  Returns the frames and
 * segments posted (ACKs aside): the progress engine's work.
 */
static unsigned link_post_backlog(struct link *l, bool force_ack)
{
	const struct xport_ops *ops = l->d->xp->ops;
	struct link_msg *f;
	unsigned posted = 0;

	while ((f = TAILQ_FIRST(&l->backlog)) && !is_send(f)) {
		struct sl_wire_frame *wf = &to_ctl(f)->wf;
		int rc = f->type == SL_WIRE_RTR ? l_up(l)->rtr_prepare(l, wf) : 0;

		if (rc == 0)
			rc = post_ctl(l, f);

		if (rc == -ENOMEM) {
			if (!f->deferred) {
				f->deferred = true;
				l->ctr.ctl_deferred++;
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
		if (f->type == SL_WIRE_RTR)
			l_up(l)->rtr_posted(l, wf, f->seq);
		posted++;
	}
	while (data_space(l) && ops->sq_bytes(l->conn) < LINK_TX_BUDGET) {
		struct link_msg *send = link_credits_left(l) ? TAILQ_FIRST(&l->backlog) : NULL;
		struct link_writer *write = TAILQ_FIRST(&l->writes);
		bool do_write = write && (!send || l->write_turn);

		if (!send && !write)
			break;
		/* The turn outlives the pass: a refused post (SQ full, -ENOMEM)
		 * keeps it, the other kind gets the next one after a success.
		 * Restarting each pass with the sends once let a sender's
		 * stream take every post that got through. */
		if ((do_write ? post_write_segment(l, write) : post_msg(l, send)) < 0)
			break;
		l->write_turn = !do_write;
		posted++;
	}
	if (ack_due(l, force_ack) && ops->sq_space(l->conn) > 0) {
		struct sl_wire_frame wf = { .type = SL_WIRE_ACK };

		link_post_frame(l, &wf, NULL, 0);
	}
	return posted;
}

/* ---- what the layer above calls ---- */

int link_post_msg(struct link *l, struct link_msg *m, const struct link_msg_ops *ops)
{
	if (l->timed_out)
		return -EHOSTDOWN;
	if (l->n_backlog - l->n_ctl >= l->d->cfg.link_backlog_max) {
		l->ctr.backlog_naks++;
		return -ENOBUFS;
	}
	*m = (struct link_msg){ .ops = ops, .owner = FO_BACKLOG, .where = FL_BACKLOG,
				.status = SL_OK };
	TAILQ_INSERT_TAIL(&l->backlog, m, link);
	l->n_backlog++;
	link_demand(l);
	link_kick(l);
	return 0;
}

void link_msg_cancel(struct link *l, struct link_msg *m, int status)
{
	if (m->owner != FO_BACKLOG && m->owner != FO_WIRE)
		return;
	msg_decide(l, m, status);
}

void link_cancel_queued(struct link *l, bool (*match)(const struct link_msg *m, void *arg),
			void *arg, int status)
{
	struct link_msg *f, *next;

	for (f = TAILQ_FIRST(&l->backlog); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (is_send(f) && match(f, arg))
			msg_decide(l, f, status);
	}
}

bool link_holds_msg(const struct link *l, bool (*match)(const struct link_msg *m, void *arg),
		    void *arg)
{
	const struct link_msg *f;

	TAILQ_FOREACH(f, &l->backlog, link)
		if (is_send(f) && match(f, arg))
			return true;
	TAILQ_FOREACH(f, &l->unacked, link)
		if (is_send(f) && match(f, arg))
			return true;
	return false;
}

bool link_msg_seen_by_peer(const struct link_msg *m, uint64_t ack)
{
	return m->owner == FO_WIRE && (m->where != FL_UNACKED || m->seq <= ack);
}

/* Queue a control frame ahead of data, after the control frames already
 * queued (their order is kept). */
struct sl_wire_frame *link_queue_ctl(struct link *l, uint8_t type)
{
	struct link_ctl *c = calloc(1, sizeof(*c));
	struct link_msg *it;

	if (!c) {
		/* Without memory for it the only safe answer is to break the
		 * connection: both sides then fail what was under way, each
		 * operation with its own status. */
		log_err("link %s: out of memory for a control frame", l->peer->name);
		if (l->conn)
			l->d->xp->ops->close(l->conn, -ENOMEM);
		return NULL;
	}
	c->m.type = type;
	c->m.where = FL_BACKLOG;
	c->m.owner = FO_BACKLOG;
	c->wf.type = type;
	TAILQ_FOREACH(it, &l->backlog, link)
		if (is_send(it))
			break;
	if (it)
		TAILQ_INSERT_BEFORE(it, &c->m, link);
	else
		TAILQ_INSERT_TAIL(&l->backlog, &c->m, link);
	l->n_backlog++;
	l->n_ctl++;
	link_demand(l);
	link_kick(l);
	return &c->wf;
}

static void queue_nak(struct link *l, uint64_t seq, uint32_t status)
{
	struct sl_wire_frame *wf = link_queue_ctl(l, SL_WIRE_NAK);

	if (!wf)
		return;
	wf->u.nak.nak_seq = seq;
	wf->u.nak.status = status;
	l->ctr.naks_tx++;
}

void link_drop_ctl(struct link *l, bool (*match)(const struct sl_wire_frame *wf, void *arg),
		   void *arg)
{
	struct link_msg *f, *next;

	for (f = TAILQ_FIRST(&l->backlog); f && !is_send(f); f = next) {
		next = TAILQ_NEXT(f, link);
		if (match(&to_ctl(f)->wf, arg))
			ctl_free(l, f);
	}
	for (f = TAILQ_FIRST(&l->unacked); f; f = next) {
		next = TAILQ_NEXT(f, link);
		if (!is_send(f) && match(&to_ctl(f)->wf, arg))
			ctl_free(l, f);
	}
}

void link_writer_start(struct link *l, struct link_writer *w)
{
	if (w->queued)
		return;
	w->queued = true;
	TAILQ_INSERT_TAIL(&l->writes, w, link);
	l->n_writes++;
	link_demand(l);
	link_kick(l);
}

void link_writer_stop(struct link *l, struct link_writer *w)
{
	if (!w->queued)
		return;
	TAILQ_REMOVE(&l->writes, w, link);
	l->n_writes--;
	w->queued = false;
}

int link_grant(struct link *l, uint64_t mr_handle, uint64_t addr, uint64_t len, uint32_t *rkey)
{
	if (!l->conn)
		return -ENOTCONN;
	return l->d->xp->ops->grant(l->conn, mr_handle, addr, len, rkey);
}

void link_revoke(struct link *l, uint32_t rkey)
{
	if (!l->conn)
		return;
	l->d->xp->ops->revoke(l->conn, rkey);
	/* An RTR refused for want of a grant may go now. */
	if (l->n_backlog)
		link_kick(l);
}

void link_count_msg(struct link *l, bool tx, uint64_t bytes)
{
	if (tx) {
		l->ctr.msgs_tx++;
		l->ctr.bytes_tx += bytes;
	} else {
		l->ctr.msgs_rx++;
		l->ctr.bytes_rx += bytes;
	}
}

struct daemon *link_daemon(const struct link *l)
{
	return l->d;
}

uint32_t link_node(const struct link *l)
{
	return l->node_id;
}

const char *link_name(const struct link *l)
{
	return l->peer->name;
}

struct log_limit *link_peer_log(struct link *l)
{
	return &l->peer_log;
}

void *link_upper(const struct link *l)
{
	return l->upper;
}

struct link_rndv_counters *link_rndv_counters(struct link *l)
{
	return &l->rc;
}

static bool link_can_post(const struct link *l)
{
	const struct xport_ops *ops = l->d->xp->ops;
	const struct link_msg *f = TAILQ_FIRST(&l->backlog);

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
	const struct link *l;

	TAILQ_FOREACH(l, &d->links_up, up_link)
		if (link_can_post(l))
			return true;
	return false;
}

void link_up_forget(struct link *l)
{
	if (l->on_up_list) {
		TAILQ_REMOVE(&l->d->links_up, l, up_link);
		l->on_up_list = false;
	}
}

void link_kick(struct link *l)
{
	struct daemon *d = l->d;

	if (!l->ready_on) {
		l->ready_on = &d->link_ready;
		TAILQ_INSERT_TAIL(&d->link_ready, l, ready_link);
	}
	if (l->alive_quiet)
		link_alive_wake(l);	/* it may wait on the peer now */
	daemon_wake(d);
}

/* Off whichever ready list it is on (it goes away). */
void link_ready_forget(struct link *l)
{
	if (l->ready_on) {
		TAILQ_REMOVE(l->ready_on, l, ready_link);
		l->ready_on = NULL;
	}
}

/* Does the next pass have something to do for @l without a new kick: post
 * (link_can_post), or send an ACK whose delay runs out by time alone? */
static bool link_wants_pass(const struct link *l)
{
	return l->state == LINK_UP && l->conn &&
	       (l->rx_seq != l->ack_sent || l->ping_owed || link_can_post(l));
}

unsigned link_flush_all(struct daemon *d, bool force_ack)
{
	struct link_ready_list walk = TAILQ_HEAD_INITIALIZER(walk);
	unsigned posted = 0;
	struct link *l;

	/* Links kicked while this runs wait for the next pass, so that a
	 * pass writes each link once (the tcp transport completes inside
	 * its flush, which kicks). */
	TAILQ_CONCAT(&walk, &d->link_ready, ready_link);
	TAILQ_FOREACH(l, &walk, ready_link)
		l->ready_on = &walk;
	while ((l = TAILQ_FIRST(&walk))) {
		TAILQ_REMOVE(&walk, l, ready_link);
		l->ready_on = NULL;
		l_up(l)->flush(l);
		if (l->state == LINK_UP) {
			posted += link_post_backlog(l, force_ack);
			if (l->conn)
				d->xp->ops->flush(l->conn);
		}
		if (!l->ready_on && link_wants_pass(l)) {
			l->ready_on = &d->link_ready;
			TAILQ_INSERT_TAIL(&d->link_ready, l, ready_link);
		}
	}
	return posted;
}

/*
 * Every operation waiting on this link ends with @status: its own
 * messages, queued or unacknowledged, then what the layer above has
 * under way with the peer (link_handlers.failed: @tell, the peer is the
 * same incarnation and will hear of it).  Control frames stay for the
 * peer, unless @drop_ctl (a new incarnation, or we are stopping).
 */
void fail_everything(struct link *l, int status, bool tell, bool drop_ctl)
{
	fail_list(l, &l->backlog, status, drop_ctl);
	/* Their seqs are abandoned. */
	fail_list(l, &l->unacked, status, drop_ctl);
	l_up(l)->failed(l, status, tell);
}

/* ---- a HELLO (restart, resume, up) and the transport's upcalls ---- */

/* Send @f cannot have reached the peer's old incarnation: out of every
 * list and onto @keep, as if never posted (a new seq when it goes, EAGER
 * or RTS by the new incarnation's eager_max). */
static void restart_keep(struct link *l, struct link_msg *f, struct link_msg_list *keep)
{
	if (f->owner == FO_WIRE && !frame_move(l, f, OWN(FO_WIRE), FO_BACKLOG))
		return;
	list_unlink(l, f);
	f->type = 0;	/* EAGER or RTS by the new incarnation's eager_max */
	f->seq = 0;
	f->maybe_reached = false;
	TAILQ_INSERT_TAIL(keep, f, link);
}

/* Sends not yet decided that are unacknowledged or in rendezvous past
 * their RTS; @rx_rndv: rendezvous receiving. */
static uint32_t sends_posted(const struct link *l, uint32_t *rx_rndv)
{
	const struct link_msg *f;
	uint32_t n = 0, tx_rndv, past;

	TAILQ_FOREACH(f, &l->unacked, link)
		n += is_send(f) && !frame_decided(f);
	l_up(l)->counts(l, &tx_rndv, rx_rndv, &past);
	return n + past;
}

/*
 * The stream with the peer starts again (@why, logged with the peer's
 * @incarnation): nothing of the old one will ever answer.  What may have
 * reached it fails SL_ERR_PEER_RESTARTED, each once: sends whose frame the
 * transport handed on (maybe_reached), every rendezvous past its RTS, and
 * the rendezvous it was sending us.  Sends that cannot have reached it
 * (never posted, or their WR completed XPORT_WR_UNSENT) go to the new
 * stream, in their order: unacked ones were posted before any in the
 * backlog.  Both streams start again from seq 1.  For a peer that came
 * back as a new incarnation (link_peer_restarted), and for one that lost
 * our stream (hello_learn).
 */
static void stream_restart(struct link *l, uint64_t incarnation, const char *why)
{
	struct link_msg_list keep = TAILQ_HEAD_INITIALIZER(keep);
	struct link_msg *f, *next;
	uint32_t kept = 0, failed, receiving;

	l->ctr.peer_restarts++;
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
	failed = sends_posted(l, &receiving);
	l->ctr.restart_failed += failed;
	l->ctr.restart_kept += kept;
	peer_warn(l, "link %s: %s (incarnation %016llx, was %016llx): %u sends that "
		  "may have reached it fail, %u that cannot have go to the new stream; %u "
		  "rendezvous receiving end", l->peer->name, why, (unsigned long long)incarnation,
		  (unsigned long long)l->peer_incarnation, failed, kept, receiving);
	fail_everything(l, SL_ERR_PEER_RESTARTED, false, true);
	l->tx_seq = l->rx_seq = l->ack_sent = l->ack_rx = 0;
	while ((f = TAILQ_FIRST(&keep))) {
		TAILQ_REMOVE(&keep, f, link);
		f->where = FL_BACKLOG;
		TAILQ_INSERT_TAIL(&l->backlog, f, link);
		l->n_backlog++;
	}
}

static void link_peer_restarted(struct link *l, uint64_t incarnation)
{
	stream_restart(l, incarnation, "peer restarted");
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
	struct link_msg *f, *prev, *first_data;

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
	for (f = TAILQ_LAST(&l->unacked, link_msg_list); f && f->seq > peer_rx; f = prev) {
		prev = TAILQ_PREV(f, link_msg_list, link);
		if (!frame_move(l, f, OWN(FO_WIRE), FO_BACKLOG))
			continue;
		TAILQ_REMOVE(&l->unacked, f, link);
		l->n_unacked--;
		f->seq = 0;
		f->where = FL_BACKLOG;
		l->n_backlog++;
		l->ctr.retransmits++;
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
	l_up(l)->resumed(l, peer_rx);
	return 0;
}

static void link_up(struct link *l)
{
	/* Frames over our eager_max are NAKed one by one, not fatal: the
	 * peer may be configured differently. */
	l->d->xp->ops->set_rx_limit(l->conn, SL_WIRE_PAYLOAD_MAX);
	l->state = LINK_UP;
	if (!l->on_up_list) {
		TAILQ_INSERT_TAIL(&l->d->links_up, l, up_link);
		l->on_up_list = true;
	}
	l->updown_at = ev_now(l->d->loop);
	l->timed_out = false;
	l->dial_warned = false;
	l->redial_delay = l->d->cfg.redial_min_ms / 1e3;
	l->ctr.connects++;
	ev_timer_stop(l->d->loop, &l->timeout_w);
	ev_timer_stop(l->d->loop, &l->dial_w);
	l->heard_at = l->rx_at = l->tx_at = l->used_at = ev_now(l->d->loop);
	l->idle_asked = l->idle_closing = false;
	l->waiting_since = 0;
	l->ping_owed = false;
	link_backoff_window(l, l->rx_at);	/* down time proves nothing */
	link_alive_start(l);
	/* Owe the peer an ack for what it sent before the break: the HELLO
	 * said how far it got, but only an ack in the stream completes. */
	l->ack_sent = 0;
	l->ack_pending_since = ev_time();
	if (!TAILQ_EMPTY(&l->unacked))
		link_ack_timer_start(l);
	peer_info(l, "link %s: up (%s, incarnation %016llx)", l->peer->name,
		  l->d->xp->ops->peer_name(l->conn), (unsigned long long)l->peer_incarnation);
	link_kick(l);
}


static void up_connected(struct xport_conn *c, void *ctx, int err)
{
	struct link *l = ctx;

	if (c == l->nudge) {
		link_nudge_connected(l, c, err);
		return;
	}
	if (err) {
		link_dial_failed(l, err);
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
	void *owner = (void *)(uintptr_t)(wr_id & ~(uint64_t)1);
	struct link_msg *f;

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
		link_kick(l);
	if (wr_id == LINK_WR_IDLE_BYE) {
		link_idle_sent(l);
		return;
	}
	if (!owner)
		return;	/* a control frame */
	if (wr_id & 1) {
		struct link_writer *w = owner;

		w->ops->wr_done(w, l, status);
		return;
	}
	f = owner;
	f->wrs--;
	f->maybe_reached = status != XPORT_WR_UNSENT;
	msg_try_finish(l, f);
}

/* @ack is at most tx_seq: up_recv checked it before the frame acted. */
static int process_ack(struct link *l, uint64_t ack)
{
	struct link_msg *f, *next;

	if (ack <= l->ack_rx)
		return 0;
	l->ack_rx = ack;
	for (f = TAILQ_FIRST(&l->unacked); f && f->seq <= ack; f = next) {
		next = TAILQ_NEXT(f, link);
		/* A message is in (an RTS's rendezvous goes on above us). */
		if (is_send(f))
			msg_decide(l, f, SL_OK);
		else
			ctl_free(l, f);
	}
	link_ack_timer_progress(l);
	return 0;
}

static int process_nak(struct link *l, const struct sl_wire_frame *wf)
{
	struct link_msg *f;

	l->ctr.naks_rx++;
	TAILQ_FOREACH(f, &l->unacked, link) {
		if (f->seq != wf->u.nak.nak_seq)
			continue;
		/* Only data frames are NAKed (sl_wire.h); one naming our
		 * RTR, FIN, DONE or NAK would complete no send. */
		if (!is_send(f))
			break;
		msg_decide(l, f, (int32_t)wf->u.nak.status);
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
		l->ctr.rx_duplicates++;
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

/* A data frame (EAGER, RTS) for the layer above: what it refuses is
 * NAKed, by seq, with its status. */
static int process_data(struct link *l, const struct sl_wire_frame *wf, const uint8_t *payload)
{
	int status = wf->type == SL_WIRE_EAGER ? l_up(l)->eager(l, wf, payload)
					       : l_up(l)->rts(l, wf);

	l->used_at = ev_now(l->d->loop);
	if (status < 0)
		return status;
	if (status != SL_OK)
		queue_nak(l, wf->seq, (uint32_t)status);
	return 0;
}

/*
 * What a peer's HELLO tells about it: a new incarnation ends what was
 * pending for the old one; then our frames it does not have go again.
 * Its last_rx_seq counts our current stream only if it names our own
 * incarnation (else it is from before our start: nothing we have).
 *
 * A stream can also be forgotten by one side of the same two
 * incarnations: a reload that removes a peer and adds it again makes a
 * new link, with no stream, while the peer kept its own.  The side that
 * kept it learns so from a HELLO that names none of its incarnations
 * (sent only by a link that never heard from us) or says fewer of our
 * frames arrived than it acknowledged; it starts the stream again, as
 * after a restart.  The side that forgot learns so from a HELLO saying
 * more of its frames arrived than it sent: it takes none as arrived and
 * names none of the peer's incarnations in its own HELLOs, so that the
 * peer starts again too (hello_forget).
 */
static int hello_learn(struct link *l, const struct sl_wire_frame *wf)
{
	uint64_t peer_rx = 0;

	if (l->peer_incarnation && l->peer_incarnation != wf->u.hello.incarnation) {
		if (wf->u.hello.incarnation == l->peer_incarnation_prev)
			link_diag_two_daemons(l, wf->u.hello.incarnation);
		l->peer_incarnation_prev = l->peer_incarnation;
		link_peer_restarted(l, wf->u.hello.incarnation);
	} else if (l->peer_incarnation && !wf->u.hello.peer_incarnation &&
		   (l->tx_seq || l->rx_seq)) {
		stream_restart(l, wf->u.hello.incarnation, "the peer lost our stream (its "
			       "configuration dropped this node and added it again)");
	}
	l->peer_incarnation = wf->u.hello.incarnation;
	l->peer_eager_max = wf->u.hello.eager_max;
	l->peer_credits = wf->u.hello.credits;
	if (wf->u.hello.peer_incarnation == l->d->incarnation)
		peer_rx = wf->u.hello.last_rx_seq;
	if (peer_rx < l->ack_rx) {
		stream_restart(l, wf->u.hello.incarnation, "the peer lost our stream (it has "
			       "fewer of our frames than it acknowledged)");
		peer_rx = 0;
	} else if (peer_rx > l->tx_seq) {
		peer_info(l, "link %s: the peer has %llu of our frames, we sent %llu: our stream "
			  "with it is newer than its (this node dropped it and added it again); "
			  "both start again", l->peer->name, (unsigned long long)peer_rx,
			  (unsigned long long)l->tx_seq);
		l->hello_forget = true;
		peer_rx = 0;
	}
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

/* A whole frame (or a write's immediate) from the peer on an up link.
 * The gaps count only while we wait on the peer: a quiet peer of a
 * quiet link has nothing to say. */
static void note_heard(struct link *l)
{
	ev_tstamp now = ev_now(l->d->loop);
	ev_tstamp gap = now - (l->rx_at > l->waiting_since ? l->rx_at : l->waiting_since);

	if (l->waiting_since && gap > l->rx_gap_max)
		l->rx_gap_max = gap;
	if (l->waiting_since && gap > l->backoff_rx_gap)
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
			link_nudge_heard(l, c);
			return 0;
		}
		if (rc == LINK_AUTH_ATTACH)
			return attach_accepted(x->ctx, c, l, wf);
		return rc < 0 ? -EPROTO : 0;
	}
	if (c == l->nudge)
		return -EPROTO;	/* the peer has nothing to say on it */
	l->ctr.frames_rx++;
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
	/* A frame after its HELLO: the peer read ours, and started again. */
	l->hello_forget = false;
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
	case SL_WIRE_RTS:
		rc = process_data(l, wf, payload);
		break;
	case SL_WIRE_NAK:
		rc = process_nak(l, wf);
		break;
	case SL_WIRE_RTR:
		rc = l_up(l)->rtr(l, wf);
		break;
	case SL_WIRE_FIN:
		rc = l_up(l)->fin(l, wf->u.fin.recv_id, wf->u.fin.status);
		break;
	case SL_WIRE_DONE:
		rc = l_up(l)->done(l, wf->u.done.send_id);
		break;
	case SL_WIRE_ACK:
		if (wf->flags & SL_WIRE_ACK_PING)
			l->ping_owed = true;	/* answered at this pass's end */
		break;
	case SL_WIRE_BYE:
		/* The last frame of a stopping peer: what it acks first, then
		 * the connection goes and, with it, what waits for the peer. */
		if (wf->u.bye.incarnation != l->peer_incarnation ||
		    (wf->u.bye.reason && wf->u.bye.reason != SL_WIRE_BYE_IDLE))
			return -EPROTO;	/* a refusal belongs to a handshake */
		rc = process_ack(l, wf->ack);
		if (rc < 0)
			return rc;
		if (wf->u.bye.reason == SL_WIRE_BYE_IDLE)
			return link_idle_heard(l);
		l->ctr.byes_rx++;
		l->bye_rx = true;
		l->d->xp->ops->close(l->conn, -ESHUTDOWN);	/* -> link_went_down() */
		return 0;
	default:
		return -EPROTO;
	}
acked:
	if (rc == 0)
		rc = process_ack(l, wf->ack);
	link_kick(l);
	return rc;
}

static int up_write_imm(struct xport_conn *c, void *ctx, uint32_t imm)
{
	struct link *l = ctx;

	if (!l || l->conn != c)
		return -EPROTO;
	note_heard(l);
	return l_up(l)->write_imm(l, imm);
}

/* A whole RDMA write landed (tcp), on the current connection (writes of
 * one already replaced do not count). */
static void up_write_placed(struct xport_conn *c, void *ctx, uint32_t rkey, uint64_t raddr,
			    uint32_t len)
{
	struct link *l = ctx;

	if (!l || l->conn != c)
		return;
	l_up(l)->write_placed(l, rkey, raddr, len);
}

/* A write outside its grant (tcp): the transport placed none of it and
 * keeps the stream; the rendezvous it names fail, not the link. */
static int up_write_refused(struct xport_conn *c, void *ctx, uint32_t rkey, bool has_imm,
			    uint32_t imm)
{
	struct link *l = ctx;

	if (!l || l->conn != c)
		return -EPROTO;
	return l_up(l)->write_refused(l, rkey, has_imm, imm);
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
