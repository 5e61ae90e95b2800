/* warm_fixture.h - what the warmers' integration tests (test-warm.c,
 * test-warm_miss.c) share: the group's server (tests/integration/
 * harness.h), a tree of directories to warm, restarts with warmers slowed
 * by MCACHED_WARM_ENTRY_DELAY_US, the warm-up's statistics and a wait for
 * its end (header only; include after cmocka.h). */
#ifndef MC_ITEST_WARM_FIXTURE_H
#define MC_ITEST_WARM_FIXTURE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "mcache.h"

#define NDIRS  12
#define NFILES 60    /* per directory, and as many again in its subdirectory */

/* The running test's server (teardown stops what a failed test left). */
static struct mc_server srv;

static inline uint64_t requests(mc_client *c)
{
	return harness_stat_u64(c, "\"rpc\"", "requests");
}

static inline uint64_t warm_stat(mc_client *c, const char *key)
{
	return harness_stat_u64(c, "\"warm\"", key);
}

static inline void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Wait (at most 60 s) for the start-up warm-up to be over. */
static inline void wait_warmed(mc_client *c)
{
	for (int i = 0; i < 6000; i++) {
		if (warm_stat(c, "done") == 1)
			return;
		sleep_ms(10);
	}
	fail_msg("the warm-up did not end within 60 s");
}

static inline void run_checked(mc_batch *b)
{
	assert_int_equal(mc_batch_run(b), 0);
	for (size_t i = 0; i < mc_batch_count(b); i++)
		if (mc_batch_error(b, i) != 0)
			fail_msg("batch op %zu: %s", i, strerror(mc_batch_error(b, i)));
}

/* /dNN/fNNN, /dNN/sub/gNNN, /dNN/link (a symlink); returns the number of
 * names made (the root excluded). */
static inline uint64_t make_tree(mc_client *c)
{
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[128];
	uint64_t n = 0;
	for (int d = 0; d < NDIRS; d++) {
		snprintf(p, sizeof(p), "/d%02d", d);
		mc_batch_mkdir(b, p, 0755);
		snprintf(p, sizeof(p), "/d%02d/sub", d);
		mc_batch_mkdir(b, p, 0755);
		n += 2;
		for (int f = 0; f < NFILES; f++) {
			snprintf(p, sizeof(p), "/d%02d/f%03d", d, f);
			mc_batch_create(b, p, 0644);
			snprintf(p, sizeof(p), "/d%02d/sub/g%03d", d, f);
			mc_batch_create(b, p, 0600);
			n += 2;
		}
		run_checked(b);
		snprintf(p, sizeof(p), "/d%02d/link", d);
		assert_int_equal(mc_symlink(c, "sub/g000", p), 0);
		n++;
	}
	mc_batch_free(b);
	assert_int_equal(mc_sync(c), 0);
	return n;
}

static inline void restart(const char *const *args)
{
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	assert_int_equal(server_start(&srv, args), 0);
}

/* Restart the server with warm, its warmers slowed by delay_us per
 * entry: a client of it. */
static inline mc_client *restart_slow(const char *delay_us, const char *const *warm)
{
	setenv("MCACHED_WARM_ENTRY_DELAY_US", delay_us, 1);
	restart(warm);
	unsetenv("MCACHED_WARM_ENTRY_DELAY_US");
	return harness_client(&srv);
}

/* Start a server with no warmers, make_tree, restart_slow. */
static inline mc_client *slow_warm_start(const char *delay_us, const char *const *warm)
{
	const char *const cold[] = { "--warmers", "0", NULL };
	assert_int_equal(server_start(&srv, cold), 0);
	mc_client *c = harness_client(&srv);
	make_tree(c);
	mc_disconnect(c);
	return restart_slow(delay_us, warm);
}

/* A failed test leaves its server running: stop it, start afresh. */
static inline int teardown(void **state)
{
	(void)state;
	unsetenv("MCACHED_WARM_ENTRY_DELAY_US");
	if (srv.pid > 0)
		server_stop(&srv, SIGKILL);
	server_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
	return 0;
}

#endif
