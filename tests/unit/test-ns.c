/* test-ns.c - unit tests of the namespace (server/ns.h) over a real LMDB
 * store and shared-memory segment: the basic operations (mkdir, create,
 * unlink), links, symlinks and the walk of a path (dots, slashes, name
 * lengths, deep paths), directory sizes, link counts and times, and the
 * journal's one record per inode. POSIX semantics and errno values (tmpfs
 * is the reference). Renames, permissions, commits, memory and readdir
 * have files of their own (test-ns_*.c). */
#include "ns_posix_fixture.h"

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
		T(test_open_create),
		T(test_unlink),
		T(test_link_nlink),
		T(test_symlink_readlink),
		T(test_eloop),
		T(test_dots_and_slashes),
		T(test_name_too_long),
		T(test_relative_and_empty),
		T(test_dir_size_and_nlink),
		T(test_parent_times_on_create),
	};
	return cmocka_run_group_tests_name("ns", tests, NULL, NULL);
}
