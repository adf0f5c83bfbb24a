/*
 * node_id.c - node name to node id; see sl_node_id() in sluice.h.
 */
#include "sluice.h"

#define FNV32_OFFSET 0x811c9dc5u
#define FNV32_PRIME 0x01000193u

uint32_t sl_node_id(const char *name)
{
	uint32_t h = FNV32_OFFSET;

	if (name == NULL)
		return SL_NODE_LOCAL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= FNV32_PRIME;
	}
	/* 0 and all-ones mean "this node" and "any node" in an address, so a
	 * real name must never hash to them. */
	if (h == SL_NODE_LOCAL)
		return 1;
	if (h == SL_NODE_ANY)
		return SL_NODE_ANY - 1;
	return h;
}
