/*
 * resolve.h - a node that no configuration lists, named by a client
 * (sl_node_resolve(), the control socket's NODE_RESOLVE): its name looked
 * up with the system resolver off the loop, and the peer added
 * (link_add_resolved) when it resolves.
 *
 * getaddrinfo() blocks for as long as a name server takes, so each
 * lookup runs on a thread of its own (detached, every signal blocked),
 * at most RESOLVE_MAX_INFLIGHT at once, and posts its answer back to the
 * loop through an ev_async; nothing else of the daemon is touched off the
 * loop.  A client is answered within RESOLVE_TIMEOUT_S: a lookup still
 * running then answers ETIMEDOUT and keeps its place among the lookups
 * under way until getaddrinfo() returns (a thread cannot be stopped
 * inside it), so slow name servers cost at most RESOLVE_MAX_INFLIGHT
 * threads.  A lookup whose client went finishes the same way, answering
 * nobody; its thread frees what it holds even after resolve_stop().
 * All calls on the loop thread.
 */
#ifndef SLD_RESOLVE_H
#define SLD_RESOLVE_H

#include <stdint.h>

#include "sluice.h"

struct daemon;

#define RESOLVE_MAX_INFLIGHT SL_NODE_RESOLVE_MAX_INFLIGHT	/* lookups at once */
#define RESOLVE_TIMEOUT_S (SL_NODE_RESOLVE_TIMEOUT_MS / 1e3)	/* seconds */

/* The answer for @owner's request @seq: 0 and @node, or a positive errno
 * (sl_node_resolve() lists them).  Called once per request that
 * resolve_node() left under way, unless resolve_forget() came first. */
typedef void resolve_done_fn(void *owner, uint32_t seq, int err, uint32_t node);

/*
 * resolve_node - the node id of node @name (config_name_valid(): the
 * caller checked it) for @owner.  Returns 0 with *@node for this node, a
 * peer, or a node resolved before; -EINPROGRESS when a lookup started
 * (@done answers later, with @owner and @seq); else a negative errno at
 * once: EEXIST (another known name has its node id), EOPNOTSUPP (no
 * [transport] listen: no peers), ESHUTDOWN (stopping), ENOSPC (the
 * resolved peers and the lookups under way are [limits]
 * max_resolved_peers), EAGAIN (RESOLVE_MAX_INFLIGHT lookups under way),
 * ENOMEM.
 */
int resolve_node(struct daemon *d, const char *name, void *owner, uint32_t seq,
		 resolve_done_fn *done, uint32_t *node);

/* @owner is gone: none of its requests is answered (their lookups run to
 * their end all the same). */
void resolve_forget(struct daemon *d, void *owner);

/* Lookups under way (answered or not). */
unsigned resolve_in_flight(const struct daemon *d);

/* Teardown: no answer from now on; the threads still in getaddrinfo()
 * free their own state when it returns. */
void resolve_stop(struct daemon *d);

#endif
