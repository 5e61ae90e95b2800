/* log.c - leveled logging to stderr. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Atomic int cur_level = LOG_LVL_INFO;
static const char *const names[] = { "error", "warn", "info", "debug" };

void log_set_level(enum log_level lvl) { atomic_store(&cur_level, (int)lvl); }
enum log_level log_get_level(void) { return (enum log_level)atomic_load(&cur_level); }

const char *log_level_name(enum log_level lvl)
{
	return (unsigned)lvl < sizeof(names) / sizeof(names[0]) ? names[lvl] : "unknown";
}

int log_parse_level(const char *s, enum log_level *out)
{
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	if ((int)lvl > atomic_load(&cur_level))
		return;
	char line[1024];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ mcached %s: ",
	                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	                 tm.tm_sec, ts.tv_nsec / 1000000, names[lvl]);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
