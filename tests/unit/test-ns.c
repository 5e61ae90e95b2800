/* test-ns.c - unit tests of the namespace (server/ns.h) over a real LMDB
 * store and shared-memory segment: POSIX semantics and errno values (tmpfs
 * is the reference), permissions, durability through a hand-run commit,
 * dirty accounting, rule 1 (memory back to baseline after a tree is gone),
 * a full segment, and readdir cursors. */
#include <dirent.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal.h"
#include "mc_shm.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"
#include "fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };
static const struct cred user_cred = { .uid = 1000, .gid = 1000 };
static const struct cred other_cred = { .uid = 1001, .gid = 1001 };

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	uint64_t shm_size;
};

static int fx_open_ns(struct fx *f)
{
	if (shm_create(f->shm_size, &f->shm) < 0)
		return -1;
	if (ns_new(f->shm, f->st, NULL, &f->ns) < 0) {
		shm_destroy(f->shm);
		f->shm = NULL;
		return -1;
	}
	return 0;
}

static void fx_close_ns(struct fx *f)
{
	ns_free(f->ns);
	shm_destroy(f->shm);
	f->ns = NULL;
	f->shm = NULL;
}

static int setup_size(void **state, uint64_t size)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), "test-ns");
	if (!mkdtemp(f->dir))
		goto fail;
	struct store_opts o = { .root_mode = 0755 };
	if (store_open(f->dir, &o, &f->st) < 0)
		goto fail;
	f->shm_size = size;
	if (fx_open_ns(f) < 0)
		goto fail;
	*state = f;
	return 0;
fail:
	if (f->st)
		store_close(f->st);
	free(f);
	return -1;
}

static int setup(void **state) { return setup_size(state, 8 * MIB); }
static int setup_small(void **state) { return setup_size(state, MIB); }

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->ns)
		fx_close_ns(f);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* One group commit by hand: swap, write, publish. false when nothing was
 * pending. */
static bool commit_now(struct fx *f)
{
	struct journal_batch *b = ns_swap(f->ns);
	if (!b)
		return false;
	struct store_commit_times t;
	int rc = store_commit(f->st, b, &t);
	if (rc != 0)
		fail_msg("store_commit: %d", rc);
	ns_publish(f->ns, b);
	return true;
}

/* Drop the cache and bring it back over the same store. */
static void reopen(struct fx *f)
{
	while (commit_now(f))
		;
	fx_close_ns(f);
	assert_int_equal(fx_open_ns(f), 0);
}

static ns_attr st_ok(struct fx *f, const char *path)
{
	ns_attr a;
	int rc = ns_stat(f->ns, &root_cred, P(path), true, &a);
	if (rc != 0)
		fail_msg("stat(%s): %d", path, rc);
	return a;
}

static ns_attr lst_ok(struct fx *f, const char *path)
{
	ns_attr a;
	int rc = ns_stat(f->ns, &root_cred, P(path), false, &a);
	if (rc != 0)
		fail_msg("lstat(%s): %d", path, rc);
	return a;
}

static int st_err(struct fx *f, const struct cred *c, const char *path)
{
	ns_attr a;
	return ns_stat(f->ns, c, P(path), true, &a);
}

static void mkdir_ok(struct fx *f, const char *path, uint32_t mode)
{
	int rc = ns_mkdir(f->ns, &root_cred, P(path), mode, NULL);
	if (rc != 0)
		fail_msg("mkdir(%s): %d", path, rc);
}

static uint64_t create_as(struct fx *f, const struct cred *c, const char *path, uint32_t mode)
{
	ns_attr a;
	int rc = ns_open(f->ns, c, P(path), O_CREAT | O_EXCL | O_WRONLY, mode, false, &a);
	if (rc != 0)
		fail_msg("create(%s): %d", path, rc);
	return a.ino;
}

static uint64_t create_ok(struct fx *f, const char *path)
{
	return create_as(f, &root_cred, path, 0644);
}

static int create_err(struct fx *f, const struct cred *c, const char *path)
{
	return ns_open(f->ns, c, P(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
}

static int do_rename(struct fx *f, const char *a, const char *b)
{
	return ns_rename(f->ns, &root_cred, P(a), P(b));
}

/* ---- basic operations ---------------------------------------------------- */

static void test_mkdir_stat_rmdir(void **state)
{
	struct fx *f = *state;
	ns_attr r0 = st_ok(f, "/");
	assert_int_equal(r0.ino, 1);
	assert_int_equal(r0.mode, S_IFDIR | 0755);
	assert_int_equal(r0.nlink, 2);
	assert_int_equal(r0.size, 0);

	ns_attr a;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a"), 0750, &a), 0);
	assert_int_equal(a.mode, S_IFDIR | 0750);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.uid, 0);
	assert_true(a.ino > 1);
	ns_attr s = st_ok(f, "/a");
	assert_int_equal(s.ino, a.ino);
	assert_int_equal(s.mode, a.mode);
	ns_attr r1 = st_ok(f, "/");
	assert_int_equal(r1.nlink, 3);
	assert_int_equal(r1.size, 1);

	/* Error cases. */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a"), 0755, NULL), -EEXIST);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/nope/x"), 0755, NULL), -ENOENT);
	create_ok(f, "/file");
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/file"), 0755, NULL), -EEXIST);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/file/x"), 0755, NULL), -ENOTDIR);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/file")), -ENOTDIR);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/missing")), -ENOENT);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/")), -EBUSY);
	mkdir_ok(f, "/a/b", 0755);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/a")), -ENOTEMPTY);
	/* Mode bits beyond 01777 are not taken by mkdir. */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/m"), 06777, &a), 0);
	assert_int_equal(a.mode, S_IFDIR | 0777);

	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/a/b")), 0);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/a")), 0);
	assert_int_equal(st_err(f, &root_cred, "/a"), -ENOENT);
	assert_int_equal(st_err(f, &root_cred, "/a/b"), -ENOENT);
	ns_attr r2 = st_ok(f, "/");
	assert_int_equal(r2.nlink, 3); /* /m */
	assert_int_equal(r2.size, 2);  /* /file, /m */
	/* Inode numbers are not reused. */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a"), 0755, &s), 0);
	assert_true(s.ino > a.ino);
}

static void test_open_create(void **state)
{
	struct fx *f = *state;
	ns_attr a, b;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_CREAT | O_WRONLY, 0640, false, &a), 0);
	assert_int_equal(a.mode, S_IFREG | 0640);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(a.size, 0);
	/* O_CREAT without O_EXCL opens the existing one. */
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_CREAT | O_RDWR, 0600, false, &b), 0);
	assert_int_equal(b.ino, a.ino);
	assert_int_equal(b.mode, S_IFREG | 0640);
	assert_int_equal(create_err(f, &root_cred, "/f"), -EEXIST);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/g"), O_RDONLY, 0, false, NULL), -ENOENT);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_RDONLY | O_DIRECTORY, 0, false, NULL),
	                 -ENOTDIR);
	mkdir_ok(f, "/d", 0755);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d"), O_WRONLY, 0, false, NULL), -EISDIR);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d"), O_CREAT | O_RDONLY, 0644, false, NULL),
	                 -EISDIR);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/new/"), O_CREAT | O_WRONLY, 0644, false, NULL),
	                 -EISDIR);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d"), O_RDONLY | O_DIRECTORY, 0, false, &b), 0);
	assert_true(S_ISDIR(b.mode));
	/* O_TRUNC */
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/f"), 1234), 0);
	assert_int_equal(st_ok(f, "/f").size, 1234);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_RDONLY, 0, false, &b), 0);
	assert_int_equal(b.size, 1234);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f"), O_WRONLY | O_TRUNC, 0, false, &b), 0);
	assert_int_equal(b.size, 0);
	assert_int_equal(st_ok(f, "/f").size, 0);
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/d"), 0), -EISDIR);
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/f"), -1), -EINVAL);
	/* O_CREAT through a dangling symlink creates its target (O_EXCL:
	 * EEXIST, the link itself exists). */
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("d/target"), P("/dangle")), 0);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/dangle"), O_CREAT | O_EXCL | O_WRONLY, 0644,
	                         false, NULL), -EEXIST);
	assert_int_equal(st_err(f, &root_cred, "/d/target"), -ENOENT);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/dangle"), O_CREAT | O_WRONLY, 0600, false, &b),
	                 0);
	assert_int_equal(st_ok(f, "/d/target").ino, b.ino);
	assert_int_equal(b.mode, S_IFREG | 0600);
}

static void test_unlink(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	create_ok(f, "/d/f");
	create_ok(f, "/d/g");
	assert_int_equal(st_ok(f, "/d").size, 2);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f")), 0);
	assert_int_equal(st_err(f, &root_cred, "/d/f"), -ENOENT);
	assert_int_equal(st_ok(f, "/d").size, 1);
	assert_int_equal(st_ok(f, "/d").nlink, 2);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f")), -ENOENT);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d")), -EISDIR);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/g/")), -ENOTDIR);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/g/x")), -ENOTDIR);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/")), -EISDIR);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/g")), 0);
	assert_int_equal(st_ok(f, "/d").size, 0);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/d")), 0);
}

/* ---- rename -------------------------------------------------------------- */

static void test_rename_same_dir(void **state)
{
	struct fx *f = *state;
	uint64_t ino = create_ok(f, "/a");
	assert_int_equal(do_rename(f, "/a", "/b"), 0);
	assert_int_equal(st_err(f, &root_cred, "/a"), -ENOENT);
	assert_int_equal(st_ok(f, "/b").ino, ino);
	assert_int_equal(st_ok(f, "/").size, 1);
	mkdir_ok(f, "/d", 0755);
	create_ok(f, "/d/x");
	assert_int_equal(do_rename(f, "/d", "/e"), 0);
	assert_int_equal(st_err(f, &root_cred, "/d/x"), -ENOENT);
	st_ok(f, "/e/x");
	ns_attr r = st_ok(f, "/");
	assert_int_equal(r.nlink, 3);
	assert_int_equal(r.size, 2);
	assert_int_equal(do_rename(f, "/missing", "/z"), -ENOENT);
	assert_int_equal(do_rename(f, "/b", "/nodir/z"), -ENOENT);
}

static void test_rename_across_dirs(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d1", 0755);
	mkdir_ok(f, "/d2", 0755);
	uint64_t fino = create_ok(f, "/d1/f");
	assert_int_equal(do_rename(f, "/d1/f", "/d2/g"), 0);
	assert_int_equal(st_ok(f, "/d2/g").ino, fino);
	assert_int_equal(st_err(f, &root_cred, "/d1/f"), -ENOENT);
	assert_int_equal(st_ok(f, "/d1").size, 0);
	assert_int_equal(st_ok(f, "/d2").size, 1);

	mkdir_ok(f, "/d1/sub", 0755);
	create_ok(f, "/d1/sub/inner");
	assert_int_equal(st_ok(f, "/d1").nlink, 3);
	assert_int_equal(do_rename(f, "/d1/sub", "/d2/sub"), 0);
	assert_int_equal(st_ok(f, "/d1").nlink, 2);
	assert_int_equal(st_ok(f, "/d1").size, 0);
	assert_int_equal(st_ok(f, "/d2").nlink, 3);
	assert_int_equal(st_ok(f, "/d2").size, 2);
	st_ok(f, "/d2/sub/inner");
	/* ".." of the moved directory is its new parent. */
	assert_int_equal(st_ok(f, "/d2/sub/..").ino, st_ok(f, "/d2").ino);
	/* All of it is what the store has after a commit. */
	reopen(f);
	assert_int_equal(st_ok(f, "/d2/g").ino, fino);
	assert_int_equal(st_err(f, &root_cred, "/d1/f"), -ENOENT);
	assert_int_equal(st_err(f, &root_cred, "/d1/sub"), -ENOENT);
	st_ok(f, "/d2/sub/inner");
	assert_int_equal(st_ok(f, "/d1").nlink, 2);
	assert_int_equal(st_ok(f, "/d2").nlink, 3);
	assert_int_equal(st_ok(f, "/d2").size, 2);
}

static void test_rename_replace(void **state)
{
	struct fx *f = *state;
	uint64_t x = create_ok(f, "/x");
	create_ok(f, "/y");
	assert_int_equal(do_rename(f, "/x", "/y"), 0);
	assert_int_equal(st_ok(f, "/y").ino, x);
	assert_int_equal(st_err(f, &root_cred, "/x"), -ENOENT);
	assert_int_equal(st_ok(f, "/").size, 1);

	/* Replacing a file that has another link keeps the other link. */
	create_ok(f, "/p");
	uint64_t q = create_ok(f, "/q");
	assert_int_equal(ns_link(f->ns, &root_cred, P("/q"), P("/q2")), 0);
	assert_int_equal(st_ok(f, "/q").nlink, 2);
	assert_int_equal(do_rename(f, "/p", "/q"), 0);
	assert_int_equal(st_ok(f, "/q2").ino, q);
	assert_int_equal(st_ok(f, "/q2").nlink, 1);

	/* Replacing an empty directory. */
	mkdir_ok(f, "/e1", 0755);
	mkdir_ok(f, "/e2", 0755);
	ns_attr e1 = st_ok(f, "/e1");
	uint32_t nl = st_ok(f, "/").nlink;
	uint64_t sz = st_ok(f, "/").size;
	assert_int_equal(do_rename(f, "/e1", "/e2"), 0);
	assert_int_equal(st_ok(f, "/e2").ino, e1.ino);
	assert_int_equal(st_ok(f, "/").nlink, nl - 1);
	assert_int_equal(st_ok(f, "/").size, sz - 1);
	/* Replacing a non-empty one. */
	mkdir_ok(f, "/full", 0755);
	create_ok(f, "/full/c");
	assert_int_equal(do_rename(f, "/e2", "/full"), -ENOTEMPTY);
	st_ok(f, "/e2");
	st_ok(f, "/full/c");
	/* Type mismatches. */
	assert_int_equal(do_rename(f, "/e2", "/y"), -ENOTDIR);
	assert_int_equal(do_rename(f, "/y", "/e2"), -EISDIR);
	assert_int_equal(do_rename(f, "/y/", "/z"), -ENOTDIR);
	assert_int_equal(do_rename(f, "/y", "/z/"), -ENOTDIR);
	st_ok(f, "/y");
	/* A directory with a trailing slash is fine. */
	assert_int_equal(do_rename(f, "/e2/", "/e3/"), 0);
	st_ok(f, "/e3");
}

static void test_rename_into_own_subtree(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0755);
	mkdir_ok(f, "/a/b", 0755);
	mkdir_ok(f, "/a/b/c", 0755);
	assert_int_equal(do_rename(f, "/a", "/a/b/c/d"), -EINVAL);
	assert_int_equal(do_rename(f, "/a", "/a/x"), -EINVAL);
	assert_int_equal(do_rename(f, "/a/b", "/a/b/c/d"), -EINVAL);
	/* The target an ancestor of the source: ENOTEMPTY (as Linux). */
	assert_int_equal(do_rename(f, "/a/b/c", "/a"), -ENOTEMPTY);
	st_ok(f, "/a/b/c");
	/* Renaming onto itself is allowed and changes nothing. */
	assert_int_equal(do_rename(f, "/a", "/a"), 0);
	st_ok(f, "/a/b/c");
}

static void test_rename_dots_busy(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0755);
	mkdir_ok(f, "/b", 0755);
	assert_int_equal(do_rename(f, "/a/.", "/c"), -EBUSY);
	assert_int_equal(do_rename(f, "/a", "/b/."), -EBUSY);
	assert_int_equal(do_rename(f, "/a/..", "/c"), -EBUSY);
	assert_int_equal(do_rename(f, "/", "/c"), -EBUSY);
	assert_int_equal(do_rename(f, "/a", "/"), -EBUSY);
	st_ok(f, "/a");
	st_ok(f, "/b");
}

static void test_rename_hardlinks_noop(void **state)
{
	struct fx *f = *state;
	uint64_t ino = create_ok(f, "/f");
	assert_int_equal(ns_link(f->ns, &root_cred, P("/f"), P("/g")), 0);
	ns_attr before = st_ok(f, "/");
	assert_int_equal(do_rename(f, "/f", "/g"), 0);
	assert_int_equal(st_ok(f, "/f").ino, ino);
	assert_int_equal(st_ok(f, "/g").ino, ino);
	assert_int_equal(st_ok(f, "/f").nlink, 2);
	ns_attr after = st_ok(f, "/");
	assert_int_equal(after.size, before.size);
	assert_int_equal(after.mtime_ns, before.mtime_ns);
}

/* ---- links --------------------------------------------------------------- */

static void test_link_nlink(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	uint64_t ino = create_ok(f, "/f");
	ns_attr a = st_ok(f, "/f");
	assert_int_equal(ns_link(f->ns, &root_cred, P("/f"), P("/d/h")), 0);
	ns_attr b = st_ok(f, "/d/h");
	assert_int_equal(b.ino, ino);
	assert_int_equal(b.nlink, 2);
	assert_true(b.ctime_ns >= a.ctime_ns);
	assert_int_equal(st_ok(f, "/d").size, 1);
	assert_int_equal(st_ok(f, "/d").nlink, 2);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/f"), P("/d/h")), -EEXIST);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/d"), P("/d2")), -EPERM);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/nope"), P("/x")), -ENOENT);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/f"), P("/nodir/x")), -ENOENT);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/f")), 0);
	assert_int_equal(st_ok(f, "/d/h").nlink, 1);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/h")), 0);
	assert_int_equal(st_err(f, &root_cred, "/d/h"), -ENOENT);
}

static void test_symlink_readlink(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	uint64_t fino = create_ok(f, "/d/file");
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/d/file"), P("/abs")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("d/file"), P("/rel")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/d"), P("/dl")), 0);
	char buf[MC_SYMLINK_MAX];
	size_t n = 0;
	assert_int_equal(ns_readlink(f->ns, &root_cred, P("/abs"), buf, &n), 0);
	assert_int_equal(n, 7);
	assert_memory_equal(buf, "/d/file", 7);
	ns_attr l = lst_ok(f, "/abs");
	assert_int_equal(l.mode, S_IFLNK | 0777);
	assert_int_equal(l.size, 7);
	assert_int_equal(st_ok(f, "/abs").ino, fino);
	/* A relative target resolves from the link's directory. */
	assert_int_equal(st_ok(f, "/rel").ino, fino);
	/* Through a symlink to a directory, and with a trailing slash. */
	assert_int_equal(st_ok(f, "/dl/file").ino, fino);
	assert_true(S_ISDIR(st_ok(f, "/dl/").mode));
	assert_true(S_ISLNK(lst_ok(f, "/dl").mode));
	assert_int_equal(ns_readlink(f->ns, &root_cred, P("/d/file"), buf, &n), -EINVAL);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("x"), P("/abs")), -EEXIST);
	assert_int_equal(ns_symlink(f->ns, &root_cred, "", 0, P("/empty")), -ENOENT);
	/* A long target lives in a blob. */
	char t[MC_SYMLINK_MAX + 1];
	memset(t, 'y', sizeof(t));
	assert_int_equal(ns_symlink(f->ns, &root_cred, t, MC_SYMLINK_MAX, P("/long")), 0);
	assert_int_equal(ns_readlink(f->ns, &root_cred, P("/long"), buf, &n), 0);
	assert_int_equal(n, MC_SYMLINK_MAX);
	assert_memory_equal(buf, t, MC_SYMLINK_MAX);
	assert_int_equal(ns_symlink(f->ns, &root_cred, t, MC_SYMLINK_MAX + 1, P("/toolong")),
	                 -ENAMETOOLONG);
	/* Dangling. */
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/nowhere"), P("/dangle")), 0);
	assert_int_equal(st_err(f, &root_cred, "/dangle"), -ENOENT);
	assert_true(S_ISLNK(lst_ok(f, "/dangle").mode));
	/* Unlink removes the link, not the target. */
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/abs")), 0);
	st_ok(f, "/d/file");
}

static void test_eloop(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/l2"), P("/l1")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/l1"), P("/l2")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/self"), P("/self")), 0);
	assert_int_equal(st_err(f, &root_cred, "/l1"), -ELOOP);
	assert_int_equal(st_err(f, &root_cred, "/self"), -ELOOP);
	assert_int_equal(st_err(f, &root_cred, "/l1/x"), -ELOOP);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/l1"), O_RDONLY, 0, false, NULL), -ELOOP);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/self/x"), 0755, NULL), -ELOOP);
	/* lstat does not follow. */
	assert_true(S_ISLNK(lst_ok(f, "/l1").mode));
	/* O_NOFOLLOW on a symlink. */
	create_ok(f, "/real");
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/real"), P("/ok")), 0);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/ok"), O_RDONLY | O_NOFOLLOW, 0, false, NULL),
	                 -ELOOP);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/ok"), O_RDONLY, 0, false, NULL), 0);
	/* A chain of 40 links resolves, 41 do not (MAXSYMLINKS). */
	char from[32], to[32];
	for (int i = 1; i <= 41; i++) {
		snprintf(from, sizeof(from), "/c%d", i);
		if (i == 1)
			snprintf(to, sizeof(to), "/real");
		else
			snprintf(to, sizeof(to), "/c%d", i - 1);
		assert_int_equal(ns_symlink(f->ns, &root_cred, P(to), P(from)), 0);
	}
	assert_int_equal(st_ok(f, "/c40").ino, st_ok(f, "/real").ino);
	assert_int_equal(st_err(f, &root_cred, "/c41"), -ELOOP);
}

static void test_dots_and_slashes(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0755);
	mkdir_ok(f, "/a/b", 0755);
	uint64_t c = create_ok(f, "/a/b/c");
	ns_attr a = st_ok(f, "/a"), b = st_ok(f, "/a/b");
	assert_int_equal(st_ok(f, "/a/b/../b/./c").ino, c);
	assert_int_equal(st_ok(f, "//a///b//c").ino, c);
	assert_int_equal(st_ok(f, "/..").ino, 1);
	assert_int_equal(st_ok(f, "/../../a").ino, a.ino);
	assert_int_equal(st_ok(f, "/a/.").ino, a.ino);
	assert_int_equal(st_ok(f, "/a/b/..").ino, a.ino);
	assert_int_equal(st_ok(f, "/a/b/").ino, b.ino);
	assert_int_equal(st_ok(f, "/a/b//").ino, b.ino);
	assert_int_equal(st_ok(f, "///").ino, 1);
	assert_int_equal(st_err(f, &root_cred, "/a/b/c/"), -ENOTDIR);
	assert_int_equal(st_err(f, &root_cred, "/a/b/c/."), -ENOTDIR);
	assert_int_equal(st_err(f, &root_cred, "/a/b/c/.."), -ENOTDIR);
	assert_int_equal(st_err(f, &root_cred, "/a/x/.."), -ENOENT);
	/* mkdir with a trailing slash; create with one is refused. */
	mkdir_ok(f, "/a/new/", 0755);
	assert_true(S_ISDIR(st_ok(f, "/a/new").mode));
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a/."), 0755, NULL), -EEXIST);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a/.."), 0755, NULL), -EEXIST);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/"), 0755, NULL), -EEXIST);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/a/new/.")), -EINVAL);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/a/new/..")), -ENOTEMPTY);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/a/new/")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("x"), P("/a/sl/")), -ENOENT);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/a/b/c"), P("/a/lnk/")), -ENOENT);
}

static void test_name_too_long(void **state)
{
	struct fx *f = *state;
	char path[300];
	path[0] = '/';
	memset(path + 1, 'n', 256);
	path[257] = 0;
	assert_int_equal(st_err(f, &root_cred, path), -ENAMETOOLONG);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P(path), 0755, NULL), -ENAMETOOLONG);
	assert_int_equal(create_err(f, &root_cred, path), -ENAMETOOLONG);
	/* In the middle of a path too. */
	memcpy(path + 257, "/x", 3);
	assert_int_equal(st_err(f, &root_cred, path), -ENAMETOOLONG);
	/* 255 is fine. */
	path[256] = 0;
	mkdir_ok(f, path, 0755);
	ns_attr a = st_ok(f, path);
	assert_true(S_ISDIR(a.mode));
	strcat(path, "/inner");
	create_ok(f, path);
	st_ok(f, path);
}

static void test_relative_and_empty(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0755);
	assert_int_equal(st_err(f, &root_cred, "a"), -EINVAL);
	assert_int_equal(st_err(f, &root_cred, "./a"), -EINVAL);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("b"), 0755, NULL), -EINVAL);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("a")), -EINVAL);
	assert_int_equal(do_rename(f, "a", "/b"), -EINVAL);
	assert_int_equal(do_rename(f, "/a", "b"), -EINVAL);
	assert_int_equal(ns_stat(f->ns, &root_cred, "", 0, true, &(ns_attr){ 0 }), -ENOENT);
	st_ok(f, "/a");
}

/* ---- permissions ---------------------------------------------------------- */

static void test_perm_search(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/priv", 0700);
	create_ok(f, "/priv/f");
	assert_int_equal(st_err(f, &user_cred, "/priv/f"), -EACCES);
	assert_int_equal(st_err(f, &user_cred, "/priv/nonexistent"), -EACCES);
	/* The directory itself can be stat'ed (search on / only). */
	assert_int_equal(st_err(f, &user_cred, "/priv"), 0);
	assert_int_equal(create_err(f, &user_cred, "/priv/g"), -EACCES);
	/* Read without search is not enough. */
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/priv"), 0744), 0);
	assert_int_equal(st_err(f, &user_cred, "/priv/f"), -EACCES);
	/* Search alone is. */
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/priv"), 0711), 0);
	assert_int_equal(st_err(f, &user_cred, "/priv/f"), 0);
	/* Group bits for a member. */
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/priv"), 0710), 0);
	assert_int_equal(st_err(f, &user_cred, "/priv/f"), -EACCES);
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/priv"), (uint32_t)-1, 1000), 0);
	assert_int_equal(st_err(f, &user_cred, "/priv/f"), 0);
	assert_int_equal(st_err(f, &other_cred, "/priv/f"), -EACCES);
	/* Opening for reading needs read permission on the file. */
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/priv/f"), 0600), 0);
	assert_int_equal(ns_open(f->ns, &user_cred, P("/priv/f"), O_RDONLY, 0, false, NULL), -EACCES);
	assert_int_equal(ns_open(f->ns, &user_cred, P("/priv/f"), O_WRONLY, 0, false, NULL), -EACCES);
	assert_int_equal(ns_truncate(f->ns, &user_cred, P("/priv/f"), 0), -EACCES);
}

static void test_perm_create_in_root_dir(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/ro", 0755);
	create_ok(f, "/ro/file");
	assert_int_equal(create_err(f, &user_cred, "/ro/x"), -EACCES);
	assert_int_equal(ns_mkdir(f->ns, &user_cred, P("/ro/x"), 0755, NULL), -EACCES);
	assert_int_equal(ns_symlink(f->ns, &user_cred, P("t"), P("/ro/x")), -EACCES);
	assert_int_equal(ns_unlink(f->ns, &user_cred, P("/ro/file")), -EACCES);
	assert_int_equal(ns_rename(f->ns, &user_cred, P("/ro/file"), P("/ro/y")), -EACCES);
	assert_int_equal(st_err(f, &user_cred, "/ro/x"), -ENOENT);
	st_ok(f, "/ro/file");
	/* EEXIST is reported before EACCES (as Linux does for mkdir). */
	assert_int_equal(ns_mkdir(f->ns, &user_cred, P("/ro/file"), 0755, NULL), -EEXIST);
	/* A world-writable directory: the new inode belongs to the caller. */
	mkdir_ok(f, "/pub", 0777);
	ns_attr a;
	assert_int_equal(ns_mkdir(f->ns, &user_cred, P("/pub/mine"), 0755, &a), 0);
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1000);
	create_as(f, &user_cred, "/pub/mine/f", 0600);
	ns_attr fa = st_ok(f, "/pub/mine/f");
	assert_int_equal(fa.uid, 1000);
	assert_int_equal(fa.mode, S_IFREG | 0600);
	assert_int_equal(ns_unlink(f->ns, &user_cred, P("/pub/mine/f")), 0);
}

static void test_perm_sticky(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/tmp", 01777);
	assert_int_equal(st_ok(f, "/tmp").mode, S_IFDIR | 01777);
	create_ok(f, "/tmp/rootfile");
	create_as(f, &user_cred, "/tmp/userfile", 0644);
	create_as(f, &other_cred, "/tmp/otherfile", 0666);
	assert_int_equal(ns_unlink(f->ns, &user_cred, P("/tmp/rootfile")), -EPERM);
	assert_int_equal(ns_unlink(f->ns, &user_cred, P("/tmp/otherfile")), -EPERM);
	assert_int_equal(ns_rename(f->ns, &user_cred, P("/tmp/otherfile"), P("/tmp/z")), -EPERM);
	assert_int_equal(ns_rename(f->ns, &user_cred, P("/tmp/userfile"), P("/tmp/otherfile")),
	                 -EPERM);
	assert_int_equal(ns_unlink(f->ns, &user_cred, P("/tmp/userfile")), 0);
	/* The directory's owner may remove anything. */
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/tmp/otherfile")), 0);
	/* Without sticky, anyone with write permission may. */
	mkdir_ok(f, "/open", 0777);
	create_ok(f, "/open/rootfile");
	assert_int_equal(ns_unlink(f->ns, &user_cred, P("/open/rootfile")), 0);
}

static void test_perm_chmod_chown(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/pub", 0777);
	create_ok(f, "/pub/rootfile");
	create_as(f, &user_cred, "/pub/uf", 0644);
	/* chmod: owner or root only. */
	assert_int_equal(ns_chmod(f->ns, &user_cred, P("/pub/rootfile"), 0777), -EPERM);
	assert_int_equal(st_ok(f, "/pub/rootfile").mode, S_IFREG | 0644);
	assert_int_equal(ns_chmod(f->ns, &user_cred, P("/pub/uf"), 0600), 0);
	assert_int_equal(st_ok(f, "/pub/uf").mode, S_IFREG | 0600);
	/* setgid dropped when the owner is not in the file's group. */
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/pub/uf"), (uint32_t)-1, 50), 0);
	assert_int_equal(ns_chmod(f->ns, &user_cred, P("/pub/uf"), 02755), 0);
	assert_int_equal(st_ok(f, "/pub/uf").mode, S_IFREG | 0755);
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/pub/uf"), (uint32_t)-1, 1000), 0);
	/* chown: a user may not give a file away... */
	assert_int_equal(ns_chown(f->ns, &user_cred, P("/pub/uf"), 0, (uint32_t)-1), -EPERM);
	assert_int_equal(ns_chown(f->ns, &user_cred, P("/pub/uf"), 1001, (uint32_t)-1), -EPERM);
	/* ...nor change others' files... */
	assert_int_equal(ns_chown(f->ns, &user_cred, P("/pub/rootfile"), (uint32_t)-1, 1000), -EPERM);
	/* ...nor pick a group it is not in... */
	assert_int_equal(ns_chown(f->ns, &user_cred, P("/pub/uf"), (uint32_t)-1, 0), -EPERM);
	/* ...but may set its own uid and a group it is in (supplementary too). */
	assert_int_equal(ns_chown(f->ns, &user_cred, P("/pub/uf"), 1000, 1000), 0);
	struct cred withgrp = user_cred;
	withgrp.ngroups = 1;
	withgrp.groups[0] = 77;
	assert_int_equal(ns_chown(f->ns, &withgrp, P("/pub/uf"), (uint32_t)-1, 77), 0);
	assert_int_equal(st_ok(f, "/pub/uf").gid, 77);
	/* Root may do anything; setuid is cleared on a chown of a file. */
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/pub/uf"), 04755), 0);
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/pub/uf"), 1001, 1001), 0);
	ns_attr a = st_ok(f, "/pub/uf");
	assert_int_equal(a.uid, 1001);
	assert_int_equal(a.gid, 1001);
	assert_int_equal(a.mode & S_ISUID, 0);
	/* utimens: others may only touch to now, and need write permission. */
	create_ok(f, "/pub/shared");
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/pub/shared"), 0666), 0);
	assert_int_equal(ns_utimens(f->ns, &user_cred, P("/pub/shared"), NULL), 0);
	const struct timespec t1[2] = { { 1, 0 }, { 1, 0 } };
	assert_int_equal(ns_utimens(f->ns, &user_cred, P("/pub/shared"), t1), -EPERM);
	assert_int_equal(ns_utimens(f->ns, &user_cred, P("/pub/rootfile"), NULL), -EACCES);
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/pub/rootfile"), t1), 0);
	/* Moving a directory to another parent needs write permission on it
	 * (its ".." changes); renaming it in place does not. */
	assert_int_equal(ns_mkdir(f->ns, &user_cred, P("/pub/ud"), 0555, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &user_cred, P("/pub/sub"), 0755, NULL), 0);
	assert_int_equal(ns_rename(f->ns, &user_cred, P("/pub/ud"), P("/pub/sub/ud")), -EACCES);
	assert_int_equal(ns_rename(f->ns, &user_cred, P("/pub/ud"), P("/pub/ud2")), 0);
	assert_int_equal(ns_chmod(f->ns, &user_cred, P("/pub/ud2"), 0755), 0);
	assert_int_equal(ns_rename(f->ns, &user_cred, P("/pub/ud2"), P("/pub/sub/ud")), 0);
	/* -1, -1 changes nothing but is allowed for the owner. */
	assert_int_equal(ns_chown(f->ns, &other_cred, P("/pub/uf"), (uint32_t)-1, (uint32_t)-1), 0);
}

/* ---- sizes, links and times ---------------------------------------------- */

static void test_dir_size_and_nlink(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	for (int i = 0; i < 5; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/d/f%d", i);
		create_ok(f, p);
	}
	mkdir_ok(f, "/d/s1", 0755);
	mkdir_ok(f, "/d/s2", 0755);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("f0"), P("/d/l")), 0);
	ns_attr d = st_ok(f, "/d");
	/* ns_attr carries the entry count; st_size is 40 + 20 * it. */
	assert_int_equal(d.size, 8);
	assert_int_equal(d.nlink, 4);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/d/s1")), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f0")), 0);
	d = st_ok(f, "/d");
	assert_int_equal(d.size, 6);
	assert_int_equal(d.nlink, 3);
	/* The same after the cache is rebuilt from the store. */
	reopen(f);
	d = st_ok(f, "/d");
	assert_int_equal(d.size, 6);
	assert_int_equal(d.nlink, 3);
}

static void test_parent_times_on_create(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	const struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/d"), old), 0);
	ns_attr a = st_ok(f, "/d");
	assert_int_equal(a.mtime_ns, 1000 * 1000000000ll);
	assert_int_equal(a.atime_ns, 1000 * 1000000000ll);
	int64_t c0 = a.ctime_ns;
	create_ok(f, "/d/f");
	ns_attr b = st_ok(f, "/d");
	assert_true(b.mtime_ns > 1000 * 1000000000ll);
	assert_true(b.ctime_ns >= c0);
	assert_int_equal(b.atime_ns, 1000 * 1000000000ll);
	ns_attr fa = st_ok(f, "/d/f");
	assert_int_equal(fa.mtime_ns, b.mtime_ns);
	/* Unlink and rename also touch the parent. */
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/d"), old), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/f")), 0);
	assert_true(st_ok(f, "/d").mtime_ns > 1000 * 1000000000ll);
	create_ok(f, "/d/g");
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/d"), old), 0);
	assert_int_equal(do_rename(f, "/d/g", "/d/h"), 0);
	assert_true(st_ok(f, "/d").mtime_ns > 1000 * 1000000000ll);
	/* A chmod changes ctime only. */
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/d"), old), 0);
	int64_t c1 = st_ok(f, "/d").ctime_ns;
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/d"), 0700), 0);
	assert_int_equal(st_ok(f, "/d").mtime_ns, 1000 * 1000000000ll);
	assert_true(st_ok(f, "/d").ctime_ns >= c1);
	/* UTIME_OMIT keeps, out-of-range nsec is EINVAL. */
	const struct timespec om[2] = { { 5, UTIME_OMIT }, { 7, 0 } };
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/d"), om), 0);
	assert_int_equal(st_ok(f, "/d").atime_ns, 1000 * 1000000000ll);
	assert_int_equal(st_ok(f, "/d").mtime_ns, 7 * 1000000000ll);
	const struct timespec bad[2] = { { 5, 1000000000 }, { 7, 0 } };
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/d"), bad), -EINVAL);
}

/* ---- durability ----------------------------------------------------------- */

static void test_durable_after_commit(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/a", 0750);
	mkdir_ok(f, "/a/b", 0755);
	uint64_t fino = create_ok(f, "/a/b/file");
	assert_int_equal(ns_truncate(f->ns, &root_cred, P("/a/b/file"), 4242), 0);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/a/b/file"), P("/a/hard")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/a/b/file"), P("/sym")), 0);
	char longname[201];
	memset(longname, 'L', 200);
	longname[0] = '/';
	longname[200] = 0;
	create_ok(f, longname);
	create_ok(f, "/gone");
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/gone")), 0);
	mkdir_ok(f, "/moved-from", 0755);
	assert_int_equal(do_rename(f, "/moved-from", "/moved-to"), 0);
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/a"), 1000, 1000), 0);
	ns_attr before = st_ok(f, "/a/b/file");
	uint64_t ino_a = st_ok(f, "/a").ino;

	struct store_meta m0;
	assert_int_equal(store_get_meta(f->st, &m0), 0);
	assert_true(commit_now(f));
	struct store_meta m1;
	assert_int_equal(store_get_meta(f->st, &m1), 0);
	assert_int_equal(m1.last_seq, m0.last_seq + 1);
	assert_true(m1.next_ino > fino);

	/* A fresh cache over the same store: every lookup goes to LMDB. */
	fx_close_ns(f);
	assert_int_equal(fx_open_ns(f), 0);
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.positive + c.negative, 0);
	assert_int_equal(c.committed_seq, m1.last_seq);

	ns_attr a = st_ok(f, "/a");
	assert_int_equal(a.ino, ino_a);
	assert_int_equal(a.mode, S_IFDIR | 0750);
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1000);
	assert_int_equal(a.nlink, 3);
	assert_int_equal(a.size, 2);
	ns_attr fb = st_ok(f, "/a/b/file");
	assert_int_equal(fb.ino, fino);
	assert_int_equal(fb.size, 4242);
	assert_int_equal(fb.nlink, 2);
	assert_int_equal(fb.mtime_ns, before.mtime_ns);
	assert_int_equal(fb.ctime_ns, before.ctime_ns);
	assert_int_equal(st_ok(f, "/a/hard").ino, fino);
	assert_int_equal(st_ok(f, "/sym").ino, fino);
	char buf[MC_SYMLINK_MAX];
	size_t n;
	assert_int_equal(ns_readlink(f->ns, &root_cred, P("/sym"), buf, &n), 0);
	assert_int_equal(n, 9);
	assert_memory_equal(buf, "/a/b/file", 9);
	st_ok(f, longname);
	assert_int_equal(st_err(f, &root_cred, "/gone"), -ENOENT);
	assert_int_equal(st_err(f, &root_cred, "/moved-from"), -ENOENT);
	st_ok(f, "/moved-to");
	ns_get_counts(f->ns, &c);
	assert_true(c.positive > 0);
	assert_int_equal(c.dentries_dirty, 0);
	/* New inode numbers continue after the old ones. */
	uint64_t n2 = create_ok(f, "/after");
	assert_true(n2 > fino);

	/* And the store itself survives a close. */
	assert_true(commit_now(f));
	fx_close_ns(f);
	store_close(f->st);
	f->st = NULL;
	struct store_opts o = { .root_mode = 0755 };
	assert_int_equal(store_open(f->dir, &o, &f->st), 0);
	assert_int_equal(fx_open_ns(f), 0);
	assert_int_equal(st_ok(f, "/after").ino, n2);
	assert_int_equal(st_ok(f, "/a/hard").nlink, 2);
}

static void test_dirty_accounting(void **state)
{
	struct fx *f = *state;
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
	assert_int_equal(c.journal_records, 0);
	assert_int_equal(ns_pending_seq(f->ns), 0);
	assert_null(ns_swap(f->ns));

	mkdir_ok(f, "/d", 0755);
	create_ok(f, "/d/f");
	ns_get_counts(f->ns, &c);
	assert_true(c.dentries_dirty >= 2);
	assert_true(c.inodes_dirty >= 3); /* /, /d, /d/f */
	assert_true(c.journal_records > 0);
	assert_int_equal(ns_journal_records(f->ns), c.journal_records);
	uint64_t seq = ns_pending_seq(f->ns);
	assert_int_equal(seq, c.committed_seq + 1);

	struct journal_batch *b = ns_swap(f->ns);
	assert_non_null(b);
	assert_int_equal(b->seq, seq);
	assert_int_equal(ns_journal_records(f->ns), 0);
	/* Still pending while it is being committed; no second swap. */
	assert_int_equal(ns_pending_seq(f->ns), seq);
	create_ok(f, "/d/g");
	assert_null(ns_swap(f->ns));
	assert_int_equal(ns_pending_seq(f->ns), seq + 1);
	assert_int_equal(store_commit(f->st, b, NULL), 0);
	ns_publish(f->ns, b);
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.committed_seq, seq);
	/* /d/g's batch is still dirty. */
	assert_true(c.dentries_dirty >= 1);
	assert_true(c.inodes_dirty >= 1);
	assert_int_equal(ns_pending_seq(f->ns), seq + 1);
	assert_true(commit_now(f));
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
	assert_int_equal(c.journal_records, 0);
	assert_int_equal(c.committed_seq, seq + 1);
	assert_int_equal(ns_pending_seq(f->ns), 0);
	assert_int_equal(atomic_load(&f->shm->hdr->committed_seq), seq + 1);
	/* A failed operation journals nothing. */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), -EEXIST);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/nope")), -ENOENT);
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.journal_records, 0);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(ns_pending_seq(f->ns), 0);
}

/* ---- rule 1: memory comes back after the tree is gone --------------------- */

static void fill_dir(struct fx *f, const char *dir, int n)
{
	char p[256];
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), i % 3 ? "%s/file-%d" : "%s/a-longer-file-name-%d", dir, i);
		create_ok(f, p);
	}
}

static void baseline(struct fx *f, struct ns_counts *c)
{
	while (commit_now(f))
		;
	ns_get_counts(f->ns, c);
}

static void check_back_to(struct fx *f, const struct ns_counts *b)
{
	struct ns_counts c;
	baseline(f, &c);
	assert_int_equal(c.positive, b->positive);
	assert_int_equal(c.negative, b->negative);
	assert_int_equal(c.inodes, b->inodes);
	assert_int_equal(c.shm_used, b->shm_used);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
}

/* The name "/big" is looked up once first so that its (negative) entry in
 * the root is part of the baseline: what must come back is everything
 * below it. */
static void test_rule1_unlink_all_rmdir(void **state)
{
	struct fx *f = *state;
	assert_int_equal(st_err(f, &root_cred, "/big"), -ENOENT);
	struct ns_counts b;
	baseline(f, &b);
	mkdir_ok(f, "/big", 0755);
	fill_dir(f, "/big", 1000);
	struct ns_counts mid;
	ns_get_counts(f->ns, &mid);
	assert_true(mid.positive >= b.positive + 1000);
	commit_now(f);
	char p[256];
	for (int i = 0; i < 1000; i++) {
		snprintf(p, sizeof(p), i % 3 ? "/big/file-%d" : "/big/a-longer-file-name-%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/big")), 0);
	check_back_to(f, &b);
}

/* The same when /big comes from the store (not complete: every unlink
 * leaves a negative entry, pinned until committed): they must go at once,
 * not wait for the shrinker. */
static void test_rule1_from_store(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/big", 0755);
	fill_dir(f, "/big", 1000);
	reopen(f);
	assert_int_equal(st_err(f, &root_cred, "/big/nothing"), -ENOENT);
	struct ns_counts b;
	baseline(f, &b);
	char p[256];
	for (int i = 0; i < 1000; i++) {
		snprintf(p, sizeof(p), i % 3 ? "/big/file-%d" : "/big/a-longer-file-name-%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	struct ns_counts mid;
	ns_get_counts(f->ns, &mid);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/big")), 0);
	struct ns_counts after;
	ns_get_counts(f->ns, &after);
	/* Freed before any commit: the last unlink left /big empty, hence
	 * complete, and its negatives (/big/nothing too) went then. */
	assert_true(mid.negative < b.negative);
	assert_true(after.negative <= b.negative + 1);
	assert_true(after.positive <= b.positive);
	/* Baseline had /big positive and /big/nothing negative; after: /big
	 * negative in the root. */
	struct ns_counts c;
	baseline(f, &c);
	assert_int_equal(c.positive, b.positive - 1);
	assert_true(c.negative <= b.negative);
	assert_true(c.shm_used <= b.shm_used);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
}

static void test_rule1_rmtree(void **state)
{
	struct fx *f = *state;
	assert_int_equal(st_err(f, &root_cred, "/t"), -ENOENT);
	struct ns_counts b;
	baseline(f, &b);
	mkdir_ok(f, "/t", 0755);
	mkdir_ok(f, "/t/a", 0755);
	mkdir_ok(f, "/t/a/b", 0755);
	mkdir_ok(f, "/t/c", 0755);
	fill_dir(f, "/t", 300);
	fill_dir(f, "/t/a", 300);
	fill_dir(f, "/t/a/b", 300);
	fill_dir(f, "/t/c", 100);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/t/a"), P("/t/c/link")), 0);
	commit_now(f);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 64), 0);
	assert_int_equal(st_err(f, &root_cred, "/t"), -ENOENT);
	check_back_to(f, &b);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 64), -ENOENT);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/"), 64), -EBUSY);
	/* A file: removed like unlink. */
	create_ok(f, "/lone");
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/lone"), 64), 0);
	assert_int_equal(st_err(f, &root_cred, "/lone"), -ENOENT);
	/* Permission: a user may not remove root's tree from a 0755 dir. */
	mkdir_ok(f, "/u", 0777);
	mkdir_ok(f, "/u/v", 0755);
	create_ok(f, "/u/v/w");
	assert_int_equal(ns_rmtree(f->ns, &user_cred, P("/u/v"), 64), -EACCES);
	st_ok(f, "/u/v/w");
}

/* ---- a full segment -------------------------------------------------------- */

static bool counts_same(const struct ns_counts *a, const struct ns_counts *b)
{
	return a->positive == b->positive && a->negative == b->negative &&
	       a->inodes == b->inodes && a->shm_used == b->shm_used &&
	       a->journal_records == b->journal_records && a->dentries_dirty == b->dentries_dirty &&
	       a->inodes_dirty == b->inodes_dirty;
}

static void test_enospc(void **state)
{
	struct fx *f = *state;
	mkdir_ok(f, "/d", 0755);
	char p[64];
	int n = 0, rc;
	struct ns_counts before, after;
	for (;;) {
		snprintf(p, sizeof(p), "/d/f%d", n);
		ns_get_counts(f->ns, &before);
		rc = create_err(f, &root_cred, p);
		if (rc != 0)
			break;
		n++;
		/* No commit: everything stays dirty, so nothing can be evicted
		 * (and there is no committer to force). */
		assert_true(n < 100000);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 100);
	ns_get_counts(f->ns, &after);
	assert_true(counts_same(&before, &after));
	assert_true(after.alloc_failures > 0);
	assert_int_equal(st_err(f, &root_cred, p), -ENOENT);
	assert_int_equal(st_ok(f, "/d").size, (uint64_t)n);
	/* mkdir, symlink and link fail cleanly too. */
	ns_get_counts(f->ns, &before);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d/newdir"), 0755, NULL), -ENOSPC);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("a-target-that-needs-a-blob"), P("/d/sl")),
	                 -ENOSPC);
	ns_get_counts(f->ns, &after);
	assert_true(counts_same(&before, &after));
	assert_int_equal(st_ok(f, "/d").size, (uint64_t)n);
	/* A rename that needs a new dentry in the root. */
	ns_get_counts(f->ns, &before);
	rc = do_rename(f, "/d/f1", "/moved-out");
	ns_get_counts(f->ns, &after);
	if (rc == -ENOSPC) {
		assert_true(counts_same(&before, &after));
		st_ok(f, "/d/f1");
		assert_int_equal(st_err(f, &root_cred, "/moved-out"), -ENOENT);
	} else {
		assert_int_equal(rc, 0); /* a free dentry slot was left */
		assert_int_equal(do_rename(f, "/moved-out", "/d/f1"), 0);
	}

	/* Removing entries makes room again. */
	commit_now(f);
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	commit_now(f);
	snprintf(p, sizeof(p), "/d/f%d", n);
	assert_int_equal(create_err(f, &root_cred, p), 0);
	st_ok(f, p);
	assert_int_equal(ns_link(f->ns, &root_cred, P(p), P("/d/hard")), 0);
	/* Everything created survives a commit and reopen. */
	reopen(f);
	assert_int_equal(st_ok(f, "/d").size, (uint64_t)n - 10 + 2);
}

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

/* chown_common(): even chown(-1, -1) of a non-directory kills setuid, and
 * setgid when the group may execute or the caller is outside the group;
 * utimensat with both times UTIME_OMIT does not look at the path. */
static void test_chown_kills_setid_bits(void **state)
{
	struct fx *f = *state;
	create_ok(f, "/su");
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/su"), 04755), 0);
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/su"), (uint32_t)-1, (uint32_t)-1), 0);
	assert_int_equal(st_ok(f, "/su").mode & 07777, 0755);
	/* setgid without group exec: kept for root, dropped for an owner
	 * outside the group, refused to anybody else. */
	create_ok(f, "/sg");
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/sg"), 1000, 5000), 0);
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/sg"), 02644), 0);
	assert_int_equal(ns_chown(f->ns, &root_cred, P("/sg"), (uint32_t)-1, (uint32_t)-1), 0);
	assert_int_equal(st_ok(f, "/sg").mode & 07777, 02644);
	assert_int_equal(ns_chown(f->ns, &other_cred, P("/sg"), (uint32_t)-1, (uint32_t)-1), -EPERM);
	assert_int_equal(ns_chown(f->ns, &user_cred, P("/sg"), (uint32_t)-1, (uint32_t)-1), 0);
	assert_int_equal(st_ok(f, "/sg").mode & 07777, 0644);
	const struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	assert_int_equal(ns_utimens(f->ns, &root_cred, P("/no/such/path"), omit), 0);
}

/* Paths deeper than the walk's inline stack: 100 nested directories, and
 * ".." all the way back up. */
static void test_deep_paths(void **state)
{
	struct fx *f = *state;
	char p[1024] = "";
	size_t n = 0;
	for (int i = 0; i < 100; i++) {
		n += (size_t)snprintf(p + n, sizeof(p) - n, "/d");
		mkdir_ok(f, p, 0755);
	}
	ns_attr deep = st_ok(f, p);
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(p + n, sizeof(p) - n, "/..");
	ns_attr root = st_ok(f, p);
	assert_int_equal(root.ino, 1);
	assert_int_not_equal(deep.ino, 1);
}

/* A batch holds one INODE_PUT per inode however often it changes: 100
 * creates in one directory journal the directory once, not 100 times, and
 * what is committed is its final state. */
static void test_journal_one_record_per_inode(void **state)
{
	struct fx *f = *state;
	char p[64];
	mkdir_ok(f, "/jd", 0755);
	uint64_t base = ns_journal_records(f->ns);
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "/jd/f%03d", i);
		create_ok(f, p);
	}
	/* 100 new inodes, 100 dentries, and the directory's record rewritten. */
	assert_int_equal(ns_journal_records(f->ns) - base, 200);
	assert_true(commit_now(f));
	reopen(f);
	ns_attr a = st_ok(f, "/jd");
	assert_int_equal(a.size, 100);
	st_ok(f, "/jd/f099");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_mkdir_stat_rmdir),
		T(test_journal_one_record_per_inode),
		T(test_deep_paths),
		T(test_chown_kills_setid_bits),
		T(test_open_create),
		T(test_unlink),
		T(test_rename_same_dir),
		T(test_rename_across_dirs),
		T(test_rename_replace),
		T(test_rename_into_own_subtree),
		T(test_rename_dots_busy),
		T(test_rename_hardlinks_noop),
		T(test_link_nlink),
		T(test_symlink_readlink),
		T(test_eloop),
		T(test_dots_and_slashes),
		T(test_name_too_long),
		T(test_relative_and_empty),
		T(test_perm_search),
		T(test_perm_create_in_root_dir),
		T(test_perm_sticky),
		T(test_perm_chmod_chown),
		T(test_dir_size_and_nlink),
		T(test_parent_times_on_create),
		T(test_durable_after_commit),
		T(test_dirty_accounting),
		T(test_rule1_unlink_all_rmdir),
		T(test_rule1_from_store),
		T(test_rule1_rmtree),
		cmocka_unit_test_setup_teardown(test_enospc, setup_small, teardown),
		T(test_readdir_paging),
		T(test_readdir_concurrent_create),
		T(test_readdir_from_store),
		T(test_unlinked_but_held),
	};
	return cmocka_run_group_tests_name("ns", tests, NULL, NULL);
}
