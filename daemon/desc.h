/*
 * desc.h - one descriptor, as the daemon carries it from the submission
 * ring to its completion.
 *
 * queue_drain() copies each SQE out of the shared ring exactly once into
 * a struct desc; from then on every holder (a posted receive in the
 * matcher, a send frame on a link, a local copy, a rendezvous) embeds or
 * points at that one struct, and queue_complete() turns it into the CQE.
 * Nothing is copied field by field on the way.
 */
#ifndef SLD_DESC_H
#define SLD_DESC_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

struct queue;

struct desc {
	struct queue *q;	/* whose CQ gets the completion; the holder
				 * keeps a reference where it must (queue.h) */
	uint8_t opcode;		/* SL_OP_SEND, SL_OP_RECV, SL_OP_PROBE or
				 * SL_OP_CANCEL once the engine took it (an
				 * SQE's RECV_CLAIMED is a RECV with a claim);
				 * a refused SQE keeps whatever its client
				 * wrote */
	uint8_t flags;		/* the SQE's flags: SL_PROBE_* for a probe */
	bool rsvd_set;		/* the SQE's rsvd0 or rsvd1 was not 0 */
	/* Made by the daemon, not drained from a ring: a probe's discard
	 * of a rendezvous message (endpoint.c).  It holds no CQ slot and
	 * counts nowhere in flight: its completion writes nothing. */
	bool internal;
	sl_addr_t peer;		/* send: destination; receive: the source it
				 * accepts (SL_NODE_LOCAL made a real node id) */
	uint64_t tag;
	uint64_t tag_mask;	/* receive */
	uint64_t addr;		/* arena offset of the buffer */
	uint64_t len;		/* send: bytes; receive: capacity, bytes */
	uint64_t user_ctx;
	/* The SQE's rsvd2: a RECV_CLAIMED's claim (a receive that takes
	 * exactly that message, and never waits posted); 0 for every other
	 * kind. */
	uint64_t claim;
};

/* Is @dsc a receive bound to one message (a RECV_CLAIMED, or a probe's
 * internal discard)?  Such a receive never waits among the posted ones:
 * when its rendezvous fails it completes with the failure instead of
 * going back (rndv.c). */
static inline bool desc_bound(const struct desc *dsc)
{
	return dsc->claim != 0 || dsc->internal;
}

/*
 * What a receive's (or a probe's) completion names of the message it
 * took (or found): its source,
 * the sending client's uid (SL_UID_UNKNOWN where it cannot be known),
 * its tag and its whole length in bytes (above the receive's capacity
 * when it was truncated).  A completion without one (sends, receives
 * that took nothing) names the descriptor's own peer, tag and len.
 */
struct desc_msg {
	sl_addr_t src;
	uint32_t sender_uid;
	uint64_t tag;
	uint64_t len;
	uint64_t claim;		/* a probe's claim (sl_cqe.claim); else 0 */
};

#endif
