/*
 * ports.c - see ports.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "peer_groups.h"
#include "ports.h"
#include "rate_log.h"

#define PORTS_LOG_S 10.0	/* seconds between refusal lines */
#define PORT_MAX 65535u

/* A decimal number in [1, PORT_MAX] spanning [s, end); 0 if not. */
static uint32_t parse_port(const char *s, const char *end)
{
	uint32_t v = 0;

	if (s == end || end - s > 5)
		return 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (uint32_t)(*s - '0');
	}
	return v <= PORT_MAX ? v : 0;
}

/* uid or gid @name, numeric or looked up. */
static int resolve_owner(const char *value, bool *is_group, uint32_t *id, const char **why)
{
	char buf[16384];
	const char *name;
	char *end;
	int rc;

	if (!strncmp(value, "uid:", 4) || !strncmp(value, "gid:", 4)) {
		unsigned long v;

		*is_group = value[0] == 'g';
		errno = 0;
		v = strtoul(value + 4, &end, 10);
		if (!value[4] || *end || errno || v >= UINT32_MAX) {
			*why = "not a number after uid: or gid:";
			return -EINVAL;
		}
		*id = (uint32_t)v;
		return 0;
	}
	if (!strncmp(value, "user:", 5)) {
		struct passwd pw, *res = NULL;

		name = value + 5;
		rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
		if (rc || !res) {
			*why = "no such user";
			return -EINVAL;
		}
		*is_group = false;
		*id = pw.pw_uid;
		return 0;
	}
	if (!strncmp(value, "group:", 6)) {
		gid_t gid;

		name = value + 6;
		if (group_gid(name, &gid)) {
			*why = "no such group";
			return -EINVAL;
		}
		*is_group = true;
		*id = gid;
		return 0;
	}
	*why = "owner must be user:NAME, group:NAME, uid:N or gid:N";
	return -EINVAL;
}

int ports_conf_add(struct port_ranges *pr, const char *key, const char *value,
		   const char **why)
{
	const char *dash = strchr(key, '-'), *end = key + strlen(key);
	struct port_range r = { 0 };
	size_t i;

	r.lo = parse_port(key, dash ? dash : end);
	r.hi = dash ? parse_port(dash + 1, end) : r.lo;
	if (!r.lo || !r.hi || r.hi < r.lo) {
		*why = "not a port or a range LO-HI of ports 1..65535";
		return -EINVAL;
	}
	if (strlen(value) >= sizeof(r.owner)) {
		*why = "owner too long";
		return -EINVAL;
	}
	if (resolve_owner(value, &r.is_group, &r.id, why))
		return -EINVAL;
	for (i = 0; i < pr->n; i++) {
		if (r.lo <= pr->r[i].hi && pr->r[i].lo <= r.hi) {
			*why = "overlaps another range";
			return -EINVAL;
		}
	}
	if (pr->n >= PORTS_RANGES_MAX) {
		*why = "too many ranges (allowed: up to 256)";
		return -EINVAL;
	}
	strcpy(r.owner, value);
	pr->r[pr->n++] = r;
	return 0;
}

const struct port_range *ports_range_of(const struct port_ranges *pr, uint32_t port)
{
	size_t i;

	for (i = 0; i < pr->n; i++)
		if (port >= pr->r[i].lo && port <= pr->r[i].hi)
			return &pr->r[i];
	return NULL;
}

int ports_may_bind(const struct port_ranges *pr, uint32_t port, pid_t pid, uid_t uid,
		   gid_t gid, int fd)
{
	static struct rate_log refusals;
	const struct port_range *r = ports_range_of(pr, port);
	struct ucred cr = { .pid = pid, .uid = uid, .gid = gid };
	uint64_t n;

	if (!r || uid == 0)
		return 0;
	if (r->is_group ? (gid == r->id || peer_has_group(fd, &cr, r->id)) : uid == r->id)
		return 0;
	if (rate_log_due(&refusals, PORTS_LOG_S, &n))
		log_info("client pid %d uid %d: bind port %u refused: [ports] %u-%u = %s "
			 "(%llu refusals since the last such line)", (int)pid, (int)uid, port,
			 r->lo, r->hi, r->owner, (unsigned long long)n);
	return -EACCES;
}
