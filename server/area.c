/* area.c - the client area: statistics slots and the referenced bitmap in a
 * small memfd that clients map read-write (proto/mc_shm.h).
 *
 * Invariants:
 *  1. A slot is owned by at most one connection (used[] under mu); its
 *     counters are written by that client only and read here.
 *  2. What a client writes here is never trusted for anything but
 *     statistics and eviction order. The layout (nslots, offsets, sizes)
 *     lives in struct area and in the read-only main segment; nothing is
 *     ever read back from the area to index or size anything.
 *  3. Every counter read from a slot is clamped to MC_SLOT_COUNTER_MAX and
 *     raised to seen[slot] (the last value taken), so a slot's contribution
 *     never goes down; departed and the totals add with saturation. With at
 *     most MC_AREA_SLOTS_MAX slots the live sum cannot overflow at all.
 */
#include "area.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Most slots an area may have: keeps the sum of clamped live counters far
 * from 2^64 (2^16 slots * 2^48). */
#define MC_AREA_SLOTS_MAX (1u << 16)

int area_create(uint64_t shm_size, uint32_t nslots, struct area **out)
{
	if (nslots == 0 || nslots > MC_AREA_SLOTS_MAX)
		return -EINVAL;
	struct area *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	int err;
	a->fd = -1;
	pthread_mutex_init(&a->mu, NULL);
	a->used = calloc(nslots, 1);
	a->pids = calloc(nslots, sizeof(*a->pids));
	a->seen = calloc(nslots, sizeof(*a->seen));
	if (!a->used || !a->pids || !a->seen) {
		err = -ENOMEM;
		goto fail;
	}
	uint64_t nbits = shm_size >> MC_OFF_SHIFT;
	uint64_t bits_off = (uint64_t)nslots * sizeof(struct mc_client_slot);
	uint64_t bits_bytes = ((nbits + 63) / 64) * 8;
	uint64_t size = (bits_off + bits_bytes + 4095) & ~4095ull;
	if (bits_bytes > UINT32_MAX || size > UINT32_MAX) {
		err = -EINVAL;
		goto fail;
	}
	a->fd = memfd_create("mcache-area", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)size) < 0 ||
	    fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		goto fail;
	}
	a->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		err = -errno;
		goto fail;
	}
	a->size = size;
	a->nslots = nslots;
	a->refbits_off = (uint32_t)bits_off;
	a->refbits_bytes = (uint32_t)bits_bytes;
	a->slots = a->base;
	a->refbits = (_Atomic uint64_t *)((char *)a->base + bits_off);
	a->nbits = bits_bytes * 8;
	*out = a;
	return 0;
fail:
	area_destroy(a);
	return err;
}

void area_destroy(struct area *a)
{
	if (!a)
		return;
	if (a->base)
		munmap(a->base, a->size);
	if (a->fd >= 0)
		close(a->fd);
	free(a->used);
	free(a->pids);
	free(a->seen);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

void area_publish(const struct area *a, struct mc_shm_header *h)
{
	h->area_size = a->size;
	h->area_nslots = a->nslots;
	h->area_refbits_off = a->refbits_off;
	h->area_refbits_bytes = a->refbits_bytes;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void totals_add(struct area_totals *d, const struct area_totals *s)
{
	d->hits = sat_add(d->hits, s->hits);
	d->misses = sat_add(d->misses, s->misses);
	d->retries = sat_add(d->retries, s->retries);
	d->fallbacks = sat_add(d->fallbacks, s->fallbacks);
	d->rpcs = sat_add(d->rpcs, s->rpcs);
}

/* One counter as the server takes it (invariant 3). */
static uint64_t counter_take(const _Atomic uint64_t *f, uint64_t seen)
{
	uint64_t v = atomic_load_explicit(f, memory_order_relaxed);
	if (v > MC_SLOT_COUNTER_MAX)
		v = MC_SLOT_COUNTER_MAX;
	return v < seen ? seen : v;
}

/* Read slot i into seen[i] and return it there (under mu). */
static const struct area_totals *do_slot_read(struct area *a, uint32_t i)
{
	const struct mc_client_slot *s = &a->slots[i];
	struct area_totals *t = &a->seen[i];
	t->hits = counter_take(&s->hits, t->hits);
	t->misses = counter_take(&s->misses, t->misses);
	t->retries = counter_take(&s->retries, t->retries);
	t->fallbacks = counter_take(&s->fallbacks, t->fallbacks);
	t->rpcs = counter_take(&s->rpcs, t->rpcs);
	return t;
}

static void slot_zero(struct mc_client_slot *s)
{
	atomic_store_explicit(&s->hits, 0, memory_order_relaxed);
	atomic_store_explicit(&s->misses, 0, memory_order_relaxed);
	atomic_store_explicit(&s->retries, 0, memory_order_relaxed);
	atomic_store_explicit(&s->fallbacks, 0, memory_order_relaxed);
	atomic_store_explicit(&s->rpcs, 0, memory_order_relaxed);
}

int area_slot_get(struct area *a, int32_t pid, uint32_t *out)
{
	int rc = -ENOSPC;
	pthread_mutex_lock(&a->mu);
	for (uint32_t i = 0; i < a->nslots; i++) {
		if (!a->used[i]) {
			a->used[i] = 1;
			a->pids[i] = pid;
			a->seen[i] = (struct area_totals){ 0 };
			slot_zero(&a->slots[i]);
			*out = i;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&a->mu);
	return rc;
}

void area_slot_put(struct area *a, uint32_t slot)
{
	pthread_mutex_lock(&a->mu);
	if (slot < a->nslots && a->used[slot]) {
		totals_add(&a->departed, do_slot_read(a, slot));
		slot_zero(&a->slots[slot]);
		a->seen[slot] = (struct area_totals){ 0 };
		a->used[slot] = 0;
	}
	pthread_mutex_unlock(&a->mu);
}

void area_totals(struct area *a, struct area_totals *out)
{
	struct area_totals t;
	pthread_mutex_lock(&a->mu);
	t = a->departed;
	for (uint32_t i = 0; i < a->nslots; i++)
		if (a->used[i])
			totals_add(&t, do_slot_read(a, i));
	pthread_mutex_unlock(&a->mu);
	*out = t;
}

void area_each(struct area *a, void (*fn)(void *arg, int32_t pid, const struct area_totals *t),
               void *arg)
{
	pthread_mutex_lock(&a->mu);
	for (uint32_t i = 0; i < a->nslots; i++)
		if (a->used[i])
			fn(arg, a->pids[i], do_slot_read(a, i));
	pthread_mutex_unlock(&a->mu);
}
