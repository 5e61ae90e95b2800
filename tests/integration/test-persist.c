/* test-persist.c - durability across server restarts: a clean stop, a crash
 * after mc_sync, a crash under --sync, and the data directory lock. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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

/* ---- a namespace snapshot: one sorted line per entry ------------------- */

struct snap {
	char **lines;
	size_t n, cap;
};

static void snap_add(struct snap *s, const char *line)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->lines = realloc(s->lines, s->cap * sizeof(*s->lines));
		assert_non_null(s->lines);
	}
	s->lines[s->n] = strdup(line);
	assert_non_null(s->lines[s->n]);
	s->n++;
}

static void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->lines[i]);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Type, mode, nlink, uid, gid, size, ino, mtime, symlink target. */
static void snap_walk(mc_client *c, const char *path, struct snap *s)
{
	struct stat st;
	char line[8192], target[4096] = "";
	if (mc_lstat(c, path, &st) < 0)
		fail_msg("lstat %s: %s", path, strerror(errno));
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = mc_readlink(c, path, target, sizeof(target) - 1);
		assert_true(n > 0);
		target[n] = 0;
	}
	snprintf(line, sizeof(line), "%s mode=%o nlink=%ju uid=%u gid=%u size=%jd ino=%ju mtime=%lld.%09ld -> %s",
	         path, (unsigned)st.st_mode, (uintmax_t)st.st_nlink, (unsigned)st.st_uid,
	         (unsigned)st.st_gid, (intmax_t)st.st_size, (uintmax_t)st.st_ino,
	         (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, target);
	snap_add(s, line);
	if (!S_ISDIR(st.st_mode))
		return;
	MC_DIR *d = mc_opendir(c, path);
	assert_non_null(d);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	errno = 0;
	while ((e = mc_readdir(d))) {
		names = realloc(names, (n + 1) * sizeof(*names));
		assert_non_null(names);
		names[n++] = strdup(e->d_name);
	}
	assert_int_equal(errno, 0);
	assert_int_equal(mc_closedir(d), 0);
	for (size_t i = 0; i < n; i++) {
		char child[4096];
		snprintf(child, sizeof(child), "%s%s%s", path, strcmp(path, "/") ? "/" : "", names[i]);
		snap_walk(c, child, s);
		free(names[i]);
	}
	free(names);
}

static void snap_take(mc_client *c, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	snap_walk(c, "/", s);
	qsort(s->lines, s->n, sizeof(*s->lines), cmp_line);
}

static void snap_expect_equal(const struct snap *a, const struct snap *b)
{
	size_t i = 0, j = 0;
	int diffs = 0;
	while (i < a->n || j < b->n) {
		int r = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->lines[i], b->lines[j]);
		if (r == 0) {
			i++, j++;
			continue;
		}
		if (diffs++ < 20)
			print_message("# %s %s\n", r < 0 ? "lost:" : "new: ", r < 0 ? a->lines[i] : b->lines[j]);
		if (r < 0)
			i++;
		else
			j++;
	}
	assert_int_equal(diffs, 0);
}

/* ---- helpers ----------------------------------------------------------- */

static mc_client *conn(const struct mc_server *s)
{
	mc_client *c = mc_connect(s->socket);
	if (!c)
		fail_msg("mc_connect(%s): %s", s->socket, strerror(errno));
	return c;
}

static void mkfile(mc_client *c, const char *path, mode_t mode, off_t size)
{
	int fd = mc_open(c, path, O_CREAT | O_EXCL | O_WRONLY, mode);
	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	if (size)
		assert_int_equal(mc_ftruncate(c, fd, size), 0);
	assert_int_equal(mc_close(c, fd), 0);
}

/* A tree with every kind of entry and attribute the store keeps. */
static void build_tree(mc_client *c, const char *top)
{
	char p[256], q[256];
	assert_int_equal(mc_mkdir(c, top, 0751), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/dir%d", top, i);
		assert_int_equal(mc_mkdir(c, p, 0700 + (mode_t)i * 010), 0);
		for (int j = 0; j < 10; j++) {
			snprintf(p, sizeof(p), "%s/dir%d/file%d", top, i, j);
			mkfile(c, p, 0600 + (mode_t)j, (off_t)(i * 1000 + j));
		}
		snprintf(p, sizeof(p), "%s/dir%d/sub", top, i);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
	}
	snprintf(p, sizeof(p), "%s/dir0/file0", top);
	snprintf(q, sizeof(q), "%s/hardlink", top);
	assert_int_equal(mc_link(c, p, q), 0);
	snprintf(q, sizeof(q), "%s/symlink", top);
	assert_int_equal(mc_symlink(c, "dir1/file1", q), 0);
	snprintf(q, sizeof(q), "%s/dangling", top);
	assert_int_equal(mc_symlink(c, "/nowhere/at/all", q), 0);
	snprintf(q, sizeof(q), "%s/%s", top,
	         "a-long-name-of-more-than-sixteen-bytes-to-leave-the-inline-slot");
	mkfile(c, q, 0644, 12345);
	snprintf(p, sizeof(p), "%s/dir3/file9", top);
	assert_int_equal(mc_chown(c, p, 1001, 2002), 0);
	struct timespec t[2] = { { 1000000000, 123 }, { 1100000000, 456789 } };
	snprintf(p, sizeof(p), "%s/dir2/file2", top);
	assert_int_equal(mc_utimens(c, p, t), 0);
	/* Things that must stay gone. */
	snprintf(p, sizeof(p), "%s/dir2/file3", top);
	assert_int_equal(mc_unlink(c, p), 0);
	snprintf(p, sizeof(p), "%s/dir1/sub", top);
	assert_int_equal(mc_rmdir(c, p), 0);
	snprintf(p, sizeof(p), "%s/dir2/file4", top);
	snprintf(q, sizeof(q), "%s/dir3/renamed", top);
	assert_int_equal(mc_rename(c, p, q), 0);
}

/* ---- cases ------------------------------------------------------------- */

/* The servers of the running case; the teardown kills whatever a failed
 * assertion left running (it would hold the TAP pipe open). */
static struct mc_server srv_a, srv_b;

static int case_setup(void **state)
{
	(void)state;
	memset(&srv_a, 0, sizeof(srv_a));
	memset(&srv_b, 0, sizeof(srv_b));
	return 0;
}

static int case_teardown(void **state)
{
	(void)state;
	server_cleanup(&srv_a);
	server_cleanup(&srv_b);
	return 0;
}

static void test_clean_restart(void **state)
{
	(void)state;
	struct mc_server *s = &srv_a;
	struct snap before, after;
	assert_int_equal(server_start(s, NULL), 0);
	mc_client *c = conn(s);
	build_tree(c, "/t");
	assert_int_equal(mc_sync(c), 0);
	snap_take(c, &before);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);

	assert_int_equal(server_start(s, NULL), 0);
	c = conn(s);
	snap_take(c, &after);
	snap_expect_equal(&before, &after);
	/* The store goes on from where it was: new inodes are new. */
	struct stat st;
	mkfile(c, "/fresh", 0644, 0);
	assert_int_equal(mc_lstat(c, "/fresh", &st), 0);
	for (size_t i = 0; i < before.n; i++) {
		const char *ino = strstr(before.lines[i], " ino=");
		assert_non_null(ino);
		assert_true(strtoull(ino + 5, NULL, 10) != (unsigned long long)st.st_ino);
	}
	snap_free(&before);
	snap_free(&after);
	mc_disconnect(c);

	/* A clean stop with no sync at all also keeps everything. */
	c = conn(s);
	build_tree(c, "/u");
	snap_take(c, &before);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);
	assert_int_equal(server_start(s, NULL), 0);
	c = conn(s);
	snap_take(c, &after);
	snap_expect_equal(&before, &after);
	snap_free(&before);
	snap_free(&after);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);
	server_cleanup(s);
}

static void test_crash_after_sync(void **state)
{
	(void)state;
	struct mc_server *s = &srv_a;
	struct snap before, after;
	assert_int_equal(server_start(s, NULL), 0);
	mc_client *c = conn(s);
	build_tree(c, "/synced");
	assert_int_equal(mc_sync(c), 0);
	snap_take(c, &before);
	/* Unsynced work after the sync may or may not survive. */
	assert_int_equal(mc_mkdir(c, "/maybe", 0755), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGKILL), 128 + SIGKILL);

	assert_int_equal(server_start(s, NULL), 0);
	c = conn(s);
	struct stat st;
	if (mc_lstat(c, "/maybe", &st) == 0)
		assert_int_equal(mc_rmdir(c, "/maybe"), 0);
	else
		assert_int_equal(errno, ENOENT);
	snap_take(c, &after);
	snap_expect_equal(&before, &after);
	snap_free(&before);
	snap_free(&after);

	/* mc_fsync is a durability point too. */
	int fd = mc_open(c, "/fsynced", O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	assert_int_equal(mc_ftruncate(c, fd, 4096), 0);
	assert_int_equal(mc_fsync(c, fd), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGKILL), 128 + SIGKILL);
	assert_int_equal(server_start(s, NULL), 0);
	c = conn(s);
	assert_int_equal(mc_lstat(c, "/fsynced", &st), 0);
	assert_int_equal(st.st_size, 4096);
	assert_int_equal(st.st_mode & 07777, 0600);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);
	server_cleanup(s);
}

static void test_sync_mode_crash(void **state)
{
	(void)state;
	static const char *const sync_args[] = { "--sync", NULL };
	struct mc_server *s = &srv_a;
	struct snap before, after;
	assert_int_equal(server_start(s, sync_args), 0);
	mc_client *c = conn(s);
	build_tree(c, "/s");
	/* A batch and a few more ops, none followed by mc_sync. */
	mc_batch *b = mc_batch_new(c);
	char p[64];
	for (int i = 0; i < 50; i++) {
		snprintf(p, sizeof(p), "/s/b%02d", i);
		assert_true(mc_batch_create(b, p, 0640) >= 0);
	}
	assert_true(mc_batch_unlink(b, "/s/b07") >= 0);
	assert_int_equal(mc_batch_run(b), 0);
	for (size_t i = 0; i < mc_batch_count(b); i++)
		assert_int_equal(mc_batch_error(b, i), 0);
	mc_batch_free(b);
	assert_int_equal(mc_rename(c, "/s/b10", "/s/dir0/b10"), 0);
	assert_int_equal(mc_chmod(c, "/s/b11", 0444), 0);
	assert_int_equal(mc_truncate(c, "/s/b12", 99), 0);
	snap_take(c, &before);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGKILL), 128 + SIGKILL);

	assert_int_equal(server_start(s, sync_args), 0);
	c = conn(s);
	snap_take(c, &after);
	snap_expect_equal(&before, &after);
	snap_free(&before);
	snap_free(&after);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);
	server_cleanup(s);
}

static void test_data_dir_lock(void **state)
{
	(void)state;
	struct mc_server *a = &srv_a, *b = &srv_b;
	assert_int_equal(server_start(a, NULL), 0);
	mc_client *c = conn(a);
	assert_int_equal(mc_mkdir(c, "/a-was-here", 0755), 0);

	/* b gets its own temporary directory (its own socket) but a's data:
	 * the later --data wins on the command line. It must refuse to run,
	 * so it never accepts on its socket. */
	const char *args[] = { "--data", a->data, NULL };
	fprintf(stderr, "# a second server on %s is expected to fail:\n", a->data);
	assert_int_equal(server_start(b, args), -1);
	assert_int_equal(b->pid, 0);

	/* a is unharmed. */
	struct stat st;
	assert_int_equal(mc_lstat(c, "/a-was-here", &st), 0);
	assert_int_equal(mc_mkdir(c, "/still-working", 0755), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(a, SIGTERM), 0);
	/* With a gone, the directory is free again. */
	assert_int_equal(server_start(a, NULL), 0);
	c = conn(a);
	assert_int_equal(mc_lstat(c, "/still-working", &st), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(a, SIGTERM), 0);
	server_cleanup(a);
	server_cleanup(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_clean_restart, case_setup, case_teardown),
		cmocka_unit_test_setup_teardown(test_crash_after_sync, case_setup, case_teardown),
		cmocka_unit_test_setup_teardown(test_sync_mode_crash, case_setup, case_teardown),
		cmocka_unit_test_setup_teardown(test_data_dir_lock, case_setup, case_teardown),
	};
	return cmocka_run_group_tests_name("persist", tests, NULL, NULL);
}
