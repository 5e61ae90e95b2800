/* bench_client.c - one forked client process: untimed set-up, barrier, timed run of each step, clean-up.
 *
 * Per step: set-up ─► MSG_READY ─► wait for GO (one byte) ─► timed run ─►
 * MSG_RESULT; after the last step: clean-up ─► MSG_DONE ─► exit.
 * Every step passes the barrier even after an error (it then reports a result
 * with errors and no ops), so the parent never waits forever on a live client.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#ifdef HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#endif

static const char *const fop_names[] = { "mkdir", "rmdir", "create", "stat", "unlink" };

static void cl_error(struct client *c, const char *what, const char *path, int err)
{
	c->errors++;
	if (c->errors == 1)
		fprintf(stderr, "mcbench: client %u: %s phase on %s aborted: %s %s: %s\n",
		        c->id, c->phase, c->target, what, path ? path : "", strerror(err));
}

static void path_make(char *out, size_t size, enum tkind tk, const char *base,
                      const char *a, const char *b)
{
	const char *root = tk == T_MC ? "/" : "";

	if (b)
		snprintf(out, size, "%s%s/%s/%s", root, base, a, b);
	else if (a)
		snprintf(out, size, "%s%s/%s", root, base, a);
	else
		snprintf(out, size, "%s%s", root, base);
}

/* One operation, serially. 0 or -errno. */
static int op_serial(struct client *c, enum tkind tk, enum fop op, const char *path)
{
	struct stat st;
	int fd, r = 0;

	if (tk == T_MC) {
		switch (op) {
		case FOP_MKDIR: r = mc_mkdir(c->mc, path, 0755); break;
		case FOP_RMDIR: r = mc_rmdir(c->mc, path); break;
		case FOP_UNLINK: r = mc_unlink(c->mc, path); break;
		case FOP_STAT:
			r = mc_stat(c->mc, path, &st);
			if (r == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
				return -EBADE;
			break;
		case FOP_CREATE:
			fd = mc_open(c->mc, path, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0)
				return -errno;
			r = mc_close(c->mc, fd);
			break;
		}
	} else {
		switch (op) {
		case FOP_MKDIR: r = mkdir(path, 0755); break;
		case FOP_RMDIR: r = rmdir(path); break;
		case FOP_UNLINK: r = unlink(path); break;
		case FOP_STAT:
			r = stat(path, &st);
			if (r == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
				return -EBADE;
			break;
		case FOP_CREATE:
			fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				return -errno;
			r = close(fd);
			break;
		}
	}
	return r < 0 ? -errno : 0;
}

/* Prepare batching of bsz ops per round trip (0: serial). 0, or -1 after an
 * error (out of memory). */
static int q_setup(struct client *c, unsigned long bsz)
{
	c->bsz = bsz;
	c->qn = 0;
	free(c->qpaths);
	free(c->qst);
	c->qpaths = NULL;
	c->qst = NULL;
	if (bsz == 0)
		return 0;
	c->qstride = strlen(c->base) + 2 * (size_t)O.name_len + 8;
	c->qpaths = malloc(bsz * c->qstride);
	c->qst = malloc(bsz * sizeof(*c->qst));
	if (!c->qpaths || !c->qst) {
		cl_error(c, "malloc", NULL, ENOMEM);
		return -1;
	}
	return 0;
}

/* Send the queued ops; check every result. 0, or -1 after an error. */
static int q_flush(struct client *c)
{
	unsigned long i, n = c->qn;
	int bad = 0;

	if (n == 0)
		return 0;
	c->qn = 0;
	if (mc_batch_run(c->b) < 0) {
		cl_error(c, "mc_batch_run", NULL, errno);
		return -1;
	}
	if (mc_batch_count(c->b) != n) {
		cl_error(c, "mc_batch_count mismatch", NULL, EPROTO);
		return -1;
	}
	for (i = 0; i < n; i++) {
		int e = mc_batch_error(c->b, i);
		if (e == 0 && c->qop == FOP_STAT && !S_ISREG(c->qst[i].st_mode) &&
		    !S_ISDIR(c->qst[i].st_mode))
			e = EBADE;
		if (e) {
			cl_error(c, fop_names[c->qop], c->qpaths + i * c->qstride, e);
			bad = -1;
		}
	}
	win_tick(&c->win, n);
	return bad;
}

/* Queue (or, serially, do) one op. 0, or -1 after an error. */
static int q_op(struct client *c, enum tkind tk, enum fop op, const char *path)
{
	char *slot;
	int r;

	if (tk != T_MC || c->bsz == 0) {
		r = op_serial(c, tk, op, path);
		if (r < 0) {
			cl_error(c, fop_names[op], path, -r);
			return -1;
		}
		win_tick(&c->win, 1);
		return 0;
	}
	/* Kept for the error message of a failing op: a plain copy, so that
	 * the mcache side pays no more per op than the kernel side (which
	 * copies nothing). */
	slot = c->qpaths + c->qn * c->qstride;
	size_t len = strnlen(path, c->qstride - 1);
	memcpy(slot, path, len);
	slot[len] = '\0';
	c->qop = op;
	switch (op) {
	case FOP_MKDIR: r = mc_batch_mkdir(c->b, slot, 0755); break;
	case FOP_RMDIR: r = mc_batch_rmdir(c->b, slot); break;
	case FOP_CREATE: r = mc_batch_create(c->b, slot, 0644); break;
	case FOP_UNLINK: r = mc_batch_unlink(c->b, slot); break;
	case FOP_STAT: r = mc_batch_stat(c->b, slot, &c->qst[c->qn]); break;
	default: r = -1; errno = EINVAL; break;
	}
	if (r < 0) {
		cl_error(c, "mc_batch queue", slot, errno);
		return -1;
	}
	if (++c->qn == c->bsz)
		return q_flush(c);
	return 0;
}

/* Send what is queued, then mc_sync. 0, or -1 after an error. */
static int q_sync(struct client *c)
{
	if (q_flush(c) < 0)
		return -1;
	if (mc_sync(c->mc) < 0) {
		cl_error(c, "mc_sync", NULL, errno);
		return -1;
	}
	return 0;
}

/* mkdir/rmdir of the D directories, or create/stat/unlink of all N*D files.
 * sync_every > 0: mc_sync after that many ops (durable). Adds to *ops. */
static int do_all(struct client *c, enum tkind tk, enum fop op, unsigned long sync_every,
                  uint64_t *ops)
{
	char path[PATH_MAX];
	char prefix[PATH_MAX];
	size_t plen;
	unsigned long d, i, n = 0;

	for (d = 0; d < O.dirs; d++) {
		if (op == FOP_MKDIR || op == FOP_RMDIR) {
			path_make(path, sizeof(path), tk, c->base, c->dnames[d], NULL);
			if (q_op(c, tk, op, path) < 0)
				return -1;
			(*ops)++;
			continue;
		}
		path_make(prefix, sizeof(prefix), tk, c->base, c->dnames[d], "");
		plen = strlen(prefix);
		memcpy(path, prefix, plen);
		for (i = 0; i < O.files; i++) {
			memcpy(path + plen, c->fnames[i], O.name_len + 1);
			if (q_op(c, tk, op, path) < 0)
				return -1;
			(*ops)++;
			if (sync_every && ++n % sync_every == 0 && q_sync(c) < 0)
				return -1;
		}
	}
	if (sync_every && n % sync_every)
		return q_sync(c);
	return q_flush(c);
}

/* List one directory fully; *n gets the entry count. 0 or -1. */
static int list_dir(struct client *c, enum tkind tk, const char *path, uint64_t *n)
{
	uint64_t cnt = 0;

	if (tk == T_MC) {
		MC_DIR *d = mc_opendir(c->mc, path);
		struct dirent *de;
		if (!d) {
			cl_error(c, "mc_opendir", path, errno);
			return -1;
		}
		for (;;) {
			errno = 0;
			de = mc_readdir(d);
			if (!de)
				break;
			cnt++;
		}
		if (errno) {
			cl_error(c, "mc_readdir", path, errno);
			mc_closedir(d);
			return -1;
		}
		if (mc_closedir(d) < 0) {
			cl_error(c, "mc_closedir", path, errno);
			return -1;
		}
	} else {
		DIR *d = opendir(path);
		struct dirent *de;
		if (!d) {
			cl_error(c, "opendir", path, errno);
			return -1;
		}
		for (;;) {
			errno = 0;
			de = readdir(d);
			if (!de)
				break;
			if (de->d_name[0] == '.' && (!de->d_name[1] ||
			    (de->d_name[1] == '.' && !de->d_name[2])))
				continue;
			cnt++;
		}
		if (errno) {
			cl_error(c, "readdir", path, errno);
			closedir(d);
			return -1;
		}
		closedir(d);
	}
	*n = cnt;
	return 0;
}

static int do_readdir(struct client *c, enum tkind tk, uint64_t *ops)
{
	char path[PATH_MAX];
	unsigned long d;
	uint64_t n;

	for (d = 0; d < O.dirs; d++) {
		path_make(path, sizeof(path), tk, c->base, c->dnames[d], NULL);
		if (list_dir(c, tk, path, &n) < 0)
			return -1;
		if (n != O.files) {
			c->errors++;
			fprintf(stderr, "mcbench: client %u: readdir phase on %s aborted: "
			        "%s listed %" PRIu64 " entries, expected %lu\n",
			        c->id, c->target, path, n, O.files);
			return -1;
		}
		*ops += n;
	}
	return 0;
}

static int tree_rm(struct client *c, enum tkind tk, const char *path, uint64_t *count)
{
	int r;

	if (tk == T_MC) {
		if (mc_rmtree(c->mc, path) < 0) {
			cl_error(c, "mc_rmtree", path, errno);
			return -1;
		}
		return 0;
	}
	kernel_rmtree_win = count ? &c->win : NULL;
	r = kernel_rmtree(path, count);
	kernel_rmtree_win = NULL;
	if (r < 0) {
		cl_error(c, "nftw/unlinkat", r == -ENOENT ? path : kernel_rmtree_errpath(), -r);
		return -1;
	}
	return 0;
}

/* Build dir (relative to base) holding N files; untimed, batched on mcache. */
static int build_dir(struct client *c, enum tkind tk, const char *dir)
{
	char path[PATH_MAX];
	unsigned long i;

	if (q_setup(c, tk == T_MC ? SETUP_BATCH : 0) < 0)
		return -1;
	path_make(path, sizeof(path), tk, c->base, dir, NULL);
	if (q_op(c, tk, FOP_MKDIR, path) < 0 || q_flush(c) < 0)
		return -1;
	for (i = 0; i < O.files; i++) {
		path_make(path, sizeof(path), tk, c->base, dir, c->fnames[i]);
		if (q_op(c, tk, FOP_CREATE, path) < 0)
			return -1;
	}
	return q_flush(c);
}

/* build_dir once per client: *built says it is there. */
static int build_once(struct client *c, enum tkind tk, const char *dir, bool *built)
{
	if (*built)
		return 0;
	if (build_dir(c, tk, dir) < 0)
		return -1;
	*built = true;
	return 0;
}

/* Bring the D-directory tree to the wanted state, untimed. */
static int tree_state(struct client *c, enum tkind tk, bool dirs, bool files)
{
	struct tstate *s = &c->st[tk];
	uint64_t ops = 0;

	if (q_setup(c, tk == T_MC ? SETUP_BATCH : 0) < 0)
		return -1;
	if ((files || dirs) && !s->dirs) {
		if (do_all(c, tk, FOP_MKDIR, 0, &ops) < 0)
			return -1;
		s->dirs = true;
	}
	if (files && !s->files) {
		if (do_all(c, tk, FOP_CREATE, 0, &ops) < 0)
			return -1;
		s->files = true;
	}
	if (!files && s->files) {
		if (do_all(c, tk, FOP_UNLINK, 0, &ops) < 0)
			return -1;
		s->files = false;
	}
	if (!dirs && s->dirs) {
		if (do_all(c, tk, FOP_RMDIR, 0, &ops) < 0)
			return -1;
		s->dirs = false;
	}
	return 0;
}

/* The missing name negstat looks up. */
static void neg_name(char *out)
{
	make_name(out, 'm', 0, O.name_len);
}

/* The N paths of statseq/statrand for side tk, made once per side. */
static int spaths_make(struct client *c, enum tkind tk)
{
	char path[PATH_MAX];

	if (c->spaths && c->stk == tk)
		return 0;
	path_make(path, sizeof(path), tk, c->base, "s3", c->fnames[0]);
	c->sstride = strlen(path) + 1;
	free(c->spaths);
	c->spaths = malloc(c->sstride * (O.files ? O.files : 1));
	if (!c->spaths) {
		cl_error(c, "malloc", NULL, ENOMEM);
		return -1;
	}
	for (unsigned long i = 0; i < O.files; i++)
		path_make(c->spaths + i * c->sstride, c->sstride, tk, c->base, "s3", c->fnames[i]);
	c->stk = tk;
	return 0;
}

/* statseq/statrand: --count stats over the N files, in order or in the
 * xorshift sequence (the same on both sides); each must succeed. The
 * kernel side is fstatat, as a walk of the same relative path. */
static int stat_many(struct client *c, enum tkind tk, bool rnd, uint64_t *ops)
{
	struct stat st;
	uint64_t x = 0x9e3779b97f4a7c15ull ^ c->id;
	unsigned long n = O.files, i = 0;

	for (unsigned long k = 0; k < O.count; k++) {
		if (rnd) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			i = (unsigned long)(x % n);
		} else if (++i == n) {
			i = 0;
		}
		const char *p = c->spaths + i * c->sstride;
		int r = tk == T_MC ? mc_stat(c->mc, p, &st) : fstatat(AT_FDCWD, p, &st, 0);
		if (r < 0) {
			cl_error(c, "stat", p, errno);
			return -1;
		}
		(*ops)++;
	}
	return 0;
}

static int step_setup(struct client *c, const struct step *s, const char *lmdb_dir)
{
	enum tkind tk = s->tk;
	char path[PATH_MAX];

	if (tk == T_LMDB)
		return c->env ? 0 : lmdb_open(c, lmdb_dir);
	if (!c->st[tk].base) {
		path_make(path, sizeof(path), tk, c->base, NULL, NULL);
		if (op_serial(c, tk, FOP_MKDIR, path) < 0) {
			cl_error(c, "mkdir", path, errno);
			return -1;
		}
		c->st[tk].base = true;
	}
	switch (s->ph) {
	case PH_MKDIR: return tree_state(c, tk, false, false);
	case PH_CREATE: case PH_DURABLE: return tree_state(c, tk, true, false);
	case PH_STAT: case PH_READDIR: case PH_UNLINK: return tree_state(c, tk, true, true);
	case PH_RMDIR: return tree_state(c, tk, true, false);
	case PH_RMTREE: return build_dir(c, tk, "rt");
	case PH_STAT3: return build_once(c, tk, "s3", &c->st[tk].s3);
	case PH_NEGSTAT: return build_once(c, tk, "ng", &c->st[tk].ng);
	case PH_STATSEQ: case PH_STATRAND:
		if (build_once(c, tk, "s3", &c->st[tk].s3) < 0)
			return -1;
		return spaths_make(c, tk);
	default:
		return 0;
	}
}

/* One lookup thread of stat3/negstat: --count stats of one path, each
 * checked (found, or ENOENT for negstat). Extra threads have their own
 * connection, as a threaded application would. */
struct lookup_thread {
	pthread_t th;
	struct client *c;
	enum tkind tk;
	const char *path;
	bool neg;
	mc_client *mc;
	uint64_t ops;
	int err;
};

static void *lookup_main(void *arg)
{
	struct lookup_thread *t = arg;
	struct stat st;
	for (unsigned long i = 0; i < O.count; i++) {
		int r = t->tk == T_MC ? mc_stat(t->mc, t->path, &st) : stat(t->path, &st);
		if (t->neg ? (r == 0 || errno != ENOENT) : r < 0) {
			t->err = r == 0 ? EEXIST : errno;
			break;
		}
		t->ops++;
	}
	return NULL;
}

static int lookups(struct client *c, enum tkind tk, const char *path, bool neg, uint64_t *ops)
{
	struct lookup_thread t[64];
	unsigned n = O.threads, started = 0;
	int rc = 0;
	memset(t, 0, sizeof(t));
	for (unsigned k = 0; k < n; k++) {
		t[k] = (struct lookup_thread){ .c = c, .tk = tk, .path = path, .neg = neg, .mc = c->mc };
		if (k > 0 && tk == T_MC && !(t[k].mc = mc_connect(O.socket))) {
			cl_error(c, "mc_connect", NULL, errno);
			rc = -1;
			break;
		}
	}
	for (unsigned k = 1; rc == 0 && k < n; k++, started++)
		if (pthread_create(&t[k].th, NULL, lookup_main, &t[k]) != 0) {
			cl_error(c, "pthread_create", NULL, EAGAIN);
			rc = -1;
		}
	if (rc == 0)
		lookup_main(&t[0]);
	for (unsigned k = 1; k <= started; k++)
		pthread_join(t[k].th, NULL);
	for (unsigned k = 0; k < n; k++) {
		if (k > 0 && tk == T_MC && t[k].mc)
			mc_disconnect(t[k].mc);
		*ops += t[k].ops;
		if (t[k].err && rc == 0) {
			cl_error(c, neg ? "stat (expected ENOENT)" : "stat", path, t[k].err);
			rc = -1;
		}
	}
	return rc;
}

/* The timed part of a step. */
static int step_run(struct client *c, const struct step *s, uint64_t *ops)
{
	enum tkind tk = s->tk;
	char path[PATH_MAX], name[256];
	int r;

	if (tk == T_LMDB)
		return lmdb_run(c, ops);
	if (q_setup(c, tk == T_MC ? O.batch : 0) < 0)
		return -1;
	switch (s->ph) {
	case PH_MKDIR:
		r = do_all(c, tk, FOP_MKDIR, 0, ops);
		c->st[tk].dirs = r == 0;
		return r;
	case PH_CREATE:
	case PH_DURABLE:
		r = do_all(c, tk, FOP_CREATE, s->ph == PH_DURABLE ? SYNC_EVERY : 0, ops);
		c->st[tk].files = true;  /* maybe partly: clean-up removes the base */
		return r;
	case PH_STAT:
		return do_all(c, tk, FOP_STAT, 0, ops);
	case PH_READDIR:
		return do_readdir(c, tk, ops);
	case PH_UNLINK:
		r = do_all(c, tk, FOP_UNLINK, 0, ops);
		c->st[tk].files = r != 0;
		return r;
	case PH_RMDIR:
		r = do_all(c, tk, FOP_RMDIR, 0, ops);
		c->st[tk].dirs = r != 0;
		return r;
	case PH_RMTREE: {
		uint64_t n = 0;
		path_make(path, sizeof(path), tk, c->base, "rt", NULL);
		if (tree_rm(c, tk, path, &n) < 0)
			return -1;
		/* the same count on both sides: the files and the directory */
		*ops += O.files + 1;
		if (tk == T_KERNEL && n != O.files + 1) {
			c->errors++;
			fprintf(stderr, "mcbench: client %u: rmtree removed %" PRIu64
			        " entries, expected %lu\n", c->id, n, O.files + 1);
			return -1;
		}
		return 0;
	}
	case PH_STAT3:
		path_make(path, sizeof(path), tk, c->base, "s3", c->fnames[0]);
		return lookups(c, tk, path, false, ops);
	case PH_NEGSTAT:
		neg_name(name);
		path_make(path, sizeof(path), tk, c->base, "ng", name);
		return lookups(c, tk, path, true, ops);
	case PH_STATSEQ:
	case PH_STATRAND:
		return stat_many(c, tk, s->ph == PH_STATRAND, ops);
	default:
		return 0;
	}
}

static int send_msg(int fd, struct client *c, int type, int step, uint64_t ops,
                    int64_t t0, int64_t t1)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.client = (int32_t)c->id;
	m.step = step;
	m.ops = ops;
	m.errors = c->errors;
	m.t0_ns = t0;
	m.t1_ns = t1;
	return write_full(fd, &m, sizeof(m));
}

static void client_cleanup(struct client *c)
{
	char path[PATH_MAX];
	int r;

	if (c->st[T_MC].base && c->mc) {
		path_make(path, sizeof(path), T_MC, c->base, NULL, NULL);
		if (mc_rmtree(c->mc, path) < 0 && errno != ENOENT)
			fprintf(stderr, "mcbench: client %u: clean-up mc_rmtree %s: %s\n",
			        c->id, path, strerror(errno));
	}
	if (c->st[T_KERNEL].base) {
		path_make(path, sizeof(path), T_KERNEL, c->base, NULL, NULL);
		r = kernel_rmtree(path, NULL);
		if (r < 0 && r != -ENOENT)
			fprintf(stderr, "mcbench: client %u: clean-up of %s/%s: %s\n",
			        c->id, kroot, path, strerror(-r));
	}
	lmdb_close(c);
}

static int names_make(char ***out, unsigned long n, char prefix)
{
	char **v = calloc(n ? n : 1, sizeof(*v));
	unsigned long i;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i] = malloc(O.name_len + 1);
		if (!v[i])
			return -ENOMEM;  /* the process exits soon; nothing to free */
		make_name(v[i], prefix, i, O.name_len);
	}
	*out = v;
	return 0;
}

/* --callgrind: collect instructions inside the timed part of a step only,
 * and dump them at its end, named "<phase>-<target>-<ops>". */
static void cg_begin(void)
{
#ifdef HAVE_CALLGRIND_H
	if (O.callgrind && RUNNING_ON_VALGRIND) {
		CALLGRIND_ZERO_STATS;
		CALLGRIND_TOGGLE_COLLECT;
	}
#endif
}

static void cg_end(const struct client *c, const struct step *s, uint64_t ops)
{
#ifdef HAVE_CALLGRIND_H
	if (O.callgrind && RUNNING_ON_VALGRIND) {
		char name[128];
		CALLGRIND_TOGGLE_COLLECT;
		snprintf(name, sizeof(name), "%s-%s-%" PRIu64, phase_names[s->ph],
		         tkind_names[s->tk], ops);
		CALLGRIND_DUMP_STATS_AT(name);
		fprintf(stderr, "# callgrind: client %u: %s dumped\n", c->id, name);
	}
#else
	(void)c, (void)s, (void)ops;
#endif
}

void client_main(unsigned id, unsigned rep, int up, int go, const char *lmdb_dir)
{
	struct client c;
	unsigned i;
	bool broken = false;         /* no step can run */
	bool no_mc = false;          /* no mcache step can run */
	char g;

	memset(&c, 0, sizeof(c));
	c.id = id;
	c.phase = "set-up";
	c.target = "client";
	snprintf(c.base, sizeof(c.base), "mcb.%ld.%u.c%u", (long)run_id, rep, id);
	if (chdir(kroot) < 0) {
		fprintf(stderr, "mcbench: client %u: chdir %s: %s\n", id, kroot, strerror(errno));
		broken = true;
	}
	if (names_make(&c.fnames, O.files, 'f') < 0 || names_make(&c.dnames, O.dirs, 'd') < 0) {
		fprintf(stderr, "mcbench: client %u: out of memory\n", id);
		broken = true;
	}
	if (!broken && need_server()) {
		c.mc = mc_connect(O.socket);
		if (!c.mc) {
			fprintf(stderr, "mcbench: client %u: mc_connect: %s\n", id, strerror(errno));
			no_mc = true;
		} else if (!(c.b = mc_batch_new(c.mc))) {
			fprintf(stderr, "mcbench: client %u: mc_batch_new: %s\n", id, strerror(errno));
			no_mc = true;
		}
	}
	for (i = 0; i < nsteps; i++) {
		uint64_t ops = 0;
		int64_t t0 = 0, t1 = 0;
		bool ok, skip = broken || (no_mc && steps[i].tk == T_MC);

		c.errors = 0;
		c.phase = phase_names[steps[i].ph];
		c.target = tkind_names[steps[i].tk];
		ok = !skip && step_setup(&c, &steps[i], lmdb_dir) == 0;
		if (skip)
			c.errors = 1;
		if (send_msg(up, &c, MSG_READY, (int)i, 0, 0, 0) < 0 || read_full(go, &g, 1) < 0)
			_exit(3);
		if (ok) {
			if (steps[i].ph == PH_UNLINK || steps[i].ph == PH_RMTREE)
				win_begin(&c.win);
			cg_begin();
			t0 = now_ns();
			step_run(&c, &steps[i], &ops);
			t1 = now_ns();
			cg_end(&c, &steps[i], ops);
			win_end(&c.win, i, c.id);
		}
		if (send_msg(up, &c, MSG_RESULT, (int)i, ops, t0, t1) < 0)
			_exit(3);
	}
	client_cleanup(&c);
	mc_batch_free(c.b);
	mc_disconnect(c.mc);
	send_msg(up, &c, MSG_DONE, (int)nsteps, 0, 0, 0);
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* the parent */
