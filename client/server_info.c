/* server_info.c - the server's introspection calls that answer JSON text:
 * its connected clients and its slow-operation log. */

#include "client_impl.h"
#include "mcache.h"

char *mc_server_clients(mc_client *c)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_CLIENTS;
	return client_op_text(c, &op, NULL);
}

char *mc_server_slowlog(mc_client *c, unsigned n)
{
	Mcache__Op op = MCACHE__OP__INIT;
	op.code = MCACHE__OP_CODE__OP_SLOWLOG;
	op.count = n;
	return client_op_text(c, &op, NULL);
}
