/*
 * link.h - one link per peer node, shared by every local queue.
 *
 * A link owns the connection to one peer daemon, numbers its frames (every
 * frame but HELLO, ACK and RDMA writes; seq from 1 for each pair of
 * incarnations, continuing across reconnects), keeps each sent frame until
 * the peer's cumulative ACK covers it (a message also until its NAK), and
 * then completes the originating descriptor.  Frames that do not fit the
 * transport's send queue wait in the link's backlog, in order, and go out
 * as completions free room; control frames (NAK, RTR, FIN, DONE) go ahead
 * of queued data.
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
 * Rendezvous (messages above the peer's eager_max): the send's frame goes
 * out as an RTS and stays the owner of its descriptor.  When the peer's
 * RTR names a registered destination, the sender registers its source
 * (registration cache), and the frame joins the link's write list, from
 * which RDMA writes of LINK_WRITE_SEGMENT bytes go out interleaved with
 * other data, within the link's data budget (LINK_TX_BUDGET, below); the
 * last carries the peer's recv_id as its immediate.  On
 * the receiving side a struct rndv_recv holds the matched receive and its
 * registration, and the grant its RTR's key names (exactly the receive's
 * range, on this connection: xport.h grant(), docs/rendezvous-grants.md),
 * from the RTR until the immediate (or a FIN) arrives; the
 * receive then completes and a DONE goes back, and only the DONE
 * completes the send (a write that left, or that a NIC acknowledged, can
 * still die with the receiving daemon).
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
 * link_ctl_reserve() SQ slots free for control frames, so ACK, NAK, RTR
 * and FIN never wait behind data.
 */
#ifndef SLD_LINK_H
#define SLD_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <ev.h>

#include "config.h"
#include "desc.h"
#include "link_table.h"
#include "log.h"
#include "match.h"
#include "queue.h"
#include "rcache.h"
#include "sluice.h"
#include "xport/xport.h"

struct daemon;
struct queue;
struct sl_sqe;

enum link_state { LINK_DOWN, LINK_CONNECTING, LINK_HELLO, LINK_UP };

/* Where a frame's main list entry is. */
enum frame_list { FL_NONE, FL_BACKLOG, FL_UNACKED };

/*
 * Who decides what happens to a frame next: exactly one owner at a time.
 * Legal moves (link.c, frame_move()):
 *   BACKLOG -> WIRE      posted to the transport
 *   WIRE -> BACKLOG      sent again after a reconnect
 *   WIRE -> RNDV         a send's RTS answered by an RTR (RNDV -> RNDV:
 *                        the RTR sent again after a reconnect)
 *   BACKLOG, WIRE, RNDV -> DECIDED   its status is known (DECIDED ->
 *                        DECIDED keeps the first status)
 *   DECIDED -> CLIENT    the CQE is written; the frame is freed
 * Control frames go BACKLOG -> WIRE and are freed from either.  Anything
 * else is a bug: an assert in debug builds, and with NDEBUG the move is
 * refused, counted (link.X.illegal_moves) and logged.
 */
enum frame_owner { FO_BACKLOG, FO_WIRE, FO_RNDV, FO_DECIDED, FO_CLIENT };

/*
 * One frame owned by a link.  Control frames (NAK, RTR, FIN) live from
 * queuing until posted.  A send (EAGER or RTS) owns its descriptor, with
 * a queue reference, until it completes: after its ACK or NAK (eager), or
 * after its RDMA write or a failure (rendezvous), and never while the
 * transport still holds a WR that names it (wrs > 0).
 */
struct link_frame {
	TAILQ_ENTRY(link_frame) link;	/* backlog or unacked */
	TAILQ_ENTRY(link_frame) rlink;	/* rndv_tx: rendezvous under way */
	TAILQ_ENTRY(link_frame) wlink;	/* writes: RDMA write to post; or
					 * reap: failed inside a callback */
	uint8_t type;		/* enum sl_wire_type; SL_WIRE_EAGER for a send
				 * until it is posted as an RTS */
	uint8_t where;		/* enum frame_list */
	uint8_t owner;		/* enum frame_owner */
	bool in_rndv, in_writes, in_reap;
	bool last_posted;	/* the write with the immediate is posted */
	bool write_failed;	/* a write completed with an error */
	bool write_refused;	/* ... -EACCES: outside its grant (verbs) */
	bool maybe_reached;	/* send: its last posted frame may have reached
				 * the peer (its WR did not complete
				 * XPORT_WR_UNSENT); such a send fails when the
				 * peer restarts, others go to the new one */
	bool deferred;		/* control: a post was refused (counted once) */
	bool rtr_stale;		/* rendezvous send: the connection broke after
				 * its RTR; it writes again only on a new one */
	uint32_t wrs;		/* posted WRs naming this frame */
	uint64_t seq;		/* sequence number once posted */
	/* Sends: the originating descriptor, holding a reference on its
	 * queue (desc.q; sent from its port). */
	struct desc desc;
	int32_t status;		/* completion status once decided */
	/* Rendezvous send state. */
	uint64_t send_id;
	bool reg_waiting;	/* req is queued in the registration cache */
	uint32_t recv_id;
	uint32_t rkey;
	uint64_t raddr;
	uint64_t wlen;		/* bytes to write (the receive's capacity) */
	uint64_t w_off;		/* bytes posted so far */
	const struct rcache_mr *mr;
	struct rcache_req req;
	/* Control frames. */
	uint64_t nak_seq;
	uint32_t ctl_status;	/* NAK, RTR, FIN */
	uint64_t ctl_send_id;
	uint64_t rtr_raddr;
	uint64_t rtr_len;
	uint32_t rtr_rkey;
	uint32_t rtr_offset;	/* bytes already in place (an RTR sent again) */
	uint32_t ctl_recv_id;	/* RTR, FIN */
};
TAILQ_HEAD(link_frame_list, link_frame);

/* Receiving side of one rendezvous, from the match until the data is in
 * place (write-with-immediate or FIN) or the rendezvous fails. */
struct rndv_recv {
	TAILQ_ENTRY(rndv_recv) link;	/* link->rndv_rx */
	TAILQ_ENTRY(rndv_recv) qlink;	/* q->claims */
	struct link *l;
	struct queue *q;		/* holds a reference */
	struct match_recv *r;		/* the matched receive, unlinked */
	sl_addr_t src;
	uint32_t sender_uid;		/* for the completion (engine_deliver_rts) */
	uint64_t tag;
	uint64_t msg_len;		/* bytes the sender has */
	uint64_t wlen;			/* bytes to be written: min(msg_len, capacity) */
	uint64_t placed;		/* bytes from the start in place: whole writes
					 * the transport saw land (write_placed); an
					 * RTR sent again asks only for the rest */
	uint64_t send_id;		/* the sender's name for it */
	uint32_t recv_id;		/* ours, the write's immediate */
	bool reg_waiting;
	bool rtr_sent;
	uint64_t rtr_seq;		/* seq our RTR went out with; 0 until then */
	/* A message this receive would also have taken met a later-posted
	 * receive: if this rendezvous fails, its receive cannot go back to
	 * its place without breaking the order, so it completes instead. */
	bool overtaken;
	/* The receiving queue died after the RTR: nothing completes, but
	 * the registration (and the queue's memory) is held until the
	 * sender's FIN, or the immediate of a write already on its way,
	 * says no write of it will come. */
	bool aborted;
	const struct rcache_mr *mr;
	struct rcache_req req;
	/* The grant our RTR carries (xport grant(): exactly the receive's
	 * range, on l->conn), made when the RTR is posted, revoked when the
	 * rendezvous ends or fails; it dies with the connection.  0: none. */
	uint32_t grant_rkey;
};

/* Rendezvous sends that failed, remembered so that a late RTR (or one
 * sent again after a reconnect) is answered with the reason (a FIN with
 * SL_ERR_PEER_DOWN, say) rather than a bare cancel; the oldest are
 * forgotten first. */
#define LINK_GONE_MAX 1024

struct link {
	struct daemon *d;
	const struct peer_conf *peer;
	uint32_t node_id;
	enum link_state state;
	bool dialer;			/* we connect; the peer accepts */
	bool timed_out;			/* down past peer_timeout_ms, or said BYE */
	bool bye_rx;			/* the peer said BYE: no peer timeout wait */
	bool was_up;			/* up since the last timeout or start */
	struct log_limit peer_log;	/* the lines its peer causes (link.c) */
	bool dial_warned;		/* a connect failure was logged */
	struct xport_conn *conn;
	struct xport_conn *nudge;	/* accepter: telling the peer we started */
	uint64_t peer_incarnation;
	/* The one before it: a restart never comes back to it, two daemons
	 * of one name take turns (link_diag_two_daemons). */
	uint64_t peer_incarnation_prev;
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
	struct link_frame_list backlog;
	/* Data frames handed to the transport, waiting for ACK/NAK. */
	struct link_frame_list unacked;
	uint32_t n_backlog;		/* sends and control frames */
	uint32_t n_ctl;			/* of those, control frames */
	uint32_t n_unacked;
	uint32_t n_unacked_data;	/* of those, EAGER and RTS: credits in use */
	/* Rendezvous sends past their RTS (rlink), those with writes to post
	 * (wlink), and rendezvous receives. */
	struct link_frame_list rndv_tx;
	struct link_frame_list writes;
	struct link_frame_list reap;	/* decided in a callback, to finish */
	struct rndv_recv_list rndv_rx;
	uint32_t n_rndv_tx, n_writes, n_rndv_rx;
	bool write_turn;		/* the next data post goes to a write */
	uint64_t next_send_id;
	uint32_t next_recv_id;
	ev_timer retry_w;		/* a post failed with nothing in flight */
	ev_timer redial_w;
	ev_timer ack_w;			/* retransmission timer: armed while
					 * frames wait for an ack */
	ev_timer timeout_w;		/* peer_timeout_ms after going down */
	ev_tstamp redial_delay;		/* seconds, doubles to a cap */
	uint32_t ack_backoff;		/* ack timer period / ack_timeout_ms */
	/* The back-off's proving window (link.c, backoff_review): since
	 * its last change or the link's last coming up, the longest wait
	 * for ack progress and the longest gap between frames heard, s. */
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
	/* Counters. */
	uint64_t frames_tx, frames_rx, naks_rx, naks_tx, connects;
	uint64_t post_enomem;		/* posts refused: SQ full or -ENOMEM */
	uint64_t backlog_naks;		/* sends refused: backlog at link_backlog_max */
	uint64_t ctl_deferred;		/* control frames that had to wait */
	uint64_t rndv_tx_done, rndv_rx_done, writes_tx;
	uint64_t rndv_rx_failed;	/* receives completed with an error */
	uint64_t retransmits;		/* frames sent again after a reconnect */
	uint64_t rx_duplicates;		/* frames received twice, dropped */
	uint64_t ack_timeouts;		/* connections broken for want of acks */
	uint64_t peer_timeouts;		/* times down past peer_timeout_ms */
	uint64_t peer_restarts;		/* new incarnations of the peer seen */
	uint64_t restart_failed;	/* sends failed by those: may have reached it */
	uint64_t restart_kept;		/* sends carried over to the new incarnation */
	uint64_t nudges_tx, nudges_rx;	/* "we started" said, heard */
	uint64_t rndv_restarts;		/* rendezvous writes started again */
	uint64_t rndv_resumed_bytes;	/* of those, bytes not written again: the
					 * receiver had them in place */
	uint64_t tx_ahead_max;		/* most payload bytes a control frame, ACK
					 * or keepalive was posted behind */
	uint64_t illegal_moves;		/* frame_move() refused: a bug */
	uint64_t silences;		/* connections broken: nothing heard */
	uint64_t byes_rx;		/* BYEs heard: the peer stopped */
	/* Messages moved, and their payload bytes: sends the peer took
	 * (completed SL_OK), messages from the peer delivered here (eager
	 * accepted by a queue, rendezvous written in place). */
	uint64_t msgs_tx, bytes_tx, msgs_rx, bytes_rx;
	ev_tstamp updown_at;		/* ev_now() when the link last came up or
					 * went down (from up), or was created */
	/* Liveness (link.c, alive_cb): a frame goes out at least every
	 * 0.5 s while the link is up (an ACK if nothing else does), and
	 * nothing heard (no byte: xport last_rx) for max(ack_timeout_ms x
	 * ack_backoff, 1 s) breaks the connection: an idle side learns of a
	 * partition too, and the dialer redials. */
	ev_timer alive_w;
	ev_timer dial_w;		/* a dial that takes too long is redone; an
					 * accepter's nudge, given up */
	ev_tstamp rx_at, tx_at;		/* last frame received, sent */
	struct { uint64_t send_id; int32_t status; } gone[LINK_GONE_MAX];
	uint32_t gone_next;		/* ring index */
};

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

/*
 * What a link hands to the layer above it: the messages and rendezvous
 * headers that arrive, and the receives and unexpected messages its
 * failures end.  The link calls only through this table, as the
 * transport calls the link only through struct xport_upcalls, so that no
 * function above the link is named in link.c.  The engine installs its
 * table (engine_link_handlers) with link_setup_all().
 */
struct link_handlers {
	/* An EAGER frame's message from @src for local port @dst_port;
	 * @sender_uid is what link_auth_sender_uid() made of the frame's.
	 * The payload is copied before return.  Returns SL_OK, or the
	 * status the frame is NAKed with (SL_ERR_NO_ENDPOINT,
	 * SL_NAK_RECEIVER_FULL, SL_NAK_BUSY). */
	int (*deliver)(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		       uint64_t tag, const void *data, uint64_t len);
	/* An RTS from @src for @dst_port: a @msg_len-byte message waiting
	 * at the sender as rendezvous @send_id.  Returns as deliver(). */
	int (*deliver_rts)(struct daemon *d, sl_addr_t src, uint32_t sender_uid,
			   uint32_t dst_port, uint64_t tag, uint64_t msg_len, uint64_t send_id);
	/* Receive @r of @q, taken by a rendezvous that failed before any
	 * data moved, goes back among the posted receives. */
	void (*repost)(struct queue *q, struct match_recv *r);
	/* The unexpected rendezvous headers from @node go (@status; @tell:
	 * each sender hears it). */
	void (*drop_rndv_from)(struct daemon *d, uint32_t node, int status, bool tell);
	/* The posted receives naming @node as their source complete
	 * @status: it timed out. */
	void (*fail_recvs_from)(struct daemon *d, uint32_t node, int status);
};

/* Create the links for every configured peer, handing up through @up
 * (kept; static storage).  Returns 0 or -errno. */
int link_setup_all(struct daemon *d, const struct link_handlers *up);
void link_teardown_all(struct daemon *d);


/*
 * link_send - send validated send descriptor @dsc to the peer.
 * Takes a reference on its queue until the descriptor completes.  Returns 0,
 * -EHOSTDOWN when the link has been down past peer_timeout_ms (caller
 * completes SL_ERR_PEER_DOWN), -ENOBUFS when link_backlog_max sends
 * already wait, or -ENOMEM (caller completes SL_NAK_BUSY for both).
 */
int link_send(struct link *l, const struct desc *dsc);

/* A queue was closed: drop its sends that have not reached the transport
 * (those that have complete normally, discarded), and end the rendezvous
 * its receives were matched to: each sender completes SL_ERR_NO_ENDPOINT. */
void link_cancel_queue(struct daemon *d, struct queue *q);

/*
 * link_rndv_recv_start - receive @r of @q matched RTS @send_id of
 * @msg_len bytes from @src (a remote node), whose completion names
 * @sender_uid (engine_deliver_rts).  Registers the destination
 * (possibly waiting in the registration cache) and sends the RTR.  Takes
 * @r; when the rendezvous cannot start, @r goes back to its place among
 * the posted receives (or the next unexpected message it accepts is
 * delivered to it) and the sender is told with an RTR carrying the
 * status.  Returns true when it took @r (the rendezvous is under way, or
 * waiting for its registration, or @r completed SL_ERR_REG_LIMIT: what it
 * would take of this message is more than [rcache] max_bytes), false when
 * @r is still the caller's (the sender has been told, or the node is not
 * a peer).
 */
bool link_rndv_recv_start(struct daemon *d, struct queue *q, struct match_recv *r,
			  sl_addr_t src, uint32_t sender_uid, uint64_t tag, uint64_t msg_len,
			  uint64_t send_id);

/* Tell the receiver of rendezvous @recv_id that the send ended without
 * writing (@status != SL_OK), or with (SL_OK, peers that do not use the
 * immediate). */
void link_queue_fin(struct link *l, uint32_t recv_id, uint32_t status);

/* An unexpected RTS from @node was dropped (its endpoint closed): tell
 * the sender with @status. */
void link_rndv_refuse(struct daemon *d, uint32_t node, uint64_t send_id, uint32_t status);

/* Hand queued frames to the transport and write them (end of a pass).
 * @force_ack: send every pending ACK now (the engine is going to sleep).
 * Returns the frames and RDMA write segments posted: work, since what
 * the transport completes at once (tcp: written to the socket) frees the
 * data budget for more without any event that would wake the engine. */
unsigned link_flush_all(struct daemon *d, bool force_ack);

/* Could some link post a frame or a write segment now (control frames,
 * or data within LINK_TX_BUDGET: sends with credits, write segments)?
 * The progress engine must not sleep while this holds: nothing but its
 * own passes would post them (progress.c, try_sleep). */
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

#endif
