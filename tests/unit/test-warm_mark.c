/* test-warm_mark.c - unit tests of warming (server/ns_warm.c) over a real
 * LMDB store and segment: the lookups a reader's mark lets ns_warm_dir
 * skip (note 5) are skipped only while no name of its batch can be
 * cached -- a name removed, or one child dropped and another cached
 * meanwhile, is never brought back --, and names cached before the first
 * batch are looked up each in its half. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fsck.h"
#include "ns.h"
#include "shrink.h"

#include "warm_fixture.h"

static int setup(void **state)
{
	return ns_fixture_setup(state, "test-warm_mark", 16 * MIB);
}

static int teardown(void **state)
{
	return ns_fixture_teardown(state);
}

/* The two halves of /d, the second read before a change to the cache and
 * inserted after it with the mark the first left; *second gets the
 * second's result. */
struct halves {
	uint64_t dir;
	struct ns_warm_mark mark;
	struct batch second;
};

/* The first half, with the ncached names of cached (nul-separated)
 * cached in /d first (by a lookup, as a miss does); the first batch makes
 * want_lookups lookups and inserts want_added names. */
static void first_half_with(struct fx *f, struct halves *h, const char *cached, size_t ncached,
                            size_t want_added, size_t want_lookups)
{
	static struct batch first;
	struct ns_warm_res res;
	h->dir = make_dir(f, NFILES);
	const char *name = cached;
	for (size_t i = 0; i < ncached; i++, name += strlen(name) + 1) {
		char p[300];
		ns_attr a;
		snprintf(p, sizeof(p), "/d/%s", name);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), false, &a), 0);
	}
	memset(&h->mark, 0, sizeof(h->mark));
	read_batch(f, h->dir, NULL, BATCH, &first);
	assert_int_equal(first.n, BATCH);
	assert_int_equal(ns_warm_dir(f->ns, NULL, h->dir, first.v, first.n, false, &h->mark, &res), 0);
	assert_int_equal(res.added, want_added);
	assert_int_equal(res.lookups, want_lookups);
	assert_int_equal(ns_fixture_counts(f).positive, 1 + want_added + ncached);
	/* The next batch may skip its lookups, unless this one could not. */
	assert_true((h->mark.dir != 0) == (want_lookups < BATCH));
	read_batch(f, h->dir, first.v[BATCH - 1].name, NFILES, &h->second);
	assert_int_equal(h->second.n, NFILES - BATCH);
}

static void first_half(struct fx *f, struct halves *h)
{
	first_half_with(f, h, "", 0, BATCH, 0);
}

static void second_half(struct fx *f, struct halves *h, size_t want_added, size_t want_lookups)
{
	struct ns_warm_res res;
	assert_int_equal(ns_warm_dir(f->ns, NULL, h->dir, h->second.v, h->second.n, true, &h->mark, &res),
	                 0);
	assert_int_equal(res.processed, h->second.n);
	assert_int_equal(res.added, want_added);
	assert_int_equal(res.lookups, want_lookups);
}

static void is_gone(struct fx *f, const char *path)
{
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P(path), false, &a), -ENOENT);
}

/* Every name of /d cached, the directory complete, the namespace clean. */
static void all_warmed(struct fx *f)
{
	assert_int_equal(ns_fixture_counts(f).positive, 1 + NFILES);
	assert_int_equal(ns_fixture_counts(f).dirs_complete, 1);
	struct fsck_report rep = { 0 };
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	fsck_report_free(&rep);
}

/* Nothing changed between the halves: the second inserts all its names
 * (its lookups skipped) and completes the directory. */
static void test_mark_unchanged(void **state)
{
	struct fx *f = *state;
	struct halves h;
	first_half(f, &h);
	second_half(f, &h, NFILES - BATCH, 0);
	all_warmed(f);
}

/* A name of the second half removed after it was read (the store still
 * has it until the commit): the removal's negative entry is a child linked
 * since the mark, so that name is looked up (and the others are not) and
 * it stays removed. */
static void test_mark_sees_added_child(void **state)
{
	struct fx *f = *state;
	struct halves h;
	first_half(f, &h);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f0070")), 0);
	second_half(f, &h, NFILES - BATCH - 1, 1);
	is_gone(f, "/d/f0070");
	assert_int_equal(ns_fixture_counts(f).positive, NFILES);
	commit_all(f);
	is_gone(f, "/d/f0070");
}

/* The same removal, and one child of the first half evicted: a dentry
 * was dropped since the mark, so every name is looked up. */
static void test_mark_sees_drop(void **state)
{
	struct fx *f = *state;
	struct halves h;
	first_half(f, &h);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f0070")), 0);
	uint64_t evicted = 0;
	for (int i = 0; i < 64 && evicted == 0; i++)
		evicted = shrink_now(f->ns, 0, 1);
	assert_int_equal(evicted, 1);
	assert_int_equal(ns_fixture_counts(f).positive + ns_fixture_counts(f).negative, 1 + BATCH);
	second_half(f, &h, NFILES - BATCH - 1, NFILES - BATCH);
	is_gone(f, "/d/f0070");
	assert_int_equal(ns_fixture_counts(f).positive, NFILES - 1);
}

/* Names cached before the first batch (a miss), one in each half: they
 * are the mark's foreign children, looked up each in its half, and no
 * other name is; the directory ends complete and clean. */
static void test_mark_foreign_children(void **state)
{
	struct fx *f = *state;
	struct halves h;
	first_half_with(f, &h, "f0010\0f0070", 2, BATCH - 1, 1);
	second_half(f, &h, NFILES - BATCH - 1, 1);
	all_warmed(f);
}

/* More foreign children than the mark keeps: every name is looked up. */
static void test_mark_too_many_foreign(void **state)
{
	struct fx *f = *state;
	struct halves h;
	char names[(NS_WARM_FOREIGN + 1) * 6];
	for (int i = 0; i <= NS_WARM_FOREIGN; i++)
		snprintf(names + i * 6, 6, "f%04d", i);
	first_half_with(f, &h, names, NS_WARM_FOREIGN + 1, BATCH - NS_WARM_FOREIGN - 1, BATCH);
	second_half(f, &h, NFILES - BATCH, NFILES - BATCH);
	assert_int_equal(ns_fixture_counts(f).positive, 1 + NFILES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mark_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mark_sees_added_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mark_sees_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mark_foreign_children, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mark_too_many_foreign, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
