/* test-frame.c - the frame codec: packing, blocking write/read over a
 * socketpair, descriptor passing, limits, and injected short I/O. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"

/* ---- fault injection: this program's sendmsg/recvmsg wrap libc's ----- */

static int fault_on;            /* cut every transfer to fault_max bytes */
static size_t fault_max = 3;
static unsigned fault_calls;    /* every other call fails with EINTR first */
static unsigned fault_eintr, fault_short;

ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);
	struct msghdr m;
	struct iovec iov;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "sendmsg");
	if (!fault_on)
		return real(fd, mh, flags);
	if (fault_calls++ % 2 == 0) {
		fault_eintr++;
		errno = EINTR;
		return -1;
	}
	m = *mh;
	iov = mh->msg_iov[0];
	if (iov.iov_len > fault_max) {
		iov.iov_len = fault_max;
		fault_short++;
	}
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	return real(fd, &m, flags);
}

ssize_t recvmsg(int fd, struct msghdr *mh, int flags)
{
	static ssize_t (*real)(int, struct msghdr *, int);
	struct iovec *orig, iov;
	ssize_t n;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "recvmsg");
	if (!fault_on)
		return real(fd, mh, flags);
	if (fault_calls++ % 2 == 0) {
		fault_eintr++;
		errno = EINTR;
		return -1;
	}
	orig = mh->msg_iov;
	iov = orig[0];
	if (iov.iov_len > fault_max) {
		iov.iov_len = fault_max;
		fault_short++;
	}
	mh->msg_iov = &iov;
	mh->msg_iovlen = 1;
	n = real(fd, mh, flags);
	mh->msg_iov = orig;
	return n;
}

/* ---- helpers ---------------------------------------------------------- */

static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static int setup_pair(void **state)
{
	int *sv = malloc(2 * sizeof(int));

	if (!sv || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	*state = sv;
	return 0;
}

static int teardown_pair(void **state)
{
	int *sv = *state;

	fault_on = 0;
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	free(sv);
	return 0;
}

/* A request with id and one op carrying path. */
static void make_request(Mcache__Request *req, Mcache__Op *op, Mcache__Op **opp,
			 uint64_t id, const char *path)
{
	mcache__request__init(req);
	mcache__op__init(op);
	op->code = MCACHE__OP_CODE__OP_MKDIR;
	op->path.data = (uint8_t *)path;
	op->path.len = strlen(path);
	op->mode = 0755;
	opp[0] = op;
	req->id = id;
	req->n_ops = 1;
	req->ops = opp;
}

static void write_raw(int fd, const void *p, size_t n)
{
	assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* ---- cases ------------------------------------------------------------ */

static void test_pack_header(void **state)
{
	Mcache__Request req;
	Mcache__Op op, *opp[1];
	uint8_t *buf;
	size_t len;

	(void)state;
	make_request(&req, &op, opp, 42, "/a/b");
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(len, MC_FRAME_HDR + mcache__request__get_packed_size(&req));
	assert_int_equal(frame_get_len(buf), len - MC_FRAME_HDR);
	free(buf);
}

static void test_pack_too_big(void **state)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	uint8_t *buf = (uint8_t *)0x1;
	size_t len = 7;

	(void)state;
	rsp.id = 1;
	rsp.message = "a message longer than ten bytes";
	assert_int_equal(frame_pack_response(&rsp, 10, &buf, &len), -EMSGSIZE);
	/* Out-parameters untouched on failure. */
	assert_ptr_equal(buf, (uint8_t *)0x1);
	assert_int_equal(len, 7);
}

static void test_len_codec(void **state)
{
	uint8_t p[4];

	(void)state;
	frame_put_len(p, 0x12345678u);
	assert_int_equal(p[0], 0x78);
	assert_int_equal(p[3], 0x12);
	assert_int_equal(frame_get_len(p), 0x12345678u);
}

static void test_round_trip(void **state)
{
	int *sv = *state;
	Mcache__Request req, *got;
	Mcache__Op op, *opp[1];
	uint8_t *buf, *payload;
	size_t len, plen;
	int fd = 123;

	make_request(&req, &op, opp, 7, "/dir/name");
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(sv[0], buf, len, -1), 0);
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, &fd), 0);
	assert_int_equal(fd, -1);
	assert_int_equal(plen, len - MC_FRAME_HDR);
	got = mcache__request__unpack(NULL, plen, payload);
	assert_non_null(got);
	assert_int_equal(got->id, 7);
	assert_int_equal(got->n_ops, 1);
	assert_int_equal(got->ops[0]->code, MCACHE__OP_CODE__OP_MKDIR);
	assert_int_equal(got->ops[0]->path.len, strlen("/dir/name"));
	assert_memory_equal(got->ops[0]->path.data, "/dir/name", got->ops[0]->path.len);
	assert_int_equal(got->ops[0]->mode, 0755);
	mcache__request__free_unpacked(got, NULL);
	free(payload);
	free(buf);
}

static void test_fd_passing(void **state)
{
	int *sv = *state;
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__HelloReply hr = MCACHE__HELLO_REPLY__INIT;
	uint8_t *buf, *payload;
	size_t len, plen;
	char text[32] = { 0 };
	int mfd, fd = -1;

	mfd = memfd_create("frame-test", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	write_raw(mfd, "segment contents", 16);
	hr.shm_size = 16;
	rsp.id = 1;
	rsp.hello = &hr;
	assert_int_equal(frame_pack_response(&rsp, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(sv[0], buf, len, mfd), 0);
	close(mfd);
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, &fd), 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(pread(fd, text, sizeof(text), 0), 16);
	assert_string_equal(text, "segment contents");
	close(fd);
	free(payload);
	free(buf);
}

/* A received fd nobody asked for, and extra fds, are closed, not leaked. */
static void test_extra_fds_closed(void **state)
{
	int *sv = *state;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(3 * sizeof(int))];
	} ctl;
	uint8_t frame[5] = { 1, 0, 0, 0, 0x08 };
	struct iovec iov = { .iov_base = frame, .iov_len = sizeof(frame) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c;
	int fds[3] = { 0, 1, 2 };
	uint8_t *payload;
	size_t plen;
	int before, fd = -1;

	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	before = open_fds();

	assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(frame));
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, &fd), 0);
	assert_true(fd >= 0);
	assert_int_equal(open_fds(), before + 1);
	close(fd);
	free(payload);

	/* passfd == NULL: every received fd is closed. */
	assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(frame));
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, NULL), 0);
	assert_int_equal(open_fds(), before);
	free(payload);
}

struct reader {
	int fd;
	size_t max;
	int rc;
	uint8_t *payload;
	size_t len;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;

	rd->rc = frame_read(rd->fd, rd->max, &rd->payload, &rd->len, NULL);
	return NULL;
}

/* A frame much larger than the socket buffer: the writer blocks and
 * resumes while a reader thread drains it. */
static void test_large_frame_small_sndbuf(void **state)
{
	int *sv = *state;
	size_t n = 4u << 20;
	uint8_t *buf = malloc(MC_FRAME_HDR + n);
	struct reader rd = { .fd = sv[1], .max = MC_FRAME_MAX };
	int sz = 4096;
	pthread_t th;

	assert_non_null(buf);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
	frame_put_len(buf, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		buf[MC_FRAME_HDR + i] = (uint8_t)(i * 7 + (i >> 11));
	assert_int_equal(pthread_create(&th, NULL, reader_main, &rd), 0);
	assert_int_equal(frame_write(sv[0], buf, MC_FRAME_HDR + n, -1), 0);
	pthread_join(th, NULL);
	assert_int_equal(rd.rc, 0);
	assert_int_equal(rd.len, n);
	assert_memory_equal(rd.payload, buf + MC_FRAME_HDR, n);
	free(rd.payload);
	free(buf);
}

/* Injected: every call first fails with EINTR, then moves at most 3 bytes;
 * the fd still arrives exactly once and the frame is intact. */
static void test_short_io_and_eintr(void **state)
{
	int *sv = *state;
	Mcache__Request req, *got;
	Mcache__Op op, *opp[1];
	uint8_t *buf, *payload;
	size_t len, plen;
	int mfd, fd = -1, before;

	make_request(&req, &op, opp, 99, "/a/rather/long/path/to/split/into/many/pieces");
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	mfd = memfd_create("frame-short", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	before = open_fds();

	fault_on = 1;
	fault_calls = fault_eintr = fault_short = 0;
	assert_int_equal(frame_write(sv[0], buf, len, mfd), 0);
	assert_true(fault_short > 5);
	assert_true(fault_eintr > 5);
	fault_short = fault_eintr = 0;
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, &fd), 0);
	assert_true(fault_short > 5);
	assert_true(fault_eintr > 5);
	fault_on = 0;

	assert_true(fd >= 0);
	assert_int_equal(open_fds(), before + 1);   /* one fd, not one per chunk */
	got = mcache__request__unpack(NULL, plen, payload);
	assert_non_null(got);
	assert_int_equal(got->id, 99);
	assert_memory_equal(got->ops[0]->path.data, op.path.data, op.path.len);
	mcache__request__free_unpacked(got, NULL);
	close(fd);
	close(mfd);
	free(payload);
	free(buf);
}

static void test_oversize(void **state)
{
	int *sv = *state;
	uint8_t hdr[4];
	uint8_t *payload = (uint8_t *)0x1;
	size_t plen = 5;
	int fd = 77;

	frame_put_len(hdr, 1025);
	write_raw(sv[0], hdr, 4);
	write_raw(sv[0], "xyz", 3);
	assert_int_equal(frame_read(sv[1], 1024, &payload, &plen, &fd), -EMSGSIZE);
	assert_ptr_equal(payload, (uint8_t *)0x1);
	assert_int_equal(plen, 5);
	assert_int_equal(fd, 77);
	/* Nothing beyond the header was consumed. */
	assert_int_equal(recv(sv[1], hdr, sizeof(hdr), MSG_DONTWAIT), 3);
}

static void test_oversize_closes_fd(void **state)
{
	int *sv = *state;
	uint8_t hdr[4];
	int before = open_fds();
	uint8_t *payload;
	size_t plen;
	int fd = -1;

	frame_put_len(hdr, 1 << 30);
	assert_int_equal(frame_write(sv[0], hdr, 4, 1), 0);
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, &fd), -EMSGSIZE);
	assert_int_equal(fd, -1);
	assert_int_equal(open_fds(), before);
}

static void test_zero_length(void **state)
{
	int *sv = *state;
	uint8_t hdr[4] = { 0 };
	uint8_t *payload;
	size_t plen;

	write_raw(sv[0], hdr, 4);
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, NULL), -EPROTO);
}

static void test_peer_closed(void **state)
{
	int *sv = *state;
	uint8_t *payload;
	size_t plen;

	close(sv[0]);
	sv[0] = -1;
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, NULL), -ECONNRESET);
}

static void test_peer_closed_mid_header(void **state)
{
	int *sv = *state;
	uint8_t *payload;
	size_t plen;

	write_raw(sv[0], "\x10\x00", 2);
	close(sv[0]);
	sv[0] = -1;
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, NULL), -ECONNRESET);
}

static void test_peer_closed_mid_payload(void **state)
{
	int *sv = *state;
	uint8_t hdr[4];
	uint8_t *payload;
	size_t plen;

	frame_put_len(hdr, 100);
	write_raw(sv[0], hdr, 4);
	write_raw(sv[0], "only part", 9);
	close(sv[0]);
	sv[0] = -1;
	assert_int_equal(frame_read(sv[1], MC_FRAME_MAX, &payload, &plen, NULL), -ECONNRESET);
}

static void test_write_peer_closed(void **state)
{
	int *sv = *state;
	uint8_t buf[8] = { 4, 0, 0, 0, 1, 2, 3, 4 };

	close(sv[1]);
	sv[1] = -1;
	/* MSG_NOSIGNAL: an error, not SIGPIPE. */
	assert_int_equal(frame_write(sv[0], buf, sizeof(buf), -1), -EPIPE);
}

static void test_write_bad_fd(void **state)
{
	int *sv = *state;
	uint8_t buf[8] = { 4, 0, 0, 0, 1, 2, 3, 4 };

	assert_int_equal(frame_write(sv[0], buf, sizeof(buf), 1000), -EBADF);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_pair, teardown_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_header),
		cmocka_unit_test(test_pack_too_big),
		cmocka_unit_test(test_len_codec),
		T(test_round_trip),
		T(test_fd_passing),
		T(test_extra_fds_closed),
		T(test_large_frame_small_sndbuf),
		T(test_short_io_and_eintr),
		T(test_oversize),
		T(test_oversize_closes_fd),
		T(test_zero_length),
		T(test_peer_closed),
		T(test_peer_closed_mid_header),
		T(test_peer_closed_mid_payload),
		T(test_write_peer_closed),
		T(test_write_bad_fd),
	};

	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
