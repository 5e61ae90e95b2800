/* test-busypoll.c - the adaptive polling window both ends of a connection
 * use (proto/mc_busypoll.h): it grows toward how soon the other side
 * answers, never past its bound, shrinks away when polling does not pay,
 * comes back after short sleeps, and stays off at 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mc_busypoll.h"

#define US 1000u
#define START MC_BUSYPOLL_START_NS

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
	mc_busypoll_slept(&p, 60 * US);
	assert_int_equal(p.window, 2 * START);
	assert_false(p.missed);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 60 * US);
	assert_int_equal(p.window, 4 * START);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 60 * US);
	assert_int_equal(p.window, 8 * START);
	/* Covered now: a sleep no longer than the window leaves it. */
	mc_busypoll_slept(&p, 60 * US);
	assert_int_equal(p.window, 8 * START);
	for (int i = 0; i < 20; i++)
		mc_busypoll_slept(&p, 199 * US);
	assert_int_equal(p.window, 200 * US);
	/* A sleep that ends exactly at the bound still counts as short. */
	mc_busypoll_slept(&p, 200 * US);
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
		mc_busypoll_slept(&p, 150 * US);
	assert_int_equal(p.window, 16 * START); /* the first double past 150 us */
	mc_busypoll_slept(&p, 199 * US);
	assert_int_equal(p.window, 200 * US);
	mc_busypoll_missed(&p);
	mc_busypoll_slept(&p, 5000 * US);
	assert_int_equal(p.window, 100 * US);
	/* Long, but no poll had missed (the window was not polled): kept. */
	mc_busypoll_slept(&p, 5000 * US);
	assert_int_equal(p.window, 100 * US);
	unsigned n = 0;
	while (p.window > 0 && n < 64) {
		mc_busypoll_missed(&p);
		mc_busypoll_slept(&p, 5000 * US);
		n++;
	}
	assert_int_equal(p.window, 0);
	assert_true(n <= 4); /* 100 -> 50 -> 25 -> 12.5 -> off */
	/* Off, a short sleep starts it at the first window. */
	mc_busypoll_slept(&p, 30 * US);
	assert_int_equal(p.window, START);
}

/* A bound of 0 never polls, whatever the sleeps. */
static void test_zero_is_off(void **state)
{
	(void)state;
	struct mc_busypoll p;
	mc_busypoll_init(&p, 0);
	assert_int_equal(p.window, 0);
	for (int i = 0; i < 10; i++) {
		mc_busypoll_slept(&p, 1 * US);
		mc_busypoll_missed(&p);
		mc_busypoll_slept(&p, 10 * US);
	}
	assert_int_equal(p.window, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_at_start),
		cmocka_unit_test(test_grows_to_cover_short_sleeps),
		cmocka_unit_test(test_shrinks_when_polls_miss),
		cmocka_unit_test(test_zero_is_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
