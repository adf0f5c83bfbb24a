/*
 * accept_pause.h - stop a listening socket's watcher for a while when
 * accept() fails for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM).
 *
 * The pending connection stays in the backlog, so a level-triggered
 * watcher would fire again at once: the loop would spin (and log) at full
 * speed and starve every client.  Pausing for ACCEPT_PAUSE_S lets the
 * daemon serve the clients it has and retry later.
 */
#ifndef SLD_ACCEPT_PAUSE_H
#define SLD_ACCEPT_PAUSE_H

#include <stdbool.h>
#include <ev.h>

#define ACCEPT_PAUSE_S 0.1	/* seconds */

struct accept_pause {
	struct ev_loop *loop;
	ev_io *io;		/* the listening socket's watcher */
	ev_timer resume_w;
	unsigned long paused;	/* times paused, for logs and counters */
};

void accept_pause_init(struct accept_pause *p, struct ev_loop *loop, ev_io *io);

/*
 * accept_pause_on_error - call with accept()'s errno.  Returns true when it
 * was a resource error and the watcher is now paused (the caller stops
 * accepting); false for any other error.
 */
bool accept_pause_on_error(struct accept_pause *p, int err, const char *what);

/* Stop the resume timer (teardown). */
void accept_pause_stop(struct accept_pause *p);

#endif
