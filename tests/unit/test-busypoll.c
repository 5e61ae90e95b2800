/* test-busypoll.c - the adaptive polling window both ends of a connection
 * use (proto/mc_busypoll.h): it grows toward how soon the other side
 * answers, never past its bound, shrinks away when polling does not pay,
 * comes back after short sleeps, and stays off at 0; polling a socket
 * meets what comes within the window, sleeps for what comes later, and
 * gives way to a thread that wants the CPU. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "mc_busypoll.h"

#define US 1000u
#define START MC_BUSYPOLL_START_NS
#define NOW (1000ull * 1000 * 1000 * 1000) /* any time: 1000 s */

static void test_starts_at_start(void **state)
{
	(void)state;
	struct mc_busypoll p;
	mc_busypoll_init(&p, 200 * US);
	assert_int_equal(p.window, START);
	assert_false(p.missed);
	/* A bound under the first window is the window. */
	mc_busypoll_init(&p, 4 * US);
	assert_int_equal(p.window, 4 * US);
}

/* Sleeps that end within the bound double the window until it covers
 * them; never past the bound. */
static void test_grows_to_cover_short_sleeps(void **state)
{
	(void)state;
	struct mc_busypoll p;
	mc_busypoll_init(&p, 200 * US);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 60 * US, NOW);
	assert_int_equal(p.window, 2 * START);
	assert_false(p.missed);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 60 * US, NOW);
	assert_int_equal(p.window, 4 * START);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 60 * US, NOW);
	assert_int_equal(p.window, 8 * START);
	/* Covered now: a sleep no longer than the window leaves it. */
	mc_busypoll_slept(&p, 60 * US, NOW);
	assert_int_equal(p.window, 8 * START);
	for (int i = 0; i < 20; i++)
		mc_busypoll_slept(&p, 199 * US, NOW);
	assert_int_equal(p.window, 200 * US);
	/* A sleep that ends exactly at the bound still counts as short. */
	mc_busypoll_slept(&p, 200 * US, NOW);
	assert_int_equal(p.window, 200 * US);
}

/* A long sleep after a poll that found nothing halves the window; under
 * the first window it is off, and a short sleep starts it again. */
static void test_shrinks_when_polls_miss(void **state)
{
	(void)state;
	struct mc_busypoll p;
	mc_busypoll_init(&p, 200 * US);
	for (int i = 0; i < 20; i++)
		mc_busypoll_slept(&p, 150 * US, NOW);
	assert_int_equal(p.window, 16 * START); /* the first double past 150 us */
	mc_busypoll_slept(&p, 199 * US, NOW);
	assert_int_equal(p.window, 200 * US);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 5000 * US, NOW);
	assert_int_equal(p.window, 100 * US);
	/* Long, but no poll had missed (the window was not polled): kept. */
	mc_busypoll_slept(&p, 5000 * US, NOW);
	assert_int_equal(p.window, 100 * US);
	unsigned n = 0;
	while (p.window > 0 && n < 64) {
		mc_busypoll_missed(&p);
		mc_busypoll_slept(&p, 5000 * US, NOW);
		n++;
	}
	assert_int_equal(p.window, 0);
	assert_true(n <= 4); /* 100 -> 50 -> 25 -> 12.5 -> off */
	/* Off, a short sleep starts it at the first window. */
	mc_busypoll_slept(&p, 30 * US, NOW);
	assert_int_equal(p.window, START);
}

/* A poll that found the CPU wanted turns polling off for a while: short
 * sleeps meanwhile do not start it again, the first one after does. */
static void test_contended_goes_quiet(void **state)
{
	(void)state;
	struct mc_busypoll p;
	mc_busypoll_init(&p, 200 * US);
	for (int i = 0; i < 10; i++)
		mc_busypoll_slept(&p, 199 * US, NOW);
	assert_int_equal(p.window, 200 * US);
	mc_busypoll_contended(&p, NOW);
	assert_int_equal(p.window, 0);
	assert_false(p.missed);
	uint64_t q = MC_BUSYPOLL_QUIET_MIN_NS;
	mc_busypoll_slept(&p, 30 * US, NOW + q - 1);
	assert_int_equal(p.window, 0);
	mc_busypoll_slept(&p, 30 * US, NOW + q);
	assert_int_equal(p.window, START);
	/* Contended again and again: the pause doubles, up to its bound. */
	uint64_t t = NOW + q;
	mc_busypoll_contended(&p, t);
	assert_int_equal(p.quiet_until, t + 2 * q);
	for (int i = 0; i < 20; i++)
		mc_busypoll_contended(&p, t);
	assert_int_equal(p.quiet_until, t + MC_BUSYPOLL_QUIET_MAX_NS);
	/* A poll that meets its message makes the next pause short again. */
	mc_busypoll_hit(&p);
	mc_busypoll_contended(&p, t);
	assert_int_equal(p.quiet_until, t + q);
}

/* A bound of 0 never polls, whatever the sleeps. */
static void test_zero_is_off(void **state)
{
	(void)state;
	struct mc_busypoll p;
	mc_busypoll_init(&p, 0);
	assert_int_equal(p.window, 0);
	for (int i = 0; i < 10; i++) {
		mc_busypoll_slept(&p, 1 * US, NOW);
		mc_busypoll_missed(&p);
		mc_busypoll_slept(&p, 10 * US, NOW);
	}
	assert_int_equal(p.window, 0);
}

/* ---- polling a descriptor (mc_busypoll_fd, mc_busypoll_sleep_fd) ----- */

static void test_fd_ready_at_once(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct mc_busypoll p;
	mc_busypoll_init(&p, 200 * US);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_true(mc_busypoll_fd(&p, sv[0]));
	assert_false(p.missed);
	assert_int_equal(mc_busypoll_sleep_fd(&p, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
}

/* Nothing comes: the whole window is polled, then it is a miss; a window
 * of 0 does not poll at all. */
static void test_fd_miss(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct mc_busypoll p;
	mc_busypoll_init(&p, 200 * US);
	uint64_t t0 = mc_busypoll_now();
	assert_false(mc_busypoll_fd(&p, sv[0]));
	uint64_t took = mc_busypoll_now() - t0;
	/* A miss after all of the window; or, on a busy machine, a poll that
	 * found the CPU wanted ended it early and turned polling off. */
	assert_true(p.missed || (p.window == 0 && p.quiet_until > t0));
	assert_true(took < 100 * 1000 * US);
	p.window = 0;
	p.missed = false;
	assert_false(mc_busypoll_fd(&p, sv[0]));
	assert_false(p.missed);
	close(sv[0]);
	close(sv[1]);
}

struct late_writer {
	int fd;
	unsigned delay_us;
};

static void *late_write(void *arg)
{
	struct late_writer *lw = arg;
	usleep(lw->delay_us);
	if (write(lw->fd, "x", 1) != 1)
		abort();
	return NULL;
}

/* A message that comes within the window is met polling; one that comes
 * later is slept for, and the sleep's length grows the window toward it. */
static void test_fd_met_or_slept(void **state)
{
	(void)state;
	int sv[2];
	char b;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct mc_busypoll p;
	mc_busypoll_init(&p, 10000 * US);
	p.window = 5000 * US;
	struct late_writer lw = { sv[1], 200 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, late_write, &lw), 0);
	bool met = mc_busypoll_fd(&p, sv[0]);
	if (!met) /* a busy machine: the poll gave way; the message still comes */
		assert_int_equal(mc_busypoll_sleep_fd(&p, sv[0]), 0);
	assert_int_equal(read(sv[0], &b, 1), 1);
	pthread_join(th, NULL);

	p.window = 0;
	p.quiet_until = 0; /* whatever the first poll found */
	lw.delay_us = 2000;
	assert_int_equal(pthread_create(&th, NULL, late_write, &lw), 0);
	assert_false(mc_busypoll_fd(&p, sv[0]));
	uint64_t s0 = mc_busypoll_now();
	assert_int_equal(mc_busypoll_sleep_fd(&p, sv[0]), 0);
	/* A short sleep starts it again (on a busy machine the sleep may
	 * outlast the bound, and then it stays off). */
	if (mc_busypoll_now() - s0 <= p.max)
		assert_int_equal(p.window, START);
	else
		assert_true(p.window == 0 || p.window == START);
	assert_int_equal(read(sv[0], &b, 1), 1);
	pthread_join(th, NULL);
	close(sv[0]);
	close(sv[1]);
}

/* A thread that wants the CPU the poll runs on ends the poll: a yield that
 * handed the CPU over for longer than MC_BUSYPOLL_CONTENDED_NS means
 * polling on would take it from others, so polling stays off for
 * a pause (mc_busypoll_contended). */
static atomic_bool hog_stop;

static void *hog(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
		;
	return NULL;
}

static void test_fd_gives_way(void **state)
{
	(void)state;
	cpu_set_t one, all;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	atomic_store(&hog_stop, false);
	pthread_attr_t a;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof(one), &one), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, &a, hog, NULL), 0);
	pthread_attr_destroy(&a);
	usleep(1000); /* the hog is runnable on our CPU */
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct mc_busypoll p;
	mc_busypoll_init(&p, MC_BUSYPOLL_MAX_US * US);
	p.window = MC_BUSYPOLL_MAX_US * US;
	/* Polled to the end, the window would take 10 ms of the hog's CPU;
	 * the first yield that runs the hog ends it. Several tries: the
	 * scheduler may let us run a while before it does. */
	bool gave_way = false;
	for (int i = 0; i < 5 && !gave_way; i++) {
		uint64_t t0 = mc_busypoll_now();
		assert_false(mc_busypoll_fd(&p, sv[0]));
		/* Ended early, and polling is off for a while. */
		gave_way = mc_busypoll_now() - t0 < MC_BUSYPOLL_MAX_US * US && p.window == 0 &&
		           p.quiet_until > t0;
		p.window = MC_BUSYPOLL_MAX_US * US;
	}
	atomic_store(&hog_stop, true);
	pthread_join(th, NULL);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	close(sv[0]);
	close(sv[1]);
	assert_true(gave_way);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_at_start),
		cmocka_unit_test(test_grows_to_cover_short_sleeps),
		cmocka_unit_test(test_shrinks_when_polls_miss),
		cmocka_unit_test(test_zero_is_off),
		cmocka_unit_test(test_contended_goes_quiet),
		cmocka_unit_test(test_fd_ready_at_once),
		cmocka_unit_test(test_fd_miss),
		cmocka_unit_test(test_fd_met_or_slept),
		cmocka_unit_test(test_fd_gives_way),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
