/* grow.h - room in a buffer that grows by doubling. */
#ifndef MC_GROW_H
#define MC_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* buf (cap bytes, NULL when cap is 0) with room for want bytes: buf itself
 * when it has it, else moved to a size doubled from cap (from min when 0)
 * until it does, *cap updated. NULL when out of memory (buf and *cap then
 * unchanged). */
static inline void *grow(void *buf, size_t *cap, size_t want, size_t min)
{
	if (want <= *cap)
		return buf;
	size_t c = *cap ? *cap : min;
	while (c < want) {
		if (c > SIZE_MAX / 2)
			return NULL;
		c *= 2;
	}
	void *nb = realloc(buf, c);
	if (nb)
		*cap = c;
	return nb;
}

#endif
