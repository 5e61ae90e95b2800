/* mcachefs_data.c - mcachefs open files: metadata through an mc_open
 * descriptor (permissions, size, times), data in the backing directory, one
 * file per inode number, created at the first write. Each write records
 * its range in the file's extent map (logical offset = backing offset) and
 * marks it MC_RANGE_DIRTY in the extent state; fsync makes the backing file
 * durable, clears the dirty ranges and waits for mcache (mc_fsync).
 *
 * Invariants:
 *  1. A byte below the mcache size that no write reached reads as zero
 *     (the backing file is sparse, or shorter, or absent).
 *  2. The backing file is removed when the inode's last name goes; an open
 *     file keeps its data through its descriptor until released.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/queue.h>
#include <string.h>
#include <unistd.h>

#include "mcachefs.h"

struct fs_file {
	uint32_t magic;              /* FS_FILE_MAGIC */
	uint64_t ino;
	mc_client *c;                /* the client mfd belongs to */
	int mfd;                     /* mc_open descriptor */
	int dfd;                     /* backing file, -1 until needed */
	bool writable;
	pthread_mutex_t mu;          /* guards dfd's creation */
	LIST_ENTRY(fs_file) link;    /* in open_files */
};

/* Every open file, to answer fstat(2) of a file whose last name went: the
 * kernel asks getattr by inode number only, and an unlinked inode has no
 * path (mcachefs.h invariant 2). */
static LIST_HEAD(, fs_file) open_files = LIST_HEAD_INITIALIZER(open_files);
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;

int fs_open_fstat(uint64_t ino, struct stat *st)
{
	int rc = -ESTALE;
	pthread_mutex_lock(&open_mu);
	struct fs_file *f;
	LIST_FOREACH(f, &open_files, link) {
		if (f->ino == ino) {
			rc = mc_fstat(f->c, f->mfd, st) < 0 ? (errno ? -errno : -EIO) : 0;
			break;
		}
	}
	pthread_mutex_unlock(&open_mu);
	return rc;
}

static void file_free(struct fs_file *f)
{
	pthread_mutex_lock(&open_mu);
	LIST_REMOVE(f, link);
	pthread_mutex_unlock(&open_mu);
	mc_close(f->c, f->mfd);
	if (f->dfd >= 0)
		close(f->dfd);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

static int errno_rc(void)
{
	return errno ? -errno : -EIO;
}

void fs_data_name(uint64_t ino, char *buf, size_t size)
{
	snprintf(buf, size, "%" PRIu64, ino);
}

void fs_data_unlinked(struct fs *fs, const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || st->st_nlink > 1)
		return;
	char name[32];
	fs_data_name((uint64_t)st->st_ino, name, sizeof(name));
	unlinkat(fs->data_fd, name, 0);   /* absent when never written */
}

/* The backing file, opened (created when create) once. */
static int file_data(struct fs *fs, struct fs_file *f, bool create, int *out)
{
	int rc = 0;
	pthread_mutex_lock(&f->mu);
	if (f->dfd < 0) {
		char name[32];
		fs_data_name(f->ino, name, sizeof(name));
		f->dfd = openat(fs->data_fd, name, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		if (f->dfd < 0 && !(errno == ENOENT && !create))
			rc = -errno;
	}
	*out = f->dfd;
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static void open_file(fuse_req_t req, uint64_t parent, const char *name, fuse_ino_t ino,
                      struct fuse_file_info *fi, mode_t mode, bool create)
{
	struct fs_req r;
	char path[FS_PATH_MAX];
	struct fs_file *f = NULL;
	struct stat st;
	int flags = fi->flags & (O_ACCMODE | O_TRUNC | O_EXCL | O_CREAT | O_NOFOLLOW);
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = create ? fs_child_path(r.fs, parent, name, path, sizeof(path))
		            : fs_path(r.fs, ino, path, sizeof(path));
	if (rc == 0 && !(f = calloc(1, sizeof(*f))))
		rc = -ENOMEM;
	if (rc == 0) {
		if (create)
			flags |= O_CREAT;
		f->mfd = mc_open(r.c, path, flags, mode & 07777);
		if (f->mfd < 0)
			rc = errno_rc();
	}
	if (rc == 0 && mc_fstat(r.c, f->mfd, &st) < 0) {
		rc = errno_rc();
		mc_close(r.c, f->mfd);
	}
	if (rc < 0) {
		free(f);
		fuse_reply_err(req, -rc);
		return;
	}
	f->magic = FS_FILE_MAGIC;
	f->ino = (uint64_t)st.st_ino;
	f->c = r.c;
	f->dfd = -1;
	f->writable = (flags & O_ACCMODE) != O_RDONLY;
	pthread_mutex_init(&f->mu, NULL);
	pthread_mutex_lock(&open_mu);
	LIST_INSERT_HEAD(&open_files, f, link);
	pthread_mutex_unlock(&open_mu);
	if ((flags & O_TRUNC) && st.st_size == 0) {
		int dfd;
		if (file_data(r.fs, f, false, &dfd) == 0 && dfd >= 0 && ftruncate(dfd, 0) < 0)
			rc = -errno;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = 0;
	if (create) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		if (fs_node_ref(r.fs, parent, name, &st, &e) < 0) {
			fuse_reply_err(req, ENOMEM);
			goto undo;
		}
		e.ino = (fuse_ino_t)st.st_ino;
		e.attr = st;
		if (fuse_reply_create(req, &e, fi) != 0) {
			fs_node_forget(r.fs, e.ino, 1);
			goto undo;
		}
		return;
	}
	if (fuse_reply_open(req, fi) == 0)
		return;
undo:
	file_free(f);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
	open_file(req, parent, name, 0, fi, mode, true);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	open_file(req, 0, NULL, ino, fi, 0, false);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	file_free((struct fs_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

int fs_file_fstat(struct fuse_file_info *fi, struct stat *st)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	if (!f || f->magic != FS_FILE_MAGIC)
		return -ESTALE;
	return mc_fstat(f->c, f->mfd, st) < 0 ? errno_rc() : 0;
}

int fs_file_truncate(struct fs_req *r, uint64_t ino, const char *path, struct fuse_file_info *fi,
                     off_t size)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	if (f && f->magic != FS_FILE_MAGIC)
		f = NULL;
	if (f ? mc_ftruncate(f->c, f->mfd, size) : mc_truncate(r->c, path, size))
		return errno_rc();
	/* mcache holds the size; the backing file only must not keep bytes
	 * past it (invariant 1). */
	char name[32];
	fs_data_name(ino, name, sizeof(name));
	int dfd = openat(r->fs->data_fd, name, O_WRONLY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = ftruncate(dfd, size) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	(void)ino;
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	struct fs *fs = fuse_req_userdata(req);
	struct stat st;
	if (mc_fstat(f->c, f->mfd, &st) < 0) {
		fuse_reply_err(req, errno ? errno : EIO);
		return;
	}
	if (off >= st.st_size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((off_t)size > st.st_size - off)
		size = (size_t)(st.st_size - off);
	char *buf = calloc(1, size ? size : 1);
	int dfd;
	int rc = buf ? file_data(fs, f, false, &dfd) : -ENOMEM;
	if (rc == 0 && dfd >= 0) {
		size_t got = 0;
		while (got < size) {
			ssize_t n = pread(dfd, buf + got, size - got, off + (off_t)got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = -errno;
				break;
			}
			if (n == 0)
				break;   /* past the backing file: zeros (invariant 1) */
			got += (size_t)n;
		}
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, size);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
	(void)ino;
	struct fs_req r;
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	struct stat st;
	int dfd = -1;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = file_data(r.fs, f, true, &dfd);
	size_t done = 0;
	while (rc == 0 && done < size) {
		ssize_t n = pwrite(dfd, buf + done, size - done, off + (off_t)done);
		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n == 0)
			rc = -EIO;   /* no progress: never spin on it */
		else if (n > 0)
			done += (size_t)n;
	}
	if (rc == 0 && size > 0) {
		struct mc_extent e = { .off = (uint64_t)off, .len = size, .phys = (uint64_t)off };
		if (mc_extent_set(f->c, f->mfd, &e) < 0 ||
		    mc_range_set(f->c, f->mfd, (uint64_t)off, (uint64_t)off + size - 1,
		                 MC_RANGE_DIRTY) < 0)
			rc = errno_rc();
	}
	/* Grow the size; a write that does not grow it still moves mtime. */
	if (rc == 0 && mc_fstat(f->c, f->mfd, &st) < 0)
		rc = errno_rc();
	if (rc == 0 && mc_ftruncate(f->c, f->mfd,
	                            off + (off_t)size > st.st_size ? off + (off_t)size
	                                                           : st.st_size) < 0)
		rc = errno_rc();
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	struct fs_req r;
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	int dfd = -1;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = file_data(r.fs, f, false, &dfd);
	if (rc == 0 && dfd >= 0 && (datasync ? fdatasync(dfd) : fsync(dfd)) < 0)
		rc = -errno;
	/* Durable now: the dirty ranges are clean. */
	if (rc == 0 && mc_range_clear(f->c, f->mfd, 0, UINT64_MAX, MC_RANGE_DIRTY) < 0)
		rc = errno_rc();
	if (rc == 0 && mc_fsync(f->c, f->mfd) < 0)
		rc = errno_rc();
	fuse_reply_err(req, -rc);
}

void fs_data_ops(struct fuse_lowlevel_ops *ops)
{
	ops->create = op_create;
	ops->open = op_open;
	ops->release = op_release;
	ops->read = op_read;
	ops->write = op_write;
	/* No flush: data is written through at once, and the kernel stops
	 * sending FLUSH (one request per close) after the first ENOSYS. */
	ops->fsync = op_fsync;
}
