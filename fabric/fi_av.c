/*
 * fi_av.c - the address vector: fi_addr_t is an index into a table of
 * sl_addr_t (for FI_AV_MAP as for FI_AV_TABLE: the value of a map address
 * is the provider's to choose), and a hash table maps a sluice address
 * back to its index, for the source of a receive (fi_cq_readfrom).
 *
 * Address strings: "sluice://0xNODE:PORT" (fi_av_straddr), and for
 * fi_getinfo and fi_av_insertsvc a node given as such a string, a
 * 0x-prefixed node id or a node name as in the daemons' configuration
 * (sl_node_id()), with the port as the service.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfi.h"

static int parse_u32(const char *s, int base, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int sfi_parse_addr(const char *node, const char *service, sl_addr_t *out)
{
	char name[128];
	const char *colon;

	*out = (sl_addr_t){ SL_NODE_LOCAL, 0 };
	if (node && !strncmp(node, "sluice://", 9)) {
		node += 9;
		colon = strrchr(node, ':');
		if (!colon || (size_t)(colon - node) >= sizeof(name))
			return -1;
		memcpy(name, node, (size_t)(colon - node));
		name[colon - node] = '\0';
		node = name;
		service = colon + 1;
	}
	if (node && *node) {
		if (!strncmp(node, "0x", 2)) {
			if (parse_u32(node + 2, 16, &out->node))
				return -1;
		} else {
			out->node = sl_node_id(node);
		}
	}
	if (service && parse_u32(service, 10, &out->port))
		return -1;
	if (out->port > 65535)
		return -1;
	return 0;
}

const char *sfi_addr_str(const sl_addr_t *addr, char *buf, size_t *len)
{
	char s[64];
	int n = snprintf(s, sizeof(s), "sluice://0x%08" PRIx32 ":%" PRIu32, addr->node, addr->port);

	if (buf && *len)
		snprintf(buf, *len, "%s", s);
	*len = (size_t)n + 1;
	return buf;
}

static uint64_t addr_key(sl_addr_t a)
{
	return ((uint64_t)a.node << 32) | a.port;
}

static size_t addr_hash(sl_addr_t a, size_t cap)
{
	uint64_t k = addr_key(a) * 0x9e3779b97f4a7c15ull;

	return (size_t)(k >> 20) & (cap - 1);
}

#define HASH_TOMB SIZE_MAX

static void hash_put(struct sfi_av *av, size_t index)
{
	size_t i = addr_hash(av->addrs[index], av->hash_cap);

	while (av->hash[i] && av->hash[i] != HASH_TOMB)
		i = (i + 1) & (av->hash_cap - 1);
	av->hash[i] = index + 1;
}

/* Rebuild the reverse map for @cap slots (a power of two, > count). */
static int hash_rebuild(struct sfi_av *av, size_t cap)
{
	size_t *h = calloc(cap, sizeof(*h)), i;

	if (!h)
		return -FI_ENOMEM;
	free(av->hash);
	av->hash = h;
	av->hash_cap = cap;
	for (i = 0; i < av->count; i++)
		if (av->used[i])
			hash_put(av, i);
	return 0;
}

fi_addr_t sfi_av_reverse(struct sfi_av *av, sl_addr_t a)
{
	size_t i, probes;

	if (!av || !av->hash_cap)
		return FI_ADDR_NOTAVAIL;
	i = addr_hash(a, av->hash_cap);
	for (probes = 0; probes < av->hash_cap && av->hash[i]; probes++) {
		size_t idx = av->hash[i] - 1;

		if (av->hash[i] != HASH_TOMB && av->used[idx] &&
		    addr_key(av->addrs[idx]) == addr_key(a))
			return idx;
		i = (i + 1) & (av->hash_cap - 1);
	}
	return FI_ADDR_NOTAVAIL;
}

int sfi_av_addr(struct sfi_av *av, fi_addr_t fi_addr, sl_addr_t *out)
{
	if (!av || fi_addr >= av->count || !av->used[fi_addr])
		return -FI_EINVAL;
	*out = av->addrs[fi_addr];
	return 0;
}

/* Room for @n more entries in the table and the reverse map. */
static int av_reserve(struct sfi_av *av, size_t n)
{
	size_t want = av->count + n;

	if (want > av->cap) {
		size_t cap = av->cap ? av->cap : 16;
		sl_addr_t *addrs;
		uint8_t *used;

		while (cap < want)
			cap *= 2;
		addrs = realloc(av->addrs, cap * sizeof(*addrs));
		if (!addrs)
			return -FI_ENOMEM;
		av->addrs = addrs;
		used = realloc(av->used, cap);
		if (!used)
			return -FI_ENOMEM;
		memset(used + av->cap, 0, cap - av->cap);
		av->used = used;
		av->cap = cap;
	}
	if (want * 2 > av->hash_cap) {
		size_t cap = av->hash_cap ? av->hash_cap : 32;

		while (cap < want * 2)
			cap *= 2;
		return hash_rebuild(av, cap);
	}
	return 0;
}

static int av_insert_one(struct sfi_av *av, sl_addr_t a, fi_addr_t *out)
{
	if (a.node == SL_NODE_LOCAL)
		a.node = av->dom->local_node;
	if (a.port == 0 || a.port > 65535 || a.node == SL_NODE_ANY) {
		if (out)
			*out = FI_ADDR_NOTAVAIL;
		return -FI_EINVAL;
	}
	av->addrs[av->count] = a;
	av->used[av->count] = 1;
	hash_put(av, av->count);
	if (out)
		*out = av->count;
	av->count++;
	return 0;
}

static int sfi_av_insert(struct fid_av *fav, const void *addr, size_t count,
			 fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct sfi_av *av = container_of(fav, struct sfi_av, av);
	const sl_addr_t *addrs = addr;
	size_t i;
	int done = 0, rc;

	if (flags & ~(uint64_t)FI_MORE)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	rc = av_reserve(av, count);
	if (rc) {
		pthread_mutex_unlock(&av->dom->lock);
		return rc;
	}
	for (i = 0; i < count; i++) {
		sl_addr_t a;

		memcpy(&a, &addrs[i], sizeof(a));
		if (av_insert_one(av, a, fi_addr ? &fi_addr[i] : NULL) == 0)
			done++;
	}
	pthread_mutex_unlock(&av->dom->lock);
	return done;
}

static int sfi_av_insertsvc(struct fid_av *fav, const char *node, const char *service,
			    fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	sl_addr_t a;

	if (sfi_parse_addr(node, service, &a))
		return -FI_EINVAL;
	return sfi_av_insert(fav, &a, 1, fi_addr, flags, context);
}

/* fi_av_insertsym(3): @nodecnt nodes from @node (its trailing number
 * counted up), each with @svccnt ports from @service. */
static int sfi_av_insertsym(struct fid_av *fav, const char *node, size_t nodecnt,
			    const char *service, size_t svccnt, fi_addr_t *fi_addr,
			    uint64_t flags, void *context)
{
	char base[128], name[160];
	size_t blen, i, j, k = 0;
	unsigned long first = 0;
	uint32_t port0;
	int width = 0, done = 0;

	if (!node || !service || parse_u32(service, 10, &port0))
		return -FI_EINVAL;
	blen = strlen(node);
	if (blen >= sizeof(base))
		return -FI_EINVAL;
	while (blen && node[blen - 1] >= '0' && node[blen - 1] <= '9') {
		blen--;
		width++;
	}
	memcpy(base, node, blen);
	base[blen] = '\0';
	if (width)
		first = strtoul(node + blen, NULL, 10);
	for (i = 0; i < nodecnt; i++) {
		if (width)
			snprintf(name, sizeof(name), "%s%0*lu", base, width, first + i);
		else
			snprintf(name, sizeof(name), "%s", base);
		for (j = 0; j < svccnt; j++, k++) {
			char svc[16];
			int rc;

			snprintf(svc, sizeof(svc), "%lu", (unsigned long)port0 + j);
			rc = sfi_av_insertsvc(fav, name, svc, fi_addr ? &fi_addr[k] : NULL,
					      flags, context);
			if (rc == 1)
				done++;
		}
	}
	return done;
}

static int sfi_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct sfi_av *av = container_of(fav, struct sfi_av, av);
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		if (fi_addr[i] >= av->count || !av->used[fi_addr[i]]) {
			rc = -FI_EINVAL;
			continue;
		}
		av->used[fi_addr[i]] = 0;
	}
	/* The stale reverse entries are skipped (used == 0); rebuilding
	 * drops them. */
	if (av->hash_cap && hash_rebuild(av, av->hash_cap))
		rc = -FI_ENOMEM;
	pthread_mutex_unlock(&av->dom->lock);
	return rc;
}

static int sfi_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct sfi_av *av = container_of(fav, struct sfi_av, av);
	sl_addr_t a;
	int rc;

	pthread_mutex_lock(&av->dom->lock);
	rc = sfi_av_addr(av, fi_addr, &a);
	pthread_mutex_unlock(&av->dom->lock);
	if (rc)
		return -FI_ENOENT;
	if (addr && *addrlen)
		memcpy(addr, &a, *addrlen < SFI_ADDRLEN ? *addrlen : SFI_ADDRLEN);
	*addrlen = SFI_ADDRLEN;
	return 0;
}

static const char *sfi_av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
	sl_addr_t a;

	memcpy(&a, addr, sizeof(a));
	return sfi_addr_str(&a, buf, len);
}

static int sfi_no_av_set(struct fid_av *fav, struct fi_av_set_attr *attr,
			 struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_av sfi_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = sfi_av_insert,
	.insertsvc = sfi_av_insertsvc,
	.insertsym = sfi_av_insertsym,
	.remove = sfi_av_remove,
	.lookup = sfi_av_lookup,
	.straddr = sfi_av_straddr,
	.av_set = sfi_no_av_set,
};

static int sfi_av_close(struct fid *fid)
{
	struct sfi_av *av = container_of(fid, struct sfi_av, av.fid);

	pthread_mutex_lock(&av->dom->lock);
	if (av->refs) {
		pthread_mutex_unlock(&av->dom->lock);
		return -FI_EBUSY;
	}
	av->dom->refs--;
	pthread_mutex_unlock(&av->dom->lock);
	free(av->addrs);
	free(av->used);
	free(av->hash);
	free(av);
	return 0;
}

static int sfi_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;	/* no EQ: inserts are synchronous */
}

static struct fi_ops sfi_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sfi_av_close,
	.bind = sfi_av_bind,
	.control = sfi_no_control,
	.ops_open = sfi_no_ops_open,
	.tostr = sfi_no_tostr,
	.ops_set = sfi_no_ops_set,
};

int sfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av_p, void *context)
{
	struct sfi_domain *dom = container_of(domain, struct sfi_domain, domain);
	struct sfi_av *av;

	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->name || (attr->flags & (FI_EVENT | FI_READ)) ||
	    attr->rx_ctx_bits)
		return -FI_ENOSYS;	/* no shared, named or asynchronous AVs */
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &sfi_av_fi_ops;
	av->av.ops = &sfi_av_ops;
	pthread_mutex_lock(&dom->lock);
	if (av_reserve(av, attr->count ? (attr->count < 65536 ? attr->count : 65536) : 16)) {
		pthread_mutex_unlock(&dom->lock);
		free(av->addrs);
		free(av->used);
		free(av->hash);
		free(av);
		return -FI_ENOMEM;
	}
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*av_p = &av->av;
	return 0;
}
