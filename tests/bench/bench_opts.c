/* bench_opts.c - mcbench's command line: the manual (--help), the options
 * and their bounds, the list of phases, and the steps a repeat runs made
 * from them (each phase against mcache, then against the kernel directory,
 * then LMDB's own). mcbench.c's main calls parse_args and steps_make once,
 * before any client is forked. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_args.h"

/* ------------------------------------------------------------------ */
/* small helpers */

static unsigned digits(unsigned long v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* command line */

static void usage(FILE *f)
{
	fputs(
"NAME\n"
"    mcbench - metadata benchmark: mcached against a kernel directory\n"
"\n"
"SYNOPSIS\n"
"    mcbench [-s SOCKET | --mcached PATH] [--kdir DIR] [-n FILES] [-d DIRS]\n"
"            [-c CLIENTS] [--phases LIST] [--batch N] [--repeat R]\n"
"            [--count N] [--name-len L] [--lmdb-dir DIR] [--kernel-only | --mcache-only]\n"
"            [--extents RECORDS] [--json] [--callgrind]\n"
"\n"
"DESCRIPTION\n"
"    mcbench runs mdtest-style phases against a running mcached through\n"
"    libmcache and, in the same run and with the same workload, against a\n"
"    kernel directory (tmpfs by default), then prints one row per phase with\n"
"    both rates and their ratio. The durable phase is compared with raw LMDB\n"
"    instead (see PHASES).\n"
"\n"
"    Each client is a forked process with its own connection (mc_connect) and\n"
"    its own subtree \"mcb.<pid>.<run>.c<k>\" at the top of the service\n"
"    namespace and of the kernel directory. Kernel paths are relative to the\n"
"    kernel directory (the clients chdir into it), so both sides resolve the\n"
"    same number of path components. Before every phase all clients finish\n"
"    their untimed set-up, then start together through a pipe barrier; a\n"
"    phase's rate is the ops of all clients divided by the time from the\n"
"    first client's start to the last client's end (CLOCK_MONOTONIC).\n"
"\n"
"    Every call's result is checked. The first failing call of a client aborts\n"
"    that phase for the client with a message on stderr; the phase's rate is\n"
"    then shown as \"error\" and the errors column counts the failed calls.\n"
"    Nothing here depends on timing: mcbench never fails because something is\n"
"    slow.\n"
"\n", f);
	fputs(
"OPTIONS\n"
"    -s, --socket SOCKET\n"
"        mcached's socket. Default: $MCACHE_SOCKET, else the library default.\n"
"    --mcached PATH\n"
"        Start the server PATH for this run in a fresh directory under\n"
"        $TMPDIR (default /var/tmp), as PATH --socket DIR/s.sock --data\n"
"        DIR/data --admin none; stop it (SIGTERM) and remove DIR at the end.\n"
"        Overrides -s.\n"
"    --kdir DIR\n"
"        The kernel directory to compare with; it must exist. Default: a new\n"
"        directory /dev/shm/mcbench.<pid> (tmpfs), removed at the end.\n"
"    -n, --files FILES\n"
"        Files per directory (default 10000). Also the number of files in the\n"
"        directory used by stat3, negstat and rmtree.\n"
"    -d, --dirs DIRS\n"
"        Directories per client (default 1).\n"
"    -c, --clients CLIENTS\n"
"        Client processes (default 1, at most 256). Rates are aggregate.\n"
"    --phases LIST\n"
"        Comma-separated phases, run in the order given (default\n"
"        mkdir,create,stat,readdir,unlink,rmdir). A phase whose precondition\n"
"        is missing (stat without create, for instance) gets it built untimed.\n"
"    --batch N\n"
"        On mcache, send mkdir, create, stat, unlink and rmdir through the\n"
"        batch interface, N operations per round trip (0: one call per\n"
"        operation; default 0). The kernel side always makes one system call\n"
"        per operation.\n"
"    --repeat R\n"
"        Run everything R times, each with fresh clients and trees, and report\n"
"        the median rate of each phase (default 3).\n"
"    --count N\n"
"        Calls per client in stat3, negstat, statseq and statrand (default\n"
"        1000000; 1e6 works).\n"
"    --scale K\n"
"        Also run every repeat with K times the clients, right after the run\n"
"        with -c CLIENTS (interleaved), print its table too, and the ratio\n"
"        of each phase's rates with K x CLIENTS clients to those with\n"
"        CLIENTS (default 1: no second run; --json covers the first only).\n"
"    --threads T\n"
"        Threads per client in stat3 and negstat, each making --count calls\n"
"        (default 1). On mcache every thread but the first opens its own\n"
"        connection; the kernel side uses the same number of threads.\n"
"    --name-len L\n"
"        Length of file and directory names (default 16; 2..255, and long\n"
"        enough to number FILES and DIRS).\n"
"    --lmdb-dir DIR\n"
"        Where the raw-LMDB baseline makes its temporary environment. Put it\n"
"        on the disk that holds the server's data directory. Default: the\n"
"        socket's directory (the server's directory with --mcached).\n"
"    --kernel-only\n"
"        Run only the kernel and LMDB sides (no server needed); the mcache\n"
"        column shows \"-\".\n"
"    --mcache-only\n"
"        Run only the mcache side: no kernel or LMDB baseline, whose column\n"
"        shows \"-\" (for profiling the server and the library alone, with\n"
"        perf record -a or per-thread CPU times, without a baseline's work in\n"
"        the same window). No ratio is printed.\n"
"    --extents RECORDS\n"
"        Instead of the phases, the extent cache: one file of RECORDS state\n"
"        records of 16 KiB with alternating bits (1048576: 16 GiB) built with\n"
"        mc_range_set_v; memory per record; bulk eviction (mc_evict) against\n"
"        clearing it range by range (a lock and a clear per 16 KiB) in the\n"
"        same run; set and clear rates with merging (vectors); mc_extent_map\n"
"        lookups of 16 extents from shared memory.\n"
"    --json\n"
"        Also print the results as one JSON document on stdout; the table\n"
"        then goes to stderr.\n"
"    --callgrind\n"
"        For instruction counts: under valgrind --tool=callgrind\n"
"        --collect-atstart=no, collect only inside each timed step and dump\n"
"        the counts at its end (one callgrind.out file per step, named in\n"
"        its \"desc: Trigger\" line as \"<phase>-<target>-<ops>\"); the\n"
"        instructions per call are that file's total divided by <ops>. Use\n"
"        with --repeat 1 and a fixed --count. Without valgrind it changes\n"
"        nothing.\n"
"    -h, --help\n"
"        Show this text.\n"
"\n", f);
	fputs(
"PHASES\n"
"    mkdir    create the D directories of each client.\n"
"    create   create N files in each directory: mc_open(O_CREAT|O_EXCL|\n"
"             O_WRONLY) + mc_close, or mc_batch_create with --batch; kernel:\n"
"             open(O_CREAT|O_EXCL|O_WRONLY) + close.\n"
"    stat     stat every file.\n"
"    readdir  list every directory fully; ops are entries returned, and each\n"
"             listing must return exactly N entries.\n"
"    unlink   unlink every file.\n"
"    rmdir    remove the D directories.\n"
"    rmtree   build a directory of N files (batched, untimed), then time one\n"
"             mc_rmtree against a kernel recursive delete (nftw + unlinkat);\n"
"             ops are the entries removed (N + 1).\n"
"    stat3    stat one file three components deep (/<client>/s3/<file>, in a\n"
"             directory of N files) --count times.\n"
"    negstat  stat a missing name in a directory of N files --count times;\n"
"             every call must fail with ENOENT.\n"
"    statseq  stat the N distinct files of /<client>/s3/ (three components,\n"
"             as stat3) in name order, --count calls in all (cycling);\n"
"             kernel: fstatat(AT_FDCWD) of the same relative paths.\n"
"    statrand the same over a pseudo-random sequence of those N files (the\n"
"             same sequence on both sides), so that a large N measures\n"
"             lookups that miss the processor's caches.\n"
"    durable  create D x N files with mc_sync after every 100 creates;\n"
"             compared with the lmdb phase (run implicitly if not listed).\n"
"    rpc      not a client phase: before the others, the RPC floor against\n"
"             the round trip. --count 64-byte ping-pongs between two\n"
"             processes over a unix socketpair, then --count mc_chmod calls\n"
"             (a small mutation) on one file, each call timed alone; --repeat\n"
"             runs of both, interleaved. Prints the medians over the runs of\n"
"             each side's p50 and p99 and the ratios mc_chmod / ping-pong.\n"
"    lmdb     raw LMDB baseline in a temporary environment under --lmdb-dir:\n"
"             D x N mdb_put of dentry-sized records (key: 8-byte parent +\n"
"             name of --name-len bytes; value: 9 bytes), one write\n"
"             transaction committed (with fsync) per 100 puts. Clients share\n"
"             the environment, as the server's writers share one store.\n"
"\n", f);
	fputs(
"OUTPUT\n"
"    One row per phase: phase, ops (per run, all clients), mcache ops/s,\n"
"    kernel ops/s (raw LMDB for durable and lmdb), ratio mcache/baseline\n"
"    (above 1: mcache is faster), and the errors over all runs.\n"
"    After the first mcache phase that creates files, the server's stats\n"
"    (mc_server_stats: shm.bytes_used, dentries.positive, inodes.cached) are\n"
"    read before and after (each after an mc_sync) and the shared memory\n"
"    used per created entry is printed with the name length (with a cache\n"
"    smaller than the tree, divide by the entries still cached).\n"
"    For each unlink and rmtree phase, lines starting with # give the rate\n"
"    in every whole 100-ms and 1-s window (min, median, max, min/median)\n"
"    from every client's completed calls (kernel: removals) per 10 ms, and\n"
"    on mcache the segment use and negative entries, read every 100 ms for\n"
"    the whole run; mc_rmtree being one call, its rate windows come from\n"
"    the server's cache.rmtree_entries count in those samples. At the end,\n"
"    the range of segment use and negatives over the whole run, and both\n"
"    before the run and once its trees are gone.\n"
"\n"
"ENVIRONMENT\n"
"    MCBENCH_MCACHED_ARGS\n"
"        More options for the server --mcached starts, split at spaces, e.g.\n"
"        \"--cache-size 36M\" to run with a cache half the size of the tree.\n"
"\n"
"EXIT STATUS\n"
"    0 when every call succeeded, 1 when some call failed or a client died,\n"
"    2 on a usage error.\n"
"\n"
"EXAMPLES\n"
"    mcbench -s /run/mcache/mcached.sock -n 10000 --repeat 3\n"
"    mcbench -n 10000 --batch 100 -c 2\n"
"    mcbench -n 20000 --batch 100 -c 1 --scale 2 --phases create,unlink\n"
"    mcbench --phases stat3,negstat -n 1000\n"
"    mcbench --mcached ./mcached --extents 1048576\n"
"    mcbench --phases statseq,statrand,negstat -n 100000 --count 1000000\n"
"    valgrind --tool=callgrind --collect-atstart=no mcbench --callgrind \\\n"
"        --mcached ./mcached --phases stat3 -n 1000 --count 100000 --repeat 1\n"
"    mcbench --phases rpc --count 20000 --repeat 5\n"
"    mcbench --phases durable,lmdb -n 2000 --lmdb-dir /var/lib/mcache\n"
"    MCBENCH_MCACHED_ARGS=\"--cache-size 36M\" mcbench --mcached ./mcached \\\n"
"        -c 8 -d 8 -n 10000 --phases mkdir,create,unlink,rmdir --repeat 1\n",
	f);
}

static int parse_phases(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;
	unsigned p;

	if (!dup)
		return -ENOMEM;
	memset(O.phase_on, 0, sizeof(O.phase_on));
	O.norder = 0;
	O.rpc = false;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "rpc") == 0) {
			O.rpc = true;         /* not a phase of the clients: rpc_bench */
			continue;
		}
		for (p = 0; p < PH_COUNT; p++)
			if (strcmp(tok, phase_names[p]) == 0)
				break;
		if (p == PH_COUNT) {
			fprintf(stderr, "mcbench: unknown phase '%s' (see --help)\n", tok);
			free(dup);
			return -EINVAL;
		}
		if (O.phase_on[p]) {
			fprintf(stderr, "mcbench: phase '%s' given twice\n", tok);
			free(dup);
			return -EINVAL;
		}
		O.phase_on[p] = true;
		O.order[O.norder++] = (enum phase)p;
	}
	free(dup);
	if (O.norder == 0 && !O.rpc) {
		fprintf(stderr, "mcbench: --phases is empty\n");
		return -EINVAL;
	}
	return 0;
}

void steps_make(void)
{
	unsigned p;

	nsteps = 0;
	for (p = 0; p < O.norder && !O.kernel_only; p++)
		if (O.order[p] != PH_LMDB)
			steps[nsteps++] = (struct step){ O.order[p], T_MC };
	for (p = 0; p < O.norder && !O.mcache_only; p++)
		if (O.order[p] != PH_LMDB && O.order[p] != PH_DURABLE)
			steps[nsteps++] = (struct step){ O.order[p], T_KERNEL };
	if (!O.mcache_only && (O.phase_on[PH_LMDB] || O.phase_on[PH_DURABLE]))
		steps[nsteps++] = (struct step){ PH_LMDB, T_LMDB };
}

bool need_server(void)
{
	unsigned i;

	if (O.rpc && !O.kernel_only)
		return true;
	for (i = 0; i < nsteps; i++)
		if (steps[i].tk == T_MC)
			return true;
	return false;
}

int parse_args(int argc, char **argv)
{
	enum { OPT_KDIR = 256, OPT_PHASES, OPT_BATCH, OPT_REPEAT, OPT_JSON, OPT_NAMELEN,
	       OPT_COUNT, OPT_LMDB, OPT_MCACHED, OPT_KONLY, OPT_THREADS, OPT_EXTENTS,
	       OPT_CALLGRIND, OPT_SCALE, OPT_MONLY };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'n' },
		{ "dirs", required_argument, NULL, 'd' },
		{ "clients", required_argument, NULL, 'c' },
		{ "kdir", required_argument, NULL, OPT_KDIR },
		{ "phases", required_argument, NULL, OPT_PHASES },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "name-len", required_argument, NULL, OPT_NAMELEN },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "scale", required_argument, NULL, OPT_SCALE },
		{ "lmdb-dir", required_argument, NULL, OPT_LMDB },
		{ "mcached", required_argument, NULL, OPT_MCACHED },
		{ "kernel-only", no_argument, NULL, OPT_KONLY },
		{ "mcache-only", no_argument, NULL, OPT_MONLY },
		{ "extents", required_argument, NULL, OPT_EXTENTS },
		{ "callgrind", no_argument, NULL, OPT_CALLGRIND },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int ch;

	O.files = 10000;
	O.dirs = 1;
	O.clients = 1;
	O.repeat = 3;
	O.count = 1000000;
	O.threads = 1;
	O.scale = 1;
	O.name_len = 16;
	if (parse_phases("mkdir,create,stat,readdir,unlink,rmdir") < 0)
		return -1;
	while ((ch = getopt_long(argc, argv, "s:n:d:c:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': O.socket = optarg; break;
		case OPT_KDIR: O.kdir = optarg; break;
		case OPT_LMDB: O.lmdb_dir = optarg; break;
		case OPT_MCACHED: O.mcached = optarg; break;
		case OPT_JSON: O.json = true; break;
		case OPT_KONLY: O.kernel_only = true; break;
		case OPT_MONLY: O.mcache_only = true; break;
		case OPT_CALLGRIND: O.callgrind = true; break;
		case 'h': usage(stdout); return 1;
		case OPT_PHASES:
			if (parse_phases(optarg) < 0)
				return -1;
			break;
		case 'n': case 'd': case 'c': case OPT_BATCH: case OPT_REPEAT:
		case OPT_NAMELEN: case OPT_COUNT: case OPT_THREADS: case OPT_EXTENTS:
		case OPT_SCALE: {
			unsigned long lo = 1, hi = 100000000;
			const char *name = ch == 'n' ? "-n" : ch == 'd' ? "-d" : ch == 'c' ? "-c" :
			                   ch == OPT_BATCH ? "--batch" : ch == OPT_REPEAT ? "--repeat" :
			                   ch == OPT_NAMELEN ? "--name-len" :
			                   ch == OPT_THREADS ? "--threads" :
			                   ch == OPT_EXTENTS ? "--extents" :
			                   ch == OPT_SCALE ? "--scale" : "--count";
			if (ch == 'c')
				hi = MAX_CLIENTS;
			else if (ch == OPT_BATCH)
				lo = 0, hi = 1000000;
			else if (ch == OPT_REPEAT)
				hi = MAX_REPEAT;
			else if (ch == OPT_NAMELEN)
				lo = 2, hi = 255;
			else if (ch == OPT_COUNT)
				hi = 1000000000;
			else if (ch == OPT_THREADS)
				hi = 64;
			else if (ch == OPT_SCALE)
				hi = MAX_CLIENTS;
			if (bench_parse_ulong(optarg, lo, hi, &v) < 0) {
				fprintf(stderr, "mcbench: %s wants an integer in %lu..%lu, not '%s'\n",
				        name, lo, hi, optarg);
				return -1;
			}
			if (ch == 'n') O.files = v;
			else if (ch == 'd') O.dirs = v;
			else if (ch == 'c') O.clients = (unsigned)v;
			else if (ch == OPT_BATCH) O.batch = v;
			else if (ch == OPT_REPEAT) O.repeat = (unsigned)v;
			else if (ch == OPT_NAMELEN) O.name_len = (unsigned)v;
			else if (ch == OPT_THREADS) O.threads = (unsigned)v;
			else if (ch == OPT_EXTENTS) O.extents = v;
			else if (ch == OPT_SCALE) O.scale = (unsigned)v;
			else O.count = v;
			break;
		}
		default:
			fprintf(stderr, "Try 'mcbench --help'.\n");
			return -1;
		}
	}
	if ((unsigned long)O.clients * O.scale > MAX_CLIENTS) {
		fprintf(stderr, "mcbench: -c %u --scale %u is more than %d clients\n", O.clients,
		        O.scale, MAX_CLIENTS);
		return -1;
	}
	if (O.kernel_only && O.mcache_only) {
		fprintf(stderr, "mcbench: --kernel-only and --mcache-only leave nothing to run\n");
		return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "mcbench: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (O.name_len < 1 + digits(O.files - 1) || O.name_len < 1 + digits(O.dirs - 1)) {
		fprintf(stderr, "mcbench: --name-len %u is too short to number %lu files and "
		        "%lu directories\n", O.name_len, O.files, O.dirs);
		return -1;
	}
	return 0;
}
