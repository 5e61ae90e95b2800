/* store_apply.c - the tables brought up to the log: a commit's records,
 * the overlay's newest states, or the log's batches read back, applied to
 * `inodes`, `dentries` and `extents` inside the commit's transaction
 * (store_log.c decides when: its note 5).
 *
 * NOTES
 *  1. An apply goes through one cursor per table, kept from record to
 *     record (struct apply_cur; store_apply_ovl's own): LMDB looks at the
 *     page a cursor stands on before it descends from the root, and the
 *     keys come in runs of neighbours (a batch's creates or removals in one
 *     directory, the overlay's sorted keys), so most records skip the
 *     descent, and no cursor is opened per record. Inode records are put
 *     through the cursor too (store_put_inode_cur): under callgrind, 1,100
 *     instructions an inode put of a batch of creates against 2,570 with
 *     mdb_put's descent. An inode deleted looks for its extents only when
 *     the extents table has any (store_ext_del_ino).
 *  2. The overlay is applied in key order, and keys past a table's last
 *     one go in with MDB_APPEND (new inodes, a new directory's names):
 *     LMDB then fills its pages instead of splitting them in half.
 */
#include <errno.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "store.h"
#include "store_extent.h"
#include "store_impl.h"
#include "store_overlay.h"

/* The key and value of rec in `inodes`: k and v point into key and val. */
static void inode_kv(const struct mc_inode_rec *rec, const char *target, size_t target_len,
                     uint8_t key[8], uint8_t val[JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX],
                     MDB_val *k, MDB_val *v)
{
	put_be64(key, rec->ino);
	journal_inode_encode(rec, val);
	if (target_len)
		memcpy(val + JOURNAL_INODE_DISK_SIZE, target, target_len);
	*k = (MDB_val){ 8, key };
	*v = (MDB_val){ JOURNAL_INODE_DISK_SIZE + target_len, val };
}

int store_put_inode_rec(MDB_txn *txn, MDB_dbi dbi, const struct mc_inode_rec *rec,
                        const char *target, size_t target_len)
{
	uint8_t key[8], val[JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX];
	MDB_val k, v;
	inode_kv(rec, target, target_len, key, val, &k, &v);
	return mdb_put(txn, dbi, &k, &v, 0);
}

int store_put_inode_cur(MDB_cursor *cur, const struct mc_inode_rec *rec, const char *target,
                        size_t target_len)
{
	uint8_t key[8], val[JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX];
	MDB_val k, v;
	inode_kv(rec, target, target_len, key, val, &k, &v);
	return mdb_cursor_put(cur, &k, &v, 0);
}

/* The cursors a run of records is applied through (note 1): one per
 * table, opened at first use and kept, so that a record next to the last
 * one in its table finds its leaf page without a descent from the root
 * (LMDB looks at the cursor's page first) and no cursor is opened per
 * record. */
struct apply_cur {
	MDB_cursor *inodes, *dentries;
};

static void apply_cur_close(struct apply_cur *ac)
{
	if (ac->inodes)
		mdb_cursor_close(ac->inodes);
	if (ac->dentries)
		mdb_cursor_close(ac->dentries);
}

/* *cur on dbi, opened if need be. An LMDB code. */
static int apply_cur_get(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cur)
{
	return *cur ? 0 : mdb_cursor_open(txn, dbi, cur);
}

/* Delete key k through cur, if there. An LMDB code. */
static int cur_del(MDB_cursor *cur, MDB_val *k)
{
	MDB_val v;
	int rc = mdb_cursor_get(cur, k, &v, MDB_SET);
	if (rc == 0)
		rc = mdb_cursor_del(cur, 0);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* INODE_UNLINK: one link less; at none the inode and its extents go, as
 * with INODE_DEL. An inode the store does not have has nothing to lose.
 * An LMDB code. */
static int store_unlink_inode(struct store *s, MDB_txn *txn, struct apply_cur *ac,
                              const struct journal_rec *r)
{
	uint8_t key[8];
	char target[MC_SYMLINK_MAX];
	MDB_val k = { 8, key }, v;
	put_be64(key, r->ino);
	/* One descent: the cursor that found it deletes it. */
	int rc = apply_cur_get(txn, s->inodes, &ac->inodes);
	if (rc)
		return rc;
	MDB_cursor *cur = ac->inodes;
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
	if (rc)
		return rc == MDB_NOTFOUND ? 0 : rc;
	if (rec.nlink <= 1)
		return store_ext_del_ino(txn, s->extents, r->ino);
	/* The value lives in the map, which the put may change: copy first. */
	size_t tlen = v.mv_size - JOURNAL_INODE_DISK_SIZE;
	memcpy(target, (const uint8_t *)v.mv_data + JOURNAL_INODE_DISK_SIZE, tlen);
	rec.nlink--;
	rec.ctime_ns = r->ctime_ns;
	return store_put_inode_cur(cur, &rec, target, tlen);
}

/* Apply one decoded record through ac's cursors; an LMDB code. */
static int store_apply(struct store *s, MDB_txn *txn, struct apply_cur *ac,
                       const struct journal_rec *r)
{
	uint8_t key[STORE_DENTRY_KEY_MAX];
	MDB_val k = { 8, key };
	int rc;

	switch (r->type) {
	case JR_INODE_PUT:
		rc = apply_cur_get(txn, s->inodes, &ac->inodes);
		return rc ? rc : store_put_inode_cur(ac->inodes, &r->inode, r->target, r->target_len);
	case JR_INODE_DEL:
		put_be64(key, r->ino);
		rc = apply_cur_get(txn, s->inodes, &ac->inodes);
		if (!rc)
			rc = cur_del(ac->inodes, &k);
		if (rc)
			return rc;
		return store_ext_del_ino(txn, s->extents, r->ino);
	case JR_INODE_UNLINK:
		return store_unlink_inode(s, txn, ac, r);
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
		rc = apply_cur_get(txn, s->dentries, &ac->dentries);
		return rc ? rc : mdb_cursor_put(ac->dentries, &k, &v, 0);
	}
	case JR_DENTRY_DEL:
		put_be64(key, r->parent);
		memcpy(key + 8, r->name, r->namelen);
		k.mv_size = 8 + r->namelen;
		rc = apply_cur_get(txn, s->dentries, &ac->dentries);
		return rc ? rc : cur_del(ac->dentries, &k);
	}
	return MDB_CORRUPTED;   /* journal_next returns only the types above */
}

/* Apply the batches of `log` from..upto to the tables in txn, in order;
 * as store_impl.h says. */
int store_apply_log(struct store *s, MDB_txn *txn, uint64_t from, uint64_t upto,
                           int *derr)
{
	MDB_cursor *cur;
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	struct store_log_batch lb = { 0 };
	*derr = 0;
	if (from > upto)
		return 0;
	put_be64(key, from);
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		return rc;
	uint64_t want = from;
	struct apply_cur ac = { NULL, NULL };
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && want <= upto; want++) {
		uint64_t t;
		const uint8_t *recs;
		size_t len, pos = 0;
		struct journal_rec r;
		int n, grc;
		*derr = store_log_gather(cur, &k, &v, &grc, &lb);
		if (!*derr && (lb.seq != want || !store_log_value(&lb.v, &t, &recs, &len)))
			*derr = -EIO;
		if (*derr) {
			rc = MDB_CORRUPTED;
			break;
		}
		while ((n = journal_next(recs, len, &pos, &r)) == 1 &&
		       (rc = store_apply(s, txn, &ac, &r)) == 0)
			;
		if (rc)
			break;
		if (n < 0) {
			*derr = n;
			rc = MDB_CORRUPTED;
			break;
		}
		rc = grc;
	}
	apply_cur_close(&ac);
	mdb_cursor_close(cur);
	store_log_batch_free(&lb);
	if (want > upto && !*derr)
		return 0;                       /* MDB_NEXT past the last one */
	if (rc == MDB_NOTFOUND || rc == 0) {
		*derr = -EIO;                   /* a batch not applied is gone */
		rc = MDB_CORRUPTED;
	}
	return rc;
}

/* Apply the overlay to the tables in txn: each key's newest state once,
 * in key order (note 2). commit_lock is held, so the overlay cannot
 * change. An LMDB code (ENOMEM too). */
int store_apply_ovl(struct store *s, MDB_txn *txn)
{
	const struct ovl_ent **v;
	size_t n;
	int rc = 0;
	for (unsigned t = OVL_INODES; t <= OVL_DENTRIES && !rc; t++) {
		MDB_dbi dbi = t == OVL_INODES ? s->inodes : s->dentries;
		MDB_cursor *cur;
		MDB_val lk, lv;
		if (ovl_sorted(&s->ovl, t, &v, &n) < 0)
			return ENOMEM;
		rc = mdb_cursor_open(txn, dbi, &cur);
		if (rc) {
			free(v);
			return rc;
		}
		/* Keys past the table's last one are appended (note 2). */
		bool append = false;
		rc = mdb_cursor_get(cur, &lk, &lv, MDB_LAST);
		if (rc == MDB_NOTFOUND)
			append = true;
		rc = rc == MDB_NOTFOUND ? 0 : rc;
		for (size_t i = 0; i < n && !rc; i++) {
			MDB_val k = { v[i]->klen, (void *)v[i]->data };
			MDB_val d = { v[i]->vlen, (void *)(v[i]->data + v[i]->klen) };
			if (!append && !v[i]->deleted && ovl_keycmp(v[i], lk.mv_data, lk.mv_size) > 0)
				append = true;
			if (append && !v[i]->deleted) {
				rc = mdb_cursor_put(cur, &k, &d, MDB_APPEND);
				continue;
			}
			/* Through the cursor: the keys come in order, so the
			 * next one is mostly on the page it stands on (note 1). */
			if (!v[i]->deleted) {
				rc = mdb_cursor_put(cur, &k, &d, 0);
				continue;
			}
			rc = cur_del(cur, &k);
			if (!rc && t == OVL_INODES)
				rc = store_ext_del_ino(txn, s->extents, get_be64(v[i]->data));
		}
		mdb_cursor_close(cur);
		free(v);
	}
	return rc;
}

/* Apply b's records to the tables in txn, in order. An LMDB code; *derr
 * as store_apply_log's. */
int store_apply_batch(struct store *s, MDB_txn *txn, const struct journal_batch *b,
                             int *derr)
{
	size_t pos = 0;
	struct journal_rec r;
	struct apply_cur ac = { NULL, NULL };
	int n, rc = 0;
	while ((n = journal_next(b->buf, b->len, &pos, &r)) == 1 &&
	       (rc = store_apply(s, txn, &ac, &r)) == 0)
		;
	apply_cur_close(&ac);
	if (!rc && n < 0) {
		*derr = n;
		rc = MDB_CORRUPTED;
	}
	return rc;
}
