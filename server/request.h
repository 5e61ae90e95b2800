/* request.h - one request's ops run within the server's limits: the number
 * of ops checked on the wire before the request is unpacked, the ops run in
 * time slices, the reply kept under its size limit while they run, and the
 * reply packed. */
#ifndef MC_REQUEST_H
#define MC_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mcache.pb-c.h"
#include "stats.h"

struct session;
struct slowlog;

/* Read the id and count the ops (field 3) of the packed Request at p
 * without unpacking it, so a request with too many ops costs nothing.
 * 0 with *id and *nops set, or -EPROTO when the top level is malformed
 * (unpacking it would fail as well). */
int request_scan(const uint8_t *p, size_t len, uint64_t *id, size_t *nops);

struct request_reply {
	uint8_t *buf;          /* the framed reply (malloc'd; the caller frees) */
	size_t len;
	uint64_t wait_seq;     /* nonzero: hold the reply until it is durable */
	bool full;             /* the size limit was reached: later ops did not run */
};

/* One request's ops being run, in order, for one session. */
struct request_job;

/* A job for the packed Request p[0..len) (the frame's payload, which the
 * job does not keep): unpacked into the job's own arena, so that neither
 * this nor running and encoding it allocates per op. The reply will never
 * grow past max_reply bytes (frame header included). 0 with *out set,
 * -EPROTO (malformed), or -ENOMEM. */
int request_job_new(const uint8_t *p, size_t len, size_t max_reply, struct request_job **out);
/* The unpacked request, valid until request_job_free. */
const Mcache__Request *request_job_request(const struct request_job *j);
/* Record the job's ops whose service time reaches sl's threshold in sl,
 * as run by process pid of user uid (NULL sl: none; the default). */
void request_job_trace(struct request_job *j, struct slowlog *sl, pid_t pid, uid_t uid);
/* Run the job's next ops for session s until all have run (true) or
 * slice_us microseconds have passed (false: call again; at least one op
 * runs a call). An op runs only while its result can still fit: the first
 * op whose result does not fit (only a read can produce a large result; it
 * changed nothing) and every op after it are answered EMSGSIZE, and those
 * after it are not run at all. Mutations run only when their (small) result
 * is sure to fit, so nothing that ran goes unreported. Per-op counters and
 * latencies go to st. */
bool request_job_step(struct request_job *j, struct session *s, struct rpc_stats *st,
                      uint64_t slice_us);
/* Once every op has run: pack the reply into *out. 0, or -ENOMEM (ops have
 * run; the caller fails the connection, which the client sees as ENOTCONN:
 * outcome unknown). The job is unchanged; free it after. */
int request_job_finish(struct request_job *j, struct request_reply *out);
/* The request's id. */
uint64_t request_job_id(const struct request_job *j);
/* Free the job, its results and its request. NULL is a no-op. */
void request_job_free(struct request_job *j);

/* A framed reply of n results that all carry err (EIO after a failed
 * commit). 0 with *out and *len set, or -ENOMEM. */
int request_pack_all_err(uint64_t id, size_t n, int err, uint8_t **out, size_t *len);

#endif
