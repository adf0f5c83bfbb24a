/*
 * rcache.c - registration cache; see rcache.h.
 *
 * Lookup structure: per owner, a sorted array of the owner's indexed
 * entries, ordered by start offset, kept so that no entry contains
 * another.  Then starts and ends are both strictly increasing along the
 * array, so the only candidate to cover a span [s, e) is the last entry
 * starting at or before s: one binary search.  A new entry registered for
 * [s, e) (a miss: nothing covers it) takes the place of the entries it
 * contains, which form one contiguous run; idle ones are deregistered
 * (redundant), held ones leave the index ("stale") and go on their last
 * put.  An array beats a tree here: entries per owner are bounded by
 * max_regions (tens to thousands), inserts are as rare as registrations,
 * and memmove of a few KiB costs far less than the ibv_reg_mr it follows.
 * A hash by chunk index was rejected: entries span many chunks, so it
 * needs one slot per chunk per entry or a scan.
 *
 * Owners (one per client queue) live in an array sorted by id, for the
 * same reasons; they change only when queues open and close.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rcache.h"

/* acquire() could not fit the span even with every idle entry evicted. */
#define NOFIT 1

struct rc_owner;

struct rc_entry {
	struct rcache_mr mr;		/* first: to_entry() casts back */
	struct rc_owner *owner;		/* NULL once out of the index (stale, dead) */
	uint32_t refs;
	bool on_lru;			/* iff refs == 0 (an entry out of the index
					   with refs 0 is deregistered at once) */
	TAILQ_ENTRY(rc_entry) lru;
	LIST_ENTRY(rc_entry) all;
};

struct rc_owner {
	uint32_t id;
	uint64_t arena_size;
	struct rc_entry **idx;		/* by mr.offset; no entry contains another */
	size_t n, cap;
};

TAILQ_HEAD(rc_lru, rc_entry);
TAILQ_HEAD(rc_waitq, rcache_req);

struct rcache {
	struct rcache_params p;
	struct rcache_ops ops;
	void *ctx;
	bool disabled;			/* no idle caching (a zero limit) */
	bool serving;			/* serve() is on the stack */

	struct rc_owner **owners;	/* by id */
	size_t n_owners, cap_owners;

	struct rc_lru lru;		/* idle entries, least recently used first */
	uint64_t idle_regions, idle_bytes;
	LIST_HEAD(, rc_entry) all;	/* every live entry, for destroy and check */
	struct rc_waitq waitq;

	struct rcache_stats st;
};

static struct rc_entry *to_entry(const struct rcache_mr *mr)
{
	return (struct rc_entry *)(uintptr_t)mr;
}

static uint64_t entry_end(const struct rc_entry *e)
{
	return e->mr.offset + e->mr.len;
}

/* ---- owners ---- */

/* Index of the first owner with id >= @id. */
static size_t owner_pos(const struct rcache *rc, uint32_t id)
{
	size_t lo = 0, hi = rc->n_owners;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rc->owners[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct rc_owner *owner_find(const struct rcache *rc, uint32_t id)
{
	size_t i = owner_pos(rc, id);

	return i < rc->n_owners && rc->owners[i]->id == id ? rc->owners[i] : NULL;
}

/* ---- per-owner index ---- */

/* Index of the first entry starting at or after @off. */
static size_t idx_lower(const struct rc_owner *ow, uint64_t off)
{
	size_t lo = 0, hi = ow->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ow->idx[mid]->mr.offset < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct rc_entry *idx_lookup(const struct rc_owner *ow, uint64_t s, uint64_t e)
{
	size_t i = idx_lower(ow, s + 1);	/* first starting after s; s < arena */

	if (i == 0)
		return NULL;
	return entry_end(ow->idx[i - 1]) >= e ? ow->idx[i - 1] : NULL;
}

static int idx_reserve(struct rc_owner *ow)
{
	struct rc_entry **n;
	size_t cap;

	if (ow->n < ow->cap)
		return 0;
	cap = ow->cap ? ow->cap * 2 : 8;
	n = realloc(ow->idx, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	ow->idx = n;
	ow->cap = cap;
	return 0;
}

static void idx_remove_at(struct rc_owner *ow, size_t i)
{
	ow->idx[i]->owner = NULL;
	memmove(&ow->idx[i], &ow->idx[i + 1], (ow->n - i - 1) * sizeof(ow->idx[0]));
	ow->n--;
}

static void idx_remove(struct rc_owner *ow, struct rc_entry *ent)
{
	size_t i = idx_lower(ow, ent->mr.offset);	/* starts are distinct */

	assert(i < ow->n && ow->idx[i] == ent);
	idx_remove_at(ow, i);
}

/* ---- entries ---- */

static void lru_remove(struct rcache *rc, struct rc_entry *ent)
{
	assert(ent->on_lru);
	TAILQ_REMOVE(&rc->lru, ent, lru);
	ent->on_lru = false;
	rc->idle_regions--;
	rc->idle_bytes -= ent->mr.len;
}

static void lru_add(struct rcache *rc, struct rc_entry *ent)
{
	TAILQ_INSERT_TAIL(&rc->lru, ent, lru);
	ent->on_lru = true;
	rc->idle_regions++;
	rc->idle_bytes += ent->mr.len;
}

/* The single place a registration ends.  @ent is off the LRU and the index. */
static void entry_dereg(struct rcache *rc, struct rc_entry *ent)
{
	assert(!ent->on_lru && !ent->owner);
	rc->ops.dereg(rc->ctx, ent->mr.handle);
	rc->st.deregs++;
	rc->st.regions--;
	rc->st.bytes -= ent->mr.len;
	LIST_REMOVE(ent, all);
	free(ent);
}

/* Deregister an idle indexed entry by the cache's own decision. */
static void evict(struct rcache *rc, struct rc_entry *ent)
{
	assert(ent->refs == 0 && ent->owner);
	lru_remove(rc, ent);
	idx_remove(ent->owner, ent);
	rc->st.evictions++;
	entry_dereg(rc, ent);
}

static void take_ref(struct rcache *rc, struct rc_entry *ent)
{
	if (ent->refs == 0)
		lru_remove(rc, ent);
	ent->refs++;
}

/* Would one more entry of @span bytes fit beside @regions / @bytes? */
static bool fits(const struct rcache *rc, uint64_t regions, uint64_t bytes, uint64_t span)
{
	return (rc->p.max_regions == 0 || regions < rc->p.max_regions) &&
	       (rc->p.max_bytes == 0 || bytes + span <= rc->p.max_bytes);
}

/* The chunk-aligned span of a valid request, clipped to the arena. */
static void span_of(const struct rcache *rc, const struct rc_owner *ow,
		    uint64_t off, uint64_t len, uint64_t *s, uint64_t *e)
{
	uint64_t mask = rc->p.chunk_size - 1;
	uint64_t end = off + len;
	uint64_t pad = (rc->p.chunk_size - (end & mask)) & mask;

	*s = off & ~mask;
	*e = ow->arena_size - end >= pad ? end + pad : ow->arena_size;
}

/*
 * Register [s, e) of @ow as a new entry with one reference; nothing covers
 * it.  Evicts only once the span is known to fit, so a request that ends up
 * waiting has cost the cache nothing.  Returns 0, NOFIT or -errno.
 */
static int acquire(struct rcache *rc, struct rc_owner *ow, uint64_t s, uint64_t e,
		   struct rc_entry **ent_p)
{
	uint64_t span = e - s;
	struct rc_entry *ent;
	size_t i;
	int rc_reg;

	if (!fits(rc, rc->st.regions - rc->idle_regions, rc->st.bytes - rc->idle_bytes, span))
		return NOFIT;
	ent = calloc(1, sizeof(*ent));
	if (!ent)
		return -ENOMEM;
	if (idx_reserve(ow) < 0) {
		free(ent);
		return -ENOMEM;
	}

	/* Idle entries inside the span are redundant once it is registered:
	   they go before any other entry is evicted for room. */
	i = idx_lower(ow, s);
	while (i < ow->n && entry_end(ow->idx[i]) <= e) {
		if (ow->idx[i]->refs == 0)
			evict(rc, ow->idx[i]);
		else
			i++;
	}
	while (!fits(rc, rc->st.regions, rc->st.bytes, span)) {
		assert(!TAILQ_EMPTY(&rc->lru));	/* the first fits() said so */
		evict(rc, TAILQ_FIRST(&rc->lru));
	}

	for (;;) {
		rc_reg = rc->ops.reg(rc->ctx, ow->id, s, span, &ent->mr.handle,
				     &ent->mr.lkey, &ent->mr.rkey);
		if (rc_reg == 0)
			break;
		rc->st.reg_fails++;
		if ((rc_reg != -EAGAIN && rc_reg != -ENOMEM) || TAILQ_EMPTY(&rc->lru)) {
			free(ent);
			return rc_reg < 0 ? rc_reg : -EIO;
		}
		/* The device ran out before our limits did: make room there. */
		evict(rc, TAILQ_FIRST(&rc->lru));
	}
	rc->st.regs++;
	rc->st.regions++;
	rc->st.bytes += span;

	/* Held entries inside the span leave the index (stale). */
	i = idx_lower(ow, s);
	while (i < ow->n && entry_end(ow->idx[i]) <= e) {
		assert(ow->idx[i]->refs > 0);
		idx_remove_at(ow, i);
	}
	memmove(&ow->idx[i + 1], &ow->idx[i], (ow->n - i) * sizeof(ow->idx[0]));
	ow->idx[i] = ent;
	ow->n++;

	ent->mr.owner = ow->id;
	ent->mr.offset = s;
	ent->mr.len = span;
	ent->owner = ow;
	ent->refs = 1;
	LIST_INSERT_HEAD(&rc->all, ent, all);
	*ent_p = ent;
	return 0;
}

/* ---- waiters ---- */

static void waitq_remove(struct rcache *rc, struct rcache_req *req)
{
	TAILQ_REMOVE(&rc->waitq, req, link);
	req->queued = false;
	rc->st.waiting--;
}

/* Run the callbacks of requests already taken off the wait queue. */
static void finish_all(struct rc_waitq *list, int status)
{
	struct rcache_req *req;

	while ((req = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, req, link);
		req->done(req->arg, status, NULL);
	}
}

/*
 * Serve waiters in FIFO order until the head does not fit.  Callbacks may
 * call back in; a nested serve() returns at once and this loop picks up
 * whatever changed, since it re-reads the head after every callback.
 */
static void serve(struct rcache *rc)
{
	struct rcache_req *req;
	struct rc_owner *ow;
	struct rc_entry *ent;
	uint64_t s, e;
	int r;

	if (rc->serving)
		return;
	rc->serving = true;
	while ((req = TAILQ_FIRST(&rc->waitq))) {
		ow = owner_find(rc, req->owner);
		assert(ow);	/* drop_owner removes its waiters */
		span_of(rc, ow, req->offset, req->len, &s, &e);
		ent = idx_lookup(ow, s, e);
		if (ent) {
			take_ref(rc, ent);
			r = 0;
		} else {
			r = acquire(rc, ow, s, e, &ent);
			if (r == NOFIT)
				break;
		}
		waitq_remove(rc, req);
		req->done(req->arg, r, r == 0 ? &ent->mr : NULL);
	}
	rc->serving = false;
}

/* ---- API ---- */

int rcache_create(const struct rcache_params *params, const struct rcache_ops *ops,
		  void *ctx, struct rcache **rc_p)
{
	struct rcache *rc;

	if (!params || !ops || !ops->reg || !ops->dereg || !rc_p)
		return -EINVAL;
	if (params->chunk_size == 0 || (params->chunk_size & (params->chunk_size - 1)))
		return -EINVAL;
	if (isnan(params->max_wait))
		return -EINVAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->p = *params;
	rc->ops = *ops;
	rc->ctx = ctx;
	rc->disabled = params->max_regions == 0 || params->max_bytes == 0;
	TAILQ_INIT(&rc->lru);
	LIST_INIT(&rc->all);
	TAILQ_INIT(&rc->waitq);
	*rc_p = rc;
	return 0;
}

size_t rcache_destroy(struct rcache *rc)
{
	struct rc_waitq cancelled = TAILQ_HEAD_INITIALIZER(cancelled);
	struct rcache_req *req;
	struct rc_entry *ent;
	size_t in_use = 0, i;

	if (!rc)
		return 0;
	while ((req = TAILQ_FIRST(&rc->waitq))) {
		waitq_remove(rc, req);
		rc->st.cancels++;
		TAILQ_INSERT_TAIL(&cancelled, req, link);
	}
	finish_all(&cancelled, -ECANCELED);

	while ((ent = LIST_FIRST(&rc->all))) {
		if (ent->refs)
			in_use++;
		if (ent->on_lru)
			lru_remove(rc, ent);
		ent->owner = NULL;	/* the indexes are freed below */
		entry_dereg(rc, ent);
	}
	for (i = 0; i < rc->n_owners; i++) {
		free(rc->owners[i]->idx);
		free(rc->owners[i]);
	}
	free(rc->owners);
	if (in_use)
		log_warn("rcache: destroyed with %zu registration(s) still in use", in_use);
	free(rc);
	return in_use;
}

int rcache_owner_add(struct rcache *rc, uint32_t owner, uint64_t arena_size)
{
	struct rc_owner *ow, **n;
	size_t i, cap;

	if (arena_size == 0)
		return -EINVAL;
	i = owner_pos(rc, owner);
	if (i < rc->n_owners && rc->owners[i]->id == owner)
		return -EEXIST;
	if (rc->n_owners == rc->cap_owners) {
		cap = rc->cap_owners ? rc->cap_owners * 2 : 8;
		n = realloc(rc->owners, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		rc->owners = n;
		rc->cap_owners = cap;
	}
	ow = calloc(1, sizeof(*ow));
	if (!ow)
		return -ENOMEM;
	ow->id = owner;
	ow->arena_size = arena_size;
	memmove(&rc->owners[i + 1], &rc->owners[i], (rc->n_owners - i) * sizeof(*n));
	rc->owners[i] = ow;
	rc->n_owners++;
	return 0;
}

int rcache_drop_owner(struct rcache *rc, uint32_t owner)
{
	struct rc_waitq cancelled = TAILQ_HEAD_INITIALIZER(cancelled);
	struct rcache_req *req, *next;
	struct rc_owner *ow;
	struct rc_entry *ent;
	size_t i = owner_pos(rc, owner);

	if (i >= rc->n_owners || rc->owners[i]->id != owner)
		return -ENOENT;
	ow = rc->owners[i];
	memmove(&rc->owners[i], &rc->owners[i + 1], (rc->n_owners - i - 1) * sizeof(ow));
	rc->n_owners--;

	while (ow->n) {
		ent = ow->idx[ow->n - 1];
		idx_remove_at(ow, ow->n - 1);
		if (ent->refs == 0) {
			lru_remove(rc, ent);
			entry_dereg(rc, ent);
		}
		/* else dead: deregistered by its last rcache_put() */
	}
	free(ow->idx);
	free(ow);

	for (req = TAILQ_FIRST(&rc->waitq); req; req = next) {
		next = TAILQ_NEXT(req, link);
		if (req->owner != owner)
			continue;
		waitq_remove(rc, req);
		rc->st.cancels++;
		TAILQ_INSERT_TAIL(&cancelled, req, link);
	}
	/* Callbacks only once the cache is consistent again. */
	finish_all(&cancelled, -ECANCELED);
	serve(rc);
	return 0;
}

int rcache_get(struct rcache *rc, uint32_t owner, uint64_t offset, uint64_t len,
	       double now, struct rcache_req *req, const struct rcache_mr **mr_p)
{
	struct rc_owner *ow;
	struct rc_entry *ent;
	uint64_t s, e;
	int r;

	if (!mr_p || (req && (req->queued || !req->done)))
		return -EINVAL;
	ow = owner_find(rc, owner);
	if (!ow)
		return -ENOENT;
	if (len == 0 || offset >= ow->arena_size || len > ow->arena_size - offset)
		return -EINVAL;
	span_of(rc, ow, offset, len, &s, &e);
	if (rc->p.max_bytes && e - s > rc->p.max_bytes)
		return -E2BIG;

	ent = idx_lookup(ow, s, e);
	if (ent) {
		take_ref(rc, ent);
		rc->st.hits++;
		*mr_p = &ent->mr;
		return 0;
	}
	rc->st.misses++;
	if (TAILQ_EMPTY(&rc->waitq)) {
		r = acquire(rc, ow, s, e, &ent);
		if (r == 0)
			*mr_p = &ent->mr;
		if (r != NOFIT)
			return r;
	}
	if (!req || rc->st.waiting >= rc->p.max_waiters) {
		rc->st.naks++;
		return -EBUSY;
	}
	req->owner = owner;
	req->offset = offset;
	req->len = len;
	req->deadline = rc->p.max_wait > 0 ? now + rc->p.max_wait : INFINITY;
	req->queued = true;
	TAILQ_INSERT_TAIL(&rc->waitq, req, link);
	rc->st.waiting++;
	rc->st.waits++;
	return -EINPROGRESS;
}

void rcache_put(struct rcache *rc, const struct rcache_mr *mr)
{
	struct rc_entry *ent = to_entry(mr);

	assert(ent->refs > 0);
	if (--ent->refs)
		return;
	if (ent->owner && rc->disabled)
		idx_remove(ent->owner, ent);
	if (ent->owner)
		lru_add(rc, ent);
	else
		entry_dereg(rc, ent);
	serve(rc);
}

int rcache_cancel(struct rcache *rc, struct rcache_req *req)
{
	if (!req || !req->queued)
		return -ENOENT;
	waitq_remove(rc, req);
	rc->st.cancels++;
	serve(rc);	/* it may have been the head blocking the others */
	return 0;
}

size_t rcache_expire(struct rcache *rc, double now)
{
	struct rc_waitq expired = TAILQ_HEAD_INITIALIZER(expired);
	struct rcache_req *req, *next;
	size_t n = 0;

	for (req = TAILQ_FIRST(&rc->waitq); req; req = next) {
		next = TAILQ_NEXT(req, link);
		if (req->deadline > now)
			continue;
		waitq_remove(rc, req);
		rc->st.timeouts++;
		TAILQ_INSERT_TAIL(&expired, req, link);
		n++;
	}
	finish_all(&expired, -ETIMEDOUT);
	serve(rc);
	return n;
}

bool rcache_next_deadline(const struct rcache *rc, double *deadline_p)
{
	const struct rcache_req *req;
	double d = INFINITY;

	/* A scan, not the head: callers' clocks need not be monotonic. */
	TAILQ_FOREACH(req, &rc->waitq, link)
		if (req->deadline < d)
			d = req->deadline;
	if (isinf(d))
		return false;
	*deadline_p = d;
	return true;
}

void rcache_get_stats(const struct rcache *rc, struct rcache_stats *st)
{
	*st = rc->st;
}

#define CHECK(cond) do { if (!(cond)) { \
		log_err("rcache: invariant violated: %s (%s:%d)", #cond, __FILE__, __LINE__); \
		return -EFAULT; } } while (0)

int rcache_check(const struct rcache *rc)
{
	uint64_t mask = rc->p.chunk_size - 1;
	uint64_t regions = 0, bytes = 0, indexed = 0, idle = 0, idle_bytes = 0, waiting = 0;
	const struct rc_entry *ent;
	const struct rcache_req *req;
	const struct rc_owner *ow;
	size_t i, j;

	for (i = 0; i < rc->n_owners; i++) {
		ow = rc->owners[i];
		CHECK(i == 0 || rc->owners[i - 1]->id < ow->id);
		CHECK(ow->n <= ow->cap);
		for (j = 0; j < ow->n; j++) {
			ent = ow->idx[j];
			CHECK(ent->owner == ow && ent->mr.owner == ow->id);
			CHECK(ent->mr.len > 0 && (ent->mr.offset & mask) == 0);
			CHECK(entry_end(ent) <= ow->arena_size);
			CHECK((entry_end(ent) & mask) == 0 || entry_end(ent) == ow->arena_size);
			/* Strictly increasing starts and ends: no containment. */
			CHECK(j == 0 || (ow->idx[j - 1]->mr.offset < ent->mr.offset &&
					 entry_end(ow->idx[j - 1]) < entry_end(ent)));
		}
		indexed += ow->n;
	}
	LIST_FOREACH(ent, &rc->all, all) {
		regions++;
		bytes += ent->mr.len;
		CHECK(ent->on_lru == (ent->refs == 0));
		CHECK(ent->refs > 0 || (ent->owner && !rc->disabled));
		if (ent->owner) {
			i = idx_lower(ent->owner, ent->mr.offset);
			CHECK(i < ent->owner->n && ent->owner->idx[i] == ent);
			CHECK(indexed > 0);
			indexed--;
		}
	}
	CHECK(indexed == 0);
	TAILQ_FOREACH(ent, &rc->lru, lru) {
		CHECK(ent->on_lru);
		idle++;
		idle_bytes += ent->mr.len;
	}
	CHECK(idle == rc->idle_regions && idle_bytes == rc->idle_bytes);
	CHECK(regions == rc->st.regions && bytes == rc->st.bytes);
	CHECK(rc->st.regs == rc->st.deregs + rc->st.regions);
	CHECK(rc->p.max_regions == 0 || regions <= rc->p.max_regions);
	CHECK(rc->p.max_bytes == 0 || bytes <= rc->p.max_bytes);
	TAILQ_FOREACH(req, &rc->waitq, link) {
		CHECK(req->queued && owner_find(rc, req->owner));
		waiting++;
	}
	CHECK(waiting == rc->st.waiting && waiting <= rc->p.max_waiters);
	return 0;
}
