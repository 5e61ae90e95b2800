/* rpc.c - the unix-socket RPC server: an acceptor thread hands accepted
 * sockets round-robin to worker threads, each running its own event_base
 * with the connections it was given (conn.c speaks the protocol on them).
 *
 * Threads: the acceptor runs r->abase (listener, EMFILE pause, stop event);
 * worker i runs r->w[i].base and takes fds from its queue in
 * worker_notify_cb; rpc_stop stops the acceptor first, then each worker.
 *
 * Invariants:
 *  1. r->nconns counts connections from accept until conn_close (queued to a
 *     worker included); it is what max_conns is checked against. Likewise
 *     r->nprehello and the worker's nprehello count them from accept until
 *     they leave HELLO.
 *  2. A worker exits only after rpc_stop asked it to and no conn of its own
 *     is left allocated (waiting callbacks have all come back).
 *  3. Past max_conns a new connection is still taken when some connection
 *     has not said its Hello yet: it goes to a worker holding one, which
 *     closes its oldest such connection first (conn.c, conn_make_room).
 *  4. Out of descriptors, the listener pauses for RPC_ACCEPT_PAUSE_MS
 *     instead of spinning: one log line and one count per pause.
 *  5. The threads are named for ps, top and perf: the workers
 *     "mcached-conn", the acceptor "mcached-accept".
 *  6. A worker that has just read a request polls its connections for the
 *     next one before it sleeps in epoll_wait (mc_busypoll.h: the window
 *     adapts to how soon requests come; --busy-poll-us bounds it, 0 turns
 *     it off). A poll runs the event loop without blocking, then
 *     sched_yield(): the committer, another worker or the client itself
 *     get the CPU whenever they can run on it; a yield that ran another
 *     thread for a while, after which no request has come, ends the poll
 *     and turns polling off for a while (mc_busypoll_contended). Only a
 *     read that brought bytes counts as the work a poll waits for
 *     (w->reads); timers, hand-overs and commit callbacks run during a
 *     poll as they would after a sleep.
 */
#include "rpc.h"

#include <assert.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "frame.h"
#include "log.h"
#include "mc_busypoll.h"
#include "stats.h"

#define RPC_ACCEPT_PAUSE_MS 100
/* Descriptors kept for everything but client connections: LMDB, the
 * segments, event loops and their notification pipes, the admin endpoint. */
#define RPC_FD_RESERVE 64u

bool rpc_log_ok(struct rpc *r)
{
	uint64_t now = mono_us(), next = atomic_load(&r->log_next_us);

	return now >= next && atomic_compare_exchange_strong(&r->log_next_us, &next,
	                                                     now + 1000000);
}

/* ---- workers --------------------------------------------------------- */

/* Take back an accepted connection's counts (invariant 1). */
static void rpc_uncount(struct worker *w)
{
	atomic_fetch_sub(&w->r->nconns, 1);
	atomic_fetch_sub(&w->r->nprehello, 1);
	atomic_fetch_sub(&w->nprehello, 1);
}

static void worker_notify_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	bool stop;

	(void)fd;
	(void)what;
	for (;;) {
		int *q;
		size_t nq;

		/* The whole queue, taken in the order accepted: the oldest
		 * connection before Hello is the first one closed for room. */
		pthread_mutex_lock(&w->mu);
		stop = w->stop;
		q = w->q;
		nq = w->nq;
		w->q = NULL;
		w->nq = w->cap = 0;
		pthread_mutex_unlock(&w->mu);
		if (nq == 0) {
			free(q);
			break;
		}
		for (size_t i = 0; i < nq; i++) {
			if (stop) {
				close(q[i]);
				rpc_uncount(w);
			} else if (conn_new(w, q[i]) < 0) {
				rpc_uncount(w);
			}
		}
		free(q);
	}
	if (!stop || w->exiting)
		return;
	/* Shut down: close every conn except those whose reply is held; their
	 * callbacks finish them (invariant 2). */
	w->exiting = true;
	conn_close_all(w);
	if (w->nalloc == 0)
		event_base_loopexit(w->base, NULL);
}

static void worker_shed_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_shed(arg);
}

struct worker_wait {
	struct worker *w;
	uint64_t seen;             /* w->reads when the poll began */
};

/* mc_busypoll_run's check: run the loop without blocking; done when a read
 * came, or the loop was told to exit. */
static bool worker_ready(void *arg)
{
	struct worker_wait *ww = arg;

	event_base_loop(ww->w->base, EVLOOP_NONBLOCK);
	return ww->w->reads != ww->seen || event_base_got_exit(ww->w->base);
}

/* Invariant 6: poll for up to the window after a read. True when a read
 * came meanwhile; false when none did, or when the loop was told to exit
 * (the caller must then look before it runs the loop again: the next
 * event_base_loop call would forget it, as it clears the flag as it
 * starts). */
static bool worker_poll(struct worker *w, struct mc_busypoll *bp)
{
	struct worker_wait ww = { w, w->reads };
	uint64_t t0 = mono_ns();

	mc_busypoll_run(bp, worker_ready, &ww);
	bool hit = w->reads != ww.seen;
	atomic_fetch_add_explicit(hit ? &w->stats.busy_polls : &w->stats.busy_poll_misses, 1,
	                          memory_order_relaxed);
	w->poll_ns += mono_ns() - t0;
	atomic_fetch_add_explicit(&w->stats.busy_poll_us, w->poll_ns / 1000, memory_order_relaxed);
	w->poll_ns %= 1000;
	return hit && !event_base_got_exit(w->base);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mc_busypoll bp;

	mc_busypoll_init(&bp, (uint64_t)w->r->o.busy_poll_us * 1000);
	if (bp.max == 0) {
		event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
		return NULL;
	}
	for (;;) {
		uint64_t seen = w->reads, t0 = mono_ns();

		event_base_loop(w->base, EVLOOP_ONCE | EVLOOP_NO_EXIT_ON_EMPTY);
		if (event_base_got_exit(w->base))
			break;
		if (w->reads == seen)
			continue;            /* not a request: sleep again */
		uint64_t now = mono_ns();
		mc_busypoll_slept(&bp, now - t0, now);
		while (bp.window > 0 && worker_poll(w, &bp))
			;
		if (event_base_got_exit(w->base))
			break;
	}
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
	if (w->ev_shed)
		event_free(w->ev_shed);
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
	TAILQ_INIT(&w->prehello);
	pthread_mutex_init(&w->mu, NULL);
	w->base = event_base_new();
	if (!w->base)
		goto fail;
	w->ev_notify = event_new(w->base, -1, 0, worker_notify_cb, w);
	w->ev_shed = event_new(w->base, -1, 0, worker_shed_cb, w);
	if (!w->ev_notify || !w->ev_shed)
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
	unsigned cap = r->o.max_prehello ? r->o.max_prehello : r->o.max_conns;
	bool full = r->o.max_conns && atomic_load(&r->nconns) >= r->o.max_conns;

	w = &r->w[r->next++ % r->nw];
	if (full || (cap && atomic_load(&r->nprehello) >= cap)) {
		/* Invariant 3: make room by closing one that has not said hello. */
		unsigned k;

		for (k = 0; k < r->nw && atomic_load(&w->nprehello) == 0; k++)
			w = &r->w[r->next++ % r->nw];
		if (k == r->nw && full) {
			atomic_fetch_add(&r->refused, 1);
			if (rpc_log_ok(r))
				log_warn("rpc: refusing a connection: %u open (max-connections)",
				         atomic_load(&r->nconns));
			close(fd);
			return;
		}
	}
	atomic_fetch_add(&r->nconns, 1);
	atomic_fetch_add(&r->nprehello, 1);
	atomic_fetch_add(&w->nprehello, 1);
	if (worker_post(w, fd) < 0) {
		close(fd);
		rpc_uncount(w);
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
	struct timeval tv = { .tv_usec = RPC_ACCEPT_PAUSE_MS * 1000 };

	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		/* Out of descriptors: pause instead of spinning (invariant 4). */
		atomic_fetch_add(&r->accept_pauses, 1);
		log_warn("rpc: accept: %s: pausing accepts for %d ms (%u connections open)",
		         strerror(e), RPC_ACCEPT_PAUSE_MS, atomic_load(&r->nconns));
		evconnlistener_disable(lev);
		event_add(r->ev_resume, &tv);
		return;
	}
	if (rpc_log_ok(r))
		log_warn("rpc: accept: %s", strerror(e));
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
	/* The socket file is born 0660: no chmod after bind, so no moment
	 * with looser permissions. umask is per process; nothing else creates
	 * files while the server starts. */
	mode_t mask = umask(0117);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(mask);
	if (err)
		goto fail;
	if (listen(fd, 1024) < 0) {
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

/* Raise RLIMIT_NOFILE (soft up to hard) to what max_conns needs, or lower
 * max_conns to what the limit allows. */
static void rpc_fd_limit(struct rpc_opts *o)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)o->max_conns + RPC_FD_RESERVE;

	if (o->max_conns == 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
		return;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
		rlim_t cur = rl.rlim_cur;

		rl.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
			log_info("rpc: descriptor limit raised from %llu to %llu for %u connections",
			         (unsigned long long)cur, (unsigned long long)need, o->max_conns);
			return;
		}
		rl.rlim_cur = cur;
	} else {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	unsigned fit = rl.rlim_cur > 2 * RPC_FD_RESERVE ? (unsigned)(rl.rlim_cur - RPC_FD_RESERVE)
	                                                : (unsigned)(rl.rlim_cur / 2);
	if (fit == 0)
		fit = 1;
	log_warn("rpc: descriptor limit %llu (hard %llu) is too low for --max-connections %u: "
	         "serving at most %u connections", (unsigned long long)rl.rlim_cur,
	         (unsigned long long)rl.rlim_max, o->max_conns, fit);
	o->max_conns = fit;
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
	if (r->o.max_reply == 0)
		r->o.max_reply = r->o.max_frame;
	if (r->o.max_reply > MC_FRAME_MAX)
		r->o.max_reply = MC_FRAME_MAX;
	if (r->o.conn_output_max == 0)
		r->o.conn_output_max = 4u << 20;
	rpc_fd_limit(&r->o);
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
		pthread_setname_np(w->th, "mcached-conn");     /* invariant 5 */
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
	pthread_setname_np(r->ath, "mcached-accept");
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
	atomic_store(&out->limits[STATS_LIMIT_ACCEPT_PAUSES], atomic_load(&r->accept_pauses));
	atomic_store(&out->limits[STATS_LIMIT_REFUSED], atomic_load(&r->refused));
	atomic_store(&out->output_bytes, atomic_load(&r->out_total));
}

unsigned rpc_max_conns(struct rpc *r)
{
	return r->o.max_conns;
}

unsigned rpc_clients(struct rpc *r)
{
	return atomic_load(&r->nconns);
}
