/* wire.c - hand decoding of Requests and encoding of scalar Results (see
 * wire.h), each a loop over the message's protobuf-c field descriptors.
 *
 * Rules kept, the same as protobuf-c's for proto3:
 *  1. A scalar member is written only when not zero, fields in the order
 *     of their numbers (the descriptors' order); varints as protobuf-c
 *     writes them (int32 and enums sign-extended to 64 bits).
 *  2. On decoding, the last occurrence of a scalar or bytes field wins;
 *     32-bit members take the low 32 bits of the varint, bools whether it
 *     is not zero.
 *  3. Anything the fast path does not know is handed back (SIZE_MAX,
 *     NULL) rather than guessed at.
 */
#include "wire.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- plans --------------------------------------------------------------
 *
 * A message's descriptor compiled once (wire_init) into what coding it
 * needs: per field its offset, what kind of member it is and its tag
 * already in varint form.
 */

enum wire_kind {
	WK_I32,          /* int32, enum: varint sign-extended to 64 bits */
	WK_U32,
	WK_U64,          /* int64, uint64 */
	WK_BOOL,
	WK_BYTES,        /* coded (flat messages: Op) */
	WK_EMPTY_BYTES,  /* must be empty (Result's data) */
	WK_EMPTY_PTR,    /* a message: must be absent */
	WK_EMPTY_STR,    /* a string: must be NULL or "" */
	WK_EMPTY_REP,    /* repeated: must have no element */
	WK_NEVER,        /* anything else: never on the fast path */
};

#define WIRE_MAX_FIELDS 64u
#define WIRE_MAX_ID 128u

struct wire_field {
	uint32_t off, qoff;
	uint8_t kind;
	uint8_t taglen;
	uint8_t tag[5];
};

struct wire_plan {
	bool ok;                     /* all fields fit in f[] */
	bool never;                  /* a field is WK_NEVER: never on the fast path */
	unsigned n;
	struct wire_field f[WIRE_MAX_FIELDS];
	/* The fields grouped by kind: those of kind k are f[by_kind[j]] for
	 * kstart[k] <= j < kstart[k + 1], so that sizing loops need no
	 * dispatch per field. */
	uint8_t by_kind[WIRE_MAX_FIELDS];
	uint32_t koff[WIRE_MAX_FIELDS];  /* f[by_kind[j]].off */
	uint8_t ktag[WIRE_MAX_FIELDS];   /* f[by_kind[j]].taglen */
	unsigned kstart[WK_NEVER + 2];
	/* For decoding: the field of each number it decodes, else NULL. */
	const ProtobufCFieldDescriptor *by_id[WIRE_MAX_ID];
};

static struct wire_plan plan_op, plan_result;
static pthread_once_t wire_once = PTHREAD_ONCE_INIT;

/* Result's err member: its field in plan_result, or -1; its key. */
static int result_err = -1;
static uint64_t result_err_key;

/* The members a batch's op sets (wire_request_pack_basic): their fields
 * in plan_op, in field order. */
static const size_t op_basic_off[] = {
	offsetof(Mcache__Op, code), offsetof(Mcache__Op, path),
	offsetof(Mcache__Op, path2), offsetof(Mcache__Op, mode),
};
#define OP_BASIC (sizeof(op_basic_off) / sizeof(op_basic_off[0]))
static unsigned op_basic[OP_BASIC], n_op_basic;
/* The most an Op packs to beyond its bytes members' contents. */
static size_t plan_op_fixed;

static enum wire_kind wire_kind_of(const ProtobufCFieldDescriptor *f, bool bytes)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return WK_EMPTY_REP;
	if (f->label != PROTOBUF_C_LABEL_NONE || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
		return WK_NEVER;
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
		return WK_I32;
	case PROTOBUF_C_TYPE_UINT32:
		return WK_U32;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT64:
		return WK_U64;
	case PROTOBUF_C_TYPE_BOOL:
		return WK_BOOL;
	case PROTOBUF_C_TYPE_BYTES:
		return bytes ? WK_BYTES : WK_EMPTY_BYTES;
	case PROTOBUF_C_TYPE_MESSAGE:
		return WK_EMPTY_PTR;
	case PROTOBUF_C_TYPE_STRING:
		return WK_EMPTY_STR;
	default:
		return WK_NEVER;
	}
}

/* bytes: whether bytes members are coded (else they must be empty). */
static void wire_plan_make(struct wire_plan *pl, const ProtobufCMessageDescriptor *d, bool bytes)
{
	/* Below 64 fields: a mask of them (wire_plan_mask) is never ~0. */
	pl->ok = d->n_fields < WIRE_MAX_FIELDS;
	if (!pl->ok)
		return;
	pl->n = d->n_fields;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		struct wire_field *w = &pl->f[i];
		enum wire_kind k = wire_kind_of(f, bytes);
		unsigned wt = k == WK_BYTES ? 2 : 0;

		w->off = f->offset;
		w->qoff = f->quantifier_offset;
		w->kind = (uint8_t)k;
		w->taglen = (uint8_t)(wire_put_varint(w->tag, ((uint64_t)f->id << 3) | wt) - w->tag);
		if (f->id < WIRE_MAX_ID && k <= WK_BYTES)
			pl->by_id[f->id] = f;
		if (k == WK_NEVER)
			pl->never = true;
	}
	unsigned j = 0;
	for (unsigned k = 0; k <= WK_NEVER; k++) {
		pl->kstart[k] = j;
		for (unsigned i = 0; i < pl->n; i++)
			if (pl->f[i].kind == k) {
				pl->koff[j] = pl->f[i].off;
				pl->ktag[j] = pl->f[i].taglen;
				pl->by_kind[j++] = (uint8_t)i;
			}
	}
	pl->kstart[WK_NEVER + 1] = j;
}

static void wire_init(void)
{
	wire_plan_make(&plan_op, &mcache__op__descriptor, true);
	wire_plan_make(&plan_result, &mcache__result__descriptor, false);
	for (unsigned i = 0; plan_op.ok && i < plan_op.n; i++)
		for (unsigned k = 0; k < OP_BASIC; k++)
			if (plan_op.f[i].off == op_basic_off[k] && plan_op.f[i].kind <= WK_BYTES)
				op_basic[n_op_basic++] = i;
	for (unsigned i = 0; i < plan_op.n; i++)
		plan_op_fixed += plan_op.f[i].taglen + 10u;   /* a varint, or a length */
	for (unsigned i = 0; plan_result.ok && i < plan_result.n; i++)
		if (plan_result.f[i].off == offsetof(Mcache__Result, err) &&
		    plan_result.f[i].kind == WK_I32) {
			result_err = (int)i;
			result_err_key = (uint64_t)mcache__result__descriptor.fields[i].id << 3;
		}
}

/* ---- encoding ---------------------------------------------------------- */

/* The scalar of field w in msg, in varint form; false when w is not a
 * scalar. */
static inline bool wire_scalar(const struct wire_field *w, const uint8_t *msg, uint64_t *v)
{
	const uint8_t *m = msg + w->off;

	switch (w->kind) {
	case WK_I32:
		*v = (uint64_t)(int64_t)*(const int32_t *)m;
		return true;
	case WK_U32:
		*v = *(const uint32_t *)m;
		return true;
	case WK_U64:
		*v = *(const uint64_t *)m;
		return true;
	case WK_BOOL:
		*v = *(const protobuf_c_boolean *)m != 0;
		return true;
	default:
		return false;
	}
}

/* Add what field w of msg packs to to *n: false when it is not for the
 * fast path. */
static inline bool wire_field_size(const struct wire_field *w, const uint8_t *msg, size_t *n)
{
	const uint8_t *at = msg + w->off;
	uint64_t v;

	if (wire_scalar(w, msg, &v)) {
		if (v)
			*n += w->taglen + wire_varint_len(v);
		return true;
	}
	switch (w->kind) {
	case WK_BYTES: {
		size_t len = ((const ProtobufCBinaryData *)at)->len;
		if (len)
			*n += w->taglen + wire_varint_len(len) + len;
		return true;
	}
	case WK_EMPTY_BYTES:
		return ((const ProtobufCBinaryData *)at)->len == 0;
	case WK_EMPTY_PTR:
		return *(void *const *)at == NULL;
	case WK_EMPTY_STR: {
		const char *str = *(const char *const *)at;
		return !str || !*str;
	}
	case WK_EMPTY_REP:
		return *(const size_t *)(msg + w->qoff) == 0;
	default:
		return false;
	}
}

/* The bit (1 << i) of each field i of msg that packs to something, or
 * ~0: not for the fast path (a member that must be empty is not, a
 * WK_NEVER field, unknown fields). *size (when not NULL) gets the packed
 * size. */
static uint64_t wire_plan_mask(const struct wire_plan *pl, const ProtobufCMessage *m, size_t *size)
{
	const uint8_t *msg = (const uint8_t *)m;
	uint64_t mask = 0;
	size_t n = 0;

	if (!pl->ok || pl->never || m->n_unknown_fields)
		return ~(uint64_t)0;
	/* One loop per kind, over the kind's offsets: no dispatch per field. */
#define WIRE_KIND_LOOP(kind, type, vlen)                                    \
	for (unsigned j = pl->kstart[kind], e = pl->kstart[(kind) + 1]; j < e; j++) { \
		type v = *(const type *)(msg + pl->koff[j]);                \
		if (v) {                                                    \
			mask |= (uint64_t)1 << pl->by_kind[j];               \
			n += pl->ktag[j] + (vlen);                          \
		}                                                           \
	}
	WIRE_KIND_LOOP(WK_I32, int32_t, wire_varint_len((uint64_t)(int64_t)v))
	WIRE_KIND_LOOP(WK_U32, uint32_t, wire_varint_len(v))
	WIRE_KIND_LOOP(WK_U64, uint64_t, wire_varint_len(v))
	WIRE_KIND_LOOP(WK_BOOL, protobuf_c_boolean, 1u)
#undef WIRE_KIND_LOOP
	for (unsigned j = pl->kstart[WK_BYTES], e = pl->kstart[WK_BYTES + 1]; j < e; j++) {
		size_t len = ((const ProtobufCBinaryData *)(msg + pl->koff[j]))->len;
		if (len) {
			mask |= (uint64_t)1 << pl->by_kind[j];
			n += pl->ktag[j] + wire_varint_len(len) + len;
		}
	}
	/* The members that must be empty: the rest of the kinds. */
	for (unsigned j = pl->kstart[WK_EMPTY_BYTES]; j < pl->kstart[WK_NEVER]; j++)
		if (!wire_field_size(&pl->f[pl->by_kind[j]], msg, &n))
			return ~(uint64_t)0;
	if (size)
		*size = n;
	return mask;
}

/* Packed size of msg under plan pl, or SIZE_MAX: not for the fast path. */
static size_t wire_plan_size(const struct wire_plan *pl, const ProtobufCMessage *m)
{
	size_t n;

	if (wire_plan_mask(pl, m, &n) == ~(uint64_t)0)
		return SIZE_MAX;
	return n;
}

/* Field w's tag at p; the end. Most tags are one byte: no copy call. */
static inline uint8_t *wire_put_tag(uint8_t *p, const struct wire_field *w)
{
	if (w->taglen == 1) {
		*p = w->tag[0];
		return p + 1;
	}
	memcpy(p, w->tag, w->taglen);
	return p + w->taglen;
}

/* Pack the fields of mask (wire_plan_mask, not ~0) of msg at p; the end.
 * Only the fields that pack to something are visited, in field order. */
static uint8_t *wire_plan_pack_mask(const struct wire_plan *pl, const ProtobufCMessage *m,
                                    uint64_t mask, uint8_t *p)
{
	const uint8_t *msg = (const uint8_t *)m;

	while (mask) {
		const struct wire_field *w = &pl->f[__builtin_ctzll(mask)];
		uint64_t v;

		mask &= mask - 1;
		p = wire_put_tag(p, w);
		if (wire_scalar(w, msg, &v)) {
			p = wire_put_varint(p, v);
		} else {
			const ProtobufCBinaryData *b = (const ProtobufCBinaryData *)(msg + w->off);
			p = wire_put_varint(p, b->len);
			memcpy(p, b->data, b->len);
			p += b->len;
		}
	}
	return p;
}

static uint8_t *wire_plan_pack(const struct wire_plan *pl, const ProtobufCMessage *m, uint8_t *p)
{
	return wire_plan_pack_mask(pl, m, wire_plan_mask(pl, m, NULL), p);
}

size_t wire_result_size(const Mcache__Result *r)
{
	pthread_once(&wire_once, wire_init);
	return wire_plan_size(&plan_result, &r->base);
}

void wire_result_pack(const Mcache__Result *r, uint8_t *p, size_t n)
{
	(void)n;
	wire_plan_pack(&plan_result, &r->base, p);
}

size_t wire_err_result_size(int32_t err)
{
	pthread_once(&wire_once, wire_init);
	if (result_err < 0) {
		Mcache__Result r = MCACHE__RESULT__INIT;
		r.err = err;
		return mcache__result__get_packed_size(&r);
	}
	const struct wire_field *w = &plan_result.f[result_err];
	return err ? w->taglen + wire_varint_len((uint64_t)(int64_t)err) : 0;
}

void wire_err_result_pack(int32_t err, uint8_t *p)
{
	if (result_err < 0) {
		Mcache__Result r = MCACHE__RESULT__INIT;
		r.err = err;
		mcache__result__pack(&r, p);
		return;
	}
	const struct wire_field *w = &plan_result.f[result_err];
	if (err) {
		memcpy(p, w->tag, w->taglen);
		wire_put_varint(p + w->taglen, (uint64_t)(int64_t)err);
	}
}

size_t wire_request_bound(const Mcache__Request *req)
{
	size_t n = 1 + 10 + WIRE_PACK_SLACK;

	pthread_once(&wire_once, wire_init);
	if (req->hello || req->base.n_unknown_fields || !plan_op.ok)
		return SIZE_MAX;
	for (size_t i = 0; i < req->n_ops; i++) {
		const uint8_t *msg = (const uint8_t *)req->ops[i];

		n += 1 + 10 + plan_op_fixed;
		for (unsigned j = plan_op.kstart[WK_BYTES]; j < plan_op.kstart[WK_BYTES + 1]; j++)
			n += ((const ProtobufCBinaryData *)(msg + plan_op.koff[j]))->len;
	}
	return n;
}

uint8_t *wire_request_pack(const Mcache__Request *req, uint8_t *p)
{
	if (req->id) {
		*p++ = (1u << 3) | 0;
		p = wire_put_varint(p, req->id);
	}
	for (size_t i = 0; i < req->n_ops; i++) {
		size_t sz;
		uint64_t mask = wire_plan_mask(&plan_op, &req->ops[i]->base, &sz);

		if (mask == ~(uint64_t)0)
			return NULL;
		*p++ = (3u << 3) | 2;
		p = wire_put_varint(p, sz);
		p = wire_plan_pack_mask(&plan_op, &req->ops[i]->base, mask, p);
	}
	return p;
}

uint8_t *wire_request_pack_basic(const Mcache__Request *req, uint8_t *p)
{
	pthread_once(&wire_once, wire_init);
	if (n_op_basic != OP_BASIC)
		return wire_request_pack(req, p);
	if (req->id) {
		*p++ = (1u << 3) | 0;
		p = wire_put_varint(p, req->id);
	}
	for (size_t i = 0; i < req->n_ops; i++) {
		const uint8_t *msg = (const uint8_t *)req->ops[i];

		/* The four members alone, in field order: the rest are known to
		 * be unset. One pass: the body goes after a one-byte length,
		 * moved up in the rare case that its length takes more. */
		*p++ = (3u << 3) | 2;
		uint8_t *lenp = p++, *body = p;
		for (unsigned k = 0; k < OP_BASIC; k++) {
			const struct wire_field *w = &plan_op.f[op_basic[k]];
			uint64_t v;

			if (wire_scalar(w, msg, &v)) {
				if (!v)
					continue;
				p = wire_put_varint(wire_put_tag(p, w), v);
			} else {
				const ProtobufCBinaryData *b = (const ProtobufCBinaryData *)(msg + w->off);

				if (!b->len)
					continue;
				p = wire_put_varint(wire_put_tag(p, w), b->len);
				memcpy(p, b->data, b->len);
				p += b->len;
			}
		}
		size_t sz = (size_t)(p - body);
		if (sz < 0x80) {
			*lenp = (uint8_t)sz;
		} else {
			size_t more = wire_varint_len(sz) - 1;

			memmove(body + more, body, sz);
			wire_put_varint(lenp, sz);
			p += more;
		}
	}
	return p;
}

/* ---- decoding ---------------------------------------------------------- */

static void wire_scalar_set(ProtobufCType t, void *m, uint64_t v)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
	case PROTOBUF_C_TYPE_UINT32:
		*(uint32_t *)m = (uint32_t)v;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)m = v != 0;
		break;
	default:
		*(uint64_t *)m = v;
		break;
	}
}

/* One flat message (Op, or a Result of scalars) from p[0..len) into msg
 * (initialized), its fields known by tab. 0, or -1: not ours. */
static int wire_flat_unpack(ProtobufCAllocator *alloc, const uint8_t *p, size_t len,
                            const ProtobufCFieldDescriptor *const *tab, uint8_t *msg)
{
	const uint8_t *end = p + len;

	while (p < end) {
		uint64_t key, v;

		if (wire_get_varint(&p, end, &key) < 0 || key >> 3 >= WIRE_MAX_ID)
			return -1;
		const ProtobufCFieldDescriptor *f = tab[key >> 3];
		if (!f)
			return -1;
		if (f->type == PROTOBUF_C_TYPE_BYTES) {
			ProtobufCBinaryData *b = (ProtobufCBinaryData *)(msg + f->offset);
			uint8_t *data;

			if ((key & 7) != 2 || wire_get_varint(&p, end, &v) < 0 ||
			    v > (uint64_t)(end - p))
				return -1;
			data = alloc->alloc(alloc->allocator_data, v + 1);
			if (!data)
				return -1;
			memcpy(data, p, v);
			data[v] = 0;
			b->data = data;
			b->len = v;
			p += v;
		} else {
			if ((key & 7) != 0 || wire_get_varint(&p, end, &v) < 0)
				return -1;
			wire_scalar_set(f->type, msg + f->offset, v);
		}
	}
	return 0;
}

Mcache__Request *wire_request_unpack(ProtobufCAllocator *alloc, const uint8_t *p, size_t len,
                                     size_t nops)
{
	const uint8_t *end = p + len;
	Mcache__Request *req;
	Mcache__Op *ops = NULL;

	pthread_once(&wire_once, wire_init);
	req = alloc->alloc(alloc->allocator_data, sizeof(*req));
	if (!req)
		return NULL;
	mcache__request__init(req);
	if (nops > 0) {
		ops = alloc->alloc(alloc->allocator_data, nops * sizeof(*ops));
		req->ops = alloc->alloc(alloc->allocator_data, nops * sizeof(*req->ops));
		if (!ops || !req->ops)
			return NULL;
	}
	while (p < end) {
		uint64_t key, v;

		if (wire_get_varint(&p, end, &key) < 0)
			return NULL;
		if (key == ((1u << 3) | 0)) {                   /* id */
			if (wire_get_varint(&p, end, &v) < 0)
				return NULL;
			req->id = v;
		} else if (key == ((3u << 3) | 2)) {            /* ops */
			Mcache__Op *op = &ops[req->n_ops];

			if (req->n_ops == nops || wire_get_varint(&p, end, &v) < 0 ||
			    v > (uint64_t)(end - p))
				return NULL;
			mcache__op__init(op);
			if (wire_flat_unpack(alloc, p, (size_t)v, plan_op.by_id, (uint8_t *)op) < 0)
				return NULL;
			req->ops[req->n_ops++] = op;
			p += v;
		} else {
			return NULL;                            /* a Hello, or unknown */
		}
	}
	return req->n_ops == nops ? req : NULL;
}

static void *wire_malloc(void *ad, size_t n)
{
	(void)ad;
	return malloc(n ? n : 1);
}

Mcache__Response *wire_response_unpack(const uint8_t *p, size_t len)
{
	ProtobufCAllocator alloc = { wire_malloc, NULL, NULL };
	const uint8_t *q = p, *end = p + len;
	Mcache__Response *rsp;
	size_t n = 0;
	uint64_t key, v;

	pthread_once(&wire_once, wire_init);
	/* Count the results; anything but id and results is not ours. */
	while (q < end) {
		if (wire_get_varint(&q, end, &key) < 0)
			return NULL;
		if (key == ((1u << 3) | 0)) {
			if (wire_get_varint(&q, end, &v) < 0)
				return NULL;
		} else if (key == ((3u << 3) | 2)) {
			if (wire_get_varint(&q, end, &v) < 0 || v > (uint64_t)(end - q))
				return NULL;
			q += v;
			n++;
		} else {
			return NULL;
		}
	}
	rsp = malloc(sizeof(*rsp));
	if (!rsp)
		return NULL;
	mcache__response__init(rsp);
	if (n > 0) {
		/* Laid out as protobuf-c's unpack would, so that
		 * mcache__response__free_unpacked frees it. */
		rsp->results = calloc(n, sizeof(*rsp->results));
		if (!rsp->results)
			goto fail;
	}
	while (p < end) {
		wire_get_varint(&p, end, &key);
		wire_get_varint(&p, end, &v);
		if (key == ((1u << 3) | 0)) {
			rsp->id = v;
			continue;
		}
		Mcache__Result *r = malloc(sizeof(*r));
		if (!r)
			goto fail;
		mcache__result__init(r);
		rsp->results[rsp->n_results++] = r;
		if (wire_flat_unpack(&alloc, p, (size_t)v, plan_result.by_id, (uint8_t *)r) < 0)
			goto fail;
		p += v;
	}
	return rsp;
fail:
	mcache__response__free_unpacked(rsp, NULL);
	return NULL;
}

int wire_response_errs(const uint8_t *p, size_t len, uint64_t *id, int32_t *errs, size_t n)
{
	const uint8_t *end = p + len;
	size_t k = 0;
	uint64_t key, v;

	pthread_once(&wire_once, wire_init);
	if (result_err < 0)
		return -1;
	*id = 0;
	while (p < end) {
		if (wire_get_varint(&p, end, &key) < 0)
			return -1;
		if (key == ((1u << 3) | 0)) {
			if (wire_get_varint(&p, end, &v) < 0)
				return -1;
			*id = v;                          /* the last one, as protobuf-c */
			continue;
		}
		if (key != ((3u << 3) | 2) || wire_get_varint(&p, end, &v) < 0 ||
		    v > (uint64_t)(end - p) || k == n)
			return -1;
		const uint8_t *q = p, *qe = p + v;
		int32_t e = 0;

		while (q < qe) {
			uint64_t rk, rv;

			if (wire_get_varint(&q, qe, &rk) < 0 || rk != result_err_key ||
			    wire_get_varint(&q, qe, &rv) < 0)
				return -1;
			e = (int32_t)(uint32_t)rv;        /* as protobuf-c takes an int32 */
		}
		errs[k++] = e;
		p = qe;
	}
	return k == n ? 0 : -1;
}
