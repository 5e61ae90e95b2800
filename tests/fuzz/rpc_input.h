/* rpc_input.h - what fuzz-rpc.c generates and sends (rpc_input.c): a
 * deterministic generator, byte buffers, and sequences of frames (a hello
 * and a few requests of random ops, packed and perhaps damaged) with the
 * replies the protocol promises for each one left unchanged. */
#ifndef MC_TEST_RPC_INPUT_H
#define MC_TEST_RPC_INPUT_H

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
#define MAX_REQS          4        /* requests after the hello */

/* ---- deterministic generator ---------------------------------------------- */

struct rng {
	uint64_t s;
};

static inline uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rnd64(struct rng *r)
{
	return splitmix64(&r->s);
}

/* Uniform in [0, n), n > 0 (the bias is irrelevant here). */
static inline uint32_t rnd(struct rng *r, uint32_t n)
{
	return (uint32_t)(rnd64(r) % n);
}

static inline bool chance(struct rng *r, unsigned percent)
{
	return rnd(r, 100) < percent;
}

/* ---- byte buffers ------------------------------------------------------------ */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static inline void buf_reserve(struct buf *b, size_t extra)
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

static inline void buf_add(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static inline void buf_free(struct buf *b)
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

/* Append req to s and predict the server's answer (rpc_input.c). */
void seq_add(struct seq *s, const Mcache__Request *req, bool *ready);
/* A hello (usually good) and 1..MAX_REQS requests of random ops. */
void gen_seq(struct rng *r, struct seq *s);
/* Damage the bytes of s: 1..8 edits. */
void mutate(struct rng *r, struct seq *s);

#endif
