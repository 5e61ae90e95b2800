/* test-store_meta.c - unit tests of the LMDB store (server/store.c) beside
 * its tables: meta kept across reopens, the log kept to its retention
 * bound, and what an open or a commit refuses (a newer format, garbled
 * meta, another program's environment, a file that is not LMDB, a batch
 * that does not decode). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal.h"
#include "store.h"
#include "store_fixture.h"

static int setup(void **state)
{
	return store_fixture_setup(state, "test-store_meta");
}

static int teardown(void **state)
{
	return store_fixture_teardown(state);
}

/* Open the environment directly with LMDB (for tests that tamper with it). */
static void raw_open(const char *dir, MDB_env **env, MDB_txn **txn)
{
	assert_int_equal(mdb_env_create(env), 0);
	assert_int_equal(mdb_env_set_maxdbs(*env, 8), 0);
	assert_int_equal(mdb_env_set_mapsize(*env, 64ull << 20), 0);
	assert_int_equal(mdb_env_open(*env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(*env, NULL, 0, txn), 0);
}

static void raw_meta_put(MDB_txn *txn, const char *key, const void *val, size_t len)
{
	MDB_dbi dbi;
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
}

static void raw_close(MDB_env *env, MDB_txn *txn)
{
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void test_meta_persists(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	for (uint64_t seq = 1; seq <= 3; seq++) {
		journal_batch_reset(&b, seq);
		b.next_ino = 10 * seq;
		if (seq == 2)
			assert_int_equal(journal_del_inode(&b, 77), 0);   /* others are empty */
		commit_ok(s, &b);
	}
	struct store_meta m, m0;
	assert_int_equal(store_get_meta(s, &m0), 0);
	assert_int_equal(m0.last_seq, 3);
	assert_int_equal(m0.next_ino, 30);
	store_close(s);
	s = open_ok(f->dir, NULL);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.format, STORE_FORMAT);
	assert_int_equal(m.last_seq, 3);
	assert_int_equal(m.next_ino, 30);
	assert_memory_equal(m.uuid, m0.uuid, 16);
	store_close(s);
	journal_batch_free(&b);
}

struct log_seen {
	unsigned n;
	uint64_t seq[16], time_ns[16], first_ino[16];
	unsigned nrecs[16];
	enum journal_type first_type[16];
};

static int log_collect(void *arg, uint64_t seq, uint64_t time_ns, const uint8_t *recs,
                       size_t len)
{
	struct log_seen *ls = arg;
	if (ls->n == 16)
		return -E2BIG;
	struct journal_rec r;
	size_t pos = 0;
	unsigned k = ls->n++;
	ls->seq[k] = seq;
	ls->time_ns[k] = time_ns;
	while (journal_next(recs, len, &pos, &r) == 1) {
		if (ls->nrecs[k]++ == 0) {
			ls->first_type[k] = r.type;
			ls->first_ino[k] = r.ino;
		}
	}
	return pos == len ? 0 : -EPROTO;
}

static void test_log_retention(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .log_retention = 3 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	struct store_info info;
	for (uint64_t seq = 1; seq <= 10; seq++) {
		journal_batch_reset(&b, seq);
		b.next_ino = 2;
		assert_int_equal(journal_del_inode(&b, seq + 1000), 0);
		commit_ok(s, &b);
		assert_int_equal(store_info(s, &info), 0);
		assert_int_equal(info.log_entries, seq < 3 ? seq : 3);
	}
	store_close(s);

	/* Exactly batches 8, 9, 10 remain, each holding its own records. */
	s = open_ok(f->dir, &o);
	struct log_seen seen = { 0 };
	uint64_t first = 0;
	assert_int_equal(store_scan_log(s, 0, &first, log_collect, &seen), 0);
	assert_int_equal(first, 8);
	assert_int_equal(seen.n, 3);
	for (unsigned i = 0; i < seen.n; i++) {
		assert_int_equal(seen.seq[i], 8 + i);
		assert_true(seen.time_ns[i] > 0);
		assert_int_equal(seen.first_type[i], JR_INODE_DEL);
		assert_int_equal(seen.first_ino[i], seen.seq[i] + 1000);
		assert_int_equal(seen.nrecs[i], 1);
	}
	store_close(s);
	journal_batch_free(&b);
}

static void test_newer_format_refused(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	store_close(s);

	MDB_env *env;
	MDB_txn *txn;
	uint8_t fmt[4] = { (uint8_t)(STORE_FORMAT + 1), 0, 0, 0 };
	raw_open(f->dir, &env, &txn);
	raw_meta_put(txn, "format", fmt, 4);
	raw_close(env, txn);

	s = NULL;
	assert_int_equal(store_open(f->dir, NULL, &s), -EPROTONOSUPPORT);
	assert_null(s);

	/* The current format opens again. */
	fmt[0] = STORE_FORMAT;
	raw_open(f->dir, &env, &txn);
	raw_meta_put(txn, "format", fmt, 4);
	raw_close(env, txn);
	s = open_ok(f->dir, NULL);
	store_close(s);
}

static void test_garbled_meta_refused(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	store_close(s);

	/* A value of the wrong size. */
	MDB_env *env;
	MDB_txn *txn;
	raw_open(f->dir, &env, &txn);
	raw_meta_put(txn, "next_ino", "abc", 3);
	raw_close(env, txn);
	assert_int_equal(store_open(f->dir, NULL, &s), -EINVAL);

	/* A missing key. */
	raw_open(f->dir, &env, &txn);
	MDB_dbi dbi;
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	MDB_val k = { 6, "format" };
	assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	raw_close(env, txn);
	assert_int_equal(store_open(f->dir, NULL, &s), -EINVAL);

	/* Another program's non-empty LMDB environment. */
	char other[320];
	snprintf(other, sizeof(other), "%s/other", f->tmp);
	assert_int_equal(mkdir(other, 0700), 0);
	raw_open(other, &env, &txn);
	MDB_dbi main_dbi;
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &main_dbi), 0);
	MDB_val k2 = { 3, "key" }, v2 = { 5, "value" };
	assert_int_equal(mdb_put(txn, main_dbi, &k2, &v2, 0), 0);
	raw_close(env, txn);
	assert_int_equal(store_open(other, NULL, &s), -EINVAL);

	/* A data file that is not LMDB at all. */
	char junk[320], data[340];
	snprintf(junk, sizeof(junk), "%s/junk", f->tmp);
	snprintf(data, sizeof(data), "%s/data.mdb", junk);
	assert_int_equal(mkdir(junk, 0700), 0);
	int fd = open(data, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	char garbage[16384];
	memset(garbage, 0x5a, sizeof(garbage));
	assert_int_equal(write(fd, garbage, sizeof(garbage)), (ssize_t)sizeof(garbage));
	close(fd);
	s = NULL;
	assert_int_equal(store_open(junk, NULL, &s), -EINVAL);
	assert_null(s);
}

/* A batch whose bytes do not decode is refused whole. */
static void test_commit_garbled_batch(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct journal_batch b;
	journal_batch_init(&b, 1);
	b.next_ino = 50;
	assert_int_equal(journal_put_dentry(&b, 1, "good", 4, 2, DT_REG), 0);
	assert_int_equal(journal_del_inode(&b, 9), 0);
	b.buf[b.len - 9] = 0x7f;      /* the second record's body_len */
	assert_int_equal(store_commit(s, &b, NULL), -EPROTO);
	uint64_t ino;
	uint8_t dt;
	assert_int_equal(store_get_dentry(s, 1, "good", 4, &ino, &dt), -ENOENT);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 0);
	assert_int_equal(m.next_ino, 2);
	struct store_info info;
	assert_int_equal(store_info(s, &info), 0);
	assert_int_equal(info.log_entries, 0);
	store_close(s);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_meta_persists, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_format_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbled_meta_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_garbled_batch, setup, teardown),
	};
	return cmocka_run_group_tests_name("store_meta", tests, NULL, NULL);
}
