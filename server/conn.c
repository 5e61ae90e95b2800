/* conn.c - one client connection of the RPC server, on its worker's
 * event loop: reads frames, answers the Hello (passing the segment fds),
 * runs requests' ops for the connection's session and writes the replies,
 * holding one until its commit is durable. The socket itself (reading,
 * replies sent in the same wakeup, the output queue) is conn_io.c's; the
 * Hello itself (the peer's credentials, the session, the reply with the
 * segment fds) is conn_hello.c's.
 *
 * Connection states (struct conn.st):
 *
 *                                             slice left (conn_job_run)
 *                                            ┌──────────► RUNNING ──┐
 *                                            │  ◄── done, reply ────┘
 *      conn_new          conn_hello (good Hello)  queued (conn_step_cb)
 *   ─────────► HELLO ──────────────────────► READY ◄──────────┐
 *                │                           │  │             │ conn_done_cb
 *                │ bad frame / version /     │  │ wait_seq!=0 │ (held reply
 *                │ hello timeout             │  └──► WAITING ─┘  written)
 *                ▼                           │            │
 *             CLOSING ◄──────────────────────┘ bad frame, │ EOF / error
 *       (conn_close_after_flush: reply         frame      │
 *        drains, then conn_close)              timeout    ▼
 *   closed for room (conn_make_room), shed (conn_shed) ─► conn_close: fd,
 *                                         session, job released; struct
 *                                         freed when refs reach 0
 *
 * Invariants:
 *  1. A conn, its buffers and events, session, done-event and deadline timer are
 *     touched only by its worker thread. The one exception is
 *     conn_wait_cb, which runs on the committer thread or another worker
 *     (the last watcher acknowledging, watch.h) and only stores wait_err,
 *     counts nwaits down and, at 0, sends the held reply (invariant 9)
 *     and activates ev_done.
 *  2. A conn holds one reference for being open (fd >= 0) and one while a
 *     wait (commit, watchers) is outstanding; it is freed when both are
 *     gone, so a connection closed while waiting lives until its callbacks
 *     have run.
 *  3. Replies leave in request order: while WAITING the conn does not read
 *     and does not parse input already buffered; conn_done_cb writes the held
 *     reply and only then resumes parsing.
 *  4. The conn is counted in r->nconns (rpc.c invariant 1) until conn_close,
 *     and in w->nalloc, on w->conns, until it is freed.
 *  5. A conn is on w->prehello from conn_new until it leaves HELLO, and
 *     counted in w->nprehello and r->nprehello from the moment the acceptor
 *     queues it (rpc.c invariant 1) until then; there its deadline is the Hello
 *     timeout. In READY the deadline runs while a started frame is
 *     incomplete and the conn is reading, restarting with each frame.
 *  6. Memory: a conn holds at most one frame of input (max_frame), one
 *     request being run (max_ops ops, results under max_reply), unsent
 *     replies up to conn_output_max plus one reply (no frame is parsed
 *     while output is over it), and one held reply. out_acct is what its
 *     output adds to r->out_total.
 *  7. A wakeup runs at most about CONN_SLICE_US of a conn's requests: a
 *     request runs in slices (conn_job_run), between which the conn is
 *     RUNNING, reads and parses nothing, and its next slice waits behind
 *     the worker's other ready events (a zero timer, ev_step); frames
 *     parsed in one wakeup share its slice, and those left when it ran out
 *     wait on the same timer (conn_step_cb in READY). The replies of one
 *     pass of conn_process leave together at its end (conn_io.c
 *     invariant 5).
 *  8. c->ent is listed in r->m->clients (clients.c) from a good Hello
 *     (conn_hello, conn_hello.c) until conn_close, and counts each request
 *     received; each request's job records its slow ops in r->m->slowlog
 *     (slowlog.c).
 *  9. The thread whose conn_wait_cb ends a wait that succeeded (mostly the
 *     committer, answering its waiters) writes the held reply to the
 *     socket itself (one nonblocking send; held_sent says what it took),
 *     before it activates ev_done, so the client is woken without a
 *     wakeup of the worker first; conn_done_cb queues what the socket did
 *     not take, and goes on as before. Only when held_direct: set by the
 *     worker as it holds the reply, after it sent what this pass had
 *     held back (conn_io_flush), when nothing is left queued and the
 *     session is no watcher (whose events the worker sends at any time).
 *     While WAITING with held_direct the worker writes nothing to the
 *     socket and does not close it (it neither reads nor writes it then,
 *     and conn_close_all passes WAITING conns by), so that send is the
 *     only use of the socket until ev_done runs conn_done_cb.
 */
#include "conn_io.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clients.h"
#include "clock.h"
#include "commit.h"
#include "frame.h"
#include "log.h"
#include "mcd.h"
#include "ops.h"
#include "request.h"
#include "stats.h"
#include "watch.h"

static void conn_wait_cb(void *arg, int err);
static void conn_done_cb(evutil_socket_t fd, short what, void *arg);
static void conn_deadline_cb(evutil_socket_t fd, short what, void *arg);
static void conn_step_cb(evutil_socket_t fd, short what, void *arg);

static void stat_inc(_Atomic uint64_t *v)
{
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* Leave w->prehello (invariant 5); a no-op once left. */
void conn_prehello_leave(struct conn *c)
{
	struct worker *w = c->w;

	if (!c->in_prehello)
		return;
	TAILQ_REMOVE(&w->prehello, c, pq);
	c->in_prehello = false;
	atomic_fetch_sub(&w->nprehello, 1);
	atomic_fetch_sub(&w->r->nprehello, 1);
}

/* Longest a request runs before its worker serves other connections. */
#define CONN_SLICE_US 1000

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
	event_free(c->ev_deadline);
	event_free(c->ev_step);
	free(c->held);
	free(c);
	if (w->exiting && w->nalloc == 0)
		event_base_loopexit(w->base, NULL);
}

/* Release the fd and the session; the struct follows when unreferenced. */
void conn_close(struct conn *c)
{
	if (c->fd < 0)
		return;
	conn_prehello_leave(c);
	evtimer_del(c->ev_deadline);
	evtimer_del(c->ev_step);
	request_job_free(c->job);     /* its ops may have run: outcome unknown */
	c->job = NULL;
	conn_io_release(c);
	if (c->sess)
		session_free(c->sess);
	c->sess = NULL;
	clients_remove(c->w->r->m->clients, &c->ent);
	c->st = CONN_CLOSED;
	atomic_fetch_sub(&c->w->r->nconns, 1);
	conn_unref(c);
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
	return conn_io_send(c, buf, len);
}

/* Answer a whole-request error (err > 0) and close once it is sent. */
void conn_fail(struct conn *c, uint64_t id, int err, const char *msg)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;

	rsp.id = id;
	rsp.err = err;
	rsp.message = (char *)msg;
	log_debug("rpc: pid %d: %s", (int)c->pid, msg);
	conn_prehello_leave(c);
	conn_send(c, &rsp);
	conn_close_after_flush(c);
}

/* Send a packed reply (NULL: it could not be built), taking ownership of
 * buf: written at once when the socket takes it, else queued without a
 * copy and freed once sent. If that fails, answer ENOMEM and close once
 * that is sent. 0 or -ENOMEM. */
int conn_queue(struct conn *c, uint64_t id, uint8_t *buf, size_t len)
{
	if (buf && conn_io_send(c, buf, len) == 0)
		return 0;
	conn_fail(c, id, ENOMEM, "out of memory");
	return -ENOMEM;
}

/* conn_fail for a frame that breaks the protocol: counted as a bad frame. */
void conn_bad_frame(struct conn *c, uint64_t id, int err, const char *msg)
{
	stat_inc(&c->w->stats.bad_frames);
	conn_fail(c, id, err, msg);
}

/* Over max_conns (the acceptor let one more in because connections wait
 * for their Hello) or at max_prehello, the newcomer counted: close w's
 * oldest connection that has not said Hello, so those can never lock out
 * clients that do. 0, or -EBUSY when over max_conns with none to close
 * (they said Hello meanwhile) and none queued behind: the newcomer is
 * refused. */
static int conn_make_room(struct worker *w)
{
	struct rpc *r = w->r;
	unsigned cap = r->o.max_prehello ? r->o.max_prehello : r->o.max_conns;
	struct conn *old = TAILQ_FIRST(&w->prehello);
	bool full = r->o.max_conns && atomic_load(&r->nconns) > r->o.max_conns;

	if (!full && !(cap && atomic_load(&r->nprehello) > cap))
		return 0;
	if (!old) {
		/* In a burst, others taken after this one close it in turn. */
		if (!full || atomic_load(&w->nprehello) > 1)
			return 0;
		atomic_fetch_add(&r->refused, 1);
		return -EBUSY;
	}
	stat_inc(&w->stats.limits[STATS_LIMIT_PREHELLO_EVICTED]);
	if (rpc_log_ok(r))
		log_warn("rpc: pid %d: closed before its hello to make room for a new "
		         "connection (%u waiting for hello)", (int)old->pid,
		         atomic_load(&r->nprehello));
	conn_close(old);
	return 0;
}

int conn_new(struct worker *w, int fd)
{
	struct conn *c = NULL;
	int err = conn_make_room(w);

	if (err)
		goto fail;
	err = -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto fail;
	c->w = w;
	c->fd = fd;
	err = conn_read_cred(fd, &c->cred, &c->pid);
	if (err)
		goto fail;
	err = -ENOMEM;
	c->ev_done = event_new(w->base, -1, 0, conn_done_cb, c);
	c->ev_deadline = evtimer_new(w->base, conn_deadline_cb, c);
	c->ev_step = evtimer_new(w->base, conn_step_cb, c);
	if (!c->ev_done || !c->ev_deadline || !c->ev_step)
		goto fail;
	if (conn_io_open(c) < 0)
		goto fail;
	conn_io_reading(c, true);
	if (w->r->o.hello_timeout_s > 0) {
		struct timeval tv = { .tv_sec = w->r->o.hello_timeout_s };

		evtimer_add(c->ev_deadline, &tv);
	}
	c->st = CONN_HELLO;
	c->refs = 1;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	w->nalloc++;
	TAILQ_INSERT_TAIL(&w->prehello, c, pq);
	c->in_prehello = true;           /* counted by the acceptor */
	stat_inc(&w->stats.connections);
	return 0;
fail:
	if (c)
		conn_io_release(c);       /* closes fd */
	else
		close(fd);
	if (c && c->ev_done)
		event_free(c->ev_done);
	if (c && c->ev_deadline)
		event_free(c->ev_deadline);
	if (c && c->ev_step)
		event_free(c->ev_step);
	free(c);
	return err;
}

/* Run the job's next slice; once all its ops ran, queue (or hold) the
 * reply and, if the job had to yield, go on with the input buffered. */
static void conn_job_run(struct conn *c, uint64_t slice_us)
{
	struct worker *w = c->w;
	struct timeval now = { 0, 0 };
	struct request_reply rr;
	uint64_t id = request_job_id(c->job);
	bool resumed = c->st == CONN_RUNNING;
	int err;

	if (!request_job_step(c->job, c->sess, &w->stats, slice_us)) {
		/* Yield to the worker's other connections (invariant 7). */
		c->st = CONN_RUNNING;
		conn_io_reading(c, false);
		evtimer_del(c->ev_deadline);
		evtimer_add(c->ev_step, &now);
		return;
	}
	c->st = CONN_READY;
	err = request_job_finish(c->job, &rr);
	request_job_free(c->job);
	c->job = NULL;
	if (err) {
		conn_fail(c, id, -err, "cannot build the reply");
		return;
	}
	if (rr.full)
		log_debug("rpc: pid %d: reply of request %llu full at %u bytes", (int)c->pid,
		          (unsigned long long)id, (unsigned)w->r->o.max_reply);
	/* The waits are counted before they start, with one more held until
	 * all have started, so that none can finish the hold early (a wait
	 * is handed over under its own lock: relaxed stores will do). */
	atomic_store_explicit(&c->wait_err, 0, memory_order_relaxed);
	atomic_store_explicit(&c->nwaits, 1, memory_order_relaxed);
	bool watchers = false;
	struct watch_sess *ws = session_watch(c->sess);
	if (watch_pending(ws)) {
		atomic_fetch_add(&c->nwaits, 1);
		watchers = watch_publish(w->r->m->watch, ws, conn_wait_cb, c) == 1;
		if (!watchers)
			atomic_fetch_sub(&c->nwaits, 1);
	}
	if (rr.wait_seq == 0 && !watchers) {
		if (conn_queue(c, id, rr.buf, rr.len) == 0 && resumed && !w->exiting)
			conn_process(c);
		return;
	}
	/* Hold the reply until wait_seq is durable and the watchers applied
	 * its events (invariant 3). */
	c->held = rr.buf;
	c->held_len = rr.len;
	c->held_id = id;
	c->held_nres = c->job_nops;
	c->st = CONN_WAITING;
	c->refs++;
	conn_io_reading(c, false);
	evtimer_del(c->ev_deadline);
	/* The replies before it go first: then the socket is idle, and the
	 * wait's end may send it (invariant 9). A flush that fails closes c. */
	conn_io_flush(c);
	c->held_sent = 0;
	c->held_direct = c->fd >= 0 && conn_io_pending(c) == 0 && ws->w == NULL;
	if (rr.wait_seq) {
		atomic_fetch_add(&c->nwaits, 1);
		err = commit_wait_async(w->r->m->commit, rr.wait_seq, conn_wait_cb, c);
		if (err)
			conn_wait_cb(c, err);
	}
	conn_wait_cb(c, 0);               /* every wait started */
}

/* Run a request's ops (taking job) and queue (or hold) the reply. */
static void conn_request(struct conn *c, struct request_job *job, uint64_t slice_us)
{
	const Mcache__Request *req = request_job_request(job);

	if (req->hello) {
		uint64_t id = req->id;

		request_job_free(job);
		conn_bad_frame(c, id, EPROTO, "hello sent twice");
		return;
	}
	stat_inc(&c->w->stats.requests);
	client_ent_request(&c->ent);
	c->job_nops = req->n_ops;
	c->job = job;
	request_job_trace(c->job, c->w->r->m->slowlog, c->pid, c->cred.uid);
	conn_job_run(c, slice_us);
}

static void conn_step_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->st == CONN_READY) {
		conn_process(c);          /* frames left when the slice ran out */
		return;
	}
	if (c->st != CONN_RUNNING)
		return;
	c->refs++;                        /* the reply may close c under us */
	conn_job_run(c, CONN_SLICE_US);
	conn_unref(c);
}

/* The wait is over and succeeded: the held reply goes out from this
 * thread (invariant 9). */
static void conn_send_held(struct conn *c)
{
	_Atomic uint64_t *direct = &c->w->stats.replies_direct;
	ssize_t n;

	/* Counted before the client can see the reply and read the figure. */
	stat_inc(direct);
	do
		n = send(c->fd, c->held, c->held_len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	/* A failed send leaves it to conn_done_cb, as conn_io_send does. */
	if (n > 0)
		c->held_sent = (size_t)n;
	else
		atomic_fetch_sub_explicit(direct, 1, memory_order_relaxed);
}

/* Committer thread, another worker, or inline: one wait is over; the
 * last sends the reply and hands back to the worker (invariant 1). */
static void conn_wait_cb(void *arg, int err)
{
	struct conn *c = arg;

	if (err < 0)
		atomic_store(&c->wait_err, err);
	if (atomic_fetch_sub(&c->nwaits, 1) == 1) {
		if (c->held_direct && atomic_load(&c->wait_err) == 0)
			conn_send_held(c);
		event_active(c->ev_done, EV_READ, 0);
	}
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

			if (rpc_log_ok(c->w->r))
				log_warn("rpc: commit failed (%s): replying EIO", strerror(-err));
			if (request_pack_all_err(c->held_id, c->held_nres, EIO, &eb, &el) == 0) {
				free(buf);
				buf = eb;
				len = el;
			} else {
				free(buf);
				buf = NULL;
			}
		}
		c->st = CONN_READY;
		size_t sent = buf && err == 0 ? c->held_sent : 0;
		int qrc;

		if (sent == len && buf) {
			free(buf);        /* the wait's end sent it (invariant 9) */
			qrc = 0;
		} else if (sent) {
			/* The rest, in order; lost, the stream is out of step. */
			qrc = conn_io_queue(c, buf, sent, len);
			if (qrc)
				conn_close(c);
		} else {
			qrc = conn_queue(c, c->held_id, buf, len);
		}
		if (qrc == 0) {
			if (c->w->exiting)
				conn_close_now(c);
			else
				conn_process(c);
		}
		buf = NULL;               /* taken */
	}
	free(buf);
	conn_unref(c);
}

/* READY and reading: run the frame deadline while a started frame is
 * incomplete, restarting it when a frame completed (invariant 5). */
static void conn_frame_deadline(struct conn *c, bool progressed)
{
	unsigned s = c->w->r->o.frame_timeout_s;
	struct timeval tv = { .tv_sec = s };

	if (s == 0 || c->st != CONN_READY)
		return;
	if (c->throttled || evbuffer_get_length(c->in) == 0)
		evtimer_del(c->ev_deadline);
	else if (progressed || !evtimer_pending(c->ev_deadline, NULL))
		evtimer_add(c->ev_deadline, &tv);
}

/* A frame that announces more ops than max_ops: refused before it is
 * unpacked (the unpacked ops would cost far more than the frame). */
static bool conn_too_many_ops(struct conn *c, const uint8_t *p, uint32_t n)
{
	struct rpc *r = c->w->r;
	uint64_t id;
	size_t nops;

	if (r->o.max_ops == 0 || request_scan(p, n, &id, &nops) < 0 || nops <= r->o.max_ops)
		return false;
	stat_inc(&c->w->stats.limits[STATS_LIMIT_TOO_MANY_OPS]);
	if (rpc_log_ok(r))
		log_warn("rpc: pid %d: request of %zu ops refused (max-ops %u)", (int)c->pid,
		         nops, r->o.max_ops);
	conn_fail(c, id, E2BIG, "too many operations in one request");
	return true;
}

/* Parse and answer the complete frames buffered, as long as the conn can
 * and its unsent replies stay under conn_output_max (invariant 6). */
void conn_process(struct conn *c)
{
	struct rpc *r = c->w->r;
	struct evbuffer *in = c->in;
	uint32_t max = r->o.max_frame;
	size_t high = r->o.conn_output_max;
	bool progressed = false;
	uint64_t start = mono_us();

	c->refs++;                        /* replies may close c under us */
	conn_io_cork(c);                  /* this pass's replies go out together */
	while ((c->st == CONN_HELLO || c->st == CONN_READY) && conn_io_pending(c) <= high) {
		uint8_t hdr[MC_FRAME_HDR];
		struct request_job *job = NULL;
		uint64_t used = progressed ? mono_us() - start : 0;
		uint8_t *p;
		uint32_t n;
		int err;

		if (used >= CONN_SLICE_US) {
			/* This wakeup had its slice: the frames left wait behind
			 * the worker's other ready events (invariant 7), and
			 * nothing more is read meanwhile (an EOF must not be
			 * seen before the requests in front of it ran). */
			struct timeval now = { 0, 0 };

			conn_io_reading(c, false);
			evtimer_del(c->ev_deadline);
			evtimer_add(c->ev_step, &now);
			goto out;
		}
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
		if (p && conn_too_many_ops(c, p + MC_FRAME_HDR, n))
			break;
		err = p ? request_job_new(p + MC_FRAME_HDR, n, r->o.max_reply, &job) : -ENOMEM;
		evbuffer_drain(in, MC_FRAME_HDR + (size_t)n);
		progressed = true;
		if (err == -ENOMEM) {
			conn_fail(c, 0, ENOMEM, "out of memory");
			break;
		}
		if (err) {
			conn_bad_frame(c, 0, EPROTO, "malformed frame");
			break;
		}
		if (c->st == CONN_HELLO) {
			conn_hello(c, request_job_request(job));
			request_job_free(job);
		} else {
			conn_request(c, job, CONN_SLICE_US - used);   /* takes job */
		}
	}
	/* What the socket takes now is not backlog (conn_io.c invariant 5). */
	conn_io_flush(c);
	if (c->st != CONN_READY && c->st != CONN_HELLO)
		goto out;
	/* Backpressure: a peer that does not read its replies stops being read;
	 * if unsent replies are over the total too, it is let go. */
	if (conn_io_pending(c) > high) {
		if (conn_io_over_total(r)) {
			conn_shed_one(c);
			goto out;
		}
		c->throttled = true;      /* until conn_io_write_cb drains half */
		conn_io_reading(c, false);
	} else if (!c->throttled) {
		conn_io_reading(c, true);
	}
	conn_frame_deadline(c, progressed);
out:
	conn_io_uncork(c);
	conn_unref(c);
}

void conn_close_all(struct worker *w)
{
	for (struct conn *c = w->conns, *nx; c; c = nx) {
		nx = c->next;             /* closing c frees at most c */
		if (c->st == CONN_RUNNING) {
			/* A request in progress is finished, not cut. */
			c->refs++;
			conn_job_run(c, UINT64_MAX);
			nx = c->next;
			conn_unref(c);
		}
		if (c->st != CONN_WAITING)
			conn_close_now(c);
	}
}

static void conn_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct rpc *r = c->w->r;
	bool hello = c->st == CONN_HELLO;

	(void)fd;
	(void)what;
	if (c->fd < 0 || (c->st != CONN_HELLO && c->st != CONN_READY))
		return;
	stat_inc(&c->w->stats.limits[hello ? STATS_LIMIT_HELLO_TIMEOUTS
	                                   : STATS_LIMIT_FRAME_TIMEOUTS]);
	if (rpc_log_ok(r))
		log_warn("rpc: pid %d: %s within %u s: closing", (int)c->pid,
		         hello ? "no hello" : "request frame not completed",
		         hello ? r->o.hello_timeout_s : r->o.frame_timeout_s);
	conn_fail(c, 0, ETIMEDOUT, hello ? "no hello in time" : "frame not completed in time");
}

void conn_shed(struct worker *w)
{
	atomic_store(&w->shed_pending, false);
	for (struct conn *c = w->conns, *nx; c && conn_io_over_total(w->r); c = nx) {
		nx = c->next;             /* closing c frees at most c */
		if (c->fd >= 0 && c->throttled && (c->st == CONN_READY || c->st == CONN_HELLO))
			conn_shed_one(c);
	}
}
