/*
 * engine.h - what happens to a descriptor: validated, then a receive is
 * posted at its endpoint (endpoint.h), a send delivered within the node or
 * handed to the rendezvous of a link (rndv.h); and what a queue that
 * closes or fails unwinds.
 */
#ifndef SLD_ENGINE_H
#define SLD_ENGINE_H

#include <stdint.h>

#include "desc.h"
#include "match.h"
#include "sluice.h"

struct daemon;
struct queue;

/*
 * engine_validate - check descriptor @dsc, as queue_drain() took it,
 * against its queue: opcode, flags and reserved fields, arena bounds,
 * addresses.  Returns SL_OK or SL_ERR_INVALID.
 */
int engine_validate(const struct desc *dsc);

/*
 * engine_submit - carry out descriptor @dsc of dsc->q (queue_drain()
 * took it and counts it in flight): validated, refused at once while the
 * daemon drains or when its queue has failed, else matched, delivered,
 * or handed to a link; a probe, a claimed receive or a cancel carried
 * out at the endpoint (endpoint.h; a cancel that finds no receive asks
 * rndv.h and copy.h whether sends hold its user_ctx).  Always leads to
 * exactly one queue_complete() of @dsc.
 */
void engine_submit(struct desc *dsc);

/*
 * engine_close_queue - @q's owner closed it or died: queue_kill(), then
 * what refers to it is unwound: its unexpected messages (their senders
 * told), its local rendezvous sends and copies, its frames and
 * rendezvous on links, its registrations; then the owner's reference
 * goes.  Nothing when @q is dead already.
 */
void engine_close_queue(struct queue *q);

/*
 * engine_fail_queue - the client of @q made the daemon's work on it
 * impossible (copy.h: it removed the pages under a copy again and
 * again).  The queue stays open but has failed: its local copies under
 * way, its local rendezvous sends still waiting for a receive and its
 * posted receives complete @status now, and every descriptor it posts
 * from now on completes @status at once; the other side of an ended copy
 * gets SL_ERR_NO_ENDPOINT.  Work of it already on a link finishes as it
 * would.  One log line with @why (rate-limited across queues).  Nothing
 * when @q is dead or failed already.
 */
void engine_fail_queue(struct queue *q, int status, const char *why);

/* Install the endpoint's rendezvous hooks (endpoint.h): before any
 * descriptor or frame is handled. */
void engine_init(struct daemon *d);

/* The daemon stops: local rendezvous sends waiting unexpected, local
 * copies and posted receives complete SL_ERR_CANCELED. */
void engine_stop(struct daemon *d);

/* What the links hand up (link.h): EAGER frames to the endpoint, the
 * rest to the rendezvous (rndv.h). */
extern const struct link_handlers engine_link_handlers;

#endif
