/* test-crash.c - crash safety by kill -9. Each cycle, several client
 * processes mutate their own subtree (creates, unlinks, renames of files
 * and of directories, chmod, chown, truncate, utimens, mkdir, rmdir,
 * rmtree), each
 * recording in shared memory every operation acknowledged, the one in
 * flight, and how many were acknowledged before its last mc_sync that
 * returned; the server is killed with SIGKILL at a random moment and
 * started again on the same data. Then, per client (the subtrees are
 * disjoint, so each client's history is checked alone):
 *  1. the subtree equals the client's model after some prefix of its
 *     acknowledged operations (or after all of them plus the one in
 *     flight), and that prefix holds every operation acknowledged before
 *     the last mc_sync that returned: no synced operation lost;
 *  2. the subtrees of every earlier cycle are still as they were found;
 *  3. the server's consistency check (mc_server_fsck) is clean.
 * And across the clients (note 4): the prefixes found are one prefix of
 * the server's order, as far as the clients can tell it: an operation
 * acknowledged before another client sent one that survived survived too
 * (each operation's send and reply times are recorded, CLOCK_MONOTONIC,
 * which all processes share).
 * MCACHE_CRASH_CYCLES sets the number of cycles (default 20; more for a
 * long run), MCACHE_CRASH_START=N makes the random choices (operations,
 * crash delays) of a run that printed N. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"

#define NCLIENTS 3
#define MAXOPS 20000          /* per client and cycle */
#define MAXENT 64             /* entries of one client's subtree at most */
#define SYNC_EVERY 16         /* a client calls mc_sync after this many ops (on average) */
#define PATHLEN 24
#define CANON_MAX 8192

enum op_code { OP_CREATE = 1, OP_UNLINK, OP_RENAME, OP_CHMOD, OP_TRUNC, OP_MKDIR, OP_RMDIR,
               OP_RMTREE, OP_RENAME_DIR, OP_CHOWN, OP_ATIME };

struct op {
	uint8_t code;
	uint32_t arg;             /* mode, size, uid (gid: arg + 1) or atime in seconds */
	char path[PATHLEN];       /* relative to the client's subtree */
	char path2[PATHLEN];
};

/* What one client tells the parent: in shared memory, written by the
 * client only, read by the parent after the client exited. */
struct client_log {
	uint32_t nacked;          /* ops[0..nacked) were acknowledged */
	uint32_t synced;          /* of those, acknowledged before the last mc_sync that returned */
	uint32_t syncs;
	int inflight;             /* ops[nacked] was sent and not answered */
	char error[160];          /* an unexpected result, or "" */
	struct op ops[MAXOPS];
	uint64_t sent_ns[MAXOPS]; /* when ops[i] was sent (i <= nacked) */
	uint64_t acked_ns[MAXOPS]; /* when its reply came (i < nacked) */
};

struct shared {
	_Atomic int stop;
	_Atomic int ready;        /* clients connected */
	struct client_log log[NCLIENTS];
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static struct mc_server srv;
static struct shared *sh;
static unsigned long start;  /* where the random choices started */

/* ---- the model of one subtree ------------------------------------------ */

struct ent {
	char path[PATHLEN];
	bool dir;
	uint32_t mode;
	uint64_t size;
	uint32_t uid, gid;
	int64_t atime;            /* seconds; -1 in a model: set at the create, not known */
};

struct model {
	struct ent e[MAXENT];
	int n;
};

static int model_find(const struct model *m, const char *path)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->e[i].path, path) == 0)
			return i;
	return -1;
}

static void model_del(struct model *m, int i)
{
	m->e[i] = m->e[--m->n];
}

/* Is path below directory dir ("dir/...")? */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

static void model_apply(struct model *m, const struct op *o)
{
	int i = model_find(m, o->path);
	switch (o->code) {
	case OP_CREATE:
	case OP_MKDIR:
		assert_true(m->n < MAXENT);
		m->e[m->n] = (struct ent){ .dir = o->code == OP_MKDIR, .mode = o->arg,
		                           .uid = geteuid(), .gid = getegid(), .atime = -1 };
		snprintf(m->e[m->n].path, PATHLEN, "%s", o->path);
		m->n++;
		break;
	case OP_UNLINK:
	case OP_RMDIR:
		model_del(m, i);
		break;
	case OP_RMTREE:
		for (int j = m->n - 1; j >= 0; j--)
			if (below(m->e[j].path, o->path))
				model_del(m, j);
		model_del(m, model_find(m, o->path));
		break;
	case OP_RENAME: {
		int d = model_find(m, o->path2);
		if (d >= 0) {
			model_del(m, d);
			i = model_find(m, o->path);
		}
		snprintf(m->e[i].path, PATHLEN, "%s", o->path2);
		break;
	}
	case OP_RENAME_DIR: {
		size_t n = strlen(o->path);
		for (int j = 0; j < m->n; j++) {
			if (strcmp(m->e[j].path, o->path) == 0 || below(m->e[j].path, o->path)) {
				char t[PATHLEN];
				snprintf(t, sizeof(t), "%s%s", o->path2, m->e[j].path + n);
				memcpy(m->e[j].path, t, PATHLEN);
			}
		}
		break;
	}
	case OP_CHMOD:
		m->e[i].mode = o->arg;
		break;
	case OP_TRUNC:
		m->e[i].size = o->arg;
		break;
	case OP_CHOWN:
		m->e[i].uid = o->arg;
		m->e[i].gid = o->arg + 1;
		break;
	case OP_ATIME:
		m->e[i].atime = o->arg;
		break;
	}
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->path, ((const struct ent *)b)->path);
}

/* One line per entry, sorted by path: path, type, mode, size (files) or
 * nlink (directories: 2 + subdirectories), owner, group, atime ('*' when
 * a model does not know it: canon_match takes any). */
static void canon(const struct ent *in, int n, char *out, size_t size)
{
	struct ent e[MAXENT];
	memcpy(e, in, sizeof(*e) * (size_t)n);
	qsort(e, (size_t)n, sizeof(*e), ent_cmp);
	size_t len = 0;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		unsigned long long v = e[i].size;
		if (e[i].dir) {
			v = 2;
			for (int j = 0; j < n; j++)
				if (e[j].dir && below(e[j].path, e[i].path) &&
				    !strchr(e[j].path + strlen(e[i].path) + 1, '/'))
					v++;
		}
		len += (size_t)snprintf(out + len, size - len, "%s %c %o %llu %u %u ", e[i].path,
		                        e[i].dir ? 'd' : 'f', e[i].mode, v, e[i].uid, e[i].gid);
		assert_true(len < size);
		if (e[i].atime < 0)
			len += (size_t)snprintf(out + len, size - len, "*\n");
		else
			len += (size_t)snprintf(out + len, size - len, "%lld\n", (long long)e[i].atime);
		assert_true(len < size);
	}
}

/* Does the subtree's text got equal a model's text want, a '*' of want
 * standing for any one field? */
static bool canon_match(const char *got, const char *want)
{
	while (*want) {
		if (*want == '*') {
			want++;
			while (*got && *got != ' ' && *got != '\n')
				got++;
		} else if (*got++ != *want++) {
			return false;
		}
	}
	return *got == '\0';
}

/* ---- one client ---------------------------------------------------------- */

static unsigned rnd(unsigned *st)
{
	*st = *st * 1103515245u + 12345u;
	return (*st >> 8) & 0xffffff;
}

/* A random applicable op for model m; false when none was found. */
static bool op_pick(const struct model *m, unsigned *rs, struct op *o)
{
	for (int tries = 0; tries < 32; tries++) {
		memset(o, 0, sizeof(*o));
		unsigned r = rnd(rs) % 100;
		int pick = m->n ? (int)(rnd(rs) % (unsigned)m->n) : -1;
		const struct ent *e = pick >= 0 ? &m->e[pick] : NULL;
		/* A file name: at the top, or in an existing top-level directory. */
		char fname[PATHLEN];
		if (e && e->dir && !strchr(e->path, '/') && rnd(rs) % 2)
			snprintf(fname, sizeof(fname), "%s/g%u", e->path, rnd(rs) % 4);
		else
			snprintf(fname, sizeof(fname), "f%u", rnd(rs) % 6);
		char dname[PATHLEN];
		snprintf(dname, sizeof(dname), "d%u", rnd(rs) % 3);
		if (r < 24) {
			if (model_find(m, fname) >= 0 || m->n >= MAXENT - 1)
				continue;
			o->code = OP_CREATE;
			o->arg = 0600 | (rnd(rs) & 0177);
			snprintf(o->path, PATHLEN, "%s", fname);
		} else if (r < 38) {
			if (!e || e->dir)
				continue;
			o->code = OP_UNLINK;
			snprintf(o->path, PATHLEN, "%s", e->path);
		} else if (r < 52) {
			int d = model_find(m, fname);
			if (!e || e->dir || strcmp(e->path, fname) == 0 || (d >= 0 && m->e[d].dir))
				continue;
			o->code = OP_RENAME;
			snprintf(o->path, PATHLEN, "%s", e->path);
			snprintf(o->path2, PATHLEN, "%s", fname);
		} else if (r < 62) {
			if (!e)
				continue;
			/* Only root may give a file away. */
			if (r < 57 || geteuid() != 0) {
				o->code = OP_CHMOD;
				o->arg = (e->dir ? 0700 : 0600) | (rnd(rs) & 0077);
			} else {
				o->code = OP_CHOWN;
				o->arg = 1000 + rnd(rs) % 4;
			}
			snprintf(o->path, PATHLEN, "%s", e->path);
		} else if (r < 68) {
			if (!e || e->dir)
				continue;
			o->code = OP_TRUNC;
			o->arg = rnd(rs) % 100000;
			snprintf(o->path, PATHLEN, "%s", e->path);
		} else if (r < 72) {
			if (!e)
				continue;
			o->code = OP_ATIME;
			o->arg = 1000000 + rnd(rs) % 1000;
			snprintf(o->path, PATHLEN, "%s", e->path);
		} else if (r < 82) {
			if (model_find(m, dname) >= 0)
				continue;
			o->code = OP_MKDIR;
			o->arg = 0755;
			snprintf(o->path, PATHLEN, "%s", dname);
		} else if (r < 94) {
			int d = model_find(m, dname);
			if (d < 0)
				continue;
			bool empty = true;
			for (int j = 0; j < m->n; j++)
				if (below(m->e[j].path, dname))
					empty = false;
			o->code = empty ? OP_RMDIR : OP_RMTREE;
			snprintf(o->path, PATHLEN, "%s", dname);
		} else {
			/* A top-level directory renamed to dname, absent or empty
			 * (POSIX lets a rename replace an empty directory). */
			if (!e || !e->dir || strchr(e->path, '/') || strcmp(e->path, dname) == 0)
				continue;
			bool busy = false;
			for (int j = 0; j < m->n; j++)
				if (below(m->e[j].path, dname))
					busy = true;
			if (busy)
				continue;
			o->code = OP_RENAME_DIR;
			snprintf(o->path, PATHLEN, "%s", e->path);
			snprintf(o->path2, PATHLEN, "%s", dname);
		}
		return true;
	}
	return false;
}

/* Run o in subtree base; 0, or the errno. */
static int op_run(mc_client *c, const char *base, const struct op *o)
{
	char p[128], p2[128];
	snprintf(p, sizeof(p), "%s/%s", base, o->path);
	snprintf(p2, sizeof(p2), "%s/%s", base, o->path2);
	int rc = 0;
	switch (o->code) {
	case OP_CREATE:
		rc = mc_open(c, p, O_CREAT | O_EXCL | O_WRONLY, o->arg);
		if (rc >= 0) {
			mc_close(c, rc);   /* sent with the next request, if any */
			rc = 0;
		}
		break;
	case OP_UNLINK: rc = mc_unlink(c, p); break;
	case OP_RENAME:
	case OP_RENAME_DIR: rc = mc_rename(c, p, p2); break;
	case OP_CHMOD: rc = mc_chmod(c, p, o->arg); break;
	case OP_TRUNC: rc = mc_truncate(c, p, o->arg); break;
	case OP_CHOWN: rc = mc_chown(c, p, o->arg, o->arg + 1); break;
	case OP_ATIME: {
		const struct timespec t[2] = { { o->arg, 0 }, { 0, UTIME_OMIT } };
		rc = mc_utimens(c, p, t);
		break;
	}
	case OP_MKDIR: rc = mc_mkdir(c, p, o->arg); break;
	case OP_RMDIR: rc = mc_rmdir(c, p); break;
	case OP_RMTREE: rc = mc_rmtree(c, p); break;
	}
	return rc < 0 ? errno : 0;
}

/* model_apply, after dropping the empty directory a directory rename
 * replaces. */
static void apply(struct model *m, const struct op *o)
{
	int d = o->code == OP_RENAME_DIR ? model_find(m, o->path2) : -1;
	if (d >= 0)
		model_del(m, d);
	model_apply(m, o);
}

static void client_main(int id, const char *base, unsigned rs)
{
	struct client_log *lg = &sh->log[id];
	struct model m = { .n = 0 };
	mc_client *c = mc_connect(srv.socket);
	if (!c) {
		snprintf(lg->error, sizeof(lg->error), "mc_connect: %s", strerror(errno));
		_exit(1);
	}
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->stop) && lg->nacked < MAXOPS) {
		struct op *o = &lg->ops[lg->nacked];
		if (!op_pick(&m, &rs, o))
			continue;
		lg->sent_ns[lg->nacked] = now_ns();
		lg->inflight = 1;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		int err = op_run(c, base, o);
		uint64_t acked = now_ns();
		if (err == ENOTCONN)
			break;
		if (err) {
			snprintf(lg->error, sizeof(lg->error), "op %d on %s %s: %s", o->code, o->path,
			         o->path2, strerror(err));
			break;
		}
		apply(&m, o);
		lg->acked_ns[lg->nacked] = acked;
		lg->nacked++;
		lg->inflight = 0;
		if (rnd(&rs) % SYNC_EVERY == 0) {
			uint32_t before = lg->nacked;
			if (mc_sync(c) == 0) {
				lg->synced = before;
				lg->syncs++;
			} else if (errno == ENOTCONN) {
				break;
			} else {
				snprintf(lg->error, sizeof(lg->error), "mc_sync: %s", strerror(errno));
				break;
			}
		}
	}
	mc_disconnect(c);
	_exit(0);
}

/* ---- the parent ------------------------------------------------------------ */

/* The entries below base (relative paths), read through the server. */
static int tree_read(mc_client *c, const char *base, const char *rel, struct ent *e, int *n)
{
	char path[160];
	snprintf(path, sizeof(path), "%s%s%s", base, *rel ? "/" : "", rel);
	MC_DIR *d = mc_opendir(c, path);
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = mc_readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		assert_true(*n < MAXENT);
		struct ent *x = &e[(*n)++];
		char p[160];
		assert_true(snprintf(x->path, PATHLEN, "%s%s%s", rel, *rel ? "/" : "", de->d_name) <
		            PATHLEN);
		snprintf(p, sizeof(p), "%s/%s", base, x->path);
		struct stat st;
		assert_int_equal(mc_lstat(c, p, &st), 0);
		x->dir = S_ISDIR(st.st_mode);
		x->mode = st.st_mode & 07777;
		x->size = x->dir ? 0 : (uint64_t)st.st_size;
		x->uid = st.st_uid;
		x->gid = st.st_gid;
		x->atime = st.st_atim.tv_sec;
		if (x->dir) {
			char sub[PATHLEN];
			memcpy(sub, x->path, PATHLEN);
			if (tree_read(c, base, sub, e, n) < 0) {
				mc_closedir(d);
				return -1;
			}
		}
	}
	mc_closedir(d);
	return 0;
}

/* The subtree as canon() writes it, the server's nlink of directories
 * included (the model derives it). */
static void tree_canon(mc_client *c, const char *base, char *out, size_t size)
{
	struct ent e[MAXENT];
	int n = 0;
	assert_int_equal(tree_read(c, base, "", e, &n), 0);
	canon(e, n, out, size);
	/* canon() derived nlink from the entries: compare with the server's. */
	for (int i = 0; i < n; i++) {
		if (!e[i].dir)
			continue;
		char p[160];
		struct stat st;
		assert_true(snprintf(p, sizeof(p), "%s/%s", base, e[i].path) < (int)sizeof(p));
		assert_int_equal(mc_lstat(c, p, &st), 0);
		unsigned long long want = 2;
		for (int j = 0; j < n; j++)
			if (e[j].dir && below(e[j].path, e[i].path) &&
			    !strchr(e[j].path + strlen(e[i].path) + 1, '/'))
				want++;
		if (st.st_nlink != want)
			fail_msg("%s: nlink %llu, %llu subdirectories + 2", p,
			         (unsigned long long)st.st_nlink, want);
	}
}

struct totals {
	uint64_t cycles, acked, synced, syncs, inflight, lost, fsck_problems, ordered;
	uint64_t at_sync, past_sync;   /* prefixes found: exactly at the last sync, or beyond */
};

static struct totals tot;

/* The prefixes of one client's operations whose model equals its subtree
 * and hold every synced operation (more than one when operations between
 * them leave the subtree as it was: a chmod to the mode it had). */
struct prefixes {
	uint32_t n;
	uint32_t k[MAXOPS + 2];
};

static struct prefixes found[NCLIENTS];

/* Check one client's subtree against its log (note 1); the prefixes it
 * can be go to found[id] (for note 4), the canonical text found to keep
 * (for note 2). */
static void check_client(mc_client *c, int cycle, int id, char *keep)
{
	char base[64], got[CANON_MAX], want[CANON_MAX];
	const struct client_log *lg = &sh->log[id];
	snprintf(base, sizeof(base), "/y%d/c%d", cycle, id);
	if (lg->error[0])
		fail_msg("cycle %d client %d: %s", cycle, id, lg->error);
	tree_canon(c, base, got, sizeof(got));
	struct model m = { .n = 0 };
	struct prefixes *f = &found[id];
	long match = -1, lower = -1;
	f->n = 0;
	for (uint32_t k = 0; k <= lg->nacked; k++) {
		if (k > 0)
			apply(&m, &lg->ops[k - 1]);
		canon(m.e, m.n, want, sizeof(want));
		if (canon_match(got, want)) {
			if (k >= lg->synced)
				match = f->k[f->n++] = k;
			else
				lower = k;
		}
	}
	if (lg->inflight) {
		apply(&m, &lg->ops[lg->nacked]);
		canon(m.e, m.n, want, sizeof(want));
		if (canon_match(got, want) && lg->nacked + 1 >= lg->synced)
			match = f->k[f->n++] = lg->nacked + 1;
	}
	if (match < 0) {
		if (lower >= 0) {
			tot.lost += lg->synced - (uint64_t)lower;
			fail_msg("cycle %d client %d: synced ops lost: the state is that after %ld "
			         "ops, %u were synced (start %lu)", cycle, id, lower, lg->synced, start);
		}
		fail_msg("cycle %d client %d: the state is no prefix of the %u acknowledged ops "
		         "(start %lu):\n%s", cycle, id, lg->nacked, start, got);
	}
	tot.acked += lg->nacked;
	tot.synced += lg->synced;
	tot.syncs += lg->syncs;
	tot.inflight += lg->inflight;
	if ((uint32_t)match == lg->synced)
		tot.at_sync++;
	else
		tot.past_sync++;
	strcpy(keep, got);
}

/* Note 4: one choice of a prefix k_c for each client such that no
 * operation left out was acknowledged before an operation kept was sent.
 * With T the latest send of a kept operation, that is: each client's
 * first operation left out (ops[k_c], when acknowledged) was acknowledged
 * at T or later. Tried for each T a kept operation can give: a client
 * fits it with a prefix whose last operation was sent at T or before and
 * whose first left out was acknowledged at T or after; then the choice's
 * own latest send is T or before, and it holds. */
static bool all_fit(uint64_t T);

static bool one_order(void)
{
	if (all_fit(0)) /* nothing kept */
		return true;
	for (int d = 0; d < NCLIENTS; d++)
		for (uint32_t t = 0; t < found[d].n; t++) {
			uint32_t k = found[d].k[t];
			if (k > 0 && all_fit(sh->log[d].sent_ns[k - 1]))
				return true;
		}
	return false;
}

/* Does every client fit T (one_order) with one of its prefixes? */
static bool all_fit(uint64_t T)
{
	for (int c = 0; c < NCLIENTS; c++) {
		const struct client_log *lg = &sh->log[c];
		bool fits = false;
		for (uint32_t i = 0; i < found[c].n && !fits; i++) {
			uint32_t k = found[c].k[i];
			fits = (k == 0 || lg->sent_ns[k - 1] <= T) &&
			       (k >= lg->nacked || lg->acked_ns[k] >= T);
		}
		if (!fits)
			return false;
	}
	return true;
}

static void fsck_clean(mc_client *c, int cycle)
{
	char *js = mc_server_fsck(c);
	if (!js)
		fail_msg("mc_server_fsck: %s", strerror(errno));
	json_t *doc = json_loads(js, 0, NULL);
	assert_non_null(doc);
	size_t n = json_array_size(json_object_get(doc, "problems"));
	tot.fsck_problems += n;
	if (!json_is_true(json_object_get(doc, "clean")))
		fail_msg("cycle %d: fsck found %zu problems (start %lu):\n%s", cycle, n, start, js);
	json_decref(doc);
	free(js);
}

static int group_setup(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	return server_start(&srv, NULL);
}

static int group_teardown(void **state)
{
	(void)state;
	munmap(sh, sizeof(*sh));
	return server_finish(&srv);
}

static void t_crash_cycles(void **state)
{
	(void)state;
	const char *e = getenv("MCACHE_CRASH_CYCLES");
	int cycles = e && *e ? atoi(e) : 20;
	e = getenv("MCACHE_CRASH_START");
	start = e && *e ? strtoul(e, NULL, 10) : (unsigned long)time(NULL) ^ (unsigned long)getpid();
	printf("# start %lu (MCACHE_CRASH_START=%lu replays it), %d cycles\n", start, start,
	       cycles);
	unsigned rs = (unsigned)start;
	char (*kept)[NCLIENTS][CANON_MAX] = calloc((size_t)cycles, sizeof(*kept));
	assert_non_null(kept);

	for (int cy = 0; cy < cycles; cy++) {
		mc_client *c = harness_client(&srv);
		char p[64];
		snprintf(p, sizeof(p), "/y%d", cy);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
		for (int i = 0; i < NCLIENTS; i++) {
			snprintf(p, sizeof(p), "/y%d/c%d", cy, i);
			assert_int_equal(mc_mkdir(c, p, 0755), 0);
		}
		assert_int_equal(mc_sync(c), 0);
		mc_disconnect(c);

		memset(sh, 0, sizeof(*sh));
		pid_t pids[NCLIENTS];
		for (int i = 0; i < NCLIENTS; i++) {
			unsigned cs = rnd(&rs);
			pids[i] = fork();
			assert_true(pids[i] >= 0);
			if (pids[i] == 0) {
				snprintf(p, sizeof(p), "/y%d/c%d", cy, i);
				client_main(i, p, cs);
			}
		}
		/* The crash: at a random moment 20-270 ms after every client
		 * connected. */
		for (int w = 0; atomic_load(&sh->ready) < NCLIENTS; w++) {
			struct timespec ms = { 0, 1000000L };
			assert_true(w < 10000);
			for (int i = 0; i < NCLIENTS; i++)
				if (sh->log[i].error[0])
					fail_msg("client %d: %s", i, sh->log[i].error);
			nanosleep(&ms, NULL);
		}
		struct timespec ts = { 0, (long)(20 + rnd(&rs) % 250) * 1000000L };
		nanosleep(&ts, NULL);
		assert_int_equal(server_stop(&srv, SIGKILL), 128 + SIGKILL);
		atomic_store(&sh->stop, 1);
		for (int i = 0; i < NCLIENTS; i++) {
			int st;
			assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
			assert_true(WIFEXITED(st));
		}

		assert_int_equal(server_start(&srv, NULL), 0);
		c = harness_client(&srv);
		for (int i = 0; i < NCLIENTS; i++)
			check_client(c, cy, i, kept[cy][i]);
		if (!one_order())
			fail_msg("cycle %d: the clients' states are no prefix of one order: an "
			         "operation left out was acknowledged before one kept was sent "
			         "(start %lu)", cy, start);
		tot.ordered++;
		/* Earlier cycles' subtrees are as they were found (note 2). */
		for (int old = 0; old < cy; old++) {
			for (int i = 0; i < NCLIENTS; i++) {
				char got[CANON_MAX];
				snprintf(p, sizeof(p), "/y%d/c%d", old, i);
				tree_canon(c, p, got, sizeof(got));
				if (strcmp(got, kept[old][i]) != 0)
					fail_msg("cycle %d: %s changed since cycle %d (start %lu)", cy, p, old,
					         start);
			}
		}
		fsck_clean(c, cy);
		mc_disconnect(c);
		tot.cycles++;
	}
	free(kept);
	printf("# %llu cycles, %llu clients each: %llu ops acknowledged (%.0f per cycle), "
	       "%llu mc_sync returned covering %llu ops, %llu in flight at the crash\n",
	       (unsigned long long)tot.cycles, (unsigned long long)NCLIENTS,
	       (unsigned long long)tot.acked, (double)tot.acked / (double)tot.cycles,
	       (unsigned long long)tot.syncs, (unsigned long long)tot.synced,
	       (unsigned long long)tot.inflight);
	printf("# recovered state: at the last sync in %llu client-cycles, past it in %llu; "
	       "synced ops lost: %llu; fsck problems: %llu; one order across the clients in "
	       "%llu of %llu cycles\n", (unsigned long long)tot.at_sync,
	       (unsigned long long)tot.past_sync, (unsigned long long)tot.lost,
	       (unsigned long long)tot.fsck_problems, (unsigned long long)tot.ordered,
	       (unsigned long long)tot.cycles);
	assert_int_equal(tot.lost, 0);
	assert_int_equal(tot.fsck_problems, 0);
}

/* After a clean stop, the data directory read offline is clean too. */
static void t_offline_fsck(void **state)
{
	(void)state;
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	char cmd[1200];
	const char *ctl = getenv("MCACHECTL");
	assert_non_null(ctl);
	snprintf(cmd, sizeof(cmd), "'%s' fsck --offline '%s' >/dev/null", ctl, srv.data);
	int st = system(cmd);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(server_start(&srv, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_crash_cycles),
		cmocka_unit_test(t_offline_fsck),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
