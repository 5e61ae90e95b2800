#!/bin/bash
# pjdfstest.sh - run pjdfstest (POSIX file-system conformance) on an
# mcachefs mount and on tmpfs, in the same run, and print a table of files
# and assertions passed on each, then the failures on the mount.
#
#   tests/external/pjdfstest.sh PJDFSTEST_DIR BUILD_DIR [OUT_DIR]
#
# PJDFSTEST_DIR: a built pjdfstest source tree (its `pjdfstest` binary and
# `tests/`; see tests/external/README.md). BUILD_DIR: the mcache build
# holding server/mcached and client/mcachefs. OUT_DIR (default: a temporary
# directory, kept) gets the prove logs. Fetches nothing. Needs root (the
# suite changes owners and makes devices), prove, /dev/fuse. Not part of
# `meson test`: it takes minutes. $MCACHEFS_ARGS adds mcachefs options (for
# example "--no-default-permissions").
set -euo pipefail

PJD=$(cd "${1:?usage: pjdfstest.sh PJDFSTEST_DIR BUILD_DIR [OUT_DIR]}" && pwd)
BUILD=$(cd "${2:?usage: pjdfstest.sh PJDFSTEST_DIR BUILD_DIR [OUT_DIR]}" && pwd)
OUT=${3:-$(mktemp -d "${TMPDIR:-/tmp}/pjdfstest-out-XXXXXX")}
mkdir -p "$OUT"
[ -x "$PJD/pjdfstest" ] || { echo "no $PJD/pjdfstest: build it first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "pjdfstest needs root" >&2; exit 2; }

# shellcheck source=SCRIPTDIR/mount-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/mount-common.sh"
mount_start pjdfstest "$OUT/mcached.log" -o allow_other

# run NAME DIR: prove -r in a fresh directory of DIR; the log in OUT/NAME.log.
run() {
	mkdir "$2/pjd"
	local start=$SECONDS
	(cd "$2/pjd" && prove -r "$PJD/tests" >"$OUT/$1.log" 2>&1) || true
	echo $((SECONDS - start)) >"$OUT/$1.secs"
}
# summary NAME: "files-passed/files assertions-passed/assertions seconds"
summary() {
	local log=$OUT/$1.log files tests bad_files bad_tests
	files=$(sed -n 's/^Files=\([0-9]*\), Tests=\([0-9]*\),.*/\1/p' "$log")
	tests=$(sed -n 's/^Files=\([0-9]*\), Tests=\([0-9]*\),.*/\2/p' "$log")
	bad_files=$(grep -c '(Wstat: .*Failed: [1-9]' "$log" || true)
	bad_tests=$(grep -o 'Failed: [0-9]*)' "$log" | awk -F'[ )]' '{s += $2} END {print s + 0}')
	echo "$((files - bad_files))/$files $((tests - bad_tests))/$tests $(cat "$OUT/$1.secs")s"
}

run mcachefs "$T/mnt"
run tmpfs "$T/tmpfs"

printf '%-10s %-12s %-14s %s\n' "" "files" "assertions" "time"
read -r f a s <<<"$(summary mcachefs)"
printf '%-10s %-12s %-14s %s\n' mcachefs "$f" "$a" "$s"
read -r f a s <<<"$(summary tmpfs)"
printf '%-10s %-12s %-14s %s\n' tmpfs "$f" "$a" "$s"
echo
echo "failures on mcachefs (file: failed assertions):"
sed -n '/^Test Summary Report/,/^Files=/p' "$OUT/mcachefs.log" |
	awk '/\(Wstat: .*Failed: 0\)/ {if (l != "") print l; l = ""; next}
	     /\(Wstat/ {if (l != "") print l; l = ""; f = $1; next}
	     /Failed tests?:/ {sub(/^ +Failed tests?: +/, ""); l = "  " f ": " $0; next}
	     /^ +[0-9]/ && l != "" {sub(/^ +/, " "); l = l $0; next}
	     {if (l != "") print l; l = ""}
	     END {if (l != "") print l}'
echo "logs: $OUT"
