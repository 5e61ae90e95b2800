/* conn_io.h - what conn.c, conn_hello.c and conn_io.c share: struct conn,
 * the Hello (conn_hello.c) and the socket I/O of a connection (conn_io.c).
 * Not for use outside the RPC server. */
#ifndef MC_CONN_IO_H
#define MC_CONN_IO_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clients.h"
#include "conn.h"
#include "ops.h"

enum conn_state {
	CONN_HELLO,     /* waiting for the Hello request */
	CONN_READY,     /* reading and answering requests */
	CONN_RUNNING,   /* a request's ops running in slices (ev_step) */
	CONN_WAITING,   /* reply held until a commit is durable and watchers acknowledged */
	CONN_CLOSING,   /* last reply draining, then close */
	CONN_CLOSED,    /* fd gone, struct kept for the commit callback */
};

struct request_job;

/* Most replies one pass holds back to send together (conn_io_cork). */
#define CONN_CORK_MAX 64u

struct conn {
	struct worker *w;
	struct conn *prev, *next;    /* w->conns */
	TAILQ_ENTRY(conn) pq;        /* w->prehello, while in_prehello */
	bool in_prehello;
	int fd;                      /* -1 once closed */
	enum conn_state st;
	int refs;                    /* worker thread only; invariant 2 */
	bool throttled;              /* reading paused for output backpressure */
	struct cred cred;
	pid_t pid;
	struct session *sess;
	struct event *ev_done;       /* activated by conn_commit_cb */
	struct event *ev_deadline;   /* hello or frame timeout (invariant 5) */
	struct event *ev_step;       /* runs the next slice of job */
	struct request_job *job;     /* while RUNNING */
	_Atomic int wait_err;        /* commit result, set before ev_done fires */
	_Atomic unsigned nwaits;     /* waits (commit, watchers) left before ev_done fires */
	/* The reply held during WAITING. */
	uint8_t *held;
	size_t held_len;
	uint64_t held_id;
	size_t held_nres;
	bool held_direct;            /* the wait's end may send it (conn.c invariant 9) */
	size_t held_sent;            /* bytes of it that send took */
	size_t job_nops;             /* ops of the request being run */
	/* Socket I/O (conn_io.c). */
	struct evbuffer *in;         /* bytes read, not yet parsed */
	struct evbuffer *out;        /* reply bytes the socket did not take yet */
	struct evbuffer_cb_entry *out_cb;
	uint64_t out_acct;           /* bytes of out counted in r->out_total */
	struct event *ev_read;       /* added while reading */
	struct event *ev_write;      /* added while out is not empty */
	bool reading;
	bool writing;
	/* Replies made while corked, not yet tried on the socket (conn_io.c
	 * invariant 5): cork_buf[0..ncork), cork_bytes in all. */
	unsigned corked;             /* conn_io_cork depth */
	unsigned ncork;
	size_t cork_bytes;
	uint8_t *cork_buf[CONN_CORK_MAX];
	size_t cork_len[CONN_CORK_MAX];
	struct client_ent ent;       /* in r->m->clients from Hello to conn_close */
};

/* conn.c, for conn_io.c: parse and answer what is buffered; close. */
void conn_process(struct conn *c);
void conn_close(struct conn *c);

/* conn.c, for conn_hello.c: leave w->prehello (conn.c invariant 5); answer
 * a whole-request error (err > 0) and close once it is sent (conn_bad_frame:
 * for a frame that breaks the protocol, counted as a bad frame); send a
 * packed reply as conn_io_send does, taking buf (NULL: it could not be
 * built), else answer ENOMEM and close (0 or -ENOMEM). */
void conn_prehello_leave(struct conn *c);
void conn_fail(struct conn *c, uint64_t id, int err, const char *msg);
void conn_bad_frame(struct conn *c, uint64_t id, int err, const char *msg);
int conn_queue(struct conn *c, uint64_t id, uint8_t *buf, size_t len);

/* conn_hello.c, for conn.c: read and clamp the peer's credentials on fd
 * (0 or -errno); answer the Hello req of a conn in HELLO: READY once its
 * reply is on its way, else closing (conn_fail) or closed. */
int conn_read_cred(int fd, struct cred *cred, pid_t *pid);
void conn_hello(struct conn *c, const Mcache__Request *req);

/* Set up c's buffers and events on its fd (c->fd, c->w). 0 or -ENOMEM
 * (what was made is freed by conn_io_release). */
int conn_io_open(struct conn *c);
/* Free c's buffers and events and close its fd; unsent output is dropped
 * and taken out of r->out_total. No effect when none. */
void conn_io_release(struct conn *c);
/* Start or stop reading (the idle timeout runs while reading). */
void conn_io_reading(struct conn *c, bool on);
/* Send the framed reply buf[0..len) (malloc'd; taken in any case): written
 * at once when nothing is queued before it and the socket takes it, the
 * rest queued behind what is queued (replies leave in order); dropped
 * when c is closed. 0, or -ENOMEM when it could not be queued (buf
 * freed). */
int conn_io_send(struct conn *c, uint8_t *buf, size_t len);
/* Hold back the replies sent from here to the matching conn_io_uncork (the
 * parsing of what one read brought in), and send them then in one
 * sendmsg: one wakeup of the peer for the replies of a pipelined burst,
 * not one each. Nests; the outermost uncork sends. */
void conn_io_cork(struct conn *c);
void conn_io_uncork(struct conn *c);
/* Send the replies held back now (uncorked or not). */
void conn_io_flush(struct conn *c);
/* Queue buf[off..len) behind what is queued, taking buf. 0 or -ENOMEM. */
int conn_io_queue(struct conn *c, uint8_t *buf, size_t off, size_t len);
/* Unsent reply bytes. */
size_t conn_io_pending(const struct conn *c);
/* Over output_max in all (r->out_total). */
bool conn_io_over_total(const struct rpc *r);
/* Stop reading, drop unparsed input and close once the queued output is
 * sent (or CONN_FLUSH_TIMEOUT_S passed): CONN_CLOSING. */
void conn_close_after_flush(struct conn *c);
/* One nonblocking attempt to send what is queued, then conn_close. */
void conn_close_now(struct conn *c);
/* Disconnect c, which does not read its replies while the total is over
 * output_max (counted, logged at most once a second). */
void conn_shed_one(struct conn *c);

#endif
