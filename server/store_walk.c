/* store_walk.c - decode every record of `inodes`, `dentries` and `extents`
 * for the consistency check (store_walk.h). A record that does not decode
 * is handed on as STORE_REC_BAD with what is wrong with it, not skipped
 * and not fatal: the check reports it with the rest. With an overlay (a
 * read-only store whose last batches are not applied, store.c note 9),
 * its entries are merged into `inodes` and `dentries` in key order, and
 * the extents of an inode it deletes are left out. */
#include "store_walk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "mc_shm.h"
#include "store_overlay.h"

#define WALK_DENTRY_VAL 9u      /* u64 ino LE, u8 dtype (store.c) */
#define WALK_EXT_KEY 16u        /* u64 ino, u64 start, big-endian (store_extent.c) */
#define WALK_EXT_VAL 20u        /* u64 len, u64 phys, u32 flags, little-endian */

static int walk_bad(store_walk_fn fn, void *arg, const char *table, const MDB_val *k,
                    const char *why)
{
	struct store_rec r = { .kind = STORE_REC_BAD, .table = table, .why = why };
	if (k->mv_size >= 8)
		r.ino = get_be64(k->mv_data);
	return fn(arg, &r);
}

static int walk_inode(store_walk_fn fn, void *arg, const MDB_val *k, const MDB_val *v)
{
	struct store_rec r = { .kind = STORE_REC_INODE };
	if (k->mv_size != 8)
		return walk_bad(fn, arg, "inodes", k, "key is not 8 bytes");
	if (v->mv_size < JOURNAL_INODE_DISK_SIZE ||
	    v->mv_size > JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX)
		return walk_bad(fn, arg, "inodes", k, "value size out of range");
	journal_inode_decode(v->mv_data, &r.inode);
	r.ino = get_be64(k->mv_data);
	if (r.inode.ino != r.ino)
		return walk_bad(fn, arg, "inodes", k, "record names another inode");
	r.target_len = v->mv_size - JOURNAL_INODE_DISK_SIZE;
	return fn(arg, &r);
}

static int walk_dentry(store_walk_fn fn, void *arg, const MDB_val *k, const MDB_val *v)
{
	struct store_rec r = { .kind = STORE_REC_DENTRY };
	if (k->mv_size <= 8 || k->mv_size > 8 + MC_NAME_MAX)
		return walk_bad(fn, arg, "dentries", k, "name length out of range");
	if (v->mv_size != WALK_DENTRY_VAL)
		return walk_bad(fn, arg, "dentries", k, "value is not 9 bytes");
	r.parent = get_be64(k->mv_data);
	r.name = (const char *)k->mv_data + 8;
	r.namelen = k->mv_size - 8;
	if (memchr(r.name, '/', r.namelen) || memchr(r.name, '\0', r.namelen))
		return walk_bad(fn, arg, "dentries", k, "name holds '/' or NUL");
	r.ino = get_le64(v->mv_data);
	r.dtype = ((const uint8_t *)v->mv_data)[8];
	return fn(arg, &r);
}

static int walk_extent(store_walk_fn fn, void *arg, const MDB_val *k, const MDB_val *v)
{
	struct store_rec r = { .kind = STORE_REC_EXTENT };
	if (k->mv_size != WALK_EXT_KEY)
		return walk_bad(fn, arg, "extents", k, "key is not 16 bytes");
	if (v->mv_size != WALK_EXT_VAL)
		return walk_bad(fn, arg, "extents", k, "value is not 20 bytes");
	r.ino = get_be64(k->mv_data);
	r.start = get_be64((const uint8_t *)k->mv_data + 8);
	r.len = get_le64(v->mv_data);
	r.phys = get_le64((const uint8_t *)v->mv_data + 8);
	r.flags = get_le32((const uint8_t *)v->mv_data + 16);
	if (r.len == 0 || r.start + (r.len - 1) < r.start)
		return walk_bad(fn, arg, "extents", k, "empty or wrapping range");
	return fn(arg, &r);
}

typedef int (*walk_decode_fn)(store_walk_fn fn, void *arg, const MDB_val *k, const MDB_val *v);

/* Walk table dbi in key order with the overlay's entries of that table
 * (ov[0..nov), sorted) in their places; NULL/0: the table alone. skip_ino:
 * leave out the records of inodes the overlay deletes (extents). */
static int walk_table(MDB_txn *txn, MDB_dbi dbi, walk_decode_fn dec, const struct ovl_ent **ov,
                      size_t nov, const struct store_ovl *skip, store_walk_fn fn, void *arg,
                      int *fn_rc)
{
	MDB_cursor *cur;
	MDB_val k, v;
	size_t i = 0;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while ((rc == 0 || i < nov) && (rc == 0 || rc == MDB_NOTFOUND)) {
		int c = rc ? -1 : i < nov ? ovl_keycmp(ov[i], k.mv_data, k.mv_size) : 1;
		if (c <= 0) {                   /* the overlay's entry first, or instead */
			const struct ovl_ent *e = ov[i++];
			MDB_val ok = { e->klen, (void *)e->data };
			MDB_val ovv = { e->vlen, (void *)(e->data + e->klen) };
			*fn_rc = e->deleted ? 0 : dec(fn, arg, &ok, &ovv);
			if (c == 0)
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		} else {
			const uint8_t *dv;
			size_t dl;
			bool gone = skip && k.mv_size >= 8 &&
			            ovl_get(skip, OVL_INODES, k.mv_data, 8, &dv, &dl) == -ENOENT;
			*fn_rc = gone ? 0 : dec(fn, arg, &k, &v);
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		if (*fn_rc)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int store_walk_tables(MDB_txn *txn, MDB_dbi inodes, MDB_dbi dentries, MDB_dbi extents,
                      const struct store_ovl *ovl, store_walk_fn fn, void *arg, int *fn_rc)
{
	const struct ovl_ent **oi = NULL, **od = NULL;
	size_t ni = 0, nd = 0;
	*fn_rc = 0;
	if (ovl && (ovl_sorted(ovl, OVL_INODES, &oi, &ni) < 0 ||
	            ovl_sorted(ovl, OVL_DENTRIES, &od, &nd) < 0)) {
		free(oi);
		return ENOMEM;                  /* an errno for store_errno */
	}
	int rc = walk_table(txn, inodes, walk_inode, oi, ni, NULL, fn, arg, fn_rc);
	if (!rc && !*fn_rc)
		rc = walk_table(txn, dentries, walk_dentry, od, nd, NULL, fn, arg, fn_rc);
	if (!rc && !*fn_rc)
		rc = walk_table(txn, extents, walk_extent, NULL, 0, ovl, fn, arg, fn_rc);
	free(oi);
	free(od);
	return rc;
}
