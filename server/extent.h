/* extent.h - the extent cache's arenas: per-inode trees of records (40
 * bytes in a state tree, 48 in an extent map) in chunks of shared memory
 * (layout in proto/mc_shm.h), freed in bulk. Records are named by mc_eref;
 * trees by the offset of their first chunk.
 *
 * Every function is called with the namespace lock held (one writer).
 */
#ifndef MC_EXTENT_H
#define MC_EXTENT_H

#include <stdbool.h>
#include <stdint.h>

#include "map.h"
#include "shm.h"
#include "stats.h"

struct extent_cache {
	struct shm *s;
	mc_off_t free_chunks;     /* chunks of freed trees, linked through their tails */
	uint64_t chunks;          /* chunks carved from pages so far */
	uint64_t chunks_free;     /* of which on free_chunks */
	uint64_t trees;           /* live trees */
	uint64_t states;          /* linked state records over all trees */
	uint64_t mapped;          /* linked extent-map records over all trees */
	uint64_t splits;          /* records split at a range edge */
	uint64_t merges;          /* records merged into an equal neighbour */
	uint64_t evictions;       /* trees freed whole */
	uint64_t evicted_states;  /* records they held */
	uint64_t shrunk;          /* trees the shrinker freed (idle files) */
	bool page_failed;         /* a chunk wanted a page and the segment had none */
	size_t scan_at[2];        /* extent_idle_scan's place in state_trees, map_trees */
	struct hist evict_ns;     /* time to free one tree */
	struct map state_trees;   /* ino -> offset of its extent-state tree (low 32 bits)
	                           * and the sessions holding locks in it (high 32) */
	struct map map_trees;     /* ino -> offset of its extent map (loaded whole) */
};

void extent_cache_init(struct extent_cache *c, struct shm *s);
/* Forget the index (the segment goes with the server). */
void extent_cache_fini(struct extent_cache *c);

/* The extent-state tree of ino in *out; with create, made when absent.
 * -ENOENT (absent, !create), -ENOSPC (no room in the segment), -ENOMEM. */
int extent_state_tree(struct extent_cache *c, uint64_t ino, bool create, mc_off_t *out);
/* The extent map of ino in *out; with create, a new empty one when absent
 * (the caller fills it from the store). -ENOENT, -ENOSPC, -ENOMEM. */
int extent_map_tree(struct extent_cache *c, uint64_t ino, bool create, mc_off_t *out);
/* Make ino's map (just loaded whole) findable by clients (mc_shm.h, note
 * 11). */
void extent_map_publish(struct extent_cache *c, uint64_t ino);
/* Empty ino's extent map, if there is one, at once (truncation to 0): its
 * arena is freed and a new empty tree takes its place. */
void extent_map_clear(struct extent_cache *c, uint64_t ino);
/* Free ino's extent map alone (a load that failed). */
void extent_map_drop(struct extent_cache *c, uint64_t ino);

/* Add delta to the number of sessions holding range locks in ino's state
 * tree (which exists); the new number. */
uint32_t extent_lockers(struct extent_cache *c, uint64_t ino, int delta);
/* Free ino's state tree, empty and made for nothing (a first set that
 * failed): not counted as an eviction. */
void extent_tree_forget(struct extent_cache *c, uint64_t ino);
/* Free ino's state tree at once: the number of records it held. */
uint64_t extent_state_drop(struct extent_cache *c, uint64_t ino);
/* Free every extent tree of ino at once (the inode leaves the cache): the
 * number of state records freed. */
uint64_t extent_ino_drop(struct extent_cache *c, uint64_t ino);

static inline struct mc_etree *etree_at(const struct extent_cache *c, mc_off_t tree)
{
	return shm_at(c->s, tree);
}

/* A new, empty tree for ino in an arena of its own (one chunk); kind 0: a
 * state tree, MC_EREF_MAP: an extent map. Its offset in *out. -ENOSPC when
 * the segment has no room. */
int extent_tree_new(struct extent_cache *c, uint64_t ino, uint16_t kind, mc_off_t *out);
/* Free a tree and every record in it at once: the head's seq moves, the
 * arena's chunk list is spliced onto the free list. O(1): no record is
 * visited, nothing is split or merged. The number of records it held. */
uint32_t extent_tree_free(struct extent_cache *c, mc_off_t tree);

/* A slot of the tree's arena, zeroed. -ENOSPC. */
int extent_slot_alloc(struct extent_cache *c, mc_off_t tree, mc_eref *out);
/* Give a slot back to its arena. */
void extent_slot_free(struct extent_cache *c, mc_off_t tree, mc_eref slot);
/* Make sure the next n extent_slot_alloc calls on tree succeed, so that an
 * operation can fail before it changes anything. 0 or -ENOSPC. */
int extent_reserve(struct extent_cache *c, mc_off_t tree, uint32_t n);

/* Records of a tree (the mc_estate of a state or a map slot). */
static inline struct mc_estate *erec_at(const struct extent_cache *c, mc_eref ref)
{
	return (struct mc_estate *)((char *)c->s->base + mc_eref_byte(ref));
}
/* A record of an extent map. */
static inline struct mc_emap *emap_at(const struct extent_cache *c, mc_eref ref)
{
	return (struct mc_emap *)erec_at(c, ref);
}
/* The first record with end >= pos (0: none) and, when prevp, the one
 * before it. The tree's hint answers a call that starts in or just after
 * the record last touched without a descent. */
mc_eref erec_first_from(const struct extent_cache *c, const struct mc_etree *t, uint64_t pos,
                         mc_eref *prevp);
/* Link a record [start, end] with bits after prev (0: at the front), in a
 * slot reserved with extent_reserve (so it cannot fail); its other fields
 * are zero. */
mc_eref erec_insert(struct extent_cache *c, mc_off_t tree, mc_eref prev, uint64_t start,
                     uint64_t end, uint32_t bits);
/* Unlink a record and give its slot back to the arena. */
void erec_remove(struct extent_cache *c, mc_off_t tree, mc_eref n);

/* Idle trees the shrinker may free, lock held: up to max inode numbers
 * with a tree into out (a state tree and a map of one inode may both be
 * listed), starting where the last call stopped, so that every tree comes
 * round. The number listed. */
size_t extent_idle_scan(struct extent_cache *c, uint64_t *out, size_t max);

/* Bytes of shared memory held by live trees (their chunks). */
static inline uint64_t extent_cache_bytes(const struct extent_cache *c)
{
	return (c->chunks - c->chunks_free) * MC_ECHUNK_SIZE;
}

#endif
