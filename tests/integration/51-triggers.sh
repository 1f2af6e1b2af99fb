#!/usr/bin/env bash
# S3 triggers through the real hook: each sender's fixture posted with curl (S3 Records with
# Standard Webhooks HMAC, MinIO with a bearer token, EventBridge with an API key and with basic
# auth), keys decoded before matching, one job per object version (duplicates by delivery id
# and by object, versions out of order), rejections (bad and stale signatures, garbage, too
# large) answered with each sender's status and logged, unknown triggers indistinguishable from
# bad credentials, disabled triggers, secrets shown once and stored as digests, scopes, audit.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
ty_start --max-body 4Mi --hook-max-body 64Ki
make_template ingest
json() { api "$@" -H 'Content-Type: application/json'; }

S3=$(make_trigger '{"name": "t-s3", "template": "ingest", "sender": "s3", "values": {"EPOCHS": "5"},
  "rule": {"bucket": "datasets", "prefix": "incoming/", "suffix": ".tar", "events": ["s3:ObjectCreated:*"]},
  "auth": {"mode": "hmac"}}')
S3_ID=$(echo "$S3" | jq -r .id)
S3_SECRET=$(echo "$S3" | jq -r '.secrets[0]')
check "hmac secret made and shown once" test "${S3_SECRET#whsec_}" != "$S3_SECRET"
check_eq "hook url given" "$URL/v1/hooks/s3/$S3_ID" "$(echo "$S3" | jq -r .hook_url)"
MINIO=$(make_trigger '{"name": "t-minio", "template": "ingest", "sender": "minio",
  "rule": {"bucket": "datasets", "prefix": "incoming/"}, "auth": {"mode": "bearer"}}')
MINIO_ID=$(echo "$MINIO" | jq -r .id)
MINIO_TOKEN=$(echo "$MINIO" | jq -r '.secrets[0]')
EB=$(make_trigger '{"name": "t-eb", "template": "ingest", "sender": "eventbridge",
  "rule": {"bucket": "datasets"}, "auth": {"mode": "header", "header": "x-api-key", "secrets": ["k-0123456789abcdef"]}}')
EB_ID=$(echo "$EB" | jq -r .id)
BASIC_ID=$(make_trigger '{"name": "t-basic", "template": "ingest", "sender": "eventbridge",
  "auth": {"mode": "basic", "secrets": ["eventbridge:s3cr3t-pass"]}}' | jq -r .id)
AUTO_ID=$(make_trigger '{"name": "t-auto", "template": "ingest", "auth": {"mode": "bearer"}}' | jq -r .id)

# Saving is checked: rule, auth, template values.
bad() { json POST /v1/triggers -d "$1" | jq -r '[.status, (.errors // [] | map(.pointer) | join(","))] | join(" ")'; }
check_eq "unknown template" "422 /template" "$(bad '{"name": "x", "template": "nope", "auth": {"mode": "hmac"}}')"
check_eq "unknown value" "422 /values/NOPE" "$(bad '{"name": "x", "template": "ingest", "values": {"NOPE": "1"}, "auth": {"mode": "hmac"}}')"
check_eq "bad rule event" "422 /rule/events/0" "$(bad '{"name": "x", "template": "ingest", "rule": {"events": ["s3:ObjectRemoved:*"]}, "auth": {"mode": "hmac"}}')"
check_eq "auth mode none refused" "422 /auth/mode" "$(bad '{"name": "x", "template": "ingest", "auth": {"mode": "none"}}')"
check_eq "weak secret" "422 /auth/secrets/0" "$(bad '{"name": "x", "template": "ingest", "auth": {"mode": "bearer", "secrets": ["short"]}}')"
check_eq "header mode needs a header" "422 /auth/header" "$(bad '{"name": "x", "template": "ingest", "auth": {"mode": "header"}}')"
check_eq "duplicate name" 409 "$(status POST /v1/triggers -H 'Content-Type: application/json' -d '{"name": "t-s3", "template": "ingest", "auth": {"mode": "hmac"}}')"

# Secrets: fingerprints only afterwards; bearer/header/basic stored as digests.
got=$(api GET "/v1/triggers/t-minio")
check "GET shows no secret" sh -c "! echo '$got' | grep -q '$MINIO_TOKEN'"
check_eq "GET shows a fingerprint" 1 "$(echo "$got" | jq '.auth.secrets | map(select(.fingerprint | startswith("sha256:"))) | length')"
check "no secrets in the list" sh -c "! curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/triggers | grep -q '$MINIO_TOKEN'"
stored=$(sqlite3 "$DATA/trainyard.db" "SELECT secrets FROM triggers WHERE name IN ('t-minio', 't-eb', 't-basic')")
check "bearer/header/basic secrets stored as digests" sh -c "! echo '$stored' | grep -q -e '$MINIO_TOKEN' -e k-0123456789abcdef -e s3cr3t-pass"
check "digest form" has "$stored" sha256-token:

# S3 Records + HMAC: accepted, key decoded, values rendered.
out=$(hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-put.json" msg_first)
check_eq "S3 put accepted" "200 accepted 1" "$(echo "$out" | sed 's/^\([0-9]*\) /\1\t/' | awk -F'\t' '{print $1}') $(echo "${out#* }" | jq -r '"\(.outcome) \(.jobs)"')"
check "job started" wait_jobs t-s3 1
jid=$(trigger_jobs t-s3 | head -1)
spec=$(api GET "/v1/jobs/$jid" | jq -c .spec)
check_eq "S3_KEY decoded" "incoming/run 42/data=v2.tar" "$(echo "$spec" | jq -r .env.S3_KEY)"
check_eq "S3_URI" "s3://datasets/incoming/run 42/data=v2.tar" "$(echo "$spec" | jq -r .env.S3_URI)"
check_eq "size" 73400320 "$(echo "$spec" | jq -r .env.SIZE)"
check_eq "trigger values" 5 "$(echo "$spec" | jq -r .env.EPOCHS)"
check_eq "name from bucket" ingest-datasets "$(echo "$spec" | jq -r .name)"
check "job runs" wait_state "$jid" succeeded 30

# Duplicates: same delivery id; same object by another delivery; same object, key encoded
# differently; versions out of order each start their job once.
check_eq "same webhook-id: duplicate" "200 duplicate" "$(hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-put.json" msg_first | awk '{print $1}') $(jq -r .outcome "$WORK/hook.out")"
hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-put.json" >/dev/null
check_eq "same object, new delivery: duplicate" "duplicate 0" "$(jq -r '"\(.outcome) \(.jobs)"' "$WORK/hook.out")"
jq '.Records[0].s3.object.key = "incoming%2Frun+42%2Fdata%3dv2.tar"' "$FIX/s3-put.json" >"$WORK/enc.json"
hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/enc.json" >/dev/null
check_eq "same object, other encoding: duplicate" duplicate "$(jq -r .outcome "$WORK/hook.out")"
version() { jq --arg v "$1" --arg s "$2" '.Records[0].s3.object.versionId = $v | .Records[0].s3.object.sequencer = $s' "$FIX/s3-put.json" >"$WORK/v-$1.json"; }
version v3 0066321A000000000A
version v2 00663219FF00000001
hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/v-v3.json" >/dev/null
check_eq "newer version first" accepted "$(jq -r .outcome "$WORK/hook.out")"
hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/v-v2.json" >/dev/null
check_eq "older version later still starts its job" accepted "$(jq -r .outcome "$WORK/hook.out")"
hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/v-v3.json" >/dev/null
check_eq "repeated version: duplicate" duplicate "$(jq -r .outcome "$WORK/hook.out")"
check "one job per object version" wait_jobs t-s3 3
sleep 0.5
check_eq "exactly three jobs" 3 "$(trigger_jobs t-s3 | wc -l)"

# Ignored: TestEvent, a delete, a key outside the rule.
check_eq "TestEvent acknowledged" "200 ignored" "$(hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-testevent.json" | awk '{print $1}') $(jq -r .outcome "$WORK/hook.out")"
hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-delete.json" >/dev/null
check_eq "delete ignored" ignored "$(jq -r .outcome "$WORK/hook.out")"
hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-copy.json" >/dev/null
check_eq "rule mismatch ignored" ignored "$(jq -r .outcome "$WORK/hook.out")"

# Rejections: bad signature, stale and future timestamps, no headers, garbage, too large.
cp "$FIX/s3-put.json" "$WORK/tampered.json"
sig=$(sw_sign "$S3_SECRET" msg_t "$(date +%s)" "$WORK/tampered.json")
echo " " >>"$WORK/tampered.json"
check_eq "tampered body" 401 "$(hook "$S3_ID" "$WORK/tampered.json" -H 'webhook-id: msg_t' -H "webhook-timestamp: $(date +%s)" -H "webhook-signature: $sig" | cut -d' ' -f1)"
check_eq "generic detail" "the request could not be authenticated for this trigger" "$(jq -r .detail "$WORK/hook.out")"
check_eq "stale timestamp" 401 "$(hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-put.json" msg_s $(($(date +%s) - 600)) | cut -d' ' -f1)"
check_eq "future timestamp" 401 "$(hook_hmac "$S3_ID" "$S3_SECRET" "$FIX/s3-put.json" msg_f $(($(date +%s) + 600)) | cut -d' ' -f1)"
check_eq "no signature" 401 "$(hook "$S3_ID" "$FIX/s3-put.json" | cut -d' ' -f1)"
check_eq "wrong secret" 401 "$(hook_hmac "$S3_ID" "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" "$FIX/s3-put.json" | cut -d' ' -f1)"
printf '{"Records": [{"s3": ' >"$WORK/garbage.json"
check_eq "garbage JSON, signed: 400" 400 "$(hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/garbage.json" | cut -d' ' -f1)"
check "garbage detail names the problem" sh -c "jq -r .detail '$WORK/hook.out' | grep -qi json"
printf '%0.s[' $(seq 40) >"$WORK/deep.json"
check_eq "nesting too deep: 400" 400 "$(hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/deep.json" | cut -d' ' -f1)"
head -c 100000 /dev/zero | tr '\0' ' ' >"$WORK/big.json"
check_eq "over --hook-max-body: 413" 413 "$(hook_hmac "$S3_ID" "$S3_SECRET" "$WORK/big.json" | cut -d' ' -f1)"
log=$(api GET "/v1/triggers/t-s3/deliveries?limit=100")
# Only an authenticated sender's rejections are logged (garbage, too deep); those anyone can
# send (bad signature, stale, no signature, wrong secret, too large) leave no row, only a count.
check_eq "rejections logged with reasons" 2 "$(echo "$log" | jq '[.items[] | select(.outcome == "rejected")] | length')"
check "garbage reason logged" has "$(echo "$log" | jq -r '.items[].error // empty')" JSON
check_eq "every logged rejection is verified" true "$(echo "$log" | jq '[.items[] | select(.outcome == "rejected") | .verified] | all')"
unauth() { api GET /metrics | awk -v k="trainyard_http_unauthenticated_total{operation=\"hooks_s3\",code=\"$1\"}" '$1 == k {print $2}'; }
check_eq "unauthenticated deliveries counted (401)" 5 "$(unauth 401)"
check_eq "unauthenticated deliveries counted (413)" 1 "$(unauth 413)"
check_eq "duplicates logged" 4 "$(echo "$log" | jq '[.items[] | select(.outcome == "duplicate")] | length')"
check_eq "matched event shows its job" "$jid" "$(echo "$log" | jq -r --arg j "$jid" '[.items[].events[] | select(.job_id == $j)][0].job_id')"
check "ignored events say why" has "$(echo "$log" | jq -r '.items[].events[].why // empty')" 'does not start with incoming/'
page=$(api GET "/v1/triggers/t-s3/deliveries?limit=2")
check_eq "paged" 2 "$(echo "$page" | jq '.items | length')"
check_eq "next page" 2 "$(api GET "/v1/triggers/t-s3/deliveries?limit=2&before=$(echo "$page" | jq .next_before)" | jq '.items | length')"

# MinIO: bearer token, 403 for a wrong one, garbage answered 200 (its queue retries any 4xx).
check_eq "MinIO put" "200 accepted" "$(hook "$MINIO_ID" "$FIX/minio-put.json" -H "Authorization: Bearer $MINIO_TOKEN" | cut -d' ' -f1) $(jq -r .outcome "$WORK/hook.out")"
check "MinIO job" wait_jobs t-minio 1
check_eq "MinIO key decoded (%2F, +, %2B)" "incoming/run 42/a+b.tar" "$(api GET "/v1/jobs/$(trigger_jobs t-minio | head -1)" | jq -r .spec.env.S3_KEY)"
check_eq "MinIO wrong token: 403" 403 "$(hook "$MINIO_ID" "$FIX/minio-put.json" -H 'Authorization: Bearer nope-nope-nope' | cut -d' ' -f1)"
check_eq "MinIO garbage: 200, logged rejected" "200 rejected" "$(hook "$MINIO_ID" "$WORK/garbage.json" -H "Authorization: Bearer $MINIO_TOKEN" | cut -d' ' -f1) $(jq -r .outcome "$WORK/hook.out")"
check_eq "MinIO read event ignored" ignored "$(hook "$MINIO_ID" "$FIX/minio-get.json" -H "Authorization: Bearer $MINIO_TOKEN" >/dev/null; jq -r .outcome "$WORK/hook.out")"

# EventBridge: API key header; basic auth with its challenge.
ebh=(-H 'User-Agent: Amazon/EventBridge/ApiDestinations' -H 'Content-Type: application/json; charset=utf-8')
check_eq "EventBridge with API key" "200 accepted" "$(hook "$EB_ID" "$FIX/eventbridge-created.json" "${ebh[@]}" -H 'x-api-key: k-0123456789abcdef' | cut -d' ' -f1) $(jq -r .outcome "$WORK/hook.out")"
check_eq "EventBridge wrong key: 401" 401 "$(hook "$EB_ID" "$FIX/eventbridge-created.json" "${ebh[@]}" -H 'x-api-key: k-0123456789abcdeF' | cut -d' ' -f1)"
check_eq "EventBridge delete ignored" ignored "$(hook "$EB_ID" "$FIX/eventbridge-deleted.json" "${ebh[@]}" -H 'x-api-key: k-0123456789abcdef' >/dev/null; jq -r .outcome "$WORK/hook.out")"
check "EventBridge job" wait_jobs t-eb 1
check_eq "EventBridge key as sent" "incoming/run 42/data=v2+final.tar" "$(api GET "/v1/jobs/$(trigger_jobs t-eb | head -1)" | jq -r .spec.env.S3_KEY)"
hdrs=$(curl -s -D - -o /dev/null -X POST --data-binary "@$FIX/eventbridge-created.json" "${ebh[@]}" "$URL/v1/hooks/s3/$BASIC_ID")
check "basic: 401 with a challenge" has "$hdrs" '^WWW-Authenticate: Basic'
check_eq "basic: credentials accepted" 200 "$(hook "$BASIC_ID" "$FIX/eventbridge-created.json" "${ebh[@]}" -u eventbridge:s3cr3t-pass | cut -d' ' -f1)"

# An unknown trigger answers like a known one with wrong credentials.
a=$(hook "$AUTO_ID" "$FIX/s3-put.json" -H 'Authorization: Bearer wrong-token-123')
u=$(hook trg_doesnotexist0000000 "$FIX/s3-put.json" -H 'Authorization: Bearer wrong-token-123')
check_eq "unknown trigger: same status and detail" "$(echo "$a" | cut -d' ' -f1) $(echo "${a#* }" | jq -r .detail)" "$(echo "$u" | cut -d' ' -f1) $(echo "${u#* }" | jq -r .detail)"
check_eq "hook by trigger name is unknown" 401 "$(hook t-auto "$FIX/s3-put.json" -H 'Authorization: Bearer wrong-token-123' | cut -d' ' -f1)"

# Disabled: authentic deliveries are acknowledged and logged, no job.
json PUT /v1/triggers/t-minio -d '{"template": "ingest", "sender": "minio", "rule": {"bucket": "datasets", "prefix": "incoming/"}, "enabled": false}' >/dev/null
jq '.Records[0].s3.object.sequencer = "17C3D4E5F6A7B8D0"' "$FIX/minio-put.json" >"$WORK/minio2.json"
check_eq "disabled: 200 ignored" "200 ignored" "$(hook "$MINIO_ID" "$WORK/minio2.json" -H "Authorization: Bearer $MINIO_TOKEN" | cut -d' ' -f1) $(jq -r .outcome "$WORK/hook.out")"
check_eq "token kept across an update without auth" 200 "$(hook "$MINIO_ID" "$WORK/minio2.json" -H "Authorization: Bearer $MINIO_TOKEN" | cut -d' ' -f1)"
sleep 0.5
check_eq "disabled: no job" 1 "$(trigger_jobs t-minio | wc -l)"

# Rotation: same mode without secrets keeps them; new secrets replace them.
json PUT /v1/triggers/t-eb -d '{"template": "ingest", "sender": "eventbridge", "rule": {"bucket": "datasets"}, "auth": {"mode": "header", "header": "x-api-key"}}' >/dev/null
check_eq "same mode keeps the key" 200 "$(hook "$EB_ID" "$FIX/eventbridge-deleted.json" "${ebh[@]}" -H 'x-api-key: k-0123456789abcdef' | cut -d' ' -f1)"
rot=$(json PUT /v1/triggers/t-eb -d '{"template": "ingest", "sender": "eventbridge", "auth": {"mode": "header", "header": "x-api-key", "secrets": ["k-new-0123456789", "k-0123456789abcdef"]}}')
check_eq "rotation shows the given secrets once" 2 "$(echo "$rot" | jq '.secrets | length')"
check_eq "both keys work while rotating" "200 200" "$(hook "$EB_ID" "$FIX/eventbridge-deleted.json" "${ebh[@]}" -H 'x-api-key: k-new-0123456789' | cut -d' ' -f1) $(hook "$EB_ID" "$FIX/eventbridge-deleted.json" "${ebh[@]}" -H 'x-api-key: k-0123456789abcdef' | cut -d' ' -f1)"
check_eq "rename refused" 422 "$(status PUT /v1/triggers/t-eb -H 'Content-Type: application/json' -d '{"name": "other", "template": "ingest"}')"

# Scopes and audit.
SUBMIT=$(json POST /v1/tokens -d '{"name": "sub", "scope": "submit"}' | jq -r .token)
check_eq "submit token cannot list triggers" 403 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SUBMIT" "$URL/v1/triggers")"
check_eq "submit token cannot read deliveries" 403 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SUBMIT" "$URL/v1/triggers/t-s3/deliveries")"
check_eq "owner of trigger jobs" trigger/t-s3 "$(api GET "/v1/jobs/$jid" | jq -r .owner)"
check_eq "audit" "trigger.create,trigger.update,trigger.update" "$(api GET "/v1/audit?target=trigger/$EB_ID" | jq -r '[.items[].action] | reverse | join(",")')"
check_eq "delete" 204 "$(status DELETE /v1/triggers/t-basic)"
check_eq "deleted trigger's hook is unknown" 401 "$(hook "$BASIC_ID" "$FIX/eventbridge-created.json" "${ebh[@]}" -u eventbridge:s3cr3t-pass | cut -d' ' -f1)"
ty_done
