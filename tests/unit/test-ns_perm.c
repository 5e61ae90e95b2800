/* test-ns_perm.c - unit tests of the namespace's permission checks
 * (server/ns.h): search permission on the way, creating in a directory one
 * may not write, the sticky bit, chmod and chown by owner and others, and
 * the setuid and setgid bits chown drops. */
#include "ns_posix_fixture.h"

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
int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_chown_kills_setid_bits),
		T(test_perm_search),
		T(test_perm_create_in_root_dir),
		T(test_perm_sticky),
		T(test_perm_chmod_chown),
	};
	return cmocka_run_group_tests_name("ns_perm", tests, NULL, NULL);
}
