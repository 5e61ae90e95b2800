/* test-api_dir.c - libmcache's directory calls against a real mcached:
 * mc_readdir over a thousand names and while another client creates,
 * batches (mc_batch_*: their results and errno cases), and mc_rmtree. */
#include "api_fixture.h"

/* ---- directories ------------------------------------------------------- */

/* Create prefix0000 .. prefix(to-1) (4 digits) in one batch. */
static void batch_creates(mc_client *c, const char *prefix, int from, int to)
{
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	char p[128];
	for (int i = from; i < to; i++) {
		snprintf(p, sizeof(p), "%s%04d", prefix, i);
		assert_true(mc_batch_create(b, p, 0644) >= 0);
	}
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), (size_t)(to - from));
	for (int i = 0; i < to - from; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	mc_batch_free(b);
}

static void test_readdir_1000(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	enum { N = 1000 };
	mkdir_ok(c, "/rd", 0755);
	batch_creates(c, "/rd/f", 0, N);
	mkdir_ok(c, "/rd/zdir", 0755);
	assert_int_equal(mc_symlink(c, "f0000", "/rd/zlink"), 0);

	static int seen[N];
	memset(seen, 0, sizeof(seen));
	int dirs = 0, links = 0, total = 0;
	MC_DIR *d = mc_opendir(c, "/rd");
	assert_non_null(d);
	struct dirent *e;
	errno = 0;
	while ((e = mc_readdir(d))) {
		total++;
		assert_true(e->d_ino != 0);
		assert_true(strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0);
		if (strcmp(e->d_name, "zdir") == 0) {
			assert_int_equal(e->d_type, DT_DIR);
			assert_int_equal(e->d_ino, stat_ok(c, "/rd/zdir").st_ino);
			dirs++;
			continue;
		}
		if (strcmp(e->d_name, "zlink") == 0) {
			assert_int_equal(e->d_type, DT_LNK);
			links++;
			continue;
		}
		int i;
		assert_int_equal(sscanf(e->d_name, "f%d", &i), 1);
		assert_true(i >= 0 && i < N);
		assert_int_equal(e->d_type, DT_REG);
		seen[i]++;
	}
	assert_int_equal(errno, 0); /* end of listing: errno unchanged */
	assert_null(mc_readdir(d));
	assert_int_equal(mc_closedir(d), 0);
	assert_int_equal(total, N + 2);
	assert_int_equal(dirs, 1);
	assert_int_equal(links, 1);
	for (int i = 0; i < N; i++)
		if (seen[i] != 1)
			fail_msg("f%04d seen %d times", i, seen[i]);
	assert_int_equal(stat_ok(c, "/rd").st_size, 40 + 20 * (N + 2)); /* as tmpfs */

	/* An empty directory lists nothing; errors. */
	d = mc_opendir(c, "/rd/zdir");
	assert_non_null(d);
	errno = 0;
	assert_null(mc_readdir(d));
	assert_int_equal(errno, 0);
	assert_int_equal(mc_closedir(d), 0);
	EXPECT_NULL_ERR(mc_opendir(c, "/rd/f0001"), ENOTDIR);
	EXPECT_NULL_ERR(mc_opendir(c, "/rd/missing"), ENOENT);
	EXPECT_NULL_ERR(mc_opendir(c, "/rd/zlink/.."), ENOTDIR);
	assert_int_equal(mc_rmtree(c, "/rd"), 0);
	mc_disconnect(c);
}

static void test_readdir_concurrent(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv), *other = harness_client(&harness_srv);
	enum { KEEP = 1200, TMP = 200, NEW = 200 };
	mkdir_ok(c, "/rc", 0755);
	batch_creates(c, "/rc/keep", 0, KEEP);
	batch_creates(c, "/rc/tmp", 0, TMP);

	static int keep[KEEP], tmp[TMP], fresh[NEW];
	memset(keep, 0, sizeof(keep));
	memset(tmp, 0, sizeof(tmp));
	memset(fresh, 0, sizeof(fresh));
	MC_DIR *d = mc_opendir(c, "/rc");
	assert_non_null(d);
	struct dirent *e;
	int n = 0, round = 0;
	errno = 0;
	while ((e = mc_readdir(d))) {
		int i;
		if (sscanf(e->d_name, "keep%d", &i) == 1)
			keep[i]++;
		else if (sscanf(e->d_name, "tmp%d", &i) == 1)
			tmp[i]++;
		else if (sscanf(e->d_name, "new%d", &i) == 1)
			fresh[i]++;
		else
			fail_msg("unexpected entry %s", e->d_name);
		/* Midway through the first page and again in the second, the
		 * other client removes and creates entries. */
		if (++n == 100 || n == 700) {
			mc_batch *b = mc_batch_new(other);
			char p[64];
			for (int k = 0; k < TMP / 2; k++) {
				snprintf(p, sizeof(p), "/rc/tmp%04d", round * (TMP / 2) + k);
				mc_batch_unlink(b, p);
			}
			for (int k = 0; k < NEW / 2; k++) {
				snprintf(p, sizeof(p), "/rc/new%04d", round * (NEW / 2) + k);
				mc_batch_create(b, p, 0644);
			}
			assert_int_equal(mc_batch_run(b), 0);
			for (size_t k = 0; k < mc_batch_count(b); k++)
				assert_int_equal(mc_batch_error(b, k), 0);
			mc_batch_free(b);
			round++;
		}
	}
	assert_int_equal(errno, 0);
	assert_int_equal(round, 2);
	assert_int_equal(mc_closedir(d), 0);
	for (int i = 0; i < KEEP; i++)
		if (keep[i] != 1)
			fail_msg("keep%04d seen %d times", i, keep[i]);
	for (int i = 0; i < TMP; i++)
		assert_true(tmp[i] <= 1);
	for (int i = 0; i < NEW; i++)
		assert_true(fresh[i] <= 1);
	assert_int_equal(mc_rmtree(c, "/rc"), 0);
	mc_disconnect(other);
	mc_disconnect(c);
}

/* ---- batches ----------------------------------------------------------- */

static void test_batch(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	mkdir_ok(c, "/bt", 0755);
	mc_batch *b = mc_batch_new(c);
	assert_non_null(b);
	assert_int_equal(mc_batch_count(b), 0);
	assert_int_equal(mc_batch_error(b, 0), EINVAL);
	assert_int_equal(mc_batch_run(b), 0); /* nothing queued */
	assert_int_equal(mc_batch_count(b), 0);

	char p[64];
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "/bt/f%03d", i);
		assert_int_equal(mc_batch_create(b, p, 0644), i);
	}
	assert_int_equal(mc_batch_create(b, "/bt/f042", 0644), 100); /* duplicate */
	struct stat st42, stmiss, stdir;
	memset(&stmiss, 0xab, sizeof(stmiss));
	assert_int_equal(mc_batch_stat(b, "/bt/f042", &st42), 101);
	assert_int_equal(mc_batch_stat(b, "/bt/missing", &stmiss), 102);
	assert_int_equal(mc_batch_mkdir(b, "/bt/d", 0700), 103);
	assert_int_equal(mc_batch_rename(b, "/bt/f000", "/bt/d/moved"), 104);
	assert_int_equal(mc_batch_unlink(b, "/bt/f001"), 105);
	assert_int_equal(mc_batch_mkdir(b, "/bt/e", 0755), 106);
	assert_int_equal(mc_batch_rmdir(b, "/bt/e"), 107);
	assert_int_equal(mc_batch_rmdir(b, "/bt/d"), 108); /* not empty */
	assert_int_equal(mc_batch_stat(b, "/bt/d", &stdir), 109);
	/* Queueing errors. */
	EXPECT_ERR(mc_batch_create(b, NULL, 0644), EINVAL);
	EXPECT_ERR(mc_batch_create(b, "", 0644), EINVAL);
	EXPECT_ERR(mc_batch_unlink(b, repeat('z', 5000, "/")), ENAMETOOLONG);
	EXPECT_ERR(mc_batch_rename(b, "/bt/x", NULL), EINVAL);

	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), 110);
	for (int i = 0; i < 100; i++)
		assert_int_equal(mc_batch_error(b, (size_t)i), 0);
	assert_int_equal(mc_batch_error(b, 100), EEXIST);
	assert_int_equal(mc_batch_error(b, 101), 0);
	assert_true(S_ISREG(st42.st_mode));
	assert_int_equal(st42.st_ino, stat_ok(c, "/bt/f042").st_ino);
	assert_int_equal(mc_batch_error(b, 102), ENOENT);
	assert_int_equal(mc_batch_error(b, 103), 0);
	assert_int_equal(mc_batch_error(b, 104), 0);
	assert_int_equal(mc_batch_error(b, 105), 0);
	assert_int_equal(mc_batch_error(b, 106), 0);
	assert_int_equal(mc_batch_error(b, 107), 0);
	assert_int_equal(mc_batch_error(b, 108), ENOTEMPTY);
	assert_int_equal(mc_batch_error(b, 109), 0);
	assert_true(S_ISDIR(stdir.st_mode));
	assert_int_equal(stdir.st_mode & 07777, 0700);
	assert_int_equal(mc_batch_error(b, 110), EINVAL);
	struct stat st;
	EXPECT_ERR(mc_lstat(c, "/bt/f000", &st), ENOENT);
	EXPECT_ERR(mc_lstat(c, "/bt/f001", &st), ENOENT);
	assert_int_equal(mc_lstat(c, "/bt/d/moved", &st), 0);
	EXPECT_ERR(mc_lstat(c, "/bt/e", &st), ENOENT);

	/* Results stay until the next run; a new run replaces them. */
	assert_int_equal(mc_batch_unlink(b, "/bt/f002"), 0);
	assert_int_equal(mc_batch_count(b), 110);
	assert_int_equal(mc_batch_run(b), 0);
	assert_int_equal(mc_batch_count(b), 1);
	assert_int_equal(mc_batch_error(b, 0), 0);
	mc_batch_free(b);

	/* E2BIG: long paths until the frame limit (16 MiB) would be passed. */
	b = mc_batch_new(c);
	char *lp = malloc(4096);
	assert_non_null(lp);
	memcpy(lp, repeat('q', 4094, "/"), 4096);
	int i, r = 0;
	for (i = 0; i < 10000; i++) {
		r = mc_batch_stat(b, lp, &st);
		if (r < 0)
			break;
		assert_int_equal(r, i);
	}
	assert_int_equal(r, -1);
	assert_int_equal(errno, E2BIG);
	assert_true(i > 3000 && i < 4200);
	free(lp);
	mc_batch_free(b);
	mc_batch_free(NULL);
	assert_int_equal(mc_rmtree(c, "/bt"), 0);
	mc_disconnect(c);
}

/* ---- rmtree -------------------------------------------------------------- */

static void test_rmtree(void **state)
{
	(void)state;
	mc_client *c = harness_client(&harness_srv);
	struct stat st;
	char p[128];
	mkdir_ok(c, "/rt", 0755);
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "/rt/d%d", i);
		mkdir_ok(c, p, 0755);
		for (int j = 0; j < 5; j++) {
			snprintf(p, sizeof(p), "/rt/d%d/s%d", i, j);
			mkdir_ok(c, p, 0755);
			for (int k = 0; k < 10; k++) {
				snprintf(p, sizeof(p), "/rt/d%d/s%d/f%d", i, j, k);
				mkfile(c, p, 0644);
			}
		}
	}
	assert_int_equal(mc_symlink(c, "/", "/rt/d0/root"), 0);
	mkfile(c, "/rtfile", 0644);
	assert_int_equal(mc_link(c, "/rtfile", "/rt/d1/hard"), 0);
	assert_int_equal(mc_rmtree(c, "/rt"), 0);
	EXPECT_ERR(mc_lstat(c, "/rt", &st), ENOENT);
	EXPECT_ERR(mc_lstat(c, "/rt/d0/s0/f0", &st), ENOENT);
	assert_int_equal(stat_ok(c, "/rtfile").st_nlink, 1); /* the symlink was not followed */
	EXPECT_ERR(mc_rmtree(c, "/rt"), ENOENT);
	assert_int_equal(mc_rmtree(c, "/rtfile"), 0);
	EXPECT_ERR(mc_lstat(c, "/rtfile", &st), ENOENT);
	assert_int_equal(stat_ok(c, "/").st_mode & S_IFMT, S_IFDIR);
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readdir_1000),
		cmocka_unit_test(test_readdir_concurrent),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_rmtree),
	};
	return cmocka_run_group_tests_name("api_dir", tests, harness_group_setup, harness_group_teardown);
}
