/* test-store_log.c - unit tests of the commit log (server/store_log.c):
 * retention by bytes, by age and by count, data.mdb staying bounded under
 * churn, reading the log back from a sequence number, values written
 * before the log header existed, and the INODE_UNLINK record applied. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal.h"
#include "mc_shm.h"
#include "store.h"
#include "fixture.h"

struct fixture {
	char tmp[256];
	char dir[2][300];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->tmp, sizeof(f->tmp), "test-store_log");
	if (!mkdtemp(f->tmp)) {
		free(f);
		return -1;
	}
	snprintf(f->dir[0], sizeof(f->dir[0]), "%s/a", f->tmp);
	snprintf(f->dir[1], sizeof(f->dir[1]), "%s/b", f->tmp);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	fixture_rmtree(f->tmp);
	free(f);
	return 0;
}

static struct store *open_ok(const char *dir, const struct store_opts *o)
{
	struct store *s = NULL;
	int rc = store_open(dir, o, &s);
	if (rc != 0)
		fail_msg("store_open(%s): %d", dir, rc);
	return s;
}

/* Batch seq: create then remove n names in directory 1 (churn: the tables
 * end as they started, only the log grows). */
static void churn_batch(struct journal_batch *b, uint64_t seq, unsigned n)
{
	char name[32];
	journal_batch_reset(b, seq);
	b->next_ino = 2;
	for (unsigned i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "churn-%llu-%u", (unsigned long long)seq, i);
		assert_int_equal(journal_put_dentry(b, 1, name, (size_t)len, 1000 + i, DT_REG), 0);
		assert_int_equal(journal_del_dentry(b, 1, name, (size_t)len), 0);
	}
}

static void commit_ok(struct store *s, const struct journal_batch *b)
{
	struct store_commit_times t;
	int rc = store_commit(s, b, &t);
	if (rc != 0)
		fail_msg("store_commit(seq %llu): %d", (unsigned long long)b->seq, rc);
}

static uint64_t file_size(const char *dir)
{
	char p[400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/data.mdb", dir);
	assert_int_equal(stat(p, &st), 0);
	return (uint64_t)st.st_size;
}

struct seen {
	unsigned n;
	uint64_t first, last;
	uint64_t min_time, max_time;
	uint64_t recs;
};

static int count_cb(void *arg, uint64_t seq, uint64_t time_ns, const uint8_t *recs, size_t len)
{
	struct seen *sn = arg;
	struct journal_rec r;
	size_t pos = 0;
	int rc;
	if (sn->n++ == 0) {
		sn->first = seq;
		sn->min_time = time_ns;
	} else if (seq != sn->last + 1) {
		return -EINVAL;    /* a hole */
	}
	sn->last = seq;
	sn->max_time = time_ns;
	while ((rc = journal_next(recs, len, &pos, &r)) == 1)
		sn->recs++;
	return rc;
}

/* 600 batches of create/unlink churn: with a 64 KiB byte bound the log
 * and data.mdb stay small; without any bound (same run, same batches) the
 * log keeps them all and the file grows many times larger. */
static void test_churn_bounded(void **state)
{
	struct fixture *f = *state;
	enum { BATCHES = 600, NAMES = 32 };
	struct store_opts bounded = { .map_size = 1 << 20, .log_max_bytes = 64 << 10 };
	struct store_opts unbounded = { .map_size = 1 << 20 };
	struct store *s[2] = { open_ok(f->dir[0], &bounded), open_ok(f->dir[1], &unbounded) };
	struct journal_batch b;
	journal_batch_init(&b, 0);
	for (uint64_t seq = 1; seq <= BATCHES; seq++) {
		churn_batch(&b, seq, NAMES);
		commit_ok(s[0], &b);
		commit_ok(s[1], &b);
	}
	struct store_info in[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(store_info(s[i], &in[i]), 0);
	print_message("# log bytes %llu vs %llu, batches %llu vs %llu, data.mdb %llu vs %llu\n",
	              (unsigned long long)in[0].log_bytes, (unsigned long long)in[1].log_bytes,
	              (unsigned long long)in[0].log_entries, (unsigned long long)in[1].log_entries,
	              (unsigned long long)file_size(f->dir[0]),
	              (unsigned long long)file_size(f->dir[1]));
	/* One batch is about 32 * 2 records of ~40 bytes: the bound, plus at
	 * most the batch just written. */
	assert_true(in[0].log_bytes <= (64 << 10) + 4096);
	assert_true(in[0].log_bytes > (32 << 10));
	assert_int_equal(in[0].log_trimmed, BATCHES - in[0].log_entries);
	assert_int_equal(in[1].log_entries, BATCHES);
	assert_int_equal(in[1].log_trimmed, 0);
	assert_true(file_size(f->dir[0]) <= 1 << 20);
	assert_true(file_size(f->dir[1]) >= 4 * file_size(f->dir[0]));
	/* What is kept is the newest, without holes, each batch whole. */
	struct seen sn = { 0 };
	uint64_t first;
	assert_int_equal(store_scan_log(s[0], 0, &first, count_cb, &sn), 0);
	assert_int_equal(sn.last, BATCHES);
	assert_int_equal(sn.first, first);
	assert_int_equal(sn.n, in[0].log_entries);
	assert_int_equal(sn.recs, (uint64_t)sn.n * NAMES * 2);
	/* log_bytes is measured again at open: the same figure. */
	store_close(s[0]);
	s[0] = open_ok(f->dir[0], &bounded);
	struct store_info again;
	assert_int_equal(store_info(s[0], &again), 0);
	assert_int_equal(again.log_bytes, in[0].log_bytes);
	store_close(s[0]);
	store_close(s[1]);
	journal_batch_free(&b);
}

/* Age: a batch older than the bound goes at the next commit; commit times
 * are the wall clock. */
static void test_age(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .log_max_age_s = 1 };
	struct store *s = open_ok(f->dir[0], &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	struct timespec t0;
	clock_gettime(CLOCK_REALTIME, &t0);
	churn_batch(&b, 1, 1);
	commit_ok(s, &b);
	churn_batch(&b, 2, 1);
	commit_ok(s, &b);
	struct seen sn = { 0 };
	assert_int_equal(store_scan_log(s, 0, NULL, count_cb, &sn), 0);
	assert_int_equal(sn.n, 2);
	uint64_t t0ns = (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec;
	assert_true(sn.min_time >= t0ns && sn.min_time < t0ns + 5000000000ull);

	nanosleep(&(struct timespec){ 1, 200000000L }, NULL);
	churn_batch(&b, 3, 1);
	commit_ok(s, &b);
	memset(&sn, 0, sizeof(sn));
	uint64_t first;
	assert_int_equal(store_scan_log(s, 0, &first, count_cb, &sn), 0);
	assert_int_equal(sn.n, 1);
	assert_int_equal(first, 3);
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_trimmed, 2);
	store_close(s);
	journal_batch_free(&b);
}

/* When an idle log is due for a trim: never without an age bound or with
 * one batch; a 100th of the bound (1 s at least) after the oldest batch
 * came of age; before then store_trim_aged drops nothing. */
static void test_trim_due(void **state)
{
	struct fixture *f = *state;
	struct store_opts none = { 0 }, o = { .log_max_age_s = 1000 };
	struct store *s = open_ok(f->dir[0], &none);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	churn_batch(&b, 1, 1);
	commit_ok(s, &b);
	churn_batch(&b, 2, 1);
	commit_ok(s, &b);
	assert_int_equal(store_log_trim_due_ns(s), 0); /* no age bound */
	store_close(s);

	s = open_ok(f->dir[0], &o);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t due = store_log_trim_due_ns(s);
	uint64_t want = 1000 * 1000000000ull + 10 * 1000000000ull; /* the age and its 100th */
	assert_true(due > now + want - 60 * 1000000000ull && due <= now + want);
	assert_int_equal(store_trim_aged(s), 0);
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_entries, 2);
	assert_int_equal(in.log_trimmed, 0);
	store_close(s);

	/* The second batch alone: it always stays, so nothing will age. */
	struct store_opts one = { .log_max_age_s = 1000, .log_retention = 1 };
	s = open_ok(f->dir[0], &one);
	churn_batch(&b, 3, 1);
	commit_ok(s, &b);
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_entries, 1);
	assert_int_equal(store_log_trim_due_ns(s), 0);
	store_close(s);
	journal_batch_free(&b);
}

/* Reading from a sequence number: exactly the batches from there; a stop
 * from the callback is returned. Count retention keeps the newest n. */
static void test_since_and_count(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .log_retention = 5 };
	struct store *s = open_ok(f->dir[0], &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	for (uint64_t seq = 1; seq <= 12; seq++) {
		churn_batch(&b, seq, 2);
		commit_ok(s, &b);
	}
	struct seen sn = { 0 };
	uint64_t first;
	assert_int_equal(store_scan_log(s, 10, &first, count_cb, &sn), 0);
	assert_int_equal(first, 8);
	assert_int_equal(sn.n, 3);
	assert_int_equal(sn.first, 10);
	assert_int_equal(sn.last, 12);
	memset(&sn, 0, sizeof(sn));
	assert_int_equal(store_scan_log(s, 1, NULL, count_cb, &sn), 0);
	assert_int_equal(sn.first, 8);
	assert_int_equal(sn.n, 5);
	memset(&sn, 0, sizeof(sn));
	assert_int_equal(store_scan_log(s, 13, NULL, count_cb, &sn), 0);
	assert_int_equal(sn.n, 0);
	store_close(s);
	journal_batch_free(&b);
}

/* A log value written before the header existed reads as records with
 * time 0. */
static void test_legacy_value(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir[0], NULL);
	store_close(s);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	churn_batch(&b, 7, 3);

	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi log;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_open(env, f->dir[0], 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "log", 0, &log), 0);
	uint8_t key[8] = { 0, 0, 0, 0, 0, 0, 0, 7 };
	MDB_val k = { 8, key }, v = { b.len, b.buf };
	assert_int_equal(mdb_put(txn, log, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	s = open_ok(f->dir[0], NULL);
	struct seen sn = { 0 };
	assert_int_equal(store_scan_log(s, 0, NULL, count_cb, &sn), 0);
	assert_int_equal(sn.n, 1);
	assert_int_equal(sn.first, 7);
	assert_int_equal(sn.min_time, 0);
	assert_int_equal(sn.recs, 6);
	struct store_info in;
	assert_int_equal(store_info(s, &in), 0);
	assert_int_equal(in.log_bytes, b.len);
	store_close(s);
	journal_batch_free(&b);
}

static int count_ext(void *arg, uint64_t start, uint64_t len, uint64_t phys, uint32_t flags)
{
	(void)start, (void)len, (void)phys, (void)flags;
	(*(int *)arg)++;
	return 0;
}

/* INODE_UNLINK drops one link of what the store has: a symlink with three
 * keeps its target and takes the record's ctime, then at none it goes
 * with its extents, as by INODE_DEL; one the store lacks is no error. */
static void test_unlink_record(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .root_mode = 0755 };
	struct store *s = open_ok(f->dir[0], &o);
	struct journal_batch b;
	journal_batch_init(&b, 1);
	b.next_ino = 10;
	struct mc_inode_rec lnk = { .ino = 5, .mode = S_IFLNK | 0777, .nlink = 3, .size = 3,
	                            .ctime_ns = 100 };
	assert_int_equal(journal_put_inode(&b, &lnk, "a/b", 3), 0);
	assert_int_equal(journal_set_extent(&b, 5, 0, 4095, 7, 0), 0);
	assert_int_equal(journal_unlink_inode(&b, 5, 200), 0);
	assert_int_equal(journal_unlink_inode(&b, 9, 200), 0);
	commit_ok(s, &b);
	struct mc_inode_rec r;
	char t[MC_SYMLINK_MAX];
	size_t tlen;
	assert_int_equal(store_get_inode(s, 5, &r, t, &tlen), 0);
	assert_int_equal(r.nlink, 2);
	assert_int_equal(r.ctime_ns, 200);
	assert_int_equal(tlen, 3);
	assert_memory_equal(t, "a/b", 3);
	int n = 0;
	assert_int_equal(store_scan_extents(s, 5, count_ext, &n), 0);
	assert_int_equal(n, 1);
	journal_batch_reset(&b, 2);
	assert_int_equal(journal_unlink_inode(&b, 5, 300), 0);
	assert_int_equal(journal_unlink_inode(&b, 5, 400), 0);
	commit_ok(s, &b);
	assert_int_equal(store_get_inode(s, 5, &r, t, &tlen), -ENOENT);
	n = 0;
	assert_int_equal(store_scan_extents(s, 5, count_ext, &n), 0);
	assert_int_equal(n, 0);
	journal_batch_free(&b);
	store_close(s);
}

/* ---- the tables after random batches, against a model -------------- */

#define MODEL_NAMES 600u
#define MODEL_BATCHES 60u

struct model {
	uint64_t ino[MODEL_NAMES];        /* the inode a name names; 0: none */
	uint32_t nlink[MODEL_NAMES * 8];  /* by inode number */
	uint64_t next_ino;
	uint64_t rnd;
	bool unlinks;                     /* INODE_UNLINK records too */
};

static uint64_t model_rand(struct model *m)
{
	m->rnd ^= m->rnd << 13;
	m->rnd ^= m->rnd >> 7;
	m->rnd ^= m->rnd << 17;
	return m->rnd;
}

static void model_name(char *buf, unsigned i)
{
	snprintf(buf, 32, "n%015u", i);
}

/* Name i goes: the dentry, then its inode's link, told as the cache
 * would (INODE_DEL or INODE_PUT when it knows the count, INODE_UNLINK
 * when it does not). */
static void model_remove(struct model *m, struct journal_batch *b, unsigned i)
{
	char name[32];
	uint64_t ino = m->ino[i];
	model_name(name, i);
	assert_int_equal(journal_del_dentry(b, 1, name, 16), 0);
	m->ino[i] = 0;
	m->nlink[ino]--;
	if (m->unlinks && model_rand(m) % 2) {
		assert_int_equal(journal_unlink_inode(b, ino, 1), 0);
	} else if (m->nlink[ino] == 0) {
		assert_int_equal(journal_del_inode(b, ino), 0);
	} else {
		struct mc_inode_rec r = { .ino = ino, .mode = S_IFREG | 0644,
		                          .nlink = m->nlink[ino] };
		assert_int_equal(journal_put_inode(b, &r, NULL, 0), 0);
	}
}

/* Name i comes: a new file, or a link to the inode of name j. */
static void model_add(struct model *m, struct journal_batch *b, unsigned i, unsigned j)
{
	char name[32];
	uint64_t ino = m->ino[j] ? m->ino[j] : m->next_ino++;
	model_name(name, i);
	m->ino[i] = ino;
	m->nlink[ino]++;
	struct mc_inode_rec r = { .ino = ino, .mode = S_IFREG | 0644, .nlink = m->nlink[ino] };
	assert_int_equal(journal_put_inode(b, &r, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(b, 1, name, 16, ino, DT_REG), 0);
}

/* One batch: runs of neighbouring names added or removed (as batched
 * creates and unlinks make them), a name removed and added again, links. */
static void model_batch(struct model *m, struct journal_batch *b, uint64_t seq)
{
	journal_batch_reset(b, seq);
	for (unsigned run = 0; run < 8; run++) {
		unsigned at = (unsigned)(model_rand(m) % MODEL_NAMES);
		unsigned len = 1 + (unsigned)(model_rand(m) % 40);
		for (unsigned i = at; i < at + len && i < MODEL_NAMES; i++) {
			if (m->ino[i])
				model_remove(m, b, i);
			if (!m->ino[i] && model_rand(m) % 3 == 0)
				model_add(m, b, i, (unsigned)(model_rand(m) % MODEL_NAMES));
		}
	}
	b->next_ino = m->next_ino;
}

static void model_check(const struct model *m, struct store *s)
{
	char name[32];
	for (unsigned i = 0; i < MODEL_NAMES; i++) {
		uint64_t ino = 0;
		model_name(name, i);
		int rc = store_get_dentry(s, 1, name, 16, &ino, NULL);
		if (rc != (m->ino[i] ? 0 : -ENOENT) || ino != m->ino[i])
			fail_msg("%s: %d, inode %llu, not %llu", name, rc, (unsigned long long)ino,
			         (unsigned long long)m->ino[i]);
	}
	for (uint64_t ino = 2; ino < m->next_ino; ino++) {
		struct mc_inode_rec r = { 0 };
		int rc = store_get_inode(s, ino, &r, NULL, NULL);
		if (rc != (m->nlink[ino] ? 0 : -ENOENT) || (rc == 0 && r.nlink != m->nlink[ino]))
			fail_msg("inode %llu: %d, %u links, not %u", (unsigned long long)ino, rc,
			         rc ? 0 : r.nlink, m->nlink[ino]);
	}
}

/* Random batches applied at each commit, in groups of 7 through the
 * overlay (no INODE_UNLINK then: it is applied at its commit), and replayed from
 * the log after a crash (store_open): the tables end as the model says
 * in all three. The records are applied through one cursor per table
 * (note 7): deletions and puts of neighbouring keys, mixed with puts of
 * others; in the overlay, names made and removed between two applies are
 * deletions of keys the tables never had. */
static void test_apply_model(void **state)
{
	struct fixture *f = *state;
	static struct model m;
	struct journal_batch b;
	journal_batch_init(&b, 1);
	for (unsigned way = 0; way < 3; way++) {
		memset(&m, 0, sizeof(m));
		m.rnd = 0x9e3779b97f4a7c15ull;
		m.next_ino = 2;
		m.unlinks = way != 1;   /* they would be applied at each commit */
		char dir[320];
		snprintf(dir, sizeof(dir), "%s/m%u", f->tmp, way);
		unsigned every[3] = { 1, 7, 1000 };
		struct store_opts o = { .root_mode = 0755, .apply_batches = every[way] };
		if (way == 2) {
			/* A crash before any apply: the next open replays the log. */
			pid_t pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				struct store *c = NULL;
				if (store_open(dir, &o, &c) != 0)
					_exit(1);
				for (uint64_t seq = 1; seq <= MODEL_BATCHES; seq++) {
					model_batch(&m, &b, seq);
					if (store_commit(c, &b, NULL) != 0)
						_exit(2);
				}
				_exit(0);
			}
			int st;
			assert_int_equal(waitpid(pid, &st, 0), pid);
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			for (uint64_t seq = 1; seq <= MODEL_BATCHES; seq++)
				model_batch(&m, &b, seq);      /* the model, the same way */
		} else {
			struct store *s = open_ok(dir, &o);
			for (uint64_t seq = 1; seq <= MODEL_BATCHES; seq++) {
				model_batch(&m, &b, seq);
				commit_ok(s, &b);
			}
			model_check(&m, s);
			store_close(s);
		}
		struct store *s = open_ok(dir, &o);
		model_check(&m, s);
		store_close(s);
	}
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_churn_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_age, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trim_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_since_and_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_model, setup, teardown),
	};
	return cmocka_run_group_tests_name("store_log", tests, NULL, NULL);
}
