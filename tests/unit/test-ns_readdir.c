/* test-ns_readdir.c - unit tests of the namespace's readdir cursors
 * (server/ns.h): paging, names created between pages, a directory loaded
 * from the store, and an unlinked directory still held. */
#include "ns_posix_fixture.h"

/* ---- readdir and held inodes ----------------------------------------------- */

struct seen {
	char names[4096][32];
	uint64_t inos[4096];
	int n;
};

static int collect(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	struct seen *s = arg;
	assert_true(len < 32);
	assert_true(s->n < 4096);
	memcpy(s->names[s->n], name, len);
	s->names[s->n][len] = 0;
	s->inos[s->n] = ino;
	s->n++;
	assert_true(dtype == DT_REG || dtype == DT_DIR || dtype == DT_LNK);
	return 0;
}

static int count_name(const struct seen *s, const char *name)
{
	int k = 0;
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			k++;
	return k;
}

static uint64_t hold_dir(struct fx *f, const char *path)
{
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P(path), O_RDONLY | O_DIRECTORY, 0, true, &a), 0);
	return a.ino;
}

/* List all of ino in pages of max, optionally creating new names between
 * pages. */
static void list_paged(struct fx *f, uint64_t ino, unsigned max, struct seen *s, int create_per_page)
{
	uint64_t cookie = 0, next;
	bool eof = false;
	int pages = 0, made = 0;
	while (!eof) {
		int before = s->n;
		assert_int_equal(ns_readdir(f->ns, &root_cred, ino, cookie, max, collect, s, &next, &eof),
		                 0);
		assert_true((unsigned)(s->n - before) <= max);
		if (!eof)
			assert_int_equal((unsigned)(s->n - before), max);
		assert_true(next >= cookie);
		cookie = next;
		for (int k = 0; k < create_per_page; k++) {
			char p[64];
			snprintf(p, sizeof(p), "/d/new-%d", made++);
			create_ok(f, p);
		}
		assert_true(++pages < 10000);
	}
}

static void test_readdir_paging(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	fill_dir(f, "/d", 100);
	mkdir_ok(f, "/d/sub", 0755);
	uint64_t ino = hold_dir(f, "/d");
	static struct seen s;
	memset(&s, 0, sizeof(s));
	list_paged(f, ino, 7, &s, 0);
	assert_int_equal(s.n, 101);
	char p[64];
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), i % 3 ? "file-%d" : "a-longer-file-name-%d", i);
		assert_int_equal(count_name(&s, p), 1);
	}
	assert_int_equal(count_name(&s, "sub"), 1);
	/* max 0 and a cookie past the end. */
	uint64_t next;
	bool eof;
	int n0 = s.n;
	assert_int_equal(ns_readdir(f->ns, &root_cred, ino, 1u << 30, 10, collect, &s, &next, &eof), 0);
	assert_true(eof);
	assert_int_equal(s.n, n0);
	/* Not a directory / not held. */
	ns_attr fa;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d/file-1"), O_RDONLY, 0, true, &fa), 0);
	assert_int_equal(ns_readdir(f->ns, &root_cred, fa.ino, 0, 10, collect, &s, &next, &eof),
	                 -ENOTDIR);
	ns_release(f->ns, fa.ino);
	assert_int_equal(ns_readdir(f->ns, &root_cred, 999999, 0, 10, collect, &s, &next, &eof),
	                 -EBADF);
	ns_release(f->ns, ino);
}

static void test_readdir_concurrent_create(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	fill_dir(f, "/d", 200);
	uint64_t ino = hold_dir(f, "/d");
	static struct seen s;
	memset(&s, 0, sizeof(s));
	list_paged(f, ino, 9, &s, 3);
	char p[64];
	for (int i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), i % 3 ? "file-%d" : "a-longer-file-name-%d", i);
		if (count_name(&s, p) != 1)
			fail_msg("%s listed %d times", p, count_name(&s, p));
	}
	for (int i = 0; i < s.n; i++)
		assert_int_equal(count_name(&s, s.names[i]), 1);
	ns_release(f->ns, ino);
}

/* The same over a directory loaded from the store (not complete at first),
 * with a re-created name (unlink + create) during the listing. */
static void test_readdir_from_store(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	fill_dir(f, "/d", 150);
	reopen(f);
	/* Cache one name before listing: it must not be listed twice. */
	st_ok(f, "/d/file-5");
	uint64_t ino = hold_dir(f, "/d");
	static struct seen s;
	memset(&s, 0, sizeof(s));
	uint64_t cookie = 0, next;
	bool eof = false;
	assert_int_equal(ns_readdir(f->ns, &root_cred, ino, cookie, 50, collect, &s, &next, &eof), 0);
	assert_false(eof);
	cookie = next;
	create_ok(f, "/d/zz-new");
	while (!eof) {
		assert_int_equal(ns_readdir(f->ns, &root_cred, ino, cookie, 50, collect, &s, &next, &eof),
		                 0);
		cookie = next;
	}
	char p[64];
	for (int i = 0; i < 150; i++) {
		snprintf(p, sizeof(p), i % 3 ? "file-%d" : "a-longer-file-name-%d", i);
		assert_int_equal(count_name(&s, p), 1);
	}
	assert_true(count_name(&s, "zz-new") <= 1);
	ns_release(f->ns, ino);
}

static void test_unlinked_but_held(void **state)
{
	struct fx *f = *state;
	create_ok(f, "/f");
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_RDWR, 0, true, &a), 0);
	struct ns_counts c0;
	ns_get_counts(f->ns, &c0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/f")), 0);
	assert_int_equal(st_err(f, &root_cred, "/f"), -ENOENT);
	ns_attr h;
	assert_int_equal(ns_stat_ino(f->ns, a.ino, &h), 0);
	assert_int_equal(h.nlink, 0);
	assert_int_equal(h.ino, a.ino);
	assert_int_equal(ns_truncate_ino(f->ns, a.ino, true, 77), 0);
	assert_int_equal(ns_truncate_ino(f->ns, a.ino, false, 77), -EINVAL);
	assert_int_equal(ns_stat_ino(f->ns, a.ino, &h), 0);
	assert_int_equal(h.size, 77);
	/* Commits do not drop it. */
	commit_now(f);
	assert_int_equal(ns_stat_ino(f->ns, a.ino, &h), 0);
	ns_release(f->ns, a.ino);
	assert_int_equal(ns_stat_ino(f->ns, a.ino, &h), -ENOENT);
	struct ns_counts c1;
	ns_get_counts(f->ns, &c1);
	assert_int_equal(c1.inodes, c0.inodes - 1);
	/* The store does not have it either. */
	while (commit_now(f))
		;
	struct mc_inode_rec rec;
	assert_int_equal(store_get_inode(f->st, a.ino, &rec, NULL, NULL), -ENOENT);

	/* Two handles on a file. */
	create_ok(f, "/g");
	ns_attr g;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/g"), O_RDONLY, 0, true, &g), 0);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/g"), O_RDONLY, 0, true, NULL), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/g")), 0);
	ns_release(f->ns, g.ino);
	assert_int_equal(ns_stat_ino(f->ns, g.ino, &h), 0);
	ns_release(f->ns, g.ino);
	assert_int_equal(ns_stat_ino(f->ns, g.ino, &h), -ENOENT);

	/* A held directory that is removed lists as empty. */
	mkdir_ok(f, "/dd", 0755);
	uint64_t dino = hold_dir(f, "/dd");
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/dd")), 0);
	static struct seen s;
	memset(&s, 0, sizeof(s));
	uint64_t next;
	bool eof;
	assert_int_equal(ns_readdir(f->ns, &root_cred, dino, 0, 10, collect, &s, &next, &eof), 0);
	assert_true(eof);
	assert_int_equal(s.n, 0);
	assert_int_equal(ns_stat_ino(f->ns, dino, &h), 0);
	assert_int_equal(h.nlink, 0);
	ns_release(f->ns, dino);
	assert_int_equal(ns_stat_ino(f->ns, dino, &h), -ENOENT);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_readdir_paging),
		T(test_readdir_concurrent_create),
		T(test_readdir_from_store),
		T(test_unlinked_but_held),
	};
	return cmocka_run_group_tests_name("ns_readdir", tests, NULL, NULL);
}
