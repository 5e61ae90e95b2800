/* log.h - leveled logging to stderr, one line per message. */
#ifndef MC_LOG_H
#define MC_LOG_H

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN = 1, LOG_LVL_INFO = 2, LOG_LVL_DEBUG = 3 };

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* Parse "error", "warn", "info", "debug"; -EINVAL otherwise. */
int log_parse_level(const char *s, enum log_level *out);
/* "error", "warn", "info", "debug" ("unknown" for other values). */
const char *log_level_name(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_get_level() >= LOG_LVL_DEBUG) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
