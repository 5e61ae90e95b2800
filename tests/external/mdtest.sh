#!/bin/bash
# mdtest.sh - metadata rates on an mcachefs mount and on tmpfs, in the same
# run and with the same parameters: mdtest -F -n N -u (np 1, and np 2 when
# mpirun is there), then `find` over a tree of FIND_ENTRIES entries, cold
# and cached, with the server requests the cached one made. The same mdtest
# also runs on fusefloor (tests/bench/fusefloor.c, when built), a FUSE file
# system that answers every request from its own memory: the rate of a FUSE
# file system whose back end costs nothing, so the "floor" columns say how
# much of the gap to tmpfs is FUSE's own.
#
#   tests/external/mdtest.sh MDTEST_BINARY BUILD_DIR [N] [FIND_ENTRIES]
#
# MDTEST_BINARY: a built mdtest (IOR's src/mdtest; see README.md here).
# BUILD_DIR: the mcache build holding server/mcached, client/mcachefs and
# client/mcachectl. N defaults to 50000, FIND_ENTRIES to 100000;
# $MCACHEFS_ARGS adds mcachefs options (the kernel caches by default,
# kept exact by mcachefs's watch; "--no-watch" for a mount whose kernel
# caches nothing, as before the watch). MPI ranks are told to yield
# when idle, or on two cores their busy-waiting starves the FUSE daemon. Fetches
# nothing; needs root and /dev/fuse. Not part of `meson test`. Timings on a
# shared machine are noisy: compare the ratios of one run.
set -euo pipefail

MDTEST=$(readlink -f "${1:?usage: mdtest.sh MDTEST_BINARY BUILD_DIR [N] [FIND_ENTRIES]}")
BUILD=$(cd "${2:?usage: mdtest.sh MDTEST_BINARY BUILD_DIR [N] [FIND_ENTRIES]}" && pwd)
N=${3:-50000}
FIND_ENTRIES=${4:-100000}
[ "$(id -u)" -eq 0 ] || { echo "needs root (mount)" >&2; exit 2; }

# shellcheck source=SCRIPTDIR/mount-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/mount-common.sh"
mount_start mdtest ""
FLOOR=
if [ -x "$BUILD/tests/bench/fusefloor" ]; then
	mkdir -p "$T/floor"
	"$BUILD/tests/bench/fusefloor" "$T/floor"
	FLOOR=$T/floor
	trap 'fusermount3 -u "$FLOOR" 2>/dev/null || true; mount_cleanup' EXIT
else
	echo "# $BUILD/tests/bench/fusefloor not built: no floor columns"
fi

NPS="1"
if command -v mpirun >/dev/null 2>&1; then
	NPS="1 2"
else
	echo "# mpirun not found: np 1 only"
fi

# rates NP DIR: "create stat remove" (mean ops/s) of one mdtest run.
rates() {
	local np=$1 dir=$2 log=$T/mdtest.log
	mkdir -p "$dir/md"
	if [ "$np" -eq 1 ] && ! command -v mpirun >/dev/null 2>&1; then
		"$MDTEST" -F -n "$N" -u -i 1 -d "$dir/md" >"$log" 2>&1
	else
		mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np "$np" "$MDTEST" -F -n "$N" -u -i 1 \
			-d "$dir/md" >"$log" 2>&1
	fi
	rm -rf "$dir/md"
	awk '/File creation/ {c = $5} /File stat/ {s = $5} /File removal/ {r = $5}
	     END {printf "%d %d %d\n", c, s, r}' "$log"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b ? a / b : 0}'; }

printf '%-4s %-8s %12s %12s %12s %8s %8s %8s\n' np phase mcachefs/s floor/s tmpfs/s mc/tmpfs fl/tmpfs mc/floor
row() { # row NP PHASE MCACHEFS FLOOR TMPFS
	printf '%-4s %-8s %12s %12s %12s %8s %8s %8s\n' "$1" "$2" "$3" "$4" "$5" \
		"$(ratio "$3" "$5")" "$(ratio "$4" "$5")" "$(ratio "$3" "$4")"
}
for np in $NPS; do
	read -r mc ms mr <<<"$(rates "$np" "$T/mnt")"
	fc=0 fs=0 fr=0
	[ -n "$FLOOR" ] && read -r fc fs fr <<<"$(rates "$np" "$FLOOR")"
	read -r tc ts tr <<<"$(rates "$np" "$T/tmpfs")"
	row "$np" create "$mc" "$fc" "$tc"
	row "$np" stat "$ms" "$fs" "$ts"
	row "$np" remove "$mr" "$fr" "$tr"
done

# find over FIND_ENTRIES entries: 100 directories of FIND_ENTRIES/100 files.
tree() {
	local per=$((FIND_ENTRIES / 100)) d
	for d in $(seq -w 1 100); do
		mkdir -p "$1/tree/d$d"
		(cd "$1/tree/d$d" && seq -f 'f%06g' 1 "$per" | xargs touch)
	done
}
# find_secs DIR: seconds (3 decimals) of one find over the tree.
find_secs() {
	local s e
	s=$(date +%s.%N)
	find "$1/tree" >/dev/null
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f", e - s}'
}
requests() {
	"$BUILD/client/mcachectl" -s "$T/mcached.sock" stats |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["rpc"]["requests"])'
}
tree "$T/mnt"
tree "$T/tmpfs"
mc_cold=$(find_secs "$T/mnt")
r0=$(requests)
mc_warm=$(find_secs "$T/mnt")
r1=$(requests)
tf=$(find_secs "$T/tmpfs")
entries=$(find "$T/tmpfs/tree" | wc -l)
mc_entries=$(find "$T/mnt/tree" | wc -l)
[ "$mc_entries" -eq "$entries" ] || echo "# the mount lists $mc_entries entries, tmpfs $entries"
stat_secs() { # stat_secs DIR: seconds of a stat of every entry (find -printf %s)
	local s e
	s=$(date +%s.%N)
	find "$1/tree" -printf '%s\n' >/dev/null
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f", e - s}'
}
mc_lstat=$(stat_secs "$T/mnt")
tf_lstat=$(stat_secs "$T/tmpfs")
echo
echo "find over $entries entries: mcachefs ${mc_cold}s cold, ${mc_warm}s cached; tmpfs ${tf}s;" \
     "rate ratio (cached) $(ratio "$tf" "$mc_warm"); server requests during the cached find: $((r1 - r0 - 1))"
echo "find -printf %s (an lstat per entry): mcachefs ${mc_lstat}s, tmpfs ${tf_lstat}s, ratio $(ratio "$tf_lstat" "$mc_lstat")"
