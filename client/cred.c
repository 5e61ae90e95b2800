/* cred.c - acting for other credentials: mc_cred_set() sets, per thread,
 * the credentials that every later call of the thread names to the server
 * and that local answers from shared memory check. */
#include <stdbool.h>
#include <string.h>

#include "client_impl.h"

/* This thread's credentials, when set. msg.groups points at groups. */
static _Thread_local struct {
	bool on;
	Mcache__Cred msg;
	uint32_t groups[64];
	struct view_cred view;
} tcred;

int mc_cred_set(const struct mc_cred *cred)
{
	if (!cred) {
		tcred.on = false;
		view_cred_act(NULL);
		return 0;
	}
	if (cred->ngroups > 64 || (cred->ngroups > 0 && !cred->groups))
		return client_fail(-EINVAL);
	mcache__cred__init(&tcred.msg);
	tcred.msg.uid = (uint32_t)cred->uid;
	tcred.msg.gid = (uint32_t)cred->gid;
	for (size_t i = 0; i < cred->ngroups; i++) {
		tcred.groups[i] = (uint32_t)cred->groups[i];
		tcred.view.groups[i] = (uint32_t)cred->groups[i];
	}
	tcred.msg.n_groups = cred->ngroups;
	tcred.msg.groups = tcred.groups;
	tcred.view.uid = (uint32_t)cred->uid;
	tcred.view.gid = (uint32_t)cred->gid;
	tcred.view.ngroups = (int)cred->ngroups;
	tcred.on = true;
	view_cred_act(&tcred.view);
	return 0;
}

Mcache__Cred *cred_current(void)
{
	return tcred.on ? &tcred.msg : NULL;
}
