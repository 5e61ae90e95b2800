/* bench_util.c - small helpers shared by the mcbench modules: full pipe I/O, names, recursive delete. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void make_name(char *out, char c, unsigned long i, unsigned len)
{
	out[0] = c;
	snprintf(out + 1, len, "%0*lu", (int)len - 1, i);
}

/* nftw callback state for kernel recursive deletes (one per process). */
struct win *kernel_rmtree_win;
static uint64_t rm_count;
static int rm_errno;
static char rm_errpath[PATH_MAX];

static int rm_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (unlinkat(AT_FDCWD, path, type == FTW_DP ? AT_REMOVEDIR : 0) < 0) {
		rm_errno = errno;
		snprintf(rm_errpath, sizeof(rm_errpath), "%s", path);
		return 1;
	}
	rm_count++;
	if (kernel_rmtree_win)
		win_tick(kernel_rmtree_win, 1);
	return 0;
}

int kernel_rmtree(const char *path, uint64_t *count)
{
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return -errno;
	rm_count = 0;
	rm_errno = 0;
	r = nftw(path, rm_cb, 64, FTW_DEPTH | FTW_PHYS);
	if (r != 0)
		return rm_errno ? -rm_errno : -EIO;
	if (count)
		*count = rm_count;
	return 0;
}

const char *kernel_rmtree_errpath(void)
{
	return rm_errpath;
}

int scratch_remove(const char *dir)
{
	int r = kernel_rmtree(dir, NULL);

	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "mcbench: removing %s: %s\n", dir, strerror(-r));
		return -1;
	}
	return 0;
}
