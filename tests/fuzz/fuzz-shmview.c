/* fuzz-shmview.c - libFuzzer target for the client's shared-memory reader
 * (client/shmview.c): whatever the segment holds, view_init, view_stat,
 * view_stat_ino, view_readlink, view_opendir and view_readdir must neither
 * crash nor loop, and a listing must move forward.
 *
 * Input, byte 0: bit 0 picks the segment, bits 1-2 the caller (fuzz-tree.h
 * credentials), bit 3 follow, bits 4-7 the inode number view_stat_ino asks
 * for (minus one); the rest depends on the segment:
 *   real (bit 0 clear): byte 1 is a count n of patches, then n patches of
 *     4 bytes (page index modulo the pages in use, 16-bit offset in the
 *     page, the byte to write), then the path. The segment is a copy of
 *     one built by the server modules (the tree of fuzz-tree.h); the
 *     patches are undone after the input.
 *   random (bit 0 set): byte 1 picks one of a few fixed paths (low bits)
 *     and whether the header is made to pass view_init's first checks
 *     (bit 7: magic, version, size and npages set right); the rest is
 *     copied to the start of a zeroed segment of RAND_SEG_SIZE bytes.
 *
 * Termination: every call must return (libFuzzer's -timeout and the replay
 * driver's alarm catch a hang); a listing is read at most READDIR_CALLS
 * times and every call that does not end it must advance the cookie; every
 * entry's name is NUL-terminated after its namelen bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-tree.h"
#include "shm.h"
#include "shmview.h"

#define REAL_SEG_SIZE  (1u << 20)
#define RAND_SEG_SIZE  (4u * MC_PAGE_SIZE)
#define READDIR_CALLS  4096u
#define READDIR_BATCH  7u

static struct {
	struct fuzz_tree t;
	uint8_t *real;             /* copy of the tree's segment, patched per input */
	uint32_t real_pages;       /* pages handed out in it */
	uint8_t *rand;             /* the random segment */
	struct view *v;
	bool up;
} fx;

static const char *const fixed_paths[8] = {
	"/", "/a/b/c", "/a/lnk", "/d", "/a/dirlnk/", "/long", "/a/missing/x", "/loop/",
};

static void fx_at_exit(void)
{
	if (!fx.up)
		return;
	fuzz_tree_down(&fx.t);
	free(fx.real);
	free(fx.rand);
	free(fx.v);
	fx.up = false;
}

static void fx_up(void)
{
	fuzz_tree_up(&fx.t, REAL_SEG_SIZE);
	fz_check(fx.t.shm->size == REAL_SEG_SIZE);
	fx.real = aligned_alloc(MC_PAGE_SIZE, REAL_SEG_SIZE);
	fx.rand = aligned_alloc(MC_PAGE_SIZE, RAND_SEG_SIZE);
	fx.v = calloc(1, sizeof(*fx.v));
	fz_check(fx.real && fx.rand && fx.v);
	memcpy(fx.real, fx.t.shm->base, REAL_SEG_SIZE);
	fx.real_pages = fx.t.shm->next_page;
	fz_check(fx.real_pages > 0 && fx.real_pages <= REAL_SEG_SIZE / MC_PAGE_SIZE);
	fx.up = true;
	atexit(fx_at_exit);
}

/* List the directory d to its end or to READDIR_CALLS calls. */
static void list(struct view *v, struct view_dir *d)
{
	struct view_dirent ents[READDIR_BATCH];

	for (unsigned call = 0; call < READDIR_CALLS; call++) {
		unsigned n = 0;
		bool eof = false;
		uint64_t before = d->cookie;
		int rc = view_readdir(v, d, ents, READDIR_BATCH, &n, &eof);
		if (rc != 0)
			return;
		fz_check(n <= READDIR_BATCH);
		for (unsigned i = 0; i < n; i++) {
			/* A name as the server writes them, terminated after
			 * namelen bytes: a patched dentry with an empty name, or
			 * one holding a NUL or a slash, is a miss, never passed on. */
			fz_check(ents[i].namelen > 0);
			fz_check(ents[i].name[ents[i].namelen] == 0);
			fz_check(!memchr(ents[i].name, 0, ents[i].namelen));
			fz_check(!memchr(ents[i].name, '/', ents[i].namelen));
		}
		if (eof)
			return;
		/* Not at the end: the cursor moved, or the next call repeats
		 * this one forever. */
		if (d->cookie <= before)
			fprintf(stderr, "readdir: %u entries, cookie %llu -> %llu, not eof\n", n,
			        (unsigned long long)before, (unsigned long long)d->cookie);
		fz_check(d->cookie > before);
	}
}

/* Every reader call on path; each must return. */
static void read_all(struct view *v, const char *path, size_t len, bool follow, uint64_t ino)
{
	struct stat st;
	char buf[MC_SYMLINK_MAX];
	size_t blen = 0;
	struct view_dir d;

	(void)view_stat(v, path, len, follow, &st);
	(void)view_stat_ino(v, ino, &st);
	if (view_readlink(v, path, len, buf, sizeof(buf), &blen) == 0)
		fz_check(blen <= sizeof(buf));
	if (view_opendir(v, path, len, &d) == 0)
		list(v, &d);
}

static void set_cred(struct view *v, uint8_t sel)
{
	const struct cred *c = &fuzz_creds[sel & 3];
	v->cred.uid = c->uid;
	v->cred.gid = c->gid;
	v->cred.ngroups = c->ngroups;
	for (int i = 0; i < c->ngroups; i++)
		v->cred.groups[i] = c->groups[i];
}

struct patch {
	uint32_t off;
	uint8_t old;
};

static void run_real(const uint8_t *data, size_t size)
{
	struct patch p[255];
	size_t np = 0;

	if (size < 2)
		return;
	size_t want = data[1];
	size_t pos = 2;
	while (np < want && size - pos >= 4) {
		const uint8_t *q = data + pos;
		uint32_t off = (q[0] % fx.real_pages) * MC_PAGE_SIZE + ((uint32_t)q[1] | (uint32_t)q[2] << 8);
		p[np].off = off;
		p[np].old = fx.real[off];
		fx.real[off] = q[3];
		np++;
		pos += 4;
	}
	struct view *v = fx.v;
	memset(v, 0, sizeof(*v));
	if (view_init(v, fx.real, REAL_SEG_SIZE) == 0) {
		view_default_limits(&v->lim);
		set_cred(v, (uint8_t)(data[0] >> 1));
		read_all(v, (const char *)data + pos, size - pos, data[0] & 8, 1u + (data[0] >> 4));
	}
	while (np > 0) {
		np--;
		fx.real[p[np].off] = p[np].old;
	}
}

static void run_random(const uint8_t *data, size_t size)
{
	if (size < 2)
		return;
	size_t n = size - 2 < RAND_SEG_SIZE ? size - 2 : RAND_SEG_SIZE;
	memset(fx.rand, 0, RAND_SEG_SIZE);
	memcpy(fx.rand, data + 2, n);
	if (data[1] & 0x80) {
		struct mc_shm_header *h = (struct mc_shm_header *)fx.rand;
		h->magic = MC_SHM_MAGIC;
		h->version = MC_SHM_VERSION;
		h->size = RAND_SEG_SIZE;
		h->npages = RAND_SEG_SIZE / MC_PAGE_SIZE;
	}
	struct view *v = fx.v;
	memset(v, 0, sizeof(*v));
	if (view_init(v, fx.rand, RAND_SEG_SIZE) != 0)
		return;
	view_default_limits(&v->lim);
	set_cred(v, (uint8_t)(data[0] >> 1));
	const char *path = fixed_paths[data[1] & 7];
	read_all(v, path, strlen(path), data[0] & 8, 1u + (data[0] >> 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (!fx.up)
		fx_up();
	if (data[0] & 1)
		run_random(data, size);
	else
		run_real(data, size);
	return 0;
}
