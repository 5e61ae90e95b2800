/* bench_rpc.c - the RPC floor and round trip: a raw unix-socket ping-pong
 * of 64-byte messages between two processes, against mc_chmod round trips
 * to mcached, in interleaved runs; p50 and p99 of each and their ratios.
 *
 * Both sides time every round trip alone (CLOCK_MONOTONIC around one
 * write + read, or one mc_chmod), so the percentiles compare like with
 * like: the ping-pong is what any request-reply over the same socket type
 * costs on this machine at this moment; what mcache adds is the ratio.
 * mcached and libmcache poll for the other side before they sleep
 * (proto/mc_busypoll.h), so there are two floors: the ping-pong whose
 * ends sleep in read, and one whose ends poll the same way, with the
 * client's bound ($MCACHE_BUSY_POLL_US). The second is the floor of what
 * mcache does; the first, of what a plain request-reply does.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "mc_busypoll.h"

#define RPC_MSG 64
#define RPC_WARMUP 200

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* p50 and p99 of lat[0..n) in microseconds (sorts lat). */
static void rpc_pcts(int64_t *lat, unsigned long n, double *p50, double *p99)
{
	qsort(lat, n, sizeof(*lat), cmp_i64);
	*p50 = (double)lat[n / 2] / 1e3;
	*p99 = (double)lat[(n * 99) / 100] / 1e3;
}

/* read_full, but before sleeping for the message, poll for it as
 * libmcache polls for a reply (client/call.c, reply_wait). */
static int read_polled(int fd, void *buf, size_t len, struct mc_busypoll *bp)
{
	size_t got = 0;
	bool polled = false;

	while (got < len) {
		ssize_t k = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);

		if (k > 0) {
			got += (size_t)k;
			continue;
		}
		if (k == 0)
			return -1;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (!polled) {
			polled = true;
			if (mc_busypoll_fd(bp, fd))
				continue;
		}
		if (mc_busypoll_sleep_fd(bp, fd) < 0)
			return -1;
	}
	return 0;
}

/* A floor: n timed 64-byte round trips with an echoing child process;
 * with poll_ns > 0 both ends poll for the other's message first. */
static int rpc_pingpong(int64_t *lat, unsigned long n, uint64_t poll_ns)
{
	struct mc_busypoll bp;
	char msg[RPC_MSG];
	int sv[2], rc = -1;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		fprintf(stderr, "mcbench: socketpair: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "mcbench: fork: %s\n", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	mc_busypoll_init(&bp, poll_ns);
	if (pid == 0) {
		close(sv[0]);
		while ((poll_ns ? read_polled(sv[1], msg, sizeof(msg), &bp)
		                : read_full(sv[1], msg, sizeof(msg))) == 0)
			if (write_full(sv[1], msg, sizeof(msg)) < 0)
				break;
		_exit(0);
	}
	close(sv[1]);
	memset(msg, 'p', sizeof(msg));
	for (unsigned long i = 0; i < n + RPC_WARMUP; i++) {
		int64_t t0 = now_ns();

		if (write_full(sv[0], msg, sizeof(msg)) < 0 ||
		    (poll_ns ? read_polled(sv[0], msg, sizeof(msg), &bp)
		             : read_full(sv[0], msg, sizeof(msg))) < 0) {
			fprintf(stderr, "mcbench: ping-pong: %s\n", strerror(errno));
			goto out;
		}
		if (i >= RPC_WARMUP)
			lat[i - RPC_WARMUP] = now_ns() - t0;
	}
	rc = 0;
out:
	close(sv[0]);
	waitpid(pid, NULL, 0);
	return rc;
}

/* n timed mc_chmod calls on one file of ours (mode alternating). */
static int rpc_chmods(mc_client *c, const char *path, int64_t *lat, unsigned long n)
{
	for (unsigned long i = 0; i < n + RPC_WARMUP; i++) {
		int64_t t0 = now_ns();

		if (mc_chmod(c, path, (i & 1) ? 0600 : 0644) < 0) {
			fprintf(stderr, "mcbench: mc_chmod %s: %s\n", path, strerror(errno));
			return -1;
		}
		if (i >= RPC_WARMUP)
			lat[i - RPC_WARMUP] = now_ns() - t0;
	}
	return 0;
}

int rpc_bench(FILE *f, const char *socket, unsigned long n, unsigned repeat)
{
	/* p50 and p99 of: the ping-pong, the polling ping-pong, mc_chmod. */
	double *v = calloc(6 * (size_t)repeat, sizeof(*v));
	uint64_t poll_ns = mc_busypoll_client_ns();
	int64_t *lat = calloc(n, sizeof(*lat));
	char path[64];
	mc_client *c = NULL;
	int fd, rc = -1;

	if (!v || !lat) {
		fprintf(stderr, "mcbench: rpc: out of memory\n");
		goto out;
	}
	c = mc_connect(socket);
	if (!c) {
		fprintf(stderr, "mcbench: rpc: mc_connect: %s\n", strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "/mcb.%ld.rpc", (long)run_id);
	fd = mc_open(c, path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0 || mc_close(c, fd) < 0) {
		fprintf(stderr, "mcbench: rpc: creating %s: %s\n", path, strerror(errno));
		goto out;
	}
	for (unsigned r = 0; r < repeat; r++) {
		/* Interleaved, so both sides see the same load. */
		if (rpc_pingpong(lat, n, 0) < 0)
			goto out_unlink;
		rpc_pcts(lat, n, &v[r], &v[repeat + r]);
		if (poll_ns) {
			if (rpc_pingpong(lat, n, poll_ns) < 0)
				goto out_unlink;
			rpc_pcts(lat, n, &v[2 * repeat + r], &v[3 * repeat + r]);
		}
		if (rpc_chmods(c, path, lat, n) < 0)
			goto out_unlink;
		rpc_pcts(lat, n, &v[4 * repeat + r], &v[5 * repeat + r]);
	}
	double med[6];
	for (unsigned k = 0; k < 6; k++) {
		qsort(v + k * repeat, repeat, sizeof(*v), cmp_dbl);
		med[k] = v[k * repeat + repeat / 2];
	}
	fprintf(f, "rpc round trip: %lu calls x %u interleaved runs, medians of the runs\n",
	        n, repeat);
	fprintf(f, "  %-34s p50 %8.2f us   p99 %8.2f us\n",
	        "raw unix-socket ping-pong (64 B)", med[0], med[1]);
	if (poll_ns)
		fprintf(f, "  %-34s p50 %8.2f us   p99 %8.2f us\n",
		        "ping-pong, both ends polling", med[2], med[3]);
	fprintf(f, "  %-34s p50 %8.2f us   p99 %8.2f us\n", "mc_chmod", med[4], med[5]);
	fprintf(f, "  %-34s p50 %8.2fx    p99 %8.2fx\n", "ratio mc_chmod / ping-pong",
	        med[4] / med[0], med[5] / med[1]);
	if (poll_ns)
		fprintf(f, "  %-34s p50 %8.2fx    p99 %8.2fx\n", "ratio mc_chmod / polling ping-pong",
		        med[4] / med[2], med[5] / med[3]);
	else
		fprintf(f, "  (libmcache polls not: MCACHE_BUSY_POLL_US=0; no polling floor)\n");
	rc = 0;
out_unlink:
	if (mc_unlink(c, path) < 0) {
		fprintf(stderr, "mcbench: rpc: mc_unlink %s: %s\n", path, strerror(errno));
		rc = -1;
	}
out:
	if (c)
		mc_disconnect(c);
	free(lat);
	free(v);
	return rc;
}
