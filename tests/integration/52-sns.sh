#!/usr/bin/env bash
# SNS through the real hook: messages signed at test time with an openssl-made key and
# certificate (SignatureVersion 1 and 2), the certificate served over HTTPS by openssl s_server
# on 127.0.0.1, which the daemon accepts as the SNS host only because of --test-sns-cert-host.
# SubscriptionConfirmation is confirmed in the background (GET SubscribeURL),
# UnsubscribeConfirmation recorded; forged, stale, off-topic and raw messages are refused with
# 403 (SNS does not retry 4xx), a certificate that cannot be fetched with 503 (it does).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
pki_make
sns_server_start
[ -n "$SNS_HOST" ] || { echo "openssl s_server did not start" >&2; exit 1; }
ty_start --test-sns-cert-host "$SNS_HOST" --test-sns-ca-file "$PKI/ca.pem"
check "test mode is announced" grep -q "TEST MODE" "$WORK/daemon.err"
make_template ingest
ID=$(make_trigger "{\"name\": \"t-sns\", \"template\": \"ingest\", \"sender\": \"sns\",
  \"rule\": {\"bucket\": \"datasets\"}, \"auth\": {\"mode\": \"sns\", \"topic_arns\": [\"$SNS_TOPIC\"]}}" | jq -r .id)
check "trigger created" test "${ID#trg_}" != "$ID"
post() { sns_post "$ID" "$1" | cut -d' ' -f1; }
outcome() { jq -r .outcome "$WORK/hook.out"; }
sub_state() { api GET /v1/triggers/t-sns | jq -r '.sns_subscriptions[0].state'; }
wait_sub() {
    for _ in $(seq 1 50); do
        [ "$(sub_state)" = "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# Subscription: verified, then confirmed in the background.
sns_message SubscriptionConfirmation "You have chosen to subscribe to the topic $SNS_TOPIC." >"$WORK/sub.json"
check_eq "SubscriptionConfirmation accepted" "200 subscribe" "$(post "$WORK/sub.json") $(outcome)"
check "subscription confirmed (SubscribeURL fetched)" wait_sub confirmed
check_eq "SubscriptionArn recorded" "arn:aws:sns:eu-west-1:123456789012:uploads:0f1e2d3c" "$(api GET /v1/triggers/t-sns | jq -r '.sns_subscriptions[0].subscription_arn')"
check "the fetch reached the HTTPS server" grep -q confirm.xml "$PKI/server.log"

# Notifications, SignatureVersion 1 and 2: the S3 document inside Message starts a job.
msg=$(jq -c . "$FIX/s3-put.json")
sns_message Notification "$msg" "Amazon S3 Notification" >"$WORK/n1.json"
check_eq "SV1 notification" "200 accepted" "$(post "$WORK/n1.json") $(outcome)"
check "job started" wait_jobs t-sns 1
check_eq "key decoded" "incoming/run 42/data=v2.tar" "$(api GET "/v1/jobs/$(trigger_jobs t-sns | head -1)" | jq -r .spec.env.S3_KEY)"
msg2=$(jq -c '.Records[0].s3.object.versionId = "v2" | .Records[0].s3.object.sequencer = "0066321A00"' "$FIX/s3-put.json")
SNS_SV=2 sns_message Notification "$msg2" >"$WORK/n2.json"
check_eq "SV2 notification (no Subject)" "200 accepted" "$(post "$WORK/n2.json") $(outcome)"
check "second job" wait_jobs t-sns 2
check_eq "retried message (same MessageId): duplicate" "200 duplicate" "$(post "$WORK/n1.json") $(outcome)"
sns_message Notification "$msg" "Amazon S3 Notification" >"$WORK/n1b.json"
check_eq "same object in a new message: duplicate" "200 duplicate" "$(post "$WORK/n1b.json") $(outcome)"
sns_message Notification "$(jq -c . "$FIX/s3-testevent.json")" "Amazon S3 Notification" >"$WORK/test.json"
check_eq "s3:TestEvent through SNS ignored" "200 ignored" "$(post "$WORK/test.json") $(outcome)"

# Forgeries and replays: 403, never a job.
jq '.Message |= sub("run\\+42"; "run+43")' "$WORK/n1b.json" >"$WORK/forged.json"
check_eq "tampered Message" 403 "$(post "$WORK/forged.json")"
check_eq "generic detail" "the request could not be authenticated for this trigger" "$(jq -r .detail "$WORK/hook.out")"
SNS_KEY=rogue sns_message Notification "$msg" >"$WORK/rogue.json"
check_eq "signed with another key" 403 "$(post "$WORK/rogue.json")"
SNS_TOPIC=arn:aws:sns:eu-west-1:123456789012:other sns_message Notification "$msg" >"$WORK/topic.json"
check_eq "topic not allowed" 403 "$(post "$WORK/topic.json")"
SNS_SV_SENT=3 sns_message Notification "$msg" >"$WORK/sv3.json"
check_eq "unknown SignatureVersion" 403 "$(post "$WORK/sv3.json")"
SNS_TS=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%S.000Z) sns_message Notification "$msg" >"$WORK/stale.json"
check_eq "stale Timestamp" 403 "$(post "$WORK/stale.json")"
SNS_CERT_URL=https://sns.eu-west-1.amazonaws.com.evil.example/SimpleNotificationService-x.pem sns_message Notification "$msg" >"$WORK/host.json"
check_eq "certificate host not SNS" 403 "$(post "$WORK/host.json")"
SNS_CERT_URL="https://$SNS_HOST/SimpleNotificationService-test.pem?x=1" sns_message Notification "$msg" >"$WORK/query.json"
check_eq "certificate URL with a query" 403 "$(post "$WORK/query.json")"
raw=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'x-amz-sns-message-type: Notification' -H 'x-amz-sns-rawdelivery: true' --data-binary "@$FIX/s3-put.json" "$URL/v1/hooks/s3/$ID")
check_eq "raw delivery carries no signature" 403 "$raw"
printf '{"Type": "Notification", ' >"$WORK/garbage.json"
check_eq "garbage envelope: 400" 400 "$(post "$WORK/garbage.json")"
sleep 0.3
check_eq "still two jobs" 2 "$(trigger_jobs t-sns | wc -l)"

# Our trouble is retried: with the certificate server down, a certificate not yet cached cannot
# be fetched: 503, so SNS sends it again. A SubscribeURL that cannot be fetched stays pending
# with the reason (its certificate is cached, so the message itself verifies).
kill "$SPID" && wait "$SPID" 2>/dev/null
SPID=""
SNS_CERT_URL="https://$SNS_HOST/SimpleNotificationService-other.pem" sns_message Notification "$msg2" >"$WORK/nocert.json"
check_eq "certificate fetch fails: 503" 503 "$(post "$WORK/nocert.json")"
log=$(api GET /v1/triggers/t-sns/deliveries?limit=100)
# Unverified deliveries (forgeries, and the one whose certificate could not be fetched) are
# answered and counted, never stored: anyone could send them.
check_eq "nothing unverified logged" 0 "$(echo "$log" | jq '[.items[] | select(.verified == false)] | length')"
unauth() { api GET /metrics | awk -v k="trainyard_http_unauthenticated_total{operation=\"hooks_s3\",code=\"$1\"}" '$1 == k {print $2}'; }
check_eq "forgeries counted" 8 "$(unauth 403)"
check_eq "the garbage envelope counted (SNS signs the envelope)" 1 "$(unauth 400)"
check_eq "the certificate fetch failure counted" 1 "$(unauth 503)"
SNS_SUB_URL="https://$SNS_HOST/confirm.xml?again=1" sns_message SubscriptionConfirmation "subscribe" >"$WORK/sub2.json"
check_eq "confirmation while the SubscribeURL is down: 200" 200 "$(post "$WORK/sub2.json")"
# A SubscribeURL that fails is kept pending with the reason; unsubscribe is recorded.
for _ in $(seq 1 50); do
    err=$(api GET /v1/triggers/t-sns | jq -r '.sns_subscriptions[0].error // empty')
    [ -n "$err" ] && break
    sleep 0.1
done
check_eq "failed fetch kept pending for a retry" pending "$(sub_state)"
check "with the reason" test -n "$err"
sns_message UnsubscribeConfirmation "unsubscribed" >"$WORK/unsub.json"
check_eq "UnsubscribeConfirmation recorded" "200 unsubscribed" "$(post "$WORK/unsub.json") $(outcome)"
check_eq "subscription state" unsubscribed "$(sub_state)"

# The test host is honoured only in test mode: the same messages fail on a production daemon.
ty_kill9
ty_restart --log-level info
check "no test mode without the flag" sh -c "! grep -q 'TEST MODE' '$WORK/daemon.err' || [ \$(grep -c 'TEST MODE' '$WORK/daemon.err') -eq 1 ]"
check_eq "production mode refuses the test certificate host" 403 "$(post "$WORK/n2.json")"
ty_done
