/* restart.c - warm restart (restart.h): the state file beside a segment
 * file. The file is written to PATH.state.tmp and renamed, so a reader
 * sees a whole one or none; it holds a magic, its format, the segment
 * layout version, the store's uuid and last batch, the segment's image
 * (struct shm_image) and an FNV-1a checksum of all that. */
#include "restart.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mc_shm.h"
#include "ns.h"
#include "shm.h"
#include "store.h"

#define RESTART_MAGIC  0x4d435752u  /* "MCWR" */
#define RESTART_FORMAT 1u

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

/* Read and remove the state file. */
static int state_take(const char *path, struct restart_file *rf)
{
	char sp[PATH_MAX];
	int err = state_path(path, ".state", sp);
	if (err)
		return err;
	int fd = open(sp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, rf, sizeof(*rf));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (unlink(sp) < 0 && err == 0)
		err = -errno;
	if (err == 0 && n != (ssize_t)sizeof(*rf))
		err = -ESTALE;
	return err;
}

int restart_attach(const char *path, uint64_t size, struct store *st, struct shm **out,
                   bool *warmed, const char **why)
{
	struct restart_file rf;
	struct store_meta meta;
	*why = NULL;
	int err = state_take(path, &rf);
	if (err == -ESTALE)
		*why = "the state file is truncated";
	if (err)
		return err;
	err = store_get_meta(st, &meta);
	if (err)
		return err;
	size &= ~(uint64_t)(MC_PAGE_SIZE - 1);
	if (rf.magic != RESTART_MAGIC || rf.format != RESTART_FORMAT ||
	    rf.sum != fnv(&rf, offsetof(struct restart_file, sum)))
		*why = "the state file is not one this server wrote";
	else if (rf.shm_version != MC_SHM_VERSION)
		*why = "the segment layout version changed";
	else if (rf.img.size != size)
		*why = "--cache-size changed";
	else if (memcmp(rf.uuid, meta.uuid, sizeof(rf.uuid)) != 0)
		*why = "the segment belongs to another store";
	else if (rf.last_seq != meta.last_seq)
		*why = "the store changed since the segment was saved";
	if (*why)
		return -ESTALE;
	struct shm *s;
	err = shm_attach(path, &rf.img, &s);
	if (err == -ESTALE)
		*why = "the segment file is not the one saved";
	if (err)
		return err;
	if (atomic_load_explicit(&s->hdr->committed_seq, memory_order_acquire) != meta.last_seq) {
		*why = "the segment's committed batch is not the store's";
		shm_destroy(s);
		return -ESTALE;
	}
	*warmed = rf.warmed != 0;
	*out = s;
	return 0;
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
	ssize_t n = write(fd, &rf, sizeof(rf));
	if (n != (ssize_t)sizeof(rf))
		err = n < 0 ? -errno : -EIO;
	if (err == 0 && fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (err == 0 && rename(tmp, sp) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
