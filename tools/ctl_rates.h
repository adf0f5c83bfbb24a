/*
 * ctl_rates.h - per-second rates for sluicectl --watch: the difference of
 * two admin replies to the same command, divided by the real time between
 * them (CLOCK_MONOTONIC in sluicectl, when each reply was read), as
 * ss -i and ibstat-style tools show them.
 *
 * Rated commands and counters (admin.c names them):
 *   links    per element, keyed by "peer": msgs_tx, bytes_tx, msgs_rx,
 *            bytes_rx, naks_tx, naks_rx
 *   queues   per element, keyed by "id": msgs_tx, bytes_tx, msgs_rx,
 *            bytes_rx, naks
 * Each rated element of the newer reply gets "rates": {"KEY_per_s":
 * number, ...}.  An element new since the older reply, or one whose
 * counters went down (the daemon restarted), gets none: there is nothing
 * honest to compare it with.
 *
 * Not thread-safe (json-c objects); sluicectl is single-threaded.
 */
#ifndef SLUICE_TOOLS_CTL_RATES_H
#define SLUICE_TOOLS_CTL_RATES_H

#include <stdbool.h>
#include <json-c/json.h>

/* Does @cmd have rates (links, queues)? */
bool ctl_rates_known(const char *cmd);

/* The rated counter names of @cmd, NULL-terminated; NULL when it has none. */
const char *const *ctl_rates_keys(const char *cmd);

/*
 * Add "rates" to the elements of @cur (a reply to @cmd) that @prev (the
 * reply before, @interval_s seconds earlier, > 0) has too.  Returns 0, or
 * -ENOMEM when json-c ran out (some elements may lack their rates then).
 */
int ctl_rates_add(const char *cmd, struct json_object *prev, struct json_object *cur,
		  double interval_s);

#endif
