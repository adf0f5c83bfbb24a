/*
 * openmetrics.c - the daemon's admin replies as OpenMetrics or Prometheus
 * text (openmetrics.h).  A table below says, for each field of each reply,
 * its metric name, counter or gauge, unit and help; the replies are walked
 * in their order, every number becomes a sample, and samples are printed
 * grouped by family (both formats require a family's samples together).
 */
#define _GNU_SOURCE
#include "autoconfig.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "openmetrics.h"

#define PREFIX "sluice_"
#define OUTPUT_MODE 0644	/* node_exporter reads it as another user */

enum om_type {
	OM_COUNTER,
	OM_GAUGE,
	OM_STATESET,	/* one sample per state, 1 for the current one */
	OM_INFO,	/* value 1, the facts in labels */
	OM_UNKNOWN,	/* a field this table does not describe */
};

/*
 * One field of one group.  @name NULL: a field deliberately not exported
 * (its value is another family's).  @divisor 1000 turns the daemon's
 * milliseconds into seconds.
 */
struct om_family {
	const char *group;
	const char *key;	/* the JSON field; "*" every field of the group */
	const char *name;	/* after PREFIX; counters without _total */
	enum om_type type;
	const char *unit;	/* "bytes", "seconds" or NULL */
	unsigned divisor;
	const char *help;
};

#define C(g, k, n, h) { g, k, n, OM_COUNTER, NULL, 1, h }
#define CB(g, k, n, h) { g, k, n, OM_COUNTER, "bytes", 1, h }
#define G(g, k, n, h) { g, k, n, OM_GAUGE, NULL, 1, h }
#define GB(g, k, n, h) { g, k, n, OM_GAUGE, "bytes", 1, h }
#define GMS(g, k, n, h) { g, k, n, OM_GAUGE, "seconds", 1000, h }
#define SKIP(g, k) { g, k, NULL, OM_GAUGE, NULL, 1, NULL }

/* HELP texts hold no backslash and no double quote: the two formats
 * escape them differently. */
static const struct om_family families[] = {
	/* status (sluicectl status) */
	G("status", "clients", "clients", "Client processes connected to the control socket."),
	SKIP("status", "queues"),	/* = daemon.queues */
	G("status", "links", "links", "Links configured: one per peer."),
	G("status", "links_up", "links_up", "Links up now."),
	{ "status", "uptime_s", "uptime_seconds", OM_GAUGE, "seconds", 1,
	  "Seconds since sluiced started." },
	SKIP("status", "pid"),		/* the incarnation in sluice_node_info tells restarts */
	/* status.loop (loop_watch.h) */
	GMS("loop", "iteration_max_ms", "loop_iteration_max_seconds",
	    "Longest iteration of the daemon's event loop since it started."),
	C("loop", "stalls", "loop_stalls",
	  "Loop iterations in which a timer ran 0.2 s or more late: the daemon stalled."),
	GMS("loop", "stall_max_ms", "loop_stall_max_seconds", "Longest of those stalls."),
	GMS("loop", "watchdog_gap_max_ms", "loop_watchdog_gap_max_seconds",
	    "Longest gap between two systemd watchdog notifications."),
	/* status.memory (mem_usage.h), when the daemon reports it */
	GB("memory", "rss_bytes", "memory_rss_bytes", "Resident set size of sluiced."),
	GB("memory", "arena_bytes", "memory_arena_bytes", "Bytes of the arenas of every queue."),
	GB("memory", "mapped_bytes", "memory_mapped_bytes",
	   "Bytes of the queue segments mapped (header, rings, arena), shared with clients."),
	SKIP("memory", "unexpected_bytes"),	/* = daemon.unexpected_bytes */
	SKIP("memory", "unexpected_limit_bytes"),	/* = daemon.unexpected_limit_bytes */
	GB("memory", "link_buffer_bytes", "memory_link_buffer_bytes",
	   "Bytes in the transport connections' send and receive buffers, every link."),
	GB("memory", "retransmit_bytes", "memory_retransmit_bytes",
	   "Payload bytes of the frames kept for retransmission, every link."),
	/* counters.daemon */
	C("daemon", "sqes", "daemon_sqes", "Descriptors taken from clients' submission rings."),
	C("daemon", "cqes", "daemon_cqes", "Completions written to clients' completion rings."),
	C("daemon", "invalid", "daemon_invalid", "Descriptors refused as malformed (SL_ERR_INVALID)."),
	C("daemon", "no_endpoint", "daemon_no_endpoint",
	  "Local sends that found no queue bound to their port. sluice_completions_total with "
	  "status no_endpoint counts every completion of that status: these, sends a peer "
	  "refused the same way, and transfers whose queue closed."),
	C("daemon", "unknown_node", "daemon_unknown_node",
	  "Sends and receives naming a node not in the configuration."),
	C("daemon", "local_msgs", "daemon_local_msgs", "Messages delivered within this node."),
	C("daemon", "remote_msgs_rx", "daemon_remote_msgs_rx", "Messages received from peers."),
	C("daemon", "unexpected_total", "daemon_unexpected",
	  "Messages that arrived before a matching receive was posted."),
	C("daemon", "naks_receiver_full", "daemon_naks_receiver_full",
	  "Messages refused because the receiving queue, or the daemon over all queues, held "
	  "its bound of unexpected messages."),
	C("daemon", "naks_daemon_full", "daemon_naks_daemon_full",
	  "Of those, the messages refused by the daemon-wide bound (unexpected_total_bytes)."),
	C("daemon", "lost_wakeups", "daemon_lost_wakeups",
	  "Wake-ups some event failed to give the progress engine (0 unless there is a bug)."),
	C("daemon", "sleeps", "daemon_sleeps", "Times the progress engine went idle."),
	C("daemon", "wakeups_tx", "daemon_wakeups_tx",
	  "Wake-ups written to clients' event descriptors."),
	C("daemon", "guard_passes", "daemon_guard_passes",
	  "Loop iterations in which ready descriptors kept the engine from idling and the "
	  "starvation guard ran its passes."),
	G("daemon", "passless_iterations_max", "daemon_passless_iterations_max",
	  "Longest run of loop iterations with the engine running and no pass (0 while the "
	  "starvation guard works)."),
	C("daemon", "fd_refused", "daemon_fd_refused",
	  "Control or admin connections refused because the daemon was out of descriptors."),
	C("daemon", "admin_evicted", "daemon_admin_evicted",
	  "Admin connections dropped to make room for a new one."),
	C("daemon", "admin_timeouts", "daemon_admin_timeouts",
	  "Admin connections dropped for taking too long."),
	C("daemon", "auth_handshakes", "daemon_auth_handshakes",
	  "Link handshakes completed: peers that proved who they are."),
	C("daemon", "auth_failures", "daemon_auth_failures",
	  "Link handshakes refused, every reason (the sum of the auth_failures_* counters)."),
	C("daemon", "auth_failures_proof", "daemon_auth_failures_proof",
	  "Handshakes refused: a proof that does not check out."),
	C("daemon", "auth_failures_key", "daemon_auth_failures_key",
	  "Handshakes refused: no key in common."),
	C("daemon", "auth_failures_unknown_node", "daemon_auth_failures_unknown_node",
	  "Handshakes refused: a node not in [peers]."),
	C("daemon", "auth_failures_role", "daemon_auth_failures_role",
	  "Handshakes refused: the peer dialled although this node dials it."),
	C("daemon", "auth_failures_address", "daemon_auth_failures_address",
	  "Handshakes refused: not from the peer's configured address."),
	C("daemon", "auth_failures_mode", "daemon_auth_failures_mode",
	  "Handshakes refused: the peer runs the other [security] mode."),
	C("daemon", "auth_failures_live", "daemon_auth_failures_live",
	  "Handshakes refused: mode none and the link is up already."),
	C("daemon", "auth_failures_replay", "daemon_auth_failures_replay",
	  "Handshakes refused: a nonce seen before."),
	C("daemon", "auth_failures_version", "daemon_auth_failures_version",
	  "Handshakes refused: another wire version."),
	C("daemon", "auth_failures_protocol", "daemon_auth_failures_protocol",
	  "Handshakes refused: frames out of order or garbage."),
	C("daemon", "auth_failures_timeout", "daemon_auth_failures_timeout",
	  "Handshakes refused: no HELLO in time."),
	C("daemon", "copies_sliced", "daemon_copies_sliced",
	  "Local copies too large to do at once, done in slices."),
	C("daemon", "copy_stalls", "daemon_copy_stalls",
	  "Queues failed because their local copies made no progress."),
	C("daemon", "links_over_max", "daemon_links_over_max",
	  "Times more links were connected than max_links with none quiet to close."),
	C("daemon", "claims", "daemon_claims", "Messages set aside by a claiming probe."),
	C("daemon", "claims_received", "daemon_claims_received",
	  "Of those, the claims a claimed receive took."),
	C("daemon", "claims_dropped", "daemon_claims_dropped",
	  "Claims freed untaken because their queue closed or failed."),
	G("daemon", "queues", "daemon_queues", "Queues open now."),
	C("daemon", "quota_stalls", "daemon_quota_stalls",
	  "Submission ring drains stopped at client_max_inflight."),
	G("daemon", "unexpected", "daemon_unexpected_messages",
	  "Unexpected messages held now, waiting for a receive, over all queues."),
	GB("daemon", "unexpected_bytes", "daemon_unexpected_bytes",
	   "Bytes of the unexpected messages held now, over all queues."),
	GB("daemon", "unexpected_limit_bytes", "daemon_unexpected_limit_bytes",
	   "The bound on those bytes over all queues (unexpected_total_bytes)."),
	C("daemon", "mem_trims", "daemon_mem_trims",
	  "Times freed memory was given back to the kernel after a burst of unexpected messages."),
	G("daemon", "posted_recvs", "daemon_posted_recvs",
	  "Receives posted and waiting for a message now, over all queues."),
	G("daemon", "copies", "daemon_copies", "Local copies in progress now."),
	C("daemon", "releases_async", "daemon_releases_async",
	  "Large segments handed to the release thread to be unmapped off the loop."),
	GB("daemon", "release_pending_bytes", "daemon_release_pending_bytes",
	   "Bytes handed to the release thread and not yet unmapped."),
	C("daemon", "release_errors", "daemon_release_errors",
	  "Unmaps of the release thread that failed."),
	G("daemon", "claimed", "daemon_claimed_messages",
	  "Claimed messages held now, over all queues; their bytes count in daemon_unexpected_bytes."),
	{ "daemon", "spin_us", "daemon_spin_seconds", OM_GAUGE, "seconds", 1000000,
	  "The progress engine's spin window now: learnt from its waits, or fixed by --spin-us." },
	/* counters.completions: the status in a label */
	C("completions", "*", "completions",
	  "Completions written, by status (the words of sl_strerror: ok, nak_busy, "
	  "no_endpoint, ...)."),
	/* counters.xport */
	G("xport", "mrs", "xport_mrs", "Memory registrations of the transport live now."),
	C("xport", "reg_fails", "xport_reg_fails", "Memory registrations that failed."),
	C("xport", "post_enomem", "xport_post_enomem",
	  "Posts the transport refused: send queue full or out of memory."),
	C("xport", "faults_injected", "xport_faults_injected",
	  "Failures injected by the [fault] section (tests)."),
	C("xport", "writes_rx", "xport_writes_rx", "RDMA writes placed in this node's memory."),
	C("xport", "access_errors", "xport_access_errors",
	  "RDMA writes refused: a bad key or range."),
	C("xport", "cuts", "xport_cuts", "Connections broken by the [fault] section (tests)."),
	G("xport", "grants", "xport_grants", "Write grants live now, over all connections."),
	C("xport", "grant_fails", "xport_grant_fails", "Write grants that could not be made."),
	C("xport", "grant_violations", "xport_grant_violations",
	  "Writes refused by the grant check, every reason."),
	C("xport", "grant_below", "xport_grant_below",
	  "Writes refused: below the granted range."),
	C("xport", "grant_above", "xport_grant_above",
	  "Writes refused: above the granted range."),
	C("xport", "grant_revoked", "xport_grant_revoked",
	  "Writes refused: the grant was revoked."),
	C("xport", "grant_unknown", "xport_grant_unknown", "Writes refused: no such grant."),
	C("xport", "grant_mw_binds", "xport_grant_mw_binds",
	  "Write grants made as memory-window binds (verbs; registrations elsewhere)."),
	C("xport", "tls_sessions", "xport_tls_sessions",
	  "TLS handshakes completed ([security] mode encrypt)."),
	C("xport", "tls_ktls_tx", "xport_tls_ktls_tx",
	  "TLS connections whose records the kernel seals (kTLS)."),
	C("xport", "tls_ktls_rx", "xport_tls_ktls_rx",
	  "TLS connections whose records the kernel opens (kTLS)."),
	C("xport", "tls_failures", "xport_tls_failures",
	  "TLS failures, every reason; each broke its connection."),
	C("xport", "tls_failures_handshake", "xport_tls_failures_handshake",
	  "TLS failures: the handshake failed (another key, not a sluiced)."),
	C("xport", "tls_failures_record", "xport_tls_failures_record",
	  "TLS failures: a record did not authenticate (changed on the way)."),
	C("xport", "tls_failures_protocol", "xport_tls_failures_protocol",
	  "TLS failures: another TLS error after the handshake."),
	C("xport", "tls_failures_internal", "xport_tls_failures_internal",
	  "TLS failures: OpenSSL could not set a connection up."),
	/* rcache */
	C("rcache", "hits", "rcache_hits", "Registration cache lookups served at once."),
	C("rcache", "misses", "rcache_misses", "Registration cache lookups that needed a registration."),
	C("rcache", "evictions", "rcache_evictions", "Idle registrations dropped to make room."),
	C("rcache", "waits", "rcache_waits", "Registration cache lookups that had to wait."),
	C("rcache", "naks", "rcache_naks", "Registration cache lookups refused (full)."),
	C("rcache", "timeouts", "rcache_timeouts", "Waiting lookups failed after max_wait_ms."),
	C("rcache", "cancels", "rcache_cancels", "Waiting lookups cancelled."),
	C("rcache", "reg_fails", "rcache_reg_fails", "Registrations that failed."),
	G("rcache", "regions", "rcache_regions", "Registered regions live now."),
	GB("rcache", "bytes", "rcache_bytes", "Bytes registered now."),
	G("rcache", "waiting", "rcache_waiting", "Lookups waiting now."),
	C("rcache", "regs", "rcache_regs", "Registrations made."),
	C("rcache", "deregs", "rcache_deregs", "Registrations released."),
	/* links[]: label peer */
	{ "link", "state", "link_state", OM_STATESET, NULL, 1,
	  "State of the link: down, connecting, hello (handshake) or up." },
	C("link", "connects", "link_connects", "Connections of the link established."),
	G("link", "backlog", "link_backlog", "Frames waiting to be handed to the transport now."),
	G("link", "ctl_queued", "link_ctl_queued", "Of those, control frames."),
	G("link", "credits", "link_credits", "Data frames the peer lets this node send now."),
	C("link", "backlog_naks", "link_backlog_naks",
	  "Sends refused because the backlog was at link_backlog_max."),
	G("link", "unacked", "link_unacked", "Frames sent and not yet acknowledged."),
	G("link", "rndv_tx", "link_rndv_tx", "Rendezvous sends in progress."),
	G("link", "rndv_rx", "link_rndv_rx", "Rendezvous receives in progress."),
	G("link", "writes_pending", "link_writes_pending", "Rendezvous writes waiting to be posted."),
	C("link", "frames_tx", "link_frames_tx", "Frames sent on the link."),
	C("link", "frames_rx", "link_frames_rx", "Frames received on the link."),
	C("link", "naks_tx", "link_naks_tx", "NAKs sent: messages of the peer refused."),
	C("link", "naks_rx", "link_naks_rx", "NAKs received: messages the peer refused."),
	C("link", "post_enomem", "link_post_enomem",
	  "Posts refused by the transport: send queue full or out of memory."),
	C("link", "ctl_deferred", "link_ctl_deferred", "Control frames that had to wait."),
	C("link", "writes_tx", "link_writes_tx", "Rendezvous writes posted."),
	C("link", "rndv_tx_done", "link_rndv_tx_done", "Rendezvous sends completed."),
	C("link", "rndv_rx_done", "link_rndv_rx_done", "Rendezvous receives completed."),
	C("link", "rndv_rx_failed", "link_rndv_rx_failed",
	  "Rendezvous receives completed with an error."),
	G("link", "tx_seq", "link_tx_seq",
	  "Last sequence number sent (starts again when the peer restarts)."),
	G("link", "rx_seq", "link_rx_seq",
	  "Last sequence number received in order (starts again when the peer restarts)."),
	G("link", "acked", "link_acked",
	  "Highest sequence number the peer acknowledged (starts again when it restarts)."),
	C("link", "retransmits", "link_retransmits", "Frames sent again after a reconnect."),
	G("link", "retransmit_timer", "link_retransmit_timer",
	  "1 while frames wait for an acknowledgement, else 0."),
	C("link", "rx_duplicates", "link_rx_duplicates", "Frames received twice and dropped."),
	C("link", "ack_timeouts", "link_ack_timeouts",
	  "Connections broken for want of acknowledgements."),
	C("link", "peer_timeouts", "link_peer_timeouts",
	  "Times the link stayed down past peer_timeout_ms."),
	C("link", "peer_restarts", "link_peer_restarts", "New incarnations of the peer seen."),
	C("link", "restart_failed", "link_restart_failed",
	  "Sends failed by a peer restart: they may have reached the old incarnation."),
	C("link", "restart_kept", "link_restart_kept",
	  "Sends carried over to the peer's new incarnation."),
	C("link", "nudges_tx", "link_nudges_tx", "Nudges sent: this node told the peer it started."),
	C("link", "nudges_rx", "link_nudges_rx", "Nudges heard from the peer."),
	C("link", "rndv_restarts", "link_rndv_restarts", "Rendezvous writes started again."),
	CB("link", "rndv_resumed_bytes", "link_rndv_resumed_bytes",
	   "Bytes of restarted rendezvous writes not written again: the receiver had them."),
	GB("link", "tx_ahead_max", "link_tx_ahead_max_bytes",
	   "Most payload bytes a control frame was posted behind."),
	C("link", "illegal_moves", "link_illegal_moves", "Frame moves refused (0 unless a bug)."),
	C("link", "silences", "link_silences", "Connections broken because nothing was heard."),
	C("link", "byes_rx", "link_byes_rx", "BYEs heard: the peer stopped."),
	C("link", "idle_closes", "link_idle_closes", "Connections closed by agreement after idle_link_ms."),
	C("link", "idle_wakes", "link_idle_wakes", "Idle links connected again for a first frame."),
	C("link", "idle_refused", "link_idle_refused", "Asks to close an idle link refused: work came."),
	G("link", "ack_backoff", "link_ack_backoff",
	  "Acknowledgement timer period as a multiple of ack_timeout_ms."),
	GMS("link", "tx_gap_max_ms", "link_tx_gap_max_seconds",
	    "Longest gap between frames sent while waiting on the peer."),
	GMS("link", "rx_gap_max_ms", "link_rx_gap_max_seconds",
	    "Longest gap between frames heard while waiting on the peer."),
	C("link", "msgs_tx", "link_msgs_tx", "Messages sent to the peer that it took."),
	CB("link", "bytes_tx", "link_tx_bytes", "Payload bytes of those messages."),
	C("link", "msgs_rx", "link_msgs_rx", "Messages from the peer delivered here."),
	CB("link", "bytes_rx", "link_rx_bytes", "Payload bytes of those messages."),
	GMS("link", "state_for_ms", "link_state_for_seconds",
	    "Seconds since the link last came up or went down."),
	GMS("link", "heard_ago_ms", "link_heard_ago_seconds",
	    "Seconds since the last frame from the peer."),
	/* queues[]: labels queue, port, pid, uid */
	G("queue", "sq_used", "queue_sq_used", "Descriptors in the submission ring now."),
	G("queue", "sq_depth", "queue_sq_depth", "Submission ring capacity."),
	G("queue", "cq_used", "queue_cq_used", "Completions in the completion ring now."),
	G("queue", "cq_depth", "queue_cq_depth", "Completion ring capacity."),
	G("queue", "in_flight", "queue_in_flight", "Descriptors taken and not yet completed."),
	G("queue", "posted_recvs", "queue_posted_recvs", "Receives posted and waiting now."),
	G("queue", "unexpected", "queue_unexpected_messages",
	  "Unexpected messages held now, waiting for a receive."),
	GB("queue", "unexpected_bytes", "queue_unexpected_bytes",
	   "Bytes of the unexpected messages held now."),
	G("queue", "claimed", "queue_claimed_messages",
	  "Claimed messages held now; their bytes count in queue_unexpected_bytes."),
	C("queue", "sqes", "queue_sqes", "Descriptors taken from the queue's submission ring."),
	C("queue", "cqes", "queue_cqes", "Completions written to the queue's completion ring."),
	C("queue", "msgs_tx", "queue_msgs_tx", "Sends of the queue completed SL_OK."),
	CB("queue", "bytes_tx", "queue_tx_bytes", "Bytes of those sends."),
	C("queue", "msgs_rx", "queue_msgs_rx", "Receives of the queue completed SL_OK."),
	CB("queue", "bytes_rx", "queue_rx_bytes", "Bytes of those receives."),
	C("queue", "naks", "queue_naks", "Sends of the queue the receiver refused (NAK)."),
	GB("queue", "arena_bytes", "queue_arena_bytes", "Bytes of the queue's arena."),
	/* uids[]: label uid; limits */
	G("uid", "contexts", "uid_contexts", "Contexts (sl_open) of the user now."),
	G("uid", "queues", "uid_queues", "Queues of the user now."),
	GB("uid", "arena_bytes", "uid_arena_bytes", "Arena bytes of the user now."),
	G("uid", "in_flight", "uid_in_flight", "Descriptors in flight of the user now."),
	G("uid_limit", "contexts", "uid_limit_contexts", "Contexts a user may hold."),
	G("uid_limit", "queues", "uid_limit_queues", "Queues a user may hold."),
	GB("uid_limit", "arena_bytes", "uid_limit_arena_bytes", "Arena bytes a user may hold."),
	G("uid_limit", "in_flight", "uid_limit_in_flight",
	  "Descriptors a user may have in flight."),
	/* clients[]: labels pid, uid, gid */
	G("client", "in_flight", "client_in_flight", "Descriptors in flight of the client now."),
	G("client", "queue_count", "client_queues", "Queues of the client now."),
	GB("client", "arena_bytes", "client_arena_bytes", "Arena bytes of the client now."),
	GB("client", "mapped_bytes", "client_mapped_bytes",
	   "Bytes of the client's queue segments (header, rings, arena)."),
};

/* The families that are not fields: the document's own. */
static const struct om_family fam_up = {
	"", "", "up", OM_GAUGE, NULL, 1,
	"1 when sluicectl read every admin reply of sluiced, 0 when it could not ask it "
	"(not running, access refused, a bad reply)."
};
static const struct om_family fam_node_info = {
	"status", "", "node", OM_INFO, NULL, 1,
	"The node: name, id, incarnation (changes at each start), version and transport."
};
static const struct om_family fam_link_info = {
	"link", "", "link", OM_INFO, NULL, 1,
	"The link: peer, node id, address, how it was authenticated, peer incarnation."
};

/* The states a link can be in (link.c, link_state_name), every one a
 * sample of the stateset; a state not listed here gets one too. */
static const char *const link_states[] = { "down", "connecting", "hello", "up" };

/* A JSON field that becomes a label: @key's value as label @label. */
struct om_label_field {
	const char *key, *label;
};

/*
 * Where the groups are: in the reply to @cmd, the object @member (NULL:
 * the reply itself) is one group, or an array of them when @labels names
 * the fields that tell its elements apart.  Fields in @labels or @info
 * are not samples; @info (NULL-terminated) go into @info_fam as labels.
 */
struct om_source {
	const char *cmd, *member, *group;
	const struct om_label_field *labels;
	const struct om_family *info_fam;
	const char *const *info;
};

static const struct om_label_field link_labels[] = { { "peer", "peer" }, { NULL, NULL } };
static const struct om_label_field queue_labels[] = {
	{ "id", "queue" }, { "port", "port" }, { "pid", "pid" }, { "uid", "uid" }, { NULL, NULL }
};
static const struct om_label_field uid_labels[] = { { "uid", "uid" }, { NULL, NULL } };
static const struct om_label_field client_labels[] = {
	{ "pid", "pid" }, { "uid", "uid" }, { "gid", "gid" }, { NULL, NULL }
};
static const char *const node_info[] = { "node", "node_id", "incarnation", "version",
					 "transport", NULL };
/* last_error is left out: free text, a new series at every new error. */
static const char *const link_info[] = { "node_id", "address", "auth", "incarnation",
					 NULL };

static const struct om_source sources[] = {
	{ "status", NULL, "status", NULL, &fam_node_info, node_info },
	{ "status", "loop", "loop", NULL, NULL, NULL },
	{ "status", "memory", "memory", NULL, NULL, NULL },
	{ "counters", "daemon", "daemon", NULL, NULL, NULL },
	{ "counters", "completions", "completions", NULL, NULL, NULL },
	{ "counters", "xport", "xport", NULL, NULL, NULL },
	{ "rcache", NULL, "rcache", NULL, NULL, NULL },
	{ "links", "links", "link", link_labels, &fam_link_info, link_info },
	{ "queues", "queues", "queue", queue_labels, NULL, NULL },
	{ "uids", "uids", "uid", uid_labels, NULL, NULL },
	{ "uids", "limits", "uid_limit", NULL, NULL, NULL },
	{ "clients", "clients", "client", client_labels, NULL, NULL },
};

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* Samples, collected, then printed family by family                    */
/* ------------------------------------------------------------------ */

struct om_sample {
	const struct om_family *fam;
	char *labels;		/* 'a="x",b="y"' escaped, or "" */
	char value[48];
};

struct om_doc {
	struct om_sample *samples;
	size_t n_samples, cap_samples;
	/* Families in order of their first sample. */
	const struct om_family **fams;
	size_t n_fams, cap_fams;
	/* Families made for fields the table does not know (freed at the end). */
	struct om_family **made;
	size_t n_made, cap_made;
	bool oom;
};

/* Room for element @n of the array @p of *@cap elements of @size bytes:
 * @p, or a larger copy (*@cap updated), or NULL with @p untouched when
 * out of memory. */
static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *np;

	if (n < *cap)
		return p;
	c = *cap ? *cap * 2 : 32;
	np = realloc(p, c * size);
	if (np)
		*cap = c;
	return np;
}

static bool doc_has_family(const struct om_doc *d, const struct om_family *f)
{
	size_t i;

	for (i = 0; i < d->n_fams; i++)
		if (d->fams[i] == f)
			return true;
	return false;
}

/* Add a sample; @labels is taken over (freed here on failure). */
static void doc_add(struct om_doc *d, const struct om_family *f, char *labels,
		    const char *value)
{
	struct om_sample *s = d->oom || !labels ? NULL :
		grow(d->samples, &d->cap_samples, d->n_samples, sizeof(*d->samples));
	const struct om_family **fams;

	if (!s) {
		free(labels);
		d->oom = true;
		return;
	}
	d->samples = s;
	if (!doc_has_family(d, f)) {
		fams = grow(d->fams, &d->cap_fams, d->n_fams, sizeof(*d->fams));
		if (!fams) {
			free(labels);
			d->oom = true;
			return;
		}
		d->fams = fams;
		d->fams[d->n_fams++] = f;
	}
	s = &d->samples[d->n_samples++];
	s->fam = f;
	s->labels = labels;
	snprintf(s->value, sizeof(s->value), "%s", value);
}

static void doc_free(struct om_doc *d)
{
	size_t i;

	for (i = 0; i < d->n_samples; i++)
		free(d->samples[i].labels);
	for (i = 0; i < d->n_made; i++) {
		free((char *)d->made[i]->key);
		free((char *)d->made[i]->name);
		free((char *)d->made[i]->help);
		free(d->made[i]);
	}
	free(d->samples);
	free(d->fams);
	free(d->made);
	memset(d, 0, sizeof(*d));
}

/* A family's full name in @fmt: counters and infos carry their suffix in
 * Prometheus' format, only in their samples' names in OpenMetrics. */
static const char *suffix(const struct om_family *f)
{
	return f->type == OM_COUNTER ? "_total" : f->type == OM_INFO ? "_info" : "";
}

static bool same_name(const struct om_family *f, const char *name)
{
	size_t n = strlen(f->name);

	return !strncmp(f->name, name, n) &&
	       (!strcmp(name + n, "") || !strcmp(name + n, suffix(f)));
}

/*
 * The family for field @key of @group: the table's, or one made for a
 * field this sluicectl does not know, named from the group and the field
 * (characters a name may not hold as '_'), TYPE unknown.  NULL when the
 * field is not exported, its made name would be another family's, or
 * memory ran out (then d->oom).
 */
/* The table's entry for field @key of @group, or NULL. */
static const struct om_family *table_family(const char *group, const char *key)
{
	size_t i;

	for (i = 0; i < N_ELEMS(families); i++)
		if (!strcmp(families[i].group, group) &&
		    (!strcmp(families[i].key, key) || !strcmp(families[i].key, "*")))
			return &families[i];
	return NULL;
}

static const struct om_family *family_of(struct om_doc *d, const char *group, const char *key)
{
	const struct om_family *known = table_family(group, key);
	struct om_family *f, **made;
	char name[160], help[256];
	size_t i;
	char *p;

	if (known)
		return known->name ? known : NULL;
	for (i = 0; i < d->n_made; i++)
		if (!strcmp(d->made[i]->group, group) && !strcmp(d->made[i]->key, key))
			return d->made[i];
	snprintf(name, sizeof(name), "%s_%s", group, key);
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			*p = '_';
	for (i = 0; i < N_ELEMS(families); i++)
		if (families[i].name && same_name(&families[i], name))
			return NULL;
	snprintf(help, sizeof(help), "Field %s of the daemon's %s statistics (this sluicectl "
		 "does not describe it: an older sluicectl than sluiced?).", key, group);
	f = calloc(1, sizeof(*f));
	if (f) {
		f->group = group;	/* a static string of sources[] */
		f->key = strdup(key);	/* the reply's goes with it */
		f->name = strdup(name);
		f->help = strdup(help);
		f->type = OM_UNKNOWN;
		f->divisor = 1;
	}
	made = grow(d->made, &d->cap_made, d->n_made, sizeof(*d->made));
	if (made)
		d->made = made;
	if (!f || !f->key || !f->name || !f->help || !made) {
		if (f) {
			free((char *)f->key);
			free((char *)f->name);
			free((char *)f->help);
		}
		free(f);
		d->oom = true;
		return NULL;
	}
	d->made[d->n_made++] = f;
	return f;
}

/* ------------------------------------------------------------------ */
/* Text: label values, numbers                                          */
/* ------------------------------------------------------------------ */

/* Append @s to *@buf (malloc'd, NUL-terminated), escaping backslash,
 * double quote and newline as both formats want in label values. */
static char *append_escaped(char *buf, const char *s)
{
	size_t len = buf ? strlen(buf) : 0, need = len + 2 * strlen(s) + 1;
	char *nb = realloc(buf, need), *o;

	if (!nb) {
		free(buf);
		return NULL;
	}
	for (o = nb + len; *s; s++) {
		if (*s == '\\' || *s == '"') {
			*o++ = '\\';
			*o++ = *s;
		} else if (*s == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return nb;
}

/* Append ',name="value"' (no comma when *@buf is empty). */
static char *append_label(char *buf, const char *name, const char *value)
{
	size_t len;
	char *nb;

	if (!buf)
		return NULL;
	len = strlen(buf);
	nb = realloc(buf, len + strlen(name) + 4);
	if (!nb) {
		free(buf);
		return NULL;
	}
	sprintf(nb + len, "%s%s=\"", len ? "," : "", name);
	nb = append_escaped(nb, value);
	if (!nb)
		return NULL;
	len = strlen(nb);
	buf = realloc(nb, len + 2);
	if (!buf) {
		free(nb);
		return NULL;
	}
	strcpy(buf + len, "\"");
	return buf;
}

/* A JSON value as label text: strings as they are, numbers in decimal,
 * null as "" (Prometheus reads an empty label as no label). */
static void label_text(char *buf, size_t cap, struct json_object *v)
{
	if (!v)
		snprintf(buf, cap, "%s", "");
	else if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
		snprintf(buf, cap, "%" PRIu64, json_object_get_uint64(v));
	else
		snprintf(buf, cap, "%s", json_object_get_string(v));
}

/* @v as a sample value, divided by @div (exactly, for integers); false
 * when @v is not a number. */
static bool value_text(char *buf, size_t cap, struct json_object *v, unsigned div)
{
	double x;

	if (json_object_is_type(v, json_type_boolean)) {
		snprintf(buf, cap, "%d", json_object_get_boolean(v) ? 1 : 0);
		return true;
	}
	if (json_object_is_type(v, json_type_int)) {
		int64_t s = json_object_get_int64(v);
		uint64_t u = json_object_get_uint64(v);

		if (s < 0 && div == 1)
			snprintf(buf, cap, "%" PRId64, s);
		else if (s < 0)
			snprintf(buf, cap, "%.15g", (double)s / div);
		else if (div == 1)
			snprintf(buf, cap, "%" PRIu64, u);
		else if (div == 1000)	/* milliseconds: exact seconds */
			snprintf(buf, cap, "%" PRIu64 ".%03" PRIu64, u / div, u % div);
		else
			snprintf(buf, cap, "%.15g", (double)u / div);
		return true;
	}
	if (!json_object_is_type(v, json_type_double))
		return false;
	x = json_object_get_double(v) / div;
	if (isnan(x))
		snprintf(buf, cap, "NaN");
	else if (isinf(x))
		snprintf(buf, cap, "%sInf", x > 0 ? "+" : "-");
	else
		snprintf(buf, cap, "%.15g", x);
	return true;
}

/* ------------------------------------------------------------------ */
/* Walking the replies                                                  */
/* ------------------------------------------------------------------ */

static bool in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

static bool is_label_field(const struct om_label_field *lf, const char *s)
{
	for (; lf && lf->key; lf++)
		if (!strcmp(lf->key, s))
			return true;
	return false;
}

/* The labels of group object @o under @src: its label fields. */
static char *base_labels(const struct om_source *src, struct json_object *o)
{
	const struct om_label_field *lf;
	char *buf = strdup(""), text[256];

	for (lf = src->labels; buf && lf && lf->key; lf++) {
		struct json_object *v = NULL;

		json_object_object_get_ex(o, lf->key, &v);
		label_text(text, sizeof(text), v);
		buf = append_label(buf, lf->label, text);
	}
	return buf;
}

/* The stateset: one sample per known state, and the current one if it
 * is not among them. */
static void add_states(struct om_doc *d, const struct om_family *f, const char *labels,
		       const char *state)
{
	char name[96];
	bool known = false;
	size_t i;

	snprintf(name, sizeof(name), PREFIX "%s", f->name);
	for (i = 0; i <= N_ELEMS(link_states); i++) {
		const char *s = i < N_ELEMS(link_states) ? link_states[i] : state;

		if (i == N_ELEMS(link_states) && known)
			break;
		if (!strcmp(s, state))
			known = true;
		doc_add(d, f, append_label(strdup(labels), name, s), strcmp(s, state) ? "0" : "1");
	}
}

/* Every sample of group object @o. */
static void add_group(struct om_doc *d, const struct om_source *src, struct json_object *o)
{
	char *labels = base_labels(src, o), *info = NULL, value[48], text[256];

	if (!labels) {
		d->oom = true;
		return;
	}
	if (src->info_fam)
		info = strdup(labels);
	json_object_object_foreach(o, key, v) {
		const struct om_family *f;

		if (is_label_field(src->labels, key))
			continue;
		if (in_list(src->info, key)) {
			if (info) {
				label_text(text, sizeof(text), v);
				info = append_label(info, key, text);
			}
			continue;
		}
		if (json_object_is_type(v, json_type_string)) {
			f = table_family(src->group, key);
			if (f && f->name && f->type == OM_STATESET)
				add_states(d, f, labels, json_object_get_string(v));
			continue;	/* other text is not a metric */
		}
		if (!value_text(value, sizeof(value), v, 1))
			continue;	/* null, arrays, nested objects */
		f = family_of(d, src->group, key);
		if (!f)
			continue;
		value_text(value, sizeof(value), v, f->divisor);
		if (!strcmp(f->key, "*"))	/* completions: the field names the status */
			doc_add(d, f, append_label(strdup(labels), "status", key), value);
		else
			doc_add(d, f, strdup(labels), value);
	}
	if (src->info_fam) {
		if (!info)
			d->oom = true;
		else
			doc_add(d, src->info_fam, info, "1");
	}
	free(labels);
}

static void add_source(struct om_doc *d, const struct om_source *src, struct json_object *reply)
{
	struct json_object *o = reply;
	size_t i, n;

	if (src->member && !json_object_object_get_ex(reply, src->member, &o))
		return;		/* an older daemon without it */
	if (json_object_is_type(o, json_type_object)) {
		add_group(d, src, o);
		return;
	}
	if (!json_object_is_type(o, json_type_array))
		return;
	n = json_object_array_length(o);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(o, i);

		if (json_object_is_type(e, json_type_object))
			add_group(d, src, e);
	}
}

/* Ask each admin command once and add its sources.  Returns 0 or the
 * failed query's status. */
static int collect(struct om_doc *d, const char *path, metrics_query_fn query)
{
	size_t i, j;

	for (i = 0; i < N_ELEMS(sources); i++) {
		struct json_object *reply = NULL;
		int rc;

		for (j = 0; j < i; j++)
			if (!strcmp(sources[j].cmd, sources[i].cmd))
				break;
		if (j < i)
			continue;	/* asked already, with its first source */
		rc = query(path, sources[i].cmd, &reply);
		if (rc)
			return rc;
		for (j = i; j < N_ELEMS(sources); j++)
			if (!strcmp(sources[j].cmd, sources[i].cmd))
				add_source(d, &sources[j], reply);
		json_object_put(reply);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Printing                                                             */
/* ------------------------------------------------------------------ */

static const char *type_name(enum om_type t, enum metrics_format fmt)
{
	switch (t) {
	case OM_COUNTER:
		return "counter";
	case OM_GAUGE:
		return "gauge";
	case OM_STATESET:
		return fmt == METRICS_OPENMETRICS ? "stateset" : "gauge";
	case OM_INFO:
		return fmt == METRICS_OPENMETRICS ? "info" : "gauge";
	case OM_UNKNOWN:
		break;
	}
	return fmt == METRICS_OPENMETRICS ? "unknown" : "untyped";
}

/* HELP text: backslash and newline escaped (both formats), double quote
 * too in OpenMetrics. */
static void print_help(FILE *out, const char *s, enum metrics_format fmt)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (*s == '"' && fmt == METRICS_OPENMETRICS)
			fputs("\\\"", out);
		else
			fputc(*s, out);
	}
}

static void print_head(FILE *out, const struct om_family *f, enum metrics_format fmt)
{
	const char *fam_suffix = fmt == METRICS_PROMETHEUS ? suffix(f) : "";

	fprintf(out, "# HELP " PREFIX "%s%s ", f->name, fam_suffix);
	print_help(out, f->help, fmt);
	fprintf(out, "\n# TYPE " PREFIX "%s%s %s\n", f->name, fam_suffix, type_name(f->type, fmt));
	if (f->unit && fmt == METRICS_OPENMETRICS)
		fprintf(out, "# UNIT " PREFIX "%s %s\n", f->name, f->unit);
}

/* sluice_up first (@up 1: the daemon answered, and @d follows), then
 * every family of @d. */
static void print_doc(FILE *out, const struct om_doc *d, int up, enum metrics_format fmt)
{
	size_t i, j;

	print_head(out, &fam_up, fmt);
	fprintf(out, PREFIX "%s %d\n", fam_up.name, up);
	for (i = 0; i < d->n_fams; i++) {
		const struct om_family *f = d->fams[i];

		print_head(out, f, fmt);
		for (j = 0; j < d->n_samples; j++) {
			const struct om_sample *s = &d->samples[j];

			if (s->fam != f)
				continue;
			fprintf(out, PREFIX "%s%s%s%s%s %s\n", f->name, suffix(f),
				*s->labels ? "{" : "", s->labels, *s->labels ? "}" : "", s->value);
		}
	}
	if (fmt == METRICS_OPENMETRICS)
		fputs("# EOF\n", out);
}

/* Write @len bytes of @text to stdout or @output.  Returns 0 or -errno,
 * said. */
static int emit(const char *text, size_t len, const char *output)
{
	int rc;

	if (output) {
		rc = atomic_file_replace(output, text, len, OUTPUT_MODE);
		if (rc)
			fprintf(stderr, "sluicectl: %s: %s\n", output, strerror(-rc));
		return rc;
	}
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
		rc = errno ? -errno : -EIO;
		fprintf(stderr, "sluicectl: stdout: %s\n", strerror(-rc));
		return rc;
	}
	return 0;
}

int metrics_export(const char *path, enum metrics_format fmt, const char *output,
		   metrics_query_fn query)
{
	struct om_doc d;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int qrc, rc;

	memset(&d, 0, sizeof(d));
	qrc = collect(&d, path, query);
	if (qrc)
		doc_free(&d);	/* nothing of a half-read daemon: only that it is down */
	if (d.oom) {
		doc_free(&d);
		fprintf(stderr, "sluicectl: out of memory\n");
		return -ENOMEM;
	}
	mem = open_memstream(&text, &len);
	if (!mem) {
		rc = -errno;
		doc_free(&d);
		fprintf(stderr, "sluicectl: open_memstream: %s\n", strerror(-rc));
		return rc;
	}
	print_doc(mem, &d, qrc ? 0 : 1, fmt);
	doc_free(&d);
	rc = ferror(mem) ? -ENOMEM : 0;
	if (fclose(mem) != 0 && rc == 0)
		rc = -errno;
	if (rc) {
		free(text);
		fprintf(stderr, "sluicectl: out of memory\n");
		return rc;
	}
	rc = emit(text, len, output);
	free(text);
	return rc ? rc : qrc;
}
