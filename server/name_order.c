/* name_order.c - a name between two others (name_order.h).
 *
 * The names are read as fractions in base 256, a's bytes then zeros, and
 * their sum is halved, one byte past the longer (within MC_NAME_MAX):
 * the mean lies at or after a and before b, and its trailing zero bytes,
 * which no name holds, are cut, which keeps it before b and at or after
 * a in name order. */
#include "name_order.h"

#include <stdint.h>

#include "mc_shm.h"

size_t name_mid(const char *a, size_t alen, const char *b, size_t blen, char *out)
{
	size_t len = (alen > blen ? alen : blen) + 1;
	uint8_t sum[MC_NAME_MAX];
	unsigned carry = 0;
	if (len > MC_NAME_MAX)
		len = MC_NAME_MAX;
	for (size_t i = len; i-- > 0;) {
		unsigned x = (i < alen ? (uint8_t)a[i] : 0u) + (i < blen ? (uint8_t)b[i] : 0u) + carry;
		sum[i] = (uint8_t)x;
		carry = x >> 8;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned x = carry << 8 | sum[i];
		out[i] = (char)(x >> 1);
		carry = x & 1u;
	}
	while (len > 0 && out[len - 1] == 0)
		len--;
	return len;
}
