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

/* What a probe's or a claimed receive's completion names of @m. */
static struct desc_msg msg_of(const struct match_msg *m, uint64_t claim)
{
	return (struct desc_msg){ .src = m->src, .sender_uid = m->sender_uid, .tag = m->tag,
				  .len = m->len, .claim = claim };
}

/* A message from @src with @tag is taken by the probe @probe: a
 * rendezvous holding an earlier receive that would have taken it too is
 * overtaken, as when a receive posted now takes it (hooks' matched). */
static void probe_matched(struct queue *q, const struct desc *probe, const struct match_msg *m)
{
	struct match_recv as_recv = { .desc = *probe, .post_seq = match_next_seq(&q->mq) };

	q->d->rndv_hooks->matched(q, m->src, m->tag, &as_recv);
}

/* SL_PROBE_DISCARD of @m (linked at @q): gone, as if a receive of
 * capacity 0 took it.  Returns SL_OK, or SL_NAK_BUSY with @m left. */
static int probe_discard(struct queue *q, const struct desc *probe, struct match_msg *m)
{
	struct match_recv *r;

	if (!m->rndv) {
		/* Its sender completed when it was queued: nothing to tell. */
		probe_matched(q, probe, m);
		match_remove_unexpected(&q->mq, m);
		free(m);
		return SL_OK;
	}
	/* A rendezvous sender completes only when a receive has its data:
	 * an internal receive of capacity 0 takes it and completes nowhere. */
	r = calloc(1, sizeof(*r));
	if (!r)
		return SL_NAK_BUSY;
	r->desc = (struct desc){ .q = q, .opcode = SL_OP_RECV, .internal = true,
				 .peer = m->src, .tag = m->tag, .tag_mask = ~0ull,
				 .user_ctx = probe->user_ctx };
	match_remove_unexpected(&q->mq, m);
	r->post_seq = match_next_seq(&q->mq);
	/* Bound to @m: it is used up (desc_bound) even where a rendezvous
	 * cannot start; then the sender has been told. */
	if (!recv_take(q, r, m))
		free(r);
	return SL_OK;
}

void endpoint_probe(struct queue *q, const struct desc *probe)
{
	struct match_msg *m = match_probe(&q->mq, probe);
	struct match_claim *c;
	struct desc_msg found;
	int status;

	if (!m) {
		/* The probe's own filter, length 0. */
		found = (struct desc_msg){ .src = probe->peer, .sender_uid = SL_UID_UNKNOWN,
					   .tag = probe->tag };
		queue_complete(probe, SL_ERR_NO_MESSAGE, &found);
		return;
	}
	found = msg_of(m, 0);
	if (probe->flags & SL_PROBE_CLAIM) {
		c = malloc(sizeof(*c));
		if (!c) {
			queue_complete(probe, SL_NAK_BUSY, NULL);
			return;
		}
		probe_matched(q, probe, m);
		found.claim = match_claim(&q->mq, m, c);
		q->d->ctr.claims++;
		status = SL_OK;
	} else if (probe->flags & SL_PROBE_DISCARD) {
		status = probe_discard(q, probe, m);
	} else {
		status = SL_OK;
	}
	queue_complete(probe, status, status == SL_OK ? &found : NULL);
}

void endpoint_recv_claimed(struct queue *q, struct match_recv *r)
{
	struct match_claim *c = match_find_claim(&q->mq, r->desc.claim);
	struct match_msg *m;
	struct desc_msg msg;

	if (!c) {
		queue_complete(&r->desc, SL_ERR_NOT_FOUND, NULL);
		free(r);
		return;
	}
	match_unclaim(&q->mq, c);
	q->d->ctr.claims_received++;
	m = c->m;
	msg = msg_of(m, 0);
	if (c->status) {
		/* Its sender went after the claim (rndv.c). */
		queue_complete(&r->desc, c->status, &msg);
		free(c);
		free(m);
		free(r);
		return;
	}
	free(c);
	/* The filter of exactly this message, for the hooks. */
	r->desc.peer = m->src;
	r->desc.tag = m->tag;
	r->desc.tag_mask = ~0ull;
	r->post_seq = match_next_seq(&q->mq);
	if (!recv_take(q, r, m)) {
		/* A bound receive is used up by the rendezvous; not reached. */
		queue_complete(&r->desc, SL_NAK_BUSY, &msg);
		free(r);
	}
}

bool endpoint_cancel_recv(struct queue *q, uint64_t user_ctx)
{
	struct match_recv *r = match_find_recv(&q->mq, user_ctx);

	if (!r)
		return false;
	match_remove_recv(&q->mq, r);
	queue_complete(&r->desc, SL_ERR_CANCELED, NULL);
	free(r);
	return true;
}

void endpoint_drop_claimed(struct queue *q)
{
	struct match_claim *c;

	while ((c = match_pop_claim(&q->mq))) {
		q->d->ctr.claims_dropped++;
		if (c->status)
			free(c->m);	/* its sender was told already */
		else
			endpoint_drop_unexpected(q, c->m);
		free(c);
	}
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
