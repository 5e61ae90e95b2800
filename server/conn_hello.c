/* conn_hello.c - a connection's Hello, the first request on it: the
 * peer's credentials, read from the socket when it is accepted, then, for
 * a good Hello, the connection's session (with its watch sink, whose
 * pushes go out like replies), its entry in the clients list and the
 * HelloReply, sent with the segment fds. Kept out of conn.c, which runs
 * the requests that follow: this runs once per connection, takes it out of
 * HELLO (conn.c invariants 5 and 8) and is where the peer's identity and
 * the file descriptors pass between client and server.
 */
#include "conn_io.h"

#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "clients.h"
#include "frame.h"
#include "log.h"
#include "mcd.h"
#include "ops.h"
#include "watch.h"

#ifdef SO_PEERGROUPS
/* Keep the groups in the sl bytes at groups: the first SESSION_MAX_GROUPS
 * if there are more. */
static void conn_cred_groups(struct cred *cred, const gid_t *groups, socklen_t sl)
{
	size_t n = sl / sizeof(gid_t);

	if (n > SESSION_MAX_GROUPS)
		n = SESSION_MAX_GROUPS;
	memcpy(cred->groups, groups, n * sizeof(gid_t));
	cred->ngroups = (int)n;
}
#endif

/* Read and clamp the peer's credentials. */
int conn_read_cred(int fd, struct cred *cred, pid_t *pid)
{
	struct ucred uc;
	socklen_t sl = sizeof(uc);
	gid_t groups[256];

	memset(cred, 0, sizeof(*cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl) < 0)
		return -errno;
	cred->uid = uc.uid;
	cred->gid = uc.gid;
	cred->pid = uc.pid;
	*pid = uc.pid;
#ifdef SO_PEERGROUPS
	sl = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &sl) == 0) {
		conn_cred_groups(cred, groups, sl);
	} else if (errno == ERANGE) {
		/* More than fit: sl now says how many; take the first ones. */
		size_t need = sl;
		gid_t *big = malloc(need);

		if (big && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, big, &sl) == 0)
			conn_cred_groups(cred, big, sl);
		free(big);
	}
#else
	(void)groups;
#endif
	return 0;
}

/* Send the HelloReply with the segment fd in one sendmsg straight on the
 * socket (nothing else is queued yet); a short write's rest is queued. */
static int conn_send_hello(struct conn *c, uint64_t id)
{
	const struct rpc_opts *o = &c->w->r->o;
	Mcache__Response rsp = MCACHE__RESPONSE__INIT;
	Mcache__HelloReply hr = MCACHE__HELLO_REPLY__INIT;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[2];
	size_t nfds = 0;
	uint8_t *buf;
	size_t len;
	ssize_t n;
	int err;

	hr.version = MC_PROTO_VERSION;
	hr.shm_version = o->shm_version;
	hr.shm_size = o->shm_size;
	hr.max_ops = o->max_ops;
	hr.max_reply = o->max_reply ? o->max_reply : o->max_frame;
	if (o->shm_fd >= 0) {
		fds[nfds++] = o->shm_fd;
		if (o->area_fd >= 0) {
			fds[nfds++] = o->area_fd;
			hr.area_size = o->area_size;
			hr.client_slot = session_slot(c->sess);
		}
	}
	rsp.id = id;
	rsp.hello = &hr;
	err = frame_pack_response(&rsp, UINT32_MAX, &buf, &len);
	if (err)
		return err;
	iov.iov_base = buf;
	iov.iov_len = len;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		err = -errno;
		goto out;
	}
	return conn_io_queue(c, buf, (size_t)n, len);
out:
	free(buf);
	return err;
}

/* A watcher's pushes (watch.h): sent like replies, between them. */
static void conn_watch_send(void *arg, uint8_t *frame, size_t len)
{
	conn_queue(arg, 0, frame, len);
}

static void conn_watch_drop(void *arg)
{
	conn_close(arg);
}

void conn_hello(struct conn *c, const Mcache__Request *req)
{
	struct rpc *r = c->w->r;
	int err;

	if (!req->hello) {
		conn_bad_frame(c, req->id, EPROTO, "the first request must be a hello");
		return;
	}
	if (req->hello->version != MC_PROTO_VERSION) {
		conn_fail(c, req->id, EPROTONOSUPPORT, "unsupported protocol version");
		return;
	}
	/* The session exists before the reply says yes. */
	c->sess = session_new(r->m, &c->cred);
	if (!c->sess) {
		conn_fail(c, req->id, ENOMEM, "out of memory");
		return;
	}
	*session_watch(c->sess) = (struct watch_sess){
		.sink = { c->w->base, conn_watch_send, conn_watch_drop, c } };
	/* Counted out before the client can see the reply and act on it. */
	conn_prehello_leave(c);
	/* Listed before the reply too: a client connecting after this one saw
	 * its reply is listed after it (conn_close takes it out on failure). */
	clients_add(r->m->clients, &c->ent, c->pid, c->cred.uid, c->cred.gid);
	evtimer_del(c->ev_deadline);
	err = conn_send_hello(c, req->id);
	if (err) {
		log_debug("rpc: pid %d: hello reply: %s", (int)c->pid, strerror(-err));
		conn_close(c);
		return;
	}
	c->st = CONN_READY;
	log_debug("rpc: pid %d uid %u connected", (int)c->pid, (unsigned)c->cred.uid);
}
