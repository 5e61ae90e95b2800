/* call.c - the bytes of one call on the socket: a request framed (by hand
 * for requests of ops, through wire.c) and a response received whole with
 * one recv in the common case. The call itself (ids, closes riding along,
 * what a broken stream means) is client.c's. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client_impl.h"
#include "frame.h"
#include "wire.h"

/* Room for most responses at once: one recv takes header and body. */
#define CLIENT_RBUF (64u << 10)

/* Receive one response frame into c->rbuf: one recv when the whole frame
 * has arrived (the common case), more only for what had not. Bytes after
 * the frame are the next response's when more says one follows (kept in
 * rbuf[rnext..+rleft) for the next call), else a protocol error: with one
 * request in flight (invariant 1) nothing may follow the frame. 0 with
 * *payload (in c->rbuf, valid until the next call) and *len set; -ENOMEM,
 * -EMSGSIZE (announced length over MC_FRAME_MAX), -EPROTO (bytes after
 * the frame), -ECONNRESET (EOF), or the socket's errno. */
int client_frame_recv(mc_client *c, const uint8_t **payload, size_t *len, bool more)
{
	size_t have = 0, need = MC_FRAME_HDR;
	bool sized = false;

	if (c->rcap > 4 * CLIENT_RBUF && c->rleft == 0) {
		/* A large reply came before: do not keep its buffer. */
		free(c->rbuf);
		c->rbuf = NULL;
		c->rcap = 0;
	}
	if (!c->rbuf) {
		c->rbuf = malloc(CLIENT_RBUF);
		if (!c->rbuf)
			return -ENOMEM;
		c->rcap = CLIENT_RBUF;
	}
	if (c->rleft > 0) {
		/* The start of this response came with the previous one. */
		memmove(c->rbuf, c->rbuf + c->rnext, c->rleft);
		have = c->rleft;
		c->rleft = 0;
	}
	for (;;) {
		if (!sized && have >= MC_FRAME_HDR) {
			uint32_t fl = frame_get_len(c->rbuf);

			if (fl > MC_FRAME_MAX)
				return -EMSGSIZE;
			sized = true;
			need = MC_FRAME_HDR + (size_t)fl;
			if (need > c->rcap) {
				uint8_t *nb = realloc(c->rbuf, need);

				if (!nb)
					return -ENOMEM;
				c->rbuf = nb;
				c->rcap = need;
			}
		}
		if (sized && have >= need)
			break;
		ssize_t n = recv(c->sock, c->rbuf + have, c->rcap - have, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		have += (size_t)n;
	}
	if (have > need) {
		if (!more)
			return -EPROTO;
		c->rnext = need;
		c->rleft = have - need;
	}
	*payload = c->rbuf + MC_FRAME_HDR;
	*len = need - MC_FRAME_HDR;
	return 0;
}

/* Frame req into a new buffer: by hand (wire.c) for requests of ops, the
 * same bytes protobuf-c would make, in one pass. As frame_pack_request. */
int client_frame_pack(const Mcache__Request *req, uint8_t **out, size_t *len)
{
	size_t bound = wire_request_bound(req);
	uint8_t *buf, *end;

	if (bound == SIZE_MAX)
		return frame_pack_request(req, MC_FRAME_MAX, out, len);
	buf = malloc(MC_FRAME_HDR + bound);
	if (!buf)
		return -ENOMEM;
	end = wire_request_pack(req, buf + MC_FRAME_HDR);
	if (!end) {
		free(buf);
		return frame_pack_request(req, MC_FRAME_MAX, out, len);
	}
	size_t n = (size_t)(end - buf) - MC_FRAME_HDR;
	if (n > MC_FRAME_MAX) {
		free(buf);
		return -EMSGSIZE;
	}
	frame_put_len(buf, (uint32_t)n);
	*out = buf;
	*len = MC_FRAME_HDR + n;
	return 0;
}
