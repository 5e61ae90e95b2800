/* test-ns_memory.c - unit tests of the namespace's memory (server/ns.h):
 * rule 1 (once a tree is gone, entries, inodes and segment use are back to
 * their baseline, for a tree made in the cache, loaded from the store or
 * removed by rmtree), and a full segment (ENOSPC changes nothing, and what
 * was created survives). */
#include "ns_posix_fixture.h"

/* ---- rule 1: memory comes back after the tree is gone --------------------- */

static void baseline(struct fx *f, struct ns_counts *c)
{
	while (commit_now(f))
		;
	ns_get_counts(f->ns, c);
}

static void check_back_to(struct fx *f, const struct ns_counts *b)
{
	struct ns_counts c;
	baseline(f, &c);
	assert_int_equal(c.positive, b->positive);
	assert_int_equal(c.negative, b->negative);
	assert_int_equal(c.inodes, b->inodes);
	assert_int_equal(c.shm_used, b->shm_used);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
}

/* The name "/big" is looked up once first so that its (negative) entry in
 * the root is part of the baseline: what must come back is everything
 * below it. */
static void test_rule1_unlink_all_rmdir(void **state)
{
	struct fx *f = *state;
	assert_int_equal(st_err(f, &root_cred, "/big"), -ENOENT);
	struct ns_counts b;
	baseline(f, &b);
	mkdir_ok(f, "/big", 0755);
	fill_dir(f, "/big", 1000);
	struct ns_counts mid;
	ns_get_counts(f->ns, &mid);
	assert_true(mid.positive >= b.positive + 1000);
	commit_now(f);
	char p[256];
	for (int i = 0; i < 1000; i++) {
		snprintf(p, sizeof(p), i % 3 ? "/big/file-%d" : "/big/a-longer-file-name-%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/big")), 0);
	check_back_to(f, &b);
}

/* The same when /big comes from the store (not complete: every unlink
 * leaves a negative entry, pinned until committed): they must go at once,
 * not wait for the shrinker. */
static void test_rule1_from_store(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/big", 0755);
	fill_dir(f, "/big", 1000);
	reopen(f);
	assert_int_equal(st_err(f, &root_cred, "/big/nothing"), -ENOENT);
	struct ns_counts b;
	baseline(f, &b);
	char p[256];
	for (int i = 0; i < 1000; i++) {
		snprintf(p, sizeof(p), i % 3 ? "/big/file-%d" : "/big/a-longer-file-name-%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	struct ns_counts mid;
	ns_get_counts(f->ns, &mid);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/big")), 0);
	struct ns_counts after;
	ns_get_counts(f->ns, &after);
	/* Freed before any commit: the last unlink left /big empty, hence
	 * complete, and its negatives (/big/nothing too) went then. */
	assert_true(mid.negative < b.negative);
	assert_true(after.negative <= b.negative + 1);
	assert_true(after.positive <= b.positive);
	/* Baseline had /big positive and /big/nothing negative; after: /big
	 * negative in the root. */
	struct ns_counts c;
	baseline(f, &c);
	assert_int_equal(c.positive, b.positive - 1);
	assert_true(c.negative <= b.negative);
	assert_true(c.shm_used <= b.shm_used);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
}

static void test_rule1_rmtree(void **state)
{
	struct fx *f = *state;
	assert_int_equal(st_err(f, &root_cred, "/t"), -ENOENT);
	struct ns_counts b;
	baseline(f, &b);
	mkdir_ok(f, "/t", 0755);
	mkdir_ok(f, "/t/a", 0755);
	mkdir_ok(f, "/t/a/b", 0755);
	mkdir_ok(f, "/t/c", 0755);
	fill_dir(f, "/t", 300);
	fill_dir(f, "/t/a", 300);
	fill_dir(f, "/t/a/b", 300);
	fill_dir(f, "/t/c", 100);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/t/a"), P("/t/c/link")), 0);
	commit_now(f);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 64), 0);
	assert_int_equal(st_err(f, &root_cred, "/t"), -ENOENT);
	check_back_to(f, &b);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 64), -ENOENT);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/"), 64), -EBUSY);
	/* A file: removed like unlink. */
	create_ok(f, "/lone");
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/lone"), 64), 0);
	assert_int_equal(st_err(f, &root_cred, "/lone"), -ENOENT);
	/* Permission: a user may not remove root's tree from a 0755 dir. */
	mkdir_ok(f, "/u", 0777);
	mkdir_ok(f, "/u/v", 0755);
	create_ok(f, "/u/v/w");
	assert_int_equal(ns_rmtree(f->ns, &user_cred, P("/u/v"), 64), -EACCES);
	st_ok(f, "/u/v/w");
}

/* ---- a full segment -------------------------------------------------------- */

static bool counts_same(const struct ns_counts *a, const struct ns_counts *b)
{
	return a->positive == b->positive && a->negative == b->negative &&
	       a->inodes == b->inodes && a->shm_used == b->shm_used &&
	       a->journal_records == b->journal_records && a->dentries_dirty == b->dentries_dirty &&
	       a->inodes_dirty == b->inodes_dirty;
}

static void test_enospc(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	char p[64];
	int n = 0, rc;
	struct ns_counts before, after;
	for (;;) {
		snprintf(p, sizeof(p), "/d/f%d", n);
		ns_get_counts(f->ns, &before);
		rc = create_err(f, &root_cred, p);
		if (rc != 0)
			break;
		n++;
		/* No commit: everything stays dirty, so nothing can be evicted
		 * (and there is no committer to force). */
		assert_true(n < 100000);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 100);
	ns_get_counts(f->ns, &after);
	assert_true(counts_same(&before, &after));
	assert_true(after.alloc_failures > 0);
	assert_int_equal(st_err(f, &root_cred, p), -ENOENT);
	assert_int_equal(st_ok(f, "/d").size, (uint64_t)n);
	/* mkdir, symlink and link fail cleanly too. */
	ns_get_counts(f->ns, &before);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d/newdir"), 0755, NULL), -ENOSPC);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("a-target-that-needs-a-blob"), P("/d/sl")),
	                 -ENOSPC);
	ns_get_counts(f->ns, &after);
	assert_true(counts_same(&before, &after));
	assert_int_equal(st_ok(f, "/d").size, (uint64_t)n);
	/* A rename that needs a new dentry in the root. */
	ns_get_counts(f->ns, &before);
	rc = do_rename(f, "/d/f1", "/moved-out");
	ns_get_counts(f->ns, &after);
	if (rc == -ENOSPC) {
		assert_true(counts_same(&before, &after));
		st_ok(f, "/d/f1");
		assert_int_equal(st_err(f, &root_cred, "/moved-out"), -ENOENT);
	} else {
		assert_int_equal(rc, 0); /* a free dentry slot was left */
		assert_int_equal(do_rename(f, "/moved-out", "/d/f1"), 0);
	}

	/* Removing entries makes room again. */
	commit_now(f);
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	commit_now(f);
	snprintf(p, sizeof(p), "/d/f%d", n);
	assert_int_equal(create_err(f, &root_cred, p), 0);
	st_ok(f, p);
	assert_int_equal(ns_link(f->ns, &root_cred, P(p), P("/d/hard")), 0);
	/* Everything created survives a commit and reopen. */
	reopen(f);
	assert_int_equal(st_ok(f, "/d").size, (uint64_t)n - 10 + 2);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_rule1_unlink_all_rmdir),
		T(test_rule1_from_store),
		T(test_rule1_rmtree),
		cmocka_unit_test_setup_teardown(test_enospc, setup_small, teardown),
	};
	return cmocka_run_group_tests_name("ns_memory", tests, NULL, NULL);
}
