#!/usr/bin/env bash
# Outbound webhooks against a real receiver (tests/tools/webhook_receiver.c): every job event
# type, signatures checked with openssl and with the npm standardwebhooks package, the receiver
# failing on purpose and coming back (retries with backoff, Retry-After, the same webhook-id on
# every attempt, a job's messages never overtaking each other), a hanging receiver that does
# not slow the API, 410 disabling the webhook, event filters, Slack format, scopes and audit.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
receiver_start
ty_start --webhook-allow-local --webhook-retry-base 300ms --webhook-retry-max 2s --webhook-timeout 1s \
    --webhook-attempts 8 --webhook-workers 4
json() { api "$@" -H 'Content-Type: application/json'; }
jqtest() { jq -e "$2" <<<"$1" >/dev/null; }

W1=$(json POST /v1/webhooks -d "{\"name\": \"all\", \"url\": \"$RURL/w1\"}")
W1_ID=$(echo "$W1" | jq -r .id)
W1_SECRET=$(echo "$W1" | jq -r .secret)
check "secret made" test "${W1_SECRET#whsec_}" != "$W1_SECRET"
check_eq "every job event by default" 7 "$(echo "$W1" | jq '.events | length')"
check "secret not shown again" sh -c "! curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/webhooks/$W1_ID | grep -q '${W1_SECRET#whsec_}'"
check_eq "fingerprint shown" sha256: "$(api GET /v1/webhooks/all | jq -r '.secret_fingerprint[0:7]')"
bad() { json POST /v1/webhooks -d "$1" | jq -r '[.status, (.errors // [] | map(.pointer) | join(","))] | join(" ")'; }
check_eq "url required" "422 /url" "$(bad '{"url": "ftp://x/y"}')"
check_eq "unknown event" "422 /events/0" "$(bad '{"url": "http://x/y", "events": ["job.exploded"]}')"
check_eq "bad secret" "422 /secret" "$(bad '{"url": "http://x/y", "secret": "whsec_!!"}')"
check_eq "bad format" "422 /format" "$(bad '{"url": "http://x/y", "format": "teams"}')"

# wait_received N [FILTER]: waits until N logged requests match FILTER (jq select).
wait_received() {
    for _ in $(seq 1 ${3:-100}); do
        [ "$(received "select(${2:-true})" | wc -l)" -ge "$1" ] && return 0
        sleep 0.1
    done
    echo "received $(received "select(${2:-true})" | wc -l) of $1: ${2:-}" >&2
    return 1
}
# types JOB [STATUS]: event types the receiver got for a job, in arrival order.
types() {
    received "select(.path == \"/w1\" and (.body | fromjson | .data.id) == \"$1\" and .status == ${2:-200}) | .body | fromjson | .type" | tr -d '"' | paste -sd, -
}

# The test button.
check_eq "test queued" 202 "$(status POST "/v1/webhooks/$W1_ID/test")"
check "test message received" wait_received 1 '.path == "/w1" and (.body | fromjson | .type) == "webhook.test"'
t=$(received 'select(.path == "/w1")' | head -1)
echo "$t" | jq -j .body >"$WORK/body"
check_eq "signature verifies (openssl)" "$(echo "$t" | jq -r .signature)" \
    "$(sw_sign "$W1_SECRET" "$(echo "$t" | jq -r .id)" "$(echo "$t" | jq -r .timestamp)" "$WORK/body")"
check_eq "JSON content type" application/json "$(echo "$t" | jq -r .content_type)"

# A job's life: accepted, started, succeeded, in order; a restart announces itself.
a=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "a", "command": ["sh", "-c", "sleep 0.3"]}' | jq -r .id)
check "job a succeeded" wait_state "$a" succeeded 30
check "job a messages" wait_received 3 ".path == \"/w1\" and (.body | fromjson | .data.id) == \"$a\""
check_eq "in order" job.accepted,job.started,job.succeeded "$(types "$a")"
m=$(received "select((.body | fromjson | .data.id) == \"$a\")" | tail -1 | jq -r .body)
check_eq "payload links the job in the web page" "$URL/#/jobs/$a succeeded" "$(echo "$m" | jq -r '"\(.data.url) \(.data.state)"')"
r=$(api POST /v1/jobs -H 'Content-Type: application/json' -d "{\"name\": \"r\", \"restart\": {\"policy\": \"on_failure\", \"max_restarts\": 1},
  \"command\": [\"sh\", \"-c\", \"test -f \$TRAINYARD_CHECKPOINT_DIR/ran || { touch \$TRAINYARD_CHECKPOINT_DIR/ran; exit 3; }\"]}" | jq -r .id)
check "restarted job succeeded" wait_state "$r" succeeded 30
check "restart messages" wait_received 5 ".path == \"/w1\" and (.body | fromjson | .data.id) == \"$r\""
check_eq "restart announced" job.accepted,job.started,job.restarted,job.started,job.succeeded "$(types "$r")"

# A stalled job (an event of type "stalled" on its timeline) is announced in its place.
s=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "s", "command": ["sh", "-c", "sleep 1.5"]}' | jq -r .id)
check "job s runs" wait_state "$s" running 30
sqlite3 -cmd ".timeout 5000" "$DATA/trainyard.db" "INSERT INTO events (job_pk, seq, time, type, reason, message)
  SELECT pk, (SELECT max(seq) + 1 FROM events WHERE job_pk = jobs.pk), $(date +%s)000000000, 'stalled', 'NoProgress', 'no step for 10m' FROM jobs WHERE id = '$s'"
check "job s succeeded" wait_state "$s" succeeded 30
check "job s messages" wait_received 4 ".path == \"/w1\" and (.body | fromjson | .data.id) == \"$s\""
check_eq "stalled in its place" job.accepted,job.started,job.stalled,job.succeeded "$(types "$s")"

# The receiver fails: retries with backoff, same id; the job's later messages wait their turn.
receiver_mode fail
b=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "b", "command": ["true"]}' | jq -r .id)
check "job b succeeded" wait_state "$b" succeeded 30
check "accepted retried" wait_received 3 ".status == 503 and (.body | fromjson | .data.id) == \"$b\""
check_eq "nothing but accepted while it fails" job.accepted "$(types "$b" 503 | tr ',' '\n' | sort -u | paste -sd, -)"
ids=$(received "select(.status == 503 and (.body | fromjson | .data.id) == \"$b\") | .id" | sort -u | wc -l)
check_eq "same webhook-id on every attempt" 1 "$ids"
gaps=$(received "select(.status == 503 and (.body | fromjson | .data.id) == \"$b\") | .ms" | awk 'NR > 1 { print $1 - p } { p = $1 }' | head -2 | paste -sd' ')
check "backoff between attempts (>= half the base)" sh -c "for g in $gaps; do [ \$g -ge 140 ] || exit 1; done"
pending=$(api GET "/v1/webhooks/$W1_ID/deliveries" | jq -r --arg b "$b" '[.items[] | select(.job_id == $b and .event == "job.accepted")][0] | "\(.state) \(.attempts >= 2) \(.last_status)"')
check_eq "log shows the pending retry" "pending true 503" "$pending"
receiver_mode ok
check "comes back: all delivered" wait_received 3 ".status == 200 and (.body | fromjson | .data.id) == \"$b\"" 150
check_eq "in order after the outage" job.accepted,job.started,job.succeeded "$(types "$b")"
log=$(api GET "/v1/webhooks/$W1_ID/deliveries?limit=200")
check_eq "attempt log kept" 503 "$(echo "$log" | jq -r --arg b "$b" '[.items[] | select(.job_id == $b and .event == "job.accepted")][0].attempt_log[0].status')"
check_eq "delivered after retries" delivered "$(echo "$log" | jq -r --arg b "$b" '[.items[] | select(.job_id == $b and .event == "job.accepted")][0].state')"

# Retry-After is honoured when longer than the backoff.
receiver_mode "retry-after 2"
api POST "/v1/webhooks/$W1_ID/test" >/dev/null
check "429 answered" wait_received 1 '.status == 429'
receiver_mode ok
check "then delivered" wait_received 2 '(.body | fromjson | .type) == "webhook.test" and .status == 200' 60
first=$(received 'select(.status == 429) | .ms' | head -1)
next=$(received "select((.body | fromjson | .type) == \"webhook.test\" and .ms > $first) | .ms" | head -1)
check "waited Retry-After (2 s), not the 300 ms backoff" test $((next - first)) -ge 1900

# A receiver that hangs costs only its own messages: the API answers at once.
receiver_mode slow
c=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "c", "command": ["true"]}' | jq -r .id)
sleep 0.5
start=$(date +%s%N)
for _ in 1 2 3 4 5; do api GET /v1/jobs >/dev/null; done
check "API fast while the receiver hangs" test $((($(date +%s%N) - start) / 5000000)) -lt 200
check "job c still runs" wait_state "$c" succeeded 30
for _ in $(seq 1 50); do
    err=$(api GET "/v1/webhooks/$W1_ID/deliveries" | jq -r --arg c "$c" '[.items[] | select(.job_id == $c)][-1].last_error // empty')
    [ -n "$err" ] && break
    sleep 0.1
done
check "timeout recorded" has "$err" 'time[d ]*out'
receiver_mode ok
check "delivered once the receiver answers" wait_received 3 ".status == 200 and (.body | fromjson | .data.id) == \"$c\"" 150

# Filters and Slack: only job.failed, as a Slack message.
W2=$(json POST /v1/webhooks -d "{\"name\": \"slack\", \"url\": \"$RURL/w2\", \"events\": [\"job.failed\"], \"format\": \"slack\"}")
W2_SECRET=$(echo "$W2" | jq -r .secret)
d=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "d", "command": ["false"]}' | jq -r .id)
check "job d failed" wait_state "$d" failed 30
check "failure announced to both" wait_received 1 '.path == "/w2"'
check "and to the first" wait_received 3 ".path == \"/w1\" and (.body | fromjson | .data.id) == \"$d\" and .status == 200"
sleep 0.5
check_eq "filter: only job.failed" 1 "$(received 'select(.path == "/w2")' | wc -l)"
sl=$(received 'select(.path == "/w2")' | head -1 | jq -r .body)
check "Slack shape" jqtest "$sl" '.text and (.blocks[0].type == "section") and (.blocks[0].text.type == "mrkdwn")'
check "Slack text names the job" jqtest "$sl" '.text | test("job d failed")'

# Independent check of every signature (npm standardwebhooks), when node is here.
interop="$TY_SRC/tests/interop"
if command -v node >/dev/null && { [ -d "$interop/node_modules/standardwebhooks" ] ||
    (cd "$interop" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1); }; then
    check "standardwebhooks verifies every /w1 request" node "$interop/sw-verify-log.js" "$WORK/rcv/requests.ndjson" "$W1_SECRET" /w1
    check "standardwebhooks verifies every /w2 request" node "$interop/sw-verify-log.js" "$WORK/rcv/requests.ndjson" "$W2_SECRET" /w2
    check "a wrong secret fails there" sh -c "! node '$interop/sw-verify-log.js' '$WORK/rcv/requests.ndjson' '$W2_SECRET' /w1"
else
    echo "note: node/npm unavailable, standardwebhooks cross-check skipped (openssl checks ran)"
fi
n=0
while read -r line; do
    echo "$line" | jq -j .body >"$WORK/body"
    [ "$(echo "$line" | jq -r .signature)" = "$(sw_sign "$W1_SECRET" "$(echo "$line" | jq -r .id)" "$(echo "$line" | jq -r .timestamp)" "$WORK/body")" ] || n=$((n + 1))
done < <(received 'select(.path == "/w1")')
check_eq "openssl verifies every /w1 request" 0 "$n"

# 410 Gone disables the webhook; enabling it again clears the reason.
receiver_mode gone
api POST "/v1/webhooks/$W1_ID/test" >/dev/null
for _ in $(seq 1 50); do
    [ "$(api GET "/v1/webhooks/$W1_ID" | jq -r .enabled)" = false ] && break
    sleep 0.1
done
check_eq "410 disables" "false the receiver answered 410 Gone" "$(api GET "/v1/webhooks/$W1_ID" | jq -r '"\(.enabled) \(.disabled_reason)"')"
receiver_mode ok
json PUT "/v1/webhooks/$W1_ID" -d "{\"name\": \"all\", \"url\": \"$RURL/w1\", \"enabled\": true}" >/dev/null
check_eq "enabled again" "true null" "$(api GET "/v1/webhooks/$W1_ID" | jq -r '"\(.enabled) \(.disabled_reason)"')"

# Scopes, audit, delete.
SUB=$(json POST /v1/tokens -d '{"name": "sub", "scope": "submit"}' | jq -r .token)
check_eq "submit token cannot manage webhooks" 403 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SUB" "$URL/v1/webhooks")"
check_eq "nor read their deliveries" 403 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SUB" "$URL/v1/webhooks/$W1_ID/deliveries")"
check_eq "delete" 204 "$(status DELETE /v1/webhooks/slack)"
check_eq "audit" "webhook.create,webhook.update" "$(api GET "/v1/audit?target=webhook/$W1_ID" | jq -r '[.items[].action] | reverse | join(",")')"
check_eq "metrics count deliveries" 1 "$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/metrics" | grep -c 'trainyard_webhook_messages_total{result="delivered"}')"
ty_done
