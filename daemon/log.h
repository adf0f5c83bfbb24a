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

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

/* Set the most verbose level that is printed. */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* Parse "error", "warn", "info", "debug"; returns the level or -EINVAL. */
int log_level_parse(const char *s);
const char *log_level_name(enum log_level lvl);

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_get_level() >= LOG_LVL_DEBUG) \
		log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
