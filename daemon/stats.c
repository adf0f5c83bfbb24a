/*
 * stats.c - counters and gauges written to runtime_dir/sluiced.stats on
 * SIGUSR1: "name value" lines, names dotted by subsystem.  The file is
 * written beside and renamed into place, so a reader never sees half of
 * it.  The same values, under the same names, are what the admin socket
 * (admin.c, sluicectl) reports: both read them through the visitors of
 * stats.h, driven by the tables below.  Tests read the file, so its names,
 * order and format do not change.
 */
#include "autoconfig.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "link.h"
#include "log.h"
#include "queue.h"
#include "rcache.h"
#include "release.h"
#include "stats.h"

#define STATS_NAME "sluiced.stats"

/* How a table entry reads its value from the structure at hand. */
enum stat_kind {
	SK_U64,			/* uint64_t at off */
	SK_U32,			/* uint32_t at off */
	SK_BOOL,		/* bool at off: 0 or 1 */
	SK_HEX64,		/* uint64_t at off, as text: 16 hex digits */
	SK_TEXT,		/* const char * at off, as text */
	SK_LINK_STATE,		/* enum link_state at off, as link_state_name() */
};

struct stat_desc {
	const char *name;
	enum stat_kind kind;
	size_t off;
};

/* offsetof(type, field), refused at compile time unless the field is
 * @size bytes wide: a table entry cannot read a field of another width. */
#define OFF_SIZED(type, field, size) \
	(offsetof(type, field) + 0 * sizeof(char[sizeof(((type *)0)->field) == (size) ? 1 : -1]))
#define U64(type, field, name) { name, SK_U64, OFF_SIZED(type, field, sizeof(uint64_t)) }
#define U32(type, field, name) { name, SK_U32, OFF_SIZED(type, field, sizeof(uint32_t)) }
#define FIELD(kind, type, field, size, name) { name, kind, OFF_SIZED(type, field, size) }

static const struct stat_desc daemon_ctr_stats[] = {
	U64(struct daemon_counters, sqes, "sqes"),
	U64(struct daemon_counters, cqes, "cqes"),
	U64(struct daemon_counters, invalid, "invalid"),
	U64(struct daemon_counters, no_endpoint, "no_endpoint"),
	U64(struct daemon_counters, unknown_node, "unknown_node"),
	U64(struct daemon_counters, local_msgs, "local_msgs"),
	U64(struct daemon_counters, remote_msgs_rx, "remote_msgs_rx"),
	U64(struct daemon_counters, unexpected, "unexpected_total"),
	U64(struct daemon_counters, naks_receiver_full, "naks_receiver_full"),
	U64(struct daemon_counters, naks_daemon_full, "naks_daemon_full"),
	U64(struct daemon_counters, lost_wakeups, "lost_wakeups"),
	U64(struct daemon_counters, sleeps, "sleeps"),
	U64(struct daemon_counters, wakeups_tx, "wakeups_tx"),
	U64(struct daemon_counters, guard_passes, "guard_passes"),
	U64(struct daemon_counters, passless_iterations_max, "passless_iterations_max"),
	U64(struct daemon_counters, fd_refused, "fd_refused"),
	U64(struct daemon_counters, admin_evicted, "admin_evicted"),
	U64(struct daemon_counters, admin_timeouts, "admin_timeouts"),

	U64(struct daemon_counters, auth_handshakes, "auth_handshakes"),
	U64(struct daemon_counters, auth_failures, "auth_failures"),
	U64(struct daemon_counters, auth_failures_proof, "auth_failures_proof"),
	U64(struct daemon_counters, auth_failures_key, "auth_failures_key"),
	U64(struct daemon_counters, auth_failures_unknown_node, "auth_failures_unknown_node"),
	U64(struct daemon_counters, auth_failures_role, "auth_failures_role"),
	U64(struct daemon_counters, auth_failures_address, "auth_failures_address"),
	U64(struct daemon_counters, auth_failures_mode, "auth_failures_mode"),
	U64(struct daemon_counters, auth_failures_live, "auth_failures_live"),
	U64(struct daemon_counters, auth_failures_replay, "auth_failures_replay"),
	U64(struct daemon_counters, auth_failures_version, "auth_failures_version"),
	U64(struct daemon_counters, auth_failures_protocol, "auth_failures_protocol"),
	U64(struct daemon_counters, auth_failures_timeout, "auth_failures_timeout"),
	U64(struct daemon_counters, copies_sliced, "copies_sliced"),
	U64(struct daemon_counters, copy_stalls, "copy_stalls"),
	U64(struct daemon_counters, links_over_max, "links_over_max"),
	U64(struct daemon_counters, claims, "claims"),
	U64(struct daemon_counters, claims_received, "claims_received"),
	U64(struct daemon_counters, claims_dropped, "claims_dropped"),
};

static const struct stat_desc rcache_stats[] = {
	U64(struct rcache_stats, hits, "hits"),
	U64(struct rcache_stats, misses, "misses"),
	U64(struct rcache_stats, evictions, "evictions"),
	U64(struct rcache_stats, waits, "waits"),
	U64(struct rcache_stats, naks, "naks"),
	U64(struct rcache_stats, timeouts, "timeouts"),
	U64(struct rcache_stats, cancels, "cancels"),
	U64(struct rcache_stats, reg_fails, "reg_fails"),
	U64(struct rcache_stats, regions, "regions"),
	U64(struct rcache_stats, bytes, "bytes"),
	U64(struct rcache_stats, waiting, "waiting"),
	U64(struct rcache_stats, regs, "regs"),
	U64(struct rcache_stats, deregs, "deregs"),
};

static const struct stat_desc xport_stats[] = {
	U64(struct xport_stats, mrs, "mrs"),
	U64(struct xport_stats, reg_fails, "reg_fails"),
	U64(struct xport_stats, post_enomem, "post_enomem"),
	U64(struct xport_stats, faults_injected, "faults_injected"),
	U64(struct xport_stats, writes_rx, "writes_rx"),
	U64(struct xport_stats, access_errors, "access_errors"),
	U64(struct xport_stats, cuts, "cuts"),
	U64(struct xport_stats, grants, "grants"),
	U64(struct xport_stats, grant_fails, "grant_fails"),
	U64(struct xport_stats, grant_mw_binds, "grant_mw_binds"),
	U64(struct xport_stats, grant_violations, "grant_violations"),
	U64(struct xport_stats, grant_below, "grant_below"),
	U64(struct xport_stats, grant_above, "grant_above"),
	U64(struct xport_stats, grant_revoked, "grant_revoked"),
	U64(struct xport_stats, grant_unknown, "grant_unknown"),
	U64(struct xport_stats, tls_sessions, "tls_sessions"),
	U64(struct xport_stats, tls_ktls_tx, "tls_ktls_tx"),
	U64(struct xport_stats, tls_ktls_rx, "tls_ktls_rx"),
	U64(struct xport_stats, tls_failures, "tls_failures"),
	U64(struct xport_stats, tls_failures_handshake, "tls_failures_handshake"),
	U64(struct xport_stats, tls_failures_record, "tls_failures_record"),
	U64(struct xport_stats, tls_failures_protocol, "tls_failures_protocol"),
	U64(struct xport_stats, tls_failures_internal, "tls_failures_internal"),
};

static const struct stat_desc link_stats[] = {
	FIELD(SK_LINK_STATE, struct link_stats, state, sizeof(enum link_state), "state"),
	U64(struct link_stats, ctr.connects, "connects"),
	U32(struct link_stats, backlog, "backlog"),
	U32(struct link_stats, ctl_queued, "ctl_queued"),
	U64(struct link_stats, credits, "credits"),
	U64(struct link_stats, ctr.backlog_naks, "backlog_naks"),
	U32(struct link_stats, unacked, "unacked"),
	U32(struct link_stats, rc.n_rndv_tx, "rndv_tx"),
	U32(struct link_stats, rc.n_rndv_rx, "rndv_rx"),
	U32(struct link_stats, writes_pending, "writes_pending"),
	U64(struct link_stats, ctr.frames_tx, "frames_tx"),
	U64(struct link_stats, ctr.frames_rx, "frames_rx"),
	U64(struct link_stats, ctr.naks_tx, "naks_tx"),
	U64(struct link_stats, ctr.naks_rx, "naks_rx"),
	U64(struct link_stats, ctr.post_enomem, "post_enomem"),
	U64(struct link_stats, ctr.ctl_deferred, "ctl_deferred"),
	U64(struct link_stats, ctr.writes_tx, "writes_tx"),
	U64(struct link_stats, rc.rndv_tx_done, "rndv_tx_done"),
	U64(struct link_stats, rc.rndv_rx_done, "rndv_rx_done"),
	U64(struct link_stats, rc.rndv_rx_failed, "rndv_rx_failed"),
	U64(struct link_stats, tx_seq, "tx_seq"),
	U64(struct link_stats, rx_seq, "rx_seq"),
	U64(struct link_stats, acked, "acked"),
	U64(struct link_stats, ctr.retransmits, "retransmits"),
	FIELD(SK_BOOL, struct link_stats, retransmit_timer, sizeof(bool), "retransmit_timer"),
	U64(struct link_stats, ctr.rx_duplicates, "rx_duplicates"),
	U64(struct link_stats, ctr.ack_timeouts, "ack_timeouts"),
	U64(struct link_stats, ctr.peer_timeouts, "peer_timeouts"),
	U64(struct link_stats, ctr.peer_restarts, "peer_restarts"),
	U64(struct link_stats, ctr.restart_failed, "restart_failed"),
	U64(struct link_stats, ctr.restart_kept, "restart_kept"),
	U64(struct link_stats, ctr.nudges_tx, "nudges_tx"),
	U64(struct link_stats, ctr.nudges_rx, "nudges_rx"),
	U64(struct link_stats, rc.rndv_restarts, "rndv_restarts"),
	U64(struct link_stats, rc.rndv_resumed_bytes, "rndv_resumed_bytes"),
	U64(struct link_stats, ctr.tx_ahead_max, "tx_ahead_max"),
	U64(struct link_stats, ctr.illegal_moves, "illegal_moves"),
	U64(struct link_stats, ctr.silences, "silences"),
	U64(struct link_stats, ctr.byes_rx, "byes_rx"),
	U64(struct link_stats, ctr.idle_closes, "idle_closes"),
	U64(struct link_stats, ctr.idle_wakes, "idle_wakes"),
	U64(struct link_stats, ctr.idle_refused, "idle_refused"),
	U32(struct link_stats, ack_backoff, "ack_backoff"),
	U64(struct link_stats, tx_gap_max_ms, "tx_gap_max_ms"),
	U64(struct link_stats, rx_gap_max_ms, "rx_gap_max_ms"),
	FIELD(SK_HEX64, struct link_stats, incarnation, sizeof(uint64_t), "incarnation"),
	FIELD(SK_TEXT, struct link_stats, auth, sizeof(const char *), "auth"),
	U64(struct link_stats, ctr.msgs_tx, "msgs_tx"),
	U64(struct link_stats, ctr.bytes_tx, "bytes_tx"),
	U64(struct link_stats, ctr.msgs_rx, "msgs_rx"),
	U64(struct link_stats, ctr.bytes_rx, "bytes_rx"),
};

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void visit_table(const struct stat_desc *t, size_t n, const void *base,
			stat_visit_fn fn, void *arg)
{
	const unsigned char *p = base;
	char hex[20];
	size_t i;

	for (i = 0; i < n; i++) {
		const void *at = p + t[i].off;
		struct stat_value v = { .name = t[i].name };

		switch (t[i].kind) {
		case SK_U64: {
			uint64_t x;

			memcpy(&x, at, sizeof(x));
			v.num = x;
			break;
		}
		case SK_U32: {
			uint32_t x;

			memcpy(&x, at, sizeof(x));
			v.num = x;
			break;
		}
		case SK_BOOL: {
			bool x;

			memcpy(&x, at, sizeof(x));
			v.num = x ? 1 : 0;
			break;
		}
		case SK_HEX64: {
			uint64_t x;

			memcpy(&x, at, sizeof(x));
			snprintf(hex, sizeof(hex), "%016" PRIx64, x);
			v.is_text = true;
			v.text = hex;
			break;
		}
		case SK_TEXT:
			memcpy(&v.text, at, sizeof(v.text));
			v.is_text = true;
			break;
		case SK_LINK_STATE: {
			enum link_state x;

			memcpy(&x, at, sizeof(x));
			v.is_text = true;
			v.text = link_state_name(x);
			break;
		}
		}
		fn(arg, &v);
	}
}

static void visit_num(stat_visit_fn fn, void *arg, const char *name, uint64_t num)
{
	struct stat_value v = { .name = name, .num = num };

	fn(arg, &v);
}

void stats_visit_daemon(struct daemon *d, stat_visit_fn fn, void *arg)
{
	uint64_t unexp = 0, posted = 0, claimed = 0;
	struct queue *q;

	visit_table(daemon_ctr_stats, N_ELEMS(daemon_ctr_stats), &d->ctr, fn, arg);
	visit_num(fn, arg, "queues", d->n_queues);
	visit_num(fn, arg, "quota_stalls", d->ctr.quota_stalls);
	TAILQ_FOREACH(q, &d->queues, all) {
		unexp += q->mq.n_unexpected;
		posted += q->mq.n_posted;
		claimed += q->mq.n_claimed;
	}
	visit_num(fn, arg, "unexpected", unexp);
	/* The sum over the queues, kept as they change (match.h). */
	visit_num(fn, arg, "unexpected_bytes", d->unexpected_bytes);
	visit_num(fn, arg, "unexpected_limit_bytes", d->cfg.unexpected_total_bytes);
	visit_num(fn, arg, "mem_trims", d->mem_ret.trims);
	visit_num(fn, arg, "posted_recvs", posted);
	visit_num(fn, arg, "copies", d->n_copies);
	visit_num(fn, arg, "releases_async", release_async_count(d));
	visit_num(fn, arg, "release_pending_bytes", release_pending_bytes(d));
	visit_num(fn, arg, "release_errors", release_errors(d));
	/* Claimed messages held now (sl_probe(3)); their bytes count in
	 * unexpected_bytes, the messages not in unexpected. */
	visit_num(fn, arg, "claimed", claimed);
	/* The progress engine's spin window now (progress.c, sl_spin.h). */
	visit_num(fn, arg, "spin_us", (uint64_t)(d->spin_s * 1e6 + 0.5));
}

void stats_visit_loop(struct daemon *d, stat_visit_fn fn, void *arg)
{
	visit_num(fn, arg, "iteration_max_ms", (uint64_t)(d->loop_w.iteration_max * 1e3 + 0.5));
	visit_num(fn, arg, "stalls", d->loop_w.stalls);
	visit_num(fn, arg, "stall_max_ms", (uint64_t)(d->loop_w.stall_max * 1e3 + 0.5));
	visit_num(fn, arg, "watchdog_gap_max_ms",
		  (uint64_t)(d->loop_w.watchdog_gap_max * 1e3 + 0.5));
}

void stats_visit_rcache(struct daemon *d, stat_visit_fn fn, void *arg)
{
	struct rcache_stats rs;

	rcache_get_stats(d->rc, &rs);
	visit_table(rcache_stats, N_ELEMS(rcache_stats), &rs, fn, arg);
}

void stats_visit_xport(struct daemon *d, stat_visit_fn fn, void *arg)
{
	struct xport_stats xs;

	memset(&xs, 0, sizeof(xs));
	d->xp->ops->get_stats(d->xp, &xs);
	visit_table(xport_stats, N_ELEMS(xport_stats), &xs, fn, arg);
}

void stats_visit_link(const struct link_stats *st, stat_visit_fn fn, void *arg)
{
	visit_table(link_stats, N_ELEMS(link_stats), st, fn, arg);
}

/* The file writer: "PREFIX.name value" per line. */
struct file_visit {
	FILE *f;
	const char *prefix;	/* "daemon", "link.B", ... */
};

static void file_line(void *arg, const struct stat_value *v)
{
	const struct file_visit *fv = arg;

	if (v->is_text)
		fprintf(fv->f, "%s.%s %s\n", fv->prefix, v->name, v->text);
	else
		fprintf(fv->f, "%s.%s %" PRIu64 "\n", fv->prefix, v->name, v->num);
}

static void write_all(struct daemon *d, FILE *f)
{
	char prefix[CONFIG_NAME_MAX + 8];
	struct file_visit fv = { .f = f };
	size_t i;

	fv.prefix = "daemon";
	stats_visit_daemon(d, file_line, &fv);
	fv.prefix = "rcache";
	stats_visit_rcache(d, file_line, &fv);
	fv.prefix = "xport";
	stats_visit_xport(d, file_line, &fv);
	fv.prefix = "loop";
	stats_visit_loop(d, file_line, &fv);
	fv.prefix = prefix;
	for (i = 0; i < d->n_links; i++) {
		struct link_stats st;

		link_get_stats(d->links[i], &st);
		snprintf(prefix, sizeof(prefix), "link.%s", st.name);
		stats_visit_link(&st, file_line, &fv);
	}
}

int daemon_stats_write(struct daemon *d)
{
	char path[CONFIG_PATH_MAX + 32], tmp[CONFIG_PATH_MAX + 40];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", d->cfg.runtime_dir, STATS_NAME);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f) {
		rc = -errno;
		log_warn("stats: %s: %m", tmp);
		return rc;
	}
	write_all(d, f);
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		log_warn("stats: %s: %s", path, strerror(-rc));
		if (unlink(tmp) < 0 && errno != ENOENT)
			log_warn("stats: unlink %s: %m", tmp);
	}
	return rc;
}

static void sigusr1_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	daemon_stats_write(w->data);
}

void daemon_stats_init(struct daemon *d)
{
	ev_signal_init(&d->sigusr1_w, sigusr1_cb, SIGUSR1);
	d->sigusr1_w.data = d;
	ev_signal_start(d->loop, &d->sigusr1_w);
}
