/*
 * fi_domain.c - the domain: one libsluice context (sl_open) and the lock
 * that serialises everything done with the queues opened on it.
 *
 * Memory registration is not needed (mr_mode 0: every buffer is copied
 * through the queue's arena), but fi_mr_reg() works and returns a
 * region with no descriptor, for applications that register anyway.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sfi.h"

int64_t sfi_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sfi_deadline_ns(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : sfi_now_ns() + (int64_t)timeout_ms * 1000000;
}

int sfi_ms_left(int64_t deadline_ns)
{
	int64_t left;

	if (deadline_ns < 0)
		return -1;
	left = deadline_ns - sfi_now_ns();
	return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

static int sfi_domain_close(struct fid *fid)
{
	struct sfi_domain *dom = container_of(fid, struct sfi_domain, domain.fid);

	if (dom->refs)
		return -FI_EBUSY;
	sl_close(dom->ctx);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static struct fi_ops sfi_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_domain_close,
	.bind = sfi_no_bind,
	.control = sfi_no_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

/* ------------------------------------------------------------------ */
/* Memory regions: accepted, never needed                               */
/* ------------------------------------------------------------------ */

struct sfi_mr {
	struct fid_mr mr;
	struct sfi_domain *dom;
};

static int sfi_mr_close(struct fid *fid)
{
	struct sfi_mr *mr = container_of(fid, struct sfi_mr, mr.fid);

	pthread_mutex_lock(&mr->dom->lock);
	mr->dom->refs--;
	pthread_mutex_unlock(&mr->dom->lock);
	free(mr);
	return 0;
}

static int sfi_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return 0;
}

static int sfi_mr_control(struct fid *fid, int command, void *arg)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops sfi_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_mr_close,
	.bind = sfi_mr_bind,
	.control = sfi_mr_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

int sfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags,
	       struct fid_mr **mr_p, void *context)
{
	struct sfi_domain *dom = container_of(fid, struct sfi_domain, domain.fid);
	struct sfi_mr *mr;

	if (fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->dom = dom;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = context;
	mr->mr.fid.ops = &sfi_mr_fi_ops;
	mr->mr.mem_desc = NULL;
	mr->mr.key = requested_key;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*mr_p = &mr->mr;
	return 0;
}

static int sfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		       uint64_t access, uint64_t offset, uint64_t requested_key,
		       uint64_t flags, struct fid_mr **mr, void *context)
{
	return sfi_mr_reg(fid, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0,
			  access, offset, requested_key, flags, mr, context);
}

static int sfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
			  struct fid_mr **mr)
{
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return sfi_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
			   attr->requested_key, flags, mr, attr->context);
}

static struct fi_ops_mr sfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = sfi_mr_reg,
	.regv = sfi_mr_regv,
	.regattr = sfi_mr_regattr,
};

/* ------------------------------------------------------------------ */

static int sfi_no_sep(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int sfi_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			    struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int sfi_no_stx(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int sfi_no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int sfi_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			       enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int sfi_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int sfi_endpoint2(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return sfi_endpoint(domain, info, ep, context);
}

static struct fi_ops_domain sfi_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = sfi_av_open,
	.cq_open = sfi_cq_open,
	.endpoint = sfi_endpoint,
	.scalable_ep = sfi_no_sep,
	.cntr_open = sfi_cntr_open,
	.poll_open = sfi_no_poll_open,
	.stx_ctx = sfi_no_stx,
	.srx_ctx = sfi_no_srx,
	.query_atomic = sfi_no_query_atomic,
	.query_collective = sfi_no_query_collective,
	.endpoint2 = sfi_endpoint2,
};

/* libsluice's negative errno values as libfabric's (the same numbers on
 * Linux, but said by name). */
static int errno_to_fi(int rc)
{
	switch (rc) {
	case -ENOENT: case -ECONNREFUSED: case -ECONNRESET: return -FI_ENODATA;
	case -EACCES: return -FI_EACCES;
	case -ENOMEM: return -FI_ENOMEM;
	case -ETIMEDOUT: return -FI_ETIMEDOUT;
	default: return rc < 0 ? rc : -FI_EOTHER;
	}
}

int sfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	struct sfi_domain *dom;
	size_t arena;
	uint32_t node;
	int rc;

	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, SFI_NAME))
		return -FI_EINVAL;
	rc = sfi_arena_probe(&arena, &node);
	if (rc)
		return errno_to_fi(rc);
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	rc = sl_open(NULL, &dom->ctx);
	if (rc) {
		free(dom);
		return errno_to_fi(rc);
	}
	rc = pthread_mutex_init(&dom->lock, NULL);
	if (rc) {
		sl_close(dom->ctx);
		free(dom);
		return -rc;
	}
	dom->fab = container_of(fabric, struct sfi_fabric, fabric);
	dom->local_node = sl_local_node(dom->ctx);
	dom->threading = info && info->domain_attr ? info->domain_attr->threading : FI_THREAD_SAFE;
	dom->max_msg_size = arena / SFI_ARENA_SHARE;
	dom->domain.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain.fid.context = context;
	dom->domain.fid.ops = &sfi_domain_fi_ops;
	dom->domain.ops = &sfi_domain_ops;
	dom->domain.mr = &sfi_mr_ops;
	*domain = &dom->domain;
	return 0;
}
