/* client_impl.h - libmcache internals shared by client.c, path.c, dir.c and
 * batch.c: the client object, the RPC call, the descriptor table.
 *
 * Internal functions return 0 or a negative errno; the public mc_* wrappers
 * turn that into -1 and errno (client_fail()).
 */
#ifndef MC_CLIENT_IMPL_H
#define MC_CLIENT_IMPL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mc_busypoll.h"
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
	bool reserved;                /* taken by an mc_open still waiting for its handle */
};

/* A connection to mcached.
 *
 * Invariants:
 *  1. At most one request is in flight: client_call() holds mu while it
 *     writes one frame and reads its response, so responses never need
 *     matching beyond checking the id. Queued closes (closes[0..nclose))
 *     ride in front of the next request's ops; their results are dropped.
 *  2. broken is set once the byte stream may be out of step with the server
 *     (a short read or write, a wrong id, a whole-request error) or the
 *     server is gone; every later call fails with ENOTCONN without touching
 *     the socket. It only ever goes from false to true (atomic: read
 *     without mu).
 *  3. fork_gen is the process fork generation at connect; a different
 *     current generation means we are in a child: every call fails with
 *     ECHILD and nothing is ever written to the socket again.
 *  4. shm is a read-only MAP_SHARED mapping of shm_size bytes whose header
 *     was checked at connect; it stays mapped until mc_disconnect(). view
 *     reads it (NULL when $MCACHE_LOCAL_READS=0: every call is an RPC).
 *     area is the read-write client area (statistics slot, referenced
 *     bits), or NULL. Its layout was read once from the read-only header
 *     and checked at connect (slot, refbits, nbits): nothing is ever read
 *     back from the area to find anything.
 *  5. dirs and batches list every MC_DIR and mc_batch made from this client
 *     that is not yet freed, so mc_disconnect() can free them.
 *  6. Threads: mu guards sock, next_id, fds/nfds, closes, dirs and batches.
 *     The read path (client_local, view_*) takes no lock: it reads the
 *     read-only segment, the constant view, and the atomics broken and
 *     peek_ms.
 */
struct mc_client {
	pthread_mutex_t mu;
	int sock;
	unsigned fork_gen;
	_Atomic bool broken;
	uint64_t next_id;
	uint32_t max_ops;             /* the server's ops-per-request limit; 0: none said */
	const void *shm;
	size_t shm_size;
	void *area;
	size_t area_size;
	struct view *view;
	_Atomic uint64_t peek_ms;     /* last liveness peek (CLOCK_MONOTONIC_COARSE ms) */
	struct mc_client_slot *slot;  /* this client's counters in the area, or NULL */
	_Atomic uint64_t *refbits;    /* the area's referenced bitmap, or NULL */
	uint64_t nbits;               /* bits in it */
	struct mc_fdslot *fds;
	size_t nfds;                  /* slots allocated */
	uint64_t *closes;             /* server handles closed here, not yet told */
	size_t nclose, capclose;
	struct mc_dir *dirs;
	struct mc_batch *batches;
	uint8_t *rbuf;                /* responses are received here (call.c) */
	size_t rcap;
	size_t rnext, rleft;          /* rbuf[rnext..+rleft): the next response's first bytes */
	uint32_t path_max;            /* mc_path_max_set; 0: MC_CLIENT_PATH_MAX + 1 */
	struct mc_busypoll bp;        /* polling for a reply before sleeping (call.c) */
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
	/* Hashes of the names a local listing returned (dir.c invariant 5). */
	uint64_t *seen;
	size_t nseen, capseen;
	bool dedupe;                  /* server pages: drop names in seen[] (sorted) */
};

/* Linked into c->batches; see batch.c. */
struct mc_batch {
	mc_client *c;
	struct mc_batch *next, *prev;
	Mcache__Op *ops;              /* queued ops; their paths live in pbuf */
	struct stat **stats;          /* per queued op: where mc_batch_stat wants its attr */
	size_t nops, cap;
	char *pbuf;                   /* the queued paths, back to back (batch.c) */
	size_t plen, pcap;
	size_t packed;                /* bytes the queued ops add to a Request */
	int *errs;                    /* results of the last run */
	size_t nerrs;
};

/* The credentials this thread acts for (mc_cred_set), or NULL. */
Mcache__Cred *cred_current(void);

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

/* Give ops[0..n) the calling thread's credentials (mc_cred_set) and c's
 * path limit; returns the credentials, which ops_unstamp takes back (the
 * caller owns the ops, the credentials are the thread's). */
static inline Mcache__Cred *ops_stamp(const mc_client *c, Mcache__Op **ops, size_t n)
{
	Mcache__Cred *as = cred_current();
	for (size_t i = 0; as && i < n; i++)
		ops[i]->cred = as;
	for (size_t i = 0; c->path_max && i < n; i++)
		ops[i]->path_max = c->path_max;
	return as;
}

static inline void ops_unstamp(Mcache__Op **ops, size_t n, const Mcache__Cred *as)
{
	for (size_t i = 0; as && i < n; i++)
		ops[i]->cred = NULL;
}

/* Send ops[0..n) in one request and wait for the response, whose results
 * must number n. On success *out is the response (free it with
 * mcache__response__free_unpacked(*out, NULL)). Errors: -ECHILD, -ENOTCONN
 * (transport failed or broken), -EPROTO (bad response), -E2BIG (frame too
 * big), -ENOMEM, or the server's whole-request error. */
int client_call(mc_client *c, Mcache__Op **ops, size_t n, Mcache__Response **out);
/* Send ops[0..n) as consecutive requests of at most chunk ops (and the
 * server's max_ops), the next one written before the previous one's
 * response is read (two in flight at most), so that the packing of one
 * and the reading of another overlap the server's work; the ops run in
 * order, as in one request. fn(arg, off, k, errs, rsp) gets the
 * response of ops[off..off+k) in order: errs[0..k) their errnos when the
 * response held nothing else (wire_response_errs; rsp NULL then), else
 * rsp, which it owns (errs NULL). Queued closes are sent first, alone.
 * Errors as client_call(); the responses read before one are given to fn.
 * Only for ops whose results always fit a reply (no EMSGSIZE): a later
 * request may already run when an earlier answer arrives. basic: no op
 * sets a member but code, path, path2 and mode (a batch's), so they are
 * packed without looking at the others (wire_request_pack_basic). */
int client_call_pipelined(mc_client *c, Mcache__Op **ops, size_t n, size_t chunk, bool basic,
                          void (*fn)(void *arg, size_t off, size_t k, const int32_t *errs,
                                     Mcache__Response *rsp),
                          void *arg);
/* A transport error from frame_*: the stream may be out of step (broken
 * set). Returns what the call fails with: -ENOMEM and -EPROTO as they
 * are, -EMSGSIZE as -EPROTO, anything else as -ENOTCONN. */
int client_transport_error(mc_client *c, int err);
/* Send the queued closes alone, at most max_ops in a request (mu held). */
int do_client_flush_closes(mc_client *c);
/* call.c, mu held. Send one request with ops[0..n): 0 and *id its id, or
 * as client_call(). Receive the response to request id of n ops, checked
 * (its id, n results, no whole-request error): 0 and *out, or as
 * client_call(); more: another response follows it (its bytes may come
 * along). */
int client_call_send(mc_client *c, Mcache__Op **ops, size_t n, uint64_t *id);
int client_call_recv(mc_client *c, uint64_t id, size_t n, bool more, Mcache__Response **out);
/* client_call_recv, but a response of errnos alone (every mutation's) is
 * read into errs (room for n) without unpacking it: 1 then; 0 with *out
 * for any other response; or as client_call(). */
int client_call_recv_errs(mc_client *c, uint64_t id, size_t n, int32_t *errs,
                          Mcache__Response **out);
/* call.c. Frame req into a new buffer (caller frees), the same bytes
 * frame_pack_request makes: 0, -ENOMEM or -EMSGSIZE (over MC_FRAME_MAX). */
int client_frame_pack(const Mcache__Request *req, uint8_t **out, size_t *len);
/* Receive one response frame into c->rbuf (mu held): one recv when the
 * whole frame has arrived, more only for what had not; nothing may follow
 * it unless more says another response follows (client_call_pipelined),
 * whose first bytes are then kept. 0 with *payload (valid until the next
 * call) and *len set; -ENOMEM, -EMSGSIZE (announced length over
 * MC_FRAME_MAX), -EPROTO (bytes after the frame), -ECONNRESET (EOF), or
 * the socket's errno. */
int client_frame_recv(mc_client *c, const uint8_t **payload, size_t *len, bool more);

/* Release a server handle (mc_close, mc_closedir). No round trip of its
 * own: the close travels in front of the next request, or with others once
 * CLIENT_CLOSE_QUEUE are waiting. The server releases everything of a
 * connection when it ends, so nothing is lost if none follows. */
#define CLIENT_CLOSE_QUEUE 64u
int client_close_handle(mc_client *c, uint64_t handle);
/* client_close_handle() with mu held. */
int do_client_close_handle(mc_client *c, uint64_t handle);

/* client_call() for one op; a result error comes back as its -errno (the
 * response already freed). On success *out is the response and
 * (*out)->results[0] the result. */
int client_op(mc_client *c, Mcache__Op *op, Mcache__Response **out);
/* client_op() for ops whose result carries nothing but err. */
int client_op_simple(mc_client *c, Mcache__Op *op);
/* client_op() for ops that answer a text document (stats, fsck, clients,
 * slowlog, the commit log): the result's data as a malloc'd NUL-terminated
 * string, or NULL with errno set. When keep is not NULL, *keep is the response (the caller frees it)
 * for the result's other fields; else it is freed here. */
char *client_op_text(mc_client *c, Mcache__Op *op, Mcache__Response **keep);

/* Path checks made before sending: 0 (and *out_len, when not NULL, the
 * path's length), -EFAULT (NULL), -ENOENT (empty), -ENAMETOOLONG (longer
 * than MC_CLIENT_PATH_MAX). */
int path_check(const char *path, size_t *out_len);
/* path_check() against c's limit (mc_path_max_set): c already checked. */
int path_check_c(const mc_client *c, const char *path, size_t *out_len);
/* Point a protobuf bytes field at path (not copied). */
void path_set(ProtobufCBinaryData *f, const char *path);

/* May c answer from shared memory now? false when there is no view or
 * the server is gone (c is then broken: ENOTCONN). A server that died
 * without closing the segment is noticed through its heartbeat: each call
 * reads CLOCK_MONOTONIC_COARSE (vDSO, no system call) and, when the
 * heartbeat is older than MC_HEARTBEAT_STALE_MS, peeks at the socket (at
 * most once per CLIENT_PEEK_EVERY_MS), which finds a dead server. So a dead
 * server's segment answers for at most MC_HEARTBEAT_STALE_MS +
 * CLIENT_PEEK_EVERY_MS + a coarse clock tick after its last beat. */
#define CLIENT_PEEK_EVERY_MS 50u
_Static_assert(MC_HEARTBEAT_STALE_MS + CLIENT_PEEK_EVERY_MS + 50u <= MC_LIVENESS_BOUND_MS,
               "the documented bound covers the heartbeat check");
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

/* Lock c's mutable state (invariant 6). */
static inline void client_lock(mc_client *c)
{
	pthread_mutex_lock(&c->mu);
}

static inline void client_unlock(mc_client *c)
{
	pthread_mutex_unlock(&c->mu);
}

/* Link a directory or batch into c's lists / unlink it (take mu). */
void client_link_dir(mc_client *c, struct mc_dir *d);
void client_unlink_dir(struct mc_dir *d);
void client_link_batch(mc_client *c, struct mc_batch *b);
void client_unlink_batch(struct mc_batch *b);

/* Descriptor table (fd.c; each takes mu). client_fd_reserve() takes the
 * lowest free slot (growing the table) for an mc_open in progress: 0 and
 * *fd, or -EMFILE/-ENOMEM. client_fd_take() makes a reserved slot used with
 * handle; client_fd_release() frees a reserved or used slot.
 * client_fd_handle(): 0 and *handle (and *ino when not NULL) of a used
 * slot, or -EBADF. */
int client_fd_reserve(mc_client *c, int *fd);
void client_fd_take(mc_client *c, int fd, uint64_t handle, uint64_t ino);
int client_fd_handle(mc_client *c, int fd, uint64_t *handle, uint64_t *ino);
void client_fd_release(mc_client *c, int fd);
/* client_op() for an op on descriptor fd's server handle (set in op):
 * -EBADF for a descriptor not open, else as client_op(). */
int client_fd_op(mc_client *c, int fd, Mcache__Op *op, Mcache__Response **out);

/* Free a directory / batch without talking to the server (used by
 * mc_disconnect and in forked children). */
void dir_free(struct mc_dir *d);
void batch_free(struct mc_batch *b);

#endif
