/* walk.c - path resolution over the dentry cache (the kernel's namei):
 * components, ".", "..", symlinks (ELOOP after 40), search permission on
 * every directory crossed, and loading misses from the store.
 *
 * ".." needs no parent pointer: the walk keeps the chain of directories from
 * the root to where it stands (nd->stack), and a directory has exactly one
 * parent, so the chain is the real ancestry. Called with the lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_impl.h"

bool in_group(const struct cred *c, uint32_t gid)
{
	return mc_in_group(c->gid, c->groups, c->ngroups, gid);
}

int permission(const struct cred *c, const struct mc_inode *i, int mask)
{
	return mc_permission(c->uid, c->gid, c->groups, c->ngroups, i->mode, i->uid, i->gid, mask);
}

bool sticky_denies(const struct cred *c, const struct mc_inode *dir, const struct mc_inode *victim)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0)
		return false;
	return c->uid != victim->uid && c->uid != dir->uid;
}

void nd_init(struct nd *nd, struct ns *ns, const struct cred *c)
{
	nd->ns = ns;
	nd->cred = c;
	nd->stack = nd->inline_stack;
	nd->depth = 0;
	nd->cap = ND_INLINE;
	nd->nlinks = 0;
	nd->last = NULL;
	nd->lastlen = 0;
	nd->last_type = MC_LAST_NORM;
	nd->slash = false;
}

void nd_free(struct nd *nd)
{
	if (nd->stack != nd->inline_stack)
		free(nd->stack);
	nd->stack = nd->inline_stack;
	nd->cap = ND_INLINE;
	nd->depth = 0;
}

int nd_push(struct nd *nd, mc_off_t dir)
{
	if (nd->depth == nd->cap) {
		unsigned cap = nd->cap * 2;
		mc_off_t *s = malloc(cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memcpy(s, nd->stack, nd->depth * sizeof(*s));
		if (nd->stack != nd->inline_stack)
			free(nd->stack);
		nd->stack = s;
		nd->cap = cap;
	}
	nd->stack[nd->depth++] = dir;
	return 0;
}

int ns_cache_inode_rec(struct ns *ns, const struct mc_inode_rec *rec, const char *target,
                       size_t tlen, mc_off_t *out)
{
	mc_off_t off = inode_add(ns->shm, rec, target, tlen);
	if (!off)
		return -ENOSPC;
	ns->shr.st.reloads++;
	/* An empty directory answers misses itself (a new namespace's
	 * root, above all); without room for that, it just does not. */
	if (S_ISDIR(rec->mode) && rec->size == 0)
		dcache_set_complete(ns->shm, off);
	*out = off;
	return 0;
}

int ns_load_inode(struct ns *ns, uint64_t ino, mc_off_t *out)
{
	mc_off_t off = inode_find(ns->shm, ino);
	if (off) {
		*out = off;
		return 0;
	}
	struct mc_inode_rec rec;
	char target[MC_SYMLINK_MAX];
	size_t tlen = 0;
	int rc = store_get_inode(ns->store, ino, &rec, target, &tlen);
	if (rc == -ENOENT)
		return -EIO; /* a dentry names an inode the store does not have */
	if (rc < 0)
		return rc;
	return ns_cache_inode_rec(ns, &rec, target, tlen, out);
}

int ns_lookup(struct ns *ns, mc_off_t dir, const char *name, size_t len, mc_off_t *d,
              mc_off_t *ino)
{
	if (len > MC_NAME_MAX)
		return -ENAMETOOLONG;
	struct shm *s = ns->shm;
	mc_off_t de = dcache_find(s, dir, name, len);
	if (de) {
		*d = de;
		*ino = dentry_at(s, de)->inode;
		return 0;
	}
	if (dcache_complete(s, dir)) {
		*d = 0;
		*ino = 0;
		return 0;
	}
	uint64_t cino, pino = inode_at(s, dir)->ino;
	uint8_t dtype;
	if (ns->miss_fn)
		ns->miss_fn(ns->miss_arg, pino); /* read-ahead (warm.c) */
	/* The store: read without the lock when the caller can start over
	 * (ns_miss.c), else here. */
	int rc = ns_miss_defer(ns, pino, name, len);
	if (rc < 0)
		return rc;
	struct ns_miss_ans a;
	ns_miss_read(ns, pino, name, len, &a);
	rc = a.err;
	cino = a.ino;
	dtype = a.dtype;
	if (rc == -ENOENT) {
		*ino = 0;
		*d = 0;
		if (do_neg_room(ns, dir))
			*d = dcache_add(s, dir, name, len, 0, 0);
		return 0;
	}
	if (rc < 0)
		return rc;
	mc_off_t ioff = inode_find(s, cino); /* cached: newer than any read */
	if (!ioff && !a.have_rec)
		return -EIO; /* a dentry names an inode the store does not have */
	if (!ioff)
		rc = ns_cache_inode_rec(ns, &a.rec, a.target, a.tlen, &ioff);
	if (rc < 0)
		return rc;
	de = dcache_add(s, dir, name, len, ioff, dtype);
	if (!de)
		return -ENOSPC;
	*d = de;
	*ino = ioff;
	return 0;
}

struct load_ctx {
	struct ns *ns;
	mc_off_t dir;
};

static int load_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	struct load_ctx *lc = arg;
	struct shm *s = lc->ns->shm;
	if (dcache_find(s, lc->dir, name, len))
		return 0; /* the cache is newer than any snapshot */
	mc_off_t ioff;
	int rc = ns_load_inode(lc->ns, ino, &ioff);
	if (rc < 0)
		return rc;
	return dcache_add(s, lc->dir, name, len, ioff, dtype) ? 0 : -ENOSPC;
}

int ns_load_dir(struct ns *ns, mc_off_t dir)
{
	if (dcache_complete(ns->shm, dir))
		return 0;
	struct load_ctx lc = { ns, dir };
	int rc = store_scan_dir(ns->store, inode_at(ns->shm, dir)->ino, load_one, &lc);
	if (rc < 0)
		return rc;
	/* Names removed but not yet committed stay as dirty negative dentries
	 * (load_one skipped them); ns_publish drops them once committed, since
	 * a complete directory answers misses itself. */
	if (!dcache_set_complete(ns->shm, dir))
		return -ENOSPC;
	return 0;
}

/* Step into component name of the current directory (not the last). */
static int walk_step(struct nd *nd, const char *name, size_t len)
{
	switch (mc_comp_type(name, len)) {
	case MC_LAST_DOT:
		return 0;
	case MC_LAST_DOTDOT:
		if (nd->depth > 1)
			nd->depth--;
		return 0;
	default:
		break;
	}
	mc_off_t d, ino;
	int rc = ns_lookup(nd->ns, nd_top(nd), name, len, &d, &ino);
	if (rc < 0)
		return rc;
	if (!ino)
		return -ENOENT;
	struct mc_inode *i = inode_at(nd->ns->shm, ino);
	if (S_ISDIR(i->mode))
		return nd_push(nd, ino);
	if (!S_ISLNK(i->mode))
		return -ENOTDIR;
	if (++nd->nlinks > NS_MAX_SYMLINKS)
		return -ELOOP;
	size_t tlen;
	const char *t = inode_target(nd->ns->shm, ino, &tlen);
	mc_off_t res;
	rc = walk_path(nd, t, tlen, true, &res);
	if (rc < 0)
		return rc;
	return S_ISDIR(inode_at(nd->ns->shm, res)->mode) ? 0 : -ENOTDIR;
}

int walk_parent(struct nd *nd, const char *path, size_t len)
{
	struct shm *s = nd->ns->shm;
	const char *p = path, *end = path + len;
	int rc;

	if (len == 0)
		return -ENOENT;
	if (path[0] == '/') {
		nd->depth = 0;
		rc = nd_push(nd, s->hdr->root);
		if (rc < 0)
			return rc;
	} else if (nd->depth == 0) {
		return -EINVAL; /* no working directory to be relative to */
	}
	for (;;) {
		struct mc_comp c;
		if (!mc_path_next(&p, end, &c)) {
			/* Only slashes: the path names the directory we stand in. */
			nd->last = NULL;
			nd->lastlen = 0;
			nd->last_type = MC_LAST_ROOT;
			nd->slash = false;
			return 0;
		}
		rc = permission(nd->cred, inode_at(s, nd_top(nd)), MAY_EXEC);
		if (rc < 0)
			return rc;
		if (c.last) {
			nd->last = c.name;
			nd->lastlen = c.len;
			nd->slash = c.slash;
			nd->last_type = mc_comp_type(c.name, c.len);
			return 0;
		}
		rc = walk_step(nd, c.name, c.len);
		if (rc < 0)
			return rc;
	}
}

int walk_last(struct nd *nd, bool follow, mc_off_t *res)
{
	struct shm *s = nd->ns->shm;
	switch (nd->last_type) {
	case MC_LAST_ROOT:
	case MC_LAST_DOT:
		*res = nd_top(nd);
		return 0;
	case MC_LAST_DOTDOT:
		if (nd->depth > 1)
			nd->depth--;
		*res = nd_top(nd);
		return 0;
	case MC_LAST_NORM:
		break;
	}
	mc_off_t d, ino;
	int rc = ns_lookup(nd->ns, nd_top(nd), nd->last, nd->lastlen, &d, &ino);
	if (rc < 0)
		return rc;
	if (!ino)
		return -ENOENT;
	struct mc_inode *i = inode_at(s, ino);
	if (S_ISLNK(i->mode) && (follow || nd->slash)) {
		bool slash = nd->slash;
		if (++nd->nlinks > NS_MAX_SYMLINKS)
			return -ELOOP;
		size_t tlen;
		const char *t = inode_target(s, ino, &tlen);
		rc = walk_path(nd, t, tlen, true, &ino);
		if (rc < 0)
			return rc;
		i = inode_at(s, ino);
		if (slash && !S_ISDIR(i->mode))
			return -ENOTDIR;
		*res = ino;
		return 0;
	}
	if (nd->slash && !S_ISDIR(i->mode))
		return -ENOTDIR;
	if (S_ISDIR(i->mode)) {
		rc = nd_push(nd, ino);
		if (rc < 0)
			return rc;
	}
	*res = ino;
	return 0;
}

int walk_path(struct nd *nd, const char *path, size_t len, bool follow, mc_off_t *res)
{
	int rc = walk_parent(nd, path, len);
	if (rc < 0)
		return rc;
	return walk_last(nd, follow, res);
}
