/*
 * raw_client.c - a client that speaks the control protocol and drives the
 * rings itself, without libsluice (raw_client.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "raw_client.h"
#include "sl_barrier.h"
#include "sl_shm.h"

void raw_call(struct raw *r, struct sl_ctl_req *req, struct sl_ctl_rep *rep,
		     int *fds, unsigned *nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	req->hdr.version = SL_CTL_VERSION;
	req->hdr.seq = ++r->seq;
	n = send(r->sock, req, sizeof(*req), MSG_NOSIGNAL);
	H_ASSERT(n == (ssize_t)sizeof(*req), "control send: %s", strerror(errno));
	n = recvmsg(r->sock, &mh, MSG_CMSG_CLOEXEC);
	H_ASSERT(n == (ssize_t)sizeof(*rep), "control reply: %zd (%s)", n, strerror(errno));
	H_ASSERT(!(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)), "reply truncated");
	H_ASSERT(rep->hdr.seq == req->hdr.seq && rep->hdr.op == req->hdr.op, "reply op/seq");
	*nfds = 0;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned i, k;

		H_ASSERT(cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS, "cmsg");
		k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k && *nfds < 4; i++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
}

void raw_open(struct raw *r, const struct h_daemon *d, uint32_t port, uint32_t depth)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sl_ctl_req req = { .hdr.op = SL_CTL_HELLO };
	struct sl_ctl_rep rep;
	struct stat st;
	unsigned nfds;
	int fds[4];

	memset(r, 0, sizeof(*r));
	r->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	H_ASSERT(r->sock >= 0, "socket: %s", strerror(errno));
	strcpy(sun.sun_path, d->sock);
	H_ASSERT(connect(r->sock, (struct sockaddr *)&sun, sizeof(sun)) == 0, "connect: %s",
		 strerror(errno));
	raw_call(r, &req, &rep, fds, &nfds);
	H_ASSERT(rep.error == 0 && nfds == 0 && rep.abi_version == SL_SHM_ABI_VERSION &&
		 rep.node == d->node, "HELLO: error %d abi %u node %08x", rep.error,
		 rep.abi_version, rep.node);
	r->node = rep.node;

	req = (struct sl_ctl_req){ .hdr.op = SL_CTL_QUEUE_OPEN, .port = port, .depth = depth };
	raw_call(r, &req, &rep, fds, &nfds);
	H_ASSERT(rep.error == 0 && nfds == 3 && rep.port == port, "QUEUE_OPEN: error %d, %u fds",
		 rep.error, nfds);
	r->memfd = fds[0];
	r->sq_efd = fds[1];
	r->cq_efd = fds[2];
	r->port = rep.port;
	r->queue_id = rep.queue_id;
	r->seg_size = rep.seg_size;
	H_ASSERT(fstat(r->memfd, &st) == 0 && (uint64_t)st.st_size == r->seg_size,
		 "memfd size %lld, reply says %llu", (long long)st.st_size,
		 (unsigned long long)r->seg_size);
	r->base = mmap(NULL, r->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, r->memfd, 0);
	H_ASSERT(r->base != MAP_FAILED, "mmap: %s", strerror(errno));
	r->hdr = (const struct sl_shm_hdr *)r->base;
	H_ASSERT(r->hdr->magic == SL_SHM_MAGIC && r->hdr->abi_version == SL_SHM_ABI_VERSION &&
		 r->hdr->seg_size == r->seg_size && r->hdr->node == d->node &&
		 r->hdr->port == port, "segment header");
	H_ASSERT(r->hdr->sq_off.entry_size == sizeof(struct sl_sqe) &&
		 r->hdr->cq_off.entry_size == sizeof(struct sl_cqe), "entry sizes");
	r->sq_n = r->hdr->sq_off.ring_entries;
	r->cq_n = r->hdr->cq_off.ring_entries;
	H_EQ(r->sq_n, depth);
	H_EQ(r->cq_n, depth * SL_CQ_PER_SQ);
	r->sq_head = (uint32_t *)(r->base + r->hdr->sq_off.head);
	r->sq_tail = (uint32_t *)(r->base + r->hdr->sq_off.tail);
	r->cq_head = (uint32_t *)(r->base + r->hdr->cq_off.head);
	r->cq_tail = (uint32_t *)(r->base + r->hdr->cq_off.tail);
	r->sqes = (struct sl_sqe *)(r->base + r->hdr->sq_off.entries);
	r->cqes = (const struct sl_cqe *)(r->base + r->hdr->cq_off.entries);
}

void raw_post(struct raw *r, const struct sl_sqe *sqe)
{
	uint32_t tail = SL_READ_ONCE(r->sq_tail);	/* we are the only producer */
	uint32_t head = sl_load_acquire(r->sq_head);	/* pairs with the daemon's release */

	H_ASSERT(tail - head < r->sq_n, "raw SQ full");
	memcpy(&r->sqes[tail & (r->sq_n - 1)], sqe, sizeof(*sqe));
	sl_store_release(r->sq_tail, tail + 1);	/* publishes the slot */
}

/* Always ring: this client never reads NEED_WAKEUP. */
void raw_ring(struct raw *r)
{
	uint64_t one = 1;

	H_ASSERT(write(r->sq_efd, &one, sizeof(one)) == (ssize_t)sizeof(one),
		 "doorbell: %s", strerror(errno));
}

/* Returns 1 with a CQE, or 0 after @ms (the raw client never sleeps on
 * the CQ eventfd, so it polls). */
int raw_cqe(struct raw *r, struct sl_cqe *out, int ms)
{
	int64_t deadline = h_now_ms() + ms;

	for (;;) {
		uint32_t head = SL_READ_ONCE(r->cq_head);
		uint32_t tail = sl_load_acquire(r->cq_tail);	/* pairs with the daemon */

		if (tail != head) {
			H_ASSERT(tail - head <= r->cq_n, "CQ tail %u head %u", tail, head);
			memcpy(out, &r->cqes[head & (r->cq_n - 1)], sizeof(*out));
			sl_store_release(r->cq_head, head + 1);
			return 1;
		}
		if (h_now_ms() >= deadline)
			return 0;
		h_sleep_ms(1);
	}
}

void raw_close(struct raw *r)
{
	H_ASSERT(munmap(r->base, r->seg_size) == 0, "munmap: %s", strerror(errno));
	H_ASSERT(close(r->memfd) == 0 && close(r->sq_efd) == 0 && close(r->cq_efd) == 0 &&
		 close(r->sock) == 0, "close: %s", strerror(errno));
}
