/* store_impl.h - what store.c lends the other files of the store module
 * (store_read.c): the environment and its tables. Not for use outside the
 * store. */
#ifndef MC_STORE_IMPL_H
#define MC_STORE_IMPL_H

#include <lmdb.h>
#include <pthread.h>

#include "store.h"

#define STORE_DENTRY_VAL_SIZE  9u        /* u64 ino LE, u8 dtype */

struct store_parts {
	MDB_env *env;
	MDB_dbi inodes, dentries;
	pthread_rwlock_t *resize;   /* held for reading by every transaction */
};
void store_parts(struct store *s, struct store_parts *out);
/* An LMDB code as a negative errno (store.c note 2). */
int store_mdb_errno(int rc);

#endif
