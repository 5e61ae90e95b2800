/* test-extent_map.c - unit tests of the extent maps (server/extent_map.c):
 * set replacing overlaps, punches that trim and split, lookups, bad input,
 * a full segment, and a random sequence checked byte for byte against a
 * model after every step. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "extent_map.h"
#include "extent_fixture.h"

#define MIB (1ull << 20)

static struct fx *fx_new(uint64_t size)
{
	struct fx *f = fx_alloc(size);
	assert_int_equal(extent_tree_new(&f->c, 5, MC_EREF_MAP, &f->t), 0);
	return f;
}

/* Sorted, not overlapping, list and count agree. */
static uint32_t check_shape(const struct fx *f)
{
	const struct mc_etree *t = etree_at(&f->c, f->t);
	uint32_t n = 0;
	mc_eref prev = 0;
	for (mc_eref o = t->first; o; o = R(f, o)->next) {
		const struct mc_estate *r = R(f, o);
		assert_int_equal(r->prev, prev);
		assert_true(r->start <= r->end);
		if (prev)
			assert_true(R(f, prev)->end < r->start);
		prev = o;
		n++;
	}
	assert_int_equal(t->last, prev);
	assert_int_equal(t->count, n);
	return n;
}

static void test_set_punch(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	struct emap_ext e[8];
	assert_int_equal(emap_set(&f->c, f->t, 0, 100, 1000, 1), 0);
	assert_int_equal(emap_set(&f->c, f->t, 100, 100, 5000, 2), 0);
	/* Over both: trims the first, cuts the second's front. */
	assert_int_equal(emap_set(&f->c, f->t, 50, 100, 9000, 3), 0);
	assert_int_equal(check_shape(f), 3);
	assert_int_equal(emap_lookup(&f->c, f->t, 0, 0, e, 8), 3);
	assert_true(e[0].off == 0 && e[0].len == 50 && e[0].phys == 1000 && e[0].flags == 1);
	assert_true(e[1].off == 50 && e[1].len == 100 && e[1].phys == 9000 && e[1].flags == 3);
	assert_true(e[2].off == 150 && e[2].len == 50 && e[2].phys == 5050 && e[2].flags == 2);
	/* A punch inside one extent splits it. */
	assert_int_equal(emap_punch(&f->c, f->t, 60, 69), 0);
	assert_int_equal(emap_lookup(&f->c, f->t, 0, 0, e, 8), 4);
	assert_true(e[1].off == 50 && e[1].len == 10 && e[1].phys == 9000);
	assert_true(e[2].off == 70 && e[2].len == 80 && e[2].phys == 9020);
	/* Lookups: overlapping extents, whole; more than max counted. */
	assert_int_equal(emap_lookup(&f->c, f->t, 65, 1, e, 8), 0);
	assert_int_equal(emap_lookup(&f->c, f->t, 49, 2, e, 8), 2);
	assert_int_equal(emap_lookup(&f->c, f->t, 0, 0, e, 1), 4);
	assert_int_equal(e[0].off, 0);
	/* Punch to the end (a truncation), then everything. */
	assert_int_equal(emap_punch(&f->c, f->t, 100, UINT64_MAX), 0);
	assert_int_equal(emap_lookup(&f->c, f->t, 0, 0, e, 8), 3);
	assert_int_equal(e[2].off + e[2].len, 100);
	assert_int_equal(f->c.mapped, 3);
	assert_int_equal(emap_punch(&f->c, f->t, 0, UINT64_MAX), 0);
	assert_int_equal(check_shape(f), 0);
	assert_int_equal(f->c.mapped, 0);
	/* The last byte of the space. */
	assert_int_equal(emap_set(&f->c, f->t, UINT64_MAX - 9, 10, 7, 0), 0);
	assert_int_equal(emap_lookup(&f->c, f->t, UINT64_MAX, 1, e, 8), 1);
	assert_int_equal(e[0].len, 10);
	fx_free(f);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	assert_int_equal(emap_set(&f->c, f->t, 0, 0, 1, 0), -EINVAL);
	assert_int_equal(emap_set(&f->c, f->t, UINT64_MAX, 2, 1, 0), -EINVAL);
	assert_int_equal(emap_punch(&f->c, f->t, 10, 9), -EINVAL);
	assert_int_equal(check_shape(f), 0);
	fx_free(f);
}

/* A full segment fails a set whole. */
static void test_full(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	uint64_t i = 0;
	int rc;
	while ((rc = emap_set(&f->c, f->t, i * 10, 5, i, 0)) == 0)
		i++;
	assert_int_equal(rc, -ENOSPC);
	uint32_t n = check_shape(f);
	assert_int_equal(n, i);
	/* Punches that split need a record each: they fail in turn, whole. */
	uint64_t k = 0;
	while ((rc = emap_punch(&f->c, f->t, k * 10 + 1, k * 10 + 2)) == 0)
		k++;
	assert_int_equal(rc, -ENOSPC);
	assert_true(k < 2);
	n = check_shape(f);
	assert_int_equal(n, i + k);
	struct emap_ext e[2];
	assert_int_equal(emap_lookup(&f->c, f->t, k * 10, 5, e, 2), 1);
	assert_true(e[0].off == k * 10 && e[0].len == 5);
	/* One that trims needs none. */
	assert_int_equal(emap_punch(&f->c, f->t, k * 10, k * 10 + 1), 0);
	assert_int_equal(check_shape(f), n);
	fx_free(f);
}

#define MB 300u

struct model {
	bool mapped[MB];
	uint64_t phys[MB];
	uint32_t flags[MB];
};

static uint32_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 11);
}

static void check_model(const struct fx *f, const struct model *m)
{
	check_shape(f);
	bool seen[MB] = { false };
	const struct mc_etree *t = etree_at(&f->c, f->t);
	for (mc_eref o = t->first; o; o = R(f, o)->next) {
		const struct mc_estate *r = R(f, o);
		assert_true(r->end < MB);
		for (uint64_t p = r->start; p <= r->end; p++) {
			assert_true(m->mapped[p]);
			assert_int_equal(m->phys[p], emap_at(&f->c, o)->phys + (p - r->start));
			assert_int_equal(m->flags[p], r->bits);
			seen[p] = true;
		}
	}
	for (uint32_t p = 0; p < MB; p++)
		assert_int_equal(seen[p], m->mapped[p]);
}

static void test_model(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct fx *f = fx_new(MIB);
		struct model *m = calloc(1, sizeof(*m));
		assert_non_null(m);
		uint64_t x = seed * 0x2545f4914f6cdd1dull;
		for (int step = 0; step < 3000; step++) {
			uint32_t op = rnd(&x) % 10;
			uint32_t a = rnd(&x) % MB;
			uint32_t l = 1 + (rnd(&x) % 4 == 0 ? rnd(&x) % MB : rnd(&x) % 16);
			if (a + l > MB)
				l = MB - a;
			if (op < 6) {
				uint64_t phys = (uint64_t)rnd(&x) << 20;
				uint32_t fl = rnd(&x) % 4;
				assert_int_equal(emap_set(&f->c, f->t, a, l, phys, fl), 0);
				for (uint32_t p = a; p < a + l; p++) {
					m->mapped[p] = true;
					m->phys[p] = phys + (p - a);
					m->flags[p] = fl;
				}
			} else if (op < 9) {
				assert_int_equal(emap_punch(&f->c, f->t, a, a + l - 1), 0);
				for (uint32_t p = a; p < a + l; p++)
					m->mapped[p] = false;
			} else {          /* truncate to a */
				assert_int_equal(emap_punch(&f->c, f->t, a, UINT64_MAX), 0);
				for (uint32_t p = a; p < MB; p++)
					m->mapped[p] = false;
			}
			check_model(f, m);
			/* A lookup returns exactly the extents over its range. */
			struct emap_ext e[MB];
			uint32_t qa = rnd(&x) % MB, ql = 1 + rnd(&x) % 32;
			size_t n = emap_lookup(&f->c, f->t, qa, ql, e, MB);
			for (size_t k = 0; k < n; k++) {
				assert_true(e[k].off < qa + ql && e[k].off + e[k].len > qa);
				if (k)
					assert_true(e[k - 1].off + e[k - 1].len <= e[k].off);
			}
			for (uint32_t p = qa; p < qa + ql && p < MB; p++) {
				bool in = false;
				for (size_t k = 0; k < n; k++)
					in |= p >= e[k].off && p < e[k].off + e[k].len;
				assert_int_equal(in, m->mapped[p]);
			}
		}
		assert_int_equal(f->c.mapped, check_shape(f));
		free(m);
		fx_free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_punch),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_model),
	};
	return cmocka_run_group_tests_name("extent_map", tests, NULL, NULL);
}
