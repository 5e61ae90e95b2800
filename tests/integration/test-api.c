/* test-api.c - every libmcache call against a real mcached: success paths and
 * each errno case mcache.h lists, through the public API only. Here: the
 * connection and path checks, mkdir and rmdir, open, close and descriptors,
 * unlink, rename, links and symlinks, attributes and parent times;
 * directories, batches and rmtree are in test-api_dir.c, sync, stats,
 * other credentials, fork and disconnect in test-api_client.c. */
#include "api_fixture.h"

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
	};
	return cmocka_run_group_tests_name("api", tests, harness_group_setup, harness_group_teardown);
}
