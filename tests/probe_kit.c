/*
 * probe_kit.c - the two-daemon world of the probe, cancel and claim
 * tests (probe_kit.h).
 */
#define _GNU_SOURCE
#include "probe_kit.h"

#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"

void world_start(struct world *w, struct world_ports ports, size_t buf_len, bool with_queues)
{
	static const char *const names[] = { "A", "B" };

	h_cluster_start(w->nodes, names, 2);
	w->r_addr = (sl_addr_t){ w->nodes[0].node, ports.r };
	w->s_addr = (sl_addr_t){ w->nodes[0].node, ports.s };
	w->t_addr = (sl_addr_t){ w->nodes[1].node, ports.t };
	w->a_none = (sl_addr_t){ w->nodes[0].node, 0 };
	if (!with_queues)
		return;
	H_EQ(sl_open(w->nodes[0].sock, &w->ca), 0);
	H_EQ(sl_open(w->nodes[1].sock, &w->cb), 0);
	H_EQ(sl_queue_open(w->ca, ports.r, 64, &w->r), 0);
	H_EQ(sl_queue_open(w->ca, ports.s, 64, &w->s), 0);
	H_EQ(sl_queue_open(w->cb, ports.t, 64, &w->t), 0);
	w->rbuf = sl_alloc(w->r, buf_len);
	w->sbuf = sl_alloc(w->s, buf_len);
	w->tbuf = sl_alloc(w->t, buf_len);
	H_ASSERT(w->rbuf && w->sbuf && w->tbuf, "sl_alloc");
}

void world_stop(struct world *w)
{
	H_EQ(sl_queue_close(w->r), 0);
	H_EQ(sl_queue_close(w->s), 0);
	H_EQ(sl_queue_close(w->t), 0);
	sl_close(w->ca);
	sl_close(w->cb);
	h_cluster_stop(w->nodes, 2);
}

struct sl_cqe next_cqe(struct sl_queue *q)
{
	struct sl_cqe cqe;

	wait_cqes(q, &cqe, 1, PK_WAIT_MS);
	return cqe;
}

struct sl_cqe probe(struct sl_queue *q, sl_addr_t src, uint64_t tag, uint64_t mask,
		    unsigned flags, uint64_t ctx)
{
	struct sl_cqe cqe;

	H_EQ(sl_probe(q, src, tag, mask, flags, ctx), 0);
	cqe = next_cqe(q);
	H_EQ(cqe.opcode, SL_OP_PROBE);
	H_EQ(cqe.user_ctx, ctx);
	return cqe;
}

void wait_arrival(struct sl_queue *q, uint64_t tag)
{
	int64_t end = h_now_ms() + PK_WAIT_MS;
	struct sl_cqe cqe;

	for (;;) {
		cqe = probe(q, SL_ANY_SOURCE, tag, ~0ull, 0, 0xa77);
		if (cqe.status == SL_OK)
			return;
		H_EQ(cqe.status, SL_ERR_NO_MESSAGE);
		H_ASSERT(h_now_ms() < end, "message with tag %llu did not arrive within %d ms",
			 (unsigned long long)tag, PK_WAIT_MS);
		h_sleep_ms(1);
	}
}

void wait_stat(const struct h_daemon *d, const char *name, uint64_t want)
{
	int64_t deadline = h_now_ms() + PK_WAIT_MS;
	uint64_t v;

	while ((v = h_daemon_stat(d, name)) != want) {
		H_ASSERT(h_now_ms() < deadline, "%s: %s %llu, want %llu within %d ms", d->name,
			 name, (unsigned long long)v, (unsigned long long)want, PK_WAIT_MS);
		h_sleep_ms(10);
	}
}
