/* fuzz-ops.c - libFuzzer target for the request dispatcher (server/ops.c)
 * in process, over a real namespace: a shared-memory segment, an LMDB store
 * in a temporary directory and the committer, as mcached runs them.
 *
 * Input: one packed Request (proto/mcache.proto). Its ops run in order
 * through ops_exec() for one session whose credentials are chosen by the
 * request id (id % 3: root, uid 1000, uid 1001 with supplementary group
 * 1000), so one input is a sequence that builds a tree and changes it.
 *
 * State between inputs: every input starts from an empty root (mode 0755,
 * owned by root: the children of / are removed with OP_RMTREE after each
 * input); every OPS_RENEW inputs the whole server (segment, store,
 * committer) is built anew, so neither the store nor the segment grows
 * without bound.
 *
 * With $MCACHE_FUZZ_VERBOSE set, every op's code and error are printed (to
 * see what an input does: tests/fuzz/corpus/ops/gen-tree-mutate builds a
 * tree and changes it with every op succeeding).
 *
 * Invariants checked for every op:
 *   1. res.err is 0 or a positive errno below 4096;
 *   2. the result packs into a Response no larger than the frame limit the
 *      server uses (what the server would send);
 *   3. after a successful MKDIR, CREATE, SYMLINK or OPEN with O_CREAT, the
 *      path names an inode of the right type (lstat by root; stat for
 *      OPEN with O_CREAT, which follows a symlink: it exists); after a
 *      successful UNLINK, RMDIR or RMTREE it is gone (ENOENT); after a
 *      successful LINK, path2 exists, and after a RENAME too when nothing
 *      but the name moved under path2's walk: path2 holds no ".." and the
 *      input made no symlink (rename("/p", "/p/q/r") with /p/q -> / moves
 *      /p to /r, on Linux as here, and "/p/q/r" is then gone).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "config.h"
#include "frame.h"
#include "fuzz.h"
#include "mc_path.h"
#include "mcd.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"

#define OPS_RENEW      4096u          /* inputs between fresh servers */
#define OPS_MAX        256u           /* ops run per input */
#define OPS_SHM_SIZE   (8u << 20)
#define OPS_FRAME_MAX  (16u << 20)

static const struct cred creds[3] = {
	{ .uid = 0, .gid = 0 },
	{ .uid = 1000, .gid = 1000 },
	{ .uid = 1001, .gid = 1001, .ngroups = 1, .groups = { 1000 } },
};

static struct {
	char dir[256];
	struct mcd_config cfg;
	struct mcd m;
	bool up;
	bool verbose;
	unsigned inputs;
} fx;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void server_down(void)
{
	if (!fx.up)
		return;
	commit_stop(fx.m.commit);
	ns_free(fx.m.ns);
	shm_destroy(fx.m.shm);
	store_close(fx.m.store);
	config_free(&fx.cfg);
	nftw(fx.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	memset(&fx.m, 0, sizeof(fx.m));
	fx.up = false;
}

static void server_at_exit(void)
{
	server_down();
}

static void server_up(void)
{
	const char *base = getenv("TMPDIR");
	struct store_opts so = { .root_mode = 0755, .map_size = 64u << 20 };
	struct timespec ts;

	snprintf(fx.dir, sizeof(fx.dir), "%s/fuzz-ops-XXXXXX", base && *base ? base : "/tmp");
	fz_check(mkdtemp(fx.dir));
	config_defaults(&fx.cfg);
	fx.m.cfg = &fx.cfg;
	fz_check(store_open(fx.dir, &so, &fx.m.store) == 0);
	fz_check(shm_create(OPS_SHM_SIZE, &fx.m.shm) == 0);
	fz_check(ns_new(fx.m.shm, fx.m.store, NULL, &fx.m.ns) == 0);
	fz_check(commit_start(fx.m.ns, fx.m.store, 5, &fx.m.commit) == 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fx.m.start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	fx.up = true;
}

static void set_path(ProtobufCBinaryData *b, const char *p, size_t len)
{
	b->data = (uint8_t *)p;
	b->len = len;
}

/* Run op as s and release its result; res.err. */
static int run(struct session *s, const Mcache__Op *op)
{
	struct op_out out;
	ops_exec(s, op, &out);
	int err = out.res.err;
	op_out_release(&out);
	return err;
}

/* Empty the root and give it back its first mode and owner. */
static void root_reset(void)
{
	struct session *s = session_new(&fx.m, &creds[0]);
	Mcache__Op op = MCACHE__OP__INIT;
	struct op_out out;
	fz_check(s);

	op.code = MCACHE__OP_CODE__OP_CHMOD;
	set_path(&op.path, "/", 1);
	op.mode = 0755;
	fz_check(run(s, &op) == 0);
	op.code = MCACHE__OP_CODE__OP_CHOWN;
	op.uid = 0;
	op.gid = 0;
	fz_check(run(s, &op) == 0);

	mcache__op__init(&op);
	op.code = MCACHE__OP_CODE__OP_OPEN;
	set_path(&op.path, "/", 1);
	op.flags = O_RDONLY | O_DIRECTORY;
	ops_exec(s, &op, &out);
	fz_check(out.res.err == 0);
	uint64_t h = out.res.handle;
	op_out_release(&out);
	for (;;) {
		char names[64][MC_NAME_MAX + 2];
		size_t n = 0;

		mcache__op__init(&op);
		op.code = MCACHE__OP_CODE__OP_READDIR;
		op.handle = h;
		op.count = 64;
		ops_exec(s, &op, &out);
		fz_check(out.res.err == 0);
		for (size_t i = 0; i < out.res.n_entries && n < 64; i++) {
			const ProtobufCBinaryData *nm = &out.res.entries[i]->name;
			if ((nm->len == 1 && nm->data[0] == '.') ||
			    (nm->len == 2 && !memcmp(nm->data, "..", 2)))
				continue;
			fz_check(nm->len <= MC_NAME_MAX);
			names[n][0] = '/';
			memcpy(names[n] + 1, nm->data, nm->len);
			names[n][nm->len + 1] = 0;
			n++;
		}
		op_out_release(&out);
		if (n == 0)
			break;
		for (size_t i = 0; i < n; i++) {
			mcache__op__init(&op);
			op.code = MCACHE__OP_CODE__OP_RMTREE;
			set_path(&op.path, names[i], strlen(names[i]));
			fz_check(run(s, &op) == 0);
		}
	}
	session_free(s);
}

/* (l)stat by root: 0 and the mode, or the negative errno. */
static int stat_root(const ProtobufCBinaryData *p, bool follow, uint32_t *mode)
{
	ns_attr a;
	int rc = ns_stat(fx.m.ns, &creds[0], (const char *)p->data, p->len, follow, &a);
	if (rc == 0)
		*mode = a.mode;
	return rc;
}

static bool has_dotdot(const ProtobufCBinaryData *p)
{
	const char *s = (const char *)p->data, *end = s + p->len;
	struct mc_comp c;
	while (mc_path_next(&s, end, &c))
		if (mc_comp_type(c.name, c.len) == MC_LAST_DOTDOT)
			return true;
	return false;
}

/* Invariant 3: what a successful op promises about its paths. links: a
 * symlink was made earlier in this input. */
static void check_effect(const Mcache__Op *op, bool links)
{
	uint32_t mode = 0;
	int rc;

	switch (op->code) {
	case MCACHE__OP_CODE__OP_MKDIR:
		fz_check(stat_root(&op->path, false, &mode) == 0 && S_ISDIR(mode));
		break;
	case MCACHE__OP_CODE__OP_CREATE:
		fz_check(stat_root(&op->path, false, &mode) == 0 && S_ISREG(mode));
		break;
	case MCACHE__OP_CODE__OP_SYMLINK:
		fz_check(stat_root(&op->path, false, &mode) == 0 && S_ISLNK(mode));
		break;
	case MCACHE__OP_CODE__OP_OPEN:
		if (op->flags & O_CREAT)
			fz_check(stat_root(&op->path, true, &mode) == 0);
		break;
	case MCACHE__OP_CODE__OP_UNLINK:
	case MCACHE__OP_CODE__OP_RMDIR:
	case MCACHE__OP_CODE__OP_RMTREE:
		rc = stat_root(&op->path, false, &mode);
		fz_check(rc == -ENOENT);
		break;
	case MCACHE__OP_CODE__OP_RENAME:
		if (!links && !has_dotdot(&op->path2))
			fz_check(stat_root(&op->path2, false, &mode) == 0);
		break;
	case MCACHE__OP_CODE__OP_LINK:
		fz_check(stat_root(&op->path2, false, &mode) == 0);
		break;
	default:
		break;
	}
}

/* Invariant 2: the result packs as the server would send it. */
static void check_packs(uint64_t id, Mcache__Result *res)
{
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__Result *one[1] = { res };
	uint8_t *buf;
	size_t len;

	rsp.id = id;
	rsp.n_results = 1;
	rsp.results = one;
	fz_check(frame_pack_response(&rsp, OPS_FRAME_MAX, &buf, &len) == 0);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Mcache__Request *req = mcache__request__unpack(NULL, size, data);
	if (!req)
		return 0;
	if (!fx.up) {
		server_up();
		atexit(server_at_exit);
		fx.verbose = getenv("MCACHE_FUZZ_VERBOSE") != NULL;
	}
	struct session *s = session_new(&fx.m, &creds[req->id % 3]);
	fz_check(s);
	bool links = false;
	for (size_t i = 0; i < req->n_ops && i < OPS_MAX; i++) {
		const Mcache__Op *op = req->ops[i];
		struct op_out out;

		ops_exec(s, op, &out);
		fz_check(out.res.err >= 0 && out.res.err < 4096);
		check_packs(req->id, &out.res);
		int err = out.res.err;
		op_out_release(&out);
		if (fx.verbose)
			fprintf(stderr, "op %zu: code %d err %d\n", i, (int)op->code, err);
		if (err == 0)
			check_effect(op, links);
		links = links || (err == 0 && op->code == MCACHE__OP_CODE__OP_SYMLINK);
	}
	session_free(s);
	mcache__request__free_unpacked(req, NULL);
	if (++fx.inputs % OPS_RENEW == 0) {
		server_down();
		server_up();
	} else {
		root_reset();
	}
	return 0;
}
