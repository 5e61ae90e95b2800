/* test-shrink.c - unit tests of the shrinker (server/shrink.h) over a real
 * LMDB store and segment: second chance for referenced entries, leaf first,
 * dirty and held entries pinned, the complete flag cleared by eviction and
 * entries reloaded on the next miss, a client that sets every referenced
 * bit cannot stop eviction, and reads of a full segment reclaim directly. */
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
#include <unistd.h>

#include <cmocka.h>

#include "dcache.h"
#include "inode.h"
#include "journal.h"
#include "mc_shm.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shrink.h"
#include "store.h"
#include "fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)
#define NFILES 10

static const struct cred root_cred = { .uid = 0, .gid = 0 };

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	_Atomic uint64_t *bits;   /* the referenced bitmap a client area would hold */
	uint64_t nbits;
};

static int setup_size(void **state, uint64_t size)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), "test-shrink");
	struct store_opts o = { .root_mode = 0755 };
	if (!mkdtemp(f->dir) || store_open(f->dir, &o, &f->st) < 0 ||
	    shm_create(size, &f->shm) < 0)
		return -1;
	f->nbits = size >> MC_OFF_SHIFT;
	f->bits = calloc(f->nbits / 64 + 1, sizeof(*f->bits));
	if (!f->bits)
		return -1;
	shm_set_refbits(f->shm, f->bits, f->nbits);
	if (ns_new(f->shm, f->st, NULL, &f->ns) < 0)
		return -1;
	*state = f;
	return 0;
}

static int setup(void **state) { return setup_size(state, 4 * MIB); }
static int setup_small(void **state) { return setup_size(state, MIB); }

static int teardown(void **state)
{
	struct fx *f = *state;
	ns_free(f->ns);
	shm_destroy(f->shm);
	store_close(f->st);
	free(f->bits);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* One group commit by hand, then none left. */
static void commit_all(struct fx *f)
{
	struct journal_batch *b;
	while ((b = ns_swap(f->ns))) {
		struct store_commit_times t;
		assert_int_equal(store_commit(f->st, b, &t), 0);
		ns_publish(f->ns, b);
	}
}

static void create_ok(struct fx *f, const char *path)
{
	int rc = ns_open(f->ns, &root_cred, P(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
	if (rc != 0)
		fail_msg("create %s: %d", path, rc);
}

/* The cached dentry of path's last component in directory dirpath, or 0. */
static mc_off_t cached(struct fx *f, const char *dirpath, const char *name)
{
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P(dirpath), true, &a), 0);
	mc_off_t dir = inode_find(f->shm, a.ino);
	return dir ? dcache_find(f->shm, dir, name, strlen(name)) : 0;
}

static bool dir_complete(struct fx *f, const char *dirpath)
{
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P(dirpath), true, &a), 0);
	mc_off_t dir = inode_find(f->shm, a.ino);
	return dir && dcache_complete(f->shm, dir);
}

static uint64_t one_sweep(struct fx *f)
{
	return f->shm->slab[SLAB_DENTRY].pages * (MC_PAGE_SIZE / sizeof(struct mc_dentry));
}

static void make_tree(struct fx *f)
{
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), 0);
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/d/f%d", i);
		create_ok(f, p);
	}
	commit_all(f);
}

static struct shrink_stats stats(struct fx *f)
{
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	return c.shrink;
}

/* One sweep evicts the unreferenced files and takes the referenced ones'
 * bits (second chance); the directory, which has cached children when the
 * hand passes it, stays. The next sweeps take the rest, leaf first. */
static void test_second_chance_leaf_first(void **state)
{
	struct fx *f = *state;
	make_tree(f);
	char n[16];
	for (int i = 0; i < NFILES / 2; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		mc_off_t d = cached(f, "/d", n);
		assert_true(d != 0);
		mc_ref_mark(f->bits, f->nbits, d);
	}
	assert_true(dir_complete(f, "/d"));
	uint64_t ev = shrink_now(f->ns, 0, one_sweep(f));
	assert_int_equal(ev, NFILES / 2);
	for (int i = 0; i < NFILES; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		assert_int_equal(cached(f, "/d", n) != 0, i < NFILES / 2);
	}
	assert_int_equal(stats(f).rotated, NFILES / 2);
	assert_false(dir_complete(f, "/d"));
	/* The rest go, and then /d, whose last cached child went. */
	shrink_now(f->ns, 0, 4 * one_sweep(f));
	assert_int_equal(cached(f, "/", "d"), 0);
	/* Everything reloads on the next miss, transparently. */
	ns_attr a;
	uint64_t reloads = stats(f).reloads;
	for (int i = 0; i < NFILES; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
	}
	assert_true(stats(f).reloads >= reloads + NFILES + 1);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f99"), true, &a), -ENOENT);
}

/* Dirty entries (not committed) and held inodes are never evicted, nor the
 * children of a held directory, nor those of a complete directory with an
 * uncommitted removal (the store still has the removed name). */
static void test_dirty_and_held_pinned(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), 0);
	create_ok(f, "/d/a");
	assert_int_equal(shrink_now(f->ns, 0, 4 * one_sweep(f)), 0);
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d/a"), O_RDONLY, 0, true, &a), 0);
	commit_all(f);
	create_ok(f, "/d/b");
	commit_all(f);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/d/b")), 0); /* /d dirty again */
	assert_int_equal(shrink_now(f->ns, 0, 4 * one_sweep(f)), 0);
	assert_true(cached(f, "/d", "a") != 0);
	commit_all(f);
	shrink_now(f->ns, 0, 4 * one_sweep(f));
	assert_true(cached(f, "/d", "a") != 0); /* held */
	ns_release(f->ns, a.ino);
	shrink_now(f->ns, 0, 4 * one_sweep(f));
	assert_int_equal(cached(f, "/", "d"), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/a"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/b"), true, &a), -ENOENT);
}

/* A client that sets every referenced bit all the time only delays
 * eviction by one sweep. */
static void test_hostile_bits(void **state)
{
	struct fx *f = *state;
	make_tree(f);
	memset((void *)f->bits, 0xff, (f->nbits / 64 + 1) * sizeof(*f->bits));
	uint64_t ev = shrink_now(f->ns, 0, 3 * one_sweep(f));
	assert_true(ev >= NFILES);
	assert_int_equal(cached(f, "/d", "f0"), 0);
}

/* A segment full of clean entries: creates and lookups of uncached names
 * reclaim directly and succeed; the counts say so. */
static void test_direct_reclaim(void **state)
{
	struct fx *f = *state;
	char p[64];
	int n = 0;
	for (int d = 0; d < 40; d++) {
		snprintf(p, sizeof(p), "/d%d", d);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
		for (int i = 0; i < 500; i++, n++) {
			snprintf(p, sizeof(p), "/d%d/file-with-a-long-name-%d", d, i);
			create_ok(f, p);
		}
		commit_all(f);
	}
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_true(c.shrink.direct > 0);
	assert_true(c.shrink.evicted > 0);
	assert_int_equal(c.shrink.enospc, 0);
	assert_true(c.shm_used <= c.shm_total);
	ns_attr a;
	for (int d = 0; d < 40; d++)
		for (int i = 0; i < 500; i += 7) {
			snprintf(p, sizeof(p), "/d%d/file-with-a-long-name-%d", d, i);
			assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
		}
	print_message("# %d files in 1 MiB: %llu evicted, %llu direct reclaims\n", n,
	              (unsigned long long)c.shrink.evicted, (unsigned long long)c.shrink.direct);
}

/* An inode with several names is freed once none of its names is cached:
 * evicting every dentry of a hard-linked file leaves no inode behind, so a
 * tree of hard links cannot fill the segment with inodes nothing evicts.
 * Both names reload, still naming one inode with two links. */
static void test_hardlink_inode_freed(void **state)
{
	struct fx *f = *state;
	ns_attr a, b;
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/a"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/b"), 0755, NULL), 0);
	char p[64], q[64];
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "/a/f%d", i);
		snprintf(q, sizeof(q), "/b/g%d", i);
		create_ok(f, p);
		assert_int_equal(ns_link(f->ns, &root_cred, P(p), P(q)), 0);
	}
	commit_all(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/a/f0"), true, &a), 0);
	assert_int_equal(a.nlink, 2);
	assert_true(inode_find(f->shm, a.ino) != 0);
	uint64_t inodes = f->shm->slab[SLAB_INODE].live;
	shrink_now(f->ns, 0, 8 * one_sweep(f));
	assert_int_equal(cached(f, "/", "a"), 0);
	assert_int_equal(cached(f, "/", "b"), 0);
	assert_int_equal(inode_find(f->shm, a.ino), 0);
	assert_true(f->shm->slab[SLAB_INODE].live + 2 + NFILES <= inodes);
	/* One name cached keeps the inode; both reload to the same inode. */
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/b/g0"), true, &b), 0);
	assert_int_equal(b.ino, a.ino);
	assert_int_equal(b.nlink, 2);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/a/f0"), true, &a), 0);
	assert_int_equal(a.ino, b.ino);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/a/f0")), 0);
	commit_all(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/b/g0"), true, &b), 0);
	assert_int_equal(b.nlink, 1);
}

static int count_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	(void)name, (void)len, (void)ino, (void)dtype;
	(*(int *)arg)++;
	return 0;
}

/* A directory evicted whole and loaded again hands out cookies above every
 * cookie of its earlier state: a listing that resumes from an old cookie
 * gets every entry again (its client drops the repeats), none is skipped. */
static void test_cookies_above_evicted_state(void **state)
{
	struct fx *f = *state;
	make_tree(f);
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d"), O_RDONLY | O_DIRECTORY, 0, true, &a),
	                 0);
	uint64_t last = 0, next;
	bool eof;
	int n = 0;
	assert_int_equal(ns_readdir(f->ns, &root_cred, a.ino, 0, 1000, count_one, &n, &last, &eof),
	                 0);
	assert_int_equal(n, NFILES);
	ns_release(f->ns, a.ino);
	shrink_now(f->ns, 0, 8 * one_sweep(f));
	assert_int_equal(cached(f, "/", "d"), 0); /* gone, directory state and all */
	assert_int_equal(ns_open(f->ns, &root_cred, P("/d"), O_RDONLY | O_DIRECTORY, 0, true, &a),
	                 0);
	n = 0;
	assert_int_equal(ns_readdir(f->ns, &root_cred, a.ino, last, 1000, count_one, &n, &next,
	                            &eof), 0);
	assert_int_equal(n, NFILES);
	assert_true(next > last);
	ns_release(f->ns, a.ino);
}

/* Restart the namespace over the same store with an empty segment. */
static void reopen(struct fx *f)
{
	commit_all(f);
	ns_free(f->ns);
	uint64_t size = f->shm->size;
	shm_destroy(f->shm);
	assert_int_equal(shm_create(size, &f->shm), 0);
	shm_set_refbits(f->shm, f->bits, f->nbits);
	assert_int_equal(ns_new(f->shm, f->st, NULL, &f->ns), 0);
}

/* rmtree of a directory larger than the cache, from an empty cache: the
 * names come from store scans (RM_NAMES at a time, across lock holds of 16
 * removals), some already removed (cached negatives), some cached, a
 * subdirectory, a symlink, an inode with two names in it and one outside.
 * Every entry goes once:
 * the outside link keeps its inode with one link, after a commit and a
 * restart too, and nothing of the tree is left cached. */
static void test_rmtree_uncached(void **state)
{
	struct fx *f = *state;
	char p[96];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t/sub"), 0755, NULL), 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "/t/file-with-a-longish-name-%04d", i);
		create_ok(f, p);
		if (i % 1000 == 0) {
			snprintf(p, sizeof(p), "/t/sub/s%d", i);
			create_ok(f, p);
		}
		if (i % 500 == 0)
			commit_all(f);
	}
	assert_int_equal(ns_link(f->ns, &root_cred, P("/t/file-with-a-longish-name-0077"),
	                         P("/keep")), 0);
	assert_int_equal(ns_link(f->ns, &root_cred, P("/keep"), P("/t/twin")), 0);
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/keep"), P("/t/sym")), 0);
	reopen(f);
	ns_attr a;
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/t/file-with-a-longish-name-0001")), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/t/file-with-a-longish-name-2999")), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t/file-with-a-longish-name-0100"), true, &a),
	                 0);
	assert_false(dir_complete(f, "/t"));
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 16), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/keep"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.shrink.enospc, 0);
	/* 2998 files, sub and its 3, twin, sym, and /t itself */
	assert_int_equal(c.shrink.rmtree_entries, 2998 + 4 + 2 + 1);
	/* No file went through the cache, the symlink and the file with
	 * two names neither: the root, /t, the stat, sub and /keep loaded. */
	assert_int_equal(c.shrink.reloads, 5);
	reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/keep"), true, &a), 0);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t"), true, &a), -ENOENT);
	int n = 0;
	assert_int_equal(store_scan_dir(f->st, 1, count_one, &n), 0);
	assert_int_equal(n, 1); /* keep */
}

/* Files removed by rmtree without being loaded get the checks a loaded
 * one gets: in a sticky directory only the owner's own files go (EPERM
 * at another's, which stays), and nothing goes from a directory the
 * caller cannot write (EACCES). After a commit and a restart the store
 * says the same. */
static void test_rmtree_uncached_checks(void **state)
{
	struct fx *f = *state;
	const struct cred u1 = { .uid = 1000, .gid = 1000 }, u2 = { .uid = 2000, .gid = 2000 };
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/st"), 01777, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/ro"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/ro/sub"), 0777, NULL), 0);
	assert_int_equal(ns_open(f->ns, &u1, P("/st/a-mine"), O_CREAT | O_EXCL | O_WRONLY, 0644,
	                         false, NULL), 0);
	assert_int_equal(ns_open(f->ns, &u2, P("/st/b-theirs"), O_CREAT | O_EXCL | O_WRONLY, 0644,
	                         false, NULL), 0);
	assert_int_equal(ns_open(f->ns, &u1, P("/st/c-mine"), O_CREAT | O_EXCL | O_WRONLY, 0644,
	                         false, NULL), 0);
	create_ok(f, "/ro/sub/f");
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/ro/sub"), 0555), 0);
	reopen(f);
	ns_attr a;
	assert_int_equal(ns_rmtree(f->ns, &u1, P("/st"), 16), -EPERM);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/a-mine"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/b-theirs"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/c-mine"), true, &a), 0);
	assert_int_equal(ns_rmtree(f->ns, &u1, P("/ro/sub"), 16), -EACCES);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/ro/sub/f"), true, &a), 0);
	reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/a-mine"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st/b-theirs"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/ro/sub/f"), true, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/st"), true, &a), 0);
	assert_int_equal(a.size, 2); /* two entries left */
	/* The owner of the rest, then root, empty it. */
	assert_int_equal(ns_unlink(f->ns, &u2, P("/st/b-theirs")), 0);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/st"), 16), 0);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/ro"), 16), 0);
	reopen(f);
	int n = 0;
	assert_int_equal(store_scan_dir(f->st, 1, count_one, &n), 0);
	assert_int_equal(n, 0);
}

/* A segment full of clean entries: an rmtree of an uncached directory,
 * whose removals each leave a dirty negative, reclaims directly as it goes
 * and succeeds, even when one lock hold (up to 8192 removals here) needs
 * more reclaims than an operation's tries: removals done are progress, and
 * the tries count again after each. The other entries reload. */
static void test_rmtree_many_reclaims(void **state)
{
	struct fx *f = *state;
	char p[96];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t"), 0755, NULL), 0);
	for (int i = 0; i < 4000; i++) {
		snprintf(p, sizeof(p), "/t/file-%05d", i);
		create_ok(f, p);
	}
	commit_all(f);
	for (int d = 0; d < 20; d++) {
		snprintf(p, sizeof(p), "/d%d", d);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
		for (int i = 0; i < 1000; i++) {
			snprintf(p, sizeof(p), "/d%d/other-%d", d, i);
			create_ok(f, p);
		}
		commit_all(f);
	}
	reopen(f);
	ns_attr a;
	for (int d = 0; d < 20; d++)
		for (int i = 0; i < 1000; i++) {
			snprintf(p, sizeof(p), "/d%d/other-%d", d, i);
			assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
		}
	struct ns_counts c0, c1;
	ns_get_counts(f->ns, &c0);
	assert_true(c0.shrink.direct > 0); /* the segment is full */
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/t"), 8192), 0);
	ns_get_counts(f->ns, &c1);
	assert_int_equal(c1.shrink.enospc, c0.shrink.enospc);
	print_message("# rmtree of 4000 uncached files: %llu direct reclaims\n",
	              (unsigned long long)(c1.shrink.direct - c0.shrink.direct));
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t"), true, &a), -ENOENT);
	reopen(f);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/t"), true, &a), -ENOENT);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d7/other-7"), true, &a), 0);
}

/* Every page of the segment went to the slabs of short-named entries; then
 * a lookup, and a create, of long names (a blob size class that has no page
 * yet) still succeed: pages are kept back for slabs that have none (here
 * the one page of sixteen), and eviction makes room in the others. */
static void test_new_blob_class_gets_a_page(void **state)
{
	struct fx *f = *state;
	char p[256];
	const char *longname = "/t/a-file-name-too-long-to-be-kept-inline-in-its-dentry";
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/t"), 0755, NULL), 0);
	create_ok(f, longname);
	for (int d = 0; d < 20; d++) {
		snprintf(p, sizeof(p), "/d%d", d);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
		for (int i = 0; i < 1000; i++) {
			snprintf(p, sizeof(p), "/d%d/other-%d", d, i);
			create_ok(f, p);
		}
		commit_all(f);
	}
	reopen(f);
	ns_attr a;
	for (int d = 0; d < 20; d++)
		for (int i = 0; i < 1000; i++) {
			snprintf(p, sizeof(p), "/d%d/other-%d", d, i);
			assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
		}
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_true(c.shrink.direct > 0); /* the segment is full */
	assert_int_equal(ns_stat(f->ns, &root_cred, P(longname), true, &a), 0);
	snprintf(p, sizeof(p), "/d3/%060d", 7); /* the same class */
	create_ok(f, p);
	assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.shrink.enospc, 0);
	assert_true(c.shm_used <= c.shm_total);
}

/* Pages move between slabs: a segment whose pages all went to symlink
 * targets (the biggest blob class) takes, once those are removed, a burst
 * of uncommitted creates (nothing evictable, no committer to force) that
 * needs those pages as dentry and inode pages. With pages given for good
 * to one slab, the creates got -ENOSPC while most of the segment was free. */
static void test_pages_move_between_slabs(void **state)
{
	struct fx *f = *state;
	char p[64];
	static char target[4000];
	memset(target, 't', sizeof(target));
	enum { NLINKS = 150, NFILES_BURST = 2400 };
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/s"), 0755, NULL), 0);
	for (int i = 0; i < NLINKS; i++) {
		snprintf(p, sizeof(p), "/s/l%d", i);
		int rc = ns_symlink(f->ns, &root_cred, target, sizeof(target), P(p));
		if (rc != 0)
			fail_msg("symlink %d: %d", i, rc);
	}
	commit_all(f);
	uint64_t blob_pages = f->shm->slab[SLAB_BLOB0 + MC_BLOB_CLASSES - 1].pages;
	assert_true(blob_pages * MC_PAGE_SIZE >= f->shm->size / 2);
	for (int i = 0; i < NLINKS; i++) {
		snprintf(p, sizeof(p), "/s/l%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	commit_all(f);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/n"), 0755, NULL), 0);
	for (int i = 0; i < NFILES_BURST; i++) {
		snprintf(p, sizeof(p), "/n/f%d", i);
		create_ok(f, p);
	}
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.shrink.enospc, 0);
	assert_true(c.shm_used <= c.shm_total);
	assert_true(f->shm->slab[SLAB_BLOB0 + MC_BLOB_CLASSES - 1].pages <= 1);
	assert_true(f->shm->pages_returned >= blob_pages - 1);
	commit_all(f);
	ns_attr a;
	for (int i = 0; i < NFILES_BURST; i++) {
		snprintf(p, sizeof(p), "/n/f%d", i);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
	}
	print_message("# %llu pages of symlink targets went back; %llu pages given back in all\n",
	              (unsigned long long)blob_pages,
	              (unsigned long long)f->shm->pages_returned);
}

/* Entries dirtied and freed in one batch leave their offsets in the
 * batch's list for its publish; their pages may serve another slot type by
 * then. Here symlink targets of 0xff bytes take those pages; the publish
 * must not read them as dentries or inodes (it cleared "dirty bits" inside
 * the targets, or freed "dentries" made of them). */
static void test_publish_after_pages_moved(void **state)
{
	struct fx *f = *state;
	char p[64];
	enum { NF = 3000, NL = 120 };
	static char target[4000], back[MC_SYMLINK_MAX];
	memset(target, 0xff, sizeof(target));
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/f"), 0755, NULL), 0);
	for (int i = 0; i < NF; i++) {
		snprintf(p, sizeof(p), "/f/%d", i);
		create_ok(f, p);
	}
	for (int i = 0; i < NF; i++) {
		snprintf(p, sizeof(p), "/f/%d", i);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
	}
	uint64_t returned = f->shm->pages_returned;
	assert_true(returned > 0);
	for (int i = 0; i < NL; i++) {
		snprintf(p, sizeof(p), "/l%d", i);
		int rc = ns_symlink(f->ns, &root_cred, target, sizeof(target), P(p));
		if (rc != 0)
			fail_msg("symlink %d: %d", i, rc);
	}
	commit_all(f);
	for (int i = 0; i < NL; i++) {
		snprintf(p, sizeof(p), "/l%d", i);
		size_t n = 0;
		assert_int_equal(ns_readlink(f->ns, &root_cred, P(p), back, &n), 0);
		assert_int_equal(n, sizeof(target));
		if (memcmp(back, target, n) != 0)
			fail_msg("target of %s changed by the publish", p);
	}
	print_message("# %llu pages given back before the publish\n", (unsigned long long)returned);
}

struct seen {
	char last[300];
	int n, zz, aa, dup_or_order;
	uint8_t files[12000];
};

static int seen_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	(void)ino, (void)dtype;
	struct seen *sn = arg;
	char nm[300];
	memcpy(nm, name, len);
	nm[len] = 0;
	if (sn->n && strcmp(nm, sn->last) <= 0)
		sn->dup_or_order++;
	strcpy(sn->last, nm);
	sn->n++;
	int k;
	if (strcmp(nm, "zz-new") == 0)
		sn->zz++;
	else if (strcmp(nm, "aa-renamed") == 0)
		sn->aa++;
	else if (sscanf(nm, "file-%d", &k) == 1 && k >= 0 && k < 12000)
		sn->files[k]++;
	else
		sn->dup_or_order++;
	return 0;
}

/* A directory far larger than the segment lists whole, from the store in
 * name order, with the cache's uncommitted changes (a create, an unlink, a
 * rename) applied, and without being cached. */
static void test_list_larger_than_cache(void **state)
{
	struct fx *f = *state;
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/big"), 0755, NULL), 0);
	for (int i = 0; i < 12000; i++) {
		snprintf(p, sizeof(p), "/big/file-%d", i);
		create_ok(f, p);
		if (i % 500 == 499)
			commit_all(f);
	}
	reopen(f);
	create_ok(f, "/big/zz-new");
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/big/file-5")), 0);
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/big/file-7"), P("/big/aa-renamed")), 0);
	ns_attr a;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/big"), O_RDONLY | O_DIRECTORY, 0, true, &a),
	                 0);
	struct ns_counts before, after;
	ns_get_counts(f->ns, &before);
	static struct seen sn;
	memset(&sn, 0, sizeof(sn));
	uint64_t cookie = 0, next;
	bool eof = false;
	int pages = 0;
	while (!eof) {
		assert_int_equal(ns_readdir(f->ns, &root_cred, a.ino, cookie, 100, seen_one, &sn,
		                            &next, &eof), 0);
		cookie = next;
		assert_true(++pages < 1000);
	}
	ns_get_counts(f->ns, &after);
	assert_int_equal(sn.dup_or_order, 0);
	assert_int_equal(sn.n, 12000 - 2 + 2);
	assert_int_equal(sn.zz, 1);
	assert_int_equal(sn.aa, 1);
	for (int i = 0; i < 12000; i++)
		assert_int_equal(sn.files[i], i == 5 || i == 7 ? 0 : 1);
	assert_true(after.positive <= before.positive + 10); /* nothing cached */
	/* A cursor handed out 1024 cursors ago is refused. */
	uint64_t old = cookie;
	for (int i = 0; i < 1030; i++)
		assert_int_equal(ns_readdir(f->ns, &root_cred, a.ino, 0, 1, seen_one, &sn, &next,
		                            &eof), 0);
	assert_int_equal(ns_readdir(f->ns, &root_cred, a.ino, old, 1, seen_one, &sn, &next, &eof),
	                 -ESTALE);
	ns_release(f->ns, a.ino);
	print_message("# 12000 entries listed from the store in %d pages\n", pages);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_second_chance_leaf_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dirty_and_held_pinned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_bits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hardlink_inode_freed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookies_above_evicted_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_direct_reclaim, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_list_larger_than_cache, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_rmtree_uncached, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_rmtree_uncached_checks, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_rmtree_many_reclaims, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_new_blob_class_gets_a_page, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_pages_move_between_slabs, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_publish_after_pages_moved, setup_small, teardown),
	};
	return cmocka_run_group_tests_name("shrink", tests, NULL, NULL);
}
