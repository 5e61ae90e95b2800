/* bench_extent.c - mcbench --extents: the extent cache through the real
 * server and the public API (one client, one file).
 *
 *   1. build: N state records of 16 KiB with alternating bits (nothing
 *      merges), set with mc_range_set_v; memory per record from the
 *      server's extents.bytes / extents.states;
 *   2. bulk eviction: mc_close, then mc_evict of the file, timed around
 *      the call (a round trip) and on the server (extents.evict_ns);
 *   3. the baseline, in the same run: the tree built again and cleared range
 *      by range, one lock and one clear per 16 KiB, as a page-by-page
 *      invalidation does (sent as vectors: 4096 locks, then the clears of
 *      the same ranges, so the figure is the server's work per range rather
 *      than 2N round trips);
 *   4. set and clear throughput with merging: N sequential 16 KiB sets of
 *      the same bits (each merges into one record), then N clears from the
 *      front (each shrinks it), as vectors;
 *   5. extent-map lookups of 16 extents (of 1,024) from shared memory, with
 *      the server's request count checked unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define BLK 16384ull
#define VEC 4096u                   /* elements per vector call */
#define MAP_EXTENTS 1024u
#define LOOKUPS 1000000u

struct xfig {
	double build_s, bytes_per_rec, evict_call_s, evict_srv_s, ranges_s, mset_s, mclear_s;
	double lookup_s, lookup_rpcs;
	uint64_t records, merged_records;
};

static int stat_num(mc_client *c, const char *path, double *out)
{
	char *doc = mc_server_stats(c);
	if (!doc) {
		fprintf(stderr, "mcbench: mc_server_stats: %s\n", strerror(errno));
		return -1;
	}
	int rc = stats_lookup(doc, path, out);
	free(doc);
	if (rc < 0)
		fprintf(stderr, "mcbench: server stats lack %s\n", path);
	return rc < 0 ? -1 : 0;
}

/* Apply r[0..n) with fn, VEC at a time; -1 after a message on any error. */
static int vec_apply(mc_client *c, int fd, struct mc_range *r, uint64_t n,
                     int (*fn)(mc_client *, int, const struct mc_range *, size_t, int *),
                     const char *what)
{
	errno = 0;
	for (uint64_t off = 0; off < n; off += VEC) {
		size_t k = n - off < VEC ? (size_t)(n - off) : VEC;
		int rc = fn(c, fd, r + off, k, NULL);
		if (rc != 0) {
			fprintf(stderr, "mcbench: %s: %s\n", what,
			        rc < 0 ? strerror(errno) : "an element failed");
			return -1;
		}
	}
	return 0;
}

/* The N alternating records of step 1 into r. */
static void alternating(struct mc_range *r, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		r[i] = (struct mc_range){ i * BLK, i * BLK + BLK - 1,
		                          i & 1 ? MC_RANGE_DIRTY : MC_RANGE_UPTODATE | MC_RANGE_DIRTY };
}

static int build(mc_client *c, const char *path, struct mc_range *r, uint64_t n, int *fd,
                 double *secs)
{
	*fd = mc_open(c, path, O_CREAT | O_RDWR, 0644);
	if (*fd < 0) {
		fprintf(stderr, "mcbench: mc_open %s: %s\n", path, strerror(errno));
		return -1;
	}
	alternating(r, n);
	int64_t t0 = now_ns();
	if (vec_apply(c, *fd, r, n, mc_range_set_v, "mc_range_set_v") < 0)
		return -1;
	*secs = (double)(now_ns() - t0) / 1e9;
	return 0;
}

static int evict_bulk(mc_client *c, const char *path, int fd, struct xfig *x)
{
	double sum0, cnt0, sum1, cnt1;
	if (mc_close(c, fd) < 0 || stat_num(c, "extents.evict_ns.sum", &sum0) < 0 ||
	    stat_num(c, "extents.evict_ns.count", &cnt0) < 0)
		return -1;
	int64_t t0 = now_ns();
	if (mc_evict(c, path) < 0) {
		fprintf(stderr, "mcbench: mc_evict %s: %s\n", path, strerror(errno));
		return -1;
	}
	x->evict_call_s = (double)(now_ns() - t0) / 1e9;
	if (stat_num(c, "extents.evict_ns.sum", &sum1) < 0 ||
	    stat_num(c, "extents.evict_ns.count", &cnt1) < 0)
		return -1;
	/* The file had one tree (state; its map was never loaded). */
	x->evict_srv_s = cnt1 > cnt0 ? (sum1 - sum0) / 1e9 : 0;
	return 0;
}

/* One lock and one clear per 16 KiB, front to back: each vector locks
 * VEC ranges, the next clears every bit of the same ranges (removing their
 * records one by one). */
static int clear_ranges(mc_client *c, int fd, struct mc_range *r, uint64_t n, double *secs)
{
	static struct mc_range v[VEC];
	int64_t t0 = now_ns();
	errno = 0;
	for (uint64_t i = 0; i < n; i += VEC) {
		size_t k = n - i < VEC ? (size_t)(n - i) : VEC;
		for (size_t j = 0; j < k; j++)
			v[j] = (struct mc_range){ r[i + j].start, r[i + j].end, MC_RANGE_LOCKED };
		if (mc_range_set_v(c, fd, v, k, NULL) != 0)
			goto fail;
		for (size_t j = 0; j < k; j++)
			v[j].bits = ~0u;
		if (mc_range_clear_v(c, fd, v, k, NULL) != 0)
			goto fail;
	}
	*secs = (double)(now_ns() - t0) / 1e9;
	return 0;
fail:
	fprintf(stderr, "mcbench: range-by-range clear: %s\n", errno ? strerror(errno) :
	        "an element failed");
	return -1;
}

static int merging(mc_client *c, const char *path, struct mc_range *r, uint64_t n,
                   struct xfig *x)
{
	int fd = mc_open(c, path, O_CREAT | O_RDWR, 0644);
	if (fd < 0) {
		fprintf(stderr, "mcbench: mc_open %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (uint64_t i = 0; i < n; i++)
		r[i] = (struct mc_range){ i * BLK, i * BLK + BLK - 1, MC_RANGE_DIRTY };
	double s0, s1;
	if (stat_num(c, "extents.states", &s0) < 0)
		return -1;
	int64_t t0 = now_ns();
	if (vec_apply(c, fd, r, n, mc_range_set_v, "merging sets") < 0)
		return -1;
	x->mset_s = (double)(now_ns() - t0) / 1e9;
	if (stat_num(c, "extents.states", &s1) < 0)
		return -1;
	x->merged_records = (uint64_t)(s1 - s0);
	t0 = now_ns();
	if (vec_apply(c, fd, r, n, mc_range_clear_v, "splitting clears") < 0)
		return -1;
	x->mclear_s = (double)(now_ns() - t0) / 1e9;
	if (mc_close(c, fd) < 0 || mc_unlink(c, path) < 0) {
		fprintf(stderr, "mcbench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int lookups(mc_client *c, const char *path, struct xfig *x)
{
	int fd = mc_open(c, path, O_CREAT | O_RDWR, 0644);
	if (fd < 0) {
		fprintf(stderr, "mcbench: mc_open %s: %s\n", path, strerror(errno));
		return -1;
	}
	static struct mc_extent e[MAP_EXTENTS];
	for (uint64_t i = 0; i < MAP_EXTENTS; i++)
		e[i] = (struct mc_extent){ i * 2 * BLK, BLK, (i + 1) << 20, 0 };
	struct mc_extent out[16];
	if (mc_extent_set_v(c, fd, e, MAP_EXTENTS, NULL) != 0 ||
	    mc_extent_map(c, fd, 0, BLK, out, 16) != 1) {   /* loaded and published */
		fprintf(stderr, "mcbench: extent map set-up: %s\n", strerror(errno));
		return -1;
	}
	double q0, q1;
	if (stat_num(c, "rpc.requests", &q0) < 0)
		return -1;
	uint64_t sink = 0;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < LOOKUPS; i++) {
		uint64_t at = (i * 97 % (MAP_EXTENTS - 16)) * 2 * BLK;
		if (mc_extent_map(c, fd, at, 32 * BLK - 1, out, 16) != 16) {
			fprintf(stderr, "mcbench: mc_extent_map: %s\n", strerror(errno));
			return -1;
		}
		sink += out[15].phys;
	}
	x->lookup_s = (double)(now_ns() - t0) / 1e9;
	if (stat_num(c, "rpc.requests", &q1) < 0)
		return -1;
	x->lookup_rpcs = q1 - q0 - 1;   /* the stats request itself */
	if (sink == 0 || mc_close(c, fd) < 0 || mc_unlink(c, path) < 0)
		return -1;
	return 0;
}

static void print_figs(FILE *f, const struct xfig *x, uint64_t n)
{
	double bulk = x->evict_call_s > 0 ? x->evict_call_s : 1e-9;
	double srv = x->evict_srv_s > 0 ? x->evict_srv_s : 1e-9;
	fprintf(f, "extent state, one file of %llu records of 16 KiB (alternating bits), "
	        "through mcached\n", (unsigned long long)x->records);
	fprintf(f, "  build (mc_range_set_v)          %10.3f s  %12.0f sets/s\n", x->build_s,
	        (double)n / x->build_s);
	fprintf(f, "  memory per state record         %10.2f bytes (extents.bytes / states)\n",
	        x->bytes_per_rec);
	fprintf(f, "  bulk eviction, mc_evict call    %10.3f ms (a round trip)\n",
	        x->evict_call_s * 1e3);
	fprintf(f, "  bulk eviction, on the server    %10.3f us (extents.evict_ns)\n",
	        x->evict_srv_s * 1e6);
	fprintf(f, "  range-by-range lock+clear       %10.3f ms (%llu locks, %llu clears)\n",
	        x->ranges_s * 1e3, (unsigned long long)n, (unsigned long long)n);
	fprintf(f, "  ratio range-by-range / mc_evict %10.0f x\n", x->ranges_s / bulk);
	fprintf(f, "  ratio range-by-range / server   %10.0f x\n", x->ranges_s / srv);
	fprintf(f, "  merging sets (vectors)          %10.0f sets/s  (%llu record%s after)\n",
	        (double)n / x->mset_s, (unsigned long long)x->merged_records,
	        x->merged_records == 1 ? "" : "s");
	fprintf(f, "  splitting clears (vectors)      %10.0f clears/s\n", (double)n / x->mclear_s);
	fprintf(f, "extent map, 16 extents of %u from shared memory (mc_extent_map)\n",
	        MAP_EXTENTS);
	fprintf(f, "  per lookup                      %10.0f ns  (%.0f lookups/s, %.0f requests)\n",
	        x->lookup_s / LOOKUPS * 1e9, LOOKUPS / x->lookup_s, x->lookup_rpcs);
	fprintf(f, "(timings on a shared machine are noisy; the eviction times are of\n"
	        " one call, near the clock's resolution on the server side)\n");
}

int extent_bench(uint64_t n, FILE *f)
{
	mc_client *c = mc_connect(O.socket);
	if (!c) {
		fprintf(stderr, "mcbench: mc_connect: %s\n", strerror(errno));
		return -1;
	}
	struct mc_range *r = calloc(n, sizeof(*r));
	struct xfig x = { 0 };
	char path[64], mpath[64], lpath[64];
	snprintf(path, sizeof(path), "/mcb.%ld.ext", (long)run_id);
	snprintf(mpath, sizeof(mpath), "/mcb.%ld.merge", (long)run_id);
	snprintf(lpath, sizeof(lpath), "/mcb.%ld.map", (long)run_id);
	int fd = -1, rc = -1;
	double states, bytes;
	if (!r)
		goto out;
	if (build(c, path, r, n, &fd, &x.build_s) < 0 ||
	    stat_num(c, "extents.states", &states) < 0 || stat_num(c, "extents.bytes", &bytes) < 0)
		goto out;
	x.records = (uint64_t)states;
	x.bytes_per_rec = states > 0 ? bytes / states : 0;
	if (evict_bulk(c, path, fd, &x) < 0)
		goto out;
	if (build(c, path, r, n, &fd, &x.build_s) < 0 || clear_ranges(c, fd, r, n, &x.ranges_s) < 0)
		goto out;
	if (mc_close(c, fd) < 0 || mc_unlink(c, path) < 0)
		goto out;
	fd = -1;
	if (merging(c, mpath, r, n, &x) < 0 || lookups(c, lpath, &x) < 0)
		goto out;
	print_figs(f, &x, n);
	rc = 0;
out:
	if (rc < 0)
		fprintf(stderr, "mcbench: the extent benchmark failed\n");
	free(r);
	mc_disconnect(c);
	return rc;
}
