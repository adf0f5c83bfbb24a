/*
 * config_host.c - checks of a configuration against this host.  See
 * config_host.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config_host.h"
#include "peer_groups.h"

/* Does group @name exist?  0, -ENOENT, or -errno. */
static int group_exists(const char *name)
{
	gid_t gid;

	return group_gid(name, &gid);
}

int config_check_host(const struct config *c, char *err, size_t errlen, char *warn,
		      size_t warnlen)
{
	char where[CONFIG_SOURCE_MAX + 32];
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (warn && warnlen)
		warn[0] = '\0';
	if (c->client_group[0] && (rc = group_exists(c->client_group)) != 0) {
		config_where(c, "daemon", "client_group", where, sizeof(where));
		if (rc == -ENOENT)
			snprintf(err, errlen,
				 "%s: [daemon] client_group %s: no such group on this host; "
				 "create it (systemd-sysusers creates the package's groups from "
				 "sysusers.d/sluice.conf) or set client_group empty (then only the "
				 "daemon's own user may connect)", where, c->client_group);
		else
			snprintf(err, errlen, "%s: [daemon] client_group %s: %s", where,
				 c->client_group, strerror(-rc));
		return rc;
	}
	if (c->admin_group[0] && (rc = group_exists(c->admin_group)) != 0) {
		config_where(c, "daemon", "admin_group", where, sizeof(where));
		snprintf(warn, warnlen,
			 "%s: [daemon] admin_group %s: %s; until it exists only root and the "
			 "daemon's own user may use sluicectl (systemd-sysusers creates it from "
			 "sysusers.d/sluice.conf)", where, c->admin_group,
			 rc == -ENOENT ? "no such group on this host" : strerror(-rc));
	}
	return 0;
}
