/*
 * uid_quota.c - see uid_quota.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "log.h"
#include "rate_log.h"
#include "uid_quota.h"

#define UID_QUOTA_LOG_S 10.0	/* seconds between refusal lines */

static uint32_t half_of_queues(const struct config *c)
{
	return c->max_queues / 2 ? c->max_queues / 2 : 1;
}

uint32_t uid_limit_contexts(const struct config *c)
{
	return c->uid_max_contexts ? c->uid_max_contexts : half_of_queues(c);
}

uint32_t uid_limit_queues(const struct config *c)
{
	return c->uid_max_queues ? c->uid_max_queues : half_of_queues(c);
}

uint64_t uid_limit_arena(const struct config *c)
{
	return c->uid_max_arena_bytes ? c->uid_max_arena_bytes
				      : (uint64_t)uid_limit_queues(c) * c->arena_bytes;
}

uint32_t uid_limit_inflight(const struct config *c)
{
	uint64_t v = 4ull * c->client_max_inflight;

	if (c->uid_max_inflight)
		return c->uid_max_inflight;
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int uid_usage_attach(struct uid_usage_list *uids, const struct config *c, uid_t uid,
		     struct uid_usage **u_p)
{
	struct uid_usage *u;

	*u_p = NULL;
	LIST_FOREACH(u, uids, link)
		if (u->uid == uid)
			break;
	if (u && u->contexts >= uid_limit_contexts(c))
		return -EDQUOT;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->uid = uid;
		LIST_INSERT_HEAD(uids, u, link);
	}
	u->contexts++;
	*u_p = u;
	return 0;
}

void uid_usage_detach(struct uid_usage *u)
{
	if (!u || --u->contexts)
		return;
	LIST_REMOVE(u, link);
	free(u);
}

const char *uid_quota_queue(const struct config *c, const struct uid_usage *u,
			    uint64_t arena_bytes, uint64_t *limit)
{
	*limit = uid_limit_queues(c);
	if (u->queues >= *limit)
		return "uid_max_queues";
	*limit = uid_limit_arena(c);
	if (u->arena_bytes + arena_bytes > *limit)
		return "uid_max_arena_bytes";
	return NULL;
}

bool uid_quota_inflight_full(const struct config *c, const struct uid_usage *u)
{
	return u && u->in_flight >= uid_limit_inflight(c);
}

void uid_quota_log(pid_t pid, uid_t uid, const char *what, uint64_t limit)
{
	static struct rate_log rl;
	uint64_t n;

	if (rate_log_due(&rl, UID_QUOTA_LOG_S, &n))
		log_info("client pid %d uid %d: refused: [limits] %s = %llu reached for the "
			 "uid (%llu refusals since the last such line)", (int)pid, (int)uid, what,
			 (unsigned long long)limit, (unsigned long long)n);
}
