/* fsck.c - the store side of the consistency check (fsck.h, rules 1-5)
 * and the report.
 *
 * One store_walk gives every record from one snapshot: inodes first (in
 * ino order, kept in an array searched by bisection), then dentries (in
 * (parent, name) order, kept likewise with their names in one buffer),
 * then extents, checked as they come against the inode array. Counting
 * names and subdirectories per inode, and one walk from the root over the
 * dentries, give rules 3 and 4. Memory: about 48 bytes per inode and 32
 * per dentry plus the names.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck.h"
#include "store.h"

#define FSCK_KIND_ROW(id, n, d) { n, d },
static const struct {
	const char *name, *desc;
} fsck_kinds[FSCK_KIND_COUNT] = { FSCK_KINDS(FSCK_KIND_ROW) };
#undef FSCK_KIND_ROW

const char *fsck_kind_name(enum fsck_kind k)
{
	return k < FSCK_KIND_COUNT ? fsck_kinds[k].name : "?";
}

const char *fsck_kind_desc(enum fsck_kind k)
{
	return k < FSCK_KIND_COUNT ? fsck_kinds[k].desc : "?";
}

/* ---- the report ------------------------------------------------------- */

/* name with every byte that is not printable ASCII (or is a backslash)
 * written as \xNN, so that the report is valid UTF-8 whatever names hold. */
static char *fsck_name_dup(const char *name, size_t len)
{
	char *out = malloc(len * 4 + 1), *p = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			*p++ = (char)c;
		else
			p += sprintf(p, "\\x%02x", c);
	}
	*p = '\0';
	return out;
}

int fsck_add(struct fsck_report *rep, enum fsck_kind kind, uint64_t ino, const char *name,
             size_t namelen, const char *fmt, ...)
{
	struct fsck_problem p = { .kind = kind, .ino = ino };
	va_list ap;
	if (rep->n >= FSCK_PROBLEMS_MAX) {
		rep->dropped++;
		return 0;
	}
	if (rep->n == rep->cap) {
		size_t cap = rep->cap ? rep->cap * 2 : 16;
		struct fsck_problem *v = realloc(rep->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		rep->v = v;
		rep->cap = cap;
	}
	va_start(ap, fmt);
	int rc = vasprintf(&p.detail, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	if (name && !(p.name = fsck_name_dup(name, namelen))) {
		free(p.detail);
		return -ENOMEM;
	}
	rep->v[rep->n++] = p;
	return 0;
}

void fsck_report_free(struct fsck_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		free(rep->v[i].name);
		free(rep->v[i].detail);
	}
	free(rep->v);
	memset(rep, 0, sizeof(*rep));
}

char *fsck_report_json(const struct fsck_report *rep)
{
	json_t *root = json_object(), *probs = json_array(), *checked = json_object();
	char *out = NULL;
	if (!root || !probs || !checked)
		goto done;
	json_object_set_new(checked, "inodes", json_integer((json_int_t)rep->inodes));
	json_object_set_new(checked, "dentries", json_integer((json_int_t)rep->dentries));
	json_object_set_new(checked, "extents", json_integer((json_int_t)rep->extents));
	json_object_set_new(checked, "cached_inodes", json_integer((json_int_t)rep->cached_inodes));
	json_object_set_new(checked, "cached_dentries",
	                    json_integer((json_int_t)rep->cached_dentries));
	json_object_set_new(checked, "cached_dirs", json_integer((json_int_t)rep->cached_dirs));
	for (size_t i = 0; i < rep->n; i++) {
		const struct fsck_problem *p = &rep->v[i];
		json_t *o = json_pack("{s:s, s:I, s:s?, s:s}", "kind", fsck_kind_name(p->kind),
		                      "ino", (json_int_t)p->ino, "name", p->name,
		                      "detail", p->detail);
		if (!o || json_array_append_new(probs, o) < 0)
			goto done;
	}
	json_object_set_new(root, "clean", json_boolean(rep->n == 0 && rep->dropped == 0));
	json_object_set(root, "checked", checked);
	json_object_set(root, "problems", probs);
	json_object_set_new(root, "dropped", json_integer((json_int_t)rep->dropped));
	out = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
done:
	json_decref(checked);
	json_decref(probs);
	json_decref(root);
	return out;
}

/* ---- the store check -------------------------------------------------- */

struct fsck_inode {
	uint64_t ino;
	uint64_t size;
	uint64_t target_len;
	uint64_t ext_end;         /* end (exclusive) of the last extent seen */
	uint32_t mode, nlink;
	uint32_t names;           /* dentries naming it */
	uint32_t subdirs;         /* directory: dentries in it naming directories */
	uint32_t entries;         /* directory: dentries in it */
	uint8_t reached;
};

struct fsck_dentry {
	uint64_t parent, ino;
	size_t name_off;
	uint8_t namelen, dtype;
};

struct fsck_state {
	struct fsck_report *rep;
	struct fsck_inode *in;
	size_t nin, capin;
	struct fsck_dentry *de;
	size_t nde, capde;
	char *names;
	size_t nnames, capnames;
	uint64_t next_ino;
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 256;
	while (c < need)
		c *= 2;
	void *n = realloc(*v, c * size);
	if (!n)
		return -ENOMEM;
	*v = n;
	*cap = c;
	return 0;
}

/* The first of n records (size bytes each, from base, sorted by the
 * uint64_t at offset off) whose key is not below key; n if none. */
static size_t fsck_lower_bound(const void *base, size_t n, size_t size, size_t off,
                               uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, (const char *)base + mid * size + off, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct fsck_inode *fsck_find(struct fsck_state *f, uint64_t ino)
{
	size_t lo = fsck_lower_bound(f->in, f->nin, sizeof(*f->in),
	                             offsetof(struct fsck_inode, ino), ino);
	return lo < f->nin && f->in[lo].ino == ino ? &f->in[lo] : NULL;
}

static const char *fsck_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "directory";
	case S_IFREG: return "file";
	case S_IFLNK: return "symlink";
	default: return "unknown type";
	}
}

static int fsck_on_inode(struct fsck_state *f, const struct store_rec *r)
{
	const struct mc_inode_rec *i = &r->inode;
	int err = grow((void **)&f->in, &f->capin, f->nin + 1, sizeof(*f->in));
	if (err)
		return err;
	f->rep->inodes++;
	f->in[f->nin++] = (struct fsck_inode){
		.ino = r->ino, .size = i->size, .target_len = r->target_len,
		.mode = i->mode, .nlink = i->nlink,
	};
	return 0;
}

static int fsck_on_dentry(struct fsck_state *f, const struct store_rec *r)
{
	int err = grow((void **)&f->de, &f->capde, f->nde + 1, sizeof(*f->de));
	if (!err)
		err = grow((void **)&f->names, &f->capnames, f->nnames + r->namelen, 1);
	if (err)
		return err;
	f->rep->dentries++;
	memcpy(f->names + f->nnames, r->name, r->namelen);
	f->de[f->nde++] = (struct fsck_dentry){
		.parent = r->parent, .ino = r->ino, .name_off = f->nnames,
		.namelen = (uint8_t)r->namelen, .dtype = r->dtype,
	};
	f->nnames += r->namelen;
	return 0;
}

static int fsck_on_extent(struct fsck_state *f, const struct store_rec *r)
{
	struct fsck_inode *i = fsck_find(f, r->ino);
	unsigned long long s = r->start, e = r->start + r->len;
	f->rep->extents++;
	if (!i)
		return fsck_add(f->rep, FSCK_EXTENT, r->ino, NULL, 0,
		                "extent [%llu, %llu) of a missing inode", s, e);
	if (!S_ISREG(i->mode))
		return fsck_add(f->rep, FSCK_EXTENT, r->ino, NULL, 0,
		                "extent [%llu, %llu) of a %s", s, e, fsck_type(i->mode));
	if (r->start + (r->len - 1) >= i->size)
		return fsck_add(f->rep, FSCK_EXTENT, r->ino, NULL, 0,
		                "extent [%llu, %llu) past the size %llu", s, e,
		                (unsigned long long)i->size);
	int err = 0;
	if (r->start < i->ext_end)
		err = fsck_add(f->rep, FSCK_EXTENT, r->ino, NULL, 0,
		               "extent [%llu, %llu) overlaps the one before (ending at %llu)", s, e,
		               (unsigned long long)i->ext_end);
	i->ext_end = r->start + r->len;
	return err;
}

static int fsck_on_rec(void *arg, const struct store_rec *r)
{
	struct fsck_state *f = arg;
	switch (r->kind) {
	case STORE_REC_INODE:
		return fsck_on_inode(f, r);
	case STORE_REC_DENTRY:
		return fsck_on_dentry(f, r);
	case STORE_REC_EXTENT:
		return fsck_on_extent(f, r);
	case STORE_REC_BAD:
		return fsck_add(f->rep, FSCK_BAD_RECORD, r->ino, NULL, 0, "%s: %s", r->table, r->why);
	}
	return 0;
}

/* Rule 2, and the counts rules 3 and 4 need. */
static int fsck_dentries(struct fsck_state *f)
{
	for (size_t j = 0; j < f->nde; j++) {
		const struct fsck_dentry *d = &f->de[j];
		const char *nm = f->names + d->name_off;
		struct fsck_inode *p = fsck_find(f, d->parent), *c = fsck_find(f, d->ino);
		int err = 0;
		if (!p || !S_ISDIR(p->mode)) {
			err = fsck_add(f->rep, FSCK_BAD_PARENT, d->parent, nm, d->namelen,
			               "parent %llu is %s", (unsigned long long)d->parent,
			               p ? fsck_type(p->mode) : "missing");
			p = NULL;
		}
		if (!err && !c)
			err = fsck_add(f->rep, FSCK_DANGLING, d->parent, nm, d->namelen,
			               "names inode %llu, which is missing",
			               (unsigned long long)d->ino);
		if (!err && c && d->dtype != IFTODT(c->mode))
			err = fsck_add(f->rep, FSCK_DTYPE, d->parent, nm, d->namelen,
			               "type %u, inode %llu is a %s", d->dtype,
			               (unsigned long long)d->ino, fsck_type(c->mode));
		if (err)
			return err;
		if (p)
			p->entries++;
		if (c) {
			c->names++;
			if (p && S_ISDIR(c->mode))
				p->subdirs++;
		}
	}
	return 0;
}

/* Rule 4's walk: mark every directory reached from the root. The dentries
 * are in parent order, so a directory's entries are one run found by
 * bisection; a directory is entered once, so a cycle ends the walk. */
static int fsck_reach(struct fsck_state *f, struct fsck_inode *root)
{
	uint64_t *stack = malloc(sizeof(*stack) * (f->nin + 1));
	size_t top = 0;
	if (!stack)
		return -ENOMEM;
	root->reached = 1;
	stack[top++] = root->ino;
	while (top > 0) {
		uint64_t dir = stack[--top];
		size_t lo = fsck_lower_bound(f->de, f->nde, sizeof(*f->de),
		                             offsetof(struct fsck_dentry, parent), dir);
		for (; lo < f->nde && f->de[lo].parent == dir; lo++) {
			struct fsck_inode *c = fsck_find(f, f->de[lo].ino);
			if (!c || !S_ISDIR(c->mode) || c->reached)
				continue;
			c->reached = 1;
			stack[top++] = c->ino;
		}
	}
	free(stack);
	return 0;
}

/* Rules 3 and 4, per inode. */
static int fsck_inodes(struct fsck_state *f, fsck_held_fn held, void *held_arg)
{
	for (size_t j = 0; j < f->nin; j++) {
		const struct fsck_inode *i = &f->in[j];
		unsigned long long ino = i->ino;
		bool dir = S_ISDIR(i->mode), root = i->ino == 1;
		uint32_t want = dir ? 2 + i->subdirs : i->names;
		int err = 0;
		if (i->nlink != want)
			err = fsck_add(f->rep, FSCK_NLINK, ino, NULL, 0,
			               "%s %llu: nlink %u, expected %u", fsck_type(i->mode), ino,
			               i->nlink, want);
		if (!err && dir && i->size != i->entries)
			err = fsck_add(f->rep, FSCK_SIZE, ino, NULL, 0,
			               "directory %llu: %llu entries recorded, %u found", ino,
			               (unsigned long long)i->size, i->entries);
		if (!err && S_ISLNK(i->mode) && i->size != i->target_len)
			err = fsck_add(f->rep, FSCK_SIZE, ino, NULL, 0,
			               "symlink %llu: size %llu, target of %llu bytes", ino,
			               (unsigned long long)i->size, (unsigned long long)i->target_len);
		if (!err && !root && i->names == 0 && !(held && held(held_arg, i->ino)))
			err = fsck_add(f->rep, FSCK_ORPHAN, ino, NULL, 0,
			               "%s %llu (nlink %u) has no name", fsck_type(i->mode), ino,
			               i->nlink);
		if (!err && dir && i->names > (root ? 0u : 1u))
			err = fsck_add(f->rep, FSCK_MULTI_PARENT, ino, NULL, 0,
			               "directory %llu has %u names", ino, i->names);
		if (!err && dir && !i->reached && i->names > 0)
			err = fsck_add(f->rep, FSCK_UNREACHABLE, ino, NULL, 0,
			               "directory %llu is not reached from the root", ino);
		if (err)
			return err;
	}
	return 0;
}

/* Inodes at or above next_ino, read after the walk: a commit between the
 * two only raises next_ino, and the walk may have begun with an apply of
 * the log that took a while (store.h), so meta read before it could be
 * older than the inodes it saw. f->in is in ino order. */
static int fsck_ino_range(struct fsck_state *f, struct store *st)
{
	struct store_meta m;
	int err = store_get_meta(st, &m);
	if (err)
		return err;
	f->next_ino = m.next_ino;
	size_t k = f->nin;
	while (k > 0 && f->in[k - 1].ino >= f->next_ino)
		k--;
	for (; k < f->nin && !err; k++)
		err = fsck_add(f->rep, FSCK_INO_RANGE, f->in[k].ino, NULL, 0,
		               "inode %llu at or above next_ino %llu",
		               (unsigned long long)f->in[k].ino, (unsigned long long)f->next_ino);
	return err;
}

int fsck_store(struct store *st, fsck_held_fn held, void *held_arg, struct fsck_report *rep)
{
	struct fsck_state f = { .rep = rep };
	int err = store_walk(st, fsck_on_rec, &f);
	if (!err)
		err = fsck_ino_range(&f, st);
	if (err)
		goto out;
	err = fsck_dentries(&f);
	if (err)
		goto out;
	struct fsck_inode *root = fsck_find(&f, 1);
	if (!root || !S_ISDIR(root->mode)) {
		err = fsck_add(rep, FSCK_NO_ROOT, 1, NULL, 0, "inode 1 is %s",
		               root ? fsck_type(root->mode) : "missing");
		if (err)
			goto out;
	} else {
		err = fsck_reach(&f, root);
		if (err)
			goto out;
	}
	err = fsck_inodes(&f, held, held_arg);
out:
	free(f.in);
	free(f.de);
	free(f.names);
	return err;
}

int fsck_offline(const char *dir, struct fsck_report *rep)
{
	char *path = NULL;
	struct stat sb;
	struct store *st;
	if (asprintf(&path, "%s/data.mdb", dir) < 0)
		return -ENOMEM;
	int err = stat(path, &sb) < 0 ? -errno : 0;
	free(path);
	if (err)
		return err;
	const struct store_opts o = { .existing = true };
	err = store_open(dir, &o, &st);
	if (err)
		return err;
	err = fsck_store(st, NULL, NULL, rep);
	store_close(st);
	return err;
}
