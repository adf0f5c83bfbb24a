/*
 * fi_eq.c - event queues.  An RDM endpoint over sluice has no connection
 * events and its AVs insert synchronously, so an EQ only carries what the
 * application writes itself (fi_eq_write) and error events so written
 * (FI_EQ_ERR in flags).  Bounded by attr->size entries: a write to a full
 * EQ returns -FI_EAGAIN.  Waiting is on an eventfd (FI_WAIT_FD hands it
 * out; it is readable while the EQ holds an event).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sfi.h"

#define SFI_EQ_DEFAULT_SIZE 256
#define SFI_EQ_ENTRY_MAX 256	/* bytes of one event's data */

struct sfi_eq_event {
	uint32_t event;
	bool is_err;
	size_t len;
	union {
		unsigned char data[SFI_EQ_ENTRY_MAX];
		struct fi_eq_err_entry err;
	} u;
};

struct sfi_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	struct sfi_eq_event *ring;
	size_t size, head, count;
	enum fi_wait_obj wait_obj;
	int efd;
};

/* The eventfd is readable exactly while events are queued. */
static void eq_sync_fd(struct sfi_eq *eq)
{
	uint64_t v;

	if (eq->efd < 0)
		return;
	(void)!read(eq->efd, &v, sizeof(v));
	if (eq->count) {
		v = 1;
		(void)!write(eq->efd, &v, sizeof(v));
	}
}

static ssize_t eq_read(struct sfi_eq *eq, uint32_t *event, void *buf, size_t len,
		       uint64_t flags, bool want_err)
{
	struct sfi_eq_event *ev;
	ssize_t n;

	pthread_mutex_lock(&eq->lock);
	if (!eq->count) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	ev = &eq->ring[eq->head];
	if (ev->is_err != want_err) {
		pthread_mutex_unlock(&eq->lock);
		return want_err ? -FI_EAGAIN : -FI_EAVAIL;
	}
	if (want_err) {
		memcpy(buf, &ev->u.err, sizeof(ev->u.err));
		n = sizeof(ev->u.err);
	} else {
		if (len < ev->len) {
			pthread_mutex_unlock(&eq->lock);
			return -FI_ETOOSMALL;
		}
		if (event)
			*event = ev->event;
		memcpy(buf, ev->u.data, ev->len);
		n = (ssize_t)ev->len;
	}
	if (!(flags & FI_PEEK)) {
		eq->head = (eq->head + 1) % eq->size;
		eq->count--;
		eq_sync_fd(eq);
	}
	pthread_mutex_unlock(&eq->lock);
	return n;
}

static ssize_t sfi_eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
			   uint64_t flags)
{
	return eq_read(container_of(feq, struct sfi_eq, eq), event, buf, len, flags, false);
}

static ssize_t sfi_eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	return eq_read(container_of(feq, struct sfi_eq, eq), NULL, buf, sizeof(*buf), flags, true);
}

static ssize_t sfi_eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
			    uint64_t flags)
{
	struct sfi_eq *eq = container_of(feq, struct sfi_eq, eq);
	struct sfi_eq_event *ev;
	if (!buf || len > SFI_EQ_ENTRY_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->count == eq->size) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	ev = &eq->ring[(eq->head + eq->count) % eq->size];
	ev->event = event;
	ev->is_err = false;
	ev->len = len;
	memcpy(ev->u.data, buf, len);
	eq->count++;
	eq_sync_fd(eq);
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)len;
}

static ssize_t sfi_eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
			    int timeout, uint64_t flags)
{
	struct sfi_eq *eq = container_of(feq, struct sfi_eq, eq);
	int64_t deadline = sfi_deadline_ns(timeout);

	for (;;) {
		ssize_t rc = sfi_eq_read(feq, event, buf, len, flags);
		struct pollfd pfd = { .fd = eq->efd, .events = POLLIN };
		int ms;

		if (rc != -FI_EAGAIN)
			return rc;
		if (eq->efd < 0)
			return -FI_ENOSYS;	/* FI_WAIT_NONE */
		ms = sfi_ms_left(deadline);
		if (ms == 0)
			return -FI_EAGAIN;
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
			return -errno;
	}
}

static const char *sfi_eq_strerror(struct fid_eq *feq, int prov_errno, const void *err_data,
				   char *buf, size_t len)
{
	return sfi_cq_strerror(NULL, prov_errno, err_data, buf, len);
}

static struct fi_ops_eq sfi_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = sfi_eq_read,
	.readerr = sfi_eq_readerr,
	.write = sfi_eq_write,
	.sread = sfi_eq_sread,
	.strerror = sfi_eq_strerror,
};

static int sfi_eq_close(struct fid *fid)
{
	struct sfi_eq *eq = container_of(fid, struct sfi_eq, eq.fid);

	if (eq->efd >= 0)
		close(eq->efd);
	pthread_mutex_destroy(&eq->lock);
	free(eq->ring);
	free(eq);
	return 0;
}

static int sfi_eq_control(struct fid *fid, int command, void *arg)
{
	struct sfi_eq *eq = container_of(fid, struct sfi_eq, eq.fid);

	switch (command) {
	case FI_GETWAIT:
		if (eq->wait_obj != FI_WAIT_FD)
			return -FI_ENODATA;
		*(int *)arg = eq->efd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = eq->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops sfi_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_eq_close,
	.bind = sfi_no_bind,
	.control = sfi_eq_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

int sfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq_p,
		void *context)
{
	struct sfi_eq *eq;

	if (!attr)
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD && attr->wait_obj != FI_WAIT_MUTEX_COND &&
	    attr->wait_obj != FI_WAIT_YIELD)
		return -FI_ENOSYS;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->size = attr->size ? attr->size : SFI_EQ_DEFAULT_SIZE;
	if (eq->size > 65536)
		eq->size = 65536;
	eq->ring = calloc(eq->size, sizeof(*eq->ring));
	eq->efd = -1;
	eq->wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : attr->wait_obj;
	if (!eq->ring || pthread_mutex_init(&eq->lock, NULL)) {
		free(eq->ring);
		free(eq);
		return -FI_ENOMEM;
	}
	if (eq->wait_obj != FI_WAIT_NONE) {
		eq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (eq->efd < 0) {
			int e = errno;

			pthread_mutex_destroy(&eq->lock);
			free(eq->ring);
			free(eq);
			return -e;
		}
	}
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &sfi_eq_fi_ops;
	eq->eq.ops = &sfi_eq_ops;
	*eq_p = &eq->eq;
	return 0;
}
