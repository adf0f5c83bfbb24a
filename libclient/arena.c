/*
 * arena.c - first-fit allocator for the shared arena; see arena.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "arena.h"

#define BLOCK_MAGIC 0x736c6172656e6121ull	/* "slarena!" */

struct arena_extent {
	struct arena_extent *next;
	uint64_t off;
	uint64_t len;
};

struct block_hdr {
	uint64_t size;		/* bytes of the block, header included */
	uint64_t magic;		/* BLOCK_MAGIC ^ offset: catches stray frees */
	uint8_t pad[ARENA_ALIGN - 16];
};
_Static_assert(sizeof(struct block_hdr) == ARENA_ALIGN, "block header");

int arena_init(struct arena *a, void *base, uint64_t size)
{
	struct arena_extent *e = malloc(sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->next = NULL;
	e->off = 0;
	e->len = size & ~(uint64_t)(ARENA_ALIGN - 1);
	a->base = base;
	a->size = size;
	a->free = e;
	return 0;
}

void arena_fini(struct arena *a)
{
	while (a->free) {
		struct arena_extent *e = a->free;

		a->free = e->next;
		free(e);
	}
}

void *arena_alloc(struct arena *a, size_t len)
{
	struct arena_extent **pp, *e;
	uint64_t need;
	struct block_hdr *h;

	if (len > a->size)
		goto nomem;
	need = sizeof(struct block_hdr) + (((uint64_t)len + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1));
	for (pp = &a->free; (e = *pp); pp = &e->next)
		if (e->len >= need)
			break;
	if (!e)
		goto nomem;
	h = (struct block_hdr *)(a->base + e->off);
	h->size = need;
	h->magic = BLOCK_MAGIC ^ e->off;
	if (e->len == need) {
		*pp = e->next;
		free(e);
	} else {
		e->off += need;
		e->len -= need;
	}
	return h + 1;
nomem:
	errno = ENOMEM;
	return NULL;
}

int arena_free(struct arena *a, void *p)
{
	struct block_hdr *h = (struct block_hdr *)p - 1;
	struct arena_extent **pp, *e, *prev = NULL;
	uint64_t off, len;

	if ((uint8_t *)h < a->base || (uint8_t *)p > a->base + a->size ||
	    ((uint8_t *)h - a->base) % ARENA_ALIGN)
		return -EINVAL;
	off = (uint64_t)((uint8_t *)h - a->base);
	len = h->size;
	if (h->magic != (BLOCK_MAGIC ^ off) || len > a->size - off)
		return -EINVAL;
	h->magic = 0;	/* a second free of the same block is caught */
	for (pp = &a->free; (e = *pp) && e->off < off; pp = &e->next)
		prev = e;
	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (e && prev->off + prev->len == e->off) {
			prev->len += e->len;
			prev->next = e->next;
			free(e);
		}
		return 0;
	}
	if (e && off + len == e->off) {
		e->off = off;
		e->len += len;
		return 0;
	}
	{
		struct arena_extent *n = malloc(sizeof(*n));

		/* Without a node the block is lost to this queue, not freed
		 * twice; the arena is reclaimed whole at close. */
		if (!n)
			return -ENOMEM;
		n->off = off;
		n->len = len;
		n->next = e;
		*pp = n;
	}
	return 0;
}
