/*
 * rate_log.c - see rate_log.h.
 */
#include "autoconfig.h"

#include "rate_log.h"

bool rate_log_due(struct rate_log *r, double period_s, uint64_t *events)
{
	struct timespec now;

	r->pending++;
	if (clock_gettime(CLOCK_MONOTONIC, &now) < 0)
		return false;
	if (r->said && (double)(now.tv_sec - r->last.tv_sec) +
			       (double)(now.tv_nsec - r->last.tv_nsec) / 1e9 < period_s)
		return false;
	*events = r->pending;
	r->pending = 0;
	r->last = now;
	r->said = true;
	return true;
}
