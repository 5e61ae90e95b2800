#!/bin/bash
# test-man.sh - the man pages render without warnings (groff -ww, man -l),
# and mcached(8) lists every option of `mcached --help`. Speaks TAP.
set -u
: "${MC_BUILD_ROOT:?MC_BUILD_ROOT is not set}"
: "${MC_SOURCE_ROOT:?MC_SOURCE_ROOT is not set}"
: "${MCACHED:?MCACHED is not set}"

if ! command -v groff >/dev/null 2>&1; then
	echo "1..0 # SKIP groff is not installed"
	exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/mcache-man-XXXXXX")
trap 'rm -rf "$T"' EXIT
PAGES=("$MC_BUILD_ROOT/doc/mcached.8" "$MC_BUILD_ROOT/doc/mcachectl.1"
       "$MC_SOURCE_ROOT/doc/libmcache.3")
echo "1..$((2 * ${#PAGES[@]} + 1))"
N=0
for p in "${PAGES[@]}"; do
	N=$((N + 1))
	if [ -s "$p" ] && groff -man -ww -z "$p" 2>"$T/warn" && [ ! -s "$T/warn" ]; then
		echo "ok $N - $(basename "$p"): groff -man -ww, no warnings"
	else
		echo "not ok $N - $(basename "$p"): groff -man -ww, no warnings"
		sed 's/^/# /' "$T/warn"
	fi
	N=$((N + 1))
	if MANWIDTH=80 man -P cat -l "$p" >"$T/out" 2>"$T/err" && grep -q '^NAME' "$T/out"; then
		echo "ok $N - $(basename "$p"): man -l renders it"
	else
		echo "not ok $N - $(basename "$p"): man -l renders it"
		sed 's/^/# /' "$T/err"
	fi
done
MANWIDTH=200 man -P cat -l "$MC_BUILD_ROOT/doc/mcached.8" >"$T/mcached.txt" 2>/dev/null
missing=
for o in $("$MCACHED" --help | grep -Eo -- '--[a-z][a-z-]+' | sort -u); do
	grep -q -- "$o" "$T/mcached.txt" || missing="$missing $o"
done
N=$((N + 1))
if [ -z "$missing" ]; then
	echo "ok $N - mcached(8) lists every option of mcached --help"
else
	echo "not ok $N - mcached(8) lacks:$missing"
fi
