/* test-sched.c - how the server's threads ask to be scheduled, read from
 * /proc against a real mcached: the committer and the warmers take the
 * shortest time slice the kernel allows (server/thread_sched.h), so that
 * a thread woken beside one of them waits for at most that slice; the
 * warmers run at --warm-nice (19 by default) and keep their slice when
 * they go into the SCHED_IDLE class and back; the other threads keep the
 * kernel's default slice. On a kernel that has no slice per thread (no
 * "se.slice" in /proc/PID/task/TID/sched, or one that does not follow
 * sched_setattr(2)'s sched_runtime) the slice checks are skipped and
 * only the nice values are checked. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

#define SLICE_MIN_NS 100000ull  /* the shortest slice Linux takes */

struct thread_sched {
	char comm[32];
	long long slice;   /* -1: not reported */
	int policy;
	int prio;          /* 120 + nice for SCHED_OTHER and SCHED_IDLE */
};

/* Read "key : value" lines of a /proc sched file. */
static void read_sched(const char *path, struct thread_sched *t)
{
	char line[256];
	t->slice = -1;
	t->policy = t->prio = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		long long v;
		char key[64];
		if (sscanf(line, "%63s : %lld", key, &v) != 2)
			continue;
		if (strcmp(key, "se.slice") == 0)
			t->slice = v;
		else if (strcmp(key, "policy") == 0)
			t->policy = (int)v;
		else if (strcmp(key, "prio") == 0)
			t->prio = (int)v;
	}
	fclose(f);
}

/* The threads of pid, at most max; returns how many. */
static size_t threads_of(pid_t pid, struct thread_sched *out, size_t max)
{
	char path[512];
	size_t n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] == '.')
			continue;
		struct thread_sched *t = &out[n];
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		int got = fscanf(f, "%31s", t->comm);
		fclose(f);
		if (got != 1)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/sched", (int)pid, e->d_name);
		read_sched(path, t);
		n++;
	}
	closedir(d);
	return n;
}

/* sched_attr as sched_setattr(2) first took it. */
struct attr_v0 {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

static void *slice_probe(void *arg)
{
	struct attr_v0 a = { .size = sizeof(a), .policy = SCHED_OTHER, .runtime = SLICE_MIN_NS };
	struct thread_sched t;
	char path[128];
	*(bool *)arg = false;
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		return NULL;
	snprintf(path, sizeof(path), "/proc/self/task/%d/sched", (int)gettid());
	read_sched(path, &t);
	*(bool *)arg = t.slice == (long long)SLICE_MIN_NS;
	return NULL;
}

/* Does this kernel keep a slice per thread, set by sched_setattr? Tried on
 * a thread of the test's own. */
static bool kernel_has_slices(void)
{
	pthread_t th;
	bool ok = false;
	assert_int_equal(pthread_create(&th, NULL, slice_probe, &ok), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	return ok;
}

/* The kernel's default slice: that of a thread that never asked. */
static long long default_slice(void)
{
	struct thread_sched t;
	char path[128];
	snprintf(path, sizeof(path), "/proc/self/task/%d/sched", (int)gettid());
	read_sched(path, &t);
	return t.slice;
}

/* Start a server over a namespace big enough that its warm-up is seen,
 * restarted with --warmers 2, and wait for the warm-up to end. */
static void start_warmed(struct mc_server *s, const char *nice)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(server_start(s, NULL), 0);
	mc_client *c = harness_client(s);
	EXPECT_OK(mc_mkdir(c, "/d", 0755));
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	for (int i = 0; i < 2000; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(mc_batch_create(b, p, 0644), i);
	}
	assert_int_equal(mc_batch_run(b), 0);
	for (int i = 0; i < 2000; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	mc_batch_free(b);
	EXPECT_OK(mc_sync(c));
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);
	const char *const args[] = { "--warmers", "2", "--warm-nice", nice, NULL };
	assert_int_equal(server_start(s, args), 0);
	c = harness_client(s);
	for (int i = 0; i < 6000 && harness_stat_u64(c, "\"warm\"", "done") == 0; i++)
		usleep(10 * 1000);
	assert_int_equal(harness_stat_u64(c, "\"warm\"", "done"), 1);
	assert_true(harness_stat_u64(c, "\"warm\"", "entries") >= 2000);
	mc_disconnect(c);
}

/* Check the threads of s: warmers at prio want_prio; committer and warmers
 * at the shortest slice, the workers at the default one, when the kernel
 * keeps slices. */
static void check_threads(const struct mc_server *s, int want_prio)
{
	struct thread_sched t[64];
	size_t n = threads_of(s->pid, t, 64);
	bool slices = kernel_has_slices();
	long long dflt = default_slice();
	unsigned warmers = 0, committers = 0, workers = 0;
	if (!slices)
		print_message("# no slice per thread on this kernel: slices not checked\n");
	for (size_t i = 0; i < n; i++) {
		bool warm = strcmp(t[i].comm, "mcached-warm") == 0;
		bool commit = strcmp(t[i].comm, "mcached-commit") == 0;
		bool conn = strcmp(t[i].comm, "mcached-conn") == 0;
		warmers += warm;
		committers += commit;
		workers += conn;
		if (warm) {
			/* Between steps a warmer is in SCHED_OTHER (0). */
			assert_int_equal(t[i].policy, SCHED_OTHER);
			assert_int_equal(t[i].prio, want_prio);
		}
		if (!slices)
			continue;
		if (warm || commit)
			assert_int_equal(t[i].slice, (long long)SLICE_MIN_NS);
		else if (conn)
			assert_int_equal(t[i].slice, dflt);
	}
	assert_int_equal(warmers, 2);
	assert_int_equal(committers, 1);
	assert_true(workers >= 1);
}

static void test_warmers_and_committer_short_slices(void **state)
{
	(void)state;
	struct mc_server s;
	start_warmed(&s, "19");
	check_threads(&s, 139);
	/* Each read of the warm-up took the warmers into SCHED_IDLE and back
	 * where that is allowed (root, or RLIMIT_NICE): the checks above saw
	 * what they came back to. */
	assert_int_equal(server_finish(&s), 0);
}

static void test_warm_nice_zero(void **state)
{
	(void)state;
	struct mc_server s;
	start_warmed(&s, "0");
	check_threads(&s, 120);
	assert_int_equal(server_finish(&s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warmers_and_committer_short_slices),
		cmocka_unit_test(test_warm_nice_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
