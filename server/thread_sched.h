/* thread_sched.h - the calling thread's scheduling class, nice value and
 * time slice, set together.
 *
 * On a kernel whose fair scheduler takes a slice per thread (EEVDF, Linux
 * 6.12 and later: sched_setattr(2)'s sched_runtime for SCHED_OTHER and
 * SCHED_IDLE, 0.1 to 100 ms) the slice decides how long a running thread
 * keeps its CPU against a thread woken beside it: a woken thread with a
 * shorter slice preempts at once, and a running thread is protected from
 * preemption for its own slice at most. A slice changes latency, not the
 * share of CPU a thread gets. Older kernels take the call and ignore the
 * slice. */
#ifndef MC_THREAD_SCHED_H
#define MC_THREAD_SCHED_H

#include <stdint.h>

/* The shortest slice the kernel takes. */
#define THREAD_SLICE_MIN_NS 100000ull

/* Put the calling thread in class policy (SCHED_OTHER, SCHED_IDLE) at
 * nice value nice, with a slice of slice_ns (0: the kernel's default).
 * 0 or -errno (EPERM: raising the priority, or leaving SCHED_IDLE, needs
 * CAP_SYS_NICE or RLIMIT_NICE). */
int thread_sched_set(int policy, int nice, uint64_t slice_ns);

/* Give the calling thread a slice of slice_ns, in SCHED_OTHER at the nice
 * value it has (sched_setattr sets both: an operator's `nice mcached`
 * holds). 0 or -errno. */
int thread_slice_set(uint64_t slice_ns);

#endif
