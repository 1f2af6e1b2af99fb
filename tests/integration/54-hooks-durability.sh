#!/usr/bin/env bash
# Nothing accepted is lost, nothing is done twice, across kill -9:
#  - a hook answered 2xx whose job was not submitted yet (held by --trigger-submit-paused, so
#    the window is certain) gets its job after a restart, exactly once;
#  - a burst of deliveries killed right after the last 2xx: one job per object after restart;
#  - webhook messages queued while the receiver is down are sent after a restart, with the same
#    webhook-id, and each event of a job becomes one message even when the daemon dies at once
#    (a message in flight at the kill may be sent again, with its webhook-id: at least once).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
ty_start --trigger-submit-paused --webhook-allow-local
make_template ingest
T=$(make_trigger '{"name": "t", "template": "ingest", "rule": {"bucket": "datasets"}, "auth": {"mode": "hmac"}}')
ID=$(echo "$T" | jq -r .id)
SECRET=$(echo "$T" | jq -r '.secrets[0]')

# 1. Answered, stored, not yet submitted: kill -9, restart, exactly one job.
check_eq "hook answered 2xx" "200 accepted 1" "$(hook_hmac "$ID" "$SECRET" "$FIX/s3-put.json" msg_d1 | cut -d' ' -f1) $(jq -r '"\(.outcome) \(.jobs)"' "$WORK/hook.out")"
check_eq "submission pending" pending "$(api GET /v1/triggers/t/deliveries | jq -r '.items[0].events[0].submission')"
check_eq "no job yet" 0 "$(trigger_jobs t | wc -l)"
ty_kill9
ty_restart --webhook-allow-local --log-level info
check "job created after restart" wait_jobs t 1
check "restart found the pending submission" grep -q "pending from before" "$WORK/daemon.err"
check_eq "resent after restart: duplicate" duplicate "$(hook_hmac "$ID" "$SECRET" "$FIX/s3-put.json" msg_d1 >/dev/null; jq -r .outcome "$WORK/hook.out")"
sleep 0.5
check_eq "exactly one job" 1 "$(trigger_jobs t | wc -l)"
check_eq "delivery shows the job" "$(trigger_jobs t)" "$(api GET /v1/triggers/t/deliveries | jq -r '[.items[] | select(.outcome == "accepted")][0].events[0].job_id')"

# 2. A burst, kill -9 right after the last answer: one job per object, none twice.
N=40
mkdir -p "$WORK/burst"
for i in $(seq 1 $N); do
    f="$WORK/burst/$i.json"
    jq --arg k "burst/object-$i.tar" '.Records[0].s3.object.key = $k' "$FIX/s3-put.json" >"$f"
    ts=$(date +%s)
    printf '%s\t%s\t%s\n' "$f" "msg_b$i" "$(sw_sign "$SECRET" "msg_b$i" "$ts" "$f") $ts"
done >"$WORK/burst.tsv"
post_one() {
    IFS=$'\t' read -r f id rest <<<"$1"
    curl -s -o /dev/null -w '%{http_code}\n' -X POST -H 'Content-Type: application/json' \
        -H "webhook-id: $id" -H "webhook-timestamp: ${rest#* }" -H "webhook-signature: ${rest% *}" \
        --data-binary "@$f" "$URL/v1/hooks/s3/$ID"
}
export -f post_one
export URL ID
codes=$(tr '\n' '\0' <"$WORK/burst.tsv" | xargs -0 -P 8 -I{} bash -c 'post_one "$1"' _ {} | sort | uniq -c | tr -s ' ')
ty_kill9
check_eq "every delivery answered 200" "$N 200" "${codes# }"
ty_restart --webhook-allow-local --log-level info
check "one job per object after restart" wait_jobs t $((N + 1)) 30
echo "note: submissions pending at the kill: $(grep 'pending from before' "$WORK/daemon.err" | tail -1 | grep -o 'loop: [0-9]*' || echo 'loop: 0')"
sleep 1
check_eq "none twice" $((N + 1)) "$(trigger_jobs t | wc -l)"
keys=$(for j in $(trigger_jobs t); do api GET "/v1/jobs/$j" | jq -r .spec.env.S3_KEY; done | sort -u | wc -l)
check_eq "distinct objects" $((N + 1)) "$keys"
check_eq "nothing pending" 0 "$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/metrics" | awk '/^trainyard_trigger_jobs_pending/ {print $2}')"

# 3. Webhook messages survive kill -9 in the outbox; a job's events are announced once.
receiver_start
receiver_mode fail
W=$(api POST /v1/webhooks -H 'Content-Type: application/json' -d "{\"url\": \"$RURL/w\"}" | jq -r .id)
j=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "w", "command": ["true"]}' | jq -r .id)
check "job w succeeded" wait_state "$j" succeeded 30
of_j="(.body | fromjson | .data.id) == \"$j\""
for _ in $(seq 1 100); do
    [ -n "$(received "select(.status == 503 and $of_j)" | head -1)" ] && break
    sleep 0.1
done
first=$(received "select(.status == 503 and $of_j) | .id" | head -1 | tr -d '"')
check "a failed attempt before the kill" test -n "$first"
ty_kill9
receiver_mode ok
ty_restart --webhook-allow-local --log-level info --webhook-retry-base 200ms
ok_for() { received "select(.status == 200 and (.body | fromjson | .data.id) == \"$1\") | .body | fromjson | .type" | tr -d '"' | paste -sd, -; }
for _ in $(seq 1 150); do
    [ "$(ok_for "$j")" = job.accepted,job.started,job.succeeded ] && break
    sleep 0.1
done
check_eq "delivered after restart, in order" job.accepted,job.started,job.succeeded "$(ok_for "$j")"
check_eq "same webhook-id as before the kill" "$first" "$(received "select(.status == 200 and (.body | fromjson | .data.id) == \"$j\") | .id" | head -1 | tr -d '"')"
k=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name": "k", "command": ["true"]}' | jq -r .id)
ty_kill9
ty_restart --webhook-allow-local --log-level info
# Whatever the job went through across the kill, each event of its timeline becomes one message.
for _ in $(seq 1 300); do
    case $(api GET "/v1/jobs/$k" | jq -r .state) in succeeded | failed | cancelled) break ;; esac
    sleep 0.1
done
want=$(api GET "/v1/jobs/$k/events" | jq -r '.items[] | select(.rank == null) | .type' |
    sed -n 's/^accepted$/job.accepted/p; s/^running$/job.started/p; s/^succeeded$/job.succeeded/p;
           s/^failed$/job.failed/p; s/^preempted$/job.failed/p; s/^cancelled$/job.cancelled/p;
           s/^restarting$/job.restarted/p' | paste -sd,)
for _ in $(seq 1 100); do
    [ "$(ok_for "$k" | tr ',' '\n' | sort -u | paste -sd,)" = "$(echo "$want" | tr ',' '\n' | sort -u | paste -sd,)" ] && break
    sleep 0.1
done
sleep 0.5
check "job k's timeline has events" test -n "$want"
check_eq "every event of job k announced" "$(echo "$want" | tr ',' '\n' | sort -u | paste -sd,)" "$(ok_for "$k" | tr ',' '\n' | sort -u | paste -sd,)"
# At least once: a message sent just before the kill may come again after it, with the same
# webhook-id (receivers dedupe on it); never as a second message for the same event.
ids=$(received "select(.status == 200 and (.body | fromjson | .data.id) == \"$k\") | .id" | sort -u | wc -l)
check_eq "one message (webhook-id) per event" "$(echo "$want" | tr ',' '\n' | wc -l)" "$ids"
ty_done
