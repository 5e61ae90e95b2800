/* mcd.h - the server as a whole: the modules one mcached process runs. */
#ifndef MC_MCD_H
#define MC_MCD_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "stats.h"

struct mcd {
	struct mcd_config *cfg;
	struct shm *shm;
	struct area *area;
	struct ns *ns;
	struct store *store;
	struct commit *commit;
	struct warm *warm;           /* NULL with --warmers 0 */
	bool reattached;             /* the segment was kept from the last clean stop */
	struct rpc *rpc;
	/* Set by the main thread after the RPC workers, which read it for
	 * OP_STATS, have started: published with a release store. */
	struct admin *_Atomic admin;
	uint64_t start_ns;           /* CLOCK_MONOTONIC at start */
	uint64_t start_time_s;       /* Unix time at start (/metrics' start time) */
	struct clients *clients;     /* connected clients (OP_CLIENTS); may be NULL */
	struct slowlog *slowlog;     /* slow operations (OP_SLOWLOG); may be NULL */
	struct watch_hub *watch;     /* watchers (OP_WATCH, watch.h); may be NULL */
};

/* Gather a statistics snapshot of the whole server (admin_fill_fn). */
void mcd_fill_stats(void *arg, struct stats_snapshot *out);

#endif
