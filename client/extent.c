/* extent.c - libmcache's extent-state calls (mcache.h, "Extent state"):
 * each is one request on a descriptor's handle, but for mc_range_test and
 * mc_range_find on a file whose state tree exists (read from shared
 * memory) and mc_extent_map of a loaded map; mc_evict one on a path.
 * The vector forms (mc_range_set_v, ...) send one op per element, up to
 * VEC_BATCH (or the server's max-ops) in a request. */
#include "client_impl.h"

#include <stdlib.h>

#include "mc_shm.h"
#include "shmview.h"

_Static_assert(MC_RANGE_DIRTY == MC_ES_DIRTY && MC_RANGE_DELALLOC == MC_ES_DELALLOC &&
               MC_RANGE_LOCKED == MC_ES_LOCKED && MC_RANGE_WRITEBACK == MC_ES_WRITEBACK &&
               MC_RANGE_UPTODATE == MC_ES_UPTODATE, "the public bits are the segment's");

/* client_fd_op for an op whose result carries nothing but its error: 0, or -1
 * with errno (the public convention). */
static int range_op_simple(mc_client *c, int fd, Mcache__Op *op)
{
	Mcache__Response *rsp = NULL;
	int err = client_fd_op(c, fd, op, &rsp);
	if (err < 0)
		return client_fail(err);
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}

static int range_change(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits,
                        Mcache__OpCode code)
{
	if (start > end || bits == 0)
		return client_fail(-EINVAL);
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = code;
	op.start = start;
	op.end = end;
	op.bits = bits;
	return range_op_simple(c, fd, &op);
}

int mc_range_set(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits)
{
	return range_change(c, fd, start, end, bits, MCACHE__OP_CODE__OP_RANGE_SET);
}

int mc_range_clear(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits)
{
	return range_change(c, fd, start, end, bits, MCACHE__OP_CODE__OP_RANGE_CLEAR);
}

/* The inode of descriptor fd when the read path may be used, else 0. */
static uint64_t local_ino(mc_client *c, int fd)
{
	uint64_t handle, ino = 0;
	if (client_check(c) == 0 && client_fd_handle(c, fd, &handle, &ino) == 0 && ino &&
	    client_local(c))
		return ino;
	return 0;
}

int mc_range_test(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits, int all)
{
	if (start > end || bits == 0)
		return client_fail(-EINVAL);
	uint64_t ino = local_ino(c, fd);
	if (ino) {
		/* The file's state tree, when it has one, answers from shared
		 * memory: no request. */
		struct view_range q = { .start = start, .end = end, .bits = bits, .all = all != 0 };
		int yes = 0;
		int err = client_view_result(c, view_range_test(c->view, ino, &q, &yes));
		if (err < 0)
			return client_fail(err);
		if (err == 0)
			return yes;
	}
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_RANGE_TEST;
	op.start = start;
	op.end = end;
	op.bits = bits;
	op.all = all != 0;
	int err = client_fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	int yes = rsp->results[0]->test != 0;
	mcache__response__free_unpacked(rsp, NULL);
	return yes;
}

int mc_range_find(mc_client *c, int fd, uint64_t from, uint32_t bits, uint64_t *start,
                  uint64_t *end)
{
	if (bits == 0 || !start || !end)
		return client_fail(-EINVAL);
	uint64_t ino = local_ino(c, fd);
	if (ino) {
		struct view_range q = { .from = from, .bits = bits };
		int found = 0;
		int err = client_view_result(c, view_range_find(c->view, ino, &q, &found));
		if (err < 0)
			return client_fail(err);
		if (err == 0 && !found)
			return client_fail(-ENOENT);
		if (err == 0) {
			*start = q.start;
			*end = q.end;
			return 0;
		}
	}
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_RANGE_FIND;
	op.start = from;
	op.bits = bits;
	int err = client_fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	*start = rsp->results[0]->start;
	*end = rsp->results[0]->end;
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}

int mc_evict(mc_client *c, const char *path)
{
	int err = client_check(c);
	if (err == 0)
		err = path_check(path, NULL);
	if (err < 0)
		return client_fail(err);
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_EVICT;
	path_set(&op.path, path);
	err = client_op_simple(c, &op);
	return err < 0 ? client_fail(err) : 0;
}

int mc_extent_set(mc_client *c, int fd, const struct mc_extent *e)
{
	if (!e)
		return client_fail(-EINVAL);
	if (e->len == 0 || e->off + (e->len - 1) < e->off)
		return client_fail(-EINVAL);
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_EXTENT_SET;
	op.start = e->off;
	op.len = e->len;
	op.phys = e->phys;
	op.flags = e->flags;
	return range_op_simple(c, fd, &op);
}

int mc_extent_punch(mc_client *c, int fd, uint64_t off, uint64_t len)
{
	if (len == 0)
		return client_fail(-EINVAL);
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_EXTENT_PUNCH;
	op.start = off;
	op.len = len;
	return range_op_simple(c, fd, &op);
}

/* Most extents one request asks for; the server caps it the same way. */
#define EXTENT_MAP_BATCH 8192u

ssize_t mc_extent_map(mc_client *c, int fd, uint64_t off, uint64_t len, struct mc_extent *out,
                      size_t max)
{
	if (len == 0 || (max && !out))
		return client_fail(-EINVAL);
	if (max == 0)
		return 0;
	int err = client_check(c);
	uint64_t handle, ino = 0;
	if (err == 0 && client_fd_handle(c, fd, &handle, &ino) == 0 && ino && client_local(c)) {
		/* A loaded map answers from shared memory: no request. */
		size_t n = 0, cap = max < EXTENT_MAP_BATCH ? max : EXTENT_MAP_BATCH;
		struct view_extent small[64];
		struct view_extent *ve = cap <= 64 ? small : malloc(cap * sizeof(*ve));
		if (!ve)
			return client_fail(-ENOMEM);
		err = client_view_result(c, view_extent_map(c->view, ino, off, len, ve, cap, &n));
		if (err == 0) {
			n = n < cap ? n : cap;
			for (size_t i = 0; i < n; i++)
				out[i] = (struct mc_extent){ ve[i].off, ve[i].len, ve[i].phys, ve[i].flags };
		}
		if (ve != small)
			free(ve);
		if (err < 0)
			return client_fail(err);
		if (err == 0)
			return (ssize_t)n;
	}
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_EXTENT_MAP;
	op.start = off;
	op.len = len;
	op.count = max < EXTENT_MAP_BATCH ? (uint32_t)max : EXTENT_MAP_BATCH;
	err = client_fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	const Mcache__Result *r = rsp->results[0];
	if (r->n_extents > op.count) {
		mcache__response__free_unpacked(rsp, NULL);
		return client_fail(-EPROTO);
	}
	for (size_t i = 0; i < r->n_extents; i++)
		out[i] = (struct mc_extent){ r->extents[i]->off, r->extents[i]->len,
		                             r->extents[i]->phys, r->extents[i]->flags };
	ssize_t n = (ssize_t)r->n_extents;
	mcache__response__free_unpacked(rsp, NULL);
	return n;
}

/* ---- vector forms ------------------------------------------------------ */

/* Most ops a request of a vector call carries (fewer when the server's
 * max-ops says so): about 170 KiB of frame. */
#define VEC_BATCH 4096u

/* Run ops[0..n) on fd's handle, VEC_BATCH or max_ops to a request, in order.
 * errs (when not NULL) gets each op's errno, 0 when it took effect. The
 * number of ops that failed, or -errno when a request could not be made
 * (then errs gets that errno for it and every later op). */
static int vec_run(mc_client *c, int fd, Mcache__Op *ops, size_t n, int *errs)
{
	uint64_t handle;
	int err = client_check(c);
	if (err == 0)
		err = client_fd_handle(c, fd, &handle, NULL);
	if (err < 0)
		return err;
	size_t per = VEC_BATCH;
	if (c->max_ops && c->max_ops < per)
		per = c->max_ops;
	Mcache__Op **p = malloc((n < per ? n : per) * sizeof(*p) + 1);
	if (!p)
		return -ENOMEM;
	int failed = 0;
	size_t off = 0;
	while (off < n) {
		size_t k = n - off < per ? n - off : per;
		for (size_t i = 0; i < k; i++) {
			ops[off + i].handle = handle;
			p[i] = &ops[off + i];
		}
		Mcache__Response *rsp = NULL;
		err = client_call(c, p, k, &rsp);
		if (err < 0)
			break;
		for (size_t i = 0; i < k; i++) {
			int e = rsp->results[i]->err;
			if (errs)
				errs[off + i] = e;
			failed += e != 0;
		}
		mcache__response__free_unpacked(rsp, NULL);
		off += k;
	}
	free(p);
	if (err < 0 && errs)
		for (size_t i = off; i < n; i++)
			errs[i] = -err;
	return err < 0 ? err : failed;
}

/* n ops of the given code, initialized, for vec_send(); NULL when out of
 * memory. */
static Mcache__Op *vec_ops_new(size_t n, Mcache__OpCode code)
{
	Mcache__Op *ops = malloc(n * sizeof(*ops));
	if (!ops)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		mcache__op__init(&ops[i]);
		ops[i].code = code;
	}
	return ops;
}

/* vec_run() on ops from vec_ops_new(), which it frees; a request that could
 * not be made goes through client_fail(). */
static int vec_send(mc_client *c, int fd, Mcache__Op *ops, size_t n, int *errs)
{
	int rc = vec_run(c, fd, ops, n, errs);
	free(ops);
	return rc < 0 ? client_fail(rc) : rc;
}

static int range_change_v(mc_client *c, int fd, const struct mc_range *r, size_t n, int *errs,
                          Mcache__OpCode code)
{
	if (n == 0)
		return 0;
	if (!r || n > INT32_MAX)
		return client_fail(-EINVAL);
	for (size_t i = 0; i < n; i++)
		if (r[i].start > r[i].end || r[i].bits == 0)
			return client_fail(-EINVAL);
	Mcache__Op *ops = vec_ops_new(n, code);
	if (!ops)
		return client_fail(-ENOMEM);
	for (size_t i = 0; i < n; i++) {
		ops[i].start = r[i].start;
		ops[i].end = r[i].end;
		ops[i].bits = r[i].bits;
	}
	return vec_send(c, fd, ops, n, errs);
}

int mc_range_set_v(mc_client *c, int fd, const struct mc_range *r, size_t n, int *errs)
{
	return range_change_v(c, fd, r, n, errs, MCACHE__OP_CODE__OP_RANGE_SET);
}

int mc_range_clear_v(mc_client *c, int fd, const struct mc_range *r, size_t n, int *errs)
{
	return range_change_v(c, fd, r, n, errs, MCACHE__OP_CODE__OP_RANGE_CLEAR);
}

static int extent_change_v(mc_client *c, int fd, const struct mc_extent *e, size_t n, int *errs,
                           Mcache__OpCode code)
{
	if (n == 0)
		return 0;
	if (!e || n > INT32_MAX)
		return client_fail(-EINVAL);
	for (size_t i = 0; i < n; i++)
		if (e[i].len == 0 ||
		    (code == MCACHE__OP_CODE__OP_EXTENT_SET && e[i].off + (e[i].len - 1) < e[i].off))
			return client_fail(-EINVAL);
	Mcache__Op *ops = vec_ops_new(n, code);
	if (!ops)
		return client_fail(-ENOMEM);
	for (size_t i = 0; i < n; i++) {
		ops[i].start = e[i].off;
		ops[i].len = e[i].len;
		if (code == MCACHE__OP_CODE__OP_EXTENT_SET) {
			ops[i].phys = e[i].phys;
			ops[i].flags = e[i].flags;
		}
	}
	return vec_send(c, fd, ops, n, errs);
}

int mc_extent_set_v(mc_client *c, int fd, const struct mc_extent *e, size_t n, int *errs)
{
	return extent_change_v(c, fd, e, n, errs, MCACHE__OP_CODE__OP_EXTENT_SET);
}

int mc_extent_punch_v(mc_client *c, int fd, const struct mc_extent *e, size_t n, int *errs)
{
	return extent_change_v(c, fd, e, n, errs, MCACHE__OP_CODE__OP_EXTENT_PUNCH);
}
