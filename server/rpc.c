/* rpc.c - the unix-socket RPC server: an acceptor thread hands connections
 * round-robin to worker threads, each running its own event_base; a worker
 * parses frames, runs ops for the connection's session and writes replies.
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
 *  4. r->nconns counts connections from accept until conn_close (queued to a
 *     worker included); it is what max_conns is checked against.
 *  5. A worker exits only after rpc_stop asked it to and no conn of its own
 *     is left allocated (waiting callbacks have all come back).
 */
#include "rpc.h"

#include <assert.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "frame.h"
#include "log.h"
#include "mcd.h"
#include "ops.h"
#include "stats.h"

/* Time a closing connection gets to take its last reply. */
#define RPC_FLUSH_TIMEOUT_S 5
/* Stop reading a connection whose unsent replies exceed this many bytes
 * (or max_frame, if larger) until half of them have drained. */
#define RPC_OUT_HIGH (4u << 20)

enum conn_state {
	CONN_HELLO,     /* waiting for the Hello request */
	CONN_READY,     /* reading and answering requests */
	CONN_WAITING,   /* reply held until a commit is durable */
	CONN_CLOSING,   /* last reply draining, then close */
	CONN_CLOSED,    /* fd gone, struct kept for the commit callback */
};

struct worker;

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

struct worker {
	struct rpc *r;
	pthread_t th;
	struct event_base *base;
	struct event *ev_notify;     /* activated by the acceptor and rpc_stop */
	pthread_mutex_t mu;          /* guards q, nq, cap, stop */
	int *q;                      /* accepted fds not yet taken */
	size_t nq, cap;
	bool stop;
	bool exiting;                /* worker thread only */
	struct conn *conns;          /* every allocated conn */
	unsigned nalloc;
	struct rpc_stats stats;
};

struct rpc {
	struct rpc_opts o;
	char *path;
	struct mcd *m;
	struct event_base *abase;
	struct evconnlistener *lev;
	struct event *ev_resume;     /* re-enables accept after EMFILE */
	struct event *ev_stop;       /* activated by rpc_stop: ends the acceptor loop */
	pthread_t ath;
	bool ath_started;
	struct worker *w;
	unsigned nw;                 /* workers started */
	unsigned next;               /* round robin, acceptor thread only */
	_Atomic unsigned nconns;
	_Atomic uint64_t refused;    /* over max_conns */
};

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_write_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);
static void conn_process(struct conn *c);

static void stat_inc(_Atomic uint64_t *v)
{
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- connections ---------------------------------------------------- */

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
	struct timeval tv = { .tv_sec = RPC_FLUSH_TIMEOUT_S };

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

/* A reply of n results that all carry err (EIO after a failed commit,
 * EMSGSIZE for a reply too large to send). */
static int rsp_pack_all_err(uint64_t id, size_t n, int err, uint8_t **out, size_t *len)
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
		size_t n = sl / sizeof(gid_t);

		if (n > SESSION_MAX_GROUPS)
			n = SESSION_MAX_GROUPS;
		memcpy(cred->groups, groups, n * sizeof(gid_t));
		cred->ngroups = (int)n;
	} else if (errno == ERANGE) {
		/* More than fit: sl now says how many; take the first ones. */
		size_t need = sl;
		gid_t *big = malloc(need);

		if (big && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, big, &sl) == 0) {
			size_t n = sl / sizeof(gid_t);

			if (n > SESSION_MAX_GROUPS)
				n = SESSION_MAX_GROUPS;
			memcpy(cred->groups, big, n * sizeof(gid_t));
			cred->ngroups = (int)n;
		}
		free(big);
	}
#else
	(void)groups;
#endif
	return 0;
}

static void conn_commit_cb(void *arg, int err);

static void conn_done_cb(evutil_socket_t fd, short what, void *arg);

static int conn_new(struct worker *w, int fd)
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
	if (c) {
		if (c->bev)
			bufferevent_free(c->bev); /* closes fd */
		else
			close(fd);
		if (c->ev_done)
			event_free(c->ev_done);
		free(c);
	} else {
		close(fd);
	}
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
		stat_inc(&c->w->stats.bad_frames);
		conn_fail(c, req->id, EPROTO, "the first request must be a hello");
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
		stat_inc(&w->stats.bad_frames);
		conn_fail(c, req->id, EPROTO, "hello sent twice");
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
		uint64_t t0 = now_us();

		ops_exec(c->sess, req->ops[i], &outs[i]);
		if (code >= STATS_OPS)
			code = 0;
		stat_inc(&w->stats.ops[code]);
		if (outs[i].res.err)
			stat_inc(&w->stats.errors[code]);
		hist_add(&w->stats.op_us[code], now_us() - t0);
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
		err = rsp_pack_all_err(req->id, n, EMSGSIZE, &buf, &len);
	if (err) {
		conn_fail(c, req->id, -err, "cannot build the reply");
		return;
	}
	if (wait_seq == 0) {
		if (bufferevent_write(c->bev, buf, len))
			conn_fail(c, req->id, ENOMEM, "out of memory");
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
			if (rsp_pack_all_err(c->held_id, c->held_nres, EIO, &eb, &el) == 0) {
				free(buf);
				buf = eb;
				len = el;
			} else {
				free(buf);
				buf = NULL;
			}
		}
		c->st = CONN_READY;
		if (!buf || bufferevent_write(c->bev, buf, len)) {
			conn_fail(c, c->held_id, ENOMEM, "out of memory");
		} else if (c->w->exiting) {
			conn_close_now(c);
		} else {
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
	size_t high = max > RPC_OUT_HIGH ? max : RPC_OUT_HIGH;

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
			stat_inc(&c->w->stats.bad_frames);
			conn_fail(c, 0, EMSGSIZE, "frame larger than the server's maximum");
			break;
		}
		if (n == 0) {
			stat_inc(&c->w->stats.bad_frames);
			conn_fail(c, 0, EPROTO, "empty frame");
			break;
		}
		if (evbuffer_get_length(in) < MC_FRAME_HDR + (size_t)n)
			break;
		p = evbuffer_pullup(in, MC_FRAME_HDR + (ssize_t)n);
		req = p ? mcache__request__unpack(NULL, n, p + MC_FRAME_HDR) : NULL;
		evbuffer_drain(in, MC_FRAME_HDR + (size_t)n);
		if (!req) {
			stat_inc(&c->w->stats.bad_frames);
			conn_fail(c, 0, EPROTO, "malformed frame");
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

/* ---- workers --------------------------------------------------------- */

static void worker_notify_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct rpc *r = w->r;
	bool stop;

	(void)fd;
	(void)what;
	for (;;) {
		int cfd = -1;

		pthread_mutex_lock(&w->mu);
		stop = w->stop;
		if (w->nq > 0)
			cfd = w->q[--w->nq];
		pthread_mutex_unlock(&w->mu);
		if (cfd < 0)
			break;
		if (stop) {
			close(cfd);
			atomic_fetch_sub(&r->nconns, 1);
		} else if (conn_new(w, cfd) < 0) {
			atomic_fetch_sub(&r->nconns, 1);
		}
	}
	if (!stop || w->exiting)
		return;
	/* Shut down: close every conn except those whose reply is held; their
	 * callbacks finish them (invariant 5). */
	w->exiting = true;
	for (struct conn *c = w->conns, *nx; c; c = nx) {
		nx = c->next;             /* closing c frees at most c */
		if (c->st != CONN_WAITING)
			conn_close_now(c);
	}
	if (w->nalloc == 0)
		event_base_loopexit(w->base, NULL);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

/* Queue an fd (or, with fd < 0, the stop request) for worker w. */
static int worker_post(struct worker *w, int fd)
{
	int err = 0;

	pthread_mutex_lock(&w->mu);
	if (fd < 0) {
		w->stop = true;
	} else {
		if (w->nq == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 16;
			int *q = realloc(w->q, cap * sizeof(*q));

			if (!q) {
				err = -ENOMEM;
				goto out;
			}
			w->q = q;
			w->cap = cap;
		}
		w->q[w->nq++] = fd;
	}
out:
	pthread_mutex_unlock(&w->mu);
	if (!err)
		event_active(w->ev_notify, EV_READ, 0);
	return err;
}

static void worker_fini(struct worker *w)
{
	if (w->ev_notify)
		event_free(w->ev_notify);
	if (w->base)
		event_base_free(w->base);
	for (size_t i = 0; i < w->nq; i++)
		close(w->q[i]);
	free(w->q);
	pthread_mutex_destroy(&w->mu);
}

static int worker_init(struct worker *w, struct rpc *r)
{
	w->r = r;
	pthread_mutex_init(&w->mu, NULL);
	w->base = event_base_new();
	if (!w->base)
		goto fail;
	w->ev_notify = event_new(w->base, -1, 0, worker_notify_cb, w);
	if (!w->ev_notify)
		goto fail;
	return 0;
fail:
	worker_fini(w);
	return -ENOMEM;
}

/* ---- acceptor -------------------------------------------------------- */

static void rpc_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
			  struct sockaddr *sa, int salen, void *arg)
{
	struct rpc *r = arg;
	struct worker *w;

	(void)lev;
	(void)sa;
	(void)salen;
	if (r->o.max_conns && atomic_load(&r->nconns) >= r->o.max_conns) {
		atomic_fetch_add(&r->refused, 1);
		log_debug("rpc: refusing a connection: %u open", atomic_load(&r->nconns));
		close(fd);
		return;
	}
	atomic_fetch_add(&r->nconns, 1);
	w = &r->w[r->next++ % r->nw];
	if (worker_post(w, fd) < 0) {
		close(fd);
		atomic_fetch_sub(&r->nconns, 1);
	}
}

static void rpc_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rpc *r = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(r->lev);
}

static void rpc_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct rpc *r = arg;
	int e = EVUTIL_SOCKET_ERROR();
	struct timeval tv = { .tv_usec = 100000 };

	log_warn("rpc: accept: %s", strerror(e));
	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		/* Out of descriptors: pause instead of spinning. */
		evconnlistener_disable(lev);
		event_add(r->ev_resume, &tv);
	}
}

static void rpc_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rpc *r = arg;

	(void)fd;
	(void)what;
	/* From inside the loop: a loopbreak before the loop starts is lost. */
	event_base_loopbreak(r->abase);
}

static void *rpc_acceptor_main(void *arg)
{
	struct rpc *r = arg;

	event_base_loop(r->abase, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

/* Bind a listening socket at path: refuse a live one, replace a stale one. */
static int rpc_listen_socket(const char *path, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd = -1, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if (lstat(path, &st) == 0) {
		int probe;

		if (!S_ISSOCK(st.st_mode))
			return -EADDRINUSE;     /* never remove someone's file */
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0)
			return -errno;
		if (connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			return -EADDRINUSE;
		}
		err = errno;
		close(probe);
		if (err != ECONNREFUSED && err != ENOENT)
			return -err;
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto fail;
	}
	if (chmod(path, 0660) < 0 || listen(fd, 1024) < 0) {
		err = -errno;
		unlink(path);
		goto fail;
	}
	*out = fd;
	return 0;
fail:
	close(fd);
	return err;
}

static void rpc_free(struct rpc *r)
{
	if (r->ath_started) {
		event_active(r->ev_stop, EV_READ, 0);
		pthread_join(r->ath, NULL);
	}
	if (r->lev) {
		evconnlistener_free(r->lev);
		unlink(r->path);
	}
	if (r->ev_resume)
		event_free(r->ev_resume);
	if (r->ev_stop)
		event_free(r->ev_stop);
	if (r->abase)
		event_base_free(r->abase);
	for (unsigned i = 0; i < r->nw; i++) {
		worker_post(&r->w[i], -1);
		pthread_join(r->w[i].th, NULL);
		worker_fini(&r->w[i]);
	}
	free(r->w);
	free(r->path);
	free(r);
}

static void rpc_evthread_init(void)
{
	struct sigaction sa;

	/* Bases made after this lock themselves, so event_active and
	 * loopexit work from any thread. */
	evthread_use_pthreads();
	/* libevent writes with writev, which raises SIGPIPE when a client has
	 * gone; unless the program chose a handler, ignore it. */
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
		sa.sa_handler = SIG_IGN;
		sigaction(SIGPIPE, &sa, NULL);
	}
}

int rpc_start(const struct rpc_opts *o, struct mcd *m, struct rpc **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct rpc *r;
	int fd = -1, err = -ENOMEM;

	assert(o && o->socket_path && o->workers >= 1 && out);
	pthread_once(&once, rpc_evthread_init);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->m = m;
	r->path = strdup(o->socket_path);
	r->w = calloc(o->workers, sizeof(*r->w));
	if (!r->path || !r->w)
		goto fail;
	r->o.socket_path = r->path;
	if (r->o.max_frame == 0)
		r->o.max_frame = MC_FRAME_MAX;
	for (; r->nw < o->workers; r->nw++) {
		struct worker *w = &r->w[r->nw];

		err = worker_init(w, r);
		if (err)
			goto fail;
		err = -pthread_create(&w->th, NULL, worker_main, w);
		if (err) {
			worker_fini(w);
			goto fail;
		}
	}
	err = -ENOMEM;
	r->abase = event_base_new();
	if (!r->abase)
		goto fail;
	r->ev_resume = evtimer_new(r->abase, rpc_resume_cb, r);
	r->ev_stop = event_new(r->abase, -1, 0, rpc_stop_cb, r);
	if (!r->ev_resume || !r->ev_stop)
		goto fail;
	err = rpc_listen_socket(r->path, &fd);
	if (err)
		goto fail;
	r->lev = evconnlistener_new(r->abase, rpc_accept_cb, r,
				    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (!r->lev) {
		close(fd);
		unlink(r->path);
		err = -ENOMEM;
		goto fail;
	}
	evconnlistener_set_error_cb(r->lev, rpc_accept_error_cb);
	/* Published before the first connection is accepted: requests may ask
	 * for statistics through the caller's copy of the pointer. */
	*out = r;
	err = -pthread_create(&r->ath, NULL, rpc_acceptor_main, r);
	if (err) {
		*out = NULL;
		goto fail;
	}
	r->ath_started = true;
	return 0;
fail:
	rpc_free(r);
	return err;
}

void rpc_stop(struct rpc *r)
{
	if (r)
		rpc_free(r);
}

void rpc_get_stats(struct rpc *r, struct rpc_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < r->nw; i++)
		rpc_stats_merge(out, &r->w[i].stats);
}

unsigned rpc_clients(struct rpc *r)
{
	return atomic_load(&r->nconns);
}
