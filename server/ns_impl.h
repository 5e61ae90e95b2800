/* ns_impl.h - what the namespace's modules (ns.c, ns_rename.c, walk.c,
 * dirty.c, attr.c, rmtree.c, ...) share: the namespace state, the path-walk
 * state and their helpers. Not for use outside the namespace. */
#ifndef MC_NS_IMPL_H
#define MC_NS_IMPL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "commit_sem.h"
#include "dcache.h"
#include "extent.h"
#include "mc_path.h"
#include "inode.h"
#include "journal.h"
#include "map.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shrink.h"
#include "store.h"
#include "watch.h"

#define NS_MAX_SYMLINKS 40

/* Growable array of slot offsets dirtied by one batch. */
struct offvec {
	mc_off_t *v;
	size_t n, cap;
};

/* An inode left cached when one of its names was evicted. */
struct orphan {
	mc_off_t off;
	uint64_t ino;
};

/* The shrinker's state (shrink.c), under the namespace lock. */
struct shrinker {
	uint64_t high, low;              /* watermarks in bytes of segment use */
	uint32_t hand_page, hand_slot;   /* the CLOCK hand over dentry slots */
	uint64_t wraps;                  /* times the hand went round */
	struct orphan *orph;             /* hard-linked inodes whose name went (shrink.c) */
	size_t norph, orph_cap;
	uint64_t orph_wraps;             /* wraps when the oldest of them was noted */
	size_t orph_at;                  /* a pass frees them once norph reaches it */
	struct shrink_stats st;
	pthread_t thread;
	pthread_cond_t cv;               /* wakes the thread (with ns->lock) */
	bool running, stop;
};

/* The directory a path prefix resolved to, kept for the next walk under
 * the same prefix within one run of operations (walk.c, notes). */
#define WALK_MEMO_KEY 256
#define WALK_MEMO_DEPTH 16
struct walk_memo {
	uint64_t epoch;                  /* ns->hold_epoch it was made in; 0: none */
	const struct cred *cred;         /* made for these credentials */
	uint32_t uid, gid;
	unsigned depth;                  /* directories, root first */
	mc_off_t dir[WALK_MEMO_DEPTH];   /* inode slots, as nd->stack */
	uint32_t iseq[WALK_MEMO_DEPTH];  /* their seqs */
	mc_off_t dent[WALK_MEMO_DEPTH];  /* the dentry naming each (0 for the root) */
	uint32_t dseq[WALK_MEMO_DEPTH];  /* their seqs */
	size_t klen;
	char key[WALK_MEMO_KEY];         /* the path up to its last slash */
};

struct ns {
	pthread_mutex_t lock;
	/* The committer is waiting for the lock (ns_swap, ns_publish): a
	 * long job that drops the lock between batches lets it in first. */
	_Atomic unsigned committer_waiting;
	/* The lock is held for a warmer's slice, a few microseconds, or a
	 * worker's run of operations, some tens (ns_lock_short_set): an operation
	 * that finds it taken spins for it rather than sleep (ns_lock_op). A
	 * hint, set and cleared by the holder. */
	_Atomic bool lock_short;
	struct shm *shm;
	struct store *store;
	uint64_t id;                     /* this namespace's, unique in the process */
	uint64_t next_ino;
	uint64_t neg_max;                /* cached negative dentries in total */
	uint32_t neg_dir_max;            /* ... and per directory */
	struct shrinker shr;
	struct list_cursor *cursors;     /* store cursors of listings (listing.c) */
	uint32_t cursor_next;
	struct journal_batch *running;   /* batch receiving records */
	struct journal_batch *spare;     /* empty batch ready for the next swap */
	struct journal_batch *swapped;   /* handed to the committer, not yet published */
	struct offvec dirty_d[2];        /* dentries dirtied by batches of even/odd seq */
	struct offvec dirty_i[2];
	struct map recs[2];              /* inode slot -> offset of its INODE_PUT record, in the
	                                  * batches of even/odd seq (one record per inode) */
	struct map holds;                /* ino -> open handles holding it */
	struct map drops[2];             /* ino -> the time an inode the cache did not hold
	                                  * last lost a link (INODE_UNLINK) in the batch of
	                                  * even/odd seq (ns.c note 7) */
	struct map drops_more[2];        /* ino -> links it lost there beyond the first */
	bool drop_wait;                  /* an attempt refused to load such an inode */
	struct extent_cache ext;         /* per-inode extent trees (extent.h) */
	/* The journal bound (ns.h): limits, waiters, the committer's kick. */
	uint64_t jmax_recs, jmax_bytes;
	unsigned jwait_ms;
	pthread_cond_t room;             /* broadcast by ns_publish */
	void (*kick)(void *arg);
	void *kick_arg;
	uint64_t kicked_seq;             /* running batch already kicked for */
	void (*arm)(void *arg);          /* the committer's timer (ns_set_arm) */
	void *arm_arg;
	uint64_t armed_seq;              /* running batch already armed for; 0: none */
	bool jrefusing;                  /* a wait timed out, no publish since: no more waits */
	uint64_t full_waits, full_refusals;
	uint64_t full_wait_us;           /* time mutations spent waiting for room */
	/* Warming (ns_warm.c): the commit semaphore and the miss hook. */
	struct commit_sem csem;
	void (*miss_fn)(void *arg, uint64_t dir_ino);
	void *miss_arg;
	/* Runs of operations under one lock (ns_hold_begin): the hold's
	 * number, and the parent it resolved last (walk.c). */
	uint64_t hold_epoch;
	struct walk_memo memo;
	uint64_t memo_hits;              /* walks the memo served */
	/* An rmtree attempt, or a run of operations under one lock, journals
	 * the directory it changes once, not per name (ns_name.c,
	 * dir_defer_begin): the slot whose record is owed, 0 when none. */
	bool dir_defer;
	mc_off_t dir_owed;
	uint64_t miss_reads;             /* ns_counts: ns_miss.c's reads ... */
	uint64_t miss_ahead_used;        /* ... and the names read ahead used */
};

/* Path-walk state (the kernel's nameidata). stack[0] is the root;
 * stack[depth - 1] the directory the walk stands in. */
#define ND_INLINE 32
struct nd {
	struct ns *ns;
	const struct cred *cred;
	mc_off_t *stack;                 /* inline, or malloc'd once deeper than ND_INLINE */
	unsigned depth, cap;
	mc_off_t inline_stack[ND_INLINE];
	unsigned nlinks;
	const char *last;
	size_t lastlen;
	enum mc_last last_type;
	bool slash;                      /* the last component had trailing slashes */
};

/* Permission masks. */
#define MAY_EXEC  MC_MAY_EXEC
#define MAY_WRITE MC_MAY_WRITE
#define MAY_READ  MC_MAY_READ

/* walk.c */
void nd_init(struct nd *nd, struct ns *ns, const struct cred *c);
void nd_free(struct nd *nd);
static inline mc_off_t nd_top(const struct nd *nd) { return nd->stack[nd->depth - 1]; }
int nd_push(struct nd *nd, mc_off_t dir);
/* Walk all of path but its last component (following symlinks on the way),
 * leaving the last component in nd->last*. */
int walk_parent(struct nd *nd, const char *path, size_t len);
/* The parent memo (walk.c notes): a new hold, a yield or a retry forgets
 * it; a change of dir's entries, links or times (dir_entries), whose seq
 * was seq_before, carries it over. */
void walk_memo_forget(struct ns *ns);
void walk_memo_carry(struct ns *ns, mc_off_t dir, uint32_t seq_before);
/* Resolve nd->last* (after walk_parent) to an inode; follow a final symlink
 * when follow (or a trailing slash) says so. A directory result is pushed. */
int walk_last(struct nd *nd, bool follow, mc_off_t *res);
/* walk_parent + walk_last. */
int walk_path(struct nd *nd, const char *path, size_t len, bool follow, mc_off_t *res);
/* Look name up in dir: the cache, else the store (and cache the answer).
 * *d is the dentry (0 when none is cached), *ino its inode slot (0: absent). */
int ns_lookup(struct ns *ns, mc_off_t dir, const char *name, size_t len, mc_off_t *d,
              mc_off_t *ino);
/* The cached slot of inode number ino, loaded from the store if needed. */
int ns_load_inode(struct ns *ns, uint64_t ino, mc_off_t *out);
/* Make dir complete: every child it has in the store is cached. */
int ns_load_dir(struct ns *ns, mc_off_t dir);

/* shrink.c: the bound on the cache. Operations that may allocate run as
 *     struct reclaim r; reclaim_begin(ns, &r);
 *     do { ...attempt, holding no slot offset across the loop... }
 *     while (do_reclaim_retry(ns, rc, &r));
 * so that eviction only ever happens between attempts, when the operation
 * holds nothing a freed slot could invalidate. */
struct reclaim {
	uint64_t fails;                  /* shm->alloc_failures when the attempt began */
	unsigned tries;
};
void reclaim_begin(struct ns *ns, struct reclaim *r);
/* A spinning thread's pause between two looks at a lock. */
static inline void ns_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* How long an operation spins for a lock held for a warmer's slice before
 * it sleeps on it (ns_lock_op). */
#define NS_OP_SPIN_NS 100000u

/* Spin for the lock while go_on(ns) holds, for at most spin_ns: true
 * once it is taken, false when the time ran out or go_on turned false. */
static inline bool ns_spin_for_lock(struct ns *ns, uint64_t spin_ns, bool (*go_on)(struct ns *))
{
	uint64_t until = 0;
	while (go_on(ns)) {
		if (pthread_mutex_trylock(&ns->lock) == 0)
			return true;
		uint64_t now = mono_ns();
		if (!until)
			until = now + spin_ns;
		else if (now > until)
			break;
		for (int k = 0; k < 16; k++)
			ns_cpu_relax();
	}
	return false;
}

static inline bool ns_lock_is_short(struct ns *ns)
{
	return atomic_load_explicit(&ns->lock_short, memory_order_relaxed);
}

/* The holder of the lock says it holds it for a bounded time (on): a
 * warmer's slice (ns_warm.c note 7) or a worker's run of operations
 * (REQUEST_HOLD_OPS operations and a slice), so that an operation spins
 * for it (ns_lock_op); or that it is about to let it go (off). */
static inline void ns_lock_short_set(struct ns *ns, bool on)
{
	atomic_store_explicit(&ns->lock_short, on, memory_order_relaxed);
}

/* Take the lock for an operation, letting a committer that waits for it
 * go first (a bounded number of yields): the mutex goes to whoever asks
 * first, and a thread that runs operations back to back would take it
 * again before the woken committer runs, while dirty entries pile up.
 * While the lock is held for a warmer's slice or another worker's run of
 * operations (lock_short), spin for it, up to NS_OP_SPIN_NS, rather than
 * sleep: on a virtual machine a futex sleep and wake-up costs some 30 us
 * (the wake is an interrupt to a halted CPU, or a preemption), about what
 * the holder keeps it (ns_warm.c note 7; a run is REQUEST_HOLD_OPS
 * operations at most, in one slice), and the worker asleep meanwhile left
 * its CPU idle while two clients' workers took turns. The committer, which
 * holds it longer, is slept out. */
static inline void ns_lock_op(struct ns *ns)
{
	for (unsigned k = 0; k < 1000 && atomic_load_explicit(&ns->committer_waiting,
	                                                      memory_order_relaxed); k++)
		sched_yield();
	if (!ns_spin_for_lock(ns, NS_OP_SPIN_NS, ns_lock_is_short))
		pthread_mutex_lock(&ns->lock);
}

/* The namespace whose lock this thread holds for a run of operations
 * (ns_hold_begin), or NULL. */
extern _Thread_local struct ns *ns_held;

/* ns_lock_op(), unless this thread holds the lock for a run of operations
 * (ns_hold_begin): true when it took the lock (and must release it). */
static inline bool ns_lock_unless_held(struct ns *ns)
{
	if (ns_held == ns)
		return false;
	ns_lock_op(ns);
	return true;
}

/* Take the lock, run attempt (an expression giving 0 or -errno) until
 * do_reclaim_retry says stop, release the lock; rc gets the result. */
#define NS_LOCKED(ns, rc, attempt)                                  \
	do {                                                        \
		struct reclaim r_;                                  \
		bool took_ = ns_lock_unless_held(ns);               \
		reclaim_begin((ns), &r_);                           \
		do                                                  \
			(rc) = (attempt);                           \
		while (do_reclaim_retry((ns), (rc), &r_));          \
		if (took_)                                          \
			pthread_mutex_unlock(&(ns)->lock);          \
	} while (0)
/* After an attempt that returned rc, lock held: true when it failed for
 * want of segment space and reclaim (evicting, or forcing a commit when
 * only dirty entries were left) made some, so the attempt is worth
 * repeating; false otherwise (then an -ENOSPC stands and is counted). Also
 * wakes the shrinker when use is above the high mark. */
bool do_reclaim_retry(struct ns *ns, int rc, struct reclaim *r);
/* The attempt made lasting progress before it failed (an rmtree's
 * removals): the tries of do_reclaim_retry count from 0 again, so that an
 * operation long enough to fill the segment several times is bounded per
 * step of progress, not in total. */
void reclaim_progress(struct reclaim *r);
void shrink_init(struct ns *ns, const struct ns_opts *o);
void shrink_fini(struct ns *ns);
/* Make room for a negative entry in dir under the caps (oldest out first):
 * false when none can be cached. */
bool do_neg_room(struct ns *ns, mc_off_t dir);

/* ns_miss.c: store reads for misses outside the lock (see there). An
 * attempt's lookup that needs the store fails with NS_EMISS (never seen
 * outside the namespace); do_reclaim_retry then reads without the lock,
 * caches the answer and runs the attempt again. */
#define NS_EMISS (-4096)
struct ns_miss_ans {
	uint64_t parent;          /* the name asked for */
	size_t len;
	char name[MC_NAME_MAX];
	int err;                  /* 0, -ENOENT or the store's error */
	uint64_t ino;
	uint8_t dtype;
	bool have_rec;
	struct mc_inode_rec rec;
	size_t tlen;
	char target[MC_SYMLINK_MAX];
};
/* Read name in parent and its inode (one snapshot); no lock needed. */
void ns_miss_read(struct ns *ns, uint64_t parent, const char *name, size_t len,
                  struct ns_miss_ans *a);
void ns_miss_arm(void);
void ns_miss_disarm(void);
/* Lock held, on a miss that needs the store: 0 (read it under the lock
 * now), or NS_EMISS (noted: fail the attempt). */
int ns_miss_defer(struct ns *ns, uint64_t parent, const char *name, size_t len);
/* Lock held (dropped and taken again inside): true when rc is NS_EMISS
 * and the name was read (and cached if it could be): run the attempt
 * again. */
bool ns_miss_resolve(struct ns *ns, int rc);
/* Lookups of this thread are (on) or are no longer (off) for a removal:
 * ns_miss.c note 4. */
void ns_miss_for_removal(bool on);
/* Are this thread's lookups for a removal (ns_miss_for_removal)? */
bool ns_miss_removing(void);
/* Lock held, in the attempt after ns_miss_resolve: the store's answer for
 * name in parent that a lookup for a removal read and left uncached (a
 * non-directory with one link, its inode not cached), or NULL. Once. */
const struct ns_miss_ans *ns_miss_take(uint64_t parent, const char *name, size_t len);
/* Lock held: name in parent is a non-directory named ino that a removal's
 * store read this thread made read ahead (ns_miss.c note 5), and no commit
 * was published since: true with *ino and *dtype. The cache's word comes
 * first (a cached entry, a complete parent): the caller checks it. */
bool ns_miss_ahead(struct ns *ns, uint64_t parent, const char *name, size_t len, uint64_t *ino,
                   uint8_t *dtype);
/* walk.c: cache an inode record read from the store, as a reload.
 * -EAGAIN (and ns->drop_wait set) when its inode lost a link not yet
 * published (ns.c note 7): do_reclaim_retry commits, then retries. */
int ns_cache_inode_rec(struct ns *ns, const struct mc_inode_rec *rec, const char *target,
                       size_t tlen, mc_off_t *out);

/* listing.c */
void ns_listing_free(struct ns *ns);

/* dirty.c: journaling and dirty bits (ns.c notes 2 and 3). */
/* The journal bound, at the start of a mutation, lock held: 0 when there is
 * room, else wait (the lock released) up to jwait_ms for a commit to make
 * some; -ENOSPC when none did -- and at once, without waiting, until the
 * next publish. Kicks the committer half way. */
int ns_journal_room(struct ns *ns);
/* Set up (from o, which may be NULL: no bound) and tear down the bound. */
void ns_journal_init(struct ns *ns, const struct ns_opts *o);
void ns_journal_fini(struct ns *ns);
int64_t now_ns(void);
/* Abort on a failure that would lose acknowledged changes (journal OOM). */
void must(int rc, const char *what);
void dentry_dirty(struct ns *ns, mc_off_t d);
void inode_dirty(struct ns *ns, mc_off_t off);
/* Journal the current state of a cached inode and mark it dirty. */
void inode_changed(struct ns *ns, mc_off_t off);
/* Journal the deletion of an inode that lost its last link. */
void inode_gone(struct ns *ns, mc_off_t off);
/* Journal that inode ino, which the cache does not hold, lost a link at
 * now (INODE_UNLINK), and note it until its batch is published. */
void inode_unlinked(struct ns *ns, uint64_t ino, int64_t now);
/* An inode record read from the store, to be cached: its link count less
 * the links it lost uncached in the running batch, which the store does
 * not have (ns.c note 7): 1 when so (cached, it is dirty in the running
 * batch, newer than the store), 0 when unchanged. -EAGAIN when the batch
 * being committed lost one (the store may or may not have applied it
 * yet): load it after the publish. -EIO when the store has fewer links
 * than were dropped. */
int inode_unlink_adjust(const struct ns *ns, struct mc_inode_rec *rec);

/* ns.c: building blocks of the operations. */
void inode_maybe_free(struct ns *ns, mc_off_t off);
/* dir gained/lost entries and links; mtime and ctime become now. */
void dir_entries(struct ns *ns, mc_off_t dir, int delta, int nlink_delta, int64_t now);
/* Between these two (one attempt, the lock held throughout), and in a
 * run of operations under one lock (ns_hold_begin to ns_hold_end),
 * dir_entries changes the directory in the segment as always but
 * journals it only when another directory's turn comes, when it is
 * removed (dir_owed_flush), at dir_defer_end or ns_hold_end, and before
 * ns_swap hands the batch out: one record for a run of creates or
 * removals instead of a rewrite per name. */
void dir_defer_begin(struct ns *ns);
void dir_defer_end(struct ns *ns);
/* Journal the directory whose record is owed, if any. */
void dir_owed_flush(struct ns *ns);
void name_set(struct ns *ns, mc_off_t dir, mc_off_t d, mc_off_t off);
void name_record(struct ns *ns, mc_off_t dir, mc_off_t d, const struct mc_inode *i,
                 uint8_t dtype);
void name_drop(struct ns *ns, mc_off_t dir, mc_off_t d);
int name_slot(struct ns *ns, mc_off_t dir, mc_off_t d, const char *name, size_t len,
              mc_off_t *out);
/* may_delete(): may c remove victim from dir (as a directory if isdir)? */
int delete_checks(const struct cred *c, struct shm *s, mc_off_t dir, mc_off_t victim, bool isdir);
/* Remove name d (naming victim) from dir; the checks are done. */
void remove_entry(struct ns *ns, mc_off_t dir, mc_off_t d, mc_off_t victim);
/* Remove name (not cached) of dir (not complete), naming inode ino, a
 * non-directory the cache does not hold, without loading it (ns.c note
 * 7): may_delete's checks, then DENTRY_DEL, INODE_DEL when rec (the
 * inode as read with the name, or NULL) says one link, else INODE_UNLINK,
 * and a dirty negative entry (the store has the name until the commit).
 * rec is needed when sticky_needs_victim. -EACCES, -EPERM (the checks),
 * -ENOSPC (no room for the negative entry): nothing changed. */
int remove_uncached(struct ns *ns, const struct cred *c, mc_off_t dir, const char *name,
                    size_t len, uint64_t ino, const struct mc_inode_rec *rec);
/* Does the sticky rule need the victim's owner for c to remove from dir? */
bool sticky_needs_victim(const struct cred *c, const struct mc_inode *dir);
/* victim lost one of its names (a directory its only one): journal it and,
 * when that was its last link, its deletion, pruning a directory's cached
 * children at once (ns.c note 5). */
void victim_drop_link(struct ns *ns, mc_off_t victim, bool isdir, int64_t now);
void set_size(struct ns *ns, mc_off_t off, uint64_t size);

/* Change fields of a cached inode inside its seq; `ie_` names the inode. */
#define INODE_EDIT(ns, off, body)                                   \
	do {                                                        \
		struct mc_inode *ie_ = inode_at((ns)->shm, (off));   \
		shm_write_begin(&ie_->seq);                         \
		{ body; }                                           \
		shm_write_end(&ie_->seq);                           \
	} while (0)

int permission(const struct cred *c, const struct mc_inode *i, int mask);
/* Create the last component of path as an inode of mode (a symlink's
 * target, a device's rdev given), with mkdir(2)'s checks: mkdir, symlink,
 * mknod. *out (when not NULL) gets its attributes. */
int ns_create_path(struct ns *ns, const struct cred *c, const char *path, size_t len,
                   uint32_t mode, const char *target, size_t target_len, uint64_t rdev,
                   ns_attr *out);
bool in_group(const struct cred *c, uint32_t gid);
/* The sticky-directory rule: may c remove victim from dir? */
bool sticky_denies(const struct cred *c, const struct mc_inode *dir, const struct mc_inode *victim);

#endif
