/* test-dcache.c - unit tests of the dentry cache (server/dcache.c) over a
 * real segment, with directory and file inodes made by server/inode.c. */
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

#include <cmocka.h>

#include "dcache.h"
#include "inode.h"
#include "mc_shm.h"
#include "shm.h"

struct fx {
	struct shm *s;
	uint64_t next_ino;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f || shm_create(4u << 20, &f->s) < 0) {
		free(f);
		return -1;
	}
	f->next_ino = 1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	shm_destroy(f->s);
	free(f);
	return 0;
}

static mc_off_t mkino(struct fx *f, uint32_t mode)
{
	struct mc_inode_rec r = { 0 };
	r.ino = f->next_ino++;
	r.mode = mode;
	r.nlink = S_ISDIR(mode) ? 2 : 1;
	mc_off_t off = inode_add(f->s, &r, NULL, 0);
	assert_int_not_equal(off, 0);
	assert_int_equal(inode_find(f->s, r.ino), off);
	return off;
}

static mc_off_t mkdir_ino(struct fx *f) { return mkino(f, S_IFDIR | 0755); }
static mc_off_t mkfile_ino(struct fx *f) { return mkino(f, S_IFREG | 0644); }

static mc_off_t add_ok(struct fx *f, mc_off_t dir, const char *name, mc_off_t ino, uint8_t dt)
{
	mc_off_t d = dcache_add(f->s, dir, name, strlen(name), ino, dt);
	if (!d)
		fail_msg("dcache_add(%s) failed", name);
	return d;
}

static struct mc_dgroup *group_of(struct shm *s, mc_off_t dir, const char *name, size_t len)
{
	uint64_t h = mc_hash_name(s->hdr->hash_seed, inode_at(s, dir)->ino, name, len);
	return &s->dgroups[h & s->hdr->dbucket_mask];
}

static struct mc_dbucket *bucket_of(struct shm *s, mc_off_t dir, const char *name, size_t len)
{
	uint64_t h = mc_hash_name(s->hdr->hash_seed, inode_at(s, dir)->ino, name, len);
	return &group_of(s, dir, name, len)->b[mc_dgroup_slot(h)];
}

/* Bucket i of the table, groups one after the other. */
static struct mc_dbucket *bucket_at(struct shm *s, uint64_t i)
{
	return &s->dgroups[i / MC_DGROUP_BUCKETS].b[i % MC_DGROUP_BUCKETS];
}

static bool in_chain(struct shm *s, struct mc_dbucket *b, mc_off_t d)
{
	unsigned n = 0;
	for (mc_off_t p = b->head; p; p = dentry_at(s, p)->hnext) {
		assert_true(++n < 1000000);
		if (p == d)
			return true;
	}
	return false;
}

/* Walk dir's list checking links and cookie order; returns its length. */
static size_t check_list(struct shm *s, mc_off_t dir)
{
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	if (!dx)
		return 0;
	size_t n = 0;
	mc_off_t prev = 0;
	uint32_t last = 0;
	for (mc_off_t d = dx->head; d; d = dentry_at(s, d)->sib_next) {
		struct mc_dentry *e = dentry_at(s, d);
		assert_int_equal(e->sib_prev, prev);
		assert_int_equal(e->parent, dir);
		assert_true(e->flags & MC_D_LIVE);
		assert_true(e->cookie > last);
		assert_true(e->cookie < dx->next_cookie);
		last = e->cookie;
		prev = d;
		n++;
	}
	assert_int_equal(dx->tail, prev);
	assert_int_equal(dx->ncached, n);
	return n;
}

static void test_add_find_positive_negative(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t root = mkdir_ino(f), file = mkfile_ino(f);
	assert_int_equal(dcache_find(s, root, "a", 1), 0);
	assert_null(dcache_dirx(s, root, false));

	mc_off_t p = add_ok(f, root, "a", file, DT_REG);
	mc_off_t n = add_ok(f, root, "gone", 0, DT_REG);
	assert_int_equal(dcache_find(s, root, "a", 1), p);
	assert_int_equal(dcache_find(s, root, "gone", 4), n);
	assert_int_equal(dcache_find(s, root, "ab", 2), 0);
	assert_int_equal(dcache_find(s, root, "", 0), 0);

	struct mc_dentry *e = dentry_at(s, p);
	assert_int_equal(e->inode, file);
	assert_int_equal(e->dtype, DT_REG);
	assert_int_equal(e->flags & (MC_D_POSITIVE | MC_D_LIVE | MC_D_LONGNAME),
	                 MC_D_POSITIVE | MC_D_LIVE);
	assert_int_equal(e->namelen, 1);
	assert_memory_equal(dcache_name(s, p), "a", 1);
	assert_int_equal(e->seq & 1, 0);

	e = dentry_at(s, n);
	assert_int_equal(e->inode, 0);
	assert_int_equal(e->dtype, 0); /* negative: no type */
	assert_int_equal(e->flags & MC_D_POSITIVE, 0);
	assert_true(e->flags & MC_D_LIVE);

	assert_int_equal(s->d_positive, 1);
	assert_int_equal(s->d_negative, 1);
	struct mc_dirx *dx = dcache_dirx(s, root, false);
	assert_non_null(dx);
	assert_int_equal(dx->ncached, 2);
	assert_int_equal(dx->nneg, 1);
	assert_int_equal(check_list(s, root), 2);
	assert_true(in_chain(s, bucket_of(s, root, "a", 1), p));
	/* A name exactly MC_NAME_INLINE long stays inline. */
	mc_off_t q = add_ok(f, root, "0123456789abcdef", file, DT_REG);
	assert_int_equal(dentry_at(s, q)->flags & MC_D_LONGNAME, 0);
	assert_int_equal(dcache_find(s, root, "0123456789abcdef", 16), q);
}

static void test_long_names(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t dir = mkdir_ino(f), file = mkfile_ino(f);
	uint64_t base = shm_bytes_used(s);
	char n17[18], n255[256], other255[256];
	memset(n17, 'L', 17);
	n17[17] = 0;
	for (int i = 0; i < 255; i++)
		n255[i] = (char)('a' + i % 26);
	n255[255] = 0;
	memcpy(other255, n255, 256);
	other255[254] = '#';

	mc_off_t a = add_ok(f, dir, n17, file, DT_REG);
	mc_off_t b = add_ok(f, dir, n255, 0, 0);
	struct mc_dentry *ea = dentry_at(s, a), *eb = dentry_at(s, b);
	assert_true(ea->flags & MC_D_LONGNAME);
	assert_true(eb->flags & MC_D_LONGNAME);
	assert_int_equal(ea->namelen, 17);
	assert_int_equal(eb->namelen, 255);
	assert_true(mc_shm_valid(s->base, s->size, s->page_types, ea->name.blob, 32, MC_PT_BLOB32));
	assert_true(mc_shm_valid(s->base, s->size, s->page_types, eb->name.blob, 256,
	                         MC_PT_BLOB32 + 3));
	assert_memory_equal(dcache_name(s, a), n17, 17);
	assert_memory_equal(dcache_name(s, b), n255, 255);
	assert_int_equal(dcache_find(s, dir, n17, 17), a);
	assert_int_equal(dcache_find(s, dir, n255, 255), b);
	assert_int_equal(dcache_find(s, dir, other255, 255), 0);
	assert_int_equal(dcache_find(s, dir, n255, 254), 0);
	assert_int_equal(dcache_find(s, dir, n17, 16), 0);

	/* Freed with their blobs. */
	dcache_del(s, a);
	dcache_del(s, b);
	assert_int_equal(dcache_find(s, dir, n255, 255), 0);
	assert_int_equal(s->slab[SLAB_BLOB0].live, 0);
	assert_int_equal(s->slab[SLAB_BLOB0 + 3].live, 0);
	/* The dirx stays (it belongs to the directory). */
	assert_int_equal(shm_bytes_used(s), base + sizeof(struct mc_dirx));
}

static void test_child_list_cookie_order(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t dir = mkdir_ino(f), file = mkfile_ino(f);
	enum { N = 100 };
	mc_off_t d[N];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%03d", N - i); /* names in reverse order */
		d[i] = add_ok(f, dir, name, i % 3 ? file : 0, DT_REG);
	}
	assert_int_equal(check_list(s, dir), N);
	/* The list is in insertion order, whatever the names or hashes. */
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	mc_off_t p = dx->head;
	for (int i = 0; i < N; i++, p = dentry_at(s, p)->sib_next)
		assert_int_equal(p, d[i]);
	/* Deleting from the head, the middle and the tail keeps it sound. */
	dcache_del(s, d[0]);
	dcache_del(s, d[50]);
	dcache_del(s, d[N - 1]);
	assert_int_equal(check_list(s, dir), N - 3);
	assert_int_equal(dx->head, d[1]);
	assert_int_equal(dx->tail, d[N - 2]);
	/* Cookies are not reused. */
	uint32_t nc = dx->next_cookie;
	mc_off_t x = add_ok(f, dir, "new", file, DT_REG);
	assert_int_equal(dentry_at(s, x)->cookie, nc);
	assert_int_equal(dx->tail, x);
	assert_int_equal(check_list(s, dir), N - 2);
}

static void test_set_moves_to_tail(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t dir = mkdir_ino(f), file = mkfile_ino(f), sub = mkdir_ino(f);
	mc_off_t a = add_ok(f, dir, "a", file, DT_REG);
	mc_off_t b = add_ok(f, dir, "b", 0, 0);
	mc_off_t c = add_ok(f, dir, "c", file, DT_REG);
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	uint32_t cb = dentry_at(s, b)->cookie, cc = dentry_at(s, c)->cookie;

	/* Positive -> negative: stays where it is, same cookie. */
	uint32_t ca = dentry_at(s, a)->cookie;
	dcache_set(s, a, 0, 0);
	assert_int_equal(dentry_at(s, a)->cookie, ca);
	assert_int_equal(dx->head, a);
	assert_int_equal(dentry_at(s, a)->flags & MC_D_POSITIVE, 0);
	assert_int_equal(dentry_at(s, a)->inode, 0);
	assert_int_equal(dentry_at(s, a)->dtype, 0);
	assert_int_equal(s->d_positive, 1);
	assert_int_equal(s->d_negative, 2);
	assert_int_equal(dx->nneg, 2);

	/* Negative -> positive: a new entry, at the end with a larger cookie. */
	dcache_set(s, b, sub, DT_DIR);
	assert_int_equal(dx->tail, b);
	assert_true(dentry_at(s, b)->cookie > cc);
	assert_true(dentry_at(s, b)->cookie > cb);
	assert_int_equal(dentry_at(s, b)->inode, sub);
	assert_int_equal(dentry_at(s, b)->dtype, DT_DIR);
	assert_true(dentry_at(s, b)->flags & MC_D_POSITIVE);
	assert_int_equal(dx->head, a);
	assert_int_equal(dentry_at(s, a)->sib_next, c);
	assert_int_equal(s->d_positive, 2);
	assert_int_equal(s->d_negative, 1);
	assert_int_equal(dx->nneg, 1);
	assert_int_equal(check_list(s, dir), 3);

	/* Positive -> positive (rename over): also a fresh cookie. */
	uint32_t cc2 = dentry_at(s, c)->cookie;
	dcache_set(s, c, sub, DT_DIR);
	assert_int_equal(dx->tail, c);
	assert_true(dentry_at(s, c)->cookie > cc2);
	assert_int_equal(s->d_positive, 2);
	assert_int_equal(check_list(s, dir), 3);
	assert_int_equal(dcache_find(s, dir, "b", 1), b);
}

static void test_del_unlinks(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t dir = mkdir_ino(f), file = mkfile_ino(f);
	mc_off_t a = add_ok(f, dir, "a", file, DT_REG);
	mc_off_t b = add_ok(f, dir, "b", 0, 0);
	struct mc_dbucket *ba = bucket_of(s, dir, "a", 1), *bb = bucket_of(s, dir, "b", 1);
	uint32_t seq_a = dentry_at(s, a)->seq;
	uint64_t used = shm_bytes_used(s);
	dcache_del(s, a);
	assert_int_equal(dcache_find(s, dir, "a", 1), 0);
	assert_false(in_chain(s, ba, a));
	assert_int_not_equal(dentry_at(s, a)->seq, seq_a);
	assert_int_equal(dentry_at(s, a)->seq & 1, 0);
	assert_int_equal(dentry_at(s, a)->flags & MC_D_LIVE, 0);
	assert_int_equal(check_list(s, dir), 1);
	assert_int_equal(s->d_positive, 0);
	assert_int_equal(shm_bytes_used(s), used - sizeof(struct mc_dentry));
	dcache_del(s, b);
	assert_false(in_chain(s, bb, b));
	assert_int_equal(check_list(s, dir), 0);
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	assert_int_equal(dx->head, 0);
	assert_int_equal(dx->tail, 0);
	assert_int_equal(dx->nneg, 0);
	assert_int_equal(s->d_negative, 0);
}

/* Many names in one directory (far more than buckets: chains collide), and
 * the same names in other directories. */
static void test_hash_collisions(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t file = mkfile_ino(f);
	enum { NDIR = 4, N = 6000 };
	assert_true(N > dcache_nbuckets(s) / 4);
	mc_off_t dirs[NDIR];
	static mc_off_t d[NDIR][N];
	char name[40];
	for (int k = 0; k < NDIR; k++)
		dirs[k] = mkdir_ino(f);
	for (int i = 0; i < N; i++)
		for (int k = 0; k < NDIR; k++) {
			snprintf(name, sizeof(name), i % 7 ? "f%d" : "a-long-file-name-%d", i);
			d[k][i] = add_ok(f, dirs[k], name, i % 2 ? file : 0, DT_REG);
		}
	/* Some bucket holds a chain of more than one. */
	unsigned longest = 0;
	for (uint64_t b = 0; b < dcache_nbuckets(s); b++) {
		unsigned n = 0;
		for (mc_off_t p = bucket_at(s, b)->head; p; p = dentry_at(s, p)->hnext)
			n++;
		if (n > longest)
			longest = n;
	}
	assert_true(longest > 1);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), i % 7 ? "f%d" : "a-long-file-name-%d", i);
		for (int k = 0; k < NDIR; k++)
			assert_int_equal(dcache_find(s, dirs[k], name, strlen(name)), d[k][i]);
	}
	/* Remove every other one in dirs[0] only. */
	for (int i = 0; i < N; i += 2)
		dcache_del(s, d[0][i]);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), i % 7 ? "f%d" : "a-long-file-name-%d", i);
		assert_int_equal(dcache_find(s, dirs[0], name, strlen(name)), i % 2 ? d[0][i] : 0);
		assert_int_equal(dcache_find(s, dirs[1], name, strlen(name)), d[1][i]);
	}
	assert_int_equal(check_list(s, dirs[0]), N / 2);
	assert_int_equal(check_list(s, dirs[3]), N);
	assert_int_equal(s->d_positive + s->d_negative, (uint64_t)NDIR * N - N / 2);
}

/* Every bucket's hint is the inode its first dentry names, 0 when it has
 * none or it is negative (dcache.c note 6). */
static void check_hints(struct shm *s)
{
	for (uint64_t i = 0; i < dcache_nbuckets(s); i++) {
		const struct mc_dbucket *b = bucket_at(s, i);
		mc_off_t want = b->head ? dentry_at(s, b->head)->inode : 0;
		if (atomic_load(&b->inode) != want)
			fail_msg("bucket %llu: hint %u, first dentry %u names %u",
			         (unsigned long long)i, atomic_load(&b->inode), b->head, want);
	}
	for (uint32_t g = 0; g <= s->hdr->dbucket_mask; g++)
		assert_int_equal(s->dgroups[g].reserved, 0);
}

/* The hints follow every change of a chain's first dentry and of what it
 * names: adds over colliding chains, a head made negative and positive
 * again (dcache_set), heads removed with others behind them (unhash),
 * negatives dropped name by name and in one pass over the buckets
 * (unhash_dir), a prune. */
static void test_bucket_hints(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	enum { N = 1500 };
	const int nsweep = (int)dcache_nbuckets(s) / 2 + 10;
	mc_off_t a = mkdir_ino(f), b = mkdir_ino(f), c = mkdir_ino(f);
	mc_off_t f1 = mkfile_ino(f), f2 = mkfile_ino(f);
	static mc_off_t da[N], db[N];
	char name[64];
	/* b's names first, a's on top of them in the same chains. */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), i % 5 ? "n%d" : "a-name-longer-than-sixteen-%d", i);
		db[i] = add_ok(f, b, name, i % 3 ? f1 : 0, DT_REG);
		da[i] = add_ok(f, a, name, i % 2 ? f2 : 0, DT_REG);
	}
	check_hints(s);
	/* Flip each of a's entries (most head their chains), one way and back. */
	for (int i = 0; i < N; i++)
		dcache_set(s, da[i], i % 2 ? 0 : f1, DT_REG);
	check_hints(s);
	for (int i = 0; i < N; i++)
		dcache_set(s, da[i], i % 2 ? f2 : 0, DT_REG);
	check_hints(s);
	/* Removing a's leaves b's entries first. */
	for (int i = 0; i < N; i += 2)
		dcache_del(s, da[i]);
	check_hints(s);
	for (int i = 1; i < N; i += 2)
		dcache_set(s, da[i], 0, 0);
	dcache_now_empty(s, a);   /* a few negatives: name by name */
	check_hints(s);
	/* As many negatives as half the buckets, over b's names: one pass. */
	assert_non_null(dcache_dirx(s, c, true));
	for (int i = 0; i < nsweep; i++) {
		snprintf(name, sizeof(name), i < N && i % 5 == 0 ? "a-name-longer-than-sixteen-%d"
		                                                 : "n%d", i);
		add_ok(f, c, name, 0, 0);
	}
	check_hints(s);
	dcache_now_empty(s, c);
	check_hints(s);
	for (int i = 0; i < N; i++)
		assert_true(in_chain(s, bucket_of(s, b, dcache_name(s, db[i]), dentry_at(s, db[i])->namelen),
		                     db[i]));
	dcache_prune(s, b);
	check_hints(s);
	for (uint64_t i = 0; i < dcache_nbuckets(s); i++)
		assert_int_equal(atomic_load(&bucket_at(s, i)->inode), 0);
}

static void test_prune_frees_all(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t dir = mkdir_ino(f), file = mkfile_ino(f);
	assert_non_null(dcache_dirx(s, dir, true));
	uint64_t base = shm_bytes_used(s);
	char name[64];
	enum { N = 3000 };
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), i % 2 ? "x%d" : "a-name-longer-than-sixteen-%d", i);
		add_ok(f, dir, name, i % 3 ? file : 0, DT_REG);
	}
	assert_true(dcache_set_complete(s, dir));
	assert_int_equal(s->dirs_complete, 1);
	assert_true(shm_bytes_used(s) > base + N * sizeof(struct mc_dentry));
	uint64_t prunes = s->prunes, pruned = s->pruned;
	assert_int_equal(dcache_prune(s, dir), N);
	assert_int_equal(shm_bytes_used(s), base);
	assert_int_equal(s->d_positive, 0);
	assert_int_equal(s->d_negative, 0);
	assert_int_equal(s->prunes, prunes + 1);
	assert_int_equal(s->pruned, pruned + N);
	assert_false(dcache_complete(s, dir));
	assert_int_equal(s->dirs_complete, 0);
	assert_int_equal(check_list(s, dir), 0);
	for (uint64_t b = 0; b < dcache_nbuckets(s); b++)
		assert_int_equal(bucket_at(s, b)->head, 0);
	/* Pruning an empty or never-listed directory frees nothing. */
	assert_int_equal(dcache_prune(s, dir), 0);
	mc_off_t other = mkdir_ino(f);
	assert_int_equal(dcache_prune(s, other), 0);
}

/* dcache_now_empty on a directory of negatives only, few (each name out
 * of its chain) and at least half as many as the buckets (one pass over
 * them): nothing of it is left in a chain, its list or the counts, long
 * names' blobs and dirty counts included, and another directory's
 * entries under the same names are untouched. */
static void test_now_empty_drops_negatives(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	const int sizes[] = { 100, (int)dcache_nbuckets(s) / 2 + 10 };
	for (unsigned k = 0; k < 2; k++) {
		int n = sizes[k];
		mc_off_t a = mkdir_ino(f), b = mkdir_ino(f), file = mkfile_ino(f);
		assert_non_null(dcache_dirx(s, a, true));
		assert_non_null(dcache_dirx(s, b, true));
		uint64_t base = shm_bytes_used(s), live = s->slab[SLAB_DENTRY].live;
		uint64_t neg = s->d_negative, pos = s->d_positive, dirty = s->d_dirty;
		char name[64];
		for (int i = 0; i < 2 * n; i += 2) {
			snprintf(name, sizeof(name), "b-%d", i);
			add_ok(f, b, name, i % 4 ? file : 0, DT_REG);
		}
		uint64_t used_b = shm_bytes_used(s) - base;
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), i % 5 ? "b-%d" : "a-name-longer-than-sixteen-%d", i);
			mc_off_t d = add_ok(f, a, name, 0, 0);
			if (i % 3 == 0) {
				dentry_at(s, d)->flags |= MC_D_DIRTY1;
				s->d_dirty++;
			}
		}
		dcache_now_empty(s, a);
		assert_true(dcache_complete(s, a));
		assert_int_equal(check_list(s, a), 0);
		assert_int_equal(dcache_dirx(s, a, false)->nneg, 0);
		assert_int_equal(shm_bytes_used(s), base + used_b);
		assert_int_equal(s->slab[SLAB_DENTRY].live, live + (uint64_t)n);
		assert_int_equal(s->d_negative, neg + (uint64_t)n / 2);
		assert_int_equal(s->d_positive, pos + (uint64_t)n / 2);
		assert_int_equal(s->d_dirty, dirty);
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), i % 5 ? "b-%d" : "a-name-longer-than-sixteen-%d", i);
			assert_int_equal(dcache_find(s, a, name, strlen(name)), 0);
		}
		assert_int_equal(check_list(s, b), (size_t)n);
		for (int i = 0; i < 2 * n; i += 2) {
			snprintf(name, sizeof(name), "b-%d", i);
			mc_off_t d = dcache_find(s, b, name, strlen(name));
			assert_int_not_equal(d, 0);
			assert_true(in_chain(s, bucket_of(s, b, name, strlen(name)), d));
		}
		for (uint64_t i = 0; i < dcache_nbuckets(s); i++) {
			assert_int_equal(atomic_load(&s->dgroups[i / MC_DGROUP_BUCKETS].seq) & 1, 0);
			for (mc_off_t d = bucket_at(s, i)->head; d; d = dentry_at(s, d)->hnext) {
				assert_true(dentry_at(s, d)->flags & MC_D_LIVE);
				assert_int_not_equal(dentry_at(s, d)->parent, a);
			}
		}
		dcache_prune(s, b);
	}
}

static void test_complete_flag(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t a = mkdir_ino(f), b = mkdir_ino(f);
	assert_false(dcache_complete(s, a));
	assert_true(dcache_set_complete(s, a));
	assert_true(dcache_complete(s, a));
	assert_int_equal(s->dirs_complete, 1);
	assert_true(dcache_set_complete(s, a)); /* idempotent */
	assert_int_equal(s->dirs_complete, 1);
	assert_true(dcache_set_complete(s, b));
	assert_int_equal(s->dirs_complete, 2);
	assert_false(dcache_complete(s, mkdir_ino(f)));
	/* prune clears it. */
	dcache_prune(s, a);
	assert_false(dcache_complete(s, a));
	assert_int_equal(s->dirs_complete, 1);
	/* Dropping a complete directory's inode uncounts it. */
	uint64_t base_dirx = s->slab[SLAB_DIRX].live;
	inode_del(s, b);
	assert_int_equal(s->dirs_complete, 0);
	assert_int_equal(s->slab[SLAB_DIRX].live, base_dirx - 1);
}

/* Every change moves the seq of what it changes, and leaves it even. */
static void test_seq_counters(void **state)
{
	struct fx *f = *state;
	struct shm *s = f->s;
	mc_off_t dir = mkdir_ino(f), file = mkfile_ino(f);
	uint32_t iseq = inode_at(s, dir)->seq;
	struct mc_dirx *dx = dcache_dirx(s, dir, true);
	assert_non_null(dx);
	assert_true(inode_at(s, dir)->seq != iseq); /* dirx linked to the inode */
	struct mc_dgroup *b = group_of(s, dir, "n", 1);
	uint32_t bseq = b->seq, xseq = dx->seq;

	mc_off_t d = add_ok(f, dir, "n", 0, 0);
	assert_true(b->seq != bseq && !(b->seq & 1));
	assert_true(dx->seq != xseq && !(dx->seq & 1));
	uint32_t dseq = dentry_at(s, d)->seq;
	assert_int_equal(dseq & 1, 0);

	bseq = b->seq;
	xseq = dx->seq;
	dcache_set(s, d, file, DT_REG);
	assert_true(dentry_at(s, d)->seq != dseq && !(dentry_at(s, d)->seq & 1));
	assert_true(dx->seq != xseq); /* moved in the list */
	assert_int_equal(b->seq, bseq); /* chain unchanged */

	dseq = dentry_at(s, d)->seq;
	dcache_set(s, d, 0, 0);
	assert_true(dentry_at(s, d)->seq != dseq && !(dentry_at(s, d)->seq & 1));

	xseq = dx->seq;
	dcache_set_complete(s, dir);
	assert_true(dx->seq != xseq && !(dx->seq & 1));

	dseq = dentry_at(s, d)->seq;
	xseq = dx->seq;
	dcache_del(s, d);
	assert_true(dentry_at(s, d)->seq != dseq && !(dentry_at(s, d)->seq & 1));
	assert_true(b->seq != bseq && !(b->seq & 1));
	assert_true(dx->seq != xseq && !(dx->seq & 1));

	xseq = dx->seq;
	dcache_prune(s, dir);
	assert_true(dx->seq != xseq && !(dx->seq & 1)); /* complete flag cleared */
}

/* A full segment: dcache_add returns 0 and leaves nothing behind. */
static void test_add_full_segment(void **state)
{
	(void)state;
	struct fx g = { 0 };
	g.next_ino = 1;
	assert_int_equal(shm_create(1u << 20, &g.s), 0);
	struct shm *s = g.s;
	mc_off_t dir = mkdir_ino(&g), file = mkfile_ino(&g);
	char name[64];
	size_t n = 0;
	for (;;) {
		snprintf(name, sizeof(name), "entry-%zu", n);
		if (!dcache_add(s, dir, name, strlen(name), file, DT_REG))
			break;
		n++;
	}
	assert_true(n > 1000);
	assert_int_equal(check_list(s, dir), n);
	assert_int_equal(s->d_positive, n);
	/* Long names need a blob page too: a failure must not leak the blob or
	 * the dentry. */
	uint64_t used = shm_bytes_used(s);
	memset(name, 'z', 40);
	assert_int_equal(dcache_add(s, dir, name, 40, file, DT_REG), 0);
	assert_int_equal(shm_bytes_used(s), used);
	assert_int_equal(check_list(s, dir), n);
	assert_true(s->alloc_failures > 0);
	shm_destroy(s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_add_find_positive_negative),
		T(test_long_names),
		T(test_child_list_cookie_order),
		T(test_set_moves_to_tail),
		T(test_del_unlinks),
		T(test_hash_collisions),
		T(test_bucket_hints),
		T(test_prune_frees_all),
		T(test_now_empty_drops_negatives),
		T(test_complete_flag),
		T(test_seq_counters),
		T(test_add_full_segment),
	};
	return cmocka_run_group_tests_name("dcache", tests, NULL, NULL);
}
