/*
 * endpoint.c - matching and eager delivery at a queue's endpoint.  See
 * endpoint.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "endpoint.h"
#include "queue.h"

_Static_assert(sizeof(struct match_msg) <= ENDPOINT_UNEXPECTED_OVERHEAD,
	       "an unexpected message costs more than sluiced.conf(5) says");

void endpoint_init(struct daemon *d, const struct endpoint_rndv_hooks *h)
{
	d->rndv_hooks = h;
}

struct queue *endpoint_of(struct daemon *d, uint32_t port)
{
	struct queue *q = port < SLD_PORTS ? d->ports[port] : NULL;

	return q && !q->failed ? q : NULL;
}

struct match_recv *endpoint_arrival(struct queue *dq, sl_addr_t src, uint64_t tag)
{
	struct match_recv *r = match_arrival(&dq->mq, src, tag);

	if (r)
		dq->d->rndv_hooks->matched(dq, src, tag, r);
	return r;
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

/* No overflow: the endpoint's charge is at most its bound (64 GiB), the
 * daemon's at most the largest total bound it ran with (1 TiB: a reload
 * that lowers it leaves more held), and held is at most eager_max. */
struct match_msg *endpoint_unexpected_new(struct daemon *d, struct queue *dq, sl_addr_t src,
					  uint32_t sender_uid, uint64_t tag, uint64_t len,
					  uint64_t held, size_t rndv_bytes, int *status)
{
	uint64_t charge = rndv_bytes ? ENDPOINT_RNDV_CHARGE : held + ENDPOINT_UNEXPECTED_OVERHEAD;
	struct match_msg *m;

	if (d->draining) {
		*status = SL_ERR_PEER_DOWN;
		return NULL;
	}
	if (dq->mq.unexpected_bytes + charge > d->cfg.unexpected_max_bytes ||
	    d->unexpected_bytes + charge > d->cfg.unexpected_total_bytes) {
		d->ctr.naks_receiver_full++;
		if (dq->mq.unexpected_bytes + charge <= d->cfg.unexpected_max_bytes)
			d->ctr.naks_daemon_full++;
		*status = SL_NAK_RECEIVER_FULL;
		return NULL;
	}
	m = malloc(sizeof(*m) + rndv_bytes + held);
	if (!m) {
		*status = SL_NAK_BUSY;
		return NULL;
	}
	m->src = src;
	m->tag = tag;
	m->len = len;
	m->charge = (uint32_t)charge;	/* held <= eager_max (1 MiB at most) */
	m->sender_uid = sender_uid;
	m->data = rndv_bytes ? NULL : (uint8_t *)(m + 1);
	m->rndv = rndv_bytes ? (void *)(m + 1) : NULL;
	return m;
}

void endpoint_add_unexpected(struct queue *dq, struct match_msg *m)
{
	match_add_unexpected(&dq->mq, m);
	dq->d->ctr.unexpected++;
	mem_return_grown(&dq->d->mem_ret);
}

int endpoint_deliver(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		     uint64_t tag, const void *data, uint64_t len)
{
	struct queue *dq = endpoint_of(d, dst_port);
	struct match_recv *r;
	struct match_msg *m;
	int status;

	if (!dq)
		return SL_ERR_NO_ENDPOINT;
	r = endpoint_arrival(dq, src, tag);
	if (r) {
		complete_recv(dq, r, src, sender_uid, tag, data, len);
		free(r);
		return SL_OK;
	}
	m = endpoint_unexpected_new(d, dq, src, sender_uid, tag, len, len, 0, &status);
	if (!m)
		return status;
	if (len)
		memcpy(m->data, data, len);
	endpoint_add_unexpected(dq, m);
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
	const struct endpoint_rndv_hooks *h = q->d->rndv_hooks;
	bool taken = true;

	h->matched(q, m->src, m->tag, r);
	if (!m->rndv) {
		complete_recv(q, r, m->src, m->sender_uid, m->tag, m->data, m->len);
		free(r);
	} else {
		taken = h->take(q, r, m);
	}
	free(m);
	return taken;
}

bool endpoint_post_recv(struct queue *q, struct match_recv *r)
{
	struct match_msg *m = match_post_recv(&q->mq, r);

	if (!m)
		return true;
	if (!recv_take(q, r, m))
		endpoint_repost(q, r);
	return false;
}

void endpoint_repost(struct queue *q, struct match_recv *r)
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

void endpoint_drop_unexpected(struct queue *q, struct match_msg *m)
{
	struct daemon *d = q->d;

	if (m->rndv)
		d->rndv_hooks->drop(q, m, d->stopping ? SL_ERR_CANCELED : SL_ERR_NO_ENDPOINT);
	free(m);
}

void endpoint_fail_recvs_from(struct daemon *d, uint32_t node, int status)
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
