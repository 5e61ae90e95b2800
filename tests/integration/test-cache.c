/* test-cache.c - the bounded cache against a real mcached with a segment far
 * smaller than the namespace: creates never run out of cache, every entry
 * stays reachable (reloaded from the store) and every directory lists
 * completely; a kill -9 after heavy eviction loses nothing that was synced;
 * lookups of missing names cannot grow the cache past the negative caps;
 * a tree removed by unlink and rmdir leaves nothing behind; and a segment
 * full of uncommitted entries forces a commit instead of failing; unlinks
 * of uncached files load nothing and survive a kill -9 as synced.
 */
#include <dirent.h>
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

#define BATCH 500

/* 50 directories of 5000 files (~28 MB cached) in a 2 MiB segment: two
 * million creates into 16 MiB scaled down by 8. MCACHE_CACHE_SCALE=
 * DIRS,FILES,SIZE sets the size; the suite's 'cache-full' runs the full
 * one, 200,10000,16M, in the build without sanitizers. */
static int ndirs = 50, nfiles = 5000;
static char cache_size[32] = "2M";

static struct mc_server srv;
static const char *const small_cache[] = { "--cache-size", cache_size, "--negative-dir-max", "64",
                                           "--negative-max", "1000", NULL };

/* The cap: the segment is --cache-size, and bytes_used never above it. */
static void check_cap(mc_client *c)
{
	uint64_t used = harness_stat_u64(c, "\"shm\"", "bytes_used");
	uint64_t total = harness_stat_u64(c, "\"shm\"", "bytes_total");
	char *end;
	uint64_t want = strtoull(cache_size, &end, 10);
	want <<= *end == 'G' ? 30 : *end == 'M' ? 20 : *end == 'K' ? 10 : 0;
	assert_int_equal(total, want);
	assert_true(used > 0 && used <= total);
}

static void create_tree(mc_client *c)
{
	char p[64];
	for (int d = 0; d < ndirs; d++) {
		snprintf(p, sizeof(p), "/d%02d", d);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
		check_cap(c);
		for (int f = 0; f < nfiles; f += BATCH) {
			mc_batch *b = mc_batch_new(c);
			assert_non_null(b);
			for (int k = f; k < f + BATCH; k++) {
				snprintf(p, sizeof(p), "/d%02d/file-%05d", d, k);
				assert_true(mc_batch_create(b, p, 0644) >= 0);
			}
			if (mc_batch_run(b) != 0)
				fail_msg("batch in /d%02d: %s", d, strerror(errno));
			for (size_t i = 0; i < mc_batch_count(b); i++)
				if (mc_batch_error(b, i) != 0)
					fail_msg("create /d%02d/file-%05zu: %s", d, f + i,
					         strerror(mc_batch_error(b, i)));
			mc_batch_free(b);
		}
	}
}

/* Every file stats, a missing name does not, every directory lists exactly
 * its nfiles names. */
static void check_tree(mc_client *c)
{
	char p[64];
	struct stat st;
	for (int d = 0; d < ndirs; d++) {
		for (int f = 0; f < nfiles; f++) {
			snprintf(p, sizeof(p), "/d%02d/file-%05d", d, f);
			if (mc_stat(c, p, &st) != 0)
				fail_msg("stat %s: %s", p, strerror(errno));
			assert_true(S_ISREG(st.st_mode));
		}
		snprintf(p, sizeof(p), "/d%02d/missing", d);
		assert_int_equal(mc_stat(c, p, &st), -1);
		assert_int_equal(errno, ENOENT);
		snprintf(p, sizeof(p), "/d%02d", d);
		MC_DIR *dir = mc_opendir(c, p);
		if (!dir)
			fail_msg("opendir %s: %s", p, strerror(errno));
		char *seen = calloc((size_t)nfiles, 1);
		assert_non_null(seen);
		int n = 0;
		struct dirent *e;
		errno = 0;
		while ((e = mc_readdir(dir))) {
			int k;
			assert_int_equal(sscanf(e->d_name, "file-%05d", &k), 1);
			assert_true(k >= 0 && k < nfiles);
			assert_int_equal(seen[k], 0);
			seen[k] = 1;
			n++;
		}
		assert_int_equal(errno, 0);
		assert_int_equal(n, nfiles);
		mc_closedir(dir);
		free(seen);
	}
}

/* Far more creates than the segment holds succeed; then every entry is
 * reachable and every directory lists completely. */
static void test_cap_holds(void **state)
{
	(void)state;
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	create_tree(c);
	check_cap(c);
	assert_int_equal(mc_sync(c), 0);
	check_tree(c);
	check_cap(c);
	uint64_t evicted = harness_stat_u64(c, "\"cache\"", "evicted");
	uint64_t reloads = harness_stat_u64(c, "\"cache\"", "reloads");
	uint64_t enospc = harness_stat_u64(c, "\"cache\"", "enospc");
	print_message("# %d entries in a %s cache: %llu evicted, %llu reloaded, %llu ENOSPC\n",
	              ndirs * nfiles, cache_size, (unsigned long long)evicted, (unsigned long long)reloads,
	              (unsigned long long)enospc);
	assert_true(evicted > 0);
	assert_int_equal(enospc, 0);
	mc_disconnect(c);
}

/* kill -9 after heavy eviction: what was synced is all there, on a server
 * restarted with the same small cache (which must load it all back). */
static void test_crash_after_eviction(void **state)
{
	(void)state;
	assert_int_equal(server_stop(&srv, SIGKILL), 128 + SIGKILL);
	assert_int_equal(server_start(&srv, small_cache), 0);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	check_tree(c);
	check_cap(c);
	mc_disconnect(c);
}

/* Lookups of random missing names in directories that are not complete
 * (just restarted: loaded from the store) cache at most the caps. */
static void test_negative_storm(void **state)
{
	(void)state;
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	assert_int_equal(server_start(&srv, small_cache), 0);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char p[64];
	struct stat st;
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		snprintf(p, sizeof(p), "/d%02d/nope-%016llx", (int)(x % 4), (unsigned long long)x);
		assert_int_equal(mc_stat(c, p, &st), -1);
		assert_int_equal(errno, ENOENT);
	}
	uint64_t neg = harness_stat_u64(c, "\"dentries\"", "negative");
	print_message("# 20000 missing names in 4 directories: %llu negatives cached\n",
	              (unsigned long long)neg);
	assert_true(neg <= 4 * 64);
	for (int i = 0; i < 20000; i++) {
		snprintf(p, sizeof(p), "/d%02d/nope-%d", 4 + i % (ndirs - 4), i);
		assert_int_equal(mc_stat(c, p, &st), -1);
	}
	neg = harness_stat_u64(c, "\"dentries\"", "negative");
	print_message("# then 20000 over 26 directories: %llu negatives cached\n",
	              (unsigned long long)neg);
	assert_true(neg <= 1000);
	check_cap(c);
	mc_disconnect(c);
}

/* rm -rf by unlink and rmdir (not rmtree): in directories that are not
 * complete (loaded from the store after the restart) and in complete ones
 * (made now), nothing of the tree stays cached. */
static void test_rm_rf_leaves_nothing(void **state)
{
	(void)state;
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char p[64];
	for (int k = 0; k < 200; k++) {
		snprintf(p, sizeof(p), "/d%02d/fresh", k % ndirs);
		if (k < ndirs)
			assert_int_equal(mc_mkdir(c, p, 0755), 0);
		snprintf(p, sizeof(p), "/d%02d/fresh/f%d", k % ndirs, k);
		int fd = mc_creat(c, p, 0644);
		assert_true(fd >= 0);
		assert_int_equal(mc_close(c, fd), 0);
	}
	for (int d = 0; d < ndirs; d++) {
		for (int f = 0; f < nfiles; f++) {
			snprintf(p, sizeof(p), "/d%02d/file-%05d", d, f);
			if (mc_unlink(c, p) != 0)
				fail_msg("unlink %s: %s", p, strerror(errno));
		}
		for (int k = d; k < 200; k += ndirs) {
			snprintf(p, sizeof(p), "/d%02d/fresh/f%d", d, k);
			assert_int_equal(mc_unlink(c, p), 0);
		}
		snprintf(p, sizeof(p), "/d%02d/fresh", d);
		assert_int_equal(mc_rmdir(c, p), 0);
		snprintf(p, sizeof(p), "/d%02d", d);
		assert_int_equal(mc_rmdir(c, p), 0);
	}
	assert_int_equal(mc_sync(c), 0);
	/* Give the commit's publish a moment to drop what it unpinned. */
	assert_int_equal(mc_sync(c), 0);
	uint64_t neg = harness_stat_u64(c, "\"dentries\"", "negative");
	uint64_t pos = harness_stat_u64(c, "\"dentries\"", "positive");
	uint64_t inodes = harness_stat_u64(c, "\"inodes\"", "cached");
	print_message("# after rm -rf: %llu positive, %llu negative dentries, %llu inodes\n",
	              (unsigned long long)pos, (unsigned long long)neg,
	              (unsigned long long)inodes);
	/* The root stays, with negatives only for its own removed names
	 * (none: the root of a new namespace is complete). */
	assert_int_equal(pos, 0);
	assert_int_equal(neg, 0);
	assert_int_equal(inodes, 1);
	mc_disconnect(c);
}

/* A directory far larger than the cache lists whole through the client
 * (from the store, in pages), each name once, while names are created and
 * removed in it. */
static void test_list_larger_than_cache(void **state)
{
	(void)state;
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	enum { N = 20000 };
	char p[64];
	assert_int_equal(mc_mkdir(c, "/huge", 0755), 0);
	for (int f = 0; f < N; f += BATCH) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = f; k < f + BATCH; k++) {
			snprintf(p, sizeof(p), "/huge/entry-%06d", k);
			assert_true(mc_batch_create(b, p, 0644) >= 0);
		}
		assert_int_equal(mc_batch_run(b), 0);
		for (size_t i = 0; i < mc_batch_count(b); i++)
			assert_int_equal(mc_batch_error(b, i), 0);
		mc_batch_free(b);
	}
	assert_int_equal(mc_sync(c), 0);
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	assert_int_equal(server_start(&srv, small_cache), 0);
	mc_disconnect(c);
	c = mc_connect(srv.socket);
	assert_non_null(c);
	MC_DIR *dir = mc_opendir(c, "/huge");
	assert_non_null(dir);
	static uint8_t seen[N];
	memset(seen, 0, sizeof(seen));
	int n = 0, others = 0;
	struct dirent *e;
	errno = 0;
	while ((e = mc_readdir(dir))) {
		int k;
		if (sscanf(e->d_name, "entry-%06d", &k) == 1 && k >= 0 && k < N) {
			assert_int_equal(seen[k], 0);
			seen[k] = 1;
		} else {
			others++;
		}
		/* Changes elsewhere in the directory while it is listed. */
		if (++n == 5000) {
			assert_int_equal(mc_unlink(c, "/huge/entry-019999"), 0);
			int fd = mc_creat(c, "/huge/added", 0644);
			assert_true(fd >= 0);
			mc_close(c, fd);
		}
	}
	assert_int_equal(errno, 0);
	mc_closedir(dir);
	for (int k = 0; k < N - 1; k++)
		if (!seen[k])
			fail_msg("entry-%06d was not listed", k);
	assert_true(others <= 1);
	check_cap(c);
	print_message("# %d entries listed from a %s cache\n", n, cache_size);
	assert_int_equal(mc_rmtree(c, "/huge"), 0);
	mc_disconnect(c);
}

static void create_n(mc_client *c, const char *dir, int n)
{
	char p[64];
	assert_int_equal(mc_mkdir(c, dir, 0755), 0);
	for (int f = 0; f < n; f += BATCH) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = f; k < f + BATCH && k < n; k++) {
			snprintf(p, sizeof(p), "%s/e%05d", dir, k);
			assert_true(mc_batch_create(b, p, 0644) >= 0);
		}
		assert_int_equal(mc_batch_run(b), 0);
		for (size_t i = 0; i < mc_batch_count(b); i++)
			assert_int_equal(mc_batch_error(b, i), 0);
		mc_batch_free(b);
	}
}

/* Read up to `upto` more entries of a listing of e00000..e<n-1>; each name
 * must come once. Returns how many were read. */
static int read_some(MC_DIR *d, uint8_t *seen, int n, int upto)
{
	int got = 0;
	struct dirent *e;
	errno = 0;
	while (got < upto && (e = mc_readdir(d))) {
		int k;
		assert_int_equal(sscanf(e->d_name, "e%05d", &k), 1);
		assert_true(k >= 0 && k < n);
		if (seen[k])
			fail_msg("%s returned twice", e->d_name);
		seen[k] = 1;
		got++;
	}
	assert_int_equal(errno, 0);
	return got;
}

/* Listings that begin in shared memory while the directory is complete,
 * then lose its entries to the shrinker half way (a burst of creates
 * elsewhere), continue through the server -- which loads them again under
 * new cookies, or starts over from the store when the directory no longer
 * fits -- and still return every name exactly once. */
static void test_local_listing_survives_eviction(void **state)
{
	(void)state;
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	const char *const args[] = { "--cache-size", "4M", NULL };
	assert_int_equal(server_start(&srv, args), 0);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	enum { N1 = 1500, N2 = 9000 };
	create_n(c, "/ls1", N1);
	create_n(c, "/ls2", N2);
	assert_int_equal(mc_sync(c), 0);
	MC_DIR *d1 = mc_opendir(c, "/ls1"), *d2 = mc_opendir(c, "/ls2");
	assert_non_null(d1);
	assert_non_null(d2);
	static uint8_t s1[N1], s2[N2];
	memset(s1, 0, sizeof(s1));
	memset(s2, 0, sizeof(s2));
	int n1 = read_some(d1, s1, N1, 700), n2 = read_some(d2, s2, N2, 700);
	uint64_t before = harness_stat_u64(c, "\"cache\"", "evicted");
	create_n(c, "/filler", 40000);
	assert_int_equal(mc_sync(c), 0);
	uint64_t evicted = harness_stat_u64(c, "\"cache\"", "evicted") - before;
	n1 += read_some(d1, s1, N1, N1);
	n2 += read_some(d2, s2, N2, N2);
	print_message("# local listings across %llu evictions: %d and %d names\n",
	              (unsigned long long)evicted, n1, n2);
	assert_true(evicted > 10000);
	for (int k = 0; k < N1; k++)
		if (!s1[k])
			fail_msg("/ls1/e%05d was not listed (%d of %d were)", k, n1, N1);
	for (int k = 0; k < N2; k++)
		if (!s2[k])
			fail_msg("/ls2/e%05d was not listed (%d of %d were)", k, n2, N2);
	mc_closedir(d1);
	mc_closedir(d2);
	assert_int_equal(mc_rmtree(c, "/ls1"), 0);
	assert_int_equal(mc_rmtree(c, "/ls2"), 0);
	assert_int_equal(mc_rmtree(c, "/filler"), 0);
	mc_disconnect(c);
}

/* Nothing commits by itself (a 60-s interval, a journal bound far away)
 * and the creates outgrow a 1 MiB segment: once only uncommitted entries
 * are left, a create forces a commit, evicts what it made clean and goes
 * on; no ENOSPC, and every file is there. */
static void test_forced_commit(void **state)
{
	(void)state;
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	const char *args[] = { "--cache-size", "1M", "--commit-interval-ms", "60000", NULL };
	assert_int_equal(server_start(&srv, args), 0);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	enum { N = 20000 };
	char p[64];
	assert_int_equal(mc_mkdir(c, "/forced", 0755), 0);
	for (int f = 0; f < N; f += BATCH) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = f; k < f + BATCH; k++) {
			snprintf(p, sizeof(p), "/forced/file-%05d", k);
			assert_true(mc_batch_create(b, p, 0644) >= 0);
		}
		if (mc_batch_run(b) != 0)
			fail_msg("batch: %s", strerror(errno));
		for (size_t k = 0; k < mc_batch_count(b); k++)
			if (mc_batch_error(b, k) != 0)
				fail_msg("create /forced/file-%05zu: %s", f + k,
				         strerror(mc_batch_error(b, k)));
		mc_batch_free(b);
	}
	uint64_t forced = harness_stat_u64(c, "\"cache\"", "forced_commits");
	uint64_t enospc = harness_stat_u64(c, "\"cache\"", "enospc");
	uint64_t used = harness_stat_u64(c, "\"shm\"", "bytes_used");
	print_message("# %d uncommitted creates in 1M: %llu forced commits, %llu ENOSPC\n", N,
	              (unsigned long long)forced, (unsigned long long)enospc);
	assert_true(forced > 0);
	assert_int_equal(enospc, 0);
	assert_true(used <= 1u << 20);
	struct stat st;
	for (int k = 0; k < N; k++) {
		snprintf(p, sizeof(p), "/forced/file-%05d", k);
		if (mc_stat(c, p, &st) != 0)
			fail_msg("stat %s: %s", p, strerror(errno));
	}
	mc_disconnect(c);
}

/* unlink_files: remove /ul/file-[from, to) in batches; every one goes. */
static void unlink_files(mc_client *c, int from, int to)
{
	char p[64];
	for (int f = from; f < to; f += BATCH) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = f; k < to && k < f + BATCH; k++) {
			snprintf(p, sizeof(p), "/ul/file-%05d", k);
			assert_true(mc_batch_unlink(b, p) >= 0);
		}
		if (mc_batch_run(b) != 0)
			fail_msg("batch: %s", strerror(errno));
		for (size_t k = 0; k < mc_batch_count(b); k++)
			if (mc_batch_error(b, k) != 0)
				fail_msg("unlink /ul/file-%05zu: %s", f + k,
				         strerror(mc_batch_error(b, k)));
		mc_batch_free(b);
	}
}

/* Unlinks of files the cache does not hold (a restart, no warmers) load
 * no inode, a hard-linked one's included (its other name then says one
 * link); a kill -9 after more of them, unsynced and uncommitted (a
 * one-minute commit interval), leaves exactly the synced state: the
 * synced ones gone (the other name with one link), the rest there. */
static void test_unlink_uncached_crash(void **state)
{
	(void)state;
	enum { N = 3000 };
	const char *args[] = { "--cache-size", "1M", "--commit-interval-ms", "60000",
	                       "--warmers", "0", NULL };
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	assert_int_equal(server_start(&srv, args), 0);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char p[64];
	assert_int_equal(mc_mkdir(c, "/ul", 0755), 0);
	for (int f = 0; f < N; f += BATCH) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = f; k < f + BATCH; k++) {
			snprintf(p, sizeof(p), "/ul/file-%05d", k);
			assert_true(mc_batch_create(b, p, 0644) >= 0);
		}
		assert_int_equal(mc_batch_run(b), 0);
		mc_batch_free(b);
	}
	assert_int_equal(mc_link(c, "/ul/file-00007", "/ul-twin"), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	assert_int_equal(server_start(&srv, args), 0);
	c = mc_connect(srv.socket);
	assert_non_null(c);
	uint64_t r0 = harness_stat_u64(c, "\"cache\"", "reloads");
	unlink_files(c, 0, N / 2);
	uint64_t r1 = harness_stat_u64(c, "\"cache\"", "reloads");
	print_message("# %d unlinks of uncached files: %llu entries reloaded\n", N / 2,
	              (unsigned long long)(r1 - r0));
	assert_true(r1 - r0 < 10); /* the directory */
	/* Its other name, loaded before the commit, counts the dropped link. */
	struct stat st;
	assert_int_equal(mc_stat(c, "/ul-twin", &st), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(mc_sync(c), 0);
	unlink_files(c, N / 2, N);
	mc_disconnect(c);
	assert_int_equal(server_stop(&srv, SIGKILL), 128 + SIGKILL);
	assert_int_equal(server_start(&srv, args), 0);
	c = mc_connect(srv.socket);
	assert_non_null(c);
	for (int k = 0; k < N; k++) {
		snprintf(p, sizeof(p), "/ul/file-%05d", k);
		errno = 0;
		assert_int_equal(mc_stat(c, p, &st), k < N / 2 ? -1 : 0);
		assert_int_equal(errno, k < N / 2 ? ENOENT : 0);
	}
	MC_DIR *dir = mc_opendir(c, "/ul");
	assert_non_null(dir);
	int n = 0;
	while (mc_readdir(dir))
		n++;
	mc_closedir(dir);
	assert_int_equal(n, N / 2);
	assert_int_equal(mc_stat(c, "/ul-twin", &st), 0);
	assert_int_equal(st.st_nlink, 1);
	mc_disconnect(c);
}

static int group_setup(void **state)
{
	(void)state;
	const char *sc = getenv("MCACHE_CACHE_SCALE");
	if (sc && (sscanf(sc, "%d,%d,%31s", &ndirs, &nfiles, cache_size) != 3 || ndirs < 5 ||
	           nfiles < 1000 || nfiles > 99999))
		return -1;
	return server_start(&srv, small_cache) < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_holds),
		cmocka_unit_test(test_crash_after_eviction),
		cmocka_unit_test(test_negative_storm),
		cmocka_unit_test(test_list_larger_than_cache),
		cmocka_unit_test(test_rm_rf_leaves_nothing),
		cmocka_unit_test(test_local_listing_survives_eviction),
		cmocka_unit_test(test_forced_commit),
		cmocka_unit_test(test_unlink_uncached_crash),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
