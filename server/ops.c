/* ops.c - runs protobuf Ops for a client session (session.c): argument
 * checks, the namespace call, and the Result, through one op table. The
 * ops that look at the server itself (stats, fsck, log, clients, slowlog)
 * are ops_admin.c's.
 */
#include "ops.h"
#include "ops_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commit.h"
#include "cred.h"
#include "extent_map.h"
#include "extent_ns.h"
#include "grow.h"
#include "mc_shm.h"
#include "mcd.h"
#include "map.h"
#include "mknod.h"
#include "ns.h"


#define READDIR_DEFAULT 512u
#define READDIR_MAX 8192u

/* A path argument: absolute or not is the namespace's business; here only
 * what a C string could not carry and what is too long. */
/* The longest path an op may ask for with its path_max (mcache.h's
 * MC_LONG_PATH_MAX): a file server's caller may stand deeper than PATH_MAX
 * bytes from the root, and the walk from the root keeps every check. */
#define OPS_LONG_PATH_MAX 65536u

/* The path limit of op (NUL included): MC_PATH_MAX unless it asks for more. */
static size_t path_limit(const Mcache__Op *op)
{
	if (op->path_max <= MC_PATH_MAX)
		return MC_PATH_MAX;
	return op->path_max < OPS_LONG_PATH_MAX ? op->path_max : OPS_LONG_PATH_MAX;
}

static int check_path(const ProtobufCBinaryData *p, size_t limit)
{
	if (p->len == 0)
		return -ENOENT;
	if (p->len >= limit)
		return -ENAMETOOLONG;
	if (memchr(p->data, 0, p->len))
		return -EINVAL;
	return 0;
}

static void fill_attr(struct op_out *out, const ns_attr *a)
{
	Mcache__Attr *t = &out->attr;
	mcache__attr__init(t);
	t->ino = a->ino;
	t->mode = a->mode;
	t->nlink = a->nlink;
	t->uid = a->uid;
	t->gid = a->gid;
	t->size = S_ISDIR(a->mode) ? 40 + 20 * a->size : a->size;
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode)) {
		t->rdev = a->size;   /* a device keeps its number where a file keeps its size */
		t->size = 0;
	}
	const int64_t *ns[3] = { &a->atime_ns, &a->mtime_ns, &a->ctime_ns };
	int64_t sec[3];
	uint32_t nsec[3];
	for (int k = 0; k < 3; k++) {
		int64_t v = *ns[k];
		sec[k] = v / 1000000000;
		int64_t r = v % 1000000000;
		if (r < 0) {
			r += 1000000000;
			sec[k]--;
		}
		nsec[k] = (uint32_t)r;
	}
	t->atime_sec = sec[0];
	t->atime_nsec = nsec[0];
	t->mtime_sec = sec[1];
	t->mtime_nsec = nsec[1];
	t->ctime_sec = sec[2];
	t->ctime_nsec = nsec[2];
	out->res.attr = t;
}

struct dirbuf {
	struct op_out *out;
	size_t n, cap;
	size_t nlen, ncap;
	size_t *name_off;
};

static int dirbuf_add(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	struct dirbuf *b = arg;
	struct op_out *o = b->out;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		Mcache__Dirent *e = realloc(o->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		o->ents = e;
		size_t *no = realloc(b->name_off, cap * sizeof(*no));
		if (!no)
			return -ENOMEM;
		b->name_off = no;
		b->cap = cap;
	}
	char *n = grow(o->names, &b->ncap, b->nlen + len, 4096);
	if (!n)
		return -ENOMEM;
	o->names = n;
	memcpy(o->names + b->nlen, name, len);
	Mcache__Dirent *e = &o->ents[b->n];
	mcache__dirent__init(e);
	e->ino = ino;
	e->type = dtype;
	e->name.len = len;
	b->name_off[b->n] = b->nlen;
	b->nlen += len;
	b->n++;
	return 0;
}

/* ---- handlers ----------------------------------------------------------
 *
 * Every handler has the same shape: the dispatch (ops_exec) has already
 * checked what the op's flags ask for (valid paths, an open handle, a
 * regular file), and h is that handle (NULL when OPF_HANDLE is not set).
 * A handler returns 0 or -errno and fills out->res.
 */

/* The path arguments as the namespace takes them. */
#define P(op)  (const char *)(op)->path.data, (op)->path.len
#define P2(op) (const char *)(op)->path2.data, (op)->path2.len

static int op_stat(struct session *s, const Mcache__Op *op, struct handle *h,
                   struct op_out *out)
{
	ns_attr a;
	(void)h;
	int rc = ns_stat(s->m->ns, &s->cred, P(op), op->code != MCACHE__OP_CODE__OP_LSTAT, &a);
	if (rc == 0)
		fill_attr(out, &a);
	return rc;
}

static int op_fstat(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	ns_attr a;
	(void)op;
	int rc = ns_stat_ino(s->m->ns, h->ino, &a);
	if (rc == 0)
		fill_attr(out, &a);
	return rc;
}

static int op_mkdir(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_mkdir(s->m->ns, &s->cred, P(op), op->mode, NULL);
}

static int op_rmdir(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_rmdir(s->m->ns, &s->cred, P(op));
}

static int op_create(struct session *s, const Mcache__Op *op, struct handle *h,
                     struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_open(s->m->ns, &s->cred, P(op), O_CREAT | O_EXCL | O_WRONLY, op->mode, false,
	               NULL);
}

static int op_open(struct session *s, const Mcache__Op *op, struct handle *h,
                   struct op_out *out)
{
	int flags = (int)op->flags;
	size_t i;
	(void)h;
	int rc = handle_slot(s, &i);
	if (rc < 0)
		return rc;
	ns_attr a;
	rc = ns_open(s->m->ns, &s->cred, P(op), flags, op->mode, true, &a);
	if (rc < 0)
		return rc;
	s->h[i] = (struct handle){ a.ino, (flags & O_ACCMODE) != O_RDONLY, S_ISDIR(a.mode) };
	out->res.handle = i + 1;
	fill_attr(out, &a);
	return 0;
}

static int op_close(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	uint64_t ino = h->ino;
	(void)op;
	(void)out;
	h->ino = 0;
	session_unlock_closed(s, ino);
	ns_release(s->m->ns, ino);
	return 0;
}

static int op_unlink(struct session *s, const Mcache__Op *op, struct handle *h,
                     struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_unlink(s->m->ns, &s->cred, P(op));
}

static int op_rename(struct session *s, const Mcache__Op *op, struct handle *h,
                     struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_rename(s->m->ns, &s->cred, P(op), P2(op));
}

static int op_link(struct session *s, const Mcache__Op *op, struct handle *h,
                   struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_link(s->m->ns, &s->cred, P(op), P2(op));
}

/* The link at path, its target in path2. */
static int op_symlink(struct session *s, const Mcache__Op *op, struct handle *h,
                      struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_symlink(s->m->ns, &s->cred, P2(op), P(op));
}

static int op_readlink(struct session *s, const Mcache__Op *op, struct handle *h,
                       struct op_out *out)
{
	/* The target lands on the stack; the reply holds only its bytes. */
	char target[MC_SYMLINK_MAX];
	size_t n;
	(void)h;
	int rc = ns_readlink(s->m->ns, &s->cred, P(op), target, &n);
	if (rc < 0)
		return rc;
	out->data = malloc(n ? n : 1);
	if (!out->data)
		return -ENOMEM;
	memcpy(out->data, target, n);
	out->res.data.data = out->data;
	out->res.data.len = n;
	return 0;
}

static int op_chmod(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_chmod(s->m->ns, &s->cred, P(op), op->mode);
}

static int op_chown(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	(void)out;
	if (op->flags & AT_SYMLINK_NOFOLLOW)
		return ns_lchown(s->m->ns, &s->cred, P(op), op->uid, op->gid);
	return ns_chown(s->m->ns, &s->cred, P(op), op->uid, op->gid);
}

static int op_utimens(struct session *s, const Mcache__Op *op, struct handle *h,
                      struct op_out *out)
{
	struct timespec t[2] = { { (time_t)op->atime_sec, (long)op->atime_nsec },
	                         { (time_t)op->mtime_sec, (long)op->mtime_nsec } };
	(void)h;
	(void)out;
	return ns_utimens_at(s->m->ns, &s->cred, P(op), t, !(op->flags & AT_SYMLINK_NOFOLLOW));
}

static int op_truncate(struct session *s, const Mcache__Op *op, struct handle *h,
                       struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_truncate(s->m->ns, &s->cred, P(op), (int64_t)op->size);
}

static int op_ftruncate(struct session *s, const Mcache__Op *op, struct handle *h,
                        struct op_out *out)
{
	(void)out;
	return ns_truncate_ino(s->m->ns, h->ino, h->writable, (int64_t)op->size);
}

static int op_readdir(struct session *s, const Mcache__Op *op, struct handle *h,
                      struct op_out *out)
{
	if (!h->dir)
		return -ENOTDIR;
	unsigned max = op->count ? op->count : READDIR_DEFAULT;
	if (max > READDIR_MAX)
		max = READDIR_MAX;
	struct dirbuf b = { .out = out };
	uint64_t next;
	bool eof;
	int rc = ns_readdir(s->m->ns, &s->cred, h->ino, op->cookie, max, dirbuf_add, &b, &next,
	                    &eof);
	if (rc == 0 && b.n) {
		out->entp = malloc(b.n * sizeof(*out->entp));
		if (!out->entp)
			rc = -ENOMEM;
	}
	if (rc == 0) {
		for (size_t i = 0; i < b.n; i++) {
			out->ents[i].name.data = (uint8_t *)out->names + b.name_off[i];
			out->entp[i] = &out->ents[i];
		}
		out->res.n_entries = b.n;
		out->res.entries = out->entp;
		out->res.cookie = next;
		out->res.eof = eof;
	}
	free(b.name_off);
	return rc;
}

/* mc_sync, and mc_fsync on any open handle: wait for what is pending. */
static int op_sync(struct session *s, const Mcache__Op *op, struct handle *h,
                   struct op_out *out)
{
	(void)op;
	(void)h;
	out->wait_seq = ns_pending_seq(s->m->ns);
	return 0;
}

static int op_rmtree(struct session *s, const Mcache__Op *op, struct handle *h,
                     struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_rmtree(s->m->ns, &s->cred, P(op), 1024);
}

static int op_mknod(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_mknod(s->m->ns, &s->cred, P(op), op->mode, op->rdev);
}

/* The extent-state ops, on a handle of a regular file. */
static int op_range_set(struct session *s, const Mcache__Op *op, struct handle *h,
                        struct op_out *out)
{
	int rc;
	(void)out;
	if (op->bits & MC_ES_LOCKED) {
		/* Room to remember the inode first: failing after the lock was
		 * taken would leave it held past the session. */
		rc = map_reserve(&s->locked);
		if (rc < 0)
			return rc;
	}
	bool first = !map_find(&s->locked, h->ino);
	rc = ns_range_set(s->m->ns, h->ino, op->start, op->end, op->bits, s->owner, first);
	if (rc == 0 && (op->bits & MC_ES_LOCKED))
		map_put(&s->locked, h->ino, 1);
	return rc;
}

static int op_range_clear(struct session *s, const Mcache__Op *op, struct handle *h,
                          struct op_out *out)
{
	(void)out;
	return ns_range_clear(s->m->ns, h->ino, op->start, op->end, op->bits, s->owner);
}

static int op_range_test(struct session *s, const Mcache__Op *op, struct handle *h,
                         struct op_out *out)
{
	int rc = ns_range_test(s->m->ns, h->ino, op->start, op->end, op->bits, op->all);
	if (rc < 0)
		return rc;
	out->res.test = (uint32_t)rc;
	return 0;
}

static int op_range_find(struct session *s, const Mcache__Op *op, struct handle *h,
                         struct op_out *out)
{
	uint64_t st, en;
	int rc = ns_range_find(s->m->ns, h->ino, op->start, op->bits, &st, &en);
	if (rc == 0) {
		out->res.start = st;
		out->res.end = en;
	}
	return rc;
}

static int op_evict(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	(void)out;
	return ns_evict(s->m->ns, &s->cred, P(op));
}

static int op_extent_set(struct session *s, const Mcache__Op *op, struct handle *h,
                         struct op_out *out)
{
	(void)out;
	return ns_extent_set(s->m->ns, h->ino, h->writable, op->start, op->len, op->phys,
	                     op->flags);
}

static int op_extent_punch(struct session *s, const Mcache__Op *op, struct handle *h,
                           struct op_out *out)
{
	(void)out;
	return ns_extent_punch(s->m->ns, h->ino, h->writable, op->start, op->len);
}

#define EXTENT_MAP_DEFAULT 512u
#define EXTENT_MAP_MAX 8192u

static int op_extent_map(struct session *s, const Mcache__Op *op, struct handle *h,
                         struct op_out *out)
{
	size_t max = op->count ? op->count : EXTENT_MAP_DEFAULT, n;
	if (max > EXTENT_MAP_MAX)
		max = EXTENT_MAP_MAX;
	struct emap_ext *e = malloc(max * sizeof(*e));
	if (!e)
		return -ENOMEM;
	int rc = ns_extent_map(s->m->ns, h->ino, op->start, op->len, e, max, &n);
	if (rc == 0 && n > max)
		n = max;
	if (rc == 0 && n) {
		out->exts = malloc(n * sizeof(*out->exts));
		out->extp = malloc(n * sizeof(*out->extp));
		if (!out->exts || !out->extp)
			rc = -ENOMEM;
	}
	if (rc == 0) {
		for (size_t i = 0; i < n; i++) {
			mcache__extent__init(&out->exts[i]);
			out->exts[i].off = e[i].off;
			out->exts[i].len = e[i].len;
			out->exts[i].phys = e[i].phys;
			out->exts[i].flags = e[i].flags;
			out->extp[i] = &out->exts[i];
		}
		out->res.n_extents = n;
		out->res.extents = out->extp;
	}
	free(e);
	return rc;
}

/* OP_WATCH: a peer acting for others (op->cred, accepted from root
 * only) or root or the server's own user may watch (watch.h). */
static int op_watch(struct session *s, const Mcache__Op *op, struct handle *h,
                    struct op_out *out)
{
	(void)h;
	bool privileged = op->cred || s->cred.uid == 0 || s->cred.uid == geteuid();
	return watch_op(s->m->watch, &s->ws, op->flags, op->cookie, privileged, &out->res.cookie);
}

/* ---- the op table ------------------------------------------------------
 *
 * One row per op code, in the manner of a command table: the name, the
 * handler and what the dispatch checks and does around it (OPF_* flags,
 * ops.h). Adding an op is one row here plus its handler; a code with no
 * row is answered EOPNOTSUPP.
 */
#define OP(code, name, fn, flags) [MCACHE__OP_CODE__OP_##code] = { name, fn, flags }

static const struct op_desc op_table[] = {
	OP(LOOKUP,       "lookup",       op_stat,         OPF_PATH),
	OP(STAT,         "stat",         op_stat,         OPF_PATH),
	OP(LSTAT,        "lstat",        op_stat,         OPF_PATH),
	OP(FSTAT,        "fstat",        op_fstat,        OPF_HANDLE),
	OP(MKDIR,        "mkdir",        op_mkdir,        OPF_PATH | OPF_MUTATION | OPF_HOLD | OPF_BARE),
	OP(RMDIR,        "rmdir",        op_rmdir,        OPF_PATH | OPF_MUTATION | OPF_HOLD | OPF_BARE),
	OP(OPEN,         "open",         op_open,         OPF_PATH | OPF_MUTATION),
	OP(CLOSE,        "close",        op_close,        OPF_HANDLE),
	OP(UNLINK,       "unlink",       op_unlink,       OPF_PATH | OPF_MUTATION | OPF_HOLD | OPF_BARE),
	OP(RENAME,       "rename",       op_rename,       OPF_PATH | OPF_PATH2 | OPF_MUTATION | OPF_BARE),
	OP(LINK,         "link",         op_link,         OPF_PATH | OPF_PATH2 | OPF_MUTATION | OPF_BARE),
	OP(SYMLINK,      "symlink",      op_symlink,      OPF_PATH | OPF_PATH2 | OPF_MUTATION | OPF_BARE),
	OP(READLINK,     "readlink",     op_readlink,     OPF_PATH),
	OP(CHMOD,        "chmod",        op_chmod,        OPF_PATH | OPF_MUTATION | OPF_BARE),
	OP(CHOWN,        "chown",        op_chown,        OPF_PATH | OPF_MUTATION | OPF_BARE),
	OP(UTIMENS,      "utimens",      op_utimens,      OPF_PATH | OPF_MUTATION | OPF_BARE),
	OP(TRUNCATE,     "truncate",     op_truncate,     OPF_PATH | OPF_MUTATION | OPF_BARE),
	OP(FTRUNCATE,    "ftruncate",    op_ftruncate,    OPF_HANDLE | OPF_MUTATION),
	OP(READDIR,      "readdir",      op_readdir,      OPF_HANDLE),
	OP(FSYNC,        "fsync",        op_sync,         OPF_HANDLE),
	OP(SYNC,         "sync",         op_sync,         0),
	OP(RMTREE,       "rmtree",       op_rmtree,       OPF_PATH | OPF_MUTATION | OPF_BARE),
	OP(CREATE,       "create",       op_create,       OPF_PATH | OPF_MUTATION | OPF_HOLD | OPF_BARE),
	OP(STATS,        "stats",        op_stats,        0),
	OP(RANGE_SET,    "range_set",    op_range_set,    OPF_FILE),
	OP(RANGE_CLEAR,  "range_clear",  op_range_clear,  OPF_FILE),
	OP(RANGE_TEST,   "range_test",   op_range_test,   OPF_FILE),
	OP(RANGE_FIND,   "range_find",   op_range_find,   OPF_FILE),
	OP(EVICT,        "evict",        op_evict,        OPF_PATH),
	OP(EXTENT_SET,   "extent_set",   op_extent_set,   OPF_FILE | OPF_MUTATION),
	OP(EXTENT_PUNCH, "extent_punch", op_extent_punch, OPF_FILE | OPF_MUTATION),
	OP(EXTENT_MAP,   "extent_map",   op_extent_map,   OPF_FILE),
	OP(CLIENTS,      "clients",      op_clients,      0),
	OP(SLOWLOG,      "slowlog",      op_slowlog,      0),
	OP(LOG,          "log",          op_log,          0),
	OP(FSCK,         "fsck",         op_fsck,         0),
	OP(MKNOD,        "mknod",        op_mknod,        OPF_PATH | OPF_MUTATION | OPF_BARE),
	OP(WATCH,        "watch",        op_watch,        0),
};

#undef OP

const struct op_desc *ops_find(unsigned code)
{
	if (code >= sizeof(op_table) / sizeof(op_table[0]) || !op_table[code].run)
		return NULL;
	return &op_table[code];
}

/* What the flags of d ask before its handler runs: 0 with *hp set (NULL
 * without OPF_HANDLE), or the -errno the op is answered with. */
static int ops_check(struct session *s, const struct op_desc *d, const Mcache__Op *op,
                     struct handle **hp)
{
	struct handle *h = NULL;
	int rc;

	/* A symlink's target (its path2) keeps the POSIX limit whatever the op
	 * asks: it is stored, not walked. */
	size_t lim2 = op->code == MCACHE__OP_CODE__OP_SYMLINK ? MC_PATH_MAX : path_limit(op);
	if ((d->flags & OPF_PATH2) && (rc = check_path(&op->path2, lim2)) < 0)
		return rc;
	if ((d->flags & OPF_PATH) && (rc = check_path(&op->path, path_limit(op))) < 0)
		return rc;
	if (d->flags & OPF_FILE) {
		rc = file_handle_get(s, op->handle, &h);
		if (rc < 0)
			return rc;
	} else if (d->flags & OPF_HANDLE) {
		h = handle_get(s, op->handle);
		if (!h)
			return -EBADF;
	}
	*hp = h;
	return 0;
}

static bool ops_desc_holds(const struct session *s, const struct op_desc *d)
{
	/* Under --sync, ops_exec asks the namespace for the op's batch. A
	 * run's op is a mutation with a bare result (ops_prepare, ops_ran). */
	const unsigned f = OPF_HOLD | OPF_MUTATION | OPF_BARE;
	return d && (d->flags & f) == f && !s->m->cfg->sync;
}

bool ops_holds(const struct session *s, const Mcache__Op *op)
{
	return ops_desc_holds(s, ops_find((unsigned)op->code));
}

void ops_hold_begin(struct session *s)
{
	ns_hold_begin(s->m->ns);
}

void ops_hold_yield(struct session *s)
{
	ns_hold_yield(s->m->ns);
}

void ops_hold_end(struct session *s)
{
	ns_hold_end(s->m->ns);
}

void ops_hold_prefetch(struct session *s, const Mcache__Op *op)
{
	ns_hold_prefetch(s->m->ns, (const char *)op->path.data, op->path.len);
}

/* One copy instead of a clearing and protobuf-c's init after it. */
static const struct op_out blank = { .res = MCACHE__RESULT__INIT };

/* The handler, inside the watch notes of a mutation (the lock is taken
 * inside, or held for a run). 0 or -errno. */
static int ops_call(struct session *s, const struct op_desc *d, const Mcache__Op *op,
                    struct handle *h, struct op_out *out)
{
	out->bare = d->flags & OPF_BARE;
	if (d->flags & OPF_MUTATION)
		watch_note_begin(s->m->watch, &s->ws);
	int rc = d->run(s, op, h, out);
	watch_note_end();
	return rc;
}

/* What follows an op that ran: a mutation under --sync waits for its
 * batch, with no commit interval it kicks the committer. */
static void ops_after(struct session *s, const struct op_desc *d, struct op_out *out)
{
	if (out->res.err == 0 && d && (d->flags & OPF_MUTATION)) {
		if (s->m->cfg->sync)
			out->wait_seq = ns_pending_seq(s->m->ns);
		else if (s->m->cfg->commit_interval_ms == 0 && s->m->commit)
			commit_kick(s->m->commit);
	}
}

/* ops_exec but ops_after: credentials, checks, the handler. */
static void ops_exec_op(struct session *s, const struct op_desc *d, const Mcache__Op *op,
                        struct op_out *out)
{
	struct handle *h;
	int rc;

	*out = blank;
	/* An op naming credentials runs as them, checks included (cred.h). */
	struct cred peer;
	rc = 0;
	if (op->cred) {
		peer = s->cred;
		rc = cred_acting(&peer, op->cred, &s->cred);   /* changes nothing on failure */
	}
	out->bare = true;
	if (rc == 0) {
		if (!d)
			rc = -EOPNOTSUPP;
		else if ((rc = ops_check(s, d, op, &h)) == 0)
			rc = ops_call(s, d, op, h, out);
	}
	if (op->cred)
		s->cred = peer;
	out->res.err = rc < 0 ? -rc : 0;
}

void ops_exec(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	const struct op_desc *d = ops_find((unsigned)op->code);

	ops_exec_op(s, d, op, out);
	ops_after(s, d, out);
}
bool ops_prepare(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	const struct op_desc *d = ops_find((unsigned)op->code);
	struct handle *h;

	if (!ops_desc_holds(s, d))
		return false;
	/* Bare until it ran, and bare after (the rows of OPF_HOLD are
	 * OPF_BARE): nothing of res is read but err. What out owns is
	 * nothing (op_out_release may still be called on it). */
	out->bare = true;
	out->wait_seq = 0;
	out->res.err = 0;
	out->ents = NULL;
	out->entp = NULL;
	out->names = NULL;
	out->data = NULL;
	out->exts = NULL;
	out->extp = NULL;
	/* An op naming credentials is checked as them: by ops_run. */
	if (!op->cred) {
		int rc = ops_check(s, d, op, &h);
		out->res.err = rc < 0 ? -rc : 0;
	}
	return true;
}

void ops_run(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	const struct op_desc *d = ops_find((unsigned)op->code);

	if (op->cred) {
		ops_exec_op(s, d, op, out);
		return;
	}
	if (out->res.err)
		return;             /* answered by ops_prepare's checks */
	int rc = ops_call(s, d, op, NULL, out);
	out->res.err = rc < 0 ? -rc : 0;
}

void ops_ran(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	/* What ops_after does for a run's op: its row is a mutation's
	 * (ops_desc_holds), and --sync makes no run. */
	(void)op;
	if (out->res.err == 0 && s->m->cfg->commit_interval_ms == 0 && s->m->commit)
		commit_kick(s->m->commit);
}

void op_out_release(struct op_out *out)
{
	free(out->ents);
	free(out->entp);
	free(out->names);
	free(out->data);
	free(out->exts);
	free(out->extp);
	memset(out, 0, sizeof(*out));
}
