/* mc_busypoll.h - how long one end of a connection polls for the other
 * before it sleeps: mcached's workers between requests, libmcache between
 * a request and its reply.
 *
 * A request-reply exchange over a unix socket pays a wakeup at each turn
 * when the side waiting sleeps, and on an idle CPU that wakeup is slow:
 * the CPU must leave its idle state (on a virtual machine, the host must
 * run the vCPU again), 25-35 us on the 2-vCPU VM the figures in README.md
 * come from, against about 1 us for a thread that is running. A side that
 * polls its socket for a while before it sleeps is running when the
 * other's message arrives. Polling costs the CPU it runs on, so it is
 * bounded and adaptive, as Linux's halt polling for virtual CPUs is
 * (virt/kvm/kvm_main.c, halt_poll_ns):
 *
 *   - the window starts at MC_BUSYPOLL_START_NS;
 *   - a sleep that ended within max (polling that long would have caught
 *     it) and lasted longer than the window doubles the window, up to max;
 *   - a sleep longer than max after a poll that found nothing halves it,
 *     and below MC_BUSYPOLL_START_NS the side no longer polls, until a
 *     short sleep starts it again;
 *   - a poll that found work leaves it as it is.
 *
 * So a peer that answers or asks again within max is met by a running
 * thread, and one that is slower costs at most a few short polls before
 * its side goes back to sleeping at once. max 0 turns polling off. A poll
 * is a nonblocking check of the socket followed by sched_yield(), so a
 * polling thread gives its CPU to any other thread that can run there
 * (the peer itself, when both ended up on one CPU); a yield that ran
 * another thread for a while (MC_BUSYPOLL_CONTENDED_NS) without the
 * message coming meanwhile ends the poll and turns polling off for a
 * pause that doubles while that repeats: on a CPU others want, a thread
 * that yields waits behind them for its next turn, while one that sleeps
 * is run as soon as its message wakes it.
 *
 * The state is one thread's (a worker's loop, a client under its lock).
 */
#ifndef MC_BUSYPOLL_H
#define MC_BUSYPOLL_H

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Default longest poll, both sides (mcached --busy-poll-us,
 * $MCACHE_BUSY_POLL_US), and the largest either accepts. */
#define MC_BUSYPOLL_US 200u
#define MC_BUSYPOLL_MAX_US 10000u
/* The first window, and the shortest one kept. */
#define MC_BUSYPOLL_START_NS 10000u
/* A sched_yield() that took longer ran another thread: the poll ends, and
 * polling stays off for a pause, 1 ms at first, doubling while polls keep
 * finding the CPU busy, up to 64 ms (mc_busypoll_contended). */
#define MC_BUSYPOLL_CONTENDED_NS 20000u
#define MC_BUSYPOLL_QUIET_MIN_NS 1000000u
#define MC_BUSYPOLL_QUIET_MAX_NS 64000000u

struct mc_busypoll {
	uint64_t max;    /* ns; 0: never poll */
	uint64_t window; /* ns to poll before the next sleep; 0: sleep at once */
	uint64_t quiet_until; /* CLOCK_MONOTONIC ns: no polling before it (contended) */
	uint64_t quiet;  /* ns the next contended poll turns polling off for */
	bool missed;     /* the last poll found nothing */
};

static inline void mc_busypoll_init(struct mc_busypoll *p, uint64_t max_ns)
{
	p->max = max_ns;
	p->window = max_ns < MC_BUSYPOLL_START_NS ? max_ns : MC_BUSYPOLL_START_NS;
	p->quiet_until = 0;
	p->quiet = MC_BUSYPOLL_QUIET_MIN_NS;
	p->missed = false;
}

/* A poll found the CPU wanted by other threads (a yield ran one of them
 * for a while, and no message came meanwhile), at now: no polling for a
 * while, twice as long as the last time, up to MC_BUSYPOLL_QUIET_MAX_NS.
 * On a busy CPU a polling thread that yields waits behind the others for
 * its turn again, where one that sleeps is woken as soon as its message
 * comes; a CPU busy now and then (a commit) costs a short pause, one that
 * stays busy (a flood of requests) keeps polling off. */
static inline void mc_busypoll_contended(struct mc_busypoll *p, uint64_t now)
{
	p->window = 0;
	p->missed = false;
	p->quiet_until = now + p->quiet;
	p->quiet = p->quiet * 2 < MC_BUSYPOLL_QUIET_MAX_NS ? p->quiet * 2 : MC_BUSYPOLL_QUIET_MAX_NS;
}

/* A poll met the other side's message: the pause after the next
 * contended poll starts short again. */
static inline void mc_busypoll_hit(struct mc_busypoll *p)
{
	p->quiet = MC_BUSYPOLL_QUIET_MIN_NS;
}

/* A poll of the whole window found nothing: the caller sleeps next. */
static inline void mc_busypoll_missed(struct mc_busypoll *p)
{
	p->missed = true;
}

/* The caller slept slept_ns before the other side's message came, at now. */
static inline void mc_busypoll_slept(struct mc_busypoll *p, uint64_t slept_ns, uint64_t now)
{
	if (p->max == 0 || now < p->quiet_until)
		return;
	if (slept_ns <= p->max) {
		if (p->window < slept_ns) {
			uint64_t w = p->window ? p->window * 2 : MC_BUSYPOLL_START_NS;
			p->window = w < p->max ? w : p->max;
		}
	} else if (p->missed) {
		p->window /= 2;
		if (p->window < MC_BUSYPOLL_START_NS)
			p->window = 0;
	}
	p->missed = false;
}

static inline uint64_t mc_busypoll_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The client's bound in ns: $MCACHE_BUSY_POLL_US (0 to
 * MC_BUSYPOLL_MAX_US) when set and valid, else MC_BUSYPOLL_US. */
static inline uint64_t mc_busypoll_client_ns(void)
{
	const char *e = getenv("MCACHE_BUSY_POLL_US");
	char *end;

	if (e && *e) {
		unsigned long v = strtoul(e, &end, 10);
		if (*end == 0 && v <= MC_BUSYPOLL_MAX_US)
			return (uint64_t)v * 1000;
	}
	return (uint64_t)MC_BUSYPOLL_US * 1000;
}

/* sched_yield(), then true when it gave the CPU away for a while (another
 * thread ran: the CPU is not idle, and polling on takes it from others). */
static inline bool mc_busypoll_yield(void)
{
	uint64_t t0 = mc_busypoll_now();

	sched_yield();
	return mc_busypoll_now() - t0 > MC_BUSYPOLL_CONTENDED_NS;
}

/* How a poll ended (mc_busypoll_run). */
enum mc_busypoll_end {
	MC_BUSYPOLL_MET,       /* ready() said yes */
	MC_BUSYPOLL_MISSED,    /* the window passed (or was 0) */
	MC_BUSYPOLL_CONTENDED, /* a yield ran another thread a while, ready() still no */
};

/* The one polling loop of both ends: ask ready(arg) -- true once the
 * other side's message is there (or the caller must stop) -- for up to
 * the window, each time followed by sched_yield(), and keep the window
 * and the pause up to date: a poll that meets its message resets the
 * pause (mc_busypoll_hit), one that passes the window is a miss, one
 * whose yield ran another thread for a while without the message coming
 * meanwhile turns polling off (mc_busypoll_contended: had the thread been
 * the peer, it would have answered). A window of 0 does not poll. */
static inline enum mc_busypoll_end mc_busypoll_run(struct mc_busypoll *p, bool (*ready)(void *),
                                                   void *arg)
{
	uint64_t t0;

	if (p->window == 0)
		return MC_BUSYPOLL_MISSED;
	t0 = mc_busypoll_now();
	do {
		if (ready(arg)) {
			mc_busypoll_hit(p);
			return MC_BUSYPOLL_MET;
		}
		if (mc_busypoll_yield()) {
			if (ready(arg)) {
				mc_busypoll_hit(p);
				return MC_BUSYPOLL_MET;
			}
			mc_busypoll_contended(p, mc_busypoll_now());
			return MC_BUSYPOLL_CONTENDED;
		}
	} while (mc_busypoll_now() - t0 < p->window);
	mc_busypoll_missed(p);
	return MC_BUSYPOLL_MISSED;
}

static inline bool mc_busypoll_fd_ready(void *arg)
{
	struct pollfd pf = { .fd = *(const int *)arg, .events = POLLIN };

	return poll(&pf, 1, 0) > 0;
}

/* mc_busypoll_run on fd: true as soon as it is readable. */
static inline bool mc_busypoll_fd(struct mc_busypoll *p, int fd)
{
	return mc_busypoll_run(p, mc_busypoll_fd_ready, &fd) == MC_BUSYPOLL_MET;
}

/* Sleep in poll(2) until fd has input (or an error or hang-up to report),
 * and adapt the window to how long that took. 0, or -errno. */
static inline int mc_busypoll_sleep_fd(struct mc_busypoll *p, int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint64_t t0 = p->max ? mc_busypoll_now() : 0;

	if (poll(&pf, 1, -1) < 0 && errno != EINTR)
		return -errno;
	if (p->max) {
		uint64_t now = mc_busypoll_now();
		mc_busypoll_slept(p, now - t0, now);
	}
	return 0;
}

#endif
