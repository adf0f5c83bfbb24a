/*
 * engine.c - what happens to a descriptor: validation, then a receive
 * posted at its endpoint, a send delivered within the node or handed to
 * the rendezvous of a link; and the unwinding of a queue that closes or
 * fails.  See engine.h.  Matching and eager delivery are the endpoint's
 * (endpoint.c), rendezvous and remote sends rndv.c's.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "daemon.h"
#include "endpoint.h"
#include "engine.h"
#include "link.h"
#include "link_auth.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"
#include "rndv.h"

static bool port_valid(uint32_t port)
{
	return port >= 1 && port < SLD_PORTS;
}

/* A source filter: a port, or SL_PORT_ANY (any node, wildcards too). */
static bool filter_valid(const struct desc *sqe)
{
	return sqe->peer.port == SL_PORT_ANY || port_valid(sqe->peer.port);
}

/* Fields a kind leaves unused are 0 (sl_shm.h): peer, tag and tag_mask
 * (RECV_CLAIMED, CANCEL); addr and len too (CANCEL). */
static bool no_filter(const struct desc *sqe)
{
	return sqe->peer.node == 0 && sqe->peer.port == 0 && sqe->tag == 0 && sqe->tag_mask == 0;
}

int engine_validate(const struct desc *sqe)
{
	const struct queue *q = sqe->q;

	if (sqe->rsvd_set)
		return SL_ERR_INVALID;
	/* Flags only on a probe, a claim only on a RECV_CLAIMED. */
	if (sqe->flags && sqe->opcode != SL_SQE_OP_PROBE)
		return SL_ERR_INVALID;
	if (sqe->claim && sqe->opcode != SL_SQE_OP_RECV_CLAIMED)
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
		return filter_valid(sqe) ? SL_OK : SL_ERR_INVALID;
	case SL_SQE_OP_PROBE:
		if ((sqe->flags & ~(SL_PROBE_CLAIM | SL_PROBE_DISCARD)) ||
		    sqe->flags == (SL_PROBE_CLAIM | SL_PROBE_DISCARD) || sqe->addr || sqe->len ||
		    !filter_valid(sqe))
			return SL_ERR_INVALID;
		return SL_OK;
	case SL_SQE_OP_RECV_CLAIMED:
		return sqe->claim && no_filter(sqe) ? SL_OK : SL_ERR_INVALID;
	case SL_SQE_OP_CANCEL:
		return no_filter(sqe) && !sqe->addr && !sqe->len ? SL_OK : SL_ERR_INVALID;
	default:
		return SL_ERR_INVALID;
	}
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
	if (!endpoint_post_recv(q, r))
		return;
	if (dsc->peer.node == q->d->cfg.node_id || dsc->peer.node == SL_NODE_ANY)
		return;
	/* Posted, it waits on the peer's link (recv_named), which it woke.
	 * Nothing here from it, and nothing will come until it is back. */
	if (link_node_timed_out(q->d, dsc->peer.node)) {
		match_remove_recv(&q->mq, r);
		queue_complete(&r->desc, SL_ERR_PEER_DOWN, NULL);
		free(r);
	}
}

/* sl_recv_claimed(): a receive of exactly the message of dsc->claim. */
static void submit_recv_claimed(struct desc *dsc)
{
	struct match_recv *r = malloc(sizeof(*r));

	if (!r) {
		queue_complete(dsc, SL_NAK_BUSY, NULL);
		return;
	}
	r->desc = *dsc;
	endpoint_recv_claimed(dsc->q, r);
}

/*
 * sl_cancel(): the oldest posted receive with the cancel's user_ctx
 * completes SL_ERR_CANCELED, then the cancel SL_OK (two descriptors, two
 * CQ slots held).  Without one, the cancel says why: SL_ERR_INVALID when
 * only sends of the queue carry that user_ctx, SL_ERR_NOT_FOUND
 * otherwise (a receive of it matched already, or none is in flight).
 */
static void submit_cancel(struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct daemon *d = q->d;
	uint64_t ctx = dsc->user_ctx;
	int status = SL_ERR_NOT_FOUND;

	if (endpoint_cancel_recv(q, ctx))
		status = SL_OK;
	else if (!rndv_queue_has_recv(q, ctx) && !copy_has_ctx(d, q, ctx, true) &&
		 (rndv_queue_has_send(d, q, ctx) || copy_has_ctx(d, q, ctx, false)))
		status = SL_ERR_INVALID;
	queue_complete(dsc, status, NULL);
}

static void submit_send(struct desc *dsc)
{
	struct queue *q = dsc->q;
	struct daemon *d = q->d;
	struct link *l;
	int status, rc;

	if (dsc->peer.node == d->cfg.node_id && dsc->len > d->cfg.eager_max) {
		status = rndv_send_local(dsc);
		if (status == -EINPROGRESS)
			return;
		if (status == SL_ERR_NO_ENDPOINT)
			d->ctr.no_endpoint++;
		queue_complete(dsc, status, NULL);
		return;
	}
	if (dsc->peer.node == d->cfg.node_id) {
		status = endpoint_deliver(d, (sl_addr_t){ d->cfg.node_id, q->port }, q->uid,
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
	} else if ((rc = rndv_send_remote(l, dsc)) < 0) {
		status = rc == -EHOSTDOWN ? SL_ERR_PEER_DOWN : SL_NAK_BUSY;
	} else {
		return;	/* completes when the peer acknowledges */
	}
	queue_complete(dsc, status, NULL);
}

void engine_submit(struct desc *dsc)
{
	struct daemon *d = dsc->q->d;
	uint8_t kind = dsc->opcode;
	int status;

	/* Before SL_NODE_LOCAL is made a real id: RECV_CLAIMED and CANCEL
	 * must leave the peer 0. */
	status = engine_validate(dsc);
	/* Messages and completions carry real node ids, refused ones too. */
	if (dsc->peer.node == SL_NODE_LOCAL)
		dsc->peer.node = d->cfg.node_id;
	/* A claimed receive completes as a receive, refused ones too. */
	if (kind == SL_SQE_OP_RECV_CLAIMED)
		dsc->opcode = SL_OP_RECV;
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
	switch (kind) {
	case SL_SQE_OP_RECV:
		submit_recv(dsc);
		break;
	case SL_SQE_OP_RECV_CLAIMED:
		submit_recv_claimed(dsc);
		break;
	case SL_SQE_OP_PROBE:
		endpoint_probe(dsc->q, dsc);
		break;
	case SL_SQE_OP_CANCEL:
		submit_cancel(dsc);
		break;
	default:
		submit_send(dsc);
		break;
	}
}

void engine_close_queue(struct queue *q)
{
	struct daemon *d = q->d;
	struct match_msg *m;

	if (q->dead)
		return;
	queue_kill(q);
	while ((m = match_pop_unexpected(&q->mq)))
		endpoint_drop_unexpected(q, m);
	endpoint_drop_claimed(q);
	rndv_cancel_local(d, q);
	copy_end_queue(d, q, SL_ERR_CANCELED);	/* discarded: the queue is dead */
	rndv_cancel_queue(d, q);
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
			 "%s (%u more queues failed unlogged)", q->owner ? (int)q->charge.pid : -1,
			 q->id, q->port, why, sl_strerror(status), unlogged);
		logged_at = now;
		unlogged = 0;
	} else {
		unlogged++;
	}
	copy_end_queue(d, q, status);
	rndv_fail_local(d, q, status);
	queue_end_receives(q, status);
	/* Nothing will receive these: their senders hear it, as at a close;
	 * new messages find no endpoint. */
	while ((m = match_pop_unexpected(&q->mq)))
		endpoint_drop_unexpected(q, m);
	endpoint_drop_claimed(q);
}

/* A receive naming a peer waits on its link (link_wait_add): the link
 * stays up and watched while one is posted. */
static void recv_named(struct match_queues *mq, uint32_t node, int delta)
{
	struct queue *q = container_of(mq, struct queue, mq);
	struct link *l;

	if (node == q->d->cfg.node_id)
		return;
	/* None when the peer was removed: its receives fail as it goes. */
	l = link_find(q->d, node);
	if (l)
		link_wait_add(l, delta);
}

void engine_init(struct daemon *d)
{
	endpoint_init(d, &rndv_endpoint_hooks);
	d->recv_named = recv_named;
}

void engine_stop(struct daemon *d)
{
	struct queue *q;

	/* Local rendezvous sends wait in their receivers' queues: complete
	 * them while their own queues are alive, whatever the order the
	 * queues go in. */
	rndv_cancel_local(d, NULL);
	copy_cancel_all(d);
	TAILQ_FOREACH(q, &d->queues, all)
		queue_end_receives(q, SL_ERR_CANCELED);
}

/* An EAGER frame from @l's peer. */
static int rx_eager(struct link *l, const struct sl_wire_frame *wf, const uint8_t *payload)
{
	struct daemon *d = link_daemon(l);
	int status;

	if (wf->u.eager.dst_node != d->cfg.node_id)
		return SL_ERR_NO_ENDPOINT;
	if (wf->payload_len > d->cfg.eager_max)
		return SL_ERR_INVALID;
	status = endpoint_deliver(d, (sl_addr_t){ link_node(l), wf->u.eager.src_port },
				  link_auth_sender_uid(l, wf->u.eager.sender_uid),
				  wf->u.eager.dst_port, wf->u.eager.tag, payload, wf->payload_len);
	d->ctr.remote_msgs_rx++;
	if (status == SL_OK)
		link_count_msg(l, false, wf->payload_len);
	return status;
}

const struct link_handlers engine_link_handlers = {
	.attach = rndv_link_attach,
	.detach = rndv_link_detach,
	.eager = rx_eager,
	.rts = rndv_rx_rts,
	.rtr = rndv_rx_rtr,
	.fin = rndv_rx_fin,
	.done = rndv_rx_done,
	.rtr_prepare = rndv_rtr_prepare,
	.rtr_posted = rndv_rtr_posted,
	.write_imm = rndv_write_imm,
	.write_placed = rndv_write_placed,
	.write_refused = rndv_write_refused,
	.flush = rndv_link_flush,
	.went_down = rndv_link_down,
	.resumed = rndv_link_resumed,
	.failed = rndv_link_failed,
	.peer_timed_out = rndv_peer_timed_out,
	.counts = rndv_link_counts,
};
