/* watch.h - watchers: connections (mcachefs mounts) told what every
 * mutation invalidates, so that their kernels may cache names and
 * attributes, and the replies to library clients' mutations held until
 * every watcher has applied the events (proto/mc_watch.h has the wire side).
 *
 * While a mutating op runs, the namespace notes (watch_note_*, under the
 * namespace lock, on the op's thread) the names it creates, removes or
 * repoints and the inodes whose attributes change; when the request is
 * done its connection publishes them (watch_publish) to every watcher but
 * the mount the request came from (its kernel made the change itself, and
 * holds the directory lock while it waits for the reply). A request of a
 * client that is no mount is answered only once each watcher acknowledged
 * (or was dropped); a mount's is answered at once, since two mounts
 * waiting for each other's kernels would deadlock. A watcher that leaves
 * events unacknowledged for WATCH_ACK_TIMEOUT_MS is disconnected.
 *
 * Invariants:
 *  1. h->mu guards the watcher list, each watcher's pending events,
 *     outstanding sequences and waiters; h->nwatchers mirrors the list's
 *     length for the lock-free check of watch_note_begin.
 *  2. A watcher's events leave in sequence order; an acknowledgement of
 *     sequence q settles every outstanding sequence <= q.
 *  3. A waiter is counted once per watcher that owes it an
 *     acknowledgement; its callback runs exactly once, when the count
 *     reaches 0 (acknowledged, or the watcher dropped), never under h->mu.
 *  4. A watcher's events (ev_push, ev_timer) are on its connection's worker
 *     and touched by other threads only under h->mu, through
 *     event_active(ev_push) while the watcher is listed.
 */
#ifndef MC_WATCH_H_SERVER
#define MC_WATCH_H_SERVER

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct watch_hub;
struct watcher;

#define WATCH_ACK_TIMEOUT_MS 1000u

/* Where a connection's pushes go: set by the connection after its Hello. */
struct watch_sink {
	struct event_base *base;     /* the connection's worker */
	/* Send a framed Response (malloc'd, taken); worker thread. */
	void (*send)(void *arg, uint8_t *frame, size_t len);
	/* Disconnect (the watcher did not acknowledge in time); worker thread. */
	void (*drop)(void *arg);
	void *arg;
};

/* One session's watch state: its mount id, its watcher, and the events
 * its running request noted. Zeroed at session creation. */
struct watch_sess {
	struct watch_sink sink;
	uint64_t mount_id;           /* 0: not a mount's connection */
	struct watcher *w;           /* this connection watches; NULL: not */
	uint8_t *buf;                /* events noted by the running request */
	size_t len, cap;
	bool lost;                   /* an event could not be noted (ENOMEM) */
	uint64_t recent[4];          /* inodes noted last (duplicates skipped) */
	unsigned nrecent;
};

/* 0 and *out, or -ENOMEM. */
int watch_hub_new(struct watch_hub **out);
/* Every watcher must be gone. NULL is a no-op. */
void watch_hub_free(struct watch_hub *h);

/* Around a mutating op of session s (h may be NULL): note its events when
 * somebody watches. */
void watch_note_begin(struct watch_hub *h, struct watch_sess *s);
void watch_note_end(void);
/* The namespace, under its lock: inode ino's attributes changed (or it
 * went); name in directory parent changed. No-ops outside an op. */
void watch_note_inode(uint64_t ino);
void watch_note_entry(uint64_t parent, const char *name, size_t namelen);

/* OP_WATCH for session s with flags (MC_WATCH_*) and cookie; privileged:
 * the peer is root or the server's own user. 0 (and *out_cookie: the mount
 * id for MC_WATCH_SUBSCRIBE), -EACCES (not privileged), -EINVAL (no or
 * several flags, a tag of 0, an acknowledgement on a connection that does
 * not watch), -EALREADY (already watching or tagged), -ENOMEM. */
int watch_op(struct watch_hub *h, struct watch_sess *s, unsigned flags, uint64_t cookie,
             bool privileged, uint64_t *out_cookie);

/* True when s's request noted events to publish. */
static inline bool watch_pending(const struct watch_sess *s)
{
	return s->len > 0 || s->lost;
}
/* After s's request ran: send its events to every watcher but its own
 * mount's and forget them. 1 when the reply must wait: cb(arg, 0) runs
 * once (on any thread) when every watcher acknowledged or was dropped;
 * 0 when it need not (a mount's request, nobody else watching). */
int watch_publish(struct watch_hub *h, struct watch_sess *s, void (*cb)(void *arg, int err),
                  void *arg);
/* The session ends (worker thread): stop watching (waiters settled). */
void watch_sess_release(struct watch_hub *h, struct watch_sess *s);

#endif
