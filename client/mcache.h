/* mcache.h - libmcache, the client library of the mcache metadata cache.
 *
 * A process connects to the local mcached with mc_connect() and then uses
 * POSIX-like calls on the server's namespace. Paths are absolute ("/a/b"),
 * at most 4096 bytes, with components of at most 255 bytes; "." and ".."
 * and repeated or trailing slashes are understood, symlinks are followed
 * (ELOOP after 40).
 *
 * Errors follow POSIX: a call that fails returns -1 (or NULL) and sets errno
 * to the value Linux gives on tmpfs for the same operation (ENOENT, EEXIST,
 * ENOTDIR, EISDIR, ENOTEMPTY, EINVAL, ENAMETOOLONG, ELOOP, EACCES, EPERM,
 * EBUSY, ...); after such an error the namespace is unchanged. Two errors
 * leave the outcome unknown: ENOTCONN (the connection broke, perhaps after
 * the server applied the call) and EIO from a call that waits for
 * durability when the commit failed (the change is applied and visible; the
 * server keeps retrying its commit). A mutation may fail with ENOSPC when
 * the server has no room: its shared-memory segment is full, or its journal
 * of changes not yet committed reached its bound (the store is failing or
 * cannot keep up) and no commit made room within the server's
 * --journal-wait-ms; the namespace is unchanged then. A call that looks up
 * a file another name of which was just removed may fail with EAGAIN when
 * the server could not commit that removal within two seconds (its store
 * is failing); the namespace is unchanged then. Besides those, any call
 * may fail with ENOTCONN (the connection to the server is gone; reconnect
 * with a new mc_connect()), ENOMEM, or EPROTO (the server sent something this
 * library does not understand).
 *
 * Modes given to mc_mkdir, mc_open and mc_creat are stored as given (no
 * umask is applied; apply the process's own if you want it).
 *
 * Permissions: the server checks every operation against the credentials of
 * the connecting process (taken from the socket at connect time), as Linux
 * does, including supplementary groups and sticky directories.
 *
 * Durability: a successful mutation is visible to every client at once; it
 * is durable after the server's next group commit (a few milliseconds), or
 * when mc_sync()/mc_fsync() returns, or at once if the server runs with
 * --sync.
 *
 * Threads: one mc_client may be shared by any number of threads, as with
 * libmemcached pools or a libcephfs mount. Calls that talk to the server
 * take the client's lock and wait for each other (one request in flight per
 * client: for parallel requests, use a client per thread); answers from
 * shared memory (cached mc_stat, mc_lstat, mc_readlink, mc_fstat, local
 * listings) take no lock and run in parallel. An MC_DIR or an mc_batch is
 * used by one thread at a time, like a DIR of readdir(3); different ones
 * may be used at once. mc_disconnect() must not race with other calls on
 * the same client.
 *
 * A dead server: the server rewrites a heartbeat in the shared segment
 * every 100 ms. A client whose server was killed (kill -9, a crash) stops
 * answering from the dead server's memory within MC_LIVENESS_BOUND_MS of
 * the death: after that every call fails with ENOTCONN. Until then a
 * cached answer may be one the dead server gave (a restarted server may
 * already have changed it). A server stopped cleanly is noticed at once.
 *
 * Security: a client can only skew eviction order and its own statistics
 * (see SECURITY.md); the server and other clients never trust what it writes.
 *
 * fork(): a child must not use its parent's mc_client. The library notices
 * (a pthread_atfork child handler bumps a fork generation that every call
 * compares, so no system call is spent on it) and every call in the child
 * fails with ECHILD, MC_DIR and batch calls included; the child calls
 * mc_disconnect() on it (which then only frees memory and closes its copy of
 * the socket, sending nothing) and connects anew.
 */
#ifndef MCACHE_H
#define MCACHE_H

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MC_EXPORT __attribute__((visibility("default")))
#else
#define MC_EXPORT
#endif

typedef struct mc_client mc_client;
typedef struct mc_dir MC_DIR;
typedef struct mc_batch mc_batch;

/* After a server dies, its clients answer from its memory for at most this
 * long (milliseconds); see "A dead server" above. */
#define MC_LIVENESS_BOUND_MS 500u
/* How long mc_connect() waits for the server by default (milliseconds). */
#define MC_CONNECT_TIMEOUT_MS 5000u

/* Connect to mcached. socket_path NULL: $MCACHE_SOCKET if set, else the
 * build's default (/run/mcache/mcached.sock). Connecting and the handshake
 * take at most $MCACHE_CONNECT_TIMEOUT_MS milliseconds (1..3600000; unset or
 * invalid: MC_CONNECT_TIMEOUT_MS). Returns a new client (free with
 * mc_disconnect()), or NULL with errno: ENOENT/ECONNREFUSED (no server),
 * ETIMEDOUT (the server did not accept or answer in time: its listen
 * backlog is full, or it is stopped or hung), EACCES (socket permissions),
 * EPROTO (server speaks another protocol or segment version, or sent a
 * segment that does not check out), ENOTCONN (the server closed
 * the connection during the handshake, e.g. too many clients),
 * ENAMETOOLONG (path too long for a unix socket), EMFILE/ENFILE, ENOMEM. */
MC_EXPORT mc_client *mc_connect(const char *socket_path);

/* Close the connection and free the client, its open descriptors, open
 * directories and batches. NULL is a no-op. */
MC_EXPORT void mc_disconnect(mc_client *c);

/* mkdir(2). EEXIST, ENOENT (a parent missing), ENOTDIR, EACCES, ENAMETOOLONG. */
MC_EXPORT int mc_mkdir(mc_client *c, const char *path, mode_t mode);
/* mknod(2): a FIFO (S_IFIFO), socket (S_IFSOCK), character or block
 * device (S_IFCHR, S_IFBLK, with its number rdev, which mc_stat gives back
 * as st_rdev) or regular file (S_IFREG or type 0), as metadata only; mode
 * is stored as given. EPERM (a device made by other than root, or type
 * S_IFDIR), EINVAL (another type), EEXIST, ENOENT, ENOTDIR, EACCES. */
MC_EXPORT int mc_mknod(mc_client *c, const char *path, mode_t mode, dev_t rdev);
/* rmdir(2). ENOTEMPTY, ENOTDIR, EBUSY (the root), EINVAL (last component "."). */
MC_EXPORT int mc_rmdir(mc_client *c, const char *path);

/* open(2) for metadata: flags O_RDONLY/O_WRONLY/O_RDWR with O_CREAT, O_EXCL,
 * O_TRUNC, O_DIRECTORY, O_NOFOLLOW. Returns a descriptor >= 0 private to this
 * client (not a kernel fd) for mc_fstat/mc_ftruncate/mc_fsync/mc_close; the
 * file stays reachable through it after it is unlinked, as on Linux.
 * EEXIST (O_CREAT|O_EXCL), EISDIR (writing a directory), ENOTDIR
 * (O_DIRECTORY), ELOOP (O_NOFOLLOW on a symlink), EMFILE (too many open). */
MC_EXPORT int mc_open(mc_client *c, const char *path, int flags, mode_t mode);
/* mc_open(c, path, O_CREAT | O_WRONLY | O_TRUNC, mode). */
MC_EXPORT int mc_creat(mc_client *c, const char *path, mode_t mode);
/* Release a descriptor. EBADF if it is not open. As with close(2), the
 * descriptor is released even when the call fails otherwise. It costs no
 * round trip: the server is told with this client's next request (or
 * when 64 closes are waiting), so an unlinked file's inode may stay cached
 * until then. */
MC_EXPORT int mc_close(mc_client *c, int fd);

/* unlink(2). EISDIR (a directory), ENOENT, EACCES/EPERM (sticky). */
MC_EXPORT int mc_unlink(mc_client *c, const char *path);
/* rename(2): atomic; replaces a file, or an empty directory with a directory.
 * EINVAL (a directory into its own subtree), ENOTEMPTY, EISDIR, ENOTDIR,
 * EBUSY (the root). */
MC_EXPORT int mc_rename(mc_client *c, const char *oldpath, const char *newpath);
/* link(2). EPERM (a directory), EEXIST. */
MC_EXPORT int mc_link(mc_client *c, const char *oldpath, const char *newpath);
/* symlink(2). target is stored as given (1..4095 bytes). */
MC_EXPORT int mc_symlink(mc_client *c, const char *target, const char *linkpath);
/* readlink(2): copies at most size bytes, no terminating NUL; returns the
 * number of bytes copied. EINVAL (not a symlink, or size 0), EFAULT (buf
 * NULL). */
MC_EXPORT ssize_t mc_readlink(mc_client *c, const char *path, char *buf, size_t size);

/* stat(2), lstat(2), fstat(2). st_dev is 0, st_blksize 4096, st_blocks 0. */
MC_EXPORT int mc_stat(mc_client *c, const char *path, struct stat *st);
MC_EXPORT int mc_lstat(mc_client *c, const char *path, struct stat *st);
MC_EXPORT int mc_fstat(mc_client *c, int fd, struct stat *st);

/* chmod(2), chown(2) ((uid_t)-1 / (gid_t)-1 leave a field), utimensat(2)
 * with UTIME_NOW and UTIME_OMIT (times NULL: both now). EPERM when not the
 * owner. chmod and chown follow symlinks. Times are kept to the nanosecond
 * from 1697-10-17 to 2242-03-16 UTC; a time outside is clamped to that
 * range, as Linux clamps to a file system's range. */
MC_EXPORT int mc_chmod(mc_client *c, const char *path, mode_t mode);
MC_EXPORT int mc_chown(mc_client *c, const char *path, uid_t uid, gid_t gid);
MC_EXPORT int mc_utimens(mc_client *c, const char *path, const struct timespec times[2]);
/* lchown(2) and utimensat(2) with AT_SYMLINK_NOFOLLOW: as mc_chown and
 * mc_utimens, on a symlink itself rather than its target. */
MC_EXPORT int mc_lchown(mc_client *c, const char *path, uid_t uid, gid_t gid);
MC_EXPORT int mc_lutimens(mc_client *c, const char *path, const struct timespec times[2]);
/* truncate(2), ftruncate(2): set the size. EISDIR, EINVAL (negative, checked
 * before sending). */
MC_EXPORT int mc_truncate(mc_client *c, const char *path, off_t length);
MC_EXPORT int mc_ftruncate(mc_client *c, int fd, off_t length);

/* opendir(3)/readdir(3)/closedir(3). Entries carry d_ino, d_type and d_name;
 * "." and ".." are not listed. An entry present for the whole listing is
 * returned exactly once even while others are created or removed. The
 * struct dirent returned is valid until the next mc_readdir or mc_closedir on
 * the same MC_DIR. readdir returns NULL at the end (errno unchanged) or on
 * error (errno set). opendir: ENOENT, ENOTDIR, EACCES. closedir frees the
 * MC_DIR whatever it returns. */
MC_EXPORT MC_DIR *mc_opendir(mc_client *c, const char *path);
MC_EXPORT struct dirent *mc_readdir(MC_DIR *dir);
MC_EXPORT int mc_closedir(MC_DIR *dir);

/* Wait until every mutation acknowledged to any client so far is durable.
 * EIO: a commit failed first (for example, the server's data directory is
 * full); the changes stay applied and visible and the server keeps retrying
 * the commit, so a later mc_sync may succeed. The answer comes after one
 * commit attempt, not when the store recovers. mc_fsync: also EBADF. */
MC_EXPORT int mc_fsync(mc_client *c, int fd);
MC_EXPORT int mc_sync(mc_client *c);

/* Remove path and everything below it, on the server, in bounded batches
 * (rm -rf in one call). ENOENT if path is absent; a file is unlinked. */
MC_EXPORT int mc_rmtree(mc_client *c, const char *path);

/* The server's statistics as a JSON document (the same as GET /stats).
 * Returns a malloc'd NUL-terminated string the caller frees, or NULL. */
MC_EXPORT char *mc_server_stats(mc_client *c);

/* The server's connected clients, oldest first, as a JSON array of
 * objects: "pid", "uid", "gid" (the peer's credentials at connect),
 * "requests" (received so far), "connected" (Unix time, seconds) and
 * "age_seconds". Returns a malloc'd NUL-terminated string the caller
 * frees, or NULL with errno: ENOTCONN, ENOMEM, EMSGSIZE (the list is larger
 * than the server's --max-reply), EOPNOTSUPP (a server without it). */
MC_EXPORT char *mc_server_clients(mc_client *c);
/* The server's slow-operation log: its newest n entries (0: all it keeps,
 * --slowlog-max-len), newest first, as a JSON array of objects: "id"
 * (entries ever logged, counting from 1), "time" (Unix time the op ended,
 * seconds), "duration_seconds" (service time on the server, not the wait
 * for durability), "op" ("mkdir"...), "path" (at most its first 128
 * bytes, cut between UTF-8 characters; "path_truncated" says when cut),
 * "pid" and "uid" of the client. An op enters it when its service time
 * reaches --slowlog-threshold-ms. Returns
 * a malloc'd NUL-terminated string the caller frees, or NULL with errno as
 * mc_server_clients. */
MC_EXPORT char *mc_server_slowlog(mc_client *c, unsigned n);
/* Run the server's consistency check (`mcachectl fsck`): the store
 * (every name's inode exists, link counts, no orphans, no cycles, extents
 * inside their files) and the cache against the store. Returns its report,
 * a JSON document {"clean": bool, "checked": {...}, "problems": [{"kind",
 * "ino", "name", "detail"}, ...], "dropped": n} (malloc'd, NUL-terminated;
 * the caller frees it); problems found are not an error. The cache is
 * compared in batches under the server's namespace lock: mutations may wait
 * for one batch. NULL and errno: EPERM (only root and the
 * server's own user may run it), ENOMEM, EAGAIN or EIO (the store could not
 * be read), ENOTCONN, ECHILD. */
MC_EXPORT char *mc_server_fsck(mc_client *c);
/* The server's commit log: every committed change with its batch sequence
 * number, as JSON lines, one record a line (fields in mcachectl(1), `log`).
 * Reads from record pos->rec of batch pos->seq ({0, 0}: from the oldest
 * batch kept) about max bytes of lines (0: 256 KiB; whole lines, at least
 * one), then moves *pos past what it returned. *first (may be NULL)
 * receives the oldest batch the server keeps (0: none; a later one than
 * asked for means the records between were dropped by retention), *eof
 * (may be NULL) 1 when every record committed so far was returned.
 * Returns a malloc'd NUL-terminated string the caller frees (empty when
 * there is nothing new), or NULL with errno: EACCES (the caller is neither
 * root nor the server's user), EIO (the server's store failed), and those
 * listed at the top of this header. */
struct mc_log_pos {
	uint64_t seq, rec;
};
MC_EXPORT char *mc_log_read(mc_client *c, struct mc_log_pos *pos, size_t max, uint64_t *first,
                            int *eof);

/* Act for other credentials, as a file server acts for its callers: every
 * later call made by this thread, on any client, has its permissions
 * checked against cred (uid, gid and ngroups supplementary groups) instead
 * of the connecting process's, on the server and in local answers alike;
 * NULL goes back to the connection's own. The server accepts this only on
 * a connection made by a process running as root: on any other, every
 * call made while it is set fails with EPERM (see SECURITY.md). Returns 0,
 * or -1 with EINVAL (more than 64 groups, or groups NULL with ngroups > 0). */
struct mc_cred {
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	const gid_t *groups;
};
MC_EXPORT int mc_cred_set(const struct mc_cred *cred);

/* Paths longer than PATH_MAX: by default every call taking a path answers
 * ENAMETOOLONG past 4095 bytes, as POSIX. A file server whose callers stand
 * deeper than that below its mount root (mcachefs) raises c's limit to max
 * bytes, NUL included (PATH_MAX to MC_LONG_PATH_MAX; PATH_MAX restores the
 * default): the path calls, mc_open and mc_opendir of c then take paths up
 * to max - 1 bytes, still walked from the root with every check. Symlink
 * targets and batches keep the POSIX limit. Set it before other threads
 * use c. EINVAL (max out of range), EFAULT (c NULL), ENOTCONN, ECHILD. */
#define MC_LONG_PATH_MAX 65536
MC_EXPORT int mc_path_max_set(mc_client *c, size_t max);

/* Batches: many operations, one result per operation, few round trips.
 * Queue operations with mc_batch_*(), send them with mc_batch_run(), then read
 * each result with mc_batch_error(). Operations run in order on the server;
 * one failing does not stop the others. A batch of 32 operations or more
 * goes as two requests or more, each written before the answer to the one
 * before is read, so that the library's work overlaps the server's; the
 * order is the same, and other calls on the client wait for the whole
 * batch. Queueing fails only with ENOMEM,
 * ENAMETOOLONG, EINVAL (bad path) or E2BIG (the batch would exceed the frame
 * limit, or hold more operations than the server takes in one request, its
 * --max-ops); it returns the index of the queued operation. A batch whose
 * results outgrow the server's reply limit (--max-reply) is sent on in
 * further requests from the first operation that did not run, in order. */
MC_EXPORT mc_batch *mc_batch_new(mc_client *c);
MC_EXPORT int mc_batch_mkdir(mc_batch *b, const char *path, mode_t mode);
MC_EXPORT int mc_batch_create(mc_batch *b, const char *path, mode_t mode); /* a regular file; EEXIST if present */
MC_EXPORT int mc_batch_unlink(mc_batch *b, const char *path);
MC_EXPORT int mc_batch_rmdir(mc_batch *b, const char *path);
MC_EXPORT int mc_batch_rename(mc_batch *b, const char *oldpath, const char *newpath);
/* st is filled when mc_batch_run() succeeds and the operation succeeded.
 * Stats queued before the batch's first mutation are answered from shared
 * memory when the cache holds the answer (they could not see the batch's
 * changes anyway); a batch of nothing but cached stats sends nothing. Such
 * a stat may have written st even when mc_batch_run() then fails. */
MC_EXPORT int mc_batch_stat(mc_batch *b, const char *path, struct stat *st);
/* Send every queued operation and wait for the results. Returns 0 when the
 * server answered (see mc_batch_error for each), -1 with errno on failure:
 * EINVAL (b is NULL), ECHILD (called in a forked child), ENOTCONN (the
 * connection failed or the server went away), EPROTO (a malformed answer),
 * ENOMEM, or E2BIG (a request over the frame limit). After ENOTCONN or
 * EPROTO the operations may or may not have run: those that did are the
 * first ones, in order. Either way the queue is then empty; results stay
 * until the next run, which replaces them. */
MC_EXPORT int mc_batch_run(mc_batch *b);
/* Number of operations in the last run. */
MC_EXPORT size_t mc_batch_count(const mc_batch *b);
/* The errno value of operation i of the last run (0 for success), or EINVAL
 * for an index out of range. */
MC_EXPORT int mc_batch_error(const mc_batch *b, size_t i);
MC_EXPORT void mc_batch_free(mc_batch *b);

/* Extent state: per file, non-overlapping byte ranges [start, end]
 * (inclusive) carrying 32 bits, as a file system keeps which parts of a file
 * are dirty, under writeback or locked. Bits 0..7 are these; bits 8..31 are
 * the application's. The state lives in the server's memory only (it is
 * not persistent) and is shared by every client; it is freed when the file
 * leaves the cache (mc_evict). Each call is one request on a descriptor
 * from mc_open of a regular file; any access mode will do. mc_range_test
 * and mc_range_find send none when the file has state: they read it from
 * shared memory, without a lock, and answer as the server would have at
 * one instant (a tree that keeps changing under them is asked of the
 * server).
 *
 * MC_RANGE_LOCKED is an exclusive range lock: setting it fails with EAGAIN
 * when any byte of the range is locked already, by anyone, this client
 * included (it does not nest). Only the client that took a lock clears it
 * (EPERM otherwise); a client's locks are released when its connection
 * ends, however it ends. Setting or clearing other bits over a locked range
 * is allowed. A call that fails changes nothing.
 *
 * Errors of all four: EBADF (fd not open), EISDIR (fd is a directory),
 * EINVAL (start > end, or bits 0; checked before sending), and those listed
 * at the top of this header. */
#define MC_RANGE_DIRTY     (1u << 0)
#define MC_RANGE_DELALLOC  (1u << 1)
#define MC_RANGE_LOCKED    (1u << 2)
#define MC_RANGE_WRITEBACK (1u << 3)
#define MC_RANGE_UPTODATE  (1u << 4)
/* Set bits over [start, end]. EAGAIN: bits has MC_RANGE_LOCKED and part of
 * the range is locked. ENOSPC: the server has no room for the records. */
MC_EXPORT int mc_range_set(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits);
/* Clear bits over [start, end]; parts without them are left alone. EPERM:
 * bits has MC_RANGE_LOCKED and another client locked part of the range.
 * ENOSPC: no room to split a range at an edge. */
MC_EXPORT int mc_range_clear(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits);
/* 1 when every byte of [start, end] carries every bit of bits (all != 0),
 * or some byte carries some bit of bits (all == 0); else 0. */
MC_EXPORT int mc_range_test(mc_client *c, int fd, uint64_t start, uint64_t end, uint32_t bits,
                            int all);
/* The first run of bytes at or after from that carry some bit of bits, as
 * [*start, *end] (the longest such run). ENOENT when there is none; EINVAL
 * also for NULL start or end. *start and *end are set only on success. */
MC_EXPORT int mc_range_find(mc_client *c, int fd, uint64_t from, uint32_t bits, uint64_t *start,
                            uint64_t *end);
/* Free the extent state of the file at path (symlinks followed) at once,
 * whatever its size: no work per range. EBUSY while any client has the
 * file open (its state and locks are in use), or while a change to it is
 * not committed yet (mc_sync first); the errors of mc_stat. */
MC_EXPORT int mc_evict(mc_client *c, const char *path);

/* Extent maps: per file, which logical byte ranges live where. An extent
 * maps [off, off + len) to phys (the location of off: off + k lives at
 * phys + k) with flags that are the application's. Extents never overlap;
 * setting one replaces what it overlaps (cutting extents at its edges),
 * punching cuts and removes. Maps are persistent: each change is journaled
 * and committed like any mutation (durable after the next group commit or
 * mc_fsync). Truncation drops what lies at or past the new size; removing
 * the file's last link drops its map. Calls take a descriptor from mc_open
 * of a regular file; set and punch need it open for writing.
 *
 * Errors of all three: EBADF (fd not open; for set and punch, not open for
 * writing), EISDIR (a directory), EINVAL (len 0; checked before sending),
 * and those listed at the top of this header; set and punch also ENOSPC. */
struct mc_extent {
	uint64_t off, len, phys;
	uint32_t flags;
};
/* Map [e->off, e->off + e->len) to e->phys. EINVAL also for e NULL or a
 * range past 2^64. */
MC_EXPORT int mc_extent_set(mc_client *c, int fd, const struct mc_extent *e);
/* Unmap [off, off + len) (to the end of the offset space when it passes
 * 2^64). */
MC_EXPORT int mc_extent_punch(mc_client *c, int fd, uint64_t off, uint64_t len);
/* The extents that overlap [off, off + len), whole and in order, into
 * out[0..max): the number stored (at most max and at most 8192 per call;
 * continue from the end of the last for more). A map the server has loaded
 * is read from shared memory, with no request and no lock; the first call
 * on a file (or after its eviction) loads it with one request. EINVAL also
 * for out NULL with max > 0. */
MC_EXPORT ssize_t mc_extent_map(mc_client *c, int fd, uint64_t off, uint64_t len,
                                struct mc_extent *out, size_t max);

/* Vector forms: the call over each element of an array, in order, with one
 * request for up to 4096 elements (or the server's max-ops, if lower), so a
 * long run of changes costs a round trip per 4096 rather than one each.
 * Each element succeeds or fails on its own, with the errors of the single
 * call (mc_range_set, mc_range_clear, mc_extent_set, mc_extent_punch; the
 * punch form reads off and len and ignores phys and flags); errs, when not
 * NULL, receives each element's errno (0: it took effect). Returns the
 * number of elements that failed (0: all took effect), or -1 with errno
 * when the call itself failed: EINVAL (array NULL with n > 0, n past
 * INT32_MAX, or any element invalid as for the single call; checked before
 * anything is sent), EBADF, ENOMEM, or those listed at the top of this
 * header, in which case the requests answered before took effect and errs
 * holds the errno for every element from the first request that failed on.
 * n == 0 does nothing and returns 0. */
struct mc_range {
	uint64_t start, end;      /* inclusive */
	uint32_t bits;
};
MC_EXPORT int mc_range_set_v(mc_client *c, int fd, const struct mc_range *r, size_t n,
                             int *errs);
MC_EXPORT int mc_range_clear_v(mc_client *c, int fd, const struct mc_range *r, size_t n,
                               int *errs);
MC_EXPORT int mc_extent_set_v(mc_client *c, int fd, const struct mc_extent *e, size_t n,
                              int *errs);
MC_EXPORT int mc_extent_punch_v(mc_client *c, int fd, const struct mc_extent *e, size_t n,
                                int *errs);

/* ---- watching (mcachefs) ---------------------------------------------------
 *
 * A file system that lets its kernel cache names and attributes (mcachefs)
 * opens a watch: mcached then tells it, for every change made by any other
 * client, which names (directory, name) and which inodes' attributes the
 * change made stale, and answers a library client's change only once every
 * watch acknowledged its events (or was dropped for not acknowledging
 * within a second). A mount's own connections are tagged with the watch's
 * id (mc_mount_tag): their changes are not sent to that watch (its kernel
 * made them) and are answered without waiting for other watches. Opening
 * a watch and tagging need root or the server's own user (EACCES). */
typedef struct mc_watch mc_watch;

#define MC_WATCH_ATTR  1   /* the attributes of inode ino changed (or it went) */
#define MC_WATCH_ENTRY 2   /* name in directory ino was made, removed or repointed */
struct mc_watch_event {
	int kind;                 /* MC_WATCH_ATTR, MC_WATCH_ENTRY */
	uint64_t ino;
	const char *name;         /* MC_WATCH_ENTRY: not NUL-terminated */
	size_t namelen;
};

/* Open a watch on the server at socket_path (as mc_connect). Returns the
 * watch (mc_watch_close frees it), or NULL with errno: those of
 * mc_connect, EACCES (neither root nor the server's user), EOPNOTSUPP
 * (the server has no watches), ENOMEM. */
MC_EXPORT mc_watch *mc_watch_open(const char *socket_path);
/* The watch's mount id (for mc_mount_tag) and its socket (readable when
 * events may have come: for poll). */
MC_EXPORT uint64_t mc_watch_id(const mc_watch *w);
MC_EXPORT int mc_watch_fd(const mc_watch *w);
/* Wait up to timeout_ms (-1: no bound) for events and call fn(arg, ev)
 * for each, in order (ev and its name live until fn returns). Returns the
 * number of event batches read (0: none came in time), *seq set to the
 * last one's sequence when above 0 (left alone when only parts of a long
 * batch came: the rest follows); acknowledge it with mc_watch_ack once
 * applied (acknowledging 0 settles nothing: a keep-alive). -1 with errno: ECONNRESET (the server closed the watch: it is
 * over, and changes are no longer announced), EPROTO (a malformed push),
 * ENOMEM, or poll's and recv's errors (EINTR). */
MC_EXPORT int mc_watch_read(mc_watch *w, int timeout_ms,
                            void (*fn)(void *arg, const struct mc_watch_event *ev), void *arg,
                            uint64_t *seq);
/* Acknowledge every batch up to sequence seq: the changes waiting for them
 * are answered. 0, or -1 with errno: EPIPE/ECONNRESET (the watch is over),
 * ENOMEM, EAGAIN (the socket is full: the server stopped reading). */
MC_EXPORT int mc_watch_ack(mc_watch *w, uint64_t seq);
/* Close the watch (NULL: no-op). */
MC_EXPORT void mc_watch_close(mc_watch *w);
/* Tag c's connection as mount id's (mc_watch_id). 0, or -1 with errno:
 * EACCES, EALREADY (tagged with another id), EINVAL (id 0), and those
 * listed at the top of this header. */
MC_EXPORT int mc_mount_tag(mc_client *c, uint64_t id);

#ifdef __cplusplus
}
#endif

#endif
