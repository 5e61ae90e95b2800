/* frame.c - the wire frame codec: pack a message behind its 4-byte length,
 * and write or read one frame on a blocking socket (with an optional fd). */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room for a few descriptors: a misbehaving peer may send more than one;
 * the kernel discards those that do not fit, we close the extra ones. */
#define FRAME_MAX_FDS 8

static int frame_pack(const ProtobufCMessage *msg, size_t max, uint8_t **out, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (n > max || n > UINT32_MAX)
		return -EMSGSIZE;
	buf = malloc(MC_FRAME_HDR + n);
	if (!buf)
		return -ENOMEM;
	frame_put_len(buf, (uint32_t)n);
	if (protobuf_c_message_pack(msg, buf + MC_FRAME_HDR) != n) {
		free(buf);
		return -EPROTO;
	}
	*out = buf;
	*len = MC_FRAME_HDR + n;
	return 0;
}

int frame_pack_request(const Mcache__Request *req, size_t max, uint8_t **out, size_t *len)
{
	return frame_pack(&req->base, max, out, len);
}

int frame_pack_response(const Mcache__Response *rsp, size_t max, uint8_t **out, size_t *len)
{
	return frame_pack(&rsp->base, max, out, len);
}

int frame_write(int sock, const uint8_t *buf, size_t len, int passfd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	size_t off = 0;

	while (off < len) {
		struct iovec iov = { .iov_base = (void *)(buf + off), .iov_len = len - off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (passfd >= 0) {
			struct cmsghdr *c;

			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.b;
			mh.msg_controllen = sizeof(ctl.b);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &passfd, sizeof(int));
		}
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* The descriptor went with the first byte sent. */
		passfd = -1;
		off += (size_t)n;
	}
	return 0;
}

/* Collect descriptors from a received control buffer: they fill the free
 * (-1) places of fds[0..nfds) in order; any beyond those are closed. */
static void frame_take_fds(struct msghdr *mh, int *fds, size_t nfds)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int x;
			size_t k = 0;

			memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			while (k < nfds && fds[k] >= 0)
				k++;
			if (k < nfds)
				fds[k] = x;
			else
				close(x);
		}
	}
}

/* Read exactly len bytes; every read is a recvmsg that may carry fds. */
static int frame_recv_all(int sock, uint8_t *buf, size_t len, int *fds, size_t nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * FRAME_MAX_FDS)];
	} ctl;
	size_t off = 0;

	while (off < len) {
		struct iovec iov = { .iov_base = buf + off, .iov_len = len - off };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
		};
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (mh.msg_controllen > 0)
			frame_take_fds(&mh, fds, nfds);
		if (n == 0)
			return -ECONNRESET;
		off += (size_t)n;
	}
	return 0;
}

int frame_read_fds(int sock, size_t max, uint8_t **payload, size_t *len, int *fds,
                   size_t nfds)
{
	uint8_t hdr[MC_FRAME_HDR];
	uint8_t *buf = NULL;
	uint32_t n;
	int got[FRAME_MAX_FDS];
	int err;

	for (size_t i = 0; i < FRAME_MAX_FDS; i++)
		got[i] = -1;
	if (nfds > FRAME_MAX_FDS)
		nfds = FRAME_MAX_FDS;
	err = frame_recv_all(sock, hdr, sizeof(hdr), got, nfds);
	if (err)
		goto fail;
	n = frame_get_len(hdr);
	if (n > max) {
		err = -EMSGSIZE;
		goto fail;
	}
	if (n == 0) {
		err = -EPROTO;
		goto fail;
	}
	buf = malloc(n);
	if (!buf) {
		err = -ENOMEM;
		goto fail;
	}
	err = frame_recv_all(sock, buf, n, got, nfds);
	if (err)
		goto fail;
	*payload = buf;
	*len = n;
	for (size_t i = 0; i < nfds; i++)
		fds[i] = got[i];
	return 0;
fail:
	free(buf);
	for (size_t i = 0; i < nfds; i++)
		if (got[i] >= 0)
			close(got[i]);
	return err;
}

int frame_read(int sock, size_t max, uint8_t **payload, size_t *len, int *passfd)
{
	return frame_read_fds(sock, max, payload, len, passfd, passfd ? 1 : 0);
}
