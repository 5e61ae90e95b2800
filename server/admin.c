/* admin.c - the HTTP admin endpoint (GET /stats, /metrics, /healthz) on its
 * own thread and event loop.
 *
 * Invariants:
 *  1. The event_base, the evhttp and the listening socket belong to the admin
 *     thread between admin_start and admin_stop; the only call made on them
 *     from another thread is event_base_loopexit (thread-safe because
 *     evthread_use_pthreads() runs before the base is created).
 *  2. Each request gets a fresh snapshot from the fill callback, on the admin
 *     thread; nothing is cached between requests.
 *  3. A unix socket file is removed by admin_stop only if admin_start
 *     created it; it is created with mode 0660 (bound under umask 0117).
 *  4. Out of descriptors, the listener pauses for ADMIN_PAUSE_MS instead of
 *     spinning on accept: one log line and one count per pause.
 *  5. On a TCP address every local user can connect, so /stats and
 *     /metrics leave out per-process detail (client pids); the unix
 *     socket, whose file mode restricts it, keeps it.
 *
 * Life cycle:  admin_start --(thread: event_base_dispatch)--> serving
 *              serving --admin_stop: loopexit, join, free--> gone
 */
#include "admin.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/queue.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include "log.h"

#define ADMIN_BACKLOG 64
#define ADMIN_TIMEOUT_S 10
#define ADMIN_PAUSE_MS 100

struct admin {
	struct event_base *base;
	struct evhttp *http;
	pthread_t thread;
	bool thread_started;
	admin_fill_fn fill;
	void *arg;
	char *unix_path;        /* socket file we created, or NULL (TCP) */
	struct evconnlistener *lev; /* owned by http */
	struct event *ev_resume;    /* re-enables accept after a pause */
	_Atomic uint64_t pauses;    /* accept paused: out of descriptors */
	LIST_ENTRY(admin) link;     /* admins_live, while lev is set */
	char address[160];      /* "unix:PATH" or "HOST:PORT" */
};

/* evhttp gives its listener's callbacks its own argument: the error
 * callback finds its admin here, by listener. */
static LIST_HEAD(, admin) admins_live = LIST_HEAD_INITIALIZER(admins_live);
static pthread_mutex_t admins_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t evthread_once = PTHREAD_ONCE_INIT;
static int evthread_rc;

static void evthread_init(void)
{
	/* Idempotent in libevent when the main program also calls it. */
	evthread_rc = evthread_use_pthreads();
}

/* ---- request handling ---------------------------------------------------- */

static void admin_reply(struct evhttp_request *req, int code, const char *reason,
                        const char *ctype, struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply(req, code, reason, body);
}

static void admin_error(struct evhttp_request *req, int code, const char *reason)
{
	struct evbuffer *b = evbuffer_new();
	if (b != NULL)
		evbuffer_add_printf(b, "%d %s\n", code, reason);
	if (code == 405)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
	admin_reply(req, code, reason, "text/plain; charset=utf-8", b);
	if (b != NULL)
		evbuffer_free(b);
}

static void admin_handle(struct evhttp_request *req, void *arg)
{
	struct admin *a = arg;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum { R_NONE, R_STATS, R_METRICS, R_HEALTH } route = R_NONE;

	if (path != NULL) {
		if (strcmp(path, "/stats") == 0)
			route = R_STATS;
		else if (strcmp(path, "/metrics") == 0)
			route = R_METRICS;
		else if (strcmp(path, "/healthz") == 0)
			route = R_HEALTH;
	}
	if (route == R_NONE) {
		admin_error(req, HTTP_NOTFOUND, "Not Found");
		return;
	}
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		admin_error(req, 405, "Method Not Allowed");
		return;
	}

	struct evbuffer *body = evbuffer_new();
	struct stats_snapshot *snap = NULL;
	int rc = 0;
	if (body == NULL)
		goto fail;
	if (route == R_HEALTH) {
		if (evbuffer_add(body, "ok\n", 3) != 0)
			goto fail;
		admin_reply(req, HTTP_OK, "OK", "text/plain; charset=utf-8", body);
		evbuffer_free(body);
		return;
	}
	/* The snapshot is large (per-op histograms): keep it off the stack. */
	snap = calloc(1, sizeof(*snap));
	if (snap == NULL)
		goto fail;
	a->fill(a->arg, snap);
	if (a->unix_path == NULL)
		snap->nclients_rp = 0;   /* invariant 5 */
	if (route == R_STATS)
		rc = stats_render_json(snap, body);
	else
		rc = stats_render_prometheus(snap, body);
	if (rc < 0)
		goto fail;
	admin_reply(req, HTTP_OK, "OK",
	            route == R_STATS ? "application/json" : "text/plain; version=0.0.4",
	            body);
	evbuffer_free(body);
	free(snap);
	return;
fail:
	free(snap);
	if (body != NULL)
		evbuffer_free(body);
	log_warn("admin: out of memory rendering %s", path);
	evhttp_send_error(req, HTTP_INTERNAL, "Out of memory");
}

/* ---- listening sockets --------------------------------------------------- */

static int admin_listen_unix(struct admin *a, const char *path, int *out_fd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd = -1, rc;

	if (path[0] == '\0' || strlen(path) >= sizeof(sun.sun_path))
		return -EINVAL;
	memcpy(sun.sun_path, path, strlen(path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			rc = -EADDRINUSE; /* not ours to remove */
			goto fail;
		}
		/* A live server answers; a stale file does not. */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0) {
			rc = -errno;
			goto fail;
		}
		int live = connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		close(probe);
		if (live) {
			rc = -EADDRINUSE;
			goto fail;
		}
		if (unlink(path) < 0 && errno != ENOENT) {
			rc = -errno;
			goto fail;
		}
	}
	/* Born 0660 (invariant 3): no window with looser permissions. */
	mode_t mask = umask(0117);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? -errno : 0;
	umask(mask);
	if (rc < 0)
		goto fail;
	if (listen(fd, ADMIN_BACKLOG) < 0) {
		rc = -errno;
		unlink(path);
		goto fail;
	}
	a->unix_path = strdup(path);
	if (a->unix_path == NULL) {
		rc = -ENOMEM;
		unlink(path);
		goto fail;
	}
	snprintf(a->address, sizeof(a->address), "unix:%s", path);
	*out_fd = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

static int admin_listen_inet(struct admin *a, const char *addr, bool allow_remote, int *out_fd)
{
	char host[128];
	const char *colon = strrchr(addr, ':');
	const char *port;
	size_t hl;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
	                          .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, rc, one = 1;

	if (colon == NULL)
		return -EINVAL;
	port = colon + 1;
	if (*port == '\0' || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    atoi(port) > 65535)
		return -EINVAL;
	if (addr[0] == '[') {
		if (colon == addr || colon[-1] != ']')
			return -EINVAL;
		hl = (size_t)(colon - addr) - 2;
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr + 1, hl);
		hints.ai_family = AF_INET6;
		hints.ai_flags |= AI_NUMERICHOST;
	} else {
		hl = (size_t)(colon - addr);
		if (hl >= sizeof(host) || memchr(addr, ':', hl) != NULL)
			return -EINVAL; /* a bare IPv6 address needs brackets */
		memcpy(host, addr, hl);
	}
	host[hl] = '\0';

	rc = getaddrinfo(hl > 0 && strcmp(host, "*") != 0 ? host : NULL, port, &hints, &res);
	if (rc != 0)
		return rc == EAI_MEMORY ? -ENOMEM : -EINVAL;
	if (!allow_remote && !addr_is_loopback(res->ai_addr)) {
		rc = -EPERM;
		goto fail;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
	            res->ai_protocol);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, ADMIN_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		rc = -errno;
		goto fail;
	}
	char ip[INET6_ADDRSTRLEN];
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(a->address, sizeof(a->address), "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(a->address, sizeof(a->address), "%s:%u", ip, ntohs(in->sin_port));
	}
	freeaddrinfo(res);
	*out_fd = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return rc;
}

static void admin_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin *a = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(a->lev);
}

/* Invariant 4: libevent's default would log every failed accept and retry
 * at once, as fast as the loop turns. */
static void admin_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct admin *a;
	int e = EVUTIL_SOCKET_ERROR();
	struct timeval tv = { .tv_usec = ADMIN_PAUSE_MS * 1000 };

	(void)arg;                  /* evhttp's, not ours */
	pthread_mutex_lock(&admins_mu);
	LIST_FOREACH(a, &admins_live, link)
		if (a->lev == lev)
			break;
	pthread_mutex_unlock(&admins_mu);
	if (a == NULL)
		return;

	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		atomic_fetch_add(&a->pauses, 1);
		log_warn("admin: accept: %s: pausing accepts for %d ms", strerror(e),
		         ADMIN_PAUSE_MS);
		evconnlistener_disable(lev);
		event_add(a->ev_resume, &tv);
		return;
	}
	log_debug("admin: accept: %s", strerror(e));
}

/* ---- thread and life cycle ----------------------------------------------- */

static void *admin_main(void *arg)
{
	struct admin *a = arg;
	event_base_dispatch(a->base);
	return NULL;
}

static void admin_free(struct admin *a)
{
	if (a->lev != NULL) {
		pthread_mutex_lock(&admins_mu);
		LIST_REMOVE(a, link);
		pthread_mutex_unlock(&admins_mu);
	}
	if (a->http != NULL)
		evhttp_free(a->http); /* closes the listening socket */
	if (a->ev_resume != NULL)
		event_free(a->ev_resume);
	if (a->base != NULL)
		event_base_free(a->base);
	if (a->unix_path != NULL) {
		unlink(a->unix_path);
		free(a->unix_path);
	}
	free(a);
}

int admin_start(const char *addr, bool allow_remote, admin_fill_fn fill, void *arg,
                struct admin **out)
{
	struct admin *a = NULL;
	int fd = -1, rc;

	assert(fill != NULL && out != NULL);
	if (addr == NULL)
		return -EINVAL;
	pthread_once(&evthread_once, evthread_init);
	if (evthread_rc < 0)
		return -ENOMEM;

	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	a->fill = fill;
	a->arg = arg;

	if (strncmp(addr, "unix:", 5) == 0)
		rc = admin_listen_unix(a, addr + 5, &fd);
	else
		rc = admin_listen_inet(a, addr, allow_remote, &fd);
	if (rc < 0)
		goto fail;

	rc = -ENOMEM;
	a->base = event_base_new();
	if (a->base == NULL)
		goto fail;
	a->http = evhttp_new(a->base);
	if (a->http == NULL)
		goto fail;
	evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
	                           EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
	                           EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_timeout(a->http, ADMIN_TIMEOUT_S);
	evhttp_set_max_body_size(a->http, 64 * 1024);
	evhttp_set_gencb(a->http, admin_handle, a);
	a->ev_resume = evtimer_new(a->base, admin_resume_cb, a);
	if (a->ev_resume == NULL)
		goto fail;
	/* On success the listener owns fd (closed by evhttp_free). */
	struct evhttp_bound_socket *bs = evhttp_accept_socket_with_handle(a->http, fd);
	if (bs == NULL)
		goto fail;
	fd = -1;
	a->lev = evhttp_bound_socket_get_listener(bs);
	pthread_mutex_lock(&admins_mu);
	LIST_INSERT_HEAD(&admins_live, a, link);
	pthread_mutex_unlock(&admins_mu);
	evconnlistener_set_error_cb(a->lev, admin_accept_error_cb);

	rc = pthread_create(&a->thread, NULL, admin_main, a);
	if (rc != 0) {
		rc = -rc;
		goto fail;
	}
	a->thread_started = true;
	log_info("admin: listening on %s", a->address);
	*out = a;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	admin_free(a);
	return rc;
}

const char *admin_address(const struct admin *a)
{
	return a->address;
}

uint64_t admin_accept_pauses(struct admin *a)
{
	return atomic_load(&a->pauses);
}

void admin_halt(struct admin *a)
{
	if (a == NULL || !a->thread_started)
		return;
	event_base_loopexit(a->base, NULL);
	pthread_join(a->thread, NULL);
	a->thread_started = false;
}

void admin_stop(struct admin *a)
{
	if (a == NULL)
		return;
	admin_halt(a);
	admin_free(a);
}
