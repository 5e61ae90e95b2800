/* mcachectl_admin.h - mcachectl's commands that look at the server rather
 * than the namespace: stats (and stats --watch), clients, slowlog. */
#ifndef MCACHECTL_ADMIN_H
#define MCACHECTL_ADMIN_H

/* Each takes the command's argv (argv[0] is its name) and returns the exit
 * status. */
int cmd_stats(int argc, char **argv);
int cmd_clients(int argc, char **argv);
int cmd_slowlog(int argc, char **argv);

#endif
