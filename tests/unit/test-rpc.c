/* test-rpc.c - the RPC server against stand-in ops and committer, driven
 * by raw clients speaking frames over the unix socket: hello and the
 * session it opens, pipelined requests and how their replies are sent
 * (at once, together, queued, byte for byte), the wakeup's slice, and
 * batches. Bad frames, the socket, durability and the workers have files
 * of their own (test-rpc_*.c; their fixture is rpc_fixture.h). */
#include "rpc_fixture.h"

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
	};

	return cmocka_run_group_tests_name("rpc", tests, NULL, NULL);
}
