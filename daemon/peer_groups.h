/*
 * peer_groups.h - is a group among those a UNIX socket's peer had when it
 * connected?  For access checks by group: [daemon] admin_group (admin.c),
 * [ports] reservations for a group (ports.c).
 */
#ifndef SLD_PEER_GROUPS_H
#define SLD_PEER_GROUPS_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/*
 * peer_has_group - is @gid among the supplementary groups of the peer
 * @cr of connected socket @fd?  SO_PEERGROUPS (Linux 4.13), else
 * /proc/PID/status (checked to still be the same uid).  Errors mean "no"
 * (logged at debug level).  The primary gid (cr->gid) is the caller's to
 * check.
 */
bool peer_has_group(int fd, const struct ucred *cr, gid_t gid);

/*
 * group_gid - the gid of group @name into *@gid_p.  A group with many
 * members is read with a buffer grown up to 1 MiB (ERANGE).  Returns 0,
 * -ENOENT (no such group), -ENOMEM, or getgrnam_r()'s -errno.
 */
int group_gid(const char *name, gid_t *gid_p);

#endif
