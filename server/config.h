/* config.h - mcached's settings: defaults, the config file, the command line
 * (which wins). */
#ifndef MC_CONFIG_H
#define MC_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct mcd_config {
	char *socket_path;          /* --socket; default $MCACHE_SOCKET, else MC_DEFAULT_SOCKET */
	char *data_dir;             /* --data; default "./var/data" */
	char *admin_addr;           /* --admin; default "unix:<socket dir>/admin.sock"; "none" disables */
	bool admin_remote;          /* --admin-allow-remote */
	uint64_t cache_size;        /* --cache-size; default 256M */
	unsigned workers;           /* --workers; default 2 */
	unsigned commit_interval_ms;/* --commit-interval-ms; default 5 */
	bool sync;                  /* --sync */
	unsigned max_conns;         /* --max-connections; default 1024 */
	unsigned idle_timeout_s;    /* --idle-timeout; default 0 (none) */
	uint32_t max_frame;         /* --max-frame; default 16M */
	uint64_t map_size;          /* --store-map-size; default 256M (grows) */
	uint64_t log_retention;     /* --log-retention; batches; default 0: none */
	uint64_t log_retention_bytes; /* --log-retention-bytes; default 64M */
	uint64_t log_retention_age_s; /* --log-retention-age; default 86400 */
	int log_level;              /* --log-level; enum log_level; default info */
	uint32_t root_mode;         /* --root-mode (octal); default 0755 */
	uint64_t journal_max_records; /* --journal-max-records; uncommitted records; default 1000000 */
	uint64_t journal_max_bytes; /* --journal-max-bytes; uncommitted journal bytes; default 256M */
	unsigned journal_wait_ms;   /* --journal-wait-ms; wait for room, then ENOSPC; default 1000 */
	unsigned shutdown_timeout_s;/* --shutdown-timeout; bound on the last commits; default 10 */
	unsigned max_ops;           /* --max-ops; ops per request; default 4096 */
	uint32_t max_reply;         /* --max-reply; largest reply; default 4M */
	unsigned hello_timeout_s;   /* --hello-timeout; default 10 */
	unsigned frame_timeout_s;   /* --frame-timeout; a started frame completes within it; default 30 */
	unsigned max_prehello;      /* --max-prehello; connections before Hello; default 64 */
	unsigned busy_poll_us;      /* --busy-poll-us; default 200 (rpc.c note 6) */
	uint64_t conn_output_max;   /* --conn-output-max; unsent replies per connection; default 4M */
	uint64_t output_max;        /* --output-max; unsent replies in all; default 256M */
	unsigned cache_high_pct;    /* --cache-high; shrinker high watermark, %; default 90 */
	unsigned cache_low_pct;     /* --cache-low; ... low watermark; default 80 */
	uint64_t neg_max;           /* --negative-max; 0: an eighth of the cache's capacity */
	uint32_t neg_dir_max;       /* --negative-dir-max; per directory; default 256 */
	unsigned slowlog_ms;        /* --slowlog-threshold-ms; default 10 */
	unsigned slowlog_len;       /* --slowlog-max-len; entries kept; default 128 */
	unsigned warmers;           /* --warmers; warmer threads, 0: none; default 2 */
	unsigned warm_nice;         /* --warm-nice; their nice value, 0..19; default 19 */
	char *shm_path;             /* --shm-path; the segment's file, NULL: a memfd */
};

/* Set defaults. */
void config_defaults(struct mcd_config *c);

/* Parse argv (and --config FILE, whose settings the command line
 * overrides). Returns 0 to run, 1 when --help or --version was printed to
 * out (exit 0), or -EINVAL after printing a one-line error to err (exit 2).
 * The config file holds `key = value` lines with the long option names
 * (`cache-size = 1G`), `#` comments and blank lines. -ENOMEM (after a
 * message) when memory runs out. On error *c may hold some of the new
 * settings; config_free it as usual. Not thread-safe (getopt). */
int config_parse(struct mcd_config *c, int argc, char **argv, FILE *out, FILE *err);
void config_free(struct mcd_config *c);

/* SIGHUP: parse argv (and its --config file) anew and take the settings a
 * running server can change (log-level) into *c; each other setting that
 * changed is named on err as waiting for a restart. 0, or -EINVAL (after a
 * message on err; *c unchanged) or -ENOMEM. Not thread-safe (getopt). */
int config_reload(struct mcd_config *c, int argc, char **argv, FILE *err);

/* "64K", "256M", "2G", "1T", or bytes. -EINVAL / -ERANGE. */
int config_parse_size(const char *s, uint64_t *out);

#endif
