/* test-warm.c - the warmers against a real server: after a restart they
 * load the whole namespace (lookups, stats and listings then send no
 * request); names removed, replaced or renamed while they run never come
 * back; a directory made complete meanwhile still has its subdirectories
 * queued, a large one is split between them; they let a waiting commit
 * through instead of holding it for their batch, stop at the low
 * watermark and run at a low priority. Misses during the warm-up are in
 * test-warm_miss.c. MCACHED_WARM_ENTRY_DELAY_US (server/warm.h) slows
 * their store reads so that the races happen while warm-up runs. */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"
#include "warm_fixture.h"

/* warm.per_thread: one object per warmer, whose entries add up to the
 * warm-up's, each that inserted any with a rate. */
static void check_per_thread(mc_client *c, size_t threads, uint64_t entries)
{
	char *js = mc_server_stats(c);
	assert_non_null(js);
	json_error_t e;
	json_t *root = json_loads(js, 0, &e);
	free(js);
	assert_non_null(root);
	json_t *arr = json_object_get(json_object_get(root, "warm"), "per_thread");
	assert_true(json_is_array(arr));
	assert_int_equal(json_array_size(arr), threads);
	uint64_t sum = 0;
	size_t i;
	json_t *t;
	json_array_foreach(arr, i, t) {
		json_int_t n = json_integer_value(json_object_get(t, "entries"));
		json_int_t rate = json_integer_value(json_object_get(t, "rate"));
		assert_true(n >= 0);
		if (n > 0)
			assert_true(rate > 0);
		sum += (uint64_t)n;
	}
	assert_int_equal(sum, entries);
	json_decref(root);
}

/* After a restart the warmers load every name; then a full walk (readdir
 * of every directory, lstat of every name) and misses in complete
 * directories send no request at all. */
static void test_warm_loads_everything(void **state)
{
	(void)state;
	const char *const cold[] = { "--warmers", "0", NULL };
	assert_int_equal(server_start(&srv, cold), 0);
	mc_client *c = harness_client(&srv);
	uint64_t names = make_tree(c);
	struct harness_lines before = harness_snapshot(c, 0);
	assert_int_equal(before.n, names);
	mc_disconnect(c);

	const char *const warm[] = { "--warmers", "2", NULL };
	restart(warm);
	c = harness_client(&srv);
	wait_warmed(c);
	assert_int_equal(warm_stat(c, "entries"), names);
	assert_int_equal(warm_stat(c, "threads"), 2);
	check_per_thread(c, 2, names);
	assert_true(warm_stat(c, "bytes") > names * 64);
	assert_int_equal(warm_stat(c, "dirs_done"), 1 + 2 * NDIRS);
	/* Every directory is complete: the root and two per NDIRS. */
	assert_int_equal(harness_stat_u64(c, "\"dentries\"", "complete_dirs"), 1 + 2 * NDIRS);

	uint64_t r0 = requests(c);
	struct harness_lines after = harness_snapshot(c, 0);
	struct stat st;
	EXPECT_ERR(mc_stat(c, "/d03/missing", &st), ENOENT);
	EXPECT_ERR(mc_stat(c, "/d03/sub/missing", &st), ENOENT);
	char buf[64];
	assert_int_equal(mc_readlink(c, "/d05/link", buf, sizeof(buf)), 8);
	assert_int_equal(mc_stat(c, "/d05/link", &st), 0);
	assert_true(S_ISREG(st.st_mode));
	/* Only the requests() call itself reached the server. */
	assert_int_equal(requests(c), r0 + 1);
	harness_assert_same(&before, &after);
	harness_lines_free(&before);
	harness_lines_free(&after);
	mc_disconnect(c);

	/* --warmers 0: nothing is warmed, the walk goes through the server. */
	restart(cold);
	c = harness_client(&srv);
	assert_int_equal(warm_stat(c, "entries"), 0);
	r0 = requests(c);
	after = harness_snapshot(c, 0);
	assert_true(requests(c) > r0 + 1);
	harness_lines_free(&after);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* Names removed, replaced and renamed while slow warmers run never come
 * back, in the cache or after a restart: the namespace equals the one a
 * server that did not warm shows. Odd directories are listed through the
 * server first (which makes them complete, so a removal frees the name at
 * once). With a 1 ms commit interval, commits publish all through the
 * warm-up; with 1000 ms, the changes are still uncommitted when the
 * warmers reach them. Returns how many directories were changed while
 * the warm-up ran. */
static unsigned resurrect_round(const char *interval)
{
	const char *const cold[] = { "--warmers", "0", NULL };
	const char *const warm[] = { "--warmers", "2", "--commit-interval-ms", interval, NULL };
	mc_client *c = slow_warm_start("40", warm);
	assert_int_equal(warm_stat(c, "done"), 0);
	char p[128], q[128];
	unsigned changed_during = 0;
	for (int d = NDIRS - 1; d >= 0; d--) {
		if (d % 2) {
			snprintf(p, sizeof(p), "/d%02d", d);
			MC_DIR *dir = mc_opendir(c, p);
			assert_non_null(dir);
			while (mc_readdir(dir))
				;
			assert_int_equal(mc_closedir(dir), 0);
		}
		/* Unlink every third file, and every third in sub/. */
		for (int f = d % 3; f < NFILES; f += 3) {
			snprintf(p, sizeof(p), "/d%02d/f%03d", d, f);
			assert_int_equal(mc_unlink(c, p), 0);
			snprintf(p, sizeof(p), "/d%02d/sub/g%03d", d, f);
			assert_int_equal(mc_unlink(c, p), 0);
		}
		/* Replace one by a directory, rename another over a third. */
		snprintf(p, sizeof(p), "/d%02d/f%03d", d, (d + 1) % 3);
		assert_int_equal(mc_unlink(c, p), 0);
		assert_int_equal(mc_mkdir(c, p, 0700), 0);
		snprintf(p, sizeof(p), "/d%02d/sub/g%03d", d, (d + 2) % 3);
		snprintf(q, sizeof(q), "/d%02d/f%03d", d, (d + 2) % 3 + 3);
		assert_int_equal(mc_rename(c, p, q), 0);
		if (warm_stat(c, "done") == 0)
			changed_during++;
	}
	print_message("# interval %s ms: %u of %d directories changed while warm-up ran; "
	              "%llu yields\n", interval, changed_during, NDIRS,
	              (unsigned long long)warm_stat(c, "yields"));
	wait_warmed(c);
	assert_int_equal(mc_sync(c), 0);
	struct harness_lines warmed = harness_snapshot(c, 0);
	mc_disconnect(c);

	restart(cold);
	c = harness_client(&srv);
	struct harness_lines stored = harness_snapshot(c, 0);
	harness_assert_same(&warmed, &stored);
	struct stat st;
	EXPECT_ERR(mc_stat(c, "/d00/f000", &st), ENOENT);
	harness_lines_free(&warmed);
	harness_lines_free(&stored);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
	return changed_during;
}

/* Rounds until one changed directories while the warm-up ran: a client
 * stalled for the whole warm-up (a loaded machine) proves nothing of the
 * race, though its round still checks the result. */
static void resurrect_rounds(const char *interval)
{
	unsigned changed = 0;
	for (int i = 0; i < 3 && changed == 0; i++)
		changed = resurrect_round(interval);
	assert_true(changed > 0);
}

static void test_warm_never_resurrects(void **state)
{
	(void)state;
	resurrect_rounds("1");
}

static void test_warm_never_resurrects_uncommitted(void **state)
{
	(void)state;
	resurrect_rounds("1000");
}

/* A warmer reads a directory without the commit semaphore; names removed
 * and committed meanwhile, whose negative entries the publish drops at
 * once (one per directory at most), are not inserted from its older
 * snapshot: the batch is found stale and read again. Each directory's
 * single batch takes ~190 ms (62 entries of 3 ms); the removals land in
 * the first two while the warmers read them. */
static void test_warm_never_resurrects_dropped_negatives(void **state)
{
	(void)state;
	const char *const warm[] = { "--warmers", "2", "--negative-dir-max", "1",
		                     "--commit-interval-ms", "1", NULL };
	mc_client *c = slow_warm_start("3000", warm);
	for (int i = 0; i < 10000 && warm_stat(c, "dirs_done") < 1; i++)
		sleep_ms(1);
	assert_true(warm_stat(c, "dirs_done") >= 1); /* the root: d00, d01 are read now */
	char p[64];
	for (int d = 0; d < 2; d++)
		for (int f = 0; f < 10; f++) {
			snprintf(p, sizeof(p), "/d%02d/f%03d", d, f);
			assert_int_equal(mc_unlink(c, p), 0);
			assert_int_equal(mc_sync(c), 0);
		}
	uint64_t during = warm_stat(c, "dirs_done");
	wait_warmed(c);
	print_message("# removals done with %llu directories warmed, %llu yields\n",
	              (unsigned long long)during, (unsigned long long)warm_stat(c, "yields"));
	struct stat st;
	for (int d = 0; d < 2; d++)
		for (int f = 0; f < 10; f++) {
			snprintf(p, sizeof(p), "/d%02d/f%03d", d, f);
			EXPECT_ERR(mc_stat(c, p, &st), ENOENT);
		}
	snprintf(p, sizeof(p), "/d00/f%03d", NFILES - 1);
	assert_int_equal(mc_stat(c, p, &st), 0);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A commit never waits for a warmer's store reads: with reads of 200 ms
 * an entry, the root's batch takes 2.4 s, and holding the semaphore
 * through it (polling between entries) would hold each publish ~100 ms on
 * average; read without it, a publish waits for no read at all. */
static void test_commit_not_delayed_by_store_reads(void **state)
{
	(void)state;
	const char *const warm[] = { "--warmers", "2", NULL };
	mc_client *c = slow_warm_start("200000", warm);
	sleep_ms(100);
	uint64_t pub0 = harness_stat_u64(c, "\"phase_us_total\"", "publish");
	uint64_t cnt0 = harness_stat_u64(c, "\"commits\"", "count");
	char p[64];
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "/new%d", i);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
		assert_int_equal(mc_sync(c), 0);
		sleep_ms(50);
	}
	uint64_t pub = harness_stat_u64(c, "\"phase_us_total\"", "publish") - pub0;
	uint64_t cnt = harness_stat_u64(c, "\"commits\"", "count") - cnt0;
	uint64_t done = warm_stat(c, "dirs_done");
	print_message("# %llu commits during the root's batch: publish %llu us in all\n",
	              (unsigned long long)cnt, (unsigned long long)pub);
	assert_int_equal(done, 0); /* all of them during the first batch */
	assert_true(cnt >= 4);
	/* 20 ms: room for a sanitizer build on a loaded machine. */
	assert_true(pub / cnt < 20000);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A directory made complete by someone else while the warm-up reads it
 * (here a listing through the server; a miss's read-ahead does the same)
 * still has all its subdirectories queued: the warm-up reads on to the
 * end, inserting nothing. 600 subdirectories in the root, a file in each;
 * the root's first batch (256 entries of 1 ms) is still being read when
 * the listing makes the root complete. */
static void test_warm_queues_subdirs_of_complete_dir(void **state)
{
	(void)state;
	enum { NSUB = 600 };
	const char *const cold[] = { "--warmers", "0", NULL };
	assert_int_equal(server_start(&srv, cold), 0);
	mc_client *c = harness_client(&srv);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[64];
	for (int d = 0; d < NSUB; d++) {
		snprintf(p, sizeof(p), "/s%03d", d);
		mc_batch_mkdir(b, p, 0755);
		snprintf(p, sizeof(p), "/s%03d/f", d);
		mc_batch_create(b, p, 0644);
	}
	run_checked(b);
	mc_batch_free(b);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);

	const char *const warm[] = { "--warmers", "1", NULL };
	c = restart_slow("1000", warm);
	MC_DIR *dir = mc_opendir(c, "/");
	assert_non_null(dir);
	int n = 0;
	while (mc_readdir(dir))
		n++;
	assert_int_equal(mc_closedir(dir), 0);
	assert_int_equal(n, NSUB);
	assert_int_equal(warm_stat(c, "dirs_done"), 0);
	wait_warmed(c);
	uint64_t dirs = warm_stat(c, "dirs_done");
	uint64_t complete = harness_stat_u64(c, "\"dentries\"", "complete_dirs");
	print_message("# %llu directories done, %llu complete\n", (unsigned long long)dirs,
	              (unsigned long long)complete);
	assert_int_equal(dirs, 1 + NSUB);
	assert_int_equal(complete, 1 + NSUB);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* warm.per_thread[i].entries. */
static uint64_t thread_entries(mc_client *c, size_t i)
{
	char *js = mc_server_stats(c);
	assert_non_null(js);
	json_t *root = json_loads(js, 0, NULL);
	free(js);
	assert_non_null(root);
	json_t *t = json_array_get(json_object_get(json_object_get(root, "warm"), "per_thread"), i);
	assert_non_null(t);
	json_int_t n = json_integer_value(json_object_get(t, "entries"));
	json_decref(root);
	return (uint64_t)n;
}

/* Restart with 2 warmers slowed to 500 us an entry: a client. */
static mc_client *restart_slow_pair(void)
{
	const char *const warm[] = { "--warmers", "2", NULL };
	return restart_slow("500", warm);
}

/* One flat directory is split between the two warmers by name range
 * (warm.c note 8). Left alone, each warmer inserts a good part of it
 * (at 500 us an entry for both, about half), it is counted done once and
 * ends complete. Then, restarted, with names removed, renamed over or
 * added at either end while the parts run (the misses queue it for
 * read-ahead, which is split too), nothing comes back nor goes missing:
 * the namespace equals the one a server that did not warm shows. Every
 * 150th name is a directory with a file in it, which the part that read
 * it queues, and a long name and one past every other are among them. */
static void test_warm_splits_large_directory(void **state)
{
	(void)state;
	enum { NFLAT = 1500, EVERY = 150 };
	const char *const cold[] = { "--warmers", "0", NULL };
	assert_int_equal(server_start(&srv, cold), 0);
	mc_client *c = harness_client(&srv);
	assert_int_equal(mc_mkdir(c, "/flat", 0755), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[NAME_MAX + 16], q[64];
	for (int i = 0; i < NFLAT; i++) {
		snprintf(p, sizeof(p), "/flat/f%05d", i);
		if (i % EVERY == 0) {
			mc_batch_mkdir(b, p, 0755);
			snprintf(p, sizeof(p), "/flat/f%05d/x", i);
		}
		mc_batch_create(b, p, 0644);
	}
	run_checked(b);
	mc_batch_free(b);
	snprintf(p, sizeof(p), "/flat/");
	memset(p + 6, 'f', NAME_MAX);
	p[6 + NAME_MAX] = 0;
	assert_int_equal(mc_mknod(c, p, S_IFREG | 0600, 0), 0);
	assert_int_equal(mc_mknod(c, "/flat/\xc3\xa9t\xc3\xa9", S_IFREG | 0600, 0), 0);
	assert_int_equal(mc_sync(c), 0);
	struct harness_lines before = harness_snapshot(c, 1);
	mc_disconnect(c);

	c = restart_slow_pair();
	wait_warmed(c);
	uint64_t splits = warm_stat(c, "splits");
	uint64_t e0 = thread_entries(c, 0), e1 = thread_entries(c, 1);
	print_message("# alone: %llu splits; the threads inserted %llu and %llu\n",
	              (unsigned long long)splits, (unsigned long long)e0,
	              (unsigned long long)e1);
	assert_true(splits >= 1);
	assert_true(e0 > NFLAT / 10 && e1 > NFLAT / 10);
	const uint64_t dirs = 2 + NFLAT / EVERY; /* the root, /flat and its subdirectories */
	assert_int_equal(warm_stat(c, "dirs_done"), dirs);
	assert_int_equal(harness_stat_u64(c, "\"dentries\"", "complete_dirs"), dirs);
	uint64_t r0 = requests(c);
	struct harness_lines warmed = harness_snapshot(c, 1);
	assert_int_equal(requests(c), r0 + 1); /* all from the cache */
	harness_assert_same(&before, &warmed);
	harness_lines_free(&before);
	harness_lines_free(&warmed);
	mc_disconnect(c);

	c = restart_slow_pair();
	/* The warm-up splits it first, so that the changes below fall in
	 * both parts' ranges while they run. */
	for (int i = 0; i < 10000 && warm_stat(c, "splits") == 0; i++)
		sleep_ms(1);
	assert_true(warm_stat(c, "splits") >= 1);
	int changed_during = 0;
	for (int i = 1; i < NFLAT; i += 97) {
		snprintf(p, sizeof(p), "/flat/f%05d", i);
		if (i % 2) {
			assert_int_equal(mc_unlink(c, p), 0);
		} else {
			snprintf(q, sizeof(q), "/flat/f%05d", NFLAT - i);
			assert_int_equal(mc_rename(c, p, q), 0);
		}
		changed_during += warm_stat(c, "done") == 0;
	}
	assert_int_equal(mc_mknod(c, "/flat/a-first", S_IFREG | 0600, 0), 0);
	assert_int_equal(mc_mknod(c, "/flat/z-last", S_IFREG | 0600, 0), 0);
	changed_during += warm_stat(c, "done") == 0;
	wait_warmed(c);
	print_message("# %d changes during warm-up; %llu splits, %llu read-aheads\n",
	              changed_during, (unsigned long long)warm_stat(c, "splits"),
	              (unsigned long long)warm_stat(c, "readahead"));
	assert_true(changed_during > 0);
	assert_int_equal(harness_stat_u64(c, "\"dentries\"", "complete_dirs"), dirs);
	warmed = harness_snapshot(c, 1);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);

	restart(cold);
	c = harness_client(&srv);
	struct harness_lines stored = harness_snapshot(c, 1);
	harness_assert_same(&warmed, &stored);
	harness_lines_free(&warmed);
	harness_lines_free(&stored);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A commit that waits for the semaphore is let through between two entries:
 * with warmers whose batch takes ~250 ms (256 entries of 1 ms), the publish
 * phase stays far below it, and the warmers count their yields. The warm-up
 * lasts about a second, long enough for several syncs on a slow (sanitizer,
 * loaded) machine. */
static void test_warm_yields_to_committer(void **state)
{
	(void)state;
	const char *const warm[] = { "--warmers", "2", NULL };
	mc_client *c = slow_warm_start("1000", warm);
	uint64_t pub0 = harness_stat_u64(c, "\"phase_us_total\"", "publish");
	uint64_t cnt0 = harness_stat_u64(c, "\"commits\"", "count");
	int syncs = 0;
	char p[64];
	while (warm_stat(c, "done") == 0 && syncs < 200) {
		snprintf(p, sizeof(p), "/new%03d", syncs);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
		assert_int_equal(mc_sync(c), 0);
		syncs++;
	}
	uint64_t pub = harness_stat_u64(c, "\"phase_us_total\"", "publish") - pub0;
	uint64_t cnt = harness_stat_u64(c, "\"commits\"", "count") - cnt0;
	uint64_t yields = warm_stat(c, "yields");
	print_message("# %d syncs during warm-up: %llu commits, publish %llu us in all, "
	              "%llu yields\n", syncs, (unsigned long long)cnt, (unsigned long long)pub,
	              (unsigned long long)yields);
	assert_true(syncs >= 5);
	assert_true(cnt >= 5);
	assert_true(yields >= 1);
	/* Holding the semaphore for a whole batch (256 ms) would make it ~128 ms
	 * on average; a yield between entries keeps it to one entry's 1 ms plus
	 * the publish itself. 25 ms leaves room for a sanitizer build on a
	 * loaded machine (3.5 ms seen under TSan) and still tells them apart. */
	assert_true(pub / cnt < 25000);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* A namespace larger than the cache: the warm-up stops at the low
 * watermark, so the shrinker has nothing to undo, and what was not warmed
 * is still found through the server. */
static void test_warm_stops_at_low_watermark(void **state)
{
	(void)state;
	const char *const cold[] = { "--warmers", "0", "--cache-size", "64M", NULL };
	assert_int_equal(server_start(&srv, cold), 0);
	mc_client *c = harness_client(&srv);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[64];
	for (int d = 0; d < 20; d++) {
		snprintf(p, sizeof(p), "/big%02d", d);
		mc_batch_mkdir(b, p, 0755);
		for (int f = 0; f < 1000; f++) {
			snprintf(p, sizeof(p), "/big%02d/file-with-a-long-name-%04d", d, f);
			mc_batch_create(b, p, 0644);
		}
		run_checked(b);
	}
	mc_batch_free(b);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	const char *const small[] = { "--warmers", "2", "--cache-size", "2M", NULL };
	restart(small);
	c = harness_client(&srv);
	wait_warmed(c);
	uint64_t entries = warm_stat(c, "entries");
	uint64_t used = harness_stat_u64(c, "\"shm\"", "bytes_used");
	uint64_t low = harness_stat_u64(c, "\"cache\"", "low_bytes");
	uint64_t evicted = harness_stat_u64(c, "\"cache\"", "evicted");
	print_message("# warmed %llu of 20020 entries: %llu bytes used, low mark %llu\n",
	              (unsigned long long)entries, (unsigned long long)used,
	              (unsigned long long)low);
	assert_true(entries > 0);
	assert_true(entries < 20020);
	assert_true(used <= low + 4096);
	assert_int_equal(evicted, 0);
	struct stat st;
	assert_int_equal(mc_stat(c, "/big19/file-with-a-long-name-0999", &st), 0);
	assert_int_equal(mc_stat(c, "/big00/file-with-a-long-name-0000", &st), 0);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

/* The nice value of thread tid of the server (field 19 of its stat); its
 * name in comm. */
static int thread_nice(pid_t tid, char *comm, size_t size)
{
	char path[96], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)srv.pid, (int)tid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	if (!fgets(comm, (int)size, f))
		comm[0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)srv.pid, (int)tid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	/* After "pid (comm) ": state is field 3, nice field 19. */
	const char *p = strrchr(buf, ')');
	assert_non_null(p);
	p += 2;
	for (int field = 3; field < 19; field++) {
		p = strchr(p, ' ');
		assert_non_null(p);
		p++;
	}
	return atoi(p);
}

/* Wait (at most 2 s: the threads name themselves when they begin) for
 * the server's two warmer threads, checking that they run at nice
 * warm_nice and every other thread at the main thread's. */
static void check_warmers_nice(int warm_nice)
{
	char path[64], comm[32];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)srv.pid);
	int main_nice = thread_nice(srv.pid, comm, sizeof(comm));
	unsigned warmers = 0, others = 0;
	for (int i = 0; i < 200 && warmers < 2; i++) {
		if (i)
			sleep_ms(10);
		DIR *d = opendir(path);
		assert_non_null(d);
		warmers = others = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			int nice = thread_nice((pid_t)atoi(e->d_name), comm, sizeof(comm));
			if (strcmp(comm, "mcached-warm") == 0) {
				assert_int_equal(nice, warm_nice < main_nice ? main_nice : warm_nice);
				warmers++;
			} else {
				assert_int_equal(nice, main_nice);
				others++;
			}
		}
		closedir(d);
	}
	assert_int_equal(warmers, 2);
	assert_true(others >= 2);
}

/* The warmers run at nice 19 (the committer and the clients go first)
 * and still finish the warm-up; the rest of the server keeps its
 * priority; --warm-nice 0 leaves them at the server's. */
static void test_warmers_run_at_low_priority(void **state)
{
	(void)state;
	const char *const warm[] = { "--warmers", "2", NULL };
	mc_client *c = slow_warm_start("1000", warm);
	check_warmers_nice(19);
	assert_int_equal(warm_stat(c, "done"), 0);
	wait_warmed(c);
	uint64_t r0 = requests(c);
	struct stat st;
	assert_int_equal(mc_stat(c, "/d11/sub/g059", &st), 0);
	assert_int_equal(requests(c), r0 + 1);
	mc_disconnect(c);

	const char *const warm0[] = { "--warmers", "2", "--warm-nice", "0", NULL };
	restart(warm0);
	check_warmers_nice(0);
	assert_int_equal(server_finish(&srv), 0);
}

int main(void)
{
	/* The servers run one step below the runner's priority: a thread
	 * that set its own nice value back to 0 (sched_setattr sets it with
	 * the policy) shows in check_warmers_nice. */
	errno = 0;
	if (nice(1) == -1 && errno)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_warm_loads_everything, teardown),
		cmocka_unit_test_teardown(test_warm_never_resurrects, teardown),
		cmocka_unit_test_teardown(test_warm_never_resurrects_uncommitted, teardown),
		cmocka_unit_test_teardown(test_warm_never_resurrects_dropped_negatives, teardown),
		cmocka_unit_test_teardown(test_warm_queues_subdirs_of_complete_dir, teardown),
		cmocka_unit_test_teardown(test_warm_splits_large_directory, teardown),
		cmocka_unit_test_teardown(test_warm_yields_to_committer, teardown),
		cmocka_unit_test_teardown(test_commit_not_delayed_by_store_reads, teardown),
		cmocka_unit_test_teardown(test_warm_stops_at_low_watermark, teardown),
		cmocka_unit_test_teardown(test_warmers_run_at_low_priority, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
