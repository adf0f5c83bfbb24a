/*
 * test_verbs.c - the pure parts of the verbs transport (verbs_wr.h), on a
 * machine without RDMA: what every work completion status and connection
 * manager event means, how each work request is built (SGEs, opcode,
 * flags, the immediate's byte order), the selective-signaling count of
 * the send queue (which WRs are signaled, which complete when, in what
 * order, how many are outstanding, at SQ-full and after a flush, across
 * the 32-bit wrap, and against a model of an RC QP), the send staging
 * ring, and the lkey map.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xport/verbs_wr.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ------------------------------------------------------------------ */
/* Errors                                                               */
/* ------------------------------------------------------------------ */

static const struct {
	enum ibv_wc_status status;
	int err;
} wc_cases[] = {
	{ IBV_WC_SUCCESS, 0 },
	{ IBV_WC_LOC_LEN_ERR, -EMSGSIZE },
	{ IBV_WC_LOC_QP_OP_ERR, -EIO },
	{ IBV_WC_LOC_EEC_OP_ERR, -EIO },
	{ IBV_WC_LOC_PROT_ERR, -EFAULT },
	{ IBV_WC_WR_FLUSH_ERR, -ECONNRESET },
	{ IBV_WC_MW_BIND_ERR, -EIO },
	{ IBV_WC_BAD_RESP_ERR, -EPROTO },
	{ IBV_WC_LOC_ACCESS_ERR, -EFAULT },
	{ IBV_WC_REM_INV_REQ_ERR, -EPROTO },
	{ IBV_WC_REM_ACCESS_ERR, -EACCES },
	{ IBV_WC_REM_OP_ERR, -EREMOTEIO },
	{ IBV_WC_RETRY_EXC_ERR, -ETIMEDOUT },
	{ IBV_WC_RNR_RETRY_EXC_ERR, -ENOBUFS },
	{ IBV_WC_LOC_RDD_VIOL_ERR, -EIO },
	{ IBV_WC_REM_INV_RD_REQ_ERR, -EPROTO },
	{ IBV_WC_REM_ABORT_ERR, -ECONNABORTED },
	{ IBV_WC_INV_EECN_ERR, -EIO },
	{ IBV_WC_INV_EEC_STATE_ERR, -EIO },
	{ IBV_WC_FATAL_ERR, -EIO },
	{ IBV_WC_RESP_TIMEOUT_ERR, -ETIMEDOUT },
	{ IBV_WC_GENERAL_ERR, -EIO },
	{ IBV_WC_TM_ERR, -EIO },
	{ IBV_WC_TM_RNDV_INCOMPLETE, -EIO },
};

START_TEST(wc_status_each)
{
	ck_assert_msg(verbs_wc_errno(wc_cases[_i].status) == wc_cases[_i].err,
		      "%s: got %d, want %d", ibv_wc_status_str(wc_cases[_i].status),
		      verbs_wc_errno(wc_cases[_i].status), wc_cases[_i].err);
}
END_TEST

/* The table covers the whole enum, in order, and every failure breaks. */
START_TEST(wc_status_all)
{
	int s;

	ck_assert_int_eq(N_OF(wc_cases), IBV_WC_TM_RNDV_INCOMPLETE + 1);
	for (s = 0; s < N_OF(wc_cases); s++)
		ck_assert_int_eq(wc_cases[s].status, s);
	for (s = 1; s <= IBV_WC_TM_RNDV_INCOMPLETE; s++)
		ck_assert_int_lt(verbs_wc_errno((enum ibv_wc_status)s), 0);
	/* A status newer than this build is still a failure. */
	ck_assert_int_eq(verbs_wc_errno((enum ibv_wc_status)(IBV_WC_TM_RNDV_INCOMPLETE + 1)), -EIO);
	ck_assert_int_eq(verbs_wc_errno((enum ibv_wc_status)999), -EIO);
}
END_TEST

static const struct {
	enum rdma_cm_event_type event;
	int status;
	int err;
} cm_cases[] = {
	{ RDMA_CM_EVENT_ADDR_RESOLVED, 0, 0 },
	{ RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, -ENODEV },
	{ RDMA_CM_EVENT_ADDR_ERROR, 0, -EHOSTUNREACH },
	{ RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 0 },
	{ RDMA_CM_EVENT_ROUTE_ERROR, -ETIMEDOUT, -ETIMEDOUT },
	{ RDMA_CM_EVENT_ROUTE_ERROR, 0, -ENETUNREACH },
	{ RDMA_CM_EVENT_CONNECT_REQUEST, 0, 0 },
	{ RDMA_CM_EVENT_CONNECT_RESPONSE, 0, 0 },
	{ RDMA_CM_EVENT_CONNECT_ERROR, -ENOMEM, -ENOMEM },
	{ RDMA_CM_EVENT_CONNECT_ERROR, 0, -ECONNRESET },
	{ RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, -ETIMEDOUT },
	{ RDMA_CM_EVENT_UNREACHABLE, 0, -EHOSTUNREACH },
	/* A positive IB reject reason (8: no listener), not an errno. */
	{ RDMA_CM_EVENT_REJECTED, 8, -ECONNREFUSED },
	{ RDMA_CM_EVENT_REJECTED, 28, -ECONNREFUSED },
	{ RDMA_CM_EVENT_ESTABLISHED, 0, 0 },
	{ RDMA_CM_EVENT_DISCONNECTED, 0, -ECONNRESET },
	{ RDMA_CM_EVENT_DEVICE_REMOVAL, 0, -ENODEV },
	{ RDMA_CM_EVENT_ADDR_CHANGE, 0, 0 },
	{ RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, 0 },
};

START_TEST(cm_event_each)
{
	ck_assert_msg(verbs_cm_errno(cm_cases[_i].event, cm_cases[_i].status) == cm_cases[_i].err,
		      "%s status %d: got %d, want %d", rdma_event_str(cm_cases[_i].event),
		      cm_cases[_i].status, verbs_cm_errno(cm_cases[_i].event, cm_cases[_i].status),
		      cm_cases[_i].err);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */

START_TEST(wr_send)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint8_t buf[128] = { 0 };

	memset(&wr, 0xa5, sizeof(wr));
	memset(sge, 0xa5, sizeof(sge));
	verbs_wr_send(&wr, sge, 77, buf + 64, 56, 0x1234);
	ck_assert_uint_eq(wr.wr_id, 77);
	ck_assert_ptr_eq(wr.next, NULL);
	ck_assert_ptr_eq(wr.sg_list, sge);
	ck_assert_int_eq(wr.num_sge, 1);
	ck_assert_int_eq(wr.opcode, IBV_WR_SEND);
	ck_assert_uint_eq(wr.send_flags, 0);
	ck_assert_uint_eq(sge[0].addr, (uintptr_t)(buf + 64));
	ck_assert_uint_eq(sge[0].length, 56);
	ck_assert_uint_eq(sge[0].lkey, 0x1234);
}
END_TEST

START_TEST(wr_send_inline)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint8_t hdr[72] = { 0 }, payload[100] = { 0 };

	memset(sge, 0xa5, sizeof(sge));
	verbs_wr_send_inline(&wr, sge, 5, hdr, 56, payload, 100);
	ck_assert_uint_eq(wr.wr_id, 5);
	ck_assert_ptr_eq(wr.next, NULL);
	ck_assert_int_eq(wr.opcode, IBV_WR_SEND);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_INLINE);
	ck_assert_int_eq(wr.num_sge, 2);
	ck_assert_uint_eq(sge[0].addr, (uintptr_t)hdr);
	ck_assert_uint_eq(sge[0].length, 56);
	ck_assert_uint_eq(sge[0].lkey, 0);
	ck_assert_uint_eq(sge[1].addr, (uintptr_t)payload);
	ck_assert_uint_eq(sge[1].length, 100);
	ck_assert_uint_eq(sge[1].lkey, 0);

	/* Header only: one SGE, the second untouched. */
	memset(sge, 0xa5, sizeof(sge));
	verbs_wr_send_inline(&wr, sge, 6, hdr, 32, NULL, 0);
	ck_assert_int_eq(wr.num_sge, 1);
	ck_assert_uint_eq(sge[0].length, 32);
	ck_assert_uint_eq(sge[1].length, 0xa5a5a5a5u);

	/* Signaling keeps the inline flag, and can be taken back. */
	verbs_wr_set_signaled(&wr, true);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	verbs_wr_set_signaled(&wr, true);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	verbs_wr_set_signaled(&wr, false);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_INLINE);
}
END_TEST

START_TEST(wr_write)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint8_t src[4096] = { 0 };
	uint32_t imm = 0x01020304;

	verbs_wr_write(&wr, &sge, 9, src + 100, 1000, 0xabc, 0x7f0000001000ull, 0xdef, false, 0);
	ck_assert_uint_eq(wr.wr_id, 9);
	ck_assert_int_eq(wr.opcode, IBV_WR_RDMA_WRITE);
	ck_assert_uint_eq(wr.send_flags, 0);
	ck_assert_int_eq(wr.num_sge, 1);
	ck_assert_ptr_eq(wr.sg_list, &sge);
	ck_assert_uint_eq(sge.addr, (uintptr_t)(src + 100));
	ck_assert_uint_eq(sge.length, 1000);
	ck_assert_uint_eq(sge.lkey, 0xabc);
	ck_assert_uint_eq(wr.wr.rdma.remote_addr, 0x7f0000001000ull);
	ck_assert_uint_eq(wr.wr.rdma.rkey, 0xdef);
	ck_assert_uint_eq(wr.imm_data, 0);

	/* With immediate: network order on the wire, host order back. */
	verbs_wr_write(&wr, &sge, 10, src, 4096, 1, 2, 3, true, imm);
	ck_assert_int_eq(wr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	ck_assert_uint_eq(wr.imm_data, htobe32(imm));
	ck_assert_uint_eq(((const uint8_t *)&wr.imm_data)[0], 0x01);
	ck_assert_uint_eq(((const uint8_t *)&wr.imm_data)[3], 0x04);
	ck_assert_uint_eq(be32toh(wr.imm_data), imm);

	/* Zero length (a rendezvous of an empty receive): no SGE at all. */
	verbs_wr_write(&wr, &sge, 11, NULL, 0, 0, 2, 3, true, 7);
	ck_assert_int_eq(wr.num_sge, 0);
	ck_assert_ptr_eq(wr.sg_list, NULL);
	ck_assert_int_eq(wr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	ck_assert_uint_eq(be32toh(wr.imm_data), 7);

	verbs_wr_set_signaled(&wr, true);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_SIGNALED);
}
END_TEST

/* A grant's bind: exactly the range, remote write only, no SGE; the
 * pointers are the caller's, never dereferenced here. */
START_TEST(wr_bind_mw)
{
	struct ibv_send_wr wr;
	struct ibv_mw *mw = (struct ibv_mw *)(uintptr_t)0x1000;
	struct ibv_mr *mr = (struct ibv_mr *)(uintptr_t)0x2000;

	memset(&wr, 0xa5, sizeof(wr));
	verbs_wr_bind_mw(&wr, 12, mw, 0x1234, mr, 0x7f0000010000ull, 1 << 20);
	ck_assert_uint_eq(wr.wr_id, 12);
	ck_assert_int_eq(wr.opcode, IBV_WR_BIND_MW);
	ck_assert_ptr_eq(wr.next, NULL);
	ck_assert_int_eq(wr.num_sge, 0);
	ck_assert_ptr_eq(wr.sg_list, NULL);
	ck_assert_uint_eq(wr.send_flags, 0);
	ck_assert_ptr_eq(wr.bind_mw.mw, mw);
	ck_assert_uint_eq(wr.bind_mw.rkey, 0x1234);
	ck_assert_ptr_eq(wr.bind_mw.bind_info.mr, mr);
	ck_assert_uint_eq(wr.bind_mw.bind_info.addr, 0x7f0000010000ull);
	ck_assert_uint_eq(wr.bind_mw.bind_info.length, 1 << 20);
	ck_assert_uint_eq(wr.bind_mw.bind_info.mw_access_flags, IBV_ACCESS_REMOTE_WRITE);
}
END_TEST

START_TEST(wr_recv)
{
	struct ibv_recv_wr wr;
	struct ibv_sge sge;
	uint8_t buf[256] = { 0 };

	memset(&wr, 0xa5, sizeof(wr));
	verbs_wr_recv(&wr, &sge, (uintptr_t)buf, buf, sizeof(buf), 0x55);
	ck_assert_uint_eq(wr.wr_id, (uintptr_t)buf);
	ck_assert_ptr_eq(wr.next, NULL);
	ck_assert_ptr_eq(wr.sg_list, &sge);
	ck_assert_int_eq(wr.num_sge, 1);
	ck_assert_uint_eq(sge.addr, (uintptr_t)buf);
	ck_assert_uint_eq(sge.length, 256);
	ck_assert_uint_eq(sge.lkey, 0x55);
}
END_TEST

START_TEST(frame_inline)
{
	ck_assert(verbs_frame_inline(72, 0, 256, 2));
	ck_assert(verbs_frame_inline(56, 200, 256, 2));
	ck_assert(!verbs_frame_inline(56, 201, 256, 2));
	ck_assert(verbs_frame_inline(72, 0, 72, 1));	/* header only: one SGE */
	ck_assert(!verbs_frame_inline(56, 8, 256, 1));	/* a payload needs a second */
	ck_assert(!verbs_frame_inline(32, 0, 0, 2));	/* no inline at all */
	ck_assert(!verbs_frame_inline(72, UINT32_MAX, 256, 2));	/* no overflow */
}
END_TEST

/* ------------------------------------------------------------------ */
/* Selective signaling                                                  */
/* ------------------------------------------------------------------ */

/* Push @n WRs with ids from @id0; returns their first position. */
static uint32_t push_n(struct verbs_sq *sq, uint32_t n, uint64_t id0)
{
	uint32_t i, pos, first = 0;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(verbs_sq_push(sq, id0 + i, &pos), 0);
		if (i == 0)
			first = pos;
	}
	return first;
}

/* Pop @n and check their ids run from @id0. */
static void pop_expect(struct verbs_sq *sq, uint32_t n, uint64_t id0)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		ck_assert_uint_eq(verbs_sq_pop(sq), id0 + i);
}

START_TEST(sq_full_and_in_order)
{
	struct verbs_sq sq;
	uint32_t first, n, pos, i;

	ck_assert_int_eq(verbs_sq_init(&sq, 8, 3), 0);
	ck_assert_uint_eq(verbs_sq_space(&sq), 8);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 0);
	push_n(&sq, 8, 100);
	/* Full: the ninth is refused, nothing changes. */
	ck_assert_int_eq(verbs_sq_push(&sq, 999, &pos), -ENOMEM);
	ck_assert_uint_eq(verbs_sq_space(&sq), 0);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 8);

	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(n, 8);
	/* Every third, and the last of the batch. */
	for (i = 0; i < 8; i++)
		ck_assert_msg(verbs_sq_is_signaled(&sq, i) == (i == 2 || i == 5 || i == 7),
			      "WR %u", i);
	/* Not on the device yet: no completion can name them. */
	ck_assert_int_eq(verbs_sq_complete(&sq, 2), -EINVAL);
	verbs_sq_posted(&sq, n);
	ck_assert_uint_eq(verbs_sq_batch(&sq, &first), 0);

	/* An unsignaled WR cannot complete by itself. */
	ck_assert_int_eq(verbs_sq_complete(&sq, 0), -EINVAL);
	ck_assert_int_eq(verbs_sq_complete(&sq, 1), -EINVAL);
	/* WR 2's completion completes 0, 1, 2, in order. */
	ck_assert_int_eq(verbs_sq_complete(&sq, 2), 3);
	pop_expect(&sq, 3, 100);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 5);
	ck_assert_uint_eq(verbs_sq_space(&sq), 3);
	/* A completed WR's position is no longer on the device. */
	ck_assert_int_eq(verbs_sq_complete(&sq, 2), -EINVAL);
	/* Room again: a new WR after a full SQ. */
	ck_assert_int_eq(verbs_sq_push(&sq, 108, &pos), 0);
	ck_assert_uint_eq(pos, 8);
	ck_assert_int_eq(verbs_sq_complete(&sq, 5), 3);
	pop_expect(&sq, 3, 103);
	ck_assert_int_eq(verbs_sq_complete(&sq, 7), 2);
	pop_expect(&sq, 2, 106);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 1);	/* 108, not posted */
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(first, 8);
	ck_assert_uint_eq(n, 1);
	ck_assert(verbs_sq_is_signaled(&sq, 8));
	verbs_sq_posted(&sq, 1);
	ck_assert_int_eq(verbs_sq_complete(&sq, 8), 1);
	pop_expect(&sq, 1, 108);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 0);
	ck_assert_uint_eq(verbs_sq_space(&sq), 8);
	verbs_sq_fini(&sq);
}
END_TEST

/* The last WR of every batch is signaled, so none waits for a later post;
 * the every-N count carries across batches only when a batch was cut. */
START_TEST(sq_batches)
{
	struct verbs_sq sq;
	uint32_t first, n;

	ck_assert_int_eq(verbs_sq_init(&sq, 64, 4), 0);
	push_n(&sq, 1, 0);
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(n, 1);
	ck_assert(verbs_sq_is_signaled(&sq, 0));
	verbs_sq_posted(&sq, 1);
	push_n(&sq, 2, 1);
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(first, 1);
	ck_assert(!verbs_sq_is_signaled(&sq, 1));
	ck_assert(verbs_sq_is_signaled(&sq, 2));
	verbs_sq_posted(&sq, 2);
	ck_assert_uint_eq(sq.since_signal, 0);

	/* A batch of 5: 3 + 4 (every 4th; counting from the batch, since the
	 * last posted WR was signaled) and 7 (the last). */
	push_n(&sq, 5, 3);
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(n, 5);
	ck_assert(!verbs_sq_is_signaled(&sq, 3));
	ck_assert(!verbs_sq_is_signaled(&sq, 4));
	ck_assert(!verbs_sq_is_signaled(&sq, 5));
	ck_assert(verbs_sq_is_signaled(&sq, 6));
	ck_assert(verbs_sq_is_signaled(&sq, 7));
	/* The device took only two (ibv_post_send() stopped at the third):
	 * they are on the device unsignaled, and the retry counts on. */
	verbs_sq_posted(&sq, 2);
	ck_assert_uint_eq(sq.since_signal, 2);
	ck_assert_int_eq(verbs_sq_complete(&sq, 5), -EINVAL);	/* not posted */
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(first, 5);
	ck_assert_uint_eq(n, 3);
	ck_assert(!verbs_sq_is_signaled(&sq, 5));
	ck_assert(verbs_sq_is_signaled(&sq, 6));	/* 4th since the last signal */
	ck_assert(verbs_sq_is_signaled(&sq, 7));	/* last */
	verbs_sq_posted(&sq, 3);
	ck_assert_int_eq(verbs_sq_complete(&sq, 6), 7);	/* 0 .. 6 */
	pop_expect(&sq, 7, 0);
	ck_assert_int_eq(verbs_sq_complete(&sq, 7), 1);
	pop_expect(&sq, 1, 7);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 0);
	verbs_sq_fini(&sq);
}
END_TEST

/* A broken connection completes everything, posted or not, in order, and
 * the queue is whole again afterwards. */
START_TEST(sq_flush)
{
	struct verbs_sq sq;
	uint32_t first, n, pos;

	ck_assert_int_eq(verbs_sq_init(&sq, 8, 16), 0);
	ck_assert_uint_eq(sq.every, 8);	/* capped at the depth */
	push_n(&sq, 6, 10);
	n = verbs_sq_batch(&sq, &first);
	verbs_sq_posted(&sq, 4);	/* 4 on the device, 2 waiting */
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 6);
	while (verbs_sq_outstanding(&sq)) {
		uint64_t want = 10 + sq.head;

		ck_assert_uint_eq(verbs_sq_pop(&sq), want);
	}
	ck_assert_uint_eq(sq.head, 6);
	ck_assert_uint_eq(sq.posted, 6);
	ck_assert_uint_eq(sq.tail, 6);
	ck_assert_uint_eq(sq.since_signal, 0);
	ck_assert_uint_eq(verbs_sq_space(&sq), 8);
	ck_assert_int_eq(verbs_sq_complete(&sq, 3), -EINVAL);
	/* Usable again, up to full. */
	push_n(&sq, 8, 50);
	ck_assert_int_eq(verbs_sq_push(&sq, 0, &pos), -ENOMEM);
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(first, 6);
	ck_assert_uint_eq(n, 8);
	ck_assert(verbs_sq_is_signaled(&sq, 13));
	verbs_sq_posted(&sq, 8);
	ck_assert_int_eq(verbs_sq_complete(&sq, 13), 8);
	pop_expect(&sq, 8, 50);
	verbs_sq_fini(&sq);
}
END_TEST

/* Free-running positions wrap at 2^32; wr_id carries them as they are. */
START_TEST(sq_wrap)
{
	struct verbs_sq sq;
	uint32_t first, n, i;

	ck_assert_int_eq(verbs_sq_init(&sq, 4, 2), 0);
	sq.head = sq.posted = sq.tail = UINT32_MAX - 1;
	first = push_n(&sq, 4, 0);
	ck_assert_uint_eq(first, UINT32_MAX - 1);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 4);
	ck_assert_uint_eq(verbs_sq_space(&sq), 0);
	n = verbs_sq_batch(&sq, &first);
	ck_assert_uint_eq(n, 4);
	for (i = 0; i < 4; i++)
		ck_assert(verbs_sq_is_signaled(&sq, first + i) == (i == 1 || i == 3));
	verbs_sq_posted(&sq, 4);
	ck_assert_int_eq(verbs_sq_complete(&sq, UINT32_MAX), 2);
	pop_expect(&sq, 2, 0);
	ck_assert_int_eq(verbs_sq_complete(&sq, 1), 2);	/* past the wrap */
	pop_expect(&sq, 2, 2);
	ck_assert_uint_eq(sq.head, 2);
	ck_assert_uint_eq(verbs_sq_outstanding(&sq), 0);
	verbs_sq_fini(&sq);
}
END_TEST

START_TEST(sq_bad_init)
{
	struct verbs_sq sq;

	ck_assert_int_eq(verbs_sq_init(&sq, 0, 1), -EINVAL);
	ck_assert_int_eq(verbs_sq_init(&sq, 1, 0), -EINVAL);
	ck_assert_int_eq(verbs_sq_init(&sq, 5, 1), 0);
	ck_assert_uint_eq(sq.mask, 7);	/* slots: a power of two */
	ck_assert_uint_eq(verbs_sq_space(&sq), 5);	/* the depth, not the slots */
	verbs_sq_fini(&sq);
}
END_TEST

static uint32_t rnd_state = 12345;

static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % n;
}

/*
 * The bookkeeping against a model of an RC QP: random posts, flushes that
 * the device takes whole or cut, and completions.  The device completes
 * WRs in order and reports only signaled ones (and, at a break, flushes
 * everything).  Checks: ids come out once each, in posting order; the
 * outstanding count is exact and never over the depth; every batch ends
 * signaled; no more than every-1 unsignaled WRs follow a signaled one on
 * the device, so the device's SQ always has a completion coming.
 */
START_TEST(sq_model)
{
	struct verbs_sq sq;
	uint64_t next_id = 1000, next_pop = 1000;
	uint32_t depth, every, step, pos, first, n, i, run;

	rnd_state = 777 + (uint32_t)_i;
	depth = 1 + rnd(40);
	every = 1 + rnd(20);
	ck_assert_int_eq(verbs_sq_init(&sq, depth, every), 0);
	for (step = 0; step < 20000; step++) {
		uint32_t op = rnd(10);

		if (op < 4) {
			/* Post a burst; past full it is refused. */
			uint32_t k = 1 + rnd(depth + 2);

			for (i = 0; i < k; i++) {
				int rc = verbs_sq_push(&sq, next_id, &pos);

				if (verbs_sq_outstanding(&sq) == depth && rc < 0) {
					ck_assert_int_eq(rc, -ENOMEM);
					break;
				}
				ck_assert_int_eq(rc, 0);
				next_id++;
			}
		} else if (op < 7) {
			/* Flush: the device takes all, or a prefix. */
			n = verbs_sq_batch(&sq, &first);
			if (n == 0)
				continue;
			ck_assert(verbs_sq_is_signaled(&sq, first + n - 1));
			verbs_sq_posted(&sq, rnd(4) ? n : rnd(n + 1));
			/* The on-device tail after the last signaled WR is
			 * shorter than the interval. */
			run = 0;
			for (i = sq.head; i != sq.posted; i++)
				run = verbs_sq_is_signaled(&sq, i) ? 0 : run + 1;
			ck_assert_uint_eq(run, sq.since_signal);
			ck_assert_uint_lt(run, every);
		} else if (op < 9) {
			/* The device completes the oldest signaled WR. */
			for (i = sq.head; i != sq.posted; i++)
				if (verbs_sq_is_signaled(&sq, i))
					break;
			if (i == sq.posted)
				continue;
			ck_assert_int_eq(verbs_sq_complete(&sq, i), (int)(i - sq.head + 1));
			n = i - sq.head + 1;
			while (n--)
				ck_assert_uint_eq(verbs_sq_pop(&sq), next_pop++);
		} else if (rnd(50) == 0) {
			/* The connection breaks: everything completes. */
			while (verbs_sq_outstanding(&sq))
				ck_assert_uint_eq(verbs_sq_pop(&sq), next_pop++);
			ck_assert_uint_eq(sq.posted, sq.tail);
		}
		ck_assert_uint_eq(verbs_sq_outstanding(&sq), next_id - next_pop);
		ck_assert_uint_le(verbs_sq_outstanding(&sq), depth);
		ck_assert_uint_eq(verbs_sq_space(&sq) + verbs_sq_outstanding(&sq), depth);
		ck_assert_uint_le(sq.posted - sq.head, sq.tail - sq.head);
	}
	verbs_sq_fini(&sq);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Send staging ring                                                    */
/* ------------------------------------------------------------------ */

START_TEST(txring_basic)
{
	struct verbs_txring r;
	uint64_t off, m1, m2, m3;

	verbs_txring_init(&r, 1024);
	ck_assert_int_eq(verbs_txring_alloc(&r, 512, 0, &off), 0);
	ck_assert_uint_eq(off, 0);
	m1 = verbs_txring_mark(&r);
	ck_assert_int_eq(verbs_txring_alloc(&r, 256, 0, &off), 0);
	ck_assert_uint_eq(off, 512);
	m2 = verbs_txring_mark(&r);
	ck_assert_uint_eq(verbs_txring_used(&r), 768);
	/* 256 left: 320 does not fit; 256 does. */
	ck_assert_int_eq(verbs_txring_alloc(&r, 320, 0, &off), -ENOMEM);
	ck_assert_int_eq(verbs_txring_alloc(&r, 256, 0, &off), 0);
	ck_assert_uint_eq(off, 768);
	m3 = verbs_txring_mark(&r);
	ck_assert_int_eq(verbs_txring_alloc(&r, 64, 0, &off), -ENOMEM);
	/* In order: the first WR completes, its bytes come back. */
	verbs_txring_release(&r, m1);
	ck_assert_uint_eq(verbs_txring_used(&r), 512);
	ck_assert_int_eq(verbs_txring_alloc(&r, 512, 0, &off), 0);
	ck_assert_uint_eq(off, 0);
	/* An old mark after a newer one changes nothing. */
	verbs_txring_release(&r, m3);
	verbs_txring_release(&r, m2);
	ck_assert_uint_eq(verbs_txring_used(&r), 512);
}
END_TEST

START_TEST(txring_wrap_and_reserve)
{
	struct verbs_txring r;
	uint64_t off, m;

	verbs_txring_init(&r, 1024);
	ck_assert_int_eq(verbs_txring_alloc(&r, 0, 0, &off), -EINVAL);
	ck_assert_int_eq(verbs_txring_alloc(&r, 1025, 0, &off), -EINVAL);
	ck_assert_int_eq(verbs_txring_alloc(&r, 1000, 100, &off), -EINVAL);	/* never fits */
	ck_assert_int_eq(verbs_txring_alloc(&r, 600, 0, &off), 0);
	m = verbs_txring_mark(&r);
	ck_assert_int_eq(verbs_txring_alloc(&r, 300, 0, &off), 0);
	ck_assert_uint_eq(off, 600);
	/* 124 bytes at the end, none before: a 200 needs to wrap. */
	ck_assert_int_eq(verbs_txring_alloc(&r, 200, 0, &off), -ENOMEM);
	verbs_txring_release(&r, m);	/* [0, 600) free */
	ck_assert_int_eq(verbs_txring_alloc(&r, 200, 0, &off), 0);
	ck_assert_uint_eq(off, 0);	/* wrapped; the tail 124 wasted */
	ck_assert_uint_eq(verbs_txring_used(&r), 300 + 124 + 200);
	/* 400 free: data must leave the reserve, control may take it. */
	ck_assert_int_eq(verbs_txring_alloc(&r, 350, 100, &off), -ENOMEM);
	ck_assert_int_eq(verbs_txring_alloc(&r, 300, 100, &off), 0);
	ck_assert_uint_eq(off, 200);
	ck_assert_int_eq(verbs_txring_alloc(&r, 64, 100, &off), -ENOMEM);
	ck_assert_int_eq(verbs_txring_alloc(&r, 64, 0, &off), 0);
	ck_assert_uint_eq(off, 500);
	ck_assert_uint_eq(verbs_txring_used(&r), 1024 - 36);
}
END_TEST

/* An empty ring starts over at 0, so a frame that fits the ring always
 * fits an empty one (with nothing outstanding, nothing would ever free a
 * wrapped tail). */
START_TEST(txring_empty_restarts)
{
	struct verbs_txring r;
	uint64_t off, m, inline_mark;

	verbs_txring_init(&r, 1024);
	ck_assert_int_eq(verbs_txring_alloc(&r, 600, 0, &off), 0);
	inline_mark = verbs_txring_mark(&r);	/* a WR without ring bytes */
	m = verbs_txring_mark(&r);
	verbs_txring_release(&r, m);
	ck_assert_uint_eq(verbs_txring_used(&r), 0);
	ck_assert_int_eq(verbs_txring_alloc(&r, 1000, 0, &off), 0);
	ck_assert_uint_eq(off, 0);
	/* The older WR's mark, released late, frees nothing new. */
	verbs_txring_release(&r, inline_mark);
	ck_assert_uint_eq(verbs_txring_used(&r), 1000);
}
END_TEST

/* ------------------------------------------------------------------ */
/* lkey map                                                             */
/* ------------------------------------------------------------------ */

START_TEST(keymap_basic)
{
	struct verbs_keymap m;

	ck_assert_int_eq(verbs_keymap_init(&m, 0), -EINVAL);
	ck_assert_int_eq(verbs_keymap_init(&m, 3), 0);
	ck_assert_uint_eq(m.mask, 7);
	ck_assert_uint_eq(verbs_keymap_get(&m, 5), 0);
	ck_assert_int_eq(verbs_keymap_put(&m, 5, 0), -EINVAL);
	ck_assert_int_eq(verbs_keymap_put(&m, 5, 1), 0);
	ck_assert_int_eq(verbs_keymap_put(&m, 5, 2), -EEXIST);
	ck_assert_int_eq(verbs_keymap_put(&m, 0, 2), 0);	/* key 0 is a key */
	ck_assert_int_eq(verbs_keymap_put(&m, UINT32_MAX, 3), 0);
	ck_assert_int_eq(verbs_keymap_put(&m, 6, 4), -ENOSPC);
	ck_assert_uint_eq(verbs_keymap_get(&m, 5), 1);
	ck_assert_uint_eq(verbs_keymap_get(&m, 0), 2);
	ck_assert_uint_eq(verbs_keymap_get(&m, UINT32_MAX), 3);
	ck_assert(verbs_keymap_del(&m, 0));
	ck_assert(!verbs_keymap_del(&m, 0));
	ck_assert_uint_eq(verbs_keymap_get(&m, 0), 0);
	ck_assert_int_eq(verbs_keymap_put(&m, 6, 4), 0);
	ck_assert_uint_eq(verbs_keymap_get(&m, 6), 4);
	ck_assert_uint_eq(m.n, 3);
	verbs_keymap_fini(&m);
}
END_TEST

/* Random puts and deletes against a plain array, with keys that share
 * their low bits (devices hand out keys like index << 8 | tag). */
START_TEST(keymap_model)
{
	enum { MAX = 300, KEYS = 1200 };
	static uint32_t ref[KEYS];	/* value per key index, 0 = absent */
	struct verbs_keymap m;
	uint32_t step, k, n = 0;

	memset(ref, 0, sizeof(ref));
	rnd_state = 4242;
	ck_assert_int_eq(verbs_keymap_init(&m, MAX), 0);
	for (step = 0; step < 200000; step++) {
		uint32_t ki = rnd(KEYS), key = ki << 8 | 0x5a;

		if (rnd(2)) {
			int rc = verbs_keymap_put(&m, key, step + 1);

			if (ref[ki])
				ck_assert_int_eq(rc, -EEXIST);
			else if (n == MAX)
				ck_assert_int_eq(rc, -ENOSPC);
			else {
				ck_assert_int_eq(rc, 0);
				ref[ki] = step + 1;
				n++;
			}
		} else {
			ck_assert(verbs_keymap_del(&m, key) == (ref[ki] != 0));
			if (ref[ki]) {
				ref[ki] = 0;
				n--;
			}
		}
		if (step % 1000 == 0)
			for (k = 0; k < KEYS; k++)
				ck_assert_uint_eq(verbs_keymap_get(&m, k << 8 | 0x5a), ref[k]);
	}
	ck_assert_uint_eq(m.n, n);
	verbs_keymap_fini(&m);
}
END_TEST

static Suite *verbs_suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc;

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, wc_status_each, 0, N_OF(wc_cases));
	tcase_add_test(tc, wc_status_all);
	tcase_add_loop_test(tc, cm_event_each, 0, N_OF(cm_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("work requests");
	tcase_add_test(tc, wr_send);
	tcase_add_test(tc, wr_send_inline);
	tcase_add_test(tc, wr_write);
	tcase_add_test(tc, wr_bind_mw);
	tcase_add_test(tc, wr_recv);
	tcase_add_test(tc, frame_inline);
	suite_add_tcase(s, tc);

	tc = tcase_create("signaling");
	tcase_add_test(tc, sq_full_and_in_order);
	tcase_add_test(tc, sq_batches);
	tcase_add_test(tc, sq_flush);
	tcase_add_test(tc, sq_wrap);
	tcase_add_test(tc, sq_bad_init);
	tcase_add_loop_test(tc, sq_model, 0, 20);
	suite_add_tcase(s, tc);

	tc = tcase_create("staging ring");
	tcase_add_test(tc, txring_basic);
	tcase_add_test(tc, txring_wrap_and_reserve);
	tcase_add_test(tc, txring_empty_restarts);
	suite_add_tcase(s, tc);

	tc = tcase_create("lkey map");
	tcase_add_test(tc, keymap_basic);
	tcase_add_test(tc, keymap_model);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(verbs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
