/* watch.c - a watch connection (mc_watch_*, mcache.h) and mount tags.
 *
 * A watch is a client whose connection, once OP_WATCH subscribed it, also
 * carries pushes (Responses of id 0, proto/mc_watch.h) between the replies
 * to its acknowledgements, which are sent without waiting and whose
 * replies are dropped as they come. So it is not used for calls after
 * the subscription: its frames are read here, several per recv. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client_impl.h"
#include "frame.h"
#include "mc_watch.h"

struct mc_watch {
	mc_client *c;
	uint64_t id;
	uint64_t next_id;            /* ids of acknowledgements (never 0) */
	uint8_t *buf;                /* bytes received, not yet parsed */
	size_t len, cap;
};

mc_watch *mc_watch_open(const char *socket_path)
{
	mc_watch *w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->c = mc_connect(socket_path);
	if (!w->c) {
		int e = errno;
		free(w);
		errno = e;
		return NULL;
	}
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_WATCH;
	op.flags = MC_WATCH_SUBSCRIBE;
	int err = client_op(w->c, &op, &rsp);
	if (err < 0) {
		mc_disconnect(w->c);
		free(w);
		return client_fail(err), NULL;
	}
	w->id = rsp->results[0]->cookie;
	mcache__response__free_unpacked(rsp, NULL);
	w->next_id = 1;
	return w;
}

uint64_t mc_watch_id(const mc_watch *w)
{
	return w ? w->id : 0;
}

int mc_watch_fd(const mc_watch *w)
{
	return w ? w->c->sock : -1;
}

/* Call fn for every event of a push's data. 0 or -EPROTO. */
static int watch_events(const uint8_t *d, size_t len,
                        void (*fn)(void *arg, const struct mc_watch_event *ev), void *arg)
{
	size_t pos = 0;
	struct mc_watch_event ev;
	unsigned kind;
	int rc;

	while ((rc = mc_wev_next(d, len, &pos, &kind, &ev.ino, &ev.name, &ev.namelen)) == 1) {
		ev.kind = kind == MC_WEV_ATTR ? MC_WATCH_ATTR : MC_WATCH_ENTRY;
		fn(arg, &ev);
	}
	return rc < 0 ? -EPROTO : 0;
}

/* Parse the complete frames buffered: pushes to fn, replies dropped.
 * The number of pushes, or -EPROTO. */
static int watch_parse(mc_watch *w, void (*fn)(void *arg, const struct mc_watch_event *ev),
                       void *arg, uint64_t *seq)
{
	size_t pos = 0;
	int n = 0, rc = 0;

	while (w->len - pos >= MC_FRAME_HDR) {
		uint32_t fl = frame_get_len(w->buf + pos);
		if (fl > MC_FRAME_MAX) {
			rc = -EPROTO;
			break;
		}
		if (w->len - pos - MC_FRAME_HDR < fl)
			break;
		Mcache__Response *rsp =
			mcache__response__unpack(NULL, fl, w->buf + pos + MC_FRAME_HDR);
		pos += MC_FRAME_HDR + fl;
		if (!rsp) {
			rc = -EPROTO;
			break;
		}
		if (rsp->err) {
			rc = -ECONNRESET;    /* the server gave up on the connection */
		} else if (rsp->id == 0) {
			if (rsp->n_results != 1)
				rc = -EPROTO;
			else
				rc = watch_events(rsp->results[0]->data.data, rsp->results[0]->data.len,
				                  fn, arg);
			if (rc == 0) {
				/* 0: a part of a long batch, more to come */
				if (rsp->results[0]->cookie)
					*seq = rsp->results[0]->cookie;
				n++;
			}
		}
		mcache__response__free_unpacked(rsp, NULL);
		if (rc < 0)
			break;
	}
	memmove(w->buf, w->buf + pos, w->len - pos);
	w->len -= pos;
	return rc < 0 ? rc : n;
}

int mc_watch_read(mc_watch *w, int timeout_ms,
                  void (*fn)(void *arg, const struct mc_watch_event *ev), void *arg,
                  uint64_t *seq)
{
	struct pollfd p = { .fd = w->c->sock, .events = POLLIN };
	int rc = poll(&p, 1, timeout_ms);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return 0;
	for (;;) {
		if (w->cap - w->len < 4096) {
			size_t cap = w->cap ? w->cap * 2 : 65536;
			uint8_t *b = realloc(w->buf, cap);
			if (!b)
				return client_fail(-ENOMEM);
			w->buf = b;
			w->cap = cap;
		}
		ssize_t k = recv(w->c->sock, w->buf + w->len, w->cap - w->len, MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (k < 0)
			return -1;
		if (k == 0)
			return client_fail(-ECONNRESET);
		w->len += (size_t)k;
		if (w->len < w->cap)
			break;               /* took all there was */
	}
	rc = watch_parse(w, fn, arg, seq);
	return rc < 0 ? client_fail(rc) : rc;
}

int mc_watch_ack(mc_watch *w, uint64_t seq)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Op *ops = &op;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	uint8_t *buf;
	size_t len;

	op.code = MCACHE__OP_CODE__OP_WATCH;
	op.flags = MC_WATCH_ACK;
	op.cookie = seq;
	req.id = w->next_id++;
	req.n_ops = 1;
	req.ops = &ops;
	int err = client_frame_pack(&req, &buf, &len);
	if (err < 0)
		return client_fail(err);
	err = frame_write(w->c->sock, buf, len, -1);
	free(buf);
	return err < 0 ? client_fail(err) : 0;
}

void mc_watch_close(mc_watch *w)
{
	if (!w)
		return;
	mc_disconnect(w->c);
	free(w->buf);
	free(w);
}

int mc_mount_tag(mc_client *c, uint64_t id)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_WATCH;
	op.flags = MC_WATCH_TAG;
	op.cookie = id;
	int err = client_op_simple(c, &op);
	return err < 0 ? client_fail(err) : 0;
}
