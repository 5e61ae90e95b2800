#!/bin/sh
# run-fuzzers.sh - build the libFuzzer targets of tests/fuzz with clang and
# run each for a while over its seed corpus.
#
# Usage: tests/fuzz/run-fuzzers.sh [-m] [SECONDS] [TARGET...]
#   SECONDS   time per target (default 60)
#   TARGET    frame, ops, path, shmview (default: all, one after another)
#   -m        merge the new interesting inputs into tests/fuzz/corpus/<target>
#             (libFuzzer -merge=1) after each run; this may add hundreds of
#             files: keep the few that matter (the corpus stays under 1 MB),
#             and none that fails the ASan+UBSan replay
#
# Needs clang and libFuzzer's runtime (Debian 12: apt-get install clang
# libclang-rt-14-dev) besides the usual build dependencies. It configures
# build-fuzz/ (CC=clang, -Dfuzzing=true, ASan+UBSan) at the top of the
# source tree, runs each target niced, one at a time, with new inputs in
# build-fuzz/corpus-new/<target>/ and crashes, leaks and timeouts written to
# build-fuzz/artifacts/<target>/, and prints per target the executions,
# executions per second and any artifact. Exit status: 0 when no target
# failed, 1 when one did, 2 on a usage or setup error.
#
# Environment: FUZZ_JOBS (ninja -j, default 2), FUZZ_NICE (default 10),
# FUZZ_ARGS (more libFuzzer options, e.g. -max_len=4096).
set -u

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

merge=0
while getopts mh opt; do
	case $opt in
	m) merge=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))

secs=60
case ${1:-} in
'') ;;
*[!0-9]*) ;;
*) secs=$1; shift ;;
esac
all="frame ops path shmview"
targets=${*:-$all}
for t in $targets; do
	case " $all " in
	*" $t "*) ;;
	*) echo "run-fuzzers: unknown target '$t' (targets: $all)" >&2; exit 2 ;;
	esac
done

top=$(cd "$(dirname "$0")/../.." && pwd)
bdir=$top/build-fuzz

missing=""
command -v clang >/dev/null 2>&1 || missing="$missing clang"
command -v meson >/dev/null 2>&1 || missing="$missing meson"
command -v ninja >/dev/null 2>&1 || missing="$missing ninja-build"
if command -v clang >/dev/null 2>&1; then
	rt=$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
	if [ ! -f "$rt" ]; then
		rt=$(clang -print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a
		[ -f "$rt" ] || missing="$missing libclang-rt-14-dev"
	fi
fi
if [ -n "$missing" ]; then
	echo "run-fuzzers: missing:$missing" >&2
	echo "run-fuzzers: on Debian 12: apt-get install clang libclang-rt-14-dev (and the build dependencies of README.md)" >&2
	exit 2
fi

if [ ! -f "$bdir/build.ninja" ]; then
	out=$(CC=clang meson setup "$bdir" "$top" -Dfuzzing=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized 2>&1) || {
		printf '%s\n' "$out" >&2
		echo "run-fuzzers: meson setup of $bdir failed" >&2
		exit 2
	}
fi
exes=""
for t in $targets; do
	exes="$exes tests/fuzz/fuzz-$t"
done
# shellcheck disable=SC2086
nice -n "${FUZZ_NICE:-10}" ninja -C "$bdir" -j "${FUZZ_JOBS:-2}" $exes >"$bdir/fuzz-build.log" 2>&1 || {
	tail -n 40 "$bdir/fuzz-build.log" >&2
	echo "run-fuzzers: build failed (log: $bdir/fuzz-build.log)" >&2
	exit 2
}

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
summary=""
for t in $targets; do
	exe=$bdir/tests/fuzz/fuzz-$t
	seeds=$top/tests/fuzz/corpus/$t
	new=$bdir/corpus-new/$t
	art=$bdir/artifacts/$t
	log=$bdir/fuzz-$t.log
	mkdir -p "$new" "$art"
	echo "== $t: ${secs}s (log: $log)"
	# shellcheck disable=SC2086
	nice -n "${FUZZ_NICE:-10}" "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/" ${FUZZ_ARGS:-} "$new" "$seeds" \
		>"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*ft: \([0-9]*\).*/cov \1 ft \2/p')
	line="$t: ${runs:-?} executions, ${rate:-?} exec/s, ${cov:-cov ?}, exit $rc"
	if [ "$rc" -ne 0 ]; then
		status=1
		line="$line FAILED"
		grep -E 'ERROR: |invariant failed|runtime error|Test unit written' "$log" | head -n 5 >&2
	fi
	for a in "$art"/*; do
		[ -f "$a" ] && line="$line
  artifact: $a"
	done
	echo "$line"
	summary="$summary$line
"
	if [ "$merge" -eq 1 ] && [ "$rc" -eq 0 ]; then
		nice -n "${FUZZ_NICE:-10}" "$exe" -merge=1 "$seeds" "$new" >"$bdir/merge-$t.log" 2>&1 &&
			echo "  merged into $seeds: $(find "$seeds" -type f | wc -l) files" ||
			echo "  merge failed (log: $bdir/merge-$t.log)" >&2
	fi
done
echo "== summary"
printf '%s' "$summary"
exit $status
