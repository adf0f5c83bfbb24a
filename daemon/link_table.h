/*
 * link_table.h - the links by peer node: the one lookup every layer that
 * names a node uses (the engine for a destination, the handshake for the
 * node an AUTH names, diagnostics), below the link itself so that none
 * of them has to call into link.c for it.
 */
#ifndef SLD_LINK_TABLE_H
#define SLD_LINK_TABLE_H

#include <stdint.h>

struct daemon;
struct link;

/* The link to @node_id, or NULL when the node is not one of the peers.
 * O(peers). */
struct link *link_find(struct daemon *d, uint32_t node_id);

#endif
