/* client.c - libmcache's connection: connect and handshake, the shared-memory
 * mapping, the RPC call, fork detection, and mc_open descriptors.
 *
 * Connection states (see struct mc_client for the invariants; descriptors
 * are in fd.c):
 *
 *   mc_connect() ──► ready ──(short read/write, bad id, server gone)──► broken (ENOTCONN)
 *                      │                                      │
 *                      └──(fork: in the child)──► forked (ECHILD)
 *                                                             │
 *   every state ──mc_disconnect()──► freed (only the parent sends nothing
 *   either: closing the socket is the whole goodbye)
 */
#include "client_impl.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "mc_config.h"
#include "mc_shm.h"
#include "mc_socket.h"
#include "wire.h"

/* ---- fork detection ---------------------------------------------------- */

/* Bumped in the child by a pthread_atfork handler; never written elsewhere,
 * so threads of the parent read a constant. Calls compare it with the value
 * their client recorded at connect: no getpid() system call per call. */
static volatile unsigned fork_generation;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
	fork_generation++;
}

static void fork_register(void)
{
	/* On failure (ENOMEM) forks go unnoticed; nothing better to do. */
	(void)pthread_atfork(NULL, NULL, fork_child);
}

bool client_forked(const mc_client *c)
{
	return c->fork_gen != fork_generation;
}

int client_check(const mc_client *c)
{
	if (!c)
		return -EFAULT;
	if (client_forked(c))
		return -ECHILD;
	if (c->broken)
		return -ENOTCONN;
	return 0;
}

/* ---- connect ----------------------------------------------------------- */

int client_transport_error(mc_client *c, int err)
{
	c->broken = true;
	if (err == -ENOMEM || err == -EPROTO)
		return err;
	if (err == -EMSGSIZE)
		return -EPROTO;
	return -ENOTCONN;
}

struct hello_out {
	int fds[2];                   /* segment, client area */
	uint64_t shm_size;
	uint64_t area_size;
	uint32_t slot;
	uint32_t max_ops;
};

/* The handshake's own failures: a timeout (SO_RCVTIMEO/SO_SNDTIMEO ran
 * out) is -ETIMEDOUT, anything else as client_transport_error(). */
static int hello_error(mc_client *c, int err)
{
	if (err == -EAGAIN || err == -EWOULDBLOCK) {
		c->broken = true;
		return -ETIMEDOUT;
	}
	return client_transport_error(c, err);
}

static int client_hello(mc_client *c, struct hello_out *h)
{
	Mcache__Hello hello = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Response *rsp = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int fds[2] = { -1, -1 };
	int err;

	hello.version = MC_PROTO_VERSION;
	req.id = c->next_id++;
	req.hello = &hello;
	err = frame_pack_request(&req, MC_FRAME_MAX, &buf, &len);
	if (err < 0)
		goto fail;
	err = frame_write(c->sock, buf, len, -1);
	free(buf);
	buf = NULL;
	if (err < 0) {
		err = hello_error(c, err);
		goto fail;
	}
	err = frame_read_fds(c->sock, MC_FRAME_MAX, &buf, &len, fds, 2);
	if (err < 0) {
		err = hello_error(c, err);
		goto fail;
	}
	rsp = mcache__response__unpack(NULL, len, buf);
	err = -EPROTO;
	if (!rsp)
		goto fail;
	if (rsp->err > 0) {
		err = -rsp->err;
		goto fail;
	}
	if (rsp->id != req.id || !rsp->hello || rsp->hello->version != MC_PROTO_VERSION ||
	    rsp->hello->shm_version != MC_SHM_VERSION || fds[0] < 0 ||
	    rsp->hello->shm_size < sizeof(struct mc_shm_header) ||
	    rsp->hello->shm_size > MC_SHM_MAX_SIZE || rsp->hello->shm_size > SIZE_MAX)
		goto fail;
	h->fds[0] = fds[0];
	h->fds[1] = fds[1];
	h->shm_size = rsp->hello->shm_size;
	h->area_size = fds[1] >= 0 ? rsp->hello->area_size : 0;
	h->slot = rsp->hello->client_slot;
	h->max_ops = rsp->hello->max_ops;
	mcache__response__free_unpacked(rsp, NULL);
	free(buf);
	return 0;
fail:
	if (rsp)
		mcache__response__free_unpacked(rsp, NULL);
	free(buf);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return err;
}

/* Map the segment read-only and check its header. */
static int client_map(mc_client *c, int fd, uint64_t size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* A segment shorter than announced would SIGBUS a reader. */
	if (st.st_size < 0 || (uint64_t)st.st_size < size)
		return -EPROTO;
	void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	const struct mc_shm_header *h = p;
	if (h->magic != MC_SHM_MAGIC || h->version != MC_SHM_VERSION || h->size != size) {
		munmap(p, (size_t)size);
		return -EPROTO;
	}
	c->shm = p;
	c->shm_size = (size_t)size;
	return 0;
}

/* Map the client area read-write and find this client's slot and the
 * referenced bitmap, from the layout in the read-only header (checked here
 * once; the area itself is never read for layout, since any client may
 * write it). The area is optional: without it nothing is counted. */
static int client_map_area(mc_client *c, int fd, uint64_t size, uint32_t slot)
{
	const struct mc_shm_header *sh = c->shm;
	struct stat st;
	if (fd < 0 || size == 0 || size > SIZE_MAX)
		return 0;
	uint64_t nslots = sh->area_nslots, roff = sh->area_refbits_off;
	uint64_t rbytes = sh->area_refbits_bytes;
	if (sh->area_size != size || nslots * sizeof(struct mc_client_slot) > size ||
	    roff + rbytes > size || (roff & 7) || (rbytes & 7))
		return -EPROTO;
	if (fstat(fd, &st) < 0 || st.st_size < 0 || (uint64_t)st.st_size < size)
		return -EPROTO;
	void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	c->area = p;
	c->area_size = (size_t)size;
	if (slot < nslots)
		c->slot = (struct mc_client_slot *)p + slot;
	c->refbits = (_Atomic uint64_t *)((char *)p + roff);
	c->nbits = rbytes * 8;
	return 0;
}

/* $MCACHE_WALK_LIMITS="chain,depth,retries,links" overrides the walk's
 * bounds (for tests that force the fallback path). */
static void view_limits_from_env(struct view_limits *l)
{
	view_default_limits(l);
	const char *e = getenv("MCACHE_WALK_LIMITS");
	if (!e)
		return;
	unsigned v[4];
	if (sscanf(e, "%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3]) == 4) {
		l->chain = v[0];
		l->depth = v[1];
		l->retries = v[2];
		l->links = v[3];
	}
}

/* Set up the shared-memory read path: the view over the segment, with the
 * credentials the server saw at connect (SO_PEERCRED is taken at connect
 * too, so both sides check the same identity). */
static int client_view(mc_client *c)
{
	const char *e = getenv("MCACHE_LOCAL_READS");
	if (e && strcmp(e, "0") == 0)
		return 0;
	struct view *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int err = view_init(v, c->shm, c->shm_size);
	if (err < 0) {
		free(v);
		return err;
	}
	view_limits_from_env(&v->lim);
	v->cred.uid = (uint32_t)geteuid();
	v->cred.gid = (uint32_t)getegid();
	gid_t groups[64];
	int n = getgroups(64, groups);
	if (n < 0)
		n = 0; /* more than 64 groups: check with fewer, as the server does */
	for (int i = 0; i < n; i++)
		v->cred.groups[i] = (uint32_t)groups[i];
	v->cred.ngroups = n;
	v->refbits = c->refbits;
	v->nbits = c->nbits;
	v->slot = c->slot;
	c->view = v;
	return 0;
}

/* $MCACHE_CONNECT_TIMEOUT_MS, or MC_CONNECT_TIMEOUT_MS. */
static unsigned connect_timeout_ms(void)
{
	const char *e = getenv("MCACHE_CONNECT_TIMEOUT_MS");
	char *end;
	if (e && *e) {
		unsigned long v = strtoul(e, &end, 10);
		if (*end == 0 && v > 0 && v <= 3600000ul)
			return (unsigned)v;
	}
	return MC_CONNECT_TIMEOUT_MS;
}

static inline uint64_t mono_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Bound the socket's blocking sends and receives (connect(2) on a unix
 * socket waits for room in the listener's backlog as long as a send would)
 * to ms milliseconds; 0: no bound. */
static int sock_timeouts(int sock, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	if (setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

/* connect(2) and the handshake, within the connect timeout. */
static int client_dial(mc_client *c, const struct sockaddr_un *sa, struct hello_out *h)
{
	uint64_t limit = connect_timeout_ms();
	uint64_t t0 = mono_ms(CLOCK_MONOTONIC);
	int err = sock_timeouts(c->sock, limit);
	if (err < 0)
		return err;
	if (connect(c->sock, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS ? -ETIMEDOUT
		                                                                       : -errno;
	uint64_t spent = mono_ms(CLOCK_MONOTONIC) - t0;
	if (spent >= limit)
		return -ETIMEDOUT;
	err = sock_timeouts(c->sock, limit - spent);
	if (err == 0)
		err = client_hello(c, h);
	if (err == 0)
		err = sock_timeouts(c->sock, 0);  /* calls wait for their answer */
	return err;
}

mc_client *mc_connect(const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = mc_socket_path(socket_path);
	struct hello_out h = { .fds = { -1, -1 } };
	int err;

	pthread_once(&fork_once, fork_register);
	if (!*path) {
		errno = ENOENT;
		return NULL;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);

	/* Cache-line aligned, as the objects of a hot path. */
	size_t csize = (sizeof(struct mc_client) + 63) & ~(size_t)63;
	mc_client *c = aligned_alloc(64, csize);
	if (c)
		memset(c, 0, csize);
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->fork_gen = fork_generation;
	c->next_id = 1;
	mc_busypoll_init(&c->bp, mc_busypoll_client_ns());
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0) {
		err = -errno;
		goto fail;
	}
	err = client_dial(c, &sa, &h);
	if (err < 0)
		goto fail;
	c->max_ops = h.max_ops;
	err = client_map(c, h.fds[0], h.shm_size);
	if (err == 0)
		err = client_map_area(c, h.fds[1], h.area_size, h.slot);
	if (err == 0)
		err = client_view(c);
	close(h.fds[0]);
	if (h.fds[1] >= 0)
		close(h.fds[1]);
	if (err < 0)
		goto fail;
	c->broken = false;
	return c;
fail:
	if (c->sock >= 0)
		close(c->sock);
	if (c->shm)
		munmap((void *)c->shm, c->shm_size);
	if (c->area)
		munmap(c->area, c->area_size);
	free(c->view);
	pthread_mutex_destroy(&c->mu);
	free(c);
	errno = -err;
	return NULL;
}

void mc_disconnect(mc_client *c)
{
	if (!c)
		return;
	int saved = errno;
	/* Directories and batches first: they point at c. Their server
	 * handles die with the connection, so nothing is sent (and in a forked
	 * child nothing may be). */
	while (c->dirs)
		dir_free(c->dirs);
	while (c->batches)
		batch_free(c->batches);
	if (c->shm)
		munmap((void *)c->shm, c->shm_size);
	if (c->area)
		munmap(c->area, c->area_size);
	free(c->view);
	close(c->sock);
	free(c->fds);
	free(c->closes);
	free(c->rbuf);
	pthread_mutex_destroy(&c->mu);
	free(c);
	errno = saved;
}

static int call_raw(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out);

/* Send the queued closes in front of ops[0..n) and drop their results
 * (mu held). */
/* Send the queued closes alone, at most max_ops in a request. */
int do_client_flush_closes(mc_client *c)
{
	while (c->nclose > 0) {
		size_t k = c->nclose;
		if (c->max_ops && k > c->max_ops)
			k = c->max_ops;
		Mcache__Op *cl = calloc(k, sizeof(*cl));
		Mcache__Op **p = malloc(k * sizeof(*p));
		Mcache__Response *rsp;
		int err = -ENOMEM;
		if (cl && p) {
			for (size_t i = 0; i < k; i++) {
				mcache__op__init(&cl[i]);
				cl[i].code = MCACHE__OP_CODE__OP_CLOSE;
				cl[i].handle = c->closes[c->nclose - k + i];
				p[i] = &cl[i];
			}
			err = call_raw(c, p, k, &rsp);
		}
		free(cl);
		free(p);
		if (err < 0) {
			if (c->broken)
				c->nclose = 0;   /* the server releases them with the connection */
			return err;
		}
		mcache__response__free_unpacked(rsp, NULL);
		c->nclose -= k;
	}
	return 0;
}

static int do_call(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out)
{
	size_t k = c->nclose;
	if (k == 0 || client_check(c) < 0)
		return call_raw(c, ops, n, out);
	if (c->max_ops && k + n > c->max_ops) {
		/* The closes would push the request past the server's op limit. */
		int err = do_client_flush_closes(c);
		return err < 0 ? err : call_raw(c, ops, n, out);
	}
	Mcache__Op *cl = calloc(k, sizeof(*cl));
	Mcache__Op **all = malloc((k + n) * sizeof(*all));
	int err = -ENOMEM;
	if (!cl || !all)
		goto out;
	for (size_t i = 0; i < k; i++) {
		mcache__op__init(&cl[i]);
		cl[i].code = MCACHE__OP_CODE__OP_CLOSE;
		cl[i].handle = c->closes[i];
		all[i] = &cl[i];
	}
	for (size_t i = 0; i < n; i++)
		all[k + i] = ops[i];
	Mcache__Response *rsp;
	err = call_raw(c, all, k + n, &rsp);
	if (err == -E2BIG && n > 0) {
		/* The closes tipped a full request over the frame limit: alone. */
		err = call_raw(c, all, k, &rsp);
		if (err == 0) {
			mcache__response__free_unpacked(rsp, NULL);
			c->nclose = 0;
			err = call_raw(c, ops, n, out);
		}
		goto out;
	}
	if (err == 0 || c->broken)
		c->nclose = 0;   /* the server has them, or the connection is gone */
	if (err < 0)
		goto out;
	for (size_t i = 0; i < k; i++)
		mcache__result__free_unpacked(rsp->results[i], NULL);
	memmove(rsp->results, rsp->results + k, n * sizeof(*rsp->results));
	rsp->n_results = n;
	*out = rsp;
out:
	free(cl);
	free(all);
	return err;
}

int client_call(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out)
{
	Mcache__Cred *as = ops_stamp(c, ops, n);
	client_lock(c);
	int err = do_call(c, ops, n, out);
	client_unlock(c);
	ops_unstamp(ops, n, as);
	return err;
}

int client_close_handle(mc_client *c, uint64_t handle)
{
	client_lock(c);
	int err = do_client_close_handle(c, handle);
	client_unlock(c);
	return err;
}

int do_client_close_handle(mc_client *c, uint64_t handle)
{
	if (c->nclose >= CLIENT_CLOSE_QUEUE && !c->broken) {
		Mcache__Response *rsp;
		if (do_call(c, NULL, 0, &rsp) == 0)
			mcache__response__free_unpacked(rsp, NULL);
	}
	if (c->broken)
		return 0;   /* the server releases every handle of a closed connection */
	if (c->nclose == c->capclose) {
		/* Grows past CLIENT_CLOSE_QUEUE only while flushing fails. */
		size_t cap = c->capclose ? c->capclose * 2 : CLIENT_CLOSE_QUEUE;
		uint64_t *q = realloc(c->closes, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		c->closes = q;
		c->capclose = cap;
	}
	c->closes[c->nclose++] = handle;
	return 0;
}

/* ---- the shared-memory path ------------------------------------------- */

/* The heartbeat is stale (or from the future): peek at the socket, at most
 * once per CLIENT_PEEK_EVERY_MS. Out of line: the common case above it
 * keeps no registers for it. */
static __attribute__((noinline)) bool client_peek(mc_client *c, uint64_t now)
{
	uint64_t last = atomic_load_explicit(&c->peek_ms, memory_order_relaxed);
	if (now - last < CLIENT_PEEK_EVERY_MS ||
	    !atomic_compare_exchange_strong_explicit(&c->peek_ms, &last, now, memory_order_relaxed,
	                                             memory_order_relaxed))
		return true;    /* peeked lately, or another thread peeks now */
	char b;
	int saved = errno;      /* callers promise errno unchanged on success */
	ssize_t n = recv(c->sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	bool gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
	errno = saved;
	if (gone)
		c->broken = true;   /* the server is gone: its segment is stale */
	return !gone;
}

bool client_local(mc_client *c)
{
	if (!c->view || atomic_load_explicit(&c->broken, memory_order_relaxed))
		return false;
	uint64_t now = mono_ms(CLOCK_MONOTONIC_COARSE);
	uint64_t beat = atomic_load_explicit(&c->view->hdr->heartbeat_ms, memory_order_relaxed);
	/* |now - beat| <= stale, in one unsigned comparison: a beat from the
	 * future by more than that (another time namespace) is stale too. */
	if (now - beat + MC_HEARTBEAT_STALE_MS <= 2u * MC_HEARTBEAT_STALE_MS)
		return true;
	return client_peek(c, now);
}

int client_view_result(mc_client *c, int err)
{
	if (err == -ENOTCONN)
		c->broken = true;
	return err;
}

/* ---- the call ---------------------------------------------------------- */

/* One request with ops[0..n), one response with as many results. */
static int call_raw(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out)
{
	uint64_t id;
	int err = client_call_send(c, ops, n, &id);
	return err < 0 ? err : client_call_recv(c, id, n, false, out);
}

int client_op(mc_client *c, Mcache__Op *op, Mcache__Response **out)
{
	Mcache__Response *rsp = NULL;
	int err = client_call(c, &op, 1, &rsp);
	if (err < 0)
		return err;
	if (rsp->results[0]->err) {
		err = -rsp->results[0]->err;
		mcache__response__free_unpacked(rsp, NULL);
		return err;
	}
	*out = rsp;
	return 0;
}

/* The answer is an errno alone, so it is read as one (wire_response_errs)
 * instead of unpacked and freed: most of what a mutation costs the
 * library. With closes queued they go in front of op (do_call). */
int client_op_simple(mc_client *c, Mcache__Op *op)
{
	Mcache__Cred *as = ops_stamp(c, &op, 1);
	Mcache__Response *rsp = NULL;
	int32_t e = 0;
	uint64_t id;
	int err;

	client_lock(c);
	if (c->nclose > 0) {
		err = do_call(c, &op, 1, &rsp);
	} else {
		err = client_call_send(c, &op, 1, &id);
		if (err == 0)
			err = client_call_recv_errs(c, id, 1, &e, &rsp);
	}
	client_unlock(c);
	ops_unstamp(&op, 1, as);
	if (err < 0)
		return err;
	if (rsp) {
		e = rsp->results[0]->err;
		mcache__response__free_unpacked(rsp, NULL);
	}
	return e ? -e : 0;
}

void attr_to_stat(const Mcache__Attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)a->ino;
	st->st_mode = (mode_t)a->mode;
	st->st_nlink = (nlink_t)a->nlink;
	st->st_uid = (uid_t)a->uid;
	st->st_gid = (gid_t)a->gid;
	st->st_size = (off_t)a->size;
	st->st_rdev = (dev_t)a->rdev;
	st->st_blksize = 4096;
	st->st_blocks = 0;
	st->st_atim.tv_sec = (time_t)a->atime_sec;
	st->st_atim.tv_nsec = (long)a->atime_nsec;
	st->st_mtim.tv_sec = (time_t)a->mtime_sec;
	st->st_mtim.tv_nsec = (long)a->mtime_nsec;
	st->st_ctim.tv_sec = (time_t)a->ctime_sec;
	st->st_ctim.tv_nsec = (long)a->ctime_nsec;
}

int client_take_attr(Mcache__Response *rsp, struct stat *st)
{
	int err = 0;
	if (rsp->results[0]->attr)
		attr_to_stat(rsp->results[0]->attr, st);
	else
		err = -EPROTO;
	mcache__response__free_unpacked(rsp, NULL);
	return err;
}

/* ---- directories and batches of a client ------------------------------ */

void client_link_dir(mc_client *c, struct mc_dir *d)
{
	client_lock(c);
	d->c = c;
	d->prev = NULL;
	d->next = c->dirs;
	if (c->dirs)
		c->dirs->prev = d;
	c->dirs = d;
	client_unlock(c);
}

void client_unlink_dir(struct mc_dir *d)
{
	mc_client *c = d->c;
	client_lock(c);
	if (d->prev)
		d->prev->next = d->next;
	else
		c->dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	client_unlock(c);
}

void client_link_batch(mc_client *c, struct mc_batch *b)
{
	client_lock(c);
	b->c = c;
	b->prev = NULL;
	b->next = c->batches;
	if (c->batches)
		c->batches->prev = b;
	c->batches = b;
	client_unlock(c);
}

void client_unlink_batch(struct mc_batch *b)
{
	mc_client *c = b->c;
	client_lock(c);
	if (b->prev)
		b->prev->next = b->next;
	else
		c->batches = b->next;
	if (b->next)
		b->next->prev = b->prev;
	client_unlock(c);
}

int mc_sync(mc_client *c)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_SYNC;
	int err = client_op_simple(c, &op);
	return err < 0 ? client_fail(err) : 0;
}

char *client_op_text(mc_client *c, Mcache__Op *op, Mcache__Response **keep)
{
	Mcache__Response *rsp = NULL;
	int err = client_op(c, op, &rsp);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	const ProtobufCBinaryData *d = &rsp->results[0]->data;
	char *s = malloc(d->len + 1);
	if (!s) {
		mcache__response__free_unpacked(rsp, NULL);
		errno = ENOMEM;
		return NULL;
	}
	if (d->len)
		memcpy(s, d->data, d->len);
	s[d->len] = 0;
	if (keep)
		*keep = rsp;
	else
		mcache__response__free_unpacked(rsp, NULL);
	return s;
}

/* The data of an op that answers a document (stats, fsck) as a malloc'd
 * NUL-terminated string; NULL and errno on failure. */
static char *client_document(mc_client *c, Mcache__OpCode code)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = code;
	return client_op_text(c, &op, NULL);
}

char *mc_server_stats(mc_client *c)
{
	return client_document(c, MCACHE__OP_CODE__OP_STATS);
}

char *mc_server_fsck(mc_client *c)
{
	return client_document(c, MCACHE__OP_CODE__OP_FSCK);
}
