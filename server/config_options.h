/* config_options.h - mcached's options, one row each: the only place an
 * option's name, letter, kind, range, default and help are written.
 * config.c expands the list into getopt's tables, --help, the config file's
 * keys and the defaults (each default is applied through the same parser
 * as a value from the command line); test-config checks
 * deploy/mcached.conf.example and the README's table against it.
 *
 * X(id, name, letter, kind, field, ARG, min, max, default, help)
 *   letter   short option, or 0
 *   kind     CK_* (config.c): how the value is parsed and stored
 *   field    F(member of struct mcd_config), or NOFIELD
 *   default  a value as it would be written, or NULL (see the help)
 *   help     lines separated by \n; the range and default are appended
 */
#ifndef MC_CONFIG_OPTIONS_H
#define MC_CONFIG_OPTIONS_H

#include "mc_busypoll.h"

#define CONFIG_OPTIONS(X) \
	X(SOCKET, "socket", 's', CK_SOCKET, F(socket_path), "PATH", 0, 0, NULL, \
	  "Unix socket clients connect to (mode 0660). Default: $MCACHE_SOCKET\n" \
	  "when set, else " MC_DEFAULT_SOCKET ", the same socket\n" \
	  "libmcache and mcachectl connect to when none is named.") \
	X(DATA, "data", 'd', CK_DATA, F(data_dir), "DIR", 0, 0, "./var/data", \
	  "Directory of the LMDB commit log and tables.") \
	X(ADMIN, "admin", 0, CK_ADMIN, F(admin_addr), "ADDR", 0, 0, NULL, \
	  "Admin HTTP endpoint: unix:PATH, HOST:PORT or [IPV6]:PORT (port 0\n" \
	  "picks a free port), or none to disable it.\n" \
	  "Default: unix:<directory of --socket>/admin.sock") \
	X(ADMIN_REMOTE, "admin-allow-remote", 0, CK_BOOL, F(admin_remote), "BOOL", 0, 0, "false", \
	  "Allow --admin to listen on a host that is not a loopback address.") \
	X(CACHE_SIZE, "cache-size", 0, CK_SIZE, F(cache_size), "SIZE", 1 * MiB, 64 * GiB, "256M", \
	  "Size of the shared-memory segment.") \
	X(WORKERS, "workers", 0, CK_UINT, F(workers), "N", 1, 64, "2", \
	  "RPC worker threads.") \
	X(COMMIT_MS, "commit-interval-ms", 0, CK_UINT, F(commit_interval_ms), "MS", 0, 60000, "5", \
	  "Longest time a mutation waits for its group commit; 0 commits right\n" \
	  "after each batch of mutations.") \
	X(SYNC, "sync", 0, CK_BOOL, F(sync), "BOOL", 0, 0, "false", \
	  "Synchronous durability: reply to a mutation only once it is\n" \
	  "committed.") \
	X(MAX_CONNS, "max-connections", 0, CK_UINT, F(max_conns), "N", 1, 1048576, "1024", \
	  "Client connections open at once.") \
	X(IDLE, "idle-timeout", 0, CK_UINT, F(idle_timeout_s), "SECONDS", 0, 604800, "0", \
	  "Close client connections idle this long; 0 never does.") \
	X(MAX_FRAME, "max-frame", 0, CK_SIZE, F(max_frame), "SIZE", 4 * KiB, 256 * MiB, "16M", \
	  "Largest request frame accepted.") \
	X(MAX_REPLY, "max-reply", 0, CK_SIZE, F(max_reply), "SIZE", 64 * KiB, 16 * MiB, "4M", \
	  "Largest reply: ops run in order while their results fit; the one\n" \
	  "that does not fit and every later one are answered EMSGSIZE, and\n" \
	  "the later ones do not run.") \
	X(MAX_OPS, "max-ops", 0, CK_UINT, F(max_ops), "N", 1, 1048576, "4096", \
	  "Operations in one request; a request with more is refused whole\n" \
	  "(E2BIG, none run) and the connection closed.") \
	X(HELLO_S, "hello-timeout", 0, CK_UINT, F(hello_timeout_s), "SECONDS", 1, 3600, "10", \
	  "Close a connection that has not completed its Hello this long\n" \
	  "after connecting.") \
	X(FRAME_S, "frame-timeout", 0, CK_UINT, F(frame_timeout_s), "SECONDS", 1, 3600, "30", \
	  "Close a connection whose request frame, once started, is not\n" \
	  "complete within this time.") \
	X(MAX_PREHELLO, "max-prehello", 0, CK_UINT, F(max_prehello), "N", 1, 1048576, "64", \
	  "Connections that have not said Hello yet; a new connection beyond\n" \
	  "it (or beyond --max-connections) closes the oldest of them.") \
	X(BUSY_POLL, "busy-poll-us", 0, CK_UINT, F(busy_poll_us), "US", 0, MC_BUSYPOLL_MAX_US, "200", \
	  "Longest time a worker polls its connections for the next request\n" \
	  "after one before it sleeps. The window adapts: it grows while\n" \
	  "requests come that soon and shrinks to nothing when they do not, so\n" \
	  "a client making calls back to back is answered by a running thread\n" \
	  "instead of one woken from sleep (tens of microseconds on a VM),\n" \
	  "for the CPU of the polling. 0 turns it off.") \
	X(CONN_OUT, "conn-output-max", 0, CK_SIZE, F(conn_output_max), "SIZE", 64 * KiB, 1 * GiB, \
	  "4M", \
	  "Unsent reply bytes per connection above which the server stops\n" \
	  "reading that client until half have drained.") \
	X(OUT_TOTAL, "output-max", 0, CK_SIZE, F(output_max), "SIZE", 1 * MiB, 64 * GiB, "256M", \
	  "Unsent reply bytes across all connections; above it, clients that\n" \
	  "are not reading their replies are disconnected.") \
	X(MAP_SIZE, "store-map-size", 0, CK_SIZE, F(map_size), "SIZE", 1 * MiB, 16 * TiB, "256M", \
	  "Initial LMDB map size (it grows when full).") \
	X(RETENTION, "log-retention", 0, CK_UINT, F(log_retention), "N", 0, 1000000000, "0", \
	  "Committed batches kept in the commit log at most; 0: no bound by\n" \
	  "count (--log-retention-bytes and --log-retention-age bound it).") \
	X(LOG_LEVEL, "log-level", 0, CK_LEVEL, F(log_level), "LEVEL", 0, 0, "info", \
	  "One of error, warn, info, debug; SIGHUP re-reads it.") \
	X(ROOT_MODE, "root-mode", 0, CK_MODE, F(root_mode), "MODE", 0, 07777, "0755", \
	  "Octal permission bits of the root directory of a new namespace.") \
	X(JOURNAL_RECORDS, "journal-max-records", 0, CK_UINT, F(journal_max_records), "N", 1, \
	  1000000000, "1000000", \
	  "Bound on the journal: changes applied but not committed yet, in\n" \
	  "records (a create adds two or three). Half way to it a commit\n" \
	  "starts at once; past it a mutation waits --journal-wait-ms for a\n" \
	  "commit to make room, then fails with ENOSPC and changes nothing.") \
	X(JOURNAL_BYTES, "journal-max-bytes", 0, CK_SIZE, F(journal_max_bytes), "SIZE", 64 * KiB, \
	  64 * GiB, "256M", \
	  "The same bound in journal bytes.") \
	X(JOURNAL_WAIT, "journal-wait-ms", 0, CK_UINT, F(journal_wait_ms), "MS", 0, 60000, "1000", \
	  "How long a mutation waits for room in a full journal; after a wait\n" \
	  "that timed out, mutations fail at once until a commit succeeds.") \
	X(SHUTDOWN, "shutdown-timeout", 0, CK_UINT, F(shutdown_timeout_s), "SECONDS", 0, 3600, "10", \
	  "How long SIGTERM or SIGINT keeps trying to commit what is pending\n" \
	  "while the store fails; then replies still waiting for durability\n" \
	  "get EIO and the server exits with status 3.") \
	X(CACHE_HIGH, "cache-high", 0, CK_UINT, F(cache_high_pct), "PCT", 1, 100, "90", \
	  "Shrinker high watermark, percent of --cache-size: above it clean\n" \
	  "entries are evicted down to --cache-low.") \
	X(CACHE_LOW, "cache-low", 0, CK_UINT, F(cache_low_pct), "PCT", 1, 100, "80", \
	  "Shrinker low watermark, percent of --cache-size, not above\n" \
	  "--cache-high.") \
	X(NEG_MAX, "negative-max", 0, CK_UINT, F(neg_max), "N", 0, UINT32_MAX, "0", \
	  "Cached negative entries at most in total; 0: an eighth of what the\n" \
	  "cache holds.") \
	X(NEG_DIR_MAX, "negative-dir-max", 0, CK_UINT, F(neg_dir_max), "N", 1, UINT32_MAX, "256", \
	  "Cached negative entries at most per directory.") \
	X(SLOWLOG_MS, "slowlog-threshold-ms", 0, CK_UINT, F(slowlog_ms), "MS", 0, 3600000, "10", \
	  "Operations whose service time reaches this enter the slow log\n" \
	  "(mcachectl slowlog); 0 logs every operation. SIGHUP re-reads it.") \
	X(SLOWLOG_LEN, "slowlog-max-len", 0, CK_UINT, F(slowlog_len), "N", 0, 100000, "128", \
	  "Entries the slow log keeps, the oldest dropped first; 0 keeps none.\n" \
	  "SIGHUP re-reads it (a new length empties the log).") \
	X(RETENTION_BYTES, "log-retention-bytes", 0, CK_SIZE, F(log_retention_bytes), "SIZE", 0, \
	  1 * TiB, "64M", \
	  "Bytes of committed batches kept in the commit log (`mcachectl log`);\n" \
	  "the oldest go first; 0: no bound by size.") \
	X(RETENTION_AGE, "log-retention-age", 0, CK_UINT, F(log_retention_age_s), "SECONDS", 0, \
	  315360000, "86400", \
	  "Committed batches older than this leave the commit log; 0: no bound\n" \
	  "by age.") \
	X(WARMERS, "warmers", 0, CK_UINT, F(warmers), "N", 0, 64, "2", \
	  "Threads that load the namespace from the store into the cache at\n" \
	  "start (upper levels first, up to the --cache-low watermark) while\n" \
	  "the server serves, then read ahead directories where lookups miss;\n" \
	  "0 loads entries only when they are looked up.") \
	X(WARM_NICE, "warm-nice", 0, CK_UINT, F(warm_nice), "N", 0, 19, "19", \
	  "Nice value of the warmer threads: at 19 the committer, the\n" \
	  "connections and the clients on the machine get a CPU first. Above\n" \
	  "0, a warmer reading the store (outside the namespace lock) is in\n" \
	  "the SCHED_IDLE class too, when the process may come back from it\n" \
	  "(root, or an RLIMIT_NICE allowing N: LimitNICE=+19 in the systemd\n" \
	  "unit). On a machine kept busy by other work a lower value may\n" \
	  "serve better: a warmer waiting for a CPU may hold the namespace\n" \
	  "lock meanwhile.") \
	X(SHM_PATH, "shm-path", 0, CK_PATH, F(shm_path), "PATH", 0, 0, NULL, \
	  "Keep the shared-memory segment in this file (under /dev/shm) instead\n" \
	  "of an anonymous memfd: it outlives a clean stop, and the next start\n" \
	  "re-attaches it and serves the cached namespace at once when it\n" \
	  "matches the store (else it is discarded and warmed again). none: a\n" \
	  "memfd. Default: none") \
	X(CONFIG, "config", 'c', CK_CONFIG, NOFIELD, "FILE", 0, 0, NULL, \
	  "Read settings from FILE first; options on the command line win.") \
	X(HELP, "help", 'h', CK_HELP, NOFIELD, NULL, 0, 0, NULL, \
	  "Print this text and exit.") \
	X(VERSION, "version", 'V', CK_VERSION, NOFIELD, NULL, 0, 0, NULL, \
	  "Print the version and exit.")

#endif
