#!/usr/bin/env bash
# trainyard-worker run: output passes through byte for byte, exit codes and signals come back
# (128+N), SIGTERM is forwarded to the command's process group and followed by SIGKILL after the
# grace period, a command that cannot start is 127.
set -u
W="$TY_BUILD/trainyard-worker"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# Waits (at most 10 s) until the command under test has started and written its marker.
started() { for _ in $(seq 200); do [ -e "$tmp/started$1" ] && return; sleep 0.05; done; }
expect() { # name want got
    if [ "$2" = "$3" ]; then ok; else ko "$1: want $2, got $3"; fi
}

# Exit codes.
"$W" run -- sh -c 'exit 3' 2>/dev/null; expect "exit code" 3 $?
"$W" run -- true 2>/dev/null; expect "exit 0" 0 $?
"$W" run -- sh -c 'kill -KILL $$' 2>/dev/null; expect "killed by SIGKILL" 137 $?
"$W" run -- sh -c 'kill -SEGV $$' 2>/dev/null; expect "SIGSEGV" 139 $?
"$W" run -- /nonexistent/cmd 2>"$tmp/err"; expect "cannot start" 127 $?
grep -q "cannot run /nonexistent/cmd" "$tmp/err" && ok || ko "exec error message"
"$W" run 2>/dev/null; expect "no command" 2 $?

# Byte-for-byte pass-through of stdout and stderr, binary and unterminated lines included.
head -c 200000 /dev/urandom > "$tmp/blob"
"$W" run -- sh -c "cat '$tmp/blob'; printf 'no newline' >&2" > "$tmp/out" 2> "$tmp/err"
cmp -s "$tmp/blob" "$tmp/out" && ok || ko "stdout changed on the way"
head -c 10 "$tmp/err" | grep -q '^no newline' && ok || ko "stderr changed on the way"

# SIGTERM reaches the command (here it exits 7 when it gets it) and grandchildren in its group.
"$W" run -- sh -c "trap 'exit 7' TERM; touch '$tmp/started1'; sleep 30 & wait" 2>/dev/null &
pid=$!
started 1
kill -TERM $pid
wait $pid; expect "SIGTERM forwarded" 7 $?
"$W" run -- sh -c "touch '$tmp/started2'; sleep 30; echo survived > '$tmp/grandchild'" 2>/dev/null &
pid=$!
started 2
kill -INT $pid
wait $pid; expect "SIGINT forwarded" 130 $?
sleep 0.2
[ ! -e "$tmp/grandchild" ] && ok || ko "the group outlived the signal"

# A command that ignores SIGTERM gets SIGKILL when the grace period is over, not before.
"$W" run --grace 1s -- sh -c "trap '' TERM; touch '$tmp/started3'; while :; do sleep 0.1; done" \
    2>"$tmp/err" &
pid=$!
started 3
start=$(date +%s%N)
kill -TERM $pid
wait $pid; expect "SIGKILL after grace" 137 $?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $ms -ge 900 ] && [ $ms -lt 6000 ] && ok || ko "grace period took $ms ms"
grep -q "after the grace period" "$tmp/err" && ok || ko "grace message"

# TRAINYARD_GRACE_PERIOD sets the same; a daemon that is not there does not stop the command.
TRAINYARD_URL=http://127.0.0.1:9 TRAINYARD_JOB_ID=j TRAINYARD_HEARTBEAT_INTERVAL=100ms \
    "$W" run -- sh -c 'for i in 1 2 3 4 5; do echo "step=$i loss=0.$i"; sleep 0.1; done; exit 5' \
    > "$tmp/out" 2>"$tmp/err"
expect "runs without a daemon" 5 $?
[ "$(wc -l < "$tmp/out")" = 5 ] && ok || ko "output lost without a daemon"
grep -q "not delivered" "$tmp/err" && ok || ko "undelivered metrics not reported"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
