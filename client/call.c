/* call.c - the bytes of a call on the socket: a request framed (by hand
 * for requests of ops, through wire.c) and sent, a response received whole
 * with one recv in the common case and checked against its request, and
 * a run of requests pipelined two in flight (client_call_pipelined). What
 * a call means (closes riding along, the one-call path) is client.c's. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client_impl.h"
#include "frame.h"
#include "wire.h"

/* Room for most responses at once: one recv takes header and body. */
#define CLIENT_RBUF (64u << 10)

/* Wait until the socket has bytes to read: first, once a response
 * (*polled), by polling for up to the window (mc_busypoll.h), then in
 * poll(2). Not in a blocking recv: a blocked recv is woken whenever the
 * server reads our request (the socket's write-space wakeup, which poll
 * filters out), only to sleep again, and that wakeup preempts the server
 * in the middle of its read. 0 or -errno. */
static int reply_wait(mc_client *c, bool *polled)
{
	if (!*polled) {
		*polled = true;
		if (mc_busypoll_fd(&c->bp, c->sock))
			return 0;
	}
	return mc_busypoll_sleep_fd(&c->bp, c->sock);
}

/* Receive one response frame into c->rbuf: one recv when the whole frame
 * has arrived (the common case), more only for what had not; a recv that
 * finds nothing waits in poll for the reply (see below). Bytes after
 * the frame are the next response's when more says one follows (kept in
 * rbuf[rnext..+rleft) for the next call), else a protocol error: with one
 * request in flight (invariant 1) nothing may follow the frame. 0 with
 * *payload (in c->rbuf, valid until the next call) and *len set; -ENOMEM,
 * -EMSGSIZE (announced length over MC_FRAME_MAX), -EPROTO (bytes after
 * the frame), -ECONNRESET (EOF), or the socket's errno. */
int client_frame_recv(mc_client *c, const uint8_t **payload, size_t *len, bool more)
{
	size_t have = 0, need = MC_FRAME_HDR;
	bool sized = false, polled = false;
	int saved = errno;           /* a call that succeeds leaves errno alone */

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
		ssize_t n = recv(c->sock, c->rbuf + have, c->rcap - have, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int err = reply_wait(c, &polled);

			if (err < 0)
				return err;
			errno = saved;
			continue;
		}
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

/* client_frame_pack; basic: the ops set no member but code, path, path2
 * and mode (wire_request_pack_basic). */
static int frame_pack(const Mcache__Request *req, bool basic, uint8_t **out, size_t *len)
{
	size_t bound = wire_request_bound(req);
	uint8_t *buf, *end;

	if (bound == SIZE_MAX)
		return frame_pack_request(req, MC_FRAME_MAX, out, len);
	buf = malloc(MC_FRAME_HDR + bound);
	if (!buf)
		return -ENOMEM;
	end = basic ? wire_request_pack_basic(req, buf + MC_FRAME_HDR)
	            : wire_request_pack(req, buf + MC_FRAME_HDR);
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

/* Frame req into a new buffer: by hand (wire.c) for requests of ops, the
 * same bytes protobuf-c would make, in one pass. As frame_pack_request. */
int client_frame_pack(const Mcache__Request *req, uint8_t **out, size_t *len)
{
	return frame_pack(req, false, out, len);
}

/* ---- requests out, responses in ---------------------------------------- */

static int call_send(mc_client *c, Mcache__Op **ops, size_t n, bool basic, uint64_t *id)
{
	Mcache__Request req = MCACHE__REQUEST__INIT;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	err = client_check(c);
	if (err < 0)
		return err;
	client_count(c, offsetof(struct mc_client_slot, rpcs));
	req.id = c->next_id++;
	req.n_ops = n;
	req.ops = ops;
	err = frame_pack(&req, basic, &buf, &len);
	if (err < 0)
		return err == -EMSGSIZE ? -E2BIG : err;
	err = frame_write(c->sock, buf, len, -1);
	free(buf);
	if (err < 0)
		return client_transport_error(c, err);
	*id = req.id;
	return 0;
}

int client_call_send(mc_client *c, Mcache__Op **ops, size_t n, uint64_t *id)
{
	return call_send(c, ops, n, false, id);
}

/* client_call_recv; with errs (room for n), a response of errnos alone is
 * read into it without unpacking (wire_response_errs), checked as the
 * results are: 1 then, 0 with *out otherwise. */
static int call_recv(mc_client *c, uint64_t id, size_t n, bool more, int32_t *errs,
                     Mcache__Response **out)
{
	Mcache__Response *rsp = NULL;
	const uint8_t *payload = NULL;
	size_t len;
	uint64_t rid;
	int err;

	err = client_frame_recv(c, &payload, &len, more);
	if (err < 0)
		return client_transport_error(c, err);
	if (errs && wire_response_errs(payload, len, &rid, errs, n) == 0) {
		bool bad = rid != id;

		for (size_t i = 0; i < n; i++)
			bad |= errs[i] < 0;
		if (bad) {
			c->broken = true;
			return -EPROTO;
		}
		return 1;
	}
	rsp = wire_response_unpack(payload, len);
	if (!rsp)
		rsp = mcache__response__unpack(NULL, len, payload);
	if (!rsp) {
		/* The frame boundary held, but we cannot tell whose answer it was. */
		c->broken = true;
		return -EPROTO;
	}
	if (rsp->err > 0) {
		/* Whole-request error: the server closes the connection. */
		err = -rsp->err;
		c->broken = true;
		goto fail;
	}
	if (rsp->id != id) {
		c->broken = true;
		err = -EPROTO;
		goto fail;
	}
	/* An answer of the wrong shape: the server did something with the
	 * request, but we cannot tell what. */
	if (rsp->n_results != n) {
		c->broken = true;
		err = -EPROTO;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if (!rsp->results[i] || rsp->results[i]->err < 0) {
			c->broken = true;
			err = -EPROTO;
			goto fail;
		}
	}
	*out = rsp;
	return 0;
fail:
	mcache__response__free_unpacked(rsp, NULL);
	return err;
}

int client_call_recv(mc_client *c, uint64_t id, size_t n, bool more, Mcache__Response **out)
{
	return call_recv(c, id, n, more, NULL, out);
}

int client_call_recv_errs(mc_client *c, uint64_t id, size_t n, int32_t *errs,
                          Mcache__Response **out)
{
	return call_recv(c, id, n, false, errs, out);
}

int client_call_pipelined(mc_client *c, Mcache__Op **ops, size_t n, size_t chunk, bool basic,
                          void (*fn)(void *arg, size_t off, size_t k, const int32_t *errs,
                                     Mcache__Response *rsp),
                          void *arg)
{
	size_t sent = 0, got = 0, nin = 0;
	uint64_t ids[2];
	int err = 0;

	if (c->max_ops && chunk > c->max_ops)
		chunk = c->max_ops;
	int32_t *errs = malloc((chunk < n ? chunk : n) * sizeof(*errs) + 1);
	if (!errs)
		return -ENOMEM;
	Mcache__Cred *as = ops_stamp(c, ops, n);
	/* Stamped credentials or a path limit are members too. */
	basic = basic && !as && !c->path_max;
	client_lock(c);
	if (c->nclose > 0 && client_check(c) == 0)
		err = do_client_flush_closes(c);
	/* Invariant 1, relaxed here alone: two requests in flight at most,
	 * their responses read in order under mu. */
	while (err == 0 && got < n) {
		if (sent < n && nin < 2) {
			size_t k = n - sent < chunk ? n - sent : chunk;
			err = call_send(c, ops + sent, k, basic, &ids[(sent / chunk) % 2]);
			if (err < 0)
				break;
			sent += k;
			nin++;
			if (nin < 2 && sent < n)
				continue;       /* the next one out before this one's answer */
		}
		size_t k = n - got < chunk ? n - got : chunk;
		Mcache__Response *rsp = NULL;
		err = call_recv(c, ids[(got / chunk) % 2], k, sent > got + k, errs, &rsp);
		if (err < 0)
			break;
		fn(arg, got, k, err ? errs : NULL, rsp);
		err = 0;
		got += k;
		nin--;
	}
	if (err < 0 && nin > 0 && !c->broken) {
		/* A request could not be sent (packing) while one is out: its
		 * answer is read and given, so the stream stays in step. */
		size_t k = n - got < chunk ? n - got : chunk;
		Mcache__Response *rsp = NULL;
		int rc = call_recv(c, ids[(got / chunk) % 2], k, false, errs, &rsp);
		if (rc >= 0)
			fn(arg, got, k, rc ? errs : NULL, rsp);
	}
	client_unlock(c);
	ops_unstamp(ops, n, as);
	free(errs);
	return err;
}
