/* store_read.c - long-lived read snapshots (store_read.h), directory
 * scans of the tables merged with the overlay, and the read transactions
 * that see every committed batch (store_impl.h).
 *
 * Invariants:
 *  1. A scan reads the tables of its transaction merged with the overlay
 *     (deletions hide a name, puts add or replace it, in name order; inode
 *     records from the overlay where it has them), never applying the log
 *     (store_log.c note 5) except when the overlay is broken. The overlay
 *     it merges is the one that goes with its tables:
 *     a. a commit that does not apply changes the log only, then the
 *        overlay (under `ovl_lock`, written): the tables stay those the
 *        overlay sits on, and a reader sees the overlay before or after
 *        the batch, each the state of a committed prefix;
 *     b. a commit that applies writes every batch not applied to the
 *        tables; before its transaction commits it stores its id in
 *        apply_txnid (an atomic: the commit's meta write comes after it,
 *        and a reader reads it after the meta that gave its transaction
 *        its id, with a fence between), and once committed it empties
 *        the overlay, moves that id to tables_txnid and clears
 *        apply_txnid, in one hold of `ovl_lock` (written); a failed
 *        commit clears apply_txnid (the id is used again);
 *     c. a reader begins its transaction and compares its id with both
 *        while it holds `ovl_lock` for reading (store_ovl_view): at or
 *        past apply_txnid, its tables hold every committed batch, and the
 *        overlay (older) is left out; below tables_txnid, its tables are
 *        older than those the overlay goes with (the overlay lost what
 *        they lack): it begins again; else the overlay is its own. Only
 *        one commit runs at a time and (b) ends before the next begins,
 *        so no other case exists;
 *     d. a scan fills a chunk of SCAN_CHUNK entries with `ovl_lock` held
 *        for reading and hands it to the caller without the lock (whose
 *        callback may take the namespace lock or read the store), then
 *        checks (c) again for the next chunk: a commit is never held up
 *        by more than one chunk, and a held snapshot may show batches
 *        committed after it was taken (never fewer than before), which
 *        is what a fresh snapshot would show;
 *     e. a broken overlay (it missed a change) is the one case where a
 *        read applies the log first, with no transaction of its own open
 *        (an apply may grow the map).
 *  2. `held` is true exactly when the reader holds the store's resize lock
 *     for reading and its transaction is live (begun or renewed).
 *  3. The transaction handle, once begun, is only ever reset and renewed,
 *     never aborted before store_snap_free: its reader slot stays ours.
 *  4. store_get_entry, a point read, looks in the overlay first with
 *     `ovl_lock` held for reading across its read (store.c note 9).
 *  5. A point read uses its thread's read transaction (store_point_txn):
 *     begun once, then renewed and reset around each read, as snapshots
 *     are (note 3), which costs a fraction of a begin and an abort. It is
 *     live only between store_point_txn and store_point_txn_end, with
 *     `resize` held for reading all that time, so a reset transaction
 *     never stands in the way of a resize (LMDB renews it on the new
 *     map); MDB_NOTLS lets it be a thread's without LMDB's thread-local
 *     slot. A thread that exits gives its transaction back (the key's
 *     destructor aborts it); store_close aborts those left. A point read
 *     nested in another on the same thread (`busy`) begins its own.
 */
#include "store_read.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "mc_shm.h"
#include "store_impl.h"

struct store_reader {
	LIST_ENTRY(store_reader) link;   /* on st->readers */
	struct store *st;
	MDB_txn *txn;                    /* NULL until the first read */
	bool busy;                       /* live: between store_point_txn and _end */
};

struct store_snap {
	struct store *st;    /* whose environment and tables */
	MDB_txn *txn;        /* NULL until the first take */
	bool held;
};

/* ---- reads that see every committed batch (store.c note 9) ---- */

/* Take `ovl_lock` for reading once the tables hold every committed batch
 * (all) or the overlay holds what they lack (!all: it is not broken),
 * applying first otherwise: 0 with the lock held, or -errno. */
static int ovl_read_lock(struct store *s, bool all)
{
	for (;;) {
		pthread_rwlock_rdlock(&s->ovl_lock);
		if (s->readonly || (all ? s->applied_seq >= s->last_seq : !s->ovl_broken))
			return 0;
		pthread_rwlock_unlock(&s->ovl_lock);
		int err = store_apply_now(s);
		if (err)
			return err;
	}
}

int store_rtxn_begin_applied(struct store *s, MDB_txn **txn)
{
	int err = ovl_read_lock(s, true);
	if (err)
		return err;
	err = store_rtxn_begin(s, txn);
	pthread_rwlock_unlock(&s->ovl_lock);
	return err;
}

int store_ovl_view(struct store *s, MDB_txn *txn)
{
	if (s->readonly)
		return 1;               /* the tables never change */
	uint64_t id = mdb_txn_id(txn);
	/* After the read of LMDB's meta that gave txn its id (note 1b). */
	atomic_thread_fence(memory_order_seq_cst);
	uint64_t applying = atomic_load(&s->apply_txnid);
	if (applying && id >= applying)
		return 0;
	return id < s->tables_txnid ? -ESTALE : 1;
}

/* ---- per-thread point-read transactions (note 5) ---- */

static void reader_free(struct store_reader *r)
{
	if (r->txn)
		mdb_txn_abort(r->txn);
	free(r);
}

/* The key's destructor: the thread is gone. */
static void reader_gone(void *p)
{
	struct store_reader *r = p;
	pthread_mutex_lock(&r->st->readers_mu);
	LIST_REMOVE(r, link);
	pthread_mutex_unlock(&r->st->readers_mu);
	reader_free(r);
}

int store_readers_init(struct store *s)
{
	LIST_INIT(&s->readers);
	int rc = pthread_mutex_init(&s->readers_mu, NULL);
	if (rc)
		return -rc;
	/* No key (the process ran out of them): every read begins its own. */
	s->reader_key_ok = pthread_key_create(&s->reader_key, reader_gone) == 0;
	return 0;
}

void store_readers_fini(struct store *s)
{
	struct store_reader *r;
	if (s->reader_key_ok)
		pthread_key_delete(s->reader_key);  /* no destructor runs after this */
	while ((r = LIST_FIRST(&s->readers))) {
		LIST_REMOVE(r, link);
		reader_free(r);
	}
	pthread_mutex_destroy(&s->readers_mu);
}

/* The calling thread's reader, made on its first read; NULL when none
 * can be had. */
static struct store_reader *reader_self(struct store *s)
{
	if (!s->reader_key_ok)
		return NULL;
	struct store_reader *r = pthread_getspecific(s->reader_key);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->st = s;
	if (pthread_setspecific(s->reader_key, r) != 0) {
		free(r);
		return NULL;
	}
	pthread_mutex_lock(&s->readers_mu);
	LIST_INSERT_HEAD(&s->readers, r, link);
	pthread_mutex_unlock(&s->readers_mu);
	return r;
}

int store_point_txn(struct store *s, MDB_txn **txn, struct store_reader **rd)
{
	struct store_reader *r = reader_self(s);
	*rd = NULL;
	if (!r || r->busy)
		return store_rtxn_begin(s, txn);
	pthread_rwlock_rdlock(&s->resize);
	int rc = r->txn ? mdb_txn_renew(r->txn) : mdb_txn_begin(s->env, NULL, MDB_RDONLY, &r->txn);
	if (rc) {
		if (r->txn) {
			mdb_txn_abort(r->txn);  /* begin afresh next time */
			r->txn = NULL;
		}
		pthread_rwlock_unlock(&s->resize);
		return store_errno(rc);
	}
	r->busy = true;
	*txn = r->txn;
	*rd = r;
	return 0;
}

void store_point_txn_end(struct store *s, MDB_txn *txn, struct store_reader *rd)
{
	if (!rd) {
		store_rtxn_end(s, txn);
		return;
	}
	mdb_txn_reset(txn);
	rd->busy = false;
	pthread_rwlock_unlock(&s->resize);
}

int store_point_begin(struct store *s)
{
	return ovl_read_lock(s, false);
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
	int err = ovl_read_lock(s, false);      /* note 1e */
	if (err)
		return err;
	err = snap_begin(sn);
	pthread_rwlock_unlock(&s->ovl_lock);
	return err;
}

void store_snap_release(struct store_snap *sn)
{
	if (!sn->held)
		return;
	mdb_txn_reset(sn->txn);
	pthread_rwlock_unlock(&sn->st->resize);
	sn->held = false;
}

/* The inode record of ino in sn's transaction: 1 found (rec, target,
 * *tlen set), 0 missing, -EIO malformed. */
static int snap_inode(struct store_snap *sn, uint64_t ino, struct mc_inode_rec *rec,
                      char *target, size_t *tlen)
{
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	put_be64(key, ino);
	int rc = mdb_get(sn->txn, sn->st->inodes, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_errno(rc);
	rc = store_inode_value(v.mv_data, v.mv_size, ino, rec, target, tlen);
	return rc < 0 ? rc : 1;
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
	int err = store_inode_value(v, vlen, ino, rec, target, tlen);
	return err < 0 ? err : 1;
}

int store_snap_scan_dir(struct store_snap *sn, uint64_t parent, const char *after,
                        size_t after_len, store_snap_fn fn, void *arg)
{
	assert(sn->held);
	if (after_len > MC_NAME_MAX)
		return -EINVAL;
	int err = store_scan_merged(sn->st, &sn->txn, &sn->held, parent, after, after_len,
	                            SCAN_ALL_RECS, fn, arg);
	return err > 0 ? 0 : err;
}

/* The name of the entry at the cursor when it is one of parent's (1), 0
 * when the positioning rc says there is none or it is another's, -errno. */
static int cursor_name(int rc, const MDB_val *k, uint64_t parent, char *name, size_t *len)
{
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_errno(rc);
	if (k->mv_size <= 8 || k->mv_size > 8 + MC_NAME_MAX || get_be64(k->mv_data) != parent)
		return 0;
	*len = k->mv_size - 8;
	memcpy(name, (const uint8_t *)k->mv_data + 8, *len);
	return 1;
}

int store_snap_last_name(struct store_snap *sn, uint64_t parent, char *name, size_t *len)
{
	assert(sn->held);
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(sn->txn, sn->st->dentries, &cur);
	if (rc)
		return store_errno(rc);
	/* The first key past the directory's, then the one before it. */
	put_be64(key, parent + 1);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0 || rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(cur, &k, &v, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
	int found = cursor_name(rc, &k, parent, name, len);
	mdb_cursor_close(cur);
	return found;
}

int store_snap_name_from(struct store_snap *sn, uint64_t parent, const char *from,
                         size_t from_len, char *name, size_t *len)
{
	assert(sn->held);
	uint8_t key[STORE_DENTRY_KEY_MAX];
	if (from_len > MC_NAME_MAX)
		return -EINVAL;
	put_be64(key, parent);
	memcpy(key + 8, from, from_len);
	MDB_val k = { 8 + from_len, key }, v;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(sn->txn, sn->st->dentries, &cur);
	if (rc)
		return store_errno(rc);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	int found = cursor_name(rc, &k, parent, name, len);
	mdb_cursor_close(cur);
	return found;
}

int store_get_entry(struct store *s, uint64_t parent, const char *name, size_t namelen,
                    uint64_t *ino, uint8_t *dtype, struct mc_inode_rec *rec, char *target,
                    size_t *tlen, bool *have_rec)
{
	uint8_t key[STORE_DENTRY_KEY_MAX];
	struct store_snap sn = { .txn = NULL, .held = false };
	struct store_reader *rd;
	int err = store_dentry_key(key, parent, name, namelen);
	if (err)
		return err;
	sn.st = s;
	err = store_point_begin(s);
	if (err)
		return err;
	err = store_point_txn(s, &sn.txn, &rd);
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
			have = snap_inode(&sn, i, rec, target, &tl);
		if (have < 0) {
			err = have;
		} else {
			*ino = i;
			*dtype = t;
			*tlen = tl;
			*have_rec = have;
		}
	}
	store_point_txn_end(s, sn.txn, rd);
	store_point_end(s);
	return err;
}
