/*
 * fuzz_daemon.c - the daemon context and fake transport of the fuzz
 * harnesses (see fuzz_daemon.h).
 */
#include "fuzz_daemon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "config.h"
#include "link.h"
#include "log.h"
#include "queue.h"
#include "session.h"
#include "uid_quota.h"
#include "sl_barrier.h"
#include "sluice.h"

#define FAKE_CONNS_MAX 8

struct fake_wr {
	uint64_t wr_id;
	uint32_t bytes;		/* payload, for sq_bytes */
};

struct xport_conn {
	struct xport *x;
	void *ctx;
	bool used;
	bool open;		/* not closed by either side */
	bool connecting;	/* connected() not yet delivered */
	uint32_t rx_limit;	/* payload bytes; an AUTH's "who" until set */
	struct fake_wr *wrs;	/* posted, not yet completed, in order */
	uint32_t n_wrs;
	char name[32];
};

static struct xport fake_x;
static struct xport_conn conns[FAKE_CONNS_MAX];
static uint64_t frames_posted;
static struct xport_conn *dialled;

static struct xport_conn *conn_new(void *ctx)
{
	unsigned i;

	for (i = 0; i < FAKE_CONNS_MAX; i++) {
		struct xport_conn *c = &conns[i];

		if (c->used)
			continue;
		memset(c, 0, sizeof(*c));
		c->wrs = calloc(fake_x.params.sq_depth, sizeof(*c->wrs));
		if (!c->wrs)
			return NULL;
		c->x = &fake_x;
		c->ctx = ctx;
		c->used = c->open = true;
		c->rx_limit = SL_WIRE_AUTH_WHO_MAX;	/* as tcp's: an AUTH's "who" */
		snprintf(c->name, sizeof(c->name), "fake#%u", i);
		return c;
	}
	return NULL;
}

static void complete_all(struct xport_conn *c, int status)
{
	/* Completions may post (not on a closed conn): take them in order. */
	while (c->n_wrs) {
		struct fake_wr wr = c->wrs[0];

		memmove(c->wrs, c->wrs + 1, (c->n_wrs - 1) * sizeof(*c->wrs));
		c->n_wrs--;
		fake_x.up->send_done(c, c->ctx, wr.wr_id, status);
	}
}

static int fake_listen(struct xport *x, const char *host, uint16_t port)
{
	return 0;
}

static int fake_connect(struct xport *x, const char *host, uint16_t port, void *ctx,
			struct xport_conn **c_p)
{
	struct xport_conn *c = conn_new(ctx);

	if (!c)
		return -ENOMEM;
	c->connecting = true;
	dialled = c;
	*c_p = c;
	return 0;
}

static int post_wr(struct xport_conn *c, uint64_t wr_id, uint32_t bytes)
{
	if (!c->open || c->connecting)
		return -ENOTCONN;
	if (c->n_wrs >= fake_x.params.sq_depth)
		return -ENOMEM;
	c->wrs[c->n_wrs++] = (struct fake_wr){ .wr_id = wr_id, .bytes = bytes };
	return 0;
}

static int fake_post_send(struct xport_conn *c, const struct xport_send_wr *wr)
{
	struct sl_wire_frame f;
	int rc;

	if (wr->hdr_len > SL_WIRE_HDR_MAX)
		return -EINVAL;
	/* Our own frames must be ones our decoder takes: the peer runs it. */
	rc = sl_wire_decode_hdr(wr->hdr, wr->hdr_len, &f);
	if (rc != (int)wr->hdr_len || f.payload_len != wr->payload_len) {
		fprintf(stderr, "fuzz: the link posted a frame its decoder refuses (%d)\n", rc);
		abort();
	}
	rc = post_wr(c, wr->wr_id, wr->payload_len);
	if (rc == 0)
		frames_posted++;
	return rc;
}

static void fake_flush(struct xport_conn *c)
{
}

static int fake_post_write(struct xport_conn *c, const struct xport_write_wr *wr)
{
	if (wr->len > SL_WIRE_PAYLOAD_MAX)
		return -EINVAL;
	return post_wr(c, wr->wr_id, wr->len);
}

static uint32_t fake_sq_space(const struct xport_conn *c)
{
	return fake_x.params.sq_depth - c->n_wrs;
}

static uint32_t fake_sq_outstanding(const struct xport_conn *c)
{
	return c->n_wrs;
}

static uint64_t fake_sq_bytes(const struct xport_conn *c)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < c->n_wrs; i++)
		n += c->wrs[i].bytes;
	return n;
}

static uint32_t next_key = 1;

static int fake_reg_mr(struct xport *x, void *addr, uint64_t len, uint64_t *handle,
		       uint32_t *lkey, uint32_t *rkey)
{
	if (len == 0)
		return -EINVAL;
	*handle = next_key;
	*lkey = *rkey = next_key++;
	return 0;
}

static void fake_dereg_mr(struct xport *x, uint64_t handle)
{
}

static void fake_get_stats(const struct xport *x, struct xport_stats *st)
{
	memset(st, 0, sizeof(*st));
}

static void fake_set_ctx(struct xport_conn *c, void *ctx)
{
	c->ctx = ctx;
}

static void fake_set_rx_limit(struct xport_conn *c, uint32_t bytes)
{
	c->rx_limit = bytes;
}

/* As tcp_close: every WR completes, then closed(), at once. */
static void fake_close(struct xport_conn *c, int err)
{
	if (!c->open)
		return;
	c->open = false;
	c->connecting = false;
	complete_all(c, XPORT_WR_UNSENT);
	fake_x.up->closed(c, c->ctx, err);
	if (dialled == c)
		dialled = NULL;
}

static const char *fake_peer_name(const struct xport_conn *c)
{
	return c->name;
}

static void fake_destroy(struct xport *x)
{
}

static const struct xport_ops fake_ops = {
	.name = "fuzz",
	.short_connections = false,
	.listen = fake_listen,
	.connect = fake_connect,
	.post_send = fake_post_send,
	.flush = fake_flush,
	.post_write = fake_post_write,
	.sq_space = fake_sq_space,
	.sq_outstanding = fake_sq_outstanding,
	.sq_bytes = fake_sq_bytes,
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
	.get_stats = fake_get_stats,
	.set_ctx = fake_set_ctx,
	.set_rx_limit = fake_set_rx_limit,
	.close = fake_close,
	.peer_name = fake_peer_name,
	.destroy = fake_destroy,
};

/* ---- the harness's side ---- */

struct xport_conn *fuzz_xport_accept(struct daemon *d)
{
	struct xport_conn *c = conn_new(NULL);

	if (c)
		fake_x.up->accepted(&fake_x, c);
	return c;
}

struct xport_conn *fuzz_xport_dialled(struct daemon *d)
{
	return dialled;
}

bool fuzz_xport_open(const struct xport_conn *c)
{
	return c && c->open;
}

int fuzz_xport_deliver(struct xport_conn *c, const struct sl_wire_frame *f,
		       const uint8_t *payload)
{
	int rc;

	if (!c->open || c->connecting)
		return -ENOTCONN;
	if (f->payload_len > c->rx_limit) {
		fake_close(c, -EPROTO);
		return -EPROTO;
	}
	if (f->type == SL_WIRE_WRITE) {
		/* The transport's own frame (tcp.c checks it against its MR
		 * table; here anything lands): the link sees placement and
		 * the immediate. */
		if (c->ctx && f->payload_len)
			fake_x.up->write_placed(c, c->ctx, f->u.write.rkey, f->u.write.raddr,
						f->payload_len);
		rc = f->u.write.has_imm ? fake_x.up->write_imm(c, c->ctx, f->u.write.imm) : 0;
	} else {
		rc = fake_x.up->recv(&fake_x, c, c->ctx, f, payload);
	}
	if (rc < 0)
		fake_close(c, rc);
	return rc;
}

int fuzz_xport_deliver_imm(struct xport_conn *c, uint32_t imm)
{
	int rc;

	if (!c->open || c->connecting)
		return -ENOTCONN;
	rc = fake_x.up->write_imm(c, c->ctx, imm);
	if (rc < 0)
		fake_close(c, rc);
	return rc;
}

void fuzz_xport_break(struct xport_conn *c)
{
	if (c)
		fake_close(c, -ECONNRESET);
}

unsigned fuzz_xport_pump(struct daemon *d)
{
	unsigned i, n = 0;

	for (i = 0; i < FAKE_CONNS_MAX; i++) {
		struct xport_conn *c = &conns[i];

		if (!c->used)
			continue;
		if (c->open && c->connecting) {
			c->connecting = false;
			fake_x.up->connected(c, c->ctx, 0);
			n++;
		}
		if (c->open && c->n_wrs) {
			n += c->n_wrs;
			complete_all(c, 0);
		}
		if (!c->open) {
			free(c->wrs);
			c->wrs = NULL;
			c->used = false;
		}
	}
	return n;
}

uint64_t fuzz_xport_frames_posted(void)
{
	return frames_posted;
}

/* ---- the daemon ---- */

static struct daemon dm;
static bool made;
static char runtime_dir[CONFIG_PATH_MAX];

static void add_peer(struct config *c, const char *name, uint16_t port)
{
	struct peer_conf *p = &c->peers[c->n_peers++];

	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->host, sizeof(p->host), "127.0.0.1");
	p->port = port;
	p->node_id = sl_node_id(name);
}

static void remove_runtime_dir(void)
{
	char path[CONFIG_PATH_MAX + 32];

	if (!runtime_dir[0])
		return;
	admin_close(&dm);
	session_close_listener(&dm);
	snprintf(path, sizeof(path), "%s/%s", runtime_dir, SLD_LOCK_NAME);
	(void)unlink(path);
	(void)rmdir(runtime_dir);
}

static void die(const char *what)
{
	fprintf(stderr, "fuzz: cannot set up the daemon context: %s\n", what);
	abort();
}

struct daemon *fuzz_daemon(bool sockets)
{
	struct daemon *d = &dm;
	const char *tmp = getenv("TMPDIR");

	if (made)
		return d;
	made = true;
	if (daemon_init(d))
		die("daemon_init");
	/* Quiet: every refusal of a hostile input is logged. */
	log_set_level(getenv("FUZZ_LOG") ? LOG_LVL_DEBUG : LOG_LVL_ERR);
	d->cfg.log_level = log_get_level();
	snprintf(d->cfg.node_name, sizeof(d->cfg.node_name), FUZZ_NODE);
	d->cfg.node_id = sl_node_id(FUZZ_NODE);
	d->cfg.listen_set = true;
	snprintf(d->cfg.listen_host, sizeof(d->cfg.listen_host), "127.0.0.1");
	d->cfg.listen_port = 1;
	/* Small and few: a queue per input must be cheap. */
	d->cfg.arena_bytes = 1u << 20;
	d->cfg.sq_depth = 64;
	d->cfg.eager_credits = 16;
	d->cfg.link_backlog_max = 64;
	d->cfg.unexpected_max_bytes = 256u << 10;
	add_peer(&d->cfg, "fuzz-a", 2);
	add_peer(&d->cfg, "fuzz-c", 3);
	d->incarnation = 0x1122334455667788ull;
	d->loop = ev_loop_new(EVFLAG_AUTO);
	if (!d->loop)
		die("ev_loop_new");
	d->started = ev_now(d->loop);
	loop_watch_init(d);
	d->ports = calloc(SLD_PORTS, sizeof(*d->ports));
	if (!d->ports)
		die("out of memory");
	fake_x.ops = &fake_ops;
	fake_x.loop = d->loop;
	fake_x.up = &link_upcalls;
	fake_x.ctx = d;
	fake_x.params.sq_depth = d->cfg.sq_depth;
	fake_x.params.max_mr = d->cfg.max_mr;
	d->xp = &fake_x;
	if (daemon_rcache_init(d))
		die("daemon_rcache_init");
	if (sockets) {
		snprintf(runtime_dir, sizeof(runtime_dir), "%s/sluice-fuzz.XXXXXX",
			 tmp && tmp[0] && strlen(tmp) < 48 ? tmp : "/tmp");
		if (!mkdtemp(runtime_dir))
			die("mkdtemp");
		snprintf(d->cfg.runtime_dir, sizeof(d->cfg.runtime_dir), "%s", runtime_dir);
		d->cfg.admin_group[0] = d->cfg.client_group[0] = '\0';
		if (session_listen(d) || admin_listen(d))
			die("session_listen or admin_listen");
		atexit(remove_runtime_dir);
	}
	daemon_progress_init(d);
	return d;
}

uint32_t fuzz_peer_dialing_us(const struct daemon *d)
{
	/* The lower id dials (link.h). */
	return d->cfg.peers[0].node_id < d->cfg.node_id ? d->cfg.peers[0].node_id
							 : d->cfg.peers[1].node_id;
}

uint32_t fuzz_peer_we_dial(const struct daemon *d)
{
	return d->cfg.peers[0].node_id > d->cfg.node_id ? d->cfg.peers[0].node_id
							 : d->cfg.peers[1].node_id;
}

void fuzz_links_setup(struct daemon *d)
{
	if (link_setup_all(d))
		die("link_setup_all");
}

void fuzz_links_teardown(struct daemon *d)
{
	unsigned i;

	/* Down first, so that teardown has no BYE to wait for. */
	for (i = 0; i < FAKE_CONNS_MAX; i++)
		if (conns[i].used && conns[i].open)
			fake_close(&conns[i], -ECONNRESET);
	fuzz_xport_pump(d);
	/* As daemon_teardown: stopping, so that the connections the
	 * teardown closes arm no redial or timeout on links it frees. */
	d->stopping = true;
	link_teardown_all(d);
	d->stopping = false;
	fuzz_xport_pump(d);
}

/* ---- clients ---- */

struct session *fuzz_session_new(struct daemon *d)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		die("out of memory");
	s->d = d;
	s->fd = -1;
	s->pid = getpid();
	TAILQ_INIT(&s->queues);
	/* Counted under its uid, as accept_cb does (session_destroy
	 * uncounts it). */
	if (uid_usage_attach(d, getuid(), &s->uq))
		die("uid_usage_attach");
	TAILQ_INSERT_TAIL(&d->sessions, s, link);
	return s;
}

struct queue *fuzz_queue_open(struct session *s, uint32_t port, uint32_t depth)
{
	struct queue *q;

	if (queue_create(s->d, s, port, depth, &q))
		return NULL;
	TAILQ_INSERT_TAIL(&s->queues, q, by_session);
	s->n_queues++;
	s->arena_bytes += q->arena_size;
	s->uq->queues++;
	s->uq->arena_bytes += q->arena_size;
	return q;
}

void fuzz_sqe_post(struct queue *q, const struct sl_sqe *sqe)
{
	uint32_t tail = SL_READ_ONCE(q->sq.shm_tail);

	memcpy(sl_ring_slot(&q->sq, tail), sqe, sizeof(*sqe));
	sl_store_release(q->sq.shm_tail, tail + 1);
}

void fuzz_cq_consume(struct queue *q)
{
	sl_store_release(q->cq.shm_head, SL_READ_ONCE(q->cq.shm_tail));
}

void fuzz_session_free(struct session *s)
{
	struct session *it;
	struct queue *q;

	/* A corrupt ring makes the daemon drop the client itself (and
	 * free @s: only its address is compared). */
	TAILQ_FOREACH(it, &dm.sessions, link)
		if (it == s)
			break;
	if (!it)
		return;
	while ((q = TAILQ_FIRST(&s->queues))) {
		TAILQ_REMOVE(&s->queues, q, by_session);
		s->uq->queues--;
		s->uq->arena_bytes -= q->arena_size;
		queue_kill(q);
	}
	uid_usage_detach(&dm, s->uq);
	TAILQ_REMOVE(&dm.sessions, s, link);
	free(s);
}

static void post_receives(struct queue *q, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct sl_sqe sqe = {
			.opcode = SL_SQE_OP_RECV,
			.peer = SL_ANY_SOURCE,
			.tag_mask = 0,
			.addr = (uint64_t)i * FUZZ_RECV_BYTES,
			.len = FUZZ_RECV_BYTES,
			.user_ctx = i + 1,
		};

		fuzz_sqe_post(q, &sqe);
	}
}

static void post_sends(struct queue *q, uint32_t node, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct sl_sqe sqe = {
			.opcode = SL_SQE_OP_SEND,
			.peer = { node, FUZZ_PORT },
			.tag = i,
			.addr = 3u * FUZZ_RECV_BYTES,
			.len = i & 1 ? FUZZ_RNDV_BYTES : FUZZ_EAGER_BYTES,
			.user_ctx = 100 + i,
		};

		fuzz_sqe_post(q, &sqe);
	}
}

void fuzz_link_traffic(struct queue *q, uint32_t node, uint8_t mode)
{
	post_receives(q, (mode >> 1) & 3u);
	post_sends(q, node, (mode >> 3) & 3u);
}

void fuzz_progress(struct daemon *d, unsigned rounds)
{
	while (rounds--) {
		daemon_progress(d);
		link_flush_all(d, true);
		fuzz_xport_pump(d);
		daemon_flush_cq_wakeups(d);
	}
}
