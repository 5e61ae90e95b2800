/* restart.c - warm restart (restart.h): the state file beside a segment
 * file. The file is written to PATH.state.tmp and renamed, so a reader
 * sees a whole one or none; it holds a magic, its format, the segment
 * layout version, the store's uuid and last batch, the segment's image
 * (struct shm_image) and an FNV-1a checksum of all that, then the pages'
 * bookkeeping (struct shm_page, one a page of the segment) and its own
 * checksum. */
#include "restart.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <libgen.h>
#include <unistd.h>

#include "mc_shm.h"
#include "ns.h"
#include "shm.h"
#include "store.h"

#define RESTART_MAGIC  0x4d435752u  /* "MCWR" */
#define RESTART_FORMAT 2u   /* 2: the pages' bookkeeping follows */

struct restart_file {
	uint32_t magic, format;
	uint32_t shm_version;
	uint32_t warmed;              /* the warm-up was over */
	uint8_t uuid[16];
	uint64_t last_seq;
	struct shm_image img;
	uint64_t sum;                 /* FNV-1a of everything above */
};

static uint64_t fnv(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int state_path(const char *path, const char *suffix, char out[PATH_MAX])
{
	int n = snprintf(out, PATH_MAX, "%s%s", path, suffix);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Read exactly len bytes: 0, -ESTALE when the file ends first, or -errno. */
static int read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ESTALE;
		got += (size_t)n;
	}
	return 0;
}

/* Write exactly len bytes: 0 or -errno (-EIO for a write that took none). */
static int write_full(int fd, const void *buf, size_t len)
{
	for (size_t put = 0; put < len;) {
		ssize_t n = write(fd, (const char *)buf + put, len - put);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		put += (size_t)n;
	}
	return 0;
}

/* Read and remove the state file: its header in rf and the pages'
 * bookkeeping in *pg (malloc'd, img.size / MC_PAGE_SIZE entries; the caller
 * frees it). -ESTALE: truncated, or not a file of this format. */
/* Make a rename in PATH's directory durable. Returns 0 or -errno. */
static int dir_sync(const char *path)
{
	char dir[PATH_MAX];
	int err = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
}

static int state_take(const char *path, struct restart_file *rf, struct shm_page **pg)
{
	char sp[PATH_MAX];
	uint64_t sum;
	size_t n = 0;
	int err = state_path(path, ".state", sp);
	if (err)
		return err;
	*pg = NULL;
	int fd = open(sp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = read_full(fd, rf, sizeof(*rf));
	if (err == 0 && (rf->magic != RESTART_MAGIC || rf->format != RESTART_FORMAT ||
	                 rf->img.size > MC_SHM_MAX_SIZE))
		err = -ESTALE;
	if (err == 0) {
		n = (size_t)(rf->img.size >> MC_PAGE_SHIFT) * sizeof(**pg);
		*pg = malloc(n ? n : 1);
		if (!*pg)
			err = -ENOMEM;
	}
	if (err == 0)
		err = read_full(fd, *pg, n);
	if (err == 0)
		err = read_full(fd, &sum, sizeof(sum));
	if (err == 0 && sum != fnv(*pg, n))
		err = -ESTALE;
	close(fd);
	if (unlink(sp) < 0 && err == 0)
		err = -errno;
	if (err) {
		free(*pg);
		*pg = NULL;
	}
	return err;
}

int restart_attach(const char *path, uint64_t size, struct store *st, struct shm **out,
                   bool *warmed, const char **why)
{
	struct restart_file rf;
	struct store_meta meta;
	struct shm_page *pg;
	*why = NULL;
	int err = state_take(path, &rf, &pg);
	if (err == -ESTALE)
		*why = "the state file is truncated or not one this server wrote";
	if (err)
		return err;
	err = store_get_meta(st, &meta);
	if (err)
		goto out;
	size &= ~(uint64_t)(MC_PAGE_SIZE - 1);
	if (rf.sum != fnv(&rf, offsetof(struct restart_file, sum)))
		*why = "the state file is not one this server wrote";
	else if (rf.shm_version != MC_SHM_VERSION)
		*why = "the segment layout version changed";
	else if (rf.img.size != size)
		*why = "--cache-size changed";
	else if (memcmp(rf.uuid, meta.uuid, sizeof(rf.uuid)) != 0)
		*why = "the segment belongs to another store";
	else if (rf.last_seq != meta.last_seq)
		*why = "the store changed since the segment was saved";
	if (*why) {
		err = -ESTALE;
		goto out;
	}
	struct shm *s;
	err = shm_attach(path, &rf.img, pg, &s);
	if (err == -ESTALE)
		*why = "the segment file is not the one saved";
	if (err)
		goto out;
	if (atomic_load_explicit(&s->hdr->committed_seq, memory_order_acquire) != meta.last_seq) {
		*why = "the segment's committed batch is not the store's";
		shm_destroy(s);
		err = -ESTALE;
		goto out;
	}
	*warmed = rf.warmed != 0;
	*out = s;
out:
	free(pg);
	return err;
}

int restart_save(const char *path, struct shm *s, struct ns *ns, struct store *st, bool warmed,
                 const char **why)
{
	struct restart_file rf;
	struct store_meta meta;
	char sp[PATH_MAX], tmp[PATH_MAX];
	*why = ns_restart_blocker(ns);
	if (*why)
		return -EBUSY;
	int err = store_get_meta(st, &meta);
	if (err)
		return err;
	if (atomic_load_explicit(&s->hdr->committed_seq, memory_order_acquire) != meta.last_seq) {
		*why = "the segment's committed batch is not the store's";
		return -EBUSY;
	}
	/* On a file system that is not memory, the segment reaches the disk
	 * before the file that vouches for it. */
	if (msync(s->base, s->size, MS_SYNC) < 0)
		return -errno;
	memset(&rf, 0, sizeof(rf));
	rf.magic = RESTART_MAGIC;
	rf.format = RESTART_FORMAT;
	rf.shm_version = MC_SHM_VERSION;
	rf.warmed = warmed;
	memcpy(rf.uuid, meta.uuid, sizeof(rf.uuid));
	rf.last_seq = meta.last_seq;
	shm_image_get(s, &rf.img);
	rf.sum = fnv(&rf, offsetof(struct restart_file, sum));
	if ((err = state_path(path, ".state", sp)) || (err = state_path(path, ".state.tmp", tmp)))
		return err;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t pgn = (size_t)s->hdr->npages * sizeof(*s->pg);
	uint64_t pgsum = fnv(s->pg, pgn);
	err = write_full(fd, &rf, sizeof(rf));
	if (err == 0)
		err = write_full(fd, s->pg, pgn);
	if (err == 0)
		err = write_full(fd, &pgsum, sizeof(pgsum));
	if (err == 0 && fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (err == 0 && rename(tmp, sp) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	else
		err = dir_sync(sp);
	return err;
}
