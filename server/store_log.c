/* store_log.c - the commit of one journal batch: the commit log (append,
 * retention by batches, bytes and age, reading it back) and the table
 * updates, in one LMDB write transaction.
 *
 * NOTES
 *  1. A log value is a 16-byte header (LOG_MAGIC, LOG_VERSION, u16 0, u32
 *     records, u64 commit time in ns since the epoch, little-endian) and
 *     the batch's journal records. A value that does not start with the
 *     magic was written before the header existed: records only, time 0
 *     (journal record types never take the magic's value).
 *  2. Retention runs in the commit's transaction after the append: the
 *     oldest batches go while the log holds more than log_retention batches,
 *     more than log_max_bytes, or the oldest is older than log_max_age_ns;
 *     the batch just written always stays. So the log never holds more
 *     than the bounds plus one batch, and LMDB reuses the freed pages.
 *  3. s->log_bytes (the sum of the log's value sizes) is kept under
 *     commit_lock: measured once at open, changed by a commit only once its
 *     transaction committed.
 *  4. Lock order: commit_lock, then `resize`. store_info reads the log
 *     figures under commit_lock only after its read transaction ended:
 *     holding `resize` while waiting for commit_lock would deadlock with a
 *     commit growing the map.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "bytes.h"
#include "clock.h"
#include "store.h"
#include "store_extent.h"
#include "store_impl.h"

#define LOG_MAGIC   0xC1u
#define LOG_VERSION 1u
#define LOG_HDR     16u

/* Free space below which a failed write is taken for a full file system. */
#define STORE_SPACE_LOW (1ull << 20)

_Static_assert(LOG_MAGIC > JR_INODE_UNLINK, "the log magic is no journal record type");

/* Split a log value into its time and records (note 1); false if the
 * header is malformed. */
static bool log_value(const MDB_val *v, uint64_t *time_ns, const uint8_t **recs, size_t *len)
{
	const uint8_t *p = v->mv_data;
	if (v->mv_size == 0 || p[0] != LOG_MAGIC) {
		*time_ns = 0;
		*recs = p;
		*len = v->mv_size;
		return true;
	}
	if (v->mv_size < LOG_HDR || p[1] != LOG_VERSION)
		return false;
	*time_ns = get_le64(p + 8);
	*recs = p + LOG_HDR;
	*len = v->mv_size - LOG_HDR;
	return true;
}

/* INODE_UNLINK: one link less; at none the inode and its extents go, as
 * with INODE_DEL. An inode the store does not have has nothing to lose.
 * An LMDB code. */
static int store_unlink_inode(struct store *s, MDB_txn *txn, const struct journal_rec *r)
{
	uint8_t key[8];
	char target[MC_SYMLINK_MAX];
	MDB_val k = { 8, key }, v;
	MDB_cursor *cur;
	put_be64(key, r->ino);
	/* One descent: the cursor that found it deletes it. */
	int rc = mdb_cursor_open(txn, s->inodes, &cur);
	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
	if (rc == 0 && (v.mv_size < JOURNAL_INODE_DISK_SIZE ||
	                v.mv_size > JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX))
		rc = MDB_CORRUPTED;
	struct mc_inode_rec rec;
	if (rc == 0) {
		journal_inode_decode(v.mv_data, &rec);
		if (rec.nlink <= 1)
			rc = mdb_cursor_del(cur, 0);
	}
	mdb_cursor_close(cur);
	if (rc)
		return rc == MDB_NOTFOUND ? 0 : rc;
	if (rec.nlink <= 1)
		return store_ext_del_ino(txn, s->extents, r->ino);
	/* The value lives in the map, which the put may change: copy first. */
	size_t tlen = v.mv_size - JOURNAL_INODE_DISK_SIZE;
	memcpy(target, (const uint8_t *)v.mv_data + JOURNAL_INODE_DISK_SIZE, tlen);
	rec.nlink--;
	rec.ctime_ns = r->ctime_ns;
	return store_put_inode_rec(txn, s->inodes, &rec, target, tlen);
}

/* Apply one decoded record; an LMDB code. */
static int store_apply(struct store *s, MDB_txn *txn, const struct journal_rec *r)
{
	uint8_t key[STORE_DENTRY_KEY_MAX];
	MDB_val k = { 8, key };
	int rc;

	switch (r->type) {
	case JR_INODE_PUT:
		return store_put_inode_rec(txn, s->inodes, &r->inode, r->target, r->target_len);
	case JR_INODE_DEL:
		put_be64(key, r->ino);
		rc = mdb_del(txn, s->inodes, &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return rc;
		return store_ext_del_ino(txn, s->extents, r->ino);
	case JR_INODE_UNLINK:
		return store_unlink_inode(s, txn, r);
	case JR_EXTENT_SET:
	case JR_EXTENT_PUNCH:
		return store_ext_apply(txn, s->extents, r);
	case JR_DENTRY_PUT: {
		uint8_t val[STORE_DENTRY_VAL_SIZE];
		put_be64(key, r->parent);
		memcpy(key + 8, r->name, r->namelen);
		k.mv_size = 8 + r->namelen;
		put_le64(val, r->ino);
		val[8] = r->dtype;
		MDB_val v = { sizeof(val), val };
		return mdb_put(txn, s->dentries, &k, &v, 0);
	}
	case JR_DENTRY_DEL:
		put_be64(key, r->parent);
		memcpy(key + 8, r->name, r->namelen);
		k.mv_size = 8 + r->namelen;
		rc = mdb_del(txn, s->dentries, &k, NULL);
		return rc == MDB_NOTFOUND ? 0 : rc;
	}
	return MDB_CORRUPTED;   /* journal_next returns only the types above */
}

/* Retention (note 2), after batch keep was appended: drop the oldest
 * batches past the bounds. *bytes is the log's size, updated; *dropped
 * counts. An LMDB code. */
static int store_trim_log(struct store *s, MDB_txn *txn, uint64_t keep, uint64_t now_ns,
                          uint64_t *bytes, uint64_t *dropped)
{
	MDB_cursor *cur;
	MDB_stat st;
	MDB_val k, v;
	int rc = mdb_stat(txn, s->log, &st);
	if (rc)
		return rc;
	uint64_t entries = st.ms_entries;
	uint64_t old = s->log_max_age_ns && now_ns > s->log_max_age_ns ?
	               now_ns - s->log_max_age_ns : 0;
	rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
		uint64_t t;
		const uint8_t *r;
		size_t n;
		if (k.mv_size != 8 || get_be64(k.mv_data) >= keep)
			break;
		if (!log_value(&v, &t, &r, &n))
			t = 0;
		if (!(s->log_retention && entries > s->log_retention) &&
		    !(s->log_max_bytes && *bytes > s->log_max_bytes) && !(old && t < old))
			break;
		size_t sz = v.mv_size;
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
		*bytes -= sz < *bytes ? sz : *bytes;
		entries--;
		(*dropped)++;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* One attempt at the commit transaction: 0 or a negative errno; *full is
 * set when it failed on MDB_MAP_FULL. Nothing is written on failure. */
static int store_commit_txn(struct store *s, const struct journal_batch *b,
                            struct store_commit_times *t, bool *full)
{
	MDB_txn *txn;
	uint8_t key[8], ls[8], ni[8];
	struct journal_rec r;
	size_t pos = 0;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), t1;
	int n, err, rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	*full = false;
	if (rc)
		return store_errno(rc);

	uint64_t now = clock_ns(CLOCK_REALTIME);
	uint64_t bytes = s->log_bytes, dropped = 0;
	put_be64(key, b->seq);
	MDB_val k = { 8, key }, v = { LOG_HDR + b->len, NULL };
	MDB_val old;
	if (mdb_get(txn, s->log, &k, &old) == 0)      /* a retry after a failure */
		bytes -= old.mv_size < bytes ? old.mv_size : bytes;
	rc = mdb_put(txn, s->log, &k, &v, MDB_RESERVE);
	if (rc)
		goto fail;
	uint8_t *lv = v.mv_data;
	memset(lv, 0, LOG_HDR);
	lv[0] = LOG_MAGIC;
	lv[1] = LOG_VERSION;
	put_le32(lv + 4, b->nrecs);
	put_le64(lv + 8, now);
	if (b->len)
		memcpy(lv + LOG_HDR, b->buf, b->len);
	bytes += LOG_HDR + b->len;
	t1 = clock_ns(CLOCK_MONOTONIC);
	t->log_ns = t1 - t0;
	t0 = t1;

	while ((n = journal_next(b->buf, b->len, &pos, &r)) == 1) {
		rc = store_apply(s, txn, &r);
		if (rc)
			goto fail;
	}
	if (n < 0) {
		mdb_txn_abort(txn);
		return n;
	}
	put_le64(ls, b->seq);
	put_le64(ni, b->next_ino);
	rc = meta_put(txn, s->meta, "last_seq", ls, 8);
	if (!rc)
		rc = meta_put(txn, s->meta, "next_ino", ni, 8);
	if (!rc)
		rc = store_trim_log(s, txn, b->seq, now, &bytes, &dropped);
	if (rc)
		goto fail;
	t1 = clock_ns(CLOCK_MONOTONIC);
	t->apply_ns = t1 - t0;
	t0 = t1;

	rc = mdb_txn_commit(txn);       /* frees txn, committed or not */
	t->sync_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	if (rc == 0) {
		s->log_bytes = bytes;
		s->log_trimmed += dropped;
	}
	goto out;

fail:
	mdb_txn_abort(txn);
out:
	err = store_errno(rc);
	*full = rc == MDB_MAP_FULL;
	return err;
}

/* A commit that failed with -EIO (LMDB's word for a short write) on a file
 * system with (almost) no space left failed for want of space (note 6). */
static int store_space_errno(struct store *s, int err)
{
	struct statvfs sv;
	int fd;
	if (err != -EIO || mdb_env_get_fd(s->env, &fd) != 0 || fstatvfs(fd, &sv) != 0)
		return err;
	return (uint64_t)sv.f_bavail * sv.f_frsize < STORE_SPACE_LOW ? -ENOSPC : err;
}

/* Double the map, up to map_size_max; -ENOSPC at the limit. Called with no
 * transaction of ours open. */
static int store_grow(struct store *s)
{
	if (s->map_size >= s->map_size_max)
		return -ENOSPC;
	uint64_t want = s->map_size > s->map_size_max / 2 ? s->map_size_max : s->map_size * 2;
	pthread_rwlock_wrlock(&s->resize);
	int rc = mdb_env_set_mapsize(s->env, (size_t)want);
	if (rc == 0) {
		MDB_envinfo ei;
		s->map_size = mdb_env_info(s->env, &ei) == 0 ? ei.me_mapsize : want;
	}
	pthread_rwlock_unlock(&s->resize);
	return store_errno(rc);
}

int store_commit(struct store *s, const struct journal_batch *b, struct store_commit_times *t)
{
	struct store_commit_times tt = {0};
	int err;

	pthread_mutex_lock(&s->commit_lock);
	if (s->fault_n > 0) {
		if (s->fault_n != UINT_MAX)
			s->fault_n--;
		err = s->fault_err;
		pthread_mutex_unlock(&s->commit_lock);
		if (t)
			*t = tt;
		return err;
	}
	for (;;) {
		bool full;
		pthread_rwlock_rdlock(&s->resize);
		err = store_commit_txn(s, b, &tt, &full);
		pthread_rwlock_unlock(&s->resize);
		if (!full) {
			err = store_space_errno(s, err);
			break;
		}
		uint64_t g0 = clock_ns(CLOCK_MONOTONIC);
		err = store_grow(s);
		tt.grow_ns += clock_ns(CLOCK_MONOTONIC) - g0;
		if (err)
			break;
	}
	pthread_mutex_unlock(&s->commit_lock);
	if (t)
		*t = tt;
	return err;
}

void store_fail_commits(struct store *s, unsigned n, int err)
{
	assert(n == 0 || err < 0);
	pthread_mutex_lock(&s->commit_lock);
	s->fault_n = n;
	s->fault_err = err;
	pthread_mutex_unlock(&s->commit_lock);
}

int store_info(struct store *s, struct store_info *out)
{
	MDB_envinfo ei;
	MDB_stat es, ls;
	MDB_txn *txn;
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_env_info(s->env, &ei);
	if (!rc)
		rc = mdb_env_stat(s->env, &es);
	if (!rc)
		rc = mdb_stat(txn, s->log, &ls);
	err = store_errno(rc);
	if (!err) {
		out->map_size = ei.me_mapsize;
		out->used_bytes = ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize;
		out->log_entries = ls.ms_entries;
	}
	store_rtxn_end(s, txn);
	/* After the transaction: store_commit takes commit_lock, then `resize`. */
	if (!err) {
		pthread_mutex_lock(&s->commit_lock);
		out->log_bytes = s->log_bytes;
		out->log_trimmed = s->log_trimmed;
		pthread_mutex_unlock(&s->commit_lock);
	}
	return err;
}

/* ---- reading the log -------------------------------------------------- */

int store_log_measure(struct store *s)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t bytes = 0;
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (!rc) {
		while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
			bytes += v.mv_size;
		mdb_cursor_close(cur);
	}
	err = rc == MDB_NOTFOUND ? 0 : store_errno(rc);
	store_rtxn_end(s, txn);
	if (!err)
		s->log_bytes = bytes;
	return err;
}

int store_scan_log(struct store *s, uint64_t since, uint64_t *first, store_log_fn fn, void *arg)
{
	MDB_txn *txn;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	uint8_t key[8];
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		goto out_mdb;
	if (first) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		if (rc == 0 && k.mv_size != 8) {
			err = -EIO;
			goto out;
		}
		*first = rc == 0 ? get_be64(k.mv_data) : 0;
	}
	put_be64(key, since);
	k = (MDB_val){ 8, key };
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t t;
		const uint8_t *recs;
		size_t len;
		if (k.mv_size != 8 || !log_value(&v, &t, &recs, &len)) {
			err = -EIO;
			goto out;
		}
		err = fn(arg, get_be64(k.mv_data), t, recs, len);
		if (err)
			goto out;
	}
out_mdb:
	err = rc == MDB_NOTFOUND ? 0 : store_errno(rc);
out:
	if (cur)
		mdb_cursor_close(cur);
	store_rtxn_end(s, txn);
	return err;
}
