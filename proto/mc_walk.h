/* mc_walk.h - the POSIX skeleton of a path walk, written once for the
 * server's walk over the dentry cache (server/walk.c, which loads misses
 * from the store under the namespace lock) and the client's lock-free walk
 * over the shared segment (client/shmwalk.c, which validates seqs), as the
 * kernel's one link_path_walk serves both RCU-walk and ref-walk.
 *
 * NOTES
 *  1. The skeleton owns the rules: components split on runs of slashes; "."
 *     stays; ".." goes up and stays at the root; search permission on every
 *     directory a component is looked up in; a symlink on the way is
 *     followed and must end at a directory (else ENOTDIR); a symlink as the
 *     last component is followed when asked to or when slashes follow it;
 *     trailing slashes demand a directory (ENOTDIR); the 41st symlink of
 *     one walk is ELOOP; an empty path is ENOENT; a relative path with
 *     nowhere to start from is EINVAL.
 *  2. The implementation owns the state: the stack of directories the walk
 *     stands in, and the "current node", the object the last lookup found
 *     (or the directory the walk stands in, after here()). Its ops return 0
 *     or a nonzero code that the skeleton passes back unchanged (a negative
 *     errno, or the implementation's own positive codes, such as the
 *     client's "retry" and "ask the server").
 *  3. The functions are static inline over a const ops table: a caller that
 *     passes its table as a constant gets direct calls, inlined, on the
 *     common path; following a symlink (recursion) goes out of line.
 */
#ifndef MC_WALK_H
#define MC_WALK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mc_path.h"

#define MC_WALK_MAX_LINKS 40   /* symlinks one walk follows before ELOOP */

struct mc_walk;

struct mc_walk_ops {
	/* Stand at the root (the stack holds the root alone). */
	int (*root)(struct mc_walk *w);
	/* Start a relative path where the walk stands: 0, or -EINVAL when it
	 * stands nowhere. */
	int (*start)(struct mc_walk *w);
	/* May the caller search the directory the walk stands in? */
	int (*may_exec)(struct mc_walk *w);
	/* Look the component up in the directory the walk stands in; on 0 it
	 * is the current node and *mode its mode. -ENOENT: absent. */
	int (*lookup)(struct mc_walk *w, const struct mc_comp *c, uint32_t *mode);
	/* Stand in the current node (a directory). */
	int (*push)(struct mc_walk *w);
	/* "..": stand in the parent (or stay at the root). */
	void (*pop)(struct mc_walk *w);
	/* The current node (a symlink)'s target, valid until the walk that
	 * follows it at nesting level `level` + 1 ends. */
	int (*target)(struct mc_walk *w, unsigned level, const char **t, size_t *len);
	/* Make the directory the walk stands in the current node. */
	int (*here)(struct mc_walk *w, uint32_t *mode);
};

/* Embedded first in the implementation's walk state. */
struct mc_walk {
	const struct mc_walk_ops *ops;
	uint64_t seed;             /* folded into each component's hash */
	unsigned nlinks;           /* symlinks followed so far */
	/* The last component, left by mc_walk_parent. */
	struct mc_comp last;
	enum mc_last last_type;
};

static inline void mc_walk_init(struct mc_walk *w, const struct mc_walk_ops *ops, uint64_t seed)
{
	w->ops = ops;
	w->seed = seed;
	w->nlinks = 0;
	w->last_type = MC_LAST_ROOT;
	w->last.name = NULL;
	w->last.len = 0;
	w->last.slash = false;
}

static int mc_walk_follow(struct mc_walk *w, const struct mc_walk_ops *ops, unsigned level,
                          uint32_t *mode);

/* Step through component c (not the last) of the directory the walk stands in. */
static inline __attribute__((always_inline)) int
mc_walk_step(struct mc_walk *w, const struct mc_walk_ops *ops, const struct mc_comp *c,
             unsigned level)
{
	switch (mc_comp_type(c->name, c->len)) {
	case MC_LAST_DOT:
		return 0;
	case MC_LAST_DOTDOT:
		ops->pop(w);
		return 0;
	default:
		break;
	}
	uint32_t mode;
	int rc = ops->lookup(w, c, &mode);
	if (rc)
		return rc;
	if (S_ISDIR(mode))
		return ops->push(w);
	if (!S_ISLNK(mode))
		return -ENOTDIR;
	rc = mc_walk_follow(w, ops, level, &mode);
	if (rc)
		return rc;
	return S_ISDIR(mode) ? 0 : -ENOTDIR;
}

/* Walk all of path but its last component, which it leaves in w->last and
 * w->last_type. */
static inline __attribute__((always_inline)) int
mc_walk_parent(struct mc_walk *w, const struct mc_walk_ops *ops, const char *path, size_t len,
               unsigned level)
{
	const char *p = path, *end = path + len;
	int rc;
	if (len == 0)
		return -ENOENT;
	rc = path[0] == '/' ? ops->root(w) : ops->start(w);
	if (rc)
		return rc;
	for (;;) {
		struct mc_comp c;
		if (!mc_path_next_hash(&p, end, w->seed, &c)) {
			/* Only slashes: the path names the directory we stand in. */
			w->last_type = MC_LAST_ROOT;
			w->last.name = NULL;
			w->last.len = 0;
			w->last.slash = false;
			return 0;
		}
		rc = ops->may_exec(w);
		if (rc)
			return rc;
		if (c.last) {
			w->last = c;
			w->last_type = mc_comp_type(c.name, c.len);
			return 0;
		}
		rc = mc_walk_step(w, ops, &c, level);
		if (rc)
			return rc;
	}
}

/* Resolve w->last (after mc_walk_parent) to the current node; follow a
 * final symlink when follow (or a trailing slash) says so. A directory
 * result is also stood in. */
static inline __attribute__((always_inline)) int
mc_walk_last(struct mc_walk *w, const struct mc_walk_ops *ops, bool follow, unsigned level,
             uint32_t *mode)
{
	switch (w->last_type) {
	case MC_LAST_DOTDOT:
		ops->pop(w);
		/* fall through */
	case MC_LAST_ROOT:
	case MC_LAST_DOT:
		return ops->here(w, mode);
	case MC_LAST_NORM:
		break;
	}
	int rc = ops->lookup(w, &w->last, mode);
	if (rc)
		return rc;
	bool slash = w->last.slash;
	if (S_ISLNK(*mode) && (follow || slash)) {
		rc = mc_walk_follow(w, ops, level, mode);
		if (rc)
			return rc;
		return slash && !S_ISDIR(*mode) ? -ENOTDIR : 0;
	}
	if (slash && !S_ISDIR(*mode))
		return -ENOTDIR;
	if (S_ISDIR(*mode))
		return ops->push(w);
	return 0;
}

/* The whole path: its last component ends as the current node. */
static inline __attribute__((always_inline)) int
mc_walk_path(struct mc_walk *w, const struct mc_walk_ops *ops, const char *path, size_t len,
             bool follow, unsigned level, uint32_t *mode)
{
	int rc = mc_walk_parent(w, ops, path, len, level);
	if (rc)
		return rc;
	return mc_walk_last(w, ops, follow, level, mode);
}

/* Follow the current node, a symlink: walk its target (following a final
 * symlink) from where the walk stands. */
static __attribute__((noinline, unused)) int
mc_walk_follow(struct mc_walk *w, const struct mc_walk_ops *ops, unsigned level, uint32_t *mode)
{
	if (++w->nlinks > MC_WALK_MAX_LINKS)
		return -ELOOP;
	const char *t;
	size_t tlen;
	int rc = ops->target(w, level, &t, &tlen);
	if (rc)
		return rc;
	/* The target's walk overwrites w->last; the caller is done with it. */
	return mc_walk_path(w, ops, t, tlen, true, level + 1, mode);
}

#endif
