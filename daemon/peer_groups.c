/*
 * peer_groups.c - see peer_groups.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "peer_groups.h"

/* Is @gid among the supplementary groups of process @pid, whose
 * effective uid must be @uid (a pid reused since it connected is not the
 * same process)?  From /proc/PID/status, for kernels without
 * SO_PEERGROUPS.  Errors mean "no". */
static bool proc_has_group(pid_t pid, uid_t uid, gid_t gid)
{
	char path[40], *line = NULL;
	size_t cap = 0;
	bool uid_ok = false, found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		log_debug("%s: %m", path);
		return false;
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned long r, e;
		char *p, *end;

		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			uid_ok = e == (unsigned long)uid;
			continue;
		}
		if (strncmp(line, "Groups:", 7))
			continue;
		for (p = line + 7;; p = end) {
			unsigned long g;

			errno = 0;
			g = strtoul(p, &end, 10);
			if (end == p || errno)
				break;
			if (g == (unsigned long)gid)
				found = true;
		}
	}
	free(line);
	if (fclose(f) != 0)
		log_debug("%s: close: %m", path);
	return uid_ok && found;
}

/* Is @gid among the supplementary groups the peer of @fd had when it
 * connected?  SO_PEERGROUPS (Linux 4.13), else /proc/PID/status. */
bool peer_has_group(int fd, const struct ucred *cr, gid_t gid)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;
	size_t i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno == ENOPROTOOPT)
			return proc_has_group(cr->pid, cr->uid, gid);
		if (errno != ERANGE) {
			log_debug("SO_PEERGROUPS: %m");
			return false;
		}
		/* len now says how much it takes. */
		groups = malloc(len);
		if (!groups)
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			log_debug("SO_PEERGROUPS: %m");
			free(groups);
			return false;
		}
	}
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			found = true;
	if (groups != small)
		free(groups);
	return found;
}

int group_gid(const char *name, gid_t *gid_p)
{
	long hint = sysconf(_SC_GETGR_R_SIZE_MAX);
	size_t len = hint > 0 ? (size_t)hint : 16384;
	struct group grp, *res;
	char *buf;
	int rc;

	for (;;) {
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		rc = getgrnam_r(name, &grp, buf, len, &res);
		if (rc != ERANGE || len >= (1u << 20))
			break;
		free(buf);
		len *= 2;
	}
	if (rc == 0 && res)
		*gid_p = grp.gr_gid;
	free(buf);
	if (rc)
		return -rc;
	return res ? 0 : -ENOENT;
}
