/* test-ns_miss.c - unit tests of server/ns_miss.c over a real LMDB store
 * and segment: the read-ahead of a removal's store read (note 5). Removals
 * of uncached files in name order read the store a few times, not once
 * each; a name read ahead is never used once a commit was published after
 * the read, nor against the cache's word, nor in another namespace, nor
 * where the sticky rule needs the file's owner; a removal's miss queues
 * no warmer read-ahead. */
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

#include <cmocka.h>

#include "cred.h"
#include "fsck.h"
#include "journal.h"
#include "mc_shm.h"
#include "ns.h"
#include "shm.h"
#include "shrink.h"
#include "store.h"
#include "ns_fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)
#define NFILES 200

static const struct cred root_cred = { .uid = 0, .gid = 0 };

/* A fixture whose store applies every commit to its tables: the names
 * read ahead are the tables' (store_get_dentry_ahead). */
static int setup(void **state)
{
	struct store_opts o = { .root_mode = 0755, .apply_batches = 1 };
	return ns_fixture_setup_opts(state, "test-ns_miss", 8 * MIB, &o);
}

static void create_ok(struct fx *f, const struct cred *c, const char *path)
{
	int rc = ns_open(f->ns, c, P(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
	if (rc != 0)
		fail_msg("create %s: %d", path, rc);
}

static void unlink_is(struct fx *f, const struct cred *c, const char *path, int want)
{
	int rc = ns_unlink(f->ns, c, P(path));
	if (rc != want)
		fail_msg("unlink %s: %d, not %d", path, rc, want);
}

/* /d with n files f0000.. after a restart (none cached). */
static void make_dir(struct fx *f, int n)
{
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), 0);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		create_ok(f, &root_cred, p);
	}
	ns_fixture_reopen(f);
}

/* Uncached files removed in name order: each removal's read reads more of
 * the names after it, so a handful of reads serve them all; in reverse
 * order nothing is read ahead that goes unused for long. Either way every
 * file goes, for good. */
static void test_in_order(void **state)
{
	struct fx *f = *state;
	char p[64];
	make_dir(f, NFILES);
	uint64_t reads = ns_fixture_counts(f).miss_reads;
	for (int i = 0; i < NFILES / 2; i++) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		unlink_is(f, &root_cred, p, 0);
	}
	uint64_t in_order = ns_fixture_counts(f).miss_reads - reads;
	print_message("# %d unlinks in name order: %llu store reads, %llu names read ahead used\n",
	              NFILES / 2, (unsigned long long)in_order,
	              (unsigned long long)ns_fixture_counts(f).miss_ahead_used);
	assert_true(in_order <= 10);
	assert_int_equal(ns_fixture_counts(f).miss_ahead_used, NFILES / 2 - (in_order - 1)); /* /d read too */
	reads = ns_fixture_counts(f).miss_reads;
	for (int i = NFILES - 1; i >= NFILES / 2; i--) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		unlink_is(f, &root_cred, p, 0);
	}
	assert_int_equal(ns_fixture_counts(f).miss_reads - reads, NFILES / 2);
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		unlink_is(f, &root_cred, p, -ENOENT);
	}
	ns_fixture_reopen(f);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), true, &a), 0);
	assert_int_equal(a.size, 0);
	struct fsck_report rep = { 0 };
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	fsck_report_free(&rep);
}

/* Names that batches not applied yet hold (a store that applies every
 * 1000 commits): nothing is read ahead of them, and each removal reads
 * its name as before. */
static int setup_overlay(void **state)
{
	return ns_fixture_setup(state, "test-ns_miss", 8 * MIB);
}

static void test_in_overlay(void **state)
{
	struct fx *f = *state;
	char p[64];
	make_dir(f, 20);
	uint64_t reads = ns_fixture_counts(f).miss_reads;
	for (int i = 0; i < 20; i++) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		unlink_is(f, &root_cred, p, 0);
	}
	assert_int_equal(ns_fixture_counts(f).miss_reads - reads, 20 + 1); /* and /d */
	assert_int_equal(ns_fixture_counts(f).miss_ahead_used, 0);
	ns_fixture_reopen(f);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), true, &a), 0);
	assert_int_equal(a.size, 0);
}

/* Names read ahead, then changed: while nothing is published the cache
 * has the change (a dirty negative, a positive entry) and has the last
 * word; once a commit is published and the entries it made clean are
 * evicted, the names read ahead are not used any more: the store is read
 * again. */
static void test_changed_after_read(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	make_dir(f, 12);
	unlink_is(f, &root_cred, "/d/f0000", 0);
	unlink_is(f, &root_cred, "/d/f0001", 0);  /* reads f0002 .. f0005 ahead */
	uint64_t used = ns_fixture_counts(f).miss_ahead_used;
	/* Not published: the cache says (a dirty negative, its inode gone
	 * from the cache too; a positive entry). */
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/d/f0002"), 0), 0);
	unlink_is(f, &root_cred, "/d/f0002", -ENOENT);
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/d/f0003"), P("/g3")), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d/f0003"), 0755, NULL), 0);
	unlink_is(f, &root_cred, "/d/f0003", -EISDIR);
	assert_int_equal(ns_fixture_counts(f).miss_ahead_used, used);
	/* Published, the negative entry evicted: f0004 is gone from the
	 * store, which only a new read can tell. */
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/d/f0004"), P("/g4")), 0);
	commit_all(f);
	shrink_now(f->ns, 0, UINT64_MAX);
	unlink_is(f, &root_cred, "/d/f0004", -ENOENT);
	assert_int_equal(ns_fixture_counts(f).miss_ahead_used, used);
	unlink_is(f, &root_cred, "/d/f0005", 0);  /* read ahead again, by that read */
	assert_int_equal(ns_fixture_counts(f).miss_ahead_used, used + 1);
	ns_fixture_reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/g3"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/g4"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f0003"), true, &a), 0);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f0005"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), true, &a), 0);
	assert_int_equal(a.size, 7); /* f0003 and f0006 .. f0011 */
	struct fsck_report rep = { 0 };
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	fsck_report_free(&rep);
}

/* Names read ahead in one namespace say nothing of another's, even at the
 * same published sequence and parent inode number: there the name is a
 * directory. (A thread's removal read there replaces them.) */
static void test_other_namespace(void **state)
{
	struct fx *f = *state;
	void *state2 = NULL;
	make_dir(f, 8);
	unlink_is(f, &root_cred, "/d/f0000", 0);
	unlink_is(f, &root_cred, "/d/f0001", 0);  /* reads f0002 .. f0005 ahead */
	assert_int_equal(setup(&state2), 0);
	struct fx *g = state2;
	char p[64];
	assert_int_equal(ns_mkdir(g->ns, &root_cred, P("/d"), 0755, NULL), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		if (i == 2)
			assert_int_equal(ns_mkdir(g->ns, &root_cred, P(p), 0755, NULL), 0);
		else
			create_ok(g, &root_cred, p);
	}
	ns_fixture_reopen(g);
	assert_int_equal(ns_fixture_counts(g).committed_seq, ns_fixture_counts(f).committed_seq);
	unlink_is(g, &root_cred, "/d/f0002", -EISDIR);
	assert_int_equal(ns_rmdir(g->ns, &root_cred, P("/d/f0002")), 0);
	ns_fixture_teardown(&state2);
	unlink_is(f, &root_cred, "/d/f0002", 0);
}

/* A name read ahead for root, in a sticky directory: another user's
 * removal of someone else's file there still needs the owner (EPERM), and
 * reads the inode for it. */
static void test_sticky(void **state)
{
	struct fx *f = *state;
	const struct cred u1 = { .uid = 1000, .gid = 1000 }, u2 = { .uid = 2000, .gid = 2000 };
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/st"), 01777, NULL), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(p, sizeof(p), "/st/f%04d", i);
		create_ok(f, &u2, p);
	}
	ns_fixture_reopen(f);
	unlink_is(f, &root_cred, "/st/f0000", 0);
	unlink_is(f, &root_cred, "/st/f0001", 0);  /* reads f0002 .. f0005 ahead */
	unlink_is(f, &u1, "/st/f0002", -EPERM);
	unlink_is(f, &u2, "/st/f0003", 0);
	unlink_is(f, &root_cred, "/st/f0004", 0);
	ns_fixture_reopen(f);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/f0002"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st"), true, &a), 0);
	assert_int_equal(a.size, 4); /* f0002, f0005 .. f0007 */
}

static void count_miss(void *arg, uint64_t dir_ino)
{
	(void)dir_ino;
	(*(unsigned *)arg)++;
}

/* A removal's miss does not queue its directory for the warmers'
 * read-ahead (its names are going; its own read reads ahead); a lookup's
 * miss does. */
static void test_no_warm_for_removal(void **state)
{
	struct fx *f = *state;
	unsigned hooked = 0;
	make_dir(f, 8);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), true, &a), 0);
	ns_set_miss_hook(f->ns, count_miss, &hooked);
	unlink_is(f, &root_cred, "/d/f0000", 0);
	unlink_is(f, &root_cred, "/d/f0001", 0);
	unlink_is(f, &root_cred, "/d/f0007", 0);
	assert_int_equal(hooked, 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f0003"), true, &a), 0);
	assert_int_equal(hooked, 1);
	ns_set_miss_hook(f->ns, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_in_overlay, setup_overlay, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_changed_after_read, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_other_namespace, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sticky, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_no_warm_for_removal, setup, ns_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
