/*
 * mr.c - the daemon's registration cache: client arena ranges registered
 * through the transport (tcp MR table or ibv_reg_mr), looked up by queue
 * id, with a timer for waiters' deadlines.  See daemon.h and rcache.h.
 */
#include "autoconfig.h"

#include <errno.h>

#include "daemon.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"
#include "wake.h"

static struct queue *queue_by_id(struct daemon *d, uint32_t id)
{
	struct queue *q;

	/* Misses are rare (that is the cache's point) and queues few. */
	TAILQ_FOREACH(q, &d->queues, all)
		if (q->id == id)
			return q;
	return NULL;
}

static int backend_reg(void *ctx, uint32_t owner, uint64_t offset, uint64_t len,
		       uint64_t *handle, uint32_t *lkey, uint32_t *rkey)
{
	struct daemon *d = ctx;
	struct queue *q = queue_by_id(d, owner);

	if (!q)
		return -ENOENT;
	return d->xp->ops->reg_mr(d->xp, q->arena + offset, len, handle, lkey, rkey);
}

static void backend_dereg(void *ctx, uint64_t handle)
{
	struct daemon *d = ctx;

	d->xp->ops->dereg_mr(d->xp, handle);
}

static const struct rcache_ops backend = {
	.reg = backend_reg,
	.dereg = backend_dereg,
};

static void expire_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;
	size_t n;

	(void)revents;
	n = rcache_expire(d->rc, ev_now(loop));
	if (n)
		log_debug("rcache: %zu registrations waited too long", n);
	daemon_rcache_arm(d);
	daemon_wake(d);
}

void daemon_rcache_arm(struct daemon *d)
{
	double deadline;

	ev_timer_stop(d->loop, &d->rcache_w);
	if (!rcache_next_deadline(d->rc, &deadline))
		return;
	deadline -= ev_now(d->loop);
	ev_timer_set(&d->rcache_w, deadline > 0 ? deadline : 0.0, 0.0);
	ev_timer_start(d->loop, &d->rcache_w);
}

int daemon_rcache_init(struct daemon *d)
{
	struct rcache_params p = {
		.chunk_size = d->cfg.rcache_chunk_bytes,
		.max_regions = d->cfg.rcache_max_regions,
		.max_bytes = d->cfg.rcache_max_bytes,
		.max_waiters = d->cfg.rcache_max_waiters,
		.max_wait = d->cfg.rcache_max_wait_ms / 1000.0,
	};

	ev_timer_init(&d->rcache_w, expire_cb, 0.0, 0.0);
	d->rcache_w.data = d;
	return rcache_create(&p, &backend, d, &d->rc);
}

void daemon_rcache_destroy(struct daemon *d)
{
	size_t held;

	if (!d->rc)
		return;
	ev_timer_stop(d->loop, &d->rcache_w);
	held = rcache_destroy(d->rc);
	if (held)
		log_err("rcache: %zu registrations still held at exit", held);
	d->rc = NULL;
}

int rcache_status(int err, bool receiver)
{
	switch (err) {
	case -ENOENT:
	case -ECANCELED:
		return receiver ? SL_ERR_NO_ENDPOINT : SL_ERR_CANCELED;
	case -E2BIG:
		return SL_ERR_REG_LIMIT;
	default:
		return SL_NAK_BUSY;
	}
}
