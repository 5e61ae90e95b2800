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

#include "fixture.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shmview_impl.h"
#include "store.h"

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	struct cred root;
	struct view *v;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fixture_template(f->dir, sizeof(f->dir), "mc-shmprefix");
	assert_non_null(mkdtemp(f->dir));
	struct store_opts so = { .root_mode = 0755 };
	assert_int_equal(store_open(f->dir, &so, &f->st), 0);
	assert_int_equal(shm_create(8u << 20, &f->shm), 0);
	assert_int_equal(ns_new(f->shm, f->st, NULL, &f->ns), 0);
	f->v = calloc(1, sizeof(*f->v));
	assert_int_equal(view_init(f->v, f->shm->base, f->shm->size), 0);
	view_default_limits(&f->v->lim);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	ns_free(f->ns);
	shm_destroy(f->shm);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f->v);
	free(f);
	return 0;
}

#define P(s) (s), strlen(s)

static const struct prefix_entry *entry_for(struct fx *f, const char *key)
{
	size_t klen = strlen(key);
	for (unsigned k = 0; k < PREFIX_SLOTS; k++) {
		const struct prefix_entry *e = &f->v->prefixes[k];
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
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/p"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/p/q"), 0755, NULL), 0);
	assert_int_equal(ns_open(f->ns, &f->root, P("/p/q/f"), O_CREAT | O_EXCL | O_WRONLY, 0644,
	                         false, NULL), 0);
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), 0);
	const struct prefix_entry *e = entry_for(f, "/p/q/");
	assert_non_null(e);
	assert_int_equal(e->hit.n, 3);

	mc_off_t stack[PREFIX_DEPTH];
	uint64_t stack_ino[PREFIX_DEPTH], kh;
	struct isnap top;
	assert_int_equal(prefix_find(f->v, P("/p/q/"), &kh, stack, stack_ino, &top), 3);

	mc_off_t q = dentry ? e->hit.lv[2].dentry : e->hit.lv[2].inode;
	uint32_t pg = (uint32_t)(((uint64_t)q << MC_OFF_SHIFT) >> MC_PAGE_SHIFT);
	uint8_t was = f->shm->page_types[pg];
	assert_int_equal(was, dentry ? MC_PT_DENTRY : MC_PT_INODE);
	f->shm->page_types[pg] = MC_PT_BLOB32 + 2;
	int n = prefix_find(f->v, P("/p/q/"), &kh, stack, stack_ino, &top);
	f->shm->page_types[pg] = was;
	assert_int_equal(n, 0);
	/* The page of its type again: the entry holds. */
	assert_int_equal(prefix_find(f->v, P("/p/q/"), &kh, stack, stack_ino, &top), 3);
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
