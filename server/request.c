/* request.c - runs one request's ops within the server's limits (see
 * request.h): a wire-level op count before unpacking, and a reply whose
 * size is accounted op by op so that it never grows past its limit.
 *
 * A request runs as a job, in slices of bounded time, so that one large
 * request delays the other connections of its worker by one slice at most.
 *
 * Reply size accounting (request_job_step):
 *  1. `used` is an upper bound of the framed reply's size so far: frame
 *     header, id field, and each result's tag, length and bytes.
 *  2. Before op i runs, room is kept for a small result (RESULT_SMALL) plus
 *     one EMSGSIZE result for every op after it; if that does not fit, op i
 *     and every later op are answered EMSGSIZE without running.
 *  3. After op i runs, its real size is added; a result that does not fit
 *     (a readdir or readlink, side-effect free) is replaced by EMSGSIZE and
 *     no later op runs.
 *  4. Once every op ran, `used` is exactly the framed reply's size: each
 *     result's packed size is kept (rsz) and request_job_finish writes the
 *     Response itself, packing each result once into its place.
 *
 * Locking (request_job_step):
 *  5. Consecutive ops that may (ops_holds: creates, mkdirs, unlinks,
 *     rmdirs) run under one taking of the namespace lock, REQUEST_HOLD_OPS
 *     at most, letting a waiting committer in between ops; the lock is
 *     never held across another op, the end of a slice or the end of the
 *     step. Each op is still applied and journaled whole before the next.
 *  6. The lock covers the ops themselves and little else: the run's ops
 *     are set up and their paths checked before it is taken (ops_prepare),
 *     and their accounting (reply sizes, counters, latencies, the slow
 *     log) and the committer's kick wait until it is let go. Under it each
 *     op costs a clock reading, which times it as before: an op's latency
 *     is from the end of the op before (or of the step's start) to its
 *     own. A run is only made of ops whose results are sure to fit
 *     (request_job_prepare), so accounting them afterwards answers what
 *     accounting them one by one would.
 *
 * Memory: a job, its unpacked request and its results' fixed parts come
 * from one arena (usually one block, sized from the frame), freed with the
 * job: decoding, running and encoding a batch allocate nothing per op
 * (only what a handler's result carries, a listing or link target, has
 * its own allocation).
 */
#include "request.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "frame.h"
#include "ops.h"
#include "slowlog.h"
#include "wire.h"

/* Bound of the packed size of a result that carries no data: an attr, a
 * handle, a cookie and an errno (mutations produce nothing larger). */
#define RESULT_SMALL 256u

int request_scan(const uint8_t *p, size_t len, uint64_t *id, size_t *nops)
{
	const uint8_t *end = p + len;
	uint64_t key, v, rid = 0;
	size_t n = 0;

	while (p < end) {
		if (wire_get_varint(&p, end, &key) < 0)
			return -EPROTO;
		switch (key & 7) {
		case 0:                                 /* varint */
			if (wire_get_varint(&p, end, &v) < 0)
				return -EPROTO;
			if (key >> 3 == 1)
				rid = v;
			break;
		case 1:                                 /* 64-bit */
			if ((size_t)(end - p) < 8)
				return -EPROTO;
			p += 8;
			break;
		case 2:                                 /* length-delimited */
			if (wire_get_varint(&p, end, &v) < 0 || v > (uint64_t)(end - p))
				return -EPROTO;
			p += v;
			if (key >> 3 == 3)
				n++;
			break;
		case 5:                                 /* 32-bit */
			if ((size_t)(end - p) < 4)
				return -EPROTO;
			p += 4;
			break;
		default:
			return -EPROTO;
		}
	}
	*id = rid;
	*nops = n;
	return 0;
}

/* A result's packed size: by hand for scalars (*wired), else protobuf-c's. */
static size_t result_size(const Mcache__Result *r, bool *wired)
{
	size_t n = wire_result_size(r);

	*wired = n != SIZE_MAX;
	return *wired ? n : mcache__result__get_packed_size(r);
}

/* The packed size of a bare result of errno 0 and of one of 1..127 (one
 * byte of varint, as every errno the ops answer): err_size_init. */
static size_t bare_size[2];

/* An op's result's packed size (as result_size). */
static size_t out_size(const struct op_out *o, bool *wired)
{
	if (o->bare) {
		*wired = true;
		if (o->res.err >= 0 && o->res.err < 128)
			return bare_size[o->res.err != 0];
		return wire_err_result_size(o->res.err);
	}
	return result_size(&o->res, wired);
}

/* Bytes a result of packed size sz adds to a Response: tag, length, body. */
static size_t result_cost(size_t sz)
{
	return 1 + wire_varint_len(sz) + sz;
}

static void result_set_err(struct op_out *o, int err)
{
	op_out_release(o);
	mcache__result__init(&o->res);
	o->res.err = err;
}

/* ---- the arena -------------------------------------------------------- */

struct arena_blk {
	struct arena_blk *next;
	size_t cap, used;
	alignas(max_align_t) unsigned char data[];
};

/* Blocks, newest first; all freed at once (arena_free). */
struct arena {
	struct arena_blk *head;
	bool oom;                    /* an allocation failed */
};

#define ARENA_ALIGN (alignof(max_align_t))
#define ARENA_MIN   4096u
#define ARENA_STEP  (1u << 20)

static void *arena_alloc(void *ad, size_t size)
{
	struct arena *a = ad;
	struct arena_blk *b = a->head;

	size = (size + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	if (!b || b->cap - b->used < size) {
		/* Doubling up to ARENA_STEP, then steps of that size. */
		size_t cap = !b ? ARENA_MIN : b->cap < ARENA_STEP ? 2 * b->cap : ARENA_STEP;

		if (cap < size)
			cap = size;
		b = malloc(sizeof(*b) + cap);
		if (!b) {
			a->oom = true;
			return NULL;
		}
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += size;
	return p;
}

/* protobuf-c frees piece by piece; the arena frees everything at once. */
static void arena_nofree(void *ad, void *p)
{
	(void)ad;
	(void)p;
}

/* An arena whose first block holds cap bytes. 0 or -ENOMEM. */
static int arena_init(struct arena *a, size_t cap)
{
	a->head = NULL;
	a->oom = false;
	if (!arena_alloc(a, cap))
		return -ENOMEM;
	a->head->used = 0;
	return 0;
}

static void arena_free(struct arena *a)
{
	for (struct arena_blk *b = a->head, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	a->head = NULL;
}

/* ---- jobs ------------------------------------------------------------- */

struct request_job {
	struct arena arena;          /* everything below lives in it */
	Mcache__Request *req;
	struct op_out *outs;
	Mcache__Result **resp;
	size_t *rsz;                 /* packed size of each result (invariant 4) */
	bool *wired;                 /* packed by wire.c, not protobuf-c */
	size_t n, next;              /* ops; the next to run */
	size_t prepared;             /* ops before it are ops_prepare'd or ran */
	size_t used, sz_err, max_reply;
	bool err_wired;
	uint64_t wait_seq;
	bool full;
	struct slowlog *slow;        /* request_job_trace: NULL, or where slow ops go */
	pid_t pid;
	uid_t uid;
};

/* What one op of a request takes in the arena beyond its wire bytes. */
#define REQUEST_OP_MEM (sizeof(Mcache__Op) + sizeof(Mcache__Op *) + \
                        sizeof(struct op_out) + sizeof(Mcache__Result *) + \
                        sizeof(size_t) + 4 * ARENA_ALIGN)

/* The EMSGSIZE result's size, the same for every request: computed once. */
static size_t err_size;
static bool err_wired;
/* What a bare result (an errno alone: ops_prepare's ops) adds to a Response
 * at most, whatever the errno. */
static size_t run_cost;
static pthread_once_t err_once = PTHREAD_ONCE_INIT;

static void err_size_init(void)
{
	Mcache__Result errres = MCACHE__RESULT__INIT;

	errres.err = EMSGSIZE;
	err_size = result_size(&errres, &err_wired);
	bare_size[0] = wire_err_result_size(0);
	bare_size[1] = wire_err_result_size(1);
	size_t pos = wire_err_result_size(INT32_MAX), neg = wire_err_result_size(-1);
	run_cost = result_cost(pos > neg ? pos : neg);
}

int request_job_new(const uint8_t *p, size_t len, size_t max_reply, struct request_job **out)
{
	ProtobufCAllocator alloc = { arena_alloc, arena_nofree, NULL };
	struct arena a;
	struct request_job *j;
	uint64_t id;
	size_t nops;

	if (request_scan(p, len, &id, &nops) < 0)
		return -EPROTO;
	/* One block for the usual request: its bytes (paths are copied), and
	 * per op the unpacked Op and the result. */
	if (arena_init(&a, sizeof(*j) + len + nops * REQUEST_OP_MEM + 1024) < 0)
		return -ENOMEM;
	j = arena_alloc(&a, sizeof(*j));
	memset(j, 0, sizeof(*j));
	j->arena = a;
	alloc.allocator_data = &j->arena;
	j->req = wire_request_unpack(&alloc, p, len, nops);
	if (!j->req && !j->arena.oom)
		j->req = mcache__request__unpack(&alloc, len, p);   /* decides the rest */
	if (!j->req) {
		int err = j->arena.oom ? -ENOMEM : -EPROTO;

		a = j->arena;   /* j lives in it */
		arena_free(&a);
		return err;
	}
	j->n = j->req->n_ops;
	if (j->n > 0) {
		j->outs = arena_alloc(&j->arena, j->n * sizeof(*j->outs));
		j->resp = arena_alloc(&j->arena, j->n * sizeof(*j->resp));
		j->rsz = arena_alloc(&j->arena, j->n * sizeof(*j->rsz));
		j->wired = arena_alloc(&j->arena, j->n * sizeof(*j->wired));
		if (!j->outs || !j->resp || !j->rsz || !j->wired) {
			a = j->arena;   /* j lives in it */
			arena_free(&a);
			return -ENOMEM;
		}
		/* outs[i] is set up when op i comes up (request_job_step). */
	}
	pthread_once(&err_once, err_size_init);
	j->sz_err = err_size;
	j->err_wired = err_wired;
	j->used = MC_FRAME_HDR + 1 + wire_varint_len(j->req->id);
	j->max_reply = max_reply;
	*out = j;
	return 0;
}

const Mcache__Request *request_job_request(const struct request_job *j)
{
	return j->req;
}

void request_job_trace(struct request_job *j, struct slowlog *sl, pid_t pid, uid_t uid)
{
	j->slow = sl;
	j->pid = pid;
	j->uid = uid;
}

/* Off the hot path: an op that reached the slow log's threshold. */
static void request_job_slow(struct request_job *j, const Mcache__Op *op, uint64_t us)
{
	struct slowlog_op so = {
		.code = (unsigned)op->code,
		.path = (const char *)op->path.data,
		.path_len = op->path.len,
		.duration_us = us,
		.pid = j->pid,
		.uid = j->uid,
	};
	slowlog_add(j->slow, &so);
}

/* Ops run under one taking of the namespace lock at most (invariant 5). */
#define REQUEST_HOLD_OPS 64u

/* Op i's result is in: account its size (invariants 3 and 4), its counters,
 * latency (us) and slow-log entry. */
static void request_job_account(struct request_job *j, struct rpc_stats *st, size_t i,
                                uint64_t us)
{
	struct op_out *o = &j->outs[i];
	unsigned code = (unsigned)j->req->ops[i]->code;
	size_t tail = (j->n - i - 1) * result_cost(j->sz_err);
	bool wired;
	size_t sz = out_size(o, &wired);

	if (j->used + result_cost(sz) + tail > j->max_reply) {
		/* Only a read's data makes a result this large. */
		atomic_fetch_add_explicit(&st->limits[STATS_LIMIT_REPLY_FULL], 1,
		                          memory_order_relaxed);
		j->full = true;
		result_set_err(o, EMSGSIZE);
		sz = j->sz_err;
		wired = j->err_wired;
	}
	j->rsz[i] = sz;
	j->wired[i] = wired;
	j->used += result_cost(sz);
	if (code >= STATS_OPS)
		code = 0;
	stat_add_one_writer(&st->ops[code], 1); /* this worker's own */
	if (o->res.err)
		stat_add_one_writer(&st->errors[code], 1);
	hist_add(&st->op_us[code], us);
	if (slowlog_wants(j->slow, us))
		request_job_slow(j, j->req->ops[i], us);
	if (o->wait_seq > j->wait_seq)
		j->wait_seq = o->wait_seq;
}

/* How many ops from i (0: none, or op i is the request's last) run as one
 * run under the lock (invariant 6), each prepared (ops_prepare: set up and checked, without the lock). The
 * run ends where an op may not run in one, at REQUEST_HOLD_OPS, or where
 * room for its result is not sure: op i passed invariant 2's test, and
 * each op k after it is let in only while that test passes with every
 * result before it as large as a bare result can be (run_cost), so the
 * test made op by op would have passed as well, and no result of the run
 * can overflow (invariant 3): the run answers exactly as op by op. */
static size_t request_job_prepare(struct request_job *j, struct session *s, size_t i)
{
	size_t cost_err = result_cost(j->sz_err), m = 0;

	if (i + 1 >= j->n)
		return 0;           /* a request's last op: no run to make */
	while (i + m < j->n && m < REQUEST_HOLD_OPS) {
		size_t k = i + m;
		size_t worst = j->used + m * run_cost + result_cost(RESULT_SMALL) +
		               (j->n - k - 1) * cost_err;

		if (worst > j->max_reply)
			break;
		/* Prepared by a run that the slice cut short, or now. */
		if (k >= j->prepared) {
			if (!ops_prepare(s, j->req->ops[k], &j->outs[k]))
				break;
			j->prepared = k + 1;
		}
		m++;
	}
	return m;
}

/* Run the m prepared ops from j->next under one hold (invariant 5): under
 * the lock only the ops themselves, a yield to a waiting committer between
 * two, the next op's prefetch and a clock reading per op; their accounting
 * after the lock is let go. The run stops early at the end of the slice
 * (the rest runs in the next). The time the last op ended. */
static uint64_t request_job_run(struct request_job *j, struct session *s, struct rpc_stats *st,
                                size_t m, uint64_t start, uint64_t t0, uint64_t slice_us)
{
	uint64_t t[REQUEST_HOLD_OPS];
	size_t i = j->next, k;

	ops_hold_begin(s);
	for (k = 0; k < m; k++) {
		if (k > 0) {
			if (t[k - 1] - start >= slice_us)
				break;
			ops_hold_yield(s);
		}
		if (k + 1 < m)
			ops_hold_prefetch(s, j->req->ops[i + k + 1]);
		ops_run(s, j->req->ops[i + k], &j->outs[i + k]);
		t[k] = mono_us();
	}
	ops_hold_end(s);
	for (size_t r = 0; r < k; r++) {
		j->resp[i + r] = &j->outs[i + r].res;
		ops_ran(s, j->req->ops[i + r], &j->outs[i + r]);
		request_job_account(j, st, i + r, t[r] - (r ? t[r - 1] : t0));
	}
	j->next = i + k;
	return t[k - 1];
}

bool request_job_step(struct request_job *j, struct session *s, struct rpc_stats *st,
                      uint64_t slice_us)
{
	uint64_t start = mono_us(), t0 = start;
	size_t cost_err = result_cost(j->sz_err);

	while (j->next < j->n) {
		size_t i = j->next;
		size_t tail = (j->n - i - 1) * cost_err;
		struct op_out *o = &j->outs[i];

		j->resp[i] = &o->res;
		if (j->full || j->used + result_cost(RESULT_SMALL) + tail > j->max_reply) {
			if (!j->full)
				atomic_fetch_add_explicit(&st->limits[STATS_LIMIT_REPLY_FULL], 1,
				                          memory_order_relaxed);
			j->full = true;
			memset(o, 0, sizeof(*o));
			result_set_err(o, EMSGSIZE);
			j->rsz[i] = j->sz_err;
			j->wired[i] = j->err_wired;
			j->used += cost_err;
			j->next++;
			continue;
		}
		if (t0 - start >= slice_us)
			return false;       /* op i runs in the next slice */
		size_t m = request_job_prepare(j, s, i);
		if (m) {
			t0 = request_job_run(j, s, st, m, start, t0, slice_us);
			continue;
		}
		ops_exec(s, j->req->ops[i], o);
		uint64_t t1 = mono_us();
		request_job_account(j, st, i, t1 - t0);
		t0 = t1;
		j->next++;
	}
	return true;
}

/* Response field tags: id (1, varint), results (3, length-delimited). */
#define TAG_RESPONSE_ID      ((1u << 3) | 0u)
#define TAG_RESPONSE_RESULTS ((3u << 3) | 2u)

int request_job_finish(struct request_job *j, struct request_reply *out)
{
	struct request_reply r = { .wait_seq = j->wait_seq, .full = j->full, .len = j->used };
	uint8_t *p;

	assert(j->next == j->n);
	/* Accounting keeps the reply under max_reply unless the EMSGSIZE
	 * results alone exceed it (max_ops tiny results): send it anyway. */
	if (r.len - MC_FRAME_HDR > UINT32_MAX)
		return -EMSGSIZE;
	r.buf = malloc(r.len);
	if (!r.buf)
		return -ENOMEM;
	frame_put_len(r.buf, (uint32_t)(r.len - MC_FRAME_HDR));
	p = r.buf + MC_FRAME_HDR;
	*p++ = TAG_RESPONSE_ID;
	p = wire_put_varint(p, j->req->id);
	for (size_t i = 0; i < j->n; i++) {
		*p++ = TAG_RESPONSE_RESULTS;
		p = wire_put_varint(p, j->rsz[i]);
		if (j->wired[i] && j->outs[i].bare) {
			wire_err_result_pack(j->resp[i]->err, p);
		} else if (j->wired[i]) {
			wire_result_pack(j->resp[i], p, j->rsz[i]);
		} else {
			size_t n = mcache__result__pack(j->resp[i], p);
			assert(n == j->rsz[i]);
			(void)n;
		}
		p += j->rsz[i];
	}
	assert((size_t)(p - r.buf) == r.len);
	*out = r;
	return 0;
}

uint64_t request_job_id(const struct request_job *j)
{
	return j->req->id;
}

void request_job_free(struct request_job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->next; i++)   /* the ops that came up */
		if (!j->outs[i].bare)           /* a bare result owns nothing */
			op_out_release(&j->outs[i]);
	struct arena a = j->arena;  /* j lives in it */
	arena_free(&a);
}

int request_pack_all_err(uint64_t id, size_t n, int err, uint8_t **out, size_t *len)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__Result *res = NULL, **resp = NULL;
	int rc = -ENOMEM;

	if (n > 0) {
		res = calloc(n, sizeof(*res));
		resp = calloc(n, sizeof(*resp));
		if (!res || !resp)
			goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		mcache__result__init(&res[i]);
		res[i].err = err;
		resp[i] = &res[i];
	}
	rsp.id = id;
	rsp.n_results = n;
	rsp.results = resp;
	rc = frame_pack_response(&rsp, UINT32_MAX, out, len);
fail:
	free(res);
	free(resp);
	return rc;
}
