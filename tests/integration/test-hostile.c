/* test-hostile.c - what a hostile local client can do through the client
 * area it maps read-write: scribble on every byte of it. The server must
 * keep serving (/stats, new connections), other clients must keep working
 * and connecting, and the read-path totals in /stats must stay bounded and
 * never go backwards. The hostile side speaks the raw protocol to get the
 * area's descriptor; the victims use the public API. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

/* A raw connection that completed its hello, with the client area mapped
 * read-write as any client may map it. */
struct hostile {
	int sock;
	unsigned char *area;
	size_t size;
};

static void hostile_open(struct hostile *h)
{
	Mcache__Hello hello = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	uint8_t *buf;
	size_t len;
	int fds[2] = { -1, -1 };

	h->sock = harness_connect(srv.socket);
	assert_true(h->sock >= 0);
	struct timeval tv = { 5, 0 };
	assert_int_equal(setsockopt(h->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	hello.version = MC_PROTO_VERSION;
	req.id = 1;
	req.hello = &hello;
	assert_int_equal(frame_pack_request(&req, MC_FRAME_MAX, &buf, &len), 0);
	assert_int_equal(frame_write(h->sock, buf, len, -1), 0);
	free(buf);
	assert_int_equal(frame_read_fds(h->sock, MC_FRAME_MAX, &buf, &len, fds, 2), 0);
	Mcache__Response *rsp = mcache__response__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(rsp);
	assert_non_null(rsp->hello);
	assert_true(fds[1] >= 0);
	h->size = (size_t)rsp->hello->area_size;
	mcache__response__free_unpacked(rsp, NULL);
	close(fds[0]);
	h->area = mmap(NULL, h->size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	assert_ptr_not_equal(h->area, MAP_FAILED);
	close(fds[1]);
}

static void hostile_close(struct hostile *h)
{
	munmap(h->area, h->size);
	close(h->sock);
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* The server process is still there. */
static void assert_server_alive(void)
{
	int status;
	if (waitpid(srv.pid, &status, WNOHANG) == srv.pid)
		fail_msg("mcached died (status %#x); see %s", status, srv.log);
	assert_int_equal(kill(srv.pid, 0), 0);
}

static uint64_t readpath(mc_client *c, const char *key)
{
	char *js = mc_server_stats(c);
	if (!js)
		fail_msg("/stats failed: %s", strerror(errno));
	uint64_t v;
	assert_int_equal(harness_json_u64(js, "\"readpath\"", key, &v), 0);
	free(js);
	return v;
}

/* Cached stats that must all succeed. */
static void stat_loop(mc_client *c, int n)
{
	struct stat st;
	for (int i = 0; i < n; i++)
		assert_int_equal(mc_stat(c, "/h/file", &st), 0);
}

static void test_setup_tree(void **state)
{
	(void)state;
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/h", 0755), 0);
	int fd = mc_creat(c, "/h/file", 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

/* The former area header said how many slots there are (byte 16). A client
 * writing 0xffffffff there made /stats read and every later hello write
 * out of bounds in the server. */
static void test_nslots_scribble(void **state)
{
	(void)state;
	struct hostile h;
	hostile_open(&h);
	mc_client *v = mc_connect(srv.socket);
	assert_non_null(v);
	stat_loop(v, 100);
	put32(h.area + 16, 0xffffffffu);
	/* Leave slots behind so that a hello walks past the end. */
	for (int i = 0; i < 3; i++) {
		mc_client *x = mc_connect(srv.socket);
		assert_non_null(x);
		stat_loop(x, 10);
		mc_disconnect(x);
	}
	char *js = mc_server_stats(v);
	if (!js)
		fail_msg("/stats after the scribble: %s", strerror(errno));
	free(js);
	assert_server_alive();
	mc_disconnect(v);
	hostile_close(&h);
}

/* Garbage over the whole area, magic included: new clients still connect
 * and answer, totals stay bounded (no value near 2^64) and never go down. */
static void test_area_garbage(void **state)
{
	(void)state;
	struct hostile h;
	hostile_open(&h);
	mc_client *v = mc_connect(srv.socket);
	assert_non_null(v);
	stat_loop(v, 1000);
	uint64_t hits0 = readpath(v, "hits");
	assert_true(hits0 >= 1000);

	memset(h.area, 0xff, h.size);
	put32(h.area, 0xdeadbeefu);
	mc_client *late = mc_connect(srv.socket);
	if (!late)
		fail_msg("mc_connect after the area was overwritten: %s", strerror(errno));
	stat_loop(late, 100);
	uint64_t hits1 = readpath(late, "hits");
	uint64_t rpcs1 = readpath(late, "rpcs");
	assert_true(hits1 >= hits0);
	if (hits1 > (1ull << 62) || rpcs1 > (1ull << 62))
		fail_msg("readpath totals near 2^64: hits %llu rpcs %llu",
		         (unsigned long long)hits1, (unsigned long long)rpcs1);

	/* Zeroing every counter must not make the totals go backwards. */
	memset(h.area, 0, h.size);
	uint64_t hits2 = readpath(late, "hits");
	if (hits2 < hits1)
		fail_msg("readpath hits went backwards: %llu then %llu",
		         (unsigned long long)hits1, (unsigned long long)hits2);
	stat_loop(v, 10);
	assert_server_alive();
	mc_disconnect(late);
	mc_disconnect(v);
	hostile_close(&h);
}

struct flipper {
	struct hostile *h;
	atomic_bool stop;
};

/* Flip what was the referenced bitmap's offset (byte 20) between a valid
 * value and one far outside the mapping, and the whole first page with it. */
static void *flip(void *arg)
{
	struct flipper *f = arg;
	uint32_t good = 0;
	memcpy(&good, f->h->area + 20, sizeof(good));
	while (!atomic_load(&f->stop)) {
		put32(f->h->area + 20, 0x7ffffff8u);
		put32(f->h->area + 20, good);
	}
	return NULL;
}

static void test_layout_flipping(void **state)
{
	(void)state;
	struct hostile h;
	hostile_open(&h);
	struct flipper f = { .h = &h };
	atomic_init(&f.stop, false);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, flip, &f), 0);
	for (int i = 0; i < 200; i++) {
		mc_client *x = mc_connect(srv.socket);
		if (!x)
			fail_msg("mc_connect while the area changes: %s", strerror(errno));
		stat_loop(x, 50);
		mc_disconnect(x);
	}
	atomic_store(&f.stop, true);
	pthread_join(t, NULL);
	assert_server_alive();
	hostile_close(&h);
}

static int group_setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	return server_start(&srv, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setup_tree),
		cmocka_unit_test(test_nslots_scribble),
		cmocka_unit_test(test_area_garbage),
		cmocka_unit_test(test_layout_flipping),
	};
	return cmocka_run_group_tests_name("hostile", tests, group_setup, group_teardown);
}
