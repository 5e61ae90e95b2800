/* mcachectl.c - command-line tool for people: look at and change an mcache
 * namespace through libmcache (mkdir, rm, mv, chown, truncate, rmtree,
 * sync; ls and stat live in mcachectl_ls.c, stats, clients and slowlog in
 * mcachectl_admin.c, log and stats --commits in mcachectl_log.c, fsck in
 * mcachectl_fsck.c, extents in mcachectl_extents.c, dump and load in
 * mcachectl_dump.c), with the options, exit statuses and error messages
 * of coreutils. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mc_config.h"
#include "mc_socket.h"
#include "mcachectl.h"
#include "mcachectl_admin.h"
#include "mcachectl_dump.h"
#include "mcachectl_extents.h"
#include "mcachectl_fmt.h"
#include "mcachectl_ls.h"
#include "mcachectl_fsck.h"
#include "mcachectl_help.h"
#include "mcachectl_log.h"
#include "mcache.h"

const char *prog = "mcachectl";
json_t *json_doc;                /* --json: the array the command fills */
bool json_list;                  /* set by commands that list: [] when empty */
static const char *socket_arg;   /* -s, or NULL */
static mc_client *client;        /* connected by conn() */


/* Connect on first use, after the command checked its arguments, so usage
 * errors never depend on the server. Exits 1 when it cannot connect, saying
 * what to do: a path that is not a socket is named as such, and when nothing
 * listens there the hint says how to start mcached or name its socket. */
mc_client *conn(void)
{
	if (client)
		return client;
	client = mc_connect(socket_arg);
	if (!client) {
		int err = errno;
		const char *path = mc_socket_path(socket_arg);
		struct stat st;
		if ((err == ECONNREFUSED || err == ENOTSOCK) && stat(path, &st) == 0 &&
		    !S_ISSOCK(st.st_mode)) {
			fprintf(stderr, "%s: %s: not a socket\n", prog, path);
		} else {
			fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(err));
			if (err == ENOENT || err == ECONNREFUSED)
				fprintf(stderr, "%s: is mcached running? Start it with "
				        "'mcached --socket %s', or set MCACHE_SOCKET (or -s) "
				        "to its socket.\n", prog, path);
		}
		exit(EXIT_FAIL);
	}
	return client;
}

void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
}

int fail(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	return EXIT_FAIL;
}

int failf(const char *fmt, ...)
{
	int err = errno;
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	return EXIT_FAIL;
}


/* mkdir -p: create every missing component of path. */
static int mkdir_parents(mc_client *c, const char *path, mode_t mode)
{
	char *p = strdup(path);
	struct stat st;
	int rc = 0;
	if (!p) {
		errno = ENOMEM;
		return fail(path);
	}
	size_t len = strlen(p);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		if (p[i - 1] == '/')
			continue; /* repeated slash */
		char saved = p[i];
		p[i] = 0;
		/* Parents get u+wx as mkdir -p gives them. */
		mode_t m = saved ? (mode | S_IWUSR | S_IXUSR) : mode;
		if (mc_mkdir(c, p, m) < 0) {
			/* An existing component is fine if it is a directory (or
			 * a symlink to one). As mkdir -p, a parent that is not
			 * one is named with ENOTDIR, the last one with EEXIST. */
			int err = errno ? errno : EEXIST;
			bool ok = err == EEXIST && mc_stat(c, p, &st) == 0 && S_ISDIR(st.st_mode);
			if (!ok) {
				errno = err == EEXIST && saved ? ENOTDIR : err;
				rc = failf("cannot create directory '%s'", p);
				break;
			}
		}
		p[i] = saved;
	}
	free(p);
	return rc;
}

static int cmd_mkdir(int argc, char **argv)
{
	bool parents = false, have_mode = false;
	mode_t mode = 0777;
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "+pm:")) != -1) {
		switch (opt) {
		case 'p':
			parents = true;
			break;
		case 'm':
			if (parse_mode(optarg, &mode) < 0) {
				usage_error("mkdir: invalid mode '%s'", optarg);
				return EXIT_USAGE;
			}
			have_mode = true;
			break;
		default:
			usage_error("mkdir: unknown option '-%c' or missing MODE", optopt);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage_error("mkdir: missing PATH");
		return EXIT_USAGE;
	}
	if (!have_mode)
		mode &= ~current_umask();
	mc_client *c = conn();
	int rc = 0;
	for (int i = optind; i < argc; i++) {
		if (parents) {
			if (mkdir_parents(c, argv[i], mode))
				rc = EXIT_FAIL;
		} else if (mc_mkdir(c, argv[i], mode) < 0) {
			rc = failf("cannot create directory '%s'", argv[i]);
		}
	}
	return rc;
}

static int touch_one(mc_client *c, const char *path)
{
	int fd = mc_open(c, path, O_CREAT | O_EXCL | O_WRONLY, 0666 & ~current_umask());
	if (fd >= 0) {
		mc_close(c, fd);
		return 0;
	}
	/* As touch(1): when the create fails because the name exists (or, for
	 * "file/", because open says EISDIR), setting the times decides, and
	 * its error is the one reported ("file/": Not a directory). */
	if (errno != EEXIST && errno != EISDIR)
		return failf("cannot touch '%s'", path);
	if (mc_utimens(c, path, NULL) < 0)
		return failf("setting times of '%s'", path);
	return 0;
}

int each_path(int argc, char **argv, path_fn fn, int first)
{
	if (argc <= first) {
		usage_error("%s: missing PATH", argv[0]);
		return EXIT_USAGE;
	}
	mc_client *c = conn();
	int rc = 0;
	for (int i = first; i < argc; i++)
		if (fn(c, argv[i]) != 0)
			rc = EXIT_FAIL;
	return rc;
}

static bool rm_recursive, rm_force, rm_dirs;

/* rm's rules: -r removes a directory and everything below it (on the
 * server, in one call), -d an empty directory, -f ignores missing paths. */
static int rm_one(mc_client *c, const char *path)
{
	struct stat st;
	int r;
	if ((rm_recursive || rm_dirs) && mc_lstat(c, path, &st) == 0 && S_ISDIR(st.st_mode))
		r = rm_recursive ? mc_rmtree(c, path) : mc_rmdir(c, path);
	else
		r = mc_unlink(c, path);
	if (r < 0 && rm_force && errno == ENOENT)
		return 0;
	return r < 0 ? failf("cannot remove '%s'", path) : 0;
}

static int cmd_rm(int argc, char **argv)
{
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "+rRfd")) != -1) {
		switch (opt) {
		case 'r': case 'R': rm_recursive = true; break;
		case 'f': rm_force = true; break;
		case 'd': rm_dirs = true; break;
		default:
			usage_error("rm: invalid option -- '%c'", optopt);
			return EXIT_USAGE;
		}
	}
	if (optind == argc && rm_force)
		return 0;   /* rm -f with nothing to remove succeeds */
	return each_path(argc, argv, rm_one, optind);
}

static uid_t chown_uid;
static gid_t chown_gid;

/* chown and chmod as coreutils word a failure: a path that cannot be
 * reached, or one whose change failed (what names the change). */
static int change_failed(mc_client *c, const char *path, const char *what)
{
	struct stat st;
	int err = errno;
	if (mc_lstat(c, path, &st) < 0)
		return failf("cannot access '%s'", path);
	errno = err;
	return failf("%s '%s'", what, path);
}

static int chown_one(mc_client *c, const char *path)
{
	if (mc_chown(c, path, chown_uid, chown_gid) < 0)
		return change_failed(c, path, "changing ownership of");
	return 0;
}

/* chown OWNER[:GROUP] PATH... (an empty or missing part is left as is). */
static int cmd_chown(int argc, char **argv)
{
	if (argc < 3) {
		usage_error("chown: expected OWNER[:GROUP] PATH...");
		return EXIT_USAGE;
	}
	char spec[256];
	snprintf(spec, sizeof(spec), "%s", argv[1]);
	char *colon = strchr(spec, ':');
	if (colon)
		*colon++ = '\0';
	unsigned long u = (unsigned long)-1, g = (unsigned long)-1;
	if (spec[0] && parse_id(spec, true, &u) < 0) {
		fprintf(stderr, "%s: invalid user: '%s'\n", prog, argv[1]);
		return EXIT_FAIL;
	}
	if (colon && colon[0] && parse_id(colon, false, &g) < 0) {
		fprintf(stderr, "%s: invalid group: '%s'\n", prog, argv[1]);
		return EXIT_FAIL;
	}
	chown_uid = (uid_t)u;
	chown_gid = (gid_t)g;
	return each_path(argc, argv, chown_one, 2);
}

static off_t truncate_size;

static int truncate_one(mc_client *c, const char *path)
{
	int fd = mc_open(c, path, O_CREAT | O_WRONLY, 0666 & ~current_umask());
	if (fd < 0)
		return failf("cannot open '%s' for writing", path);
	mc_close(c, fd);
	if (mc_truncate(c, path, truncate_size) < 0)
		return failf("failed to truncate '%s' at %jd bytes", path, (intmax_t)truncate_size);
	return 0;
}

/* truncate -s SIZE PATH...: as truncate(1), a missing file is created. */
static int cmd_truncate(int argc, char **argv)
{
	int opt;
	bool have = false;
	optind = 1;
	while ((opt = getopt(argc, argv, "+s:")) != -1) {
		char *end;
		long long v;
		switch (opt) {
		case 's':
			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (!*optarg || *end || errno || v < 0) {
				fprintf(stderr, "%s: Invalid number: '%s'\n", prog, optarg);
				return EXIT_FAIL;
			}
			truncate_size = (off_t)v;
			have = true;
			break;
		default:
			usage_error("truncate: invalid option -- '%c' or missing SIZE", optopt);
			return EXIT_USAGE;
		}
	}
	if (!have) {
		usage_error("truncate: you must specify '-s SIZE'");
		return EXIT_USAGE;
	}
	return each_path(argc, argv, truncate_one, optind);
}

static int rmdir_one(mc_client *c, const char *path)
{
	return mc_rmdir(c, path) < 0 ? failf("failed to remove '%s'", path) : 0;
}

static int rmtree_one(mc_client *c, const char *path)
{
	return mc_rmtree(c, path) < 0 ? fail(path) : 0;
}

static mode_t chmod_mode;

static int chmod_one(mc_client *c, const char *path)
{
	if (mc_chmod(c, path, chmod_mode) < 0)
		return change_failed(c, path, "changing permissions of");
	return 0;
}

static int need_args(int argc, char **argv, int n, const char *what)
{
	if (argc - 1 == n)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", prog, argv[0],
	        argc - 1 < n ? "missing arguments" : "too many arguments");
	fprintf(stderr, "Usage: %s %s %s\nTry '%s --help' for more information.\n", prog,
	        argv[0], what, prog);
	return EXIT_USAGE;
}

static int cmd_mv(int argc, char **argv)
{
	int rc = need_args(argc, argv, 2, "FROM TO");
	if (rc)
		return rc;
	mc_client *c = conn();
	const char *from = argv[1], *to = argv[2];
	if (mc_rename(c, from, to) == 0)
		return 0;
	/* As mv -T words it: a missing FROM, a type clash, or the rename. */
	int err = errno;
	struct stat sf, st;
	if (mc_lstat(c, from, &sf) < 0)
		return failf("cannot stat '%s'", from);
	bool have_to = mc_lstat(c, to, &st) == 0;
	if (have_to && S_ISDIR(st.st_mode) && !S_ISDIR(sf.st_mode)) {
		fprintf(stderr, "%s: cannot overwrite directory '%s' with non-directory\n", prog, to);
		return EXIT_FAIL;
	}
	if (have_to && !S_ISDIR(st.st_mode) && S_ISDIR(sf.st_mode)) {
		fprintf(stderr, "%s: cannot overwrite non-directory '%s' with directory '%s'\n", prog,
		        to, from);
		return EXIT_FAIL;
	}
	errno = err;
	return failf("cannot move '%s' to '%s'", from, to);
}

static int cmd_ln(int argc, char **argv)
{
	bool sym = false;
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "+s")) != -1) {
		if (opt != 's') {
			usage_error("ln: unknown option '-%c'", optopt);
			return EXIT_USAGE;
		}
		sym = true;
	}
	if (argc - optind != 2) {
		usage_error("ln: expected TARGET LINK");
		return EXIT_USAGE;
	}
	const char *target = argv[optind], *link = argv[optind + 1];
	mc_client *c = conn();
	if (sym)
		return mc_symlink(c, target, link) < 0 ?
		       failf("failed to create symbolic link '%s'", link) : 0;
	/* As ln words it: TARGET checked first, then the link. */
	struct stat st;
	if (mc_lstat(c, target, &st) < 0)
		return failf("failed to access '%s'", target);
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: %s: hard link not allowed for directory\n", prog, target);
		return EXIT_FAIL;
	}
	if (mc_link(c, target, link) == 0)
		return 0;
	if (errno == EEXIST || errno == ENOSPC || errno == EROFS || errno == EDQUOT)
		return failf("failed to create hard link '%s'", link);
	return failf("failed to create hard link '%s' => '%s'", link, target);
}

static int cmd_readlink(int argc, char **argv)
{
	bool verbose = false;
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		verbose = true;
		argc--;
		argv++;
	}
	int rc = need_args(argc, argv, 1, "[-v] PATH");
	if (rc)
		return rc;
	mc_client *c = conn();
	char buf[4096];
	ssize_t n = mc_readlink(c, argv[1], buf, sizeof(buf));
	/* As readlink(1): a failure is only the exit status, unless -v. */
	if (n < 0)
		return verbose ? fail(argv[1]) : EXIT_FAIL;
	if (json_doc) {
		json_t *o = json_pack("{s:s,s:s%}", "path", argv[1], "target", buf, (size_t)n);
		if (o == NULL || json_array_append_new(json_doc, o) != 0)
			return fail("--json");
		return 0;
	}
	printf("%.*s\n", (int)n, buf);
	return 0;
}

static int cmd_chmod(int argc, char **argv)
{
	if (argc < 3) {
		usage_error("chmod: expected MODE PATH...");
		return EXIT_USAGE;
	}
	if (parse_mode(argv[1], &chmod_mode) < 0) {
		usage_error("chmod: invalid mode '%s' (octal expected)", argv[1]);
		return EXIT_USAGE;
	}
	return each_path(argc, argv, chmod_one, 2);
}

static int cmd_sync(int argc, char **argv)
{
	int rc = need_args(argc, argv, 0, "");
	if (rc)
		return rc;
	mc_client *c = conn();
	return mc_sync(c) < 0 ? fail("sync") : 0;
}


/* A module's 0 or -errno as an exit status, the error named after what. */
static int exit_rc(int rc, const char *what)
{
	errno = -rc;
	return rc ? fail(what) : 0;
}

static int cmd_extents(int argc, char **argv)
{
	int rc = need_args(argc, argv, 1, "PATH");
	return rc ? rc : exit_rc(extents_print(conn(), argv[1], json_doc), argv[1]);
}

static int cmd_dump(int argc, char **argv)
{
	if (argc > 2)
		return need_args(argc, argv, 1, "[PATH]");
	const char *path = argc == 2 ? argv[1] : "/";
	return exit_rc(dump_tree(conn(), path, stdout), path);
}

static int cmd_load(int argc, char **argv)
{
	if (argc > 2)
		return need_args(argc, argv, 1, "[DIR]");
	return load_stream(conn(), stdin, argc == 2 ? argv[1] : NULL, prog) ? EXIT_FAIL : 0;
}

static int cmd_fsck(int argc, char **argv)
{
	return fsck_command(argc, argv, socket_arg, json_doc != NULL, prog);
}

static int cmd_log(int argc, char **argv) { return log_main(conn(), argc, argv, json_doc, prog); }
static int cmd_touch(int argc, char **argv) { return each_path(argc, argv, touch_one, 1); }
static int cmd_rmdir(int argc, char **argv) { return each_path(argc, argv, rmdir_one, 1); }
static int cmd_rmtree(int argc, char **argv) { return each_path(argc, argv, rmtree_one, 1); }

/* The commands: name, handler, usage and what `mcachectl CMD --help` says. */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *help;
} commands[] = {
	{ "ls", cmd_ls, "[-l] [-a] [-d] [-R] [PATH]",
	  "List the directory PATH (default /), sorted by name; a non-directory is\n"
	  "listed by itself.\n"
	  "  -l  long format: mode, links, owner, group, size, mtime, name, and\n"
	  "      \"-> TARGET\" for symbolic links, after a \"total\" line\n"
	  "  -a  include names starting with '.', and . and ..\n"
	  "  -d  list PATH itself, not its entries\n"
	  "  -R  list subdirectories too, each under a \"PATH:\" heading\n" },
	{ "stat", cmd_stat, "[-c FORMAT] PATH...",
	  "Print every attribute of PATH (symbolic links are not followed).\n"
	  "  -c FORMAT  print FORMAT instead, with %n %s %a %A %F %h %i %u %U %g %G\n"
	  "             %X %Y %Z %x %y %z %b %B %f %% as stat(1) expands them\n" },
	{ "mkdir", cmd_mkdir, "[-p] [-m MODE] PATH...",
	  "Create directories.\n"
	  "  -p       create missing parents; an existing directory is no error\n"
	  "  -m MODE  permission bits in octal (default 0777 minus the umask)\n" },
	{ "touch", cmd_touch, "PATH...",
	  "Create an empty regular file if missing, else set its times to now.\n" },
	{ "rm", cmd_rm, "[-r] [-f] [-d] PATH...",
	  "Remove files and symbolic links.\n"
	  "  -r, -R  remove directories and everything below them (on the server)\n"
	  "  -d      remove empty directories\n"
	  "  -f      ignore missing paths; no PATH is no error\n" },
	{ "rmdir", cmd_rmdir, "PATH...", "Remove empty directories.\n" },
	{ "mv", cmd_mv, "FROM TO",
	  "Rename FROM to TO atomically, replacing a file or an empty directory.\n" },
	{ "ln", cmd_ln, "[-s] TARGET LINK",
	  "Make LINK a hard link to TARGET; -s: a symbolic link to TARGET.\n" },
	{ "readlink", cmd_readlink, "[-v] PATH",
	  "Print the target of the symbolic link PATH. As readlink(1), a PATH\n"
	  "that is not a symbolic link fails (exit 1) silently; -v says why.\n" },
	{ "chmod", cmd_chmod, "MODE PATH...", "Set the permission bits (octal MODE, e.g. 0755).\n" },
	{ "chown", cmd_chown, "OWNER[:GROUP] PATH...",
	  "Set the owner and group (names or numbers; an empty part is kept).\n" },
	{ "truncate", cmd_truncate, "-s SIZE PATH...",
	  "Set the size of files to SIZE bytes, creating missing ones.\n" },
	{ "rmtree", cmd_rmtree, "PATH...",
	  "Remove PATH and everything below it, on the server (rm -rf in one call).\n" },
	{ "sync", cmd_sync, "",
	  "Wait until every change acknowledged so far is durable on the server.\n" },
	{ "stats", cmd_stats, "[--commits | --watch [INTERVAL] [--count N]]",
	  "Print the server's statistics (JSON, as GET /stats).\n"
	  "  --commits               instead, the commit pipeline as a table\n"
	  "                          (phases, batch sizes, lag, journal, log)\n"
	  "  -w, --watch [INTERVAL]  instead, every INTERVAL seconds (default 1),\n"
	  "                          a line of rates per second: requests, ops,\n"
	  "                          errors, commits, committed records, read-path\n"
	  "                          hits and misses, and the cache's used bytes and\n"
	  "                          connections; until interrupted (SIGINT)\n"
	  "  -n, --count N           stop after N lines\n"
	  "With --json, each line is a JSON object (JSON lines).\n" },
	{ "clients", cmd_clients, "",
	  "List the server's connected clients, oldest first: pid, user, group,\n"
	  "requests received, age and connection time (this mcachectl too).\n" },
	{ "slowlog", cmd_slowlog, "[N]",
	  "Print the newest N (default 10; 0: all kept) entries of the server's\n"
	  "slow-operation log, newest first: id, time, service time in ms, op,\n"
	  "client pid and path. An op enters it when its service time on the\n"
	  "server reaches --slowlog-threshold-ms; the log keeps --slowlog-max-len.\n" },
	{ "log", cmd_log, "[--follow] [--since SEQ] [--json]",
	  "Print the committed changes, one record a line: SEQ.REC TIME OP FIELDS\n"
	  "(--json: the server's JSON lines), from batch SEQ on (default: the\n"
	  "oldest the server keeps); --follow waits for new commits. Root or\n"
	  "the server's user only.\n" },
	{ "extents", cmd_extents, "PATH",
	  "Print the extent map of the file PATH (OFF LEN PHYS FLAGS) and its\n"
	  "extent-state ranges (START END BITS, END inclusive); --json: one object.\n" },
	{ "dump", cmd_dump, "[PATH]",
	  "Write the tree at PATH (default /) to stdout as JSON lines, one entry\n"
	  "per line in pre-order: path, type, mode, uid, gid, size, mtime, atime\n"
	  "(ns), ino, nlink and a symlink's target. Files have no data to dump.\n" },
	{ "load", cmd_load, "[DIR]",
	  "Recreate the entries of a dump read from stdin, each at DIR + its path\n"
	  "(default: at its path): directories, files of their size, symlinks,\n"
	  "hard links (same ino), then mode, times and, as root, owner. Bad lines\n"
	  "and failed entries are reported as \"line N: ...\" and skipped (exit 1).\n" },
	{ "fsck", cmd_fsck, "[--json] [--offline DATA_DIR]", FSCK_HELP },
};

/* `mcachectl CMD --help` anywhere before "--": the command's usage. */
static bool command_help(const struct command *cmd, int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			printf("Usage: %s %s %s\n%s", prog, cmd->name, cmd->usage, cmd->help);
			return true;
		}
	}
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	opterr = 0; /* our messages, not getopt's */
	while ((opt = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json_doc = json_array();
			if (!json_doc)
				return fail("--json");
			break;
		case 's':
			socket_arg = optarg;
			break;
		case 'h':
			print_help();
			return 0;
		case 'V':
			printf("mcachectl (mcache) %s\n", MC_VERSION);
			return 0;
		default:
			if (optopt)
				usage_error("unknown option '-%c' or missing argument", optopt);
			else
				usage_error("unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage_error("missing COMMAND");
		return EXIT_USAGE;
	}
	const struct command *cmd = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[optind], commands[i].name) == 0)
			cmd = &commands[i];
	if (!cmd) {
		usage_error("unknown command '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (command_help(cmd, argc - optind, argv + optind))
		return 0;
	int rc = cmd->fn(argc - optind, argv + optind);
	mc_disconnect(client);
	/* --json: what the command gathered, also after a failure (the
	 * errors went to stderr); commands that print nothing print nothing,
	 * and a listing that found nothing prints []. */
	if (json_doc && (json_array_size(json_doc) > 0 || (json_list && rc == 0))) {
		char *text = json_dumps(json_doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (!text || puts(text) == EOF)
			rc = fail("--json");
		free(text);
	}
	json_decref(json_doc);
	if (fflush(stdout) != 0 && rc == 0)
		rc = fail("stdout");
	return rc;
}
