/* test-miss.c - a lookup that must read the store does so without the
 * namespace lock: while one client's misses wait on a slow store
 * (MCACHED_MISS_DELAY_US, server/ns_miss.c), another client's mutations in
 * a cached directory go on at their usual speed; the misses still get the
 * right answers, positive and negative, and a name changed meanwhile is
 * seen as changed. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

#define NFILES 20
#define DELAY_US 50000

static struct mc_server srv;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct misser {
	mc_client *c;
	int ok, enoent;
	atomic_int done;
};

static void *miss_main(void *arg)
{
	struct misser *m = arg;
	char p[64];
	struct stat st;
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/m/f%02d", i);
		if (mc_stat(m->c, p, &st) == 0 && S_ISREG(st.st_mode))
			m->ok++;
		snprintf(p, sizeof(p), "/m/none%02d", i);
		if (mc_stat(m->c, p, &st) < 0 && errno == ENOENT)
			m->enoent++;
	}
	atomic_store(&m->done, 1);
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void test_misses_leave_the_lock(void **state)
{
	(void)state;
	const char *const args[] = { "--warmers", "0", NULL };
	assert_int_equal(server_start(&srv, args), 0);
	mc_client *c = harness_client(&srv);
	char p[64];
	assert_int_equal(mc_mkdir(c, "/m", 0755), 0);
	assert_int_equal(mc_mkdir(c, "/b", 0755), 0);
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/m/f%02d", i);
		assert_int_equal(mc_close(c, mc_creat(c, p, 0644)), 0);
	}
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(&srv, SIGTERM), 0);

	char delay[16];
	snprintf(delay, sizeof(delay), "%d", DELAY_US);
	setenv("MCACHED_MISS_DELAY_US", delay, 1);
	assert_int_equal(server_start(&srv, args), 0);
	unsetenv("MCACHED_MISS_DELAY_US");
	c = harness_client(&srv);
	struct stat st;
	/* /b is empty: once looked up it is complete, and creating in it
	 * reads nothing from the store. */
	assert_int_equal(mc_stat(c, "/b", &st), 0);
	/* Changed before the misses read it: the cache's answer wins. */
	assert_int_equal(mc_unlink(c, "/m/f03"), 0);

	struct misser m = { .c = harness_client(&srv) };
	pthread_t th;
	double t0 = now_s();
	assert_int_equal(pthread_create(&th, NULL, miss_main, &m), 0);
	static double lat[8192];
	int n = 0;
	while (!atomic_load(&m.done) && n < 8192) {
		usleep(500);
		snprintf(p, sizeof(p), "/b/x%04d", n);
		double t = now_s();
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
		lat[n++] = now_s() - t;
	}
	pthread_join(th, NULL);
	double took = now_s() - t0;
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp_d);
	double med = lat[n / 2];
	print_message("# %d mkdirs while %d misses waited %d us each (%.2f s): median %.3f ms, "
	              "max %.3f ms\n", n, 2 * NFILES, DELAY_US, took, med * 1e3, lat[n - 1] * 1e3);
	assert_int_equal(m.ok, NFILES - 1);
	assert_int_equal(m.enoent, NFILES);
	EXPECT_ERR(mc_stat(c, "/m/f03", &st), ENOENT);
	/* The misses took their time; the mkdirs did not wait for them. */
	assert_true(took >= 2.0 * NFILES * DELAY_US / 1e6 * 0.9);
	assert_true(n >= 20);
	assert_true(med < DELAY_US / 1e6 / 5);
	mc_disconnect(m.c);
	mc_disconnect(c);
	assert_int_equal(server_finish(&srv), 0);
}

static int teardown(void **state)
{
	(void)state;
	unsetenv("MCACHED_MISS_DELAY_US");
	if (srv.pid > 0)
		server_stop(&srv, SIGKILL);
	server_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_misses_leave_the_lock, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
