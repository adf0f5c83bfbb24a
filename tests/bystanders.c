/*
 * bystanders.c - the clients beside an attack on a live link; see
 * bystanders.h.
 */
#include "bystanders.h"

#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"
#include "testutil.h"

#define STREAM_PORT 7100
#define STREAM_TAG 71
#define STREAM_N BYS_STREAM_N
#define STREAM_LEN 1000u
#define STREAM_WINDOW 8u
#define PP_PORT 7200
#define PP_TAG 72

static void stream_receiver_run(const struct h_daemon *d, const struct h_daemon *from,
				struct bys_shared *sh)
{
	/* From the sender's node only: an attacker that is a peer may
	 * send to any port, and its messages are not the stream's. */
	sl_addr_t src = { from->node, SL_PORT_ANY };
	struct cl c;
	struct sl_cqe cqe;
	uint8_t *buf;
	uint32_t next = 0, slot;
	int rc;
	int64_t last = h_now_ms();

	cl_name = "stream-rx";
	cl_open(&c, d, STREAM_PORT, 64);
	buf = sl_alloc(c.q, STREAM_WINDOW * STREAM_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	for (slot = 0; slot < STREAM_WINDOW; slot++) {
		rc = sl_recv(c.q, src, STREAM_TAG, ~0ull, buf + slot * STREAM_LEN, STREAM_LEN,
			     CTX_RECV | slot);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	}
	while (next < STREAM_N) {
		rc = h_wait_cqe(c.q, &cqe, 100);
		CL_REQUIRE(rc >= 0, CL_E_POLL, "wait: %s", strerror(-rc));
		if (rc == 0) {
			CL_REQUIRE(h_now_ms() - last < BYS_STALL_MS, CL_E_TIMEOUT,
				   "no message for %d ms after %u", BYS_STALL_MS, next);
			continue;
		}
		last = h_now_ms();
		slot = CTX_INDEX(cqe.user_ctx);
		CL_REQUIRE(cqe.status == SL_OK && cqe.len == STREAM_LEN && slot < STREAM_WINDOW,
			   CL_E_STATUS, "receive %u: %s len %llu", next, sl_strerror(cqe.status),
			   (unsigned long long)cqe.len);
		CL_REQUIRE(msg_check(buf + slot * STREAM_LEN, STREAM_LEN, 1, next, STREAM_TAG),
			   CL_E_DATA, "message %u not byte-exact", next);
		next++;
		atomic_store(&sh->stream_rx, next);
		rc = sl_recv(c.q, src, STREAM_TAG, ~0ull, buf + slot * STREAM_LEN, STREAM_LEN,
			     CTX_RECV | slot);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	}
	cl_expect_quiet(&c, 200);
	cl_close(&c);
	_exit(CL_OK);
}

/* Sends STREAM_N messages, at most STREAM_WINDOW in flight, a little
 * paced so that the stream lasts across the attack. */
static void stream_sender_run(const struct h_daemon *d, const struct h_daemon *to)
{
	sl_addr_t dst = { to->node, STREAM_PORT };
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	uint32_t sent = 0, done = 0, slot;
	int64_t last = h_now_ms();
	int rc;

	cl_name = "stream-tx";
	cl_open(&c, d, 0, 64);
	buf = sl_alloc(c.q, STREAM_WINDOW * STREAM_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	while (done < STREAM_N) {
		while (sent < STREAM_N && sent - done < STREAM_WINDOW) {
			slot = sent % STREAM_WINDOW;
			msg_fill(buf + slot * STREAM_LEN, STREAM_LEN, 1, sent, STREAM_TAG);
			rc = sl_send(c.q, dst, STREAM_TAG, buf + slot * STREAM_LEN, STREAM_LEN,
				     CTX_SEND | sent);
			CL_REQUIRE(rc == 0, CL_E_POST, "sl_send %u: %s", sent, strerror(-rc));
			sent++;
		}
		rc = h_wait_cqe(c.q, &cqe, 100);
		CL_REQUIRE(rc >= 0, CL_E_POLL, "wait: %s", strerror(-rc));
		if (rc == 0) {
			CL_REQUIRE(h_now_ms() - last < BYS_STALL_MS, CL_E_TIMEOUT,
				   "no completion for %d ms after %u", BYS_STALL_MS, done);
			continue;
		}
		last = h_now_ms();
		CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "send %u: %s",
			   CTX_INDEX(cqe.user_ctx), sl_strerror(cqe.status));
		CL_REQUIRE(CTX_INDEX(cqe.user_ctx) == done, CL_E_ORDER, "send %u completed as %u",
			   CTX_INDEX(cqe.user_ctx), done);
		done++;
		if (done % 16 == 0)
			h_sleep_ms(2);
	}
	cl_close(&c);
	_exit(CL_OK);
}

static void pp_echo_run(const struct h_daemon *d, const struct h_daemon *peer,
			struct bys_shared *sh)
{
	struct cl c;
	struct sl_cqe cqe;
	uint8_t *buf;
	int rc;

	cl_name = "pp-echo";
	cl_open(&c, d, PP_PORT, 8);
	buf = sl_alloc(c.q, 128);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	for (;;) {
		rc = sl_recv(c.q, (sl_addr_t){ peer->node, SL_PORT_ANY }, PP_TAG, ~0ull, buf, 64,
			     CTX_RECV);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
		do {
			rc = h_wait_cqe(c.q, &cqe, 100);
			CL_REQUIRE(rc >= 0, CL_E_POLL, "wait: %s", strerror(-rc));
			if (rc == 0 && atomic_load(&sh->stop))
				_exit(CL_OK);
		} while (rc == 0);
		CL_REQUIRE(cqe.status == SL_OK && cqe.len == 64, CL_E_STATUS, "receive: %s",
			   sl_strerror(cqe.status));
		memcpy(buf + 64, buf, 64);
		rc = sl_send(c.q, cqe.peer, PP_TAG, buf + 64, 64, CTX_SEND);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
		rc = h_wait_cqe(c.q, &cqe, BYS_STALL_MS);
		CL_REQUIRE(rc == 1 && cqe.status == SL_OK, CL_E_STATUS, "send: %s",
			   rc == 1 ? sl_strerror(cqe.status) : "no completion");
	}
}

static void pp_ping_run(const struct h_daemon *d, const struct h_daemon *to,
			struct bys_shared *sh)
{
	sl_addr_t srv = { to->node, PP_PORT };
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	uint64_t round = 0;
	int64_t t0;
	int rc, got;

	cl_name = "pp-ping";
	cl_open(&c, d, 0, 8);
	buf = sl_alloc(c.q, 128);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	while (!atomic_load(&sh->stop)) {
		t0 = h_now_ms();
		memset(buf, (int)(round & 0xff), 64);
		rc = sl_recv(c.q, srv, PP_TAG, ~0ull, buf + 64, 64, CTX_RECV);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
		rc = sl_send(c.q, srv, PP_TAG, buf, 64, CTX_SEND);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_send: %s", strerror(-rc));
		for (got = 0; got < 2;) {
			rc = h_wait_cqe(c.q, &cqe, 100);
			CL_REQUIRE(rc >= 0, CL_E_POLL, "wait: %s", strerror(-rc));
			if (rc == 0) {
				CL_REQUIRE(h_now_ms() - t0 < BYS_STALL_MS, CL_E_TIMEOUT,
					   "round %llu: no completion in %d ms",
					   (unsigned long long)round, BYS_STALL_MS);
				continue;
			}
			CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "%s: %s",
				   cqe.opcode == SL_OP_SEND ? "send" : "receive",
				   sl_strerror(cqe.status));
			got++;
		}
		CL_REQUIRE(all_bytes(buf + 64, 64, (uint8_t)(round & 0xff)), CL_E_DATA,
			   "round %llu: echo not byte-exact", (unsigned long long)round);
		round++;
		atomic_store(&sh->pp_rounds, round);
		h_sleep_ms(1);
	}
	cl_close(&c);
	_exit(CL_OK);
}

void bystanders_start(struct bystanders *b, const struct h_daemon *x, const struct h_daemon *y)
{
	int i;

	b->sh = shared_alloc(sizeof(*b->sh));
	b->names[0] = "stream-rx";
	b->names[1] = "stream-tx";
	b->names[2] = "pp-echo";
	b->names[3] = "pp-ping";
	if ((b->pids[0] = h_fork()) == 0)
		stream_receiver_run(y, x, b->sh);
	if ((b->pids[2] = h_fork()) == 0)
		pp_echo_run(x, y, b->sh);
	h_sleep_ms(200);	/* ports bound before anything is sent there */
	if ((b->pids[1] = h_fork()) == 0)
		stream_sender_run(x, y);
	if ((b->pids[3] = h_fork()) == 0)
		pp_ping_run(y, x, b->sh);
	/* Traffic flows both ways before the attack. */
	for (i = 0; i < 200; i++) {
		if (atomic_load(&b->sh->pp_rounds) >= 10 && atomic_load(&b->sh->stream_rx) >= 50)
			return;
		h_sleep_ms(50);
	}
	fail_clients(b->pids, b->names, 4, "bystanders never got going");
}

/* Let the bystanders run on after the attack (the ping-pong makes 20
 * more round trips), stop them, and require every one to exit 0 with the
 * whole stream received. */
void bystanders_finish(struct bystanders *b)
{
	uint64_t r0 = atomic_load(&b->sh->pp_rounds);
	int i;

	for (i = 0; i < 400 && atomic_load(&b->sh->pp_rounds) < r0 + 20; i++)
		h_sleep_ms(50);
	atomic_store(&b->sh->stop, 1);
	expect_clients_ok(b->pids, b->names, 4, 60000);
	H_EQ(atomic_load(&b->sh->stream_rx), STREAM_N);
	printf("  bystanders: %u stream messages byte-exact, %llu round trips, all SL_OK\n",
	       STREAM_N, (unsigned long long)atomic_load(&b->sh->pp_rounds));
	shared_free(b->sh, sizeof(*b->sh));
}
