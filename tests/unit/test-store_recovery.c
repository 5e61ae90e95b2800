/* test-store_recovery.c - unit tests of the log-first commit (server/
 * store_log.c note 5, store_overlay.c) across a store_open: recovery
 * after a crash that left batches unapplied, a read-only walk that merges
 * them, the format 1 store upgraded in place, and log retention that
 * applies batches rather than drop them. */
#include <errno.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal.h"
#include "store.h"
#include "store_fixture.h"

static int setup(void **state)
{
	return store_fixture_setup(state, "test-store_recovery");
}

static int teardown(void **state)
{
	return store_fixture_teardown(state);
}

/* In a child: commit `batches` batches of 4 creates that are not applied
 * (apply_batches 1000), then die without store_close, as a crash would. */
static void crash_after_commits(const char *dir, unsigned batches)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store_opts o = { .apply_batches = 1000 };
		struct store *s;
		struct journal_batch b;
		uint64_t ino = 2;
		if (store_open(dir, &o, &s) != 0)
			_exit(2);
		journal_batch_init(&b, 0);
		for (unsigned seq = 1; seq <= batches; seq++) {
			create_batch(&b, seq, 4, &ino);
			if (store_commit(s, &b, NULL) != 0)
				_exit(3);
		}
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* After a crash that left batches unapplied, store_open replays the log:
 * the tables hold every committed batch, applied_seq is last_seq. */
static void test_recovery_replays(void **state)
{
	struct fixture *f = *state;
	crash_after_commits(f->dir, 5);
	struct store *s = open_ok(f->dir, NULL);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 5);
	assert_int_equal(m.applied_seq, 5);
	assert_int_equal(m.next_ino, 22);
	struct names nm = { .n = 0 };
	assert_int_equal(store_scan_dir_after(s, 1, "f000000000000013", 16, names_cb, &nm), 0);
	assert_int_equal(nm.n, 8);                      /* f14 .. f21 */
	assert_string_equal(nm.v[7], "f000000000000021");
	struct mc_inode_rec r;
	assert_int_equal(store_get_inode(s, 21, &r, NULL, NULL), 0);
	assert_int_equal(store_get_inode(s, 1, &r, NULL, NULL), 0);
	assert_int_equal(r.size, 22);
	store_close(s);
}

struct walk_count {
	unsigned inodes, dentries;
	uint64_t last_ino;
	bool ordered;
};

static int walk_cb(void *arg, const struct store_rec *r)
{
	struct walk_count *w = arg;
	if (r->kind == STORE_REC_INODE) {
		if (w->inodes && r->ino <= w->last_ino)
			w->ordered = false;
		w->last_ino = r->ino;
		w->inodes++;
	} else if (r->kind == STORE_REC_DENTRY) {
		w->dentries++;
	} else {
		return -EIO;
	}
	return 0;
}

/* A read-only open (fsck --offline) cannot apply: the walk merges the
 * batches not applied, in key order, and nothing is written. */
static void test_readonly_walk_merges(void **state)
{
	struct fixture *f = *state;
	crash_after_commits(f->dir, 3);
	struct store_opts ro = { .existing = true };
	struct store *s = open_ok(f->dir, &ro);
	struct walk_count w = { .ordered = true };
	assert_int_equal(store_walk(s, walk_cb, &w), 0);
	assert_int_equal(w.inodes, 1 + 12);             /* the root and 12 files */
	assert_int_equal(w.dentries, 12);
	assert_true(w.ordered);
	struct mc_inode_rec r;
	assert_int_equal(store_get_inode(s, 13, &r, NULL, NULL), 0);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.applied_seq, 0);
	assert_int_equal(m.last_seq, 3);
	store_close(s);
	/* Still unapplied on disk: a writable open applies them. */
	s = open_ok(f->dir, NULL);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.applied_seq, 3);
	store_close(s);
}

/* Rewrite meta as format 1 had it: no applied_seq. */
static void make_format1(const char *dir)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta;
	uint8_t f[4] = { 1, 0, 0, 0 };
	MDB_val k = { 6, "format" }, v = { 4, f }, ak = { 11, "applied_seq" };
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 5), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &meta), 0);
	assert_int_equal(mdb_put(txn, meta, &k, &v, 0), 0);
	assert_int_equal(mdb_del(txn, meta, &ak, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* Rewrite log[seq] with b's records behind a version 1 header (16 bytes:
 * no next_ino) under an 8-byte key, as format 1 wrote it: the batch's
 * chunks go. */
static void v1_log_value(const char *dir, uint64_t seq, const struct journal_batch *b)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi log;
	uint8_t key[8], val[16 + 4096];
	assert_true(b->len <= 4096);
	for (int i = 0; i < 8; i++)
		key[i] = (uint8_t)(seq >> (56 - 8 * i));
	memset(val, 0, 16);
	val[0] = 0xC1;
	val[1] = 1;
	val[4] = (uint8_t)b->nrecs;
	val[8] = 9;                                     /* commit time 9 ns */
	memcpy(val + 16, b->buf, b->len);
	MDB_val k = { 8, key }, v = { 16 + b->len, val };
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 5), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "log", 0, &log), 0);
	MDB_cursor *cur;
	MDB_val ck = k, cv;
	assert_int_equal(mdb_cursor_open(txn, log, &cur), 0);
	while (mdb_cursor_get(cur, &ck, &cv, MDB_SET_RANGE) == 0 && ck.mv_size == 12 &&
	       memcmp(ck.mv_data, key, 8) == 0) {
		assert_int_equal(mdb_cursor_del(cur, 0), 0);
		ck = k;
	}
	mdb_cursor_close(cur);
	assert_int_equal(mdb_put(txn, log, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static int log_cb(void *arg, uint64_t seq, uint64_t time_ns, const uint8_t *recs, size_t len)
{
	size_t pos = 0, n = 0;
	struct journal_rec r;
	(void)seq;
	while (journal_next(recs, len, &pos, &r) == 1)
		n++;
	*(size_t *)arg = time_ns == 9 && pos == len ? n : 0;
	return 0;
}

/* A format 1 store (every batch applied at its commit, log headers of
 * version 1) opens: read-only as it is, writable upgraded to format 2 with applied_seq = last_seq. A
 * format 2 store without applied_seq is corrupt (-EINVAL). */
static void test_format1_upgraded(void **state)
{
	struct fixture *f = *state;
	struct store_opts eager = { .apply_batches = 1 };
	struct store *s = open_ok(f->dir, &eager);
	struct journal_batch b;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	create_batch(&b, 1, 4, &ino);
	commit_ok(s, &b);
	store_close(s);
	make_format1(f->dir);
	v1_log_value(f->dir, 1, &b);

	struct store_opts ro = { .existing = true };
	struct store_meta m;
	s = open_ok(f->dir, &ro);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.format, 1);
	assert_int_equal(m.applied_seq, 1);
	assert_int_equal(m.next_ino, 6);
	size_t nrecs = 0;
	assert_int_equal(store_scan_log(s, 1, NULL, log_cb, &nrecs), 0);
	assert_int_equal(nrecs, 9);                     /* 4 files, 2 records each, the root */
	store_close(s);

	s = open_ok(f->dir, NULL);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.format, STORE_FORMAT);
	assert_int_equal(m.last_seq, 1);
	assert_int_equal(m.applied_seq, 1);
	create_batch(&b, 2, 4, &ino);
	commit_ok(s, &b);
	uint64_t i;
	assert_int_equal(store_get_dentry(s, 1, "f000000000000009", 16, &i, NULL), 0);
	store_close(s);

	/* Format 2 whose applied_seq is missing. */
	make_format1(f->dir);
	{
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi meta;
		uint8_t fm[4] = { 2, 0, 0, 0 };
		MDB_val k = { 6, "format" }, v = { 4, fm };
		assert_int_equal(mdb_env_create(&env), 0);
		assert_int_equal(mdb_env_set_maxdbs(env, 5), 0);
		assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
		assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
		assert_int_equal(mdb_dbi_open(txn, "meta", 0, &meta), 0);
		assert_int_equal(mdb_put(txn, meta, &k, &v, 0), 0);
		assert_int_equal(mdb_txn_commit(txn), 0);
		mdb_env_close(env);
	}
	assert_int_equal(store_open(f->dir, NULL, &s), -EINVAL);
	journal_batch_free(&b);
}

/* Retention never drops a batch that is not applied: with a bound of 2
 * batches and applies due every 1000, the log still keeps to the bound
 * (the store applies early instead), and a reopen finds everything. */
static void test_retention_applies_first(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000, .log_retention = 2 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	struct store_info in;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	for (uint64_t seq = 1; seq <= 9; seq++) {
		create_batch(&b, seq, 2, &ino);
		commit_ok(s, &b);
		assert_int_equal(store_info(s, &in), 0);
		assert_true(in.log_entries <= 2);
	}
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_true(m.applied_seq >= 8);
	store_close(s);
	s = open_ok(f->dir, &o);
	struct mc_inode_rec r;
	for (uint64_t i = 2; i < ino; i++)
		assert_int_equal(store_get_inode(s, i, &r, NULL, NULL), 0);
	store_close(s);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_recovery_replays, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly_walk_merges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_format1_upgraded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_applies_first, setup, teardown),
	};
	return cmocka_run_group_tests_name("store_recovery", tests, NULL, NULL);
}
