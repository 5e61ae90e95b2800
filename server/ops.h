/* ops.h - executes RPC operations for one client session: translates a
 * protobuf Op into namespace calls and the outcome into a Result.
 *
 * A session is one connection's view: the peer's credentials and its open
 * handles (mc_open descriptors). Sessions are used by one thread at a time.
 */
#ifndef MC_OPS_H
#define MC_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mcache.pb-c.h"

struct mcd;
struct session;

#define SESSION_MAX_GROUPS 64

struct cred {
	pid_t pid;               /* the peer process, for statistics */
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[SESSION_MAX_GROUPS];
};

/* New session for a peer with these credentials. NULL on ENOMEM. */
struct session *session_new(struct mcd *m, const struct cred *cred);
/* The session's statistics slot in the client area, or UINT32_MAX. */
uint32_t session_slot(const struct session *s);
/* The session's watch state (watch.h), for its connection. */
struct watch_sess *session_watch(struct session *s);
/* Release the session's open handles (unlinked files whose last handle this
 * was are freed) and free it. */
void session_free(struct session *s);

/* Result of one op. `res` is what goes on the wire; the other members own
 * the memory it points to. */
struct op_out {
	Mcache__Result res;
	Mcache__Attr attr;
	Mcache__Dirent *ents;
	Mcache__Dirent **entp;
	char *names;                 /* dirent names, packed */
	uint8_t *data;
	Mcache__Extent *exts;        /* OP_EXTENT_MAP */
	Mcache__Extent **extp;
	/* Nonzero: the reply must wait until this journal batch is durable
	 * (mc_sync, mc_fsync, or any mutation under --sync). */
	uint64_t wait_seq;
	/* res holds nothing but err (OPF_BARE, or the op never ran): request.c
	 * sizes and packs it by hand. */
	bool bare;
};

/* What the dispatch checks and does around an op's handler (op_desc.flags). */
#define OPF_MUTATION (1u << 0)  /* changes the namespace: kicks the commit, or waits under --sync */
#define OPF_PATH     (1u << 1)  /* path must be a usable path (ENOENT, ENAMETOOLONG, EINVAL) */
#define OPF_PATH2    (1u << 2)  /* path2 as well, checked first */
#define OPF_HANDLE   (1u << 3)  /* handle must be one of the session's open handles (EBADF) */
#define OPF_FILE     (1u << 4)  /* ... and a regular file's (EBADF, EISDIR) */
#define OPF_HOLD     (1u << 5)  /* may run inside a run of ops under one namespace lock (ops_hold) */
#define OPF_BARE     (1u << 6)  /* the handler fills nothing of the Result: err is all of it */

struct handle;

/* One row of the op table (ops.c): an op code's name, handler and flags. */
struct op_desc {
	const char *name;
	/* h is the checked handle (NULL without OPF_HANDLE / OPF_FILE).
	 * 0 or -errno; fills out->res. */
	int (*run)(struct session *s, const Mcache__Op *op, struct handle *h,
	           struct op_out *out);
	unsigned flags;
};

/* The table's row for code, or NULL when the server has no such op. */
const struct op_desc *ops_find(unsigned code);

/* Runs of ops under one taking of the namespace lock (ns_hold_begin):
 * ops_holds() tells whether op may run inside one (its row has OPF_HOLD,
 * and nothing it does after its handler takes the lock: not under
 * --sync). Each op of a run goes in three steps, so that the lock covers
 * the namespace's work alone:
 *  - ops_prepare(), before the run, without the lock: false when op may
 *    not run in one (ops_exec it instead); else out is set up and op's
 *    arguments checked as ops_exec checks them (paths), the answer of a
 *    failed check in out->res.err; out is bare (err is all of it) until
 *    the op ran;
 *  - ops_run(), in the run, runs op unless ops_prepare answered it (an op
 *    naming credentials is checked there, as them);
 *  - ops_ran(), after the run, once the lock is let go: what follows a
 *    mutation (the committer's kick).
 * A run begins with ops_hold_begin(), lets a waiting committer in between
 * ops with ops_hold_yield(), and ends with ops_hold_end() before any
 * other op runs. The replies are ops_exec's, byte for byte. */
bool ops_holds(const struct session *s, const Mcache__Op *op);
bool ops_prepare(struct session *s, const Mcache__Op *op, struct op_out *out);
void ops_run(struct session *s, const Mcache__Op *op, struct op_out *out);
void ops_ran(struct session *s, const Mcache__Op *op, struct op_out *out);
void ops_hold_begin(struct session *s);
void ops_hold_yield(struct session *s);
void ops_hold_end(struct session *s);
/* In a run, while the op before op runs: start loading what op's lookup
 * will read first (ns_hold_prefetch); op was prepared for the run. */
void ops_hold_prefetch(struct session *s, const Mcache__Op *op);

/* Run op for session s. Never fails as a whole: errors go to out->res.err.
 * Call op_out_release() after the reply is packed. */
void ops_exec(struct session *s, const Mcache__Op *op, struct op_out *out);
void op_out_release(struct op_out *out);

#endif
