/* rpc_input.c - the inputs of the RPC fuzz test (fuzz-rpc.c, whose header
 * comment says what they are): random numbers that favour edge values,
 * path components and paths, op codes, flags and times, ops whose fields
 * mostly suit their code, sequences of requests packed as frames with the
 * replies the protocol promises for them (following conn.c's states), and
 * the damage done to the bytes of a sequence. */
#include "rpc_input.h"

#define MAX_OPS           50
#define PATH_CAP          6144

/* ---- numbers that favour edge values ---------------------------------------- */

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

/* Append req to s and predict the server's answer, following conn.c's
 * states: HELLO until a good hello, then READY; any error ends it. */
void seq_add(struct seq *s, const Mcache__Request *req, bool *ready)
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
void gen_seq(struct rng *r, struct seq *s)
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
void mutate(struct rng *r, struct seq *s)
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
