/*
 * match.c - tag matching for one endpoint; see match.h.
 */
#include "match.h"

void match_init(struct match_queues *mq, uint64_t *total_bytes, match_named_fn *named)
{
	mq->named = named;
	TAILQ_INIT(&mq->posted);
	TAILQ_INIT(&mq->unexpected);
	mq->n_posted = 0;
	mq->n_unexpected = 0;
	mq->unexpected_bytes = 0;
	mq->total_bytes = total_bytes;
	mq->next_post_seq = 0;
	TAILQ_INIT(&mq->claimed);
	mq->n_claimed = 0;
	mq->last_claim_id = 0;
}

bool match_filter_accepts(const struct desc *f, sl_addr_t src, uint64_t tag)
{
	if (f->peer.node != SL_NODE_ANY && f->peer.node != src.node)
		return false;
	if (f->peer.port != SL_PORT_ANY && f->peer.port != src.port)
		return false;
	return ((tag ^ f->tag) & f->tag_mask) == 0;
}

bool match_accepts(const struct match_recv *r, sl_addr_t src, uint64_t tag)
{
	return match_filter_accepts(&r->desc, src, tag);
}

/* @r joins or leaves the posted list: the one place each happens, so
 * that the count of receives naming a node is told every change. */
static void posted_counted(struct match_queues *mq, const struct match_recv *r, int delta)
{
	if (delta > 0)
		mq->n_posted++;
	else
		mq->n_posted--;
	if (mq->named && r->desc.peer.node != SL_NODE_ANY)
		mq->named(mq, r->desc.peer.node, delta);
}

static void posted_unlink(struct match_queues *mq, struct match_recv *r)
{
	TAILQ_REMOVE(&mq->posted, r, link);
	posted_counted(mq, r, -1);
}

/* @m's charge counts at @mq, and in the total @mq shares, or no more. */
static void charge_add(struct match_queues *mq, const struct match_msg *m)
{
	mq->unexpected_bytes += m->charge;
	if (mq->total_bytes)
		*mq->total_bytes += m->charge;
}

static void charge_remove(struct match_queues *mq, const struct match_msg *m)
{
	mq->unexpected_bytes -= m->charge;
	if (mq->total_bytes)
		*mq->total_bytes -= m->charge;
}

void match_remove_unexpected(struct match_queues *mq, struct match_msg *m)
{
	TAILQ_REMOVE(&mq->unexpected, m, link);
	mq->n_unexpected--;
	charge_remove(mq, m);
}

static struct match_msg *take_unexpected(struct match_queues *mq, const struct match_recv *r)
{
	struct match_msg *m;

	TAILQ_FOREACH(m, &mq->unexpected, link) {
		if (match_accepts(r, m->src, m->tag)) {
			match_remove_unexpected(mq, m);
			return m;
		}
	}
	return NULL;
}

struct match_msg *match_post_recv(struct match_queues *mq, struct match_recv *r)
{
	struct match_msg *m;

	r->post_seq = mq->next_post_seq++;
	m = take_unexpected(mq, r);
	if (m)
		return m;
	TAILQ_INSERT_TAIL(&mq->posted, r, link);
	posted_counted(mq, r, 1);
	return NULL;
}

struct match_msg *match_repost(struct match_queues *mq, struct match_recv *r)
{
	struct match_msg *m = take_unexpected(mq, r);
	struct match_recv *it;

	if (m)
		return m;
	/* From the tail: a reposted receive is usually among the oldest,
	 * but new ones are appended there. */
	TAILQ_FOREACH_REVERSE(it, &mq->posted, match_recv_list, link)
		if (it->post_seq < r->post_seq)
			break;
	if (it)
		TAILQ_INSERT_AFTER(&mq->posted, it, r, link);
	else
		TAILQ_INSERT_HEAD(&mq->posted, r, link);
	posted_counted(mq, r, 1);
	return NULL;
}

struct match_recv *match_arrival(struct match_queues *mq, sl_addr_t src, uint64_t tag)
{
	struct match_recv *r;

	TAILQ_FOREACH(r, &mq->posted, link) {
		if (match_accepts(r, src, tag)) {
			posted_unlink(mq, r);
			return r;
		}
	}
	return NULL;
}

void match_add_unexpected(struct match_queues *mq, struct match_msg *m)
{
	TAILQ_INSERT_TAIL(&mq->unexpected, m, link);
	mq->n_unexpected++;
	charge_add(mq, m);
}

struct match_recv *match_pop_recv(struct match_queues *mq)
{
	struct match_recv *r = TAILQ_FIRST(&mq->posted);

	if (r)
		posted_unlink(mq, r);
	return r;
}

void match_remove_recv(struct match_queues *mq, struct match_recv *r)
{
	posted_unlink(mq, r);
}

struct match_msg *match_pop_unexpected(struct match_queues *mq)
{
	struct match_msg *m = TAILQ_FIRST(&mq->unexpected);

	if (m) {
		TAILQ_REMOVE(&mq->unexpected, m, link);
		mq->n_unexpected--;
		charge_remove(mq, m);
	}
	return m;
}

struct match_msg *match_probe(const struct match_queues *mq, const struct desc *filter)
{
	struct match_msg *m;

	TAILQ_FOREACH(m, &mq->unexpected, link)
		if (match_filter_accepts(filter, m->src, m->tag))
			return m;
	return NULL;
}

uint64_t match_next_seq(struct match_queues *mq)
{
	return mq->next_post_seq++;
}

uint64_t match_claim(struct match_queues *mq, struct match_msg *m, struct match_claim *c)
{
	TAILQ_REMOVE(&mq->unexpected, m, link);
	mq->n_unexpected--;
	/* 2^64 claims on one queue do not happen; 0 is never an id. */
	if (++mq->last_claim_id == 0)
		mq->last_claim_id = 1;
	c->id = mq->last_claim_id;
	c->m = m;
	c->status = 0;
	TAILQ_INSERT_TAIL(&mq->claimed, c, link);
	mq->n_claimed++;
	return c->id;
}

struct match_claim *match_find_claim(const struct match_queues *mq, uint64_t id)
{
	struct match_claim *c;

	if (id == 0)
		return NULL;
	TAILQ_FOREACH(c, &mq->claimed, link)
		if (c->id == id)
			return c;
	return NULL;
}

void match_unclaim(struct match_queues *mq, struct match_claim *c)
{
	TAILQ_REMOVE(&mq->claimed, c, link);
	mq->n_claimed--;
	charge_remove(mq, c->m);
}

struct match_claim *match_pop_claim(struct match_queues *mq)
{
	struct match_claim *c = TAILQ_FIRST(&mq->claimed);

	if (c)
		match_unclaim(mq, c);
	return c;
}

struct match_recv *match_find_recv(const struct match_queues *mq, uint64_t user_ctx)
{
	struct match_recv *r;

	TAILQ_FOREACH(r, &mq->posted, link)
		if (r->desc.user_ctx == user_ctx)
			return r;
	return NULL;
}
