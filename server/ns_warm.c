/* ns_warm.c - the namespace's side of warming: inserting entries read from
 * an LMDB snapshot without ever making the cache older than it is.
 *
 * Invariants (why a warmer never resurrects a removed name nor overwrites
 * a newer one):
 *  1. A warmer reads v from a snapshot S and inserts v holding the commit
 *     semaphore for reading, and no publish happens between S and the
 *     insert: either it held the semaphore since before S, or it read the
 *     published sequence q before S (ns_published_seq) and reads q again
 *     once it holds the semaphore (warm.c note 1). A publish takes the
 *     semaphore for writing and is the only thing that advances the
 *     sequence; S contains every batch up to q (a batch is published after
 *     it is written). So every entry that is clean in the cache, or was
 *     evicted clean, was committed in a batch at most the published
 *     sequence, which S contains.
 *  2. Any change made after S is still dirty, hence pinned in the cache: a
 *     created or changed name is a cached positive dentry, a removed name
 *     a cached negative one (ns.c note 3), or -- in a complete directory --
 *     nothing at all. So: a name with a cached dentry is never touched, and
 *     a complete directory is never warmed. What is left (no dentry, the
 *     directory not complete) is unchanged since S, and S's answer is the
 *     truth.
 *  3. An inode already cached is used as it is (it may be dirty, newer than
 *     S); only an inode absent from the cache is read from S (an inode
 *     changed or deleted since S is cached and dirty, or every name of it
 *     is covered by 2).
 *  4. A directory is marked complete only when every one of its entries is
 *     cached: its cached positive children number its entry count, which
 *     the cached (and, if changed, dirty) directory inode holds.
 *  5. The lookups of 2 are skipped while no name of v can be cached: the
 *     directory has no cached child, or all it has were inserted by the
 *     same reader, which reads it in name order (v follows them all). The
 *     latter holds across the lock's releases (and across calls, through
 *     the reader's mark) while the directory's cached children number what
 *     they did and no dentry of the namespace was dropped since: a child
 *     leaves a directory that is not complete only by a drop (eviction,
 *     negative over a cap, prune), and one that became complete meanwhile
 *     stays so until a drop (shrink.c clears the flag when it evicts), and
 *     stops the insert.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_impl.h"

/* Entries inserted per hold of the namespace lock. */
#define NS_WARM_SLICE 32u
/* Pages of the segment faulted in ahead, outside the lock and the commit
 * semaphore (shm.c note 9): a megabyte, some 9000 entries, half of it at a
 * time. */
#define NS_WARM_POPULATE 16u

struct commit_sem *ns_commit_sem(struct ns *ns)
{
	return &ns->csem;
}

uint64_t ns_published_seq(struct ns *ns)
{
	return atomic_load_explicit(&ns->shm->hdr->committed_seq, memory_order_acquire);
}

void ns_set_miss_hook(struct ns *ns, void (*fn)(void *arg, uint64_t dir_ino), void *arg)
{
	pthread_mutex_lock(&ns->lock);
	ns->miss_fn = fn;
	ns->miss_arg = arg;
	pthread_mutex_unlock(&ns->lock);
}

void ns_warm_ent_set(struct ns_warm_ent *e, const char *name, size_t namelen, uint64_t ino,
                     uint8_t dtype, const struct mc_inode_rec *rec, const char *target,
                     size_t tlen)
{
	e->ino = ino;
	e->dtype = dtype;
	e->have_rec = rec != NULL;
	if (rec)
		e->rec = *rec;
	e->namelen = (uint16_t)namelen;
	memcpy(e->name, name, namelen + 1);
	e->tlen = (uint16_t)tlen;
	memcpy(e->target, target, tlen);
}

/* Insert one entry absent from the cache (invariants 2 and 3). */
static int warm_one(struct ns *ns, mc_off_t dir, const struct ns_warm_ent *e)
{
	struct shm *s = ns->shm;
	mc_off_t ioff = inode_find(s, e->ino);
	bool added = false;
	int adj = 0;
	if (!ioff) {
		/* Less the links it lost uncached since; when the snapshot may
		 * or may not have them, left out: the directory stays
		 * incomplete (ns.c note 7). */
		struct mc_inode_rec rec = e->rec;
		adj = inode_unlink_adjust(ns, &rec);
		if (adj < 0)
			return 0;
		ioff = inode_add(s, &rec, e->target, e->tlen);
		if (!ioff)
			return -ENOSPC;
		added = true;
		/* An empty directory answers misses itself (as ns_load_inode). */
		if (S_ISDIR(e->rec.mode) && e->rec.size == 0)
			dcache_set_complete(s, ioff);
	}
	if (!dcache_add(s, dir, e->name, e->namelen, ioff, e->dtype)) {
		if (added)
			inode_del(s, ioff);
		return -ENOSPC;
	}
	if (added && adj > 0)
		inode_dirty(ns, ioff); /* newer than the store until the commit */
	return 0;
}

/* Invariant 4. */
static bool dir_all_cached(struct ns *ns, mc_off_t dir)
{
	struct shm *s = ns->shm;
	uint32_t want = inode_at(s, dir)->u.dir.nentries;
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	uint32_t have = dx ? dx->ncached - dx->nneg : 0;
	return have == want;
}

/* Dentries dropped from the cache so far (evicted, over a cap, pruned):
 * the ways a directory loses cached children other than a removal from a
 * complete directory, which ns_warm_dir never works in. */
static uint64_t dentries_dropped(const struct ns *ns)
{
	return ns->shr.st.evicted + ns->shr.st.neg_evicted + ns->shm->pruned;
}

/* The cached directory dir_ino, lock held: 0 when it is not one. */
static mc_off_t warm_dir_find(struct ns *ns, uint64_t dir_ino)
{
	mc_off_t dir = inode_find(ns->shm, dir_ino);
	if (!dir || !S_ISDIR(inode_at(ns->shm, dir)->mode) || inode_at(ns->shm, dir)->nlink == 0)
		return 0;
	return dir;
}

/* The kernel allocating and clearing the pages the slabs carve took a
 * fifth of a warmer's time, all of it under the lock: done beforehand. */
void ns_warm_prepare(struct ns *ns)
{
	shm_populate_ahead(ns->shm, NS_WARM_POPULATE);
}

/* Take the lock for inserting v[0..n) (at most a slice of it). Before:
 * the hash buckets the inserts will touch, random lines of large tables (a
 * cache and TLB miss each), are loaded meanwhile rather than one by one
 * under the lock. Once it is held: the first inode of each chain the
 * lookups will walk (a miss for one lookup in five at a million inodes),
 * all at once. */
static void warm_lock(struct ns *ns, uint64_t dir_ino, const struct ns_warm_ent *v, size_t n)
{
	if (n > NS_WARM_SLICE)
		n = NS_WARM_SLICE;
	for (size_t k = 0; k < n; k++) {
		inode_prefetch(ns->shm, v[k].ino);
		dcache_prefetch(ns->shm, dir_ino, v[k].name, v[k].namelen);
	}
	ns_lock_op(ns); /* a waiting committer goes first */
	for (size_t k = 0; k < n; k++)
		inode_prefetch_chain(ns->shm, v[k].ino);
}

/* Note 5: what this call leaves for the reader's next one. */
static void warm_mark(struct ns *ns, mc_off_t dir, bool none_cached, struct ns_warm_mark *mark)
{
	const struct mc_dirx *dx = dir ? dcache_dirx(ns->shm, dir, false) : NULL;
	*mark = (struct ns_warm_mark){ 0 };
	if (none_cached && dx) {
		mark->dir = dir;
		mark->ncached = dx->ncached;
		mark->dropped = dentries_dropped(ns);
	}
}

int ns_warm_dir(struct ns *ns, uint64_t dir_ino, const struct ns_warm_ent *v, size_t n,
                bool at_end, struct ns_warm_mark *mark, struct ns_warm_res *res)
{
	struct shm *s = ns->shm;
	int rc = 0;
	bool none_cached = false;
	*res = (struct ns_warm_res){ 0 };
	warm_lock(ns, dir_ino, v, n);
	uint64_t used0 = shm_bytes_used(s);
	mc_off_t dir = warm_dir_find(ns, dir_ino);
	if (!dir) {
		rc = -ENOENT;
		goto out;
	}
	/* Note 5: the usual case at start, when the lookups are skipped. */
	const struct mc_dirx *dx = dcache_dirx(s, dir, false);
	none_cached = !dx || dx->ncached == 0 ||
	              (mark->dir == dir && dx->ncached == mark->ncached &&
	               dentries_dropped(ns) == mark->dropped);
	uint32_t had = dx ? dx->ncached : 0;
	for (unsigned held = 0; res->processed < n; held++) {
		if (held == NS_WARM_SLICE) {
			/* Let writers in between slices; the directory may have
			 * changed (or gone) meanwhile. */
			res->bytes += shm_bytes_used(s) - used0;
			uint64_t gone = dentries_dropped(ns);
			pthread_mutex_unlock(&ns->lock);
			warm_lock(ns, dir_ino, v + res->processed, n - res->processed);
			used0 = shm_bytes_used(s);
			held = 0;
			if (!(dir = warm_dir_find(ns, dir_ino))) {
				rc = -ENOENT;
				goto out;
			}
			/* Still only ours: as many as we added, none dropped. */
			dx = dcache_dirx(s, dir, false);
			none_cached = none_cached && dentries_dropped(ns) == gone &&
			              (!dx || dx->ncached == had + res->added);
		}
		if (dcache_complete(s, dir)) {
			res->processed = n;
			res->complete = true;
			goto out;
		}
		if (commit_sem_contended(&ns->csem))
			goto out;
		if (shm_bytes_used(s) >= ns->shr.low) {
			rc = -ENOSPC;
			goto out;
		}
		const struct ns_warm_ent *e = &v[res->processed];
		if (e->have_rec && (none_cached || !dcache_find(s, dir, e->name, e->namelen))) {
			rc = warm_one(ns, dir, e);
			if (rc < 0)
				goto out;
			res->added++;
		}
		res->processed++;
	}
	if (at_end && dir_all_cached(ns, dir) && dcache_set_complete(s, dir))
		res->complete = true;
out:
	warm_mark(ns, dir, none_cached, mark);
	res->bytes += shm_bytes_used(s) - used0;
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

const char *ns_restart_blocker(struct ns *ns)
{
	struct shm *s = ns->shm;
	const char *why = NULL;
	pthread_mutex_lock(&ns->lock);
	if (s->d_dirty || s->i_dirty || ns->running->nrecs || ns->swapped)
		why = "changes are not committed";
	else if (ns->holds.n)
		why = "files are held open";
	else if (ns->ext.chunks || ns->ext.trees)
		why = "extent state or maps are cached";
	else if (ns->shr.norph)
		why = "inodes without a cached name are cached";
	pthread_mutex_unlock(&ns->lock);
	return why;
}
