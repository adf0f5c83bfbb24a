/*
 * verbs.c - the verbs transport: xport.h over RC QPs (libibverbs),
 * connected with librdmacm, on one RDMA device.
 *
 * Resources.  One device ([transport] device, or the first with an active
 * port), taken from rdma_get_devices() so that its context is the one the
 * rdma_cm ids resolve to; one PD; one completion channel and the rdma_cm
 * event channel and the device's async event fd, each an ev_io in the
 * daemon's loop.  Each connection has its own send CQ and receive CQ, so
 * that every CQ is sized for exactly what can complete into it (a CQ
 * overrun would break every QP on it): the send CQ for the SQ depth, the
 * receive CQ for the receive buffers that can complete into it.
 *
 * Completions (rdma-core's rc_pingpong model): on a channel event,
 * ibv_get_cq_event(), count it for a batched ibv_ack_cq_events(),
 * ibv_req_notify_cq(), then poll the CQ dry: a completion that arrived
 * between the last poll and the re-arm raised no event, and is found by
 * the poll after the re-arm.  A connection's send CQ is polled before
 * each batch of its receive CQ (xport.h: send completions before received
 * frames); a flood of receives is cut into VERBS_POLL_BUDGET per wake-up,
 * the rest polled from a zero timer, so that one peer cannot hold the loop.
 *
 * Sends.  post_send() and post_write() build the WR into an SQ slot at
 * once (the header, and an eager payload, are copied then: inline into
 * the WR when the frame fits the QP's max_inline_data, else into this
 * connection's registered staging ring); flush() hands every waiting WR to
 * the device as one chain, one ibv_post_send() (one doorbell).  Selective
 * signaling (UCX's and libfabric's TX moderation): every VERBS_SIGNAL_EVERY
 * th WR and the last of each chain ask for a completion; RC completes in
 * order, so a signaled completion completes the WRs before it, and each
 * gets its own send_done(), in posting order (verbs_wr.h, struct
 * verbs_sq).  The transport counts every WR from post to completion, so
 * the device's SQ never overflows: a full SQ is -ENOMEM at post time and
 * the frame stays in the link's backlog.
 *
 * Receives.  Buffers of max_frame bytes (eager_max + SL_WIRE_HDR_MAX) are
 * posted to an SRQ when the device has one (grown by recv_depth buffers
 * per connection up to VERBS_SRQ_CONNS connections' worth), else to each
 * QP's own receive queue (recv_depth buffers).  A frame is decoded in
 * place with sl_wire_decode() over the completion's byte_len, handed up,
 * and its buffer is posted again.  An RDMA write with immediate consumes
 * a buffer too (IBV_WC_RECV_RDMA_WITH_IMM): write_imm() with the
 * immediate in host order, then the buffer goes back.  Every QP gets
 * min_rnr_timer VERBS_MIN_RNR_TIMER (0.01 ms) once it is in RTS: the IB CM
 * leaves it at 0, which means 655 ms, and a receiver out of buffers then
 * stalls the sender for that long per RNR NAK (case C15); rnr_retry 7
 * retries without limit, so running out of buffers only slows a peer.
 *
 * Breaking.  A failed completion, a QP or CQ error event, a CM
 * disconnect, or close() breaks the connection at once and in this order:
 * the QP goes to the error state and the peer is told (rdma_disconnect),
 * every WR still counted completes in posting order, -ECONNRESET if the
 * device had it and XPORT_WR_UNSENT if it was still waiting for a flush
 * (whatever the device reports about them later is ignored), then
 * closed().  The connection object stays until the device cannot refer to
 * it any more: at once without an SRQ (destroying the QP and its CQs
 * drops whatever they still hold); with an SRQ after
 * IBV_EVENT_QP_LAST_WQE_REACHED (the QP holds no SRQ buffer any more) or
 * VERBS_DRAIN_TIMEOUT, then buffers still in its receive CQ go back to
 * the SRQ.
 *
 * Grants (xport.h grant/revoke, docs/rendezvous-grants.md).  No
 * registration admits a remote write by itself: reg_mr() registers for
 * local access only.  Where the device has type-2 memory windows
 * (IBV_DEVICE_MEM_WINDOW_TYPE_2A/2B), registrations allow binding
 * (IBV_ACCESS_MW_BIND), and a grant is a window of its own
 * (ibv_alloc_mw) bound by an IBV_WR_BIND_MW on the connection's SQ to
 * exactly the RTR's range, ahead of the RTR in the same SQ (RC executes
 * the SQ in order); the window is bound to this QP, so no other
 * connection can use its key.  Without windows, and on Soft-RoCE (rxe),
 * whose windows do not hold a write to their range, each grant is a
 * registration of exactly its range with remote write access (an
 * ibv_reg_mr per rendezvous: pinning and a syscall each, slower, see the
 * docs).  Revoking deallocates the window (or deregisters): its key is
 * dead when that returns.  A write outside a grant fails on the device as
 * a remote access error, which breaks the connection (an RC QP cannot
 * drop one write and go on); the writer's refused WR completes -EACCES
 * (refused_complete), and the link fails that rendezvous alone.
 *
 * Fault injection ([fault]) is the tcp transport's; this one implements
 * only write_shift_bytes (a peer writing outside its grant, which the
 * receiving device must refuse) and ignores the rest.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "log.h"
#include "xport/verbs_wr.h"
#include "xport/addr.h"
#include "xport/grant.h"
#include "xport/xport.h"

#define VERBS_RESOLVE_MS 2000		/* address and route resolution */
#define VERBS_SIGNAL_EVERY 16		/* a signaled WR at least this often */
#define VERBS_CQ_ACK_BATCH 64		/* CQ events per ibv_ack_cq_events() */
#define VERBS_POLL_BATCH 16		/* WCs per ibv_poll_cq() */
#define VERBS_POLL_BUDGET 256		/* receive WCs per connection per wake-up */
#define VERBS_EVENTS_PER_WAKE 64	/* channel events per wake-up */
/* IB spec's RNR timer encoding: 1 = 0.01 ms; 0 = 655.36 ms (case C15). */
#define VERBS_MIN_RNR_TIMER 1
#define VERBS_RETRY_COUNT 7		/* transport retries (ACK timeouts) */
#define VERBS_RNR_RETRY 7		/* 7 = retry without limit */
#define VERBS_INLINE_WANT 256		/* inline bytes asked for; less if refused */
#define VERBS_ALIGN 64			/* staging ring and buffer granularity */
#define VERBS_TX_RING_MIN (4u << 20)	/* bytes of staging ring per connection */
#define VERBS_TX_CTL_RESERVE 1024	/* ring bytes data frames leave to control */
#define VERBS_RECV_POOL_MAX (64u << 20)	/* bytes of one pool of receive buffers */
#define VERBS_RECV_MIN 64		/* buffers per pool even when large */
#define VERBS_SRQ_CONNS 8		/* SRQ capacity: this many recv_depths */
#define VERBS_DRAIN_TIMEOUT 1.0		/* s: waiting for LAST_WQE_REACHED */
#define VERBS_POST_RETRY 1e-3		/* s: ibv_post_send() said ENOMEM */
#define VERBS_DREQ_DELAY 0.1		/* s: a broken QP's DREQ waits this long */
#define VERBS_LISTEN_BACKLOG 64
#define VERBS_GRANTS_MAX 4096		/* live grants per connection */
#define VERBS_RXE_VENDOR_ID 0xffffff	/* Soft-RoCE's (kernel rxe_param.h) */

struct verbs_xport;
struct verbs_rpool;

/* One receive buffer; its address is the WR's wr_id. */
struct verbs_rbuf {
	struct verbs_rpool *pool;
};

/* Receive buffers in one registered block: the SRQ's (owner NULL; the SRQ
 * has several) or one QP's. */
struct verbs_rpool {
	struct verbs_rpool *next;
	struct xport_conn *owner;
	uint8_t *mem;
	struct ibv_mr *mr;
	uint32_t n;
	uint32_t size;		/* bytes per buffer */
	struct verbs_rbuf *bufs;
};

/* One SQ slot: the WR built at post time, handed to the device at flush. */
struct verbs_slot {
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint64_t tx_mark;		/* staging ring mark, released at completion */
	uint32_t payload_len;		/* bytes: send payload or write length */
	uint8_t hdr[SL_WIRE_HDR_MAX];	/* an inline frame's header */
};

/*
 * RESOLVING: outbound, address and route being resolved (no QP yet);
 * CONNECTING: outbound, rdma_connect() sent; ACCEPTING: inbound, accepted
 * or about to be; UP: established and announced (connected(0) or
 * accepted()); CLOSED: broken, waiting to be freed.
 */
enum verbs_state { VS_RESOLVING, VS_CONNECTING, VS_ACCEPTING, VS_UP, VS_CLOSED };

struct xport_conn {
	struct verbs_xport *x;
	LIST_ENTRY(xport_conn) all;
	TAILQ_ENTRY(xport_conn) repoll;
	bool on_repoll;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	unsigned scq_unacked, rcq_unacked;	/* CQ events not acked yet */
	enum verbs_state state;
	bool outbound;		/* made by connect(): connected() is its upcall */
	bool announced;		/* the link was told: connected(0) or accepted() */
	bool rnr_set;		/* min_rnr_timer is VERBS_MIN_RNR_TIMER */
	bool last_wqe;		/* SRQ: the QP holds no SRQ buffer any more */
	bool drain_expired;	/* SRQ: gave up waiting for last_wqe */
	bool leaked;		/* its QP would not go: kept, never freed */
	bool dreq_owed;		/* broke while its port was down: the CM's
				 * disconnect waits for PORT_ACTIVE */
	void *ctx;
	struct verbs_sq sq;
	struct verbs_slot *slots;	/* sq.mask + 1 */
	uint64_t sq_bytes;		/* payload_len of the slots not completed */
	struct verbs_txring tx;
	uint8_t *tx_mem;
	struct ibv_mr *tx_mr;
	uint32_t max_inline;	/* the QP's max_inline_data */
	uint32_t max_msg;	/* the port's max_msg_sz */
	struct verbs_rpool *rpool;	/* without an SRQ: this QP's buffers */
	uint32_t rx_max;	/* largest payload accepted, bytes */
	ev_timer hello_w;	/* accepted and still anonymous */
	ev_timer drain_w;	/* SRQ: VERBS_DRAIN_TIMEOUT */
	ev_timer retry_w;	/* the device refused part of a chain */
	/* Live grants: addr, len, and as cookie the ibv_mw (memory windows)
	 * or ibv_mr (exact registrations) behind each; keyed by the device's
	 * rkey through grant_keys. */
	struct grant_table grants;
	struct verbs_keymap grant_keys;	/* rkey -> grants key */
	unsigned busy;		/* references: the owner's (until closed) + stack */
	char name[64];
};

struct verbs_mr {
	struct ibv_mr *mr;	/* NULL: free */
	uint32_t next_free;	/* index + 1 of the next free slot, 0 = none */
};

struct verbs_xport {
	struct xport base;
	struct ibv_context **devs;	/* rdma_get_devices(): owns ctx */
	struct ibv_context *ctx;
	const char *dev_name;
	struct ibv_device_attr attr;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id;
	ev_io chan_w, cm_w, async_w;
	ev_timer repoll_w;
	ev_timer dreq_w;		/* the owed DREQs: see qp_break() */
	LIST_HEAD(, xport_conn) conns;
	TAILQ_HEAD(, xport_conn) repolls;
	uint32_t n_repoll;
	uint32_t sq_depth;		/* per QP, within the device's limits */
	uint32_t recv_depth;		/* buffers per QP, or per SRQ chunk */
	uint32_t max_frame;		/* bytes */
	uint32_t buf_size;		/* max_frame rounded up to VERBS_ALIGN */
	uint32_t send_sge;		/* SGEs per send WR: 2, or 1 on a poor device */
	uint64_t tx_bytes;		/* staging ring per connection */
	struct ibv_srq *srq;		/* NULL: a receive queue per QP */
	uint32_t srq_cap;		/* buffers the SRQ holds at most */
	uint32_t srq_bufs;		/* buffers given to it so far */
	uint32_t srq_lost;		/* buffers that could not be posted again */
	struct verbs_rpool *srq_pools;
	uint32_t n_qps;			/* QPs alive */
	struct verbs_mr *mrs;		/* base.params.max_mr slots */
	uint32_t free_mr;		/* index + 1 of the first free slot */
	uint32_t mr_used;		/* slots ever used */
	struct verbs_keymap keys;	/* lkey -> index + 1 */
	bool use_mw;			/* grants are type-2 memory windows; else
					 * exact-range registrations */
	bool destroying;
	uint64_t wcs;			/* work completions handled */
	struct xport_stats st;
};

static struct verbs_xport *to_verbs(struct xport *x)
{
	return (struct verbs_xport *)x;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* ibv_* calls that return an errno value; some providers return -1 and
 * set errno instead. */
static int verbs_rc(int rc)
{
	if (rc == 0)
		return 0;
	if (rc > 0)
		return -rc;
	return errno ? -errno : -EIO;
}

static void conn_shutdown(struct xport_conn *c, int err, bool upcall);
static void conn_fail(struct xport_conn *c, int err);
static void conn_maybe_free(struct xport_conn *c);
static void hello_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void drain_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void post_retry_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ---- receive buffers ---- */

static uint8_t *rbuf_addr(const struct verbs_rbuf *rb)
{
	const struct verbs_rpool *p = rb->pool;

	return p->mem + (size_t)(rb - p->bufs) * p->size;
}

static void rpool_free(struct verbs_rpool *p)
{
	if (!p)
		return;
	if (p->mr && ibv_dereg_mr(p->mr))
		log_err("verbs: deregistering receive buffers: %m");
	free(p->mem);
	free(p->bufs);
	free(p);
}

/* @n buffers of the transport's buf_size, registered for local write.
 * Returns NULL with errno set. */
static struct verbs_rpool *rpool_new(struct verbs_xport *x, struct xport_conn *owner,
				     uint32_t n)
{
	struct verbs_rpool *p = calloc(1, sizeof(*p));
	size_t bytes = (size_t)n * x->buf_size;
	uint32_t i;
	int e;

	if (!p)
		return NULL;
	p->owner = owner;
	p->n = n;
	p->size = x->buf_size;
	p->bufs = calloc(n, sizeof(*p->bufs));
	e = posix_memalign((void **)&p->mem, 4096, bytes);
	if (e || !p->bufs) {
		if (e)
			p->mem = NULL;
		rpool_free(p);
		errno = e ? e : ENOMEM;
		return NULL;
	}
	p->mr = ibv_reg_mr(x->pd, p->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr) {
		e = errno;
		rpool_free(p);
		errno = e;
		return NULL;
	}
	for (i = 0; i < n; i++)
		p->bufs[i].pool = p;
	return p;
}

/* Post @rb to its SRQ or QP.  Returns 0 or -errno. */
static int rbuf_post(struct verbs_xport *x, struct verbs_rbuf *rb)
{
	struct verbs_rpool *p = rb->pool;
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	verbs_wr_recv(&wr, &sge, (uintptr_t)rb, rbuf_addr(rb), p->size, p->mr->lkey);
	if (p->owner)
		return verbs_rc(ibv_post_recv(p->owner->qp, &wr, &bad));
	return verbs_rc(ibv_post_srq_recv(x->srq, &wr, &bad));
}

/* A buffer's completion was handled: post it again, unless its QP is
 * broken (a QP's own buffers go with its connection then). */
static void rbuf_release(struct verbs_xport *x, struct verbs_rbuf *rb)
{
	struct xport_conn *owner = rb->pool->owner;
	int rc;

	if (x->destroying)
		return;
	if (!owner) {
		rc = rbuf_post(x, rb);
		if (rc) {
			x->srq_lost++;
			log_err("verbs: cannot post a receive buffer to the SRQ again: %s "
				"(%u of %u lost)", strerror(-rc), x->srq_lost, x->srq_bufs);
		}
		return;
	}
	if (owner->state == VS_CLOSED)
		return;
	rc = rbuf_post(x, rb);
	if (rc) {
		log_warn("verbs: %s: cannot post a receive buffer again: %s", owner->name,
			 strerror(-rc));
		conn_fail(owner, rc);
	}
}

/* Give the SRQ recv_depth more buffers per QP, up to its capacity.  Best
 * effort: with fewer buffers, senders back off on RNR and retry. */
static void srq_grow(struct verbs_xport *x)
{
	uint64_t want = (uint64_t)x->recv_depth * (x->n_qps + 1);

	if (want > x->srq_cap)
		want = x->srq_cap;
	while (x->srq_bufs < want) {
		uint32_t n = want - x->srq_bufs < x->recv_depth ?
			     (uint32_t)(want - x->srq_bufs) : x->recv_depth;
		struct verbs_rpool *p = rpool_new(x, NULL, n);
		uint32_t i;
		int rc = 0;

		if (!p) {
			log_warn("verbs: cannot add %u receive buffers to the SRQ: %m (it has %u)",
				 n, x->srq_bufs);
			return;
		}
		p->next = x->srq_pools;
		x->srq_pools = p;
		for (i = 0; i < n && rc == 0; i++)
			rc = rbuf_post(x, &p->bufs[i]);
		x->srq_bufs += i - (rc ? 1 : 0);
		if (rc) {
			log_err("verbs: posting to the SRQ: %s (it has %u buffers)", strerror(-rc),
				x->srq_bufs);
			return;
		}
	}
}

/* ---- connections ---- */

static struct xport_conn *conn_new(struct verbs_xport *x, bool outbound)
{
	struct xport_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (verbs_sq_init(&c->sq, x->sq_depth, VERBS_SIGNAL_EVERY) < 0) {
		free(c);
		return NULL;
	}
	c->slots = calloc(c->sq.mask + 1, sizeof(*c->slots));
	if (!c->slots || verbs_keymap_init(&c->grant_keys, VERBS_GRANTS_MAX) < 0) {
		free(c->slots);
		verbs_sq_fini(&c->sq);
		free(c);
		return NULL;
	}
	grant_table_init(&c->grants);
	c->x = x;
	c->outbound = outbound;
	c->state = outbound ? VS_RESOLVING : VS_ACCEPTING;
	c->busy = 1;	/* the owner's reference, dropped at the break */
	c->rx_max = SL_WIRE_AUTH_WHO_MAX;	/* an AUTH's "who" before the link is up */
	snprintf(c->name, sizeof(c->name), "?");
	ev_timer_init(&c->hello_w, hello_timeout_cb, XPORT_HELLO_TIMEOUT, 0.0);
	ev_timer_init(&c->drain_w, drain_timeout_cb, VERBS_DRAIN_TIMEOUT, 0.0);
	ev_timer_init(&c->retry_w, post_retry_cb, VERBS_POST_RETRY, 0.0);
	c->hello_w.data = c;
	c->drain_w.data = c;
	c->retry_w.data = c;
	LIST_INSERT_HEAD(&x->conns, c, all);
	return c;
}

static void name_from_sockaddr(struct xport_conn *c, const struct sockaddr *sa)
{
	xport_addr_name(sa, c->name, sizeof(c->name));
}

static void cq_destroy(struct ibv_cq *cq, unsigned unacked, const char *name)
{
	int rc;

	if (!cq)
		return;
	/* ibv_destroy_cq() waits until every event it reported is acked. */
	if (unacked)
		ibv_ack_cq_events(cq, unacked);
	rc = ibv_destroy_cq(cq);
	if (rc)
		log_err("verbs: %s: destroying a CQ: %s", name, strerror(-verbs_rc(rc)));
}

/* Give back what grant @g holds on the device: its window or its
 * registration.  Its key is dead when this returns. */
static void grant_release(struct verbs_xport *x, const struct xport_grant *g)
{
	int rc;

	if (x->use_mw)
		rc = ibv_dealloc_mw((struct ibv_mw *)(uintptr_t)g->cookie);
	else
		rc = ibv_dereg_mr((struct ibv_mr *)(uintptr_t)g->cookie);
	if (rc)
		log_err("verbs: revoking a grant (%s): %s", x->use_mw ? "ibv_dealloc_mw" :
			"ibv_dereg_mr", strerror(-verbs_rc(rc)));
}

/* Every grant of @c ends (the connection is going). */
static void grants_release_all(struct xport_conn *c)
{
	struct verbs_xport *x = c->x;
	uint32_t i;

	for (i = 0; i < c->grants.used; i++) {
		const struct xport_grant *g = &c->grants.slots[i];

		if (!g->key)
			continue;
		grant_release(x, g);
		x->st.grants--;
	}
	grant_table_free(&c->grants);
}

/* Free @c and everything it holds; nothing may refer to it any more. */
static void conn_destroy(struct xport_conn *c)
{
	struct verbs_xport *x = c->x;
	struct ev_loop *loop = x->base.loop;
	int rc;

	ev_timer_stop(loop, &c->hello_w);
	ev_timer_stop(loop, &c->drain_w);
	ev_timer_stop(loop, &c->retry_w);
	grants_release_all(c);
	if (c->on_repoll) {
		TAILQ_REMOVE(&x->repolls, c, repoll);
		c->on_repoll = false;
		x->n_repoll--;
	}
	if (c->qp) {
		rc = ibv_destroy_qp(c->qp);
		if (rc) {
			/* Its CQs cannot go either, and their events name @c:
			 * keep it (closed, out of the list) rather than free
			 * what the device may still refer to. */
			log_err("verbs: %s: destroying the QP: %s; keeping its resources",
				c->name, strerror(-verbs_rc(rc)));
			c->leaked = true;
			LIST_REMOVE(c, all);
			return;
		}
		c->id->qp = NULL;
		c->qp = NULL;
		x->n_qps--;
	}
	/* With an SRQ, buffers whose completions are still in this receive
	 * CQ belong to the SRQ: give them back before the CQ goes. */
	if (c->rcq && x->srq && !x->destroying) {
		struct ibv_wc wc[VERBS_POLL_BATCH];
		int n, i;

		while ((n = ibv_poll_cq(c->rcq, VERBS_POLL_BATCH, wc)) > 0)
			for (i = 0; i < n; i++)
				rbuf_release(x, (struct verbs_rbuf *)(uintptr_t)wc[i].wr_id);
		if (n < 0)
			log_err("verbs: %s: polling the receive CQ at close failed", c->name);
	}
	cq_destroy(c->scq, c->scq_unacked, c->name);
	cq_destroy(c->rcq, c->rcq_unacked, c->name);
	if (c->tx_mr && ibv_dereg_mr(c->tx_mr))
		log_err("verbs: %s: deregistering the send ring: %m", c->name);
	free(c->tx_mem);
	rpool_free(c->rpool);
	if (c->id && rdma_destroy_id(c->id))
		log_err("verbs: %s: rdma_destroy_id: %m", c->name);
	verbs_sq_fini(&c->sq);
	verbs_keymap_fini(&c->grant_keys);
	grant_table_free(&c->grants);
	free(c->slots);
	LIST_REMOVE(c, all);
	free(c);
}

/* Freed once closed, unreferenced, and (with an SRQ) drained. */
static void conn_maybe_free(struct xport_conn *c)
{
	if (c->busy || c->state != VS_CLOSED || c->leaked)
		return;
	if (c->dreq_owed && !c->x->destroying)
		return;	/* destroying the id would send the DREQ now */
	if (c->qp && c->x->srq && !c->last_wqe && !c->drain_expired && !c->x->destroying)
		return;
	conn_destroy(c);
}

static void conn_put(struct xport_conn *c)
{
	if (--c->busy == 0)
		conn_maybe_free(c);
}

/* Set the RNR timer the IB CM left at 655 ms (RTS -> RTS may change it). */
static bool set_min_rnr(struct xport_conn *c, bool quiet)
{
	struct ibv_qp_attr a;
	int rc;

	if (c->rnr_set || !c->qp)
		return c->rnr_set;
	if (c->qp->context->device->transport_type == IBV_TRANSPORT_IWARP) {
		c->rnr_set = true;	/* TCP below: no RNR NAKs */
		return true;
	}
	memset(&a, 0, sizeof(a));
	a.min_rnr_timer = VERBS_MIN_RNR_TIMER;
	rc = ibv_modify_qp(c->qp, &a, IBV_QP_MIN_RNR_TIMER);
	if (rc) {
		if (!quiet)
			log_warn("verbs: %s: cannot set the RNR timer: %s (a receiver out of "
				 "buffers stalls this connection 655 ms at a time)", c->name,
				 strerror(-verbs_rc(rc)));
		return false;
	}
	c->rnr_set = true;
	return true;
}

/*
 * Create the CQs, the staging ring, the receive buffers and the QP of @c,
 * whose id is bound to a device now (route resolved, or a connection
 * request).  The QP is in INIT with its receive buffers posted, so a
 * frame that comes right after the handshake finds one.  Returns 0 or
 * -errno; what was made is freed with the connection.
 */
static int conn_setup_qp(struct xport_conn *c)
{
	static const uint32_t inline_try[] = { VERBS_INLINE_WANT, 128, 64, 0 };
	struct verbs_xport *x = c->x;
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	uint32_t rq_cqe = x->srq ? x->srq_cap : x->recv_depth, i;
	int rc = 0, e;

	if (c->id->verbs != x->ctx) {
		log_warn("verbs: %s: reached through device %s, but this daemon uses %s",
			 c->name, ibv_get_device_name(c->id->verbs->device), x->dev_name);
		return -ENETUNREACH;
	}
	rc = ibv_query_port(x->ctx, c->id->port_num, &pa);
	if (rc)
		return verbs_rc(rc);
	/* Not on a port that is down: the connection manager's REQ or REP
	 * would go out on it, and on Soft-RoCE (rdma_rxe, Linux 6.1 and 6.12
	 * seen) one MAD sent on a down port leaves the device answering no
	 * connection request ever again.  The link dials again later. */
	if (pa.state != IBV_PORT_ACTIVE)
		return -ENETDOWN;
	c->max_msg = pa.max_msg_sz;
	c->scq = ibv_create_cq(x->ctx, (int)x->sq_depth, c, x->chan, 0);
	if (!c->scq)
		return -errno;
	c->rcq = ibv_create_cq(x->ctx, (int)rq_cqe, c, x->chan, 0);
	if (!c->rcq)
		return -errno;
	rc = verbs_rc(ibv_req_notify_cq(c->scq, 0));
	if (!rc)
		rc = verbs_rc(ibv_req_notify_cq(c->rcq, 0));
	if (rc)
		return rc;
	e = posix_memalign((void **)&c->tx_mem, 4096, x->tx_bytes);
	if (e) {
		c->tx_mem = NULL;
		return -e;
	}
	/* A send source only: the device reads it, nobody writes it remotely. */
	c->tx_mr = ibv_reg_mr(x->pd, c->tx_mem, x->tx_bytes, 0);
	if (!c->tx_mr)
		return -errno;
	verbs_txring_init(&c->tx, x->tx_bytes);
	if (x->srq) {
		srq_grow(x);
	} else {
		c->rpool = rpool_new(x, c, x->recv_depth);
		if (!c->rpool)
			return -errno;
	}
	for (i = 0; i < sizeof(inline_try) / sizeof(inline_try[0]); i++) {
		memset(&qa, 0, sizeof(qa));
		qa.qp_context = c;
		qa.send_cq = c->scq;
		qa.recv_cq = c->rcq;
		qa.srq = x->srq;
		qa.cap.max_send_wr = x->sq_depth;
		qa.cap.max_recv_wr = x->srq ? 0 : x->recv_depth;
		qa.cap.max_send_sge = x->send_sge;
		qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = inline_try[i];
		qa.qp_type = IBV_QPT_RC;
		qa.sq_sig_all = 0;
		/* rdma_create_qp() moves the QP to INIT on the id's port, and
		 * rdma_connect()/rdma_accept() take it on to RTS. */
		if (rdma_create_qp(c->id, x->pd, &qa) == 0)
			break;
		rc = -errno;
	}
	if (!c->id->qp)
		return rc ? rc : -EIO;
	c->qp = c->id->qp;
	x->n_qps++;
	c->max_inline = qa.cap.max_inline_data;
	if (c->rpool)
		for (i = 0; i < c->rpool->n; i++) {
			rc = rbuf_post(x, &c->rpool->bufs[i]);
			if (rc)
				return rc;
		}
	return 0;
}

static void conn_param(struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	/* Only sends and RDMA writes: no reads, no atomics. */
	p->responder_resources = 0;
	p->initiator_depth = 0;
	p->flow_control = 1;
	p->retry_count = VERBS_RETRY_COUNT;
	p->rnr_retry_count = VERBS_RNR_RETRY;
}

/* The handshake is done (the ESTABLISHED event, or a first completion
 * that beat it): tell the link.  Idempotent. */
static void conn_establish(struct xport_conn *c)
{
	struct verbs_xport *x = c->x;

	if (c->state != VS_CONNECTING && c->state != VS_ACCEPTING)
		return;
	set_min_rnr(c, false);
	c->state = VS_UP;
	c->announced = true;
	if (c->outbound) {
		x->base.up->connected(c, c->ctx, 0);
	} else {
		ev_timer_start(x->base.loop, &c->hello_w);
		x->base.up->accepted(&x->base, c);
	}
}

/* Complete the @n oldest WRs with @status, in order.  Slots are freed
 * before each upcall so that the upcall may post again; an upcall that
 * breaks the connection completes the rest itself. */
static void complete_head(struct xport_conn *c, uint32_t n, int status)
{
	const struct xport_upcalls *up = c->x->base.up;

	while (n-- && verbs_sq_outstanding(&c->sq)) {
		const struct verbs_slot *s = &c->slots[verbs_sq_slot(&c->sq, c->sq.head)];
		uint64_t wr_id;

		verbs_txring_release(&c->tx, s->tx_mark);
		c->sq_bytes -= s->payload_len;
		wr_id = verbs_sq_pop(&c->sq);
		up->send_done(c, c->ctx, wr_id, status);
	}
}

/* Whether @port can send: a failed query counts as yes, so that nothing
 * waits for an event that may never come. */
static bool port_active(struct verbs_xport *x, uint8_t port)
{
	struct ibv_port_attr pa;

	return ibv_query_port(x->ctx, port, &pa) || pa.state == IBV_PORT_ACTIVE;
}

/*
 * Move the QP to the error state (it stops and flushes) and tell the
 * peer, which sees DISCONNECTED soon instead of a retry timeout.
 *
 * The DREQ (rdma_disconnect(), or rdma_destroy_id() of a connected id) is
 * a MAD, and must not go out on a port that is down: on Soft-RoCE
 * (rdma_rxe, Linux 6.1 and 6.12 seen, rping shows it without sluice) one
 * MAD sent while the netdev is down leaves the device answering no
 * connection request again.  A QP usually breaks *because* the port went
 * down, before the port's state says so; hence every DREQ waits
 * VERBS_DREQ_DELAY, and then for PORT_ACTIVE if the port is down.  The id
 * (and so the connection) is kept until it is sent (conn_maybe_free()).
 */
static void qp_break(struct xport_conn *c, enum verbs_state prev)
{
	struct verbs_xport *x = c->x;
	struct ibv_qp_attr a;
	int rc;

	if (!c->qp)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	rc = ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
	if (rc)
		log_warn("verbs: %s: QP to the error state: %s", c->name, strerror(-verbs_rc(rc)));
	if (prev == VS_RESOLVING || x->destroying)
		return;
	c->dreq_owed = true;
	if (!ev_is_active(&x->dreq_w))
		ev_timer_start(x->base.loop, &x->dreq_w);
}

/* Send the disconnects qp_break() held back whose port is up, and free
 * what waited for them.  Those on a port still down wait for its
 * PORT_ACTIVE event, which calls this again. */
static void dreqs_send_owed(struct verbs_xport *x)
{
	struct xport_conn *c, *next;

	for (c = LIST_FIRST(&x->conns); c; c = next) {
		next = LIST_NEXT(c, all);
		if (!c->dreq_owed)
			continue;
		if (!port_active(x, c->id->port_num)) {
			log_debug("verbs: %s: port %u is down: disconnecting when it is back",
				  c->name, c->id->port_num);
			continue;
		}
		c->dreq_owed = false;
		if (rdma_disconnect(c->id))
			log_debug("verbs: %s: rdma_disconnect: %m", c->name);
		conn_maybe_free(c);
	}
}

static void dreq_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	dreqs_send_owed(w->data);
}

/*
 * Break @c: the QP stops, every WR still counted completes with a flush
 * error in posting order, then the link hears (closed(), or connected()
 * with the error for a connect that never finished) when @upcall and it
 * knows the connection.  The object lives on until conn_maybe_free().
 */
static void conn_shutdown(struct xport_conn *c, int err, bool upcall)
{
	struct verbs_xport *x = c->x;
	struct ev_loop *loop = x->base.loop;
	enum verbs_state prev = c->state;

	if (prev == VS_CLOSED)
		return;
	c->state = VS_CLOSED;
	ev_timer_stop(loop, &c->hello_w);
	ev_timer_stop(loop, &c->retry_w);
	c->busy++;
	qp_break(c, prev);
	/* A WR the device had may have been executed with only its ACK lost;
	 * one still waiting for a flush cannot have reached the peer. */
	complete_head(c, c->sq.posted - c->sq.head, -ECONNRESET);
	complete_head(c, verbs_sq_outstanding(&c->sq), XPORT_WR_UNSENT);
	if (upcall && c->announced)
		x->base.up->closed(c, c->ctx, err);
	else if (upcall && c->outbound)
		x->base.up->connected(c, c->ctx, err ? err : -ECONNRESET);
	if (c->qp && x->srq && !c->last_wqe && !x->destroying)
		ev_timer_start(loop, &c->drain_w);
	conn_put(c);
	conn_put(c);	/* the owner's reference */
}

/* The connection failed by itself (device, network, peer, bad frame). */
static void conn_fail(struct xport_conn *c, int err)
{
	conn_shutdown(c, err, true);
}

static void hello_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct xport_conn *c = w->data;

	(void)loop;
	(void)revents;
	log_warn("verbs: %s: no HELLO within %.0f s; closing", c->name, XPORT_HELLO_TIMEOUT);
	c->busy++;
	conn_shutdown(c, -ETIMEDOUT, true);
	conn_put(c);
}

static void drain_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct xport_conn *c = w->data;

	(void)loop;
	(void)revents;
	log_debug("verbs: %s: no last-WQE event within %.0f s; freeing the QP", c->name,
		  VERBS_DRAIN_TIMEOUT);
	c->drain_expired = true;
	conn_maybe_free(c);
}

/* ---- send side ---- */

static uint32_t verbs_sq_space_op(const struct xport_conn *c)
{
	return verbs_sq_space(&c->sq);
}

static uint32_t verbs_sq_outstanding_op(const struct xport_conn *c)
{
	return verbs_sq_outstanding(&c->sq);
}

static uint64_t verbs_sq_bytes_op(const struct xport_conn *c)
{
	return c->sq_bytes;
}

static int verbs_post_send(struct xport_conn *c, const struct xport_send_wr *wr)
{
	struct verbs_xport *x = c->x;
	uint64_t len = (uint64_t)wr->hdr_len + wr->payload_len, off = 0;
	struct verbs_slot *s;
	uint32_t pos;
	bool inl;
	int rc;

	if (wr->hdr_len < 2 || wr->hdr_len > SL_WIRE_HDR_MAX ||
	    (wr->payload_len && !wr->payload) || len > x->max_frame)
		return -EINVAL;	/* the peer's buffers hold max_frame bytes */
	if (c->state != VS_UP)
		return -ENOTCONN;
	if (verbs_sq_space(&c->sq) == 0) {
		x->st.post_enomem++;
		return -ENOMEM;
	}
	inl = verbs_frame_inline(wr->hdr_len, wr->payload_len, c->max_inline, x->send_sge);
	if (!inl) {
		/* Data frames leave room for control frames in the ring. */
		rc = verbs_txring_alloc(&c->tx, (uint32_t)align_up(len, VERBS_ALIGN),
					wr->payload_len ? VERBS_TX_CTL_RESERVE : 0, &off);
		if (rc == -ENOMEM) {
			x->st.post_enomem++;
			return -ENOMEM;
		}
		if (rc < 0)
			return -EINVAL;
	}
	rc = verbs_sq_push(&c->sq, wr->wr_id, &pos);
	if (rc < 0)
		return rc;	/* cannot happen: space was checked */
	s = &c->slots[verbs_sq_slot(&c->sq, pos)];
	if (inl) {
		/* The header is copied now (the caller's is on its stack);
		 * the payload stays valid until send_done, and the device
		 * copies both at flush. */
		memcpy(s->hdr, wr->hdr, wr->hdr_len);
		verbs_wr_send_inline(&s->wr, s->sge, pos, s->hdr, wr->hdr_len, wr->payload,
				     wr->payload_len);
	} else {
		memcpy(c->tx_mem + off, wr->hdr, wr->hdr_len);
		if (wr->payload_len)
			memcpy(c->tx_mem + off + wr->hdr_len, wr->payload, wr->payload_len);
		verbs_wr_send(&s->wr, s->sge, pos, c->tx_mem + off, (uint32_t)len,
			      c->tx_mr->lkey);
	}
	s->tx_mark = verbs_txring_mark(&c->tx);
	s->payload_len = wr->payload_len;
	c->sq_bytes += wr->payload_len;
	return 0;
}

/* The registration @lkey names, or NULL. */
static const struct ibv_mr *mr_by_lkey(const struct verbs_xport *x, uint32_t lkey)
{
	uint32_t idx = verbs_keymap_get(&x->keys, lkey);

	return idx ? x->mrs[idx - 1].mr : NULL;
}

static int verbs_post_write(struct xport_conn *c, const struct xport_write_wr *wr)
{
	struct verbs_xport *x = c->x;
	struct verbs_slot *s;
	uint64_t raddr;
	uint32_t pos;
	int rc;

	if (wr->len > SL_WIRE_PAYLOAD_MAX)
		return -EINVAL;
	if (wr->len) {
		const struct ibv_mr *mr = mr_by_lkey(x, wr->lkey);
		uintptr_t base, a = (uintptr_t)wr->laddr;

		/* A local protection error, caught at post time instead of
		 * breaking the connection (IBV_WC_LOC_PROT_ERR). */
		if (!mr)
			return -EINVAL;
		base = (uintptr_t)mr->addr;
		if (a < base || a - base > mr->length || wr->len > mr->length - (a - base))
			return -EINVAL;
	}
	if (c->state != VS_UP)
		return -ENOTCONN;
	if (wr->len > c->max_msg)
		return -EINVAL;
	rc = verbs_sq_push(&c->sq, wr->wr_id, &pos);
	if (rc < 0) {
		x->st.post_enomem++;
		return rc;
	}
	/* The shift fault: a peer that writes where it was not granted (the
	 * receiving device must refuse it: rxe-suite's grant step). */
	raddr = wr->raddr + (uint64_t)(int64_t)x->base.params.faults.write_shift_bytes;
	if (raddr != wr->raddr)
		x->st.faults_injected++;
	s = &c->slots[verbs_sq_slot(&c->sq, pos)];
	verbs_wr_write(&s->wr, s->sge, pos, wr->laddr, wr->len, wr->lkey, raddr, wr->rkey,
		       wr->has_imm, wr->imm);
	s->tx_mark = verbs_txring_mark(&c->tx);
	s->payload_len = wr->len;
	c->sq_bytes += wr->len;
	return 0;
}

/* Hand every waiting WR to the device as one chain. */
static void verbs_flush(struct xport_conn *c)
{
	struct ibv_send_wr *bad = NULL;
	uint32_t first, n, i, k;
	int rc;

	if (c->state != VS_UP)
		return;
	n = verbs_sq_batch(&c->sq, &first);
	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		struct verbs_slot *s = &c->slots[verbs_sq_slot(&c->sq, first + i)];

		verbs_wr_set_signaled(&s->wr, verbs_sq_is_signaled(&c->sq, first + i));
		s->wr.next = i + 1 < n ? &c->slots[verbs_sq_slot(&c->sq, first + i + 1)].wr : NULL;
	}
	rc = verbs_rc(ibv_post_send(c->qp, &c->slots[verbs_sq_slot(&c->sq, first)].wr, &bad));
	if (rc == 0) {
		verbs_sq_posted(&c->sq, n);
		return;
	}
	/* WRs before @bad are on the device; the rest wait here. */
	k = bad ? (uint32_t)bad->wr_id - first : 0;
	verbs_sq_posted(&c->sq, k < n ? k : 0);
	if (rc == -ENOMEM) {
		/* The device's SQ is fuller than the count says: a
		 * provider's own limit.  Try again shortly; a refused WR at
		 * the end of what was posted also gets its signal then. */
		log_debug("verbs: %s: ibv_post_send: %u of %u WRs taken, retrying", c->name,
			  k, n);
		if (!ev_is_active(&c->retry_w))
			ev_timer_start(c->x->base.loop, &c->retry_w);
		return;
	}
	log_warn("verbs: %s: ibv_post_send: %s", c->name, strerror(-rc));
	conn_fail(c, rc);
}

static void post_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct xport_conn *c = w->data;

	(void)loop;
	(void)revents;
	c->busy++;
	verbs_flush(c);
	conn_put(c);
}

/* ---- completions ---- */

/*
 * The peer's device refused the WR at @pos (a write outside its grant):
 * the WRs before it are done (the NAK acknowledges them; RC completes in
 * order), and it completes -EACCES, so that the link fails that
 * rendezvous instead of writing it again (docs/rendezvous-grants.md); the
 * rest are flushed by the break.
 */
static void refused_complete(struct xport_conn *c, uint32_t pos)
{
	uint32_t before = pos - c->sq.head;

	if (before >= c->sq.posted - c->sq.head)
		return;	/* not a WR the device has: leave it to the break */
	complete_head(c, before, 0);
	complete_head(c, 1, -EACCES);
}

static void send_wc(struct xport_conn *c, const struct ibv_wc *wc)
{
	int rc;

	c->x->wcs++;
	if (c->state == VS_CLOSED)
		return;	/* every WR was completed at the break */
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			log_info("verbs: %s: send queue flushed", c->name);
		else
			log_warn("verbs: %s: send failed: %s (vendor error %#x)", c->name,
				 ibv_wc_status_str(wc->status), wc->vendor_err);
		if (wc->status == IBV_WC_REM_ACCESS_ERR)
			refused_complete(c, (uint32_t)wc->wr_id);
		conn_fail(c, verbs_wc_errno(wc->status));
		return;
	}
	rc = verbs_sq_complete(&c->sq, (uint32_t)wc->wr_id);
	if (rc < 0) {
		log_err("verbs: %s: completion of WR %llu, which is not a signaled WR on the "
			"device", c->name, (unsigned long long)wc->wr_id);
		conn_fail(c, -EPROTO);
		return;
	}
	complete_head(c, (uint32_t)rc, 0);
}

/* Returns 0 when the send CQ is dry, -errno when polling failed. */
static int poll_send(struct xport_conn *c)
{
	struct ibv_wc wc[VERBS_POLL_BATCH];
	int n, i;

	do {
		n = ibv_poll_cq(c->scq, VERBS_POLL_BATCH, wc);
		for (i = 0; i < n; i++)
			send_wc(c, &wc[i]);
	} while (n == VERBS_POLL_BATCH);
	return n < 0 ? -EIO : 0;
}

/* A received frame in @rb, @len bytes.  Returns the upcall's result or
 * -errno for a frame that breaks the connection. */
static int deliver_frame(struct xport_conn *c, struct verbs_rbuf *rb, uint32_t len)
{
	struct verbs_xport *x = c->x;
	const uint8_t *buf = rbuf_addr(rb);
	struct sl_wire_frame f;
	int rc;

	rc = sl_wire_decode(buf, len, &f);
	if (rc < 0 && !c->ctx && x->base.up->stranger) {
		/* Anyone reaching the CM may send it: counted and logged, with
		 * a bound, by the link layer. */
		x->base.up->stranger(&x->base, c, rc, len ? buf[0] : 0);
		return rc;
	}
	if (rc < 0) {
		log_warn("verbs: %s: bad frame of %u bytes: %s", c->name, len, strerror(-rc));
		return rc;
	}
	if ((uint64_t)f.hdr_len + f.payload_len != len) {
		log_warn("verbs: %s: %u bytes after a frame", c->name,
			 len - f.hdr_len - f.payload_len);
		return -EPROTO;
	}
	if (f.type == SL_WIRE_WRITE) {
		/* The tcp transport's RDMA write; a QP does its own. */
		log_warn("verbs: %s: WRITE frame", c->name);
		return -EPROTO;
	}
	if (f.payload_len > c->rx_max) {
		log_warn("verbs: %s: frame of %u payload bytes, limit %u", c->name,
			 f.payload_len, c->rx_max);
		return -EMSGSIZE;
	}
	return x->base.up->recv(&x->base, c, c->ctx, &f, buf + f.hdr_len);
}

static void recv_wc(struct xport_conn *c, const struct ibv_wc *wc)
{
	struct verbs_xport *x = c->x;
	struct verbs_rbuf *rb = (struct verbs_rbuf *)(uintptr_t)wc->wr_id;
	int rc;

	x->wcs++;
	if (wc->status != IBV_WC_SUCCESS) {
		if (c->state != VS_CLOSED) {
			if (wc->status == IBV_WC_WR_FLUSH_ERR)
				log_info("verbs: %s: receive queue flushed", c->name);
			else
				log_warn("verbs: %s: receive failed: %s (vendor error %#x)",
					 c->name, ibv_wc_status_str(wc->status), wc->vendor_err);
			conn_fail(c, verbs_wc_errno(wc->status));
		}
		rbuf_release(x, rb);
		return;
	}
	/* A first frame may beat the ESTABLISHED event. */
	if (c->state != VS_CLOSED)
		conn_establish(c);
	if (c->state != VS_UP) {
		/* Arrived before the break: the link has moved on, and the
		 * peer sends it again after the reconnect if it must. */
		rbuf_release(x, rb);
		return;
	}
	switch (wc->opcode) {
	case IBV_WC_RECV:
		rc = deliver_frame(c, rb, wc->byte_len);
		break;
	case IBV_WC_RECV_RDMA_WITH_IMM:
		if (!c->ctx) {
			log_warn("verbs: %s: RDMA write before HELLO", c->name);
			rc = -EPROTO;
			break;
		}
		x->st.writes_rx++;
		rc = x->base.up->write_imm(c, c->ctx, be32toh(wc->imm_data));
		break;
	default:
		log_warn("verbs: %s: unexpected receive completion opcode %d", c->name,
			 (int)wc->opcode);
		rc = -EPROTO;
		break;
	}
	if (rc < 0 && c->state != VS_CLOSED) {
		/* An anonymous connection's refusal was logged by the link
		 * layer, with a bound. */
		if (c->ctx)
			log_warn("verbs: %s: breaking the connection: %s", c->name,
				 strerror(-rc));
		conn_fail(c, rc);
	}
	rbuf_release(x, rb);
}

/* Send CQ dry, then receives in batches, the send CQ again before each:
 * send completions before received frames.  Returns true when the budget
 * ran out before the receive CQ was dry. */
static bool conn_poll_budget(struct xport_conn *c, unsigned budget)
{
	struct ibv_wc wc[VERBS_POLL_BATCH];
	unsigned done = 0;
	int n, i;

	for (;;) {
		if (poll_send(c) < 0) {
			if (c->state != VS_CLOSED) {
				log_err("verbs: %s: polling the send CQ failed", c->name);
				conn_fail(c, -EIO);
			}
			return false;
		}
		if (done >= budget)
			return true;
		n = ibv_poll_cq(c->rcq, VERBS_POLL_BATCH, wc);
		if (n < 0) {
			if (c->state != VS_CLOSED) {
				log_err("verbs: %s: polling the receive CQ failed", c->name);
				conn_fail(c, -EIO);
			}
			return false;
		}
		for (i = 0; i < n; i++)
			recv_wc(c, &wc[i]);
		done += (unsigned)n;
		if (n < VERBS_POLL_BATCH)
			return false;
	}
}

static void conn_poll(struct xport_conn *c)
{
	struct verbs_xport *x = c->x;

	c->busy++;
	if (conn_poll_budget(c, VERBS_POLL_BUDGET) && !c->on_repoll) {
		TAILQ_INSERT_TAIL(&x->repolls, c, repoll);
		c->on_repoll = true;
		x->n_repoll++;
		if (!ev_is_active(&x->repoll_w))
			ev_timer_start(x->base.loop, &x->repoll_w);
	}
	conn_put(c);
}

/* Connections whose receive CQ was not dry at the end of their budget. */
static void repoll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct verbs_xport *x = w->data;
	uint32_t n = x->n_repoll;
	struct xport_conn *c;

	(void)revents;
	/* Each gets one more budget; those that need more go to the tail. */
	while (n-- && (c = TAILQ_FIRST(&x->repolls))) {
		TAILQ_REMOVE(&x->repolls, c, repoll);
		c->on_repoll = false;
		x->n_repoll--;
		conn_poll(c);
	}
	if (x->n_repoll && !ev_is_active(w))
		ev_timer_start(loop, w);
}

static void chan_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct verbs_xport *x = w->data;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < VERBS_EVENTS_PER_WAKE; i++) {
		struct ibv_cq *cq;
		void *cq_ctx;
		struct xport_conn *c;
		unsigned *unacked;
		int rc;

		if (ibv_get_cq_event(x->chan, &cq, &cq_ctx)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_err("verbs: completion channel: %m");
			return;
		}
		c = cq_ctx;
		c->busy++;
		unacked = cq == c->scq ? &c->scq_unacked : &c->rcq_unacked;
		if (++*unacked >= VERBS_CQ_ACK_BATCH) {
			ibv_ack_cq_events(cq, *unacked);
			*unacked = 0;
		}
		/* Re-arm, then poll dry: nothing slips between the two. */
		rc = verbs_rc(ibv_req_notify_cq(cq, 0));
		if (rc && c->state != VS_CLOSED) {
			log_err("verbs: %s: re-arming a CQ: %s", c->name, strerror(-rc));
			conn_fail(c, rc);
		}
		conn_poll(c);
		conn_put(c);
	}
}

/*
 * The progress engine's spin: every connection's CQs, without waiting for
 * the channel event (the progress model of UCX and libfabric: an event
 * costs a system call and a wake-up, a poll of an empty CQ a few loads).
 * The CQs stay armed, so a sleeping engine still wakes on the event.
 * Each connection and the next are held while polling: an upcall may
 * close either.  Returns the completions handled.
 */
static unsigned verbs_poll_op(struct xport *xb)
{
	struct verbs_xport *x = to_verbs(xb);
	struct xport_conn *c = LIST_FIRST(&x->conns), *next;
	uint64_t before = x->wcs;

	if (c)
		c->busy++;
	while (c) {
		next = LIST_NEXT(c, all);
		if (next)
			next->busy++;
		if (c->state == VS_UP)
			conn_poll(c);
		conn_put(c);
		c = next;
	}
	return (unsigned)(x->wcs - before);
}

/* ---- device events ---- */

static struct xport_conn *conn_by_qp(struct verbs_xport *x, const struct ibv_qp *qp)
{
	struct xport_conn *c;

	LIST_FOREACH(c, &x->conns, all)
		if (c->qp == qp)
			return c;
	return NULL;
}

static struct xport_conn *conn_by_cq(struct verbs_xport *x, const struct ibv_cq *cq)
{
	struct xport_conn *c;

	LIST_FOREACH(c, &x->conns, all)
		if (c->scq == cq || c->rcq == cq)
			return c;
	return NULL;
}

/* Break every connection: the device or the SRQ is gone. */
static void fail_all(struct verbs_xport *x, int err)
{
	struct xport_conn *c, *next;

	/* Each upcall may close or free others: hold the next one too. */
	c = LIST_FIRST(&x->conns);
	if (c)
		c->busy++;
	for (; c; c = next) {
		next = LIST_NEXT(c, all);
		if (next)
			next->busy++;
		conn_fail(c, err);
		conn_put(c);
	}
}

static void async_event(struct verbs_xport *x, enum ibv_event_type type,
			const struct ibv_async_event *ev)
{
	struct xport_conn *c = NULL;

	switch (type) {
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
		c = conn_by_qp(x, ev->element.qp);
		break;
	case IBV_EVENT_CQ_ERR:
		c = conn_by_cq(x, ev->element.cq);
		break;
	default:
		break;
	}
	if (c)
		c->busy++;
	switch (type) {
	case IBV_EVENT_COMM_EST:
		/* Data before the handshake's last message: the CM needs to
		 * know, or it would time the connection out. */
		if (c && c->state != VS_CLOSED && rdma_notify(c->id, type))
			log_debug("verbs: %s: rdma_notify: %m", c->name);
		break;
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		if (c) {
			c->last_wqe = true;
			ev_timer_stop(x->base.loop, &c->drain_w);
		}
		break;
	case IBV_EVENT_QP_ACCESS_ERR:
		/* An RDMA write with a bad rkey or range, at the target. */
		x->st.access_errors++;
		if (c && c->state != VS_CLOSED) {
			log_warn("verbs: %s: remote access error", c->name);
			conn_fail(c, -EACCES);
		}
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_CQ_ERR:
		if (c && c->state != VS_CLOSED) {
			log_warn("verbs: %s: %s", c->name, ibv_event_type_str(type));
			conn_fail(c, -EIO);
		}
		break;
	case IBV_EVENT_SRQ_ERR:
		log_err("verbs: %s: the shared receive queue failed: breaking every connection",
			x->dev_name);
		fail_all(x, -EIO);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		log_err("verbs: %s: device failed: breaking every connection; restart the daemon",
			x->dev_name);
		fail_all(x, -ENODEV);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		log_info("verbs: %s port %d: %s", x->dev_name, ev->element.port_num,
			 ibv_event_type_str(type));
		dreqs_send_owed(x);
		break;
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		log_info("verbs: %s port %d: %s", x->dev_name, ev->element.port_num,
			 ibv_event_type_str(type));
		break;
	default:
		log_debug("verbs: %s: %s", x->dev_name, ibv_event_type_str(type));
		break;
	}
	if (c)
		conn_put(c);
}

static void async_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct verbs_xport *x = w->data;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < 16; i++) {
		struct ibv_async_event ev;
		enum ibv_event_type type;

		if (ibv_get_async_event(x->ctx, &ev)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_err("verbs: %s: async events: %m", x->dev_name);
			return;
		}
		/* Ack first: destroying a QP waits for its events' acks. */
		type = ev.event_type;
		ibv_ack_async_event(&ev);
		async_event(x, type, &ev);
	}
}

/* ---- connection management ---- */

static void reject_destroy(struct rdma_cm_id *id)
{
	if (rdma_reject(id, NULL, 0))
		log_debug("verbs: rdma_reject: %m");
	if (rdma_destroy_id(id))
		log_err("verbs: rdma_destroy_id: %m");
}

static void cm_request(struct verbs_xport *x, struct rdma_cm_id *id)
{
	struct rdma_conn_param p;
	struct xport_conn *c;
	int rc;

	if (id->verbs != x->ctx) {
		log_warn("verbs: connection request on device %s, but this daemon uses %s: "
			 "rejected", ibv_get_device_name(id->verbs->device), x->dev_name);
		reject_destroy(id);
		return;
	}
	c = conn_new(x, false);
	if (!c) {
		log_warn("verbs: out of memory for a connection");
		reject_destroy(id);
		return;
	}
	c->id = id;
	id->context = c;
	name_from_sockaddr(c, rdma_get_peer_addr(id));
	c->busy++;
	rc = conn_setup_qp(c);
	if (rc == 0) {
		conn_param(&p);
		if (rdma_accept(id, &p))
			rc = -errno;
	}
	if (rc) {
		log_warn("verbs: %s: cannot accept: %s", c->name, strerror(-rc));
		if (rdma_reject(id, NULL, 0))
			log_debug("verbs: %s: rdma_reject: %m", c->name);
		conn_shutdown(c, rc, false);	/* the link never saw it */
	} else {
		/* On IB and RoCE the QP is in RTS now; iWARP gets there later
		 * (and has no RNR), so quietly try again at ESTABLISHED. */
		set_min_rnr(c, true);
	}
	conn_put(c);
}

static void cm_event(struct verbs_xport *x, enum rdma_cm_event_type type, int status,
		     struct rdma_cm_id *id)
{
	struct rdma_conn_param p;
	struct xport_conn *c;
	int rc;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		cm_request(x, id);
		return;
	}
	if (id == x->listen_id) {
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			log_err("verbs: the listener's device was removed; restart the daemon");
		else
			log_info("verbs: listener: %s (status %d)", rdma_event_str(type), status);
		return;
	}
	c = id->context;
	if (!c)
		return;
	c->busy++;
	if (c->state == VS_CLOSED)
		goto out;	/* DISCONNECTED, TIMEWAIT_EXIT of a broken one */
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (c->state != VS_RESOLVING)
			break;
		if (id->verbs != x->ctx) {
			log_warn("verbs: %s: reached through device %s, but this daemon uses %s",
				 c->name, ibv_get_device_name(id->verbs->device), x->dev_name);
			conn_fail(c, -ENETUNREACH);
			break;
		}
		if (rdma_resolve_route(id, VERBS_RESOLVE_MS))
			conn_fail(c, -errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (c->state != VS_RESOLVING)
			break;
		rc = conn_setup_qp(c);
		if (rc == 0) {
			conn_param(&p);
			if (rdma_connect(id, &p))
				rc = -errno;
		}
		if (rc) {
			/* A down port is the link's to report (it redials). */
			if (rc == -ENETDOWN)
				log_debug("verbs: %s: port %u is down", c->name, c->id->port_num);
			else
				log_warn("verbs: %s: cannot connect: %s", c->name, strerror(-rc));
			conn_fail(c, rc);
			break;
		}
		c->state = VS_CONNECTING;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		conn_establish(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		log_info("verbs: %s: closed by peer", c->name);
		conn_fail(c, -ECONNRESET);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	case RDMA_CM_EVENT_ADDR_CHANGE:
		log_info("verbs: %s: local address changed", c->name);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* Only for ids without a QP; ours always have one. */
		log_warn("verbs: %s: unexpected CONNECT_RESPONSE", c->name);
		conn_fail(c, -EPROTO);
		break;
	default:
		rc = verbs_cm_errno(type, status);
		if (rc == 0) {
			log_debug("verbs: %s: %s (status %d)", c->name, rdma_event_str(type), status);
			break;
		}
		/* A dial that fails is the link's to report (it retries). */
		if (c->announced)
			log_warn("verbs: %s: %s (status %d)", c->name, rdma_event_str(type), status);
		else
			log_debug("verbs: %s: %s (status %d)", c->name, rdma_event_str(type), status);
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			log_err("verbs: %s was removed; restart the daemon", x->dev_name);
		conn_fail(c, rc);
		break;
	}
out:
	conn_put(c);
}

static void cm_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct verbs_xport *x = w->data;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < 32; i++) {
		struct rdma_cm_event *ev;
		enum rdma_cm_event_type type;
		struct rdma_cm_id *id;
		int status;

		if (rdma_get_cm_event(x->ec, &ev)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_err("verbs: connection manager events: %m");
			return;
		}
		/* Ack first: rdma_destroy_id() waits for its events' acks,
		 * and handling may destroy the id. */
		type = ev->event;
		status = ev->status;
		id = ev->id;
		if (rdma_ack_cm_event(ev))
			log_err("verbs: rdma_ack_cm_event: %m");
		log_debug("verbs: %s: %s (status %d)",
			  id->context ? ((struct xport_conn *)id->context)->name : "listener",
			  rdma_event_str(type), status);
		cm_event(x, type, status, id);
	}
}

/* ---- memory registration ---- */

static int verbs_reg_mr(struct xport *xb, void *addr, uint64_t len, uint64_t *handle,
			uint32_t *lkey, uint32_t *rkey)
{
	struct verbs_xport *x = to_verbs(xb);
	struct ibv_mr *mr;
	uint32_t idx;
	int rc, e;

	if (len == 0 || !addr)
		return -EINVAL;
	if (x->free_mr) {
		idx = x->free_mr - 1;
	} else if (x->mr_used < xb->params.max_mr) {
		idx = x->mr_used;
	} else {
		x->st.reg_fails++;
		return -ENOMEM;	/* the table, or the device's max_mr */
	}
	/* No remote access through the registration itself: only through
	 * a grant (a window bound to part of it, or a registration of its
	 * own). */
	mr = ibv_reg_mr(x->pd, addr, len,
			IBV_ACCESS_LOCAL_WRITE | (x->use_mw ? IBV_ACCESS_MW_BIND : 0));
	if (!mr) {
		e = errno;
		x->st.reg_fails++;
		log_debug("verbs: ibv_reg_mr of %llu bytes: %s", (unsigned long long)len,
			  strerror(e));
		return e == EINVAL || e == EFAULT ? -EINVAL : -ENOMEM;
	}
	rc = verbs_keymap_put(&x->keys, mr->lkey, idx + 1);
	if (rc) {
		/* A live lkey given out twice: the device's bug, not ours to
		 * paper over. */
		log_err("verbs: lkey %#x registered twice: %s", mr->lkey, strerror(-rc));
		if (ibv_dereg_mr(mr))
			log_err("verbs: ibv_dereg_mr: %m");
		x->st.reg_fails++;
		return -EIO;
	}
	if (x->free_mr)
		x->free_mr = x->mrs[idx].next_free;
	else
		x->mr_used++;
	x->mrs[idx].mr = mr;
	x->mrs[idx].next_free = 0;
	*handle = idx;
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	x->st.mrs++;
	return 0;
}

static void verbs_dereg_mr(struct xport *xb, uint64_t handle)
{
	struct verbs_xport *x = to_verbs(xb);
	struct verbs_mr *m;

	if (handle >= x->mr_used || !x->mrs[handle].mr) {
		log_err("verbs: dereg of unknown MR handle %llu", (unsigned long long)handle);
		return;
	}
	m = &x->mrs[handle];
	if (!verbs_keymap_del(&x->keys, m->mr->lkey))
		log_err("verbs: MR handle %llu: its lkey was not in the map",
			(unsigned long long)handle);
	/* The keys are dead for us either way; a failure leaves the
	 * registration (and its pinned memory) to the process's exit. */
	if (ibv_dereg_mr(m->mr))
		log_err("verbs: ibv_dereg_mr of handle %llu: %m", (unsigned long long)handle);
	m->mr = NULL;
	m->next_free = x->free_mr;
	x->free_mr = (uint32_t)handle + 1;
	x->st.mrs--;
}

/* A window for a grant on @c, and the key it will be bound under; its
 * bind WR needs an SQ slot, checked here.  Returns 0 with *mw_p and
 * *rkey, or -ENOMEM (no SQ slot, no window). */
static int grant_alloc_mw(struct xport_conn *c, struct ibv_mw **mw_p, uint32_t *rkey)
{
	struct verbs_xport *x = c->x;
	struct ibv_mw *mw;

	if (verbs_sq_space(&c->sq) == 0) {
		x->st.post_enomem++;
		return -ENOMEM;
	}
	mw = ibv_alloc_mw(x->pd, IBV_MW_TYPE_2);
	if (!mw) {
		log_debug("verbs: %s: ibv_alloc_mw: %m", c->name);
		return -ENOMEM;
	}
	*mw_p = mw;
	*rkey = ibv_inc_rkey(mw->rkey);
	return 0;
}

/* Queue the bind WR of window @mw (an SQ slot was checked free). */
static void grant_post_bind(struct xport_conn *c, struct ibv_mw *mw, uint32_t rkey,
			    struct ibv_mr *mr, uint64_t addr, uint64_t len)
{
	struct verbs_slot *s;
	uint32_t pos;

	/* wr_id 0: the link's send_done sees a control frame's. */
	if (verbs_sq_push(&c->sq, 0, &pos) < 0)
		return;	/* cannot happen: grant_alloc_mw checked the space */
	s = &c->slots[verbs_sq_slot(&c->sq, pos)];
	verbs_wr_bind_mw(&s->wr, pos, mw, rkey, mr, addr, len);
	s->tx_mark = verbs_txring_mark(&c->tx);
	s->payload_len = 0;
}

static int verbs_grant(struct xport_conn *c, uint64_t mr_handle, uint64_t addr, uint64_t len,
		       uint32_t *rkey)
{
	struct verbs_xport *x = c->x;
	struct ibv_mw *mw = NULL;
	struct ibv_mr *mr, *exact = NULL;
	uintptr_t base;
	uint32_t key;
	int rc, e;

	if (c->state != VS_UP)
		return -ENOTCONN;
	mr = mr_handle < x->mr_used ? x->mrs[mr_handle].mr : NULL;
	base = mr ? (uintptr_t)mr->addr : 0;
	if (!mr || len == 0 || addr < base || addr - base > mr->length ||
	    len > mr->length - (addr - base)) {
		x->st.grant_fails++;
		return -EINVAL;
	}
	if (c->grants.live >= VERBS_GRANTS_MAX) {
		x->st.grant_fails++;
		return -ENOMEM;
	}
	if (x->use_mw) {
		rc = grant_alloc_mw(c, &mw, rkey);
	} else {
		exact = ibv_reg_mr(x->pd, (void *)(uintptr_t)addr, len,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		e = errno;
		rc = exact ? 0 : (e == EINVAL || e == EFAULT ? -EINVAL : -ENOMEM);
		if (exact)
			*rkey = exact->rkey;
	}
	if (rc) {
		x->st.grant_fails++;
		return rc;
	}
	rc = grant_add(&c->grants, addr, len, mw ? (uintptr_t)mw : (uintptr_t)exact, &key);
	if (rc == 0) {
		rc = verbs_keymap_put(&c->grant_keys, *rkey, key);
		if (rc) {
			log_err("verbs: %s: grant key %#x: %s", c->name, *rkey, strerror(-rc));
			grant_remove(&c->grants, key);
			rc = -ENOMEM;
		}
	}
	if (rc) {
		const struct xport_grant g = { .cookie = mw ? (uintptr_t)mw : (uintptr_t)exact };

		grant_release(x, &g);
		x->st.grant_fails++;
		return rc;
	}
	if (mw) {
		grant_post_bind(c, mw, *rkey, mr, addr, len);
		x->st.grant_mw_binds++;
	}
	x->st.grants++;
	return 0;
}

static void verbs_revoke(struct xport_conn *c, uint32_t rkey)
{
	struct verbs_xport *x = c->x;
	uint32_t key = verbs_keymap_get(&c->grant_keys, rkey);
	const struct xport_grant *g = key ? grant_find(&c->grants, key) : NULL;

	if (!g)
		return;
	grant_release(x, g);
	grant_remove(&c->grants, key);
	verbs_keymap_del(&c->grant_keys, rkey);
	x->st.grants--;
}

static void verbs_get_stats(const struct xport *xb, struct xport_stats *st)
{
	*st = to_verbs((struct xport *)xb)->st;
}

/* ---- connection ops ---- */

static void verbs_set_ctx(struct xport_conn *c, void *ctx)
{
	c->ctx = ctx;
	if (ctx)
		ev_timer_stop(c->x->base.loop, &c->hello_w);
}

static void verbs_set_rx_limit(struct xport_conn *c, uint32_t bytes)
{
	/* Frames beyond the receive buffers fail in the device anyway
	 * (IBV_WC_LOC_LEN_ERR); the link asks for what its peers send. */
	c->rx_max = bytes;
}

static void verbs_close(struct xport_conn *c, int err)
{
	conn_shutdown(c, err, true);
}

static const char *verbs_peer_name(const struct xport_conn *c)
{
	return c->name;
}

/* ---- setup ---- */

static int verbs_listen(struct xport *xb, const char *host, uint16_t port)
{
	struct verbs_xport *x = to_verbs(xb);
	struct addrinfo *res, *ai;
	struct rdma_cm_id *id = NULL;
	int rc;

	if (x->listen_id)
		return -EALREADY;
	rc = xport_resolve(host, port, &res);
	if (rc)
		return rc;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		if (rdma_create_id(x->ec, &id, NULL, RDMA_PS_TCP)) {
			rc = -errno;
			id = NULL;
			break;
		}
		if (rdma_bind_addr(id, ai->ai_addr) == 0)
			break;
		rc = -errno;
		if (rdma_destroy_id(id))
			log_err("verbs: rdma_destroy_id: %m");
		id = NULL;
	}
	freeaddrinfo(res);
	if (!id)
		return rc;
	/* Bound to one device's address: it must be ours, or every request
	 * would be refused.  (A wildcard address has no device yet.) */
	if (id->verbs && id->verbs != x->ctx) {
		log_err("verbs: %s:%u is an address of device %s, but this daemon uses %s",
			host, port, ibv_get_device_name(id->verbs->device), x->dev_name);
		rc = -EADDRNOTAVAIL;
		goto err;
	}
	if (rdma_listen(id, VERBS_LISTEN_BACKLOG)) {
		rc = -errno;
		goto err;
	}
	x->listen_id = id;
	return 0;

err:
	if (rdma_destroy_id(id))
		log_err("verbs: rdma_destroy_id: %m");
	return rc;
}

static int verbs_connect(struct xport *xb, const char *host, uint16_t port, void *ctx,
			 struct xport_conn **c_p)
{
	struct verbs_xport *x = to_verbs(xb);
	struct addrinfo *res;
	struct xport_conn *c;
	int rc;

	rc = xport_resolve(host, port, &res);
	if (rc)
		return rc;
	c = conn_new(x, true);
	if (!c) {
		freeaddrinfo(res);
		return -ENOMEM;
	}
	c->ctx = ctx;
	name_from_sockaddr(c, res->ai_addr);
	if (rdma_create_id(x->ec, &c->id, c, RDMA_PS_TCP)) {
		rc = -errno;
		c->id = NULL;
		goto err;
	}
	/* Completion (success or failure) is reported from the loop. */
	if (rdma_resolve_addr(c->id, NULL, res->ai_addr, VERBS_RESOLVE_MS)) {
		rc = -errno;
		goto err;
	}
	freeaddrinfo(res);
	*c_p = c;
	return 0;

err:
	freeaddrinfo(res);
	c->state = VS_CLOSED;
	c->busy = 0;
	conn_destroy(c);	/* no upcall follows an error return */
	return rc;
}

static void verbs_destroy(struct xport *xb)
{
	struct verbs_xport *x = to_verbs(xb);
	struct ev_loop *loop;
	struct verbs_rpool *p;
	struct xport_conn *c;
	uint32_t i, live = 0;
	int rc;

	if (!x)
		return;
	loop = x->base.loop;
	ev_io_stop(loop, &x->chan_w);
	ev_io_stop(loop, &x->cm_w);
	ev_io_stop(loop, &x->async_w);
	ev_timer_stop(loop, &x->repoll_w);
	ev_timer_stop(loop, &x->dreq_w);
	x->destroying = true;
	while ((c = LIST_FIRST(&x->conns))) {
		if (c->state != VS_CLOSED) {
			/* Like tcp: a dial in progress goes quietly; a known
			 * connection gets its flush and closed(). */
			conn_shutdown(c, -ECONNABORTED, c->announced);
		} else {
			/* A closed conn still referenced by a caller up the
			 * stack cannot exist at destroy time. */
			c->busy = 0;
			conn_destroy(c);
		}
	}
	if (x->listen_id && rdma_destroy_id(x->listen_id))
		log_err("verbs: rdma_destroy_id of the listener: %m");
	if (x->srq) {
		rc = ibv_destroy_srq(x->srq);
		if (rc)
			log_err("verbs: destroying the SRQ: %s", strerror(-verbs_rc(rc)));
	}
	while ((p = x->srq_pools)) {
		x->srq_pools = p->next;
		rpool_free(p);
	}
	for (i = 0; x->mrs && i < x->mr_used; i++) {
		if (!x->mrs[i].mr)
			continue;
		live++;
		if (ibv_dereg_mr(x->mrs[i].mr))
			log_err("verbs: ibv_dereg_mr: %m");
	}
	if (live)
		log_warn("verbs: %u memory registrations still live at destroy", live);
	if (x->pd && (rc = ibv_dealloc_pd(x->pd)))
		log_err("verbs: ibv_dealloc_pd: %s", strerror(-verbs_rc(rc)));
	if (x->chan && ibv_destroy_comp_channel(x->chan))
		log_err("verbs: ibv_destroy_comp_channel: %m");
	if (x->ec)
		rdma_destroy_event_channel(x->ec);
	if (x->devs)
		rdma_free_devices(x->devs);
	verbs_keymap_fini(&x->keys);
	free(x->mrs);
	free(x);
}

static void verbs_buffer_bytes(const struct xport_conn *c, uint64_t *tx_bytes,
			       uint64_t *rx_bytes)
{
	*tx_bytes = (uint64_t)(c->sq.mask + 1) * sizeof(*c->slots) +
		    (c->tx_mem ? c->x->tx_bytes : 0);
	*rx_bytes = c->rpool ? (uint64_t)c->rpool->n * c->rpool->size : 0;
}

static const struct xport_ops verbs_ops = {
	.name = "verbs",
	.listen = verbs_listen,
	.connect = verbs_connect,
	.post_send = verbs_post_send,
	.post_write = verbs_post_write,
	.flush = verbs_flush,
	.poll = verbs_poll_op,
	.sq_space = verbs_sq_space_op,
	.sq_outstanding = verbs_sq_outstanding_op,
	.sq_bytes = verbs_sq_bytes_op,
	.reg_mr = verbs_reg_mr,
	.dereg_mr = verbs_dereg_mr,
	.grant = verbs_grant,
	.revoke = verbs_revoke,
	.get_stats = verbs_get_stats,
	.set_ctx = verbs_set_ctx,
	.set_rx_limit = verbs_set_rx_limit,
	.close = verbs_close,
	.peer_name = verbs_peer_name,
	.buffer_bytes = verbs_buffer_bytes,
	.destroy = verbs_destroy,
};

/* ---- devices ---- */

/* The first active port of @ctx, or 0. */
static uint8_t active_port(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	uint8_t p;

	if (ibv_query_device(ctx, &da))
		return 0;
	for (p = 1; p <= da.phys_port_cnt && p != 0; p++) {
		struct ibv_port_attr pa;

		if (ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
			return p;
	}
	return 0;
}

static bool want_device(const char *want, struct ibv_device *dev)
{
	return !want || !*want || strcmp(ibv_get_device_name(dev), want) == 0;
}

int xport_verbs_probe(const char *device, char *name, size_t namelen)
{
	struct ibv_device **list;
	int i, n = 0, rc = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return -ENODEV;
	for (i = 0; i < n && rc; i++) {
		struct ibv_context *ctx;

		if (!want_device(device, list[i]))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			continue;
		if (active_port(ctx)) {
			snprintf(name, namelen, "%s", ibv_get_device_name(list[i]));
			rc = 0;
		}
		if (ibv_close_device(ctx))
			log_debug("verbs: ibv_close_device: %m");
	}
	ibv_free_device_list(list);
	return rc;
}

static const char *link_layer_name(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	default: return "unspecified";
	}
}

static const char *gid_type_name(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "?";
	}
}

static void list_gids(FILE *out, struct ibv_context *ctx, uint8_t port, int tbl_len)
{
	static const uint8_t zero[16];
	int g;

	for (g = 0; g < tbl_len; g++) {
		struct ibv_gid_entry e;
		char text[INET6_ADDRSTRLEN] = "?", ifname[IF_NAMESIZE] = "";
		int rc = ibv_query_gid_ex(ctx, port, (uint32_t)g, &e, 0);

		if (rc == ENODATA || rc == -ENODATA)
			continue;	/* an empty entry */
		if (rc) {
			/* Kernels without the GID table query: the bare GID. */
			union ibv_gid gid;

			if (ibv_query_gid(ctx, port, g, &gid) || !memcmp(gid.raw, zero, 16))
				continue;
			inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
			fprintf(out, "    gid %d: %s\n", g, text);
			continue;
		}
		if (!memcmp(e.gid.raw, zero, 16))
			continue;
		inet_ntop(AF_INET6, e.gid.raw, text, sizeof(text));
		if (e.ndev_ifindex && !if_indextoname(e.ndev_ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "ifindex %u", e.ndev_ifindex);
		fprintf(out, "    gid %d: %s  %s%s%s\n", g, text, gid_type_name(e.gid_type),
			ifname[0] ? "  " : "", ifname);
	}
}

int xport_verbs_list_devices(FILE *out)
{
	struct ibv_device **list;
	int i, n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return -errno;
	for (i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct ibv_device_attr da;
		uint8_t p;

		if (!ctx) {
			fprintf(out, "%s: cannot open: %s\n", ibv_get_device_name(list[i]),
				strerror(errno));
			continue;
		}
		if (ibv_query_device(ctx, &da)) {
			fprintf(out, "%s: cannot query: %s\n", ibv_get_device_name(list[i]),
				strerror(errno));
		} else {
			fprintf(out, "%s: %s, %u port%s, max_qp_wr %d, max_cqe %d, max_mr %d, "
				"max_srq %d\n", ibv_get_device_name(list[i]),
				ibv_node_type_str(list[i]->node_type), da.phys_port_cnt,
				da.phys_port_cnt == 1 ? "" : "s", da.max_qp_wr, da.max_cqe,
				da.max_mr, da.max_srq);
			for (p = 1; p <= da.phys_port_cnt && p != 0; p++) {
				struct ibv_port_attr pa;

				if (ibv_query_port(ctx, p, &pa)) {
					fprintf(out, "  port %u: cannot query: %s\n", p,
						strerror(errno));
					continue;
				}
				fprintf(out, "  port %u: %s, link layer %s, active MTU %d\n", p,
					ibv_port_state_str(pa.state), link_layer_name(pa.link_layer),
					128 << pa.active_mtu);
				list_gids(out, ctx, p, pa.gid_tbl_len);
			}
		}
		if (ibv_close_device(ctx))
			fprintf(out, "%s: ibv_close_device: %s\n", ibv_get_device_name(list[i]),
				strerror(errno));
	}
	ibv_free_device_list(list);
	return n;
}

/* The librdmacm context of the device to use; logs why there is none. */
static struct ibv_context *pick_device(struct ibv_context **devs, const char *want)
{
	bool named = want && *want, seen = false;
	int i;

	for (i = 0; devs[i]; i++) {
		if (!want_device(want, devs[i]->device))
			continue;
		seen = true;
		if (active_port(devs[i]))
			return devs[i];
	}
	if (named && seen)
		log_err("verbs: device %s has no active port", want);
	else if (named)
		log_err("verbs: no RDMA device named %s (sluiced --list-devices shows them)", want);
	else
		log_err("verbs: no RDMA device with an active port");
	errno = ENODEV;
	return NULL;
}

static uint32_t min_u32(uint64_t a, uint64_t b)
{
	return (uint32_t)(a < b ? a : b);
}

struct xport *xport_verbs_create(struct ev_loop *loop, const struct xport_upcalls *up,
				 void *ctx, const struct xport_params *params)
{
	struct verbs_xport *x;
	struct ibv_srq_init_attr sa;
	uint32_t per_pool;
	bool soft_roce;
	int n = 0, rc;

	if (params->sq_depth < 2 || params->max_mr < 1 || params->recv_depth < 1 ||
	    params->max_frame < SL_WIRE_HDR_MAX ||
	    params->max_frame > SL_WIRE_HDR_MAX + SL_WIRE_PAYLOAD_MAX) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->base.ops = &verbs_ops;
	x->base.loop = loop;
	x->base.up = up;
	x->base.ctx = ctx;
	x->base.params = *params;
	x->base.params.device = NULL;	/* not ours to keep */
	LIST_INIT(&x->conns);
	TAILQ_INIT(&x->repolls);
	ev_io_init(&x->chan_w, chan_cb, -1, EV_READ);
	ev_io_init(&x->cm_w, cm_cb, -1, EV_READ);
	ev_io_init(&x->async_w, async_cb, -1, EV_READ);
	ev_timer_init(&x->repoll_w, repoll_cb, 0.0, 0.0);
	ev_timer_init(&x->dreq_w, dreq_cb, VERBS_DREQ_DELAY, 0.0);
	x->chan_w.data = x->cm_w.data = x->async_w.data = x->repoll_w.data = x;
	x->dreq_w.data = x;

	x->devs = rdma_get_devices(&n);
	if (!x->devs || n == 0) {
		log_err("verbs: no RDMA devices%s%s", x->devs ? "" : ": ",
			x->devs ? "" : strerror(errno));
		rc = -ENODEV;
		goto err;
	}
	x->ctx = pick_device(x->devs, params->device);
	if (!x->ctx) {
		rc = -ENODEV;
		goto err;
	}
	x->dev_name = ibv_get_device_name(x->ctx->device);
	rc = verbs_rc(ibv_query_device(x->ctx, &x->attr));
	if (rc) {
		log_err("verbs: %s: ibv_query_device: %s", x->dev_name, strerror(-rc));
		goto err;
	}

	/* Within the device's limits; each CQ must hold its queue. */
	x->sq_depth = min_u32(params->sq_depth, min_u32(x->attr.max_qp_wr, x->attr.max_cqe));
	if (x->sq_depth < 2) {
		log_err("verbs: %s: max_qp_wr %d, max_cqe %d: too small", x->dev_name,
			x->attr.max_qp_wr, x->attr.max_cqe);
		rc = -EINVAL;
		goto err;
	}
	if (x->sq_depth < params->sq_depth)
		log_warn("verbs: %s: send queues of %u WRs, not %u (device limit)", x->dev_name,
			 x->sq_depth, params->sq_depth);
	x->max_frame = params->max_frame;
	x->buf_size = (uint32_t)align_up(params->max_frame, VERBS_ALIGN);
	per_pool = VERBS_RECV_POOL_MAX / x->buf_size;
	if (per_pool < VERBS_RECV_MIN)
		per_pool = VERBS_RECV_MIN;
	x->recv_depth = min_u32(min_u32(params->recv_depth, per_pool),
				min_u32(x->attr.max_qp_wr, x->attr.max_cqe));
	if (x->recv_depth < params->recv_depth)
		log_info("verbs: %s: %u receive buffers per connection, not %u (memory or "
			 "device limit)", x->dev_name, x->recv_depth, params->recv_depth);
	x->send_sge = x->attr.max_sge >= 2 ? 2 : 1;
	/* Soft-RoCE binds type-2 windows, but lets a write land outside the
	 * window's range, inside the registration under it (rxe-suite step
	 * 5, kernel 6.1: a write 8 KiB below its window landed): there a
	 * grant is an exact registration, which rxe checks to the byte. */
	soft_roce = x->attr.vendor_id == VERBS_RXE_VENDOR_ID;
	x->use_mw = !soft_roce && (x->attr.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
							       IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
	log_info("verbs: %s: rendezvous grants are %s", x->dev_name,
		 x->use_mw ? "type-2 memory windows" : soft_roce ?
		 "registrations of their exact range (Soft-RoCE does not hold a write to "
		 "its window's range)" :
		 "registrations of their exact range (no type-2 memory windows)");
	x->tx_bytes = align_up(4ull * x->buf_size + VERBS_TX_CTL_RESERVE, 4096);
	if (x->tx_bytes < VERBS_TX_RING_MIN)
		x->tx_bytes = VERBS_TX_RING_MIN;
	x->base.params.sq_depth = x->sq_depth;
	x->base.params.recv_depth = x->recv_depth;
	x->base.params.max_mr = min_u32(params->max_mr, (uint32_t)x->attr.max_mr);
	if (x->base.params.max_mr == 0) {
		log_err("verbs: %s: max_mr 0", x->dev_name);
		rc = -EINVAL;
		goto err;
	}

	x->pd = ibv_alloc_pd(x->ctx);
	if (!x->pd) {
		rc = -errno;
		log_err("verbs: %s: ibv_alloc_pd: %m", x->dev_name);
		goto err;
	}
	x->chan = ibv_create_comp_channel(x->ctx);
	if (!x->chan) {
		rc = -errno;
		log_err("verbs: %s: ibv_create_comp_channel: %m", x->dev_name);
		goto err;
	}
	x->ec = rdma_create_event_channel();
	if (!x->ec) {
		rc = -errno;
		log_err("verbs: rdma_create_event_channel: %m");
		goto err;
	}
	/* All three are read until EAGAIN from the loop. */
	rc = set_nonblock(x->chan->fd);
	if (!rc)
		rc = set_nonblock(x->ec->fd);
	if (!rc)
		rc = set_nonblock(x->ctx->async_fd);
	if (rc) {
		log_err("verbs: O_NONBLOCK: %s", strerror(-rc));
		goto err;
	}
	if (x->attr.max_srq > 0 && x->attr.max_srq_wr > 0) {
		uint32_t cap = min_u32((uint64_t)x->recv_depth * VERBS_SRQ_CONNS,
				       min_u32(x->attr.max_srq_wr, x->attr.max_cqe));

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = cap;
		sa.attr.max_sge = 1;
		x->srq = ibv_create_srq(x->pd, &sa);
		if (x->srq)
			x->srq_cap = cap;
		else
			log_info("verbs: %s: no SRQ (%m): a receive queue per connection",
				 x->dev_name);
	}
	x->mrs = calloc(x->base.params.max_mr, sizeof(*x->mrs));
	if (!x->mrs) {
		rc = -ENOMEM;
		goto err;
	}
	rc = verbs_keymap_init(&x->keys, x->base.params.max_mr);
	if (rc)
		goto err;

	ev_io_set(&x->chan_w, x->chan->fd, EV_READ);
	ev_io_set(&x->cm_w, x->ec->fd, EV_READ);
	ev_io_set(&x->async_w, x->ctx->async_fd, EV_READ);
	ev_io_start(loop, &x->chan_w);
	ev_io_start(loop, &x->cm_w);
	ev_io_start(loop, &x->async_w);
	if (params->faults.post_enomem_every || params->faults.reg_fail_after != UINT64_MAX ||
	    params->faults.delay_completions_us || params->faults.cut_after_frames ||
	    params->faults.cut_every_frames || params->faults.write_replay)
		log_warn("verbs: [fault] keys other than write_shift_bytes are the tcp "
			 "transport's: ignored");
	if (params->faults.write_shift_bytes)
		log_warn("verbs: [fault] write_shift_bytes = %d: every RDMA write goes that "
			 "far from its grant", (int)params->faults.write_shift_bytes);
	log_info("verbs: device %s port %u: SQ %u WRs, %u receive buffers of %u bytes %s, "
		 "%llu KiB send ring per connection", x->dev_name, active_port(x->ctx),
		 x->sq_depth, x->srq ? x->srq_cap : x->recv_depth, x->buf_size,
		 x->srq ? "in a shared receive queue" : "per connection",
		 (unsigned long long)(x->tx_bytes >> 10));
	return &x->base;

err:
	verbs_destroy(&x->base);
	errno = -rc;
	return NULL;
}
