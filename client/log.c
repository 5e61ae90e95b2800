/* log.c - mc_log_read: the server's commit log as JSON lines (OP_LOG). */
#include "client_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *mc_log_read(mc_client *c, struct mc_log_pos *pos, size_t max, uint64_t *first, int *eof)
{
	if (!c || !pos) {
		errno = EINVAL;
		return NULL;
	}
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_LOG;
	op.log_seq = pos->seq;
	op.log_rec = pos->rec;
	op.log_max = max > UINT32_MAX ? UINT32_MAX : (uint32_t)max;
	char *s = client_op_text(c, &op, &rsp);
	if (!s)
		return NULL;
	const Mcache__Result *r = rsp->results[0];
	pos->seq = r->cookie;
	pos->rec = r->end;
	if (first)
		*first = r->start;
	if (eof)
		*eof = r->eof;
	mcache__response__free_unpacked(rsp, NULL);
	return s;
}
