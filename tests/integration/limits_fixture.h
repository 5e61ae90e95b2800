/* limits_fixture.h - what the integration tests of the server's bounds
 * (test-limits.c, test-limits_conn.c) share: a server started for each
 * case with its own settings, its peak memory (VmHWM, from /proc) and its
 * statistics, a check that a well-behaved client is still served, and a
 * raw protocol connection to send what the client library never would
 * (header only; include after cmocka.h). */
#ifndef MC_TEST_LIMITS_FIXTURE_H
#define MC_TEST_LIMITS_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "harness.h"
#include "mcache.h"

#define MiB (1024u * 1024u)
/* Under AddressSanitizer or ThreadSanitizer the server's memory holds
 * shadow memory (and ASan's quarantine): its figures mean little, the
 * bounds are loosened; the plain build holds the real ones. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEM_SLACK 4
#else
#define MEM_SLACK 1
#endif

static struct mc_server srv;

static inline uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void start(const char *const *args)
{
	signal(SIGPIPE, SIG_IGN);
	memset(&srv, 0, sizeof(srv));
	if (server_start(&srv, args) < 0)
		fail_msg("mcached did not start (see its log)");
}

static inline void stop(void)
{
	int st = server_stop(&srv, SIGTERM);
	if (st != 0)
		print_message("# mcached exited with status %d\n", st);
	server_cleanup(&srv);
	assert_int_equal(st, 0);
}

/* The server's peak resident set, in bytes. */
static inline uint64_t server_hwm(void)
{
	char path[64], line[256];
	uint64_t kb = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)srv.pid);
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
			break;
	fclose(f);
	assert_true(kb > 0);
	return kb * 1024;
}

/* The server's peak RSS once it stopped growing by itself: a fresh
 * server faults in its metadata area (1/16 of --cache-size) from its
 * heartbeat thread, later on a loaded machine, which is no growth of the
 * request measured. Stable over 3 reads 50 ms apart, or after 5 s. */
static inline uint64_t settled_hwm(void)
{
	uint64_t last = server_hwm();
	for (int same = 0, i = 0; same < 3 && i < 100; i++) {
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
		uint64_t now = server_hwm();
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

static inline void check_hwm_growth(uint64_t before, uint64_t bound, const char *what)
{
	uint64_t after = server_hwm();
	uint64_t grew = after > before ? after - before : 0;
	bound *= MEM_SLACK;
	print_message("# %s: server peak RSS grew by %.1f MiB (bound %.0f MiB)\n", what,
	              (double)grew / MiB, (double)bound / MiB);
	if (grew > bound)
		fail_msg("%s: the server's peak RSS grew by %llu bytes", what,
		         (unsigned long long)grew);
}

/* A statistic from rpc.limits (or another section). */
static inline uint64_t stat_u64(const char *section, const char *key)
{
	mc_client *c = harness_client(&srv);
	uint64_t v = harness_stat_u64(c, section, key);
	mc_disconnect(c);
	return v;
}

/* ---- raw protocol ------------------------------------------------------- */

static inline int raw_connect_to(int timeout_s)
{
	int fd = harness_connect(srv.socket);
	if (fd < 0)
		fail_msg("connect: %s", strerror(errno));
	struct timeval tv = { timeout_s, 0 };
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static inline void raw_send(int fd, const Mcache__Request *req)
{
	uint8_t *buf;
	size_t len;
	assert_int_equal(frame_pack_request(req, SIZE_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
}

/* The next Response, or NULL with *err (-ECONNRESET: closed, -EAGAIN: none
 * in time). */
static inline Mcache__Response *raw_recv(int fd, int *err)
{
	Mcache__Response *rsp = harness_read_response(fd, err);
	if (!rsp)
		assert_int_not_equal(*err, -EPROTO);
	return rsp;
}

static inline Mcache__Response *raw_recv_ok(int fd)
{
	int err = 0;
	Mcache__Response *rsp = raw_recv(fd, &err);
	if (!rsp)
		fail_msg("no reply: %s", strerror(-err));
	return rsp;
}

/* Send a Hello; 0 when the server answered it, else -errno. */
static inline int raw_hello(int fd)
{
	Mcache__Hello hello = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	hello.version = MC_PROTO_VERSION;
	uint8_t *buf;
	size_t len;
	req.id = 1;
	req.hello = &hello;
	assert_int_equal(frame_pack_request(&req, SIZE_MAX, &buf, &len), 0);
	int err = frame_write(fd, buf, len, -1);
	free(buf);
	if (err < 0)
		return err;
	Mcache__Response *rsp = raw_recv(fd, &err);
	if (!rsp)
		return err;
	err = rsp->err || !rsp->hello ? -EPROTO : 0;
	mcache__response__free_unpacked(rsp, NULL);
	return err;
}

static inline int raw_ready(void)
{
	int fd = raw_connect_to(10);
	assert_int_equal(raw_hello(fd), 0);
	return fd;
}

/* The server answers a whole-request error want, then closes. */
static inline void expect_error_then_close(int fd, int want)
{
	int err = 0;
	Mcache__Response *rsp = raw_recv(fd, &err);
	if (!rsp)
		fail_msg("expected err %s, got no reply: %s", strerrorname_np(want),
		         strerror(-err));
	print_message("# server said err=%d \"%s\"\n", rsp->err, rsp->message ? rsp->message : "");
	assert_int_equal(rsp->err, want);
	assert_int_equal(rsp->n_results, 0);
	mcache__response__free_unpacked(rsp, NULL);
	uint8_t b;
	ssize_t n = recv(fd, &b, 1, 0);
	if (n != 0 && !(n < 0 && errno == ECONNRESET))
		fail_msg("the server did not close the connection (recv %zd)", n);
	close(fd);
}

/* n copies of op in one request. */
static inline void send_many(int fd, uint64_t id, const Mcache__Op *op, size_t n)
{
	Mcache__Op **ops = malloc(n * sizeof(*ops));
	assert_non_null(ops);
	for (size_t i = 0; i < n; i++)
		ops[i] = (Mcache__Op *)op;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	req.id = id;
	req.n_ops = n;
	req.ops = ops;
	raw_send(fd, &req);
	free(ops);
}

static inline void op_path(Mcache__Op *op, Mcache__OpCode code, const char *path)
{
	mcache__op__init(op);
	op->code = code;
	op->path.data = (uint8_t *)path;
	op->path.len = strlen(path);
}

/* Open a directory over the raw connection: its handle. */
static inline uint64_t raw_opendir(int fd, const char *path)
{
	Mcache__Op op;
	op_path(&op, MCACHE__OP_CODE__OP_OPEN, path);
	op.flags = O_RDONLY | O_DIRECTORY;
	send_many(fd, 2, &op, 1);
	Mcache__Response *rsp = raw_recv_ok(fd);
	assert_int_equal(rsp->n_results, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	uint64_t h = rsp->results[0]->handle;
	mcache__response__free_unpacked(rsp, NULL);
	return h;
}

/* /d with n files of 40-byte names. */
static inline void make_dir(const char *dir, int n)
{
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, dir, 0755), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	for (int i = 0; i < n; i++) {
		char p[128];
		snprintf(p, sizeof(p), "%s/%036d-xyz", dir, i);
		assert_true(mc_batch_create(b, p, 0644) >= 0);
		if ((i + 1) % 500 == 0 || i == n - 1) {
			assert_int_equal(mc_batch_run(b), 0);
			for (size_t k = 0; k < mc_batch_count(b); k++)
				assert_int_equal(mc_batch_error(b, k), 0);
		}
	}
	mc_batch_free(b);
	mc_disconnect(c);
}

static inline int test_teardown(void **state)
{
	server_cleanup(&srv);
	return 0;
}

#endif
