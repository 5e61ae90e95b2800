/* store_logread.c - reading the commit log back: a batch's chunks
 * gathered into its value, the log's last batch and span, the overlay of
 * a read-only store (store.c note 9), its size at open (store_log.c note
 * 3), and the batches since a sequence for the log feed. Read
 * transactions only (the apply, store_apply.c, and store_log.c's
 * retention use the same helpers in the commit's write transaction); the
 * format is store_log.c note 1.
 * Also store_info, whose log figures follow store_log.c notes 3 and 4. */
#include <endian.h>
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "clock.h"
#include "store.h"
#include "store_impl.h"
#include "store_overlay.h"

/* Split a log value into its time and records (note 1); false if the
 * header is malformed. */
static bool log_value(const MDB_val *v, uint64_t *time_ns, const uint8_t **recs, size_t *len)
{
	const uint8_t *p = v->mv_data;
	if (v->mv_size == 0 || p[0] != LOG_MAGIC) {
		*time_ns = 0;
		*recs = p;
		*len = v->mv_size;
		return true;
	}
	size_t hdr = p[1] == 1 ? LOG_HDR_V1 : LOG_HDR;
	if (v->mv_size < hdr || (p[1] != 1 && p[1] != LOG_VERSION))
		return false;
	*time_ns = get_le64(p + 8);
	*recs = p + hdr;
	*len = v->mv_size - hdr;
	return true;
}

bool store_log_value(const MDB_val *v, uint64_t *time_ns, const uint8_t **recs, size_t *len)
{
	uint64_t t;
	return log_value(v, time_ns ? time_ns : &t, recs, len);
}

bool store_log_key(const MDB_val *k, uint64_t *seq, uint32_t *chunk)
{
	if (k->mv_size != 8 && k->mv_size != LOG_KEY)
		return false;
	*seq = get_be64(k->mv_data);
	*chunk = k->mv_size == LOG_KEY ? get_be32((const uint8_t *)k->mv_data + 8) : 0;
	return true;
}

void store_log_key_put(uint8_t key[LOG_KEY], uint64_t seq, uint32_t chunk)
{
	put_be64(key, seq);
	put_be32(key + 8, chunk);
}

/* lb->buf holds at least n bytes; false when it cannot. */
static bool log_batch_room(struct store_log_batch *lb, size_t n)
{
	if (n <= lb->cap)
		return true;
	size_t cap = lb->cap ? lb->cap : 1 << 16;
	while (cap < n)
		cap *= 2;
	uint8_t *p = realloc(lb->buf, cap);
	if (!p)
		return false;
	lb->buf = p;
	lb->cap = cap;
	return true;
}

int store_log_gather(MDB_cursor *cur, MDB_val *k, MDB_val *v, int *rc,
                     struct store_log_batch *lb)
{
	uint64_t seq, s2;
	uint32_t c;
	*rc = 0;
	if (!store_log_key(k, &seq, &c) || c != 0)
		return -EIO;
	bool whole = k->mv_size == 8;
	MDB_val first = *v;
	size_t len = 0;
	lb->seq = seq;
	lb->v = first;
	lb->chunks = 1;
	for (;;) {
		*rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
		if (*rc || whole || k->mv_size != LOG_KEY || !store_log_key(k, &s2, &c) || s2 != seq)
			break;
		if (c != lb->chunks)
			return -EIO;            /* a chunk missing */
		if (lb->chunks == 1) {
			if (!log_batch_room(lb, first.mv_size + v->mv_size))
				return -ENOMEM;
			memcpy(lb->buf, first.mv_data, first.mv_size);
			len = first.mv_size;
		} else if (!log_batch_room(lb, len + v->mv_size)) {
			return -ENOMEM;
		}
		memcpy(lb->buf + len, v->mv_data, v->mv_size);
		len += v->mv_size;
		lb->chunks++;
	}
	if (lb->chunks > 1)
		lb->v = (MDB_val){ len, lb->buf };
	return 0;
}

void store_log_batch_free(struct store_log_batch *lb)
{
	free(lb->buf);
	lb->buf = NULL;
	lb->cap = 0;
}

/* Step cur (op) and read the key's batch and chunk: an LMDB code,
 * MDB_CORRUPTED for a key of neither form. */
static int log_step(MDB_cursor *cur, MDB_cursor_op op, MDB_val *k, MDB_val *v, uint64_t *seq,
                    uint32_t *chunk)
{
	int rc = mdb_cursor_get(cur, k, v, op);
	return rc == 0 && !store_log_key(k, seq, chunk) ? MDB_CORRUPTED : rc;
}

int store_log_span(MDB_txn *txn, MDB_dbi log, uint64_t *first, uint64_t *last)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint32_t c;
	*first = *last = 0;
	int rc = mdb_cursor_open(txn, log, &cur);
	if (rc)
		return store_errno(rc);
	rc = log_step(cur, MDB_FIRST, &k, &v, first, &c);
	if (rc == 0)
		rc = log_step(cur, MDB_LAST, &k, &v, last, &c);
	mdb_cursor_close(cur);
	if (rc == MDB_CORRUPTED)
		return -EIO;
	return rc == MDB_NOTFOUND ? 0 : store_errno(rc);
}

int store_log_last(MDB_txn *txn, MDB_dbi log, uint64_t *seq, uint64_t *next_ino)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint32_t c;
	*seq = 0;
	*next_ino = 0;
	int rc = mdb_cursor_open(txn, log, &cur);
	if (rc)
		return store_errno(rc);
	rc = log_step(cur, MDB_LAST, &k, &v, seq, &c);
	if (rc == 0 && c != 0) {
		/* The header is in chunk 0. */
		uint8_t key[LOG_KEY];
		store_log_key_put(key, *seq, 0);
		k = (MDB_val){ LOG_KEY, key };
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
		rc = rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return rc == MDB_CORRUPTED ? -EIO : store_errno(rc);
	const uint8_t *p = v.mv_data;
	if (v.mv_size >= LOG_HDR && p[0] == LOG_MAGIC && p[1] == LOG_VERSION)
		*next_ino = get_le64(p + 16);
	return 0;
}

/* A read-only store with batches not applied (note 9): their changes into
 * the overlay, from the log. */
int store_ovl_load(struct store *s)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	uint8_t key[8];
	MDB_val k = { 8, key }, v;
	struct store_log_batch lb = { 0 };
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
	     want++) {
		const uint8_t *recs;
		size_t len, pos = 0;
		struct journal_rec r;
		int n;
		err = store_log_gather(cur, &k, &v, &rc, &lb);
		if (!err && (lb.seq != want || !store_log_value(&lb.v, NULL, &recs, &len)))
			err = -EIO;
		if (err)
			break;
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
	store_log_batch_free(&lb);
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
		/* Every chunk of every batch (note 3). */
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
	struct store_log_batch lb = { 0 };
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		goto out_mdb;
	if (first) {
		uint32_t c;
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		if (rc == 0 && !store_log_key(&k, first, &c)) {
			err = -EIO;
			goto out;
		}
		if (rc)
			*first = 0;
	}
	put_be64(key, since);
	k = (MDB_val){ 8, key };
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		uint64_t t;
		const uint8_t *recs;
		size_t len;
		err = store_log_gather(cur, &k, &v, &rc, &lb);
		if (!err && !store_log_value(&lb.v, &t, &recs, &len))
			err = -EIO;
		if (!err)
			err = fn(arg, lb.seq, t, recs, len);
		if (err)
			goto out;
	}
out_mdb:
	err = rc == MDB_NOTFOUND ? 0 : store_errno(rc);
out:
	if (cur)
		mdb_cursor_close(cur);
	store_rtxn_end(s, txn);
	store_log_batch_free(&lb);
	return err;
}

int store_info(struct store *s, struct store_info *out)
{
	MDB_envinfo ei;
	MDB_stat es;
	MDB_txn *txn;
	int err = store_rtxn_begin(s, &txn);
	if (err)
		return err;
	int rc = mdb_env_info(s->env, &ei);
	if (!rc)
		rc = mdb_env_stat(s->env, &es);
	uint64_t first = 0, last = 0;
	err = store_errno(rc);
	if (!err)
		err = store_log_span(txn, s->log, &first, &last);
	if (!err) {
		out->map_size = ei.me_mapsize;
		out->used_bytes = ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize;
		out->log_entries = last ? last - first + 1 : 0;  /* batches (note 1) */
	}
	store_rtxn_end(s, txn);
	/* After the transaction: store_commit takes commit_lock, then `resize`. */
	if (!err) {
		pthread_mutex_lock(&s->commit_lock);
		out->log_bytes = s->log_bytes;
		out->log_trimmed = s->log_trimmed;
		pthread_mutex_unlock(&s->commit_lock);
	}
	return err;
}
