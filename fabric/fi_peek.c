/*
 * fi_peek.c - fi_trecvmsg() with FI_PEEK, FI_CLAIM and FI_DISCARD, and
 * fi_cancel(), over libsluice's sl_probe(), sl_recv_claimed() and
 * sl_cancel().
 *
 *   FI_PEEK                 sl_probe(): the first unexpected message that
 *                           matches, reported with its tag, length and
 *                           source; none: an error completion FI_ENOMSG.
 *   FI_PEEK | FI_CLAIM      the same, and the message is set aside: its
 *                           claim id is kept in the fi_context given
 *                           (internal[0]), which the application passes
 *                           again to the FI_CLAIM receive.
 *   FI_PEEK | FI_DISCARD    the message is dropped and reported.
 *   FI_CLAIM                sl_recv_claimed() into the buffer given.
 *   FI_CLAIM | FI_DISCARD   sl_recv_claimed() with no buffer: dropped.
 *   fi_cancel()             sl_cancel() of a posted receive: it completes
 *                           with FI_ECANCELED.
 */
#include <errno.h>
#include <string.h>

#include "sfi.h"

static void claim_store(void *context, uint64_t claim)
{
	struct fi_context *c = context;

	c->internal[0] = (void *)(uintptr_t)claim;
}

static uint64_t claim_load(void *context)
{
	struct fi_context *c = context;

	return (uint64_t)(uintptr_t)c->internal[0];
}

ssize_t sfi_peek_post(struct sfi_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	size_t cap = 0, i;
	sl_addr_t src;
	uint64_t mask, tag;
	struct sfi_op *op;
	ssize_t rc;
	int prc;

	if (!(ep->caps & FI_TAGGED))
		return -FI_EOPNOTSUPP;
	if ((flags & FI_CLAIM) && (flags & FI_DISCARD) && (flags & FI_PEEK))
		return -FI_EINVAL;
	if ((flags & (FI_CLAIM | FI_PEEK)) == 0)
		return -FI_EINVAL;	/* FI_DISCARD alone */
	if ((flags & FI_CLAIM) && !msg->context)
		return -FI_EINVAL;	/* the claim lives in the context */
	if (msg->iov_count > SFI_IOV_MAX)
		return -FI_EINVAL;
	rc = sfi_recv_tag(ep, msg->tag, msg->ignore, &tag, &mask);
	if (rc)
		return rc;
	for (i = 0; i < msg->iov_count; i++)
		cap += msg->msg_iov[i].iov_len;
	if (cap > ep->max_msg_size)
		cap = ep->max_msg_size;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		rc = -FI_EOPBADSTATE;
		goto out;
	}
	rc = sfi_recv_source(ep, msg->addr, &src);
	if (rc)
		goto out;
	op = sfi_op_get(ep);
	if (!op) {
		sfi_ep_progress(ep);
		op = sfi_op_get(ep);
		if (!op) {
			rc = -FI_EAGAIN;
			goto out;
		}
	}
	op->context = msg->context;
	op->flags = FI_RECV | FI_TAGGED;
	op->peer = src;
	op->tag = tag;
	op->mask = mask;
	if (flags & FI_PEEK) {
		op->kind = SFI_OP_PEEK;
		op->want_cq = true;	/* a peek always reports */
		op->probe_flags = (flags & FI_CLAIM ? SL_PROBE_CLAIM : 0) |
				  (flags & FI_DISCARD ? SL_PROBE_DISCARD : 0);
		prc = sl_probe(ep->q, src, tag, mask, op->probe_flags, (uint64_t)(uintptr_t)op);
	} else {
		op->kind = SFI_OP_CLAIMED_RECV;
		op->want_cq = ep->rx_cq && (!ep->rx_selective || (flags & FI_COMPLETION));
		op->claim = claim_load(msg->context);
		if (!(flags & FI_DISCARD)) {
			op->abuf = sl_alloc(ep->q, cap);
			if (!op->abuf) {
				sfi_op_put(op);
				rc = -FI_EAGAIN;
				goto out;
			}
			op->len = cap;
			memcpy(op->iov, msg->msg_iov, msg->iov_count * sizeof(*op->iov));
			op->iov_count = msg->iov_count;
		}
		prc = sl_recv_claimed(ep->q, op->claim, op->abuf, op->len, (uint64_t)(uintptr_t)op);
	}
	rc = sfi_op_posted(op, prc);
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

void sfi_peek_complete(struct sfi_op *op, const struct sl_cqe *cqe)
{
	op->status = cqe->status;
	op->rlen = cqe->len;
	op->rtag = cqe->tag;
	op->rpeer = cqe->peer;
	if (cqe->status == SL_OK && (op->probe_flags & SL_PROBE_CLAIM))
		claim_store(op->context, cqe->claim);
	sfi_op_finish(op);
}

ssize_t sfi_cancel(fid_t fid, void *context)
{
	struct sfi_ep *ep = container_of(fid, struct sfi_ep, ep.fid);
	struct sfi_op **pp;
	ssize_t rc = -FI_ENOENT;
	size_t i;

	if (fid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	sfi_ep_progress(ep);
	/* A receive waiting to be posted again after a NAK is the provider's
	 * alone: cancelled here. */
	for (pp = &ep->retry_head; *pp; pp = &(*pp)->next) {
		struct sfi_op *op = *pp;

		if (op->kind == SFI_OP_RECV && op->context == context) {
			*pp = op->next;
			if (ep->retry_tail == op) {
				ep->retry_tail = NULL;
				for (struct sfi_op *t = ep->retry_head; t; t = t->next)
					ep->retry_tail = t;
			}
			op->status = SL_ERR_CANCELED;
			op->rlen = 0;
			sfi_op_finish(op);
			rc = 0;
			goto out;
		}
	}
	for (i = 0; i < SFI_POOL_OPS; i++) {
		struct sfi_op *op = &ep->pool[i];

		if (op->state == SFI_OP_POSTED && op->kind == SFI_OP_RECV && op->context == context) {
			int prc = sl_cancel(ep->q, (uint64_t)(uintptr_t)op);

			rc = prc ? sfi_post_errno(prc) : 0;
			goto out;
		}
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}
