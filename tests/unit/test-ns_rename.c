/* test-ns_rename.c - unit tests of the namespace's rename (server/ns.h):
 * within a directory and across, over an existing name, into its own
 * subtree, of dots and busy names, and between hard links of one inode;
 * errno values as on tmpfs. */
#include "ns_posix_fixture.h"

/* ---- rename -------------------------------------------------------------- */

static void test_rename_same_dir(void **state)
{
	struct fx *f = *state;
	uint64_t ino = create_ok(f, "/a");
	assert_int_equal(do_rename(f, "/a", "/b"), 0);
	assert_int_equal(st_err(f, &root_cred, "/a"), -ENOENT);
	assert_int_equal(st_ok(f, "/b").ino, ino);
	assert_int_equal(st_ok(f, "/").size, 1);
	mkdir_ok(f, "/d", 0755);
	create_ok(f, "/d/x");
	assert_int_equal(do_rename(f, "/d", "/e"), 0);
	assert_int_equal(st_err(f, &root_cred, "/d/x"), -ENOENT);
	st_ok(f, "/e/x");
	ns_attr r = st_ok(f, "/");
	assert_int_equal(r.nlink, 3);
	assert_int_equal(r.size, 2);
	assert_int_equal(do_rename(f, "/missing", "/z"), -ENOENT);
	assert_int_equal(do_rename(f, "/b", "/nodir/z"), -ENOENT);
}

static void test_rename_across_dirs(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d1", 0755);
	mkdir_ok(f, "/d2", 0755);
	uint64_t fino = create_ok(f, "/d1/f");
	assert_int_equal(do_rename(f, "/d1/f", "/d2/g"), 0);
	assert_int_equal(st_ok(f, "/d2/g").ino, fino);
	assert_int_equal(st_err(f, &root_cred, "/d1/f"), -ENOENT);
	assert_int_equal(st_ok(f, "/d1").size, 0);
	assert_int_equal(st_ok(f, "/d2").size, 1);

	mkdir_ok(f, "/d1/sub", 0755);
	create_ok(f, "/d1/sub/inner");
	assert_int_equal(st_ok(f, "/d1").nlink, 3);
	assert_int_equal(do_rename(f, "/d1/sub", "/d2/sub"), 0);
	assert_int_equal(st_ok(f, "/d1").nlink, 2);
	assert_int_equal(st_ok(f, "/d1").size, 0);
	assert_int_equal(st_ok(f, "/d2").nlink, 3);
	assert_int_equal(st_ok(f, "/d2").size, 2);
	st_ok(f, "/d2/sub/inner");
	/* ".." of the moved directory is its new parent. */
	assert_int_equal(st_ok(f, "/d2/sub/..").ino, st_ok(f, "/d2").ino);
	/* All of it is what the store has after a commit. */
	reopen(f);
	assert_int_equal(st_ok(f, "/d2/g").ino, fino);
	assert_int_equal(st_err(f, &root_cred, "/d1/f"), -ENOENT);
	assert_int_equal(st_err(f, &root_cred, "/d1/sub"), -ENOENT);
	st_ok(f, "/d2/sub/inner");
	assert_int_equal(st_ok(f, "/d1").nlink, 2);
	assert_int_equal(st_ok(f, "/d2").nlink, 3);
	assert_int_equal(st_ok(f, "/d2").size, 2);
}

static void test_rename_replace(void **state)
{
	struct fx *f = *state;
	uint64_t x = create_ok(f, "/x");
	create_ok(f, "/y");
	assert_int_equal(do_rename(f, "/x", "/y"), 0);
	assert_int_equal(st_ok(f, "/y").ino, x);
	assert_int_equal(st_err(f, &root_cred, "/x"), -ENOENT);
	assert_int_equal(st_ok(f, "/").size, 1);

	/* Replacing a file that has another link keeps the other link. */
	create_ok(f, "/p");
	uint64_t q = create_ok(f, "/q");
	assert_int_equal(ns_link(f->ns, &root_cred, P("/q"), P("/q2")), 0);
	assert_int_equal(st_ok(f, "/q").nlink, 2);
	assert_int_equal(do_rename(f, "/p", "/q"), 0);
	assert_int_equal(st_ok(f, "/q2").ino, q);
	assert_int_equal(st_ok(f, "/q2").nlink, 1);

	/* Replacing an empty directory. */
	mkdir_ok(f, "/e1", 0755);
	mkdir_ok(f, "/e2", 0755);
	ns_attr e1 = st_ok(f, "/e1");
	uint32_t nl = st_ok(f, "/").nlink;
	uint64_t sz = st_ok(f, "/").size;
	assert_int_equal(do_rename(f, "/e1", "/e2"), 0);
	assert_int_equal(st_ok(f, "/e2").ino, e1.ino);
	assert_int_equal(st_ok(f, "/").nlink, nl - 1);
	assert_int_equal(st_ok(f, "/").size, sz - 1);
	/* Replacing a non-empty one. */
	mkdir_ok(f, "/full", 0755);
	create_ok(f, "/full/c");
	assert_int_equal(do_rename(f, "/e2", "/full"), -ENOTEMPTY);
	st_ok(f, "/e2");
	st_ok(f, "/full/c");
	/* Type mismatches. */
	assert_int_equal(do_rename(f, "/e2", "/y"), -ENOTDIR);
	assert_int_equal(do_rename(f, "/y", "/e2"), -EISDIR);
	assert_int_equal(do_rename(f, "/y/", "/z"), -ENOTDIR);
	assert_int_equal(do_rename(f, "/y", "/z/"), -ENOTDIR);
	st_ok(f, "/y");
	/* A directory with a trailing slash is fine. */
	assert_int_equal(do_rename(f, "/e2/", "/e3/"), 0);
	st_ok(f, "/e3");
}

static void test_rename_into_own_subtree(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0755);
	mkdir_ok(f, "/a/b", 0755);
	mkdir_ok(f, "/a/b/c", 0755);
	assert_int_equal(do_rename(f, "/a", "/a/b/c/d"), -EINVAL);
	assert_int_equal(do_rename(f, "/a", "/a/x"), -EINVAL);
	assert_int_equal(do_rename(f, "/a/b", "/a/b/c/d"), -EINVAL);
	/* The target an ancestor of the source: ENOTEMPTY (as Linux). */
	assert_int_equal(do_rename(f, "/a/b/c", "/a"), -ENOTEMPTY);
	st_ok(f, "/a/b/c");
	/* Renaming onto itself is allowed and changes nothing. */
	assert_int_equal(do_rename(f, "/a", "/a"), 0);
	st_ok(f, "/a/b/c");
}

static void test_rename_dots_busy(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0755);
	mkdir_ok(f, "/b", 0755);
	assert_int_equal(do_rename(f, "/a/.", "/c"), -EBUSY);
	assert_int_equal(do_rename(f, "/a", "/b/."), -EBUSY);
	assert_int_equal(do_rename(f, "/a/..", "/c"), -EBUSY);
	assert_int_equal(do_rename(f, "/", "/c"), -EBUSY);
	assert_int_equal(do_rename(f, "/a", "/"), -EBUSY);
	st_ok(f, "/a");
	st_ok(f, "/b");
}

static void test_rename_hardlinks_noop(void **state)
{
	struct fx *f = *state;
	uint64_t ino = create_ok(f, "/f");
	assert_int_equal(ns_link(f->ns, &root_cred, P("/f"), P("/g")), 0);
	ns_attr before = st_ok(f, "/");
	assert_int_equal(do_rename(f, "/f", "/g"), 0);
	assert_int_equal(st_ok(f, "/f").ino, ino);
	assert_int_equal(st_ok(f, "/g").ino, ino);
	assert_int_equal(st_ok(f, "/f").nlink, 2);
	ns_attr after = st_ok(f, "/");
	assert_int_equal(after.size, before.size);
	assert_int_equal(after.mtime_ns, before.mtime_ns);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_rename_same_dir),
		T(test_rename_across_dirs),
		T(test_rename_replace),
		T(test_rename_into_own_subtree),
		T(test_rename_dots_busy),
		T(test_rename_hardlinks_noop),
	};
	return cmocka_run_group_tests_name("ns_rename", tests, NULL, NULL);
}
