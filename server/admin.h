/* admin.h - the HTTP admin endpoint: GET /stats (JSON), GET /metrics
 * (Prometheus text), GET /healthz. It runs its own thread and event loop. */
#ifndef MC_ADMIN_H
#define MC_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

struct admin;

/* Fill a snapshot; called on the admin thread for every request. */
typedef void (*admin_fill_fn)(void *arg, struct stats_snapshot *out);

/* Listen on addr ("unix:PATH" or "HOST:PORT"; port 0 picks one) and serve.
 * A HOST that is not a loopback address is refused with -EPERM unless
 * allow_remote. Errors: -EINVAL (bad address), -EPERM (remote host),
 * -EADDRINUSE (port taken; a live server, or a file that is not a socket, at
 * PATH), -EACCES, -ENOENT (PATH's directory missing), -ENOMEM, or another
 * -errno from socket/bind. A stale socket file at PATH is replaced; the new
 * one is created with mode 0660 (never looser, not even for a moment).
 * *out is set only on success. On a HOST:PORT address, which every local
 * user can reach, /stats leaves out the per-process read-path figures
 * (client pids); the totals stay. Out of descriptors, accepting pauses
 * briefly instead of spinning (counted as admin.accept_pauses).
 * Routes: GET (or HEAD) /stats, /metrics, /healthz; other paths 404, other
 * methods 405. fill is called once per /stats or /metrics request. */
int admin_start(const char *addr, bool allow_remote, admin_fill_fn fill, void *arg,
                struct admin **out);
/* The bound address as "unix:PATH" or "HOST:PORT" (the real port). */
const char *admin_address(const struct admin *a);
/* Times accepting paused for lack of descriptors. Any thread. */
uint64_t admin_accept_pauses(struct admin *a);
/* Stop serving and join the thread, keeping a readable for other threads
 * (admin_accept_pauses) until admin_stop. Safe to call from any thread but
 * the admin thread itself (not from fill). NULL is a no-op. */
void admin_halt(struct admin *a);
/* admin_halt if not done yet, remove a unix socket it created, free a.
 * NULL is a no-op. */
void admin_stop(struct admin *a);

#endif
