/*
 * match.c - tag matching for one endpoint; see match.h.
 */
#include "match.h"

void match_init(struct match_queues *mq, uint64_t *total_bytes)
{
	TAILQ_INIT(&mq->posted);
	TAILQ_INIT(&mq->unexpected);
	mq->n_posted = 0;
	mq->n_unexpected = 0;
	mq->unexpected_bytes = 0;
	mq->total_bytes = total_bytes;
	mq->next_post_seq = 0;
}

bool match_accepts(const struct match_recv *r, sl_addr_t src, uint64_t tag)
{
	if (r->desc.peer.node != SL_NODE_ANY && r->desc.peer.node != src.node)
		return false;
	if (r->desc.peer.port != SL_PORT_ANY && r->desc.peer.port != src.port)
		return false;
	return ((tag ^ r->desc.tag) & r->desc.tag_mask) == 0;
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
	mq->n_posted++;
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
	mq->n_posted++;
	return NULL;
}

struct match_recv *match_arrival(struct match_queues *mq, sl_addr_t src, uint64_t tag)
{
	struct match_recv *r;

	TAILQ_FOREACH(r, &mq->posted, link) {
		if (match_accepts(r, src, tag)) {
			TAILQ_REMOVE(&mq->posted, r, link);
			mq->n_posted--;
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

	if (r) {
		TAILQ_REMOVE(&mq->posted, r, link);
		mq->n_posted--;
	}
	return r;
}

void match_remove_recv(struct match_queues *mq, struct match_recv *r)
{
	TAILQ_REMOVE(&mq->posted, r, link);
	mq->n_posted--;
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
