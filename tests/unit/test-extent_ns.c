/* test-extent_ns.c - the namespace's extent calls (server/extent_ns.c)
 * over a real store: what reaches the store when a file's map changes
 * after its last link is gone (nothing: the file's rows went with its
 * inode), truncation of a map that is not loaded, which trees the
 * shrinker's pass frees (idle ones only) and the segment use that gives
 * back, and a failed first set that leaves no tree. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>

#include <cmocka.h>

#include "extent_map.h"
#include "extent_ns.h"
#include "ns_impl.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"
#include "ns_fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };

static int setup(void **state)
{
	return ns_fixture_setup(state, "test-extent_ns", 8 * MIB);
}

static void commit_now(struct fx *f)
{
	struct journal_batch *b = ns_swap(f->ns);
	if (!b)
		return;
	struct store_commit_times t;
	assert_int_equal(store_commit(f->st, b, &t), 0);
	ns_publish(f->ns, b);
}

static int count_one(void *arg, uint64_t start, uint64_t len, uint64_t phys, uint32_t flags)
{
	(void)start;
	(void)len;
	(void)phys;
	(void)flags;
	(*(unsigned *)arg)++;
	return 0;
}

static unsigned stored(struct fx *f, uint64_t ino)
{
	unsigned n = 0;
	assert_int_equal(store_scan_extents(f->st, ino, count_one, &n), 0);
	return n;
}

/* A file unlinked while open keeps a map in memory until its last handle
 * goes; changes to it must not write rows for an inode the store already
 * deleted. */
static void test_unlinked_open(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_CREAT | O_RDWR, 0644, true, &a), 0);
	assert_int_equal(ns_extent_set(f->ns, a.ino, true, 0, 4096, 1, 0), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 1);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/f")), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
	/* Still usable through the handle. */
	assert_int_equal(ns_extent_set(f->ns, a.ino, true, 8192, 4096, 2, 0), 0);
	assert_int_equal(ns_extent_punch(f->ns, a.ino, true, 0, 1), 0);
	struct emap_ext e[4];
	size_t n;
	assert_int_equal(ns_extent_map(f->ns, a.ino, 0, 0, e, 4, &n), 0);
	assert_int_equal(n, 2);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
	assert_int_equal(ns_truncate_ino(f->ns, a.ino, true, 1), 0);
	assert_int_equal(ns_extent_map(f->ns, a.ino, 0, 0, e, 4, &n), 0);
	assert_int_equal(n, 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
	ns_release(f->ns, a.ino);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
}

/* Truncating a file whose map is not loaded cuts the store's copy. */
static void test_truncate_unloaded(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/g"), O_CREAT | O_RDWR, 0644, true, &a), 0);
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(ns_extent_set(f->ns, a.ino, true, i * 4096, 4096, i, 0), 0);
	ns_release(f->ns, a.ino);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 8);
	assert_int_equal(ns_evict(f->ns, &root_cred, P("/g")), 0);
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/g"), 3 * 4096 + 1), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 4);
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/g"), 0), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
}

static struct stats_extents ext_stats(struct fx *f)
{
	struct stats_extents st;
	ns_extent_stats(f->ns, &st);
	return st;
}

static bool has_state(struct fx *f, uint64_t ino)
{
	return map_find(&f->ns->ext.state_trees, ino) != NULL;
}

static bool has_map(struct fx *f, uint64_t ino)
{
	return map_find(&f->ns->ext.map_trees, ino) != NULL;
}

/* A file with n extents (ino's map) and n 4 KiB state ranges of bits. */
static uint64_t file_with(struct fx *f, const char *path, unsigned n, uint32_t bits, bool keep)
{
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, path, strlen(path), O_CREAT | O_RDWR, 0644,
	                         true, &a), 0);
	for (uint64_t i = 0; i < n; i++) {
		assert_int_equal(ns_extent_set(f->ns, a.ino, true, i * 8192, 4096, 1000 + i, 0), 0);
		assert_int_equal(ns_range_set(f->ns, a.ino, i * 8192, i * 8192 + 4095, bits, 0, false),
		                 0);
	}
	if (!keep)
		ns_release(f->ns, a.ino);
	return a.ino;
}

/* The shrinker's pass frees idle trees only: not an open file's, not state
 * with DIRTY, DELALLOC, LOCKED or WRITEBACK in it, not the map of a file
 * whose changes are not committed. What it frees lowers segment use, and
 * a freed map reloads whole from the store. */
static void test_idle_shrink(void **state)
{
	struct fx *f = *state;
	uint64_t open_ino = file_with(f, "/open", 300, MC_ES_UPTODATE, true);
	uint64_t idle = file_with(f, "/idle", 300, MC_ES_UPTODATE, false);
	uint64_t dirty = file_with(f, "/dirty", 300, MC_ES_UPTODATE | MC_ES_DIRTY, false);
	uint64_t wb = file_with(f, "/wb", 10, MC_ES_WRITEBACK, false);
	commit_now(f);
	uint64_t uncommitted = file_with(f, "/uncommitted", 300, MC_ES_UPTODATE, false);
	uint64_t used0 = shm_bytes_used(f->shm);
	uint64_t bytes0 = ext_stats(f).bytes;

	pthread_mutex_lock(&f->ns->lock);
	uint64_t freed = do_extent_shrink(f->ns, 0, 0);
	pthread_mutex_unlock(&f->ns->lock);
	/* idle: both; dirty, wb: the map; uncommitted: the state. */
	assert_int_equal(freed, 5);
	assert_int_equal(ext_stats(f).shrunk, 5);
	assert_true(has_state(f, open_ino) && has_map(f, open_ino));
	assert_true(!has_state(f, idle) && !has_map(f, idle));
	assert_true(has_state(f, dirty) && !has_map(f, dirty));
	assert_true(has_state(f, wb) && !has_map(f, wb));
	assert_true(!has_state(f, uncommitted) && has_map(f, uncommitted));
	/* The chunks freed are not counted as used any more. */
	uint64_t bytes1 = ext_stats(f).bytes;
	assert_true(bytes1 < bytes0);
	assert_int_equal(used0 - shm_bytes_used(f->shm), bytes0 - bytes1);
	/* Nothing more is idle: a second pass frees nothing. */
	pthread_mutex_lock(&f->ns->lock);
	assert_int_equal(do_extent_shrink(f->ns, 0, 0), 0);
	pthread_mutex_unlock(&f->ns->lock);

	/* The idle map comes back whole from the store. */
	struct emap_ext e[400];
	size_t n;
	assert_int_equal(ns_extent_map(f->ns, idle, 0, 0, e, 400, &n), 0);
	assert_int_equal(n, 300);
	for (uint64_t i = 0; i < 300; i++)
		assert_true(e[i].off == i * 8192 && e[i].len == 4096 && e[i].phys == 1000 + i);
	assert_true(has_map(f, idle));
	/* The dirty state is still there, the idle state is gone. */
	assert_int_equal(ns_range_test(f->ns, dirty, 0, 4095, MC_ES_DIRTY, true), 1);
	assert_int_equal(ns_range_test(f->ns, idle, 0, UINT64_MAX, MC_ES_UPTODATE, false), 0);
	/* A target already met frees nothing. */
	file_with(f, "/idle2", 10, MC_ES_UPTODATE, false);
	commit_now(f);
	pthread_mutex_lock(&f->ns->lock);
	assert_int_equal(do_extent_shrink(f->ns, shm_bytes_used(f->shm), 0), 0);
	pthread_mutex_unlock(&f->ns->lock);
	ns_release(f->ns, open_ino);
}

/* A first set that fails leaves no empty tree behind. */
static void test_failed_first_set(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/h"), O_CREAT | O_RDWR, 0644, true, &a), 0);
	uint64_t trees = ext_stats(f).trees, bytes = ext_stats(f).bytes;
	assert_int_equal(ns_range_set(f->ns, a.ino, 10, 9, MC_ES_DIRTY, 0, false), -EINVAL);
	assert_int_equal(ns_range_set(f->ns, a.ino, 0, 9, 0, 0, false), -EINVAL);
	assert_false(has_state(f, a.ino));
	assert_int_equal(ext_stats(f).trees, trees);
	assert_int_equal(ext_stats(f).bytes, bytes);
	assert_int_equal(ext_stats(f).evictions, 0);
	/* A tree with records stays after a failed set. */
	assert_int_equal(ns_range_set(f->ns, a.ino, 0, 9, MC_ES_LOCKED, 7, true), 0);
	assert_int_equal(ns_range_set(f->ns, a.ino, 5, 5, MC_ES_LOCKED, 8, true), -EAGAIN);
	assert_true(has_state(f, a.ino));
	ns_range_release(f->ns, a.ino, 7);
	ns_release(f->ns, a.ino);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unlinked_open, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_truncate_unloaded, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_idle_shrink, setup, ns_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_failed_first_set, setup, ns_fixture_teardown),
	};
	return cmocka_run_group_tests_name("extent_ns", tests, NULL, NULL);
}
