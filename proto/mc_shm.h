/* mc_shm.h - layout of the shared-memory segment, the one contract between
 * mcached (which writes it) and libmcache (which reads it, mapped read-only).
 *
 * NOTES ON THE LAYOUT
 *  1. Everything is addressed by 32-bit offsets in units of MC_OFF_UNIT bytes
 *     from the start of the segment (mc_off_t); 0 is "none". Nothing in the
 *     segment is a pointer.
 *  2. The segment is divided into pages of MC_PAGE_SIZE bytes. A page holds
 *     one slot type while any of its slots is in use (page_types[] says
 *     which): a slot may be reused for another object of the same type; a
 *     page whose slots are all free may go back to MC_PT_FREE and later
 *     serve another type, zeroed, its seqs starting above the old ones. A
 *     reader checks that an offset lies inside the segment and inside a page
 *     of the expected type before following it, and trusts what it read only
 *     once the seq of what led it there (bucket, dentry, directory) held.
 *     Not proven: a reader that keeps a slot's address while the slot is
 *     freed, every other slot of its page too, and the page is carved for
 *     another type, re-reads as the seq whatever the new type wrote there
 *     (an offset, a name, a record), and only chance tells it from the seq
 *     it holds. Freeing bumps the seq first, and the pool is first in,
 *     first out, so it takes a reader stalled across both.
 *  3. Every dentry, inode and dirx slot starts with a sequence counter. The
 *     server makes it odd before a change and even after (C11 release/acquire
 *     pairs); freeing and reusing a slot are changes. A reader reads the seq
 *     (odd: retry), copies what it needs, and re-reads the seq; any
 *     difference means retry. Hash buckets have their own seq, bumped around
 *     every insert into or removal from their chain (dentry buckets share
 *     their group's, note 12).
 *  4. rename_seq is bumped (odd/even) around every rename; a path walk
 *     reads it first and re-checks it last.
 *  5. A positive dentry keeps its inode slot and its parent's inode slot
 *     alive: an inode is freed only when no cached dentry names it and, for a
 *     directory, when it has no cached children. So a dentry's (parent slot,
 *     name) identifies it exactly while its seq is unchanged.
 *  6. Blobs (long names, symlink targets) are owned by one dentry or inode;
 *     they change only together with their owner's seq: written before the
 *     owner links them, freed only while the owner's seq is odd (freeing
 *     one writes the free-list link over its first word, and reusing it or
 *     its page rewrites the rest), so a copy the owner's seq vouches for is
 *     the blob as it was linked.
 *  7. The hash table never resizes while the segment exists.
 *  8. Exceptions to note 3, which readers must not rely on: the DIRTY bits of
 *     dentry and inode flags and the dirx nneg and rm_seq are server bookkeeping,
 *     changed without a seq bump (the other flag bits stay as they are in
 *     the same 16-bit store, so a reader never sees them torn); a dentry
 *     bucket's inode is a hint (note 12).
 *  9. The layout of the client area (the writable segment below) is in this
 *     header, written once before the first client connects. The area itself
 *     holds data only: nothing in it says where anything is.
 * 10. heartbeat_ms is the server's CLOCK_MONOTONIC time in milliseconds,
 *     rewritten every MC_HEARTBEAT_MS while it serves. A reader that finds
 *     it older than MC_HEARTBEAT_STALE_MS asks the kernel whether the
 *     server is still there before it trusts the segment again.
 * 11. Loaded extent maps and extent-state trees are found by inode number
 *     through their own hash table (ebuckets, mc_hash_ino), chained through
 *     the first chunk's tail (mc_echunk_tail.hnext); the head's kind tells
 *     a map from a state tree. A map is linked only once it is whole
 *     (loaded from the store), a state tree as soon as it is made (empty);
 *     each is unlinked before it is freed. A reader validates the chain
 *     with the bucket's seq and the records with the tree head's seq
 *     (records carry none).
 * 12. Dentry buckets come in groups of MC_DGROUP_BUCKETS, one cache line
 *     (struct mc_dgroup): a name's hash picks the group by its low bits
 *     (hash & dbucket_mask) and the bucket in it by its high 32
 *     (mc_dgroup_slot). The group's one seq stands for the seq of each of
 *     its buckets (note 3): it is bumped around every insert into or
 *     removal from any of their chains. Each bucket also holds `inode`, the
 *     inode slot its chain's first dentry names (0: the chain is empty or
 *     its first dentry is negative), rewritten by the server whenever the
 *     first dentry or the inode it names changes. It is a prefetch address
 *     and nothing more: it changes outside every seq, and a reader never
 *     takes it for data (what it loads there it reads again through the
 *     dentry, under the dentry's and the inode's seqs). It lets a lookup
 *     start loading the inode while the dentry is on its way, instead of
 *     after; the group keeps the table as large as 8-byte buckets made it.
 */
#ifndef MC_SHM_H
#define MC_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MC_SHM_MAGIC   0x4d43534du /* "MCSM" */
#define MC_SHM_VERSION 6u   /* 3: 40-byte state records named by mc_eref; 4: name hash folds parent and length last; 5: inode times split (mc_time_t); 6: dentry buckets in 64-byte groups, with the first dentry's inode (note 12) */

#define MC_OFF_SHIFT 4u
#define MC_OFF_UNIT  (1u << MC_OFF_SHIFT)
#define MC_PAGE_SHIFT 16u
#define MC_PAGE_SIZE  (1u << MC_PAGE_SHIFT)
/* 32-bit offsets in 16-byte units address at most 64 GiB. */
#define MC_SHM_MAX_SIZE ((uint64_t)UINT32_MAX << MC_OFF_SHIFT)

#define MC_NAME_MAX   255u
#define MC_PATH_MAX   4096u
#define MC_SYMLINK_MAX 4095u
#define MC_NAME_INLINE 16u     /* names up to this length live in the dentry */

typedef uint32_t mc_off_t;

/* Page types (page_types[] entries). Blob classes hold 2^k bytes. */
enum mc_page_type {
	MC_PT_FREE = 0,   /* not handed out yet */
	MC_PT_META = 1,   /* header, page table, hash buckets */
	MC_PT_DENTRY = 2,
	MC_PT_INODE = 3,
	MC_PT_DIRX = 4,
	MC_PT_BLOB32 = 5, /* MC_PT_BLOB32 + k holds slots of 32 << k bytes */
	MC_PT_BLOB_LAST = MC_PT_BLOB32 + 7, /* 4096-byte slots */
	MC_PT_EXTENT = MC_PT_BLOB_LAST + 1, /* extent chunks (struct mc_echunk_tail) */
};
#define MC_BLOB_CLASSES 8u

struct mc_shm_header {
	uint32_t magic;
	uint32_t version;
	uint64_t size;            /* bytes in the segment */
	uint32_t npages;
	uint32_t page_types_off;  /* byte offset of uint8_t page_types[npages] */
	uint32_t dbuckets_off;    /* byte offset of struct mc_dgroup[dbucket_mask + 1] (note 12) */
	uint32_t dbucket_mask;    /* dentry bucket groups - 1 */
	uint32_t ibuckets_off;    /* byte offset of struct mc_bucket[ibucket_mask + 1] */
	uint32_t ibucket_mask;
	uint64_t hash_seed;
	mc_off_t root;            /* inode slot of ino 1 */
	uint32_t server_pid;
	_Atomic uint32_t rename_seq;
	_Atomic uint32_t closed;   /* 1 once the server stopped serving: readers answer ENOTCONN */
	_Atomic uint64_t committed_seq; /* last journal batch known durable */
	/* The client area's layout (note 9); 0 sizes: no area. */
	uint64_t area_size;        /* bytes in the area */
	uint32_t area_nslots;      /* client statistics slots, at byte 0 of the area */
	uint32_t area_refbits_off; /* byte offset of the referenced bitmap (8-byte aligned) */
	uint32_t area_refbits_bytes; /* a multiple of 8 */
	uint32_t pad;
	_Atomic uint64_t heartbeat_ms; /* note 10 */
	/* The index of loaded extent maps (note 11); 0: none. */
	uint32_t ebuckets_off;     /* byte offset of struct mc_bucket[ebucket_mask + 1] */
	uint32_t ebucket_mask;
	uint8_t reserved[24];
};

/* The server's heartbeat period, and the age past which a reader checks
 * that the server still lives (note 10). */
#define MC_HEARTBEAT_MS       100u
#define MC_HEARTBEAT_STALE_MS 300u

struct mc_bucket {
	_Atomic uint32_t seq;
	mc_off_t head;            /* first dentry (or inode) in the chain */
};

/* A dentry bucket, and the cache line of MC_DGROUP_BUCKETS of them with
 * their seq (note 12). */
#define MC_DGROUP_BUCKETS 7u

struct mc_dbucket {
	mc_off_t head;            /* first dentry in the chain */
	_Atomic mc_off_t inode;   /* the inode slot head names, 0 if none: a prefetch hint */
};

struct mc_dgroup {
	_Atomic uint32_t seq;     /* around every change of any chain of the group */
	uint32_t reserved;        /* 0 */
	struct mc_dbucket b[MC_DGROUP_BUCKETS];
};

/* The bucket of its group that a name's hash picks: the high 32 bits of
 * the hash scaled to 0..MC_DGROUP_BUCKETS - 1 (the low bits pick the group). */
static inline uint32_t mc_dgroup_slot(uint64_t hash)
{
	return (uint32_t)(((hash >> 32) * MC_DGROUP_BUCKETS) >> 32);
}

/* Dentry flags. */
#define MC_D_POSITIVE  (1u << 0)  /* names an inode (else negative: name is absent) */
#define MC_D_LONGNAME  (1u << 1)  /* name lives in a blob (name.blob) */
#define MC_D_DIRTY0    (1u << 2)  /* changed in an uncommitted batch of even number */
#define MC_D_DIRTY1    (1u << 3)  /* changed in an uncommitted batch of odd number */
#define MC_D_LIVE      (1u << 4)  /* slot in use */

/* 48 bytes. Key: (parent inode slot, name); hashed as (parent ino, name). */
struct mc_dentry {
	_Atomic uint32_t seq;
	mc_off_t hnext;           /* next dentry in the hash chain */
	mc_off_t parent;          /* inode slot of the parent directory */
	mc_off_t inode;           /* inode slot, 0 when negative */
	mc_off_t sib_next;        /* parent's child list, in cookie order */
	mc_off_t sib_prev;
	uint32_t cookie;          /* per-directory monotonic child id (readdir cursor) */
	uint8_t namelen;          /* 1..255 */
	uint8_t dtype;            /* DT_* of the inode, 0 when negative */
	uint16_t flags;           /* MC_D_* */
	union {
		char inl[MC_NAME_INLINE];
		mc_off_t blob;        /* MC_D_LONGNAME: blob slot holding namelen bytes */
	} name;
};

/* Inode flags. */
#define MC_I_DIRTY0   (1u << 0)
#define MC_I_DIRTY1   (1u << 1)
#define MC_I_LIVE     (1u << 2)

/* Times in the segment (mc_time_t): seconds since the epoch in the high 34
 * bits, signed (1697-10-17..2242-03-16 UTC, the range of MC_TIME_SEC_MIN..
 * MC_TIME_SEC_MAX; times outside are clamped to it, as Linux clamps to a
 * file system's range), nanoseconds (0..999999999) in the low 30 bits. A
 * reader splits one with a shift and a mask, no division. The journal and
 * the store keep nanoseconds since the epoch; server/inode.c converts. */
typedef int64_t mc_time_t;
#define MC_TIME_NSEC_BITS 30
#define MC_TIME_NSEC_MASK ((INT64_C(1) << MC_TIME_NSEC_BITS) - 1)
#define MC_TIME_SEC_MAX   ((INT64_C(1) << (63 - MC_TIME_NSEC_BITS)) - 1)
#define MC_TIME_SEC_MIN   (-(INT64_C(1) << (63 - MC_TIME_NSEC_BITS)))

/* The seconds (arithmetic shift: gcc and clang keep the sign) and the
 * nanoseconds of t. */
static inline int64_t mc_time_sec(mc_time_t t)
{
	return t >> MC_TIME_NSEC_BITS;
}

static inline long mc_time_nsec(mc_time_t t)
{
	return (long)(t & MC_TIME_NSEC_MASK);
}

/* sec and nsec (0..999999999) as a time, clamped to the range. */
static inline mc_time_t mc_time_make(int64_t sec, long nsec)
{
	if (sec > MC_TIME_SEC_MAX) {
		sec = MC_TIME_SEC_MAX;
		nsec = 999999999;
	} else if (sec < MC_TIME_SEC_MIN) {
		sec = MC_TIME_SEC_MIN;
		nsec = 0;
	}
	return (mc_time_t)(((uint64_t)sec << MC_TIME_NSEC_BITS) | (uint64_t)nsec);
}

/* ns since the epoch as a time (clamped), and back (exact: the range fits). */
static inline mc_time_t mc_time_from_ns(int64_t ns)
{
	int64_t s = ns / 1000000000, r = ns % 1000000000;
	if (r < 0) {
		r += 1000000000;
		s--;
	}
	return mc_time_make(s, (long)r);
}

static inline int64_t mc_time_ns(mc_time_t t)
{
	return mc_time_sec(t) * 1000000000 + mc_time_nsec(t);
}

/* 64 bytes. */
struct mc_inode {
	_Atomic uint32_t seq;
	mc_off_t hnext;           /* next inode in its ino hash chain */
	uint64_t ino;
	uint16_t mode;            /* S_IFMT | permission bits */
	uint16_t flags;           /* MC_I_* */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	union {
		uint64_t size;        /* regular file */
		struct {
			uint32_t nentries; /* directory: entries in it (st_size = 40 + 20 * n, as tmpfs) */
			mc_off_t dirx;     /* directory: its mc_dirx slot, 0 if none */
		} dir;
		struct {
			uint32_t len;      /* symlink: target length (st_size) */
			mc_off_t blob;     /* symlink: blob slot holding the target */
		} lnk;
	} u;
	mc_time_t atime;          /* mc_time_t: no division to read */
	mc_time_t mtime;
	mc_time_t ctime;
};

/* Directory flags. */
#define MC_X_COMPLETE (1u << 0)  /* every child is cached: a miss is ENOENT */

/* 32 bytes. Cached-children state of a directory. */
struct mc_dirx {
	_Atomic uint32_t seq;
	uint32_t flags;           /* MC_X_* */
	mc_off_t head;            /* first child dentry (lowest cookie) */
	mc_off_t tail;
	uint32_t ncached;         /* cached child dentries, positive and negative */
	uint32_t nneg;            /* of which negative */
	uint32_t next_cookie;
	uint32_t rm_seq;          /* server bookkeeping (note 8): low 32 bits of the batch
	                           * of the last removal freed from it while complete */
};

/* Extent trees (server/extent.c, server/extent_state.c). Each inode's tree
 * lives in its own arena: a list of MC_ECHUNK_SIZE-byte chunks carved from
 * MC_PT_EXTENT pages, each chunk a run of equal slots then a 16-byte tail.
 * A state tree's slots are 40 bytes (MC_ES_SLOTS of them: a state record),
 * an extent map's 48 (MC_EM_SLOTS: a record and its phys); both runs end at
 * MC_ECHUNK_TAIL_OFF, so a chunk serves either kind. The tree head (struct
 * mc_etree) opens the arena's first chunk, in its first MC_E*_HEAD_SLOTS
 * slots, so the tree's offset is its first chunk's. Freeing a tree hands its
 * whole chunk list back at once; readers validate records against the
 * head's seq (bumped around every change of the tree): records carry none.
 *
 * Records refer to each other by reference (mc_eref), not by offset: a
 * 40-byte slot is not 16-byte aligned. A reference is the chunk's number
 * (its byte offset / MC_ECHUNK_SIZE) << 8 | MC_EREF_MAP for a map's slot |
 * the slot's index; 0 is none (chunk 0 is the header's). */
#define MC_ECHUNK_SIZE     4096u
#define MC_ECHUNK_TAIL_OFF 4080u
#define MC_ES_SLOT         40u
#define MC_ES_SLOTS        (MC_ECHUNK_TAIL_OFF / MC_ES_SLOT)   /* 102 */
#define MC_ES_HEAD_SLOTS   2u
#define MC_EM_SLOT         48u
#define MC_EM_SLOTS        (MC_ECHUNK_TAIL_OFF / MC_EM_SLOT)   /* 85 */
#define MC_EM_HEAD_SLOTS   1u
#define MC_EREF_MAP        0x80u
#define MC_EREF_SLOT_MASK  0x7fu

typedef uint32_t mc_eref;

/* Extent-state bits; bits 8..31 are the application's. */
#define MC_ES_DIRTY     (1u << 0)  /* data newer than its backing store */
#define MC_ES_DELALLOC  (1u << 1)  /* dirty, physical space not allocated yet */
#define MC_ES_LOCKED    (1u << 2)  /* exclusive range lock held by `owner` */
#define MC_ES_WRITEBACK (1u << 3)  /* being written back */
#define MC_ES_UPTODATE  (1u << 4)  /* cached contents valid */
#define MC_ES_APP_FIRST (1u << 8)  /* first bit left to applications */

/* 40 bytes: one record of an extent tree over the inclusive [start, end]:
 * in a state tree, bits over the range; in an extent map, the extent's
 * flags (its phys follows, struct mc_emap). */
struct mc_estate {
	uint32_t bits;            /* state: MC_ES_*, never 0 while linked; map: the extent's flags */
	uint32_t owner;           /* state, LOCKED: the holder's id; else 0 */
	uint64_t start;
	uint64_t end;             /* inclusive */
	mc_eref left, right;      /* treap children, keyed by start */
	mc_eref prev, next;       /* neighbours in start order (next: free-list link) */
};

/* 48 bytes: one record of an extent map. */
struct mc_emap {
	struct mc_estate r;
	uint64_t phys;            /* physical location of r.start */
};

/* 48 bytes: the head of one inode's tree, at the start of its first chunk. */
struct mc_etree {
	_Atomic uint32_t seq;     /* odd while the tree changes */
	mc_eref root;             /* treap root */
	mc_eref first, last;      /* records in start order */
	mc_eref hint;             /* the record last touched (sequential calls) */
	mc_eref free;             /* freed record slots, linked through next */
	mc_off_t chunk_tail;      /* last chunk of the arena (the head's is first) */
	uint16_t bump;            /* slots handed out of chunk_tail */
	uint16_t kind;            /* 0: state tree; MC_EREF_MAP: extent map */
	uint32_t count;           /* linked records */
	uint32_t nchunks;
	uint64_t ino;
};

/* The last 16 bytes of a chunk. */
struct mc_echunk_tail {
	mc_off_t next;            /* next chunk of the arena or of the free list */
	mc_off_t hnext;           /* first chunk of a linked map: next tree in its ebucket chain */
	uint32_t pad[2];
};

/* The byte offset in the segment of the slot ref names, 0 when ref is not
 * a slot's (a record's or, in a state tree, a head's second). Readers check
 * the page's type too. */
static inline uint64_t mc_eref_byte(mc_eref ref)
{
	uint32_t slot = ref & MC_EREF_SLOT_MASK;
	uint32_t size = ref & MC_EREF_MAP ? MC_EM_SLOT : MC_ES_SLOT;
	uint32_t nslots = ref & MC_EREF_MAP ? MC_EM_SLOTS : MC_ES_SLOTS;
	if ((ref >> 8) == 0 || slot >= nslots)
		return 0;
	return (uint64_t)(ref >> 8) * MC_ECHUNK_SIZE + (uint64_t)slot * size;
}

_Static_assert(sizeof(struct mc_estate) == MC_ES_SLOT, "state record is 40 bytes");
_Static_assert(sizeof(struct mc_emap) == MC_EM_SLOT, "map record is 48 bytes");
_Static_assert(sizeof(struct mc_etree) <= MC_ES_HEAD_SLOTS * MC_ES_SLOT &&
               sizeof(struct mc_etree) <= MC_EM_HEAD_SLOTS * MC_EM_SLOT,
               "tree head fits its slots");
_Static_assert(MC_ES_SLOTS * MC_ES_SLOT == MC_ECHUNK_TAIL_OFF &&
               MC_EM_SLOTS * MC_EM_SLOT == MC_ECHUNK_TAIL_OFF,
               "slots tile a chunk up to its tail");
_Static_assert(MC_ECHUNK_TAIL_OFF + sizeof(struct mc_echunk_tail) == MC_ECHUNK_SIZE,
               "the tail ends the chunk");
_Static_assert((MC_SHM_MAX_SIZE / MC_ECHUNK_SIZE) <= (1ull << 24), "chunk numbers fit 24 bits");

_Static_assert(sizeof(struct mc_dentry) == 48, "dentry slot is 48 bytes");
_Static_assert(sizeof(struct mc_inode) == 64, "inode slot is 64 bytes");
_Static_assert(sizeof(struct mc_dirx) == 32, "dirx slot is 32 bytes");
_Static_assert(sizeof(struct mc_dgroup) == 64, "dentry bucket group is one cache line");
_Static_assert(sizeof(struct mc_shm_header) <= 256, "header fits its first 256 bytes");

/* The client area: a second, small segment that clients map read-write.
 * It holds only what a misbehaving client may scribble on without harming
 * the cache or another client: struct mc_client_slot[area_nslots] from byte
 * 0, then the referenced bitmap (one bit per 16-byte offset unit of the main
 * segment; a dentry at offset `off` owns bit `off`), which the shrinker
 * test-and-clears. It has no header: its layout is in the main segment's
 * (mc_shm_header.area_*), which clients cannot write. */

/* One cache line, written by its client only (relaxed atomics), read by the
 * server for /stats, which takes each counter as at most
 * MC_SLOT_COUNTER_MAX and never lets a total go down. */
#define MC_SLOT_COUNTER_MAX (1ull << 48)

struct mc_client_slot {
	_Atomic uint64_t hits;      /* calls answered from shared memory */
	_Atomic uint64_t misses;    /* calls the cache could not answer: sent as RPC */
	_Atomic uint64_t retries;   /* reads restarted because a seq moved */
	_Atomic uint64_t fallbacks; /* walks that hit a bound and went to RPC */
	_Atomic uint64_t rpcs;      /* requests sent */
	uint64_t reserved[3];
};

_Static_assert(sizeof(struct mc_client_slot) == 64, "client slot is one cache line");

/* Mark the dentry at off as referenced (CLOCK): test first so a hot entry
 * costs no write. */
static inline void mc_ref_mark(_Atomic uint64_t *bits, uint64_t nbits, mc_off_t off)
{
	if (off >= nbits)
		return;
	_Atomic uint64_t *w = &bits[off >> 6];
	uint64_t b = 1ull << (off & 63);
	if (!(atomic_load_explicit(w, memory_order_relaxed) & b))
		atomic_fetch_or_explicit(w, b, memory_order_relaxed);
}

static inline size_t mc_blob_size(unsigned cls) { return (size_t)32 << cls; }

/* Byte address of an offset; the caller has range-checked it. */
static inline void *mc_shm_at(const void *base, mc_off_t off)
{
	return (char *)base + ((size_t)off << MC_OFF_SHIFT);
}

/* Is [off, off + size) inside the segment and inside a page of type t? */
static inline int mc_shm_valid(const void *base, uint64_t seg_size, const uint8_t *page_types,
                               mc_off_t off, size_t size, unsigned t)
{
	uint64_t b = (uint64_t)off << MC_OFF_SHIFT;
	if (off == 0 || b + size > seg_size)
		return 0;
	if ((b >> MC_PAGE_SHIFT) != ((b + size - 1) >> MC_PAGE_SHIFT))
		return 0;
	return page_types[b >> MC_PAGE_SHIFT] == t;
}

/* The dentry hash: both sides compute the same bucket for (parent ino,
 * name). The name is folded 8 bytes at a time (the last word zero-padded)
 * from the seed, and the parent and the length come in at the end, so that
 * a path parser can fold a component while it looks for its end
 * (mc_path_next_hash in mc_path.h) and finish the hash once it knows the
 * directory. */
#define MC_HASH_MUL 0x9e3779b97f4a7c15ull

static inline uint64_t mc_hash_mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * MC_HASH_MUL;
	return h ^ (h >> 29);
}

static inline uint64_t mc_hash_fin(uint64_t h, uint64_t parent_ino, size_t len)
{
	h = (h ^ (parent_ino * MC_HASH_MUL) ^ len) * MC_HASH_MUL;
	return h ^ (h >> 32);
}

/* The fold of name alone (mc_hash_mix over its words). */
static inline uint64_t mc_hash_part(uint64_t seed, const char *name, size_t len)
{
	uint64_t h = seed;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, name, 8);
		h = mc_hash_mix(h, w);
		name += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;
		memcpy(&w, name, len);
		h = mc_hash_mix(h, w);
	}
	return h;
}

static inline uint64_t mc_hash_name(uint64_t seed, uint64_t parent_ino, const char *name, size_t len)
{
	return mc_hash_fin(mc_hash_part(seed, name, len), parent_ino, len);
}

static inline uint64_t mc_hash_ino(uint64_t seed, uint64_t ino)
{
	uint64_t h = (ino ^ seed) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

#endif
