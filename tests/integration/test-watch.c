/* test-watch.c - watches (mc_watch_*, OP_WATCH) against a real mcached,
 * and mcachefs mounts that let their kernel cache because of them.
 *
 * Protocol cases (public API only): a library client's change waits for
 * every watch's acknowledgement and the events name what it made stale; a
 * mount's own (tagged) changes neither reach its watch nor wait for
 * others; a watch that stops acknowledging is dropped within the bound and
 * the change is answered; unprivileged peers are refused; a change whose
 * events pass the largest frame comes in parts.
 *
 * Mount cases ($MCACHEFS; skipped without /dev/fuse, fusermount3 or
 * root): library renames, unlinks, chmods, truncates and creates in a
 * directory the mount has cached (names, attributes, its listing) are seen
 * through the mount right after
 * each call returns, many times over; two mounts changing one directory at
 * once finish in bounded time; a mount whose mcachefs is stopped still
 * answers stat from the kernel's cache (it caches by default), library
 * changes meanwhile return within the bound, and once it runs again it
 * shows them (the mount fell back to timeouts of 0). */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* ---- protocol ---------------------------------------------------------- */

struct seen {
	char lines[64][300];
	size_t n;
};

static void collect(void *arg, const struct mc_watch_event *ev)
{
	struct seen *s = arg;
	if (s->n < 64)
		snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s %llu%s%.*s",
		         ev->kind == MC_WATCH_ATTR ? "attr" : "entry", (unsigned long long)ev->ino,
		         ev->namelen ? " " : "", (int)ev->namelen, ev->name ? ev->name : "");
}

static bool seen_has(const struct seen *s, const char *line)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->lines[i], line))
			return true;
	return false;
}

/* Read batches until one comes (at most 5 s): its sequence. */
static uint64_t read_batch(mc_watch *w, struct seen *s)
{
	uint64_t seq = 0, t0 = now_ms();
	while (now_ms() - t0 < 5000) {
		int n = mc_watch_read(w, 100, collect, s, &seq);
		assert_true(n >= 0);
		if (n > 0)
			return seq;
	}
	fail_msg("no events within 5 s");
	return 0;
}

struct bg_call {
	mc_client *c;
	const char *path;
	int rc, err;
	_Atomic bool done;
};

static void *bg_mkdir(void *arg)
{
	struct bg_call *b = arg;
	b->rc = mc_mkdir(b->c, b->path, 0755);
	b->err = errno;
	atomic_store(&b->done, true);
	return NULL;
}

/* A library client's change is answered once the watch acknowledged. */
static void test_library_change_waits(void **state)
{
	(void)state;
	mc_watch *w = mc_watch_open(harness_srv.socket);
	assert_non_null(w);
	assert_true(mc_watch_id(w) > 0);
	struct bg_call b = { .c = harness_client(&harness_srv), .path = "/waits" };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, bg_mkdir, &b), 0);
	struct seen s = { 0 };
	uint64_t seq = read_batch(w, &s);
	/* The events name the new entry and the root's attributes. */
	assert_true(seen_has(&s, "entry 1 waits"));
	assert_true(seen_has(&s, "attr 1"));
	usleep(200 * 1000);
	assert_false(atomic_load(&b.done));           /* held for the ack */
	assert_int_equal(mc_watch_ack(w, seq), 0);
	pthread_join(th, NULL);
	assert_int_equal(b.rc, 0);
	mc_disconnect(b.c);
	mc_watch_close(w);
}

/* A mount's own changes: not sent to its watch, not held for another. */
static void test_mount_change_not_held(void **state)
{
	(void)state;
	mc_watch *own = mc_watch_open(harness_srv.socket);
	mc_watch *other = mc_watch_open(harness_srv.socket);
	assert_non_null(own);
	assert_non_null(other);
	assert_int_not_equal(mc_watch_id(own), mc_watch_id(other));
	mc_client *c = harness_client(&harness_srv);
	assert_int_equal(mc_mount_tag(c, mc_watch_id(own)), 0);
	EXPECT_ERR(mc_mount_tag(c, mc_watch_id(other)), EALREADY);
	EXPECT_ERR(mc_mount_tag(c, 0), EINVAL);
	uint64_t t0 = now_ms();
	assert_int_equal(mc_mkdir(c, "/tagged", 0755), 0);   /* nobody acks: not held */
	assert_true(now_ms() - t0 < 500);
	struct seen s = { 0 }, none = { 0 };
	uint64_t seq = read_batch(other, &s);
	assert_true(seen_has(&s, "entry 1 tagged"));
	assert_int_equal(mc_watch_ack(other, seq), 0);
	uint64_t q;
	assert_int_equal(mc_watch_read(own, 300, collect, &none, &q), 0);
	assert_int_equal(none.n, 0);
	mc_disconnect(c);
	mc_watch_close(own);
	mc_watch_close(other);
}

/* A watch that never acknowledges is dropped within the bound. */
static void test_silent_watch_dropped(void **state)
{
	(void)state;
	mc_watch *w = mc_watch_open(harness_srv.socket);
	assert_non_null(w);
	mc_client *c = harness_client(&harness_srv);
	uint64_t t0 = now_ms();
	assert_int_equal(mc_mkdir(c, "/silent", 0755), 0);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 500);                     /* it did wait ... */
	assert_true(took < 3000);                     /* ... but not past the bound */
	struct seen s = { 0 };
	uint64_t seq;
	int n;
	t0 = now_ms();
	do
		n = mc_watch_read(w, 100, collect, &s, &seq);
	while (n >= 0 && now_ms() - t0 < 5000);
	assert_int_equal(n, -1);
	assert_int_equal(errno, ECONNRESET);
	t0 = now_ms();
	assert_int_equal(mc_rmdir(c, "/silent"), 0);  /* nobody watches now */
	assert_true(now_ms() - t0 < 500);
	mc_disconnect(c);
	mc_watch_close(w);
}

struct tally {
	uint64_t dir;
	size_t entries;
};

static void count_entries(void *arg, const struct mc_watch_event *ev)
{
	struct tally *t = arg;
	t->entries += ev->kind == MC_WATCH_ENTRY && ev->ino == t->dir;
}

static void *bg_rmtree(void *arg)
{
	struct bg_call *b = arg;
	b->rc = mc_rmtree(b->c, b->path);
	b->err = errno;
	atomic_store(&b->done, true);
	return NULL;
}

#define BIG_FILES 8000

/* One change whose events pass the largest frame (an rmtree of 8,000
 * long names: about 2 MiB of events, against frames of 1 MiB) comes in
 * parts, all applied before the one acknowledgement that answers it. */
static void test_long_change_in_parts(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	assert_int_equal(mc_mkdir(c, "/big", 0755), 0);
	struct stat st;
	assert_int_equal(mc_lstat(c, "/big", &st), 0);
	char name[300], pad[241];
	memset(pad, 'x', 240);
	pad[240] = '\0';
	for (int i = 0; i < BIG_FILES; i += 200) {
		mc_batch *b = mc_batch_new(c);
		assert_non_null(b);
		for (int k = i; k < i + 200 && k < BIG_FILES; k++) {
			snprintf(name, sizeof(name), "/big/%s%06d", pad, k);
			assert_true(mc_batch_create(b, name, 0644) >= 0);
		}
		assert_int_equal(mc_batch_run(b), 0);
		mc_batch_free(b);
	}
	mc_watch *w = mc_watch_open(harness_srv.socket);
	assert_non_null(w);
	struct bg_call bg = { .c = c, .path = "/big" };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, bg_rmtree, &bg), 0);
	struct tally t = { (uint64_t)st.st_ino, 0 };
	uint64_t seq = 0, t0 = now_ms();
	int parts = 0;
	while (seq == 0 && now_ms() - t0 < 20000) {
		int n = mc_watch_read(w, 100, count_entries, &t, &seq);
		assert_true(n >= 0);
		parts += n;
	}
	assert_true(seq > 0);
	assert_true(parts >= 2);
	assert_int_equal(t.entries, BIG_FILES);
	assert_false(atomic_load(&bg.done));          /* held for the ack */
	assert_int_equal(mc_watch_ack(w, seq), 0);
	pthread_join(th, NULL);
	assert_int_equal(bg.rc, 0);
	mc_watch_close(w);
	mc_disconnect(c);
}

/* Watching and tagging need root or the server's user. */
static void test_watch_refused(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(harness_srv.dir, 0711), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(0) < 0 || setuid(65534) < 0)
			_exit(10);
		errno = 0;
		if (mc_watch_open(harness_srv.socket) || errno != EACCES)
			_exit(11);
		mc_client *c = mc_connect(harness_srv.socket);
		if (!c)
			_exit(12);
		errno = 0;
		if (mc_mount_tag(c, 1) != -1 || errno != EACCES)
			_exit(13);
		mc_disconnect(c);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- mounts --------------------------------------------------------------- */

struct mount {
	char dir[600];
	pid_t pid;
};

/* Mounts still up: a failed assertion leaves its test at once, and the
 * group's teardown unmounts them. */
static struct mount *live[4];

static bool fuse_usable(void)
{
	return geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0 && getenv("MCACHEFS") &&
	       system("command -v fusermount3 >/dev/null 2>&1") == 0;
}

static bool is_mounted(const char *dir)
{
	char parent[700];
	struct stat a, b;
	snprintf(parent, sizeof(parent), "%s/..", dir);
	return stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* mcachefs in the foreground on harness_srv.dir/NAME, with extra options
 * (NULL-terminated). */
static void mount_start(struct mount *m, const char *name, ...)
{
	const char *argv[16];
	int k = 0;
	char data[600];
	snprintf(m->dir, sizeof(m->dir), "%s/%s", harness_srv.dir, name);
	snprintf(data, sizeof(data), "%s/fsdata-%s", harness_srv.dir, name);
	mkdir(m->dir, 0755);
	argv[k++] = getenv("MCACHEFS");
	argv[k++] = "-s";
	argv[k++] = harness_srv.socket;
	argv[k++] = "--data-dir";
	argv[k++] = data;
	argv[k++] = "-f";
	va_list ap;
	va_start(ap, name);
	for (const char *a; (a = va_arg(ap, const char *)) && k < 14;)
		argv[k++] = a;
	va_end(ap);
	argv[k++] = m->dir;
	argv[k] = NULL;
	m->pid = fork();
	assert_true(m->pid >= 0);
	if (m->pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 500 && !is_mounted(m->dir); i++)
		usleep(10 * 1000);
	for (int i = 0; i < 4; i++)
		if (!live[i]) {
			live[i] = m;
			break;
		}
	assert_true(is_mounted(m->dir));
}

static void mount_stop(struct mount *m)
{
	char cmd[700];
	for (int i = 0; i < 4; i++)
		if (live[i] == m)
			live[i] = NULL;
	kill(m->pid, SIGCONT);
	snprintf(cmd, sizeof(cmd), "fusermount3 -u '%s'", m->dir);
	if (system(cmd) != 0) {
		kill(m->pid, SIGKILL);
		snprintf(cmd, sizeof(cmd), "fusermount3 -u -z '%s'", m->dir);
		assert_int_equal(system(cmd), 0);
	}
	int status;
	assert_int_equal(waitpid(m->pid, &status, 0), m->pid);
}

static const char *at(const struct mount *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *at(const struct mount *m, const char *fmt, ...)
{
	static _Thread_local char buf[4][800];
	static _Thread_local int k;
	char rel[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	char *b = buf[k++ % 4];
	snprintf(b, sizeof(buf[0]), "%s%s", m->dir, rel);
	return b;
}

#define ROUNDS 300

/* Is name in the listing of dir (through the mount)? */
static bool listed(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	bool found = false;
	for (struct dirent *e; (e = readdir(d));)
		found |= !strcmp(e->d_name, name);
	closedir(d);
	return found;
}

/* Every library change in a directory the mount caches is visible through
 * the mount as soon as the call returned. */
static void test_mount_sees_library_changes(void **state)
{
	(void)state;
	if (!fuse_usable())
		skip();
	static struct mount m;   /* in live[] past a failure */
	mount_start(&m, "mlib", "-o", "allow_other", NULL);
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	int stale = 0;
	assert_int_equal(mc_mkdir(c, "/lib", 0755), 0);
	for (int i = 0; i < ROUNDS; i++) {
		char a[64], b[64];
		snprintf(a, sizeof(a), "/lib/a%d", i);
		snprintf(b, sizeof(b), "/lib/b%d", i);
		/* create: the mount has the directory cached, listed and
		 * looked up already */
		assert_int_equal(stat(at(&m, "/lib"), &st), 0);
		assert_true(listed(at(&m, "/lib"), "x") == (i > 0));
		assert_int_equal(mc_creat(c, a, 0644) >= 0 ? 0 : -1, 0);
		stale += !listed(at(&m, "/lib"), a + 5);
		stale += stat(at(&m, "/lib/a%d", i), &st) != 0;
		/* chmod of a file whose attributes the kernel holds */
		assert_int_equal(mc_chmod(c, a, 0600), 0);
		stale += stat(at(&m, "/lib/a%d", i), &st) != 0 || (st.st_mode & 07777) != 0600;
		/* truncate: the size */
		assert_int_equal(mc_truncate(c, a, 4096 + i), 0);
		stale += stat(at(&m, "/lib/a%d", i), &st) != 0 || st.st_size != 4096 + i;
		/* rename: the old name goes, the new one is there */
		assert_int_equal(mc_rename(c, a, b), 0);
		stale += stat(at(&m, "/lib/a%d", i), &st) == 0;
		stale += stat(at(&m, "/lib/b%d", i), &st) != 0;
		stale += listed(at(&m, "/lib"), a + 5) || !listed(at(&m, "/lib"), b + 5);
		/* unlink: gone */
		assert_int_equal(mc_unlink(c, b), 0);
		stale += stat(at(&m, "/lib/b%d", i), &st) == 0;
		stale += listed(at(&m, "/lib"), b + 5);
		if (i == 0)
			assert_int_equal(mc_creat(c, "/lib/x", 0644) >= 0 ? 0 : -1, 0);
		/* the directory's own attributes */
		assert_int_equal(mc_chmod(c, "/lib", i % 2 ? 0755 : 0775), 0);
		stale += stat(at(&m, "/lib"), &st) != 0 || (st.st_mode & 07777) != (i % 2 ? 0755u : 0775u);
	}
	if (stale)
		printf("# %d stale answers through the mount in %d rounds\n", stale, ROUNDS);
	assert_int_equal(stale, 0);
	assert_int_equal(mc_unlink(c, "/lib/x"), 0);
	assert_int_equal(mc_rmdir(c, "/lib"), 0);
	mc_disconnect(c);
	mount_stop(&m);
}

struct churn {
	const struct mount *m;
	int id;
	int errors;
};

static void *churn(void *arg)
{
	struct churn *ch = arg;
	struct stat st;
	for (int i = 0; i < 200; i++) {
		const char *a = at(ch->m, "/shared/m%d-%d", ch->id, i);
		const char *b = at(ch->m, "/shared/n%d-%d", ch->id, i);
		int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) {
			ch->errors++;
			continue;
		}
		close(fd);
		ch->errors += rename(a, b) != 0;
		ch->errors += stat(b, &st) != 0;
		ch->errors += chmod(b, 0600) != 0;
		ch->errors += unlink(b) != 0;
		ch->errors += mkdir(a, 0755) != 0;
		ch->errors += rmdir(a) != 0;
	}
	return NULL;
}

/* Two mounts changing one directory at once: no deadlock, and each sees
 * the other's changes right after. */
static void test_two_mounts_no_deadlock(void **state)
{
	(void)state;
	if (!fuse_usable())
		skip();
	static struct mount m1, m2;
	mount_start(&m1, "m1", "-o", "allow_other", NULL);
	mount_start(&m2, "m2", "-o", "allow_other", NULL);
	assert_int_equal(mkdir(at(&m1, "/shared"), 0777), 0);
	struct churn c1 = { &m1, 1, 0 }, c2 = { &m2, 2, 0 };
	pthread_t t1, t2;
	uint64_t t0 = now_ms();
	assert_int_equal(pthread_create(&t1, NULL, churn, &c1), 0);
	assert_int_equal(pthread_create(&t2, NULL, churn, &c2), 0);
	/* A deadlock would hang here: the test's timeout is the bound, but
	 * say how long it took. */
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("# two mounts, 2 x 200 rounds of 6 changes: %llu ms\n",
	       (unsigned long long)(now_ms() - t0));
	assert_int_equal(c1.errors, 0);
	assert_int_equal(c2.errors, 0);
	/* What m1 makes, m2 shows once m2's watch applied it: at once in
	 * practice; within a second at most. */
	struct stat st;
	assert_int_equal(stat(at(&m2, "/shared"), &st), 0);
	assert_int_equal(mkdir(at(&m1, "/shared/late"), 0755), 0);
	uint64_t t1ms = now_ms();
	while (stat(at(&m2, "/shared/late"), &st) != 0 && now_ms() - t1ms < 1000)
		usleep(1000);
	assert_int_equal(stat(at(&m2, "/shared/late"), &st), 0);
	assert_int_equal(rmdir(at(&m2, "/shared/late")), 0);
	t1ms = now_ms();
	while (stat(at(&m1, "/shared/late"), &st) == 0 && now_ms() - t1ms < 1000)
		usleep(1000);
	assert_int_not_equal(stat(at(&m1, "/shared/late"), &st), 0);
	assert_int_equal(rmdir(at(&m1, "/shared")), 0);
	mount_stop(&m1);
	mount_stop(&m2);
}

/* stat in a child, which may hang on a stopped mcachefs: 0 (found), 1
 * (error), or 2 (no answer within ms). */
static int stat_within(const char *path, struct stat *out, unsigned ms)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct stat st;
		int rc = stat(path, &st);
		if (rc == 0 && write(p[1], &st, sizeof(st)) != (ssize_t)sizeof(st))
			_exit(3);
		_exit(rc == 0 ? 0 : 1);
	}
	close(p[1]);
	int status = 0, r = 2;
	for (unsigned i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			r = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
			break;
		}
		usleep(10 * 1000);
	}
	if (r == 0 && read(p[0], out, sizeof(*out)) != (ssize_t)sizeof(*out))
		r = 1;
	close(p[0]);
	if (r == 2) {
		kill(pid, SIGKILL);     /* a FUSE wait dies with SIGKILL */
		waitpid(pid, &status, 0);
	}
	return r;
}

/* The kernel caches by default; a mount that stops acknowledging does not
 * hold library clients past the bound, and falls back to timeouts 0. */
static void test_stopped_mount(void **state)
{
	(void)state;
	if (!fuse_usable())
		skip();
	static struct mount m;
	mount_start(&m, "mstop", "-o", "allow_other", NULL);
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	assert_int_equal(mc_mkdir(c, "/stop", 0755), 0);
	assert_int_equal(mc_creat(c, "/stop/f", 0644) >= 0 ? 0 : -1, 0);
	assert_int_equal(stat(at(&m, "/stop/f"), &st), 0);
	assert_int_equal(kill(m.pid, SIGSTOP), 0);
	/* Served from the kernel's cache: mcachefs is not asked. */
	assert_int_equal(stat_within(at(&m, "/stop/f"), &st, 2000), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	uint64_t t0 = now_ms();
	assert_int_equal(mc_chmod(c, "/stop/f", 0600), 0);
	uint64_t took = now_ms() - t0;
	printf("# a library chmod with a stopped mount: %llu ms\n", (unsigned long long)took);
	assert_true(took < 3000);
	assert_int_equal(kill(m.pid, SIGCONT), 0);
	/* Its watch was dropped: the mount noticed and invalidated all. */
	t0 = now_ms();
	while (now_ms() - t0 < 3000) {
		assert_int_equal(stat(at(&m, "/stop/f"), &st), 0);
		if ((st.st_mode & 07777) == 0600)
			break;
		usleep(10 * 1000);
	}
	assert_int_equal(st.st_mode & 07777, 0600);
	/* From now on without caching: every change seen at once. */
	for (int i = 0; i < 50; i++) {
		mode_t mode = i % 2 ? 0640 : 0604;
		assert_int_equal(mc_chmod(c, "/stop/f", mode), 0);
		assert_int_equal(stat(at(&m, "/stop/f"), &st), 0);
		assert_int_equal(st.st_mode & 07777, mode);
	}
	assert_int_equal(mc_unlink(c, "/stop/f"), 0);
	assert_int_not_equal(stat(at(&m, "/stop/f"), &st), 0);
	assert_int_equal(mc_rmdir(c, "/stop"), 0);
	mc_disconnect(c);
	mount_stop(&m);
}

static void *bg_unlink(void *arg)
{
	struct bg_call *b = arg;
	b->rc = mc_unlink(b->c, b->path);
	b->err = errno;
	atomic_store(&b->done, true);
	return NULL;
}

/* An unlink of a name the cache does not hold (the file is removed
 * without loading its inode) tells watches of the name and of the inode,
 * whose link count dropped, and waits for them like any change. */
static void test_uncached_unlink_noted(void **state)
{
	(void)state;
	const char *args[] = { "--warmers", "0", NULL };
	mc_client *c = harness_client(&harness_srv);
	struct stat d, f;
	assert_int_equal(mc_mkdir(c, "/unc", 0755), 0);
	int fd = mc_creat(c, "/unc/a", 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_link(c, "/unc/a", "/unc/b"), 0);
	assert_int_equal(mc_stat(c, "/unc", &d), 0);
	assert_int_equal(mc_stat(c, "/unc/a", &f), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(&harness_srv, SIGTERM), 0);
	assert_int_equal(server_start(&harness_srv, args), 0);   /* nothing cached */

	mc_watch *w = mc_watch_open(harness_srv.socket);
	assert_non_null(w);
	struct bg_call b = { .c = harness_client(&harness_srv), .path = "/unc/a" };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, bg_unlink, &b), 0);
	struct seen s = { 0 };
	uint64_t seq = read_batch(w, &s);
	char want[300];
	snprintf(want, sizeof(want), "entry %llu a", (unsigned long long)d.st_ino);
	assert_true(seen_has(&s, want));
	snprintf(want, sizeof(want), "attr %llu", (unsigned long long)f.st_ino);
	assert_true(seen_has(&s, want));
	usleep(100 * 1000);
	assert_false(atomic_load(&b.done));           /* held for the ack */
	assert_int_equal(mc_watch_ack(w, seq), 0);
	pthread_join(th, NULL);
	assert_int_equal(b.rc, 0);
	struct stat st;
	assert_int_equal(mc_stat(b.c, "/unc/b", &st), 0);
	assert_int_equal(st.st_nlink, 1);
	mc_disconnect(b.c);
	mc_watch_close(w);
}

static int group_teardown(void **state)
{
	for (int i = 0; i < 4; i++)
		if (live[i]) {
			char cmd[700];
			kill(live[i]->pid, SIGKILL);
			snprintf(cmd, sizeof(cmd), "fusermount3 -u -z '%s'", live[i]->dir);
			if (system(cmd) != 0)
				fprintf(stderr, "cannot unmount %s\n", live[i]->dir);
			waitpid(live[i]->pid, NULL, 0);
			live[i] = NULL;
		}
	return harness_group_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_library_change_waits),
		cmocka_unit_test(test_mount_change_not_held),
		cmocka_unit_test(test_silent_watch_dropped),
		cmocka_unit_test(test_watch_refused),
		cmocka_unit_test(test_long_change_in_parts),
		cmocka_unit_test(test_mount_sees_library_changes),
		cmocka_unit_test(test_two_mounts_no_deadlock),
		cmocka_unit_test(test_stopped_mount),
		cmocka_unit_test(test_uncached_unlink_noted),   /* restarts the server */
	};
	return cmocka_run_group_tests_name("watch", tests, harness_group_setup, group_teardown);
}
