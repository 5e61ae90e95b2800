/* test-mknod.c - mc_mknod and mc_cred_set against a real mcached: every
 * file type tmpfs stores (FIFOs, sockets, devices with their numbers), its
 * errors, persistence across a restart; lchown and lutimens of a symlink
 * itself; acting for other credentials
 * (checked on the server and in local answers) and its refusal on a
 * connection that is not root's. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"


static void expect_node(mc_client *c, const char *path, mode_t type, dev_t rdev)
{
	struct stat st;
	assert_int_equal(mc_lstat(c, path, &st), 0);
	assert_int_equal(st.st_mode & S_IFMT, type);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_rdev, rdev);
	assert_int_equal(st.st_nlink, 1);
}

static void test_types(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	assert_int_equal(mc_mkdir(c, "/n", 0755), 0);
	assert_int_equal(mc_mknod(c, "/n/fifo", S_IFIFO | 0640, 0), 0);
	assert_int_equal(mc_mknod(c, "/n/sock", S_IFSOCK | 0640, 0), 0);
	assert_int_equal(mc_mknod(c, "/n/chr", S_IFCHR | 0640, makedev(4, 64)), 0);
	assert_int_equal(mc_mknod(c, "/n/blk", S_IFBLK | 0640, makedev(259, 3)), 0);
	assert_int_equal(mc_mknod(c, "/n/reg", 0640, 0), 0);
	expect_node(c, "/n/fifo", S_IFIFO, 0);
	expect_node(c, "/n/sock", S_IFSOCK, 0);
	expect_node(c, "/n/chr", S_IFCHR, makedev(4, 64));
	expect_node(c, "/n/blk", S_IFBLK, makedev(259, 3));
	expect_node(c, "/n/reg", S_IFREG, 0);

	/* d_type in listings */
	MC_DIR *d = mc_opendir(c, "/n");
	assert_non_null(d);
	struct dirent *e;
	int seen = 0;
	while ((e = mc_readdir(d))) {
		unsigned want = !strcmp(e->d_name, "fifo") ? DT_FIFO
		              : !strcmp(e->d_name, "sock") ? DT_SOCK
		              : !strcmp(e->d_name, "chr") ? DT_CHR
		              : !strcmp(e->d_name, "blk") ? DT_BLK : DT_REG;
		assert_int_equal(e->d_type, want);
		seen++;
	}
	assert_int_equal(seen, 5);
	assert_int_equal(mc_closedir(d), 0);

	/* Committed and reloaded from the store after a restart. */
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(&harness_srv, SIGTERM), 0);
	assert_int_equal(server_start(&harness_srv, NULL), 0);
	c = harness_client(&harness_srv);
	expect_node(c, "/n/chr", S_IFCHR, makedev(4, 64));
	expect_node(c, "/n/blk", S_IFBLK, makedev(259, 3));
	expect_node(c, "/n/fifo", S_IFIFO, 0);
	expect_node(c, "/n/sock", S_IFSOCK, 0);
	assert_int_equal(mc_unlink(c, "/n/chr"), 0);
	EXPECT_ERR(mc_lstat(c, "/n/chr", &(struct stat){ 0 }), ENOENT);
	mc_disconnect(c);
}

static void test_errors(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	assert_int_equal(mc_mkdir(c, "/e", 0755), 0);
	EXPECT_ERR(mc_mknod(c, "/e/d", S_IFDIR | 0755, 0), EPERM);
	EXPECT_ERR(mc_mknod(c, "/e/x", 0170000 | 0644, 0), EINVAL);
	EXPECT_ERR(mc_mknod(c, "/e/missing/x", S_IFIFO | 0644, 0), ENOENT);
	assert_int_equal(mc_mknod(c, "/e/f", S_IFIFO | 0644, 0), 0);
	EXPECT_ERR(mc_mknod(c, "/e/f", S_IFIFO | 0644, 0), EEXIST);
	EXPECT_ERR(mc_mknod(c, "/e/f/x", S_IFIFO | 0644, 0), ENOTDIR);
	EXPECT_ERR(mc_truncate(c, "/e/f", 10), EINVAL);
	EXPECT_ERR(mc_cred_set(&(struct mc_cred){ .uid = 1, .ngroups = 1, .groups = NULL }), EINVAL);
	mc_disconnect(c);
}

/* mc_lchown and mc_lutimens change a symlink itself; the following calls
 * its target. */
static void test_nofollow(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	assert_int_equal(mc_mkdir(c, "/l", 0755), 0);
	assert_int_equal(mc_mknod(c, "/l/t", S_IFREG | 0644, 0), 0);
	assert_int_equal(mc_symlink(c, "t", "/l/s"), 0);
	assert_int_equal(mc_symlink(c, "missing", "/l/dangling"), 0);
	assert_int_equal(mc_lchown(c, "/l/s", 123, 456), 0);
	struct stat st;
	assert_int_equal(mc_lstat(c, "/l/s", &st), 0);
	assert_int_equal(st.st_uid, 123);
	assert_int_equal(st.st_gid, 456);
	assert_int_equal(mc_stat(c, "/l/s", &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(mc_lchown(c, "/l/dangling", 7, (gid_t)-1), 0);
	EXPECT_ERR(mc_chown(c, "/l/dangling", 7, (gid_t)-1), ENOENT);
	struct timespec t[2] = { { 1000, 0 }, { 2000, 5 } };
	assert_int_equal(mc_lutimens(c, "/l/s", t), 0);
	assert_int_equal(mc_lstat(c, "/l/s", &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 2000);
	assert_int_equal(st.st_mtim.tv_nsec, 5);
	assert_int_equal(st.st_atim.tv_sec, 1000);
	assert_int_equal(mc_stat(c, "/l/t", &st), 0);
	assert_true(st.st_mtim.tv_sec != 2000);
	mc_disconnect(c);
}

/* Root acting for uid 1000: the server and the local answers check 1000. */
static void test_cred_acting(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		printf("# not root: acting for another user needs a root connection\n");
		return;
	}
	mc_client *c = harness_client(&harness_srv);
	assert_int_equal(mc_mkdir(c, "/c", 0755), 0);
	assert_int_equal(mc_mkdir(c, "/c/open", 0777), 0);
	assert_int_equal(mc_mkdir(c, "/c/closed", 0700), 0);
	assert_int_equal(mc_mknod(c, "/c/closed/f", S_IFIFO | 0644, 0), 0);
	struct stat st;
	assert_int_equal(mc_stat(c, "/c/closed/f", &st), 0); /* cached now */

	gid_t groups[] = { 2000, 2001 };
	struct mc_cred u = { .uid = 1000, .gid = 1000, .ngroups = 2, .groups = groups };
	assert_int_equal(mc_cred_set(&u), 0);
	EXPECT_ERR(mc_mkdir(c, "/c/x", 0755), EACCES);
	EXPECT_ERR(mc_stat(c, "/c/closed/f", &st), EACCES);
	EXPECT_ERR(mc_mknod(c, "/c/open/dev", S_IFCHR | 0644, makedev(1, 3)), EPERM);
	/* The directory's checks come first, as in vfs_mknod(). */
	EXPECT_ERR(mc_mknod(c, "/c/nodir/dev", S_IFBLK | 0644, makedev(1, 3)), ENOENT);
	EXPECT_ERR(mc_mknod(c, "/c/dev", S_IFBLK | 0644, makedev(1, 3)), EACCES);
	EXPECT_ERR(mc_mknod(c, "/c/open", S_IFCHR | 0644, makedev(1, 3)), EEXIST);
	assert_int_equal(mc_mkdir(c, "/c/open/mine", 0755), 0);
	assert_int_equal(mc_mknod(c, "/c/open/fifo", S_IFIFO | 0600, 0), 0);
	assert_int_equal(mc_stat(c, "/c/open/mine", &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 1000);
	EXPECT_ERR(mc_chown(c, "/c/open/mine", 0, (gid_t)-1), EPERM);
	assert_int_equal(mc_chown(c, "/c/open/mine", (uid_t)-1, 2001), 0);
	assert_int_equal(mc_cred_set(NULL), 0);

	assert_int_equal(mc_stat(c, "/c/closed/f", &st), 0);
	assert_int_equal(mc_stat(c, "/c/open/mine", &st), 0);
	assert_int_equal(st.st_gid, 2001);
	assert_int_equal(mc_mknod(c, "/c/open/dev", S_IFCHR | 0644, makedev(1, 3)), 0);
	mc_disconnect(c);
}

/* A connection made by a process that is not root may not act for anyone. */
static void test_cred_refused(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		printf("# not root: cannot make a non-root peer here\n");
		return;
	}
	/* The peer keeps group 0 to reach the 0660 socket; its directory
	 * must be searchable. */
	assert_int_equal(chmod(harness_srv.dir, 0711), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(0) < 0 || setuid(65534) < 0)
			_exit(10);
		mc_client *c = mc_connect(harness_srv.socket);
		if (!c)
			_exit(11);
		struct mc_cred r = { .uid = 0, .gid = 0 };
		if (mc_cred_set(&r) < 0)
			_exit(12);
		errno = 0;
		if (mc_mkdir(c, "/refused", 0755) != -1 || errno != EPERM)
			_exit(13);
		mc_cred_set(NULL);
		errno = 0;
		if (mc_mkdir(c, "/refused", 0755) != -1 || errno != EACCES)
			_exit(14);
		mc_disconnect(c);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	mc_client *c = harness_client(&harness_srv);
	EXPECT_ERR(mc_lstat(c, "/refused", &(struct stat){ 0 }), ENOENT);
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_nofollow),
		cmocka_unit_test(test_cred_acting),
		cmocka_unit_test(test_cred_refused),
	};
	return cmocka_run_group_tests_name("mknod", tests, harness_group_setup, harness_group_teardown);
}
