/* mcachectl_extents.h - `mcachectl extents`: a file's extent map and its
 * extent-state ranges, as a table or as JSON (mcachectl_extents.c). */
#ifndef MCACHECTL_EXTENTS_H
#define MCACHECTL_EXTENTS_H

#include <jansson.h>

#include "mcache.h"

/* Print the extent map of the regular file path (mc_extent_map over the
 * whole offset space) and its extent-state ranges, each the longest run of
 * bytes carrying the same nonzero bits, in order. With doc NULL as two
 * tables on stdout:
 *
 *   OFF LEN PHYS FLAGS      (one line per extent; hex flags)
 *   START END BITS          (one line per range, END inclusive; hex bits)
 *
 * each under a header line; else appended to the array doc as one object
 * {"path", "extents": [{"off","len","phys","flags"}...],
 *  "ranges": [{"start","end","bits"}...]} (a number past 2^63 - 1 is
 * written as a string of its decimal digits).
 * 0, or -errno: those of mc_open, mc_extent_map and mc_range_find (EISDIR
 * for a directory), ENOMEM. Nothing is printed on failure. */
int extents_print(mc_client *c, const char *path, json_t *doc);

#endif
