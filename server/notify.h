/* notify.h - readiness and stopping for the service manager (systemd's
 * Type=notify, through libsystemd's sd_notify); no-ops when $NOTIFY_SOCKET is
 * unset or the build has no libsystemd (meson option systemd). */
#ifndef MC_NOTIFY_H
#define MC_NOTIFY_H

/* Tell the manager the server accepts clients, with a one-line status. */
void notify_ready(const char *status);
/* Tell the manager the server is stopping (committing what is pending). */
void notify_stopping(void);

#endif
