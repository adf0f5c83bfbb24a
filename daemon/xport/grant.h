/*
 * grant.h - rendezvous grants: which (address, length) a peer may write,
 * per connection (docs/rendezvous-grants.md).
 *
 * A registration (reg_mr) makes memory reachable by the transport; it is
 * coarse (the registration cache registers whole chunks, 2 MiB by
 * default, and keeps them after the rendezvous).  A grant narrows remote
 * write access to exactly the range one RTR names, on one connection, for
 * the life of one rendezvous: the idea of an InfiniBand type-2 memory
 * window bound to a QP (IBTA vol. 1, 10.6.7) and of a per-operation
 * window in Portals 4 (PTL_ME_USE_ONCE).  The tcp transport checks every
 * incoming write against this table before it places a byte; the verbs
 * transport keeps the keys of its memory windows here.
 *
 * Keys: generation << GRANT_IDX_BITS | (slot + 1), never 0; a revoked key
 * does not name a live grant again until the generation wraps (2^17
 * grants on the connection later).  The last GRANT_REVOKED_MEMORY revoked
 * keys are remembered so that a late write is told apart from a key that
 * was never granted (for the counters and the log).
 *
 * Not thread-safe: the daemon's loop thread only.
 */
#ifndef SLD_XPORT_GRANT_H
#define SLD_XPORT_GRANT_H

#include <stdbool.h>
#include <stdint.h>

#define GRANT_IDX_BITS 15
#define GRANT_TABLE_MAX 16384		/* live grants per connection */
#define GRANT_REVOKED_MEMORY 64
/* Log lines about refused writes, per transport and second (a peer, even
 * one with the key, refuses as many as it likes: tests/test_netfuzz.c). */
#define GRANT_LOG_PER_SEC 1

struct xport_grant {
	uint64_t addr;		/* first byte the peer may write */
	uint64_t len;		/* bytes, > 0 */
	uint64_t cookie;	/* the transport's (tcp: the MR key; verbs: its MW/MR) */
	uint32_t key;		/* 0: slot free */
	uint32_t next_free;	/* slot + 1 of the next free one, 0 = none */
};

struct grant_table {
	struct xport_grant *slots;
	uint32_t cap;		/* slots allocated */
	uint32_t used;		/* slots ever used (grow order) */
	uint32_t free_head;	/* slot + 1, 0 = none */
	uint32_t gen;
	uint32_t live;
	uint32_t revoked[GRANT_REVOKED_MEMORY];
	uint32_t revoked_next;
};

/* Why a write was refused; GRANT_OK when it lies inside its grant. */
enum grant_verdict { GRANT_OK, GRANT_BELOW, GRANT_ABOVE, GRANT_REVOKED, GRANT_UNKNOWN };

/* An empty table (no allocation until the first grant). */
void grant_table_init(struct grant_table *t);
/* Free the table's memory; every grant in it dies. */
void grant_table_free(struct grant_table *t);

/*
 * grant_add - a grant of [@addr, @addr + @len) with the transport's
 * @cookie.  Returns 0 with *key set; -EINVAL when @len is 0 or the range
 * wraps; -ENOMEM when GRANT_TABLE_MAX grants are live or memory is short
 * (the caller retries when one is revoked).
 */
int grant_add(struct grant_table *t, uint64_t addr, uint64_t len, uint64_t cookie,
	      uint32_t *key);

/* The live grant @key names, or NULL. */
const struct xport_grant *grant_find(const struct grant_table *t, uint32_t key);

/* End grant @key and remember it as revoked.  Returns false (and does
 * nothing) when @key names no live grant. */
bool grant_remove(struct grant_table *t, uint32_t key);

/*
 * grant_check - may a write of @len bytes (> 0) at @addr with @key land?
 * GRANT_OK (and *g set, when @g is not NULL), else why not: GRANT_BELOW
 * (starts before the grant), GRANT_ABOVE (ends after it), GRANT_REVOKED
 * (the key was granted, and revoked since), GRANT_UNKNOWN.  Overflow-safe.
 */
enum grant_verdict grant_check(const struct grant_table *t, uint32_t key, uint64_t addr,
			       uint64_t len, const struct xport_grant **g);

/* "below the grant", "above the grant", "revoked grant", "unknown key". */
const char *grant_verdict_name(enum grant_verdict v);

/*
 * A rate limit for the log lines of refused writes, which a peer can
 * trigger at will: GRANT_LOG_PER_SEC lines a second, the rest counted
 * and reported with the next line printed.
 * grant_log_allow - may a line be printed at @now (seconds)?  When it
 * may, *suppressed is the number of lines dropped since the last one.
 */
struct grant_log_limit {
	double window;		/* start of the current second */
	uint32_t lines;		/* printed in it */
	uint64_t suppressed;
};

bool grant_log_allow(struct grant_log_limit *rl, double now, uint64_t *suppressed);

#endif
