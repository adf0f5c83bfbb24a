/*
 * tcp.c - the tcp transport: verbs semantics (xport.h) over TCP.
 *
 * Each connection has a bounded send queue of frames.  flush() gathers the
 * queue into one writev() of up to TCP_IOV_BATCH frames; a short write keeps
 * the offset into the head frame and arms a write watcher, so the loop never
 * blocks in write() (libfabric issue 5897: a writer stuck on a full socket
 * must not stop the reader).  Reads fill a buffer and hand up every whole
 * frame; a frame cut at any byte resumes on the next read.
 *
 * RDMA writes are WRITE frames on the same stream, so they keep RC order
 * with the sends.  The target checks (rkey, raddr, len) against the
 * connection's grants (grant.h: the exact range an RTR named, for one
 * rendezvous) and the grant's registration before it places a byte, then
 * reads the payload straight from the socket into the registered memory
 * (no bounce copy).  Every read that brings bytes, of a frame or of a
 * write's payload, stamps the connection (last_rx): the link counts any
 * byte as hearing its peer.
 * A write outside its grant places nothing: its payload is read and
 * dropped, so the stream stays in sync, and the link hears of it
 * (write_refused) and fails that rendezvous only; where an RC QP would
 * break for everybody, one buggy rendezvous costs only itself.  Keys
 * carry a generation, so a deregistered or revoked key never matches
 * again even when its slot is reused.
 *
 * The SQ has three indices: completed <= written <= posted.  Without the
 * completion-delay fault a WR completes as soon as it is written.
 *
 * The cut faults count received frames over all connections and break
 * the connection that receives the chosen one, through the same path as
 * a read error: the frame is never delivered, posted WRs flush with an
 * error, closed() follows, and the peer sees the stream end.
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "accept_pause.h"
#include "log.h"
#include "xport/addr.h"
#include "xport/grant.h"
#include "xport/tls.h"
#include "xport/xport.h"

#define TCP_IOV_BATCH 64		/* frames per writev() */
#define TCP_RX_INITIAL (256u << 10)	/* bytes */
#define TCP_READS_PER_EVENT 8		/* bounded work per wake-up */
#define TCP_DIRECT_MIN (64u << 10)	/* writes worth a header-only read after */
/*
 * What a frame posted now may wait behind inside the kernel, bytes: the
 * unsent part of the send buffer (TCP_NOTSENT_LOWAT) and the receive
 * window, which bounds what is sent but not yet read by the peer daemon
 * (TCP_WINDOW_CLAMP).  Autotuning lets both grow to megabytes, and bytes
 * in the kernel are FIFO: an ACK or a 4 KiB message of one client would
 * wait behind them (link.h, LINK_TX_BUDGET, bounds the rest).  A 1 MiB
 * window covers the bandwidth-delay product of a LAN (40 Gb/s at 200 us)
 * and kept loopback streams at their old speed, where 512 KiB and 128 KiB
 * unsent cost up to half of it (docs/link-scheduling.md); [transport]
 * socket_buffer, when set, sizes the buffers instead.
 *
 * The clamp alone does not hold: receive-buffer autotuning resets the
 * window clamp to follow the buffer it grows (to tcp_rmem's maximum, 32
 * MiB here), and 11 to 22 MiB sat unread ahead of every small message.
 * Setting SO_RCVBUF turns autotuning off; the kernel doubles the value
 * for its overhead, so half the window gives a window of about
 * TCP_WINDOW_MAX (tests/test_bulk.c reads the queues in /proc/net/tcp).
 */
#define TCP_UNSENT_MAX (256u << 10)
/* [transport] socket_buffer below this (bytes) also caps the segment size
 * at a quarter of it, TCP_MSS_MIN at least (set_sockopts). */
#define TCP_SMALL_BUFFER (64 << 10)
#define TCP_MSS_MIN 536
#define TCP_WINDOW_MAX (1u << 20)

struct tcp_wr {
	uint64_t wr_id;
	ev_tstamp done_at;	/* completion-delay fault: when to complete */
	const uint8_t *payload;
	uint32_t payload_len;
	uint32_t hdr_len;
	uint8_t hdr[SL_WIRE_HDR_MAX];
};

enum tcp_state { TCP_CONNECTING, TCP_UP, TCP_CLOSED };

struct xport_conn {
	struct tcp_xport *x;
	LIST_ENTRY(xport_conn) all;
	int fd;
	enum tcp_state state;
	void *ctx;
	ev_io rw;
	ev_io ww;
	/* Send queue: free-running indices, power-of-two size (the ring) but
	 * params.sq_depth WRs at most. */
	struct tcp_wr *sq;
	uint32_t sq_mask;
	uint32_t sq_depth;
	uint32_t sq_head;	/* next to complete */
	uint32_t sq_sent;	/* next to write */
	uint32_t sq_tail;	/* next free */
	uint64_t sq_bytes;	/* payload bytes of [sq_head, sq_tail) */
	size_t head_sent;	/* bytes of the sq_sent frame already written */
	ev_timer done_w;	/* completion-delay fault */
	uint64_t posts;		/* fault injection: posts on this conn */
	/* An RDMA write being placed: bytes still to read into wr_dst. */
	uint8_t *wr_dst;
	uint64_t wr_left;
	uint64_t wr_len;	/* its whole length */
	uint64_t wr_raddr;	/* where it starts */
	bool expect_write;	/* the last frame was a large write */
	uint32_t wr_rkey;
	bool wr_has_imm;
	uint32_t wr_imm;
	bool wr_discard;	/* the write was refused: drop its bytes */
	struct grant_table grants;	/* what the peer may write */
	/* Receive buffer: bytes [rx_off, rx_len) are unparsed. */
	uint8_t *rx;
	size_t rx_cap;
	size_t rx_len;
	uint32_t rx_max;	/* largest payload accepted, bytes */
	ev_tstamp rx_at;	/* ev_now() of the last read with bytes */
	ev_timer hello_w;	/* accepted and still anonymous */
	bool link_refused;	/* anonymous, and the link layer refused it */
	uint8_t first_byte;	/* of the last frame parsed: its wire version */
	unsigned busy;		/* upcall nesting: free is deferred while > 0 */
	bool zombie;		/* closed; free when busy drops to 0 */
	/* TLS (start_tls): frames from SQ index tls_from on are sent in
	 * records (tls_tx once the first of them is reached); the bytes
	 * after the frame being handed up are records (tls_rx_next, then
	 * tls_rx). */
	struct tls_conn *tls;
	uint32_t tls_from;
	bool tls_tx, tls_rx, tls_rx_next;
	char name[64];
};

/* One registration.  key = generation << TCP_KEY_IDX_BITS | (index + 1). */
struct tcp_mr {
	uint8_t *addr;
	uint64_t len;
	uint32_t key;		/* 0: free */
	uint32_t next_free;	/* index + 1 of the next free slot, 0 = none */
};

#define TCP_KEY_IDX_BITS 21	/* max_mr <= 2^20 */

struct tcp_xport {
	struct xport base;
	int listen_fd;
	/* The address listened on when it is one address (not a wildcard):
	 * dials go out from it, port 0, because peers check that a dialer
	 * comes from the address they list for it (link_auth.c) and the
	 * kernel would pick another on a host with several (127.0.0.x on
	 * one machine, a node with two networks). */
	struct sockaddr_storage dial_src;
	socklen_t dial_src_len;		/* 0: let the kernel choose */
	ev_io accept_w;
	struct accept_pause pause;	/* accept() out of fds: back off */
	LIST_HEAD(, xport_conn) conns;
	struct tcp_mr *mrs;		/* params.max_mr slots */
	uint32_t free_mr;		/* index + 1 of the first free slot */
	uint32_t mr_used;		/* slots ever used (grow order) */
	uint32_t mr_gen;
	uint64_t reg_calls;
	uint64_t rx_frames;		/* frames received, all conns (cut faults) */
	struct grant_log_limit refused_log;
	struct tls_ctx *tls;		/* params.tls */
	struct xport_stats st;
};

static struct tcp_xport *to_tcp(struct xport *x)
{
	return (struct tcp_xport *)x;
}

static void tcp_io_cb(struct ev_loop *loop, ev_io *w, int revents);
static void tcp_close(struct xport_conn *c, int err);
static void hello_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void done_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* Unlink and free a conn nobody refers to any more. */
static void conn_free(struct xport_conn *c)
{
	LIST_REMOVE(c, all);
	c->x->st.grants -= c->grants.live;
	grant_table_free(&c->grants);
	tls_conn_free(c->tls, false);
	free(c->sq);
	free(c->rx);
	free(c);
}

static void conn_put(struct xport_conn *c)
{
	if (--c->busy == 0 && c->zombie)
		conn_free(c);
}

static void set_sockopts(const struct tcp_xport *x, int fd)
{
	int one = 1, buf = (int)x->base.params.socket_buffer;

	/* Latency matters more than segment count; frames are batched by
	 * writev() already. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		log_warn("tcp: TCP_NODELAY: %m");
	/* With [transport] socket_buffer the buffers are sized already. */
	if (!buf && (setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &(int){ TCP_UNSENT_MAX },
				sizeof(int)) < 0 ||
		     setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ TCP_WINDOW_MAX / 2 },
				sizeof(int)) < 0 ||
		     setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &(int){ TCP_WINDOW_MAX },
				sizeof(int)) < 0))
		log_warn("tcp: TCP_NOTSENT_LOWAT, SO_RCVBUF or TCP_WINDOW_CLAMP: %m");
	/* Small buffers are for tests of a full socket (libfabric issue
	 * 5897); the kernel doubles the value and has a floor. */
	if (buf && (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) < 0))
		log_warn("tcp: socket buffers of %d bytes: %m", buf);
	/* Tiny buffers want tiny segments: a receiver advertises no window
	 * until at least a segment's worth (the largest it has seen) is
	 * free, so segments near the buffer's size kept the window shut
	 * until the sender's 200 ms zero-window probe (test_pressure's c03
	 * crawled at one credit window per probe, 1 run in 10). */
	if (buf && buf < TCP_SMALL_BUFFER) {
		int mss = buf / 4 < TCP_MSS_MIN ? TCP_MSS_MIN : buf / 4;

		if (setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)) < 0)
			log_warn("tcp: TCP_MAXSEG %d: %m", mss);
	}
}

static struct xport_conn *conn_new(struct tcp_xport *x, int fd, enum tcp_state st)
{
	struct xport_conn *c = calloc(1, sizeof(*c));
	uint32_t depth = 1;

	if (!c)
		return NULL;
	while (depth < x->base.params.sq_depth)
		depth <<= 1;
	c->sq = calloc(depth, sizeof(*c->sq));
	c->rx = malloc(TCP_RX_INITIAL);
	if (!c->sq || !c->rx) {
		free(c->sq);
		free(c->rx);
		free(c);
		return NULL;
	}
	c->x = x;
	c->fd = fd;
	c->state = st;
	grant_table_init(&c->grants);
	c->sq_mask = depth - 1;
	c->sq_depth = x->base.params.sq_depth;
	c->rx_cap = TCP_RX_INITIAL;
	c->rx_max = SL_WIRE_AUTH_WHO_MAX;	/* an AUTH's "who" before the link is up */
	c->busy = 1;	/* the owner's reference, dropped at close */
	ev_io_init(&c->rw, tcp_io_cb, fd, EV_READ);
	ev_io_init(&c->ww, tcp_io_cb, fd, EV_WRITE);
	ev_timer_init(&c->hello_w, hello_timeout_cb, XPORT_HELLO_TIMEOUT, 0.0);
	/* After the reads of the same loop iteration: a HELLO waiting in
	 * the socket of a daemon that was stalled is read first. */
	ev_set_priority(&c->hello_w, EV_MINPRI);
	ev_timer_init(&c->done_w, done_timer_cb, 0.0, 0.0);
	c->done_w.data = c;
	c->rw.data = c;
	c->ww.data = c;
	c->hello_w.data = c;
	LIST_INSERT_HEAD(&x->conns, c, all);
	return c;
}

static void name_from_sockaddr(struct xport_conn *c, const struct sockaddr *sa)
{
	xport_addr_name(sa, c->name, sizeof(c->name));
}

/* ---- send side ---- */

static uint32_t tcp_sq_space(const struct xport_conn *c)
{
	return c->sq_depth - (c->sq_tail - c->sq_head);
}

static uint32_t tcp_sq_outstanding(const struct xport_conn *c)
{
	return c->sq_tail - c->sq_head;
}

static uint64_t tcp_sq_bytes(const struct xport_conn *c)
{
	return c->sq_bytes;
}

/* A free SQ slot, or NULL with the post's error: -ENOTCONN, or -ENOMEM
 * when the SQ is full or the post-failure fault says so.  HELLO is spared
 * the fault: it sets the connection up, it is not on the data path. */
static struct tcp_wr *sq_reserve(struct xport_conn *c, bool may_fault, int *err)
{
	const struct xport_faults *fl = &c->x->base.params.faults;

	if (c->state == TCP_CLOSED) {
		*err = -ENOTCONN;
		return NULL;
	}
	if (tcp_sq_space(c) == 0) {
		c->x->st.post_enomem++;
		*err = -ENOMEM;
		return NULL;
	}
	if (may_fault && fl->post_enomem_every && ++c->posts % fl->post_enomem_every == 0) {
		c->x->st.post_enomem++;
		c->x->st.faults_injected++;
		*err = -ENOMEM;
		return NULL;
	}
	return &c->sq[c->sq_tail & c->sq_mask];
}

static int tcp_post_send(struct xport_conn *c, const struct xport_send_wr *wr)
{
	struct tcp_wr *slot;
	int err;

	if (wr->hdr_len < 2 || wr->hdr_len > SL_WIRE_HDR_MAX ||
	    (wr->payload_len && !wr->payload))
		return -EINVAL;
	/* The opening frames are never refused by [fault] post_enomem_every:
	 * a connection would never get past them. */
	slot = sq_reserve(c, ((const uint8_t *)wr->hdr)[1] != SL_WIRE_HELLO &&
			       ((const uint8_t *)wr->hdr)[1] != SL_WIRE_AUTH, &err);
	if (!slot)
		return err;
	slot->wr_id = wr->wr_id;
	slot->payload = wr->payload;
	slot->payload_len = wr->payload_len;
	slot->hdr_len = wr->hdr_len;
	memcpy(slot->hdr, wr->hdr, wr->hdr_len);
	c->sq_tail++;
	c->sq_bytes += wr->payload_len;
	return 0;
}

/* The registration @key names, or NULL. */
static const struct tcp_mr *mr_lookup(const struct tcp_xport *x, uint32_t key)
{
	uint32_t idx = key & ((1u << TCP_KEY_IDX_BITS) - 1);

	if (idx == 0 || idx > x->mr_used || x->mrs[idx - 1].key != key)
		return NULL;
	return &x->mrs[idx - 1];
}

/* Is [addr, addr + len) inside @mr?  Overflow-safe. */
static bool mr_covers(const struct tcp_mr *mr, uintptr_t addr, uint64_t len)
{
	uintptr_t base = (uintptr_t)mr->addr;

	return addr >= base && addr - base <= mr->len && len <= mr->len - (addr - base);
}

/*
 * The replay fault: after write @done (with its immediate, the end of its
 * rendezvous), write XPORT_REPLAY_MAX bytes of 0xee (at most its length)
 * to the same place again, as a peer that kept an rkey would.  wr_id 0:
 * nothing of the link's.  Best effort: skipped when the SQ is full.
 */
static void fault_replay_write(struct xport_conn *c, const struct sl_wire_frame *done)
{
	static uint8_t junk[XPORT_REPLAY_MAX];
	struct sl_wire_frame f = *done;
	struct tcp_wr *slot;
	int err, n;

	if (tcp_sq_space(c) == 0 || !(slot = sq_reserve(c, false, &err)))
		return;
	memset(junk, 0xee, sizeof(junk));
	f.payload_len = done->payload_len < sizeof(junk) ? done->payload_len : sizeof(junk);
	f.u.write.has_imm = false;
	f.u.write.imm = 0;
	n = sl_wire_encode(&f, slot->hdr, sizeof(slot->hdr));
	if (n < 0)
		return;
	slot->wr_id = 0;
	slot->payload = junk;
	slot->payload_len = f.payload_len;
	slot->hdr_len = (uint32_t)n;
	c->sq_tail++;
	c->sq_bytes += f.payload_len;
	c->x->st.faults_injected++;
}

static int tcp_post_write(struct xport_conn *c, const struct xport_write_wr *wr)
{
	const struct xport_faults *fl = &c->x->base.params.faults;
	struct sl_wire_frame f = { .type = SL_WIRE_WRITE };
	struct tcp_wr *slot;
	int err, n;

	if (wr->len > SL_WIRE_PAYLOAD_MAX)
		return -EINVAL;
	if (wr->len) {
		const struct tcp_mr *mr = mr_lookup(c->x, wr->lkey);

		/* A local protection error, caught at post time. */
		if (!mr || !mr_covers(mr, (uintptr_t)wr->laddr, wr->len))
			return -EINVAL;
	}
	slot = sq_reserve(c, true, &err);
	if (!slot)
		return err;
	f.payload_len = wr->len;
	/* The shift fault: a peer that writes where it was not granted. */
	f.u.write.raddr = wr->raddr + (uint64_t)(int64_t)fl->write_shift_bytes;
	if (fl->write_shift_bytes)
		c->x->st.faults_injected++;
	f.u.write.rkey = wr->rkey;
	f.u.write.has_imm = wr->has_imm;
	f.u.write.imm = wr->has_imm ? wr->imm : 0;
	n = sl_wire_encode(&f, slot->hdr, sizeof(slot->hdr));
	if (n < 0)
		return n;
	slot->wr_id = wr->wr_id;
	slot->payload = wr->laddr;
	slot->payload_len = wr->len;
	slot->hdr_len = (uint32_t)n;
	c->sq_tail++;
	c->sq_bytes += wr->len;
	if (wr->has_imm && fl->write_replay)
		fault_replay_write(c, &f);
	return 0;
}

/* ---- memory registration ---- */

static int tcp_reg_mr(struct xport *xb, void *addr, uint64_t len, uint64_t *handle,
		      uint32_t *lkey, uint32_t *rkey)
{
	struct tcp_xport *x = to_tcp(xb);
	const struct xport_faults *fl = &xb->params.faults;
	struct tcp_mr *mr;
	uint32_t idx;

	if (len == 0 || !addr)
		return -EINVAL;
	if (fl->reg_fail_after != UINT64_MAX && ++x->reg_calls > fl->reg_fail_after) {
		x->st.reg_fails++;
		x->st.faults_injected++;
		return -ENOMEM;
	}
	if (x->free_mr) {
		idx = x->free_mr - 1;
		x->free_mr = x->mrs[idx].next_free;
	} else if (x->mr_used < xb->params.max_mr) {
		idx = x->mr_used++;
	} else {
		x->st.reg_fails++;
		return -ENOMEM;	/* like a device out of MRs */
	}
	mr = &x->mrs[idx];
	x->mr_gen = (x->mr_gen + 1) & ((1u << (32 - TCP_KEY_IDX_BITS)) - 1);
	mr->addr = addr;
	mr->len = len;
	mr->key = (x->mr_gen << TCP_KEY_IDX_BITS) | (idx + 1);
	mr->next_free = 0;
	*handle = idx;
	*lkey = *rkey = mr->key;
	x->st.mrs++;
	return 0;
}

static void tcp_dereg_mr(struct xport *xb, uint64_t handle)
{
	struct tcp_xport *x = to_tcp(xb);
	struct tcp_mr *mr;

	if (handle >= x->mr_used || x->mrs[handle].key == 0) {
		log_err("tcp: dereg of unknown MR handle %llu", (unsigned long long)handle);
		return;
	}
	mr = &x->mrs[handle];
	mr->key = 0;
	mr->addr = NULL;
	mr->len = 0;
	mr->next_free = x->free_mr;
	x->free_mr = (uint32_t)handle + 1;
	x->st.mrs--;
}

static int tcp_grant(struct xport_conn *c, uint64_t mr_handle, uint64_t addr, uint64_t len,
		     uint32_t *rkey)
{
	struct tcp_xport *x = c->x;
	const struct tcp_mr *mr;
	int rc;

	if (c->state == TCP_CLOSED)
		return -ENOTCONN;
	if (mr_handle >= x->mr_used || !x->mrs[mr_handle].key ||
	    !mr_covers(&x->mrs[mr_handle], (uintptr_t)addr, len) || len == 0) {
		x->st.grant_fails++;
		return -EINVAL;
	}
	mr = &x->mrs[mr_handle];
	rc = grant_add(&c->grants, addr, len, mr->key, rkey);
	if (rc) {
		x->st.grant_fails++;
		return rc;
	}
	x->st.grants++;
	return 0;
}

static void tcp_revoke(struct xport_conn *c, uint32_t rkey)
{
	if (grant_remove(&c->grants, rkey))
		c->x->st.grants--;
}

/* May a write of @len bytes (> 0) at @raddr with @rkey land on @c?  Its
 * grant, and the registration under it (deregistered while the write
 * was on its way: the memory may be gone). */
static enum grant_verdict write_check(const struct xport_conn *c, uint32_t rkey,
				      uint64_t raddr, uint64_t len)
{
	const struct xport_grant *g = NULL;
	enum grant_verdict v = grant_check(&c->grants, rkey, raddr, len, &g);
	const struct tcp_mr *mr;

	if (v != GRANT_OK)
		return v;
	mr = mr_lookup(c->x, (uint32_t)g->cookie);
	return mr && mr_covers(mr, (uintptr_t)raddr, len) ? GRANT_OK : GRANT_REVOKED;
}

static void count_refusal(struct tcp_xport *x, enum grant_verdict v)
{
	x->st.access_errors++;
	x->st.grant_violations++;
	switch (v) {
	case GRANT_BELOW: x->st.grant_below++; break;
	case GRANT_ABOVE: x->st.grant_above++; break;
	case GRANT_REVOKED: x->st.grant_revoked++; break;
	case GRANT_UNKNOWN: x->st.grant_unknown++; break;
	case GRANT_OK: break;
	}
}

static void tcp_get_stats(const struct xport *xb, struct xport_stats *st)
{
	const struct tcp_xport *x = to_tcp((struct xport *)xb);

	*st = x->st;
	if (x->tls)
		tls_ctx_stats(x->tls, st);
}

/* Complete the @n WRs at the SQ head with @status, in order.  Slots are
 * freed before each upcall so that the upcall may post again. */
static void complete_head(struct xport_conn *c, uint32_t n, int status)
{
	const struct xport_upcalls *up = c->x->base.up;

	while (n--) {
		const struct tcp_wr *wr = &c->sq[c->sq_head & c->sq_mask];
		uint64_t wr_id = wr->wr_id;

		c->sq_bytes -= wr->payload_len;
		c->sq_head++;
		if (c->sq_sent - c->sq_head > c->sq_tail - c->sq_head)
			c->sq_sent = c->sq_head;	/* flushed before written */
		up->send_done(c, c->ctx, wr_id, status);
	}
}

/* Complete written WRs whose delay is over; re-arm for the rest. */
static void complete_due(struct xport_conn *c)
{
	ev_tstamp now = ev_now(c->x->base.loop);
	uint32_t n = 0;

	while (c->sq_head + n != c->sq_sent &&
	       c->sq[(c->sq_head + n) & c->sq_mask].done_at <= now)
		n++;
	complete_head(c, n, 0);
	if (c->state != TCP_CLOSED && c->sq_head != c->sq_sent && !ev_is_active(&c->done_w)) {
		ev_timer_set(&c->done_w, c->sq[c->sq_head & c->sq_mask].done_at - now, 0.0);
		ev_timer_start(c->x->base.loop, &c->done_w);
	}
}

static void done_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct xport_conn *c = w->data;

	(void)loop;
	(void)revents;
	c->busy++;
	complete_due(c);
	conn_put(c);
}

/* Returns 0 when the SQ is empty, -EAGAIN when the socket is full, or
 * -errno when the connection broke. */
static int write_batch(struct xport_conn *c)
{
	struct iovec iov[2 * TCP_IOV_BATCH];
	uint32_t n = c->sq_tail - c->sq_sent, i, done = 0;
	uint32_t delay_us = c->x->base.params.faults.delay_completions_us;
	int iovcnt = 0;
	size_t skip = c->head_sent;
	ssize_t w;

	if (n == 0)
		return 0;
	/* Frames posted before start_tls() go out in plaintext first. */
	if (c->tls && !c->tls_tx) {
		if (c->sq_sent == c->tls_from)
			c->tls_tx = true;
		else if (n > c->tls_from - c->sq_sent)
			n = c->tls_from - c->sq_sent;
	}
	if (n > TCP_IOV_BATCH)
		n = TCP_IOV_BATCH;
	for (i = 0; i < n; i++) {
		struct tcp_wr *wr = &c->sq[(c->sq_sent + i) & c->sq_mask];

		if (skip < wr->hdr_len) {
			iov[iovcnt].iov_base = wr->hdr + skip;
			iov[iovcnt++].iov_len = wr->hdr_len - skip;
			skip = 0;
		} else {
			skip -= wr->hdr_len;
		}
		if (wr->payload_len > skip) {
			iov[iovcnt].iov_base = (void *)(wr->payload + skip);
			iov[iovcnt++].iov_len = wr->payload_len - skip;
		}
		skip = 0;
	}
	w = c->tls_tx ? tls_conn_writev(c->tls, iov, iovcnt) : writev(c->fd, iov, iovcnt);
	if (w < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -EAGAIN;
		if (errno == EINTR)
			return -EAGAIN;
		return -errno;
	}
	/* Account the bytes written against whole frames. */
	{
		size_t left = (size_t)w + c->head_sent;

		for (i = 0; i < n; i++) {
			struct tcp_wr *wr = &c->sq[(c->sq_sent + i) & c->sq_mask];
			size_t flen = (size_t)wr->hdr_len + wr->payload_len;

			if (left < flen)
				break;
			left -= flen;
			wr->done_at = ev_now(c->x->base.loop) + delay_us * 1e-6;
			done++;
		}
		c->head_sent = left;
		c->sq_sent += done;
	}
	c->busy++;
	if (delay_us)
		complete_due(c);
	else
		complete_head(c, c->sq_sent - c->sq_head, 0);
	conn_put(c);
	return c->state == TCP_CLOSED ? -ECONNRESET : (done ? 1 : -EAGAIN);
}

static void tcp_flush(struct xport_conn *c)
{
	int rc;

	if (c->state != TCP_UP)
		return;
	c->busy++;
	do {
		rc = write_batch(c);
	} while (rc == 1);
	/* Records sealed outside a write (the TLS handshake's) wait too. */
	if (rc == 0 && c->tls && tls_conn_flush(c->tls) < 0)
		rc = -errno;
	/* TLS may wait for the peer's bytes instead (its handshake): then
	 * the read side calls flush again (tcp_io_cb). */
	if (rc == -EAGAIN && c->tls_tx && !tls_conn_wants_write(c->tls)) {
		ev_io_stop(c->x->base.loop, &c->ww);
	} else if (rc == -EAGAIN) {
		ev_io_start(c->x->base.loop, &c->ww);
	} else if (rc == 0) {
		ev_io_stop(c->x->base.loop, &c->ww);
	} else if (c->state != TCP_CLOSED) {
		log_info("tcp: %s: write: %s", c->name, strerror(-rc));
		tcp_close(c, rc);
	}
	conn_put(c);
}

/* ---- receive side ---- */

/* The RDMA write being placed is complete: say so, then its immediate,
 * if any. */
static int write_placed(struct xport_conn *c)
{
	const struct xport_upcalls *up = c->x->base.up;

	c->expect_write = c->wr_len >= TCP_DIRECT_MIN;
	c->x->st.writes_rx++;
	if (up->write_placed)
		up->write_placed(c, c->ctx, c->wr_rkey,
				 c->wr_raddr, (uint32_t)c->wr_len);
	c->wr_dst = NULL;
	if (c->state != TCP_UP)
		return -ECONNRESET;	/* the upcall broke the connection */
	if (!c->wr_has_imm)
		return 0;
	c->wr_has_imm = false;
	return c->x->base.up->write_imm(c, c->ctx, c->wr_imm);
}

/*
 * The write being read (its header in c->wr_*, c->wr_left bytes of it
 * still to come) may not land, for reason @v: nothing more of it is
 * placed, the rest of its payload is read and dropped, and the link
 * hears of it.  Counted and logged (rate-limited: a peer can do it at
 * will).  Returns 0, or -errno when the connection must break.
 */
static int write_refuse(struct xport_conn *c, enum grant_verdict v)
{
	struct tcp_xport *x = c->x;
	const struct xport_upcalls *up = x->base.up;
	uint64_t suppressed;
	int rc;

	count_refusal(x, v);
	if (grant_log_allow(&x->refused_log, ev_now(x->base.loop), &suppressed))
		log_warn("tcp: %s: write refused, %s: rkey %08x addr %#llx len %llu"
			 " (%llu such lines suppressed before)", c->name, grant_verdict_name(v),
			 c->wr_rkey, (unsigned long long)c->wr_raddr,
			 (unsigned long long)c->wr_len, (unsigned long long)suppressed);
	c->wr_discard = true;
	c->wr_dst = NULL;
	if (!up->write_refused)
		return -EACCES;	/* nobody to tell: as an RC QP would */
	rc = up->write_refused(c, c->ctx, c->wr_rkey, c->wr_has_imm, c->wr_imm);
	c->wr_has_imm = false;
	if (c->state != TCP_UP)
		return -ECONNRESET;	/* the upcall broke the connection */
	return rc;
}

/*
 * A WRITE header arrived with @avail payload bytes behind it in the
 * buffer.  Check it against the MR table, place what is here, and leave
 * the rest to be read straight into place.  Returns 0 or -errno.
 */
static int write_begin(struct xport_conn *c, const struct sl_wire_frame *f,
		       const uint8_t *payload, size_t avail)
{
	size_t n = avail < f->payload_len ? avail : f->payload_len;
	enum grant_verdict v;
	int rc;

	if (!c->ctx)
		return -EPROTO;	/* no link attached: nobody may write */
	c->wr_dst = (uint8_t *)(uintptr_t)f->u.write.raddr;
	c->wr_raddr = f->u.write.raddr;
	c->wr_left = f->payload_len;
	c->wr_len = f->payload_len;
	c->wr_rkey = f->u.write.rkey;
	c->wr_has_imm = f->u.write.has_imm;
	c->wr_imm = f->u.write.imm;
	/* An empty write places nothing: it carries only its immediate. */
	v = f->payload_len ? write_check(c, f->u.write.rkey, f->u.write.raddr, f->payload_len)
			   : GRANT_OK;
	if (v != GRANT_OK) {
		rc = write_refuse(c, v);
		c->wr_left -= n;	/* those bytes are dropped with the buffer's */
		if (!c->wr_left)
			c->wr_discard = false;
		return rc;
	}
	/* An empty write may name address 0: no arithmetic on it. */
	if (n) {
		memcpy(c->wr_dst, payload, n);
		c->wr_dst += n;
	}
	c->wr_left -= n;
	return c->wr_left ? 0 : write_placed(c);
}

/*
 * Count one received frame, decoded and checked, that is about to be
 * delivered (or, for a WRITE, placed).  When the cut faults choose it,
 * break @c as a network failure would, without delivering it: shut the
 * socket down both ways, so that the peer sees the end too, then take
 * the read-error path (tcp_close: flush errors, closed()).  Returns true
 * when @c was cut.  The caller holds a reference (busy), so @c and its
 * buffers stay allocated until the caller is done; it must stop
 * parsing, as after an upcall that closed the connection.
 */
static bool fault_cut(struct xport_conn *c)
{
	struct tcp_xport *x = c->x;
	const struct xport_faults *fl = &x->base.params.faults;
	uint64_t n = ++x->rx_frames;

	if (n != fl->cut_after_frames &&
	    (!fl->cut_every_frames || n % fl->cut_every_frames != 0))
		return false;
	x->st.cuts++;
	x->st.faults_injected++;
	log_info("tcp: fault: cutting connection to %s after frame %llu", c->name,
		 (unsigned long long)n);
	if (shutdown(c->fd, SHUT_RDWR) < 0)
		log_warn("tcp: %s: shutdown: %m", c->name);
	tcp_close(c, -ECONNRESET);
	return true;
}

/* Lines an anonymous connection causes (anyone may open one) go through a
 * token bucket; a link's through another: its peer, buggy or hostile, may
 * reconnect and break its stream at will (tests/test_netfuzz.c). */
static struct log_limit stranger_log = LOG_LIMIT_INIT("tcp: connections without a link", 10, 1);
static struct log_limit link_conn_log = LOG_LIMIT_INIT("tcp: link connections", 10, 0.2);

#define conn_log(c, lvl, ...) do { \
		if ((c)->ctx) \
			log_limited(&link_conn_log, (lvl), __VA_ARGS__); \
		else \
			log_limited(&stranger_log, (lvl), __VA_ARGS__); \
	} while (0)

/* The stream of @c broke the protocol (@rc): a link's is logged here; a
 * stranger's goes to the link layer's stranger() (counted, logged with a
 * bound), unless the link layer refused it itself (and said why).  Then
 * the connection is closed. */
static void stream_refused(struct xport_conn *c, int rc)
{
	const struct xport_upcalls *up = c->x->base.up;

	if (c->ctx)
		conn_log(c, LOG_LVL_WARN, "tcp: %s: bad stream: %s", c->name, strerror(-rc));
	else if (!c->link_refused && up->stranger)
		up->stranger(&c->x->base, c, rc, c->first_byte);
	else if (!c->link_refused)
		conn_log(c, LOG_LVL_WARN, "tcp: %s: bad stream: %s", c->name, strerror(-rc));
	tcp_close(c, rc);
}

/* Hand up every whole frame in the buffer.  Returns 0 or -errno. */
static int parse_frames(struct xport_conn *c)
{
	const struct xport_upcalls *up = c->x->base.up;
	size_t off = 0;
	int rc = 0;

	while (c->state == TCP_UP) {
		struct sl_wire_frame f;
		size_t need;

		if (off < c->rx_len)
			c->first_byte = c->rx[off];
		rc = sl_wire_decode_hdr(c->rx + off, c->rx_len - off, &f);
		if (rc == -EAGAIN) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		if (f.type == SL_WIRE_WRITE) {
			size_t avail = c->rx_len - off - f.hdr_len;

			/* Counted at its header, which is consumed here once:
			 * its payload may still be on its way. */
			if (fault_cut(c)) {
				rc = -ECONNRESET;
				break;
			}
			rc = write_begin(c, &f, c->rx + off + f.hdr_len, avail);
			off += f.hdr_len + (avail < f.payload_len ? avail : f.payload_len);
			if (rc < 0 || c->wr_left)
				break;
			continue;
		}
		if (f.payload_len > c->rx_max) {
			/* Refuse before buffering: an anonymous peer must not
			 * make us hold 16 MiB per connection. */
			rc = -EMSGSIZE;
			break;
		}
		need = (size_t)f.hdr_len + f.payload_len;
		if (c->rx_len - off < need) {
			if (need > c->rx_cap) {
				/* Bounded by SL_WIRE_PAYLOAD_MAX, checked by
				 * the decoder. */
				uint8_t *nb = malloc(need);

				if (!nb) {
					rc = -ENOMEM;
					break;
				}
				memcpy(nb, c->rx + off, c->rx_len - off);
				free(c->rx);
				c->rx = nb;
				c->rx_cap = need;
				c->rx_len -= off;
				off = 0;
			}
			rc = 0;
			break;
		}
		/* Counted only whole: an incomplete frame's header is
		 * decoded again on the next read. */
		if (fault_cut(c)) {
			rc = -ECONNRESET;
			break;
		}
		rc = up->recv(&c->x->base, c, c->ctx, &f, c->rx + off + f.hdr_len);
		if (rc < 0) {
			c->link_refused = !c->ctx;
			break;
		}
		off += need;
		rc = 0;
		if (c->tls_rx_next) {
			/* The upcall started TLS: what follows is records, and
			 * the reads before stopped at this frame's end. */
			c->tls_rx_next = false;
			c->tls_rx = true;
			rc = off == c->rx_len ? 0 : -EPROTO;
			break;
		}
	}
	if (off) {
		memmove(c->rx, c->rx + off, c->rx_len - off);
		c->rx_len -= off;
	}
	return rc;
}

/* read(2) of the socket, or of TLS records' plaintext once they come. */
static ssize_t conn_read(struct xport_conn *c, void *buf, size_t len)
{
	return c->tls_rx ? tls_conn_read(c->tls, buf, len) : read(c->fd, buf, len);
}

/* Read the rest of an RDMA write straight into place.  Returns bytes
 * read (> 0), 0 at EOF, -EAGAIN, or -errno. */
static ssize_t read_write_payload(struct xport_conn *c)
{
	ssize_t r;
	int rc;

	/* Revoked or deregistered while the write was on its way: the
	 * memory may be someone else's now, so not a place to write. */
	if (!c->wr_discard &&
	    write_check(c, c->wr_rkey, (uintptr_t)c->wr_dst, c->wr_left) != GRANT_OK) {
		rc = write_refuse(c, GRANT_REVOKED);
		if (rc < 0)
			return rc;
	}
	if (c->wr_discard) {
		/* While a write's payload is read, the buffer holds nothing
		 * (parse_frames consumed it all): a scratch area. */
		r = conn_read(c, c->rx, c->wr_left < c->rx_cap ? c->wr_left : c->rx_cap);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ?
			       -EAGAIN : -errno;
		if (r > 0)
			c->rx_at = ev_now(c->x->base.loop);
		c->wr_left -= (uint64_t)r;
		if (!c->wr_left)
			c->wr_discard = false;
		return r;
	}
	r = conn_read(c, c->wr_dst, c->wr_left);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
	if (r > 0)
		c->rx_at = ev_now(c->x->base.loop);
	c->wr_dst += r;
	c->wr_left -= (uint64_t)r;
	if (r > 0 && c->wr_left == 0 && (rc = write_placed(c)) < 0)
		return rc;
	return r;
}

static void tcp_read(struct xport_conn *c)
{
	bool header_only;
	size_t want;
	int i, rc;

	for (i = 0; i < TCP_READS_PER_EVENT && c->state == TCP_UP; i++) {
		ssize_t r;

		if (c->wr_left) {
			r = read_write_payload(c);
			if (r == -EAGAIN)
				return;
			if (r < 0) {
				if (c->state != TCP_CLOSED) {
					log_warn("tcp: %s: write placement: %s", c->name,
						 strerror((int)-r));
					tcp_close(c, (int)r);
				}
				return;
			}
			if (r == 0) {
				conn_log(c, LOG_LVL_INFO, "tcp: %s: closed by peer", c->name);
				tcp_close(c, -ECONNRESET);
				return;
			}
			if (c->wr_left)
				continue;
			/* Frames may already wait in the buffer behind it. */
			rc = parse_frames(c);
			if (rc < 0) {
				if (c->state != TCP_CLOSED) {
					conn_log(c, LOG_LVL_WARN, "tcp: %s: bad stream: %s", c->name,
						 strerror(-rc));
					tcp_close(c, rc);
				}
				return;
			}
			continue;
		}
		want = c->rx_cap - c->rx_len;
		/* Writes come in trains: read just the next header, so that
		 * a following WRITE's payload goes straight into place
		 * instead of through the buffer and a memcpy. */
		header_only = c->expect_write && c->rx_len < SL_WIRE_WRITE_LEN;
		if (header_only)
			want = SL_WIRE_WRITE_LEN - c->rx_len;
		/* Before TLS, stop at each AUTH frame's end: the records that
		 * follow the last one must not be read as frames. */
		if (c->x->tls && !c->tls_rx && c->rx_len < SL_WIRE_AUTH_LEN &&
		    want > SL_WIRE_AUTH_LEN - c->rx_len)
			want = SL_WIRE_AUTH_LEN - c->rx_len;
		c->expect_write = false;
		r = conn_read(c, c->rx + c->rx_len, want);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			conn_log(c, LOG_LVL_INFO, "tcp: %s: read: %m", c->name);
			tcp_close(c, -errno);
			return;
		}
		if (r == 0) {
			conn_log(c, LOG_LVL_INFO, "tcp: %s: closed by peer", c->name);
			tcp_close(c, -ECONNRESET);
			return;
		}
		c->rx_at = ev_now(c->x->base.loop);
		c->rx_len += (size_t)r;
		rc = parse_frames(c);
		if (rc < 0) {
			if (c->state != TCP_CLOSED)
				stream_refused(c, rc);
			return;
		}
		if (!header_only && c->rx_len < c->rx_cap && (size_t)r < c->rx_cap / 2 &&
		    !(c->tls_rx && tls_conn_pending(c->tls)))
			return;	/* socket drained */
	}
	/* Records OpenSSL holds already raise no event: come back. */
	if (c->tls_rx && c->state == TCP_UP && tls_conn_pending(c->tls))
		ev_feed_event(c->x->base.loop, &c->rw, EV_READ);
}

/* ---- connection state ---- */

static void connect_done(struct xport_conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	const struct xport_upcalls *up = c->x->base.up;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	ev_io_stop(c->x->base.loop, &c->ww);
	if (err) {
		c->state = TCP_CLOSED;
		close(c->fd);
		c->fd = -1;
		c->zombie = true;
		up->connected(c, c->ctx, -err);
		conn_put(c);
		return;
	}
	c->state = TCP_UP;
	ev_io_start(c->x->base.loop, &c->rw);
	up->connected(c, c->ctx, 0);
}

static void tcp_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct xport_conn *c = w->data;

	(void)loop;
	c->busy++;
	if (c->state == TCP_CONNECTING) {
		connect_done(c);
	} else {
		/* Send completions before received frames. */
		if ((revents & EV_WRITE) || ev_is_active(&c->ww))
			tcp_flush(c);
		if (revents & EV_READ)
			tcp_read(c);
		/* A TLS handshake that the read moved on may let frames go,
		 * or have sealed a flight that the socket did not take. */
		if (c->tls && c->state == TCP_UP && !ev_is_active(&c->ww) &&
		    ((c->tls_tx && c->sq_sent != c->sq_tail) || tls_conn_wants_write(c->tls)))
			tcp_flush(c);
	}
	conn_put(c);
}

static void tcp_close(struct xport_conn *c, int err)
{
	struct ev_loop *loop = c->x->base.loop;

	if (c->state == TCP_CLOSED)
		return;
	c->state = TCP_CLOSED;
	ev_io_stop(loop, &c->rw);
	ev_io_stop(loop, &c->ww);
	ev_timer_stop(loop, &c->hello_w);
	ev_timer_stop(loop, &c->done_w);
	c->wr_left = 0;
	c->wr_discard = false;
	/* The grants die with the connection. */
	c->x->st.grants -= c->grants.live;
	grant_table_free(&c->grants);
	/* An abortive close (RST, unsent bytes discarded), as a QP in error:
	 * after a partition heals, the kernel must not go on delivering
	 * frames of a connection the link gave up (the new connection sends
	 * what the peer lacks; a frame from the old one could arrive after
	 * the link failed its send for good).  @err 0 is the orderly close
	 * of a stopping daemon: its last bytes (the BYE) must arrive. */
	if (c->fd >= 0 && err != 0 &&
	    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &(struct linger){ .l_onoff = 1 },
		       sizeof(struct linger)) < 0)
		log_warn("tcp: %s: SO_LINGER: %m", c->name);
	tls_conn_free(c->tls, err == 0);
	c->tls = NULL;
	c->tls_tx = c->tls_rx = c->tls_rx_next = false;
	if (c->fd >= 0 && close(c->fd) < 0)
		log_warn("tcp: %s: close: %m", c->name);
	c->fd = -1;
	c->busy++;
	/* Flush errors for everything still queued, like IBV_WC_WR_FLUSH_ERR:
	 * a frame written whole may have reached the peer, one that was not
	 * cannot have (the peer acts on whole frames). */
	complete_head(c, c->sq_sent - c->sq_head, err ? err : -ECONNRESET);
	complete_head(c, c->sq_tail - c->sq_head, XPORT_WR_UNSENT);
	c->x->base.up->closed(c, c->ctx, err);
	c->zombie = true;
	conn_put(c);
	conn_put(c);	/* the owner's reference */
}

static void tcp_set_ctx(struct xport_conn *c, void *ctx)
{
	c->ctx = ctx;
	if (ctx)
		ev_timer_stop(c->x->base.loop, &c->hello_w);
}

static void tcp_set_rx_limit(struct xport_conn *c, uint32_t bytes)
{
	c->rx_max = bytes;
}

static void hello_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct xport_conn *c = w->data;

	(void)loop;
	(void)revents;
	conn_log(c, LOG_LVL_WARN, "tcp: %s: no HELLO within %.0f s; closing", c->name,
		 XPORT_HELLO_TIMEOUT);
	c->busy++;
	tcp_close(c, -ETIMEDOUT);
	conn_put(c);
}

static int tcp_start_tls(struct xport_conn *c, bool server, const uint8_t *psk)
{
	if (!c->x->tls || c->tls)
		return -EOPNOTSUPP;
	if (c->state != TCP_UP)
		return -ENOTCONN;
	c->tls = tls_conn_new(c->x->tls, c->fd, server, psk, c->name);
	if (!c->tls)
		return -ENOMEM;
	c->tls_from = c->sq_tail;
	c->tls_rx_next = true;
	return 0;
}

static unsigned tcp_tls_state(const struct xport_conn *c)
{
	bool tx, rx;

	if (!c->tls || !tls_conn_up(c->tls, &tx, &rx))
		return 0;
	return XPORT_TLS_UP | (tx ? XPORT_TLS_KTLS_TX : 0) | (rx ? XPORT_TLS_KTLS_RX : 0);
}

static const char *tcp_peer_name(const struct xport_conn *c)
{
	return c->name;
}

static void tcp_buffer_bytes(const struct xport_conn *c, uint64_t *tx_bytes,
			     uint64_t *rx_bytes)
{
	*tx_bytes = (uint64_t)(c->sq_mask + 1) * sizeof(*c->sq);
	*rx_bytes = c->rx_cap;
}

static ev_tstamp tcp_last_rx(const struct xport_conn *c)
{
	return c->rx_at;
}

/* ---- setup ---- */

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tcp_xport *x = w->data;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < 16; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct xport_conn *c;
		int fd = accept4(x->listen_fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED &&
			    !accept_pause_on_error(&x->pause, errno, "tcp listener"))
				log_warn("tcp: accept: %m");
			return;
		}
		set_sockopts(x, fd);
		c = conn_new(x, fd, TCP_UP);
		if (!c) {
			log_warn("tcp: out of memory for a connection");
			close(fd);
			continue;
		}
		name_from_sockaddr(c, (struct sockaddr *)&ss);
		ev_io_start(x->base.loop, &c->rw);
		ev_timer_start(x->base.loop, &c->hello_w);
		x->base.up->accepted(&x->base, c);
	}
}

/* Dial from @sa (the listening address, port cleared) unless it is a
 * wildcard address. */
static void dial_source_set(struct tcp_xport *x, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage ss;

	if (len > sizeof(ss))
		return;
	memcpy(&ss, sa, len);
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		if (in->sin_addr.s_addr == htonl(INADDR_ANY))
			return;
		in->sin_port = 0;
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			return;
		in6->sin6_port = 0;
	} else {
		return;
	}
	x->dial_src = ss;
	x->dial_src_len = len;
}

static int tcp_listen(struct xport *xb, const char *host, uint16_t port)
{
	struct tcp_xport *x = to_tcp(xb);
	struct addrinfo *res, *ai;
	int rc, fd = -1, one = 1;

	rc = xport_resolve(host, port, &res);
	if (rc)
		return rc;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		/* Buffer sizes must be set before listen(): an accepted
		 * socket inherits them, and its window scale is fixed in the
		 * handshake (tcp(7)); set later, a small buffer stalled each
		 * burst until a 200 ms window probe. */
		set_sockopts(x, fd);
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
			rc = -errno;
			close(fd);
			fd = -1;
			continue;
		}
		break;
	}
	if (fd >= 0)
		dial_source_set(x, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(res);
	if (fd < 0)
		return rc;
	x->listen_fd = fd;
	ev_io_init(&x->accept_w, accept_cb, fd, EV_READ);
	x->accept_w.data = x;
	ev_io_start(x->base.loop, &x->accept_w);
	accept_pause_init(&x->pause, x->base.loop, &x->accept_w);
	return 0;
}

static int tcp_connect(struct xport *xb, const char *host, uint16_t port, void *ctx,
		       struct xport_conn **c_p)
{
	struct tcp_xport *x = to_tcp(xb);
	struct addrinfo *res;
	struct xport_conn *c;
	int rc, fd;

	rc = xport_resolve(host, port, &res);
	if (rc)
		return rc;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto err_free;
	}
	set_sockopts(x, fd);
	if (x->dial_src_len && x->dial_src.ss_family == res->ai_family &&
	    bind(fd, (const struct sockaddr *)&x->dial_src, x->dial_src_len) < 0) {
		rc = -errno;
		goto err_close;
	}
	c = conn_new(x, fd, TCP_CONNECTING);
	if (!c) {
		rc = -ENOMEM;
		goto err_close;
	}
	name_from_sockaddr(c, res->ai_addr);
	c->ctx = ctx;
	if (connect(fd, res->ai_addr, res->ai_addrlen) < 0 && errno != EINPROGRESS) {
		rc = -errno;
		conn_free(c);
		goto err_close;
	}
	freeaddrinfo(res);
	/* Completion (success or refusal) is reported from the loop. */
	ev_io_start(x->base.loop, &c->ww);
	*c_p = c;
	return 0;

err_close:
	close(fd);
err_free:
	freeaddrinfo(res);
	return rc;
}

static void tcp_destroy(struct xport *xb)
{
	struct tcp_xport *x = to_tcp(xb);
	struct xport_conn *c;

	if (!x)
		return;
	if (x->listen_fd >= 0) {
		ev_io_stop(x->base.loop, &x->accept_w);
		accept_pause_stop(&x->pause);
		close(x->listen_fd);
	}
	while ((c = LIST_FIRST(&x->conns))) {
		if (c->state == TCP_CONNECTING) {
			ev_io_stop(x->base.loop, &c->ww);
			close(c->fd);
			c->fd = -1;
			c->state = TCP_CLOSED;
			c->zombie = true;
			c->busy = 1;
			conn_put(c);
		} else if (c->state != TCP_CLOSED) {
			tcp_close(c, -ECONNABORTED);
		} else {
			/* A closed conn still referenced by a caller up the
			 * stack cannot exist at destroy time. */
			conn_free(c);
		}
	}
	if (x->st.mrs)
		log_warn("tcp: %llu memory registrations still live at destroy",
			 (unsigned long long)x->st.mrs);
	tls_ctx_free(x->tls);
	free(x->mrs);
	free(x);
}

static const struct xport_ops tcp_ops = {
	.name = "tcp",
	.short_connections = true,
	.listen = tcp_listen,
	.connect = tcp_connect,
	.post_send = tcp_post_send,
	.post_write = tcp_post_write,
	.flush = tcp_flush,
	.sq_space = tcp_sq_space,
	.sq_outstanding = tcp_sq_outstanding,
	.sq_bytes = tcp_sq_bytes,
	.reg_mr = tcp_reg_mr,
	.dereg_mr = tcp_dereg_mr,
	.grant = tcp_grant,
	.revoke = tcp_revoke,
	.get_stats = tcp_get_stats,
	.set_ctx = tcp_set_ctx,
	.set_rx_limit = tcp_set_rx_limit,
	.close = tcp_close,
	.peer_name = tcp_peer_name,
	.last_rx = tcp_last_rx,
	.buffer_bytes = tcp_buffer_bytes,
	.start_tls = tcp_start_tls,
	.tls_state = tcp_tls_state,
	.destroy = tcp_destroy,
};

struct xport *xport_tcp_create(struct ev_loop *loop, const struct xport_upcalls *up,
			       void *ctx, const struct xport_params *params)
{
	struct tcp_xport *x;

	if (params->sq_depth < 2 || params->max_mr < 1 ||
	    params->max_mr > (1u << (TCP_KEY_IDX_BITS - 1))) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	/* Slots are touched only as they are used, so a large max_mr costs
	 * address space, not memory. */
	x->mrs = calloc(params->max_mr, sizeof(*x->mrs));
	if (!x->mrs) {
		free(x);
		return NULL;
	}
	if (params->tls && !(x->tls = tls_ctx_new())) {
		free(x->mrs);
		free(x);
		errno = EPROTO;
		return NULL;
	}
	x->base.ops = &tcp_ops;
	x->base.loop = loop;
	x->base.up = up;
	x->base.ctx = ctx;
	x->base.params = *params;
	x->listen_fd = -1;
	LIST_INIT(&x->conns);
	return &x->base;
}
