#!/bin/bash
# test-unit.sh - deploy/mcached.service passes `systemd-analyze verify` (with
# ExecStart pointed at the built mcached) and `systemd-analyze security
# --offline` rates it 2.0 or better. Skipped where systemd-analyze is
# missing. Speaks TAP.
set -u
: "${MCACHED:?MCACHED is not set}"
: "${MC_SOURCE_ROOT:?MC_SOURCE_ROOT is not set}"

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "1..0 # SKIP systemd-analyze is not installed"
	exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/mcache-unit-XXXXXX")
trap 'rm -rf "$T"' EXIT
U=$T/mcached.service
sed "s|^ExecStart=/usr/local/sbin/mcached|ExecStart=$MCACHED|" \
	"$MC_SOURCE_ROOT/deploy/mcached.service" >"$U"

echo "1..3"
if systemd-analyze verify "$U" >"$T/verify" 2>&1; then
	echo "ok 1 - systemd-analyze verify"
else
	echo "not ok 1 - systemd-analyze verify"
	sed 's/^/# /' "$T/verify"
fi
systemd-analyze security --offline=true "$U" >"$T/security" 2>&1
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T/security")
echo "# exposure level: ${score:-none}"
if [ -n "$score" ]; then
	echo "ok 2 - security --offline rates it"
else
	echo "not ok 2 - security --offline rates it"
	sed 's/^/# /' "$T/security"
fi
if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
	echo "ok 3 - exposure level $score <= 2.0"
else
	echo "not ok 3 - exposure level ${score:-?} <= 2.0"
	grep '✗' "$T/security" | sed 's/^/# /'
fi
