/* test-rpc.c - the RPC server against stand-in ops and committer, driven
 * by raw clients speaking frames over the unix socket. */
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

static bool stand_in_holds(const Mcache__Op *op)
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
static int commit_token;

static void *waiter_main(void *arg)
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
	pthread_mutex_lock(&waiters_mu);
	assert_true(nwaiters < 256);
	assert_int_equal(pthread_create(&waiter_th[nwaiters++], NULL, waiter_main, wt), 0);
	pthread_mutex_unlock(&waiters_mu);
	return 0;
}

static void waiters_join(void)
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

static int fx_start(struct fx *f)
{
	return rpc_start(&f->o, &f->m, &f->r);
}

static int fx_setup_opts(void **state, unsigned idle)
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

static int fx_setup(void **state)
{
	return fx_setup_opts(state, 0);
}

static int fx_setup_idle(void **state)
{
	return fx_setup_opts(state, 1);
}

static int fx_teardown(void **state)
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

static int cli_connect(const char *path)
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

static void cli_send(int fd, const Mcache__Request *req)
{
	uint8_t *buf;
	size_t len;

	assert_int_equal(frame_pack_request(req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
}

/* Read one Response; NULL with *err set when the read fails. */
static Mcache__Response *cli_recv(int fd, int *passfd, int *err)
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

static Mcache__Response *cli_recv_ok(int fd)
{
	int err = 0;
	Mcache__Response *rsp = cli_recv(fd, NULL, &err);

	if (!rsp)
		print_error("frame_read: %s\n", strerror(-err));
	assert_non_null(rsp);
	return rsp;
}

/* The server closed: the next read sees end of stream (or a reset). */
static void cli_expect_closed(int fd)
{
	int err = 0;

	assert_null(cli_recv(fd, NULL, &err));
	assert_int_equal(err, -ECONNRESET);
}

static void cli_send_hello(int fd, uint64_t id, uint32_t version)
{
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Hello h = MCACHE__HELLO__INIT;

	h.version = version;
	req.id = id;
	req.hello = &h;
	cli_send(fd, &req);
}

/* Connect and say hello; returns the socket. */
static int cli_open(const char *path)
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

static void op_set(Mcache__Op *op, Mcache__OpCode code, const char *path)
{
	mcache__op__init(op);
	op->code = code;
	op->path.data = (uint8_t *)path;
	op->path.len = strlen(path);
}

/* Send one request with a single op. */
static void cli_send_op(int fd, uint64_t id, Mcache__OpCode code, const char *path)
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
static void cli_check_stat(int fd, uint64_t id, const char *path)
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

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Poll until rpc_clients equals want (connection teardown is async). */
static void wait_clients(struct rpc *r, unsigned want)
{
	uint64_t end = ms_now() + 5000;

	while (rpc_clients(r) != want && ms_now() < end)
		usleep(2000);
	assert_int_equal(rpc_clients(r), want);
}

/* ---- cases ------------------------------------------------------------ */

static void test_hello_passes_segment(void **state)
{
	struct fx *f = *state;
	int fd = cli_connect(f->path), shm = -1, err;
	Mcache__Response *rsp;
	struct stat st;
	char magic[6] = { 0 };

	cli_send_hello(fd, 41, MC_PROTO_VERSION);
	rsp = cli_recv(fd, &shm, &err);
	assert_non_null(rsp);
	assert_int_equal(rsp->id, 41);
	assert_int_equal(rsp->err, 0);
	assert_non_null(rsp->hello);
	assert_int_equal(rsp->hello->version, MC_PROTO_VERSION);
	assert_int_equal(rsp->hello->shm_version, 3);
	assert_int_equal(rsp->hello->shm_size, SHM_SIZE);
	assert_true(shm >= 0);
	assert_int_equal(fstat(shm, &st), 0);
	assert_int_equal(st.st_size, SHM_SIZE);
	assert_int_equal(pread(shm, magic, 5, 0), 5);
	assert_string_equal(magic, "MCSHM");
	close(shm);
	mcache__response__free_unpacked(rsp, NULL);
	cli_check_stat(fd, 2, "/x");
	assert_int_equal(atomic_load(&sessions_made), 1);
	close(fd);
}

static void test_peer_credentials(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Response *rsp;
	gid_t groups[256];
	int ng = getgroups(256, groups);

	cli_send_op(fd, 5, MCACHE__OP_CODE__OP_CHOWN, "/");
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->results[0]->attr->uid, getuid());
	assert_int_equal(rsp->results[0]->attr->gid, getgid());
	assert_int_equal(rsp->results[0]->attr->nlink,
			 ng > SESSION_MAX_GROUPS ? SESSION_MAX_GROUPS : ng);
	mcache__response__free_unpacked(rsp, NULL);
	close(fd);
}

static void test_wrong_version(void **state)
{
	struct fx *f = *state;
	int fd = cli_connect(f->path), shm = -1, err;
	Mcache__Response *rsp;

	cli_send_hello(fd, 3, MC_PROTO_VERSION + 1);
	rsp = cli_recv(fd, &shm, &err);
	assert_non_null(rsp);
	assert_int_equal(rsp->id, 3);
	assert_int_equal(rsp->err, EPROTONOSUPPORT);
	assert_null(rsp->hello);
	assert_true(strlen(rsp->message) > 0);
	assert_int_equal(shm, -1);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(fd);
	assert_int_equal(atomic_load(&sessions_made), 0);
	close(fd);
}

static void test_request_before_hello(void **state)
{
	struct fx *f = *state;
	int fd = cli_connect(f->path);
	Mcache__Response *rsp;

	cli_send_op(fd, 8, MCACHE__OP_CODE__OP_STAT, "/a");
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->err, EPROTO);
	assert_int_equal(rsp->n_results, 0);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(fd);
	close(fd);
}

static void test_hello_twice(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Response *rsp;

	cli_send_hello(fd, 2, MC_PROTO_VERSION);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->err, EPROTO);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(fd);
	close(fd);
}

/* Hello and requests written together, before any reply is read. */
static void test_pipelined_in_order(void **state)
{
	struct fx *f = *state;
	int fd = cli_connect(f->path), shm = -1, err;
	char path[64] = "/";
	Mcache__Response *rsp;

	cli_send_hello(fd, 1, MC_PROTO_VERSION);
	for (int i = 0; i < 50; i++) {
		path[i + 1] = 'a';
		cli_send_op(fd, 100 + (uint64_t)i, MCACHE__OP_CODE__OP_STAT, path);
	}
	rsp = cli_recv(fd, &shm, &err);
	assert_non_null(rsp);
	assert_non_null(rsp->hello);
	assert_true(shm >= 0);
	close(shm);
	mcache__response__free_unpacked(rsp, NULL);
	for (int i = 0; i < 50; i++) {
		rsp = cli_recv_ok(fd);
		assert_int_equal(rsp->id, 100 + (uint64_t)i);
		assert_int_equal(rsp->n_results, 1);
		assert_int_equal(rsp->results[0]->attr->ino, (uint64_t)i + 2);
		mcache__response__free_unpacked(rsp, NULL);
	}
	close(fd);
}

/* A client that reads its replies gets each one sent in the wakeup that
 * made it: none goes through the output queue. */
static void test_replies_sent_at_once(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	struct rpc_stats st;

	for (uint64_t i = 0; i < 200; i++)
		cli_check_stat(fd, 10 + i, "/direct");
	rpc_get_stats(f->r, &st);
	assert_int_equal(st.requests, 200);
	assert_int_equal(st.replies_queued, 0);
	close(fd);
}

/* Requests that arrive together are answered together: the replies of
 * the frames one read brought in leave in one send at the end of their
 * pass (conn_io.c invariant 5), so the first is not on the socket before
 * the second is. Here the second request takes 50 ms: were the first
 * reply sent at once, it would be read long before the second exists. */
static void test_pipelined_replies_sent_together(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	uint8_t burst[256], peek[8];
	size_t blen = 0;
	struct rpc_stats st;

	for (unsigned i = 0; i < 2; i++) {
		Mcache__Request req = MCACHE__REQUEST__INIT;
		Mcache__Op op, *opp[1] = { &op };
		uint8_t *buf;
		size_t len;

		if (i == 0) {
			op_set(&op, MCACHE__OP_CODE__OP_STAT, "/quick");
		} else {
			op_set(&op, MCACHE__OP_CODE__OP_RMTREE, "/slow");
			op.size = 50000;
		}
		req.id = 30 + i;
		req.n_ops = 1;
		req.ops = opp;
		assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
		assert_true(blen + len <= sizeof(burst));
		memcpy(burst + blen, buf, len);
		blen += len;
		free(buf);
	}
	assert_int_equal(frame_write(fd, burst, blen, -1), 0);   /* one write: one read */
	Mcache__Response *rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 30);
	mcache__response__free_unpacked(rsp, NULL);
	/* The second reply came with the first. */
	assert_int_equal(recv(fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT), (ssize_t)sizeof(peek));
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 31);
	mcache__response__free_unpacked(rsp, NULL);
	rpc_get_stats(f->r, &st);
	assert_int_equal(st.replies_queued, 0);
	/* A request alone is still answered at once. */
	cli_check_stat(fd, 40, "/alone");
	close(fd);
}

/* Replies the socket cannot take wait in the queue, and later replies go
 * behind them, never ahead, even once the socket has room again. */
static void test_queued_replies_keep_order(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path), small = 4096;
	enum { N = 120, SZ = 8000 };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op op, *opp[1] = { &op };
	Mcache__Response *rsp;
	struct rpc_stats st;
	uint64_t end;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	op_set(&op, MCACHE__OP_CODE__OP_READLINK, "/big");
	req.n_ops = 1;
	req.ops = opp;
	for (unsigned i = 0; i < N; i++) {
		req.id = 1000 + i;
		op.size = SZ + i;               /* each reply tells which it is */
		cli_send(fd, &req);
	}
	/* Nothing read yet: the socket filled and the rest queued. */
	end = ms_now() + 5000;
	do {
		rpc_get_stats(f->r, &st);
	} while (st.requests < N && ms_now() < end && usleep(1000) == 0);
	assert_int_equal(st.requests, N);
	assert_true(st.replies_queued > 0);
	assert_true(st.output_bytes > 0);
	for (unsigned i = 0; i < N; i++) {
		rsp = cli_recv_ok(fd);
		assert_int_equal(rsp->id, 1000 + i);
		assert_int_equal(rsp->n_results, 1);
		assert_int_equal(rsp->results[0]->data.len, SZ + i);
		mcache__response__free_unpacked(rsp, NULL);
	}
	/* Drained: replies go straight out again. */
	rpc_get_stats(f->r, &st);
	uint64_t queued = st.replies_queued;
	for (uint64_t i = 0; i < 20; i++)
		cli_check_stat(fd, 5000 + i, "/again");
	rpc_get_stats(f->r, &st);
	assert_int_equal(st.replies_queued, queued);
	assert_int_equal(st.output_bytes, 0);
	close(fd);
}

/* The server writes replies itself from the sizes it accounted: the bytes
 * are what protobuf-c would pack for the same Response, for results with
 * attributes, data, errors and nothing at all. */
static void test_reply_bytes_canonical(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	enum { N = 40 };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op ops[N], *opp[N];
	Mcache__Response *rsp;
	uint8_t *p, *again;
	size_t len, alen;

	for (unsigned i = 0; i < N; i++) {
		static const Mcache__OpCode codes[] = {
			MCACHE__OP_CODE__OP_STAT, MCACHE__OP_CODE__OP_LSTAT,
			MCACHE__OP_CODE__OP_READLINK, MCACHE__OP_CODE__OP_MKDIR,
		};
		op_set(&ops[i], codes[i % 4], "/some/path");
		ops[i].size = 100 + 37 * i;     /* readlink: reply bytes */
		opp[i] = &ops[i];
	}
	req.id = 300;                        /* two bytes of varint */
	req.n_ops = N;
	req.ops = opp;
	cli_send(fd, &req);
	assert_int_equal(frame_read(fd, MC_FRAME_MAX, &p, &len, NULL), 0);
	rsp = mcache__response__unpack(NULL, len, p);
	assert_non_null(rsp);
	assert_int_equal(rsp->n_results, N);
	assert_int_equal(frame_pack_response(rsp, MC_FRAME_MAX, &again, &alen), 0);
	assert_int_equal(alen, len + MC_FRAME_HDR);
	assert_memory_equal(again + MC_FRAME_HDR, p, len);
	free(again);
	free(p);
	mcache__response__free_unpacked(rsp, NULL);
	close(fd);
}

/* Unknown fields are kept by protobuf-c's unpack, which then decides the
 * request instead of the hand decoder: many tiny ones unpack to far more
 * than the frame's bytes, so the request's arena grows past its first
 * block; the op still runs and its reply comes back. */
static void test_request_unknown_fields(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	enum { NUNK = 15000 };
	static uint8_t op[3 * NUNK + 64], frame[3 * NUNK + 128];
	size_t n = 0, m = 0;
	Mcache__Response *rsp;

	op[n++] = 0x08;                      /* code = OP_STAT */
	op[n++] = MCACHE__OP_CODE__OP_STAT;
	op[n++] = 0x12;                      /* path "/u" */
	op[n++] = 2;
	op[n++] = '/';
	op[n++] = 'u';
	for (int i = 0; i < NUNK; i++) {     /* field 100, varint 1 */
		op[n++] = 0xa0;
		op[n++] = 0x06;
		op[n++] = 1;
	}
	m = MC_FRAME_HDR;
	frame[m++] = 0x08;                   /* id = 77 */
	frame[m++] = 77;
	frame[m++] = 0x1a;                   /* ops, length as a varint */
	for (size_t v = n; ; v >>= 7) {
		frame[m++] = (uint8_t)(v | (v >= 0x80 ? 0x80 : 0));
		if (v < 0x80)
			break;
	}
	memcpy(frame + m, op, n);
	m += n;
	frame_put_len(frame, (uint32_t)(m - MC_FRAME_HDR));
	assert_true(m - MC_FRAME_HDR <= MAX_FRAME);
	assert_int_equal(frame_write(fd, frame, m, -1), 0);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 77);
	assert_int_equal(rsp->n_results, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	assert_int_equal(rsp->results[0]->attr->ino, 2);   /* strlen("/u") */
	mcache__response__free_unpacked(rsp, NULL);
	cli_check_stat(fd, 78, "/after");
	close(fd);
}

/* Frames read in one wakeup share its slice: a burst of slow requests on
 * one connection does not keep the worker from another connection until
 * the whole burst has run. */
static void test_wakeup_slice_shared(void **state)
{
	struct fx *f = *state;
	/* Round robin over 2 workers: a and b share one. */
	int a = cli_open(f->path), other = cli_open(f->path), b = cli_open(f->path);
	enum { N = 40, OP_US = 5000 };
	static uint8_t burst[N * 64];
	size_t blen = 0;
	uint8_t peek[N * 8 + 64];

	for (unsigned i = 0; i < N; i++) {
		Mcache__Request req = MCACHE__REQUEST__INIT;
		Mcache__Op op, *opp[1] = { &op };
		uint8_t *buf;
		size_t len;

		op_set(&op, MCACHE__OP_CODE__OP_RMTREE, "/slow");
		op.size = OP_US;                 /* the stand-in sleeps this long */
		req.id = 10 + i;
		req.n_ops = 1;
		req.ops = opp;
		assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
		memcpy(burst + blen, buf, len);
		blen += len;
		free(buf);
	}
	assert_int_equal(frame_write(a, burst, blen, -1), 0);   /* one write: one read */
	cli_check_stat(b, 500, "/quick");
	/* Each of a's replies is 8 bytes (id < 128, one empty result): far
	 * fewer than all of them were sent before b's. */
	ssize_t got = recv(a, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
	if (got < 0)
		got = 0;
	assert_true(got / 8 < N);
	for (unsigned i = 0; i < N; i++) {
		Mcache__Response *rsp = cli_recv_ok(a);
		assert_int_equal(rsp->id, 10 + i);
		mcache__response__free_unpacked(rsp, NULL);
	}
	close(a);
	close(b);
	close(other);
}

/* A client that sends slow requests and shuts down its side at once gets
 * every reply: the end of its stream is not read while requests in front
 * of it wait for their turn. */
static void test_eof_after_slow_burst(void **state)
{
	struct fx *f = *state;
	int a = cli_open(f->path);
	enum { N = 6 };

	for (unsigned i = 0; i < N; i++) {
		Mcache__Request req = MCACHE__REQUEST__INIT;
		Mcache__Op op, *opp[1] = { &op };

		op_set(&op, MCACHE__OP_CODE__OP_RMTREE, "/slow");
		op.size = 3000;                  /* 3 ms each: past a slice */
		req.id = 20 + i;
		req.n_ops = 1;
		req.ops = opp;
		cli_send(a, &req);
	}
	assert_int_equal(shutdown(a, SHUT_WR), 0);
	for (unsigned i = 0; i < N; i++) {
		Mcache__Response *rsp = cli_recv_ok(a);
		assert_int_equal(rsp->id, 20 + i);
		mcache__response__free_unpacked(rsp, NULL);
	}
	cli_expect_closed(a);
	close(a);
}

static void test_batch_100(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op ops[100], *opp[100];
	char paths[100][128];
	Mcache__Response *rsp;
	struct rpc_stats st;

	for (int i = 0; i < 100; i++) {
		memset(paths[i], 'p', sizeof(paths[i]));
		paths[i][i + 1] = 0;
		/* Every tenth op fails: errors are counted per op. */
		op_set(&ops[i], i % 10 ? MCACHE__OP_CODE__OP_STAT : MCACHE__OP_CODE__OP_LSTAT,
		       paths[i]);
		opp[i] = &ops[i];
	}
	req.id = 77;
	req.n_ops = 100;
	req.ops = opp;
	cli_send(fd, &req);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 77);
	assert_int_equal(rsp->n_results, 100);
	for (int i = 0; i < 100; i++) {
		if (i % 10 == 0) {
			assert_int_equal(rsp->results[i]->err, ENOENT);
		} else {
			assert_int_equal(rsp->results[i]->err, 0);
			assert_int_equal(rsp->results[i]->attr->ino, (uint64_t)i + 1);
		}
	}
	mcache__response__free_unpacked(rsp, NULL);

	rpc_get_stats(f->r, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.ops[MCACHE__OP_CODE__OP_STAT], 90);
	assert_int_equal(st.ops[MCACHE__OP_CODE__OP_LSTAT], 10);
	assert_int_equal(st.errors[MCACHE__OP_CODE__OP_LSTAT], 10);
	assert_int_equal(st.errors[MCACHE__OP_CODE__OP_STAT], 0);
	assert_int_equal(st.op_us[MCACHE__OP_CODE__OP_STAT].count, 90);
	assert_int_equal(st.connections, 1);
	assert_int_equal(st.bad_frames, 0);
	close(fd);
}

/* Creates and removals run under one taking of the namespace lock per
 * run, at most 64 ops each, never across another op (the stand-in's
 * checks) nor past a slice; every op is still answered in order. */
static void test_batch_holds(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	enum { N = 300 };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	static Mcache__Op ops[N];
	static Mcache__Op *opp[N];
	unsigned before = atomic_load(&holds_begun);

	for (int i = 0; i < N; i++) {
		Mcache__OpCode code = i % 100 == 99 ? MCACHE__OP_CODE__OP_STAT
		                    : i == 150      ? MCACHE__OP_CODE__OP_RMTREE
		                    : i % 2         ? MCACHE__OP_CODE__OP_UNLINK
		                                    : MCACHE__OP_CODE__OP_CREATE;
		op_set(&ops[i], code, "/f");
		if (i == 150)
			ops[i].size = 1500;      /* the stand-in sleeps: past a slice */
		opp[i] = &ops[i];
	}
	req.id = 78;
	req.n_ops = N;
	req.ops = opp;
	cli_send(fd, &req);
	Mcache__Response *rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 78);
	assert_int_equal(rsp->n_results, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(rsp->results[i]->err,
		                 i % 100 == 99 || i == 150 ? 0 : ENOSYS);
	mcache__response__free_unpacked(rsp, NULL);
	/* Runs 0-98 (two holds: 64 ops at most), 100-149, 151-198 (or
	 * more, when a slice ended inside one), 200-298 (two). */
	assert_true(atomic_load(&holds_begun) - before >= 6);
	close(fd);
}

static void test_empty_request(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Response *rsp;

	req.id = 12;
	cli_send(fd, &req);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 12);
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->n_results, 0);
	mcache__response__free_unpacked(rsp, NULL);
	cli_check_stat(fd, 13, "/still/open");
	close(fd);
}

static void test_oversized_frame(void **state)
{
	struct fx *f = *state;
	int good = cli_open(f->path), bad = cli_open(f->path);
	Mcache__Response *rsp;
	struct rpc_stats st;

	uint8_t big[8] = { 0, 0, 0, 0, 's', 'o', 'm', 'e' };

	frame_put_len(big, MAX_FRAME + 1);
	assert_int_equal(frame_write(bad, big, sizeof(big), -1), 0);
	rsp = cli_recv_ok(bad);
	assert_int_equal(rsp->err, EMSGSIZE);
	assert_true(strlen(rsp->message) > 0);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(bad);
	close(bad);
	cli_check_stat(good, 2, "/fine");
	rpc_get_stats(f->r, &st);
	assert_int_equal(st.bad_frames, 1);
	wait_clients(f->r, 1);
	close(good);
}

/* A frame of exactly max_frame bytes is accepted. */
static void test_frame_at_limit(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op op, *opp[1] = { &op };
	size_t base, plen = MAX_FRAME - 64;
	char *path = malloc(MAX_FRAME);
	Mcache__Response *rsp;

	assert_non_null(path);
	req.id = 4;
	req.n_ops = 1;
	req.ops = opp;
	/* Grow the path until the packed request is exactly MAX_FRAME. */
	for (;;) {
		memset(path, 'q', plen);
		path[plen] = 0;
		op_set(&op, MCACHE__OP_CODE__OP_STAT, path);
		base = mcache__request__get_packed_size(&req);
		if (base >= MAX_FRAME)
			break;
		plen += MAX_FRAME - base;
	}
	assert_int_equal(base, MAX_FRAME);
	cli_send(fd, &req);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->results[0]->attr->ino, plen);
	mcache__response__free_unpacked(rsp, NULL);
	free(path);
	close(fd);
}

/* A reply larger than max_frame: every result says EMSGSIZE, the
 * connection stays usable. */
static void test_reply_too_large(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op ops[2], *opp[2] = { &ops[0], &ops[1] };
	Mcache__Response *rsp;

	op_set(&ops[0], MCACHE__OP_CODE__OP_READLINK, "/big");
	ops[0].size = MAX_FRAME;
	op_set(&ops[1], MCACHE__OP_CODE__OP_STAT, "/s");
	req.id = 9;
	req.n_ops = 2;
	req.ops = opp;
	cli_send(fd, &req);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 9);
	assert_int_equal(rsp->n_results, 2);
	assert_int_equal(rsp->results[0]->err, EMSGSIZE);
	assert_int_equal(rsp->results[1]->err, EMSGSIZE);
	mcache__response__free_unpacked(rsp, NULL);
	cli_check_stat(fd, 10, "/after");
	close(fd);
}

static void test_garbage(void **state)
{
	struct fx *f = *state;
	int good = cli_open(f->path), bad = cli_open(f->path);
	uint8_t junk[14] = { 10, 0, 0, 0 };
	Mcache__Response *rsp;

	memset(junk + 4, 0xff, 10);
	assert_int_equal(frame_write(bad, junk, sizeof(junk), -1), 0);
	rsp = cli_recv_ok(bad);
	assert_int_equal(rsp->err, EPROTO);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(bad);
	close(bad);
	cli_check_stat(good, 2, "/ok");
	close(good);
}

static void test_zero_length_frame(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	uint8_t hdr[4] = { 0 };
	Mcache__Response *rsp;

	assert_int_equal(frame_write(fd, hdr, sizeof(hdr), -1), 0);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->err, EPROTO);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(fd);
	close(fd);
}

/* Half a frame, then the client dies: nobody else notices. */
static void test_client_dies_mid_frame(void **state)
{
	struct fx *f = *state;
	int good = cli_open(f->path), bad = cli_open(f->path);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op op, *opp[1] = { &op };
	uint8_t *buf;
	size_t len;

	op_set(&op, MCACHE__OP_CODE__OP_STAT, "/half/a/frame");
	req.id = 3;
	req.n_ops = 1;
	req.ops = opp;
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(bad, buf, len / 2, -1), 0);
	cli_check_stat(good, 2, "/before");
	close(bad);
	free(buf);
	wait_clients(f->r, 1);
	cli_check_stat(good, 3, "/after");
	assert_int_equal(atomic_load(&sessions_live), 1);
	close(good);
}

static void test_socket_mode(void **state)
{
	struct fx *f = *state;
	struct stat st;

	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
}

/* chmod as the code under test sees it: the mode the path had when chmod
 * was called on it. */
static mode_t chmod_seen_mode;
static int chmod_calls;

int chmod(const char *path, mode_t mode)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		chmod_seen_mode = st.st_mode & 07777;
	chmod_calls++;
	return fchmodat(AT_FDCWD, path, mode, 0);
}

/* Even under umask 0 the socket is never looser than 0660 (no chmod after
 * bind, whose window another user could connect in). */
static void test_socket_born_0660(void **state)
{
	struct fx *f = *state;
	struct rpc_opts o = f->o;
	struct rpc *r2 = NULL;
	char path[128];
	struct stat st;
	mode_t old;
	int rc;

	snprintf(path, sizeof(path), "%s/born.sock", f->dir);
	o.socket_path = path;
	chmod_calls = 0;
	old = umask(0);
	rc = rpc_start(&o, &f->m, &r2);
	umask(old);
	assert_int_equal(rc, 0);
	if (chmod_calls > 0 && (chmod_seen_mode & ~0660) != 0)
		fail_msg("the socket had mode %o before chmod", (unsigned)chmod_seen_mode);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	rpc_stop(r2);
}

static void test_second_start_refused(void **state)
{
	struct fx *f = *state;
	struct rpc *r2 = NULL;
	int fd;

	assert_int_equal(rpc_start(&f->o, &f->m, &r2), -EADDRINUSE);
	assert_null(r2);
	/* The first server's socket is intact. */
	fd = cli_open(f->path);
	cli_check_stat(fd, 2, "/first");
	close(fd);
}

static void test_stale_socket_replaced(void **state)
{
	struct fx *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, fd;

	rpc_stop(f->r);
	f->r = NULL;
	assert_int_equal(access(f->path, F_OK), -1);   /* unlinked at stop */
	/* A socket file nobody listens on. */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, f->path);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	assert_int_equal(fx_start(f), 0);
	fd = cli_open(f->path);
	cli_check_stat(fd, 2, "/new");
	close(fd);
}

static void test_regular_file_kept(void **state)
{
	struct fx *f = *state;
	struct rpc *r2 = NULL;
	char path[128];
	struct rpc_opts o = f->o;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/not-a-socket", f->dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	o.socket_path = path;
	assert_int_equal(rpc_start(&o, &f->m, &r2), -EADDRINUSE);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);

	memset(path, 'n', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = 0;
	assert_int_equal(rpc_start(&o, &f->m, &r2), -ENAMETOOLONG);
}

static void test_max_conns(void **state)
{
	struct fx *f = *state;
	int fds[MAX_CONNS], extra;

	for (int i = 0; i < MAX_CONNS; i++)
		fds[i] = cli_open(f->path);
	assert_int_equal(rpc_clients(f->r), MAX_CONNS);
	/* Accepted, then closed at once. */
	extra = cli_connect(f->path);
	cli_expect_closed(extra);
	close(extra);
	assert_int_equal(rpc_clients(f->r), MAX_CONNS);
	/* One leaves: room for one more. */
	close(fds[0]);
	wait_clients(f->r, MAX_CONNS - 1);
	fds[0] = cli_open(f->path);
	cli_check_stat(fds[0], 2, "/room");
	for (int i = 0; i < MAX_CONNS; i++)
		close(fds[i]);
	wait_clients(f->r, 0);
}

static void test_idle_timeout(void **state)
{
	struct fx *f = *state;
	int idle = cli_open(f->path), busy = cli_open(f->path);
	uint64_t t0 = ms_now();

	/* busy keeps talking across the timeout; idle says nothing. */
	for (int i = 0; i < 6; i++) {
		cli_check_stat(busy, 10 + (uint64_t)i, "/busy");
		usleep(300 * 1000);
	}
	cli_expect_closed(idle);
	assert_true(ms_now() - t0 >= 1000);
	cli_check_stat(busy, 20, "/still");
	close(idle);
	wait_clients(f->r, 1);
	close(busy);
}

/* A reply waiting for durability holds back the ones behind it. */
static void test_durable_wait_in_order(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	uint64_t t0 = ms_now();
	Mcache__Response *rsp;

	cli_send_op(fd, 1, MCACHE__OP_CODE__OP_SYNC, "");
	cli_send_op(fd, 2, MCACHE__OP_CODE__OP_STAT, "/ab");
	cli_send_op(fd, 3, MCACHE__OP_CODE__OP_SYNC, "");
	cli_send_op(fd, 4, MCACHE__OP_CODE__OP_STAT, "/abcd");
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	assert_true(ms_now() - t0 >= COMMIT_DELAY_MS - 5);
	mcache__response__free_unpacked(rsp, NULL);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 2);
	assert_int_equal(rsp->results[0]->attr->ino, 3);
	mcache__response__free_unpacked(rsp, NULL);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 3);
	assert_true(ms_now() - t0 >= 2 * COMMIT_DELAY_MS - 10);
	mcache__response__free_unpacked(rsp, NULL);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 4);
	assert_int_equal(rsp->results[0]->attr->ino, 5);
	mcache__response__free_unpacked(rsp, NULL);
	close(fd);
}

/* Already durable: the callback comes inline, the reply is not lost. */
static void test_durable_inline(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Response *rsp;

	cli_send_op(fd, 1, MCACHE__OP_CODE__OP_UTIMENS, "/t");
	cli_send_op(fd, 2, MCACHE__OP_CODE__OP_STAT, "/t");
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	mcache__response__free_unpacked(rsp, NULL);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 2);
	assert_int_equal(rsp->results[0]->attr->ino, 2);
	mcache__response__free_unpacked(rsp, NULL);
	cli_check_stat(fd, 3, "/tt");
	close(fd);
}

static void test_commit_failure_eio(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op ops[2], *opp[2] = { &ops[0], &ops[1] };
	Mcache__Response *rsp;

	op_set(&ops[0], MCACHE__OP_CODE__OP_STAT, "/s");
	op_set(&ops[1], MCACHE__OP_CODE__OP_FSYNC, "");
	req.id = 5;
	req.n_ops = 2;
	req.ops = opp;
	cli_send(fd, &req);
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 5);
	assert_int_equal(rsp->n_results, 2);
	assert_int_equal(rsp->results[0]->err, EIO);
	assert_int_equal(rsp->results[1]->err, EIO);
	mcache__response__free_unpacked(rsp, NULL);

	/* commit_wait_async itself failing (-ENOMEM) is answered the same. */
	cli_send_op(fd, 6, MCACHE__OP_CODE__OP_TRUNCATE, "/t");
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 6);
	assert_int_equal(rsp->results[0]->err, EIO);
	mcache__response__free_unpacked(rsp, NULL);
	cli_check_stat(fd, 7, "/alive");
	close(fd);
}

static void wait_callbacks(int want)
{
	uint64_t end = ms_now() + 5000;

	while (atomic_load(&callbacks_done) < want && ms_now() < end)
		usleep(2000);
	assert_int_equal(atomic_load(&callbacks_done), want);
}

/* Closed while waiting, noticed only when the held reply is written. */
static void test_close_while_waiting(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path), other = cli_open(f->path);
	int before = atomic_load(&callbacks_done);

	cli_send_op(fd, 1, MCACHE__OP_CODE__OP_SYNC, "");
	cli_send_op(fd, 2, MCACHE__OP_CODE__OP_STAT, "/never");
	usleep(20 * 1000);
	close(fd);
	wait_callbacks(before + 1);
	wait_clients(f->r, 1);
	assert_int_equal(atomic_load(&sessions_live), 1);
	cli_check_stat(other, 2, "/other");
	close(other);
}

/* Closed while waiting with replies still queued: the failed write closes
 * the connection before the callback comes, and the conn outlives it. */
static void test_close_while_waiting_output_queued(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path), other = cli_open(f->path);
	int before = atomic_load(&callbacks_done);
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op op, *opp[1] = { &op };

	op_set(&op, MCACHE__OP_CODE__OP_READLINK, "/big");
	op.size = MAX_FRAME - 100;
	req.n_ops = 1;
	req.ops = opp;
	for (int i = 0; i < 12; i++) {  /* ~780K: more than the socket holds */
		req.id = 10 + (uint64_t)i;
		cli_send(fd, &req);
	}
	cli_send_op(fd, 1, MCACHE__OP_CODE__OP_SYNC, "");
	usleep(20 * 1000);
	close(fd);
	/* Closed during the wait, not after it. */
	wait_clients(f->r, 1);
	assert_int_equal(atomic_load(&callbacks_done), before);
	assert_int_equal(atomic_load(&sessions_live), 1);
	wait_callbacks(before + 1);
	cli_check_stat(other, 2, "/other");
	close(other);
}

/* rpc_stop with connections in every state returns, finishes the request
 * that waits for durability, and frees everything. */
static void test_stop_with_open_conns(void **state)
{
	struct fx *f = *state;
	int idle = cli_open(f->path), waiting = cli_open(f->path);
	int nohello = cli_connect(f->path), half = cli_open(f->path);
	Mcache__Response *rsp;

	assert_int_equal(frame_write(half, (const uint8_t *)"\x20\0\0\0abc", 7, -1), 0);
	cli_send_op(waiting, 1, MCACHE__OP_CODE__OP_SYNC, "");
	usleep(20 * 1000);
	wait_clients(f->r, 4);
	rpc_stop(f->r);
	f->r = NULL;
	assert_int_equal(atomic_load(&sessions_live), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	rsp = cli_recv_ok(waiting);
	assert_int_equal(rsp->id, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(waiting);
	cli_expect_closed(idle);
	cli_expect_closed(nohello);
	cli_expect_closed(half);
	close(idle);
	close(waiting);
	close(nohello);
	close(half);
}

/* A request of n slow ops (us microseconds each). */
static void cli_send_slow(int fd, uint64_t id, size_t n, uint64_t us)
{
	Mcache__Request req = MCACHE__REQUEST__INIT;
	Mcache__Op op, **ops = calloc(n, sizeof(*ops));

	assert_non_null(ops);
	op_set(&op, MCACHE__OP_CODE__OP_RMTREE, "/slow");
	op.size = us;
	for (size_t i = 0; i < n; i++)
		ops[i] = &op;
	req.id = id;
	req.n_ops = n;
	req.ops = ops;
	cli_send(fd, &req);
	free(ops);
}

/* A request that runs over several slices when the server stops is
 * finished and answered in full, not cut. */
static void test_stop_mid_request(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path);
	Mcache__Response *rsp;

	cli_send_slow(fd, 9, 100, 1000);      /* 100 ms of ops */
	usleep(20 * 1000);
	rpc_stop(f->r);
	f->r = NULL;
	rsp = cli_recv_ok(fd);
	assert_int_equal(rsp->id, 9);
	assert_int_equal(rsp->n_results, 100);
	for (size_t i = 0; i < 100; i++)
		assert_int_equal(rsp->results[i]->err, 0);
	mcache__response__free_unpacked(rsp, NULL);
	cli_expect_closed(fd);
	close(fd);
}

/* A client that closes while its request runs over several slices: the
 * rest of it is dropped, the server goes on. */
static void test_close_mid_request(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path), other;

	cli_send_slow(fd, 9, 100, 1000);
	usleep(20 * 1000);
	close(fd);
	other = cli_open(f->path);
	cli_check_stat(other, 2, "/after");
	close(other);
	wait_clients(f->r, 0);
}

/* Several clients on several workers at once. */
struct hammer {
	const char *path;
	int ok;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	int fd = cli_open(h->path);

	for (int i = 0; i < 200; i++) {
		Mcache__Response *rsp;

		cli_send_op(fd, (uint64_t)i, MCACHE__OP_CODE__OP_STAT, "/hammer");
		rsp = cli_recv_ok(fd);
		if (rsp->id == (uint64_t)i && rsp->results[0]->attr->ino == 7)
			h->ok++;
		mcache__response__free_unpacked(rsp, NULL);
	}
	close(fd);
	return NULL;
}

/* The server's threads carry their names (rpc.c invariant 5): as many
 * "mcached-conn" as workers, one "mcached-accept". */
static void test_thread_names(void **state)
{
	struct fx *f = *state;
	unsigned conn = 0, accept = 0;
	DIR *d = opendir("/proc/self/task");

	(void)f;
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], name[32] = "";
		FILE *fp;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;
		if (fgets(name, sizeof(name), fp)) {
			conn += strcmp(name, "mcached-conn\n") == 0;
			accept += strcmp(name, "mcached-accept\n") == 0;
		}
		fclose(fp);
	}
	closedir(d);
	assert_int_equal(conn, f->o.workers);
	assert_int_equal(accept, 1);
}

static void test_concurrent_clients(void **state)
{
	struct fx *f = *state;
	struct hammer h[6];
	pthread_t th[6];
	struct rpc_stats st;

	for (int i = 0; i < 6; i++) {
		h[i].path = f->path;
		h[i].ok = 0;
		assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &h[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(h[i].ok, 200);
	}
	rpc_get_stats(f->r, &st);
	assert_int_equal(st.requests, 6 * 200);
	assert_int_equal(st.connections, 6);
	wait_clients(f->r, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_hello_passes_segment),
		T(test_peer_credentials),
		T(test_wrong_version),
		T(test_request_before_hello),
		T(test_hello_twice),
		T(test_pipelined_in_order),
		T(test_batch_100),
		T(test_batch_holds),
		T(test_replies_sent_at_once),
		T(test_pipelined_replies_sent_together),
		T(test_reply_bytes_canonical),
		T(test_request_unknown_fields),
		T(test_wakeup_slice_shared),
		T(test_eof_after_slow_burst),
		T(test_queued_replies_keep_order),
		T(test_empty_request),
		T(test_oversized_frame),
		T(test_frame_at_limit),
		T(test_reply_too_large),
		T(test_garbage),
		T(test_zero_length_frame),
		T(test_client_dies_mid_frame),
		T(test_socket_mode),
		T(test_socket_born_0660),
		T(test_second_start_refused),
		T(test_stale_socket_replaced),
		T(test_regular_file_kept),
		T(test_max_conns),
		cmocka_unit_test_setup_teardown(test_idle_timeout, fx_setup_idle, fx_teardown),
		T(test_durable_wait_in_order),
		T(test_durable_inline),
		T(test_commit_failure_eio),
		T(test_close_while_waiting),
		T(test_close_while_waiting_output_queued),
		T(test_stop_with_open_conns),
		T(test_stop_mid_request),
		T(test_close_mid_request),
		T(test_concurrent_clients),
		T(test_thread_names),
	};

	return cmocka_run_group_tests_name("rpc", tests, NULL, NULL);
}
