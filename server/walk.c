/* walk.c - path resolution over the dentry cache (the kernel's namei):
 * the skeleton's rules (components, ".", "..", symlinks, ELOOP after 40,
 * search permission on every directory crossed) are proto/mc_walk.h's,
 * shared with the client's lock-free walk; this file gives it the server's
 * state and loads misses from the store.
 *
 * ".." needs no parent pointer: the walk keeps the chain of directories from
 * the root to where it stands (nd->stack), and a directory has exactly one
 * parent, so the chain is the real ancestry. Called with the lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mc_walk.h"
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
	struct mc_inode_rec r = *rec;
	int rc = inode_unlink_adjust(ns, &r);
	if (rc < 0) {
		ns->drop_wait = rc == -EAGAIN;
		return rc;
	}
	mc_off_t off = inode_add(ns->shm, &r, target, tlen);
	if (!off)
		return -ENOSPC;
	if (rc > 0)
		inode_dirty(ns, off); /* newer than the store until the commit */
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

/* The server's side of the walk skeleton (mc_walk.h): the stack is
 * nd->stack, the current node an inode slot, misses are loaded from the
 * store by ns_lookup. */
struct swalk {
	struct mc_walk w;
	struct nd *nd;
	mc_off_t cur;
};

static struct swalk *sw_of(struct mc_walk *w)
{
	return (struct swalk *)w;
}

static int sw_root(struct mc_walk *w)
{
	struct nd *nd = sw_of(w)->nd;
	nd->depth = 0;
	return nd_push(nd, nd->ns->shm->hdr->root);
}

static int sw_start(struct mc_walk *w)
{
	return sw_of(w)->nd->depth ? 0 : -EINVAL; /* no working directory to be relative to */
}

static int sw_may_exec(struct mc_walk *w)
{
	struct nd *nd = sw_of(w)->nd;
	return permission(nd->cred, inode_at(nd->ns->shm, nd_top(nd)), MAY_EXEC);
}

static int sw_lookup(struct mc_walk *w, const struct mc_comp *c, uint32_t *mode)
{
	struct swalk *sw = sw_of(w);
	mc_off_t d, ino;
	int rc = ns_lookup(sw->nd->ns, nd_top(sw->nd), c->name, c->len, &d, &ino);
	if (rc < 0)
		return rc;
	if (!ino)
		return -ENOENT;
	sw->cur = ino;
	*mode = inode_at(sw->nd->ns->shm, ino)->mode;
	return 0;
}

static int sw_push(struct mc_walk *w)
{
	return nd_push(sw_of(w)->nd, sw_of(w)->cur);
}

static void sw_pop(struct mc_walk *w)
{
	struct nd *nd = sw_of(w)->nd;
	if (nd->depth > 1)
		nd->depth--;
}

static int sw_target(struct mc_walk *w, unsigned level, const char **t, size_t *len)
{
	(void)level;
	*t = inode_target(sw_of(w)->nd->ns->shm, sw_of(w)->cur, len);
	return 0;
}

static int sw_here(struct mc_walk *w, uint32_t *mode)
{
	struct swalk *sw = sw_of(w);
	sw->cur = nd_top(sw->nd);
	*mode = inode_at(sw->nd->ns->shm, sw->cur)->mode;
	return 0;
}

static const struct mc_walk_ops sw_ops = {
	.root = sw_root, .start = sw_start, .may_exec = sw_may_exec, .lookup = sw_lookup,
	.push = sw_push, .pop = sw_pop, .target = sw_target, .here = sw_here,
};

static void sw_init(struct swalk *sw, struct nd *nd)
{
	mc_walk_init(&sw->w, &sw_ops, 0);
	sw->w.nlinks = nd->nlinks;
	sw->nd = nd;
	sw->cur = 0;
}

int walk_parent(struct nd *nd, const char *path, size_t len)
{
	struct swalk sw;
	sw_init(&sw, nd);
	int rc = mc_walk_parent(&sw.w, &sw_ops, path, len, 0);
	nd->nlinks = sw.w.nlinks;
	if (rc < 0)
		return rc;
	nd->last = sw.w.last.name;
	nd->lastlen = sw.w.last.len;
	nd->slash = sw.w.last.slash;
	nd->last_type = sw.w.last_type;
	return 0;
}

int walk_last(struct nd *nd, bool follow, mc_off_t *res)
{
	struct swalk sw;
	sw_init(&sw, nd);
	sw.w.last.name = nd->last;
	sw.w.last.len = nd->lastlen;
	sw.w.last.slash = nd->slash;
	sw.w.last_type = nd->last_type;
	uint32_t mode;
	int rc = mc_walk_last(&sw.w, &sw_ops, follow, 0, &mode);
	nd->nlinks = sw.w.nlinks;
	if (rc < 0)
		return rc;
	*res = sw.cur;
	return 0;
}

int walk_path(struct nd *nd, const char *path, size_t len, bool follow, mc_off_t *res)
{
	int rc = walk_parent(nd, path, len);
	if (rc < 0)
		return rc;
	return walk_last(nd, follow, res);
}
