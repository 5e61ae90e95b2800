/* config.c - mcached's settings: defaults, then the config file, then the
 * command line, each validated with a one-line error naming what was wrong. */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "log.h"
#include "mc_config.h"
#include "mc_socket.h"
#include "config_options.h"
#include "config_value.h"

/* How an option's value is parsed and stored. */
enum config_kind {
	CK_SOCKET,   /* a unix socket path */
	CK_DATA,     /* a directory, not empty */
	CK_PATH,     /* an absolute file path, or none (stored as NULL) */
	CK_ADMIN,    /* unix:PATH, HOST:PORT, [IPV6]:PORT or none */
	CK_BOOL,     /* true/false, yes/no, on/off, 1/0; alone: true */
	CK_SIZE,     /* bytes with an optional K, M, G, T suffix, in [min, max] */
	CK_UINT,     /* a decimal number in [min, max] */
	CK_LEVEL,    /* a log level name */
	CK_MODE,     /* octal permission bits, at most max */
	CK_CONFIG,   /* -c: read a file (command line only) */
	CK_HELP,
	CK_VERSION,
};

/* One row of CONFIG_OPTIONS. */
struct config_option {
	const char *name;
	char letter;
	enum config_kind kind;
	size_t off, size;            /* the field in struct mcd_config */
	const char *arg;             /* the value's name in --help */
	uint64_t min, max;
	const char *def;
	const char *help;
};

#define F(member) offsetof(struct mcd_config, member), sizeof(((struct mcd_config *)0)->member)
#define NOFIELD 0, 0

enum opt_id {
#define X(id, ...) OPT_##id,
	CONFIG_OPTIONS(X)
#undef X
	OPT_COUNT
};

static const struct config_option options[OPT_COUNT] = {
#define X(id, name, letter, kind, field, arg, min, max, def, help) \
	[OPT_##id] = { name, letter, kind, field, arg, min, max, def, help },
	CONFIG_OPTIONS(X)
#undef X
};

/* getopt_long's table: val is OPT_LONG + the row, so that a long option
 * never looks like a letter. Switches take an optional =BOOL, as in the file. */
#define OPT_LONG 256
static const struct option long_opts[OPT_COUNT + 1] = {
#define X(id, name, letter, kind, ...) \
	[OPT_##id] = { name, kind == CK_BOOL ? optional_argument : \
	               (kind == CK_HELP || kind == CK_VERSION) ? no_argument : required_argument, \
	               NULL, OPT_LONG + OPT_##id },
	CONFIG_OPTIONS(X)
#undef X
};

/* '+': stop at the first operand (reported as an error); ':': report a
 * missing argument as ':' rather than '?'. Then each letter of the table. */
static const char *short_opts(void)
{
	static char buf[2 + 2 * OPT_COUNT + 1];
	if (buf[0] == '\0') {
		size_t k = 0;
		buf[k++] = '+';
		buf[k++] = ':';
		for (unsigned i = 0; i < OPT_COUNT; i++) {
			if (options[i].letter == 0)
				continue;
			buf[k++] = options[i].letter;
			if (long_opts[i].has_arg == required_argument)
				buf[k++] = ':';
		}
		buf[k] = '\0';
	}
	return buf;
}

/* The row getopt_long's answer names (a letter or OPT_LONG + row), or -1. */
static int opt_row(int opt)
{
	if (opt >= OPT_LONG && opt < OPT_LONG + OPT_COUNT)
		return opt - OPT_LONG;
	for (int i = 0; i < OPT_COUNT; i++)
		if (opt > 0 && options[i].letter == opt)
			return i;
	return -1;
}


/* --help: this head, the options from the table (usage_options), then
 * usage_more. ISO C compilers need not take literals longer than 4095 bytes. */
static const char usage_text[] =
	"NAME\n"
	"    mcached - metadata cache server\n"
	"\n"
	"SYNOPSIS\n"
	"    mcached [-c FILE] [-s PATH] [-d DIR] [OPTION...]\n"
	"    mcached -h | --help\n"
	"    mcached -V | --version\n"
	"\n"
	"DESCRIPTION\n"
	"    mcached holds a namespace (directories, files, symlinks and their\n"
	"    attributes) in a shared-memory segment that clients linking libmcache\n"
	"    read directly. Clients send mutations over a unix socket; the server\n"
	"    applies them at once and commits them in groups to an LMDB commit log\n"
	"    under the data directory. Statistics are served over HTTP (GET /stats,\n"
	"    /metrics, /healthz) on the admin address.\n"
	"    mcached runs in the foreground and logs to standard error.\n"
	"\n"
	"OPTIONS\n"
	;

static const char usage_more[] =
	"\n"
	"    SIZE is a number of bytes with an optional suffix K, M, G or T\n"
	"    (powers of 1024), for example 512M. BOOL is true or false (yes/no,\n"
	"    on/off, 1/0); a switch given alone means true (--sync).\n"
	"\n"
	"CONFIGURATION FILE\n"
	"    One setting per line, `name = value`, using the long option names\n"
	"    without the dashes in front (cache-size = 1G). Switches take true or\n"
	"    false (yes/no, on/off, 1/0), or stand alone to mean true (sync).\n"
	"    A value may be put in double quotes. Blank lines and lines starting\n"
	"    with # are ignored, as is text after whitespace and #. Example:\n"
	"\n"
	"        # /etc/mcache/mcached.conf\n"
	"        socket = /run/mcache/mcached.sock\n"
	"        data = /var/lib/mcache\n"
	"        cache-size = 2G\n"
	"        workers = 4\n"
	"        sync = false\n"
	"\n"
	"SIGNALS\n"
	"    SIGTERM, SIGINT\n"
	"        Stop accepting connections and requests, commit what is pending,\n"
	"        and exit with status 0. While the store fails, retry for at most\n"
	"        --shutdown-timeout seconds (plus --journal-wait-ms for a mutation\n"
	"        already waiting for room), log how many journal records and\n"
	"        batches stayed uncommitted, and exit with status 3.\n"
	"    SIGHUP\n"
	"        Re-read the command line and --config file: the log level\n"
	"        changes at once; other changed settings are logged as taking\n"
	"        effect at the next start. A file with an error changes nothing.\n"
	"\n"
	"FILES\n"
	"    " MC_DEFAULT_SOCKET "\n"
	"        Default client socket (built in; see --socket).\n"
	"    <--data>/\n"
	"        The LMDB environment (default ./var/data).\n"
	"    <socket directory>/admin.sock\n"
	"        Default admin endpoint.\n"
	"    <--shm-path>, <--shm-path>.state\n"
	"        With --shm-path: the segment, and beside it, after a clean stop,\n"
	"        what the next start needs to re-attach it (removed at start).\n"
	"\n"
	"ENVIRONMENT\n"
	"    MCACHE_SOCKET\n"
	"        Client socket when neither --socket nor the config file names one.\n"
	"\n"
	"EXIT STATUS\n"
	"    0   Stopped by SIGTERM or SIGINT after committing, or --help/--version.\n"
	"    1   The server failed to start or failed while running.\n"
	"    2   Bad command line or configuration file.\n"
	"    3   Stopped by SIGTERM or SIGINT, but changes stayed uncommitted:\n"
	"        the store kept failing for --shutdown-timeout (see the log).\n";

static int config_set(struct mcd_config *c, int row, const char *v, char *msg, size_t n);

/* Each row's default goes through config_set, as a value from the command
 * line would: the table's default is the only one. */
void config_defaults(struct mcd_config *c)
{
	char msg[128];
	memset(c, 0, sizeof(*c));
	c->socket_path = strdup(mc_socket_path(NULL));
	c->admin_addr = NULL; /* derived from socket_path by config_parse */
	for (int i = 0; i < OPT_COUNT; i++) {
		int rc = options[i].def ? config_set(c, i, options[i].def, msg, sizeof(msg)) : 0;
		assert(rc == 0 || rc == -ENOMEM); /* a default outside its own range */
		(void)rc;
	}
}

/* The options part of --help, from the table. */
static void usage_options(FILE *out)
{
	for (int i = 0; i < OPT_COUNT; i++) {
		const struct config_option *o = &options[i];
		fputs("    ", out);
		if (o->letter)
			fprintf(out, "-%c, ", o->letter);
		fprintf(out, "--%s", o->name);
		if (o->kind == CK_BOOL)
			fprintf(out, "[=%s]", o->arg);
		else if (o->arg)
			fprintf(out, "=%s", o->arg);
		fputs("\n        ", out);
		for (const char *p = o->help; *p; p++) {
			fputc(*p, out);
			if (*p == '\n')
				fputs("        ", out);
		}
		fputc('\n', out);
		if (o->kind == CK_SIZE || o->kind == CK_UINT || o->kind == CK_MODE) {
			char a[32], b[32];
			if (o->kind == CK_SIZE) {
				config_size_str(o->min, a, sizeof(a));
				config_size_str(o->max, b, sizeof(b));
			} else {
				snprintf(a, sizeof(a), o->kind == CK_MODE ? "%llo" : "%llu",
				         (unsigned long long)o->min);
				snprintf(b, sizeof(b), o->kind == CK_MODE ? "%llo" : "%llu",
				         (unsigned long long)o->max);
			}
			fprintf(out, "        Range: %s to %s.", a, b);
			if (o->def)
				fprintf(out, " Default: %s", o->def);
			fputc('\n', out);
		} else if (o->def) {
			fprintf(out, "        Default: %s\n", o->def);
		}
	}
}

void config_free(struct mcd_config *c)
{
	free(c->socket_path);
	free(c->data_dir);
	free(c->admin_addr);
	free(c->shm_path);
	c->socket_path = c->data_dir = c->admin_addr = c->shm_path = NULL;
}

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);
	if (s == NULL)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* Store x in the row's field, whatever its width. */
static void field_store(struct mcd_config *c, const struct config_option *o, uint64_t x)
{
	char *f = (char *)c + o->off;
	if (o->size == sizeof(uint64_t)) {
		uint64_t v = x;
		memcpy(f, &v, sizeof(v));
	} else if (o->size == sizeof(uint32_t)) {
		uint32_t v = (uint32_t)x;    /* unsigned, int and uint32_t fields */
		memcpy(f, &v, sizeof(v));
	} else {
		assert(o->size == sizeof(bool));
		bool v = x != 0;
		memcpy(f, &v, sizeof(v));
	}
}

/* Apply one setting of row. 0, or -EINVAL with msg set (the value's fault),
 * or -ENOMEM. v is NULL for a switch given without a value. */
static int config_set(struct mcd_config *c, int row, const char *v, char *msg, size_t n)
{
	const struct config_option *o = &options[row];
	uint64_t x;
	bool b;
	int rc;

	switch (o->kind) {
	case CK_SOCKET:
		if (v[0] == '\0' || strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			config_msgf(msg, n, "'%s' is not a usable socket path (1 to %zu bytes)", v,
			     sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
			return -EINVAL;
		}
		return set_str((char **)(void *)((char *)c + o->off), v);
	case CK_DATA:
		if (v[0] == '\0') {
			config_msgf(msg, n, "the data directory must not be empty");
			return -EINVAL;
		}
		return set_str((char **)(void *)((char *)c + o->off), v);
	case CK_PATH:
		if (strcmp(v, "none") == 0) {
			char **f = (char **)(void *)((char *)c + o->off);
			free(*f);
			*f = NULL;
			return 0;
		}
		if (v[0] != '/' || strlen(v) >= PATH_MAX - 16) {
			config_msgf(msg, n, "'%s' is not an absolute file path (or none)", v);
			return -EINVAL;
		}
		return set_str((char **)(void *)((char *)c + o->off), v);
	case CK_ADMIN:
		if (!config_admin_addr_ok(v)) {
			config_msgf(msg, n, "'%s' is not an address (use unix:PATH, HOST:PORT, "
			     "[IPV6]:PORT or none)", v);
			return -EINVAL;
		}
		return set_str((char **)(void *)((char *)c + o->off), v);
	case CK_BOOL:
		b = true;
		if (v != NULL && config_get_bool(v, &b, msg, n) < 0)
			return -EINVAL;
		field_store(c, o, b);
		return 0;
	case CK_SIZE:
		if ((rc = config_get_size(v, o->min, o->max, &x, msg, n)) < 0)
			return rc;
		field_store(c, o, x);
		return 0;
	case CK_UINT:
		if ((rc = config_get_uint(v, o->min, o->max, &x, msg, n)) < 0)
			return rc;
		field_store(c, o, x);
		return 0;
	case CK_LEVEL: {
		enum log_level lvl;
		if (log_parse_level(v, &lvl) < 0) {
			config_msgf(msg, n, "'%s' is not a log level (use error, warn, info or debug)", v);
			return -EINVAL;
		}
		field_store(c, o, (uint64_t)lvl);
		return 0;
	}
	case CK_MODE: {
		const char *p = v;
		x = 0;
		for (; *p >= '0' && *p <= '7' && x <= o->max; p++)
			x = x * 8 + (unsigned)(*p - '0');
		if (*v == '\0' || *p != '\0' || x > o->max) {
			config_msgf(msg, n, "'%s' is not an octal mode (0 to %llo)", v,
			     (unsigned long long)o->max);
			return -EINVAL;
		}
		field_store(c, o, x);
		return 0;
	}
	case CK_CONFIG:
	case CK_HELP:
	case CK_VERSION:
		break;
	}
	config_msgf(msg, n, "cannot be set here");
	return -EINVAL;
}

/* The row of a long option name, or -1. */
static int option_by_name(const char *name)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (strcmp(options[i].name, name) == 0)
			return i;
	return -1;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
	                 s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Parse one line of the file; 0 (blank or applied), -EINVAL with msg, -ENOMEM. */
static int config_line(struct mcd_config *c, char *line, char *msg, size_t n)
{
	char *s = trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	/* A comment after whitespace ends the line (outside quotes). */
	bool quoted = false;
	for (char *p = s; *p; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (*p == '#' && !quoted && (p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			break;
		}
	}
	s = trim(s);
	char *eq = strchr(s, '=');
	char *key = s, *val = NULL;
	if (eq != NULL) {
		*eq = '\0';
		val = trim(eq + 1);
		size_t vl = strlen(val);
		if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
			val[vl - 1] = '\0';
			val++;
		}
	}
	key = trim(key);
	for (char *p = key; *p; p++)
		if (*p == '_')
			*p = '-';
	int row = option_by_name(key);
	if (row < 0 || options[row].kind == CK_CONFIG || options[row].kind == CK_HELP ||
	    options[row].kind == CK_VERSION) {
		config_msgf(msg, n, "unknown setting '%s'", key);
		return -EINVAL;
	}
	if (val == NULL && long_opts[row].has_arg == required_argument) {
		config_msgf(msg, n, "expected '%s = value'", key);
		return -EINVAL;
	}
	char vmsg[512];
	int rc = config_set(c, row, val, vmsg, sizeof(vmsg));
	if (rc == -EINVAL)
		config_msgf(msg, n, "%s: %s", key, vmsg);
	return rc;
}

static int config_file(struct mcd_config *c, const char *path, FILE *err)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0;

	if (f == NULL) {
		fprintf(err, "mcached: %s: %s\n", path, strerror(errno));
		return -EINVAL;
	}
	while (getline(&line, &cap, f) >= 0) {
		char msg[600];
		lineno++;
		rc = config_line(c, line, msg, sizeof(msg));
		if (rc == -EINVAL) {
			fprintf(err, "mcached: %s:%u: %s\n", path, lineno, msg);
			goto fail;
		}
		if (rc < 0) {
			fprintf(err, "mcached: %s:%u: %s\n", path, lineno, strerror(-rc));
			goto fail;
		}
	}
	if (ferror(f)) {
		fprintf(err, "mcached: %s: %s\n", path, strerror(EIO));
		rc = -EINVAL;
		goto fail;
	}
fail:
	free(line);
	fclose(f);
	return rc == -ENOMEM ? -ENOMEM : (rc < 0 ? -EINVAL : 0);
}

/* "unix:" + dirname(socket) + "/admin.sock". */
static char *admin_default(const char *socket_path)
{
	const char *slash = strrchr(socket_path, '/');
	char *s = NULL;
	int rc;
	if (slash == NULL)
		rc = asprintf(&s, "unix:./admin.sock");
	else if (slash == socket_path)
		rc = asprintf(&s, "unix:/admin.sock");
	else
		rc = asprintf(&s, "unix:%.*s/admin.sock", (int)(slash - socket_path), socket_path);
	return rc < 0 ? NULL : s;
}

int config_parse(struct mcd_config *c, int argc, char **argv, FILE *out, FILE *err)
{
	const char *config_path = NULL;
	bool help = false, version = false, admin_given = false;
	char *entry_admin_default = NULL;
	int opt, rc;

	if (c->socket_path == NULL || c->data_dir == NULL)
		goto nomem;
	/* An admin address equal to the default for the socket we started with
	 * is still "the default" and follows a new --socket. */
	entry_admin_default = admin_default(c->socket_path);
	if (entry_admin_default == NULL)
		goto nomem;
	if (c->admin_addr != NULL && strcmp(c->admin_addr, entry_admin_default) != 0)
		admin_given = true;

	/* Pass 1: find --config, --help and --version; errors wait for pass 2. */
	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, short_opts(), long_opts, NULL)) != -1) {
		int row = opt_row(opt);
		if (row == OPT_CONFIG)
			config_path = optarg;
		else if (row == OPT_HELP)
			help = true;
		else if (row == OPT_VERSION)
			version = true;
	}
	if (help) {
		fputs(usage_text, out);
		usage_options(out);
		fputs(usage_more, out);
		rc = 1;
		goto done;
	}
	if (version) {
		fprintf(out, "mcached %s\n", MC_VERSION);
		rc = 1;
		goto done;
	}

	if (config_path != NULL) {
		char *before = c->admin_addr;
		c->admin_addr = NULL;
		rc = config_file(c, config_path, err);
		if (c->admin_addr != NULL) {
			free(before);
			admin_given = true;
		} else {
			c->admin_addr = before;
		}
		if (rc < 0)
			goto done;
	}

	/* Pass 2: apply the command line over the file. */
	optind = 0;
	while ((opt = getopt_long(argc, argv, short_opts(), long_opts, NULL)) != -1) {
		char msg[512];
		int row = opt_row(opt);
		if (opt == '?') {
			int r = opt_row(optopt);
			if (r >= 0 && long_opts[r].has_arg == no_argument)
				fprintf(err, "mcached: --%s: takes no value\n", options[r].name);
			else if (optopt > 0 && optopt < OPT_LONG)
				fprintf(err, "mcached: unknown option '-%c' (see --help)\n", optopt);
			else
				fprintf(err, "mcached: unknown option '%s' (see --help)\n",
				        argv[optind - 1]);
			rc = -EINVAL;
			goto done;
		}
		if (opt == ':') {
			/* argv[optind - 1] is the option as written. */
			fprintf(err, "mcached: %s: missing value\n", argv[optind - 1]);
			rc = -EINVAL;
			goto done;
		}
		if (row < 0 || row == OPT_CONFIG || row == OPT_HELP || row == OPT_VERSION)
			continue;
		rc = config_set(c, row, optarg, msg, sizeof(msg));
		if (rc == -EINVAL) {
			fprintf(err, "mcached: --%s: %s\n", options[row].name, msg);
			goto done;
		}
		if (rc < 0)
			goto nomem;
		if (row == OPT_ADMIN)
			admin_given = true;
	}
	if (optind < argc) {
		fprintf(err, "mcached: unexpected argument '%s' (see --help)\n", argv[optind]);
		rc = -EINVAL;
		goto done;
	}

	if (c->cache_low_pct > c->cache_high_pct) {
		fprintf(err, "mcached: --cache-low: %u is above --cache-high (%u)\n",
		        c->cache_low_pct, c->cache_high_pct);
		rc = -EINVAL;
		goto done;
	}
	if (!admin_given) {
		char *a = admin_default(c->socket_path);
		if (a == NULL)
			goto nomem;
		free(c->admin_addr);
		c->admin_addr = a;
	}
	rc = 0;
	goto done;

nomem:
	fprintf(err, "mcached: %s\n", strerror(ENOMEM));
	rc = -ENOMEM;
done:
	free(entry_admin_default);
	optind = 0;
	return rc;
}

/* Settings a running server takes on SIGHUP; the others need a restart. */
static bool reloadable(int row)
{
	return row == OPT_LOG_LEVEL || row == OPT_SLOWLOG_MS || row == OPT_SLOWLOG_LEN;
}

/* Does row's field differ between a and b? */
static bool field_differs(const struct mcd_config *a, const struct mcd_config *b, int row)
{
	const struct config_option *o = &options[row];
	const char *fa = (const char *)a + o->off, *fb = (const char *)b + o->off;
	if (o->size == 0)
		return false;
	if (o->kind == CK_SOCKET || o->kind == CK_DATA || o->kind == CK_ADMIN || o->kind == CK_PATH) {
		const char *sa, *sb;
		memcpy(&sa, fa, sizeof(sa));
		memcpy(&sb, fb, sizeof(sb));
		return strcmp(sa ? sa : "", sb ? sb : "") != 0;
	}
	return memcmp(fa, fb, o->size) != 0;
}

int config_reload(struct mcd_config *c, int argc, char **argv, FILE *err)
{
	struct mcd_config fresh;
	config_defaults(&fresh);
	FILE *out = fopen("/dev/null", "w");
	int rc = config_parse(&fresh, argc, argv, out ? out : err, err);
	if (out)
		fclose(out);
	if (rc != 0) {
		config_free(&fresh);
		return rc < 0 ? rc : -EINVAL;
	}
	for (int i = 0; i < OPT_COUNT; i++) {
		if (!field_differs(c, &fresh, i))
			continue;
		if (!reloadable(i)) {
			fprintf(err, "mcached: --%s changed; it takes effect at the next start\n",
			        options[i].name);
			continue;
		}
		memcpy((char *)c + options[i].off, (char *)&fresh + options[i].off, options[i].size);
	}
	config_free(&fresh);
	return 0;
}
