/* config_value.h - what config.c takes from config_value.c: the units of
 * sizes, and the parsing and printing of one option value. Not for use
 * outside the settings (config_parse_size is config.h's). */
#ifndef MC_CONFIG_VALUE_H
#define MC_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The size suffixes K, M, G and T (also the ranges in config_options.h). */
#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

/* Format a message into msg[0..n). */
void config_msgf(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Render a byte count the way it is best written (256M, 4K, 1000). */
void config_size_str(uint64_t v, char *buf, size_t n);

/* v as a size (config_parse_size) or a decimal number in [min, max], as a
 * boolean (true/false, yes/no, on/off, 1/0): 0 with *out set, or -EINVAL
 * with msg[0..n) saying what was wrong. */
int config_get_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *msg, size_t n);
int config_get_uint(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *msg, size_t n);
int config_get_bool(const char *v, bool *out, char *msg, size_t n);
/* A light check of an admin address (unix:PATH, HOST:PORT, [IPV6]:PORT or
 * none); admin_start does the real one. */
bool config_admin_addr_ok(const char *v);

#endif
