/* store_logread.c - reading the commit log back: into the overlay (a
 * read-only store, store.c note 9), its size at open (store_log.c note
 * 3), and the batches since a sequence for the log feed. Read
 * transactions only; the values' format is store_log.c note 1. */
#include <errno.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>

#include "bytes.h"
#include "clock.h"
#include "store.h"
#include "store_impl.h"
#include "store_overlay.h"

/* A read-only store with batches not applied (note 9): their changes into
 * the overlay, from the log. */
int store_ovl_load(struct store *s)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	uint64_t want = s->applied_seq + 1;
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	put_be64(key, want);
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc) {
		store_rtxn_end(s, txn);
		return store_errno(rc);
	}
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && !err && want <= s->last_seq;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), want++) {
		const uint8_t *recs;
		size_t len, pos = 0;
		struct journal_rec r;
		int n;
		if (k.mv_size != 8 || get_be64(k.mv_data) != want ||
		    !store_log_value(&v, NULL, &recs, &len)) {
			err = -EIO;
			break;
		}
		while ((n = journal_next(recs, len, &pos, &r)) == 1 && !err)
			err = ovl_add(&s->ovl, &r);
		if (!err && n < 0)
			err = n;
		s->pending_bytes += len;
	}
	s->pending_since_ns = clock_ns(CLOCK_REALTIME);
	if (!err && want <= s->last_seq)
		err = rc && rc != MDB_NOTFOUND ? store_errno(rc) : -EIO;
	mdb_cursor_close(cur);
	store_rtxn_end(s, txn);
	return err;
}

int store_log_measure(struct store *s)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t bytes = 0;
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (!rc) {
		while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
			bytes += v.mv_size;
		mdb_cursor_close(cur);
	}
	err = rc == MDB_NOTFOUND ? 0 : store_errno(rc);
	store_rtxn_end(s, txn);
	if (!err)
		s->log_bytes = bytes;
	return err;
}

int store_scan_log(struct store *s, uint64_t since, uint64_t *first, store_log_fn fn, void *arg)
{
	MDB_txn *txn;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	uint8_t key[8];
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		goto out_mdb;
	if (first) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		if (rc == 0 && k.mv_size != 8) {
			err = -EIO;
			goto out;
		}
		*first = rc == 0 ? get_be64(k.mv_data) : 0;
	}
	put_be64(key, since);
	k = (MDB_val){ 8, key };
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t t;
		const uint8_t *recs;
		size_t len;
		if (k.mv_size != 8 || !store_log_value(&v, &t, &recs, &len)) {
			err = -EIO;
			goto out;
		}
		err = fn(arg, get_be64(k.mv_data), t, recs, len);
		if (err)
			goto out;
	}
out_mdb:
	err = rc == MDB_NOTFOUND ? 0 : store_errno(rc);
out:
	if (cur)
		mdb_cursor_close(cur);
	store_rtxn_end(s, txn);
	return err;
}
