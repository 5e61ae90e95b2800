/* notify.c - readiness and stopping for the service manager (see notify.h). */
#include "notify.h"

#include <stdio.h>

#include "mc_config.h"

#if MC_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

void notify_ready(const char *status)
{
	char msg[512];
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	sd_notify(0, msg);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping: committing what is pending");
}
#else
void notify_ready(const char *status)
{
	(void)status;
}

void notify_stopping(void)
{
}
#endif
