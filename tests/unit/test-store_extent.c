/* test-store_extent.c - unit tests of the store's `extents` table
 * (server/store_extent.c through store_commit and store_scan_extents):
 * random sets and punches over a few files, committed in batches and read
 * back after every batch and after reopening, against a per-byte model;
 * an inode's deletion takes its extents along; bad records. */
#include <errno.h>
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

#include <cmocka.h>

#include "journal.h"
#include "store.h"
#include "fixture.h"

struct fixture {
	char tmp[256];
	char dir[300];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->tmp, sizeof(f->tmp), "test-store_extent");
	if (!mkdtemp(f->tmp)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/data", f->tmp);
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

static struct store *open_ok(const char *dir)
{
	struct store *s = NULL;
	int rc = store_open(dir, NULL, &s);
	if (rc != 0)
		fail_msg("store_open(%s): %d", dir, rc);
	return s;
}

static void commit_ok(struct store *s, const struct journal_batch *b)
{
	struct store_commit_times t;
	int rc = store_commit(s, b, &t);
	if (rc != 0)
		fail_msg("store_commit(seq %llu): %d", (unsigned long long)b->seq, rc);
}

#define NF 3u      /* files 10, 11, 12 */
#define MB 200u    /* bytes modelled per file */

struct model {
	bool mapped[NF][MB];
	uint64_t phys[NF][MB];
	uint32_t flags[NF][MB];
};

struct scan {
	const struct model *m;
	unsigned f;
	bool seen[MB];
	uint64_t last_end;
	unsigned n;
};

static int scan_one(void *arg, uint64_t start, uint64_t len, uint64_t phys, uint32_t flags)
{
	struct scan *sc = arg;
	assert_true(len > 0);
	assert_true(sc->n == 0 || start > sc->last_end);
	assert_true(start + len <= MB);
	for (uint64_t p = start; p < start + len; p++) {
		assert_true(sc->m->mapped[sc->f][p]);
		assert_int_equal(sc->m->phys[sc->f][p], phys + (p - start));
		assert_int_equal(sc->m->flags[sc->f][p], flags);
		sc->seen[p] = true;
	}
	sc->last_end = start + len - 1;
	sc->n++;
	return 0;
}

static void check(struct store *s, const struct model *m)
{
	for (unsigned f = 0; f < NF; f++) {
		struct scan sc = { .m = m, .f = f };
		assert_int_equal(store_scan_extents(s, 10 + f, scan_one, &sc), 0);
		for (unsigned p = 0; p < MB; p++)
			assert_int_equal(sc.seen[p], m->mapped[f][p]);
	}
}

static uint32_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 11);
}

static void test_model(void **state)
{
	struct fixture *fx = *state;
	struct store *s = open_ok(fx->dir);
	struct model *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	uint64_t x = 0x9e3779b97f4a7c15ull, seq = 1;
	for (int batch = 0; batch < 120; batch++) {
		struct journal_batch b;
		journal_batch_init(&b, seq++);
		b.next_ino = 100;
		for (int k = 0; k < 10; k++) {
			unsigned f = rnd(&x) % NF;
			uint32_t a = rnd(&x) % MB;
			uint32_t l = 1 + (rnd(&x) % 4 == 0 ? rnd(&x) % MB : rnd(&x) % 12);
			if (a + l > MB)
				l = MB - a;
			uint32_t op = rnd(&x) % 10;
			if (op < 6) {
				uint64_t phys = (uint64_t)rnd(&x) << 16;
				uint32_t fl = rnd(&x) % 3;
				assert_int_equal(journal_set_extent(&b, 10 + f, a, a + l - 1, phys, fl), 0);
				for (uint32_t p = a; p < a + l; p++) {
					m->mapped[f][p] = true;
					m->phys[f][p] = phys + (p - a);
					m->flags[f][p] = fl;
				}
			} else {
				/* A punch, or a truncation (to the end of the space). */
				uint64_t end = op == 9 ? UINT64_MAX : a + l - 1;
				assert_int_equal(journal_punch_extent(&b, 10 + f, a, end), 0);
				for (uint32_t p = a; p < (op == 9 ? MB : a + l); p++)
					m->mapped[f][p] = false;
			}
		}
		commit_ok(s, &b);
		journal_batch_free(&b);
		check(s, m);
	}
	store_close(s);
	s = open_ok(fx->dir);
	check(s, m);

	/* File 11's inode goes: its extents go; the others stay. */
	struct journal_batch b;
	journal_batch_init(&b, seq++);
	b.next_ino = 100;
	assert_int_equal(journal_del_inode(&b, 11), 0);
	commit_ok(s, &b);
	journal_batch_free(&b);
	memset(m->mapped[1], 0, sizeof(m->mapped[1]));
	check(s, m);
	store_close(s);
	free(m);
}

/* Records that would not decode are refused when appended. */
static void test_bad_records(void **state)
{
	(void)state;
	struct journal_batch b;
	journal_batch_init(&b, 1);
	assert_int_equal(journal_set_extent(&b, 0, 0, 1, 0, 0), -EINVAL);
	assert_int_equal(journal_set_extent(&b, 1, 2, 1, 0, 0), -EINVAL);
	assert_int_equal(journal_punch_extent(&b, 1, 2, 1), -EINVAL);
	assert_int_equal(b.len, 0);
	assert_int_equal(journal_set_extent(&b, 1, 0, UINT64_MAX, 5, 6), 0);
	size_t pos = 0;
	struct journal_rec r;
	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_EXTENT_SET);
	assert_true(r.ino == 1 && r.start == 0 && r.end == UINT64_MAX && r.phys == 5 && r.flags == 6);
	/* A punch record with start > end does not decode. */
	assert_int_equal(journal_punch_extent(&b, 1, 3, 4), 0);
	b.buf[pos + 8 + 8] = 9;   /* start's low byte: 9 > end 4 */
	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), -EPROTO);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_model, setup, teardown),
		cmocka_unit_test(test_bad_records),
	};
	return cmocka_run_group_tests_name("store_extent", tests, NULL, NULL);
}
