/*
 * link.h - one link per peer node, shared by every local queue.
 *
 * A link owns the connection to one peer daemon, numbers its frames (every
 * frame but HELLO, ACK and RDMA writes; seq from 1 for each pair of
 * incarnations, continuing across reconnects), keeps each sent frame until
 * the peer's cumulative ACK covers it (a message also until its NAK), and
 * then hands a message back to its owner (done() of its struct
 * link_msg_ops), which completes the descriptor.  Frames that do not fit the transport's send
 * queue wait in the link's backlog, in order, and go out as completions
 * free room; control frames (NAK, RTR, FIN, DONE) go ahead of queued
 * data.
 *
 * Links that survive (RDS's model over connections that may break): a
 * broken connection fails nothing by itself.  The dialer redials with
 * exponential back-off ([transport] redial_min_ms .. redial_max_ms); the
 * HELLOs say how far each side's stream arrived; everything after that is
 * sent again, numbered on, and the receiver drops what it has seen.  A
 * rendezvous whose RDMA writes were cut restarts when the receiver, which
 * still holds its receive, sends its RTR again, naming how many bytes from
 * the start it saw land (transports that tell it: tcp); the sender writes
 * the rest.  Writes are idempotent, and the receive completes once, on the
 * write-with-immediate.  Only three
 * things fail operations: the daemon stopping (SL_ERR_CANCELED); the link
 * down for [transport] peer_timeout_ms (every send waiting on it, every
 * rendezvous with it and every receive naming that node as its source
 * complete SL_ERR_PEER_DOWN, each on its own, and so do new ones until it
 * is back); and the peer back with a new incarnation (what may have
 * reached the old one completes SL_ERR_PEER_RESTARTED: a send whose frame
 * the transport handed on, xport.h, and every rendezvous past its RTS;
 * sends that cannot have reached it, those never posted and those whose
 * WR completed XPORT_WR_UNSENT, go to the new incarnation in their order,
 * numbered afresh).  No ACK progress for
 * [transport] ack_timeout_ms while frames wait for one breaks the
 * connection (a silent partition, a hung peer): the retransmission timer.
 *
 * The node with the lower id dials; the other accepts and learns who
 * called from the HELLO.  An accepter that starts nudges each peer that
 * dials it (a short connection with its HELLO): the peer dials at once
 * instead of at the end of its redial back-off.  Anything can send a
 * nudge (links are not authenticated yet), so it only ever makes a down
 * link dial early, or an up one send a keepalive, never breaks a link.
 *
 * The link is a reliable frame channel and knows nothing of descriptors,
 * queues or rendezvous: the layer above (rndv.h, engine.h) hands it
 * messages (struct link_msg, a data frame that it encodes when it is
 * posted), control frames (RTR, FIN, DONE) and writers (struct
 * link_writer, the RDMA write segments of a rendezvous), and it hands up,
 * through struct link_handlers, the frames that layer owns (EAGER, RTS,
 * RTR, FIN, DONE, writes landing) and the link's events (down, resumed,
 * failed).  What follows describes both, as they work together.
 *
 * Rendezvous (messages above the peer's eager_max; its state machines
 * are rndv.c's, rndv.h): the send goes out as an RTS.  When the peer's
 * RTR names a registered destination, the sender registers its source
 * (registration cache), and its writer (struct link_writer) joins the
 * link's write queue, from which RDMA writes of LINK_WRITE_SEGMENT bytes
 * go out interleaved with other data, within the link's data budget
 * (LINK_TX_BUDGET, below); the last carries the peer's recv_id as its
 * immediate.  On the receiving side rndv.c's struct rndv_recv holds the
 * matched receive and its registration, and the grant its RTR's key
 * names (exactly the receive's range, on this connection: xport.h
 * grant(), docs/rendezvous-grants.md), from the RTR until the immediate
 * (or a FIN) arrives; the receive then completes and a DONE goes back,
 * and only the DONE completes the send (a write that left, or that a NIC
 * acknowledged, can still die with the receiving daemon).
 *
 * Data frames (EAGER, RTS) also need credit: the peer's HELLO says how
 * many may be unacknowledged at once, and its cumulative ACKs slide that
 * window.  Sends waiting for SQ room or credit queue in the backlog, at
 * most [limits] link_backlog_max of them; past that a send completes
 * SL_NAK_BUSY at once.
 *
 * Every SQ post that fails (SQ full, -ENOMEM) leaves its frame or write
 * where it was; a send completion, an ACK or a retry timer (when nothing
 * is in flight to complete) drives it again, with no call from a client
 * (Open MPI issue 92: a deferred RTR that nothing re-drove).  Data keeps
 * ctl_reserve() (link.c) SQ slots free for control frames, so ACK, NAK,
 * RTR and FIN never wait behind data.
 */
#ifndef SLD_LINK_H
#define SLD_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "link_table.h"
#include "log.h"
#include "sl_wire.h"
#include "sluice.h"
#include "xport/xport.h"

struct daemon;
struct link;		/* private: link_impl.h, the links' floor only */
struct link_stats;

/* LINK_IDLE: no connection, and none wanted: closed by agreement with
 * the peer (or never needed yet); its sequence state is kept, and the
 * first frame queued on it dials again (link_idle.c). */
enum link_state { LINK_DOWN, LINK_CONNECTING, LINK_HELLO, LINK_UP, LINK_IDLE };

/* Bytes per RDMA write WR of a rendezvous: the grain at which the
 * rendezvous of different clients, and their eager sends, take turns on
 * a link. */
#define LINK_WRITE_SEGMENT (512u << 10)

/*
 * Payload bytes of data (EAGER payloads, RDMA write segments) a link lets
 * wait in the transport's send queue: data is posted only while less than
 * this is outstanding (xport sq_bytes), so a control frame, ACK or
 * keepalive posted at any moment waits behind at most LINK_TX_BUDGET plus
 * one data frame (a write segment, or an eager payload of up to
 * eager_max), and on tcp the little the socket itself may hold (tcp.c,
 * TCP_UNSENT_MAX and TCP_WINDOW_MAX): a few milliseconds at 1 GB/s, where a
 * whole SQ of segments took seconds.  Within the budget the sends of all
 * clients and the write segments of all rendezvous take turns, so a small
 * message waits behind at most this much of another client's bulk.  Two
 * segments keep the pipe full (one written while the next is posted);
 * docs/link-scheduling.md has the measurements.
 */
#define LINK_TX_BUDGET (2u * LINK_WRITE_SEGMENT)


/* ---- what the layer above hands down ---- */

struct link_msg;
struct link_writer;

/* What the link asks of a message's owner (rndv.c's remote sends). */
struct link_msg_ops {
	/* @m is posted now (again after a reconnect or a peer's restart):
	 * fill @wf's type (SL_WIRE_EAGER or SL_WIRE_RTS) and fields, and
	 * for EAGER *@payload (wf->payload_len bytes, valid until done()).
	 * @prev_type is what it was encoded as before on this incarnation (0:
	 * never, or the peer restarted since); @eager_limit is the largest
	 * payload both ends take eagerly.  The link sets seq and ack. */
	void (*encode)(struct link_msg *m, struct link *l, uint8_t prev_type,
		       uint64_t eager_limit, struct sl_wire_frame *wf, const void **payload);
	/* The link is done with @m: @status SL_OK (an ACK covered it), the
	 * status of the peer's NAK for it, or what ended it
	 * (SL_ERR_PEER_DOWN, SL_ERR_PEER_RESTARTED, SL_ERR_CANCELED,
	 * SL_ERR_INVALID, or link_msg_cancel's).  Called once, when no
	 * WR of it is posted any more; @m is the caller's again. */
	void (*done)(struct link_msg *m, struct link *l, int status);
};

/*
 * A data frame the link carries for its owner, embedded in the owner's
 * object: between link_post_msg() and ops->done() every field is the
 * link's.  Frame ownership (link.c, frame_move()): BACKLOG -> WIRE
 * (posted), WIRE -> BACKLOG (sent again after a reconnect), BACKLOG or
 * WIRE -> DECIDED (its status known; the first decision wins), DECIDED ->
 * CLIENT (done() called).  Any other move is a bug: an assert in debug
 * builds, and with NDEBUG it is refused, counted (link.X.illegal_moves)
 * and logged.
 */
struct link_msg {
	TAILQ_ENTRY(link_msg) link;	/* backlog or unacked */
	const struct link_msg_ops *ops;	/* NULL: a control frame (link.c) */
	uint8_t type;		/* SL_WIRE_EAGER or _RTS once posted; 0 before */
	uint8_t where;		/* link.c enum frame_list */
	uint8_t owner;		/* link.c enum frame_owner */
	bool deferred;		/* control: a post was refused (counted once) */
	bool maybe_reached;	/* its last post may have reached the peer (its
				 * WR did not complete XPORT_WR_UNSENT): such a
				 * send fails when the peer restarts, others go
				 * to the new incarnation */
	uint32_t wrs;		/* posted WRs naming it */
	uint64_t seq;		/* sequence number once posted */
	int32_t status;		/* once decided */
	uint64_t payload_len;	/* bytes of its last EAGER payload (memory
				 * held for retransmission, sluicectl memory) */
};

/* What the link asks of a writer's owner (rndv.c's rendezvous sends). */
struct link_writer_ops {
	/* Fill @wr (all but wr_id) with the next RDMA write segment, at most
	 * LINK_WRITE_SEGMENT bytes; the last carries the receiver's recv_id
	 * as its immediate (wr->has_imm).  Called only while queued. */
	void (*segment)(struct link_writer *w, struct link *l, struct xport_write_wr *wr);
	/* The segment just filled was posted (@len bytes; @last: the one
	 * with the immediate, after which the writer leaves the queue). */
	void (*posted)(struct link_writer *w, struct link *l, uint32_t len, bool last);
	/* The transport refused the segment with @err (not -ENOMEM, which
	 * only waits): a bug of ours; the writer has left the queue. */
	void (*refused)(struct link_writer *w, struct link *l, int err);
	/* A posted segment's WR completed with @status (xport.h: 0, or
	 * -EACCES for a write outside its grant, or another error). */
	void (*wr_done)(struct link_writer *w, struct link *l, int status);
};

/* One rendezvous' RDMA writes, taking turns with the other writers and
 * the sends of the link within LINK_TX_BUDGET.  Embedded in its owner. */
struct link_writer {
	TAILQ_ENTRY(link_writer) link;	/* the link's write queue */
	const struct link_writer_ops *ops;
	bool queued;
};

/*
 * link_post_msg - @m (its owner's; @ops static) joins @l's backlog, to
 * be sent in order after the messages already there, numbered when it is
 * posted, and kept until the peer's ACK or NAK.  Returns 0, -EHOSTDOWN
 * when the link has been down past peer_timeout_ms (the owner completes
 * SL_ERR_PEER_DOWN), or -ENOBUFS when link_backlog_max messages already
 * wait (SL_NAK_BUSY).  On error @m stays the caller's.
 */
int link_post_msg(struct link *l, struct link_msg *m, const struct link_msg_ops *ops);

/* End @m now with @status, if the link still holds it and has not
 * decided it: it leaves the backlog or the unacked list (its credit
 * comes back, it is never sent again) and done() follows once no WR of
 * it is posted.  Nothing when it is not the link's or decided already. */
void link_msg_cancel(struct link *l, struct link_msg *m, int status);

/* End with @status every message still waiting in @l's backlog for which
 * @match says so (those posted complete as they would): each leaves the
 * link and gets its done(). */
void link_cancel_queued(struct link *l, bool (*match)(const struct link_msg *m, void *arg),
			void *arg, int status);

/* Does @l hold a send, waiting in its backlog or posted and not yet
 * acknowledged, for which @match says so?  (sl_cancel() asks whether a
 * user_ctx names a send: a walk of both lists.) */
bool link_holds_msg(const struct link *l, bool (*match)(const struct link_msg *m, void *arg),
		    void *arg);

/* Has the peer certainly had @m, as seen by a frame carrying cumulative
 * ack @ack: posted (not waiting in the backlog, as after a reconnect) and
 * either acknowledged already (done) or covered by @ack?  For an RTR,
 * which only the holder of the RTS can send. */
bool link_msg_seen_by_peer(const struct link_msg *m, uint64_t ack);

/*
 * link_queue_ctl - a control frame of @type (SL_WIRE_RTR, _FIN, _DONE)
 * for the peer, queued ahead of data after the control frames already
 * queued, whatever the link's state: control frames are sequenced and
 * outlive a broken connection.  Returns the frame for the caller to fill
 * (wf->u; type, seq and ack are the link's), or NULL when out of memory:
 * the link then breaks its connection, and both sides fail what was
 * under way, each operation with its own status.
 */
struct sl_wire_frame *link_queue_ctl(struct link *l, uint8_t type);

/* Forget every control frame of @l not yet acknowledged (queued, or sent
 * on a connection that broke) for which @match says so. */
void link_drop_ctl(struct link *l, bool (*match)(const struct sl_wire_frame *wf, void *arg),
		   void *arg);

/* @w has segments to post: it joins the write queue (and the engine is
 * woken).  Nothing when queued already. */
void link_writer_start(struct link *l, struct link_writer *w);
/* @w leaves the write queue (nothing when not queued). */
void link_writer_stop(struct link *l, struct link_writer *w);

/*
 * link_grant - a grant on @l's current connection for the peer to write
 * [@addr, @addr + @len) of registration @mr_handle (xport.h grant()).
 * Returns 0 with *@rkey, -ENOTCONN without a connection, -ENOMEM when
 * the transport is out of grants (wait for a revoke), or another -errno.
 */
int link_grant(struct link *l, uint64_t mr_handle, uint64_t addr, uint64_t len, uint32_t *rkey);
/* End grant @rkey on @l's connection (nothing without one): no write of
 * the peer lands through it after this; a control frame refused for want
 * of a grant may go now. */
void link_revoke(struct link *l, uint32_t rkey);

/* Count one message moved, of @bytes payload: sent (@tx, the peer took
 * it) or received (delivered here).  sluicectl's rates come from these. */
void link_count_msg(struct link *l, bool tx, uint64_t bytes);

/* @l's daemon, peer node id and peer name (for log lines). */
struct daemon *link_daemon(const struct link *l);
uint32_t link_node(const struct link *l);
const char *link_name(const struct link *l);
/* The rate limit of the lines the peer causes at will (log.h). */
struct log_limit *link_peer_log(struct link *l);
/* The layer above's state for @l (link_handlers.attach's result). */
void *link_upper(const struct link *l);

/* The per-link figures of the rendezvous (rndv.c keeps them, sluicectl
 * and the stats file show them as the link's: link.PEER.rndv_tx, ...). */
struct link_rndv_counters {
	uint32_t n_rndv_tx;		/* rendezvous sends under way (gauge) */
	uint32_t n_rndv_rx;		/* rendezvous receives under way (gauge) */
	uint64_t rndv_tx_done;		/* sends the receiver confirmed (DONE) */
	uint64_t rndv_rx_done;		/* receives whose data came in */
	uint64_t rndv_rx_failed;	/* receives completed with an error */
	uint64_t rndv_restarts;		/* rendezvous writes started again */
	uint64_t rndv_resumed_bytes;	/* of those, bytes not written again: the
					 * receiver had them in place */
};
struct link_rndv_counters *link_rndv_counters(struct link *l);

/* ---- what the link hands up ---- */

/*
 * The layer above's handlers, one table (as the transport calls the link
 * only through struct xport_upcalls): no function above the link is
 * named in link.c.  The engine installs its table (engine_link_handlers)
 * with link_setup_all().  A frame handler runs for each new in-order
 * frame of its type once (duplicates after a reconnect are dropped
 * below it), before the frame's cumulative ack is applied; it returns
 * SL_OK, or -EPROTO to break the connection; the EAGER and RTS handlers
 * may also return a status the frame is NAKed with.
 */
struct link_handlers {
	/* Per-link state of the layer above, made when the link is and
	 * freed when it goes (NULL: out of memory; the link is not made). */
	void *(*attach)(struct link *l);
	void (*detach)(struct link *l, void *upper);

	int (*eager)(struct link *l, const struct sl_wire_frame *wf, const uint8_t *payload);
	int (*rts)(struct link *l, const struct sl_wire_frame *wf);
	int (*rtr)(struct link *l, const struct sl_wire_frame *wf);
	int (*fin)(struct link *l, uint32_t recv_id, uint32_t status);
	int (*done)(struct link *l, uint64_t send_id);

	/* An RTR of ours is about to be posted: 0 to post it (@wf may be
	 * changed, e.g. into a refusal), or -ENOMEM to leave it queued (a
	 * revoke or a completion drives it again). */
	int (*rtr_prepare)(struct link *l, struct sl_wire_frame *wf);
	/* An RTR of ours was posted with sequence number @seq. */
	void (*rtr_posted)(struct link *l, const struct sl_wire_frame *wf, uint64_t seq);

	/* Writes from the peer (xport.h write_imm, write_placed,
	 * write_refused), on the link's current connection. */
	int (*write_imm)(struct link *l, uint32_t imm);
	void (*write_placed)(struct link *l, uint32_t rkey, uint64_t raddr, uint32_t len);
	int (*write_refused)(struct link *l, uint32_t rkey, bool has_imm, uint32_t imm);

	/* Every flush of @l starts here, before its frames are posted. */
	void (*flush)(struct link *l);
	/* The connection is gone, and with it every write in flight and
	 * every grant; the write queue is empty. */
	void (*went_down)(struct link *l);
	/* A HELLO of the same incarnation: the peer has our frames up to
	 * @peer_rx; the rest go again from the backlog. */
	void (*resumed)(struct link *l, uint64_t peer_rx);
	/*
	 * Every operation of the layer above waiting on @l ends with
	 * @status (the link's own messages were ended just before): the
	 * peer timed out (SL_ERR_PEER_DOWN, @tell: it is the same
	 * incarnation and will hear of refusals later), said BYE, restarted
	 * (SL_ERR_PEER_RESTARTED), or we stop (SL_ERR_CANCELED).
	 */
	void (*failed)(struct link *l, int status, bool tell);
	/* The posted receives naming the peer fail: it timed out. */
	void (*peer_timed_out)(struct link *l);
	/* Rendezvous under way for log lines: sending, receiving, and of
	 * the sending ones those the link no longer holds (past the RTS). */
	void (*counts)(const struct link *l, uint32_t *sending, uint32_t *receiving,
		       uint32_t *past_rts);
};

/* Create the links for every configured peer, handing up through @up
 * (kept; static storage).  Returns 0 or -errno. */
int link_setup_all(struct daemon *d, const struct link_handlers *up);
void link_teardown_all(struct daemon *d);

/*
 * link_kick - @l has something for the next pass (a frame queued, an SQ
 * slot or credits freed, an ACK owed, a rendezvous to finish): on the
 * daemon's ready list, and the engine running (daemon_wake).  The passes
 * visit only links so kicked, and keep a link on the list while it can
 * still post; anything that lets a link post again must kick it.
 */
void link_kick(struct link *l);

/*
 * link_demand - @l is needed: a frame is queued on it, or a receive names
 * its peer.  An idle link (links on demand, link_idle.c) dials, or, on
 * the accepting side, asks its peer to dial, and the peer timeout starts;
 * past [limits] max_links the least recently used quiet link is asked to
 * close.  Otherwise only marks it used.  The link calls it itself for
 * frames; the engine for receives naming a node.
 */
void link_demand(struct link *l);

/*
 * link_wait_add - @delta (+1 or -1) operations of the layer above start
 * or stop waiting on @l's peer, besides what the link and the rendezvous
 * count themselves: receives naming the peer's node.  While any does,
 * the link is not quiet: an idle one dials (link_demand), an up one is
 * not closed for idle_link_ms or max_links, and it asks its peer for a
 * keepalive every LINK_KEEPALIVE, so that a peer that dies is noticed and
 * the receives fail SL_ERR_PEER_DOWN after peer_timeout_ms
 * (link_handlers.peer_timed_out).  A decrement below zero is a bug of the
 * caller: logged, the count stays 0.  Loop thread only.
 */
void link_wait_add(struct link *l, int delta);

/* Hand queued frames of the ready links to the transport and write them
 * (end of a pass).
 * @force_ack: send every pending ACK now (the engine is going to sleep).
 * Returns the frames and RDMA write segments posted: work, since what
 * the transport completes at once (tcp: written to the socket) frees the
 * data budget for more without any event that would wake the engine. */
unsigned link_flush_all(struct daemon *d, bool force_ack);

/* Could some link post a frame or a write segment now (control frames,
 * or data within LINK_TX_BUDGET: sends with credits, write segments)?
 * The progress engine must not sleep while this holds: nothing but its
 * own passes would post them (progress.c, try_sleep).  Walks the links
 * up only (only they can post): its cost grows with the connected links,
 * not with the peers. */
bool link_any_can_post(const struct daemon *d);

/* Is @node a peer whose link has been down past peer_timeout_ms?  A
 * receive naming it as its source then completes SL_ERR_PEER_DOWN. */
bool link_node_timed_out(struct daemon *d, uint32_t node);

/* Links up now (of d->n_links). */
unsigned link_count_up(const struct daemon *d);

/* "down", "connecting", "hello" or "up". */
const char *link_state_name(enum link_state s);

/* Data frames (EAGER, RTS) the peer still lets us send before its ACKs
 * return credit; 0 when the link is not up. */
uint64_t link_credits_left(const struct link *l);

/* The transport upcalls, installed by the daemon. */
extern const struct xport_upcalls link_upcalls;

/* Bytes of struct link_stats' last_error, its NUL included. */
#define LINK_STATS_ERROR_MAX 96

/* What a link counts, since the daemon started (sluicectl links, the
 * stats file: link.PEER.NAME). */
struct link_counters {
	uint64_t connects;		/* connections established (came up) */
	uint64_t backlog_naks;		/* sends refused: backlog at link_backlog_max */
	uint64_t frames_tx, frames_rx;	/* frames sent, received */
	uint64_t naks_tx, naks_rx;	/* NAKs sent (the peer's messages refused),
					 * received (ours refused) */
	uint64_t post_enomem;		/* posts refused: SQ full or -ENOMEM */
	uint64_t ctl_deferred;		/* control frames that had to wait */
	uint64_t writes_tx;		/* RDMA write segments posted */
	uint64_t retransmits;		/* frames sent again after a reconnect */
	uint64_t rx_duplicates;		/* frames received twice, dropped */
	uint64_t ack_timeouts;		/* connections broken for want of acks */
	uint64_t peer_timeouts;		/* times down past peer_timeout_ms */
	uint64_t peer_restarts;		/* new incarnations of the peer seen */
	uint64_t restart_failed;	/* sends failed by those: may have reached it */
	uint64_t restart_kept;		/* sends carried over to the new incarnation */
	uint64_t nudges_tx, nudges_rx;	/* "we started" said, heard */
	uint64_t tx_ahead_max;		/* bytes: most payload a control frame, ACK
					 * or keepalive was posted behind (a gauge
					 * of the worst) */
	uint64_t illegal_moves;		/* frame moves refused: a bug */
	uint64_t silences;		/* connections broken: nothing heard */
	uint64_t byes_rx;		/* BYEs heard: the peer stopped */
	/* Links on demand (link_idle.c): connections closed by agreement
	 * after idle_link_ms (or for max_links), idle links woken by a
	 * first frame, and asks to close refused because work came. */
	uint64_t idle_closes, idle_wakes, idle_refused;
	/* Messages moved, and their payload bytes: sends the peer took
	 * (completed SL_OK), messages from the peer delivered here (eager
	 * accepted by a queue, rendezvous written in place). */
	uint64_t msgs_tx, bytes_tx, msgs_rx, bytes_rx;
};

/*
 * One link as sluicectl and the stats file show it (admin.c, stats.c,
 * mem_usage.c): a copy made by link_get_stats(), so that nothing above
 * the link's own files reads struct link.  Counters count from the
 * daemon's start; the rest is as at the call.  The counters and gauges
 * are the link.PEER.* statistics of stats.c under the same names, and
 * docs/metrics.md says what each means to an operator.
 */
struct link_stats {
	/* Who the peer is, as configured. */
	char name[CONFIG_NAME_MAX];	/* its node name */
	uint32_t node_id;		/* sl_node_id(name) */
	char host[CONFIG_HOST_MAX];	/* its address: a name or an IP literal */
	uint16_t port;			/* its TCP port */
	/* Where the link is now. */
	enum link_state state;		/* text: link_state_name() */
	/* Why the link last went down or a dial failed; "" until either
	 * happens.  Longer reasons are cut, NUL-terminated. */
	char last_error[LINK_STATS_ERROR_MAX];
	/* How the peer proved who it is: link_auth_how()'s "key",
	 * "address", "encrypted..." or "-" (not up, or not proved yet).
	 * Static storage. */
	const char *auth;
	uint64_t credits;		/* data frames (EAGER, RTS) the peer lets us
					 * send now: link_credits_left(); 0 unless up */
	bool retransmit_timer;		/* the retransmission timer is armed: frames
					 * wait for an ack */
	uint64_t incarnation;		/* the peer's incarnation, from its last
					 * HELLO; 0 before the first */
	ev_tstamp updown_at;		/* s, ev_now() clock: when the link last came
					 * up or went down from up, or was created */
	ev_tstamp rx_at;		/* s, ev_now() clock: the last frame heard
					 * from the peer; 0 before the first */
	/* Gauges, frames and rendezvous under way. */
	uint32_t backlog;		/* frames not yet handed to the transport:
					 * sends and control frames */
	uint32_t ctl_queued;		/* of those, control frames */
	uint32_t unacked;		/* frames handed on, waiting for an ACK */
	uint32_t writes_pending;	/* rendezvous sends with RDMA writes to post */
	uint64_t tx_seq;		/* last sequence number sent (from 1 again
					 * when the peer restarts) */
	uint64_t rx_seq;		/* last sequence number received in order */
	uint64_t acked;			/* highest cumulative ACK from the peer */
	uint32_t ack_backoff;		/* retransmission timer period, in units of
					 * [transport] ack_timeout_ms */
	uint64_t tx_gap_max_ms;		/* ms: longest gap between frames sent while
					 * up and waiting on the peer (rounded to
					 * the nearest) */
	uint64_t rx_gap_max_ms;		/* ms: longest gap between frames heard,
					 * likewise */
	struct link_counters ctr;	/* the link's counters */
	struct link_rndv_counters rc;	/* the rendezvous' gauges and counters */
	/* Memory now (sluicectl memory, mem_usage.h). */
	bool xport_buffers_known;	/* the transport reports buffer_bytes
					 * (xport.h); else the next two are 0 */
	uint64_t xport_tx_bytes;	/* bytes: the connection's send buffers; 0
					 * without a connection */
	uint64_t xport_rx_bytes;	/* bytes: its receive buffers */
	uint64_t retransmit_frames;	/* frames kept until the peer's ACK */
	uint64_t retransmit_bytes;	/* bytes: their payload (eager messages, in
					 * the senders' arenas) */
};

/*
 * link_get_stats - fill @st with what link @l shows (struct link_stats).
 * Runs on the loop thread, in O(frames waiting for an ACK) (it counts
 * their payload).  Cannot fail.
 */
void link_get_stats(const struct link *l, struct link_stats *st);

#endif
