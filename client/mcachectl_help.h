/* mcachectl_help.h - the text of `mcachectl --help` (mcachectl_help.c). */
#ifndef MCACHECTL_HELP_H
#define MCACHECTL_HELP_H

/* Print the tool's usage, options, commands and exit statuses on stdout. */
void print_help(void);

#endif
