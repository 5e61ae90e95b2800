/* test-store_ovladd.c - unit tests of the overlay adder (server/
 * store_ovladd.c): a commit that leaves the tables alone has its batch
 * added to the overlay by the adder thread while it syncs, so its changes
 * answer point reads and scans as soon as it returns; a commit that fails
 * after the batch was added leaves no trace of it in any read (the
 * overlay is marked broken and reads apply the log, which lacks it), and
 * its retry, a restart and later commits see exactly what was committed. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_fixture.h"

static int setup(void **state)
{
	return store_fixture_setup(state, "test-store_ovladd");
}

static int teardown(void **state)
{
	return store_fixture_teardown(state);
}

/* Is file ino in the store, as a point read and as a scan see it? */
struct seen {
	uint64_t ino;
	bool found;
};

static int seen_cb(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype)
{
	struct seen *sn = arg;
	(void)name;
	(void)namelen;
	(void)dtype;
	if (ino == sn->ino)
		sn->found = true;
	return 0;
}

static bool has_file(struct store *s, uint64_t ino)
{
	char name[32];
	uint64_t got = 0;
	store_fixture_name(name, ino);
	int rc = store_get_dentry(s, 1, name, strlen(name), &got, NULL);
	assert_true(rc == 0 || rc == -ENOENT);
	struct seen sn = { ino, false };
	assert_int_equal(store_scan_dir(s, 1, seen_cb, &sn), 0);
	assert_int_equal(sn.found, rc == 0);           /* both reads agree */
	if (rc == 0)
		assert_int_equal(got, ino);
	struct mc_inode_rec r;
	assert_int_equal(store_get_inode(s, ino, &r, NULL, NULL) == 0, rc == 0);
	return rc == 0;
}

/* Is a thread of this process named name? */
static bool thread_named(const char *name)
{
	char path[300], comm[64];
	bool found = false;
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		found = fscanf(f, "%63s", comm) == 1 && strcmp(comm, name) == 0;
		fclose(f);
	}
	closedir(d);
	return found;
}

/* Commits that leave the tables alone: every one's files are read back at
 * once, by the adder thread, which the first such commit starts and the
 * close stops. */
static void test_added_during_sync(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	assert_false(thread_named("mcached-ovl"));
	uint64_t ino = 10;
	for (uint64_t seq = 1; seq <= 20; seq++) {
		create_batch(&b, seq, 10, &ino);        /* inodes 10 seq .. 10 seq + 9 */
		commit_ok(s, &b);
		assert_true(has_file(s, 10 * seq));
		assert_true(has_file(s, 10 * seq + 9));
		assert_false(has_file(s, 10 * seq + 10));
	}
	assert_true(thread_named("mcached-ovl"));
	store_close(s);
	assert_false(thread_named("mcached-ovl"));
	s = open_ok(f->dir, &o);
	for (uint64_t i = 10; i < 210; i++)
		assert_true(has_file(s, i));
	store_close(s);
	journal_batch_free(&b);
}

/* A batch added to the overlay by the thread, then the commit fails: no
 * read shows it, the batch before it is still read, and its retry makes
 * it visible; after a restart the store holds both. */
static void test_failed_commit_leaves_no_trace(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	journal_batch_init(&b, 0);
	uint64_t ino = 2;
	create_batch(&b, 1, 4, &ino);                   /* inodes 2..5 */
	commit_ok(s, &b);
	create_batch(&b, 2, 4, &ino);                   /* 6..9 */
	store_fail_syncs(s, 1, -EIO);
	assert_int_equal(store_commit(s, &b, NULL), -EIO);
	assert_true(has_file(s, 2));
	assert_true(has_file(s, 5));
	assert_false(has_file(s, 6));
	assert_false(has_file(s, 9));
	commit_ok(s, &b);                                 /* the retry */
	assert_true(has_file(s, 9));
	create_batch(&b, 3, 3, &ino);                   /* 10..12 */
	commit_ok(s, &b);
	assert_true(has_file(s, 12));
	store_close(s);
	s = open_ok(f->dir, &o);
	for (uint64_t i = 2; i <= 12; i++)
		assert_true(has_file(s, i));
	assert_false(has_file(s, 13));
	store_close(s);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_added_during_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_commit_leaves_no_trace, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
