/* store_impl.h - what store.c (open, meta, reads), store_log.c (the
 * commit: log append, retention, table updates) and store_read.c (reads in
 * one snapshot) share: the environment and the helpers that turn LMDB codes
 * into errnos. Not for other modules. */
#ifndef MC_STORE_IMPL_H
#define MC_STORE_IMPL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>

#include "mc_shm.h"
#include "store.h"

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
	unsigned fault_n;           /* store_fail_commits: commits left to fail (commit_lock) */
	int fault_err;
};

/* An LMDB code as a negative errno (0 for MDB_SUCCESS). */
int store_errno(int rc);
/* A read-only transaction with `resize` held for reading; 0 or -errno. */
int store_rtxn_begin(struct store *s, MDB_txn **txn);
void store_rtxn_end(struct store *s, MDB_txn *txn);
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
/* Sum the log's value sizes into s->log_bytes (at open); 0 or -errno. */
int store_log_measure(struct store *s);

#endif
