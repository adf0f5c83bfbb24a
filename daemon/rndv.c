/*
 * rndv.c - rendezvous, both sides, local and remote, and the sends to
 * other nodes.  See rndv.h.
 *
 * A remote send (struct rsend) is a message of its link (struct
 * link_msg) while the link holds it: queued, posted, until the ACK or
 * NAK that covers it.  It is a rendezvous from the moment the link posts
 * it as an RTS (it is then on the peer's rndv_tx list here) until its
 * status is decided; it is finished, its descriptor completed, when it is
 * decided, the link is done with it and no RDMA write of it is posted
 * (wrs).  The first decision wins: one completion per descriptor.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "daemon.h"
#include "endpoint.h"
#include "link.h"
#include "link_auth.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"
#include "rndv.h"

#define peer_warn(l, ...) log_limited(link_peer_log(l), LOG_LVL_WARN, __VA_ARGS__)

/* Rendezvous sends that failed, remembered so that a late RTR (or one
 * sent again after a reconnect) is answered with the reason (a FIN with
 * SL_ERR_PEER_DOWN, say) rather than a bare cancel; the oldest are
 * forgotten first. */
#define RNDV_GONE_MAX 1024

/* One send to another node. */
struct rsend {
	struct link_msg msg;		/* the link's while in_link */
	struct link_writer w;		/* its RDMA writes */
	struct desc desc;		/* holds a reference on desc.q */
	struct link *l;
	TAILQ_ENTRY(rsend) rlink;	/* rndv_tx: a rendezvous under way */
	TAILQ_ENTRY(rsend) reap_link;	/* reap: failed inside a callback */
	bool in_link;			/* link_post_msg() .. its done() */
	bool in_rndv, in_reap;
	bool deciding;			/* rsend_decide() is on the stack */
	bool decided;
	int32_t status;			/* once decided */
	bool last_posted;	/* the write with the immediate is posted */
	bool write_failed;	/* a write completed with an error */
	bool write_refused;	/* ... -EACCES: outside its grant (verbs) */
	bool rtr_stale;		/* the connection broke after its RTR; it
				 * writes again only on a new one */
	bool reg_waiting;	/* req is queued in the registration cache */
	uint32_t wrs;		/* posted RDMA write WRs */
	uint64_t send_id;
	uint32_t recv_id;	/* the receiver's, from its RTR; 0 before */
	uint32_t rkey;
	uint64_t raddr;
	uint64_t wlen;		/* bytes to write (the receive's capacity) */
	uint64_t w_off;		/* bytes posted so far */
	const struct rcache_mr *mr;
	struct rcache_req req;
};
TAILQ_HEAD(rsend_list, rsend);

/* Receiving side of one rendezvous, from the match until the data is in
 * place (write-with-immediate or FIN) or the rendezvous fails. */
struct rndv_recv {
	TAILQ_ENTRY(rndv_recv) link;	/* the peer's rndv_rx */
	TAILQ_ENTRY(rndv_recv) qlink;	/* q->claims */
	struct link *l;
	struct queue *q;		/* holds a reference */
	struct match_recv *r;		/* the matched receive, unlinked */
	sl_addr_t src;
	uint32_t sender_uid;		/* for the completion */
	uint64_t tag;
	uint64_t msg_len;		/* bytes the sender has */
	uint64_t wlen;			/* bytes to be written: min(msg_len, capacity) */
	uint64_t placed;		/* bytes from the start in place: whole writes
					 * the transport saw land (write_placed); an
					 * RTR sent again asks only for the rest */
	uint64_t send_id;		/* the sender's name for it */
	uint32_t recv_id;		/* ours, the write's immediate */
	bool reg_waiting;
	bool rtr_sent;
	uint64_t rtr_seq;		/* seq our RTR went out with; 0 until then */
	/* A message this receive would also have taken met a later-posted
	 * receive: if this rendezvous fails, its receive cannot go back to
	 * its place without breaking the order, so it completes instead. */
	bool overtaken;
	/* The receiving queue died after the RTR: nothing completes, but
	 * the registration (and the queue's memory) is held until the
	 * sender's FIN, or the immediate of a write already on its way,
	 * says no write of it will come. */
	bool aborted;
	const struct rcache_mr *mr;
	struct rcache_req req;
	/* The grant our RTR carries (exactly the receive's range, on the
	 * link's connection), made when the RTR is posted, revoked when the
	 * rendezvous ends or fails; it dies with the connection.  0: none. */
	uint32_t grant_rkey;
};

/* The rendezvous of one peer (the link's upper state). */
struct rndv_peer {
	struct link *l;
	struct rsend_list rndv_tx;	/* sends posted as RTS, not finished */
	struct rsend_list reap;		/* decided in a callback, to finish */
	struct rndv_recv_list rndv_rx;
	uint64_t next_send_id;
	uint32_t next_recv_id;
	/* Failed sends remembered for late RTRs: a ring of RNDV_GONE_MAX,
	 * allocated at the first failure (16 KiB: a link that never fails
	 * one, as most of a large cluster's never do, costs nothing). */
	struct rndv_gone { uint64_t send_id; int32_t status; } *gone;
	uint32_t gone_next;		/* ring index */
};

/* Where an unexpected rendezvous message's data waits. */
struct rndv_src {
	struct queue *q;	/* local: the sender's queue, referenced; NULL remote */
	uint64_t addr;		/* local: the send's arena offset */
	uint64_t user_ctx;	/* local: the send's descriptor */
	uint64_t send_id;	/* remote: the sender's name for it */
};
_Static_assert(sizeof(struct match_msg) + sizeof(struct rndv_src) <= ENDPOINT_RNDV_CHARGE,
	       "an unexpected rendezvous costs more than sluiced.conf(5) says");

static struct rndv_peer *peer_of(const struct link *l)
{
	return link_upper(l);
}

static struct link_rndv_counters *ctr(struct link *l)
{
	return link_rndv_counters(l);
}

void *rndv_link_attach(struct link *l)
{
	struct rndv_peer *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->l = l;
	TAILQ_INIT(&rp->rndv_tx);
	TAILQ_INIT(&rp->reap);
	TAILQ_INIT(&rp->rndv_rx);
	return rp;
}

void rndv_link_detach(struct link *l, void *upper)
{
	struct rndv_peer *rp = upper;

	(void)l;
	free(rp->gone);
	free(rp);
}

/* ---- control frames ---- */

static void queue_fin(struct link *l, uint32_t recv_id, uint32_t status)
{
	struct sl_wire_frame *wf = link_queue_ctl(l, SL_WIRE_FIN);

	if (!wf)
		return;
	wf->u.fin.recv_id = recv_id;
	wf->u.fin.status = status;
}

/* An RTR; @offset bytes of @len are in place already (an RTR sent again
 * after a reconnect). */
static void queue_rtr_from(struct link *l, uint64_t send_id, uint32_t recv_id, uint64_t raddr,
			   uint64_t len, uint32_t status, uint64_t offset)
{
	struct sl_wire_frame *wf = link_queue_ctl(l, SL_WIRE_RTR);

	if (!wf)
		return;
	wf->u.rtr.send_id = send_id;
	wf->u.rtr.recv_id = recv_id;
	wf->u.rtr.raddr = raddr;
	wf->u.rtr.len = len;
	wf->u.rtr.status = status;
	wf->u.rtr.offset = (uint32_t)offset;	/* <= len <= SL_WIRE_RNDV_MAX */
}

/* A refusal: no rendezvous (@recv_id 0), or an abort of ours. */
static void queue_rtr(struct link *l, uint64_t send_id, uint32_t recv_id, uint32_t status)
{
	queue_rtr_from(l, send_id, recv_id, 0, 0, status, 0);
}

static void queue_done(struct link *l, uint64_t send_id)
{
	struct sl_wire_frame *wf = link_queue_ctl(l, SL_WIRE_DONE);

	if (wf)
		wf->u.done.send_id = send_id;
}

/* ---- sending side ---- */

static void rsend_writes_stop(struct rsend *s)
{
	link_writer_stop(s->l, &s->w);
}

static void rsend_unlink(struct rsend *s)
{
	struct rndv_peer *rp = peer_of(s->l);

	if (s->in_rndv) {
		TAILQ_REMOVE(&rp->rndv_tx, s, rlink);
		ctr(s->l)->n_rndv_tx--;
		s->in_rndv = false;
	}
	rsend_writes_stop(s);
	if (s->in_reap) {
		TAILQ_REMOVE(&rp->reap, s, reap_link);
		s->in_reap = false;
	}
}

/*
 * The end of every send: once its status is decided, the link is done
 * with it and no posted WR names it, it leaves every list, returns its
 * registration (or its place in the registration queue), and its
 * descriptor gets its completion and its queue reference back.  Returns
 * true when @s is gone.
 */
static bool rsend_try_finish(struct rsend *s)
{
	struct link *l = s->l;
	struct daemon *d = link_daemon(l);
	struct rndv_peer *rp = peer_of(l);
	struct queue *q = s->desc.q;

	if (!s->decided || s->in_link || s->wrs)
		return false;
	rsend_unlink(s);
	if (s->reg_waiting) {
		rcache_cancel(d->rc, &s->req);
		s->reg_waiting = false;
	}
	if (s->mr)
		rcache_put(d->rc, s->mr);
	if (s->send_id && s->status != SL_OK) {
		/* A late RTR for it (or one sent again) will want to know why;
		 * without the memory for the ring it hears SL_ERR_CANCELED. */
		if (!rp->gone)
			rp->gone = calloc(RNDV_GONE_MAX, sizeof(*rp->gone));
		if (rp->gone) {
			rp->gone[rp->gone_next].send_id = s->send_id;
			rp->gone[rp->gone_next].status = s->status;
			rp->gone_next = (rp->gone_next + 1) % RNDV_GONE_MAX;
		}
	}
	if (s->status == SL_OK)
		link_count_msg(l, true, s->desc.len);
	queue_complete(&s->desc, s->status, NULL);
	queue_put(q);
	free(s);
	return true;
}

/* Decide @s's status; the first decision wins: one per descriptor. */
static void rsend_set_status(struct rsend *s, int status)
{
	if (s->decided)
		return;
	s->decided = true;
	s->status = status;
}

/* Decide @s and finish it if nothing else holds it; a send the link still
 * holds leaves it now (link_msg_cancel).  Returns true when @s is gone. */
static bool rsend_decide(struct rsend *s, int status)
{
	rsend_set_status(s, status);
	if (s->in_link) {
		s->deciding = true;
		link_msg_cancel(s->l, &s->msg, s->status);
		s->deciding = false;
	}
	return rsend_try_finish(s);
}

static void msg_encode(struct link_msg *m, struct link *l, uint8_t prev_type,
		       uint64_t eager_limit, struct sl_wire_frame *wf, const void **payload)
{
	struct rsend *s = container_of(m, struct rsend, msg);
	struct rndv_peer *rp = peer_of(l);
	/* A frame sent again keeps its kind: the peer is the same one. */
	bool rndv = prev_type == SL_WIRE_RTS || s->desc.len > eager_limit;
	struct queue *q = s->desc.q;

	if (prev_type == 0 && s->in_rndv) {
		/* The peer restarted: what it is now, it is as if new. */
		TAILQ_REMOVE(&rp->rndv_tx, s, rlink);
		ctr(l)->n_rndv_tx--;
		s->in_rndv = false;
	}
	*wf = (struct sl_wire_frame){ .type = rndv ? SL_WIRE_RTS : SL_WIRE_EAGER };
	*payload = NULL;
	if (rndv) {
		if (!s->send_id)
			s->send_id = ++rp->next_send_id;
		wf->u.rts.src_port = q->port;
		wf->u.rts.dst_port = s->desc.peer.port;
		wf->u.rts.dst_node = s->desc.peer.node;
		wf->u.rts.sender_uid = (uint32_t)q->uid;
		wf->u.rts.tag = s->desc.tag;
		wf->u.rts.msg_len = s->desc.len;
		wf->u.rts.send_id = s->send_id;
		if (!s->in_rndv) {
			s->in_rndv = true;
			TAILQ_INSERT_TAIL(&rp->rndv_tx, s, rlink);
			ctr(l)->n_rndv_tx++;
		}
	} else {
		wf->payload_len = (uint32_t)s->desc.len;
		wf->u.eager.src_port = q->port;
		wf->u.eager.dst_port = s->desc.peer.port;
		wf->u.eager.dst_node = s->desc.peer.node;
		wf->u.eager.sender_uid = (uint32_t)q->uid;
		wf->u.eager.tag = s->desc.tag;
		*payload = q->arena + s->desc.addr;
	}
}

/* The link is done with @s's frame: an EAGER (or a refused RTS) is
 * decided now; an RTS the peer acknowledged goes on as a rendezvous. */
static void msg_done(struct link_msg *m, struct link *l, int status)
{
	struct rsend *s = container_of(m, struct rsend, msg);

	(void)l;
	s->in_link = false;
	if (status != SL_OK || !s->in_rndv)
		rsend_set_status(s, status);
	if (!s->deciding)
		rsend_try_finish(s);
}

static const struct link_msg_ops rsend_msg_ops = {
	.encode = msg_encode,
	.done = msg_done,
};

/* The next RDMA write segment; the last carries the receiver's recv_id
 * as its immediate. */
static void writer_segment(struct link_writer *w, struct link *l, struct xport_write_wr *wr)
{
	struct rsend *s = container_of(w, struct rsend, w);
	uint64_t left = s->wlen - s->w_off;
	uint32_t seg = left < LINK_WRITE_SEGMENT ? (uint32_t)left : LINK_WRITE_SEGMENT;
	bool last = s->w_off + seg == s->wlen;

	(void)l;
	*wr = (struct xport_write_wr){
		.laddr = s->desc.q->arena + s->desc.addr + s->w_off,
		.lkey = s->mr ? s->mr->lkey : 0,
		.len = seg,
		.raddr = s->raddr + s->w_off,
		.rkey = s->rkey,
		.has_imm = last,
		.imm = last ? s->recv_id : 0,
	};
}

static void writer_posted(struct link_writer *w, struct link *l, uint32_t len, bool last)
{
	struct rsend *s = container_of(w, struct rsend, w);

	(void)l;
	s->w_off += len;
	s->wrs++;
	if (last)
		s->last_posted = true;
}

/* Our own registration refused: a bug, reported on the descriptor; the
 * receiver's receive is given back. */
static void writer_refused(struct link_writer *w, struct link *l, int err)
{
	struct rsend *s = container_of(w, struct rsend, w);

	log_err("link %s: cannot post RDMA write: %s", link_name(l), strerror(-err));
	s->w_off = s->wlen;
	queue_fin(l, s->recv_id, SL_ERR_ACCESS);
	rsend_decide(s, SL_ERR_ACCESS);
}

/* An RDMA write error is followed by the connection's close, which
 * fails the send; success waits for the receiver's DONE. */
static void writer_wr_done(struct link_writer *w, struct link *l, int status)
{
	struct rsend *s = container_of(w, struct rsend, w);

	(void)l;
	s->wrs--;
	if (status)
		s->write_failed = true;
	if (status == -EACCES)
		s->write_refused = true;
	rsend_try_finish(s);
}

static const struct link_writer_ops rsend_writer_ops = {
	.segment = writer_segment,
	.posted = writer_posted,
	.refused = writer_refused,
	.wr_done = writer_wr_done,
};

int rndv_send_remote(struct link *l, const struct desc *dsc)
{
	struct rsend *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->desc = *dsc;
	s->l = l;
	s->status = SL_OK;
	s->w.ops = &rsend_writer_ops;
	rc = link_post_msg(l, &s->msg, &rsend_msg_ops);
	if (rc < 0) {
		free(s);
		return rc;
	}
	s->in_link = true;
	queue_get(dsc->q);
	return 0;
}

static struct rsend *find_rndv_send(struct link *l, uint64_t send_id)
{
	struct rsend *s;

	TAILQ_FOREACH(s, &peer_of(l)->rndv_tx, rlink)
		if (s->send_id == send_id)
			return s;
	return NULL;
}

/* The source registration failed or could not be had in time: the
 * receiver gets its receive back, the send its status. */
static void send_reg_failed(struct rsend *s, int err)
{
	int status = rcache_status(err, false);

	queue_fin(s->l, s->recv_id, (uint32_t)status);
	rsend_decide(s, status);
}

/*
 * A waiting source registration is settled.  This runs inside the cache
 * (a put, a cancel, an expiry), possibly while a caller walks this peer's
 * lists, so a failure only decides the send and parks it on the reap
 * list; the next flush of the link finishes it.
 */
static void send_reg_done(void *arg, int err, const struct rcache_mr *mr)
{
	struct rsend *s = arg;
	struct link *l = s->l;

	s->reg_waiting = false;
	if (err) {
		int status = rcache_status(err, false);

		queue_fin(l, s->recv_id, (uint32_t)status);
		rsend_set_status(s, status);
		s->in_reap = true;
		TAILQ_INSERT_TAIL(&peer_of(l)->reap, s, reap_link);
		link_kick(l);
		return;
	}
	s->mr = mr;
	if (!s->rtr_stale)
		link_writer_start(l, &s->w);	/* else on the RTR sent again */
}

void rndv_link_flush(struct link *l)
{
	struct rndv_peer *rp = peer_of(l);
	struct rsend *s;

	while ((s = TAILQ_FIRST(&rp->reap))) {
		TAILQ_REMOVE(&rp->reap, s, reap_link);
		s->in_reap = false;
		rsend_try_finish(s);	/* else at its last completion */
	}
}

/* Why rendezvous send @send_id ended before its RTR: SL_ERR_CANCELED (the
 * receiver hears SL_ERR_NO_ENDPOINT) unless it is remembered. */
static uint32_t gone_status(const struct rndv_peer *rp, uint64_t send_id)
{
	uint32_t i;

	for (i = 0; rp->gone && i < RNDV_GONE_MAX; i++)
		if (rp->gone[i].send_id == send_id)
			return (uint32_t)rp->gone[i].status;
	return SL_ERR_CANCELED;
}

int rndv_rx_rtr(struct link *l, const struct sl_wire_frame *wf)
{
	struct daemon *d = link_daemon(l);
	struct rsend *s = find_rndv_send(l, wf->u.rtr.send_id);
	int rc;

	if (!s || s->decided) {
		/* Its send was cancelled (the client closed its queue) or
		 * failed (peer timeout): give the receive back with the
		 * reason, or (an abort) let the receiver release it. */
		log_debug("link %s: RTR for finished send %llu", link_name(l),
			  (unsigned long long)wf->u.rtr.send_id);
		if (wf->u.rtr.status == SL_OK || wf->u.rtr.recv_id)
			queue_fin(l, wf->u.rtr.recv_id,
				  s ? (uint32_t)s->status
				    : gone_status(peer_of(l), wf->u.rtr.send_id));
		return 0;
	}
	if (s->recv_id && wf->u.rtr.status != SL_OK && wf->u.rtr.recv_id == s->recv_id) {
		/* An abort: the receiving client went away.  Stop writing
		 * and say so with a FIN, unless the last write is on its way
		 * (its immediate releases the receiver). */
		rsend_writes_stop(s);
		if (!s->last_posted)
			queue_fin(l, s->recv_id, wf->u.rtr.status);
		rsend_decide(s, (int)wf->u.rtr.status);
		return 0;
	}
	if (s->recv_id && !s->rtr_stale) {
		peer_warn(l, "link %s: second RTR for rendezvous %llu", link_name(l),
			  (unsigned long long)wf->u.rtr.send_id);
		return -EPROTO;
	}
	/* A first answer comes from whoever has the RTS: it is on the
	 * wire (not back in the backlog after a resume), and the RTR's ack
	 * covers it, so that the RTS leaves the link with this frame and is
	 * never sent again once the rendezvous has its answer. */
	if (!s->recv_id && s->in_link && !link_msg_seen_by_peer(&s->msg, wf->ack)) {
		log_warn("link %s: RTR for rendezvous %llu whose RTS it cannot have (ack %llu)",
			 link_name(l), (unsigned long long)wf->u.rtr.send_id,
			 (unsigned long long)wf->ack);
		return -EPROTO;
	}
	if (wf->u.rtr.status != SL_OK) {
		rsend_decide(s, (int)wf->u.rtr.status);
		return 0;
	}
	if (s->rtr_stale) {
		/* The connection broke after the first RTR: write again what
		 * the receiver does not have in place (the same bytes to the
		 * same place: writes are idempotent), from its offset on.
		 * The decoder checked offset <= len. */
		if (wf->u.rtr.recv_id != s->recv_id || wf->u.rtr.len != s->wlen) {
			peer_warn(l, "link %s: RTR sent again for rendezvous %llu changed",
				  link_name(l), (unsigned long long)wf->u.rtr.send_id);
			return -EPROTO;
		}
		s->rtr_stale = false;
		s->raddr = wf->u.rtr.raddr;
		s->rkey = wf->u.rtr.rkey;
		s->w_off = wf->u.rtr.offset;
		ctr(l)->rndv_restarts++;
		ctr(l)->rndv_resumed_bytes += wf->u.rtr.offset;
		if (s->mr || s->wlen == 0)
			link_writer_start(l, &s->w);
		return 0;	/* or when its registration comes */
	}
	if (wf->u.rtr.len > s->desc.len || wf->u.rtr.offset) {
		peer_warn(l, "link %s: first RTR asks %llu bytes from %u of a %llu-byte message",
			  link_name(l), (unsigned long long)wf->u.rtr.len, wf->u.rtr.offset,
			  (unsigned long long)s->desc.len);
		return -EPROTO;
	}
	s->recv_id = wf->u.rtr.recv_id;
	s->raddr = wf->u.rtr.raddr;
	s->rkey = wf->u.rtr.rkey;
	s->wlen = wf->u.rtr.len;
	if (s->wlen == 0) {
		link_writer_start(l, &s->w);	/* one empty write carries the immediate */
		return 0;
	}
	rcache_req_init(&s->req, send_reg_done, s);
	rc = rcache_get(d->rc, s->desc.q->id, s->desc.addr, s->wlen, ev_now(d->loop), &s->req,
			&s->mr);
	if (rc == 0) {
		link_writer_start(l, &s->w);
	} else if (rc == -EINPROGRESS) {
		s->reg_waiting = true;
		daemon_rcache_arm(d);
	} else {
		send_reg_failed(s, rc);
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
int rndv_rx_done(struct link *l, uint64_t send_id)
{
	struct rsend *s = find_rndv_send(l, send_id);

	if (!s && send_id <= peer_of(l)->next_send_id)
		return 0;	/* failed here already (peer timeout) */
	if (!s || !s->recv_id || s->decided) {
		peer_warn(l, "link %s: DONE for rendezvous %llu that wrote nothing", link_name(l),
			  (unsigned long long)send_id);
		return -EPROTO;
	}
	ctr(l)->rndv_tx_done++;
	rsend_decide(s, SL_OK);
	return 0;
}

/* ---- receiving side ---- */

static struct rndv_recv *find_rndv_recv(struct link *l, uint32_t recv_id)
{
	struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &peer_of(l)->rndv_rx, link)
		if (rr->recv_id == recv_id)
			return rr;
	return NULL;
}

/* End @rr's grant: no write of the peer lands in its buffer after this. */
static void rndv_recv_revoke(struct rndv_recv *rr)
{
	if (rr->grant_rkey)
		link_revoke(rr->l, rr->grant_rkey);
	rr->grant_rkey = 0;
}

/* Unlink @rr and return its registration and queue; @r is the caller's. */
static void rndv_recv_free(struct rndv_recv *rr)
{
	struct link *l = rr->l;
	struct daemon *d = link_daemon(l);

	rndv_recv_revoke(rr);	/* before the registration can go */
	TAILQ_REMOVE(&peer_of(l)->rndv_rx, rr, link);
	ctr(l)->n_rndv_rx--;
	TAILQ_REMOVE(&rr->q->claims, rr, qlink);
	if (rr->reg_waiting)
		rcache_cancel(d->rc, &rr->req);
	if (rr->mr)
		rcache_put(d->rc, rr->mr);
	queue_put(rr->q);
	free(rr);
}

/* The completion of @rr's receive: the message it took. */
static struct desc_msg rndv_recv_msg(const struct rndv_recv *rr, uint32_t sender_uid)
{
	return (struct desc_msg){ .src = rr->src, .sender_uid = sender_uid, .tag = rr->tag,
				  .len = rr->msg_len };
}

/* The data is in place: the receive completes, and the sender hears so. */
static void rndv_recv_complete(struct rndv_recv *rr)
{
	struct match_recv *r = rr->r;
	struct desc_msg msg = rndv_recv_msg(rr, rr->sender_uid);

	queue_done(rr->l, rr->send_id);
	ctr(rr->l)->rndv_rx_done++;
	link_count_msg(rr->l, false, rr->wlen);
	queue_complete(&r->desc, rr->msg_len <= r->desc.len ? SL_OK : SL_ERR_TRUNCATED, &msg);
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
	ctr(l)->rndv_rx_failed++;
	if (!rr->rtr_sent) {
		queue_rtr(l, rr->send_id, 0, (uint32_t)status);
		rndv_recv_free(rr);
		return;
	}
	rr->aborted = true;
	queue_rtr(l, rr->send_id, rr->recv_id, (uint32_t)status);
}

/*
 * The rendezvous failed before any data moved.  The receive goes back to
 * its place, as if the message had never matched it, unless a message it
 * would also have taken has met a later-posted receive meanwhile: then
 * going back would let a still later message from that source land before
 * that one in post order (MPI's non-overtaking rule), so the receive
 * completes with @status instead, its buffer untouched.  A receive bound
 * to the message (sl_recv_claimed, a probe's discard) completes so too.
 */
static void rndv_recv_giveback(struct rndv_recv *rr, int status)
{
	struct queue *q = rr->q;
	struct match_recv *r = rr->r;
	/* A receive bound to this message (a claimed one, a probe's
	 * discard) has no place to go back to: it ends with the failure. */
	bool overtaken = rr->overtaken || desc_bound(&r->desc);

	queue_get(q);
	if (q->d->stopping)
		status = SL_ERR_CANCELED;	/* whatever failed, we are going */
	if (overtaken) {
		struct desc_msg msg = rndv_recv_msg(rr, SL_UID_UNKNOWN);

		ctr(rr->l)->rndv_rx_failed++;
		queue_complete(&r->desc, status, &msg);
	}
	rndv_recv_free(rr);
	if (overtaken)
		free(r);
	else
		endpoint_repost(q, r);
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
 * the grant's, made when it is posted (rndv_rtr_prepare); the
 * registration's own key opens nothing to the peer. */
static void rndv_send_rtr(struct rndv_recv *rr)
{
	rr->rtr_sent = true;
	rr->rtr_seq = 0;	/* until it goes out */
	queue_rtr_from(rr->l, rr->send_id, rr->recv_id, rndv_recv_raddr(rr), rr->wlen, SL_OK,
		       rr->placed);
}

static void recv_reg_done(void *arg, int err, const struct rcache_mr *mr)
{
	struct rndv_recv *rr = arg;

	rr->reg_waiting = false;
	if (err) {
		int status = rcache_status(err, true);

		queue_rtr(rr->l, rr->send_id, 0, (uint32_t)status);
		rndv_recv_giveback(rr, status);
		return;
	}
	rr->mr = mr;
	rndv_send_rtr(rr);
}

/* An unexpected RTS from @node was dropped (its endpoint closed): tell
 * the sender with @status. */
static void rndv_refuse(struct daemon *d, uint32_t node, uint64_t send_id, uint32_t status)
{
	struct link *l = link_find(d, node);

	if (l)
		queue_rtr(l, send_id, 0, status);
}

/*
 * Receive @r of @q matched RTS @send_id of @msg_len bytes from @src (a
 * remote node), whose completion names @sender_uid.  Registers the
 * destination (possibly waiting in the registration cache) and sends the
 * RTR.  Takes @r; when the rendezvous cannot start the sender is told
 * with an RTR carrying the status.  Returns true when it took @r (the
 * rendezvous is under way, or waiting for its registration, or @r
 * completed SL_ERR_REG_LIMIT: what it would take of this message is more
 * than [rcache] max_bytes), false when @r is still the caller's (the
 * sender has been told, or the node is not a peer).
 */
/* Bound receive @r (desc_bound) of a rendezvous message that could not
 * start: it completes with @status, naming the message, instead of
 * going back among the posted receives. */
static void bound_recv_fail(struct match_recv *r, int status, sl_addr_t src, uint64_t tag,
			    uint64_t msg_len)
{
	struct desc_msg msg = { .src = src, .sender_uid = SL_UID_UNKNOWN, .tag = tag,
				.len = msg_len };

	queue_complete(&r->desc, status, &msg);
	free(r);
}

static bool rndv_recv_start(struct daemon *d, struct queue *q, struct match_recv *r,
			    sl_addr_t src, uint32_t sender_uid, uint64_t tag, uint64_t msg_len,
			    uint64_t send_id)
{
	struct link *l = link_find(d, src.node);
	struct rndv_peer *rp;
	struct rndv_recv *rr;
	struct desc_msg msg;
	int rc, status;

	/* A link that is down still takes it: the RTR waits for the
	 * reconnect like every control frame.  (Past peer_timeout_ms the
	 * peer's RTS headers were dropped, so none can match here.) */
	if (!l) {
		if (!desc_bound(&r->desc))
			return false;
		/* No longer a peer (a reload): nothing can come from there. */
		bound_recv_fail(r, SL_ERR_UNKNOWN_NODE, src, tag, msg_len);
		return true;
	}
	rp = peer_of(l);
	rr = calloc(1, sizeof(*rr));
	if (!rr) {
		queue_rtr(l, send_id, 0, SL_NAK_BUSY);
		if (!desc_bound(&r->desc))
			return false;
		bound_recv_fail(r, SL_NAK_BUSY, src, tag, msg_len);
		return true;
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
	if (++rp->next_recv_id == 0)
		rp->next_recv_id = 1;
	rr->recv_id = rp->next_recv_id;
	queue_get(q);
	TAILQ_INSERT_TAIL(&rp->rndv_rx, rr, link);
	ctr(l)->n_rndv_rx++;
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
	queue_rtr(l, send_id, 0, (uint32_t)status);
	rr->r = NULL;
	rndv_recv_free(rr);
	if (status != SL_ERR_REG_LIMIT && !desc_bound(&r->desc))
		return false;
	/* No retry would register that much here: back in its place the
	 * receive would fail every such message without its owner knowing. */
	ctr(l)->rndv_rx_failed++;
	msg = (struct desc_msg){ .src = src, .sender_uid = SL_UID_UNKNOWN, .tag = tag,
				 .len = msg_len };
	queue_complete(&r->desc, status, &msg);
	free(r);
	return true;
}

int rndv_rx_fin(struct link *l, uint32_t recv_id, uint32_t status)
{
	struct rndv_recv *rr = find_rndv_recv(l, recv_id);

	if (!rr && status != SL_OK && recv_id <= peer_of(l)->next_recv_id)
		return 0;	/* given back here already (peer timeout) */
	if (!rr || !rr->rtr_sent) {
		peer_warn(l, "link %s: write or FIN for unknown rendezvous %u", link_name(l),
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
	link_kick(l);
	return 0;
}

int rndv_write_imm(struct link *l, uint32_t imm)
{
	return rndv_rx_fin(l, imm, SL_OK);
}

/* Take every request of this peer out of the registration queue.  A
 * cancel may serve other waiters, whose callbacks may end operations, so
 * each walk starts again from the head; the link is down, so no new
 * request of it can be queued meanwhile. */
static void cancel_reg_waits(struct link *l)
{
	struct rndv_peer *rp = peer_of(l);
	struct daemon *d = link_daemon(l);
	struct rndv_recv *rr;
	struct rsend *s;

again_tx:
	TAILQ_FOREACH(s, &rp->rndv_tx, rlink) {
		if (s->reg_waiting) {
			s->reg_waiting = false;
			rcache_cancel(d->rc, &s->req);
			goto again_tx;
		}
	}
again_rx:
	TAILQ_FOREACH(rr, &rp->rndv_rx, link) {
		if (rr->reg_waiting) {
			rr->reg_waiting = false;
			rcache_cancel(d->rc, &rr->req);
			goto again_rx;
		}
	}
}

/* An RTR of ours went out with @seq: remember it, so that a reconnect
 * knows whether the peer had it. */
void rndv_rtr_posted(struct link *l, const struct sl_wire_frame *wf, uint64_t seq)
{
	struct rndv_recv *rr;

	if (wf->u.rtr.status != SL_OK)
		return;
	rr = find_rndv_recv(l, wf->u.rtr.recv_id);
	if (rr)
		rr->rtr_seq = seq;
}

/*
 * RTR @wf is about to be posted: give it a grant of exactly its receive's
 * range on the current connection (one per rendezvous and connection;
 * an RTR sent again on the same connection names the same grant).
 * Returns 0 (post it), or -ENOMEM (the transport is out of grants or SQ
 * room for a bind: it waits in the backlog like a refused post; a revoke
 * or completion drives it again).  Any other failure is a bug: the
 * rendezvous is refused with SL_NAK_BUSY and @wf turned into that
 * refusal, so the sender is never left waiting.
 */
int rndv_rtr_prepare(struct link *l, struct sl_wire_frame *wf)
{
	struct rndv_recv *rr;
	int rc;

	if (wf->u.rtr.status != SL_OK || wf->u.rtr.len == 0)
		return 0;
	rr = find_rndv_recv(l, wf->u.rtr.recv_id);
	if (!rr || rr->aborted || !rr->mr)
		return 0;
	if (!rr->grant_rkey) {
		rc = link_grant(l, rr->mr->handle, rndv_recv_raddr(rr), rr->wlen, &rr->grant_rkey);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) {
			log_err("link %s: no grant for rendezvous %u: %s", link_name(l),
				rr->recv_id, strerror(-rc));
			rr->grant_rkey = 0;
			wf->u.rtr.status = SL_NAK_BUSY;
			wf->u.rtr.recv_id = 0;
			wf->u.rtr.raddr = wf->u.rtr.len = 0;
			wf->u.rtr.rkey = wf->u.rtr.offset = 0;
			rndv_recv_giveback(rr, SL_NAK_BUSY);
			return 0;
		}
	}
	wf->u.rtr.rkey = rr->grant_rkey;
	return 0;
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
	struct desc_msg msg;

	rndv_recv_revoke(rr);
	if (rr->aborted)
		return;
	msg = rndv_recv_msg(rr, SL_UID_UNKNOWN);
	queue_complete(&rr->r->desc, status, &msg);
	rndv_recv_abort(rr, status);
}

static struct rndv_recv *find_rndv_recv_by_grant(struct link *l, uint32_t rkey)
{
	struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &peer_of(l)->rndv_rx, link)
		if (rr->grant_rkey == rkey)
			return rr;
	return NULL;
}

/* A whole RDMA write landed (tcp): the rendezvous it belongs to has its
 * bytes up to there in place, so that a reconnect resumes after them.
 * Writes of one rendezvous land in order, from the offset its last RTR
 * named, so the one whose next byte the write starts at is its owner
 * (receives on overlapping buffers could be told apart by nothing, but
 * their bytes are mixed up whatever we do). */
void rndv_write_placed(struct link *l, uint32_t rkey, uint64_t raddr, uint32_t len)
{
	struct rndv_recv *rr;

	if (len == 0)
		return;
	TAILQ_FOREACH(rr, &peer_of(l)->rndv_rx, link) {
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
int rndv_write_refused(struct link *l, uint32_t rkey, bool has_imm, uint32_t imm)
{
	struct rndv_recv *rr;

	if (rkey && (rr = find_rndv_recv_by_grant(l, rkey)))
		rndv_recv_fail(rr, SL_ERR_ACCESS);
	if (has_imm && (rr = find_rndv_recv(l, imm))) {
		if (!rr->rtr_sent)
			return -EPROTO;	/* as a FIN: it asked for no write */
		rndv_recv_fail(rr, SL_ERR_ACCESS);
		rndv_recv_free(rr);
	}
	link_kick(l);
	return 0;
}

static bool rtr_names(const struct sl_wire_frame *wf, void *arg)
{
	return wf->type == SL_WIRE_RTR && wf->u.rtr.recv_id == *(const uint32_t *)arg;
}

/* ---- the link's events ---- */

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
	struct rsend *s;

again:
	TAILQ_FOREACH(s, &peer_of(l)->rndv_tx, rlink) {
		if (!s->write_refused)
			continue;
		s->write_refused = false;
		if (s->decided)
			continue;
		queue_fin(l, s->recv_id, SL_ERR_ACCESS);
		if (rsend_decide(s, SL_ERR_ACCESS))
			goto again;	/* @s left the list */
	}
}

/*
 * The connection is gone, and with it every grant and every RDMA write in
 * flight: each rendezvous past its RTR writes again only on an RTR sent
 * again (the receiver, which still holds its receive, sends it).
 */
void rndv_link_down(struct link *l)
{
	struct rndv_peer *rp = peer_of(l);
	struct rndv_recv *rr;
	struct rsend *s;

	TAILQ_FOREACH(rr, &rp->rndv_rx, link)
		rr->grant_rkey = 0;
	TAILQ_FOREACH(s, &rp->rndv_tx, rlink) {
		if (!s->recv_id || s->decided)
			continue;
		s->rtr_stale = true;
		s->w_off = 0;
		s->last_posted = false;
		s->write_failed = false;
	}
	rndv_tx_refused(l);
}

/* RTRs the peer had, for rendezvous whose writes the old connection
 * cut: ask again.  (Those it did not have are in the backlog again.) */
void rndv_link_resumed(struct link *l, uint64_t peer_rx)
{
	struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &peer_of(l)->rndv_rx, link)
		if (rr->rtr_sent && !rr->aborted && rr->rtr_seq && rr->rtr_seq <= peer_rx)
			rndv_send_rtr(rr);
}

/* Drop every unexpected rendezvous message for which @drop says so: a
 * local sender completes with @status, a remote one hears it if @tell. */
static void drop_rndv_where(struct daemon *d, bool (*drop)(const struct match_msg *, const void *),
			    const void *arg, int status, bool tell);

static bool from_node(const struct match_msg *m, const void *arg)
{
	const struct rndv_src *rs = m->rndv;

	return !rs->q && m->src.node == *(const uint32_t *)arg;
}

/*
 * Every rendezvous waiting on @l's peer ends with @status (the link has
 * ended its own messages just before): sends in rendezvous (those the
 * link still holds are its to end: decided already, or kept for the
 * peer's new incarnation); receiving rendezvous give their receive back
 * (completing it with @status only where it was overtaken); the
 * unexpected RTS headers from the peer go.  @tell: the peer is the same
 * incarnation and will hear of it (it may not have given up itself):
 * each rendezvous it started is refused with @status.
 */
void rndv_link_failed(struct link *l, int status, bool tell)
{
	struct rndv_peer *rp = peer_of(l);
	struct daemon *d = link_daemon(l);
	uint32_t node = link_node(l);
	struct rndv_recv *rr;
	struct rsend *s, *next;

	/* First out of the registration queue: a registration freed below
	 * must not call back into an operation of this peer while we walk
	 * its lists. */
	cancel_reg_waits(l);
	/* Not "while first": a send whose WR were still posted would stay
	 * (it finishes at its last completion) and that loop never end. */
	for (s = TAILQ_FIRST(&rp->rndv_tx); s; s = next) {
		next = TAILQ_NEXT(s, rlink);
		if (!s->in_link)
			rsend_decide(s, status);
	}
	drop_rndv_where(d, from_node, &node, status, tell);
	while ((rr = TAILQ_FIRST(&rp->rndv_rx))) {
		if (rr->aborted) {
			/* Its abort stays queued for the peer (or goes with a
			 * dead one); nothing writes until it has been heard. */
			rndv_recv_free(rr);
			continue;
		}
		if (tell) {
			/* Its buffer goes back: no RTR of ours may still send
			 * the peer writing into it. */
			link_drop_ctl(l, rtr_names, &rr->recv_id);
			queue_rtr(l, rr->send_id, 0, (uint32_t)status);
		}
		rndv_recv_giveback(rr, status);
	}
}

void rndv_peer_timed_out(struct link *l)
{
	endpoint_fail_recvs_from(link_daemon(l), link_node(l), SL_ERR_PEER_DOWN);
}

void rndv_link_counts(const struct link *l, uint32_t *sending, uint32_t *receiving,
		      uint32_t *past_rts)
{
	const struct rndv_peer *rp = peer_of(l);
	const struct rsend *s;
	uint32_t n = 0;

	TAILQ_FOREACH(s, &rp->rndv_tx, rlink)
		n += !s->in_link && !s->decided;
	*sending = link_rndv_counters((struct link *)l)->n_rndv_tx;
	*receiving = link_rndv_counters((struct link *)l)->n_rndv_rx;
	*past_rts = n;
}

static bool rsend_of_queue(const struct link_msg *m, void *arg)
{
	const struct rsend *s = container_of(m, const struct rsend, msg);

	return s->desc.q == arg;
}

void rndv_cancel_queue(struct daemon *d, struct queue *q)
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
		struct rsend *s, *next;

		/* Discarded: the queue is dead; this returns each send's slot
		 * reservation and its reference. */
		link_cancel_queued(l, rsend_of_queue, q, SL_ERR_CANCELED);
		/* Rendezvous no receiver has answered yet would hold the
		 * dead client's arena until one does; a late RTR gets a FIN
		 * that gives the receive back. */
		for (s = TAILQ_FIRST(&peer_of(l)->rndv_tx); s; s = next) {
			next = TAILQ_NEXT(s, rlink);
			if (s->desc.q == q && s->recv_id == 0)
				rsend_decide(s, SL_ERR_CANCELED);
		}
	}
}

bool rndv_queue_has_recv(const struct queue *q, uint64_t user_ctx)
{
	const struct rndv_recv *rr;

	TAILQ_FOREACH(rr, &q->claims, qlink)
		if (rr->r && !rr->r->desc.internal && rr->r->desc.user_ctx == user_ctx)
			return true;
	return false;
}

struct ctx_of_queue {
	const struct queue *q;
	uint64_t user_ctx;
};

static bool rsend_has_ctx(const struct rsend *s, const struct ctx_of_queue *k)
{
	return s->desc.q == k->q && s->desc.user_ctx == k->user_ctx;
}

static bool link_msg_has_ctx(const struct link_msg *m, void *arg)
{
	return rsend_has_ctx(container_of(m, const struct rsend, msg), arg);
}

/* Is @m a local rendezvous send of k->q with k->user_ctx? */
static bool local_send_has_ctx(const struct match_msg *m, const struct ctx_of_queue *k)
{
	const struct rndv_src *rs = m->rndv;

	return rs && rs->q == k->q && rs->user_ctx == k->user_ctx;
}

bool rndv_queue_has_send(struct daemon *d, const struct queue *q, uint64_t user_ctx)
{
	struct ctx_of_queue k = { .q = q, .user_ctx = user_ctx };
	const struct queue *dq;
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct link *l = d->links[i];
		const struct rndv_peer *rp = peer_of(l);
		const struct rsend *s;

		if (link_holds_msg(l, link_msg_has_ctx, &k))
			return true;
		TAILQ_FOREACH(s, &rp->rndv_tx, rlink)
			if (rsend_has_ctx(s, &k))
				return true;
		TAILQ_FOREACH(s, &rp->reap, reap_link)
			if (rsend_has_ctx(s, &k))
				return true;
	}
	TAILQ_FOREACH(dq, &d->queues, all) {
		const struct match_msg *m;
		const struct match_claim *c;

		TAILQ_FOREACH(m, &dq->mq.unexpected, link)
			if (local_send_has_ctx(m, &k))
				return true;
		TAILQ_FOREACH(c, &dq->mq.claimed, link)
			if (!c->status && local_send_has_ctx(c->m, &k))
				return true;
	}
	return false;
}

/* ---- the endpoint's side: unexpected headers, local rendezvous ---- */

/*
 * The send descriptor of local rendezvous message @m waiting at @dq.  Kept
 * as the three fields its header lacks rather than as a struct desc: the
 * header's size is the charge sluiced.conf(5) documents
 * (ENDPOINT_RNDV_CHARGE).
 */
static struct desc local_send_desc(const struct queue *dq, const struct match_msg *m)
{
	const struct rndv_src *rs = m->rndv;

	return (struct desc){ .q = rs->q, .opcode = SL_OP_SEND,
			      .peer = { dq->d->cfg.node_id, dq->port }, .tag = m->tag,
			      .addr = rs->addr, .len = m->len, .user_ctx = rs->user_ctx };
}

/* A local rendezvous send waiting unexpected at @dq will never match: its
 * descriptor completes with @status and its queue reference goes. */
static void local_rndv_fail(const struct queue *dq, const struct match_msg *m, int status)
{
	struct desc send = local_send_desc(dq, m);

	queue_complete(&send, status, NULL);
	queue_put(send.q);
}

static void drop_rndv_where(struct daemon *d, bool (*drop)(const struct match_msg *, const void *),
			    const void *arg, int status, bool tell)
{
	struct queue *q;

	TAILQ_FOREACH(q, &d->queues, all) {
		struct match_msg *m, *next;
		struct match_claim *c;

		for (m = TAILQ_FIRST(&q->mq.unexpected); m; m = next) {
			struct rndv_src *rs = m->rndv;

			next = TAILQ_NEXT(m, link);
			if (!rs || !drop(m, arg))
				continue;
			match_remove_unexpected(&q->mq, m);
			if (rs->q)
				local_rndv_fail(q, m, status);
			else if (tell)
				rndv_refuse(d, m->src.node, rs->send_id, (uint32_t)status);
			free(m);
		}
		/* A claimed one stays as its claim's record (match.h), so that
		 * sl_recv_claimed() hears why it cannot have it. */
		TAILQ_FOREACH(c, &q->mq.claimed, link) {
			struct rndv_src *rs = c->m->rndv;

			if (c->status || !rs || !drop(c->m, arg))
				continue;
			if (rs->q) {
				local_rndv_fail(q, c->m, status);
				rs->q = NULL;	/* its reference went */
				c->status = SL_ERR_NO_ENDPOINT;
			} else {
				if (tell)
					rndv_refuse(d, c->m->src.node, rs->send_id,
						    (uint32_t)status);
				c->status = giveback_status((uint32_t)status);
			}
			if (d->stopping)
				c->status = SL_ERR_CANCELED;
		}
	}
}

static bool from_queue(const struct match_msg *m, const void *arg)
{
	const struct rndv_src *rs = m->rndv;

	return rs->q && (!arg || rs->q == arg);
}

void rndv_cancel_local(struct daemon *d, struct queue *q)
{
	rndv_fail_local(d, q, SL_ERR_CANCELED);
}

void rndv_fail_local(struct daemon *d, struct queue *q, int status)
{
	drop_rndv_where(d, from_queue, q, status, false);
}

int rndv_send_local(const struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct daemon *d = q->d;
	struct queue *dq = endpoint_of(d, dsc->peer.port);
	sl_addr_t src = { d->cfg.node_id, q->port };
	struct match_recv *r;
	struct match_msg *m;
	struct rndv_src *rs;
	int status;

	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	r = endpoint_arrival(dq, src, dsc->tag);
	if (r) {
		copy_start(r, dsc);
		return -EINPROGRESS;	/* completes when copied */
	}
	m = endpoint_unexpected_new(d, dq, src, q->uid, dsc->tag, dsc->len, 0, sizeof(*rs),
				    &status);
	if (!m)
		return status;
	rs = m->rndv;
	*rs = (struct rndv_src){ .q = q, .addr = dsc->addr, .user_ctx = dsc->user_ctx };
	queue_get(q);
	endpoint_add_unexpected(dq, m);
	return -EINPROGRESS;	/* completes at the match */
}

/* An RTS from @l's peer: a receive that accepts it starts the
 * rendezvous; otherwise its header (only) waits unexpected. */
int rndv_rx_rts(struct link *l, const struct sl_wire_frame *wf)
{
	struct daemon *d = link_daemon(l);
	sl_addr_t src = { link_node(l), wf->u.rts.src_port };
	uint32_t uid = link_auth_sender_uid(l, wf->u.rts.sender_uid);
	struct queue *dq;
	struct match_recv *r;
	struct match_msg *m;
	struct rndv_src *rs;
	int status;

	if (wf->u.rts.dst_node != d->cfg.node_id)
		return SL_ERR_NO_ENDPOINT;
	dq = endpoint_of(d, wf->u.rts.dst_port);
	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	d->ctr.remote_msgs_rx++;
	r = endpoint_arrival(dq, src, wf->u.rts.tag);
	if (r) {
		if (!rndv_recv_start(d, dq, r, src, uid, wf->u.rts.tag, wf->u.rts.msg_len,
				     wf->u.rts.send_id))
			endpoint_repost(dq, r);	/* the sender was told */
		return SL_OK;
	}
	m = endpoint_unexpected_new(d, dq, src, uid, wf->u.rts.tag, wf->u.rts.msg_len, 0,
				    sizeof(*rs), &status);
	if (!m)
		return status;
	rs = m->rndv;
	*rs = (struct rndv_src){ .send_id = wf->u.rts.send_id };
	endpoint_add_unexpected(dq, m);
	return SL_OK;
}

static bool hook_take(struct queue *q, struct match_recv *r, const struct match_msg *m)
{
	const struct rndv_src *rs = m->rndv;

	if (rs->q) {
		struct desc send = local_send_desc(q, m);

		/* The one copy, in slices (copy.h); it owns @r now. */
		copy_start(r, &send);
		queue_put(rs->q);
		return true;
	}
	return rndv_recv_start(q->d, q, r, m->src, m->sender_uid, m->tag, m->len, rs->send_id);
}

static void hook_drop(struct queue *q, const struct match_msg *m, int status)
{
	const struct rndv_src *rs = m->rndv;

	if (rs->q)
		local_rndv_fail(q, m, status);
	else if (!q->d->stopping)
		rndv_refuse(q->d, m->src.node, rs->send_id, (uint32_t)status);
}

/*
 * A message from @src with @tag met receive @r of @q.  A rendezvous that
 * holds an earlier-posted receive which would have taken this message too
 * has now been overtaken: should it fail, its receive may not go back to
 * its place, or a later message (from this source, or from any source for
 * a wildcard receive) would land before this one in post order
 * (rndv_recv_giveback).
 */
static void hook_matched(struct queue *q, sl_addr_t src, uint64_t tag, const struct match_recv *r)
{
	struct rndv_recv *rr;

	/* An aborted rendezvous (rndv_recv_abort) holds no receive any
	 * more while it waits for the sender's FIN. */
	TAILQ_FOREACH(rr, &q->claims, qlink)
		if (rr->r && rr->r->post_seq < r->post_seq && match_accepts(rr->r, src, tag))
			rr->overtaken = true;
}

const struct endpoint_rndv_hooks rndv_endpoint_hooks = {
	.take = hook_take,
	.drop = hook_drop,
	.matched = hook_matched,
};
