/* store_impl.h - what store.c (open, meta, reads), store_log.c (the
 * commit: log append, retention, table updates) and store_read.c (reads in
 * one snapshot) share: the environment and the helpers that turn LMDB codes
 * into errnos. Not for other modules. */
#ifndef MC_STORE_IMPL_H
#define MC_STORE_IMPL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mc_shm.h"
#include "store.h"
#include "store_overlay.h"

#define STORE_PAGE             4096ull
#define STORE_DENTRY_VAL_SIZE  9u        /* u64 ino LE, u8 dtype */
#define STORE_DENTRY_KEY_MAX   (8u + MC_NAME_MAX)

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
	uint64_t log_bytes;         /* sum of its values' sizes */
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
	bool readonly;              /* store_opts.existing */
	pthread_rwlock_t ovl_lock;  /* the overlay; before `resize` (store.c note 9) */
	struct store_ovl ovl;       /* changes of the batches not applied */
	bool ovl_broken;            /* the overlay missed a change: reads apply first */
	unsigned fault_n;           /* store_fail_commits: commits left to fail (commit_lock) */
	int fault_err;
};

/* An LMDB code as a negative errno (0 for MDB_SUCCESS). */
int store_errno(int rc);
/* A read-only transaction with `resize` held for reading; 0 or -errno. */
int store_rtxn_begin(struct store *s, MDB_txn **txn);
void store_rtxn_end(struct store *s, MDB_txn *txn);
/* This thread's read transactions begun and not ended (so `resize` is
 * held): a point read inside one must not block on `ovl_lock`
 * (store_point_begin). */
extern _Thread_local unsigned store_rtxn_depth;
/* LMDB codes. */
int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *key, const void *val, size_t len);
int store_put_inode_rec(MDB_txn *txn, MDB_dbi dbi, const struct mc_inode_rec *rec,
                        const char *target, size_t target_len);
/* The dentries key of name (namelen bytes) in parent; 0, -EINVAL for an
 * empty name, -ENAMETOOLONG above MC_NAME_MAX. */
int store_dentry_key(uint8_t key[STORE_DENTRY_KEY_MAX], uint64_t parent, const char *name,
                     size_t namelen);
/* Call fn for each entry of directory `parent` in txn's dentries table, in
 * name order, from the first name after `after` (after_len bytes, 0: from
 * the start). fn's nonzero return stops the scan and is returned; -EINVAL
 * when after_len is above MC_NAME_MAX, -EIO for a malformed entry. */
int store_dentries_scan(MDB_txn *txn, MDB_dbi dentries, uint64_t parent, const char *after,
                        size_t after_len, store_dirent_fn fn, void *arg);
/* Begin a read-only transaction in which every committed change is in the
 * tables: apply the batches not applied first (store_log.c note 5). Not
 * with `resize` held. 0 or -errno; store_rtxn_end ends it. */
int store_rtxn_begin_applied(struct store *s, MDB_txn **txn);
/* Apply the batches of `log` after applied_seq up to last_seq to the
 * tables (store_open's recovery, and the reads above); 0 or -errno. */
int store_apply_now(struct store *s);
/* Take `ovl_lock` for reading for a point read (store.c note 9), after
 * applying everything when the overlay is broken; 0 (then
 * store_point_end) or -errno. */
int store_point_begin(struct store *s);
void store_point_end(struct store *s);
/* The records of a log value (store_log.c note 1); false if malformed. */
bool store_log_value(const MDB_val *v, const uint8_t **recs, size_t *len);
/* The log's last batch (*seq, 0 when the log is empty) and the next_ino
 * its header holds (0: a header without it); 0 or -errno. */
int store_log_last(MDB_txn *txn, MDB_dbi log, uint64_t *seq, uint64_t *next_ino);
/* Load the batches after applied_seq into the overlay, from the log (a
 * read-only store, or one whose map is too full to apply them); 0 or
 * -errno. */
int store_ovl_load(struct store *s);
/* Sum the log's value sizes into s->log_bytes (at open); 0 or -errno. */
int store_log_measure(struct store *s);

#endif
