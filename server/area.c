/* area.c - the client area: statistics slots and the referenced bitmap in a
 * small memfd that clients map read-write (proto/mc_shm.h).
 *
 * Invariants:
 *  1. A slot is owned by at most one connection (used[] under mu); its
 *     counters are written by that client only and read here.
 *  2. What a client writes here is never trusted for anything but
 *     statistics and eviction order.
 */
#include "area.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int area_create(uint64_t shm_size, uint32_t nslots, struct area **out)
{
	struct area *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	int err;
	a->fd = -1;
	pthread_mutex_init(&a->mu, NULL);
	a->used = calloc(nslots, 1);
	a->pids = calloc(nslots, sizeof(*a->pids));
	if (!a->used || !a->pids) {
		err = -ENOMEM;
		goto fail;
	}
	uint64_t nbits = shm_size >> MC_OFF_SHIFT;
	uint64_t slots_off = 128;
	uint64_t bits_off = slots_off + (uint64_t)nslots * sizeof(struct mc_client_slot);
	uint64_t bits_bytes = ((nbits + 63) / 64) * 8;
	uint64_t size = (bits_off + bits_bytes + 4095) & ~4095ull;
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
	a->hdr = a->base;
	a->hdr->magic = MC_AREA_MAGIC;
	a->hdr->version = MC_AREA_VERSION;
	a->hdr->size = size;
	a->hdr->nslots = nslots;
	a->hdr->slots_off = (uint32_t)slots_off;
	a->hdr->refbits_off = (uint32_t)bits_off;
	a->hdr->refbits_bytes = (uint32_t)bits_bytes;
	a->slots = (struct mc_client_slot *)((char *)a->base + slots_off);
	a->refbits = (_Atomic uint64_t *)((char *)a->base + bits_off);
	a->nbits = nbits;
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
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static void slot_read(const struct mc_client_slot *s, struct area_totals *t)
{
	t->hits = atomic_load_explicit(&s->hits, memory_order_relaxed);
	t->misses = atomic_load_explicit(&s->misses, memory_order_relaxed);
	t->retries = atomic_load_explicit(&s->retries, memory_order_relaxed);
	t->fallbacks = atomic_load_explicit(&s->fallbacks, memory_order_relaxed);
	t->rpcs = atomic_load_explicit(&s->rpcs, memory_order_relaxed);
}

static void slot_zero(struct mc_client_slot *s)
{
	atomic_store_explicit(&s->hits, 0, memory_order_relaxed);
	atomic_store_explicit(&s->misses, 0, memory_order_relaxed);
	atomic_store_explicit(&s->retries, 0, memory_order_relaxed);
	atomic_store_explicit(&s->fallbacks, 0, memory_order_relaxed);
	atomic_store_explicit(&s->rpcs, 0, memory_order_relaxed);
}

static void totals_add(struct area_totals *d, const struct area_totals *s)
{
	d->hits += s->hits;
	d->misses += s->misses;
	d->retries += s->retries;
	d->fallbacks += s->fallbacks;
	d->rpcs += s->rpcs;
}

int area_slot_get(struct area *a, int32_t pid, uint32_t *out)
{
	int rc = -ENOSPC;
	pthread_mutex_lock(&a->mu);
	for (uint32_t i = 0; i < a->hdr->nslots; i++) {
		if (!a->used[i]) {
			a->used[i] = 1;
			a->pids[i] = pid;
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
	struct area_totals t;
	pthread_mutex_lock(&a->mu);
	if (slot < a->hdr->nslots && a->used[slot]) {
		slot_read(&a->slots[slot], &t);
		totals_add(&a->departed, &t);
		slot_zero(&a->slots[slot]);
		a->used[slot] = 0;
	}
	pthread_mutex_unlock(&a->mu);
}

void area_totals(struct area *a, struct area_totals *out)
{
	struct area_totals t;
	pthread_mutex_lock(&a->mu);
	*out = a->departed;
	for (uint32_t i = 0; i < a->hdr->nslots; i++) {
		if (a->used[i]) {
			slot_read(&a->slots[i], &t);
			totals_add(out, &t);
		}
	}
	pthread_mutex_unlock(&a->mu);
}

void area_each(struct area *a, void (*fn)(void *arg, int32_t pid, const struct area_totals *t),
               void *arg)
{
	struct area_totals t;
	pthread_mutex_lock(&a->mu);
	for (uint32_t i = 0; i < a->hdr->nslots; i++) {
		if (a->used[i]) {
			slot_read(&a->slots[i], &t);
			fn(arg, a->pids[i], &t);
		}
	}
	pthread_mutex_unlock(&a->mu);
}
