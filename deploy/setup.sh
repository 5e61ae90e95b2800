#!/usr/bin/env bash
# setup.sh - install mcache's build dependencies, build it, and run the
# server in the foreground (`run`) or the test suite (`test`).
#
#   deploy/setup.sh run [MCACHED-OPTION...]   build, then start mcached on ./var
#   deploy/setup.sh test                      build and run the whole suite three
#                                             times: plain (-Werror), under
#                                             ASan+UBSan, under ThreadSanitizer;
#                                             prints "N passed, N failed" last
#
# Run as root, it installs the Debian packages that are missing (and only
# those) with apt-get; otherwise it names them and goes on. The build
# directory is ./build (MCACHE_BUILD_DIR overrides it; the sanitizer builds
# go to ./build-asan and ./build-tsan); extra `meson setup` arguments for a
# new build directory may be given in MCACHE_MESON_ARGS. MCACHE_TEST_VARIANTS
# picks the variants to test (default "plain asan tsan").
#
# The builds made here are development builds: their built-in socket (the
# default_socket option, which mcached, libmcache and mcachectl share) is
# ./var/mcached.sock, so after `run` a plain `build/client/mcachectl ls /`
# reaches the server. $MCACHE_SOCKET, when set, overrides it for all three.
set -euo pipefail

PACKAGES=(meson ninja-build pkg-config gcc libevent-dev libprotobuf-c-dev
          protobuf-c-compiler liblmdb-dev libjansson-dev libsystemd-dev libcmocka-dev
          libfuse3-dev fuse3)
# What `test` needs besides, so that no test passes for want of a tool:
# promtool (prometheus) checks /metrics, systemd-analyze (systemd) the unit,
# groff and man-db the man pages, mdb_copy (lmdb-utils) the hot copy,
# coreutils the mcachectl parity test. Their daemons are not started (see
# install_deps).
TEST_PACKAGES=(prometheus systemd groff man-db lmdb-utils coreutils)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${MCACHE_BUILD_DIR:-build}
DEV_SOCKET=$ROOT/var/mcached.sock

say() { printf 'setup: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() {
	cat >&2 <<'USAGE'
usage: deploy/setup.sh run [MCACHED-OPTION...]
       deploy/setup.sh test
USAGE
	exit 2
}

# Is Debian package $1 installed (not merely known to dpkg)?
pkg_installed() {
	dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

# install_deps [PACKAGE...]: PACKAGES and these, those missing.
install_deps() {
	local want=("${PACKAGES[@]}" "$@")
	if ! command -v dpkg >/dev/null 2>&1; then
		say "no dpkg here: not a Debian system; install by hand: ${want[*]}"
		return 0
	fi
	local missing=() p
	for p in "${want[@]}"; do
		pkg_installed "$p" || missing+=("$p")
	done
	if ((${#missing[@]} == 0)); then
		return 0
	fi
	if [[ $(id -u) -ne 0 ]]; then
		say "missing packages: ${missing[*]}"
		say "not root, so not installing them; run: sudo apt-get install ${missing[*]}"
		return 0
	fi
	say "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# No package may start a daemon here (prometheus's postinst would, on a
	# host that runs services): invoke-rc.d asks policy-rc.d, and 101 means
	# "not allowed". A policy-rc.d of the host's own is left alone.
	local policy=/usr/sbin/policy-rc.d ours=
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && ours=1
	fi
	local rc=0
	{ apt-get -y -q update && apt-get -y -q install --no-install-recommends "${missing[@]}"; } \
		</dev/null || rc=$?
	[[ -n $ours ]] && rm -f "$policy"
	return "$rc"
}

# build [DIR [MESON-SETUP-ARG...]]: configure DIR once, then build it.
build() {
	local dir=${1:-$BUILD}
	shift || true
	cd "$ROOT"
	if [[ ! -f $dir/build.ninja ]]; then
		local wipe=()
		# A directory left by an interrupted setup: start it afresh.
		[[ -d $dir/meson-private ]] && wipe=(--wipe)
		local sock=()
		[[ "$* ${MCACHE_MESON_ARGS:-}" == *default_socket=* ]] ||
			sock=("-Ddefault_socket=$DEV_SOCKET")
		# shellcheck disable=SC2086 # MCACHE_MESON_ARGS is split on purpose
		meson setup "${wipe[@]}" "${sock[@]}" "$@" ${MCACHE_MESON_ARGS:-} "$dir" . ||
			die "meson setup failed"
	fi
	ninja -C "$dir" || die "build failed"
}

# "N passed, N failed" from meson's testlog.json files (one JSON object a
# line), summed over the variants; each argument is VARIANT=LOG.
summarize() {
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$@" <<'PY'
import json, os, sys
passed = failed = 0
bad = []
for arg in sys.argv[1:]:
  variant, log = arg.split("=", 1)
  if not os.path.exists(log):
    bad.append("%s: no test log" % variant)
    failed += 1
    continue
  with open(log) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        try:
            t = json.loads(line)
        except ValueError:
            continue
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r in ("FAIL", "UNEXPECTEDPASS", "TIMEOUT", "ERROR"):
            failed += 1
            bad.append("%s:%s (%s)" % (variant, t.get("name", "?"), r))
if bad:
    print("failed: " + ", ".join(bad))
print("%d passed, %d failed" % (passed, failed))
PY
	else
		local passed=0 failed=0 arg log p f
		for arg in "$@"; do
			log=${arg#*=}
			if [[ ! -f $log ]]; then
				failed=$((failed + 1))
				continue
			fi
			p=$(grep -cE '"result": *"(OK|EXPECTEDFAIL)"' "$log" || true)
			f=$(grep -cE '"result": *"(FAIL|UNEXPECTEDPASS|TIMEOUT|ERROR)"' "$log" || true)
			passed=$((passed + ${p:-0}))
			failed=$((failed + ${f:-0}))
		done
		echo "$passed passed, $failed failed"
	fi
}

cmd_run() {
	install_deps
	cd "$ROOT"
	# A build directory configured before the development socket existed
	# is pointed at it, so that server and clients agree.
	if [[ -f $BUILD/build.ninja && "${MCACHE_MESON_ARGS:-}" != *default_socket=* ]]; then
		meson configure "$BUILD" "-Ddefault_socket=$DEV_SOCKET" >/dev/null ||
			die "meson configure failed"
	fi
	build
	cd "$ROOT"
	mkdir -p var/data
	local sock=${MCACHE_SOCKET:-$DEV_SOCKET}
	say "socket: $sock  (mcached, libmcache and mcachectl default to it)"
	say "data:   $ROOT/var/data"
	say "admin:  $(dirname "$sock")/admin.sock  (curl --unix-socket $(dirname "$sock")/admin.sock http://localhost/stats)"
	say "client: $BUILD/client/mcachectl ls /"
	say "starting $BUILD/server/mcached in the foreground; stop it with Ctrl-C"
	exec "$BUILD/server/mcached" --data ./var/data "$@"
}

cmd_test() {
	install_deps "${TEST_PACKAGES[@]}"
	cd "$ROOT"
	local variants=${MCACHE_TEST_VARIANTS:-plain asan tsan} v dir rc=0 logs=()
	for v in $variants; do
		case $v in
		plain) dir=$BUILD; build "$dir" -Dwerror=true ;;
		asan) dir=$BUILD-asan; build "$dir" -Dwerror=true -Db_sanitize=address,undefined \
			-Db_lundef=false ;;
		# gcc warns (-Wtsan) that ThreadSanitizer does not model the seqlock
		# fences: they are correct C11, and the lock-free readers of the
		# segment live in other processes, where TSan does not look anyway.
		tsan) dir=$BUILD-tsan; build "$dir" -Dwerror=true -Db_sanitize=thread -Dc_args=-Wno-tsan ;;
		*) die "unknown test variant '$v' (plain, asan, tsan)" ;;
		esac
		local log=$dir/meson-logs/testlog.json
		rm -f "$log"
		say "testing the $v build ($dir)"
		meson test -C "$dir" --print-errorlogs </dev/null || rc=1
		logs+=("$v=$log")
	done
	local out line
	out=$(summarize "${logs[@]}")
	echo "$out"
	line=${out##*$'\n'}
	local failed=${line#*, }
	failed=${failed%% *}
	if [[ $failed != 0 || $rc != 0 ]]; then
		exit 1
	fi
}

case ${1:-} in
run) shift; cmd_run "$@" ;;
test) shift; [[ $# -eq 0 ]] || usage; cmd_test ;;
*) usage ;;
esac
