/* test-badinput.c - a real mcached against malformed frames, protocol
 * misuse and bad paths: each gets the documented error, and afterwards a
 * second, well-behaved client on the same server still works.
 *
 * The protocol cases speak the raw protocol (proto/frame.h and the generated
 * protobuf-c code) over their own sockets; the path cases use the public API,
 * except one: a name with an embedded NUL cannot pass through a C string, so
 * that case sends a raw Op whose path bytes contain a NUL.
 *
 * The server runs with --max-frame 65536 (MAX_FRAME).
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "harness.h"
#include "mcache.h"

#define MAX_FRAME   65536u
#define IO_TIMEOUT  5      /* seconds a raw read may wait */

static struct mc_server srv;

/* ---- raw protocol helpers ------------------------------------------------- */

/* A blocking unix socket connected to the server, reads time out. */
static int raw_connect(void)
{
	int fd = harness_connect(srv.socket);
	assert_true(fd >= 0);
	struct timeval tv = { IO_TIMEOUT, 0 };
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static void raw_send_bytes(int fd, const void *buf, size_t len)
{
	assert_int_equal(frame_write(fd, buf, len, -1), 0);
}

static void raw_send_request(int fd, const Mcache__Request *req)
{
	uint8_t *buf;
	size_t len;
	assert_int_equal(frame_pack_request(req, MC_FRAME_MAX, &buf, &len), 0);
	raw_send_bytes(fd, buf, len);
	free(buf);
}

static void raw_hello(int fd, uint32_t version, uint64_t id)
{
	Mcache__Hello hello = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	hello.version = version;
	req.id = id;
	req.hello = &hello;
	raw_send_request(fd, &req);
}

/* Connect and complete a good hello. */
static int raw_connect_ready(void)
{
	int fd = raw_connect();
	raw_hello(fd, MC_PROTO_VERSION, 1);
	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("hello: no reply: %s", strerror(-err));
	assert_int_equal(rsp->err, 0);
	assert_non_null(rsp->hello);
	assert_int_equal(rsp->hello->version, MC_PROTO_VERSION);
	mcache__response__free_unpacked(rsp, NULL);
	return fd;
}

/* The server must answer with a whole-request error err and then close. */
static void expect_error_then_close(int fd, int want)
{
	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("expected a Response with err %s, got none: %s", strerrorname_np(want),
		         strerror(-err));
	print_message("# server said err=%d (%s) \"%s\"\n", rsp->err,
	              strerrorname_np(rsp->err) ? strerrorname_np(rsp->err) : "?",
	              rsp->message ? rsp->message : "");
	assert_int_equal(rsp->err, want);
	assert_int_equal(rsp->n_results, 0);
	mcache__response__free_unpacked(rsp, NULL);

	/* Then EOF (or a reset), within the timeout, and nothing else. */
	uint8_t b;
	ssize_t n = recv(fd, &b, 1, 0);
	if (n != 0 && !(n < 0 && errno == ECONNRESET))
		fail_msg("the server did not close the connection (recv %zd: %s)", n,
		         n < 0 ? strerror(errno) : "data");
	close(fd);
}

/* ---- protocol cases --------------------------------------------------------- */

static void garbage_frame(void **state)
{
	int fd = raw_connect_ready();
	uint8_t buf[4 + 16];
	frame_put_len(buf, 16);
	memset(buf + 4, 0xff, 16);  /* a tag varint longer than protobuf allows */
	raw_send_bytes(fd, buf, sizeof(buf));
	expect_error_then_close(fd, EPROTO);
	harness_assert_healthy(&srv);
}

static void garbage_before_hello(void **state)
{
	int fd = raw_connect();
	uint8_t buf[4 + 7] = { 0 };
	frame_put_len(buf, 7);
	memcpy(buf + 4, "\x0a\xff\xff\xff\xff\x0f\x01", 7);  /* a field longer than the frame */
	raw_send_bytes(fd, buf, sizeof(buf));
	expect_error_then_close(fd, EPROTO);
	harness_assert_healthy(&srv);
}

static void empty_frame(void **state)
{
	int fd = raw_connect_ready();
	uint8_t hdr[4];
	frame_put_len(hdr, 0);
	raw_send_bytes(fd, hdr, sizeof(hdr));
	expect_error_then_close(fd, EPROTO);
	harness_assert_healthy(&srv);
}

static void oversized_frame(void **state)
{
	int fd = raw_connect_ready();
	uint8_t hdr[4];
	frame_put_len(hdr, MAX_FRAME + 1);  /* the header alone: nothing more is read */
	raw_send_bytes(fd, hdr, sizeof(hdr));
	expect_error_then_close(fd, EMSGSIZE);
	harness_assert_healthy(&srv);
}

static void oversized_frame_before_hello(void **state)
{
	int fd = raw_connect();
	uint8_t hdr[4];
	frame_put_len(hdr, UINT32_MAX);
	raw_send_bytes(fd, hdr, sizeof(hdr));
	expect_error_then_close(fd, EMSGSIZE);
	harness_assert_healthy(&srv);
}

static void request_before_hello(void **state)
{
	int fd = raw_connect();
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Op *ops[] = { &op };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	op.code = MCACHE__OP_CODE__OP_LSTAT;
	op.path.data = (uint8_t *)"/";
	op.path.len = 1;
	req.id = 7;
	req.n_ops = 1;
	req.ops = ops;
	raw_send_request(fd, &req);
	expect_error_then_close(fd, EPROTO);
	harness_assert_healthy(&srv);
}

static void wrong_hello_version(void **state)
{
	int fd = raw_connect();
	raw_hello(fd, MC_PROTO_VERSION + 100, 1);
	expect_error_then_close(fd, EPROTONOSUPPORT);
	fd = raw_connect();
	raw_hello(fd, 0, 1);
	expect_error_then_close(fd, EPROTONOSUPPORT);
	harness_assert_healthy(&srv);
}

static void hello_twice(void **state)
{
	int fd = raw_connect_ready();
	raw_hello(fd, MC_PROTO_VERSION, 2);
	expect_error_then_close(fd, EPROTO);
	harness_assert_healthy(&srv);
}

/* A client that sends half a frame and disconnects; one that sends half a
 * header; one that stalls mid-frame while others are served. */
static void half_frame_then_disconnect(void **state)
{
	uint8_t buf[4 + 10];
	frame_put_len(buf, 100);
	memset(buf + 4, 0x08, 10);

	int fd = raw_connect_ready();
	raw_send_bytes(fd, buf, sizeof(buf));
	close(fd);
	harness_assert_healthy(&srv);

	fd = raw_connect_ready();
	raw_send_bytes(fd, buf, 2);
	close(fd);
	harness_assert_healthy(&srv);

	fd = raw_connect();
	raw_send_bytes(fd, buf, sizeof(buf));  /* before hello */
	close(fd);
	harness_assert_healthy(&srv);

	/* Stalled mid-frame and still connected: the others must not wait. */
	int stalled[4];
	for (int i = 0; i < 4; i++) {
		stalled[i] = raw_connect_ready();
		raw_send_bytes(stalled[i], buf, sizeof(buf));
	}
	harness_assert_healthy(&srv);
	harness_assert_healthy(&srv);
	for (int i = 0; i < 4; i++)
		close(stalled[i]);
	harness_assert_healthy(&srv);
}

/* A name cannot hold a NUL through the C API (the string ends there), so
 * send the Op raw: path "/nul\0x" must be refused with EINVAL, must not
 * create "/nul", and the connection stays usable. */
static void nul_in_path(void **state)
{
	static const char path[] = "/nul\0x";
	int fd = raw_connect_ready();
	Mcache__Op mk = MCACHE__OP__INIT;
	Mcache__Op st = MCACHE__OP__INIT;
	Mcache__Op *ops[] = { &mk, &st };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	mk.code = MCACHE__OP_CODE__OP_MKDIR;
	mk.path.data = (uint8_t *)path;
	mk.path.len = sizeof(path) - 1;  /* 6 bytes, the NUL included */
	mk.mode = 0755;
	st.code = MCACHE__OP_CODE__OP_LSTAT;
	st.path.data = (uint8_t *)path;
	st.path.len = 4;                 /* "/nul" */
	req.id = 11;
	req.n_ops = 2;
	req.ops = ops;
	raw_send_request(fd, &req);

	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("no reply to an Op with a NUL in its path: %s", strerror(-err));
	assert_int_equal(rsp->err, 0);
	assert_int_equal(rsp->id, 11);
	assert_int_equal(rsp->n_results, 2);
	assert_int_equal(rsp->results[0]->err, EINVAL);
	assert_int_equal(rsp->results[1]->err, ENOENT);  /* "/nul" was not made */
	mcache__response__free_unpacked(rsp, NULL);

	/* The same connection still answers. */
	Mcache__Op ok = MCACHE__OP__INIT;
	Mcache__Op *ops2[] = { &ok };
	ok.code = MCACHE__OP_CODE__OP_LSTAT;
	ok.path.data = (uint8_t *)"/";
	ok.path.len = 1;
	req.id = 12;
	req.n_ops = 1;
	req.ops = ops2;
	raw_send_request(fd, &req);
	rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("no reply after the NUL path: %s", strerror(-err));
	assert_int_equal(rsp->n_results, 1);
	assert_int_equal(rsp->results[0]->err, 0);
	mcache__response__free_unpacked(rsp, NULL);
	close(fd);
	harness_assert_healthy(&srv);
}

/* A relative path sent raw (the library may refuse it before sending):
 * EINVAL from the server itself. */
static void relative_path_raw(void **state)
{
	int fd = raw_connect_ready();
	Mcache__Op mk = MCACHE__OP__INIT;
	Mcache__Op *ops[] = { &mk };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	mk.code = MCACHE__OP_CODE__OP_MKDIR;
	mk.path.data = (uint8_t *)"rel";
	mk.path.len = 3;
	mk.mode = 0755;
	req.id = 3;
	req.n_ops = 1;
	req.ops = ops;
	raw_send_request(fd, &req);
	int err = 0;
	Mcache__Response *rsp = harness_read_response(fd, &err);
	if (!rsp)
		fail_msg("no reply: %s", strerror(-err));
	assert_int_equal(rsp->n_results, 1);
	assert_int_equal(rsp->results[0]->err, EINVAL);
	mcache__response__free_unpacked(rsp, NULL);
	close(fd);
	harness_assert_healthy(&srv);
}

/* ---- path cases through the API ------------------------------------------ */

static mc_client *connect_api(void)
{
	mc_client *c = mc_connect(srv.socket);
	if (!c)
		fail_msg("mc_connect: %s", strerror(errno));
	return c;
}

/* Call must fail with errno want. */
#define assert_errno(call, want) do { \
		errno = 0; \
		long r_ = (long)(call); \
		if (r_ != -1 || errno != (want)) \
			fail_msg("%s: returned %ld errno %s, expected -1 %s", #call, r_, \
			         strerrorname_np(errno) ? strerrorname_np(errno) : "0", \
			         strerrorname_np(want)); \
	} while (0)

/* A "name" with a slash in it is a path: its components are looked up. */
static void slash_in_name(void **state)
{
	mc_client *c = connect_api();
	assert_errno(mc_mkdir(c, "/s1/s2", 0755), ENOENT);
	assert_int_equal(mc_mkdir(c, "/s1", 0755), 0);
	assert_int_equal(mc_mkdir(c, "/s1/s2", 0755), 0);
	struct stat st;
	assert_int_equal(mc_stat(c, "/s1//s2/", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	MC_DIR *d = mc_opendir(c, "/s1");
	assert_non_null(d);
	struct dirent *de = mc_readdir(d);
	assert_non_null(de);
	assert_string_equal(de->d_name, "s2");
	assert_null(mc_readdir(d));
	assert_int_equal(mc_closedir(d), 0);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
}

static void empty_path(void **state)
{
	mc_client *c = connect_api();
	struct stat st;
	assert_errno(mc_stat(c, "", &st), ENOENT);
	assert_errno(mc_lstat(c, "", &st), ENOENT);
	assert_errno(mc_mkdir(c, "", 0755), ENOENT);
	assert_errno(mc_rmdir(c, ""), ENOENT);
	assert_errno(mc_unlink(c, ""), ENOENT);
	assert_errno(mc_open(c, "", O_CREAT | O_WRONLY, 0644), ENOENT);
	assert_errno(mc_rename(c, "", "/x"), ENOENT);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
}

static void long_component(void **state)
{
	mc_client *c = connect_api();
	char p[300];
	struct stat st;
	p[0] = '/';
	memset(p + 1, 'n', 255);
	p[256] = 0;
	assert_int_equal(mc_mkdir(c, p, 0755), 0);  /* 255 bytes: the limit */
	assert_int_equal(mc_stat(c, p, &st), 0);
	p[256] = 'n';
	p[257] = 0;                                  /* 256 bytes */
	assert_errno(mc_mkdir(c, p, 0755), ENAMETOOLONG);
	assert_errno(mc_stat(c, p, &st), ENAMETOOLONG);
	assert_errno(mc_open(c, p, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
	assert_errno(mc_symlink(c, "t", p), ENAMETOOLONG);
	/* Too long in the middle of a path, too. */
	snprintf(p + 257, sizeof(p) - 257, "/x");
	assert_errno(mc_stat(c, p, &st), ENAMETOOLONG);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
}

/* "/" then 100-byte components: len bytes in all. */
static char *long_path(size_t len)
{
	char *p = malloc(len + 1);
	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = i % 101 == 0 ? '/' : 'p';
	p[len] = 0;
	return p;
}

static void long_path_4097(void **state)
{
	mc_client *c = connect_api();
	char *p = long_path(4097);
	struct stat st;
	assert_errno(mc_stat(c, p, &st), ENAMETOOLONG);
	assert_errno(mc_mkdir(c, p, 0755), ENAMETOOLONG);
	assert_errno(mc_unlink(c, p), ENAMETOOLONG);
	assert_errno(mc_rename(c, "/", p), ENAMETOOLONG);
	/* The kernel agrees. */
	assert_errno(stat(p, &st), ENAMETOOLONG);
	free(p);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
}

static void relative_path(void **state)
{
	mc_client *c = connect_api();
	struct stat st;
	assert_errno(mc_mkdir(c, "rel", 0755), EINVAL);
	assert_errno(mc_stat(c, "rel", &st), EINVAL);
	assert_errno(mc_stat(c, "./rel", &st), EINVAL);
	assert_errno(mc_open(c, "rel", O_CREAT | O_WRONLY, 0644), EINVAL);
	assert_errno(mc_rename(c, "/", "rel"), EINVAL);
	mc_disconnect(c);
	harness_assert_healthy(&srv);
}

/* One kernel call on a fresh tmpfs directory: the oracle for the next case. */
static int kernel_errno(int dfd, int which, const char *path)
{
	int r = which == 0 ? mkdirat(dfd, path, 0755) : unlinkat(dfd, path, AT_REMOVEDIR);
	return r == 0 ? 0 : errno;
}

/* "." and ".." as last components of mkdir and rmdir, as on tmpfs. */
static void dot_dotdot_last(void **state)
{
	static const struct {
		int which;          /* 0 mkdir, 1 rmdir */
		const char *rel;
		int want;
	} cases[] = {
		{ 0, "a/.", EEXIST },
		{ 0, "a/..", EEXIST },
		{ 1, "a/.", EINVAL },
		{ 1, "a/..", ENOTEMPTY },
		{ 1, "a/b/..", ENOTEMPTY },
		{ 0, "a/b/./", EEXIST },
		{ 1, "a/./b/.", EINVAL },
	};
	char kdir[] = "/dev/shm/mcache-badinput-XXXXXX";
	assert_non_null(mkdtemp(kdir));
	int dfd = open(kdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(mkdirat(dfd, "a", 0755), 0);
	assert_int_equal(mkdirat(dfd, "a/b", 0755), 0);

	mc_client *c = connect_api();
	assert_int_equal(mc_mkdir(c, "/a", 0755), 0);
	assert_int_equal(mc_mkdir(c, "/a/b", 0755), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char mp[64];
		snprintf(mp, sizeof(mp), "/%s", cases[i].rel);
		int k = kernel_errno(dfd, cases[i].which, cases[i].rel);
		if (k != cases[i].want)
			fail_msg("tmpfs %s %s gave %s, the test expected %s",
			         cases[i].which ? "rmdir" : "mkdir", cases[i].rel,
			         strerrorname_np(k) ? strerrorname_np(k) : "0",
			         strerrorname_np(cases[i].want));
		if (cases[i].which == 0)
			assert_errno(mc_mkdir(c, mp, 0755), cases[i].want);
		else
			assert_errno(mc_rmdir(c, mp), cases[i].want);
	}
	/* Nothing changed. */
	struct stat st;
	assert_int_equal(mc_stat(c, "/a/b", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	mc_disconnect(c);
	unlinkat(dfd, "a/b", AT_REMOVEDIR);
	unlinkat(dfd, "a", AT_REMOVEDIR);
	close(dfd);
	rmdir(kdir);
	harness_assert_healthy(&srv);
}

/* ---- the group -------------------------------------------------------------- */

static int group_setup(void **state)
{
	static const char *const args[] = { "--max-frame", "65536", NULL };
	signal(SIGPIPE, SIG_IGN);
	if (server_start(&srv, args) < 0)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(garbage_frame),
		cmocka_unit_test(garbage_before_hello),
		cmocka_unit_test(empty_frame),
		cmocka_unit_test(oversized_frame),
		cmocka_unit_test(oversized_frame_before_hello),
		cmocka_unit_test(request_before_hello),
		cmocka_unit_test(wrong_hello_version),
		cmocka_unit_test(hello_twice),
		cmocka_unit_test(half_frame_then_disconnect),
		cmocka_unit_test(nul_in_path),
		cmocka_unit_test(relative_path_raw),
		cmocka_unit_test(slash_in_name),
		cmocka_unit_test(empty_path),
		cmocka_unit_test(long_component),
		cmocka_unit_test(long_path_4097),
		cmocka_unit_test(relative_path),
		cmocka_unit_test(dot_dotdot_last),
	};
	return cmocka_run_group_tests_name("badinput", tests, group_setup, group_teardown);
}
