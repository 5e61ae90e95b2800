/* mcachectl_dump.c - `mcachectl dump` and `mcachectl load`: a namespace
 * tree as JSON lines, and back (see mcachectl_dump.h).
 *
 * Load keeps two lists while it reads:
 *   1. links: for each dumped "ino" of a regular file it created with an
 *      "nlink" above 1 (or none), the path it created it at, so a later
 *      entry with that "ino" becomes a hard link to it, not a new file;
 *   2. dirs: each directory it loaded with its dumped times, set only after
 *      the whole stream is read (creating entries in a directory changes its
 *      modification time), deepest first (reverse order of a pre-order). */
#include "mcachectl_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "mcachectl_fmt.h"

#define NS_PER_S 1000000000LL

static json_int_t ts_ns(const struct timespec *ts)
{
	return (json_int_t)ts->tv_sec * NS_PER_S + ts->tv_nsec;
}

static struct timespec ns_ts(json_int_t ns)
{
	struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };
	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += NS_PER_S;
	}
	return ts;
}

static const char *dump_type(mode_t m)
{
	return S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : S_ISREG(m) ? "file" : NULL;
}

/* One line for path. */
static int dump_line(mc_client *c, const char *path, const struct stat *st, FILE *out)
{
	char target[4096];
	const char *type = dump_type(st->st_mode);
	if (!type)
		return 0; /* nothing else can be made by load */
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "path", path, "type",
	                      type, "mode", (json_int_t)(st->st_mode & 07777), "uid",
	                      (json_int_t)st->st_uid, "gid", (json_int_t)st->st_gid, "size",
	                      (json_int_t)st->st_size, "mtime", ts_ns(&st->st_mtim), "atime",
	                      ts_ns(&st->st_atim), "ino", (json_int_t)st->st_ino, "nlink",
	                      (json_int_t)st->st_nlink);
	if (!o)
		return -ENOMEM;
	int rc = 0;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = mc_readlink(c, path, target, sizeof(target));
		if (n < 0)
			rc = -errno;
		else if (json_object_set_new(o, "target", json_stringn(target, (size_t)n)) != 0)
			rc = -ENOMEM;
	}
	char *text = rc ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!rc && !text)
		rc = -ENOMEM;
	if (!rc && fprintf(out, "%s\n", text) < 0)
		rc = -EIO;
	free(text);
	json_decref(o);
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names of the directory path into a malloc'd *out. */
static int dump_names(mc_client *c, const char *path, char ***out, size_t *n)
{
	char **v = NULL;
	size_t nv = 0, cap = 0;
	int rc = 0;
	MC_DIR *d = mc_opendir(c, path);
	if (!d)
		return -errno;
	struct dirent *e;
	errno = 0;
	while ((e = mc_readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (nv == cap) {
			size_t nc = cap ? 2 * cap : 32;
			char **nvv = realloc(v, nc * sizeof(*v));
			if (!nvv) {
				rc = -ENOMEM;
				break;
			}
			v = nvv;
			cap = nc;
		}
		if (!(v[nv] = strdup(e->d_name))) {
			rc = -ENOMEM;
			break;
		}
		nv++;
		errno = 0;
	}
	if (rc == 0 && errno)
		rc = -errno;
	mc_closedir(d);
	if (rc) {
		while (nv > 0)
			free(v[--nv]);
		free(v);
		return rc;
	}
	if (nv > 0) /* v is NULL for an empty directory */
		qsort(v, nv, sizeof(*v), cmp_name);
	*out = v;
	*n = nv;
	return 0;
}

static int dump_walk(mc_client *c, const char *path, FILE *out, bool top)
{
	struct stat st;
	char **names = NULL;
	size_t n = 0;
	if (mc_lstat(c, path, &st) < 0)
		return !top && errno == ENOENT ? 0 : -errno;
	int rc = dump_line(c, path, &st, out);
	if (rc || !S_ISDIR(st.st_mode))
		return rc;
	rc = dump_names(c, path, &names, &n);
	if (rc)
		return !top && rc == -ENOENT ? 0 : rc;
	for (size_t i = 0; i < n; i++) {
		char *p = rc ? NULL : path_join(path, names[i]);
		if (!rc && !p)
			rc = -ENOMEM;
		if (!rc)
			rc = dump_walk(c, p, out, false);
		free(p);
		free(names[i]);
	}
	free(names);
	return rc;
}

int dump_tree(mc_client *c, const char *path, FILE *out)
{
	return dump_walk(c, path, out, true);
}

/* ---- load ----------------------------------------------------------------- */

struct link_ent {
	SLIST_ENTRY(link_ent) next;
	json_int_t ino;
	char path[];
};

struct dir_ent {
	SLIST_ENTRY(dir_ent) next; /* pushed at the head: deepest first */
	struct timespec times[2];
	char path[];
};

SLIST_HEAD(link_list, link_ent);
SLIST_HEAD(dir_list, dir_ent);

struct load {
	mc_client *c;
	const char *prog;
	unsigned long line;
	bool bad, failed;
	struct link_list links;
	struct dir_list dirs;
};

__attribute__((format(printf, 2, 3)))
static void load_error(struct load *l, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: line %lu: ", l->prog, l->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *link_find(struct load *l, json_int_t ino)
{
	struct link_ent *e;
	SLIST_FOREACH(e, &l->links, next)
		if (e->ino == ino)
			return e->path;
	return NULL;
}

/* Make the entry at dest; 0 or -errno (reported by the caller). */
static int load_make(struct load *l, const char *dest, const char *type, json_t *o,
                     bool *linked)
{
	mc_client *c = l->c;
	mode_t mode = (mode_t)json_integer_value(json_object_get(o, "mode"));
	json_int_t ino = json_integer_value(json_object_get(o, "ino"));
	struct stat st;
	*linked = false;
	if (strcmp(type, "dir") == 0) {
		if (mc_mkdir(c, dest, mode) == 0)
			return 0;
		int err = errno;
		return err == EEXIST && mc_lstat(c, dest, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -err;
	}
	if (strcmp(type, "symlink") == 0) {
		const char *t = json_string_value(json_object_get(o, "target"));
		return mc_symlink(c, t, dest) < 0 ? -errno : 0;
	}
	const char *first = link_find(l, ino);
	if (first) {
		*linked = true;
		return mc_link(c, first, dest) < 0 ? -errno : 0;
	}
	int fd = mc_open(c, dest, O_CREAT | O_EXCL | O_WRONLY, mode);
	if (fd < 0)
		return -errno;
	off_t size = (off_t)json_integer_value(json_object_get(o, "size"));
	int rc = size > 0 && mc_ftruncate(c, fd, size) < 0 ? -errno : 0;
	if (mc_close(c, fd) < 0 && rc == 0)
		rc = -errno;
	json_t *nlink = json_object_get(o, "nlink");
	if (rc || (json_is_integer(nlink) && json_integer_value(nlink) < 2))
		return rc; /* no other name will link to it */
	struct link_ent *e = malloc(sizeof(*e) + strlen(dest) + 1);
	if (!e)
		return -ENOMEM;
	e->ino = ino;
	strcpy(e->path, dest);
	SLIST_INSERT_HEAD(&l->links, e, next);
	return 0;
}

/* Mode, owner (as root) and times of the made entry at dest. */
static int load_attrs(struct load *l, const char *dest, const char *type, json_t *o)
{
	mc_client *c = l->c;
	struct timespec times[2] = {
		ns_ts(json_integer_value(json_object_get(o, "atime"))),
		ns_ts(json_integer_value(json_object_get(o, "mtime"))),
	};
	if (strcmp(type, "symlink") == 0)
		return 0; /* chmod, chown and utimens would follow it */
	if (mc_chmod(c, dest, (mode_t)json_integer_value(json_object_get(o, "mode"))) < 0)
		return -errno;
	if (geteuid() == 0 &&
	    mc_chown(c, dest, (uid_t)json_integer_value(json_object_get(o, "uid")),
	             (gid_t)json_integer_value(json_object_get(o, "gid"))) < 0)
		return -errno;
	if (strcmp(type, "dir") != 0)
		return mc_utimens(c, dest, times) < 0 ? -errno : 0;
	struct dir_ent *d = malloc(sizeof(*d) + strlen(dest) + 1);
	if (!d)
		return -ENOMEM;
	d->times[0] = times[0];
	d->times[1] = times[1];
	strcpy(d->path, dest);
	SLIST_INSERT_HEAD(&l->dirs, d, next);
	return 0;
}

/* Whether o is an entry load can make: the members it needs, typed. */
static const char *load_check(json_t *o)
{
	static const char *const ints[] = { "mode", "uid", "gid", "size", "mtime", "atime", "ino" };
	if (!json_is_object(o))
		return "not a JSON object";
	const char *path = json_string_value(json_object_get(o, "path"));
	const char *type = json_string_value(json_object_get(o, "type"));
	if (!path || path[0] != '/')
		return "\"path\" is not an absolute path";
	if (!type || (strcmp(type, "dir") && strcmp(type, "file") && strcmp(type, "symlink")))
		return "\"type\" is not \"dir\", \"file\" or \"symlink\"";
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (!json_is_integer(json_object_get(o, ints[i])))
			return "a member of mode, uid, gid, size, mtime, atime, ino is not an integer";
	json_int_t mode = json_integer_value(json_object_get(o, "mode"));
	if (mode < 0 || mode > 07777)
		return "\"mode\" is not permission bits (0..07777)";
	if (json_integer_value(json_object_get(o, "size")) < 0)
		return "\"size\" is negative";
	if (strcmp(type, "symlink") == 0 && !json_is_string(json_object_get(o, "target")))
		return "a symlink without a string \"target\"";
	return NULL;
}

static void load_one(struct load *l, const char *text, const char *prefix)
{
	json_error_t jerr;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		load_error(l, "invalid JSON: %s", jerr.text);
		l->bad = true;
		return;
	}
	const char *why = load_check(o);
	if (why) {
		load_error(l, "%s", why);
		l->bad = true;
		json_decref(o);
		return;
	}
	const char *path = json_string_value(json_object_get(o, "path"));
	const char *type = json_string_value(json_object_get(o, "type"));
	char *dest = NULL;
	if (prefix && *prefix)
		dest = strcmp(path, "/") == 0 ? strdup(prefix) : path_join(prefix, path + 1);
	else
		dest = strdup(path);
	bool linked;
	int rc = dest ? load_make(l, dest, type, o, &linked) : -ENOMEM;
	if (rc == 0 && !linked)
		rc = load_attrs(l, dest, type, o);
	if (rc) {
		load_error(l, "%s: %s", dest ? dest : path, strerror(-rc));
		l->failed = true;
	}
	free(dest);
	json_decref(o);
}

int load_stream(mc_client *c, FILE *in, const char *prefix, const char *prog)
{
	struct load l = { .c = c, .prog = prog };
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	SLIST_INIT(&l.links);
	SLIST_INIT(&l.dirs);
	while ((n = getline(&buf, &cap, in)) >= 0) {
		l.line++;
		if (n > 0 && buf[n - 1] == '\n')
			buf[--n] = '\0';
		if (n == 0)
			continue;
		load_one(&l, buf, prefix);
	}
	if (ferror(in)) {
		fprintf(stderr, "%s: stdin: %s\n", prog, strerror(errno));
		l.failed = true;
	}
	free(buf);
	while (!SLIST_EMPTY(&l.dirs)) {
		struct dir_ent *d = SLIST_FIRST(&l.dirs);
		SLIST_REMOVE_HEAD(&l.dirs, next);
		if (mc_utimens(c, d->path, d->times) < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, d->path, strerror(errno));
			l.failed = true;
		}
		free(d);
	}
	while (!SLIST_EMPTY(&l.links)) {
		struct link_ent *e = SLIST_FIRST(&l.links);
		SLIST_REMOVE_HEAD(&l.links, next);
		free(e);
	}
	return l.bad ? -EINVAL : l.failed ? -EIO : 0;
}
