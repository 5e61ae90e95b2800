/* store_impl.h - what store.c (open, meta, reads), store_log.c (the
 * commit: log append, retention, when the tables follow), store_apply.c
 * (the table updates), store_ovladd.c (the overlay adder thread) and
 * store_read.c (reads in one snapshot) share: the
 * environment and the helpers that turn LMDB codes into errnos. Not for
 * other modules. */
#ifndef MC_STORE_IMPL_H
#define MC_STORE_IMPL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "mc_shm.h"
#include "store.h"
#include "store_overlay.h"
#include "store_read.h"

#define STORE_PAGE             4096ull
#define STORE_DENTRY_VAL_SIZE  9u        /* u64 ino LE, u8 dtype */
#define STORE_DENTRY_KEY_MAX   (8u + MC_NAME_MAX)

/* The overlay adder's job (store_ovladd.c); mu guards all but th,
 * started and failed, which are the committer's (commit_lock). */
struct store_ovladd {
	pthread_t th;
	bool started, failed;
	pthread_mutex_t mu;
	pthread_cond_t cv, done_cv;
	const struct journal_batch *b;
	int state;
	int err;
	bool stop;
};

struct store {
	MDB_env *env;
	MDB_dbi inodes, dentries, extents, log, meta;
	int lockfd;
	uint64_t map_size;          /* current map size; changed under resize (write) */
	uint64_t map_size_max;
	/* Retention of the commit log (store_opts); 0: no bound of that kind. */
	uint64_t log_retention;     /* batches */
	uint64_t log_max_bytes;
	uint64_t log_max_age_ns;
	/* What the log holds (commit_lock; store_log_measure at open). */
	uint64_t log_bytes;         /* sum of its values' sizes, every chunk */
	uint64_t log_trimmed;       /* batches dropped by retention since open */
	pthread_rwlock_t resize;    /* readers: any txn; writer: mdb_env_set_mapsize */
	pthread_mutex_t commit_lock; /* one store_commit at a time */
	/* The log and the tables (store_log.c note 5): batches up to
	 * applied_seq are in the tables, up to last_seq in the log. Changed
	 * under commit_lock and, with the overlay, under ovl_lock (write). */
	uint64_t applied_seq;
	uint64_t last_seq;
	uint64_t next_ino;          /* after batch last_seq */
	uint64_t pending_bytes;     /* record bytes of the batches not applied */
	uint64_t pending_since_ns;  /* about when the oldest of them was committed */
	uint64_t apply_batches;     /* store_opts, defaults filled in */
	uint64_t apply_bytes;
	atomic_bool unapplied;      /* applied_seq < last_seq */
	atomic_bool apply_owed;     /* a waited-for commit put off an apply (store_log.c note 8) */
	atomic_bool room_owed;      /* room put off (store_prealloc.c note 4) */
	bool readonly;              /* store_opts.existing */
	pthread_rwlock_t ovl_lock;  /* the overlay; before `resize` (store.c note 9) */
	struct store_ovl ovl;       /* changes of the batches not applied */
	bool ovl_broken;            /* the overlay missed a change: reads apply first */
	/* Which tables the overlay goes with (store_read.c note 1), both LMDB
	 * transaction ids: the commit that last applied the log (0: none
	 * since open; under ovl_lock), and one that applies it and may be
	 * visible already while the overlay is not emptied yet (0: none;
	 * written by the committer only, read under ovl_lock). */
	uint64_t tables_txnid;
	_Atomic uint64_t apply_txnid;
	/* Point reads' read transactions, one per thread, reset between
	 * reads and renewed (store_read.c note 5): the key's value is the
	 * thread's; `readers` lists them all (readers_mu) for store_close. */
	pthread_key_t reader_key;
	bool reader_key_ok;
	pthread_mutex_t readers_mu;
	LIST_HEAD(, store_reader) readers;
	struct store_ovladd oa;     /* adds a batch to the overlay during its fsync */
	unsigned fault_n;           /* store_fail_commits: commits left to fail (commit_lock) */
	int fault_err;
	unsigned sync_fault_n;      /* store_fail_syncs (commit_lock) */
	int sync_fault_err;
};

/* An LMDB code as a negative errno (0 for MDB_SUCCESS). */
int store_errno(int rc);
/* An `inodes` value (len bytes at val) that must hold inode ino: 0 with
 * rec, *tlen and, when target is not NULL, the symlink target copied to
 * target (MC_SYMLINK_MAX bytes); -EIO when malformed. */
int store_inode_value(const void *val, size_t len, uint64_t ino, struct mc_inode_rec *rec,
                      char *target, size_t *tlen);
/* A read-only transaction with `resize` held for reading; 0 or -errno. */
int store_rtxn_begin(struct store *s, MDB_txn **txn);
void store_rtxn_end(struct store *s, MDB_txn *txn);
/* LMDB codes. */
int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *key, const void *val, size_t len);
/* rec (and a symlink's target) under its key in `inodes`: through txn
 * (store_put_inode_rec, a descent from the root) or through a cursor of
 * `inodes` (store_put_inode_cur, which looks at the page the cursor stands
 * on first: store_apply.c note 1). */
int store_put_inode_rec(MDB_txn *txn, MDB_dbi dbi, const struct mc_inode_rec *rec,
                        const char *target, size_t target_len);
int store_put_inode_cur(MDB_cursor *cur, const struct mc_inode_rec *rec, const char *target,
                        size_t target_len);
/* The dentries key of name (namelen bytes) in parent; 0, -EINVAL for an
 * empty name, -ENAMETOOLONG above MC_NAME_MAX. */
int store_dentry_key(uint8_t key[STORE_DENTRY_KEY_MAX], uint64_t parent, const char *name,
                     size_t namelen);
/* What a directory scan gives of each entry's inode record. */
enum store_scan_recs {
	SCAN_NO_RECS,            /* none */
	SCAN_PLAIN_RECS,         /* the record, not of a symlink (store_scan_dir_attrs) */
	SCAN_ALL_RECS,           /* the record with a symlink's target (store_snap_scan_dir) */
};
/* Call fn for each entry of directory parent after the name `after`
 * (after_len bytes; 0: from the first) in name order: the tables merged
 * with the overlay, read in chunks with `ovl_lock` held for reading and
 * handed to fn without it (store_read.c note 1), never applying the log
 * unless the overlay is broken. held NULL: the scan begins and ends a
 * transaction of its own (*txn is not used); else *txn is a snapshot's,
 * live while *held, which the scan may renew between chunks and may
 * leave ended on failure (*held false then). fn's nonzero return stops
 * the scan and is returned; -EINVAL (after_len above MC_NAME_MAX), -EIO
 * (a malformed entry; with SCAN_ALL_RECS, a malformed inode record),
 * -ENOMEM, -EAGAIN. */
int store_scan_merged(struct store *s, MDB_txn **txn, bool *held, uint64_t parent,
                      const char *after, size_t after_len, enum store_scan_recs recs,
                      store_snap_fn fn, void *arg);
/* Begin a read-only transaction in which every committed change is in the
 * tables: apply the batches not applied first (store_log.c note 5). Not
 * with `resize` held. 0 or -errno; store_rtxn_end ends it. */
int store_rtxn_begin_applied(struct store *s, MDB_txn **txn);
/* Apply the batches of `log` after applied_seq up to last_seq to the
 * tables (store_open's recovery, and the reads above); 0 or -errno. */
int store_apply_now(struct store *s);
/* The overlay that goes with the tables of txn, which began with
 * `ovl_lock` held for reading (store_read.c note 1): 1 the overlay, 0 none
 * (txn's tables hold every committed batch), -ESTALE (txn is older than the
 * tables the overlay goes with: begin it again). */
int store_ovl_view(struct store *s, MDB_txn *txn);
/* A read-only transaction for a point read, with `resize` held for
 * reading: the calling thread's own, renewed (store_read.c note 5), or a
 * new one when that is in use or cannot be had. *rd is what
 * store_point_txn_end needs. 0 or -errno. */
struct store_reader;
int store_point_txn(struct store *s, MDB_txn **txn, struct store_reader **rd);
void store_point_txn_end(struct store *s, MDB_txn *txn, struct store_reader *rd);
/* Set up (at store_open; 0 or -errno) and end (store_close: every
 * thread's transaction is aborted) the per-thread readers. */
int store_readers_init(struct store *s);
void store_readers_fini(struct store *s);
/* Take `ovl_lock` for reading for a point read (store.c note 9), after
 * applying everything when the overlay is broken; 0 (then
 * store_point_end) or -errno. */
int store_point_begin(struct store *s);
void store_point_end(struct store *s);
/* The log's format (store_log.c note 1). */
#define LOG_MAGIC   0xC1u
#define LOG_VERSION 2u
#define LOG_HDR     24u
#define LOG_HDR_V1  16u
#define LOG_KEY     12u         /* be64 seq, be32 chunk; 8: a batch whole */

/* The commit time (time_ns may be NULL) and records of a batch's value,
 * whole (store_log.c note 1); false if malformed. */
bool store_log_value(const MDB_val *v, uint64_t *time_ns, const uint8_t **recs, size_t *len);
/* A log key's batch and chunk (0 for a key of a batch whole); false when
 * it is neither form. */
bool store_log_key(const MDB_val *k, uint64_t *seq, uint32_t *chunk);
void store_log_key_put(uint8_t key[LOG_KEY], uint64_t seq, uint32_t chunk);
/* One batch read back from the log: its value whole, in buf when it came
 * in more than one chunk (buf is kept from batch to batch: zero it
 * first, store_log_batch_free at the end). */
struct store_log_batch {
	uint64_t seq;
	MDB_val v;
	uint32_t chunks;
	uint8_t *buf;
	size_t cap;
};
/* Gather the batch whose first entry cur stands on (k, v) into lb, and
 * leave cur, k and v on the entry after it (*rc: that step's LMDB code,
 * MDB_NOTFOUND past the last). 0, -EIO (a key of neither form, a batch
 * that does not start at chunk 0 or misses one) or -ENOMEM. */
int store_log_gather(MDB_cursor *cur, MDB_val *k, MDB_val *v, int *rc,
                     struct store_log_batch *lb);
void store_log_batch_free(struct store_log_batch *lb);
/* The log's first and last batch (0, 0: empty); 0 or -errno. */
int store_log_span(MDB_txn *txn, MDB_dbi log, uint64_t *first, uint64_t *last);
/* The log's last batch (*seq, 0 when the log is empty) and the next_ino
 * its header holds (0: a header without it); 0 or -errno. */
int store_log_last(MDB_txn *txn, MDB_dbi log, uint64_t *seq, uint64_t *next_ino);
/* Load the batches after applied_seq into the overlay, from the log (a
 * read-only store, or one whose map is too full to apply them); 0 or
 * -errno. */
int store_ovl_load(struct store *s);
/* store_apply.c, in a write transaction, commit_lock held (store_log.c
 * note 5). The batches of `log` from..upto (inclusive), in order: an LMDB
 * code; a batch whose records do not decode sets *derr (-EPROTO, -EIO)
 * and returns MDB_CORRUPTED, as does a batch missing from the log (or one
 * of its chunks), and *derr -ENOMEM says that gathering its chunks
 * failed. The overlay, each key's newest state once, in key order: an
 * LMDB code (ENOMEM too). Batch b's records, in order: as the first. */
int store_apply_log(struct store *s, MDB_txn *txn, uint64_t from, uint64_t upto, int *derr);
int store_apply_ovl(struct store *s, MDB_txn *txn);
int store_apply_batch(struct store *s, MDB_txn *txn, const struct journal_batch *b, int *derr);
/* store_ovladd.c, commit_lock held. Hand b's overlay add to the adder
 * thread (starting it the first time): false when there is none (add in
 * place). Collect it once the commit's transaction ended: *added true and
 * the add's result (0 or -ENOMEM; the caller breaks the overlay on
 * failure) when the thread did it, else *added false (withdrawn: add in
 * place). After a failed
 * commit whose batch was added, store_ovladd_failed (without `resize`)
 * breaks the overlay (store_ovladd.c note 1). Stop the thread
 * (store_close). */
bool store_ovladd_post(struct store *s, const struct journal_batch *b);
int store_ovladd_collect(struct store *s, bool *added);
void store_ovladd_failed(struct store *s);
void store_ovladd_stop(struct store *s);
/* Wait until the thread has done the posted job (store_fail_syncs). */
void store_ovladd_wait(struct store *s);
/* Sum the log's value sizes into s->log_bytes (at open); 0 or -errno. */
int store_log_measure(struct store *s);

#endif
