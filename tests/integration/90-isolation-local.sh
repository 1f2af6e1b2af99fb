#!/usr/bin/env bash
# A hostile submitter on the local executor (issue 17): with a *submit* token, a job tries what
# worked against the daemon before ranks were sandboxed. Each check fails on a daemon whose
# ranks run as the daemon: they were root, read the database, the admin token and the daemon's
# environment, wrote a token into the database, signalled the daemon and other jobs, and left a
# setsid'd process running after cancel. CI runs as root, so the sandbox is there to test; as
# another user this test cannot run its half about the sandbox and says so (exit 77).
source "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the daemon must be root to sandbox ranks (run the tests as root, as CI does)"
    exit 77
fi
in_out() { grep -qE "$2" <<<"$1"; }
not_in() { ! grep -qE "$2" <<<"$1"; }
eventually_none() { # eventually_none PATTERN: no process matches within 10 s
    for _ in $(seq 1 100); do pgrep -f "$1" >/dev/null || return 0; sleep 0.1; done
    return 1
}
eventually_absent() { # eventually_absent PATH: gone within 10 s
    for _ in $(seq 1 100); do [ -e "$1" ] || return 0; sleep 0.1; done
    return 1
}
ADMIN_FILE="$WORK/admin.token"
echo ty_isolationadmintoken0123456789abcd >"$ADMIN_FILE"
chmod 600 "$ADMIN_FILE"
TOKEN=$(cat "$ADMIN_FILE")
AWS_SECRET_ACCESS_KEY=daemon-secret-key ty_start --admin-token-file "$ADMIN_FILE" \
    --local-pids-max 64
check_eq "readyz says ranks are sandboxed" on "$(curl -s "$URL/readyz" | jq -r .local_sandbox)"
ci=$(api POST /v1/tokens -H 'Content-Type: application/json' \
    -d '{"name":"ci","scope":"submit"}' | jq -r .token)
as_ci() { # as_ci NAME SCRIPT [EXTRA]: a job submitted with the submit token; prints its id
    curl -s -X POST -H "Authorization: Bearer $ci" -H 'Content-Type: application/json' \
        -d "{\"name\":\"$1\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$2" '$s')]${3:+,$3}}" \
        "$URL/v1/jobs" | jq -r .id
}
logs() { api GET "/v1/jobs/$1/logs?format=ndjson" | jq -r .line; }

# Who the rank is, what it can read and whom it can signal.
probe=$(as_ci probe "id -u; id -G
cat '$DATA/trainyard.db' >/dev/null 2>&1 && echo READ-DB
ls '$DATA' >/dev/null 2>&1 && echo LIST-DATA
grep -q . '$ADMIN_FILE' 2>/dev/null && echo READ-ADMIN-TOKEN
env | grep -q daemon-secret-key && echo DAEMON-ENV
env | grep -q ty_isolationadmintoken && echo ADMIN-TOKEN-ENV
sqlite3 '$DATA/trainyard.db' 'select 1' >/dev/null 2>&1 && echo SQLITE
kill -0 $PID 2>/dev/null && echo SIGNAL-DAEMON
touch /usr/probe 2>/dev/null && echo WRITE-ROOT-FS
echo rank-tmp > /tmp/mine
ls /proc/self/fd | tr '\n' ' '; echo
touch \$TRAINYARD_CHECKPOINT_DIR/c && touch \$HOME/h && echo OWN-DIRS-WRITABLE
echo done" '"env":{"SPEC_ONLY":"in-spec"}')
check "probe job succeeds" wait_state "$probe" succeeded 30
out=$(logs "$probe")
uid=$(echo "$out" | sed -n 1p)
check "the rank is not root" test "$uid" -ne 0
check "the rank's uid is the job's own (--local-uid-base)" test "$uid" -ge 1879048192
check_eq "no supplementary groups" "$uid" "$(echo "$out" | sed -n 2p)"
for leak in READ-DB LIST-DATA READ-ADMIN-TOKEN DAEMON-ENV ADMIN-TOKEN-ENV SQLITE SIGNAL-DAEMON \
    WRITE-ROOT-FS; do
    check "rank cannot: $leak" not_in "$out" "$leak"
done
check_eq "only stdin, stdout and stderr are open (and ls's own)" "0 1 2 3 " \
    "$(echo "$out" | grep -E '^[0-9 ]+$' | tail -1)"
check "the job's checkpoint and home directories are writable" in_out "$out" OWN-DIRS-WRITABLE

# The rank's environment is the spec's and the launcher's; the shim (root) never gets the spec's.
sleeper=$(as_ci sleeper 'echo $$ > $TRAINYARD_CHECKPOINT_DIR/pid; echo rank-a > /tmp/a; setsid sleep 3000 & sleep 300' \
    '"env":{"SPEC_ONLY":"in-spec"},"procs_per_node":2')
check "sleeper runs" wait_state "$sleeper" running 30
for _ in $(seq 1 50); do [ -s "$(ckpt "$sleeper")/pid" ] && break; sleep 0.1; done
shim=$(pgrep -f "trainyard shim --dir $DATA/jobs/$sleeper/a0/r0" | head -1)
check "the shim is found" test -n "$shim"
check "the shim's environment has nothing of the job's env" \
    not_in "$(tr '\0' '\n' </proc/"$shim"/environ)" SPEC_ONLY
rankpid=$(cat "$(ckpt "$sleeper")/pid")
check_eq "the rank's environment has the spec's env" in-spec \
    "$(tr '\0' '\n' </proc/"$rankpid"/environ | sed -n 's/^SPEC_ONLY=//p')"

# Another job of the same token: not the sleeper's identity, files or processes.
other=$(as_ci other "kill -0 $rankpid 2>/dev/null && echo SIGNAL-OTHER-JOB
cat /proc/$rankpid/environ >/dev/null 2>&1 && echo READ-OTHER-ENV
ls '$(ckpt "$sleeper")' >/dev/null 2>&1 && echo READ-OTHER-CKPT
cat /tmp/a 2>/dev/null && echo SHARED-TMP
id -u")
check "other job succeeds" wait_state "$other" succeeded 30
oout=$(logs "$other")
for leak in SIGNAL-OTHER-JOB READ-OTHER-ENV READ-OTHER-CKPT SHARED-TMP; do
    check "a job cannot: $leak" not_in "$oout" "$leak"
done
check "jobs running at once have different identities" test "$(echo "$oout" | tail -1)" != \
    "$(stat -c %u "$(ckpt "$sleeper")")"

# Cancel ends every process the rank made, setsid'd ones included.
check_eq "cancel accepted" 202 "$(status POST "/v1/jobs/$sleeper/cancel")"
check "the job is cancelled" wait_state "$sleeper" cancelled 30
check "no process of the job is left (setsid sleep 3000 included)" \
    eventually_none "sleep 3000"
check "the job's shared memory is gone" eventually_absent "/dev/shm/trainyard-$sleeper"

# A process limit per rank (--local-pids-max 64): a fork bomb stops at it.
bomb=$(as_ci bomb 'for i in $(seq 1 100); do sleep 5 & done; echo started; wait')
check "fork bomb job ends" wait_end "$bomb"
check "the process limit stopped the forks" in_out "$(logs "$bomb")" "Resource temporarily unavailable|fork|Cannot"

# Where a submit token may put its checkpoints.
check_eq "a submit token cannot choose a checkpoint path" 403 \
    "$(curl -s -o "$WORK/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $ci" \
        -H 'Content-Type: application/json' \
        -d '{"name":"c","command":["true"],"checkpoint":{"path":"/etc"}}' "$URL/v1/jobs")"
check_eq "the refusal names the field" /checkpoint/path "$(jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "an admin cannot put checkpoints in the data directory" 403 \
    "$(status POST /v1/jobs -H 'Content-Type: application/json' \
        -d "{\"name\":\"c\",\"command\":[\"true\"],\"checkpoint\":{\"path\":\"$DATA/x\"}}")"
check_eq "a dry run answers the same" 403 \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ci" \
        -H 'Content-Type: application/json' \
        -d '{"name":"c","command":["true"],"checkpoint":{"path":"/etc"}}' "$URL/v1/jobs?dry_run=true")"

# One daemon per data directory and per address.
second=$(timeout 10 "$TRAINYARD" serve --listen 127.0.0.1:0 --data-dir "$DATA" 2>&1 >/dev/null)
check_eq "a second daemon on the same data directory exits at once" 1 $?
check "it says which directory" in_out "$second" "another daemon .*uses the data directory $DATA"
second=$(timeout 10 "$TRAINYARD" serve --listen "${URL#http://}" --data-dir "$WORK/data2" 2>&1 >/dev/null)
check_eq "a second daemon on the same address exits at once" 1 $?
check "it says the address is in use" in_out "$second" "in use|bind|listen"
ty_stop

# A daemon that cannot sandbox (not root): it says so, and only admins run local jobs.
chmod 711 "$WORK"
mkdir -p "$WORK/nobody" && chown 65534:65534 "$WORK/nobody"
NOBODY_TOKEN=ty_nobodyadmintoken0123456789abcdefgh
setpriv --reuid 65534 --regid 65534 --clear-groups env TRAINYARD_ADMIN_TOKEN=$NOBODY_TOKEN \
    ASAN_OPTIONS="$ASAN_OPTIONS" "$TRAINYARD" serve --listen 127.0.0.1:0 \
    --data-dir "$WORK/nobody/data" >"$WORK/nobody/out" 2>"$WORK/nobody/err" &
NPID=$!
for _ in $(seq 1 100); do
    NURL=$(grep -o 'http://[0-9.:]*' "$WORK/nobody/out" 2>/dev/null | head -1)
    [ -n "$NURL" ] && curl -sf "$NURL/readyz" >/dev/null && break
    sleep 0.1
done
check "the unsandboxed daemon warns at start" grep -q "not sandboxed" "$WORK/nobody/err"
check "readyz says why" in_out "$(curl -s "$NURL/readyz" | jq -r .local_sandbox)" "off: .*not root"
nci=$(curl -s -X POST -H "Authorization: Bearer $NOBODY_TOKEN" -H 'Content-Type: application/json' \
    -d '{"name":"ci","scope":"submit"}' "$NURL/v1/tokens" | jq -r .token)
check_eq "a submit token's local job is refused" 403 \
    "$(curl -s -o "$WORK/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $nci" \
        -H 'Content-Type: application/json' -d '{"name":"x","command":["true"]}' "$NURL/v1/jobs")"
check_eq "the refusal names /executor" /executor "$(jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "an admin's local job is accepted" 201 \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $NOBODY_TOKEN" \
        -H 'Content-Type: application/json' -d '{"name":"x","command":["true"]}' "$NURL/v1/jobs")"
kill "$NPID"
wait "$NPID" 2>/dev/null
setpriv --reuid 65534 --regid 65534 --clear-groups env TRAINYARD_ADMIN_TOKEN=$NOBODY_TOKEN \
    "$TRAINYARD" serve --listen 127.0.0.1:0 --data-dir "$WORK/nobody/data" \
    --local-sandbox required >/dev/null 2>"$WORK/nobody/err2"
check "--local-sandbox required refuses to start without a sandbox" test $? -ne 0
check "and says why" grep -q "cannot be sandboxed" "$WORK/nobody/err2"
ty_done
