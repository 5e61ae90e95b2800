#!/bin/bash
# test-coreutils.sh - mcachectl against coreutils: the same commands on the
# same tree, once in a mcache namespace and once in a temporary directory,
# must give the same exit status and the same error message after the
# program's name ("cannot remove '/x': No such file or directory"); for a
# few commands the output too (paths relative to the tree's root). Speaks TAP. Needs $MCACHED and $MCACHECTL.
# The cases and their counterparts are listed in doc/coreutils-parity.md.
set -u
umask 022
export LC_ALL=C      # coreutils' quotes are 'x' in the C locale
: "${MCACHED:?MCACHED is not set}"
: "${MCACHECTL:?MCACHECTL is not set}"

T=$(mktemp -d "${TMPDIR:-/tmp}/mcache-coreutils-XXXXXX")
D=$T/fs              # the coreutils side
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ]; then
		kill -KILL "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

"$MCACHED" --socket "$T/mcached.sock" --data "$T/data" --admin none 2>"$T/mcached.log" &
SERVER_PID=$!
for _ in $(seq 1 500); do
	"$MCACHECTL" -s "$T/mcached.sock" stat / >/dev/null 2>&1 && break
	sleep 0.02
done
export MCACHE_SOCKET=$T/mcached.sock

# The same tree on both sides.
mkdir -p "$D/d" "$D/e" "$D/e2" "$D/full" && touch "$D/f" "$D/d/f" "$D/full/c" &&
	ln -s f "$D/l"
m() { "$MCACHECTL" "$@" >/dev/null; }
m mkdir /d /e /e2 /full && m touch /f /d/f /full/c && m ln -s f /l ||
	{ echo "1..0 # the tree could not be made in mcache"; exit 1; }

# The cases, in order (each side's tree changes as the commands succeed).
# "@" stands for the tree's root: $D for coreutils, nothing for mcachectl.
# A leading "=" compares standard output too.
CASES=(
	"ls @/x" "ls -l @/x" "ls -d @/x" "ls @/f/" "=ls @/d" "=ls -d @/f" "ls -l @/f"
	"stat @/x" "stat @/x/y" "stat @/f/x" "stat @/d"
	"mkdir @/d" "mkdir @/x/y" "mkdir @/f/x" "mkdir -p @/f" "mkdir -p @/f/x"
	"mkdir -p @/p/q/r" "mkdir -p @/d" "mkdir @/new" "mkdir @/new"
	"rmdir @/x" "rmdir @/full" "rmdir @/f" "rmdir @/l" "rmdir @/new"
	"rm @/x" "rm @/d" "rm -f @/x" "rm -d @/full" "rm -r @/x" "rm -rf @/x" "rm @/f/"
	"rm -d @/e2" "rm -r @/p" "rm -f" "rm @/d/f"
	"touch @/x/y" "touch @/f/" "touch @/f/x" "touch @/t" "touch @/t"
	"ln @/f @/full/c" "ln -s f @/l" "ln @/x @/y" "ln @/d @/dd" "ln -s x @/nope/l"
	"ln @/f @/hard" "ln -s f @/l2"
	"mv @/x @/y" "mv @/e @/full" "mv @/d @/f" "mv @/f @/d" "mv @/f @/nope/x" "mv @/t @/t2"
	"chmod 0644 @/x" "chmod 0644 @/f/x" "chmod 0600 @/f"
	"chown root @/x" "chown nosuchuser @/f" "chown root:nosuchgroup @/f" "chown 0:0 @/f"
	"truncate -s 1 @/x/y" "truncate -s 1 @/d" "truncate -s abc @/f" "truncate -s 100 @/f"
	"truncate -s 5 @/newt"
	"readlink @/f" "readlink @/x" "=readlink @/l" "readlink -v @/f"
	"=ls @/"
)
echo "1..${#CASES[@]}"
N=0
FAILED=0
for c in "${CASES[@]}"; do
	N=$((N + 1))
	cmp_out=
	if [ "${c:0:1}" = "=" ]; then
		cmp_out=1
		c=${c:1}
	fi
	read -r -a words <<<"$c"
	name=${words[0]}
	# coreutils: mv is mv -T (mcachectl mv renames, never moves into).
	cu=("${words[@]//@/$D}")
	[ "$name" = mv ] && cu=(mv -T "${cu[@]:1}")
	"${cu[@]}" >"$T/cu.out" 2>"$T/cu.err"
	cu_rc=$?
	"$MCACHECTL" "${words[@]//@/}" >"$T/mc.out" 2>"$T/mc.err"
	mc_rc=$?
	# The text after "PROGRAM: ", paths relative to the tree's root.
	# coreutils 9.1 says "cannot statx" where older ones say "cannot stat".
	cu_msg=$(sed -e "s|$D||g" -e "s/^$name: //" -e 's/cannot statx/cannot stat/' "$T/cu.err")
	mc_msg=$(sed -e 's/^mcachectl: //' "$T/mc.err")
	same=1
	[ "$cu_rc" = "$mc_rc" ] && [ "$cu_msg" = "$mc_msg" ] || same=
	sed -i "s|$D||g" "$T/cu.out"
	if [ -n "$cmp_out" ] && ! cmp -s "$T/cu.out" "$T/mc.out"; then
		same=
	fi
	if [ -n "$same" ]; then
		echo "ok $N - mcachectl ${words[*]//@/}: exit $mc_rc${mc_msg:+, $mc_msg}"
	else
		FAILED=$((FAILED + 1))
		echo "not ok $N - mcachectl ${words[*]//@/} against ${cu[*]//$D/}"
		echo "#   coreutils: exit $cu_rc: $cu_msg"
		echo "#   mcachectl: exit $mc_rc: $mc_msg"
		if [ -n "$cmp_out" ]; then
			diff "$T/cu.out" "$T/mc.out" | sed 's/^/#   /'
		fi
	fi
done
[ "$FAILED" -eq 0 ]
