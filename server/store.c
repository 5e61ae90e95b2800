/* store.c - the durable namespace and commit log on one LMDB environment.
 *
 * NOTES ON THE DESIGN OF THE STORE
 *  1. One store owns its directory: store_open takes flock(LOCK_EX|LOCK_NB)
 *     on DIR/mcached.lock before LMDB touches the environment, and the lock
 *     is held until store_close. So no other process (nor a second
 *     store_open in this one, which LMDB's fcntl locks could not survive)
 *     ever shares the environment, and the map never grows under us.
 *  2. MDB_* codes never leave the store's modules (this file,
 *     store_log.c, store_read.c, store_walk.c, store_extent.c): every LMDB
 *     return value goes through store_errno() before it reaches a caller.
 *  3. Readers run from any thread (MDB_NOTLS), each call in its own
 *     read-only transaction (a point read: its thread's, renewed;
 *     store_read.c note 5), and copy what they return before it ends.
 *  4. The map is only resized with `resize` held for writing; every
 *     transaction (read or write) runs with `resize` held for reading, so
 *     mdb_env_set_mapsize never runs under a live transaction.
 *  5. store_commit is all or nothing: one write transaction carries the log
 *     record, the table updates and meta; any failure aborts it, so a failed
 *     commit leaves the store exactly as it was and may be retried.
 *  6. A failed write keeps its cause: LMDB reports a short write (the file
 *     system ran out of space mid-write) as EIO, so store_commit asks the
 *     file system (store_space_errno) and says -ENOSPC when it is full.
 *  7. Values are little-endian (journal encoding for inodes; meta "format"
 *     u32, "next_ino" u64, "last_seq" u64, "uuid" 16 raw bytes); keys are
 *     big-endian so LMDB order is numeric order.
 *  8. store_opts.existing opens an existing store read-only (mcachectl
 *     fsck --offline): no directory, lock file or LMDB lock file is made,
 *     an empty environment is -EINVAL, and the shared flock keeps a server
 *     from starting on it meanwhile (a running one makes it -EBUSY). Only
 *     reads may follow.
 *  9. The log is written at every commit, the tables in groups
 *     (store_log.c note 5). Point reads (store_get_inode, store_get_dentry,
 *     store_get_entry) hold `ovl_lock` for reading from before they look in
 *     the overlay until their read ends, so an apply cannot empty the
 *     overlay between the look and the read. Directory scans (one-shot
 *     and snapshots) merge the overlay that goes with their transaction's
 *     tables (store_read.c note 1) and never apply; the extents table is
 *     behind only for an inode deleted in a batch not applied (a batch
 *     with extent records is applied at its commit), which
 *     store_scan_extents asks the overlay (ovl_inode_dropped) under
 *     `ovl_lock` as a point read; only the walk begins with nothing left to apply
 *     (store_rtxn_begin_applied). A read-only store cannot apply:
 *     store_open loads the overlay from the log, and every read merges it. Format 1 (no applied_seq: every batch
 *     applied) is upgraded to format 2 in place when opened for writing.
 * 10. store_open replays the batches after applied_seq (recovery after a
 *     crash) before it returns, or, when the map is full at its limit,
 *     loads them into the overlay; store_close applies what is left.
 *
 *   store_open ──► [open] ──store_commit──► [open] (MDB_MAP_FULL: grow, retry)
 *                    └──store_close──► [closed]
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "clock.h"
#include "mc_shm.h"
#include "store.h"
#include "store_extent.h"
#include "store_impl.h"
#include "store_walk.h"

#define STORE_MAP_DEFAULT      (256ull << 20)
#define STORE_MAP_MAX_DEFAULT  (64ull << 30)
#define STORE_MAX_READERS      512u
#define STORE_APPLY_BATCHES    32u
#define STORE_APPLY_BYTES      (1ull << 20)

int store_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
		return -ENOSPC;
	case MDB_READERS_FULL:
		return -EAGAIN;
	case MDB_VERSION_MISMATCH:
	case MDB_INVALID:
	case MDB_INCOMPATIBLE:
	case MDB_BAD_VALSIZE:
	case MDB_BAD_DBI:
	case MDB_BAD_RSLOT:
		return -EINVAL;
	case MDB_CORRUPTED:
	case MDB_PANIC:
	case MDB_PAGE_NOTFOUND:
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

static uint64_t round_page(uint64_t v)
{
	return (v + STORE_PAGE - 1) & ~(STORE_PAGE - 1);
}

/* mkdir -p with mode 0700 for every directory created. */
static int store_mkdirs(const char *dir)
{
	size_t n = strlen(dir);
	if (n == 0)
		return -EINVAL;
	char *p = strdup(dir);
	if (!p)
		return -ENOMEM;
	int err = 0;
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			err = -errno;
			goto out;
		}
		p[i] = c;
	}
	struct stat st;
	if (stat(dir, &st) < 0)
		err = -errno;
	else if (!S_ISDIR(st.st_mode))
		err = -ENOTDIR;
out:
	free(p);
	return err;
}

/* ---- read transactions ------------------------------------------------ */

int store_rtxn_begin(struct store *s, MDB_txn **txn)
{
	pthread_rwlock_rdlock(&s->resize);
	int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
	if (rc) {
		pthread_rwlock_unlock(&s->resize);
		return store_errno(rc);
	}
	return 0;
}

void store_rtxn_end(struct store *s, MDB_txn *txn)
{
	mdb_txn_abort(txn);
	pthread_rwlock_unlock(&s->resize);
}

/* ---- meta ------------------------------------------------------------- */

static int meta_get(MDB_txn *txn, MDB_dbi dbi, const char *key, void *out, size_t len)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	int rc = mdb_get(txn, dbi, &k, &v);
	if (rc)
		return store_errno(rc);
	if (v.mv_size != len)
		return -EINVAL;
	memcpy(out, v.mv_data, len);
	return 0;
}

int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *key, const void *val, size_t len)
{
	MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };
	return mdb_put(txn, dbi, &k, &v, 0);
}

/* meta, with last_seq and next_ino from the log's last batch when it is
 * newer (store_log.c note 5). */
static int store_read_meta(MDB_txn *txn, MDB_dbi dbi, MDB_dbi log, struct store_meta *out)
{
	uint8_t f[4] = {0}, ni[8] = {0}, ls[8] = {0}, as[8] = {0};
	struct store_meta m;
	int err = meta_get(txn, dbi, "format", f, 4);
	if (err == 0)
		err = meta_get(txn, dbi, "next_ino", ni, 8);
	if (err == 0)
		err = meta_get(txn, dbi, "last_seq", ls, 8);
	if (err == 0)
		err = meta_get(txn, dbi, "uuid", m.uuid, 16);
	if (err == -ENOENT)
		err = -EINVAL;
	if (err)
		return err;
	m.format = get_le32(f);
	m.next_ino = get_le64(ni);
	m.last_seq = get_le64(ls);
	m.applied_seq = m.last_seq;             /* format 1: every batch applied */
	if (m.format >= 2) {
		err = meta_get(txn, dbi, "applied_seq", as, 8);
		if (err)
			return err == -ENOENT ? -EINVAL : err;
		m.applied_seq = get_le64(as);
		if (m.applied_seq > m.last_seq)
			return -EINVAL;
	}
	uint64_t seq, ni2;
	err = store_log_last(txn, log, &seq, &ni2);
	if (err)
		return err;
	/* A header without next_ino was written with meta in the same
	 * transaction (format 1): meta says it all then. */
	if (seq > m.last_seq && ni2) {
		if (ni2 < m.next_ino)
			return -EINVAL;
		m.last_seq = seq;
		m.next_ino = ni2;
	}
	*out = m;
	return 0;
}

/* ---- open ------------------------------------------------------------- */

/* Write meta and the root inode into a new environment. */
static int store_init(struct store *s, MDB_txn *txn, const struct store_opts *o)
{
	uint8_t f[4], ni[8], ls[8], uuid[16];
	size_t got = 0;
	while (got < sizeof(uuid)) {
		ssize_t r = getrandom(uuid + got, sizeof(uuid) - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);   /* RFC 4122 version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	put_le32(f, STORE_FORMAT);
	put_le64(ni, 2);
	put_le64(ls, 0);
	s->next_ino = 2;

	int64_t now = (int64_t)clock_ns(CLOCK_REALTIME);
	struct mc_inode_rec root = {
		.ino = 1,
		.mode = S_IFDIR | (o->root_mode & 07777),
		.nlink = 2,
		.uid = o->root_uid,
		.gid = o->root_gid,
		.size = 0,
		.atime_ns = now, .mtime_ns = now, .ctime_ns = now,
	};
	int rc = meta_put(txn, s->meta, "format", f, 4);
	if (!rc)
		rc = meta_put(txn, s->meta, "next_ino", ni, 8);
	if (!rc)
		rc = meta_put(txn, s->meta, "last_seq", ls, 8);
	if (!rc)
		rc = meta_put(txn, s->meta, "applied_seq", ls, 8);
	if (!rc)
		rc = meta_put(txn, s->meta, "uuid", uuid, 16);
	if (!rc)
		rc = store_put_inode_rec(txn, s->inodes, &root, NULL, 0);
	return store_errno(rc);
}

/* Open the named databases, creating and initialising them in a new
 * environment, and check meta in an existing one. */
static int store_setup(struct store *s, const struct store_opts *o)
{
	MDB_txn *txn = NULL;
	MDB_dbi main_dbi;
	MDB_stat st;
	int err, rc = mdb_txn_begin(s->env, NULL, o->existing ? MDB_RDONLY : 0, &txn);
	if (rc)
		return store_errno(rc);
	rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
	if (!rc)
		rc = mdb_stat(txn, main_dbi, &st);
	if (rc)
		goto fail_mdb;

	if (st.ms_entries == 0 && o->existing) {
		err = -EINVAL;                  /* nothing here: not ours to set up */
		goto fail;
	}
	if (st.ms_entries == 0) {
		unsigned fl = MDB_CREATE;
		rc = mdb_dbi_open(txn, "inodes", fl, &s->inodes);
		if (!rc) rc = mdb_dbi_open(txn, "dentries", fl, &s->dentries);
		if (!rc) rc = mdb_dbi_open(txn, "extents", fl, &s->extents);
		if (!rc) rc = mdb_dbi_open(txn, "log", fl, &s->log);
		if (!rc) rc = mdb_dbi_open(txn, "meta", fl, &s->meta);
		if (rc)
			goto fail_mdb;
		err = store_init(s, txn, o);
		if (err)
			goto fail;
	} else {
		struct store_meta m;
		rc = mdb_dbi_open(txn, "meta", 0, &s->meta);
		if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) {
			err = -EINVAL;
			goto fail;
		}
		if (rc)
			goto fail_mdb;
		rc = mdb_dbi_open(txn, "inodes", 0, &s->inodes);
		if (!rc) rc = mdb_dbi_open(txn, "dentries", 0, &s->dentries);
		if (!rc) rc = mdb_dbi_open(txn, "extents", 0, &s->extents);
		if (!rc) rc = mdb_dbi_open(txn, "log", 0, &s->log);
		if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) {
			err = -EINVAL;
			goto fail;
		}
		if (rc)
			goto fail_mdb;
		err = store_read_meta(txn, s->meta, s->log, &m);
		if (err)
			goto fail;
		if (m.format > STORE_FORMAT) {
			err = -EPROTONOSUPPORT;
			goto fail;
		}
		if (m.format == 0 || m.next_ino < 2) {
			err = -EINVAL;
			goto fail;
		}
		if (m.format < STORE_FORMAT && !o->existing) {
			uint8_t f[4], as[8];    /* note 9: format 1 had every batch applied */
			put_le32(f, STORE_FORMAT);
			put_le64(as, m.applied_seq);
			rc = meta_put(txn, s->meta, "applied_seq", as, 8);
			if (!rc)
				rc = meta_put(txn, s->meta, "format", f, 4);
			if (rc)
				goto fail_mdb;
		}
		s->applied_seq = m.applied_seq;
		s->last_seq = m.last_seq;
		s->next_ino = m.next_ino;
	}
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc)
		goto fail_mdb;
	return 0;

fail_mdb:
	err = store_errno(rc);
fail:
	if (txn)
		mdb_txn_abort(txn);
	return err;
}

int store_open(const char *dir, const struct store_opts *opts, struct store **out)
{
	struct store_opts o = {0};
	if (opts)
		o = *opts;
	if (!dir)
		return -EINVAL;

	struct store *s = calloc(1, sizeof(*s));
	char *lockpath = NULL;
	int err, rc;
	if (!s)
		return -ENOMEM;
	s->lockfd = -1;
	pthread_rwlock_init(&s->resize, NULL);
	pthread_rwlock_init(&s->ovl_lock, NULL);
	pthread_mutex_init(&s->commit_lock, NULL);
	if (store_readers_init(s) < 0) {
		pthread_mutex_destroy(&s->commit_lock);
		pthread_rwlock_destroy(&s->ovl_lock);
		pthread_rwlock_destroy(&s->resize);
		free(s);
		return -ENOMEM;
	}
	s->readonly = o.existing;
	s->apply_batches = o.apply_batches ? o.apply_batches : STORE_APPLY_BATCHES;
	s->apply_bytes = o.apply_bytes ? o.apply_bytes : STORE_APPLY_BYTES;

	s->map_size = round_page(o.map_size ? o.map_size : STORE_MAP_DEFAULT);
	s->map_size_max = (o.map_size_max ? o.map_size_max : STORE_MAP_MAX_DEFAULT) & ~(STORE_PAGE - 1);
	if (s->map_size_max < s->map_size)
		s->map_size_max = s->map_size;
	s->log_retention = o.log_retention;
	s->log_max_bytes = o.log_max_bytes;
	s->log_max_age_ns = o.log_max_age_s * 1000000000ull;

	err = o.existing ? 0 : store_mkdirs(dir);
	if (err)
		goto fail;
	if (asprintf(&lockpath, "%s/mcached.lock", dir) < 0) {
		lockpath = NULL;
		err = -ENOMEM;
		goto fail;
	}
	/* Read-only (existing, note 8): a shared lock on the lock file when
	 * there is one, so that no server starts meanwhile; none when a
	 * server never ran here (a copy), and nothing created either way. */
	s->lockfd = o.existing ? open(lockpath, O_RDONLY | O_CLOEXEC)
	                       : open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lockfd < 0 && !(o.existing && errno == ENOENT)) {
		err = -errno;
		goto fail;
	}
	if (s->lockfd >= 0 && flock(s->lockfd, (o.existing ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}

	rc = mdb_env_create(&s->env);
	if (!rc) rc = mdb_env_set_maxdbs(s->env, 5);
	if (!rc) rc = mdb_env_set_maxreaders(s->env, STORE_MAX_READERS);
	if (!rc) rc = mdb_env_set_mapsize(s->env, (size_t)s->map_size);
	/* Read-only: nothing written, not even LMDB's lock file (no writer
	 * can start while the shared lock above is held). */
	if (!rc) rc = mdb_env_open(s->env, dir,
	                           MDB_NOTLS | (o.existing ? MDB_RDONLY | MDB_NOLOCK : 0), 0600);
	if (rc) {
		err = store_errno(rc);
		goto fail;
	}
	/* An existing environment may be larger than asked: LMDB keeps its size. */
	MDB_envinfo ei;
	if (mdb_env_info(s->env, &ei) == 0 && ei.me_mapsize > s->map_size)
		s->map_size = ei.me_mapsize;
	if (s->map_size_max < s->map_size)
		s->map_size_max = s->map_size;

	err = store_setup(s, &o);
	if (!err)
		err = store_log_measure(s);
	if (!err && s->applied_seq < s->last_seq) {
		atomic_store(&s->unapplied, true);
		/* Replayed from the log, in order (the overlay is empty). */
		s->ovl_broken = true;
		err = s->readonly ? -EROFS : store_apply_now(s);   /* note 10 */
		/* No room to apply them (a full map at its limit): serve them
		 * from the overlay; the next commit tries again. */
		if (err == -EROFS || err == -ENOSPC) {
			s->ovl_broken = false;
			err = store_ovl_load(s);
		}
	}
	if (err)
		goto fail;
	free(lockpath);
	*out = s;
	return 0;

fail:
	ovl_clear(&s->ovl);
	store_readers_fini(s);
	if (s->env)
		mdb_env_close(s->env);
	if (s->lockfd >= 0)
		close(s->lockfd);
	free(lockpath);
	pthread_mutex_destroy(&s->commit_lock);
	pthread_rwlock_destroy(&s->ovl_lock);
	pthread_rwlock_destroy(&s->resize);
	free(s);
	return err;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	if (!s->readonly)
		(void)store_apply_now(s);   /* note 10; store_open replays it otherwise */
	store_ovladd_stop(s);
	ovl_clear(&s->ovl);
	store_readers_fini(s);      /* before the environment goes */
	mdb_env_close(s->env);
	if (s->lockfd >= 0)
		close(s->lockfd);      /* releases the flock */
	pthread_mutex_destroy(&s->commit_lock);
	pthread_rwlock_destroy(&s->ovl_lock);
	pthread_rwlock_destroy(&s->resize);
	free(s);
}

/* ---- reads ------------------------------------------------------------ */

int store_get_meta(struct store *s, struct store_meta *out)
{
	MDB_txn *txn;
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	err = store_read_meta(txn, s->meta, s->log, out);
	store_rtxn_end(s, txn);
	return err;
}

int store_inode_value(const void *val, size_t len, uint64_t ino, struct mc_inode_rec *rec,
                      char *target, size_t *tlen)
{
	if (len < JOURNAL_INODE_DISK_SIZE || len > JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX)
		return -EIO;
	journal_inode_decode(val, rec);
	if (rec->ino != ino)
		return -EIO;
	*tlen = len - JOURNAL_INODE_DISK_SIZE;
	if (target && *tlen)
		memcpy(target, (const uint8_t *)val + JOURNAL_INODE_DISK_SIZE, *tlen);
	return 0;
}

int store_get_inode(struct store *s, uint64_t ino, struct mc_inode_rec *out,
                    char *target, size_t *target_len)
{
	uint8_t key[8];
	MDB_txn *txn;
	struct store_reader *rd = NULL;
	MDB_val k = { 8, key }, v;
	struct mc_inode_rec rec;
	size_t tlen;
	put_be64(key, ino);

	int err = store_point_begin(s);
	if (err)
		return err;
	const uint8_t *ov;
	size_t ovl;
	int o = ovl_get(&s->ovl, OVL_INODES, key, 8, &ov, &ovl);
	txn = NULL;
	if (o < 0) {
		err = o;
		goto out;
	}
	if (o == 1) {
		v = (MDB_val){ ovl, (void *)ov };
	} else {
		err = store_point_txn(s, &txn, &rd);
		if (!err)
			err = store_errno(mdb_get(txn, s->inodes, &k, &v));
		if (err)
			goto out;
	}
	err = store_inode_value(v.mv_data, v.mv_size, ino, &rec, target, &tlen);
	if (err)
		goto out;
	if (target_len)
		*target_len = tlen;
	*out = rec;
out:
	if (txn)
		store_point_txn_end(s, txn, rd);
	store_point_end(s);
	return err;
}

int store_dentry_key(uint8_t key[STORE_DENTRY_KEY_MAX], uint64_t parent, const char *name,
                     size_t namelen)
{
	if (namelen == 0)
		return -EINVAL;
	if (namelen > MC_NAME_MAX)
		return -ENAMETOOLONG;
	put_be64(key, parent);
	memcpy(key + 8, name, namelen);
	return 0;
}

/* A dentry value's inode number and type (either may be NULL): 0, or -EIO
 * when it is not a dentry value's size. */
static int dentry_value(const MDB_val *v, uint64_t *ino, uint8_t *dtype)
{
	const uint8_t *p = v->mv_data;
	if (v->mv_size != STORE_DENTRY_VAL_SIZE)
		return -EIO;
	if (ino)
		*ino = get_le64(p);
	if (dtype)
		*dtype = p[8];
	return 0;
}

int store_get_dentry(struct store *s, uint64_t parent, const char *name, size_t namelen,
                     uint64_t *ino, uint8_t *dtype)
{
	uint8_t key[STORE_DENTRY_KEY_MAX];
	MDB_txn *txn;
	struct store_reader *rd = NULL;
	MDB_val k = { 8 + namelen, key }, v;
	int err = store_dentry_key(key, parent, name, namelen);
	if (err)
		return err;
	err = store_point_begin(s);
	if (err)
		return err;
	const uint8_t *ov;
	size_t ovl;
	int o = ovl_get(&s->ovl, OVL_DENTRIES, key, 8 + namelen, &ov, &ovl);
	txn = NULL;
	if (o < 0)
		err = o;
	else if (o == 1)
		v = (MDB_val){ ovl, (void *)ov };
	else if ((err = store_point_txn(s, &txn, &rd)) == 0)
		err = store_errno(mdb_get(txn, s->dentries, &k, &v));
	if (err == 0)
		err = dentry_value(&v, ino, dtype);
	if (txn)
		store_point_txn_end(s, txn, rd);
	store_point_end(s);
	return err;
}

/* The state of dentry key k (klen bytes) that the overlay gives, else
 * the table's (tab, or NULL when the table does not have it): 0 and *v,
 * -ENOENT (none, or deleted), -EIO (malformed). */
static int dentry_state(struct store *s, const uint8_t *k, size_t klen, const MDB_val *tab,
                        MDB_val *v)
{
	const uint8_t *ov;
	size_t ovl;
	int o = ovl_get(&s->ovl, OVL_DENTRIES, k, klen, &ov, &ovl);
	if (o < 0)
		return o;
	if (o == 1)
		*v = (MDB_val){ ovl, (void *)ov };
	else if (tab)
		*v = *tab;
	else
		return -ENOENT;
	return v->mv_size == STORE_DENTRY_VAL_SIZE ? 0 : -EIO;
}

/* The read-ahead of store_get_dentry_ahead: up to max names of parent
 * (key's first 8 bytes) from where cur stands on. */
static void dentries_ahead(struct store *s, MDB_cursor *cur, const uint8_t *key, int rc,
                           MDB_val k, MDB_val v, unsigned max, store_dirent_fn fn, void *arg)
{
	char name[MC_NAME_MAX + 1];
	for (unsigned n = 0; n < max && rc == 0; n++) {
		if (k.mv_size <= 8 || k.mv_size > STORE_DENTRY_KEY_MAX ||
		    memcmp(k.mv_data, key, 8) != 0)
			return; /* past the directory's names */
		MDB_val dv;
		if (dentry_state(s, k.mv_data, k.mv_size, &v, &dv) == 0) {
			const uint8_t *p = dv.mv_data;
			size_t len = k.mv_size - 8;
			memcpy(name, (const uint8_t *)k.mv_data + 8, len);
			name[len] = '\0';
			if (fn(arg, name, len, get_le64(p), p[8]) != 0)
				return;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
}

int store_get_dentry_ahead(struct store *s, uint64_t parent, const char *name, size_t namelen,
                           uint64_t *ino, uint8_t *dtype, unsigned max, store_dirent_fn fn,
                           void *arg)
{
	uint8_t key[STORE_DENTRY_KEY_MAX];
	MDB_txn *txn;
	MDB_cursor *cur;
	struct store_reader *rd = NULL;
	int err = store_dentry_key(key, parent, name, namelen);
	if (err)
		return err;
	err = store_point_begin(s);
	if (err)
		return err;
	err = store_point_txn(s, &txn, &rd);
	if (err)
		goto out;
	err = store_errno(mdb_cursor_open(txn, s->dentries, &cur));
	if (err)
		goto out_txn;
	/* One descent for the name and the names after it. */
	MDB_val k = { 8 + namelen, key }, v, dv = { 0, NULL };
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	bool exact = rc == 0 && k.mv_size == 8 + namelen && memcmp(k.mv_data, key, k.mv_size) == 0;
	if (rc == 0 || rc == MDB_NOTFOUND)
		err = dentry_state(s, key, 8 + namelen, exact ? &v : NULL, &dv);
	else
		err = store_errno(rc);
	if (err == 0)
		err = dentry_value(&dv, ino, dtype);
	if (exact)
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	if (err == 0 || err == -ENOENT)
		dentries_ahead(s, cur, key, rc, k, v, max, fn, arg);
	mdb_cursor_close(cur);
out_txn:
	store_point_txn_end(s, txn, rd);
out:
	store_point_end(s);
	return err;
}

int store_scan_extents(struct store *s, uint64_t ino, store_extent_fn fn, void *arg)
{
	MDB_txn *txn;
	/* A batch that changes an extent map is applied at its commit
	 * (store_log.c note 5): the table is behind only for an inode deleted
	 * in a batch not applied, whose extents are gone (note 9). */
	int fn_rc = 0, rc = 0, err = store_point_begin(s);
	if (err)
		return err;
	if (!ovl_inode_dropped(&s->ovl, ino) && (err = store_rtxn_begin(s, &txn)) == 0) {
		rc = store_ext_scan(txn, s->extents, ino, fn, arg, &fn_rc);
		store_rtxn_end(s, txn);
	}
	store_point_end(s);
	if (err)
		return err;
	if (fn_rc)
		return fn_rc;
	return rc == MDB_CORRUPTED ? -EIO : store_errno(rc);
}

int store_scan_dir(struct store *s, uint64_t parent, store_dirent_fn fn, void *arg)
{
	return store_scan_dir_after(s, parent, NULL, 0, fn, arg);
}

static int scan_dir(struct store *s, uint64_t parent, const char *after, size_t after_len,
                    store_dirent_fn fn, store_dirent_attr_fn afn, void *arg);

int store_scan_dir_after(struct store *s, uint64_t parent, const char *after, size_t after_len,
                         store_dirent_fn fn, void *arg)
{
	return scan_dir(s, parent, after, after_len, fn, NULL, arg);
}

int store_scan_dir_attrs(struct store *s, uint64_t parent, const char *after, size_t after_len,
                         store_dirent_attr_fn fn, void *arg)
{
	return scan_dir(s, parent, after, after_len, NULL, fn, arg);
}

/* What scan_dir hands store_scan_merged: the caller's callback (fn or
 * afn, the other NULL). */
struct scan_dir_ctx {
	store_dirent_fn fn;
	store_dirent_attr_fn afn;
	void *arg;
};

static int scan_dir_entry(void *arg, const char *name, size_t namelen, uint64_t ino,
                          uint8_t dtype, const struct mc_inode_rec *rec, const char *target,
                          size_t tlen)
{
	struct scan_dir_ctx *c = arg;
	(void)target;
	(void)tlen;
	if (!c->afn)
		return c->fn(c->arg, name, namelen, ino, dtype);
	return c->afn(c->arg, name, namelen, ino, dtype, rec);
}

static int scan_dir(struct store *s, uint64_t parent, const char *after, size_t after_len,
                    store_dirent_fn fn, store_dirent_attr_fn afn, void *arg)
{
	struct scan_dir_ctx c = { fn, afn, arg };
	return store_scan_merged(s, NULL, NULL, parent, after, after_len,
	                         afn ? SCAN_PLAIN_RECS : SCAN_NO_RECS, scan_dir_entry, &c);
}

int store_walk(struct store *s, store_walk_fn fn, void *arg)
{
	MDB_txn *txn;
	int fn_rc, err = store_rtxn_begin_applied(s, &txn);
	if (err)
		return err;
	/* Read-only, batches not applied: the overlay merged in (note 9). */
	int rc = store_walk_tables(txn, s->inodes, s->dentries, s->extents,
	                           s->readonly && s->ovl.n ? &s->ovl : NULL, fn, arg, &fn_rc);
	store_rtxn_end(s, txn);
	return fn_rc ? fn_rc : store_errno(rc);
}
