/* test-mcachefs_node.c - mcachefs's inode table: paths built from the names
 * inodes were found under, renames and removals through the mount,
 * lookup counts and forget, a table grown past its first size, and paths
 * too long. No mount, no server: the table alone. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mcachefs.h"

static struct stat st_of(uint64_t ino)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = (ino_t)ino;
	return st;
}

static void ref(struct fs *fs, uint64_t parent, const char *name, uint64_t ino)
{
	struct stat st = st_of(ino);
	assert_int_equal(fs_node_ref(fs, parent, name, &st, NULL), 0);
}

static void expect_path(struct fs *fs, uint64_t ino, const char *want)
{
	char buf[FS_PATH_MAX];
	assert_int_equal(fs_path(fs, ino, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static int setup(void **state)
{
	static struct fs fs;
	memset(&fs, 0, sizeof(fs));
	if (fs_nodes_init(&fs) < 0)
		return -1;
	*state = &fs;
	return 0;
}

static int teardown(void **state)
{
	fs_nodes_free(*state);
	return 0;
}

static void test_paths(void **state)
{
	struct fs *fs = *state;
	char buf[FS_PATH_MAX];
	expect_path(fs, FUSE_ROOT_ID, "/");
	ref(fs, FUSE_ROOT_ID, "a", 2);
	ref(fs, 2, "b", 3);
	ref(fs, 3, "c", 4);
	expect_path(fs, 4, "/a/b/c");
	assert_int_equal(fs_child_path(fs, 4, "d", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/a/b/c/d");
	assert_int_equal(fs_child_path(fs, FUSE_ROOT_ID, "x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x");
	assert_int_equal(fs_path(fs, 99, buf, sizeof(buf)), -ESTALE);   /* unknown */
	assert_int_equal(fs_path(fs, 4, buf, 6), -ENAMETOOLONG);         /* too small */
}

static void test_rename_unname(void **state)
{
	struct fs *fs = *state;
	char buf[FS_PATH_MAX];
	ref(fs, FUSE_ROOT_ID, "d", 10);
	ref(fs, 10, "f", 11);
	ref(fs, FUSE_ROOT_ID, "e", 12);
	/* A directory moved: every path below it follows. */
	fs_node_rename(fs, 10, 12, "moved");
	expect_path(fs, 11, "/e/moved/f");
	/* Another name removed leaves the node alone. */
	fs_node_unname(fs, 10, "other", 11);
	expect_path(fs, 11, "/e/moved/f");
	/* A name of another inode does not detach this one. */
	fs_node_unname(fs, 10, "f", 99);
	expect_path(fs, 11, "/e/moved/f");
	/* Its own name removed: reachable by handle only. */
	fs_node_unname(fs, 10, "f", 11);
	assert_int_equal(fs_path(fs, 11, buf, sizeof(buf)), -ESTALE);
	assert_int_equal(fs_child_path(fs, 11, "x", buf, sizeof(buf)), -ESTALE);
	/* Found again under another name (a hard link): named by it. */
	ref(fs, 12, "link", 11);
	expect_path(fs, 11, "/e/link");
}

static void test_forget(void **state)
{
	struct fs *fs = *state;
	char buf[FS_PATH_MAX];
	ref(fs, FUSE_ROOT_ID, "g", 20);
	ref(fs, FUSE_ROOT_ID, "g", 20);
	fs_node_forget(fs, 20, 1);
	expect_path(fs, 20, "/g");               /* one lookup left */
	fs_node_forget(fs, 20, 1);
	assert_int_equal(fs_path(fs, 20, buf, sizeof(buf)), -ESTALE);
	fs_node_forget(fs, FUSE_ROOT_ID, 100);   /* the root stays */
	expect_path(fs, FUSE_ROOT_ID, "/");
	fs_node_forget(fs, 12345, 1);            /* unknown: nothing */
}

static void test_grow(void **state)
{
	struct fs *fs = *state;
	char name[32], want[48];
	for (uint64_t i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "n%llu", (unsigned long long)i);
		ref(fs, FUSE_ROOT_ID, name, 1000 + i);
	}
	assert_true(fs->tabmask + 1 >= 5000);
	for (uint64_t i = 0; i < 5000; i += 499) {
		snprintf(want, sizeof(want), "/n%llu", (unsigned long long)i);
		expect_path(fs, 1000 + i, want);
	}
}

static void test_too_long(void **state)
{
	struct fs *fs = *state;
	char name[256], buf[FS_PATH_MAX];
	memset(name, 'x', 255);
	name[255] = '\0';
	uint64_t parent = FUSE_ROOT_ID;
	for (uint64_t i = 0; i < 256; i++) {     /* 256 * 256 = 65536 bytes */
		ref(fs, parent, name, 9000 + i);
		parent = 9000 + i;
	}
	/* Past PATH_MAX is fine: callers stand that deep below the mount. */
	assert_int_equal(fs_path(fs, 9015, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), 16 * 256);
	assert_int_equal(fs_path(fs, 9254, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), 255 * 256);
	assert_int_equal(buf[255 * 256 - 256], '/');
	assert_int_equal(buf[255 * 256 - 1], 'x');
	assert_int_equal(fs_path(fs, 9255, buf, sizeof(buf)), -ENAMETOOLONG);
	assert_int_equal(fs_child_path(fs, 9254, name, buf, sizeof(buf)), -ENAMETOOLONG);
	assert_int_equal(fs_path(fs, 9015, buf, 16 * 256), -ENAMETOOLONG); /* no room for NUL */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_unname, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_long, setup, teardown),
	};
	return cmocka_run_group_tests_name("mcachefs_node", tests, NULL, NULL);
}
