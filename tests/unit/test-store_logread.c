/* test-store_logread.c - unit tests of the log in chunks (server/store_log.c
 * note 1, server/store_logread.c): a batch of many chunks read back
 * exactly by the reader, the replay after a crash and the apply; retention
 * removing every chunk of a batch and keeping the byte count exact; a
 * commit that grows the map and tries again writing its chunks once; a
 * store whose log was written a batch a value opening, replaying and
 * reading, with chunked batches after it; and data.mdb levelling off
 * under churn of large batches of varying sizes. */
#include <dirent.h>
#include <errno.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_fixture.h"

/* The chunk sizes of store_log.c (note 1). */
#define CHUNK       (16 * 4096 - 16)
#define CHUNK_SMALL 2018

static int setup(void **state)
{
	return store_fixture_setup(state, "test-store_logread");
}

static int teardown(void **state)
{
	return store_fixture_teardown(state);
}

/* Batch seq: n files made in directory 1, names from base; with churn
 * each is removed again in the same batch. */
static void files_batch(struct journal_batch *b, uint64_t seq, unsigned base, unsigned n,
                        bool churn)
{
	char name[64];
	journal_batch_reset(b, seq);
	for (unsigned i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "file-with-a-longish-name-%08u", base + i);
		uint64_t ino = 1000 + base + i;
		struct mc_inode_rec r = { .ino = ino, .mode = S_IFREG | 0644, .nlink = 1 };
		if (!churn)
			assert_int_equal(journal_put_inode(b, &r, NULL, 0), 0);
		assert_int_equal(journal_put_dentry(b, 1, name, (size_t)len, ino, DT_REG), 0);
		if (churn)
			assert_int_equal(journal_del_dentry(b, 1, name, (size_t)len), 0);
	}
	b->next_ino = 1000 + base + n;
}

static void check_files(struct store *s, unsigned base, unsigned n)
{
	char name[64];
	for (unsigned i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "file-with-a-longish-name-%08u", base + i);
		uint64_t ino = 0;
		int rc = store_get_dentry(s, 1, name, (size_t)len, &ino, NULL);
		if (rc != 0 || ino != 1000 + base + i)
			fail_msg("%s: %d, inode %llu", name, rc, (unsigned long long)ino);
		struct mc_inode_rec r;
		assert_int_equal(store_get_inode(s, ino, &r, NULL, NULL), 0);
	}
}

/* What the log's LMDB table holds, read raw after store_close. */
struct raw_log {
	uint64_t entries, chunked, whole, bytes, overflow_pages;
	uint64_t first, last;
	bool ordered;          /* every batch's chunks 0, 1, ... without a hole */
};

static void raw_log(const char *dir, struct raw_log *out)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi log;
	MDB_cursor *cur;
	MDB_val k, v;
	MDB_stat st;
	memset(out, 0, sizeof(*out));
	out->ordered = true;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "log", 0, &log), 0);
	assert_int_equal(mdb_stat(txn, log, &st), 0);
	out->overflow_pages = st.ms_overflow_pages;
	assert_int_equal(mdb_cursor_open(txn, log, &cur), 0);
	uint64_t seq = 0;
	uint32_t next = 0;
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
		const uint8_t *p = k.mv_data;
		uint64_t s = 0;
		for (int i = 0; i < 8; i++)
			s = s << 8 | p[i];
		uint32_t c = k.mv_size == 12 ? (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 |
		                               (uint32_t)p[10] << 8 | p[11] : 0;
		if (k.mv_size == 12)
			out->chunked++;
		else
			out->whole++;
		if (!out->entries)
			out->first = s;
		if (s != seq) {
			if (c != 0)
				out->ordered = false;
			seq = s;
			next = 0;
		}
		if (c != next++)
			out->ordered = false;
		out->last = s;
		out->entries++;
		out->bytes += v.mv_size;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

struct got {
	unsigned n;
	uint64_t seq[8];
	size_t len[8];
	uint8_t *recs[8];
	uint64_t time_ns[8];
};

static int got_cb(void *arg, uint64_t seq, uint64_t time_ns, const uint8_t *recs, size_t len)
{
	struct got *g = arg;
	if (g->n == 8)
		return -E2BIG;
	g->seq[g->n] = seq;
	g->len[g->n] = len;
	g->time_ns[g->n] = time_ns;
	g->recs[g->n] = malloc(len ? len : 1);
	memcpy(g->recs[g->n], recs, len);
	g->n++;
	return 0;
}

/* The whole log read from the start is batches 1..n of b, exactly. */
static void check_log(struct store *s, const struct journal_batch *b, unsigned n, struct got *g)
{
	uint64_t first;
	assert_int_equal(store_scan_log(s, 0, &first, got_cb, g), 0);
	assert_int_equal(first, 1);
	assert_int_equal(g->n, n);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(g->seq[i], i + 1);
		assert_int_equal(g->len[i], b[i].len);
		assert_memory_equal(g->recs[i], b[i].buf, b[i].len);
	}
}

static void got_free(struct got *g)
{
	for (unsigned i = 0; i < g->n; i++)
		free(g->recs[i]);
	memset(g, 0, sizeof(*g));
}

/* A batch of ~600 KB (hundreds of chunks) between two small ones: the
 * reader gives each exactly as written; kept in the log only (not
 * applied), the next open after a crash replays it into the tables; at
 * apply_batches 1, the batch applied at its commit reads the same. */
static void test_big_batch(void **state)
{
	struct fixture *f = *state;
	enum { N = 6000 };
	struct journal_batch b[3];
	for (int i = 0; i < 3; i++)
		journal_batch_init(&b[i], 0);
	files_batch(&b[0], 1, 0, 3, false);
	files_batch(&b[1], 2, 3, N, false);
	files_batch(&b[2], 3, 3 + N, 2, false);
	assert_true(b[1].len > 100 * 4096);

	struct store_opts lazy = { .root_mode = 0755, .apply_batches = 1000, .apply_bytes = 1 << 30 };
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *c = NULL;
		if (store_open(f->dir, &lazy, &c) != 0)
			_exit(1);
		for (int i = 0; i < 3; i++)
			if (store_commit(c, &b[i], NULL) != 0)
				_exit(2);
		struct store_meta m;
		if (store_get_meta(c, &m) != 0 || m.applied_seq != 0)
			_exit(3);                       /* all three in the log only */
		_exit(0);                               /* a crash: no store_close */
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	struct raw_log rl;
	raw_log(f->dir, &rl);
	print_message("# %llu log entries (%llu chunked), %llu bytes, %llu overflow pages\n",
	              (unsigned long long)rl.entries, (unsigned long long)rl.chunked,
	              (unsigned long long)rl.bytes, (unsigned long long)rl.overflow_pages);
	assert_true(rl.ordered);
	assert_int_equal(rl.whole, 0);
	assert_true(rl.chunked > 12);
	assert_int_equal(rl.bytes, 3 * 24 + b[0].len + b[1].len + b[2].len);
	/* Chunks of 16 overflow pages, then pieces that fit in leaf pages. */
	uint64_t full = 0, small = 0;
	for (int i = 0; i < 3; i++) {
		size_t total = 24 + b[i].len;
		full += total / CHUNK;
		small += (total % CHUNK + CHUNK_SMALL - 1) / CHUNK_SMALL;
	}
	assert_true(full >= 10);
	assert_int_equal(rl.chunked, full + small);
	assert_int_equal(rl.overflow_pages, 16 * full);

	/* The replay at open applies them from the log. */
	struct store *s = open_ok(f->dir, &lazy);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.applied_seq, 3);
	assert_int_equal(m.last_seq, 3);
	assert_int_equal(m.next_ino, 1000 + 3 + N + 2);
	check_files(s, 0, 3 + N + 2);
	struct got g = { 0 };
	check_log(s, b, 3, &g);
	for (int i = 0; i < 3; i++)
		assert_true(g.time_ns[i] > 0);
	got_free(&g);
	/* From the big batch on: it, whole, and the one after. */
	assert_int_equal(store_scan_log(s, 2, NULL, got_cb, &g), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.seq[0], 2);
	assert_int_equal(g.len[0], b[1].len);
	assert_memory_equal(g.recs[0], b[1].buf, b[1].len);
	got_free(&g);
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_entries, 3);
	assert_int_equal(in.log_bytes, rl.bytes);
	store_close(s);

	/* Applied at its commit, in another store: the same tables and log. */
	char dir2[320];
	snprintf(dir2, sizeof(dir2), "%s/eager", f->tmp);
	struct store_opts eager = { .root_mode = 0755, .apply_batches = 1 };
	s = open_ok(dir2, &eager);
	for (int i = 0; i < 3; i++)
		commit_ok(s, &b[i]);
	check_files(s, 0, 3 + N + 2);
	assert_int_equal(store_scan_log(s, 2, NULL, got_cb, &g), 0);
	assert_int_equal(g.n, 2);
	assert_memory_equal(g.recs[0], b[1].buf, b[1].len);
	got_free(&g);
	store_close(s);
	for (int i = 0; i < 3; i++)
		journal_batch_free(&b[i]);
}

/* Byte retention over batches of many chunks: whole batches go, every
 * chunk of each, the count in bytes stays that of what is there (also
 * when measured again at open), and a count bound counts batches. */
static void test_retention_chunks(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .root_mode = 0755, .log_max_bytes = 256 << 10 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	for (uint64_t seq = 1; seq <= 60; seq++) {
		files_batch(&b, seq, (unsigned)seq * 10000, 200 + (unsigned)(seq * 37 % 500), true);
		commit_ok(s, &b);
	}
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	store_close(s);
	struct raw_log rl;
	raw_log(f->dir, &rl);
	print_message("# kept %llu batches in %llu chunks, %llu bytes; %llu trimmed\n",
	              (unsigned long long)in.log_entries, (unsigned long long)rl.entries,
	              (unsigned long long)rl.bytes, (unsigned long long)in.log_trimmed);
	assert_true(rl.ordered);
	assert_int_equal(rl.last, 60);
	assert_int_equal(in.log_entries, rl.last - rl.first + 1);
	assert_int_equal(in.log_trimmed, rl.first - 1);
	assert_true(in.log_trimmed > 10);
	assert_int_equal(in.log_bytes, rl.bytes);
	assert_true(rl.bytes <= (256 << 10) + 100000);
	assert_true(rl.entries > 3 * in.log_entries);

	o.log_max_bytes = 0;
	o.log_retention = 2;
	s = open_ok(f->dir, &o);
	struct store_info again;
	assert_int_equal(store_info(s, &again), 0);
	assert_int_equal(again.log_bytes, rl.bytes);
	files_batch(&b, 61, 99, 300, true);
	commit_ok(s, &b);
	assert_int_equal(store_info(s, &again), 0);
	assert_int_equal(again.log_entries, 2);
	store_close(s);
	raw_log(f->dir, &rl);
	assert_int_equal(rl.first, 60);
	assert_int_equal(rl.last, 61);
	assert_true(rl.ordered);
	assert_int_equal(again.log_bytes, rl.bytes);
	journal_batch_free(&b);
}

/* A batch larger than the map: the commit fails on a full map, grows it
 * and tries again, until it fits; what is kept is one batch, its chunks
 * once each, and log_bytes is theirs. */
static void test_retry_grows(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .root_mode = 0755, .map_size = 256 << 10 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b[1];
	journal_batch_init(&b[0], 0);
	files_batch(&b[0], 1, 0, 10000, false);
	assert_true(b[0].len > 3 * (256 << 10));
	commit_ok(s, &b[0]);
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	assert_true(in.map_size > 3 * (256 << 10));
	struct got g = { 0 };
	check_log(s, b, 1, &g);
	got_free(&g);
	check_files(s, 0, 10000);
	store_close(s);
	struct raw_log rl;
	raw_log(f->dir, &rl);
	assert_true(rl.ordered);
	assert_int_equal(rl.bytes, 24 + b[0].len);
	assert_int_equal(in.log_bytes, rl.bytes);
	journal_batch_free(&b[0]);
}

/* Write batch b as one value under an 8-byte key, with a version 2
 * header, as the log was written before chunks. */
static void put_whole(MDB_txn *txn, MDB_dbi log, const struct journal_batch *b)
{
	uint8_t key[8];
	for (int i = 0; i < 8; i++)
		key[i] = (uint8_t)(b->seq >> (56 - 8 * i));
	uint8_t *val = calloc(1, 24 + b->len);
	assert_non_null(val);
	val[0] = 0xC1;
	val[1] = 2;
	for (int i = 0; i < 4; i++)
		val[4 + i] = (uint8_t)(b->nrecs >> (8 * i));
	val[8] = 5;                                     /* commit time 5 ns */
	for (int i = 0; i < 8; i++)
		val[16 + i] = (uint8_t)(b->next_ino >> (8 * i));
	memcpy(val + 24, b->buf, b->len);
	MDB_val k = { 8, key }, v = { 24 + b->len, val };
	assert_int_equal(mdb_put(txn, log, &k, &v, 0), 0);
	free(val);
}

/* A store whose log holds batches a value each (8-byte keys), none
 * applied: it opens and replays them, reads them back, takes chunked
 * batches after them, and retention drops the old ones as whole
 * batches. */
static void test_old_format(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .root_mode = 0755 };
	struct store *s = open_ok(f->dir, &o);
	store_close(s);
	struct journal_batch b[4];
	for (int i = 0; i < 4; i++)
		journal_batch_init(&b[i], 0);
	files_batch(&b[0], 1, 0, 5, false);
	files_batch(&b[1], 2, 5, 2000, false);          /* a value of many pages */
	files_batch(&b[2], 3, 2005, 7, false);
	files_batch(&b[3], 4, 2012, 1500, false);

	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi log;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "log", 0, &log), 0);
	for (int i = 0; i < 3; i++)
		put_whole(txn, log, &b[i]);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	s = open_ok(f->dir, &o);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 3);
	assert_int_equal(m.applied_seq, 3);              /* replayed at open */
	assert_int_equal(m.next_ino, b[2].next_ino);
	check_files(s, 0, 2012);
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_entries, 3);
	assert_int_equal(in.log_bytes, 3 * 24 + b[0].len + b[1].len + b[2].len);
	commit_ok(s, &b[3]);
	check_files(s, 2012, 1500);
	struct got g = { 0 };
	check_log(s, b, 4, &g);
	for (int i = 0; i < 4; i++)
		assert_true(i < 3 ? g.time_ns[i] == 5 : g.time_ns[i] > 5);
	got_free(&g);
	assert_int_equal(store_scan_log(s, 3, NULL, got_cb, &g), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.seq[0], 3);
	got_free(&g);
	store_close(s);
	struct raw_log rl;
	raw_log(f->dir, &rl);
	assert_int_equal(rl.whole, 3);
	assert_true(rl.chunked > 10);

	/* Retention over both forms: two batches kept, the old ones gone. */
	o.log_retention = 2;
	s = open_ok(f->dir, &o);
	files_batch(&b[0], 5, 9000, 3, true);
	commit_ok(s, &b[0]);
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_entries, 2);
	assert_int_equal(in.log_trimmed, 3);
	store_close(s);
	raw_log(f->dir, &rl);
	assert_int_equal(rl.whole, 0);
	assert_int_equal(rl.first, 4);
	assert_int_equal(in.log_bytes, rl.bytes);
	for (int i = 0; i < 4; i++)
		journal_batch_free(&b[i]);
}

static uint64_t file_size(const char *dir)
{
	char p[400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/data.mdb", dir);
	assert_int_equal(stat(p, &st), 0);
	return (uint64_t)st.st_size;
}

/* Batch seq: the n files of files_batch(b, seq, 0, n) removed. */
static void unlink_batch(struct journal_batch *b, uint64_t seq, unsigned n)
{
	char name[64];
	journal_batch_reset(b, seq);
	for (unsigned i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "file-with-a-longish-name-%08u", i);
		assert_int_equal(journal_del_dentry(b, 1, name, (size_t)len), 0);
		assert_int_equal(journal_del_inode(b, 1000 + i), 0);
	}
	b->next_ino = 1000 + n;
}

/* Churn, batches of creates then of batches of their unlinks, of sizes
 * from 50 to 6400 files (6 KB to 800 KB; the log's bound holds one to a
 * few of them, as under a server's load), with a 1 MiB byte bound and the
 * tables applied as they come due: after the first quarter of the run the
 * log is at its bound, retention frees about what each commit writes, and
 * data.mdb no longer grows. Written a batch a value, the file grew 1.2 MB
 * (25%) past the first quarter of this same run: the runs of pages that
 * retention freed were not of the lengths later values needed. */
static void test_churn_levels_off(void **state)
{
	struct fixture *f = *state;
	enum { BATCHES = 800 };
	struct store_opts o = { .root_mode = 0755, .log_max_bytes = 1 << 20,
	                        .map_size = 1 << 30 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	uint64_t rnd = 0x9e3779b97f4a7c15ull, size[4] = { 0 };
	unsigned n = 0;
	for (uint64_t seq = 1; seq <= BATCHES; seq++) {
		if (seq % 2) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			n = (50u << (rnd % 8)) + (unsigned)(rnd >> 40) % 50;
			files_batch(&b, seq, 0, n, false);
		} else {
			unlink_batch(&b, seq, n);
		}
		commit_ok(s, &b);
		if (seq % (BATCHES / 4) == 0)
			size[seq / (BATCHES / 4) - 1] = file_size(f->dir);
	}
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	print_message("# data.mdb %llu %llu %llu %llu bytes at each quarter; log %llu bytes\n",
	              (unsigned long long)size[0], (unsigned long long)size[1],
	              (unsigned long long)size[2], (unsigned long long)size[3],
	              (unsigned long long)in.log_bytes);
	assert_true(in.log_bytes <= (1 << 20) + (1 << 20));
	assert_true(in.log_trimmed > BATCHES / 2);
	assert_true(size[3] <= size[0] + (256 << 10));
	assert_true(size[3] <= 8u << 20);
	store_close(s);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_big_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_grows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_churn_levels_off, setup, teardown),
	};
	return cmocka_run_group_tests_name("store_logread", tests, NULL, NULL);
}
