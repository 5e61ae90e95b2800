/* store_extent.c - the store's `extents` table (store_extent.h). A punch
 * re-seeks after every change rather than trusting a cursor across
 * deletions: O(k log n) for k extents touched. */
#include "store_extent.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"

#define EXT_KEY 16u
#define EXT_VAL 20u

struct ext {
	uint64_t start, len, phys;
	uint32_t flags;
};

static void ext_key(uint8_t k[EXT_KEY], uint64_t ino, uint64_t start)
{
	put_be64(k, ino);
	put_be64(k + 8, start);
}

static int ext_put(MDB_txn *txn, MDB_dbi dbi, uint64_t ino, const struct ext *e)
{
	uint8_t kb[EXT_KEY], vb[EXT_VAL];
	ext_key(kb, ino, e->start);
	put_le64(vb, e->len);
	put_le64(vb + 8, e->phys);
	put_le32(vb + 16, e->flags);
	MDB_val k = { EXT_KEY, kb }, v = { EXT_VAL, vb };
	return mdb_put(txn, dbi, &k, &v, 0);
}

static int ext_del(MDB_txn *txn, MDB_dbi dbi, uint64_t ino, uint64_t start)
{
	uint8_t kb[EXT_KEY];
	ext_key(kb, ino, start);
	MDB_val k = { EXT_KEY, kb };
	return mdb_del(txn, dbi, &k, NULL);
}

/* Decode the entry at k/v if it belongs to ino: 1, 0 (another ino), or
 * MDB_CORRUPTED (negated, < 0). */
static int ext_decode(const MDB_val *k, const MDB_val *v, uint64_t ino, struct ext *e)
{
	if (k->mv_size != EXT_KEY)
		return 0;
	if (get_be64(k->mv_data) != ino)
		return 0;
	if (v->mv_size != EXT_VAL)
		return -MDB_CORRUPTED;
	e->start = get_be64((const uint8_t *)k->mv_data + 8);
	e->len = get_le64(v->mv_data);
	e->phys = get_le64((const uint8_t *)v->mv_data + 8);
	e->flags = get_le32((const uint8_t *)v->mv_data + 16);
	if (e->len == 0 || e->start + (e->len - 1) < e->start)
		return -MDB_CORRUPTED;
	return 1;
}

/* The extent of ino that starts last at or before pos (op MDB_SET_RANGE
 * then MDB_PREV), or the first at or after pos (after): 1 and *e, or 0. */
static int ext_seek(MDB_cursor *cur, uint64_t ino, uint64_t pos, bool after, struct ext *e)
{
	uint8_t kb[EXT_KEY];
	ext_key(kb, ino, pos);
	MDB_val k = { EXT_KEY, kb }, v;
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (after) {
		if (rc)
			return rc == MDB_NOTFOUND ? 0 : -rc;
		return ext_decode(&k, &v, ino, e);
	}
	if (rc == 0 && k.mv_size == EXT_KEY && get_be64(k.mv_data) == ino &&
	    get_be64((const uint8_t *)k.mv_data + 8) == pos)
		return ext_decode(&k, &v, ino, e);
	rc = mdb_cursor_get(cur, &k, &v, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
	if (rc)
		return rc == MDB_NOTFOUND ? 0 : -rc;
	return ext_decode(&k, &v, ino, e);
}

static int ext_punch(MDB_txn *txn, MDB_dbi dbi, uint64_t ino, uint64_t start, uint64_t end)
{
	MDB_cursor *cur;
	struct ext e;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc)
		return rc;
	/* The extent that begins before start and may reach into the range. */
	int got = start ? ext_seek(cur, ino, start - 1, false, &e) : 0;
	if (got < 0) {
		rc = -got;
		goto out;
	}
	if (got && e.start < start && e.start + (e.len - 1) >= start) {
		uint64_t e_end = e.start + (e.len - 1);
		struct ext left = e;
		left.len = start - e.start;
		rc = ext_put(txn, dbi, ino, &left);
		if (!rc && e_end > end) {
			struct ext right = { end + 1, e_end - end, e.phys + (end + 1 - e.start), e.flags };
			rc = ext_put(txn, dbi, ino, &right);
			goto out;
		}
		if (rc)
			goto out;
	}
	/* Those that begin inside. */
	for (;;) {
		got = ext_seek(cur, ino, start, true, &e);
		if (got <= 0) {
			rc = -got;
			break;
		}
		if (e.start > end)
			break;
		uint64_t e_end = e.start + (e.len - 1);
		rc = ext_del(txn, dbi, ino, e.start);
		if (rc)
			break;
		if (e_end > end) {
			struct ext right = { end + 1, e_end - end, e.phys + (end + 1 - e.start), e.flags };
			rc = ext_put(txn, dbi, ino, &right);
			break;
		}
		if (e_end == UINT64_MAX)
			break;
	}
out:
	mdb_cursor_close(cur);
	return rc;
}

int store_ext_apply(MDB_txn *txn, MDB_dbi dbi, const struct journal_rec *r)
{
	int rc = ext_punch(txn, dbi, r->ino, r->start, r->end);
	if (rc || r->type != JR_EXTENT_SET)
		return rc;
	struct ext e = { r->start, r->end - r->start + 1, r->phys, r->flags };
	return ext_put(txn, dbi, r->ino, &e);
}

int store_ext_del_ino(MDB_txn *txn, MDB_dbi dbi, uint64_t ino)
{
	/* Most stores hold no extents: no cursor, no seek, for each inode
	 * deleted. */
	MDB_stat st;
	if (mdb_stat(txn, dbi, &st) == 0 && st.ms_entries == 0)
		return 0;
	return ext_punch(txn, dbi, ino, 0, UINT64_MAX);
}

int store_ext_scan(MDB_txn *txn, MDB_dbi dbi, uint64_t ino, store_extent_fn fn, void *arg,
                   int *fn_rc)
{
	MDB_cursor *cur;
	*fn_rc = 0;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc)
		return rc;
	uint8_t kb[EXT_KEY];
	ext_key(kb, ino, 0);
	MDB_val k = { EXT_KEY, kb }, v;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct ext e = { 0 };   /* ext_decode fills it when it returns > 0 */
		int got = ext_decode(&k, &v, ino, &e);
		if (got <= 0) {
			rc = -got;
			break;
		}
		*fn_rc = fn(arg, e.start, e.len, e.phys, e.flags);
		if (*fn_rc)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}
