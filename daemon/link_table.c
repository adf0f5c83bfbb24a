/*
 * link_table.c - the links by peer node, and the set of links following
 * the configuration.  See link_table.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "link.h"
#include "link_impl.h"
#include "link_table.h"
#include "log.h"

#define LINK_INDEX_MIN 16	/* slots of the first index */

/* Fibonacci hashing: the top bits of the node id times 2^64 / phi
 * depend on all of its bits (node ids are hashes of names that often
 * differ in one character).  Slots are a power of two, at least 16. */
static size_t slot_of(const struct link_index *ix, uint32_t node_id)
{
	unsigned bits = (unsigned)__builtin_popcountll((unsigned long long)ix->mask);

	return (size_t)(((uint64_t)node_id * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

struct link *link_index_get(const struct link_index *ix, uint32_t node_id)
{
	size_t s;

	if (!ix->slot)
		return NULL;
	for (s = slot_of(ix, node_id); ix->slot[s].l; s = (s + 1) & ix->mask)
		if (ix->slot[s].node_id == node_id)
			return ix->slot[s].l;
	return NULL;
}

struct link *link_find(struct daemon *d, uint32_t node_id)
{
	return link_index_get(&d->links_by_node, node_id);
}

static void index_put(struct link_index *ix, uint32_t node_id, struct link *l)
{
	size_t s = slot_of(ix, node_id);

	while (ix->slot[s].l)
		s = (s + 1) & ix->mask;
	ix->slot[s].node_id = node_id;
	ix->slot[s].l = l;
	ix->used++;
}

/* Room in @ix for @n entries in all.  Returns 0 or -ENOMEM (@ix as before). */
static int index_reserve(struct link_index *ix, size_t n)
{
	struct link_index bigger = { 0 };
	size_t slots = ix->slot ? ix->mask + 1 : LINK_INDEX_MIN, s;

	if (ix->slot && 2 * n <= slots)
		return 0;
	while (2 * n > slots) {
		if (slots > SIZE_MAX / 2 / sizeof(*ix->slot))
			return -ENOMEM;
		slots *= 2;
	}
	bigger.slot = calloc(slots, sizeof(*bigger.slot));
	if (!bigger.slot)
		return -ENOMEM;
	bigger.mask = slots - 1;
	for (s = 0; ix->slot && s <= ix->mask; s++)
		if (ix->slot[s].l)
			index_put(&bigger, ix->slot[s].node_id, ix->slot[s].l);
	free(ix->slot);
	*ix = bigger;
	return 0;
}

int link_index_insert(struct link_index *ix, uint32_t node_id, struct link *l)
{
	if (index_reserve(ix, ix->used + 1) < 0)
		return -ENOMEM;
	index_put(ix, node_id, l);
	return 0;
}

/* Linear probing's deletion: the entries after the hole that it would
 * hide from their home slot move back into it. */
bool link_index_remove(struct link_index *ix, uint32_t node_id)
{
	size_t hole, s, home;

	if (!ix->slot)
		return false;
	for (hole = slot_of(ix, node_id); ix->slot[hole].node_id != node_id ||
					  !ix->slot[hole].l; hole = (hole + 1) & ix->mask)
		if (!ix->slot[hole].l)
			return false;
	ix->slot[hole].l = NULL;
	ix->used--;
	for (s = (hole + 1) & ix->mask; ix->slot[s].l; s = (s + 1) & ix->mask) {
		home = slot_of(ix, ix->slot[s].node_id);
		/* It stays unless its home lies cyclically in (hole, s]. */
		if (((s - home) & ix->mask) >= ((s - hole) & ix->mask)) {
			ix->slot[hole] = ix->slot[s];
			ix->slot[s].l = NULL;
			hole = s;
		}
	}
	return true;
}

void link_index_free(struct link_index *ix)
{
	free(ix->slot);
	memset(ix, 0, sizeof(*ix));
}

int link_table_reserve(struct daemon *d, size_t n)
{
	struct link **v;

	if (n > d->links_cap) {
		if (n > SIZE_MAX / sizeof(*v))
			return -ENOMEM;
		v = realloc(d->links, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		d->links = v;
		d->links_cap = n;
	}
	return index_reserve(&d->links_by_node, n);
}

int link_table_add(struct daemon *d, struct link *l)
{
	struct link **v;
	size_t cap;

	if (link_find(d, l->node_id))
		return -EEXIST;
	if (d->n_links == d->links_cap) {
		cap = d->links_cap ? 2 * d->links_cap : 16;
		if (cap > SIZE_MAX / sizeof(*v))
			return -ENOMEM;
		v = realloc(d->links, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		d->links = v;
		d->links_cap = cap;
	}
	if (link_index_insert(&d->links_by_node, l->node_id, l) < 0)
		return -ENOMEM;
	d->links[d->n_links++] = l;
	return 0;
}

void link_table_remove(struct daemon *d, struct link *l)
{
	size_t i;

	if (link_find(d, l->node_id) != l)
		return;
	if (l->resolved) {
		l->resolved = false;
		d->n_resolved_peers--;
	}
	link_index_remove(&d->links_by_node, l->node_id);
	for (i = 0; i < d->n_links; i++) {
		if (d->links[i] == l) {
			memmove(&d->links[i], &d->links[i + 1],
				(d->n_links - i - 1) * sizeof(*d->links));
			d->n_links--;
			return;
		}
	}
}

void link_table_free(struct daemon *d)
{
	free(d->links);
	d->links = NULL;
	d->n_links = d->links_cap = 0;
	link_index_free(&d->links_by_node);
}

int link_add_resolved(struct daemon *d, const struct peer_conf *pc,
		      const struct addrinfo *res)
{
	struct link *l;
	int rc = link_add(d, pc);

	if (rc < 0)
		return rc;
	l = link_find(d, pc->node_id);
	l->resolved = true;
	d->n_resolved_peers++;
	/* Not fatal: the handshake looks the numeric host up itself. */
	(void)link_auth_link_addrs(l, res);
	return 0;
}

/*
 * Three passes: mark the links whose peer is still listed (readdressing
 * those that moved), remove the unmarked ones, then add the peers
 * without a link.  Removing before adding lets a new peer take the node
 * id of a removed one (another name with the same hash).
 */
void link_table_sync(struct daemon *d, struct link_sync_counts *out)
{
	struct link_sync_counts n = { 0 };
	const struct peer_conf *pc;
	struct link *l;
	size_t i;
	int rc;

	/* Not fatal: link_add() grows what it needs. */
	(void)link_table_reserve(d, d->cfg.n_peers > d->n_links ? d->cfg.n_peers : d->n_links);
	/* Resolved peers stay unless the list names their node otherwise. */
	for (i = 0; i < d->n_links; i++)
		d->links[i]->listed = d->links[i]->resolved;
	for (i = 0; i < d->cfg.n_peers; i++) {
		pc = &d->cfg.peers[i];
		l = link_find(d, pc->node_id);
		if (!l)
			continue;
		if (strcmp(l->peer->name, pc->name) != 0) {
			l->listed = false;	/* its node id is another name's now */
			continue;
		}
		l->listed = true;
		if (l->resolved) {
			l->resolved = false;	/* configured from now on */
			d->n_resolved_peers--;
		}
		if (strcmp(l->peer->host, pc->host) != 0 || l->peer->port != pc->port) {
			link_readdress(l, pc);
			n.readdressed++;
		}
	}
	/* Backwards: a removal moves only the links after it, seen already. */
	for (i = d->n_links; i-- > 0;) {
		if (!d->links[i]->listed) {
			link_remove(d->links[i]);
			n.removed++;
		}
	}
	for (i = 0; i < d->cfg.n_peers; i++) {
		pc = &d->cfg.peers[i];
		if (link_find(d, pc->node_id))
			continue;
		rc = link_add(d, pc);
		if (rc < 0) {
			log_err("link %s: cannot make it: %s; it has no link until the next reload",
				pc->name, strerror(-rc));
			n.failed++;
		} else {
			n.added++;
		}
	}
	if (out)
		*out = n;
}
