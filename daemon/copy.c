/*
 * copy.c - local rendezvous copies in slices, charged to the memory's
 * owner when they make no progress.  See copy.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "copy.h"
#include "daemon.h"
#include "log.h"
#include "queue.h"
#include "wake.h"

enum { SIDE_SEND, SIDE_RECV };

static uint64_t now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid pointer (vDSO). */
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint8_t *src_at(const struct local_copy *c, uint64_t off)
{
	return c->send.q->arena + c->send.addr + off;
}

static uint8_t *dst_at(const struct local_copy *c, uint64_t off)
{
	return c->r->desc.q->arena + c->r->desc.addr + off;
}

/* Complete both descriptors and free @c (unlinked). */
static void copy_finish(struct daemon *d, struct local_copy *c, int send_status,
			int recv_status)
{
	/* The sender's uid on a delivered message only (sluice.h). */
	bool delivered = recv_status == SL_OK || recv_status == SL_ERR_TRUNCATED;

	struct queue *rq = c->r->desc.q, *sq = c->send.q;
	struct desc_msg msg = {
		.src = { d->cfg.node_id, sq->port },
		.sender_uid = delivered ? (uint32_t)sq->uid : SL_UID_UNKNOWN,
		.tag = c->send.tag,
		.len = c->send.len,
	};

	queue_complete(&c->r->desc, recv_status, &msg);
	queue_complete(&c->send, send_status, NULL);
	if (send_status == SL_OK)
		d->ctr.local_msgs++;
	queue_put(rq);
	queue_put(sq);
	free(c->r);
	free(c);
}

static int recv_ok_status(const struct local_copy *c)
{
	return c->send.len <= c->r->desc.len ? SL_OK : SL_ERR_TRUNCATED;
}

/*
 * Move up to COPY_SLICE_BYTES of @c, reading the clock after each chunk
 * and stopping once COPY_SLICE_NS have passed.  Returns the bytes moved;
 * *lo_p is the offset of the lowest of them.
 */
static uint64_t copy_slice(struct local_copy *c, uint64_t *elapsed_ns, uint64_t *lo_p)
{
	uint64_t t0 = now_ns(), moved = 0, lo = 0;

	while (c->done < c->n && moved < COPY_SLICE_BYTES) {
		uint64_t left = c->n - c->done, chunk = c->chunk, t1 = now_ns(), t2;

		if (chunk > left)
			chunk = left;
		/* Backward when the destination overlaps above the source, so
		 * that no source byte is overwritten before it is read. */
		lo = c->backward ? left - chunk : c->done;
		memmove(dst_at(c, lo), src_at(c, lo), chunk);
		c->done += chunk;
		moved += chunk;
		t2 = now_ns();
		/* Its faults wait (for a hole punch, say): a page at a time
		 * from now on, so that a slice overruns by one fault only. */
		if (t2 - t1 >= COPY_SLICE_NS / 4)
			c->chunk = COPY_CHUNK_MIN;
		if (t2 - t0 >= COPY_SLICE_NS)
			break;
	}
	*elapsed_ns = now_ns() - t0;
	*lo_p = c->backward ? lo : c->done - moved;
	return moved;
}

/* Is a page of [@p, @p + @len) missing from memory (mincore(2))?  False
 * when it cannot tell. */
static bool pages_gone(const uint8_t *p, uint64_t len)
{
	unsigned char vec[COPY_SLOW_BYTES / 4096 + 2];
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start, end;
	size_t i, n;

	if (page <= 0 || len == 0 || len > COPY_SLOW_BYTES)
		return false;
	start = (uintptr_t)p & ~((uintptr_t)page - 1);
	end = (uintptr_t)p + len;
	n = (end - start + (uintptr_t)page - 1) / (uintptr_t)page;
	if (n > sizeof(vec) || mincore((void *)start, end - start, vec) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return true;
	return false;
}

/* The client of side @side of @c removed the pages under the copy once
 * too often: its queue fails, and with it this copy (copy_end_queue). */
static void copy_stalled(struct daemon *d, struct local_copy *c, int side,
			 copy_fail_fn *fail_queue)
{
	struct queue *q = side == SIDE_SEND ? c->send.q : c->r->desc.q;

	d->ctr.copy_stalls++;
	fail_queue(q, SL_ERR_STALLED, "a local copy made no progress: its pages were "
		   "removed under it again and again (hole punching)");
}

/*
 * After a slow slice that moved @moved bytes from offset @lo: strike each
 * side whose pages are gone again.  Returns true when @c ended (a side
 * struck out, its queue failed).
 */
static bool copy_judge(struct daemon *d, struct local_copy *c, uint64_t lo, uint64_t moved,
		       copy_fail_fn *fail_queue)
{
	bool gone[2];
	int side;

	/* The last COPY_SLOW_BYTES moved at most: enough to see a punch. */
	if (moved > COPY_SLOW_BYTES) {
		if (!c->backward)
			lo += moved - COPY_SLOW_BYTES;
		moved = COPY_SLOW_BYTES;
	}
	gone[SIDE_SEND] = pages_gone(src_at(c, lo), moved);
	gone[SIDE_RECV] = pages_gone(dst_at(c, lo), moved);
	for (side = SIDE_SEND; side <= SIDE_RECV; side++) {
		if (!gone[side])
			continue;
		if (++c->strikes[side] >= COPY_STALL_STRIKES) {
			copy_stalled(d, c, side, fail_queue);
			return true;
		}
	}
	return false;
}

void copy_start(struct match_recv *r, const struct desc *send)
{
	struct queue *rq = r->desc.q, *sq = send->q;
	struct daemon *d = rq->d;
	struct local_copy *c = NULL;
	uint64_t len = send->len, n = len <= r->desc.len ? len : r->desc.len;

	if (n > COPY_INLINE_BYTES)
		c = calloc(1, sizeof(*c));
	if (!c) {
		struct desc_msg msg = { .src = { d->cfg.node_id, sq->port },
					.sender_uid = (uint32_t)sq->uid, .tag = send->tag,
					.len = len };

		/* Small, or no memory to go in slices: at once.  memmove: a
		 * queue may send to itself from an overlapping buffer. */
		if (n)
			memmove(rq->arena + r->desc.addr, sq->arena + send->addr, n);
		queue_complete(&r->desc, len <= r->desc.len ? SL_OK : SL_ERR_TRUNCATED, &msg);
		queue_complete(send, SL_OK, NULL);
		d->ctr.local_msgs++;
		free(r);
		return;
	}
	queue_get(rq);
	queue_get(sq);
	*c = (struct local_copy){ .r = r, .send = *send, .n = n, .chunk = COPY_CHUNK_BYTES };
	c->backward = rq == sq && r->desc.addr > send->addr && r->desc.addr < send->addr + n;
	TAILQ_INSERT_TAIL(&d->copies, c, link);
	d->n_copies++;
	d->ctr.copies_sliced++;
	daemon_wake(d);
}

static void copy_unlink(struct daemon *d, struct local_copy *c)
{
	TAILQ_REMOVE(&d->copies, c, link);
	d->n_copies--;
}

unsigned copy_run(struct daemon *d, copy_fail_fn *fail_queue)
{
	unsigned i, n = d->n_copies;
	struct local_copy *c;
	uint64_t t0;

	if (n == 0)
		return 0;	/* the common case: no clock read */
	t0 = now_ns();

	/* Each copy once, from the head; one still under way goes to the
	 * tail, so that the round's time is shared in turn. */
	for (i = 0; i < n && (c = TAILQ_FIRST(&d->copies)); i++) {
		uint64_t elapsed, lo, moved;

		if (i > 0 && now_ns() - t0 >= COPY_ROUND_NS)
			break;
		moved = copy_slice(c, &elapsed, &lo);
		if (c->done == c->n) {
			copy_unlink(d, c);
			copy_finish(d, c, SL_OK, recv_ok_status(c));
			continue;
		}
		TAILQ_REMOVE(&d->copies, c, link);
		TAILQ_INSERT_TAIL(&d->copies, c, link);
		/* Slow: below COPY_SLOW_BYTES per COPY_SLICE_NS, over a slice
		 * that used its time (at most a few GiB * ns: no overflow). */
		if (elapsed >= COPY_SLICE_NS && moved * COPY_SLICE_NS < COPY_SLOW_BYTES * elapsed)
			(void)copy_judge(d, c, lo, moved, fail_queue);
	}
	return d->n_copies;
}

void copy_end_queue(struct daemon *d, struct queue *q, int status)
{
	struct local_copy *c, *next;

	for (c = TAILQ_FIRST(&d->copies); c; c = next) {
		next = TAILQ_NEXT(c, link);
		if (c->r->desc.q != q && c->send.q != q)
			continue;
		copy_unlink(d, c);
		copy_finish(d, c, c->send.q == q ? status : SL_ERR_NO_ENDPOINT,
			    c->r->desc.q == q ? status : SL_ERR_NO_ENDPOINT);
	}
}

void copy_cancel_all(struct daemon *d)
{
	struct local_copy *c;

	while ((c = TAILQ_FIRST(&d->copies))) {
		copy_unlink(d, c);
		copy_finish(d, c, SL_ERR_CANCELED, SL_ERR_CANCELED);
	}
}

bool copy_has_ctx(const struct daemon *d, const struct queue *q, uint64_t user_ctx, bool recv)
{
	const struct local_copy *c;

	TAILQ_FOREACH(c, &d->copies, link) {
		const struct desc *dsc = recv ? &c->r->desc : &c->send;

		if (dsc->q == q && dsc->user_ctx == user_ctx && !dsc->internal)
			return true;
	}
	return false;
}
