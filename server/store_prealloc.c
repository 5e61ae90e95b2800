/* store_prealloc.c - room written ahead at the end of the LMDB file.
 *
 * NOTES
 *  1. A commit that writes pages past the end of data.mdb grows the file,
 *     and its fdatasync then commits the file system's journal as well
 *     (the new size and blocks): on ext4 about twice a flush of pages
 *     inside the file (24 KiB then fdatasync, 200 rounds on this store's
 *     disk: p50 186-300 us growing the file, 96-155 us inside it). A
 *     commit appends its batch to `log`, on new pages mostly, so nearly
 *     every commit grew the file. store_prealloc keeps STORE_ROOM_LOW to
 *     STORE_ROOM_LOW + STORE_ROOM_STEP bytes of zeros past the last page
 *     LMDB uses. Written zeros, not fallocate: blocks allocated unwritten
 *     are converted at their first write, a journal commit again (p50
 *     165-224 us in the same test).
 *  2. Safe under commit_lock: LMDB writes the file only in a commit, and
 *     a committed transaction has written every page up to its last one,
 *     so the end of the file (fstat, every time: a large commit may have
 *     grown it past the room) is past every page in use, and the zeros
 *     land on none. LMDB reads no page past its last one (nor does
 *     mdb_env_copy), so the room is invisible to it; a crash in the middle
 *     leaves zeros past the end, which is as harmless.
 *  3. The map bounds the room: the file never grows past map_size by us.
 *     A failed write (no space) truncates the file back to where it ended,
 *     so the room never takes space a commit needs.
 *  4. Writing STORE_ROOM_STEP and its fdatasync take 2-4 ms, which the
 *     next commit waits for: between the commits of clients that wait for
 *     each one (mc_sync in a loop) that is a stall in their loop once per
 *     50-100 commits. So there the committer asks for room only below
 *     STORE_ROOM_MIN (a low of STORE_ROOM_MIN), and room_owed records
 *     that less than STORE_ROOM_LOW is left; the committer writes it once
 *     nothing has happened for a while (commit.c invariant 7).
 */
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "store_impl.h"

#define ROOM_CHUNK (64u << 10)

static const unsigned char zeros[ROOM_CHUNK];

/* Append len bytes of zeros at end of fd and make them durable. 0 or
 * -errno, the file truncated back to end then. */
static int room_write(int fd, uint64_t end, uint64_t len)
{
	uint64_t off = 0;
	int err = 0;
	while (off < len && !err) {
		size_t n = len - off < ROOM_CHUNK ? (size_t)(len - off) : ROOM_CHUNK;
		ssize_t w = pwrite(fd, zeros, n, (off_t)(end + off));
		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0)
			off += (uint64_t)w;
	}
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	if (err && ftruncate(fd, (off_t)end) < 0)
		return err;
	return err;
}

bool store_room_owed(struct store *s)
{
	return atomic_load(&s->room_owed);
}

int store_prealloc(struct store *s, uint64_t low)
{
	if (s->readonly)
		return 0;
	MDB_envinfo ei;
	MDB_stat es;
	struct stat st;
	int fd, err = 0;
	pthread_mutex_lock(&s->commit_lock);
	if (mdb_env_get_fd(s->env, &fd) || mdb_env_info(s->env, &ei) || mdb_env_stat(s->env, &es) ||
	    fstat(fd, &st) < 0) {
		err = -EIO;
		goto out;
	}
	uint64_t used = ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize;
	uint64_t end = (uint64_t)st.st_size;
	if (end < used)
		end = used;   /* not yet written out: never below the pages in use */
	/* Note 4: below STORE_ROOM_LOW but above low, owed. */
	atomic_store(&s->room_owed, end - used < STORE_ROOM_LOW && end - used >= low &&
	                            end < s->map_size);
	if (end - used >= low || end >= s->map_size)
		goto out;
	uint64_t len = STORE_ROOM_STEP;
	if (len > s->map_size - end)
		len = s->map_size - end;
	err = room_write(fd, end, len);
	if (!err)
		err = 1;
out:
	pthread_mutex_unlock(&s->commit_lock);
	return err;
}
