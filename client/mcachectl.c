/* mcachectl.c - command-line tool for people: look at and change an mcache
 * namespace through libmcache (ls, stat, mkdir, rm, mv, rmtree, sync, stats). */
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
#include "mcache.h"

#define EXIT_FAIL  1
#define EXIT_USAGE 2

static const char *prog = "mcachectl";
static const char *socket_arg;   /* -s, or NULL */
static mc_client *client;        /* connected by conn() */

/* Connect on first use, after the command checked its arguments, so usage
 * errors never depend on the server. Exits 1 when it cannot connect, saying
 * what to do: a path that is not a socket is named as such, and when nothing
 * listens there the hint says how to start mcached or name its socket. */
static mc_client *conn(void)
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

__attribute__((format(printf, 1, 2)))
static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
}

static int fail(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	return EXIT_FAIL;
}

static void print_help(void)
{
	printf(
"Usage: mcachectl [-s SOCKET] COMMAND [ARGS]\n"
"       mcachectl --help | --version\n"
"\n"
"Inspect and change the namespace of a running mcached (the mcache metadata\n"
"cache server). Paths are absolute paths inside the mcache namespace, not in\n"
"the local file system.\n"
"\n"
"Options:\n"
"  -s, --socket SOCKET  connect to the server listening on the unix socket\n"
"                       SOCKET. Without it, $MCACHE_SOCKET is used when set,\n"
"                       else " MC_DEFAULT_SOCKET ".\n"
"  -h, --help           print this help and exit\n"
"  -V, --version        print the version and exit\n"
"\n"
"Commands:\n"
"  ls [-l] [PATH]         list the directory PATH (default /), sorted by name;\n"
"                         a non-directory is listed by itself. -l: long\n"
"                         format: mode, links, uid, gid, size, mtime, name,\n"
"                         and \"-> TARGET\" for symbolic links\n"
"  stat PATH...           print every attribute of PATH (symlinks are not\n"
"                         followed), as stat(1) does\n"
"  mkdir [-p] [-m MODE] PATH...\n"
"                         create directories; -p: create missing parents and\n"
"                         accept existing directories; -m: permission bits in\n"
"                         octal (default 0777 minus the umask)\n"
"  touch PATH...          create an empty regular file (0666 minus the umask)\n"
"                         if missing, else set its access and modification\n"
"                         times to now\n"
"  rm PATH...             remove files, symbolic links (not directories)\n"
"  rmdir PATH...          remove empty directories\n"
"  mv FROM TO             rename FROM to TO, atomically, replacing a file or an\n"
"                         empty directory at TO\n"
"  ln [-s] TARGET LINK    make LINK a hard link to TARGET; -s: a symbolic link\n"
"                         whose content is TARGET\n"
"  readlink PATH          print the target of the symbolic link PATH\n"
"  chmod MODE PATH...     set the permission bits (octal MODE, e.g. 0755)\n"
"  rmtree PATH...         remove PATH and everything below it, on the server\n"
"                         (rm -rf in one call)\n"
"  sync                   wait until every change acknowledged so far is\n"
"                         durable on the server's disk\n"
"  stats                  print the server's statistics (JSON, as GET /stats)\n"
"\n"
"Commands that take several PATHs go on after a failure and report each.\n"
"\n"
"Exit status:\n"
"  0  success\n"
"  1  an operation failed (the error is printed as \"mcachectl: PATH: message\"),\n"
"     or the server could not be reached\n"
"  2  usage error (unknown command or option, missing or extra arguments)\n"
"\n"
"Environment:\n"
"  MCACHE_SOCKET  the server's socket when -s is not given\n");
}

/* ---- helpers ----------------------------------------------------------- */

static int parse_mode(const char *s, mode_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 07777)
		return -1;
	*out = (mode_t)v;
	return 0;
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

static void mode_string(mode_t m, char out[11])
{
	char t = '?';
	switch (m & S_IFMT) {
	case S_IFREG: t = '-'; break;
	case S_IFDIR: t = 'd'; break;
	case S_IFLNK: t = 'l'; break;
	case S_IFCHR: t = 'c'; break;
	case S_IFBLK: t = 'b'; break;
	case S_IFIFO: t = 'p'; break;
	case S_IFSOCK: t = 's'; break;
	}
	out[0] = t;
	out[1] = m & S_IRUSR ? 'r' : '-';
	out[2] = m & S_IWUSR ? 'w' : '-';
	out[3] = m & S_ISUID ? (m & S_IXUSR ? 's' : 'S') : (m & S_IXUSR ? 'x' : '-');
	out[4] = m & S_IRGRP ? 'r' : '-';
	out[5] = m & S_IWGRP ? 'w' : '-';
	out[6] = m & S_ISGID ? (m & S_IXGRP ? 's' : 'S') : (m & S_IXGRP ? 'x' : '-');
	out[7] = m & S_IROTH ? 'r' : '-';
	out[8] = m & S_IWOTH ? 'w' : '-';
	out[9] = m & S_ISVTX ? (m & S_IXOTH ? 't' : 'T') : (m & S_IXOTH ? 'x' : '-');
	out[10] = 0;
}

static const char *type_name(const struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return st->st_size ? "regular file" : "regular empty file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	}
	return "weird file";
}

static void format_time(const struct timespec *ts, char *buf, size_t size, bool full)
{
	struct tm tm;
	time_t t = ts->tv_sec;
	if (!localtime_r(&t, &tm)) {
		snprintf(buf, size, "%lld", (long long)t);
		return;
	}
	if (!full) {
		strftime(buf, size, "%Y-%m-%d %H:%M", &tm);
		return;
	}
	char a[64], z[16];
	strftime(a, sizeof(a), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(z, sizeof(z), "%z", &tm);
	snprintf(buf, size, "%s.%09ld %s", a, ts->tv_nsec, z);
}

/* dir + "/" + name into a malloc'd string (NULL on ENOMEM). */
static char *path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	bool slash = dl > 0 && dir[dl - 1] == '/';
	size_t n = dl + !slash + strlen(name) + 1;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, slash ? "" : "/", name);
	return p;
}

/* ---- commands ---------------------------------------------------------- */

static void ls_long(mc_client *c, const char *path, const char *name, const struct stat *st)
{
	char mode[11], when[64];
	mode_string(st->st_mode, mode);
	format_time(&st->st_mtim, when, sizeof(when), false);
	printf("%s %3ju %5ju %5ju %10jd %s %s", mode, (uintmax_t)st->st_nlink,
	       (uintmax_t)st->st_uid, (uintmax_t)st->st_gid, (intmax_t)st->st_size, when, name);
	if (S_ISLNK(st->st_mode)) {
		char target[4096];
		ssize_t n = mc_readlink(c, path, target, sizeof(target));
		if (n >= 0)
			printf(" -> %.*s", (int)n, target);
	}
	putchar('\n');
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmd_ls(int argc, char **argv)
{
	bool lng = false;
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "+l")) != -1) {
		if (opt != 'l') {
			usage_error("ls: unknown option '-%c'", optopt);
			return EXIT_USAGE;
		}
		lng = true;
	}
	if (argc - optind > 1) {
		usage_error("ls: too many arguments");
		return EXIT_USAGE;
	}
	const char *path = optind < argc ? argv[optind] : "/";
	mc_client *c = conn();

	struct stat st;
	MC_DIR *d = mc_opendir(c, path);
	if (!d) {
		if (errno != ENOTDIR)
			return fail(path);
		/* Not a directory: list the thing itself, as ls does. */
		if (mc_lstat(c, path, &st) < 0)
			return fail(path);
		if (lng)
			ls_long(c, path, path, &st);
		else
			printf("%s\n", path);
		return 0;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	errno = 0;
	while ((e = mc_readdir(d))) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **p = realloc(names, cap * sizeof(*p));
			if (!p) {
				errno = ENOMEM;
				break;
			}
			names = p;
		}
		if (!(names[n] = strdup(e->d_name))) {
			errno = ENOMEM;
			break;
		}
		n++;
	}
	if (errno)
		rc = fail(path);
	mc_closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (!lng) {
			printf("%s\n", names[i]);
			continue;
		}
		char *p = path_join(path, names[i]);
		if (!p) {
			errno = ENOMEM;
			rc = fail(path);
			break;
		}
		if (mc_lstat(c, p, &st) < 0)
			rc = fail(p); /* removed meanwhile */
		else
			ls_long(c, p, names[i], &st);
		free(p);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static void print_id(const char *label, unsigned long id, bool user)
{
	const char *name = NULL;
	if (user) {
		struct passwd *pw = getpwuid((uid_t)id);
		name = pw ? pw->pw_name : NULL;
	} else {
		struct group *gr = getgrgid((gid_t)id);
		name = gr ? gr->gr_name : NULL;
	}
	printf("%s: (%5lu/%8s)", label, id, name ? name : "UNKNOWN");
}

static int stat_one(mc_client *c, const char *path)
{
	struct stat st;
	char mode[11], t[96];
	if (mc_lstat(c, path, &st) < 0)
		return fail(path);
	printf("  File: %s", path);
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = mc_readlink(c, path, target, sizeof(target));
		if (n >= 0)
			printf(" -> %.*s", (int)n, target);
	}
	printf("\n  Size: %-15jd Blocks: %-10jd IO Block: %-6ld %s\n", (intmax_t)st.st_size,
	       (intmax_t)st.st_blocks, (long)st.st_blksize, type_name(&st));
	printf("Device: %jxh/%jud\tInode: %-11ju Links: %ju\n", (uintmax_t)st.st_dev,
	       (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (uintmax_t)st.st_nlink);
	mode_string(st.st_mode, mode);
	printf("Access: (%04o/%s)  ", (unsigned)(st.st_mode & 07777), mode);
	print_id("Uid", (unsigned long)st.st_uid, true);
	printf("   ");
	print_id("Gid", (unsigned long)st.st_gid, false);
	putchar('\n');
	format_time(&st.st_atim, t, sizeof(t), true);
	printf("Access: %s\n", t);
	format_time(&st.st_mtim, t, sizeof(t), true);
	printf("Modify: %s\n", t);
	format_time(&st.st_ctim, t, sizeof(t), true);
	printf("Change: %s\n", t);
	return 0;
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
			/* An existing component is fine if it is a directory; an
			 * existing non-directory parent fails at the next step
			 * (ENOTDIR), the last one here. */
			bool ok = errno == EEXIST && (saved || (mc_stat(c, p, &st) == 0 && S_ISDIR(st.st_mode)));
			if (!ok) {
				errno = errno ? errno : EEXIST;
				rc = fail(p);
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
			rc = fail(argv[i]);
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
	if (errno != EEXIST)
		return fail(path);
	if (mc_utimens(c, path, NULL) < 0)
		return fail(path);
	return 0;
}

typedef int (*path_fn)(mc_client *c, const char *path);

static int each_path(int argc, char **argv, path_fn fn, int first)
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

static int rm_one(mc_client *c, const char *path)
{
	return mc_unlink(c, path) < 0 ? fail(path) : 0;
}

static int rmdir_one(mc_client *c, const char *path)
{
	return mc_rmdir(c, path) < 0 ? fail(path) : 0;
}

static int rmtree_one(mc_client *c, const char *path)
{
	return mc_rmtree(c, path) < 0 ? fail(path) : 0;
}

static mode_t chmod_mode;

static int chmod_one(mc_client *c, const char *path)
{
	return mc_chmod(c, path, chmod_mode) < 0 ? fail(path) : 0;
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
	if (mc_rename(c, argv[1], argv[2]) < 0)
		return fail(argv[1]);
	return 0;
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
	int r = sym ? mc_symlink(c, target, link) : mc_link(c, target, link);
	return r < 0 ? fail(link) : 0;
}

static int cmd_readlink(int argc, char **argv)
{
	int rc = need_args(argc, argv, 1, "PATH");
	if (rc)
		return rc;
	mc_client *c = conn();
	char buf[4096];
	ssize_t n = mc_readlink(c, argv[1], buf, sizeof(buf));
	if (n < 0)
		return fail(argv[1]);
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

static int cmd_stats(int argc, char **argv)
{
	int rc = need_args(argc, argv, 0, "");
	if (rc)
		return rc;
	mc_client *c = conn();
	char *s = mc_server_stats(c);
	if (!s)
		return fail("stats");
	size_t n = strlen(s);
	fputs(s, stdout);
	if (n == 0 || s[n - 1] != '\n')
		putchar('\n');
	free(s);
	return 0;
}

static int cmd_stat(int argc, char **argv) { return each_path(argc, argv, stat_one, 1); }
static int cmd_touch(int argc, char **argv) { return each_path(argc, argv, touch_one, 1); }
static int cmd_rm(int argc, char **argv) { return each_path(argc, argv, rm_one, 1); }
static int cmd_rmdir(int argc, char **argv) { return each_path(argc, argv, rmdir_one, 1); }
static int cmd_rmtree(int argc, char **argv) { return each_path(argc, argv, rmtree_one, 1); }

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "ls", cmd_ls },       { "stat", cmd_stat },         { "mkdir", cmd_mkdir },
	{ "touch", cmd_touch }, { "rm", cmd_rm },             { "rmdir", cmd_rmdir },
	{ "mv", cmd_mv },       { "ln", cmd_ln },             { "readlink", cmd_readlink },
	{ "chmod", cmd_chmod }, { "rmtree", cmd_rmtree },     { "sync", cmd_sync },
	{ "stats", cmd_stats },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	opterr = 0; /* our messages, not getopt's */
	while ((opt = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (opt) {
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
	int rc = cmd->fn(argc - optind, argv + optind);
	mc_disconnect(client);
	if (fflush(stdout) != 0 && rc == 0)
		rc = fail("stdout");
	return rc;
}
