/* mcachectl_extents.c - `mcachectl extents`: a file's extent map and its
 * extent-state ranges (see mcachectl_extents.h).
 *
 * The state ranges are found with mc_range_find, which reports runs of bytes
 * carrying *some* of the bits asked for, not which ones. So each of the 32
 * bits is walked on its own, and the runs are then cut at every edge and
 * merged back into maximal runs with the same set of bits:
 *   1. runs of one bit never overlap each other (mc_range_find returns the
 *      longest run, and the walk restarts past its end);
 *   2. an edge is a start or an end + 1 of some run; between two adjacent
 *      edges every byte carries the same bits;
 *   3. an end of UINT64_MAX has no end + 1: the last piece closes there. */
#include "mcachectl_extents.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct run {
	uint64_t start, end; /* inclusive */
	uint32_t bits;
};

struct runs {
	struct run *v;
	size_t n, cap;
};

static int runs_add(struct runs *r, uint64_t start, uint64_t end, uint32_t bits)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct run *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct run){ start, end, bits };
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Every run of every bit of fd's state into *one (per bit, in order). */
static int runs_collect(mc_client *c, int fd, struct runs *one)
{
	for (int b = 0; b < 32; b++) {
		uint64_t from = 0, s, e;
		for (;;) {
			if (mc_range_find(c, fd, from, 1u << b, &s, &e) < 0) {
				if (errno == ENOENT)
					break;
				return -errno;
			}
			int rc = runs_add(one, s, e, 1u << b);
			if (rc)
				return rc;
			if (e == UINT64_MAX)
				break;
			from = e + 1;
		}
	}
	return 0;
}

/* The runs of one (one bit each) as maximal runs of equal bits into *out. */
static int runs_merge(const struct runs *one, struct runs *out)
{
	if (one->n == 0)
		return 0;
	uint64_t *edge = malloc(2 * one->n * sizeof(*edge));
	size_t ne = 0;
	int rc = 0;
	if (!edge)
		return -ENOMEM;
	for (size_t i = 0; i < one->n; i++) {
		edge[ne++] = one->v[i].start;
		if (one->v[i].end != UINT64_MAX)
			edge[ne++] = one->v[i].end + 1;
	}
	qsort(edge, ne, sizeof(*edge), cmp_u64);
	for (size_t k = 0; k < ne; k++) {
		if (k > 0 && edge[k] == edge[k - 1])
			continue;
		uint64_t s = edge[k], e = UINT64_MAX;
		for (size_t j = k + 1; j < ne; j++)
			if (edge[j] != s) {
				e = edge[j] - 1;
				break;
			}
		uint32_t bits = 0;
		for (size_t i = 0; i < one->n; i++)
			if (one->v[i].start <= s && s <= one->v[i].end)
				bits |= one->v[i].bits;
		if (bits == 0)
			continue;
		struct run *last = out->n ? &out->v[out->n - 1] : NULL;
		if (last && last->bits == bits && last->end + 1 == s) {
			last->end = e;
			continue;
		}
		rc = runs_add(out, s, e, bits);
		if (rc)
			break;
		if (e == UINT64_MAX)
			break;
	}
	free(edge);
	return rc;
}

/* The whole extent map of fd into a malloc'd *out, *n entries. */
static int extents_collect(mc_client *c, int fd, struct mc_extent **out, size_t *n)
{
	struct mc_extent *v = NULL;
	size_t nv = 0, cap = 0;
	uint64_t off = 0;
	for (;;) {
		if (cap - nv < 1024) {
			struct mc_extent *nv2 = realloc(v, (cap + 1024) * sizeof(*v));
			if (!nv2)
				goto nomem;
			v = nv2;
			cap += 1024;
		}
		ssize_t got = mc_extent_map(c, fd, off, UINT64_MAX - off, v + nv, cap - nv);
		if (got < 0) {
			int err = errno;
			free(v);
			return -err;
		}
		nv += (size_t)got;
		if (got == 0)
			break;
		const struct mc_extent *l = &v[nv - 1];
		if (l->off + l->len <= off || l->off + l->len >= UINT64_MAX)
			break;
		off = l->off + l->len;
	}
	*out = v;
	*n = nv;
	return 0;
nomem:
	free(v);
	return -ENOMEM;
}

/* A JSON number for v; past INT64_MAX (JSON integers are signed here) its
 * decimal digits as a string. */
static json_t *json_u64(uint64_t v)
{
	if (v <= INT64_MAX)
		return json_integer((json_int_t)v);
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return json_string(buf);
}

static int extents_json(json_t *doc, const char *path, const struct mc_extent *x, size_t nx,
                        const struct runs *r)
{
	json_t *xs = json_array(), *rs = json_array();
	json_t *o = json_pack("{s:s,s:o,s:o}", "path", path, "extents", xs, "ranges", rs);
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < nx; i++)
		if (json_array_append_new(xs, json_pack("{s:o,s:o,s:o,s:I}", "off",
		                                        json_u64(x[i].off), "len",
		                                        json_u64(x[i].len), "phys",
		                                        json_u64(x[i].phys), "flags",
		                                        (json_int_t)x[i].flags)) != 0)
			goto nomem;
	for (size_t i = 0; i < r->n; i++)
		if (json_array_append_new(rs, json_pack("{s:o,s:o,s:I}", "start",
		                                        json_u64(r->v[i].start), "end",
		                                        json_u64(r->v[i].end), "bits",
		                                        (json_int_t)r->v[i].bits)) != 0)
			goto nomem;
	if (json_array_append_new(doc, o) != 0)
		return -ENOMEM;
	return 0;
nomem:
	json_decref(o);
	return -ENOMEM;
}

static void extents_table(const struct mc_extent *x, size_t nx, const struct runs *r)
{
	printf("%-20s %-20s %-20s %s\n", "OFF", "LEN", "PHYS", "FLAGS");
	for (size_t i = 0; i < nx; i++)
		printf("%-20" PRIu64 " %-20" PRIu64 " %-20" PRIu64 " 0x%" PRIx32 "\n", x[i].off,
		       x[i].len, x[i].phys, x[i].flags);
	printf("%-20s %-20s %s\n", "START", "END", "BITS");
	for (size_t i = 0; i < r->n; i++)
		printf("%-20" PRIu64 " %-20" PRIu64 " 0x%" PRIx32 "\n", r->v[i].start, r->v[i].end,
		       r->v[i].bits);
}

int extents_print(mc_client *c, const char *path, json_t *doc)
{
	struct mc_extent *x = NULL;
	size_t nx = 0;
	struct runs one = { 0 }, merged = { 0 };
	int rc;
	int fd = mc_open(c, path, O_RDONLY, 0);
	if (fd < 0)
		return -errno;
	rc = extents_collect(c, fd, &x, &nx);
	if (rc == 0)
		rc = runs_collect(c, fd, &one);
	if (rc == 0)
		rc = runs_merge(&one, &merged);
	if (rc == 0) {
		if (doc)
			rc = extents_json(doc, path, x, nx, &merged);
		else
			extents_table(x, nx, &merged);
	}
	mc_close(c, fd);
	free(x);
	free(one.v);
	free(merged.v);
	return rc;
}
