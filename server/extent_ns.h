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
 * handle holds it (its locks and state are in use); the walk's errors
 * (-ENOENT, -ENOTDIR, -EACCES, -ELOOP, ...). */
/* The file ino was truncated to size 0, lock held: its state goes. With no
 * range lock in it, the tree is freed whole; else every bit but LOCKED is
 * cleared (the locks' holders still have the file open). */
void do_extent_truncated(struct ns *ns, uint64_t ino);
/* The extent cache's figures. */
struct stats_extents;
void ns_extent_stats(struct ns *ns, struct stats_extents *out);
int ns_evict(struct ns *ns, const struct cred *c, const char *path, size_t len);

#endif
