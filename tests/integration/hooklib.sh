# Helpers for the S3 trigger and webhook tests (50-54), sourced after lib.sh:
#   FIX                                 the sender fixtures (tests/unit/data/trigger)
#   sw_sign SECRET ID TS FILE           Standard Webhooks signature "v1,<base64>" (openssl)
#   hook TRIGGER FILE [curl args]       POST FILE to the hook; prints "STATUS BODY"
#   hook_hmac TRIGGER SECRET FILE [ID] [TS]   the same, signed
#   make_template NAME                  a template that sleeps briefly and shows its values
#   make_trigger JSON                   creates a trigger; prints its answer (with secrets)
#   trigger_jobs NAME                   ids of the jobs a trigger started (owner trigger/NAME)
#   receiver_start / receiver_mode MODE the webhook receiver (tests/tools/webhook_receiver.c)
#   pki_make / sns_server_start         test CA, SNS signing certificate, HTTPS server
#   sns_message TYPE MESSAGE [SUBJECT]  a signed SNS envelope (SignatureVersion $SNS_SV)
#   has TEXT REGEX                      TEXT holds a line matching REGEX (case-insensitive)
FIX="$TY_SRC/tests/unit/data/trigger"
RECEIVER="$TY_BUILD/tests/webhook_receiver"
RPID=""
SPID=""

hooklib_cleanup() {
    [ -n "$RPID" ] && kill "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    cleanup
}
trap hooklib_cleanup EXIT

has() {
    grep -qiE -- "$2" <<<"$1"
}

sw_sign() {
    local key
    key=$(printf '%s' "${1#whsec_}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
    { printf '%s.%s.' "$2" "$3"; cat "$4"; } |
        openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" -binary | base64 -w0 | sed 's/^/v1,/'
}

hook() {
    local trigger=$1 file=$2
    shift 2
    curl -s -o "$WORK/hook.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "@$file" "$@" "$URL/v1/hooks/s3/$trigger"
    printf ' %s\n' "$(cat "$WORK/hook.out")"
}

hook_hmac() {
    local trigger=$1 secret=$2 file=$3 id=${4:-msg_$RANDOM$RANDOM} ts=${5:-$(date +%s)}
    hook "$trigger" "$file" -H "webhook-id: $id" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $(sw_sign "$secret" "$id" "$ts" "$file")"
}

make_template() {
    api POST /v1/templates -H 'Content-Type: application/json' -d "{
      \"name\": \"$1\",
      \"spec\": {\"name\": \"ingest-\${S3_BUCKET}\",
               \"command\": [\"sh\", \"-c\", \"echo \\\"\$S3_KEY\\\" \$EPOCHS; sleep 0.1\"],
               \"env\": {\"S3_KEY\": \"\${S3_KEY}\", \"S3_URI\": \"\${S3_URI}\",
                         \"SIZE\": \"\${OBJECT_SIZE}\", \"EPOCHS\": \"\${EPOCHS}\"},
               \"labels\": {\"bucket\": \"\${S3_BUCKET}\"},
               \"variables\": {\"EPOCHS\": {\"default\": \"1\"}}}}" >/dev/null
}

make_trigger() {
    api POST /v1/triggers -H 'Content-Type: application/json' -d "$1"
}

trigger_jobs() {
    api GET "/v1/jobs?limit=1000" | jq -r --arg o "trigger/$1" '.items[] | select(.owner == $o) | .id'
}

# wait_jobs NAME N [seconds]: waits until the trigger has started N jobs.
wait_jobs() {
    local n=0
    for _ in $(seq 1 $((${3:-10} * 10))); do
        n=$(trigger_jobs "$1" | wc -l)
        [ "$n" -ge "$2" ] && return 0
        sleep 0.1
    done
    echo "trigger $1 started $n jobs, not $2" >&2
    return 1
}

receiver_start() {
    mkdir -p "$WORK/rcv"
    rm -f "$WORK/rcv/port"
    "$RECEIVER" "$WORK/rcv" &
    RPID=$!
    for _ in $(seq 1 50); do
        [ -s "$WORK/rcv/port" ] && break
        sleep 0.05
    done
    RURL="http://127.0.0.1:$(cat "$WORK/rcv/port")"
}

receiver_mode() {
    echo "$1" >"$WORK/rcv/mode"
}

# received [JQ-FILTER]: the receiver's log as JSON lines, filtered.
received() {
    [ -f "$WORK/rcv/requests.ndjson" ] || return 0
    jq -c "${1:-.}" "$WORK/rcv/requests.ndjson"
}

pki_make() {
    PKI="$WORK/pki"
    mkdir -p "$PKI"
    (
        cd "$PKI" || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
            -subj /CN=trainyard-test-ca
        echo "subjectAltName=IP:127.0.0.1" >srv.ext
        echo "keyUsage=digitalSignature" >signing.ext
        for n in srv signing; do
            openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj /CN=$n
            openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
                -out $n.pem -extfile $n.ext
        done
        openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.pem -days 2 \
            -subj /CN=rogue
        cp signing.pem SimpleNotificationService-test.pem
        printf '%s' '<ConfirmSubscriptionResponse><ConfirmSubscriptionResult><SubscriptionArn>arn:aws:sns:eu-west-1:123456789012:uploads:0f1e2d3c</SubscriptionArn></ConfirmSubscriptionResult></ConfirmSubscriptionResponse>' >confirm.xml
    ) >/dev/null 2>&1
}

# Serves $PKI over HTTPS (openssl s_server -WWW); sets SNS_HOST to 127.0.0.1:PORT.
sns_server_start() {
    (cd "$PKI" && exec openssl s_server -accept 127.0.0.1:0 -cert srv.pem -key srv.key -WWW \
        >"$PKI/server.log" 2>&1) &
    SPID=$!
    SNS_HOST=""
    for _ in $(seq 1 100); do
        SNS_HOST=$(grep -o 'ACCEPT 127.0.0.1:[0-9]*' "$PKI/server.log" 2>/dev/null | cut -d' ' -f2)
        [ -n "$SNS_HOST" ] && break
        sleep 0.05
    done
}

SNS_SV=${SNS_SV:-1}
SNS_TOPIC=${SNS_TOPIC:-arn:aws:sns:eu-west-1:123456789012:uploads}
SNS_KEY=${SNS_KEY:-signing}

# sns_message TYPE MESSAGE [SUBJECT]: prints a signed envelope (jq builds the JSON).
# Overrides for bad messages: SNS_TS (Timestamp), SNS_CERT_URL, SNS_SUB_URL, SNS_SV_SENT.
sns_message() {
    local type=$1 msg=$2 subject=${3:-} id ts sts url sig md=sha1 sub
    id=$(cat /proc/sys/kernel/random/uuid)
    ts=${SNS_TS:-$(date -u +%Y-%m-%dT%H:%M:%S.000Z)}
    url=${SNS_CERT_URL:-https://$SNS_HOST/SimpleNotificationService-test.pem}
    sub=${SNS_SUB_URL:-https://$SNS_HOST/confirm.xml}
    [ "$SNS_SV" = 2 ] && md=sha256
    sts=$(mktemp "$WORK/sts.XXXXXX")
    {
        printf 'Message\n%s\nMessageId\n%s\n' "$msg" "$id"
        if [ "$type" = Notification ]; then
            [ -n "$subject" ] && printf 'Subject\n%s\n' "$subject"
            printf 'Timestamp\n%s\nTopicArn\n%s\nType\n%s\n' "$ts" "$SNS_TOPIC" "$type"
        else
            printf 'SubscribeURL\n%s\nTimestamp\n%s\nToken\n%s\nTopicArn\n%s\nType\n%s\n' \
                "$sub" "$ts" "tok-$id" "$SNS_TOPIC" "$type"
        fi
    } >"$sts"
    sig=$(openssl dgst -$md -sign "$PKI/$SNS_KEY.key" "$sts" | base64 -w0)
    jq -n --arg type "$type" --arg id "$id" --arg topic "$SNS_TOPIC" --arg msg "$msg" \
        --arg subject "$subject" --arg ts "$ts" --arg sv "${SNS_SV_SENT:-$SNS_SV}" --arg sig "$sig" \
        --arg url "$url" --arg sub "$sub" --arg tok "tok-$id" '
        {Type: $type, MessageId: $id, TopicArn: $topic, Message: $msg, Timestamp: $ts,
         SignatureVersion: $sv, Signature: $sig, SigningCertURL: $url}
        + (if $type == "Notification" then
             (if $subject != "" then {Subject: $subject} else {} end)
             + {UnsubscribeURL: ($sub + "?unsubscribe")}
           else {SubscribeURL: $sub, Token: $tok} end)'
}

# sns_post TRIGGER FILE: posts an SNS envelope as SNS does (text/plain, type headers).
sns_post() {
    local type topic
    type=$(jq -r .Type "$2" 2>/dev/null || echo Notification)
    topic=$(jq -r .TopicArn "$2" 2>/dev/null || echo "$SNS_TOPIC")
    curl -s -o "$WORK/hook.out" -w '%{http_code}' -X POST \
        -H 'Content-Type: text/plain; charset=UTF-8' -H "x-amz-sns-message-type: $type" \
        -H "x-amz-sns-message-id: $(jq -r .MessageId "$2" 2>/dev/null)" -H "x-amz-sns-topic-arn: $topic" \
        -H 'User-Agent: Amazon Simple Notification Service Agent' \
        --data-binary "@$2" "$URL/v1/hooks/s3/$1"
    printf ' %s\n' "$(cat "$WORK/hook.out")"
}
