/*
 * accept_pause.c - see accept_pause.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <string.h>

#include "accept_pause.h"
#include "log.h"

static void resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct accept_pause *p = w->data;

	(void)revents;
	ev_io_start(loop, p->io);
}

void accept_pause_init(struct accept_pause *p, struct ev_loop *loop, ev_io *io)
{
	p->loop = loop;
	p->io = io;
	p->paused = 0;
	ev_timer_init(&p->resume_w, resume_cb, ACCEPT_PAUSE_S, 0.0);
	p->resume_w.data = p;
}

bool accept_pause_on_error(struct accept_pause *p, int err, const char *what)
{
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return false;
	/* One line per episode of exhaustion, not one per retry. */
	if (!ev_is_active(&p->resume_w) && p->paused++ % 100 == 0)
		log_warn("%s: accept: %s; pausing new connections for %.0f ms "
			 "(paused %lu times)", what, strerror(err), ACCEPT_PAUSE_S * 1e3,
			 p->paused);
	ev_io_stop(p->loop, p->io);
	ev_timer_stop(p->loop, &p->resume_w);
	/* An expired one-shot timer keeps "after" near 0: set it again. */
	ev_timer_set(&p->resume_w, ACCEPT_PAUSE_S, 0.0);
	ev_timer_start(p->loop, &p->resume_w);
	return true;
}

void accept_pause_stop(struct accept_pause *p)
{
	if (p->loop)
		ev_timer_stop(p->loop, &p->resume_w);
}
