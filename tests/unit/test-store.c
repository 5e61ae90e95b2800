/* test-store.c - unit tests of the LMDB store (server/store.c): a fresh
 * open and its root, opens refused (busy, not a directory), batches
 * committed and read back, deletions, directory scans, and a map that
 * grows, fills (ENOSPC) and is read meanwhile; meta, the log and what an
 * open refuses are in test-store_meta.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
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
#include "store.h"
#include "fixture.h"

struct fixture {
	char tmp[256];     /* removed at teardown */
	char dir[300];     /* the store directory, two levels below tmp */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->tmp, sizeof(f->tmp), "test-store");
	if (!mkdtemp(f->tmp)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/a/data", f->tmp);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	fixture_rmtree(f->tmp);
	free(f);
	return 0;
}

static struct store *open_ok(const char *dir, const struct store_opts *o)
{
	struct store *s = NULL;
	int rc = store_open(dir, o, &s);
	if (rc != 0)
		fail_msg("store_open(%s): %d", dir, rc);
	assert_non_null(s);
	return s;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static struct mc_inode_rec mkinode(uint64_t ino, uint32_t mode, uint32_t nlink, uint64_t size)
{
	struct mc_inode_rec r = {
		.ino = ino, .mode = mode, .nlink = nlink, .uid = 10, .gid = 20, .size = size,
		.atime_ns = 1, .mtime_ns = 2, .ctime_ns = 3,
	};
	return r;
}

static void assert_inode_eq(const struct mc_inode_rec *a, const struct mc_inode_rec *b)
{
	assert_int_equal(a->ino, b->ino);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->nlink, b->nlink);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_int_equal(a->size, b->size);
	assert_true(a->atime_ns == b->atime_ns);
	assert_true(a->mtime_ns == b->mtime_ns);
	assert_true(a->ctime_ns == b->ctime_ns);
}

static void commit_ok(struct store *s, const struct journal_batch *b)
{
	struct store_commit_times t;
	int rc = store_commit(s, b, &t);
	if (rc != 0)
		fail_msg("store_commit(seq %llu): %d", (unsigned long long)b->seq, rc);
}

/* ------------------------------------------------------------------------ */

static int count_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype)
{
	(*(unsigned *)arg)++;
	return 0;
}

static void test_fresh_open_creates_root(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .root_mode = 0750, .root_uid = 123, .root_gid = 456 };
	int64_t before = realtime_ns();
	struct store *s = open_ok(f->dir, &o);
	int64_t after = realtime_ns();

	/* The directory and its missing parent were made 0700. */
	struct stat st;
	assert_int_equal(stat(f->dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	char parent[320];
	snprintf(parent, sizeof(parent), "%s/a", f->tmp);
	assert_int_equal(stat(parent, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);

	struct mc_inode_rec root;
	size_t tlen = 99;
	assert_int_equal(store_get_inode(s, 1, &root, NULL, &tlen), 0);
	assert_int_equal(root.ino, 1);
	assert_int_equal(root.mode, S_IFDIR | 0750);
	assert_int_equal(root.nlink, 2);
	assert_int_equal(root.uid, 123);
	assert_int_equal(root.gid, 456);
	assert_int_equal(root.size, 0);
	assert_int_equal(tlen, 0);
	assert_true(root.mtime_ns >= before && root.mtime_ns <= after);
	assert_true(root.ctime_ns == root.mtime_ns && root.atime_ns == root.mtime_ns);

	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.format, STORE_FORMAT);
	assert_int_equal(m.next_ino, 2);
	assert_int_equal(m.last_seq, 0);
	static const uint8_t zero[16];
	assert_memory_not_equal(m.uuid, zero, 16);

	struct mc_inode_rec x;
	uint64_t ino;
	uint8_t dt;
	assert_int_equal(store_get_inode(s, 2, &x, NULL, NULL), -ENOENT);
	assert_int_equal(store_get_dentry(s, 1, "a", 1, &ino, &dt), -ENOENT);
	assert_int_equal(store_get_dentry(s, 1, "", 0, &ino, &dt), -EINVAL);
	char big[MC_NAME_MAX + 1];
	memset(big, 'b', sizeof(big));
	assert_int_equal(store_get_dentry(s, 1, big, sizeof(big), &ino, &dt), -ENAMETOOLONG);
	unsigned n = 0;
	assert_int_equal(store_scan_dir(s, 1, count_fn, &n), 0);
	assert_int_equal(n, 0);

	struct store_info info;
	assert_int_equal(store_info(s, &info), 0);
	assert_int_equal(info.log_entries, 0);
	assert_int_equal(info.map_size, 256ull << 20);
	assert_true(info.used_bytes > 0 && info.used_bytes < info.map_size);
	store_close(s);

	/* Reopen: same store, same uuid, root unchanged (not re-created). */
	struct store_opts o2 = { .root_mode = 0777, .root_uid = 1, .root_gid = 1 };
	s = open_ok(f->dir, &o2);
	struct store_meta m2;
	assert_int_equal(store_get_meta(s, &m2), 0);
	assert_memory_equal(m2.uuid, m.uuid, 16);
	assert_int_equal(store_get_inode(s, 1, &x, NULL, NULL), 0);
	assert_inode_eq(&x, &root);
	store_close(s);
}

static void test_second_open_busy(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct store *s2 = (struct store *)(uintptr_t)1;
	assert_int_equal(store_open(f->dir, NULL, &s2), -EBUSY);
	assert_ptr_equal(s2, (struct store *)(uintptr_t)1);   /* untouched on failure */
	/* The first store still works after the failed open. */
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	store_close(s);
	s = open_ok(f->dir, NULL);
	store_close(s);
}

static void test_open_errors(void **state)
{
	struct fixture *f = *state;
	char file[320], under[340];
	snprintf(file, sizeof(file), "%s/plain", f->tmp);
	int fd = open(file, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	struct store *s = NULL;
	assert_int_equal(store_open(file, NULL, &s), -ENOTDIR);
	snprintf(under, sizeof(under), "%s/sub", file);
	assert_int_equal(store_open(under, NULL, &s), -ENOTDIR);
	assert_null(s);
}

/* Build the sample namespace: /d (2), /d/f (3), /l -> ../target (4). */
static void sample_batch(struct journal_batch *b, uint64_t seq)
{
	struct mc_inode_rec root = mkinode(1, S_IFDIR | 0755, 3, 2);
	struct mc_inode_rec d = mkinode(2, S_IFDIR | 0700, 2, 1);
	struct mc_inode_rec fl = mkinode(3, S_IFREG | 0644, 1, 100);
	struct mc_inode_rec l = mkinode(4, S_IFLNK | 0777, 1, 9);
	journal_batch_init(b, seq);
	b->next_ino = 5;
	assert_int_equal(journal_put_inode(b, &d, NULL, 0), 0);
	assert_int_equal(journal_put_inode(b, &fl, NULL, 0), 0);
	assert_int_equal(journal_put_inode(b, &l, "../target", 9), 0);
	assert_int_equal(journal_put_inode(b, &root, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(b, 1, "d", 1, 2, DT_DIR), 0);
	assert_int_equal(journal_put_dentry(b, 2, "f", 1, 3, DT_REG), 0);
	assert_int_equal(journal_put_dentry(b, 1, "l", 1, 4, DT_LNK), 0);
}

static void check_sample(struct store *s)
{
	struct mc_inode_rec r, want;
	char target[MC_SYMLINK_MAX];
	size_t tlen = 0;
	uint64_t ino = 0;
	uint8_t dt = 0;

	want = mkinode(1, S_IFDIR | 0755, 3, 2);
	assert_int_equal(store_get_inode(s, 1, &r, NULL, NULL), 0);
	assert_inode_eq(&r, &want);
	want = mkinode(2, S_IFDIR | 0700, 2, 1);
	assert_int_equal(store_get_inode(s, 2, &r, target, &tlen), 0);
	assert_inode_eq(&r, &want);
	assert_int_equal(tlen, 0);
	want = mkinode(4, S_IFLNK | 0777, 1, 9);
	assert_int_equal(store_get_inode(s, 4, &r, target, &tlen), 0);
	assert_inode_eq(&r, &want);
	assert_int_equal(tlen, 9);
	assert_memory_equal(target, "../target", 9);

	assert_int_equal(store_get_dentry(s, 1, "d", 1, &ino, &dt), 0);
	assert_int_equal(ino, 2);
	assert_int_equal(dt, DT_DIR);
	assert_int_equal(store_get_dentry(s, 1, "l", 1, &ino, &dt), 0);
	assert_int_equal(ino, 4);
	assert_int_equal(dt, DT_LNK);
	assert_int_equal(store_get_dentry(s, 1, "f", 1, &ino, &dt), -ENOENT);
}

static void test_commit_reopen_reads_back(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct journal_batch b;
	sample_batch(&b, 1);
	struct store_commit_times t;
	memset(&t, 0xff, sizeof(t));
	assert_int_equal(store_commit(s, &b, &t), 0);
	assert_true(t.sync_ns > 0 && t.sync_ns < 60000000000ull);
	assert_true(t.log_ns < 60000000000ull && t.apply_ns < 60000000000ull);
	assert_int_equal(t.grow_ns, 0);
	check_sample(s);
	uint64_t ino;
	uint8_t dt;
	assert_int_equal(store_get_dentry(s, 2, "f", 1, &ino, &dt), 0);
	assert_int_equal(ino, 3);
	assert_int_equal(dt, DT_REG);
	store_close(s);

	s = open_ok(f->dir, NULL);
	check_sample(s);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 1);
	assert_int_equal(m.next_ino, 5);
	struct store_info info;
	assert_int_equal(store_info(s, &info), 0);
	assert_int_equal(info.log_entries, 1);
	store_close(s);
	journal_batch_free(&b);
}

static void test_dentry_and_inode_delete(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct journal_batch b;
	sample_batch(&b, 1);
	commit_ok(s, &b);

	journal_batch_reset(&b, 2);
	assert_int_equal(journal_del_dentry(&b, 2, "f", 1), 0);
	assert_int_equal(journal_del_inode(&b, 3), 0);
	assert_int_equal(journal_del_dentry(&b, 2, "absent", 6), 0);   /* absent is fine */
	assert_int_equal(journal_del_inode(&b, 999), 0);
	commit_ok(s, &b);
	store_close(s);

	s = open_ok(f->dir, NULL);
	uint64_t ino;
	uint8_t dt;
	struct mc_inode_rec r;
	assert_int_equal(store_get_dentry(s, 2, "f", 1, &ino, &dt), -ENOENT);
	assert_int_equal(store_get_inode(s, 3, &r, NULL, NULL), -ENOENT);
	check_sample(s);   /* the rest is intact */
	unsigned n = 0;
	assert_int_equal(store_scan_dir(s, 2, count_fn, &n), 0);
	assert_int_equal(n, 0);
	store_close(s);
	journal_batch_free(&b);
}

#define SCAN_N 1000

struct scan_ctx {
	char names[SCAN_N][40];
	bool seen[SCAN_N];
	char prev[MC_NAME_MAX + 1];
	size_t prevlen;
	unsigned calls;
	unsigned stop_after;
};

static int lmdb_order(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al < bl ? -1 : al > bl);
}

static int scan_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype)
{
	struct scan_ctx *c = arg;
	if (c->calls && lmdb_order(c->prev, c->prevlen, name, namelen) >= 0)
		fail_msg("out of order: '%.*s' after '%.*s'", (int)namelen, name,
		         (int)c->prevlen, c->prev);
	memcpy(c->prev, name, namelen);
	c->prevlen = namelen;
	assert_true(ino >= 100 && ino < 100 + SCAN_N);
	unsigned i = (unsigned)(ino - 100);
	assert_int_equal(strlen(c->names[i]), namelen);
	assert_memory_equal(c->names[i], name, namelen);
	assert_int_equal(name[namelen], '\0');
	assert_int_equal(dtype, i % 2 ? DT_REG : DT_DIR);
	assert_false(c->seen[i]);
	c->seen[i] = true;
	c->calls++;
	if (c->stop_after && c->calls == c->stop_after)
		return 42;
	return 0;
}

static void test_scan_dir_1000(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct scan_ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	struct journal_batch b;
	journal_batch_init(&b, 1);
	b.next_ino = 100 + SCAN_N;
	/* Names of different lengths, inserted in an order unlike the key order. */
	for (unsigned i = 0; i < SCAN_N; i++) {
		unsigned k = (i * 7919u) % SCAN_N;
		snprintf(c->names[i], sizeof(c->names[i]), "%u%.*s", k, (int)(k % 13), "zzzzzzzzzzzzz");
		assert_int_equal(journal_put_dentry(&b, 256, c->names[i], strlen(c->names[i]),
		                                    100 + i, i % 2 ? DT_REG : DT_DIR), 0);
	}
	/* Neighbours that share key bytes: parents 255, 257, 65536 and 1. */
	assert_int_equal(journal_put_dentry(&b, 255, "zz", 2, 5, DT_REG), 0);
	assert_int_equal(journal_put_dentry(&b, 257, "0", 1, 6, DT_REG), 0);
	assert_int_equal(journal_put_dentry(&b, 65536, "0", 1, 7, DT_REG), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "x", 1, 8, DT_REG), 0);
	commit_ok(s, &b);

	assert_int_equal(store_scan_dir(s, 256, scan_fn, c), 0);
	assert_int_equal(c->calls, SCAN_N);
	for (unsigned i = 0; i < SCAN_N; i++)
		assert_true(c->seen[i]);

	/* A callback's non-zero return stops the scan and is returned. */
	memset(c->seen, 0, sizeof(c->seen));
	c->calls = 0;
	c->stop_after = 10;
	assert_int_equal(store_scan_dir(s, 256, scan_fn, c), 42);
	assert_int_equal(c->calls, 10);

	unsigned n = 0;
	assert_int_equal(store_scan_dir(s, 255, count_fn, &n), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(store_scan_dir(s, 258, count_fn, &n), 0);
	assert_int_equal(n, 0);
	n = 0;
	assert_int_equal(store_scan_dir(s, UINT64_MAX, count_fn, &n), 0);
	assert_int_equal(n, 0);
	store_close(s);
	journal_batch_free(&b);
	free(c);
}

struct attr_ctx {
	unsigned calls, with_rec, bad;
};

/* Files "f0000".."f0399" name inodes 1000 + 7 * ((i * 37) % 400), so the
 * inode lookups jump back and forth; every tenth has no inode record and
 * every ninth is a symlink (no plain record either). */
static int attr_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                   const struct mc_inode_rec *rec)
{
	struct attr_ctx *a = arg;
	unsigned i;
	a->calls++;
	if (namelen != 5 || sscanf(name, "f%4u", &i) != 1 || i >= 400 ||
	    ino != 1000 + 7 * ((i * 37u) % 400)) {
		a->bad++;
		return 0;
	}
	bool want = i % 10 != 0 && i % 9 != 0;
	if (!rec != !want) {
		a->bad++;
		return 0;
	}
	if (rec) {
		a->with_rec++;
		if (rec->ino != ino || rec->size != i || rec->mode != (S_IFREG | 0600) ||
		    dtype != DT_REG)
			a->bad++;
	}
	return 0;
}

/* store_scan_dir_attrs gives each name with its inode record when the
 * record is there and plain, whatever order the inode numbers come in,
 * from the start or after a name. */
static void test_scan_dir_attrs(void **state)
{
	struct fixture *f = *state;
	struct store *s = open_ok(f->dir, NULL);
	struct journal_batch b;
	journal_batch_init(&b, 1);
	b.next_ino = 5000;
	char name[8];
	for (unsigned i = 0; i < 400; i++) {
		uint64_t ino = 1000 + 7 * ((i * 37u) % 400);
		snprintf(name, sizeof(name), "f%04u", i);
		bool lnk = i % 9 == 0;
		if (i % 10 != 0) {
			struct mc_inode_rec r = mkinode(ino, (lnk ? S_IFLNK | 0777 : S_IFREG | 0600), 1, i);
			assert_int_equal(journal_put_inode(&b, &r, lnk ? "t" : NULL, lnk ? 1 : 0), 0);
		}
		assert_int_equal(journal_put_dentry(&b, 300, name, 5, ino, lnk ? DT_LNK : DT_REG), 0);
	}
	commit_ok(s, &b);
	struct attr_ctx a = { 0 };
	assert_int_equal(store_scan_dir_attrs(s, 300, NULL, 0, attr_fn, &a), 0);
	assert_int_equal(a.bad, 0);
	assert_int_equal(a.calls, 400);
	unsigned plain = 0;
	for (unsigned i = 0; i < 400; i++)
		plain += i % 10 != 0 && i % 9 != 0;
	assert_int_equal(a.with_rec, plain);
	/* After a name: the rest only. */
	memset(&a, 0, sizeof(a));
	assert_int_equal(store_scan_dir_attrs(s, 300, "f0199", 5, attr_fn, &a), 0);
	assert_int_equal(a.bad, 0);
	assert_int_equal(a.calls, 200);
	store_close(s);
	journal_batch_free(&b);
}

/* A batch of n symlink inodes with ~1 KiB targets and their dentries. */
static void big_batch(struct journal_batch *b, uint64_t seq, uint64_t first, unsigned n)
{
	char target[1024];
	memset(target, 't', sizeof(target));
	journal_batch_init(b, seq);
	b->next_ino = first + n;
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		int len = snprintf(name, sizeof(name), "big-%u", i);
		struct mc_inode_rec r = mkinode(first + i, S_IFLNK | 0777, 1, sizeof(target));
		assert_int_equal(journal_put_inode(b, &r, target, sizeof(target)), 0);
		assert_int_equal(journal_put_dentry(b, 1, name, (size_t)len, first + i, DT_LNK), 0);
	}
}

static void test_map_full_grows(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .map_size = 64 << 10, .map_size_max = 64 << 20 };
	struct store *s = open_ok(f->dir, &o);
	struct store_info info;
	assert_int_equal(store_info(s, &info), 0);
	assert_int_equal(info.map_size, 64 << 10);

	struct journal_batch b;
	big_batch(&b, 1, 10, 2000);     /* ~2.5 MB of values */
	struct store_commit_times t;
	assert_int_equal(store_commit(s, &b, &t), 0);
	assert_true(t.grow_ns > 0);
	assert_int_equal(store_info(s, &info), 0);
	assert_true(info.map_size >= 2 << 20 && info.map_size <= 64 << 20);
	assert_true(info.used_bytes <= info.map_size);
	assert_int_equal(info.log_entries, 1);
	store_close(s);

	s = open_ok(f->dir, &o);
	struct mc_inode_rec r;
	char target[MC_SYMLINK_MAX];
	size_t tlen;
	uint64_t ino;
	uint8_t dt;
	for (unsigned i = 0; i < 2000; i += 97) {
		char name[32];
		int len = snprintf(name, sizeof(name), "big-%u", i);
		assert_int_equal(store_get_dentry(s, 1, name, (size_t)len, &ino, &dt), 0);
		assert_int_equal(ino, 10 + i);
		assert_int_equal(store_get_inode(s, ino, &r, target, &tlen), 0);
		assert_int_equal(tlen, 1024);
		assert_int_equal(target[1023], 't');
	}
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 1);
	assert_int_equal(m.next_ino, 2010);
	store_close(s);
	journal_batch_free(&b);
}

static void test_map_full_enospc_unchanged(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .map_size = 64 << 10, .map_size_max = 128 << 10 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch small, big;
	sample_batch(&small, 1);
	commit_ok(s, &small);

	big_batch(&big, 2, 10, 2000);
	struct store_commit_times t;
	assert_int_equal(store_commit(s, &big, &t), -ENOSPC);
	/* Still usable, nothing of the failed batch visible. */
	check_sample(s);
	uint64_t ino;
	uint8_t dt;
	assert_int_equal(store_get_dentry(s, 1, "big-0", 5, &ino, &dt), -ENOENT);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 1);
	store_close(s);

	s = open_ok(f->dir, &o);
	check_sample(s);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 1);
	assert_int_equal(m.next_ino, 5);
	struct mc_inode_rec r;
	assert_int_equal(store_get_inode(s, 10, &r, NULL, NULL), -ENOENT);
	assert_int_equal(store_get_dentry(s, 1, "big-1999", 8, &ino, &dt), -ENOENT);
	struct store_info info;
	assert_int_equal(store_info(s, &info), 0);
	assert_int_equal(info.log_entries, 1);

	/* A batch that fits can still be committed as seq 2. */
	journal_batch_reset(&small, 2);
	small.next_ino = 6;
	assert_int_equal(journal_put_dentry(&small, 1, "after", 5, 2, DT_DIR), 0);
	commit_ok(s, &small);
	assert_int_equal(store_get_dentry(s, 1, "after", 5, &ino, &dt), 0);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 2);
	store_close(s);
	journal_batch_free(&small);
	journal_batch_free(&big);
}

struct reader_arg {
	struct store *s;
	atomic_bool stop;
	atomic_uint errors;
	atomic_uint reads;
};

static void *reader_main(void *p)
{
	struct reader_arg *a = p;
	while (!atomic_load(&a->stop)) {
		struct mc_inode_rec r;
		uint64_t ino;
		uint8_t dt;
		unsigned n = 0;
		if (store_get_inode(a->s, 1, &r, NULL, NULL) != 0 || r.ino != 1)
			atomic_fetch_add(&a->errors, 1);
		int rc = store_get_dentry(a->s, 1, "big-0", 5, &ino, &dt);
		if (rc != 0 && rc != -ENOENT)
			atomic_fetch_add(&a->errors, 1);
		if (store_scan_dir(a->s, 1, count_fn, &n) != 0)
			atomic_fetch_add(&a->errors, 1);
		atomic_fetch_add(&a->reads, 1);
	}
	return NULL;
}

/* Readers on other threads keep working while commits grow the map. */
static void test_readers_during_growth(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .map_size = 64 << 10, .map_size_max = 256 << 20 };
	struct store *s = open_ok(f->dir, &o);
	struct reader_arg a = { .s = s };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &a), 0);
	struct journal_batch b;
	struct store_commit_times t;
	uint64_t grew = 0;
	for (unsigned i = 0; i < 6; i++) {
		/* Let the readers run between commits (and before the first). */
		unsigned seen = atomic_load(&a.reads);
		while (atomic_load(&a.reads) < seen + 20)
			sched_yield();
		big_batch(&b, i + 1, 10 + i * 500, 500);
		assert_int_equal(store_commit(s, &b, &t), 0);
		grew += t.grow_ns > 0;
		journal_batch_free(&b);
	}
	atomic_store(&a.stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&a.errors), 0);
	assert_true(grew > 0);
	assert_true(atomic_load(&a.reads) >= 120);
	unsigned n = 0;
	assert_int_equal(store_scan_dir(s, 1, count_fn, &n), 0);
	assert_int_equal(n, 500);    /* big-0..499 reused by every batch */
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fresh_open_creates_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_open_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_reopen_reads_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dentry_and_inode_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_dir_1000, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_dir_attrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_full_grows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_full_enospc_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readers_during_growth, setup, teardown),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
