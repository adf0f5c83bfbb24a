/*
 * fi_ep.c - the RDM endpoint: one sl_queue, the data path (fi_msg(3) and
 * fi_tagged(3) calls), and the progress function that turns sluice
 * completions into libfabric ones.
 *
 * Staging.  sluice moves only buffers in the queue's arena, libfabric
 * applications pass their own memory: a send copies the application's
 * iov into an arena buffer (sl_alloc) before sl_send(), so the
 * application's buffer is free again when the call returns (fi_inject
 * completes at once, without a completion); a receive gets an arena
 * buffer of its capacity and its data is copied out when sluice completes
 * it.  The arena buffer goes back (sl_free) when sluice completes the
 * descriptor.  When the arena, the pool or the SQ is full the call
 * returns -FI_EAGAIN: the application reads its CQ and tries again.
 *
 * NAKs (SL_NAK_BUSY, SL_NAK_RECEIVER_FULL) are back-pressure on a single
 * descriptor: the provider posts it again itself, with a back-off, for up
 * to SFI_NAK_TIMEOUT_MS; then it completes with FI_EAGAIN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sfi.h"

ssize_t sfi_post_errno(int rc)
{
	switch (rc) {
	case 0: return 0;
	case -EAGAIN: return -FI_EAGAIN;
	case -EINVAL: return -FI_EINVAL;
	case -ENOTCONN: return -FI_ENOTCONN;
	case -ENOSYS: return -FI_ENOSYS;
	default: return rc < 0 ? rc : -FI_EOTHER;
	}
}

ssize_t sfi_op_posted(struct sfi_op *op, int rc)
{
	if (rc) {
		sfi_op_put(op);
		return sfi_post_errno(rc);
	}
	op->state = SFI_OP_POSTED;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The pool                                                             */
/* ------------------------------------------------------------------ */

struct sfi_op *sfi_op_get(struct sfi_ep *ep)
{
	struct sfi_op *op = ep->free_ops;

	if (!op)
		return NULL;
	ep->free_ops = op->next;
	ep->ops_free--;
	memset(op, 0, sizeof(*op));
	op->ep = ep;
	return op;
}

void sfi_op_put(struct sfi_op *op)
{
	struct sfi_ep *ep = op->ep;

	if (op->abuf) {
		sl_free(ep->q, op->abuf);
		op->abuf = NULL;
	}
	op->state = SFI_OP_FREE;
	op->next = ep->free_ops;
	ep->free_ops = op;
	ep->ops_free++;
}

static size_t iov_total(const struct iovec *iov, size_t count)
{
	size_t i, n = 0;

	for (i = 0; i < count; i++)
		n += iov[i].iov_len;
	return n;
}

/* Received bytes from the arena buffer into the application's iov. */
ssize_t sfi_copy_out(struct sfi_op *op)
{
	size_t left = op->rlen < op->len ? (size_t)op->rlen : op->len, off = 0, i;

	for (i = 0; i < op->iov_count && left; i++) {
		size_t n = op->iov[i].iov_len < left ? op->iov[i].iov_len : left;

		memcpy(op->iov[i].iov_base, (char *)op->abuf + off, n);
		off += n;
		left -= n;
	}
	return (ssize_t)off;
}

/* ------------------------------------------------------------------ */
/* Completions                                                          */
/* ------------------------------------------------------------------ */

void sfi_op_finish(struct sfi_op *op)
{
	struct sfi_ep *ep = op->ep;
	bool ok = sfi_status_to_fi(op->status) == 0;
	bool tx = op->flags & FI_SEND;
	struct sfi_cntr *cntr = tx ? ep->tx_cntr : ep->rx_cntr;
	struct sfi_cq *cq = tx ? ep->tx_cq : ep->rx_cq;

	if (op->abuf) {
		sl_free(ep->q, op->abuf);
		op->abuf = NULL;
	}
	if (cntr && op->kind != SFI_OP_PEEK) {
		if (ok)
			cntr->value++;
		else
			cntr->errors++;
	}
	if (op->kind == SFI_OP_INJECT) {
		if (!ok)
			SFI_WARN(FI_LOG_EP_DATA, "an injected send failed: %s\n",
				 sl_strerror(op->status));
		sfi_op_put(op);
		return;
	}
	if (cq && (!ok || op->want_cq))
		sfi_cq_push(cq, op);
	else
		sfi_op_put(op);
}

static int repost(struct sfi_op *op)
{
	struct sfi_ep *ep = op->ep;
	uint64_t uctx = (uint64_t)(uintptr_t)op;

	switch (op->kind) {
	case SFI_OP_SEND:
	case SFI_OP_INJECT:
		return sl_send(ep->q, op->peer, op->tag, op->abuf, op->len, uctx);
	case SFI_OP_RECV:
		return sl_recv(ep->q, op->peer, op->tag, op->mask, op->abuf, op->len, uctx);
	default:
		return -EINVAL;	/* probes and claimed receives are not NAKed */
	}
}

static void retry_push(struct sfi_ep *ep, struct sfi_op *op)
{
	op->state = SFI_OP_RETRY;
	op->next = NULL;
	if (ep->retry_tail)
		ep->retry_tail->next = op;
	else
		ep->retry_head = op;
	ep->retry_tail = op;
}

/* Post again the NAKed descriptors whose back-off has passed. */
static void retry_due(struct sfi_ep *ep)
{
	int64_t now = sfi_now_ns();

	while (ep->retry_head && ep->retry_head->retry_at_ns <= now) {
		struct sfi_op *op = ep->retry_head;
		int rc = repost(op);

		if (rc == -EAGAIN)
			return;	/* SQ full: on the next progress */
		ep->retry_head = op->next;
		if (!ep->retry_head)
			ep->retry_tail = NULL;
		if (rc) {
			op->status = SL_ERR_INVALID;
			sfi_op_finish(op);
			continue;
		}
		op->state = SFI_OP_POSTED;
	}
}

static bool nak_retry(struct sfi_op *op, int status)
{
	int64_t now = sfi_now_ns();

	if (op->kind != SFI_OP_SEND && op->kind != SFI_OP_INJECT && op->kind != SFI_OP_RECV)
		return false;
	if (!op->nak_deadline_ns) {
		op->nak_deadline_ns = now + (int64_t)SFI_NAK_TIMEOUT_MS * 1000000;
		op->backoff_us = SFI_NAK_BACKOFF_MIN_US;
	} else if (now >= op->nak_deadline_ns) {
		SFI_WARN(FI_LOG_EP_DATA, "a descriptor NAKed (%s) for %d ms: giving up\n",
			 sl_strerror(status), SFI_NAK_TIMEOUT_MS);
		return false;
	} else if (op->backoff_us < SFI_NAK_BACKOFF_MAX_US) {
		op->backoff_us *= 2;
	}
	op->retry_at_ns = now + (int64_t)op->backoff_us * 1000;
	retry_push(op->ep, op);
	return true;
}

static void handle_cqe(struct sfi_ep *ep, const struct sl_cqe *cqe)
{
	struct sfi_op *op = (struct sfi_op *)(uintptr_t)cqe->user_ctx;

	if (cqe->opcode == SL_OP_CANCEL)
		return;	/* the receive it cancelled completed on its own */
	if (!op || op < ep->pool || op >= ep->pool + SFI_POOL_OPS || op->state != SFI_OP_POSTED) {
		SFI_WARN(FI_LOG_EP_DATA, "a completion for no operation of this endpoint\n");
		return;
	}
	if (cqe->opcode == SL_OP_PROBE) {
		sfi_peek_complete(op, cqe);
		return;
	}
	if ((cqe->status == SL_NAK_BUSY || cqe->status == SL_NAK_RECEIVER_FULL) &&
	    nak_retry(op, cqe->status))
		return;
	op->status = cqe->status;
	/* FI_CLAIM | FI_DISCARD receives into no buffer: its truncation is
	 * the discard asked for. */
	if (op->kind == SFI_OP_CLAIMED_RECV && !op->abuf && op->status == SL_ERR_TRUNCATED)
		op->status = SL_OK;
	op->rlen = cqe->len;
	op->rtag = cqe->tag;
	op->rpeer = cqe->peer;
	if ((op->kind == SFI_OP_RECV || op->kind == SFI_OP_CLAIMED_RECV) && op->abuf &&
	    (cqe->status == SL_OK || cqe->status == SL_ERR_TRUNCATED))
		sfi_copy_out(op);
	sfi_op_finish(op);
}

/* The daemon went away: nothing posted will complete; say so. */
static void fail_all(struct sfi_ep *ep)
{
	size_t i;

	ep->retry_head = ep->retry_tail = NULL;
	for (i = 0; i < SFI_POOL_OPS; i++) {
		struct sfi_op *op = &ep->pool[i];

		if (op->state == SFI_OP_POSTED || op->state == SFI_OP_RETRY) {
			op->status = SFI_STATUS_DAEMON_GONE;
			sfi_op_finish(op);
		}
	}
}

void sfi_ep_progress(struct sfi_ep *ep)
{
	struct sl_cqe cqes[64];
	int n, i, total = 0;

	if (!ep->q)
		return;
	if (ep->retry_head)
		retry_due(ep);
	do {
		n = sl_poll(ep->q, cqes, 64);
		for (i = 0; i < n; i++)
			handle_cqe(ep, &cqes[i]);
		total += n > 0 ? n : 0;
	} while (n == 64);
	/* sl_wait(q, 0) checks (once a millisecond) that the daemon is there. */
	if (!total && ep->ops_free + (ep->retry_head ? 1u : 0u) < SFI_POOL_OPS &&
	    sl_wait(ep->q, 0) == -ECONNRESET)
		fail_all(ep);
}

/* ------------------------------------------------------------------ */
/* Posting                                                              */
/* ------------------------------------------------------------------ */

/* An op and @len bytes of arena for it, progressing once if short. */
static ssize_t op_alloc(struct sfi_ep *ep, size_t len, struct sfi_op **op_p)
{
	struct sfi_op *op = sfi_op_get(ep);

	if (!op) {
		sfi_ep_progress(ep);
		op = sfi_op_get(ep);
		if (!op)
			return -FI_EAGAIN;
	}
	op->abuf = sl_alloc(ep->q, len);
	if (!op->abuf) {
		sfi_ep_progress(ep);
		op->abuf = sl_alloc(ep->q, len);
		if (!op->abuf) {
			sfi_op_put(op);
			return -FI_EAGAIN;
		}
	}
	*op_p = op;
	return 0;
}

int sfi_recv_source(struct sfi_ep *ep, fi_addr_t addr, sl_addr_t *src)
{
	*src = SL_ANY_SOURCE;
	if (addr == FI_ADDR_UNSPEC || !(ep->caps & FI_DIRECTED_RECV))
		return 0;
	return sfi_av_addr(ep->av, addr, src) ? -FI_EINVAL : 0;
}

/* sl_send() or sl_recv() of @op (an SFI_OP_RECV or a send), from the
 * destination or filter, tag, mask, buffer and length it holds. */
static int op_sl_post(struct sfi_ep *ep, struct sfi_op *op)
{
	uint64_t ctx = (uint64_t)(uintptr_t)op;

	if (op->kind == SFI_OP_RECV)
		return sl_recv(ep->q, op->peer, op->tag, op->mask, op->abuf, op->len, ctx);
	return sl_send(ep->q, op->peer, op->tag, op->abuf, op->len, ctx);
}

/* Post @op; a full SQ (-EAGAIN) gets one round of progress, which may
 * take completions and so free SQ entries, and one more try.  Returns
 * as sfi_op_posted(). */
static ssize_t op_post(struct sfi_ep *ep, struct sfi_op *op)
{
	int rc = op_sl_post(ep, op);

	if (rc == -EAGAIN) {
		sfi_ep_progress(ep);
		rc = op_sl_post(ep, op);
	}
	return sfi_op_posted(op, rc);
}

static ssize_t ep_send(struct sfi_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t dest, uint64_t tag, void *context, uint64_t flags,
		       bool inject)
{
	size_t len = iov_total(iov, count), off = 0, i;
	struct sfi_op *op;
	sl_addr_t dst;
	uint64_t sltag;
	ssize_t rc;

	if (count > SFI_IOV_MAX)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_ENOSYS;
	if (len > ep->max_msg_size || (inject && len > SFI_INJECT_SIZE))
		return -FI_EMSGSIZE;
	if (flags & FI_TAGGED) {
		if (!(ep->caps & FI_TAGGED))
			return -FI_EOPNOTSUPP;
		if (!ep->tag64 && (tag & SFI_MSG_BIT))
			return -FI_EINVAL;
		sltag = tag;
	} else {
		if (!(ep->caps & FI_MSG))
			return -FI_EOPNOTSUPP;
		sltag = SFI_MSG_BIT;
	}
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		rc = -FI_EOPBADSTATE;
		goto out;
	}
	if (sfi_av_addr(ep->av, dest, &dst)) {
		rc = -FI_EINVAL;
		goto out;
	}
	rc = op_alloc(ep, len, &op);
	if (rc)
		goto out;
	for (i = 0; i < count; i++) {
		memcpy((char *)op->abuf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	op->kind = inject ? SFI_OP_INJECT : SFI_OP_SEND;
	op->context = context;
	op->flags = FI_SEND | (flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
	op->want_cq = !inject && ep->tx_cq && (!ep->tx_selective || (flags & FI_COMPLETION));
	op->len = len;
	op->peer = dst;
	op->tag = sltag;
	rc = op_post(ep, op);
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

int sfi_recv_tag(const struct sfi_ep *ep, uint64_t tag, uint64_t ignore,
		 uint64_t *sltag, uint64_t *mask)
{
	*mask = ~ignore;
	if (!ep->tag64) {
		if (tag & *mask & SFI_MSG_BIT)
			return -FI_EINVAL;	/* would never match */
		*mask |= SFI_MSG_BIT;
	}
	*sltag = tag & *mask;
	return 0;
}

static ssize_t ep_recv(struct sfi_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context,
		       uint64_t flags)
{
	size_t cap = iov_total(iov, count);
	struct sfi_op *op;
	sl_addr_t src;
	uint64_t mask, sltag;
	ssize_t rc;

	if (count > SFI_IOV_MAX)
		return -FI_EINVAL;
	if (flags & FI_MULTI_RECV)
		return -FI_ENOSYS;
	if (flags & FI_TAGGED) {
		if (!(ep->caps & FI_TAGGED))
			return -FI_EOPNOTSUPP;
		rc = sfi_recv_tag(ep, tag, ignore, &sltag, &mask);
		if (rc)
			return rc;
	} else {
		if (!(ep->caps & FI_MSG))
			return -FI_EOPNOTSUPP;
		mask = sltag = SFI_MSG_BIT;
	}
	/* No message is longer than max_msg_size: a larger buffer needs no
	 * larger arena buffer. */
	if (cap > ep->max_msg_size)
		cap = ep->max_msg_size;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		rc = -FI_EOPBADSTATE;
		goto out;
	}
	rc = sfi_recv_source(ep, src_addr, &src);
	if (rc)
		goto out;
	rc = op_alloc(ep, cap, &op);
	if (rc)
		goto out;
	op->kind = SFI_OP_RECV;
	op->context = context;
	op->flags = FI_RECV | (flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
	op->want_cq = ep->rx_cq && (!ep->rx_selective || (flags & FI_COMPLETION));
	op->len = cap;
	memcpy(op->iov, iov, count * sizeof(*iov));
	op->iov_count = count;
	op->peer = src;
	op->tag = sltag;
	op->mask = mask;
	rc = op_post(ep, op);
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

#define EP(fid_ep) container_of(fid_ep, struct sfi_ep, ep)

/* fi_msg(3) */
static ssize_t sfi_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src, void *context)
{
	struct iovec iov = { buf, len };

	return ep_recv(EP(fep), &iov, 1, src, 0, 0, context, EP(fep)->rx_op_flags);
}

static ssize_t sfi_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src, void *context)
{
	return ep_recv(EP(fep), iov, count, src, 0, 0, context, EP(fep)->rx_op_flags);
}

static ssize_t sfi_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	return ep_recv(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, 0, 0, msg->context,
		       flags & ~(uint64_t)FI_TAGGED);
}

static ssize_t sfi_send(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			fi_addr_t dest, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return ep_send(EP(fep), &iov, 1, dest, 0, context, EP(fep)->tx_op_flags, false);
}

static ssize_t sfi_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t dest, void *context)
{
	return ep_send(EP(fep), iov, count, dest, 0, context, EP(fep)->tx_op_flags, false);
}

static ssize_t sfi_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	return ep_send(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, 0, msg->context,
		       flags & ~(uint64_t)FI_TAGGED, false);
}

static ssize_t sfi_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return ep_send(EP(fep), &iov, 1, dest, 0, NULL, 0, true);
}

static ssize_t sfi_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *context)
{
	return -FI_ENOSYS;	/* no remote CQ data in sluice */
}

static ssize_t sfi_injectdata(struct fid_ep *fep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest)
{
	return -FI_ENOSYS;
}

static struct fi_ops_msg sfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = sfi_recv,
	.recvv = sfi_recvv,
	.recvmsg = sfi_recvmsg,
	.send = sfi_send,
	.sendv = sfi_sendv,
	.sendmsg = sfi_sendmsg,
	.inject = sfi_inject,
	.senddata = sfi_senddata,
	.injectdata = sfi_injectdata,
};

/* fi_tagged(3) */
static ssize_t sfi_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc,
			 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct iovec iov = { buf, len };

	return ep_recv(EP(fep), &iov, 1, src, tag, ignore, context,
		       EP(fep)->rx_op_flags | FI_TAGGED);
}

static ssize_t sfi_trecvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
			  void *context)
{
	return ep_recv(EP(fep), iov, count, src, tag, ignore, context,
		       EP(fep)->rx_op_flags | FI_TAGGED);
}

static ssize_t sfi_trecvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	if (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))
		return sfi_peek_post(EP(fep), msg, flags);
	return ep_recv(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
		       msg->ignore, msg->context, flags | FI_TAGGED);
}

static ssize_t sfi_tsend(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t tag, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return ep_send(EP(fep), &iov, 1, dest, tag, context,
		       EP(fep)->tx_op_flags | FI_TAGGED, false);
}

static ssize_t sfi_tsendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
	return ep_send(EP(fep), iov, count, dest, tag, context,
		       EP(fep)->tx_op_flags | FI_TAGGED, false);
}

static ssize_t sfi_tsendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return ep_send(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
		       msg->context, flags | FI_TAGGED, false);
}

static ssize_t sfi_tinject(struct fid_ep *fep, const void *buf, size_t len,
			   fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return ep_send(EP(fep), &iov, 1, dest, tag, NULL, FI_TAGGED, true);
}

static ssize_t sfi_tsenddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sfi_tinjectdata(struct fid_ep *fep, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return -FI_ENOSYS;
}

static struct fi_ops_tagged sfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = sfi_trecv,
	.recvv = sfi_trecvv,
	.recvmsg = sfi_trecvmsg,
	.send = sfi_tsend,
	.sendv = sfi_tsendv,
	.sendmsg = sfi_tsendmsg,
	.inject = sfi_tinject,
	.senddata = sfi_tsenddata,
	.injectdata = sfi_tinjectdata,
};

/* ------------------------------------------------------------------ */
/* fi_cm(3): only the name                                              */
/* ------------------------------------------------------------------ */

static int sfi_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct sfi_ep *ep = container_of(fid, struct sfi_ep, ep.fid);
	size_t have = *addrlen;

	*addrlen = SFI_ADDRLEN;
	if (have < SFI_ADDRLEN)
		return -FI_ETOOSMALL;
	memcpy(addr, &ep->addr, SFI_ADDRLEN);
	return 0;
}

static int sfi_no_setname(fid_t fid, void *addr, size_t addrlen) { return -FI_ENOSYS; }
static int sfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen) { return -FI_ENOSYS; }
static int sfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
			  size_t paramlen) { return -FI_ENOSYS; }
static int sfi_no_listen(struct fid_pep *pep) { return -FI_ENOSYS; }
static int sfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}
static int sfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
			 size_t paramlen) { return -FI_ENOSYS; }
static int sfi_no_shutdown(struct fid_ep *ep, uint64_t flags) { return -FI_ENOSYS; }
static int sfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		       struct fid_mc **mc, void *context) { return -FI_ENOSYS; }

static struct fi_ops_cm sfi_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = sfi_no_setname,
	.getname = sfi_getname,
	.getpeer = sfi_no_getpeer,
	.connect = sfi_no_connect,
	.listen = sfi_no_listen,
	.accept = sfi_no_accept,
	.reject = sfi_no_reject,
	.shutdown = sfi_no_shutdown,
	.join = sfi_no_join,
};

/* ------------------------------------------------------------------ */
/* fi_endpoint(3)                                                       */
/* ------------------------------------------------------------------ */

static int sfi_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int sfi_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static int sfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
			 struct fid_ep **tx_ep, void *context) { return -FI_ENOSYS; }
static int sfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
			 struct fid_ep **rx_ep, void *context) { return -FI_ENOSYS; }

static ssize_t sfi_size_left(struct fid_ep *fep)
{
	struct sfi_ep *ep = EP(fep);
	ssize_t n;

	pthread_mutex_lock(&ep->dom->lock);
	n = ep->ops_free;
	pthread_mutex_unlock(&ep->dom->lock);
	return n;
}

static struct fi_ops_ep sfi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = sfi_cancel,
	.getopt = sfi_getopt,
	.setopt = sfi_setopt,
	.tx_ctx = sfi_no_tx_ctx,
	.rx_ctx = sfi_no_rx_ctx,
	.rx_size_left = sfi_size_left,
	.tx_size_left = sfi_size_left,
};

static int sfi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct sfi_ep *ep = container_of(fid, struct sfi_ep, ep.fid);
	int rc = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (ep->enabled) {
		rc = -FI_EOPBADSTATE;
		goto out;
	}
	switch (bfid->fclass) {
	case FI_CLASS_CQ: {
		struct sfi_cq *cq = container_of(bfid, struct sfi_cq, cq.fid);

		if (!(flags & (FI_TRANSMIT | FI_RECV))) {
			rc = -FI_EINVAL;
			break;
		}
		if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq)) {
			rc = -FI_EINVAL;
			break;
		}
		rc = sfi_set_add(&cq->eps, ep);
		if (!rc)
			rc = sfi_cq_attach_fd(cq, ep);
		if (rc)
			break;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		}
		break;
	}
	case FI_CLASS_CNTR: {
		struct sfi_cntr *c = container_of(bfid, struct sfi_cntr, cntr.fid);

		if (flags & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)) {
			rc = -FI_EINVAL;	/* no RMA */
			break;
		}
		if (!(flags & (FI_SEND | FI_RECV))) {
			rc = -FI_EINVAL;
			break;
		}
		rc = sfi_set_add(&c->eps, ep);
		if (rc)
			break;
		if (flags & FI_SEND)
			ep->tx_cntr = c;
		if (flags & FI_RECV)
			ep->rx_cntr = c;
		break;
	}
	case FI_CLASS_AV: {
		struct sfi_av *av = container_of(bfid, struct sfi_av, av.fid);

		if (ep->av) {
			rc = -FI_EINVAL;
			break;
		}
		ep->av = av;
		av->refs++;
		break;
	}
	case FI_CLASS_EQ:
		ep->eq = container_of(bfid, struct fid_eq, fid);
		break;
	default:
		rc = -FI_EINVAL;
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static int sfi_ep_control(struct fid *fid, int command, void *arg)
{
	struct sfi_ep *ep = container_of(fid, struct sfi_ep, ep.fid);
	int rc = 0;

	pthread_mutex_lock(&ep->dom->lock);
	switch (command) {
	case FI_ENABLE:
		if (!ep->av)
			rc = -FI_ENOAV;
		else if (!ep->tx_cq && !ep->tx_cntr && (ep->caps & FI_SEND))
			rc = -FI_ENOCQ;
		else if (!ep->rx_cq && !ep->rx_cntr && (ep->caps & FI_RECV))
			rc = -FI_ENOCQ;
		else
			ep->enabled = true;
		break;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;

		if ((*f & FI_TRANSMIT) && (*f & FI_RECV))
			rc = -FI_EINVAL;
		else if (*f & FI_TRANSMIT)
			*f = ep->tx_op_flags;
		else if (*f & FI_RECV)
			*f = ep->rx_op_flags;
		else
			rc = -FI_EINVAL;
		break;
	}
	case FI_SETOPSFLAG: {
		uint64_t f = *(uint64_t *)arg;

		if (f & FI_TRANSMIT)
			ep->tx_op_flags = f & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
		else if (f & FI_RECV)
			ep->rx_op_flags = f & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
		else
			rc = -FI_EINVAL;
		break;
	}
	default:
		rc = -FI_ENOSYS;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static int sfi_ep_close(struct fid *fid)
{
	struct sfi_ep *ep = container_of(fid, struct sfi_ep, ep.fid);
	struct sfi_domain *dom = ep->dom;

	pthread_mutex_lock(&dom->lock);
	/* Completions still queued for this endpoint go with it. */
	if (ep->tx_cq) {
		sfi_cq_forget_ep(ep->tx_cq, ep);
		sfi_set_del(&ep->tx_cq->eps, ep);
	}
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq) {
		sfi_cq_forget_ep(ep->rx_cq, ep);
		sfi_set_del(&ep->rx_cq->eps, ep);
	} else if (ep->rx_cq) {
		sfi_set_del(&ep->rx_cq->eps, ep);
	}
	if (ep->tx_cntr)
		sfi_set_del(&ep->tx_cntr->eps, ep);
	if (ep->rx_cntr)
		sfi_set_del(&ep->rx_cntr->eps, ep);
	if (ep->av)
		ep->av->refs--;
	/* The arena goes with the queue: every staging buffer with it. */
	sl_queue_close(ep->q);
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	free(ep->pool);
	free(ep);
	return 0;
}

static struct fi_ops sfi_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_ep_close,
	.bind = sfi_ep_bind,
	.control = sfi_ep_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

static int queue_errno_to_fi(int rc)
{
	switch (rc) {
	case -EADDRINUSE: return -FI_EADDRINUSE;
	case -EACCES: return -FI_EACCES;
	case -EINVAL: return -FI_EINVAL;
	case -ENOSPC: case -EDQUOT: case -ENFILE: case -EMFILE: return -FI_ENOSPC;
	case -ENOMEM: return -FI_ENOMEM;
	case -EADDRNOTAVAIL: return -FI_EADDRNOTAVAIL;
	default: return rc < 0 ? rc : -FI_EOTHER;
	}
}

int sfi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep_p,
		 void *context)
{
	struct sfi_domain *dom = container_of(domain, struct sfi_domain, domain);
	struct sfi_ep *ep;
	uint32_t port = 0;
	size_t i, arena_share;
	int rc;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
		      info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	if (info->src_addr) {
		sl_addr_t a;

		if (info->src_addrlen != SFI_ADDRLEN)
			return -FI_EINVAL;
		memcpy(&a, info->src_addr, sizeof(a));
		if (a.node != SL_NODE_LOCAL && a.node != dom->local_node)
			return -FI_EADDRNOTAVAIL;	/* another node's address */
		port = a.port;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->pool = calloc(SFI_POOL_OPS, sizeof(*ep->pool));
	if (!ep->pool) {
		free(ep);
		return -FI_ENOMEM;
	}
	for (i = SFI_POOL_OPS; i-- > 0;) {
		ep->pool[i].ep = ep;
		ep->pool[i].next = ep->free_ops;
		ep->free_ops = &ep->pool[i];
	}
	ep->ops_free = SFI_POOL_OPS;
	pthread_mutex_lock(&dom->lock);
	rc = sl_queue_open(dom->ctx, port, SFI_SQ_DEPTH, &ep->q);
	if (rc) {
		pthread_mutex_unlock(&dom->lock);
		free(ep->pool);
		free(ep);
		return queue_errno_to_fi(rc);
	}
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	ep->dom = dom;
	ep->addr = sl_queue_addr(ep->q);
	ep->caps = info->caps ? info->caps : (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV |
					      FI_SOURCE | FI_DIRECTED_RECV);
	if (!(ep->caps & (FI_SEND | FI_RECV)))
		ep->caps |= FI_SEND | FI_RECV;
	if (!sfi_directed_recv_enabled())
		ep->caps &= ~FI_DIRECTED_RECV;
	ep->tag64 = !(ep->caps & FI_MSG);
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	arena_share = sl_arena_size(ep->q) / SFI_ARENA_SHARE;
	ep->max_msg_size = arena_share < dom->max_msg_size ? arena_share : dom->max_msg_size;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &sfi_ep_fi_ops;
	ep->ep.ops = &sfi_ep_ops;
	ep->ep.cm = &sfi_cm_ops;
	ep->ep.msg = &sfi_msg_ops;
	ep->ep.tagged = &sfi_tagged_ops;
	*ep_p = &ep->ep;
	return 0;
}
