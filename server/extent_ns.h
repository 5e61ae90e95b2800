/* extent_ns.h - the namespace's extent-state calls: an inode's state tree
 * (extent_state.h) reached by inode number, under the namespace lock.
 *
 * The calls on a held inode (an open handle) give -EBADF when the inode is
 * not cached; otherwise their errors are those of extent_state.h.
 */
#ifndef MC_EXTENT_NS_H
#define MC_EXTENT_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc_shm.h"

struct ns;
struct cred;

/* new_locker: the first lock owner takes in ino (owner counts as a locker
 * of it until ns_range_release). */
int ns_range_set(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                 uint32_t owner, bool new_locker);
int ns_range_clear(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                   uint32_t owner);
int ns_range_test(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                  bool all);
int ns_range_find(struct ns *ns, uint64_t ino, uint64_t from, uint32_t bits, uint64_t *start,
                  uint64_t *end);
/* Drop owner's locks on ino (its connection ended, or it closed its last
 * handle of ino); owner is no longer a locker of it. */
void ns_range_release(struct ns *ns, uint64_t ino, uint32_t owner);
/* Free the extent trees of the file at path at once. -EBUSY while an open
 * handle holds it (its locks and state are in use) or it has uncommitted
 * changes (its map would reload without them); the walk's errors (-ENOENT,
 * -ENOTDIR, -EACCES, -ELOOP, ...). */
/* Extent maps of held regular files (ns_extent_set/punch need a writable
 * handle: -EBADF otherwise). The map is loaded whole from the store on
 * first use. set: -EINVAL (len 0, off + len past 2^64); punch unmaps
 * [off, off + len), to the end of the space when that passes 2^64 (-EINVAL
 * for len 0). Both: -ENOSPC (no room in the segment or the journal), the
 * store's errors when loading. ns_extent_map: the number of extents over
 * [off, off + len) (len 0: to the end), up to max of them copied to out. */
struct emap_ext;
int ns_extent_set(struct ns *ns, uint64_t ino, bool writable, uint64_t off, uint64_t len,
                  uint64_t phys, uint32_t flags);
int ns_extent_punch(struct ns *ns, uint64_t ino, bool writable, uint64_t off, uint64_t len);
int ns_extent_map(struct ns *ns, uint64_t ino, uint64_t off, uint64_t len, struct emap_ext *out,
                  size_t max, size_t *count);
/* Before the regular file at slot ioff is truncated to size, lock held:
 * its extent map loses what lies at or past size (journaled), and at size
 * 0 its state goes too (freed whole when no range lock is in it; else every
 * bit but LOCKED is cleared, for the locks' holders still have the file
 * open). Fails only before changing anything: the store's errors or
 * -ENOSPC when the map must be loaded to be cut. */
int do_extent_truncate(struct ns *ns, mc_off_t ioff, uint64_t size);
/* Lock held: whether ino's extent state must stay cached -- a range lock
 * counts in it or a record carries DIRTY, DELALLOC, LOCKED or WRITEBACK
 * (runtime state the store does not hold). The shrinker does not evict
 * such an inode. */
bool do_extent_state_pinned(struct ns *ns, uint64_t ino);
/* The shrinker's part, lock held: free idle files' extent trees (no open
 * handle; a state tree with no range lock holder and no record carrying
 * DIRTY, DELALLOC, LOCKED or WRITEBACK; a map whose inode is clean, which
 * reloads from the store when next used) until segment use is at most
 * target and at least min_free chunks are free, or every tree was looked
 * at. The number of trees freed. */
uint64_t do_extent_shrink(struct ns *ns, uint64_t target, uint64_t min_free);
/* The extent cache's figures. */
struct stats_extents;
void ns_extent_stats(struct ns *ns, struct stats_extents *out);
int ns_evict(struct ns *ns, const struct cred *c, const char *path, size_t len);

#endif
