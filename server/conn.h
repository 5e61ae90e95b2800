/* conn.h - what the RPC server's modules (rpc.c and the connection's
 * conn.c, conn_hello.c, conn_io.c) share: the server and worker state a
 * connection reads, and the calls a worker makes on its connections. Not
 * for use outside the RPC server. */
#ifndef MC_CONN_H
#define MC_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "rpc.h"
#include "stats.h"

struct conn;                     /* one client connection: conn_io.h */
TAILQ_HEAD(conn_list, conn);

struct worker {
	struct rpc *r;
	pthread_t th;
	struct event_base *base;
	struct event *ev_notify;     /* activated by the acceptor and rpc_stop */
	struct event *ev_shed;       /* activated when r->out_total passes output_max */
	_Atomic bool shed_pending;   /* ev_shed activated, not yet run */
	pthread_mutex_t mu;          /* guards q, nq, cap, stop */
	int *q;                      /* accepted fds not yet taken */
	size_t nq, cap;
	bool stop;
	bool exiting;                /* worker thread only */
	struct conn *conns;          /* every allocated conn (conn.c keeps it) */
	unsigned nalloc;
	struct conn_list prehello;   /* conns before Hello, oldest first */
	_Atomic unsigned nprehello;  /* its length (the acceptor reads it) */
	struct rpc_stats stats;
	uint64_t reads;              /* reads that brought bytes (rpc.c invariant 6); worker only */
	uint64_t poll_ns;            /* polling time not yet in stats.busy_poll_us; worker only */
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
	_Atomic unsigned nprehello;  /* conns before Hello, all workers */
	_Atomic uint64_t out_total;  /* unsent reply bytes, all conns */
	_Atomic uint64_t refused;    /* over max_conns */
	_Atomic uint64_t accept_pauses; /* listener paused for lack of descriptors */
	_Atomic uint64_t log_next_us;/* rpc_log_ok: next time a line may go out */
};

/* Worker thread: take over the accepted socket fd as a new connection on w,
 * waiting for its Hello. If the server is over max_conns or max_prehello,
 * w's oldest connection that has not said Hello is closed first; over
 * max_conns with none such, the newcomer is refused (-EBUSY). 0, -EBUSY,
 * -ENOMEM, or -errno from reading the peer's credentials; on failure fd is
 * closed and nothing else changes (the caller still owns its r->nconns and
 * nprehello counts). */
int conn_new(struct worker *w, int fd);
/* Worker thread, for shutdown (w->exiting set): close every conn of w at
 * once, after one nonblocking attempt to send what is queued, except those
 * whose reply is held for a commit; their commit callbacks finish them. */
void conn_close_all(struct worker *w);
/* Worker thread: while unsent replies exceed output_max, close w's
 * connections that stopped reading their replies (throttled ones). */
void conn_shed(struct worker *w);

/* Any thread: true at most once a second, for log lines an attacker could
 * otherwise repeat at will (the events are counted in any case). */
bool rpc_log_ok(struct rpc *r);

#endif
