/* session.c - a client session: its credentials, its open handles and
 * its range-lock owner (struct session, ops_impl.h).
 *
 * Handles: a session keeps a table of the inodes it opened (mc_open), each
 * holding its inode in the cache (ns_open(hold)) until closed or until the
 * session ends. A handle id is its table index plus one.
 *
 * Range locks: a session locks extent-state ranges (MC_ES_LOCKED) under its
 * owner id, unique in the server's life, and remembers the inodes it locked
 * in; as with POSIX record locks, closing its last handle of a file
 * releases its locks there, so a locked range always has an open handle
 * (which keeps the inode and its state cached). When the session ends, its
 * locks are released before its handles.
 */
#include "ops.h"
#include "ops_impl.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "area.h"
#include "extent_ns.h"
#include "map.h"
#include "mcd.h"
#include "ns.h"

#define SESSION_MAX_HANDLES 65536

static _Atomic uint32_t next_owner = 1;

struct session *session_new(struct mcd *m, const struct cred *cred)
{
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->m = m;
	s->cred = *cred;
	if (s->cred.ngroups > SESSION_MAX_GROUPS)
		s->cred.ngroups = SESSION_MAX_GROUPS;
	s->slot = UINT32_MAX;
	s->owner = atomic_fetch_add(&next_owner, 1);
	if (s->owner == 0) /* wrapped after 2^32 sessions */
		s->owner = atomic_fetch_add(&next_owner, 1);
	if (m->area && area_slot_get(m->area, (int32_t)cred->pid, &s->slot) < 0)
		s->slot = UINT32_MAX;
	return s;
}

uint32_t session_slot(const struct session *s)
{
	return s->slot;
}

struct watch_sess *session_watch(struct session *s)
{
	return &s->ws;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	watch_sess_release(s->m->watch, &s->ws);
	for (size_t i = 0; i < s->locked.cap; i++)
		if (s->locked.keys[i])
			ns_range_release(s->m->ns, s->locked.keys[i], s->owner);
	map_free(&s->locked);
	for (size_t i = 0; i < s->nh; i++)
		if (s->h[i].ino)
			ns_release(s->m->ns, s->h[i].ino);
	if (s->slot != UINT32_MAX)
		area_slot_put(s->m->area, s->slot);
	free(s->h);
	free(s);
}

/* A free handle slot (ino 0), making one if needed: like open(2), the
 * descriptor is found before the path is touched, so running out of them
 * cannot leave a file created. 0 and *out (an index), -EMFILE, -ENOMEM. */
int handle_slot(struct session *s, size_t *out)
{
	size_t i;
	for (i = 0; i < s->nh; i++)
		if (!s->h[i].ino)
			break;
	if (i == s->nh) {
		if (s->nh == SESSION_MAX_HANDLES)
			return -EMFILE;
		if (s->nh == s->caph) {
			size_t cap = s->caph ? s->caph * 2 : 16;
			struct handle *h = realloc(s->h, cap * sizeof(*h));
			if (!h)
				return -ENOMEM;
			s->h = h;
			s->caph = cap;
		}
		s->h[s->nh++] = (struct handle){ 0, false, false };
	}
	*out = i;
	return 0;
}

struct handle *handle_get(struct session *s, uint64_t id)
{
	if (id == 0 || id > s->nh || !s->h[id - 1].ino)
		return NULL;
	return &s->h[id - 1];
}

/* The handle id of a regular file, for the extent ops: 0 and *out, or
 * -EBADF (not open) or -EISDIR. */
int file_handle_get(struct session *s, uint64_t id, struct handle **out)
{
	struct handle *h = handle_get(s, id);
	if (!h)
		return -EBADF;
	if (h->dir)
		return -EISDIR;
	*out = h;
	return 0;
}

/* The session closed a handle of ino: with none left, its locks there go. */
void session_unlock_closed(struct session *s, uint64_t ino)
{
	if (!map_find(&s->locked, ino))
		return;
	for (size_t i = 0; i < s->nh; i++)
		if (s->h[i].ino == ino)
			return;
	ns_range_release(s->m->ns, ino, s->owner);
	map_del(&s->locked, ino);
}
