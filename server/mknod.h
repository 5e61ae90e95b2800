/* mknod.h - mknod(2) on the namespace: FIFOs, sockets, character and block
 * devices (with their device number) and regular files, as metadata. */
#ifndef MC_MKNOD_H
#define MC_MKNOD_H

#include <stddef.h>
#include <stdint.h>

struct ns;
struct cred;

/* mknod(2) of path with mode (type and permission bits; type 0 is a regular
 * file) and, for devices, rdev. Errors as Linux gives them: EINVAL (an
 * unknown type), EPERM (a directory type; a device made by a caller other
 * than root, after the directory checks), EEXIST, ENOENT, ENOTDIR, EACCES,
 * ENAMETOOLONG, ELOOP, ENOSPC. */
int ns_mknod(struct ns *ns, const struct cred *c, const char *path, size_t len, uint32_t mode,
             uint64_t rdev);

#endif
