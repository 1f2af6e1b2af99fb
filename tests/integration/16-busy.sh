#!/usr/bin/env bash
# SQLite busy: another process (the sqlite3 CLI, as an operator might run) holds the database's
# write lock for a while. Writes wait for it up to the busy timeout, then fail cleanly (503
# problem+json with Retry-After); reads keep working; /readyz says not ready; nothing crashes.
# When the lock goes, everything recovers: submissions work, a job whose rank ended during the
# lock is recorded as finished, and every log line written meanwhile is stored.
source "$(dirname "$0")/lib.sh"
if ! command -v sqlite3 >/dev/null; then
    ty_skip "the sqlite3 CLI is not installed (apt-get install sqlite3)"
fi
ty_start
N=500
counter=$(submit '{"name":"counter","command":["sh","-c","i=0; while [ $i -lt '$N' ]; do i=$((i+1)); echo \"line $i\"; sleep 0.02; done"]}' | jq -r .id)
short=$(submit '{"name":"short","command":["sh","-c","sleep 3; echo short done"]}' | jq -r .id)
check "counter runs" wait_state "$counter" running
check "short job runs" wait_state "$short" running

# The lock: BEGIN EXCLUSIVE (waiting up to 5 s for the daemon's own writes to finish), held 14 s.
LOCKED="$WORK/locked"
{
    echo ".timeout 5000"
    echo "BEGIN EXCLUSIVE;"
    echo "SELECT 'locked';"
    sleep 14
    echo "COMMIT;"
} | sqlite3 "$DATA/trainyard.db" >"$LOCKED" 2>&1 &
holder=$!
for _ in $(seq 1 100); do grep -q locked "$LOCKED" && break; sleep 0.1; done
check "the CLI holds the write lock" grep -q '^locked$' "$LOCKED"
ms() { echo $(($(date +%s%N) / 1000000)); }
locked_at=$(ms)

t0=$(ms)
code=$(curl -s -D "$WORK/hdr" -o "$WORK/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' -d '{"name":"blocked","command":["true"]}' "$URL/v1/jobs")
waited=$(($(ms) - t0))
check_eq "submit during the lock is a 503" 503 "$code"
check "as problem+json" grep -qi '^Content-Type: application/problem+json' "$WORK/hdr"
check "with Retry-After" grep -qiE '^Retry-After: [0-9]+' "$WORK/hdr"
check "saying the database is busy" grep -q 'busy' <<<"$(jq -r .detail "$WORK/body")"
check "after waiting for the lock (busy timeout), not forever" \
    test "$waited" -ge 4000 -a "$waited" -lt 12000
check_eq "reads work during the lock" 200 "$(status GET "/v1/jobs/$counter")"
check_eq "logs can be read during the lock" 200 "$(status GET "/v1/jobs/$counter/logs?tail=5")"
check_eq "/readyz is 503 during the lock" 503 "$(curl -s -m 12 -o "$WORK/ready" -w '%{http_code}' "$URL/readyz")"
check "/readyz says why" grep -q busy "$WORK/ready"
check "the daemon is alive" kill -0 "$PID"
check "the lock was still held throughout" kill -0 "$holder"
wait "$holder"
echo "lock held $(($(ms) - locked_at)) ms; the blocked submit waited $waited ms"

# After the lock.
for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ] && break
    sleep 0.1
done
check_eq "/readyz is 200 again" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")"
check_eq "submit works again" 201 "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"after","command":["true"]}')"
check "the job whose rank ended during the lock succeeded" wait_state "$short" succeeded
check "the counter succeeded" wait_state "$counter" succeeded 60
check "its logs are complete" wait_logs_complete "$counter"
lines=$(api GET "/v1/jobs/$counter/logs?format=ndjson&limit=100000" | jq -r .line)
check_eq "every line stored once, in order" "$(seq 1 $N | sed 's/^/line /')" "$lines"
check_eq "the blocked submission left nothing behind" 0 "$(api GET '/v1/jobs?name=blocked' | jq '.items | length')"
ty_done
