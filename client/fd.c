/* fd.c - libmcache's descriptors: mc_open and the calls on what it returns.
 * A descriptor is an index into the client's table (struct mc_fdslot),
 * private to the client; the server knows the handle behind it.
 *
 * Slot states (every change under the client's mu):
 *
 *   free ──client_fd_reserve()──► reserved ──client_fd_take()──► used
 *     ▲                              │                             │
 *     └──────client_fd_release()─────┴─────────────────────────────┘
 *
 * Invariants:
 *  1. A reserved slot belongs to one mc_open in progress: no other call
 *     hands it out or finds a handle in it, so two threads opening at once
 *     get different descriptors.
 *  2. A used slot's handle is released on the server exactly once: mc_close
 *     frees the slot and queues the handle in one locked step.
 */
#include "client_impl.h"

#include <stdlib.h>
#include <string.h>

int client_fd_reserve(mc_client *c, int *fd)
{
	int err = 0;
	size_t i;
	client_lock(c);
	for (i = 0; i < c->nfds; i++)
		if (!c->fds[i].used && !c->fds[i].reserved)
			goto found;
	if (c->nfds >= MC_CLIENT_FD_MAX) {
		err = -EMFILE;
		goto out;
	}
	size_t n = c->nfds ? c->nfds * 2 : 16;
	if (n > MC_CLIENT_FD_MAX)
		n = MC_CLIENT_FD_MAX;
	struct mc_fdslot *p = realloc(c->fds, n * sizeof(*p));
	if (!p) {
		err = -ENOMEM;
		goto out;
	}
	memset(p + c->nfds, 0, (n - c->nfds) * sizeof(*p));
	c->fds = p;
	i = c->nfds;
	c->nfds = n;
found:
	c->fds[i].reserved = true;
	*fd = (int)i;
out:
	client_unlock(c);
	return err;
}

void client_fd_take(mc_client *c, int fd, uint64_t handle, uint64_t ino)
{
	client_lock(c);
	c->fds[fd].handle = handle;
	c->fds[fd].ino = ino;
	c->fds[fd].used = true;
	c->fds[fd].reserved = false;
	client_unlock(c);
}

int client_fd_handle(mc_client *c, int fd, uint64_t *handle, uint64_t *ino)
{
	int err = -EBADF;
	client_lock(c);
	if (fd >= 0 && (size_t)fd < c->nfds && c->fds[fd].used) {
		*handle = c->fds[fd].handle;
		if (ino)
			*ino = c->fds[fd].ino;
		err = 0;
	}
	client_unlock(c);
	return err;
}

void client_fd_release(mc_client *c, int fd)
{
	client_lock(c);
	c->fds[fd] = (struct mc_fdslot){ 0 };
	client_unlock(c);
}

int mc_open(mc_client *c, const char *path, int flags, mode_t mode)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	int fd;
	int err = client_check(c);
	if (err < 0)
		return client_fail(err);
	err = path_check_c(c, path, NULL);
	if (err < 0)
		return client_fail(err);
	/* Reserve the slot first so a server handle is never left orphaned. */
	err = client_fd_reserve(c, &fd);
	if (err < 0)
		return client_fail(err);
	op.code = MCACHE__OP_CODE__OP_OPEN;
	path_set(&op.path, path);
	op.flags = (uint32_t)flags;
	op.mode = (uint32_t)mode;
	err = client_op(c, &op, &rsp);
	if (err < 0) {
		client_fd_release(c, fd);
		return client_fail(err);
	}
	client_fd_take(c, fd, rsp->results[0]->handle,
	               rsp->results[0]->attr ? rsp->results[0]->attr->ino : 0);
	mcache__response__free_unpacked(rsp, NULL);
	return fd;
}

int mc_creat(mc_client *c, const char *path, mode_t mode)
{
	return mc_open(c, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int client_fd_op(mc_client *c, int fd, Mcache__Op *op, Mcache__Response **out)
{
	int err = client_check(c);
	if (err < 0)
		return err;
	err = client_fd_handle(c, fd, &op->handle, NULL);
	if (err < 0)
		return err;
	return client_op(c, op, out);
}

int mc_close(mc_client *c, int fd)
{
	int err = client_check(c);
	if (err == -EFAULT || err == -ECHILD)
		return client_fail(err);
	client_lock(c);
	if (fd < 0 || (size_t)fd >= c->nfds || !c->fds[fd].used) {
		client_unlock(c);
		return client_fail(-EBADF);
	}
	uint64_t handle = c->fds[fd].handle;
	/* As close(2): the descriptor is gone even when the call failed. */
	c->fds[fd] = (struct mc_fdslot){ 0 };
	if (err == 0)
		err = do_client_close_handle(c, handle);
	client_unlock(c);
	return err < 0 ? client_fail(err) : 0;
}

int mc_fstat(mc_client *c, int fd, struct stat *st)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	uint64_t handle, ino = 0;
	if (!st)
		return client_fail(-EFAULT);
	int err = client_check(c);
	if (err == 0 && client_fd_handle(c, fd, &handle, &ino) == 0 && ino && client_local(c)) {
		/* The inode is held in the cache while the descriptor is open. */
		err = client_view_result(c, view_stat_ino(c->view, ino, st));
		if (err <= 0)
			return err < 0 ? client_fail(err) : 0;
		err = 0;
	}
	op.code = MCACHE__OP_CODE__OP_FSTAT;
	err = client_fd_op(c, fd, &op, &rsp);
	if (err == 0)
		err = client_take_attr(rsp, st);
	return err < 0 ? client_fail(err) : 0;
}

int mc_ftruncate(mc_client *c, int fd, off_t length)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	int err = client_check(c);
	if (err < 0)
		return client_fail(err);
	if (length < 0)
		return client_fail(-EINVAL);
	op.code = MCACHE__OP_CODE__OP_FTRUNCATE;
	op.size = (uint64_t)length;
	err = client_fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}

int mc_fsync(mc_client *c, int fd)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_FSYNC;
	int err = client_fd_op(c, fd, &op, &rsp);
	if (err < 0)
		return client_fail(err);
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}
