/* rmtree.c - server-side recursive delete (rm -rf in one call), in bounded
 * batches: the namespace lock is dropped every `batch` removals so other
 * clients are served, and the walk restarts from the path each time; and
 * the removal of a file the cache does not hold, which unlink shares. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "ns_impl.h"

/* ---- removing what the cache does not hold (ns.c note 7) ----------------- */

bool sticky_needs_victim(const struct cred *c, const struct mc_inode *dir)
{
	return (dir->mode & S_ISVTX) && c->uid != 0 && c->uid != dir->uid;
}

int remove_uncached(struct ns *ns, const struct cred *c, mc_off_t dir, const char *name,
                    size_t len, uint64_t ino, const struct mc_inode_rec *rec)
{
	struct shm *s = ns->shm;
	struct mc_inode *di = inode_at(s, dir);
	assert(!dcache_complete(s, dir) && !inode_find(s, ino));
	assert(rec ? !S_ISDIR(rec->mode) && rec->ino == ino : !sticky_needs_victim(c, di));
	int rc = permission(c, di, MAY_WRITE | MAY_EXEC);
	if (rc < 0)
		return rc;
	if (rec) {
		struct mc_inode vi;
		memset(&vi, 0, sizeof(vi));
		vi.uid = rec->uid;
		vi.mode = (uint16_t)rec->mode;
		if (sticky_denies(c, di, &vi))
			return -EPERM;
	}
	mc_off_t d = dcache_add(s, dir, name, len, 0, 0);
	if (!d)
		return -ENOSPC;
	int64_t now = now_ns();
	watch_note_entry(di->ino, name, len);
	watch_note_inode(ino);        /* its link count, or gone */
	must(journal_del_dentry(ns->running, di->ino, name, len), "journaling a dentry delete");
	dentry_dirty(ns, d);
	if (rec && rec->nlink == 1)
		must(journal_del_inode(ns->running, ino), "journaling a delete");
	else
		inode_unlinked(ns, ino, now); /* ns.c note 7 */
	/* Clean if any (an uncached inode pins no extent state); gone, or
	 * reloaded from the store. */
	extent_ino_drop(&ns->ext, ino);
	dir_entries(ns, dir, -1, 0, now);
	return 0;
}

/* ---- rmtree -------------------------------------------------------------- */

#define RM_NAMES 64u          /* names taken from the store per scan */

/* A name of the store scan, to remove. */
struct rm_name {
	uint64_t ino;
	uint8_t dtype;
	uint8_t len;
	bool has_rec;              /* rec read in the scan's snapshot */
	mc_off_t d;                /* its positive dentry when the scan found one cached */
	char name[MC_NAME_MAX];
	struct mc_inode_rec rec;
};

/* Where the store scan of a directory that is not complete goes on (after
 * the last name handed out for removal), and the names the last scan gave
 * that are not removed yet (names[next..n)).
 * The names are good only while the namespace lock is held since the scan
 * (rmtree_some empties them): a removal of one of them that is committed
 * meanwhile leaves a dirty negative dentry, which only a publish (under
 * the lock) makes evictable, so the cache check at use still sees it.
 * Within that hold the cache state each name had at the scan stays: only
 * its own removal changes it, eviction waits for the next attempt, and
 * the other removals, loads and descents touch no other name of dir. */
struct rm_resume {
	uint64_t ino;              /* 0: none */
	uint8_t len;
	char name[MC_NAME_MAX];
	uint64_t names_dir;        /* inode number of the directory they are in */
	unsigned n, next;
	struct rm_name *names;     /* RM_NAMES */
	/* Where the walk of a child list goes on, in this lock hold: the
	 * entries before it are negative or handed out, and it is the next
	 * of the one handed out last, which its removal leaves listed. */
	uint64_t list_dir;         /* inode number of the directory; 0: none */
	mc_off_t list_at;
};

struct scan_ctx {
	struct shm *s;
	mc_off_t dir;
	struct rm_resume *rs;
	uint64_t *visits;
};

/* Take names the cache does not know to be removed, up to RM_NAMES. */
static int take_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype,
                    const struct mc_inode_rec *rec)
{
	struct scan_ctx *sc = arg;
	struct rm_resume *rs = sc->rs;
	(*sc->visits)++;
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
	r->d = d;
	return rs->n == RM_NAMES;
}

/* take_one without the inode: a file goes without it (ns.c note 7). */
static int take_name(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	return take_one(arg, name, len, ino, dtype, NULL);
}

static int scan_from(struct ns *ns, bool attrs, uint64_t ino, const char *after, size_t len,
                     struct scan_ctx *sc)
{
	return attrs ? store_scan_dir_attrs(ns->store, ino, after, len, take_one, sc)
	             : store_scan_dir_after(ns->store, ino, after, len, take_name, sc);
}

/* Scan the store for the next names of dir after the resume point (from
 * the start when nothing is left after it: something came in behind),
 * with their inodes when the sticky rule needs their owners. Returns the
 * number taken. */
static int scan_names(struct ns *ns, const struct cred *c, mc_off_t dir, struct rm_resume *rs)
{
	struct shm *s = ns->shm;
	uint64_t ino = inode_at(s, dir)->ino;
	struct scan_ctx sc = { .s = s, .dir = dir, .rs = rs, .visits = &ns->shr.st.rmtree_visits };
	bool from = rs->ino == ino, attrs = sticky_needs_victim(c, inode_at(s, dir));
	rs->n = rs->next = 0;
	rs->names_dir = ino;
	int rc = scan_from(ns, attrs, ino, from ? rs->name : NULL, from ? rs->len : 0, &sc);
	if (rc >= 0 && rs->n == 0 && from) {
		rs->ino = 0;
		rc = scan_from(ns, attrs, ino, NULL, 0, &sc);
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

/* The next taken name of dir that is still to be removed, cached (loaded
 * as a listing loads it: the scan gave its inode number, no dentry read),
 * or, for a non-directory the cache does not hold, removed at once
 * without its inode (remove_uncached, ns.c note 7: *gone). *d 0 and
 * *gone false when none is left. */
static int take_next(struct ns *ns, const struct cred *c, mc_off_t dir, struct rm_resume *rs,
                     mc_off_t *d, mc_off_t *v, bool *gone)
{
	struct shm *s = ns->shm;
	*d = 0;
	*gone = false;
	if (rs->names_dir != inode_at(s, dir)->ino)
		rs->n = rs->next = 0;
	if (rs->next >= rs->n)
		return 0;
	/* Each name is handed out once: its removal follows, and the next
	 * scan (after the lock was dropped, when the names left are
	 * forgotten) goes on after it. A name that could not be cached or
	 * removed for want of room stays first (resume_at). Its cache state
	 * is the scan's (struct rm_resume). */
	const struct rm_name *r = &rs->names[rs->next];
	if (r->d) {
		resume_at(rs, r);
		*d = r->d;
		*v = dentry_at(s, r->d)->inode;
		return 0;
	}
	mc_off_t ioff = inode_find(s, r->ino);
	bool isdir = r->has_rec ? S_ISDIR(r->rec.mode) : r->dtype == DT_DIR || r->dtype == DT_UNKNOWN;
	if (!ioff && !isdir && (r->has_rec || !sticky_needs_victim(c, inode_at(s, dir)))) {
		int rc = remove_uncached(ns, c, dir, r->name, r->len, r->ino,
		                         r->has_rec ? &r->rec : NULL);
		if (rc < 0)
			return rc;
		resume_at(rs, r);
		*gone = true;
		return 0;
	}
	/* A directory (an empty one becomes complete), or a symlink whose
	 * owner the sticky rule needs (the scan does not read targets). */
	if (!ioff) {
		int rc = ns_load_inode(ns, r->ino, &ioff);
		if (rc < 0)
			return rc;
	}
	mc_off_t e = dcache_add(s, dir, r->name, r->len, ioff, r->dtype);
	if (!e)
		return -ENOSPC;
	resume_at(rs, r);
	*d = e;
	*v = ioff;
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
	struct mc_inode *di = inode_at(s, dir);
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	*gone = false;
	/* Every entry cached (uncommitted creates, what is left of a
	 * directory partly cached): the child list has them all. */
	bool all_cached = dx && dx->ncached - dx->nneg == di->u.dir.nentries;
	if (!dcache_complete(s, dir) && !all_cached) {
		int rc = take_next(ns, c, dir, rs, d, v, gone);
		if (rc == 0 && !*d && !*gone) {
			rc = scan_names(ns, c, dir, rs);
			if (rc > 0)
				rc = take_next(ns, c, dir, rs, d, v, gone);
		}
		if (rc < 0)
			return rc;
		if (*d || *gone)
			return 0;
	}
	/* Removed names stay listed as negatives until their commit: the
	 * walk goes on where the last one stopped, not from the head. */
	bool at = rs->list_dir == di->ino && rs->list_at;
	mc_off_t e = at ? rs->list_at : dx ? dx->head : 0;
	for (; e && !(dentry_at(s, e)->flags & MC_D_POSITIVE); e = dentry_at(s, e)->sib_next)
		ns->shr.st.rmtree_visits++;
	if (!e && at) {
		rs->list_dir = 0; /* cannot happen, but survive: from the head */
		return next_child(ns, c, dir, rs, d, v, gone);
	}
	if (!e)
		return -EIO; /* nentries > 0 but nothing listed */
	rs->list_dir = di->ino;
	rs->list_at = dentry_at(s, e)->sib_next;
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
	rs->list_dir = 0;
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
				case MC_LAST_NORM:
					dir_defer_begin(ns);
					rc = rmtree_some(&nd, &budget, &rs);
					dir_defer_end(ns);
					break;
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

