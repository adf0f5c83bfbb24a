/*
 * openmetrics.h - sluicectl's metrics export: every number of the
 * daemon's admin replies (status, counters, rcache, links, queues, uids,
 * clients) in a text exposition format that monitoring systems read,
 * named by Prometheus' conventions (https://prometheus.io/docs/practices/
 * naming/): "sluice_<group>_<name>", snake_case, base units in the name
 * (_bytes, _seconds; milliseconds of the daemon are shown in seconds),
 * "_total" on counters, gauges without; per-link, per-queue, per-uid and
 * per-client values as labels ({peer="b"}, {queue="3",port="7",pid="123",
 * uid="1000"}), never in names.  Which field is a counter and which a
 * gauge (a value that can go down) is decided per field in openmetrics.c;
 * a field this sluicectl does not know (a newer daemon's) is still shown,
 * with TYPE unknown (untyped) and a HELP line saying so.  docs/metrics.md
 * lists the names.
 *
 * Two formats of the same families:
 *   METRICS_OPENMETRICS  OpenMetrics 1.0 text (application/openmetrics-
 *                        text; version=1.0.0): counter families named
 *                        without _total, "# UNIT" lines, the link state as
 *                        a stateset, info metrics, ends with "# EOF".
 *   METRICS_PROMETHEUS   the Prometheus text format 0.0.4, which
 *                        prometheus-node-exporter's textfile collector
 *                        reads (it reads an OpenMetrics counter as an
 *                        untyped metric: docs/metrics.md): counter
 *                        families named with _total, stateset and info
 *                        as gauges, no # UNIT, no # EOF.
 */
#ifndef SLUICE_TOOLS_OPENMETRICS_H
#define SLUICE_TOOLS_OPENMETRICS_H

#include <json-c/json.h>

enum metrics_format {
	METRICS_OPENMETRICS,
	METRICS_PROMETHEUS,
};

/*
 * How the export asks the daemon: send admin command @cmd ("status",
 * "links", ...) to the admin socket @path and store the parsed reply (a
 * JSON object without "error", the caller of the export puts it) in
 * *@reply.  Returns 0, or a positive status (sluicectl's exit status,
 * the reason already printed) when there is no reply.
 */
typedef int (*metrics_query_fn)(const char *path, const char *cmd,
				struct json_object **reply);

/*
 * metrics_export - ask the daemon at admin socket @path (through @query,
 * once per admin command) and write every metric in format @fmt to
 * stdout, or when @output is not NULL, replace the file @output with it
 * in one step (atomic_file.h: a reader sees the old file or the new one,
 * mode 0644).
 *
 * The document always carries sluice_up: 1 when every reply was read;
 * when a query fails (sluiced not running, access denied, a bad reply),
 * the document holds sluice_up 0 alone, so that a collector sees the
 * daemon down instead of the last values, and is still written.
 *
 * Returns 0; the failed query's positive status (its reason printed by
 * @query) after writing the sluice_up 0 document; or -errno when the
 * document could not be written (-ENOMEM building it, or the errors of
 * atomic_file_replace() and of writing stdout), said on stderr as
 * "sluicectl: OUTPUT: reason".  Not thread-safe (the query runs on the
 * caller's thread; the export keeps no state between calls).
 */
int metrics_export(const char *path, enum metrics_format fmt, const char *output,
		   metrics_query_fn query);

#endif
