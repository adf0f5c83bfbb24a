/*
 * rate_log.h - a log line that outsiders can trigger, at most once per
 * period: the first event of an episode is said at once, later ones are
 * counted and said with the next line due.
 */
#ifndef SLD_RATE_LOG_H
#define SLD_RATE_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct rate_log {
	struct timespec last;	/* CLOCK_MONOTONIC of the last line */
	uint64_t pending;	/* events since the last line, this one included */
	bool said;		/* a line was ever written */
};

/*
 * rate_log_due - count one event; true when a line is due now (nothing
 * said for @period_s seconds).  Then *@events is the number of events the
 * line speaks for (this one included), and the count starts again.
 */
bool rate_log_due(struct rate_log *r, double period_s, uint64_t *events);

#endif
