/*
 * session.c - the control socket: accept clients, answer HELLO,
 * QUEUE_OPEN (passing the memfd and doorbells with SCM_RIGHTS) and
 * QUEUE_CLOSE, and release everything when a client goes.
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "accept_pause.h"
#include "daemon.h"
#include "engine.h"
#include "fd_limits.h"
#include "fd_reserve.h"
#include "log.h"
#include "queue.h"
#include "peer_groups.h"
#include "rate_log.h"
#include "resolve.h"
#include "session.h"

/* Seconds between two log lines about queues refused at max_queues. */
#define MAX_QUEUES_LOG_S 10.0

static int send_reply(struct session *s, const struct sl_ctl_rep *rep,
		      const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)rep, .iov_len = sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	/* Replies are small and the client waits for each: a full socket
	 * means a client that does not read; drop it rather than block. */
	if (sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

/* Returns 0, or -errno when the reply could not be sent (the client would
 * wait for it forever: drop it). */
void session_queue_owner(struct session *s, struct queue_owner *who)
{
	*who = (struct queue_owner){ .session = s, .pid = s->pid, .uid = s->uid,
				     .in_flight = &s->in_flight, .uq = s->uq };
}

/*
 * What the client of @s is told when queue_create() failed with @rc; the
 * daemon's own limits are logged, once per episode.  Its descriptors
 * become ENFILE: EMFILE would read as the client's own limit.
 */
static int queue_refusal(struct session *s, int rc)
{
	static struct rate_log max_queues_log;
	struct daemon *d = s->d;
	uint64_t n;

	if (rc == -ENOSPC) {
		if (rate_log_due(&max_queues_log, MAX_QUEUES_LOG_S, &n))
			log_warn("queue refused (client pid %d): [limits] max_queues = %u reached "
				 "(%u queues open); raising it takes a restart, and %u "
				 "descriptors a queue (sluiced(8)) (%llu refusals since the last "
				 "such line)",
				 (int)s->pid, d->cfg.max_queues, d->n_queues, FD_PER_QUEUE,
				 (unsigned long long)n);
		return ENOSPC;
	}
	if (rc == -EMFILE || rc == -ENFILE) {
		fd_limits_queue_refused(&d->cfg, s->pid, -rc, d->n_queues, session_count(d));
		return ENFILE;
	}
	return -rc;
}

static int handle_queue_open(struct session *s, const struct sl_ctl_req *req,
			     struct sl_ctl_rep *rep)
{
	struct queue_owner who;
	const char *why;
	uint64_t limit;
	struct queue *q;
	int rc, fds[3];

	if (req->queue_id || req->rsvd[0] || req->rsvd[1] || req->rsvd[2] ||
	    req->rsvd[3] || req->rsvd[4]) {
		rep->error = EINVAL;
		return send_reply(s, rep, NULL, 0);
	}
	/* Stopping: a new queue could only see its work canceled. */
	if (s->d->draining) {
		rep->error = ESHUTDOWN;
		return send_reply(s, rep, NULL, 0);
	}
	if (!s->uq) {
		rep->error = EDQUOT;	/* over uid_max_contexts: refused at HELLO */
		return send_reply(s, rep, NULL, 0);
	}
	/* Quotas: one client cannot take every queue or all memory. */
	if (s->n_queues >= s->d->cfg.client_max_queues ||
	    s->arena_bytes + s->d->cfg.arena_bytes > s->d->cfg.client_max_arena_bytes) {
		log_info("client pid %d: queue refused: quota of %u queues / %llu arena bytes",
			 (int)s->pid, s->d->cfg.client_max_queues,
			 (unsigned long long)s->d->cfg.client_max_arena_bytes);
		rep->error = EDQUOT;
		return send_reply(s, rep, NULL, 0);
	}
	/* ... nor one uid, over all its clients (uid_quota.h). */
	why = uid_quota_queue(&s->d->cfg, s->uq, s->d->cfg.arena_bytes, &limit);
	if (why) {
		uid_quota_log(s->pid, s->uid, why, limit);
		rep->error = EDQUOT;
		return send_reply(s, rep, NULL, 0);
	}
	/* [ports]: a range reserved for others (ports.h). */
	if (req->port && req->port < SLD_PORTS) {
		rc = ports_may_bind(&s->d->cfg.ports, req->port, s->pid, s->uid, s->gid, s->fd);
		if (rc) {
			rep->error = -rc;
			return send_reply(s, rep, NULL, 0);
		}
	}
	session_queue_owner(s, &who);
	rc = queue_create(s->d, &who, req->port, req->depth, &q);
	if (rc) {
		rep->error = queue_refusal(s, rc);
		return send_reply(s, rep, NULL, 0);
	}
	rep->node = s->d->cfg.node_id;
	rep->queue_id = q->id;
	rep->port = q->port;
	rep->seg_size = q->seg_size;
	fds[0] = q->memfd;
	fds[1] = q->sq_efd;
	fds[2] = q->cq_efd;
	rc = send_reply(s, rep, fds, 3);
	if (rc) {
		log_warn("client pid %d: queue reply: %s", (int)s->pid, strerror(-rc));
		engine_close_queue(q);
		return rc;
	}
	/* The mapping keeps the segment: the descriptor is the client's
	 * now, and one fewer per queue counts against RLIMIT_NOFILE. */
	if (close(q->memfd) < 0)
		log_debug("client pid %d: queue %u: close memfd: %m", (int)s->pid, q->id);
	q->memfd = -1;
	TAILQ_INSERT_TAIL(&s->queues, q, by_session);
	s->n_queues++;
	s->arena_bytes += q->arena_size;
	s->uq->queues++;
	s->uq->arena_bytes += q->arena_size;
	log_debug("client pid %d: queue %u on port %u", (int)s->pid, q->id, q->port);
	return 0;
}

static void handle_queue_close(struct session *s, const struct sl_ctl_req *req,
			       struct sl_ctl_rep *rep)
{
	struct queue *q;

	TAILQ_FOREACH(q, &s->queues, by_session)
		if (q->id == req->queue_id)
			break;
	if (!q) {
		rep->error = ENOENT;
		return;
	}
	TAILQ_REMOVE(&s->queues, q, by_session);
	s->n_queues--;
	s->arena_bytes -= q->arena_size;
	s->uq->queues--;	/* the queue was counted: s->uq is set */
	s->uq->arena_bytes -= q->arena_size;
	engine_close_queue(q);
}

/* The lookup of a NODE_RESOLVE ended (resolve.h).  A reply that cannot
 * go drops the client: it waits for it.  The session is not freed here
 * (the resolver is in its walk): shut down, its socket reads EOF. */
static void resolve_answer(void *owner, uint32_t seq, int err, uint32_t node)
{
	struct session *s = owner;
	struct sl_ctl_rep rep = {
		.hdr = { .version = SL_CTL_VERSION, .op = SL_CTL_NODE_RESOLVE, .seq = seq },
		.error = err,
		.node = err ? 0 : node,
	};
	int rc = send_reply(s, &rep, NULL, 0);

	if (rc) {
		log_info("client pid %d: resolve reply: %s; dropping it", (int)s->pid,
			 strerror(-rc));
		if (shutdown(s->fd, SHUT_RDWR) < 0)
			log_debug("client pid %d: shutdown: %m", (int)s->pid);
	}
}

/* NODE_RESOLVE: a name padded with NULs, the other fields 0. */
static bool resolve_req_valid(const struct sl_ctl_resolve_req *rr)
{
	const struct sl_ctl_req *req = &rr->req;
	const char *nul = memchr(rr->name, '\0', sizeof(rr->name));
	size_t i;

	if (req->port || req->depth || req->queue_id)
		return false;
	for (i = 0; i < sizeof(req->rsvd) / sizeof(req->rsvd[0]); i++)
		if (req->rsvd[i])
			return false;
	if (!nul)
		return false;
	for (i = (size_t)(nul - rr->name); i < sizeof(rr->name); i++)
		if (rr->name[i])
			return false;
	return config_name_valid(rr->name);
}

static int handle_node_resolve(struct session *s, const struct sl_ctl_resolve_req *rr,
			       struct sl_ctl_rep *rep)
{
	uint32_t node = 0;
	int rc;

	if (!resolve_req_valid(rr)) {
		rep->error = EINVAL;
		return send_reply(s, rep, NULL, 0);
	}
	rc = resolve_node(s->d, rr->name, s, rr->req.hdr.seq, resolve_answer, &node);
	if (rc == -EINPROGRESS)
		return 0;	/* resolve_answer() replies */
	rep->error = -rc;
	rep->node = node;
	return send_reply(s, rep, NULL, 0);
}

/* Returns 0, or -errno when the session must be dropped. */
static int handle_request(struct session *s)
{
	union {
		struct sl_ctl_req req;
		struct sl_ctl_resolve_req resolve;
	} u;
	struct sl_ctl_req req;
	struct sl_ctl_rep rep;
	ssize_t n = recv(s->fd, &u, sizeof(u), MSG_DONTWAIT | MSG_TRUNC);

	if (n < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	if ((size_t)n >= sizeof(u.req.hdr) && u.req.hdr.version != SL_CTL_VERSION) {
		/* Say why before dropping it, so the client reports -EPROTO. */
		memset(&rep, 0, sizeof(rep));
		rep.hdr = u.req.hdr;
		rep.error = EPROTO;
		(void)send_reply(s, &rep, NULL, 0);
		return -EPROTO;
	}
	/* Each request is exactly its size: a longer one (MSG_TRUNC) too. */
	if ((size_t)n >= sizeof(u.req.hdr) && u.req.hdr.op == SL_CTL_NODE_RESOLVE) {
		if ((size_t)n != sizeof(u.resolve))
			return -EPROTO;
		memset(&rep, 0, sizeof(rep));
		rep.hdr = u.req.hdr;
		return handle_node_resolve(s, &u.resolve, &rep);
	}
	if ((size_t)n != sizeof(req))
		return -EPROTO;
	req = u.req;
	memset(&rep, 0, sizeof(rep));
	rep.hdr = req.hdr;
	switch (req.hdr.op) {
	case SL_CTL_HELLO:
		if (!s->uq) {
			uid_quota_log(s->pid, s->uid, "uid_max_contexts",
				      uid_limit_contexts(&s->d->cfg));
			rep.error = EDQUOT;
			(void)send_reply(s, &rep, NULL, 0);
			return -EDQUOT;
		}
		rep.node = s->d->cfg.node_id;
		rep.incarnation = s->d->incarnation;
		rep.abi_version = SL_SHM_ABI_VERSION;
		break;
	case SL_CTL_QUEUE_OPEN:
		return handle_queue_open(s, &req, &rep);
	case SL_CTL_QUEUE_CLOSE:
		handle_queue_close(s, &req, &rep);
		break;
	default:
		rep.error = EOPNOTSUPP;
		break;
	}
	return send_reply(s, &rep, NULL, 0);
}

static void session_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct session *s = w->data;
	int rc;

	(void)loop;
	(void)revents;
	rc = handle_request(s);
	if (rc) {
		if (rc != -ECONNRESET && rc != -EDQUOT)	/* EDQUOT: logged, rate-limited */
			log_info("client pid %d: dropped: %s", (int)s->pid, strerror(-rc));
		session_destroy(s);
	}
}

void session_destroy(struct session *s)
{
	struct queue *q;

	while ((q = TAILQ_FIRST(&s->queues))) {
		TAILQ_REMOVE(&s->queues, q, by_session);
		s->uq->queues--;
		s->uq->arena_bytes -= q->arena_size;
		engine_close_queue(q);
	}
	resolve_forget(s->d, s);	/* its lookups answer nobody */
	uid_usage_detach(s->uq);
	ev_io_stop(s->d->loop, &s->w);
	if (close(s->fd) < 0)
		log_warn("client pid %d: close: %m", (int)s->pid);
	TAILQ_REMOVE(&s->d->sessions, s, link);
	log_debug("client pid %d: gone", (int)s->pid);
	free(s);
}

/* The daemon is out of descriptors: tell the client at once (a reply
 * with seq 0, sl_shm.h) instead of leaving its connect() unanswered. */
static void refuse_no_fds(int fd, void *arg)
{
	struct sl_ctl_rep rep = {
		.hdr = { .version = SL_CTL_VERSION, .op = SL_CTL_HELLO, .seq = 0 },
		.error = ENFILE,
	};
	struct sl_ctl_req req;

	(void)arg;
	if (send(fd, &rep, sizeof(rep), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("control socket: refusal: %m");
	/* Closing with the HELLO unread would reset the connection, and the
	 * client would see the reset before the reason. */
	while (recv(fd, &req, sizeof(req), MSG_DONTWAIT) > 0)
		;
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct daemon *d = w->data;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < 16; i++) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct session *s;
		int fd = fd_accept(d->ctl_fd, "control socket", refuse_no_fds, d,
				   &d->ctr.fd_refused);

		if (fd == FD_REFUSED)
			continue;
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED &&
			    !accept_pause_on_error(&d->ctl_pause, errno, "control socket"))
				log_warn("control socket: accept: %m");
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log_warn("control socket: SO_PEERCRED: %m");
			close(fd);
			continue;
		}
		s = calloc(1, sizeof(*s));
		if (!s) {
			log_warn("control socket: out of memory for a client");
			close(fd);
			continue;
		}
		/* Over uid_max_contexts: told at its HELLO (s->uq NULL). */
		if (uid_usage_attach(&d->uids, &d->cfg, cred.uid, &s->uq) == -ENOMEM) {
			log_warn("control socket: out of memory for a client");
			free(s);
			close(fd);
			continue;
		}
		s->d = d;
		s->fd = fd;
		s->pid = cred.pid;
		s->uid = cred.uid;
		s->gid = cred.gid;
		TAILQ_INIT(&s->queues);
		ev_io_init(&s->w, session_cb, fd, EV_READ);
		s->w.data = s;
		ev_io_start(d->loop, &s->w);
		TAILQ_INSERT_TAIL(&d->sessions, s, link);
		log_debug("client pid %d uid %d connected", (int)cred.pid, (int)cred.uid);
	}
}

/* [daemon] client_group: the socket (mode 0660) goes to that group, whose
 * members may then connect.  Returns 0 or -errno (logged). */
static int socket_group(const char *path, const char *group)
{
	gid_t gid;
	int rc;

	if (!group[0])
		return 0;
	rc = group_gid(group, &gid);
	if (rc) {
		log_err("[daemon] client_group %s: %s", group,
			rc == -ENOENT ? "no such group" : strerror(-rc));
		return rc;
	}
	if (chown(path, (uid_t)-1, gid) < 0) {
		rc = -errno;
		log_err("%s: chgrp %s: %m", path, group);
		return rc;
	}
	return 0;
}

/* Is a live daemon answering on @path? */
static bool socket_alive(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	alive = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0;
	close(fd);
	return alive;
}

/* mkdir -p: the runtime directory's parents may not exist yet (tmpfs). */
static int mkdir_parents(const char *path, mode_t mode)
{
	char buf[CONFIG_PATH_MAX];
	size_t i, n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = path[i];
	}
	return 0;
}

int session_listen(struct daemon *d)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char lock_path[CONFIG_PATH_MAX + 32];
	int fd, rc;

	rc = mkdir_parents(d->cfg.runtime_dir, 0755);
	if (rc) {
		log_err("runtime directory %s: %s", d->cfg.runtime_dir, strerror(-rc));
		return rc;
	}
	snprintf(d->ctl_path, sizeof(d->ctl_path), "%s/%s", d->cfg.runtime_dir,
		 SLD_SOCKET_NAME);
	if (strlen(d->ctl_path) >= sizeof(sun.sun_path)) {
		log_err("%s: path too long for a UNIX socket", d->ctl_path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, d->ctl_path);
	/* The lock closes the window between "is anyone there?" and bind():
	 * two daemons started at once on one directory would both win. */
	snprintf(lock_path, sizeof(lock_path), "%s/%s", d->cfg.runtime_dir, SLD_LOCK_NAME);
	d->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (d->lock_fd < 0) {
		rc = -errno;
		log_err("%s: %m", lock_path);
		return rc;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		log_err("%s: another sluiced is running there", d->cfg.runtime_dir);
		close(d->lock_fd);
		d->lock_fd = -1;
		return rc;
	}
	if (socket_alive(&sun)) {
		log_err("%s: another sluiced is running there", d->ctl_path);
		return -EADDRINUSE;
	}
	if (unlink(d->ctl_path) < 0 && errno != ENOENT)
		log_warn("%s: unlink stale socket: %m", d->ctl_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(d->ctl_path, 0660) < 0 || listen(fd, 128) < 0) {
		rc = -errno;
		log_err("%s: %m", d->ctl_path);
		close(fd);
		return rc;
	}
	rc = socket_group(d->ctl_path, d->cfg.client_group);
	if (rc) {
		close(fd);
		if (unlink(d->ctl_path) < 0)
			log_warn("%s: unlink: %m", d->ctl_path);
		return rc;
	}
	d->ctl_fd = fd;
	ev_io_init(&d->ctl_w, accept_cb, fd, EV_READ);
	d->ctl_w.data = d;
	ev_io_start(d->loop, &d->ctl_w);
	accept_pause_init(&d->ctl_pause, d->loop, &d->ctl_w);
	return 0;
}

unsigned session_count(const struct daemon *d)
{
	const struct session *s;
	unsigned n = 0;

	TAILQ_FOREACH(s, &d->sessions, link)
		n++;
	return n;
}

void session_close_listener(struct daemon *d)
{
	if (d->ctl_fd < 0)
		return;
	/* The lock stays held until exit: the socket path is ours till then. */
	ev_io_stop(d->loop, &d->ctl_w);
	accept_pause_stop(&d->ctl_pause);
	close(d->ctl_fd);
	d->ctl_fd = -1;
	if (unlink(d->ctl_path) < 0 && errno != ENOENT)
		log_warn("%s: unlink: %m", d->ctl_path);
}
