/* test-batch.c - batches against a real server: the queued paths of a
 * batch whose path storage moves many times while it fills (long names,
 * renames carrying two paths, stats) reach the server intact and in
 * order. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

/* Path i of set s: /bp/ then a long name unique to (s, i). */
static void long_path(char *p, size_t n, char s, int i)
{
	char name[230];
	memset(name, s, sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(p, n, "/bp/%04d%s", i, name + 4);
}

static void test_paths_move(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	assert_int_equal(mc_mkdir(c, "/bp", 0755), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);

	/* 400 creates of 235-byte paths (about 94 KiB of paths: the storage
	 * moves several times), each third one renamed at once, each fifth
	 * one stat'ed: every op's paths must be the ones queued. */
	enum { N = 400 };
	char p[256], q[256];
	struct stat st[N];
	int idx[N][3];
	for (int i = 0; i < N; i++) {
		long_path(p, sizeof(p), 'a', i);
		idx[i][0] = mc_batch_create(b, p, 0600 | (i & 7));
		idx[i][1] = idx[i][2] = -1;
		if (i % 3 == 0) {
			long_path(q, sizeof(q), 'b', i);
			idx[i][1] = mc_batch_rename(b, p, q);
		}
		if (i % 5 == 0)
			idx[i][2] = mc_batch_stat(b, i % 3 == 0 ? q : p, &st[i]);
		for (int k = 0; k < 3; k++)
			assert_true(k > 0 || idx[i][k] >= 0);
	}
	assert_int_equal(mc_batch_run(b), 0);
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 3; k++)
			if (idx[i][k] >= 0)
				assert_int_equal(mc_batch_error(b, (size_t)idx[i][k]), 0);
		struct stat sa, sb;
		long_path(p, sizeof(p), 'a', i);
		long_path(q, sizeof(q), 'b', i);
		int ra = mc_lstat(c, p, &sa), rb = mc_lstat(c, q, &sb);
		if (i % 3 == 0) {
			assert_int_equal(ra, -1);
			assert_int_equal(rb, 0);
			sa = sb;
		} else {
			assert_int_equal(ra, 0);
			assert_int_equal(rb, -1);
		}
		assert_int_equal(sa.st_mode, S_IFREG | 0600 | (i & 7));
		if (idx[i][2] >= 0)
			assert_int_equal(st[i].st_ino, sa.st_ino);
	}
	mc_batch_free(b);
	assert_int_equal(mc_rmtree(c, "/bp"), 0);
	mc_disconnect(c);
}

static int group_setup(void **state)
{
	(void)state;
	return server_start(&srv, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_move),
	};
	return cmocka_run_group_tests_name("batch", tests, group_setup, group_teardown);
}
