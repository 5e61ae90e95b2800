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
