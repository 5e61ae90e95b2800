/* ns_miss.c - store reads for lookups that miss, outside the namespace
 * lock (the kernel's try_to_unlazy, in reverse: the walk gives up its
 * lock to wait for the store, then starts over).
 *
 *   ns_lookup misses, inside a reclaim loop (reclaim_begin armed it)
 *     -> ns_miss_defer: note (parent ino, name), answer NS_EMISS: the
 *        attempt fails, holding nothing (the reclaim loops' rule)
 *     -> do_reclaim_retry -> ns_miss_resolve: drop the namespace lock,
 *        take the commit semaphore for reading, read the name and its inode
 *        in one LMDB snapshot (ns_miss_read), take the namespace lock,
 *        cache the answer unless the cache knows better, let the semaphore
 *        go, ask for another attempt
 *     -> the attempt finds the name cached
 *
 * Invariants:
 *  1. The answer is read and cached under the read side of the commit
 *     semaphore, like a warmer's batch (ns_warm.c notes 1 to 3): no
 *     publish falls between the read and the insert, a name the cache
 *     holds (positive or negative) is never replaced, a complete
 *     directory is never added to. The publish waits for one read at most.
 *  2. After NS_MISS_TRIES reads for one name that did not leave it cached
 *     (no room, a store error, the directory gone), the next miss on it
 *     reads under the lock as before, which reports errors and reclaims
 *     room: a lookup always ends.
 *  3. Outside a reclaim loop (or once do_reclaim_retry said stop, which
 *     disarms) ns_lookup reads under the lock; the state is per thread.
 *  4. A lookup for a removal (ns_miss_for_removal) reads the name alone
 *     (its inode too only for a directory); when it names a non-directory
 *     whose inode the cache does not hold, the answer stays uncached, for
 *     the next attempt only (ns_miss_take): the lock is held from the
 *     insert to that attempt and the semaphore from the read to the
 *     insert, so nothing it says can have changed. The file is then
 *     removed without its inode being read or loaded (ns.c note 7).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns_impl.h"
#include "store_read.h"

#define NS_MISS_TRIES 3u

struct ns_miss_tl {
	bool armed;               /* inside a reclaim loop */
	bool pending;             /* a miss noted in ans, not read yet */
	unsigned tries;           /* reads for this name so far */
	bool for_removal;         /* the lookups now are for a removal (note 4) */
	bool ans_removal;         /* ans was noted by such a lookup */
	bool fresh;               /* ans was read and left uncached for the next attempt */
	struct ns_miss_ans ans;
};
static __thread struct ns_miss_tl tl;

static unsigned miss_delay_us(void)
{
	static int v = -1;
	if (v < 0) {
		const char *d = getenv("MCACHED_MISS_DELAY_US");
		v = d ? atoi(d) : 0;
	}
	return (unsigned)v;
}

void ns_miss_read(struct ns *ns, uint64_t parent, const char *name, size_t len,
                  struct ns_miss_ans *a)
{
	unsigned delay = miss_delay_us();
	if (delay)
		usleep(delay); /* a slow store, for tests */
	a->have_rec = false;
	a->err = store_get_entry(ns->store, parent, name, len, &a->ino, &a->dtype, &a->rec,
	                         a->target, &a->tlen, &a->have_rec);
}

/* A removal's read (note 4): the name, and the inode of a directory. */
static void miss_read_removal(struct ns *ns, struct ns_miss_ans *a)
{
	unsigned delay = miss_delay_us();
	if (delay)
		usleep(delay);
	a->have_rec = false;
	a->tlen = 0;
	a->err = store_get_dentry(ns->store, a->parent, a->name, a->len, &a->ino, &a->dtype);
	if (a->err == 0 && (a->dtype == DT_DIR || a->dtype == DT_UNKNOWN))
		ns_miss_read(ns, a->parent, a->name, a->len, a);
}

void ns_miss_arm(void)
{
	tl.armed = true;
	tl.pending = tl.fresh = false;
	tl.tries = 0;
}

void ns_miss_disarm(void)
{
	tl.armed = tl.pending = tl.fresh = false;
}

void ns_miss_for_removal(bool on)
{
	tl.for_removal = on;
}

const struct ns_miss_ans *ns_miss_take(uint64_t parent, const char *name, size_t len)
{
	if (!tl.fresh || tl.ans.parent != parent || tl.ans.len != len ||
	    memcmp(tl.ans.name, name, len) != 0)
		return NULL;
	tl.fresh = false;
	return &tl.ans;
}

int ns_miss_defer(struct ns *ns, uint64_t parent, const char *name, size_t len)
{
	(void)ns;
	if (!tl.armed)
		return 0;
	bool same = tl.ans.parent == parent && tl.ans.len == len &&
	            memcmp(tl.ans.name, name, len) == 0;
	if (same && tl.tries >= NS_MISS_TRIES)
		return 0; /* note 2 */
	if (!same)
		tl.tries = 0;
	tl.ans.parent = parent;
	tl.ans.len = len;
	memcpy(tl.ans.name, name, len);
	tl.pending = true;
	tl.ans_removal = tl.for_removal;
	return NS_EMISS;
}

/* Cache what the store said of the name, lock held (note 1). */
static void miss_insert(struct ns *ns, const struct ns_miss_ans *a)
{
	struct shm *s = ns->shm;
	mc_off_t dir = inode_find(s, a->parent);
	if (!dir || !S_ISDIR(inode_at(s, dir)->mode) || dcache_complete(s, dir) ||
	    dcache_find(s, dir, a->name, a->len))
		return;
	if (a->err == -ENOENT) {
		if (do_neg_room(ns, dir))
			dcache_add(s, dir, a->name, a->len, 0, 0);
		return;
	}
	if (a->err)
		return;
	mc_off_t ioff = inode_find(s, a->ino); /* cached: newer than any read */
	bool added = false;
	if (!ioff && tl.ans_removal && !a->have_rec && a->dtype != DT_DIR &&
	    a->dtype != DT_UNKNOWN) {
		tl.fresh = true; /* note 4 */
		return;
	}
	if (!ioff) {
		if (!a->have_rec || ns_cache_inode_rec(ns, &a->rec, a->target, a->tlen, &ioff) < 0)
			return;
		added = true;
	}
	if (!dcache_add(s, dir, a->name, a->len, ioff, a->dtype) && added)
		inode_del(s, ioff);
}

bool ns_miss_resolve(struct ns *ns, int rc)
{
	tl.fresh = false; /* good for the attempt after the read only */
	if (rc != NS_EMISS || !tl.armed || !tl.pending)
		return false;
	tl.pending = false;
	tl.tries++;
	pthread_mutex_unlock(&ns->lock);
	commit_sem_read_lock(&ns->csem);
	if (tl.ans_removal)
		miss_read_removal(ns, &tl.ans);
	else
		ns_miss_read(ns, tl.ans.parent, tl.ans.name, tl.ans.len, &tl.ans);
	pthread_mutex_lock(&ns->lock);
	miss_insert(ns, &tl.ans);
	commit_sem_read_unlock(&ns->csem);
	return true;
}
