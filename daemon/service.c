/*
 * service.c - systemd notification, SIGHUP reload and the SIGTERM drain;
 * see service.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>

#include "admin.h"
#include "daemon.h"
#include "link.h"
#include "link_auth.h"
#include "log.h"
#include "loop_watch.h"
#include "queue.h"
#include "service.h"
#include "session.h"

#define STATUS_PERIOD_S 1.0	/* STATUS= at most this often */
#define DRAIN_CHECK_S 0.01	/* how often the drain looks at what is left */

/* d->svc, from service_init() to service_destroy(). */
struct service {
	bool notify;			/* NOTIFY_SOCKET set: talk to systemd */
	ev_timer watchdog_w;		/* WATCHDOG=1 at an eighth of WATCHDOG_USEC */
	ev_timer status_w;		/* STATUS= refresh, at most once a second */
	ev_timer drain_w;		/* drain progress checks */
	ev_tstamp drain_started;	/* ev_now() at the first stop signal */
	ev_tstamp drain_deadline;
	service_apply_fn *apply_options;	/* NULL: none to reapply */
	char status[160];		/* last STATUS= sent */
};

static void notify(struct daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* sd_notify() a message built from @fmt; nothing at all without
 * NOTIFY_SOCKET.  A failure is logged once: systemd may have gone. */
static void notify(struct daemon *d, const char *fmt, ...)
{
	static bool warned;
	char buf[256];
	va_list ap;
	int rc;

	if (!d->svc || !d->svc->notify)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	rc = sd_notify(0, buf);
	if (rc < 0 && !warned) {
		warned = true;
		log_warn("sd_notify: %s", strerror(-rc));
	}
}

uint64_t service_in_flight(const struct daemon *d)
{
	const struct queue *q;
	uint64_t n = 0;

	/* A posted receive is in flight too, but only a message ends it. */
	TAILQ_FOREACH(q, &d->queues, all)
		n += q->in_flight - q->mq.n_posted;
	return n;
}

static void status_text(const struct daemon *d, char *buf, size_t n)
{
	unsigned clients = session_count(d), up = link_count_up(d);

	if (d->draining)
		snprintf(buf, n, "stopping: %llu operations in flight, %u clients, %u queues, "
			 "links up %u/%zu", (unsigned long long)service_in_flight(d), clients,
			 d->n_queues, up, d->n_links);
	else
		snprintf(buf, n, "%u clients, %u queues, links up %u/%zu", clients,
			 d->n_queues, up, d->n_links);
}

/* Send STATUS= if it changed since the last one. */
static void status_refresh(struct daemon *d)
{
	struct service *s = d->svc;
	char buf[sizeof(s->status)];

	if (!s || !s->notify)
		return;
	status_text(d, buf, sizeof(buf));
	if (strcmp(buf, s->status) == 0)
		return;
	memcpy(s->status, buf, sizeof(buf));
	notify(d, "STATUS=%s", buf);
}

static void status_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	status_refresh(w->data);
}

/* Runs only while the loop does: a wedged loop stops the pings and
 * systemd kills the daemon.  The longest gap between two pings is what
 * the loop's longest hold looked like to systemd (loop_watch keeps it). */
static void watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;

	(void)revents;
	loop_watch_watchdog_ping(&d->loop_w, ev_now(loop));
	notify(d, "WATCHDOG=1");
}

static void drain_end(struct daemon *d)
{
	ev_timer_stop(d->loop, &d->svc->drain_w);
	ev_break(d->loop, EVBREAK_ALL);
}

static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;
	uint64_t left = service_in_flight(d);
	ev_tstamp now = ev_now(loop);

	(void)revents;
	if (left == 0) {
		log_info("drained in %.0f ms", (now - d->svc->drain_started) * 1e3);
		drain_end(d);
	} else if (now >= d->svc->drain_deadline) {
		log_info("drain: %llu operations still in flight after %u ms: canceling them",
			 (unsigned long long)left, (unsigned)d->cfg.shutdown_drain_ms);
		drain_end(d);
	} else {
		status_refresh(d);
	}
}

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct daemon *d = w->data;
	uint64_t left;

	(void)revents;
	if (d->draining) {
		log_info("signal %d during the drain: stopping now", w->signum);
		drain_end(d);
		return;
	}
	d->draining = true;
	notify(d, "STOPPING=1");
	/* No new clients; new descriptors complete SL_ERR_CANCELED. */
	session_close_listener(d);
	left = service_in_flight(d);
	if (left == 0 || d->cfg.shutdown_drain_ms == 0) {
		log_info("signal %d: shutting down", w->signum);
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	log_info("signal %d: shutting down: %llu operations in flight, waiting up to %u ms",
		 w->signum, (unsigned long long)left, (unsigned)d->cfg.shutdown_drain_ms);
	d->svc->drain_started = ev_now(loop);
	d->svc->drain_deadline = d->svc->drain_started + d->cfg.shutdown_drain_ms / 1e3;
	ev_timer_init(&d->svc->drain_w, drain_cb, DRAIN_CHECK_S, DRAIN_CHECK_S);
	d->svc->drain_w.data = d;
	ev_timer_start(loop, &d->svc->drain_w);
	status_refresh(d);
}

static void change_cb(const char *section, const char *key, const char *old_value,
		      const char *new_value, bool applied, void *arg)
{
	unsigned *restart = arg;

	if (applied) {
		log_info("reload: [%s] %s: %s -> %s", section, key, old_value, new_value);
		return;
	}
	(*restart)++;
	log_warn("reload: [%s] %s changed: needs a restart (running with %s, the file has %s)",
		 section, key, old_value, new_value);
}

/* Monotonic clock in microseconds, for RELOADING=1's MONOTONIC_USEC. */
static unsigned long long monotonic_usec(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

int service_reload(struct daemon *d)
{
	struct link_sync_counts links = { 0 };
	struct config *next;
	unsigned restart = 0;
	char err[512];
	int rc, applied;

	if (!d->config_path) {
		log_info("reload: no configuration file (-c): nothing to read");
		return 0;
	}
	next = malloc(sizeof(*next));
	if (!next) {
		log_err("reload: out of memory; the running configuration stays");
		return -ENOMEM;
	}
	notify(d, "RELOADING=1\nMONOTONIC_USEC=%llu", monotonic_usec());
	rc = config_defaults(next);
	if (rc) {
		log_err("reload: defaults: %s; the running configuration stays", strerror(-rc));
		goto out;
	}
	rc = config_load(next, d->config_path, err, sizeof(err));
	if (rc) {
		log_err("reload: %s; the running configuration stays", err);
		goto out;
	}
	/* The options, then the peers file (config_finish), as at start. */
	if (d->svc && d->svc->apply_options) {
		rc = d->svc->apply_options(d, next);
		if (rc) {
			log_err("reload: the command-line options or the peers do not apply over "
				"%s; the running configuration stays", d->config_path);
			goto out;
		}
	} else {
		rc = config_finish(next, d->config_path, err, sizeof(err));
		if (rc) {
			log_err("reload: %s; the running configuration stays", err);
			goto out;
		}
	}
	applied = config_reload_merge(&d->cfg, next, change_cb, &restart);
	if (applied < 0) {
		rc = applied;
		log_err("reload: out of memory; the running configuration stays");
		goto out;
	}
	/* The peers added, removed or moved; every other link stays as it is. */
	link_table_sync(d, &links);
	/* The key files may have new contents under the same names. */
	(void)link_auth_reload(d);
	log_set_level((enum log_level)d->cfg.log_level);
	/* Access checks read admin_group each time; the socket's group too. */
	admin_apply_config(d);
	log_info("reload: %s: %d changes applied, %u need a restart; links: %u added, %u "
		 "removed, %u readdressed%s, %zu in all", d->config_path, applied, restart,
		 links.added, links.removed, links.readdressed,
		 links.failed ? " (some could not be made: see above)" : "", d->n_links);
out:
	config_release(next);
	free(next);
	notify(d, "READY=1");
	status_refresh(d);
	return rc;
}

static void hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	(void)service_reload(w->data);
}

int service_init(struct daemon *d, service_apply_fn *apply)
{
	struct service *s;
	uint64_t usec = 0;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s) {
		log_err("service: out of memory");
		return -ENOMEM;
	}
	d->svc = s;
	s->apply_options = apply;
	ev_signal_init(&d->sigterm_w, stop_cb, SIGTERM);
	ev_signal_init(&d->sigint_w, stop_cb, SIGINT);
	ev_signal_init(&d->sighup_w, hup_cb, SIGHUP);
	d->sigterm_w.data = d->sigint_w.data = d->sighup_w.data = d;
	ev_signal_start(d->loop, &d->sigterm_w);
	ev_signal_start(d->loop, &d->sigint_w);
	ev_signal_start(d->loop, &d->sighup_w);

	s->notify = getenv("NOTIFY_SOCKET") != NULL;
	if (!s->notify)
		return 0;
	ev_timer_init(&s->status_w, status_cb, STATUS_PERIOD_S, STATUS_PERIOD_S);
	s->status_w.data = d;
	rc = sd_watchdog_enabled(0, &usec);
	if (rc < 0) {
		log_err("watchdog: WATCHDOG_USEC or WATCHDOG_PID: %s", strerror(-rc));
		return rc;
	}
	if (rc > 0 && usec > 0) {
		/* An eighth: a loop held (or starved of a core) for up to
		 * three eighths more still pings within half the interval,
		 * which a loaded 2-core machine needed (gaps of 474 ms with a
		 * quarter of 1 s); a datagram each time costs nothing. */
		ev_timer_init(&s->watchdog_w, watchdog_cb, usec / 8e6, usec / 8e6);
		s->watchdog_w.data = d;
		ev_timer_start(d->loop, &s->watchdog_w);
		log_info("watchdog: pinging systemd every %.0f ms", usec / 8e3);
	}
	return 0;
}

void service_ready(struct daemon *d)
{
	struct service *s = d->svc;

	if (!s->notify)
		return;
	status_text(d, s->status, sizeof(s->status));
	notify(d, "READY=1\nSTATUS=%s", s->status);
	ev_timer_start(d->loop, &s->status_w);
}

void service_stop(struct daemon *d)
{
	struct service *s = d->svc;

	if (!s)
		return;
	ev_timer_stop(d->loop, &s->drain_w);
	if (!s->notify)
		return;
	ev_timer_stop(d->loop, &s->status_w);
	ev_timer_stop(d->loop, &s->watchdog_w);
}

void service_destroy(struct daemon *d)
{
	free(d->svc);
	d->svc = NULL;
}
