/* test-limits.c - a real mcached against clients that try to make it use
 * unbounded memory with one small request: many ops in it, replies larger
 * than the frame limit (readlink and readdir amplification), batches past
 * --max-ops or the reply limit, and a long request that must not hold up
 * another connection's short one. Each case starts its own server (its own
 * settings, a fresh peak-memory figure; limits_fixture.h) and ends by
 * checking that a well-behaved client is still served. Connections that
 * never read, never say Hello or never finish a frame, and descriptor
 * exhaustion, are in test-limits_conn.c.
 *
 * Memory is the server's VmHWM (peak resident set) from /proc, minus the
 * value before the attack.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"
#include "limits_fixture.h"

/* ---- finding: one small request, gigabytes of results -------------------- */

/* A reply that would pass the frame limit: the ops whose results fit are
 * answered, the rest EMSGSIZE, and a mutation after the cut does not run
 * (it used to run and be reported as failed). */
static void reply_cap_stops_execution(void **state)
{
	static const char *const args[] = { "--max-reply", "64K", NULL };
	start(args);
	char target[4001];
	memset(target, 't', 4000);
	target[4000] = 0;
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	assert_int_equal(mc_symlink(c, target, "/l"), 0);

	int fd = raw_ready();
	Mcache__Op rl, mk;
	op_path(&rl, MCACHE__OP_CODE__OP_READLINK, "/l");
	op_path(&mk, MCACHE__OP_CODE__OP_MKDIR, "/after");
	mk.mode = 0755;
	Mcache__Op *ops[101];
	for (int i = 0; i < 100; i++)
		ops[i] = &rl;
	ops[100] = &mk;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	req.id = 5;
	req.n_ops = 101;
	req.ops = ops;
	raw_send(fd, &req);
	Mcache__Response *rsp = raw_recv_ok(fd);
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->n_results, 101);
	size_t ok = 0;
	for (size_t i = 0; i < 101; i++) {
		if (rsp->results[i]->err == 0) {
			assert_int_equal(ok, i);        /* answered ones come first */
			assert_int_equal(rsp->results[i]->data.len, 4000);
			ok++;
		} else {
			assert_int_equal(rsp->results[i]->err, EMSGSIZE);
		}
	}
	print_message("# %zu of 100 readlinks fit in a 64 KiB reply\n", ok);
	assert_true(ok >= 10 && ok <= 16);
	mcache__response__free_unpacked(rsp, NULL);
	struct stat st;
	errno = 0;
	assert_int_equal(mc_stat(c, "/after", &st), -1);
	assert_int_equal(errno, ENOENT);                /* the mkdir did not run */
	assert_true(stat_u64("\"limits\"", "reply_full") >= 1);
	close(fd);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
	stop();
}

/* 4,000 failing readlinks in one 32 KB request used to cost 4 KiB each. */
static void readlink_amplification(void **state)
{
	start(NULL);
	int fd = raw_ready();
	uint64_t before = settled_hwm();
	Mcache__Op rl;
	op_path(&rl, MCACHE__OP_CODE__OP_READLINK, "/nx");
	send_many(fd, 3, &rl, 4000);
	Mcache__Response *rsp = raw_recv_ok(fd);
	assert_int_equal(rsp->n_results, 4000);
	assert_int_equal(rsp->results[3999]->err, ENOENT);
	mcache__response__free_unpacked(rsp, NULL);
	check_hwm_growth(before, 8 * MiB, "4000 readlinks");
	close(fd);
	harness_assert_healthy(&srv);
	stop();
}

/* 1,000 readdirs of a 2,000-entry directory in one 10 KB request: the
 * results are cut at the reply limit instead of all being built. */
static void readdir_amplification(void **state)
{
	start(NULL);                        /* --max-reply 4M */
	make_dir("/d", 2000);
	int fd = raw_ready();
	uint64_t h = raw_opendir(fd, "/d");
	uint64_t before = settled_hwm();
	Mcache__Op rd;
	mcache__op__init(&rd);
	rd.code = MCACHE__OP_CODE__OP_READDIR;
	rd.handle = h;
	rd.count = 8192;
	uint64_t t0 = now_ms();
	send_many(fd, 4, &rd, 1000);
	Mcache__Response *rsp = raw_recv_ok(fd);
	print_message("# reply in %llu ms\n", (unsigned long long)(now_ms() - t0));
	assert_int_equal(rsp->n_results, 1000);
	assert_int_equal(rsp->results[0]->err, 0);
	assert_int_equal(rsp->results[0]->n_entries, 2000);
	assert_int_equal(rsp->results[999]->err, EMSGSIZE);
	mcache__response__free_unpacked(rsp, NULL);
	check_hwm_growth(before, 32 * MiB, "1000 readdirs of 2000 entries");
	close(fd);
	harness_assert_healthy(&srv);
	stop();
}

/* 300,000 empty ops in a 600 KB frame: refused whole (E2BIG) before they
 * are unpacked or run. */
static void too_many_ops(void **state)
{
	start(NULL);
	int fd = raw_ready();
	uint64_t before = settled_hwm();
	Mcache__Op op;
	op_path(&op, MCACHE__OP_CODE__OP_LSTAT, "");
	send_many(fd, 6, &op, 300000);
	expect_error_then_close(fd, E2BIG);
	check_hwm_growth(before, 16 * MiB, "300000 ops");
	assert_int_equal(stat_u64("\"limits\"", "too_many_ops"), 1);
	harness_assert_healthy(&srv);
	stop();
}

/* --max-ops N: N ops run, N + 1 are refused and none of them runs. */
static void max_ops_boundary(void **state)
{
	static const char *const args[] = { "--max-ops", "10", NULL };
	start(args);
	int fd = raw_ready();
	Mcache__Op op;
	op_path(&op, MCACHE__OP_CODE__OP_LSTAT, "/");
	send_many(fd, 7, &op, 10);
	Mcache__Response *rsp = raw_recv_ok(fd);
	assert_int_equal(rsp->n_results, 10);
	assert_int_equal(rsp->results[9]->err, 0);
	mcache__response__free_unpacked(rsp, NULL);
	op_path(&op, MCACHE__OP_CODE__OP_MKDIR, "/m");
	op.mode = 0755;
	send_many(fd, 8, &op, 11);
	expect_error_then_close(fd, E2BIG);
	mc_client *c = mc_connect(srv.socket);
	struct stat st;
	assert_int_equal(mc_stat(c, "/m", &st), -1);     /* none ran */
	mc_disconnect(c);
	harness_assert_healthy(&srv);
	stop();
}

/* The library learns --max-ops at connect: queueing past it fails with
 * E2BIG and leaves the batch (and the client) usable; a full batch runs
 * even with closes queued in front of it (they go in requests of their
 * own), and every operation of it ran. */
static void batch_over_max_ops(void **state)
{
	static const char *const args[] = { "--max-ops", "100", NULL };
	start(args);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	/* 70 closes queued: more than fit beside a full batch. */
	for (int i = 0; i < 70; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/o%d", i);
		int fd = mc_open(c, p, O_CREAT | O_RDWR, 0644);
		assert_true(fd >= 0);
		assert_int_equal(mc_close(c, fd), 0);
	}
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	for (int i = 0; i < 100; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/b%d", i);
		assert_int_equal(mc_batch_create(b, p, 0644), i);
	}
	errno = 0;
	assert_int_equal(mc_batch_create(b, "/b100", 0644), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), 100);
	for (size_t i = 0; i < 100; i++)
		assert_int_equal(mc_batch_error(b, i), 0);
	mc_batch_free(b);
	struct stat st;
	assert_int_equal(mc_stat(c, "/b99", &st), 0);
	assert_int_equal(mc_stat(c, "/b100", &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(mc_mkdir(c, "/still-usable", 0755), 0);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
	stop();
}

/* A batch whose results outgrow --max-reply: the server answers the ops
 * past the limit EMSGSIZE without running them, and the library sends them
 * on, so every stat of the batch is answered. */
static void batch_past_max_reply(void **state)
{
	static const char *const args[] = { "--max-reply", "64K", NULL };
	start(args);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	enum { N = 2000 };
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	for (int i = 0; i < N; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/r%d", i);
		assert_true(mc_batch_create(b, p, 0600) >= 0);
	}
	assert_int_equal(mc_batch_run(b), 0);
	/* A mutation first, so the stats go to the server. */
	static struct stat st[N];
	assert_true(mc_batch_mkdir(b, "/rdir", 0755) >= 0);
	for (int i = 0; i < N; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/r%d", i);
		st[i].st_mode = 0;
		assert_true(mc_batch_stat(b, p, &st[i]) >= 0);
	}
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), N + 1);
	for (int i = 0; i <= N; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(st[i].st_mode, S_IFREG | 0600);
	mc_batch_free(b);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
	stop();
}

/* One connection's long request does not hold up the others on its
 * worker: requests run in slices. A short request sent while a long one
 * runs is answered before the long one ends (before, it waited for every
 * op of the long one). */
static void no_starvation(void **state)
{
	static const char *const args[] = { "--workers", "1", NULL };
	start(args);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char deep[512] = "";
	for (int i = 0; i < 200; i++) {
		strcat(deep, "/d");
		assert_int_equal(mc_mkdir(c, deep, 0755), 0);
	}
	mc_disconnect(c);
	int lng = raw_ready(), shrt = raw_ready();
	Mcache__Op op, quick;
	op_path(&op, MCACHE__OP_CODE__OP_LSTAT, deep);
	op_path(&quick, MCACHE__OP_CODE__OP_LSTAT, "/");
	/* Once untimed: the first run pays for a cold process (page faults,
	 * sanitizer shadow memory), which made it several times slower than
	 * the next under ASan. */
	send_many(lng, 19, &op, 4000);
	Mcache__Response *rsp = raw_recv_ok(lng);
	mcache__response__free_unpacked(rsp, NULL);
	uint64_t t0 = now_ms();
	send_many(lng, 20, &op, 4000);
	rsp = raw_recv_ok(lng);
	uint64_t one = now_ms() - t0;
	mcache__response__free_unpacked(rsp, NULL);
	print_message("# one request of 4000 lstats 200 deep: %llu ms\n", (unsigned long long)one);

	send_many(lng, 21, &op, 4000);
	usleep(2000);                       /* the long one has started */
	t0 = now_ms();
	send_many(shrt, 22, &quick, 1);
	rsp = raw_recv_ok(shrt);
	uint64_t wait = now_ms() - t0;
	mcache__response__free_unpacked(rsp, NULL);
	struct pollfd p = { .fd = lng, .events = POLLIN };
	int long_done = poll(&p, 1, 0);
	print_message("# the short request took %llu ms; the long one %s\n",
	              (unsigned long long)wait, long_done ? "had ended" : "was still running");
	/* Answered while the long one ran, or (a loaded machine may not run
	 * the client for a while) at least in a quarter of its time: without
	 * slices it waits for all of it. */
	if (long_done && wait * 4 >= one)
		fail_msg("the short request waited %llu ms for a long one of %llu ms",
		         (unsigned long long)wait, (unsigned long long)one);
	rsp = raw_recv_ok(lng);
	assert_int_equal(rsp->n_results, 4000);
	mcache__response__free_unpacked(rsp, NULL);
	close(lng);
	close(shrt);
	stop();
}

#define T(fn) cmocka_unit_test_teardown(fn, test_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(reply_cap_stops_execution),
		T(readlink_amplification),
		T(readdir_amplification),
		T(too_many_ops),
		T(max_ops_boundary),
		T(batch_over_max_ops),
		T(batch_past_max_reply),
		T(no_starvation),
	};
	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
