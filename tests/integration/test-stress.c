/* test-stress.c - the shared-memory read path under concurrent change.
 *
 * Writer processes create, rename (files, symlinks and directories, across
 * directories), unlink, chmod and rmdir continuously through RPC while
 * reader threads stat, readlink and list through the client's shared-memory
 * path. Every answer a reader gets must be one that was true at some
 * instant; the names make torn reads detectable:
 *   sN  is always a symlink whose target is "sN" (size 2 or 3),
 *   fN  is always a regular file whose mode has N % 8 in its "other" bits,
 *   dN  is always a directory (nlink >= 2, size 40 + 20 * entries),
 * and a listing never shows a name twice or a name with the wrong d_type.
 * Then the same checks run with walk bounds so small that most lookups fall
 * back to RPC, and the answers must still be right; and once more against a
 * server whose shrinker evicts every clean entry all the time (watermarks at
 * 1%), so that slots are freed and reused under the readers, while a
 * churner fills and empties whole pages so that they change slot type.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#define NDIRS 3
#define NNAMES 12
#define NREADERS 2
#define NWRITERS 2

static struct mc_server srv;
static double seconds = 3.0;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void writer(int id)
{
	mc_client *c = mc_connect(srv.socket);
	if (!c)
		_exit(10);
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	char a[64], b[64], t[16];
	double end = now_s() + seconds;
	while (now_s() < end) {
		int da = (int)(rnd(&s) % NDIRS), db = (int)(rnd(&s) % NDIRS);
		int n = (int)(rnd(&s) % NNAMES), m = (int)(rnd(&s) % NNAMES);
		switch (rnd(&s) % 11) {
		case 0:
			snprintf(a, sizeof(a), "/d%d/s%d", da, n);
			snprintf(t, sizeof(t), "s%d", n);
			mc_symlink(c, t, a);
			break;
		case 1:
			snprintf(a, sizeof(a), "/d%d/s%d", da, n);
			mc_unlink(c, a);
			break;
		case 2:
			snprintf(a, sizeof(a), "/d%d/s%d", da, n);
			snprintf(b, sizeof(b), "/d%d/s%d", db, n);
			mc_rename(c, a, b);
			break;
		case 3: {
			snprintf(a, sizeof(a), "/d%d/f%d", da, n);
			int fd = mc_open(c, a, O_CREAT | O_EXCL | O_WRONLY, 0640 | (n % 8));
			if (fd >= 0)
				mc_close(c, fd);
			break;
		}
		case 4:
			snprintf(a, sizeof(a), "/d%d/f%d", da, n);
			mc_chmod(c, a, (mode_t)((rnd(&s) % 8) << 6 | (rnd(&s) % 8) << 3 | (n % 8)));
			break;
		case 5:
			snprintf(a, sizeof(a), "/d%d/f%d", da, n);
			mc_unlink(c, a);
			break;
		case 6:
			snprintf(a, sizeof(a), "/d%d/f%d", da, n);
			snprintf(b, sizeof(b), "/d%d/f%d", db, n);
			mc_rename(c, a, b);
			break;
		case 7:
			snprintf(a, sizeof(a), "/d%d/d%d", da, n);
			mc_mkdir(c, a, 0755);
			break;
		case 8:
			snprintf(a, sizeof(a), "/d%d/d%d", da, n);
			mc_rmdir(c, a);
			break;
		case 9:
			snprintf(a, sizeof(a), "/d%d/d%d", da, n);
			snprintf(b, sizeof(b), "/d%d/d%d", db, n);
			mc_rename(c, a, b);
			break;
		case 10:
			snprintf(a, sizeof(a), "/d%d/d%d/s%d", da, n, m);
			snprintf(t, sizeof(t), "s%d", m);
			if (mc_symlink(c, t, a) < 0 && errno == EEXIST)
				mc_unlink(c, a);
			break;
		}
	}
	mc_disconnect(c);
	_exit(0);
}

struct reader {
	pthread_t th;
	int id;
	uint64_t ops, found, bad;
	char why[256];
};

static void fail_reader(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail_reader(struct reader *r, const char *fmt, ...)
{
	if (r->bad++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->why, sizeof(r->why), fmt, ap);
		va_end(ap);
	}
}

/* The checks on one leaf name's stat result. */
static void check_leaf(struct reader *r, mc_client *c, const char *path, const char *leaf,
                       int rc, const struct stat *st)
{
	if (rc < 0) {
		if (errno != ENOENT)
			fail_reader(r, "%s: %s", path, strerror(errno));
		return;
	}
	r->found++;
	int n = atoi(leaf + 1);
	switch (leaf[0]) {
	case 's': {
		if (!S_ISLNK(st->st_mode) || st->st_size != (off_t)strlen(leaf))
			fail_reader(r, "%s: mode %o size %lld", path, st->st_mode, (long long)st->st_size);
		char buf[64];
		ssize_t k = mc_readlink(c, path, buf, sizeof(buf));
		if (k >= 0 && (k != (ssize_t)strlen(leaf) || memcmp(buf, leaf, (size_t)k) != 0))
			fail_reader(r, "%s: target '%.*s'", path, (int)k, buf);
		else if (k < 0 && errno != ENOENT)
			fail_reader(r, "readlink %s: %s", path, strerror(errno));
		break;
	}
	case 'f':
		if (!S_ISREG(st->st_mode) || (int)(st->st_mode & 7) != n % 8)
			fail_reader(r, "%s: mode %o", path, st->st_mode);
		break;
	case 'd':
		if (!S_ISDIR(st->st_mode) || st->st_nlink < 2 || st->st_size < 40 ||
		    (st->st_size - 40) % 20 != 0)
			fail_reader(r, "%s: mode %o nlink %lu size %lld", path, st->st_mode,
			            (unsigned long)st->st_nlink, (long long)st->st_size);
		break;
	}
}

static void check_listing(struct reader *r, mc_client *c, const char *dir)
{
	MC_DIR *d = mc_opendir(c, dir);
	if (!d) {
		if (errno != ENOENT)
			fail_reader(r, "opendir %s: %s", dir, strerror(errno));
		return;
	}
	char seen[3][NNAMES] = { { 0 } };
	struct dirent *e;
	errno = 0;
	while ((e = mc_readdir(d))) {
		const char *p = strchr("sfd", e->d_name[0]);
		int n = atoi(e->d_name + 1);
		unsigned char want = e->d_name[0] == 's' ? DT_LNK : e->d_name[0] == 'f' ? DT_REG : DT_DIR;
		if (!p || n < 0 || n >= NNAMES || e->d_type != want || e->d_ino == 0) {
			fail_reader(r, "%s: entry %s type %d", dir, e->d_name, e->d_type);
			continue;
		}
		if (seen[p - "sfd"][n]++)
			fail_reader(r, "%s: %s listed twice", dir, e->d_name);
	}
	if (errno)
		fail_reader(r, "readdir %s: %s", dir, strerror(errno));
	mc_closedir(d);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	mc_client *c = mc_connect(srv.socket);
	if (!c) {
		fail_reader(r, "connect: %s", strerror(errno));
		return NULL;
	}
	uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)(r->id + 7);
	char path[96], leaf[16];
	double end = now_s() + seconds;
	while (now_s() < end) {
		int da = (int)(rnd(&s) % NDIRS), n = (int)(rnd(&s) % NNAMES);
		unsigned k = (unsigned)(rnd(&s) % 8);
		struct stat st;
		if (k == 7) {
			snprintf(path, sizeof(path), "/d%d", da);
			check_listing(r, c, path);
		} else if (k == 6) {
			int m = (int)(rnd(&s) % NNAMES);
			snprintf(leaf, sizeof(leaf), "s%d", m);
			snprintf(path, sizeof(path), "/d%d/d%d/%s", da, n, leaf);
			int rc = mc_lstat(c, path, &st);
			if (rc < 0 && errno == ENOENT)
				continue;
			check_leaf(r, c, path, leaf, rc, &st);
		} else {
			snprintf(leaf, sizeof(leaf), "%c%d", "sfd"[k % 3], n);
			snprintf(path, sizeof(path), "/d%d/%s", da, leaf);
			check_leaf(r, c, path, leaf, mc_lstat(c, path, &st), &st);
		}
		r->ops++;
	}
	mc_disconnect(c);
	return NULL;
}

/* A number from the server's /stats JSON: the first "key": value after
 * the object key `section`. */
static uint64_t stat_of(const char *json, const char *section, const char *key)
{
	uint64_t v = 0;
	harness_json_u64(json, section, key, &v);
	return v;
}

static void run_round(const char *label)
{
	pid_t w[NWRITERS];
	for (int i = 0; i < NWRITERS; i++) {
		w[i] = fork();
		assert_true(w[i] >= 0);
		if (w[i] == 0)
			writer(i);
	}
	struct reader rd[NREADERS] = { 0 };
	for (int i = 0; i < NREADERS; i++) {
		rd[i].id = i;
		assert_int_equal(pthread_create(&rd[i].th, NULL, reader_main, &rd[i]), 0);
	}
	uint64_t ops = 0, found = 0, bad = 0;
	for (int i = 0; i < NREADERS; i++) {
		pthread_join(rd[i].th, NULL);
		if (rd[i].bad)
			print_message("# %s reader %d: %llu bad answers, first: %s\n", label, i,
			              (unsigned long long)rd[i].bad, rd[i].why);
		bad += rd[i].bad;
		ops += rd[i].ops;
		found += rd[i].found;
	}
	/* Reap the writers before any assertion can leave this function. */
	int wst[NWRITERS];
	for (int i = 0; i < NWRITERS; i++)
		if (waitpid(w[i], &wst[i], 0) != w[i])
			wst[i] = -1;
	assert_int_equal(bad, 0);
	for (int i = 0; i < NWRITERS; i++)
		assert_true(wst[i] != -1 && WIFEXITED(wst[i]) && WEXITSTATUS(wst[i]) == 0);
	print_message("# %s: %llu reader ops, %llu found\n", label, (unsigned long long)ops,
	              (unsigned long long)found);
	assert_true(ops > 1000);
	assert_true(found > 0);
}

static void setup_tree(void)
{
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char p[32];
	for (int i = 0; i < NDIRS; i++) {
		snprintf(p, sizeof(p), "/d%d", i);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
	}
	mc_disconnect(c);
}

static void test_shared_path_under_change(void **state)
{
	(void)state;
	run_round("shared-memory path");
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char *js = mc_server_stats(c);
	assert_non_null(js);
	uint64_t hits = stat_of(js, "\"readpath\"", "hits");
	uint64_t retries = stat_of(js, "\"readpath\"", "retries");
	uint64_t misses = stat_of(js, "\"readpath\"", "misses");
	uint64_t fallbacks = stat_of(js, "\"readpath\"", "fallbacks");
	print_message("# read path: %llu hits, %llu misses, %llu retries, %llu fallbacks\n",
	              (unsigned long long)hits, (unsigned long long)misses,
	              (unsigned long long)retries, (unsigned long long)fallbacks);
	/* Most reads were answered from shared memory. */
	assert_true(hits > 1000);
	free(js);
	mc_disconnect(c);
}

static void test_tiny_bounds_still_correct(void **state)
{
	(void)state;
	/* Chains of one, two directories deep, no restarts, no symlinks: most
	 * walks fall back to RPC; the answers must be just as right. */
	setenv("MCACHE_WALK_LIMITS", "1,2,0,0", 1);
	run_round("tiny bounds");
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char *js = mc_server_stats(c);
	assert_non_null(js);
	uint64_t fallbacks = stat_of(js, "\"readpath\"", "fallbacks");
	print_message("# fallbacks so far: %llu\n", (unsigned long long)fallbacks);
	assert_true(fallbacks > 0);
	free(js);
	mc_disconnect(c);
	unsetenv("MCACHE_WALK_LIMITS");
}

/* ".." after a directory that is removed and whose slot is reused for
 * another directory meanwhile: "/a/b/../c" must never resolve, since no
 * /a/c ever exists (the writer makes /a/b, removes both, then makes /z/c,
 * which takes the freed slots). */
struct dotdot_reader {
	pthread_t th;
	_Atomic int *stop;
	uint64_t stats, wrong, other;
};

static void *dotdot_main(void *arg)
{
	struct dotdot_reader *r = arg;
	mc_client *c = mc_connect(srv.socket);
	if (!c) {
		r->other++;
		return NULL;
	}
	while (!atomic_load(r->stop)) {
		struct stat st;
		int rc = mc_stat(c, "/x/a/b/../c", &st);
		r->stats++;
		if (rc == 0)
			r->wrong++;
		else if (errno != ENOENT)
			r->other++;
	}
	mc_disconnect(c);
	return NULL;
}

static void test_dotdot_into_reused_slot(void **state)
{
	(void)state;
	mc_client *w = mc_connect(srv.socket);
	assert_non_null(w);
	assert_int_equal(mc_mkdir(w, "/x", 0755), 0);
	_Atomic int stop = 0;
	struct dotdot_reader rd[NREADERS];
	memset(rd, 0, sizeof(rd));
	for (int i = 0; i < NREADERS; i++) {
		rd[i].stop = &stop;
		assert_int_equal(pthread_create(&rd[i].th, NULL, dotdot_main, &rd[i]), 0);
	}
	uint64_t iters = 0;
	double end = now_s() + seconds;
	int bad = 0;
	while (now_s() < end && !bad) {
		bad |= mc_mkdir(w, "/x/a", 0755) | mc_mkdir(w, "/x/a/b", 0755);
		bad |= mc_rmdir(w, "/x/a/b") | mc_rmdir(w, "/x/a");
		bad |= mc_mkdir(w, "/x/z", 0755) | mc_mkdir(w, "/x/z/c", 0755);
		bad |= mc_rmdir(w, "/x/z/c") | mc_rmdir(w, "/x/z");
		iters++;
	}
	atomic_store(&stop, 1);
	uint64_t stats = 0, wrong = 0, other = 0;
	for (int i = 0; i < NREADERS; i++) {
		pthread_join(rd[i].th, NULL);
		stats += rd[i].stats;
		wrong += rd[i].wrong;
		other += rd[i].other;
	}
	print_message("# dotdot: %llu writer rounds, %llu stats, %llu wrong, %llu other errors\n",
	              (unsigned long long)iters, (unsigned long long)stats,
	              (unsigned long long)wrong, (unsigned long long)other);
	assert_int_equal(bad, 0);
	assert_int_equal(wrong, 0);
	assert_int_equal(other, 0);
	/* The race was run, not a rate: readers spinning on every CPU leave
	 * the writer 60-800 rounds in the time, by load and placement. */
	assert_true(iters > 20);
	mc_disconnect(w);
}

/* Fill whole pages with long names and symlink targets, then empty them,
 * over and over: with eviction running, pages go back to the pool and come
 * back as pages of another slot type while the readers walk. */
static void page_churner(void)
{
	mc_client *c = mc_connect(srv.socket);
	if (!c)
		_exit(10);
	static char target[300];
	memset(target, 'z', sizeof(target) - 1);
	char p[128];
	double end = now_s() + seconds;
	for (unsigned round = 0; now_s() < end; round++) {
		snprintf(p, sizeof(p), "/churn%u", round);
		if (mc_mkdir(c, p, 0755) < 0)
			_exit(11);
		for (int i = 0; i < 1500; i++) {
			snprintf(p, sizeof(p), "/churn%u/%s-%04d", round,
			         "a-name-long-enough-to-live-in-a-blob-of-its-own", i);
			if (i % 3 == 0) {
				if (mc_symlink(c, target, p) < 0)
					_exit(12);
			} else {
				int fd = mc_open(c, p, O_CREAT | O_EXCL | O_WRONLY, 0600);
				if (fd < 0)
					_exit(13);
				mc_close(c, fd);
			}
		}
		snprintf(p, sizeof(p), "/churn%u", round);
		if (mc_rmtree(c, p) < 0)
			_exit(14);
	}
	mc_disconnect(c);
	_exit(0);
}

static void test_eviction_under_readers(void **state)
{
	(void)state;
	/* A server whose watermarks lie below the segment's fixed metadata:
	 * its shrinker runs without pause, evicting whatever is clean. */
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	server_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
	const char *args[] = { "--cache-size", "2M", "--cache-high", "1", "--cache-low", "1",
	                       "--commit-interval-ms", "1", NULL };
	assert_int_equal(server_start(&srv, args), 0);
	setup_tree();
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	char *js = mc_server_stats(c);
	assert_non_null(js);
	uint64_t before = stat_of(js, "\"cache\"", "evicted");
	uint64_t returned0 = stat_of(js, "\"shm\"", "pages_returned");
	free(js);
	pid_t churn = fork();
	assert_true(churn >= 0);
	if (churn == 0)
		page_churner();
	run_round("eviction");
	int cst = -1;
	assert_int_equal(waitpid(churn, &cst, 0), churn);
	assert_true(WIFEXITED(cst) && WEXITSTATUS(cst) == 0);
	js = mc_server_stats(c);
	assert_non_null(js);
	uint64_t evicted = stat_of(js, "\"cache\"", "evicted") - before;
	uint64_t reloads = stat_of(js, "\"cache\"", "reloads");
	uint64_t retries = stat_of(js, "\"readpath\"", "retries");
	uint64_t returned = stat_of(js, "\"shm\"", "pages_returned") - returned0;
	print_message("# eviction: %llu entries evicted during the round, %llu reloads, "
	              "%llu read retries, %llu pages given back to the pool\n",
	              (unsigned long long)evicted, (unsigned long long)reloads,
	              (unsigned long long)retries, (unsigned long long)returned);
	assert_true(evicted > 1000);
	assert_true(returned > 0);
	free(js);
	mc_disconnect(c);
}

/* Symlinks with long targets (blobs of several classes) read lock-free
 * while the shrinker evicts them and reloads bring them back, a writer
 * replaces them and the churner moves pages between slot types: a target
 * read is whole or the read is retried, never a freed blob's bytes. */
#define NLONG 16

static size_t long_target(int n, char *t)
{
	size_t len = 40 + 23 * (size_t)n;
	for (size_t i = 0; i < len; i++)
		t[i] = (char)('a' + (n + (int)i) % 26);
	return len;
}

static void long_writer(void)
{
	mc_client *c = mc_connect(srv.socket);
	if (!c)
		_exit(10);
	uint64_t s = 0x5851f42d4c957f2dull;
	char p[32], t[512];
	double end = now_s() + seconds;
	while (now_s() < end) {
		int n = (int)(rnd(&s) % NLONG);
		snprintf(p, sizeof(p), "/L/l%d", n);
		t[long_target(n, t)] = 0;
		if (mc_unlink(c, p) < 0 && errno != ENOENT)
			_exit(11);
		if (mc_symlink(c, t, p) < 0)
			_exit(12);
	}
	mc_disconnect(c);
	_exit(0);
}

static void *long_reader(void *arg)
{
	struct reader *r = arg;
	mc_client *c = mc_connect(srv.socket);
	if (!c) {
		fail_reader(r, "connect: %s", strerror(errno));
		return NULL;
	}
	uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)(r->id + 3);
	char p[32], want[512], buf[512];
	double end = now_s() + seconds;
	while (now_s() < end) {
		int n = (int)(rnd(&s) % NLONG);
		snprintf(p, sizeof(p), "/L/l%d", n);
		size_t len = long_target(n, want);
		struct stat st;
		if (mc_lstat(c, p, &st) == 0) {
			r->found++;
			if (!S_ISLNK(st.st_mode) || st.st_size != (off_t)len)
				fail_reader(r, "%s: mode %o size %lld", p, st.st_mode, (long long)st.st_size);
		} else if (errno != ENOENT) {
			fail_reader(r, "lstat %s: %s", p, strerror(errno));
		}
		ssize_t k = mc_readlink(c, p, buf, sizeof(buf));
		if (k >= 0 && (k != (ssize_t)len || memcmp(buf, want, len) != 0))
			fail_reader(r, "%s: target of %zd bytes '%.*s'", p, k, (int)(k < 40 ? k : 40), buf);
		else if (k < 0 && errno != ENOENT)
			fail_reader(r, "readlink %s: %s", p, strerror(errno));
		r->ops++;
	}
	mc_disconnect(c);
	return NULL;
}

static void test_long_targets_under_eviction(void **state)
{
	(void)state;
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	server_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
	const char *args[] = { "--cache-size", "2M", "--cache-high", "1", "--cache-low", "1",
	                       "--commit-interval-ms", "1", NULL };
	assert_int_equal(server_start(&srv, args), 0);
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/L", 0755), 0);
	char p[32], t[512];
	for (int n = 0; n < NLONG; n++) {
		snprintf(p, sizeof(p), "/L/l%d", n);
		t[long_target(n, t)] = 0;
		assert_int_equal(mc_symlink(c, t, p), 0);
	}
	pid_t w = fork(), churn;
	assert_true(w >= 0);
	if (w == 0)
		long_writer();
	churn = fork();
	assert_true(churn >= 0);
	if (churn == 0)
		page_churner();
	struct reader rd[NREADERS] = { 0 };
	for (int i = 0; i < NREADERS; i++) {
		rd[i].id = i;
		assert_int_equal(pthread_create(&rd[i].th, NULL, long_reader, &rd[i]), 0);
	}
	uint64_t ops = 0, found = 0, bad = 0;
	for (int i = 0; i < NREADERS; i++) {
		pthread_join(rd[i].th, NULL);
		if (rd[i].bad)
			print_message("# long targets reader %d: %llu bad answers, first: %s\n", i,
			              (unsigned long long)rd[i].bad, rd[i].why);
		bad += rd[i].bad;
		ops += rd[i].ops;
		found += rd[i].found;
	}
	int wst = -1, cst = -1;
	assert_int_equal(waitpid(w, &wst, 0), w);
	assert_int_equal(waitpid(churn, &cst, 0), churn);
	char *js = mc_server_stats(c);
	assert_non_null(js);
	print_message("# long targets: %llu reader ops, %llu found, %llu evicted\n",
	              (unsigned long long)ops, (unsigned long long)found,
	              (unsigned long long)stat_of(js, "\"cache\"", "evicted"));
	free(js);
	mc_disconnect(c);
	assert_int_equal(bad, 0);
	assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	assert_true(WIFEXITED(cst) && WEXITSTATUS(cst) == 0);
	assert_true(ops > 1000);
	assert_true(found > 0);
}

static int group_setup(void **state)
{
	(void)state;
	const char *s = getenv("MCACHE_STRESS_SECONDS");
	if (s)
		seconds = atof(s);
	if (server_start(&srv, NULL) < 0)
		return -1;
	setup_tree();
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
		cmocka_unit_test(test_shared_path_under_change),
		cmocka_unit_test(test_tiny_bounds_still_correct),
		cmocka_unit_test(test_dotdot_into_reused_slot),
		cmocka_unit_test(test_eviction_under_readers),
		cmocka_unit_test(test_long_targets_under_eviction),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
