/* test-restart.c - warm restart with --shm-path against a real server: a
 * clean stop keeps the segment and the next start serves it at once (a full
 * walk sends no request); after kill -9, after the store changed, or with
 * another --cache-size, the segment is not re-attached and the namespace
 * is the store's. */
#include <errno.h>
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

static struct mc_server srv;
static char seg[128], seg_state[160];
static const char *kept[8];      /* --shm-path seg --warmers 0 */

static uint64_t requests(mc_client *c)
{
	return harness_stat_u64(c, "\"rpc\"", "requests");
}

static uint64_t reattached(mc_client *c)
{
	return harness_stat_u64(c, "\"warm\"", "reattached");
}

static void make_tree(mc_client *c)
{
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[64];
	for (int d = 0; d < 8; d++) {
		snprintf(p, sizeof(p), "/d%d", d);
		mc_batch_mkdir(b, p, 0755);
		for (int f = 0; f < 50; f++) {
			snprintf(p, sizeof(p), "/d%d/f%02d", d, f);
			mc_batch_create(b, p, 0644);
		}
	}
	assert_int_equal(mc_batch_run(b), 0);
	for (size_t i = 0; i < mc_batch_count(b); i++)
		assert_int_equal(mc_batch_error(b, i), 0);
	mc_batch_free(b);
	assert_int_equal(mc_symlink(c, "d1/f01", "/link"), 0);
	assert_int_equal(mc_sync(c), 0);
}

static void restart(const char *const *args, int sig)
{
	int st = server_stop(&srv, sig);
	assert_int_equal(st, sig == SIGTERM ? 0 : 128 + sig);
	assert_int_equal(server_start(&srv, args), 0);
}

/* A clean stop keeps the segment: the next start serves the whole
 * namespace from it with no request and no warmer, and changes made then
 * are kept through the next clean stop as well. */
static void test_reattach_after_clean_stop(void **state)
{
	(void)state;
	assert_int_equal(server_start(&srv, kept), 0);
	mc_client *c = harness_client(&srv);
	make_tree(c);
	struct harness_lines before = harness_snapshot(c, 1); /* loads every directory complete */
	mc_disconnect(c);
	restart(kept, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 1);
	uint64_t r0 = requests(c);
	struct harness_lines after = harness_snapshot(c, 1);
	struct stat st;
	EXPECT_ERR(mc_stat(c, "/d3/missing", &st), ENOENT);
	assert_int_equal(requests(c), r0 + 1); /* the requests() call only */
	harness_assert_same(&before, &after);
	harness_lines_free(&after);
	/* Changes on the re-attached segment. */
	assert_int_equal(mc_unlink(c, "/d2/f07"), 0);
	assert_int_equal(mc_mkdir(c, "/d2/new", 0700), 0);
	assert_int_equal(mc_rename(c, "/d4/f00", "/d5/moved"), 0);
	struct harness_lines changed = harness_snapshot(c, 1);
	mc_disconnect(c);
	restart(kept, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 1);
	after = harness_snapshot(c, 1);
	harness_assert_same(&changed, &after);
	harness_lines_free(&after);
	mc_disconnect(c);
	/* The store agrees with what the segment served. */
	const char *const fresh[] = { "--warmers", "0", NULL };
	restart(fresh, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 0);
	after = harness_snapshot(c, 1);
	harness_assert_same(&changed, &after);
	harness_lines_free(&after);
	harness_lines_free(&changed);
	harness_lines_free(&before);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* Whole free pages in the shared pool (shm.c) survive a clean stop with
 * their bookkeeping: after re-attaching, the pool is the same, the next
 * creates take pages from it, and the result is what the store holds. */
static void test_reattach_keeps_page_pool(void **state)
{
	(void)state;
	assert_int_equal(server_start(&srv, kept), 0);
	mc_client *c = harness_client(&srv);
	make_tree(c);
	char p[64];
	for (int round = 0; round < 2; round++) {
		const char *dir = round ? "/again" : "/big";
		assert_int_equal(mc_mkdir(c, dir, 0755), 0);
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int f = 0; f < 3000; f++) {
			snprintf(p, sizeof(p), "%s/file-with-a-longer-name-%04d", dir, f);
			mc_batch_create(b, p, 0644);
		}
		assert_int_equal(mc_batch_run(b), 0);
		for (size_t i = 0; i < mc_batch_count(b); i++)
			assert_int_equal(mc_batch_error(b, i), 0);
		mc_batch_free(b);
		assert_int_equal(mc_sync(c), 0);
		if (round == 1)
			break;
		assert_int_equal(mc_rmtree(c, "/big"), 0);
		assert_int_equal(mc_sync(c), 0);
		uint64_t pool = harness_stat_u64(c, "\"shm\"", "pages_free");
		assert_true(pool > 0);
		mc_disconnect(c);
		restart(kept, SIGTERM);
		c = harness_client(&srv);
		assert_int_equal(reattached(c), 1);
		assert_int_equal(harness_stat_u64(c, "\"shm\"", "pages_free"), pool);
	}
	struct harness_lines served = harness_snapshot(c, 1);
	char *rep = mc_server_fsck(c);
	assert_non_null(rep);
	if (!strstr(rep, "\"clean\": true"))
		fail_msg("fsck: %s", rep);
	free(rep);
	mc_disconnect(c);
	const char *const fresh[] = { "--warmers", "0", NULL };
	restart(fresh, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 0);
	struct harness_lines stored = harness_snapshot(c, 1);
	harness_assert_same(&served, &stored);
	assert_int_equal(stored.n, 8 + 8 * 50 + 1 + 1 + 3000); /* dirs, files, /link, /again */
	harness_lines_free(&served);
	harness_lines_free(&stored);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* After kill -9 the segment may hold what was never committed: it is not
 * re-attached, even when the run that crashed had re-attached it. */
static void test_no_reattach_after_crash(void **state)
{
	(void)state;
	const char *const slow[] = { "--shm-path", seg, "--warmers", "0",
	                             "--commit-interval-ms", "60000", NULL };
	assert_int_equal(server_start(&srv, slow), 0);
	mc_client *c = harness_client(&srv);
	make_tree(c);
	struct harness_lines synced = harness_snapshot(c, 1);
	mc_disconnect(c);
	restart(slow, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 1);
	/* Not committed (no sync, a 60 s interval), then the crash. */
	assert_int_equal(mc_mkdir(c, "/uncommitted", 0755), 0);
	assert_int_equal(mc_unlink(c, "/d0/f00"), 0);
	mc_disconnect(c);
	restart(slow, SIGKILL);
	assert_int_equal(access(seg_state, F_OK), -1);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 0);
	struct stat st;
	EXPECT_ERR(mc_stat(c, "/uncommitted", &st), ENOENT);
	assert_int_equal(mc_stat(c, "/d0/f00", &st), 0);
	struct harness_lines after = harness_snapshot(c, 1);
	harness_assert_same(&synced, &after);
	harness_lines_free(&after);
	harness_lines_free(&synced);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A store changed since the segment was kept (by a server run without
 * --shm-path), or another --cache-size: not re-attached. */
static void test_no_reattach_when_store_changed(void **state)
{
	(void)state;
	assert_int_equal(server_start(&srv, kept), 0);
	mc_client *c = harness_client(&srv);
	make_tree(c);
	mc_disconnect(c);
	const char *const memfd[] = { "--warmers", "0", NULL };
	restart(memfd, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(mc_mkdir(c, "/changed", 0755), 0);
	assert_int_equal(mc_unlink(c, "/d1/f02"), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	assert_int_equal(access(seg_state, F_OK), 0);
	restart(kept, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 0);
	struct stat st;
	assert_int_equal(mc_stat(c, "/changed", &st), 0);
	EXPECT_ERR(mc_stat(c, "/d1/f02", &st), ENOENT);
	mc_disconnect(c);
	/* This run kept it again; another cache size refuses it. */
	const char *const bigger[] = { "--shm-path", seg, "--warmers", "0", "--cache-size", "320M",
	                               NULL };
	restart(bigger, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 0);
	assert_int_equal(mc_stat(c, "/changed", &st), 0);
	mc_disconnect(c);
	restart(bigger, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 1);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

static void wait_warmed(mc_client *c)
{
	for (int i = 0; i < 3000 && harness_stat_u64(c, "\"warm\"", "done") != 1; i++)
		usleep(10000);
	assert_int_equal(harness_stat_u64(c, "\"warm\"", "done"), 1);
}

/* A kept segment whose warm-up was over is not warmed again; one left by a
 * server that never warmed it is, after re-attaching. */
static void test_reattach_warms_what_was_not(void **state)
{
	(void)state;
	const char *const warm2[] = { "--shm-path", seg, "--warmers", "2", NULL };
	assert_int_equal(server_start(&srv, warm2), 0);
	mc_client *c = harness_client(&srv);
	make_tree(c);
	wait_warmed(c);
	mc_disconnect(c);
	restart(warm2, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 1);
	wait_warmed(c);
	assert_int_equal(harness_stat_u64(c, "\"warm\"", "dirs_queued"), 0);
	mc_disconnect(c);
	/* A cold cache, kept by a server without warmers: only /d1 cached
	 * (the store changed meanwhile, so that segment is a new one). */
	const char *const memfd[] = { "--warmers", "0", NULL };
	restart(memfd, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(mc_mkdir(c, "/extra", 0755), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	restart(kept, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 0);
	struct stat st;
	assert_int_equal(mc_stat(c, "/d1/f01", &st), 0);
	mc_disconnect(c);
	restart(warm2, SIGTERM);
	c = harness_client(&srv);
	assert_int_equal(reattached(c), 1);
	wait_warmed(c);
	assert_true(harness_stat_u64(c, "\"warm\"", "entries") >= 8 * 50);
	uint64_t r0 = requests(c);
	struct harness_lines all = harness_snapshot(c, 1);
	assert_int_equal(requests(c), r0 + 1);
	assert_int_equal(all.n, 8 + 8 * 50 + 2);
	harness_lines_free(&all);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(seg, sizeof(seg), "/dev/shm/mcache-itest-%d.seg", (int)getpid());
	snprintf(seg_state, sizeof(seg_state), "%s.state", seg);
	kept[0] = "--shm-path";
	kept[1] = seg;
	kept[2] = "--warmers";
	kept[3] = "0";
	kept[4] = NULL;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (srv.pid > 0)
		server_stop(&srv, SIGKILL);
	server_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
	unlink(seg);
	unlink(seg_state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reattach_after_clean_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_reattach_after_crash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_reattach_when_store_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach_warms_what_was_not, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach_keeps_page_pool, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
