/* mcachefs_dir.c - mcachefs directory listings: readdir and readdirplus
 * over an MC_DIR, with "." and ".." first. Offsets: 1 is ".", 2 is "..",
 * 3 + k the k-th entry of the listing; a read at another offset than where
 * the handle stands reopens the listing and skips to it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mcachefs.h"

struct fs_dirh {
	uint32_t magic;              /* FS_DIR_MAGIC */
	uint64_t ino;
	MC_DIR *d;                   /* NULL until the first read past ".." */
	mc_client *c;
	off_t pos;                   /* offset of the last entry returned */
	bool pending;                /* ent was read but did not fit */
	struct dirent ent;
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_req r;
	char path[FS_PATH_MAX];
	struct fs_dirh *h = NULL;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_path(r.fs, ino, path, sizeof(path));
	if (rc == 0 && !(h = calloc(1, sizeof(*h))))
		rc = -ENOMEM;
	if (rc == 0 && !(h->d = mc_opendir(r.c, path)))
		rc = errno ? -errno : -EIO;
	if (rc < 0) {
		free(h);
		fuse_reply_err(req, -rc);
		return;
	}
	h->magic = FS_DIR_MAGIC;
	h->ino = ino;
	h->c = r.c;
	fi->fh = (uint64_t)(uintptr_t)h;
	/* With the watch, the kernel keeps listings too: a change by another
	 * client invalidates the directory's inode, and with it the listing,
	 * once the listing in progress is in (mcachefs_watch.c). */
	if (atomic_load(&r.fs->watching)) {
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
	}
	if (fuse_reply_open(req, fi) != 0) {
		mc_closedir(h->d);
		free(h);
	}
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct fs_dirh *h = (struct fs_dirh *)(uintptr_t)fi->fh;
	if (h->d)
		mc_closedir(h->d);
	free(h);
	fuse_reply_err(req, 0);
}

/* The next entry of the listing, or NULL (errno 0 at the end). */
static struct dirent *dir_next(struct fs_dirh *h)
{
	if (h->pending) {
		h->pending = false;
		return &h->ent;
	}
	errno = 0;
	struct dirent *e = mc_readdir(h->d);
	if (e)
		h->ent = *e;
	return e ? &h->ent : NULL;
}

/* Reopen and skip to offset off. */
static int dir_seek(struct fs_req *r, struct fs_dirh *h, off_t off)
{
	char path[FS_PATH_MAX];
	int rc = fs_path(r->fs, h->ino, path, sizeof(path));
	if (rc < 0)
		return rc;
	MC_DIR *d = mc_opendir(r->c, path);
	if (!d)
		return errno ? -errno : -EIO;
	mc_closedir(h->d);
	h->d = d;
	h->c = r->c;
	h->pending = false;
	h->pos = off < 2 ? off : 2;
	while (h->pos < off) {
		if (!dir_next(h))
			return errno ? -errno : 0;
		h->pos++;
	}
	return 0;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 struct fuse_file_info *fi, bool plus)
{
	struct fs_req r;
	struct fs_dirh *h = (struct fs_dirh *)(uintptr_t)fi->fh;
	char *buf = NULL;
	size_t used = 0;
	int rc = fs_begin(&r, req);
	if (rc == 0 && off != h->pos)
		rc = dir_seek(&r, h, off);
	if (rc == 0 && !(buf = malloc(size)))
		rc = -ENOMEM;
	char dir[FS_PATH_MAX], path[FS_PATH_MAX];
	if (rc == 0 && plus)
		rc = fs_path(r.fs, ino, dir, sizeof(dir));
	while (rc == 0) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		const char *name;
		if (h->pos < 2) {
			name = h->pos == 0 ? "." : "..";
			e.attr.st_ino = h->pos == 0 ? ino : FUSE_ROOT_ID; /* ".." is not tracked */
			e.attr.st_mode = S_IFDIR;
		} else {
			struct dirent *d = dir_next(h);
			if (!d) {
				rc = errno ? -errno : 0;
				break;
			}
			name = d->d_name;
			e.attr.st_ino = d->d_ino;
			e.attr.st_mode = (mode_t)DTTOIF(d->d_type);
		}
		bool ref = false;
		size_t n;
		if (plus && h->pos >= 2) {
			size_t dl = strlen(dir), nl = strlen(name);
			if (dl + 1 + nl + 1 > sizeof(path)) {
				rc = -ENAMETOOLONG;
				break;
			}
			memcpy(path, dir, dl);
			if (dl > 1)
				path[dl++] = '/';
			memcpy(path + dl, name, nl + 1);
			if (mc_lstat(r.c, path, &e.attr) == 0) {
				/* Referenced before the reply is built: its
				 * timeouts are decided with it (invariant 5). */
				if (fs_node_ref(r.fs, ino, name, &e.attr, &e) < 0) {
					rc = -ENOMEM;
					break;
				}
				e.ino = (fuse_ino_t)e.attr.st_ino;
				ref = true;
			}
			/* else: gone since it was listed; named without attributes */
		}
		if (plus)
			n = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, h->pos + 1);
		else
			n = fuse_add_direntry(req, buf + used, size - used, name, &e.attr, h->pos + 1);
		if (n > size - used) {
			if (ref)
				fs_node_forget(r.fs, e.ino, 1);
			if (h->pos >= 2)
				h->pending = true;
			break;
		}
		used += n;
		h->pos++;
	}
	if (rc < 0 && used == 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, true);
}

void fs_dir_ops(struct fuse_lowlevel_ops *ops)
{
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->readdirplus = op_readdirplus;
	ops->releasedir = op_releasedir;
}
