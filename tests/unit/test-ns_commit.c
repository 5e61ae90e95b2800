/* test-ns_commit.c - unit tests of what the namespace (server/ns.h) hands
 * the committer: everything is found again in a fresh cache over the store
 * after a hand-run commit, and the dirty entries, journal records and
 * pending sequence rise and fall as batches are swapped and published. */
#include "ns_posix_fixture.h"

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

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_durable_after_commit),
		T(test_dirty_accounting),
	};
	return cmocka_run_group_tests_name("ns_commit", tests, NULL, NULL);
}
