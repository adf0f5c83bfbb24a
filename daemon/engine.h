/*
 * engine.h - what happens to a validated descriptor: receives are matched
 * at their endpoint, sends are delivered locally with one copy or handed
 * to the link of the destination node; frames from links are delivered.
 */
#ifndef SLD_ENGINE_H
#define SLD_ENGINE_H

#include <stdint.h>

#include "sluice.h"

struct daemon;
struct queue;
struct sl_sqe;

/*
 * engine_validate - check a copied SQE against its queue.
 * Returns SL_OK or SL_ERR_INVALID.
 */
int engine_validate(const struct queue *q, const struct sl_sqe *sqe);

/* Carry out a validated SQE; always leads to exactly one completion. */
void engine_submit(struct queue *q, const struct sl_sqe *sqe);

/*
 * engine_deliver - a message for local port @dst_port arrived (from a
 * local queue or a link).  The payload is copied before return.
 * Returns SL_OK (delivered or queued unexpected), SL_ERR_NO_ENDPOINT,
 * SL_NAK_RECEIVER_FULL when queueing it unexpected would pass the
 * endpoint's [limits] unexpected_max_bytes, or SL_NAK_BUSY when the daemon
 * is out of memory.
 */
int engine_deliver(struct daemon *d, sl_addr_t src, uint32_t dst_port,
		   uint64_t tag, const void *data, uint64_t len);

/* Write the completion of one accepted descriptor of @q. */
void engine_complete(struct queue *q, uint8_t opcode, sl_addr_t peer, uint64_t tag,
		     uint64_t len, uint64_t user_ctx, int status);

#endif
