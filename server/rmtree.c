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

/* Remove up to *budget entries below (and then) the tree at the walk's last
 * component. Returns 1 when the tree is gone, 0 when the budget ran out. */
static int rmtree_some(struct nd *nd, unsigned *budget)
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
		rc = ns_load_dir(ns, dir);
		if (rc < 0)
			return rc;
		struct mc_dirx *dx = dcache_dirx(s, dir, false);
		mc_off_t e = dx->head;
		while (e && !(dentry_at(s, e)->flags & MC_D_POSITIVE))
			e = dentry_at(s, e)->sib_next;
		if (!e)
			return -EIO; /* nentries > 0 but nothing listed */
		mc_off_t v = dentry_at(s, e)->inode;
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
				case MC_LAST_NORM: rc = rmtree_some(&nd, &budget); break;
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

