/*
 * test_rcache.c - registration cache (daemon/rcache.c) against a fake
 * backend.
 *
 * The fake records every reg and dereg by handle, so each test can say
 * exactly which registration went and how many times: a second dereg of a
 * handle, a dereg of an unknown handle, or a dereg while the test still
 * holds a reference all count as "bad", which must stay 0.  It can fail the
 * Nth reg call with a chosen error, or fail with -EAGAIN while K
 * registrations are live (a device's max_mr).
 *
 * Every step of every test goes through a wrapper that then checks INV():
 * regs == deregs + regions, the fake's own tallies agree with the cache's
 * counters, and rcache_check() finds the cache's internals consistent.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcache.h"

#define C (UINT64_C(1) << 20)	/* chunk size of the unit tests: 1 MiB */
#define T0 100.0		/* the clock at creation, seconds */

/* ---- fake backend ---- */

struct fk_mr {
	uint32_t owner;
	uint64_t off, len;
	bool live;
	uint32_t deregs;
	uint32_t held;		/* references the test holds */
};

struct fake {
	struct fk_mr *h;	/* by handle; 0 is never handed out */
	size_t cap;
	uint64_t next;
	uint64_t reg_calls, reg_ok, dereg_calls, live, live_bytes, bad;
	uint64_t fail_at;	/* fail the reg call with this ordinal (1-based) */
	int fail_err;
	uint64_t max_live;	/* -EAGAIN while this many are live; 0: no limit */
};

static struct fake fk;
static struct rcache *rc;
static double now;
static int n_done;		/* callbacks so far, for FIFO order */

static int fk_reg(void *ctx, uint32_t owner, uint64_t off, uint64_t len,
		  uint64_t *handle, uint32_t *lkey, uint32_t *rkey)
{
	struct fake *f = ctx;
	uint64_t h;

	f->reg_calls++;
	if (f->fail_at == f->reg_calls)
		return f->fail_err;
	if (f->max_live && f->live >= f->max_live)
		return -EAGAIN;
	if (f->next >= f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->h = realloc(f->h, f->cap * sizeof(*f->h));
		ck_assert_ptr_nonnull(f->h);
	}
	h = f->next++;
	f->h[h] = (struct fk_mr){ .owner = owner, .off = off, .len = len, .live = true };
	f->reg_ok++;
	f->live++;
	f->live_bytes += len;
	*handle = h;
	*lkey = (uint32_t)(h * 2);
	*rkey = (uint32_t)(h * 2 + 1);
	return 0;
}

static void fk_dereg(void *ctx, uint64_t handle)
{
	struct fake *f = ctx;
	struct fk_mr *m;

	f->dereg_calls++;
	if (handle == 0 || handle >= f->next || !f->h[handle].live) {
		f->bad++;
		return;
	}
	m = &f->h[handle];
	if (m->held)
		f->bad++;
	m->live = false;
	m->deregs++;
	f->live--;
	f->live_bytes -= m->len;
}

static const struct rcache_ops fk_ops = { .reg = fk_reg, .dereg = fk_dereg };

/* ---- harness ---- */

#define INV() inv(__LINE__)
static void inv(int line)
{
	struct rcache_stats st;

	rcache_get_stats(rc, &st);
	ck_assert_msg(st.regs == st.deregs + st.regions,
		      "line %d: regs %ju != deregs %ju + regions %ju", line,
		      (uintmax_t)st.regs, (uintmax_t)st.deregs, (uintmax_t)st.regions);
	ck_assert_msg(fk.reg_ok == st.regs && fk.dereg_calls == st.deregs &&
		      fk.reg_calls == st.regs + st.reg_fails &&
		      fk.live == st.regions && fk.live_bytes == st.bytes,
		      "line %d: fake and cache disagree", line);
	ck_assert_msg(fk.bad == 0, "line %d: %ju bad deregs", line, (uintmax_t)fk.bad);
	ck_assert_msg(rcache_check(rc) == 0, "line %d: rcache_check failed", line);
}

static void mk(uint64_t chunk, uint32_t max_regions, uint64_t max_bytes,
	       uint32_t max_waiters, double max_wait)
{
	struct rcache_params p = {
		.chunk_size = chunk, .max_regions = max_regions, .max_bytes = max_bytes,
		.max_waiters = max_waiters, .max_wait = max_wait,
	};

	memset(&fk, 0, sizeof(fk));
	fk.next = 1;
	now = T0;
	n_done = 0;
	ck_assert_int_eq(rcache_create(&p, &fk_ops, &fk, &rc), 0);
	INV();
}

/* Destroy in a correct flow: nothing in use, every registration gone once. */
static void finish(void)
{
	uint64_t h;

	ck_assert_uint_eq(rcache_destroy(rc), 0);
	rc = NULL;
	ck_assert_uint_eq(fk.live, 0);
	ck_assert_uint_eq(fk.live_bytes, 0);
	ck_assert_uint_eq(fk.bad, 0);
	ck_assert_uint_eq(fk.dereg_calls, fk.reg_ok);
	for (h = 1; h < fk.next; h++)
		ck_assert_uint_eq(fk.h[h].deregs, 1);
	free(fk.h);
	fk.h = NULL;
}

static struct rcache_stats stats(void)
{
	struct rcache_stats st;

	rcache_get_stats(rc, &st);
	return st;
}

static void add_owner(uint32_t owner, uint64_t size)
{
	ck_assert_int_eq(rcache_owner_add(rc, owner, size), 0);
	INV();
}

/* A waiting request as the engine would hold it. */
struct tw {
	struct rcache_req req;
	int calls;
	int status;
	const struct rcache_mr *mr;
	int order;		/* n_done at its callback, 1-based */
	bool put_in_cb;		/* release the entry from inside the callback */
};

static void tw_done(void *arg, int status, const struct rcache_mr *mr)
{
	struct tw *w = arg;

	w->calls++;
	w->status = status;
	w->mr = mr;
	w->order = ++n_done;
	if (status == 0) {
		ck_assert_ptr_nonnull(mr);
		ck_assert(fk.h[mr->handle].live);
		fk.h[mr->handle].held++;
		if (w->put_in_cb) {
			fk.h[mr->handle].held--;
			rcache_put(rc, mr);
		}
	} else {
		ck_assert_ptr_null(mr);
	}
}

static void tw_init(struct tw *w, int n)
{
	int i;

	memset(w, 0, n * sizeof(*w));
	for (i = 0; i < n; i++)
		rcache_req_init(&w[i].req, tw_done, &w[i]);
}

/* rcache_get; on success checks the entry covers the request and is live. */
static int get(uint32_t owner, uint64_t off, uint64_t len, struct tw *w,
	       const struct rcache_mr **mr_p)
{
	const struct rcache_mr *mr = NULL;
	int r = rcache_get(rc, owner, off, len, now, w ? &w->req : NULL, &mr);

	if (r == 0) {
		ck_assert_ptr_nonnull(mr);
		ck_assert_uint_eq(mr->owner, owner);
		ck_assert_uint_le(mr->offset, off);
		ck_assert_uint_ge(mr->offset + mr->len, off + len);
		ck_assert(fk.h[mr->handle].live);
		ck_assert_uint_eq(fk.h[mr->handle].owner, owner);
		ck_assert_uint_eq(fk.h[mr->handle].off, mr->offset);
		ck_assert_uint_eq(fk.h[mr->handle].len, mr->len);
		ck_assert_uint_eq(mr->lkey, mr->handle * 2);
		fk.h[mr->handle].held++;
		if (mr_p)
			*mr_p = mr;
	} else {
		ck_assert_ptr_null(mr);
	}
	INV();
	return r;
}

/* A get that must succeed; returns the entry. */
static const struct rcache_mr *get_ok(uint32_t owner, uint64_t off, uint64_t len)
{
	const struct rcache_mr *mr = NULL;

	ck_assert_int_eq(get(owner, off, len, NULL, &mr), 0);
	return mr;
}

static void put(const struct rcache_mr *mr)
{
	ck_assert(fk.h[mr->handle].live);
	ck_assert_uint_gt(fk.h[mr->handle].held, 0);
	fk.h[mr->handle].held--;
	rcache_put(rc, mr);
	INV();
}

static void drop(uint32_t owner, int want)
{
	ck_assert_int_eq(rcache_drop_owner(rc, owner), want);
	INV();
}

static size_t expire(double t)
{
	size_t n;

	now = t;
	n = rcache_expire(rc, now);
	INV();
	return n;
}

static bool dereged_once(uint64_t handle)
{
	return !fk.h[handle].live && fk.h[handle].deregs == 1;
}

/* ---- unit tests ---- */

START_TEST(hit_miss)
{
	const struct rcache_mr *a, *b, *c, *d;
	struct rcache_stats st;

	mk(C, 16, 64 * C, 4, 10);
	add_owner(1, 64 * C);

	a = get_ok(1, 100, 200);
	ck_assert_uint_eq(a->offset, 0);
	ck_assert_uint_eq(a->len, C);
	ck_assert_uint_eq(a->handle, 1);
	b = get_ok(1, C - 300, 300);	/* same chunk */
	ck_assert_ptr_eq(b, a);
	st = stats();
	ck_assert_uint_eq(st.regs, 1);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 1);

	c = get_ok(1, 3 * C - 100, 200);	/* straddles chunks 2 and 3 */
	ck_assert_uint_eq(c->offset, 2 * C);
	ck_assert_uint_eq(c->len, 2 * C);
	d = get_ok(1, 2 * C, 2 * C);
	ck_assert_ptr_eq(d, c);
	st = stats();
	ck_assert_uint_eq(st.regs, 2);
	ck_assert_uint_eq(st.hits, 2);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.regions, 2);
	ck_assert_uint_eq(st.bytes, 3 * C);

	put(a);
	put(b);
	put(c);
	put(d);
	st = stats();
	ck_assert_uint_eq(st.regions, 2);	/* idle, still cached */
	ck_assert_uint_eq(st.deregs, 0);

	a = get_ok(1, 0, 1);
	ck_assert_uint_eq(a->handle, 1);
	put(a);
	st = stats();
	ck_assert_uint_eq(st.hits, 3);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.regs, 2);
	finish();
}
END_TEST

START_TEST(span_clip_and_invalid)
{
	const struct rcache_mr *a, *b;
	struct rcache_stats st;
	uint64_t arena = 5 * C + 1000;

	mk(C, 16, 64 * C, 4, 10);
	add_owner(2, arena);

	a = get_ok(2, 5 * C + 10, 100);	/* in the partial last chunk */
	ck_assert_uint_eq(a->offset, 5 * C);
	ck_assert_uint_eq(a->len, 1000);
	put(a);
	/* [4C, 5C + 10) widens to [4C, 6C), clipped to the arena end; it
	   contains the idle [5C, 5C + 1000), which goes as redundant. */
	b = get_ok(2, 4 * C + 10, C);
	ck_assert_uint_eq(b->offset, 4 * C);
	ck_assert_uint_eq(b->len, C + 1000);
	ck_assert(dereged_once(1));
	st = stats();
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.regions, 1);
	ck_assert_uint_eq(st.bytes, C + 1000);
	a = get_ok(2, arena - 1, 1);		/* the last byte: a hit */
	ck_assert_ptr_eq(a, b);

	ck_assert_int_eq(get(2, 0, 0, NULL, NULL), -EINVAL);
	ck_assert_int_eq(get(2, arena, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(get(2, arena - 1, 2, NULL, NULL), -EINVAL);
	ck_assert_int_eq(get(2, UINT64_MAX, 2, NULL, NULL), -EINVAL);
	ck_assert_int_eq(get(2, 1, UINT64_MAX, NULL, NULL), -EINVAL);
	ck_assert_int_eq(get(3, 0, 1, NULL, NULL), -ENOENT);
	ck_assert_int_eq(rcache_get(rc, 2, 0, 1, now, NULL, NULL), -EINVAL);
	st = stats();
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.regs, 2);
	put(a);
	put(b);
	finish();
}
END_TEST

/* A miss whose span contains a held entry: that entry leaves the index but
   stays registered until its last put. */
START_TEST(supersede_held)
{
	const struct rcache_mr *a, *b, *c;
	struct rcache_stats st;
	uint64_t ha;

	mk(C, 16, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	a = get_ok(1, 10, 10);
	ha = a->handle;
	b = get_ok(1, C - 10, 20);
	ck_assert_uint_eq(b->offset, 0);
	ck_assert_uint_eq(b->len, 2 * C);
	c = get_ok(1, 10, 10);		/* now served by the wider entry */
	ck_assert_ptr_eq(c, b);
	st = stats();
	ck_assert_uint_eq(st.regions, 2);
	ck_assert_uint_eq(st.bytes, 3 * C);
	ck_assert(fk.h[ha].live);
	put(a);
	ck_assert(dereged_once(ha));
	st = stats();
	ck_assert_uint_eq(st.regions, 1);
	ck_assert_uint_eq(st.evictions, 0);
	put(b);
	put(c);
	finish();
}
END_TEST

START_TEST(lru_order)
{
	const struct rcache_mr *a, *b, *c, *d, *e;
	uint64_t ha, hb, hc;
	struct rcache_stats st;

	mk(C, 3, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	a = get_ok(1, 0, 1);
	b = get_ok(1, C, 1);
	c = get_ok(1, 2 * C, 1);
	ha = a->handle;
	hb = b->handle;
	hc = c->handle;
	put(a);
	put(b);
	put(c);
	a = get_ok(1, 5, 1);	/* touch A: LRU order is now B, C, A */
	ck_assert_uint_eq(a->handle, ha);
	put(a);

	d = get_ok(1, 3 * C, 1);
	ck_assert(dereged_once(hb));
	ck_assert(fk.h[ha].live);
	ck_assert(fk.h[hc].live);
	st = stats();
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.deregs, 1);
	ck_assert_uint_eq(st.regions, 3);

	e = get_ok(1, 4 * C, 1);	/* next least recent: C */
	ck_assert(dereged_once(hc));
	ck_assert(fk.h[ha].live);
	st = stats();
	ck_assert_uint_eq(st.evictions, 2);
	ck_assert_uint_eq(st.deregs, 2);
	put(d);
	put(e);
	finish();
}
END_TEST

START_TEST(refcount_pins)
{
	const struct rcache_mr *a, *a2, *b, *c, *d;
	uint64_t ha, hb;
	struct rcache_stats st;

	mk(C, 2, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	a = get_ok(1, 0, 1);
	a2 = get_ok(1, 5, 1);
	ck_assert_ptr_eq(a2, a);
	ha = a->handle;
	b = get_ok(1, C, 1);
	hb = b->handle;
	put(b);
	put(a);			/* one of two references: still in use */

	c = get_ok(1, 2 * C, 1);	/* B is the only idle entry */
	ck_assert(dereged_once(hb));
	ck_assert(fk.h[ha].live);

	/* A and C in use, nothing idle: nothing is evicted. */
	ck_assert_int_eq(get(1, 3 * C, 1, NULL, NULL), -EBUSY);
	st = stats();
	ck_assert_uint_eq(st.naks, 1);
	ck_assert_uint_eq(st.deregs, 1);
	ck_assert(fk.h[ha].live);

	put(a2);		/* A idle now, so evictable */
	d = get_ok(1, 3 * C, 1);
	ck_assert(dereged_once(ha));
	st = stats();
	ck_assert_uint_eq(st.evictions, 2);
	ck_assert_uint_eq(st.regions, 2);
	put(c);
	put(d);
	finish();
}
END_TEST

START_TEST(limit_bytes)
{
	const struct rcache_mr *a, *b, *c, *d;
	uint64_t ha, hb, hc;
	struct rcache_stats st;

	mk(C, 100, 4 * C, 4, 10);
	add_owner(1, 64 * C);
	a = get_ok(1, 0, 1);			/* C */
	b = get_ok(1, C, C + 1);		/* [C, 3C): 2C */
	ha = a->handle;
	hb = b->handle;
	ck_assert_uint_eq(b->len, 2 * C);
	put(a);
	put(b);
	c = get_ok(1, 4 * C, 2 * C);		/* 3C + 2C > 4C: evict A only */
	hc = c->handle;
	ck_assert(dereged_once(ha));
	ck_assert(fk.h[hb].live);
	st = stats();
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.bytes, 4 * C);
	ck_assert_uint_eq(st.regions, 2);

	ck_assert_int_eq(get(1, 0, 4 * C + 1, NULL, NULL), -E2BIG);	/* 5C: never fits */
	/* In use 2C + 3C > 4C even with B evicted: refused, B kept. */
	ck_assert_int_eq(get(1, 8 * C, 3 * C, NULL, NULL), -EBUSY);
	ck_assert(fk.h[hb].live);
	st = stats();
	ck_assert_uint_eq(st.misses, 4);	/* E2BIG is not a miss */
	ck_assert_uint_eq(st.naks, 1);

	put(c);
	d = get_ok(1, 8 * C, 3 * C);		/* evicts B, then C */
	ck_assert(dereged_once(hb));
	ck_assert(dereged_once(hc));
	st = stats();
	ck_assert_uint_eq(st.evictions, 3);
	ck_assert_uint_eq(st.regions, 1);
	ck_assert_uint_eq(st.bytes, 3 * C);
	put(d);
	finish();
}
END_TEST

START_TEST(full_waits)
{
	const struct rcache_mr *m[8];
	uint64_t h[8];
	struct tw w[5];
	struct rcache_stats st;
	double d;
	int i;

	mk(C, 8, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 5);
	for (i = 0; i < 8; i++) {
		m[i] = get_ok(1, i * C, 1);
		h[i] = m[i]->handle;
	}
	ck_assert_int_eq(get(1, 8 * C, 1, &w[0], NULL), -EINPROGRESS);
	st = stats();
	ck_assert_uint_eq(st.waits, 1);
	ck_assert_uint_eq(st.waiting, 1);
	for (i = 1; i < 4; i++)
		ck_assert_int_eq(get(1, (8 + i) * C, 1, &w[i], NULL), -EINPROGRESS);
	ck_assert_int_eq(get(1, 12 * C, 1, &w[4], NULL), -EBUSY);	/* the 13th */
	st = stats();
	ck_assert_uint_eq(st.waits, 4);
	ck_assert_uint_eq(st.waiting, 4);
	ck_assert_uint_eq(st.naks, 1);
	ck_assert_uint_eq(st.regions, 8);
	ck_assert(rcache_next_deadline(rc, &d));
	ck_assert(d == T0 + 10);

	put(m[0]);	/* idle, evicted at once for the head waiter */
	ck_assert(dereged_once(h[0]));
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].status, 0);
	ck_assert_int_eq(w[0].order, 1);
	ck_assert_uint_eq(w[0].mr->offset, 8 * C);
	ck_assert_int_eq(w[1].calls, 0);
	put(m[1]);
	put(m[2]);
	ck_assert_int_eq(w[1].calls, 1);
	ck_assert_int_eq(w[1].order, 2);
	ck_assert_uint_eq(w[1].mr->offset, 9 * C);
	ck_assert_int_eq(w[2].calls, 1);
	ck_assert_int_eq(w[2].order, 3);
	ck_assert_uint_eq(w[2].mr->offset, 10 * C);
	ck_assert_int_eq(w[3].calls, 0);
	st = stats();
	ck_assert_uint_eq(st.evictions, 3);
	ck_assert_uint_eq(st.waiting, 1);
	ck_assert_uint_eq(st.regions, 8);

	ck_assert_uint_eq(expire(T0 + 9.5), 0);
	ck_assert_int_eq(w[3].calls, 0);
	ck_assert_uint_eq(expire(T0 + 10), 1);
	ck_assert_int_eq(w[3].calls, 1);
	ck_assert_int_eq(w[3].status, -ETIMEDOUT);
	ck_assert_uint_eq(expire(T0 + 100), 0);
	ck_assert_int_eq(w[3].calls, 1);
	ck_assert_int_eq(w[4].calls, 0);	/* NAKed, never queued */
	ck_assert(!rcache_next_deadline(rc, &d));
	st = stats();
	ck_assert_uint_eq(st.timeouts, 1);
	ck_assert_uint_eq(st.waiting, 0);

	for (i = 3; i < 8; i++)
		put(m[i]);
	for (i = 0; i < 3; i++)
		put(w[i].mr);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(w[i].calls, i == 4 ? 0 : 1);
	finish();
}
END_TEST

START_TEST(expire_each_once)
{
	const struct rcache_mr *m;
	struct tw w[4];
	struct rcache_stats st;
	double d;
	int i;

	mk(C, 1, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 4);
	m = get_ok(1, 0, 1);
	for (i = 0; i < 4; i++) {
		now = T0 + i;
		ck_assert_int_eq(get(1, (1 + i) * C, 1, &w[i], NULL), -EINPROGRESS);
	}
	ck_assert(rcache_next_deadline(rc, &d));
	ck_assert(d == T0 + 10);
	ck_assert_uint_eq(expire(T0 + 11.5), 2);
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].status, -ETIMEDOUT);
	ck_assert_int_eq(w[0].order, 1);
	ck_assert_int_eq(w[1].calls, 1);
	ck_assert_int_eq(w[1].order, 2);
	ck_assert_int_eq(w[2].calls, 0);
	ck_assert(rcache_next_deadline(rc, &d));
	ck_assert(d == T0 + 12);
	ck_assert_uint_eq(expire(T0 + 13), 2);
	ck_assert_uint_eq(expire(T0 + 14), 0);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(w[i].calls, 1);
		ck_assert_int_eq(w[i].status, -ETIMEDOUT);
		ck_assert_int_eq(w[i].order, i + 1);
	}
	put(m);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(w[i].calls, 1);
	st = stats();
	ck_assert_uint_eq(st.timeouts, 4);
	ck_assert_uint_eq(st.waits, 4);
	ck_assert_uint_eq(st.regions, 1);
	finish();
}
END_TEST

/* A callback that releases its entry at once: the loop serving the waiters
   must not recurse, and must still serve the next one. */
START_TEST(put_from_callback)
{
	const struct rcache_mr *m;
	struct tw w[2];
	struct rcache_stats st;
	uint64_t hm;

	mk(C, 1, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 2);
	w[0].put_in_cb = true;
	m = get_ok(1, 0, 1);
	hm = m->handle;
	ck_assert_int_eq(get(1, C, 1, &w[0], NULL), -EINPROGRESS);
	ck_assert_int_eq(get(1, 2 * C, 1, &w[1], NULL), -EINPROGRESS);
	put(m);
	ck_assert(dereged_once(hm));
	ck_assert(dereged_once(hm + 1));	/* w[0]'s, released in its callback */
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].order, 1);
	ck_assert_int_eq(w[1].calls, 1);
	ck_assert_int_eq(w[1].status, 0);
	ck_assert_int_eq(w[1].order, 2);
	ck_assert_uint_eq(w[1].mr->offset, 2 * C);
	st = stats();
	ck_assert_uint_eq(st.evictions, 2);
	ck_assert_uint_eq(st.regions, 1);
	ck_assert_uint_eq(st.waiting, 0);
	put(w[1].mr);
	finish();
}
END_TEST

START_TEST(cancel_waiter)
{
	const struct rcache_mr *m;
	struct tw w[2];
	struct rcache_stats st;

	/* By bytes: the head needs 3C, the second only C, which would fit. */
	mk(C, 100, 4 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 2);
	m = get_ok(1, 0, 2 * C);
	ck_assert_int_eq(get(1, 4 * C, 3 * C, &w[0], NULL), -EINPROGRESS);
	ck_assert_int_eq(get(1, 8 * C, 1, &w[1], NULL), -EINPROGRESS);	/* FIFO */
	ck_assert_int_eq(rcache_get(rc, 1, 8 * C, 1, now, &w[1].req, &m), -EINVAL);
	{
		struct rcache_req no_cb;

		rcache_req_init(&no_cb, NULL, NULL);
		ck_assert_int_eq(rcache_get(rc, 1, 8 * C, 1, now, &no_cb, &m), -EINVAL);
	}
	ck_assert_int_eq(rcache_cancel(rc, &w[0].req), 0);
	INV();
	ck_assert_int_eq(w[0].calls, 0);
	ck_assert_int_eq(w[1].calls, 1);	/* unblocked by the cancel */
	ck_assert_int_eq(w[1].status, 0);
	ck_assert_int_eq(rcache_cancel(rc, &w[0].req), -ENOENT);
	ck_assert_int_eq(rcache_cancel(rc, &w[1].req), -ENOENT);
	st = stats();
	ck_assert_uint_eq(st.cancels, 1);
	ck_assert_uint_eq(st.waits, 2);
	ck_assert_uint_eq(st.waiting, 0);
	ck_assert_uint_eq(st.regions, 2);
	put(m);
	put(w[1].mr);
	finish();
}
END_TEST

START_TEST(drop_owner)
{
	const struct rcache_mr *i1, *u1, *x2, *n1;
	uint64_t hi, hu;
	struct tw w[2];
	struct rcache_stats st;

	mk(C, 100, 6 * C, 4, 10);
	add_owner(1, 64 * C);
	add_owner(2, 64 * C);
	tw_init(w, 2);
	i1 = get_ok(1, 0, 1);		/* idle below */
	hi = i1->handle;
	put(i1);
	u1 = get_ok(1, C, 2 * C);	/* in use, 2C */
	hu = u1->handle;
	x2 = get_ok(2, 0, 2 * C);	/* in use, 2C */
	/* 4C in use + 3C > 6C: waits.  Owner 2's 2C would fit, but queues
	   behind it. */
	ck_assert_int_eq(get(1, 8 * C, 3 * C, &w[0], NULL), -EINPROGRESS);
	ck_assert_int_eq(get(2, 8 * C, 2 * C, &w[1], NULL), -EINPROGRESS);

	drop(1, 0);
	ck_assert(dereged_once(hi));	/* idle: now */
	ck_assert(fk.h[hu].live);	/* in use: dead, kept */
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].status, -ECANCELED);
	ck_assert_int_eq(w[0].order, 1);
	ck_assert_int_eq(w[1].calls, 1);	/* the room of the idle entry */
	ck_assert_int_eq(w[1].status, 0);
	ck_assert_int_eq(w[1].order, 2);
	st = stats();
	ck_assert_uint_eq(st.evictions, 0);
	ck_assert_uint_eq(st.cancels, 1);
	ck_assert_uint_eq(st.regions, 3);
	ck_assert_uint_eq(st.bytes, 6 * C);

	ck_assert_int_eq(get(1, 0, 1, NULL, NULL), -ENOENT);
	drop(1, -ENOENT);
	put(u1);			/* the last put of a dead entry */
	ck_assert(dereged_once(hu));
	st = stats();
	ck_assert_uint_eq(st.regions, 2);
	ck_assert_uint_eq(st.deregs, 2);

	add_owner(1, 64 * C);		/* the queue id reused */
	n1 = get_ok(1, C, 1);
	ck_assert_uint_ne(n1->handle, hu);
	put(n1);
	put(x2);
	put(w[1].mr);
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[1].calls, 1);
	finish();
}
END_TEST

START_TEST(backend_failure)
{
	const struct rcache_mr *a, *b, *c;
	uint64_t ha;
	struct rcache_stats st;

	mk(C, 8, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	fk.fail_at = 1;
	fk.fail_err = -EIO;
	ck_assert_int_eq(get(1, 0, 1, NULL, NULL), -EIO);
	st = stats();
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.reg_fails, 1);
	ck_assert_uint_eq(st.regs, 0);
	ck_assert_uint_eq(st.regions, 0);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(fk.live, 0);

	a = get_ok(1, 0, 1);		/* a later request is unaffected */
	ha = a->handle;
	put(a);
	b = get_ok(1, C, 1);
	/* -ENOMEM from the device with an idle entry: evict it, retry. */
	fk.fail_at = fk.reg_calls + 1;
	fk.fail_err = -ENOMEM;
	c = get_ok(1, 2 * C, 1);
	ck_assert(dereged_once(ha));
	st = stats();
	ck_assert_uint_eq(st.reg_fails, 2);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.regions, 2);

	/* Device limit with nothing idle: the error comes back. */
	fk.max_live = 2;
	ck_assert_int_eq(get(1, 3 * C, 1, NULL, NULL), -EAGAIN);
	st = stats();
	ck_assert_uint_eq(st.reg_fails, 3);
	ck_assert_uint_eq(st.regions, 2);
	ck_assert_uint_eq(st.misses, 5);
	/* A different error is not retried even with an idle entry. */
	put(c);
	fk.max_live = 0;
	fk.fail_at = fk.reg_calls + 1;
	fk.fail_err = -EFAULT;
	ck_assert_int_eq(get(1, 3 * C, 1, NULL, NULL), -EFAULT);
	st = stats();
	ck_assert_uint_eq(st.reg_fails, 4);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.regions, 2);
	put(b);
	finish();
}
END_TEST

/* A reg failing for a waiter fails that waiter only; the next is served. */
START_TEST(backend_failure_waiter)
{
	const struct rcache_mr *m0, *m1;
	uint64_t h0;
	struct tw w[2];
	struct rcache_stats st;

	mk(C, 2, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 2);
	m0 = get_ok(1, 0, 1);
	m1 = get_ok(1, C, 1);
	h0 = m0->handle;
	ck_assert_int_eq(get(1, 2 * C, 1, &w[0], NULL), -EINPROGRESS);
	ck_assert_int_eq(get(1, 3 * C, 1, &w[1], NULL), -EINPROGRESS);
	fk.fail_at = fk.reg_calls + 1;
	fk.fail_err = -EIO;
	put(m0);
	ck_assert(dereged_once(h0));
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].status, -EIO);
	ck_assert_int_eq(w[0].order, 1);
	ck_assert_int_eq(w[1].calls, 1);
	ck_assert_int_eq(w[1].status, 0);
	ck_assert_int_eq(w[1].order, 2);
	ck_assert_uint_eq(w[1].mr->offset, 3 * C);
	st = stats();
	ck_assert_uint_eq(st.reg_fails, 1);
	ck_assert_uint_eq(st.regions, 2);
	ck_assert_uint_eq(st.waiting, 0);
	put(m1);
	put(w[1].mr);
	finish();
}
END_TEST

START_TEST(disabled_cache)
{
	const struct rcache_mr *a, *a2, *b;
	uint64_t ha, hb;
	struct tw w[1];
	struct rcache_stats st;
	int i;

	/* max_regions 0: nothing kept idle; max_bytes still a limit. */
	mk(C, 0, 4 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 1);
	a = get_ok(1, 0, 1);
	a2 = get_ok(1, 7, 1);		/* shared while in use */
	ck_assert_ptr_eq(a2, a);
	ha = a->handle;
	put(a);
	ck_assert(fk.h[ha].live);
	put(a2);
	ck_assert(dereged_once(ha));
	st = stats();
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.regions, 0);

	b = get_ok(1, 0, 2 * C + 1);	/* 3C */
	hb = b->handle;
	ck_assert_int_eq(get(1, 4 * C, 2 * C, &w[0], NULL), -EINPROGRESS);
	put(b);
	ck_assert(dereged_once(hb));
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].status, 0);
	put(w[0].mr);
	st = stats();
	ck_assert_uint_eq(st.evictions, 0);
	ck_assert_uint_eq(st.regions, 0);
	ck_assert_uint_eq(st.deregs, 3);
	finish();

	/* Both zero: no limit at all, nothing waits, nothing is kept. */
	{
		const struct rcache_mr *m[20];

		mk(C, 0, 0, 0, 0);
		add_owner(1, 64 * C);
		for (i = 0; i < 20; i++)
			m[i] = get_ok(1, i * C, 1);
		st = stats();
		ck_assert_uint_eq(st.regions, 20);
		for (i = 0; i < 20; i++)
			put(m[i]);
		st = stats();
		ck_assert_uint_eq(st.regions, 0);
		ck_assert_uint_eq(st.deregs, 20);
		finish();
	}
}
END_TEST

START_TEST(create_and_owners)
{
	struct rcache_params p = { .chunk_size = 3, .max_regions = 1, .max_bytes = 1 };
	struct rcache_ops no_dereg = { .reg = fk_reg };
	struct rcache *r2 = NULL;
	const struct rcache_mr *m;

	ck_assert_int_eq(rcache_create(&p, &fk_ops, &fk, &r2), -EINVAL);
	p.chunk_size = 0;
	ck_assert_int_eq(rcache_create(&p, &fk_ops, &fk, &r2), -EINVAL);
	p.chunk_size = 4096;
	p.max_wait = NAN;
	ck_assert_int_eq(rcache_create(&p, &fk_ops, &fk, &r2), -EINVAL);
	p.max_wait = 1;
	ck_assert_int_eq(rcache_create(&p, &no_dereg, &fk, &r2), -EINVAL);
	ck_assert_int_eq(rcache_create(NULL, &fk_ops, &fk, &r2), -EINVAL);
	ck_assert_ptr_null(r2);
	ck_assert_uint_eq(rcache_destroy(NULL), 0);

	mk(C, 4, 4 * C, 1, 1);
	ck_assert_int_eq(rcache_owner_add(rc, 1, 0), -EINVAL);
	add_owner(5, C);
	add_owner(1, C);
	add_owner(3, C);
	ck_assert_int_eq(rcache_owner_add(rc, 3, C), -EEXIST);
	drop(3, 0);
	drop(3, -ENOENT);
	drop(4, -ENOENT);
	add_owner(3, 2 * C);
	m = get_ok(3, C, C);
	ck_assert_int_eq(get(2, 0, 1, NULL, NULL), -ENOENT);
	drop(3, 0);		/* with its entry held: dead */
	ck_assert_uint_eq(stats().regions, 1);
	put(m);
	ck_assert_uint_eq(stats().regions, 0);
	finish();
}
END_TEST

/* The caller bug: destroy with an entry in use and a waiter. */
START_TEST(destroy_in_use)
{
	const struct rcache_mr *m;
	struct tw w[1];

	mk(C, 1, 64 * C, 4, 10);
	add_owner(1, 64 * C);
	tw_init(w, 1);
	m = get_ok(1, 0, 1);
	ck_assert_int_eq(get(1, C, 1, &w[0], NULL), -EINPROGRESS);
	fk.h[m->handle].held = 0;	/* the test knowingly leaks it */
	ck_assert_uint_eq(rcache_destroy(rc), 1);
	rc = NULL;
	ck_assert_int_eq(w[0].calls, 1);
	ck_assert_int_eq(w[0].status, -ECANCELED);
	ck_assert_uint_eq(fk.live, 0);
	ck_assert_uint_eq(fk.dereg_calls, 1);
	ck_assert_uint_eq(fk.bad, 0);
	free(fk.h);
}
END_TEST

/* ---- randomized stress ---- */

#define S_CHUNK UINT64_C(4096)
#define S_OWNERS 4
#define S_HELD_MAX 64
#define S_HELD_SOFT 16		/* gets stop above this many held references */
#define S_WAITERS 8
#define S_OPS 100000
#define S_MAX_BYTES (12 * S_CHUNK)
#define S_MAX_WAIT 5.0

static const uint64_t s_arena[S_OWNERS + 1] = {
	0, 16 * S_CHUNK, 16 * S_CHUNK + 1000, 10 * S_CHUNK + 7, 20 * S_CHUNK,
};

struct s_ref {
	const struct rcache_mr *mr;
	uint64_t handle;
};

struct s_waiter {
	struct rcache_req req;
	bool pending;
	uint32_t owner;
	uint64_t off, len;
	double deadline;
	int status;		/* of the last callback */
};

static uint64_t s_rng;
static struct s_ref s_held[S_HELD_MAX];
static int s_nheld;
static uint64_t s_served, s_timedout, s_cancelled, s_failed;

static uint64_t rnd(void)
{
	/* xorshift64*: the same sequence on every libc. */
	s_rng ^= s_rng >> 12;
	s_rng ^= s_rng << 25;
	s_rng ^= s_rng >> 27;
	return s_rng * UINT64_C(0x2545F4914F6CDD1D);
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

static void s_push(const struct rcache_mr *mr)
{
	ck_assert_int_lt(s_nheld, S_HELD_MAX);
	s_held[s_nheld].mr = mr;
	s_held[s_nheld].handle = mr->handle;
	s_nheld++;
}

static void s_put(int i)
{
	ck_assert_uint_eq(s_held[i].mr->handle, s_held[i].handle);
	put(s_held[i].mr);
	s_held[i] = s_held[--s_nheld];
}

static bool s_backend_err(int r)
{
	return r == -EIO || r == -ENOMEM || r == -EAGAIN;
}

static void s_done(void *arg, int status, const struct rcache_mr *mr)
{
	struct s_waiter *w = arg;

	ck_assert(w->pending);		/* exactly one callback per wait */
	w->pending = false;
	w->status = status;
	if (status == 0) {
		ck_assert_ptr_nonnull(mr);
		ck_assert_uint_eq(mr->owner, w->owner);
		ck_assert_uint_le(mr->offset, w->off);
		ck_assert_uint_ge(mr->offset + mr->len, w->off + w->len);
		ck_assert(fk.h[mr->handle].live);
		fk.h[mr->handle].held++;
		s_push(mr);
		s_served++;
		return;
	}
	ck_assert_ptr_null(mr);
	if (status == -ETIMEDOUT)
		s_timedout++;
	else if (status == -ECANCELED)
		s_cancelled++;
	else if (s_backend_err(status))
		s_failed++;
	else
		ck_abort_msg("unexpected callback status %d", status);
}

static void s_get(const bool alive[], struct s_waiter sw[])
{
	uint32_t o = 1 + (uint32_t)rnd_below(S_OWNERS);
	uint64_t arena = s_arena[o], off, len, s, e, pad;
	uint64_t waiting_before = stats().waiting;
	bool armed = fk.fail_at > fk.reg_calls || fk.max_live;
	struct s_waiter *w = NULL;
	const struct rcache_mr *mr = NULL;
	uint64_t k = rnd_below(40);
	int r, want = 0;	/* 0: one of the outcomes of a valid request */

	/* Most requests go to a hot area, so that entries get hits. */
	off = rnd_below(3) ? rnd_below(4 * S_CHUNK) : rnd_below(arena + S_CHUNK);
	len = k == 0 ? 0 : k == 1 ? S_MAX_BYTES + 1 : 1 + rnd_below(3 * S_CHUNK);
	if (rnd_below(2)) {
		struct s_waiter *c = &sw[rnd_below(S_WAITERS)];

		if (!c->pending)
			w = c;
	}
	if (!alive[o]) {
		want = -ENOENT;
	} else if (len == 0 || off >= arena || len > arena - off) {
		want = -EINVAL;
	} else {
		s = off & ~(S_CHUNK - 1);
		pad = (S_CHUNK - ((off + len) & (S_CHUNK - 1))) & (S_CHUNK - 1);
		e = off + len + pad < arena ? off + len + pad : arena;
		if (e - s > S_MAX_BYTES)
			want = -E2BIG;
	}
	r = rcache_get(rc, o, off, len, now, w ? &w->req : NULL, &mr);
	if (want) {
		ck_assert_int_eq(r, want);
	} else if (r == 0) {
		ck_assert_ptr_nonnull(mr);
		ck_assert_uint_eq(mr->owner, o);
		ck_assert_uint_le(mr->offset, off);
		ck_assert_uint_ge(mr->offset + mr->len, off + len);
		ck_assert(fk.h[mr->handle].live);
		fk.h[mr->handle].held++;
		s_push(mr);
	} else if (r == -EINPROGRESS) {
		ck_assert_ptr_nonnull(w);
		ck_assert_uint_lt(waiting_before, 3);
		w->pending = true;
		w->owner = o;
		w->off = off;
		w->len = len;
		w->deadline = now + S_MAX_WAIT;
	} else if (r == -EBUSY) {
		ck_assert(!w || waiting_before == 3);
	} else {
		ck_assert_msg(armed && s_backend_err(r), "get returned %d", r);
	}
	INV();
}

START_TEST(stress)
{
	struct s_waiter sw[S_WAITERS];
	bool alive[S_OWNERS + 1] = { false };
	struct rcache_stats st;
	uint32_t o;
	int i, n, j;

	s_rng = UINT64_C(0x5eed5eed5eed5eed);
	s_nheld = 0;
	s_served = s_timedout = s_cancelled = s_failed = 0;
	mk(S_CHUNK, 6, S_MAX_BYTES, 3, S_MAX_WAIT);
	memset(sw, 0, sizeof(sw));
	for (i = 0; i < S_WAITERS; i++)
		rcache_req_init(&sw[i].req, s_done, &sw[i]);
	for (o = 1; o <= S_OWNERS; o++) {
		add_owner(o, s_arena[o]);
		alive[o] = true;
	}

	for (n = 0; n < S_OPS; n++) {
		uint64_t op = rnd_below(100);

		/* One stretch in four holds on to what it has, so that
		   waiters pile up and time out. */
		if ((n / 500) % 4 == 3 && op >= 45 && op < 80)
			op = 85;
		if (op < 45) {
			if (s_nheld < S_HELD_SOFT)
				s_get(alive, sw);
		} else if (op < 80) {
			if (s_nheld)
				s_put((int)rnd_below((uint64_t)s_nheld));
		} else if (op < 85) {
			size_t want = 0;

			now += 0.5 * (double)rnd_below(5);
			for (i = 0; i < S_WAITERS; i++)
				want += sw[i].pending && sw[i].deadline <= now;
			ck_assert_uint_eq(expire(now), want);
			for (i = 0; i < S_WAITERS; i++)
				ck_assert(!sw[i].pending || sw[i].deadline > now);
		} else if (op < 90) {
			now += 0.5;
		} else if (op < 93) {
			struct s_waiter *w = &sw[rnd_below(S_WAITERS)];
			bool was = w->pending;

			ck_assert_int_eq(rcache_cancel(rc, &w->req), was ? 0 : -ENOENT);
			w->pending = false;
			INV();
		} else if (op < 95) {
			bool mine[S_WAITERS];

			o = 1 + (uint32_t)rnd_below(S_OWNERS);
			if (!alive[o]) {
				add_owner(o, s_arena[o]);
				alive[o] = true;
				continue;
			}
			for (i = 0; i < S_WAITERS; i++)
				mine[i] = sw[i].pending && sw[i].owner == o;
			drop(o, 0);
			alive[o] = false;
			for (i = 0; i < S_WAITERS; i++)
				if (mine[i]) {
					ck_assert(!sw[i].pending);
					ck_assert_int_eq(sw[i].status, -ECANCELED);
				}
		} else if (op < 97) {
			static const int errs[] = { -EIO, -ENOMEM, -EAGAIN };

			fk.fail_at = fk.reg_calls + 1 + rnd_below(4);
			fk.fail_err = errs[rnd_below(3)];
		} else if (op < 98) {
			fk.max_live = rnd_below(4) ? 0 : 2 + rnd_below(5);
		} else {
			for (o = 1; o <= S_OWNERS; o++)
				if (!alive[o]) {
					add_owner(o, s_arena[o]);
					alive[o] = true;
				}
		}
		/* Every handle the test holds is still registered. */
		for (j = 0; j < s_nheld; j++)
			ck_assert(fk.h[s_held[j].handle].live);
	}

	st = stats();
	printf("rcache stress: hits %ju misses %ju evictions %ju waits %ju naks %ju "
	       "timeouts %ju cancels %ju reg_fails %ju regs %ju; callbacks: served %ju "
	       "timed out %ju cancelled %ju failed %ju\n",
	       (uintmax_t)st.hits, (uintmax_t)st.misses, (uintmax_t)st.evictions,
	       (uintmax_t)st.waits, (uintmax_t)st.naks, (uintmax_t)st.timeouts,
	       (uintmax_t)st.cancels, (uintmax_t)st.reg_fails, (uintmax_t)st.regs,
	       (uintmax_t)s_served, (uintmax_t)s_timedout, (uintmax_t)s_cancelled,
	       (uintmax_t)s_failed);

	/* Pinned for this seed (the PRNG is ours, so every platform agrees):
	   a change means the policy changed; check why, then update. */
	ck_assert_uint_eq(st.hits, 4987);
	ck_assert_uint_eq(st.misses, 26072);
	ck_assert_uint_eq(st.evictions, 13432);
	ck_assert_uint_eq(st.waits, 3585);
	ck_assert_uint_eq(st.naks, 7567);
	ck_assert_uint_eq(st.timeouts, 846);
	ck_assert_uint_eq(st.cancels, 464);
	ck_assert_uint_eq(st.reg_fails, 3137);
	ck_assert_uint_eq(st.regs, 15776);
	ck_assert_uint_eq(s_served, 2051);
	ck_assert_uint_eq(s_cancelled, 260);
	ck_assert_uint_eq(s_failed, 224);

	/* Release everything; waiters served on the way are released too. */
	fk.fail_at = 0;
	fk.max_live = 0;
	while (s_nheld)
		s_put(s_nheld - 1);
	st = stats();
	ck_assert_uint_eq(st.waiting, 0);
	for (i = 0; i < S_WAITERS; i++)
		ck_assert(!sw[i].pending);
	ck_assert_uint_eq(st.timeouts, s_timedout);
	ck_assert_uint_eq(st.waits, s_served + s_timedout + s_cancelled + s_failed +
			  (st.cancels - s_cancelled));
	finish();
}
END_TEST

static Suite *rcache_suite(void)
{
	Suite *s = suite_create("rcache");
	TCase *tc;

	tc = tcase_create("units");
	tcase_add_test(tc, hit_miss);
	tcase_add_test(tc, span_clip_and_invalid);
	tcase_add_test(tc, supersede_held);
	tcase_add_test(tc, lru_order);
	tcase_add_test(tc, refcount_pins);
	tcase_add_test(tc, limit_bytes);
	tcase_add_test(tc, full_waits);
	tcase_add_test(tc, expire_each_once);
	tcase_add_test(tc, put_from_callback);
	tcase_add_test(tc, cancel_waiter);
	tcase_add_test(tc, drop_owner);
	tcase_add_test(tc, backend_failure);
	tcase_add_test(tc, backend_failure_waiter);
	tcase_add_test(tc, disabled_cache);
	tcase_add_test(tc, create_and_owners);
	tcase_add_test(tc, destroy_in_use);
	suite_add_tcase(s, tc);

	tc = tcase_create("stress");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, stress);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rcache_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
