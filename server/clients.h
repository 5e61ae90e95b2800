/* clients.h - the table of connected clients (pid, uid, requests, age) that
 * `mcachectl clients` lists. */
#ifndef MC_CLIENTS_H
#define MC_CLIENTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

/* One connected client, embedded in its connection. Filled by clients_add;
 * requests is counted by the connection's worker. */
struct client_ent {
	TAILQ_ENTRY(client_ent) link;
	bool listed;                  /* on the table's list */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint64_t since_us;            /* CLOCK_REALTIME at its Hello */
	uint64_t since_mono_us;       /* CLOCK_MONOTONIC at its Hello, for the age */
	_Atomic uint64_t requests;    /* requests received since */
};

struct clients;

/* An empty table. 0 with *out set, or -ENOMEM. */
int clients_new(struct clients **out);
/* Free the table; entries still listed are not touched. NULL is a no-op. */
void clients_free(struct clients *t);
/* List e (not listed yet) for a client that completed its Hello, with its
 * requests at 0. A NULL table lists nothing. Any thread. */
void clients_add(struct clients *t, struct client_ent *e, pid_t pid, uid_t uid, gid_t gid);
/* Take e off the list; a no-op when it is not listed. Any thread. */
void clients_remove(struct clients *t, struct client_ent *e);
/* Count one request of a listed or unlisted e: a relaxed atomic add. */
static inline void client_ent_request(struct client_ent *e)
{
	atomic_fetch_add_explicit(&e->requests, 1, memory_order_relaxed);
}
/* Clients listed now. */
unsigned clients_count(struct clients *t);

/* The listed clients, oldest first, as a JSON array of objects {"pid",
 * "uid", "gid", "requests", "connected" (Unix seconds), "age_seconds"} in a
 * malloc'd NUL-terminated string (*len bytes). A NULL table renders "[]".
 * 0 with *out and *len set, or -ENOMEM. */
int clients_render(struct clients *t, char **out, size_t *len);

#endif
