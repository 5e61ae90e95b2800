/* test-rpc_workers.c - the RPC server's threads (server/rpc.c): rpc_stop
 * with connections in every state and with a request in the middle of its
 * slices, a client that closes while its request runs, several clients on
 * several workers at once, and the names the threads carry. */
#include "rpc_fixture.h"

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

	struct rpc_stats st;
	rpc_get_stats(f->r, &st);
	uint64_t before = st.requests;
	cli_send_slow(fd, 9, 100, 1000);      /* 100 ms of ops */
	/* Stopped once the request runs: on a loaded machine the worker may
	 * not even have read it 20 ms after it was sent, and a request not
	 * read when the server stops is dropped with its connection. */
	uint64_t end = ms_now() + 5000;
	do
		rpc_get_stats(f->r, &st);
	while (st.requests == before && ms_now() < end && usleep(1000) == 0);
	assert_int_equal(st.requests, before + 1);
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
		T(test_stop_with_open_conns),
		T(test_stop_mid_request),
		T(test_close_mid_request),
		T(test_concurrent_clients),
		T(test_thread_names),
	};

	return cmocka_run_group_tests_name("rpc_workers", tests, NULL, NULL);
}
