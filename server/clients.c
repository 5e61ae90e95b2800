/* clients.c - the table of connected clients.
 *
 * Invariants:
 *  1. The list and each entry's link and listed flag change only under the
 *     table's mutex; an entry is listed from its connection's Hello until
 *     the connection closes (clients_remove runs before it is freed).
 *  2. pid, uid, gid and the times are written before the entry is listed
 *     and not changed while it is; requests is atomic, counted without the
 *     mutex.
 */
#include "clients.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "stats.h"

struct clients {
	pthread_mutex_t mu;
	TAILQ_HEAD(, client_ent) list;  /* oldest first */
	unsigned n;
};

int clients_new(struct clients **out)
{
	struct clients *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	TAILQ_INIT(&t->list);
	*out = t;
	return 0;
}

void clients_free(struct clients *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t);
}

void clients_add(struct clients *t, struct client_ent *e, pid_t pid, uid_t uid, gid_t gid)
{
	if (!t)
		return;
	e->pid = pid;
	e->uid = uid;
	e->gid = gid;
	e->since_us = clock_ns(CLOCK_REALTIME) / 1000u;
	e->since_mono_us = mono_us();
	atomic_store_explicit(&e->requests, 0, memory_order_relaxed);
	pthread_mutex_lock(&t->mu);
	if (!e->listed) {
		TAILQ_INSERT_TAIL(&t->list, e, link);
		e->listed = true;
		t->n++;
	}
	pthread_mutex_unlock(&t->mu);
}

void clients_remove(struct clients *t, struct client_ent *e)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	if (e->listed) {
		TAILQ_REMOVE(&t->list, e, link);
		e->listed = false;
		t->n--;
	}
	pthread_mutex_unlock(&t->mu);
}

unsigned clients_count(struct clients *t)
{
	pthread_mutex_lock(&t->mu);
	unsigned n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

int clients_render(struct clients *t, char **out, size_t *len)
{
	json_t *arr = json_array();
	struct client_ent *e;
	int rc = -ENOMEM;

	if (!arr)
		return -ENOMEM;
	if (t) {
		uint64_t now = mono_us();
		pthread_mutex_lock(&t->mu);
		TAILQ_FOREACH(e, &t->list, link) {
			json_t *o = json_pack("{s:i,s:I,s:I,s:I,s:f,s:f}",
			                      "pid", (int)e->pid,
			                      "uid", (json_int_t)e->uid,
			                      "gid", (json_int_t)e->gid,
			                      "requests", (json_int_t)atomic_load_explicit(
			                              &e->requests, memory_order_relaxed),
			                      "connected", (double)e->since_us / 1e6,
			                      "age_seconds", (double)(now - e->since_mono_us) / 1e6);
			if (json_array_append_new(arr, o) != 0) {
				pthread_mutex_unlock(&t->mu);
				goto fail;
			}
		}
		pthread_mutex_unlock(&t->mu);
	}
	rc = stats_json_dump(arr, out, len);
fail:
	json_decref(arr);
	return rc;
}
