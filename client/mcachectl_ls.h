/* mcachectl_ls.h - mcachectl ls and stat (mcachectl_ls.c). */
#ifndef MCACHECTL_LS_H
#define MCACHECTL_LS_H

/* Each takes the command's argv (argv[0] is its name) and returns the exit
 * status. */
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);

#endif
