/* test-diff.c - differential test: random namespace operations applied to
 * mcache and to a kernel tmpfs directory must give the same results.
 *
 * The kernel is the oracle. A seeded PRNG picks operations over a small
 * universe of names (so collisions and errors are frequent); each is applied
 * to a fresh tmpfs with the real syscalls (relative to a directory fd) and to
 * a fresh mcached with the same relative path under "/". Return values and
 * errno must match, and so must every attribute the operation reveals.
 * Every CHECK_EVERY operations and at the end both trees are walked and
 * compared (names, type, mode, nlink, size, uid, gid, symlink targets, and a
 * one-to-one map between kernel and mcache inode numbers).
 *
 * Environment: MCACHE_DIFF_SEED (base seed, default DEFAULT_SEED),
 * MCACHE_DIFF_OPS (operations per case, default DEFAULT_OPS),
 * MCACHE_DIFF_KEEP_GOING=1 (report every kind of errno-only mismatch, where
 * both sides failed, instead of stopping at the first; the case still
 * fails). A mismatch
 * prints the seed, the operation index, both results and the last
 * operations; rerun with the printed seed to reproduce it.
 *
 * Paths never leave the top directory, so the kernel side (a mount root or a
 * directory under /dev/shm) and mcache's "/" see the same namespace:
 *  1. symlink targets are relative and downward only (names, "./", no ".."
 *     and never "."), so following one never lands above the link's parent;
 *  2. a ".." component is only generated right after a normal component.
 * mc_rmtree paths have no "." or ".." and no trailing slash, so the kernel
 * side's recursive delete (lstat, then unlink or recurse) is well defined.
 *
 * This file is the driver (the cases, their kernel directories and the
 * choice of operations); the rest is in diff_check.c (verdicts), diff_gen.c
 * (paths and modes), diff_ops.c (operations) and diff_tree.c (listings and
 * walks), over diff.h.
 */
#include "diff.h"

static bool private_mounts;  /* we are in our own mount namespace */

/* ---- the driver ----------------------------------------------------------- */

struct op_kind {
	const char *name;
	unsigned weight;
	int (*fn)(struct diff *d);
};

static int op_stat_follow(struct diff *d) { return op_stat(d, true); }
static int op_stat_nofollow(struct diff *d) { return op_stat(d, false); }

static const struct op_kind op_kinds[] = {
	{ "mkdir", 16, op_mkdir },
	{ "rmdir", 8, op_rmdir },
	{ "creat", 12, op_creat },
	{ "open", 8, op_open },
	{ "unlink", 8, op_unlink },
	{ "rename", 14, op_rename },
	{ "link", 5, op_link },
	{ "symlink", 6, op_symlink },
	{ "stat", 6, op_stat_follow },
	{ "lstat", 4, op_stat_nofollow },
	{ "readlink", 3, op_readlink },
	{ "chmod", 3, op_chmod },
	{ "truncate", 4, op_truncate },
	{ "listdir", 3, op_listdir },
	{ "rmtree", 1, op_rmtree },
};

static unsigned long env_ulong(const char *name, unsigned long def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end) {
		printf("# %s=\"%s\" is not a number; using %lu\n", name, v, def);
		return def;
	}
	return (unsigned long)x;
}

/* Make the kernel directory: a private tmpfs mount when we may mount, else a
 * fresh directory under /dev/shm. Mode 0755 like mcache's root. */
static int kdir_make(struct diff *d)
{
	if (geteuid() == 0) {
		snprintf(d->kdir, sizeof(d->kdir), "/tmp/mcache-diff-XXXXXX");
		if (mkdtemp(d->kdir)) {
			if (mount("mcache-diff", d->kdir, "tmpfs", MS_NOSUID | MS_NODEV,
			          "mode=0755,size=256m") == 0) {
				d->mounted = true;
				return 0;
			}
			printf("# mount -t tmpfs on %s: %s; using /dev/shm\n", d->kdir, strerror(errno));
			rmdir(d->kdir);
		}
	}
	snprintf(d->kdir, sizeof(d->kdir), "/dev/shm/mcache-diff-XXXXXX");
	if (!mkdtemp(d->kdir))
		return -1;
	if (chmod(d->kdir, 0755) < 0)
		return -1;
	struct statfs sf;
	if (statfs(d->kdir, &sf) == 0 && sf.f_type != TMPFS_MAGIC_)
		printf("# warning: %s is not on tmpfs\n", d->kdir);
	return 0;
}

static void kdir_remove(struct diff *d)
{
	if (!d->kdir[0])
		return;
	if (d->kfd >= 0) {
		close(d->kfd);
		d->kfd = -1;
	}
	if (d->mounted) {
		if (umount2(d->kdir, MNT_DETACH) < 0)
			printf("# umount %s: %s\n", d->kdir, strerror(errno));
		d->mounted = false;
	} else {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", d->kdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", d->kdir);
	}
	rmdir(d->kdir);
	d->kdir[0] = 0;
}

static int case_setup(void **state, uint64_t seed, unsigned nnames)
{
	struct diff *d = calloc(1, sizeof(*d));
	assert_non_null(d);
	d->kfd = -1;
	d->last = -1;
	d->seed = seed;
	d->nnames = nnames;
	d->nops = env_ulong("MCACHE_DIFF_OPS", DEFAULT_OPS);
	d->keep_going = env_ulong("MCACHE_DIFF_KEEP_GOING", 0) != 0;
	d->rng.s = seed;
	*state = d;
	if (server_start(&d->srv, NULL) < 0) {
		printf("# could not start mcached\n");
		return -1;
	}
	d->mc = mc_connect(d->srv.socket);
	if (!d->mc) {
		printf("# mc_connect %s: %s\n", d->srv.socket, strerror(errno));
		return -1;
	}
	if (kdir_make(d) < 0) {
		printf("# kernel directory: %s\n", strerror(errno));
		return -1;
	}
	d->kfd = open(d->kdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->kfd < 0)
		return -1;
	printf("# seed=%llu ops=%lu names=%u kernel=%s (%s) server=%s\n",
	       (unsigned long long)seed, d->nops, nnames, d->kdir,
	       d->mounted ? (private_mounts ? "private tmpfs mount" : "tmpfs mount") : "/dev/shm",
	       d->srv.dir);
	fflush(stdout);
	return 0;
}

static uint64_t base_seed(void)
{
	const char *v = getenv("MCACHE_DIFF_SEED");
	if (!v || !*v)
		return DEFAULT_SEED;
	return strtoull(v, NULL, 0);
}

static int setup_base(void **state)
{
	return case_setup(state, base_seed(), 6);
}

/* A second seed and a smaller universe: more collisions, deeper trees. */
static int setup_next(void **state)
{
	return case_setup(state, base_seed() + 1, 4);
}

static int case_teardown(void **state)
{
	struct diff *d = *state;
	if (!d)
		return 0;
	mc_disconnect(d->mc);
	if (d->srv.pid > 0) {
		int st = server_stop(&d->srv, SIGTERM);
		if (st != 0)
			printf("# mcached exited with status %d\n", st);
	}
	server_cleanup(&d->srv);
	kdir_remove(d);
	snap_clear(d);
	free(d->snap);
	inomap_free(&d->k2m);
	inomap_free(&d->m2k);
	free(d->soft_seen);
	free(d);
	return 0;
}

static void test_diff_run(void **state)
{
	struct diff *d = *state;
	assert_non_null(d->mc);
	unsigned total = 0;
	for (size_t i = 0; i < sizeof(op_kinds) / sizeof(op_kinds[0]); i++)
		total += op_kinds[i].weight;
	unsigned long counts[sizeof(op_kinds) / sizeof(op_kinds[0])] = { 0 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	int rc = tree_check(d, true);
	for (d->op = 0; rc == 0 && d->op < d->nops; d->op++) {
		if (d->op % SNAP_EVERY == 0 && d->op % CHECK_EVERY != 0)
			tree_check(d, false);
		unsigned w = rng_below(&d->rng, total);
		size_t k = 0;
		while (w >= op_kinds[k].weight)
			w -= op_kinds[k++].weight;
		counts[k]++;
		rc = op_kinds[k].fn(d);
		if (rc == 0 && (d->op + 1) % CHECK_EVERY == 0)
			rc = tree_check(d, true);
	}
	if (rc == 0)
		rc = tree_check(d, true);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# seed=%llu: %ld operations in %.2f s; final tree %zu entries; %zu inodes mapped\n",
	       (unsigned long long)d->seed, d->last + 1, secs, d->nsnap, d->k2m.n);
	printf("#  ");
	for (size_t i = 0; i < sizeof(op_kinds) / sizeof(op_kinds[0]); i++)
		printf(" %s=%lu", op_kinds[i].name, counts[i]);
	printf("\n");
	if (d->soft)
		printf("# %lu errno mismatches survived (MCACHE_DIFF_KEEP_GOING), %zu kinds\n",
		       d->soft, d->nsoft_seen);
	fflush(stdout);
	if (rc == 0 && d->soft)
		fail_msg("mcache gave other errno values than the kernel (seed %llu); see above",
		         (unsigned long long)d->seed);
	if (rc != 0)
		fail_msg("mcache differs from the kernel (seed %llu, op %ld); see above",
		         (unsigned long long)d->seed, d->last);
}

/* Each case: its own server, its own kernel directory, the same driver. */
static void diff_seed_base_6names(void **state) { test_diff_run(state); }
static void diff_seed_next_4names(void **state) { test_diff_run(state); }

int main(void)
{
	umask(0);  /* modes are compared bit for bit: no umask on either side */
	signal(SIGPIPE, SIG_IGN);  /* a closed output pipe must not skip the teardown */
	/* A private mount namespace makes the tmpfs vanish with the process,
	 * even if the test is killed. */
	if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		private_mounts = true;
	printf("# base seed %llu (MCACHE_DIFF_SEED), %lu ops per case (MCACHE_DIFF_OPS)\n",
	       (unsigned long long)base_seed(), env_ulong("MCACHE_DIFF_OPS", DEFAULT_OPS));
	fflush(stdout);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(diff_seed_base_6names, setup_base, case_teardown),
		cmocka_unit_test_setup_teardown(diff_seed_next_4names, setup_next, case_teardown),
	};
	return cmocka_run_group_tests_name("diff", tests, NULL, NULL);
}
