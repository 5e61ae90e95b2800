/* test-store_overlay.c - unit tests of the log-first commit (server/
 * store_log.c note 5, store_overlay.c): what a commit writes, reads of
 * batches not yet applied to the tables (point reads from the overlay,
 * scans after an apply), an overlay entry outgrown, reads racing commits,
 * and a batch added to the overlay in place as record by record; what a
 * store_open does with batches left unapplied is in
 * test-store_recovery.c. */
#include <dirent.h>
#include <errno.h>
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
#include <stdatomic.h>

#include <cmocka.h>

#include "journal.h"
#include "mc_shm.h"
#include "store.h"
#include "store_read.h"
#include "store_fixture.h"
#include "store_overlay.h"

static int setup(void **state)
{
	return store_fixture_setup(state, "test-store_overlay");
}

static int teardown(void **state)
{
	return store_fixture_teardown(state);
}

/* Bytes this process passed to write(2) and its kin so far. */
static uint64_t wchar(void)
{
	FILE *fp = fopen("/proc/self/io", "r");
	char line[128];
	uint64_t v = 0;
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp))
		if (strncmp(line, "wchar:", 6) == 0)
			v = strtoull(line + 6, NULL, 10);
	fclose(fp);
	return v;
}

/* A commit writes the log (and meta), not the tables: 64 commits of 10
 * creates each write at most 8 pages a commit on average, the group
 * applies included (they wrote about 12 when every commit updated
 * `inodes` and `dentries` too; raw LMDB puts of the dentries alone: 4). */
static void test_commit_pages(void **state)
{
	struct fixture *f = *state;
	enum { COMMITS = 64, N = 10 };
	struct store *s = open_ok(f->dir, NULL);
	struct journal_batch b;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	uint64_t w0 = wchar();
	for (uint64_t seq = 1; seq <= COMMITS; seq++) {
		create_batch(&b, seq, N, &ino);
		commit_ok(s, &b);
	}
	uint64_t per = (wchar() - w0) / COMMITS;
	print_message("# %llu bytes written per commit of %d creates\n",
	              (unsigned long long)per, N);
	assert_true(per <= 8 * 4096);
	store_close(s);
	journal_batch_free(&b);
}

/* Batches committed but not applied: point reads answer from the overlay
 * (a put, a deletion, a symlink target), scans and the walk apply them
 * first, and the tables then hold them (applied_seq moves). */
static void test_reads_before_apply(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	create_batch(&b, 1, 3, &ino);                   /* inodes 2, 3, 4 */
	commit_ok(s, &b);
	journal_batch_reset(&b, 2);
	struct mc_inode_rec big = file_rec(3, 4096);
	struct mc_inode_rec ln = { .ino = 5, .mode = S_IFLNK | 0777, .nlink = 1, .size = 6 };
	assert_int_equal(journal_put_inode(&b, &big, NULL, 0), 0);
	assert_int_equal(journal_del_dentry(&b, 1, "f000000000000002", 16), 0);
	assert_int_equal(journal_del_inode(&b, 2), 0);
	assert_int_equal(journal_put_inode(&b, &ln, "target", 6), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "link", 4, 5, DT_LNK), 0);
	b.next_ino = 6;
	commit_ok(s, &b);

	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.last_seq, 2);
	assert_int_equal(m.applied_seq, 0);
	assert_int_equal(m.next_ino, 6);

	struct mc_inode_rec r;
	char target[MC_SYMLINK_MAX];
	size_t tlen = 0;
	uint64_t i;
	uint8_t dt;
	bool have;
	assert_int_equal(store_get_inode(s, 3, &r, NULL, NULL), 0);
	assert_int_equal(r.size, 4096);
	assert_int_equal(store_get_inode(s, 2, &r, NULL, NULL), -ENOENT);
	assert_int_equal(store_get_dentry(s, 1, "f000000000000002", 16, &i, &dt), -ENOENT);
	assert_int_equal(store_get_dentry(s, 1, "f000000000000004", 16, &i, &dt), 0);
	assert_int_equal(i, 4);
	assert_int_equal(store_get_inode(s, 5, &r, target, &tlen), 0);
	assert_int_equal(tlen, 6);
	assert_memory_equal(target, "target", 6);
	assert_int_equal(store_get_entry(s, 1, "link", 4, &i, &dt, &r, target, &tlen, &have), 0);
	assert_int_equal(i, 5);
	assert_int_equal(dt, DT_LNK);
	assert_true(have);
	assert_int_equal(store_get_entry(s, 1, "f000000000000003", 16, &i, &dt, &r, target, &tlen,
	                                 &have), 0);
	assert_int_equal(r.size, 4096);
	assert_int_equal(store_get_entry(s, 1, "f000000000000002", 16, &i, &dt, &r, target, &tlen,
	                                 &have), -ENOENT);
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.applied_seq, 0);             /* point reads applied nothing */

	/* A scan sees both batches: f3, f4, link (f2 is gone). */
	struct names nm = { .n = 0 };
	assert_int_equal(store_scan_dir(s, 1, names_cb, &nm), 0);
	assert_int_equal(nm.n, 3);
	assert_string_equal(nm.v[0], "f000000000000003");
	assert_string_equal(nm.v[1], "f000000000000004");
	assert_string_equal(nm.v[2], "link");
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.applied_seq, 0);             /* nor did the scan: it merged */
	assert_int_equal(store_get_inode(s, 2, &r, NULL, NULL), -ENOENT);
	assert_int_equal(store_get_inode(s, 3, &r, NULL, NULL), 0);
	assert_int_equal(r.size, 4096);
	store_close(s);
	journal_batch_free(&b);
}

/* An inode whose newer value outgrows its overlay entry (deleted, then
 * made again as a symlink with a target) gets a new entry: the apply
 * writes that one, not the one it replaced. */
static void test_entry_outgrown(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 3 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	create_batch(&b, 1, 4, &ino);                   /* inodes 2..5 */
	commit_ok(s, &b);
	journal_batch_reset(&b, 2);
	struct mc_inode_rec ln = { .ino = 3, .mode = S_IFLNK | 0777, .nlink = 1, .size = 14 };
	assert_int_equal(journal_del_dentry(&b, 1, "f000000000000003", 16), 0);
	assert_int_equal(journal_del_inode(&b, 3), 0);
	assert_int_equal(journal_put_inode(&b, &ln, "a/longer/target", 14), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "link", 4, 3, DT_LNK), 0);
	b.next_ino = ino;
	commit_ok(s, &b);

	struct mc_inode_rec r;
	char target[MC_SYMLINK_MAX];
	size_t tlen = 0;
	struct store_meta m;
	for (int applied = 0; applied < 2; applied++) {
		assert_int_equal(store_get_inode(s, 3, &r, target, &tlen), 0);
		assert_true(S_ISLNK(r.mode));
		assert_int_equal(tlen, 14);
		assert_memory_equal(target, "a/longer/target", 14);
		assert_int_equal(store_get_inode(s, 4, &r, NULL, NULL), 0);
		assert_int_equal(store_get_meta(s, &m), 0);
		assert_int_equal(m.applied_seq, applied ? 3 : 0);
		if (applied)
			break;
		create_batch(&b, 3, 1, &ino);           /* the third batch applies */
		commit_ok(s, &b);
	}
	store_close(s);
	journal_batch_free(&b);
}

static uint64_t applied_seq(struct store *s)
{
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	return m.applied_seq;
}

/* A commit someone waits for puts off an apply that only the soft bounds
 * make due, up to STORE_APPLY_HARD (2) times them (note 8); a commit no
 * one waits for, or store_apply_owed_run, applies it. */
static void test_waited_apply_put_off(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 3 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	uint64_t ino = 2, seq = 1;
	journal_batch_init(&b, 0);
	for (; seq <= 3; seq++) {
		create_batch(&b, seq, 2, &ino);
		assert_int_equal(store_commit_waited(s, &b, NULL), 0);
	}
	assert_int_equal(applied_seq(s), 0);
	assert_true(store_apply_owed(s));
	/* Read back through the overlay meanwhile. */
	struct mc_inode_rec r;
	assert_int_equal(store_get_inode(s, ino - 1, &r, NULL, NULL), 0);
	assert_int_equal(store_apply_owed_run(s), 1);
	assert_int_equal(applied_seq(s), 3);
	assert_false(store_apply_owed(s));
	assert_int_equal(store_apply_owed_run(s), 0);
	/* Waited for, up to 2 x 3 batches: the sixth applies. */
	for (; seq <= 8; seq++) {
		create_batch(&b, seq, 2, &ino);
		assert_int_equal(store_commit_waited(s, &b, NULL), 0);
		assert_int_equal(applied_seq(s), 3);
		assert_int_equal(store_apply_owed(s), seq >= 6);
	}
	create_batch(&b, seq, 2, &ino);
	assert_int_equal(store_commit_waited(s, &b, NULL), 0);
	assert_int_equal(applied_seq(s), 9);
	assert_false(store_apply_owed(s));
	/* Not waited for: applies at the soft bound. */
	for (seq = 10; seq <= 12; seq++) {
		create_batch(&b, seq, 2, &ino);
		assert_int_equal(store_commit_waited(s, &b, NULL), 0);
	}
	assert_int_equal(applied_seq(s), 9);
	create_batch(&b, seq, 2, &ino);
	assert_int_equal(store_commit(s, &b, NULL), 0);
	assert_int_equal(applied_seq(s), 13);
	assert_false(store_apply_owed(s));
	store_close(s);
	/* apply_batches 1: every commit applies, waited for or not. */
	o.apply_batches = 1;
	s = open_ok(f->dir, &o);
	create_batch(&b, 14, 2, &ino);
	assert_int_equal(store_commit_waited(s, &b, NULL), 0);
	assert_int_equal(applied_seq(s), 14);
	assert_false(store_apply_owed(s));
	store_close(s);
	journal_batch_free(&b);
}

struct ahead_got {
	char name[8][32];
	uint64_t ino[8];
	int n;
};

static int ahead_cb(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype)
{
	struct ahead_got *g = arg;
	(void)dtype;
	if (g->n == 8 || namelen >= sizeof(g->name[0]))
		return -E2BIG;
	memcpy(g->name[g->n], name, namelen + 1);
	g->ino[g->n++] = ino;
	return 0;
}

/* A point read with its read-ahead (store_get_dentry_ahead): the names
 * after the one read, in the tables' order and in its directory only,
 * each as a point read would say it: a deletion or a new value in a batch
 * not applied is seen; a name only such a batch has is left out; at most
 * max names are looked at. */
static void test_dentry_ahead(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	create_batch(&b, 1, 6, &ino);                   /* f..2 .. f..7 */
	assert_int_equal(journal_put_dentry(&b, 8, "f000000000000001", 16, 8, DT_REG), 0);
	commit_ok(s, &b);
	store_close(s);                                 /* applies them */
	s = open_ok(f->dir, &o);
	journal_batch_reset(&b, 2);
	assert_int_equal(journal_del_dentry(&b, 1, "f000000000000003", 16), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "f000000000000005", 16, 9, DT_REG), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "f000000000000004x", 17, 10, DT_REG), 0);
	b.next_ino = 11;
	commit_ok(s, &b);
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	assert_int_equal(m.applied_seq, 1);

	struct ahead_got g = { .n = 0 };
	uint64_t i = 0;
	uint8_t dt = 0;
	assert_int_equal(store_get_dentry_ahead(s, 1, "f000000000000002", 16, &i, &dt, 8,
	                                        ahead_cb, &g), 0);
	assert_int_equal(i, 2);
	assert_int_equal(dt, DT_REG);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.name[0], "f000000000000004");
	assert_int_equal(g.ino[0], 4);
	assert_string_equal(g.name[1], "f000000000000005");
	assert_int_equal(g.ino[1], 9);
	assert_string_equal(g.name[2], "f000000000000006");
	assert_string_equal(g.name[3], "f000000000000007");
	/* A name gone, or before the first: not found, and what follows. */
	g.n = 0;
	assert_int_equal(store_get_dentry_ahead(s, 1, "f000000000000003", 16, &i, &dt, 2,
	                                        ahead_cb, &g), -ENOENT);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.name[0], "f000000000000004");
	assert_string_equal(g.name[1], "f000000000000005");
	g.n = 0;
	assert_int_equal(store_get_dentry_ahead(s, 1, "a", 1, &i, &dt, 2, ahead_cb, &g), -ENOENT);
	assert_int_equal(g.n, 1);                       /* f..2, then f..3 (gone) looked at */
	assert_string_equal(g.name[0], "f000000000000002");
	/* The overlay's name itself; the last name: nothing after it. */
	g.n = 0;
	assert_int_equal(store_get_dentry_ahead(s, 1, "f000000000000004x", 17, &i, &dt, 8,
	                                        ahead_cb, &g), 0);
	assert_int_equal(i, 10);
	assert_int_equal(g.n, 3);
	g.n = 0;
	assert_int_equal(store_get_dentry_ahead(s, 1, "f000000000000007", 16, &i, &dt, 8,
	                                        ahead_cb, &g), 0);
	assert_int_equal(i, 7);
	assert_int_equal(g.n, 0);
	assert_int_equal(store_get_dentry_ahead(s, 1, "", 0, &i, &dt, 8, ahead_cb, &g), -EINVAL);
	store_close(s);
	journal_batch_free(&b);
}

/* Readers racing commits: once store_commit returned for batch k, every
 * read finds k's names, whether the tables hold them yet or not (point
 * reads, scans that apply first, both while applies come and go). */
struct race {
	struct store *s;
	_Atomic uint64_t committed;     /* last batch whose commit returned */
	_Atomic bool done;
	int err;                        /* the writer's */
};

enum { RACE_BATCHES = 300, RACE_N = 2 };

static void *race_writer(void *arg)
{
	struct race *r = arg;
	struct journal_batch b;
	uint64_t ino = 2;
	journal_batch_init(&b, 0);
	for (uint64_t seq = 1; seq <= RACE_BATCHES && !r->err; seq++) {
		create_batch(&b, seq, RACE_N, &ino);
		r->err = store_commit(r->s, &b, NULL);
		atomic_store(&r->committed, seq);
	}
	atomic_store(&r->done, true);
	journal_batch_free(&b);
	return NULL;
}

static int first_cb(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype)
{
	(void)name;
	(void)namelen;
	(void)dtype;
	*(uint64_t *)arg = ino;
	return 1;
}

static void test_reads_race_commits(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 7 };
	struct race r = { .s = open_ok(f->dir, &o) };
	pthread_t t;
	unsigned reads = 0, scans = 0, misses = 0;
	assert_int_equal(pthread_create(&t, NULL, race_writer, &r), 0);
	while (!atomic_load(&r.done)) {
		uint64_t c = atomic_load(&r.committed);
		if (c == 0)
			continue;
		/* The newest batch's first file: ino 2 + (c - 1) * RACE_N. */
		uint64_t want = 2 + (c - 1) * RACE_N, ino = 0;
		char name[32];
		store_fixture_name(name, want);
		if (store_get_dentry(r.s, 1, name, 16, &ino, NULL) != 0 || ino != want)
			misses++;
		struct mc_inode_rec rec;
		if (store_get_inode(r.s, want, &rec, NULL, NULL) != 0)
			misses++;
		if (++reads % 8 == 0) {
			/* The first name after the one before it is it. */
			store_fixture_name(name, want - 1);
			ino = 0;
			int rc = store_scan_dir_after(r.s, 1, name, 16, first_cb, &ino);
			if ((rc != 0 && rc != 1) || ino != want)
				misses++;
			scans++;
		}
	}
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	print_message("# %u point reads, %u scans during %d commits\n", reads, scans,
	              RACE_BATCHES);
	assert_int_equal(misses, 0);
	assert_true(reads > 0);
	store_close(r.s);
}

/* A link drop (INODE_UNLINK) is relative to what the tables hold, so its
 * batch is applied in its own commit: the next point read sees the link
 * count one lower, then the inode gone, with apply_batches far away. */
static void test_link_drop_applied_at_once(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	struct mc_inode_rec r = file_rec(2, 10), got;
	r.nlink = 2;
	journal_batch_init(&b, 0);
	journal_batch_reset(&b, 1);
	assert_int_equal(journal_put_inode(&b, &r, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "a", 1, 2, DT_REG), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "b", 1, 2, DT_REG), 0);
	b.next_ino = 3;
	commit_ok(s, &b);                               /* in the overlay only */
	for (uint64_t seq = 2; seq <= 3; seq++) {
		journal_batch_reset(&b, seq);
		assert_int_equal(journal_del_dentry(&b, 1, seq == 2 ? "a" : "b", 1), 0);
		assert_int_equal(journal_unlink_inode(&b, 2, 1000 + (int64_t)seq), 0);
		b.next_ino = 3;
		commit_ok(s, &b);
		struct store_meta m;
		assert_int_equal(store_get_meta(s, &m), 0);
		assert_int_equal(m.applied_seq, seq);
		if (seq == 2) {
			assert_int_equal(store_get_inode(s, 2, &got, NULL, NULL), 0);
			assert_int_equal(got.nlink, 1);
			assert_int_equal(got.ctime_ns, 1002);
		} else {
			assert_int_equal(store_get_inode(s, 2, &got, NULL, NULL), -ENOENT);
		}
	}
	journal_batch_free(&b);
	store_close(s);
}

/* Two overlays hold the same keys with the same states and values. */
static void assert_ovl_equal(const struct store_ovl *a, const struct store_ovl *b)
{
	assert_int_equal(a->n, b->n);
	for (unsigned t = OVL_INODES; t <= OVL_DENTRIES; t++) {
		const struct ovl_ent **va, **vb;
		size_t na, nb;
		assert_int_equal(ovl_sorted(a, t, &va, &na), 0);
		assert_int_equal(ovl_sorted(b, t, &vb, &nb), 0);
		assert_int_equal(na, nb);
		for (size_t i = 0; i < na; i++) {
			assert_int_equal(va[i]->klen, vb[i]->klen);
			assert_memory_equal(va[i]->data, vb[i]->data, va[i]->klen);
			assert_int_equal(va[i]->deleted, vb[i]->deleted);
			assert_int_equal(va[i]->dropped, vb[i]->dropped);
			assert_int_equal(va[i]->vlen, vb[i]->vlen);
			if (va[i]->vlen)
				assert_memory_equal(va[i]->data + va[i]->klen,
				                    vb[i]->data + vb[i]->klen, va[i]->vlen);
		}
		free(va);
		free(vb);
	}
}

/* ovl_add_batch, which reads the encoded records in place, leaves the
 * overlay exactly as ovl_add of each record journal_next decodes: inode
 * puts (a symlink's target too) and deletions, names put and removed,
 * in several directories and runs, keys written twice; extent records
 * change nothing; an INODE_UNLINK is refused as ovl_add refuses it. */
static void test_batch_add_as_records(void **state)
{
	(void)state;
	struct journal_batch b;
	journal_batch_init(&b, 1);
	char name[32];
	for (unsigned i = 0; i < 300; i++) {
		struct mc_inode_rec r = { .ino = 100 + i, .mode = S_IFREG | 0644, .nlink = 1,
		                          .uid = i, .gid = 7, .size = i * 3,
		                          .mtime_ns = (int64_t)i * 1000 };
		snprintf(name, sizeof(name), "f%05u-a-long-name", i);
		assert_int_equal(journal_put_inode(&b, &r, NULL, 0), 0);
		assert_int_equal(journal_put_dentry(&b, 2 + i % 3, name, strlen(name), r.ino, DT_REG), 0);
		if (i % 7 == 0)
			assert_int_equal(journal_set_extent(&b, r.ino, 0, 4095, 1 << 20, 0), 0);
	}
	struct mc_inode_rec l = { .ino = 50, .mode = S_IFLNK | 0777, .nlink = 1, .size = 6 };
	assert_int_equal(journal_put_inode(&b, &l, "target", 6), 0);
	assert_int_equal(journal_put_dentry(&b, 2, "link", 4, 50, DT_LNK), 0);
	for (unsigned i = 0; i < 300; i += 5) {
		snprintf(name, sizeof(name), "f%05u-a-long-name", i);
		assert_int_equal(journal_del_dentry(&b, 2 + i % 3, name, strlen(name)), 0);
		assert_int_equal(journal_del_inode(&b, 100 + i), 0);
	}
	struct mc_inode_rec again = { .ino = 105, .mode = S_IFDIR | 0755, .nlink = 2 };
	assert_int_equal(journal_put_inode(&b, &again, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(&b, 3, "f00005-a-long-name", 18, 105, DT_DIR), 0);

	struct store_ovl one = { 0 }, all = { 0 };
	size_t pos = 0;
	struct journal_rec r;
	int n;
	while ((n = journal_next(b.buf, b.len, &pos, &r)) == 1)
		assert_int_equal(ovl_add(&one, &r), 0);
	assert_int_equal(n, 0);
	assert_int_equal(ovl_add_batch(&all, b.buf, b.len), 0);
	assert_true(all.n > 600);
	assert_ovl_equal(&one, &all);
	/* Added again on top (the next batch rewriting the same keys). */
	assert_int_equal(ovl_add_batch(&all, b.buf, b.len), 0);
	pos = 0;
	while (journal_next(b.buf, b.len, &pos, &r) == 1)
		assert_int_equal(ovl_add(&one, &r), 0);
	assert_ovl_equal(&one, &all);
	/* What the tables alone can apply. */
	journal_batch_reset(&b, 2);
	assert_int_equal(journal_unlink_inode(&b, 100, 1), 0);
	assert_int_equal(ovl_add_batch(&all, b.buf, b.len), -EINVAL);
	/* A cut record. */
	journal_batch_reset(&b, 3);
	assert_int_equal(journal_del_inode(&b, 101), 0);
	assert_int_equal(ovl_add_batch(&all, b.buf, b.len - 1), -EPROTO);
	ovl_clear(&one);
	ovl_clear(&all);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_before_apply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_outgrown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waited_apply_put_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dentry_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_race_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_drop_applied_at_once, setup, teardown),
		cmocka_unit_test(test_batch_add_as_records),
	};
	return cmocka_run_group_tests_name("store_overlay", tests, NULL, NULL);
}
