#!/bin/bash
# Runs one libFuzzer target for ctest (see CMakeLists.txt):
#   run.sh fuzz   FUZZER SRC NAME WORK SECONDS   fuzz for SECONDS from SRC/corpus/NAME
#   run.sh replay FUZZER SRC NAME WORK 0         run SRC/regressions/NAME and the seeds once each
# New inputs go to WORK/corpus (never into the source tree); a crash, leak, timeout or UB report
# leaves its input in WORK/artifacts/ and fails the case. Fixed, that input belongs in
# SRC/regressions/NAME/ so that the replay case keeps it fixed.
set -u
mode=$1 bin=$2 src=$3 name=$4 work=$5 secs=$6
seeds=$src/corpus/$name
regs=$src/regressions/$name
dict=$src/$name.dict
mkdir -p "$work/corpus" "$work/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
opts=(-rss_limit_mb=2048 -timeout=10 -artifact_prefix="$work/artifacts/")
[ -f "$dict" ] && opts+=(-dict="$dict")

case $mode in
fuzz)
    [ -d "$seeds" ] || { echo "no seed corpus $seeds" >&2; exit 1; }
    "$bin" "${opts[@]}" -max_total_time="$secs" -print_final_stats=1 "$work/corpus" "$seeds" 2>&1 |
        grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)' # progress lines: thousands of them
    rc=${PIPESTATUS[0]}
    ;;
replay)
    files=()
    [ -d "$regs" ] && for f in "$regs"/*; do [ -f "$f" ] && files+=("$f"); done
    for f in "$seeds"/*; do [ -f "$f" ] && files+=("$f"); done
    echo "replaying ${#files[@]} inputs (regressions/$name and corpus/$name)"
    "$bin" "${opts[@]}" "${files[@]}" 2>&1 | grep -v -E '^(Running|Executed) '
    rc=${PIPESTATUS[0]}
    ;;
*)
    echo "usage: run.sh fuzz|replay FUZZER SRC NAME WORK SECONDS" >&2
    exit 2
    ;;
esac
if [ "$rc" -ne 0 ]; then
    echo "FAIL: fuzz target $name (exit $rc); inputs that failed are in $work/artifacts/:" >&2
    ls -l "$work/artifacts" >&2
    echo "reproduce with: $bin <file>; once fixed, copy the file into $regs/" >&2
    # libFuzzer exits 77 on a crash or leak (its -error_exitcode), which ctest would show as a
    # skip (SKIP_RETURN_CODE): every failure is 1.
    exit 1
fi
