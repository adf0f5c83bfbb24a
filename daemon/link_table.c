/*
 * link_table.c - the links by peer node.  See link_table.h.
 */
#include "autoconfig.h"

#include "daemon.h"
#include "link.h"
#include "link_impl.h"
#include "link_table.h"

struct link *link_find(struct daemon *d, uint32_t node_id)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (d->links[i]->node_id == node_id)
			return d->links[i];
	return NULL;
}
