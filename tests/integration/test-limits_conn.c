/* test-limits_conn.c - a real mcached against connections that try to make
 * it use unbounded memory or descriptors: clients that never read,
 * connections that never say Hello or never finish a frame, descriptor
 * exhaustion. Each case starts its own server (its own settings, a fresh
 * peak-memory figure; limits_fixture.h) and ends by checking that a
 * well-behaved client is still served.
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
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "harness.h"
#include "mcache.h"
#include "limits_fixture.h"

/* ---- finding: per-connection memory ------------------------------------- */

/* Pipeline readdir requests (about 100 KB of reply each) without reading
 * for up to ms milliseconds, until the socket stays full. Bytes sent. */
static size_t flood_unread(int fd, uint64_t h, unsigned ms)
{
	Mcache__Op rd;
	mcache__op__init(&rd);
	rd.code = MCACHE__OP_CODE__OP_READDIR;
	rd.handle = h;
	rd.count = 8192;
	Mcache__Op *ops[1] = { &rd };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	req.n_ops = 1;
	req.ops = ops;
	uint8_t *one, *buf;
	size_t len1, len, sent = 0;
	assert_int_equal(frame_pack_request(&req, SIZE_MAX, &one, &len1), 0);
	len = 64 * len1;                    /* 64 requests a send */
	buf = malloc(len);
	assert_non_null(buf);
	for (size_t i = 0; i < 64; i++)
		memcpy(buf + i * len1, one, len1);
	free(one);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	uint64_t end = now_ms() + ms;
	size_t off = 0;
	while (now_ms() < end) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			sent += (size_t)n;
			off = (off + (size_t)n) % len;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			break;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, 300) == 0)
			break;                      /* full for 300 ms: the server stopped reading */
	}
	fcntl(fd, F_SETFL, fl);
	free(buf);
	return sent;
}

/* A client that sends but never reads: the server stops reading it once its
 * unsent replies pass --conn-output-max (4M), whatever max_frame is. */
static void slow_reader_bounded(void **state)
{
	start(NULL);
	make_dir("/d", 2000);
	int fd = raw_ready();
	uint64_t h = raw_opendir(fd, "/d");
	uint64_t before = settled_hwm();
	size_t sent = flood_unread(fd, h, 3000);
	print_message("# sent %zu bytes of requests without reading\n", sent);
	check_hwm_growth(before, 24 * MiB, "a client that never reads");
	harness_assert_healthy(&srv);
	close(fd);
	stop();
}

/* Past --output-max in all, clients that do not read are disconnected. */
static void output_total_disconnects(void **state)
{
	static const char *const args[] = { "--conn-output-max", "512K", "--output-max", "1M",
		                            NULL };
	start(args);
	make_dir("/d", 2000);
	int fd[3];
	for (int i = 0; i < 3; i++) {
		fd[i] = raw_ready();
		flood_unread(fd[i], raw_opendir(fd[i], "/d"), 1000);
	}
	assert_true(stat_u64("\"limits\"", "output_disconnects") >= 1);
	/* A disconnected one reads its queued replies, then the end. */
	int closed = 0;
	for (int i = 0; i < 3; i++) {
		int err = 0;
		Mcache__Response *rsp;
		while ((rsp = raw_recv(fd[i], &err)) != NULL)
			mcache__response__free_unpacked(rsp, NULL);
		closed += err == -ECONNRESET;
		close(fd[i]);
	}
	assert_true(closed >= 1);
	harness_assert_healthy(&srv);
	stop();
}

static void hello_timeout(void **state)
{
	static const char *const args[] = { "--hello-timeout", "1", NULL };
	start(args);
	int fd = raw_connect_to(5);
	uint8_t half[6] = { 20, 0, 0, 0, 0x12, 0x02 };  /* a Hello frame that never ends */
	assert_int_equal(send(fd, half, sizeof(half), 0), (ssize_t)sizeof(half));
	uint64_t t0 = now_ms();
	expect_error_then_close(fd, ETIMEDOUT);
	assert_true(now_ms() - t0 < 3000);
	assert_int_equal(stat_u64("\"limits\"", "hello_timeouts"), 1);
	harness_assert_healthy(&srv);
	stop();
}

/* A started frame must complete in --frame-timeout; frames that do, however
 * slowly they follow each other, are fine. */
static void frame_timeout(void **state)
{
	static const char *const args[] = { "--frame-timeout", "1", NULL };
	start(args);
	int slow = raw_ready();
	Mcache__Op op;
	op_path(&op, MCACHE__OP_CODE__OP_LSTAT, "/");
	for (int i = 0; i < 4; i++) {
		usleep(400 * 1000);
		send_many(slow, 10 + i, &op, 1);
		Mcache__Response *rsp = raw_recv_ok(slow);
		assert_int_equal(rsp->results[0]->err, 0);
		mcache__response__free_unpacked(rsp, NULL);
	}
	int fd = raw_ready();
	uint8_t part[14] = { 100, 0, 0, 0 };
	memset(part + 4, 0x08, 10);
	assert_int_equal(send(fd, part, sizeof(part), 0), (ssize_t)sizeof(part));
	uint64_t t0 = now_ms();
	expect_error_then_close(fd, ETIMEDOUT);
	assert_true(now_ms() - t0 < 3000);
	assert_int_equal(stat_u64("\"limits\"", "frame_timeouts"), 1);
	close(slow);
	harness_assert_healthy(&srv);
	stop();
}

/* Connections that never say Hello cannot lock others out: at
 * --max-connections the oldest of them is closed for the newcomer. */
static void prehello_flood(void **state)
{
	static const char *const args[] = { "--max-connections", "16", NULL };
	start(args);
	int fd[40];
	for (int i = 0; i < 40; i++)
		fd[i] = raw_connect_to(5);
	harness_assert_healthy(&srv);
	/* Each one past the cap closed an older one or, in a burst faster than
	 * the workers take connections, was refused itself. */
	uint64_t ev = stat_u64("\"limits\"", "prehello_evicted");
	uint64_t ref = stat_u64("\"limits\"", "refused");
	print_message("# %llu closed before their hello, %llu refused\n",
	              (unsigned long long)ev, (unsigned long long)ref);
	assert_true(ev >= 1 && ev + ref >= 24);
	for (int i = 0; i < 40; i++)
		close(fd[i]);
	stop();
}

/* --max-prehello N: never more than N connections waiting for their Hello. */
static void prehello_cap(void **state)
{
	static const char *const args[] = { "--max-prehello", "4", NULL };
	start(args);
	int fd[10];
	for (int i = 0; i < 10; i++) {
		fd[i] = raw_connect_to(1);
		usleep(20 * 1000);
	}
	usleep(200 * 1000);
	int open = 0;
	for (int i = 0; i < 10; i++) {
		uint8_t b;
		ssize_t n = recv(fd[i], &b, 1, MSG_DONTWAIT);
		open += n < 0 && errno == EAGAIN;
		close(fd[i]);
	}
	print_message("# %d of 10 connections without hello still open\n", open);
	assert_int_equal(open, 4);
	harness_assert_healthy(&srv);
	stop();
}

/* ---- finding: descriptor exhaustion --------------------------------------- */

static off_t log_size(void)
{
	struct stat st;
	return stat(srv.log, &st) == 0 ? st.st_size : 0;
}

/* Out of descriptors, an admin request must not make the admin thread
 * spin on accept (and flood the log); it is served once descriptors free. */
static void admin_emfile(void **state)
{
	start(NULL);
	struct rlimit rl = { 128, 128 };
	assert_int_equal(prlimit(srv.pid, RLIMIT_NOFILE, &rl, NULL), 0);
	int fd[160];
	for (int i = 0; i < 160; i++) {
		fd[i] = harness_connect(srv.socket);
		struct timeval tv = { 0, 200000 };
		if (fd[i] >= 0 && setsockopt(fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0)
			raw_hello(fd[i]);       /* fails once the server is out of descriptors */
	}
	int a = harness_connect(srv.admin);
	assert_true(a >= 0);
	static const char get[] = "GET /healthz HTTP/1.0\r\n\r\n";
	assert_int_equal(write(a, get, sizeof(get) - 1), (ssize_t)(sizeof(get) - 1));
	off_t l0 = log_size();
	sleep(1);
	off_t grew = log_size() - l0;
	print_message("# log grew %lld bytes in 1 s while out of descriptors\n", (long long)grew);
	assert_true(grew < 64 * 1024);
	for (int i = 0; i < 160; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	struct timeval tv = { 5, 0 };
	setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[256] = { 0 };
	ssize_t n = read(a, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "200"));
	close(a);
	assert_true(stat_u64("\"admin\"", "accept_pauses") >= 1);
	harness_assert_healthy(&srv);
	stop();
}

/* A low soft descriptor limit is raised (up to hard) for --max-connections. */
static void rlimit_raised(void **state)
{
	static const char *const args[] = { "--max-connections", "1000", NULL };
	struct rlimit old, rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	if (old.rlim_max != RLIM_INFINITY && old.rlim_max < 1100) {
		print_message("# skipped: hard RLIMIT_NOFILE %llu < 1100\n",
		              (unsigned long long)old.rlim_max);
		return;
	}
	rl = old;
	rl.rlim_cur = 200;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	start(args);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(prlimit(srv.pid, RLIMIT_NOFILE, NULL, &rl), 0);
	print_message("# server's soft descriptor limit: %llu\n", (unsigned long long)rl.rlim_cur);
	assert_true(rl.rlim_cur >= 1000);
	stop();
}

/* When the hard limit is too low, the connection cap is lowered to fit:
 * extra clients are refused at once, the listener never runs dry. Last:
 * it lowers this process's hard limit for good. */
static void rlimit_lowers_cap(void **state)
{
	static const char *const args[] = { "--max-connections", "1000", NULL };
	struct rlimit rl = { 256, 256 };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	start(args);
	int fd[236], ready = 0;
	for (int i = 0; i < 236; i++) {
		fd[i] = harness_connect(srv.socket);
		if (fd[i] < 0)
			continue;
		struct timeval tv = { 1, 0 };
		setsockopt(fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ready += raw_hello(fd[i]) == 0;
	}
	print_message("# %d of 236 connections served\n", ready);
	for (int i = 0; i < 236; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	usleep(200 * 1000);
	assert_true(ready > 150 && ready < 236);
	assert_int_equal(stat_u64("\"limits\"", "accept_pauses"), 0);
	assert_true(stat_u64("\"limits\"", "refused") >= 1);
	harness_assert_healthy(&srv);
	stop();
}

#define T(fn) cmocka_unit_test_teardown(fn, test_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(slow_reader_bounded),
		T(output_total_disconnects),
		T(hello_timeout),
		T(frame_timeout),
		T(prehello_flood),
		T(prehello_cap),
		T(admin_emfile),
		T(rlimit_raised),
		T(rlimit_lowers_cap),      /* last: lowers the hard limit */
	};
	return cmocka_run_group_tests_name("limits_conn", tests, NULL, NULL);
}
