/* test-extent_state.c - unit tests of the extent-state trees and their
 * arenas (server/extent_state.c, server/extent.c): split and merge, lock
 * conflicts, bad input, the edges of the offset space, a random sequence
 * checked against a per-byte model with the canonical form verified after
 * every step, failure without change when the segment is full, and
 * teardown of a whole tree without visiting its records. */
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

#include "extent_state.h"
#include "extent_fixture.h"

#define MIB (1ull << 20)

/* A segment of size bytes and the state tree of inode 42 in it. */
static struct fx *fx_new(uint64_t size)
{
	struct fx *f = fx_alloc(size);
	assert_int_equal(extent_state_tree(&f->c, 42, true, &f->t), 0);
	return f;
}

/* In-order walk of the treap: keys in (lo, hi), heap order by the list
 * position's priority is implied by shape; checks it matches the list. */
static void treap_walk(const struct fx *f, mc_eref n, mc_eref *expect, uint32_t *seen)
{
	if (!n)
		return;
	treap_walk(f, R(f, n)->left, expect, seen);
	assert_int_equal(n, *expect);
	*expect = R(f, n)->next;
	(*seen)++;
	treap_walk(f, R(f, n)->right, expect, seen);
}

/* Invariants 1-3 of extent_state.h. */
static void check_canonical(const struct fx *f)
{
	const struct mc_etree *t = etree_at(&f->c, f->t);
	assert_int_equal(atomic_load(&t->seq) & 1, 0);
	uint32_t n = 0;
	mc_eref prev = 0;
	for (mc_eref o = t->first; o; o = R(f, o)->next) {
		const struct mc_estate *r = R(f, o);
		assert_int_equal(r->prev, prev);
		assert_true(r->start <= r->end);
		assert_int_not_equal(r->bits, 0);
		assert_int_equal(r->owner != 0, (r->bits & MC_ES_LOCKED) != 0);
		if (prev) {
			const struct mc_estate *p = R(f, prev);
			assert_true(p->end < r->start);
			if (p->end + 1 == r->start)
				assert_true(p->bits != r->bits || p->owner != r->owner);
		}
		prev = o;
		n++;
	}
	assert_int_equal(t->last, prev);
	assert_int_equal(t->count, n);
	mc_eref expect = t->first;
	uint32_t seen = 0;
	treap_walk(f, t->root, &expect, &seen);
	assert_int_equal(seen, n);
	assert_int_equal(expect, 0);
}

static uint32_t nrecords(const struct fx *f)
{
	return etree_at(&f->c, f->t)->count;
}

/* One range split in three and merged back whole. */
static void test_split_merge(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	assert_int_equal(estate_set(&f->c, f->t, 0, 99, MC_ES_DIRTY, 0), 0);
	assert_int_equal(nrecords(f), 1);
	assert_int_equal(estate_set(&f->c, f->t, 10, 19, MC_ES_WRITEBACK, 0), 0);
	check_canonical(f);
	assert_int_equal(nrecords(f), 3);
	assert_int_equal(f->c.splits, 2);
	assert_int_equal(estate_clear(&f->c, f->t, 10, 19, MC_ES_WRITEBACK, 0), 0);
	check_canonical(f);
	assert_int_equal(nrecords(f), 1);
	assert_int_equal(f->c.merges, 2);
	/* Setting bits a range has already splits nothing. */
	assert_int_equal(estate_set(&f->c, f->t, 20, 29, MC_ES_DIRTY, 0), 0);
	assert_int_equal(f->c.splits, 2);
	/* Adjacent sets merge; clearing the middle leaves two. */
	assert_int_equal(estate_set(&f->c, f->t, 100, 199, MC_ES_DIRTY, 0), 0);
	assert_int_equal(nrecords(f), 1);
	assert_int_equal(estate_clear(&f->c, f->t, 50, 149, MC_ES_DIRTY, 0), 0);
	check_canonical(f);
	assert_int_equal(nrecords(f), 2);
	uint64_t s = 0, e = 0;
	assert_int_equal(estate_find(&f->c, f->t, 0, MC_ES_DIRTY, &s, &e), 0);
	assert_int_equal(s, 0);
	assert_int_equal(e, 49);
	assert_int_equal(estate_find(&f->c, f->t, 50, MC_ES_DIRTY, &s, &e), 0);
	assert_int_equal(s, 150);
	assert_int_equal(e, 199);
	assert_int_equal(estate_find(&f->c, f->t, 200, MC_ES_DIRTY, &s, &e), -ENOENT);
	assert_int_equal(s, 150);
	assert_int_equal(f->c.states, 2);
	fx_free(f);
}

/* LOCKED is exclusive and does not nest; only its owner clears it; a
 * failed call changes nothing; an owner's locks go with it. */
static void test_locks(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	assert_int_equal(estate_set(&f->c, f->t, 0, 4095, MC_ES_LOCKED, 1), 0);
	assert_int_equal(estate_set(&f->c, f->t, 8192, 12287, MC_ES_LOCKED | MC_ES_DIRTY, 1), 0);
	assert_int_equal(estate_set(&f->c, f->t, 4096, 8191, MC_ES_LOCKED, 2), 0);
	check_canonical(f);
	assert_int_equal(nrecords(f), 3);
	uint32_t n = nrecords(f);
	assert_int_equal(estate_set(&f->c, f->t, 4000, 5000, MC_ES_LOCKED, 3), -EAGAIN);
	assert_int_equal(estate_set(&f->c, f->t, 0, 0, MC_ES_LOCKED, 1), -EAGAIN);
	assert_int_equal(estate_clear(&f->c, f->t, 0, 8191, MC_ES_LOCKED, 1), -EPERM);
	assert_int_equal(nrecords(f), n);
	assert_int_equal(estate_test(&f->c, f->t, 0, 12287, MC_ES_LOCKED, true), 1);
	/* Other bits over a locked range are anyone's. */
	assert_int_equal(estate_set(&f->c, f->t, 0, 99, MC_ES_UPTODATE, 9), 0);
	check_canonical(f);
	assert_int_equal(estate_unlock_owner(&f->c, f->t, 1), 3);
	check_canonical(f);
	assert_int_equal(estate_test(&f->c, f->t, 0, 4095, MC_ES_LOCKED, false), 0);
	assert_int_equal(estate_test(&f->c, f->t, 4096, 8191, MC_ES_LOCKED, true), 1);
	assert_int_equal(estate_test(&f->c, f->t, 8192, 12287, MC_ES_DIRTY, true), 1);
	assert_int_equal(estate_set(&f->c, f->t, 0, 4095, MC_ES_LOCKED, 3), 0);
	assert_int_equal(estate_clear(&f->c, f->t, 4096, 8191, MC_ES_LOCKED, 2), 0);
	assert_int_equal(estate_clear(&f->c, f->t, 0, 4095, MC_ES_LOCKED, 3), 0);
	check_canonical(f);
	assert_int_equal(estate_test(&f->c, f->t, 0, UINT64_MAX, MC_ES_LOCKED, false), 0);
	fx_free(f);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	uint64_t s = 7, e = 7;
	assert_int_equal(estate_set(&f->c, f->t, 10, 9, MC_ES_DIRTY, 0), -EINVAL);
	assert_int_equal(estate_set(&f->c, f->t, 0, 9, 0, 0), -EINVAL);
	assert_int_equal(estate_set(&f->c, f->t, 0, 9, MC_ES_LOCKED, 0), -EINVAL);
	assert_int_equal(estate_clear(&f->c, f->t, 10, 9, MC_ES_DIRTY, 0), -EINVAL);
	assert_int_equal(estate_clear(&f->c, f->t, 0, 9, 0, 0), -EINVAL);
	assert_int_equal(estate_test(&f->c, f->t, 10, 9, MC_ES_DIRTY, true), -EINVAL);
	assert_int_equal(estate_test(&f->c, f->t, 0, 9, 0, true), -EINVAL);
	assert_int_equal(estate_find(&f->c, f->t, 0, 0, &s, &e), -EINVAL);
	assert_int_equal(estate_find(&f->c, f->t, 0, MC_ES_DIRTY, &s, &e), -ENOENT);
	assert_int_equal(s, 7);
	assert_int_equal(nrecords(f), 0);
	/* Clearing what is not there is no error and makes no record. */
	assert_int_equal(estate_clear(&f->c, f->t, 0, UINT64_MAX, MC_ES_DIRTY, 0), 0);
	assert_int_equal(nrecords(f), 0);
	fx_free(f);
}

/* The last byte of the offset space. */
static void test_edges(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	const uint64_t M = UINT64_MAX;
	assert_int_equal(estate_set(&f->c, f->t, 0, M, MC_ES_DIRTY, 0), 0);
	assert_int_equal(estate_set(&f->c, f->t, M, M, MC_ES_UPTODATE, 0), 0);
	assert_int_equal(estate_set(&f->c, f->t, M - 1, M - 1, MC_ES_UPTODATE, 0), 0);
	check_canonical(f);
	assert_int_equal(nrecords(f), 2);
	assert_int_equal(estate_test(&f->c, f->t, M - 1, M, MC_ES_UPTODATE | MC_ES_DIRTY, true), 1);
	uint64_t s, e;
	assert_int_equal(estate_find(&f->c, f->t, 5, MC_ES_UPTODATE, &s, &e), 0);
	assert_int_equal(s, M - 1);
	assert_true(e == M);
	assert_int_equal(estate_clear(&f->c, f->t, 0, M, MC_ES_DIRTY | MC_ES_UPTODATE, 0), 0);
	check_canonical(f);
	assert_int_equal(nrecords(f), 0);
	fx_free(f);
}

/* ---- the model ------------------------------------------------------- */

#define MB 384u  /* bytes modelled */

struct model {
	uint32_t bits[MB];
	uint32_t owner[MB];
};

static uint32_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 11);
}

static int model_apply(struct model *m, uint32_t a, uint32_t b, uint32_t bits, uint32_t owner,
                       bool set)
{
	for (uint32_t i = a; i <= b; i++) {
		if (!(m->bits[i] & bits & MC_ES_LOCKED))
			continue;
		if (set)
			return -EAGAIN;
		if (m->owner[i] != owner)
			return -EPERM;
	}
	for (uint32_t i = a; i <= b; i++) {
		if (set) {
			if (bits & MC_ES_LOCKED)
				m->owner[i] = owner;
			m->bits[i] |= bits;
		} else {
			m->bits[i] &= ~bits;
			if (!(m->bits[i] & MC_ES_LOCKED))
				m->owner[i] = 0;
		}
	}
	return 0;
}

static void check_model(const struct fx *f, const struct model *m)
{
	uint32_t pos = 0;
	const struct mc_etree *t = etree_at(&f->c, f->t);
	for (mc_eref o = t->first; o; o = R(f, o)->next) {
		const struct mc_estate *r = R(f, o);
		assert_true(r->end < MB);
		for (; pos < r->start; pos++)
			assert_int_equal(m->bits[pos], 0);
		for (; pos <= r->end; pos++) {
			assert_int_equal(m->bits[pos], r->bits);
			assert_int_equal(m->owner[pos], r->owner);
		}
	}
	for (; pos < MB; pos++)
		assert_int_equal(m->bits[pos], 0);
}

static int model_test(const struct model *m, uint32_t a, uint32_t b, uint32_t bits, bool all)
{
	for (uint32_t i = a; i <= b; i++) {
		if (all && (m->bits[i] & bits) != bits)
			return 0;
		if (!all && (m->bits[i] & bits))
			return 1;
	}
	return all;
}

static int model_find(const struct model *m, uint32_t from, uint32_t bits, uint64_t *s, uint64_t *e)
{
	uint32_t i = from;
	while (i < MB && !(m->bits[i] & bits))
		i++;
	if (i == MB)
		return -ENOENT;
	*s = i;
	while (i + 1 < MB && (m->bits[i + 1] & bits))
		i++;
	*e = i;
	return 0;
}

/* Random set/clear/test/find/unlock over MB bytes; after every step the
 * tree is canonical and equals the model byte for byte. */
static void test_model(void **state)
{
	(void)state;
	static const uint32_t pool[] = { MC_ES_DIRTY, MC_ES_DELALLOC, MC_ES_LOCKED,
	                                 MC_ES_WRITEBACK, MC_ES_APP_FIRST };
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct fx *f = fx_new(MIB);
		struct model *m = calloc(1, sizeof(*m));
		assert_non_null(m);
		uint64_t x = seed * 0x9e3779b97f4a7c15ull;
		uint32_t hinted = 0;
		for (int step = 0; step < 4000; step++) {
			uint32_t op = rnd(&x) % 16;
			uint32_t a = rnd(&x) % MB;
			uint32_t len = rnd(&x) % 4 == 0 ? rnd(&x) % MB : rnd(&x) % 12;
			uint32_t b = a + len < MB ? a + len : MB - 1;
			if (op < 3 && hinted < MB - 1) {   /* sequential, as a writer does */
				a = hinted;
				uint32_t l = rnd(&x) % 4;
				b = a + l < MB ? a + l : MB - 1;
				hinted = b + 1 < MB ? b + 1 : 0;
			}
			uint32_t bits = pool[rnd(&x) % 5] | (rnd(&x) % 3 == 0 ? pool[rnd(&x) % 5] : 0);
			uint32_t owner = 1 + rnd(&x) % 2;
			if (op < 7) {
				int want = model_apply(m, a, b, bits, owner, true);
				assert_int_equal(estate_set(&f->c, f->t, a, b, bits, owner), want);
			} else if (op < 13) {
				int want = model_apply(m, a, b, bits, owner, false);
				assert_int_equal(estate_clear(&f->c, f->t, a, b, bits, owner), want);
			} else if (op == 13) {
				estate_unlock_owner(&f->c, f->t, owner);
				for (uint32_t i = 0; i < MB; i++)
					if (m->owner[i] == owner) {
						m->bits[i] &= ~MC_ES_LOCKED;
						m->owner[i] = 0;
					}
			} else if (op == 14) {
				bool all = rnd(&x) & 1;
				assert_int_equal(estate_test(&f->c, f->t, a, b, bits, all),
				                 model_test(m, a, b, bits, all));
			} else {
				uint64_t s1 = 0, e1 = 0, s2 = 0, e2 = 0;
				int want = model_find(m, a, bits, &s2, &e2);
				assert_int_equal(estate_find(&f->c, f->t, a, bits, &s1, &e1), want);
				assert_true(s1 == s2 && e1 == e2);
			}
			check_canonical(f);
			check_model(f, m);
		}
		assert_int_equal(f->c.states, nrecords(f));
		free(m);
		fx_free(f);
	}
}

/* ---- arenas ------------------------------------------------------------ */

/* n alternating records at 16 KiB granularity (nothing merges). */
static void build_alternating(struct fx *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t bits = i & 1 ? MC_ES_DIRTY : MC_ES_UPTODATE;
		assert_int_equal(estate_set(&f->c, f->t, (uint64_t)i << 14,
		                            ((uint64_t)i << 14) + 16383, bits, 0), 0);
	}
	assert_int_equal(nrecords(f), n);
}

/* Freeing a tree visits no record: its head's seq moves, its chunks go back
 * whole, and a new tree of the same size takes them without a new page. */
static void test_bulk_free(void **state)
{
	(void)state;
	struct fx *f = fx_new(16 * MIB);
	build_alternating(f, 20000);
	check_canonical(f);
	uint64_t splits = f->c.splits, merges = f->c.merges;
	assert_int_equal(f->c.merges, 0);
	uint64_t bytes = extent_cache_bytes(&f->c);
	/* 40 bytes of record plus the chunk tail's share, the head's slots
	 * and one chunk of slack: at most 48 bytes a record. */
	assert_true(bytes <= (uint64_t)(20000 + MC_ES_HEAD_SLOTS + MC_ES_SLOTS) * MC_ECHUNK_SIZE /
	                         MC_ES_SLOTS);
	assert_true(bytes <= 20000ull * 48);
	uint64_t pages = f->s->raw_pages;
	const struct mc_etree *t = etree_at(&f->c, f->t);
	uint32_t seq = atomic_load(&t->seq);
	/* Poison the records: a free that walked them would trip over it. */
	for (mc_eref o = t->first; o;) {
		struct mc_estate *r = erec_at(&f->c, o);
		mc_eref next = r->next;
		r->left = r->right = r->prev = r->next = 0xffffffffu;
		o = next;
	}
	mc_off_t again;
	assert_int_equal(extent_state_tree(&f->c, 42, false, &again), 0);
	assert_int_equal(again, f->t);
	assert_int_equal(extent_ino_drop(&f->c, 42), 20000);
	assert_int_equal(extent_state_tree(&f->c, 42, false, &again), -ENOENT);
	assert_int_equal(extent_ino_drop(&f->c, 42), 0);
	assert_int_equal(atomic_load(&t->seq), seq + 2);
	assert_int_equal(f->c.splits, splits);
	assert_int_equal(f->c.merges, merges);
	assert_int_equal(f->c.states, 0);
	assert_int_equal(f->c.evictions, 1);
	assert_int_equal(f->c.evicted_states, 20000);
	assert_int_equal(f->c.trees, 0);
	assert_int_equal(extent_cache_bytes(&f->c), 0);
	assert_int_equal(extent_state_tree(&f->c, 43, true, &f->t), 0);
	build_alternating(f, 20000);
	check_canonical(f);
	assert_int_equal(f->s->raw_pages, pages);
	fx_free(f);
}

/* Several trees side by side keep to their own arenas. */
static void test_trees_apart(void **state)
{
	(void)state;
	struct fx *f = fx_new(4 * MIB);
	mc_off_t first = f->t, other;
	assert_int_equal(extent_state_tree(&f->c, 7, true, &other), 0);
	for (uint32_t i = 0; i < 500; i++) {
		f->t = i & 1 ? other : first;
		assert_int_equal(estate_set(&f->c, f->t, i * 4, i * 4 + 1, MC_ES_DIRTY, 0), 0);
	}
	assert_int_equal(extent_ino_drop(&f->c, 7), 250);
	f->t = first;
	check_canonical(f);
	assert_int_equal(nrecords(f), 250);
	assert_int_equal(f->c.states, 250);
	assert_int_equal(estate_test(&f->c, f->t, 4, 5, MC_ES_DIRTY, false), 0);
	assert_int_equal(estate_test(&f->c, f->t, 8, 9, MC_ES_DIRTY, true), 1);
	fx_free(f);
}

/* A full segment fails the call and changes nothing; clearing still works
 * when it needs no split. */
static void test_full(void **state)
{
	(void)state;
	struct fx *f = fx_new(MIB);
	uint32_t i = 0;
	int rc;
	while ((rc = estate_set(&f->c, f->t, (uint64_t)i * 2, (uint64_t)i * 2, MC_ES_DIRTY, 0)) == 0)
		i++;
	assert_int_equal(rc, -ENOSPC);
	assert_true(i > 1000);
	check_canonical(f);
	uint32_t n = nrecords(f);
	assert_int_equal(n, i);
	/* A set over many gaps fails whole. */
	assert_int_equal(estate_set(&f->c, f->t, 0, (uint64_t)i * 2, MC_ES_UPTODATE, 0), -ENOSPC);
	check_canonical(f);
	assert_int_equal(nrecords(f), n);
	assert_int_equal(estate_test(&f->c, f->t, 0, (uint64_t)i * 2, MC_ES_UPTODATE, false), 0);
	/* Clearing whole records frees slots, and then sets work again. */
	assert_int_equal(estate_clear(&f->c, f->t, 0, 99, MC_ES_DIRTY, 0), 0);
	check_canonical(f);
	assert_int_equal(estate_set(&f->c, f->t, 1, 1, MC_ES_DIRTY, 0), 0);
	check_canonical(f);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_merge),
		cmocka_unit_test(test_locks),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_bulk_free),
		cmocka_unit_test(test_trees_apart),
		cmocka_unit_test(test_full),
	};
	return cmocka_run_group_tests_name("extent_state", tests, NULL, NULL);
}
