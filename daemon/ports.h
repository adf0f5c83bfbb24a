/*
 * ports.h - [ports]: port ranges reserved for a user or a group.
 *
 * Ports are the node's endpoint addresses, first come first served: a
 * user who binds another's well-known port before it receives what is
 * sent there.  A reservation says who may bind a range:
 *
 *   [ports]
 *   5000-5999 = group:hpc      members of hpc (primary or supplementary)
 *   6000 = user:alice          alice only
 *   7000-7099 = uid:4242       also gid:N
 *
 * A port inside a reserved range may be bound only by a client the
 * reservation names, or by root; others get -EACCES (logged with the range
 * and its owner, rate-limited).  Ports outside every range are free for
 * all, as before (below SL_PORT_PRIVILEGED: root only).  An ephemeral
 * port (bind 0) is never taken from a reserved range.  Ranges may not
 * overlap.  Names are resolved when the file is read: a user or group
 * that does not exist is a configuration error.
 */
#ifndef SLD_PORTS_H
#define SLD_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PORTS_RANGES_MAX 256
#define PORTS_OWNER_MAX 72	/* "group:" + a name, with the NUL */

struct port_range {
	uint32_t lo, hi;	/* inclusive, 1..65535 */
	bool is_group;		/* id is a gid (else a uid) */
	uint32_t id;
	char owner[PORTS_OWNER_MAX];	/* as written, for logs and --print-config */
};

struct port_ranges {
	struct port_range r[PORTS_RANGES_MAX];
	size_t n;
};

/*
 * ports_conf_add - one [ports] line, @key "LO-HI" or "PORT", @value
 * "user:NAME", "group:NAME", "uid:N" or "gid:N".  Returns 0, or -EINVAL
 * with *@why set to a static reason (for "[ports] KEY: REASON").
 */
int ports_conf_add(struct port_ranges *pr, const char *key, const char *value,
		   const char **why);

/* The range @port is in, or NULL. */
const struct port_range *ports_range_of(const struct port_ranges *pr, uint32_t port);

/*
 * ports_may_bind - may the client @uid / @gid, whose control socket is
 * @fd (for its supplementary groups), bind @port?  Root may bind any.
 * Returns 0, or -EACCES (logged, rate-limited, with @pid).
 */
int ports_may_bind(const struct port_ranges *pr, uint32_t port, pid_t pid, uid_t uid,
		   gid_t gid, int fd);

#endif
