/* test-rmtree.c - unit tests of server/rmtree.c over a real LMDB store and
 * segment: the work rmtree does to find each next entry stays O(1)
 * amortised in a directory that is neither complete nor uncached (store
 * names, cached ones, uncommitted creates); files the cache does not hold
 * are removed without loading them, with the right link counts (ns.c
 * note 7). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal.h"
#include "cred.h"
#include "fsck.h"
#include "mc_shm.h"
#include "ns.h"
#include "shm.h"
#include "shrink.h"
#include "store.h"
#include "ns_fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)
#define NFILES 10

static const struct cred root_cred = { .uid = 0, .gid = 0 };

static int setup(void **state)
{
	return ns_fixture_setup(state, "test-rmtree", 8 * MIB);
}

static void create_ok(struct fx *f, const char *path)
{
	int rc = ns_open(f->ns, &root_cred, P(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
	if (rc != 0)
		fail_msg("create %s: %d", path, rc);
}

static struct shrink_stats stats(struct fx *f)
{
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	return c.shrink;
}

/* After a restart, half of a directory's files are looked up (cached),
 * half are not, and more are created (cached, uncommitted): one rmtree in
 * one lock hold looks at each store name and listed entry a bounded
 * number of times. Removed cached names stay listed as negatives and the
 * store keeps the removed names until the commit: walking the list from
 * its head, or the store from its start, for each uncommitted create
 * looked at them all again and again. */
static void test_rmtree_mixed_linear(void **state)
{
	struct fx *f = *state;
	enum { OLD = 3000, NEW = 1000 };
	char p[64];
	ns_attr a;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t"), 0755, NULL), 0);
	for (int i = 0; i < OLD; i++) {
		snprintf(p, sizeof(p), "/t/old-%05d", i);
		create_ok(f, p);
	}
	ns_fixture_reopen(f);
	for (int i = 0; i < OLD; i += 2) {
		snprintf(p, sizeof(p), "/t/old-%05d", i);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
	}
	for (int i = 0; i < NEW; i++) {
		snprintf(p, sizeof(p), "/t/new-%05d", i);
		create_ok(f, p);
	}
	uint64_t v0 = stats(f).rmtree_visits;
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 1u << 20), 0);
	uint64_t visits = stats(f).rmtree_visits - v0;
	print_message("# rmtree of %d entries: %llu visits\n", OLD + NEW + 1,
	              (unsigned long long)visits);
	assert_int_equal(stats(f).rmtree_entries, OLD + NEW + 1);
	assert_true(visits <= 4 * (OLD + NEW));
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t"), true, &a), -ENOENT);
	ns_fixture_reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/"), true, &a), 0);
	assert_int_equal(a.size, 0);
}

/* unlink of uncached names after a restart: a file goes without its inode
 * being read or loaded, with a loaded one's checks (sticky EPERM, trailing
 * slash ENOTDIR); its dirty negative hides the store's name until the
 * commit. A hard-linked one's other name has the right nlink and ctime
 * (loaded before the commit it counts the drop; while the drop's batch is
 * committing it waits: -EAGAIN without a committer), an open one lives
 * until its release; after a restart the store says the same. */
static void test_unlink_uncached(void **state)
{
	struct fx *f = *state;
	const struct cred u1 = { .uid = 1000, .gid = 1000 }, u2 = { .uid = 2000, .gid = 2000 };
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0777, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/st"), 01777, NULL), 0);
	uint64_t ino[NFILES];
	ns_attr a, held;
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/d/f%d", i);
		create_ok(f, p);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
		ino[i] = a.ino;
	}
	assert_int_equal(ns_open(f->ns, &u2, P("/st/theirs"), O_CREAT | O_EXCL, 0644, false, NULL), 0);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/d/f1"), P("/twin")), 0);
	ns_fixture_reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st"), true, &a), 0);
	uint64_t reloads = stats(f).reloads, inodes = f->shm->slab[SLAB_INODE].live;
	for (int i = 4; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f1")), 0);
	assert_int_equal(stats(f).reloads, reloads);
	assert_int_equal(f->shm->slab[SLAB_INODE].live, inodes);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f4")), -ENOENT);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f3/")), -ENOTDIR);
	assert_int_equal(ns_unlink(f->ns, &u1, P("/st/theirs")), -EPERM);
	/* The batch with the drop is being committed: the store may or may
	 * not have it, so /twin's inode waits for the publish. */
	struct journal_batch *b = ns_swap(f->ns);
	assert_non_null(b);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/twin"), true, &a), -EAGAIN);
	struct store_commit_times ct;
	assert_int_equal(store_commit(f->st, b, &ct), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/twin"), true, &a), -EAGAIN);
	ns_publish(f->ns, b);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/twin"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/twin"), P("/twin2")), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/twin"), true, &a), 0);
	int64_t linked = a.ctime_ns;
	ns_fixture_reopen(f);
	usleep(2000);
	reloads = stats(f).reloads;
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/twin2")), 0);
	assert_int_equal(stats(f).reloads, reloads);
	/* Loaded before the drop's commit: counted, and dirty (for fsck). */
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/twin"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	assert_true(a.ctime_ns > linked);
	struct fsck_report rep = { 0 };
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	fsck_report_free(&rep);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d/f2"), O_RDONLY, 0, true, &held), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f2")), 0);
	commit_all(f);
	assert_int_equal(ns_stat_ino(f->ns, held.ino, &a), 0);
	assert_int_equal(a.nlink, 0);
	ns_release(f->ns, held.ino);
	assert_int_equal(ns_stat_ino(f->ns, held.ino, &a), -ENOENT);
	for (int i = 4; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), -ENOENT);
	}
	ns_fixture_reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), true, &a), 0);
	assert_int_equal(a.size, 2); /* f0 and f3 */
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f3"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f5"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/theirs"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/twin"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	struct mc_inode_rec rec;
	char t[MC_SYMLINK_MAX];
	size_t tlen;
	for (int i = 2; i < NFILES; i++)
		if (i != 3)
			assert_int_equal(store_get_inode(f->st, ino[i], &rec, t, &tlen), -ENOENT);
}

/* An rmtree journals the directory it empties once per attempt, not per
 * name (ns_name.c, dir_defer_begin): that record is written however the
 * attempt ends. Here one fails half way (a file of /t/z it may not
 * remove) after emptying and removing /t/a in small lock holds: what the
 * store has after the commit is what the cache showed, entry counts and
 * times alike. */
static void test_rmtree_fails_midway(void **state)
{
	struct fx *f = *state;
	const struct cred u1 = { .uid = 1000, .gid = 1000 };
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t"), 0777, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &u1, P("/t/a"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &u1, P("/t/b"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t/z"), 0755, NULL), 0);
	for (int i = 0; i < 50; i++) {
		snprintf(p, sizeof(p), "/t/a/f%02d", i);
		assert_int_equal(ns_open(f->ns, &u1, P(p), O_CREAT | O_EXCL, 0644, false, NULL), 0);
		snprintf(p, sizeof(p), "/t/b/f%02d", i);
		assert_int_equal(ns_open(f->ns, &u1, P(p), O_CREAT | O_EXCL, 0644, false, NULL), 0);
	}
	create_ok(f, "/t/z/x");
	ns_fixture_reopen(f);
	/* half of /t/b cached, half not */
	ns_attr a, t0, b0;
	for (int i = 0; i < 50; i += 2) {
		snprintf(p, sizeof(p), "/t/b/f%02d", i);
		assert_int_equal(ns_stat(f->ns, &u1, P(p), true, &a), 0);
	}
	usleep(2000);
	assert_int_equal(ns_rmtree(f->ns, &u1, P("/t"), 7), -EACCES);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t/a"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t/b"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t"), true, &t0), 0);
	assert_int_equal(t0.size, 1);
	assert_int_equal(t0.nlink, 3);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t/z"), true, &b0), 0);
	assert_int_equal(b0.size, 1);
	ns_fixture_reopen(f);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t"), true, &a), 0);
	assert_int_equal(a.size, 1);
	assert_int_equal(a.nlink, 3);
	assert_int_equal(a.mtime_ns, t0.mtime_ns);
	assert_int_equal(a.ctime_ns, t0.ctime_ns);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t/a"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &u1, P("/t/z/x"), true, &a), 0);
	struct fsck_report rep = { 0 };
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	fsck_report_free(&rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rmtree_mixed_linear, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_unlink_uncached, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_rmtree_fails_midway, setup, ns_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
