/* shrink.c - the bound on the cache: a CLOCK hand over the dentry slots
 * evicts clean leaf entries (second chance for those clients marked
 * referenced), a background thread keeps segment use under the high mark,
 * and an operation that found the segment full reclaims directly between
 * two attempts.
 *
 *     op attempt -ENOSPC (an allocation failed)
 *        -> do_reclaim_retry: evict (do_scan) until the failed slab has a
 *           free slot and RECLAIM_MIN entries went, wake the thread
 *        -> nothing evictable and dirty entries left: force a commit
 *           (force_commit, lock released while waiting), evict again
 *        -> room made: attempt again; none: -ENOSPC stands (mutations only
 *           in practice: a read needs a few slots, which eviction frees)
 *     an extent chunk found no page: idle files' extent trees go first
 *        (do_extent_shrink, extent_ns.h): their chunks serve the attempt
 *     op attempt -EAGAIN with ns->drop_wait (an inode to load lost a link
 *        in the batch being committed, ns.c note 7)
 *        -> force_commit, attempt again (RECLAIM_TRIES at most)
 *
 * Above the high mark the thread frees idle files' extent trees first
 * (maps reload from the store, idle state is clean), then turns the hand.
 *
 * Invariants:
 *  1. Eviction happens only with the namespace lock held and between
 *     attempts of an operation (or in the thread, between operations): no
 *     operation holds a slot offset across it.
 *  2. Evictable: a live, clean dentry whose parent can lose its complete
 *     flag (no removal freed from it while complete is uncommitted, ns.c
 *     note 3) and is not
 *     held by an open handle (a listing through the server) and, when
 *     positive, whose inode is clean, not held by an open handle, has no
 *     pinned extent state (dirty, delalloc, locked or writeback ranges:
 *     runtime state the store does not hold) and, for a directory, has no
 *     cached children. So eviction goes leaf first, and
 *     a directory becomes a candidate once its last cached child went.
 *  3. Evicting a positive dentry clears its parent's complete flag and
 *     frees its inode unless the inode has other links (their names may be
 *     cached). Such an inode is noted as an orphan; once ORPHAN_BATCH more
 *     are noted, or the hand went round since the oldest, one pass over the
 *     dentry slots (do_orphans) frees those no cached name points to and
 *     that are clean and not held. So inodes never outlive all their
 *     cached names by more than a sweep.
 *  4. The referenced bitmap is data clients write at will: a set bit buys
 *     one more round of the hand, and after a full sweep without an
 *     eviction the bits are ignored, so no client can stop the shrinker.
 *  5. Readers stay safe while slots are freed under them: dcache_del and
 *     inode_del bump the seqs of what they free (proto/mc_shm.h note 3).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "extent_ns.h"
#include "log.h"
#include "ns_impl.h"

#define SHRINK_BATCH 512u      /* slots scanned per lock hold in the thread */
#define SHRINK_PERIOD_MS 100u
#define RECLAIM_TRIES 4u
#define RECLAIM_MIN 256u       /* evict at least this many per direct reclaim */
#define FORCE_WAIT_MS 2000u
#define ORPHAN_BATCH 256u      /* orphans noted that make do_scan free them */
#define ORPHAN_MAX 65536u      /* orphans kept at most (then the oldest are forgotten) */
#define EXTENT_RECLAIM_CHUNKS 16u /* extent chunks a direct reclaim frees at least (a page) */

#define DENTRIES_PER_PAGE (MC_PAGE_SIZE / sizeof(struct mc_dentry))

void shrink_init(struct ns *ns, const struct ns_opts *o)
{
	struct shrinker *k = &ns->shr;
	unsigned hi = o && o->cache_high_pct ? o->cache_high_pct : SHRINK_HIGH_PCT;
	unsigned lo = o && o->cache_low_pct ? o->cache_low_pct : SHRINK_LOW_PCT;
	if (hi > 100)
		hi = 100;
	if (lo > hi)
		lo = hi;
	k->orph_at = ORPHAN_BATCH;
	k->high = ns->shm->size / 100 * hi;
	k->low = ns->shm->size / 100 * lo;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);
}

void shrink_fini(struct ns *ns)
{
	shrink_stop(ns);
	pthread_cond_destroy(&ns->shr.cv);
	free(ns->shr.orph);
}

static bool dirty_d(const struct mc_dentry *e)
{
	return e->flags & (MC_D_DIRTY0 | MC_D_DIRTY1);
}

static bool dirty_i(const struct mc_inode *i)
{
	return i->flags & (MC_I_DIRTY0 | MC_I_DIRTY1);
}

/* Does complete dir have a removal that freed its dentry and is not
 * committed yet (ns.c note 3)? Then it must stay complete. */
static bool removal_pending(const struct shm *s, mc_off_t dir)
{
	const struct mc_dirx *dx = shm_at(s, inode_at(s, dir)->u.dir.dirx);
	uint32_t done = (uint32_t)atomic_load_explicit(&s->hdr->committed_seq,
	                                               memory_order_relaxed);
	return dx->rm_seq != 0 && (int32_t)(dx->rm_seq - done) > 0;
}

/* The next dentry slot under the hand (live or not), 0 when there are no
 * dentry pages. */
static mc_off_t clock_next(struct shm *s, struct shrinker *k)
{
	if (s->slab[SLAB_DENTRY].pages == 0)
		return 0;
	if (++k->hand_slot >= DENTRIES_PER_PAGE) {
		k->hand_slot = 0;
		k->hand_page++;
	}
	for (uint32_t n = 0;; n++) {
		if (k->hand_page >= s->next_page) {
			k->hand_page = 0;
			k->wraps++;
		}
		if (s->page_types[k->hand_page] == MC_PT_DENTRY)
			break;
		if (n > s->next_page)
			return 0;
		k->hand_page++;
		k->hand_slot = 0;
	}
	uint64_t b = ((uint64_t)k->hand_page << MC_PAGE_SHIFT) +
	             (uint64_t)k->hand_slot * sizeof(struct mc_dentry);
	return (mc_off_t)(b >> MC_OFF_SHIFT);
}

/* Note inode off (number ino), whose evicted name was not its only one
 * (note 3). When the list cannot grow, the inode stays cached as long as
 * before: until reloaded or removed. */
static void orphan_note(struct shrinker *k, mc_off_t off, uint64_t ino)
{
	if (k->norph == k->orph_cap) {
		size_t cap = k->orph_cap ? 2 * k->orph_cap : ORPHAN_BATCH;
		struct orphan *v = cap <= ORPHAN_MAX ? realloc(k->orph, cap * sizeof(*v)) : NULL;
		if (!v) {
			/* forget the oldest half */
			size_t keep = k->norph / 2;
			if (keep)
				memmove(k->orph, k->orph + (k->norph - keep), keep * sizeof(*k->orph));
			k->norph = keep;
		} else {
			k->orph = v;
			k->orph_cap = cap;
		}
		if (k->norph == k->orph_cap)
			return;
	}
	if (k->norph == 0)
		k->orph_wraps = k->wraps;
	k->orph[k->norph++] = (struct orphan){ .off = off, .ino = ino };
}

static int orphan_cmp(const void *a, const void *b)
{
	mc_off_t x = ((const struct orphan *)a)->off, y = ((const struct orphan *)b)->off;
	return x < y ? -1 : x > y;
}

/* Free the noted orphans no live dentry names (note 3): one pass over the
 * dentry slots. Those still named are forgotten (their names' eviction
 * notes them again); dirty or held ones are kept for the next pass.
 * Returns the number freed. */
static uint64_t do_orphans(struct ns *ns)
{
	struct shm *s = ns->shm;
	struct shrinker *k = &ns->shr;
	if (k->norph == 0)
		return 0;
	qsort(k->orph, k->norph, sizeof(*k->orph), orphan_cmp);
	size_t n = 0;
	for (size_t j = 0; j < k->norph; j++)
		if (n == 0 || k->orph[n - 1].off != k->orph[j].off)
			k->orph[n++] = k->orph[j];
	for (uint32_t p = 0; p < s->next_page; p++) {
		if (s->page_types[p] != MC_PT_DENTRY)
			continue;
		for (uint32_t slot = 0; slot < DENTRIES_PER_PAGE; slot++) {
			uint64_t b = ((uint64_t)p << MC_PAGE_SHIFT) +
			             (uint64_t)slot * sizeof(struct mc_dentry);
			const struct mc_dentry *e = dentry_at(s, (mc_off_t)(b >> MC_OFF_SHIFT));
			if ((e->flags & (MC_D_LIVE | MC_D_POSITIVE)) != (MC_D_LIVE | MC_D_POSITIVE))
				continue;
			struct orphan key = { .off = e->inode };
			struct orphan *o = bsearch(&key, k->orph, n, sizeof(*k->orph), orphan_cmp);
			if (o)
				o->ino = 0; /* named: not an orphan */
		}
	}
	uint64_t freed = 0;
	size_t kept = 0;
	for (size_t j = 0; j < n; j++) {
		struct orphan o = k->orph[j];
		/* Inode numbers are never reused: the slot still holds the
		 * inode when the hash finds it there. */
		if (o.ino == 0 || inode_find(s, o.ino) != o.off)
			continue;
		const struct mc_inode *i = inode_at(s, o.off);
		if (S_ISDIR(i->mode))
			continue;
		if (dirty_i(i) || map_find(&ns->holds, o.ino) || do_extent_state_pinned(ns, o.ino)) {
			k->orph[kept++] = o;
			continue;
		}
		extent_ino_drop(&ns->ext, o.ino);
		inode_del(s, o.off);
		freed++;
	}
	k->norph = kept;
	k->orph_wraps = k->wraps;
	k->orph_at = kept + ORPHAN_BATCH; /* those kept do not make each scan a pass */
	return freed;
}

/* Evict d if it is evictable (note 2) and, unless ignore_ref, was not
 * referenced since the hand last passed. */
static bool evict_one(struct ns *ns, mc_off_t d, bool ignore_ref)
{
	struct shm *s = ns->shm;
	struct mc_dentry *e = dentry_at(s, d);
	if (!(e->flags & MC_D_LIVE) || dirty_d(e))
		return false;
	mc_off_t dir = e->parent, ioff = e->inode;
	bool pos = e->flags & MC_D_POSITIVE;
	if (pos) {
		struct mc_inode *i = inode_at(s, ioff);
		if (dirty_i(i) || map_find(&ns->holds, i->ino) || do_extent_state_pinned(ns, i->ino))
			return false;
		if (S_ISDIR(i->mode) && i->u.dir.dirx &&
		    ((struct mc_dirx *)shm_at(s, i->u.dir.dirx))->ncached > 0)
			return false;
		if (dcache_complete(s, dir) && removal_pending(s, dir))
			return false;
	}
	/* A held directory may be being listed through the server: its
	 * children keep their cookies until the handle is closed. */
	if (map_find(&ns->holds, inode_at(s, dir)->ino))
		return false;
	if (shm_ref_take(s, d) && !ignore_ref) {
		ns->shr.st.rotated++;
		return false;
	}
	if (pos)
		dcache_clear_complete(s, dir);
	dcache_del(s, d);
	if (pos) {
		struct mc_inode *i = inode_at(s, ioff);
		if (S_ISDIR(i->mode) || i->nlink <= 1) {
			extent_ino_drop(&ns->ext, i->ino);
			inode_del(s, ioff);
		} else {
			orphan_note(&ns->shr, ioff, i->ino);
		}
	} else {
		ns->shr.st.neg_evicted++;
	}
	ns->shr.st.evicted++;
	return true;
}

/* Is the scan done: use at most target, the slab `want` (or none, when
 * negative) able to allocate, at least min evicted? Asked at every slot
 * the hand passes: the cheap tests first, and no sum over the slabs for
 * a direct reclaim, whose target is no bound. */
static bool scan_done(const struct shm *s, uint64_t target, int want, uint64_t evicted,
                      uint64_t min)
{
	return evicted >= min && (want < 0 || shm_slab_room(s, (enum shm_slab)want)) &&
	       (target == UINT64_MAX || shm_bytes_used(s) <= target);
}

/* Move the hand at most max_scan slots, evicting until scan_done. A full
 * sweep without an eviction makes the referenced bits count for nothing
 * (note 4). Returns the number evicted. */
static uint64_t do_scan(struct ns *ns, uint64_t target, int want, uint64_t min,
                        uint64_t max_scan)
{
	struct shm *s = ns->shm;
	uint64_t nslots = s->slab[SLAB_DENTRY].pages * DENTRIES_PER_PAGE;
	uint64_t evicted = 0, since = 0;
	for (uint64_t k = 0; k < max_scan && !scan_done(s, target, want, evicted, min); k++) {
		mc_off_t d = clock_next(s, &ns->shr);
		if (!d)
			break;
		ns->shr.st.scanned++;
		if (evict_one(ns, d, since >= nslots)) {
			evicted++;
			since = 0;
		} else if (++since >= 2 * nslots) {
			break; /* nothing evictable is left */
		}
	}
	struct shrinker *k = &ns->shr;
	if (k->norph >= k->orph_at || (k->norph > 0 && k->wraps != k->orph_wraps))
		do_orphans(ns);
	return evicted;
}

/* Ask the committer for a commit of everything journaled so far and wait
 * (lock released) until it is published: dirty entries become clean. false
 * when there was nothing to commit, no committer, or no publish in time. */
static bool force_commit(struct ns *ns)
{
	uint64_t want = ns->running->nrecs ? ns->running->seq
	              : ns->swapped ? ns->swapped->seq : 0;
	if (!want || !ns->kick)
		return false;
	ns->shr.st.forced_commits++;
	uint64_t dl_ns = mono_ns() + (uint64_t)FORCE_WAIT_MS * 1000000u;
	struct timespec dl = { (time_t)(dl_ns / 1000000000u), (long)(dl_ns % 1000000000u) };
	while (atomic_load_explicit(&ns->shm->hdr->committed_seq, memory_order_acquire) < want) {
		ns->kick(ns->kick_arg);
		if (pthread_cond_timedwait(&ns->room, &ns->lock, &dl) == ETIMEDOUT)
			return atomic_load_explicit(&ns->shm->hdr->committed_seq,
			                            memory_order_acquire) >= want;
	}
	return true;
}

void reclaim_begin(struct ns *ns, struct reclaim *r)
{
	r->fails = ns->shm->alloc_failures;
	r->tries = 0;
	ns->drop_wait = false;
	ns_miss_arm();
}

void reclaim_progress(struct reclaim *r)
{
	r->tries = 0;
}

static bool reclaim_retry(struct ns *ns, int rc, struct reclaim *r)
{
	struct shm *s = ns->shm;
	struct shrinker *k = &ns->shr;
	if (rc != -ENOSPC || s->alloc_failures == r->fails) {
		if (k->running && shm_bytes_used(s) > k->high)
			pthread_cond_signal(&k->cv);
		return false;
	}
	if (r->tries++ >= RECLAIM_TRIES) {
		k->st.enospc++;
		return false;
	}
	k->st.direct++;
	if (ns->ext.page_failed) {
		/* Chunks of idle extent trees serve only extent trees. */
		ns->ext.page_failed = false;
		uint64_t want_free = ns->ext.chunks_free + EXTENT_RECLAIM_CHUNKS;
		if (do_extent_shrink(ns, UINT64_MAX, want_free) ||
		    (force_commit(ns) && do_extent_shrink(ns, UINT64_MAX, want_free))) {
			r->fails = s->alloc_failures;
			return true;
		}
	}
	/* Only what this operation needs, and a little ahead: the thread
	 * takes use down to the low mark without holding up an operation. */
	int want = (int)s->fail_slab;
	uint64_t max = 2 * s->slab[SLAB_DENTRY].pages * DENTRIES_PER_PAGE + 1;
	uint64_t n = do_scan(ns, UINT64_MAX, want, RECLAIM_MIN, max);
	if (!shm_slab_room(s, (enum shm_slab)want) && force_commit(ns))
		n += do_scan(ns, UINT64_MAX, want, RECLAIM_MIN, max);
	if (k->running)
		pthread_cond_signal(&k->cv);
	if (n == 0 && !shm_slab_room(s, (enum shm_slab)want)) {
		k->st.enospc++;
		return false;
	}
	r->fails = s->alloc_failures;
	return true;
}

static bool reclaim_again(struct ns *ns, int rc, struct reclaim *r)
{
	if (ns_miss_resolve(ns, rc))
		return true; /* a miss was read from the store without the lock */
	if (rc == -EAGAIN && ns->drop_wait) {
		/* An inode to load lost a link not yet in the store (ns.c
		 * note 7): once that is committed it loads. */
		ns->drop_wait = false;
		if (r->tries++ < RECLAIM_TRIES && force_commit(ns))
			return true;
	}
	if (reclaim_retry(ns, rc, r))
		return true;
	ns_miss_disarm();
	return false;
}

bool do_reclaim_retry(struct ns *ns, int rc, struct reclaim *r)
{
	if (!reclaim_again(ns, rc, r))
		return false;
	walk_memo_forget(ns); /* evicted, or the lock was dropped: walk again */
	return true;
}

bool do_neg_room(struct ns *ns, mc_off_t dir)
{
	struct shm *s = ns->shm;
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	if (dx && dx->nneg >= ns->neg_dir_max) {
		mc_off_t old = dcache_neg_oldest(s, dir, 2 * ns->neg_dir_max);
		if (!old)
			return false;
		dcache_del(s, old);
		ns->shr.st.neg_evicted++;
	}
	return s->d_negative < ns->neg_max;
}

/* ---- the thread ---------------------------------------------------------- */

static void *shrink_main(void *arg)
{
	struct ns *ns = arg;
	struct shrinker *k = &ns->shr;
	struct shm *s = ns->shm;
	pthread_mutex_lock(&ns->lock);
	while (!k->stop) {
		if (shm_bytes_used(s) > k->high) {
			k->st.runs++;
			do_extent_shrink(ns, k->low, 0);
			uint64_t idle = 0, nslots = s->slab[SLAB_DENTRY].pages * DENTRIES_PER_PAGE;
			while (!k->stop && shm_bytes_used(s) > k->low && idle < 2 * nslots) {
				if (do_scan(ns, k->low, -1, 0, SHRINK_BATCH) == 0)
					idle += SHRINK_BATCH;
				else
					idle = 0;
				pthread_mutex_unlock(&ns->lock);
				sched_yield();
				pthread_mutex_lock(&ns->lock);
			}
			/* Still above the mark: what is left is dirty or pinned; a
			 * commit makes the dirty part evictable next time. */
			if (shm_bytes_used(s) > k->high && ns->kick)
				ns->kick(ns->kick_arg);
		}
		uint64_t dl_ns = mono_ns() + (uint64_t)SHRINK_PERIOD_MS * 1000000u;
		struct timespec dl = { (time_t)(dl_ns / 1000000000u), (long)(dl_ns % 1000000000u) };
		if (!k->stop)
			pthread_cond_timedwait(&k->cv, &ns->lock, &dl);
	}
	pthread_mutex_unlock(&ns->lock);
	return NULL;
}

int shrink_start(struct ns *ns)
{
	struct shrinker *k = &ns->shr;
	pthread_mutex_lock(&ns->lock);
	if (k->running) {
		pthread_mutex_unlock(&ns->lock);
		return -EALREADY;
	}
	k->stop = false;
	int rc = pthread_create(&k->thread, NULL, shrink_main, ns);
	if (rc == 0)
		k->running = true;
	pthread_mutex_unlock(&ns->lock);
	return -rc;
}

void shrink_stop(struct ns *ns)
{
	struct shrinker *k = &ns->shr;
	pthread_mutex_lock(&ns->lock);
	if (!k->running) {
		pthread_mutex_unlock(&ns->lock);
		return;
	}
	k->stop = true;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&ns->lock);
	pthread_join(k->thread, NULL);
	pthread_mutex_lock(&ns->lock);
	k->running = false;
	pthread_mutex_unlock(&ns->lock);
}

uint64_t shrink_now(struct ns *ns, uint64_t target, uint64_t max_scan)
{
	pthread_mutex_lock(&ns->lock);
	uint64_t n = do_scan(ns, target, -1, 0, max_scan);
	pthread_mutex_unlock(&ns->lock);
	return n;
}
