/* extbench.c - figures of the extent-state trees, measured in process on
 * the server's own modules (no RPC): one inode with N state records (16 KiB
 * granularity, alternating bits so that nothing merges) freed whole, then
 * built again and cleared range by range as Btrfs did before its fix (one
 * lock and one clear per 16 KiB), in the same run; memory per record; set
 * and clear rates with merging. Prints a table; not a test.
 *
 *     extbench [-n RECORDS] (default 1048576: 16 GiB of 16 KiB ranges;
 *     extbench --help)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "extent.h"
#include "extent_state.h"
#include "extent_map.h"
#include "shm.h"
#include "shmview.h"

#define BLOCK 16384ull

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "extbench: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static double build(struct extent_cache *c, mc_off_t *t, uint64_t n)
{
	int rc = extent_tree_new(c, 1, 0, t);
	if (rc < 0)
		die("extent_tree_new", rc);
	double t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		rc = estate_set(c, *t, i * BLOCK, i * BLOCK + BLOCK - 1,
		                i & 1 ? MC_ES_DIRTY : MC_ES_UPTODATE | MC_ES_DIRTY, 0);
		if (rc < 0)
			die("estate_set", rc);
	}
	return now_s() - t0;
}

static void usage(FILE *f)
{
	fputs(
"NAME\n"
"    extbench - figures of mcached's extent-state trees, in process\n"
"\n"
"SYNOPSIS\n"
"    extbench [-n RECORDS]\n"
"\n"
"DESCRIPTION\n"
"    Runs the server's extent modules in this process (no server, no RPC)\n"
"    on a segment of its own: one inode with RECORDS state records of 16\n"
"    KiB, alternating bits so that nothing merges, freed whole, then built\n"
"    again and cleared range by range (one lock and one clear per 16 KiB,\n"
"    the baseline) in the same run; memory per record; set and clear rates\n"
"    with merging. Prints a table. A benchmark, not a test: it never fails\n"
"    on a timing; it exits 1 when a call into the extent modules fails, 2\n"
"    on bad usage.\n"
"\n"
"OPTIONS\n"
"    -n RECORDS\n"
"        State records in the tree (default 1048576: 16 GiB of ranges).\n"
"    -h, --help\n"
"        Print this help and exit.\n",
	      f);
}

int main(int argc, char **argv)
{
	uint64_t n = 1048576;
	int opt;
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	while ((opt = getopt_long(argc, argv, "n:h", lo, NULL)) != -1) {
		if (opt == 'n') {
			n = bench_count_arg("extbench", "-n", optarg, ULONG_MAX);
		} else if (opt == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "Try 'extbench --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "extbench: unexpected argument '%s'\nTry 'extbench --help'.\n",
		        argv[optind]);
		return 2;
	}
	/* Room for two trees of n records at once, and the rest of a segment. */
	uint64_t size = (2 * n * MC_ECHUNK_SIZE / (MC_ES_SLOTS - MC_ES_HEAD_SLOTS) + (16u << 20)) &
	                ~(uint64_t)(MC_PAGE_SIZE - 1);
	struct shm *s;
	int rc = shm_create(size, &s);
	if (rc < 0)
		die("shm_create", rc);
	struct extent_cache c;
	extent_cache_init(&c, s);
	mc_off_t t;

	double t_build = build(&c, &t, n);
	uint64_t records = etree_at(&c, t)->count;
	double per_record = (double)extent_cache_bytes(&c) / (double)records;
	double t0 = now_s();
	extent_tree_free(&c, t);
	double t_bulk = now_s() - t0;

	build(&c, &t, n);
	uint64_t splits0 = c.splits, merges0 = c.merges;
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t a = i * BLOCK, b = a + BLOCK - 1;
		rc = estate_set(&c, t, a, b, MC_ES_LOCKED, 1);
		if (rc == 0)
			rc = estate_clear(&c, t, a, b, ~0u, 1);
		if (rc < 0)
			die("range-by-range clear", rc);
	}
	double t_ranges = now_s() - t0;
	uint64_t splits = c.splits - splits0, merges = c.merges - merges0;
	extent_tree_free(&c, t);

	/* The same by 4 KiB pages, as a page-by-page invalidation goes: each
	 * lock splits a record, each clear leaves the rest of it. */
	build(&c, &t, n);
	splits0 = c.splits;
	merges0 = c.merges;
	t0 = now_s();
	for (uint64_t i = 0; i < n * (BLOCK / 4096); i++) {
		uint64_t a = i * 4096, b = a + 4095;
		rc = estate_set(&c, t, a, b, MC_ES_LOCKED, 1);
		if (rc == 0)
			rc = estate_clear(&c, t, a, b, ~0u, 1);
		if (rc < 0)
			die("page-by-page clear", rc);
	}
	double t_pages = now_s() - t0;
	uint64_t psplits = c.splits - splits0, pmerges = c.merges - merges0;
	extent_tree_free(&c, t);

	/* Sequential sets that merge into one record, then clears that split
	 * it from the front: the hint makes each lookup O(1). */
	rc = extent_tree_new(&c, 2, 0, &t);
	if (rc < 0)
		die("extent_tree_new", rc);
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++)
		estate_set(&c, t, i * BLOCK, i * BLOCK + BLOCK - 1, MC_ES_DIRTY, 0);
	double t_mset = now_s() - t0;
	uint64_t merged_records = etree_at(&c, t)->count;
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++)
		estate_clear(&c, t, i * BLOCK, i * BLOCK + BLOCK - 1, MC_ES_DIRTY, 0);
	double t_mclear = now_s() - t0;
	extent_tree_free(&c, t);

	/* Extent-map lookups of 16 extents from shared memory, as a client
	 * reads them (seq-validated, no lock, no request). */
	rc = extent_map_tree(&c, 3, true, &t);
	if (rc < 0)
		die("extent_map_tree", rc);
	for (uint64_t i = 0; i < 1024; i++)
		emap_set(&c, t, i * 2 * BLOCK, BLOCK, i << 20, 0);
	extent_map_publish(&c, 3);
	struct view v;
	rc = view_init(&v, s->base, s->size);
	if (rc < 0)
		die("view_init", rc);
	view_default_limits(&v.lim);
	struct view_extent ve[16];
	uint64_t lookups = 2000000, sink = 0;
	t0 = now_s();
	for (uint64_t i = 0; i < lookups; i++) {
		size_t got = 0;
		uint64_t at = (i * 97 % 1000) * 2 * BLOCK;
		if (view_extent_map(&v, 3, at, 32 * BLOCK - 1, ve, 16, &got) != 0 || got != 16)
			die("view_extent_map", -EIO);
		sink += ve[15].phys;
	}
	double t_view = now_s() - t0;
	extent_map_drop(&c, 3);

	printf("extent-state trees, %llu records of 16 KiB (alternating bits)\n",
	       (unsigned long long)records);
	printf("  build (sequential set)       %10.3f s   %10.0f sets/s\n", t_build,
	       (double)n / t_build);
	printf("  memory per record            %10.2f bytes (record 40 + chunk tail)\n",
	       per_record);
	printf("  bulk eviction                %10.3f ms\n", t_bulk * 1e3);
	printf("  range-by-range lock+clear    %10.3f ms   (%llu splits, %llu merges)\n",
	       t_ranges * 1e3, (unsigned long long)splits, (unsigned long long)merges);
	printf("  ratio range-by-range / bulk  %10.0f x\n", t_ranges / (t_bulk > 0 ? t_bulk : 1e-9));
	printf("  4 KiB page-by-page lock+clear %9.3f ms   (%llu splits, %llu merges)\n",
	       t_pages * 1e3, (unsigned long long)psplits, (unsigned long long)pmerges);
	printf("  ratio page-by-page / bulk    %10.0f x\n", t_pages / (t_bulk > 0 ? t_bulk : 1e-9));
	printf("  merging sets                 %10.0f sets/s   (%llu record%s after)\n",
	       (double)n / t_mset, (unsigned long long)merged_records,
	       merged_records == 1 ? "" : "s");
	printf("  splitting clears             %10.0f clears/s\n", (double)n / t_mclear);
	printf("extent-map lookup from shared memory, 16 extents of 1024\n");
	printf("  per lookup                   %10.0f ns   (%.0f lookups/s; check %llu)\n",
	       t_view / (double)lookups * 1e9, (double)lookups / t_view,
	       (unsigned long long)(sink & 1));
	extent_cache_fini(&c);
	shm_destroy(s);
	return 0;
}
