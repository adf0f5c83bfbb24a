/*
 * tcp.c - the tcp transport: verbs semantics (xport.h) over TCP.
 *
 * Each connection has a bounded send queue of frames.  flush() gathers the
 * queue into one writev() of up to TCP_IOV_BATCH frames; a short write keeps
 * the offset into the head frame and arms a write watcher, so the loop never
 * blocks in write() (libfabric issue 5897: a writer stuck on a full socket
 * must not stop the reader).  Reads fill a buffer and hand up every whole
 * frame; a frame cut at any byte resumes on the next read.
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
#include "xport/xport.h"

#define TCP_IOV_BATCH 64		/* frames per writev() */
#define TCP_RX_INITIAL (256u << 10)	/* bytes */
#define TCP_READS_PER_EVENT 8		/* bounded work per wake-up */

struct tcp_wr {
	uint64_t wr_id;
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
	/* Send queue: free-running indices, power-of-two size. */
	struct tcp_wr *sq;
	uint32_t sq_mask;
	uint32_t sq_head;
	uint32_t sq_tail;
	size_t head_sent;	/* bytes of the head frame already written */
	/* Receive buffer: bytes [rx_off, rx_len) are unparsed. */
	uint8_t *rx;
	size_t rx_cap;
	size_t rx_len;
	uint32_t rx_max;	/* largest payload accepted, bytes */
	ev_timer hello_w;	/* accepted and still anonymous */
	unsigned busy;		/* upcall nesting: free is deferred while > 0 */
	bool zombie;		/* closed; free when busy drops to 0 */
	char name[64];
};

struct tcp_xport {
	struct xport base;
	int listen_fd;
	ev_io accept_w;
	struct accept_pause pause;	/* accept() out of fds: back off */
	LIST_HEAD(, xport_conn) conns;
};

static struct tcp_xport *to_tcp(struct xport *x)
{
	return (struct tcp_xport *)x;
}

static void tcp_io_cb(struct ev_loop *loop, ev_io *w, int revents);
static void tcp_close(struct xport_conn *c, int err);
static void hello_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents);

static void conn_put(struct xport_conn *c)
{
	if (--c->busy == 0 && c->zombie) {
		LIST_REMOVE(c, all);
		free(c->sq);
		free(c->rx);
		free(c);
	}
}

static void set_sockopts(int fd)
{
	int one = 1;

	/* Latency matters more than segment count; frames are batched by
	 * writev() already. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		log_warn("tcp: TCP_NODELAY: %m");
}

static struct xport_conn *conn_new(struct tcp_xport *x, int fd, enum tcp_state st)
{
	struct xport_conn *c = calloc(1, sizeof(*c));
	uint32_t depth = 1;

	if (!c)
		return NULL;
	while (depth < x->base.sq_depth)
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
	c->sq_mask = depth - 1;
	c->rx_cap = TCP_RX_INITIAL;
	c->busy = 1;	/* the owner's reference, dropped at close */
	ev_io_init(&c->rw, tcp_io_cb, fd, EV_READ);
	ev_io_init(&c->ww, tcp_io_cb, fd, EV_WRITE);
	ev_timer_init(&c->hello_w, hello_timeout_cb, XPORT_HELLO_TIMEOUT, 0.0);
	c->rw.data = c;
	c->ww.data = c;
	c->hello_w.data = c;
	LIST_INSERT_HEAD(&x->conns, c, all);
	return c;
}

static void name_from_sockaddr(struct xport_conn *c, const struct sockaddr *sa)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(c->name, sizeof(c->name), "%s:%u", host, port);
}

/* ---- send side ---- */

static uint32_t tcp_sq_space(const struct xport_conn *c)
{
	return c->sq_mask + 1 - (c->sq_tail - c->sq_head);
}

static int tcp_post_send(struct xport_conn *c, const struct xport_send_wr *wr)
{
	struct tcp_wr *slot;

	if (c->state == TCP_CLOSED)
		return -ENOTCONN;
	if (wr->hdr_len == 0 || wr->hdr_len > SL_WIRE_HDR_MAX ||
	    (wr->payload_len && !wr->payload))
		return -EINVAL;
	if (tcp_sq_space(c) == 0)
		return -ENOMEM;
	slot = &c->sq[c->sq_tail & c->sq_mask];
	slot->wr_id = wr->wr_id;
	slot->payload = wr->payload;
	slot->payload_len = wr->payload_len;
	slot->hdr_len = wr->hdr_len;
	memcpy(slot->hdr, wr->hdr, wr->hdr_len);
	c->sq_tail++;
	return 0;
}

/* Complete the @n frames at the SQ head with @status, in order.  Slots are
 * freed before each upcall so that the upcall may post again. */
static void complete_head(struct xport_conn *c, uint32_t n, int status)
{
	const struct xport_upcalls *up = c->x->base.up;

	while (n--) {
		uint64_t wr_id = c->sq[c->sq_head & c->sq_mask].wr_id;

		c->sq_head++;
		up->send_done(c, c->ctx, wr_id, status);
	}
}

/* Returns 0 when the SQ is empty, -EAGAIN when the socket is full, or
 * -errno when the connection broke. */
static int write_batch(struct xport_conn *c)
{
	struct iovec iov[2 * TCP_IOV_BATCH];
	uint32_t n = c->sq_tail - c->sq_head, i, done = 0;
	int iovcnt = 0;
	size_t skip = c->head_sent;
	ssize_t w;

	if (n == 0)
		return 0;
	if (n > TCP_IOV_BATCH)
		n = TCP_IOV_BATCH;
	for (i = 0; i < n; i++) {
		struct tcp_wr *wr = &c->sq[(c->sq_head + i) & c->sq_mask];

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
	w = writev(c->fd, iov, iovcnt);
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
			struct tcp_wr *wr = &c->sq[(c->sq_head + i) & c->sq_mask];
			size_t flen = (size_t)wr->hdr_len + wr->payload_len;

			if (left < flen)
				break;
			left -= flen;
			done++;
		}
		c->head_sent = left;
	}
	c->busy++;
	complete_head(c, done, 0);
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
	if (rc == -EAGAIN) {
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

/* Hand up every whole frame in the buffer.  Returns 0 or -errno. */
static int parse_frames(struct xport_conn *c)
{
	const struct xport_upcalls *up = c->x->base.up;
	size_t off = 0;
	int rc = 0;

	while (c->state == TCP_UP) {
		struct sl_wire_frame f;
		size_t need;

		rc = sl_wire_decode_hdr(c->rx + off, c->rx_len - off, &f);
		if (rc == -EAGAIN) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
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
		rc = up->recv(&c->x->base, c, c->ctx, &f, c->rx + off + f.hdr_len);
		if (rc < 0)
			break;
		off += need;
		rc = 0;
	}
	if (off) {
		memmove(c->rx, c->rx + off, c->rx_len - off);
		c->rx_len -= off;
	}
	return rc;
}

static void tcp_read(struct xport_conn *c)
{
	int i, rc;

	for (i = 0; i < TCP_READS_PER_EVENT && c->state == TCP_UP; i++) {
		ssize_t r = read(c->fd, c->rx + c->rx_len, c->rx_cap - c->rx_len);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			log_info("tcp: %s: read: %m", c->name);
			tcp_close(c, -errno);
			return;
		}
		if (r == 0) {
			log_info("tcp: %s: closed by peer", c->name);
			tcp_close(c, -ECONNRESET);
			return;
		}
		c->rx_len += (size_t)r;
		rc = parse_frames(c);
		if (rc < 0) {
			if (c->state != TCP_CLOSED) {
				log_warn("tcp: %s: bad stream: %s", c->name, strerror(-rc));
				tcp_close(c, rc);
			}
			return;
		}
		if (c->rx_len < c->rx_cap && (size_t)r < c->rx_cap / 2)
			return;	/* socket drained */
	}
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
	if (c->fd >= 0 && close(c->fd) < 0)
		log_warn("tcp: %s: close: %m", c->name);
	c->fd = -1;
	c->busy++;
	/* Flush error for everything still queued, like IBV_WC_WR_FLUSH_ERR. */
	complete_head(c, c->sq_tail - c->sq_head, err ? err : -ECONNRESET);
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
	log_warn("tcp: %s: no HELLO within %.0f s; closing", c->name, XPORT_HELLO_TIMEOUT);
	c->busy++;
	tcp_close(c, -ETIMEDOUT);
	conn_put(c);
}

static const char *tcp_peer_name(const struct xport_conn *c)
{
	return c->name;
}

/* ---- setup ---- */

static int resolve(const char *host, uint16_t port, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	char serv[8];
	int rc;

	snprintf(serv, sizeof(serv), "%u", port);
	rc = getaddrinfo(host, serv, &hints, res);
	if (rc)
		return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	return 0;
}

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
		set_sockopts(fd);
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

static int tcp_listen(struct xport *xb, const char *host, uint16_t port)
{
	struct tcp_xport *x = to_tcp(xb);
	struct addrinfo *res, *ai;
	int rc, fd = -1, one = 1;

	rc = resolve(host, port, &res);
	if (rc)
		return rc;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
			rc = -errno;
			close(fd);
			fd = -1;
			continue;
		}
		break;
	}
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

	rc = resolve(host, port, &res);
	if (rc)
		return rc;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto err_free;
	}
	set_sockopts(fd);
	c = conn_new(x, fd, TCP_CONNECTING);
	if (!c) {
		rc = -ENOMEM;
		goto err_close;
	}
	name_from_sockaddr(c, res->ai_addr);
	c->ctx = ctx;
	if (connect(fd, res->ai_addr, res->ai_addrlen) < 0 && errno != EINPROGRESS) {
		rc = -errno;
		LIST_REMOVE(c, all);
		free(c->sq);
		free(c->rx);
		free(c);
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
			LIST_REMOVE(c, all);
			free(c->sq);
			free(c->rx);
			free(c);
		}
	}
	free(x);
}

static const struct xport_ops tcp_ops = {
	.name = "tcp",
	.listen = tcp_listen,
	.connect = tcp_connect,
	.post_send = tcp_post_send,
	.flush = tcp_flush,
	.sq_space = tcp_sq_space,
	.set_ctx = tcp_set_ctx,
	.set_rx_limit = tcp_set_rx_limit,
	.close = tcp_close,
	.peer_name = tcp_peer_name,
	.destroy = tcp_destroy,
};

struct xport *xport_tcp_create(struct ev_loop *loop, const struct xport_upcalls *up,
			       void *ctx, uint32_t sq_depth)
{
	struct tcp_xport *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->base.ops = &tcp_ops;
	x->base.loop = loop;
	x->base.up = up;
	x->base.ctx = ctx;
	x->base.sq_depth = sq_depth ? sq_depth : 1024;
	x->listen_fd = -1;
	LIST_INIT(&x->conns);
	return &x->base;
}
