/* frame.h - the wire frame shared by mcached and libmcache: a 4-byte
 * little-endian length followed by one packed protobuf message.
 *
 * The blocking helpers here serve the client and the tests; the server reads
 * frames from libevent buffers with frame_get_len() and the same limits.
 * All functions return 0 (or a length) on success and a negative errno on
 * failure; out-parameters are set only on success.
 */
#ifndef MC_FRAME_H
#define MC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "mcache.pb-c.h"

#define MC_PROTO_VERSION 1u
#define MC_FRAME_HDR     4u
/* Largest frame either side accepts unless configured otherwise. */
#define MC_FRAME_MAX     (16u << 20)

static inline void frame_put_len(uint8_t p[4], uint32_t len)
{
	p[0] = (uint8_t)len;
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)(len >> 16);
	p[3] = (uint8_t)(len >> 24);
}

static inline uint32_t frame_get_len(const uint8_t p[4])
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Pack a Request/Response into a newly malloc'd buffer that starts with the
 * 4-byte header. On success *out (caller frees) and *len (header included) are
 * set. -ENOMEM on allocation failure, -EMSGSIZE if the message exceeds max. */
int frame_pack_request(const Mcache__Request *req, size_t max, uint8_t **out, size_t *len);
int frame_pack_response(const Mcache__Response *rsp, size_t max, uint8_t **out, size_t *len);

/* Write all of buf to a blocking socket, retrying on EINTR and short writes.
 * When passfd >= 0 it travels with the first byte (SCM_RIGHTS).
 * -EPIPE/-ECONNRESET/... from the socket. */
int frame_write(int sock, const uint8_t *buf, size_t len, int passfd);

/* Read one frame from a blocking socket. On success *payload is a malloc'd
 * buffer of *len bytes (header stripped, caller frees) and, when passfd is not
 * NULL, *passfd is a received descriptor or -1. Errors: -ECONNRESET when the
 * peer closed, -EMSGSIZE when the announced length exceeds max (nothing more
 * is read), -ENOMEM, or the socket's errno. */
int frame_read(int sock, size_t max, uint8_t **payload, size_t *len, int *passfd);
/* frame_read() keeping up to nfds (at most 8) received descriptors in
 * fds[] in the order they came, -1 where none came; any more are closed. */
int frame_read_fds(int sock, size_t max, uint8_t **payload, size_t *len, int *fds,
                   size_t nfds);

#endif
