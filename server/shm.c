/* shm.c - the shared-memory segment: a memfd carved into 64 KiB pages, each
 * page given for good to one slot type (type-stable memory).
 *
 * Invariants:
 *  1. page_types[p] changes only from MC_PT_FREE to a slot type, before any
 *     slot of page p is reachable.
 *  2. A slot's first word is its seq (dentry, inode, dirx); it is never reset,
 *     so a reader holding a stale offset always sees a different value.
 *     Free slots are linked through their second word. Blobs have no seq:
 *     they are covered by their owner's.
 *  3. Clients map the segment read-only: they get a read-only descriptor,
 *     and the memfd is sealed against new writable mappings (the server's
 *     own mapping predates the seal), against shrinking and growing (so a
 *     client can never fault on a truncated map) and against new seals.
 *  4. heartbeat_ms is written by the heartbeat thread only (and once at
 *     creation); a stopped thread leaves the last value, which clients then
 *     see age.
 *  5. Pages are given for good, so the last ones are kept back (one per
 *     slab that has none, at most 1/RESERVE_DIV of the segment) from the
 *     slabs that have some: a slot type first needed late, such as a long
 *     name's blob class, still gets a page, and eviction makes room in
 *     the others. shm_slab_room applies the same rule.
 *  6. With a path (--shm-path), the segment is a file instead, which
 *     outlives the process: it cannot be sealed, so it is created mode 0600
 *     (clients of other users get only the read-only descriptor), and a
 *     new one replaces an old one by unlink and create, never by
 *     truncation, so a client still mapping the old file never faults.
 *     shm_attach maps such a file again with the allocator state saved
 *     from the server that left it (struct shm_image, restart.c).
 */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"

#define RESERVE_DIV 16u   /* at most this fraction of the pages kept back (note 5) */

static const uint32_t fixed_sizes[] = {
	[SLAB_DENTRY] = sizeof(struct mc_dentry),
	[SLAB_INODE] = sizeof(struct mc_inode),
	[SLAB_DIRX] = sizeof(struct mc_dirx),
};
static const uint8_t fixed_types[] = {
	[SLAB_DENTRY] = MC_PT_DENTRY,
	[SLAB_INODE] = MC_PT_INODE,
	[SLAB_DIRX] = MC_PT_DIRX,
};

static uint32_t pow2_floor(uint64_t v)
{
	uint32_t p = 1;
	while ((uint64_t)p * 2 <= v && p < (1u << 30))
		p *= 2;
	return p;
}

static struct shm *shm_struct_new(void)
{
	struct shm *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->beat_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->beat_cv, &ca);
	pthread_condattr_destroy(&ca);
	s->fd = -1;
	s->ro_fd = -1;
	return s;
}

/* Map s->fd (size bytes) and open the read-only descriptor for clients. */
static int seg_map(struct shm *s, const char *path, uint64_t size)
{
	s->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		return -errno;
	}
	s->size = size;
	if (path) {
		s->ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	} else {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", s->fd);
		s->ro_fd = open(proc, O_RDONLY | O_CLOEXEC);
	}
	return s->ro_fd < 0 ? -errno : 0;
}

/* The backing of a new segment: a sealed memfd (path NULL, note 3), or a
 * new file at path (note 6). */
static int seg_new(struct shm *s, const char *path, uint64_t size)
{
	if (path) {
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		s->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} else {
		s->fd = memfd_create("mcache", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	}
	if (s->fd < 0)
		return -errno;
	if (ftruncate(s->fd, (off_t)size) < 0)
		return -errno;
	int err = seg_map(s, path, size);
	if (err)
		return err;
	/* Our mapping stays writable; nobody can make a new writable one. */
	if (!path && fcntl(s->fd, F_ADD_SEALS,
	                   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
		return -errno;
	return 0;
}

/* Point s at the tables the header describes. */
static void seg_bind(struct shm *s)
{
	struct mc_shm_header *h = s->base;
	s->hdr = h;
	s->page_types = (uint8_t *)s->base + h->page_types_off;
	s->dbuckets = (struct mc_bucket *)((char *)s->base + h->dbuckets_off);
	s->ibuckets = (struct mc_bucket *)((char *)s->base + h->ibuckets_off);
	s->ebuckets = (struct mc_bucket *)((char *)s->base + h->ebuckets_off);
}

/* Lay out an empty segment: header, tables, slab sizes. */
static int seg_layout(struct shm *s, uint64_t size)
{
	/* Metadata: header, page table, dentry buckets, inode buckets. One
	 * bucket per 256 bytes of segment for each table. */
	uint32_t npages = (uint32_t)(size >> MC_PAGE_SHIFT);
	uint32_t nd = pow2_floor(size / 256);
	uint32_t ni = nd;
	uint64_t off = 256;
	uint64_t pt_off = off;
	off += npages;
	off = (off + 63) & ~63ull;
	uint64_t db_off = off;
	off += (uint64_t)nd * sizeof(struct mc_bucket);
	uint64_t ib_off = off;
	off += (uint64_t)ni * sizeof(struct mc_bucket);
	/* Extent maps: one bucket per 16 KiB (a map holds 4 KiB at least). */
	uint32_t ne = pow2_floor(size / 16384);
	uint64_t eb_off = off;
	off += (uint64_t)ne * sizeof(struct mc_bucket);
	uint64_t meta_pages = (off + MC_PAGE_SIZE - 1) >> MC_PAGE_SHIFT;
	if (meta_pages + 8 > npages)
		return -EINVAL;

	struct mc_shm_header *h = s->base;
	h->magic = MC_SHM_MAGIC;
	h->version = MC_SHM_VERSION;
	h->size = size;
	h->npages = npages;
	h->page_types_off = (uint32_t)pt_off;
	h->dbuckets_off = (uint32_t)db_off;
	h->dbucket_mask = nd - 1;
	h->ibuckets_off = (uint32_t)ib_off;
	h->ibucket_mask = ni - 1;
	h->ebuckets_off = (uint32_t)eb_off;
	h->ebucket_mask = ne - 1;
	if (getrandom(&h->hash_seed, sizeof(h->hash_seed), 0) != sizeof(h->hash_seed))
		h->hash_seed = 0x6d6361636865ull ^ (uint64_t)getpid();
	h->server_pid = (uint32_t)getpid();
	atomic_store_explicit(&h->heartbeat_ms, mono_ns() / 1000000u, memory_order_relaxed);

	seg_bind(s);
	for (uint32_t p = 0; p < meta_pages; p++)
		s->page_types[p] = MC_PT_META;
	s->next_page = (uint32_t)meta_pages;
	s->meta_bytes = meta_pages << MC_PAGE_SHIFT;

	for (unsigned i = 0; i < SLAB_COUNT; i++) {
		if (i < SLAB_BLOB0) {
			s->slab[i].slot_size = fixed_sizes[i];
			s->slab[i].page_type = fixed_types[i];
		} else {
			s->slab[i].slot_size = (uint32_t)mc_blob_size(i - SLAB_BLOB0);
			s->slab[i].page_type = (uint8_t)(MC_PT_BLOB32 + (i - SLAB_BLOB0));
		}
	}
	return 0;
}

int shm_create_at(const char *path, uint64_t size, struct shm **out)
{
	size &= ~(uint64_t)(MC_PAGE_SIZE - 1);
	if (size < (1u << 20) || size > MC_SHM_MAX_SIZE)
		return -EINVAL;
	struct shm *s = shm_struct_new();
	if (!s)
		return -ENOMEM;
	int err = seg_new(s, path, size);
	if (err == 0)
		err = seg_layout(s, size);
	if (err) {
		shm_destroy(s);
		return err;
	}
	*out = s;
	return 0;
}

int shm_create(uint64_t size, struct shm **out)
{
	return shm_create_at(NULL, size, out);
}

void shm_image_get(const struct shm *s, struct shm_image *out)
{
	memset(out, 0, sizeof(*out));
	out->size = s->size;
	out->hash_seed = s->hdr->hash_seed;
	out->next_page = s->next_page;
	out->meta_bytes = s->meta_bytes;
	memcpy(out->slab, s->slab, sizeof(out->slab));
	out->raw_pages = s->raw_pages;
	out->d_positive = s->d_positive;
	out->d_negative = s->d_negative;
	out->dirs_complete = s->dirs_complete;
	out->cookie_floor = s->cookie_floor;
}

int shm_attach(const char *path, const struct shm_image *img, struct shm **out)
{
	struct stat st;
	struct shm *s = shm_struct_new();
	if (!s)
		return -ENOMEM;
	int err;
	s->fd = open(path, O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (fstat(s->fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if ((uint64_t)st.st_size != img->size) {
		err = -ESTALE;
		goto fail;
	}
	err = seg_map(s, path, img->size);
	if (err)
		goto fail;
	const struct mc_shm_header *h = s->base;
	if (h->magic != MC_SHM_MAGIC || h->version != MC_SHM_VERSION || h->size != img->size ||
	    h->hash_seed != img->hash_seed || img->next_page > h->npages) {
		err = -ESTALE;
		goto fail;
	}
	seg_bind(s);
	s->next_page = img->next_page;
	s->meta_bytes = img->meta_bytes;
	memcpy(s->slab, img->slab, sizeof(s->slab));
	s->raw_pages = img->raw_pages;
	s->d_positive = img->d_positive;
	s->d_negative = img->d_negative;
	s->dirs_complete = img->dirs_complete;
	s->cookie_floor = img->cookie_floor;
	s->hdr->server_pid = (uint32_t)getpid();
	atomic_store_explicit(&s->hdr->heartbeat_ms, mono_ns() / 1000000u, memory_order_relaxed);
	atomic_store_explicit(&s->hdr->closed, 0, memory_order_release);
	*out = s;
	return 0;
fail:
	shm_destroy(s);
	return err;
}

void shm_destroy(struct shm *s)
{
	if (!s)
		return;
	shm_beat_stop(s);
	if (s->base)
		munmap(s->base, s->size);
	if (s->fd >= 0)
		close(s->fd);
	if (s->ro_fd >= 0)
		close(s->ro_fd);
	pthread_cond_destroy(&s->beat_cv);
	pthread_mutex_destroy(&s->beat_mu);
	free(s);
}

/* ---- heartbeat ---------------------------------------------------------- */

static void *beat_main(void *arg)
{
	struct shm *s = arg;
	pthread_mutex_lock(&s->beat_mu);
	while (!s->beat_stop) {
		uint64_t now = mono_ns();
		atomic_store_explicit(&s->hdr->heartbeat_ms, now / 1000000u, memory_order_relaxed);
		uint64_t next = now + (uint64_t)MC_HEARTBEAT_MS * 1000000u;
		struct timespec ts = { (time_t)(next / 1000000000u), (long)(next % 1000000000u) };
		while (!s->beat_stop && pthread_cond_timedwait(&s->beat_cv, &s->beat_mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&s->beat_mu);
	return NULL;
}

int shm_beat_start(struct shm *s)
{
	if (s->beating)
		return -EALREADY;
	s->beat_stop = false;
	int rc = pthread_create(&s->beat, NULL, beat_main, s);
	if (rc != 0)
		return -rc;
	s->beating = true;
	return 0;
}

void shm_beat_stop(struct shm *s)
{
	if (!s->beating)
		return;
	pthread_mutex_lock(&s->beat_mu);
	s->beat_stop = true;
	pthread_cond_signal(&s->beat_cv);
	pthread_mutex_unlock(&s->beat_mu);
	pthread_join(s->beat, NULL);
	s->beating = false;
}

/* The word that links a free slot: the second for seq-carrying slots. */
static mc_off_t *free_link(struct shm *s, enum shm_slab slab, mc_off_t off)
{
	uint32_t *w = shm_at(s, off);
	return slab < SLAB_BLOB0 ? &w[1] : &w[0];
}

bool shm_page_for(const struct shm *s, enum shm_slab slab)
{
	uint32_t left = s->hdr->npages - s->next_page;
	if (left == 0)
		return false;
	if (s->slab[slab].pages == 0)
		return true;
	uint32_t none = 0, cap = s->hdr->npages / RESERVE_DIV;
	for (unsigned i = 0; i < SLAB_COUNT; i++)
		none += s->slab[i].pages == 0;
	return left > (none < cap ? none : cap);
}

static int grow_slab(struct shm *s, enum shm_slab slab)
{
	struct shm_slab_state *st = &s->slab[slab];
	if (!shm_page_for(s, slab))
		return -ENOSPC;
	uint32_t p = s->next_page++;
	uint64_t base = (uint64_t)p << MC_PAGE_SHIFT;
	uint32_t n = MC_PAGE_SIZE / st->slot_size;
#ifdef MADV_POPULATE_WRITE
	/* The loop below touches every 4 KiB of the page: one call faults
	 * them all in, instead of one fault each (a warm-up grows many slabs).
	 * Best effort: without it, the faults happen as before. */
	(void)madvise((char *)s->base + base, MC_PAGE_SIZE, MADV_POPULATE_WRITE);
#endif
	/* Push in reverse so slots are handed out in address order. */
	for (uint32_t i = n; i-- > 0;) {
		mc_off_t off = (mc_off_t)((base + (uint64_t)i * st->slot_size) >> MC_OFF_SHIFT);
		*free_link(s, slab, off) = st->free_head;
		st->free_head = off;
	}
	s->page_types[p] = st->page_type;
	st->pages++;
	return 0;
}

mc_off_t shm_alloc(struct shm *s, enum shm_slab slab)
{
	struct shm_slab_state *st = &s->slab[slab];
	if (!st->free_head && grow_slab(s, slab) < 0) {
		s->alloc_failures++;
		s->fail_slab = slab;
		return 0;
	}
	mc_off_t off = st->free_head;
	st->free_head = *free_link(s, slab, off);
	char *p = shm_at(s, off);
	if (slab < SLAB_BLOB0) {
		/* Keep the seq word; zero the rest. Readers cannot reach the slot
		 * until it is linked, and the seq already moved when it was freed. */
		memset(p + sizeof(uint32_t), 0, st->slot_size - sizeof(uint32_t));
	} else {
		memset(p, 0, st->slot_size);
	}
	st->live++;
	return off;
}

void shm_free(struct shm *s, enum shm_slab slab, mc_off_t off)
{
	struct shm_slab_state *st = &s->slab[slab];
	if (slab < SLAB_BLOB0) {
		_Atomic uint32_t *seq = shm_at(s, off);
		shm_write_begin(seq);
		shm_write_end(seq);
	}
	*free_link(s, slab, off) = st->free_head;
	st->free_head = off;
	st->live--;
}

mc_off_t shm_page_new(struct shm *s, uint8_t type)
{
	if (s->next_page >= s->hdr->npages) {
		s->alloc_failures++;
		return 0;
	}
	uint32_t p = s->next_page++;
	s->page_types[p] = type;
	s->raw_pages++;
	return (mc_off_t)(((uint64_t)p << MC_PAGE_SHIFT) >> MC_OFF_SHIFT);
}

static enum shm_slab blob_slab(size_t len)
{
	unsigned cls = 0;
	while (mc_blob_size(cls) < len)
		cls++;
	return (enum shm_slab)(SLAB_BLOB0 + cls);
}

mc_off_t shm_blob_new(struct shm *s, const void *data, size_t len)
{
	if (len == 0 || len > mc_blob_size(MC_BLOB_CLASSES - 1))
		return 0;
	mc_off_t off = shm_alloc(s, blob_slab(len));
	if (off)
		memcpy(shm_at(s, off), data, len);
	return off;
}

void shm_blob_free(struct shm *s, mc_off_t off, size_t len)
{
	if (off)
		shm_free(s, blob_slab(len), off);
}

void shm_set_refbits(struct shm *s, _Atomic uint64_t *bits, uint64_t nbits)
{
	s->refbits = bits;
	s->nbits = bits ? nbits : 0;
}

uint64_t shm_bytes_used(const struct shm *s)
{
	uint64_t b = s->meta_bytes + (s->raw_pages << MC_PAGE_SHIFT) - s->raw_idle;
	for (unsigned i = 0; i < SLAB_COUNT; i++)
		b += s->slab[i].live * s->slab[i].slot_size;
	return b;
}
