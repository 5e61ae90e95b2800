/* mknod.c - mknod(2) on the namespace: the type checks of the kernel's
 * may_mknod(), then the common create path of ns.c (which refuses devices
 * to all but root after the directory's checks, as vfs_mknod()). */
#include <errno.h>
#include <sys/stat.h>

#include "mknod.h"
#include "ns_impl.h"

/* may_mknod(): which types mknod(2) makes. */
static int mknod_type(uint32_t mode, uint32_t *type)
{
	switch (mode & S_IFMT) {
	case 0:
		*type = S_IFREG;
		return 0;
	case S_IFREG: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		*type = mode & S_IFMT;
		return 0;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
}

int ns_mknod(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t mode,
             uint64_t rdev)
{
	uint32_t type;
	int rc = mknod_type(mode, &type);
	if (rc < 0)
		return rc;
	bool dev = type == S_IFCHR || type == S_IFBLK;
	return ns_create_path(ns, c, path, len, type | (mode & 07777), NULL, 0, dev ? rdev : 0,
	                      NULL);
}
