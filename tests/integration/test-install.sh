#!/bin/bash
# test-install.sh - `meson install` into a DESTDIR puts the library, its
# header and a complete mcache.pc, mcached, mcachectl, the systemd unit and
# the example configuration in place; the README's demo then builds against
# the installed library with pkg-config and runs. Speaks TAP.
set -u

: "${MC_BUILD_ROOT:?MC_BUILD_ROOT is not set}"
: "${MC_SOURCE_ROOT:?MC_SOURCE_ROOT is not set}"

T=$(mktemp -d "${TMPDIR:-/tmp}/mcache-install-XXXXXX")
trap 'rm -rf "$T"' EXIT
D=$T/dest

N=0
FAILED=0
ok() { # ok STATUS NAME
	N=$((N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $N - $2"
	else
		echo "not ok $N - $2"
		FAILED=$((FAILED + 1))
	fi
}
check() { local name=$1; shift; "$@"; ok $? "$name"; }
# has NAME PATTERN: a file under $D whose path matches PATTERN
has() { [ -n "$(find "$D" -path "$D$2" -print -quit)" ]; }

echo "1..11"
meson install -C "$MC_BUILD_ROOT" --destdir "$D" --no-rebuild >"$T/log" 2>&1
ok $? "meson install --destdir"
[ -s "$T/log" ] && sed 's/^/# /' "$T/log" | tail -n 5

check "libmcache.so.0 installed" has lib '*/lib*/libmcache.so.0'
check "mcache.h installed" has header '*/include/mcache.h'
check "mcached and mcachectl installed" eval 'has a "*/sbin/mcached" && has b "*/bin/mcachectl"'
check "the systemd unit installed" has unit '*/lib/systemd/system/mcached.service'
check "the example configuration installed" has conf '*/doc/mcache/mcached.conf.example'
check "man pages mcached(8), mcachectl(1), libmcache(3) installed" \
	eval 'has a "*/man8/mcached.8" && has b "*/man1/mcachectl.1" && has c "*/man3/libmcache.3"'
PC=$(find "$D" -name mcache.pc -print -quit)
check "mcache.pc: Requires.private: libprotobuf-c" grep -q '^Requires.private: libprotobuf-c' "$PC"

# The README's demo, as written there.
sed -n '/^\/\* demo.c \*\//,/^```$/p' "$MC_SOURCE_ROOT/README.md" | sed '$d' >"$T/demo.c"
check "the README has the demo" grep -q mc_connect "$T/demo.c"
FLAGS=$(PKG_CONFIG_PATH=$(dirname "$PC") PKG_CONFIG_SYSROOT_DIR=$D pkg-config --cflags --libs mcache)
cc "$T/demo.c" -o "$T/demo" $FLAGS 2>"$T/cc.log"
ok $? "the demo builds with pkg-config --cflags --libs mcache"
sed 's/^/# /' "$T/cc.log"
LIB=$(dirname "$(find "$D" -name libmcache.so.0 -print -quit)")
if ldd "$LIB/libmcache.so.0" 2>/dev/null | grep -Eq 'lib(a|t|ub)san'; then
	# A sanitizer build's library needs its runtime loaded first.
	N=$((N + 1))
	echo "ok $N - the demo runs # SKIP the library is built with a sanitizer"
else
	out=$(MCACHE_SOCKET="$T/none.sock" LD_LIBRARY_PATH=$LIB "$T/demo" 2>&1)
	rc=$?
	check "the demo loads the installed library and runs (no server: mc_connect fails)" \
		eval '[ "$rc" -eq 1 ] && [[ "$out" == "mc_connect: "* ]]'
fi
[ "$FAILED" -eq 0 ]
