/*
 * grant.c - the per-connection table of rendezvous grants (grant.h).
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xport/grant.h"

#define GRANT_IDX_MASK ((1u << GRANT_IDX_BITS) - 1)
#define GRANT_GEN_MASK ((1u << (32 - GRANT_IDX_BITS)) - 1)
#define GRANT_INITIAL 64

_Static_assert(GRANT_TABLE_MAX < (1u << GRANT_IDX_BITS), "slot + 1 must fit the key");

void grant_table_init(struct grant_table *t)
{
	memset(t, 0, sizeof(*t));
}

void grant_table_free(struct grant_table *t)
{
	free(t->slots);
	grant_table_init(t);
}

/* One more slot: a free one, or the next never used (growing the array). */
static int slot_take(struct grant_table *t, uint32_t *idx)
{
	if (t->free_head) {
		*idx = t->free_head - 1;
		t->free_head = t->slots[*idx].next_free;
		return 0;
	}
	if (t->used == GRANT_TABLE_MAX)
		return -ENOMEM;
	if (t->used == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : GRANT_INITIAL;
		struct xport_grant *s;

		if (cap > GRANT_TABLE_MAX)
			cap = GRANT_TABLE_MAX;
		s = realloc(t->slots, (size_t)cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->slots = s;
		t->cap = cap;
	}
	*idx = t->used++;
	return 0;
}

int grant_add(struct grant_table *t, uint64_t addr, uint64_t len, uint64_t cookie,
	      uint32_t *key)
{
	struct xport_grant *g;
	uint32_t idx;
	int rc;

	if (len == 0 || addr + len < addr)
		return -EINVAL;
	rc = slot_take(t, &idx);
	if (rc)
		return rc;
	t->gen = (t->gen + 1) & GRANT_GEN_MASK;
	g = &t->slots[idx];
	g->addr = addr;
	g->len = len;
	g->cookie = cookie;
	g->key = (t->gen << GRANT_IDX_BITS) | (idx + 1);
	g->next_free = 0;
	t->live++;
	*key = g->key;
	return 0;
}

const struct xport_grant *grant_find(const struct grant_table *t, uint32_t key)
{
	uint32_t idx = key & GRANT_IDX_MASK;

	if (idx == 0 || idx > t->used || t->slots[idx - 1].key != key)
		return NULL;
	return &t->slots[idx - 1];
}

bool grant_remove(struct grant_table *t, uint32_t key)
{
	struct xport_grant *g = (struct xport_grant *)grant_find(t, key);
	uint32_t idx = key & GRANT_IDX_MASK;

	if (!g)
		return false;
	memset(g, 0, sizeof(*g));
	g->next_free = t->free_head;
	t->free_head = idx;
	t->live--;
	t->revoked[t->revoked_next++ % GRANT_REVOKED_MEMORY] = key;
	return true;
}

enum grant_verdict grant_check(const struct grant_table *t, uint32_t key, uint64_t addr,
			       uint64_t len, const struct xport_grant **gp)
{
	const struct xport_grant *g = grant_find(t, key);
	uint32_t i;

	if (!g) {
		for (i = 0; i < GRANT_REVOKED_MEMORY; i++)
			if (key && t->revoked[i] == key)
				return GRANT_REVOKED;
		return GRANT_UNKNOWN;
	}
	if (addr < g->addr)
		return GRANT_BELOW;
	if (addr - g->addr > g->len || len > g->len - (addr - g->addr))
		return GRANT_ABOVE;
	if (gp)
		*gp = g;
	return GRANT_OK;
}

const char *grant_verdict_name(enum grant_verdict v)
{
	switch (v) {
	case GRANT_OK: return "inside the grant";
	case GRANT_BELOW: return "below the grant";
	case GRANT_ABOVE: return "above the grant";
	case GRANT_REVOKED: return "revoked grant";
	case GRANT_UNKNOWN: return "unknown key";
	}
	return "?";
}

bool grant_log_allow(struct grant_log_limit *rl, double now, uint64_t *suppressed)
{
	if (now - rl->window >= 1.0) {
		rl->window = now;
		rl->lines = 0;
	}
	if (rl->lines >= GRANT_LOG_PER_SEC) {
		rl->suppressed++;
		return false;
	}
	rl->lines++;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}
