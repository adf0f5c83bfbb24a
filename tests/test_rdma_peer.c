/*
 * test_rdma_peer.c - the tcp transport's RDMA semantics, seen from a raw
 * peer that speaks the wire protocol by hand: a rendezvous written
 * correctly lands in the receive and is answered with DONE; a write
 * before HELLO breaks the connection; a write with a key that is no live
 * grant (never granted, or after its rendezvous ended) or outside its
 * grant places no byte and keeps the connection: outside its grant, that
 * rendezvous fails SL_ERR_ACCESS on both sides (docs/rendezvous-grants.md).
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "harness.h"
#include "raw_peer.h"
#include "sl_wire.h"
#include "sluice.h"

#define MSG_LEN 100000u		/* above eager_max: a rendezvous */
#define PEER_PORT 5u
#define RECV_PORT 9001u
#define TAG 7u

/* Read exactly @n bytes within @ms; returns 0, or -1 on EOF/error/timeout. */
static int read_full(int fd, void *buf, size_t n, int ms)
{
	int64_t t0 = h_now_ms();
	size_t got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = ms - (h_now_ms() - t0);
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
			return -1;
		r = read(fd, (uint8_t *)buf + got, n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* The next frame's header; its payload, if any, is skipped. */
static void read_frame(int fd, struct sl_wire_frame *f)
{
	uint8_t hdr[SL_WIRE_HDR_MAX];
	int rc;

	H_EQ(read_full(fd, hdr, SL_WIRE_COMMON_LEN, 5000), 0);
	rc = sl_wire_decode_hdr(hdr, SL_WIRE_COMMON_LEN, f);
	H_ASSERT(rc == -EAGAIN || rc > 0, "decode common header: %d", rc);
	if (rc == -EAGAIN) {
		uint32_t hlen = sl_wire_hdr_len(hdr[1]);

		H_EQ(read_full(fd, hdr + SL_WIRE_COMMON_LEN, hlen - SL_WIRE_COMMON_LEN, 5000), 0);
		H_EQ(sl_wire_decode_hdr(hdr, hlen, f), (int)hlen);
	}
	for (uint32_t left = f->payload_len; left;) {
		uint8_t skip[4096];
		uint32_t n = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);

		H_EQ(read_full(fd, skip, n, 5000), 0);
		left -= n;
	}
}

/* The next frame of @type, skipping ACKs. */
static void expect_frame(int fd, uint8_t type, struct sl_wire_frame *f)
{
	do
		read_frame(fd, f);
	while (f->type == SL_WIRE_ACK && type != SL_WIRE_ACK);
	H_ASSERT(f->type == type, "frame type %u, expected %u", f->type, type);
}

static void send_frame(int fd, struct sl_wire_frame *f, const void *payload)
{
	uint8_t hdr[SL_WIRE_HDR_MAX];
	int n = sl_wire_encode(f, hdr, sizeof(hdr));

	H_ASSERT(n > 0, "encode type %u: %d", f->type, n);
	H_EQ(write(fd, hdr, (size_t)n), n);
	if (f->payload_len)
		H_EQ(write(fd, payload, f->payload_len), (ssize_t)f->payload_len);
}

/* Connect as node @peer_id: the handshake (mode none), then HELLOs. */
static int peer_hello(const struct h_daemon *b, uint32_t peer_id)
{
	struct raw_auth a = { .node = peer_id, .incarnation = 42, .to_node = b->node };
	int fd = h_tcp_connect(b->tcp_port);

	H_EQ(raw_hello(fd, &a, 5000), 0);
	return fd;
}

/* Send the RTS (@seq, @send_id) for a MSG_LEN message and return the
 * daemon's RTR. */
static void rts_to_rtr(int fd, const struct h_daemon *b, struct sl_wire_frame *rtr,
		       uint64_t seq, uint64_t send_id)
{
	struct sl_wire_frame f = { .type = SL_WIRE_RTS, .seq = seq };

	f.u.rts.src_port = PEER_PORT;
	f.u.rts.dst_port = RECV_PORT;
	f.u.rts.dst_node = b->node;
	f.u.rts.tag = TAG;
	f.u.rts.msg_len = MSG_LEN;
	f.u.rts.send_id = send_id;
	send_frame(fd, &f, NULL);
	expect_frame(fd, SL_WIRE_RTR, rtr);
	H_EQ(rtr->u.rtr.send_id, send_id);
	H_EQ(rtr->u.rtr.status, SL_OK);
	H_EQ(rtr->u.rtr.len, MSG_LEN);
	H_ASSERT(rtr->u.rtr.recv_id != 0 && rtr->u.rtr.rkey != 0, "recv_id %u rkey %u",
		 rtr->u.rtr.recv_id, rtr->u.rtr.rkey);
}

static void send_write(int fd, uint64_t raddr, uint32_t rkey, const void *data, uint32_t len,
		       bool imm, uint32_t imm_data)
{
	struct sl_wire_frame f = { .type = SL_WIRE_WRITE, .payload_len = len };

	f.u.write.raddr = raddr;
	f.u.write.rkey = rkey;
	f.u.write.has_imm = imm;
	f.u.write.imm = imm ? imm_data : 0;
	send_frame(fd, &f, data);
}

/* Wait (bounded) until counter @name of @b reads @want. */
static void wait_stat(const struct h_daemon *b, const char *name, uint64_t want)
{
	int64_t t0 = h_now_ms();
	uint64_t v;

	while ((v = h_daemon_stat(b, name)) != want) {
		H_ASSERT(h_now_ms() - t0 < 5000, "%s is %llu, not %llu after 5 s", name,
			 (unsigned long long)v, (unsigned long long)want);
		h_sleep_ms(10);
	}
}

/* Milliseconds until the daemon closes @fd (frames it sends are read and
 * dropped), or -1 after @limit_ms. */
static int64_t ms_until_closed(int fd, int limit_ms)
{
	int64_t t0 = h_now_ms();
	char b[4096];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = limit_ms - (h_now_ms() - t0);

		if (left <= 0)
			return -1;
		if (poll(&pfd, 1, (int)left) == 1 && read(fd, b, sizeof(b)) <= 0)
			return h_now_ms() - t0;
	}
}

/* A peer name whose node id is below @id, so the daemon waits for it to
 * dial (the lower id dials). */
static const char *lower_peer_name(uint32_t id, char *buf, size_t len)
{
	for (unsigned i = 0; i < 10000; i++) {
		snprintf(buf, len, "raw%u", i);
		if (sl_node_id(buf) < id)
			return buf;
	}
	H_ASSERT(false, "no peer name below %08x", id);
	return NULL;
}

START_TEST(rdma_writes_are_checked)
{
	struct h_daemon b;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_wire_frame rtr, f;
	struct sl_cqe cqe;
	char conf[256], name[32];
	uint8_t *rbuf, *data;
	uint32_t peer_id;
	uint16_t port;
	int fd;

	/* The raw peer gets a name whose id is below B's, so B waits for it. */
	lower_peer_name(sl_node_id("rdma-b"), name, sizeof(name));
	peer_id = sl_node_id(name);
	port = h_free_port();
	snprintf(conf, sizeof(conf), "[transport]\nlisten = 127.0.0.1:%u\n[peers]\n%s = 127.0.0.1:%u\n",
		 port, name, H_PORT_NOBODY);
	h_daemon_start_conf(&b, "rdma-b", port, NULL, 0, conf);
	H_EQ(sl_open(b.sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, RECV_PORT, 16, &q), 0);
	rbuf = sl_alloc(q, MSG_LEN);
	H_ASSERT(rbuf, "sl_alloc");
	memset(rbuf, 0xee, MSG_LEN);
	H_EQ(sl_recv(q, (sl_addr_t){ peer_id, PEER_PORT }, TAG, ~0ull, rbuf, MSG_LEN, 1), 0);
	data = malloc(MSG_LEN);
	H_ASSERT(data, "malloc");
	for (uint32_t i = 0; i < MSG_LEN; i++)
		data[i] = (uint8_t)(i * 7 + 1);

	/* A write before HELLO: nobody may write on an anonymous connection. */
	fd = h_tcp_connect(b.tcp_port);
	send_write(fd, 4096, 1, data, 16, false, 0);
	H_ASSERT(ms_until_closed(fd, 2000) >= 0, "anonymous write left the connection open");
	close(fd);

	/* A key that was never granted: refused, no byte placed, counted;
	 * the connection and the rendezvous go on. */
	fd = peer_hello(&b, peer_id);
	rts_to_rtr(fd, &b, &rtr, 1, 77);
	send_write(fd, rtr.u.rtr.raddr, rtr.u.rtr.rkey ^ 0x5a5a0000u, data, 16, false, 0);
	wait_stat(&b, "xport.grant_unknown", 1);
	H_EQ(h_daemon_stat(&b, "xport.access_errors"), 1);
	H_EQ(h_wait_cqe(q, &cqe, 50), 0);
	for (uint32_t i = 0; i < MSG_LEN; i++)
		H_ASSERT(rbuf[i] == 0xee, "byte %u written by a refused write", i);

	/* Done right, on the same connection, in two writes, the last with
	 * the immediate: the receive completes with the data and the peer
	 * gets DONE. */
	send_write(fd, rtr.u.rtr.raddr, rtr.u.rtr.rkey, data, 60000, false, 0);
	send_write(fd, rtr.u.rtr.raddr + 60000, rtr.u.rtr.rkey, data + 60000, MSG_LEN - 60000,
		   true, rtr.u.rtr.recv_id);
	H_EQ(h_wait_cqe(q, &cqe, 5000), 1);
	H_ASSERT(cqe.status == SL_OK && cqe.len == MSG_LEN && cqe.user_ctx == 1 &&
		 cqe.peer.node == peer_id && cqe.peer.port == PEER_PORT && cqe.tag == TAG,
		 "receive: %s len %llu from %08x:%u", sl_strerror(cqe.status),
		 (unsigned long long)cqe.len, cqe.peer.node, cqe.peer.port);
	H_EQ(memcmp(rbuf, data, MSG_LEN), 0);
	expect_frame(fd, SL_WIRE_DONE, &f);
	H_EQ(f.u.done.send_id, 77);
	snprintf(conf, sizeof(conf), "link.%s.rndv_rx_done", name);
	H_EQ(h_daemon_stat(&b, conf), 1);

	/* The same key after the rendezvous ended: its grant died with it. */
	send_write(fd, rtr.u.rtr.raddr, rtr.u.rtr.rkey, data + 1, 16, false, 0);
	wait_stat(&b, "xport.grant_revoked", 1);
	H_EQ(memcmp(rbuf, data, MSG_LEN), 0);

	/* Past its grant (a whole 2 MiB chunk beyond, still inside what the
	 * cache may hold): that rendezvous fails SL_ERR_ACCESS on both sides,
	 * the buffer untouched; the peer ends it with a FIN, as a link does. */
	memset(rbuf, 0xee, MSG_LEN);
	H_EQ(sl_recv(q, (sl_addr_t){ peer_id, PEER_PORT }, TAG, ~0ull, rbuf, MSG_LEN, 2), 0);
	rts_to_rtr(fd, &b, &rtr, 2, 78);
	send_write(fd, rtr.u.rtr.raddr + (2u << 20), rtr.u.rtr.rkey, data, 16, false, 0);
	expect_frame(fd, SL_WIRE_RTR, &f);
	H_EQ(f.u.rtr.send_id, 78);
	H_EQ(f.u.rtr.recv_id, rtr.u.rtr.recv_id);
	H_EQ(f.u.rtr.status, SL_ERR_ACCESS);
	H_EQ(h_wait_cqe(q, &cqe, 5000), 1);
	H_ASSERT(cqe.status == SL_ERR_ACCESS && cqe.user_ctx == 2, "receive %llu: %s",
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
	for (uint32_t i = 0; i < MSG_LEN; i++)
		H_ASSERT(rbuf[i] == 0xee, "byte %u written by a refused write", i);
	f = (struct sl_wire_frame){ .type = SL_WIRE_FIN, .seq = 3 };
	f.u.fin.recv_id = rtr.u.rtr.recv_id;
	f.u.fin.status = SL_ERR_ACCESS;
	send_frame(fd, &f, NULL);
	H_EQ(h_daemon_stat(&b, "xport.grant_above"), 1);
	H_EQ(h_daemon_stat(&b, "xport.access_errors"), 3);

	/* An immediate naming no rendezvous is a protocol error. */
	send_write(fd, 0, 0, NULL, 0, true, rtr.u.rtr.recv_id + 1000);
	H_ASSERT(ms_until_closed(fd, 2000) >= 0, "unknown immediate left the connection open");
	close(fd);
	/* Placed: the two writes done right, and the empty one whose
	 * immediate was refused. */
	H_EQ(h_daemon_stat(&b, "xport.writes_rx"), 3);
	H_EQ(h_daemon_stat(&b, conf), 1);
	H_ASSERT(h_daemon_alive(&b), "daemon died");
	free(data);
	sl_close(ctx);
	h_daemon_stop(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rdma_peer");
	TCase *tc = tcase_create("tcp");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rdma_writes_are_checked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_run_suite(suite());
}
