/* fusefloor.c - the floor of any FUSE file system on this machine: a
 * low-level FUSE file system whose namespace lives in its own memory and
 * answers every request at once, so that what a benchmark measures on it
 * is the kernel's crossings and wakeups alone.
 *
 *   fusefloor MOUNTPOINT [-f] [-o FUSE-OPTION,...]
 *   fusermount3 -u MOUNTPOINT
 *
 * tests/external/mdtest.sh mounts it beside mcachefs and runs the same
 * mdtest on both and on tmpfs: a rate mcachefs could reach only if mcache
 * cost nothing. It is given every advantage a FUSE file system can take:
 * it is the only writer, so the kernel may cache names (positive and
 * negative) and attributes for an hour, and the mount has no
 * default_permissions (no attribute refresh before a permission check).
 * It holds directories and empty regular files only (mknod, symlink, link,
 * rename, write and xattrs answer ENOSYS or EPERM), which is what mdtest -F
 * and rm -rf need; permissions are not checked. Not a test and not part of
 * mcache: a measuring stick.
 *
 * Invariants:
 *  1. nodes[ino] is the inode ino (1 the root); an inode is never freed,
 *     a removed one keeps nlink 0 (the kernel may still hold it).
 *  2. Every name is in the hash table under (parent, name) and on its
 *     parent's child list, or in neither. One mutex covers everything.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT 3600.0
#define NBUCKETS (1u << 20)

struct node {
	uint64_t parent;    /* 0 for the root and for a removed node */
	char *name;
	mode_t mode;
	uint32_t nlink;
	uint32_t nchildren; /* directories */
	uid_t uid;
	gid_t gid;
	struct timespec atime, mtime, ctime;
	uint64_t hnext;     /* hash chain (ino, 0 ends it) */
	uint64_t first, next, prev; /* child list */
};

static struct {
	pthread_mutex_t mu;
	struct node *nodes;
	size_t nnodes, cap;
	uint64_t *buckets;
} fs = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint32_t hash_name(uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ parent;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32)) & (NBUCKETS - 1);
}

static uint64_t find(uint64_t parent, const char *name)
{
	for (uint64_t i = fs.buckets[hash_name(parent, name)]; i; i = fs.nodes[i].hnext)
		if (fs.nodes[i].parent == parent && strcmp(fs.nodes[i].name, name) == 0)
			return i;
	return 0;
}

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

/* A new inode named name in parent (invariant 2); 0 when out of memory. */
static uint64_t node_add(uint64_t parent, const char *name, mode_t mode, const struct fuse_ctx *ctx)
{
	if (fs.nnodes == fs.cap) {
		size_t cap = fs.cap ? fs.cap * 2 : 1024;
		struct node *n = realloc(fs.nodes, cap * sizeof(*n));
		if (!n)
			return 0;
		fs.nodes = n;
		fs.cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return 0;
	uint64_t ino = fs.nnodes++;
	struct node *n = &fs.nodes[ino], *p = &fs.nodes[parent];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->name = copy;
	n->mode = mode;
	n->nlink = S_ISDIR(mode) ? 2 : 1;
	n->uid = ctx->uid;
	n->gid = ctx->gid;
	now(&n->atime);
	n->mtime = n->ctime = n->atime;
	uint32_t b = hash_name(parent, name);
	n->hnext = fs.buckets[b];
	fs.buckets[b] = ino;
	n->next = p->first;
	if (p->first)
		fs.nodes[p->first].prev = ino;
	p->first = ino;
	p->nchildren++;
	if (S_ISDIR(mode))
		p->nlink++;
	p->mtime = p->ctime = n->atime;
	return ino;
}

static void node_remove(uint64_t ino)
{
	struct node *n = &fs.nodes[ino], *p = &fs.nodes[n->parent];
	uint64_t *link = &fs.buckets[hash_name(n->parent, n->name)];
	while (*link != ino)
		link = &fs.nodes[*link].hnext;
	*link = n->hnext;
	if (n->prev)
		fs.nodes[n->prev].next = n->next;
	else
		p->first = n->next;
	if (n->next)
		fs.nodes[n->next].prev = n->prev;
	p->nchildren--;
	if (S_ISDIR(n->mode))
		p->nlink--;
	now(&p->mtime);
	p->ctime = p->mtime;
	n->ctime = p->mtime;
	n->nlink = 0;
	n->parent = 0;
	free(n->name);
	n->name = NULL;
}

static void fill_attr(uint64_t ino, struct stat *st)
{
	const struct node *n = &fs.nodes[ino];
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_blksize = 4096;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
}

static void fill_entry(uint64_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->generation = 1;
	e->entry_timeout = TIMEOUT;
	e->attr_timeout = TIMEOUT;
	if (ino)
		fill_attr(ino, &e->attr);
}

/* A live directory, or a negative errno. */
static int dir_check(fuse_ino_t ino)
{
	if (ino >= fs.nnodes || fs.nodes[ino].nlink == 0)
		return -ENOENT;
	return S_ISDIR(fs.nodes[ino].mode) ? 0 : -ENOTDIR;
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	pthread_mutex_lock(&fs.mu);
	int err = dir_check(parent);
	if (err == 0)
		fill_entry(find(parent, name), &e); /* ino 0: a cached negative entry */
	pthread_mutex_unlock(&fs.mu);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int err = 0;
	pthread_mutex_lock(&fs.mu);
	if (ino >= fs.nnodes)
		err = ENOENT;
	else
		fill_attr(ino, &st);
	pthread_mutex_unlock(&fs.mu);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
	struct stat st;
	pthread_mutex_lock(&fs.mu);
	if (ino >= fs.nnodes) {
		pthread_mutex_unlock(&fs.mu);
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct node *n = &fs.nodes[ino];
	if (to_set & FUSE_SET_ATTR_MODE)
		n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		n->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME)
		n->atime = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME)
		n->mtime = attr->st_mtim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		now(&n->atime);
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		now(&n->mtime);
	now(&n->ctime);
	fill_attr(ino, &st);
	pthread_mutex_unlock(&fs.mu);
	fuse_reply_attr(req, &st, TIMEOUT);
}

/* mkdir and create: the new name's entry in e, or a negative errno. */
static int make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                struct fuse_entry_param *e)
{
	pthread_mutex_lock(&fs.mu);
	int err = dir_check(parent);
	if (err == 0 && find(parent, name))
		err = -EEXIST;
	if (err == 0) {
		uint64_t ino = node_add(parent, name, mode, fuse_req_ctx(req));
		if (ino)
			fill_entry(ino, e);
		else
			err = -ENOMEM;
	}
	pthread_mutex_unlock(&fs.mu);
	return err;
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fuse_entry_param e;
	int err = make(req, parent, name, S_IFDIR | (mode & 07777), &e);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	int err = S_ISREG(mode) ? make(req, parent, name, S_IFREG | (mode & 07777), &e) : -EPERM;
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_create(req, &e, fi);
}

/* unlink and rmdir. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int dir)
{
	pthread_mutex_lock(&fs.mu);
	int err = dir_check(parent);
	uint64_t ino = err ? 0 : find(parent, name);
	if (err == 0 && !ino)
		err = -ENOENT;
	else if (ino && dir && !S_ISDIR(fs.nodes[ino].mode))
		err = -ENOTDIR;
	else if (ino && !dir && S_ISDIR(fs.nodes[ino].mode))
		err = -EISDIR;
	else if (ino && dir && fs.nodes[ino].nchildren)
		err = -ENOTEMPTY;
	if (err == 0)
		node_remove(ino);
	pthread_mutex_unlock(&fs.mu);
	fuse_reply_err(req, -err);
}

static void ff_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void ff_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 1);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	fuse_reply_buf(req, NULL, 0); /* every file is empty */
}

/* A listing: the children's inode numbers, taken at opendir. */
struct listing {
	size_t n;
	uint64_t ino[];
};

static void ff_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	pthread_mutex_lock(&fs.mu);
	int err = dir_check(ino);
	struct listing *l = NULL;
	if (err == 0) {
		l = malloc(sizeof(*l) + fs.nodes[ino].nchildren * sizeof(l->ino[0]));
		if (l) {
			l->n = 0;
			for (uint64_t c = fs.nodes[ino].first; c; c = fs.nodes[c].next)
				l->ino[l->n++] = c;
		} else {
			err = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&fs.mu);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fi->fh = (uintptr_t)l;
	fuse_reply_open(req, fi);
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
	const struct listing *l = (const struct listing *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	pthread_mutex_lock(&fs.mu);
	/* Offsets: 1 after ".", 2 after "..", i + 3 after the child l->ino[i]. */
	for (size_t i = (size_t)off; i < l->n + 2; i++) {
		const char *name = i == 0 ? "." : "..";
		struct stat st = {.st_ino = ino, .st_mode = S_IFDIR};
		if (i >= 2) {
			const struct node *c = &fs.nodes[l->ino[i - 2]];
			if (c->nlink == 0)
				continue; /* removed since opendir */
			name = c->name;
			st.st_ino = l->ino[i - 2];
			st.st_mode = c->mode;
		}
		size_t len = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	pthread_mutex_unlock(&fs.mu);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void ff_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void ff_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = {.f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255};
	pthread_mutex_lock(&fs.mu);
	sv.f_files = fs.nnodes;
	pthread_mutex_unlock(&fs.mu);
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ff_ops = {
	.lookup = ff_lookup,
	.getattr = ff_getattr,
	.setattr = ff_setattr,
	.mkdir = ff_mkdir,
	.create = ff_create,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.open = ff_open,
	.read = ff_read,
	.opendir = ff_opendir,
	.readdir = ff_readdir,
	.releasedir = ff_releasedir,
	.statfs = ff_statfs,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	int rc = 1;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		return 1;
	if (opts.show_help || !opts.mountpoint) {
		printf("usage: %s MOUNTPOINT [-f] [-o FUSE-OPTION,...]\n"
		       "A FUSE file system that answers every request from its own memory:\n"
		       "the floor of any FUSE file system's rates on this machine.\n",
		       argv[0]);
		fuse_cmdline_help();
		return opts.show_help ? 0 : 2;
	}
	fs.buckets = calloc(NBUCKETS, sizeof(*fs.buckets));
	fs.cap = 1024;
	fs.nodes = calloc(fs.cap, sizeof(*fs.nodes));
	if (!fs.buckets || !fs.nodes) {
		fprintf(stderr, "fusefloor: out of memory\n");
		goto out;
	}
	/* ino 0 is no inode; the root, 1, has no name and no parent. */
	fs.nnodes = 2;
	fs.nodes[1].mode = S_IFDIR | 0777;
	fs.nodes[1].nlink = 2;
	fs.nodes[1].uid = getuid();
	fs.nodes[1].gid = getgid();
	now(&fs.nodes[1].atime);
	fs.nodes[1].mtime = fs.nodes[1].ctime = fs.nodes[1].atime;
	struct fuse_session *se = fuse_session_new(&args, &ff_ops, sizeof(ff_ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_session;
	fuse_daemonize(opts.foreground);
	struct fuse_loop_config cfg = {.clone_fd = 0, .max_idle_threads = 10};
	rc = opts.singlethread ? fuse_session_loop(se) : fuse_session_loop_mt(se, &cfg);
	fuse_session_unmount(se);
out_session:
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
