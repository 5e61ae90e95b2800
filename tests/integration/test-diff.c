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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mcache.h"

#define DEFAULT_SEED  0x6d6361636865ull   /* "mcache" */
#define DEFAULT_OPS   60000ul
#define CHECK_EVERY   500ul     /* full tree comparison */
#define SNAP_EVERY    25ul      /* refresh the list of existing kernel paths */
#define HISTORY       40        /* operations printed before a mismatch */
#define DESC_MAX      600
#define REL_MAX       1024
#define WALK_DEPTH    128
#define TMPFS_MAGIC_  0x01021994

static const char *const all_names[] = { "a", "b", "c", "d", "e", "f" };

/* ---- PRNG (splitmix64) --------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rng_below(struct rng *r, unsigned n)
{
	return (unsigned)(rng_next(r) % n);
}

static bool rng_pct(struct rng *r, unsigned pct)
{
	return rng_below(r, 100) < pct;
}

/* ---- inode number map: kernel ino <-> mcache ino must be one-to-one ------- */

struct inomap {
	uint64_t *key;  /* 0: empty slot (ino 0 is never used on either side) */
	uint64_t *val;
	size_t cap;     /* power of two */
	size_t n;
};

static void inomap_free(struct inomap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static size_t inomap_slot(const struct inomap *m, uint64_t key)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
	while (m->key[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void inomap_put(struct inomap *m, uint64_t key, uint64_t val)
{
	if (2 * (m->n + 1) > m->cap) {
		struct inomap g = { 0 };
		g.cap = m->cap ? 2 * m->cap : 1024;
		g.key = calloc(g.cap, sizeof(uint64_t));
		g.val = calloc(g.cap, sizeof(uint64_t));
		assert_non_null(g.key);
		assert_non_null(g.val);
		for (size_t i = 0; i < m->cap; i++)
			if (m->key[i])
				inomap_put(&g, m->key[i], m->val[i]);
		inomap_free(m);
		*m = g;
	}
	size_t i = inomap_slot(m, key);
	if (!m->key[i])
		m->n++;
	m->key[i] = key;
	m->val[i] = val;
}

/* 0 if key is absent. */
static uint64_t inomap_get(const struct inomap *m, uint64_t key)
{
	if (!m->cap)
		return 0;
	size_t i = inomap_slot(m, key);
	return m->key[i] ? m->val[i] : 0;
}

/* ---- one case's state ------------------------------------------------------ */

struct diff {
	struct mc_server srv;
	mc_client *mc;
	char kdir[256];        /* the kernel directory (a tmpfs mount, or /dev/shm/...) */
	bool mounted;
	int kfd;               /* O_DIRECTORY fd of kdir */
	uint64_t seed;
	unsigned nnames;
	unsigned long nops;
	unsigned long op;      /* index of the current (or next) operation */
	long last;             /* index of the last operation started, -1: none */
	struct rng rng;
	char hist[HISTORY][DESC_MAX];
	char **snap;           /* existing kernel paths (relative), refreshed every SNAP_EVERY */
	size_t nsnap, capsnap;
	struct inomap k2m, m2k;
	bool mismatch;
	bool keep_going;       /* MCACHE_DIFF_KEEP_GOING: survive errno-only mismatches */
	unsigned long soft;    /* errno-only mismatches survived */
	char (*soft_seen)[96]; /* their distinct "op kernel-errno mcache-errno" keys */
	size_t nsoft_seen;
};

static bool private_mounts;  /* we are in our own mount namespace */

static void diff_note(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diff_note(struct diff *d, const char *fmt, ...)
{
	va_list ap;
	d->last = (long)d->op;
	va_start(ap, fmt);
	vsnprintf(d->hist[d->op % HISTORY], DESC_MAX, fmt, ap);
	va_end(ap);
}

static void print_server_log(const struct diff *d)
{
	FILE *f = fopen(d->srv.log, "r");
	if (!f)
		return;
	char line[512];
	long n = 0;
	while (fgets(line, sizeof(line), f))
		n++;
	rewind(f);
	long skip = n > 20 ? n - 20 : 0;
	fprintf(stderr, "last lines of the server log %s:\n", d->srv.log);
	for (long i = 0; fgets(line, sizeof(line), f); i++)
		if (i >= skip)
			fprintf(stderr, "  %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

/* Report the first mismatch of a case: what differed, the seed, the index,
 * and the operations leading up to it. Later calls only return -1. */
static int diff_fail(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int diff_fail(struct diff *d, const char *fmt, ...)
{
	if (d->mismatch)
		return -1;
	d->mismatch = true;
	char msg[2 * DESC_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The verdict goes to the TAP stream; with the history and the server
	 * log also to stderr, which meson --print-errorlogs shows. */
	char repro[160];
	snprintf(repro, sizeof(repro), "reproduce: MCACHE_DIFF_SEED=%llu MCACHE_DIFF_OPS=%ld "
	         "(the second case runs seed+1: give it seed-1)",
	         (unsigned long long)d->seed, d->last + 1);
	printf("# MISMATCH seed=%llu op=%ld: %s\n# %s\n", (unsigned long long)d->seed, d->last,
	       msg, repro);
	fflush(stdout);
	fprintf(stderr, "MISMATCH seed=%llu op=%ld: %s\n", (unsigned long long)d->seed, d->last, msg);
	fprintf(stderr, "the last operations (index: op):\n");
	long first = d->last >= HISTORY - 1 ? d->last - (HISTORY - 1) : 0;
	for (long i = first; i <= d->last; i++)
		fprintf(stderr, "  %ld: %s\n", i, d->hist[i % HISTORY]);
	fprintf(stderr, "%s\n", repro);
	print_server_log(d);
	return -1;
}

/* ---- results ------------------------------------------------------------ */

struct res {
	long ret;   /* >= 0 success */
	int err;    /* errno when ret < 0 */
};

/* errno is read after the call whose value is passed has returned. */
static struct res res_of(long ret)
{
	struct res r = { ret, ret < 0 ? errno : 0 };
	return r;
}

static const char *res_str(struct res r, char *buf, size_t cap)
{
	if (r.ret >= 0)
		snprintf(buf, cap, "%ld", r.ret);
	else
		snprintf(buf, cap, "-1 %s (%s)", strerrorname_np(r.err) ? strerrorname_np(r.err) : "?",
		         strerror(r.err));
	return buf;
}

/* Both succeeded, or both failed with the same errno. When exact, the
 * success values must be equal too (readlink lengths). */
/* With keep_going, a mismatch where both sides failed (with different errno)
 * is printed once per kind and counted but does not stop the run: a failed
 * call changes nothing on either side, so the trees stay comparable. */
static bool soft_mismatch(struct diff *d, struct res k, struct res m)
{
	if (!d->keep_going || k.ret >= 0 || m.ret >= 0)
		return false;
	char key[96], kb[128], mb[128];
	const char *desc = d->hist[d->op % HISTORY];
	snprintf(key, sizeof(key), "%.*s %d %d", (int)strcspn(desc, " "), desc, k.err, m.err);
	d->soft++;
	for (size_t i = 0; i < d->nsoft_seen; i++)
		if (!strcmp(d->soft_seen[i], key))
			return true;
	d->soft_seen = realloc(d->soft_seen, (d->nsoft_seen + 1) * sizeof(*d->soft_seen));
	assert_non_null(d->soft_seen);
	snprintf(d->soft_seen[d->nsoft_seen++], sizeof(*d->soft_seen), "%s", key);
	printf("# errno mismatch (going on) seed=%llu op=%lu: %s: kernel %s, mcache %s\n",
	       (unsigned long long)d->seed, d->op, desc, res_str(k, kb, sizeof(kb)),
	       res_str(m, mb, sizeof(mb)));
	fprintf(stderr, "errno mismatch (going on) seed=%llu op=%lu: %s: kernel %s, mcache %s\n",
	        (unsigned long long)d->seed, d->op, desc, kb, mb);
	return true;
}

static int res_check(struct diff *d, struct res k, struct res m, bool exact)
{
	bool ks = k.ret >= 0, ms = m.ret >= 0;
	if (ks == ms && (ks ? !exact || k.ret == m.ret : k.err == m.err))
		return 0;
	if (soft_mismatch(d, k, m))
		return 0;
	char kb[128], mb[128];
	return diff_fail(d, "%s: kernel %s, mcache %s", d->hist[d->op % HISTORY],
	                 res_str(k, kb, sizeof(kb)), res_str(m, mb, sizeof(mb)));
}

static int ino_check(struct diff *d, const char *what, uint64_t kino, uint64_t mino)
{
	uint64_t m = inomap_get(&d->k2m, kino);
	uint64_t k = inomap_get(&d->m2k, mino);
	if (m && m != mino)
		return diff_fail(d, "%s: kernel ino %llu was mcache ino %llu before, now %llu", what,
		                 (unsigned long long)kino, (unsigned long long)m,
		                 (unsigned long long)mino);
	if (k && k != kino)
		return diff_fail(d, "%s: mcache ino %llu was kernel ino %llu before, now %llu", what,
		                 (unsigned long long)mino, (unsigned long long)k,
		                 (unsigned long long)kino);
	if (!mino)
		return diff_fail(d, "%s: mcache ino is 0", what);
	if (!m) {
		inomap_put(&d->k2m, kino, mino);
		inomap_put(&d->m2k, mino, kino);
	}
	return 0;
}

static int attr_check(struct diff *d, const char *what, const struct stat *k, const struct stat *m)
{
	if (k->st_mode != m->st_mode || k->st_nlink != m->st_nlink || k->st_size != m->st_size ||
	    k->st_uid != m->st_uid || k->st_gid != m->st_gid)
		return diff_fail(d,
		                 "%s: kernel mode 0%o nlink %lu size %lld uid %u gid %u, "
		                 "mcache mode 0%o nlink %lu size %lld uid %u gid %u",
		                 what, (unsigned)k->st_mode, (unsigned long)k->st_nlink,
		                 (long long)k->st_size, (unsigned)k->st_uid, (unsigned)k->st_gid,
		                 (unsigned)m->st_mode, (unsigned long)m->st_nlink,
		                 (long long)m->st_size, (unsigned)m->st_uid, (unsigned)m->st_gid);
	return ino_check(d, what, (uint64_t)k->st_ino, (uint64_t)m->st_ino);
}

/* "/" + rel: the mcache side of a kernel path relative to kfd. */
static void mpath(const char *rel, char *out, size_t cap)
{
	snprintf(out, cap, "/%s", rel);
}

/* ---- path generation ------------------------------------------------------ */

static const char *rand_name(struct diff *d)
{
	return all_names[rng_below(&d->rng, d->nnames)];
}

static void append(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);
	if (n + 1 < cap)
		snprintf(out + n, cap - n, "%s", s);
}

/* A plain path: 1..4 normal components, or an existing kernel path
 * (sometimes with one more name). Never ".", "..", or a trailing slash. */
static void gen_plain(struct diff *d, char *out, size_t cap)
{
	out[0] = 0;
	if (d->nsnap && rng_pct(&d->rng, 50)) {
		snprintf(out, cap, "%s", d->snap[rng_below(&d->rng, (unsigned)d->nsnap)]);
		if (strlen(out) < 200 && rng_pct(&d->rng, 40)) {
			append(out, cap, "/");
			append(out, cap, rand_name(d));
		}
		return;
	}
	unsigned r = rng_below(&d->rng, 100);
	unsigned depth = r < 40 ? 1 : r < 70 ? 2 : r < 88 ? 3 : 4;
	for (unsigned i = 0; i < depth; i++) {
		if (i)
			append(out, cap, "/");
		append(out, cap, rand_name(d));
	}
}

/* A path for any operation but rmtree: a plain path, sometimes decorated with
 * "./", "x/../", "//", a trailing slash, or a last component "." or "..". */
static void gen_path(struct diff *d, char *out, size_t cap)
{
	char plain[REL_MAX];
	gen_plain(d, plain, sizeof(plain));
	if (!rng_pct(&d->rng, 25)) {
		snprintf(out, cap, "%s", plain);
		return;
	}
	/* Rebuild component by component, decorating one place. */
	out[0] = 0;
	unsigned kind = rng_below(&d->rng, 6);
	char *save = NULL;
	char *comp = strtok_r(plain, "/", &save);
	bool first = true;
	for (; comp; comp = strtok_r(NULL, "/", &save)) {
		if (!first)
			append(out, cap, kind == 2 && rng_pct(&d->rng, 50) ? "//" : "/");
		if (kind == 0 && rng_pct(&d->rng, 40))
			append(out, cap, "./");
		if (kind == 1 && rng_pct(&d->rng, 40)) {
			/* "x/.." right after a normal component keeps rule 2. */
			append(out, cap, rand_name(d));
			append(out, cap, "/../");
		}
		append(out, cap, comp);
		first = false;
	}
	if (kind == 3)
		append(out, cap, "/");
	else if (kind == 4)
		append(out, cap, "/.");
	else if (kind == 5)
		append(out, cap, rng_pct(&d->rng, 50) ? "/.." : "/./");
}

/* A relative, downward-only symlink target (rule 1). */
static void gen_target(struct diff *d, char *out, size_t cap)
{
	out[0] = 0;
	if (rng_pct(&d->rng, 10))
		append(out, cap, "./");
	unsigned depth = 1 + rng_below(&d->rng, 3);
	for (unsigned i = 0; i < depth; i++) {
		if (i)
			append(out, cap, "/");
		append(out, cap, rand_name(d));
	}
	if (rng_pct(&d->rng, 8))
		append(out, cap, "/");
}

static mode_t gen_dir_mode(struct diff *d)
{
	static const mode_t m[] = { 0755, 0700, 0777, 01777, 0750, 0711 };
	return m[rng_below(&d->rng, sizeof(m) / sizeof(m[0]))];
}

static mode_t gen_file_mode(struct diff *d)
{
	static const mode_t m[] = { 0644, 0600, 0755, 0444, 0640, 0777 };
	return m[rng_below(&d->rng, sizeof(m) / sizeof(m[0]))];
}

/* chmod modes: as root anything goes (root passes permission checks on both
 * sides); otherwise keep the owner's rwx so the tree stays walkable. */
static mode_t gen_chmod_mode(struct diff *d)
{
	static const mode_t root_m[] = { 0755, 0700, 0644, 0000, 0444, 01777, 0600, 0555, 04755 };
	static const mode_t user_m[] = { 0755, 0700, 0777, 01777, 0750, 0711 };
	if (geteuid() == 0)
		return root_m[rng_below(&d->rng, sizeof(root_m) / sizeof(root_m[0]))];
	return user_m[rng_below(&d->rng, sizeof(user_m) / sizeof(user_m[0]))];
}

/* ---- operations ----------------------------------------------------------- */

static int op_mkdir(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mode_t mode = gen_dir_mode(d);
	mpath(p, mp, sizeof(mp));
	diff_note(d, "mkdir \"%s\" 0%o", p, (unsigned)mode);
	struct res k = res_of(mkdirat(d->kfd, p, mode));
	struct res m = res_of(mc_mkdir(d->mc, mp, mode));
	return res_check(d, k, m, false);
}

static int op_rmdir(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "rmdir \"%s\"", p);
	struct res k = res_of(unlinkat(d->kfd, p, AT_REMOVEDIR));
	struct res m = res_of(mc_rmdir(d->mc, mp));
	return res_check(d, k, m, false);
}

static int op_unlink(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "unlink \"%s\"", p);
	struct res k = res_of(unlinkat(d->kfd, p, 0));
	struct res m = res_of(mc_unlink(d->mc, mp));
	return res_check(d, k, m, false);
}

/* Open on both sides with the same flags; on success compare fstat of the
 * two descriptors, then close both. */
static int open_both(struct diff *d, const char *p, int flags, mode_t mode, bool use_creat)
{
	char mp[REL_MAX + 2];
	mpath(p, mp, sizeof(mp));
	struct res k = res_of(openat(d->kfd, p, flags | O_CLOEXEC, mode));
	struct res m = res_of(use_creat ? mc_creat(d->mc, mp, mode) : mc_open(d->mc, mp, flags, mode));
	int rc = res_check(d, k, m, false);
	if (rc == 0 && k.ret >= 0) {
		struct stat ks, ms;
		assert_int_equal(fstat((int)k.ret, &ks), 0);
		if (mc_fstat(d->mc, (int)m.ret, &ms) < 0)
			rc = diff_fail(d, "%s: mc_fstat on the new descriptor: %s",
			               d->hist[d->op % HISTORY], strerror(errno));
		else
			rc = attr_check(d, d->hist[d->op % HISTORY], &ks, &ms);
	}
	if (k.ret >= 0)
		close((int)k.ret);
	if (m.ret >= 0 && mc_close(d->mc, (int)m.ret) < 0)
		rc = diff_fail(d, "%s: mc_close: %s", d->hist[d->op % HISTORY], strerror(errno));
	return rc;
}

static int op_creat(struct diff *d)
{
	char p[REL_MAX];
	gen_path(d, p, sizeof(p));
	mode_t mode = gen_file_mode(d);
	if (rng_pct(&d->rng, 50)) {
		diff_note(d, "creat \"%s\" 0%o", p, (unsigned)mode);
		return open_both(d, p, O_CREAT | O_WRONLY | O_TRUNC, mode, true);
	}
	diff_note(d, "open \"%s\" O_CREAT|O_EXCL|O_WRONLY 0%o", p, (unsigned)mode);
	return open_both(d, p, O_CREAT | O_EXCL | O_WRONLY, mode, false);
}

static int op_open(struct diff *d)
{
	static const int acc[] = { O_RDONLY, O_WRONLY, O_RDWR };
	char p[REL_MAX], fl[128];
	gen_path(d, p, sizeof(p));
	int a = acc[rng_below(&d->rng, 3)];
	int flags = a;
	/* O_CREAT|O_DIRECTORY is EINVAL on Linux >= 6.4 and not before: never
	 * generated. O_TRUNC only with write access (O_RDONLY|O_TRUNC is
	 * unspecified). O_EXCL only with O_CREAT. */
	if (rng_pct(&d->rng, 35)) {
		flags |= O_CREAT;
		if (rng_pct(&d->rng, 50))
			flags |= O_EXCL;
	} else if (rng_pct(&d->rng, 30)) {
		flags |= O_DIRECTORY;
	}
	if (a != O_RDONLY && rng_pct(&d->rng, 25))
		flags |= O_TRUNC;
	if (rng_pct(&d->rng, 25))
		flags |= O_NOFOLLOW;
	mode_t mode = gen_file_mode(d);
	snprintf(fl, sizeof(fl), "%s%s%s%s%s%s", a == O_RDONLY ? "O_RDONLY" : a == O_WRONLY ? "O_WRONLY" : "O_RDWR",
	         flags & O_CREAT ? "|O_CREAT" : "", flags & O_EXCL ? "|O_EXCL" : "",
	         flags & O_TRUNC ? "|O_TRUNC" : "", flags & O_DIRECTORY ? "|O_DIRECTORY" : "",
	         flags & O_NOFOLLOW ? "|O_NOFOLLOW" : "");
	diff_note(d, "open \"%s\" %s 0%o", p, fl, (unsigned)mode);
	return open_both(d, p, flags, mode, false);
}

static int op_rename(struct diff *d)
{
	char p[REL_MAX], q[REL_MAX], mp[REL_MAX + 2], mq[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	unsigned r = rng_below(&d->rng, 100);
	if (r < 20) {
		/* into its own subtree */
		snprintf(q, sizeof(q), "%s", p);
		append(q, sizeof(q), "/");
		append(q, sizeof(q), rand_name(d));
	} else if (r < 27) {
		snprintf(q, sizeof(q), "%s", p);  /* onto itself */
	} else {
		gen_path(d, q, sizeof(q));
	}
	mpath(p, mp, sizeof(mp));
	mpath(q, mq, sizeof(mq));
	diff_note(d, "rename \"%s\" \"%s\"", p, q);
	struct res k = res_of(renameat(d->kfd, p, d->kfd, q));
	struct res m = res_of(mc_rename(d->mc, mp, mq));
	return res_check(d, k, m, false);
}

static int op_link(struct diff *d)
{
	char p[REL_MAX], q[REL_MAX], mp[REL_MAX + 2], mq[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	gen_path(d, q, sizeof(q));
	mpath(p, mp, sizeof(mp));
	mpath(q, mq, sizeof(mq));
	diff_note(d, "link \"%s\" \"%s\"", p, q);
	/* link(2) does not follow a symlink at oldpath; linkat without
	 * AT_SYMLINK_FOLLOW is the same. */
	struct res k = res_of(linkat(d->kfd, p, d->kfd, q, 0));
	struct res m = res_of(mc_link(d->mc, mp, mq));
	return res_check(d, k, m, false);
}

static int op_symlink(struct diff *d)
{
	char t[REL_MAX], p[REL_MAX], mp[REL_MAX + 2];
	gen_target(d, t, sizeof(t));
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "symlink \"%s\" -> \"%s\"", p, t);
	struct res k = res_of(symlinkat(t, d->kfd, p));
	struct res m = res_of(mc_symlink(d->mc, t, mp));
	return res_check(d, k, m, false);
}

static int op_stat(struct diff *d, bool follow)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "%s \"%s\"", follow ? "stat" : "lstat", p);
	struct stat ks, ms;
	struct res k = res_of(fstatat(d->kfd, p, &ks, follow ? 0 : AT_SYMLINK_NOFOLLOW));
	struct res m = res_of(follow ? mc_stat(d->mc, mp, &ms) : mc_lstat(d->mc, mp, &ms));
	if (res_check(d, k, m, false) < 0)
		return -1;
	if (k.ret < 0)
		return 0;
	return attr_check(d, d->hist[d->op % HISTORY], &ks, &ms);
}

static int op_readlink(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2], kb[4096], mb[4096];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	size_t size = rng_pct(&d->rng, 15) ? 1 + rng_below(&d->rng, 3) : sizeof(kb);
	diff_note(d, "readlink \"%s\" bufsize %zu", p, size);
	struct res k = res_of(readlinkat(d->kfd, p, kb, size));
	struct res m = res_of(mc_readlink(d->mc, mp, mb, size));
	if (res_check(d, k, m, true) < 0)
		return -1;
	if (k.ret > 0 && memcmp(kb, mb, (size_t)k.ret) != 0)
		return diff_fail(d, "%s: kernel \"%.*s\", mcache \"%.*s\"", d->hist[d->op % HISTORY],
		                 (int)k.ret, kb, (int)m.ret, mb);
	return 0;
}

static int op_chmod(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	mode_t mode = gen_chmod_mode(d);
	diff_note(d, "chmod \"%s\" 0%o", p, (unsigned)mode);
	struct res k = res_of(fchmodat(d->kfd, p, mode, 0));
	struct res m = res_of(mc_chmod(d->mc, mp, mode));
	return res_check(d, k, m, false);
}

static int op_truncate(struct diff *d)
{
	static const off_t sizes[] = { 0, 1, 7, 100, 4096, 100000, -1 };
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	off_t len = sizes[rng_below(&d->rng, sizeof(sizes) / sizeof(sizes[0]))];
	diff_note(d, "truncate \"%s\" %lld", p, (long long)len);
	/* truncate(2) has no *at form: use the absolute kernel path. */
	char kp[sizeof(d->kdir) + REL_MAX + 2];
	snprintf(kp, sizeof(kp), "%s/%s", d->kdir, p);
	struct res k = res_of(truncate(kp, len));
	struct res m = res_of(mc_truncate(d->mc, mp, len));
	return res_check(d, k, m, false);
}

/* Kernel side of mc_rmtree: lstat the path; unlink a non-directory, or
 * empty a directory depth first and remove it. 0 or -1 with errno. */
static int krmtree(int at, const char *path)
{
	struct stat st;
	if (fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(at, path, 0);
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -1;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		assert_non_null(names);
		names[n] = strdup(de->d_name);
		assert_non_null(names[n]);
		n++;
	}
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && krmtree(dirfd(dir), names[i]) < 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	int saved = errno;
	closedir(dir);
	errno = saved;
	if (rc < 0)
		return -1;
	return unlinkat(at, path, AT_REMOVEDIR);
}

static int op_rmtree(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_plain(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "rmtree \"%s\"", p);
	struct res k = res_of(krmtree(d->kfd, p));
	struct res m = res_of(mc_rmtree(d->mc, mp));
	return res_check(d, k, m, false);
}

/* ---- directory listings and tree walks ------------------------------------ */

struct entry {
	char *name;
	unsigned char type;  /* DT_* */
	uint64_t ino;
};

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void entries_free(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

static void entries_add(struct entry **e, size_t *n, const char *name, unsigned char type, uint64_t ino)
{
	*e = realloc(*e, (*n + 1) * sizeof(**e));
	assert_non_null(*e);
	(*e)[*n].name = strdup(name);
	assert_non_null((*e)[*n].name);
	(*e)[*n].type = type;
	(*e)[*n].ino = ino;
	(*n)++;
}

/* List a kernel directory (rel "" is the top), sorted. 0 or -1 with errno. */
static int klist(int kfd, const char *rel, struct entry **out, size_t *nout)
{
	int fd = openat(kfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -1;
	}
	struct entry *e = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries_add(&e, &n, de->d_name, de->d_type, de->d_ino);
	closedir(dir);
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	*out = e;
	*nout = n;
	return 0;
}

/* List an mcache directory, sorted. 0 or -1 with errno. */
static int mlist(mc_client *mc, const char *mp, struct entry **out, size_t *nout)
{
	MC_DIR *dir = mc_opendir(mc, mp);
	if (!dir)
		return -1;
	struct entry *e = NULL;
	size_t n = 0;
	struct dirent *de;
	errno = 0;
	while ((de = mc_readdir(dir))) {
		entries_add(&e, &n, de->d_name, de->d_type, de->d_ino);
		errno = 0;
	}
	int err = errno;
	mc_closedir(dir);
	if (err) {
		entries_free(e, n);
		errno = err;
		return -1;
	}
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	*out = e;
	*nout = n;
	return 0;
}

/* Compare two sorted listings of the directory named in what. */
static int list_check(struct diff *d, const char *what, const struct entry *ke, size_t kn,
                      const struct entry *me, size_t mn)
{
	size_t i = 0, j = 0;
	while (i < kn || j < mn) {
		int c = i == kn ? 1 : j == mn ? -1 : strcmp(ke[i].name, me[j].name);
		if (c < 0)
			return diff_fail(d, "%s: \"%s\" listed by the kernel only", what, ke[i].name);
		if (c > 0)
			return diff_fail(d, "%s: \"%s\" listed by mcache only", what, me[j].name);
		if (ke[i].type != me[j].type)
			return diff_fail(d, "%s: \"%s\" d_type kernel %u, mcache %u", what, ke[i].name,
			                 ke[i].type, me[j].type);
		if (j > 0 && !strcmp(me[j - 1].name, me[j].name))
			return diff_fail(d, "%s: mcache lists \"%s\" twice", what, me[j].name);
		i++;
		j++;
	}
	return 0;
}

static int op_listdir(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "opendir+readdir \"%s\"", p);
	struct entry *ke = NULL, *me = NULL;
	size_t kn = 0, mn = 0;
	struct res k = res_of(klist(d->kfd, p, &ke, &kn));
	struct res m = res_of(mlist(d->mc, mp, &me, &mn));
	int rc = res_check(d, k, m, false);
	if (rc == 0 && k.ret == 0)
		rc = list_check(d, d->hist[d->op % HISTORY], ke, kn, me, mn);
	if (k.ret == 0)
		entries_free(ke, kn);
	if (m.ret == 0)
		entries_free(me, mn);
	return rc;
}

static void snap_clear(struct diff *d)
{
	for (size_t i = 0; i < d->nsnap; i++)
		free(d->snap[i]);
	d->nsnap = 0;
}

static void snap_add(struct diff *d, const char *rel)
{
	if (d->nsnap == d->capsnap) {
		d->capsnap = d->capsnap ? 2 * d->capsnap : 256;
		d->snap = realloc(d->snap, d->capsnap * sizeof(*d->snap));
		assert_non_null(d->snap);
	}
	d->snap[d->nsnap] = strdup(rel);
	assert_non_null(d->snap[d->nsnap]);
	d->nsnap++;
}

static void join(char *out, size_t cap, const char *dir, const char *name)
{
	if (dir[0])
		snprintf(out, cap, "%s/%s", dir, name);
	else
		snprintf(out, cap, "%s", name);
}

/* Walk the kernel tree below rel, recording every path for path generation
 * and, when compare, checking each entry against mcache. */
static int walk(struct diff *d, const char *rel, unsigned depth, bool compare)
{
	if (depth > WALK_DEPTH || strlen(rel) > REL_MAX - 300)
		return 0;  /* too deep to name: leave it (never seen in practice) */
	char mp[REL_MAX + 2];
	mpath(rel, mp, sizeof(mp));
	struct entry *ke = NULL, *me = NULL;
	size_t kn = 0, mn = 0;
	if (klist(d->kfd, rel, &ke, &kn) < 0) {
		/* Only a directory the test cannot enter (chmod 0 as non-root). */
		return 0;
	}
	int rc = 0;
	if (compare) {
		if (mlist(d->mc, mp, &me, &mn) < 0) {
			rc = diff_fail(d, "walk: mc_opendir/readdir \"%s\": %s", mp, strerror(errno));
			goto out;
		}
		char what[REL_MAX + 32];
		snprintf(what, sizeof(what), "walk: listing of \"%s\"", mp);
		if ((rc = list_check(d, what, ke, kn, me, mn)) < 0)
			goto out;
	}
	for (size_t i = 0; i < kn && rc == 0; i++) {
		char crel[REL_MAX], cmp[REL_MAX + 2], what[REL_MAX + 32];
		join(crel, sizeof(crel), rel, ke[i].name);
		mpath(crel, cmp, sizeof(cmp));
		snap_add(d, crel);
		if (compare) {
			struct stat ks, ms;
			snprintf(what, sizeof(what), "walk: lstat \"%s\"", cmp);
			if (fstatat(d->kfd, crel, &ks, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (mc_lstat(d->mc, cmp, &ms) < 0) {
				rc = diff_fail(d, "%s: %s", what, strerror(errno));
				break;
			}
			if ((rc = attr_check(d, what, &ks, &ms)) < 0)
				break;
			if (me[i].ino != (uint64_t)ms.st_ino) {
				rc = diff_fail(d, "%s: mcache d_ino %llu but st_ino %llu", what,
				               (unsigned long long)me[i].ino, (unsigned long long)ms.st_ino);
				break;
			}
			if (S_ISLNK(ks.st_mode)) {
				char kb[4096], mb[4096];
				ssize_t kl = readlinkat(d->kfd, crel, kb, sizeof(kb));
				ssize_t ml = mc_readlink(d->mc, cmp, mb, sizeof(mb));
				if (kl != ml || (kl > 0 && memcmp(kb, mb, (size_t)kl))) {
					rc = diff_fail(d, "%s: symlink target kernel \"%.*s\", mcache \"%.*s\"",
					               what, (int)(kl > 0 ? kl : 0), kb, (int)(ml > 0 ? ml : 0), mb);
					break;
				}
			}
		}
		if (ke[i].type == DT_DIR)
			rc = walk(d, crel, depth + 1, compare);
	}
out:
	entries_free(ke, kn);
	if (me)
		entries_free(me, mn);
	return rc;
}

/* Refresh the path list; with compare, also compare the top directory and
 * every entry below it. */
static int tree_check(struct diff *d, bool compare)
{
	snap_clear(d);
	if (compare) {
		struct stat ks, ms;
		assert_int_equal(fstat(d->kfd, &ks), 0);
		if (mc_lstat(d->mc, "/", &ms) < 0)
			return diff_fail(d, "walk: mc_lstat \"/\": %s", strerror(errno));
		if (attr_check(d, "walk: lstat \"/\"", &ks, &ms) < 0)
			return -1;
	}
	return walk(d, "", 0, compare);
}

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
