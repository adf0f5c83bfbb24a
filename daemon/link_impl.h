/*
 * link_impl.h - the link's own state, for the files of the links' floor
 * only: link.c (the frame channel), link_connect.c (its connection's
 * life, and the links' making and ending), link_auth.c (the handshake),
 * link_diag.c (its diagnostics), link_table.c (lookup by node) and
 * link_stats.c (what sluicectl reads).  Everyone else sees struct link
 * as an opaque handle (link.h); the layering check (layering.rules)
 * holds the line.
 */
#ifndef SLD_LINK_IMPL_H
#define SLD_LINK_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <netdb.h>
#include <sys/queue.h>
#include <ev.h>

#include "config.h"
#include "link.h"
#include "log.h"
#include "xport/xport.h"

TAILQ_HEAD(link_msg_list, link_msg);
TAILQ_HEAD(link_writer_list, link_writer);

struct auth_peer;

struct link {
	struct daemon *d;
	const struct peer_conf *peer;	/* &peer_conf: the configuration's own
					 * list changes on reload */
	struct peer_conf peer_conf;	/* who it is and where (link_readdress) */
	uint32_t node_id;
	enum link_state state;
	bool dialer;			/* we connect; the peer accepts */
	bool removing;			/* going (link_remove, teardown): its
					 * connection's end starts nothing */
	bool quiet_close;		/* we close its connection on purpose: no
					 * warning for it */
	bool listed;			/* link_table_sync: its peer is still listed */
	bool resolved;			/* added by sl_node_resolve(), listed nowhere
					 * (link_add_resolved) */
	struct auth_peer *auth;		/* the handshake's (link_auth.c) */
	bool timed_out;			/* down past peer_timeout_ms, or said BYE */
	bool bye_rx;			/* the peer said BYE: no peer timeout wait */
	bool was_up;			/* up since the last timeout or start */
	struct log_limit peer_log;	/* the lines its peer causes (link.c) */
	bool dial_warned;		/* a connect failure was logged */
	struct xport_conn *conn;
	struct xport_conn *nudge;	/* accepter: telling the peer we started */
	/* On daemon->link_ready, or on the list a flush is walking
	 * (ready_on says which): the passes have something to do for it
	 * (link_kick). */
	TAILQ_ENTRY(link) ready_link;
	struct link_ready_list *ready_on;	/* NULL: on neither */
	/* On daemon->links_up while up (link_up to link_went_down or
	 * link_free): what may post, for the check before sleeping. */
	TAILQ_ENTRY(link) up_link;
	bool on_up_list;
	uint64_t peer_incarnation;
	/* The one before it: a restart never comes back to it, two daemons
	 * of one name take turns (link_diag_two_daemons). */
	uint64_t peer_incarnation_prev;
	/* This link is newer than the stream its peer kept with us (a
	 * reload removed the peer and added it again): our HELLOs name no
	 * incarnation of the peer's, so that it starts a new stream too,
	 * until a frame of that new stream arrives (link.c, hello_learn). */
	bool hello_forget;
	uint32_t peer_eager_max;
	uint32_t peer_credits;		/* its HELLO: our data frames it lets be unacked */
	/* Sequence state of this pair of incarnations (kept across
	 * reconnects, reset when the peer restarts). */
	uint64_t tx_seq;		/* last seq assigned */
	uint64_t rx_seq;		/* last in-order seq received */
	uint64_t ack_sent;		/* last cumulative ack sent */
	uint64_t ack_rx;		/* highest cumulative ack received */
	ev_tstamp ack_pending_since;	/* first frame received after ack_sent */
	/* Frames not yet handed to the transport, in send order. */
	struct link_msg_list backlog;
	/* Frames handed to the transport, waiting for ACK/NAK. */
	struct link_msg_list unacked;
	uint32_t n_backlog;		/* sends and control frames */
	uint32_t n_ctl;			/* of those, control frames */
	uint32_t n_unacked;
	uint32_t n_unacked_data;	/* of those, EAGER and RTS: credits in use */
	/* Writers with RDMA write segments to post, in turn. */
	struct link_writer_list writes;
	uint32_t n_writes;
	bool write_turn;		/* the next data post goes to a write */
	void *upper;			/* the layer above's (link_handlers.attach) */
	ev_timer retry_w;		/* a post failed with nothing in flight */
	ev_timer redial_w;
	ev_timer ack_w;			/* retransmission timer: armed while
					 * frames wait for an ack */
	ev_timer timeout_w;		/* peer_timeout_ms after going down */
	ev_tstamp redial_delay;		/* seconds, doubles to a cap */
	uint32_t ack_backoff;		/* ack timer period / ack_timeout_ms */
	/* The back-off's proving window (link_liveness.c,
	 * backoff_review): since its last change or the link's last coming
	 * up, the longest wait for ack progress and the longest gap between
	 * frames heard, s. */
	ev_tstamp backoff_since, backoff_ack_wait, backoff_rx_gap;
	/* Longest gaps between frames sent and between frames heard while
	 * up, s (a stall of ours shows in both; compare loop_watch). */
	ev_tstamp tx_gap_max, rx_gap_max;
	ev_tstamp alive_due;		/* when alive_w is next due */
	ev_tstamp heard_at;		/* last ack progress, or the first frame since
					 * that waited for one */
	ev_tstamp down_since;
	/* Why the link last went down or a dial failed, for sluicectl
	 * (admin.c); "" until either happens. */
	char last_error[96];
	struct link_counters ctr;	/* link.h */
	ev_tstamp updown_at;		/* ev_now() when the link last came up or
					 * went down (from up), or was created */
	/* Liveness (link_liveness.c, link_alive_cb): while something of ours
	 * waits on the peer (link_waits) a frame goes out at least every
	 * LINK_KEEPALIVE (an ACK asking for an answer, SL_WIRE_ACK_PING, if
	 * nothing else does), and nothing heard (no byte: xport last_rx) for
	 * max(ack_timeout_ms x ack_backoff, 1 s) since the wait began breaks
	 * the connection.  While nothing waits, the link says nothing and
	 * judges nothing (a partition shows when something next waits). */
	ev_timer alive_w;
	ev_tstamp waiting_since;	/* ev_now() when the wait began; 0: none */
	bool alive_quiet;		/* alive_w at the quiet pace, or stopped
					 * (link_alive_wake brings it back) */
	bool ping_owed;			/* the peer asked (SL_WIRE_ACK_PING) and no
					 * frame of ours has carried the answer yet */
	uint32_t n_waiters;		/* operations of the layer above waiting on
					 * the peer (link_wait_add): receives naming
					 * its node */
	ev_timer dial_w;		/* a dial that takes too long is redone; an
					 * accepter's nudge, given up */
	ev_tstamp rx_at, tx_at;		/* last frame received, sent */
	/* Links on demand (link_idle.c): the last time it had work (a frame
	 * queued or received, a receive naming the peer), for idle_link_ms
	 * and the least recently used; our BYE IDLE is out; both sides
	 * agreed, so the coming close leaves it idle. */
	ev_tstamp used_at;
	ev_tstamp idle_asked_at;
	bool idle_asked;
	bool idle_closing;
	struct link_rndv_counters rc;	/* kept by the rendezvous (rndv.c) */
};



/* ---- shared within the links' floor ---- */

/* Liveness: an up link that waits on its peer sends a frame at least
 * every LINK_KEEPALIVE seconds (a protocol constant, so that a peer
 * configured differently still hears it often enough), each lone one
 * asking for an answer, and one that hears nothing for
 * max(ack_timeout_ms, LINK_SILENCE_MIN) breaks its connection. */
#define LINK_KEEPALIVE 0.25
#define LINK_SILENCE_MIN 1.0
/* The keepalive timer's longest period while nothing waits on a link on
 * demand: only the idle close's look is left to it (a link that is not
 * on demand has none: its timer stops until something waits). */
#define LINK_QUIET_TICK 1.0
/* The shortest window in which a link proves that a smaller ack back-off
 * suffices (link_liveness.c, backoff_review): 8 keepalive rounds. */
#define LINK_PROVE_MIN 2.0
/* A dial that has not reached LINK_UP (connect and both HELLOs) after
 * this many seconds is abandoned and redialled: a connect can hang far
 * longer (TCP's SYN retries, the RDMA CM's REQ retries after a port
 * came back, a peer that accepts but never says HELLO).  It bounds an
 * accepter's nudge too. */
#define LINK_DIAL_TIMEOUT 3.0
/* Stopping: how long the BYEs get to leave, seconds. */
#define LINK_BYE_WAIT 0.5

/* The lines a link's peer causes at will, rate-limited per link (log.h). */
#define peer_warn(l, ...) log_limited(&(l)->peer_log, LOG_LVL_WARN, __VA_ARGS__)
#define peer_info(l, ...) log_limited(&(l)->peer_log, LOG_LVL_INFO, __VA_ARGS__)

/* link.c: post @wf (its ack set here) with @payload; @wr_id names its
 * owner in the send completion (0: none).  Returns 0, -ENOMEM (the SQ is
 * full: a timer or a completion drives it again) or another -errno. */
int link_post_frame(struct link *l, struct sl_wire_frame *wf, const void *payload,
		    uint64_t wr_id);
/* link.c: our HELLO for @l's peer. */
void link_hello_fill(const struct link *l, struct sl_wire_frame *wf);
/* link.c, for link_connect.c: the layer above's handlers
 * (link_setup_all); every operation waiting on @l ends with @status
 * (@tell: the peer is the same incarnation and will hear of it; control
 * frames stay unless @drop_ctl); @l off whichever ready list it is on
 * (it goes away). */
const struct link_handlers *l_up(const struct link *l);
void fail_everything(struct link *l, int status, bool tell, bool drop_ctl);
void link_ready_forget(struct link *l);
void link_up_forget(struct link *l);
/* link_connect.c: connect to the peer now; arm the peer timeout (from
 * down_since) unless armed or timed out; schedule the next dial, or an
 * accepter's next nudge while it waits for one. */
void link_dial(struct link *l);
void link_timeout_arm(struct link *l);
void link_schedule_redial(struct link *l);
/* link_connect.c, for the transport's upcalls (link.c): @l's connection
 * broke or never came up (closed()); a dial failed (connect() or
 * connected() with @err): recorded, logged, the link DOWN with its peer
 * timeout armed and a redial scheduled. */
void link_went_down(struct link *l, int err);
void link_dial_failed(struct link *l, int err);

/* The wr_id of an answering BYE IDLE, whose completion closes the
 * connection (link_idle_sent); not a pointer, which are aligned. */
#define LINK_WR_IDLE_BYE 2u

/* link_idle.c (links on demand): are links dialled when needed and
 * closed when quiet ([transport] idle_link_ms, a transport with short
 * connections)?  Does anything of ours wait on @l's peer (frames to
 * send or to be acknowledged, writes, a rendezvous either way, a
 * receive naming its node)?  Is nothing under way with it, in either
 * direction (nothing waits, and no ack is owed)?  The keepalive
 * timer's look: quiet for idle_link_ms, ask to close.  A BYE IDLE heard
 * (0, or -errno to break the connection).  Our answering BYE IDLE left.
 * The connection went: true when the link is idle now (agreed, or lost
 * while quiet), and link_went_down does nothing more. */
bool link_on_demand(const struct daemon *d);
bool link_waits(const struct link *l);
bool link_is_quiet(const struct link *l);
void link_idle_check(struct link *l, ev_tstamp now);
ev_tstamp link_idle_due(const struct link *l);
int link_idle_heard(struct link *l);
void link_idle_sent(struct link *l);
bool link_idle_went_down(struct link *l);

/*
 * link_connect.c, for link_table_sync() and link_setup_all():
 * link_add - a link to peer @pc (copied), made as at start: idle with
 *   links on demand (link_idle.c), else it dials, or waits (and nudges),
 *   by node id.  What it allocates at once: struct
 *   link, the layer above's per-link state (link_handlers.attach) and the
 *   handshake's (link_auth_link_new); connection buffers come with a
 *   connection (xport).  Returns 0, -EEXIST or -ENOMEM (nothing made).
 * link_remove - the peer left the configuration: its connections close,
 *   every operation waiting on it completes SL_ERR_PEER_DOWN (once: what
 *   a peer timeout failed already is gone), so do the receives naming
 *   it, and @l is freed; from then on the node is unknown.
 * link_readdress - the peer is at @pc's host and port now: the link
 *   stays (sequence state, operations under way, counters), its
 *   connection closes and the next dial, or the peer's, uses the new
 *   address.
 */
int link_add(struct daemon *d, const struct peer_conf *pc);

/* link_auth.c: @res (a getaddrinfo() answer for @l's peer, not kept) as
 * the addresses the handshake accepts its connections from, instead of
 * a lookup of its own.  Returns 0 or -ENOMEM (then it looks up later). */
int link_auth_link_addrs(struct link *l, const struct addrinfo *res);
void link_remove(struct link *l);
void link_readdress(struct link *l, const struct peer_conf *pc);

/* link_liveness.c: a new proving window of the ack back-off from @now;
 * the retransmission timer started (frames wait for an ack) or moved by
 * ack progress; the keepalive timer started on a link that came up, and
 * back at its pace on a quiet one that may wait now (every kick); the
 * timers' callbacks (ack_w, alive_w). */
void link_backoff_window(struct link *l, ev_tstamp now);
void link_ack_timer_start(struct link *l);
void link_ack_timer_progress(struct link *l);
void link_alive_start(struct link *l);
void link_alive_wake(struct link *l);
void link_ack_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents);
void link_alive_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* link_announce.c: tell the peer we started (an accepter, at start); the
 * nudge's connection came up (@err 0) or failed; a nudge heard on @c;
 * the BYEs of a stopping daemon, on every up link. */
void link_nudge(struct link *l);
void link_nudge_connected(struct link *l, struct xport_conn *c, int err);
void link_nudge_heard(struct link *l, struct xport_conn *c);
void link_say_bye_all(struct daemon *d);

#endif
