/* test-busypoll.c - polling instead of sleeping between the turns of a
 * request-reply exchange (proto/mc_busypoll.h), against a real mcached:
 * a worker polls for a client's next request (--busy-poll-us, counted as
 * rpc.busy_polls / busy_poll_misses / busy_poll_us) and libmcache for its
 * reply ($MCACHE_BUSY_POLL_US); either turned off does not poll at all;
 * an idle server does not poll; answers are the same either way. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

#define CALLS 2000

static struct mc_server srv;

static void start(const char *const *args)
{
	memset(&srv, 0, sizeof(srv));
	assert_int_equal(server_start(&srv, args), 0);
}

static void finish(void)
{
	assert_int_equal(server_finish(&srv), 0);
}

static uint64_t rpc_stat(const char *key)
{
	mc_client *c = harness_client(&srv);
	uint64_t n = harness_stat_u64(c, "\"rpc\"", key);
	mc_disconnect(c);
	return n;
}

/* The CPU time (ns) the server's worker threads have used: the first field
 * of /proc/PID/task/TID/schedstat of each "mcached-conn". */
static uint64_t workers_cpu_ns(void)
{
	char path[512], comm[64];
	uint64_t sum = 0;
	unsigned found = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)srv.pid);
	DIR *d = opendir(path);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)srv.pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		int got = fscanf(f, "%63s", comm);
		fclose(f);
		if (got != 1 || strcmp(comm, "mcached-conn") != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)srv.pid, e->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		unsigned long long ns;
		assert_int_equal(fscanf(f, "%llu", &ns), 1);
		fclose(f);
		sum += ns;
		found++;
	}
	closedir(d);
	assert_true(found > 0);
	return sum;
}

/* CALLS mc_chmod round trips, each checked with the mode it set; the
 * calling thread's voluntary context switches (its sleeps) meanwhile. */
static long chmod_calls(mc_client *c)
{
	struct rusage r0, r1;
	struct stat st;
	assert_int_equal(getrusage(RUSAGE_THREAD, &r0), 0);
	for (int i = 0; i < CALLS; i++) {
		mode_t m = (i & 1) ? 0600 : 0644;
		assert_int_equal(mc_chmod(c, "/f", m), 0);
		assert_int_equal(mc_stat(c, "/f", &st), 0);
		assert_int_equal(st.st_mode & 07777, m);
	}
	assert_int_equal(getrusage(RUSAGE_THREAD, &r1), 0);
	return r1.ru_nvcsw - r0.ru_nvcsw;
}

static mc_client *client_with_poll(const char *us)
{
	if (us)
		setenv("MCACHE_BUSY_POLL_US", us, 1);
	else
		unsetenv("MCACHE_BUSY_POLL_US");
	mc_client *c = harness_client(&srv);
	unsetenv("MCACHE_BUSY_POLL_US");
	return c;
}

static void make_file(void)
{
	mc_client *c = harness_client(&srv);
	int fd = mc_open(c, "/f", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_close(c, fd), 0);
	mc_disconnect(c);
}

/* By default both ends poll: a client making calls back to back finds
 * its replies without sleeping for most of them, and the worker meets its
 * requests polling. Polling gives way to other threads that want the CPU
 * (mc_busypoll.h), so on a machine busy with other work a round may sleep
 * more: the test takes the best of a few rounds; with polling broken on
 * either end every round fails. */
static void test_default_polls(void **state)
{
	(void)state;
	enum { ROUNDS = 5 };
	start(NULL);
	make_file();
	mc_client *c = client_with_poll(NULL);
	bool ok = false;
	for (int r = 0; r < ROUNDS && !ok; r++) {
		uint64_t h0 = rpc_stat("busy_polls"), us0 = rpc_stat("busy_poll_us");
		long sleeps = chmod_calls(c);
		uint64_t hits = rpc_stat("busy_polls") - h0, us = rpc_stat("busy_poll_us") - us0;
		print_message("# %d calls: the client slept %ld times; the workers met %llu "
		              "requests polling, %llu us polling in all\n",
		              CALLS, sleeps, (unsigned long long)hits, (unsigned long long)us);
		ok = sleeps < CALLS / 2 && hits > CALLS / 2 && us > 0;
	}
	mc_disconnect(c);
	assert_true(ok);
	finish();
}

/* On a server started with args and the file made: CALLS calls from a
 * client that does not poll, which sleeps for most of its replies. */
static void calls_client_off(const char *const *args, const char *what)
{
	start(args);
	make_file();
	mc_client *c = client_with_poll("0");
	long sleeps = chmod_calls(c);
	mc_disconnect(c);
	print_message("# %d calls, %s: the client slept %ld times\n", CALLS, what, sleeps);
	assert_true(sleeps >= CALLS / 2);
}

/* Turned off on both ends, nothing polls: every reply is waited for
 * asleep, and the workers' counters stay at zero. */
static void test_off_polls_nothing(void **state)
{
	(void)state;
	const char *const args[] = { "--busy-poll-us", "0", NULL };
	calls_client_off(args, "neither end polling");
	assert_int_equal(rpc_stat("busy_polls"), 0);
	assert_int_equal(rpc_stat("busy_poll_misses"), 0);
	assert_int_equal(rpc_stat("busy_poll_us"), 0);
	finish();
}

/* The client's own setting alone: with the server polling and the client
 * not, the client sleeps for its replies. */
static void test_client_off(void **state)
{
	(void)state;
	calls_client_off(NULL, "the client not polling");
	finish();
}

/* Once the calls stop, a worker polls at most one window more, then
 * sleeps: an idle server uses no CPU, whatever the last client did. */
static void test_idle_server_sleeps(void **state)
{
	(void)state;
	start(NULL);
	make_file();
	mc_client *c = client_with_poll(NULL);
	chmod_calls(c);
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	uint64_t cpu0 = workers_cpu_ns();
	struct timespec idle = { 0, 500 * 1000 * 1000 };
	nanosleep(&idle, NULL);
	uint64_t cpu = workers_cpu_ns() - cpu0;
	print_message("# workers' CPU over 500 ms idle: %llu us\n", (unsigned long long)(cpu / 1000));
	assert_true(cpu < 5 * 1000 * 1000);
	mc_disconnect(c);
	finish();
}

/* Clients making calls back to back keep the workers polling; a SIGTERM
 * then still stops the server at once, cycle after cycle (an exit asked
 * for while a poll met a request must not be lost). */
struct streamer {
	const char *socket;
	atomic_bool stop;
};

static void *stream_main(void *arg)
{
	struct streamer *st = arg;
	mc_client *c = mc_connect(st->socket);
	if (!c)
		return NULL;
	for (unsigned i = 0; !atomic_load(&st->stop); i++)
		if (mc_chmod(c, "/f", (i & 1) ? 0600 : 0644) < 0)
			break;
	mc_disconnect(c);
	return NULL;
}

static void test_stop_while_polling(void **state)
{
	(void)state;
	enum { CYCLES = 20, THREADS = 3 };
	for (int k = 0; k < CYCLES; k++) {
		start(NULL);
		make_file();
		struct streamer st = { srv.socket, false };
		pthread_t th[THREADS];
		for (int i = 0; i < THREADS; i++)
			assert_int_equal(pthread_create(&th[i], NULL, stream_main, &st), 0);
		struct timespec run = { 0, (10 + k) * 1000 * 1000 };
		nanosleep(&run, NULL);
		int rc = server_stop(&srv, SIGTERM);
		atomic_store(&st.stop, true);
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		server_cleanup(&srv);
		if (rc != 0)
			fail_msg("cycle %d: mcached did not stop on SIGTERM (%d)", k, rc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_polls),
		cmocka_unit_test(test_off_polls_nothing),
		cmocka_unit_test(test_client_off),
		cmocka_unit_test(test_idle_server_sleeps),
		cmocka_unit_test(test_stop_while_polling),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
