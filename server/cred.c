/* cred.c - acting for other credentials (see cred.h). */
#include <errno.h>

#include "cred.h"

int cred_acting(const struct cred *peer, const Mcache__Cred *as, struct cred *out)
{
	if (peer->uid != 0)
		return -EPERM;
	out->pid = peer->pid;
	out->uid = (uid_t)as->uid;
	out->gid = (gid_t)as->gid;
	size_t n = as->n_groups < SESSION_MAX_GROUPS ? as->n_groups : SESSION_MAX_GROUPS;
	for (size_t i = 0; i < n; i++)
		out->groups[i] = (gid_t)as->groups[i];
	out->ngroups = (int)n;
	return 0;
}
