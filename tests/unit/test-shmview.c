/* test-shmview.c - the client's shared-memory read path against a segment
 * built by the real server modules (shm, dcache, ns over an LMDB store):
 * every local answer must equal the server's, and what the cache cannot
 * answer must be a miss, never a guess. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ns.h"
#include "ops.h"
#include "dcache.h"
#include "shm.h"
#include "shmview.h"
#include "store.h"

struct fx {
	char dir[64];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	struct cred root;
	struct view *v;
};

static int rm_one(const char *p, const struct stat *s, int f, struct FTW *w)
{
	(void)s; (void)f; (void)w;
	return remove(p);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	strcpy(f->dir, "/tmp/mc-shmview-XXXXXX");
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
	nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f->v);
	free(f);
	return 0;
}

#define P(s) (s), strlen(s)

static void mkfile(struct fx *f, const char *p)
{
	assert_int_equal(ns_open(f->ns, &f->root, P(p), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL), 0);
}

/* The local answer equals the server's, field by field. */
static void same_as_server(struct fx *f, const char *p, bool follow)
{
	struct stat st;
	ns_attr a;
	int lrc = view_stat(f->v, P(p), follow, &st);
	int src = ns_stat(f->ns, &f->root, P(p), follow, &a);
	assert_int_not_equal(lrc, VIEW_MISS);
	assert_int_equal(lrc, src);
	if (lrc == 0) {
		assert_int_equal(st.st_ino, a.ino);
		assert_int_equal(st.st_mode, a.mode);
		assert_int_equal(st.st_nlink, a.nlink);
		assert_int_equal(st.st_size, S_ISDIR(a.mode) ? 40 + 20 * (off_t)a.size : (off_t)a.size);
		assert_int_equal((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, a.mtime_ns);
	}
}

static void test_rejects_bad_header(void **state)
{
	(void)state;
	static char junk[1 << 16];
	struct view v;
	assert_int_equal(view_init(&v, junk, sizeof(junk)), -EPROTO);
}

static void test_stat_cached_paths(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/a"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/a/b"), 0700, NULL), 0);
	mkfile(f, "/a/b/file-with-a-rather-long-name-0123456789");
	mkfile(f, "/a/b/c");
	assert_int_equal(ns_symlink(f->ns, &f->root, P("b/c"), P("/a/lnk")), 0);
	assert_int_equal(ns_symlink(f->ns, &f->root, P("/a/b"), P("/a/dirlnk")), 0);
	const char *paths[] = { "/", "/a", "/a/b", "/a/b/c", "/a//b///c", "/a/./b/../b/c",
		"/a/b/file-with-a-rather-long-name-0123456789", "/a/lnk", "/a/dirlnk/c",
		"/a/dirlnk/", "/..", "/a/b/.", "/a/b/..", "/a/b/c/", "/a/b/c/x", "/a/lnk/",
		"/a/b/missing", "/a/b/missing/deeper" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		same_as_server(f, paths[i], true);
		same_as_server(f, paths[i], false);
	}
}

static void test_negative_and_complete(void **state)
{
	struct fx *f = *state;
	struct stat st;
	/* A new directory is complete: misses in it are local ENOENT. */
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/d"), 0755, NULL), 0);
	assert_int_equal(view_stat(f->v, P("/d/nothing"), true, &st), -ENOENT);
	/* Unlinked names leave a negative entry or vanish from a complete dir:
	 * both answer ENOENT locally. */
	mkfile(f, "/d/x");
	assert_int_equal(view_stat(f->v, P("/d/x"), true, &st), 0);
	assert_int_equal(ns_unlink(f->ns, &f->root, P("/d/x")), 0);
	assert_int_equal(view_stat(f->v, P("/d/x"), true, &st), -ENOENT);
	/* A new namespace's root is empty in the store, so it is complete from
	 * the start: an unknown name in it is a local ENOENT, no round trip. */
	assert_int_equal(view_stat(f->v, P("/unknown"), true, &st), -ENOENT);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &f->root, P("/unknown"), true, &a), -ENOENT);
	assert_int_equal(view_stat(f->v, P("/unknown"), true, &st), -ENOENT);
	/* A relative path or a long component is answered locally too. */
	assert_int_equal(view_stat(f->v, P("d"), true, &st), -EINVAL);
	char longname[300] = "/d/";
	memset(longname + 3, 'n', 256);
	longname[259] = 0;
	assert_int_equal(view_stat(f->v, P(longname), true, &st), -ENAMETOOLONG);
}

static void test_permissions(void **state)
{
	struct fx *f = *state;
	struct stat st;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/priv"), 0700, NULL), 0);
	mkfile(f, "/priv/f");
	f->v->cred = (struct view_cred){ .uid = 1000, .gid = 1000 };
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), -EACCES);
	assert_int_equal(view_stat(f->v, P("/priv"), true, &st), 0);
	assert_int_equal(ns_chmod(f->ns, &f->root, P("/priv"), 0711), 0);
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), 0);
	struct view_dir d;
	assert_int_equal(view_opendir(f->v, P("/priv"), &d), -EACCES);
	f->v->cred = (struct view_cred){ 0 };
}

static void test_bounds_fall_back(void **state)
{
	struct fx *f = *state;
	struct stat st;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/x"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/x/y"), 0755, NULL), 0);
	assert_int_equal(ns_symlink(f->ns, &f->root, P("/x/y"), P("/x/l")), 0);
	assert_int_equal(view_stat(f->v, P("/x/y"), true, &st), 0);
	f->v->lim.depth = 2;
	assert_int_equal(view_stat(f->v, P("/x/y"), true, &st), VIEW_MISS);
	view_default_limits(&f->v->lim);
	f->v->lim.links = 0;
	assert_int_equal(view_stat(f->v, P("/x/l"), true, &st), VIEW_MISS);
	assert_int_equal(view_stat(f->v, P("/x/l"), false, &st), 0);
	view_default_limits(&f->v->lim);
	f->v->lim.chain = 0;
	assert_int_equal(view_stat(f->v, P("/x"), true, &st), VIEW_MISS);
	view_default_limits(&f->v->lim);
}

static void test_readlink_and_ino(void **state)
{
	struct fx *f = *state;
	char buf[64];
	size_t n;
	assert_int_equal(ns_symlink(f->ns, &f->root, P("some/target"), P("/sl")), 0);
	assert_int_equal(view_readlink(f->v, P("/sl"), buf, sizeof(buf), &n), 0);
	assert_int_equal(n, 11);
	assert_memory_equal(buf, "some/target", 11);
	assert_int_equal(view_readlink(f->v, P("/sl"), buf, 4, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(view_readlink(f->v, P("/"), buf, sizeof(buf), &n), -EINVAL);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &f->root, P("/sl"), false, &a), 0);
	struct stat st;
	assert_int_equal(view_stat_ino(f->v, a.ino, &st), 0);
	assert_int_equal(st.st_ino, a.ino);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(view_stat_ino(f->v, 999999, &st), VIEW_MISS);
}

static void test_readdir_pages(void **state)
{
	struct fx *f = *state;
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/big"), 0755, NULL), 0);
	for (int i = 0; i < 1000; i++) {
		snprintf(p, sizeof(p), "/big/entry-%04d%s", i, i % 7 ? "" : "-with-a-long-name");
		mkfile(f, p);
	}
	struct view_dir d;
	assert_int_equal(view_opendir(f->v, P("/big"), &d), 0);
	static struct view_dirent ents[64];
	char seen[1000] = { 0 };
	unsigned total = 0, n;
	bool eof = false;
	int round = 0;
	while (!eof) {
		assert_int_equal(view_readdir(f->v, &d, ents, 64, &n, &eof), 0);
		for (unsigned i = 0; i < n; i++) {
			if (strcmp(ents[i].name, "new-entry") == 0)
				continue;
			assert_memory_equal(ents[i].name, "entry-", 6);
			int k = atoi(ents[i].name + 6);
			assert_true(k >= 0 && k < 1000);
			assert_int_equal(seen[k], 0);
			seen[k] = 1;
			assert_int_equal(ents[i].type, DT_REG);
		}
		total += n;
		/* Changes elsewhere in the directory between pages: old entries
		 * are neither repeated nor skipped. */
		if (round++ == 3) {
			assert_int_equal(ns_unlink(f->ns, &f->root, P("/big/entry-0999")), 0);
			seen[999] = 1;
			mkfile(f, "/big/new-entry");
		}
	}
	for (int k = 0; k < 1000; k++)
		assert_int_equal(seen[k], 1);
	assert_true(total == 999 || total == 1000); /* the new entry may or may not show */
	/* A new namespace's root is complete: listed locally too. */
	assert_int_equal(view_opendir(f->v, P("/"), &d), 0);
}

/* Hits mark the dentry's bit in the referenced bitmap (for the shrinker's
 * second chance); a miss or a negative answer marks nothing. */
static void test_referenced_bits(void **state)
{
	struct fx *f = *state;
	uint64_t nbits = f->shm->size >> MC_OFF_SHIFT;
	_Atomic uint64_t *bits = calloc((nbits + 63) / 64, sizeof(*bits));
	assert_non_null(bits);
	f->v->refbits = bits;
	f->v->nbits = nbits;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/r"), 0755, NULL), 0);
	mkfile(f, "/r/hot");
	mkfile(f, "/r/cold");
	struct stat st;
	assert_int_equal(view_stat(f->v, P("/r/nothing"), true, &st), -ENOENT);
	size_t set = 0;
	for (uint64_t w = 0; w < (nbits + 63) / 64; w++)
		set += (size_t)__builtin_popcountll(atomic_load(&bits[w]));
	/* "/r" itself was walked through. */
	assert_int_equal(set, 1);
	assert_int_equal(view_stat(f->v, P("/r/hot"), true, &st), 0);
	set = 0;
	for (uint64_t w = 0; w < (nbits + 63) / 64; w++)
		set += (size_t)__builtin_popcountll(atomic_load(&bits[w]));
	assert_int_equal(set, 2);
	/* The bit is the one of the dentry's offset. */
	mc_off_t dir = dcache_find(f->shm, f->shm->hdr->root, "r", 1);
	assert_true(dir != 0);
	mc_off_t hot = dcache_find(f->shm, dentry_at(f->shm, dir)->inode, "hot", 3);
	mc_off_t cold = dcache_find(f->shm, dentry_at(f->shm, dir)->inode, "cold", 4);
	assert_true(atomic_load(&bits[hot >> 6]) & (1ull << (hot & 63)));
	assert_false(atomic_load(&bits[cold >> 6]) & (1ull << (cold & 63)));
	f->v->refbits = NULL;
	free(bits);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rejects_bad_header),
		cmocka_unit_test_setup_teardown(test_stat_cached_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_and_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permissions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds_fall_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readlink_and_ino, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_referenced_bits, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
