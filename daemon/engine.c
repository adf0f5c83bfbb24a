/*
 * engine.c - descriptor dispatch, matching and delivery.  See engine.h.
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

void engine_complete(struct queue *q, uint8_t opcode, sl_addr_t peer, uint64_t tag,
		     uint64_t len, uint64_t user_ctx, int status)
{
	struct sl_cqe cqe = {
		.user_ctx = user_ctx,
		.len = len,
		.tag = tag,
		.peer = peer,
		.status = status,
		.opcode = opcode,
	};

	queue_complete(q, &cqe);
}

static bool port_valid(uint32_t port)
{
	return port >= 1 && port < SLD_PORTS;
}

int engine_validate(const struct queue *q, const struct sl_sqe *sqe)
{
	if (sqe->flags || sqe->rsvd0 || sqe->rsvd1 || sqe->rsvd2)
		return SL_ERR_INVALID;
	/* Overflow-safe: addr + len <= arena_size. */
	if (sqe->len > q->arena_size || sqe->addr > q->arena_size - sqe->len)
		return SL_ERR_INVALID;
	switch (sqe->opcode) {
	case SL_SQE_OP_SEND:
		if (sqe->tag_mask || sqe->peer.node == SL_NODE_ANY ||
		    !port_valid(sqe->peer.port) || sqe->len > UINT32_MAX)
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

/* Copy a matched message into a posted receive and complete it. */
static void complete_recv(struct queue *q, const struct match_recv *r, sl_addr_t src,
			  uint64_t tag, const void *data, uint64_t len)
{
	uint64_t n = len <= r->capacity ? len : r->capacity;

	/* memmove: a queue may send to itself from an overlapping buffer. */
	if (n)
		memmove(q->arena + r->addr, data, n);
	engine_complete(q, SL_OP_RECV, src, tag, len, r->user_ctx,
			len <= r->capacity ? SL_OK : SL_ERR_TRUNCATED);
}

/*
 * What the unexpected messages of @mq cost the daemon: payloads plus one
 * struct match_msg each, since a flood of small messages costs memory too.
 */
static uint64_t unexpected_charge(const struct match_queues *mq)
{
	return mq->unexpected_bytes + (uint64_t)mq->n_unexpected * sizeof(struct match_msg);
}

int engine_deliver(struct daemon *d, sl_addr_t src, uint32_t dst_port,
		   uint64_t tag, const void *data, uint64_t len)
{
	struct queue *dq = dst_port < SLD_PORTS ? d->ports[dst_port] : NULL;
	struct match_recv *r;
	struct match_msg *m;

	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	r = match_arrival(&dq->mq, src, tag);
	if (r) {
		complete_recv(dq, r, src, tag, data, len);
		free(r);
		return SL_OK;
	}
	/*
	 * Refused before allocating: the sender keeps its buffer and may
	 * retry once the receiver has taken some messages.  No overflow: the
	 * charge is at most the bound (64 GiB) and len fits in 32 bits.
	 */
	if (unexpected_charge(&dq->mq) + sizeof(*m) + len > d->cfg.unexpected_max_bytes) {
		d->ctr.naks_receiver_full++;
		return SL_NAK_RECEIVER_FULL;
	}
	m = malloc(sizeof(*m) + len);
	if (!m)
		return SL_NAK_BUSY;
	m->src = src;
	m->tag = tag;
	m->len = len;
	m->data = (uint8_t *)(m + 1);
	if (len)
		memcpy(m->data, data, len);
	match_add_unexpected(&dq->mq, m);
	d->ctr.unexpected++;
	return SL_OK;
}

static void submit_recv(struct queue *q, const struct sl_sqe *sqe)
{
	struct match_recv *r = malloc(sizeof(*r));
	struct match_msg *m;

	if (!r) {
		engine_complete(q, SL_OP_RECV, sqe->peer, sqe->tag, sqe->len,
				sqe->user_ctx, SL_NAK_BUSY);
		return;
	}
	r->src = sqe->peer;
	if (r->src.node == SL_NODE_LOCAL)
		r->src.node = q->d->cfg.node_id;	/* messages carry real ids */
	r->tag = sqe->tag;
	r->tag_mask = sqe->tag_mask;
	r->addr = sqe->addr;
	r->capacity = sqe->len;
	r->user_ctx = sqe->user_ctx;
	m = match_post_recv(&q->mq, r);
	if (m) {
		complete_recv(q, r, m->src, m->tag, m->data, m->len);
		free(m);
		free(r);
	}
}

static void submit_send(struct queue *q, const struct sl_sqe *sqe)
{
	struct daemon *d = q->d;
	uint32_t self = d->cfg.node_id;
	sl_addr_t dst = sqe->peer;
	struct link *l;
	int status, rc;

	if (dst.node == SL_NODE_LOCAL || dst.node == self) {
		dst.node = self;
		status = engine_deliver(d, (sl_addr_t){ self, q->port }, dst.port,
					sqe->tag, q->arena + sqe->addr, sqe->len);
		if (status == SL_OK)
			d->ctr.local_msgs++;
		else if (status == SL_ERR_NO_ENDPOINT)
			d->ctr.no_endpoint++;
		engine_complete(q, SL_OP_SEND, dst, sqe->tag, sqe->len, sqe->user_ctx,
				status);
		return;
	}
	l = link_find(d, dst.node);
	if (!l) {
		d->ctr.no_endpoint++;
		status = SL_ERR_NO_ENDPOINT;
	} else if (sqe->len > d->cfg.eager_max) {
		/* Rendezvous is not there yet: larger messages are invalid. */
		d->ctr.invalid++;
		status = SL_ERR_INVALID;
	} else if ((rc = link_send(l, q, sqe)) < 0) {
		status = rc == -EHOSTDOWN ? SL_ERR_PEER_DOWN : SL_NAK_BUSY;
	} else {
		return;	/* completes when the peer acknowledges */
	}
	engine_complete(q, SL_OP_SEND, dst, sqe->tag, sqe->len, sqe->user_ctx, status);
}

void engine_submit(struct queue *q, const struct sl_sqe *sqe)
{
	if (sqe->opcode == SL_SQE_OP_RECV)
		submit_recv(q, sqe);
	else
		submit_send(q, sqe);
}
