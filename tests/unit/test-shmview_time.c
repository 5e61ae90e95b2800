/* test-shmview_time.c - times on the client's shared-memory read path
 * against a segment built by the real server modules (shmview_fixture.h):
 * mc_time_t split, joined and clamped at the edges of its range, and
 * utimensat's answers, local and the server's, equal to the kernel's on
 * tmpfs, before and after a rebuild from the store. */
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
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mc_shm.h"
#include "ns.h"
#include "shm.h"
#include "shmview_impl.h"
#include "store.h"
#include "shmview_fixture.h"

static int setup(void **state)
{
	return shmview_fixture_setup(state, "shmview_time");
}

static int teardown(void **state)
{
	return shmview_fixture_teardown(state);
}

/* mc_time_t: split, joined and clamped at the edges of its range. */
static void test_time_layout(void **state)
{
	(void)state;
	static const struct { int64_t sec; long nsec; } ok[] = {
		{ 0, 0 }, { 0, 1 }, { 0, 999999999 }, { -1, 0 }, { -1, 1 }, { -1, 999999999 },
		{ -123456789, 5 }, { 1700000000, 123456789 }, { INT64_C(1) << 31, 0 },
		{ MC_TIME_SEC_MAX, 999999999 }, { MC_TIME_SEC_MIN, 0 }, { MC_TIME_SEC_MIN, 1 },
	};
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
		mc_time_t t = mc_time_make(ok[k].sec, ok[k].nsec);
		assert_int_equal(mc_time_sec(t), ok[k].sec);
		assert_int_equal(mc_time_nsec(t), ok[k].nsec);
		int64_t ns = mc_time_ns(t);
		assert_int_equal(ns, ok[k].sec * 1000000000 + ok[k].nsec);
		assert_int_equal(mc_time_from_ns(ns), t);
	}
	/* Nanoseconds before the epoch round toward minus infinity. */
	assert_int_equal(mc_time_sec(mc_time_from_ns(-1)), -1);
	assert_int_equal(mc_time_nsec(mc_time_from_ns(-1)), 999999999);
	assert_int_equal(mc_time_sec(mc_time_from_ns(-1000000000)), -1);
	assert_int_equal(mc_time_nsec(mc_time_from_ns(-1000000000)), 0);
	assert_int_equal(mc_time_sec(mc_time_from_ns(-1000000001)), -2);
	assert_int_equal(mc_time_nsec(mc_time_from_ns(-1000000001)), 999999999);
	/* Outside the range: clamped to its ends. */
	const mc_time_t max = mc_time_make(MC_TIME_SEC_MAX, 999999999);
	const mc_time_t min = mc_time_make(MC_TIME_SEC_MIN, 0);
	assert_int_equal(mc_time_make(MC_TIME_SEC_MAX + 1, 0), max);
	assert_int_equal(mc_time_make(INT64_MAX, 5), max);
	assert_int_equal(mc_time_make(MC_TIME_SEC_MIN - 1, 999999999), min);
	assert_int_equal(mc_time_make(INT64_MIN, 0), min);
	assert_int_equal(mc_time_from_ns(INT64_MAX), max);
	assert_int_equal(mc_time_from_ns(INT64_MIN), min);
	assert_true(mc_time_ns(max) > mc_time_ns(min));
}

/* A group commit by hand, then the cache rebuilt over the same store (a
 * new segment, as after a restart). */
static void reopen(struct fx *f)
{
	struct journal_batch *b;
	while ((b = ns_swap(f->ns))) {
		struct store_commit_times t;
		assert_int_equal(store_commit(f->st, b, &t), 0);
		ns_publish(f->ns, b);
	}
	ns_free(f->ns);
	shm_destroy(f->shm);
	assert_int_equal(shm_create(8u << 20, &f->shm), 0);
	assert_int_equal(ns_new(f->shm, f->st, NULL, &f->ns), 0);
	memset(f->v, 0, sizeof(*f->v));
	assert_int_equal(view_init(f->v, f->shm->base, f->shm->size), 0);
	view_default_limits(&f->v->lim);
}

static bool ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool ts_le(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

/* utimensat on a file of the segment and on one of tmpfs: the local stat,
 * the server's, and the kernel's agree, before and after a rebuild from the
 * store; times past the segment's range read as its end. */
static void test_utimens_like_kernel(void **state)
{
	struct fx *f = *state;
	static const struct { struct timespec t[2]; } cases[] = {
		{ { { 0, 0 }, { 0, 999999999 } } },
		{ { { -1, 0 }, { -1, 999999999 } } },
		{ { { -1, 1 }, { -123456789, 500000000 } } },
		{ { { -(INT64_C(1) << 32), 7 }, { INT64_C(1) << 31, 0 } } },
		{ { { 1700000000, 123456789 }, { 1700000001, 1 } } },
		{ { { 5, 5 }, { 0, UTIME_OMIT } } },
		{ { { 0, UTIME_OMIT }, { 6, 6 } } },
		{ { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } } },
		{ { { 0, UTIME_NOW }, { 0, UTIME_NOW } } },
		{ { { 0, UTIME_NOW }, { -7, 7 } } },
		{ { { MC_TIME_SEC_MAX, 999999999 }, { MC_TIME_SEC_MIN, 0 } } },
	};
	char kpath[64] = "";
	struct statfs sfs;
	if (statfs("/dev/shm", &sfs) == 0 && sfs.f_type == 0x01021994 /* TMPFS_MAGIC */) {
		strcpy(kpath, "/dev/shm/mc-shmview-time-XXXXXX");
		int fd = mkstemp(kpath);
		assert_true(fd >= 0);
		close(fd);
	} else {
		printf("# no tmpfs at /dev/shm: times checked against the server only\n");
	}
	mkfile(f, "/t");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct timespec *t = cases[k].t;
		struct stat before, st, kst;
		struct timespec t0, t1;
		assert_int_equal(view_stat(f->v, P("/t"), true, &before), 0);
		clock_gettime(CLOCK_REALTIME, &t0);
		assert_int_equal(ns_utimens(f->ns, &f->root, P("/t"), t), 0);
		if (*kpath)
			assert_int_equal(utimensat(AT_FDCWD, kpath, t, 0), 0);
		clock_gettime(CLOCK_REALTIME, &t1);
		assert_int_equal(view_stat(f->v, P("/t"), true, &st), 0);
		same_as_server(f, "/t", true);
		const struct timespec *got[2] = { &st.st_atim, &st.st_mtim };
		const struct timespec *old[2] = { &before.st_atim, &before.st_mtim };
		for (int j = 0; j < 2; j++) {
			if (t[j].tv_nsec == UTIME_OMIT)
				assert_true(ts_eq(got[j], old[j]));
			else if (t[j].tv_nsec == UTIME_NOW)
				assert_true(ts_le(&t0, got[j]) && ts_le(got[j], &t1));
			else
				assert_true(got[j]->tv_sec == t[j].tv_sec && got[j]->tv_nsec == t[j].tv_nsec);
		}
		if (t[0].tv_nsec == UTIME_OMIT && t[1].tv_nsec == UTIME_OMIT)
			assert_true(ts_eq(&st.st_ctim, &before.st_ctim));  /* nothing to change */
		else
			assert_true(ts_le(&t0, &st.st_ctim) && ts_le(&st.st_ctim, &t1));
		if (*kpath) {
			assert_int_equal(stat(kpath, &kst), 0);
			const struct timespec *kt[2] = { &kst.st_atim, &kst.st_mtim };
			for (int j = 0; j < 2; j++)
				if (t[j].tv_nsec != UTIME_OMIT && t[j].tv_nsec != UTIME_NOW)
					assert_true(ts_eq(got[j], kt[j]));
		}
		/* The store keeps what the segment showed. */
		reopen(f);
		struct stat again;
		ns_attr a;   /* loads /t from the store into the new segment */
		assert_int_equal(ns_stat(f->ns, &f->root, P("/t"), true, &a), 0);
		assert_int_equal(view_stat(f->v, P("/t"), true, &again), 0);
		assert_true(ts_eq(&again.st_atim, &st.st_atim));
		assert_true(ts_eq(&again.st_mtim, &st.st_mtim));
		assert_true(ts_eq(&again.st_ctim, &st.st_ctim));
	}
	/* Past the segment's range: clamped to its ends, as Linux clamps to a
	 * file system's range. */
	const struct timespec far[2] = { { MC_TIME_SEC_MAX + 1, 0 }, { MC_TIME_SEC_MIN - 1, 999999999 } };
	assert_int_equal(ns_utimens(f->ns, &f->root, P("/t"), far), 0);
	struct stat st;
	assert_int_equal(view_stat(f->v, P("/t"), true, &st), 0);
	assert_int_equal(st.st_atim.tv_sec, MC_TIME_SEC_MAX);
	assert_int_equal(st.st_atim.tv_nsec, 999999999);
	assert_int_equal(st.st_mtim.tv_sec, MC_TIME_SEC_MIN);
	assert_int_equal(st.st_mtim.tv_nsec, 0);
	same_as_server(f, "/t", true);
	if (*kpath)
		unlink(kpath);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_layout),
		cmocka_unit_test_setup_teardown(test_utimens_like_kernel, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
