/*
 * rcache.h - registration cache: lazy, chunk-aligned, reference-counted
 * memory registrations of client arenas, with LRU eviction, limits, and a
 * bounded wait queue for requests that cannot be registered yet.
 *
 * The design follows UCX's registration cache (ucs_rcache: regions found
 * by address, held by in-flight operations, idle ones in LRU order and
 * evicted against max_regions / max_size), with counters of hits, misses,
 * evictions, waits and NAKs.  It adds one thing on top: when
 * nothing can be evicted, a request waits in a bounded FIFO queue instead
 * of failing, and past the bound or the wait limit the caller completes
 * the operation with SL_NAK_BUSY.
 *
 * The cache is a pure data structure.  Registering memory is done by a
 * backend (ibv_reg_mr, or the tcp transport's MR table) given at creation
 * as a const ops table and a context pointer.
 *
 * Model:
 * - An owner is one arena (owner id = queue id), added with its size.
 *   Offsets and lengths are bytes within that arena.
 * - A request [offset, offset + len) is widened to whole chunks:
 *   [floor(offset / chunk) * chunk, ceil((offset + len) / chunk) * chunk),
 *   with the end clipped to the arena size.  This span is "the span".
 * - A live entry of the owner whose range covers the span serves the
 *   request (a hit); otherwise the span is registered as one new entry
 *   (a miss).  An entry is never split or grown.  Entries of one owner
 *   may overlap, but none contains another: a new entry replaces those it
 *   contains (idle ones are deregistered at once, held ones serve no new
 *   request and go at their last put).
 * - Entries are held by references.  An entry with no reference is idle
 *   and sits in LRU order; it is deregistered when evicted, when replaced
 *   as above, when its owner is dropped, or at destroy.
 * - Every registration made through the backend is deregistered exactly
 *   once, and never while a reference is held (except by rcache_destroy,
 *   which is then a caller bug and says so).
 *
 * Limits (struct rcache_params):
 * - max_regions: live entries, counting in-use, idle, and superseded or
 *   dead entries still held.  max_bytes: the sum of their lengths.
 * - A registration that would pass a limit first evicts idle entries,
 *   least recently used first, until it fits.  If it cannot fit even with
 *   every idle entry evicted, nothing is evicted and the request waits
 *   (see rcache_get).
 * - "Cache disabled": max_regions == 0 or max_bytes == 0.  Entries are
 *   then deregistered as soon as their last reference goes (nothing is
 *   kept idle).  Concurrent requests for a covered span still share an
 *   in-use entry.  The zero limit means "no limit of that kind"; the other
 *   one, if non-zero, is still enforced, with waits and NAKs as usual.
 *   With both zero there is no limit at all and nothing ever waits.
 *
 * Backend errors: -EAGAIN and -ENOMEM from reg mean "the device is out of
 * MRs / pinnable memory", a limit the cache does not know about, so the
 * cache evicts one idle entry and retries, until the backend succeeds or
 * no idle entry is left; the last error is then returned.  Any other error
 * is returned at once.  No error leaves anything allocated or registered.
 *
 * Not thread-safe: sluiced runs one loop thread and calls this from it
 * only.  No global state; any number of caches may coexist.
 */
#ifndef SLD_RCACHE_H
#define SLD_RCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct rcache;

/*
 * Backend.  Both functions are called only from rcache calls, never
 * re-entered, and must not call back into the cache.
 *
 * reg - register [offset, offset + len) of arena @owner (bytes).  On
 *   success returns 0 and sets *handle (any value; the backend's name for
 *   the registration), *lkey and *rkey.  On failure returns -errno
 *   (-ENOMEM, -EAGAIN when the device is out of MRs, anything else) and
 *   must have registered nothing; the outputs are then ignored.
 * dereg - deregister @handle.  Called exactly once per successful reg.
 *   Cannot fail (a backend that can fail must log and forget).
 */
struct rcache_ops {
	int (*reg)(void *ctx, uint32_t owner, uint64_t offset, uint64_t len,
		   uint64_t *handle, uint32_t *lkey, uint32_t *rkey);
	void (*dereg)(void *ctx, uint64_t handle);
};

struct rcache_params {
	uint64_t chunk_size;	/* bytes; a power of two, >= 1 */
	uint32_t max_regions;	/* live entries; 0: no limit, cache disabled */
	uint64_t max_bytes;	/* live registered bytes; 0: no limit, cache disabled */
	uint32_t max_waiters;	/* wait queue bound; 0: never wait, -EBUSY at once */
	double max_wait;	/* seconds a request may wait; <= 0: no limit */
};

/*
 * A registered entry as the caller sees it.  Owned by the cache; read-only
 * for the caller, valid while the caller holds the reference it got.
 */
struct rcache_mr {
	uint32_t owner;
	uint32_t lkey;
	uint32_t rkey;
	uint64_t offset;	/* bytes; start of the registered span (chunk-aligned) */
	uint64_t len;		/* bytes; covers the request */
	uint64_t handle;	/* the backend's handle */
};

/*
 * Completion of a request that waited.  Called exactly once per
 * rcache_get() that returned -EINPROGRESS, unless rcache_cancel() removed
 * the request first.  @status is 0 with @mr set and one reference taken for
 * the caller, or -errno with @mr NULL:
 *   -ETIMEDOUT   waited max_wait seconds (rcache_expire): like -EBUSY,
 *                the operation completes with SL_NAK_BUSY;
 *   -ECANCELED   its owner was dropped, or the cache destroyed;
 *   other        the backend's reg error, or -ENOMEM.
 * The request struct is no longer used by the cache when this runs, so the
 * callback may free or reuse it.  It may call rcache_get, rcache_put,
 * rcache_cancel, rcache_expire and rcache_drop_owner, but not
 * rcache_destroy.  A callback run by rcache_destroy must not call into the
 * cache at all.
 */
typedef void (*rcache_done_fn)(void *arg, int status, const struct rcache_mr *mr);

/*
 * Storage for one waiting request, owned by the caller (typically embedded
 * in its operation), so that queuing never allocates.  Set up with
 * rcache_req_init(); the other fields are private to the cache.  It must
 * stay valid while queued: until its callback runs or rcache_cancel().
 */
struct rcache_req {
	rcache_done_fn done;
	void *arg;
	/* Private. */
	TAILQ_ENTRY(rcache_req) link;
	uint32_t owner;
	uint64_t offset;
	uint64_t len;
	double deadline;
	bool queued;
};

static inline void rcache_req_init(struct rcache_req *req, rcache_done_fn done, void *arg)
{
	req->done = done;
	req->arg = arg;
	req->queued = false;
}

/* Counters; gauges are marked "now", the rest count since creation. */
struct rcache_stats {
	uint64_t hits;		/* gets served by a live entry at once */
	uint64_t misses;	/* gets that needed a registration (incl. waits, NAKs) */
	uint64_t evictions;	/* idle entries deregistered to make room or as redundant */
	uint64_t waits;		/* gets queued (-EINPROGRESS) */
	uint64_t naks;		/* gets refused with -EBUSY */
	uint64_t timeouts;	/* waiters failed with -ETIMEDOUT */
	uint64_t cancels;	/* waiters cancelled (drop_owner, cancel, destroy) */
	uint64_t reg_fails;	/* backend reg calls that failed */
	uint64_t regions;	/* now: live entries */
	uint64_t bytes;		/* now: sum of live entries' lengths */
	uint64_t waiting;	/* now: queued requests */
	uint64_t regs;		/* successful backend reg calls */
	uint64_t deregs;	/* backend dereg calls; regs == deregs + regions */
};

/*
 * rcache_create - a new, empty cache.  @params and @ops are copied; @ctx is
 * passed to the backend as is.  Returns 0 and sets *rc_p, or -EINVAL (NULL
 * argument, missing op, chunk_size not a power of two, max_wait NaN) or
 * -ENOMEM.
 */
int rcache_create(const struct rcache_params *params, const struct rcache_ops *ops,
		  void *ctx, struct rcache **rc_p);

/*
 * rcache_destroy - fail every waiter with -ECANCELED (callbacks run here),
 * deregister every entry, free the cache.  Entries still referenced are
 * deregistered too: that is a caller bug, logged as a warning, and their
 * rcache_mr pointers dangle.  Returns how many such entries there were
 * (0 in a correct program).  @rc may be NULL (returns 0).
 */
size_t rcache_destroy(struct rcache *rc);

/*
 * rcache_owner_add - make arena @owner of @arena_size bytes known.
 * Returns 0, -EINVAL (arena_size 0), -EEXIST (already added and not
 * dropped) or -ENOMEM.  An owner id may be added again after
 * rcache_drop_owner().
 */
int rcache_owner_add(struct rcache *rc, uint32_t owner, uint64_t arena_size);

/*
 * rcache_drop_owner - arena @owner goes away.  Its idle entries are
 * deregistered now; its referenced ones are made dead (never found again)
 * and deregistered on their last rcache_put; its waiters are removed and
 * their callbacks run with -ECANCELED.  Then other waiters are served with
 * the room freed (their callbacks may run here too).  Returns 0 or -ENOENT
 * (unknown owner).
 */
int rcache_drop_owner(struct rcache *rc, uint32_t owner);

/*
 * rcache_get - a registration covering [offset, offset + len) of arena
 * @owner (bytes), for one in-flight operation.  @now is the caller's clock
 * in seconds (ev_now()); a waiting request's deadline is now + max_wait.
 * @req is the storage used if the request must wait, already set up with
 * rcache_req_init(); NULL means "do not wait" (-EBUSY instead).
 *
 * Returns:
 *   0            *mr_p set, one reference taken: release with rcache_put().
 *   -EINPROGRESS no room now: queued on @req; its callback runs later.
 *                Also when others are already waiting and this request
 *                needs a registration (FIFO: no overtaking).  A request a
 *                live entry covers is served at once even then: it takes
 *                no room.
 *   -EBUSY       no room and the wait queue is full (max_waiters), or
 *                @req is NULL: complete the operation with SL_NAK_BUSY.
 *   -E2BIG       the span is larger than max_bytes: it can never fit.
 *   -EINVAL      len 0, the range passes the end of the arena, @mr_p
 *                NULL, or @req already queued or without a callback.
 *   -ENOENT      unknown owner.
 *   -ENOMEM      out of memory for the cache's own bookkeeping.
 *   other -errno the backend's reg error (after the retries above).
 * *mr_p is written only on 0.  Counting: every call that gets past the
 * argument checks and -E2BIG is exactly one hit or one miss.
 */
int rcache_get(struct rcache *rc, uint32_t owner, uint64_t offset, uint64_t len,
	       double now, struct rcache_req *req, const struct rcache_mr **mr_p);

/*
 * rcache_put - release one reference got from rcache_get or a callback.
 * At the last reference the entry becomes idle (most recently used), or
 * is deregistered if it is dead, superseded, or the cache is disabled;
 * then waiters are served in FIFO order with the room there is (their
 * callbacks may run here).  Putting more references than were got is a
 * bug (assert).
 */
void rcache_put(struct rcache *rc, const struct rcache_mr *mr);

/*
 * rcache_cancel - remove waiting request @req without running its
 * callback (its operation was abandoned).  Other waiters may be served
 * here.  Returns 0, or -ENOENT if @req is not queued (its callback has run
 * or it never waited).
 */
int rcache_cancel(struct rcache *rc, struct rcache_req *req);

/*
 * rcache_expire - fail every waiter whose deadline is at or before @now
 * (seconds, same clock as rcache_get) with -ETIMEDOUT, then serve the
 * others.  Returns how many timed out.  Call it from a timer; a waiter
 * never times out without it.
 */
size_t rcache_expire(struct rcache *rc, double now);

/*
 * rcache_next_deadline - the earliest waiter deadline (seconds), to arm
 * that timer; returns false when no waiter has a deadline.
 */
bool rcache_next_deadline(const struct rcache *rc, double *deadline_p);

/* Copy the counters out. */
void rcache_get_stats(const struct rcache *rc, struct rcache_stats *st);

/*
 * rcache_check - verify every internal invariant (index order, LRU
 * membership, counters against the entries).  For tests and debug
 * builds; O(entries + waiters).  Returns 0, or -EFAULT on the first
 * violation (logged).
 */
int rcache_check(const struct rcache *rc);

#endif
