/* test-rpc_durable.c - replies that wait for a commit (server/rpc.c over
 * the stand-in committer): they hold back the replies behind them, come
 * inline when already durable, say EIO when the commit fails, and a
 * connection closed while one waits is noticed and freed. */
#include "rpc_fixture.h"

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

/* Until the server's worker has started waiting for want commits in all
 * (it reads and runs the request when it gets to it: on a loaded machine
 * that may be later than the client's send). */
static void wait_started(int want)
{
	uint64_t end = ms_now() + 5000;

	while (atomic_load(&waits_started) < want && ms_now() < end)
		usleep(1000);
	assert_int_equal(atomic_load(&waits_started), want);
}

/* Closed while waiting, noticed only when the held reply is written. */
static void test_close_while_waiting(void **state)
{
	struct fx *f = *state;
	int fd = cli_open(f->path), other = cli_open(f->path);
	int before = atomic_load(&callbacks_done);
	int started = atomic_load(&waits_started);

	cli_send_op(fd, 1, MCACHE__OP_CODE__OP_SYNC, "");
	cli_send_op(fd, 2, MCACHE__OP_CODE__OP_STAT, "/never");
	wait_started(started + 1);
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
	int started = atomic_load(&waits_started);
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
	wait_started(started + 1);
	close(fd);
	/* Closed during the wait, not after it. */
	wait_clients(f->r, 1);
	assert_int_equal(atomic_load(&callbacks_done), before);
	assert_int_equal(atomic_load(&sessions_live), 1);
	wait_callbacks(before + 1);
	cli_check_stat(other, 2, "/other");
	close(other);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_durable_wait_in_order),
		T(test_durable_inline),
		T(test_commit_failure_eio),
		T(test_close_while_waiting),
		T(test_close_while_waiting_output_queued),
	};

	return cmocka_run_group_tests_name("rpc_durable", tests, NULL, NULL);
}
