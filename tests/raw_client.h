/*
 * raw_client.h - a client of sluiced that speaks the control protocol and
 * drives the rings of its queue itself, without libsluice: it posts
 * descriptors that the library would refuse, rings the doorbell at will,
 * and writes the ring indices as it likes.  For the test process; every
 * function is fatal on error (h_fail).
 */
#ifndef SL_TEST_RAW_CLIENT_H
#define SL_TEST_RAW_CLIENT_H

#include <stdint.h>

#include "harness.h"
#include "sl_shm.h"

/* A raw client: its control socket, its queue's fds, and the rings in
 * the mapped segment. */
struct raw {
	int sock, memfd, sq_efd, cq_efd;
	uint32_t seq, node, port, queue_id;
	uint8_t *base;
	uint64_t seg_size;
	const struct sl_shm_hdr *hdr;
	uint32_t *sq_head, *sq_tail, *cq_head, *cq_tail;
	struct sl_sqe *sqes;
	const struct sl_cqe *cqes;
	uint32_t sq_n, cq_n;
};

/* One control request @req and its reply @rep; up to 4 passed fds go to
 * @fds, their count to *@nfds. */
void raw_call(struct raw *r, struct sl_ctl_req *req, struct sl_ctl_rep *rep, int *fds,
	      unsigned *nfds);

/* Connect to @d (HELLO), open a queue on @port with @depth SQ entries and
 * map its segment, checking the segment's header against the reply. */
void raw_open(struct raw *r, const struct h_daemon *d, uint32_t port, uint32_t depth);

/* Publish @sqe in the SQ (fails if it is full); raw_ring rings the
 * doorbell, always (this client never reads NEED_WAKEUP). */
void raw_post(struct raw *r, const struct sl_sqe *sqe);
void raw_ring(struct raw *r);

/* The next CQE into @out: 1, or 0 after @ms without one (the raw client
 * never sleeps on the CQ eventfd, so it polls). */
int raw_cqe(struct raw *r, struct sl_cqe *out, int ms);

/* Unmap the segment and close the fds and the control socket. */
void raw_close(struct raw *r);

#endif
