/* store_scan.c - directory scans that see every committed batch without
 * applying the log: the tables of a read transaction merged with the
 * overlay (store_read.c note 1), a chunk at a time.
 *
 * Invariants:
 *  1. A chunk is filled with `ovl_lock` held for reading and handed on
 *     without it; it holds copies only (names, records, targets), so the
 *     caller's callback may read the store, take other locks, or take its
 *     time without holding up a commit.
 *  2. A chunk is in name order and starts after the last name handed on
 *     (`after`), so a scan that goes on in a fresher transaction (note 1c
 *     of store_read.c; it is begun again at every chunk) gives every
 *     name once, in order.
 *  3. Locks: `ovl_lock`, then `resize` (a transaction begun or renewed
 *     under it), as the point reads take them; a one-shot scan's callback
 *     runs with neither held (its transaction ended), so it may do point
 *     reads; a snapshot's runs with `resize` held (store_read.h).
 */
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "mc_shm.h"
#include "store_impl.h"
#include "store_overlay.h"

#define SCAN_CHUNK   64u                    /* entries filled per hold of ovl_lock */
/* A directory with more names than this in the overlay is scanned after an
 * apply rather than merged: every chunk after a commit sorts its names
 * again, which for a directory changed wholesale (created, then removed by
 * an rmtree: 80,000 names) costs more than the apply, at most one a commit. */
#define SCAN_MERGE_MAX 128u
#define SCAN_TARGETS (4u * MC_SYMLINK_MAX)  /* target bytes per chunk, at most */

struct scan_ent {
	uint64_t ino;
	uint8_t dtype;
	bool have_rec;
	uint16_t namelen;
	size_t tlen;
	const char *target;                 /* in the chunk's targets */
	struct mc_inode_rec rec;
	char name[MC_NAME_MAX + 1];
};

/* The overlay's dentries of the directory scanned, sorted once and kept
 * across chunks while the overlay does not change (gen): a chunk moves on
 * from `i` instead of sorting them again. */
struct scan_ovl {
	const struct ovl_ent **v;
	size_t n, i;
	uint64_t gen;
	bool valid;
};

struct scan_chunk {
	size_t n, tused;
	size_t after_len;
	char after[MC_NAME_MAX];
	struct scan_ent e[SCAN_CHUNK];
	char targets[SCAN_TARGETS];
};

/* The inode record of ino, from the overlay o (may be NULL) or else
 * through icur: 1 found (rec, target, *tlen set), 0 missing, -EIO
 * malformed, another -errno from LMDB. */
static int scan_inode(const struct store_ovl *o, MDB_cursor *icur, uint64_t ino,
                      struct mc_inode_rec *rec, char *target, size_t *tlen)
{
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	const uint8_t *ov;
	size_t ovlen;
	put_be64(key, ino);
	int got = o ? ovl_get(o, OVL_INODES, key, 8, &ov, &ovlen) : 0;
	if (got < 0)
		return 0;                       /* deleted in a batch not applied */
	if (got == 1) {
		v = (MDB_val){ ovlen, (void *)ov };
	} else {
		int rc = mdb_cursor_get(icur, &k, &v, MDB_SET_KEY);
		if (rc == MDB_NOTFOUND)
			return 0;
		if (rc)
			return store_errno(rc);
	}
	int err = store_inode_value(v.mv_data, v.mv_size, ino, rec, target, tlen);
	return err < 0 ? err : 1;
}

/* Add one entry (name, namelen bytes; val, vlen bytes as the dentries
 * table holds it) to chunk c with its inode record as recs asks. */
static int scan_add(const struct store_ovl *o, MDB_cursor *icur, enum store_scan_recs recs,
                    struct scan_chunk *c, const uint8_t *name, size_t namelen,
                    const uint8_t *val, size_t vlen)
{
	if (namelen == 0 || namelen > MC_NAME_MAX || vlen != STORE_DENTRY_VAL_SIZE)
		return -EIO;
	struct scan_ent *e = &c->e[c->n];
	memcpy(e->name, name, namelen);
	e->name[namelen] = '\0';
	e->namelen = (uint16_t)namelen;
	e->ino = get_le64(val);
	e->dtype = val[8];
	e->have_rec = false;
	e->tlen = 0;
	e->target = c->targets + c->tused;
	if (recs != SCAN_NO_RECS) {
		size_t tlen = 0;
		int have = scan_inode(o, icur, e->ino, &e->rec, c->targets + c->tused, &tlen);
		if (have < 0 && (recs == SCAN_ALL_RECS || have != -EIO))
			return have;
		if (recs == SCAN_PLAIN_RECS && tlen)
			have = 0;               /* a symlink: its target is not read */
		e->have_rec = have == 1;
		if (e->have_rec && recs == SCAN_ALL_RECS) {
			e->tlen = tlen;
			c->tused += tlen;
		}
	}
	c->n++;
	return 0;
}

/* Fill c with the entries of parent after c->after from txn's tables
 * merged with o (NULL: the tables alone); *more: entries may follow. */
static int scan_fill(struct store *s, MDB_txn *txn, const struct store_ovl *o, uint64_t parent,
                     enum store_scan_recs recs, struct scan_chunk *c, struct scan_ovl *so,
                     bool *more)
{
	uint8_t prefix[8 + MC_NAME_MAX];
	const struct ovl_ent **ov = NULL;
	size_t nov = 0, i = 0;
	MDB_cursor *cur = NULL, *icur = NULL;
	c->n = 0;
	c->tused = 0;
	put_be64(prefix, parent);
	memcpy(prefix + 8, c->after, c->after_len);
	MDB_val k = { 8 + c->after_len, prefix }, v;

	int err = 0;
	if (o && (!so->valid || so->gen != o->gen)) {
		free(so->v);
		so->valid = false;
		err = ovl_dir_sorted(o, parent, c->after, c->after_len, &so->v, &so->n);
		if (err)
			return err;
		so->i = 0;
		so->gen = o->gen;
		so->valid = true;
	}
	if (o) {
		/* Past the names handed on already. */
		while (so->i < so->n && c->after_len &&
		       ovl_keycmp(so->v[so->i], prefix, 8 + c->after_len) <= 0)
			so->i++;
		/* No array when the overlay has nothing here (and NULL + 0 is
		 * undefined). */
		if (so->v) {
			ov = so->v + so->i;
			nov = so->n - so->i;
		}
	}
	int rc = mdb_cursor_open(txn, s->dentries, &cur);
	if (!rc && recs != SCAN_NO_RECS)
		rc = mdb_cursor_open(txn, s->inodes, &icur);
	if (!rc)
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	for (;;) {
		if (rc && rc != MDB_NOTFOUND) {
			err = store_errno(rc);
			break;
		}
		bool tab = rc == 0 && k.mv_size >= 8 && memcmp(k.mv_data, prefix, 8) == 0;
		if (tab && c->after_len && k.mv_size == 8 + c->after_len &&
		    memcmp((const uint8_t *)k.mv_data + 8, c->after, c->after_len) == 0) {
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);   /* the resume point */
			continue;
		}
		if (!tab && i == nov) {
			*more = false;
			break;
		}
		if (c->n == SCAN_CHUNK || c->tused + MC_SYMLINK_MAX > SCAN_TARGETS) {
			*more = true;
			break;
		}
		/* < 0: the table's name first; > 0: the overlay's; 0: the same
		 * name, the overlay's state is the newer. */
		int cmp = !tab ? 1 : i == nov ? -1 : -ovl_keycmp(ov[i], k.mv_data, k.mv_size);
		if (cmp >= 0) {
			const struct ovl_ent *e = ov[i++];
			if (cmp == 0)
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			if (e->deleted)
				continue;
			err = scan_add(o, icur, recs, c, e->data + 8, e->klen - 8u,
			               e->data + e->klen, e->vlen);
		} else {
			err = scan_add(o, icur, recs, c, (const uint8_t *)k.mv_data + 8,
			               k.mv_size - 8, v.mv_data, v.mv_size);
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		if (err)
			break;
	}
	if (icur)
		mdb_cursor_close(icur);
	if (cur)
		mdb_cursor_close(cur);
	return err;
}

/* Begin (or renew, for a snapshot: held not NULL) the transaction *tp. */
static int scan_txn_begin(struct store *s, MDB_txn **tp, bool *held)
{
	if (!held)
		return store_rtxn_begin(s, tp);
	pthread_rwlock_rdlock(&s->resize);
	int rc = mdb_txn_renew(*tp);
	if (rc) {
		pthread_rwlock_unlock(&s->resize);
		return store_errno(rc);
	}
	*held = true;
	return 0;
}

static void scan_txn_end(struct store *s, MDB_txn **tp, bool *held)
{
	if (!held) {
		if (*tp)
			store_rtxn_end(s, *tp);
		*tp = NULL;
	} else if (*held) {
		mdb_txn_reset(*tp);
		pthread_rwlock_unlock(&s->resize);
		*held = false;
	}
}

/* With `ovl_lock` held for reading: make *tp a transaction the overlay
 * can be merged with (store_read.c note 1c); 1 merge it, 0 do not. */
static int scan_view(struct store *s, MDB_txn **tp, bool *held)
{
	int view = store_ovl_view(s, *tp);
	if (view != -ESTALE)
		return view;
	scan_txn_end(s, tp, held);
	int err = scan_txn_begin(s, tp, held);
	return err ? err : store_ovl_view(s, *tp);
}

int store_scan_merged(struct store *s, MDB_txn **txn, bool *held, uint64_t parent,
                      const char *after, size_t after_len, enum store_scan_recs recs,
                      store_snap_fn fn, void *arg)
{
	MDB_txn *own = NULL;
	MDB_txn **tp = held ? txn : &own;
	if (after_len > MC_NAME_MAX)
		return -EINVAL;
	struct scan_chunk *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (after_len)
		memcpy(c->after, after, after_len);
	c->after_len = after_len;
	struct scan_ovl so = { .valid = false };
	int err = 0;
	bool more = true;
	while (!err && more) {
		/* `ovl_lock` before `resize` (store.c note 9): the transaction
		 * goes and is begun (a snapshot's renewed) under the lock, at
		 * every chunk (it shows no less than it did: note 1d of
		 * store_read.c). */
		scan_txn_end(s, tp, held);
		pthread_rwlock_rdlock(&s->ovl_lock);
		if (!s->readonly && (s->ovl_broken ||
		                     ovl_dir_count(&s->ovl, parent) > SCAN_MERGE_MAX)) {
			/* note 1e of store_read.c: apply with no transaction open */
			pthread_rwlock_unlock(&s->ovl_lock);
			scan_txn_end(s, tp, held);
			err = store_apply_now(s);
			continue;
		}
		if ((held ? !*held : !*tp) && (err = scan_txn_begin(s, tp, held)) != 0) {
			pthread_rwlock_unlock(&s->ovl_lock);
			break;
		}
		int view = scan_view(s, tp, held);
		if (view >= 0)
			err = scan_fill(s, *tp, view ? &s->ovl : NULL, parent, recs, c, &so, &more);
		else
			err = view;
		pthread_rwlock_unlock(&s->ovl_lock);
		/* A scan of its own holds nothing while fn runs: fn may read the
		 * store (ovl_lock, then resize) or take its time. */
		if (!held)
			scan_txn_end(s, tp, NULL);
		for (size_t i = 0; i < c->n && !err; i++) {
			const struct scan_ent *e = &c->e[i];
			err = fn(arg, e->name, e->namelen, e->ino, e->dtype,
			         e->have_rec ? &e->rec : NULL, e->target, e->tlen);
		}
		if (c->n) {
			const struct scan_ent *last = &c->e[c->n - 1];
			memcpy(c->after, last->name, last->namelen);
			c->after_len = last->namelen;
		}
	}
	if (!held)
		scan_txn_end(s, tp, NULL);
	free(so.v);
	free(c);
	return err;
}
