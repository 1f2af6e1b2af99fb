# Shared helpers for integration tests: each test starts its own daemon on a free loopback port
# with a temporary data directory, drives it with curl, and ends with "N passed, N failed".
#
#   source "$(dirname "$0")/lib.sh"
#   ty_start [serve flags...]          # sets URL, TOKEN (admin), DATA, PID
#   api GET /v1/jobs                   # curl with the admin token; body on stdout
#   check "what" test-command...       # counts a pass or a failure
#   eventually "what" SECONDS cmd...   # retries every 0.2 s, then counts a pass or a failure
#   ty_done                            # prints the summary, exits 0 or 1
#   ty_skip "why"                      # the test cannot run here: exits 77, a skip to ctest
set -u
TY_BUILD=${TY_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../build" && pwd)}
TY_SRC=${TY_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TRAINYARD="$TY_BUILD/trainyard"
PASSED=0
FAILED=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-test.XXXXXX")
PID=""
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}

cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    # Ranks outlive a killed daemon on purpose; the test's own must not outlive the test.
    pkill -f "trainyard shim --dir $WORK" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

check() {
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        echo "FAIL: $what" >&2
    fi
}

eventually() {
    local what=$1 secs=$2
    shift 2
    local end=$((SECONDS + secs))
    while ((SECONDS < end)); do
        if "$@" >/dev/null 2>&1; then
            PASSED=$((PASSED + 1))
            return 0
        fi
        sleep 0.2
    done
    FAILED=$((FAILED + 1))
    echo "FAIL: $what (after ${secs}s)" >&2
    return 1
}

# check_eq WHAT EXPECTED ACTUAL
check_eq() {
    if [ "$2" = "$3" ]; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        echo "FAIL: $1: expected [$2], got [$3]" >&2
    fi
}

# Stops the daemon (SIGTERM, as an operator would) and fails the test on anything the sanitizers
# reported in its lifetime: leaks, memory errors, undefined behaviour.
ty_stop() {
    [ -n "$PID" ] || return 0
    kill -TERM "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=""
}

sanitizer_clean() {
    ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/daemon.err" 2>/dev/null
}

# A test that cannot run here says why and exits 77, which ctest (SKIP_RETURN_CODE) shows as
# a skip: exiting 0 would show a test that checked nothing as passed.
ty_skip() {
    echo "SKIP: $*"
    exit 77
}

# ty_skip_part REASON: a part of the test cannot run here; the rest goes on, and a test whose
# every check passed ends with 77 (a skip to ctest), so the missing part shows.
TY_SKIPPED=""
ty_skip_part() {
    echo "SKIP: $*"
    TY_SKIPPED=1
}

ty_done() {
    ty_stop
    if ! sanitizer_clean; then
        FAILED=$((FAILED + 1))
        echo "FAIL: the sanitizers reported problems in the daemon:" >&2
        grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/daemon.err" | head -60 >&2
    fi
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ] || exit 1
    [ -z "$TY_SKIPPED" ] || exit 77
    exit 0
}

# ty_start [flags]: starts the daemon (auth on, admin token given) and waits until it is ready.
TY_FLAGS=()
TY_CURL=() # extra curl options for every request (TLS tests set --cacert, --cert, --key)
TY_WRAP=() # a command the daemon runs under (80-valgrind.sh: valgrind and its options)
ty_start() {
    [ $# -gt 0 ] && TY_FLAGS=("$@")
    DATA=${DATA:-$WORK/data}
    TOKEN=${TOKEN:-ty_testadmintoken0123456789abcdefghij}
    # Restarts wait 1 s, not the daemon's 10 s: every restart test would take that much longer
    # (38-recovery.sh tests the backoff itself).
    TRAINYARD_ADMIN_TOKEN=$TOKEN "${TY_WRAP[@]}" "$TRAINYARD" serve --listen 127.0.0.1:${PORT:-0} \
        --data-dir "$DATA" --local-slots 8 --stop-grace 2s --restart-backoff 1s "${TY_FLAGS[@]}" \
        >"$WORK/daemon.out" 2>>"$WORK/daemon.err" &
    PID=$!
    for _ in $(seq 1 $((${#TY_WRAP[@]} ? 1200 : 200))); do
        URL=$(grep -o 'http[s]*://[0-9.:]*' "$WORK/daemon.out" 2>/dev/null | head -1)
        [ -n "$URL" ] && curl -sf "${TY_CURL[@]}" "$URL/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "daemon did not start:" >&2
    cat "$WORK/daemon.err" >&2
    exit 1
}

# ty_kill9: kill -9 the daemon; ty_restart starts it again on the same port, data and flags.
ty_kill9() {
    kill -9 "$PID"
    wait "$PID" 2>/dev/null
    PID=""
}

# ty_restart [flags]: a graceful restart (SIGTERM) on the same port and data.
ty_graceful_restart() {
    ty_stop
    ty_restart "$@"
}

ty_restart() {
    PORT=${URL##*:}
    : >"$WORK/daemon.out"
    ty_start "$@"
}

api() {
    local method=$1 path=$2
    shift 2
    curl -s "${TY_CURL[@]}" -X "$method" -H "Authorization: Bearer $TOKEN" "$@" "$URL$path"
}

# status METHOD PATH [curl args]: prints the HTTP status only.
status() {
    local method=$1 path=$2
    shift 2
    curl -s "${TY_CURL[@]}" -o /dev/null -w '%{http_code}' -X "$method" -H "Authorization: Bearer $TOKEN" "$@" "$URL$path"
}

submit() {
    api POST /v1/jobs -H 'Content-Type: application/json' -d "$1"
}

# wait_state ID STATE [seconds]: waits until the job reaches STATE.
wait_state() {
    local id=$1 want=$2 limit=${3:-30} state=""
    for _ in $(seq 1 $((limit * 10))); do
        state=$(api GET "/v1/jobs/$id" | jq -r .state)
        [ "$state" = "$want" ] && return 0
        sleep 0.1
    done
    echo "job $id is $state, not $want" >&2
    return 1
}

# job NAME SCRIPT [EXTRA_JSON_MEMBERS]: submits `sh -c SCRIPT`; prints the id.
job() {
    submit "{\"name\":\"$1\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$2" '$s')]${3:+,$3}}" | jq -r .id
}

# ckpt ID: the job's own checkpoint directory. Ranks run sandboxed (a private /tmp, the rest
# of the file system read-only), so a test and its jobs exchange files there: the job through
# $TRAINYARD_CHECKPOINT_DIR, the test through this path.
ckpt() {
    echo "$DATA/jobs/$1/checkpoints"
}

# wait_end ID: waits (30 s at most) until the job ended.
wait_end() {
    for _ in $(seq 1 300); do
        case $(api GET "/v1/jobs/$1" | jq -r .state) in
        succeeded | failed | cancelled | preempted) return 0 ;;
        esac
        sleep 0.1
    done
    return 1
}

# wait_logs_complete ID: waits until every line of a finished job is stored.
wait_logs_complete() {
    for _ in $(seq 1 100); do
        api GET "/v1/jobs/$1/logs?limit=1" -D - -o /dev/null | grep -qi 'Trainyard-Log-Complete: true' && return 0
        sleep 0.1
    done
    return 1
}
