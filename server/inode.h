/* inode.h - the inode cache in shared memory: slots hashed by inode number.
 * Every function but inode_fill is called with the namespace lock held. */
#ifndef MC_INODE_H
#define MC_INODE_H

#include <stdint.h>

#include "journal.h"
#include "shm.h"

static inline struct mc_inode *inode_at(const struct shm *s, mc_off_t off)
{
	return shm_at(s, off);
}

/* The slot of ino, or 0 when it is not cached. */
mc_off_t inode_find(const struct shm *s, uint64_t ino);
/* Start loading ino's hash bucket into the CPU cache (no lock needed: it
 * reads nothing), so that a later inode_find or inode_add under the lock
 * does not wait for it; the bucket's address. */
const void *inode_prefetch(const struct shm *s, uint64_t ino);
/* The address of ino's hash bucket (no lock needed). */
const void *inode_bucket_of(const struct shm *s, uint64_t ino);
/* Start loading the first inode of ino's hash chain, whose bucket is
 * loaded already (inode_prefetch), so that the misses of many lookups
 * overlap instead of coming one after the other. No lock needed: without
 * it, the chain may change before the lookup. */
void inode_prefetch_chain(const struct shm *s, uint64_t ino);
/* Write rec (a symlink's target length target_len) into slot off, which
 * nobody else can reach: no lock needed (inode.c). Every field but the
 * flags (zero, shm.c note 11) and the hash link (inode_link's). */
void inode_fill(struct shm *s, mc_off_t off, const struct mc_inode_rec *rec, size_t target_len);
/* Make filled slot off live and hash it (a symlink's target, of the
 * length filled, copied in). Lock held. -ENOSPC (no room for the
 * target): nothing changed. */
int inode_link(struct shm *s, mc_off_t off, const char *target);
/* Cache an inode (and a symlink's target): inode_fill and inode_link on a
 * new slot. 0 when the segment is full. */
mc_off_t inode_add(struct shm *s, const struct mc_inode_rec *rec, const char *target,
                   size_t target_len);
/* Drop a cached inode: unhash it and free its slot, its symlink target and
 * its directory state. The caller has removed every dentry naming it. */
void inode_del(struct shm *s, mc_off_t off);
/* The persistent record of a cached inode. */
void inode_rec(const struct shm *s, mc_off_t off, struct mc_inode_rec *out);
/* A symlink's target (not NUL-terminated) and its length. */
const char *inode_target(const struct shm *s, mc_off_t off, size_t *len);

#endif
