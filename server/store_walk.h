/* store_walk.h - every record of the store's tables from one snapshot, for
 * the consistency check (fsck.c), for store.c only: functions take LMDB
 * handles and return LMDB codes, which stay inside the store. */
#ifndef MC_STORE_WALK_H
#define MC_STORE_WALK_H

#include <lmdb.h>

#include "store.h"
#include "store_overlay.h"

/* Walk `inodes`, `dentries` and `extents` (in that order, each in key
 * order) in txn, calling fn for each record; *fn_rc receives fn's nonzero
 * result, which stops the walk. ovl (may be NULL): changes not applied to
 * the tables, merged in (store_walk.c). */
int store_walk_tables(MDB_txn *txn, MDB_dbi inodes, MDB_dbi dentries, MDB_dbi extents,
                      const struct store_ovl *ovl, store_walk_fn fn, void *arg, int *fn_rc);

#endif
