/* test-api.c - every libmcache call against a real mcached: success paths and
 * each errno case mcache.h lists, through the public API only. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"


/* errno-checking assertions: the call fails with -1 (or NULL) and errno e. */
#define EXPECT_NULL_ERR(call, e)                                              \
	do {                                                                  \
		errno = 0;                                                    \
		assert_null(call);                                            \
		assert_int_equal(errno, (e));                                 \
	} while (0)

static void mkfile(mc_client *c, const char *path, mode_t mode)
{
	int fd = mc_open(c, path, O_CREAT | O_EXCL | O_WRONLY, mode);
	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	assert_int_equal(mc_close(c, fd), 0);
}

static void mkdir_ok(mc_client *c, const char *path, mode_t mode)
{
	if (mc_mkdir(c, path, mode) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

static struct stat stat_ok(mc_client *c, const char *path)
{
	struct stat st;
	if (mc_lstat(c, path, &st) < 0)
		fail_msg("lstat %s: %s", path, strerror(errno));
	return st;
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A string of n copies of ch (static buffer, n < 8192). */
static const char *repeat(char ch, size_t n, const char *prefix)
{
	static char buf[8192];
	size_t p = strlen(prefix);
	memcpy(buf, prefix, p);
	memset(buf + p, ch, n);
	buf[p + n] = 0;
	return buf;
}

/* ---- connection -------------------------------------------------------- */

static void test_connect(void **state)
{
	(void)state;
	EXPECT_NULL_ERR(mc_connect("/nonexistent/mcached.sock"), ENOENT);
	EXPECT_NULL_ERR(mc_connect(repeat('x', 200, "/tmp/")), ENAMETOOLONG);

	setenv("MCACHE_SOCKET", harness_srv.socket, 1);
	mc_client *c = mc_connect(NULL);
	unsetenv("MCACHE_SOCKET");
	assert_non_null(c);
	struct stat st;
	assert_int_equal(mc_stat(c, "/", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_ino, 1);
	assert_int_equal(st.st_blksize, 4096);
	assert_int_equal(st.st_dev, 0);
	mc_disconnect(c);
	mc_disconnect(NULL);

	/* Many clients at once, each working. */
	mc_client *cs[16];
	for (int i = 0; i < 16; i++)
		cs[i] = harness_client(&harness_srv);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(mc_stat(cs[i], "/", &st), 0);
		mc_disconnect(cs[i]);
	}
}

static void test_path_checks(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	EXPECT_ERR(mc_stat(c, NULL, &st), EFAULT);
	EXPECT_ERR(mc_stat(c, "", &st), ENOENT);
	EXPECT_ERR(mc_mkdir(c, "", 0755), ENOENT);
	EXPECT_ERR(mc_stat(c, repeat('a', 4096, "/"), &st), ENAMETOOLONG);
	EXPECT_ERR(mc_mkdir(c, repeat('a', 4095, "/"), 0755), ENAMETOOLONG);
	EXPECT_ERR(mc_rename(c, "/", repeat('a', 4100, "/")), ENAMETOOLONG);
	EXPECT_ERR(mc_rename(c, "/x", NULL), EFAULT);
	EXPECT_NULL_ERR(mc_opendir(c, NULL), EFAULT);
	EXPECT_ERR(mc_open(c, "", O_RDONLY, 0), ENOENT);
	/* A 4095-byte path is sent; the server judges it. */
	errno = 0;
	assert_int_equal(mc_stat(c, repeat('a', 4094, "/"), &st), -1);
	assert_int_equal(errno, ENAMETOOLONG); /* its one component is > 255 */
	mc_disconnect(c);
}

/* ---- mkdir / rmdir ----------------------------------------------------- */

static void test_mkdir_rmdir(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	char path[8300];
	mkdir_ok(c, "/mk", 0750);
	struct stat st = stat_ok(c, "/mk");
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(st.st_uid, getuid());

	EXPECT_ERR(mc_mkdir(c, "/mk", 0755), EEXIST);
	EXPECT_ERR(mc_mkdir(c, "/mk/missing/x", 0755), ENOENT);
	mkfile(c, "/mk/f", 0644);
	EXPECT_ERR(mc_mkdir(c, "/mk/f/x", 0755), ENOTDIR);

	mkdir_ok(c, "/mk/sub", 0755);
	assert_int_equal(stat_ok(c, "/mk").st_nlink, 3);
	/* "." and ".." and repeated slashes are understood. */
	assert_int_equal(stat_ok(c, "//mk/./sub/../sub/").st_ino, stat_ok(c, "/mk/sub").st_ino);

	EXPECT_ERR(mc_rmdir(c, "/mk"), ENOTEMPTY);
	EXPECT_ERR(mc_rmdir(c, "/mk/f"), ENOTDIR);
	EXPECT_ERR(mc_rmdir(c, "/mk/sub/."), EINVAL);
	EXPECT_ERR(mc_rmdir(c, "/"), EBUSY);
	EXPECT_ERR(mc_rmdir(c, "/mk/nothing"), ENOENT);
	assert_int_equal(mc_rmdir(c, "/mk/sub"), 0);
	assert_int_equal(stat_ok(c, "/mk").st_nlink, 2);
	EXPECT_ERR(mc_lstat(c, "/mk/sub", &st), ENOENT);

	/* Components: 255 bytes fine, 256 ENAMETOOLONG. */
	snprintf(path, sizeof(path), "/mk/%s", repeat('n', 255, ""));
	mkdir_ok(c, path, 0755);
	assert_int_equal(mc_rmdir(c, path), 0);
	snprintf(path, sizeof(path), "/mk/%s", repeat('n', 256, ""));
	EXPECT_ERR(mc_mkdir(c, path, 0755), ENAMETOOLONG);

	assert_int_equal(mc_rmtree(c, "/mk"), 0);
	mc_disconnect(c);
}

/* ---- open / close / descriptors ---------------------------------------- */

static void test_open_close(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	mkdir_ok(c, "/op", 0755);
	EXPECT_ERR(mc_open(c, "/op/f", O_RDONLY, 0), ENOENT);

	int fd0 = mc_open(c, "/op/f", O_CREAT | O_EXCL | O_RDWR, 0640);
	assert_true(fd0 >= 0);
	int fd1 = mc_open(c, "/op/f", O_RDONLY, 0);
	assert_true(fd1 >= 0 && fd1 != fd0);
	assert_int_equal(mc_fstat(c, fd0, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	assert_int_equal(st.st_ino, stat_ok(c, "/op/f").st_ino);
	/* Lowest free descriptor first. */
	int lo = fd0 < fd1 ? fd0 : fd1;
	assert_int_equal(mc_close(c, lo), 0);
	int fd2 = mc_open(c, "/op/f", O_RDONLY, 0);
	assert_int_equal(fd2, lo);

	EXPECT_ERR(mc_open(c, "/op/f", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	EXPECT_ERR(mc_open(c, "/op", O_WRONLY, 0), EISDIR);
	EXPECT_ERR(mc_open(c, "/op", O_RDWR, 0), EISDIR);
	EXPECT_ERR(mc_open(c, "/op/f", O_RDONLY | O_DIRECTORY, 0), ENOTDIR);
	assert_int_equal(mc_symlink(c, "/op/f", "/op/l"), 0);
	EXPECT_ERR(mc_open(c, "/op/l", O_RDONLY | O_NOFOLLOW, 0), ELOOP);
	int fd3 = mc_open(c, "/op/l", O_RDONLY, 0);
	assert_true(fd3 >= 0);
	assert_int_equal(mc_fstat(c, fd3, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(mc_close(c, fd3), 0);

	/* Descriptors that are not open. */
	EXPECT_ERR(mc_close(c, 12345), EBADF);
	EXPECT_ERR(mc_close(c, -1), EBADF);
	EXPECT_ERR(mc_fstat(c, -1, &st), EBADF);
	EXPECT_ERR(mc_fstat(c, 999, &st), EBADF);
	EXPECT_ERR(mc_ftruncate(c, 999, 10), EBADF);
	EXPECT_ERR(mc_fsync(c, 999), EBADF);
	int hi = fd0 < fd1 ? fd1 : fd0;
	assert_int_equal(mc_close(c, hi), 0);
	EXPECT_ERR(mc_close(c, hi), EBADF);
	EXPECT_ERR(mc_fstat(c, hi, &st), EBADF);

	/* ftruncate, fsync, and creat truncating. */
	assert_int_equal(mc_ftruncate(c, fd2, 4321), -1); /* opened read-only */
	assert_true(errno == EINVAL || errno == EBADF);
	int fw = mc_open(c, "/op/f", O_WRONLY, 0);
	assert_true(fw >= 0);
	assert_int_equal(mc_ftruncate(c, fw, 4321), 0);
	EXPECT_ERR(mc_ftruncate(c, fw, -1), EINVAL);
	assert_int_equal(mc_fstat(c, fd2, &st), 0);
	assert_int_equal(st.st_size, 4321);
	assert_int_equal(mc_fsync(c, fw), 0);
	int fc = mc_creat(c, "/op/f", 0600);
	assert_true(fc >= 0);
	assert_int_equal(stat_ok(c, "/op/f").st_size, 0);
	assert_int_equal(stat_ok(c, "/op/f").st_mode & 07777, 0640); /* existing: mode kept */
	int fn = mc_creat(c, "/op/new", 0600);
	assert_true(fn >= 0);
	assert_int_equal(stat_ok(c, "/op/new").st_mode & 07777, 0600);
	assert_int_equal(mc_close(c, fc), 0);
	assert_int_equal(mc_close(c, fn), 0);
	assert_int_equal(mc_close(c, fw), 0);
	assert_int_equal(mc_close(c, fd2), 0);
	assert_int_equal(mc_rmtree(c, "/op"), 0);
	mc_disconnect(c);
}

static void test_unlinked_open(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	mkdir_ok(c, "/ul", 0755);
	int fd = mc_open(c, "/ul/f", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_ftruncate(c, fd, 77), 0);
	assert_int_equal(mc_unlink(c, "/ul/f"), 0);
	EXPECT_ERR(mc_stat(c, "/ul/f", &st), ENOENT);
	assert_int_equal(mc_fstat(c, fd, &st), 0);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(st.st_size, 77);
	assert_int_equal(mc_ftruncate(c, fd, 100), 0);
	assert_int_equal(mc_fstat(c, fd, &st), 0);
	assert_int_equal(st.st_size, 100);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_rmdir(c, "/ul"), 0);
	mc_disconnect(c);
}

/* ---- unlink / rename / link / symlink ---------------------------------- */

static void test_unlink(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	mkdir_ok(c, "/un", 0755);
	mkfile(c, "/un/f", 0644);
	EXPECT_ERR(mc_unlink(c, "/un"), EISDIR);
	EXPECT_ERR(mc_unlink(c, "/un/missing"), ENOENT);
	EXPECT_ERR(mc_unlink(c, "/un/f/x"), ENOTDIR);
	assert_int_equal(mc_unlink(c, "/un/f"), 0);
	EXPECT_ERR(mc_lstat(c, "/un/f", &st), ENOENT);
	EXPECT_ERR(mc_unlink(c, "/un/f"), ENOENT);
	assert_int_equal(mc_rmdir(c, "/un"), 0);
	mc_disconnect(c);
}

static void test_rename(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	mkdir_ok(c, "/rn", 0755);

	/* Replace a file. */
	mkfile(c, "/rn/a", 0644);
	mkfile(c, "/rn/b", 0600);
	assert_int_equal(mc_truncate(c, "/rn/b", 5), 0);
	ino_t a_ino = stat_ok(c, "/rn/a").st_ino;
	assert_int_equal(mc_rename(c, "/rn/a", "/rn/b"), 0);
	st = stat_ok(c, "/rn/b");
	assert_int_equal(st.st_ino, a_ino);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_nlink, 1);
	EXPECT_ERR(mc_lstat(c, "/rn/a", &st), ENOENT);

	/* Replace an empty directory; refuse a non-empty one. */
	mkdir_ok(c, "/rn/d1", 0755);
	mkdir_ok(c, "/rn/d2", 0755);
	mkfile(c, "/rn/d1/inner", 0644);
	ino_t d1 = stat_ok(c, "/rn/d1").st_ino;
	assert_int_equal(mc_rename(c, "/rn/d1", "/rn/d2"), 0);
	assert_int_equal(stat_ok(c, "/rn/d2").st_ino, d1);
	assert_int_equal(stat_ok(c, "/rn/d2/inner").st_nlink, 1);
	assert_int_equal(stat_ok(c, "/rn").st_nlink, 3); /* ., .., d2 */
	mkdir_ok(c, "/rn/d3", 0755);
	EXPECT_ERR(mc_rename(c, "/rn/d3", "/rn/d2"), ENOTEMPTY);

	/* Type mismatches, own subtree, root. */
	EXPECT_ERR(mc_rename(c, "/rn/b", "/rn/d3"), EISDIR);
	EXPECT_ERR(mc_rename(c, "/rn/d3", "/rn/b"), ENOTDIR);
	EXPECT_ERR(mc_rename(c, "/rn/d2", "/rn/d2/inside"), EINVAL);
	mkdir_ok(c, "/rn/d2/deeper", 0755);
	EXPECT_ERR(mc_rename(c, "/rn/d2", "/rn/d2/deeper/x"), EINVAL);
	EXPECT_ERR(mc_rename(c, "/rn/missing", "/rn/x"), ENOENT);
	EXPECT_ERR(mc_rename(c, "/rn/b", "/rn/missing/x"), ENOENT);
	EXPECT_ERR(mc_rename(c, "/", "/rn/root"), EBUSY);

	/* Rename to itself is a no-op; across directories moves. */
	assert_int_equal(mc_rename(c, "/rn/b", "/rn/b"), 0);
	assert_int_equal(mc_rename(c, "/rn/b", "/rn/d3/b"), 0);
	assert_int_equal(stat_ok(c, "/rn/d3/b").st_ino, a_ino);
	assert_int_equal(mc_rename(c, "/rn/d3", "/rn/d2/deeper/d3"), 0);
	assert_int_equal(stat_ok(c, "/rn/d2/deeper/d3/b").st_ino, a_ino);
	assert_int_equal(stat_ok(c, "/rn/d2/deeper").st_nlink, 3);
	assert_int_equal(mc_rmtree(c, "/rn"), 0);
	mc_disconnect(c);
}

static void test_links(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkdir_ok(c, "/ln", 0755);
	mkfile(c, "/ln/a", 0644);
	assert_int_equal(mc_link(c, "/ln/a", "/ln/b"), 0);
	struct stat sa = stat_ok(c, "/ln/a"), sb = stat_ok(c, "/ln/b");
	assert_int_equal(sa.st_ino, sb.st_ino);
	assert_int_equal(sa.st_nlink, 2);
	assert_int_equal(sb.st_nlink, 2);
	mkdir_ok(c, "/ln/sub", 0755);
	assert_int_equal(mc_link(c, "/ln/a", "/ln/sub/c"), 0);
	assert_int_equal(stat_ok(c, "/ln/b").st_nlink, 3);
	EXPECT_ERR(mc_link(c, "/ln/sub", "/ln/dirlink"), EPERM);
	EXPECT_ERR(mc_link(c, "/ln/a", "/ln/b"), EEXIST);
	EXPECT_ERR(mc_link(c, "/ln/missing", "/ln/x"), ENOENT);
	assert_int_equal(mc_unlink(c, "/ln/a"), 0);
	assert_int_equal(stat_ok(c, "/ln/b").st_nlink, 2);
	assert_int_equal(mc_unlink(c, "/ln/sub/c"), 0);
	assert_int_equal(stat_ok(c, "/ln/b").st_nlink, 1);
	assert_int_equal(mc_rmtree(c, "/ln"), 0);
	mc_disconnect(c);
}

static void test_symlinks(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	char buf[64];
	mkdir_ok(c, "/sy", 0755);
	mkfile(c, "/sy/f", 0644);
	assert_int_equal(mc_symlink(c, "f", "/sy/rel"), 0);
	assert_int_equal(mc_symlink(c, "/sy/f", "/sy/abs"), 0);
	st = stat_ok(c, "/sy/rel");
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(st.st_size, 1);
	assert_int_equal(mc_stat(c, "/sy/rel", &st), 0);
	assert_int_equal(st.st_ino, stat_ok(c, "/sy/f").st_ino);
	assert_int_equal(mc_stat(c, "/sy/abs", &st), 0);
	assert_int_equal(st.st_ino, stat_ok(c, "/sy/f").st_ino);

	memset(buf, 'X', sizeof(buf));
	assert_int_equal(mc_readlink(c, "/sy/abs", buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "/sy/f", 5);
	assert_int_equal(buf[5], 'X'); /* no NUL */
	memset(buf, 'X', sizeof(buf));
	assert_int_equal(mc_readlink(c, "/sy/abs", buf, 3), 3);
	assert_memory_equal(buf, "/sy", 3);
	assert_int_equal(buf[3], 'X');
	EXPECT_ERR(mc_readlink(c, "/sy/f", buf, sizeof(buf)), EINVAL);
	EXPECT_ERR(mc_readlink(c, "/sy/missing", buf, sizeof(buf)), ENOENT);

	EXPECT_ERR(mc_symlink(c, "x", "/sy/f"), EEXIST);
	assert_int_equal(mc_symlink(c, "/sy/nowhere", "/sy/dangling"), 0);
	EXPECT_ERR(mc_stat(c, "/sy/dangling", &st), ENOENT);
	assert_int_equal(mc_lstat(c, "/sy/dangling", &st), 0);

	/* A loop: ELOOP. A directory through a symlink. */
	assert_int_equal(mc_symlink(c, "/sy/loop2", "/sy/loop1"), 0);
	assert_int_equal(mc_symlink(c, "/sy/loop1", "/sy/loop2"), 0);
	EXPECT_ERR(mc_stat(c, "/sy/loop1", &st), ELOOP);
	EXPECT_ERR(mc_mkdir(c, "/sy/loop1/x", 0755), ELOOP);
	assert_int_equal(mc_symlink(c, "/sy", "/sy/self"), 0);
	assert_int_equal(mc_stat(c, "/sy/self/self/self/f", &st), 0);
	assert_int_equal(st.st_ino, stat_ok(c, "/sy/f").st_ino);
	/* Removing a symlink removes the link, not the target. */
	assert_int_equal(mc_unlink(c, "/sy/abs"), 0);
	assert_int_equal(stat_ok(c, "/sy/f").st_nlink, 1);
	assert_int_equal(mc_rmtree(c, "/sy"), 0);
	mc_disconnect(c);
}

/* ---- attributes -------------------------------------------------------- */

static void test_attrs(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	mkdir_ok(c, "/at", 0755);
	mkfile(c, "/at/f", 0644);

	assert_int_equal(mc_chmod(c, "/at/f", 0600), 0);
	assert_int_equal(stat_ok(c, "/at/f").st_mode, S_IFREG | 0600);
	assert_int_equal(mc_chmod(c, "/at/f", 04755), 0);
	assert_int_equal(stat_ok(c, "/at/f").st_mode & 07777, 04755);
	EXPECT_ERR(mc_chmod(c, "/at/missing", 0600), ENOENT);
	/* chmod follows symlinks. */
	assert_int_equal(mc_symlink(c, "/at/f", "/at/l"), 0);
	assert_int_equal(mc_chmod(c, "/at/l", 0640), 0);
	assert_int_equal(stat_ok(c, "/at/f").st_mode & 07777, 0640);

	assert_int_equal(mc_chown(c, "/at/f", 1234, 5678), 0);
	st = stat_ok(c, "/at/f");
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 5678);
	assert_int_equal(mc_chown(c, "/at/f", (uid_t)-1, 42), 0);
	st = stat_ok(c, "/at/f");
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 42);
	assert_int_equal(mc_chown(c, "/at/f", (uid_t)-1, (gid_t)-1), 0);
	assert_int_equal(stat_ok(c, "/at/f").st_gid, 42);

	struct timespec t[2] = { { 100, 5 }, { 200, 7 } };
	assert_int_equal(mc_utimens(c, "/at/f", t), 0);
	st = stat_ok(c, "/at/f");
	assert_int_equal(st.st_atim.tv_sec, 100);
	assert_int_equal(st.st_atim.tv_nsec, 5);
	assert_int_equal(st.st_mtim.tv_sec, 200);
	assert_int_equal(st.st_mtim.tv_nsec, 7);
	struct timespec t2[2] = { { 0, UTIME_OMIT }, { 300, 0 } };
	assert_int_equal(mc_utimens(c, "/at/f", t2), 0);
	st = stat_ok(c, "/at/f");
	assert_int_equal(st.st_atim.tv_sec, 100);
	assert_int_equal(st.st_mtim.tv_sec, 300);
	time_t before = time(NULL);
	assert_int_equal(mc_utimens(c, "/at/f", NULL), 0);
	st = stat_ok(c, "/at/f");
	assert_true(st.st_atim.tv_sec >= before - 1 && st.st_atim.tv_sec <= time(NULL) + 1);
	assert_true(st.st_mtim.tv_sec >= before - 1 && st.st_mtim.tv_sec <= time(NULL) + 1);
	struct timespec bad[2] = { { 0, 1000000000L }, { 0, 0 } };
	EXPECT_ERR(mc_utimens(c, "/at/f", bad), EINVAL);
	EXPECT_ERR(mc_utimens(c, "/at/missing", NULL), ENOENT);

	assert_int_equal(mc_truncate(c, "/at/f", 1000), 0);
	assert_int_equal(stat_ok(c, "/at/f").st_size, 1000);
	assert_int_equal(mc_truncate(c, "/at/f", 10), 0);
	assert_int_equal(stat_ok(c, "/at/f").st_size, 10);
	EXPECT_ERR(mc_truncate(c, "/at/f", -1), EINVAL);
	EXPECT_ERR(mc_truncate(c, "/at", 0), EISDIR);
	EXPECT_ERR(mc_truncate(c, "/at/missing", 0), ENOENT);
	mc_disconnect(c);
	c = harness_client(&harness_srv);
	assert_int_equal(mc_rmtree(c, "/at"), 0);
	mc_disconnect(c);
}

static void test_parent_times(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkdir_ok(c, "/pt", 0755);
	struct stat p0 = stat_ok(c, "/pt");
	sleep_ms(20);
	mkfile(c, "/pt/f", 0644);
	struct stat p1 = stat_ok(c, "/pt");
	assert_true(ts_ns(&p1.st_mtim) > ts_ns(&p0.st_mtim));
	assert_true(ts_ns(&p1.st_ctim) > ts_ns(&p0.st_ctim));
	struct stat f = stat_ok(c, "/pt/f");
	assert_true(ts_ns(&f.st_mtim) >= ts_ns(&p1.st_mtim) - 1000000);
	sleep_ms(20);
	assert_int_equal(mc_unlink(c, "/pt/f"), 0);
	struct stat p2 = stat_ok(c, "/pt");
	assert_true(ts_ns(&p2.st_mtim) > ts_ns(&p1.st_mtim));
	sleep_ms(20);
	mkdir_ok(c, "/pt/d", 0755);
	struct stat p3 = stat_ok(c, "/pt");
	assert_true(ts_ns(&p3.st_mtim) > ts_ns(&p2.st_mtim));
	/* chmod changes ctime, not mtime. */
	sleep_ms(20);
	assert_int_equal(mc_chmod(c, "/pt", 0700), 0);
	struct stat p4 = stat_ok(c, "/pt");
	assert_int_equal(ts_ns(&p4.st_mtim), ts_ns(&p3.st_mtim));
	assert_true(ts_ns(&p4.st_ctim) > ts_ns(&p3.st_ctim));
	assert_int_equal(mc_rmtree(c, "/pt"), 0);
	mc_disconnect(c);
}

/* ---- directories ------------------------------------------------------- */

/* Create prefix0000 .. prefix(to-1) (4 digits) in one batch. */
static void batch_creates(mc_client *c, const char *prefix, int from, int to)
{
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[128];
	for (int i = from; i < to; i++) {
		snprintf(p, sizeof(p), "%s%04d", prefix, i);
		assert_true(mc_batch_create(b, p, 0644) >= 0);
	}
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), (size_t)(to - from));
	for (int i = 0; i < to - from; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	mc_batch_free(b);
}

static void test_readdir_1000(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	enum { N = 1000 };
	mkdir_ok(c, "/rd", 0755);
	batch_creates(c, "/rd/f", 0, N);
	mkdir_ok(c, "/rd/zdir", 0755);
	assert_int_equal(mc_symlink(c, "f0000", "/rd/zlink"), 0);

	static int seen[N];
	memset(seen, 0, sizeof(seen));
	int dirs = 0, links = 0, total = 0;
	MC_DIR *d = mc_opendir(c, "/rd");
	assert_non_null(d);
	struct dirent *e;
	errno = 0;
	while ((e = mc_readdir(d))) {
		total++;
		assert_true(e->d_ino != 0);
		assert_true(strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0);
		if (strcmp(e->d_name, "zdir") == 0) {
			assert_int_equal(e->d_type, DT_DIR);
			assert_int_equal(e->d_ino, stat_ok(c, "/rd/zdir").st_ino);
			dirs++;
			continue;
		}
		if (strcmp(e->d_name, "zlink") == 0) {
			assert_int_equal(e->d_type, DT_LNK);
			links++;
			continue;
		}
		int i;
		assert_int_equal(sscanf(e->d_name, "f%d", &i), 1);
		assert_true(i >= 0 && i < N);
		assert_int_equal(e->d_type, DT_REG);
		seen[i]++;
	}
	assert_int_equal(errno, 0); /* end of listing: errno unchanged */
	assert_null(mc_readdir(d));
	assert_int_equal(mc_closedir(d), 0);
	assert_int_equal(total, N + 2);
	assert_int_equal(dirs, 1);
	assert_int_equal(links, 1);
	for (int i = 0; i < N; i++)
		if (seen[i] != 1)
			fail_msg("f%04d seen %d times", i, seen[i]);
	assert_int_equal(stat_ok(c, "/rd").st_size, 40 + 20 * (N + 2)); /* as tmpfs */

	/* An empty directory lists nothing; errors. */
	d = mc_opendir(c, "/rd/zdir");
	assert_non_null(d);
	errno = 0;
	assert_null(mc_readdir(d));
	assert_int_equal(errno, 0);
	assert_int_equal(mc_closedir(d), 0);
	EXPECT_NULL_ERR(mc_opendir(c, "/rd/f0001"), ENOTDIR);
	EXPECT_NULL_ERR(mc_opendir(c, "/rd/missing"), ENOENT);
	EXPECT_NULL_ERR(mc_opendir(c, "/rd/zlink/.."), ENOTDIR);
	assert_int_equal(mc_rmtree(c, "/rd"), 0);
	mc_disconnect(c);
}

static void test_readdir_concurrent(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv), *other = harness_client(&harness_srv);
	enum { KEEP = 1200, TMP = 200, NEW = 200 };
	mkdir_ok(c, "/rc", 0755);
	batch_creates(c, "/rc/keep", 0, KEEP);
	batch_creates(c, "/rc/tmp", 0, TMP);

	static int keep[KEEP], tmp[TMP], fresh[NEW];
	memset(keep, 0, sizeof(keep));
	memset(tmp, 0, sizeof(tmp));
	memset(fresh, 0, sizeof(fresh));
	MC_DIR *d = mc_opendir(c, "/rc");
	assert_non_null(d);
	struct dirent *e;
	int n = 0, round = 0;
	errno = 0;
	while ((e = mc_readdir(d))) {
		int i;
		if (sscanf(e->d_name, "keep%d", &i) == 1)
			keep[i]++;
		else if (sscanf(e->d_name, "tmp%d", &i) == 1)
			tmp[i]++;
		else if (sscanf(e->d_name, "new%d", &i) == 1)
			fresh[i]++;
		else
			fail_msg("unexpected entry %s", e->d_name);
		/* Midway through the first page and again in the second, the
		 * other client removes and creates entries. */
		if (++n == 100 || n == 700) {
			mc_batch *b = mc_batch_new(other);
			char p[64];
			for (int k = 0; k < TMP / 2; k++) {
				snprintf(p, sizeof(p), "/rc/tmp%04d", round * (TMP / 2) + k);
				mc_batch_unlink(b, p);
			}
			for (int k = 0; k < NEW / 2; k++) {
				snprintf(p, sizeof(p), "/rc/new%04d", round * (NEW / 2) + k);
				mc_batch_create(b, p, 0644);
			}
			assert_int_equal(mc_batch_run(b), 0);
			for (size_t k = 0; k < mc_batch_count(b); k++)
				assert_int_equal(mc_batch_error(b, k), 0);
			mc_batch_free(b);
			round++;
		}
	}
	assert_int_equal(errno, 0);
	assert_int_equal(round, 2);
	assert_int_equal(mc_closedir(d), 0);
	for (int i = 0; i < KEEP; i++)
		if (keep[i] != 1)
			fail_msg("keep%04d seen %d times", i, keep[i]);
	for (int i = 0; i < TMP; i++)
		assert_true(tmp[i] <= 1);
	for (int i = 0; i < NEW; i++)
		assert_true(fresh[i] <= 1);
	assert_int_equal(mc_rmtree(c, "/rc"), 0);
	mc_disconnect(other);
	mc_disconnect(c);
}

/* ---- batches ----------------------------------------------------------- */

static void test_batch(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkdir_ok(c, "/bt", 0755);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	assert_int_equal(mc_batch_count(b), 0);
	assert_int_equal(mc_batch_error(b, 0), EINVAL);
	assert_int_equal(mc_batch_run(b), 0); /* nothing queued */
	assert_int_equal(mc_batch_count(b), 0);

	char p[64];
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "/bt/f%03d", i);
		assert_int_equal(mc_batch_create(b, p, 0644), i);
	}
	assert_int_equal(mc_batch_create(b, "/bt/f042", 0644), 100); /* duplicate */
	struct stat st42, stmiss, stdir;
	memset(&stmiss, 0xab, sizeof(stmiss));
	assert_int_equal(mc_batch_stat(b, "/bt/f042", &st42), 101);
	assert_int_equal(mc_batch_stat(b, "/bt/missing", &stmiss), 102);
	assert_int_equal(mc_batch_mkdir(b, "/bt/d", 0700), 103);
	assert_int_equal(mc_batch_rename(b, "/bt/f000", "/bt/d/moved"), 104);
	assert_int_equal(mc_batch_unlink(b, "/bt/f001"), 105);
	assert_int_equal(mc_batch_mkdir(b, "/bt/e", 0755), 106);
	assert_int_equal(mc_batch_rmdir(b, "/bt/e"), 107);
	assert_int_equal(mc_batch_rmdir(b, "/bt/d"), 108); /* not empty */
	assert_int_equal(mc_batch_stat(b, "/bt/d", &stdir), 109);
	/* Queueing errors. */
	EXPECT_ERR(mc_batch_create(b, NULL, 0644), EINVAL);
	EXPECT_ERR(mc_batch_create(b, "", 0644), EINVAL);
	EXPECT_ERR(mc_batch_unlink(b, repeat('z', 5000, "/")), ENAMETOOLONG);
	EXPECT_ERR(mc_batch_rename(b, "/bt/x", NULL), EINVAL);

	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), 110);
	for (int i = 0; i < 100; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	assert_int_equal(mc_batch_error(b, 100), EEXIST);
	assert_int_equal(mc_batch_error(b, 101), 0);
	assert_true(S_ISREG(st42.st_mode));
	assert_int_equal(st42.st_ino, stat_ok(c, "/bt/f042").st_ino);
	assert_int_equal(mc_batch_error(b, 102), ENOENT);
	assert_int_equal(mc_batch_error(b, 103), 0);
	assert_int_equal(mc_batch_error(b, 104), 0);
	assert_int_equal(mc_batch_error(b, 105), 0);
	assert_int_equal(mc_batch_error(b, 106), 0);
	assert_int_equal(mc_batch_error(b, 107), 0);
	assert_int_equal(mc_batch_error(b, 108), ENOTEMPTY);
	assert_int_equal(mc_batch_error(b, 109), 0);
	assert_true(S_ISDIR(stdir.st_mode));
	assert_int_equal(stdir.st_mode & 07777, 0700);
	assert_int_equal(mc_batch_error(b, 110), EINVAL);
	struct stat st;
	EXPECT_ERR(mc_lstat(c, "/bt/f000", &st), ENOENT);
	EXPECT_ERR(mc_lstat(c, "/bt/f001", &st), ENOENT);
	assert_int_equal(mc_lstat(c, "/bt/d/moved", &st), 0);
	EXPECT_ERR(mc_lstat(c, "/bt/e", &st), ENOENT);

	/* Results stay until the next run; a new run replaces them. */
	assert_int_equal(mc_batch_unlink(b, "/bt/f002"), 0);
	assert_int_equal(mc_batch_count(b), 110);
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), 1);
	assert_int_equal(mc_batch_error(b, 0), 0);
	mc_batch_free(b);

	/* E2BIG: long paths until the frame limit (16 MiB) would be passed. */
	b = mc_batch_new(c);
	char *lp = malloc(4096);
	assert_non_null(lp);
	memcpy(lp, repeat('q', 4094, "/"), 4096);
	int i, r = 0;
	for (i = 0; i < 10000; i++) {
		r = mc_batch_stat(b, lp, &st);
		if (r < 0)
			break;
		assert_int_equal(r, i);
	}
	assert_int_equal(r, -1);
	assert_int_equal(errno, E2BIG);
	assert_true(i > 3000 && i < 4200);
	free(lp);
	mc_batch_free(b);
	mc_batch_free(NULL);
	assert_int_equal(mc_rmtree(c, "/bt"), 0);
	mc_disconnect(c);
}

/* ---- sync, rmtree, stats ----------------------------------------------- */

static void test_sync(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkfile(c, "/syncf", 0644);
	assert_int_equal(mc_sync(c), 0);
	int fd = mc_open(c, "/syncf", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(mc_fsync(c, fd), 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_unlink(c, "/syncf"), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
}

static void test_rmtree(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	char p[128];
	mkdir_ok(c, "/rt", 0755);
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "/rt/d%d", i);
		mkdir_ok(c, p, 0755);
		for (int j = 0; j < 5; j++) {
			snprintf(p, sizeof(p), "/rt/d%d/s%d", i, j);
			mkdir_ok(c, p, 0755);
			for (int k = 0; k < 10; k++) {
				snprintf(p, sizeof(p), "/rt/d%d/s%d/f%d", i, j, k);
				mkfile(c, p, 0644);
			}
		}
	}
	assert_int_equal(mc_symlink(c, "/", "/rt/d0/root"), 0);
	mkfile(c, "/rtfile", 0644);
	assert_int_equal(mc_link(c, "/rtfile", "/rt/d1/hard"), 0);
	assert_int_equal(mc_rmtree(c, "/rt"), 0);
	EXPECT_ERR(mc_lstat(c, "/rt", &st), ENOENT);
	EXPECT_ERR(mc_lstat(c, "/rt/d0/s0/f0", &st), ENOENT);
	assert_int_equal(stat_ok(c, "/rtfile").st_nlink, 1); /* the symlink was not followed */
	EXPECT_ERR(mc_rmtree(c, "/rt"), ENOENT);
	assert_int_equal(mc_rmtree(c, "/rtfile"), 0);
	EXPECT_ERR(mc_lstat(c, "/rtfile", &st), ENOENT);
	assert_int_equal(stat_ok(c, "/").st_mode & S_IFMT, S_IFDIR);
	mc_disconnect(c);
}

static void test_stats(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	char *s = mc_server_stats(c);
	assert_non_null(s);
	assert_true(s[0] == '{');
	assert_non_null(strstr(s, "\"dentries"));
	free(s);

	/* Two clients in one process (a client per thread): valid JSON, each
	 * client its own element of readpath.clients with this pid. */
	mc_client *c2 = harness_client(&harness_srv);
	struct stat st;
	assert_int_equal(mc_stat(c, "/", &st), 0);
	assert_int_equal(mc_stat(c2, "/", &st), 0);
	s = mc_server_stats(c);
	assert_non_null(s);
	json_error_t e;
	json_t *root = json_loads(s, JSON_REJECT_DUPLICATES, &e);
	if (root == NULL)
		fail_msg("/stats is not valid JSON (%s): %s", e.text, s);
	assert_true(json_is_integer(json_object_get(root, "schema_version")));
	json_t *clients = json_object_get(json_object_get(root, "readpath"), "clients");
	assert_true(json_is_array(clients));
	size_t i, mine = 0;
	json_t *cl;
	json_array_foreach(clients, i, cl)
		if (json_integer_value(json_object_get(cl, "pid")) == getpid())
			mine++;
	assert_true(mine >= 2);
	json_decref(root);
	free(s);
	mc_disconnect(c2);
	mc_disconnect(c);
}

/* ---- processes: permissions, fork -------------------------------------- */

/* Child checks: returns 0 when all pass, else the number of the first that
 * failed (an exit status). */
#define CHILD_CHECK(n, cond)                                                  \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "child check %d failed (errno %d)\n", n, errno); \
			return n;                                             \
		}                                                             \
	} while (0)

static int perm_child(void)
{
	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
		return 100;
	mc_client *c = mc_connect(harness_srv.socket);
	if (!c) {
		fprintf(stderr, "child connect: %s\n", strerror(errno));
		return 101;
	}
	struct stat st;
	errno = 0;
	CHILD_CHECK(1, mc_mkdir(c, "/perm/x", 0755) == -1 && errno == EACCES);
	CHILD_CHECK(2, mc_chmod(c, "/perm/rootfile", 0777) == -1 && errno == EPERM);
	CHILD_CHECK(3, mc_unlink(c, "/perm/rootfile") == -1 && errno == EACCES);
	CHILD_CHECK(4, mc_stat(c, "/perm/rootfile", &st) == 0);
	CHILD_CHECK(5, mc_open(c, "/perm/rootfile", O_WRONLY, 0) == -1 && errno == EACCES);
	CHILD_CHECK(6, mc_mkdir(c, "/perm/open/mine", 0755) == 0);
	CHILD_CHECK(7, mc_stat(c, "/perm/open/mine", &st) == 0 && st.st_uid == 65534 &&
	                       st.st_gid == 65534);
	CHILD_CHECK(8, mc_chown(c, "/perm/open/mine", 0, (gid_t)-1) == -1 && errno == EPERM);
	CHILD_CHECK(9, mc_unlink(c, "/perm/sticky/rootfile") == -1 && errno == EPERM);
	CHILD_CHECK(10, mc_rename(c, "/perm/sticky/rootfile", "/perm/sticky/x") == -1 &&
	                        errno == EPERM);
	int fd = mc_open(c, "/perm/sticky/mine", O_CREAT | O_EXCL | O_WRONLY, 0644);
	CHILD_CHECK(11, fd >= 0);
	CHILD_CHECK(12, mc_close(c, fd) == 0);
	CHILD_CHECK(13, mc_unlink(c, "/perm/sticky/mine") == 0);
	CHILD_CHECK(14, mc_stat(c, "/perm/private/f", &st) == -1 && errno == EACCES);
	CHILD_CHECK(15, mc_opendir(c, "/perm/private") == NULL && errno == EACCES);
	CHILD_CHECK(16, mc_rmdir(c, "/perm/open/mine") == 0);
	mc_disconnect(c);
	return 0;
}

static void test_permissions(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("# skipped: needs root to act as another uid\n");
		return;
	}
	mc_client *c = harness_client(&harness_srv);
	/* Let an unprivileged process reach the socket. */
	assert_int_equal(chmod(harness_srv.dir, 0755), 0);
	assert_int_equal(chmod(harness_srv.socket, 0666), 0);
	mkdir_ok(c, "/perm", 0755);
	mkfile(c, "/perm/rootfile", 0644);
	mkdir_ok(c, "/perm/open", 0777);
	assert_int_equal(mc_chmod(c, "/perm/open", 0777), 0);
	mkdir_ok(c, "/perm/sticky", 01777);
	assert_int_equal(mc_chmod(c, "/perm/sticky", 01777), 0);
	mkfile(c, "/perm/sticky/rootfile", 0666);
	assert_int_equal(mc_chmod(c, "/perm/sticky/rootfile", 0666), 0);
	mkdir_ok(c, "/perm/private", 0700);
	mkfile(c, "/perm/private/f", 0644);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(perm_child());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0)
		fail_msg("unprivileged child failed check %d", WEXITSTATUS(st));
	assert_int_equal(mc_rmtree(c, "/perm"), 0);
	mc_disconnect(c);
}

static int fork_child(mc_client *parent)
{
	struct stat st;
	errno = 0;
	CHILD_CHECK(1, mc_stat(parent, "/", &st) == -1 && errno == ECHILD);
	CHILD_CHECK(2, mc_mkdir(parent, "/fk/child", 0755) == -1 && errno == ECHILD);
	CHILD_CHECK(3, mc_open(parent, "/fk", O_RDONLY, 0) == -1 && errno == ECHILD);
	CHILD_CHECK(4, mc_opendir(parent, "/fk") == NULL && errno == ECHILD);
	CHILD_CHECK(5, mc_batch_new(parent) == NULL && errno == ECHILD);
	CHILD_CHECK(6, mc_sync(parent) == -1 && errno == ECHILD);
	mc_disconnect(parent); /* frees memory only */
	mc_client *c = mc_connect(harness_srv.socket);
	CHILD_CHECK(7, c != NULL);
	CHILD_CHECK(8, mc_mkdir(c, "/fk/child", 0755) == 0);
	mc_disconnect(c);
	return 0;
}

static void test_fork(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkdir_ok(c, "/fk", 0755);
	int fd = mc_open(c, "/fk", O_RDONLY, 0);
	assert_true(fd >= 0);
	MC_DIR *d = mc_opendir(c, "/fk");
	assert_non_null(d);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fork_child(c));
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0)
		fail_msg("forked child failed check %d", WEXITSTATUS(st));
	/* The parent's connection is untouched by the child. */
	struct stat s;
	assert_int_equal(mc_fstat(c, fd, &s), 0);
	assert_int_equal(s.st_nlink, 3); /* ., .., child */
	struct dirent *e = mc_readdir(d);
	assert_non_null(e);
	assert_string_equal(e->d_name, "child");
	assert_int_equal(mc_closedir(d), 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_rmtree(c, "/fk"), 0);
	mc_disconnect(c);
}

/* mc_disconnect frees open descriptors, directories and batches (ASan's leak
 * check fails the test otherwise); the server releases their handles. */
static void test_disconnect_frees(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkdir_ok(c, "/dc", 0755);
	mkfile(c, "/dc/f", 0644);
	for (int i = 0; i < 40; i++)
		assert_true(mc_open(c, "/dc/f", O_RDONLY, 0) >= 0);
	assert_non_null(mc_opendir(c, "/dc"));
	MC_DIR *d = mc_opendir(c, "/dc");
	assert_non_null(mc_readdir(d));
	mc_batch *b = mc_batch_new(c);
	assert_true(mc_batch_mkdir(b, "/dc/never", 0755) >= 0);
	mc_batch *b2 = mc_batch_new(c);
	assert_true(mc_batch_stat(b2, "/dc/f", &(struct stat){ 0 }) >= 0);
	assert_int_equal(mc_batch_run(b2), 0);
	mc_disconnect(c);

	c = harness_client(&harness_srv);
	struct stat st;
	EXPECT_ERR(mc_lstat(c, "/dc/never", &st), ENOENT);
	assert_int_equal(mc_unlink(c, "/dc/f"), 0);
	assert_int_equal(mc_rmdir(c, "/dc"), 0);
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_path_checks),
		cmocka_unit_test(test_mkdir_rmdir),
		cmocka_unit_test(test_open_close),
		cmocka_unit_test(test_unlinked_open),
		cmocka_unit_test(test_unlink),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_attrs),
		cmocka_unit_test(test_parent_times),
		cmocka_unit_test(test_readdir_1000),
		cmocka_unit_test(test_readdir_concurrent),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_rmtree),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_disconnect_frees),
	};
	return cmocka_run_group_tests_name("api", tests, harness_group_setup, harness_group_teardown);
}
