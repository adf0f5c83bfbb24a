/*
 * log.c - leveled logging to stderr; see log.h.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum log_level cur_level = LOG_LVL_INFO;

void log_set_level(enum log_level lvl)
{
	cur_level = lvl;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

int log_level_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "error") == 0)
		return LOG_LVL_ERR;
	if (strcmp(s, "warn") == 0)
		return LOG_LVL_WARN;
	if (strcmp(s, "info") == 0)
		return LOG_LVL_INFO;
	if (strcmp(s, "debug") == 0)
		return LOG_LVL_DEBUG;
	return -EINVAL;
}

const char *log_level_name(enum log_level lvl)
{
	switch (lvl) {
	case LOG_LVL_ERR:   return "error";
	case LOG_LVL_WARN:  return "warn";
	case LOG_LVL_INFO:  return "info";
	case LOG_LVL_DEBUG: return "debug";
	}
	return "unknown";
}

/*
 * One fprintf per output line: stdio locks per call, so a line is never
 * interleaved with another writer's, and the journal sees one record per
 * line, each with its own priority prefix.
 */
static void emit_line(enum log_level lvl, bool journal, const char *s, int len)
{
	if (journal)
		fprintf(stderr, "<%d>%.*s\n", (int)lvl, len, s);
	else
		fprintf(stderr, "sluiced: %s: %.*s\n", log_level_name(lvl), len, s);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char small[1024];
	char *buf = small;
	const char *p, *nl;
	bool journal;
	va_list ap, ap2;
	int saved_errno = errno;	/* callers log and then still use errno */
	int n;

	if (lvl > cur_level)
		return;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		va_end(ap2);
		errno = saved_errno;
		return;
	}
	if ((size_t)n >= sizeof(small)) {
		/* Rare long message; on allocation failure print it truncated. */
		char *big = malloc((size_t)n + 1);

		if (big) {
			vsnprintf(big, (size_t)n + 1, fmt, ap2);
			buf = big;
		} else {
			n = (int)sizeof(small) - 1;
		}
	}
	va_end(ap2);

	/* Trailing newlines would otherwise become empty lines. */
	while (n > 0 && buf[n - 1] == '\n')
		n--;

	journal = getenv("JOURNAL_STREAM") != NULL;
	for (p = buf;; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(buf + n - p));
		if (!nl) {
			emit_line(lvl, journal, p, (int)(buf + n - p));
			break;
		}
		emit_line(lvl, journal, p, (int)(nl - p));
	}

	if (buf != small)
		free(buf);
	errno = saved_errno;
}

bool log_limit_allow(struct log_limit *ll, enum log_level lvl)
{
	struct timespec ts;
	double now;

	if (lvl > cur_level)
		return false;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return true;	/* cannot happen; never lose a line for it */
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (!ll->primed) {
		ll->primed = true;
		ll->tokens = ll->burst;
		ll->last = now;
	}
	ll->tokens += (now - ll->last) * ll->per_sec;
	if (ll->tokens > ll->burst)
		ll->tokens = ll->burst;
	ll->last = now;
	if (ll->tokens < 1.0) {
		ll->suppressed++;
		return false;
	}
	ll->tokens -= 1.0;
	if (ll->suppressed) {
		log_msg(lvl, "%llu similar lines suppressed (%s)", ll->suppressed, ll->what);
		ll->suppressed = 0;
	}
	return true;
}
