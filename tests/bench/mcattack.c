/* mcattack.c - attacks on a real mcached over its local unix socket, each
 * bounded in time, while a well-behaved client measures its latencies: the
 * server's peak memory over idle under each attack and the well-behaved
 * client's p99 latencies against the same without attack, in one run.
 *
 * Attacks (each runs --conns attacking connections for --seconds):
 *   amplification  requests of many OP_READLINK (4000-byte target) or
 *                  OP_READDIR (2000 entries) ops in one small frame; the
 *                  attacker reads its replies and sends again
 *   slow-reader    pipelined readdir requests, replies never read
 *   prehello       connections that never say Hello (new ones all the
 *                  time) plus connections holding a half-sent 16 MB frame
 *
 * Each attack gets a fresh server (and so does the run without attack).
 * It runs alone for --seconds, which gives the memory figure: the
 * server's VmHWM minus its VmRSS when the attack started (the peak is reset
 * through /proc/PID/clear_refs first); then for --seconds more while the
 * well-behaved client measures. A benchmark, not a test: it prints figures
 * and never fails on them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "mcache.h"

#define MAX_CONNS 64
#define LAT_MAX 2000000

static const char *mcached_path;
static double seconds = 3;
static unsigned nconns = 4;
static unsigned attack_ops = 4096;      /* readlinks a request; readdirs: a quarter */
static char dir[64], sock_path[100];
static pid_t srv_pid;

static _Atomic bool attack_stop;
static _Atomic uint64_t attack_requests;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "mcattack: %s: %s\n", what, strerror(errno));
	if (srv_pid > 0)
		kill(srv_pid, SIGKILL);
	exit(1);
}

/* ---- the server ------------------------------------------------------------ */

static int connect_sock(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void server_start(char **extra, int nextra)
{
	char data[100], log[100];
	snprintf(dir, sizeof(dir), "/tmp/mcattack-XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(sock_path, sizeof(sock_path), "%s/mcached.sock", dir);
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(log, sizeof(log), "%s/mcached.log", dir);
	srv_pid = fork();
	if (srv_pid < 0)
		die("fork");
	if (srv_pid == 0) {
		char *argv[64];
		int n = 0;
		argv[n++] = (char *)mcached_path;
		argv[n++] = "--socket";
		argv[n++] = sock_path;
		argv[n++] = "--data";
		argv[n++] = data;
		argv[n++] = "--admin";
		argv[n++] = "none";
		for (int i = 0; i < nextra && n < 62; i++)
			argv[n++] = extra[i];
		argv[n] = NULL;
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
			close(fd);
		}
		execv(mcached_path, argv);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		int fd = connect_sock();
		if (fd >= 0) {
			close(fd);
			return;
		}
		usleep(10000);
	}
	errno = ETIMEDOUT;
	die("mcached did not start");
}

static void server_stop(void)
{
	char cmd[400];
	kill(srv_pid, SIGTERM);
	waitpid(srv_pid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "mcattack: could not remove %s\n", dir);
}

/* A field of /proc/PID/status, in bytes. */
static uint64_t proc_status(const char *field)
{
	char path[64], line[256];
	unsigned long kb = 0;
	size_t fl = strlen(field);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)srv_pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			kb = strtoul(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* Reset the peak to the current RSS; the RSS then. */
static uint64_t hwm_reset(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)srv_pid);
	FILE *f = fopen(path, "we");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
	return proc_status("VmRSS");
}

/* ---- raw protocol ------------------------------------------------------------ */

static int send_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pf = { .fd = fd, .events = POLLOUT };
				if (poll(&pf, 1, 100) <= 0 && atomic_load(&attack_stop))
					return -1;
				continue;
			}
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_req(int fd, Mcache__Request *req)
{
	uint8_t *buf;
	size_t len;
	if (frame_pack_request(req, SIZE_MAX, &buf, &len) < 0)
		return -1;
	int rc = send_all(fd, buf, len);
	free(buf);
	return rc;
}

/* Read and drop one reply; -1 when the server closed or nothing came. */
static int recv_drop(int fd)
{
	uint8_t *p;
	size_t len;
	if (frame_read(fd, MC_FRAME_MAX, &p, &len, NULL) < 0)
		return -1;
	free(p);
	return 0;
}

static int raw_hello(void)
{
	int fd = connect_sock();
	if (fd < 0)
		return -1;
	struct timeval tv = { 2, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	Mcache__Hello h = MCACHE__HELLO__INIT;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	h.version = MC_PROTO_VERSION;
	req.id = 1;
	req.hello = &h;
	uint8_t *p;
	size_t len;
	int pfd = -1;
	if (send_req(fd, &req) < 0 || frame_read(fd, MC_FRAME_MAX, &p, &len, &pfd) < 0) {
		close(fd);
		return -1;
	}
	if (pfd >= 0)
		close(pfd);
	free(p);
	return fd;
}

static uint64_t raw_opendir(int fd, const char *path)
{
	Mcache__Op op = MCACHE__OP__INIT, *ops[1] = { &op };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	op.code = MCACHE__OP_CODE__OP_OPEN;
	op.path.data = (uint8_t *)path;
	op.path.len = strlen(path);
	op.flags = O_RDONLY | O_DIRECTORY;
	req.id = 2;
	req.n_ops = 1;
	req.ops = ops;
	uint8_t *p;
	size_t len;
	uint64_t h = 0;
	if (send_req(fd, &req) == 0 && frame_read(fd, MC_FRAME_MAX, &p, &len, NULL) == 0) {
		Mcache__Response *rsp = mcache__response__unpack(NULL, len, p);
		if (rsp && rsp->n_results == 1)
			h = rsp->results[0]->handle;
		if (rsp)
			mcache__response__free_unpacked(rsp, NULL);
		free(p);
	}
	return h;
}

/* One request of n copies of op. */
static int send_many(int fd, Mcache__Op *op, size_t n)
{
	Mcache__Op **ops = malloc(n * sizeof(*ops));
	if (!ops)
		return -1;
	for (size_t i = 0; i < n; i++)
		ops[i] = op;
	Mcache__Request req = MCACHE__REQUEST__INIT;
	req.id = 3;
	req.n_ops = n;
	req.ops = ops;
	int rc = send_req(fd, &req);
	free(ops);
	return rc;
}

/* ---- attacks ------------------------------------------------------------------ */

static void *attack_amplify(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	int fd = raw_hello();
	if (fd < 0)
		return NULL;
	struct timeval tv = { 10, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	uint64_t h = raw_opendir(fd, "/big");
	Mcache__Op rl = MCACHE__OP__INIT, rd = MCACHE__OP__INIT;
	rl.code = MCACHE__OP_CODE__OP_READLINK;
	rl.path.data = (uint8_t *)"/link";
	rl.path.len = 5;
	rd.code = MCACHE__OP_CODE__OP_READDIR;
	rd.handle = h;
	rd.count = 8192;
	for (unsigned i = k; !atomic_load(&attack_stop); i++) {
		/* --ops readlinks (4,096: a 40 KB frame) or a quarter as many
		 * readdirs (1,024: 5 KB). */
		int rc = i % 2 ? send_many(fd, &rl, attack_ops)
		               : send_many(fd, &rd, attack_ops / 4 ? attack_ops / 4 : 1);
		if (rc < 0 || recv_drop(fd) < 0) {
			close(fd);
			fd = raw_hello();       /* refused (E2BIG) or disconnected: again */
			if (fd < 0)
				return NULL;
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			rd.handle = raw_opendir(fd, "/big");
			continue;
		}
		atomic_fetch_add(&attack_requests, 1);
	}
	close(fd);
	return NULL;
}

static void *attack_slow_reader(void *arg)
{
	(void)arg;
	int fd = raw_hello();
	if (fd < 0)
		return NULL;
	Mcache__Op rd = MCACHE__OP__INIT, *ops[1] = { &rd };
	Mcache__Request req = MCACHE__REQUEST__INIT;
	rd.code = MCACHE__OP_CODE__OP_READDIR;
	rd.handle = raw_opendir(fd, "/big");
	rd.count = 8192;
	req.n_ops = 1;
	req.ops = ops;
	uint8_t *one, *buf;
	size_t len1;
	if (frame_pack_request(&req, SIZE_MAX, &one, &len1) < 0)
		return NULL;
	buf = malloc(64 * len1);
	for (int i = 0; buf && i < 64; i++)
		memcpy(buf + (size_t)i * len1, one, len1);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (buf && !atomic_load(&attack_stop)) {
		ssize_t n = send(fd, buf, 64 * len1, MSG_NOSIGNAL);
		if (n > 0) {
			atomic_fetch_add(&attack_requests, (uint64_t)n / len1);
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			break;                  /* disconnected */
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		poll(&pf, 1, 100);
	}
	while (!atomic_load(&attack_stop))
		usleep(10000);
	free(one);
	free(buf);
	close(fd);
	return NULL;
}

static void *attack_prehello(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	int fds[256], n = 0;
	if (k % 2 == 0) {
		/* A half-sent maximal frame, then silence. */
		int fd = raw_hello();
		if (fd < 0)
			return NULL;
		size_t half = 8u << 20;
		uint8_t *p = calloc(1, 4 + half);
		if (p) {
			frame_put_len(p, MC_FRAME_MAX);
			send_all(fd, p, 4 + half);
			atomic_fetch_add(&attack_requests, 1);
			free(p);
		}
		while (!atomic_load(&attack_stop))
			usleep(10000);
		close(fd);
		return NULL;
	}
	/* Connections that never say Hello, a new one every millisecond. */
	while (!atomic_load(&attack_stop)) {
		if (n == 256) {
			close(fds[0]);
			memmove(fds, fds + 1, sizeof(int) * 255);
			n--;
		}
		int fd = connect_sock();
		if (fd >= 0) {
			fds[n++] = fd;
			atomic_fetch_add(&attack_requests, 1);
		}
		usleep(1000);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return NULL;
}

/* ---- the well-behaved client ------------------------------------------------ */

enum { L_STAT, L_CHMOD, L_CREATE, L_KINDS };
static const char *const lat_names[L_KINDS] = { "stat (local)", "chmod (RPC)", "create (RPC)" };

struct figures {
	const char *name;
	double p99_us[L_KINDS];
	uint64_t samples;
	uint64_t errors;
	uint64_t attack_reqs;
	double mem_mib;              /* peak RSS over idle, MiB; < 0: none */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t *lat[L_KINDS];

static void measure(struct figures *fg, unsigned run)
{
	mc_client *c = mc_connect(sock_path);
	size_t n = 0;
	if (!c) {
		fg->errors++;
		return;
	}
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	struct stat st;
	char p[96];
	while (now_ns() < end && n < LAT_MAX) {
		uint64_t t0 = now_ns();
		if (mc_stat(c, "/good/a/b/c", &st) < 0)
			fg->errors++;
		uint64_t t1 = now_ns();
		if (mc_chmod(c, "/good/a/b/c", n % 2 ? 0644 : 0600) < 0)
			fg->errors++;
		uint64_t t2 = now_ns();
		snprintf(p, sizeof(p), "/good/f%u.%zu", run, n);
		int fd = mc_open(c, p, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || mc_close(c, fd) < 0)
			fg->errors++;
		uint64_t t3 = now_ns();
		lat[L_STAT][n] = t1 - t0;
		lat[L_CHMOD][n] = t2 - t1;
		lat[L_CREATE][n] = t3 - t2;
		n++;
		if (fg->errors > 100)
			break;              /* the connection is gone */
	}
	mc_disconnect(c);
	fg->samples = n;
	for (int k = 0; k < L_KINDS && n > 0; k++) {
		qsort(lat[k], n, sizeof(uint64_t), cmp_u64);
		fg->p99_us[k] = (double)lat[k][(n * 99) / 100] / 1000.0;
	}
}

static void run_attack(struct figures *fg, void *(*fn)(void *), unsigned run)
{
	pthread_t th[MAX_CONNS];
	atomic_store(&attack_stop, false);
	atomic_store(&attack_requests, 0);
	uint64_t idle = hwm_reset();
	for (unsigned i = 0; fn && i < nconns; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i) != 0)
			die("pthread_create");
	/* The attack alone first: the memory figure is the attack's only (the
	 * well-behaved client's creates grow the segment). */
	usleep((useconds_t)(seconds * 1e6));
	uint64_t hwm = proc_status("VmHWM");
	fg->mem_mib = hwm > idle ? (double)(hwm - idle) / (1 << 20) : 0;
	measure(fg, run);
	atomic_store(&attack_stop, true);
	for (unsigned i = 0; fn && i < nconns; i++)
		pthread_join(th[i], NULL);
	fg->attack_reqs = atomic_load(&attack_requests);
	usleep(200 * 1000);                 /* let the server settle */
}

static void setup_namespace(void)
{
	mc_client *c = mc_connect(sock_path);
	if (!c)
		die("mc_connect");
	char target[4001];
	memset(target, 't', 4000);
	target[4000] = 0;
	if (mc_mkdir(c, "/good", 0755) < 0 || mc_mkdir(c, "/good/a", 0755) < 0 ||
	    mc_mkdir(c, "/good/a/b", 0755) < 0 || mc_mkdir(c, "/big", 0755) < 0 ||
	    mc_symlink(c, target, "/link") < 0)
		die("set-up");
	int fd = mc_open(c, "/good/a/b/c", O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || mc_close(c, fd) < 0)
		die("set-up");
	mc_batch *b = mc_batch_new(c);
	for (int i = 0; b && i < 2000; i++) {
		char p[96];
		snprintf(p, sizeof(p), "/big/%036d-entry", i);
		mc_batch_create(b, p, 0644);
		if ((i + 1) % 500 == 0 && mc_batch_run(b) < 0)
			die("set-up batch");
	}
	mc_batch_free(b);
	mc_disconnect(c);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: mcattack --mcached PATH [--seconds S] [--conns N] [--ops N]\n"
	        "                [-- MCACHED-OPTION...]\n"
	        "Starts PATH on a temporary unix socket, then for each attack (none,\n"
	        "amplification, slow-reader, prehello) runs N attacking connections while a\n"
	        "well-behaved client measures p99 latencies for S seconds; prints the server's\n"
	        "peak RSS over idle and the latencies with their ratio to the run without\n"
	        "attack. An amplification request carries --ops readlinks or a quarter as\n"
	        "many readdirs. Defaults: --seconds 3, --conns 4 (at most %d), --ops 4096.\n",
	        MAX_CONNS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mcached", required_argument, NULL, 'm' },
		{ "seconds", required_argument, NULL, 's' },
		{ "conns", required_argument, NULL, 'c' },
		{ "ops", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "+m:s:c:o:h", lo, NULL)) != -1) {
		switch (o) {
		case 'm': mcached_path = optarg; break;
		case 's': seconds = atof(optarg); break;
		case 'c': nconns = (unsigned)atoi(optarg); break;
		case 'o': attack_ops = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!mcached_path || seconds <= 0 || seconds > 60 || nconns < 1 || nconns > MAX_CONNS ||
	    attack_ops < 1 || attack_ops > 1000000) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	for (int k = 0; k < L_KINDS; k++)
		if (!(lat[k] = malloc(LAT_MAX * sizeof(uint64_t))))
			die("malloc");

	static struct {
		const char *name;
		void *(*fn)(void *);
	} attacks[] = {
		{ "none", NULL },
		{ "amplification", attack_amplify },
		{ "slow-reader", attack_slow_reader },
		{ "prehello+partial", attack_prehello },
		{ "none (again)", NULL },
	};
	enum { NA = sizeof(attacks) / sizeof(attacks[0]) };
	struct figures fg[NA];
	memset(fg, 0, sizeof(fg));
	bool alive = true;
	for (unsigned i = 0; i < NA; i++) {
		/* A fresh server each: memory the last attack left with malloc
		 * would hide the next one's. */
		int st = 0;
		server_start(argv + optind, argc - optind);
		setup_namespace();
		fg[i].name = attacks[i].name;
		run_attack(&fg[i], attacks[i].fn, i);
		if (waitpid(srv_pid, &st, WNOHANG) != 0)
			alive = false;
		server_stop();
	}
	printf("mcattack: %u attacking connections, %.1f s each, a fresh server each: %s\n",
	       nconns, seconds, alive ? "all alive at the end" : "one DIED");
	printf("%-18s %12s %12s", "attack", "attack reqs", "peak MiB");
	for (int k = 0; k < L_KINDS; k++)
		printf(" %14s %6s", lat_names[k], "ratio");
	printf(" %8s %7s\n", "samples", "errors");
	for (unsigned i = 0; i < NA; i++) {
		printf("%-18s %12llu %12.1f", fg[i].name, (unsigned long long)fg[i].attack_reqs,
		       fg[i].mem_mib);
		for (int k = 0; k < L_KINDS; k++)
			printf(" %11.1f us %6.2f", fg[i].p99_us[k],
			       fg[0].p99_us[k] > 0 ? fg[i].p99_us[k] / fg[0].p99_us[k] : 0);
		printf(" %8llu %7llu\n", (unsigned long long)fg[i].samples,
		       (unsigned long long)fg[i].errors);
	}
	printf("peak MiB: server VmHWM minus VmRSS at the attack's start, attack alone for "
	       "%.1f s; per attacking connection: divide by %u\n", seconds, nconns);
	return alive ? 0 : 1;
}
