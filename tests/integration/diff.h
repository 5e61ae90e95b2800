/* diff.h - what the parts of the differential test against tmpfs share
 * (test-diff.c, the driver; diff_check.c, the comparison of results and the
 * report of a mismatch; diff_gen.c, path and mode generation; diff_ops.c,
 * the operations applied to both sides; diff_tree.c, listings and walks of
 * both trees): the limits, the PRNG, the state of one case, a result, and
 * the functions one part calls in another. test-diff.c says what the test
 * does and the rules its paths keep. */
#ifndef MC_TEST_DIFF_H
#define MC_TEST_DIFF_H

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

/* ---- PRNG (splitmix64) --------------------------------------------------- */

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline unsigned rng_below(struct rng *r, unsigned n)
{
	return (unsigned)(rng_next(r) % n);
}

static inline bool rng_pct(struct rng *r, unsigned pct)
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

/* ---- results ------------------------------------------------------------ */

struct res {
	long ret;   /* >= 0 success */
	int err;    /* errno when ret < 0 */
};

/* diff_check.c */
void inomap_free(struct inomap *m);
void diff_note(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int diff_fail(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct res res_of(long ret);
int res_check(struct diff *d, struct res k, struct res m, bool exact);
int attr_check(struct diff *d, const char *what, const struct stat *k, const struct stat *m);
void mpath(const char *rel, char *out, size_t cap);

/* diff_gen.c */
const char *rand_name(struct diff *d);
void append(char *out, size_t cap, const char *s);
void gen_plain(struct diff *d, char *out, size_t cap);
void gen_path(struct diff *d, char *out, size_t cap);
void gen_target(struct diff *d, char *out, size_t cap);
mode_t gen_dir_mode(struct diff *d);
mode_t gen_file_mode(struct diff *d);
mode_t gen_chmod_mode(struct diff *d);

/* diff_ops.c: each applies one random operation to both sides; 0, or -1
 * after a mismatch. */
int op_mkdir(struct diff *d);
int op_rmdir(struct diff *d);
int op_unlink(struct diff *d);
int op_creat(struct diff *d);
int op_open(struct diff *d);
int op_rename(struct diff *d);
int op_link(struct diff *d);
int op_symlink(struct diff *d);
int op_stat(struct diff *d, bool follow);
int op_readlink(struct diff *d);
int op_chmod(struct diff *d);
int op_truncate(struct diff *d);
int op_rmtree(struct diff *d);

/* diff_tree.c */
int op_listdir(struct diff *d);
void snap_clear(struct diff *d);
int tree_check(struct diff *d, bool compare);

#endif
