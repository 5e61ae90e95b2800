/* test-limits.c - a real mcached against clients that try to make it use
 * unbounded memory or descriptors: many ops in one small request, replies
 * larger than the frame limit, clients that never read, connections that
 * never say Hello or never finish a frame, descriptor exhaustion. Each case
 * starts its own server (its own settings, a fresh peak-memory figure) and
 * ends by checking that a well-behaved client is still served.
 *
 * Memory is the server's VmHWM (peak resident set) from /proc, minus the
 * value before the attack.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

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

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void start(const char *const *args)
{
	signal(SIGPIPE, SIG_IGN);
	memset(&srv, 0, sizeof(srv));
	if (server_start(&srv, args) < 0)
		fail_msg("mcached did not start (see its log)");
}

static void stop(void)
{
	int st = server_stop(&srv, SIGTERM);
	if (st != 0)
		print_message("# mcached exited with status %d\n", st);
	server_cleanup(&srv);
	assert_int_equal(st, 0);
}

/* The server's peak resident set, in bytes. */
static uint64_t server_hwm(void)
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
static uint64_t settled_hwm(void)
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

static void check_hwm_growth(uint64_t before, uint64_t bound, const char *what)
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
static uint64_t stat_u64(const char *section, const char *key)
{
	mc_client *c = harness_client(&srv);
	uint64_t v = harness_stat_u64(c, section, key);
	mc_disconnect(c);
	return v;
}

/* The server is alive, and a fresh client can mkdir and stat. */
static void assert_server_healthy(void)
{
	static unsigned seq;
	int st;
	assert_int_equal(waitpid(srv.pid, &st, WNOHANG), 0);
	mc_client *c = mc_connect(srv.socket);
	if (!c)
		fail_msg("a well-behaved client cannot connect: %s", strerror(errno));
	char p[64];
	snprintf(p, sizeof(p), "/healthy-%u", ++seq);
	assert_int_equal(mc_mkdir(c, p, 0755), 0);
	struct stat sb;
	assert_int_equal(mc_stat(c, p, &sb), 0);
	mc_disconnect(c);
}

/* ---- raw protocol ------------------------------------------------------- */

static int raw_connect_to(int timeout_s)
{
	int fd = harness_connect(srv.socket);
	if (fd < 0)
		fail_msg("connect: %s", strerror(errno));
	struct timeval tv = { timeout_s, 0 };
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static void raw_send(int fd, const Mcache__Request *req)
{
	uint8_t *buf;
	size_t len;
	assert_int_equal(frame_pack_request(req, SIZE_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
	free(buf);
}

/* The next Response, or NULL with *err (-ECONNRESET: closed, -EAGAIN: none
 * in time). */
static Mcache__Response *raw_recv(int fd, int *err)
{
	Mcache__Response *rsp = harness_read_response(fd, err);
	if (!rsp)
		assert_int_not_equal(*err, -EPROTO);
	return rsp;
}

static Mcache__Response *raw_recv_ok(int fd)
{
	int err = 0;
	Mcache__Response *rsp = raw_recv(fd, &err);
	if (!rsp)
		fail_msg("no reply: %s", strerror(-err));
	return rsp;
}

/* Send a Hello; 0 when the server answered it, else -errno. */
static int raw_hello(int fd)
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

static int raw_ready(void)
{
	int fd = raw_connect_to(10);
	assert_int_equal(raw_hello(fd), 0);
	return fd;
}

/* The server answers a whole-request error want, then closes. */
static void expect_error_then_close(int fd, int want)
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
static void send_many(int fd, uint64_t id, const Mcache__Op *op, size_t n)
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

static void op_path(Mcache__Op *op, Mcache__OpCode code, const char *path)
{
	mcache__op__init(op);
	op->code = code;
	op->path.data = (uint8_t *)path;
	op->path.len = strlen(path);
}

/* Open a directory over the raw connection: its handle. */
static uint64_t raw_opendir(int fd, const char *path)
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
static void make_dir(const char *dir, int n)
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
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
	assert_server_healthy();
	stop();
}

static int test_teardown(void **state)
{
	server_cleanup(&srv);
	return 0;
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
	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
