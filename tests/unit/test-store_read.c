/* test-store_read.c - unit tests of the long-lived read snapshots and
 * one-snapshot entry reads (server/store_read.c), and of the commit
 * semaphore the warmers hold them under (server/commit_sem.h). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "commit_sem.h"
#include "journal.h"
#include "mc_shm.h"
#include "store.h"
#include "store_read.h"
#include "fixture.h"

struct fixture {
	char tmp[256];
	struct store *st;
	uint64_t seq;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->tmp, sizeof(f->tmp), "test-store_read");
	if (!mkdtemp(f->tmp) || store_open(f->tmp, NULL, &f->st) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	store_close(f->st);
	fixture_rmtree(f->tmp);
	free(f);
	return 0;
}

static struct mc_inode_rec mkinode(uint64_t ino, uint32_t mode, uint64_t size)
{
	struct mc_inode_rec r = { .ino = ino, .mode = mode, .nlink = 1, .uid = 7, .gid = 8,
		                  .size = size, .atime_ns = 1, .mtime_ns = 2, .ctime_ns = 3 };
	return r;
}

/* Commit: names[i] in directory 1 naming inode 10 + i (a symlink to "t<i>"
 * when i is odd), or with del, remove them. */
static void commit_names(struct fixture *f, int from, int to, bool del)
{
	struct journal_batch b;
	journal_batch_init(&b, ++f->seq);
	b.next_ino = 1000;
	for (int i = from; i < to; i++) {
		char name[16], target[16];
		snprintf(name, sizeof(name), "n%03d", i);
		if (del) {
			assert_int_equal(journal_del_dentry(&b, 1, name, strlen(name)), 0);
			assert_int_equal(journal_del_inode(&b, 10 + (uint64_t)i), 0);
			continue;
		}
		snprintf(target, sizeof(target), "t%d", i);
		struct mc_inode_rec r = mkinode(10 + (uint64_t)i, i % 2 ? S_IFLNK | 0777 : S_IFREG | 0644,
		                                i % 2 ? strlen(target) : 0);
		assert_int_equal(journal_put_inode(&b, &r, i % 2 ? target : NULL,
		                                   i % 2 ? strlen(target) : 0), 0);
		assert_int_equal(journal_put_dentry(&b, 1, name, strlen(name), r.ino,
		                                    i % 2 ? DT_LNK : DT_REG), 0);
	}
	struct store_commit_times t;
	assert_int_equal(store_commit(f->st, &b, &t), 0);
	journal_batch_free(&b);
}

/* The same from another thread, as the committer does: a thread holding a
 * snapshot never commits (the store's commit lock comes before its resize
 * lock). */
struct commit_job {
	struct fixture *f;
	int from, to;
	bool del;
};

static void *commit_job_main(void *arg)
{
	struct commit_job *j = arg;
	commit_names(j->f, j->from, j->to, j->del);
	return NULL;
}

static void commit_names_elsewhere(struct fixture *f, int from, int to, bool del)
{
	struct commit_job j = { f, from, to, del };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, commit_job_main, &j), 0);
	pthread_join(th, NULL);
}

struct seen {
	int n, stop_at;
	char last[MC_NAME_MAX + 1];
	int symlinks_ok, recs;
};

static int seen_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                   const struct mc_inode_rec *rec, const char *target, size_t tlen)
{
	struct seen *s = arg;
	assert_int_equal(strlen(name), namelen);
	memcpy(s->last, name, namelen + 1);
	if (rec) {
		s->recs++;
		assert_int_equal(rec->ino, ino);
		if (dtype == DT_LNK) {
			char want[16];
			snprintf(want, sizeof(want), "t%d", (int)(ino - 10));
			if (tlen == strlen(want) && memcmp(target, want, tlen) == 0)
				s->symlinks_ok++;
		} else {
			assert_int_equal(tlen, 0);
		}
	}
	return ++s->n == s->stop_at ? 1 : 0;
}

/* A held snapshot shows the batches committed after it was taken but not
 * applied (the overlay it merges is the store's at the scan, store_read.c
 * note 1d); released and taken again, it shows them too; the reader slot
 * is reused (renew) across takes. */
static void test_snapshot_isolation_and_renew(void **state)
{
	struct fixture *f = *state;
	struct store_snap *sn;
	commit_names(f, 0, 10, false);
	assert_int_equal(store_snap_new(f->st, &sn), 0);
	assert_int_equal(store_snap_take(sn), 0);
	commit_names_elsewhere(f, 10, 20, false);
	commit_names_elsewhere(f, 0, 5, true);
	struct seen s = { 0 };
	assert_int_equal(store_snap_scan_dir(sn, 1, NULL, 0, seen_fn, &s), 0);
	assert_int_equal(s.n, 15);          /* n005..n019, as committed */
	assert_int_equal(s.recs, 15);
	assert_int_equal(s.symlinks_ok, 8);
	store_snap_release(sn);
	store_snap_release(sn);             /* no-op when released */
	assert_int_equal(store_snap_take(sn), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_snap_scan_dir(sn, 1, NULL, 0, seen_fn, &s), 0);
	assert_int_equal(s.n, 15);          /* n005..n019 */
	assert_string_equal(s.last, "n019");
	/* Taking again while held starts a fresh snapshot. */
	commit_names_elsewhere(f, 20, 21, false);
	assert_int_equal(store_snap_take(sn), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_snap_scan_dir(sn, 1, NULL, 0, seen_fn, &s), 0);
	assert_int_equal(s.n, 16);
	store_snap_free(sn);
	store_snap_free(NULL);
}

/* A held snapshot whose tables the store applied past meanwhile (32
 * batches: the overlay it would merge no longer goes with its tables)
 * goes on in a fresh transaction: it shows the committed state, not the
 * tables it began with. */
static void test_held_snapshot_across_apply(void **state)
{
	struct fixture *f = *state;
	struct store_snap *sn;
	commit_names(f, 0, 100, false);
	assert_int_equal(store_snap_new(f->st, &sn), 0);
	assert_int_equal(store_snap_take(sn), 0);
	for (int i = 0; i < 40; i++)                    /* an apply among them */
		commit_names_elsewhere(f, i, i + 1, true);
	struct store_meta m;
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_true(m.applied_seq > 1);
	assert_true(m.applied_seq < m.last_seq);
	struct seen s = { 0 };
	assert_int_equal(store_snap_scan_dir(sn, 1, NULL, 0, seen_fn, &s), 0);
	assert_int_equal(s.n, 60);                      /* n040..n099 */
	assert_int_equal(s.recs, 60);
	assert_string_equal(s.last, "n099");
	store_snap_free(sn);
}

/* A point read on a thread of its own, which then exits. */
static void *point_read_main(void *arg)
{
	struct fixture *f = arg;
	uint64_t ino = 0;
	intptr_t rc = store_get_dentry(f->st, 1, "n000", 4, &ino, NULL);
	if (rc == 0 && ino != 10)
		rc = -EIO;
	return (void *)rc;
}

/* Point reads reuse their thread's read transaction: a thread that exits
 * gives its reader slot back (600 threads, one after another, against
 * LMDB's 512 slots), and a thread's transaction, reset, follows the map
 * when a commit grows it and the tables when they are applied. */
static void test_point_reader_per_thread(void **state)
{
	struct fixture *f = *state;
	commit_names(f, 0, 1, false);
	for (int i = 0; i < 600; i++) {
		pthread_t th;
		void *rc;
		assert_int_equal(pthread_create(&th, NULL, point_read_main, f), 0);
		pthread_join(th, &rc);
		assert_int_equal((intptr_t)rc, 0);
	}
	store_close(f->st);
	struct store_opts o = { .map_size = 64 << 10, .map_size_max = 64 << 20,
	                        .apply_batches = 2 };
	assert_int_equal(store_open(f->tmp, &o, &f->st), 0);
	uint64_t ino;
	struct mc_inode_rec rec;
	assert_int_equal(store_get_dentry(f->st, 1, "n000", 4, &ino, NULL), 0);
	struct store_info before, after;
	assert_int_equal(store_info(f->st, &before), 0);
	for (int i = 1; i < 400; i += 50) {
		commit_names(f, i, i + 50, false);      /* grows the map */
		char name[16];
		snprintf(name, sizeof(name), "n%03d", i + 49);
		assert_int_equal(store_get_dentry(f->st, 1, name, 4, &ino, NULL), 0);
		assert_int_equal(ino, 10 + (uint64_t)i + 49);
		assert_int_equal(store_get_inode(f->st, ino, &rec, NULL, NULL), 0);
	}
	assert_int_equal(store_info(f->st, &after), 0);
	assert_true(after.map_size > before.map_size);
}

/* A scan stops when fn says 1 and resumes after a name; bad arguments. */
static void test_scan_resume(void **state)
{
	struct fixture *f = *state;
	struct store_snap *sn;
	commit_names(f, 0, 30, false);
	assert_int_equal(store_snap_new(f->st, &sn), 0);
	assert_int_equal(store_snap_take(sn), 0);
	struct seen s = { .stop_at = 12 };
	assert_int_equal(store_snap_scan_dir(sn, 1, NULL, 0, seen_fn, &s), 0);
	assert_int_equal(s.n, 12);
	assert_string_equal(s.last, "n011");
	struct seen t = { 0 };
	assert_int_equal(store_snap_scan_dir(sn, 1, s.last, strlen(s.last), seen_fn, &t), 0);
	assert_int_equal(t.n, 18);
	/* From a name that is not there: the next one on. */
	memset(&t, 0, sizeof(t));
	assert_int_equal(store_snap_scan_dir(sn, 1, "n0115", 5, seen_fn, &t), 0);
	assert_int_equal(t.n, 18);
	/* Another directory: nothing; a resume name too long: EINVAL. */
	memset(&t, 0, sizeof(t));
	assert_int_equal(store_snap_scan_dir(sn, 99, NULL, 0, seen_fn, &t), 0);
	assert_int_equal(t.n, 0);
	char longname[MC_NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname));
	assert_int_equal(store_snap_scan_dir(sn, 1, longname, MC_NAME_MAX + 1, seen_fn, &t),
	                 -EINVAL);
	store_snap_free(sn);
}

/* The tables' last name of a directory, whether other directories follow
 * it or not, its first name from another, and none for a directory
 * without entries there, or whose entries are only in the batches not
 * applied. */
static void test_last_name(void **state)
{
	struct fixture *f = *state;
	store_close(f->st);
	struct store_opts o = { .apply_batches = 1 };
	assert_int_equal(store_open(f->tmp, &o, &f->st), 0);
	struct journal_batch b;
	journal_batch_init(&b, ++f->seq);
	b.next_ino = 1000;
	const char *names[] = { "a", "zz", "m\xff", "zy" };
	for (uint64_t dir = 5; dir <= 7; dir += 2)
		for (size_t i = 0; i < 4; i++) {
			struct mc_inode_rec r = mkinode(dir * 10 + i, S_IFREG | 0644, 0);
			assert_int_equal(journal_put_inode(&b, &r, NULL, 0), 0);
			assert_int_equal(journal_put_dentry(&b, dir, names[i], strlen(names[i]),
			                                    r.ino, DT_REG), 0);
		}
	struct store_commit_times t;
	assert_int_equal(store_commit(f->st, &b, &t), 0);
	journal_batch_free(&b);

	struct store_snap *sn;
	char name[MC_NAME_MAX];
	size_t len = 0;
	assert_int_equal(store_snap_new(f->st, &sn), 0);
	assert_int_equal(store_snap_take(sn), 0);
	for (uint64_t dir = 5; dir <= 7; dir += 2) {
		assert_int_equal(store_snap_last_name(sn, dir, name, &len), 1);
		assert_int_equal(len, 2);
		assert_memory_equal(name, "zz", 2);
	}
	assert_int_equal(store_snap_last_name(sn, 6, name, &len), 0);
	assert_int_equal(store_snap_last_name(sn, 8, name, &len), 0);
	assert_int_equal(store_snap_last_name(sn, 4, name, &len), 0);
	/* The first name at or after another, in the directory only. */
	assert_int_equal(store_snap_name_from(sn, 5, "", 0, name, &len), 1);
	assert_memory_equal(name, "a", len);
	assert_int_equal(store_snap_name_from(sn, 5, "m", 1, name, &len), 1);
	assert_int_equal(len, 2);
	assert_memory_equal(name, "m\xff", 2);
	assert_int_equal(store_snap_name_from(sn, 5, "zy", 2, name, &len), 1);
	assert_memory_equal(name, "zy", len);
	assert_int_equal(store_snap_name_from(sn, 5, "zz\x01", 3, name, &len), 0);
	assert_int_equal(store_snap_name_from(sn, 7, "zz\x01", 3, name, &len), 0);
	assert_int_equal(store_snap_name_from(sn, 6, "", 0, name, &len), 0);
	char longname[MC_NAME_MAX + 1];
	memset(longname, 'x', sizeof(longname));
	assert_int_equal(store_snap_name_from(sn, 5, longname, sizeof(longname), name, &len),
	                 -EINVAL);
	store_snap_free(sn);

	/* Not applied yet: the tables do not have it, so no hint. */
	store_close(f->st);
	o.apply_batches = 1000;
	assert_int_equal(store_open(f->tmp, &o, &f->st), 0);
	commit_names(f, 0, 3, false);
	assert_int_equal(store_snap_new(f->st, &sn), 0);
	assert_int_equal(store_snap_take(sn), 0);
	assert_int_equal(store_snap_last_name(sn, 1, name, &len), 0);
	store_snap_free(sn);
}

/* One name and its inode, in one snapshot. */
static void test_get_entry(void **state)
{
	struct fixture *f = *state;
	commit_names(f, 0, 4, false);
	uint64_t ino = 0;
	uint8_t dtype = 0;
	struct mc_inode_rec rec;
	char target[MC_SYMLINK_MAX];
	size_t tlen = 99;
	bool have = false;
	assert_int_equal(store_get_entry(f->st, 1, "n003", 4, &ino, &dtype, &rec, target, &tlen,
	                                 &have), 0);
	assert_int_equal(ino, 13);
	assert_int_equal(dtype, DT_LNK);
	assert_true(have);
	assert_int_equal(rec.ino, 13);
	assert_int_equal(tlen, 2);
	assert_memory_equal(target, "t3", 2);
	assert_int_equal(store_get_entry(f->st, 1, "n002", 4, &ino, &dtype, &rec, target, &tlen,
	                                 &have), 0);
	assert_int_equal(tlen, 0);
	assert_int_equal(store_get_entry(f->st, 1, "n009", 4, &ino, &dtype, &rec, target, &tlen,
	                                 &have), -ENOENT);
	assert_int_equal(store_get_entry(f->st, 1, "", 0, &ino, &dtype, &rec, target, &tlen,
	                                 &have), -EINVAL);
	char longname[MC_NAME_MAX + 1];
	memset(longname, 'x', sizeof(longname));
	assert_int_equal(store_get_entry(f->st, 1, longname, MC_NAME_MAX + 1, &ino, &dtype, &rec,
	                                 target, &tlen, &have), -ENAMETOOLONG);
	/* A name whose inode the store lacks: found, without a record. */
	struct journal_batch b;
	journal_batch_init(&b, ++f->seq);
	b.next_ino = 1000;
	assert_int_equal(journal_put_dentry(&b, 1, "orphan", 6, 500, DT_REG), 0);
	struct store_commit_times t;
	assert_int_equal(store_commit(f->st, &b, &t), 0);
	journal_batch_free(&b);
	have = true;
	assert_int_equal(store_get_entry(f->st, 1, "orphan", 6, &ino, &dtype, &rec, target, &tlen,
	                                 &have), 0);
	assert_int_equal(ino, 500);
	assert_false(have);
}

/* ---- commit_sem ----------------------------------------------------------- */

struct writer {
	struct commit_sem *cs;
	atomic_int phase;     /* 1 waiting, 2 holding */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	atomic_store(&w->phase, 1);
	commit_sem_write_lock(w->cs);
	atomic_store(&w->phase, 2);
	commit_sem_write_unlock(w->cs);
	return NULL;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* A waiting writer is visible to readers (committer_waiting) and waits
 * for the reader to let go; the flag drops once it is done. */
static void test_commit_sem_writer_waits_and_is_seen(void **state)
{
	(void)state;
	struct commit_sem cs;
	commit_sem_init(&cs);
	assert_false(commit_sem_contended(&cs));
	commit_sem_read_lock(&cs);
	struct writer w = { .cs = &cs };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	for (int i = 0; i < 2000 && !commit_sem_contended(&cs); i++)
		sleep_ms(1);
	assert_true(commit_sem_contended(&cs));
	sleep_ms(20);
	assert_int_equal(atomic_load(&w.phase), 1); /* still waiting for us */
	commit_sem_read_unlock(&cs);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&w.phase), 2);
	assert_false(commit_sem_contended(&cs));
	/* Readers share it. */
	commit_sem_read_lock(&cs);
	commit_sem_read_lock(&cs);
	commit_sem_read_unlock(&cs);
	commit_sem_read_unlock(&cs);
	commit_sem_destroy(&cs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_snapshot_isolation_and_renew, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_snapshot_across_apply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_point_reader_per_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_name, setup, teardown),
		cmocka_unit_test(test_commit_sem_writer_waits_and_is_seen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
