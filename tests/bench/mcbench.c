/* mcbench.c - mdtest-style metadata benchmark: the same workload against
 * mcached (through libmcache) and a kernel directory, rates side by side.
 *
 * Process model (one repeat):
 *
 *   parent ── fork C clients ──► client k: mc_connect, chdir(kdir)
 *     for each step (phase, target):
 *       client: untimed set-up ─► MSG_READY ─► wait GO ─► timed run ─► MSG_RESULT
 *       parent: read READY from all ─► (stats before) ─► GO to all
 *               ─► read RESULT from all ─► (stats after)
 *     client: untimed clean-up ─► MSG_DONE ─► exit
 *
 * Invariants:
 *  1. Each client has its own up pipe (client → parent, fixed-size records,
 *     atomic writes) and its own go pipe (parent → client), so a client that
 *     dies is seen as EOF on its pipe and no client can take another's GO.
 *  2. Every client passes every barrier, even after an error (it then reports
 *     a result with errors and no ops), so the parent never waits forever on
 *     a live client.
 *  3. A step's aggregate rate is total ops / (latest end - earliest start),
 *     both read with CLOCK_MONOTONIC, which is the same clock in every process.
 *  4. Client k touches only its own subtree "mcb.<pid>.<repeat>.c<k>" (in the
 *     service namespace and under the kernel directory) and its own LMDB keys.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

const char *const phase_names[PH_COUNT] = {
	"mkdir", "create", "stat", "readdir", "unlink", "rmdir",
	"rmtree", "stat3", "negstat", "durable", "lmdb", "statseq", "statrand",
};

const char *const tkind_names[T_COUNT] = { "mcache", "kernel", "lmdb" };

struct opts O;
struct step steps[MAX_STEPS];
unsigned nsteps;
pid_t run_id;
char kroot[PATH_MAX];
static bool kroot_owned;         /* we made it under /dev/shm and remove it */
static char lmdb_parent[PATH_MAX];

/* ------------------------------------------------------------------ */
/* small helpers */

static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;
	double d;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == 'e' || *end == 'E' || *end == '.') {
		/* accept 1e6 */
		errno = 0;
		d = strtod(s, &end);
		if (errno || *end || d < 0 || d > (double)ULONG_MAX || d != (double)(unsigned long)d)
			return -EINVAL;
		v = (unsigned long)d;
	} else if (errno || *end || s[0] == '-' || s[0] == '\0') {
		return -EINVAL;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

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
/* the parent */

static pid_t kids[MAX_CLIENTS];
static int ups[MAX_CLIENTS], gos[MAX_CLIENTS];
static unsigned nkids;

static void kids_kill(void)
{
	unsigned i;

	for (i = 0; i < nkids; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
	}
	nkids = 0;
}

static int recv_msg(unsigned k, int type, struct msg *m)
{
	int r = read_full(ups[k], m, sizeof(*m));

	if (r < 0) {
		fprintf(stderr, "mcbench: client %u died (%s)\n", k,
		        r == -EPIPE ? "end of pipe" : strerror(-r));
		return -1;
	}
	if (m->type != type || m->client != (int32_t)k) {
		fprintf(stderr, "mcbench: client %u: protocol error\n", k);
		return -1;
	}
	return 0;
}

/* One repeat: fork the clients, drive the steps. res[i] gets step i. */
static int run_repeat(unsigned rep, struct result *res, struct memfig *mem)
{
	char lmdb_dir[PATH_MAX + 32];
	struct msg m;
	unsigned i, k;
	mc_client *pc = NULL;
	int mem_step = -1;
	int rc = 0;
	struct memsnap start = { 0 };
	double neg_start = 0;
	struct sampler *smp = NULL;

	lmdb_dir[0] = '\0';
	for (i = 0; i < nsteps; i++) {
		if (steps[i].tk == T_LMDB) {
			snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/mcbench-lmdb.XXXXXX", lmdb_parent);
			if (!mkdtemp(lmdb_dir)) {
				fprintf(stderr, "mcbench: mkdtemp %s: %s\n", lmdb_dir, strerror(errno));
				return -1;
			}
		}
		if (mem_step < 0 && steps[i].tk == T_MC &&
		    (steps[i].ph == PH_CREATE || steps[i].ph == PH_DURABLE))
			mem_step = (int)i;
	}
	if (need_server()) {
		/* The baseline, before any client builds anything. */
		mc_client *t = mc_connect(O.socket);
		if (t) {
			mem_snapshot(t, &start);
			neg_start = cache_negatives(t);
			mc_disconnect(t);
		}
	}
	fflush(NULL);
	for (k = 0; k < O.clients; k++) {
		int up[2], go[2];
		pid_t pid;

		if (pipe2(up, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
			fprintf(stderr, "mcbench: pipe: %s\n", strerror(errno));
			rc = -1;
			goto out;
		}
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "mcbench: fork: %s\n", strerror(errno));
			close(up[0]); close(up[1]); close(go[0]); close(go[1]);
			rc = -1;
			goto out;
		}
		if (pid == 0) {
			unsigned j;
			for (j = 0; j < nkids; j++) {
				close(ups[j]);
				close(gos[j]);
			}
			close(up[0]);
			close(go[1]);
			client_main(k, rep, up[1], go[0], lmdb_dir);
		}
		close(up[1]);
		close(go[0]);
		kids[nkids] = pid;
		ups[nkids] = up[0];
		gos[nkids] = go[1];
		nkids++;
	}
	if (need_server()) {
		pc = mc_connect(O.socket);
		if (!pc)
			fprintf(stderr, "mcbench: stats connection: mc_connect: %s\n", strerror(errno));
		smp = sampler_start(pc);
	}
	for (i = 0; i < nsteps; i++) {
		int64_t t0 = INT64_MAX, t1 = INT64_MIN;
		struct memsnap before, after;

		memset(&res[i], 0, sizeof(res[i]));
		for (k = 0; k < nkids; k++) {
			if (recv_msg(k, MSG_READY, &m) < 0) {
				rc = -1;
				goto out;
			}
		}
		if (i > 0 && steps[i].tk != T_MC && steps[i - 1].tk == T_MC)
			server_quiesce(pc);
		if ((int)i == mem_step)
			mem_snapshot(pc, &before);
		/* durable: what the server writes per op, around the step */
		struct server_io io0, io1;
		bool io = steps[i].ph == PH_DURABLE && steps[i].tk == T_MC && server_io(&io0) == 0;
		unsigned mark = sampler_mark(smp);
		for (k = 0; k < nkids; k++) {
			if (write_full(gos[k], "g", 1) < 0) {
				fprintf(stderr, "mcbench: client %u died\n", k);
				rc = -1;
				goto out;
			}
		}
		for (k = 0; k < nkids; k++) {
			if (recv_msg(k, MSG_RESULT, &m) < 0) {
				rc = -1;
				goto out;
			}
			res[i].ops += m.ops;
			res[i].errors += m.errors;
			if (m.t1_ns > 0) {
				if (m.t0_ns < t0)
					t0 = m.t0_ns;
				if (m.t1_ns > t1)
					t1 = m.t1_ns;
			}
		}
		if (io && server_io(&io1) == 0 && res[i].ops)
			fprintf(O.json ? stderr : stdout, "# durable, mcache: %.0f bytes written per op by "
			        "mcached (write_bytes), %.0f passed to write(2) (wchar)\n",
			        (double)(io1.write_bytes - io0.write_bytes) / (double)res[i].ops,
			        (double)(io1.wchar - io0.wchar) / (double)res[i].ops);
		if (steps[i].ph == PH_UNLINK || steps[i].ph == PH_RMTREE) {
			FILE *wf = O.json ? stderr : stdout;
			bool rt = steps[i].ph == PH_RMTREE;
			fprintf(wf, "# %s, %s, %u clients%s:\n", rt ? "rmtree" : "unlink",
			        tkind_names[steps[i].tk], nkids,
			        steps[i].tk == T_MC && O.batch && !rt ? ", batched" : "");
			if (steps[i].tk == T_MC)
				sampler_report(smp, wf, "cache", mark, rt);
			/* mc_rmtree is one call: its rate comes from the server */
			if (!(rt && steps[i].tk == T_MC))
				win_report(wf, i, nkids, "rate");
		}
		if (t1 > t0)
			res[i].secs = (double)(t1 - t0) / 1e9;
		if (res[i].errors)
			rc = -1;
		res[i].valid = res[i].errors == 0 && res[i].ops > 0 && res[i].secs > 0;
		res[i].rate = res[i].valid ? (double)res[i].ops / res[i].secs : 0;
		if ((int)i == mem_step) {
			mem_snapshot(pc, &after);
			if (before.ok && after.ok && res[i].errors == 0 && res[i].ops) {
				mem->valid = true;
				mem->created = res[i].ops;
				mem->d_bytes = after.bytes - before.bytes;
				mem->d_pos = after.pos - before.pos;
				mem->d_inodes = after.inodes - before.inodes;
			}
		}
	}
	sampler_stop(smp, O.json ? stderr : stdout, "cache over the whole run");
	smp = NULL;
	if (pc && start.ok) {
		struct memsnap end;
		mem_snapshot(pc, &end);
		if (end.ok)
			fprintf(O.json ? stderr : stdout, "# cache bytes: %.0f before the run, %.0f after "
			        "its trees are gone (%+.2f%%); negatives %.0f before, %.0f after\n",
			        start.bytes, end.bytes, 100.0 * (end.bytes - start.bytes) / start.bytes,
			        neg_start, cache_negatives(pc));
	}
	for (k = 0; k < nkids; k++) {
		if (recv_msg(k, MSG_DONE, &m) < 0) {
			rc = -1;
			goto out;
		}
		if (m.errors)
			rc = -1;
	}
	for (k = 0; k < nkids; k++) {
		int status;
		if (waitpid(kids[k], &status, 0) == kids[k]) {
			kids[k] = 0;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "mcbench: client %u exited abnormally\n", k);
				rc = -1;
			}
		}
	}
out:
	sampler_stop(smp, stderr, NULL);
	mc_disconnect(pc);
	kids_kill();
	for (k = 0; k < O.clients; k++) {
		if (ups[k] > 0)
			close(ups[k]);
		if (gos[k] > 0)
			close(gos[k]);
		ups[k] = gos[k] = 0;
	}
	if (lmdb_dir[0] && scratch_remove(lmdb_dir) < 0)
		rc = -1;
	return rc;
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
"            [--count N] [--name-len L] [--lmdb-dir DIR] [--kernel-only]\n"
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

static void steps_make(void)
{
	unsigned p;

	nsteps = 0;
	for (p = 0; p < O.norder && !O.kernel_only; p++)
		if (O.order[p] != PH_LMDB)
			steps[nsteps++] = (struct step){ O.order[p], T_MC };
	for (p = 0; p < O.norder; p++)
		if (O.order[p] != PH_LMDB && O.order[p] != PH_DURABLE)
			steps[nsteps++] = (struct step){ O.order[p], T_KERNEL };
	if (O.phase_on[PH_LMDB] || O.phase_on[PH_DURABLE])
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

static int parse_args(int argc, char **argv)
{
	enum { OPT_KDIR = 256, OPT_PHASES, OPT_BATCH, OPT_REPEAT, OPT_JSON, OPT_NAMELEN,
	       OPT_COUNT, OPT_LMDB, OPT_MCACHED, OPT_KONLY, OPT_THREADS, OPT_EXTENTS,
	       OPT_CALLGRIND, OPT_SCALE };
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
			if (parse_ulong(optarg, lo, hi, &v) < 0) {
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

int main(int argc, char **argv)
{
	static struct result res[MAX_REPEAT][MAX_STEPS], sres[MAX_REPEAT][MAX_STEPS];
	static struct memfig mem[MAX_REPEAT], smem[MAX_REPEAT];
	struct row rows[PH_COUNT], srows[PH_COUNT];
	unsigned base_clients;
	unsigned r, done = 0;
	int rc, status = 0;

	rc = parse_args(argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	steps_make();
	run_id = getpid();
	signal(SIGPIPE, SIG_IGN);

	if (O.mcached && need_server() && server_start(O.mcached, &O.socket) < 0) {
		server_stop();
		return 1;
	}
	if (O.kdir) {
		if (!realpath(O.kdir, kroot)) {
			fprintf(stderr, "mcbench: --kdir %s: %s\n", O.kdir, strerror(errno));
			status = 2;
			goto out;
		}
	} else {
		snprintf(kroot, sizeof(kroot), "/dev/shm/mcbench.%ld", (long)run_id);
		if (mkdir(kroot, 0700) < 0) {
			fprintf(stderr, "mcbench: mkdir %s: %s\n", kroot, strerror(errno));
			status = 1;
			goto out;
		}
		kroot_owned = true;
	}
	if (O.lmdb_dir) {
		snprintf(lmdb_parent, sizeof(lmdb_parent), "%s", O.lmdb_dir);
	} else {
		const char *s = O.socket ? O.socket : getenv("MCACHE_SOCKET");
		const char *slash = s ? strrchr(s, '/') : NULL;
		if (slash && slash != s)
			snprintf(lmdb_parent, sizeof(lmdb_parent), "%.*s", (int)(slash - s), s);
		else if (slash)
			snprintf(lmdb_parent, sizeof(lmdb_parent), "/");
		else
			snprintf(lmdb_parent, sizeof(lmdb_parent), ".");
	}
	if (need_server()) {
		mc_client *c = mc_connect(O.socket);
		if (!c) {
			fprintf(stderr, "mcbench: cannot connect to mcached at %s: %s\n",
			        O.socket ? O.socket : getenv("MCACHE_SOCKET") ?
			        getenv("MCACHE_SOCKET") : "(library default)", strerror(errno));
			status = 1;
			goto out;
		}
		mc_disconnect(c);
	}
	if (O.extents) {
		status = extent_bench(O.extents, stdout) < 0;
		goto out;
	}
	if (O.rpc && !O.kernel_only && rpc_bench(stdout, O.socket, O.count, O.repeat) < 0)
		status = 1;
	base_clients = O.clients;
	for (r = 0; r < O.repeat && nsteps > 0; r++) {
		O.clients = base_clients;
		if (run_repeat(r, res[r], &mem[r]) < 0)
			status = 1;
		if (O.scale > 1) {
			/* Interleaved: both client counts see the same load. */
			O.clients = base_clients * O.scale;
			if (run_repeat(r, sres[r], &smem[r]) < 0)
				status = 1;
		}
		done++;
		fprintf(stderr, "mcbench: run %u of %u done\n", r + 1, O.repeat);
	}
	if (done > 0) {
		FILE *f = O.json ? stderr : stdout;

		O.clients = base_clients;
		rows_make(res, done, rows);
		print_table(f, rows, done, mem, done);
		if (O.scale > 1) {
			O.clients = base_clients * O.scale;
			rows_make(sres, done, srows);
			fputc('\n', f);
			print_table(f, srows, done, smem, done);
			print_scaling(f, rows, srows, base_clients, O.clients);
			O.clients = base_clients;
		}
		if (O.json)
			print_json(stdout, res, done, rows, mem);
	}
out:
	if (kroot_owned && rmdir(kroot) < 0)
		fprintf(stderr, "mcbench: rmdir %s: %s\n", kroot, strerror(errno));
	server_stop();
	return status;
}
