/* ops_impl.h - what ops.c (the op table and the namespace's ops) shares
 * with session.c (the session and its handles) and ops_admin.c (the ops
 * that look at the server). Not for other modules. */
#ifndef MC_OPS_IMPL_H
#define MC_OPS_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "map.h"
#include "ops.h"
#include "watch.h"

struct handle {
	uint64_t ino;                /* 0: free slot */
	bool writable;
	bool dir;
};

struct session {
	struct mcd *m;
	struct cred cred;
	struct handle *h;
	size_t nh, caph;
	uint32_t slot;               /* client-area slot, UINT32_MAX: none */
	uint32_t owner;              /* range-lock owner id */
	struct map locked;           /* inos this session took range locks in */
	struct watch_sess ws;        /* mount id, watcher, events of the running request */
};

/* session.c. A free handle slot (ino 0), made if need be, found before
 * the path is touched: 0 and *out (an index), -EMFILE, -ENOMEM. The
 * handle of id, or NULL. The handle of a regular file, for the extent
 * ops: 0 and *out, -EBADF (not open) or -EISDIR. After a handle of ino
 * was closed: with none left, the session's range locks there go. */
int handle_slot(struct session *s, size_t *out);
struct handle *handle_get(struct session *s, uint64_t id);
int file_handle_get(struct session *s, uint64_t id, struct handle **out);
void session_unlock_closed(struct session *s, uint64_t ino);

/* ops_admin.c: handlers of the op table (ops.c), as every handler: 0 or
 * -errno, the text in out->data and out->res.data. */
int op_stats(struct session *s, const Mcache__Op *op, struct handle *h, struct op_out *out);
int op_fsck(struct session *s, const Mcache__Op *op, struct handle *h, struct op_out *out);
int op_log(struct session *s, const Mcache__Op *op, struct handle *h, struct op_out *out);
int op_clients(struct session *s, const Mcache__Op *op, struct handle *h, struct op_out *out);
int op_slowlog(struct session *s, const Mcache__Op *op, struct handle *h, struct op_out *out);

#endif
