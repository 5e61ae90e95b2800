/* test-map.c - the server's private hash map against a plain array oracle. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "map.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_put_find_del_against_oracle(void **state)
{
	(void)state;
	enum { KEYS = 3000 };
	static uint64_t val[KEYS + 1];
	static char present[KEYS + 1];
	struct map m = { 0 };
	uint64_t s = 12345;
	for (int round = 0; round < 200000; round++) {
		uint64_t k = 1 + rnd(&s) % KEYS;
		switch (rnd(&s) % 3) {
		case 0:
		case 1:
			val[k] = rnd(&s);
			present[k] = 1;
			assert_int_equal(map_put(&m, k, val[k]), 0);
			break;
		case 2:
			present[k] = 0;
			map_del(&m, k);
			break;
		}
		if (round % 10000 == 0) {
			size_t n = 0;
			for (uint64_t q = 1; q <= KEYS; q++) {
				uint64_t *v = map_find(&m, q);
				if (present[q]) {
					assert_non_null(v);
					assert_int_equal(*v, val[q]);
					n++;
				} else {
					assert_null(v);
				}
			}
			assert_int_equal(m.n, n);
			assert_true(m.n * 2 <= m.cap);
		}
	}
	map_clear(&m);
	assert_int_equal(m.n, 0);
	assert_null(map_find(&m, 1));
	map_free(&m);
}

/* Keys that differ only in their high bits, half of them deleted: the
 * others must still be found (deletion must not cut probe chains). */
static void test_colliding_keys(void **state)
{
	(void)state;
	struct map m = { 0 };
	for (uint64_t k = 1; k <= 32; k++)
		assert_int_equal(map_put(&m, k << 40, k), 0);
	for (uint64_t k = 1; k <= 32; k += 2)
		map_del(&m, k << 40);
	for (uint64_t k = 1; k <= 32; k++) {
		uint64_t *v = map_find(&m, k << 40);
		if (k % 2)
			assert_null(v);
		else
			assert_true(v && *v == k);
	}
	map_free(&m);
}

static void test_reserve_makes_put_infallible(void **state)
{
	(void)state;
	struct map m = { 0 };
	assert_null(map_find(&m, 7));
	map_del(&m, 7); /* on an empty map */
	for (uint64_t k = 1; k <= 1000; k++) {
		assert_int_equal(map_reserve(&m), 0);
		size_t cap = m.cap;
		assert_int_equal(map_put(&m, k, k * 2), 0);
		assert_int_equal(m.cap, cap); /* no growth after the reserve */
	}
	map_free(&m);
}

/* A clear after a burst cuts the table to what the keys held last need,
 * so the next clears cost that; keys held in steady numbers keep their
 * table from clear to clear; the map works the same after either. */
static void test_clear_follows_last_use(void **state)
{
	(void)state;
	struct map m = { 0 };
	for (uint64_t k = 1; k <= 100000; k++)
		assert_int_equal(map_put(&m, k, k), 0);
	size_t big = m.cap;
	assert_true(big >= 200000);
	map_clear(&m);                  /* what it held needed this much */
	assert_int_equal(m.cap, big);
	assert_int_equal(m.n, 0);
	assert_null(map_find(&m, 5));
	for (uint64_t k = 1; k <= 10; k++)
		assert_int_equal(map_put(&m, k * 7, k), 0);
	map_clear(&m);                  /* ten keys in a table for 100,000 */
	assert_true(m.cap <= 64);
	assert_int_equal(m.n, 0);
	for (uint64_t k = 1; k <= 10; k++)
		assert_null(map_find(&m, k * 7));
	/* Steady use: the table stays, and so do the answers. */
	for (int round = 0; round < 5; round++) {
		for (uint64_t k = 1; k <= 3000; k++)
			assert_int_equal(map_put(&m, k + (uint64_t)round, k), 0);
		size_t cap = m.cap;
		for (uint64_t k = 1; k <= 3000; k++) {
			uint64_t *v = map_find(&m, k + (uint64_t)round);
			assert_true(v && *v == k);
		}
		map_clear(&m);
		if (round > 0)
			assert_int_equal(m.cap, cap);
	}
	map_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_find_del_against_oracle),
		cmocka_unit_test(test_colliding_keys),
		cmocka_unit_test(test_reserve_makes_put_infallible),
		cmocka_unit_test(test_clear_follows_last_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
