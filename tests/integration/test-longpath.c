/* test-longpath.c - mc_path_max_set against a real mcached: by default
 * every path call answers ENAMETOOLONG past 4095 bytes, as POSIX; a client
 * that raised its limit creates, stats, renames, links, lists and removes
 * deeper than that, with search permission still checked on every
 * directory from the root; symlink targets keep the POSIX limit; the limit
 * is per client, and its bounds are checked. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

static int group_setup(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	return server_start(&srv, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

#define LEVELS 24 /* of 201 bytes ("/" and 200): 4,824 bytes */

/* The path of the directory `levels` deep under top, into buf. */
static char *deep_path(char *buf, const char *top, int levels)
{
	char name[201];
	memset(name, 'd', 200);
	name[200] = '\0';
	strcpy(buf, top);
	for (int i = 0; i < levels; i++) {
		strcat(buf, "/");
		strcat(buf, name);
	}
	return buf;
}

/* Make top and LEVELS directories under it with c; return the deepest. */
static char *make_deep(mc_client *c, char *buf, const char *top)
{
	assert_int_equal(mc_mkdir(c, top, 0755), 0);
	for (int i = 1; i <= LEVELS; i++)
		assert_int_equal(mc_mkdir(c, deep_path(buf, top, i), 0755), 0);
	return buf;
}

static void test_default_posix(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	char *p = malloc(8192);
	struct stat st;
	deep_path(p, "/posix", LEVELS);
	assert_true(strlen(p) > 4095);
	EXPECT_ERR(mc_mkdir(c, p, 0755), ENAMETOOLONG);
	EXPECT_ERR(mc_stat(c, p, &st), ENAMETOOLONG);
	EXPECT_ERR(mc_open(c, p, O_RDONLY, 0), ENAMETOOLONG);
	assert_null(mc_opendir(c, p));
	assert_int_equal(errno, ENAMETOOLONG);
	EXPECT_ERR(mc_path_max_set(c, 4095), EINVAL);
	EXPECT_ERR(mc_path_max_set(c, MC_LONG_PATH_MAX + 1), EINVAL);
	EXPECT_ERR(mc_path_max_set(NULL, 8192), EFAULT);
	free(p);
	mc_disconnect(c);
}

static void test_raised(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	mc_client *other = harness_client(&srv);
	char *p = malloc(16384), *q = malloc(16384);
	struct stat st, st2;
	assert_int_equal(mc_path_max_set(c, MC_LONG_PATH_MAX), 0);
	make_deep(c, p, "/long");
	size_t dlen = strlen(p);
	assert_true(dlen > 4095);
	assert_int_equal(mc_stat(c, p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));

	/* create, stat, rename, link, unlink there */
	snprintf(q, 16384, "%s/f", p);
	int fd = mc_open(c, q, O_CREAT | O_EXCL | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_lstat(c, q, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	char *r = malloc(16384);
	snprintf(r, 16384, "%s/g", p);
	assert_int_equal(mc_rename(c, q, r), 0);
	EXPECT_ERR(mc_lstat(c, q, &st2), ENOENT);
	assert_int_equal(mc_lstat(c, r, &st2), 0);
	assert_int_equal(st2.st_ino, st.st_ino);
	assert_int_equal(mc_link(c, r, q), 0);
	assert_int_equal(mc_lstat(c, q, &st2), 0);
	assert_int_equal(st2.st_nlink, 2);
	assert_int_equal(mc_chmod(c, q, 0600), 0);
	assert_int_equal(mc_truncate(c, q, 7), 0);
	assert_int_equal(mc_stat(c, r, &st2), 0);
	assert_int_equal(st2.st_mode & 07777, 0600);
	assert_int_equal(st2.st_size, 7);

	/* a listing of the deep directory */
	MC_DIR *d = mc_opendir(c, p);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = mc_readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	assert_int_equal(n, 2);
	assert_int_equal(mc_closedir(d), 0);

	/* a symlink there: its target keeps the POSIX limit */
	snprintf(q, 16384, "%s/l", p);
	assert_int_equal(mc_symlink(c, "g", q), 0);
	EXPECT_ERR(mc_symlink(c, p, q), ENAMETOOLONG);

	/* another client keeps the POSIX limit */
	EXPECT_ERR(mc_stat(other, r, &st2), ENAMETOOLONG);

	/* a directory deep down closed to others: still checked for them */
	deep_path(q, "/long", 3);
	assert_int_equal(mc_chmod(c, q, 0700), 0);
	struct mc_cred nobody = { .uid = 65534, .gid = 65534 };
	assert_int_equal(mc_cred_set(&nobody), 0);
	EXPECT_ERR(mc_stat(c, r, &st2), EACCES);
	assert_int_equal(mc_cred_set(NULL), 0);
	assert_int_equal(mc_chmod(c, q, 0755), 0);

	/* unlink and rmdir there; longer than the limit: ENAMETOOLONG */
	snprintf(q, 16384, "%s/f", p);
	assert_int_equal(mc_unlink(c, q), 0);
	assert_int_equal(mc_unlink(c, r), 0);
	snprintf(q, 16384, "%s/l", p);
	assert_int_equal(mc_unlink(c, q), 0);
	assert_int_equal(mc_rmdir(c, p), 0);
	EXPECT_ERR(mc_stat(c, p, &st2), ENOENT);
	assert_int_equal(mc_path_max_set(c, 8192), 0);
	memset(q, 'y', 9000);
	q[0] = '/';
	q[9000] = '\0';
	EXPECT_ERR(mc_stat(c, q, &st2), ENAMETOOLONG);
	/* back to the default */
	assert_int_equal(mc_path_max_set(c, 4096), 0);
	EXPECT_ERR(mc_stat(c, r, &st2), ENAMETOOLONG);
	free(p);
	free(q);
	free(r);
	mc_disconnect(other);
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_posix),
		cmocka_unit_test(test_raised),
	};
	return cmocka_run_group_tests_name("longpath", tests, group_setup, group_teardown);
}
