/* test-extent_ns.c - the namespace's extent calls (server/extent_ns.c)
 * over a real store: what reaches the store when a file's map changes
 * after its last link is gone (nothing: the file's rows went with its
 * inode), and truncation of a map that is not loaded. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "extent_map.h"
#include "extent_ns.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	const char *base = getenv("TMPDIR");
	snprintf(f->dir, sizeof(f->dir), "%s/test-extent_ns-XXXXXX", base && *base ? base : "/tmp");
	struct store_opts o = { .root_mode = 0755 };
	if (!mkdtemp(f->dir) || store_open(f->dir, &o, &f->st) < 0 ||
	    shm_create(8 * MIB, &f->shm) < 0 || ns_new(f->shm, f->st, NULL, &f->ns) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	ns_free(f->ns);
	shm_destroy(f->shm);
	store_close(f->st);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void commit_now(struct fx *f)
{
	struct journal_batch *b = ns_swap(f->ns);
	if (!b)
		return;
	struct store_commit_times t;
	assert_int_equal(store_commit(f->st, b, &t), 0);
	ns_publish(f->ns, b);
}

static int count_one(void *arg, uint64_t start, uint64_t len, uint64_t phys, uint32_t flags)
{
	(void)start;
	(void)len;
	(void)phys;
	(void)flags;
	(*(unsigned *)arg)++;
	return 0;
}

static unsigned stored(struct fx *f, uint64_t ino)
{
	unsigned n = 0;
	assert_int_equal(store_scan_extents(f->st, ino, count_one, &n), 0);
	return n;
}

/* A file unlinked while open keeps a map in memory until its last handle
 * goes; changes to it must not write rows for an inode the store already
 * deleted. */
static void test_unlinked_open(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_CREAT | O_RDWR, 0644, true, &a), 0);
	assert_int_equal(ns_extent_set(f->ns, a.ino, true, 0, 4096, 1, 0), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 1);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/f")), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
	/* Still usable through the handle. */
	assert_int_equal(ns_extent_set(f->ns, a.ino, true, 8192, 4096, 2, 0), 0);
	assert_int_equal(ns_extent_punch(f->ns, a.ino, true, 0, 1), 0);
	struct emap_ext e[4];
	size_t n;
	assert_int_equal(ns_extent_map(f->ns, a.ino, 0, 0, e, 4, &n), 0);
	assert_int_equal(n, 2);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
	assert_int_equal(ns_truncate_ino(f->ns, a.ino, true, 1), 0);
	assert_int_equal(ns_extent_map(f->ns, a.ino, 0, 0, e, 4, &n), 0);
	assert_int_equal(n, 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
	ns_release(f->ns, a.ino);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
}

/* Truncating a file whose map is not loaded cuts the store's copy. */
static void test_truncate_unloaded(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/g"), O_CREAT | O_RDWR, 0644, true, &a), 0);
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(ns_extent_set(f->ns, a.ino, true, i * 4096, 4096, i, 0), 0);
	ns_release(f->ns, a.ino);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 8);
	assert_int_equal(ns_evict(f->ns, &root_cred, P("/g")), 0);
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/g"), 3 * 4096 + 1), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 4);
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/g"), 0), 0);
	commit_now(f);
	assert_int_equal(stored(f, a.ino), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unlinked_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncate_unloaded, setup, teardown),
	};
	return cmocka_run_group_tests_name("extent_ns", tests, NULL, NULL);
}
