/*
 * context.c - the connection to the local daemon (control socket).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"

int ctl_call(struct sl_ctx *ctx, struct sl_ctl_req *req, struct sl_ctl_rep *rep,
	     int *fds, unsigned max_fds, unsigned *nfds)
{
	return ctl_call_len(ctx, req, sizeof(*req), rep, fds, max_fds, nfds);
}

int ctl_call_len(struct sl_ctx *ctx, struct sl_ctl_req *req, size_t len,
		 struct sl_ctl_rep *rep, int *fds, unsigned max_fds, unsigned *nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;
	int rc = 0;

	*nfds = 0;
	pthread_mutex_lock(&ctx->lock);
	req->hdr.version = SL_CTL_VERSION;
	/* seq 0 is the daemon's refusal (sl_shm.h): never ours. */
	if (++ctx->seq == 0)
		ctx->seq = 1;
	req->hdr.seq = ctx->seq;
	if (send(ctx->fd, req, len, MSG_NOSIGNAL) != (ssize_t)len) {
		rc = errno == EPIPE ? -ECONNRESET : -errno;
		/* A daemon that refused at once may have closed already: its
		 * reason is still there to read. */
		if (rc != -ECONNRESET)
			goto out;
		n = recvmsg(ctx->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(*rep) && rep->hdr.seq == 0 && rep->error > 0)
			rc = -rep->error;
		goto out;
	}
	do {
		n = recvmsg(ctx->fd, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	/* The kernel reports a reset before the data queued ahead of it:
	 * a refusal may still be there. */
	if (n < 0 && errno == ECONNRESET) {
		n = recvmsg(ctx->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0)
			errno = ECONNRESET;
	}
	if (n < 0) {
		/* SO_RCVTIMEO (sl_open) expired. */
		rc = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		goto out;
	}
	/* Take ownership of every fd that came, even on a bad reply, so that
	 * none leaks. */
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			unsigned i, k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			int fd;

			for (i = 0; i < k; i++) {
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
				if (*nfds < max_fds)
					fds[(*nfds)++] = fd;
				else
					close(fd);
			}
		}
	}
	if (n == 0)
		rc = -ECONNRESET;
	else if ((size_t)n == sizeof(*rep) && rep->hdr.seq == 0 && rep->error > 0)
		rc = -rep->error;	/* refused before our request was read */
	else if ((size_t)n != sizeof(*rep) || (mh.msg_flags & MSG_TRUNC) ||
		 rep->hdr.seq != req->hdr.seq || rep->hdr.op != req->hdr.op)
		rc = -EPROTO;
	else if (mh.msg_flags & MSG_CTRUNC)
		rc = -EMFILE;	/* fds lost: we are at our limit; *rep is valid */
out:
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		while (*nfds)
			close(fds[--*nfds]);
	}
	return rc;
}

/* sl_open()'s bound, milliseconds: $SLUICE_OPEN_TIMEOUT_MS (0: none) or
 * SL_OPEN_TIMEOUT_MS. */
static long open_timeout_ms(void)
{
	const char *e = getenv("SLUICE_OPEN_TIMEOUT_MS");
	char *end;
	long ms = e ? strtol(e, &end, 10) : -1;

	return (e && *e && !*end && ms >= 0 && ms <= 3600000) ? ms : SL_OPEN_TIMEOUT_MS;
}

/* Bound connect() (a full backlog) and the HELLO's send and reply by
 * @ms (0: unbounded, the kernel's default). */
static int set_timeouts(int fd, long ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

SL_EXPORT int sl_open(const char *path, struct sl_ctx **ctx_p)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sl_ctl_req req = { .hdr.op = SL_CTL_HELLO };
	struct sl_ctl_rep rep;
	struct sl_ctx *ctx;
	unsigned nfds;
	int rc;

	if (!path)
		path = getenv("SLUICE_SOCKET");
	if (!path || !*path)
		path = SL_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	LIST_INIT(&ctx->queues);
	ctx->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ctx->fd < 0) {
		rc = -errno;
		goto err_free;
	}
	rc = set_timeouts(ctx->fd, open_timeout_ms());
	if (rc)
		goto err_close;
	if (connect(ctx->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		/* EAGAIN: the backlog stayed full for the whole timeout. */
		rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto err_close;
	}
	rc = ctl_call(ctx, &req, &rep, NULL, 0, &nfds);
	if (rc)
		goto err_close;
	/* Later calls wait as long as the daemon takes (a queue open may
	 * wait on the daemon's memory); a late reply must not be mistaken
	 * for the answer to the next request. */
	rc = set_timeouts(ctx->fd, 0);
	if (rc)
		goto err_close;
	if (rep.error) {
		rc = -rep.error;	/* EPROTO: the daemon speaks another version */
		goto err_close;
	}
	if (rep.abi_version != SL_SHM_ABI_VERSION) {
		rc = -EPROTO;
		goto err_close;
	}
	ctx->node = rep.node;
	ctx->incarnation = rep.incarnation;
	*ctx_p = ctx;
	return 0;

err_close:
	close(ctx->fd);
err_free:
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return rc;
}

SL_EXPORT void sl_close(struct sl_ctx *ctx)
{
	struct sl_queue *q;

	if (!ctx)
		return;
	while ((q = LIST_FIRST(&ctx->queues)))
		sl_queue_close(q);
	close(ctx->fd);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

SL_EXPORT uint32_t sl_local_node(const struct sl_ctx *ctx)
{
	return ctx->node;
}

SL_EXPORT int sl_node_resolve(struct sl_ctx *ctx, const char *name, uint32_t *node)
{
	struct sl_ctl_resolve_req req = { .req.hdr.op = SL_CTL_NODE_RESOLVE };
	struct sl_ctl_rep rep;
	unsigned nfds;
	size_t n;
	int rc;

	if (!ctx || !name || !node)
		return -EINVAL;
	/* The daemon checks the characters; the length decides what fits. */
	n = strnlen(name, sizeof(req.name));
	if (n == 0 || n == sizeof(req.name))
		return -EINVAL;
	memcpy(req.name, name, n);
	rc = ctl_call_len(ctx, &req.req, sizeof(req), &rep, NULL, 0, &nfds);
	if (rc)
		return rc;
	if (rep.error)
		return -rep.error;
	*node = rep.node;
	return 0;
}
