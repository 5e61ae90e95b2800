/* bench_lmdb.c - the raw LMDB baseline of the durable and lmdb phases: dentry-sized puts, fsync'd per transaction. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

static int lmdb_check(struct client *c, const char *what, int rc)
{
	if (rc == 0)
		return 0;
	c->errors++;
	if (c->errors == 1)
		fprintf(stderr, "mcbench: client %u: lmdb phase aborted: %s: %s\n",
		        c->id, what, mdb_strerror(rc));
	return -1;
}

int lmdb_open(struct client *c, const char *dir)
{
	MDB_txn *txn;
	size_t per = 8 + O.name_len + 9 + 64;
	size_t map = (size_t)O.files * O.dirs * O.clients * per * 3 + ((size_t)64 << 20);

	if (lmdb_check(c, "mdb_env_create", mdb_env_create(&c->env)) < 0)
		return -1;
	if (lmdb_check(c, "mdb_env_set_mapsize", mdb_env_set_mapsize(c->env, map)) < 0 ||
	    lmdb_check(c, "mdb_env_open", mdb_env_open(c->env, dir, 0, 0644)) < 0 ||
	    lmdb_check(c, "mdb_txn_begin", mdb_txn_begin(c->env, NULL, 0, &txn)) < 0)
		goto fail;
	if (lmdb_check(c, "mdb_dbi_open", mdb_dbi_open(txn, NULL, 0, &c->dbi)) < 0) {
		mdb_txn_abort(txn);
		goto fail;
	}
	if (lmdb_check(c, "mdb_txn_commit", mdb_txn_commit(txn)) < 0)
		goto fail;
	return 0;
fail:
	mdb_env_close(c->env);
	c->env = NULL;
	return -1;
}

/* N*D puts of a dentry-sized record (key: u64 BE parent + name; value: u64
 * child ino + u8 type), one fsync'd write transaction per LMDB_TXN_PUTS. */
int lmdb_run(struct client *c, uint64_t *ops)
{
	unsigned char key[8 + 256], val[9];
	MDB_txn *txn = NULL;
	MDB_val k, v;
	unsigned long d, i;
	uint64_t n = 0, parent, ino;
	int j;

	for (d = 0; d < O.dirs; d++) {
		parent = ((uint64_t)(c->id + 1) << 32) | d;
		for (j = 0; j < 8; j++)
			key[j] = (unsigned char)(parent >> (56 - 8 * j));
		for (i = 0; i < O.files; i++) {
			if (!txn && lmdb_check(c, "mdb_txn_begin",
			                       mdb_txn_begin(c->env, NULL, 0, &txn)) < 0)
				return -1;
			memcpy(key + 8, c->fnames[i], O.name_len);
			ino = parent * 1000003 + i;
			memcpy(val, &ino, 8);
			val[8] = DT_REG;
			k.mv_data = key;
			k.mv_size = 8 + O.name_len;
			v.mv_data = val;
			v.mv_size = sizeof(val);
			if (lmdb_check(c, "mdb_put", mdb_put(txn, c->dbi, &k, &v, MDB_NOOVERWRITE)) < 0) {
				mdb_txn_abort(txn);
				return -1;
			}
			n++;
			(*ops)++;
			if (n % LMDB_TXN_PUTS == 0) {
				int rc = mdb_txn_commit(txn);
				txn = NULL;
				if (lmdb_check(c, "mdb_txn_commit", rc) < 0)
					return -1;
			}
		}
	}
	if (txn && lmdb_check(c, "mdb_txn_commit", mdb_txn_commit(txn)) < 0)
		return -1;
	return 0;
}


void lmdb_close(struct client *c)
{
	if (c->env)
		mdb_env_close(c->env);
	c->env = NULL;
}
