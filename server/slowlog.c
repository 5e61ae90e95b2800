/* slowlog.c - the slow-operation log: a ring of the last slow operations.
 *
 * Invariants:
 *  1. threshold_us is read without the mutex (slowlog_wants, on every
 *     operation) and written under it; everything else is read and written
 *     only under the mutex.
 *  2. ring holds cap slots; the n newest entries end at slot head - 1
 *     (modulo cap), n <= cap. cap == 0: nothing is kept.
 *  3. Entry ids count every entry ever added, from 1: the newest has id
 *     total, so a reader sees how many it missed.
 */
#include "slowlog.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "stats.h"

struct slowlog_entry {
	uint64_t id;
	uint64_t time_us;       /* CLOCK_REALTIME */
	uint64_t duration_us;
	unsigned code;
	pid_t pid;
	uid_t uid;
	bool truncated;
	uint8_t path_len;
	char path[SLOWLOG_PATH_MAX];
};

struct slowlog {
	_Atomic uint64_t threshold_us;  /* first: slowlog_wants reads it */
	pthread_mutex_t mu;
	struct slowlog_entry *ring;
	unsigned cap, head, n;
	uint64_t total;
};

_Static_assert(offsetof(struct slowlog, threshold_us) == 0, "slowlog_wants reads it first");

int slowlog_new(uint64_t threshold_us, unsigned max_len, struct slowlog **out)
{
	struct slowlog *sl;

	if (max_len > SLOWLOG_LEN_MAX)
		return -EINVAL;
	sl = calloc(1, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	if (max_len > 0) {
		sl->ring = calloc(max_len, sizeof(*sl->ring));
		if (!sl->ring) {
			free(sl);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&sl->mu, NULL);
	atomic_init(&sl->threshold_us, threshold_us);
	sl->cap = max_len;
	*out = sl;
	return 0;
}

void slowlog_free(struct slowlog *sl)
{
	if (!sl)
		return;
	pthread_mutex_destroy(&sl->mu);
	free(sl->ring);
	free(sl);
}

int slowlog_configure(struct slowlog *sl, uint64_t threshold_us, unsigned max_len)
{
	struct slowlog_entry *ring = NULL;

	if (max_len > SLOWLOG_LEN_MAX)
		return -EINVAL;
	pthread_mutex_lock(&sl->mu);
	if (max_len != sl->cap) {
		if (max_len > 0) {
			ring = calloc(max_len, sizeof(*ring));
			if (!ring) {
				pthread_mutex_unlock(&sl->mu);
				return -ENOMEM;
			}
		}
		free(sl->ring);
		sl->ring = ring;
		sl->cap = max_len;
		sl->head = sl->n = 0;
	}
	atomic_store_explicit(&sl->threshold_us, threshold_us, memory_order_relaxed);
	pthread_mutex_unlock(&sl->mu);
	return 0;
}

/* Where to cut a path longer than SLOWLOG_PATH_MAX: before the character
 * that straddles the bound, so that a path in UTF-8 stays valid (a cut
 * character would turn every non-ASCII byte into '?', path_json). */
static size_t path_cut(const char *path)
{
	size_t n = SLOWLOG_PATH_MAX;

	/* Back over continuation bytes (10xxxxxx) to the character's start;
	 * at most 3 of them in UTF-8, else the bytes are not UTF-8 anyway. */
	for (unsigned i = 0; i < 3 && n > 0 && ((unsigned char)path[n] & 0xc0) == 0x80; i++)
		n--;
	return ((unsigned char)path[n] & 0xc0) == 0x80 ? SLOWLOG_PATH_MAX : n;
}

void slowlog_add(struct slowlog *sl, const struct slowlog_op *op)
{
	struct timespec ts;
	size_t len = op->path ? op->path_len : 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&sl->mu);
	sl->total++;
	if (sl->cap > 0) {
		struct slowlog_entry *e = &sl->ring[sl->head];

		e->id = sl->total;
		e->time_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
		e->duration_us = op->duration_us;
		e->code = op->code;
		e->pid = op->pid;
		e->uid = op->uid;
		e->truncated = len > SLOWLOG_PATH_MAX;
		e->path_len = (uint8_t)(e->truncated ? path_cut(op->path) : len);
		if (e->path_len)
			memcpy(e->path, op->path, e->path_len);
		sl->head = (sl->head + 1) % sl->cap;
		if (sl->n < sl->cap)
			sl->n++;
	}
	pthread_mutex_unlock(&sl->mu);
}

uint64_t slowlog_total(struct slowlog *sl)
{
	pthread_mutex_lock(&sl->mu);
	uint64_t t = sl->total;
	pthread_mutex_unlock(&sl->mu);
	return t;
}

/* A path as a JSON string: bytes that are not valid UTF-8 (or a cut
 * character) become '?', since jansson refuses invalid UTF-8. */
static json_t *path_json(const struct slowlog_entry *e)
{
	char buf[SLOWLOG_PATH_MAX + 1];

	memcpy(buf, e->path, e->path_len);
	buf[e->path_len] = '\0';
	json_t *j = json_stringn(buf, e->path_len);
	if (j)
		return j;
	for (size_t i = 0; i < e->path_len; i++)
		if ((unsigned char)buf[i] >= 0x80)
			buf[i] = '?';
	return json_stringn(buf, e->path_len);
}

static json_t *entry_json(const struct slowlog_entry *e)
{
	json_t *path = path_json(e);

	if (!path)
		return NULL;
	return json_pack("{s:I,s:f,s:f,s:s,s:o,s:b,s:i,s:I}",
	                 "id", (json_int_t)e->id,
	                 "time", (double)e->time_us / 1e6,
	                 "duration_seconds", (double)e->duration_us / 1e6,
	                 "op", stats_op_name(e->code),
	                 "path", path,
	                 "path_truncated", e->truncated,
	                 "pid", (int)e->pid,
	                 "uid", (json_int_t)e->uid);
}

int slowlog_render(struct slowlog *sl, unsigned n, char **out, size_t *len)
{
	json_t *arr = json_array();
	int rc = -ENOMEM;

	if (!arr)
		return -ENOMEM;
	if (sl) {
		pthread_mutex_lock(&sl->mu);
		unsigned k = n == 0 || n > sl->n ? sl->n : n;
		for (unsigned i = 0; i < k; i++) {
			unsigned slot = (sl->head + sl->cap - 1 - i) % sl->cap;
			if (json_array_append_new(arr, entry_json(&sl->ring[slot])) != 0) {
				pthread_mutex_unlock(&sl->mu);
				goto fail;
			}
		}
		pthread_mutex_unlock(&sl->mu);
	}
	rc = stats_json_dump(arr, out, len);
fail:
	json_decref(arr);
	return rc;
}
