/* mcachefs_main.c - mcachefs: mount the mcache namespace with FUSE.
 *
 *   mcachefs [-s SOCKET] [--data-dir DIR] [--entry-timeout SEC]
 *            [--attr-timeout SEC] [--poll-ms MS] [--no-watch]
 *            [--no-default-permissions] MOUNTPOINT [FUSE OPTIONS]
 *
 * Options, the mount, the multi-threaded session loop, the watch
 * (mcachefs_watch.c) and the poller. With the watch (the default) the
 * kernel caches names and attributes (timeouts FS_WATCH_TIMEOUT_S unless
 * given) and mcached's events invalidate them before a library client's
 * change is answered. Without it (--no-watch, or a server that refuses
 * it) the timeouts default to 0: the kernel caches nothing and asks
 * mcachefs, which answers from shared memory; timeouts above 0 then get
 * the poller, which every --poll-ms (or twice the time a scan took, when
 * longer) compares what the kernel was told with the namespace
 * (fs_nodes_poll).
 *
 * Permissions: mcache checks every request against its caller. With the
 * watch the kernel's attributes are exact, so the mount also gets
 * default_permissions: the kernel then checks the opens it serves without
 * asking mcachefs (FIFOs, devices) too, and answers access(2) and the
 * search of a cached path itself. Without the watch it would check stale
 * attributes (or ask for them at every check), so it is left off. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mc_config.h"
#include "mcachefs.h"

#define FS_DEFAULT_DATA_DIR "/var/lib/mcachefs"
#define FS_DEFAULT_POLL_MS 100u
#define FS_WATCH_TIMEOUT_S 3600.0

struct fs fs_global;

struct options {
	char *socket;
	char *data_dir;
	char *entry_timeout;
	char *attr_timeout;
	char *poll_ms;
	int no_watch;
	int no_default_permissions;
	int help;
};

#define OPT(t, m) { t, offsetof(struct options, m), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("-s %s", socket),
	OPT("--socket=%s", socket),
	/* Both forms of a template match "--x=V" (the spaced one taking "=V"):
	 * the "=" form comes last so that its value is the one kept. */
	OPT("--data-dir %s", data_dir),
	OPT("--data-dir=%s", data_dir),
	OPT("--entry-timeout %s", entry_timeout),
	OPT("--entry-timeout=%s", entry_timeout),
	OPT("--attr-timeout %s", attr_timeout),
	OPT("--attr-timeout=%s", attr_timeout),
	OPT("--poll-ms %s", poll_ms),
	OPT("--poll-ms=%s", poll_ms),
	OPT("--no-watch", no_watch),
	OPT("--no-default-permissions", no_default_permissions),
	OPT("-h", help),
	OPT("--help", help),
	FUSE_OPT_END
};

static void usage(void)
{
	printf("Usage: mcachefs [-s SOCKET] [--data-dir DIR] [OPTION...] MOUNTPOINT\n"
	       "       mcachefs --help | --version\n"
	       "\n"
	       "Mount the namespace of a running mcached (the mcache metadata cache server)\n"
	       "with FUSE, so that unmodified programs use it. Metadata comes from mcache\n"
	       "(lookups from its shared memory) and file data lives in DIR. Run as root,\n"
	       "mcachefs has mcache check each request with its caller's credentials;\n"
	       "run by another user, the mount is that user's own and every request\n"
	       "carries that user's credentials. Unmount with fusermount3 -u MOUNTPOINT.\n"
	       "\n"
	       "Options:\n"
	       "  -s, --socket=PATH      mcached's client socket (default: $MCACHE_SOCKET,\n"
	       "                         else " MC_DEFAULT_SOCKET ")\n"
	       "  --data-dir=DIR         backing directory for file data, one file per\n"
	       "                         inode number (default " FS_DEFAULT_DATA_DIR ")\n"
	       "  --entry-timeout=SEC    how long the kernel may cache a name (default 3600\n"
	       "                         with the watch, 0 without)\n"
	       "  --attr-timeout=SEC     how long it may cache attributes (the same)\n"
	       "  --no-watch             do not open a watch: mcached then does not tell\n"
	       "                         this mount what other clients change, and the\n"
	       "                         timeouts default to 0 (the kernel caches nothing).\n"
	       "                         With the watch (root or mcached's user only),\n"
	       "                         a library client's change is invalidated in the\n"
	       "                         kernel before its call returns, another mount's\n"
	       "                         at once after; if mcached drops the watch, the\n"
	       "                         mount goes on with timeouts 0\n"
	       "  --no-default-permissions\n"
	       "                         with the watch, the mount also has the FUSE\n"
	       "                         option default_permissions (the kernel checks\n"
	       "                         the permission bits on the attributes mcache\n"
	       "                         gave, before mcache checks the request again;\n"
	       "                         opens of FIFOs and devices, which the kernel\n"
	       "                         serves without asking mcachefs, are checked\n"
	       "                         only so; it costs a getattr of the directory\n"
	       "                         per create or remove): this leaves it to\n"
	       "                         mcache alone\n"
	       "  --poll-ms=MS           without the watch and with a timeout above 0: how\n"
	       "                         often changes made by other clients are looked\n"
	       "                         for and invalidated in the kernel (default %u;\n"
	       "                         1..60000; a scan takes time in proportion to the\n"
	       "                         inodes the kernel holds, and the period\n"
	       "                         stretches to twice that)\n"
	       "  -f                     stay in the foreground\n"
	       "  -d                     debug output (implies -f)\n"
	       "  -o OPT[,OPT...]        FUSE mount options: allow_other (let other users\n"
	       "                         in), default_permissions (the kernel's check\n"
	       "                         also without the watch, on attributes as old as\n"
	       "                         --attr-timeout)\n"
	       "  -h, --help             print this help and exit\n"
	       "  -V, --version          print the version and exit\n"
	       "\n"
	       "Exit status: 0 after a clean unmount, 1 on failure, 2 for bad usage.\n",
	       FS_DEFAULT_POLL_MS);
}

static int parse_seconds(const char *s, const char *what, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 86400)) {
		fprintf(stderr, "mcachefs: %s: '%s' is not a number of seconds in 0..86400\n", what,
		        s);
		return -1;
	}
	*out = v;
	return 0;
}

static atomic_bool poller_stop;

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Every poll_ms, or twice the last scan's time when that is longer: a
 * scan is O(inodes the kernel holds), and the poller keeps to a third of
 * a core however many that is. */
static void *poller(void *arg)
{
	struct fs *fs = arg;
	uint64_t wait = fs->poll_ms;
	while (!poller_stop) {
		struct timespec ts = { (time_t)(wait / 1000), (long)(wait % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		if (poller_stop)
			break;
		uint64_t t0 = now_ms();
		fs_nodes_poll(fs);
		uint64_t took = now_ms() - t0;
		wait = 2 * took > fs->poll_ms ? 2 * took : fs->poll_ms;
	}
	return NULL;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options o = { 0 };
	struct fuse_cmdline_opts cl = { 0 };
	struct fs *fs = &fs_global;
	struct fuse_lowlevel_ops ops = { 0 };
	pthread_t poll_thread;
	bool polling = false, mounted = false, nodes = false;
	int ret = 1;

	if (fuse_opt_parse(&args, &o, option_spec, NULL) == -1)
		return 2;
	if (o.help) {
		usage();
		ret = 0;
		goto out;
	}
	if (fuse_parse_cmdline(&args, &cl) != 0) {
		ret = 2;
		goto out;
	}
	if (cl.show_version) {
		printf("mcachefs (mcache) %s\nlibfuse %s\n", MC_VERSION, fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!cl.mountpoint) {
		fprintf(stderr, "mcachefs: no mount point (see --help)\n");
		ret = 2;
		goto out;
	}
	fs->socket = o.socket;
	fs->data_dir = o.data_dir ? o.data_dir : strdup(FS_DEFAULT_DATA_DIR);
	fs->poll_ms = FS_DEFAULT_POLL_MS;
	fs->act = geteuid() == 0;
	fs->watch_on = !o.no_watch;
	fs->data_fd = -1;
	if ((o.entry_timeout &&
	     parse_seconds(o.entry_timeout, "--entry-timeout", &fs->entry_timeout) < 0) ||
	    (o.attr_timeout && parse_seconds(o.attr_timeout, "--attr-timeout", &fs->attr_timeout) < 0)) {
		ret = 2;
		goto out;
	}
	if (o.poll_ms) {
		char *end;
		unsigned long v = strtoul(o.poll_ms, &end, 10);
		if (end == o.poll_ms || *end || v < 1 || v > 60000) {
			fprintf(stderr, "mcachefs: --poll-ms: '%s' is not in 1..60000\n", o.poll_ms);
			ret = 2;
			goto out;
		}
		fs->poll_ms = (unsigned)v;
	}
	if (mkdir(fs->data_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "mcachefs: --data-dir %s: %s\n", fs->data_dir, strerror(errno));
		goto out;
	}
	fs->data_fd = open(fs->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->data_fd < 0) {
		fprintf(stderr, "mcachefs: --data-dir %s: %s\n", fs->data_dir, strerror(errno));
		goto out;
	}
	/* Check the server now, so a mount never stands on nothing. */
	mc_client *probe = mc_connect(fs->socket);
	if (!probe) {
		fprintf(stderr, "mcachefs: cannot connect to mcached%s%s: %s\n",
		        fs->socket ? " at " : "", fs->socket ? fs->socket : "", strerror(errno));
		goto out;
	}
	mc_disconnect(probe);
	if (fs_watch_open(fs)) {
		if (!o.entry_timeout)
			fs->entry_timeout = FS_WATCH_TIMEOUT_S;
		if (!o.attr_timeout)
			fs->attr_timeout = FS_WATCH_TIMEOUT_S;
	}
	if (fs_nodes_init(fs) < 0) {
		fprintf(stderr, "mcachefs: out of memory\n");
		goto out;
	}
	nodes = true;
	if (fs->watch && !o.no_default_permissions &&
	    fuse_opt_add_arg(&args, "-odefault_permissions") != 0) {
		fprintf(stderr, "mcachefs: out of memory\n");
		goto out;
	}

	fs_meta_ops(&ops);
	fs_data_ops(&ops);
	fs->se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	if (!fs->se)
		goto out;
	if (fuse_set_signal_handlers(fs->se) != 0)
		goto out;
	if (fuse_session_mount(fs->se, cl.mountpoint) != 0)
		goto out;
	mounted = true;
	fuse_daemonize(cl.foreground);
	if (fs_watch_start(fs) < 0)
		fprintf(stderr, "mcachefs: cannot start the watch thread: timeouts 0\n");
	if (!fs->watch && (fs->entry_timeout > 0 || fs->attr_timeout > 0)) {
		if (pthread_create(&poll_thread, NULL, poller, fs) == 0)
			polling = true;
	}
	if (cl.singlethread) {
		ret = fuse_session_loop(fs->se);
	} else {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();
		if (!lc)
			goto out;
		fuse_loop_cfg_set_clone_fd(lc, cl.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, cl.max_threads);
		/* Idle threads stay (up to the maximum): each keeps its client. */
		fuse_loop_cfg_set_idle_threads(lc, cl.max_threads);
		ret = fuse_session_loop_mt(fs->se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	ret = ret != 0;
out:
	if (polling) {
		poller_stop = 1;
		pthread_join(poll_thread, NULL);
	}
	fs_watch_stop(fs);
	if (fs->se) {
		if (mounted)
			fuse_session_unmount(fs->se);
		fuse_remove_signal_handlers(fs->se);
		fuse_session_destroy(fs->se);
	}
	if (nodes)
		fs_nodes_free(fs);
	if (fs->data_fd >= 0)
		close(fs->data_fd);
	free(fs->data_dir);
	free(o.socket);
	free(o.entry_timeout);
	free(o.attr_timeout);
	free(o.poll_ms);
	free(cl.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
