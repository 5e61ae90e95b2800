/* mc_watch.h - what mcached and libmcache agree on for watch connections
 * (OP_WATCH): the op's flags and the encoding of the events pushed.
 *
 * A watcher (a mount) sends OP_WATCH with MC_WATCH_SUBSCRIBE and gets a
 * mount id (the result's cookie); its other connections send OP_WATCH
 * with MC_WATCH_TAG and that id. From then on the server pushes, on the
 * watch connection, a Response of id 0 with one Result whose cookie is a
 * sequence number and whose data holds the events of one or more
 * mutations, in order; the watcher answers OP_WATCH with MC_WATCH_ACK and
 * the highest sequence whose events it has applied (its replies carry the
 * request's id, never 0). Events are records of
 *
 *   u8 kind, u8 0, u16 namelen, u64 id, then namelen bytes of name
 *
 * little-endian: MC_WEV_ATTR (the attributes of inode id changed, or it
 * went; namelen 0) or MC_WEV_ENTRY (the name in directory id was created,
 * removed or now names another inode). */
#ifndef MC_WATCH_H
#define MC_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MC_WATCH_SUBSCRIBE (1u << 0)  /* this connection receives events */
#define MC_WATCH_TAG       (1u << 1)  /* this connection's mutations are mount cookie's */
#define MC_WATCH_ACK       (1u << 2)  /* events up to sequence cookie are applied */

#define MC_WEV_ATTR  1u
#define MC_WEV_ENTRY 2u
#define MC_WEV_HDR   12u

/* Decode the event at *pos of buf[0..len): 1 and *pos advanced, 0 at the
 * end, -1 when the bytes are not an event (nothing changed then). */
static inline int mc_wev_next(const uint8_t *buf, size_t len, size_t *pos, unsigned *kind,
                              uint64_t *id, const char **name, size_t *namelen)
{
	size_t p = *pos;
	if (p == len)
		return 0;
	if (len - p < MC_WEV_HDR)
		return -1;
	unsigned k = buf[p];
	size_t n = (size_t)buf[p + 2] | (size_t)buf[p + 3] << 8;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | buf[p + 4 + i];
	if ((k != MC_WEV_ATTR && k != MC_WEV_ENTRY) || (k == MC_WEV_ENTRY) != (n > 0) ||
	    n > len - p - MC_WEV_HDR)
		return -1;
	*kind = k;
	*id = v;
	*name = (const char *)buf + p + MC_WEV_HDR;
	*namelen = n;
	*pos = p + MC_WEV_HDR + n;
	return 1;
}

/* Encode an event at out (MC_WEV_HDR + namelen bytes). */
static inline void mc_wev_put(uint8_t *out, unsigned kind, uint64_t id, const char *name,
                              size_t namelen)
{
	out[0] = (uint8_t)kind;
	out[1] = 0;
	out[2] = (uint8_t)namelen;
	out[3] = (uint8_t)(namelen >> 8);
	for (int i = 0; i < 8; i++)
		out[4 + i] = (uint8_t)(id >> (8 * i));
	if (namelen)
		memcpy(out + MC_WEV_HDR, name, namelen);
}

#endif
