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
 * (the peer itself, when both ended up on one CPU).
 *
 * The state is one thread's (a worker's loop, a client under its lock).
 */
#ifndef MC_BUSYPOLL_H
#define MC_BUSYPOLL_H

#include <stdbool.h>
#include <stdint.h>

/* Default longest poll, both sides (mcached --busy-poll-us,
 * $MCACHE_BUSY_POLL_US), and the largest either accepts. */
#define MC_BUSYPOLL_US 200u
#define MC_BUSYPOLL_MAX_US 10000u
/* The first window, and the shortest one kept. */
#define MC_BUSYPOLL_START_NS 10000u

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

#endif
