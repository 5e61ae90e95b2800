#!/bin/bash
# test-backup.sh - the hot copy the README documents: mdb_copy (plain and
# compacting) of a live server's data directory, a second mcached started on
# each copy, and `mcachectl dump` of each compared with the live server's
# dump taken just before the copy (the live server changes after it). Speaks TAP. Needs $MCACHED
# and $MCACHECTL (meson sets them); without mdb_copy (Debian: lmdb-utils) it
# says so and passes.
set -u
umask 022
: "${MCACHED:?MCACHED is not set}"
: "${MCACHECTL:?MCACHECTL is not set}"

if ! command -v mdb_copy >/dev/null 2>&1; then
	echo "1..0 # SKIP mdb_copy is not installed (Debian package lmdb-utils)"
	exit 0
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/mcache-backup-XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

N=0
ok() { # ok STATUS NAME
	N=$((N + 1))
	if [ "$1" -eq 0 ]; then echo "ok $N - $2"; else echo "not ok $N - $2"; fi
}

# start NAME DATA: mcached on $T/NAME.sock over DATA, waited for.
start() {
	"$MCACHED" --socket "$T/$1.sock" --data "$2" --admin none 2>"$T/$1.log" &
	PIDS+=($!)
	for _ in $(seq 1 500); do
		"$MCACHECTL" -s "$T/$1.sock" stat / >/dev/null 2>&1 && return 0
		sleep 0.02
	done
	return 1
}
ctl() { local s=$1; shift; "$MCACHECTL" -s "$T/$s.sock" "$@"; }

echo "1..9"
start live "$T/live"
ok $? "the live server starts"

{
	ctl live mkdir -p /proj/a/b /proj/empty &&
	ctl live touch /proj/a/notes /proj/a/b/deep &&
	ctl live truncate -s 12345 /proj/a/notes &&
	ctl live chmod 0640 /proj/a/notes &&
	ctl live ln -s ../a/notes /proj/empty/link &&
	ctl live ln /proj/a/notes /proj/hard &&
	ctl live mkdir /tmpdir && ctl live rmdir /tmpdir &&
	ctl live sync
} >"$T/setup.out" 2>&1
ok $? "a namespace made and synced (mcachectl sync: all of it committed)"
ctl live dump / >"$T/live.jsonl" 2>"$T/live.err"

mkdir "$T/copy" "$T/compact"
mdb_copy "$T/live" "$T/copy" 2>"$T/copy.err" && mdb_copy -c "$T/live" "$T/compact" 2>>"$T/copy.err"
ok $? "mdb_copy and mdb_copy -c of the live server's data directory"

ctl live mkdir /after-copy >/dev/null 2>&1
ok $? "the live server goes on serving after the copies"
ctl live rmdir /after-copy && ctl live sync

start copy "$T/copy"
ok $? "a second mcached starts on the copy"
start compact "$T/compact"
ok $? "a third mcached starts on the compacted copy"

ctl copy dump / >"$T/copy.jsonl" 2>"$T/copy.err" &&
	ctl compact dump / >"$T/compact.jsonl" 2>"$T/compact.err"
ok $? "mcachectl dump of both copies"

if [ "$(wc -l <"$T/live.jsonl")" -ge 8 ] && cmp -s "$T/live.jsonl" "$T/copy.jsonl"; then
	ok 0 "the copy's dump equals the live server's ($(wc -l <"$T/live.jsonl") entries)"
else
	ok 1 "the copy's dump equals the live server's"
	diff "$T/live.jsonl" "$T/copy.jsonl" | sed 's/^/# /' | head -20
fi
if cmp -s "$T/live.jsonl" "$T/compact.jsonl"; then
	ok 0 "the compacted copy's dump equals the live server's"
else
	ok 1 "the compacted copy's dump equals the live server's"
	diff "$T/live.jsonl" "$T/compact.jsonl" | sed 's/^/# /' | head -20
fi
