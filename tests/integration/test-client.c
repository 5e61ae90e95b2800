/* test-client.c - the client object itself, against a real server: a bounded
 * mc_connect (full listen backlog, stopped server), one client shared by
 * many threads, responses that arrive in pieces, a call sleeping once for
 * its answer, and how long a client may answer from the segment of a
 * server that was killed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- mc_connect is bounded ---------------------------------------------- */

/* Run mc_connect(path) in a child with $MCACHE_CONNECT_TIMEOUT_MS=300. The
 * child exits 0 when it failed with ETIMEDOUT after 200..3000 ms; the parent
 * gives it 10 s before calling it hung. */
static void connect_times_out(const char *path)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("MCACHE_CONNECT_TIMEOUT_MS", "300", 1);
		uint64_t t0 = now_ms();
		mc_client *c = mc_connect(path);
		int e = errno;
		uint64_t dt = now_ms() - t0;
		if (c) {
			fprintf(stderr, "# connected to a server that does not accept\n");
			_exit(2);
		}
		if (e != ETIMEDOUT || dt < 200 || dt > 3000) {
			fprintf(stderr, "# mc_connect: %s after %llu ms\n", strerror(e),
			        (unsigned long long)dt);
			_exit(1);
		}
		_exit(0);
	}
	int status = 0;
	uint64_t t0 = now_ms();
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() - t0 > 10000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("mc_connect hung for 10 s (no timeout)");
		}
		usleep(10000);
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A listener that never accepts and whose backlog is full. */
static void test_connect_backlog_full(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof(path), "%s/full.sock", srv.dir);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(l >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 0), 0);
	int fill[16];
	int nfill = 0;
	for (; nfill < 16; nfill++) {
		fill[nfill] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		assert_true(fill[nfill] >= 0);
		if (connect(fill[nfill], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			assert_int_equal(errno, EAGAIN);
			close(fill[nfill]);
			break;
		}
	}
	assert_true(nfill < 16);
	connect_times_out(path);
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(l);
	unlink(path);
}

/* Wait until every thread of pid is stopped (state T in /proc): SIGSTOP
 * takes effect when each thread next enters the kernel, which a loaded
 * machine may delay past a connect. True when they all stopped in 5 s. */
static bool all_threads_stopped(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (int tries = 0; tries < 500; tries++, usleep(10000)) {
		DIR *d = opendir(dir);
		if (!d)
			return false;
		bool all = true;
		struct dirent *e;
		while (all && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[384], buf[512];
			snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
			FILE *f = fopen(path, "r");
			if (!f)
				continue;       /* the thread ended */
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = '\0';
			const char *rp = strrchr(buf, ')');
			all = rp && rp[1] == ' ' && rp[2] == 'T';
		}
		closedir(d);
		if (all)
			return true;
	}
	return false;
}

/* A stopped server: the kernel accepts the connection, nobody answers. */
static void test_connect_server_stopped(void **state)
{
	(void)state;
	assert_int_equal(kill(srv.pid, SIGSTOP), 0);
	bool stopped = all_threads_stopped(srv.pid);
	if (stopped)
		connect_times_out(srv.socket);
	assert_int_equal(kill(srv.pid, SIGCONT), 0);
	assert_true(stopped);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	struct stat st;
	assert_int_equal(mc_stat(c, "/", &st), 0);
	mc_disconnect(c);
}

/* ---- one client, many threads ------------------------------------------- */

#define THREADS 6
#define ROUNDS 150

struct worker {
	mc_client *c;
	int id;
	char msg[256];            /* first failure, empty when none */
};

#define CHECK(w, cond, ...)                                                   \
	do {                                                                      \
		if (!(cond)) {                                                        \
			snprintf((w)->msg, sizeof((w)->msg), __VA_ARGS__);                \
			return NULL;                                                      \
		}                                                                     \
	} while (0)

static void *work(void *arg)
{
	struct worker *w = arg;
	mc_client *c = w->c;
	char dir[64], a[96], b[96];
	struct stat st;
	snprintf(dir, sizeof(dir), "/mt/t%d", w->id);
	CHECK(w, mc_mkdir(c, dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(a, sizeof(a), "%s/f%d", dir, r);
		snprintf(b, sizeof(b), "%s/g%d", dir, r);
		int fd = mc_creat(c, a, 0640);
		CHECK(w, fd >= 0, "creat %s: %s", a, strerror(errno));
		struct stat fst;
		CHECK(w, mc_fstat(c, fd, &fst) == 0, "fstat %s: %s", a, strerror(errno));
		CHECK(w, S_ISREG(fst.st_mode) && (fst.st_mode & 0777) == 0640, "fstat %s mode %o",
		      a, (unsigned)fst.st_mode);
		for (int i = 0; i < 20; i++) {
			CHECK(w, mc_stat(c, a, &st) == 0, "stat %s: %s", a, strerror(errno));
			CHECK(w, st.st_ino == fst.st_ino, "stat %s: wrong inode", a);
			CHECK(w, mc_stat(c, b, &st) == -1 && errno == ENOENT, "stat %s: not ENOENT", b);
		}
		CHECK(w, mc_close(c, fd) == 0, "close %s: %s", a, strerror(errno));
		CHECK(w, mc_rename(c, a, b) == 0, "rename %s: %s", a, strerror(errno));
		CHECK(w, mc_stat(c, b, &st) == 0 && st.st_ino == fst.st_ino, "stat %s after rename", b);
		CHECK(w, mc_mkdir(c, b, 0755) == -1 && errno == EEXIST, "mkdir %s: not EEXIST", b);
		if (r % 10 == 0) {
			MC_DIR *d = mc_opendir(c, dir);
			CHECK(w, d != NULL, "opendir %s: %s", dir, strerror(errno));
			int n = 0;
			while (mc_readdir(d))
				n++;
			CHECK(w, mc_closedir(d) == 0, "closedir %s", dir);
			CHECK(w, n == r + 1, "readdir %s: %d entries, want %d", dir, n, r + 1);
			mc_batch *bt = mc_batch_new(c);
			CHECK(w, bt != NULL, "batch_new: %s", strerror(errno));
			struct stat bst;
			CHECK(w, mc_batch_stat(bt, b, &bst) == 0, "batch_stat");
			CHECK(w, mc_batch_mkdir(bt, b, 0755) == 1, "batch_mkdir");
			CHECK(w, mc_batch_run(bt) == 0, "batch_run: %s", strerror(errno));
			CHECK(w, mc_batch_error(bt, 0) == 0 && bst.st_ino == fst.st_ino, "batch stat");
			CHECK(w, mc_batch_error(bt, 1) == EEXIST, "batch mkdir: %d",
			      mc_batch_error(bt, 1));
			mc_batch_free(bt);
		}
	}
	return NULL;
}

static void test_threads_share_client(void **state)
{
	(void)state;
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/mt", 0755), 0);
	struct worker w[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .c = c, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS; i++)
		if (w[i].msg[0])
			fail_msg("thread %d: %s", i, w[i].msg);
	/* The client is still in step with the server. */
	char *js = mc_server_stats(c);
	assert_non_null(js);
	free(js);
	mc_disconnect(c);
}

/* ---- responses that arrive in pieces ------------------------------------ */

/* A relay between one client and the server that hands the server's bytes
 * on in pieces of 1 to 7 bytes (the descriptors of the hello with the
 * first), so the client sees headers split from bodies and bodies split
 * anywhere. */
struct relay {
	int lfd;                     /* listening */
	char path[600];
	_Atomic bool stop;
	bool slow;                   /* read a request 2 ms after it came, pass replies whole */
};

static void relay_send_pieces(int to, const uint8_t *p, size_t n, struct msghdr *first)
{
	static const size_t piece[] = { 1, 3, 2, 7, 1, 5, 4 };
	size_t k = 0;

	while (n > 0) {
		size_t m = piece[k++ % 7];
		if (m > n)
			m = n;
		struct iovec iov = { (void *)p, m };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (first) {
			mh.msg_control = first->msg_control;
			mh.msg_controllen = first->msg_controllen;
			first = NULL;
		}
		if (sendmsg(to, &mh, MSG_NOSIGNAL) != (ssize_t)m)
			return;
		p += m;
		n -= m;
		if (k % 8 == 0)
			usleep(50);     /* let the client's recv see a short piece */
	}
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	int cfd = accept(r->lfd, NULL, NULL);
	int sfd = harness_connect(srv.socket);
	static uint8_t buf[1 << 16];

	if (cfd < 0 || sfd < 0)
		goto out;
	while (!atomic_load(&r->stop)) {
		struct pollfd pf[2] = { { cfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		if (poll(pf, 2, 100) <= 0)
			continue;
		if (pf[0].revents) {
			if (r->slow)
				usleep(2000);   /* the caller is asleep by now */
			ssize_t n = read(cfd, buf, sizeof(buf));
			if (n <= 0 || write(sfd, buf, (size_t)n) != n)
				break;
		}
		if (pf[1].revents) {
			union {
				struct cmsghdr h;
				char b[CMSG_SPACE(4 * sizeof(int))];
			} ctl;
			struct iovec iov = { buf, sizeof(buf) };
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			                     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
			ssize_t n = recvmsg(sfd, &mh, 0);
			if (n <= 0)
				break;
			if (r->slow) {
				iov.iov_len = (size_t)n;
				if (sendmsg(cfd, &mh, MSG_NOSIGNAL) != n)
					break;
			} else {
				relay_send_pieces(cfd, buf, (size_t)n, mh.msg_controllen ? &mh : NULL);
			}
			/* Our copies of passed descriptors went on with the bytes. */
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
				if (cm->cmsg_type == SCM_RIGHTS)
					for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
						close(((int *)CMSG_DATA(cm))[i]);
		}
	}
out:
	if (cfd >= 0)
		close(cfd);
	if (sfd >= 0)
		close(sfd);
	return NULL;
}

/* Every call is answered whole when the responses come in pieces, small
 * ones and one larger than the client's receive buffer (a batch of 3000
 * stats), and the client stays in step with the server. */
/* Start a relay listening at srv.dir/relay.sock, in its thread. */
static void relay_start(struct relay *r, pthread_t *th)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(r->path, sizeof(r->path), "%s/relay.sock", srv.dir);
	assert_true(strlen(r->path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, r->path, strlen(r->path) + 1);
	r->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->lfd >= 0);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(r->lfd, 1), 0);
	assert_int_equal(pthread_create(th, NULL, relay_main, r), 0);
}

static void relay_stop(struct relay *r, pthread_t th)
{
	atomic_store(&r->stop, true);
	pthread_join(th, NULL);
	close(r->lfd);
	unlink(r->path);
}

static void test_responses_in_pieces(void **state)
{
	(void)state;
	struct relay r = { .lfd = -1 };
	pthread_t th;

	relay_start(&r, &th);
	mc_client *c = mc_connect(r.path);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/pieces", 0755), 0);
	EXPECT_ERR(mc_mkdir(c, "/pieces", 0755), EEXIST);
	assert_int_equal(mc_chmod(c, "/pieces", 0700), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	enum { N = 3000 };
	static struct stat st[N];
	/* A mutation first: the stats after it go to the server. */
	assert_int_equal(mc_batch_mkdir(b, "/pieces/sub", 0755), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(mc_batch_stat(b, i % 2 ? "/pieces" : "/nothing", &st[i]), i + 1);
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_error(b, 0), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(mc_batch_error(b, (size_t)i + 1), i % 2 ? 0 : ENOENT);
		if (i % 2)
			assert_int_equal(st[i].st_mode, S_IFDIR | 0700);
	}
	mc_batch_free(b);
	assert_int_equal(mc_rmdir(c, "/pieces/sub"), 0);
	char *js = mc_server_stats(c);
	assert_non_null(js);
	free(js);
	assert_int_equal(mc_rmdir(c, "/pieces"), 0);
	mc_disconnect(c);
	relay_stop(&r, th);
}

/* ---- a call sleeps once for its answer ---------------------------------- */

static long thread_nvcsw(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

/* A call waiting for its answer is not woken when the server reads its
 * request (a blocking recv is: the socket's write-space wakeup, only to
 * sleep again): through a relay that reads each request 2 ms after it
 * came, when the caller is surely asleep, a call costs the caller one
 * voluntary context switch, not two. */
static void test_one_sleep_per_call(void **state)
{
	(void)state;
	struct relay r = { .lfd = -1, .slow = true };
	pthread_t th;
	enum { CALLS = 50 };

	relay_start(&r, &th);
	mc_client *c = mc_connect(r.path);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/sleeps", 0755), 0);
	long before = thread_nvcsw();
	for (int i = 0; i < CALLS; i++)
		assert_int_equal(mc_chmod(c, "/sleeps", i % 2 ? 0700 : 0755), 0);
	long n = thread_nvcsw() - before;
	print_message("# %ld voluntary context switches in %d calls\n", n, CALLS);
	assert_true(n <= CALLS + CALLS / 4);
	assert_int_equal(mc_rmdir(c, "/sleeps"), 0);
	mc_disconnect(c);
	relay_stop(&r, th);
}

/* ---- bounded staleness after a crash ------------------------------------ */

/* kill -9 the server, start a new one on the same socket and data, remove
 * the file through it: the old client may answer the stale "exists" from
 * the dead segment for at most MC_LIVENESS_BOUND_MS, then it fails with
 * ENOTCONN (or answers correctly). */
static void test_stale_after_crash(void **state)
{
	(void)state;
	struct mc_server s = { 0 };
	assert_int_equal(server_start(&s, NULL), 0);
	mc_client *old = mc_connect(s.socket);
	assert_non_null(old);
	assert_int_equal(mc_mkdir(old, "/s", 0755), 0);
	int fd = mc_creat(old, "/s/f", 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_close(old, fd), 0);
	assert_int_equal(mc_sync(old), 0);
	struct stat st;
	for (int i = 0; i < 100; i++)
		assert_int_equal(mc_stat(old, "/s/f", &st), 0);

	assert_int_equal(server_stop(&s, SIGKILL), 128 + SIGKILL);
	uint64_t t_kill = now_ms();
	assert_int_equal(server_start(&s, NULL), 0);
	mc_client *nc = mc_connect(s.socket);
	assert_non_null(nc);
	assert_int_equal(mc_unlink(nc, "/s/f"), 0);
	assert_int_equal(mc_stat(nc, "/s/f", &st), -1);
	assert_int_equal(errno, ENOENT);

	uint64_t stale_last = 0;
	unsigned calls = 0, stale = 0;
	int final_errno = 0;
	while (now_ms() - t_kill < MC_LIVENESS_BOUND_MS + 2000) {
		calls++;
		if (mc_stat(old, "/s/f", &st) == 0) {
			stale++;
			stale_last = now_ms() - t_kill;
		} else {
			final_errno = errno;
			if (errno == ENOTCONN)
				break;
			assert_int_equal(errno, ENOENT);
		}
		usleep(1000);
	}
	print_message("# %u calls, %u stale answers, the last %llu ms after the kill\n", calls,
	              stale, (unsigned long long)stale_last);
	if (stale_last > MC_LIVENESS_BOUND_MS)
		fail_msg("stale answer %llu ms after the kill (bound %u ms)",
		         (unsigned long long)stale_last, (unsigned)MC_LIVENESS_BOUND_MS);
	assert_int_equal(final_errno, ENOTCONN);
	mc_disconnect(old);
	mc_disconnect(nc);
	assert_int_equal(server_stop(&s, SIGTERM), 0);
	server_cleanup(&s);
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
		cmocka_unit_test(test_connect_backlog_full),
		cmocka_unit_test(test_connect_server_stopped),
		cmocka_unit_test(test_threads_share_client),
		cmocka_unit_test(test_responses_in_pieces),
		cmocka_unit_test(test_one_sleep_per_call),
		cmocka_unit_test(test_stale_after_crash),
	};
	return cmocka_run_group_tests_name("client", tests, group_setup, group_teardown);
}
