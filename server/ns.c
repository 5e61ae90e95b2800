/* ns.c - namespace operations on the cached tree, with Linux/tmpfs
 * semantics, and the journal they feed.
 *
 * NOTES ON THE DESIGN OF THE NAMESPACE
 *  1. One mutex (ns->lock) orders every change; clients read the segment
 *     without it (seq counters). An operation first resolves and checks,
 *     then allocates what it needs (and may still fail with -ENOSPC, undoing
 *     its allocations), and only then changes anything: nothing in the
 *     change step can fail, so an error leaves the namespace unchanged.
 *  2. Every change appends journal records to the running batch and marks
 *     the slots it touched dirty with the batch's parity bit (DIRTY0/1). A
 *     dirty slot is pinned: it is newer than the store. ns_publish() clears
 *     the bits of a committed batch; at most two batches are open (one
 *     committing, one running), so two bits suffice. The one exception:
 *     a directory's own record, changed by every create or removal in it,
 *     may be owed across an rmtree attempt or a run of operations under
 *     one lock and written once (ns_name.c, dir_defer_begin), always
 *     before the batch is handed to the committer (ns_swap).
 *  3. Removing a name from a complete directory frees the dentry at once:
 *     the directory answers misses itself. Elsewhere the name becomes a
 *     dirty negative dentry, pinned until its removal is committed, so a
 *     miss can never fall through to a store that still has the name.
 *     (Whoever clears a directory's complete flag must not do so while a
 *     removal so freed is not committed: the store still has the name.
 *     The dirx's rm_seq records the batch of the last one, rounded up to
 *     an odd number so that 0 means none.)
 *  4. An inode whose link count reaches 0 is deleted from the store at once
 *     (INODE_DEL) and freed from the cache when no open handle holds it.
 *  5. A removed directory's cached children are pruned at once, in
 *     O(children); a directory whose last entry goes becomes complete and
 *     drops its negative entries (dcache_now_empty).
 *  6. The cache is bounded (shrink.c): public operations run their attempt
 *     under NS_LOCKED or a reclaim loop, so that when the segment is full
 *     the attempt fails whole, eviction runs between attempts, and the
 *     attempt runs again. do_*() functions are called with the lock held.
 *  7. A non-directory the cache does not hold is removed without reading
 *     or loading its inode (remove_uncached in rmtree.c: unlink and rmtree,
 *     when the name is not cached either): an INODE_UNLINK record tells the store to
 *     drop one link, deleting the inode at none. Its link count is not
 *     known, so until that record's batch is published (ns->drops) the
 *     inode is never loaded from the store, which may or may not have
 *     applied it yet: a load waits for the commit (ns_cache_inode_rec,
 *     do_reclaim_retry) and warmers leave it out. No open handle can hold
 *     it: a held inode stays cached. When the link count read with the
 *     name says one link, the record is an INODE_DEL and nothing waits.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "extent_ns.h"
#include "log.h"
#include "ns_impl.h"

/* ---- runs of operations under one lock (ns_hold_begin) ------------------- */

_Thread_local struct ns *ns_held;

void ns_hold_begin(struct ns *ns)
{
	assert(ns_held == NULL);
	ns_lock_op(ns);
	ns_lock_short_set(ns, true);
	ns_held = ns;
	walk_memo_forget(ns);
}

void ns_hold_yield(struct ns *ns)
{
	assert(ns_held == ns);
	if (!atomic_load_explicit(&ns->committer_waiting, memory_order_relaxed))
		return;
	walk_memo_forget(ns); /* before others run: none of theirs may carry it over */
	ns_lock_short_set(ns, false);
	pthread_mutex_unlock(&ns->lock);
	ns_lock_op(ns);
	ns_lock_short_set(ns, true);
}

void ns_hold_end(struct ns *ns)
{
	assert(ns_held == ns);
	dir_owed_flush(ns); /* the run's directory record (ns_name.c) */
	ns_held = NULL;
	walk_memo_forget(ns);
	ns_lock_short_set(ns, false);
	pthread_mutex_unlock(&ns->lock);
}

/* ---- holds: inodes kept by open handles ---------------------------------- */

static uint64_t hold_count(const struct ns *ns, uint64_t ino)
{
	uint64_t *n = map_find(&ns->holds, ino);
	return n ? *n : 0;
}

/* One more hold on ino; map_reserve() made room before. */
static void hold_add(struct ns *ns, uint64_t ino)
{
	uint64_t *n = map_find(&ns->holds, ino);
	if (n)
		(*n)++;
	else
		must(map_put(&ns->holds, ino, 1), "adding a hold"); /* room reserved */
}

/* Drop one hold; returns how many are left. */
static uint64_t hold_drop(struct ns *ns, uint64_t ino)
{
	uint64_t *n = map_find(&ns->holds, ino);
	if (!n)
		return 0;
	if (--*n > 0)
		return *n;
	map_del(&ns->holds, ino);
	return 0;
}

/* Free an inode without links once nothing holds it. */
void inode_maybe_free(struct ns *ns, mc_off_t off)
{
	struct mc_inode *i = inode_at(ns->shm, off);
	if (i->nlink > 0 || hold_count(ns, i->ino) > 0)
		return;
	if (S_ISDIR(i->mode))
		dcache_prune(ns->shm, off);
	extent_ino_drop(&ns->ext, i->ino);
	inode_del(ns->shm, off);
}

/* ---- lifecycle ----------------------------------------------------------- */

static _Atomic uint64_t ns_ids;

int ns_new(struct shm *shm, struct store *st, const struct ns_opts *o, struct ns **out)
{
	struct store_meta meta;
	int rc = store_get_meta(st, &meta);
	if (rc < 0)
		return rc;
	struct ns *ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	pthread_mutex_init(&ns->lock, NULL);
	commit_sem_init(&ns->csem);
	ns_journal_init(ns, o);
	ns->shm = shm;
	ns->store = st;
	ns->id = atomic_fetch_add(&ns_ids, 1) + 1;
	extent_cache_init(&ns->ext, shm);
	ns->next_ino = meta.next_ino;
	ns->neg_max = o && o->neg_max ? o->neg_max : shm->size / 112 / 8;
	ns->neg_dir_max = o && o->neg_dir_max ? o->neg_dir_max : NS_NEG_DIR_MAX;
	shrink_init(ns, o);
	ns->running = calloc(1, sizeof(*ns->running));
	ns->spare = calloc(1, sizeof(*ns->spare));
	if (!ns->running || !ns->spare) {
		rc = -ENOMEM;
		goto fail;
	}
	journal_batch_init(ns->running, meta.last_seq + 1);
	journal_batch_init(ns->spare, 0);
	mc_off_t root;
	rc = ns_load_inode(ns, 1, &root);
	if (rc < 0)
		goto fail;
	shm->hdr->root = root;
	atomic_store_explicit(&shm->hdr->committed_seq, meta.last_seq, memory_order_release);
	*out = ns;
	return 0;
fail:
	ns_free(ns);
	return rc;
}

void ns_free(struct ns *ns)
{
	if (!ns)
		return;
	if (ns->running)
		journal_batch_free(ns->running);
	if (ns->spare)
		journal_batch_free(ns->spare);
	/* A batch the committer could never write (it logged the loss). */
	if (ns->swapped)
		journal_batch_free(ns->swapped);
	free(ns->running);
	free(ns->spare);
	free(ns->swapped);
	for (int p = 0; p < 2; p++) {
		free(ns->dirty_d[p].v);
		free(ns->dirty_i[p].v);
		map_free(&ns->recs[p]);
		map_free(&ns->drops[p]);
		map_free(&ns->drops_more[p]);
	}
	map_free(&ns->holds);
	extent_cache_fini(&ns->ext);
	shrink_fini(ns);
	ns_listing_free(ns);
	ns_journal_fini(ns);
	pthread_mutex_destroy(&ns->lock);
	commit_sem_destroy(&ns->csem);
	free(ns);
}

/* ---- reading ------------------------------------------------------------- */

int ns_stat(struct ns *ns, const struct cred *c, const char *path, size_t len, bool follow,
            ns_attr *out)
{
	struct nd nd;
	struct reclaim r;
	mc_off_t res;
	int rc;
	pthread_mutex_lock(&ns->lock);
	reclaim_begin(ns, &r);
	do {
		nd_init(&nd, ns, c);
		rc = walk_path(&nd, path, len, follow, &res);
		if (rc == 0)
			inode_rec(ns->shm, res, out);
		nd_free(&nd);
	} while (do_reclaim_retry(ns, rc, &r));
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int ns_readlink(struct ns *ns, const struct cred *c, const char *path, size_t len, char *buf,
                size_t *out_len)
{
	struct nd nd;
	struct reclaim r;
	mc_off_t res;
	int rc;
	pthread_mutex_lock(&ns->lock);
	reclaim_begin(ns, &r);
	do {
		nd_init(&nd, ns, c);
		rc = walk_path(&nd, path, len, false, &res);
		if (rc == 0 && !S_ISLNK(inode_at(ns->shm, res)->mode)) {
			rc = -EINVAL;
		} else if (rc == 0) {
			size_t tlen;
			const char *t = inode_target(ns->shm, res, &tlen);
			memcpy(buf, t, tlen);
			*out_len = tlen;
		}
		nd_free(&nd);
	} while (do_reclaim_retry(ns, rc, &r));
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int ns_stat_ino(struct ns *ns, uint64_t ino, ns_attr *out)
{
	pthread_mutex_lock(&ns->lock);
	mc_off_t off = inode_find(ns->shm, ino);
	if (off)
		inode_rec(ns->shm, off, out);
	pthread_mutex_unlock(&ns->lock);
	return off ? 0 : -ENOENT;
}

/* ---- creating ------------------------------------------------------------ */

/* inode_init_owner(): uid from the caller; gid from the caller, or from a
 * setgid parent (whose bit new directories inherit). */
static void init_owner(const struct cred *c, const struct mc_inode *dir, struct mc_inode_rec *r)
{
	r->uid = c->uid;
	if (dir->mode & S_ISGID) {
		r->gid = dir->gid;
		if (S_ISDIR(r->mode))
			r->mode |= S_ISGID;
		else if ((r->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && c->uid != 0 &&
		         !in_group(c, r->gid))
			r->mode &= ~(uint32_t)S_ISGID;
	} else {
		r->gid = c->gid;
	}
}

/* Create an inode of rec's type named name in dir (the checks are done).
 * d: the name's cached negative dentry, or 0. rdev: a device's number. */
static int create_in(struct ns *ns, const struct cred *c, mc_off_t dir, mc_off_t d,
                     const char *name, size_t len, uint32_t mode, const char *target,
                     size_t tlen, uint64_t rdev, mc_off_t *out)
{
	struct shm *s = ns->shm;
	int64_t now = now_ns();
	struct mc_inode_rec r = { 0 };
	r.ino = ns->next_ino;
	r.mode = mode;
	r.nlink = S_ISDIR(mode) ? 2 : 1;
	r.size = S_ISLNK(mode) ? tlen : (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0;
	r.atime_ns = r.mtime_ns = r.ctime_ns = now;
	init_owner(c, inode_at(s, dir), &r);

	mc_off_t off = inode_add(s, &r, target, tlen);
	if (!off)
		return -ENOSPC;
	if (S_ISDIR(mode) && !dcache_set_complete(s, off)) {
		inode_del(s, off);
		return -ENOSPC;
	}
	/* A name not cached gets its dentry positive at once (no negative
	 * placeholder to turn). */
	uint8_t dtype = (uint8_t)IFTODT(mode);
	mc_off_t de = d ? d : dcache_add(s, dir, name, len, off, dtype);
	if (!de) {
		inode_del(s, off);
		return -ENOSPC;
	}
	ns->next_ino++;
	inode_prefetch(s, ns->next_ino); /* the next create's bucket (walk.c note 4) */
	inode_changed(ns, off);
	if (d)
		name_set(ns, dir, d, off);
	else
		name_record(ns, dir, de, inode_at(s, off), dtype);
	dir_entries(ns, dir, +1, S_ISDIR(mode) ? 1 : 0, now);
	*out = off;
	return 0;
}

/* filename_create(): the checks before creating the last component. */
static int create_checks(struct nd *nd, bool is_dir, mc_off_t *d)
{
	if (nd->last_type != MC_LAST_NORM)
		return -EEXIST;
	mc_off_t ino;
	int rc = ns_lookup(nd->ns, nd_top(nd), nd->last, nd->lastlen, d, &ino);
	if (rc < 0)
		return rc;
	if (ino)
		return -EEXIST;
	if (nd->slash && !is_dir)
		return -ENOENT;
	return permission(nd->cred, inode_at(nd->ns->shm, nd_top(nd)), MAY_WRITE | MAY_EXEC);
}

int ns_create_path(struct ns *ns, const struct cred *c, const char *path, size_t len,
                   uint32_t mode, const char *target, size_t target_len, uint64_t rdev,
                   ns_attr *out)
{
	struct nd nd;
	struct reclaim r;
	mc_off_t d, off;
	int rc;
	bool took = ns_lock_unless_held(ns);
	reclaim_begin(ns, &r);
	do {
		nd_init(&nd, ns, c);
		rc = ns_journal_room(ns);
		if (rc == 0)
			rc = walk_parent(&nd, path, len);
		if (rc == 0)
			rc = create_checks(&nd, S_ISDIR(mode), &d);
		/* vfs_mknod(): CAP_MKNOD after the directory's checks. */
		if (rc == 0 && (S_ISCHR(mode) || S_ISBLK(mode)) && c->uid != 0)
			rc = -EPERM;
		if (rc == 0)
			rc = create_in(ns, c, nd_top(&nd), d, nd.last, nd.lastlen, mode, target,
			               target_len, rdev, &off);
		if (rc == 0 && out)
			inode_rec(ns->shm, off, out);
		nd_free(&nd);
	} while (do_reclaim_retry(ns, rc, &r));
	if (took)
		pthread_mutex_unlock(&ns->lock);
	return rc;
}

int ns_mkdir(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t mode,
             ns_attr *out)
{
	return ns_create_path(ns, c, path, len, S_IFDIR | (mode & 01777), NULL, 0, 0, out);
}

int ns_symlink(struct ns *ns, const struct cred *c, const char *target, size_t target_len,
               const char *path, size_t len)
{
	if (target_len == 0)
		return -ENOENT;
	if (target_len > MC_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (memchr(target, 0, target_len))
		return -EINVAL;
	return ns_create_path(ns, c, path, len, S_IFLNK | 0777, target, target_len, 0, NULL);
}

/* open(2) of the last component, in the kernel's order (open_last_lookups
 * then do_open): trailing slashes, O_CREAT, symlinks, O_EXCL, O_DIRECTORY,
 * then may_open's type and permission checks. */
static int do_open(struct nd *nd, const char *path, size_t len, int flags, uint32_t mode,
                   mc_off_t *out)
{
	struct ns *ns = nd->ns;
	struct shm *s = ns->shm;
	bool creat = flags & O_CREAT;
	bool excl = creat && (flags & O_EXCL);
	bool follow = !(flags & O_NOFOLLOW) && !excl;
	bool want_dir = flags & O_DIRECTORY;
	int acc = (flags & O_ACCMODE) == O_RDONLY ? MAY_READ
	        : (flags & O_ACCMODE) == O_WRONLY ? MAY_WRITE : MAY_READ | MAY_WRITE;
	if (flags & O_TRUNC)
		acc |= MAY_WRITE;
	bool created = false;
	mc_off_t target = 0;
	int rc = walk_parent(nd, path, len);
	if (rc < 0)
		return rc;
	for (;;) {
		if (nd->last_type != MC_LAST_NORM) {
			rc = walk_last(nd, true, &target);
			if (rc < 0)
				return rc;
			break;
		}
		if (nd->slash) {
			if (creat)
				return -EISDIR;
			follow = true;     /* "name/" means the directory it names */
			want_dir = true;
		}
		mc_off_t d, ino;
		rc = ns_lookup(ns, nd_top(nd), nd->last, nd->lastlen, &d, &ino);
		if (rc < 0)
			return rc;
		if (!ino) {
			if (!creat)
				return -ENOENT;
			rc = permission(nd->cred, inode_at(s, nd_top(nd)), MAY_WRITE | MAY_EXEC);
			if (rc < 0)
				return rc;
			rc = create_in(ns, nd->cred, nd_top(nd), d, nd->last, nd->lastlen,
			               S_IFREG | (mode & 07777), NULL, 0, 0, &target);
			if (rc < 0)
				return rc;
			created = true;
			break;
		}
		struct mc_inode *i = inode_at(s, ino);
		if (S_ISLNK(i->mode) && follow) {
			if (++nd->nlinks > NS_MAX_SYMLINKS)
				return -ELOOP;
			size_t tlen;
			const char *t = inode_target(s, ino, &tlen);
			rc = walk_parent(nd, t, tlen);
			if (rc < 0)
				return rc;
			continue;
		}
		target = ino;
		break;
	}
	struct mc_inode *i = inode_at(s, target);
	if (creat) {
		if (excl && !created)
			return -EEXIST;
		if (S_ISDIR(i->mode))
			return -EISDIR;
	}
	if (want_dir && !S_ISDIR(i->mode))
		return -ENOTDIR;
	if (!created) {
		if (S_ISLNK(i->mode))
			return -ELOOP;
		if (S_ISDIR(i->mode) && (acc & MAY_WRITE))
			return -EISDIR;
		rc = permission(nd->cred, i, acc);
		if (rc < 0)
			return rc;
		if ((flags & O_TRUNC) && S_ISREG(i->mode)) {
			rc = do_extent_truncate(ns, target, 0);
			if (rc < 0)
				return rc;
			set_size(ns, target, 0);
		}
	}
	*out = target;
	return 0;
}

int ns_open(struct ns *ns, const struct cred *c, const char *path, size_t len, int flags,
            uint32_t mode, bool hold, ns_attr *out)
{
	struct nd nd;
	struct reclaim r;
	mc_off_t off;
	int rc;
	if ((flags & O_CREAT) && (flags & O_DIRECTORY))
		return -EINVAL;
	bool took = ns_lock_unless_held(ns);
	reclaim_begin(ns, &r);
	do {
		nd_init(&nd, ns, c);
		/* Room for the hold first: failing after O_CREAT made the file
		 * would break "unchanged on failure". */
		rc = flags & (O_CREAT | O_TRUNC) ? ns_journal_room(ns) : 0;
		if (rc == 0 && hold)
			rc = map_reserve(&ns->holds);
		if (rc == 0)
			rc = do_open(&nd, path, len, flags, mode, &off);
		if (rc == 0 && hold)
			hold_add(ns, inode_at(ns->shm, off)->ino);
		if (rc == 0 && out)
			inode_rec(ns->shm, off, out);
		nd_free(&nd);
	} while (do_reclaim_retry(ns, rc, &r));
	if (took)
		pthread_mutex_unlock(&ns->lock);
	return rc;
}

void ns_release(struct ns *ns, uint64_t ino)
{
	pthread_mutex_lock(&ns->lock);
	if (hold_drop(ns, ino) == 0) {
		mc_off_t off = inode_find(ns->shm, ino);
		if (off)
			inode_maybe_free(ns, off);
	}
	pthread_mutex_unlock(&ns->lock);
}

static int do_link(struct ns *ns, const struct cred *c, const char *from, size_t flen,
                   const char *to, size_t tlen)
{
	struct nd nd, nd2;
	mc_off_t src, d;
	struct shm *s = ns->shm;
	nd_init(&nd, ns, c);
	nd_init(&nd2, ns, c);
	int rc = ns_journal_room(ns);
	if (rc == 0)
		rc = walk_path(&nd, from, flen, false, &src);
	if (rc < 0)
		goto out;
	rc = walk_parent(&nd2, to, tlen);
	if (rc < 0)
		goto out;
	if (nd2.last_type != MC_LAST_NORM) {
		rc = -EEXIST;
		goto out;
	}
	mc_off_t ino;
	rc = ns_lookup(ns, nd_top(&nd2), nd2.last, nd2.lastlen, &d, &ino);
	if (rc < 0)
		goto out;
	if (ino) {
		rc = -EEXIST;
		goto out;
	}
	if (nd2.slash) {
		rc = -ENOENT;
		goto out;
	}
	struct mc_inode *i = inode_at(s, src);
	/* may_linkat() with protected_hardlinks: others' files need to be
	 * regular, not setuid/setgid-executable, and readable and writable. */
	if (c->uid != 0 && c->uid != i->uid) {
		if (!S_ISREG(i->mode) || (i->mode & S_ISUID) ||
		    (i->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ||
		    permission(c, i, MAY_READ | MAY_WRITE) < 0) {
			rc = -EPERM;
			goto out;
		}
	}
	rc = permission(c, inode_at(s, nd_top(&nd2)), MAY_WRITE | MAY_EXEC);
	if (rc < 0)
		goto out;
	if (S_ISDIR(i->mode)) {
		rc = -EPERM;
		goto out;
	}
	mc_off_t slot;
	rc = name_slot(ns, nd_top(&nd2), d, nd2.last, nd2.lastlen, &slot);
	if (rc < 0)
		goto out;
	mc_time_t now = mc_time_from_ns(now_ns());
	INODE_EDIT(ns, src, {
		ie_->nlink++;
		ie_->ctime = now;
	});
	inode_changed(ns, src);
	name_set(ns, nd_top(&nd2), slot, src);
	dir_entries(ns, nd_top(&nd2), +1, 0, now);
out:
	nd_free(&nd);
	nd_free(&nd2);
	return rc;
}

int ns_link(struct ns *ns, const struct cred *c, const char *from, size_t flen,
            const char *to, size_t tlen)
{
	int rc;
	NS_LOCKED(ns, rc, do_link(ns, c, from, flen, to, tlen));
	return rc;
}

/* ---- removing ------------------------------------------------------------ */

/* may_delete(): may c remove victim (named by d) from dir? */
int delete_checks(const struct cred *c, struct shm *s, mc_off_t dir, mc_off_t victim,
                         bool isdir)
{
	int rc = permission(c, inode_at(s, dir), MAY_WRITE | MAY_EXEC);
	if (rc < 0)
		return rc;
	if (sticky_denies(c, inode_at(s, dir), inode_at(s, victim)))
		return -EPERM;
	bool vdir = S_ISDIR(inode_at(s, victim)->mode);
	if (isdir && !vdir)
		return -ENOTDIR;
	if (!isdir && vdir)
		return -EISDIR;
	if (victim == s->hdr->root)
		return -EBUSY;
	return 0;
}

/* victim lost one of its names (a directory its only one): journal it and,
 * when that was its last link, its deletion, pruning a directory's cached
 * children at once (note 5). */
void victim_drop_link(struct ns *ns, mc_off_t victim, bool isdir, int64_t now)
{
	mc_time_t t = mc_time_from_ns(now);
	if (victim == ns->dir_owed)
		dir_owed_flush(ns); /* its state goes before its deletion */
	INODE_EDIT(ns, victim, {
		ie_->nlink = isdir ? 0 : ie_->nlink - 1;
		ie_->ctime = t;
	});
	if (inode_at(ns->shm, victim)->nlink == 0) {
		inode_gone(ns, victim);
		if (isdir)
			dcache_prune(ns->shm, victim);
	} else {
		inode_changed(ns, victim);
	}
}

/* Remove name d (naming victim) from dir; the checks are done. */
void remove_entry(struct ns *ns, mc_off_t dir, mc_off_t d, mc_off_t victim)
{
	int64_t now = now_ns();
	bool isdir = S_ISDIR(inode_at(ns->shm, victim)->mode);
	/* The name goes first: a reader must never find it naming an inode
	 * whose link is already gone. */
	name_drop(ns, dir, d);
	victim_drop_link(ns, victim, isdir, now);
	dir_entries(ns, dir, -1, isdir ? -1 : 0, now);
	inode_maybe_free(ns, victim);
}

/* What the store said of the name unlink removes (its inode's number,
 * and its record when read with it), for a file the cache does not hold. */
struct uncached {
	uint64_t ino;
	const struct mc_inode_rec *rec;
};

/* The store's answer for the name unlink looks up, when the cache does
 * not hold the name or its file and the file may go uncached: the last
 * attempt's read (ns_miss_take), or a name an earlier removal's read read
 * ahead (ns_miss_ahead). False otherwise. */
static bool unlink_uncached(struct ns *ns, const struct nd *nd, struct uncached *u)
{
	struct shm *s = ns->shm;
	mc_off_t dir = nd_top(nd);
	uint64_t pino = inode_at(s, dir)->ino;
	const struct ns_miss_ans *a = ns_miss_take(pino, nd->last, nd->lastlen);
	uint8_t dtype;
	if (a) {
		u->ino = a->ino;
		u->rec = a->have_rec ? &a->rec : NULL;
		dtype = a->dtype;
	} else if (ns_miss_ahead(ns, pino, nd->last, nd->lastlen, &u->ino, &dtype)) {
		u->rec = NULL;
	} else {
		return false;
	}
	/* The cache's word first; the rest cannot change under the lock
	 * since the read, but survive. */
	bool ok = dtype != DT_DIR && !dcache_complete(s, dir) &&
	          !dcache_find(s, dir, nd->last, nd->lastlen) && !inode_find(s, u->ino) &&
	          hold_count(ns, u->ino) == 0 &&
	          !(u->rec ? S_ISDIR(u->rec->mode) : sticky_needs_victim(nd->cred, inode_at(s, dir)));
	ns->miss_ahead_used += ok && !a;
	return ok;
}

static int do_unlink(struct ns *ns, const struct cred *c, const char *path, size_t len)
{
	struct nd nd;
	struct uncached u;
	nd_init(&nd, ns, c);
	int rc = ns_journal_room(ns);
	if (rc == 0)
		rc = walk_parent(&nd, path, len);
	if (rc < 0)
		goto out;
	if (nd.last_type != MC_LAST_NORM) {
		rc = -EISDIR;
		goto out;
	}
	/* A file read for this or ahead of it: no inode to load (note 7). */
	if (unlink_uncached(ns, &nd, &u)) {
		rc = nd.slash ? -ENOTDIR
		              : remove_uncached(ns, c, nd_top(&nd), nd.last, nd.lastlen, u.ino, u.rec);
		goto out;
	}
	mc_off_t d, victim;
	/* The sticky rule needs the owner: then the inode is read. */
	ns_miss_for_removal(!sticky_needs_victim(c, inode_at(ns->shm, nd_top(&nd))));
	rc = ns_lookup(ns, nd_top(&nd), nd.last, nd.lastlen, &d, &victim);
	ns_miss_for_removal(false);
	if (rc < 0)
		goto out;
	if (!victim || nd.slash) {
		rc = !victim ? -ENOENT : S_ISDIR(inode_at(ns->shm, victim)->mode) ? -EISDIR : -ENOTDIR;
		goto out;
	}
	/* Its hash bucket, a random line of a large table, is unlinked from
	 * last (inode_del): its load starts now. */
	inode_prefetch(ns->shm, inode_at(ns->shm, victim)->ino);
	rc = delete_checks(c, ns->shm, nd_top(&nd), victim, false);
	if (rc == 0)
		remove_entry(ns, nd_top(&nd), d, victim);
out:
	nd_free(&nd);
	return rc;
}

int ns_unlink(struct ns *ns, const struct cred *c, const char *path, size_t len)
{
	int rc;
	NS_LOCKED(ns, rc, do_unlink(ns, c, path, len));
	return rc;
}

static int do_rmdir(struct ns *ns, const struct cred *c, const char *path, size_t len)
{
	struct nd nd;
	nd_init(&nd, ns, c);
	int rc = ns_journal_room(ns);
	if (rc == 0)
		rc = walk_parent(&nd, path, len);
	if (rc < 0)
		goto out;
	switch (nd.last_type) {
	case MC_LAST_DOTDOT: rc = -ENOTEMPTY; goto out;
	case MC_LAST_DOT: rc = -EINVAL; goto out;
	case MC_LAST_ROOT: rc = -EBUSY; goto out;
	case MC_LAST_NORM: break;
	}
	mc_off_t d, victim;
	rc = ns_lookup(ns, nd_top(&nd), nd.last, nd.lastlen, &d, &victim);
	if (rc < 0)
		goto out;
	if (!victim) {
		rc = -ENOENT;
		goto out;
	}
	rc = delete_checks(c, ns->shm, nd_top(&nd), victim, true);
	if (rc < 0)
		goto out;
	if (inode_at(ns->shm, victim)->u.dir.nentries > 0) {
		rc = -ENOTEMPTY;
		goto out;
	}
	remove_entry(ns, nd_top(&nd), d, victim);
out:
	nd_free(&nd);
	return rc;
}

int ns_rmdir(struct ns *ns, const struct cred *c, const char *path, size_t len)
{
	int rc;
	NS_LOCKED(ns, rc, do_rmdir(ns, c, path, len));
	return rc;
}
