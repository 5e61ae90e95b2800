/* fuzz-tree.h - a small namespace built by the real server modules (LMDB
 * store in a temporary directory, shared-memory segment, ns) for the fuzz
 * targets that read a segment: fuzz-path and fuzz-shmview.
 *
 * The tree (mode, owner):
 *   /a (0755)  /a/b (0750, 1000:1000)  /a/b/c  /a/b/<40-byte name>
 *   /a/lnk -> b/c   /a/dirlnk -> /a/b   /a/up -> ..   /a/dangling -> nowhere
 *   /a/x (0311)  /a/x/y   /loop -> /loop   /f   /d (0755) holding f00..f39
 *   /long -> a symlink target of 300 bytes
 * and a negative entry /a/missing.
 */
#ifndef MC_FUZZ_TREE_H
#define MC_FUZZ_TREE_H

#include <stdint.h>

#include "fuzz.h"
#include "ops.h"

struct fuzz_tree {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
};

extern const struct cred fuzz_creds[4];  /* root, 1000, 1001 in group 1000, 2000 */

/* Build the tree in a segment of shm_size bytes; aborts on failure. */
void fuzz_tree_up(struct fuzz_tree *t, uint64_t shm_size);
/* Free it and remove its directory. */
void fuzz_tree_down(struct fuzz_tree *t);

#endif
