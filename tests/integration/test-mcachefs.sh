#!/bin/bash
# test-mcachefs.sh - mcachefs against a real mcached: mount in a temporary
# directory, run ordinary commands (mkdir, touch, echo >, cat, ls -l, mv,
# ln, ln -s, mkfifo, mknod, truncate, dd, find, stat, rm -rf) and check what
# they see, that a library client (mcachectl) sees the same namespace, that
# mcache enforces the callers' permissions, that fsync clears the dirty
# ranges, that data survives a remount, that a mount (whose kernel caches,
# with its watch) shows a library client's change once the call returned,
# that one without the watch but with timeouts learns of it by polling,
# and that files
# deeper than PATH_MAX below the mount's root work. Speaks TAP;
# skipped where /dev/fuse, fusermount3 or root is missing. Needs $MCACHED,
# $MCACHECTL and $MCACHEFS (meson sets them).
set -u
umask 022

: "${MCACHED:?MCACHED is not set}"
: "${MCACHECTL:?MCACHECTL is not set}"
: "${MCACHEFS:?MCACHEFS is not set}"

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "1..0 # SKIP /dev/fuse or fusermount3 is not available"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP not root: the permission checks act for other users"
	exit 0
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/mcachefs-test-XXXXXX")
chmod 0755 "$T"
M=$T/mnt
M2=$T/mnt2
mkdir -p "$M" "$M2" "$T/data"
SOCK=$T/mcached.sock
SERVER_PID=
cleanup() {
	fusermount3 -u "$M" 2>/dev/null
	fusermount3 -u "$M2" 2>/dev/null
	if [ -n "$SERVER_PID" ]; then
		kill -KILL "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

N=0
FAILED=0
# check NAME COMMAND...: the command decides; its output goes to the log.
check() {
	local name=$1
	shift
	N=$((N + 1))
	if "$@" >"$T/out" 2>&1; then
		echo "ok $N - $name"
	else
		echo "not ok $N - $name"
		FAILED=$((FAILED + 1))
		sed 's/^/#   /' "$T/out"
	fi
}
# eq NAME EXPECTED ACTUAL
eq() {
	N=$((N + 1))
	if [ "$2" = "$3" ]; then
		echo "ok $N - $1"
	else
		echo "not ok $N - $1"
		echo "#   expected: $2"
		echo "#   actual:   $3"
		FAILED=$((FAILED + 1))
	fi
}
ctl() { "$MCACHECTL" -s "$SOCK" "$@"; }
# mount DIR [OPTIONS...]: mcachefs on DIR, waiting until it answers.
mount_fs() {
	local dir=$1
	shift
	"$MCACHEFS" -s "$SOCK" --data-dir "$T/data" -o allow_other "$@" "$dir" || return 1
	for _ in $(seq 100); do
		mountpoint -q "$dir" && return 0
		sleep 0.05
	done
	return 1
}
# until_true SECONDS COMMAND...: retry the command for that long.
until_true() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ $SECONDS -ge "$end" ] && return 1
		sleep 0.05
	done
}
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

echo "1..65"

# ---- usage ------------------------------------------------------------------
check "--help names every option" sh -c "'$MCACHEFS' --help | grep -q -- --data-dir && '$MCACHEFS' --help | grep -q -- --entry-timeout && '$MCACHEFS' --help | grep -q -- --poll-ms && '$MCACHEFS' --help | grep -q -- --no-watch"
check "a bad timeout: exit 2 and a message" sh -c "'$MCACHEFS' -s '$SOCK' --attr-timeout=-1 '$M' 2>&1; test \$? -eq 2" 
check "no server: exit 1, saying so, nothing mounted" sh -c "'$MCACHEFS' -s '$T/none.sock' --data-dir '$T/data' '$M' 2>&1 | grep -q 'cannot connect to mcached'; ! mountpoint -q '$M'"

"$MCACHED" -s "$SOCK" -d "$T/db" --admin none >"$T/mcached.log" 2>&1 &
SERVER_PID=$!
until_true 10 test -S "$SOCK" || { echo "Bail out! mcached did not start"; exit 1; }

if ! mount_fs "$M" 2>"$T/mount.err"; then
	if grep -qiE "fuse: device not found|permission denied|operation not permitted" "$T/mount.err"; then
		echo "# SKIP: FUSE cannot mount here: $(head -1 "$T/mount.err")"
		for i in $(seq 65); do echo "ok $i # SKIP no FUSE mount"; done
		exit 0
	fi
	echo "Bail out! mcachefs did not mount: $(cat "$T/mount.err")"
	exit 1
fi
check "mounted" mountpoint -q "$M"

# ---- ordinary commands -----------------------------------------------------
check "mkdir -p" mkdir -p "$M/a/b/c"
check "touch" touch "$M/a/empty"
check "echo > file" sh -c "echo hello > '$M/a/hello'"
eq "cat" "hello" "$(cat "$M/a/hello")"
eq "ls -l: mode, links, size" "-rw-r--r-- 1 6" \
	"$(ls -l "$M/a/hello" | awk '{print $1, $2, $5}')"
check "append" sh -c "echo world >> '$M/a/hello'"
eq "cat after append" "hello
world" "$(cat "$M/a/hello")"
check "mv" mv "$M/a/hello" "$M/a/b/moved"
check "mv: old name gone" test ! -e "$M/a/hello"
eq "mv: content kept" "hello
world" "$(cat "$M/a/b/moved")"
check "ln" ln "$M/a/b/moved" "$M/a/hard"
eq "ln: link count and same inode" "2 $(stat -c %i "$M/a/b/moved")" \
	"$(stat -c '%h %i' "$M/a/hard")"
check "ln -s" ln -s b/moved "$M/a/sym"
eq "readlink" "b/moved" "$(readlink "$M/a/sym")"
eq "cat through a symlink" "hello" "$(head -1 "$M/a/sym")"
check "mkfifo" mkfifo -m 0640 "$M/a/fifo"
eq "stat of the FIFO" "fifo 640" "$(stat -c '%F %a' "$M/a/fifo")"
check "mknod c" mknod "$M/a/null" c 1 3
eq "stat of the device: type and numbers" "character special file 1 3" \
	"$(stat -c '%F %t %T' "$M/a/null")"
check "truncate -s" truncate -s 10000 "$M/a/sparse"
check "dd at an offset" dd if=/dev/zero bs=1 count=0 seek=0 of=/dev/null
printf 'XYZ' | dd of="$M/a/sparse" bs=1 seek=5000 conv=notrunc status=none
eq "hole reads as zeros, data where written" "10000 0 XYZ" \
	"$(stat -c %s "$M/a/sparse") $(head -c 5000 "$M/a/sparse" | tr -d '\0' | wc -c) $(dd if="$M/a/sparse" bs=1 skip=5000 count=3 status=none)"
eq "find" "$(printf '%s\n' a a/b a/b/c a/b/moved a/empty a/fifo a/hard a/null a/sparse a/sym | sort)" \
	"$(cd "$M" && find a | sort)"
eq "ls -A" "b empty fifo hard null sparse sym" "$(ls -A "$M/a" | tr '\n' ' ' | sed 's/ $//')"

exec 3>"$M/a/gone"
echo data >&3
rm "$M/a/gone"
eq "fstat of an open, unlinked file: no links, its size" "0 5" "$(stat -L -c '%h %s' /proc/self/fd/3)"
exec 3>&-

# ---- the same namespace through libmcache ----------------------------------
eq "library client lists the same names" "$(ls -A "$M/a" | sort)" "$(ctl ls /a | awk '{print $NF}' | sort)"
eq "library client: size and inode" "$(stat -c '%s %i' "$M/a/b/moved")" \
	"$(ctl stat /a/b/moved | awk '/Size:/ {s=$2} /Inode:/ {i=$4} END {print s, i}')"
check "library mkdir is seen by the mount at once" sh -c "'$MCACHECTL' -s '$SOCK' mkdir /a/fromlib && test -d '$M/a/fromlib'"
check "library rmdir is seen at once" sh -c "'$MCACHECTL' -s '$SOCK' rmdir /a/fromlib && test ! -e '$M/a/fromlib'"
check "chmod through the mount, seen by the library" sh -c "chmod 0600 '$M/a/empty' && '$MCACHECTL' -s '$SOCK' stat /a/empty | grep -q '(0600/'"

# ---- extent map and dirty ranges; fsync ------------------------------------
echo 0123456789 > "$M/a/data"
check "a write is mapped and dirty" sh -c "'$MCACHECTL' -s '$SOCK' extents /a/data | grep -Eq '^0 +10 +0x1'"
check "fsync (sync FILE) clears the dirty range" sh -c "sync '$M/a/data' && ! '$MCACHECTL' -s '$SOCK' extents /a/data | grep -Eq '0x1\$'"

# ---- permissions, enforced by mcache for the caller -------------------------
chmod 0777 "$M/a/b"
check "nobody cannot create in a 0755 root directory" sh -c "! $NOBODY touch '$M/a/denied' 2>/dev/null; test ! -e '$M/a/denied'"
check "nobody cannot create in a 0755 root directory (EACCES)" \
	sh -c "$NOBODY touch '$M/a/denied' 2>&1 | grep -q 'Permission denied'"
check "nobody creates in a 0777 directory, as its owner" \
	sh -c "$NOBODY touch '$M/a/b/mine' && test \"\$(stat -c %u:%g '$M/a/b/mine')\" = 65534:65534"
check "nobody cannot read a 0600 root file" sh -c "! $NOBODY cat '$M/a/empty' 2>/dev/null"
check "nobody cannot chown" sh -c "! $NOBODY chown 0 '$M/a/b/mine' 2>/dev/null"
check "nobody cannot mknod a device" sh -c "! $NOBODY mknod '$M/a/b/dev' c 1 3 2>/dev/null"
# The kernel opens a FIFO without asking mcachefs: only the kernel's own
# check (default_permissions, on with the watch) can refuse it.
check "the mount has default_permissions (the watch is on)" \
	sh -c "grep ' $M ' /proc/mounts | grep -q default_permissions"
check "nobody cannot open a 0640 root FIFO" \
	sh -c "! $NOBODY sh -c 'exec 3<>\"$M/a/fifo\"' 2>/dev/null"

# ---- remount: data and names survive ---------------------------------------
fusermount3 -u "$M"
check "remount" mount_fs "$M"
eq "data after a remount" "0123456789" "$(cat "$M/a/data")"

# ---- the kernel caches; library changes are invalidated before they return --
touch "$M/a/cached"
stat "$M/a/cached" >/dev/null
check "a library chmod is seen by the (caching) mount at once" \
	sh -c "'$MCACHECTL' -s '$SOCK' chmod 0604 /a/cached && test \"\$(stat -c %a '$M/a/cached')\" = 604"
check "a library rm is seen by the (caching) mount at once" \
	sh -c "'$MCACHECTL' -s '$SOCK' rm /a/cached && test ! -e '$M/a/cached'"

# ---- without the watch, a caching mount learns of changes by polling -------
check "mount with timeouts of 60 s" mount_fs "$M2" --no-watch --entry-timeout=60 --attr-timeout=60 --poll-ms=50
DATA_INO=$(stat -c %i "$M2/a/data")
check "without the watch, mcache alone refuses nobody a create in 0755" \
	sh -c "! grep ' $M2 ' /proc/mounts | grep -q default_permissions && ! $NOBODY touch '$M2/a/denied2' 2>/dev/null && test ! -e '$M2/a/denied2'"
ctl chmod 0606 /a/data
check "a library chmod reaches a caching mount" until_true 3 sh -c "test \"\$(stat -c %a '$M2/a/data')\" = 606"
ctl rm /a/data
check "a library unlink reaches a caching mount" until_true 3 test ! -e "$M2/a/data"

# ---- deeper than PATH_MAX below the mount root ------------------------------
# 24 directories of 200 bytes: the deepest is 4,830 bytes from the root, so
# every operation there goes through paths longer than 4095 bytes. (cd -P:
# bash's logical cd gives up past PATH_MAX by itself.)
L=$(printf 'd%.0s' $(seq 200))
# deep COMMAND...: run it in the deepest directory, reached by cd in steps.
deep() {
	(cd "$M/a" && for _ in $(seq 24); do cd -P "$L" || exit 1; done && "$@")
}
check "mkdir -p in steps with cd, past 4096 bytes" \
	sh -c "cd '$M/a' && for i in \$(seq 24); do mkdir '$L' && cd -P '$L' || exit 1; done"
eq "stat there (the deepest directory)" "directory" "$(deep stat -c %F .)"
check "create there" deep sh -c "echo deep > f"
eq "read it back and stat it" "deep 5" "$(deep sh -c 'echo $(cat f) $(stat -c %s f)')"
check "rename there" deep mv f g
eq "rename: old name gone, new one there" "g deep" \
	"$(deep sh -c 'test ! -e f && echo g $(cat g)')"
check "mkdir, chmod, ln, ln -s, rmdir there" \
	deep sh -c "mkdir s && chmod 0700 s && ln g h && ln -s g l && test \"\$(cat l)\" = deep && rmdir s"
check "unlink there" deep sh -c "rm g h l && test -z \"\$(ls -A)\""
check "the library keeps POSIX: ENAMETOOLONG for that path" \
	sh -c "'$MCACHECTL' -s '$SOCK' stat /a/\$(for i in \$(seq 24); do printf '%s/' '$L'; done) 2>&1 | grep -q 'too long'"
check "rm -rf of the deep tree" rm -rf "$M/a/$L"

# ---- rm -rf ----------------------------------------------------------------
check "rm -rf" rm -rf "$M/a"
eq "library client: the tree is gone" "" "$(ctl ls / | awk '{print $NF}')"
# The file unlinked through the library leaves its data: mcachefs did not
# see that unlink (README: known limits).
eq "no backing data left of what was removed through the mount" "$DATA_INO" "$(ls "$T/data")"

fusermount3 -u "$M2"
fusermount3 -u "$M"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID"
rc=$?
SERVER_PID=
[ "$rc" -eq 0 ] || { echo "# mcached exited $rc"; sed 's/^/#   /' "$T/mcached.log"; FAILED=$((FAILED + 1)); }
[ "$N" -eq 65 ] || echo "# ran $N checks, planned 65"
exit $((FAILED > 0))
