/* shm.c - the shared-memory segment: a memfd carved into 64 KiB pages; a
 * page serves one slot type while it holds slots, and goes back to a common
 * pool once all its slots are free. Here: the segment's layout, backing,
 * sealing and attach, and the metadata area; the allocator of pages and
 * slots is shm_alloc.c. These notes are both files'.
 *
 * Invariants:
 *  1. page_types[p] changes from MC_PT_FREE to a slot type after the page is
 *     carved and before any slot of it is reachable, and back to MC_PT_FREE
 *     only when no slot of it is in use (shm_free, shm_page_free).
 *  2. A slot's first word is its seq (dentry, inode, dirx); it is never
 *     reset while the page keeps its type, and a page carved again starts
 *     its seqs above every seq its slots had before (struct shm_page
 *     seqmax), so a reader holding a stale offset sees a different value.
 *     Free slots are linked through their second word. Blobs have no seq:
 *     they are covered by their owner's, and linked through their first
 *     word when free, so an owner frees its blob only while its own seq is
 *     odd (mc_shm.h note 6; inode_del, dcache_del).
 *  3. Clients map the segment read-only: they get a read-only descriptor,
 *     and the memfd is sealed against new writable mappings (the server's
 *     own mapping predates the seal), against shrinking and growing (so a
 *     client can never fault on a truncated map) and against new seals.
 *  4. heartbeat_ms is written by the heartbeat thread only (and once at
 *     creation); a stopped thread leaves the last value, which clients then
 *     see age.
 *  5. The last free pages are kept back (one per slab that has none, at
 *     most 1/RESERVE_DIV of the segment) from the slabs that have some: a
 *     slot type first needed late, such as a long name's blob class, gets
 *     a page at once while eviction empties pages of the others.
 *     shm_slab_room applies the same rule.
 *  6. A slab's pages with free slots are on its partial list, the empty
 *     ones last; at most one empty page stays with a slab (so a slab that
 *     frees and allocates at a page boundary does not carve a page each
 *     time), every further one goes to the pool, and a slab that needs a
 *     page when the pool is dry takes another slab's empty one. So no
 *     allocation fails while any page of the segment is entirely free.
 *  7. A page given back keeps its bytes until it is carved again (zeroed,
 *     seqs set); readers that still hold an offset into it fail the type
 *     check or the seq of what led them there (the bucket, dentry or
 *     directory whose change freed the slot, client/shmwalk.c note 3).
 *     The pool is first in, first out, so a page waits as long as possible
 *     before it is reused.
 *  8. With a path (--shm-path), the segment is a file instead, which
 *     outlives the process: it cannot be sealed, so it is created mode 0600
 *     (clients of other users get only the read-only descriptor), and a
 *     new one replaces an old one by unlink and create, never by
 *     truncation, so a client still mapping the old file never faults.
 *     shm_attach maps such a file again with the allocator state saved
 *     from the server that left it (struct shm_image and the pages'
 *     bookkeeping, restart.c).
 *  9. A page never handed out is populated (faulted in, zero) either by
 *     grow_slab when it carves it, or earlier, outside the namespace lock,
 *     by shm_populate_ahead: a thread claims a run of pages past
 *     fresh_next (next_page, published at every change) by moving
 *     populated over it, then faults them in. Populating writes no byte,
 *     so a page keeps reading zero whichever comes first; grow_slab skips
 *     its own call for pages below populated. Pages populated ahead and
 *     never used stay in the memfd (at most one run past the last page
 *     used), counted nowhere in shm_bytes_used.
 * 10. The metadata area (page table and hash buckets, counted whole in
 *     shm_bytes_used) is faulted in on first touch, a 4 KiB page at a
 *     time, by whoever touches it first -- a warm-up's inserts, under the
 *     namespace lock, touch every page of the bucket tables in random
 *     order. shm_populate_meta faults in the 64 KiB page around a bucket
 *     (one call, no lock), once: meta_populated has a bit per page, set
 *     by the thread that calls madvise for it. Populating writes no byte,
 *     so it may run while others read and write the page. From the start
 *     the heartbeat thread goes through the whole area the same way, a
 *     run of pages at a time between its beats (shm_populate_meta_run):
 *     otherwise the first mutations of a new segment, under the lock, take
 *     a fault at nearly every bucket they touch (4 KiB of buckets per
 *     fault, 1.7 us each on the VM of README's figures: a fresh server's
 *     first 20,000 batched creates ran at 0.6M/s against 1.0M/s with the
 *     area faulted in). The area is counted as used whole already; this
 *     makes it resident (1/16 of the segment), within milliseconds for
 *     the default size.
 * 11. A reserved slot is allocated -- off the slab's free lists, counted
 *     in live and so in shm_bytes_used, its page kept from the pool and
 *     from other slabs -- and reachable by nothing: no chain, no list, its
 *     flags zero (as every free slot's: the slot's last user cleared them,
 *     or the page is new), so that the scans of the slots (the shrinker's
 *     hand, fsck, the dirty lists) pass it by as free. shm_reserve_page
 *     reserves the free slots of a whole page at once, in O(1) under the
 *     lock: the page's free list goes to the caller as it is (the page is
 *     off its slab's partial list, full as far as the slab knows, until a
 *     slot of it is freed), who walks it without the lock
 *     (shm_reserve_next). The slots are not zeroed: their holder writes
 *     them, without the lock, all but the flags (inode_fill, dcache_fill)
 *     and makes them live under it (inode_link, dcache_link). reserved[]
 *     counts the reserved slots of each slab exactly: up by those
 *     shm_reserve_page hands out, down by one at each shm_reserve_used
 *     and by those shm_reserve_return gives back (freed as slots in use
 *     are). So live - reserved[] is what the slab's slots hold.
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

/* Note 10's bitmap, once meta_bytes is known; NULL when out of memory. */
static void meta_populated_new(struct shm *s)
{
	uint64_t pages = s->meta_bytes >> MC_PAGE_SHIFT;
	s->meta_populated = calloc((size_t)((pages + 63) / 64), sizeof(*s->meta_populated));
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
	s->dgroups = (struct mc_dgroup *)((char *)s->base + h->dbuckets_off);
	s->ibuckets = (struct mc_bucket *)((char *)s->base + h->ibuckets_off);
	s->ebuckets = (struct mc_bucket *)((char *)s->base + h->ebuckets_off);
}

/* Lay out an empty segment: header, tables, slab sizes. */
static int seg_layout(struct shm *s, uint64_t size)
{
	/* Metadata: header, page table, dentry buckets, inode buckets: 8
	 * bytes per 256 of segment for each table, that is one 8-byte inode
	 * bucket, and one 64-byte group of 7 dentry buckets (mc_shm.h note
	 * 12) per 2 KiB. */
	uint32_t npages = (uint32_t)(size >> MC_PAGE_SHIFT);
	uint32_t ni = pow2_floor(size / 256);
	uint32_t nd = ni / (sizeof(struct mc_dgroup) / sizeof(struct mc_bucket));
	uint64_t off = 256;
	uint64_t pt_off = off;
	off += npages;
	off = (off + 63) & ~63ull;
	uint64_t db_off = off;
	off += (uint64_t)nd * sizeof(struct mc_dgroup);
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
	s->pg = calloc(npages, sizeof(*s->pg));
	if (!s->pg)
		return -ENOMEM;
	for (uint32_t p = 0; p < meta_pages; p++)
		s->page_types[p] = MC_PT_META;
	s->next_page = (uint32_t)meta_pages;
	atomic_store_explicit(&s->fresh_next, s->next_page, memory_order_relaxed);
	s->meta_bytes = meta_pages << MC_PAGE_SHIFT;
	meta_populated_new(s);

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
	out->pool = s->pool;
	out->pool_tail = s->pool_tail;
	out->pool_pages = s->pool_pages;
	out->meta_bytes = s->meta_bytes;
	memcpy(out->slab, s->slab, sizeof(out->slab));
	out->raw_pages = s->raw_pages;
	out->d_positive = s->d_positive;
	out->d_negative = s->d_negative;
	out->dirs_complete = s->dirs_complete;
	out->cookie_floor = s->cookie_floor;
}

int shm_attach(const char *path, const struct shm_image *img, const struct shm_page *pg,
               struct shm **out)
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
	s->pg = malloc((size_t)h->npages * sizeof(*s->pg));
	if (!s->pg) {
		err = -ENOMEM;
		goto fail;
	}
	memcpy(s->pg, pg, (size_t)h->npages * sizeof(*s->pg));
	s->pool = img->pool;
	s->pool_tail = img->pool_tail;
	s->pool_pages = img->pool_pages;
	s->next_page = img->next_page;
	atomic_store_explicit(&s->fresh_next, s->next_page, memory_order_relaxed);
	s->meta_bytes = img->meta_bytes;
	meta_populated_new(s);
	memcpy(s->slab, img->slab, sizeof(s->slab));
	s->live_bytes = 0;
	for (unsigned i = 0; i < SLAB_COUNT; i++)
		s->live_bytes += s->slab[i].live * s->slab[i].slot_size;
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
	free(s->pg);
	free(s->meta_populated);
	free(s);
}

void shm_populate_meta(struct shm *s, const void *p)
{
	uint64_t page = (uint64_t)((const char *)p - (const char *)s->base) >> MC_PAGE_SHIFT;
	if (!s->meta_populated || page >= s->meta_bytes >> MC_PAGE_SHIFT)
		return;
	_Atomic uint64_t *w = &s->meta_populated[page / 64];
	uint64_t bit = 1ull << (page % 64);
	if ((atomic_load_explicit(w, memory_order_relaxed) & bit) ||
	    (atomic_fetch_or_explicit(w, bit, memory_order_relaxed) & bit))
		return;
#ifdef MADV_POPULATE_WRITE
	(void)madvise((char *)s->base + (page << MC_PAGE_SHIFT), MC_PAGE_SIZE, MADV_POPULATE_WRITE);
#endif
}

bool shm_populate_meta_run(struct shm *s)
{
	uint64_t pages = s->meta_bytes >> MC_PAGE_SHIFT;
	if (!s->meta_populated)
		return false;
	/* Skip what is done; then claim up to SHM_META_RUN pages not done. */
	while (s->meta_cursor < pages &&
	       (atomic_load_explicit(&s->meta_populated[s->meta_cursor / 64],
	                             memory_order_relaxed) >> (s->meta_cursor % 64)) & 1)
		s->meta_cursor++;
	uint64_t from = s->meta_cursor, to = from;
	while (to < pages && to - from < SHM_META_RUN) {
		uint64_t bit = 1ull << (to % 64);
		if (atomic_fetch_or_explicit(&s->meta_populated[to / 64], bit,
		                             memory_order_relaxed) & bit)
			break;  /* another thread has this one: the run ends here */
		to++;
	}
	s->meta_cursor = to;
#ifdef MADV_POPULATE_WRITE
	if (to > from)
		(void)madvise((char *)s->base + (from << MC_PAGE_SHIFT),
		              (to - from) << MC_PAGE_SHIFT, MADV_POPULATE_WRITE);
#endif
	return s->meta_cursor < pages;
}

void shm_set_refbits(struct shm *s, _Atomic uint64_t *bits, uint64_t nbits)
{
	s->refbits = bits;
	s->nbits = bits ? nbits : 0;
}

uint64_t shm_bytes_used(const struct shm *s)
{
	return s->meta_bytes + (s->raw_pages << MC_PAGE_SHIFT) - s->raw_idle + s->live_bytes;
}
