/*
 * session.h - one connected client process on the control socket
 * (UNIX SOCK_SEQPACKET): its credentials (SO_PEERCRED) and its queues.
 * When the socket closes, for any reason including SIGKILL, every queue
 * of the session is killed and everything it held is released.
 */
#ifndef SLD_SESSION_H
#define SLD_SESSION_H

#include <sys/queue.h>
#include <sys/types.h>
#include <ev.h>

struct daemon;
struct queue;

struct session {
	struct daemon *d;
	TAILQ_ENTRY(session) link;
	int fd;
	ev_io w;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	TAILQ_HEAD(, queue) queues;
	uint32_t n_queues;
	uint64_t arena_bytes;		/* of its queues, for client_max_arena_bytes */
	uint32_t in_flight;		/* descriptors accepted, not completed:
					 * client_max_inflight */
	struct uid_usage *uq;		/* its uid's usage; NULL: over
					 * uid_max_contexts, refused at HELLO */
};

/* Create the control socket in the runtime directory and listen.
 * Refuses (-EADDRINUSE) when another daemon answers on it. */
int session_listen(struct daemon *d);
void session_close_listener(struct daemon *d);
/* Clients connected now (sessions). */
unsigned session_count(const struct daemon *d);

struct queue_owner;

/* What a queue of @s charges its descriptors to (queue.h). */
void session_queue_owner(struct session *s, struct queue_owner *who);

/* Drop a client: kill its queues, close its socket, free it. */
void session_destroy(struct session *s);

#endif
