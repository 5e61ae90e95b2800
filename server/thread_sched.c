/* thread_sched.c - thread_sched.h over sched_setattr(2). */
#include "thread_sched.h"

#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* struct sched_attr as sched_setattr(2) first took it (48 bytes; the
 * kernel's header clashes with <sched.h>, and glibc has no wrapper). */
struct sched_attr_v0 {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};
_Static_assert(sizeof(struct sched_attr_v0) == 48, "sched_attr, version 0");

int thread_sched_set(int policy, int nice, uint64_t slice_ns)
{
	struct sched_attr_v0 a = { .size = sizeof(a), .policy = (uint32_t)policy,
	                           .nice = nice, .runtime = slice_ns };
	return syscall(SYS_sched_setattr, 0, &a, 0) == 0 ? 0 : -errno;
}

int thread_slice_set(uint64_t slice_ns)
{
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, 0);   /* this thread's, on Linux */
	if (nice == -1 && errno)
		return -errno;
	return thread_sched_set(SCHED_OTHER, nice, slice_ns);
}
