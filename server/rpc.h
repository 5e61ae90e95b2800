/* rpc.h - the unix-socket RPC server: one acceptor, N worker threads each
 * with its own event loop (memcached's model). A connection is handed to a
 * worker round-robin and stays there. */
#ifndef MC_RPC_H
#define MC_RPC_H

#include <stdint.h>

#include "stats.h"

struct mcd;
struct rpc;

struct rpc_opts {
	const char *socket_path;
	unsigned workers;          /* >= 1 */
	unsigned max_conns;        /* beyond it new connections are closed at once */
	unsigned idle_timeout_s;   /* 0: none */
	uint32_t max_frame;        /* larger frames: error reply, then close */
	uint32_t max_reply;        /* reply limit (request.h); 0: max_frame; at
	                            * most MC_FRAME_MAX, what clients read */
	unsigned max_ops;          /* ops per request; more: E2BIG, then close. 0: no limit */
	unsigned hello_timeout_s;  /* a connection must say Hello within it; 0: none */
	unsigned frame_timeout_s;  /* a started frame must complete within it; 0: none */
	unsigned max_prehello;     /* connections before Hello; 0: max_conns */
	unsigned busy_poll_us;     /* longest poll for the next request (rpc.c note 6); 0: none */
	uint64_t conn_output_max;  /* unsent reply bytes that stop reading a client */
	uint64_t output_max;       /* unsent reply bytes in all; above: disconnect
	                            * clients that do not read. 0: no limit */
	int shm_fd;                /* segment passed to clients at hello (read-only fd) */
	uint64_t shm_size;
	int area_fd;               /* client area passed after it (read-write), or -1 */
	uint64_t area_size;
	uint32_t shm_version;
};

/* Bind the socket (created with mode 0660: never looser, not even for a
 * moment) and start the threads. The descriptor limit (RLIMIT_NOFILE) is
 * raised, soft up to hard, to what max_conns needs; if it cannot be, max_conns
 * is lowered to fit and a warning logged. *out is set before
 * the first connection is accepted (so ops may read it), and reset to
 * NULL if starting fails after that. A socket path with a
 * live server behind it is refused with -EADDRINUSE; a stale socket file is
 * replaced. -EACCES, -ENAMETOOLONG, -ENOMEM. */
int rpc_start(const struct rpc_opts *o, struct mcd *m, struct rpc **out);
/* Stop accepting and close the listening socket (unlinking it), finish the
 * requests in progress, close connections, join threads, free. */
void rpc_stop(struct rpc *r);

/* Sum of the workers' counters into *out (zeroed first). */
void rpc_get_stats(struct rpc *r, struct rpc_stats *out);
/* Connections open now. */
unsigned rpc_clients(struct rpc *r);
/* The connection limit in force (max_conns, perhaps lowered at start). */
unsigned rpc_max_conns(struct rpc *r);

#endif
