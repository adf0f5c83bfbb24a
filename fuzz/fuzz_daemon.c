/*
 * fuzz_daemon.c - the daemon context and fake transport of the fuzz
 * harnesses (see fuzz_daemon.h).
 */
#include "fuzz_daemon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "config.h"
#include "engine.h"
#include "link.h"
#include "link_auth.h"
#include "log.h"
#include "peer_auth.h"
#include "queue.h"
#include "session.h"
#include "uid_quota.h"
#include "sl_barrier.h"
#include "sluice.h"

#define FAKE_CONNS_MAX 8
#define FAKE_GRANTS_MAX 16	/* per connection */

/* A range the peer may write (xport.h grant): tcp.c's rule, by hand. */
struct fake_grant {
	uint32_t rkey;		/* 0: free slot */
	uint64_t addr, len;
};

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
	/* The handshake on it, for the proofs fuzz_xport_deliver fills in:
	 * the daemon's last AUTH, and the input's step 1. */
	bool auth_out_seen, auth_in_seen;
	struct sl_wire_frame auth_out, auth_in;
	struct fake_grant grants[FAKE_GRANTS_MAX];
	uint32_t grants_made;	/* names the next: FUZZ_GRANT_RKEY0 + n */
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
		/* The configured peers' address: link_auth.c takes a dialer
		 * only from there. */
		snprintf(c->name, sizeof(c->name), "127.0.0.1:%u", 40000 + i);
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
	if (rc == 0 && f.type == SL_WIRE_AUTH) {
		c->auth_out = f;
		c->auth_out_seen = true;
	}
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

static int fake_grant(struct xport_conn *c, uint64_t mr_handle, uint64_t addr, uint64_t len,
		      uint32_t *rkey)
{
	unsigned i;

	if (!c->open)
		return -ENOTCONN;
	if (len == 0)
		return -EINVAL;
	for (i = 0; i < FAKE_GRANTS_MAX; i++) {
		if (c->grants[i].rkey)
			continue;
		c->grants[i] = (struct fake_grant){ .rkey = FUZZ_GRANT_RKEY0 + c->grants_made++,
						    .addr = addr, .len = len };
		*rkey = c->grants[i].rkey;
		return 0;
	}
	return -ENOMEM;
}

static void fake_revoke(struct xport_conn *c, uint32_t rkey)
{
	for (unsigned i = 0; i < FAKE_GRANTS_MAX; i++)
		if (rkey && c->grants[i].rkey == rkey)
			c->grants[i].rkey = 0;
}

/* A WRITE's raddr below its grant's address is an offset into it
 * (fuzz_daemon.h): the input cannot know where the client's buffer is. */
static uint64_t write_raddr(const struct xport_conn *c, uint32_t rkey, uint64_t raddr)
{
	for (unsigned i = 0; i < FAKE_GRANTS_MAX; i++)
		if (rkey && c->grants[i].rkey == rkey && raddr < c->grants[i].addr)
			return c->grants[i].addr + raddr;
	return raddr;
}

/* Is [raddr, raddr + len) inside a live grant @rkey of @c? */
static bool granted(const struct xport_conn *c, uint32_t rkey, uint64_t raddr, uint64_t len)
{
	for (unsigned i = 0; i < FAKE_GRANTS_MAX; i++) {
		const struct fake_grant *g = &c->grants[i];

		if (rkey && g->rkey == rkey && raddr >= g->addr && raddr - g->addr <= g->len &&
		    len <= g->len - (raddr - g->addr))
			return true;
	}
	return false;
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
	.grant = fake_grant,
	.revoke = fake_revoke,
	.get_stats = fake_get_stats,
	.set_ctx = fake_set_ctx,
	.set_rx_limit = fake_set_rx_limit,
	.close = fake_close,
	.peer_name = fake_peer_name,
	.destroy = fake_destroy,
};

/* ---- the harness's side ---- */

/* The harness daemon's cluster key ([security] key_file): a fixed one,
 * written at start (fuzz_daemon), so that runs repeat. */
static struct peer_key fuzz_key;

static bool all_zero(const uint8_t *b, size_t n)
{
	while (n--)
		if (*b++)
			return false;
	return true;
}

/*
 * An AUTH of the input in mode 1 whose proof is all 0 (step 2 or 3) gets
 * the right one in @g: proofs cover the daemon's fresh nonce, which no
 * input can know.  Any other proof goes up as it is (a wrong one).
 */
static const struct sl_wire_frame *proof_fill(struct xport_conn *c, const struct sl_wire_frame *f,
					      struct sl_wire_frame *g)
{
	const struct sl_wire_frame *daemon_auth = &c->auth_out;
	int rc = 0;

	if (f->u.auth.step == 1) {
		c->auth_in = *f;
		c->auth_in_seen = true;
		return f;
	}
	if (f->u.auth.mode != 1 || !all_zero(f->u.auth.proof, sizeof(f->u.auth.proof)) ||
	    !c->auth_out_seen || !fuzz_key.set)
		return f;
	*g = *f;
	if (f->u.auth.step == 3 && c->auth_in_seen)
		rc = peer_auth_proof(&fuzz_key, PEER_ROLE_DIALER, (uint8_t)f->u.auth.mode,
				     c->auth_in.u.auth.nonce,
				     daemon_auth->u.auth.nonce, f->u.auth.node_id,
				     daemon_auth->u.auth.node_id, f->u.auth.incarnation,
				     daemon_auth->u.auth.incarnation, g->u.auth.proof);
	else if (f->u.auth.step == 2)
		rc = peer_auth_proof(&fuzz_key, PEER_ROLE_ACCEPTER, (uint8_t)f->u.auth.mode,
				     daemon_auth->u.auth.nonce,
				     f->u.auth.nonce, daemon_auth->u.auth.node_id,
				     f->u.auth.node_id, daemon_auth->u.auth.incarnation,
				     f->u.auth.incarnation, g->u.auth.proof);
	if (rc < 0) {
		fprintf(stderr, "fuzz: peer_auth_proof failed\n");
		abort();
	}
	return g;
}

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
	struct sl_wire_frame filled;
	int rc;

	if (!c->open || c->connecting)
		return -ENOTCONN;
	if (f->type == SL_WIRE_AUTH)
		f = proof_fill(c, f, &filled);
	if (f->payload_len > c->rx_limit) {
		fake_close(c, -EPROTO);
		return -EPROTO;
	}
	if (f->type == SL_WIRE_WRITE) {
		filled = *f;
		filled.u.write.raddr = write_raddr(c, f->u.write.rkey, f->u.write.raddr);
		f = &filled;
	}
	if (f->type == SL_WIRE_WRITE && !granted(c, f->u.write.rkey, f->u.write.raddr,
						 f->payload_len)) {
		/* Outside every grant: refused whole, the stream kept (tcp.c). */
		rc = c->ctx ? fake_x.up->write_refused(c, c->ctx, f->u.write.rkey,
						      f->u.write.has_imm, f->u.write.imm) : -EPROTO;
	} else if (f->type == SL_WIRE_WRITE) {
		/* The transport's own frame: the link sees placement and the
		 * immediate. */
		if (f->payload_len)
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

static void die(const char *what);

static void add_peer(struct config *c, const char *name, uint16_t port)
{
	if (config_peer_add(c, name, "127.0.0.1", port) < 0)
		die("config_peer_add");
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

static char key_path[CONFIG_KEY_PATH_MAX];

static void remove_key_file(void)
{
	(void)unlink(key_path);
}

/* [security] key_file: FUZZ_KEY_BYTE(i) in a file of mode 0400 under
 * $TMPDIR (removed at exit), read back as the daemon reads it. */
static void key_file_write(struct daemon *d, const char *tmp)
{
	uint8_t bytes[PEER_KEY_LEN];
	char err[512];
	int fd;

	for (unsigned i = 0; i < PEER_KEY_LEN; i++)
		bytes[i] = FUZZ_KEY_BYTE(i);
	snprintf(key_path, sizeof(key_path), "%s/sluice-fuzz-key.XXXXXX",
		 tmp && tmp[0] && strlen(tmp) < 48 ? tmp : "/tmp");
	fd = mkstemp(key_path);
	if (fd < 0)
		die("mkstemp (the key file)");
	atexit(remove_key_file);
	if (write(fd, bytes, sizeof(bytes)) != (ssize_t)sizeof(bytes) || fchmod(fd, 0400) < 0 ||
	    close(fd) < 0)
		die("writing the key file");
	snprintf(d->cfg.key_file, sizeof(d->cfg.key_file), "%s", key_path);
	if (peer_key_load(key_path, &fuzz_key, err, sizeof(err)) < 0)
		die(err);
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
	key_file_write(d, tmp);
	d->incarnation = 0x1122334455667788ull;
	d->loop = ev_loop_new(EVFLAG_AUTO);
	if (!d->loop)
		die("ev_loop_new");
	d->started = ev_now(d->loop);
	loop_watch_init(&d->loop_w, d->loop);
	mem_return_init(&d->mem_ret, d->loop, &d->unexpected_bytes);
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

void fuzz_security_from(struct daemon *d, const uint8_t *stream, size_t len)
{
	struct sl_wire_frame f;

	d->cfg.security_mode = sl_wire_decode_hdr(stream, len, &f) > 0 &&
			       f.type == SL_WIRE_AUTH && f.u.auth.mode == 1
			       ? SECURITY_AUTHENTICATE : SECURITY_NONE;
}

void fuzz_links_setup(struct daemon *d)
{
	/* A fresh handshake state per input: the window of nonces seen
	 * would refuse an input run twice. */
	link_auth_destroy(d);
	if (link_auth_init(d))
		die("link_auth_init");
	engine_init(d);
	if (link_setup_all(d, &engine_link_handlers))
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
	if (uid_usage_attach(&d->uids, &d->cfg, getuid(), &s->uq))
		die("uid_usage_attach");
	TAILQ_INSERT_TAIL(&d->sessions, s, link);
	return s;
}

struct queue *fuzz_queue_open(struct session *s, uint32_t port, uint32_t depth)
{
	struct queue_owner who;
	struct queue *q;

	session_queue_owner(s, &who);
	if (queue_create(s->d, &who, port, depth, &q))
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
		engine_close_queue(q);
	}
	uid_usage_detach(s->uq);
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
