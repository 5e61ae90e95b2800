/* shm.h - the shared-memory segment on the server side: creation, the page
 * allocator (pages go back to a common pool once empty) and the slot slabs
 * (layout in proto/mc_shm.h).
 *
 * All allocation and freeing happens under the namespace lock; the segment
 * is mapped read-write here and read-only by clients.
 */
#ifndef MC_SHM_SERVER_H
#define MC_SHM_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc_shm.h"

/* Slab indices: the fixed types, then the blob classes. */
enum shm_slab {
	SLAB_DENTRY = 0,
	SLAB_INODE = 1,
	SLAB_DIRX = 2,
	SLAB_BLOB0 = 3,
	SLAB_COUNT = SLAB_BLOB0 + MC_BLOB_CLASSES,
};

struct shm_slab_state {
	uint32_t partial;         /* first page with free slots (shm.c note 6), 0: none */
	uint32_t partial_tail;    /* last one: the empty pages come last */
	uint32_t slot_size;
	uint8_t page_type;
	uint64_t live;            /* slots in use */
	uint64_t pages;
	uint64_t nfree;           /* free slots in its pages */
	uint64_t empty;           /* pages with no slot in use (at most one) */
};

/* Server-private bookkeeping of one page (never in the segment). */
struct shm_page {
	mc_off_t free;            /* free slots of this page, linked through their second word */
	uint16_t nfree;
	uint8_t slab;             /* enum shm_slab, while a slab page */
	uint32_t next, prev;      /* partial list or pool, page indices, 0: none */
	uint32_t seqmax;          /* the highest seq its slots ever had (shm.c note 2) */
};

struct shm {
	int fd;                   /* memfd */
	int ro_fd;                /* read-only descriptor of it, passed to clients */
	void *base;
	uint64_t size;
	struct mc_shm_header *hdr;
	uint8_t *page_types;
	struct mc_dgroup *dgroups;   /* dentry bucket groups (proto/mc_shm.h, note 12) */
	struct mc_bucket *ibuckets;
	struct mc_bucket *ebuckets;   /* loaded extent maps (proto/mc_shm.h, note 11) */
	uint32_t next_page;       /* first page never handed out */
	/* shm_populate_ahead, without the namespace lock: next_page as of its
	 * last change, and the first page past those populated ahead of it
	 * (shm.c note 9). */
	_Atomic uint32_t fresh_next, populated;
	/* shm_populate_meta, without the namespace lock: a bit per page of
	 * the metadata area already faulted in by it (shm.c note 10); NULL
	 * when it could not be allocated (then it does nothing). */
	_Atomic uint64_t *meta_populated;
	uint64_t meta_cursor;     /* shm_populate_meta_run's next page (heartbeat thread) */
	struct shm_page *pg;      /* npages entries */
	uint32_t pool, pool_tail; /* pages given back, oldest first (shm.c note 7) */
	uint64_t pool_pages;
	uint64_t pages_returned;  /* pages given back to the pool, ever */
	uint64_t pages_stolen;    /* empty pages taken from another slab, ever */
	uint64_t meta_bytes;      /* header, page table and buckets */
	struct shm_slab_state slab[SLAB_COUNT];
	/* The bytes of the live slots of every slab (live * slot_size), kept
	 * as they change: shm_bytes_used is read at every mutation. */
	uint64_t live_bytes;
	/* Slots of each slab held back by shm_reserve (shm.c note 11):
	 * counted in live, not in use. */
	uint64_t reserved[SLAB_COUNT];
	uint64_t alloc_failures;
	enum shm_slab fail_slab;  /* the slab of the last failed allocation */
	uint64_t raw_pages;       /* pages handed out whole (shm_page_new) */
	uint64_t raw_idle;        /* bytes of those pages their owner holds free for reuse
	                           * (extent chunks): not counted as used */
	/* The referenced bitmap of the client area (shm_set_refbits); NULL:
	 * none. Clients set bits at will: a bit is a hint, never trusted. */
	_Atomic uint64_t *refbits;
	uint64_t nbits;
	/* Cache figures kept by dcache.c (under the namespace lock). */
	uint64_t d_positive, d_negative, d_dirty, dirs_complete, i_dirty;
	uint64_t prunes, pruned;
	/* Cookies of a directory's new directory state start here: above any
	 * cookie an earlier (evicted) state of any directory handed out. */
	uint32_t cookie_floor;
	/* The heartbeat thread (shm_beat_start). */
	pthread_t beat;
	bool beating;
	bool beat_stop;           /* under beat_mu */
	pthread_mutex_t beat_mu;
	pthread_cond_t beat_cv;
};

/* Create a sealed memfd segment of size bytes (rounded down to pages; at
 * least 1 MiB, at most MC_SHM_MAX_SIZE) with an empty hash table.
 * -EINVAL (size), -ENOMEM, or the errno of memfd_create/ftruncate/mmap. */
int shm_create(uint64_t size, struct shm **out);
/* The same in a new file at path (any file there is unlinked first; a
 * process still mapping it keeps it), mode 0600, not sealed (shm.c note
 * 6); path NULL: a memfd, as shm_create. Also the errno of unlink/open. */
int shm_create_at(const char *path, uint64_t size, struct shm **out);
/* Stops the heartbeat first if it runs. */
void shm_destroy(struct shm *s);

/* What the server keeps of a segment outside it: enough to serve a segment
 * file again after a clean stop (restart.c). */
struct shm_image {
	uint64_t size, hash_seed;
	uint64_t meta_bytes, raw_pages;
	uint32_t next_page, cookie_floor;
	uint32_t pool, pool_tail;
	uint64_t pool_pages;
	struct shm_slab_state slab[SLAB_COUNT];
	uint64_t d_positive, d_negative, dirs_complete;
};
void shm_image_get(const struct shm *s, struct shm_image *out);
/* Map the segment file at path again, with the state img and the pages'
 * bookkeeping pg (img->size / MC_PAGE_SIZE entries, s->pg) that were saved
 * from it, and serve it: server_pid, heartbeat and closed are reset.
 * -ESTALE: the file is not the segment img describes (size, magic,
 * version, hash seed); the errno of open/fstat/mmap, -ENOMEM. */
int shm_attach(const char *path, const struct shm_image *img, const struct shm_page *pg,
               struct shm **out);

/* Start a thread that writes the monotonic time into hdr->heartbeat_ms every
 * MC_HEARTBEAT_MS, so that clients can tell a live server from a dead one
 * (proto/mc_shm.h, note 10). 0, -EALREADY, or the errno of pthread_create. */
int shm_beat_start(struct shm *s);
/* Stop it and wait for it (no-op when not running). */
void shm_beat_stop(struct shm *s);

/* A zeroed slot of slab `slab` (its seq word keeps counting across reuse and
 * is left even), or 0 when the segment is full (counted in alloc_failures). */
mc_off_t shm_alloc(struct shm *s, enum shm_slab slab);
/* Reservations (shm.c note 11), lock held but shm_reserve_next:
 * shm_reserve_page takes every free slot of one page of slab (a new page
 * when none has any) for a caller that fills them without the lock and
 * puts them to use later: the first of them, the others linked from it
 * (shm_reserve_next gives the one after off; 0 ends), and their number in
 * *n; 0 when the segment is full (counted in alloc_failures). They are
 * not zeroed. shm_reserve_used: one of them is now in use (linked, or
 * freed with shm_free as any slot in use). shm_reserve_return: give n
 * unused ones back. */
mc_off_t shm_reserve_page(struct shm *s, enum shm_slab slab, size_t *n);
mc_off_t shm_reserve_next(const struct shm *s, enum shm_slab slab, mc_off_t off);
void shm_reserve_used(struct shm *s, enum shm_slab slab);
void shm_reserve_return(struct shm *s, enum shm_slab slab, const mc_off_t *v, size_t n);
/* Fault in the pages never handed out that come next, up to ahead of
 * them, so that the slabs carving them later (under the namespace lock)
 * do not wait for the kernel to allocate and clear them (shm.c note 9).
 * No lock needed; several threads may call it at once. Best effort. */
void shm_populate_ahead(struct shm *s, uint32_t ahead);
/* Fault in the page of the metadata area (the hash buckets) that holds p,
 * unless this did already (shm.c note 10): inserts about to write a bucket
 * there then find it mapped. No lock needed; several threads may call it
 * at once. Best effort. */
void shm_populate_meta(struct shm *s, const void *p);
/* Fault in the next run of the metadata area not yet faulted in
 * (SHM_META_RUN pages at most, shm.c note 10): the heartbeat thread goes
 * through the whole area this way between its beats, from the start, so
 * the first mutations of a new segment do not take a page fault at
 * nearly every bucket they touch. False once nothing is left. One thread
 * at a time; without the lock; best effort. */
#define SHM_META_RUN 32u /* pages: 2 MiB */
bool shm_populate_meta_run(struct shm *s);
/* Return a slot; bumps its seq so stale readers notice. A page left with no
 * slot in use goes back to the pool (shm.c note 6). */
void shm_free(struct shm *s, enum shm_slab slab, mc_off_t off);

/* A whole page of page type `type`, for a module that carves it itself
 * (extent chunks): from the pool, never used, or another slab's empty page;
 * its offset, 0 when no page is free (counted in alloc_failures). Its bytes
 * are zero. Counted in shm_bytes_used until shm_page_free. */
mc_off_t shm_page_new(struct shm *s, uint8_t type);
/* Give back a page of shm_page_new (any offset inside it); the caller has
 * made it unreachable to readers first (shm.c note 7). */
void shm_page_free(struct shm *s, mc_off_t off);

/* Blobs: len bytes (1..4096) copied in; 0 when full. */
mc_off_t shm_blob_new(struct shm *s, const void *data, size_t len);
void shm_blob_free(struct shm *s, mc_off_t off, size_t len);

/* Bytes in live slots plus the metadata area. */
uint64_t shm_bytes_used(const struct shm *s);
/* Bytes in live slots of one slab. */
static inline uint64_t shm_slab_bytes(const struct shm *s, enum shm_slab slab)
{
	return s->slab[slab].live * s->slab[slab].slot_size;
}
/* May slab take a new page? The last pages are kept for slabs that have
 * none (shm.c, note 5). */
bool shm_page_for(const struct shm *s, enum shm_slab slab);
/* Can slab hand out a slot without growing past the segment? */
static inline bool shm_slab_room(const struct shm *s, enum shm_slab slab)
{
	return s->slab[slab].partial != 0 || shm_page_for(s, slab);
}

/* Use the client area's referenced bitmap (nbits bits: one per offset unit
 * of this segment). */
void shm_set_refbits(struct shm *s, _Atomic uint64_t *bits, uint64_t nbits);
/* Test and clear the referenced bit of the dentry at off (CLOCK's second
 * chance): true when a client marked it since the last call. */
static inline bool shm_ref_take(struct shm *s, mc_off_t off)
{
	if (!s->refbits || off >= s->nbits)
		return false;
	_Atomic uint64_t *w = &s->refbits[off >> 6];
	uint64_t b = 1ull << (off & 63);
	if (!(atomic_load_explicit(w, memory_order_relaxed) & b))
		return false;
	return atomic_fetch_and_explicit(w, ~b, memory_order_relaxed) & b;
}

static inline void *shm_at(const struct shm *s, mc_off_t off)
{
	return mc_shm_at(s->base, off);
}

/* The page type under off (an offset the server handed out once). A slot
 * remembered across frees is read only while this is still its type: its
 * page may have gone to another slot type since (shm.c note 7). */
static inline uint8_t shm_off_type(const struct shm *s, mc_off_t off)
{
	return s->page_types[((uint64_t)off << MC_OFF_SHIFT) >> MC_PAGE_SHIFT];
}

/* Seqlock writer side, used around every change of a slot or bucket. */
static inline void shm_write_begin(_Atomic uint32_t *seq)
{
	uint32_t v = atomic_load_explicit(seq, memory_order_relaxed);
	atomic_store_explicit(seq, v + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static inline void shm_write_end(_Atomic uint32_t *seq)
{
	uint32_t v = atomic_load_explicit(seq, memory_order_relaxed);
	atomic_store_explicit(seq, v + 1, memory_order_release);
}

#endif
