/* fsck_cache.c - the cache side of the consistency check on a running
 * server (fsck.h): after the store check, what the cache holds clean is
 * compared with the store, with the namespace lock held.
 *
 * Why comparing under the lock is exact although the committer writes the
 * store without it:
 *  1. an entry changed by a batch stays dirty until ns_publish marks it
 *     clean, under the lock, after the store committed that batch; so an
 *     entry clean under the lock is not changed by any batch the store has
 *     not committed, nor by one being committed meanwhile;
 *  2. a create, unlink or rename in a directory changes the directory's
 *     inode (entries, times), so a directory whose inode and cached
 *     children are clean has, in the store, exactly the children it had at
 *     its last publish: when it is complete, the cache's positive children;
 *  3. the lock is dropped every FSCK_BATCH entries compared (a complete
 *     directory counts its cached children), so that mutations wait for
 *     one batch at most, or for one directory's listing from the store
 *     when that is larger: each comparison is made whole
 *     under the lock, so 1 and 2 hold for each; what changes between two
 *     batches is compared in its new state or not at all. Slots are
 *     visited in segment order, and pages never change type (shm.c), so a
 *     position stays meaningful across a release.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck.h"
#include "ns_impl.h"

#define FSCK_INODES_PER_PAGE (MC_PAGE_SIZE / sizeof(struct mc_inode))
#define FSCK_DENTRIES_PER_PAGE (MC_PAGE_SIZE / sizeof(struct mc_dentry))
#define FSCK_BATCH 512u   /* entries compared per hold of the namespace lock */

static mc_off_t slot_off(uint32_t page, uint32_t slot, size_t size)
{
	uint64_t b = ((uint64_t)page << MC_PAGE_SHIFT) + (uint64_t)slot * size;
	return (mc_off_t)(b >> MC_OFF_SHIFT);
}

static bool inode_clean(const struct mc_inode *i)
{
	return !(i->flags & (MC_I_DIRTY0 | MC_I_DIRTY1));
}

static bool dentry_clean(const struct mc_dentry *d)
{
	return !(d->flags & (MC_D_DIRTY0 | MC_D_DIRTY1));
}

static bool fsck_held(void *arg, uint64_t ino)
{
	struct ns *ns = arg;
	pthread_mutex_lock(&ns->lock);
	bool held = map_find(&ns->holds, ino) != NULL;
	pthread_mutex_unlock(&ns->lock);
	return held;
}

static int cmp_inode(struct ns *ns, mc_off_t off, struct fsck_report *rep)
{
	char target[MC_SYMLINK_MAX];
	struct mc_inode_rec c, r;
	size_t tlen = 0, clen = 0;
	inode_rec(ns->shm, off, &c);
	int err = store_get_inode(ns->store, c.ino, &r, target, &tlen);
	unsigned long long ino = c.ino;
	rep->cached_inodes++;
	if (err == -ENOENT) {
		if (c.nlink == 0 && map_find(&ns->holds, c.ino))
			return 0;   /* open after its last unlink */
		return fsck_add(rep, FSCK_CACHE_INODE, ino, NULL, 0,
		                "inode %llu is cached clean but not in the store", ino);
	}
	if (err)
		return err == -EIO ? fsck_add(rep, FSCK_CACHE_INODE, ino, NULL, 0,
		                              "inode %llu: the store's record is malformed", ino)
		                   : err;
	if (c.mode != r.mode || c.nlink != r.nlink || c.uid != r.uid || c.gid != r.gid ||
	    c.size != r.size)
		return fsck_add(rep, FSCK_CACHE_INODE, ino, NULL, 0,
		                "inode %llu: cache mode %o nlink %u uid %u gid %u size %llu, "
		                "store mode %o nlink %u uid %u gid %u size %llu", ino, c.mode,
		                c.nlink, c.uid, c.gid, (unsigned long long)c.size, r.mode, r.nlink,
		                r.uid, r.gid, (unsigned long long)r.size);
	if (c.atime_ns != r.atime_ns || c.mtime_ns != r.mtime_ns || c.ctime_ns != r.ctime_ns)
		return fsck_add(rep, FSCK_CACHE_INODE, ino, NULL, 0,
		                "inode %llu: cache times %lld/%lld/%lld, store %lld/%lld/%lld", ino,
		                (long long)c.atime_ns, (long long)c.mtime_ns, (long long)c.ctime_ns,
		                (long long)r.atime_ns, (long long)r.mtime_ns, (long long)r.ctime_ns);
	if (S_ISLNK(c.mode)) {
		const char *ct = inode_target(ns->shm, off, &clen);
		if (clen != tlen || memcmp(ct, target, tlen) != 0)
			return fsck_add(rep, FSCK_CACHE_INODE, ino, NULL, 0,
			                "symlink %llu: the cached target differs from the store's", ino);
	}
	return 0;
}

static int cmp_dentry(struct ns *ns, const struct mc_dentry *d, mc_off_t off,
                      struct fsck_report *rep)
{
	const struct mc_inode *p = inode_at(ns->shm, d->parent);
	const char *name = dcache_name(ns->shm, off);
	uint64_t ino = 0;
	uint8_t dtype = 0;
	int err = store_get_dentry(ns->store, p->ino, name, d->namelen, &ino, &dtype);
	unsigned long long pino = p->ino;
	rep->cached_dentries++;
	if (err && err != -ENOENT) {
		if (err != -EIO)
			return err;
		return fsck_add(rep, FSCK_CACHE_DENTRY, pino, name, d->namelen,
		                "the store's record is malformed");
	}
	if (!(d->flags & MC_D_POSITIVE)) {
		if (err == 0)
			return fsck_add(rep, FSCK_CACHE_DENTRY, pino, name, d->namelen,
			                "cached as absent, the store names inode %llu",
			                (unsigned long long)ino);
		return 0;
	}
	const struct mc_inode *c = inode_at(ns->shm, d->inode);
	if (err)
		return fsck_add(rep, FSCK_CACHE_DENTRY, pino, name, d->namelen,
		                "cached as inode %llu, absent from the store",
		                (unsigned long long)c->ino);
	if (ino != c->ino || dtype != d->dtype)
		return fsck_add(rep, FSCK_CACHE_DENTRY, pino, name, d->namelen,
		                "cached as inode %llu type %u, the store has inode %llu type %u",
		                (unsigned long long)c->ino, d->dtype, (unsigned long long)ino, dtype);
	return 0;
}

struct dir_cmp {
	struct ns *ns;
	mc_off_t dir;
	struct fsck_report *rep;
	uint32_t found;
};

static int dir_cmp_child(void *arg, const char *name, size_t namelen, uint64_t ino,
                         uint8_t dtype)
{
	struct dir_cmp *dc = arg;
	mc_off_t d = dcache_find(dc->ns->shm, dc->dir, name, namelen);
	const struct mc_dentry *e = d ? dentry_at(dc->ns->shm, d) : NULL;
	uint64_t pino = inode_at(dc->ns->shm, dc->dir)->ino;
	if (!e || !(e->flags & MC_D_POSITIVE))
		return fsck_add(dc->rep, FSCK_CACHE_DIR, pino, name, namelen,
		                "in the store (inode %llu) but not in the complete directory",
		                (unsigned long long)ino);
	dc->found++;
	return 0;   /* a positive entry's inode and type are cmp_dentry's */
}

/* A complete directory with nothing uncommitted in it (note 2). */
static int cmp_dir(struct ns *ns, mc_off_t dir, struct fsck_report *rep)
{
	struct shm *s = ns->shm;
	const struct mc_dirx *x = dcache_dirx(s, dir, false);
	uint32_t positive = 0;
	for (mc_off_t d = x->head; d; d = dentry_at(s, d)->sib_next) {
		const struct mc_dentry *e = dentry_at(s, d);
		if (!dentry_clean(e))
			return 0;
		if (e->flags & MC_D_POSITIVE)
			positive++;
	}
	struct dir_cmp dc = { ns, dir, rep, 0 };
	rep->cached_dirs++;
	int err = store_scan_dir(ns->store, inode_at(s, dir)->ino, dir_cmp_child, &dc);
	if (err)
		return err == -EIO ? fsck_add(rep, FSCK_CACHE_DIR, inode_at(s, dir)->ino, NULL, 0,
		                              "the store's entries are malformed") : err;
	if (positive != dc.found)
		return fsck_add(rep, FSCK_CACHE_DIR, inode_at(s, dir)->ino, NULL, 0,
		                "%u names cached in the complete directory, %u of them in the store",
		                positive, dc.found);
	return 0;
}

/* Where the comparison stands: the next slot to look at. */
struct fsck_pos {
	uint32_t page, slot;
};

/* Compare from *pos on, at most FSCK_BATCH entries; *done at the end of the
 * segment. Called with the namespace lock held. */
static int do_fsck_cache(struct ns *ns, struct fsck_report *rep, struct fsck_pos *pos,
                         bool *done)
{
	struct shm *s = ns->shm;
	unsigned budget = FSCK_BATCH;
	int err = 0;
	for (; pos->page < s->next_page; pos->page++, pos->slot = 0) {
		uint8_t type = s->page_types[pos->page];
		uint32_t per = type == MC_PT_INODE ? FSCK_INODES_PER_PAGE
		             : type == MC_PT_DENTRY ? FSCK_DENTRIES_PER_PAGE : 0;
		for (; pos->slot < per; pos->slot++) {
			if (budget == 0 || err)
				return err;
			if (type == MC_PT_INODE) {
				mc_off_t off = slot_off(pos->page, pos->slot, sizeof(struct mc_inode));
				const struct mc_inode *i = inode_at(s, off);
				if (!(i->flags & MC_I_LIVE) || !inode_clean(i))
					continue;
				budget--;
				err = cmp_inode(ns, off, rep);
				if (!err && S_ISDIR(i->mode) && dcache_complete(s, off)) {
					/* A directory costs its children (note 3). */
					uint32_t n = dcache_dirx(s, off, false)->ncached;
					budget -= n < budget ? n : budget;
					err = cmp_dir(ns, off, rep);
				}
			} else {
				mc_off_t off = slot_off(pos->page, pos->slot, sizeof(struct mc_dentry));
				const struct mc_dentry *d = dentry_at(s, off);
				if (!(d->flags & MC_D_LIVE) || !dentry_clean(d))
					continue;
				budget--;
				err = cmp_dentry(ns, d, off, rep);
			}
		}
	}
	*done = true;
	return err;
}

int fsck_ns(struct ns *ns, struct fsck_report *rep)
{
	struct fsck_pos pos = { 0, 0 };
	bool done = false;
	int err = fsck_store(ns->store, fsck_held, ns, rep);
	while (!err && !done) {
		pthread_mutex_lock(&ns->lock);
		err = do_fsck_cache(ns, rep, &pos, &done);
		pthread_mutex_unlock(&ns->lock);
		sched_yield();   /* let the mutations that waited in */
	}
	return err;
}
