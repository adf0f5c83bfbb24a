/*
 * link.h - one link per peer node, shared by every local queue.
 *
 * A link owns the connection to one peer daemon, numbers its data frames
 * (seq from 1 per connection), keeps each sent message until the peer's
 * cumulative ACK (or a NAK) for it arrives, and then completes the
 * originating descriptor.  Frames that do not fit the transport's send
 * queue wait in the link's backlog, in order, and go out as completions
 * free room; control frames (ACK, NAK) go ahead of queued data.
 *
 * The node with the lower id dials; the other accepts and learns who
 * called from the HELLO.
 */
#ifndef SLD_LINK_H
#define SLD_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <ev.h>

#include "config.h"
#include "sluice.h"
#include "xport/xport.h"

struct daemon;
struct queue;
struct sl_sqe;

enum link_state { LINK_DOWN, LINK_CONNECTING, LINK_HELLO, LINK_UP };

/* One frame owned by a link, from queuing until its send completion (and,
 * for data, until the peer acknowledges it). */
struct link_frame {
	TAILQ_ENTRY(link_frame) link;
	uint8_t type;		/* enum sl_wire_type */
	bool posted;		/* handed to the transport, completion pending */
	bool acked;		/* data: the peer's ACK or NAK arrived */
	uint64_t seq;		/* data: per-connection sequence number */
	/* Data frames: the originating descriptor, holding a queue ref. */
	struct queue *q;
	uint32_t src_port;
	sl_addr_t dst;
	uint64_t tag;
	uint64_t addr;		/* arena offset */
	uint32_t len;		/* bytes */
	uint64_t user_ctx;
	int32_t status;		/* completion status once decided */
	/* Control frames: NAK fields. */
	uint64_t nak_seq;
	uint32_t nak_status;
};
TAILQ_HEAD(link_frame_list, link_frame);

struct link {
	struct daemon *d;
	const struct peer_conf *peer;
	uint32_t node_id;
	enum link_state state;
	bool dialer;			/* we connect; the peer accepts */
	bool timed_out;			/* down past the peer timeout */
	bool dial_warned;		/* a connect failure was logged */
	struct xport_conn *conn;
	uint64_t peer_incarnation;
	uint32_t peer_eager_max;
	/* Sequence state of the current connection. */
	uint64_t tx_seq;		/* last data seq assigned */
	uint64_t rx_seq;		/* last in-order data seq received */
	uint64_t ack_sent;		/* last cumulative ack sent */
	ev_tstamp ack_pending_since;	/* first frame received after ack_sent */
	/* Frames not yet handed to the transport, in send order. */
	struct link_frame_list backlog;
	/* Data frames handed to the transport, waiting for ACK/NAK. */
	struct link_frame_list unacked;
	uint32_t n_backlog;
	uint32_t n_unacked;
	ev_timer redial_w;
	ev_tstamp redial_delay;		/* seconds, doubles to a cap */
	ev_tstamp down_since;
	/* Counters. */
	uint64_t frames_tx, frames_rx, naks_rx, naks_tx, connects;
};

/* Create the links for every configured peer.  Returns 0 or -errno. */
int link_setup_all(struct daemon *d);
void link_teardown_all(struct daemon *d);

/* The link to @node_id, or NULL when the node is not configured. */
struct link *link_find(struct daemon *d, uint32_t node_id);

/*
 * link_send - send a validated SEND descriptor of @q to the peer.
 * Takes a reference on @q until the descriptor completes.  Returns 0,
 * -EHOSTDOWN when the link has been down past the peer timeout (caller
 * completes SL_ERR_PEER_DOWN), or -ENOMEM (caller completes SL_NAK_BUSY).
 */
int link_send(struct link *l, struct queue *q, const struct sl_sqe *sqe);

/* A queue was closed: drop its sends that have not reached the transport
 * (those that have complete normally, discarded). */
void link_cancel_queue(struct daemon *d, struct queue *q);

/* Hand queued frames to the transport and write them (end of a pass).
 * @force_ack: send every pending ACK now (the engine is going to sleep). */
void link_flush_all(struct daemon *d, bool force_ack);

/* The transport upcalls, installed by the daemon. */
extern const struct xport_upcalls link_upcalls;

#endif
