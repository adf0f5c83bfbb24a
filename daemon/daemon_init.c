/*
 * daemon_init.c - a struct daemon set up empty, before its configuration
 * is read.  See daemon_init() in daemon.h.
 */
#include "autoconfig.h"

#include "daemon.h"

int daemon_init(struct daemon *d)
{
	d->ctl_fd = -1;
	d->lock_fd = -1;
	d->spin_s = DAEMON_SPIN_US_DEFAULT / 1e6;
	sl_spin_init(&d->spin, DAEMON_SPIN_US_DEFAULT * 1000, DAEMON_SPIN_US_MIN * 1000,
		     DAEMON_SPIN_US_MAX * 1000);
	TAILQ_INIT(&d->sessions);
	LIST_INIT(&d->uids);
	TAILQ_INIT(&d->queues);
	TAILQ_INIT(&d->cq_dirty);
	TAILQ_INIT(&d->copies);
	TAILQ_INIT(&d->active);
	TAILQ_INIT(&d->link_ready);
	TAILQ_INIT(&d->links_up);
	TAILQ_INIT(&d->quota_waiters);
	return config_defaults(&d->cfg);
}
