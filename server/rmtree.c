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

#define RM_NAMES 64u          /* names taken from the store per scan */

/* A name of the store scan, to remove. */
struct rm_name {
	uint64_t ino;
	uint8_t dtype;
	uint8_t len;
	bool has_rec;              /* rec read in the scan's snapshot */
	char name[MC_NAME_MAX];
	struct mc_inode_rec rec;
};

/* Where the store scan of a directory that is not complete goes on (after
 * the last name handed out for removal), and the names the last scan gave
 * that are not removed yet (names[next..n)).
 * The names are good only while the namespace lock is held since the scan
 * (rmtree_some empties them): a removal of one of them that is committed
 * meanwhile leaves a dirty negative dentry, which only a publish (under
 * the lock) makes evictable, so the cache check at use still sees it. */
struct rm_resume {
	uint64_t ino;              /* 0: none */
	uint8_t len;
	char name[MC_NAME_MAX];
	uint64_t names_dir;        /* inode number of the directory they are in */
	unsigned n, next;
	struct rm_name *names;     /* RM_NAMES */
};

struct scan_ctx {
	struct shm *s;
	mc_off_t dir;
	struct rm_resume *rs;
};

/* Take names the cache does not know to be removed, up to RM_NAMES. */
static int take_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype,
                    const struct mc_inode_rec *rec)
{
	struct scan_ctx *sc = arg;
	struct rm_resume *rs = sc->rs;
	mc_off_t d = dcache_find(sc->s, sc->dir, name, len);
	if (d && !(dentry_at(sc->s, d)->flags & MC_D_POSITIVE))
		return 0;
	struct rm_name *r = &rs->names[rs->n++];
	r->ino = ino;
	r->dtype = dtype;
	r->len = (uint8_t)len;
	memcpy(r->name, name, len);
	r->has_rec = rec != NULL;
	if (rec)
		r->rec = *rec;
	return rs->n == RM_NAMES;
}

/* Scan the store for the next names of dir after the resume point (from
 * the start when nothing is left after it: something came in behind).
 * Returns the number taken. */
static int scan_names(struct ns *ns, mc_off_t dir, struct rm_resume *rs)
{
	struct shm *s = ns->shm;
	uint64_t ino = inode_at(s, dir)->ino;
	struct scan_ctx sc = { .s = s, .dir = dir, .rs = rs };
	bool from = rs->ino == ino;
	rs->n = rs->next = 0;
	rs->names_dir = ino;
	int rc = store_scan_dir_attrs(ns->store, ino, from ? rs->name : NULL, from ? rs->len : 0,
	                              take_one, &sc);
	if (rc >= 0 && rs->n == 0 && from) {
		rs->ino = 0;
		rc = store_scan_dir_attrs(ns->store, ino, NULL, 0, take_one, &sc);
	}
	if (rc < 0)
		return rc;
	return (int)rs->n;
}

/* r (the next of rs->names) is handed out: the scan goes on after it. */
static void resume_at(struct rm_resume *rs, const struct rm_name *r)
{
	rs->next++;
	rs->ino = rs->names_dir;
	rs->len = r->len;
	memcpy(rs->name, r->name, r->len);
}

/* Remove r, a name of dir (not complete) naming a regular file with one
 * link that the cache does not hold, without caching the file: the same
 * checks, records and negative entry (the store has the name until the
 * commit) as remove_entry after loading it, and no inode slot. -ENOSPC
 * (no room for the negative entry) changes nothing. */
static int remove_uncached(struct ns *ns, const struct cred *c, mc_off_t dir,
                           const struct rm_name *r)
{
	struct shm *s = ns->shm;
	struct mc_inode *di = inode_at(s, dir);
	int rc = permission(c, di, MAY_WRITE | MAY_EXEC);
	if (rc < 0)
		return rc;
	struct mc_inode vi;
	memset(&vi, 0, sizeof(vi));
	vi.uid = r->rec.uid;
	vi.mode = (uint16_t)r->rec.mode;
	if (sticky_denies(c, di, &vi))
		return -EPERM;
	mc_off_t d = dcache_add(s, dir, r->name, r->len, 0, 0);
	if (!d)
		return -ENOSPC;
	watch_note_entry(di->ino, r->name, r->len);
	must(journal_del_dentry(ns->running, di->ino, r->name, r->len),
	     "journaling a dentry delete");
	dentry_dirty(ns, d);
	must(journal_del_inode(ns->running, r->ino), "journaling a delete");
	extent_ino_drop(&ns->ext, r->ino);
	dir_entries(ns, dir, -1, 0, now_ns());
	return 0;
}

/* The next taken name of dir that is still to be removed, cached (loaded
 * as a listing loads it: the scan gave its inode number, no dentry read),
 * or, for a plain file the cache does not hold, removed at once
 * (remove_uncached, *gone). *d 0 and *gone false when none is left. */
static int take_next(struct ns *ns, const struct cred *c, mc_off_t dir, struct rm_resume *rs,
                     mc_off_t *d, mc_off_t *v, bool *gone)
{
	struct shm *s = ns->shm;
	*d = 0;
	*gone = false;
	if (rs->names_dir != inode_at(s, dir)->ino)
		rs->n = rs->next = 0;
	while (rs->next < rs->n) {
		/* Each name is handed out once: its removal follows, and the
		 * next scan (after the lock was dropped, when the names left
		 * are forgotten) goes on after it. A name that could not be
		 * cached or removed for want of room stays first (resume_at). */
		const struct rm_name *r = &rs->names[rs->next];
		mc_off_t e = dcache_find(s, dir, r->name, r->len);
		if (e) {
			resume_at(rs, r);
			if (!(dentry_at(s, e)->flags & MC_D_POSITIVE))
				continue;
			*d = e;
			*v = dentry_at(s, e)->inode;
			return 0;
		}
		/* The inode as the scan read it, when the cache does not have
		 * it: nothing changes an uncached inode without the lock. A
		 * directory goes through ns_load_inode (an empty one becomes
		 * complete), and so does a symlink (its target). */
		mc_off_t ioff = inode_find(s, r->ino);
		if (!ioff && r->has_rec && S_ISREG(r->rec.mode) && r->rec.nlink == 1) {
			int rc = remove_uncached(ns, c, dir, r);
			if (rc < 0)
				return rc;
			resume_at(rs, r);
			*gone = true;
			return 0;
		}
		if (!ioff && r->has_rec && !S_ISDIR(r->rec.mode)) {
			ioff = inode_add(s, &r->rec, NULL, 0);
			if (!ioff)
				return -ENOSPC;
			ns->shr.st.reloads++;
		} else if (!ioff) {
			int rc = ns_load_inode(ns, r->ino, &ioff);
			if (rc < 0)
				return rc;
		}
		e = dcache_add(s, dir, r->name, r->len, ioff, r->dtype);
		if (!e)
			return -ENOSPC;
		resume_at(rs, r);
		*d = e;
		*v = ioff;
		return 0;
	}
	return 0;
}

/* A child of dir (which has entries) to remove next: from the child list
 * when dir is complete; else the next name of the store after the resume
 * point, RM_NAMES per scan, so that a directory larger than the cache is
 * removed without loading it whole and in O(entries); at the end of the
 * store, what only the cache has (uncommitted creates). *d its dentry, *v
 * its inode; or *gone when it was a plain file removed at once. */
static int next_child(struct ns *ns, const struct cred *c, mc_off_t dir, struct rm_resume *rs,
                      mc_off_t *d, mc_off_t *v, bool *gone)
{
	struct shm *s = ns->shm;
	*gone = false;
	if (!dcache_complete(s, dir)) {
		int rc = take_next(ns, c, dir, rs, d, v, gone);
		if (rc == 0 && !*d && !*gone) {
			rc = scan_names(ns, dir, rs);
			if (rc > 0)
				rc = take_next(ns, c, dir, rs, d, v, gone);
		}
		if (rc < 0)
			return rc;
		if (*d || *gone)
			return 0;
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
	rs->n = rs->next = 0; /* good only under this lock hold */
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
		ns->shr.st.rmtree_entries++;
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
			ns->shr.st.rmtree_entries++;
			(*budget)--;
			if (nd->depth == base)
				return 1;
			continue;
		}
		rc = permission(c, di, MAY_READ | MAY_EXEC);
		if (rc < 0)
			return rc;
		mc_off_t e, v;
		bool gone;
		rc = next_child(ns, c, dir, rs, &e, &v, &gone);
		if (rc < 0)
			return rc;
		if (gone) {
			ns->shr.st.rmtree_entries++;
			(*budget)--;
			continue;
		}
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
		ns->shr.st.rmtree_entries++;
		(*budget)--;
	}
	return 0;
}

int ns_rmtree(struct ns *ns, const struct cred *c, const char *path, size_t len, unsigned batch)
{
	bool first = true;
	struct rm_resume rs = { 0 };
	rs.names = malloc(RM_NAMES * sizeof(*rs.names));
	if (!rs.names)
		return -ENOMEM;
	int ret;
	for (;;) {
		struct nd nd;
		unsigned budget = batch ? batch : 1024;
		struct reclaim r;
		int rc;
		/* A committer waiting for the lock gets it first: else the
		 * removals' negative entries pile up uncommitted. */
		ns_lock_op(ns);
		reclaim_begin(ns, &r);
		do {
			unsigned left = budget;
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
			/* Removals done stay done, each leaving a dirty
			 * negative that may take an evicted entry's room. */
			if (budget < left)
				reclaim_progress(&r);
		} while (do_reclaim_retry(ns, rc, &r));
		pthread_mutex_unlock(&ns->lock);
		if (rc == -ENOENT && !first) {
			ret = 0; /* someone else finished it */
			break;
		}
		if (rc != 0) {
			ret = rc < 0 ? rc : 0;
			break;
		}
		first = false;
		sched_yield();
	}
	free(rs.names);
	return ret;
}

