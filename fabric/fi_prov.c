/*
 * fi_prov.c - the provider's entry point (fi_prov_ini), fi_getinfo and the
 * fabric object.
 *
 * libfabric loads lib<name>-fi.so from $FI_PROVIDER_PATH and calls its
 * fi_prov_ini() (fi_provider(7)); everything else is reached through the
 * function tables of the objects it returns.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfi.h"

/* Primary capabilities, and the secondary ones the provider always has. */
#define SFI_PRIMARY_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV)
#define SFI_SECONDARY_CAPS (FI_SOURCE | FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define SFI_CAPS (SFI_PRIMARY_CAPS | SFI_SECONDARY_CAPS)
#define SFI_TX_OP_FLAGS (FI_COMPLETION | FI_INJECT | FI_TRANSMIT_COMPLETE | FI_INJECT_COMPLETE)
#define SFI_RX_OP_FLAGS (FI_COMPLETION)
#define SFI_MSG_ORDER (FI_ORDER_SAS)

static int sfi_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints, struct fi_info **info);
static void sfi_cleanup(void);

struct fi_provider sfi_prov = {
	.version = SFI_PROV_VERSION,
	.fi_version = SFI_FI_VERSION,
	.name = SFI_NAME,
	.getinfo = sfi_getinfo,
	.fabric = sfi_fabric_open,
	.cleanup = sfi_cleanup,
};

FI_EXT_INI
{
	fi_param_define(&sfi_prov, "directed_recv", FI_PARAM_BOOL,
			"honour the source address of receives when the application "
			"asked for FI_DIRECTED_RECV (default yes); no makes every "
			"receive match any source, for Open MPI 4.1's ofi MTL in "
			"ofi_tag_1 mode, which carries the source in the tag and posts "
			"the acknowledgement receive of a blocking MPI_Ssend with source "
			"fi_addr 0 (fi_sluice(7))");
	return &sfi_prov;
}

/* FI_SLUICE_DIRECTED_RECV, read once per endpoint. */
bool sfi_directed_recv_enabled(void)
{
	int on = 1;

	if (fi_param_get_bool(&sfi_prov, "directed_recv", &on) != FI_SUCCESS)
		on = 1;
	return on != 0;
}

static void sfi_cleanup(void)
{
}

/* The arena size of a queue of this process's daemon ($SLUICE_SOCKET),
 * learnt once by opening a queue: max_msg_size is a share of it, and a
 * getinfo that reaches no daemon reports no provider. */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t probed_arena;
static uint32_t probed_node;

int sfi_arena_probe(size_t *arena, uint32_t *local_node)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	int rc = 0;

	pthread_mutex_lock(&probe_lock);
	if (!probed_arena) {
		rc = sl_open(NULL, &ctx);
		if (rc == 0) {
			rc = sl_queue_open(ctx, 0, 1, &q);
			if (rc == 0) {
				probed_arena = sl_arena_size(q);
				probed_node = sl_local_node(ctx);
				sl_queue_close(q);
			}
			sl_close(ctx);
		}
		if (rc)
			SFI_WARN(FI_LOG_CORE, "no sluice daemon to use (SLUICE_SOCKET=%s): %s\n",
				 getenv("SLUICE_SOCKET") ? getenv("SLUICE_SOCKET") : SL_DEFAULT_SOCKET,
				 strerror(-rc));
	}
	*arena = probed_arena;
	*local_node = probed_node;
	pthread_mutex_unlock(&probe_lock);
	return rc;
}

/* Addresses in the private format given through hints must be ours. */
static int hint_addr(uint32_t format, const void *addr, size_t len, sl_addr_t *out)
{
	if (!addr)
		return 0;
	if ((format != SFI_ADDR_FORMAT && format != FI_FORMAT_UNSPEC) || len != SFI_ADDRLEN)
		return -FI_ENODATA;
	memcpy(out, addr, SFI_ADDRLEN);
	return 1;
}

static int check_hints(const struct fi_info *hints)
{
	if (!hints)
		return 0;
	if (hints->caps & ~SFI_CAPS)
		return -FI_ENODATA;
	if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != SFI_ADDR_FORMAT)
		return -FI_ENODATA;
	if (hints->ep_attr) {
		if (hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_RDM)
			return -FI_ENODATA;
		if (hints->ep_attr->tx_ctx_cnt > 1 || hints->ep_attr->rx_ctx_cnt > 1)
			return -FI_ENODATA;
		if (hints->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT ||
		    hints->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT)
			return -FI_ENODATA;
	}
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcmp(hints->fabric_attr->name, SFI_NAME))
		return -FI_ENODATA;
	if (hints->domain_attr) {
		if (hints->domain_attr->name && strcmp(hints->domain_attr->name, SFI_NAME))
			return -FI_ENODATA;
		if (hints->domain_attr->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
			return -FI_ENODATA;	/* FI_SHARED_AV */
		/* No immediate data (FI_REMOTE_CQ_DATA) in sluice messages. */
		if (hints->domain_attr->cq_data_size)
			return -FI_ENODATA;
		if (hints->domain_attr->av_type != FI_AV_UNSPEC &&
		    hints->domain_attr->av_type != FI_AV_MAP &&
		    hints->domain_attr->av_type != FI_AV_TABLE)
			return -FI_ENODATA;
		/* Registration is never needed (buffers are copied), so any
		 * mr_mode the application supports will do; but MR_SCALABLE
		 * or MR_BASIC asked as the old enum still mean "none". */
	}
	if (hints->tx_attr) {
		if (hints->tx_attr->msg_order & ~SFI_MSG_ORDER)
			return -FI_ENODATA;
		if (hints->tx_attr->comp_order & ~FI_ORDER_NONE)
			return -FI_ENODATA;
		if (hints->tx_attr->iov_limit > SFI_IOV_MAX ||
		    hints->tx_attr->inject_size > SFI_INJECT_SIZE)
			return -FI_ENODATA;
	}
	if (hints->rx_attr) {
		if (hints->rx_attr->msg_order & ~SFI_MSG_ORDER)
			return -FI_ENODATA;
		if (hints->rx_attr->iov_limit > SFI_IOV_MAX)
			return -FI_ENODATA;
	}
	return 0;
}

static int sfi_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *fi;
	sl_addr_t src = { 0, 0 }, dst = { 0, 0 };
	bool have_src = false, have_dst = false;
	size_t arena;
	uint32_t local_node;
	uint64_t caps;
	int rc;

	*info = NULL;
	rc = check_hints(hints);
	if (rc)
		return rc;
	if (hints) {
		rc = hint_addr(hints->addr_format, hints->src_addr, hints->src_addrlen, &src);
		if (rc < 0)
			return rc;
		have_src = rc;
		rc = hint_addr(hints->addr_format, hints->dest_addr, hints->dest_addrlen, &dst);
		if (rc < 0)
			return rc;
		have_dst = rc;
	}
	if (node || service) {
		sl_addr_t a;

		if (sfi_parse_addr(node, service, &a))
			return -FI_ENODATA;
		if (flags & FI_SOURCE) {
			src = a;
			have_src = true;
		} else {
			dst = a;
			have_dst = true;
		}
	}
	if (sfi_arena_probe(&arena, &local_node))
		return -FI_ENODATA;

	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	/* What was asked for (all of it when nothing was): no extra primary
	 * capability, as fi_getinfo(3) wants. */
	caps = hints && hints->caps ? hints->caps : SFI_CAPS;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = SFI_ADDR_FORMAT;
	/* Always a source: this node (SL_NODE_LOCAL: whichever daemon the
	 * domain opens) and port 0 (a free one), unless given. */
	if (!have_src) {
		src = (sl_addr_t){ SL_NODE_LOCAL, 0 };
		have_src = true;
	}
	if (have_src) {
		fi->src_addr = malloc(SFI_ADDRLEN);
		if (!fi->src_addr)
			goto nomem;
		memcpy(fi->src_addr, &src, SFI_ADDRLEN);
		fi->src_addrlen = SFI_ADDRLEN;
	}
	if (have_dst) {
		fi->dest_addr = malloc(SFI_ADDRLEN);
		if (!fi->dest_addr)
			goto nomem;
		memcpy(fi->dest_addr, &dst, SFI_ADDRLEN);
		fi->dest_addrlen = SFI_ADDRLEN;
	}

	fi->tx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_SEND);
	fi->tx_attr->mode = 0;
	fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags & SFI_TX_OP_FLAGS : 0;
	fi->tx_attr->msg_order = SFI_MSG_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = SFI_INJECT_SIZE;
	fi->tx_attr->size = SFI_SQ_DEPTH;
	fi->tx_attr->iov_limit = SFI_IOV_MAX;
	fi->tx_attr->rma_iov_limit = 0;

	fi->rx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE);
	fi->rx_attr->mode = 0;
	fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags & SFI_RX_OP_FLAGS : 0;
	fi->rx_attr->msg_order = SFI_MSG_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = SFI_SQ_DEPTH;
	fi->rx_attr->iov_limit = SFI_IOV_MAX;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = arena / SFI_ARENA_SHARE;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	/* 63 bits when FI_MSG shares the tag space, all 64 without it. */
	fi->ep_attr->mem_tag_format = caps & FI_MSG ? 0x5555555555555555ull : 0xaaaaaaaaaaaaaaaaull;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(SFI_NAME);
	if (!fi->domain_attr->name)
		goto nomem;
	fi->domain_attr->threading = hints && hints->domain_attr &&
		hints->domain_attr->threading != FI_THREAD_UNSPEC ?
		hints->domain_attr->threading : FI_THREAD_SAFE;
	/* The daemon moves the data (auto); completions are taken when the
	 * application reads a CQ or counter, which is all that manual
	 * progress asks of a provider: either is true, the hint's is said. */
	fi->domain_attr->control_progress = hints && hints->domain_attr &&
		hints->domain_attr->control_progress != FI_PROGRESS_UNSPEC ?
		hints->domain_attr->control_progress : FI_PROGRESS_AUTO;
	fi->domain_attr->data_progress = hints && hints->domain_attr &&
		hints->domain_attr->data_progress != FI_PROGRESS_UNSPEC ?
		hints->domain_attr->data_progress : FI_PROGRESS_AUTO;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = hints && hints->domain_attr ? hints->domain_attr->av_type : FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = 0;
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	fi->domain_attr->cq_data_size = 0;
	fi->domain_attr->cq_cnt = 1024;
	fi->domain_attr->ep_cnt = 1024;
	fi->domain_attr->tx_ctx_cnt = 1024;
	fi->domain_attr->rx_ctx_cnt = 1024;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->max_ep_stx_ctx = 0;
	fi->domain_attr->max_ep_srx_ctx = 0;
	fi->domain_attr->cntr_cnt = 1024;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->domain_attr->mode = 0;
	fi->domain_attr->mr_cnt = 65536;

	fi->fabric_attr->name = strdup(SFI_NAME);
	if (!fi->fabric_attr->name)
		goto nomem;
	fi->fabric_attr->prov_version = SFI_PROV_VERSION;
	fi->fabric_attr->api_version = SFI_FI_VERSION;
	(void)version;
	*info = fi;
	return 0;
nomem:
	fi_freeinfo(fi);
	return -FI_ENOMEM;
}

/* ------------------------------------------------------------------ */
/* The fabric                                                           */
/* ------------------------------------------------------------------ */

static int sfi_fabric_close(struct fid *fid)
{
	free(container_of(fid, struct sfi_fabric, fabric.fid));
	return 0;
}

static struct fi_ops sfi_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_fabric_close,
	.bind = sfi_no_bind,
	.control = sfi_no_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

static int sfi_no_pep(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

static int sfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

static int sfi_domain2(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return sfi_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric sfi_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = sfi_domain_open,
	.passive_ep = sfi_no_pep,
	.eq_open = sfi_eq_open,
	.wait_open = sfi_no_wait_open,
	.trywait = sfi_trywait,
	.domain2 = sfi_domain2,
};

int sfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct sfi_fabric *fab;

	if (attr && attr->name && strcmp(attr->name, SFI_NAME))
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->fabric.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric.fid.context = context;
	fab->fabric.fid.ops = &sfi_fabric_fi_ops;
	fab->fabric.ops = &sfi_fabric_ops;
	*fabric = &fab->fabric;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Stubs                                                                */
/* ------------------------------------------------------------------ */

int sfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int sfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int sfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context)
{
	return -FI_ENOSYS;
}

int sfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int sfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		   void *context)
{
	return -FI_ENOSYS;
}
