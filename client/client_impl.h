/* client_impl.h - libmcache internals shared by client.c, path.c, dir.c and
 * batch.c: the client object, the RPC call, the descriptor table.
 *
 * Internal functions return 0 or a negative errno; the public mc_* wrappers
 * turn that into -1 and errno (client_fail()).
 */
#ifndef MC_CLIENT_IMPL_H
#define MC_CLIENT_IMPL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mcache.h"
#include "mcache.pb-c.h"
#include "shmview.h"

/* Largest path accepted (bytes, without the NUL); longer is ENAMETOOLONG. */
#define MC_CLIENT_PATH_MAX 4095u
/* Most descriptors one client may hold open (mc_open); beyond: EMFILE. */
#define MC_CLIENT_FD_MAX   (1u << 20)

/* One slot of the descriptor table. */
struct mc_fdslot {
	uint64_t handle;              /* the server's handle */
	uint64_t ino;                 /* the inode it holds (cached while open) */
	bool used;
};

/* A connection to mcached.
 *
 * Invariants:
 *  1. At most one request is in flight: client_call() writes one frame and
 *     reads its response before returning, so responses never need matching
 *     beyond checking the id. Queued closes (closes[0..nclose)) ride in
 *     front of the next request's ops; their results are dropped.
 *  2. broken is set once the byte stream may be out of step with the server
 *     (a short read or write, a wrong id, a whole-request error); every later
 *     call fails with ENOTCONN without touching the socket.
 *  3. fork_gen is the process fork generation at connect; a different
 *     current generation means we are in a child: every call fails with
 *     ECHILD and nothing is ever written to the socket again.
 *  4. shm is a read-only MAP_SHARED mapping of shm_size bytes whose header
 *     was checked at connect; it stays mapped until mc_disconnect(). view
 *     reads it (NULL when $MCACHE_LOCAL_READS=0: every call is an RPC).
 *     area is the read-write client area (statistics slot, referenced
 *     bits), or NULL.
 *  5. dirs and batches list every MC_DIR and mc_batch made from this client
 *     that is not yet freed, so mc_disconnect() can free them.
 */
struct mc_client {
	int sock;
	unsigned fork_gen;
	bool broken;
	uint64_t next_id;
	const void *shm;
	size_t shm_size;
	void *area;
	size_t area_size;
	struct view *view;
	unsigned local_calls;         /* local answers since the last liveness check */
	struct mc_client_slot *slot;  /* this client's counters in the area, or NULL */
	struct mc_fdslot *fds;
	size_t nfds;                  /* slots allocated */
	uint64_t *closes;             /* server handles closed here, not yet told */
	size_t nclose, capclose;
	struct mc_dir *dirs;
	struct mc_batch *batches;
};

/* Entries a listing read from shared memory holds at once. */
#define MC_DIR_LOCAL_PAGE 64u

/* Linked into c->dirs; see dir.c. A listing starts from shared memory when
 * the directory is complete there (local), and continues through the
 * server from the same cookie if the cache stops answering. */
struct mc_dir {
	mc_client *c;
	struct mc_dir *next, *prev;
	bool local;                   /* reading from shared memory */
	struct view_dir vd;
	struct view_dirent *lpage;    /* MC_DIR_LOCAL_PAGE entries */
	unsigned lcount, lpos;
	char *path;                   /* for opening on the server when needed */
	uint64_t handle;              /* 0: not opened on the server yet */
	Mcache__Response *page;       /* the current page, or NULL */
	size_t pos;                   /* next entry of page to return */
	uint64_t cookie;              /* where the next page starts */
	uint64_t index;               /* entries returned so far (d_off) */
	bool eof;                     /* the server said there is no next page */
	struct dirent ent;
};

/* Linked into c->batches; see batch.c. */
struct mc_batch {
	mc_client *c;
	struct mc_batch *next, *prev;
	Mcache__Op *ops;              /* queued ops, paths owned (malloc'd) */
	struct stat **stats;          /* per queued op: where mc_batch_stat wants its attr */
	size_t nops, cap;
	size_t packed;                /* bytes the queued ops add to a Request */
	int *errs;                    /* results of the last run */
	size_t nerrs;
};

/* Set errno from a negative errno and return -1. */
static inline int client_fail(int err)
{
	errno = -err;
	return -1;
}

/* 0 when c may send a request; -EFAULT (c NULL), -ECHILD (forked),
 * -ENOTCONN (broken). */
int client_check(const mc_client *c);
/* True when called in a child forked after c connected. */
bool client_forked(const mc_client *c);

/* Send ops[0..n) in one request and wait for the response, whose results
 * must number n. On success *out is the response (free it with
 * mcache__response__free_unpacked(*out, NULL)). Errors: -ECHILD, -ENOTCONN
 * (transport failed or broken), -EPROTO (bad response), -E2BIG (frame too
 * big), -ENOMEM, or the server's whole-request error. */
int client_call(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out);
/* Release a server handle (mc_close, mc_closedir). No round trip of its
 * own: the close travels in front of the next request, or with others once
 * CLIENT_CLOSE_QUEUE are waiting. The server releases everything of a
 * connection when it ends, so nothing is lost if none follows. */
#define CLIENT_CLOSE_QUEUE 64u
int client_close_handle(mc_client *c, uint64_t handle);

/* client_call() for one op; a result error comes back as its -errno (the
 * response already freed). On success *out is the response and
 * (*out)->results[0] the result. */
int client_op(mc_client *c, Mcache__Op *op, Mcache__Response **out);
/* client_op() for ops whose result carries nothing but err. */
int client_op_simple(mc_client *c, Mcache__Op *op);

/* Path checks made before sending: 0 (and *out_len, when not NULL, the
 * path's length), -EFAULT (NULL), -ENOENT (empty), -ENAMETOOLONG (longer
 * than MC_CLIENT_PATH_MAX). */
int path_check(const char *path, size_t *out_len);
/* Point a protobuf bytes field at path (not copied). */
void path_set(ProtobufCBinaryData *f, const char *path);

/* May c answer from shared memory now? false when there is no view or
 * the server is gone (c is then broken: ENOTCONN). A server that died
 * without closing the segment is noticed by peeking at the socket once
 * every CLIENT_LIVENESS_EVERY local answers: one system call per that many
 * lookups. */
#define CLIENT_LIVENESS_EVERY 4096u
bool client_local(mc_client *c);
/* Take the answer of a view_* call: -ENOTCONN breaks the client. */
int client_view_result(mc_client *c, int err);

/* Count an event in this client's slot (relaxed; only this client writes). */
static inline void client_count(mc_client *c, size_t field)
{
	if (c->slot) {
		_Atomic uint64_t *f = (_Atomic uint64_t *)((char *)c->slot + field);
		atomic_store_explicit(f, atomic_load_explicit(f, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	}
}

/* Fill *st from the attr of rsp's first result and free rsp: 0, or -EPROTO
 * when the server sent none. */
int client_take_attr(Mcache__Response *rsp, struct stat *st);

/* Fill *st from an Attr (st_dev/st_rdev 0, st_blksize 4096, st_blocks 0). */
void attr_to_stat(const Mcache__Attr *a, struct stat *st);

/* Descriptor table. client_fd_reserve() finds the lowest free slot (growing
 * the table) without taking it: 0 and *fd, or -EMFILE/-ENOMEM.
 * client_fd_take() marks a reserved slot used with handle.
 * client_fd_handle(): 0 and *handle, or -EBADF. client_fd_release() frees a
 * used slot. */
int client_fd_reserve(mc_client *c, int *fd);
void client_fd_take(mc_client *c, int fd, uint64_t handle, uint64_t ino);
int client_fd_handle(const mc_client *c, int fd, uint64_t *handle);
void client_fd_release(mc_client *c, int fd);

/* Free a directory / batch without talking to the server (used by
 * mc_disconnect and in forked children). */
void dir_free(struct mc_dir *d);
void batch_free(struct mc_batch *b);

#endif
