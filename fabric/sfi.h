/*
 * sfi.h - the sluice libfabric provider's own structures (libsluice-fi.so).
 *
 * The provider maps libfabric's RDM endpoint onto libsluice (include/sluice.h)
 * and nothing else: one sl_ctx per domain, one sl_queue per endpoint.  Every
 * operation is one struct sfi_op from a fixed pool of its endpoint; the op
 * carries the application's buffers, the arena buffer it is staged in, and,
 * once sluice has completed it, the completion the CQ hands out.  So the
 * pool bounds everything the provider holds: posted operations, completions
 * not read yet, staging memory (sl_alloc in the queue's arena).  When it is
 * exhausted a post returns -FI_EAGAIN, as libfabric's rules ask.
 *
 * Locking: one mutex per domain serialises every call that touches an
 * endpoint's queue or a CQ, counter or AV of that domain (libsluice's
 * queues are single-threaded), which makes the domain FI_THREAD_SAFE.
 * Blocking calls drop it while they sleep in poll(2).
 *
 * docs/libfabric.md and fi_sluice(7) say what is supported and why.
 */
#ifndef SFI_H
#define SFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#include <sluice.h>

#define SFI_NAME "sluice"
#define SFI_PROV_VERSION FI_VERSION(0, 1)
#define SFI_FI_VERSION FI_VERSION(1, 17)

/* The private address format: an sl_addr_t, 8 bytes (node, port). */
#define SFI_ADDR_FORMAT (FI_PROV_SPECIFIC | 0x51u)
#define SFI_ADDRLEN sizeof(sl_addr_t)

/* Tag space.  FI_MSG messages travel with bit 63 of the sluice tag set
 * and FI_TAGGED ones with it clear, so that neither ever matches the
 * other; an endpoint opened without FI_MSG has all 64 bits. */
#define SFI_MSG_BIT (1ull << 63)

/* Queue depth (SQ entries; the CQ has twice as many) and so the pool. */
#define SFI_SQ_DEPTH 512u
#define SFI_POOL_OPS (2u * SFI_SQ_DEPTH)
#define SFI_IOV_MAX 8u
#define SFI_INJECT_SIZE 16384u
/* max_msg_size is the arena over this (see sfi_arena_probe()). */
#define SFI_ARENA_SHARE 4u
/* How long a NAKed send or receive is posted again before it fails
 * with FI_EAGAIN, and the back-off between tries (microseconds). */
#define SFI_NAK_TIMEOUT_MS 30000
#define SFI_NAK_BACKOFF_MIN_US 10
#define SFI_NAK_BACKOFF_MAX_US 10000

/* A status of the provider's own (prov_errno), beside enum sl_status:
 * the local daemon closed the context, so nothing posted will complete. */
#define SFI_STATUS_DAEMON_GONE 256

extern struct fi_provider sfi_prov;

/* Whether FI_SLUICE_DIRECTED_RECV leaves FI_DIRECTED_RECV on (default). */
bool sfi_directed_recv_enabled(void);

#define SFI_WARN(subsys, ...) FI_WARN(&sfi_prov, subsys, __VA_ARGS__)

struct sfi_fabric {
	struct fid_fabric fabric;
};

struct sfi_ep;

struct sfi_domain {
	struct fid_domain domain;
	struct sfi_fabric *fab;
	struct sl_ctx *ctx;
	uint32_t local_node;
	pthread_mutex_t lock;
	int refs;			/* objects opened on it */
	enum fi_threading threading;
	size_t max_msg_size;
};

struct sfi_av {
	struct fid_av av;
	struct sfi_domain *dom;
	enum fi_av_type type;
	sl_addr_t *addrs;		/* by fi_addr_t (the index) */
	uint8_t *used;
	size_t count, cap;		/* slots handed out; allocated */
	/* Reverse map: open addressing, index + 1 (0 empty, SIZE_MAX gone). */
	size_t *hash;
	size_t hash_cap;
	int refs;			/* endpoints bound */
};

enum sfi_op_kind {
	SFI_OP_SEND,
	SFI_OP_INJECT,
	SFI_OP_RECV,
	SFI_OP_PEEK,			/* FI_PEEK, with or without CLAIM/DISCARD */
	SFI_OP_CLAIMED_RECV,		/* FI_CLAIM (with or without DISCARD) */
};

enum sfi_op_state {
	SFI_OP_FREE,
	SFI_OP_POSTED,			/* with sluice */
	SFI_OP_RETRY,			/* NAKed, waiting to be posted again */
	SFI_OP_DONE,			/* in a CQ, waiting to be read */
};

struct sfi_op {
	struct sfi_op *next;		/* free list, retry list or CQ list */
	struct sfi_ep *ep;
	enum sfi_op_kind kind;
	enum sfi_op_state state;
	void *context;
	uint64_t flags;			/* FI_SEND/FI_RECV | FI_MSG/FI_TAGGED */
	bool want_cq;			/* a success completion is written */
	void *abuf;			/* arena buffer (sl_alloc), or NULL */
	size_t len;			/* send length, receive capacity */
	struct iovec iov[SFI_IOV_MAX];
	size_t iov_count;
	sl_addr_t peer;			/* destination / source filter */
	uint64_t tag, mask;		/* sluice tag and mask */
	uint64_t claim;
	unsigned probe_flags;
	/* Retrying a NAK. */
	int64_t nak_deadline_ns, retry_at_ns;
	unsigned backoff_us;
	/* The completion. */
	int status;			/* enum sl_status */
	uint64_t rlen, rtag;
	sl_addr_t rpeer;
};

struct sfi_cq;
struct sfi_cntr;

struct sfi_ep {
	struct fid_ep ep;
	struct sfi_domain *dom;
	struct sl_queue *q;
	sl_addr_t addr;
	uint64_t caps;
	uint64_t tx_op_flags, rx_op_flags;
	bool tag64;			/* no FI_MSG: the whole tag is the app's */
	bool enabled;
	struct sfi_av *av;
	struct sfi_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct sfi_cntr *tx_cntr, *rx_cntr;
	struct fid_eq *eq;
	size_t max_msg_size;
	struct sfi_op *pool;
	struct sfi_op *free_ops;
	struct sfi_op *retry_head, *retry_tail;
	unsigned ops_free;
};

/* What a CQ or counter reads from: the endpoints bound to it. */
struct sfi_ep_set {
	struct sfi_ep **eps;
	size_t n, cap;
};

struct sfi_cq {
	struct fid_cq cq;
	struct sfi_domain *dom;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct sfi_op *head, *tail;	/* completions, oldest first */
	struct sfi_ep_set eps;
	int epfd;			/* FI_WAIT_FD: epoll over the queues' fds */
	int signal_fd;			/* eventfd for fi_cq_signal() */
	bool signaled;
};

struct sfi_cntr {
	struct fid_cntr cntr;
	struct sfi_domain *dom;
	uint64_t value, errors;
	uint64_t last_read;		/* fi_cntr_read's last answer */
	struct sfi_ep_set eps;
	enum fi_wait_obj wait_obj;
};

/* fi_prov.c */
int sfi_arena_probe(size_t *arena, uint32_t *local_node);
int sfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

/* fi_domain.c */
int sfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **dom, void *context);
int sfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags,
	       struct fid_mr **mr, void *context);
int64_t sfi_now_ns(void);
/* The timed waits (fi_cq_sread, fi_cntr_wait, fi_eq_sread): sfi_deadline_ns
 * - the CLOCK_MONOTONIC time (ns, sfi_now_ns) @timeout_ms from now, or -1
 * for a negative @timeout_ms (wait forever); sfi_ms_left - the
 * milliseconds until @deadline_ns, rounded up (a wait never ends early),
 * 0 once it has passed, -1 for no deadline (as poll(2)'s timeout). */
int64_t sfi_deadline_ns(int timeout_ms);
int sfi_ms_left(int64_t deadline_ns);

/* fi_av.c */
int sfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);
int sfi_av_addr(struct sfi_av *av, fi_addr_t fi_addr, sl_addr_t *out);
fi_addr_t sfi_av_reverse(struct sfi_av *av, sl_addr_t addr);
int sfi_parse_addr(const char *node, const char *service, sl_addr_t *out);
const char *sfi_addr_str(const sl_addr_t *addr, char *buf, size_t *len);

/* fi_cq.c */
int sfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);
int sfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
int sfi_set_add(struct sfi_ep_set *set, struct sfi_ep *ep);
void sfi_set_del(struct sfi_ep_set *set, struct sfi_ep *ep);
void sfi_cq_push(struct sfi_cq *cq, struct sfi_op *op);
void sfi_cq_forget_ep(struct sfi_cq *cq, struct sfi_ep *ep);
int sfi_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
int sfi_cq_attach_fd(struct sfi_cq *cq, struct sfi_ep *ep);

/* fi_eq.c */
int sfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);

/* fi_ep.c */
int sfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
void sfi_ep_progress(struct sfi_ep *ep);
struct sfi_op *sfi_op_get(struct sfi_ep *ep);
void sfi_op_put(struct sfi_op *op);
void sfi_op_finish(struct sfi_op *op);
ssize_t sfi_post_errno(int rc);
/* sfi_op_posted - the end of a post of @op whose sl_*() returned @rc:
 * on an error @op goes back to the pool and the libfabric error
 * (sfi_post_errno) is returned; else @op is SFI_OP_POSTED and 0. */
ssize_t sfi_op_posted(struct sfi_op *op, int rc);
/* sfi_recv_tag - the sluice tag and mask of a tagged receive or peek of
 * @tag with @ignore: bit 63 kept clear unless the endpoint has all 64 bits.
 * Returns 0, or -FI_EINVAL when @tag could never match (bit 63 asked for). */
int sfi_recv_tag(const struct sfi_ep *ep, uint64_t tag, uint64_t ignore,
		 uint64_t *sltag, uint64_t *mask);

/* sfi_recv_source - the source filter of a receive or peek naming @addr:
 * SL_ANY_SOURCE for FI_ADDR_UNSPEC or an endpoint without
 * FI_DIRECTED_RECV, else @addr's sluice address; -FI_EINVAL when @ep's
 * AV has no @addr.  Under the domain lock. */
int sfi_recv_source(struct sfi_ep *ep, fi_addr_t addr, sl_addr_t *src);
ssize_t sfi_copy_out(struct sfi_op *op);

/* fi_errors.c */
int sfi_status_to_fi(int status);
const char *sfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
			    char *buf, size_t len);

/* fi_peek.c: FI_PEEK, FI_CLAIM, FI_DISCARD and fi_cancel (sl_probe,
 * sl_recv_claimed, sl_cancel). */
ssize_t sfi_peek_post(struct sfi_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags);
ssize_t sfi_cancel(fid_t fid, void *context);
void sfi_peek_complete(struct sfi_op *op, const struct sl_cqe *cqe);

/* Stubs for what the provider does not do. */
int sfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int sfi_no_control(struct fid *fid, int command, void *arg);
int sfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context);
int sfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int sfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		   void *context);

#endif /* SFI_H */
