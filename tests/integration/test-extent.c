/* test-extent.c - extent state against a real mcached, through the public
 * API: ranges set, cleared, tested and found; range locks between two
 * clients, their conflicts, and their release when a client disconnects or
 * dies; mc_evict freeing a file's state. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"


static int open_file(mc_client *c, const char *path)
{
	int fd = mc_open(c, path, O_CREAT | O_RDWR, 0644);
	if (fd < 0)
		fail_msg("mc_open(%s): %s", path, strerror(errno));
	return fd;
}

static uint64_t ext_stat(mc_client *c, const char *key)
{
	return harness_stat_u64(c, "\"extents\"", key);
}

/* n alternating 16 KiB ranges from 0: nothing merges. */
static void fill(mc_client *c, int fd, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(mc_range_set(c, fd, i * 16384, i * 16384 + 16383,
		                              i & 1 ? MC_RANGE_DIRTY : MC_RANGE_UPTODATE), 0);
}

/* Try to lock [start, end] until the server has noticed that the holder's
 * connection ended: at most 5 s. */
static int lock_eventually(mc_client *c, int fd, uint64_t start, uint64_t end)
{
	for (int i = 0; i < 500; i++) {
		if (mc_range_set(c, fd, start, end, MC_RANGE_LOCKED) == 0)
			return 0;
		if (errno != EAGAIN)
			return -1;
		usleep(10000);
	}
	return -1;
}

static void test_ranges(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	int fd = open_file(c, "/ranges");
	uint64_t s = 0, e = 0;
	assert_int_equal(mc_range_test(c, fd, 0, 100, MC_RANGE_DIRTY, 0), 0);
	EXPECT_ERR(mc_range_find(c, fd, 0, MC_RANGE_DIRTY, &s, &e), ENOENT);
	assert_int_equal(mc_range_set(c, fd, 4096, 8191, MC_RANGE_DIRTY), 0);
	assert_int_equal(mc_range_set(c, fd, 8192, 12287, MC_RANGE_DIRTY | MC_RANGE_UPTODATE), 0);
	assert_int_equal(mc_range_test(c, fd, 4096, 12287, MC_RANGE_DIRTY, 1), 1);
	assert_int_equal(mc_range_test(c, fd, 4095, 12287, MC_RANGE_DIRTY, 1), 0);
	assert_int_equal(mc_range_test(c, fd, 0, 4096, MC_RANGE_DIRTY, 0), 1);
	assert_int_equal(mc_range_find(c, fd, 0, MC_RANGE_DIRTY, &s, &e), 0);
	assert_true(s == 4096 && e == 12287);
	assert_int_equal(mc_range_find(c, fd, 0, MC_RANGE_UPTODATE, &s, &e), 0);
	assert_true(s == 8192 && e == 12287);
	assert_int_equal(mc_range_clear(c, fd, 0, UINT64_MAX, MC_RANGE_DIRTY), 0);
	assert_int_equal(mc_range_test(c, fd, 0, UINT64_MAX, MC_RANGE_DIRTY, 0), 0);
	/* Application bits. */
	assert_int_equal(mc_range_set(c, fd, 0, UINT64_MAX, 1u << 31), 0);
	assert_int_equal(mc_range_test(c, fd, 0, UINT64_MAX, 1u << 31, 1), 1);

	EXPECT_ERR(mc_range_set(c, fd, 10, 9, MC_RANGE_DIRTY), EINVAL);
	EXPECT_ERR(mc_range_set(c, fd, 0, 9, 0), EINVAL);
	EXPECT_ERR(mc_range_clear(c, fd, 10, 9, MC_RANGE_DIRTY), EINVAL);
	EXPECT_ERR(mc_range_test(c, fd, 0, 9, 0, 1), EINVAL);
	EXPECT_ERR(mc_range_find(c, fd, 0, 0, &s, &e), EINVAL);
	EXPECT_ERR(mc_range_find(c, fd, 0, MC_RANGE_DIRTY, NULL, &e), EINVAL);
	EXPECT_ERR(mc_range_set(c, 999, 0, 9, MC_RANGE_DIRTY), EBADF);
	EXPECT_ERR(mc_range_test(c, -1, 0, 9, MC_RANGE_DIRTY, 0), EBADF);
	assert_int_equal(mc_mkdir(c, "/rdir", 0755), 0);
	int dfd = mc_open(c, "/rdir", O_RDONLY | O_DIRECTORY, 0);
	assert_true(dfd >= 0);
	EXPECT_ERR(mc_range_set(c, dfd, 0, 9, MC_RANGE_DIRTY), EISDIR);
	assert_int_equal(mc_close(c, dfd), 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

/* Two clients: conflicts both ways, and the holder's locks go when it
 * disconnects. */
static void test_locks_two_clients(void **state)
{
	(void)state;
	mc_client *a = harness_client(&harness_srv), *b = harness_client(&harness_srv);
	int fa = open_file(a, "/locked"), fb = open_file(b, "/locked");
	assert_int_equal(mc_range_set(a, fa, 0, 4095, MC_RANGE_LOCKED), 0);
	EXPECT_ERR(mc_range_set(b, fb, 100, 200, MC_RANGE_LOCKED), EAGAIN);
	EXPECT_ERR(mc_range_set(b, fb, 0, UINT64_MAX, MC_RANGE_LOCKED), EAGAIN);
	EXPECT_ERR(mc_range_set(a, fa, 4095, 4096, MC_RANGE_LOCKED), EAGAIN); /* no nesting */
	EXPECT_ERR(mc_range_clear(b, fb, 0, 4095, MC_RANGE_LOCKED), EPERM);
	assert_int_equal(mc_range_test(b, fb, 0, 4095, MC_RANGE_LOCKED, 1), 1);
	assert_int_equal(mc_range_set(b, fb, 4096, 8191, MC_RANGE_LOCKED), 0);
	/* Other bits over someone's lock are allowed. */
	assert_int_equal(mc_range_set(b, fb, 0, 8191, MC_RANGE_DIRTY), 0);
	/* a unlocks and b takes it; a's later lock conflicts with b's. */
	assert_int_equal(mc_range_clear(a, fa, 0, 4095, MC_RANGE_LOCKED), 0);
	assert_int_equal(mc_range_set(b, fb, 0, 1023, MC_RANGE_LOCKED), 0);
	assert_int_equal(mc_range_set(a, fa, 1024, 4095, MC_RANGE_LOCKED), 0);
	EXPECT_ERR(mc_range_set(a, fa, 0, 0, MC_RANGE_LOCKED), EAGAIN);
	/* a goes: its [1024, 4095] is free again, b's locks stay. */
	mc_disconnect(a);
	assert_int_equal(lock_eventually(b, fb, 1024, 4095), 0);
	assert_int_equal(mc_range_test(b, fb, 0, 8191, MC_RANGE_LOCKED, 1), 1);
	assert_int_equal(mc_range_test(b, fb, 0, 8191, MC_RANGE_DIRTY, 1), 1);
	assert_int_equal(mc_range_clear(b, fb, 0, 8191, MC_RANGE_LOCKED), 0);
	assert_int_equal(mc_range_test(b, fb, 0, UINT64_MAX, MC_RANGE_LOCKED, 0), 0);
	assert_int_equal(mc_close(b, fb), 0);
	mc_disconnect(b);
}

/* A client killed while holding locks: the server releases them. */
static void test_lock_release_on_death(void **state)
{
	(void)state;
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mc_client *c = mc_connect(harness_srv.socket);
		int fd = c ? mc_open(c, "/dying", O_CREAT | O_RDWR, 0644) : -1;
		char ok = fd >= 0 && mc_range_set(c, fd, 0, 1u << 20, MC_RANGE_LOCKED) == 0 &&
		          mc_range_set(c, fd, 1u << 30, (1u << 30) + 5, MC_RANGE_LOCKED) == 0;
		if (write(pfd[1], &ok, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	char ok = 0;
	assert_int_equal(read(pfd[0], &ok, 1), 1);
	close(pfd[0]);
	assert_true(ok);
	mc_client *c = harness_client(&harness_srv);
	int fd = open_file(c, "/dying");
	EXPECT_ERR(mc_range_set(c, fd, 10, 10, MC_RANGE_LOCKED), EAGAIN);
	kill(pid, SIGKILL);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(lock_eventually(c, fd, 0, UINT64_MAX), 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

/* mc_evict frees a file's state whole; not while the file is open. */
static void test_evict(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	int fd = open_file(c, "/evicted");
	for (uint64_t i = 0; i < 2000; i++)
		assert_int_equal(mc_range_set(c, fd, i * 16384, i * 16384 + 16383,
		                              i & 1 ? MC_RANGE_DIRTY : MC_RANGE_UPTODATE), 0);
	assert_int_equal(mc_range_test(c, fd, 16384, 16384, MC_RANGE_DIRTY, 1), 1);
	EXPECT_ERR(mc_evict(c, "/evicted"), EBUSY);
	assert_int_equal(mc_close(c, fd), 0);
	/* The file's creation must be committed (EBUSY otherwise); the close
	 * travels with the next request. */
	assert_int_equal(mc_sync(c), 0);
	assert_int_equal(mc_evict(c, "/evicted"), 0);
	fd = open_file(c, "/evicted");
	assert_int_equal(mc_range_test(c, fd, 0, UINT64_MAX, MC_RANGE_DIRTY | MC_RANGE_UPTODATE, 0), 0);
	uint64_t s, e;
	EXPECT_ERR(mc_range_find(c, fd, 0, MC_RANGE_DIRTY, &s, &e), ENOENT);
	assert_int_equal(mc_close(c, fd), 0);
	EXPECT_ERR(mc_evict(c, "/absent"), ENOENT);
	EXPECT_ERR(mc_evict(c, "relative"), EINVAL); /* as every call: paths are absolute */
	mc_disconnect(c);
}

/* The last unlink and truncation to 0 free the state whole; truncation
 * keeps other clients' locks. */
static void test_teardown(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	int fd = open_file(c, "/gone");
	fill(c, fd, 1000);
	uint64_t ev = ext_stat(c, "evictions"), evs = ext_stat(c, "evicted_states");
	uint64_t merges = ext_stat(c, "merges"), splits = ext_stat(c, "splits");
	assert_true(ext_stat(c, "states") >= 1000);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_unlink(c, "/gone"), 0);
	assert_int_equal(ext_stat(c, "evictions"), ev + 1);
	assert_int_equal(ext_stat(c, "evicted_states"), evs + 1000);
	assert_int_equal(ext_stat(c, "merges"), merges);
	assert_int_equal(ext_stat(c, "splits"), splits);

	fd = open_file(c, "/trunc");
	fill(c, fd, 500);
	assert_int_equal(mc_ftruncate(c, fd, 4096), 0);
	assert_int_equal(ext_stat(c, "evictions"), ev + 1);
	assert_int_equal(mc_ftruncate(c, fd, 0), 0);
	assert_int_equal(ext_stat(c, "evictions"), ev + 2);
	assert_int_equal(ext_stat(c, "evicted_states"), evs + 1500);
	assert_int_equal(mc_range_test(c, fd, 0, UINT64_MAX, MC_RANGE_DIRTY | MC_RANGE_UPTODATE, 0), 0);

	/* Another client's lock survives the truncation; the rest goes. */
	mc_client *b = harness_client(&harness_srv);
	int fb = open_file(b, "/trunc");
	fill(c, fd, 10);
	assert_int_equal(mc_range_set(b, fb, 0, 99, MC_RANGE_LOCKED), 0);
	assert_int_equal(mc_truncate(c, "/trunc", 0), 0);
	assert_int_equal(mc_range_test(c, fd, 0, UINT64_MAX, MC_RANGE_DIRTY | MC_RANGE_UPTODATE, 0), 0);
	assert_int_equal(mc_range_test(c, fd, 0, 99, MC_RANGE_LOCKED, 1), 1);
	EXPECT_ERR(mc_range_set(c, fd, 50, 50, MC_RANGE_LOCKED), EAGAIN);
	/* Closing b's last descriptor of the file releases its locks, as
	 * POSIX record locks go; the close travels with b's next request. */
	assert_int_equal(mc_close(b, fb), 0);
	assert_int_equal(mc_sync(b), 0);
	assert_int_equal(mc_range_set(c, fd, 0, 99, MC_RANGE_LOCKED), 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(b);
	mc_disconnect(c);
}

/* A cache far smaller than the namespace: when the shrinker evicts a file's
 * inode, its state goes with it, whole. */
static void test_shrinker(void **state)
{
	(void)state;
	struct mc_server small;
	memset(&small, 0, sizeof(small));
	static const char *const args[] = { "--cache-size", "1M", NULL };
	assert_int_equal(server_start(&small, args), 0);
	mc_client *c = mc_connect(small.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/d", 0755), 0);
	int fd = mc_open(c, "/d/f", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	for (uint64_t i = 0; i < 40; i++)
		assert_int_equal(mc_range_set(c, fd, i * 16384, i * 16384 + 16383,
		                              MC_RANGE_UPTODATE | (uint32_t)(i & 1) << 20), 0);
	assert_int_equal(mc_close(c, fd), 0);
	/* A file with a dirty range: its state is pinned, never evicted. */
	fd = mc_open(c, "/d/pinned", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_range_set(c, fd, 4096, 8191, MC_RANGE_DIRTY), 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_sync(c), 0);
	uint64_t ev = ext_stat(c, "evictions");
	assert_int_equal(ext_stat(c, "trees"), 2);
	char p[64];
	int made = 0;
	while (ext_stat(c, "evictions") == ev && made < 40000) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = 0; k < 500; k++, made++) {
			snprintf(p, sizeof(p), "/d/g%06d", made);
			assert_true(mc_batch_create(b, p, 0644) >= 0);
		}
		assert_int_equal(mc_batch_run(b), 0);
		mc_batch_free(b);
		assert_int_equal(mc_sync(c), 0);
	}
	assert_int_equal(ext_stat(c, "evictions"), ev + 1);
	assert_int_equal(ext_stat(c, "trees"), 1);
	assert_int_equal(ext_stat(c, "states"), 1);
	fd = mc_open(c, "/d/pinned", O_RDWR, 0);
	assert_true(fd >= 0);
	uint64_t s, e;
	assert_int_equal(mc_range_find(c, fd, 0, MC_RANGE_DIRTY, &s, &e), 0);
	assert_int_equal(s, 4096);
	assert_int_equal(e, 8191);
	assert_int_equal(mc_close(c, fd), 0);
	/* The file comes back from the store, without state. */
	fd = mc_open(c, "/d/f", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(mc_range_test(c, fd, 0, UINT64_MAX, MC_RANGE_DIRTY | MC_RANGE_UPTODATE, 0), 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(&small, SIGTERM), 0);
	server_cleanup(&small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_locks_two_clients),
		cmocka_unit_test(test_lock_release_on_death),
		cmocka_unit_test(test_evict),
		cmocka_unit_test(test_teardown),
		cmocka_unit_test(test_shrinker),
	};
	return cmocka_run_group_tests_name("extent", tests, harness_group_setup, harness_group_teardown);
}
