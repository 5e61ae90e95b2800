/* mcachefs.h - mcachefs internals: the FUSE file system over libmcache.
 *
 * mcachefs serves the mcache namespace through the FUSE low-level API.
 * Inode numbers are mcache's (the root is 1, as FUSE_ROOT_ID). libmcache is
 * path based, so mcachefs keeps, for every inode the kernel knows (its
 * lookup count above 0), the parent and name it was last found under, and
 * builds a path from those (mcachefs_node.c). A path is checked against the
 * inode number it must reach: a stale one (another client renamed a parent)
 * answers ESTALE, never another file's attributes.
 *
 * Modules: mcachefs_main.c (options, mount, the session loop, the poller
 * that pushes invalidations), mcachefs_node.c (inode table, paths, per
 * request credentials and clients), mcachefs_meta.c (namespace operations),
 * mcachefs_dir.c (listings), mcachefs_data.c (open files, data in the
 * backing directory), mcachefs_watch.c (the watch: invalidations pushed
 * by mcached for every change made by other clients).
 *
 * Invariants:
 *  1. Every node in the table has nlookup > 0 (the root always): the kernel
 *     holds a reference to it; forget removes it at 0.
 *  2. A node's (parent, name) is the name it was last looked up, created
 *     or renamed under; name is NULL once that name was removed through
 *     this mount (the node is reachable by handle only then).
 *  3. Every request runs under the caller's credentials: fs_begin() sets
 *     them with mc_cred_set() for the request's thread before any call
 *     (when mcachefs runs as root; run as a user, it is that user's mount
 *     and its own credentials apply, as the server would refuse acting).
 *  4. Each worker thread uses its own mc_client (one request in flight per
 *     client); clients live until unmount, so a file handle may name the
 *     client it was opened on and be used from any thread. With a watch,
 *     each is tagged with its mount id before its first request.
 *  5. With a watch, a reply lets the kernel cache (timeouts above 0) only
 *     when no watch event was applied since the request began (fs->gen,
 *     read by fs_begin), checked under fs->mu together with the node's
 *     reference: an event applied before finds no node and bumps gen
 *     (the reply caches nothing); one applied after finds the node and
 *     invalidates it, or, while the kernel has not taken the reply in yet,
 *     invalidates its name, which waits for the directory lock the
 *     request holds (mcachefs_watch.c). Listings the kernel keeps (opendir
 *     with the watch) are dropped with their directory's inode, after the
 *     names of the same events: a listing in progress holds the lock.
 */
#ifndef MCACHEFS_H
#define MCACHEFS_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mcache.h"

/* Paths reach MC_LONG_PATH_MAX bytes: a caller may stand PATH_MAX bytes
 * below a directory that is itself deep below the mount root (every
 * client raises its limit, mc_path_max_set). */
#define FS_PATH_MAX MC_LONG_PATH_MAX

struct fs {
	const char *socket;          /* NULL: libmcache's default */
	char *data_dir;
	int data_fd;                 /* the backing directory, open */
	double entry_timeout;        /* seconds the kernel may cache a name */
	double attr_timeout;         /* seconds it may cache attributes */
	unsigned poll_ms;            /* invalidation poll period (0: no poller) */
	bool watch_on;               /* --no-watch not given */
	mc_watch *watch;             /* the watch, opened at start; NULL: none */
	uint64_t mount_id;           /* its id, for the clients' tags */
	_Atomic bool watching;       /* the watch stands: timeouts may apply */
	_Atomic uint64_t gen;        /* watch events applied (invariant 5) */
	bool act;                    /* running as root: act for each caller */
	struct fuse_session *se;
	pthread_mutex_t mu;          /* guards the node table and clients */
	struct fs_node **tab;        /* hash by ino */
	size_t tabmask, nnodes;
	mc_client **clients;         /* every client made, for unmount */
	size_t nclients, capclients;
};

/* One inode the kernel knows. */
struct fs_node {
	struct fs_node *next;        /* hash chain */
	uint64_t ino;
	uint64_t parent;
	char *name;                  /* NULL: detached (invariant 2) */
	uint64_t nlookup;
	/* what the kernel was last told, for the poller */
	int64_t mtime_ns, ctime_ns;
	uint64_t size;
};

/* A caller's context for one request. */
struct fs_req {
	struct fs *fs;
	mc_client *c;                /* this thread's client */
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[64];
};

extern struct fs fs_global;

/* mcachefs_node.c */
int fs_nodes_init(struct fs *fs);
void fs_nodes_free(struct fs *fs);
/* Set up r for req: the thread's client and the caller's credentials
 * (invariant 3). 0 or -errno (ENOTCONN when no client could connect). */
int fs_begin(struct fs_req *r, fuse_req_t req);
/* The path of ino into buf: 0, -ESTALE (unknown or detached), or
 * -ENAMETOOLONG. */
int fs_path(struct fs *fs, uint64_t ino, char *buf, size_t size);
/* The path of name in directory parent. */
int fs_child_path(struct fs *fs, uint64_t parent, const char *name, char *buf, size_t size);
/* Lookup count +1 for st's inode, found as name in parent (created if
 * absent); its last known attributes recorded; e's timeouts set
 * (invariant 5) when e is not NULL. -ENOMEM. */
int fs_node_ref(struct fs *fs, uint64_t parent, const char *name, const struct stat *st,
                struct fuse_entry_param *e);
/* The attribute timeout for a reply of this request (invariant 5). */
double fs_attr_timeout(struct fs *fs);
/* Lookup count -n; the node goes at 0. */
void fs_node_forget(struct fs *fs, uint64_t ino, uint64_t n);
/* name in parent was removed (or replaced): detach the node named so. */
void fs_node_unname(struct fs *fs, uint64_t parent, const char *name, uint64_t ino);
/* ino moved from (parent, name) to (np, nn). */
void fs_node_rename(struct fs *fs, uint64_t ino, uint64_t np, const char *nn);
/* Record the attributes last reported for st's inode. */
void fs_node_seen(struct fs *fs, const struct stat *st);
/* The poller: for every named node, compare the namespace with what the
 * kernel was told, and push invalidations for what changed. */
void fs_nodes_poll(struct fs *fs);

/* A watch event, as the watch thread keeps it (name malloc'd, NULL for
 * an inode's attributes), and what the kernel must be told for it. */
struct fs_wev {
	uint64_t ino;                /* the inode, or the directory of name */
	char *name;
	bool skip;                   /* the kernel knows neither: nothing to tell */
	uint64_t parent;             /* an inode's: its name, to invalidate when */
	char *pname;                 /* the kernel has not taken the inode in yet */
};
/* Under fs->mu, apply events ev[0..n) to the table: gen +1 (invariant 5),
 * each marked skip or given its node's name. */
void fs_nodes_watch(struct fs *fs, struct fs_wev *ev, size_t n);
/* Every name and inode the kernel holds, as events (malloc'd array in
 * *out, names malloc'd): for dropping the kernel's whole cache. The count,
 * or 0 with *out NULL on ENOMEM. gen +1. */
size_t fs_nodes_all(struct fs *fs, struct fs_wev **out);

/* mcachefs_watch.c: open the watch (before the mount; false: none, the
 * reason printed), start its thread (after), stop it. */
bool fs_watch_open(struct fs *fs);
int fs_watch_start(struct fs *fs);
void fs_watch_stop(struct fs *fs);

/* mcachefs_meta.c / mcachefs_data.c: fill in their operations. */
void fs_meta_ops(struct fuse_lowlevel_ops *ops);
void fs_data_ops(struct fuse_lowlevel_ops *ops);
/* Reply to a lookup-like request with st's entry (lookup count +1). */
void fs_reply_entry(fuse_req_t req, struct fs *fs, uint64_t parent, const char *name,
                    const struct stat *st);
/* lstat of ino through its path, checked to reach ino. */
int fs_stat_ino(struct fs_req *r, uint64_t ino, struct stat *st);
/* The backing file of ino: its name in the data directory. */
void fs_data_name(uint64_t ino, char *buf, size_t size);
/* After a name of st's inode went: drop its data when it was the last. */
void fs_data_unlinked(struct fs *fs, const struct stat *st);
/* fstat through an open file's handle (fi from create/open; a directory's
 * handle gives -ESTALE). */
int fs_file_fstat(struct fuse_file_info *fi, struct stat *st);
/* fstat through any open file of inode ino: -ESTALE when none is open. */
int fs_open_fstat(uint64_t ino, struct stat *st);
/* truncate(2) of ino at path, or ftruncate(2) through fi when not NULL:
 * the size in mcache and the backing file. */
int fs_file_truncate(struct fs_req *r, uint64_t ino, const char *path, struct fuse_file_info *fi,
                     off_t size);
/* mcachefs_dir.c: opendir, readdir, readdirplus, releasedir. */
void fs_dir_ops(struct fuse_lowlevel_ops *ops);
/* Handle kinds: the first member of every handle put in fi->fh. */
#define FS_FILE_MAGIC 0x6d636666u  /* struct fs_file */
#define FS_DIR_MAGIC  0x6d636664u  /* struct fs_dirh */

#endif
