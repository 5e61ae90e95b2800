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
 * another thread for a while (MC_BUSYPOLL_CONTENDED_NS) ends the poll as
 * a miss, since on a CPU others want, polling on only takes from them.
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
/* A sched_yield() that took longer ran another thread: the poll ends. */
#define MC_BUSYPOLL_CONTENDED_NS 20000u

struct mc_busypoll {
	uint64_t max;    /* ns; 0: never poll */
	uint64_t window; /* ns to poll before the next sleep; 0: sleep at once */
	bool missed;     /* the last poll found nothing */
};

static inline void mc_busypoll_init(struct mc_busypoll *p, uint64_t max_ns)
{
	p->max = max_ns;
	p->window = max_ns < MC_BUSYPOLL_START_NS ? max_ns : MC_BUSYPOLL_START_NS;
	p->missed = false;
}

/* A poll of the whole window found nothing: the caller sleeps next. */
static inline void mc_busypoll_missed(struct mc_busypoll *p)
{
	p->missed = true;
}

/* The caller slept slept_ns before the other side's message came. */
static inline void mc_busypoll_slept(struct mc_busypoll *p, uint64_t slept_ns)
{
	if (p->max == 0)
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

/* Poll fd for input for up to the window, each check followed by
 * sched_yield(): true as soon as it is readable; false (noted as a miss)
 * when the window passed, when a yield found the CPU wanted by another
 * thread, or at once when the window is 0. */
static inline bool mc_busypoll_fd(struct mc_busypoll *p, int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint64_t t0;

	if (p->window == 0)
		return false;
	t0 = mc_busypoll_now();
	do {
		if (poll(&pf, 1, 0) > 0)
			return true;
		if (mc_busypoll_yield())
			break;
	} while (mc_busypoll_now() - t0 < p->window);
	mc_busypoll_missed(p);
	return false;
}

/* Sleep in poll(2) until fd has input (or an error or hang-up to report),
 * and adapt the window to how long that took. 0, or -errno. */
static inline int mc_busypoll_sleep_fd(struct mc_busypoll *p, int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint64_t t0 = p->max ? mc_busypoll_now() : 0;

	if (poll(&pf, 1, -1) < 0 && errno != EINTR)
		return -errno;
	if (p->max)
		mc_busypoll_slept(p, mc_busypoll_now() - t0);
	return 0;
}

#endif
