/* batch.c - libmcache's batches: many operations queued locally, sent in one
 * request, answered with one result per operation.
 *
 * Invariants of an mc_batch (struct mc_batch in client_impl.h):
 *  1. ops[0..nops) are the queued operations; their path and path2 are
 *     copies in pbuf[0..plen), each NUL-terminated, re-pointed whenever
 *     pbuf moves; stats[i] is where op i's attr goes (NULL if none).
 *  2. packed is an upper bound of the bytes ops[0..nops) add to a Request
 *     frame, so queueing can refuse with E2BIG before the frame limit.
 *  3. errs[0..nerrs) are the results of the last run; the queue and the
 *     results are independent (queueing does not clear results).
 */
#include "client_impl.h"

#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* Frame header plus the Request's id field (tag + 10-byte varint). */
#define BATCH_BASE (MC_FRAME_HDR + 11u)
/* The most a queued op adds to a Request beyond its paths' bytes: its own
 * tag and length (1 + 5), and for each of its members code, path, path2
 * and mode (fields 1 to 4: one-byte tags) the tag and a varint of at
 * most 5 bytes (a code, a 32-bit mode, a length under 4 GiB). A bound,
 * not the size, which the packing computes: no sizing per op here. */
#define BATCH_OP_FIXED (6u + 4u * 6u)

/* Drop the queued ops (not the results). */
static void batch_clear(struct mc_batch *b)
{
	b->nops = 0;
	b->packed = 0;
	b->plen = 0;
}

void batch_free(struct mc_batch *b)
{
	client_unlink_batch(b);
	batch_clear(b);
	free(b->ops);
	free(b->stats);
	free(b->pbuf);
	free(b->errs);
	free(b);
}

mc_batch *mc_batch_new(mc_client *c)
{
	int err = client_check(c);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	struct mc_batch *b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	client_link_batch(c, b);
	return b;
}

void mc_batch_free(mc_batch *b)
{
	if (b)
		batch_free(b);
}

/* A path argument: 0 and *len, -EINVAL (a bad path) or -ENAMETOOLONG. */
static int batch_path(const char *path, size_t *len)
{
	int err = path_check(path, len);
	/* The header promises EINVAL for a bad path, ENAMETOOLONG for a long one. */
	return err == -ENAMETOOLONG ? err : err < 0 ? -EINVAL : 0;
}

/* Room for n more path bytes in pbuf, moving the queued ops' paths along
 * (invariant 1). 0 or -ENOMEM. */
static int batch_room(struct mc_batch *b, size_t n)
{
	if (b->pcap - b->plen >= n)
		return 0;
	size_t cap = b->pcap ? b->pcap : 4096;
	while (cap - b->plen < n)
		cap *= 2;
	char *nb = malloc(cap);
	if (!nb)
		return -ENOMEM;
	if (b->plen)
		memcpy(nb, b->pbuf, b->plen);
	for (size_t i = 0; i < b->nops; i++) {
		Mcache__Op *op = &b->ops[i];
		op->path.data = (uint8_t *)nb + ((char *)op->path.data - b->pbuf);
		if (op->path2.data)
			op->path2.data = (uint8_t *)nb + ((char *)op->path2.data - b->pbuf);
	}
	free(b->pbuf);
	b->pbuf = nb;
	b->pcap = cap;
	return 0;
}

/* Copy len bytes of path, NUL added, to pbuf (room made): its place. */
static uint8_t *batch_copy(struct mc_batch *b, const char *path, size_t len)
{
	char *at = b->pbuf + b->plen;
	memcpy(at, path, len);
	at[len] = '\0';
	b->plen += len + 1;
	return (uint8_t *)at;
}

/* Queue one op. Returns its index, or -1 with errno. */
static int batch_add(struct mc_batch *b, Mcache__OpCode code, const char *path,
                     const char *path2, mode_t mode, struct stat *st)
{
	static const Mcache__Op blank = MCACHE__OP__INIT;
	size_t len = 0, len2 = 0;
	int err;

	if (!b)
		return client_fail(-EINVAL);
	err = batch_path(path, &len);
	if (err == 0 && code == MCACHE__OP_CODE__OP_RENAME)
		err = batch_path(path2, &len2);
	if (err < 0)
		return client_fail(err);
	if (b->nops >= (size_t)INT32_MAX || (b->c->max_ops && b->nops >= b->c->max_ops))
		return client_fail(-E2BIG);

	/* The bound from the lengths: the op sets nothing but four members. */
	size_t sz = len + len2 + BATCH_OP_FIXED;
	if (BATCH_BASE + b->packed + sz > MC_FRAME_MAX)
		return client_fail(-E2BIG);

	if (b->nops == b->cap) {
		size_t n = b->cap ? b->cap * 2 : 16;
		Mcache__Op *ops = realloc(b->ops, n * sizeof(*ops));
		if (!ops)
			return client_fail(-ENOMEM);
		b->ops = ops;
		struct stat **stats = realloc(b->stats, n * sizeof(*stats));
		if (!stats)
			return client_fail(-ENOMEM);
		b->stats = stats;
		b->cap = n;
	}
	err = batch_room(b, len + 1 + (path2 ? len2 + 1 : 0));
	if (err < 0)
		return client_fail(err);
	/* Set up in its place: one copy of the blank op, four members. */
	Mcache__Op *op = &b->ops[b->nops];
	*op = blank;
	op->code = code;
	op->mode = (uint32_t)mode;
	op->path.len = len;
	op->path.data = batch_copy(b, path, len);
	if (path2) {
		op->path2.len = len2;
		op->path2.data = batch_copy(b, path2, len2);
	}
	b->stats[b->nops] = st;
	b->packed += sz;
	return (int)b->nops++;
}

int mc_batch_mkdir(mc_batch *b, const char *path, mode_t mode)
{
	return batch_add(b, MCACHE__OP_CODE__OP_MKDIR, path, NULL, mode, NULL);
}

int mc_batch_create(mc_batch *b, const char *path, mode_t mode)
{
	return batch_add(b, MCACHE__OP_CODE__OP_CREATE, path, NULL, mode, NULL);
}

int mc_batch_unlink(mc_batch *b, const char *path)
{
	return batch_add(b, MCACHE__OP_CODE__OP_UNLINK, path, NULL, 0, NULL);
}

int mc_batch_rmdir(mc_batch *b, const char *path)
{
	return batch_add(b, MCACHE__OP_CODE__OP_RMDIR, path, NULL, 0, NULL);
}

int mc_batch_rename(mc_batch *b, const char *oldpath, const char *newpath)
{
	return batch_add(b, MCACHE__OP_CODE__OP_RENAME, oldpath, newpath, 0, NULL);
}

int mc_batch_stat(mc_batch *b, const char *path, struct stat *st)
{
	if (b && !st)
		return client_fail(-EINVAL);
	return batch_add(b, MCACHE__OP_CODE__OP_STAT, path, NULL, 0, st);
}

/* Op i's result r: its errno, and its attr for a stat. */
static void batch_result(struct mc_batch *b, int *errs, size_t i, const Mcache__Result *r)
{
	errs[i] = r->err;
	if (r->err == 0 && b->stats[i]) {
		if (r->attr)
			attr_to_stat(r->attr, b->stats[i]);
		else
			errs[i] = EPROTO;
	}
}

/* Pipelining (client_call_pipelined): a batch of at least twice
 * BATCH_PIPE_MIN ops to send goes in two halves, or in chunks of
 * BATCH_PIPE_MAX when larger: one more request per batch is what the
 * overlap costs (a write, a wakeup and a read on each side), so as few
 * as overlap the work. A batch's op has a result under the
 * server's RESULT_SMALL (256 bytes), so 200 of them fit the smallest
 * reply limit a server takes (--max-reply 64K) and no op of a chunk is
 * ever answered EMSGSIZE, which would have to be sent again after a
 * later chunk ran. */
#define BATCH_PIPE_MIN 16u
#define BATCH_PIPE_MAX 200u

struct batch_take {
	struct mc_batch *b;
	int *errs;
	const size_t *sent;          /* sent[k]: the batch index of the k-th op sent */
};

/* The response of the k ops sent from off on: their errnos, or rsp. */
static void batch_take(void *arg, size_t off, size_t k, const int32_t *errs,
                       Mcache__Response *rsp)
{
	struct batch_take *t = arg;

	if (errs) {
		for (size_t j = 0; j < k; j++) {
			size_t i = t->sent[off + j];
			/* A stat answered without its attr: as batch_result. */
			t->errs[i] = errs[j] == 0 && t->b->stats[i] ? EPROTO : errs[j];
		}
		return;
	}
	for (size_t j = 0; j < rsp->n_results; j++)
		batch_result(t->b, t->errs, t->sent[off + j], rsp->results[j]);
	mcache__response__free_unpacked(rsp, NULL);
}

int mc_batch_run(mc_batch *b)
{
	Mcache__Op **ptrs = NULL;
	Mcache__Response *rsp = NULL;
	int *errs = NULL;
	int err;

	if (!b)
		return client_fail(-EINVAL);
	err = client_check(b->c);
	if (err < 0)
		return client_fail(err);
	/* The previous results are replaced whatever happens. */
	free(b->errs);
	b->errs = NULL;
	b->nerrs = 0;
	if (b->nops == 0)
		return 0;
	err = -ENOMEM;
	ptrs = malloc(b->nops * sizeof(*ptrs));
	errs = malloc(b->nops * sizeof(*errs));
	size_t *sent = malloc(b->nops * sizeof(*sent));
	if (!ptrs || !errs || !sent)
		goto fail;
	/* Stats before the batch's first mutation see nothing the batch does:
	 * answer them from shared memory when the cache can. The rest go to
	 * the server, in order. */
	size_t nsend = 0;
	bool mutated = false;
	for (size_t i = 0; i < b->nops; i++) {
		const Mcache__Op *op = &b->ops[i];
		if (op->code != MCACHE__OP_CODE__OP_STAT)
			mutated = true;
		else if (!mutated && client_local(b->c)) {
			int rc = client_view_result(b->c, view_stat(b->c->view, (const char *)op->path.data,
			                                            op->path.len, true, b->stats[i]));
			if (rc == -ENOTCONN) {
				err = rc;     /* the server is gone: a transport failure */
				goto fail;
			}
			if (rc <= 0) {
				errs[i] = -rc;
				continue;
			}
		}
		sent[nsend] = i;
		ptrs[nsend++] = &b->ops[i];
	}
	if (nsend >= 2 * BATCH_PIPE_MIN) {
		/* Large enough to pipeline: halves (BATCH_PIPE_MAX ops at
		 * most, their replies always fit), two in flight. */
		size_t chunk = (nsend + 1) / 2;
		if (chunk > BATCH_PIPE_MAX)
			chunk = BATCH_PIPE_MAX;
		struct batch_take t = { b, errs, sent };
		/* batch_add sets code, mode, path and path2 alone. */
		err = client_call_pipelined(b->c, ptrs, nsend, chunk, true, batch_take, &t);
		if (err < 0)
			goto fail;
		nsend = 0;               /* all answered */
	}
	/* The server runs a request's ops while their results fit its reply
	 * limit; the first that does not, and every later one, answer
	 * EMSGSIZE without running: send those again, from where it stopped
	 * (one that does not fit even alone keeps its EMSGSIZE). */
	for (size_t off = 0; off < nsend;) {
		size_t next = nsend;
		err = client_call(b->c, ptrs + off, nsend - off, &rsp);
		if (err < 0)
			goto fail;
		for (size_t k = 0; k < nsend - off; k++) {
			size_t i = sent[off + k];
			const Mcache__Result *r = rsp->results[k];
			batch_result(b, errs, i, r);
			if (r->err == EMSGSIZE && next == nsend)
				next = off + (k > 0 ? k : 1);
		}
		mcache__response__free_unpacked(rsp, NULL);
		off = next;
	}
	b->errs = errs;
	b->nerrs = b->nops;
	free(sent);
	free(ptrs);
	batch_clear(b);
	return 0;
fail:
	free(sent);
	free(ptrs);
	free(errs);
	/* Sent or not, the queue is spent: the caller re-queues what it wants. */
	batch_clear(b);
	return client_fail(err);
}

size_t mc_batch_count(const mc_batch *b)
{
	return b ? b->nerrs : 0;
}

int mc_batch_error(const mc_batch *b, size_t i)
{
	if (!b || i >= b->nerrs)
		return EINVAL;
	return b->errs[i];
}
