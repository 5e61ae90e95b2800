/* shmprefix.h - the view's cache of resolved directory prefixes: a path's
 * leading "/dir/dir/" string mapped to the directories it resolves to, so
 * that a deep path costs a walk of its last component (shmprefix.c). */
#ifndef MC_SHMPREFIX_H
#define MC_SHMPREFIX_H

#include <stdint.h>

#include "mc_shm.h"

#define PREFIX_SLOTS    64u   /* entries per view, direct-mapped by key hash */
#define PREFIX_KEY_MAX  128u  /* bytes of a cached prefix */
#define PREFIX_DEPTH    8u    /* directories of a cached prefix, the root included */

/* One directory of a prefix, with the seqs it had when it was resolved:
 * the dentry that named it in its parent (0 for the root) and its inode. */
struct prefix_level {
	mc_off_t dentry;
	uint32_t dseq;
	mc_off_t inode;
	uint32_t iseq;
	uint64_t ino;
};

/* What a hit gives back: the directories from the root down, and the
 * last one's walk fields (as in struct isnap). */
struct prefix_hit {
	unsigned n;
	struct prefix_level lv[PREFIX_DEPTH];
	uint32_t mode, uid, gid;
	uint64_t u;
};

/* One cached prefix; every field is read and written with relaxed atomics
 * between two reads of seq (odd while one thread rewrites the entry). */
struct prefix_entry {
	_Atomic uint32_t seq;
	uint32_t klen;
	uint64_t cred;             /* the credentials it was resolved with: gid << 32 | uid */
	struct prefix_hit hit;
	uint64_t key[PREFIX_KEY_MAX / 8]; /* zero-padded */
};

#endif
