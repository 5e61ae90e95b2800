/* extent_map.h - extent maps: per inode, logical ranges mapped to physical
 * locations, in the inode's arena (extent.h), each a record [start, end]
 * with phys (the location of start) and 32 bits of flags.
 *
 * Invariants:
 *  1. Records are in start order and never overlap; neighbours are not
 *     merged (an extent stays as it was set, or what a punch left of it).
 *  2. A call that fails changes nothing.
 * Every function is called with the namespace lock held.
 */
#ifndef MC_EXTENT_MAP_H
#define MC_EXTENT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "extent.h"

struct emap_ext {
	uint64_t off, len, phys;
	uint32_t flags;
};

/* Map [off, off + len) to phys with flags, replacing what overlaps it.
 * -EINVAL: len 0 or off + len past 2^64; -ENOSPC: no room. */
int emap_set(struct extent_cache *c, mc_off_t tree, uint64_t off, uint64_t len, uint64_t phys,
             uint32_t flags);
/* Unmap [start, end] (inclusive), cutting extents at its edges.
 * -EINVAL: start > end; -ENOSPC: no room to cut an extent in two (a punch
 * that only trims or removes extents, such as a truncation, cannot fail). */
int emap_punch(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end);
/* The extents that overlap [off, off + len) (len 0: to the end), whole, in
 * order: up to max of them into out; the number that overlap (which may
 * exceed max). */
size_t emap_lookup(const struct extent_cache *c, mc_off_t tree, uint64_t off, uint64_t len,
                   struct emap_ext *out, size_t max);

#endif
