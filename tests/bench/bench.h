/* bench.h - what the mcbench modules share: options, steps, pipe messages, helpers. */
#ifndef MCBENCH_BENCH_H
#define MCBENCH_BENCH_H

#include <limits.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "mcache.h"

enum phase {
	PH_MKDIR, PH_CREATE, PH_STAT, PH_READDIR, PH_UNLINK, PH_RMDIR,
	PH_RMTREE, PH_STAT3, PH_NEGSTAT, PH_DURABLE, PH_LMDB, PH_STATSEQ, PH_STATRAND, PH_COUNT
};

enum tkind { T_MC, T_KERNEL, T_LMDB, T_COUNT };

extern const char *const phase_names[PH_COUNT];
extern const char *const tkind_names[T_COUNT];

#define MAX_CLIENTS 256
#define MAX_STEPS (2 * PH_COUNT + 1)
#define MAX_REPEAT 1000
#define SETUP_BATCH 100      /* ops per round trip in untimed set-up */
#define SYNC_EVERY 100       /* durable: mc_sync after this many creates */
#define LMDB_TXN_PUTS 100    /* lmdb: puts per committed write transaction */

struct opts {
	const char *socket;          /* NULL: $MCACHE_SOCKET / the library default */
	const char *kdir;            /* NULL: a fresh directory under /dev/shm */
	const char *lmdb_dir;        /* NULL: the socket's directory */
	const char *mcached;         /* start this server ourselves */
	unsigned long files;         /* -n: files per directory */
	unsigned long dirs;          /* -d: directories per client */
	unsigned clients;            /* -c */
	unsigned long batch;         /* --batch: 0 = serial */
	unsigned repeat;             /* --repeat */
	unsigned long count;         /* --count: calls per client for stat3/negstat */
	unsigned threads;            /* --threads: lookup threads per client in stat3/negstat */
	unsigned name_len;           /* --name-len */
	unsigned long extents;       /* --extents: state records (0: no extent benchmark) */
	bool json;
	bool kernel_only;          /* no mcache steps */
	bool mcache_only;          /* no kernel or LMDB steps */
	bool callgrind;              /* --callgrind: collect only the timed loops */
	bool rpc;                    /* the rpc comparison (bench_rpc.c) */
	unsigned scale;              /* --scale: also run with scale x clients */
	bool phase_on[PH_COUNT];
	enum phase order[PH_COUNT];  /* phases in the order given */
	unsigned norder;
};

struct step {
	enum phase ph;
	enum tkind tk;
};

/* Set once before any client is forked (mcbench.c's main, through
 * bench_opts.c); read-only afterwards. */
extern struct opts O;
extern struct step steps[MAX_STEPS];
extern unsigned nsteps;
extern pid_t run_id;
extern char kroot[PATH_MAX];     /* the kernel directory in use */

/* Whether any step runs against mcached. */
bool need_server(void);

/* bench_opts.c: parse the command line into O (0; 1 after --help; -1 on a
 * usage error, said on stderr), then make steps[] from it. */
int parse_args(int argc, char **argv);
void steps_make(void);

/* Messages on a client's up pipe. */
enum msg_type { MSG_READY = 1, MSG_RESULT, MSG_DONE };

struct msg {
	int32_t type;
	int32_t client;
	int32_t step;
	int32_t pad;
	uint64_t ops;
	uint64_t errors;
	int64_t t0_ns;
	int64_t t1_ns;
};

/* One step of one repeat, summed over clients. */
struct result {
	uint64_t ops;
	uint64_t errors;
	double secs;
	double rate;                 /* ops/s; 0 when errors or no ops */
	bool valid;
};

/* Memory per created entry, measured around the first mcache file-creating step. */
struct memfig {
	bool valid;
	double d_bytes, d_pos, d_inodes;
	uint64_t created;
};

/* ------------------------------------------------------------------ */
/* a client process (bench_client.c, bench_lmdb.c) */

enum fop { FOP_MKDIR, FOP_RMDIR, FOP_CREATE, FOP_STAT, FOP_UNLINK };

struct tstate {
	bool base;                   /* the client's subtree root exists */
	bool dirs;                   /* its D directories exist */
	bool files;                  /* and hold N files each */
	bool s3, ng;                 /* stat3 / negstat trees built */
};

/* Ops per 10-ms slot of one client during the unlink and rmtree phases
 * (bench_window.c). */
struct win {
	int64_t base;                /* first slot: CLOCK_MONOTONIC / 10 ms */
	uint32_t n;                  /* slots used */
	uint32_t *v;                 /* NULL: not counting */
};

struct client {
	unsigned id;
	struct win win;
	mc_client *mc;
	mc_batch *b;
	char base[64];               /* "mcb.<pid>.<r>.c<k>" */
	char **fnames;               /* N file names */
	char **dnames;               /* D directory names */
	char *spaths;                /* statseq/statrand: N paths of sstride bytes */
	size_t sstride;
	enum tkind stk;              /* the side spaths were made for */
	struct tstate st[2];         /* T_MC, T_KERNEL */
	/* batching */
	unsigned long bsz;           /* ops per round trip in the current run */
	unsigned long qn;            /* queued */
	char *qpaths;                /* bsz slots of qstride bytes */
	size_t qstride;
	struct stat *qst;
	enum fop qop;
	/* current step, for messages */
	const char *phase;
	const char *target;
	uint64_t errors;
	/* lmdb */
	MDB_env *env;
	MDB_dbi dbi;
};

/* Client id of a fresh process: run every step against the parent's
 * barrier (up: messages to the parent, go: one byte per step from it),
 * clean up, report MSG_DONE and exit. lmdb_dir: the LMDB environment of the
 * lmdb step ("" when there is none). Never returns. */
_Noreturn void client_main(unsigned id, unsigned rep, int up, int go, const char *lmdb_dir);

/* The raw LMDB baseline for client c. lmdb_open: open the shared environment
 * in dir; lmdb_run: the timed puts, adding to *ops; lmdb_close: close it (no
 * effect when not open). The first two return 0, or -1 after counting an
 * error in c->errors (the first one is printed). */
int lmdb_open(struct client *c, const char *dir);
int lmdb_run(struct client *c, uint64_t *ops);
void lmdb_close(struct client *c);

/* ------------------------------------------------------------------ */
/* the server (bench_server.c) */

/* Start mcached at path in a fresh directory under $TMPDIR and wait until it
 * accepts connections; *sock gets its socket. 0, or -1 after a message on
 * stderr (call server_stop to clean up). */
int server_start(const char *path, const char **sock);
/* Stop the server (SIGTERM) and remove its directory; no effect when none. */
void server_stop(void);
/* The started server's I/O so far (/proc/PID/io): bytes it had written to
 * storage (page cache pages dirtied) and bytes it passed to write(2) and
 * its kin (pwrite: the store's pages). 0, or -1 without a started server. */
struct server_io {
	uint64_t write_bytes, wchar;
};
int server_io(struct server_io *out);
/* Before a baseline step that follows mcache's: commit what is left
 * (mc_sync on pc) and give the server QUIESCE_MS to finish what it does
 * once idle -- a table apply put off by commits someone waited for, room
 * written ahead in data.mdb -- so that its disk writes do not fall in the
 * baseline's time. A no-op without pc. */
#define QUIESCE_MS 100
void server_quiesce(mc_client *pc);

struct memsnap {
	double bytes, pos, inodes;
	bool ok;                     /* all three read */
};

/* mc_sync, then read shm.bytes_used, dentries.positive and inodes.cached from
 * mc_server_stats into *m; m->ok false (with a message) when that fails or
 * c is NULL. */
void mem_snapshot(mc_client *c, struct memsnap *m);

/* The number at dotted path ("shm.bytes_used") in a stats document. 0, or
 * -ENOENT / -EINVAL. */
int stats_lookup(const char *doc, const char *path, double *out);

/* ------------------------------------------------------------------ */
/* the extent cache (bench_extent.c) */

/* mcbench --extents: one file of n 16-KiB state records through the server
 * at O.socket (bulk eviction against range-by-range clearing, vector set
 * and clear rates with merging, extent-map lookups from shared memory);
 * the figures to f. 0, or -1 after a message on stderr. */
int extent_bench(uint64_t n, FILE *f);

/* ------------------------------------------------------------------ */
/* rates over time (bench_window.c) */

/* Client: start counting, count ops as they complete (no effect when not
 * counting), then leave the counts of step for the parent and stop. */
void win_begin(struct win *w);
void win_tick(struct win *w, uint64_t ops);
void win_end(struct win *w, unsigned step, unsigned client);
/* Parent: sum the counts every client left for step and print the rate of
 * every whole 100-ms and 1-s window (min, median, max) to f. */
void win_report(FILE *f, unsigned step, unsigned nclients, const char *label);
/* Parent: read segment use, negative entries and the rmtree count every
 * 100 ms through c until sampler_stop. NULL when c is NULL or the thread
 * cannot start (the other calls do nothing with NULL). */
struct sampler *sampler_start(mc_client *c);
/* The number of samples so far: where a phase starts. */
unsigned sampler_mark(struct sampler *s);
/* Print the range of the samples since mark `from` to f and, when rmtree,
 * the rate of the server's rmtree count in 100-ms and 1-s windows. */
void sampler_report(struct sampler *s, FILE *f, const char *label, unsigned from, bool rmtree);
/* Stop; with a label, print the range over every sample first. */
void sampler_stop(struct sampler *s, FILE *f, const char *label);
/* The server's dentries.negative now (-1 when it cannot be read). */
double cache_negatives(mc_client *c);
/* Kernel recursive deletes count each removal here when not NULL. */
extern struct win *kernel_rmtree_win;

/* ------------------------------------------------------------------ */
/* the RPC floor and round trip (bench_rpc.c) */

/* count timed 64-byte ping-pongs between two processes, then count timed
 * mc_chmod calls to the server at socket, repeat times interleaved; print
 * the medians of p50 and p99 of each and their ratios to f. 0, or -1 after
 * a message on stderr. */
int rpc_bench(FILE *f, const char *socket, unsigned long count, unsigned repeat);

/* ------------------------------------------------------------------ */
/* output (bench_report.c) */

/* One output row: a phase with its mcache and baseline steps. */
struct row {
	enum phase ph;
	int mc_step, base_step;      /* -1: not measured */
	uint64_t ops;                /* per repeat, summed over clients */
	double mc_rate, base_rate;   /* medians; 0 when any repeat failed */
	uint64_t errors;             /* over all repeats */
};

/* rows[p] for each phase O.order[p], from res[0..reps-1]. */
void rows_make(struct result (*res)[MAX_STEPS], unsigned reps, struct row *rows);
void print_table(FILE *f, const struct row *rows, unsigned reps,
                 const struct memfig *mem, unsigned nmem);
void print_json(FILE *f, struct result (*res)[MAX_STEPS], unsigned reps,
                const struct row *rows, const struct memfig *mem);
/* For each phase, the mcache and baseline rates of rows2 (n2 clients)
 * over those of rows (n1 clients). */
void print_scaling(FILE *f, const struct row *rows, const struct row *rows2, unsigned n1,
                   unsigned n2);

/* ------------------------------------------------------------------ */
/* helpers (bench_util.c) */

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* All len bytes, retrying on EINTR. 0 or -errno. */
int write_full(int fd, const void *buf, size_t len);
/* All len bytes, retrying on EINTR. 0, -EPIPE on EOF, or -errno. */
int read_full(int fd, void *buf, size_t len);

/* Name of length len into out (len + 1 bytes): c, then i zero-padded. */
void make_name(char *out, char c, unsigned long i, unsigned len);

/* Remove path and everything below it; *count (may be NULL) gets the number of
 * entries removed. 0, or -errno (ENOENT if path is absent); after a failure
 * of nftw/unlinkat, kernel_rmtree_errpath() names the entry that failed. */
int kernel_rmtree(const char *path, uint64_t *count);
const char *kernel_rmtree_errpath(void);

/* kernel_rmtree of a scratch directory of ours; absent is fine. 0, or -1
 * after "mcbench: removing DIR: ..." on stderr. */
int scratch_remove(const char *dir);

#endif
