/*
 * queue.c - client queues: the shared segment, ring draining, completions
 * and doorbells.  See queue.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"
#include "release.h"
#include "uid_quota.h"
#include "wake.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

static void sq_doorbell_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct queue *q = w->data;
	uint64_t v;

	(void)loop;
	(void)revents;
	/* The count does not matter, only that the client rang. */
	if (read(q->sq_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("queue %u: doorbell read: %m", q->id);
	queue_activate(q);
}

static int port_bind(struct daemon *d, struct queue *q, uint32_t port, uid_t uid)
{
	uint32_t i, span = SL_PORT_EPHEMERAL_MAX - SL_PORT_EPHEMERAL_MIN + 1;

	if (port == 0) {
		for (i = 0; i < span; i++) {
			uint32_t p = SL_PORT_EPHEMERAL_MIN +
				     (d->next_ephemeral + i) % span;

			/* Reserved ranges are bound by name only (ports.h). */
			if (!d->ports[p] && !ports_range_of(&d->cfg.ports, p)) {
				d->next_ephemeral = (p - SL_PORT_EPHEMERAL_MIN + 1) % span;
				port = p;
				break;
			}
		}
		if (port == 0)
			return -EADDRNOTAVAIL;
	} else if (port >= SLD_PORTS) {
		return -EINVAL;
	} else if (port < SL_PORT_PRIVILEGED && uid != 0) {
		return -EACCES;
	} else if (d->ports[port]) {
		return -EADDRINUSE;
	}
	d->ports[port] = q;
	q->port = port;
	return 0;
}

/* Lay out and fill the segment; returns 0 or -errno. */
static int segment_create(struct daemon *d, struct queue *q, uint32_t sq_n, uint32_t cq_n)
{
	uint64_t sq_ctl = ALIGN_UP(sizeof(struct sl_shm_hdr), SL_RING_SEPARATION);
	uint64_t cq_ctl = sq_ctl + sizeof(struct sl_ring_ctl);
	uint64_t sqes = cq_ctl + sizeof(struct sl_ring_ctl);
	uint64_t cqes = sqes + (uint64_t)sq_n * sizeof(struct sl_sqe);
	long page = sysconf(_SC_PAGESIZE);
	uint64_t arena = ALIGN_UP(cqes + (uint64_t)cq_n * sizeof(struct sl_cqe),
				  page > 0 ? (uint64_t)page : 4096);
	uint64_t size = arena + d->cfg.arena_bytes;
	struct sl_shm_hdr *h;
	int rc;

	q->memfd = memfd_create("sluice-queue", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (q->memfd < 0)
		return -errno;
	if (ftruncate(q->memfd, (off_t)size) < 0)
		return -errno;
	/* The client must not be able to shrink the segment under us
	 * (SIGBUS in the daemon) nor grow it. */
	if (fcntl(q->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	q->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, q->memfd, 0);
	if (q->base == MAP_FAILED) {
		q->base = NULL;
		return -errno;
	}
	q->seg_size = size;
	h = (struct sl_shm_hdr *)q->base;
	h->magic = SL_SHM_MAGIC;
	h->abi_version = SL_SHM_ABI_VERSION;
	h->hdr_size = sizeof(*h);
	h->creator_pid = (uint32_t)getpid();
	h->seg_size = size;
	h->sq_off = (struct sl_ring_offsets){
		.head = sq_ctl + offsetof(struct sl_ring_ctl, head),
		.tail = sq_ctl + offsetof(struct sl_ring_ctl, tail),
		.flags = sq_ctl + offsetof(struct sl_ring_ctl, flags),
		.entries = sqes, .ring_entries = sq_n,
		.entry_size = sizeof(struct sl_sqe) };
	h->cq_off = (struct sl_ring_offsets){
		.head = cq_ctl + offsetof(struct sl_ring_ctl, head),
		.tail = cq_ctl + offsetof(struct sl_ring_ctl, tail),
		.flags = cq_ctl + offsetof(struct sl_ring_ctl, flags),
		.entries = cqes, .ring_entries = cq_n,
		.entry_size = sizeof(struct sl_cqe) };
	h->arena_off = arena;
	h->arena_size = d->cfg.arena_bytes;
	h->node = d->cfg.node_id;
	h->port = q->port;
	h->eager_max = d->cfg.eager_max;
	((struct sl_ring_ctl *)(q->base + sq_ctl))->owner_pid = (uint32_t)getpid();

	rc = sl_ring_init(&q->sq, q->base, size, &h->sq_off, sizeof(struct sl_sqe), false);
	if (rc == 0)
		rc = sl_ring_init(&q->cq, q->base, size, &h->cq_off, sizeof(struct sl_cqe), true);
	q->arena = q->base + arena;
	q->arena_size = d->cfg.arena_bytes;
	q->cq_cap = cq_n;
	return rc;
}

static void queue_destroy(struct queue *q)
{
	/* A large segment costs the loop tens of ms per GiB: off it. */
	release_segment(q->d, q->base, q->seg_size, q->memfd);
	if (q->sq_efd >= 0)
		close(q->sq_efd);
	if (q->cq_efd >= 0)
		close(q->cq_efd);
	free(q);
}

int queue_create(struct daemon *d, const struct queue_owner *who, uint32_t port,
		 uint32_t depth, struct queue **q_p)
{
	struct queue *q;
	uint32_t sq_n = 1;
	int rc;

	if (depth == 0 || depth > SL_QUEUE_DEPTH_MAX)
		return -EINVAL;
	/* Not -EMFILE: that is a descriptor limit (the daemon's, when
	 * memfd_create or eventfd below fail with it). */
	if (d->n_queues >= d->cfg.max_queues)
		return -ENOSPC;
	while (sq_n < depth)
		sq_n <<= 1;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->d = d;
	q->memfd = q->sq_efd = q->cq_efd = -1;
	q->refs = 1;
	q->uid = who->uid;
	match_init(&q->mq, &d->unexpected_bytes, d->recv_named);
	TAILQ_INIT(&q->claims);

	rc = port_bind(d, q, port, who->uid);
	if (rc)
		goto err_free;
	rc = segment_create(d, q, sq_n, sq_n * SL_CQ_PER_SQ);
	if (rc)
		goto err_unbind;
	q->sq_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	q->cq_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->sq_efd < 0 || q->cq_efd < 0) {
		rc = -errno;
		goto err_unbind;
	}
	q->id = ++d->next_queue_id;
	rc = rcache_owner_add(d->rc, q->id, q->arena_size);
	if (rc)
		goto err_unbind;
	q->owner = who->session;
	q->charge = *who;
	ev_io_init(&q->sq_w, sq_doorbell_cb, q->sq_efd, EV_READ);
	q->sq_w.data = q;
	/* Ahead of the starvation guard's passes (a check watcher, which
	 * libev runs before the other watchers of its priority): a sleeping
	 * queue that rang must be awake for the first pass after the poll,
	 * not after passes that serve only the awake ones. */
	ev_set_priority(&q->sq_w, EV_MAXPRI);
	ev_io_start(d->loop, &q->sq_w);
	TAILQ_INSERT_TAIL(&d->queues, q, all);
	d->n_queues++;
	/* The new SQ has no NEED_WAKEUP yet, so its client will not ring:
	 * the engine must poll it until it goes to sleep properly. */
	queue_activate(q);
	*q_p = q;
	return 0;

err_unbind:
	d->ports[q->port] = NULL;
err_free:
	queue_destroy(q);
	return rc;
}

void queue_get(struct queue *q)
{
	q->refs++;
}

void queue_put(struct queue *q)
{
	if (--q->refs == 0)
		queue_destroy(q);
}

/* Off the active list and the quota waiters, for good (it dies). */
/* Asleep: off the active list (below). */
static void queue_fall_asleep(struct queue *q, bool quota);

static void queue_leave_lists(struct queue *q)
{
	queue_fall_asleep(q, false);
	if (q->quota_waiting) {
		TAILQ_REMOVE(&q->d->quota_waiters, q, quota_link);
		q->quota_waiting = false;
	}
}

void queue_kill(struct queue *q)
{
	struct daemon *d = q->d;
	struct match_recv *r;

	if (q->dead)
		return;
	q->dead = true;
	if (q->owner) {
		*q->charge.in_flight -= q->in_flight;	/* completions go nowhere now */
		if (q->charge.uq)
			q->charge.uq->in_flight -= q->in_flight;
	}
	q->owner = NULL;
	ev_io_stop(d->loop, &q->sq_w);
	queue_leave_lists(q);
	if (d->ports[q->port] == q)
		d->ports[q->port] = NULL;
	TAILQ_REMOVE(&d->queues, q, all);
	d->n_queues--;
	if (q->in_dirty) {
		TAILQ_REMOVE(&d->cq_dirty, q, dirty);
		q->in_dirty = false;
	}
	/* Nobody will read these completions: drop the receives quietly. */
	while ((r = match_pop_recv(&q->mq))) {
		q->in_flight--;
		free(r);
	}
}

void queue_end_receives(struct queue *q, int status)
{
	struct match_recv *r;

	while ((r = match_pop_recv(&q->mq))) {
		queue_complete(&r->desc, status, NULL);
		free(r);
	}
}

/* Asleep with SQEs its quota holds back: queues of @q's client or uid may
 * take them now that @q completed one. */
static void wake_quota_waiters(const struct queue *q)
{
	struct queue *w, *next;

	for (w = TAILQ_FIRST(&q->d->quota_waiters); w; w = next) {
		next = TAILQ_NEXT(w, quota_link);
		if (w->charge.in_flight == q->charge.in_flight ||
		    (q->charge.uq && w->charge.uq == q->charge.uq))
			queue_activate(w);
	}
}

void queue_complete(const struct desc *dsc, int status, const struct desc_msg *msg)
{
	struct queue *q = dsc->q;
	struct daemon *d = q->d;
	struct sl_cqe cqe = {
		.user_ctx = dsc->user_ctx,
		.len = msg ? msg->len : dsc->len,
		.tag = msg ? msg->tag : dsc->tag,
		.peer = msg ? msg->src : dsc->peer,
		.status = status,
		.opcode = dsc->opcode,
		.sender_uid = msg ? msg->sender_uid : SL_UID_UNKNOWN,
		.claim = msg ? msg->claim : 0,
	};

	if (dsc->internal)
		return;	/* the daemon's own: no slot, no CQE (desc.h) */
	if (status == SL_OK && dsc->opcode == SL_OP_SEND) {
		q->msgs_tx++;
		q->bytes_tx += cqe.len;
	} else if (status == SL_OK && dsc->opcode == SL_OP_RECV) {
		q->msgs_rx++;
		q->bytes_rx += cqe.len;
	} else if (status == SL_NAK_BUSY || status == SL_NAK_RECEIVER_FULL) {
		q->naks++;
	}
	q->in_flight--;
	if (q->owner) {
		(*q->charge.in_flight)--;
		if (q->charge.uq)
			q->charge.uq->in_flight--;
	}
	d->ctr.cqes++;
	d->ctr.completions[daemon_status_slot(status)]++;
	if (!TAILQ_EMPTY(&d->quota_waiters) && q->owner)
		wake_quota_waiters(q);
	if (q->dead)
		return;
	memcpy(sl_ring_prod_slot(&q->cq, 0), &cqe, sizeof(cqe));
	sl_ring_prod_commit(&q->cq, 1);
	q->cqes++;
	if (!q->in_dirty) {
		q->in_dirty = true;
		TAILQ_INSERT_TAIL(&d->cq_dirty, q, dirty);
	}
	/* Completions also come from outside a pass (a link breaks, a timer
	 * fires): the pass that follows wakes the client. */
	daemon_wake(d);
}

/* Has the client of @q as many descriptors in flight as it may? */
static bool quota_full(const struct queue *q)
{
	return q->owner && (*q->charge.in_flight >= q->d->cfg.client_max_inflight ||
			    uid_quota_inflight_full(&q->d->cfg, q->charge.uq));
}

int queue_drain(struct queue *q, struct desc *out, unsigned max)
{
	struct daemon *d = q->d;
	int64_t avail = sl_ring_cons_avail(&q->sq);
	unsigned taken = 0;

	if (avail < 0)
		return -EPROTO;
	if (q->dead)
		return 0;
	while (taken < avail && taken < max) {
		struct sl_sqe sqe;
		int64_t space = sl_ring_prod_space(&q->cq, q->in_flight + 1);

		if (space < 0)
			return -EPROTO;
		/* Exactly-one-completion: accept only with a CQ slot held. */
		if (space < (int64_t)q->in_flight + 1)
			break;
		/* The client's quota: its SQs fill and it sees -EAGAIN. */
		if (quota_full(q)) {
			d->ctr.quota_stalls++;
			break;
		}
		/* Copied once, here: the client may rewrite the slot. */
		memcpy(&sqe, sl_ring_cons_slot(&q->sq, taken), sizeof(sqe));
		out[taken] = (struct desc){
			.q = q,
			.opcode = sqe.opcode,
			.flags = sqe.flags,
			.rsvd_set = sqe.rsvd0 || sqe.rsvd1,
			.peer = sqe.peer,
			.tag = sqe.tag,
			.tag_mask = sqe.tag_mask,
			.addr = sqe.addr,
			.len = sqe.len,
			.user_ctx = sqe.user_ctx,
			.claim = sqe.rsvd2,	/* 0 unless RECV_CLAIMED (engine) */
		};
		taken++;
		q->in_flight++;
		(*q->charge.in_flight)++;
		if (q->charge.uq)
			q->charge.uq->in_flight++;
		q->sqes++;
		d->ctr.sqes++;
	}
	if (taken)
		sl_ring_cons_release(&q->sq, taken);
	return (int)taken;
}

/* Can one more SQE be accepted (a CQ slot held for its completion)? */
static bool cq_has_room(struct queue *q)
{
	int64_t space = sl_ring_prod_space(&q->cq, q->in_flight + 1);

	/* A corrupt CQ head counts as room: the drain then reports it. */
	return space < 0 || space >= (int64_t)q->in_flight + 1;
}

void queue_activate(struct queue *q)
{
	struct daemon *d = q->d;

	if (q->dead)
		return;
	if (q->quota_waiting) {
		TAILQ_REMOVE(&d->quota_waiters, q, quota_link);
		q->quota_waiting = false;
	}
	if (!q->awake) {
		struct queue *before = TAILQ_LAST(&d->active, queue_active_list);

		/* Clear the flags first: a client that sees them clear stops
		 * ringing, and the pass will find what it posts. */
		sl_flags_andnot(q->sq.shm_flags, SL_RING_NEED_WAKEUP | SL_RING_CQ_STALLED);
		q->awake = true;
		q->worked_at = ev_now(d->loop);
		/* Kept in the order the queues were opened, the order in
		 * which every pass drained them all before there were ready
		 * lists: queues woken by one poll are drained in that order,
		 * whatever order libev ran their doorbells in (a client that
		 * posted a receive on one and then a send to it on a later one
		 * relied on it).  Searched from the tail: the awake are few,
		 * and the newest queue goes last. */
		while (before && before->id > q->id)
			before = TAILQ_PREV(before, queue_active_list, active_link);
		if (before)
			TAILQ_INSERT_AFTER(&d->active, before, q, active_link);
		else
			TAILQ_INSERT_HEAD(&d->active, q, active_link);
	}
	daemon_wake(d);
}

/* Asleep: off the active list; its flags stay as announced. */
static void queue_fall_asleep(struct queue *q, bool quota)
{
	struct daemon *d = q->d;

	if (q->awake) {
		TAILQ_REMOVE(&d->active, q, active_link);
		q->awake = false;
	}
	if (quota && !q->quota_waiting) {
		TAILQ_INSERT_TAIL(&d->quota_waiters, q, quota_link);
		q->quota_waiting = true;
	}
}

bool queue_prepare_sleep(struct queue *q)
{
	int64_t avail = sl_ring_cons_prepare_sleep(&q->sq);

	/* Nothing to take, or nothing the client may have taken now: a
	 * completion of its client or uid frees its quota and wakes it. */
	if (avail == 0 || (avail > 0 && quota_full(q))) {
		queue_fall_asleep(q, avail > 0);
		return false;
	}
	if (avail > 0 && !cq_has_room(q)) {
		/* SQEs wait for CQ slots only the client can free: sleep,
		 * and have it ring once it polls (pairs with sl_poll()). */
		sl_flags_or(q->sq.shm_flags, SL_RING_CQ_STALLED);
		sl_smp_mb();
		if (!cq_has_room(q)) {
			queue_fall_asleep(q, false);
			return false;
		}
	}
	/* Work after all: stay awake, flags clear again. */
	sl_flags_andnot(q->sq.shm_flags, SL_RING_NEED_WAKEUP | SL_RING_CQ_STALLED);
	return true;
}

void queue_wake_client(struct queue *q)
{
	uint64_t one = 1;

	if (q->dead || !sl_ring_prod_needs_wakeup(&q->cq))
		return;
	if (write(q->cq_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("queue %u: wake-up write: %m", q->id);
	q->d->ctr.wakeups_tx++;
}
