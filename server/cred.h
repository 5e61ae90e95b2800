/* cred.h - acting for other credentials: a privileged peer (a file server
 * such as mcachefs) names, per op, the credentials of its own caller, and
 * permissions are checked against those (SECURITY.md). */
#ifndef MC_CRED_H
#define MC_CRED_H

#include "mcache.pb-c.h"
#include "ops.h"

/* Fill *out with the credentials in `as` for a peer with credentials peer.
 * EPERM when the peer is not root (uid 0): nobody else may act for another
 * user. Groups past SESSION_MAX_GROUPS are dropped, as for a peer's own. */
int cred_acting(const struct cred *peer, const Mcache__Cred *as, struct cred *out);

#endif
