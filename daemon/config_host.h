/*
 * config_host.h - checks of a configuration against this host.
 *
 * The parser (config.c) reads text; whether a group named in the file
 * exists depends on the machine the daemon runs on.  These checks run in
 * `sluiced --check-config` and at every start, so that a check that says
 * OK means the start will not refuse the same file for the same reason.
 */
#ifndef SLD_CONFIG_HOST_H
#define SLD_CONFIG_HOST_H

#include <stddef.h>

#include "config.h"

/*
 * config_check_host - check @c against this host:
 *   [daemon] client_group must name an existing group (the control
 *   socket goes to it; a start without it is refused);
 *   [daemon] admin_group should (without it only root and the daemon's
 *   own user may use sluicectl: a warning).
 * Each message names where the value came from (config_where()) and what
 * to do.  An error goes to @err and returns -ENOENT (no such group) or
 * -errno (the group database could not be read); warnings, one per line,
 * go to @warn (may be empty).  Both at most their size, NUL-terminated.
 * Returns 0 when the daemon may start.
 */
int config_check_host(const struct config *c, char *err, size_t errlen, char *warn,
		      size_t warnlen);

#endif
