/*
 * rxe_grant_probe.c - one rendezvous through a memory-window grant, for
 * scripts/rxe-suite (the verbs transport on Soft-RoCE, where the Check
 * harness's daemons on 127.0.0.1 cannot run).
 *
 *   rxe_grant_probe SENDER_SOCKET RECEIVER_SOCKET ok|access
 *
 * The receiver (a queue on RECEIVER_SOCKET's node) has three adjacent
 * buffers in its arena: a victim below, the 1 MiB target, a victim above.
 * The sender (on SENDER_SOCKET's node) sends it 1 MiB by rendezvous.
 * "ok": the send and the receive complete SL_OK and the target holds the
 * message.  "access": the sending daemon writes outside the grant
 * ([fault] write_shift_bytes); the send must complete SL_ERR_ACCESS, and
 * the receive SL_ERR_ACCESS or not at all (given back: it stays posted,
 * as after any rendezvous that could not be moved).  Either way neither
 * victim may change.  Then the bystanders: 16 eager messages sender ->
 * receiver and one 256 KiB rendezvous receiver -> sender (its daemon has
 * no fault) complete SL_OK, byte-exact.  Prints "probe: ..." lines and
 * exits 0 when every check held, 1 otherwise.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice.h"

#define TARGET_LEN (1u << 20)		/* two 512 KiB write segments */
#define VICTIM_LEN (64u << 10)
#define VICTIM_BYTE 0x5a
#define RECV_PORT 7300
#define SEND_PORT 7301
#define ATTACK_TAG 77
#define EAGER_TAG 5
#define EAGER_N 16
#define EAGER_LEN 4096
#define BACK_TAG 6
#define BACK_LEN (256u << 10)
/* Under emulation a rendezvous over a reconnect takes seconds: give up
 * only after this long without any completion. */
#define NO_PROGRESS_MS 60000

static int failures;

static void check(bool ok, const char *what)
{
	printf("probe: %s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(i * 7 + seed * 13 + (i >> 12));
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(seed, i);
}

static size_t differing(const uint8_t *buf, size_t len, uint32_t seed)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += buf[i] != pattern(seed, i);
	return n;
}

static size_t not_byte(const uint8_t *buf, size_t len, uint8_t b)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += buf[i] != b;
	return n;
}

/* The next completion of @q within @ms; 1, 0 on timeout, or -errno. */
static int wait_cqe(struct sl_queue *q, struct sl_cqe *cqe, int ms)
{
	int64_t end = now_ms() + ms;

	for (;;) {
		int n = sl_poll(q, cqe, 1);
		int64_t left = end - now_ms();

		if (n != 0)
			return n;
		if (left <= 0)
			return 0;
		n = sl_wait(q, left > 100 ? 100 : (int)left);
		if (n < 0 && n != -EINTR)
			return n;
	}
}

static struct sl_queue *open_queue(const char *sock, uint32_t port, struct sl_ctx **ctx)
{
	struct sl_queue *q = NULL;
	int rc = sl_open(sock, ctx);

	if (rc == 0)
		rc = sl_queue_open(*ctx, port, 64, &q);
	if (rc) {
		printf("probe: FAILED: %s port %u: %s\n", sock, port, strerror(-rc));
		exit(1);
	}
	return q;
}

/* A receive on @rxq for @len bytes from @src, then the matching send from
 * @txq to @dst; both with @ctx.  Exits when either cannot be posted. */
static void post_pair(struct sl_queue *rxq, sl_addr_t src, void *rbuf, struct sl_queue *txq,
		      sl_addr_t dst, const void *sbuf, size_t len, uint64_t tag, uint64_t ctx)
{
	int rc = sl_recv(rxq, src, tag, ~0ull, rbuf, len, ctx);

	if (rc == 0)
		rc = sl_send(txq, dst, tag, sbuf, len, ctx);
	if (rc) {
		printf("probe: FAILED: posting message %llu (tag %llu): %s\n",
		       (unsigned long long)ctx, (unsigned long long)tag, strerror(-rc));
		exit(1);
	}
}

/* Wait for one completion and say what it was. */
static bool expect_cqe(struct sl_queue *q, const char *who, int want, struct sl_cqe *cqe)
{
	int rc = wait_cqe(q, cqe, NO_PROGRESS_MS);
	char line[160];

	if (rc != 1) {
		snprintf(line, sizeof(line), "%s: no completion within %d ms (rc %d)", who,
			 NO_PROGRESS_MS, rc);
		check(false, line);
		return false;
	}
	snprintf(line, sizeof(line), "%s completed %s (want %s)", who, sl_strerror(cqe->status),
		 sl_strerror(want));
	check(cqe->status == want, line);
	return cqe->status == want;
}

int main(int argc, char **argv)
{
	struct sl_ctx *sctx, *rctx;
	struct sl_queue *sq, *rq;
	struct sl_cqe cqe;
	uint8_t *rbuf, *sbuf, *target;
	bool want_access;
	char line[200];
	int rc, i;

	if (argc != 4 || (strcmp(argv[3], "ok") && strcmp(argv[3], "access"))) {
		fprintf(stderr, "usage: rxe_grant_probe SENDER_SOCKET RECEIVER_SOCKET ok|access\n");
		return 2;
	}
	want_access = strcmp(argv[3], "access") == 0;
	sq = open_queue(argv[1], SEND_PORT, &sctx);
	rq = open_queue(argv[2], RECV_PORT, &rctx);
	sl_addr_t to = { sl_local_node(rctx), RECV_PORT };
	sl_addr_t from = { sl_local_node(sctx), SEND_PORT };

	rbuf = sl_alloc(rq, 2 * VICTIM_LEN + TARGET_LEN + EAGER_N * EAGER_LEN + BACK_LEN);
	sbuf = sl_alloc(sq, TARGET_LEN + EAGER_N * EAGER_LEN + BACK_LEN);
	if (!rbuf || !sbuf) {
		printf("probe: FAILED: sl_alloc\n");
		return 1;
	}
	target = rbuf + VICTIM_LEN;
	memset(rbuf, VICTIM_BYTE, VICTIM_LEN);
	memset(target, 0, TARGET_LEN);
	memset(target + TARGET_LEN, VICTIM_BYTE, VICTIM_LEN);
	fill(sbuf, TARGET_LEN, 1);

	/* The rendezvous. */
	post_pair(rq, from, target, sq, to, sbuf, TARGET_LEN, ATTACK_TAG, 1);
	expect_cqe(sq, "the 1 MiB send", want_access ? SL_ERR_ACCESS : SL_OK, &cqe);
	if (!want_access) {
		if (expect_cqe(rq, "its receive", SL_OK, &cqe)) {
			size_t bad = differing(target, TARGET_LEN, 1);

			snprintf(line, sizeof(line), "the target holds the message (%zu bytes differ)",
				 bad);
			check(cqe.len == TARGET_LEN && bad == 0, line);
		}
	} else {
		rc = wait_cqe(rq, &cqe, 5000);
		snprintf(line, sizeof(line), "its receive: %s", rc == 1 ?
			 sl_strerror(cqe.status) : "still posted (given back) after 5 s");
		check(rc == 0 || (rc == 1 && cqe.status == SL_ERR_ACCESS), line);
	}
	size_t below = not_byte(rbuf, VICTIM_LEN, VICTIM_BYTE);
	size_t above = not_byte(target + TARGET_LEN, VICTIM_LEN, VICTIM_BYTE);

	snprintf(line, sizeof(line), "victims intact (%zu bytes below, %zu above changed)", below,
		 above);
	check(below == 0 && above == 0, line);

	/* Bystanders: eager sender -> receiver, a rendezvous back. */
	uint8_t *eager_rx = target + TARGET_LEN + VICTIM_LEN, *back_rx = sbuf + TARGET_LEN;
	uint8_t *eager_tx = back_rx + BACK_LEN, *back_tx = eager_rx + EAGER_N * EAGER_LEN;
	unsigned eager_ok = 0, eager_sent = 0;

	for (i = 0; i < EAGER_N; i++) {
		fill(eager_tx + (size_t)i * EAGER_LEN, EAGER_LEN, 100 + i);
		post_pair(rq, from, eager_rx + (size_t)i * EAGER_LEN, sq, to,
			  eager_tx + (size_t)i * EAGER_LEN, EAGER_LEN, EAGER_TAG, 100 + i);
	}
	fill(back_tx, BACK_LEN, 7);
	post_pair(sq, to, back_rx, rq, from, back_tx, BACK_LEN, BACK_TAG, 200);
	/* The sender's queue: 16 sends and the receive back; the
	 * receiver's: 16 receives and the send back. */
	bool back_rx_ok = false, back_tx_ok = false;

	for (i = 0; i < 2 * (EAGER_N + 1); i++) {
		struct sl_queue *q = i < EAGER_N + 1 ? sq : rq;

		rc = wait_cqe(q, &cqe, NO_PROGRESS_MS);
		if (rc != 1) {
			printf("probe: FAILED: bystanders: no completion within %d ms "
			       "(%u of %u eager delivered)\n", NO_PROGRESS_MS, eager_ok, EAGER_N);
			failures++;
			break;
		}
		if (cqe.user_ctx == 200) {
			if (q == sq)
				back_rx_ok = cqe.status == SL_OK && cqe.len == BACK_LEN &&
					     differing(back_rx, BACK_LEN, 7) == 0;
			else
				back_tx_ok = cqe.status == SL_OK;
		} else if (q == sq) {
			eager_sent += cqe.status == SL_OK;
		} else {
			unsigned k = (unsigned)cqe.user_ctx - 100;

			eager_ok += cqe.status == SL_OK && cqe.len == EAGER_LEN && k < EAGER_N &&
				    differing(eager_rx + (size_t)k * EAGER_LEN, EAGER_LEN,
					      100 + k) == 0;
		}
	}
	snprintf(line, sizeof(line), "bystanders: %u of %u eager sent, %u of %u received "
		 "byte-exact; 256 KiB back: send %s, receive %s", eager_sent, EAGER_N, eager_ok,
		 EAGER_N, back_tx_ok ? "OK" : "failed", back_rx_ok ? "byte-exact" : "failed");
	check(eager_sent == EAGER_N && eager_ok == EAGER_N && back_tx_ok && back_rx_ok, line);

	sl_queue_close(sq);
	sl_queue_close(rq);
	sl_close(sctx);
	sl_close(rctx);
	printf("probe: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
