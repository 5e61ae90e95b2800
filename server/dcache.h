/* dcache.h - the dentry cache in shared memory: dentries hashed by (parent,
 * name), each directory's cached children in a list in cookie order, the
 * complete flag, and subtree pruning. Called with the namespace lock held
 * (but dcache_fill and the hash and prefetch helpers). */
#ifndef MC_DCACHE_H
#define MC_DCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inode.h"
#include "shm.h"

static inline struct mc_dentry *dentry_at(const struct shm *s, mc_off_t off)
{
	return shm_at(s, off);
}

/* The cached dentry (positive or negative) of name in directory slot dir, or
 * 0 when the cache does not know the name. */
mc_off_t dcache_find(const struct shm *s, mc_off_t dir, const char *name, size_t len);
/* Start loading the hash bucket of name in the directory of inode number
 * parent_ino into the CPU cache (no lock needed: it reads nothing); the
 * bucket's address. */
const void *dcache_prefetch(const struct shm *s, uint64_t parent_ino, const char *name,
                            size_t len);

/* The hash of name in the directory of inode number parent_ino. */
uint64_t dcache_hash(const struct shm *s, uint64_t parent_ino, const char *name, size_t len);
/* The number of hash buckets (mc_shm.h note 12: in groups). */
uint64_t dcache_nbuckets(const struct shm *s);
/* The address of the bucket of a name whose hash is known. */
const void *dcache_bucket_of(const struct shm *s, uint64_t hash);
/* dcache_prefetch of a name whose hash is known; the bucket's address. */
const void *dcache_prefetch_hash(const struct shm *s, uint64_t hash);

/* Write name (len bytes) into dentry slot d, which nobody else can reach:
 * no lock needed (dcache.c note 4). A long name is copied by dcache_link.
 * The fields it leaves are dcache_link's, the flags zero (shm.c note 11). */
void dcache_fill(struct shm *s, mc_off_t d, const char *name, size_t len);
/* Cache filled slot d as name (hash: dcache_hash's) in dir naming inode
 * (0: a negative entry) of type dtype: as dcache_add. 0 when the segment
 * is full (nothing changed: d is still the caller's). */
mc_off_t dcache_link(struct shm *s, mc_off_t dir, mc_off_t d, const char *name,
                     mc_off_t inode, uint8_t dtype, uint64_t hash);
/* Cache name in dir as naming inode (0: a negative entry) of type dtype.
 * It gets the directory's next cookie and goes to the end of its child
 * list. 0 when the segment is full. */
mc_off_t dcache_add(struct shm *s, mc_off_t dir, const char *name, size_t len,
                    mc_off_t inode, uint8_t dtype);

/* Make d name inode (0: negative). A name that becomes positive is a new
 * entry for readdir: it takes a fresh cookie and moves to the list's end. */
void dcache_set(struct shm *s, mc_off_t d, mc_off_t inode, uint8_t dtype);

/* Forget d: unhash, unlink from its parent's list, free. */
void dcache_del(struct shm *s, mc_off_t d);

/* Free every cached child of dir (a removed directory's
 * children go at once, in O(children)); clears the complete flag. Returns the
 * number freed. The children must not be positive directories with cached
 * children of their own (the caller prunes bottom-up). Counted as a subtree
 * prune in the statistics when anything was freed. */
size_t dcache_prune(struct shm *s, mc_off_t dir);

/* A new directory state for dir, which has none; NULL when the segment is
 * full. */
struct mc_dirx *dcache_dirx_new(struct shm *s, mc_off_t dir);
/* The directory state of dir, created when missing and create is set;
 * NULL when absent (or the segment is full). Inline, as dcache_complete:
 * both are asked about once or more per entry by every walk and removal. */
static inline struct mc_dirx *dcache_dirx(struct shm *s, mc_off_t dir, bool create)
{
	struct mc_inode *i = inode_at(s, dir);
	if (i->u.dir.dirx)
		return shm_at(s, i->u.dir.dirx);
	return create ? dcache_dirx_new(s, dir) : NULL;
}

static inline bool dcache_complete(const struct shm *s, mc_off_t dir)
{
	const struct mc_inode *i = inode_at(s, dir);
	if (!i->u.dir.dirx)
		return false;
	const struct mc_dirx *dx = shm_at(s, i->u.dir.dirx);
	return dx->flags & MC_X_COMPLETE;
}
/* Mark dir complete (every child cached). false when the segment is full. */
bool dcache_set_complete(struct shm *s, mc_off_t dir);
/* dir no longer holds every child (one was evicted). */
void dcache_clear_complete(struct shm *s, mc_off_t dir);
/* dir has no entries left: it is complete (whatever the store held is
 * known, since nothing is left), and its negative dentries, dirty ones
 * included, say nothing more: freed. Without room for the complete flag,
 * nothing changes. */
void dcache_now_empty(struct shm *s, mc_off_t dir);
/* The oldest (lowest cookie) clean negative dentry of dir among the first
 * budget children of its list, or 0. */
mc_off_t dcache_neg_oldest(const struct shm *s, mc_off_t dir, unsigned budget);

/* The name of d (not NUL-terminated). */
const char *dcache_name(const struct shm *s, mc_off_t d);

#endif
