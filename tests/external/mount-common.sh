# shellcheck shell=bash
# mount-common.sh - sourced by mdtest.sh and pjdfstest.sh (not run): a
# scratch directory $T (0755) holding an mcached, an mcachefs mount on
# $T/mnt and a tmpfs on $T/tmpfs, all unmounted, stopped and removed on exit.
#
#   mount_start NAME SERVER_LOG [MCACHEFS_OPTION...]
#
# NAME names the directory (NAME-run-XXXXXX under $TMPDIR); SERVER_LOG gets
# mcached's output, $T/mcached.log when empty. $BUILD is the mcache build;
# $MCACHEFS_ARGS follows the options given here.

mount_cleanup() {
	cd /
	fusermount3 -u "$T/mnt" 2>/dev/null || true
	umount "$T/tmpfs" 2>/dev/null || true
	[ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" || true
	rm -rf "$T"
}

mount_start() {
	local name=$1 log=$2
	shift 2
	T=$(mktemp -d "${TMPDIR:-/tmp}/$name-run-XXXXXX")
	chmod 0755 "$T"
	mkdir -p "$T/mnt" "$T/tmpfs" "$T/fsdata"
	SERVER_PID=
	trap mount_cleanup EXIT

	"$BUILD/server/mcached" -s "$T/mcached.sock" -d "$T/db" --admin none >"${log:-$T/mcached.log}" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do [ -S "$T/mcached.sock" ] && break; sleep 0.1; done
	# shellcheck disable=SC2086
	"$BUILD/client/mcachefs" -s "$T/mcached.sock" --data-dir "$T/fsdata" "$@" ${MCACHEFS_ARGS:-} "$T/mnt"
	mount -t tmpfs -o mode=0755 tmpfs "$T/tmpfs"
}
