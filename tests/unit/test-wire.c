/* test-wire.c - the hand decoder and encoder of the hot messages give what
 * protobuf-c gives: random Requests of ops decode to the same message and
 * pack to the same bytes, scalar Results pack to the same bytes, Responses
 * of them decode to the same message, and whatever the fast path does not
 * know is handed back to protobuf-c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A value that is often zero, sometimes small, sometimes all 64 bits. */
static uint64_t rval(void)
{
	switch (rnd() % 4) {
	case 0: return 0;
	case 1: return rnd() % 200;
	case 2: return rnd();
	default: return (uint64_t)-(int64_t)(rnd() % 1000);   /* negative as int64 */
	}
}

static void *plain_alloc(void *ad, size_t n)
{
	(void)ad;
	return malloc(n ? n : 1);
}

static void plain_free(void *ad, void *p)
{
	(void)ad;
	free(p);
}

/* Allocations the fast path made, freed at the end of a case. */
static void *track[100000];
static size_t ntrack;

static void *track_alloc(void *ad, size_t n)
{
	(void)ad;
	void *p = malloc(n ? n : 1);
	assert_true(ntrack < sizeof(track) / sizeof(track[0]));
	track[ntrack++] = p;
	return p;
}

static void track_release(void)
{
	while (ntrack)
		free(track[--ntrack]);
}

static ProtobufCAllocator fast_alloc = { track_alloc, plain_free, NULL };

/* Pack req; decode it both ways; both must pack to the same bytes. */
static void check_same(const Mcache__Request *req)
{
	size_t len = mcache__request__get_packed_size(req), nops = req->n_ops;
	uint8_t *buf = malloc(len + 1), *a, *b;

	assert_non_null(buf);
	mcache__request__pack(req, buf);
	Mcache__Request *ref = mcache__request__unpack(NULL, len, buf);
	Mcache__Request *got = wire_request_unpack(&fast_alloc, buf, len, nops);
	assert_non_null(ref);
	assert_non_null(got);
	size_t la = mcache__request__get_packed_size(ref), lb = mcache__request__get_packed_size(got);
	assert_int_equal(la, lb);
	a = malloc(la + 1);
	b = malloc(lb + 1);
	mcache__request__pack(ref, a);
	mcache__request__pack(got, b);
	assert_memory_equal(a, b, la);
	for (size_t i = 0; i < got->n_ops; i++) {
		assert_int_equal(got->ops[i]->code, ref->ops[i]->code);
		assert_int_equal(got->ops[i]->path.len, ref->ops[i]->path.len);
	}
	free(a);
	free(b);
	/* And packed by hand: the very bytes protobuf-c packed. */
	size_t bound = wire_request_bound(req);
	assert_true(bound >= len && bound != SIZE_MAX);
	a = malloc(bound);
	assert_ptr_equal(wire_request_pack(req, a), a + len);
	assert_memory_equal(a, buf, len);
	free(a);
	free(buf);
	mcache__request__free_unpacked(ref, NULL);
	track_release();
}

static void fill_op(Mcache__Op *op, char *p1, char *p2)
{
	const ProtobufCMessageDescriptor *d = &mcache__op__descriptor;
	uint8_t *m = (uint8_t *)op;

	mcache__op__init(op);
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		uint64_t v = rval();
		void *at = m + f->offset;

		switch (f->type) {
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_ENUM:
		case PROTOBUF_C_TYPE_UINT32:
			*(uint32_t *)at = (uint32_t)v;
			break;
		case PROTOBUF_C_TYPE_BOOL:
			*(protobuf_c_boolean *)at = v & 1;
			break;
		case PROTOBUF_C_TYPE_INT64:
		case PROTOBUF_C_TYPE_UINT64:
			*(uint64_t *)at = v;
			break;
		case PROTOBUF_C_TYPE_BYTES: {
			ProtobufCBinaryData *b = at;
			char *s = f->id == 2 ? p1 : p2;
			size_t n = rnd() % 300;
			for (size_t k = 0; k < n; k++)
				s[k] = (char)rnd();          /* any bytes, NULs included */
			b->data = (uint8_t *)s;
			b->len = n;
			break;
		}
		case PROTOBUF_C_TYPE_MESSAGE:
			break;   /* left absent: an op with one is handed back (test_handed_back) */
		default:
			fail_msg("Op field %s has a type this test does not fill", f->name);
		}
	}
}

static void test_random_requests(void **state)
{
	(void)state;
	static char paths[64][2][300];
	Mcache__Op ops[64], *opp[64];

	for (int round = 0; round < 2000; round++) {
		Mcache__Request req = MCACHE__REQUEST__INIT;
		size_t n = rnd() % 65;

		for (size_t i = 0; i < n; i++) {
			fill_op(&ops[i], paths[i][0], paths[i][1]);
			opp[i] = &ops[i];
		}
		req.id = rval();
		req.n_ops = n;
		req.ops = opp;
		check_same(&req);
	}
}

/* Requests of batch ops (code, path, path2 and mode only) packed by
 * wire_request_pack_basic: the very bytes protobuf-c packs. */
static void test_basic_request_pack(void **state)
{
	(void)state;
	static uint8_t paths[64][2][300];
	static const size_t lens[] = { 0, 1, 127, 128, 299 };
	Mcache__Op ops[64], *opp[64];

	for (int round = 0; round < 3000; round++) {
		Mcache__Request req = MCACHE__REQUEST__INIT;
		size_t n = round == 0 ? 0 : rnd() % 65;

		for (size_t i = 0; i < n; i++) {
			Mcache__Op *op = &ops[i];

			mcache__op__init(op);
			op->code = (Mcache__OpCode)(uint32_t)(rnd() % 4 ? rnd() % 40 : rval());
			op->mode = rnd() % 3 ? (uint32_t)rval() : 0;
			op->path.len = round < 25 ? lens[round % 5] : rnd() % 300;
			op->path2.len = round < 25 ? lens[round / 5] : rnd() % 2 ? rnd() % 300 : 0;
			for (size_t k = 0; k < 300; k++) {
				paths[i][0][k] = (uint8_t)rnd();
				paths[i][1][k] = (uint8_t)rnd();
			}
			op->path.data = paths[i][0];
			op->path2.data = paths[i][1];
			opp[i] = op;
		}
		req.id = rnd() % 8 ? rval() : 0;
		req.n_ops = n;
		req.ops = opp;
		size_t len = mcache__request__get_packed_size(&req), bound = wire_request_bound(&req);
		uint8_t *ref = malloc(len + 1), *got = malloc(bound);
		mcache__request__pack(&req, ref);
		assert_true(bound >= len && bound != SIZE_MAX);
		assert_ptr_equal(wire_request_pack_basic(&req, got), got + len);
		assert_memory_equal(got, ref, len);
		free(ref);
		free(got);
	}
}

/* A Result of nothing but err (any value, negative ones too) is sized and
 * packed as protobuf-c does it. */
static void test_err_results(void **state)
{
	(void)state;
	uint8_t a[32], b[32];

	for (int round = 0; round < 5000; round++) {
		Mcache__Result r = MCACHE__RESULT__INIT;
		r.err = round < 3 ? (int32_t[]){ 0, -1, INT32_MIN }[round] : (int32_t)rval();
		size_t n = mcache__result__get_packed_size(&r);
		assert_int_equal(wire_err_result_size(r.err), n);
		memset(a, 0xee, sizeof(a));
		memset(b, 0xee, sizeof(b));
		mcache__result__pack(&r, a);
		wire_err_result_pack(r.err, b);
		assert_memory_equal(a, b, sizeof(a));   /* and nothing written past n */
	}
}

/* A Hello, an unknown field, a field of the wrong wire type, bytes cut
 * short, a wrong op count: not for the fast path. */
static void test_handed_back(void **state)
{
	(void)state;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Hello h = MCACHE__HELLO__INIT;
	uint8_t buf[256];
	size_t len;

	h.version = 1;
	req.id = 5;
	req.hello = &h;
	len = mcache__request__pack(&req, buf);
	assert_null(wire_request_unpack(&fast_alloc, buf, len, 0));
	track_release();

	/* id 5, then one op holding field 99 (varint 1). */
	const uint8_t unknown[] = { 0x08, 5, 0x1a, 3, 0x98, 0x06, 1 };
	assert_null(wire_request_unpack(&fast_alloc, unknown, sizeof(unknown), 1));
	track_release();
	/* The op's path (field 2) sent as a varint. */
	const uint8_t wrong[] = { 0x1a, 2, 0x10, 1 };
	assert_null(wire_request_unpack(&fast_alloc, wrong, sizeof(wrong), 1));
	track_release();
	/* A path of 9 bytes with 2 present. */
	const uint8_t cut[] = { 0x1a, 4, 0x12, 9, 'a', 'b' };
	assert_null(wire_request_unpack(&fast_alloc, cut, sizeof(cut), 1));
	track_release();
	/* An op acting for other credentials (a message field): protobuf-c's,
	 * both ways. */
	Mcache__Op op = MCACHE__OP__INIT, *ops[1] = { &op };
	Mcache__Cred cr = MCACHE__CRED__INIT;
	op.code = MCACHE__OP_CODE__OP_STAT;
	op.cred = &cr;
	cr.uid = 1000;
	req.hello = NULL;
	req.n_ops = 1;
	req.ops = ops;
	assert_true(wire_request_bound(&req) != SIZE_MAX);
	uint8_t *room = malloc(wire_request_bound(&req));
	assert_null(wire_request_pack(&req, room));
	free(room);
	len = mcache__request__pack(&req, buf);
	assert_null(wire_request_unpack(&fast_alloc, buf, len, 1));
	track_release();
	/* Two ops where one was announced. */
	const uint8_t more[] = { 0x1a, 0, 0x1a, 0 };
	assert_null(wire_request_unpack(&fast_alloc, more, sizeof(more), 1));
	track_release();
	assert_non_null(wire_request_unpack(&fast_alloc, more, sizeof(more), 2));
	track_release();
}

static void test_scalar_results(void **state)
{
	(void)state;
	const ProtobufCMessageDescriptor *d = &mcache__result__descriptor;
	uint8_t a[512], b[512];

	for (int round = 0; round < 20000; round++) {
		Mcache__Result r = MCACHE__RESULT__INIT;
		uint8_t *m = (uint8_t *)&r;

		for (unsigned i = 0; i < d->n_fields; i++) {
			const ProtobufCFieldDescriptor *f = &d->fields[i];
			uint64_t v = rval();
			void *at = m + f->offset;

			if (f->label != PROTOBUF_C_LABEL_NONE)
				continue;
			if (f->type == PROTOBUF_C_TYPE_INT32 || f->type == PROTOBUF_C_TYPE_UINT32 ||
			    f->type == PROTOBUF_C_TYPE_ENUM)
				*(uint32_t *)at = (uint32_t)v;
			else if (f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_INT64)
				*(uint64_t *)at = v;
			else if (f->type == PROTOBUF_C_TYPE_BOOL)
				*(protobuf_c_boolean *)at = v & 1;
		}
		size_t want = mcache__result__get_packed_size(&r), got = wire_result_size(&r);
		assert_int_equal(got, want);
		assert_true(want <= sizeof(a));
		memset(a, 0xee, sizeof(a));
		memset(b, 0xee, sizeof(b));
		mcache__result__pack(&r, a);
		wire_result_pack(&r, b, got);
		assert_memory_equal(a, b, sizeof(a));
	}
}

/* Responses of err-only results (a batch of mutations' reply) read by
 * wire_response_errs: the id and errs protobuf-c decodes; any other member
 * (the Response's err, a result's other scalar, an attr), another count
 * or a cut-short frame: -1. */
static void test_err_responses(void **state)
{
	(void)state;
	static Mcache__Result res[100], *resp[100];
	static Mcache__Attr attr = MCACHE__ATTR__INIT;
	static uint8_t buf[1 << 16];
	int32_t errs[101];
	uint64_t id;

	for (int round = 0; round < 3000; round++) {
		Mcache__Response rsp = MCACHE__RESPONSE__INIT;
		size_t n = rnd() % 101;

		for (size_t k = 0; k < n; k++) {
			mcache__result__init(&res[k]);
			res[k].err = rnd() % 3 ? 0 : rnd() % 2 ? (int32_t)(rnd() % 200) : (int32_t)rval();
			resp[k] = &res[k];
		}
		rsp.id = rnd() % 8 ? rval() : 0;
		rsp.n_results = n;
		rsp.results = resp;
		size_t len = mcache__response__pack(&rsp, buf);
		assert_true(len <= sizeof(buf));
		Mcache__Response *ref = mcache__response__unpack(NULL, len, buf);
		assert_non_null(ref);
		assert_int_equal(wire_response_errs(buf, len, &id, errs, n), 0);
		assert_int_equal(id, ref->id);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(errs[k], ref->results[k]->err);
		mcache__response__free_unpacked(ref, NULL);
		assert_int_equal(wire_response_errs(buf, len, &id, errs, n + 1), -1);
		if (n > 0) {
			assert_int_equal(wire_response_errs(buf, len, &id, errs, n - 1), -1);
			assert_int_equal(wire_response_errs(buf, len - 1, &id, errs, n), -1);
			/* One result holding more than its err. */
			size_t k = rnd() % n;
			if (rnd() % 2)
				res[k].handle = rval() | 1;
			else
				res[k].attr = &attr;
			len = mcache__response__pack(&rsp, buf);
			assert_int_equal(wire_response_errs(buf, len, &id, errs, n), -1);
			res[k].handle = 0;
			res[k].attr = NULL;
		}
		/* A whole-request error. */
		rsp.err = (int32_t)(rnd() % 100) + 1;
		len = mcache__response__pack(&rsp, buf);
		assert_int_equal(wire_response_errs(buf, len, &id, errs, n), -1);
	}
}

/* Responses of scalar results, as libmcache gets them for mutations:
 * decoded to what protobuf-c decodes (and freed by its free_unpacked). */
static void test_scalar_responses(void **state)
{
	(void)state;
	const ProtobufCMessageDescriptor *d = &mcache__result__descriptor;
	static Mcache__Result res[100], *resp[100];
	static uint8_t buf[1 << 16], again[1 << 16];

	for (int round = 0; round < 3000; round++) {
		Mcache__Response rsp = MCACHE__RESPONSE__INIT;
		size_t n = rnd() % 101;

		for (size_t k = 0; k < n; k++) {
			Mcache__Result *r = &res[k];
			mcache__result__init(r);
			for (unsigned i = 0; i < d->n_fields; i++) {
				const ProtobufCFieldDescriptor *f = &d->fields[i];
				void *at = (uint8_t *)r + f->offset;
				uint64_t v = rval();

				if (f->label != PROTOBUF_C_LABEL_NONE)
					continue;
				if (f->type == PROTOBUF_C_TYPE_INT32 || f->type == PROTOBUF_C_TYPE_UINT32)
					*(uint32_t *)at = (uint32_t)v;
				else if (f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_INT64)
					*(uint64_t *)at = v;
				else if (f->type == PROTOBUF_C_TYPE_BOOL)
					*(protobuf_c_boolean *)at = v & 1;
			}
			resp[k] = r;
		}
		rsp.id = rval();
		rsp.n_results = n;
		rsp.results = resp;
		size_t len = mcache__response__pack(&rsp, buf);
		Mcache__Response *got = wire_response_unpack(buf, len);
		assert_non_null(got);
		assert_int_equal(got->n_results, n);
		assert_int_equal(mcache__response__get_packed_size(got), len);
		mcache__response__pack(got, again);
		assert_memory_equal(again, buf, len);
		mcache__response__free_unpacked(got, NULL);
	}
	/* A result with attributes, a whole-request error: protobuf-c's. */
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__Result r = MCACHE__RESULT__INIT, *rp = &r;
	Mcache__Attr attr = MCACHE__ATTR__INIT;
	r.attr = &attr;
	attr.ino = 7;
	rsp.id = 3;
	rsp.n_results = 1;
	rsp.results = &rp;
	size_t len = mcache__response__pack(&rsp, buf);
	assert_null(wire_response_unpack(buf, len));
	rsp.n_results = 0;
	rsp.err = EPROTO;
	rsp.message = (char *)"no";
	len = mcache__response__pack(&rsp, buf);
	assert_null(wire_response_unpack(buf, len));
	assert_null(wire_response_unpack(buf, len - 1));
}

static void test_results_handed_back(void **state)
{
	(void)state;
	Mcache__Result r = MCACHE__RESULT__INIT;
	Mcache__Attr attr = MCACHE__ATTR__INIT;
	Mcache__Dirent e = MCACHE__DIRENT__INIT, *ep = &e;

	assert_int_equal(wire_result_size(&r), 0);    /* nothing set: empty */
	r.err = 2;
	assert_int_equal(wire_result_size(&r), 2);
	r.attr = &attr;
	assert_int_equal(wire_result_size(&r), SIZE_MAX);
	r.attr = NULL;
	r.data.data = (uint8_t *)"x";
	r.data.len = 1;
	assert_int_equal(wire_result_size(&r), SIZE_MAX);
	r.data.len = 0;
	r.n_entries = 1;
	r.entries = &ep;
	assert_int_equal(wire_result_size(&r), SIZE_MAX);
	(void)plain_alloc;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_requests),
		cmocka_unit_test(test_handed_back),
		cmocka_unit_test(test_basic_request_pack),
		cmocka_unit_test(test_err_responses),
		cmocka_unit_test(test_err_results),
		cmocka_unit_test(test_scalar_results),
		cmocka_unit_test(test_results_handed_back),
		cmocka_unit_test(test_scalar_responses),
	};
	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
