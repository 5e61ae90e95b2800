/* chmod_spy.h - chmod as the code under test sees it, for the tests that a
 * socket is born with its final mode (test-admin.c, test-rpc_socket.c): the
 * mode the path had when chmod was called on it (a socket file looser than
 * that for a while is a window another user could connect in), and how
 * many calls there were. It defines chmod itself, in front of libc's, so a
 * program includes it in one source only. */
#ifndef MC_TEST_CHMOD_SPY_H
#define MC_TEST_CHMOD_SPY_H

#include <fcntl.h>
#include <sys/stat.h>

static mode_t chmod_seen_mode;
static int chmod_calls;

int chmod(const char *path, mode_t mode)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		chmod_seen_mode = st.st_mode & 07777;
	chmod_calls++;
	return fchmodat(AT_FDCWD, path, mode, 0);
}

#endif
