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
	int shm_fd;                /* segment passed to clients at hello (read-only fd) */
	uint64_t shm_size;
	int area_fd;               /* client area passed after it (read-write), or -1 */
	uint64_t area_size;
	uint32_t shm_version;
};

/* Bind the socket (mode 0660) and start the threads. *out is set before
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

#endif
