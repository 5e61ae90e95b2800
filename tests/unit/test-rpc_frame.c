/* test-rpc_frame.c - the RPC server (server/rpc.c) against frames it must
 * refuse or bound: an empty request, a frame over the limit and one at it,
 * a reply too large to send, garbage, a zero-length frame, and a client
 * that dies half way through a frame. */
#include "rpc_fixture.h"

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

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_empty_request),
		T(test_oversized_frame),
		T(test_frame_at_limit),
		T(test_reply_too_large),
		T(test_garbage),
		T(test_zero_length_frame),
		T(test_client_dies_mid_frame),
	};

	return cmocka_run_group_tests_name("rpc_frame", tests, NULL, NULL);
}
