/*
 * verbs_wr.c - the pure parts of the verbs transport; see verbs_wr.h.
 */
#include "autoconfig.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xport/verbs_wr.h"

/* ---- errors ---- */

int verbs_wc_errno(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return -ECONNRESET;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return -ETIMEDOUT;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ENOBUFS;
	case IBV_WC_REM_ACCESS_ERR:
		return -EACCES;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
		return -EFAULT;
	case IBV_WC_LOC_LEN_ERR:
		return -EMSGSIZE;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return -EPROTO;
	case IBV_WC_REM_OP_ERR:
		return -EREMOTEIO;
	case IBV_WC_REM_ABORT_ERR:
		return -ECONNABORTED;
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
	case IBV_WC_INV_EECN_ERR:
	case IBV_WC_INV_EEC_STATE_ERR:
	case IBV_WC_FATAL_ERR:
	case IBV_WC_GENERAL_ERR:
	case IBV_WC_TM_ERR:
	case IBV_WC_TM_RNDV_INCOMPLETE:
		return -EIO;
	}
	return -EIO;	/* a status newer than this build: still a failure */
}

int verbs_cm_errno(enum rdma_cm_event_type event, int status)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		return status < 0 ? status : -EHOSTUNREACH;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return status < 0 ? status : -ENETUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
		return status < 0 ? status : -EHOSTUNREACH;
	case RDMA_CM_EVENT_REJECTED:
		/* status is an IB reject reason (no listener, consumer
		 * reject, ...), not an errno. */
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return status < 0 ? status : -ECONNRESET;
	case RDMA_CM_EVENT_DISCONNECTED:
		return -ECONNRESET;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return 0;
	}
}

/* ---- work requests ---- */

void verbs_wr_send(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		   const void *addr, uint32_t len, uint32_t lkey)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)addr;
	sge->length = len;
	sge->lkey = lkey;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
}

void verbs_wr_send_inline(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
			  const void *hdr, uint32_t hdr_len, const void *payload,
			  uint32_t payload_len)
{
	memset(wr, 0, sizeof(*wr));
	sge[0].addr = (uintptr_t)hdr;
	sge[0].length = hdr_len;
	sge[0].lkey = 0;
	wr->num_sge = 1;
	if (payload_len) {
		sge[1].addr = (uintptr_t)payload;
		sge[1].length = payload_len;
		sge[1].lkey = 0;
		wr->num_sge = 2;
	}
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_INLINE;
}

void verbs_wr_write(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		    const void *laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
		    uint32_t rkey, bool has_imm, uint32_t imm)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	if (len) {
		sge->addr = (uintptr_t)laddr;
		sge->length = len;
		sge->lkey = lkey;
		wr->sg_list = sge;
		wr->num_sge = 1;
	}
	wr->opcode = has_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	/* The wire carries it big-endian; the target's be32toh() undoes it. */
	if (has_imm)
		wr->imm_data = htobe32(imm);
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
}

void verbs_wr_bind_mw(struct ibv_send_wr *wr, uint64_t wr_id, struct ibv_mw *mw,
		      uint32_t rkey, struct ibv_mr *mr, uint64_t addr, uint64_t len)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = IBV_WR_BIND_MW;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info.mr = mr;
	wr->bind_mw.bind_info.addr = addr;
	wr->bind_mw.bind_info.length = len;
	wr->bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
}

void verbs_wr_set_signaled(struct ibv_send_wr *wr, bool signaled)
{
	if (signaled)
		wr->send_flags |= IBV_SEND_SIGNALED;
	else
		wr->send_flags &= ~(unsigned)IBV_SEND_SIGNALED;
}

void verbs_wr_recv(struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		   void *addr, uint32_t len, uint32_t lkey)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)addr;
	sge->length = len;
	sge->lkey = lkey;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
}

bool verbs_frame_inline(uint32_t hdr_len, uint32_t payload_len, uint32_t max_inline,
			uint32_t max_sge)
{
	if (payload_len && max_sge < 2)
		return false;
	return (uint64_t)hdr_len + payload_len <= max_inline;
}

/* ---- selective signaling ---- */

int verbs_sq_init(struct verbs_sq *sq, uint32_t depth, uint32_t every)
{
	uint32_t slots = 1;

	memset(sq, 0, sizeof(*sq));
	if (depth == 0 || every == 0 || depth > (1u << 30))
		return -EINVAL;
	while (slots < depth)
		slots <<= 1;
	sq->wr_id = calloc(slots, sizeof(*sq->wr_id));
	sq->signaled = calloc(slots, sizeof(*sq->signaled));
	if (!sq->wr_id || !sq->signaled) {
		verbs_sq_fini(sq);
		return -ENOMEM;
	}
	sq->depth = depth;
	sq->mask = slots - 1;
	sq->every = every < depth ? every : depth;
	return 0;
}

void verbs_sq_fini(struct verbs_sq *sq)
{
	free(sq->wr_id);
	free(sq->signaled);
	sq->wr_id = NULL;
	sq->signaled = NULL;
}

uint32_t verbs_sq_space(const struct verbs_sq *sq)
{
	return sq->depth - (sq->tail - sq->head);
}

uint32_t verbs_sq_outstanding(const struct verbs_sq *sq)
{
	return sq->tail - sq->head;
}

int verbs_sq_push(struct verbs_sq *sq, uint64_t wr_id, uint32_t *pos)
{
	uint32_t s;

	if (verbs_sq_space(sq) == 0)
		return -ENOMEM;
	s = verbs_sq_slot(sq, sq->tail);
	sq->wr_id[s] = wr_id;
	sq->signaled[s] = false;
	*pos = sq->tail++;
	return 0;
}

uint32_t verbs_sq_batch(struct verbs_sq *sq, uint32_t *first)
{
	uint32_t n = sq->tail - sq->posted, i, run = sq->since_signal;

	*first = sq->posted;
	for (i = 0; i < n; i++) {
		bool sig = ++run >= sq->every || i == n - 1;

		sq->signaled[verbs_sq_slot(sq, sq->posted + i)] = sig;
		if (sig)
			run = 0;
	}
	return n;
}

bool verbs_sq_is_signaled(const struct verbs_sq *sq, uint32_t pos)
{
	return sq->signaled[verbs_sq_slot(sq, pos)];
}

void verbs_sq_posted(struct verbs_sq *sq, uint32_t n)
{
	if (n > sq->tail - sq->posted)
		n = sq->tail - sq->posted;
	while (n--) {
		if (sq->signaled[verbs_sq_slot(sq, sq->posted)])
			sq->since_signal = 0;
		else
			sq->since_signal++;
		sq->posted++;
	}
}

int verbs_sq_complete(const struct verbs_sq *sq, uint32_t pos)
{
	uint32_t d = pos - sq->head;

	if (d >= sq->posted - sq->head || !sq->signaled[verbs_sq_slot(sq, pos)])
		return -EINVAL;
	return (int)(d + 1);
}

uint64_t verbs_sq_pop(struct verbs_sq *sq)
{
	uint64_t id = sq->wr_id[verbs_sq_slot(sq, sq->head)];

	/* A flush completes WRs that never reached the device too. */
	if (sq->posted == sq->head)
		sq->posted++;
	sq->head++;
	if (sq->head == sq->posted)
		sq->since_signal = 0;	/* nothing on the device */
	return id;
}

/* ---- the send staging ring ---- */

void verbs_txring_init(struct verbs_txring *r, uint64_t size)
{
	r->size = size;
	r->alloc = 0;
	r->freed = 0;
}

int verbs_txring_alloc(struct verbs_txring *r, uint32_t len, uint64_t reserve, uint64_t *off)
{
	uint64_t pos, waste = 0;

	if (len == 0 || reserve >= r->size || len > r->size - reserve)
		return -EINVAL;
	if (r->alloc == r->freed) {
		/* Empty: start over at offset 0, so that a frame that fits
		 * the ring always fits an empty one.  Marks only grow, so the
		 * marks of WRs still outstanding stay behind. */
		r->alloc = (r->alloc + r->size - 1) / r->size * r->size;
		r->freed = r->alloc;
	}
	pos = r->alloc % r->size;
	if (pos + len > r->size)
		waste = r->size - pos;
	if (r->alloc - r->freed + waste + len + reserve > r->size)
		return -ENOMEM;
	r->alloc += waste;
	*off = r->alloc % r->size;
	r->alloc += len;
	return 0;
}

uint64_t verbs_txring_mark(const struct verbs_txring *r)
{
	return r->alloc;
}

void verbs_txring_release(struct verbs_txring *r, uint64_t mark)
{
	if (mark > r->freed)
		r->freed = mark;
}

uint64_t verbs_txring_used(const struct verbs_txring *r)
{
	return r->alloc - r->freed;
}

/* ---- lkey -> registration ---- */

static uint32_t key_home(const struct verbs_keymap *m, uint32_t key)
{
	/* Fibonacci hashing: keys are device-chosen and may share low bits. */
	return (uint32_t)(key * 2654435761u) >> m->shift;
}

int verbs_keymap_init(struct verbs_keymap *m, uint32_t max)
{
	uint32_t slots = 2, bits = 1;

	memset(m, 0, sizeof(*m));
	if (max == 0 || max > (1u << 30))
		return -EINVAL;
	while (slots < 2ull * max) {
		slots <<= 1;
		bits++;
	}
	/* Only touched as used: a large table costs address space. */
	m->e = calloc(slots, sizeof(*m->e));
	if (!m->e)
		return -ENOMEM;
	m->mask = slots - 1;
	m->shift = 32 - bits;
	m->cap_entries = max;
	return 0;
}

void verbs_keymap_fini(struct verbs_keymap *m)
{
	free(m->e);
	m->e = NULL;
}

int verbs_keymap_put(struct verbs_keymap *m, uint32_t key, uint32_t val)
{
	uint32_t i;

	if (val == 0)
		return -EINVAL;
	for (i = key_home(m, key); m->e[i].val; i = (i + 1) & m->mask)
		if (m->e[i].key == key)
			return -EEXIST;
	if (m->n >= m->cap_entries)
		return -ENOSPC;
	m->e[i].key = key;
	m->e[i].val = val;
	m->n++;
	return 0;
}

uint32_t verbs_keymap_get(const struct verbs_keymap *m, uint32_t key)
{
	uint32_t i;

	for (i = key_home(m, key); m->e[i].val; i = (i + 1) & m->mask)
		if (m->e[i].key == key)
			return m->e[i].val;
	return 0;
}

bool verbs_keymap_del(struct verbs_keymap *m, uint32_t key)
{
	uint32_t i, j;

	for (i = key_home(m, key); m->e[i].val; i = (i + 1) & m->mask)
		if (m->e[i].key == key)
			break;
	if (!m->e[i].val)
		return false;
	/* Backward shift (Knuth 6.4, algorithm R): pull later entries of the
	 * probe run into the hole unless their home lies cyclically in
	 * (hole, their slot], so that no lookup stops early. */
	for (j = (i + 1) & m->mask; m->e[j].val; j = (j + 1) & m->mask) {
		uint32_t k = key_home(m, m->e[j].key);
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);

		if (!stays) {
			m->e[i] = m->e[j];
			i = j;
		}
	}
	m->e[i].key = 0;
	m->e[i].val = 0;
	m->n--;
	return true;
}
