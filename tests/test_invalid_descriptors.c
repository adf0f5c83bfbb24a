/*
 * test_invalid_descriptors.c - a raw client (tests/raw_client.h) posts
 * descriptors no library would: each completes SL_ERR_INVALID, its
 * neighbours are unharmed, the segment cannot be resized, and a corrupt
 * SQ tail drops only that client (cases C12 and C17, docs/cases.md).
 *
 * Real daemons on TCP loopback (tests/harness.c); the test process is the
 * client, with the round trips of tests/client_kit.h.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "raw_client.h"
#include "sl_barrier.h"
#include "sl_shm.h"
#include "sluice.h"
#include "testutil.h"

#define E_RAW_PORT 3001u
#define E_NORMAL_PORT 3002u
#define E_PING_PORT 3003u

START_TEST(invalid_descriptors_raw)
{
	struct h_daemon node;
	struct sl_ctx *ctx;
	struct sl_queue *nq, *pq;
	struct raw r;
	struct sl_sqe sqes[32], send_ok, recv_ok, probe_ok, claimed_ok, cancel_ok;
	const char *what[32];
	struct sl_cqe cqe;
	uint8_t *rb;
	uint64_t arena;
	unsigned n = 0, i;
	int fds, maps, seals, rc;
	uint32_t cq_tail;
	char buf[64];

	h_daemon_start(&node, "A", 0, NULL, 0);
	rc = sl_open(node.sock, &ctx);
	H_ASSERT(rc == 0, "sl_open: %s", strerror(-rc));
	H_EQ(sl_queue_open(ctx, E_NORMAL_PORT, 64, &nq), 0);
	H_EQ(sl_queue_open(ctx, E_PING_PORT, 64, &pq), 0);
	ping(pq, nq, 10, 0);
	h_daemon_settle(&node, &fds, &maps);

	raw_open(&r, &node, E_RAW_PORT, 32);
	arena = r.hdr->arena_size;
	/* The segment cannot be resized by the client. */
	seals = fcntl(r.memfd, F_GET_SEALS);
	H_ASSERT(seals >= 0, "F_GET_SEALS: %s", strerror(errno));
	H_ASSERT((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW),
		 "seals %#x", seals);
	H_ASSERT(ftruncate(r.memfd, (off_t)r.seg_size / 2) < 0 && errno == EPERM,
		 "shrinking the segment did not fail with EPERM");
	H_ASSERT(ftruncate(r.memfd, (off_t)r.seg_size * 2) < 0 && errno == EPERM,
		 "growing the segment did not fail with EPERM");

	send_ok = (struct sl_sqe){ .opcode = SL_SQE_OP_SEND,
				   .peer = { SL_NODE_LOCAL, E_NORMAL_PORT }, .tag = 9,
				   .addr = 0, .len = 16 };
	recv_ok = (struct sl_sqe){ .opcode = SL_SQE_OP_RECV, .peer = SL_ANY_SOURCE,
				   .tag = 0xbad, .tag_mask = ~0ull, .addr = 4096, .len = 64 };
	/* The probe, claimed-receive and cancel kinds, each well formed but for one field. */
	probe_ok = (struct sl_sqe){ .opcode = SL_SQE_OP_PROBE, .peer = SL_ANY_SOURCE,
				    .tag = 0xbad, .tag_mask = ~0ull };
	claimed_ok = (struct sl_sqe){ .opcode = SL_SQE_OP_RECV_CLAIMED, .addr = 4096,
				      .len = 64, .rsvd2 = 1 };
	cancel_ok = (struct sl_sqe){ .opcode = SL_SQE_OP_CANCEL };
#define E_BAD(desc, base, field, value) \
	do { \
		sqes[n] = (base); \
		sqes[n].field = (value); \
		what[n++] = (desc); \
	} while (0)
	E_BAD("opcode 0", send_ok, opcode, 0);
	E_BAD("opcode 3 (probe) with a buffer", send_ok, opcode, 3);
	E_BAD("opcode 255", recv_ok, opcode, 255);
	E_BAD("send flags 1", send_ok, flags, 1);
	E_BAD("recv flags 0x80", recv_ok, flags, 0x80);
	E_BAD("send rsvd0", send_ok, rsvd0, 1);
	E_BAD("recv rsvd1", recv_ok, rsvd1, 0x10000);
	E_BAD("send rsvd2", send_ok, rsvd2, 1);
	E_BAD("send past the arena end", send_ok, addr, arena - 8);
	E_BAD("recv at the arena end", recv_ok, addr, arena);
	E_BAD("send len arena+1", send_ok, len, arena + 1);
	E_BAD("recv len overflowing addr", recv_ok, len, UINT64_MAX - 32);
	E_BAD("send len UINT64_MAX", send_ok, len, UINT64_MAX);
	E_BAD("send to port 0", send_ok, peer.port, 0);
	E_BAD("send to port 65536", send_ok, peer.port, 65536);
	E_BAD("send to node ANY", send_ok, peer.node, SL_NODE_ANY);
	E_BAD("recv from port 70000", recv_ok, peer.port, 70000);
	E_BAD("recv from port 0", recv_ok, peer.port, 0);
	E_BAD("send tag_mask 1", send_ok, tag_mask, 1);
	E_BAD("send tag_mask all", send_ok, tag_mask, ~0ull);
	E_BAD("opcode 6", cancel_ok, opcode, 6);
	E_BAD("recv rsvd2 (a claim)", recv_ok, rsvd2, 1);
	E_BAD("probe flags claim|discard", probe_ok, flags, SL_PROBE_CLAIM | SL_PROBE_DISCARD);
	E_BAD("probe flags 4", probe_ok, flags, 4);
	E_BAD("probe from port 0", probe_ok, peer.port, 0);
	E_BAD("recv_claimed claim 0", claimed_ok, rsvd2, 0);
	E_BAD("recv_claimed with a tag", claimed_ok, tag, 5);
	E_BAD("recv_claimed with flags", claimed_ok, flags, SL_PROBE_CLAIM);
	E_BAD("cancel with a length", cancel_ok, len, 8);
	E_BAD("cancel with a peer", cancel_ok, peer.port, 7);
#undef E_BAD
	/* addr + len overflows for this one, with a small addr. */
	sqes[11].addr = 64;
	H_ASSERT(n + 1 < r.sq_n, "too many descriptors for the SQ");
	for (i = 0; i < n; i++) {
		sqes[i].user_ctx = 1000 + i;
		raw_post(&r, &sqes[i]);
	}
	/* A good one after them: one failure never fails its neighbours. */
	msg_fill(r.base + r.hdr->arena_off, 16, 42, 0, 9);
	rb = sl_alloc(nq, 64);
	H_ASSERT(rb, "sl_alloc");
	rc = sl_recv(nq, (sl_addr_t){ node.node, E_RAW_PORT }, 9, ~0ull, rb, 64, 77);
	H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	send_ok.user_ctx = 2000;
	raw_post(&r, &send_ok);
	raw_ring(&r);
	for (i = 0; i < n; i++) {
		H_ASSERT(raw_cqe(&r, &cqe, 5000) == 1, "no completion for \"%s\"", what[i]);
		H_ASSERT(cqe.user_ctx == 1000 + i, "completion %u (\"%s\") has ctx %llu", i,
			 what[i], (unsigned long long)cqe.user_ctx);
		H_ASSERT(cqe.status == SL_ERR_INVALID, "\"%s\": %s", what[i],
			 sl_strerror(cqe.status));
	}
	H_ASSERT(raw_cqe(&r, &cqe, 5000) == 1, "no completion for the good send");
	H_ASSERT(cqe.user_ctx == 2000 && cqe.status == SL_OK && cqe.len == 16,
		 "good send: ctx %llu %s", (unsigned long long)cqe.user_ctx,
		 sl_strerror(cqe.status));
	H_EQ(raw_cqe(&r, &cqe, 100), 0);
	wait_cqes(nq, &cqe, 1, 5000);
	H_ASSERT(cqe.user_ctx == 77 && cqe.status == SL_OK && cqe.len == 16 &&
		 addr_eq(cqe.peer, ((sl_addr_t){ node.node, E_RAW_PORT })), "normal client recv");
	H_ASSERT(msg_check(rb, 16, 42, 0, 9), "payload from the raw client");
	ping(pq, nq, 10, 1);

	/* A corrupt SQ tail: the daemon drops this client and nothing else. */
	cq_tail = SL_READ_ONCE(r.cq_tail);
	sl_store_release(r.sq_tail, SL_READ_ONCE(r.sq_head) + r.sq_n + 5);
	raw_ring(&r);
	{
		struct pollfd pfd = { .fd = r.sock, .events = POLLIN };

		H_ASSERT(poll(&pfd, 1, 2000) == 1, "control socket not closed within 2 s");
		H_ASSERT(recv(r.sock, buf, sizeof(buf), MSG_DONTWAIT) == 0,
			 "control socket: no EOF after a corrupt SQ tail");
	}
	h_sleep_ms(50);
	H_EQ(SL_READ_ONCE(r.cq_tail), cq_tail);
	H_ASSERT(h_daemon_alive(&node), "daemon died");
	ping(pq, nq, 10, 2);
	raw_close(&r);
	expect_baseline(&node, fds, maps);

	H_EQ(sl_queue_close(nq), 0);
	H_EQ(sl_queue_close(pq), 0);
	sl_close(ctx);
	h_daemon_stop(&node);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *invalid_descriptors_suite(void)
{
	Suite *s = suite_create("invalid_descriptors");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, invalid_descriptors_raw);
	return s;
}

int main(void)
{
	return h_run_suite(invalid_descriptors_suite());
}
