/*
 * config_peers.h - the peers of a configuration, for config.c and
 * config_peers.c (one module): the index by node id that keeps the
 * checks of thousands of peers linear, and the address syntax the peers
 * file shares with [peers].  The calls for everyone else (config_peer_add,
 * config_release, config_read_peers_file, ...) are in config.h.
 */
#ifndef SLD_CONFIG_PEERS_H
#define SLD_CONFIG_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* What a node name may be, for the messages (config_name_valid()). */
#define CONFIG_ALLOWED_NAME "1..63 characters from A-Z a-z 0-9 . _ -"

/*
 * peer_index - where each node id is in a list of peers (open
 * addressing, at most half full).  It names places in the list it was
 * filled from, so it lives only as long as that list does not move.  An
 * index without slots (peer_index_init() failed, or none was made)
 * finds by scanning the list: slower, never wrong.
 */
struct peer_index {
	uint32_t *slot;		/* 1 + a place in the list; 0: free */
	size_t mask;		/* slots - 1, slots a power of two; 0 without */
	size_t used;
};

/* An empty index with room for @n peers.  Returns 0 or -ENOMEM (then
 * @ix has no slots). */
int peer_index_init(struct peer_index *ix, size_t n);

/* Place @i of @v joins @ix (its node id is not in it yet: find first);
 * the index grows as needed.  Returns 0 or -ENOMEM (@ix as before). */
int peer_index_add(struct peer_index *ix, const struct peer_conf *v, size_t i);

/* The place in @v (@n entries, the list @ix was filled from) of the
 * peer with node id @node_id, or -1. */
long peer_index_find(const struct peer_index *ix, const struct peer_conf *v, size_t n,
		     uint32_t node_id);

void peer_index_free(struct peer_index *ix);

/* @ix filled with every place of @v (@n entries); a node id seen twice
 * keeps its first place.  Returns 0 or -ENOMEM (no slots). */
int peer_index_build(struct peer_index *ix, const struct peer_conf *v, size_t n);

/*
 * config_parse_address - a peer's address: "HOST:PORT", "[IPV6]:PORT",
 * or with @port_optional "HOST" and "[IPV6]" (*@has_port false, *@port
 * untouched).  @host gets at most @hostlen bytes with the NUL.  Returns
 * 0, or -EINVAL with *@why a phrase for the message ("has no port").
 */
int config_parse_address(const char *s, bool port_optional, char *host, size_t hostlen,
			 uint16_t *port, bool *has_port, const char **why);

/* "[v6]:port" when @host needs brackets, else "host:port", in @buf. */
void config_format_hostport(const char *host, uint16_t port, char *buf, size_t n);

#endif
