/* rmtree.c - server-side recursive delete (rm -rf in one call), in bounded
 * batches: the namespace lock is dropped every `batch` removals so other
 * clients are served, and the walk restarts from the path each time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "ns_impl.h"

/* ---- rmtree -------------------------------------------------------------- */

/* Where the store scan of a directory that is not complete goes on. */
struct rm_resume {
	uint64_t ino;              /* 0: none */
	uint8_t len;
	char name[MC_NAME_MAX];
};

struct first_ctx {
	struct shm *s;
	mc_off_t dir;
	char name[MC_NAME_MAX];
	size_t len;
};

/* The first name the cache does not know to be removed. */
static int first_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	(void)ino, (void)dtype;
	struct first_ctx *fc = arg;
	mc_off_t d = dcache_find(fc->s, fc->dir, name, len);
	if (d && !(dentry_at(fc->s, d)->flags & MC_D_POSITIVE))
		return 0;
	memcpy(fc->name, name, len);
	fc->len = len;
	return 1;
}

/* A child of dir (which has entries) to remove next: from the child list
 * when dir is complete; else the next name of the store after the resume
 * point, so that a directory larger than the cache is removed without
 * loading it whole and in O(entries); at the end of the store, what only
 * the cache has (uncommitted creates). *d its dentry, *v its inode. */
static int next_child(struct ns *ns, mc_off_t dir, struct rm_resume *rs, mc_off_t *d,
                      mc_off_t *v)
{
	struct shm *s = ns->shm;
	uint64_t ino = inode_at(s, dir)->ino;
	if (!dcache_complete(s, dir)) {
		struct first_ctx fc = { .s = s, .dir = dir };
		bool from = rs->ino == ino;
		int rc = store_scan_dir_after(ns->store, ino, from ? rs->name : NULL,
		                              from ? rs->len : 0, first_one, &fc);
		if (rc == 0 && from) {
			rs->ino = 0; /* again from the start: something came in behind */
			rc = store_scan_dir_after(ns->store, ino, NULL, 0, first_one, &fc);
		}
		if (rc < 0)
			return rc;
		if (rc == 1) {
			rs->ino = ino;
			rs->len = (uint8_t)fc.len;
			memcpy(rs->name, fc.name, fc.len);
			rc = ns_lookup(ns, dir, fc.name, fc.len, d, v);
			if (rc < 0)
				return rc;
			if (*v)
				return 0;
		}
	}
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	mc_off_t e = dx ? dx->head : 0;
	while (e && !(dentry_at(s, e)->flags & MC_D_POSITIVE))
		e = dentry_at(s, e)->sib_next;
	if (!e)
		return -EIO; /* nentries > 0 but nothing listed */
	*d = e;
	*v = dentry_at(s, e)->inode;
	return 0;
}

/* Remove up to *budget entries below (and then) the tree at the walk's last
 * component. Returns 1 when the tree is gone, 0 when the budget ran out. */
static int rmtree_some(struct nd *nd, unsigned *budget, struct rm_resume *rs)
{
	struct ns *ns = nd->ns;
	struct shm *s = ns->shm;
	const struct cred *c = nd->cred;
	mc_off_t d, top;
	int rc = ns_lookup(ns, nd_top(nd), nd->last, nd->lastlen, &d, &top);
	if (rc < 0)
		return rc;
	if (!top)
		return -ENOENT;
	if (!S_ISDIR(inode_at(s, top)->mode)) {
		if (nd->slash)
			return -ENOTDIR;
		rc = delete_checks(c, s, nd_top(nd), top, false);
		if (rc < 0)
			return rc;
		remove_entry(ns, nd_top(nd), d, top);
		return 1;
	}
	/* Depth-first from top: descend into a non-empty subdirectory,
	 * remove leaves, remove a directory once it is empty. */
	unsigned base = nd->depth;
	rc = nd_push(nd, top);
	if (rc < 0)
		return rc;
	while (*budget > 0) {
		mc_off_t dir = nd_top(nd);
		struct mc_inode *di = inode_at(s, dir);
		if (di->u.dir.nentries == 0) {
			nd->depth--;
			mc_off_t parent = nd_top(nd);
			mc_off_t pd, chk;
			if (nd->depth == base) {
				pd = d;
			} else {
				/* find dir's name in parent */
				pd = 0;
				struct mc_dirx *px = dcache_dirx(s, parent, false);
				for (mc_off_t e = px ? px->head : 0; e; e = dentry_at(s, e)->sib_next)
					if (dentry_at(s, e)->inode == dir) {
						pd = e;
						break;
					}
				if (!pd)
					return -EIO;
			}
			chk = dentry_at(s, pd)->inode;
			if (chk != dir)
				return -EIO;
			rc = delete_checks(c, s, parent, dir, true);
			if (rc < 0)
				return rc;
			remove_entry(ns, parent, pd, dir);
			(*budget)--;
			if (nd->depth == base)
				return 1;
			continue;
		}
		rc = permission(c, di, MAY_READ | MAY_EXEC);
		if (rc < 0)
			return rc;
		mc_off_t e, v;
		rc = next_child(ns, dir, rs, &e, &v);
		if (rc < 0)
			return rc;
		if (S_ISDIR(inode_at(s, v)->mode)) {
			rc = nd_push(nd, v);
			if (rc < 0)
				return rc;
			continue;
		}
		rc = delete_checks(c, s, dir, v, false);
		if (rc < 0)
			return rc;
		remove_entry(ns, dir, e, v);
		(*budget)--;
	}
	return 0;
}

int ns_rmtree(struct ns *ns, const struct cred *c, const char *path, size_t len, unsigned batch)
{
	bool first = true;
	struct rm_resume rs = { 0 };
	for (;;) {
		struct nd nd;
		unsigned budget = batch ? batch : 1024;
		struct reclaim r;
		int rc;
		pthread_mutex_lock(&ns->lock);
		reclaim_begin(ns, &r);
		do {
			nd_init(&nd, ns, c);
			/* The bound is checked once: stopping half way would leave
			 * a half-removed tree behind an error (ns.h). */
			rc = first ? ns_journal_room(ns) : 0;
			if (rc == 0)
				rc = walk_parent(&nd, path, len);
			if (rc == 0) {
				switch (nd.last_type) {
				case MC_LAST_ROOT: rc = -EBUSY; break;
				case MC_LAST_DOT: rc = -EINVAL; break;
				case MC_LAST_DOTDOT: rc = -ENOTEMPTY; break;
				case MC_LAST_NORM: rc = rmtree_some(&nd, &budget, &rs); break;
				}
			}
			nd_free(&nd);
		} while (do_reclaim_retry(ns, rc, &r));
		pthread_mutex_unlock(&ns->lock);
		if (rc == -ENOENT && !first)
			return 0; /* someone else finished it */
		if (rc != 0)
			return rc < 0 ? rc : 0;
		first = false;
		sched_yield();
	}
}

