/* fuzz-frame.c - libFuzzer target for the wire frame codec (proto/frame.c)
 * and the protobuf-c decoders of Request and Response.
 *
 * Input: one byte selecting the message type (bit 0: 0 Request, 1 Response),
 * then a byte stream as a peer would send it: 4-byte little-endian length,
 * payload, length, payload, ...
 *
 * Invariants checked:
 *   1. The stream is split the way the server splits it (frame_get_len, a
 *      zero length or one over FRAME_FUZZ_MAX ends it) and frame_read_fds()
 *      over a socket pair returns exactly the same frames, then the error
 *      that ends the stream: -EPROTO (zero length), -EMSGSIZE (too long) or
 *      -ECONNRESET (the stream ran out).
 *   2. A payload that unpacks packs again (frame_pack_request/response),
 *      behind a header giving its length, and what it packs to unpacks and
 *      packs to the same bytes (a fixed point after one round), unless the
 *      message kept unknown fields: protobuf-c 1.4 accepts field number 0
 *      when its tag is spelled in two bytes (85 00) and keeps it as an
 *      unknown field, but rejects the one-byte tag (05) it packs it back
 *      as. Neither side of mcache packs a message it unpacked, so only the
 *      messages without unknown fields must round-trip.
 *   3. Every byte field of an unpacked message is readable for its length
 *      (the sanitizers check the reads).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "fuzz.h"

#define FRAME_FUZZ_MAX   65536u  /* frame limit of this target */
#define FRAME_SOCK_MAX   32768u  /* streams up to this size also go through a socket */
#define FRAME_MAX_FRAMES 64u

struct frame_ref {
	size_t off, len;          /* payload within the stream */
};

static volatile uint8_t sink;

static void touch(const ProtobufCBinaryData *b)
{
	uint8_t x = 0;
	fz_check(b->len == 0 || b->data);
	for (size_t i = 0; i < b->len; i++)
		x ^= b->data[i];
	sink ^= x;
}

static void touch_request(const Mcache__Request *r)
{
	fz_check(r->n_ops == 0 || r->ops);
	for (size_t i = 0; i < r->n_ops; i++) {
		touch(&r->ops[i]->path);
		touch(&r->ops[i]->path2);
	}
}

static void touch_response(const Mcache__Response *r)
{
	fz_check(r->n_results == 0 || r->results);
	for (size_t i = 0; i < r->n_results; i++) {
		const Mcache__Result *res = r->results[i];
		touch(&res->data);
		fz_check(res->n_entries == 0 || res->entries);
		for (size_t k = 0; k < res->n_entries; k++)
			touch(&res->entries[k]->name);
	}
	if (r->message)
		sink ^= (uint8_t)strlen(r->message);
}

static unsigned unknown(const ProtobufCMessage *m)
{
	return m ? m->n_unknown_fields : 0;
}

static unsigned unknown_request(const Mcache__Request *r)
{
	unsigned n = unknown(&r->base) + (r->hello ? unknown(&r->hello->base) : 0);
	for (size_t i = 0; i < r->n_ops; i++)
		n += unknown(&r->ops[i]->base);
	return n;
}

static unsigned unknown_response(const Mcache__Response *r)
{
	unsigned n = unknown(&r->base) + (r->hello ? unknown(&r->hello->base) : 0);
	for (size_t i = 0; i < r->n_results; i++) {
		const Mcache__Result *res = r->results[i];
		n += unknown(&res->base) + (res->attr ? unknown(&res->attr->base) : 0);
		for (size_t k = 0; k < res->n_entries; k++)
			n += unknown(&res->entries[k]->base);
	}
	return n;
}

/* Unpack, pack, unpack, pack: the two packings are equal. */
static void roundtrip(bool response, const uint8_t *p, size_t n)
{
	uint8_t *a = NULL, *b = NULL;
	size_t alen, blen;
	unsigned unk;

	if (!response) {
		Mcache__Request *r = mcache__request__unpack(NULL, n, p);
		if (!r)
			return;
		touch_request(r);
		unk = unknown_request(r);
		fz_check(frame_pack_request(r, MC_FRAME_MAX, &a, &alen) == 0);
		mcache__request__free_unpacked(r, NULL);
		r = mcache__request__unpack(NULL, alen - MC_FRAME_HDR, a + MC_FRAME_HDR);
		if (!r && unk) {
			free(a);
			return;
		}
		fz_check(r);
		fz_check(frame_pack_request(r, MC_FRAME_MAX, &b, &blen) == 0);
		mcache__request__free_unpacked(r, NULL);
	} else {
		Mcache__Response *r = mcache__response__unpack(NULL, n, p);
		if (!r)
			return;
		touch_response(r);
		unk = unknown_response(r);
		fz_check(frame_pack_response(r, MC_FRAME_MAX, &a, &alen) == 0);
		mcache__response__free_unpacked(r, NULL);
		r = mcache__response__unpack(NULL, alen - MC_FRAME_HDR, a + MC_FRAME_HDR);
		if (!r && unk) {
			free(a);
			return;
		}
		fz_check(r);
		fz_check(frame_pack_response(r, MC_FRAME_MAX, &b, &blen) == 0);
		mcache__response__free_unpacked(r, NULL);
	}
	fz_check(frame_get_len(a) == alen - MC_FRAME_HDR);
	fz_check(alen == blen && memcmp(a, b, alen) == 0);
	free(a);
	free(b);
}

/* Split the stream as the server does; the error that ended it. */
static int split(const uint8_t *s, size_t len, struct frame_ref *f, size_t *nf)
{
	size_t off = 0;
	*nf = 0;
	for (;;) {
		if (len - off < MC_FRAME_HDR)
			return -ECONNRESET;
		uint32_t n = frame_get_len(s + off);
		if (n > FRAME_FUZZ_MAX)
			return -EMSGSIZE;
		if (n == 0)
			return -EPROTO;
		if (len - off - MC_FRAME_HDR < n)
			return -ECONNRESET;
		if (*nf == FRAME_MAX_FRAMES)
			return 0;
		f[*nf].off = off + MC_FRAME_HDR;
		f[*nf].len = n;
		(*nf)++;
		off += MC_FRAME_HDR + n;
	}
}

/* frame_read_fds() over a socket pair gives the same frames and the same
 * final error. */
static void socket_agrees(const uint8_t *s, size_t len, const struct frame_ref *f, size_t nf,
                          int end)
{
	int sv[2];
	fz_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	if (len)
		fz_check(write(sv[0], s, len) == (ssize_t)len);
	fz_check(shutdown(sv[0], SHUT_WR) == 0);
	for (size_t i = 0; i <= nf; i++) {
		uint8_t *p = NULL;
		size_t n = 0;
		int fd = -1;
		int err = frame_read_fds(sv[1], FRAME_FUZZ_MAX, &p, &n, &fd, 1);
		if (i == nf) {
			/* end 0: the split stopped after FRAME_MAX_FRAMES frames
			 * and the stream goes on: nothing to compare. */
			if (end != 0)
				fz_check(err == end);
			free(p);
			break;
		}
		fz_check(err == 0);
		fz_check(fd == -1);
		fz_check(n == f[i].len && memcmp(p, s + f[i].off, n) == 0);
		free(p);
	}
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_ref f[FRAME_MAX_FRAMES];
	size_t nf;

	if (size < 1)
		return 0;
	bool response = data[0] & 1;
	const uint8_t *s = data + 1;
	size_t len = size - 1;
	int end = split(s, len, f, &nf);
	for (size_t i = 0; i < nf; i++)
		roundtrip(response, s + f[i].off, f[i].len);
	/* A payload that is not framed at all is still a message to decode. */
	if (nf == 0 && len > 0)
		roundtrip(response, s, len);
	if (len <= FRAME_SOCK_MAX)
		socket_agrees(s, len, f, nf, end);
	return 0;
}
