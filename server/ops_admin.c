/* ops_admin.c - the ops that look at the server rather than the
 * namespace: statistics, the consistency check, the commit log, the
 * connected clients and the slow-operation log, each answered as text
 * (JSON, or JSON lines) in the result's data. Rows of ops.c's op table. */
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients.h"
#include "fsck.h"
#include "logfeed.h"
#include "mcd.h"
#include "ops.h"
#include "ops_impl.h"
#include "slowlog.h"
#include "stats.h"

int op_stats(struct session *s, const Mcache__Op *op, struct handle *h,
             struct op_out *out)
{
	struct stats_snapshot *snap = calloc(1, sizeof(*snap));
	struct evbuffer *eb = evbuffer_new();
	int rc = -ENOMEM;
	(void)op;
	(void)h;
	if (!snap || !eb)
		goto done;
	mcd_fill_stats(s->m, snap);
	rc = stats_render_json(snap, eb);
	if (rc < 0)
		goto done;
	size_t len = evbuffer_get_length(eb);
	out->data = malloc(len ? len : 1);
	if (!out->data) {
		rc = -ENOMEM;
		goto done;
	}
	evbuffer_remove(eb, out->data, len);
	out->res.data.data = out->data;
	out->res.data.len = len;
	rc = 0;
done:
	if (eb)
		evbuffer_free(eb);
	free(snap);
	return rc;
}

/* The consistency check (fsck.h): for root and the server's own user only,
 * since it reads the whole store and takes the namespace lock in batches. */
int op_fsck(struct session *s, const Mcache__Op *op, struct handle *h,
            struct op_out *out)
{
	struct fsck_report rep = {0};
	(void)op;
	(void)h;
	if (s->cred.uid != 0 && s->cred.uid != geteuid())
		return -EPERM;
	int rc = fsck_ns(s->m->ns, &rep);
	char *js = rc == 0 ? fsck_report_json(&rep) : NULL;
	fsck_report_free(&rep);
	if (rc < 0)
		return rc;
	if (!js)
		return -ENOMEM;
	out->data = (uint8_t *)js;
	out->res.data.data = out->data;
	out->res.data.len = strlen(js);
	return 0;
}

/* The commit log as JSON lines (logfeed.h): it names every file changed,
 * so only root and the server's own user may read it. */
int op_log(struct session *s, const Mcache__Op *op, struct handle *h,
           struct op_out *out)
{
	(void)h;
	if (s->cred.uid != 0 && s->cred.uid != geteuid())
		return -EACCES;
	if (!s->m->store)
		return -EOPNOTSUPP;
	size_t max = op->log_max ? op->log_max : 256u << 10;
	if (max > s->m->cfg->max_reply / 2)
		max = s->m->cfg->max_reply / 2;
	struct logfeed_out lf;
	int rc = logfeed_read(s->m->store, op->log_seq, op->log_rec, max, &lf);
	if (rc < 0)
		return rc;
	out->data = (uint8_t *)lf.buf;
	out->res.data.data = out->data;
	out->res.data.len = lf.len;
	out->res.cookie = lf.next_seq;
	out->res.end = lf.next_rec;
	out->res.start = lf.first;
	out->res.eof = lf.eof;
	return 0;
}

/* A result whose data a renderer put in out->data (rc 0) or did not. */
static int op_text(struct op_out *out, int rc)
{
	if (rc == 0)
		out->res.data.data = out->data;
	return rc;
}

int op_clients(struct session *s, const Mcache__Op *op, struct handle *h,
               struct op_out *out)
{
	(void)op;
	(void)h;
	return op_text(out, clients_render(s->m->clients, (char **)&out->data,
	                                   &out->res.data.len));
}

int op_slowlog(struct session *s, const Mcache__Op *op, struct handle *h,
               struct op_out *out)
{
	(void)h;
	return op_text(out, slowlog_render(s->m->slowlog, op->count, (char **)&out->data,
	                                   &out->res.data.len));
}
