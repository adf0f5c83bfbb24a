/*
 * log.h - leveled logging to stderr (the journal under systemd).
 *
 * Lines carry a syslog priority prefix ("<3>") when stderr is the journal
 * (JOURNAL_STREAM set), else a level word.  The daemon logs once, where an
 * error is decided.  Not thread-safe beyond stdio's own locking; sluiced is
 * single-threaded.
 */
#ifndef SLD_LOG_H
#define SLD_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

/* Set the most verbose level that is printed. */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* Parse "error", "warn", "info", "debug"; returns the level or -EINVAL. */
int log_level_parse(const char *s);
const char *log_level_name(enum log_level lvl);

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A token bucket for lines that someone outside the daemon can trigger (a
 * connection to the listen port, a peer's bad frame): @burst lines at
 * once, then @per_sec a second; the lines over that are dropped, and the
 * next line let through is preceded by one "N similar lines suppressed
 * (WHAT)".  The idea is the kernel's printk_ratelimit and systemd's
 * journald RateLimitBurst.  One bucket per kind of line, usually static:
 *   static struct log_limit ll = LOG_LIMIT_INIT("strangers", 10, 1);
 *   log_limited(&ll, LOG_LVL_WARN, "tcp: %s: ...", name);
 * Single-threaded, as the rest of the log.
 */
struct log_limit {
	const char *what;	/* names the kind in the suppressed note */
	double burst;		/* lines, >= 1 */
	double per_sec;		/* lines a second, > 0 */
	double tokens;
	double last;		/* CLOCK_MONOTONIC seconds of the last refill */
	unsigned long long suppressed;	/* since the last line let through */
	bool primed;		/* tokens has been filled */
};
#define LOG_LIMIT_INIT(what_, burst_, per_sec_) \
	{ .what = (what_), .burst = (burst_), .per_sec = (per_sec_) }

/* May a line of @lvl go out now?  Takes a token if so (writing the
 * suppressed note first); a line above the current level costs nothing. */
bool log_limit_allow(struct log_limit *ll, enum log_level lvl);

#define log_limited(ll, lvl, ...) do { if (log_limit_allow((ll), (lvl))) \
		log_msg((lvl), __VA_ARGS__); } while (0)

#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_get_level() >= LOG_LVL_DEBUG) \
		log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
