/*
 * fi_cq.c - completion queues and counters.
 *
 * A CQ holds no ring of its own: its entries are the completed operations
 * themselves (struct sfi_op, linked oldest first), each released to its
 * endpoint's pool when the application reads it.  So a CQ never overflows
 * and never drops: what bounds it is the endpoints' pools, and a full pool
 * shows as -FI_EAGAIN on the next post.
 *
 * Reading a CQ (or a counter) first takes what sluice completed on every
 * endpoint bound to it (sfi_ep_progress: sl_poll, copy-out of received
 * data).  Waiting arms each endpoint's queue (sl_arm) and poll(2)s their
 * sl_fd()s together; FI_WAIT_FD hands out an epoll descriptor over those
 * fds, to be used after fi_trywait() as fi_trywait(3) says.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sfi.h"

/* How long one sleep lasts at most, ms: the daemon's death is noticed
 * (sfi_ep_progress) and NAK retries are made between sleeps. */
#define SFI_WAIT_SLICE_MS 100

int sfi_set_add(struct sfi_ep_set *set, struct sfi_ep *ep)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (set->eps[i] == ep)
			return 0;
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 4;
		struct sfi_ep **eps = realloc(set->eps, cap * sizeof(*eps));

		if (!eps)
			return -FI_ENOMEM;
		set->eps = eps;
		set->cap = cap;
	}
	set->eps[set->n++] = ep;
	return 0;
}

void sfi_set_del(struct sfi_ep_set *set, struct sfi_ep *ep)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (set->eps[i] == ep) {
			set->eps[i] = set->eps[--set->n];
			return;
		}
}

static void set_progress(struct sfi_ep_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		sfi_ep_progress(set->eps[i]);
}

/* Arm every queue of @set; > 0 when one has completions already. */
static int set_arm(struct sfi_ep_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++) {
		if (set->eps[i]->retry_head)
			return 1;
		if (sl_arm(set->eps[i]->q) != 0)
			return 1;
	}
	return 0;
}

/*
 * Sleep until a queue of @set has completions, @extra_fd is readable, or
 * @timeout_ms passes (at most SFI_WAIT_SLICE_MS).  Called with the domain
 * lock held; drops it while sleeping.  Returns 0 or -FI_ENOMEM.
 */
static int set_sleep(struct sfi_domain *dom, struct sfi_ep_set *set, int extra_fd,
		     int timeout_ms)
{
	struct pollfd stack[16], *pfd = stack;
	size_t i, n = 0;
	int rc;

	if (set_arm(set))
		return 0;
	if (set->n + 1 > sizeof(stack) / sizeof(stack[0])) {
		pfd = calloc(set->n + 1, sizeof(*pfd));
		if (!pfd)
			return -FI_ENOMEM;
	}
	for (i = 0; i < set->n; i++)
		pfd[n++] = (struct pollfd){ .fd = sl_fd(set->eps[i]->q), .events = POLLIN };
	if (extra_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
	if (timeout_ms < 0 || timeout_ms > SFI_WAIT_SLICE_MS)
		timeout_ms = SFI_WAIT_SLICE_MS;
	pthread_mutex_unlock(&dom->lock);
	rc = poll(pfd, n, timeout_ms);
	pthread_mutex_lock(&dom->lock);
	if (pfd != stack)
		free(pfd);
	(void)rc;	/* EINTR and timeouts alike: the caller looks again */
	return 0;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */

void sfi_cq_push(struct sfi_cq *cq, struct sfi_op *op)
{
	op->state = SFI_OP_DONE;
	op->next = NULL;
	if (cq->tail)
		cq->tail->next = op;
	else
		cq->head = op;
	cq->tail = op;
}

/* Drop @ep's completions (the endpoint is closing). */
void sfi_cq_forget_ep(struct sfi_cq *cq, struct sfi_ep *ep)
{
	struct sfi_op **pp = &cq->head, *op;

	cq->tail = NULL;
	while ((op = *pp)) {
		if (op->ep == ep) {
			*pp = op->next;
			continue;
		}
		cq->tail = op;
		pp = &op->next;
	}
}

static bool op_failed(const struct sfi_op *op)
{
	return sfi_status_to_fi(op->status) != 0;
}

/* The bytes a receive delivered into the application's buffer. */
static size_t op_delivered(const struct sfi_op *op)
{
	if (op->flags & FI_SEND)
		return op->len;
	return op->rlen < op->len ? (size_t)op->rlen : op->len;
}

static uint64_t user_tag(const struct sfi_op *op)
{
	return op->ep->tag64 ? op->rtag : op->rtag & ~SFI_MSG_BIT;
}

static void write_entry(struct sfi_cq *cq, const struct sfi_op *op, void *buf, size_t i)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT: {
		struct fi_cq_entry *e = (struct fi_cq_entry *)buf + i;

		e->op_context = op->context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *e = (struct fi_cq_msg_entry *)buf + i;

		e->op_context = op->context;
		e->flags = op->flags;
		e->len = op->kind == SFI_OP_PEEK ? op->rlen : op_delivered(op);
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *e = (struct fi_cq_data_entry *)buf + i;

		e->op_context = op->context;
		e->flags = op->flags;
		e->len = op->kind == SFI_OP_PEEK ? op->rlen : op_delivered(op);
		e->buf = NULL;
		e->data = 0;
		break;
	}
	default: {
		struct fi_cq_tagged_entry *e = (struct fi_cq_tagged_entry *)buf + i;

		e->op_context = op->context;
		e->flags = op->flags;
		e->len = op->kind == SFI_OP_PEEK ? op->rlen : op_delivered(op);
		e->buf = NULL;
		e->data = 0;
		e->tag = (op->flags & FI_RECV) ? user_tag(op) : 0;
		break;
	}
	}
}

static fi_addr_t op_source(const struct sfi_op *op)
{
	if (!(op->flags & FI_RECV) || op_failed(op))
		return FI_ADDR_NOTAVAIL;
	return sfi_av_reverse(op->ep->av, op->rpeer);
}

static ssize_t cq_read_locked(struct sfi_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t i = 0;

	set_progress(&cq->eps);
	while (i < count && cq->head && !op_failed(cq->head)) {
		struct sfi_op *op = cq->head;

		write_entry(cq, op, buf, i);
		if (src)
			src[i] = op_source(op);
		cq->head = op->next;
		if (!cq->head)
			cq->tail = NULL;
		sfi_op_put(op);
		i++;
	}
	if (i)
		return (ssize_t)i;
	if (cq->head)
		return -FI_EAVAIL;
	return -FI_EAGAIN;
}

static ssize_t sfi_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct sfi_cq *cq = container_of(fcq, struct sfi_cq, cq);
	ssize_t rc;

	pthread_mutex_lock(&cq->dom->lock);
	rc = cq_read_locked(cq, buf, count, src);
	pthread_mutex_unlock(&cq->dom->lock);
	/* An application that spins on an empty CQ must not starve the
	 * daemon that would complete its operations (two cores, a daemon
	 * per node and a client each: 6 ms per round trip, a scheduler
	 * tick, without this; sl_wait() yields likewise). */
	if (rc == -FI_EAGAIN)
		sched_yield();
	return rc;
}

static ssize_t sfi_cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return sfi_cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t sfi_cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *e, uint64_t flags)
{
	struct sfi_cq *cq = container_of(fcq, struct sfi_cq, cq);
	struct sfi_op *op;

	pthread_mutex_lock(&cq->dom->lock);
	set_progress(&cq->eps);
	op = cq->head;
	if (!op || !op_failed(op)) {
		pthread_mutex_unlock(&cq->dom->lock);
		return -FI_EAGAIN;
	}
	e->op_context = op->context;
	e->flags = op->flags;
	e->len = op->status == SL_ERR_TRUNCATED ? op->len : 0;
	e->buf = NULL;
	e->data = 0;
	e->tag = (op->flags & FI_RECV) ? user_tag(op) : 0;
	e->olen = op->status == SL_ERR_TRUNCATED && op->rlen > op->len ? op->rlen - op->len : 0;
	e->err = sfi_status_to_fi(op->status);
	e->prov_errno = op->status;
	/* err_data is the application's buffer (API >= 1.5): none given. */
	e->err_data_size = 0;
	if (!(flags & FI_PEEK)) {
		cq->head = op->next;
		if (!cq->head)
			cq->tail = NULL;
		sfi_op_put(op);
	}
	pthread_mutex_unlock(&cq->dom->lock);
	return 1;
}

static int cq_signal_fd(struct sfi_cq *cq)
{
	if (cq->signal_fd < 0)
		cq->signal_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return cq->signal_fd;
}

static ssize_t sfi_cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
				const void *cond, int timeout)
{
	struct sfi_cq *cq = container_of(fcq, struct sfi_cq, cq);
	int64_t deadline = sfi_deadline_ns(timeout);
	ssize_t rc;

	pthread_mutex_lock(&cq->dom->lock);
	for (;;) {
		int left;

		rc = cq_read_locked(cq, buf, count, src);
		if (rc != -FI_EAGAIN)
			break;
		if (cq->signaled) {
			uint64_t v;

			cq->signaled = false;
			if (cq->signal_fd >= 0)
				(void)!read(cq->signal_fd, &v, sizeof(v));
			break;
		}
		left = sfi_ms_left(deadline);
		if (left == 0)
			break;
		if (cq_signal_fd(cq) < 0) {
			rc = -FI_ENOMEM;
			break;
		}
		if (set_sleep(cq->dom, &cq->eps, cq->signal_fd, left)) {
			rc = -FI_ENOMEM;
			break;
		}
	}
	pthread_mutex_unlock(&cq->dom->lock);
	return rc;
}

static ssize_t sfi_cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond,
			    int timeout)
{
	return sfi_cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int sfi_cq_signal(struct fid_cq *fcq)
{
	struct sfi_cq *cq = container_of(fcq, struct sfi_cq, cq);
	uint64_t one = 1;

	pthread_mutex_lock(&cq->dom->lock);
	cq->signaled = true;
	if (cq->signal_fd >= 0)
		(void)!write(cq->signal_fd, &one, sizeof(one));
	pthread_mutex_unlock(&cq->dom->lock);
	return 0;
}

static struct fi_ops_cq sfi_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = sfi_cq_read,
	.readfrom = sfi_cq_readfrom,
	.readerr = sfi_cq_readerr,
	.sread = sfi_cq_sread,
	.sreadfrom = sfi_cq_sreadfrom,
	.signal = sfi_cq_signal,
	.strerror = sfi_cq_strerror,
};

int sfi_cq_attach_fd(struct sfi_cq *cq, struct sfi_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };

	if (cq->epfd < 0)
		return 0;
	if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, sl_fd(ep->q), &ev) && errno != EEXIST)
		return -errno;
	return 0;
}

static int sfi_cq_control(struct fid *fid, int command, void *arg)
{
	struct sfi_cq *cq = container_of(fid, struct sfi_cq, cq.fid);

	switch (command) {
	case FI_GETWAIT:
		if (cq->epfd < 0)
			return -FI_ENODATA;
		*(int *)arg = cq->epfd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = cq->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int sfi_cq_close(struct fid *fid)
{
	struct sfi_cq *cq = container_of(fid, struct sfi_cq, cq.fid);

	pthread_mutex_lock(&cq->dom->lock);
	if (cq->eps.n) {
		pthread_mutex_unlock(&cq->dom->lock);
		return -FI_EBUSY;
	}
	cq->dom->refs--;
	pthread_mutex_unlock(&cq->dom->lock);
	if (cq->epfd >= 0)
		close(cq->epfd);
	if (cq->signal_fd >= 0)
		close(cq->signal_fd);
	free(cq->eps.eps);
	free(cq);
	return 0;
}

static struct fi_ops sfi_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_cq_close,
	.bind = sfi_no_bind,
	.control = sfi_cq_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

int sfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq_p,
		void *context)
{
	struct sfi_domain *dom = container_of(domain, struct sfi_domain, domain);
	struct sfi_cq *cq;

	if (!attr)
		return -FI_EINVAL;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC: case FI_CQ_FORMAT_CONTEXT: case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA: case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_ENOSYS;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE: case FI_WAIT_UNSPEC: case FI_WAIT_FD: case FI_WAIT_YIELD:
	case FI_WAIT_MUTEX_COND:
		break;
	default:
		return -FI_ENOSYS;	/* wait sets, pollfds */
	}
	if (attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->wait_obj = attr->wait_obj;
	cq->epfd = -1;
	cq->signal_fd = -1;
	if (attr->wait_obj == FI_WAIT_FD) {
		cq->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (cq->epfd < 0) {
			int e = errno;

			free(cq);
			return -e;
		}
	}
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &sfi_cq_fi_ops;
	cq->cq.ops = &sfi_cq_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*cq_p = &cq->cq;
	return 0;
}

/* ------------------------------------------------------------------ */
/* fi_trywait                                                           */
/* ------------------------------------------------------------------ */

int sfi_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	int i, rc = 0;

	for (i = 0; i < count && !rc; i++) {
		if (fids[i]->fclass == FI_CLASS_CQ) {
			struct sfi_cq *cq = container_of(fids[i], struct sfi_cq, cq.fid);

			pthread_mutex_lock(&cq->dom->lock);
			set_progress(&cq->eps);
			if (cq->head || cq->signaled || set_arm(&cq->eps))
				rc = -FI_EAGAIN;
			pthread_mutex_unlock(&cq->dom->lock);
		} else if (fids[i]->fclass == FI_CLASS_CNTR) {
			struct sfi_cntr *c = container_of(fids[i], struct sfi_cntr, cntr.fid);

			pthread_mutex_lock(&c->dom->lock);
			set_progress(&c->eps);
			if (set_arm(&c->eps))
				rc = -FI_EAGAIN;
			pthread_mutex_unlock(&c->dom->lock);
		} else if (fids[i]->fclass != FI_CLASS_EQ) {
			rc = -FI_EINVAL;
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Counters                                                             */
/* ------------------------------------------------------------------ */

static uint64_t sfi_cntr_read(struct fid_cntr *fc)
{
	struct sfi_cntr *c = container_of(fc, struct sfi_cntr, cntr);
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	set_progress(&c->eps);
	v = c->value;
	pthread_mutex_unlock(&c->dom->lock);
	if (v == c->last_read)
		sched_yield();	/* spinning on a counter: as on a CQ */
	c->last_read = v;
	return v;
}

static uint64_t sfi_cntr_readerr(struct fid_cntr *fc)
{
	struct sfi_cntr *c = container_of(fc, struct sfi_cntr, cntr);
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	set_progress(&c->eps);
	v = c->errors;
	pthread_mutex_unlock(&c->dom->lock);
	return v;
}

static int cntr_update(struct fid_cntr *fc, uint64_t value, bool err, bool add)
{
	struct sfi_cntr *c = container_of(fc, struct sfi_cntr, cntr);
	uint64_t *p = err ? &c->errors : &c->value;

	pthread_mutex_lock(&c->dom->lock);
	*p = add ? *p + value : value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int sfi_cntr_add(struct fid_cntr *fc, uint64_t v) { return cntr_update(fc, v, false, true); }
static int sfi_cntr_set(struct fid_cntr *fc, uint64_t v) { return cntr_update(fc, v, false, false); }
static int sfi_cntr_adderr(struct fid_cntr *fc, uint64_t v) { return cntr_update(fc, v, true, true); }
static int sfi_cntr_seterr(struct fid_cntr *fc, uint64_t v) { return cntr_update(fc, v, true, false); }

static int sfi_cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct sfi_cntr *c = container_of(fc, struct sfi_cntr, cntr);
	int64_t deadline = sfi_deadline_ns(timeout);
	uint64_t errors;
	int rc = 0;

	pthread_mutex_lock(&c->dom->lock);
	errors = c->errors;
	for (;;) {
		int left;

		set_progress(&c->eps);
		if (c->value >= threshold)
			break;
		if (c->errors != errors) {
			rc = -FI_EAVAIL;
			break;
		}
		left = sfi_ms_left(deadline);
		if (left == 0) {
			rc = -FI_ETIMEDOUT;
			break;
		}
		if (set_sleep(c->dom, &c->eps, -1, left)) {
			rc = -FI_ENOMEM;
			break;
		}
	}
	pthread_mutex_unlock(&c->dom->lock);
	return rc;
}

static struct fi_ops_cntr sfi_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = sfi_cntr_read,
	.readerr = sfi_cntr_readerr,
	.add = sfi_cntr_add,
	.set = sfi_cntr_set,
	.wait = sfi_cntr_wait,
	.adderr = sfi_cntr_adderr,
	.seterr = sfi_cntr_seterr,
};

static int sfi_cntr_close(struct fid *fid)
{
	struct sfi_cntr *c = container_of(fid, struct sfi_cntr, cntr.fid);

	pthread_mutex_lock(&c->dom->lock);
	if (c->eps.n) {
		pthread_mutex_unlock(&c->dom->lock);
		return -FI_EBUSY;
	}
	c->dom->refs--;
	pthread_mutex_unlock(&c->dom->lock);
	free(c->eps.eps);
	free(c);
	return 0;
}

static int sfi_cntr_control(struct fid *fid, int command, void *arg)
{
	struct sfi_cntr *c = container_of(fid, struct sfi_cntr, cntr.fid);

	if (command == FI_GETWAITOBJ) {
		*(enum fi_wait_obj *)arg = c->wait_obj;
		return 0;
	}
	return -FI_ENOSYS;
}

static struct fi_ops sfi_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_cntr_close,
	.bind = sfi_no_bind,
	.control = sfi_cntr_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

int sfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr_p, void *context)
{
	struct sfi_domain *dom = container_of(domain, struct sfi_domain, domain);
	struct sfi_cntr *c;

	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP)
			return -FI_ENOSYS;
		if (attr->wait_obj == FI_WAIT_SET || attr->wait_obj == FI_WAIT_POLLFD)
			return -FI_ENOSYS;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->dom = dom;
	c->wait_obj = attr ? attr->wait_obj : FI_WAIT_UNSPEC;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &sfi_cntr_fi_ops;
	c->cntr.ops = &sfi_cntr_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*cntr_p = &c->cntr;
	return 0;
}
