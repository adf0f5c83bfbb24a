/*
 * link_table.h - the links by peer node: the one lookup every layer that
 * names a node uses (the engine for a destination, the handshake for the
 * node an AUTH names, diagnostics), below the link itself so that none
 * of them has to call into link.c for it; and the set of links as the
 * configuration changes (a reload adds and removes peers).
 *
 * d->links[0 .. d->n_links) is every link, in the order they were made:
 * iterate that (a removal keeps the others' order).  Beside it a hash
 * table by node id (d->links_by_node, struct link_index in daemon.h)
 * makes link_find() O(1) for any number of peers.  The
 * set changes only in link_table_add() and link_table_remove() (called
 * by link_connect.c's link_add and link_remove), never while a loop over
 * d->links runs: a reload comes from a signal watcher of the loop.  All
 * calls on the daemon's loop thread.
 */
#ifndef SLD_LINK_TABLE_H
#define SLD_LINK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct link_index;

struct daemon;
struct link;

/* The link to @node_id, or NULL when the node is not one of the peers.
 * O(1). */
struct link *link_find(struct daemon *d, uint32_t node_id);

/*
 * link_table_add - @l (its node_id set) joins d->links, at the end, and
 * the index.  Returns 0, -EEXIST when a link to that node is there, or
 * -ENOMEM (nothing changed).
 * link_table_remove - @l leaves both; nothing when it is not there.  The
 * caller frees it.
 * link_table_reserve - room in both for @n links in all, at once: a
 *   start with thousands of peers grows neither link by link (and frees
 *   no large block meanwhile, which would move malloc's mmap threshold
 *   above the transport's per-connection buffers).  Returns 0 or -ENOMEM
 *   (what fitted stays).
 * link_table_free - free both arrays (the links are gone already).
 */
int link_table_reserve(struct daemon *d, size_t n);
int link_table_add(struct daemon *d, struct link *l);
void link_table_remove(struct daemon *d, struct link *l);
void link_table_free(struct daemon *d);

/*
 * The hash table under link_find() (struct link_index, daemon.h), on its
 * own so that it can be tested alone:
 * link_index_insert - @l under @node_id, which is not there yet (get
 *   first); grows the table.  Returns 0 or -ENOMEM (nothing changed).
 * link_index_get - the link under @node_id, or NULL.
 * link_index_remove - take @node_id out; false when it was not there.
 * link_index_free - free the slots; @ix is empty after.
 */
int link_index_insert(struct link_index *ix, uint32_t node_id, struct link *l);
struct link *link_index_get(const struct link_index *ix, uint32_t node_id);
bool link_index_remove(struct link_index *ix, uint32_t node_id);
void link_index_free(struct link_index *ix);

/*
 * link_add_resolved - a link to @pc, a node no configuration lists that
 * a client named (resolve.h), made as link_add() makes one; @res (the
 * lookup's answer, not kept) gives the addresses its connections are
 * accepted from, as a configured peer's lookup would.  Counted in
 * d->n_resolved_peers until it goes or a reload lists it
 * (link_table_sync).  Returns 0, -EEXIST or -ENOMEM (nothing made).
 */
struct addrinfo;
struct peer_conf;
int link_add_resolved(struct daemon *d, const struct peer_conf *pc,
		      const struct addrinfo *res);

/* What link_table_sync() did. */
struct link_sync_counts {
	unsigned added, removed, readdressed, failed;
};

/*
 * link_table_sync - after a reload replaced d->cfg.peers, make the links
 * match it, leaving alone every link whose peer kept its name and
 * address (its connection, sequence state and operations under way):
 * a link for each new peer (link_add: made as at start, idle with links
 * on demand), a
 * link to a peer no longer listed removed (link_remove: every operation
 * waiting on it completes SL_ERR_PEER_DOWN, once, and later ones naming
 * the node SL_ERR_UNKNOWN_NODE), a peer at a new host or port
 * readdressed in place (link_readdress).  A resolved peer
 * (link_add_resolved) is not removed for being in no file: it becomes a
 * configured peer when the new list names it (readdressed if the file
 * puts it elsewhere), and is replaced when the list gives its node id to
 * another name.  O(peers + links).  A link that
 * cannot be made is logged and counted in @out->failed (the peer stays
 * without one until the next reload).  @out may be NULL.
 */
void link_table_sync(struct daemon *d, struct link_sync_counts *out);

#endif
