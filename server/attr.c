/* attr.c - attribute changes: chmod, chown, utimensat and truncate, with
 * Linux's ownership and permission rules. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "extent_ns.h"
#include "log.h"
#include "ns_impl.h"

/* ---- attributes ---------------------------------------------------------- */

void set_size(struct ns *ns, mc_off_t off, uint64_t size)
{
	mc_time_t now = mc_time_from_ns(now_ns());
	INODE_EDIT(ns, off, {
		ie_->u.size = size;
		ie_->mtime = now;
		ie_->ctime = now;
	});
	inode_changed(ns, off);
}

/* Resolve path (following symlinks) under the lock, then run fn on it. */
/* with_inode() on the last component itself when follow is false (a
 * symlink is changed, not its target). */
static int with_inode_at(struct ns *ns, const struct cred *c, const char *path, size_t len,
                         bool follow,
                         int (*fn)(struct ns *, const struct cred *, mc_off_t, const void *),
                         const void *arg);

static int with_inode(struct ns *ns, const struct cred *c, const char *path, size_t len,
                      int (*fn)(struct ns *, const struct cred *, mc_off_t, const void *),
                      const void *arg)
{
	return with_inode_at(ns, c, path, len, true, fn, arg);
}

static int with_inode_at(struct ns *ns, const struct cred *c, const char *path, size_t len,
                         bool follow,
                         int (*fn)(struct ns *, const struct cred *, mc_off_t, const void *),
                         const void *arg)
{
	struct nd nd;
	struct reclaim r;
	mc_off_t off;
	int rc;
	pthread_mutex_lock(&ns->lock);
	reclaim_begin(ns, &r);
	do {
		nd_init(&nd, ns, c);
		rc = ns_journal_room(ns);
		if (rc == 0)
			rc = walk_path(&nd, path, len, follow, &off);
		if (rc == 0)
			rc = fn(ns, c, off, arg);
		nd_free(&nd);
	} while (do_reclaim_retry(ns, rc, &r));
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

static int do_chmod(struct ns *ns, const struct cred *c, mc_off_t off, const void *arg)
{
	uint32_t mode = *(const uint32_t *)arg & 07777;
	struct mc_inode *i = inode_at(ns->shm, off);
	if (c->uid != 0 && c->uid != i->uid)
		return -EPERM;
	if (c->uid != 0 && !in_group(c, i->gid))
		mode &= ~(uint32_t)S_ISGID;
	mc_time_t now = mc_time_from_ns(now_ns());
	INODE_EDIT(ns, off, {
		ie_->mode = (uint16_t)((ie_->mode & S_IFMT) | mode);
		ie_->ctime = now;
	});
	inode_changed(ns, off);
	return 0;
}

int ns_chmod(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t mode)
{
	return with_inode(ns, c, path, len, do_chmod, &mode);
}

static int do_chown(struct ns *ns, const struct cred *c, mc_off_t off, const void *arg)
{
	const uint32_t *ug = arg;
	struct mc_inode *i = inode_at(ns->shm, off);
	uint32_t uid = ug[0], gid = ug[1];
	if (c->uid != 0) {
		if (uid != (uint32_t)-1 && !(c->uid == i->uid && uid == i->uid))
			return -EPERM;
		if (gid != (uint32_t)-1 &&
		    !(c->uid == i->uid && (gid == i->gid || in_group(c, gid))))
			return -EPERM;
	}
	/* chown_common(): any chown of a non-directory, even (-1, -1), kills
	 * setuid, and setgid where setattr_should_drop_sgid() says so (group
	 * exec set, or a caller outside the file's group); changing the mode
	 * that way needs the owner (or root). */
	uint16_t kill = 0;
	if (!S_ISDIR(i->mode)) {
		kill = i->mode & S_ISUID;
		if ((i->mode & S_ISGID) &&
		    ((i->mode & S_IXGRP) || (c->uid != 0 && !in_group(c, i->gid))))
			kill |= S_ISGID;
	}
	if (kill && c->uid != 0 && c->uid != i->uid)
		return -EPERM;
	mc_time_t now = mc_time_from_ns(now_ns());
	INODE_EDIT(ns, off, {
		if (uid != (uint32_t)-1)
			ie_->uid = uid;
		if (gid != (uint32_t)-1)
			ie_->gid = gid;
		ie_->mode &= (uint16_t)~kill;
		ie_->ctime = now;
	});
	inode_changed(ns, off);
	return 0;
}

int ns_chown(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t uid,
             uint32_t gid)
{
	uint32_t ug[2] = { uid, gid };
	return with_inode(ns, c, path, len, do_chown, ug);
}

int ns_lchown(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t uid,
              uint32_t gid)
{
	uint32_t ug[2] = { uid, gid };
	return with_inode_at(ns, c, path, len, false, do_chown, ug);
}

static int do_utimens(struct ns *ns, const struct cred *c, mc_off_t off, const void *arg)
{
	const struct timespec *t = arg;
	struct mc_inode *i = inode_at(ns->shm, off);
	bool touch = t[0].tv_nsec == UTIME_NOW && t[1].tv_nsec == UTIME_NOW;
	if (c->uid != 0 && c->uid != i->uid) {
		if (!touch)
			return -EPERM;
		if (permission(c, i, MAY_WRITE) < 0)
			return -EACCES;
	}
	mc_time_t now = mc_time_from_ns(now_ns());
	mc_time_t v[2];
	for (int k = 0; k < 2; k++)   /* clamped to the segment's range */
		v[k] = t[k].tv_nsec == UTIME_NOW ? now : mc_time_make(t[k].tv_sec, t[k].tv_nsec);
	INODE_EDIT(ns, off, {
		if (t[0].tv_nsec != UTIME_OMIT)
			ie_->atime = v[0];
		if (t[1].tv_nsec != UTIME_OMIT)
			ie_->mtime = v[1];
		ie_->ctime = now;
	});
	inode_changed(ns, off);
	return 0;
}

int ns_utimens(struct ns *ns, const struct cred *c, const char *path, size_t len,
               const struct timespec times[2])
{
	return ns_utimens_at(ns, c, path, len, times, true);
}

int ns_utimens_at(struct ns *ns, const struct cred *c, const char *path, size_t len,
                  const struct timespec times[2], bool follow)
{
	struct timespec t[2];
	for (int k = 0; k < 2; k++) {
		t[k] = times ? times[k] : (struct timespec){ 0, UTIME_NOW };
		if (t[k].tv_nsec != UTIME_NOW && t[k].tv_nsec != UTIME_OMIT &&
		    (t[k].tv_nsec < 0 || t[k].tv_nsec > 999999999))
			return -EINVAL;
	}
	/* Nothing to do: like utimensat(2), do not even look at the path. */
	if (t[0].tv_nsec == UTIME_OMIT && t[1].tv_nsec == UTIME_OMIT)
		return 0;
	return with_inode_at(ns, c, path, len, follow, do_utimens, t);
}

static int do_truncate(struct ns *ns, const struct cred *c, mc_off_t off, const void *arg)
{
	struct mc_inode *i = inode_at(ns->shm, off);
	if (S_ISDIR(i->mode))
		return -EISDIR;
	if (!S_ISREG(i->mode))
		return -EINVAL;
	int rc = permission(c, i, MAY_WRITE);
	if (rc == 0)
		rc = do_extent_truncate(ns, off, *(const uint64_t *)arg);
	if (rc < 0)
		return rc;
	set_size(ns, off, *(const uint64_t *)arg);
	return 0;
}

int ns_truncate(struct ns *ns, const struct cred *c, const char *path, size_t len, int64_t size)
{
	if (size < 0)
		return -EINVAL;
	uint64_t sz = (uint64_t)size;
	return with_inode(ns, c, path, len, do_truncate, &sz);
}

int ns_truncate_ino(struct ns *ns, uint64_t ino, bool writable, int64_t size)
{
	if (size < 0)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	int rc = ns_journal_room(ns);
	mc_off_t off = rc == 0 ? inode_find(ns->shm, ino) : 0;
	if (rc == 0 && !off)
		rc = -EBADF;
	else if (rc == 0 && (!writable || !S_ISREG(inode_at(ns->shm, off)->mode)))
		rc = -EINVAL;
	else if (rc == 0 && (rc = do_extent_truncate(ns, off, (uint64_t)size)) == 0)
		set_size(ns, off, (uint64_t)size);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

