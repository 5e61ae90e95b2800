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
#include <stdlib.h>
#include <string.h>

static size_t wire_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *wire_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The varint value of a scalar member of type t at m, for encoding, and
 * whether it is one this file handles at all. */
static bool wire_scalar_get(ProtobufCType t, const void *m, uint64_t *v)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
		*v = (uint64_t)(int64_t)*(const int32_t *)m;
		return true;
	case PROTOBUF_C_TYPE_UINT32:
		*v = *(const uint32_t *)m;
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT64:
		*v = *(const uint64_t *)m;
		return true;
	case PROTOBUF_C_TYPE_BOOL:
		*v = *(const protobuf_c_boolean *)m != 0;
		return true;
	default:
		return false;
	}
}

/* Whether a non-scalar member is empty (absent on the wire). */
static bool wire_member_empty(const ProtobufCFieldDescriptor *f, const uint8_t *msg)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return *(const size_t *)(msg + f->quantifier_offset) == 0;
	if (f->label != PROTOBUF_C_LABEL_NONE || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
		return false;
	switch (f->type) {
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(void *const *)(msg + f->offset) == NULL;
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)(msg + f->offset))->len == 0;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(const char *const *)(msg + f->offset);
		return s == NULL || *s == '\0';
	}
	default:
		return false;
	}
}

size_t wire_result_size(const Mcache__Result *r)
{
	const ProtobufCMessageDescriptor *d = &mcache__result__descriptor;
	const uint8_t *msg = (const uint8_t *)r;
	size_t n = 0;

	if (r->base.n_unknown_fields)
		return SIZE_MAX;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		uint64_t v;

		if (f->label == PROTOBUF_C_LABEL_NONE && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    wire_scalar_get(f->type, msg + f->offset, &v)) {
			if (v)
				n += wire_varint_len((uint64_t)f->id << 3) + wire_varint_len(v);
		} else if (!wire_member_empty(f, msg)) {
			return SIZE_MAX;
		}
	}
	return n;
}

void wire_result_pack(const Mcache__Result *r, uint8_t *p, size_t n)
{
	const ProtobufCMessageDescriptor *d = &mcache__result__descriptor;
	const uint8_t *msg = (const uint8_t *)r;

	(void)n;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		uint64_t v;

		if (f->label == PROTOBUF_C_LABEL_NONE && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    wire_scalar_get(f->type, msg + f->offset, &v) && v) {
			p = wire_put_varint(p, (uint64_t)f->id << 3);   /* wire type 0 */
			p = wire_put_varint(p, v);
		}
	}
}

/* Packed size of a message whose members are all scalars or bytes (an Op),
 * or SIZE_MAX when it holds anything else. */
static size_t wire_flat_size(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const uint8_t *msg = (const uint8_t *)m;
	size_t n = 0;

	if (m->n_unknown_fields)
		return SIZE_MAX;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		uint64_t v;

		if (f->label == PROTOBUF_C_LABEL_NONE && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    wire_scalar_get(f->type, msg + f->offset, &v)) {
			if (v)
				n += wire_varint_len((uint64_t)f->id << 3) + wire_varint_len(v);
		} else if (f->label == PROTOBUF_C_LABEL_NONE && f->type == PROTOBUF_C_TYPE_BYTES &&
		           !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) {
			size_t len = ((const ProtobufCBinaryData *)(msg + f->offset))->len;
			if (len)
				n += wire_varint_len((uint64_t)f->id << 3) + wire_varint_len(len) + len;
		} else if (!wire_member_empty(f, msg)) {
			return SIZE_MAX;
		}
	}
	return n;
}

static uint8_t *wire_flat_pack(const ProtobufCMessage *m, uint8_t *p)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const uint8_t *msg = (const uint8_t *)m;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		uint64_t v;

		if (f->label != PROTOBUF_C_LABEL_NONE || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			continue;
		if (wire_scalar_get(f->type, msg + f->offset, &v)) {
			if (v) {
				p = wire_put_varint(p, (uint64_t)f->id << 3);
				p = wire_put_varint(p, v);
			}
		} else if (f->type == PROTOBUF_C_TYPE_BYTES) {
			const ProtobufCBinaryData *b = (const ProtobufCBinaryData *)(msg + f->offset);
			if (b->len) {
				p = wire_put_varint(p, ((uint64_t)f->id << 3) | 2);
				p = wire_put_varint(p, b->len);
				memcpy(p, b->data, b->len);
				p += b->len;
			}
		}
	}
	return p;
}

size_t wire_request_size(const Mcache__Request *req)
{
	size_t n = 0;

	if (req->hello || req->base.n_unknown_fields)
		return SIZE_MAX;
	if (req->id)
		n += 1 + wire_varint_len(req->id);
	for (size_t i = 0; i < req->n_ops; i++) {
		size_t sz = wire_flat_size(&req->ops[i]->base);

		if (sz == SIZE_MAX)
			return SIZE_MAX;
		n += 1 + wire_varint_len(sz) + sz;
	}
	return n;
}

void wire_request_pack(const Mcache__Request *req, uint8_t *p)
{
	if (req->id) {
		*p++ = (1u << 3) | 0;
		p = wire_put_varint(p, req->id);
	}
	for (size_t i = 0; i < req->n_ops; i++) {
		*p++ = (3u << 3) | 2;
		p = wire_put_varint(p, wire_flat_size(&req->ops[i]->base));
		p = wire_flat_pack(&req->ops[i]->base, p);
	}
}

/* ---- decoding ---------------------------------------------------------- */

#define WIRE_MAX_ID 128u

/* Op's and Result's fields by number: the ones the fast path decodes
 * (scalars; bytes for Op), else NULL. */
static const ProtobufCFieldDescriptor *wire_op_field[WIRE_MAX_ID];
static const ProtobufCFieldDescriptor *wire_result_field[WIRE_MAX_ID];
static pthread_once_t wire_once = PTHREAD_ONCE_INIT;

static void wire_table(const ProtobufCMessageDescriptor *d, bool bytes,
                       const ProtobufCFieldDescriptor **tab)
{
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		uint64_t v;
		uint64_t zero[2] = { 0, 0 };

		if (f->id >= WIRE_MAX_ID || f->label != PROTOBUF_C_LABEL_NONE ||
		    (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			continue;
		if ((bytes && f->type == PROTOBUF_C_TYPE_BYTES) || wire_scalar_get(f->type, zero, &v))
			tab[f->id] = f;
	}
}

static void wire_init(void)
{
	wire_table(&mcache__op__descriptor, true, wire_op_field);
	wire_table(&mcache__result__descriptor, false, wire_result_field);
}

/* A varint at *p (below end): 0, or -1 when cut short or over 10 bytes. */
static int wire_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (*p == end)
			return -1;
		uint8_t b = *(*p)++;
		x |= shift < 64 ? (uint64_t)(b & 0x7f) << shift : 0;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

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
			if (wire_flat_unpack(alloc, p, (size_t)v, wire_op_field, (uint8_t *)op) < 0)
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
		if (wire_flat_unpack(&alloc, p, (size_t)v, wire_result_field, (uint8_t *)r) < 0)
			goto fail;
		p += v;
	}
	return rsp;
fail:
	mcache__response__free_unpacked(rsp, NULL);
	return NULL;
}
