/* test-request.c - unit tests of a request's run (server/request.c) over
 * the real ops and namespace: a batch whose creates, mkdirs, unlinks and
 * rmdirs run under one taking of the namespace lock, their arguments
 * checked before it, answers byte for byte what the same request answers
 * op by op (a server under --sync runs no op in a run), with ops that fail
 * their checks midway, ops naming other credentials, ops that break the
 * run, slices cut short and replies at their size limit; and every op of
 * a run is counted in the per-op statistics, the latency histograms and
 * the slow log. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "commit.h"
#include "config.h"
#include "frame.h"
#include "mcd.h"
#include "ns.h"
#include "ops.h"
#include "request.h"
#include "shm.h"
#include "slowlog.h"
#include "stats.h"
#include "store.h"
#include "fixture.h"

static const struct cred root_cred = { .uid = 0, .gid = 0 };

/* One server: config, store, segment, namespace, committer, a session. */
struct srv {
	char dir[256];
	struct mcd_config cfg;
	struct mcd m;
	struct session *s;
};

static void srv_up(struct srv *v, bool sync)
{
	memset(v, 0, sizeof(*v));
	fixture_template(v->dir, sizeof(v->dir), "test-request");
	assert_non_null(mkdtemp(v->dir));
	config_defaults(&v->cfg);
	v->cfg.sync = sync;
	v->m.cfg = &v->cfg;
	struct store_opts so = { .root_mode = 0755 };
	assert_int_equal(store_open(v->dir, &so, &v->m.store), 0);
	assert_int_equal(shm_create(8u << 20, &v->m.shm), 0);
	assert_int_equal(ns_new(v->m.shm, v->m.store, NULL, &v->m.ns), 0);
	assert_int_equal(commit_start(v->m.ns, v->m.store, 5, &v->m.commit), 0);
	v->s = session_new(&v->m, &root_cred);
	assert_non_null(v->s);
}

static void srv_down(struct srv *v)
{
	session_free(v->s);
	commit_stop(v->m.commit);
	ns_free(v->m.ns);
	shm_destroy(v->m.shm);
	store_close(v->m.store);
	config_free(&v->cfg);
	fixture_rmtree(v->dir);
}

/* A request being built: ops and the bytes their paths point to. */
#define MAX_OPS 600
struct req {
	Mcache__Op op[MAX_OPS];
	Mcache__Op *opp[MAX_OPS];
	char *paths[MAX_OPS];
	size_t n;
};

static Mcache__Cred user_as = MCACHE__CRED__INIT;

/* Queue op code on path (len bytes of it: a NUL may be inside). */
static Mcache__Op *add_len(struct req *r, Mcache__OpCode code, const char *path, size_t len)
{
	assert_true(r->n < MAX_OPS);
	Mcache__Op *op = &r->op[r->n];
	mcache__op__init(op);
	op->code = code;
	op->mode = 0644;
	r->paths[r->n] = malloc(len + 1);
	assert_non_null(r->paths[r->n]);
	memcpy(r->paths[r->n], path, len);
	op->path.data = (uint8_t *)r->paths[r->n];
	op->path.len = len;
	r->opp[r->n] = op;
	r->n++;
	return op;
}

static Mcache__Op *add(struct req *r, Mcache__OpCode code, const char *path)
{
	return add_len(r, code, path, strlen(path));
}

static void req_free(struct req *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->paths[i]);
	r->n = 0;
}

/* The packed Request (the frame's payload). */
static uint8_t *req_pack(struct req *r, size_t *len)
{
	Mcache__Request rq = MCACHE__REQUEST__INIT;
	rq.id = 77;
	rq.n_ops = r->n;
	rq.ops = r->opp;
	*len = mcache__request__get_packed_size(&rq);
	uint8_t *p = malloc(*len);
	assert_non_null(p);
	mcache__request__pack(&rq, p);
	return p;
}

/* Run the request on v (slices of slice_us) and return its framed reply. */
static struct request_reply run_req(struct srv *v, struct req *r, size_t max_reply,
                                    uint64_t slice_us, struct rpc_stats *st,
                                    struct slowlog *sl, unsigned *steps)
{
	size_t len;
	uint8_t *p = req_pack(r, &len);
	struct request_job *j;
	assert_int_equal(request_job_new(p, len, max_reply, &j), 0);
	free(p);
	if (sl)
		request_job_trace(j, sl, 1234, 0);
	unsigned k = 0;
	while (!request_job_step(j, v->s, st, slice_us))
		k++;
	if (steps)
		*steps = k + 1;
	struct request_reply rep;
	assert_int_equal(request_job_finish(j, &rep), 0);
	request_job_free(j);
	return rep;
}

/* The same request on a server that runs it in runs and on one under
 * --sync (op by op): the same reply bytes. The number of results. */
static size_t same_both_ways(struct req *r, size_t max_reply, uint64_t slice_us,
                             unsigned *steps)
{
	struct srv a, b;
	struct rpc_stats sa, sb;
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	srv_up(&a, false);
	srv_up(&b, true);
	struct request_reply ra = run_req(&a, r, max_reply, slice_us, &sa, NULL, steps);
	struct request_reply rb = run_req(&b, r, max_reply, 1000000, &sb, NULL, NULL);
	assert_int_equal(ra.len, rb.len);
	assert_memory_equal(ra.buf, rb.buf, ra.len);
	assert_int_equal(ra.full, rb.full);
	Mcache__Response *rsp = mcache__response__unpack(NULL, ra.len - MC_FRAME_HDR,
	                                                 ra.buf + MC_FRAME_HDR);
	assert_non_null(rsp);
	size_t n = rsp->n_results;
	mcache__response__free_unpacked(rsp, NULL);
	free(ra.buf);
	free(rb.buf);
	srv_down(&a);
	srv_down(&b);
	return n;
}

/* The errno of each result of a framed reply, into errs. */
static size_t reply_errs(const struct request_reply *rep, int *errs, size_t max)
{
	Mcache__Response *rsp = mcache__response__unpack(NULL, rep->len - MC_FRAME_HDR,
	                                                 rep->buf + MC_FRAME_HDR);
	assert_non_null(rsp);
	size_t n = rsp->n_results;
	assert_true(n <= max);
	for (size_t i = 0; i < n; i++)
		errs[i] = rsp->results[i]->err;
	mcache__response__free_unpacked(rsp, NULL);
	return n;
}

/* A batch of creates and removals with, midway, ops whose paths fail the
 * checks made before the lock (empty, a NUL inside, too long), creates of
 * names present, an op naming credentials that may not write there and
 * one naming them with an empty path, and ops that end a run (a
 * chmod, a readlink). */
static void build_mixed(struct req *r)
{
	char p[64];
	add(r, MCACHE__OP_CODE__OP_MKDIR, "/d");
	add(r, MCACHE__OP_CODE__OP_MKDIR, "/d/sub");
	for (int i = 0; i < 150; i++) {
		snprintf(p, sizeof(p), "/d/f%03d", i);
		add(r, MCACHE__OP_CODE__OP_CREATE, p);
		switch (i % 10) {
		case 1:
			add_len(r, MCACHE__OP_CODE__OP_CREATE, "", 0);              /* ENOENT */
			break;
		case 2:
			add_len(r, MCACHE__OP_CODE__OP_CREATE, "/d/x\0y", 6);       /* EINVAL */
			break;
		case 3: {
			char *lp = malloc(5000);
			assert_non_null(lp);
			memset(lp, 'a', 5000);
			lp[0] = '/';
			add_len(r, MCACHE__OP_CODE__OP_UNLINK, lp, 5000);           /* ENAMETOOLONG */
			free(lp);
			break;
		}
		case 4:
			add(r, MCACHE__OP_CODE__OP_CREATE, p);                      /* EEXIST */
			break;
		case 5:
			add(r, MCACHE__OP_CODE__OP_CREATE, "/d/as-user")->cred = &user_as; /* EACCES */
			add_len(r, MCACHE__OP_CODE__OP_CREATE, "", 0)->cred = &user_as;  /* ENOENT */
			break;
		case 6:
			add(r, MCACHE__OP_CODE__OP_CHMOD, p);
			add(r, MCACHE__OP_CODE__OP_READLINK, p);                    /* EINVAL */
			break;
		case 7:
			add(r, MCACHE__OP_CODE__OP_UNLINK, "/d/none");              /* ENOENT */
			add(r, MCACHE__OP_CODE__OP_RMDIR, "/d/sub/none");           /* ENOENT */
			break;
		case 8:
			add(r, MCACHE__OP_CODE__OP_UNLINK, p);
			break;
		default:
			break;
		}
	}
	add(r, MCACHE__OP_CODE__OP_RMDIR, "/d");                            /* ENOTEMPTY */
	for (int i = 0; i < 150; i++) {
		snprintf(p, sizeof(p), "/d/f%03d", i);
		add(r, MCACHE__OP_CODE__OP_UNLINK, p);                      /* ENOENT for i % 10 == 8 */
	}
	add(r, MCACHE__OP_CODE__OP_RMDIR, "/d/sub");
	add(r, MCACHE__OP_CODE__OP_RMDIR, "/d");
}

static void test_checks_midway(void **state)
{
	(void)state;
	struct req *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	build_mixed(r);
	assert_int_equal(same_both_ways(r, 4u << 20, 1000000, NULL), r->n);

	/* And what each op got, read back from the batch's reply. */
	struct srv a;
	struct rpc_stats st;
	memset(&st, 0, sizeof(st));
	srv_up(&a, false);
	struct request_reply rep = run_req(&a, r, 4u << 20, 1000000, &st, NULL, NULL);
	int errs[MAX_OPS];
	assert_int_equal(reply_errs(&rep, errs, MAX_OPS), r->n);
	size_t k = 2;
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], 0);
	for (int i = 0; i < 150; i++) {
		assert_int_equal(errs[k++], 0);
		switch (i % 10) {
		case 1: assert_int_equal(errs[k++], ENOENT); break;
		case 2: assert_int_equal(errs[k++], EINVAL); break;
		case 3: assert_int_equal(errs[k++], ENAMETOOLONG); break;
		case 4: assert_int_equal(errs[k++], EEXIST); break;
		case 5:
			assert_int_equal(errs[k++], EACCES);
			assert_int_equal(errs[k++], ENOENT);
			break;
		case 6:
			assert_int_equal(errs[k++], 0);
			assert_int_equal(errs[k++], EINVAL);
			break;
		case 7:
			assert_int_equal(errs[k++], ENOENT);
			assert_int_equal(errs[k++], ENOENT);
			break;
		case 8: assert_int_equal(errs[k++], 0); break;
		default: break;
		}
	}
	assert_int_equal(errs[k++], ENOTEMPTY);
	for (int i = 0; i < 150; i++)
		assert_int_equal(errs[k++], i % 10 == 8 ? ENOENT : 0);
	assert_int_equal(errs[k++], 0);
	assert_int_equal(errs[k++], 0);
	assert_int_equal(k, r->n);
	free(rep.buf);
	srv_down(&a);
	req_free(r);
	free(r);
}

/* Slices of 1 us: every step runs one op at least and stops at the next
 * op, so the runs are cut short and their prepared ops run later. */
static void test_slices_cut_runs(void **state)
{
	(void)state;
	struct req *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	build_mixed(r);
	unsigned steps;
	assert_int_equal(same_both_ways(r, 4u << 20, 1, &steps), r->n);
	assert_true(steps > 1);
	req_free(r);
	free(r);
}

/* A reply limit that the results reach midway: the same op, run or not,
 * is the first answered EMSGSIZE both ways, for every limit around it. */
static void test_reply_limit(void **state)
{
	(void)state;
	struct req *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	char p[64];
	add(r, MCACHE__OP_CODE__OP_MKDIR, "/e");
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "/e/g%03d", i);
		add(r, MCACHE__OP_CODE__OP_CREATE, p);
		if (i % 7 == 0)
			add(r, MCACHE__OP_CODE__OP_CREATE, p); /* EEXIST: a larger result */
	}
	/* The reply of all ops is about 2 bytes a result; the limit is
	 * checked with room for a 256-byte result, so every limit from the
	 * frame's bare minimum up to past the whole reply shows a cut. */
	for (size_t max = 16; max < 1400; max += 13)
		assert_int_equal(same_both_ways(r, max, 1000000, NULL), r->n);
	req_free(r);
	free(r);
}

/* Every op of a run counts in its op's counters, errors, latency
 * histogram and (at threshold 0) the slow log. */
static void test_stats_count_each_op(void **state)
{
	(void)state;
	struct req *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	char p[64];
	add(r, MCACHE__OP_CODE__OP_MKDIR, "/s");
	for (int i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "/s/h%03d", i);
		add(r, MCACHE__OP_CODE__OP_CREATE, p);
	}
	for (int i = 0; i < 200; i += 2) {
		snprintf(p, sizeof(p), "/s/h%03d", i);
		add(r, MCACHE__OP_CODE__OP_UNLINK, p);
		add(r, MCACHE__OP_CODE__OP_UNLINK, p); /* ENOENT */
	}
	struct srv a;
	struct rpc_stats *st = calloc(1, sizeof(*st));
	assert_non_null(st);
	struct slowlog *sl;
	assert_int_equal(slowlog_new(0, 1000, &sl), 0);
	srv_up(&a, false);
	struct request_reply rep = run_req(&a, r, 4u << 20, 1000000, st, sl, NULL);
	free(rep.buf);
	unsigned cr = MCACHE__OP_CODE__OP_CREATE, ul = MCACHE__OP_CODE__OP_UNLINK,
	         mk = MCACHE__OP_CODE__OP_MKDIR;
	assert_int_equal(st->ops[mk], 1);
	assert_int_equal(st->ops[cr], 200);
	assert_int_equal(st->errors[cr], 0);
	assert_int_equal(st->ops[ul], 200);
	assert_int_equal(st->errors[ul], 100);
	assert_int_equal(st->op_us[cr].count, 200);
	assert_int_equal(st->op_us[ul].count, 200);
	assert_int_equal(st->op_us[mk].count, 1);
	assert_int_equal(slowlog_total(sl), r->n);
	srv_down(&a);
	slowlog_free(sl);
	free(st);
	req_free(r);
	free(r);
}

int main(void)
{
	user_as.uid = 1000;
	user_as.gid = 1000;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checks_midway),
		cmocka_unit_test(test_slices_cut_runs),
		cmocka_unit_test(test_reply_limit),
		cmocka_unit_test(test_stats_count_each_op),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
