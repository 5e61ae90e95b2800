/* ops.c - runs protobuf Ops for a client session: argument checks, the
 * namespace call, and the Result; plus the session's open handles.
 *
 * Handles: a session keeps a table of the inodes it opened (mc_open), each
 * holding its inode in the cache (ns_open(hold)) until closed or until the
 * session ends. A handle id is its table index plus one.
 *
 * Range locks: a session locks extent-state ranges (MC_ES_LOCKED) under its
 * owner id, unique in the server's life, and remembers the inodes it locked
 * in; as with POSIX record locks, closing its last handle of a file
 * releases its locks there, so a locked range always has an open handle
 * (which keeps the inode and its state cached). When the session ends, its
 * locks are released before its handles.
 */
#include "ops.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "area.h"
#include "clients.h"
#include "commit.h"
#include "cred.h"
#include "extent_map.h"
#include "extent_ns.h"
#include "fsck.h"
#include "logfeed.h"
#include "mc_shm.h"
#include "mcd.h"
#include "map.h"
#include "mknod.h"
#include "ns.h"
#include "slowlog.h"

struct handle {
	uint64_t ino;                /* 0: free slot */
	bool writable;
	bool dir;
};

struct session {
	struct mcd *m;
	struct cred cred;
	struct handle *h;
	size_t nh, caph;
	uint32_t slot;               /* client-area slot, UINT32_MAX: none */
	uint32_t owner;              /* range-lock owner id */
	struct map locked;           /* inos this session took range locks in */
};

static _Atomic uint32_t next_owner = 1;

#define SESSION_MAX_HANDLES 65536
#define READDIR_DEFAULT 512u
#define READDIR_MAX 8192u

struct session *session_new(struct mcd *m, const struct cred *cred)
{
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->m = m;
	s->cred = *cred;
	if (s->cred.ngroups > SESSION_MAX_GROUPS)
		s->cred.ngroups = SESSION_MAX_GROUPS;
	s->slot = UINT32_MAX;
	s->owner = atomic_fetch_add(&next_owner, 1);
	if (s->owner == 0) /* wrapped after 2^32 sessions */
		s->owner = atomic_fetch_add(&next_owner, 1);
	if (m->area && area_slot_get(m->area, (int32_t)cred->pid, &s->slot) < 0)
		s->slot = UINT32_MAX;
	return s;
}

uint32_t session_slot(const struct session *s)
{
	return s->slot;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->locked.cap; i++)
		if (s->locked.keys[i])
			ns_range_release(s->m->ns, s->locked.keys[i], s->owner);
	map_free(&s->locked);
	for (size_t i = 0; i < s->nh; i++)
		if (s->h[i].ino)
			ns_release(s->m->ns, s->h[i].ino);
	if (s->slot != UINT32_MAX)
		area_slot_put(s->m->area, s->slot);
	free(s->h);
	free(s);
}

/* A free handle slot (ino 0), making one if needed: like open(2), the
 * descriptor is found before the path is touched, so running out of them
 * cannot leave a file created. 0 and *out (an index), -EMFILE, -ENOMEM. */
static int handle_slot(struct session *s, size_t *out)
{
	size_t i;
	for (i = 0; i < s->nh; i++)
		if (!s->h[i].ino)
			break;
	if (i == s->nh) {
		if (s->nh == SESSION_MAX_HANDLES)
			return -EMFILE;
		if (s->nh == s->caph) {
			size_t cap = s->caph ? s->caph * 2 : 16;
			struct handle *h = realloc(s->h, cap * sizeof(*h));
			if (!h)
				return -ENOMEM;
			s->h = h;
			s->caph = cap;
		}
		s->h[s->nh++] = (struct handle){ 0, false, false };
	}
	*out = i;
	return 0;
}

static struct handle *handle_get(struct session *s, uint64_t id)
{
	if (id == 0 || id > s->nh || !s->h[id - 1].ino)
		return NULL;
	return &s->h[id - 1];
}

/* The handle id of a regular file, for the extent ops: 0 and *out, or
 * -EBADF (not open) or -EISDIR. */
static int file_handle_get(struct session *s, uint64_t id, struct handle **out)
{
	struct handle *h = handle_get(s, id);
	if (!h)
		return -EBADF;
	if (h->dir)
		return -EISDIR;
	*out = h;
	return 0;
}

/* A path argument: absolute or not is the namespace's business; here only
 * what a C string could not carry and what is too long. */
static int check_path(const ProtobufCBinaryData *p)
{
	if (p->len == 0)
		return -ENOENT;
	if (p->len >= MC_PATH_MAX)
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
	if (b->nlen + len > b->ncap) {
		size_t cap = b->ncap ? b->ncap * 2 : 4096;
		while (cap < b->nlen + len)
			cap *= 2;
		char *n = realloc(o->names, cap);
		if (!n)
			return -ENOMEM;
		o->names = n;
		b->ncap = cap;
	}
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

static int op_readdir(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	struct handle *h = handle_get(s, op->handle);
	if (!h)
		return -EBADF;
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

static int op_open(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	int flags = (int)op->flags;
	size_t i;
	int rc = handle_slot(s, &i);
	if (rc < 0)
		return rc;
	ns_attr a;
	rc = ns_open(s->m->ns, &s->cred, (const char *)op->path.data, op->path.len, flags,
	             op->mode, true, &a);
	if (rc < 0)
		return rc;
	s->h[i] = (struct handle){ a.ino, (flags & O_ACCMODE) != O_RDONLY, S_ISDIR(a.mode) };
	out->res.handle = i + 1;
	fill_attr(out, &a);
	return 0;
}

/* The consistency check (fsck.h): for root and the server's own user only,
 * since it reads the whole store and takes the namespace lock in batches. */
static int op_fsck(struct session *s, struct op_out *out)
{
	struct fsck_report rep = {0};
	if (s->cred.uid != 0 && s->cred.uid != geteuid())
		return -EPERM;
	int rc = fsck_ns(s->m->ns, &rep);
	char *js = rc == 0 ? fsck_report_json(&rep) : NULL;
	fsck_report_free(&rep);
	if (rc < 0)
		return rc;
	if (!js)
		return -ENOMEM;
	out->data = (uint8_t *)js;
	out->res.data.data = out->data;
	out->res.data.len = strlen(js);
	return 0;
}

/* The commit log as JSON lines (logfeed.h): it names every file changed,
 * so only root and the server's own user may read it. */
static int op_log(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	if (s->cred.uid != 0 && s->cred.uid != geteuid())
		return -EACCES;
	if (!s->m->store)
		return -EOPNOTSUPP;
	size_t max = op->log_max ? op->log_max : 256u << 10;
	if (max > s->m->cfg->max_reply / 2)
		max = s->m->cfg->max_reply / 2;
	struct logfeed_out lf;
	int rc = logfeed_read(s->m->store, op->log_seq, op->log_rec, max, &lf);
	if (rc < 0)
		return rc;
	out->data = (uint8_t *)lf.buf;
	out->res.data.data = out->data;
	out->res.data.len = lf.len;
	out->res.cookie = lf.next_seq;
	out->res.end = lf.next_rec;
	out->res.start = lf.first;
	out->res.eof = lf.eof;
	return 0;
}

static int op_stats(struct session *s, struct op_out *out)
{
	struct stats_snapshot *snap = calloc(1, sizeof(*snap));
	struct evbuffer *eb = evbuffer_new();
	int rc = -ENOMEM;
	if (!snap || !eb)
		goto done;
	mcd_fill_stats(s->m, snap);
	rc = stats_render_json(snap, eb);
	if (rc < 0)
		goto done;
	size_t len = evbuffer_get_length(eb);
	out->data = malloc(len ? len : 1);
	if (!out->data) {
		rc = -ENOMEM;
		goto done;
	}
	evbuffer_remove(eb, out->data, len);
	out->res.data.data = out->data;
	out->res.data.len = len;
	rc = 0;
done:
	if (eb)
		evbuffer_free(eb);
	free(snap);
	return rc;
}

/* A result whose data a renderer put in out->data (rc 0) or did not. */
static int op_text(struct op_out *out, int rc)
{
	if (rc == 0)
		out->res.data.data = out->data;
	return rc;
}

/* The session closed a handle of ino: with none left, its locks there go. */
static void session_unlock_closed(struct session *s, uint64_t ino)
{
	if (!map_find(&s->locked, ino))
		return;
	for (size_t i = 0; i < s->nh; i++)
		if (s->h[i].ino == ino)
			return;
	ns_range_release(s->m->ns, ino, s->owner);
	map_del(&s->locked, ino);
}

/* The extent-state ops, on a handle of a regular file. */
static int op_range(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	struct handle *h;
	int rc = file_handle_get(s, op->handle, &h);
	if (rc < 0)
		return rc;
	struct ns *ns = s->m->ns;
	switch (op->code) {
	case MCACHE__OP_CODE__OP_RANGE_SET:
		if (op->bits & MC_ES_LOCKED) {
			/* Room to remember the inode first: failing after the
			 * lock was taken would leave it held past the session. */
			rc = map_reserve(&s->locked);
			if (rc < 0)
				return rc;
		}
		bool first = !map_find(&s->locked, h->ino);
		rc = ns_range_set(ns, h->ino, op->start, op->end, op->bits, s->owner, first);
		if (rc == 0 && (op->bits & MC_ES_LOCKED))
			map_put(&s->locked, h->ino, 1);
		return rc;
	case MCACHE__OP_CODE__OP_RANGE_CLEAR:
		return ns_range_clear(ns, h->ino, op->start, op->end, op->bits, s->owner);
	case MCACHE__OP_CODE__OP_RANGE_TEST:
		rc = ns_range_test(ns, h->ino, op->start, op->end, op->bits, op->all);
		if (rc >= 0) {
			out->res.test = (uint32_t)rc;
			rc = 0;
		}
		return rc;
	default: {
		uint64_t st, en;
		rc = ns_range_find(ns, h->ino, op->start, op->bits, &st, &en);
		if (rc == 0) {
			out->res.start = st;
			out->res.end = en;
		}
		return rc;
	}
	}
}

#define EXTENT_MAP_DEFAULT 512u
#define EXTENT_MAP_MAX 8192u

/* The extent-map ops, on a handle of a regular file. */
static int op_extent(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	struct handle *h;
	int rc = file_handle_get(s, op->handle, &h);
	if (rc < 0)
		return rc;
	struct ns *ns = s->m->ns;
	if (op->code == MCACHE__OP_CODE__OP_EXTENT_SET)
		return ns_extent_set(ns, h->ino, h->writable, op->start, op->len, op->phys, op->flags);
	if (op->code == MCACHE__OP_CODE__OP_EXTENT_PUNCH)
		return ns_extent_punch(ns, h->ino, h->writable, op->start, op->len);
	size_t max = op->count ? op->count : EXTENT_MAP_DEFAULT, n;
	if (max > EXTENT_MAP_MAX)
		max = EXTENT_MAP_MAX;
	struct emap_ext *e = malloc(max * sizeof(*e));
	if (!e)
		return -ENOMEM;
	rc = ns_extent_map(ns, h->ino, op->start, op->len, e, max, &n);
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

static bool is_mutation(Mcache__OpCode code)
{
	switch (code) {
	case MCACHE__OP_CODE__OP_MKDIR:
	case MCACHE__OP_CODE__OP_RMDIR:
	case MCACHE__OP_CODE__OP_OPEN:
	case MCACHE__OP_CODE__OP_UNLINK:
	case MCACHE__OP_CODE__OP_RENAME:
	case MCACHE__OP_CODE__OP_LINK:
	case MCACHE__OP_CODE__OP_SYMLINK:
	case MCACHE__OP_CODE__OP_CHMOD:
	case MCACHE__OP_CODE__OP_CHOWN:
	case MCACHE__OP_CODE__OP_UTIMENS:
	case MCACHE__OP_CODE__OP_TRUNCATE:
	case MCACHE__OP_CODE__OP_FTRUNCATE:
	case MCACHE__OP_CODE__OP_RMTREE:
	case MCACHE__OP_CODE__OP_CREATE:
	case MCACHE__OP_CODE__OP_EXTENT_SET:
	case MCACHE__OP_CODE__OP_EXTENT_PUNCH:
	case MCACHE__OP_CODE__OP_MKNOD:
		return true;
	default:
		return false;
	}
}

static int run(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	struct ns *ns = s->m->ns;
	const struct cred *c = &s->cred;
	const char *p = (const char *)op->path.data;
	size_t plen = op->path.len;
	const char *p2 = (const char *)op->path2.data;
	size_t p2len = op->path2.len;
	ns_attr a;
	int rc;

	switch (op->code) {
	case MCACHE__OP_CODE__OP_FSTAT:
	case MCACHE__OP_CODE__OP_FTRUNCATE:
	case MCACHE__OP_CODE__OP_CLOSE:
	case MCACHE__OP_CODE__OP_READDIR:
	case MCACHE__OP_CODE__OP_FSYNC:
	case MCACHE__OP_CODE__OP_SYNC:
	case MCACHE__OP_CODE__OP_STATS:
	case MCACHE__OP_CODE__OP_FSCK:
	case MCACHE__OP_CODE__OP_LOG:
	case MCACHE__OP_CODE__OP_RANGE_SET:
	case MCACHE__OP_CODE__OP_RANGE_CLEAR:
	case MCACHE__OP_CODE__OP_RANGE_TEST:
	case MCACHE__OP_CODE__OP_RANGE_FIND:
	case MCACHE__OP_CODE__OP_EXTENT_SET:
	case MCACHE__OP_CODE__OP_EXTENT_PUNCH:
	case MCACHE__OP_CODE__OP_EXTENT_MAP:
	case MCACHE__OP_CODE__OP_CLIENTS:
	case MCACHE__OP_CODE__OP_SLOWLOG:
		break;
	case MCACHE__OP_CODE__OP_SYMLINK:
	case MCACHE__OP_CODE__OP_RENAME:
	case MCACHE__OP_CODE__OP_LINK:
		if ((rc = check_path(&op->path2)) < 0)
			return rc;
		/* fall through */
	default:
		if ((rc = check_path(&op->path)) < 0)
			return rc;
	}

	switch (op->code) {
	case MCACHE__OP_CODE__OP_LOOKUP:
	case MCACHE__OP_CODE__OP_STAT:
	case MCACHE__OP_CODE__OP_LSTAT:
		rc = ns_stat(ns, c, p, plen, op->code != MCACHE__OP_CODE__OP_LSTAT, &a);
		if (rc == 0)
			fill_attr(out, &a);
		return rc;
	case MCACHE__OP_CODE__OP_FSTAT: {
		struct handle *h = handle_get(s, op->handle);
		if (!h)
			return -EBADF;
		rc = ns_stat_ino(ns, h->ino, &a);
		if (rc == 0)
			fill_attr(out, &a);
		return rc;
	}
	case MCACHE__OP_CODE__OP_MKDIR:
		return ns_mkdir(ns, c, p, plen, op->mode, NULL);
	case MCACHE__OP_CODE__OP_RMDIR:
		return ns_rmdir(ns, c, p, plen);
	case MCACHE__OP_CODE__OP_CREATE:
		return ns_open(ns, c, p, plen, O_CREAT | O_EXCL | O_WRONLY, op->mode, false, NULL);
	case MCACHE__OP_CODE__OP_OPEN:
		return op_open(s, op, out);
	case MCACHE__OP_CODE__OP_CLOSE: {
		struct handle *h = handle_get(s, op->handle);
		if (!h)
			return -EBADF;
		uint64_t ino = h->ino;
		h->ino = 0;
		session_unlock_closed(s, ino);
		ns_release(ns, ino);
		return 0;
	}
	case MCACHE__OP_CODE__OP_UNLINK:
		return ns_unlink(ns, c, p, plen);
	case MCACHE__OP_CODE__OP_RENAME:
		return ns_rename(ns, c, p, plen, p2, p2len);
	case MCACHE__OP_CODE__OP_LINK:
		return ns_link(ns, c, p, plen, p2, p2len);
	case MCACHE__OP_CODE__OP_SYMLINK:
		return ns_symlink(ns, c, p2, p2len, p, plen);
	case MCACHE__OP_CODE__OP_READLINK: {
		/* The target lands on the stack; the reply holds only its bytes. */
		char target[MC_SYMLINK_MAX];
		size_t n;
		rc = ns_readlink(ns, c, p, plen, target, &n);
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
	case MCACHE__OP_CODE__OP_CHMOD:
		return ns_chmod(ns, c, p, plen, op->mode);
	case MCACHE__OP_CODE__OP_CHOWN:
		if (op->flags & AT_SYMLINK_NOFOLLOW)
			return ns_lchown(ns, c, p, plen, op->uid, op->gid);
		return ns_chown(ns, c, p, plen, op->uid, op->gid);
	case MCACHE__OP_CODE__OP_UTIMENS: {
		struct timespec t[2] = { { (time_t)op->atime_sec, (long)op->atime_nsec },
		                         { (time_t)op->mtime_sec, (long)op->mtime_nsec } };
		return ns_utimens_at(ns, c, p, plen, t, !(op->flags & AT_SYMLINK_NOFOLLOW));
	}
	case MCACHE__OP_CODE__OP_TRUNCATE:
		return ns_truncate(ns, c, p, plen, (int64_t)op->size);
	case MCACHE__OP_CODE__OP_FTRUNCATE: {
		struct handle *h = handle_get(s, op->handle);
		if (!h)
			return -EBADF;
		return ns_truncate_ino(ns, h->ino, h->writable, (int64_t)op->size);
	}
	case MCACHE__OP_CODE__OP_READDIR:
		return op_readdir(s, op, out);
	case MCACHE__OP_CODE__OP_FSYNC:
		if (!handle_get(s, op->handle))
			return -EBADF;
		/* fall through */
	case MCACHE__OP_CODE__OP_SYNC:
		out->wait_seq = ns_pending_seq(ns);
		return 0;
	case MCACHE__OP_CODE__OP_RMTREE:
		return ns_rmtree(ns, c, p, plen, 1024);
	case MCACHE__OP_CODE__OP_STATS:
		return op_stats(s, out);
	case MCACHE__OP_CODE__OP_CLIENTS:
		return op_text(out, clients_render(s->m->clients, (char **)&out->data,
		                                   &out->res.data.len));
	case MCACHE__OP_CODE__OP_SLOWLOG:
		return op_text(out, slowlog_render(s->m->slowlog, op->count, (char **)&out->data,
		                                   &out->res.data.len));
	case MCACHE__OP_CODE__OP_FSCK:
		return op_fsck(s, out);
	case MCACHE__OP_CODE__OP_LOG:
		return op_log(s, op, out);
	case MCACHE__OP_CODE__OP_RANGE_SET:
	case MCACHE__OP_CODE__OP_RANGE_CLEAR:
	case MCACHE__OP_CODE__OP_RANGE_TEST:
	case MCACHE__OP_CODE__OP_RANGE_FIND:
		return op_range(s, op, out);
	case MCACHE__OP_CODE__OP_EVICT:
		return ns_evict(ns, c, p, plen);
	case MCACHE__OP_CODE__OP_EXTENT_SET:
	case MCACHE__OP_CODE__OP_EXTENT_PUNCH:
	case MCACHE__OP_CODE__OP_EXTENT_MAP:
		return op_extent(s, op, out);
	case MCACHE__OP_CODE__OP_MKNOD:
		return ns_mknod(ns, c, p, plen, op->mode, op->rdev);
	default:
		return -EOPNOTSUPP;
	}
}

void ops_exec(struct session *s, const Mcache__Op *op, struct op_out *out)
{
	memset(out, 0, sizeof(*out));
	mcache__result__init(&out->res);
	/* An op naming credentials runs as them, helpers included (cred.h). */
	struct cred peer;
	int rc = 0;
	if (op->cred) {
		peer = s->cred;
		rc = cred_acting(&peer, op->cred, &s->cred);   /* changes nothing on failure */
	}
	if (rc == 0)
		rc = run(s, op, out);
	if (op->cred)
		s->cred = peer;
	out->res.err = rc < 0 ? -rc : 0;
	if (rc == 0 && is_mutation(op->code)) {
		if (s->m->cfg->sync)
			out->wait_seq = ns_pending_seq(s->m->ns);
		else if (s->m->cfg->commit_interval_ms == 0 && s->m->commit)
			commit_kick(s->m->commit);
	}
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
