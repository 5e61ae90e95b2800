/* conn.c - one client connection of the RPC server, on its worker's
 * event loop: reads frames, answers the Hello (passing the segment fds),
 * runs requests' ops for the connection's session and writes the replies,
 * holding one until its commit is durable.
 *
 * Connection states (struct conn.st):
 *
 *      conn_new          conn_hello (good Hello)
 *   ─────────► HELLO ──────────────────────► READY ◄──────────┐
 *                │                           │  │             │ conn_done_cb
 *                │ bad frame / version       │  │ wait_seq!=0 │ (held reply
 *                ▼                           │  └──► WAITING ─┘  written)
 *             CLOSING ◄──────────────────────┘ bad frame  │
 *       (conn_close_after_flush: reply         │          │ EOF / error
 *        drains, then conn_close)              ▼          ▼
 *                                         conn_close: fd, session released;
 *                                         struct freed when refs reach 0
 *
 * Invariants:
 *  1. A conn, its bufferevent, session and done-event are touched only by its
 *     worker thread. The one exception is conn_commit_cb, which runs on the
 *     committer thread and only stores wait_err and activates ev_done.
 *  2. A conn holds one reference for being open (bev != NULL) and one while a
 *     commit wait is outstanding; it is freed when both are gone, so a
 *     connection closed while waiting lives until its callback has run.
 *  3. Replies leave in request order: while WAITING the conn does not read
 *     and does not parse input already buffered; conn_done_cb writes the held
 *     reply and only then resumes parsing.
 *  4. The conn is counted in r->nconns (rpc.c invariant 1) until conn_close,
 *     and in w->nalloc, on w->conns, until it is freed.
 */
#include "conn.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "commit.h"
#include "frame.h"
#include "log.h"
#include "mcd.h"
#include "ops.h"
#include "stats.h"

/* Time a closing connection gets to take its last reply. */
#define CONN_FLUSH_TIMEOUT_S 5
/* Stop reading a connection whose unsent replies exceed this many bytes
 * (or max_frame, if larger) until half of them have drained. */
#define CONN_OUT_HIGH (4u << 20)

enum conn_state {
	CONN_HELLO,     /* waiting for the Hello request */
	CONN_READY,     /* reading and answering requests */
	CONN_WAITING,   /* reply held until a commit is durable */
	CONN_CLOSING,   /* last reply draining, then close */
	CONN_CLOSED,    /* fd gone, struct kept for the commit callback */
};

struct conn {
	struct worker *w;
	struct conn *prev, *next;    /* w->conns */
	struct bufferevent *bev;     /* NULL once closed */
	int fd;
	enum conn_state st;
	int refs;                    /* worker thread only; invariant 2 */
	bool throttled;              /* reading paused for output backpressure */
	struct cred cred;
	pid_t pid;
	struct session *sess;
	struct event *ev_done;       /* activated by conn_commit_cb */
	_Atomic int wait_err;        /* commit result, set before ev_done fires */
	/* The reply held during WAITING. */
	uint8_t *held;
	size_t held_len;
	uint64_t held_id;
	size_t held_nres;
};

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_write_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);
static void conn_process(struct conn *c);
static void conn_commit_cb(void *arg, int err);
static void conn_done_cb(evutil_socket_t fd, short what, void *arg);

static void stat_inc(_Atomic uint64_t *v)
{
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* Drop a reference; the last one unlinks and frees c (invariant 2) and, at
 * shutdown, ends the worker's loop with its last conn (rpc.c invariant 2). */
static void conn_unref(struct conn *c)
{
	struct worker *w = c->w;

	if (--c->refs > 0)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	w->nalloc--;
	event_free(c->ev_done);
	free(c->held);
	free(c);
	if (w->exiting && w->nalloc == 0)
		event_base_loopexit(w->base, NULL);
}

/* Release the fd and the session; the struct follows when unreferenced. */
static void conn_close(struct conn *c)
{
	if (!c->bev)
		return;
	bufferevent_free(c->bev);
	c->bev = NULL;
	c->fd = -1;
	if (c->sess)
		session_free(c->sess);
	c->sess = NULL;
	c->st = CONN_CLOSED;
	atomic_fetch_sub(&c->w->r->nconns, 1);
	conn_unref(c);
}

/* One nonblocking attempt to send what is queued, then close: for shutdown. */
static void conn_close_now(struct conn *c)
{
	if (c->bev) {
		struct evbuffer *out = bufferevent_get_output(c->bev);

		/* A socket bufferevent freezes its output's start for itself;
		 * it is freed right after, so write past it. */
		evbuffer_unfreeze(out, 1);
		while (evbuffer_get_length(out) > 0 && evbuffer_write(out, c->fd) > 0)
			;
	}
	conn_close(c);
}

static void conn_close_after_flush(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct timeval tv = { .tv_sec = CONN_FLUSH_TIMEOUT_S };

	c->st = CONN_CLOSING;
	bufferevent_disable(c->bev, EV_READ);
	evbuffer_drain(in, evbuffer_get_length(in));
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 || c->w->exiting) {
		conn_close_now(c);
		return;
	}
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_set_timeouts(c->bev, NULL, &tv);
	bufferevent_enable(c->bev, EV_WRITE);
}

/* Pack rsp onto the connection's output. 0 or -errno. */
static int conn_send(struct conn *c, const Mcache__Response *rsp)
{
	uint8_t *buf;
	size_t len;
	int err;

	err = frame_pack_response(rsp, UINT32_MAX, &buf, &len);
	if (err)
		return err;
	err = bufferevent_write(c->bev, buf, len) ? -ENOMEM : 0;
	free(buf);
	return err;
}

/* Answer a whole-request error (err > 0) and close once it is sent. */
static void conn_fail(struct conn *c, uint64_t id, int err, const char *msg)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;

	rsp.id = id;
	rsp.err = err;
	rsp.message = (char *)msg;
	log_debug("rpc: pid %d: %s", (int)c->pid, msg);
	conn_send(c, &rsp);
	conn_close_after_flush(c);
}

/* Queue a packed reply (NULL: it could not be built); if that fails,
 * answer ENOMEM and close once that is sent. 0 or -ENOMEM. */
static int conn_queue(struct conn *c, uint64_t id, const uint8_t *buf, size_t len)
{
	if (buf && bufferevent_write(c->bev, buf, len) == 0)
		return 0;
	conn_fail(c, id, ENOMEM, "out of memory");
	return -ENOMEM;
}

/* conn_fail for a frame that breaks the protocol: counted as a bad frame. */
static void conn_bad_frame(struct conn *c, uint64_t id, int err, const char *msg)
{
	stat_inc(&c->w->stats.bad_frames);
	conn_fail(c, id, err, msg);
}

/* A reply of n results that all carry err (EIO after a failed commit,
 * EMSGSIZE for a reply too large to send). */
static int conn_pack_all_err(uint64_t id, size_t n, int err, uint8_t **out, size_t *len)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__Result *res = NULL, **resp = NULL;
	int rc = -ENOMEM;

	if (n > 0) {
		res = calloc(n, sizeof(*res));
		resp = calloc(n, sizeof(*resp));
		if (!res || !resp)
			goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		mcache__result__init(&res[i]);
		res[i].err = err;
		resp[i] = &res[i];
	}
	rsp.id = id;
	rsp.n_results = n;
	rsp.results = resp;
	rc = frame_pack_response(&rsp, UINT32_MAX, out, len);
fail:
	free(res);
	free(resp);
	return rc;
}

#ifdef SO_PEERGROUPS
/* Keep the groups in the sl bytes at groups: the first SESSION_MAX_GROUPS
 * if there are more. */
static void conn_cred_groups(struct cred *cred, const gid_t *groups, socklen_t sl)
{
	size_t n = sl / sizeof(gid_t);

	if (n > SESSION_MAX_GROUPS)
		n = SESSION_MAX_GROUPS;
	memcpy(cred->groups, groups, n * sizeof(gid_t));
	cred->ngroups = (int)n;
}
#endif

/* Read and clamp the peer's credentials. */
static int conn_read_cred(int fd, struct cred *cred, pid_t *pid)
{
	struct ucred uc;
	socklen_t sl = sizeof(uc);
	gid_t groups[256];

	memset(cred, 0, sizeof(*cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl) < 0)
		return -errno;
	cred->uid = uc.uid;
	cred->gid = uc.gid;
	cred->pid = uc.pid;
	*pid = uc.pid;
#ifdef SO_PEERGROUPS
	sl = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &sl) == 0) {
		conn_cred_groups(cred, groups, sl);
	} else if (errno == ERANGE) {
		/* More than fit: sl now says how many; take the first ones. */
		size_t need = sl;
		gid_t *big = malloc(need);

		if (big && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, big, &sl) == 0)
			conn_cred_groups(cred, big, sl);
		free(big);
	}
#else
	(void)groups;
#endif
	return 0;
}

int conn_new(struct worker *w, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	int err = -ENOMEM;

	if (!c)
		goto fail;
	c->w = w;
	c->fd = fd;
	err = conn_read_cred(fd, &c->cred, &c->pid);
	if (err)
		goto fail;
	err = -ENOMEM;
	c->ev_done = event_new(w->base, -1, 0, conn_done_cb, c);
	if (!c->ev_done)
		goto fail;
	c->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev)
		goto fail;
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	if (w->r->o.idle_timeout_s > 0) {
		struct timeval tv = { .tv_sec = w->r->o.idle_timeout_s };

		bufferevent_set_timeouts(c->bev, &tv, NULL);
	}
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0)
		goto fail;
	c->st = CONN_HELLO;
	c->refs = 1;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	w->nalloc++;
	stat_inc(&w->stats.connections);
	return 0;
fail:
	if (c && c->bev)
		bufferevent_free(c->bev); /* closes fd */
	else
		close(fd);
	if (c && c->ev_done)
		event_free(c->ev_done);
	free(c);
	return err;
}

/* Send the HelloReply with the segment fd in one sendmsg straight on the
 * socket (nothing else is queued yet); a short write's rest goes through
 * the bufferevent. */
static int conn_send_hello(struct conn *c, uint64_t id)
{
	const struct rpc_opts *o = &c->w->r->o;
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__HelloReply hr = MCACHE__HELLO_REPLY__INIT;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[2];
	size_t nfds = 0;
	uint8_t *buf;
	size_t len;
	ssize_t n;
	int err;

	hr.version = MC_PROTO_VERSION;
	hr.shm_version = o->shm_version;
	hr.shm_size = o->shm_size;
	if (o->shm_fd >= 0) {
		fds[nfds++] = o->shm_fd;
		if (o->area_fd >= 0) {
			fds[nfds++] = o->area_fd;
			hr.area_size = o->area_size;
			hr.client_slot = session_slot(c->sess);
		}
	}
	rsp.id = id;
	rsp.hello = &hr;
	err = frame_pack_response(&rsp, UINT32_MAX, &buf, &len);
	if (err)
		return err;
	iov.iov_base = buf;
	iov.iov_len = len;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		err = -errno;
		goto out;
	}
	if ((size_t)n < len && bufferevent_write(c->bev, buf + n, len - (size_t)n))
		err = -ENOMEM;
out:
	free(buf);
	return err;
}

static void conn_hello(struct conn *c, const Mcache__Request *req)
{
	struct rpc *r = c->w->r;
	int err;

	if (!req->hello) {
		conn_bad_frame(c, req->id, EPROTO, "the first request must be a hello");
		return;
	}
	if (req->hello->version != MC_PROTO_VERSION) {
		conn_fail(c, req->id, EPROTONOSUPPORT, "unsupported protocol version");
		return;
	}
	/* The session exists before the reply says yes. */
	c->sess = session_new(r->m, &c->cred);
	if (!c->sess) {
		conn_fail(c, req->id, ENOMEM, "out of memory");
		return;
	}
	err = conn_send_hello(c, req->id);
	if (err) {
		log_debug("rpc: pid %d: hello reply: %s", (int)c->pid, strerror(-err));
		conn_close(c);
		return;
	}
	c->st = CONN_READY;
	log_debug("rpc: pid %d uid %u connected", (int)c->pid, (unsigned)c->cred.uid);
}

/* Run a request's ops and queue (or hold) the reply. */
static void conn_request(struct conn *c, const Mcache__Request *req)
{
	struct worker *w = c->w;
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	struct op_out *outs = NULL;
	Mcache__Result **resp = NULL;
	uint64_t wait_seq = 0;
	size_t n = req->n_ops;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	if (req->hello) {
		conn_bad_frame(c, req->id, EPROTO, "hello sent twice");
		return;
	}
	stat_inc(&w->stats.requests);
	if (n > 0) {
		outs = calloc(n, sizeof(*outs));
		resp = calloc(n, sizeof(*resp));
		if (!outs || !resp) {
			free(outs);
			free(resp);
			conn_fail(c, req->id, ENOMEM, "out of memory");
			return;
		}
	}
	for (size_t i = 0; i < n; i++) {
		unsigned code = (unsigned)req->ops[i]->code;
		uint64_t t0 = mono_us();

		ops_exec(c->sess, req->ops[i], &outs[i]);
		if (code >= STATS_OPS)
			code = 0;
		stat_inc(&w->stats.ops[code]);
		if (outs[i].res.err)
			stat_inc(&w->stats.errors[code]);
		hist_add(&w->stats.op_us[code], mono_us() - t0);
		if (outs[i].wait_seq > wait_seq)
			wait_seq = outs[i].wait_seq;
		resp[i] = &outs[i].res;
	}
	rsp.id = req->id;
	rsp.n_results = n;
	rsp.results = resp;
	err = frame_pack_response(&rsp, w->r->o.max_frame, &buf, &len);
	for (size_t i = 0; i < n; i++)
		op_out_release(&outs[i]);
	free(outs);
	free(resp);
	if (err == -EMSGSIZE)
		err = conn_pack_all_err(req->id, n, EMSGSIZE, &buf, &len);
	if (err) {
		conn_fail(c, req->id, -err, "cannot build the reply");
		return;
	}
	if (wait_seq == 0) {
		conn_queue(c, req->id, buf, len);
		free(buf);
		return;
	}
	/* Hold the reply until wait_seq is durable (invariant 3). */
	c->held = buf;
	c->held_len = len;
	c->held_id = req->id;
	c->held_nres = n;
	c->st = CONN_WAITING;
	c->refs++;
	bufferevent_disable(c->bev, EV_READ);
	err = commit_wait_async(w->r->m->commit, wait_seq, conn_commit_cb, c);
	if (err)
		conn_commit_cb(c, err);
}

/* Committer thread (or inline): hand back to the worker (invariant 1). */
static void conn_commit_cb(void *arg, int err)
{
	struct conn *c = arg;

	atomic_store(&c->wait_err, err);
	event_active(c->ev_done, EV_READ, 0);
}

static void conn_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int err = atomic_load(&c->wait_err);
	uint8_t *buf = c->held;
	size_t len = c->held_len;

	(void)fd;
	(void)what;
	c->held = NULL;
	if (c->st == CONN_WAITING) {
		if (err < 0) {
			uint8_t *eb;
			size_t el;

			log_warn("rpc: commit failed (%s): replying EIO", strerror(-err));
			if (conn_pack_all_err(c->held_id, c->held_nres, EIO, &eb, &el) == 0) {
				free(buf);
				buf = eb;
				len = el;
			} else {
				free(buf);
				buf = NULL;
			}
		}
		c->st = CONN_READY;
		if (conn_queue(c, c->held_id, buf, len) == 0) {
			if (c->w->exiting)
				conn_close_now(c);
			else
				conn_process(c);
		}
	}
	free(buf);
	conn_unref(c);
}

/* Parse and answer the complete frames buffered, as long as the conn can. */
static void conn_process(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);
	uint32_t max = c->w->r->o.max_frame;
	size_t high = max > CONN_OUT_HIGH ? max : CONN_OUT_HIGH;

	c->refs++;                        /* replies may close c under us */
	while (c->st == CONN_HELLO || c->st == CONN_READY) {
		uint8_t hdr[MC_FRAME_HDR];
		Mcache__Request *req;
		uint8_t *p;
		uint32_t n;

		if (evbuffer_copyout(in, hdr, sizeof(hdr)) < (ssize_t)sizeof(hdr))
			break;
		n = frame_get_len(hdr);
		if (n > max) {
			conn_bad_frame(c, 0, EMSGSIZE, "frame larger than the server's maximum");
			break;
		}
		if (n == 0) {
			conn_bad_frame(c, 0, EPROTO, "empty frame");
			break;
		}
		if (evbuffer_get_length(in) < MC_FRAME_HDR + (size_t)n)
			break;
		p = evbuffer_pullup(in, MC_FRAME_HDR + (ssize_t)n);
		req = p ? mcache__request__unpack(NULL, n, p + MC_FRAME_HDR) : NULL;
		evbuffer_drain(in, MC_FRAME_HDR + (size_t)n);
		if (!req) {
			conn_bad_frame(c, 0, EPROTO, "malformed frame");
			break;
		}
		if (c->st == CONN_HELLO)
			conn_hello(c, req);
		else
			conn_request(c, req);
		mcache__request__free_unpacked(req, NULL);
	}
	if (c->st != CONN_READY && c->st != CONN_HELLO)
		goto out;
	/* Backpressure: a peer that does not read its replies stops being read. */
	if (evbuffer_get_length(out) > high) {
		c->throttled = true;
		bufferevent_setwatermark(c->bev, EV_WRITE, high / 2, 0);
		bufferevent_disable(c->bev, EV_READ);
	} else if (!c->throttled) {
		bufferevent_enable(c->bev, EV_READ);
	}
out:
	conn_unref(c);
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_process(arg);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->st == CONN_CLOSING) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_close(c);
		return;
	}
	if (c->throttled) {
		c->throttled = false;
		bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
		conn_process(c);
	}
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_TIMEOUT)
		log_debug("rpc: pid %d: %s timeout", (int)c->pid,
			  (what & BEV_EVENT_READING) ? "idle" : "write");
	/* A peer that shut down its side after its last request still gets
	 * the replies already queued. */
	if ((what & BEV_EVENT_EOF) && c->st == CONN_READY &&
	    evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
		conn_close_after_flush(c);
		return;
	}
	/* EOF, error or timeout: the connection is over, even while WAITING
	 * (the struct outlives it until the commit callback, invariant 2). */
	conn_close(c);
}

void conn_close_all(struct worker *w)
{
	for (struct conn *c = w->conns, *nx; c; c = nx) {
		nx = c->next;             /* closing c frees at most c */
		if (c->st != CONN_WAITING)
			conn_close_now(c);
	}
}
