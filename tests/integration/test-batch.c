/* test-batch.c - batches against a real server: the queued paths of a
 * batch whose path storage moves many times while it fills (long names,
 * renames carrying two paths, stats) reach the server intact and in
 * order; large batches of creates and unlinks from two clients, which
 * the server runs under one taking of the namespace lock per run of ops,
 * all succeed while another client's syncs are committed; a large
 * batch, sent as pipelined requests, keeps the order of its ops across
 * them and fails cleanly when the server dies while requests are out;
 * creates after their parent was renamed, replaced or removed and made
 * again within one batch land where their paths name; the directories a
 * batch changed (whose records a run of ops under one lock journals once)
 * come back from a kill -9 after mc_sync as they were. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

/* Path i of set s: /bp/ then a long name unique to (s, i). */
static void long_path(char *p, size_t n, char s, int i)
{
	char name[230];
	memset(name, s, sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(p, n, "/bp/%04d%s", i, name + 4);
}

static void test_paths_move(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	assert_int_equal(mc_mkdir(c, "/bp", 0755), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);

	/* 400 creates of 235-byte paths (about 94 KiB of paths: the storage
	 * moves several times), each third one renamed at once, each fifth
	 * one stat'ed: every op's paths must be the ones queued. */
	enum { N = 400 };
	char p[256], q[256];
	struct stat st[N];
	int idx[N][3];
	for (int i = 0; i < N; i++) {
		long_path(p, sizeof(p), 'a', i);
		idx[i][0] = mc_batch_create(b, p, 0600 | (i & 7));
		idx[i][1] = idx[i][2] = -1;
		if (i % 3 == 0) {
			long_path(q, sizeof(q), 'b', i);
			idx[i][1] = mc_batch_rename(b, p, q);
		}
		if (i % 5 == 0)
			idx[i][2] = mc_batch_stat(b, i % 3 == 0 ? q : p, &st[i]);
		for (int k = 0; k < 3; k++)
			assert_true(k > 0 || idx[i][k] >= 0);
	}
	assert_int_equal(mc_batch_run(b), 0);
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 3; k++)
			if (idx[i][k] >= 0)
				assert_int_equal(mc_batch_error(b, (size_t)idx[i][k]), 0);
		struct stat sa, sb;
		long_path(p, sizeof(p), 'a', i);
		long_path(q, sizeof(q), 'b', i);
		int ra = mc_lstat(c, p, &sa), rb = mc_lstat(c, q, &sb);
		if (i % 3 == 0) {
			assert_int_equal(ra, -1);
			assert_int_equal(rb, 0);
			sa = sb;
		} else {
			assert_int_equal(ra, 0);
			assert_int_equal(rb, -1);
		}
		assert_int_equal(sa.st_mode, S_IFREG | 0600 | (i & 7));
		if (idx[i][2] >= 0)
			assert_int_equal(st[i].st_ino, sa.st_ino);
	}
	mc_batch_free(b);
	assert_int_equal(mc_rmtree(c, "/bp"), 0);
	mc_disconnect(c);
}

/* Four phases of N ops, each depending on the one before (the batch goes
 * out as two pipelined requests of two phases each): creates, renames of
 * what was created, stats of the new names, and creates of the old names
 * again with a duplicate and an unlink of a missing name. */
static void test_pipelined_order(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	enum { N = 100 };
	char p[64], q[64];
	static struct stat st[N];
	assert_int_equal(mc_mkdir(c, "/po", 0755), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	for (int i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "/po/a%d", i);
		assert_int_equal(mc_batch_create(b, p, 0600), i);
	}
	for (int i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "/po/a%d", i);
		snprintf(q, sizeof(q), "/po/b%d", i);
		assert_int_equal(mc_batch_rename(b, p, q), N + i);
	}
	for (int i = 0; i < N; i++) {
		snprintf(q, sizeof(q), "/po/b%d", i);
		assert_int_equal(mc_batch_stat(b, q, &st[i]), 2 * N + i);
	}
	for (int i = 0; i < N - 2; i++) {
		snprintf(p, sizeof(p), "/po/a%d", i);
		assert_int_equal(mc_batch_create(b, p, 0644), 3 * N + i);
	}
	assert_int_equal(mc_batch_create(b, "/po/a0", 0644), 4 * N - 2);   /* EEXIST */
	assert_int_equal(mc_batch_unlink(b, "/po/a99"), 4 * N - 1);         /* ENOENT */
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), 4 * N);
	for (int i = 0; i < 4 * N - 2; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	assert_int_equal(mc_batch_error(b, 4 * N - 2), EEXIST);
	assert_int_equal(mc_batch_error(b, 4 * N - 1), ENOENT);
	for (int i = 0; i < N; i++)
		assert_int_equal(st[i].st_mode, S_IFREG | 0600);
	mc_batch_free(b);
	assert_int_equal(mc_rmtree(c, "/po"), 0);
	mc_disconnect(c);
}

/* Within one batch (runs of creates and removals under one taking of
 * the lock, whose walks start at the directory the last path's prefix led
 * to), the parent renamed away, another directory renamed onto its name,
 * the parent removed and its name made again after another directory took
 * its slot: every create lands where its path names, or fails as it would
 * on tmpfs. The slashed paths leave the server's memo of "/pm/d/" as the
 * creates made it. */
static void test_parent_changes_mid_batch(void **state)
{
	(void)state;
	mc_client *c = harness_client(&srv);
	static const struct {
		char op;          /* m: mkdir, c: create, u: unlink, r: rmdir, n: rename */
		const char *path, *to;
		int err;
	} ops[] = {
		{ 'm', "/pm", NULL, 0 },        { 'm', "/pm/d", NULL, 0 },
		{ 'c', "/pm/d/f1", NULL, 0 },   { 'c', "/pm/d/f2", NULL, 0 },
		{ 'n', "/pm/d/", "/pm/e/", 0 }, { 'c', "/pm/d/f3", NULL, ENOENT },
		{ 'c', "/pm/e/f3", NULL, 0 },   { 'm', "/pm/x", NULL, 0 },
		{ 'c', "/pm/d/f4", NULL, ENOENT }, { 'n', "/pm/x/", "/pm/d/", 0 },
		{ 'c', "/pm/d/f4", NULL, 0 },   { 'u', "/pm/d/f4", NULL, 0 },
		{ 'r', "/pm/d/", NULL, 0 },     { 'm', "/pm/z/", NULL, 0 },
		{ 'c', "/pm/d/f5", NULL, ENOENT }, { 'm', "/pm/d/", NULL, 0 },
		{ 'c', "/pm/d/f6", NULL, 0 },   { 'c', "/pm/e/f7", NULL, 0 },
		{ 'c', "/pm/d/f8", NULL, 0 },
	};
	size_t n = sizeof(ops) / sizeof(ops[0]);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		int rc = ops[i].op == 'm' ? mc_batch_mkdir(b, ops[i].path, 0755)
		       : ops[i].op == 'c' ? mc_batch_create(b, ops[i].path, 0644)
		       : ops[i].op == 'u' ? mc_batch_unlink(b, ops[i].path)
		       : ops[i].op == 'r' ? mc_batch_rmdir(b, ops[i].path)
		       : mc_batch_rename(b, ops[i].path, ops[i].to);
		assert_int_equal(rc, (int)i);
	}
	assert_int_equal(mc_batch_run(b), 0);
	for (size_t i = 0; i < n; i++) {
		if (mc_batch_error(b, i) != ops[i].err)
			fail_msg("op %zu (%c %s): errno %d, want %d", i, ops[i].op, ops[i].path,
			         mc_batch_error(b, i), ops[i].err);
	}
	mc_batch_free(b);
	static const char *const there[] = { "/pm/e/f1", "/pm/e/f2", "/pm/e/f3", "/pm/e/f7",
	                                     "/pm/d/f6", "/pm/d/f8" };
	static const char *const gone[] = { "/pm/d/f1", "/pm/d/f3", "/pm/d/f4", "/pm/d/f5",
	                                    "/pm/e/f6", "/pm/e/f8", "/pm/z/f6", "/pm/z/f8",
	                                    "/pm/x" };
	struct stat st;
	for (size_t i = 0; i < sizeof(there) / sizeof(there[0]); i++)
		if (mc_stat(c, there[i], &st) != 0)
			fail_msg("%s: errno %d", there[i], errno);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		errno = 0;
		if (mc_stat(c, gone[i], &st) != -1 || errno != ENOENT)
			fail_msg("%s: there, or errno %d", gone[i], errno);
	}
	assert_int_equal(mc_stat(c, "/pm/d", &st), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(mc_rmtree(c, "/pm"), 0);
	mc_disconnect(c);
}

struct killer {
	struct mc_server *s;
	unsigned ms;
};

static void *killer_main(void *arg)
{
	struct killer *k = arg;
	usleep(k->ms * 1000u);
	kill(k->s->pid, SIGKILL);
	return NULL;
}

/* The server is killed while a client runs large batches (several
 * requests out at once): mc_batch_run fails with ENOTCONN, it does not
 * hang, and every later call fails the same way. */
static void test_server_dies_mid_batch(void **state)
{
	(void)state;
	struct mc_server s;
	memset(&s, 0, sizeof(s));
	assert_int_equal(server_start(&s, NULL), 0);
	mc_client *c = mc_connect(s.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/kd", 0755), 0);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	struct killer k = { &s, 30 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, killer_main, &k), 0);
	char p[64];
	int rc = 0;
	for (unsigned round = 0; rc == 0 && round < 100000; round++) {
		for (int i = 0; i < 4000; i++) {
			snprintf(p, sizeof(p), "/kd/f%d", i);
			if (round % 2 == 0)
				assert_true(mc_batch_create(b, p, 0644) >= 0);
			else
				assert_true(mc_batch_unlink(b, p) >= 0);
		}
		rc = mc_batch_run(b);
		for (size_t i = 0; rc == 0 && i < mc_batch_count(b); i++)
			assert_int_equal(mc_batch_error(b, i), 0);
	}
	assert_int_equal(rc, -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(mc_batch_count(b), 0);
	assert_int_equal(mc_batch_create(b, "/kd/late", 0644), 0);
	assert_int_equal(mc_batch_run(b), -1);
	assert_int_equal(errno, ENOTCONN);
	pthread_join(th, NULL);
	mc_batch_free(b);
	mc_disconnect(c);
	server_stop(&s, SIGKILL);
	server_cleanup(&s);
}

/* Directory d's stat, which must succeed. */
static struct stat dir_stat(mc_client *c, const char *d)
{
	struct stat st;
	EXPECT_OK(mc_stat(c, d, &st));
	return st;
}

/* A batch of creates, mkdirs and unlinks in two directories, switching
 * between them every few ops, runs under one taking of the lock per run of
 * ops, each journaling its directory's record once (ns_name.c): after
 * mc_sync and a kill -9, each directory's entry count, links and times
 * are what they were, and the server's fsck is clean. */
static void test_dir_records_survive_crash(void **state)
{
	(void)state;
	struct mc_server s;
	memset(&s, 0, sizeof(s));
	assert_int_equal(server_start(&s, NULL), 0);
	mc_client *c = harness_client(&s);
	static const char *const dirs[2] = { "/cr-a", "/cr-b" };
	EXPECT_OK(mc_mkdir(c, dirs[0], 0755));
	EXPECT_OK(mc_mkdir(c, dirs[1], 0755));
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[64];
	for (int i = 0; i < 600; i++) {
		const char *d = dirs[(i / 7) % 2];
		snprintf(p, sizeof(p), "%s/f%d", d, i);
		if (i % 50 == 3)
			assert_true(mc_batch_mkdir(b, p, 0755) >= 0);
		else
			assert_true(mc_batch_create(b, p, 0644) >= 0);
	}
	for (int i = 0; i < 200; i++) {
		if (i % 50 == 3)
			continue;
		snprintf(p, sizeof(p), "%s/f%d", dirs[(i / 7) % 2], i);
		assert_true(mc_batch_unlink(b, p) >= 0);
	}
	/* The last turns of the two directories in the middle of a run. */
	for (int i = 0; i < 6; i++) {
		snprintf(p, sizeof(p), "%s/t%d", dirs[i < 3], i);
		assert_true(mc_batch_create(b, p, 0644) >= 0);
	}
	EXPECT_OK(mc_batch_run(b));
	for (size_t i = 0; i < mc_batch_count(b); i++)
		assert_int_equal(mc_batch_error(b, i), 0);
	mc_batch_free(b);
	EXPECT_OK(mc_sync(c));
	struct stat before[2] = { dir_stat(c, dirs[0]), dir_stat(c, dirs[1]) };
	/* st_size = 40 + 20 * entries (mc_shm.h, as tmpfs) */
	assert_int_equal(before[0].st_size + before[1].st_size, 2 * 40 + 20 * (600 - 200 + 4 + 6));
	assert_int_equal(before[0].st_nlink + before[1].st_nlink, 2 + 2 + 12);
	mc_disconnect(c);
	assert_int_equal(server_stop(&s, SIGKILL), 128 + SIGKILL);
	assert_int_equal(server_start(&s, NULL), 0);
	c = harness_client(&s);
	for (int k = 0; k < 2; k++) {
		struct stat st = dir_stat(c, dirs[k]);
		assert_int_equal(st.st_size, before[k].st_size);
		assert_int_equal(st.st_nlink, before[k].st_nlink);
		assert_int_equal(st.st_mtim.tv_sec, before[k].st_mtim.tv_sec);
		assert_int_equal(st.st_mtim.tv_nsec, before[k].st_mtim.tv_nsec);
		assert_int_equal(st.st_ctim.tv_nsec, before[k].st_ctim.tv_nsec);
	}
	char *js = mc_server_fsck(c);
	assert_non_null(js);
	assert_non_null(strstr(js, "\"clean\": true"));
	free(js);
	mc_disconnect(c);
	assert_int_equal(server_finish(&s), 0);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A child streaming batches of 2000 creates, then 2000 unlinks, of its own
 * files for ms milliseconds; exits 0 when every op succeeded. */
static void stream_child(int id, long ms)
{
	mc_client *c = mc_connect(srv.socket);
	char dir[32], p[64];
	if (!c)
		_exit(2);
	snprintf(dir, sizeof(dir), "/st%d", id);
	if (mc_mkdir(c, dir, 0755) < 0)
		_exit(3);
	mc_batch *b = mc_batch_new(c);
	double end = now_ms() + (double)ms;
	for (unsigned round = 0; now_ms() < end; round++) {
		for (int k = 0; k < 2000; k++) {
			snprintf(p, sizeof(p), "%s/f%d", dir, k);
			if (round % 2 == 0)
				mc_batch_create(b, p, 0644);
			else
				mc_batch_unlink(b, p);
		}
		if (mc_batch_run(b) < 0 || mc_batch_count(b) != 2000) {
			fprintf(stderr, "stream %d: mc_batch_run: %s\n", id, strerror(errno));
			_exit(4);
		}
		for (size_t k = 0; k < 2000; k++)
			if (mc_batch_error(b, k)) {
				fprintf(stderr, "stream %d: round %u op %zu: %s\n", id, round, k,
				        strerror(mc_batch_error(b, k)));
				_exit(5);
			}
	}
	mc_batch_free(b);
	mc_disconnect(c);
	_exit(0);
}

static void test_streams_let_committer_in(void **state)
{
	(void)state;
	enum { RUN_MS = 1500 };
	mc_client *c = harness_client(&srv);
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0)
			stream_child(i, RUN_MS);
	}
	assert_int_equal(mc_mkdir(c, "/stsync", 0755), 0);
	uint64_t c0 = harness_stat_u64(c, "commits", "count");
	double worst = 0, end = now_ms() + RUN_MS - 200;
	unsigned syncs = 0;
	while (now_ms() < end) {
		/* A change of its own, then wait for it to be durable. */
		assert_int_equal(mc_chmod(c, "/stsync", syncs % 2 ? 0750 : 0700), 0);
		double t = now_ms();
		assert_int_equal(mc_sync(c), 0);
		t = now_ms() - t;
		if (t > worst)
			worst = t;
		syncs++;
		usleep(20000);
	}
	for (int i = 0; i < 2; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			print_message("# stream %d: status 0x%x (stream_child's exit codes)\n", i, st);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	uint64_t commits = harness_stat_u64(c, "commits", "count") - c0;
	print_message("# %u syncs, slowest %.1f ms; %llu commits\n", syncs, worst,
	              (unsigned long long)commits);
	/* Commits went on while the streams ran: each sync saw its change
	 * committed (the slowest is printed: on a loaded machine a commit's
	 * fsync alone may take hundreds of milliseconds). */
	assert_true(syncs >= 2);
	assert_true(commits >= syncs);
	mc_disconnect(c);
}

/* The streams fill the journal faster than a loaded machine's fsyncs may
 * drain it; mutations then wait for room (--journal-wait-ms) and, past the
 * wait, are refused with ENOSPC. That refusal is test-backpressure's
 * subject; here the wait is made long enough that a slow disk delays the
 * streams instead of failing them, and what is checked is that the syncs
 * still get their commits in. */
static int group_setup(void **state)
{
	(void)state;
	static const char *const args[] = { "--journal-wait-ms", "30000", NULL };
	return server_start(&srv, args) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_move),
		cmocka_unit_test(test_pipelined_order),
		cmocka_unit_test(test_parent_changes_mid_batch),
		cmocka_unit_test(test_server_dies_mid_batch),
		cmocka_unit_test(test_dir_records_survive_crash),
		cmocka_unit_test(test_streams_let_committer_in),
	};
	return cmocka_run_group_tests_name("batch", tests, group_setup, group_teardown);
}
