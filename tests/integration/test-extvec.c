/* test-extvec.c - the vector forms of the extent calls (mc_range_set_v,
 * mc_range_clear_v, mc_extent_set_v, mc_extent_punch_v) against a real
 * mcached started with --max-ops 1000: many elements in few requests, each
 * element's own error, bad arrays refused before anything is sent. And
 * mc_range_test and mc_range_find answered from shared memory: no request,
 * and never a torn answer while another process changes the tree. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

#define MAX_OPS 1000u
#define BLK 16384ull

static struct mc_server srv;

static int group_setup(void **state)
{
	(void)state;
	static const char *const args[] = { "--max-ops", "1000", NULL };
	memset(&srv, 0, sizeof(srv));
	return server_start(&srv, args) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

static int open_file(mc_client *c, const char *path, int flags)
{
	int fd = mc_open(c, path, O_CREAT | flags, 0644);
	if (fd < 0)
		fail_msg("mc_open(%s): %s", path, strerror(errno));
	return fd;
}

static uint64_t requests(mc_client *c)
{
	return harness_stat_u64(c, "\"rpc\"", "requests");
}

/* 10,000 alternating ranges in ceil(10000 / 1000) requests; then every
 * other one cleared, which merges nothing and splits nothing. */
static void test_range_vec(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	int fd = open_file(c, "/vec", O_RDWR);
	const size_t n = 10000;
	struct mc_range *r = calloc(n, sizeof(*r));
	int *errs = calloc(n, sizeof(*errs));
	assert_true(r && errs);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct mc_range){ i * BLK, i * BLK + BLK - 1,
		                          i & 1 ? MC_RANGE_DIRTY : MC_RANGE_UPTODATE };
	uint64_t r0 = requests(c);
	assert_int_equal(mc_range_set_v(c, fd, r, n, errs), 0);
	uint64_t r1 = requests(c);
	/* The second stats request may count itself. */
	assert_true(r1 - r0 >= n / MAX_OPS && r1 - r0 <= n / MAX_OPS + 2);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(errs[i], 0);
	assert_int_equal(harness_stat_u64(c, "\"extents\"", "states"), n);
	for (size_t i = 0; i < n; i += 997) {
		uint32_t want = i & 1 ? MC_RANGE_DIRTY : MC_RANGE_UPTODATE;
		assert_int_equal(mc_range_test(c, fd, i * BLK, i * BLK + BLK - 1, want, 1), 1);
		assert_int_equal(mc_range_test(c, fd, i * BLK, i * BLK + BLK - 1,
		                               want ^ (MC_RANGE_DIRTY | MC_RANGE_UPTODATE), 0), 0);
	}
	/* Clear the DIRTY ranges: what is left is the UPTODATE ones. */
	for (size_t i = 0; i < n; i++)
		r[i].bits = MC_RANGE_DIRTY;
	assert_int_equal(mc_range_clear_v(c, fd, r, n, NULL), 0);
	assert_int_equal(harness_stat_u64(c, "\"extents\"", "states"), n / 2);
	uint64_t s, e;
	EXPECT_ERR(mc_range_find(c, fd, 0, MC_RANGE_DIRTY, &s, &e), ENOENT);
	assert_int_equal(mc_range_find(c, fd, BLK, MC_RANGE_UPTODATE, &s, &e), 0);
	assert_true(s == 2 * BLK && e == 3 * BLK - 1);
	/* Sequential equal ranges merge into one record. */
	for (size_t i = 0; i < n; i++)
		r[i] = (struct mc_range){ (n + i) * BLK, (n + i) * BLK + BLK - 1, 1u << 20 };
	assert_int_equal(mc_range_set_v(c, fd, r, n, NULL), 0);
	assert_int_equal(mc_range_find(c, fd, 0, 1u << 20, &s, &e), 0);
	assert_true(s == n * BLK && e == 2 * n * BLK - 1);
	assert_int_equal(harness_stat_u64(c, "\"extents\"", "states"), n / 2 + 1);
	EXPECT_OK(mc_close(c, fd));
	/* The file's creation must be committed (EBUSY otherwise): on a
	 * loaded machine the committer may not have run yet. */
	EXPECT_OK(mc_sync(c));
	EXPECT_OK(mc_evict(c, "/vec"));
	free(r);
	free(errs);
	mc_disconnect(c);
}

/* Each element fails or succeeds on its own; a bad array is refused whole,
 * before anything is sent. */
static void test_range_vec_errors(void **state)
{
	(void)state;
	mc_client *a = harness_client(&srv), *b = harness_client(&srv);
	int fa = open_file(a, "/verr", O_RDWR), fb = open_file(b, "/verr", O_RDWR);
	assert_int_equal(mc_range_set(b, fb, 0, 99, MC_RANGE_LOCKED), 0);
	struct mc_range r[4] = {
		{ 200, 299, MC_RANGE_DIRTY },
		{ 50, 60, MC_RANGE_LOCKED },     /* b holds it */
		{ 300, 399, MC_RANGE_LOCKED },
		{ 0, 99, MC_RANGE_LOCKED },      /* clearing b's lock: EPERM */
	};
	int errs[4] = { -1, -1, -1, -1 };
	assert_int_equal(mc_range_set_v(a, fa, r, 3, errs), 1);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], EAGAIN);
	assert_int_equal(errs[2], 0);
	assert_int_equal(mc_range_test(a, fa, 200, 299, MC_RANGE_DIRTY, 1), 1);
	assert_int_equal(mc_range_test(a, fa, 300, 399, MC_RANGE_LOCKED, 1), 1);
	assert_int_equal(mc_range_clear_v(a, fa, r + 2, 2, errs), 1);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], EPERM);
	assert_int_equal(mc_range_test(a, fa, 300, 399, MC_RANGE_LOCKED, 0), 0);
	assert_int_equal(mc_range_test(b, fb, 0, 99, MC_RANGE_LOCKED, 1), 1);

	/* Refused whole: the valid first element is not applied either. */
	struct mc_range bad[2] = { { 1000, 1999, MC_RANGE_WRITEBACK }, { 10, 9, MC_RANGE_DIRTY } };
	EXPECT_ERR(mc_range_set_v(a, fa, bad, 2, NULL), EINVAL);
	bad[1] = (struct mc_range){ 10, 19, 0 };
	EXPECT_ERR(mc_range_set_v(a, fa, bad, 2, NULL), EINVAL);
	EXPECT_ERR(mc_range_clear_v(a, fa, bad, 2, NULL), EINVAL);
	assert_int_equal(mc_range_test(a, fa, 0, UINT64_MAX, MC_RANGE_WRITEBACK, 0), 0);
	EXPECT_ERR(mc_range_set_v(a, fa, NULL, 1, NULL), EINVAL);
	assert_int_equal(mc_range_set_v(a, fa, NULL, 0, NULL), 0);
	EXPECT_ERR(mc_range_set_v(a, 999, r, 1, NULL), EBADF);
	assert_int_equal(mc_mkdir(a, "/vdir", 0755), 0);
	int dfd = mc_open(a, "/vdir", O_RDONLY | O_DIRECTORY, 0);
	assert_true(dfd >= 0);
	errs[0] = 0;
	assert_int_equal(mc_range_set_v(a, dfd, r, 1, errs), 1);
	assert_int_equal(errs[0], EISDIR);
	assert_int_equal(mc_close(a, dfd), 0);
	assert_int_equal(mc_close(a, fa), 0);
	assert_int_equal(mc_close(b, fb), 0);
	mc_disconnect(a);
	mc_disconnect(b);
}

/* 3,000 extents set in three requests, a model of which is read back; a
 * punch vector cuts them; per-element errors on a read-only descriptor. */
static void test_extent_vec(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	int fd = open_file(c, "/evec", O_RDWR);
	const size_t n = 3000;
	struct mc_extent *e = calloc(n, sizeof(*e)), *out = calloc(n, sizeof(*out));
	int *errs = calloc(n, sizeof(*errs));
	assert_true(e && out && errs);
	for (size_t i = 0; i < n; i++)
		e[i] = (struct mc_extent){ i * 2 * BLK, BLK, (i + 1) << 20, (uint32_t)i };
	uint64_t r0 = requests(c);
	assert_int_equal(mc_extent_set_v(c, fd, e, n, errs), 0);
	uint64_t r1 = requests(c);
	assert_true(r1 - r0 >= n / MAX_OPS && r1 - r0 <= n / MAX_OPS + 2);
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, n), (ssize_t)n);
	for (size_t i = 0; i < n; i++)
		assert_true(out[i].off == e[i].off && out[i].len == BLK && out[i].phys == e[i].phys &&
		            out[i].flags == e[i].flags);
	/* Punch the second half of every extent (phys and flags ignored). */
	for (size_t i = 0; i < n; i++)
		e[i] = (struct mc_extent){ i * 2 * BLK + BLK / 2, BLK / 2, 0xdead, 7 };
	assert_int_equal(mc_extent_punch_v(c, fd, e, n, errs), 0);
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, n), (ssize_t)n);
	for (size_t i = 0; i < n; i++)
		assert_true(out[i].off == i * 2 * BLK && out[i].len == BLK / 2 &&
		            out[i].phys == (i + 1) << 20);
	/* Past 2^64 is refused whole; a read-only descriptor fails each. */
	struct mc_extent bad[2] = { { 0, 1, 1, 0 }, { UINT64_MAX, 2, 1, 0 } };
	EXPECT_ERR(mc_extent_set_v(c, fd, bad, 2, NULL), EINVAL);
	bad[1].len = 0;
	EXPECT_ERR(mc_extent_punch_v(c, fd, bad, 2, NULL), EINVAL);
	int ro = mc_open(c, "/evec", O_RDONLY, 0);
	assert_true(ro >= 0);
	assert_int_equal(mc_extent_set_v(c, ro, bad, 1, errs), 1);
	assert_int_equal(errs[0], EBADF);
	assert_int_equal(mc_close(c, ro), 0);
	assert_int_equal(mc_close(c, fd), 0);
	free(e);
	free(out);
	free(errs);
	mc_disconnect(c);
}

#define NBLK 256u
#define VBIT (1u << 12)
#define VLO (BLK / 2)
#define VHI (NBLK * BLK - BLK / 2 - 1)

/* A writer process flips VBIT over [VLO, VHI] of a file whose 256 blocks
 * alternate DIRTY and UPTODATE (every flip splits, changes and merges
 * records); the reader's answers, from shared memory, are those of a tree
 * before or after a flip, never of one half-changed. */
static void test_range_reads(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	int fd = open_file(c, "/rr", O_RDWR);
	static struct mc_range r[NBLK];
	for (uint64_t k = 0; k < NBLK; k++)
		r[k] = (struct mc_range){ k * BLK, k * BLK + BLK - 1,
		                          k & 1 ? MC_RANGE_DIRTY : MC_RANGE_UPTODATE };
	assert_int_equal(mc_range_set_v(c, fd, r, NBLK, NULL), 0);
	/* Answered without a request. */
	uint64_t q0 = requests(c);
	uint64_t s, e;
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(mc_range_test(c, fd, 3 * BLK, 3 * BLK + 99, MC_RANGE_DIRTY, 1), 1);
		assert_int_equal(mc_range_test(c, fd, 0, NBLK * BLK - 1, MC_RANGE_DIRTY, 1), 0);
		assert_int_equal(mc_range_find(c, fd, 2 * BLK, MC_RANGE_DIRTY, &s, &e), 0);
		assert_true(s == 3 * BLK && e == 4 * BLK - 1);
		EXPECT_ERR(mc_range_find(c, fd, 0, VBIT, &s, &e), ENOENT);
	}
	assert_true(requests(c) - q0 <= 2);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mc_client *w = mc_connect(srv.socket);
		int wfd = w ? mc_open(w, "/rr", O_RDWR, 0) : -1;
		for (int g = 0; wfd >= 0 && g < 3000; g++)
			if ((g & 1 ? mc_range_clear(w, wfd, VLO, VHI, VBIT)
			           : mc_range_set(w, wfd, VLO, VHI, VBIT)) < 0)
				_exit(2);
		_exit(wfd >= 0 ? 0 : 1);
	}
	uint64_t reads = 0, runs = 0;
	int st;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (mc_range_find(c, fd, 0, VBIT, &s, &e) == 0) {
			assert_int_equal(s, VLO);
			assert_int_equal(e, VHI);
			runs++;
		} else {
			assert_int_equal(errno, ENOENT);
		}
		assert_int_equal(mc_range_test(c, fd, 0, VLO - 1, VBIT, 0), 0);
		assert_int_equal(mc_range_test(c, fd, VHI + 1, NBLK * BLK - 1, VBIT, 0), 0);
		assert_int_equal(mc_range_test(c, fd, 0, NBLK * BLK - 1,
		                               MC_RANGE_DIRTY | MC_RANGE_UPTODATE, 0), 1);
		assert_int_equal(mc_range_test(c, fd, 4 * BLK, 5 * BLK - 1, MC_RANGE_DIRTY, 0), 0);
		reads++;
	}
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	print_message("# %llu reads, %llu with the run\n", (unsigned long long)reads,
	              (unsigned long long)runs);
	assert_true(reads > 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_vec),
		cmocka_unit_test(test_range_vec_errors),
		cmocka_unit_test(test_extent_vec),
		cmocka_unit_test(test_range_reads),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
