/* path.c - libmcache's path calls (mkdir, unlink, rename, stat, chmod ...).
 * stat, lstat and readlink are answered from shared memory when the cache
 * holds the answer (shmview.c); everything else is one RPC, and the server
 * decides every errno except the three checked here before sending
 * (EFAULT, ENOENT, ENAMETOOLONG). */
#include "client_impl.h"

#include <stdlib.h>
#include <string.h>

/* path_check with room for limit bytes, the NUL included. */
static int path_check_limit(const char *path, size_t limit, size_t *out_len)
{
	if (!path)
		return -EFAULT;
	size_t len = strnlen(path, limit);
	if (len == 0)
		return -ENOENT;
	if (len >= limit)
		return -ENAMETOOLONG;
	if (out_len)
		*out_len = len;
	return 0;
}

int path_check(const char *path, size_t *out_len)
{
	return path_check_limit(path, MC_CLIENT_PATH_MAX + 1, out_len);
}

int path_check_c(const mc_client *c, const char *path, size_t *out_len)
{
	return path_check_limit(path, c->path_max ? c->path_max : MC_CLIENT_PATH_MAX + 1, out_len);
}

int mc_path_max_set(mc_client *c, size_t max)
{
	int err = client_check(c);
	if (err == 0 && (max < MC_CLIENT_PATH_MAX + 1 || max > MC_LONG_PATH_MAX))
		err = -EINVAL;
	if (err < 0)
		return client_fail(err);
	c->path_max = max == MC_CLIENT_PATH_MAX + 1 ? 0 : (uint32_t)max;
	return 0;
}

void path_set(ProtobufCBinaryData *f, const char *path)
{
	f->data = (uint8_t *)path;
	f->len = strlen(path);
}

/* The checks every path call makes before sending. */
static int path_prep(const mc_client *c, const char *path, size_t *out_len)
{
	int err = client_check(c);
	return err < 0 ? err : path_check_c(c, path, out_len);
}

/* Send op (its path fields set) and expect nothing back but err. */
static int path_send(mc_client *c, Mcache__Op *op)
{
	int err = client_op_simple(c, op);
	return err < 0 ? client_fail(err) : 0;
}

/* One op with one path and no result but err. */
static int path_op(mc_client *c, Mcache__Op *op, const char *path)
{
	int err = path_prep(c, path, NULL);
	if (err < 0)
		return client_fail(err);
	path_set(&op->path, path);
	return path_send(c, op);
}

/* One op with two paths. */
static int path2_op(mc_client *c, Mcache__Op *op, const char *path, const char *path2)
{
	int err = path_prep(c, path, NULL);
	if (err == 0)   /* a symlink's target (path2) is stored, not walked: PATH_MAX */
		err = op->code == MCACHE__OP_CODE__OP_SYMLINK ? path_check(path2, NULL)
		                                               : path_check_c(c, path2, NULL);
	if (err < 0)
		return client_fail(err);
	path_set(&op->path, path);
	path_set(&op->path2, path2);
	return path_send(c, op);
}

int mc_mkdir(mc_client *c, const char *path, mode_t mode)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_MKDIR;
	op.mode = (uint32_t)mode;
	return path_op(c, &op, path);
}

int mc_mknod(mc_client *c, const char *path, mode_t mode, dev_t rdev)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_MKNOD;
	op.mode = (uint32_t)mode;
	op.rdev = (uint64_t)rdev;
	return path_op(c, &op, path);
}

int mc_rmdir(mc_client *c, const char *path)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_RMDIR;
	return path_op(c, &op, path);
}

int mc_unlink(mc_client *c, const char *path)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_UNLINK;
	return path_op(c, &op, path);
}

int mc_rmtree(mc_client *c, const char *path)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_RMTREE;
	return path_op(c, &op, path);
}

int mc_rename(mc_client *c, const char *oldpath, const char *newpath)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_RENAME;
	return path2_op(c, &op, oldpath, newpath);
}

int mc_link(mc_client *c, const char *oldpath, const char *newpath)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_LINK;
	return path2_op(c, &op, oldpath, newpath);
}

int mc_symlink(mc_client *c, const char *target, const char *linkpath)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_SYMLINK;
	/* The link goes in path, its target in path2 (see mcache.proto). The
	 * target obeys the same length rules as a path: 1..4095 bytes. */
	return path2_op(c, &op, linkpath, target);
}

ssize_t mc_readlink(mc_client *c, const char *path, char *buf, size_t size)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	size_t plen;
	int err = path_prep(c, path, &plen);
	if (err < 0)
		return client_fail(err);
	if (size == 0)
		return client_fail(-EINVAL); /* as readlink(2) */
	if (!buf)
		return client_fail(-EFAULT);
	if (client_local(c)) {
		size_t n;
		err = client_view_result(c, view_readlink(c->view, path, plen, buf, size, &n));
		if (err == 0)
			return (ssize_t)n;
		if (err < 0)
			return client_fail(err);
	}
	op.code = MCACHE__OP_CODE__OP_READLINK;
	path_set(&op.path, path);
	err = client_op(c, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	const ProtobufCBinaryData *d = &rsp->results[0]->data;
	size_t n = d->len < size ? d->len : size;
	if (n)
		memcpy(buf, d->data, n);
	mcache__response__free_unpacked(rsp, NULL);
	return (ssize_t)n;
}

/* stat and lstat through the server. Out of line: the shared-memory
 * answer above it builds no request. */
static __attribute__((noinline)) int stat_rpc(mc_client *c, Mcache__OpCode code, const char *path,
                                              struct stat *st)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = code;
	path_set(&op.path, path);
	int err = client_op(c, &op, &rsp);
	if (err == 0)
		err = client_take_attr(rsp, st);
	return err < 0 ? client_fail(err) : 0;
}

static int stat_op(mc_client *c, Mcache__OpCode code, const char *path, struct stat *st)
{
	size_t plen;
	int err = path_prep(c, path, &plen);
	if (err < 0)
		return client_fail(err);
	if (!st)
		return client_fail(-EFAULT);
	if (client_local(c)) {
		/* Answered from shared memory when the cache can vouch for it. */
		err = view_stat(c->view, path, plen, code != MCACHE__OP_CODE__OP_LSTAT, st);
		if (err == 0)
			return 0;
		if (err < 0)
			return client_fail(client_view_result(c, err));
	}
	return stat_rpc(c, code, path, st);
}

int mc_stat(mc_client *c, const char *path, struct stat *st)
{
	return stat_op(c, MCACHE__OP_CODE__OP_STAT, path, st);
}

int mc_lstat(mc_client *c, const char *path, struct stat *st)
{
	return stat_op(c, MCACHE__OP_CODE__OP_LSTAT, path, st);
}

int mc_chmod(mc_client *c, const char *path, mode_t mode)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_CHMOD;
	op.mode = (uint32_t)mode;
	return path_op(c, &op, path);
}

int mc_chown(mc_client *c, const char *path, uid_t uid, gid_t gid)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_CHOWN;
	op.uid = (uint32_t)uid;  /* (uid_t)-1 is 0xffffffff: unchanged */
	op.gid = (uint32_t)gid;
	return path_op(c, &op, path);
}

int mc_lchown(mc_client *c, const char *path, uid_t uid, gid_t gid)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_CHOWN;
	op.uid = (uint32_t)uid;
	op.gid = (uint32_t)gid;
	op.flags = AT_SYMLINK_NOFOLLOW;
	return path_op(c, &op, path);
}

static bool nsec_valid(long nsec)
{
	return (nsec >= 0 && nsec < 1000000000L) || nsec == UTIME_NOW || nsec == UTIME_OMIT;
}

static int utimens_op(mc_client *c, const char *path, const struct timespec times[2],
                      uint32_t flags)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_UTIMENS;
	op.flags = flags;
	if (!times) {
		op.atime_nsec = UTIME_NOW;
		op.mtime_nsec = UTIME_NOW;
	} else {
		int err = path_prep(c, path, NULL);
		if (err == 0 && (!nsec_valid(times[0].tv_nsec) || !nsec_valid(times[1].tv_nsec)))
			err = -EINVAL; /* as utimensat(2) */
		if (err < 0)
			return client_fail(err);
		op.atime_sec = (int64_t)times[0].tv_sec;
		op.atime_nsec = (uint32_t)times[0].tv_nsec;
		op.mtime_sec = (int64_t)times[1].tv_sec;
		op.mtime_nsec = (uint32_t)times[1].tv_nsec;
	}
	return path_op(c, &op, path);
}

int mc_utimens(mc_client *c, const char *path, const struct timespec times[2])
{
	return utimens_op(c, path, times, 0);
}

int mc_lutimens(mc_client *c, const char *path, const struct timespec times[2])
{
	return utimens_op(c, path, times, AT_SYMLINK_NOFOLLOW);
}

int mc_truncate(mc_client *c, const char *path, off_t length)
{
	Mcache__Op op = MCACHE__OP__INIT;
	int err = path_prep(c, path, NULL);
	if (err == 0 && length < 0)
		err = -EINVAL;
	if (err < 0)
		return client_fail(err);
	op.code = MCACHE__OP_CODE__OP_TRUNCATE;
	op.size = (uint64_t)length;
	return path_op(c, &op, path);
}
