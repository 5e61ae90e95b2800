/* test-notify.c - mcached and its service manager: it tells a Type=notify
 * manager when it is ready (READY=1, once clients can connect) and when it
 * stops (STOPPING=1), on the datagram socket $NOTIFY_SOCKET names, as systemd
 * would see it; SIGHUP (systemctl reload) re-reads the log level. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "mc_config.h"
#include "mcache.h"

/* The next datagram on fd within ms, NUL-terminated in buf; 0 or -1. */
static int recv_within(int fd, char *buf, size_t n, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) != 1)
		return -1;
	ssize_t k = recv(fd, buf, n - 1, 0);
	if (k < 0)
		return -1;
	buf[k] = '\0';
	return 0;
}

static void test_ready_and_stopping(void **state)
{
	(void)state;
	if (!MC_HAVE_SYSTEMD) {
		print_message("# skipped: built without libsystemd\n");
		return;
	}
	char dir[] = "/tmp/mcache-notify-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", dir);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);

	struct mc_server srv = { .pid = 0 };
	assert_int_equal(server_start(&srv, NULL), 0);
	unsetenv("NOTIFY_SOCKET");
	char msg[512];
	assert_int_equal(recv_within(fd, msg, sizeof(msg), 10000), 0);
	if (strstr(msg, "READY=1") == NULL)
		fail_msg("first notification is not READY=1: %s", msg);
	assert_non_null(strstr(msg, "STATUS=serving on "));
	/* Ready means ready: a client connects and is answered. */
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	struct stat st;
	assert_int_equal(mc_stat(c, "/", &st), 0);
	mc_disconnect(c);

	assert_int_equal(kill(srv.pid, SIGTERM), 0);
	assert_int_equal(recv_within(fd, msg, sizeof(msg), 10000), 0);
	if (strstr(msg, "STOPPING=1") == NULL)
		fail_msg("notification after SIGTERM is not STOPPING=1: %s", msg);
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	server_cleanup(&srv);
	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
}

/* Does the file at path contain s (within ms)? */
static int file_has(const char *path, const char *s, int ms)
{
	for (int waited = 0; waited <= ms; waited += 20) {
		FILE *f = fopen(path, "r");
		if (f) {
			char line[1024];
			while (fgets(line, sizeof(line), f))
				if (strstr(line, s)) {
					fclose(f);
					return 1;
				}
			fclose(f);
		}
		usleep(20000);
	}
	return 0;
}

static void test_sighup_log_level(void **state)
{
	(void)state;
	char conf[] = "/tmp/mcache-hup-XXXXXX";
	int fd = mkstemp(conf);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "log-level = warn\n", 17), 17);
	close(fd);
	struct mc_server srv = { .pid = 0 };
	const char *args[] = { "-c", conf, NULL };
	assert_int_equal(server_start(&srv, args), 0);

	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	fputs("log-level = debug\nworkers = 3\n", f);
	fclose(f);
	assert_int_equal(kill(srv.pid, SIGHUP), 0);
	if (!file_has(srv.log, "SIGHUP: settings re-read; log level debug", 5000))
		fail_msg("no reload in the log (%s)", srv.log);
	assert_true(file_has(srv.log, "--workers changed; it takes effect at the next start", 0));
	/* The server still serves. */
	mc_client *c = mc_connect(srv.socket);
	assert_non_null(c);
	assert_int_equal(mc_mkdir(c, "/after-hup", 0755), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	server_cleanup(&srv);
	unlink(conf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_and_stopping),
		cmocka_unit_test(test_sighup_log_level),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
