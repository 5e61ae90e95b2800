/* wire.h - the hot messages of the RPC protocol (a Request of ops, a
 * Result of scalars) decoded and encoded by hand, driven by protobuf-c's
 * own descriptors so that a field added to mcache.proto is handled (or
 * sent to protobuf-c) without a change here. Anything out of the ordinary
 * is left to protobuf-c, which stays the reference. */
#ifndef MC_WIRE_H
#define MC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "mcache.pb-c.h"

/* Varints, as protobuf codes them (shared by this module and the
 * server's request scanner, which reads requests without unpacking). */
static inline size_t wire_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint8_t *wire_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* A varint at *p (below end): 0, or -1 when cut short or over 10 bytes. */
static inline int wire_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	/* Most are one byte: a key, a length, a mode or code. */
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 0;
	}
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

/* Packed size of r when every member it sets is a scalar (every
 * mutation's result; an errno alone), or SIZE_MAX when it holds more
 * (attributes, data, entries, extents): ask protobuf-c then. */
size_t wire_result_size(const Mcache__Result *r);
/* Pack r, for which wire_result_size gave n != SIZE_MAX, at p (n bytes),
 * exactly as protobuf-c would. */
void wire_result_pack(const Mcache__Result *r, uint8_t *p, size_t n);

/* The packed size of a Result whose only member is err (a mutation's),
 * and its packing at p (that many bytes), exactly as protobuf-c's. */
size_t wire_err_result_size(int32_t err);
void wire_err_result_pack(int32_t err, uint8_t *p);
/* Unpack the Request p[0..len), which request_scan found to hold nops
 * ops, with alloc, when it holds only its id and ops whose members are all
 * known scalars and bytes. NULL when it holds anything else (a Hello,
 * unknown fields, a field with an unexpected wire type) or is cut short:
 * protobuf-c's unpack decides those. Members of the result live in
 * alloc's memory; it is never freed piece by piece. */
Mcache__Request *wire_request_unpack(ProtobufCAllocator *alloc, const uint8_t *p, size_t len,
                                     size_t nops);

/* Room for packing req by hand (wire_request_pack): an upper bound of
 * its packed size plus WIRE_PACK_SLACK, or SIZE_MAX when it carries a
 * Hello or unknown fields (protobuf-c's then). */
#define WIRE_PACK_SLACK 8u
size_t wire_request_bound(const Mcache__Request *req);
/* Pack req at p (room for wire_request_bound(req) bytes), exactly as
 * protobuf-c would: the end of what was packed, or NULL when an op holds
 * something but scalars and bytes (protobuf-c's then; p's contents are
 * undefined). */
uint8_t *wire_request_pack(const Mcache__Request *req, uint8_t *p);
/* wire_request_pack for a request whose ops set no member but code, path,
 * path2 and mode (a batch's op): the same bytes,
 * without looking at the other members; never NULL. */
uint8_t *wire_request_pack_basic(const Mcache__Request *req, uint8_t *p);
/* Unpack the Response p[0..len) when it holds only its id and results of
 * scalars (every mutation's reply), laid out as protobuf-c's unpack with
 * the default allocator would: free it with
 * mcache__response__free_unpacked(rsp, NULL). NULL when it holds anything
 * else, is cut short, or memory ran out: unpack with protobuf-c then. */
Mcache__Response *wire_response_unpack(const uint8_t *p, size_t len);
/* The Response p[0..len) read without unpacking it, when it holds only its
 * id and exactly n results that each hold nothing but err (a batch of
 * mutations' reply): 0 with *id and errs[0..n) their errs, as protobuf-c
 * would decode them. -1 when it holds anything else (a whole-request
 * error, a result with more, another count) or is cut short: unpack it
 * then. */
int wire_response_errs(const uint8_t *p, size_t len, uint64_t *id, int32_t *errs, size_t n);

#endif
