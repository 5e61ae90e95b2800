/* area.h - the client area (proto/mc_shm.h): a small segment clients map
 * read-write, holding per-client statistics slots and the referenced
 * bitmap. Nothing in it can corrupt the cache, crash the server or mislead
 * another client: its layout is kept here (and published in the read-only
 * main segment), never read back from the area. */
#ifndef MC_AREA_H
#define MC_AREA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mc_shm.h"

/* Client-side read-path figures, summed. */
struct area_totals {
	uint64_t hits, misses, retries, fallbacks, rpcs;
};

struct area {
	int fd;
	void *base;                  /* the writable area: data only */
	uint64_t size;
	uint32_t nslots;             /* the layout, private: never read from base */
	uint32_t refbits_off;
	uint32_t refbits_bytes;
	struct mc_client_slot *slots;
	_Atomic uint64_t *refbits;
	uint64_t nbits;
	pthread_mutex_t mu;          /* guards used[], pids[], seen[] and departed */
	uint8_t *used;
	int32_t *pids;
	struct area_totals *seen;    /* per slot: the clamped counters taken so far */
	struct area_totals departed; /* counters of clients that left (saturating) */
};

/* Create the area for a main segment of shm_size bytes with nslots client
 * slots (at least 1). -EINVAL (nslots 0 or too many), -ENOMEM or the errno
 * of memfd_create/ftruncate/mmap. */
int area_create(uint64_t shm_size, uint32_t nslots, struct area **out);
void area_destroy(struct area *a);

/* Write the area's layout into the main segment's header h, where clients
 * find it (before the first client connects). */
void area_publish(const struct area *a, struct mc_shm_header *h);

/* Take a free statistics slot for client pid (zeroed). -ENOSPC when all
 * are taken (the client then counts nowhere). */
int area_slot_get(struct area *a, int32_t pid, uint32_t *out);
/* Give a slot back; its counters go to the departed totals. A slot out of
 * range or not taken is ignored. */
void area_slot_put(struct area *a, uint32_t slot);

/* Sum of every live slot and of departed clients. Each counter of a slot
 * counts as at most MC_SLOT_COUNTER_MAX and as no less than it did at the
 * previous reading; sums saturate at UINT64_MAX. So whatever clients write,
 * no total wraps or goes down. */
void area_totals(struct area *a, struct area_totals *out);

/* Call fn for each live slot (pid and its counters, read as area_totals
 * reads them). fn runs under the area's lock: it must not call back. */
void area_each(struct area *a, void (*fn)(void *arg, int32_t pid, const struct area_totals *t),
               void *arg);

#endif
