/* ops_fixture.h - what the operation layer's unit tests (test-ops.c,
 * test-ops_handle.c) share: a hand-built server (config, store, shm,
 * namespace, committer) in a temporary directory with a root session on
 * it, and ops built, run through ops_exec and checked (header only;
 * include after cmocka.h). */
#ifndef MC_TEST_OPS_FIXTURE_H
#define MC_TEST_OPS_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commit.h"
#include "config.h"
#include "mcd.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"
#include "wire.h"
#include "fixture.h"

static const struct cred root_cred = { .uid = 0, .gid = 0 };

struct fx {
	char dir[256];
	struct mcd_config cfg;
	struct mcd m;
	struct session *s;
};

/* A fixture whose temporary directory is named after name. */
static inline int ops_fixture_setup(void **state, const char *name)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), name);
	if (!mkdtemp(f->dir))
		return -1;
	config_defaults(&f->cfg);
	f->m.cfg = &f->cfg;
	struct store_opts so = { .root_mode = 0755 };
	if (store_open(f->dir, &so, &f->m.store) < 0)
		return -1;
	if (shm_create(8u << 20, &f->m.shm) < 0)
		return -1;
	if (ns_new(f->m.shm, f->m.store, NULL, &f->m.ns) < 0)
		return -1;
	if (commit_start(f->m.ns, f->m.store, 5, &f->m.commit) < 0)
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	f->m.start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	f->s = session_new(&f->m, &root_cred);
	if (!f->s)
		return -1;
	*state = f;
	return 0;
}

static inline int ops_fixture_teardown(void **state)
{
	struct fx *f = *state;
	session_free(f->s);
	commit_stop(f->m.commit);
	ns_free(f->m.ns);
	shm_destroy(f->m.shm);
	store_close(f->m.store);
	config_free(&f->cfg);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

static inline Mcache__Op mkop(Mcache__OpCode code, const char *path, const char *path2)
{
	Mcache__Op op;
	mcache__op__init(&op);
	op.code = code;
	if (path) {
		op.path.data = (uint8_t *)path;
		op.path.len = strlen(path);
	}
	if (path2) {
		op.path2.data = (uint8_t *)path2;
		op.path2.len = strlen(path2);
	}
	return op;
}

/* Run op and return res.err; out is released unless keep. */
static inline int run_in(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	ops_exec(s, op, out);
	/* A bare result (OPF_BARE) is packed as its err alone: nothing else set. */
	if (out->bare)
		assert_int_equal(mcache__result__get_packed_size(&out->res),
		                 wire_err_result_size(out->res.err));
	return out->res.err;
}

static inline int run(struct fx *f, const Mcache__Op *op)
{
	struct op_out out;
	int err = run_in(f->s, op, &out);
	op_out_release(&out);
	return err;
}

static inline int path_op(struct fx *f, Mcache__OpCode code, const char *path, uint32_t mode)
{
	Mcache__Op op = mkop(code, path, NULL);
	op.mode = mode;
	return run(f, &op);
}

static inline Mcache__Attr stat_ok(struct fx *f, Mcache__OpCode code, const char *path)
{
	Mcache__Op op = mkop(code, path, NULL);
	struct op_out out;
	int err = run_in(f->s, &op, &out);
	if (err != 0)
		fail_msg("stat(%s): err %d", path, err);
	assert_non_null(out.res.attr);
	Mcache__Attr a = *out.res.attr;
	op_out_release(&out);
	return a;
}

static inline uint64_t open_ok(struct fx *f, const char *path, uint32_t flags,
                               Mcache__Attr *attr)
{
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_OPEN, path, NULL);
	op.flags = flags;
	op.mode = 0644;
	struct op_out out;
	int err = run_in(f->s, &op, &out);
	if (err != 0)
		fail_msg("open(%s): err %d", path, err);
	uint64_t h = out.res.handle;
	assert_true(h > 0);
	assert_non_null(out.res.attr);
	if (attr)
		*attr = *out.res.attr;
	op_out_release(&out);
	return h;
}

static inline int handle_op(struct fx *f, Mcache__OpCode code, uint64_t h)
{
	Mcache__Op op = mkop(code, NULL, NULL);
	op.handle = h;
	return run(f, &op);
}

#endif
