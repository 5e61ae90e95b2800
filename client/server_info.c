/* server_info.c - the server's introspection calls that answer JSON text:
 * its connected clients and its slow-operation log. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_impl.h"
#include "mcache.h"

/* Run op and return its data as a malloc'd NUL-terminated string, or NULL
 * with errno set. */
static char *server_text(mc_client *c, Mcache__Op *op)
{
	Mcache__Response *rsp = NULL;
	int err = client_op(c, op, &rsp);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	const ProtobufCBinaryData *d = &rsp->results[0]->data;
	char *s = malloc(d->len + 1);
	if (!s) {
		mcache__response__free_unpacked(rsp, NULL);
		errno = ENOMEM;
		return NULL;
	}
	if (d->len)
		memcpy(s, d->data, d->len);
	s[d->len] = 0;
	mcache__response__free_unpacked(rsp, NULL);
	return s;
}

char *mc_server_clients(mc_client *c)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_CLIENTS;
	return server_text(c, &op);
}

char *mc_server_slowlog(mc_client *c, unsigned n)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_SLOWLOG;
	op.count = n;
	return server_text(c, &op);
}
