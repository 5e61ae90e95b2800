/* test-longpath.c - mc_path_max_set against a real mcached: by default
 * every path call answers ENAMETOOLONG past 4095 bytes, as POSIX; a client
 * that raised its limit creates, stats, renames, links, lists and removes
 * deeper than that, with search permission still checked on every
 * directory from the root; symlink targets keep the POSIX limit; the limit
 * is per client, and its bounds are checked, by the server too (an op asking
 * for more than 64 KiB gets 64 KiB). */
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

#include "frame.h"
#include "harness.h"
#include "mcache.h"


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
	mc_client *c = harness_client(&harness_srv);
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
	mc_client *c = harness_client(&harness_srv);
	mc_client *other = harness_client(&harness_srv);
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

/* One op on a raw connection: the result's err (0 or a positive errno). */
static int raw_op(int fd, uint64_t id, Mcache__OpCode code, const char *path, const char *path2,
                  uint32_t path_max)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Op *ops[] = { &op };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	op.code = code;
	op.path.data = (uint8_t *)path;
	op.path.len = strlen(path);
	if (path2) {
		op.path2.data = (uint8_t *)path2;
		op.path2.len = strlen(path2);
	}
	op.mode = 0755;
	op.path_max = path_max;
	req.id = id;
	req.n_ops = 1;
	req.ops = ops;
	uint8_t *buf;
	size_t len;
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("no reply: %s", strerror(-err));
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->n_results, 1);
	int res = rsp->results[0]->err;
	mcache__response__free_unpacked(rsp, NULL);
	return res;
}

/* "/" then "a/" repeated: len bytes, a path of that many components. */
static char *slashes(size_t len)
{
	char *p = malloc(len + 1);
	assert_non_null(p);
	p[0] = '/';
	for (size_t i = 1; i < len; i++)
		p[i] = (i % 2) ? 'a' : '/';
	p[len] = '\0';
	return p;
}

static void test_server_limit(void **state)
{
	(void)state;
	int fd = harness_connect(harness_srv.socket);
	assert_true(fd >= 0);
	Mcache__Hello hello = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	hello.version = MC_PROTO_VERSION;
	req.id = 1;
	req.hello = &hello;
	uint8_t *buf;
	size_t len;
	int err = 0;
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
	Mcache__Response *rsp = harness_read_response(fd, &err);
	assert_non_null(rsp);
	mcache__response__free_unpacked(rsp, NULL);

	assert_int_equal(raw_op(fd, 2, MCACHE__OP_CODE__OP_MKDIR, "/a", NULL, 0), 0);
	char *p4k = slashes(4096), *p64k = slashes(65535), *big = slashes(65536);
	/* no path_max, or less than PATH_MAX: the POSIX limit */
	assert_int_equal(raw_op(fd, 3, MCACHE__OP_CODE__OP_LSTAT, p4k, NULL, 0), ENAMETOOLONG);
	assert_int_equal(raw_op(fd, 4, MCACHE__OP_CODE__OP_LSTAT, p4k, NULL, 100), ENAMETOOLONG);
	/* raised: walked (and missing past /a) */
	assert_int_equal(raw_op(fd, 5, MCACHE__OP_CODE__OP_LSTAT, p4k, NULL, 8192), ENOENT);
	assert_int_equal(raw_op(fd, 6, MCACHE__OP_CODE__OP_LSTAT, p64k, NULL, 8192), ENAMETOOLONG);
	/* asking for more than 64 KiB gets 64 KiB */
	assert_int_equal(raw_op(fd, 7, MCACHE__OP_CODE__OP_LSTAT, p64k, NULL, UINT32_MAX), ENOENT);
	assert_int_equal(raw_op(fd, 8, MCACHE__OP_CODE__OP_LSTAT, big, NULL, UINT32_MAX),
	                 ENAMETOOLONG);
	/* a rename's second path is walked: raised too */
	assert_int_equal(raw_op(fd, 9, MCACHE__OP_CODE__OP_RENAME, "/a", p4k, 8192), ENOENT);
	/* a symlink's target is stored: POSIX's limit whatever is asked */
	assert_int_equal(raw_op(fd, 10, MCACHE__OP_CODE__OP_SYMLINK, "/l", p4k, UINT32_MAX),
	                 ENAMETOOLONG);
	free(p4k);
	free(p64k);
	free(big);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_posix),
		cmocka_unit_test(test_raised),
		cmocka_unit_test(test_server_limit),
	};
	return cmocka_run_group_tests_name("longpath", tests, harness_group_setup, harness_group_teardown);
}
