/*
 * service.h - sluiced as a systemd service: sd_notify (READY=1, STATUS=,
 * RELOADING=1, STOPPING=1, WATCHDOG=1), SIGHUP reload and the graceful
 * stop (drain) on SIGTERM/SIGINT.
 *
 * Without NOTIFY_SOCKET in the environment nothing is sent, no timer runs
 * and no status is computed: the notification half costs nothing.
 * Reload and drain work the same either way.
 *
 * The drain.  On the first SIGTERM or SIGINT the daemon stops accepting:
 * the control socket is closed (new clients are refused), and every SQE
 * taken from a ring from then on completes at once with SL_ERR_CANCELED
 * (queue_drain()).  Operations already under way may finish for up to
 * [daemon] shutdown_drain_ms: sends queued, unacknowledged or in
 * rendezvous on links, local rendezvous waiting for a receive, receives
 * matched to a rendezvous still receiving data.  Plain posted receives
 * do not hold the drain: only a message could complete them.  When none
 * is left, or at the deadline, or on a second signal, the loop ends and
 * daemon_teardown() completes whatever remains with SL_ERR_CANCELED.
 */
#ifndef SLD_SERVICE_H
#define SLD_SERVICE_H

#include <stdint.h>

struct daemon;
struct config;

/*
 * service_apply_fn - apply the command-line options to @c (a config just
 * read from the file), as at start, so that options keep winning over
 * the file on reload.  Returns 0 or -EINVAL (message on stderr).
 */
typedef int service_apply_fn(struct daemon *d, struct config *c);

/*
 * service_init - make the service's state (d->svc, private to service.c),
 * install the SIGTERM, SIGINT (drain) and SIGHUP (reload) handlers; with
 * NOTIFY_SOCKET set, start the STATUS= refresh and, when
 * sd_watchdog_enabled() says so, the WATCHDOG=1 timer at an eighth of
 * the interval, from the loop: a gap over half the interval means the
 * loop was held that long (loop_watch_watchdog_ping(),
 * loop.watchdog_gap_max_ms).  @apply: see service_apply_fn (may be
 * NULL).  Call once the loop exists, before service_ready().  Returns 0,
 * -ENOMEM (nothing installed, logged) or -errno from
 * sd_watchdog_enabled() (a malformed WATCHDOG_USEC, logged); either way
 * service_destroy() frees what was made.
 */
int service_init(struct daemon *d, service_apply_fn *apply);

/* Every listener is up: READY=1 with the first STATUS=. */
void service_ready(struct daemon *d);

/* The loop has ended: stop the service's timers before the teardown.
 * The state and the signal handlers stay: the teardown runs the loop
 * again (the links' BYE).  Accepts a daemon whose service_init() did not
 * run. */
void service_stop(struct daemon *d);

/* After the teardown, when the loop runs no more: free d->svc (NULL
 * after).  Accepts a daemon whose service_init() did not run. */
void service_destroy(struct daemon *d);

/*
 * service_reload - what SIGHUP does: read the -c file into a fresh
 * config, reapply the command-line options, read [daemon] peers_file
 * (config_finish()), apply the reloadable keys and the peers
 * (config_reload_merge()), make the links match the peers
 * (link_table_sync(): links to new peers, none to peers gone, the others
 * untouched) and log every change ("reload: [peers] NAME: OLD -> NEW",
 * "reload: [section] key changed: needs a restart" for the keys that
 * keep their value).  A file (or peers file) that does not load is
 * logged with FILE:LINE and changes nothing.  Returns 0, or -errno when
 * nothing was applied (already logged).
 */
int service_reload(struct daemon *d);

/*
 * service_in_flight - operations that hold the drain: descriptors of live
 * queues accepted and not completed, less their plain posted receives.
 */
uint64_t service_in_flight(const struct daemon *d);

#endif
