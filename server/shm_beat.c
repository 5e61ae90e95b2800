/* shm_beat.c - the segment's heartbeat (shm.h, shm_beat_start): one thread
 * that writes the monotonic time in milliseconds into hdr->heartbeat_ms
 * every MC_HEARTBEAT_MS, so that a client that finds it stale knows the
 * server may be gone and asks the socket (shm.c note 4: the only writer
 * of heartbeat_ms once the segment is served). Between its first beats it
 * faults in the metadata area, a run at a time (shm_populate_meta_run),
 * yielding the CPU between runs and never past the next beat. */
#include "shm.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <time.h>

#include "clock.h"

static void *beat_main(void *arg)
{
	struct shm *s = arg;
	bool populate = true;
	pthread_mutex_lock(&s->beat_mu);
	while (!s->beat_stop) {
		uint64_t now = mono_ns();
		atomic_store_explicit(&s->hdr->heartbeat_ms, now / 1000000u, memory_order_relaxed);
		uint64_t next = now + (uint64_t)MC_HEARTBEAT_MS * 1000000u;
		while (populate && !s->beat_stop && mono_ns() < next) {
			pthread_mutex_unlock(&s->beat_mu);
			populate = shm_populate_meta_run(s);
			sched_yield();
			pthread_mutex_lock(&s->beat_mu);
		}
		struct timespec ts = { (time_t)(next / 1000000000u), (long)(next % 1000000000u) };
		while (!s->beat_stop && pthread_cond_timedwait(&s->beat_cv, &s->beat_mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&s->beat_mu);
	return NULL;
}

int shm_beat_start(struct shm *s)
{
	if (s->beating)
		return -EALREADY;
	s->beat_stop = false;
	int rc = pthread_create(&s->beat, NULL, beat_main, s);
	if (rc != 0)
		return -rc;
	s->beating = true;
	return 0;
}

void shm_beat_stop(struct shm *s)
{
	if (!s->beating)
		return;
	pthread_mutex_lock(&s->beat_mu);
	s->beat_stop = true;
	pthread_cond_signal(&s->beat_cv);
	pthread_mutex_unlock(&s->beat_mu);
	pthread_join(s->beat, NULL);
	s->beating = false;
}
