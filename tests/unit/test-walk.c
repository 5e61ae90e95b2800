/* test-walk.c - the server's path walk (server/walk.c) over a real store
 * and segment: the parent memo of a run of operations under one lock
 * (walk.c, "THE PARENT MEMO"). Creates and removals in one directory reuse
 * the walk of its prefix; each change that must send the walk the long way
 * again does so, within the same hold: a chmod of an ancestor, a rename of
 * the parent or of an ancestor, an rmdir and mkdir of the parent, an
 * eviction of the parent, other credentials. The lock is let go in the middle of a hold
 * behind its back (hold_pause) for the changes that take it themselves, so
 * that only the memo's seqs can notice them. A hold also journals the
 * directory its creates and removals change once (ns_name.c): a swap in
 * the middle of it and its end each write that record. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>

#include <cmocka.h>

#include "journal.h"
#include "ns_impl.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shrink.h"
#include "store.h"
#include "ns_fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };
static const struct cred user_cred = { .uid = 1000, .gid = 1000 };

static int setup(void **state)
{
	return ns_fixture_setup(state, "test-walk", 8 * MIB);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (ns_held == f->ns)
		ns_hold_end(f->ns); /* a failed check left a hold */
	return ns_fixture_teardown(state);
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

static int create(struct fx *f, const struct cred *c, const char *path)
{
	return ns_open(f->ns, c, path, strlen(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false,
	               NULL);
}

/* Let the lock go, and take it again, without the hold knowing (its memo
 * stays current: only the seqs can tell what happened meanwhile). */
static void hold_pause(struct fx *f)
{
	ns_held = NULL;
	pthread_mutex_unlock(&f->ns->lock);
}

static void hold_resume(struct fx *f)
{
	pthread_mutex_lock(&f->ns->lock);
	ns_held = f->ns;
}

/* chmod, which takes the lock itself, between two ops of a hold. */
static int chmod_in_hold(struct fx *f, const char *path, uint32_t mode)
{
	hold_pause(f);
	int rc = ns_chmod(f->ns, &root_cred, path, strlen(path), mode);
	hold_resume(f);
	return rc;
}

static int stat_of(struct fx *f, const char *path, ns_attr *a)
{
	return ns_stat(f->ns, &root_cred, path, strlen(path), false, a);
}

/* Creates in one directory under one hold: every one after the first
 * starts at the parent; all are made, in that directory. */
static void test_memo_same_parent(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/p"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/p/q"), 0755, NULL), 0);
	uint64_t hits = f->ns->memo_hits;
	char path[64];
	ns_hold_begin(f->ns);
	for (int k = 0; k < 10; k++) {
		snprintf(path, sizeof(path), "/p/q/f%d", k);
		assert_int_equal(create(f, &root_cred, path), 0);
	}
	assert_int_equal(create(f, &root_cred, "/p/q/f3"), -EEXIST);
	ns_hold_end(f->ns);
	assert_int_equal(f->ns->memo_hits - hits, 10);
	ns_attr a;
	assert_int_equal(stat_of(f, "/p/q", &a), 0);
	assert_int_equal(a.size, 10); /* entries */
	for (int k = 0; k < 10; k++) {
		snprintf(path, sizeof(path), "/p/q/f%d", k);
		assert_int_equal(stat_of(f, path, &a), 0);
	}
	/* A new hold starts with no memo; removals in the directory carry it
	 * over as creates do. */
	hits = f->ns->memo_hits;
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &root_cred, "/p/q/g"), 0);
	assert_int_equal(f->ns->memo_hits, hits);
	for (int k = 0; k < 10; k++) {
		snprintf(path, sizeof(path), "/p/q/f%d", k);
		assert_int_equal(ns_unlink(f->ns, &root_cred, path, strlen(path)), 0);
	}
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/p/q/f3")), -ENOENT);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/p/q/sub"), 0755, NULL), 0);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/p/q/sub")), 0);
	ns_hold_end(f->ns);
	assert_int_equal(f->ns->memo_hits - hits, 13);
	assert_int_equal(stat_of(f, "/p/q", &a), 0);
	assert_int_equal(a.size, 1);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(stat_of(f, "/p/q/g", &a), 0);
	assert_int_equal(stat_of(f, "/p/q/f0", &a), -ENOENT);
}

/* A chmod of an ancestor between two creates of one hold: the second
 * create checks search permission again (EACCES). */
static void test_memo_chmod_ancestor(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a"), 0777, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a/b"), 0777, NULL), 0);
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &user_cred, "/a/b/f1"), 0);
	assert_int_equal(create(f, &user_cred, "/a/b/f2"), 0);
	assert_int_equal(chmod_in_hold(f, "/a", 0700), 0);
	assert_int_equal(create(f, &user_cred, "/a/b/f3"), -EACCES);
	assert_int_equal(chmod_in_hold(f, "/a", 0777), 0);
	assert_int_equal(chmod_in_hold(f, "/a/b", 0755), 0);
	assert_int_equal(create(f, &user_cred, "/a/b/f4"), -EACCES);
	ns_hold_end(f->ns);
	ns_attr a;
	assert_int_equal(stat_of(f, "/a/b/f3", &a), -ENOENT);
	assert_int_equal(stat_of(f, "/a/b/f4", &a), -ENOENT);
}

/* The parent, then an ancestor, renamed within the hold: the old path is
 * gone (ENOENT), the new one gets the creates, and a directory renamed
 * onto the old name gets the next ones. The renames' paths end in a slash,
 * so their own walks leave the memo as it was: only its seqs tell. */
static void test_memo_rename_parent(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/r"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/r/d"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/r/x"), 0755, NULL), 0);
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &root_cred, "/r/d/f1"), 0);
	assert_int_equal(create(f, &root_cred, "/r/d/f2"), 0);
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/r/d/"), P("/r/e/")), 0);
	assert_int_equal(create(f, &root_cred, "/r/d/f3"), -ENOENT);
	assert_int_equal(create(f, &root_cred, "/r/e/f3"), 0);
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/r/x/"), P("/r/d/")), 0);
	assert_int_equal(create(f, &root_cred, "/r/d/f4"), 0);
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/r/"), P("/s/")), 0);
	assert_int_equal(create(f, &root_cred, "/r/d/f5"), -ENOENT);
	ns_hold_end(f->ns);
	assert_int_equal(stat_of(f, "/s/e/f1", &a), 0);
	assert_int_equal(stat_of(f, "/s/e/f3", &a), 0);
	assert_int_equal(stat_of(f, "/s/e/f4", &a), -ENOENT);
	assert_int_equal(stat_of(f, "/s/d/f4", &a), 0);
	assert_int_equal(stat_of(f, "/s/d", &a), 0);
	assert_int_equal(a.size, 1);
	assert_int_equal(stat_of(f, "/s/e", &a), 0);
	assert_int_equal(a.size, 3);
}

/* rmdir and mkdir of the parent in one hold: the next create goes into
 * the new directory, not into the freed slot of the old one (which the new
 * directory's inode may well take, or /m/z's). As above, "/m/q/" leaves the memo. */
static void test_memo_rmdir_mkdir(void **state)
{
	struct fx *f = *state;
	ns_attr a, old;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/m"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/m/q"), 0755, &old), 0);
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &root_cred, "/m/q/f1"), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/m/q/f1")), 0);
	assert_int_equal(ns_rmdir(f->ns, &root_cred, P("/m/q/")), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/m/z/"), 0755, NULL), 0);
	assert_int_equal(create(f, &root_cred, "/m/q/f2"), -ENOENT);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/m/q/"), 0755, NULL), 0);
	assert_int_equal(create(f, &root_cred, "/m/q/f2"), 0);
	assert_int_equal(create(f, &root_cred, "/m/q/f3"), 0);
	ns_hold_end(f->ns);
	assert_int_equal(stat_of(f, "/m/q", &a), 0);
	assert_true(a.ino != old.ino);
	assert_int_equal(a.size, 2);
	assert_int_equal(stat_of(f, "/m/q/f2", &a), 0);
	assert_int_equal(stat_of(f, "/m/q/f3", &a), 0);
	assert_int_equal(stat_of(f, "/m/z", &a), 0);
	assert_int_equal(a.size, 0);
	/* And so it is in the store. */
	commit_now(f);
	assert_int_equal(shrink_now(f->ns, 0, 1u << 20) > 0, true);
	assert_int_equal(stat_of(f, "/m/q/f3", &a), 0);
	assert_int_equal(stat_of(f, "/m/q", &a), 0);
	assert_int_equal(a.size, 2);
}

/* The parent evicted while the hold's thread let the lock go without the
 * hold knowing (what only the seqs can tell), its slot taken by another
 * directory: the next create loads the parent again and lands in it. */
static void test_memo_evicted_parent(void **state)
{
	struct fx *f = *state;
	ns_attr a, d;
	char path[32];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/e"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/e/d"), 0755, &d), 0);
	assert_int_equal(create(f, &root_cred, "/e/d/f1"), 0);
	commit_now(f);
	ns_hold_begin(f->ns);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/e/d/f1"), O_RDONLY, 0, false, NULL),
	                 0); /* the memo: "/e/d/" */
	hold_pause(f);
	/* Made before the eviction, /n stays (dirty) and complete: the
	 * directories made in it below need no store read, whose retry
	 * would forget the memo. */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/n"), 0755, NULL), 0);
	for (int k = 0; k < 4 && inode_find(f->shm, d.ino); k++)
		shrink_now(f->ns, 0, 1u << 20);
	assert_int_equal(inode_find(f->shm, d.ino), 0); /* evicted */
	for (int k = 0; k < 8; k++) {
		snprintf(path, sizeof(path), "/n/o%d", k);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, path, strlen(path), 0755, NULL), 0);
	}
	hold_resume(f);
	assert_int_equal(create(f, &root_cred, "/e/d/f2"), 0);
	ns_hold_end(f->ns);
	assert_int_equal(stat_of(f, "/e/d/f2", &a), 0);
	assert_int_equal(stat_of(f, "/e/d", &a), 0);
	assert_int_equal(a.ino, d.ino);
	assert_int_equal(a.size, 2);
	for (int k = 0; k < 8; k++) {
		snprintf(path, sizeof(path), "/n/o%d", k);
		assert_int_equal(stat_of(f, path, &a), 0);
		assert_int_equal(a.size, 0);
	}
}

/* Another caller's creates under the same prefix check their own search
 * permission. */
static void test_memo_other_cred(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/c"), 0700, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/c/d"), 0777, NULL), 0);
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &root_cred, "/c/d/f1"), 0);
	assert_int_equal(create(f, &user_cred, "/c/d/f2"), -EACCES);
	assert_int_equal(create(f, &root_cred, "/c/d/f3"), 0);
	ns_hold_end(f->ns);
}

/* Paths the memo does not serve still resolve as the walk says: ".",
 * "..", repeated and trailing slashes, a symlink on the way. */
static void test_memo_path_forms(void **state)
{
	struct fx *f = *state;
	ns_attr a;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/w"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/w/v"), 0755, NULL), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/w/v"), P("/w/l")), 0);
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &root_cred, "/w/v/f1"), 0);
	assert_int_equal(create(f, &root_cred, "/w/l/f2"), 0);
	assert_int_equal(create(f, &root_cred, "/w/v/./f3"), 0);
	assert_int_equal(create(f, &root_cred, "/w/v/../f4"), 0);
	assert_int_equal(create(f, &root_cred, "/w//v/f5"), 0);
	assert_int_equal(create(f, &root_cred, "/w/v/f6/"), -EISDIR);
	assert_int_equal(create(f, &root_cred, "/w/v/."), -EEXIST);
	assert_int_equal(create(f, &root_cred, "/w/v/.."), -EEXIST);
	assert_int_equal(create(f, &root_cred, "/w/l/f7"), 0);
	assert_int_equal(create(f, &root_cred, "/w/v/f8"), 0);
	ns_hold_end(f->ns);
	assert_int_equal(stat_of(f, "/w/v", &a), 0);
	assert_int_equal(a.size, 6);
	assert_int_equal(stat_of(f, "/w/f4", &a), 0);
}

/* The bucket the lookup of name in the directory at path reads (the lock
 * taken: not in a hold). */
static const void *bucket_of(struct fx *f, const char *dir, const char *name)
{
	ns_attr a;
	assert_int_equal(stat_of(f, dir, &a), 0);
	const struct shm *s = f->ns->shm;
	uint64_t h = mc_hash_name(s->hdr->hash_seed, a.ino, name, strlen(name));
	return &s->dgroups[h & s->hdr->dbucket_mask].b[mc_dgroup_slot(h)];
}

/* ns_hold_prefetch (walk.c note 4): in a hold whose memo is the path's
 * prefix, the bucket its last name's lookup reads; nothing outside a hold,
 * under another prefix, before any walk of the hold or once the hold's
 * memo is forgotten. */
static void test_memo_prefetch(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/h"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/h/i"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/k"), 0755, NULL), 0);
	const void *want = bucket_of(f, "/h/i", "name-0002");
	const void *want_x = bucket_of(f, "/h/i", "x");
	assert_null(ns_hold_prefetch(f->ns, P("/h/i/name-0002")));
	ns_hold_begin(f->ns);
	assert_null(ns_hold_prefetch(f->ns, P("/h/i/name-0002")));
	assert_int_equal(create(f, &root_cred, "/h/i/name-0001"), 0);
	assert_ptr_equal(ns_hold_prefetch(f->ns, P("/h/i/name-0002")), want);
	assert_null(ns_hold_prefetch(f->ns, P("/k/name-0002")));
	assert_null(ns_hold_prefetch(f->ns, P("/h/name-0002")));
	assert_null(ns_hold_prefetch(f->ns, P("name-0002")));
	/* The create after the hint finds what the hint pointed at. */
	assert_int_equal(create(f, &root_cred, "/h/i/name-0002"), 0);
	assert_ptr_equal(ns_hold_prefetch(f->ns, P("/h/i/x")), want_x);
	walk_memo_forget(f->ns);
	assert_null(ns_hold_prefetch(f->ns, P("/h/i/x")));
	ns_hold_end(f->ns);
	assert_null(ns_hold_prefetch(f->ns, P("/h/i/x")));
}

/* The store's record of the directory at path. */
static struct mc_inode_rec stored_dir(struct fx *f, const char *path)
{
	ns_attr a;
	struct mc_inode_rec rec;
	char t[8];
	size_t tlen;
	assert_int_equal(stat_of(f, path, &a), 0);
	assert_int_equal(store_get_inode(f->st, a.ino, &rec, t, &tlen), 0);
	return rec;
}

/* Creates and removals in a hold journal their directory's record once
 * (ns_name.c): a commit in the middle of the hold (the lock let go half
 * way, as a store read does) still gets the directory's state after the
 * names it commits, and the end of the hold writes what came after. */
static void test_hold_dir_record(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/h"), 0755, NULL), 0);
	assert_int_equal(create(f, &root_cred, "/h/old"), 0);
	commit_now(f);
	ns_attr h;
	assert_int_equal(stat_of(f, "/h", &h), 0);
	ns_hold_begin(f->ns);
	assert_int_equal(create(f, &root_cred, "/h/a"), 0);
	assert_int_equal(create(f, &root_cred, "/h/b"), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/h/old")), 0);
	hold_pause(f);
	commit_now(f);
	struct mc_inode_rec r = stored_dir(f, "/h");
	assert_int_equal(r.size, 2);
	ns_attr a;
	assert_int_equal(stat_of(f, "/h", &a), 0);
	assert_int_equal(r.mtime_ns, a.mtime_ns);
	hold_resume(f);
	assert_int_equal(create(f, &root_cred, "/h/c"), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/h/s"), 0755, NULL), 0);
	assert_int_equal(f->ns->dir_owed, inode_find(f->shm, h.ino)); /* owed, not written */
	ns_hold_end(f->ns);
	assert_int_equal(f->ns->dir_owed, 0);
	commit_now(f);
	r = stored_dir(f, "/h");
	assert_int_equal(stat_of(f, "/h", &a), 0);
	assert_int_equal(r.size, 4);
	assert_int_equal(r.nlink, 3);
	assert_int_equal(r.mtime_ns, a.mtime_ns);
	assert_int_equal(r.ctime_ns, a.ctime_ns);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_memo_same_parent),
		T(test_memo_chmod_ancestor),
		T(test_memo_rename_parent),
		T(test_memo_rmdir_mkdir),
		T(test_memo_evicted_parent),
		T(test_memo_other_cred),
		T(test_memo_path_forms),
		T(test_memo_prefetch),
		T(test_hold_dir_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
