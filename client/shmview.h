/* shmview.h - the client's read-only view of the server's shared-memory
 * segment: path walks, stat, readlink and directory listings answered with
 * no system call (the kernel's RCU-walk, with seq counters instead of RCU).
 *
 * Every function answers in one of three ways: 0 (an answer from memory),
 * a negative errno that the cache can vouch for (-ENOENT from a negative
 * dentry or a complete directory, -ENOTDIR, -EACCES, -ENAMETOOLONG,
 * -EINVAL), or VIEW_MISS: the cache cannot answer (something is not cached,
 * a bound was hit, the data kept moving) and the caller asks the server.
 * -ENOTCONN: the server stopped serving this segment.
 */
#ifndef MC_SHMVIEW_H
#define MC_SHMVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mc_shm.h"
#include "shmprefix.h"

#define VIEW_MISS 1

/* Bounds of one walk; hitting one is a VIEW_MISS (a fallback). */
struct view_limits {
	unsigned chain;      /* dentries looked at in one hash chain */
	unsigned depth;      /* directories on the walk's stack (<= VIEW_DEPTH_MAX) */
	unsigned retries;    /* restarts after a seq moved */
	unsigned links;      /* nested symlinks followed (<= VIEW_LINKS_MAX) */
};
#define VIEW_DEPTH_MAX 256u
#define VIEW_LINKS_MAX 8u

struct view_cred {
	uint32_t uid, gid;
	int ngroups;
	uint32_t groups[64];
};

/* The credentials local answers check: this thread's from mc_cred_set(),
 * else own (the connection's). Until some thread first acts for other
 * credentials, view_cred_any is false and the thread-local is not read: a
 * thread that acts set view_cred_any itself before (its own store is
 * visible to it), and a thread that never acted reads own either way. */
extern _Atomic bool view_cred_any;
const struct view_cred *view_cred_acting_tls(const struct view_cred *own);
static inline const struct view_cred *view_cred_acting(const struct view_cred *own)
{
	if (!atomic_load_explicit(&view_cred_any, memory_order_relaxed))
		return own;
	return view_cred_acting_tls(own);
}
/* Make c (NULL: none) this thread's acting credentials; c must outlive
 * the thread's use of it. */
void view_cred_act(const struct view_cred *c);

/* Set up at connect and constant afterwards: any number of threads may
 * walk one view at once. */
struct view {
	const char *base;
	uint64_t size;
	const struct mc_shm_header *hdr;
	const uint8_t *ptypes;
	uint32_t npages;                  /* pages in the segment (ptypes[npages]) */
	const struct mc_dgroup *dgroups;  /* dentry bucket groups (mc_shm.h note 12) */
	const struct mc_bucket *ibuckets;
	const struct mc_bucket *ebuckets; /* loaded extent maps; NULL: none */
	uint32_t dmask, imask, emask;
	uint64_t seed;
	_Atomic uint64_t *refbits;        /* client area bitmap, or NULL */
	uint64_t nbits;
	struct mc_client_slot *slot;      /* this client's counters, or NULL */
	struct view_limits lim;
	struct view_cred cred;
	/* Resolved directory prefixes (shmprefix.c), shared by the threads. */
	struct prefix_entry prefixes[PREFIX_SLOTS];
};

/* Check the segment header and set v up over it (cred and limits are the
 * caller's to fill; view_default_limits() gives the usual ones).
 * -EPROTO when base/size is not a segment of this layout version. */
int view_init(struct view *v, const void *base, uint64_t size);
void view_default_limits(struct view_limits *l);

int view_stat(struct view *v, const char *path, size_t len, bool follow, struct stat *st);
/* Stat a cached inode by number (an open descriptor). */
int view_stat_ino(struct view *v, uint64_t ino, struct stat *st);
/* Copies at most cap bytes of the target into buf, sets *out_len. */
int view_readlink(struct view *v, const char *path, size_t len, char *buf, size_t cap,
                  size_t *out_len);

/* A directory listing read from memory. cookie: entries with a larger
 * cookie come next (the same cursor the server's OP_READDIR uses). */
struct view_dir {
	mc_off_t dir;         /* inode slot */
	uint64_t ino;
	uint64_t cookie;      /* last cookie returned */
	mc_off_t last;        /* dentry of that cookie, a hint to resume */
};
struct view_dirent {
	uint64_t ino;
	uint32_t cookie;
	uint8_t type;
	uint8_t namelen;
	char name[MC_NAME_MAX + 1];
};
/* Resolve path to a complete directory the caller may read. */
int view_opendir(struct view *v, const char *path, size_t len, struct view_dir *d);
/* Up to max entries after d->cookie into out; *n how many, *eof at the end.
 * On VIEW_MISS nothing was consumed: continue with the server from
 * d->cookie. */
int view_readdir(struct view *v, struct view_dir *d, struct view_dirent *out, unsigned max,
                 unsigned *n, bool *eof);

/* Extent maps (client/extview.c): the extents of a loaded map that overlap
 * [off, off + len) (len 0: to the end), whole and in order; up to max into
 * out and their number in *n. VIEW_MISS when the map is not loaded (the
 * server loads it) or a bound was hit. */
struct view_extent {
	uint64_t off, len, phys;
	uint32_t flags;
};
int view_extent_map(struct view *v, uint64_t ino, uint64_t off, uint64_t len,
                    struct view_extent *out, size_t max, size_t *n);

/* Extent-state trees (client/extview.c), answered as the server's
 * estate_test and estate_find would at one instant. view_range_test: *res
 * is 1 when every byte of [q->start, q->end] carries every bit of q->bits
 * (q->all) or some byte some bit (!q->all), else 0. view_range_find: *found
 * is 1 with [q->start, q->end] the first run at or after q->from carrying
 * some bit of q->bits, else 0 (q->start and q->end then 0). Both:
 * VIEW_MISS when ino has no state tree (the server answers: it also knows
 * what the descriptor is) or a bound was hit; -ENOTCONN when the server
 * stopped serving. q->start <= q->end and q->bits != 0 are the caller's. */
struct view_range {
	uint64_t start, end, from;
	uint32_t bits;
	bool all;
};
int view_range_test(struct view *v, uint64_t ino, const struct view_range *q, int *res);
int view_range_find(struct view *v, uint64_t ino, struct view_range *q, int *found);

#endif
