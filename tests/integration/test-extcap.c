/* test-extcap.c - extent trees under the cache cap, against a real mcached
 * with a 2 MiB cache: files whose extent maps and state together need
 * several times the cache are written one after the other (each closed
 * when done); every call succeeds, because idle files' trees are freed
 * (their chunks serve the next ones), segment use goes back under the high
 * mark, and every map reloads whole from the store. */
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
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

#define FILES 30u
#define EXTENTS 2000u
#define BLK 16384ull

static struct mc_server srv;

static int group_setup(void **state)
{
	(void)state;
	static const char *const args[] = { "--cache-size", "2M", NULL };
	memset(&srv, 0, sizeof(srv));
	return server_start(&srv, args) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

static uint64_t phys_of(unsigned f, uint64_t i)
{
	return ((uint64_t)f << 40) | (i << 12);
}

static void test_fill_past_cap(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	uint64_t total = harness_stat_u64(c, "\"shm\"", "bytes_total");
	static struct mc_extent e[EXTENTS];
	static struct mc_range r[EXTENTS];
	int errs[EXTENTS];
	char path[32];
	for (unsigned f = 0; f < FILES; f++) {
		snprintf(path, sizeof(path), "/f%02u", f);
		int fd = mc_open(c, path, O_CREAT | O_RDWR, 0644);
		assert_true(fd >= 0);
		for (uint64_t i = 0; i < EXTENTS; i++) {
			e[i] = (struct mc_extent){ i * 2 * BLK, BLK, phys_of(f, i), f };
			r[i] = (struct mc_range){ i * 2 * BLK, i * 2 * BLK + BLK - 1, MC_RANGE_UPTODATE };
		}
		int bad = mc_extent_set_v(c, fd, e, EXTENTS, errs);
		if (bad != 0)
			fail_msg("file %u: extent_set_v: %d (%s; first errno %d)", f, bad,
			         strerror(errno), errs[0]);
		bad = mc_range_set_v(c, fd, r, EXTENTS, errs);
		if (bad != 0)
			fail_msg("file %u: range_set_v: %d (%s)", f, bad, strerror(errno));
		assert_int_equal(mc_close(c, fd), 0);
		assert_true(harness_stat_u64(c, "\"shm\"", "bytes_used") <= total);
	}
	/* Far more than fits went through the cache. */
	assert_true(harness_stat_u64(c, "\"extents\"", "shrunk") > 0);
	/* The shrinker brings use under the high mark (90 %). */
	uint64_t used = 0;
	for (int i = 0; i < 500; i++) {
		assert_int_equal(mc_sync(c), 0);
		used = harness_stat_u64(c, "\"shm\"", "bytes_used");
		if (used <= total / 100 * 90)
			break;
		usleep(10000);
	}
	if (used > total / 100 * 90)
		fail_msg("use %llu stays above the high mark of %llu", (unsigned long long)used,
		         (unsigned long long)(total / 100 * 90));
	/* Every map reloads whole. */
	for (unsigned f = 0; f < FILES; f++) {
		snprintf(path, sizeof(path), "/f%02u", f);
		int fd = mc_open(c, path, O_RDONLY, 0);
		assert_true(fd >= 0);
		assert_int_equal(mc_extent_map(c, fd, 0, UINT64_MAX, e, EXTENTS), EXTENTS);
		for (uint64_t i = 0; i < EXTENTS; i++)
			if (e[i].off != i * 2 * BLK || e[i].len != BLK || e[i].phys != phys_of(f, i) ||
			    e[i].flags != f)
				fail_msg("file %u extent %llu differs", f, (unsigned long long)i);
		assert_int_equal(mc_close(c, fd), 0);
		assert_true(harness_stat_u64(c, "\"shm\"", "bytes_used") <= total);
	}
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_past_cap),
	};
	return cmocka_run_group_tests_name("extcap", tests, group_setup, group_teardown);
}
