/* store_read.c - long-lived read snapshots (store_read.h), and the read
 * transactions that see every committed batch (store_impl.h).
 *
 * Invariants:
 *  1. `held` is true exactly when the reader holds the store's resize lock
 *     for reading and its transaction is live (begun or renewed).
 *  2. The transaction handle, once begun, is only ever reset and renewed,
 *     never aborted before store_snap_free: its reader slot stays ours.
 *  3. A snapshot begins with every committed batch applied to the tables
 *     (store_snap_take applies them first, under `ovl_lock` as
 *     store_rtxn_begin_applied does); store_get_entry, a point read, looks
 *     in the overlay instead (store.c note 9).
 */
#include "store_read.h"

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "mc_shm.h"
#include "store_impl.h"

struct store_snap {
	struct store *st;    /* whose environment and tables */
	MDB_txn *txn;        /* NULL until the first take */
	bool held;
};

/* ---- reads that see every committed batch (store.c note 9) ---- */

int store_rtxn_begin_applied(struct store *s, MDB_txn **txn)
{
	for (;;) {
		pthread_rwlock_rdlock(&s->ovl_lock);
		if (s->readonly || s->applied_seq >= s->last_seq) {
			int err = store_rtxn_begin(s, txn);
			pthread_rwlock_unlock(&s->ovl_lock);
			return err;
		}
		pthread_rwlock_unlock(&s->ovl_lock);
		int err = store_apply_now(s);
		if (err)
			return err;
	}
}

int store_point_begin(struct store *s)
{
	if (store_rtxn_depth) {
		/* A point read inside a scan (a listing loading its inodes)
		 * already holds `resize`, which comes after `ovl_lock` (store.c
		 * note 9): wait for the lock without blocking on it. Its only
		 * writer, a commit publishing to the overlay, never waits for
		 * `resize` while holding it, so this ends. The scan began with
		 * nothing to apply; a broken overlay here is read through, as
		 * an apply would need `resize` for writing. */
		while (pthread_rwlock_tryrdlock(&s->ovl_lock) != 0)
			sched_yield();
		return 0;
	}
	for (;;) {
		pthread_rwlock_rdlock(&s->ovl_lock);
		if (s->readonly || !s->ovl_broken)
			return 0;
		pthread_rwlock_unlock(&s->ovl_lock);
		int err = store_apply_now(s);
		if (err)
			return err;
	}
}

void store_point_end(struct store *s)
{
	pthread_rwlock_unlock(&s->ovl_lock);
}

/* ---- snapshots ---- */

int store_snap_new(struct store *s, struct store_snap **out)
{
	struct store_snap *sn = calloc(1, sizeof(*sn));
	if (!sn)
		return -ENOMEM;
	sn->st = s;
	*out = sn;
	return 0;
}

void store_snap_free(struct store_snap *sn)
{
	if (!sn)
		return;
	store_snap_release(sn);
	if (sn->txn)
		mdb_txn_abort(sn->txn);
	free(sn);
}

/* Begin or renew sn's transaction; `ovl_lock` is the caller's. */
static int snap_begin(struct store_snap *sn)
{
	pthread_rwlock_rdlock(&sn->st->resize);
	int rc = sn->txn ? mdb_txn_renew(sn->txn)
	                 : mdb_txn_begin(sn->st->env, NULL, MDB_RDONLY, &sn->txn);
	if (rc) {
		pthread_rwlock_unlock(&sn->st->resize);
		return store_errno(rc);
	}
	sn->held = true;
	return 0;
}

int store_snap_take(struct store_snap *sn)
{
	struct store *s = sn->st;
	if (sn->held)
		store_snap_release(sn);
	for (;;) {
		pthread_rwlock_rdlock(&s->ovl_lock);
		if (s->readonly || s->applied_seq >= s->last_seq) {
			int err = snap_begin(sn);
			pthread_rwlock_unlock(&s->ovl_lock);
			return err;
		}
		pthread_rwlock_unlock(&s->ovl_lock);
		int err = store_apply_now(s);
		if (err)
			return err;
	}
}

void store_snap_release(struct store_snap *sn)
{
	if (!sn->held)
		return;
	mdb_txn_reset(sn->txn);
	pthread_rwlock_unlock(&sn->st->resize);
	sn->held = false;
}

/* The inode record of ino: 1 found (rec, target, *tlen set), 0 missing,
 * -EIO malformed. With a cursor on `inodes` (icur), a key on the page the
 * cursor stands on is found without descending the tree again: a
 * directory's children mostly have neighbouring inode numbers. */
static int snap_inode(struct store_snap *sn, MDB_cursor *icur, uint64_t ino,
                      struct mc_inode_rec *rec, char *target, size_t *tlen)
{
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	put_be64(key, ino);
	int rc = icur ? mdb_cursor_get(icur, &k, &v, MDB_SET_KEY)
	              : mdb_get(sn->txn, sn->st->inodes, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_errno(rc);
	if (v.mv_size < JOURNAL_INODE_DISK_SIZE ||
	    v.mv_size > JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX)
		return -EIO;
	journal_inode_decode(v.mv_data, rec);
	if (rec->ino != ino)
		return -EIO;
	*tlen = v.mv_size - JOURNAL_INODE_DISK_SIZE;
	memcpy(target, (const uint8_t *)v.mv_data + JOURNAL_INODE_DISK_SIZE, *tlen);
	return 1;
}

/* The inode record of ino in the overlay: 1 found (rec, target, *tlen
 * set), 0 deleted, 2 not there, -EIO malformed. */
static int ovl_inode(struct store *s, uint64_t ino, struct mc_inode_rec *rec, char *target,
                     size_t *tlen)
{
	uint8_t key[8];
	const uint8_t *v;
	size_t vlen;
	put_be64(key, ino);
	int o = ovl_get(&s->ovl, OVL_INODES, key, 8, &v, &vlen);
	if (o == 0)
		return 2;
	if (o < 0)
		return 0;
	if (vlen < JOURNAL_INODE_DISK_SIZE || vlen > JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX)
		return -EIO;
	journal_inode_decode(v, rec);
	*tlen = vlen - JOURNAL_INODE_DISK_SIZE;
	memcpy(target, v + JOURNAL_INODE_DISK_SIZE, *tlen);
	return 1;
}

/* What store_snap_scan_dir hands store_dentries_scan. */
struct snap_scan_ctx {
	struct store_snap *sn;
	MDB_cursor *icur;
	store_snap_fn fn;
	void *arg;
};

static int snap_scan_entry(void *arg, const char *name, size_t namelen, uint64_t ino,
                           uint8_t dtype)
{
	struct snap_scan_ctx *c = arg;
	char target[MC_SYMLINK_MAX];
	struct mc_inode_rec rec;
	size_t tlen = 0;
	int have = snap_inode(c->sn, c->icur, ino, &rec, target, &tlen);
	if (have < 0)
		return have;
	return c->fn(c->arg, name, namelen, ino, dtype, have ? &rec : NULL, target, tlen);
}

int store_snap_scan_dir(struct store_snap *sn, uint64_t parent, const char *after,
                        size_t after_len, store_snap_fn fn, void *arg)
{
	struct snap_scan_ctx c = { sn, NULL, fn, arg };
	assert(sn->held);
	if (after_len > MC_NAME_MAX)
		return -EINVAL;
	int rc = mdb_cursor_open(sn->txn, sn->st->inodes, &c.icur);
	if (rc)
		return store_errno(rc);
	int err = store_dentries_scan(sn->txn, sn->st->dentries, parent, after, after_len,
	                              snap_scan_entry, &c);
	mdb_cursor_close(c.icur);
	return err > 0 ? 0 : err;
}

int store_get_entry(struct store *s, uint64_t parent, const char *name, size_t namelen,
                    uint64_t *ino, uint8_t *dtype, struct mc_inode_rec *rec, char *target,
                    size_t *tlen, bool *have_rec)
{
	uint8_t key[STORE_DENTRY_KEY_MAX];
	struct store_snap sn = { .txn = NULL, .held = false };
	int err = store_dentry_key(key, parent, name, namelen);
	if (err)
		return err;
	sn.st = s;
	err = store_point_begin(s);
	if (err)
		return err;
	err = snap_begin(&sn);
	if (err) {
		store_point_end(s);
		return err;
	}
	MDB_val k = { 8 + namelen, key }, v;
	const uint8_t *ov;
	size_t ovl;
	int o = ovl_get(&s->ovl, OVL_DENTRIES, key, 8 + namelen, &ov, &ovl);
	if (o == 1)
		v = (MDB_val){ ovl, (void *)ov };
	err = o < 0 ? o : o == 1 ? 0 : store_errno(mdb_get(sn.txn, sn.st->dentries, &k, &v));
	if (err == 0 && v.mv_size != STORE_DENTRY_VAL_SIZE)
		err = -EIO;
	if (err == 0) {
		const uint8_t *p = v.mv_data;
		uint64_t i = get_le64(p);
		uint8_t t = p[8];
		size_t tl = 0;
		int have = ovl_inode(s, i, rec, target, &tl);
		if (have == 2)
			have = snap_inode(&sn, NULL, i, rec, target, &tl);
		if (have < 0) {
			err = have;
		} else {
			*ino = i;
			*dtype = t;
			*tlen = tl;
			*have_rec = have;
		}
	}
	store_snap_release(&sn);
	mdb_txn_abort(sn.txn);
	store_point_end(s);
	return err;
}
