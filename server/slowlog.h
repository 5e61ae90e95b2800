/* slowlog.h - the slow-operation log: the last operations whose service time
 * reached a threshold (Redis SLOWLOG), for `mcachectl slowlog`. */
#ifndef MC_SLOWLOG_H
#define MC_SLOWLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of an operation's path kept in an entry; longer paths are cut
 * (before a UTF-8 character the bound would split) and marked truncated. */
#define SLOWLOG_PATH_MAX 128
/* Largest --slowlog-max-len. */
#define SLOWLOG_LEN_MAX 100000u

struct slowlog;

/* Who ran a slow operation, and what. */
struct slowlog_op {
	unsigned code;          /* OpCode */
	const char *path;       /* not NUL-terminated; may be NULL */
	size_t path_len;
	uint64_t duration_us;
	pid_t pid;
	uid_t uid;
};

/* An empty log keeping the last max_len operations (0: none) that took
 * threshold_us or longer (0: every operation). 0 with *out set, -EINVAL
 * (max_len over SLOWLOG_LEN_MAX), or -ENOMEM. */
int slowlog_new(uint64_t threshold_us, unsigned max_len, struct slowlog **out);
/* Free the log. NULL is a no-op. */
void slowlog_free(struct slowlog *sl);
/* Change the settings (SIGHUP); a new max_len drops the entries recorded so
 * far, the same max_len keeps them. 0, -EINVAL or -ENOMEM (settings and
 * entries unchanged). Any thread. */
int slowlog_configure(struct slowlog *sl, uint64_t threshold_us, unsigned max_len);

/* The hot-path test, one relaxed load: is an operation that took
 * duration_us slow enough to record? False for a NULL log. */
static inline bool slowlog_wants(const struct slowlog *sl, uint64_t duration_us)
{
	/* First member of struct slowlog (slowlog.c asserts it). */
	return sl != NULL &&
	       duration_us >= atomic_load_explicit((const _Atomic uint64_t *)sl,
	                                           memory_order_relaxed);
}

/* Record op with the current wall-clock time, dropping the oldest entry
 * when full. Takes the log's mutex; call it only when slowlog_wants said
 * yes. Any thread. */
void slowlog_add(struct slowlog *sl, const struct slowlog_op *op);
/* Entries ever recorded (also those dropped since). */
uint64_t slowlog_total(struct slowlog *sl);

/* The newest n entries (all when n is 0), newest first, as a JSON array of
 * objects {"id", "time" (Unix seconds, with microseconds), "duration_seconds",
 * "op", "path", "path_truncated", "pid", "uid"} in a malloc'd
 * NUL-terminated string (*len bytes). A NULL log renders "[]".
 * 0 with *out and *len set, or -ENOMEM. */
int slowlog_render(struct slowlog *sl, unsigned n, char **out, size_t *len);

#endif
