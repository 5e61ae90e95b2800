/* test-api_client.c - libmcache's client as a whole against a real
 * mcached: mc_sync and mc_fsync, the server's stats seen by two clients of
 * one process, permissions under other credentials (in a child process),
 * a client used across fork, and what mc_disconnect frees. */
#include "api_fixture.h"

/* ---- sync, stats ----------------------------------------------------------- */

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
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_disconnect_frees),
	};
	return cmocka_run_group_tests_name("api_client", tests, harness_group_setup, harness_group_teardown);
}
