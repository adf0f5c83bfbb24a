/*
 * queue.c - queues: attach to the daemon's segment, post descriptors,
 * reap completions, and the spin-then-sleep wait.
 */
#include <errno.h>
#include <stdatomic.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

/* sl_wait() polls before it sleeps, for a window learnt per queue from
 * how long its waits took (sl_spin.h).  The bounds: a wake-up costs 5-30
 * µs here, and a 200 µs window is the most a wait can burn for nothing. */
#define WAIT_SPIN_START_NS 20000
#define WAIT_SPIN_MIN_NS 20000
#define WAIT_SPIN_MAX_NS 200000

static void unmap_queue(struct sl_queue *q)
{
	arena_fini(&q->arena);
	if (q->base)
		munmap(q->base, q->seg_size);
	if (q->sq_efd >= 0)
		close(q->sq_efd);
	if (q->cq_efd >= 0)
		close(q->cq_efd);
	free(q);
}

/* Map the segment and check everything in its header before use. */
static int attach_segment(struct sl_queue *q, int memfd, uint64_t seg_size)
{
	const struct sl_shm_hdr *h;
	struct stat st;
	int rc;

	if (fstat(memfd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || (uint64_t)st.st_size != seg_size ||
	    seg_size < sizeof(struct sl_shm_hdr))
		return -EPROTO;
	q->base = mmap(NULL, seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (q->base == MAP_FAILED) {
		q->base = NULL;
		return -errno;
	}
	q->seg_size = seg_size;
	h = (const struct sl_shm_hdr *)q->base;
	if (h->magic != SL_SHM_MAGIC || h->abi_version != SL_SHM_ABI_VERSION ||
	    h->hdr_size != sizeof(*h) || h->seg_size != seg_size || h->flags)
		return -EPROTO;
	if (h->arena_off > seg_size || h->arena_size > seg_size - h->arena_off)
		return -EPROTO;
	rc = sl_ring_init(&q->sq, q->base, seg_size, &h->sq_off, sizeof(struct sl_sqe), true);
	if (rc)
		return rc;
	rc = sl_ring_init(&q->cq, q->base, seg_size, &h->cq_off, sizeof(struct sl_cqe), false);
	if (rc)
		return rc;
	q->arena_base = q->base + h->arena_off;
	q->arena_size = h->arena_size;
	q->eager_max = h->eager_max;
	return arena_init(&q->arena, q->arena_base, q->arena_size);
}

SL_EXPORT int sl_queue_open(struct sl_ctx *ctx, uint32_t port, uint32_t depth,
			    struct sl_queue **q_p)
{
	struct sl_ctl_req req = { .hdr.op = SL_CTL_QUEUE_OPEN, .port = port, .depth = depth };
	struct sl_ctl_rep rep;
	struct sl_queue *q;
	unsigned nfds;
	int fds[3], rc;

	if (port > 65535 || depth == 0 || depth > SL_QUEUE_DEPTH_MAX)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->sq_efd = q->cq_efd = -1;
	rc = ctl_call(ctx, &req, &rep, fds, 3, &nfds);
	if (rc == -EMFILE && rep.error == 0)
		goto err_close_remote;	/* the daemon made the queue: undo it */
	if (rc)
		goto err_free;
	if (rep.error) {
		rc = -rep.error;
		while (nfds)
			close(fds[--nfds]);
		goto err_free;
	}
	if (nfds != 3) {
		rc = -EPROTO;
		while (nfds)
			close(fds[--nfds]);
		goto err_close_remote;
	}
	q->sq_efd = fds[1];
	q->cq_efd = fds[2];
	rc = attach_segment(q, fds[0], rep.seg_size);
	close(fds[0]);	/* the mapping keeps the segment */
	if (rc)
		goto err_close_remote;
	q->ctx = ctx;
	q->id = rep.queue_id;
	q->addr = (sl_addr_t){ rep.node, rep.port };
	pthread_mutex_lock(&ctx->lock);
	LIST_INSERT_HEAD(&ctx->queues, q, link);
	pthread_mutex_unlock(&ctx->lock);
	*q_p = q;
	return 0;

err_close_remote:
	{
		struct sl_ctl_req creq = { .hdr.op = SL_CTL_QUEUE_CLOSE, .queue_id = rep.queue_id };
		struct sl_ctl_rep crep;
		unsigned n2;

		/* Best effort: the daemon frees it with the session anyway. */
		(void)ctl_call(ctx, &creq, &crep, NULL, 0, &n2);
	}
err_free:
	unmap_queue(q);
	return rc;
}

SL_EXPORT int sl_queue_close(struct sl_queue *q)
{
	struct sl_ctl_req req = { .hdr.op = SL_CTL_QUEUE_CLOSE };
	struct sl_ctl_rep rep;
	unsigned nfds;
	int rc;

	if (!q)
		return 0;
	req.queue_id = q->id;
	rc = ctl_call(q->ctx, &req, &rep, NULL, 0, &nfds);
	if (rc == 0 && rep.error)
		rc = -rep.error;
	pthread_mutex_lock(&q->ctx->lock);
	LIST_REMOVE(q, link);
	pthread_mutex_unlock(&q->ctx->lock);
	unmap_queue(q);
	return rc;
}

SL_EXPORT sl_addr_t sl_queue_addr(const struct sl_queue *q)
{
	return q->addr;
}

SL_EXPORT void *sl_alloc(struct sl_queue *q, size_t len)
{
	return arena_alloc(&q->arena, len);
}

SL_EXPORT void sl_free(struct sl_queue *q, void *buf)
{
	if (buf)
		(void)arena_free(&q->arena, buf);
}

SL_EXPORT size_t sl_arena_size(const struct sl_queue *q)
{
	return q->arena_size;
}

static int64_t now_ns(void);

static void ring_doorbell(struct sl_queue *q)
{
	uint64_t one = 1;

	/* The only failure is a counter overflow (EAGAIN) that leaves the
	 * eventfd readable anyway: the daemon wakes either way. */
	(void)!write(q->sq_efd, &one, sizeof(one));
}

bool daemon_gone(struct sl_queue *q)
{
	struct pollfd pfd = { .fd = q->ctx->fd, .events = 0 };
	int64_t now = now_ns();

	if (atomic_load_explicit(&q->ctx->dead, memory_order_relaxed))
		return true;
	if (now - q->gone_checked_ns < 1000000)
		return false;
	q->gone_checked_ns = now;
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR))) {
		atomic_store_explicit(&q->ctx->dead, true, memory_order_relaxed);
		return true;
	}
	return false;
}

/* Post one SQE; the daemon's doorbell is rung only if it sleeps.
 * @flags and @claim go to the SQE's flags and rsvd2 (sl_shm.h). */
static int post_sqe(struct sl_queue *q, uint8_t opcode, uint8_t flags, sl_addr_t peer,
		    uint64_t tag, uint64_t tag_mask, const void *buf, size_t len,
		    uint64_t user_ctx, uint64_t claim)
{
	const uint8_t *p = buf;
	struct sl_sqe *sqe;
	int64_t space;
	uint64_t addr = 0;

	if (len) {
		if (!p || p < q->arena_base || p > q->arena_base + q->arena_size ||
		    len > (size_t)(q->arena_base + q->arena_size - p))
			return -EINVAL;
		addr = (uint64_t)(p - q->arena_base);
	} else if (p && p >= q->arena_base && p <= q->arena_base + q->arena_size) {
		addr = (uint64_t)(p - q->arena_base);
	}
	if (atomic_load_explicit(&q->ctx->dead, memory_order_relaxed))
		return -ENOTCONN;
	space = sl_ring_prod_space(&q->sq, 1);
	if (space < 0)
		return -ENOTCONN;
	if (space == 0)
		return daemon_gone(q) ? -ENOTCONN : -EAGAIN;
	sqe = sl_ring_prod_slot(&q->sq, 0);
	*sqe = (struct sl_sqe){
		.opcode = opcode,
		.flags = flags,
		.peer = peer,
		.tag = tag,
		.tag_mask = tag_mask,
		.addr = addr,
		.len = len,
		.user_ctx = user_ctx,
		.rsvd2 = claim,
	};
	sl_ring_prod_commit(&q->sq, 1);
	if (sl_ring_prod_needs_wakeup(&q->sq))
		ring_doorbell(q);
	return 0;
}

static int post(struct sl_queue *q, uint8_t opcode, sl_addr_t peer, uint64_t tag,
		uint64_t tag_mask, const void *buf, size_t len, uint64_t user_ctx)
{
	return post_sqe(q, opcode, 0, peer, tag, tag_mask, buf, len, user_ctx, 0);
}

SL_EXPORT int sl_send(struct sl_queue *q, sl_addr_t dst, uint64_t tag,
		      const void *buf, size_t len, uint64_t user_ctx)
{
	return post(q, SL_SQE_OP_SEND, dst, tag, 0, buf, len, user_ctx);
}

SL_EXPORT int sl_recv(struct sl_queue *q, sl_addr_t src, uint64_t tag,
		      uint64_t tag_mask, void *buf, size_t capacity, uint64_t user_ctx)
{
	return post(q, SL_SQE_OP_RECV, src, tag, tag_mask, buf, capacity, user_ctx);
}

SL_EXPORT int sl_probe(struct sl_queue *q, sl_addr_t src, uint64_t tag, uint64_t tag_mask,
		       unsigned flags, uint64_t user_ctx)
{
	if (!q || (flags & ~(SL_PROBE_CLAIM | SL_PROBE_DISCARD)) ||
	    flags == (SL_PROBE_CLAIM | SL_PROBE_DISCARD))
		return -EINVAL;
	return post_sqe(q, SL_SQE_OP_PROBE, (uint8_t)flags, src, tag, tag_mask, NULL, 0,
			user_ctx, 0);
}

SL_EXPORT int sl_recv_claimed(struct sl_queue *q, uint64_t claim, void *buf, size_t capacity,
			      uint64_t user_ctx)
{
	if (!q || claim == 0)
		return -EINVAL;
	return post_sqe(q, SL_SQE_OP_RECV_CLAIMED, 0, (sl_addr_t){ 0, 0 }, 0, 0, buf, capacity,
			user_ctx, claim);
}

SL_EXPORT int sl_cancel(struct sl_queue *q, uint64_t user_ctx)
{
	if (!q)
		return -EINVAL;
	return post_sqe(q, SL_SQE_OP_CANCEL, 0, (sl_addr_t){ 0, 0 }, 0, 0, NULL, 0, user_ctx, 0);
}

SL_EXPORT int sl_poll(struct sl_queue *q, struct sl_cqe *cqes, unsigned max)
{
	int64_t avail = sl_ring_cons_avail(&q->cq);
	unsigned i, n;

	if (avail < 0)
		return -EPROTO;
	n = avail < max ? (unsigned)avail : max;
	for (i = 0; i < n; i++)
		memcpy(&cqes[i], sl_ring_cons_slot(&q->cq, i), sizeof(*cqes));
	if (n) {
		sl_ring_cons_release(&q->cq, n);
		/* The daemon may sleep waiting for these slots; pairs with the
		 * fence in its queue_prepare_sleep(). */
		sl_smp_mb();
		if (SL_READ_ONCE(q->sq.shm_flags) & SL_RING_CQ_STALLED)
			ring_doorbell(q);
	}
	return (int)n;
}

SL_EXPORT int sl_fd(const struct sl_queue *q)
{
	return q->cq_efd;
}

SL_EXPORT int sl_arm(struct sl_queue *q)
{
	uint64_t v;
	int64_t avail;

	/* Reset the eventfd so that a level-triggered loop does not spin. */
	(void)!read(q->cq_efd, &v, sizeof(v));
	avail = sl_ring_cons_prepare_sleep(&q->cq);
	if (avail != 0) {
		sl_ring_cons_wake(&q->cq);
		return avail < 0 ? -EPROTO : (int)avail;
	}
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A fixed window from $SLUICE_WAIT_SPIN_US, nanoseconds, read once; -1
 * when it is not set (the window adapts). */
static int64_t wait_spin_fixed_ns(void)
{
	static _Atomic int64_t cached = -2;
	int64_t ns = atomic_load_explicit(&cached, memory_order_relaxed);

	if (ns == -2) {
		const char *e = getenv("SLUICE_WAIT_SPIN_US");
		char *end;
		long us = e ? strtol(e, &end, 10) : -1;

		ns = (e && *e && !*end && us >= 0 && us <= 1000000) ? us * 1000 : -1;
		atomic_store_explicit(&cached, ns, memory_order_relaxed);
	}
	return ns;
}

/* The window for the next wait of @q. */
static int64_t wait_spin_ns(struct sl_queue *q)
{
	int64_t fixed = wait_spin_fixed_ns();

	if (fixed >= 0)
		return fixed;
	if (q->spin.window_ns == 0)
		sl_spin_init(&q->spin, WAIT_SPIN_START_NS, WAIT_SPIN_MIN_NS, WAIT_SPIN_MAX_NS);
	return q->spin.window_ns;
}

/* A wait of @q took @took_ns (until a completion, or a timeout). */
static void wait_spin_learn(struct sl_queue *q, int64_t took_ns)
{
	if (q->spin.window_ns)
		sl_spin_learn(&q->spin, took_ns);
}

SL_EXPORT int sl_wait(struct sl_queue *q, int timeout_ms)
{
	int64_t avail = sl_ring_cons_avail(&q->cq), start, deadline, spin;

	if (avail)
		return avail < 0 ? -EPROTO : (int)avail;
	if (timeout_ms == 0)
		return daemon_gone(q) ? -ECONNRESET : 0;
	spin = wait_spin_ns(q);
	start = now_ns();
	if (timeout_ms > 0 && spin > (int64_t)timeout_ms * 1000000)
		spin = (int64_t)timeout_ms * 1000000;
	/* Spin by yielding: with the daemon and two clients on two cores,
	 * plain spinning starves whoever would produce the completion, and
	 * sleeping costs a wake-up (~5 µs, more in a VM) per message. */
	while (now_ns() - start < spin) {
		sched_yield();
		avail = sl_ring_cons_avail(&q->cq);
		if (avail) {
			if (avail > 0)
				wait_spin_learn(q, now_ns() - start);
			return avail < 0 ? -EPROTO : (int)avail;
		}
	}
	deadline = timeout_ms < 0 ? -1 : start + (int64_t)timeout_ms * 1000000;
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = q->cq_efd, .events = POLLIN },
			{ .fd = q->ctx->fd, .events = 0 },	/* daemon gone: HUP */
		};
		int ms = -1, rc;

		avail = sl_arm(q);
		if (avail) {
			if (avail > 0)
				wait_spin_learn(q, now_ns() - start);
			return (int)avail;
		}
		if (deadline >= 0) {
			int64_t left = deadline - now_ns();

			if (left <= 0) {
				sl_ring_cons_wake(&q->cq);
				wait_spin_learn(q, now_ns() - start);
				return 0;
			}
			ms = (int)((left + 999999) / 1000000);
		}
		rc = poll(pfd, 2, ms);
		sl_ring_cons_wake(&q->cq);
		if (rc < 0)
			return errno == EINTR ? -EINTR : -errno;
		avail = sl_ring_cons_avail(&q->cq);
		if (avail) {
			if (avail > 0)
				wait_spin_learn(q, now_ns() - start);
			return avail < 0 ? -EPROTO : (int)avail;
		}
		if (pfd[1].revents & (POLLHUP | POLLERR)) {
			atomic_store_explicit(&q->ctx->dead, true, memory_order_relaxed);
			return -ECONNRESET;
		}
	}
}
