/* test-shmprefix.c - the view's prefix cache (client/shmprefix.c) over a
 * segment built by the real server modules: a cached prefix is used only
 * while every slot it passed still is what it was, in a page of its type. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "ns_fixture.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shmview_impl.h"
#include "store.h"

/* The view over the fixture's segment (one test at a time). */
static struct view view;
static const struct cred root_cred = { .uid = 0, .gid = 0 };

static int setup(void **state)
{
	if (ns_fixture_setup(state, "mc-shmprefix", 8u << 20) < 0)
		return -1;
	struct fx *f = *state;
	memset(&view, 0, sizeof(view));
	if (view_init(&view, f->shm->base, f->shm->size) < 0)
		return -1;
	view_default_limits(&view.lim);
	return 0;
}

static int teardown(void **state)
{
	return ns_fixture_teardown(state);
}

#define P(s) (s), strlen(s)

static const struct prefix_entry *entry_for(struct fx *f, const char *key)
{
	size_t klen = strlen(key);
	for (unsigned k = 0; k < PREFIX_SLOTS; k++) {
		const struct prefix_entry *e = &view.prefixes[k];
		if (e->klen == klen && memcmp(e->key, key, klen) == 0)
			return e;
	}
	return NULL;
}

/* A page whose slots are all free may serve another type (mc_shm.h note
 * 2), and a cached prefix can outlive that. Here the page of one of the
 * slots the entry for "/p/q/" holds (q's inode, or the dentry that names q)
 * is made to read as a blob page whose bytes still hold the old slot, seq
 * included (what a blob written there could hold): the entry must not be
 * used, its offsets are not slots of their type any more. */
static void hit_checks_page_type(struct fx *f, bool dentry)
{
	struct stat st;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/p"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/p/q"), 0755, NULL), 0);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/p/q/f"), O_CREAT | O_EXCL | O_WRONLY, 0644,
	                         false, NULL), 0);
	assert_int_equal(view_stat(&view, P("/p/q/f"), true, &st), 0);
	const struct prefix_entry *e = entry_for(f, "/p/q/");
	assert_non_null(e);
	assert_int_equal(e->hit.n, 3);

	mc_off_t stack[PREFIX_DEPTH];
	uint64_t stack_ino[PREFIX_DEPTH], kh;
	struct isnap top;
	assert_int_equal(prefix_find(&view, P("/p/q/"), &kh, stack, stack_ino, &top), 3);

	mc_off_t q = dentry ? e->hit.lv[2].dentry : e->hit.lv[2].inode;
	uint32_t pg = (uint32_t)(((uint64_t)q << MC_OFF_SHIFT) >> MC_PAGE_SHIFT);
	uint8_t was = f->shm->page_types[pg];
	assert_int_equal(was, dentry ? MC_PT_DENTRY : MC_PT_INODE);
	f->shm->page_types[pg] = MC_PT_BLOB32 + 2;
	int n = prefix_find(&view, P("/p/q/"), &kh, stack, stack_ino, &top);
	f->shm->page_types[pg] = was;
	assert_int_equal(n, 0);
	/* The page of its type again: the entry holds. */
	assert_int_equal(prefix_find(&view, P("/p/q/"), &kh, stack, stack_ino, &top), 3);
}

static void test_hit_checks_page_types(void **state)
{
	hit_checks_page_type(*state, false);
}

static void test_hit_checks_dentry_page_types(void **state)
{
	hit_checks_page_type(*state, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hit_checks_page_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hit_checks_dentry_page_types, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
