/* store_extent.h - the store's `extents` table, for store.c only: keys
 * (ino, start) big-endian, so a file's extents are adjacent and in order;
 * values u64 length, u64 phys, u32 flags, little-endian. Functions return
 * LMDB codes: they stay inside the store. */
#ifndef MC_STORE_EXTENT_H
#define MC_STORE_EXTENT_H

#include <lmdb.h>
#include <stdint.h>

#include "journal.h"
#include "store.h"

/* Apply an EXTENT_SET or EXTENT_PUNCH record. */
int store_ext_apply(MDB_txn *txn, MDB_dbi dbi, const struct journal_rec *r);
/* Delete every extent of ino (its inode is gone). */
int store_ext_del_ino(MDB_txn *txn, MDB_dbi dbi, uint64_t ino);
/* Call fn for each extent of ino in order; fn's nonzero result stops the
 * scan and is returned (it is not an LMDB code then: the caller tells them
 * apart by *fn_rc). A malformed value is MDB_CORRUPTED. */
int store_ext_scan(MDB_txn *txn, MDB_dbi dbi, uint64_t ino, store_extent_fn fn, void *arg,
                   int *fn_rc);

#endif
