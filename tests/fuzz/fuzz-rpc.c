/* fuzz-rpc.c - a bounded, seeded fuzz test of mcached's RPC surface: mutated
 * valid frames, random bytes, truncated frames and early disconnects over raw
 * connections, while the server must stay alive and keep serving a
 * well-behaved client, and finally stop cleanly on SIGTERM.
 *
 * Environment:
 *   MCACHE_FUZZ_SEED   the seed (decimal or 0x hex); default FUZZ_SEED
 *   MCACHE_FUZZ_ITERS  iterations; default FUZZ_ITERS (about 20 s on 2 cores)
 *   MCACHE_FUZZ_FIRST  first iteration to run (to replay a failing one: every
 *                      iteration draws from its own generator, seeded from
 *                      the seed and its number)
 *   MCACHE_FUZZ_DUMP   a directory: each connection's bytes are written there
 *                      as it-<iteration>-<connection>.bin before they are sent
 *   MCACHE_FUZZ_STATS  set: print the server's statistics at the end
 *
 * Every iteration is one of:
 *   mutated   a hello and 1..4 requests of 0..50 random ops (op codes valid
 *             and not, paths with NULs, slashes, dots and long components,
 *             random handles, cookies and counts), packed with protobuf-c,
 *             then bytes flipped, inserted or deleted, a length header
 *             rewritten or the stream cut; a quarter are sent unchanged and
 *             their replies checked against what the protocol promises
 *   random    random bytes, alone, after a valid header, or after a hello
 *   truncated valid frames cut short, connections closed before, during or
 *             right after sending (replies unread, commit waits pending),
 *             several at once
 *
 * Invariants checked:
 *   - whatever the server sends parses as Response frames of at most the
 *     frame limit; nothing follows a whole-request error, and the server
 *     closes after one;
 *   - an unchanged sequence gets exactly the replies the protocol specifies
 *     (hello reply, one Result per op, the request's id, errors for a missing
 *     or repeated hello, an empty or oversized frame), without hanging;
 *   - the server process stays alive (after every iteration);
 *   - every FUZZ_CHECK_EVERY iterations a fresh public-API client can
 *     mkdir/stat/rmdir and mc_server_stats returns a JSON object;
 *   - at the end SIGTERM stops the server with exit status 0 (no crash, no
 *     sanitizer report, no hang).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "harness.h"
#include "mcache.h"

#define MAX_FRAME         65536u
#define FUZZ_SEED         0x6d63616368650001ull
#define FUZZ_ITERS        12000u
#define FUZZ_CHECK_EVERY  100u
#define MAX_REQS          4        /* requests after the hello */
#define MAX_OPS           50
#define PATH_CAP          6144
#define CONN_DEADLINE_MS  10000    /* longest a checked exchange may take */
#define HEALTH_ALARM_S    30       /* a health check that takes longer: hang */

static struct mc_server srv;
static uint64_t fuzz_seed = FUZZ_SEED;
static unsigned fuzz_iters = FUZZ_ITERS;
static unsigned fuzz_first;
static const char *fuzz_dump;
static unsigned cur_iter, cur_conn;
static unsigned health_seq;
static bool server_ok;

/* Iteration counts per kind, for the summary. */
static unsigned n_mutated, n_checked, n_random, n_truncated, n_conns;
static unsigned long n_frames_rx;

/* ---- deterministic generator ---------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd64(struct rng *r)
{
	return splitmix64(&r->s);
}

/* Uniform in [0, n), n > 0 (the bias is irrelevant here). */
static uint32_t rnd(struct rng *r, uint32_t n)
{
	return (uint32_t)(rnd64(r) % n);
}

static bool chance(struct rng *r, unsigned percent)
{
	return rnd(r, 100) < percent;
}

static uint32_t rnd_u32(struct rng *r)
{
	static const uint32_t pick[] = {
		0, 1, 2, 0644, 0755, 0777, 07777, 040755, 0100644, 0120777,
		0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 4096, 65535,
	};

	if (chance(r, 60))
		return pick[rnd(r, sizeof(pick) / sizeof(pick[0]))];
	return (uint32_t)rnd64(r) >> rnd(r, 32);
}

static uint64_t rnd_u64(struct rng *r)
{
	static const uint64_t pick[] = {
		0, 1, 2, 3, 4, 5, 4096, 65536, 1ull << 31, 1ull << 32, INT64_MAX,
		(uint64_t)INT64_MAX + 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 40,
	};

	if (chance(r, 60))
		return pick[rnd(r, sizeof(pick) / sizeof(pick[0]))];
	return rnd64(r) >> rnd(r, 64);
}

/* ---- paths ------------------------------------------------------------------ */

static size_t put(uint8_t *out, size_t len, size_t cap, const void *s, size_t n)
{
	if (len + n > cap)
		n = cap - len;
	memcpy(out + len, s, n);
	return len + n;
}

static size_t put_fill(uint8_t *out, size_t len, size_t cap, uint8_t c, size_t n)
{
	if (len + n > cap)
		n = cap - len;
	memset(out + len, c, n);
	return len + n;
}

/* One path component. The names come mostly from a small set, so the
 * namespace stays bounded however long the test runs. */
static size_t gen_component(struct rng *r, uint8_t *out, size_t len, size_t cap)
{
	static const char *const names[] = { "a", "b", "c", "d", "e", "f" };
	static const uint8_t alpha[] = { 'a', 'b', '/', '.', 0, 0xff };
	uint32_t k = rnd(r, 100);

	if (k < 60) {
		const char *n = names[rnd(r, sizeof(names) / sizeof(names[0]))];
		return put(out, len, cap, n, strlen(n));
	}
	if (k < 72)
		return put(out, len, cap, chance(r, 50) ? "." : "..", chance(r, 50) ? 1 : 2);
	if (k < 80) {
		static const size_t lens[] = { 254, 255, 256, 300, 1000 };
		return put_fill(out, len, cap, chance(r, 50) ? 'x' : 'y',
		                lens[rnd(r, sizeof(lens) / sizeof(lens[0]))]);
	}
	if (k < 86) {
		const char nul[] = { 'a', 0, 'b' };
		return put(out, len, cap, nul, chance(r, 50) ? sizeof(nul) : 1 + rnd(r, 2));
	}
	if (k < 96) {
		size_t n = 1 + rnd(r, 6);
		for (size_t i = 0; i < n && len < cap; i++)
			out[len++] = alpha[rnd(r, sizeof(alpha))];
		return len;
	}
	return len;  /* empty: a doubled slash */
}

/* A path of up to cap bytes into out; returns its length. */
static size_t gen_path(struct rng *r, uint8_t *out, size_t cap)
{
	uint32_t k = rnd(r, 100);
	size_t len = 0;

	if (k < 3)
		return 0;
	if (k < 6) {          /* longer than PATH_MAX, or right at it */
		size_t want = 4090 + rnd(r, 2000);
		if (want > cap)
			want = cap;
		while (len < want)
			len = put(out, len, want, chance(r, 90) ? "/a" : "/..", chance(r, 90) ? 2 : 3);
		return len;
	}
	if (k < 9) {          /* any bytes */
		size_t n = 1 + rnd(r, 64);
		for (; len < n; len++)
			out[len] = (uint8_t)rnd64(r);
		return len;
	}
	if (k < 55) {         /* an ordinary path of the small names */
		static const char *const names[] = { "a", "b", "c", "d", "e", "f" };
		size_t ncomp = 1 + rnd(r, 4);
		for (size_t i = 0; i < ncomp; i++) {
			const char *n = names[rnd(r, sizeof(names) / sizeof(names[0]))];
			len = put(out, len, cap, "/", 1);
			len = put(out, len, cap, n, strlen(n));
		}
		return len;
	}
	k = rnd(r, 100);
	if (k < 88)
		len = put(out, len, cap, "/", 1);
	else if (k < 94)
		len = put(out, len, cap, "//", 2);
	size_t ncomp = rnd(r, 6);
	for (size_t i = 0; i < ncomp; i++) {
		if (i > 0)
			len = put(out, len, cap, "//", chance(r, 90) ? 1 : 2);
		len = gen_component(r, out, len, cap);
	}
	if (chance(r, 8))
		len = put(out, len, cap, "/", 1);
	return len;
}

/* ---- requests --------------------------------------------------------------- */

static int32_t gen_code(struct rng *r)
{
	static const int32_t bad[] = { 25, 26, 31, 32, 100, 255, 256, 1000, -1, -25,
	                               INT32_MAX, INT32_MIN };
	uint32_t k = rnd(r, 100);

	if (k < 5)
		return MCACHE__OP_CODE__OP_NONE;
	if (k < 12)
		return bad[rnd(r, sizeof(bad) / sizeof(bad[0]))];
	int32_t c = 1 + (int32_t)rnd(r, 24);
	/* rmtree rarely, so that trees get deep enough to matter */
	if (c == MCACHE__OP_CODE__OP_RMTREE && !chance(r, 15))
		c = MCACHE__OP_CODE__OP_MKDIR;
	return c;
}

static uint32_t gen_flags(struct rng *r)
{
	static const uint32_t bits[] = { O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY, O_NOFOLLOW,
	                                 O_WRONLY, O_RDWR, O_APPEND, O_NONBLOCK, O_PATH };
	uint32_t f = 0;

	if (chance(r, 15))
		return rnd_u32(r);
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (chance(r, 20))
			f |= bits[i];
	return f;
}

static uint32_t gen_nsec(struct rng *r)
{
	static const uint32_t pick[] = { 0, 999999999, 1000000000, UTIME_NOW, UTIME_OMIT,
	                                 0xffffffff };

	if (chance(r, 50))
		return pick[rnd(r, sizeof(pick) / sizeof(pick[0]))];
	return rnd(r, 1000000000);
}

static bool code_takes_handle(int32_t c)
{
	return c == MCACHE__OP_CODE__OP_FSTAT || c == MCACHE__OP_CODE__OP_CLOSE ||
	       c == MCACHE__OP_CODE__OP_FTRUNCATE || c == MCACHE__OP_CODE__OP_READDIR ||
	       c == MCACHE__OP_CODE__OP_FSYNC;
}

static bool code_takes_path2(int32_t c)
{
	return c == MCACHE__OP_CODE__OP_RENAME || c == MCACHE__OP_CODE__OP_LINK ||
	       c == MCACHE__OP_CODE__OP_SYMLINK;
}

/* An op whose fields mostly suit its code (so that many succeed and reach
 * deeper code), with any field sometimes anything. */
static void gen_op(struct rng *r, Mcache__Op *op, uint8_t *pbuf, uint8_t *p2buf)
{
	int32_t c = gen_code(r);
	bool wild = chance(r, 15);

	mcache__op__init(op);
	op->code = (Mcache__OpCode)c;
	if (wild ? chance(r, 50) : !code_takes_handle(c) || chance(r, 5)) {
		op->path.len = gen_path(r, pbuf, PATH_CAP);
		op->path.data = pbuf;
	}
	if (wild ? chance(r, 50) : code_takes_path2(c) ? chance(r, 95) : chance(r, 5)) {
		op->path2.len = gen_path(r, p2buf, PATH_CAP);
		op->path2.data = p2buf;
	}
	if (chance(r, 70))
		op->mode = chance(r, 60) ? 0644 | (chance(r, 50) ? 0111 : 0) : rnd_u32(r);
	if (c == MCACHE__OP_CODE__OP_OPEN ? chance(r, 95) : chance(r, 10))
		op->flags = gen_flags(r);
	if (c == MCACHE__OP_CODE__OP_CHOWN || chance(r, 10)) {
		op->uid = chance(r, 50) ? 0xffffffff : chance(r, 50) ? rnd(r, 3) : rnd_u32(r);
		op->gid = chance(r, 50) ? 0xffffffff : chance(r, 50) ? rnd(r, 3) : rnd_u32(r);
	}
	if (c == MCACHE__OP_CODE__OP_UTIMENS || chance(r, 10)) {
		op->atime_sec = chance(r, 50) ? (int64_t)rnd(r, 2000000000) : (int64_t)rnd_u64(r);
		op->atime_nsec = gen_nsec(r);
		op->mtime_sec = chance(r, 50) ? (int64_t)rnd(r, 2000000000) : (int64_t)rnd_u64(r);
		op->mtime_nsec = gen_nsec(r);
	}
	if (c == MCACHE__OP_CODE__OP_TRUNCATE || c == MCACHE__OP_CODE__OP_FTRUNCATE ||
	    chance(r, 10))
		op->size = chance(r, 50) ? rnd(r, 1u << 20) : rnd_u64(r);
	/* A handle id is its slot plus one: small ones name this session's
	 * open handles. */
	if (wild ? chance(r, 50) : code_takes_handle(c) || chance(r, 5))
		op->handle = chance(r, 50) ? 1 : chance(r, 70) ? rnd(r, 6) : rnd_u64(r);
	if (c == MCACHE__OP_CODE__OP_READDIR || chance(r, 10)) {
		op->cookie = chance(r, 60) ? 0 : rnd_u64(r);
		op->count = chance(r, 60) ? rnd(r, 100) : rnd_u32(r);
	}
}

static size_t gen_nops(struct rng *r)
{
	uint32_t k = rnd(r, 100);

	if (k < 8)
		return 0;
	if (k < 60)
		return 1 + rnd(r, 3);
	return 1 + rnd(r, MAX_OPS);
}

/* ---- byte buffers ------------------------------------------------------------ */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	assert_non_null(p);
	b->p = p;
	b->cap = cap;
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- sequences and what the protocol promises for them ------------------------ */

enum ex_kind { EX_HELLO, EX_RESULTS, EX_ERR };

struct expect {
	enum ex_kind kind;
	uint64_t id;
	size_t n;      /* EX_RESULTS: results */
	int err;       /* EX_ERR: the whole-request error */
};

#define MAX_FRAMES (MAX_REQS + 2)

struct seq {
	struct buf b;
	size_t nframes;
	size_t off[MAX_FRAMES];          /* where each frame's header starts */
	struct expect ex[MAX_FRAMES];    /* the replies, up to the first error */
	size_t nex;
	bool closes;                     /* the last expected reply is an error */
};

/* Append req to s and predict the server's answer, following conn.c's
 * states: HELLO until a good hello, then READY; any error ends it. */
static void seq_add(struct seq *s, const Mcache__Request *req, bool *ready)
{
	uint8_t *p;
	size_t len;

	assert_true(s->nframes < MAX_FRAMES);
	assert_int_equal(frame_pack_request(req, UINT32_MAX, &p, &len), 0);
	s->off[s->nframes++] = s->b.len;
	buf_add(&s->b, p, len);
	free(p);
	if (s->closes)
		return;

	struct expect *e = &s->ex[s->nex++];
	size_t plen = len - MC_FRAME_HDR;

	memset(e, 0, sizeof(*e));
	e->kind = EX_ERR;
	if (plen == 0) {
		e->err = EPROTO;             /* an all-default request packs to nothing */
	} else if (plen > MAX_FRAME) {
		e->err = EMSGSIZE;
	} else if (!*ready) {
		e->id = req->id;
		if (!req->hello) {
			e->err = EPROTO;
		} else if (req->hello->version != MC_PROTO_VERSION) {
			e->err = EPROTONOSUPPORT;
		} else {
			e->kind = EX_HELLO;
			*ready = true;
		}
	} else {
		e->id = req->id;
		if (req->hello) {
			e->err = EPROTO;
		} else {
			e->kind = EX_RESULTS;
			e->n = req->n_ops;
		}
	}
	if (e->kind == EX_ERR)
		s->closes = true;
}

/* A hello (usually good) and 1..MAX_REQS requests of random ops. */
static void gen_seq(struct rng *r, struct seq *s)
{
	static uint8_t pbufs[MAX_OPS][PATH_CAP], p2bufs[MAX_OPS][PATH_CAP];
	Mcache__Op ops[MAX_OPS];
	Mcache__Op *opp[MAX_OPS];
	Mcache__Hello hello;
	Mcache__Request req;
	bool ready = false;
	size_t nreq = 1 + rnd(r, MAX_REQS);
	uint32_t k = rnd(r, 100);

	memset(s, 0, sizeof(*s));
	/* The hello: good (most), with a bad version, or missing. */
	if (k < 94) {
		mcache__hello__init(&hello);
		hello.version = k < 88 ? MC_PROTO_VERSION : (chance(r, 50) ? 0 : rnd_u32(r));
		mcache__request__init(&req);
		req.id = chance(r, 50) ? 1 : rnd_u64(r);
		req.hello = &hello;
		seq_add(s, &req, &ready);
	}
	for (size_t i = 0; i < nreq; i++) {
		size_t n = gen_nops(r);

		mcache__request__init(&req);
		req.id = chance(r, 70) ? 2 + i : rnd_u64(r);
		for (size_t j = 0; j < n; j++) {
			gen_op(r, &ops[j], pbufs[j], p2bufs[j]);
			opp[j] = &ops[j];
		}
		if (n > 1 && chance(r, 40)) {
			/* Open something first, so that handle 1 is real. */
			static const char *const what[] = { "/", "/a", "/b", "/a/b" };
			const char *w = what[rnd(r, 4)];
			mcache__op__init(&ops[0]);
			ops[0].code = MCACHE__OP_CODE__OP_OPEN;
			ops[0].path.len = strlen(w);
			ops[0].path.data = (uint8_t *)w;
			ops[0].flags = chance(r, 50) ? O_RDONLY | O_DIRECTORY : O_CREAT | O_RDWR;
			ops[0].mode = 0644;
		}
		req.n_ops = n;
		req.ops = n ? opp : NULL;
		if (chance(r, 3)) {          /* a second hello, perhaps with ops */
			mcache__hello__init(&hello);
			hello.version = MC_PROTO_VERSION;
			req.hello = &hello;
		}
		seq_add(s, &req, &ready);
	}
}

/* Damage the bytes of s: 1..8 edits. */
static void mutate(struct rng *r, struct seq *s)
{
	struct buf *b = &s->b;
	size_t nedit = 1 + rnd(r, 8);

	for (size_t e = 0; e < nedit; e++) {
		uint32_t k = rnd(r, 100);

		if (b->len == 0) {
			uint8_t x = (uint8_t)rnd64(r);
			buf_add(b, &x, 1);
			continue;
		}
		if (k < 30) {                                /* flip a bit */
			b->p[rnd(r, (uint32_t)b->len)] ^= (uint8_t)(1u << rnd(r, 8));
		} else if (k < 45) {                         /* set a byte */
			static const uint8_t pick[] = { 0, 0x7f, 0x80, 0xff };
			b->p[rnd(r, (uint32_t)b->len)] =
				chance(r, 50) ? pick[rnd(r, 4)] : (uint8_t)rnd64(r);
		} else if (k < 60) {                         /* insert bytes */
			size_t at = rnd(r, (uint32_t)b->len + 1), n = 1 + rnd(r, 16);
			buf_reserve(b, n);
			memmove(b->p + at + n, b->p + at, b->len - at);
			for (size_t i = 0; i < n; i++)
				b->p[at + i] = (uint8_t)rnd64(r);
			b->len += n;
		} else if (k < 75) {                         /* delete bytes */
			size_t at = rnd(r, (uint32_t)b->len), n = 1 + rnd(r, 16);
			if (n > b->len - at)
				n = b->len - at;
			memmove(b->p + at, b->p + at + n, b->len - at - n);
			b->len -= n;
		} else if (k < 90) {                         /* rewrite a length header */
			size_t f = s->nframes ? rnd(r, (uint32_t)s->nframes) : 0;
			size_t at = s->nframes ? s->off[f] : 0;
			if (at + MC_FRAME_HDR > b->len)
				continue;
			uint32_t old = frame_get_len(b->p + at), v;
			switch (rnd(r, 7)) {
			case 0: v = 0; break;
			case 1: v = MAX_FRAME; break;
			case 2: v = MAX_FRAME + 1; break;
			case 3: v = UINT32_MAX; break;
			case 4: v = old + 1 + rnd(r, 8); break;
			case 5: v = old > 8 ? old - 1 - rnd(r, 8) : 1; break;
			default: v = (uint32_t)rnd64(r); break;
			}
			frame_put_len(b->p + at, v);
		} else if (k < 95) {                         /* duplicate a chunk */
			size_t at = rnd(r, (uint32_t)b->len), n = 1 + rnd(r, 64);
			if (n > b->len - at)
				n = b->len - at;
			buf_reserve(b, n);
			memmove(b->p + at + n, b->p + at, b->len - at);
			b->len += n;
		} else {                                     /* cut the stream */
			b->len = rnd(r, (uint32_t)b->len + 1);
		}
	}
}

/* ---- one connection ------------------------------------------------------------ */

enum after {
	AFTER_CLOSE,     /* close as soon as the bytes are sent, reading nothing */
	AFTER_SHUT,      /* shut down our side, read until EOF */
	AFTER_IDLE,      /* read until nothing comes for idle_ms, then close */
	AFTER_EXPECT,    /* read the expected replies (and EOF after an error) */
};

struct plan {
	const uint8_t *p;
	size_t len;          /* bytes to send (may be less than the sequence) */
	size_t chunk;        /* largest write; small ones split frames apart */
	enum after after;
	int idle_ms;
	bool shut;           /* AFTER_EXPECT: shut down our side after sending */
};

struct xfer {
	struct buf rx;
	bool eof;            /* the server closed */
	bool timed_out;      /* we stopped reading while it was still open */
	bool send_failed;    /* the server closed before taking everything */
	int fd;
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int raw_connect(void)
{
	int fd = harness_connect(srv.socket);
	if (fd < 0)
		fail_msg("seed %#" PRIx64 " iteration %u: connect: %s", fuzz_seed, cur_iter,
		         strerror(errno));
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	n_conns++;
	return fd;
}

static void dump(const uint8_t *p, size_t len)
{
	if (!fuzz_dump)
		return;
	char path[1024];
	snprintf(path, sizeof(path), "%s/it-%u-%u.bin", fuzz_dump, cur_iter, cur_conn);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(p, 1, len, f);
		fclose(f);
	}
}

/* Read what is there; close any descriptors passed with it (the segment and
 * client area after a hello). Returns false on EOF or a reset. */
static bool rx_some(struct xfer *x)
{
	for (;;) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(16 * sizeof(int))];
		} ctl;
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
		                     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };

		buf_reserve(&x->rx, 65536);
		iov.iov_base = x->rx.p + x->rx.len;
		iov.iov_len = x->rx.cap - x->rx.len;
		ssize_t n = recvmsg(x->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fds[16];
				memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
				for (size_t i = 0; i < nfd; i++)
					close(fds[i]);
			}
		}
		if (n <= 0) {
			x->eof = true;
			return false;
		}
		x->rx.len += (size_t)n;
	}
}

/* The complete frames in the received bytes; *partial set when bytes of an
 * incomplete one follow. Fails the test on a frame over the limit. */
static size_t rx_frames(const struct buf *rx, bool *partial)
{
	size_t off = 0, n = 0;

	while (rx->len - off >= MC_FRAME_HDR) {
		uint32_t len = frame_get_len(rx->p + off);
		if (len > MAX_FRAME)
			fail_msg("seed %#" PRIx64 " iteration %u: the server sent a %" PRIu32
			         "-byte frame (limit %u)", fuzz_seed, cur_iter, len, MAX_FRAME);
		if (rx->len - off - MC_FRAME_HDR < len)
			break;
		off += MC_FRAME_HDR + len;
		n++;
	}
	if (partial)
		*partial = off < rx->len;
	return n;
}

/* Whether the replies read so far end in a whole-request error. */
static bool rx_ends_in_error(const struct buf *rx)
{
	size_t off = 0, last = SIZE_MAX;

	while (rx->len - off >= MC_FRAME_HDR) {
		uint32_t len = frame_get_len(rx->p + off);
		if (rx->len - off - MC_FRAME_HDR < len)
			break;
		last = off;
		off += MC_FRAME_HDR + len;
	}
	if (last == SIZE_MAX)
		return false;
	Mcache__Response *rsp = mcache__response__unpack(
		NULL, frame_get_len(rx->p + last), rx->p + last + MC_FRAME_HDR);
	bool err = rsp && rsp->err != 0;
	mcache__response__free_unpacked(rsp, NULL);
	return err;
}

/* Send pl's bytes on a new connection and read as the plan says. Leaves the
 * socket open (x->fd) for the caller to close, unless AFTER_CLOSE. */
static void exchange(const struct plan *pl, const struct seq *s, struct xfer *x)
{
	size_t sent = 0;
	bool shut = false;
	long start = now_ms(), idle_since = start;

	memset(x, 0, sizeof(*x));
	x->fd = raw_connect();
	dump(pl->p, pl->len);
	for (;;) {
		bool to_send = sent < pl->len && !x->send_failed;

		if (!to_send && pl->after == AFTER_CLOSE)
			break;
		if (!to_send && !shut && (pl->after == AFTER_SHUT ||
		                          (pl->after == AFTER_EXPECT && pl->shut))) {
			shutdown(x->fd, SHUT_WR);
			shut = true;
		}
		if (!to_send && pl->after == AFTER_EXPECT && !x->eof && s) {
			/* Done once every expected reply is in (and, after an
			 * error, the EOF that must follow it). */
			if (rx_frames(&x->rx, NULL) >= s->nex && !s->closes)
				break;
		}
		if (x->eof && !to_send)
			break;

		struct pollfd pfd = { .fd = x->fd, .events = POLLIN };
		if (to_send)
			pfd.events |= POLLOUT;
		int timeout = 50;
		if (!to_send && pl->after == AFTER_IDLE)
			timeout = pl->idle_ms;
		int rc = poll(&pfd, 1, timeout);
		if (rc < 0 && errno == EINTR)
			continue;
		assert_true(rc >= 0);
		long now = now_ms();
		if (now - start > CONN_DEADLINE_MS) {
			x->timed_out = true;
			break;
		}
		if (rc == 0) {
			if (!to_send && pl->after == AFTER_IDLE && now - idle_since >= pl->idle_ms) {
				x->timed_out = true;
				break;
			}
			continue;
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			size_t before = x->rx.len;
			rx_some(x);
			if (x->rx.len != before)
				idle_since = now;
		}
		if ((pfd.revents & POLLOUT) && to_send && !x->eof) {
			size_t n = pl->len - sent;
			if (n > pl->chunk)
				n = pl->chunk;
			ssize_t w = send(x->fd, pl->p + sent, n, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				sent += (size_t)w;
				idle_since = now;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				x->send_failed = true;  /* EPIPE/ECONNRESET: it closed */
			}
		}
		if (x->eof && sent < pl->len)
			x->send_failed = true;
	}
	if (pl->after == AFTER_CLOSE) {
		close(x->fd);
		x->fd = -1;
	}
}

/* Check the replies against the protocol, and, for an unchanged sequence s,
 * against the replies it must get. */
static void check_replies(const struct xfer *x, const struct seq *s, bool stopped_early)
{
	size_t off = 0, i = 0;
	bool saw_err = false, partial;
	size_t nf = rx_frames(&x->rx, &partial);

	n_frames_rx += nf;
	if (partial && x->eof)
		fail_msg("seed %#" PRIx64 " iteration %u: the server closed in the middle of "
		         "a frame", fuzz_seed, cur_iter);
	for (i = 0; i < nf; i++) {
		uint32_t len = frame_get_len(x->rx.p + off);
		Mcache__Response *rsp =
			mcache__response__unpack(NULL, len, x->rx.p + off + MC_FRAME_HDR);

		off += MC_FRAME_HDR + len;
		if (!rsp)
			fail_msg("seed %#" PRIx64 " iteration %u: reply %zu does not parse",
			         fuzz_seed, cur_iter, i);
		if (saw_err)
			fail_msg("seed %#" PRIx64 " iteration %u: reply %zu follows a whole-request "
			         "error", fuzz_seed, cur_iter, i);
		if (rsp->err != 0) {
			saw_err = true;
			if (rsp->err < 0 || rsp->n_results != 0 || rsp->hello)
				fail_msg("seed %#" PRIx64 " iteration %u: bad error reply err=%d "
				         "n_results=%zu", fuzz_seed, cur_iter, rsp->err,
				         rsp->n_results);
		}
		for (size_t j = 0; j < rsp->n_results; j++)
			if (rsp->results[j]->err < 0 || rsp->results[j]->err > 4095)
				fail_msg("seed %#" PRIx64 " iteration %u: result err %d", fuzz_seed,
				         cur_iter, rsp->results[j]->err);
		if (s && i < s->nex) {
			const struct expect *e = &s->ex[i];
			bool ok;
			switch (e->kind) {
			case EX_HELLO:
				ok = rsp->err == 0 && rsp->hello && rsp->id == e->id &&
				     rsp->hello->version == MC_PROTO_VERSION && rsp->n_results == 0;
				break;
			case EX_RESULTS:
				ok = rsp->err == 0 && !rsp->hello && rsp->id == e->id &&
				     rsp->n_results == e->n;
				break;
			default:
				ok = rsp->err == e->err && rsp->id == e->id;
				break;
			}
			if (!ok)
				fail_msg("seed %#" PRIx64 " iteration %u: reply %zu: expected kind %d "
				         "id %" PRIu64 " n %zu err %d; got id %" PRIu64 " err %d "
				         "hello %d n_results %zu (\"%s\")", fuzz_seed, cur_iter, i,
				         (int)e->kind, e->id, e->n, e->err, rsp->id, rsp->err,
				         rsp->hello != NULL, rsp->n_results,
				         rsp->message ? rsp->message : "");
		} else if (s) {
			fail_msg("seed %#" PRIx64 " iteration %u: %zu replies, expected %zu",
			         fuzz_seed, cur_iter, nf, s->nex);
		}
		mcache__response__free_unpacked(rsp, NULL);
	}
	if (!s || stopped_early)
		return;
	if (nf < s->nex)
		fail_msg("seed %#" PRIx64 " iteration %u: %zu of %zu replies came (%s)",
		         fuzz_seed, cur_iter, nf, s->nex,
		         x->eof ? "then the server closed" : "then nothing: a hang");
	if (s->closes && !x->eof)
		fail_msg("seed %#" PRIx64 " iteration %u: the server did not close after a "
		         "whole-request error", fuzz_seed, cur_iter);
}

static void xfer_end(struct xfer *x)
{
	if (x->fd >= 0)
		close(x->fd);
	buf_free(&x->rx);
}

static size_t gen_chunk(struct rng *r)
{
	uint32_t k = rnd(r, 100);

	if (k < 5)
		return 1 + rnd(r, 7);
	if (k < 20)
		return 1 + rnd(r, 512);
	return SIZE_MAX;
}

/* ---- the iteration kinds -------------------------------------------------------- */

static void iter_mutated(struct rng *r)
{
	struct seq s;
	struct plan pl = { 0 };
	struct xfer x;
	bool checked = chance(r, 25);

	gen_seq(r, &s);
	if (!checked)
		mutate(r, &s);
	pl.p = s.b.p;
	pl.len = s.b.len;
	pl.chunk = gen_chunk(r);
	if (pl.chunk < 8 && pl.len > 4096)
		pl.chunk = 4096;       /* byte by byte only for small sequences */
	if (checked) {
		n_checked++;
		pl.after = AFTER_EXPECT;
		pl.shut = chance(r, 30);
	} else {
		n_mutated++;
		pl.after = chance(r, 50) ? AFTER_SHUT : AFTER_IDLE;
		pl.idle_ms = 5 + (int)rnd(r, 20);
	}
	exchange(&pl, checked ? &s : NULL, &x);
	if (x.timed_out && pl.after == AFTER_SHUT)
		fail_msg("seed %#" PRIx64 " iteration %u: the server did not close a half-closed "
		         "connection within %d ms", fuzz_seed, cur_iter, CONN_DEADLINE_MS);
	if (!x.eof && rx_ends_in_error(&x.rx) && pl.after != AFTER_IDLE)
		fail_msg("seed %#" PRIx64 " iteration %u: open after a whole-request error",
		         fuzz_seed, cur_iter);
	check_replies(&x, checked ? &s : NULL, false);
	xfer_end(&x);
	buf_free(&s.b);
}

static void iter_random(struct rng *r)
{
	struct seq s = { 0 };
	struct plan pl = { 0 };
	struct xfer x;
	uint32_t k = rnd(r, 100);
	size_t n = rnd(r, 100) < 70 ? rnd(r, 64) : rnd(r, 4096);

	n_random++;
	if (k >= 40) {       /* a good hello first, so the bytes meet a READY conn */
		Mcache__Hello hello = MCACHE__HELLO__INIT;
		Mcache__Request req = MCACHE__REQUEST__INIT;
		bool ready = false;
		hello.version = MC_PROTO_VERSION;
		req.id = 1;
		req.hello = &hello;
		seq_add(&s, &req, &ready);
	}
	if (k < 20 || (k >= 40 && k < 60)) {   /* a plausible header, random payload */
		uint8_t hdr[MC_FRAME_HDR];
		uint32_t len = (uint32_t)n;
		if (chance(r, 20))
			len = (uint32_t)rnd64(r);
		frame_put_len(hdr, len);
		buf_add(&s.b, hdr, sizeof(hdr));
	}
	buf_reserve(&s.b, n);
	for (size_t i = 0; i < n; i++)
		s.b.p[s.b.len++] = (uint8_t)rnd64(r);
	/* Sometimes random protobuf-looking fields: tag bytes of Request's
	 * fields (id, hello, ops) with random payloads. */
	if (chance(r, 20)) {
		static const uint8_t tags[] = { 0x08, 0x12, 0x1a, 0x0a, 0x22 };
		for (size_t i = 0; i < 1 + rnd(r, 20); i++) {
			uint8_t t = tags[rnd(r, sizeof(tags))];
			uint8_t l = (uint8_t)rnd(r, 130);
			buf_add(&s.b, &t, 1);
			buf_add(&s.b, &l, 1);
		}
	}
	pl.p = s.b.p;
	pl.len = s.b.len;
	pl.chunk = gen_chunk(r);
	pl.after = chance(r, 50) ? AFTER_SHUT : AFTER_IDLE;
	pl.idle_ms = 5 + (int)rnd(r, 20);
	exchange(&pl, NULL, &x);
	if (x.timed_out && pl.after == AFTER_SHUT)
		fail_msg("seed %#" PRIx64 " iteration %u: the server did not close a half-closed "
		         "connection within %d ms", fuzz_seed, cur_iter, CONN_DEADLINE_MS);
	check_replies(&x, NULL, false);
	xfer_end(&x);
	buf_free(&s.b);
}

static void iter_truncated(struct rng *r)
{
	size_t nconn = chance(r, 25) ? 2 + rnd(r, 3) : 1;
	struct seq s[4];
	struct xfer x[4];

	n_truncated++;
	assert_true(nconn <= 4);
	for (size_t c = 0; c < nconn; c++) {
		struct plan pl = { 0 };
		uint32_t k = rnd(r, 100);

		cur_conn = (unsigned)c;
		gen_seq(r, &s[c]);
		pl.p = s[c].b.p;
		pl.chunk = gen_chunk(r);
		if (k < 10) {
			pl.len = 0;                          /* connect and go */
		} else if (k < 40 && s[c].nframes > 0) { /* inside a frame's header */
			size_t f = rnd(r, (uint32_t)s[c].nframes);
			pl.len = s[c].off[f] + rnd(r, MC_FRAME_HDR);
		} else if (k < 80) {                     /* anywhere */
			pl.len = rnd(r, (uint32_t)s[c].b.len + 1);
		} else {                                 /* everything, then go */
			pl.len = s[c].b.len;
		}
		if (pl.len > s[c].b.len)
			pl.len = s[c].b.len;
		switch (rnd(r, 4)) {
		case 0:
		case 1:
			pl.after = AFTER_CLOSE;
			break;
		case 2:
			pl.after = AFTER_SHUT;
			break;
		default:
			pl.after = AFTER_IDLE;
			pl.idle_ms = 1 + (int)rnd(r, 10);
			break;
		}
		/* With several connections, keep the earlier ones open (unread)
		 * while the later ones run; they are closed below in an order
		 * of their own. */
		if (nconn > 1 && pl.after == AFTER_CLOSE) {
			pl.after = AFTER_IDLE;
			pl.idle_ms = 1;
		}
		exchange(&pl, NULL, &x[c]);
		if (x[c].timed_out && pl.after == AFTER_SHUT)
			fail_msg("seed %#" PRIx64 " iteration %u: the server did not close a "
			         "half-closed connection within %d ms", fuzz_seed, cur_iter,
			         CONN_DEADLINE_MS);
		check_replies(&x[c], NULL, true);
	}
	/* Close in a random order. */
	for (size_t left = nconn; left > 0; left--) {
		size_t c = rnd(r, (uint32_t)left);
		xfer_end(&x[c]);
		buf_free(&s[c].b);
		x[c] = x[left - 1];
		s[c] = s[left - 1];
	}
	cur_conn = 0;
}

/* ---- the well-behaved client ------------------------------------------------------ */

static void health_alarm(int sig)
{
	static const char msg[] = "fuzz-rpc: a health check hung (server not answering)\n";
	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(99);
}

static void print_log_tail(void)
{
	FILE *f = fopen(srv.log, "r");
	if (!f)
		return;
	char line[512];
	long pos;
	fseek(f, 0, SEEK_END);
	pos = ftell(f);
	fseek(f, pos > 8192 ? pos - 8192 : 0, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		print_message("# log: %s", line);
	fclose(f);
}

static void assert_alive(void)
{
	int st;
	pid_t p = waitpid(srv.pid, &st, WNOHANG);
	if (p == 0)
		return;
	server_ok = false;
	if (p == srv.pid)
		srv.pid = 0;
	print_log_tail();
	if (p == srv.pid || p > 0)
		fail_msg("seed %#" PRIx64 " iteration %u: mcached died: %s %d", fuzz_seed,
		         cur_iter, WIFSIGNALED(st) ? "signal" : "exit status",
		         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	fail_msg("waitpid: %s", strerror(errno));
}

static void assert_healthy(bool print_stats)
{
	assert_alive();
	signal(SIGALRM, health_alarm);
	alarm(HEALTH_ALARM_S);
	mc_client *c = mc_connect(srv.socket);
	if (!c)
		fail_msg("seed %#" PRIx64 " iteration %u: a well-behaved client cannot connect: %s",
		         fuzz_seed, cur_iter, strerror(errno));
	char p[64];
	struct stat sb;
	snprintf(p, sizeof(p), "/fuzz-healthy-%u", ++health_seq);
	if (mc_mkdir(c, p, 0755) != 0)
		fail_msg("seed %#" PRIx64 " iteration %u: mkdir %s: %s", fuzz_seed, cur_iter, p,
		         strerror(errno));
	if (mc_stat(c, p, &sb) != 0 || !S_ISDIR(sb.st_mode))
		fail_msg("seed %#" PRIx64 " iteration %u: stat %s: %s", fuzz_seed, cur_iter, p,
		         strerror(errno));
	if (mc_rmdir(c, p) != 0)
		fail_msg("seed %#" PRIx64 " iteration %u: rmdir %s: %s", fuzz_seed, cur_iter, p,
		         strerror(errno));
	assert_int_equal(mc_stat(c, p, &sb), -1);
	assert_int_equal(errno, ENOENT);
	char *js = mc_server_stats(c);
	if (!js)
		fail_msg("seed %#" PRIx64 " iteration %u: mc_server_stats: %s", fuzz_seed,
		         cur_iter, strerror(errno));
	size_t n = strlen(js);
	while (n > 0 && (js[n - 1] == '\n' || js[n - 1] == ' '))
		n--;
	if (n < 2 || js[0] != '{' || js[n - 1] != '}')
		fail_msg("seed %#" PRIx64 " iteration %u: stats are not a JSON object: %.80s",
		         fuzz_seed, cur_iter, js);
	if (print_stats)
		print_message("# stats: %s\n", js);
	free(js);
	mc_disconnect(c);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
}

/* ---- cases ------------------------------------------------------------------------- */

static int setup(void **state)
{
	static const char *const args[] = { "--max-frame", "65536", "--log-level", "warn", NULL };
	const char *e;

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	if ((e = getenv("MCACHE_FUZZ_SEED")) && *e)
		fuzz_seed = strtoull(e, NULL, 0);
	if ((e = getenv("MCACHE_FUZZ_ITERS")) && *e)
		fuzz_iters = (unsigned)strtoul(e, NULL, 0);
	if ((e = getenv("MCACHE_FUZZ_FIRST")) && *e)
		fuzz_first = (unsigned)strtoul(e, NULL, 0);
	if ((e = getenv("MCACHE_FUZZ_DUMP")) && *e)
		fuzz_dump = e;
	print_message("# seed %#" PRIx64 " (MCACHE_FUZZ_SEED), iterations %u..%u "
	              "(MCACHE_FUZZ_FIRST, MCACHE_FUZZ_ITERS)\n", fuzz_seed, fuzz_first,
	              fuzz_iters);
	if (server_start(&srv, args) != 0)
		return -1;
	server_ok = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	server_cleanup(&srv);
	return 0;
}

static void fuzz_rpc(void **state)
{
	(void)state;
	long t0 = now_ms();

	assert_true(server_ok);
	assert_healthy(false);
	for (unsigned i = fuzz_first; i < fuzz_iters; i++) {
		struct rng r = { fuzz_seed ^ ((uint64_t)i * 0xd1342543de82ef95ull) };
		uint32_t k;

		cur_iter = i;
		splitmix64(&r.s);
		k = rnd(&r, 100);
		if (k < 60)
			iter_mutated(&r);
		else if (k < 80)
			iter_random(&r);
		else
			iter_truncated(&r);
		assert_alive();
		if ((i + 1) % FUZZ_CHECK_EVERY == 0)
			assert_healthy(false);
	}
	cur_iter = fuzz_iters;
	assert_healthy(getenv("MCACHE_FUZZ_STATS") != NULL);
	print_message("# %u iterations in %.1f s: %u mutated, %u checked, %u random, "
	              "%u truncated; %u connections, %lu replies\n",
	              fuzz_iters - fuzz_first, (double)(now_ms() - t0) / 1000.0, n_mutated,
	              n_checked, n_random, n_truncated, n_conns, n_frames_rx);
}

static void clean_stop(void **state)
{
	(void)state;
	assert_true(server_ok);
	assert_alive();
	int st = server_stop(&srv, SIGTERM);
	if (st != 0) {
		print_log_tail();
		fail_msg("seed %#" PRIx64 ": SIGTERM: exit status %d (-1: did not exit in 15 s)",
		         fuzz_seed, st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fuzz_rpc),
		cmocka_unit_test(clean_stop),
	};
	return cmocka_run_group_tests_name("fuzz-rpc", tests, setup, teardown);
}
