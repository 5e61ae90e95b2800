/* area.h - the client area (proto/mc_shm.h): a small segment clients map
 * read-write, holding per-client statistics slots and the referenced
 * bitmap. Nothing in it can corrupt the cache. */
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
	void *base;
	uint64_t size;
	struct mc_area_header *hdr;
	struct mc_client_slot *slots;
	_Atomic uint64_t *refbits;
	uint64_t nbits;
	pthread_mutex_t mu;          /* guards used[], pids[] and departed */
	uint8_t *used;
	int32_t *pids;
	struct area_totals departed; /* counters of clients that left */
};

/* Create the area for a main segment of shm_size bytes with nslots client
 * slots. -ENOMEM or the errno of memfd_create/ftruncate/mmap. */
int area_create(uint64_t shm_size, uint32_t nslots, struct area **out);
void area_destroy(struct area *a);

/* Take a free statistics slot for client pid (zeroed). -ENOSPC when all
 * are taken (the client then counts nowhere). */
int area_slot_get(struct area *a, int32_t pid, uint32_t *out);
/* Give a slot back; its counters go to the departed totals. */
void area_slot_put(struct area *a, uint32_t slot);

/* Sum of every live slot and of departed clients. */
void area_totals(struct area *a, struct area_totals *out);

/* Call fn for each live slot (pid and its counters). */
void area_each(struct area *a, void (*fn)(void *arg, int32_t pid, const struct area_totals *t),
               void *arg);

#endif
