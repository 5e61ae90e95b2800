/* config.c - mcached's settings: defaults, then the config file, then the
 * command line, each validated with a one-line error naming what was wrong. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "log.h"
#include "mc_config.h"
#include "mc_socket.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

#define DEF_SOCKET MC_DEFAULT_SOCKET
#define DEF_DATA "./var/data"
#define DEF_CACHE_SIZE (256 * MiB)
#define DEF_WORKERS 2u
#define DEF_COMMIT_MS 5u
#define DEF_MAX_CONNS 1024u
#define DEF_IDLE_S 0u
#define DEF_MAX_FRAME ((uint32_t)(16 * MiB))
#define DEF_MAP_SIZE (256 * MiB)
#define DEF_RETENTION 10000u
#define DEF_ROOT_MODE 0755u
#define DEF_JOURNAL_RECORDS 1000000u
#define DEF_JOURNAL_BYTES (256 * MiB)
#define DEF_JOURNAL_WAIT_MS 1000u
#define DEF_SHUTDOWN_S 10u
#define DEF_MAX_OPS 4096u
#define DEF_MAX_REPLY ((uint32_t)(4 * MiB))
#define DEF_HELLO_S 10u
#define DEF_FRAME_S 30u
#define DEF_CONN_OUT (4 * MiB)
#define DEF_OUT_TOTAL (256 * MiB)
#define DEF_MAX_PREHELLO 64u

enum opt_id {
	OPT_SOCKET = 's',
	OPT_DATA = 'd',
	OPT_CONFIG = 'c',
	OPT_HELP = 'h',
	OPT_VERSION = 'V',
	OPT_ADMIN = 256,
	OPT_ADMIN_REMOTE,
	OPT_CACHE_SIZE,
	OPT_WORKERS,
	OPT_COMMIT_MS,
	OPT_SYNC,
	OPT_MAX_CONNS,
	OPT_IDLE,
	OPT_MAX_FRAME,
	OPT_MAP_SIZE,
	OPT_RETENTION,
	OPT_LOG_LEVEL,
	OPT_ROOT_MODE,
	OPT_JOURNAL_RECORDS,
	OPT_JOURNAL_BYTES,
	OPT_JOURNAL_WAIT,
	OPT_SHUTDOWN,
	OPT_MAX_OPS,
	OPT_MAX_REPLY,
	OPT_HELLO_S,
	OPT_FRAME_S,
	OPT_CONN_OUT,
	OPT_OUT_TOTAL,
	OPT_MAX_PREHELLO,
	/* The cache's bound (server/shrink.h). */
	OPT_CACHE_HIGH,
	OPT_CACHE_LOW,
	OPT_NEG_MAX,
	OPT_NEG_DIR_MAX,
};

static const struct option long_opts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "admin", required_argument, NULL, OPT_ADMIN },
	/* Switches take an optional =BOOL, as they do in the file. */
	{ "admin-allow-remote", optional_argument, NULL, OPT_ADMIN_REMOTE },
	{ "cache-size", required_argument, NULL, OPT_CACHE_SIZE },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "commit-interval-ms", required_argument, NULL, OPT_COMMIT_MS },
	{ "sync", optional_argument, NULL, OPT_SYNC },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONNS },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "max-frame", required_argument, NULL, OPT_MAX_FRAME },
	{ "store-map-size", required_argument, NULL, OPT_MAP_SIZE },
	{ "log-retention", required_argument, NULL, OPT_RETENTION },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "root-mode", required_argument, NULL, OPT_ROOT_MODE },
	{ "journal-max-records", required_argument, NULL, OPT_JOURNAL_RECORDS },
	{ "journal-max-bytes", required_argument, NULL, OPT_JOURNAL_BYTES },
	{ "journal-wait-ms", required_argument, NULL, OPT_JOURNAL_WAIT },
	{ "shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN },
	{ "max-ops", required_argument, NULL, OPT_MAX_OPS },
	{ "max-reply", required_argument, NULL, OPT_MAX_REPLY },
	{ "hello-timeout", required_argument, NULL, OPT_HELLO_S },
	{ "frame-timeout", required_argument, NULL, OPT_FRAME_S },
	{ "conn-output-max", required_argument, NULL, OPT_CONN_OUT },
	{ "output-max", required_argument, NULL, OPT_OUT_TOTAL },
	{ "max-prehello", required_argument, NULL, OPT_MAX_PREHELLO },
	{ "cache-high", required_argument, NULL, OPT_CACHE_HIGH },
	{ "cache-low", required_argument, NULL, OPT_CACHE_LOW },
	{ "negative-max", required_argument, NULL, OPT_NEG_MAX },
	{ "negative-dir-max", required_argument, NULL, OPT_NEG_DIR_MAX },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* '+': stop at the first operand (reported as an error); ':': report a
 * missing argument as ':' rather than '?'. */
static const char short_opts[] = "+:s:d:c:hV";

/* Ranges, enforced for the command line and the file alike. */
#define MIN_CACHE_SIZE (1 * MiB)
#define MAX_CACHE_SIZE (64 * GiB)
#define MIN_WORKERS 1u
#define MAX_WORKERS 64u
#define MAX_COMMIT_MS 60000u
#define MIN_MAX_CONNS 1u
#define MAX_MAX_CONNS 1048576u
#define MAX_IDLE_S 604800u
#define MIN_MAX_FRAME (4 * KiB)
#define MAX_MAX_FRAME (256 * MiB)
#define MIN_MAP_SIZE (1 * MiB)
#define MAX_MAP_SIZE (16 * TiB)
#define MIN_RETENTION 1u
#define MAX_RETENTION 1000000000u
#define MIN_JOURNAL_RECORDS 1u
#define MAX_JOURNAL_RECORDS 1000000000u
#define MIN_JOURNAL_BYTES (64 * KiB)
#define MAX_JOURNAL_BYTES (64 * GiB)
#define MAX_JOURNAL_WAIT_MS 60000u
#define MAX_SHUTDOWN_S 3600u
#define MIN_MAX_OPS 1u
#define MIN_MAX_REPLY (64 * KiB)
#define MAX_MAX_REPLY (16 * MiB)
#define MAX_MAX_OPS 1048576u
#define MIN_TIMEOUT_S 1u
#define MAX_TIMEOUT_S 3600u
#define MIN_CONN_OUT (64 * KiB)
#define MAX_CONN_OUT (1 * GiB)
#define MIN_OUT_TOTAL (1 * MiB)
#define MAX_OUT_TOTAL (64 * GiB)

/* --help, in three parts: ISO C compilers need not take literals longer
 * than 4095 bytes. */
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
	"    -s, --socket=PATH\n"
	"        Unix socket clients connect to (mode 0660). Default: $MCACHE_SOCKET\n"
	"        when set, else " DEF_SOCKET ", the same socket\n"
	"        libmcache and mcachectl connect to when none is named.\n"
	"    -d, --data=DIR\n"
	"        Directory of the LMDB commit log and tables. Default: " DEF_DATA "\n"
	"    --admin=ADDR\n"
	"        Admin HTTP endpoint: unix:PATH, HOST:PORT or [IPV6]:PORT (port 0\n"
	"        picks a free port), or none to disable it.\n"
	"        Default: unix:<directory of --socket>/admin.sock\n"
	"    --admin-allow-remote[=BOOL]\n"
	"        Allow --admin to listen on a host that is not a loopback address.\n"
	"        Default: off\n"
	"    --cache-size=SIZE\n"
	"        Size of the shared-memory segment, 1M to 64G. Default: 256M\n"
	"    --workers=N\n"
	"        RPC worker threads, 1 to 64. Default: 2\n"
	"    --commit-interval-ms=MS\n"
	"        Longest time a mutation waits for its group commit, 0 to 60000;\n"
	"        0 commits right after each batch of mutations. Default: 5\n"
	"    --sync[=BOOL]\n"
	"        Synchronous durability: reply to a mutation only once it is\n"
	"        committed. Default: off\n"
	"    --max-connections=N\n"
	"        Client connections open at once, 1 to 1048576. Default: 1024\n"
	"    --idle-timeout=SECONDS\n"
	"        Close client connections idle this long, 0 (never) to 604800.\n"
	"        Default: 0\n"
	"    --max-frame=SIZE\n"
	"        Largest request frame accepted, 4K to 256M. Default: 16M\n"
	"    --max-reply=SIZE\n"
	"        Largest reply, 64K to 16M: ops run in order while their results\n"
	"        fit; the one that does not fit and every later one are answered\n"
	"        EMSGSIZE, and the later ones do not run. Default: 4M\n"
	"    --max-ops=N\n"
	"        Operations in one request, 1 to 1048576; a request with more is\n"
	"        refused whole (E2BIG, none run) and the connection closed.\n"
	"        Default: 4096\n"
	"    --hello-timeout=SECONDS\n"
	"        Close a connection that has not completed its Hello this long\n"
	"        after connecting, 1 to 3600. Default: 10\n"
	"    --frame-timeout=SECONDS\n"
	"        Close a connection whose request frame, once started, is not\n"
	"        complete within this time, 1 to 3600. Default: 30\n"
	"    --max-prehello=N\n"
	"        Connections that have not said Hello yet, 1 to 1048576; a new\n"
	"        connection beyond it (or beyond --max-connections) closes the\n"
	"        oldest of them. Default: 64\n"
	"    --conn-output-max=SIZE\n"
	"        Unsent reply bytes per connection above which the server stops\n"
	"        reading that client until half have drained, 64K to 1G.\n"
	"        Default: 4M\n"
	"    --output-max=SIZE\n"
	"        Unsent reply bytes across all connections, 1M to 64G; above it,\n"
	"        clients that are not reading their replies are disconnected.\n"
	"        Default: 256M\n";

static const char usage_text2[] =
	"    --store-map-size=SIZE\n"
	"        Initial LMDB map size (it grows when full), 1M to 16T.\n"
	"        Default: 256M\n"
	"    --log-retention=N\n"
	"        Committed batches kept in the commit log, 1 to 1000000000.\n"
	"        Default: 10000\n"
	"    --log-level=LEVEL\n"
	"        One of error, warn, info, debug. Default: info\n"
	"    --root-mode=MODE\n"
	"        Octal permission bits of the root directory of a new namespace,\n"
	"        0 to 7777. Default: 0755\n"
	"    --journal-max-records=N\n"
	"        Bound on the journal: changes applied but not committed yet, in\n"
	"        records (a create adds two or three), 1 to 1000000000. Half way\n"
	"        to it a commit starts at once; past it a mutation waits\n"
	"        --journal-wait-ms for a commit to make room, then fails with\n"
	"        ENOSPC and changes nothing. Default: 1000000\n"
	"    --journal-max-bytes=SIZE\n"
	"        The same bound in journal bytes, 64K to 64G. Default: 256M\n"
	"    --journal-wait-ms=MS\n"
	"        How long a mutation waits for room in a full journal, 0 to\n"
	"        60000; after a wait that timed out, mutations fail at once\n"
	"        until a commit succeeds. Default: 1000\n"
	"    --shutdown-timeout=SECONDS\n"
	"        How long SIGTERM or SIGINT keeps trying to commit what is\n"
	"        pending while the store fails, 0 to 3600; then replies still\n"
	"        waiting for durability get EIO and the server exits with\n"
	"        status 3. Default: 10\n"
	"    --cache-high=PCT, --cache-low=PCT\n"
	"        Shrinker watermarks, percent of --cache-size (1 to 100, low not\n"
	"        above high): above the high mark clean entries are evicted down\n"
	"        to the low mark. Defaults: 90 and 80\n"
	"    --negative-max=N, --negative-dir-max=N\n"
	"        Cached negative entries at most in total (0: an eighth of what\n"
	"        the cache holds) and per directory. Defaults: 0 and 256\n"
	"    -c, --config=FILE\n"
	"        Read settings from FILE first; options on the command line win.\n"
	"    -h, --help\n"
	"        Print this text and exit.\n"
	"    -V, --version\n"
	"        Print the version and exit.\n";

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
	"\n"
	"FILES\n"
	"    " DEF_SOCKET "\n"
	"        Default client socket (built in; see --socket).\n"
	"    " DEF_DATA "/\n"
	"        Default data directory (LMDB environment).\n"
	"    <socket directory>/admin.sock\n"
	"        Default admin endpoint.\n"
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

void config_defaults(struct mcd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->socket_path = strdup(mc_socket_path(NULL));
	c->data_dir = strdup(DEF_DATA);
	c->admin_addr = NULL; /* derived from socket_path by config_parse */
	c->admin_remote = false;
	c->cache_size = DEF_CACHE_SIZE;
	c->workers = DEF_WORKERS;
	c->commit_interval_ms = DEF_COMMIT_MS;
	c->sync = false;
	c->max_conns = DEF_MAX_CONNS;
	c->idle_timeout_s = DEF_IDLE_S;
	c->max_frame = DEF_MAX_FRAME;
	c->map_size = DEF_MAP_SIZE;
	c->log_retention = DEF_RETENTION;
	c->log_level = LOG_LVL_INFO;
	c->root_mode = DEF_ROOT_MODE;
	c->journal_max_records = DEF_JOURNAL_RECORDS;
	c->journal_max_bytes = DEF_JOURNAL_BYTES;
	c->journal_wait_ms = DEF_JOURNAL_WAIT_MS;
	c->shutdown_timeout_s = DEF_SHUTDOWN_S;
	c->max_ops = DEF_MAX_OPS;
	c->max_reply = DEF_MAX_REPLY;
	c->hello_timeout_s = DEF_HELLO_S;
	c->frame_timeout_s = DEF_FRAME_S;
	c->conn_output_max = DEF_CONN_OUT;
	c->output_max = DEF_OUT_TOTAL;
	c->max_prehello = DEF_MAX_PREHELLO;
	c->cache_high_pct = 90;
	c->cache_low_pct = 80;
	c->neg_max = 0;
	c->neg_dir_max = 256;
}

void config_free(struct mcd_config *c)
{
	free(c->socket_path);
	free(c->data_dir);
	free(c->admin_addr);
	c->socket_path = c->data_dir = c->admin_addr = NULL;
}

/* Decimal digits only (no sign, no blanks): -EINVAL, -ERANGE. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (*s == '\0')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*s != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

int config_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0': break;
	case 'k': case 'K': mult = KiB; p++; break;
	case 'm': case 'M': mult = MiB; p++; break;
	case 'g': case 'G': mult = GiB; p++; break;
	case 't': case 'T': mult = TiB; p++; break;
	default: return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

/* Render a byte count the way it is best written (256M, 4K, 1000). */
static void size_str(uint64_t v, char *buf, size_t n)
{
	static const struct { uint64_t m; char c; } u[] = {
		{ TiB, 'T' }, { GiB, 'G' }, { MiB, 'M' }, { KiB, 'K' },
	};
	for (unsigned i = 0; i < 4; i++) {
		if (v >= u[i].m && v % u[i].m == 0) {
			snprintf(buf, n, "%llu%c", (unsigned long long)(v / u[i].m), u[i].c);
			return;
		}
	}
	snprintf(buf, n, "%llu", (unsigned long long)v);
}

static void msgf(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msgf(char *msg, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, n, fmt, ap);
	va_end(ap);
}

static int get_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *msg, size_t n)
{
	uint64_t x;
	int rc = config_parse_size(v, &x);
	if (rc == 0 && (x < min || x > max))
		rc = -ERANGE;
	if (rc == -EINVAL) {
		msgf(msg, n, "'%s' is not a size (use a number with K, M, G or T)", v);
		return -EINVAL;
	}
	if (rc < 0) {
		char a[32], b[32];
		size_str(min, a, sizeof(a));
		size_str(max, b, sizeof(b));
		msgf(msg, n, "'%s' is out of range (%s..%s)", v, a, b);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int get_uint(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *msg, size_t n)
{
	uint64_t x;
	int rc = parse_u64(v, &x);
	if (rc == -EINVAL) {
		msgf(msg, n, "'%s' is not a number", v);
		return -EINVAL;
	}
	if (rc < 0 || x < min || x > max) {
		msgf(msg, n, "'%s' is out of range (%llu..%llu)", v, (unsigned long long)min,
		     (unsigned long long)max);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int get_bool(const char *v, bool *out, char *msg, size_t n)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	msgf(msg, n, "'%s' is not a boolean (use true or false)", v);
	return -EINVAL;
}

/* A light check of an admin address; admin_start does the real one. */
static bool admin_addr_ok(const char *v)
{
	if (strcmp(v, "none") == 0)
		return true;
	if (strncmp(v, "unix:", 5) == 0)
		return v[5] != '\0' && strlen(v + 5) < sizeof(((struct sockaddr_un *)0)->sun_path);
	const char *colon = strrchr(v, ':');
	if (colon == NULL || colon == v)
		return false;
	if (v[0] == '[' && colon[-1] != ']')
		return false;
	uint64_t port;
	return parse_u64(colon + 1, &port) == 0 && port <= 65535;
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

/* Apply one setting. 0, or -EINVAL with msg set (the value's fault), or
 * -ENOMEM. v is NULL for a switch given without a value. */
static int config_set(struct mcd_config *c, int id, const char *v, char *msg, size_t n)
{
	uint64_t x;
	bool b;
	int rc;

	if ((id == OPT_SYNC || id == OPT_ADMIN_REMOTE) && v != NULL) {
		if (get_bool(v, &b, msg, n) < 0)
			return -EINVAL;
	} else {
		b = true;
	}
	switch (id) {
	case OPT_SOCKET:
		if (v[0] == '\0' || strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			msgf(msg, n, "'%s' is not a usable socket path (1 to %zu bytes)", v,
			     sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
			return -EINVAL;
		}
		return set_str(&c->socket_path, v);
	case OPT_DATA:
		if (v[0] == '\0') {
			msgf(msg, n, "the data directory must not be empty");
			return -EINVAL;
		}
		return set_str(&c->data_dir, v);
	case OPT_ADMIN:
		if (!admin_addr_ok(v)) {
			msgf(msg, n, "'%s' is not an address (use unix:PATH, HOST:PORT, "
			     "[IPV6]:PORT or none)", v);
			return -EINVAL;
		}
		return set_str(&c->admin_addr, v);
	case OPT_ADMIN_REMOTE:
		c->admin_remote = b;
		return 0;
	case OPT_SYNC:
		c->sync = b;
		return 0;
	case OPT_CACHE_SIZE:
		if ((rc = get_size(v, MIN_CACHE_SIZE, MAX_CACHE_SIZE, &x, msg, n)) < 0)
			return rc;
		c->cache_size = x;
		return 0;
	case OPT_MAX_FRAME:
		if ((rc = get_size(v, MIN_MAX_FRAME, MAX_MAX_FRAME, &x, msg, n)) < 0)
			return rc;
		c->max_frame = (uint32_t)x;
		return 0;
	case OPT_MAP_SIZE:
		if ((rc = get_size(v, MIN_MAP_SIZE, MAX_MAP_SIZE, &x, msg, n)) < 0)
			return rc;
		c->map_size = x;
		return 0;
	case OPT_WORKERS:
		if ((rc = get_uint(v, MIN_WORKERS, MAX_WORKERS, &x, msg, n)) < 0)
			return rc;
		c->workers = (unsigned)x;
		return 0;
	case OPT_COMMIT_MS:
		if ((rc = get_uint(v, 0, MAX_COMMIT_MS, &x, msg, n)) < 0)
			return rc;
		c->commit_interval_ms = (unsigned)x;
		return 0;
	case OPT_MAX_CONNS:
		if ((rc = get_uint(v, MIN_MAX_CONNS, MAX_MAX_CONNS, &x, msg, n)) < 0)
			return rc;
		c->max_conns = (unsigned)x;
		return 0;
	case OPT_IDLE:
		if ((rc = get_uint(v, 0, MAX_IDLE_S, &x, msg, n)) < 0)
			return rc;
		c->idle_timeout_s = (unsigned)x;
		return 0;
	case OPT_MAX_REPLY:
		if ((rc = get_size(v, MIN_MAX_REPLY, MAX_MAX_REPLY, &x, msg, n)) < 0)
			return rc;
		c->max_reply = (uint32_t)x;
		return 0;
	case OPT_MAX_OPS:
		if ((rc = get_uint(v, MIN_MAX_OPS, MAX_MAX_OPS, &x, msg, n)) < 0)
			return rc;
		c->max_ops = (unsigned)x;
		return 0;
	case OPT_HELLO_S:
		if ((rc = get_uint(v, MIN_TIMEOUT_S, MAX_TIMEOUT_S, &x, msg, n)) < 0)
			return rc;
		c->hello_timeout_s = (unsigned)x;
		return 0;
	case OPT_FRAME_S:
		if ((rc = get_uint(v, MIN_TIMEOUT_S, MAX_TIMEOUT_S, &x, msg, n)) < 0)
			return rc;
		c->frame_timeout_s = (unsigned)x;
		return 0;
	case OPT_MAX_PREHELLO:
		if ((rc = get_uint(v, MIN_MAX_CONNS, MAX_MAX_CONNS, &x, msg, n)) < 0)
			return rc;
		c->max_prehello = (unsigned)x;
		return 0;
	case OPT_CONN_OUT:
		if ((rc = get_size(v, MIN_CONN_OUT, MAX_CONN_OUT, &x, msg, n)) < 0)
			return rc;
		c->conn_output_max = x;
		return 0;
	case OPT_OUT_TOTAL:
		if ((rc = get_size(v, MIN_OUT_TOTAL, MAX_OUT_TOTAL, &x, msg, n)) < 0)
			return rc;
		c->output_max = x;
		return 0;
	case OPT_RETENTION:
		if ((rc = get_uint(v, MIN_RETENTION, MAX_RETENTION, &x, msg, n)) < 0)
			return rc;
		c->log_retention = x;
		return 0;
	case OPT_JOURNAL_RECORDS:
		if ((rc = get_uint(v, MIN_JOURNAL_RECORDS, MAX_JOURNAL_RECORDS, &x, msg, n)) < 0)
			return rc;
		c->journal_max_records = x;
		return 0;
	case OPT_JOURNAL_BYTES:
		if ((rc = get_size(v, MIN_JOURNAL_BYTES, MAX_JOURNAL_BYTES, &x, msg, n)) < 0)
			return rc;
		c->journal_max_bytes = x;
		return 0;
	case OPT_JOURNAL_WAIT:
		if ((rc = get_uint(v, 0, MAX_JOURNAL_WAIT_MS, &x, msg, n)) < 0)
			return rc;
		c->journal_wait_ms = (unsigned)x;
		return 0;
	case OPT_SHUTDOWN:
		if ((rc = get_uint(v, 0, MAX_SHUTDOWN_S, &x, msg, n)) < 0)
			return rc;
		c->shutdown_timeout_s = (unsigned)x;
		return 0;
	case OPT_CACHE_HIGH:
	case OPT_CACHE_LOW:
		if ((rc = get_uint(v, 1, 100, &x, msg, n)) < 0)
			return rc;
		*(id == OPT_CACHE_HIGH ? &c->cache_high_pct : &c->cache_low_pct) = (unsigned)x;
		return 0;
	case OPT_NEG_MAX:
		if ((rc = get_uint(v, 0, UINT32_MAX, &x, msg, n)) < 0)
			return rc;
		c->neg_max = x;
		return 0;
	case OPT_NEG_DIR_MAX:
		if ((rc = get_uint(v, 1, UINT32_MAX, &x, msg, n)) < 0)
			return rc;
		c->neg_dir_max = (uint32_t)x;
		return 0;
	case OPT_LOG_LEVEL: {
		enum log_level lvl;
		if (log_parse_level(v, &lvl) < 0) {
			msgf(msg, n, "'%s' is not a log level (use error, warn, info or debug)", v);
			return -EINVAL;
		}
		c->log_level = (int)lvl;
		return 0;
	}
	case OPT_ROOT_MODE: {
		const char *p = v;
		x = 0;
		for (; *p >= '0' && *p <= '7' && x <= 07777; p++)
			x = x * 8 + (unsigned)(*p - '0');
		if (*v == '\0' || *p != '\0' || x > 07777) {
			msgf(msg, n, "'%s' is not an octal mode (0 to 7777)", v);
			return -EINVAL;
		}
		c->root_mode = (uint32_t)x;
		return 0;
	}
	default:
		msgf(msg, n, "cannot be set here");
		return -EINVAL;
	}
}

static const struct option *option_by_name(const char *name)
{
	for (const struct option *o = long_opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static const struct option *option_by_id(int id)
{
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == id)
			return o;
	return NULL;
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
	const struct option *o = option_by_name(key);
	if (o == NULL || o->val == OPT_CONFIG || o->val == OPT_HELP || o->val == OPT_VERSION) {
		msgf(msg, n, "unknown setting '%s'", key);
		return -EINVAL;
	}
	if (val == NULL && o->has_arg == required_argument) {
		msgf(msg, n, "expected '%s = value'", key);
		return -EINVAL;
	}
	char vmsg[512];
	int rc = config_set(c, o->val, val, vmsg, sizeof(vmsg));
	if (rc == -EINVAL)
		msgf(msg, n, "%s: %s", key, vmsg);
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
	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		if (opt == OPT_CONFIG)
			config_path = optarg;
		else if (opt == OPT_HELP)
			help = true;
		else if (opt == OPT_VERSION)
			version = true;
	}
	if (help) {
		fputs(usage_text, out);
		fputs(usage_text2, out);
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
	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		char msg[512];
		const struct option *o;
		switch (opt) {
		case OPT_CONFIG:
		case OPT_HELP:
		case OPT_VERSION:
			continue;
		case '?':
			o = option_by_id(optopt);
			if (optopt != 0 && o != NULL && o->has_arg == no_argument)
				fprintf(err, "mcached: --%s: takes no value\n", o->name);
			else if (optopt > 0 && optopt < 256)
				fprintf(err, "mcached: unknown option '-%c' (see --help)\n", optopt);
			else
				fprintf(err, "mcached: unknown option '%s' (see --help)\n",
				        argv[optind - 1]);
			rc = -EINVAL;
			goto done;
		case ':':
			/* argv[optind - 1] is the option as written. */
			fprintf(err, "mcached: %s: missing value\n", argv[optind - 1]);
			rc = -EINVAL;
			goto done;
		default:
			break;
		}
		o = option_by_id(opt);
		rc = config_set(c, opt, o && o->has_arg == no_argument ? NULL : optarg, msg,
		                sizeof(msg));
		if (rc == -EINVAL) {
			fprintf(err, "mcached: --%s: %s\n", o ? o->name : "?", msg);
			goto done;
		}
		if (rc < 0)
			goto nomem;
		if (opt == OPT_ADMIN)
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
