/* extent_state.h - extent-state trees: per inode, non-overlapping inclusive
 * [start, end] ranges carrying 32 bits (MC_ES_*), like Btrfs's
 * extent_io_tree, in the inode's arena (extent.h).
 *
 * Canonical form, kept after every call (the invariants):
 *  1. Records are in start order (list and treap agree), never overlap, and
 *     never carry bits == 0: a range with no bits has no record.
 *  2. Two records that touch (a.end + 1 == b.start) differ in bits or owner:
 *     equal neighbours are merged at once.
 *  3. owner != 0 exactly when MC_ES_LOCKED is set.
 *  4. A call that fails changes nothing.
 *
 * Setting or clearing splits a record only where the range's edge cuts it
 * and only when its bits change; the tree's hint (the record last touched)
 * makes the lookup of a call that continues where the last one stopped O(1).
 * Every function is called with the namespace lock held.
 */
#ifndef MC_EXTENT_STATE_H
#define MC_EXTENT_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "extent.h"

/* Set bits over [start, end]. Setting MC_ES_LOCKED takes an exclusive range
 * lock for owner (nonzero): -EAGAIN when any part of the range is locked
 * already (by anyone: the lock does not nest). -EINVAL: start > end, bits
 * == 0, or LOCKED with owner 0. -ENOSPC: no room for the records needed. On
 * error nothing changed. */
int estate_set(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
               uint32_t bits, uint32_t owner);
/* Clear bits over [start, end] (a part without them is left alone).
 * Clearing MC_ES_LOCKED releases owner's lock: -EPERM when part of the range
 * is locked by another owner. -EINVAL: start > end or bits == 0. -ENOSPC:
 * no room to split an edge record. On error nothing changed. */
int estate_clear(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
                 uint32_t bits, uint32_t owner);
/* all: 1 when every byte of [start, end] carries every bit of bits; else:
 * 1 when some byte carries some bit of bits. 0 otherwise; -EINVAL for
 * start > end or bits == 0. */
int estate_test(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
                uint32_t bits, bool all);
/* The first run of bytes at or after from that carry some bit of bits:
 * [*start, *end], the longest such run (it may span records). -ENOENT when
 * there is none, -EINVAL for bits == 0; out untouched on error. */
int estate_find(struct extent_cache *c, mc_off_t tree, uint64_t from, uint32_t bits,
                uint64_t *start, uint64_t *end);
/* Release every lock owner holds in tree (its connection ended); the number
 * of records released. Never fails: clearing a whole record needs no split. */
uint64_t estate_unlock_owner(struct extent_cache *c, mc_off_t tree, uint32_t owner);

#endif
