/* bytes.h - fixed-width integers in byte buffers: little-endian for stored
 * values and journal records, big-endian for LMDB keys (so key order is
 * numeric order). One memcpy of a converted value each. */
#ifndef MC_BYTES_H
#define MC_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void put_le16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static inline void put_le32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static inline void put_le64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static inline void put_be32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static inline void put_be64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }

static inline uint16_t get_le16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static inline uint32_t get_le32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static inline uint64_t get_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }
static inline uint32_t get_be32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static inline uint64_t get_be64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

#endif
