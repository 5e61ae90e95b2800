/* test-store_scan.c - unit tests of the directory scans that merge the
 * overlay of the batches not applied instead of applying them
 * (server/store_scan.c, store_read.c note 1): what a scan gives before the
 * apply is what the same scan gives after it, a scan writes nothing, and
 * scans racing commits (applies among them) always see a committed state. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
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

#include <cmocka.h>

#include "journal.h"
#include "mc_shm.h"
#include "store.h"
#include "store_read.h"
#include "store_fixture.h"

static int setup(void **state)
{
	return store_fixture_setup(state, "test-store_scan");
}

static int teardown(void **state)
{
	return store_fixture_teardown(state);
}

static uint64_t applied_seq(struct store *s)
{
	struct store_meta m;
	assert_int_equal(store_get_meta(s, &m), 0);
	return m.applied_seq;
}

static void put_file(struct journal_batch *b, uint64_t parent, const char *name, uint64_t ino,
                     uint64_t size)
{
	struct mc_inode_rec r = { .ino = ino, .mode = S_IFREG | 0644, .nlink = 1, .size = size,
	                          .mtime_ns = (int64_t)size };
	assert_int_equal(journal_put_inode(b, &r, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(b, parent, name, strlen(name), ino, DT_REG), 0);
}

static void put_symlink(struct journal_batch *b, uint64_t parent, const char *name,
                        uint64_t ino, const char *target)
{
	struct mc_inode_rec r = { .ino = ino, .mode = S_IFLNK | 0777, .nlink = 1,
	                          .size = strlen(target) };
	assert_int_equal(journal_put_inode(b, &r, target, strlen(target)), 0);
	assert_int_equal(journal_put_dentry(b, parent, name, strlen(name), ino, DT_LNK), 0);
}

static void del_name(struct journal_batch *b, uint64_t parent, const char *name)
{
	assert_int_equal(journal_del_dentry(b, parent, name, strlen(name)), 0);
}

/* A listing as text, one line per entry: name, ino, dtype and, when given,
 * the record's size and mode and a symlink's target. */
struct listing {
	char *buf;
	size_t len, cap;
	unsigned n;
};

static void listing_add(struct listing *l, const char *line)
{
	size_t n = strlen(line);
	if (l->len + n + 1 > l->cap) {
		l->cap = (l->cap + n + 1) * 2;
		l->buf = realloc(l->buf, l->cap);
		assert_non_null(l->buf);
	}
	memcpy(l->buf + l->len, line, n + 1);
	l->len += n;
	l->n++;
}

static int attr_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                   const struct mc_inode_rec *rec)
{
	char line[MC_NAME_MAX + 128];
	assert_int_equal(strlen(name), namelen);
	snprintf(line, sizeof(line), "%s %llu %u %lld %o\n", name, (unsigned long long)ino, dtype,
	         rec ? (long long)rec->size : -1LL, rec ? rec->mode : 0u);
	listing_add(arg, line);
	return 0;
}

static int snap_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                   const struct mc_inode_rec *rec, const char *target, size_t tlen)
{
	char line[MC_NAME_MAX + MC_SYMLINK_MAX + 128];
	assert_int_equal(strlen(name), namelen);
	snprintf(line, sizeof(line), "%s %llu %u %lld %o %.*s\n", name, (unsigned long long)ino,
	         dtype, rec ? (long long)rec->size : -1LL, rec ? rec->mode : 0u, (int)tlen, target);
	listing_add(arg, line);
	return 0;
}

/* Every scan of directories 1 and 2, as text: store_scan_dir_attrs, then
 * a snapshot's scan, each from the start and from after "f050". */
static char *scan_all(struct store *s)
{
	struct listing l = { 0 };
	struct store_snap *sn;
	assert_int_equal(store_snap_new(s, &sn), 0);
	for (uint64_t dir = 1; dir <= 2; dir++) {
		for (int from = 0; from < 2; from++) {
			const char *after = from ? "f050" : NULL;
			size_t alen = from ? 4 : 0;
			listing_add(&l, "-- attrs\n");
			assert_int_equal(store_scan_dir_attrs(s, dir, after, alen, attr_fn, &l), 0);
			listing_add(&l, "-- snapshot\n");
			assert_int_equal(store_snap_take(sn), 0);
			assert_int_equal(store_snap_scan_dir(sn, dir, after, alen, snap_fn, &l), 0);
			store_snap_release(sn);
		}
	}
	store_snap_free(sn);
	return l.buf;
}

/* Tables first (one applied batch), then batches only in the overlay:
 * creates interleaved with the tables' names (a chunk boundary or two), a
 * delete, a rename across parents, a name deleted and made again for
 * another inode, a name made and deleted again, a symlink, an inode
 * changed under a name the tables hold, a directory that exists only in
 * the overlay. The scans before the apply give what they give after it,
 * and applied nothing. */
static void test_scan_matches_applied(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	char name[32];
	journal_batch_init(&b, 1);
	struct mc_inode_rec d = { .ino = 2, .mode = S_IFDIR | 0755, .nlink = 2 };
	assert_int_equal(journal_put_inode(&b, &d, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "dir", 3, 2, DT_DIR), 0);
	for (unsigned i = 0; i < 200; i += 2) {         /* even names in the tables */
		snprintf(name, sizeof(name), "f%03u", i);
		put_file(&b, 1, name, 100 + i, i);
	}
	put_symlink(&b, 1, "sym", 400, "old/target");
	b.next_ino = 1000;
	commit_ok(s, &b);
	store_close(s);                                 /* applies batch 1 */
	s = open_ok(f->dir, &o);
	assert_int_equal(applied_seq(s), 1);

	journal_batch_reset(&b, 2);                     /* odd names: overlay */
	for (unsigned i = 1; i < 200; i += 2) {
		snprintf(name, sizeof(name), "f%03u", i);
		put_file(&b, 1, name, 100 + i, i);
	}
	b.next_ino = 1000;
	commit_ok(s, &b);
	journal_batch_reset(&b, 3);
	del_name(&b, 1, "f010");                        /* delete */
	assert_int_equal(journal_del_inode(&b, 110), 0);
	del_name(&b, 1, "f020");                        /* rename f020 -> dir/moved */
	assert_int_equal(journal_put_dentry(&b, 2, "moved", 5, 120, DT_REG), 0);
	del_name(&b, 1, "f030");                        /* deleted and made again */
	assert_int_equal(journal_del_inode(&b, 130), 0);
	put_file(&b, 1, "tmp", 500, 1);                 /* made, then deleted below */
	put_file(&b, 1, "f040", 501, 4040);             /* an inode changed: size */
	b.next_ino = 1000;
	commit_ok(s, &b);
	journal_batch_reset(&b, 4);
	put_file(&b, 1, "f030", 502, 3030);
	del_name(&b, 1, "tmp");
	assert_int_equal(journal_del_inode(&b, 500), 0);
	put_symlink(&b, 1, "sym", 400, "new/longer/target");   /* same inode, new target */
	put_symlink(&b, 2, "link", 503, "../f001");
	struct mc_inode_rec size40 = { .ino = 140, .mode = S_IFREG | 0600, .nlink = 1,
	                               .size = 44 };
	assert_int_equal(journal_put_inode(&b, &size40, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(&b, 2, "sub", 3, 504, DT_DIR), 0);
	struct mc_inode_rec sub = { .ino = 504, .mode = S_IFDIR | 0700, .nlink = 2 };
	assert_int_equal(journal_put_inode(&b, &sub, NULL, 0), 0);
	b.next_ino = 1000;
	commit_ok(s, &b);
	journal_batch_free(&b);

	char *before = scan_all(s);
	assert_int_equal(applied_seq(s), 1);            /* the scans wrote nothing */
	store_close(s);                                 /* applies batches 2..4 */
	s = open_ok(f->dir, &o);
	assert_int_equal(applied_seq(s), 4);
	char *after = scan_all(s);
	assert_string_equal(before, after);
	/* And what that is: 200 names less f010 and f020, with "dir" and "sym". */
	assert_non_null(strstr(after, "f030 502 8 3030"));
	assert_non_null(strstr(after, "f040 501 8 4040"));
	assert_null(strstr(after, "f010 "));
	assert_null(strstr(after, "f020 "));
	assert_null(strstr(after, "tmp "));
	assert_non_null(strstr(after, "sym 400 10 17 120777 new/longer/target"));
	assert_non_null(strstr(after, "moved 120 8 20"));
	assert_non_null(strstr(after, "sub 504 4 0 40700"));
	assert_non_null(strstr(after, "link 503 10 7 120777 ../f001"));
	free(before);
	free(after);
	store_close(s);
}

/* A scan whose callback has another thread commit, once, while the scan
 * is between chunks (it holds no lock then): the chunks after it show
 * the batch (a name later in order gone, one added, one changed), the
 * ones before it are not given again. */
struct midscan {
	struct store *s;
	unsigned n;
	bool committed;
	char seen[300][8];
};

static void *midscan_commit(void *arg)
{
	struct midscan *m = arg;
	struct journal_batch b;
	journal_batch_init(&b, 3);
	del_name(&b, 1, "f150");
	assert_int_equal(journal_del_inode(&b, 250), 0);
	put_file(&b, 1, "f151x", 600, 1);
	put_file(&b, 1, "f160", 260, 16016);            /* a new size */
	put_file(&b, 1, "f001", 700, 7);                /* before: not seen again */
	b.next_ino = 1000;
	intptr_t rc = store_commit(m->s, &b, NULL);
	journal_batch_free(&b);
	return (void *)rc;
}

static int midscan_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                      const struct mc_inode_rec *rec)
{
	struct midscan *m = arg;
	(void)namelen, (void)dtype;
	assert_true(m->n < 300);
	snprintf(m->seen[m->n++], sizeof(m->seen[0]), "%s", name);
	if (strcmp(name, "f160") == 0)
		assert_int_equal(rec->size, m->committed ? 16016 : 160);
	assert_int_equal(rec->ino, ino);
	if (m->n == 70) {                               /* the second chunk */
		pthread_t t;
		void *rc;
		assert_int_equal(pthread_create(&t, NULL, midscan_commit, m), 0);
		pthread_join(t, &rc);
		assert_int_equal((intptr_t)rc, 0);
		m->committed = true;
	}
	return 0;
}

static void test_scan_sees_commit_between_chunks(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	char name[32];
	journal_batch_init(&b, 1);
	for (unsigned i = 0; i < 200; i += 2) {
		snprintf(name, sizeof(name), "f%03u", i);
		put_file(&b, 1, name, 100 + i, i);
	}
	b.next_ino = 1000;
	commit_ok(s, &b);
	journal_batch_reset(&b, 2);                     /* odd names: overlay */
	for (unsigned i = 1; i < 200; i += 2) {
		snprintf(name, sizeof(name), "f%03u", i);
		put_file(&b, 1, name, 100 + i, i);
	}
	b.next_ino = 1000;
	commit_ok(s, &b);
	journal_batch_free(&b);
	struct midscan *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	m->s = s;
	assert_int_equal(store_scan_dir_attrs(s, 1, NULL, 0, midscan_fn, m), 0);
	assert_true(m->committed);
	assert_int_equal(m->n, 200);                    /* -f150 +f151x */
	for (unsigned i = 1; i < m->n; i++)
		assert_true(strcmp(m->seen[i - 1], m->seen[i]) < 0);
	bool x = false;
	for (unsigned i = 0; i < m->n; i++) {
		assert_string_not_equal(m->seen[i], "f150");
		x = x || strcmp(m->seen[i], "f151x") == 0;
	}
	assert_true(x);
	free(m);
	store_close(s);
}

/* Count the entries of a scan; with sizes given, each entry's record must
 * be there. */
struct count {
	unsigned n, norec;
};

static int count_fn(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                    const struct mc_inode_rec *rec, const char *target, size_t tlen)
{
	struct count *c = arg;
	(void)name, (void)namelen, (void)dtype, (void)target, (void)tlen;
	c->n++;
	if (!rec || rec->ino != ino)
		c->norec++;
	return 0;
}

static int attr_count_fn(void *arg, const char *name, size_t namelen, uint64_t ino,
                         uint8_t dtype, const struct mc_inode_rec *rec)
{
	return count_fn(arg, name, namelen, ino, dtype, rec, NULL, 0);
}

/* Batch seq of the racing committer: in directory 1, the name "r<k>" of
 * each of RACE_NAMES files becomes "r<k+1>" (a new inode too), so
 * directory 1 always holds RACE_NAMES names, each with its record. */
#define RACE_NAMES   40u
#define RACE_BATCHES 400u

struct race {
	struct store *s;
	atomic_bool done;
	int err;
};

static void race_batch(struct journal_batch *b, uint64_t seq)
{
	char name[32];
	journal_batch_reset(b, seq);
	for (unsigned i = 0; i < RACE_NAMES; i++) {
		uint64_t k = seq * RACE_NAMES + i;
		if (seq > 1) {
			snprintf(name, sizeof(name), "r%08llu", (unsigned long long)(k - RACE_NAMES));
			del_name(b, 1, name);
			assert_int_equal(journal_del_inode(b, 1000 + k - RACE_NAMES), 0);
		}
		snprintf(name, sizeof(name), "r%08llu", (unsigned long long)k);
		put_file(b, 1, name, 1000 + k, seq);
	}
	b->next_ino = 1000 + (seq + 1) * RACE_NAMES;
}

static void *race_committer(void *arg)
{
	struct race *r = arg;
	struct journal_batch b;
	journal_batch_init(&b, 2);
	for (uint64_t seq = 2; seq <= RACE_BATCHES && !r->err; seq++) {
		race_batch(&b, seq);
		r->err = store_commit(r->s, &b, NULL);
	}
	journal_batch_free(&b);
	atomic_store(&r->done, true);
	return NULL;
}

/* Scans (one-shot and snapshots) while commits run, an apply every 3rd:
 * each sees RACE_NAMES names with their records, never a mix of an
 * overlay and tables that do not go together. */
static void test_scans_race_commits(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 3 };
	struct race r = { .s = open_ok(f->dir, &o) };
	struct journal_batch b;
	struct store_snap *sn;
	journal_batch_init(&b, 1);
	race_batch(&b, 1);
	commit_ok(r.s, &b);
	journal_batch_free(&b);
	assert_int_equal(store_snap_new(r.s, &sn), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, race_committer, &r), 0);
	unsigned scans = 0, bad = 0;
	while (!atomic_load(&r.done)) {
		struct count c = { 0 };
		if (scans % 2) {
			if (store_snap_take(sn) != 0 ||
			    store_snap_scan_dir(sn, 1, NULL, 0, count_fn, &c) != 0)
				bad++;
			store_snap_release(sn);
		} else {
			if (store_scan_dir_attrs(r.s, 1, NULL, 0, attr_count_fn, &c) != 0)
				bad++;
		}
		if (c.n != RACE_NAMES || c.norec)
			bad++;
		scans++;
	}
	pthread_join(t, NULL);
	store_snap_free(sn);
	assert_int_equal(r.err, 0);
	print_message("# %u scans during %u commits\n", scans, RACE_BATCHES);
	assert_int_equal(bad, 0);
	assert_true(scans > 0);
	store_close(r.s);
}

/* A directory with many names in the overlay (created wholesale, then
 * scanned chunk by chunk while commits keep changing it, as an rmtree
 * does) is scanned after an apply instead of being sorted again at every
 * chunk; a directory with a few is merged, and nothing is applied. */
static void test_big_overlay_dir_applies(void **state)
{
	struct fixture *f = *state;
	struct store_opts o = { .apply_batches = 1000 };
	struct store *s = open_ok(f->dir, &o);
	struct journal_batch b;
	char name[32];
	uint64_t ino = 10;
	journal_batch_init(&b, 0);
	journal_batch_reset(&b, 1);
	for (unsigned i = 0; i < 4; i++, ino++) {
		snprintf(name, sizeof(name), "small%u", i);
		put_file(&b, 2, name, ino, i);
	}
	for (unsigned i = 0; i < 500; i++, ino++) {
		snprintf(name, sizeof(name), "big%03u", i);
		put_file(&b, 3, name, ino, i);
	}
	b.next_ino = ino;
	commit_ok(s, &b);
	assert_int_equal(applied_seq(s), 0);
	struct count c = { 0 };
	assert_int_equal(store_scan_dir_attrs(s, 2, NULL, 0, attr_count_fn, &c), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(applied_seq(s), 0);            /* merged */
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_scan_dir_attrs(s, 3, NULL, 0, attr_count_fn, &c), 0);
	assert_int_equal(c.n, 500);
	assert_int_equal(c.norec, 0);
	assert_int_equal(applied_seq(s), 1);            /* applied first */
	journal_batch_free(&b);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scan_matches_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_sees_commit_between_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scans_race_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_overlay_dir_applies, setup, teardown),
	};
	return cmocka_run_group_tests_name("store_scan", tests, NULL, NULL);
}
