/* mc_socket.h - the one rule by which mcached, libmcache and mcachectl pick
 * the client socket when none is named: $MCACHE_SOCKET when set and not
 * empty, else the build's default_socket option (MC_DEFAULT_SOCKET). */
#ifndef MC_SOCKET_H
#define MC_SOCKET_H

#include <stdlib.h>

#include "mc_config.h"

/* The socket path to use: path itself when not NULL, else the default.
 * The result points into the environment or a constant; it is not freed. */
static inline const char *mc_socket_path(const char *path)
{
	if (path)
		return path;
	const char *env = getenv("MCACHE_SOCKET");
	if (env && *env)
		return env;
	return MC_DEFAULT_SOCKET;
}

#endif
