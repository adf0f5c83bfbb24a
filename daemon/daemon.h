/*
 * daemon.h - the state of one sluiced: one libev loop, its sessions,
 * queues, port table, links and counters.
 *
 * Progress model (io_uring SQPOLL, spin-then-block): while any queue had
 * work recently an ev_idle watcher keeps the loop polling the rings of
 * the active queues; a queue idle for spin_s sets NEED_WAKEUP on its SQ
 * and leaves the active list (its client rings from then on), and with
 * no active queue and nothing to do the daemon sleeps in epoll until a
 * doorbell eventfd, a socket or a timer fires.
 */
#ifndef SLD_DAEMON_H
#define SLD_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <ev.h>

#include "accept_pause.h"
#include "config.h"
#include "loop_watch.h"
#include "mem_return.h"
#include "sl_spin.h"
#include "uid_quota.h"
#include "xport/xport.h"

/* The struct of @type whose @member @p points at. */
#define container_of(p, type, member) \
	((type *)(const void *)((const char *)(p) - offsetof(type, member)))

struct queue;
struct session;
struct link;
struct link_handlers;
struct endpoint_rndv_hooks;
struct match_queues;
struct admin;
struct link_auth;
struct service;
struct resolver;

#define SLD_PORTS 65536u
#define SLD_SOCKET_NAME "sluiced.sock"
#define SLD_LOCK_NAME "sluiced.lock"
#define SLD_STATUS_SLOTS 32	/* daemon_counters.completions */
#define ENGINE_UNKNOWN_LOGGED 64	/* unknown nodes logged, each once */

struct daemon_counters {
	uint64_t sqes;			/* descriptors accepted */
	uint64_t cqes;			/* completions written */
	uint64_t invalid;		/* SL_ERR_INVALID completions */
	uint64_t no_endpoint;		/* local sends to a port nothing is bound to */
	uint64_t unknown_node;		/* sends and receives naming a node not configured */
	uint64_t local_msgs;		/* intra-node deliveries */
	uint64_t remote_msgs_rx;	/* messages received from links */
	uint64_t unexpected;		/* messages that arrived before a receive */
	uint64_t naks_receiver_full;	/* refused: unexpected bound reached */
	uint64_t naks_daemon_full;	/* of those, by the daemon-wide bound */
	uint64_t wakeups_tx;		/* eventfd writes to clients */
	uint64_t sleeps;		/* times the progress engine went idle */
	uint64_t ring_errors;		/* corrupt ring indices seen */
	uint64_t quota_stalls;		/* drains stopped at client_max_inflight */
	/* Times the engine, about to sleep, found a link that could still
	 * post and stayed awake: a wake-up that some event failed to give
	 * (daemon_wake).  0 unless there is a bug; tests assert it. */
	uint64_t lost_wakeups;
	/* Loop iterations in which ready descriptors kept the idle watcher
	 * out and the starvation guard ran the passes (progress.c), and the
	 * longest run of iterations with the engine running but no pass at
	 * all: 0 while the guard works, however hard a client rings. */
	uint64_t guard_passes;
	uint64_t passless_iterations_max;
	/* Connections to the control or admin socket refused with a reason
	 * because the daemon was out of descriptors (fd_reserve.h). */
	uint64_t fd_refused;
	/* Admin connections dropped: evicted for a new one, or out of time
	 * (admin.h). */
	uint64_t admin_evicted;
	uint64_t admin_timeouts;

	/* Link handshakes (link_auth.h): connections that proved themselves,
	 * and those refused, in all and by reason. */
	uint64_t auth_handshakes;
	uint64_t auth_failures;
	uint64_t auth_failures_proof;		/* a proof that does not check out */
	uint64_t auth_failures_key;		/* no key in common */
	uint64_t auth_failures_unknown_node;	/* a node not in [peers] */
	uint64_t auth_failures_role;		/* dials us, but we dial it */
	uint64_t auth_failures_address;		/* not from the peer's address */
	uint64_t auth_failures_mode;		/* the other [security] mode */
	uint64_t auth_failures_live;		/* mode none: the link is up */
	uint64_t auth_failures_replay;		/* a nonce seen before */
	uint64_t auth_failures_version;		/* another wire version */
	uint64_t auth_failures_protocol;	/* frames out of order, garbage */
	uint64_t auth_failures_timeout;		/* no HELLO in XPORT_HELLO_TIMEOUT */
	uint64_t copies_sliced;		/* local copies too large to do at once */
	/* Times more links were connected than [limits] max_links with
	 * none quiet to close (link_idle.c). */
	uint64_t links_over_max;
	uint64_t copy_stalls;		/* queues failed: copies made no progress */
	/* Messages set aside by sl_probe(SL_PROBE_CLAIM); of those, the
	 * claims sl_recv_claimed() took (whatever it completed), and those
	 * freed untaken when their queue closed or failed.  Claimed now is
	 * claims - claims_received - claims_dropped (endpoint.c). */
	uint64_t claims;
	uint64_t claims_received;
	uint64_t claims_dropped;
	/* Completions by status (queue_complete): enum sl_status values
	 * below SLD_STATUS_SLOTS - 1 count in their own slot, anything else
	 * in the last one. */
	uint64_t completions[SLD_STATUS_SLOTS];
};

static inline unsigned daemon_status_slot(int32_t status)
{
	return status >= 0 && status < SLD_STATUS_SLOTS - 1 ? (unsigned)status
							     : SLD_STATUS_SLOTS - 1;
}

/* The links by node id (link_table.h, link_index_*): open addressing
 * with linear probing, at most half full.  Declared here so that
 * daemon.h needs nothing of the links' headers. */
struct link_slot {
	uint32_t node_id;
	struct link *l;		/* NULL: free */
};
struct link_index {
	struct link_slot *slot;
	size_t mask;		/* slots - 1, slots a power of two; 0: none yet */
	size_t used;
};

struct daemon {
	struct ev_loop *loop;
	struct config cfg;
	const char *config_path;	/* NULL: built-in defaults */
	uint64_t incarnation;		/* start id, changes on every start */
	ev_tstamp started;

	int ctl_fd;
	int lock_fd;			/* flock()ed runtime_dir/sluiced.lock */
	bool stopping;			/* shutting down: pending work is CANCELED */
	bool draining;			/* stop signal seen: new SQEs are CANCELED,
					 * the rest may finish (service.h) */
	int argc;			/* the command line, reapplied on reload */
	char **argv;
	struct service *svc;		/* systemd, reload, drain (service.c); NULL
					 * outside service_init..service_destroy */
	ev_io ctl_w;
	struct accept_pause ctl_pause;	/* accept() out of fds: back off */
	char ctl_path[CONFIG_PATH_MAX + 32];

	TAILQ_HEAD(, session) sessions;
	struct uid_usage_list uids;	/* per-uid usage (uid_quota.h); zeroed = empty */
	TAILQ_HEAD(, queue) queues;	/* every live queue */
	/* The queues a pass drains: awake, NEED_WAKEUP clear (queue.h,
	 * queue_activate).  The others sleep with NEED_WAKEUP set and come
	 * back by their doorbell, so idle queues cost a pass nothing. */
	TAILQ_HEAD(queue_active_list, queue) active;
	/* Asleep with SQEs that client_max_inflight holds back: a completion
	 * of the same client or uid wakes them (queue_complete). */
	TAILQ_HEAD(, queue) quota_waiters;
	struct queue **ports;		/* SLD_PORTS entries: bound queue or NULL */
	/* The charges of every endpoint's unexpected messages (match.h's
	 * shared total), against [limits] unexpected_total_bytes; the
	 * memory they took goes back to the kernel after a burst. */
	uint64_t unexpected_bytes;
	struct mem_return mem_ret;
	uint32_t n_queues;
	uint32_t next_queue_id;
	uint32_t next_ephemeral;

	/* Local rendezvous copies under way, in slices (copy.h). */
	TAILQ_HEAD(, local_copy) copies;
	unsigned n_copies;
	struct releaser *releaser;	/* segments unmapped off the loop (release.h) */

	/* Queues whose CQ got entries this pass and may need a wake-up. */
	TAILQ_HEAD(, queue) cq_dirty;

	ev_idle progress_w;		/* runs passes while spinning */
	ev_check starvation_w;		/* runs them if fds keep idle out */
	bool idle_ran;			/* progress_w ran since the last check */
	bool kicked;			/* daemon_wake() since try_sleep began */
	/* Nodes logged as unknown (engine.c, note_unknown_node). */
	uint32_t unknown_logged[ENGINE_UNKNOWN_LOGGED];
	unsigned n_unknown_logged;
	unsigned starved;		/* checks in a row without it */
	ev_tstamp last_work;		/* ev_now() of the last pass with work */
	double spin_s;			/* busy-poll window, seconds */
	/* The window learnt from the waits (sl_spin.h), unless --spin-us
	 * fixed it: the waits are the stretches of passes without work,
	 * from the last pass with work (worked_at) to the next. */
	struct sl_spin spin;
	bool spin_fixed;
	bool idle_passes;		/* a pass found nothing since worked_at */
	ev_tstamp worked_at;
	struct loop_watch loop_w;	/* last poll, longest iteration, stalls */

	struct xport *xp;
	struct rcache *rc;		/* registrations of client arenas */
	ev_timer rcache_w;		/* waiting registrations' deadlines */
	/* Every link, in the order they were made, and the same by node
	 * (link_table.h: changed only by link_table_add/remove). */
	struct link **links;
	size_t n_links;
	size_t links_cap;		/* room in links[] */
	struct link_index links_by_node;
	/* Of the links, those a client's sl_node_resolve() added
	 * (link_add_resolved), against [limits] max_resolved_peers. */
	size_t n_resolved_peers;
	struct resolver *resolver;	/* lookups under way (resolve.c); NULL
					 * before the first */
	/* Links with frames, writes, ACKs or rendezvous to finish for the
	 * passes (link_kick); the others cost a pass nothing. */
	TAILQ_HEAD(link_ready_list, link) link_ready;
	/* The links up (connected and past the handshake): only they can
	 * post, so the check before sleeping walks them, not every peer. */
	TAILQ_HEAD(link_up_list, link) links_up;
	/* When the links on demand last looked for one to close for
	 * [limits] max_links (link_idle.c): an ask a busy peer let lapse is
	 * made again, to another link if need be. */
	ev_tstamp link_cap_checked;
	const struct link_handlers *link_handlers;	/* the engine's (link.h) */
	const struct endpoint_rndv_hooks *rndv_hooks;	/* rndv.c's (endpoint.h) */
	/* Receives naming a node join and leave the posted lists of every
	 * queue's matcher (match.h, match_named_fn; the engine's). */
	void (*recv_named)(struct match_queues *mq, uint32_t node, int delta);
	struct admin *admin;		/* admin socket (admin.c); NULL: none */
	struct link_auth *auth;		/* keys and handshakes (link_auth.c) */

	ev_signal sigterm_w, sigint_w, sighup_w, sigusr1_w;
	struct daemon_counters ctr;
};

/*
 * Registration cache glue (mr.c): the cache registers arena ranges through
 * the transport's reg_mr; owners are queue ids.
 * daemon_rcache_init - create d->rc from [rcache].  Returns 0 or -errno.
 * daemon_rcache_destroy - free it (logs registrations still held).
 * daemon_rcache_arm - (re)arm the timer that fails waiters past
 *   max_wait_ms; call after a request has been queued.
 * rcache_status - the completion status for a registration error @err
 *   (rcache_get or a waiter's callback) on the receiving (@receiver) or
 *   sending side: an endpoint that went away is SL_ERR_NO_ENDPOINT for a
 *   receiver and SL_ERR_CANCELED for a sender; a span over max_bytes
 *   SL_ERR_REG_LIMIT; everything else (no room in time, queue full, the
 *   transport out of MRs) SL_NAK_BUSY.
 */
int daemon_rcache_init(struct daemon *d);
void daemon_rcache_destroy(struct daemon *d);
void daemon_rcache_arm(struct daemon *d);
int rcache_status(int err, bool receiver);

/*
 * Statistics (stats.c): on SIGUSR1 the daemon writes every counter and
 * gauge, one "name value" per line, to runtime_dir/sluiced.stats (a new
 * file renamed into place).  Until sluicectl exists this is how tests
 * and operators read them.
 */
void daemon_stats_init(struct daemon *d);
int daemon_stats_write(struct daemon *d);

/* The progress engine's spin window before it blocks, microseconds: where
 * it starts and its bounds as it learns (progress.c), or what sluiced
 * --spin-us fixes. */
#define DAEMON_SPIN_US_DEFAULT 50
#define DAEMON_SPIN_US_MIN 50
#define DAEMON_SPIN_US_MAX 200

/*
 * daemon_init - @d (zeroed) set up empty: no fds, empty lists, the default
 * spin window and config_defaults().  sluiced's main() and the fuzz
 * harnesses' daemon both start here, so that a field added to the daemon
 * is set up in one place.  Returns 0 or config_defaults()'s -errno.
 */
int daemon_init(struct daemon *d);

/* Set up the progress engine (progress.c). */
void daemon_progress_init(struct daemon *d);

/* Run one progress pass over every queue and link; returns units of work. */
unsigned daemon_progress(struct daemon *d);

/* Write client wake-ups for queues whose CQ got entries. */
void daemon_flush_cq_wakeups(struct daemon *d);

#endif
