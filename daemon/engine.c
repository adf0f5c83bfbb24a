/*
 * engine.c - descriptor dispatch, matching and delivery.  See engine.h.
 *
 * A message above eager_max is a rendezvous: until a receive matches, the
 * destination holds only its header (struct match_msg plus struct
 * rndv_src), charged against unexpected_max_bytes like any message, and
 * the data stays in the sender's arena.  Within the node the match then
 * copies once, arena to arena, in slices across loop iterations (copy.h);
 * between nodes the link runs RTR/RDMA write.
 *
 * The charge of an unexpected message is the documented one
 * (sluiced.conf(5)): an eager message its length plus
 * UNEXPECTED_OVERHEAD, a rendezvous one UNEXPECTED_RNDV_CHARGE.  The
 * endpoint's unexpected_bytes gauge is the sum of these, the very number
 * the bound is compared with.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "daemon.h"
#include "engine.h"
#include "link.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"
#include "session.h"

/* Where an unexpected rendezvous message's data waits. */
struct rndv_src {
	struct queue *q;	/* local: the sender's queue, referenced; NULL remote */
	uint64_t addr;		/* local: the send's arena offset */
	uint64_t user_ctx;	/* local: the send's descriptor */
	uint64_t send_id;	/* remote: the sender's name for it */
};

/*
 * The send descriptor of local rendezvous message @m waiting at @dq.  Kept
 * as the three fields its header lacks rather than as a struct desc: the
 * header's size is the charge sluiced.conf(5) documents
 * (UNEXPECTED_RNDV_CHARGE below).
 */
static struct desc local_send_desc(const struct queue *dq, const struct match_msg *m)
{
	const struct rndv_src *rs = m->rndv;

	return (struct desc){ .q = rs->q, .opcode = SL_OP_SEND,
			      .peer = { dq->d->cfg.node_id, dq->port }, .tag = m->tag,
			      .addr = rs->addr, .len = m->len, .user_ctx = rs->user_ctx };
}

static bool port_valid(uint32_t port)
{
	return port >= 1 && port < SLD_PORTS;
}

/* The queue that takes messages for @port: none when unbound, or when
 * its queue has failed (engine_fail_queue: it can receive nothing more). */
static struct queue *endpoint(struct daemon *d, uint32_t port)
{
	struct queue *q = port < SLD_PORTS ? d->ports[port] : NULL;

	return q && !q->failed ? q : NULL;
}

int engine_validate(const struct desc *sqe)
{
	const struct queue *q = sqe->q;

	if (sqe->flags || sqe->rsvd_set)
		return SL_ERR_INVALID;
	/* Overflow-safe: addr + len <= arena_size. */
	if (sqe->len > q->arena_size || sqe->addr > q->arena_size - sqe->len)
		return SL_ERR_INVALID;
	switch (sqe->opcode) {
	case SL_SQE_OP_SEND:
		if (sqe->tag_mask || sqe->peer.node == SL_NODE_ANY ||
		    !port_valid(sqe->peer.port) || sqe->len > SL_MSG_MAX)
			return SL_ERR_INVALID;
		return SL_OK;
	case SL_SQE_OP_RECV:
		if (sqe->peer.port != SL_PORT_ANY && !port_valid(sqe->peer.port))
			return SL_ERR_INVALID;
		return SL_OK;
	default:
		return SL_ERR_INVALID;
	}
}

/*
 * A message from @src with @tag met receive @r of @q.  A rendezvous that
 * holds an earlier-posted receive which would have taken this message too
 * has now been overtaken: should it fail, its receive may not go back to
 * its place, or a later message (from this source, or from any source for
 * a wildcard receive) would land before this one in post order (link.c,
 * rndv_recv_giveback).
 */
static void note_match(struct queue *q, sl_addr_t src, uint64_t tag, const struct match_recv *r)
{
	struct rndv_recv *rr;

	/* An aborted rendezvous (link.c rndv_recv_abort) holds no receive
	 * any more while it waits for the sender's FIN. */
	TAILQ_FOREACH(rr, &q->claims, qlink)
		if (rr->r && rr->r->post_seq < r->post_seq && match_accepts(rr->r, src, tag))
			rr->overtaken = true;
}

/* Copy a matched message into a posted receive and complete it. */
static void complete_recv(struct queue *q, const struct match_recv *r, sl_addr_t src,
			  uint32_t sender_uid, uint64_t tag, const void *data, uint64_t len)
{
	uint64_t n = len <= r->desc.len ? len : r->desc.len;
	struct desc_msg msg = { .src = src, .sender_uid = sender_uid, .tag = tag, .len = len };

	/* memmove: a queue may send to itself from an overlapping buffer. */
	if (n)
		memmove(q->arena + r->desc.addr, data, n);
	queue_complete(&r->desc, len <= r->desc.len ? SL_OK : SL_ERR_TRUNCATED, &msg);
}

/*
 * Bytes an unexpected message is charged beyond its payload, since a flood
 * of small messages costs memory too.  Fixed numbers, not sizeof, so that
 * the charge the manual gives does not move with a structure; the asserts
 * keep them at least what is allocated.
 */
#define UNEXPECTED_OVERHEAD 64u
#define UNEXPECTED_RNDV_CHARGE 96u
_Static_assert(sizeof(struct match_msg) <= UNEXPECTED_OVERHEAD,
	       "an unexpected message costs more than sluiced.conf(5) says");
_Static_assert(sizeof(struct match_msg) + sizeof(struct rndv_src) <= UNEXPECTED_RNDV_CHARGE,
	       "an unexpected rendezvous costs more than sluiced.conf(5) says");

/*
 * An unexpected message for @dq that holds @held bytes of payload (and,
 * for a rendezvous, a struct rndv_src): NULL with *status set when its
 * charge would take the endpoint past its bound (refused before
 * allocating: the sender keeps its buffer and may retry once the receiver
 * has taken some messages), memory is short, or the daemon is stopping.
 * No overflow: the endpoint's charge is at most the bound (64 GiB) and
 * held is at most eager_max.
 */
static struct match_msg *unexpected_new(struct daemon *d, struct queue *dq, sl_addr_t src,
					uint32_t sender_uid, uint64_t tag, uint64_t len,
					uint64_t held, bool rndv, int *status)
{
	size_t extra = rndv ? sizeof(struct rndv_src) : 0;
	uint64_t charge = rndv ? UNEXPECTED_RNDV_CHARGE : held + UNEXPECTED_OVERHEAD;
	struct match_msg *m;

	/* Stopping: no receive can be posted for it any more (new
	 * descriptors are canceled) and it would go with the daemon, after
	 * its sender heard SL_OK.  The sender hears what a BYE would say. */
	if (d->draining) {
		*status = SL_ERR_PEER_DOWN;
		return NULL;
	}
	if (dq->mq.unexpected_bytes + charge > d->cfg.unexpected_max_bytes) {
		d->ctr.naks_receiver_full++;
		*status = SL_NAK_RECEIVER_FULL;
		return NULL;
	}
	m = malloc(sizeof(*m) + extra + held);
	if (!m) {
		*status = SL_NAK_BUSY;
		return NULL;
	}
	m->src = src;
	m->tag = tag;
	m->len = len;
	m->charge = (uint32_t)charge;	/* held <= eager_max (1 MiB at most) */
	m->sender_uid = sender_uid;
	m->data = rndv ? NULL : (uint8_t *)(m + 1);
	m->rndv = rndv ? (void *)(m + 1) : NULL;
	return m;
}

int engine_deliver(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		   uint64_t tag, const void *data, uint64_t len)
{
	struct queue *dq = endpoint(d, dst_port);
	struct match_recv *r;
	struct match_msg *m;
	int status;

	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	r = match_arrival(&dq->mq, src, tag);
	if (r) {
		note_match(dq, src, tag, r);
		complete_recv(dq, r, src, sender_uid, tag, data, len);
		free(r);
		return SL_OK;
	}
	m = unexpected_new(d, dq, src, sender_uid, tag, len, len, false, &status);
	if (!m)
		return status;
	if (len)
		memcpy(m->data, data, len);
	match_add_unexpected(&dq->mq, m);
	d->ctr.unexpected++;
	return SL_OK;
}

int engine_deliver_rts(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		       uint64_t tag, uint64_t msg_len, uint64_t send_id)
{
	struct queue *dq = endpoint(d, dst_port);
	struct match_recv *r;
	struct match_msg *m;
	struct rndv_src *rs;
	int status;

	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	d->ctr.remote_msgs_rx++;
	r = match_arrival(&dq->mq, src, tag);
	if (r) {
		note_match(dq, src, tag, r);
		if (!link_rndv_recv_start(d, dq, r, src, sender_uid, tag, msg_len, send_id))
			engine_repost(dq, r);	/* the sender was told */
		return SL_OK;
	}
	m = unexpected_new(d, dq, src, sender_uid, tag, msg_len, 0, true, &status);
	if (!m)
		return status;
	rs = m->rndv;
	*rs = (struct rndv_src){ .send_id = send_id };
	match_add_unexpected(&dq->mq, m);
	d->ctr.unexpected++;
	return SL_OK;
}

/*
 * Receive @r of @q takes unexpected message @m (both unlinked).  Returns
 * true when @r was used up (delivered, or a rendezvous started), false
 * when a remote rendezvous could not start and @r is still the caller's.
 * @m is freed either way.
 */
static bool recv_take(struct queue *q, struct match_recv *r, struct match_msg *m)
{
	struct rndv_src *rs = m->rndv;
	bool taken = true;

	note_match(q, m->src, m->tag, r);
	if (!rs) {
		complete_recv(q, r, m->src, m->sender_uid, m->tag, m->data, m->len);
		free(r);
	} else if (rs->q) {
		struct desc send = local_send_desc(q, m);

		/* The one copy, in slices (copy.h); it owns @r now. */
		copy_start(r, &send);
		queue_put(rs->q);
	} else {
		taken = link_rndv_recv_start(q->d, q, r, m->src, m->sender_uid, m->tag, m->len,
					     rs->send_id);
	}
	free(m);
	return taken;
}

void engine_repost(struct queue *q, struct match_recv *r)
{
	struct match_msg *m;

	if (q->dead || q->d->stopping) {
		queue_complete(&r->desc, SL_ERR_CANCELED, NULL);
		free(r);
		return;
	}
	/* Each failed start used up one unexpected message: this ends. */
	while ((m = match_repost(&q->mq, r)))
		if (recv_take(q, r, m))
			return;
}

/* A local rendezvous send waiting unexpected at @q will never match: its
 * descriptor completes with @status and its queue reference goes. */
static void local_rndv_fail(const struct queue *dq, const struct match_msg *m, int status)
{
	struct desc send = local_send_desc(dq, m);

	queue_complete(&send, status, NULL);
	queue_put(send.q);
}

void engine_drop_unexpected(struct queue *q, struct match_msg *m)
{
	struct daemon *d = q->d;
	struct rndv_src *rs = m->rndv;
	int status = d->stopping ? SL_ERR_CANCELED : SL_ERR_NO_ENDPOINT;

	if (rs && rs->q) {
		local_rndv_fail(q, m, status);
	} else if (rs && !d->stopping) {
		link_rndv_refuse(d, m->src.node, rs->send_id, (uint32_t)status);
	}
	free(m);
}

/* Drop every unexpected rendezvous message for which @drop says so: a
 * local sender completes with @status, a remote one hears it if @tell. */
static void drop_rndv_where(struct daemon *d, bool (*drop)(const struct match_msg *, const void *),
			    const void *arg, int status, bool tell)
{
	struct queue *q;

	TAILQ_FOREACH(q, &d->queues, all) {
		struct match_msg *m, *next;

		for (m = TAILQ_FIRST(&q->mq.unexpected); m; m = next) {
			struct rndv_src *rs = m->rndv;

			next = TAILQ_NEXT(m, link);
			if (!rs || !drop(m, arg))
				continue;
			match_remove_unexpected(&q->mq, m);
			if (rs->q)
				local_rndv_fail(q, m, status);
			else if (tell)
				link_rndv_refuse(d, m->src.node, rs->send_id, (uint32_t)status);
			free(m);
		}
	}
}

static bool from_node(const struct match_msg *m, const void *arg)
{
	const struct rndv_src *rs = m->rndv;

	return !rs->q && m->src.node == *(const uint32_t *)arg;
}

static bool from_queue(const struct match_msg *m, const void *arg)
{
	const struct rndv_src *rs = m->rndv;

	return rs->q && (!arg || rs->q == arg);
}

void engine_drop_rndv_from(struct daemon *d, uint32_t node, int status, bool tell)
{
	drop_rndv_where(d, from_node, &node, status, tell);
}

void engine_fail_recvs_from(struct daemon *d, uint32_t node, int status)
{
	struct queue *q;

	TAILQ_FOREACH(q, &d->queues, all) {
		struct match_recv *r, *next;

		for (r = TAILQ_FIRST(&q->mq.posted); r; r = next) {
			next = TAILQ_NEXT(r, link);
			if (r->desc.peer.node != node)
				continue;
			match_remove_recv(&q->mq, r);
			queue_complete(&r->desc, status, NULL);
			free(r);
		}
	}
}

void engine_cancel_local_rndv(struct daemon *d, struct queue *q)
{
	engine_fail_local_rndv(d, q, SL_ERR_CANCELED);
}

void engine_fail_local_rndv(struct daemon *d, struct queue *q, int status)
{
	drop_rndv_where(d, from_queue, q, status, false);
}

/*
 * A send or receive names @node, which is neither this node nor a peer:
 * count it, and log each such node once (a typo in a node name, or a
 * configuration that lacks the node), up to ENGINE_UNKNOWN_LOGGED of them;
 * the counter keeps counting after that.
 */
static void note_unknown_node(struct daemon *d, uint32_t node)
{
	unsigned i, n = d->n_unknown_logged;

	d->ctr.unknown_node++;
	for (i = 0; i < n; i++)
		if (d->unknown_logged[i] == node)
			return;
	if (n == ENGINE_UNKNOWN_LOGGED)
		return;
	d->unknown_logged[d->n_unknown_logged++] = node;
	log_warn("node %08x is not this node and not one of its %zu peers: its sends and "
		 "receives complete SL_ERR_UNKNOWN_NODE (a typo in a node name? add it to "
		 "[peers] or --peer)%s", node, d->n_links,
		 n + 1 == ENGINE_UNKNOWN_LOGGED ? "; further unknown nodes are counted in "
						  "daemon.unknown_node, not logged" : "");
}

/* Is @node this daemon's or one of its peers'? */
static bool node_known(struct daemon *d, uint32_t node)
{
	return node == d->cfg.node_id || node == SL_NODE_ANY || link_find(d, node);
}

static void submit_recv(struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct match_recv *r;
	struct match_msg *m;

	if (!node_known(q->d, dsc->peer.node)) {
		/* No message can come from there: say so now. */
		note_unknown_node(q->d, dsc->peer.node);
		queue_complete(dsc, SL_ERR_UNKNOWN_NODE, NULL);
		return;
	}
	r = malloc(sizeof(*r));
	if (!r) {
		queue_complete(dsc, SL_NAK_BUSY, NULL);
		return;
	}
	r->desc = *dsc;
	m = match_post_recv(&q->mq, r);
	if (m) {
		if (!recv_take(q, r, m))
			engine_repost(q, r);
		return;
	}
	/* Nothing here from it, and nothing will come until it is back. */
	if (dsc->peer.node != q->d->cfg.node_id && dsc->peer.node != SL_NODE_ANY &&
	    link_node_timed_out(q->d, dsc->peer.node)) {
		match_remove_recv(&q->mq, r);
		queue_complete(&r->desc, SL_ERR_PEER_DOWN, NULL);
		free(r);
	}
}

/* A local message above eager_max: one copy once a receive matches. */
static int send_local_rndv(const struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct daemon *d = q->d;
	struct queue *dq = endpoint(d, dsc->peer.port);
	sl_addr_t src = { d->cfg.node_id, q->port };
	struct match_recv *r;
	struct match_msg *m;
	struct rndv_src *rs;
	int status;

	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	r = match_arrival(&dq->mq, src, dsc->tag);
	if (r) {
		note_match(dq, src, dsc->tag, r);
		copy_start(r, dsc);
		return -EINPROGRESS;	/* completes when copied */
	}
	m = unexpected_new(d, dq, src, q->uid, dsc->tag, dsc->len, 0, true, &status);
	if (!m)
		return status;
	rs = m->rndv;
	*rs = (struct rndv_src){ .q = q, .addr = dsc->addr, .user_ctx = dsc->user_ctx };
	queue_get(q);
	match_add_unexpected(&dq->mq, m);
	d->ctr.unexpected++;
	return -EINPROGRESS;	/* completes at the match */
}

static void submit_send(struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct daemon *d = q->d;
	struct link *l;
	int status, rc;

	if (dsc->peer.node == d->cfg.node_id && dsc->len > d->cfg.eager_max) {
		status = send_local_rndv(dsc);
		if (status == -EINPROGRESS)
			return;
		if (status == SL_ERR_NO_ENDPOINT)
			d->ctr.no_endpoint++;
		queue_complete(dsc, status, NULL);
		return;
	}
	if (dsc->peer.node == d->cfg.node_id) {
		status = engine_deliver(d, (sl_addr_t){ d->cfg.node_id, q->port }, q->uid,
					dsc->peer.port, dsc->tag, q->arena + dsc->addr, dsc->len);
		if (status == SL_OK)
			d->ctr.local_msgs++;
		else if (status == SL_ERR_NO_ENDPOINT)
			d->ctr.no_endpoint++;
		queue_complete(dsc, status, NULL);
		return;
	}
	l = link_find(d, dsc->peer.node);
	if (!l) {
		note_unknown_node(d, dsc->peer.node);
		status = SL_ERR_UNKNOWN_NODE;
	} else if ((rc = link_send(l, dsc)) < 0) {
		status = rc == -EHOSTDOWN ? SL_ERR_PEER_DOWN : SL_NAK_BUSY;
	} else {
		return;	/* completes when the peer acknowledges */
	}
	queue_complete(dsc, status, NULL);
}

void engine_submit(struct desc *dsc)
{
	struct daemon *d = dsc->q->d;
	int status;

	/* Messages and completions carry real node ids, refused ones too. */
	if (dsc->peer.node == SL_NODE_LOCAL)
		dsc->peer.node = d->cfg.node_id;
	status = engine_validate(dsc);
	/* Stopping (service.h): nothing new starts, it ends at once. */
	if (status == SL_OK && d->draining)
		status = SL_ERR_CANCELED;
	if (status == SL_OK && dsc->q->failed)
		status = dsc->q->failed;	/* engine_fail_queue() */
	if (status != SL_OK) {
		if (status == SL_ERR_INVALID)
			d->ctr.invalid++;
		queue_complete(dsc, status, NULL);
		return;
	}
	if (dsc->opcode == SL_OP_RECV)
		submit_recv(dsc);
	else
		submit_send(dsc);
}

void engine_close_queue(struct queue *q)
{
	struct daemon *d = q->d;
	struct match_msg *m;

	if (q->dead)
		return;
	queue_kill(q);
	while ((m = match_pop_unexpected(&q->mq)))
		engine_drop_unexpected(q, m);
	engine_cancel_local_rndv(d, q);
	copy_end_queue(d, q, SL_ERR_CANCELED);	/* discarded: the queue is dead */
	link_cancel_queue(d, q);
	/* Idle registrations go now, held ones at their last put, before
	 * the segment can be unmapped (operations hold queue references). */
	if (rcache_drop_owner(d->rc, q->id) < 0)
		log_warn("queue %u: not known to the registration cache", q->id);
	queue_put(q);
}

/* At most one engine_fail_queue() line per this many seconds. */
#define FAIL_LOG_PERIOD_S 1.0

void engine_fail_queue(struct queue *q, int status, const char *why)
{
	static ev_tstamp logged_at = -FAIL_LOG_PERIOD_S;
	static unsigned unlogged;
	struct daemon *d = q->d;
	ev_tstamp now = ev_now(d->loop);
	struct match_msg *m;

	if (q->dead || q->failed)
		return;
	q->failed = status;
	if (now - logged_at >= FAIL_LOG_PERIOD_S) {
		log_warn("client pid %d: queue %u (port %u) failed: %s; its descriptors complete "
			 "%s (%u more queues failed unlogged)", q->owner ? (int)q->owner->pid : -1,
			 q->id, q->port, why, sl_strerror(status), unlogged);
		logged_at = now;
		unlogged = 0;
	} else {
		unlogged++;
	}
	copy_end_queue(d, q, status);
	engine_fail_local_rndv(d, q, status);
	queue_end_receives(q, status);
	/* Nothing will receive these: their senders hear it, as at a close;
	 * new messages find no endpoint. */
	while ((m = match_pop_unexpected(&q->mq)))
		engine_drop_unexpected(q, m);
}

const struct link_handlers engine_link_handlers = {
	.deliver = engine_deliver,
	.deliver_rts = engine_deliver_rts,
	.repost = engine_repost,
	.drop_rndv_from = engine_drop_rndv_from,
	.fail_recvs_from = engine_fail_recvs_from,
};
