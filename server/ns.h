/* ns.h - the namespace: POSIX operations on the cached tree, as Linux does
 * them on tmpfs (errno values and their order included), with every change
 * journaled for the committer.
 *
 * Paths are absolute byte strings of at most 4096 bytes with no NUL; a
 * relative path is refused with -EINVAL (there is no working directory).
 * Every function takes the namespace lock itself, returns 0 or a negative
 * errno, leaves the namespace unchanged on failure and sets out-parameters
 * only on success. -ENOSPC: the shared-memory segment stayed full after
 * reclaim (evicting clean entries, then forcing a commit; shrink.h) --
 * in practice a mutation whose entries are all pinned (uncommitted, held
 * open, or with cached children) -- or the journal is full (a mutation
 * found the journal bound of ns_opts reached and no commit made room
 * within journal_wait_ms); -EIO: the store failed or disagrees with
 * itself; -EAGAIN: an inode to load lost a link, by the removal of a name
 * the cache did not hold, in the batch being committed, and no commit was
 * published within the forced-commit wait (ns.c note 7).
 *
 * Journal bound: every mutation (mkdir, symlink, open with O_CREAT or
 * O_TRUNC, link, unlink, rmdir, rename, chmod, chown, utimens, truncate,
 * rmtree) first checks the uncommitted journal against the bound; past it,
 * it waits with the lock released, then fails with -ENOSPC, changing
 * nothing. After such a timed-out wait, mutations fail at once (no wait)
 * until a commit is published, so a batch of mutations or a shutdown waits
 * once, not once per mutation. Half way to the bound, it asks the committer to commit now
 * (ns_set_kick). An rmtree is checked once, at its start, and may take the
 * journal past the bound by what it removes.
 */
#ifndef MC_NS_H
#define MC_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "journal.h"
#include "mc_shm.h"
#include "shrink.h"

#define NS_NEG_DIR_MAX 256u

struct ns;
struct shm;
struct store;
struct cred;

struct ns_opts {
	uint64_t neg_max;          /* cached negative dentries at most; 0: 1/8 of the dentry capacity */
	uint32_t neg_dir_max;      /* ... and per directory; 0: NS_NEG_DIR_MAX */
	unsigned cache_high_pct;   /* shrinker watermarks, percent of the segment; 0: defaults */
	unsigned cache_low_pct;
	/* The journal bound: uncommitted records (the running batch plus the
	 * one being committed) and their encoded bytes; 0: no bound. */
	uint64_t journal_max_records;
	uint64_t journal_max_bytes;
	unsigned journal_wait_ms;  /* how long a mutation waits for room */
};

/* Bring up the namespace over an empty segment and an open store: the
 * inode counter and batch numbers continue from the store's meta, the root
 * inode is cached and published in the segment header. */
int ns_new(struct shm *shm, struct store *st, const struct ns_opts *o, struct ns **out);
void ns_free(struct ns *ns);

/* Attributes are returned as persistent inode records (ns times). */
typedef struct mc_inode_rec ns_attr;

int ns_stat(struct ns *ns, const struct cred *c, const char *path, size_t len, bool follow,
            ns_attr *out);
/* A run of operations under one taking of the namespace lock (a batch's
 * creates and removals). Between ns_hold_begin() and ns_hold_end() the
 * calling thread holds the lock, and ns_open(), ns_mkdir(), ns_unlink()
 * and ns_rmdir() do not take it again; no other ns_*() call may be made
 * meanwhile. ns_hold_yield(), between two operations, lets a committer
 * that waits for the lock (ns_swap, ns_publish) go first, as every
 * operation's own locking does. */
void ns_hold_begin(struct ns *ns);
void ns_hold_yield(struct ns *ns);
void ns_hold_end(struct ns *ns);
/* In a hold, before an operation: start loading into the CPU cache the
 * hash bucket the lookup of path's last name will read, when path is in the
 * directory the hold's last walk resolved (walk.c, note 4). A hint, so that
 * a batch's next lookup does not wait for memory: it changes nothing and
 * no answer depends on it. The bucket's address, or NULL when it did not
 * apply. */
const void *ns_hold_prefetch(struct ns *ns, const char *path, size_t len);
int ns_mkdir(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t mode,
             ns_attr *out);
int ns_rmdir(struct ns *ns, const struct cred *c, const char *path, size_t len);
int ns_unlink(struct ns *ns, const struct cred *c, const char *path, size_t len);
/* open(2) semantics for O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY, O_NOFOLLOW and
 * the access mode. With `hold`, the inode stays cached (and usable through
 * its number) until ns_release(), even after its last link is gone. */
int ns_open(struct ns *ns, const struct cred *c, const char *path, size_t len, int flags,
            uint32_t mode, bool hold, ns_attr *out);
/* Drop a hold taken by ns_open(). */
void ns_release(struct ns *ns, uint64_t ino);
int ns_rename(struct ns *ns, const struct cred *c, const char *from, size_t flen,
              const char *to, size_t tlen);
int ns_link(struct ns *ns, const struct cred *c, const char *from, size_t flen,
            const char *to, size_t tlen);
int ns_symlink(struct ns *ns, const struct cred *c, const char *target, size_t target_len,
               const char *path, size_t len);
/* Copies the target into buf (MC_SYMLINK_MAX bytes) and sets *out_len. */
int ns_readlink(struct ns *ns, const struct cred *c, const char *path, size_t len, char *buf,
                size_t *out_len);
int ns_chmod(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t mode);
/* (uint32_t)-1 leaves a field as it is. */
int ns_chown(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t uid,
             uint32_t gid);
/* times[0] atime, times[1] mtime; tv_nsec may be UTIME_NOW or UTIME_OMIT. */
int ns_utimens(struct ns *ns, const struct cred *c, const char *path, size_t len,
               const struct timespec times[2]);
/* ns_chown and ns_utimens (follow false) on a symlink itself, not its
 * target: lchown(2), utimensat(2) with AT_SYMLINK_NOFOLLOW. */
int ns_lchown(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t uid,
              uint32_t gid);
int ns_utimens_at(struct ns *ns, const struct cred *c, const char *path, size_t len,
                  const struct timespec times[2], bool follow);
int ns_truncate(struct ns *ns, const struct cred *c, const char *path, size_t len, int64_t size);

/* Operations on a held inode (an open handle): ns_stat_ino gives -ENOENT
 * and ns_truncate_ino -EBADF when the inode is not cached (not held). */
int ns_stat_ino(struct ns *ns, uint64_t ino, ns_attr *out);
/* writable: the handle was opened for writing (else -EINVAL, as ftruncate). */
int ns_truncate_ino(struct ns *ns, uint64_t ino, bool writable, int64_t size);

/* List a held directory: at most max entries after cookie (0: from the
 * start). fn returns 0 to go on (a negative value stops the listing and is
 * returned). *next is the cookie to pass next time, *eof whether the listing
 * reached the end. A removed directory lists as empty. A directory that fits
 * in the cache is loaded complete and listed in cookie order (the cookies
 * clients list shared memory with); one that does not is read from the
 * store in name order, nothing cached, with cookies that stand for the last
 * name returned (listing.c). -EBADF (not held), -ENOTDIR, -ESTALE (a store
 * cookie too old: LIST_CURSORS newer ones were handed out since), -EIO.
 * A cache cookie of a directory that lost entries to the shrinker and no
 * longer fits starts the listing over from the store (listing.c note 1). */
typedef int (*ns_dirent_fn)(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype);
int ns_readdir(struct ns *ns, const struct cred *c, uint64_t ino, uint64_t cookie, unsigned max,
               ns_dirent_fn fn, void *arg, uint64_t *next, bool *eof);

/* Remove path and everything below it (rm -rf), dropping the lock every
 * batch entries so other clients are served. The caller needs the same
 * permissions as for unlink/rmdir of each entry, and read and search
 * permission on each directory. */
int ns_rmtree(struct ns *ns, const struct cred *c, const char *path, size_t len, unsigned batch);

/* The batch that must become durable for everything acknowledged so far to
 * be durable; 0 when it already is. */
uint64_t ns_pending_seq(struct ns *ns);

/* Committer side. ns_swap hands out the running batch when it holds records
 * (NULL otherwise) and starts an empty one, in O(1) under the lock.
 * ns_publish, after the store committed b, marks what b dirtied clean (under
 * the lock too, O(entries b dirtied): the commit statistics count it with
 * the swap as time writers were blocked), advances committed_seq in the
 * segment header and takes b back for reuse. */
struct journal_batch *ns_swap(struct ns *ns);
void ns_publish(struct ns *ns, struct journal_batch *b);
/* Records in the running batch. */
uint64_t ns_journal_records(struct ns *ns);
/* What is not committed: records and bytes of the running batch and of the
 * batch being committed, and how many of those two batches hold records. */
struct ns_backlog {
	uint64_t records, bytes;
	unsigned batches;
};
void ns_journal_backlog(struct ns *ns, struct ns_backlog *out);
/* The committer's "commit now" (NULL: none), called with the namespace
 * lock held when the journal is half way to its bound; it must not block
 * nor take the namespace lock. */
void ns_set_kick(struct ns *ns, void (*fn)(void *arg), void *arg);
/* The committer's timer (NULL: none): called with the namespace lock held
 * when the running batch receives its first change, so that the interval
 * counts from the oldest uncommitted change and an idle committer sleeps
 * until there is something to commit. Same rules as the kick. */
void ns_set_arm(struct ns *ns, void (*fn)(void *arg), void *arg);

struct ns_counts {
	uint64_t positive, negative, dentries_dirty, dirs_complete;
	uint64_t inodes, inodes_dirty, prunes, pruned;
	uint64_t shm_used, shm_total, alloc_failures;
	uint64_t pages_free, pages_returned; /* shm.c notes 6, 7 */
	uint64_t journal_records, committed_seq;
	uint64_t backlog_records, backlog_bytes;   /* ns_journal_backlog */
	uint64_t full_waits, full_refusals;        /* the journal bound */
	uint64_t full_wait_us;                     /* time spent waiting for room */
	/* Store reads for lookups that missed, made without the lock, and
	 * removals that a removal's read ahead served (ns_miss.c). */
	uint64_t miss_reads, miss_ahead_used;
	/* The cache's bound (shrink.h). */
	struct shrink_stats shrink;
	uint64_t high_bytes, low_bytes;            /* watermarks */
	uint64_t bytes_dentries, bytes_inodes, bytes_dirs, bytes_names, bytes_meta;
};
void ns_get_counts(struct ns *ns, struct ns_counts *out);


/* ---- warming (ns_warm.c) -------------------------------------------------
 * The warmers (warm.c) fill the cache from LMDB snapshots while the server
 * serves. ns_publish takes the commit semaphore (commit_sem.h) for writing
 * and advances the published sequence; a warmer inserts what it read from
 * a snapshot holding the semaphore for reading, and either took the
 * snapshot holding it too, or checks that the published sequence did not
 * move since before the snapshot: no publish falls in between (ns_warm.c
 * invariants). */
struct commit_sem;
struct commit_sem *ns_commit_sem(struct ns *ns);
/* The sequence of the last published commit (the segment's committed_seq,
 * read with acquire): every batch up to it is in a snapshot taken after. */
uint64_t ns_published_seq(struct ns *ns);
/* Called (with the namespace lock held; it must not block nor take that
 * lock) with the inode number of a directory whose miss went to the store.
 * NULL: none. */
void ns_set_miss_hook(struct ns *ns, void (*fn)(void *arg, uint64_t dir_ino), void *arg);

/* One directory entry read from a snapshot, with its inode record. */
struct ns_warm_ent {
	struct mc_inode_rec rec;
	uint64_t ino;
	bool have_rec;            /* false: the snapshot has no inode for it */
	uint8_t dtype;
	uint16_t namelen, tlen;
	char name[MC_NAME_MAX + 1];
	char target[MC_SYMLINK_MAX];
};
/* Before a step that may insert, holding neither the commit semaphore
 * nor the namespace lock: the segment's next pages are faulted in here
 * (shm_populate_ahead), not by the inserts, whose allocations would have
 * the kernel clear pages while the semaphore and the lock are held. */
void ns_warm_prepare(struct ns *ns);
/* A warmer's slots, reserved and filled ahead for its next batch
 * (ns_warm.c note 6); one per warmer thread, which alone uses it. */
struct ns_warm_stage;
#define NS_WARM_MAX 256u          /* entries a stage prepares at once */
struct ns_warm_stage *ns_warm_stage_new(void);
/* Give the stage's reserved slots back (taking the lock): none are left
 * held. holds: does it hold any (no lock needed)? */
void ns_warm_stage_return(struct ns *ns, struct ns_warm_stage *st);
bool ns_warm_stage_holds(const struct ns_warm_stage *st);
/* ns_warm_stage_return, then free it. NULL: nothing. */
void ns_warm_stage_free(struct ns *ns, struct ns_warm_stage *st);
/* Prepare v[0..n) (at most NS_WARM_MAX of them) of directory dir_ino for
 * the ns_warm_dir call that follows, holding neither the commit semaphore
 * nor the namespace lock: reserve a slot per inode and per dentry (one
 * lock hold), write the entries into them, fault in the hash buckets'
 * pages they will be linked into. Without (the segment is full, or use
 * is at the low watermark) ns_warm_dir allocates as it inserts. */
void ns_warm_stage(struct ns *ns, struct ns_warm_stage *st, uint64_t dir_ino,
                   const struct ns_warm_ent *v, size_t n);
/* Fill e with an entry as a snapshot scan gives it (store_snap_fn). */
void ns_warm_ent_set(struct ns_warm_ent *e, const char *name, size_t namelen, uint64_t ino,
                     uint8_t dtype, const struct mc_inode_rec *rec, const char *target,
                     size_t tlen);
struct ns_warm_res {
	size_t processed;         /* entries of v looked at (a prefix of v) */
	uint64_t added;           /* of which were inserted */
	uint64_t lookups;         /* of which were looked up in the cache first */
	uint64_t bytes;           /* segment bytes they took */
	bool complete;            /* the directory is complete now */
};
/* What the readers of a directory left in it at their last call: zero it
 * before the first. They share it when each reads a range of names of its
 * own, in name order across calls, and no two ranges meet (ns_warm.c note
 * 5): a warm item, or the items a large directory was split into. */
#define NS_WARM_FOREIGN 16
struct ns_warm_mark {
	uint64_t dropped;         /* the namespace's dentries dropped so far */
	uint64_t dir;             /* the directory's slot; 0: no mark */
	uint32_t cookie;          /* its next cookie: children linked later have this or more */
	uint32_t nforeign;        /* its children the readers did not insert ... */
	uint64_t foreign[NS_WARM_FOREIGN]; /* ... their names' dcache_hash */
};
/* Insert into the cached directory dir_ino those entries of v[0..n) the
 * cache does not know, never touching a cached name (positive or negative)
 * nor a complete directory. Stops early, between entries, when the
 * committer waits for the commit semaphore or segment use reaches the
 * shrinker's low watermark. at_end: v ends the directory or the reader's
 * range of it; then a directory whose every entry is cached is marked
 * complete. The caller holds the
 * commit semaphore for reading and read v from a snapshot taken after it
 * took it. 0 (see *res), -ENOENT (dir_ino is not a cached directory: the
 * warmer skips it), -ENOSPC (the low watermark is reached or the segment
 * is full; res->processed tells how far it got). mark: the reader's
 * (v follows, in name order, every entry it gave before, and lies outside
 * the ranges of the others that share it). st: the
 * caller's stage, which the entries of v use when ns_warm_stage prepared
 * it for this v last (NULL: none); slots it reserved and v left unused
 * stay in it for the next batch. */
int ns_warm_dir(struct ns *ns, struct ns_warm_stage *st, uint64_t dir_ino,
                const struct ns_warm_ent *v, size_t n, bool at_end, struct ns_warm_mark *mark,
                struct ns_warm_res *res);

/* Why the cache could not be kept for a warm restart (restart.h), or NULL
 * when it can: everything committed, no open handle, no extent state or
 * map, no inode left without a cached name. Call once nothing changes the
 * namespace any more (the server is stopping). */
const char *ns_restart_blocker(struct ns *ns);

#endif
