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
 *  5. The lookups of 2 are skipped for a name of v that cannot be cached:
 *     every cached child of the directory was inserted by the readers
 *     that share a mark, each of which reads its own range of the
 *     directory's names in name order (warm.c splits a large directory
 *     between threads so), and v follows every name its reader gave and
 *     lies outside the others' ranges; or it is one of the mark's few
 *     foreign children (NS_WARM_FOREIGN at most: a miss, a create or a
 *     removal's negative entry), whose names' hashes the mark keeps, and
 *     only a name with one of those hashes is looked up. This holds across
 *     the lock's releases and across calls through the mark, which a call
 *     leaves before every release with the directory's next cookie: a
 *     child linked since (or made positive again) is at the end of the
 *     child list with that cookie or a later one, so warm_alone finds it
 *     walking back from the list's tail and adds it to the foreign ones;
 *     and no dentry of the namespace was dropped since, because a child
 *     leaves a directory that is not complete only by a drop (eviction,
 *     negative over a cap, prune), and one that became complete meanwhile
 *     stays so until a drop (shrink.c clears the flag when it evicts), and
 *     stops the insert. The first call takes every child the directory
 *     has as foreign, when they are few. A call that had to look up
 *     everything (a drop, too many foreign children) clears the mark, so
 *     its readers look up from then on.
 *  6. What an insert writes that nobody can see yet is written outside the
 *     lock (and the commit semaphore), ahead, by ns_warm_stage: a warmer's
 *     stage reserves an inode and a dentry slot per entry of its batch in
 *     one lock hold (shm.c note 11), writes the entries' records and names
 *     into them (inode_fill, dcache_fill), hashes the names and faults in
 *     the buckets' pages (shm.c note 10). Under the lock ns_warm_dir makes
 *     the presence checks of notes 2 and 3 as before and, for an entry it
 *     inserts, links the slots (inode_link, dcache_link): a reserved slot
 *     is reachable, counted as cached and evictable from then on only. A
 *     slot the batch did not use (the name or the inode was cached, the
 *     step stopped early) stays reserved for the next batch, to be filled
 *     again; the stage gives them all back when its thread runs out of
 *     work, and when it is freed. A stage is used for the batch it was
 *     filled for, once (st->v), by its own thread alone.
 *  7. A warmer holds the lock for a slice, some ten microseconds, and says
 *     so (ns->lock_short, set once it holds the lock, cleared before every
 *     release here, warm_mutex_unlock): an operation that finds it taken
 *     then spins for it (ns_lock_op) instead of sleeping on it. A futex
 *     sleep and wake-up costs some 30 us on a virtual machine, and during
 *     a warm-up a worker serving a loop of mkdirs slept on the lock 2,000
 *     to 3,000 times a second, 33 us each at the median (perf, sched_switch
 *     events of the worker: 10% of its time).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "ns_impl.h"

/* Entries inserted per hold of the namespace lock. */
#define NS_WARM_SLICE 32u
/* The most segment bytes one insert takes: an inode, a dentry, the blobs
 * of a long name and of a symlink's target (the largest class), the
 * directory states of the directory and of an empty one inserted. */
#define NS_WARM_ENTRY_MAX_BYTES                                              \
	(sizeof(struct mc_inode) + sizeof(struct mc_dentry) + MC_NAME_MAX + 1 + \
	 mc_blob_size(MC_BLOB_CLASSES - 1) + 2 * sizeof(struct mc_dirx))
/* Pages of the segment faulted in ahead, outside the lock and the commit
 * semaphore (shm.c note 9): a megabyte, some 9000 entries, half of it at a
 * time. */
#define NS_WARM_POPULATE 16u
/* How long a warmer spins for the namespace lock before it sleeps on it
 * (warm_mutex_lock): about what a futex sleep and wake-up cost here. */
#define NS_WARM_SPIN_NS 200000u

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

/* Note 6. inodes[k] and dentries[k] (when k is below ninodes, ndentries;
 * 0 once used) serve entry k of the batch staged; the rest wait for later
 * batches. Whole pages are reserved: a page's free slots can be more than
 * a batch needs. */
#define STAGE_CAP (NS_WARM_MAX + MC_PAGE_SIZE / sizeof(struct mc_dentry))
struct ns_warm_stage {
	mc_off_t inodes[STAGE_CAP], dentries[STAGE_CAP];
	size_t ninodes, ndentries;
	const struct ns_warm_ent *v;   /* the batch staged, until ns_warm_dir; NULL: none */
	size_t n;
	uint64_t dir_ino;
	uint64_t dhash[NS_WARM_MAX];   /* the names' dcache_hash */
};

struct ns_warm_stage *ns_warm_stage_new(void)
{
	return calloc(1, sizeof(struct ns_warm_stage));
}

bool ns_warm_stage_holds(const struct ns_warm_stage *st)
{
	return st->ninodes || st->ndentries;
}

void ns_warm_stage_return(struct ns *ns, struct ns_warm_stage *st)
{
	if (!ns_warm_stage_holds(st))
		return;
	pthread_mutex_lock(&ns->lock);
	shm_reserve_return(ns->shm, SLAB_INODE, st->inodes, st->ninodes);
	shm_reserve_return(ns->shm, SLAB_DENTRY, st->dentries, st->ndentries);
	pthread_mutex_unlock(&ns->lock);
	st->ninodes = st->ndentries = 0;
	st->v = NULL;
}

void ns_warm_stage_free(struct ns *ns, struct ns_warm_stage *st)
{
	if (!st)
		return;
	ns_warm_stage_return(ns, st);
	free(st);
}

/* The slots entry k may use: 0 when none is staged for it. */
static mc_off_t staged_inode(const struct ns_warm_stage *st, size_t k)
{
	return st && k < st->n && k < st->ninodes ? st->inodes[k] : 0;
}

static mc_off_t staged_dentry(const struct ns_warm_stage *st, size_t k)
{
	return st && k < st->n && k < st->ndentries ? st->dentries[k] : 0;
}

/* After ns_warm_dir: the slots left unused, packed, for the next batch.
 * Only the first st->n can have been used. */
static void stage_settle(struct ns_warm_stage *st)
{
	mc_off_t *vs[2] = { st->inodes, st->dentries };
	size_t *ns[2] = { &st->ninodes, &st->ndentries };
	for (int j = 0; j < 2; j++) {
		mc_off_t *v = vs[j];
		size_t n = *ns[j], head = n < st->n ? n : st->n, kept = 0;
		for (size_t k = 0; k < head; k++)
			if (v[k])
				v[kept++] = v[k];
		memmove(v + kept, v + head, (n - head) * sizeof(*v));
		*ns[j] = kept + (n - head);
	}
	st->v = NULL;
	st->n = 0;
}

/* Note 6: slot k of the stage is put to use (linked). */
static void stage_used(struct ns *ns, mc_off_t *slot, enum shm_slab slab, uint64_t *bytes)
{
	*slot = 0;
	shm_reserve_used(ns->shm, slab);
	*bytes += ns->shm->slab[slab].slot_size; /* counted as used when reserved */
}

/* Insert entry k, absent from the cache (invariants 2 and 3): into the
 * slots staged for it (note 6), else into new ones. */
static int warm_one(struct ns *ns, struct ns_warm_stage *st, size_t k, mc_off_t dir,
                    const struct ns_warm_ent *e, uint64_t *bytes)
{
	struct shm *s = ns->shm;
	mc_off_t ioff = inode_find(s, e->ino);
	mc_off_t si = staged_inode(st, k), sd = staged_dentry(st, k);
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
		if (si) {
			if (adj > 0)
				inode_fill(s, si, &rec, e->tlen);
			if (inode_link(s, si, e->target) < 0)
				return -ENOSPC;
			ioff = si;
			stage_used(ns, &st->inodes[k], SLAB_INODE, bytes);
		} else if (!(ioff = inode_add(s, &rec, e->target, e->tlen))) {
			return -ENOSPC;
		}
		added = true;
		/* An empty directory answers misses itself (as ns_load_inode). */
		if (S_ISDIR(e->rec.mode) && e->rec.size == 0)
			dcache_set_complete(s, ioff);
	}
	mc_off_t d;
	if (sd) {
		d = dcache_link(s, dir, sd, e->name, ioff, e->dtype, st->dhash[k]);
		if (d)
			stage_used(ns, &st->dentries[k], SLAB_DENTRY, bytes);
	} else {
		d = dcache_add(s, dir, e->name, e->namelen, ioff, e->dtype);
	}
	if (!d) {
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

static bool no_committer_waiting(struct ns *ns)
{
	return !atomic_load_explicit(&ns->committer_waiting, memory_order_relaxed);
}

/* ns_lock_op, spinning a while first. The lock is held mostly by the
 * other warmer, for a slice (a few microseconds); a futex sleep and
 * wake-up cost tens to a hundred of them in a virtual machine (the wake
 * is an interrupt to a halted CPU), and the two warmers contended a few
 * hundred times a warm-up of a million entries, some 40 ms of sleep.
 * Never while the committer waits for the lock: it goes first, as
 * ns_lock_op lets it. */
static void warm_mutex_lock(struct ns *ns)
{
	if (!ns_spin_for_lock(ns, NS_WARM_SPIN_NS, no_committer_waiting))
		ns_lock_op(ns);
	/* A slice: operations spin for it (note 7). */
	ns_lock_short_set(ns, true);
}

/* Every release of the lock here: the hint goes first. */
static void warm_mutex_unlock(struct ns *ns)
{
	ns_lock_short_set(ns, false);
	pthread_mutex_unlock(&ns->lock);
}

/* Reserve whole pages of slab (lock held) until *have slots are at least
 * want, or STAGE_CAP could not take another page: the lists of slots they
 * head go to heads[] (their sizes to counts[]), walked once the lock is
 * released (reserve_walk). The number of pages. */
#define STAGE_PAGES 8u
static unsigned reserve_pages(struct shm *s, enum shm_slab slab, size_t have, size_t want,
                              mc_off_t *heads, size_t *counts)
{
	unsigned np = 0;
	size_t per = MC_PAGE_SIZE / s->slab[slab].slot_size;
	while (have < want && np < STAGE_PAGES && have + per <= STAGE_CAP) {
		size_t k;
		mc_off_t h = shm_reserve_page(s, slab, &k);
		if (!h)
			break;
		heads[np] = h;
		counts[np++] = k;
		have += k;
	}
	return np;
}

/* The slots of the lists reserve_pages took, into v from *n on. */
static void reserve_walk(const struct shm *s, enum shm_slab slab, const mc_off_t *heads,
                         const size_t *counts, unsigned np, mc_off_t *v, size_t *n)
{
	for (unsigned p = 0; p < np; p++) {
		mc_off_t off = heads[p];
		for (size_t k = 0; k < counts[p]; k++) {
			v[(*n)++] = off;
			off = shm_reserve_next(s, slab, off);
		}
	}
}

void ns_warm_stage(struct ns *ns, struct ns_warm_stage *st, uint64_t dir_ino,
                   const struct ns_warm_ent *v, size_t n)
{
	struct shm *s = ns->shm;
	if (n > NS_WARM_MAX)
		n = NS_WARM_MAX;
	st->v = NULL;
	if (st->ninodes < n || st->ndentries < n) {
		mc_off_t ih[STAGE_PAGES], dh[STAGE_PAGES];
		size_t ic[STAGE_PAGES], dc[STAGE_PAGES];
		unsigned ni = 0, nd = 0;
		warm_mutex_lock(ns);
		if (shm_bytes_used(s) < ns->shr.low) {
			ni = reserve_pages(s, SLAB_INODE, st->ninodes, n, ih, ic);
			nd = reserve_pages(s, SLAB_DENTRY, st->ndentries, n, dh, dc);
		}
		warm_mutex_unlock(ns);
		reserve_walk(s, SLAB_INODE, ih, ic, ni, st->inodes, &st->ninodes);
		reserve_walk(s, SLAB_DENTRY, dh, dc, nd, st->dentries, &st->ndentries);
	}
	for (size_t k = 0; k < n; k++) {
		const struct ns_warm_ent *e = &v[k];
		st->dhash[k] = dcache_hash(s, dir_ino, e->name, e->namelen);
		shm_populate_meta(s, dcache_bucket_of(s, st->dhash[k]));
		shm_populate_meta(s, inode_bucket_of(s, e->ino));
		if (!e->have_rec)
			continue;
		if (k < st->ninodes)
			inode_fill(s, st->inodes[k], &e->rec, e->tlen);
		if (k < st->ndentries)
			dcache_fill(s, st->dentries[k], e->name, e->namelen);
	}
	st->v = v;
	st->n = n;
	st->dir_ino = dir_ino;
}

/* Take the lock for inserting v[from..n) (at most a slice of it). Before:
 * the hash buckets the inserts will touch, random lines of large tables (a
 * cache and TLB miss each), are loaded meanwhile rather than one by one
 * under the lock, then the first inode of each chain the lookups will
 * walk (a miss for one lookup in five at a million inodes), all at once.
 * Loaded under the lock, those had the first lookups wait for them: a
 * quarter of a warmer's time went to them, with the lock held. */
static void warm_lock(struct ns *ns, const struct ns_warm_stage *st, uint64_t dir_ino,
                      const struct ns_warm_ent *v, size_t from, size_t n)
{
	size_t to = n - from > NS_WARM_SLICE ? from + NS_WARM_SLICE : n;
	for (size_t k = from; k < to; k++) {
		inode_prefetch(ns->shm, v[k].ino);
		if (st && k < st->n)
			dcache_prefetch_hash(ns->shm, st->dhash[k]);
		else
			dcache_prefetch(ns->shm, dir_ino, v[k].name, v[k].namelen);
	}
	for (size_t k = from; k < to; k++)
		inode_prefetch_chain(ns->shm, v[k].ino);
	warm_mutex_lock(ns); /* a waiting committer goes first */
}

/* Add child d of dir_ino to the mark's foreign children; false when
 * they are too many already. */
static bool warm_foreign(struct shm *s, uint64_t dir_ino, mc_off_t d, struct ns_warm_mark *mark)
{
	if (mark->nforeign == NS_WARM_FOREIGN)
		return false;
	const struct mc_dentry *e = dentry_at(s, d);
	mark->foreign[mark->nforeign++] = dcache_hash(s, dir_ino, dcache_name(s, d), e->namelen);
	return true;
}

/* Note 5: may the lookups be skipped in dir (lock held) but for the
 * mark's foreign children? The children linked since the mark are added
 * to them; a first call takes all the directory has. */
static bool warm_alone(struct ns *ns, mc_off_t dir, uint64_t dir_ino, struct ns_warm_mark *mark)
{
	struct shm *s = ns->shm;
	const struct mc_dirx *dx = dcache_dirx(s, dir, false);
	if (mark->dir != dir) {
		*mark = (struct ns_warm_mark){ 0 };
		for (mc_off_t d = dx ? dx->head : 0; d; d = dentry_at(s, d)->sib_next)
			if (!warm_foreign(s, dir_ino, d, mark))
				return false;
		return true;
	}
	if (dentries_dropped(ns) != mark->dropped)
		return false;
	if (!dx || dx->next_cookie == mark->cookie)
		return true;
	for (mc_off_t d = dx->tail;
	     d && (int32_t)(dentry_at(s, d)->cookie - mark->cookie) >= 0;
	     d = dentry_at(s, d)->sib_prev)
		if (!warm_foreign(s, dir_ino, d, mark))
			return false;
	return true;
}

/* Note 5: what this call leaves for the readers' next one. */
static void warm_mark(struct ns *ns, mc_off_t dir, bool none_cached, struct ns_warm_mark *mark)
{
	if (!none_cached || !dir) {
		*mark = (struct ns_warm_mark){ 0 };
		return;
	}
	const struct mc_dirx *dx = dcache_dirx(ns->shm, dir, false);
	mark->dir = dir;
	mark->cookie = dx ? dx->next_cookie : 0;
	mark->dropped = dentries_dropped(ns);
}

/* Note 5: may name k of v be cached (a lookup needed)? */
static bool warm_must_look(const struct shm *s, const struct ns_warm_stage *st, uint64_t dir_ino,
                           const struct ns_warm_ent *v, size_t k, bool none_cached,
                           const struct ns_warm_mark *mark)
{
	if (!none_cached)
		return true;
	if (mark->nforeign == 0)
		return false;
	uint64_t h = st ? st->dhash[k] : dcache_hash(s, dir_ino, v[k].name, v[k].namelen);
	for (uint32_t i = 0; i < mark->nforeign; i++)
		if (mark->foreign[i] == h)
			return true;
	return false;
}

int ns_warm_dir(struct ns *ns, struct ns_warm_stage *st, uint64_t dir_ino,
                const struct ns_warm_ent *v, size_t n, bool at_end, struct ns_warm_mark *mark,
                struct ns_warm_res *res)
{
	struct shm *s = ns->shm;
	int rc = 0;
	bool none_cached = false;
	struct ns_warm_stage *stage = st;
	if (st && (st->v != v || st->dir_ino != dir_ino))
		stage = NULL; /* not staged for this batch: its slots stay as they are */
	*res = (struct ns_warm_res){ 0 };
	warm_lock(ns, stage, dir_ino, v, 0, n);
	uint64_t used0 = shm_bytes_used(s);
	mc_off_t dir = warm_dir_find(ns, dir_ino);
	if (!dir) {
		rc = -ENOENT;
		goto out;
	}
	none_cached = warm_alone(ns, dir, dir_ino, mark); /* the usual case at start */
	/* At most the bytes left below the low watermark. */
	uint64_t room = used0 < ns->shr.low ? ns->shr.low - used0 : 0;
	for (unsigned held = 0; res->processed < n; held++) {
		if (held == NS_WARM_SLICE) {
			/* Let writers in between slices; the directory may have
			 * changed (or gone) meanwhile. */
			res->bytes += shm_bytes_used(s) - used0;
			warm_mark(ns, dir, none_cached, mark);
			warm_mutex_unlock(ns);
			warm_lock(ns, stage, dir_ino, v, res->processed, n);
			used0 = shm_bytes_used(s);
			held = 0;
			/* others may have allocated meanwhile */
			room = used0 < ns->shr.low ? ns->shr.low - used0 : 0;
			if (!(dir = warm_dir_find(ns, dir_ino))) {
				rc = -ENOENT;
				goto out;
			}
			none_cached = none_cached && warm_alone(ns, dir, dir_ino, mark);
		}
		if (dcache_complete(s, dir)) {
			res->processed = n;
			res->complete = true;
			goto out;
		}
		if (commit_sem_contended(&ns->csem))
			goto out;
		if (room < NS_WARM_ENTRY_MAX_BYTES) {
			/* Asked again only once the inserts since may have
			 * used what was left (the sum is a loop over slabs). */
			uint64_t used = shm_bytes_used(s);
			if (used >= ns->shr.low) {
				rc = -ENOSPC;
				goto out;
			}
			room = ns->shr.low - used;
		}
		room -= room < NS_WARM_ENTRY_MAX_BYTES ? room : NS_WARM_ENTRY_MAX_BYTES;
		const struct ns_warm_ent *e = &v[res->processed];
		bool look = e->have_rec &&
		            warm_must_look(s, stage, dir_ino, v, res->processed, none_cached, mark);
		res->lookups += look;
		if (e->have_rec && (!look || !dcache_find(s, dir, e->name, e->namelen))) {
			rc = warm_one(ns, stage, res->processed, dir, e, &res->bytes);
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
	warm_mutex_unlock(ns);
	if (stage)
		stage_settle(stage);
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
	warm_mutex_unlock(ns);
	return why;
}
