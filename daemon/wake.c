/*
 * wake.c - the progress engine's wake-up primitive.  See wake.h.
 */
#include "autoconfig.h"

#include "daemon.h"
#include "wake.h"

void daemon_wake(struct daemon *d)
{
	/* Also while the engine runs: try_sleep must not stop it after a
	 * wake-up that came from its own flush. */
	d->kicked = true;
	if (ev_is_active(&d->progress_w))
		return;
	d->last_work = ev_time();
	ev_idle_start(d->loop, &d->progress_w);
}
