/* mcachefs_meta.c - mcachefs namespace operations: lookup, attributes,
 * creation and removal of names, directories and their listings. Every
 * operation runs under the caller's credentials and is checked by mcache
 * (mcachefs.h invariant 3); lookups and attributes come from shared memory
 * through libmcache, with no request to the server once cached. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mcachefs.h"

static void reply_rc(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

static int errno_rc(void)
{
	return errno ? -errno : -EIO;
}

int fs_stat_ino(struct fs_req *r, uint64_t ino, struct stat *st)
{
	char path[FS_PATH_MAX];
	int rc = fs_path(r->fs, ino, path, sizeof(path));
	if (rc < 0)
		return rc;
	if (mc_lstat(r->c, path, st) < 0)
		return errno == ENOENT ? -ESTALE : errno_rc();
	return (uint64_t)st->st_ino == ino ? 0 : -ESTALE;
}

void fs_reply_entry(fuse_req_t req, struct fs *fs, uint64_t parent, const char *name,
                    const struct stat *st)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	int rc = fs_node_ref(fs, parent, name, st, &e);
	if (rc < 0) {
		reply_rc(req, rc);
		return;
	}
	e.ino = (fuse_ino_t)st->st_ino;
	e.attr = *st;
	if (fuse_reply_entry(req, &e) != 0)
		fs_node_forget(fs, e.ino, 1);
}

/* Path of name in parent, lstat'd after op succeeded: the entry reply. */
static void reply_new(fuse_req_t req, struct fs_req *r, uint64_t parent, const char *name,
                      const char *path)
{
	struct stat st;
	if (mc_lstat(r->c, path, &st) < 0) {
		reply_rc(req, errno_rc());
		return;
	}
	fs_reply_entry(req, r->fs, parent, name, &st);
}

/* fs_begin() for an op on name in parent: its path into path (size bytes)
 * and its lstat into *st. 0 or -errno. */
static int child_begin(struct fs_req *r, fuse_req_t req, fuse_ino_t parent, const char *name,
                       char *path, size_t size, struct stat *st)
{
	int rc = fs_begin(r, req);
	if (rc == 0)
		rc = fs_child_path(r->fs, parent, name, path, size);
	if (rc == 0 && mc_lstat(r->c, path, st) < 0)
		rc = errno_rc();
	return rc;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_req r;
	char path[FS_PATH_MAX];
	struct stat st;
	int rc = child_begin(&r, req, parent, name, path, sizeof(path), &st);
	if (rc < 0) {
		reply_rc(req, rc);   /* ENOENT unreplied as an entry: not cached */
		return;
	}
	fs_reply_entry(req, r.fs, parent, name, &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_node_forget(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fuse_req_userdata(req);
	for (size_t i = 0; i < count; i++)
		fs_node_forget(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void reply_attr(fuse_req_t req, struct fs *fs, const struct stat *st)
{
	fs_node_seen(fs, st);
	fuse_reply_attr(req, st, fs_attr_timeout(fs));
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_req r;
	struct stat st;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_stat_ino(&r, ino, &st);
	if (rc == -ESTALE)
		rc = fi ? fs_file_fstat(fi, &st) : fs_open_fstat(ino, &st); /* open, unlinked */
	if (rc < 0)
		reply_rc(req, rc);
	else
		reply_attr(req, r.fs, &st);
}

/* The permission bits of st against the caller, as the kernel checks them
 * (root: read and write always, execute when some x bit is set or a
 * directory): 0 or -EACCES. */
static int caller_may(const struct fs_req *r, const struct stat *st, int mask)
{
	unsigned want = (unsigned)mask & 7u, have;
	if (r->uid == 0) {
		have = 6u | ((S_ISDIR(st->st_mode) || (st->st_mode & 0111)) ? 1u : 0u);
	} else if (r->uid == st->st_uid) {
		have = (st->st_mode >> 6) & 7u;
	} else {
		bool member = r->gid == st->st_gid;
		for (int i = 0; !member && i < r->ngroups; i++)
			member = r->groups[i] == st->st_gid;
		have = member ? (st->st_mode >> 3) & 7u : st->st_mode & 7u;
	}
	return (want & have) == want ? 0 : -EACCES;
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fs_req r;
	struct stat st;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_stat_ino(&r, ino, &st);
	if (rc == 0 && mask != F_OK)
		rc = caller_may(&r, &st, mask);
	reply_rc(req, rc);
}

/* chmod. The kernel asks, as the caller, to clear S_ISUID and S_ISGID when
 * a file is written, truncated or given away (file_remove_privs); FUSE
 * cannot tell that from a chmod(2). A caller who may write the file may
 * drop those bits (a write would), so that change alone is made with the
 * mount's own credentials when the caller's are refused. */
static int set_mode(struct fs_req *r, uint64_t ino, const char *path, mode_t mode)
{
	if (mc_chmod(r->c, path, mode) == 0)
		return 0;
	int rc = errno_rc();
	struct stat st;
	if (rc != -EPERM || fs_stat_ino(r, ino, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) != mode ||
	    caller_may(r, &st, W_OK) < 0)
		return rc;
	struct mc_cred as = { .uid = r->uid, .gid = r->gid, .ngroups = (size_t)r->ngroups,
		              .groups = r->groups };
	mc_cred_set(NULL);
	rc = mc_chmod(r->c, path, mode) < 0 ? errno_rc() : 0;
	mc_cred_set(&as);
	return rc;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
	struct fs_req r;
	char path[FS_PATH_MAX];
	struct stat st;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_path(r.fs, ino, path, sizeof(path));
	/* The inode itself: a symlink's own owner and times, never its
	 * target's (there is no lchmod: the kernel never asks for it). */
	if (rc == 0 && (to_set & FUSE_SET_ATTR_MODE))
		rc = set_mode(&r, ino, path, attr->st_mode & 07777);
	if (rc == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	    mc_lchown(r.c, path, (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
	             (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1) < 0)
		rc = errno_rc();
	if (rc == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		rc = fs_file_truncate(&r, ino, path, fi, attr->st_size);
	if (rc == 0 && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec t[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			t[0].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_ATIME)
			t[0] = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			t[1].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_MTIME)
			t[1] = attr->st_mtim;
		if (mc_lutimens(r.c, path, t) < 0)
			rc = errno_rc();
	}
	if (rc == 0)
		rc = fs_stat_ino(&r, ino, &st);
	if (rc == -ESTALE && fi)
		rc = fs_file_fstat(fi, &st);
	if (rc < 0)
		reply_rc(req, rc);
	else
		reply_attr(req, r.fs, &st);
}

/* What make_name() makes. */
enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

/* mknod, mkdir and symlink: name is made in parent (mc_mknod with mode and
 * rdev, mc_mkdir with mode's permission bits, or mc_symlink to link) and
 * replied as a new entry. */
static void make_name(fuse_req_t req, fuse_ino_t parent, const char *name, enum make_kind kind,
                      mode_t mode, dev_t rdev, const char *link)
{
	struct fs_req r;
	char path[FS_PATH_MAX];
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_child_path(r.fs, parent, name, path, sizeof(path));
	if (rc == 0) {
		int err = kind == MAKE_DIR  ? mc_mkdir(r.c, path, mode & 07777)
		          : kind == MAKE_NODE ? mc_mknod(r.c, path, mode, rdev)
		                              : mc_symlink(r.c, link, path);
		if (err < 0)
			rc = errno_rc();
	}
	if (rc < 0)
		reply_rc(req, rc);
	else
		reply_new(req, &r, parent, name, path);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev)
{
	make_name(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_name(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_name(req, parent, name, MAKE_SYMLINK, 0, 0, link);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fs_req r;
	char from[FS_PATH_MAX], to[FS_PATH_MAX];
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_path(r.fs, ino, from, sizeof(from));
	if (rc == 0)
		rc = fs_child_path(r.fs, newparent, newname, to, sizeof(to));
	if (rc == 0 && mc_link(r.c, from, to) < 0)
		rc = errno_rc();
	if (rc < 0)
		reply_rc(req, rc);
	else
		reply_new(req, &r, newparent, newname, to);
}

/* unlink and rmdir: the name goes; its node is detached. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	struct fs_req r;
	char path[FS_PATH_MAX];
	struct stat st;
	int rc = child_begin(&r, req, parent, name, path, sizeof(path), &st);
	if (rc == 0 && (dir ? mc_rmdir(r.c, path) : mc_unlink(r.c, path)) < 0)
		rc = errno_rc();
	if (rc == 0) {
		fs_node_unname(r.fs, parent, name, (uint64_t)st.st_ino);
		if (!dir)
			fs_data_unlinked(r.fs, &st);
	}
	reply_rc(req, rc);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, false);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, true);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
	struct fs_req r;
	char from[FS_PATH_MAX], to[FS_PATH_MAX];
	struct stat st, old;
	bool replaced = false;
	if (flags) {
		/* mcache has no RENAME_NOREPLACE or RENAME_EXCHANGE. */
		fuse_reply_err(req, EINVAL);
		return;
	}
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_child_path(r.fs, parent, name, from, sizeof(from));
	if (rc == 0)
		rc = fs_child_path(r.fs, newparent, newname, to, sizeof(to));
	if (rc == 0 && mc_lstat(r.c, from, &st) < 0)
		rc = errno_rc();
	if (rc == 0)
		replaced = mc_lstat(r.c, to, &old) == 0 && old.st_ino != st.st_ino;
	if (rc == 0 && mc_rename(r.c, from, to) < 0)
		rc = errno_rc();
	if (rc == 0) {
		if (replaced) {
			fs_node_unname(r.fs, newparent, newname, (uint64_t)old.st_ino);
			if (!S_ISDIR(old.st_mode))
				fs_data_unlinked(r.fs, &old);
		}
		fs_node_rename(r.fs, (uint64_t)st.st_ino, newparent, newname);
	}
	reply_rc(req, rc);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_req r;
	char path[FS_PATH_MAX], target[FS_PATH_MAX];
	ssize_t n = -1;
	int rc = fs_begin(&r, req);
	if (rc == 0)
		rc = fs_path(r.fs, ino, path, sizeof(path));
	if (rc == 0 && (n = mc_readlink(r.c, path, target, sizeof(target) - 1)) < 0)
		rc = errno_rc();
	if (rc < 0) {
		reply_rc(req, rc);
		return;
	}
	target[n] = '\0';
	fuse_reply_readlink(req, target);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct fs *fs = fuse_req_userdata(req);
	struct statvfs sv;
	if (fstatvfs(fs->data_fd, &sv) < 0)
		memset(&sv, 0, sizeof(sv));
	/* Space is the backing directory's; inodes are not bounded. */
	sv.f_files = 1ull << 32;
	sv.f_ffree = sv.f_favail = 1ull << 31;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	struct fs_req r;
	int rc = fs_begin(&r, req);
	if (rc == 0 && mc_sync(r.c) < 0)
		rc = errno_rc();
	reply_rc(req, rc);
}

void fs_meta_ops(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = op_lookup;
	ops->forget = op_forget;
	ops->forget_multi = op_forget_multi;
	ops->getattr = op_getattr;
	ops->setattr = op_setattr;
	ops->mknod = op_mknod;
	ops->mkdir = op_mkdir;
	ops->symlink = op_symlink;
	ops->link = op_link;
	ops->unlink = op_unlink;
	ops->rmdir = op_rmdir;
	ops->rename = op_rename;
	ops->readlink = op_readlink;
	ops->statfs = op_statfs;
	ops->access = op_access;
	ops->fsyncdir = op_fsyncdir;
	fs_dir_ops(ops);
}
