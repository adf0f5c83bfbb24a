/*
 * arena.h - allocator for a queue's shared arena (client side).
 *
 * First fit over a free list kept in private memory, sorted by offset and
 * coalesced on free; each block carries a 64-byte header inside the arena
 * (size and a check word) so that sl_free() needs only the pointer.  The
 * daemon never reads this metadata.  Not thread-safe: a queue belongs to
 * one thread.
 */
#ifndef SL_ARENA_H
#define SL_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_ALIGN 64u

struct arena_extent;

struct arena {
	uint8_t *base;
	uint64_t size;			/* bytes */
	struct arena_extent *free;	/* sorted by offset */
};

/* Returns 0 or -ENOMEM. */
int arena_init(struct arena *a, void *base, uint64_t size);
void arena_fini(struct arena *a);
/* NULL (errno ENOMEM) when no extent fits. */
void *arena_alloc(struct arena *a, size_t len);
/* Returns 0, or -EINVAL for a pointer that is not a live block. */
int arena_free(struct arena *a, void *p);

#endif
