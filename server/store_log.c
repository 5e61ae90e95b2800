/* store_log.c - the commit of one journal batch: the commit log (append,
 * retention by batches, bytes and age; store_logread.c reads it back) and
 * the table updates, in one LMDB write transaction.
 *
 * NOTES
 *  1. A batch's value is a 24-byte header (LOG_MAGIC, LOG_VERSION 2, u16
 *     0, u32 records, u64 commit time in ns since the epoch, u64 next_ino,
 *     little-endian) and the batch's journal records. It is written in
 *     chunks, keys be64 seq + be32 chunk index from 0 (LOG_KEY bytes): the
 *     value cut in pieces of LOG_CHUNK, the rest in pieces of at most
 *     LOG_CHUNK_SMALL, so chunk 0 holds the header whole. A big batch is
 *     then no run of contiguous overflow pages of its own length, which
 *     LMDB could only find again among the pages that retention frees
 *     when a run freed had that length (otherwise it extends the file, and
 *     data.mdb grew without bound under churn): its chunks are runs of one
 *     length (LOG_CHUNK) that every chunk freed gives back, and leaf
 *     pages. Readers gather a batch's chunks in index order
 *     (store_log_gather, store_logread.c); a gap is -EIO. Before chunks,
 *     a batch was one value under an 8-byte key (be64 seq): such keys
 *     still read as a batch whole, and sort before the chunks of the
 *     same seq (LMDB compares the shorter key first), so a log may hold
 *     both, the old batches first. Code from before chunks refuses a
 *     store with them at open (-EIO from its store_log_last: the last key
 *     is always a chunk), so the format number stays 2. Version 1
 *     headers (format 1 stores) are 16 bytes, without next_ino. A value
 *     that does not start with the magic was written before the header
 *     existed: records only, time 0 (journal record types never take the
 *     magic's value).
 *  2. Retention runs in the commit's transaction after the append: the
 *     oldest batches go, each with every chunk of it, while the log holds
 *     more than log_retention batches (counted from its first and last
 *     seq: batches are consecutive), more than log_max_bytes, or the
 *     oldest is older than log_max_age_ns (the header's time, chunk 0);
 *     the batch just written always stays. So the log never holds more
 *     than the bounds plus one batch, and LMDB reuses the freed pages.
 *     An apply with no batch (b NULL) trims the same way, the last batch
 *     staying: store_trim_aged runs one when the oldest batch comes of
 *     age on a log no commit writes to (an idle server's committer).
 *  3. s->log_bytes (the sum of the log's value sizes, every chunk) is kept
 *     under commit_lock: measured once at open, changed by a commit only
 *     once its transaction committed. A retry of a batch first deletes
 *     what an earlier try of it left, and subtracts its sizes.
 *  4. Lock order: commit_lock, then `resize`. store_info reads the log
 *     figures under commit_lock only after its read transaction ended:
 *     holding `resize` while waiting for commit_lock would deadlock with a
 *     commit growing the map. `ovl_lock` comes before `resize` for readers
 *     (store.c note 9); a commit takes it only after its transaction
 *     ended (apply_txnid, written before, is an atomic).
 *  5. The log is the commit; the tables follow in groups. A commit writes
 *     the batch to `log` only, and is durable when mdb_txn_commit returns:
 *     the last batch of the log is the last committed one, and its header
 *     holds next_ino (store_log_last; meta's last_seq and next_ino are
 *     written with applied_seq only, so they may be older). Its table updates are applied in the same
 *     transaction only every apply_batches-th batch, when the batches not
 *     applied hold apply_bytes of records, when the batch changes an
 *     extent map or holds an INODE_UNLINK (a record relative to what the
 *     tables hold, which the overlay cannot state), or when the overlay failed (ovl_broken): then every
 *     batch after meta.applied_seq is read back from `log` and applied, and
 *     applied_seq moves to the batch. Until then the overlay holds their
 *     inode and dentry changes (each batch's added while its commit
 *     syncs, by the adder thread: store_ovladd.c), which the point reads and the directory
 *     scans merge with the tables (store_read.c note 1); only the walk
 *     applies them first. So a read never misses a committed change, a
 *     read never writes (but where the overlay is broken), and a commit
 *     dirties the log's pages and meta's only, most of the time.
 *  6. Retention never drops a batch that is not applied: the recovery in
 *     store_open replays `log` from applied_seq + 1 to last_seq.
 *  7. How an apply goes through the tables: store_apply.c.
 *  8. An apply is a few ms of B-tree updates and a larger sync, and the
 *     waiters of the commit that carries it wait for all of it. So a
 *     commit someone waits for (store_commit_waited) does not apply when
 *     only the soft bounds (apply_batches, apply_bytes) say so: it puts
 *     the apply off (apply_owed) until STORE_APPLY_HARD times those
 *     bounds, or any other cause of note 5 (extents, INODE_UNLINK, a
 *     broken overlay, the retention bounds), makes it due; a commit no
 *     one waits for, or store_apply_owed_run (the committer, while no
 *     one waits), applies it. apply_batches 1 (apply at every commit) is
 *     never put off. So the overlay and the replay after a crash stay
 *     within STORE_APPLY_HARD times the soft bounds, and so does the
 *     apply that a waited-for commit does have to carry.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "bytes.h"
#include "clock.h"
#include "store.h"
#include "store_impl.h"
#include "store_overlay.h"

/* A batch's value goes in chunks of LOG_CHUNK bytes, the rest in chunks
 * of at most LOG_CHUNK_SMALL (note 1). LOG_CHUNK is a run of exactly 16
 * overflow pages of 4 KiB (less LMDB's 16-byte page header): every run
 * the log frees has the length of every run it asks for. LOG_CHUNK_SMALL
 * is the largest value LMDB keeps in a leaf page of 4 KiB with a 12-byte
 * key (its me_nodemax, 2038, less the node header and key): no overflow
 * page, two chunks a page. Measured (2 clients of create/unlink churn,
 * --log-retention-bytes 4M, 10 s), log_ns per record: 8 ns with these,
 * 22 ns with chunks of LOG_CHUNK_SMALL only (thousands of puts a large
 * batch), 13.5 ns with a value a batch; data.mdb levelled off with both
 * kinds of chunks. */
#ifndef LOG_CHUNK_SMALL
#define LOG_CHUNK_SMALL 2018u
#endif
#ifndef LOG_CHUNK
#define LOG_CHUNK (16u * 4096u - 16u)
#endif
_Static_assert(LOG_CHUNK_SMALL >= LOG_HDR, "chunk 0 holds the header whole");

/* A commit someone waits for puts an apply off up to this many times the
 * soft bounds (note 8). */
#define STORE_APPLY_HARD 2u

/* Free space below which a failed write is taken for a full file system. */
#define STORE_SPACE_LOW (1ull << 20)

_Static_assert(LOG_MAGIC > JR_INODE_UNLINK, "the log magic is no journal record type");

/* Delete every chunk of batch seq, which cur stands on (k, v); *bytes
 * less their sizes. An LMDB code. */
static int log_del_batch(MDB_cursor *cur, uint64_t seq, MDB_val *k, MDB_val *v, uint64_t *bytes)
{
	uint8_t key[8];
	uint64_t s2;
	uint32_t c;
	int rc = 0;
	put_be64(key, seq);
	while (rc == 0 && store_log_key(k, &s2, &c) && s2 == seq) {
		size_t sz = v->mv_size;
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			return rc;
		*bytes -= sz < *bytes ? sz : *bytes;
		*k = (MDB_val){ 8, key };
		rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
	}
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* How long after its batch came of age an idle log is trimmed at least
 * (store_log_trim_due_ns). */
#define STORE_TRIM_SLACK_NS 1000000000ull

/* Retention (note 2), after batch last was appended (the log's last:
 * keys only grow): drop the oldest batches past the bounds, each with all
 * its chunks, never batch keep or one after it. *bytes is the log's size,
 * updated; *dropped counts. An LMDB code. */
static int store_trim_log(struct store *s, MDB_txn *txn, uint64_t last, uint64_t keep,
                          uint64_t now_ns, uint64_t *bytes, uint64_t *dropped)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t old = s->log_max_age_ns && now_ns > s->log_max_age_ns ?
	               now_ns - s->log_max_age_ns : 0;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
		uint64_t t, seq;
		uint32_t c;
		const uint8_t *r;
		size_t n;
		if (!store_log_key(&k, &seq, &c) || seq >= keep)
			break;
		/* The header is in chunk 0 (a chunk 0 gone alone is no batch). */
		if (c != 0 || !store_log_value(&v, &t, &r, &n))
			t = 0;
		uint64_t entries = last - seq + 1;
		if (!(s->log_retention && entries > s->log_retention) &&
		    !(s->log_max_bytes && *bytes > s->log_max_bytes) && !(old && t < old))
			break;
		rc = log_del_batch(cur, seq, &k, &v, bytes);
		if (rc)
			break;
		(*dropped)++;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Should the commit of b (at now_ns) apply the log to the tables (note
 * 5)? Also when retention would otherwise have to drop a
 * batch not applied (note 6): the batches not applied stay within each
 * bound. waited: someone waits for the commit, and the soft bounds are
 * STORE_APPLY_HARD times larger; *owed says that they alone would have
 * made it due (note 8). The record types come from b->types, not from
 * a pass over the records. */
static bool store_apply_due(struct store *s, const struct journal_batch *b, uint64_t now_ns,
                            bool waited, bool *owed)
{
	uint64_t n = b->seq - s->applied_seq;         /* batches not applied, b included */
	uint64_t bytes = s->pending_bytes + b->len + n * LOG_HDR;
	unsigned k = waited && s->apply_batches > 1 ? STORE_APPLY_HARD : 1;
	bool soft = n >= s->apply_batches || bytes >= s->apply_bytes;
	bool due = s->ovl_broken || n >= k * s->apply_batches || bytes >= k * s->apply_bytes ||
	           (s->log_retention && n >= s->log_retention) ||
	           (s->log_max_bytes && bytes >= s->log_max_bytes) ||
	           (s->log_max_age_ns && n > 1 && now_ns - s->pending_since_ns >= s->log_max_age_ns);
	if (b->types & (1u << JR_EXTENT_SET | 1u << JR_EXTENT_PUNCH | 1u << JR_INODE_UNLINK))
		due = true;
	*owed = soft && !due;
	return due;
}

/* Record (or clear, id 0) the commit that applies the log, before its
 * transaction commits (store_read.c note 1b). */
static void store_mark_apply(struct store *s, uint64_t id)
{
	atomic_store(&s->apply_txnid, id);
}

/* Write batch b to the log in txn, in chunks (note 1): header and
 * records as one stream cut in LOG_CHUNK bytes, the rest in pieces of at
 * most LOG_CHUNK_SMALL; *bytes (the log's size) updated. What an earlier
 * try of b left (a retry) goes first. An LMDB code. */
static int store_log_put(struct store *s, MDB_txn *txn, const struct journal_batch *b,
                         uint64_t now, uint64_t *bytes)
{
	MDB_cursor *cur;
	uint8_t hdr[LOG_HDR], key[LOG_KEY];
	MDB_val k = { 8, key }, v;
	uint64_t seq;
	uint32_t c;
	int rc = mdb_cursor_open(txn, s->log, &cur);
	if (rc)
		return rc;
	put_be64(key, b->seq);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0)
		rc = log_del_batch(cur, b->seq, &k, &v, bytes);
	/* Keys only grow: append, but after a batch later than b (never
	 * written so) a plain put. */
	unsigned fl = MDB_RESERVE | MDB_APPEND;
	if (!rc && (rc = mdb_cursor_get(cur, &k, &v, MDB_LAST)) == 0 &&
	    (!store_log_key(&k, &seq, &c) || seq >= b->seq))
		fl = MDB_RESERVE;
	rc = rc == MDB_NOTFOUND ? 0 : rc;

	memset(hdr, 0, LOG_HDR);
	hdr[0] = LOG_MAGIC;
	hdr[1] = LOG_VERSION;
	put_le32(hdr + 4, b->nrecs);
	put_le64(hdr + 8, now);
	put_le64(hdr + 16, b->next_ino);
	size_t total = LOG_HDR + b->len, off = 0;
	for (uint32_t i = 0; !rc && off < total; i++) {
		size_t n = total - off >= LOG_CHUNK ? LOG_CHUNK :
		           total - off < LOG_CHUNK_SMALL ? total - off : LOG_CHUNK_SMALL;
		store_log_key_put(key, b->seq, i);
		k = (MDB_val){ LOG_KEY, key };
		v = (MDB_val){ n, NULL };
		rc = mdb_cursor_put(cur, &k, &v, fl);
		if (rc)
			break;
		/* The stream is hdr, then b->buf. */
		uint8_t *d = v.mv_data;
		size_t done = 0;
		if (off < LOG_HDR) {
			done = LOG_HDR - off < n ? LOG_HDR - off : n;
			memcpy(d, hdr + off, done);
		}
		if (n > done)
			memcpy(d + done, b->buf + (off + done - LOG_HDR), n - done);
		off += n;
	}
	mdb_cursor_close(cur);
	if (!rc)
		*bytes += total;
	return rc;
}

/* One attempt at the commit transaction: 0 or a negative errno; *full is
 * set when it failed on MDB_MAP_FULL, *applied when the tables took every
 * batch up to b. Nothing is written on failure. b NULL: apply the batches
 * committed but not applied, and trim the log (note 2). */
static int store_commit_txn(struct store *s, const struct journal_batch *b, bool waited,
                            struct store_commit_times *t, bool *full, bool *applied,
                            bool *owed, bool *added, int *add_err)
{
	MDB_txn *txn;
	uint8_t ls[8], ni[8], as[8];
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), t1;
	uint64_t upto = b ? b->seq : s->last_seq;
	*full = false;
	*applied = false;
	*owed = false;
	*added = false;
	*add_err = 0;
	/* A batch the log could not be read back from is not written. */
	if (b && journal_check_frames(b) < 0)
		return -EPROTO;
	int derr = 0, err, rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc)
		return store_errno(rc);

	uint64_t now = clock_ns(CLOCK_REALTIME);
	uint64_t bytes = s->log_bytes, dropped = 0;
	if (b) {
		rc = store_log_put(s, txn, b, now, &bytes);
		if (rc)
			goto fail;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	t->log_ns = t1 - t0;
	t0 = t1;

	*applied = !b || store_apply_due(s, b, now, waited, owed);
	if (*applied) {
		/* The batches before b from the overlay, then b itself, in
		 * order; from the log when the overlay missed something. */
		if (s->ovl_broken)
			rc = store_apply_log(s, txn, s->applied_seq + 1, upto, &derr);
		else if (!(rc = store_apply_ovl(s, txn)) && b)
			rc = store_apply_batch(s, txn, b, &derr);
		if (rc)
			goto fail;
		/* meta as of the apply; between two, the log's last batch
		 * says more (note 5). */
		put_le64(as, upto);
		put_le64(ls, upto);
		put_le64(ni, b ? b->next_ino : s->next_ino);
		rc = meta_put(txn, s->meta, "applied_seq", as, 8);
		if (!rc)
			rc = meta_put(txn, s->meta, "last_seq", ls, 8);
		if (!rc)
			rc = meta_put(txn, s->meta, "next_ino", ni, 8);
		if (rc)
			goto fail;
	}
	/* Retention keeps every batch not applied (note 6); an apply alone
	 * (b NULL) trims too, which is how an idle log ages (note 2). */
	rc = store_trim_log(s, txn, upto, *applied ? upto : s->applied_seq + 1, now, &bytes,
	                    &dropped);
	if (rc)
		goto fail;
	t1 = clock_ns(CLOCK_MONOTONIC);
	t->apply_ns = t1 - t0;
	t0 = t1;

	/* An apply: say so before it can be seen (store_read.c note 1b). */
	if (*applied)
		store_mark_apply(s, mdb_txn_id(txn));
	/* Left alone, the tables leave b to the overlay: added while the
	 * commit syncs (store_ovladd.c). */
	bool posted = !*applied && b && store_ovladd_post(s, b);
	if (b && s->sync_fault_n) {     /* store_fail_syncs */
		s->sync_fault_n--;
		derr = s->sync_fault_err;
		if (posted)
			store_ovladd_wait(s);   /* the harder case: the batch added */
		mdb_txn_abort(txn);
		rc = MDB_PANIC;
	} else {
		rc = mdb_txn_commit(txn);   /* frees txn, committed or not */
	}
	if (rc && *applied)
		store_mark_apply(s, 0);     /* not committed: the id is used again */
	if (posted)
		*add_err = store_ovladd_collect(s, added);
	t->sync_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	if (rc == 0) {
		s->log_bytes = bytes;
		s->log_trimmed += dropped;
	}
	goto out;

fail:
	mdb_txn_abort(txn);
out:
	err = derr ? derr : store_errno(rc);
	*full = rc == MDB_MAP_FULL;
	if (err)
		*applied = false;
	return err;
}

/* After a transaction of store_commit_txn committed: the overlay (unless
 * the adder thread added b already: added, with its result add_err) and
 * the figures follow (note 5). -ENOMEM when b's changes could not all be
 * recorded in the overlay: ovl_broken is set then, and every read applies
 * the log first. Called with commit_lock held. */
static int store_committed(struct store *s, const struct journal_batch *b, bool applied,
                           bool owed, bool added, int add_err)
{
	int err = 0;
	/* Note 8: an apply clears what was owed; a commit put off adds to it. */
	if (applied)
		atomic_store(&s->apply_owed, false);
	else if (owed)
		atomic_store(&s->apply_owed, true);
	pthread_rwlock_wrlock(&s->ovl_lock);
	if (applied) {
		ovl_reset(&s->ovl);
		s->ovl_broken = false;
		s->tables_txnid = atomic_load(&s->apply_txnid); /* store_read.c note 1b */
		atomic_store(&s->apply_txnid, 0);
		s->applied_seq = b ? b->seq : s->last_seq;
		s->pending_bytes = 0;
	} else {
		/* Added during the sync (add_err), or now. */
		err = added ? add_err : ovl_add_batch(&s->ovl, b->buf, b->len);
		if (err)
			s->ovl_broken = true;
		if (s->applied_seq == s->last_seq)
			s->pending_since_ns = clock_ns(CLOCK_REALTIME);
		s->pending_bytes += b->len;
	}
	if (b) {
		s->last_seq = b->seq;
		s->next_ino = b->next_ino;
	}
	atomic_store_explicit(&s->unapplied, s->applied_seq < s->last_seq, memory_order_release);
	pthread_rwlock_unlock(&s->ovl_lock);
	return err;
}

/* A commit that failed with -EIO (LMDB's word for a short write) on a file
 * system with (almost) no space left failed for want of space (note 6). */
static int store_space_errno(struct store *s, int err)
{
	struct statvfs sv;
	int fd;
	if (err != -EIO || mdb_env_get_fd(s->env, &fd) != 0 || fstatvfs(fd, &sv) != 0)
		return err;
	return (uint64_t)sv.f_bavail * sv.f_frsize < STORE_SPACE_LOW ? -ENOSPC : err;
}

/* Double the map, up to map_size_max; -ENOSPC at the limit. Called with no
 * transaction of ours open. */
static int store_grow(struct store *s)
{
	if (s->map_size >= s->map_size_max)
		return -ENOSPC;
	uint64_t want = s->map_size > s->map_size_max / 2 ? s->map_size_max : s->map_size * 2;
	pthread_rwlock_wrlock(&s->resize);
	int rc = mdb_env_set_mapsize(s->env, (size_t)want);
	if (rc == 0) {
		MDB_envinfo ei;
		s->map_size = mdb_env_info(s->env, &ei) == 0 ? ei.me_mapsize : want;
	}
	pthread_rwlock_unlock(&s->resize);
	return store_errno(rc);
}

/* store_commit_txn until it does not fail on a full map; commit_lock held. */
static int store_commit_locked(struct store *s, const struct journal_batch *b, bool waited,
                               struct store_commit_times *tt)
{
	int err;
	for (;;) {
		bool full, applied, owed, added;
		int add_err;
		pthread_rwlock_rdlock(&s->resize);
		err = store_commit_txn(s, b, waited, tt, &full, &applied, &owed, &added, &add_err);
		pthread_rwlock_unlock(&s->resize);
		if (err && added)
			store_ovladd_failed(s); /* b is in the overlay, not in the log */
		if (!err) {
			err = store_committed(s, b, applied, owed, added, add_err);
			if (!err)
				break;
			b = NULL;               /* the overlay failed: apply it all now */
			continue;
		}
		if (!full)
			return store_space_errno(s, err);
		uint64_t g0 = clock_ns(CLOCK_MONOTONIC);
		err = store_grow(s);
		tt->grow_ns += clock_ns(CLOCK_MONOTONIC) - g0;
		if (err)
			break;
	}
	return err;
}

static int store_commit_as(struct store *s, const struct journal_batch *b, bool waited,
                           struct store_commit_times *t)
{
	struct store_commit_times tt = {0};
	int err;

	pthread_mutex_lock(&s->commit_lock);
	if (s->fault_n > 0) {
		if (s->fault_n != UINT_MAX)
			s->fault_n--;
		err = s->fault_err;
	} else {
		err = store_commit_locked(s, b, waited, &tt);
	}
	pthread_mutex_unlock(&s->commit_lock);
	if (t)
		*t = tt;
	return err;
}

int store_commit(struct store *s, const struct journal_batch *b, struct store_commit_times *t)
{
	return store_commit_as(s, b, false, t);
}

int store_commit_waited(struct store *s, const struct journal_batch *b,
                        struct store_commit_times *t)
{
	return store_commit_as(s, b, true, t);
}

uint64_t store_log_trim_due_ns(struct store *s)
{
	if (!s->log_max_age_ns || s->readonly)
		return 0;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t seq, t, due = 0;
	uint32_t c;
	const uint8_t *r;
	size_t n;
	if (store_rtxn_begin(s, &txn) < 0)
		return 0;
	if (mdb_cursor_open(txn, s->log, &cur) == 0) {
		/* The last batch always stays; a headless one goes at once. */
		MDB_val lk, lv;
		uint64_t last;
		uint32_t lc;
		if (mdb_cursor_get(cur, &lk, &lv, MDB_LAST) == 0 && store_log_key(&lk, &last, &lc) &&
		    mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0 && store_log_key(&k, &seq, &c) &&
		    seq < last)
			due = c == 0 && store_log_value(&v, &t, &r, &n) && t ? t + s->log_max_age_ns
			                                                     : 1;
		/* A 100th of the bound later (1 s at least): the batches of a
		 * stretch go in one transaction. */
		if (due > 1)
			due += s->log_max_age_ns / 100 > STORE_TRIM_SLACK_NS ? s->log_max_age_ns / 100
			                                                       : STORE_TRIM_SLACK_NS;
		mdb_cursor_close(cur);
	}
	store_rtxn_end(s, txn);
	return due;
}

int store_trim_aged(struct store *s)
{
	struct store_commit_times tt = {0};
	int err = 0;
	uint64_t due = store_log_trim_due_ns(s);
	if (!due || due > clock_ns(CLOCK_REALTIME))
		return 0;
	pthread_mutex_lock(&s->commit_lock);
	uint64_t trimmed = s->log_trimmed;
	err = store_commit_locked(s, NULL, false, &tt);
	trimmed = s->log_trimmed - trimmed;
	pthread_mutex_unlock(&s->commit_lock);
	return err ? err : (int)(trimmed > INT_MAX ? INT_MAX : trimmed);
}

int store_apply_now(struct store *s)
{
	struct store_commit_times tt = {0};
	int err = 0;
	if (!atomic_load_explicit(&s->unapplied, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&s->commit_lock);
	if (s->applied_seq < s->last_seq)
		err = store_commit_locked(s, NULL, false, &tt);
	pthread_mutex_unlock(&s->commit_lock);
	return err;
}

bool store_apply_owed(struct store *s)
{
	return atomic_load(&s->apply_owed);
}

int store_apply_owed_run(struct store *s)
{
	if (!store_apply_owed(s))
		return 0;
	int err = store_apply_now(s);
	if (err == 0)
		atomic_store(&s->apply_owed, false); /* also when nothing was left */
	return err < 0 ? err : 1;
}

void store_fail_commits(struct store *s, unsigned n, int err)
{
	assert(n == 0 || err < 0);
	pthread_mutex_lock(&s->commit_lock);
	s->fault_n = n;
	s->fault_err = err;
	pthread_mutex_unlock(&s->commit_lock);
}

void store_fail_syncs(struct store *s, unsigned n, int err)
{
	assert(n == 0 || err < 0);
	pthread_mutex_lock(&s->commit_lock);
	s->sync_fault_n = n;
	s->sync_fault_err = err;
	pthread_mutex_unlock(&s->commit_lock);
}
