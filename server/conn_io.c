/* conn_io.c - a connection's socket I/O: reading into its input buffer,
 * sending replies in the same wakeup that produced them, queueing what the
 * socket does not take, and the output limits around that queue.
 *
 * One wakeup of a request that fits the socket: epoll_wait, one read of
 * everything available (no FIONREAD: a fixed-size read, the rest comes at
 * the next wakeup), the request run, and one send of its reply. Only a
 * reply the socket does not take whole goes through the output buffer and
 * the write event.
 *
 * Invariants:
 *  1. Replies leave in order: a reply is written directly only while
 *     nothing is queued (c->out empty); otherwise it is queued behind.
 *  2. ev_write is added exactly while c->out holds bytes (writing), and
 *     ev_read while the conn reads (reading); each is added or removed
 *     only when that changes, so the steady state costs no epoll_ctl.
 *  3. c->out_acct is what c->out adds to r->out_total (conn_io_out_cb); a
 *     directly written reply never enters either.
 *  4. Input held is at most one frame plus one read (CONN_READ_MAX): the
 *     conn stops reading whenever it stops parsing (conn.c invariant 6).
 *  5. While corked (conn.c parses what a read brought in), replies sent
 *     with nothing queued are held back in cork_buf, in order, and tried
 *     on the socket together (one sendmsg) when the outermost cork ends,
 *     when CONN_CORK_MAX are held, or before anything else is written or
 *     queued (conn_io_queue, closing); what the socket does not take is
 *     queued as in 1. So a pipelined burst read at once is answered in
 *     one send, a single request at once as before, and no reply waits
 *     longer than the pass that made it (one slice, conn.c invariant 7).
 *     Held-back bytes count as pending output (conn_io_pending).
 */
#include "conn_io.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

/* Time a closing connection gets to take its last reply. */
#define CONN_FLUSH_TIMEOUT_S 5
/* Most bytes one read takes. */
#define CONN_READ_MAX (64u << 10)

static _Thread_local uint8_t conn_rbuf[CONN_READ_MAX];

static void stat_inc(_Atomic uint64_t *v)
{
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* Output callback: keep r->out_total in step with c->out (invariant 3). */
static void conn_io_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
                           void *arg)
{
	struct conn *c = arg;
	struct rpc *r = c->w->r;

	(void)buf;
	if (info->n_added > info->n_deleted) {
		size_t d = info->n_added - info->n_deleted;

		c->out_acct += d;
		atomic_fetch_add(&r->out_total, d);
	} else if (info->n_deleted > info->n_added) {
		size_t d = info->n_deleted - info->n_added;

		c->out_acct -= d;
		atomic_fetch_sub(&r->out_total, d);
	}
}

bool conn_io_over_total(const struct rpc *r)
{
	return r->o.output_max && atomic_load(&r->out_total) > r->o.output_max;
}

/* Over output_max in all: ask every worker to shed its non-readers. */
static void conn_io_shed_request(struct rpc *r)
{
	for (unsigned i = 0; i < r->nw; i++)
		if (!atomic_exchange(&r->w[i].shed_pending, true))
			event_active(r->w[i].ev_shed, EV_READ, 0);
}

void conn_shed_one(struct conn *c)
{
	struct rpc *r = c->w->r;

	stat_inc(&c->w->stats.limits[STATS_LIMIT_OUTPUT_DISCONNECTS]);
	if (rpc_log_ok(r))
		log_warn("rpc: pid %d: disconnected: %zu reply bytes unread, %llu in all "
		         "(output-max %llu)", (int)c->pid, conn_io_pending(c),
		         (unsigned long long)atomic_load(&r->out_total),
		         (unsigned long long)r->o.output_max);
	conn_close(c);
}

size_t conn_io_pending(const struct conn *c)
{
	return (c->out ? evbuffer_get_length(c->out) : 0) + c->cork_bytes;
}

void conn_io_reading(struct conn *c, bool on)
{
	unsigned idle = c->w->r->o.idle_timeout_s;
	struct timeval tv = { .tv_sec = idle };

	if (on == c->reading || c->fd < 0)
		return;
	c->reading = on;
	if (on)
		event_add(c->ev_read, idle ? &tv : NULL);
	else
		event_del(c->ev_read);
}

/* Add ev_write while out holds bytes (invariant 2); a closing conn's send
 * is bounded in time. */
static void conn_io_writing(struct conn *c, bool on)
{
	struct timeval tv = { .tv_sec = CONN_FLUSH_TIMEOUT_S };

	if (on == c->writing || c->fd < 0)
		return;
	c->writing = on;
	if (on)
		event_add(c->ev_write, c->st == CONN_CLOSING ? &tv : NULL);
	else
		event_del(c->ev_write);
}

static void conn_io_buf_free(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	free(arg);
}

/* Queue buf[off..len) behind c->out, taking buf (no flush first). */
static int conn_io_enqueue(struct conn *c, uint8_t *buf, size_t off, size_t len)
{
	struct rpc *r = c->w->r;

	if (off == len) {
		free(buf);
		return 0;
	}
	stat_inc(&c->w->stats.replies_queued);
	if (evbuffer_add_reference(c->out, buf + off, len - off, conn_io_buf_free, buf) < 0) {
		free(buf);
		return -ENOMEM;
	}
	conn_io_writing(c, true);
	if (conn_io_over_total(r))
		conn_io_shed_request(r);
	return 0;
}

/* Drop what is held back (the conn is going). */
static void conn_io_cork_drop(struct conn *c)
{
	for (unsigned i = 0; i < c->ncork; i++)
		free(c->cork_buf[i]);
	c->ncork = 0;
	c->cork_bytes = 0;
}

void conn_io_flush(struct conn *c)
{
	struct iovec iov[CONN_CORK_MAX];
	unsigned n = c->ncork;
	size_t sent = 0;
	int err = 0;

	if (n == 0)
		return;
	if (c->fd < 0) {
		conn_io_cork_drop(c);
		return;
	}
	c->ncork = 0;
	c->cork_bytes = 0;
	if (evbuffer_get_length(c->out) == 0) {   /* always so (invariant 5) */
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };
		ssize_t k;

		for (unsigned i = 0; i < n; i++)
			iov[i] = (struct iovec){ c->cork_buf[i], c->cork_len[i] };
		do
			k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (k < 0 && errno == EINTR);
		/* As in conn_io_send: a failed send is queued, and the
		 * write event finds the error. */
		if (k > 0)
			sent = (size_t)k;
	}
	for (unsigned i = 0; i < n; i++) {
		size_t len = c->cork_len[i], off = sent < len ? sent : len;

		sent -= off;
		if (err)
			free(c->cork_buf[i]);
		else
			err = conn_io_enqueue(c, c->cork_buf[i], off, len);
	}
	/* A reply that could not be queued is lost: the stream is out of
	 * step, so the connection ends. */
	if (err)
		conn_close(c);
}

void conn_io_cork(struct conn *c)
{
	c->corked++;
}

void conn_io_uncork(struct conn *c)
{
	if (--c->corked == 0)
		conn_io_flush(c);
}

int conn_io_queue(struct conn *c, uint8_t *buf, size_t off, size_t len)
{
	conn_io_flush(c);                 /* behind what is held back */
	if (c->fd < 0) {
		free(buf);
		return 0;
	}
	return conn_io_enqueue(c, buf, off, len);
}

int conn_io_send(struct conn *c, uint8_t *buf, size_t len)
{
	size_t off = 0;

	if (c->fd < 0) {                /* closed: nobody to answer */
		free(buf);
		return 0;
	}
	if (!c->corked || c->ncork == CONN_CORK_MAX)
		conn_io_flush(c);         /* what is held back goes first */
	if (c->fd < 0) {                /* the flush lost a reply: closed */
		free(buf);
		return 0;
	}
	if (c->corked && evbuffer_get_length(c->out) == 0) {
		c->cork_buf[c->ncork] = buf;
		c->cork_len[c->ncork++] = len;
		c->cork_bytes += len;
		return 0;
	}
	if (evbuffer_get_length(c->out) == 0) {
		ssize_t n;

		do
			n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		/* A failed send (peer gone) is queued too: the write event
		 * finds the error and closes the connection there. */
		if (n > 0)
			off = (size_t)n;
	}
	return conn_io_enqueue(c, buf, off, len);
}

/* Close after an error or EOF of the socket, or a timeout. */
static void conn_io_end(struct conn *c, bool eof)
{
	/* A peer that shut down its side after its last request still gets
	 * the replies already queued. */
	if (eof && c->st == CONN_READY && conn_io_pending(c) > 0) {
		conn_close_after_flush(c);
		return;
	}
	/* EOF, error or timeout: the connection is over, even while WAITING
	 * (the struct outlives it until the commit callback). */
	conn_close(c);
}

static void conn_io_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	if (what & EV_TIMEOUT) {
		log_debug("rpc: pid %d: idle timeout", (int)c->pid);
		conn_io_end(c, false);
		return;
	}
	do
		n = read(fd, conn_rbuf, sizeof(conn_rbuf));
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		conn_io_end(c, n == 0);
		return;
	}
	c->w->reads++;
	if (evbuffer_add(c->in, conn_rbuf, (size_t)n) < 0) {
		conn_close(c);
		return;
	}
	conn_process(c);
}

static void conn_io_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	size_t high = c->w->r->o.conn_output_max;
	int n;

	if (what & EV_TIMEOUT) {
		log_debug("rpc: pid %d: write timeout", (int)c->pid);
		conn_close(c);
		return;
	}
	n = evbuffer_write(c->out, fd);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		conn_close(c);
		return;
	}
	if (evbuffer_get_length(c->out) == 0)
		conn_io_writing(c, false);
	if (c->st == CONN_CLOSING) {
		if (evbuffer_get_length(c->out) == 0)
			conn_close(c);
		return;
	}
	/* Backpressure ends once half the limit has drained. */
	if (c->throttled && evbuffer_get_length(c->out) <= high / 2) {
		c->throttled = false;
		conn_process(c);
	}
}

int conn_io_open(struct conn *c)
{
	struct event_base *base = c->w->base;

	c->in = evbuffer_new();
	c->out = evbuffer_new();
	if (!c->in || !c->out)
		return -ENOMEM;
	c->out_cb = evbuffer_add_cb(c->out, conn_io_out_cb, c);
	c->ev_read = event_new(base, c->fd, EV_READ | EV_PERSIST, conn_io_read_cb, c);
	c->ev_write = event_new(base, c->fd, EV_WRITE | EV_PERSIST, conn_io_write_cb, c);
	if (!c->out_cb || !c->ev_read || !c->ev_write)
		return -ENOMEM;
	return 0;
}

void conn_io_release(struct conn *c)
{
	conn_io_cork_drop(c);
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	c->ev_read = c->ev_write = NULL;
	c->reading = c->writing = false;
	if (c->out_cb)
		evbuffer_remove_cb_entry(c->out, c->out_cb);
	c->out_cb = NULL;
	atomic_fetch_sub(&c->w->r->out_total, c->out_acct);
	c->out_acct = 0;
	if (c->in)
		evbuffer_free(c->in);
	if (c->out)
		evbuffer_free(c->out);
	c->in = c->out = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void conn_close_now(struct conn *c)
{
	conn_io_flush(c);
	if (c->fd >= 0)
		while (evbuffer_get_length(c->out) > 0 && evbuffer_write(c->out, c->fd) > 0)
			;
	conn_close(c);
}

void conn_close_after_flush(struct conn *c)
{
	conn_io_flush(c);
	if (c->fd < 0)
		return;
	c->st = CONN_CLOSING;
	evtimer_del(c->ev_deadline);
	conn_io_reading(c, false);
	evbuffer_drain(c->in, evbuffer_get_length(c->in));
	if (evbuffer_get_length(c->out) == 0 || c->w->exiting) {
		conn_close_now(c);
		return;
	}
	/* Re-armed with the flush timeout. */
	conn_io_writing(c, false);
	conn_io_writing(c, true);
}
