/* mcbench.c - mdtest-style metadata benchmark: the same workload against
 * mcached (through libmcache) and a kernel directory, rates side by side.
 *
 * Process model (one repeat):
 *
 *   parent ── fork C clients ──► client k: mc_connect, chdir(kdir)
 *     for each step (phase, target):
 *       client: untimed set-up ─► MSG_READY ─► wait GO ─► timed run ─► MSG_RESULT
 *       parent: read READY from all ─► (stats before) ─► GO to all
 *               ─► read RESULT from all ─► (stats after)
 *     client: untimed clean-up ─► MSG_DONE ─► exit
 *
 * Invariants:
 *  1. Each client has its own up pipe (client → parent, fixed-size records,
 *     atomic writes) and its own go pipe (parent → client), so a client that
 *     dies is seen as EOF on its pipe and no client can take another's GO.
 *  2. Every client passes every barrier, even after an error (it then reports
 *     a result with errors and no ops), so the parent never waits forever on
 *     a live client.
 *  3. A step's aggregate rate is total ops / (latest end - earliest start),
 *     both read with CLOCK_MONOTONIC, which is the same clock in every process.
 *  4. Client k touches only its own subtree "mcb.<pid>.<repeat>.c<k>" (in the
 *     service namespace and under the kernel directory) and its own LMDB keys.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <lmdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mcache.h"

enum phase {
	PH_MKDIR, PH_CREATE, PH_STAT, PH_READDIR, PH_UNLINK, PH_RMDIR,
	PH_RMTREE, PH_STAT3, PH_NEGSTAT, PH_DURABLE, PH_LMDB, PH_COUNT
};

static const char *const phase_names[PH_COUNT] = {
	"mkdir", "create", "stat", "readdir", "unlink", "rmdir",
	"rmtree", "stat3", "negstat", "durable", "lmdb",
};

enum tkind { T_MC, T_KERNEL, T_LMDB, T_COUNT };

static const char *const tkind_names[T_COUNT] = { "mcache", "kernel", "lmdb" };

#define MAX_CLIENTS 256
#define MAX_STEPS (2 * PH_COUNT + 1)
#define MAX_REPEAT 1000
#define SETUP_BATCH 100      /* ops per round trip in untimed set-up */
#define SYNC_EVERY 100       /* durable: mc_sync after this many creates */
#define LMDB_TXN_PUTS 100    /* lmdb: puts per committed write transaction */

struct opts {
	const char *socket;          /* NULL: $MCACHE_SOCKET / the library default */
	const char *kdir;            /* NULL: a fresh directory under /dev/shm */
	const char *lmdb_dir;        /* NULL: the socket's directory */
	const char *mcached;         /* start this server ourselves */
	unsigned long files;         /* -n: files per directory */
	unsigned long dirs;          /* -d: directories per client */
	unsigned clients;            /* -c */
	unsigned long batch;         /* --batch: 0 = serial */
	unsigned repeat;             /* --repeat */
	unsigned long count;         /* --count: calls per client for stat3/negstat */
	unsigned threads;            /* --threads: lookup threads per client in stat3/negstat */
	unsigned name_len;           /* --name-len */
	bool json;
	bool kernel_only;          /* no mcache steps */
	bool phase_on[PH_COUNT];
	enum phase order[PH_COUNT];  /* phases in the order given */
	unsigned norder;
};

struct step {
	enum phase ph;
	enum tkind tk;
};

/* Messages on a client's up pipe. */
enum msg_type { MSG_READY = 1, MSG_RESULT, MSG_DONE };

struct msg {
	int32_t type;
	int32_t client;
	int32_t step;
	int32_t pad;
	uint64_t ops;
	uint64_t errors;
	int64_t t0_ns;
	int64_t t1_ns;
};

/* One step of one repeat, summed over clients. */
struct result {
	uint64_t ops;
	uint64_t errors;
	double secs;
	double rate;                 /* ops/s; 0 when errors or no ops */
	bool valid;
};

/* Memory per created entry, measured around the first mcache file-creating step. */
struct memfig {
	bool valid;
	double d_bytes, d_pos, d_inodes;
	uint64_t created;
};

static struct opts O;
static struct step steps[MAX_STEPS];
static unsigned nsteps;
static pid_t run_id;
static char kroot[PATH_MAX];     /* the kernel directory in use */
static bool kroot_owned;         /* we made it under /dev/shm and remove it */
static char lmdb_parent[PATH_MAX];

/* ------------------------------------------------------------------ */
/* small helpers */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* 0, -EPIPE on EOF, or -errno. */
static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;
	double d;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == 'e' || *end == 'E' || *end == '.') {
		/* accept 1e6 */
		errno = 0;
		d = strtod(s, &end);
		if (errno || *end || d < 0 || d > (double)ULONG_MAX || d != (double)(unsigned long)d)
			return -EINVAL;
		v = (unsigned long)d;
	} else if (errno || *end || s[0] == '-' || s[0] == '\0') {
		return -EINVAL;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static unsigned digits(unsigned long v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* name of length len: c, then i zero-padded. */
static void make_name(char *out, char c, unsigned long i, unsigned len)
{
	out[0] = c;
	snprintf(out + 1, len, "%0*lu", (int)len - 1, i);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	if (n % 2)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* nftw callback state for kernel recursive deletes (one per process). */
static uint64_t rm_count;
static int rm_errno;
static char rm_errpath[PATH_MAX];

static int rm_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (unlinkat(AT_FDCWD, path, type == FTW_DP ? AT_REMOVEDIR : 0) < 0) {
		rm_errno = errno;
		snprintf(rm_errpath, sizeof(rm_errpath), "%s", path);
		return 1;
	}
	rm_count++;
	return 0;
}

/* Remove path and everything below it; *count (may be NULL) gets the number of
 * entries removed. 0, or -errno (ENOENT if path is absent). */
static int kernel_rmtree(const char *path, uint64_t *count)
{
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return -errno;
	rm_count = 0;
	rm_errno = 0;
	r = nftw(path, rm_cb, 64, FTW_DEPTH | FTW_PHYS);
	if (r != 0)
		return rm_errno ? -rm_errno : -EIO;
	if (count)
		*count = rm_count;
	return 0;
}

/* ------------------------------------------------------------------ */
/* JSON key lookup for mc_server_stats(): enough to find a number by a dotted
 * path of object keys ("shm.bytes_used"). */

static const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *js_skip_string(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p; p++) {
		if (*p == '\\') {
			if (!p[1])
				return NULL;
			p++;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

static const char *js_skip_value(const char *p)
{
	int depth = 0;

	p = js_ws(p);
	if (*p == '"')
		return js_skip_string(p);
	if (*p != '{' && *p != '[') {
		while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
			p++;
		return p;
	}
	while (*p) {
		if (*p == '"') {
			p = js_skip_string(p);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return p + 1;
		}
		p++;
	}
	return NULL;
}

/* p at '{': the start of key's value in that object, or NULL. */
static const char *js_find_key(const char *p, const char *key, size_t klen)
{
	p = js_ws(p);
	if (*p != '{')
		return NULL;
	p = js_ws(p + 1);
	while (*p == '"') {
		const char *ks = p + 1, *ke = js_skip_string(p);
		if (!ke)
			return NULL;
		p = js_ws(ke);
		if (*p != ':')
			return NULL;
		p = js_ws(p + 1);
		if ((size_t)(ke - 1 - ks) == klen && memcmp(ks, key, klen) == 0)
			return p;
		p = js_skip_value(p);
		if (!p)
			return NULL;
		p = js_ws(p);
		if (*p == ',')
			p = js_ws(p + 1);
	}
	return NULL;
}

static int js_number(const char *p, double *out)
{
	char *end;
	double v;

	if (!p)
		return -ENOENT;
	errno = 0;
	v = strtod(p, &end);
	if (end == p || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The number at dotted path in doc: nested objects first ("a.b" = {"a":{"b":}}),
 * then a flat key "a.b", then "a_b". 0, or -ENOENT / -EINVAL. */
static int stats_lookup(const char *doc, const char *path, double *out)
{
	const char *p = doc, *comp = path;
	char flat[128];
	size_t i;

	for (;;) {
		const char *dot = strchr(comp, '.');
		size_t len = dot ? (size_t)(dot - comp) : strlen(comp);
		p = js_find_key(p, comp, len);
		if (!p || !dot)
			break;
		comp = dot + 1;
	}
	if (p && js_number(p, out) == 0)
		return 0;
	if (js_number(js_find_key(doc, path, strlen(path)), out) == 0)
		return 0;
	snprintf(flat, sizeof(flat), "%s", path);
	for (i = 0; flat[i]; i++)
		if (flat[i] == '.')
			flat[i] = '_';
	return js_number(js_find_key(doc, flat, strlen(flat)), out);
}

struct memsnap {
	double bytes, pos, inodes;
	bool ok;
};

static void mem_snapshot(mc_client *c, struct memsnap *m)
{
	char *doc;

	memset(m, 0, sizeof(*m));
	if (!c)
		return;
	if (mc_sync(c) < 0)
		fprintf(stderr, "mcbench: mc_sync before reading stats: %s\n", strerror(errno));
	doc = mc_server_stats(c);
	if (!doc) {
		fprintf(stderr, "mcbench: mc_server_stats: %s\n", strerror(errno));
		return;
	}
	if (stats_lookup(doc, "shm.bytes_used", &m->bytes) < 0 ||
	    stats_lookup(doc, "dentries.positive", &m->pos) < 0 ||
	    stats_lookup(doc, "inodes.cached", &m->inodes) < 0)
		fprintf(stderr, "mcbench: server stats lack shm.bytes_used, "
		        "dentries.positive or inodes.cached\n");
	else
		m->ok = true;
	free(doc);
}

/* ------------------------------------------------------------------ */
/* a client process */

enum fop { FOP_MKDIR, FOP_RMDIR, FOP_CREATE, FOP_STAT, FOP_UNLINK };

static const char *const fop_names[] = { "mkdir", "rmdir", "create", "stat", "unlink" };

struct tstate {
	bool base;                   /* the client's subtree root exists */
	bool dirs;                   /* its D directories exist */
	bool files;                  /* and hold N files each */
	bool s3, ng;                 /* stat3 / negstat trees built */
};

struct client {
	unsigned id;
	mc_client *mc;
	mc_batch *b;
	char base[64];               /* "mcb.<pid>.<r>.c<k>" */
	char **fnames;               /* N file names */
	char **dnames;               /* D directory names */
	struct tstate st[2];         /* T_MC, T_KERNEL */
	/* batching */
	unsigned long bsz;           /* ops per round trip in the current run */
	unsigned long qn;            /* queued */
	char *qpaths;                /* bsz slots of qstride bytes */
	size_t qstride;
	struct stat *qst;
	enum fop qop;
	/* current step, for messages */
	const char *phase;
	const char *target;
	uint64_t errors;
	/* lmdb */
	MDB_env *env;
	MDB_dbi dbi;
};

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

/* Prepare batching of bsz ops per round trip (0: serial). 0 or -ENOMEM. */
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
	if (!c->qpaths || !c->qst)
		return -ENOMEM;
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
		return 0;
	}
	slot = c->qpaths + c->qn * c->qstride;
	snprintf(slot, c->qstride, "%s", path);
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
			if (sync_every && ++n % sync_every == 0) {
				if (q_flush(c) < 0)
					return -1;
				if (mc_sync(c->mc) < 0) {
					cl_error(c, "mc_sync", NULL, errno);
					return -1;
				}
			}
		}
	}
	if (q_flush(c) < 0)
		return -1;
	if (sync_every && n % sync_every) {
		if (mc_sync(c->mc) < 0) {
			cl_error(c, "mc_sync", NULL, errno);
			return -1;
		}
	}
	return 0;
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
	r = kernel_rmtree(path, count);
	if (r < 0) {
		cl_error(c, "nftw/unlinkat", r == -ENOENT ? path : rm_errpath, -r);
		return -1;
	}
	return 0;
}

/* Build dir (relative to base) holding N files; untimed, batched on mcache. */
static int build_dir(struct client *c, enum tkind tk, const char *dir)
{
	char path[PATH_MAX];
	unsigned long i;
	uint64_t ops = 0;

	if (q_setup(c, tk == T_MC ? SETUP_BATCH : 0) < 0) {
		cl_error(c, "malloc", NULL, ENOMEM);
		return -1;
	}
	path_make(path, sizeof(path), tk, c->base, dir, NULL);
	if (q_op(c, tk, FOP_MKDIR, path) < 0 || q_flush(c) < 0)
		return -1;
	for (i = 0; i < O.files; i++) {
		path_make(path, sizeof(path), tk, c->base, dir, c->fnames[i]);
		if (q_op(c, tk, FOP_CREATE, path) < 0)
			return -1;
		ops++;
	}
	return q_flush(c);
}

/* Bring the D-directory tree to the wanted state, untimed. */
static int tree_state(struct client *c, enum tkind tk, bool dirs, bool files)
{
	struct tstate *s = &c->st[tk];
	uint64_t ops = 0;

	if (q_setup(c, tk == T_MC ? SETUP_BATCH : 0) < 0) {
		cl_error(c, "malloc", NULL, ENOMEM);
		return -1;
	}
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

static int lmdb_check(struct client *c, const char *what, int rc)
{
	if (rc == 0)
		return 0;
	c->errors++;
	if (c->errors == 1)
		fprintf(stderr, "mcbench: client %u: lmdb phase aborted: %s: %s\n",
		        c->id, what, mdb_strerror(rc));
	return -1;
}

static int lmdb_open(struct client *c, const char *dir)
{
	MDB_txn *txn;
	size_t per = 8 + O.name_len + 9 + 64;
	size_t map = (size_t)O.files * O.dirs * O.clients * per * 3 + ((size_t)64 << 20);

	if (lmdb_check(c, "mdb_env_create", mdb_env_create(&c->env)) < 0)
		return -1;
	if (lmdb_check(c, "mdb_env_set_mapsize", mdb_env_set_mapsize(c->env, map)) < 0 ||
	    lmdb_check(c, "mdb_env_open", mdb_env_open(c->env, dir, 0, 0644)) < 0 ||
	    lmdb_check(c, "mdb_txn_begin", mdb_txn_begin(c->env, NULL, 0, &txn)) < 0)
		goto fail;
	if (lmdb_check(c, "mdb_dbi_open", mdb_dbi_open(txn, NULL, 0, &c->dbi)) < 0) {
		mdb_txn_abort(txn);
		goto fail;
	}
	if (lmdb_check(c, "mdb_txn_commit", mdb_txn_commit(txn)) < 0)
		goto fail;
	return 0;
fail:
	mdb_env_close(c->env);
	c->env = NULL;
	return -1;
}

/* N*D puts of a dentry-sized record (key: u64 BE parent + name; value: u64
 * child ino + u8 type), one fsync'd write transaction per LMDB_TXN_PUTS. */
static int lmdb_run(struct client *c, uint64_t *ops)
{
	unsigned char key[8 + 256], val[9];
	MDB_txn *txn = NULL;
	MDB_val k, v;
	unsigned long d, i;
	uint64_t n = 0, parent, ino;
	int j;

	for (d = 0; d < O.dirs; d++) {
		parent = ((uint64_t)(c->id + 1) << 32) | d;
		for (j = 0; j < 8; j++)
			key[j] = (unsigned char)(parent >> (56 - 8 * j));
		for (i = 0; i < O.files; i++) {
			if (!txn && lmdb_check(c, "mdb_txn_begin",
			                       mdb_txn_begin(c->env, NULL, 0, &txn)) < 0)
				return -1;
			memcpy(key + 8, c->fnames[i], O.name_len);
			ino = parent * 1000003 + i;
			memcpy(val, &ino, 8);
			val[8] = DT_REG;
			k.mv_data = key;
			k.mv_size = 8 + O.name_len;
			v.mv_data = val;
			v.mv_size = sizeof(val);
			if (lmdb_check(c, "mdb_put", mdb_put(txn, c->dbi, &k, &v, MDB_NOOVERWRITE)) < 0) {
				mdb_txn_abort(txn);
				return -1;
			}
			n++;
			(*ops)++;
			if (n % LMDB_TXN_PUTS == 0) {
				int rc = mdb_txn_commit(txn);
				txn = NULL;
				if (lmdb_check(c, "mdb_txn_commit", rc) < 0)
					return -1;
			}
		}
	}
	if (txn && lmdb_check(c, "mdb_txn_commit", mdb_txn_commit(txn)) < 0)
		return -1;
	return 0;
}

/* The missing name negstat looks up. */
static void neg_name(char *out)
{
	make_name(out, 'm', 0, O.name_len);
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
	case PH_STAT3:
		if (c->st[tk].s3)
			return 0;
		if (build_dir(c, tk, "s3") < 0)
			return -1;
		c->st[tk].s3 = true;
		return 0;
	case PH_NEGSTAT:
		if (c->st[tk].ng)
			return 0;
		if (build_dir(c, tk, "ng") < 0)
			return -1;
		c->st[tk].ng = true;
		return 0;
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
	if (q_setup(c, tk == T_MC ? O.batch : 0) < 0) {
		cl_error(c, "malloc", NULL, ENOMEM);
		return -1;
	}
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
	if (c->env)
		mdb_env_close(c->env);
	c->env = NULL;
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

static bool need_server(void);

static void client_main(unsigned id, unsigned rep, int up, int go, const char *lmdb_dir)
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
			t0 = now_ns();
			step_run(&c, &steps[i], &ops);
			t1 = now_ns();
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

static pid_t kids[MAX_CLIENTS];
static int ups[MAX_CLIENTS], gos[MAX_CLIENTS];
static unsigned nkids;

static void kids_kill(void)
{
	unsigned i;

	for (i = 0; i < nkids; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
	}
	nkids = 0;
}

static int recv_msg(unsigned k, int type, struct msg *m)
{
	int r = read_full(ups[k], m, sizeof(*m));

	if (r < 0) {
		fprintf(stderr, "mcbench: client %u died (%s)\n", k,
		        r == -EPIPE ? "end of pipe" : strerror(-r));
		return -1;
	}
	if (m->type != type || m->client != (int32_t)k) {
		fprintf(stderr, "mcbench: client %u: protocol error\n", k);
		return -1;
	}
	return 0;
}

static int rm_lmdb_dir(const char *dir)
{
	int r = kernel_rmtree(dir, NULL);

	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "mcbench: removing %s: %s\n", dir, strerror(-r));
		return -1;
	}
	return 0;
}

/* One repeat: fork the clients, drive the steps. res[i] gets step i. */
static int run_repeat(unsigned rep, struct result *res, struct memfig *mem)
{
	char lmdb_dir[PATH_MAX + 32];
	struct msg m;
	unsigned i, k;
	mc_client *pc = NULL;
	int mem_step = -1;
	int rc = 0;

	lmdb_dir[0] = '\0';
	for (i = 0; i < nsteps; i++) {
		if (steps[i].tk == T_LMDB) {
			snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/mcbench-lmdb.XXXXXX", lmdb_parent);
			if (!mkdtemp(lmdb_dir)) {
				fprintf(stderr, "mcbench: mkdtemp %s: %s\n", lmdb_dir, strerror(errno));
				return -1;
			}
		}
		if (mem_step < 0 && steps[i].tk == T_MC &&
		    (steps[i].ph == PH_CREATE || steps[i].ph == PH_DURABLE))
			mem_step = (int)i;
	}
	fflush(NULL);
	for (k = 0; k < O.clients; k++) {
		int up[2], go[2];
		pid_t pid;

		if (pipe2(up, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
			fprintf(stderr, "mcbench: pipe: %s\n", strerror(errno));
			rc = -1;
			goto out;
		}
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "mcbench: fork: %s\n", strerror(errno));
			close(up[0]); close(up[1]); close(go[0]); close(go[1]);
			rc = -1;
			goto out;
		}
		if (pid == 0) {
			unsigned j;
			for (j = 0; j < nkids; j++) {
				close(ups[j]);
				close(gos[j]);
			}
			close(up[0]);
			close(go[1]);
			client_main(k, rep, up[1], go[0], lmdb_dir);
		}
		close(up[1]);
		close(go[0]);
		kids[nkids] = pid;
		ups[nkids] = up[0];
		gos[nkids] = go[1];
		nkids++;
	}
	if (mem_step >= 0) {
		pc = mc_connect(O.socket);
		if (!pc)
			fprintf(stderr, "mcbench: stats connection: mc_connect: %s\n", strerror(errno));
	}
	for (i = 0; i < nsteps; i++) {
		int64_t t0 = INT64_MAX, t1 = INT64_MIN;
		struct memsnap before, after;

		memset(&res[i], 0, sizeof(res[i]));
		for (k = 0; k < nkids; k++) {
			if (recv_msg(k, MSG_READY, &m) < 0) {
				rc = -1;
				goto out;
			}
		}
		if ((int)i == mem_step)
			mem_snapshot(pc, &before);
		for (k = 0; k < nkids; k++) {
			if (write_full(gos[k], "g", 1) < 0) {
				fprintf(stderr, "mcbench: client %u died\n", k);
				rc = -1;
				goto out;
			}
		}
		for (k = 0; k < nkids; k++) {
			if (recv_msg(k, MSG_RESULT, &m) < 0) {
				rc = -1;
				goto out;
			}
			res[i].ops += m.ops;
			res[i].errors += m.errors;
			if (m.t1_ns > 0) {
				if (m.t0_ns < t0)
					t0 = m.t0_ns;
				if (m.t1_ns > t1)
					t1 = m.t1_ns;
			}
		}
		if (t1 > t0)
			res[i].secs = (double)(t1 - t0) / 1e9;
		if (res[i].errors)
			rc = -1;
		res[i].valid = res[i].errors == 0 && res[i].ops > 0 && res[i].secs > 0;
		res[i].rate = res[i].valid ? (double)res[i].ops / res[i].secs : 0;
		if ((int)i == mem_step) {
			mem_snapshot(pc, &after);
			if (before.ok && after.ok && res[i].errors == 0 && res[i].ops) {
				mem->valid = true;
				mem->created = res[i].ops;
				mem->d_bytes = after.bytes - before.bytes;
				mem->d_pos = after.pos - before.pos;
				mem->d_inodes = after.inodes - before.inodes;
			}
		}
	}
	for (k = 0; k < nkids; k++) {
		if (recv_msg(k, MSG_DONE, &m) < 0) {
			rc = -1;
			goto out;
		}
		if (m.errors)
			rc = -1;
	}
	for (k = 0; k < nkids; k++) {
		int status;
		if (waitpid(kids[k], &status, 0) == kids[k]) {
			kids[k] = 0;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "mcbench: client %u exited abnormally\n", k);
				rc = -1;
			}
		}
	}
out:
	mc_disconnect(pc);
	kids_kill();
	for (k = 0; k < O.clients; k++) {
		if (ups[k] > 0)
			close(ups[k]);
		if (gos[k] > 0)
			close(gos[k]);
		ups[k] = gos[k] = 0;
	}
	if (lmdb_dir[0] && rm_lmdb_dir(lmdb_dir) < 0)
		rc = -1;
	return rc;
}

/* ------------------------------------------------------------------ */
/* an mcached started for the run (--mcached) */

static pid_t srv_pid;
static char srv_dir[PATH_MAX];
static char srv_sock[PATH_MAX + 16];

static int server_start(void)
{
	const char *tmp = getenv("TMPDIR");
	char data[PATH_MAX + 16];
	int64_t deadline;
	int status;

	snprintf(srv_dir, sizeof(srv_dir), "%s/mcbench-srv.XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
	if (!mkdtemp(srv_dir)) {
		fprintf(stderr, "mcbench: mkdtemp %s: %s\n", srv_dir, strerror(errno));
		return -1;
	}
	snprintf(srv_sock, sizeof(srv_sock), "%s/s.sock", srv_dir);
	snprintf(data, sizeof(data), "%s/data", srv_dir);
	fflush(NULL);
	srv_pid = fork();
	if (srv_pid < 0) {
		fprintf(stderr, "mcbench: fork: %s\n", strerror(errno));
		return -1;
	}
	if (srv_pid == 0) {
		execl(O.mcached, O.mcached, "--socket", srv_sock, "--data", data,
		      "--admin", "none", (char *)NULL);
		fprintf(stderr, "mcbench: exec %s: %s\n", O.mcached, strerror(errno));
		_exit(127);
	}
	deadline = now_ns() + 10 * (int64_t)1000000000;
	while (now_ns() < deadline) {
		mc_client *c = mc_connect(srv_sock);
		if (c) {
			mc_disconnect(c);
			O.socket = srv_sock;
			return 0;
		}
		if (waitpid(srv_pid, &status, WNOHANG) == srv_pid) {
			fprintf(stderr, "mcbench: %s exited before accepting connections\n", O.mcached);
			srv_pid = 0;
			return -1;
		}
		usleep(20000);
	}
	fprintf(stderr, "mcbench: %s did not accept connections on %s within 10 s\n",
	        O.mcached, srv_sock);
	return -1;
}

static void server_stop(void)
{
	int status;

	if (srv_pid > 0) {
		kill(srv_pid, SIGTERM);
		waitpid(srv_pid, &status, 0);
		srv_pid = 0;
	}
	if (srv_dir[0]) {
		int r = kernel_rmtree(srv_dir, NULL);
		if (r < 0 && r != -ENOENT)
			fprintf(stderr, "mcbench: removing %s: %s\n", srv_dir, strerror(-r));
		srv_dir[0] = '\0';
	}
}

/* ------------------------------------------------------------------ */
/* output */

static void fmt_rate(char *out, size_t size, double r, bool have)
{
	if (!have)
		snprintf(out, size, "-");
	else if (r <= 0)
		snprintf(out, size, "error");
	else
		snprintf(out, size, "%.0f", r);
}

/* Index of the step (ph, tk), or -1. */
static int step_find(enum phase ph, enum tkind tk)
{
	unsigned i;

	for (i = 0; i < nsteps; i++)
		if (steps[i].ph == ph && steps[i].tk == tk)
			return (int)i;
	return -1;
}

struct row {
	enum phase ph;
	int mc_step, base_step;      /* -1: not measured */
	uint64_t ops;                /* per repeat, summed over clients */
	double mc_rate, base_rate;   /* medians; 0 when any repeat failed */
	uint64_t errors;             /* over all repeats */
};

static void rows_make(struct result (*res)[MAX_STEPS], unsigned reps, struct row *rows)
{
	double v[MAX_REPEAT];
	unsigned p, r;

	for (p = 0; p < O.norder; p++) {
		struct row *w = &rows[p];
		int idx[2], j;
		double *dst[2];

		memset(w, 0, sizeof(*w));
		w->ph = O.order[p];
		if (w->ph == PH_LMDB) {
			w->mc_step = -1;
			w->base_step = step_find(PH_LMDB, T_LMDB);
		} else if (w->ph == PH_DURABLE) {
			w->mc_step = step_find(PH_DURABLE, T_MC);
			w->base_step = step_find(PH_LMDB, T_LMDB);
		} else {
			w->mc_step = step_find(w->ph, T_MC);
			w->base_step = step_find(w->ph, T_KERNEL);
		}
		idx[0] = w->mc_step;
		idx[1] = w->base_step;
		dst[0] = &w->mc_rate;
		dst[1] = &w->base_rate;
		for (j = 0; j < 2; j++) {
			bool all = true;
			if (idx[j] < 0)
				continue;
			for (r = 0; r < reps; r++) {
				const struct result *x = &res[r][idx[j]];
				v[r] = x->rate;
				all = all && x->valid;
				/* the lmdb step also backs durable: count its errors once */
				if (!(w->ph == PH_DURABLE && j == 1))
					w->errors += x->errors;
				if (x->ops > w->ops)
					w->ops = x->ops;
			}
			*dst[j] = all ? median(v, reps) : 0;
		}
	}
}

static void print_table(FILE *f, const struct row *rows, unsigned reps,
                        const struct memfig *mem, unsigned nmem)
{
	char a[32], b[32], c[32];
	double bytes[MAX_REPEAT], pos[MAX_REPEAT], ino[MAX_REPEAT];
	unsigned p, r, n = 0;

	fprintf(f, "mcbench: %u client(s), %lu dir(s) x %lu files each, name length %u, %s, "
	        "median of %u run(s)\n", O.clients, O.dirs, O.files, O.name_len,
	        O.batch ? "batched" : "serial calls", reps);
	if (O.batch)
		fprintf(f, "mcache: %lu ops per round trip for mkdir/create/stat/unlink/rmdir; "
		        "kernel: one system call per op\n", O.batch);
	fprintf(f, "kernel directory: %s\n\n", kroot);
	fprintf(f, "%-8s %10s %14s %14s %8s %8s\n", "phase", "ops", "mcache ops/s",
	        "kernel ops/s", "ratio", "errors");
	for (p = 0; p < O.norder; p++) {
		const struct row *w = &rows[p];
		bool have_mc = w->mc_step >= 0, have_b = w->base_step >= 0;

		fmt_rate(a, sizeof(a), w->mc_rate, have_mc);
		fmt_rate(b, sizeof(b), w->base_rate, have_b);
		if (have_mc && have_b && w->mc_rate > 0 && w->base_rate > 0)
			snprintf(c, sizeof(c), "%.2f", w->mc_rate / w->base_rate);
		else
			snprintf(c, sizeof(c), "-");
		fprintf(f, "%-8s %10" PRIu64 " %14s %14s %8s %8" PRIu64 "%s\n",
		        phase_names[w->ph], w->ops, a, b, c, w->errors,
		        w->ph == PH_DURABLE || w->ph == PH_LMDB ? "  (baseline: raw LMDB)" : "");
	}
	for (r = 0; r < nmem; r++) {
		if (!mem[r].valid)
			continue;
		bytes[n] = mem[r].d_bytes / (double)mem[r].created;
		pos[n] = mem[r].d_pos;
		ino[n] = mem[r].d_inodes;
		n++;
	}
	if (n) {
		double mb = median(bytes, n), mp = median(pos, n), mi = median(ino, n);
		fprintf(f, "\nmemory: %.1f bytes of shared memory per created entry "
		        "(name length %u; median of %u run(s)); per run: "
		        "+%.0f dentries.positive, +%.0f inodes.cached for %" PRIu64 " files\n",
		        mb, O.name_len, n, mp, mi, mem[0].created);
	} else if (need_server() && (O.phase_on[PH_CREATE] || O.phase_on[PH_DURABLE])) {
		fprintf(f, "\nmemory: not measured (server stats unavailable or the create phase failed)\n");
	}
}

static void print_json(FILE *f, struct result (*res)[MAX_STEPS], unsigned reps,
                       const struct row *rows, const struct memfig *mem)
{
	unsigned p, r, j;

	fprintf(f, "{\"clients\":%u,\"dirs\":%lu,\"files\":%lu,\"name_len\":%u,\"batch\":%lu,"
	        "\"repeat\":%u,\"count\":%lu,\"kdir\":\"%s\",\"phases\":[",
	        O.clients, O.dirs, O.files, O.name_len, O.batch, reps, O.count, kroot);
	for (p = 0; p < O.norder; p++) {
		const struct row *w = &rows[p];
		int idx[2] = { w->mc_step, w->base_step };
		const char *keys[2] = { "mcache", w->ph == PH_DURABLE || w->ph == PH_LMDB ?
		                        "lmdb" : "kernel" };

		fprintf(f, "%s{\"phase\":\"%s\",\"ops\":%" PRIu64 ",\"errors\":%" PRIu64
		        ",\"baseline\":\"%s\"", p ? "," : "", phase_names[w->ph], w->ops,
		        w->errors, keys[1]);
		for (j = 0; j < 2; j++) {
			if (idx[j] < 0)
				continue;
			fprintf(f, ",\"%s_ops_s\":", keys[j]);
			if ((j ? w->base_rate : w->mc_rate) > 0)
				fprintf(f, "%.1f", j ? w->base_rate : w->mc_rate);
			else
				fprintf(f, "null");
			fprintf(f, ",\"%s_runs\":[", keys[j]);
			for (r = 0; r < reps; r++) {
				const struct result *x = &res[r][idx[j]];
				fprintf(f, "%s{\"ops\":%" PRIu64 ",\"seconds\":%.6f,\"errors\":%" PRIu64 "}",
				        r ? "," : "", x->ops, x->secs, x->errors);
			}
			fprintf(f, "]");
		}
		if (w->mc_rate > 0 && w->base_rate > 0)
			fprintf(f, ",\"ratio\":%.4f", w->mc_rate / w->base_rate);
		else
			fprintf(f, ",\"ratio\":null");
		fprintf(f, "}");
	}
	fprintf(f, "],\"memory\":[");
	for (r = 0, j = 0; r < reps; r++) {
		if (!mem[r].valid)
			continue;
		fprintf(f, "%s{\"created\":%" PRIu64 ",\"shm_bytes_used_delta\":%.0f,"
		        "\"dentries_positive_delta\":%.0f,\"inodes_cached_delta\":%.0f,"
		        "\"bytes_per_entry\":%.2f}", j++ ? "," : "", mem[r].created,
		        mem[r].d_bytes, mem[r].d_pos, mem[r].d_inodes,
		        mem[r].d_bytes / (double)mem[r].created);
	}
	fprintf(f, "]}\n");
}

/* ------------------------------------------------------------------ */
/* command line */

static void usage(FILE *f)
{
	fputs(
"NAME\n"
"    mcbench - metadata benchmark: mcached against a kernel directory\n"
"\n"
"SYNOPSIS\n"
"    mcbench [-s SOCKET | --mcached PATH] [--kdir DIR] [-n FILES] [-d DIRS]\n"
"            [-c CLIENTS] [--phases LIST] [--batch N] [--repeat R]\n"
"            [--count N] [--name-len L] [--lmdb-dir DIR] [--kernel-only]\n"
"            [--json]\n"
"\n"
"DESCRIPTION\n"
"    mcbench runs mdtest-style phases against a running mcached through\n"
"    libmcache and, in the same run and with the same workload, against a\n"
"    kernel directory (tmpfs by default), then prints one row per phase with\n"
"    both rates and their ratio. The durable phase is compared with raw LMDB\n"
"    instead (see PHASES).\n"
"\n"
"    Each client is a forked process with its own connection (mc_connect) and\n"
"    its own subtree \"mcb.<pid>.<run>.c<k>\" at the top of the service\n"
"    namespace and of the kernel directory. Kernel paths are relative to the\n"
"    kernel directory (the clients chdir into it), so both sides resolve the\n"
"    same number of path components. Before every phase all clients finish\n"
"    their untimed set-up, then start together through a pipe barrier; a\n"
"    phase's rate is the ops of all clients divided by the time from the\n"
"    first client's start to the last client's end (CLOCK_MONOTONIC).\n"
"\n"
"    Every call's result is checked. The first failing call of a client aborts\n"
"    that phase for the client with a message on stderr; the phase's rate is\n"
"    then shown as \"error\" and the errors column counts the failed calls.\n"
"    Nothing here depends on timing: mcbench never fails because something is\n"
"    slow.\n"
"\n", f);
	fputs(
"OPTIONS\n"
"    -s, --socket SOCKET\n"
"        mcached's socket. Default: $MCACHE_SOCKET, else the library default.\n"
"    --mcached PATH\n"
"        Start the server PATH for this run in a fresh directory under\n"
"        $TMPDIR (default /var/tmp), as PATH --socket DIR/s.sock --data\n"
"        DIR/data --admin none; stop it (SIGTERM) and remove DIR at the end.\n"
"        Overrides -s.\n"
"    --kdir DIR\n"
"        The kernel directory to compare with; it must exist. Default: a new\n"
"        directory /dev/shm/mcbench.<pid> (tmpfs), removed at the end.\n"
"    -n, --files FILES\n"
"        Files per directory (default 10000). Also the number of files in the\n"
"        directory used by stat3, negstat and rmtree.\n"
"    -d, --dirs DIRS\n"
"        Directories per client (default 1).\n"
"    -c, --clients CLIENTS\n"
"        Client processes (default 1, at most 256). Rates are aggregate.\n"
"    --phases LIST\n"
"        Comma-separated phases, run in the order given (default\n"
"        mkdir,create,stat,readdir,unlink,rmdir). A phase whose precondition\n"
"        is missing (stat without create, for instance) gets it built untimed.\n"
"    --batch N\n"
"        On mcache, send mkdir, create, stat, unlink and rmdir through the\n"
"        batch interface, N operations per round trip (0: one call per\n"
"        operation; default 0). The kernel side always makes one system call\n"
"        per operation.\n"
"    --repeat R\n"
"        Run everything R times, each with fresh clients and trees, and report\n"
"        the median rate of each phase (default 3).\n"
"    --count N\n"
"        Calls per client in stat3 and negstat (default 1000000; 1e6 works).\n"
"    --threads T\n"
"        Threads per client in stat3 and negstat, each making --count calls\n"
"        (default 1). On mcache every thread but the first opens its own\n"
"        connection; the kernel side uses the same number of threads.\n"
"    --name-len L\n"
"        Length of file and directory names (default 16; 2..255, and long\n"
"        enough to number FILES and DIRS).\n"
"    --lmdb-dir DIR\n"
"        Where the raw-LMDB baseline makes its temporary environment. Put it\n"
"        on the disk that holds the server's data directory. Default: the\n"
"        socket's directory (the server's directory with --mcached).\n"
"    --kernel-only\n"
"        Run only the kernel and LMDB sides (no server needed); the mcache\n"
"        column shows \"-\".\n"
"    --json\n"
"        Also print the results as one JSON document on stdout; the table\n"
"        then goes to stderr.\n"
"    -h, --help\n"
"        Show this text.\n"
"\n", f);
	fputs(
"PHASES\n"
"    mkdir    create the D directories of each client.\n"
"    create   create N files in each directory: mc_open(O_CREAT|O_EXCL|\n"
"             O_WRONLY) + mc_close, or mc_batch_create with --batch; kernel:\n"
"             open(O_CREAT|O_EXCL|O_WRONLY) + close.\n"
"    stat     stat every file.\n"
"    readdir  list every directory fully; ops are entries returned, and each\n"
"             listing must return exactly N entries.\n"
"    unlink   unlink every file.\n"
"    rmdir    remove the D directories.\n"
"    rmtree   build a directory of N files (batched, untimed), then time one\n"
"             mc_rmtree against a kernel recursive delete (nftw + unlinkat);\n"
"             ops are the entries removed (N + 1).\n"
"    stat3    stat one file three components deep (/<client>/s3/<file>, in a\n"
"             directory of N files) --count times.\n"
"    negstat  stat a missing name in a directory of N files --count times;\n"
"             every call must fail with ENOENT.\n"
"    durable  create D x N files with mc_sync after every 100 creates;\n"
"             compared with the lmdb phase (run implicitly if not listed).\n"
"    lmdb     raw LMDB baseline in a temporary environment under --lmdb-dir:\n"
"             D x N mdb_put of dentry-sized records (key: 8-byte parent +\n"
"             name of --name-len bytes; value: 9 bytes), one write\n"
"             transaction committed (with fsync) per 100 puts. Clients share\n"
"             the environment, as the server's writers share one store.\n"
"\n", f);
	fputs(
"OUTPUT\n"
"    One row per phase: phase, ops (per run, all clients), mcache ops/s,\n"
"    kernel ops/s (raw LMDB for durable and lmdb), ratio mcache/baseline\n"
"    (above 1: mcache is faster), and the errors over all runs.\n"
"    After the first mcache phase that creates files, the server's stats\n"
"    (mc_server_stats: shm.bytes_used, dentries.positive, inodes.cached) are\n"
"    read before and after (each after an mc_sync) and the shared memory\n"
"    used per created entry is printed with the name length.\n"
"\n"
"EXIT STATUS\n"
"    0 when every call succeeded, 1 when some call failed or a client died,\n"
"    2 on a usage error.\n"
"\n"
"EXAMPLES\n"
"    mcbench -s /run/mcache/mcached.sock -n 10000 --repeat 3\n"
"    mcbench -n 10000 --batch 100 -c 2\n"
"    mcbench --phases stat3,negstat -n 1000\n"
"    mcbench --phases durable,lmdb -n 2000 --lmdb-dir /var/lib/mcache\n",
	f);
}

static int parse_phases(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;
	unsigned p;

	if (!dup)
		return -ENOMEM;
	memset(O.phase_on, 0, sizeof(O.phase_on));
	O.norder = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (p = 0; p < PH_COUNT; p++)
			if (strcmp(tok, phase_names[p]) == 0)
				break;
		if (p == PH_COUNT) {
			fprintf(stderr, "mcbench: unknown phase '%s' (see --help)\n", tok);
			free(dup);
			return -EINVAL;
		}
		if (O.phase_on[p]) {
			fprintf(stderr, "mcbench: phase '%s' given twice\n", tok);
			free(dup);
			return -EINVAL;
		}
		O.phase_on[p] = true;
		O.order[O.norder++] = (enum phase)p;
	}
	free(dup);
	if (O.norder == 0) {
		fprintf(stderr, "mcbench: --phases is empty\n");
		return -EINVAL;
	}
	return 0;
}

static void steps_make(void)
{
	unsigned p;

	nsteps = 0;
	for (p = 0; p < O.norder && !O.kernel_only; p++)
		if (O.order[p] != PH_LMDB)
			steps[nsteps++] = (struct step){ O.order[p], T_MC };
	for (p = 0; p < O.norder; p++)
		if (O.order[p] != PH_LMDB && O.order[p] != PH_DURABLE)
			steps[nsteps++] = (struct step){ O.order[p], T_KERNEL };
	if (O.phase_on[PH_LMDB] || O.phase_on[PH_DURABLE])
		steps[nsteps++] = (struct step){ PH_LMDB, T_LMDB };
}

static bool need_server(void)
{
	unsigned i;

	for (i = 0; i < nsteps; i++)
		if (steps[i].tk == T_MC)
			return true;
	return false;
}

static int parse_args(int argc, char **argv)
{
	enum { OPT_KDIR = 256, OPT_PHASES, OPT_BATCH, OPT_REPEAT, OPT_JSON, OPT_NAMELEN,
	       OPT_COUNT, OPT_LMDB, OPT_MCACHED, OPT_KONLY, OPT_THREADS };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'n' },
		{ "dirs", required_argument, NULL, 'd' },
		{ "clients", required_argument, NULL, 'c' },
		{ "kdir", required_argument, NULL, OPT_KDIR },
		{ "phases", required_argument, NULL, OPT_PHASES },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "name-len", required_argument, NULL, OPT_NAMELEN },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "lmdb-dir", required_argument, NULL, OPT_LMDB },
		{ "mcached", required_argument, NULL, OPT_MCACHED },
		{ "kernel-only", no_argument, NULL, OPT_KONLY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int ch;

	O.files = 10000;
	O.dirs = 1;
	O.clients = 1;
	O.repeat = 3;
	O.count = 1000000;
	O.threads = 1;
	O.name_len = 16;
	if (parse_phases("mkdir,create,stat,readdir,unlink,rmdir") < 0)
		return -1;
	while ((ch = getopt_long(argc, argv, "s:n:d:c:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': O.socket = optarg; break;
		case OPT_KDIR: O.kdir = optarg; break;
		case OPT_LMDB: O.lmdb_dir = optarg; break;
		case OPT_MCACHED: O.mcached = optarg; break;
		case OPT_JSON: O.json = true; break;
		case OPT_KONLY: O.kernel_only = true; break;
		case 'h': usage(stdout); return 1;
		case OPT_PHASES:
			if (parse_phases(optarg) < 0)
				return -1;
			break;
		case 'n': case 'd': case 'c': case OPT_BATCH: case OPT_REPEAT:
		case OPT_NAMELEN: case OPT_COUNT: case OPT_THREADS: {
			unsigned long lo = 1, hi = 100000000;
			const char *name = ch == 'n' ? "-n" : ch == 'd' ? "-d" : ch == 'c' ? "-c" :
			                   ch == OPT_BATCH ? "--batch" : ch == OPT_REPEAT ? "--repeat" :
			                   ch == OPT_NAMELEN ? "--name-len" :
			                   ch == OPT_THREADS ? "--threads" : "--count";
			if (ch == 'c')
				hi = MAX_CLIENTS;
			else if (ch == OPT_BATCH)
				lo = 0, hi = 1000000;
			else if (ch == OPT_REPEAT)
				hi = MAX_REPEAT;
			else if (ch == OPT_NAMELEN)
				lo = 2, hi = 255;
			else if (ch == OPT_COUNT)
				hi = 1000000000;
			else if (ch == OPT_THREADS)
				hi = 64;
			if (parse_ulong(optarg, lo, hi, &v) < 0) {
				fprintf(stderr, "mcbench: %s wants an integer in %lu..%lu, not '%s'\n",
				        name, lo, hi, optarg);
				return -1;
			}
			if (ch == 'n') O.files = v;
			else if (ch == 'd') O.dirs = v;
			else if (ch == 'c') O.clients = (unsigned)v;
			else if (ch == OPT_BATCH) O.batch = v;
			else if (ch == OPT_REPEAT) O.repeat = (unsigned)v;
			else if (ch == OPT_NAMELEN) O.name_len = (unsigned)v;
			else if (ch == OPT_THREADS) O.threads = (unsigned)v;
			else O.count = v;
			break;
		}
		default:
			fprintf(stderr, "Try 'mcbench --help'.\n");
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mcbench: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (O.name_len < 1 + digits(O.files - 1) || O.name_len < 1 + digits(O.dirs - 1)) {
		fprintf(stderr, "mcbench: --name-len %u is too short to number %lu files and "
		        "%lu directories\n", O.name_len, O.files, O.dirs);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct result res[MAX_REPEAT][MAX_STEPS];
	static struct memfig mem[MAX_REPEAT];
	struct row rows[PH_COUNT];
	unsigned r, done = 0;
	int rc, status = 0;

	rc = parse_args(argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	steps_make();
	run_id = getpid();
	signal(SIGPIPE, SIG_IGN);

	if (O.mcached && need_server() && server_start() < 0) {
		server_stop();
		return 1;
	}
	if (O.kdir) {
		if (!realpath(O.kdir, kroot)) {
			fprintf(stderr, "mcbench: --kdir %s: %s\n", O.kdir, strerror(errno));
			status = 2;
			goto out;
		}
	} else {
		snprintf(kroot, sizeof(kroot), "/dev/shm/mcbench.%ld", (long)run_id);
		if (mkdir(kroot, 0700) < 0) {
			fprintf(stderr, "mcbench: mkdir %s: %s\n", kroot, strerror(errno));
			status = 1;
			goto out;
		}
		kroot_owned = true;
	}
	if (O.lmdb_dir) {
		snprintf(lmdb_parent, sizeof(lmdb_parent), "%s", O.lmdb_dir);
	} else {
		const char *s = O.socket ? O.socket : getenv("MCACHE_SOCKET");
		const char *slash = s ? strrchr(s, '/') : NULL;
		if (slash && slash != s)
			snprintf(lmdb_parent, sizeof(lmdb_parent), "%.*s", (int)(slash - s), s);
		else if (slash)
			snprintf(lmdb_parent, sizeof(lmdb_parent), "/");
		else
			snprintf(lmdb_parent, sizeof(lmdb_parent), ".");
	}
	if (need_server()) {
		mc_client *c = mc_connect(O.socket);
		if (!c) {
			fprintf(stderr, "mcbench: cannot connect to mcached at %s: %s\n",
			        O.socket ? O.socket : getenv("MCACHE_SOCKET") ?
			        getenv("MCACHE_SOCKET") : "(library default)", strerror(errno));
			status = 1;
			goto out;
		}
		mc_disconnect(c);
	}
	for (r = 0; r < O.repeat; r++) {
		if (run_repeat(r, res[r], &mem[r]) < 0)
			status = 1;
		done++;
		fprintf(stderr, "mcbench: run %u of %u done\n", r + 1, O.repeat);
	}
	rows_make(res, done, rows);
	print_table(O.json ? stderr : stdout, rows, done, mem, done);
	if (O.json)
		print_json(stdout, res, done, rows, mem);
out:
	if (kroot_owned && rmdir(kroot) < 0)
		fprintf(stderr, "mcbench: rmdir %s: %s\n", kroot, strerror(errno));
	server_stop();
	return status;
}
