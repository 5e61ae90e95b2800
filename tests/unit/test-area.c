/* test-area.c - the client area, with the server's view of it: whatever a
 * client writes into the memory it maps read-write, slot bookkeeping stays
 * in bounds and the totals stay bounded, never wrap and never go back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "area.h"

#define MIB (1ull << 20)

struct seen {
	unsigned n;
	struct area_totals sum;
};

static void count_each(void *arg, int32_t pid, const struct area_totals *t)
{
	struct seen *s = arg;
	(void)pid;
	s->n++;
	s->sum.hits += t->hits;
	s->sum.rpcs += t->rpcs;
}

/* A client's own counters, at slot i, as the client sees them. */
static struct mc_client_slot *client_slot(struct area *a, uint32_t i)
{
	return &a->slots[i];
}

/* Slots are handed out and taken back; totals follow. */
static void test_slots_and_totals(void **state)
{
	(void)state;
	struct area *a;
	assert_int_equal(area_create(16 * MIB, 4, &a), 0);
	uint32_t s[5];
	for (int i = 0; i < 4; i++)
		assert_int_equal(area_slot_get(a, 100 + i, &s[i]), 0);
	assert_int_equal(area_slot_get(a, 200, &s[4]), -ENOSPC);
	atomic_store(&client_slot(a, s[0])->hits, 5);
	atomic_store(&client_slot(a, s[1])->hits, 7);
	struct area_totals t;
	area_totals(a, &t);
	assert_int_equal(t.hits, 12);
	area_slot_put(a, s[0]);
	area_totals(a, &t);
	assert_int_equal(t.hits, 12);          /* departed clients still count */
	struct seen sn = { 0 };
	area_each(a, count_each, &sn);
	assert_int_equal(sn.n, 3);
	assert_int_equal(sn.sum.hits, 7);
	area_destroy(a);
}

/* Every byte of the area set to 0xff (what a hostile client can do): the
 * server must not read or write out of bounds, totals must not wrap. */
static void test_garbage_everywhere(void **state)
{
	(void)state;
	struct area *a;
	assert_int_equal(area_create(16 * MIB, 8, &a), 0);
	uint32_t s[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(area_slot_get(a, 10 + i, &s[i]), 0);
	area_slot_put(a, s[1]);                /* a leaked, then freed slot */
	memset(a->base, 0xff, a->size);
	struct area_totals t;
	area_totals(a, &t);
	assert_true(t.hits < (1ull << 62));
	assert_true(t.rpcs < (1ull << 62));
	struct seen sn = { 0 };
	area_each(a, count_each, &sn);
	assert_int_equal(sn.n, 2);
	/* Hellos after the scribble take only the slots that exist. */
	uint32_t x;
	int got = 0;
	while (area_slot_get(a, 99, &x) == 0) {
		assert_true(x < 8);
		got++;
	}
	assert_int_equal(got, 6);
	for (uint32_t i = 0; i < 8; i++)
		area_slot_put(a, i);
	area_slot_put(a, 0xffffffffu);         /* out of range: ignored */
	area_totals(a, &t);
	assert_true(t.hits < (1ull << 62));
	area_destroy(a);
}

/* A client that lowers its counters cannot make the totals go backwards;
 * one that raises them to the maximum cannot make them wrap, even over many
 * departures. */
static void test_totals_monotonic_saturating(void **state)
{
	(void)state;
	struct area *a;
	assert_int_equal(area_create(16 * MIB, 2, &a), 0);
	uint32_t s;
	assert_int_equal(area_slot_get(a, 1, &s), 0);
	atomic_store(&client_slot(a, s)->hits, 1000);
	struct area_totals t0, t1;
	area_totals(a, &t0);
	assert_int_equal(t0.hits, 1000);
	atomic_store(&client_slot(a, s)->hits, 3);
	area_totals(a, &t1);
	assert_true(t1.hits >= t0.hits);
	area_slot_put(a, s);
	uint64_t prev = 0;
	for (int i = 0; i < 100; i++) {
		assert_int_equal(area_slot_get(a, 1, &s), 0);
		atomic_store(&client_slot(a, s)->hits, UINT64_MAX);
		area_totals(a, &t1);
		assert_true(t1.hits >= prev);
		prev = t1.hits;
		area_slot_put(a, s);
		area_totals(a, &t1);
		assert_true(t1.hits >= prev);
		prev = t1.hits;
	}
	area_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_and_totals),
		cmocka_unit_test(test_garbage_everywhere),
		cmocka_unit_test(test_totals_monotonic_saturating),
	};
	return cmocka_run_group_tests_name("area", tests, NULL, NULL);
}
