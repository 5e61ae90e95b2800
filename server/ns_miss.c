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
 *  5. Removals in name order (rm of a directory's files, batched) would
 *     each miss, read and run again. So a removal's read that follows
 *     another's in the same directory and in name order also reads the
 *     names after it (store_get_dentry_ahead, one descent, one snapshot),
 *     up to a window that doubles while the names read ahead get used and
 *     falls back to none when they do not; a later removal of one of them
 *     (ns_miss_ahead) needs neither the read nor another attempt. Such an
 *     answer holds, as a warmer's batch does (ns_warm.c notes 1 and 2),
 *     while no commit is published after the read: the published
 *     sequence is noted under the commit semaphore, before the snapshot,
 *     and checked under the namespace lock at use; until it moves, every
 *     change since the snapshot is a dirty cached entry (or the parent is
 *     complete), which the caller checks first, and what is left is as
 *     the snapshot says. The names are the thread's, for one namespace
 *     (ns->id) and one directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "name_order.h"
#include "ns_impl.h"
#include "store_read.h"

#define NS_MISS_TRIES 3u
#define AHEAD_MIN 4u          /* names read ahead first (note 5) */
#define AHEAD_MAX 64u         /* ... at most */
#define AHEAD_BYTES 4096u     /* bytes of their names, at most */

/* A name read ahead. */
struct ahead_ent {
	uint64_t ino;
	uint16_t off;             /* of the name in ahead.names */
	uint8_t len;              /* MC_NAME_MAX is 255 */
	uint8_t dtype;
};

/* The names read ahead of this thread's last removal read (note 5), and
 * the window's state. */
struct ahead {
	uint64_t ns_id;           /* ns->id of the namespace; 0: none */
	uint64_t parent;          /* the directory's inode number */
	uint64_t seq;             /* the published sequence before the snapshot */
	unsigned n, next;         /* names; the first one not passed by yet */
	unsigned used;            /* of them removed through ns_miss_ahead */
	unsigned window;          /* names the last read asked for */
	size_t bytes;
	uint8_t last_len;         /* the name that read was for */
	char last[MC_NAME_MAX];
	struct ahead_ent e[AHEAD_MAX];
	char names[AHEAD_BYTES];
};

struct ns_miss_tl {
	bool armed;               /* inside a reclaim loop */
	bool pending;             /* a miss noted in ans, not read yet */
	unsigned tries;           /* reads for this name so far */
	bool for_removal;         /* the lookups now are for a removal (note 4) */
	bool ans_removal;         /* ans was noted by such a lookup */
	bool fresh;               /* ans was read and left uncached for the next attempt */
	struct ns_miss_ans ans;
	struct ahead ahead;
};
static __thread struct ns_miss_tl tl;

static unsigned miss_delay_us(void)
{
	/* Read by every worker on its first miss: atomic, or two first
	 * misses at once race (ThreadSanitizer says so). */
	static _Atomic int v = -1;
	int d = atomic_load_explicit(&v, memory_order_relaxed);
	if (d < 0) {
		const char *e = getenv("MCACHED_MISS_DELAY_US");
		d = e ? atoi(e) : 0;
		atomic_store_explicit(&v, d, memory_order_relaxed);
	}
	return (unsigned)d;
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

/* How many names the removal read of name in parent reads ahead (note 5):
 * none unless it follows the last one in that directory in name order;
 * then twice as many as last time if some of those were used, else none
 * if that read ahead for nothing, else a few. */
static unsigned ahead_window(const struct ahead *ra, uint64_t parent, const char *name,
                             size_t len)
{
	if (ra->parent != parent || name_cmp(name, len, ra->last, ra->last_len) <= 0)
		return 0;
	if (ra->used)
		return ra->window * 2 < AHEAD_MAX ? ra->window * 2 : AHEAD_MAX;
	return ra->window ? 0 : AHEAD_MIN;
}

/* store_get_dentry_ahead callback: keep one name; directories (and what
 * may be one) are read whole by a removal, so they are left out. */
static int ahead_add(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	struct ahead *ra = arg;
	if (ra->n == AHEAD_MAX || ra->bytes + len > AHEAD_BYTES)
		return 1;
	if (dtype == DT_DIR || dtype == DT_UNKNOWN)
		return 0;
	struct ahead_ent *e = &ra->e[ra->n++];
	e->ino = ino;
	e->off = (uint16_t)ra->bytes;
	e->len = (uint8_t)len;
	e->dtype = dtype;
	memcpy(ra->names + ra->bytes, name, len);
	ra->bytes += len;
	return 0;
}

/* The dentry of a removal's read, and the names after it when the window
 * says so (note 5). The commit semaphore is held for reading. */
static int read_dentry(struct ns *ns, struct ns_miss_ans *a)
{
	struct ahead *ra = &tl.ahead;
	unsigned w = ahead_window(ra, a->parent, a->name, a->len);
	ra->ns_id = 0;
	ra->n = ra->next = ra->used = 0;
	ra->bytes = 0;
	ra->window = w;
	ra->parent = a->parent;
	ra->last_len = (uint8_t)a->len;
	memcpy(ra->last, a->name, a->len);
	if (!w)
		return store_get_dentry(ns->store, a->parent, a->name, a->len, &a->ino, &a->dtype);
	/* Before the snapshot: no publish comes until the semaphore goes. */
	ra->seq = atomic_load_explicit(&ns->shm->hdr->committed_seq, memory_order_acquire);
	int err = store_get_dentry_ahead(ns->store, a->parent, a->name, a->len, &a->ino,
	                                 &a->dtype, w, ahead_add, ra);
	ra->ns_id = ns->id;
	return err;
}

bool ns_miss_ahead(struct ns *ns, uint64_t parent, const char *name, size_t len, uint64_t *ino,
                   uint8_t *dtype)
{
	struct ahead *ra = &tl.ahead;
	if (ra->next == ra->n || ra->ns_id != ns->id || ra->parent != parent)
		return false;
	if (atomic_load_explicit(&ns->shm->hdr->committed_seq, memory_order_relaxed) != ra->seq) {
		ra->n = ra->next = 0; /* a publish: they may be stale */
		return false;
	}
	/* Removals in name order: pass by the names before this one. */
	for (; ra->next < ra->n; ra->next++) {
		const struct ahead_ent *e = &ra->e[ra->next];
		int c = name_cmp(ra->names + e->off, e->len, name, len);
		if (c > 0)
			return false;
		if (c == 0) {
			ra->next++;
			ra->used++;
			*ino = e->ino;
			*dtype = e->dtype;
			return true;
		}
	}
	return false;
}

/* A removal's read (note 4): the name, and the inode of a directory. */
static void miss_read_removal(struct ns *ns, struct ns_miss_ans *a)
{
	unsigned delay = miss_delay_us();
	if (delay)
		usleep(delay);
	a->have_rec = false;
	a->tlen = 0;
	a->err = read_dentry(ns, a);
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

bool ns_miss_removing(void)
{
	return tl.for_removal;
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
	ns->miss_reads++;
	miss_insert(ns, &tl.ans);
	commit_sem_read_unlock(&ns->csem);
	return true;
}
