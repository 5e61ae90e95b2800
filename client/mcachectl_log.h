/* mcachectl_log.h - `mcachectl log`: the server's commit log, and `mcachectl
 * stats --commits`: the commit pipeline as a table (mcachectl_log.c). */
#ifndef MCACHECTL_LOG_H
#define MCACHECTL_LOG_H

#include <stdbool.h>

#include "mcache.h"

/* `log [--follow] [--since SEQ] [--json]` (argv[0] is "log"): print the
 * committed records from batch SEQ on (default: the oldest kept), one a
 * line, as text:
 *
 *   SEQ.REC TIME OP FIELD=VALUE...
 *
 * (TIME the batch's commit time in UTC, "-" when unknown; names with bytes
 * outside printable ASCII, a space or '\' written as \xNN), or with --json
 * (or json true) as the server's JSON lines. --follow keeps polling for
 * new commits until interrupted. A note goes to stderr when batches asked
 * for were dropped by retention. Returns the exit status: 0, 1 (an error,
 * told on stderr as "PROG: log: ..."), 2 (bad usage). */
int log_main(mc_client *c, int argc, char **argv, bool json, const char *prog);

/* `stats --commits`: commits, records, failures, the phase histograms
 * (count, p50, p99, max, total in microseconds), batch size, lag and the
 * journal as a table on stdout. 0, or -errno (mc_server_stats's, or
 * -EPROTO for a document without them). */
int commits_print(mc_client *c);

#endif
