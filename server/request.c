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
 */
#include "request.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "clock.h"
#include "frame.h"
#include "ops.h"
#include "slowlog.h"

/* Bound of the packed size of a result that carries no data: an attr, a
 * handle, a cookie and an errno (mutations produce nothing larger). */
#define RESULT_SMALL 256u

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Read a varint at *p (below end): 0 or -EPROTO. */
static int scan_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p == end)
			return -EPROTO;
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EPROTO;
}

int request_scan(const uint8_t *p, size_t len, uint64_t *id, size_t *nops)
{
	const uint8_t *end = p + len;
	uint64_t key, v, rid = 0;
	size_t n = 0;

	while (p < end) {
		if (scan_varint(&p, end, &key) < 0)
			return -EPROTO;
		switch (key & 7) {
		case 0:                                 /* varint */
			if (scan_varint(&p, end, &v) < 0)
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
			if (scan_varint(&p, end, &v) < 0 || v > (uint64_t)(end - p))
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

/* Bytes a result of packed size sz adds to a Response: tag, length, body. */
static size_t result_cost(size_t sz)
{
	return 1 + varint_len(sz) + sz;
}

static void result_set_err(struct op_out *o, int err)
{
	op_out_release(o);
	mcache__result__init(&o->res);
	o->res.err = err;
}

struct request_job {
	Mcache__Request *req;        /* owned */
	struct op_out *outs;
	Mcache__Result **resp;
	size_t n, next;              /* ops; the next to run */
	size_t used, cost_err, max_reply;
	uint64_t wait_seq;
	bool full;
	struct slowlog *slow;        /* request_job_trace: NULL, or where slow ops go */
	pid_t pid;
	uid_t uid;
};

int request_job_new(Mcache__Request *req, size_t max_reply, struct request_job **out)
{
	Mcache__Result errres = MCACHE__RESULT__INIT;
	struct request_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->n = req->n_ops;
	if (j->n > 0) {
		j->outs = calloc(j->n, sizeof(*j->outs));
		j->resp = calloc(j->n, sizeof(*j->resp));
		if (!j->outs || !j->resp) {
			free(j->outs);
			free(j->resp);
			free(j);
			return -ENOMEM;
		}
	}
	errres.err = EMSGSIZE;
	j->cost_err = result_cost(mcache__result__get_packed_size(&errres));
	j->used = MC_FRAME_HDR + 1 + varint_len(req->id);
	j->max_reply = max_reply;
	j->req = req;
	*out = j;
	return 0;
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

bool request_job_step(struct request_job *j, struct session *s, struct rpc_stats *st,
                      uint64_t slice_us)
{
	uint64_t start = mono_us(), t0 = start;

	for (; j->next < j->n; j->next++) {
		size_t i = j->next, tail = (j->n - i - 1) * j->cost_err;
		struct op_out *o = &j->outs[i];
		unsigned code = (unsigned)j->req->ops[i]->code;

		j->resp[i] = &o->res;
		if (j->full || j->used + result_cost(RESULT_SMALL) + tail > j->max_reply) {
			if (!j->full)
				atomic_fetch_add_explicit(&st->limits[STATS_LIMIT_REPLY_FULL], 1,
				                          memory_order_relaxed);
			j->full = true;
			result_set_err(o, EMSGSIZE);
			j->used += j->cost_err;
			continue;
		}
		if (t0 - start >= slice_us)
			return false;       /* op i runs in the next slice */
		ops_exec(s, j->req->ops[i], o);
		if (code >= STATS_OPS)
			code = 0;
		size_t cost = result_cost(mcache__result__get_packed_size(&o->res));
		if (j->used + cost + tail > j->max_reply) {
			/* Only a read's data makes a result this large. */
			atomic_fetch_add_explicit(&st->limits[STATS_LIMIT_REPLY_FULL], 1,
			                          memory_order_relaxed);
			j->full = true;
			result_set_err(o, EMSGSIZE);
			cost = j->cost_err;
		}
		j->used += cost;
		atomic_fetch_add_explicit(&st->ops[code], 1, memory_order_relaxed);
		if (o->res.err)
			atomic_fetch_add_explicit(&st->errors[code], 1, memory_order_relaxed);
		uint64_t t1 = mono_us();
		hist_add(&st->op_us[code], t1 - t0);
		if (slowlog_wants(j->slow, t1 - t0))
			request_job_slow(j, j->req->ops[i], t1 - t0);
		t0 = t1;
		if (o->wait_seq > j->wait_seq)
			j->wait_seq = o->wait_seq;
	}
	return true;
}

int request_job_finish(struct request_job *j, struct request_reply *out)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	struct request_reply r = { .wait_seq = j->wait_seq, .full = j->full };
	int err;

	assert(j->next == j->n);
	rsp.id = j->req->id;
	rsp.n_results = j->n;
	rsp.results = j->resp;
	/* Accounting keeps the reply under max_reply unless the EMSGSIZE
	 * results alone exceed it (max_ops tiny results): send it anyway. */
	err = frame_pack_response(&rsp, UINT32_MAX, &r.buf, &r.len);
	if (err)
		return err;
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
	for (size_t i = 0; j->outs && i < j->n; i++)
		op_out_release(&j->outs[i]);
	free(j->outs);
	free(j->resp);
	mcache__request__free_unpacked(j->req, NULL);
	free(j);
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
