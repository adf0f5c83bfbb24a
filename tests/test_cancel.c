/*
 * test_cancel.c - sl_cancel(): a posted receive that has not
 * matched completes SL_ERR_CANCELED, then the cancel SL_OK, in that order;
 * the oldest of two with one user_ctx goes; a cancel of an unknown
 * user_ctx, of a receive that matched, of a claimed receive is
 * SL_ERR_NOT_FOUND; of sends (local and remote, eager and rendezvous)
 * SL_ERR_INVALID; the two completions fit the CQ slots their two
 * descriptors hold; and a cancel racing a message's arrival (the message
 * sent by another process the moment the receive is posted, from this
 * node and from another, eager and rendezvous) ends every receive once,
 * with the message or cancelled, the cancel saying which, and loses no
 * message: a cancelled receive's message is had by a later receive.
 *
 * Real daemons A and B on TCP loopback (tests/harness.c); the test
 * process is the receiver, a child process the racing sender.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "probe_kit.h"
#include "sluice.h"
#include "testutil.h"

#define R_PORT 5101u		/* the receiver, on A */
#define S_PORT 5102u		/* a sender on A */
#define T_PORT 5103u		/* a sender on B */
#define BIG 100000u		/* above the default eager_max (65536): rendezvous */
#define WAIT_MS PK_WAIT_MS

static const struct world_ports ports = { R_PORT, S_PORT, T_PORT };

/* The cancel of @ctx on @q completes @status, alone. */
static void cancel_alone(struct world *w, struct sl_queue *q, uint64_t ctx, int status)
{
	H_EQ(sl_cancel(q, ctx), 0);
	expect_cqe(q, SL_OP_CANCEL, ctx, status, 0, 0,
		   q == w->t ? (sl_addr_t){ w->nodes[1].node, 0 } : w->a_none);
	expect_no_cqe(q, 50);
}

/* ------------------------------------------------------------------ */

/*
 * A posted receive is cancelled: its completion (SL_ERR_CANCELED, its
 * own filter and capacity, buffer untouched), then the cancel's (SL_OK).
 * Of two with one user_ctx the older goes and the younger still takes
 * its message.  A message for a cancelled receive waits unexpected.
 * Unknown user_ctx, a receive that completed, a receive that matched a
 * rendezvous under way, a claimed receive: SL_ERR_NOT_FOUND.
 */
START_TEST(cancel_posted_receive)
{
	struct world w;
	struct sl_cqe cqe;

	world_start(&w, ports, 2 * BIG, true);

	memset(w.rbuf, 0xee, 4096);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 1, ~0ull, w.rbuf, 4096, 7), 0);
	H_EQ(sl_cancel(w.r, 7), 0);
	expect_cqe(w.r, SL_OP_RECV, 7, SL_ERR_CANCELED, 4096, 1,
		   ((sl_addr_t){ SL_NODE_ANY, SL_PORT_ANY }));
	expect_cqe(w.r, SL_OP_CANCEL, 7, SL_OK, 0, 0, w.a_none);
	expect_no_cqe(w.r, 50);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.posted_recvs"), 0);
	/* Its message, sent now, waits for a later receive. */
	msg_fill(w.sbuf, 64, S_PORT, 0, 1);
	H_EQ(sl_send(w.s, w.r_addr, 1, w.sbuf, 64, 1), 0);
	expect_cqe(w.s, SL_OP_SEND, 1, SL_OK, 64, 1, w.r_addr);
	H_ASSERT(all_bytes(w.rbuf, 4096, 0xee), "a cancelled receive's buffer was written");
	wait_arrival(w.r, 1);
	/* Cancelled again: nothing left of it. */
	cancel_alone(&w, w.r, 7, SL_ERR_NOT_FOUND);

	/* Two with ctx 9: the older (tag 2) goes, the younger (tag 3) stays. */
	H_EQ(sl_recv(w.r, (sl_addr_t){ SL_NODE_LOCAL, S_PORT }, 2, ~0ull, w.rbuf, 4096, 9), 0);
	H_EQ(sl_recv(w.r, (sl_addr_t){ SL_NODE_LOCAL, S_PORT }, 3, ~0ull, w.rbuf + 4096, 4096, 9),
	     0);
	H_EQ(sl_cancel(w.r, 9), 0);
	expect_cqe(w.r, SL_OP_RECV, 9, SL_ERR_CANCELED, 4096, 2, w.s_addr);
	expect_cqe(w.r, SL_OP_CANCEL, 9, SL_OK, 0, 0, w.a_none);
	msg_fill(w.sbuf, 65, S_PORT, 1, 3);
	H_EQ(sl_send(w.s, w.r_addr, 3, w.sbuf, 65, 2), 0);
	expect_cqe(w.s, SL_OP_SEND, 2, SL_OK, 65, 3, w.r_addr);
	cqe = next_cqe(w.r);
	H_ASSERT(cqe.opcode == SL_OP_RECV && cqe.user_ctx == 9 && cqe.status == SL_OK &&
		 cqe.tag == 3 && cqe.len == 65, "the younger receive: %s tag %llu",
		 sl_strerror(cqe.status), (unsigned long long)cqe.tag);
	H_ASSERT(msg_check(w.rbuf + 4096, 65, S_PORT, 1, 3), "payload");
	/* It completed: nothing to cancel. */
	cancel_alone(&w, w.r, 9, SL_ERR_NOT_FOUND);
	/* Nobody has that user_ctx. */
	cancel_alone(&w, w.r, 0xdeadbeef, SL_ERR_NOT_FOUND);

	/* A receive that took a rendezvous from B and completed: not found.
	 * (One whose data is still moving is the race's, below.) */
	msg_fill(w.tbuf, BIG, T_PORT, 2, 4);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 4, ~0ull, w.rbuf, BIG, 11), 0);
	H_EQ(sl_send(w.t, w.r_addr, 4, w.tbuf, BIG, 3), 0);
	expect_cqe(w.t, SL_OP_SEND, 3, SL_OK, BIG, 4, w.r_addr);
	expect_cqe(w.r, SL_OP_RECV, 11, SL_OK, BIG, 4, w.t_addr);
	H_ASSERT(msg_check(w.rbuf, BIG, T_PORT, 2, 4), "rendezvous payload");
	cancel_alone(&w, w.r, 11, SL_ERR_NOT_FOUND);

	/* A claimed receive cannot be cancelled. */
	msg_fill(w.tbuf + BIG, BIG, T_PORT, 3, 5);
	H_EQ(sl_send(w.t, w.r_addr, 5, w.tbuf + BIG, BIG, 4), 0);
	wait_arrival(w.r, 5);
	H_EQ(sl_probe(w.r, SL_ANY_SOURCE, 5, ~0ull, SL_PROBE_CLAIM, 12), 0);
	cqe = next_cqe(w.r);
	H_ASSERT(cqe.status == SL_OK && cqe.claim, "claim: %s", sl_strerror(cqe.status));
	H_EQ(sl_recv_claimed(w.r, cqe.claim, w.rbuf + BIG, BIG, 13), 0);
	H_EQ(sl_cancel(w.r, 13), 0);
	{
		struct sl_cqe two[2];
		unsigned i, recv_at = 2, cancel_at = 2;

		wait_cqes(w.r, two, 2, WAIT_MS);
		for (i = 0; i < 2; i++) {
			if (two[i].opcode == SL_OP_RECV)
				recv_at = i;
			else if (two[i].opcode == SL_OP_CANCEL)
				cancel_at = i;
		}
		H_ASSERT(recv_at < 2 && cancel_at < 2, "a receive and a cancel completion");
		H_EQ(two[cancel_at].user_ctx, 13);
		H_EQ(two[cancel_at].status, SL_ERR_NOT_FOUND);
		H_EQ(two[recv_at].user_ctx, 13);
		H_EQ(two[recv_at].status, SL_OK);
		H_EQ(two[recv_at].len, BIG);
		H_ASSERT(msg_check(w.rbuf + BIG, BIG, T_PORT, 3, 5), "claimed payload");
	}
	expect_cqe(w.t, SL_OP_SEND, 4, SL_OK, BIG, 5, w.r_addr);
	printf("cancel: posted receive cancelled (2 completions, in order), the older of two, "
	       "then not found for a spent ctx, an unknown one, a matched and a claimed "
	       "receive\n");
	world_stop(&w);
}
END_TEST

/*
 * Sends cannot be cancelled: a user_ctx naming only sends in flight
 * (a local rendezvous waiting unexpected, one from B waiting for its
 * RTR) is SL_ERR_INVALID, and the sends complete as they would; one
 * naming a completed eager send is SL_ERR_NOT_FOUND.
 */
START_TEST(cancel_send_invalid)
{
	struct world w;
	struct sl_cqe cqe;

	world_start(&w, ports, 2 * BIG, true);
	msg_fill(w.sbuf, BIG, S_PORT, 0, 1);
	H_EQ(sl_send(w.s, w.r_addr, 1, w.sbuf, BIG, 50), 0);
	msg_fill(w.tbuf, BIG, T_PORT, 0, 2);
	H_EQ(sl_send(w.t, w.r_addr, 2, w.tbuf, BIG, 51), 0);
	wait_arrival(w.r, 1);
	wait_arrival(w.r, 2);
	cancel_alone(&w, w.s, 50, SL_ERR_INVALID);
	cancel_alone(&w, w.t, 51, SL_ERR_INVALID);
	/* A receive with the same ctx as a send: the receive is cancelled. */
	H_EQ(sl_recv(w.s, SL_ANY_SOURCE, 99, ~0ull, w.sbuf + BIG, 64, 50), 0);
	H_EQ(sl_cancel(w.s, 50), 0);
	expect_cqe(w.s, SL_OP_RECV, 50, SL_ERR_CANCELED, 64, 99,
		   ((sl_addr_t){ SL_NODE_ANY, SL_PORT_ANY }));
	expect_cqe(w.s, SL_OP_CANCEL, 50, SL_OK, 0, 0, w.a_none);

	/* The sends go on as if nothing was asked.  Each receive names its
	 * tag: the two senders' messages may have arrived in either order. */
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 1, ~0ull, w.rbuf, BIG, 60), 0);
	cqe = next_cqe(w.r);
	H_ASSERT(cqe.status == SL_OK && cqe.tag == 1 && cqe.len == BIG &&
		 msg_check(w.rbuf, BIG, S_PORT, 0, 1), "local rendezvous: %s",
		 sl_strerror(cqe.status));
	expect_cqe(w.s, SL_OP_SEND, 50, SL_OK, BIG, 1, w.r_addr);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 2, ~0ull, w.rbuf + BIG, BIG, 61), 0);
	cqe = next_cqe(w.r);
	H_ASSERT(cqe.status == SL_OK && cqe.tag == 2 && cqe.len == BIG &&
		 msg_check(w.rbuf + BIG, BIG, T_PORT, 0, 2), "rendezvous from B: %s",
		 sl_strerror(cqe.status));
	expect_cqe(w.t, SL_OP_SEND, 51, SL_OK, BIG, 2, w.r_addr);

	/* An eager send completes at once: afterwards there is none. */
	H_EQ(sl_send(w.s, w.r_addr, 3, w.sbuf, 10, 52), 0);
	expect_cqe(w.s, SL_OP_SEND, 52, SL_OK, 10, 3, w.r_addr);
	cancel_alone(&w, w.s, 52, SL_ERR_NOT_FOUND);
	printf("cancel of sends: local and B rendezvous SL_ERR_INVALID (they complete SL_OK "
	       "after), a completed eager send SL_ERR_NOT_FOUND\n");
	world_stop(&w);
}
END_TEST

/*
 * The CQ never overflows: on a queue of depth 1 (CQ of 2) a receive and
 * its cancel fill the CQ exactly; a second pair waits in the SQ until
 * the client polls, then completes the same way.
 */
START_TEST(cancel_cq_room)
{
	struct world w;
	struct sl_ctx *c;
	struct sl_queue *q;
	struct sl_cqe cqe[4];
	uint8_t *buf;
	int rc;
	int64_t end;
	unsigned round;

	world_start(&w, ports, 0, false);
	H_EQ(sl_open(w.nodes[0].sock, &c), 0);
	H_EQ(sl_queue_open(c, R_PORT, 1, &q), 0);
	buf = sl_alloc(q, 64);
	H_ASSERT(buf, "sl_alloc");
	for (round = 0; round < 2; round++) {
		H_EQ(sl_recv(q, SL_ANY_SOURCE, 1, ~0ull, buf, 64, 100 + round), 0);
		/* The SQ has one entry: wait for the daemon to take it. */
		end = h_now_ms() + WAIT_MS;
		while ((rc = sl_cancel(q, 100 + round)) == -EAGAIN) {
			H_ASSERT(h_now_ms() < end, "SQ stayed full");
			h_sleep_ms(1);
		}
		H_EQ(rc, 0);
		/* Both CQ slots fill; a third descriptor is not taken. */
		end = h_now_ms() + WAIT_MS;
		while ((rc = sl_recv(q, SL_ANY_SOURCE, 2, ~0ull, buf, 64, 200 + round)) == -EAGAIN) {
			H_ASSERT(h_now_ms() < end, "SQ stayed full");
			h_sleep_ms(1);
		}
		H_EQ(rc, 0);
		h_sleep_ms(100);
		/* The third's SQE waits: the SQ is full. */
		H_EQ(sl_cancel(q, 200 + round), -EAGAIN);
		wait_cqes(q, cqe, 2, WAIT_MS);
		H_ASSERT(cqe[0].opcode == SL_OP_RECV && cqe[0].user_ctx == 100 + round &&
			 cqe[0].status == SL_ERR_CANCELED, "round %u: first %s", round,
			 sl_strerror(cqe[0].status));
		H_ASSERT(cqe[1].opcode == SL_OP_CANCEL && cqe[1].user_ctx == 100 + round &&
			 cqe[1].status == SL_OK, "round %u: second %s", round,
			 sl_strerror(cqe[1].status));
		/* Now the receive 200 is taken; its cancel too. */
		end = h_now_ms() + WAIT_MS;
		while ((rc = sl_cancel(q, 200 + round)) == -EAGAIN) {
			H_ASSERT(h_now_ms() < end, "SQ stayed full");
			h_sleep_ms(1);
		}
		H_EQ(rc, 0);
		wait_cqes(q, cqe, 2, WAIT_MS);
		H_ASSERT(cqe[0].user_ctx == 200 + round && cqe[0].status == SL_ERR_CANCELED &&
			 cqe[1].user_ctx == 200 + round && cqe[1].opcode == SL_OP_CANCEL &&
			 cqe[1].status == SL_OK, "round %u: the second pair", round);
		expect_no_cqe(q, 50);
	}
	H_EQ(sl_queue_close(q), 0);
	sl_close(c);
	printf("cancel on a depth-1 queue: 2 completions per pair, the next pair held in the "
	       "SQ until polled\n");
	h_cluster_stop(w.nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The race                                                             */
/* ------------------------------------------------------------------ */

#define RACE_MAX 400

/* The sender: message i (tag RACE_TAG0 + i, @len bytes) the moment it
 * reads byte i from @go; then it waits for every completion, which must
 * be SL_OK, and exits 0 (else a cl_exit code). */
#define RACE_TAG0 1000u
static void race_sender(const struct h_daemon *d, uint32_t port, sl_addr_t to, unsigned n,
			size_t len, int go)
{
	struct cl c;
	uint8_t *buf;
	unsigned i, done = 0;
	uint8_t b;
	int rc;

	cl_open(&c, d, port, 256);
	buf = cl_alloc(&c, (size_t)n * len);
	for (i = 0; i < n; i++)
		msg_fill(buf + (size_t)i * len, len, port, i, RACE_TAG0 + i);
	for (i = 0; i < n; i++) {
		rc = h_read_byte(go, &b, CL_STALL_MS);
		CL_REQUIRE(rc == 1, CL_E_SYNC, "no go for message %u: %d", i, rc);
		rc = sl_send(c.q, to, RACE_TAG0 + i, buf + (size_t)i * len, len, i);
		CL_REQUIRE(rc == 0, CL_E_POST, "send %u: %s", i, strerror(-rc));
	}
	while (done < n) {
		struct sl_cqe cqe[16];
		int k, got;

		rc = sl_wait(c.q, CL_STALL_MS);
		CL_REQUIRE(rc > 0, CL_E_TIMEOUT, "%u of %u send completions (%d)", done, n, rc);
		got = sl_poll(c.q, cqe, 16);
		for (k = 0; k < got; k++)
			CL_REQUIRE(cqe[k].status == SL_OK, CL_E_STATUS, "send %llu: %s",
				   (unsigned long long)cqe[k].user_ctx, sl_strerror(cqe[k].status));
		done += (unsigned)got;
	}
	cl_close(&c);
	_exit(0);
}

/*
 * @n rounds: receive i posted, the sender told to send message i, a
 * cancel of receive i after 0..60 µs (every other round: just before).  Each receive completes once:
 * SL_OK with message i (and then its cancel SL_ERR_NOT_FOUND), or
 * SL_ERR_CANCELED followed by its cancel SL_OK.  Then a receive for each
 * cancelled one gets its message; nothing else is left.
 */
static void cancel_race(bool remote, size_t len, unsigned n)
{
	struct world w;
	struct sl_ctx *c;
	struct sl_queue *q;
	struct sl_cqe cqe[8];
	uint8_t *bufs, *recv_state;
	int go[2], st;
	unsigned i, got_msg = 0, cancelled = 0, k;
	pid_t pid;
	sl_addr_t from;

	world_start(&w, ports, 0, false);
	from = remote ? w.t_addr : w.s_addr;
	/* The receiver's queue first: of two queues that ring in one poll
	 * the daemon drains the older first, so that a cancel posted before
	 * the go is taken before the message it lets go. */
	H_EQ(sl_open(w.nodes[0].sock, &c), 0);
	H_EQ(sl_queue_open(c, R_PORT, 64, &q), 0);
	H_ASSERT(pipe(go) == 0, "pipe");
	pid = h_fork();
	if (pid == 0) {
		close(go[1]);	/* the parent's context is left alone */
		race_sender(&w.nodes[remote ? 1 : 0], remote ? T_PORT : S_PORT, w.r_addr, n, len,
			    go[0]);
	}
	close(go[0]);
	bufs = sl_alloc(q, (size_t)n * len);
	H_ASSERT(bufs, "sl_alloc");
	recv_state = calloc(n, 1);	/* 1: had its message, 2: cancelled */
	H_ASSERT(recv_state, "calloc");
	srand(12345);
	for (i = 0; i < n; i++) {
		unsigned recv_done = 0, cancel_done = 0, seen = 0;
		int cancel_status = -1;
		struct timespec ts = { 0, (long)(rand() % 61) * 1000 };

		H_EQ(sl_recv(q, from, RACE_TAG0 + i, ~0ull, bufs + (size_t)i * len, len, i), 0);
		/* Every other round the cancel is posted first: the message
		 * is then on its way while the daemon takes the cancel. */
		if (i % 2) {
			H_EQ(sl_cancel(q, i), 0);
			H_EQ(h_write_byte(go[1], 1), 0);
		} else {
			H_EQ(h_write_byte(go[1], 1), 0);
			nanosleep(&ts, NULL);
			H_EQ(sl_cancel(q, i), 0);
		}
		/* The cancel's completion comes; the receive's before it if the
		 * cancel took it, before or after it if the message did. */
		while (!cancel_done || !recv_done) {
			const struct sl_cqe *e = &cqe[0];

			wait_cqes(q, cqe, 1, WAIT_MS);
			seen++;
			H_EQ(e->user_ctx, i);
			if (e->opcode == SL_OP_CANCEL) {
				H_ASSERT(!cancel_done, "round %u: two cancel completions", i);
				cancel_done = 1;
				cancel_status = e->status;
				H_ASSERT(cancel_status == SL_OK || cancel_status == SL_ERR_NOT_FOUND,
					 "round %u: cancel %s", i, sl_strerror(cancel_status));
				if (cancel_status == SL_OK)
					H_ASSERT(recv_done, "round %u: cancel SL_OK before its "
						 "receive's completion", i);
				continue;
			}
			H_EQ(e->opcode, SL_OP_RECV);
			H_ASSERT(!recv_done, "round %u: two receive completions", i);
			recv_done = 1;
			if (e->status == SL_OK) {
				H_EQ(e->len, len);
				H_EQ(e->tag, RACE_TAG0 + i);
				H_ASSERT(msg_check(bufs + (size_t)i * len, len, from.port, i,
						   RACE_TAG0 + i), "round %u: payload", i);
				recv_state[i] = 1;
			} else {
				H_ASSERT(e->status == SL_ERR_CANCELED, "round %u: receive %s", i,
					 sl_strerror(e->status));
				recv_state[i] = 2;
			}
		}
		H_ASSERT((recv_state[i] == 1) == (cancel_status == SL_ERR_NOT_FOUND),
			 "round %u: receive %s but cancel %s", i,
			 recv_state[i] == 1 ? "had its message" : "cancelled",
			 sl_strerror(cancel_status));
		H_EQ(seen, 2);
		if (recv_state[i] == 1)
			got_msg++;
		else
			cancelled++;
	}
	/* Every cancelled receive's message is there for a new receive. */
	for (i = 0; i < n; i++) {
		if (recv_state[i] != 2)
			continue;
		H_EQ(sl_recv(q, from, RACE_TAG0 + i, ~0ull, bufs + (size_t)i * len, len,
			     10000 + i), 0);
		wait_cqes(q, cqe, 1, WAIT_MS);
		H_ASSERT(cqe[0].user_ctx == 10000 + i && cqe[0].status == SL_OK &&
			 cqe[0].len == len && cqe[0].tag == RACE_TAG0 + i &&
			 msg_check(bufs + (size_t)i * len, len, from.port, i, RACE_TAG0 + i),
			 "message %u after its receive was cancelled: %s", i,
			 sl_strerror(cqe[0].status));
	}
	h_wait_children(&pid, 1, WAIT_MS, &st);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender: %s",
		 client_status_str(pid, st));
	H_EQ(sl_probe(q, SL_ANY_SOURCE, 0, 0, 0, 1), 0);
	wait_cqes(q, cqe, 1, WAIT_MS);
	H_EQ(cqe[0].status, SL_ERR_NO_MESSAGE);
	expect_no_cqe(q, 50);
	for (k = 0; k < 2; k++)
		H_EQ(h_daemon_stat(&w.nodes[k], "daemon.unexpected_bytes"), 0);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.posted_recvs"), 0);
	printf("cancel race, %s, %zu bytes: %u rounds, %u had their message, %u cancelled "
	       "(each message then received)\n", remote ? "from B" : "local", len, n, got_msg,
	       cancelled);
	close(go[1]);
	free(recv_state);
	H_EQ(sl_queue_close(q), 0);
	sl_close(c);
	h_cluster_stop(w.nodes, 2);
}

START_TEST(cancel_race_local_eager)
{
	cancel_race(false, 256, RACE_MAX);
}
END_TEST

START_TEST(cancel_race_remote_eager)
{
	cancel_race(true, 256, RACE_MAX);
}
END_TEST

START_TEST(cancel_race_local_rndv)
{
	cancel_race(false, BIG, 40);
}
END_TEST

START_TEST(cancel_race_remote_rndv)
{
	cancel_race(true, BIG, 40);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *cancel_suite(void)
{
	Suite *s = suite_create("cancel");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, cancel_posted_receive);
	tcase_add_test(tc, cancel_send_invalid);
	tcase_add_test(tc, cancel_cq_room);
	tc = h_tcase(s, "race", 240);
	tcase_add_test(tc, cancel_race_local_eager);
	tcase_add_test(tc, cancel_race_remote_eager);
	tcase_add_test(tc, cancel_race_local_rndv);
	tcase_add_test(tc, cancel_race_remote_rndv);
	return s;
}

int main(void)
{
	return h_run_suite(cancel_suite());
}
