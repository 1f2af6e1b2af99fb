#!/usr/bin/env bash
# trainyard-worker starts without its GPU and fabric libraries: no DT_NEEDED on CUDA, cuBLAS,
# NCCL or libfabric; `run` and a single-rank `train` never map them and log their first step
# fast; the binary runs where they are missing (hidden in a mount namespace), and a SIGTERM
# during start-up (50 ms after exec, one rank and two) ends it cleanly, never with an abort,
# a hang or another library's signal handler.
set -u
W="$TY_BUILD/trainyard-worker"
DATA="$TY_SRC/examples/corpus.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
heavy='libcudart|libcublas|libnccl|libfabric|libpsm|libinfinipath'

# No load-time dependency on the heavy libraries.
needed=$(readelf -d "$W" | grep NEEDED)
echo "$needed" | grep -qE 'libc\.so' && ok || ko "readelf -d shows no NEEDED at all"
echo "$needed" | grep -E "$heavy" >&2 && ko "linked at load time (above)" || ok

# `run` never maps them: the command reads its supervisor's memory map.
"$W" run -- sh -c 'cat /proc/$PPID/maps' > "$tmp/run.maps" 2>/dev/null
grep -q trainyard-worker "$tmp/run.maps" && ok || ko "run: no map read"
grep -E "$heavy" "$tmp/run.maps" >&2 && ko "run maps the libraries above" || ok

# A single-rank train neither: at its first logged step it has not mapped them, holds little
# memory (linked, the libraries made the peak RSS ~230 MiB and the start ~450 ms), and got there
# fast (best of 3 runs; a loose bound, as this machine is shared: docs/worker.md has figures).
first_line_ms() { # sets ms (exec to first line) and hwm_kb (peak RSS then)
    local s e line pid
    s=$(date +%s%N)
    coproc T { exec "$W" train --steps 100000 --log-every 1 --data "$DATA" 2> /dev/null; }
    pid=$T_PID
    read -r line <&"${T[0]}"
    e=$(date +%s%N)
    cat "/proc/$pid/maps" > "$tmp/train.maps"
    hwm_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid"
    ms=$(((e - s) / 1000000))
}
best=999999
for _ in 1 2 3; do
    first_line_ms
    [ "$ms" -lt "$best" ] && best=$ms
done
grep -q trainyard-worker "$tmp/train.maps" && ok || ko "train: no map read"
grep -E "$heavy" "$tmp/train.maps" >&2 && ko "train maps the libraries above" || ok
echo "single-rank train: first step logged $best ms after exec (best of 3), peak RSS $hwm_kb KiB"
[ "$hwm_kb" -lt 102400 ] && ok || ko "train's peak RSS at its first step is $hwm_kb KiB"
[ "$best" -lt 1000 ] && ok || ko "train took $best ms to its first step"

# SIGTERM 50 ms after exec: 143 (stopped, or killed before its handler was set) or 0, and
# nothing else: no SIGABRT (134), no status 1 from a library's handler, no hang.
wait_for() { # pid seconds: sets st to its exit status, or "hung" after killing it
    for _ in $(seq $(($2 * 20))); do
        kill -0 "$1" 2> /dev/null || break
        sleep 0.05
    done
    if kill -0 "$1" 2> /dev/null; then
        kill -KILL "$1"
        wait "$1"
        st=hung
    else
        wait "$1"
        st=$?
    fi
}
clean() { # what status errfile
    if [ "$2" = 143 ] || [ "$2" = 0 ]; then ok; else ko "$1: SIGTERM at start-up gave status $2"; fi
    grep -iE 'backtrace|abort|malloc|AddressSanitizer|terminated with signal' "$3" >&2 &&
        ko "$1: messages above" || ok
}
for i in 1 2 3 4; do
    "$W" train --steps 100000 --checkpoint-dir "$tmp/ck$i" --data "$DATA" > /dev/null 2> "$tmp/err$i" &
    pid=$!
    sleep 0.05
    kill -TERM $pid
    wait_for $pid 20
    clean "1 rank, run $i" "$st" "$tmp/err$i"
done
# Two ranks over libfabric tcp: SIGTERM while they load libfabric and connect, then later.
n=0
for d in 0.05 0.4; do
    pids=""
    n=$((n + 1))
    for r in 0 1; do
        FI_PROVIDER=tcp FI_TCP_IFACE=lo RANK=$r WORLD_SIZE=2 TRAINYARD_RENDEZVOUS="dir:$tmp/rdzv$n" \
            "$W" train --steps 100000 --timeout 20 --data "$DATA" > /dev/null 2> "$tmp/err.r$r" &
        pids="$pids $!"
    done
    sleep "$d"
    kill -TERM $pids
    r=0
    for p in $pids; do
        wait_for "$p" 30
        clean "2 ranks, rank $r at $d s" "$st" "$tmp/err.r$r"
        r=$((r + 1))
    done
done

# Where the libraries are missing: in a private mount namespace, an empty directory over the
# directory of each CUDA library and /dev/null over libfabric.so.1 (its directory holds libc).
lib_path() { ldconfig -p | awk -v re="^$1\\.so\\.[0-9]+$" '$1 ~ re { print $NF; exit }'; }
if ! unshare -rm true 2> /dev/null; then
    echo "SKIP: no user namespaces (unshare -rm): the missing-library runs were not made"
    skipped=1
else
    mkdir "$tmp/empty"
    hide=""
    for l in libcudart libcublas libnccl; do
        p=$(lib_path $l)
        [ -n "$p" ] && hide="$hide mount --bind '$tmp/empty' '$(dirname "$p")';"
    done
    p=$(lib_path libfabric)
    [ -n "$p" ] && hide="$hide mount --bind /dev/null '$p';"
    in_ns() { unshare -rm sh -c "$hide exec \"\$@\"" sh "$@"; }
    in_ns "$W" version > /dev/null && ok || ko "version without the libraries"
    in_ns "$W" run -- true && ok || ko "run without the libraries"
    in_ns "$W" train --steps 3 --log-every 1 --data "$DATA" > "$tmp/ns.train" 2> /dev/null &&
        grep -q "'step': 3" "$tmp/ns.train" && ok || ko "train without the libraries"
    in_ns "$W" preflight --json --shm-min 1Mi > "$tmp/ns.pf" 2> /dev/null
    jq -e '[.checks[] | select(.name == "gpu")][0].detail |
           test("^skipped: (CUDA runtime not found \\(libcudart\\.so\\.[0-9]+\\)|built without CUDA)$")' \
        "$tmp/ns.pf" > /dev/null && ok || ko "gpu without CUDA: $(jq -c '.checks[0]' "$tmp/ns.pf")"
    if [ -n "$p" ]; then
        jq -e '[.checks[] | select(.name == "fabric.providers")][0] | .status == "fail" and
               (.detail | startswith("libfabric cannot be loaded"))' "$tmp/ns.pf" > /dev/null &&
            ok || ko "broken libfabric not reported: $(jq -c '.checks[2]' "$tmp/ns.pf")"
    fi
    TRAINYARD_GPUS=1 in_ns "$W" preflight --json --shm-min 1Mi > "$tmp/ns.pf2" 2> /dev/null
    [ $? = 1 ] && jq -e '.checks[0].status == "fail"' "$tmp/ns.pf2" > /dev/null && ok ||
        ko "GPUs requested without CUDA did not fail"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ] || exit 1
[ -z "${skipped:-}" ] || exit 77 # a part could not run here: a skip to ctest
