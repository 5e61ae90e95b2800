/* test-warm_miss.c - misses against a real server's warm-up: a miss
 * queues its directory ahead of the warm-up (read-ahead), moves the
 * directory's item to the head when it is queued already, and a
 * read-ahead hands the directory over to the warm-up's item, which waits
 * for it instead of reading it a second time. MCACHED_WARM_ENTRY_DELAY_US
 * (server/warm.h) slows the warmers' store reads so that the misses come
 * while warm-up runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"
#include "warm_fixture.h"

/* The names directory p lists once it is complete (listed with no
 * request), within 2 s; -1 if it is not. */
static int listed_complete(mc_client *c, const char *p)
{
	int n = -1;
	for (int i = 0; i < 100 && n < 0; i++) {
		sleep_ms(20);
		uint64_t r0 = requests(c);
		MC_DIR *d = mc_opendir(c, p);
		assert_non_null(d);
		for (n = 0; mc_readdir(d); n++)
			;
		assert_int_equal(mc_closedir(d), 0);
		if (requests(c) != r0 + 1)
			n = -1; /* not listed from shared memory: not complete yet */
	}
	return n;
}

/* A miss queues its directory ahead of the warm-up: with slow warmers,
 * a lookup deep in the last directory of the tree makes that directory
 * complete (listed with no request) long before the warm-up reaches it. */
static void test_miss_reads_ahead(void **state)
{
	(void)state;
	const char *const warm[] = { "--warmers", "2", NULL };
	mc_client *c = slow_warm_start("3000", warm);
	struct stat st;
	char p[64];
	snprintf(p, sizeof(p), "/d%02d/sub/g%03d", NDIRS - 1, NFILES - 1);
	assert_int_equal(mc_stat(c, p, &st), 0);
	assert_true(warm_stat(c, "readahead") >= 1);
	snprintf(p, sizeof(p), "/d%02d/sub", NDIRS - 1);
	/* 60 entries at 3 ms: well within a second, against over 2 s of
	 * warm-up for the whole tree with two warmers. */
	int n = listed_complete(c, p);
	uint64_t done = warm_stat(c, "done");
	print_message("# read-ahead directory complete; warm-up %s\n", done ? "over" : "still running");
	assert_int_equal(n, NFILES);
	assert_int_equal(done, 0);
	wait_warmed(c);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A miss in a large directory before the warm-up reached its parent: the
 * directory is read ahead (2 s of it at 1 ms an entry), and its warm-up
 * item, queued when the parent's last batch is read (half a second in),
 * waits until the read-ahead is over instead of reading the directory
 * beside it. The warmers look up only the names the client's lookups
 * cached (two items would each find the other's inserts and look up
 * every name from then on). */
static void test_readahead_hands_over(void **state)
{
	(void)state;
	const char *const cold[] = { "--warmers", "0", NULL };
	assert_int_equal(server_start(&srv, cold), 0);
	mc_client *c = harness_client(&srv);
	mc_batch *b = mc_batch_new(c);
	char p[64];
	for (int i = 0; i < 500; i++) {
		snprintf(p, sizeof(p), "/a%03d", i);
		mc_batch_create(b, p, 0644);
	}
	mc_batch_mkdir(b, "/zbig", 0755);
	for (int i = 0; i < 2000; i++) {
		snprintf(p, sizeof(p), "/zbig/f%04d", i);
		mc_batch_create(b, p, 0644);
	}
	run_checked(b);
	mc_batch_free(b);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	const char *const warm[] = { "--warmers", "2", NULL };
	c = restart_slow("1000", warm);
	struct stat st;
	assert_int_equal(mc_stat(c, "/zbig/f0300", &st), 0);
	assert_int_equal(warm_stat(c, "readahead"), 1);
	wait_warmed(c);
	uint64_t lookups = warm_stat(c, "lookups");
	print_message("# %llu lookups, %llu splits\n", (unsigned long long)lookups,
	              (unsigned long long)warm_stat(c, "splits"));
	assert_true(lookups <= 2); /* zbig in /, f0300 in /zbig */
	assert_int_equal(warm_stat(c, "dirs_queued"), 3); /* /, /zbig ahead, /zbig */
	assert_int_equal(warm_stat(c, "dirs_done"), 3);
	assert_int_equal(harness_stat_u64(c, "\"dentries\"", "complete_dirs"), 2);
	assert_int_equal(harness_stat_u64(c, "\"dentries\"", "positive"), 501 + 2000);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A miss in a directory whose warm-up item waits in the queue moves that
 * item to the head instead of queueing a read-ahead beside it (which would
 * read the directory a second time): the directory is complete long
 * before the warm-up is over, and every directory was queued once. */
static void test_miss_promotes_queued_dir(void **state)
{
	(void)state;
	const char *const warm[] = { "--warmers", "2", NULL };
	mc_client *c = slow_warm_start("3000", warm);
	/* The root is done (36 ms): every /dNN is queued, and the warmers
	 * are at the first two (190 ms each). */
	for (int i = 0; i < 5000 && warm_stat(c, "dirs_done") == 0; i++)
		sleep_ms(1);
	assert_true(warm_stat(c, "dirs_done") >= 1);
	struct stat st;
	char p[64];
	snprintf(p, sizeof(p), "/d%02d/f%03d", NDIRS - 1, NFILES - 1);
	assert_int_equal(mc_stat(c, p, &st), 0);
	assert_int_equal(warm_stat(c, "promoted"), 1);
	assert_int_equal(warm_stat(c, "readahead"), 0);
	snprintf(p, sizeof(p), "/d%02d", NDIRS - 1);
	int n = listed_complete(c, p);
	uint64_t done = warm_stat(c, "done");
	print_message("# promoted directory complete; warm-up %s\n", done ? "over" : "still running");
	assert_int_equal(n, NFILES + 2); /* its files, sub and link */
	assert_int_equal(done, 0);
	wait_warmed(c);
	assert_int_equal(warm_stat(c, "readahead"), 0);
	assert_int_equal(warm_stat(c, "dirs_queued"), 1 + 2 * NDIRS);
	assert_int_equal(warm_stat(c, "dirs_done"), 1 + 2 * NDIRS);
	assert_int_equal(harness_stat_u64(c, "\"dentries\"", "complete_dirs"), 1 + 2 * NDIRS);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_miss_reads_ahead, teardown),
		cmocka_unit_test_teardown(test_miss_promotes_queued_dir, teardown),
		cmocka_unit_test_teardown(test_readahead_hands_over, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
