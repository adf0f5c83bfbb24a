/*
 * admin.c - the admin socket (see admin.h): accept, check who it is,
 * read one request line, answer with JSON built from the daemon's state
 * (json-c), write it without ever blocking the loop, close.
 *
 * Replies (numbers are JSON integers unless noted):
 *   status   node, node_id (hex), incarnation (hex), version, pid,
 *            uptime_s (number), transport, listen ("host:port" or null),
 *            clients, queues, links, links_up, log_level, loop: {every
 *            loop.* statistic: iteration_max_ms, stalls, stall_max_ms},
 *            memory: {the totals of "memory" below}
 *   clients  {"clients": [{pid, uid, gid, queues: [ids], in_flight,
 *            queue_count, arena_bytes, mapped_bytes}]}
 *   uids     {"uids": [{uid, contexts, queues, arena_bytes, in_flight}],
 *            "limits": {contexts, queues, arena_bytes, in_flight}}: what
 *            each uid with a client holds, and the bounds (uid_quota.h)
 *   queues   {"queues": [{id, port, pid, uid, sq_used, sq_depth, cq_used,
 *            cq_depth, in_flight, posted_recvs, unexpected,
 *            unexpected_bytes, claimed, sqes, cqes, msgs_tx, bytes_tx,
 *            msgs_rx, bytes_rx, naks, arena_bytes}]}
 *   links    {"links": [{peer, node_id (hex), address, last_error (string
 *            or null), and every link.PEER.* statistic of stats.c, and
 *            state_for_ms (up for, or down for, since it last changed),
 *            heard_ago_ms (since the last frame from the peer; null
 *            before the first)}]}
 *   memory   {"totals": {rss_bytes, arena_bytes, mapped_bytes,
 *            unexpected_bytes, unexpected_limit_bytes, link_buffer_bytes,
 *            retransmit_bytes},
 *            "clients": [{pid, queue_count, arena_bytes, mapped_bytes,
 *            unexpected_bytes}], "queues": [{id, pid, arena_bytes,
 *            mapped_bytes, unexpected_bytes}], "links": [{peer,
 *            xport_tx_bytes, xport_rx_bytes (null: the transport does not
 *            tell), retransmit_frames, retransmit_bytes}]} (mem_usage.h;
 *            each link's figures: struct link_stats, link.h)
 *   rcache   every rcache.* statistic
 *   counters {"daemon": {daemon.*}, "completions": {status: count},
 *            "xport": {xport.*}}
 */
#include "autoconfig.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

#include "accept_pause.h"
#include "admin.h"
#include "daemon.h"
#include "fd_reserve.h"
#include "link.h"
#include "log.h"
#include "mem_usage.h"
#include "peer_groups.h"
#include "queue.h"
#include "rate_log.h"
#include "session.h"
#include "sl_barrier.h"
#include "sluice.h"
#include "stats.h"

#define ADMIN_ERR_OOM "{\"error\":\"out of memory\"}\n"
#define ADMIN_ACCEPT_BATCH 16
#define ADMIN_SNDBUF (64 * 1024)	/* bytes (the kernel doubles it) */

struct admin;

struct admin_conn {
	struct admin *a;
	LIST_ENTRY(admin_conn) link;
	int fd;
	pid_t pid;
	uid_t uid;
	ev_io w;			/* EV_READ for the request, then EV_WRITE */
	ev_timer timeout_w;		/* ADMIN_REQUEST_TIMEOUT_S from accept,
					 * then ADMIN_TIMEOUT_S */
	ev_tstamp accepted;		/* ev_now() at accept */
	uint64_t serial;		/* accept order (ev_now() ties in a batch) */
	size_t in_len;
	char in[ADMIN_REQUEST_MAX + 2];	/* + 1 to see a line is too long, + NUL */
	char *out;			/* the reply, malloc'd; NULL until built */
	size_t out_len, out_off;	/* bytes; out_off written so far */
};

struct admin {
	struct daemon *d;
	int fd;
	ev_io w;
	struct accept_pause pause;
	char path[CONFIG_PATH_MAX + 32];
	LIST_HEAD(, admin_conn) conns;
	unsigned n_conns;
	uint64_t accepts;		/* serials given */
	struct rate_log drop_log;	/* timeouts and evictions */
};

#define ADMIN_DROP_LOG_S 10.0	/* seconds between lines about dropped clients */

/* ------------------------------------------------------------------ */
/* JSON helpers: a NULL value means json-c ran out of memory.           */
/* ------------------------------------------------------------------ */

static void jset(struct json_object *o, const char *key, struct json_object *v, bool *ok)
{
	if (!v || json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		*ok = false;
	}
}

/* An explicit JSON null. */
static void jset_null(struct json_object *o, const char *key, bool *ok)
{
	if (json_object_object_add(o, key, NULL) < 0)
		*ok = false;
}

static void jset_u64(struct json_object *o, const char *key, uint64_t v, bool *ok)
{
	jset(o, key, json_object_new_uint64(v), ok);
}

static void jset_str(struct json_object *o, const char *key, const char *s, bool *ok)
{
	jset(o, key, json_object_new_string(s), ok);
}

static void jset_hex(struct json_object *o, const char *key, uint64_t v, int width, bool *ok)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%0*" PRIx64, width, v);
	jset_str(o, key, buf, ok);
}

static void jappend(struct json_object *arr, struct json_object *v, bool *ok)
{
	if (!v || json_object_array_add(arr, v) < 0) {
		json_object_put(v);
		*ok = false;
	}
}

struct json_visit {
	struct json_object *obj;
	bool ok;
};

static void json_stat(void *arg, const struct stat_value *v)
{
	struct json_visit *jv = arg;

	if (v->is_text)
		jset_str(jv->obj, v->name, v->text, &jv->ok);
	else
		jset_u64(jv->obj, v->name, v->num, &jv->ok);
}

/* "host:port", IPv6 hosts in brackets. */
static void format_hostport(char *buf, size_t len, const char *host, uint16_t port)
{
	if (strchr(host, ':'))
		snprintf(buf, len, "[%s]:%u", host, port);
	else
		snprintf(buf, len, "%s:%u", host, port);
}

/* ------------------------------------------------------------------ */
/* Commands: each fills @o and returns false when json-c ran out.       */
/* ------------------------------------------------------------------ */

/* The daemon's memory totals (mem_usage.h) as an object; NULL when
 * json-c ran out. */
static struct json_object *memory_totals(struct daemon *d)
{
	struct json_object *o = json_object_new_object();
	struct mem_totals t;
	bool ok = true;

	if (!o)
		return NULL;
	mem_totals(d, &t);
	jset_u64(o, "rss_bytes", t.rss, &ok);
	jset_u64(o, "arena_bytes", t.arena, &ok);
	jset_u64(o, "mapped_bytes", t.mapped, &ok);
	jset_u64(o, "unexpected_bytes", t.unexpected, &ok);
	jset_u64(o, "unexpected_limit_bytes", t.unexpected_limit, &ok);
	jset_u64(o, "link_buffer_bytes", t.link_buffers, &ok);
	jset_u64(o, "retransmit_bytes", t.retransmit, &ok);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static bool cmd_status(struct daemon *d, struct json_object *o)
{
	char buf[CONFIG_HOST_MAX + 16];
	unsigned clients = session_count(d), up = link_count_up(d);
	struct json_visit lv = { .obj = json_object_new_object(), .ok = true };
	bool ok = true;

	jset_str(o, "node", d->cfg.node_name, &ok);
	jset_hex(o, "node_id", d->cfg.node_id, 8, &ok);
	jset_hex(o, "incarnation", d->incarnation, 16, &ok);
	jset_str(o, "version", PACKAGE_VERSION, &ok);
	jset_u64(o, "pid", (uint64_t)getpid(), &ok);
	/* Milliseconds are enough; the string form keeps json-c from
	 * printing 17 digits. */
	snprintf(buf, sizeof(buf), "%.3f", ev_now(d->loop) - d->started);
	jset(o, "uptime_s", json_object_new_double_s(ev_now(d->loop) - d->started, buf), &ok);
	jset_str(o, "transport", d->xp->ops->name, &ok);
	if (d->cfg.listen_set) {
		format_hostport(buf, sizeof(buf), d->cfg.listen_host, d->cfg.listen_port);
		jset_str(o, "listen", buf, &ok);
	} else {
		jset_null(o, "listen", &ok);
	}
	jset_u64(o, "clients", clients, &ok);
	jset_u64(o, "queues", d->n_queues, &ok);
	jset_u64(o, "links", d->n_links, &ok);
	jset_u64(o, "links_up", up, &ok);
	jset_str(o, "log_level", log_level_name(log_get_level()), &ok);
	jset(o, "loop", lv.obj, &ok);
	jset(o, "memory", memory_totals(d), &ok);
	if (ok)
		stats_visit_loop(d, json_stat, &lv);
	return ok && lv.ok;
}

/* Bytes of the queue segments of session @s (header, rings, arena). */
static uint64_t session_mapped_bytes(const struct session *s)
{
	const struct queue *q;
	uint64_t n = 0;

	TAILQ_FOREACH(q, &s->queues, by_session)
		n += q->seg_size;
	return n;
}

static bool cmd_clients(struct daemon *d, struct json_object *o)
{
	struct json_object *arr = json_object_new_array();
	struct session *s;
	bool ok = true;

	jset(o, "clients", arr, &ok);
	if (!ok)
		return false;
	TAILQ_FOREACH(s, &d->sessions, link) {
		struct json_object *c = json_object_new_object(), *qs;
		struct queue *q;

		if (!c)
			return false;
		jappend(arr, c, &ok);
		if (!ok)
			return false;
		jset_u64(c, "pid", (uint64_t)s->pid, &ok);
		jset_u64(c, "uid", s->uid, &ok);
		jset_u64(c, "gid", s->gid, &ok);
		qs = json_object_new_array();
		jset(c, "queues", qs, &ok);
		if (!ok)
			return false;
		TAILQ_FOREACH(q, &s->queues, by_session)
			jappend(qs, json_object_new_uint64(q->id), &ok);
		jset_u64(c, "in_flight", s->in_flight, &ok);
		jset_u64(c, "queue_count", s->n_queues, &ok);
		jset_u64(c, "arena_bytes", s->arena_bytes, &ok);
		jset_u64(c, "mapped_bytes", session_mapped_bytes(s), &ok);
	}
	return ok;
}

/*
 * Ring occupancy from the shared indices.  The client writes the SQ tail
 * and the CQ head, so those are read once (relaxed: a snapshot for
 * display, nothing is derived from the entries) and clamped: a corrupt
 * ring must not show more than its capacity.
 */
static uint32_t ring_used(uint32_t tail, uint32_t head, uint32_t cap)
{
	uint32_t used = tail - head;

	return used > cap ? cap : used;
}

static bool cmd_queues(struct daemon *d, struct json_object *o)
{
	struct json_object *arr = json_object_new_array();
	struct queue *q;
	bool ok = true;

	jset(o, "queues", arr, &ok);
	if (!ok)
		return false;
	TAILQ_FOREACH(q, &d->queues, all) {
		struct json_object *j = json_object_new_object();
		uint32_t sq_cap = sl_ring_capacity(&q->sq), cq_cap = sl_ring_capacity(&q->cq);

		jappend(arr, j, &ok);
		if (!ok)
			return false;
		jset_u64(j, "id", q->id, &ok);
		jset_u64(j, "port", q->port, &ok);
		if (q->owner)
			jset_u64(j, "pid", (uint64_t)q->owner->pid, &ok);
		else
			jset_null(j, "pid", &ok);
		jset_u64(j, "uid", q->uid, &ok);
		jset_u64(j, "sq_used", ring_used(SL_READ_ONCE(q->sq.shm_tail), q->sq.local,
						  sq_cap), &ok);
		jset_u64(j, "sq_depth", sq_cap, &ok);
		jset_u64(j, "cq_used", ring_used(q->cq.local, SL_READ_ONCE(q->cq.shm_head),
						  cq_cap), &ok);
		jset_u64(j, "cq_depth", cq_cap, &ok);
		jset_u64(j, "in_flight", q->in_flight, &ok);
		jset_u64(j, "posted_recvs", q->mq.n_posted, &ok);
		jset_u64(j, "unexpected", q->mq.n_unexpected, &ok);
		jset_u64(j, "unexpected_bytes", q->mq.unexpected_bytes, &ok);
		jset_u64(j, "claimed", q->mq.n_claimed, &ok);
		jset_u64(j, "sqes", q->sqes, &ok);
		jset_u64(j, "cqes", q->cqes, &ok);
		jset_u64(j, "msgs_tx", q->msgs_tx, &ok);
		jset_u64(j, "bytes_tx", q->bytes_tx, &ok);
		jset_u64(j, "msgs_rx", q->msgs_rx, &ok);
		jset_u64(j, "bytes_rx", q->bytes_rx, &ok);
		jset_u64(j, "naks", q->naks, &ok);
		jset_u64(j, "arena_bytes", q->arena_size, &ok);
	}
	return ok;
}

/* Milliseconds from @t (ev_now() then) to now. */
static uint64_t ms_since(struct daemon *d, ev_tstamp t)
{
	ev_tstamp dt = ev_now(d->loop) - t;

	return dt > 0 ? (uint64_t)(dt * 1e3 + 0.5) : 0;
}

static bool cmd_links(struct daemon *d, struct json_object *o)
{
	struct json_object *arr = json_object_new_array();
	bool ok = true;
	size_t i;

	jset(o, "links", arr, &ok);
	if (!ok)
		return false;
	for (i = 0; i < d->n_links; i++) {
		struct json_visit jv = { .obj = json_object_new_object(), .ok = true };
		char addr[CONFIG_HOST_MAX + 16];
		struct link_stats st;

		jappend(arr, jv.obj, &ok);
		if (!ok)
			return false;
		link_get_stats(d->links[i], &st);
		jset_str(jv.obj, "peer", st.name, &jv.ok);
		jset_hex(jv.obj, "node_id", st.node_id, 8, &jv.ok);
		format_hostport(addr, sizeof(addr), st.host, st.port);
		jset_str(jv.obj, "address", addr, &jv.ok);
		if (st.last_error[0])
			jset_str(jv.obj, "last_error", st.last_error, &jv.ok);
		else
			jset_null(jv.obj, "last_error", &jv.ok);
		stats_visit_link(&st, json_stat, &jv);
		jset_u64(jv.obj, "state_for_ms", ms_since(d, st.updown_at), &jv.ok);
		if (st.rx_at > 0)
			jset_u64(jv.obj, "heard_ago_ms", ms_since(d, st.rx_at), &jv.ok);
		else
			jset_null(jv.obj, "heard_ago_ms", &jv.ok);
		if (!jv.ok)
			return false;
	}
	return ok;
}

static bool cmd_memory(struct daemon *d, struct json_object *o)
{
	struct json_object *clients = json_object_new_array();
	struct json_object *queues = json_object_new_array();
	struct json_object *links = json_object_new_array();
	struct session *s;
	struct queue *q;
	bool ok = true;
	size_t i;

	jset(o, "totals", memory_totals(d), &ok);
	jset(o, "clients", clients, &ok);
	jset(o, "queues", queues, &ok);
	jset(o, "links", links, &ok);
	if (!ok)
		return false;
	TAILQ_FOREACH(s, &d->sessions, link) {
		struct json_object *c = json_object_new_object();
		uint64_t unexp = 0;

		jappend(clients, c, &ok);
		if (!ok)
			return false;
		TAILQ_FOREACH(q, &s->queues, by_session)
			unexp += q->mq.unexpected_bytes;
		jset_u64(c, "pid", (uint64_t)s->pid, &ok);
		jset_u64(c, "queue_count", s->n_queues, &ok);
		jset_u64(c, "arena_bytes", s->arena_bytes, &ok);
		jset_u64(c, "mapped_bytes", session_mapped_bytes(s), &ok);
		jset_u64(c, "unexpected_bytes", unexp, &ok);
	}
	TAILQ_FOREACH(q, &d->queues, all) {
		struct json_object *j = json_object_new_object();

		jappend(queues, j, &ok);
		if (!ok)
			return false;
		jset_u64(j, "id", q->id, &ok);
		if (q->owner)
			jset_u64(j, "pid", (uint64_t)q->owner->pid, &ok);
		else
			jset_null(j, "pid", &ok);
		jset_u64(j, "arena_bytes", q->arena_size, &ok);
		jset_u64(j, "mapped_bytes", q->seg_size, &ok);
		jset_u64(j, "unexpected_bytes", q->mq.unexpected_bytes, &ok);
	}
	for (i = 0; i < d->n_links; i++) {
		struct json_object *j = json_object_new_object();
		struct link_stats st;

		jappend(links, j, &ok);
		if (!ok)
			return false;
		link_get_stats(d->links[i], &st);
		jset_str(j, "peer", st.name, &ok);
		if (st.xport_buffers_known) {
			jset_u64(j, "xport_tx_bytes", st.xport_tx_bytes, &ok);
			jset_u64(j, "xport_rx_bytes", st.xport_rx_bytes, &ok);
		} else {
			jset_null(j, "xport_tx_bytes", &ok);
			jset_null(j, "xport_rx_bytes", &ok);
		}
		jset_u64(j, "retransmit_frames", st.retransmit_frames, &ok);
		jset_u64(j, "retransmit_bytes", st.retransmit_bytes, &ok);
	}
	return ok;
}

static bool cmd_rcache(struct daemon *d, struct json_object *o)
{
	struct json_visit jv = { .obj = o, .ok = true };

	stats_visit_rcache(d, json_stat, &jv);
	return jv.ok;
}

/* Completion statuses by their JSON name: sl_strerror()'s words, made
 * into keys.  Every one is listed, zero or not, so the keys are stable. */
static const struct {
	int32_t status;
	const char *name;
} status_names[] = {
	{ SL_OK, "ok" },
	{ SL_NAK_BUSY, "nak_busy" },
	{ SL_NAK_RECEIVER_FULL, "nak_receiver_full" },
	{ SL_ERR_NO_ENDPOINT, "no_endpoint" },
	{ SL_ERR_TRUNCATED, "truncated" },
	{ SL_ERR_PEER_DOWN, "peer_down" },
	{ SL_ERR_PEER_RESTARTED, "peer_restarted" },
	{ SL_ERR_CANCELED, "canceled" },
	{ SL_ERR_INVALID, "invalid" },
	{ SL_ERR_ACCESS, "access" },
	{ SL_ERR_REG_LIMIT, "reg_limit" },
	{ SL_ERR_UNKNOWN_NODE, "unknown_node" },
	{ SL_ERR_STALLED, "stalled" },
	{ SL_ERR_NO_MESSAGE, "no_message" },
	{ SL_ERR_NOT_FOUND, "not_found" },
};

static const char *status_name(unsigned slot)
{
	size_t i;

	for (i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		if ((unsigned)status_names[i].status == slot)
			return status_names[i].name;
	return NULL;
}

static bool cmd_counters(struct daemon *d, struct json_object *o)
{
	struct json_visit dv = { .obj = json_object_new_object(), .ok = true };
	struct json_visit xv = { .obj = json_object_new_object(), .ok = true };
	struct json_object *comp = json_object_new_object();
	bool ok = true;
	unsigned slot;
	size_t i;

	jset(o, "daemon", dv.obj, &ok);
	jset(o, "completions", comp, &ok);
	jset(o, "xport", xv.obj, &ok);
	if (!ok)
		return false;
	stats_visit_daemon(d, json_stat, &dv);
	stats_visit_xport(d, json_stat, &xv);
	for (i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		jset_u64(comp, status_names[i].name,
			 d->ctr.completions[daemon_status_slot(status_names[i].status)], &ok);
	/* Statuses this daemon does not name (it writes none today). */
	for (slot = 0; slot < SLD_STATUS_SLOTS; slot++) {
		char key[24];

		if (!d->ctr.completions[slot] || status_name(slot))
			continue;
		if (slot == SLD_STATUS_SLOTS - 1)
			snprintf(key, sizeof(key), "other");
		else
			snprintf(key, sizeof(key), "status_%u", slot);
		jset_u64(comp, key, d->ctr.completions[slot], &ok);
	}
	return ok && dv.ok && xv.ok;
}

static bool cmd_uids(struct daemon *d, struct json_object *o)
{
	struct json_object *arr = json_object_new_array(), *lim = json_object_new_object();
	struct uid_usage *u;
	bool ok = true;

	jset(o, "uids", arr, &ok);
	jset(o, "limits", lim, &ok);
	if (!ok)
		return false;
	jset_u64(lim, "contexts", uid_limit_contexts(&d->cfg), &ok);
	jset_u64(lim, "queues", uid_limit_queues(&d->cfg), &ok);
	jset_u64(lim, "arena_bytes", uid_limit_arena(&d->cfg), &ok);
	jset_u64(lim, "in_flight", uid_limit_inflight(&d->cfg), &ok);
	LIST_FOREACH(u, &d->uids, link) {
		struct json_object *e = json_object_new_object();

		jappend(arr, e, &ok);
		if (!ok)
			return false;
		jset_u64(e, "uid", u->uid, &ok);
		jset_u64(e, "contexts", u->contexts, &ok);
		jset_u64(e, "queues", u->queues, &ok);
		jset_u64(e, "arena_bytes", u->arena_bytes, &ok);
		jset_u64(e, "in_flight", u->in_flight, &ok);
	}
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(struct daemon *d, struct json_object *o);
} commands[] = {
	{ "status", cmd_status },
	{ "clients", cmd_clients },
	{ "uids", cmd_uids },
	{ "queues", cmd_queues },
	{ "links", cmd_links },
	{ "rcache", cmd_rcache },
	{ "counters", cmd_counters },
	{ "memory", cmd_memory },
};

/* ------------------------------------------------------------------ */
/* Connections                                                          */
/* ------------------------------------------------------------------ */

static void conn_destroy(struct admin_conn *c)
{
	struct admin *a = c->a;

	ev_io_stop(a->d->loop, &c->w);
	ev_timer_stop(a->d->loop, &c->timeout_w);
	if (close(c->fd) < 0)
		log_debug("admin: pid %d: close: %m", (int)c->pid);
	LIST_REMOVE(c, link);
	a->n_conns--;
	free(c->out);
	free(c);
}

/* Serialise @o (which this takes) as the reply line.  Returns 0 or
 * -ENOMEM; on -ENOMEM the caller sends ADMIN_ERR_OOM instead. */
static int conn_set_reply(struct admin_conn *c, struct json_object *o)
{
	const char *s;
	size_t n;
	int rc = -ENOMEM;

	if (!o)
		return -ENOMEM;
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (!s)
		goto out;
	c->out = malloc(n + 1);
	if (!c->out)
		goto out;
	memcpy(c->out, s, n);
	c->out[n] = '\n';
	c->out_len = n + 1;
	c->out_off = 0;
	rc = 0;
out:
	json_object_put(o);
	return rc;
}

static struct json_object *error_reply(const char *msg)
{
	struct json_object *o = json_object_new_object();
	bool ok = true;

	if (!o)
		return NULL;
	jset_str(o, "error", msg, &ok);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The JSON answer to request line @line (NUL-terminated, no newline);
 * NULL when out of memory. */
static struct json_object *build_reply(struct daemon *d, const char *line)
{
	struct json_object *o;
	char msg[ADMIN_REQUEST_MAX + 32];
	size_t i, n = strlen(line);

	/* Untrusted: only a word of [a-z0-9_-] is looked up or echoed. */
	if (n == 0)
		return error_reply("empty request");
	for (i = 0; i < n; i++) {
		char ch = line[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		      ch == '-'))
			return error_reply("malformed request: one command name expected");
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(line, commands[i].name))
			continue;
		o = json_object_new_object();
		if (!o)
			return NULL;
		if (!commands[i].fn(d, o)) {
			json_object_put(o);
			return NULL;
		}
		return o;
	}
	snprintf(msg, sizeof(msg), "unknown command '%s'", line);
	return error_reply(msg);
}

/* Write what the socket takes.  Returns 1 when everything is written,
 * 0 when the rest must wait for EV_WRITE, -errno when the client is gone. */
static int conn_flush(struct admin_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		}
		c->out_off += (size_t)n;
	}
	return 1;
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct admin_conn *c = w->data;
	int rc = conn_flush(c);

	(void)loop;
	(void)revents;
	if (rc == 0)
		return;
	if (rc < 0)
		log_debug("admin: pid %d: reply: %s", (int)c->pid, strerror(-rc));
	conn_destroy(c);
}

/* Send reply @o (taken; NULL: out of memory), then close. */
static void conn_reply(struct admin_conn *c, struct json_object *o)
{
	struct daemon *d = c->a->d;
	ev_tstamp left;
	int rc;

	if (conn_set_reply(c, o) < 0) {
		c->out = malloc(sizeof(ADMIN_ERR_OOM) - 1);
		if (!c->out) {
			log_warn("admin: pid %d: out of memory for a reply", (int)c->pid);
			conn_destroy(c);
			return;
		}
		memcpy(c->out, ADMIN_ERR_OOM, sizeof(ADMIN_ERR_OOM) - 1);
		c->out_len = sizeof(ADMIN_ERR_OOM) - 1;
		c->out_off = 0;
	}
	ev_io_stop(d->loop, &c->w);
	/* The request is in: the reply may take until ADMIN_TIMEOUT_S. */
	left = ADMIN_TIMEOUT_S - (ev_now(d->loop) - c->accepted);
	ev_timer_stop(d->loop, &c->timeout_w);
	ev_timer_set(&c->timeout_w, left > 0.001 ? left : 0.001, 0.0);
	ev_timer_start(d->loop, &c->timeout_w);
	rc = conn_flush(c);
	if (rc != 0) {
		if (rc < 0)
			log_debug("admin: pid %d: reply: %s", (int)c->pid, strerror(-rc));
		conn_destroy(c);
		return;
	}
	/* The client is slow to read: the rest goes out as it does, until
	 * the connection's timeout. */
	ev_io_init(&c->w, conn_write_cb, c->fd, EV_WRITE);
	c->w.data = c;
	ev_io_start(d->loop, &c->w);
}

static void conn_too_long(struct admin_conn *c)
{
	char msg[64];

	log_info("admin: pid %d: request longer than %d bytes", (int)c->pid, ADMIN_REQUEST_MAX);
	snprintf(msg, sizeof(msg), "request longer than %d bytes", ADMIN_REQUEST_MAX);
	conn_reply(c, error_reply(msg));
}

/* Request line @line (NUL-terminated, without its newline) is in. */
static void conn_answer(struct admin_conn *c, const char *line)
{
	log_debug("admin: pid %d uid %d: '%.*s'", (int)c->pid, (int)c->uid,
		  ADMIN_REQUEST_MAX, line);
	conn_reply(c, build_reply(c->a->d, line));
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct admin_conn *c = w->data;
	char *nl;
	ssize_t n;

	(void)loop;
	(void)revents;
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		log_debug("admin: pid %d: recv: %m", (int)c->pid);
		conn_destroy(c);
		return;
	}
	if (n == 0) {
		/* Half-closed: what came is the request, if anything did. */
		if (c->in_len == 0)
			conn_destroy(c);
		else if (c->in_len > ADMIN_REQUEST_MAX)
			conn_too_long(c);
		else
			conn_answer(c, c->in);
		return;
	}
	c->in_len += (size_t)n;
	c->in[c->in_len] = '\0';
	nl = memchr(c->in, '\n', c->in_len);
	if (!nl) {
		if (c->in_len > ADMIN_REQUEST_MAX)
			conn_too_long(c);
		return;		/* else more to come */
	}
	if ((size_t)(nl - c->in) + 1 > ADMIN_REQUEST_MAX) {
		conn_too_long(c);
		return;
	}
	if ((size_t)(nl - c->in) + 1 != c->in_len) {
		conn_reply(c, error_reply("one request line per connection"));
		return;
	}
	*nl = '\0';
	if (nl > c->in && nl[-1] == '\r')
		nl[-1] = '\0';
	conn_answer(c, c->in);
}

/* A client dropped for being stuck (@why): counted, logged with a rate
 * limit (any member of admin_group can cause it at will). */
static void conn_drop(struct admin_conn *c, const char *why, uint64_t *counter)
{
	uint64_t n;

	(*counter)++;
	log_debug("admin: pid %d uid %d: dropped: %s", (int)c->pid, (int)c->uid, why);
	if (rate_log_due(&c->a->drop_log, ADMIN_DROP_LOG_S, &n))
		log_info("admin: pid %d uid %d: dropped: %s (%llu dropped since the last "
			 "such line)", (int)c->pid, (int)c->uid, why, (unsigned long long)n);
	conn_destroy(c);
}

static void conn_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct admin_conn *c = w->data;

	(void)loop;
	(void)revents;
	conn_drop(c, c->out ? "reply not read within the timeout"
			    : "no whole request line within the timeout",
		  &c->a->d->ctr.admin_timeouts);
}

/* A refusal on a fresh connection: its send buffer is empty, so the
 * short line fits; the connection is closed right after. */
static void refuse(int fd, const char *reply)
{
	if (send(fd, reply, strlen(reply), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("admin: refusal: %m");
	if (close(fd) < 0)
		log_debug("admin: close: %m");
}

/* ------------------------------------------------------------------ */
/* Access                                                               */
/* ------------------------------------------------------------------ */

/* May the peer @cr of @fd use the admin socket?  Read at each connection
 * from the configuration, so a reload applies at once. */
static bool admin_allowed(struct daemon *d, int fd, const struct ucred *cr)
{
	const char *group = d->cfg.admin_group;
	gid_t gid;
	int rc;

	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	if (!group[0])
		return false;
	rc = group_gid(group, &gid);
	if (rc) {
		log_warn("admin: admin_group %s: %s", group,
			 rc == -ENOENT ? "no such group" : strerror(-rc));
		return false;
	}
	return cr->gid == gid || peer_has_group(fd, cr, gid);
}

/* ------------------------------------------------------------------ */
/* Listener                                                             */
/* ------------------------------------------------------------------ */

#define ADMIN_ERR_NO_FDS "{\"error\":\"out of file descriptors: connection refused\"}\n"

/* fd_spare_refuse's callback: the connection is closed after. */
static void refuse_no_fds(int fd, void *arg)
{
	(void)arg;
	if (send(fd, ADMIN_ERR_NO_FDS, sizeof(ADMIN_ERR_NO_FDS) - 1,
		 MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("admin: refusal: %m");
}

/* The connection to evict among those of @uid: the oldest of those
 * without a whole request, else the oldest whose reply waits; NULL if
 * @uid has none. */
static struct admin_conn *eviction_victim(struct admin *a, uid_t uid)
{
	struct admin_conn *c, *best = NULL;

	LIST_FOREACH(c, &a->conns, link) {
		if (c->uid != uid)
			continue;
		if (!best || (!c->out && best->out) ||
		    (!c->out == !best->out && c->serial < best->serial))
			best = c;
	}
	return best;
}

static unsigned conns_of(const struct admin *a, uid_t uid)
{
	const struct admin_conn *c;
	unsigned n = 0;

	LIST_FOREACH(c, &a->conns, link)
		n += c->uid == uid;
	return n;
}

/* The uid that holds the most connections. */
static uid_t greediest_uid(const struct admin *a)
{
	const struct admin_conn *c;
	unsigned most = 0;
	uid_t uid = 0;

	LIST_FOREACH(c, &a->conns, link) {
		unsigned n = conns_of(a, c->uid);

		if (n > most) {
			most = n;
			uid = c->uid;
		}
	}
	return uid;
}

static bool full_for(const struct admin *a, uid_t uid)
{
	return a->n_conns >= ADMIN_CONNS_MAX || conns_of(a, uid) >= ADMIN_CONNS_PER_UID;
}

/* Is there a slot for a new connection of @uid, after evicting a stuck
 * one if needed (the rule is in admin.h)? */
static bool make_room(struct admin *a, uid_t uid)
{
	struct admin_conn *c, *next, *victim;

	if (!full_for(a, uid))
		return true;
	/* Requests that came in since the loop last looked are answered
	 * first: their clients are not stuck. */
	for (c = LIST_FIRST(&a->conns); c; c = next) {
		next = LIST_NEXT(c, link);
		if (!c->out)
			conn_read_cb(a->d->loop, &c->w, EV_READ);
	}
	if (!full_for(a, uid))
		return true;
	victim = eviction_victim(a, conns_of(a, uid) >= ADMIN_CONNS_PER_UID ? uid
									    : greediest_uid(a));
	if (!victim)
		return false;
	conn_drop(victim, victim->out ? "evicted for a new connection: reply not read"
				      : "evicted for a new connection: no whole request",
		  &a->d->ctr.admin_evicted);
	return true;
}

static void admin_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct admin *a = w->data;
	struct daemon *d = a->d;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < ADMIN_ACCEPT_BATCH; i++) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct admin_conn *c;
		int fd = fd_accept(a->fd, "admin socket", refuse_no_fds, a, &d->ctr.fd_refused);

		if (fd == FD_REFUSED)
			continue;
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED &&
			    !accept_pause_on_error(&a->pause, errno, "admin socket"))
				log_warn("admin socket: accept: %m");
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log_warn("admin socket: SO_PEERCRED: %m");
			if (close(fd) < 0)
				log_debug("admin: close: %m");
			continue;
		}
		if (!admin_allowed(d, fd, &cred)) {
			log_info("admin: pid %d uid %d gid %d: permission denied", (int)cred.pid,
				 (int)cred.uid, (int)cred.gid);
			refuse(fd, "{\"error\":\"permission denied\"}\n");
			continue;
		}
		if (!make_room(a, cred.uid)) {
			log_debug("admin: pid %d: refused: %u admin connections already",
				  (int)cred.pid, a->n_conns);
			refuse(fd, "{\"error\":\"too many admin connections\"}\n");
			continue;
		}
		/* A reply waits in our heap, not the kernel's: clients that do
		 * not read pin at most ADMIN_CONNS_MAX small socket buffers. */
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ ADMIN_SNDBUF },
			       sizeof(int)) < 0)
			log_debug("admin: SO_SNDBUF: %m");
		c = calloc(1, sizeof(*c));
		if (!c) {
			log_warn("admin: out of memory for a connection");
			refuse(fd, ADMIN_ERR_OOM);
			continue;
		}
		c->a = a;
		c->fd = fd;
		c->pid = cred.pid;
		c->uid = cred.uid;
		ev_io_init(&c->w, conn_read_cb, fd, EV_READ);
		c->w.data = c;
		ev_io_start(d->loop, &c->w);
		c->accepted = ev_now(d->loop);
		c->serial = ++a->accepts;
		ev_timer_init(&c->timeout_w, conn_timeout_cb, ADMIN_REQUEST_TIMEOUT_S, 0.0);
		c->timeout_w.data = c;
		ev_timer_start(d->loop, &c->timeout_w);
		LIST_INSERT_HEAD(&a->conns, c, link);
		a->n_conns++;
	}
}

/* chgrp the socket to admin_group, or to the daemon's group for "". */
static int admin_chgrp(struct admin *a)
{
	const char *group = a->d->cfg.admin_group;
	gid_t gid = getegid();
	int rc = 0;

	if (group[0]) {
		rc = group_gid(group, &gid);
		if (rc) {
			/* Not the group of before: its members pass the check
			 * no more, and the socket's mode says the same. */
			log_warn("admin_group %s: %s: %s goes to the daemon's own group", group,
				 rc == -ENOENT ? "no such group" : strerror(-rc), a->path);
			gid = getegid();
		}
	}
	if (chown(a->path, (uid_t)-1, gid) < 0) {
		rc = -errno;
		log_warn("%s: chgrp %d: %s", a->path, (int)gid, strerror(-rc));
	}
	return rc;
}

int admin_listen(struct daemon *d)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct admin *a;
	int fd, rc;

	a = calloc(1, sizeof(*a));
	if (!a) {
		log_err("admin socket: out of memory");
		return -ENOMEM;
	}
	a->d = d;
	a->fd = -1;
	LIST_INIT(&a->conns);
	snprintf(a->path, sizeof(a->path), "%s/%s", d->cfg.runtime_dir, SLD_ADMIN_SOCKET_NAME);
	if (strlen(a->path) >= sizeof(sun.sun_path)) {
		log_err("%s: path too long for a UNIX socket", a->path);
		rc = -ENAMETOOLONG;
		goto err_free;
	}
	strcpy(sun.sun_path, a->path);
	/* session_listen() holds the directory's lock: a socket here is a
	 * dead daemon's. */
	if (unlink(a->path) < 0 && errno != ENOENT)
		log_warn("%s: unlink stale socket: %m", a->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		log_err("admin socket: %m");
		goto err_free;
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		rc = -errno;
		log_err("%s: %m", a->path);
		goto err_close;
	}
	if (chmod(a->path, 0660) < 0 || listen(fd, 64) < 0) {
		rc = -errno;
		log_err("%s: %m", a->path);
		goto err_unlink;
	}
	if (d->cfg.admin_group[0])
		(void)admin_chgrp(a);	/* logged; root and our uid still get in */
	a->fd = fd;
	ev_io_init(&a->w, admin_accept_cb, fd, EV_READ);
	a->w.data = a;
	ev_io_start(d->loop, &a->w);
	accept_pause_init(&a->pause, d->loop, &a->w);
	d->admin = a;
	return 0;

err_unlink:
	if (unlink(a->path) < 0)
		log_warn("%s: unlink: %m", a->path);
err_close:
	if (close(fd) < 0)
		log_warn("admin socket: close: %m");
err_free:
	free(a);
	return rc;
}

int admin_apply_config(struct daemon *d)
{
	if (!d->admin)
		return 0;
	return admin_chgrp(d->admin);
}

void admin_close(struct daemon *d)
{
	struct admin *a = d->admin;
	struct admin_conn *c;

	if (!a)
		return;
	while ((c = LIST_FIRST(&a->conns)))
		conn_destroy(c);
	ev_io_stop(d->loop, &a->w);
	accept_pause_stop(&a->pause);
	if (close(a->fd) < 0)
		log_warn("%s: close: %m", a->path);
	if (unlink(a->path) < 0 && errno != ENOENT)
		log_warn("%s: unlink: %m", a->path);
	free(a);
	d->admin = NULL;
}
