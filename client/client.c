/* client.c - libmcache's connection: connect and handshake, the shared-memory
 * mapping, the RPC call, fork detection, and mc_open descriptors.
 *
 * Connection states (see struct mc_client for the invariants):
 *
 *   mc_connect() ──► ready ──(short read/write, bad id)──► broken (ENOTCONN)
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
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "mc_config.h"
#include "mc_shm.h"

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

/* A transport error from frame_*: the stream may be out of step. */
static int transport_error(mc_client *c, int err)
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
};

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
		err = transport_error(c, err);
		goto fail;
	}
	err = frame_read_fds(c->sock, MC_FRAME_MAX, &buf, &len, fds, 2);
	if (err < 0) {
		err = transport_error(c, err);
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
 * referenced bitmap. The area is optional: without it nothing is counted. */
static int client_map_area(mc_client *c, int fd, uint64_t size, uint32_t slot)
{
	struct stat st;
	if (fd < 0 || size < sizeof(struct mc_area_header) || size > SIZE_MAX)
		return 0;
	if (fstat(fd, &st) < 0 || st.st_size < 0 || (uint64_t)st.st_size < size)
		return -EPROTO;
	void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	const struct mc_area_header *h = p;
	if (h->magic != MC_AREA_MAGIC || h->version != MC_AREA_VERSION || h->size != size ||
	    (uint64_t)h->slots_off + (uint64_t)h->nslots * sizeof(struct mc_client_slot) > size ||
	    (uint64_t)h->refbits_off + h->refbits_bytes > size || (h->refbits_off & 7)) {
		munmap(p, (size_t)size);
		return -EPROTO;
	}
	c->area = p;
	c->area_size = (size_t)size;
	if (slot < h->nslots)
		c->slot = (struct mc_client_slot *)((char *)p + h->slots_off) + slot;
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
	if (c->area) {
		const struct mc_area_header *h = c->area;
		v->refbits = (_Atomic uint64_t *)((char *)c->area + h->refbits_off);
		v->nbits = (uint64_t)h->refbits_bytes * 8;
		v->slot = c->slot;
	}
	c->view = v;
	return 0;
}

static const char *socket_default(const char *path)
{
	if (path)
		return path;
	const char *env = getenv("MCACHE_SOCKET");
	if (env && *env)
		return env;
	return MC_DEFAULT_SOCKET;
}

mc_client *mc_connect(const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = socket_default(socket_path);
	struct hello_out h = { { -1, -1 }, 0, 0, 0 };
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

	/* Cache-line aligned: clients of different threads must not share a
	 * line, since every local answer writes local_calls. */
	size_t csize = (sizeof(struct mc_client) + 63) & ~(size_t)63;
	mc_client *c = aligned_alloc(64, csize);
	if (c)
		memset(c, 0, csize);
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->fork_gen = fork_generation;
	c->next_id = 1;
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0) {
		err = -errno;
		goto fail;
	}
	if (connect(c->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto fail;
	}
	err = client_hello(c, &h);
	if (err < 0)
		goto fail;
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
	free(c);
	errno = saved;
}

static int call_raw(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out);

/* Send the queued closes in front of ops[0..n) and drop their results. */
int client_call(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out)
{
	size_t k = c->nclose;
	if (k == 0 || client_check(c) < 0)
		return call_raw(c, ops, n, out);
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

int client_close_handle(mc_client *c, uint64_t handle)
{
	if (c->nclose >= CLIENT_CLOSE_QUEUE && !c->broken) {
		Mcache__Response *rsp;
		if (client_call(c, NULL, 0, &rsp) == 0)
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

bool client_local(mc_client *c)
{
	if (!c->view || c->broken)
		return false;
	if (++c->local_calls < CLIENT_LIVENESS_EVERY)
		return true;
	c->local_calls = 0;
	char b;
	int saved = errno;      /* callers promise errno unchanged on success */
	ssize_t n = recv(c->sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	bool gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
	errno = saved;
	if (gone)
		c->broken = true;   /* the server is gone: its segment is stale */
	return !gone;
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
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Response *rsp = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	err = client_check(c);
	if (err < 0)
		return err;
	client_count(c, offsetof(struct mc_client_slot, rpcs));
	req.id = c->next_id++;
	req.n_ops = n;
	req.ops = ops;
	err = frame_pack_request(&req, MC_FRAME_MAX, &buf, &len);
	if (err < 0)
		return err == -EMSGSIZE ? -E2BIG : err;
	err = frame_write(c->sock, buf, len, -1);
	free(buf);
	buf = NULL;
	if (err < 0)
		return transport_error(c, err);
	err = frame_read(c->sock, MC_FRAME_MAX, &buf, &len, NULL);
	if (err < 0)
		return transport_error(c, err);
	rsp = mcache__response__unpack(NULL, len, buf);
	free(buf);
	if (!rsp) {
		/* The frame boundary held, but we cannot tell whose answer it was. */
		c->broken = true;
		return -EPROTO;
	}
	if (rsp->err > 0) {
		/* Whole-request error: the server closes the connection. */
		err = -rsp->err;
		c->broken = true;
		goto fail;
	}
	if (rsp->id != req.id) {
		c->broken = true;
		err = -EPROTO;
		goto fail;
	}
	/* An answer of the wrong shape: the server did something with the
	 * request, but we cannot tell what. */
	if (rsp->n_results != n) {
		c->broken = true;
		err = -EPROTO;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if (!rsp->results[i] || rsp->results[i]->err < 0) {
			c->broken = true;
			err = -EPROTO;
			goto fail;
		}
	}
	*out = rsp;
	return 0;
fail:
	mcache__response__free_unpacked(rsp, NULL);
	return err;
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

int client_op_simple(mc_client *c, Mcache__Op *op)
{
	Mcache__Response *rsp = NULL;
	int err = client_op(c, op, &rsp);
	if (err < 0)
		return err;
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
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
	st->st_blksize = 4096;
	st->st_blocks = 0;
	st->st_atim.tv_sec = (time_t)a->atime_sec;
	st->st_atim.tv_nsec = (long)a->atime_nsec;
	st->st_mtim.tv_sec = (time_t)a->mtime_sec;
	st->st_mtim.tv_nsec = (long)a->mtime_nsec;
	st->st_ctim.tv_sec = (time_t)a->ctime_sec;
	st->st_ctim.tv_nsec = (long)a->ctime_nsec;
}

/* ---- descriptors ------------------------------------------------------- */

int client_fd_reserve(mc_client *c, int *fd)
{
	size_t i;
	for (i = 0; i < c->nfds; i++) {
		if (!c->fds[i].used) {
			*fd = (int)i;
			return 0;
		}
	}
	if (c->nfds >= MC_CLIENT_FD_MAX)
		return -EMFILE;
	size_t n = c->nfds ? c->nfds * 2 : 16;
	if (n > MC_CLIENT_FD_MAX)
		n = MC_CLIENT_FD_MAX;
	struct mc_fdslot *p = realloc(c->fds, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + c->nfds, 0, (n - c->nfds) * sizeof(*p));
	c->fds = p;
	*fd = (int)c->nfds;
	c->nfds = n;
	return 0;
}

void client_fd_take(mc_client *c, int fd, uint64_t handle, uint64_t ino)
{
	c->fds[fd].handle = handle;
	c->fds[fd].ino = ino;
	c->fds[fd].used = true;
}

int client_fd_handle(const mc_client *c, int fd, uint64_t *handle)
{
	if (fd < 0 || (size_t)fd >= c->nfds || !c->fds[fd].used)
		return -EBADF;
	*handle = c->fds[fd].handle;
	return 0;
}

void client_fd_release(mc_client *c, int fd)
{
	c->fds[fd].used = false;
	c->fds[fd].handle = 0;
}

int mc_open(mc_client *c, const char *path, int flags, mode_t mode)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	int fd;
	int err = client_check(c);
	if (err < 0)
		return client_fail(err);
	err = path_check(path, NULL);
	if (err < 0)
		return client_fail(err);
	/* Reserve the slot first so a server handle is never left orphaned. */
	err = client_fd_reserve(c, &fd);
	if (err < 0)
		return client_fail(err);
	op.code = MCACHE__OP_CODE__OP_OPEN;
	path_set(&op.path, path);
	op.flags = (uint32_t)flags;
	op.mode = (uint32_t)mode;
	err = client_op(c, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	client_fd_take(c, fd, rsp->results[0]->handle,
	               rsp->results[0]->attr ? rsp->results[0]->attr->ino : 0);
	mcache__response__free_unpacked(rsp, NULL);
	return fd;
}

int mc_creat(mc_client *c, const char *path, mode_t mode)
{
	return mc_open(c, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* Run a handle op on descriptor fd. */
static int fd_op(mc_client *c, int fd, Mcache__Op *op, Mcache__Response **out)
{
	int err = client_check(c);
	if (err < 0)
		return err;
	err = client_fd_handle(c, fd, &op->handle);
	if (err < 0)
		return err;
	return client_op(c, op, out);
}

int mc_close(mc_client *c, int fd)
{
	uint64_t handle;
	int err = client_check(c);
	if (err == -EFAULT || err == -ECHILD)
		return client_fail(err);
	int herr = client_fd_handle(c, fd, &handle);
	if (herr < 0)
		return client_fail(herr);
	/* As close(2): the descriptor is gone even when the call failed. */
	client_fd_release(c, fd);
	if (err == 0)
		err = client_close_handle(c, handle);
	return err < 0 ? client_fail(err) : 0;
}

int mc_fstat(mc_client *c, int fd, struct stat *st)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	if (!st)
		return client_fail(-EFAULT);
	int err = client_check(c);
	if (err == 0 && fd >= 0 && (size_t)fd < c->nfds && c->fds[fd].used && c->fds[fd].ino &&
	    client_local(c)) {
		/* The inode is held in the cache while the descriptor is open. */
		err = client_view_result(c, view_stat_ino(c->view, c->fds[fd].ino, st));
		if (err <= 0)
			return err < 0 ? client_fail(err) : 0;
		err = 0;
	}
	op.code = MCACHE__OP_CODE__OP_FSTAT;
	err = fd_op(c, fd, &op, &rsp);
	if (err == 0)
		err = client_take_attr(rsp, st);
	return err < 0 ? client_fail(err) : 0;
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

int mc_ftruncate(mc_client *c, int fd, off_t length)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	int err = client_check(c);
	if (err < 0)
		return client_fail(err);
	if (length < 0)
		return client_fail(-EINVAL);
	op.code = MCACHE__OP_CODE__OP_FTRUNCATE;
	op.size = (uint64_t)length;
	err = fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}

int mc_fsync(mc_client *c, int fd)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_FSYNC;
	int err = fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}

int mc_sync(mc_client *c)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_SYNC;
	int err = client_op_simple(c, &op);
	return err < 0 ? client_fail(err) : 0;
}

char *mc_server_stats(mc_client *c)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_STATS;
	int err = client_op(c, &op, &rsp);
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
	mcache__response__free_unpacked(rsp, NULL);
	return s;
}
