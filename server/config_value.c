/* config_value.c - the values of mcached's options as they are written:
 * sizes with an optional K, M, G or T suffix, decimal numbers and booleans,
 * each checked against its range with a one-line message naming what was
 * wrong, a first look at admin addresses, and sizes written back the way
 * they are best read (--help, the messages). Kept out of config.c, which
 * knows the options (config_options.h) and where their values come from;
 * this knows only how one value is spelled.
 */
#include "config_value.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "config.h"

/* Decimal digits only (no sign, no blanks): -EINVAL, -ERANGE. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (*s == '\0')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*s != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

int config_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0': break;
	case 'k': case 'K': mult = KiB; p++; break;
	case 'm': case 'M': mult = MiB; p++; break;
	case 'g': case 'G': mult = GiB; p++; break;
	case 't': case 'T': mult = TiB; p++; break;
	default: return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

/* Render a byte count the way it is best written (256M, 4K, 1000). */
void config_size_str(uint64_t v, char *buf, size_t n)
{
	static const struct { uint64_t m; char c; } u[] = {
		{ TiB, 'T' }, { GiB, 'G' }, { MiB, 'M' }, { KiB, 'K' },
	};
	for (unsigned i = 0; i < 4; i++) {
		if (v >= u[i].m && v % u[i].m == 0) {
			snprintf(buf, n, "%llu%c", (unsigned long long)(v / u[i].m), u[i].c);
			return;
		}
	}
	snprintf(buf, n, "%llu", (unsigned long long)v);
}

void config_msgf(char *msg, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, n, fmt, ap);
	va_end(ap);
}

int config_get_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *msg, size_t n)
{
	uint64_t x;
	int rc = config_parse_size(v, &x);
	if (rc == 0 && (x < min || x > max))
		rc = -ERANGE;
	if (rc == -EINVAL) {
		config_msgf(msg, n, "'%s' is not a size (use a number with K, M, G or T)", v);
		return -EINVAL;
	}
	if (rc < 0) {
		char a[32], b[32];
		config_size_str(min, a, sizeof(a));
		config_size_str(max, b, sizeof(b));
		config_msgf(msg, n, "'%s' is out of range (%s..%s)", v, a, b);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

int config_get_uint(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *msg, size_t n)
{
	uint64_t x;
	int rc = parse_u64(v, &x);
	if (rc == -EINVAL) {
		config_msgf(msg, n, "'%s' is not a number", v);
		return -EINVAL;
	}
	if (rc < 0 || x < min || x > max) {
		config_msgf(msg, n, "'%s' is out of range (%llu..%llu)", v, (unsigned long long)min,
		     (unsigned long long)max);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

int config_get_bool(const char *v, bool *out, char *msg, size_t n)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	config_msgf(msg, n, "'%s' is not a boolean (use true or false)", v);
	return -EINVAL;
}

/* A light check of an admin address; admin_start does the real one. */
bool config_admin_addr_ok(const char *v)
{
	if (strcmp(v, "none") == 0)
		return true;
	if (strncmp(v, "unix:", 5) == 0)
		return v[5] != '\0' && strlen(v + 5) < sizeof(((struct sockaddr_un *)0)->sun_path);
	const char *colon = strrchr(v, ':');
	if (colon == NULL || colon == v)
		return false;
	if (v[0] == '[' && colon[-1] != ']')
		return false;
	uint64_t port;
	return parse_u64(colon + 1, &port) == 0 && port <= 65535;
}
