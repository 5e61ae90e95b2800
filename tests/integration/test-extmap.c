/* test-extmap.c - extent maps against a real mcached, through the public
 * API: set, punch and map and their errors; random sets, punches and
 * truncations on a few files checked against a model, across clean
 * restarts and a crash after mc_sync; unlink, mc_evict and the reload of
 * a map from the store. */
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
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"


static int open_rw(mc_client *c, const char *path)
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

static uint64_t op_count(mc_client *c, const char *op)
{
	char *js = mc_server_stats(c);
	assert_non_null(js);
	uint64_t v = 0;
	harness_json_u64(js, "\"ops\"", op, &v);   /* absent: never sent */
	free(js);
	return v;
}

/* Once loaded, a map answers from shared memory: no request. */
static void test_local_reads(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	int fd = open_rw(c, "/local");
	for (uint64_t i = 0; i < 16; i++) {
		struct mc_extent e = { i * 8192, 4096, 77 + i, 1 };
		assert_int_equal(mc_extent_set(c, fd, &e), 0);
	}
	struct mc_extent out[16];
	char *js = mc_server_stats(c);
	assert_non_null(js);
	uint64_t mapped = 0;
	assert_int_equal(harness_json_u64(js, "\"extents\"", "mapped", &mapped), 0);
	free(js);
	assert_true(mapped >= 16);
	uint64_t sent = op_count(c, "extent_map");
	for (int k = 0; k < 100; k++) {
		assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 16), 16);
		assert_true(out[15].off == 15 * 8192 && out[15].phys == 77 + 15);
	}
	assert_int_equal(mc_extent_map(c, fd, 8192, 1, out, 16), 1);
	assert_int_equal(out[0].phys, 78);
	assert_int_equal(op_count(c, "extent_map"), sent);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

static void test_basics(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	int fd = open_rw(c, "/basic");
	struct mc_extent out[8];
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 8), 0);
	struct mc_extent a = { 0, 8192, 1 << 20, 7 }, b = { 8192, 4096, 5 << 20, 0 };
	assert_int_equal(mc_extent_set(c, fd, &a), 0);
	assert_int_equal(mc_extent_set(c, fd, &b), 0);
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 8), 2);
	assert_true(out[0].off == 0 && out[0].len == 8192 && out[0].phys == 1 << 20 && out[0].flags == 7);
	assert_true(out[1].off == 8192 && out[1].len == 4096 && out[1].phys == 5 << 20);
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 1), 1);
	assert_int_equal(mc_extent_map(c, fd, 9000, 1, out, 8), 1);
	assert_int_equal(out[0].off, 8192);
	/* A punch inside the first cuts it in two. */
	assert_int_equal(mc_extent_punch(c, fd, 1024, 1024), 0);
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 8), 3);
	assert_true(out[1].off == 2048 && out[1].len == 6144 && out[1].phys == (1 << 20) + 2048);
	assert_int_equal(mc_extent_punch(c, fd, 0, UINT64_MAX), 0);
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 8), 0);

	struct mc_extent z = { 0, 0, 0, 0 }, wrap = { UINT64_MAX, 2, 0, 0 };
	EXPECT_ERR(mc_extent_set(c, fd, &z), EINVAL);
	EXPECT_ERR(mc_extent_set(c, fd, &wrap), EINVAL);
	EXPECT_ERR(mc_extent_set(c, fd, NULL), EINVAL);
	EXPECT_ERR(mc_extent_punch(c, fd, 0, 0), EINVAL);
	EXPECT_ERR(mc_extent_map(c, fd, 0, 0, out, 8), EINVAL);
	EXPECT_ERR(mc_extent_map(c, fd, 0, 1, NULL, 8), EINVAL);
	EXPECT_ERR(mc_extent_set(c, 99, &a), EBADF);
	assert_int_equal(mc_close(c, fd), 0);
	int ro = mc_open(c, "/basic", O_RDONLY, 0);
	assert_true(ro >= 0);
	EXPECT_ERR(mc_extent_set(c, ro, &a), EBADF);
	EXPECT_ERR(mc_extent_punch(c, ro, 0, 1), EBADF);
	assert_int_equal(mc_extent_map(c, ro, 0, UINT64_MAX, out, 8), 0);
	assert_int_equal(mc_close(c, ro), 0);
	assert_int_equal(mc_mkdir(c, "/xdir", 0755), 0);
	int dfd = mc_open(c, "/xdir", O_RDONLY | O_DIRECTORY, 0);
	assert_true(dfd >= 0);
	EXPECT_ERR(mc_extent_map(c, dfd, 0, 1, out, 8), EISDIR);
	assert_int_equal(mc_close(c, dfd), 0);
	mc_disconnect(c);
}

/* ---- the model: NF files of NB blocks of 4 KiB -------------------------- */

#define NF 3u
#define NB 64u
#define BS 4096u

struct model {
	bool mapped[NF][NB];
	uint64_t phys[NF][NB];   /* of the block's first byte */
	uint32_t flags[NF][NB];
};

static struct model M;
static uint64_t X = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	X ^= X << 13;
	X ^= X >> 7;
	X ^= X << 17;
	return (uint32_t)(X >> 11);
}

static void file_name(char *p, size_t n, unsigned f)
{
	snprintf(p, n, "/m%u", f);
}

static void check_model(mc_client *c)
{
	for (unsigned f = 0; f < NF; f++) {
		char p[32];
		file_name(p, sizeof(p), f);
		int fd = mc_open(c, p, O_RDONLY, 0);
		if (fd < 0)
			fail_msg("open %s: %s", p, strerror(errno));
		struct mc_extent e[NB + 1];
		ssize_t n = mc_extent_map(c, fd, 0, UINT64_MAX, e, NB + 1);
		assert_true(n >= 0 && n <= NB);
		bool seen[NB] = { false };
		for (ssize_t k = 0; k < n; k++) {
			assert_int_equal(e[k].off % BS, 0);
			assert_int_equal(e[k].len % BS, 0);
			assert_true(e[k].off + e[k].len <= (uint64_t)NB * BS);
			for (uint64_t b = e[k].off / BS; b < (e[k].off + e[k].len) / BS; b++) {
				if (!M.mapped[f][b])
					fail_msg("%s block %llu mapped, the model says not", p,
					         (unsigned long long)b);
				assert_int_equal(M.phys[f][b], e[k].phys + (b * BS - e[k].off));
				assert_int_equal(M.flags[f][b], e[k].flags);
				seen[b] = true;
			}
		}
		for (unsigned b = 0; b < NB; b++)
			if (seen[b] != M.mapped[f][b])
				fail_msg("%s block %u: mapped %d, the model says %d", p, b, seen[b],
				         M.mapped[f][b]);
		assert_int_equal(mc_close(c, fd), 0);
	}
}

static void random_ops(mc_client *c, int n)
{
	int fds[NF];
	for (unsigned f = 0; f < NF; f++) {
		char p[32];
		file_name(p, sizeof(p), f);
		fds[f] = open_rw(c, p);
	}
	for (int i = 0; i < n; i++) {
		unsigned f = rnd() % NF;
		uint32_t a = rnd() % NB, l = 1 + rnd() % 8;
		if (a + l > NB)
			l = NB - a;
		uint32_t op = rnd() % 10;
		if (op < 6) {
			struct mc_extent e = { (uint64_t)a * BS, (uint64_t)l * BS,
			                       (uint64_t)rnd() << 20, rnd() % 4 };
			assert_int_equal(mc_extent_set(c, fds[f], &e), 0);
			for (uint32_t b = a; b < a + l; b++) {
				M.mapped[f][b] = true;
				M.phys[f][b] = e.phys + (uint64_t)(b - a) * BS;
				M.flags[f][b] = e.flags;
			}
		} else if (op < 9) {
			assert_int_equal(mc_extent_punch(c, fds[f], (uint64_t)a * BS, (uint64_t)l * BS), 0);
			for (uint32_t b = a; b < a + l; b++)
				M.mapped[f][b] = false;
		} else {
			assert_int_equal(mc_ftruncate(c, fds[f], (off_t)a * BS), 0);
			for (uint32_t b = a; b < NB; b++)
				M.mapped[f][b] = false;
		}
	}
	for (unsigned f = 0; f < NF; f++)
		assert_int_equal(mc_close(c, fds[f]), 0);
}

static void restart(int sig)
{
	assert_int_equal(server_stop(&harness_srv, sig), sig == SIGTERM ? 0 : 128 + sig);
	assert_int_equal(server_start(&harness_srv, NULL), 0);
}

/* Random changes against the model, across restarts: clean ones, and a
 * crash right after mc_sync. Truncations of maps not loaded yet (just
 * after a restart) cut the store's copy. */
static void test_model_restarts(void **state)
{
	(void)state;
	for (int round = 0; round < 4; round++) {
		mc_client *c = harness_client(&harness_srv);
		random_ops(c, 300);
		check_model(c);
		assert_int_equal(mc_sync(c), 0);
		mc_disconnect(c);
		restart(round & 1 ? SIGKILL : SIGTERM);
		c = harness_client(&harness_srv);
		check_model(c);
		/* Truncate a file whose map is not loaded yet. */
		mc_disconnect(c);
		restart(SIGTERM);
		c = harness_client(&harness_srv);
		char p[32];
		file_name(p, sizeof(p), (unsigned)round % NF);
		uint32_t at = rnd() % NB;
		assert_int_equal(mc_truncate(c, p, (off_t)at * BS), 0);
		for (uint32_t b = at; b < NB; b++)
			M.mapped[round % NF][b] = false;
		check_model(c);
		assert_int_equal(mc_sync(c), 0);
		mc_disconnect(c);
		restart(SIGTERM);
		c = harness_client(&harness_srv);
		check_model(c);
		mc_disconnect(c);
	}
}

/* mc_evict drops a committed map; the next call reloads it from the store.
 * Unlinking the last link drops the map for good. */
static void test_evict_reload_unlink(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	int fd = open_rw(c, "/ev");
	for (uint64_t i = 0; i < 100; i++) {
		struct mc_extent e = { i * 2 * BS, BS, 1000 + i, (uint32_t)i };
		assert_int_equal(mc_extent_set(c, fd, &e), 0);
	}
	assert_int_equal(mc_close(c, fd), 0);
	EXPECT_ERR(mc_evict(c, "/ev"), EBUSY);     /* not committed yet */
	assert_int_equal(mc_sync(c), 0);
	uint64_t ev = ext_stat(c, "evictions");
	assert_int_equal(mc_evict(c, "/ev"), 0);
	assert_int_equal(ext_stat(c, "evictions"), ev + 1);
	fd = open_rw(c, "/ev");
	struct mc_extent out[128];
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 128), 100);
	for (uint64_t i = 0; i < 100; i++)
		assert_true(out[i].off == i * 2 * BS && out[i].len == BS && out[i].phys == 1000 + i &&
		            out[i].flags == i);
	assert_int_equal(mc_close(c, fd), 0);

	assert_int_equal(mc_unlink(c, "/ev"), 0);
	fd = open_rw(c, "/ev");
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 128), 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	restart(SIGTERM);
	c = harness_client(&harness_srv);
	fd = open_rw(c, "/ev");
	assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, out, 128), 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basics),
		cmocka_unit_test(test_local_reads),
		cmocka_unit_test(test_model_restarts),
		cmocka_unit_test(test_evict_reload_unlink),
	};
	return cmocka_run_group_tests_name("extmap", tests, harness_group_setup, harness_group_teardown);
}
