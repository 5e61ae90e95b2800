/* rpc_fixture.h - what test-rpc.c and its siblings (test-rpc_frame.c,
 * test-rpc_socket.c, test-rpc_durable.c, test-rpc_workers.c) share: the
 * stand-ins for the namespace and the committer the RPC server is linked
 * against, a server started on a temporary socket, and a raw client that
 * speaks frames to it. The stand-ins are definitions of the symbols the
 * server calls (session_new, ops_exec, commit_wait_async, ...), so a
 * program includes this header in its one test source and nowhere else. */
#ifndef MC_TEST_RPC_FIXTURE_H
#define MC_TEST_RPC_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "commit.h"
#include "frame.h"
#include "mcd.h"
#include "ops.h"
#include "rpc.h"
#include "watch.h"

/* ---- stand-ins for the namespace and the committer ------------------- */

/* Ops the stand-in understands:
 *   STAT      attr.ino = path length
 *   LSTAT     err = ENOENT
 *   CHOWN     attr.uid/gid = session's credentials, attr.nlink = ngroups
 *   READLINK  data = op.size bytes of 'x'
 *   SYNC      wait_seq = SEQ_OK    (durable after COMMIT_DELAY_MS)
 *   FSYNC     wait_seq = SEQ_FAIL  (the commit fails: -EIO)
 *   TRUNCATE  wait_seq = SEQ_NOMEM (commit_wait_async fails: -ENOMEM)
 *   UTIMENS   wait_seq = SEQ_DONE  (already durable: called back inline)
 *   RMTREE    takes op.size microseconds (a slow op)
 *   others    err = ENOSYS */
#define SEQ_OK    7
#define SEQ_FAIL  8
#define SEQ_NOMEM 9
#define SEQ_DONE  10
#define COMMIT_DELAY_MS 100

struct session {
	struct cred cred;
	struct watch_sess ws;        /* nobody watches here: never pending */
};

static _Atomic int sessions_live;
static _Atomic int sessions_made;

struct session *session_new(struct mcd *m, const struct cred *cred)
{
	struct session *s = malloc(sizeof(*s));

	(void)m;
	if (!s)
		return NULL;
	s->cred = *cred;
	memset(&s->ws, 0, sizeof(s->ws));
	atomic_fetch_add(&sessions_live, 1);
	atomic_fetch_add(&sessions_made, 1);
	return s;
}

uint32_t session_slot(const struct session *s)
{
	(void)s;
	return UINT32_MAX;
}

struct watch_sess *session_watch(struct session *s)
{
	return &s->ws;
}

int watch_publish(struct watch_hub *h, struct watch_sess *s, void (*cb)(void *arg, int err),
                  void *arg)
{
	(void)h;
	(void)s;
	(void)cb;
	(void)arg;
	return 0;
}

void session_free(struct session *s)
{
	atomic_fetch_sub(&sessions_live, 1);
	free(s);
}

/* Runs of ops under one lock (ops.h): the stand-in checks that they nest
 * properly and hold only the ops that may run inside one. */
static _Thread_local int holding;
static atomic_uint holds_begun;

static inline bool stand_in_holds(const Mcache__Op *op)
{
	return op->code == MCACHE__OP_CODE__OP_CREATE || op->code == MCACHE__OP_CODE__OP_UNLINK ||
	       op->code == MCACHE__OP_CODE__OP_MKDIR || op->code == MCACHE__OP_CODE__OP_RMDIR;
}

bool ops_holds(const struct session *s, const Mcache__Op *op)
{
	(void)s;
	return stand_in_holds(op);
}

void ops_hold_begin(struct session *s)
{
	(void)s;
	assert_int_equal(holding, 0);
	holding = 1;
	atomic_fetch_add(&holds_begun, 1);
}

void ops_hold_yield(struct session *s)
{
	(void)s;
	assert_int_equal(holding, 1);
}

void ops_hold_end(struct session *s)
{
	(void)s;
	assert_int_equal(holding, 1);
	holding = 0;
}

void ops_hold_prefetch(struct session *s, const Mcache__Op *op)
{
	(void)s;
	assert_int_equal(holding, 1); /* only inside a run */
	assert_true(stand_in_holds(op));
}

bool ops_prepare(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	(void)s;
	assert_int_equal(holding, 0); /* before the run */
	if (!stand_in_holds(op))
		return false;
	memset(out, 0, sizeof(*out));
	mcache__result__init(&out->res);
	out->bare = true;
	return true;
}

void ops_run(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	assert_int_equal(holding, 1); /* only inside a run */
	ops_exec(s, op, out);
}

void ops_ran(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	(void)s;
	(void)op;
	(void)out;
	assert_int_equal(holding, 0); /* after the run */
}

void ops_exec(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	/* Nothing but those ops runs inside a run. */
	assert_true(!holding || stand_in_holds(op));
	memset(out, 0, sizeof(*out));
	mcache__result__init(&out->res);
	mcache__attr__init(&out->attr);
	switch (op->code) {
	case MCACHE__OP_CODE__OP_STAT:
		out->attr.ino = op->path.len;
		out->res.attr = &out->attr;
		break;
	case MCACHE__OP_CODE__OP_LSTAT:
		out->res.err = ENOENT;
		break;
	case MCACHE__OP_CODE__OP_CHOWN:
		out->attr.uid = s->cred.uid;
		out->attr.gid = s->cred.gid;
		out->attr.nlink = (uint32_t)s->cred.ngroups;
		out->res.attr = &out->attr;
		break;
	case MCACHE__OP_CODE__OP_READLINK:
		out->data = malloc(op->size);
		assert_non_null(out->data);
		memset(out->data, 'x', op->size);
		out->res.data.data = out->data;
		out->res.data.len = op->size;
		break;
	case MCACHE__OP_CODE__OP_SYNC:
		out->wait_seq = SEQ_OK;
		break;
	case MCACHE__OP_CODE__OP_FSYNC:
		out->wait_seq = SEQ_FAIL;
		break;
	case MCACHE__OP_CODE__OP_TRUNCATE:
		out->wait_seq = SEQ_NOMEM;
		break;
	case MCACHE__OP_CODE__OP_UTIMENS:
		out->wait_seq = SEQ_DONE;
		break;
	case MCACHE__OP_CODE__OP_RMTREE:
		usleep((useconds_t)op->size);
		break;
	default:
		out->res.err = ENOSYS;
		break;
	}
}

void op_out_release(struct op_out *out)
{
	free(out->data);
	out->data = NULL;
}

struct waiter {
	commit_done_fn fn;
	void *arg;
	int err;
};

static pthread_mutex_t waiters_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t waiter_th[256];
static unsigned nwaiters;
static _Atomic int callbacks_done;
/* Waits that commit_wait_async started (the ones a waiter thread answers). */
static _Atomic int waits_started;
static int commit_token;

static inline void *waiter_main(void *arg)
{
	struct waiter *wt = arg;

	usleep(COMMIT_DELAY_MS * 1000);
	wt->fn(wt->arg, wt->err);
	atomic_fetch_add(&callbacks_done, 1);
	free(wt);
	return NULL;
}

int commit_wait_async(struct commit *c, uint64_t seq, commit_done_fn fn, void *arg)
{
	struct waiter *wt;

	assert_ptr_equal(c, (struct commit *)&commit_token);
	if (seq == SEQ_NOMEM)
		return -ENOMEM;
	if (seq == SEQ_DONE) {
		fn(arg, 0);
		atomic_fetch_add(&callbacks_done, 1);
		return 0;
	}
	wt = malloc(sizeof(*wt));
	assert_non_null(wt);
	wt->fn = fn;
	wt->arg = arg;
	wt->err = seq == SEQ_FAIL ? -EIO : 0;
	atomic_fetch_add(&waits_started, 1);
	pthread_mutex_lock(&waiters_mu);
	assert_true(nwaiters < 256);
	assert_int_equal(pthread_create(&waiter_th[nwaiters++], NULL, waiter_main, wt), 0);
	pthread_mutex_unlock(&waiters_mu);
	return 0;
}

static inline void waiters_join(void)
{
	pthread_mutex_lock(&waiters_mu);
	for (unsigned i = 0; i < nwaiters; i++)
		pthread_join(waiter_th[i], NULL);
	nwaiters = 0;
	pthread_mutex_unlock(&waiters_mu);
}

/* ---- fixture ---------------------------------------------------------- */

#define SHM_SIZE  8192
#define MAX_FRAME 65536
#define MAX_CONNS 8

struct fx {
	char dir[64];
	char path[96];
	int shm_fd;
	struct mcd m;
	struct rpc_opts o;
	struct rpc *r;
};

static inline int fx_start(struct fx *f)
{
	return rpc_start(&f->o, &f->m, &f->r);
}

static inline int fx_setup_opts(void **state, unsigned idle)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/test-rpc.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/mc.sock", f->dir);
	f->shm_fd = memfd_create("test-rpc-shm", MFD_CLOEXEC);
	if (f->shm_fd < 0 || ftruncate(f->shm_fd, SHM_SIZE) < 0 ||
	    pwrite(f->shm_fd, "MCSHM", 5, 0) != 5)
		return -1;
	f->m.commit = (struct commit *)&commit_token;
	f->o.socket_path = f->path;
	f->o.workers = 2;
	f->o.max_conns = MAX_CONNS;
	f->o.idle_timeout_s = idle;
	f->o.max_frame = MAX_FRAME;
	f->o.shm_fd = f->shm_fd;
	f->o.area_fd = -1;
	f->o.shm_size = SHM_SIZE;
	f->o.shm_version = 3;
	atomic_store(&sessions_live, 0);
	atomic_store(&sessions_made, 0);
	if (fx_start(f) != 0)
		return -1;
	*state = f;
	return 0;
}

static inline int fx_setup(void **state)
{
	return fx_setup_opts(state, 0);
}

static inline int fx_setup_idle(void **state)
{
	return fx_setup_opts(state, 1);
}

static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	if (f->r)
		rpc_stop(f->r);
	waiters_join();
	/* Every session made was freed. */
	assert_int_equal(atomic_load(&sessions_live), 0);
	unlink(f->path);
	rmdir(f->dir);
	close(f->shm_fd);
	free(f);
	return 0;
}

/* ---- raw client ------------------------------------------------------- */

static inline int cli_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static inline void cli_send(int fd, const Mcache__Request *req)
{
	uint8_t *buf;
	size_t len;

	assert_int_equal(frame_pack_request(req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
}

/* Read one Response; NULL with *err set when the read fails. */
static inline Mcache__Response *cli_recv(int fd, int *passfd, int *err)
{
	Mcache__Response *rsp;
	uint8_t *p;
	size_t len;
	int rc;

	rc = frame_read(fd, MC_FRAME_MAX, &p, &len, passfd);
	if (err)
		*err = rc;
	if (rc)
		return NULL;
	rsp = mcache__response__unpack(NULL, len, p);
	free(p);
	assert_non_null(rsp);
	return rsp;
}

static inline Mcache__Response *cli_recv_ok(int fd)
{
	int err = 0;
	Mcache__Response *rsp = cli_recv(fd, NULL, &err);

	if (!rsp)
		print_error("frame_read: %s\n", strerror(-err));
	assert_non_null(rsp);
	return rsp;
}

/* The server closed: the next read sees end of stream (or a reset). */
static inline void cli_expect_closed(int fd)
{
	int err = 0;

	assert_null(cli_recv(fd, NULL, &err));
	assert_int_equal(err, -ECONNRESET);
}

static inline void cli_send_hello(int fd, uint64_t id, uint32_t version)
{
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Hello h = MCACHE__HELLO__INIT;

	h.version = version;
	req.id = id;
	req.hello = &h;
	cli_send(fd, &req);
}

/* Connect and say hello; returns the socket. */
static inline int cli_open(const char *path)
{
	int fd = cli_connect(path), shm = -1, err;
	Mcache__Response *rsp;

	cli_send_hello(fd, 1, MC_PROTO_VERSION);
	rsp = cli_recv(fd, &shm, &err);
	assert_non_null(rsp);
	assert_int_equal(rsp->err, 0);
	assert_non_null(rsp->hello);
	assert_true(shm >= 0);
	close(shm);
	mcache__response__free_unpacked(rsp, NULL);
	return fd;
}

static inline void op_set(Mcache__Op *op, Mcache__OpCode code, const char *path)
{
	mcache__op__init(op);
	op->code = code;
	op->path.data = (uint8_t *)path;
	op->path.len = strlen(path);
}

/* Send one request with a single op. */
static inline void cli_send_op(int fd, uint64_t id, Mcache__OpCode code, const char *path)
{
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op op, *opp[1] = { &op };

	op_set(&op, code, path);
	req.id = id;
	req.n_ops = 1;
	req.ops = opp;
	cli_send(fd, &req);
}

/* One STAT round trip on a hello'd connection. */
static inline void cli_check_stat(int fd, uint64_t id, const char *path)
{
	Mcache__Response *rsp;

	cli_send_op(fd, id, MCACHE__OP_CODE__OP_STAT, path);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, id);
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->n_results, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	assert_non_null(rsp->results[0]->attr);
	assert_int_equal(rsp->results[0]->attr->ino, strlen(path));
	mcache__response__free_unpacked(rsp, NULL);
}

static inline uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Poll until rpc_clients equals want (connection teardown is async). */
static inline void wait_clients(struct rpc *r, unsigned want)
{
	uint64_t end = ms_now() + 5000;

	while (rpc_clients(r) != want && ms_now() < end)
		usleep(2000);
	assert_int_equal(rpc_clients(r), want);
}

#endif
