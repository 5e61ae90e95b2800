/* test-syncreply.c - replies held for a commit (mc_sync, every mutation
 * under --sync) against a real mcached. The thread that ends the wait
 * writes such a reply to the socket itself (server/conn.c invariant 9,
 * counted as rpc.replies_direct): the replies of one connection still
 * leave in request order, those pipelined before and after a held one
 * included; many clients waiting at once each get theirs; and a reply
 * comes only once its commit is durable (a kill -9 right after it loses
 * nothing). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

static void start(const char *const *args)
{
	memset(&srv, 0, sizeof(srv));
	assert_int_equal(server_start(&srv, args), 0);
}

static void finish(void)
{
	assert_int_equal(server_finish(&srv), 0);
}

static uint64_t direct_replies(void)
{
	mc_client *c = harness_client(&srv);
	uint64_t n = harness_stat_u64(c, "\"rpc\"", "replies_direct");
	mc_disconnect(c);
	return n;
}

/* A raw connection that said Hello. */
static int raw_ready(void)
{
	int fd = harness_connect(srv.socket);
	if (fd < 0)
		fail_msg("connect: %s", strerror(errno));
	struct timeval tv = { 10, 0 };
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	Mcache__Hello hello = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	hello.version = MC_PROTO_VERSION;
	req.id = 1;
	req.hello = &hello;
	uint8_t *buf;
	size_t len;
	assert_int_equal(frame_pack_request(&req, SIZE_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	assert_non_null(rsp);
	assert_int_equal(rsp->err, 0);
	assert_non_null(rsp->hello);
	mcache__response__free_unpacked(rsp, NULL);
	return fd;
}

/* Append the frame of a one-op request (id, code, path) to *buf. */
static void add_req(uint8_t **buf, size_t *len, uint64_t id, Mcache__OpCode code,
                    const char *path)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Op *ops[1] = { &op };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	op.code = code;
	if (path) {
		op.path.data = (uint8_t *)path;
		op.path.len = strlen(path);
	}
	op.mode = 0755;
	req.id = id;
	req.n_ops = 1;
	req.ops = ops;
	uint8_t *f;
	size_t n;
	assert_int_equal(frame_pack_request(&req, SIZE_MAX, &f, &n), 0);
	*buf = realloc(*buf, *len + n);
	assert_non_null(*buf);
	memcpy(*buf + *len, f, n);
	*len += n;
	free(f);
}

/* The next reply is request id's, its one op answered 0. */
static void expect_reply(int fd, uint64_t id)
{
	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("no reply for request %llu: %s", (unsigned long long)id, strerror(-err));
	assert_int_equal(rsp->id, id);
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->n_results, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	mcache__response__free_unpacked(rsp, NULL);
}

/* A mkdir, a sync and a mkdir under the first, in one write: the three
 * replies come back in that order, the sync's sent by the committer, the
 * first's before it (it was held back for the pass), the last's after
 * (parsed only once the sync was answered). */
static void pipelined_in_order(void **state)
{
	(void)state;
	start(NULL);
	uint64_t before = direct_replies();
	int fd = raw_ready();
	for (unsigned i = 0; i < 20; i++) {
		char a[32], b[40];
		uint8_t *buf = NULL;
		size_t len = 0;
		snprintf(a, sizeof(a), "/p%u", i);
		snprintf(b, sizeof(b), "/p%u/q", i);
		add_req(&buf, &len, 10 * i + 2, MCACHE__OP_CODE__OP_MKDIR, a);
		add_req(&buf, &len, 10 * i + 3, MCACHE__OP_CODE__OP_SYNC, NULL);
		add_req(&buf, &len, 10 * i + 4, MCACHE__OP_CODE__OP_MKDIR, b);
		assert_int_equal(frame_write(fd, buf, len, -1), 0);
		free(buf);
		expect_reply(fd, 10 * i + 2);
		expect_reply(fd, 10 * i + 3);
		expect_reply(fd, 10 * i + 4);
	}
	close(fd);
	print_message("# %llu replies sent by the thread ending their wait\n",
	              (unsigned long long)(direct_replies() - before));
	/* A sync finds nothing to wait for (and is not held) only if a
	 * commit came between the mkdir and it, in the same pass: rare. */
	assert_true(direct_replies() - before >= 15);
	mc_client *c = harness_client(&srv);
	struct stat st;
	for (unsigned i = 0; i < 20; i++) {
		char b[40];
		snprintf(b, sizeof(b), "/p%u/q", i);
		EXPECT_OK(mc_stat(c, b, &st));
	}
	mc_disconnect(c);
	finish();
}

/* Under --sync every mutation's reply is held: pipelined ones still come
 * back in order. */
static void sync_mode_in_order(void **state)
{
	(void)state;
	const char *const args[] = { "--sync", NULL };
	start(args);
	uint64_t before = direct_replies();
	int fd = raw_ready();
	uint8_t *buf = NULL;
	size_t len = 0;
	char p[32];
	for (unsigned i = 0; i < 16; i++) {
		snprintf(p, sizeof(p), "/s%u", i);
		add_req(&buf, &len, 100 + i, MCACHE__OP_CODE__OP_MKDIR, p);
	}
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
	for (unsigned i = 0; i < 16; i++)
		expect_reply(fd, 100 + i);
	close(fd);
	assert_true(direct_replies() - before >= 16);
	finish();
}

struct round_arg {
	unsigned id;
	const char *err;
};

#define ROUNDS 30
#define PER_ROUND 50

/* ROUNDS rounds of PER_ROUND batched creates, then mc_sync. */
static void *rounds_main(void *p)
{
	struct round_arg *a = p;
	mc_client *c = mc_connect(srv.socket);
	char path[64];
	if (!c)
		return a->err = "mc_connect", NULL;
	snprintf(path, sizeof(path), "/c%u", a->id);
	if (mc_mkdir(c, path, 0755) < 0)
		a->err = "mc_mkdir";
	for (unsigned r = 0; r < ROUNDS && !a->err; r++) {
		mc_batch *b = mc_batch_new(c);
		if (!b) {
			a->err = "mc_batch_new";
			break;
		}
		char names[PER_ROUND][64];
		for (unsigned i = 0; i < PER_ROUND; i++) {
			snprintf(names[i], sizeof(names[i]), "/c%u/f%u", a->id, r * PER_ROUND + i);
			if (mc_batch_create(b, names[i], 0644) < 0)
				a->err = "mc_batch_create";
		}
		if (!a->err && mc_batch_run(b) < 0)
			a->err = "mc_batch_run";
		for (unsigned i = 0; i < PER_ROUND && !a->err; i++)
			if (mc_batch_error(b, i) != 0)
				a->err = "a create failed";
		mc_batch_free(b);
		if (!a->err && mc_sync(c) < 0)
			a->err = "mc_sync";
	}
	mc_disconnect(c);
	return NULL;
}

/* Four clients mutate and wait in turn at once: every sync is answered
 * (each reply to its own connection), and every create is there. A sync
 * whose creates another's commit carried already is answered at once,
 * not held: most are held, and sent directly. */
static void clients_at_once(void **state)
{
	(void)state;
	start(NULL);
	uint64_t before = direct_replies();
	pthread_t th[4];
	struct round_arg a[4];
	for (unsigned i = 0; i < 4; i++) {
		a[i] = (struct round_arg){ i, NULL };
		assert_int_equal(pthread_create(&th[i], NULL, rounds_main, &a[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		if (a[i].err)
			fail_msg("client %u: %s: %s", i, a[i].err, strerror(errno));
	}
	uint64_t direct = direct_replies() - before;
	print_message("# %llu of %u syncs answered by the thread ending their wait\n",
	              (unsigned long long)direct, 4 * ROUNDS);
	assert_true(direct >= 2 * ROUNDS && direct <= 4 * ROUNDS);
	mc_client *c = harness_client(&srv);
	struct stat st;
	char path[64];
	for (unsigned i = 0; i < 4; i++)
		for (unsigned f = 0; f < ROUNDS * PER_ROUND; f += 7) {
			snprintf(path, sizeof(path), "/c%u/f%u", i, f);
			EXPECT_OK(mc_stat(c, path, &st));
		}
	mc_disconnect(c);
	finish();
}

/* A sync's reply comes once its commit is durable: killed with SIGKILL
 * right after each reply, the server comes back with everything synced. */
static void reply_after_durable(void **state)
{
	(void)state;
	start(NULL);
	char path[64];
	for (unsigned k = 0; k < 5; k++) {
		mc_client *c = harness_client(&srv);
		for (unsigned i = 0; i < 20; i++) {
			snprintf(path, sizeof(path), "/k%u-%u", k, i);
			EXPECT_OK(mc_mkdir(c, path, 0755));
		}
		EXPECT_OK(mc_sync(c));
		assert_int_equal(server_stop(&srv, SIGKILL), 128 + SIGKILL);
		mc_disconnect(c);
		assert_int_equal(server_start(&srv, NULL), 0);
		c = harness_client(&srv);
		struct stat st;
		for (unsigned j = 0; j <= k; j++)
			for (unsigned i = 0; i < 20; i++) {
				snprintf(path, sizeof(path), "/k%u-%u", j, i);
				EXPECT_OK(mc_stat(c, path, &st));
			}
		mc_disconnect(c);
	}
	finish();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pipelined_in_order),
		cmocka_unit_test(sync_mode_in_order),
		cmocka_unit_test(clients_at_once),
		cmocka_unit_test(reply_after_durable),
	};
	return cmocka_run_group_tests_name("syncreply", tests, NULL, NULL);
}
