/*
 * uid_quota.h - what all the clients of one uid hold together, and the
 * bounds on it.
 *
 * The per-client quotas ([limits] client_max_*) bound one control
 * connection; a user who opens more connections would get more.  These
 * bound a uid (from SO_PEERCRED at accept), over all its connections:
 * contexts, queues, arena bytes and descriptors in flight.
 *
 * The rule, so that one uid cannot take everything: no uid holds more
 * than half of the daemon's queues (max_queues), by default; the other
 * half is always there for the rest.  It is a fixed share, not a fair
 * queue: simple to explain and to check, at the cost of leaving the
 * daemon half empty when a single user wants it all (raise
 * uid_max_queues then).  Every key, and root, follows the same rule:
 *   uid_max_contexts  0: max_queues / 2 (at least 1)
 *   uid_max_queues    0: max_queues / 2 (at least 1)
 *   uid_max_arena_bytes 0: uid_max_queues x arena_bytes (no tighter than
 *                     the queue count)
 *   uid_max_inflight  0: 4 x client_max_inflight
 * Past a bound: sl_open() and sl_queue_open() fail -EDQUOT (logged with
 * the reason, rate-limited), descriptors wait in the SQ (as with
 * client_max_inflight).
 */
#ifndef SLD_UID_QUOTA_H
#define SLD_UID_QUOTA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct config;

struct uid_usage {
	LIST_ENTRY(uid_usage) link;
	uid_t uid;
	uint32_t contexts;	/* sessions of this uid */
	uint32_t queues;
	uint64_t arena_bytes;
	uint32_t in_flight;	/* descriptors accepted, not completed */
};

LIST_HEAD(uid_usage_list, uid_usage);

/* The bounds in force (the derived defaults applied). */
uint32_t uid_limit_contexts(const struct config *c);
uint32_t uid_limit_queues(const struct config *c);
uint64_t uid_limit_arena(const struct config *c);
uint32_t uid_limit_inflight(const struct config *c);

/*
 * uid_usage_attach - a new session of @uid: its entry in @uids (made on
 * first use) with contexts counted, under @c's bounds.  Returns 0,
 * -EDQUOT (the uid holds uid_max_contexts: nothing counted, *@u_p NULL)
 * or -ENOMEM.
 */
int uid_usage_attach(struct uid_usage_list *uids, const struct config *c, uid_t uid,
		     struct uid_usage **u_p);

/* uid_usage_detach - the session went (its queues already uncounted);
 * frees the entry, out of its list, with its last context.  Accepts
 * NULL. */
void uid_usage_detach(struct uid_usage *u);

/*
 * uid_quota_queue - may @u open one more queue of @arena_bytes under @c's
 * bounds?  Returns NULL, or the name of the key that says no
 * ("uid_max_queues", "uid_max_arena_bytes") with its value in force in
 * *@limit.
 */
const char *uid_quota_queue(const struct config *c, const struct uid_usage *u,
			    uint64_t arena_bytes, uint64_t *limit);

/* Has @u as many descriptors in flight as @c lets it?  (NULL: no.) */
bool uid_quota_inflight_full(const struct config *c, const struct uid_usage *u);

/* Log a refusal for @uid (pid @pid) because of @what, rate-limited. */
void uid_quota_log(pid_t pid, uid_t uid, const char *what, uint64_t limit);

#endif
