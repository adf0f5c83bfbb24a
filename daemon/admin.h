/*
 * admin.h - the admin socket, runtime_dir/sluiced-admin.sock: what
 * sluicectl asks the running daemon.
 *
 * Protocol (SOCK_STREAM): the client sends one line, a command name and
 * "\n" (at most ADMIN_REQUEST_MAX bytes with the newline; a client that
 * half-closes may leave the newline out); the daemon answers with one
 * JSON object and "\n", then closes.  An error is {"error": "text"}.
 * Commands: status, clients, queues, links, rcache, counters; the fields
 * of each are listed in admin.c (and in the sluicectl(8) manual).
 *
 * Access (SO_PEERCRED at accept): uid 0, the daemon's effective uid, or,
 * when [daemon] admin_group is set, a process whose gid or one of whose
 * supplementary groups is that group (SO_PEERGROUPS, or /proc/PID/status
 * on kernels without it).  Anyone else gets {"error":"permission
 * denied"}.  The socket itself is mode 0660, group admin_group when set.
 *
 * The loop never waits for an admin client: every fd is non-blocking, a
 * reply the client does not read is kept and written as the socket takes
 * it, a connection without its whole request line ADMIN_REQUEST_TIMEOUT_S
 * after it was accepted is dropped, and one still open ADMIN_TIMEOUT_S
 * after it was accepted (reply never read) too.
 *
 * Slots: at most ADMIN_CONNS_MAX connections are served at once, at most
 * ADMIN_CONNS_PER_UID of them for one uid.  A stuck client must not keep
 * the operator out, so a new connection always gets a slot: when there is
 * none, requests already sent are answered first, then one connection is
 * evicted (closed, counted in daemon.admin_evicted): of the new one's own
 * uid when that uid holds its share, else of the uid holding the most;
 * among those, the oldest without a whole request line, else the oldest
 * whose reply waits to be read.  A working sluicectl sends its request
 * right after connecting and reads its reply at once, so it is never the
 * one evicted unless it stalls in between while the slots churn.
 */
#ifndef SLD_ADMIN_H
#define SLD_ADMIN_H

#define SLD_ADMIN_SOCKET_NAME "sluiced-admin.sock"
#define ADMIN_REQUEST_MAX 64	/* bytes of the request line, "\n" included */
#define ADMIN_CONNS_MAX 16	/* connections served at once */
#define ADMIN_TIMEOUT_S 5.0	/* seconds a connection may live */
#define ADMIN_REQUEST_TIMEOUT_S 0.5	/* seconds to send the request line */
#define ADMIN_CONNS_PER_UID 8	/* one uid's share of ADMIN_CONNS_MAX */

struct daemon;

/*
 * admin_listen - create runtime_dir/sluiced-admin.sock (a stale one is
 * replaced: call after session_listen(), which holds the runtime
 * directory's lock), chmod 0660, chgrp to [daemon] admin_group when set
 * (a group that does not exist is logged and the daemon's own group
 * kept), and accept from the loop.  Returns 0, or -ENAMETOOLONG, -ENOMEM
 * or the -errno of socket/bind/chmod/listen (logged).
 */
int admin_listen(struct daemon *d);

/*
 * admin_apply_config - after a reload changed [daemon] admin_group:
 * chgrp the socket to it (or back to the daemon's group for "", and for
 * a group that does not exist).  Access checks read the configuration at
 * each connection, so nothing else is needed.  Returns 0 or -errno
 * (logged: -ENOENT for no such group); a no-op without a socket.
 */
int admin_apply_config(struct daemon *d);

/* admin_close - drop every admin connection, close and unlink the
 * socket.  Safe to call when admin_listen() failed or was never called,
 * and more than once. */
void admin_close(struct daemon *d);

#endif
