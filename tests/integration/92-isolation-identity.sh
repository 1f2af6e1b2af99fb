#!/usr/bin/env bash
# A hostile submitter and a careless setup against identity, templates and node marks (issue
# 17). Each check failed on the daemon before this work:
#   - an S3 object key ran as shell code through a template that hid its shell (env sh -c, ...);
#   - a submit job printing a fake "NVRM: Xid 79" line marked the node for every later job;
#   - a new token given a revoked token's name could cancel the old token's jobs;
#   - a token could be made already expired; resources.memory took -0.0 and 1e300;
#   - every read token saw a job's secret env values;
#   - webhook URLs could point at loopback, link-local and metadata addresses;
#   - the raw log file of a rank grew without bound whatever --log-max-bytes said;
#   - a new secret in --admin-token-file made the daemon refuse to start.
# Run against an older build (TY_BUILD=...) it reports each of these as a failure.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
in_out() { grep -qE -- "$2" <<<"$1"; }
not_in() { ! grep -qE -- "$2" <<<"$1"; }
json() { api "$@" -H 'Content-Type: application/json'; }
token() { json POST /v1/tokens -d "{\"name\": \"$1\", \"scope\": \"$2\"}" | jq -r .token; }
as() { # as TOKEN METHOD PATH [curl args]: the body
    local t=$1 method=$2 path=$3
    shift 3
    curl -s -X "$method" -H "Authorization: Bearer $t" -H 'Content-Type: application/json' "$@" \
        "$URL$path"
}
code_as() { # code_as TOKEN METHOD PATH [curl args]: the status
    local t=$1 method=$2 path=$3
    shift 3
    curl -s -o /dev/null -w '%{http_code}' -X "$method" -H "Authorization: Bearer $t" \
        -H 'Content-Type: application/json' "$@" "$URL$path"
}
logs() { api GET "/v1/jobs/$1/logs?format=ndjson&limit=10000" | jq -r .line; }
supports() { "$TRAINYARD" serve --help 2>&1 | grep -q -- "$1"; }
allocated() { [ -e "$1" ] && echo $(($(stat -c %b "$1") * $(stat -c %B "$1"))) || echo 0; }

ADMIN_FILE="$WORK/admin.token"
echo ty_identityadmintoken0123456789abcde >"$ADMIN_FILE"
chmod 600 "$ADMIN_FILE"
TOKEN=$(cat "$ADMIN_FILE")
receiver_start
ty_start --admin-token-file "$ADMIN_FILE" --local-sandbox off --log-max-bytes 2Mi

# --- Templates never build shell text -----------------------------------------------------
# Each command hides its shell from a guard that looked at the command's first word. Refused at
# save time now; an older daemon saved them, and an object named `x;echo PWNED;#` ran the echo.
trigger() { # trigger NAME TEMPLATE: makes an S3 trigger; sets TID and TSECRET
    local t
    t=$(make_trigger "{\"name\": \"$1\", \"template\": \"$2\", \"sender\": \"s3\",
        \"rule\": {\"bucket\": \"datasets\"}, \"auth\": {\"mode\": \"hmac\"}}")
    TID=$(echo "$t" | jq -r .id)
    TSECRET=$(echo "$t" | jq -r '.secrets[0]')
}
deliver() { # deliver KEY: an upload of an object named KEY, to the trigger TID
    jq --arg k "$(jq -rn --arg k "$1" '$k | @uri')" --arg s "$RANDOM$RANDOM" \
        '.Records[0].s3.object.key = $k | .Records[0].s3.object.sequencer = $s' \
        "$FIX/s3-put.json" >"$WORK/evil.json"
    hook_hmac "$TID" "$TSECRET" "$WORK/evil.json" >/dev/null
}
n=0
for cmd in '["env", "sh", "-c", "echo ${S3_KEY}"]' \
    '["bash", "--noprofile", "-c", "echo ${S3_KEY}"]' \
    '["timeout", "100", "sh", "-c", "echo ${S3_KEY}"]' \
    '["busybox", "sh", "-c", "echo ${S3_KEY}"]' \
    '["python3", "-c", "import os; os.system(\"echo ${S3_KEY}\")"]' \
    '["perl", "-E", "system(\"echo ${S3_KEY}\")"]'; do
    n=$((n + 1))
    out=$(json POST /v1/templates -d "{\"name\": \"bypass$n\", \"spec\": {\"name\": \"bypass-$n\",
        \"command\": $cmd}}" -w ' %{http_code}')
    if [ "${out##* }" = 201 ]; then # saved: show what it does with a hostile key
        trigger "t-bypass$n" "bypass$n"
        deliver 'x;echo PWNED;#'
        wait_jobs "t-bypass$n" 1 20 2>/dev/null
        job=$(trigger_jobs "t-bypass$n" | head -1)
        wait_state "$job" succeeded 20 >/dev/null 2>&1
        check "no template reaches a shell: $cmd" not_in "$(logs "$job")" '^PWNED$'
    else
        check_eq "no template reaches a shell: $cmd" "422 /spec/command" \
            "${out##* } $(echo "${out% *}" | jq -r '.errors[0].pointer' | sed 's|/[0-9]*$||')"
    fi
done
# The way that works: the key as a whole argument after a fixed script, and in env. Keys made
# of shell syntax, quotes, a newline and a path reach the rank byte for byte, never as code.
json POST /v1/templates -d '{"name": "whole", "spec": {"name": "whole-${S3_BUCKET}",
  "command": ["sh", "-c", "printf \"arg=[%s]\\n\" \"$1\"; printf \"env=[%s]\\n\" \"$KEY\"", "sh", "${S3_KEY}"],
  "env": {"KEY": "${S3_KEY}"}}}' >/dev/null
trigger t-whole whole
keys=('x;echo PWNED;#' '$(echo PWNED)' '`echo PWNED`' "a\"b'c d" $'line1\necho PWNED' '../../etc/passwd')
for k in "${keys[@]}"; do deliver "$k"; done
check "every hostile key started a job" wait_jobs t-whole ${#keys[@]} 30
for j in $(trigger_jobs t-whole); do wait_state "$j" succeeded 30 >/dev/null 2>&1; done
all=$(for j in $(trigger_jobs t-whole); do logs "$j"; done)
for k in "${keys[@]}"; do
    shown="$k]"
    [[ $k == *$'\n'* ]] && shown=${k%%$'\n'*} # a log line ends at the newline
    check "key reaches argv whole: $k" grep -qxF -- "arg=[$shown" <<<"$all"
    check "key reaches env whole: $k" grep -qxF -- "env=[$shown" <<<"$all"
done
check "no key ran as code" not_in "$all" '^PWNED$'

# --- Node marks are an admin's or a sensor's -----------------------------------------------
XID='[812345.678901] NVRM: Xid (PCI:0000:53:00): 79, pid=4242, name=python3, GPU has fallen off the bus.'
CI=$(token ci submit)
OTHER=$(token other-team submit)
fake_xid() { as "$1" POST /v1/jobs -d "{\"name\": \"$2\", \"command\": [\"sh\", \"-c\", \"echo '$XID' >&2; exit 1\"]}" | jq -r .id; }
a=$(fake_xid "$CI" xid-a)
check "a fake Xid fails its job" wait_state "$a" failed 30
check_eq "its diagnosis blames the node for itself" node_failure "$(api GET "/v1/jobs/$a/diagnosis" | jq -r .decision.category)"
b=$(fake_xid "$CI" xid-b)
wait_state "$b" failed 30 >/dev/null 2>&1
check_eq "one submitter's jobs do not mark the node" 404 "$(status GET /v1/nodes/localhost/mark)"
later=$(json POST /v1/jobs -d '{"name": "later", "command": ["sleep", "30"]}' | jq -r .id)
check "a later job runs" wait_state "$later" running 30
h=$(api GET "/v1/jobs/$later/health")
check_eq "a later job on the node is healthy" ok "$(echo "$h" | jq -r .status)"
check_eq "and sees no mark" null "$(echo "$h" | jq -r .nodes.localhost.mark)"
api POST "/v1/jobs/$later/cancel" >/dev/null
c=$(fake_xid "$OTHER" xid-c)
wait_state "$c" failed 30 >/dev/null 2>&1
m=$(api GET /v1/nodes/localhost/mark)
check_eq "jobs of two owners mark it" "suspect GPUXidError evidence" \
    "$(echo "$m" | jq -r '"\(.state) \(.reason) \(.source)"')"
check "the mark names the jobs" in_out "$(echo "$m" | jq -r .message)" "$a.*$c|$c.*$a"
api DELETE /v1/nodes/localhost/mark >/dev/null

# --- Ownership by token id --------------------------------------------------------------------
ALICE=$(token alice submit)
long=$(as "$ALICE" POST /v1/jobs -H 'Idempotency-Key: k1' -d '{"name": "long", "command": ["sleep", "300"]}' | jq -r .id)
api DELETE /v1/tokens/alice >/dev/null
ALICE2=$(token alice submit)
check_eq "a new token with a revoked token's name cannot cancel its jobs" 403 \
    "$(code_as "$ALICE2" POST "/v1/jobs/$long/cancel")"
check_eq "nor replay its idempotency keys" false "$(as "$ALICE2" POST /v1/jobs -H 'Idempotency-Key: k1' \
    -d '{"name": "long", "command": ["sleep", "300"]}' | jq -r --arg l "$long" '.id == $l')"
check_eq "the owner is still shown by name" alice "$(api GET "/v1/jobs/$long" | jq -r .owner)"
check_eq "an admin cancels it" 202 "$(status POST "/v1/jobs/$long/cancel")"

# --- Small validation gaps ----------------------------------------------------------------------
check_eq "a token that expired before it was made" "422 /expires_at" \
    "$(json POST /v1/tokens -d '{"name": "late", "scope": "read", "expires_at": "2001-01-01T00:00:00Z"}' |
        jq -r '"\(.status) \(.errors[0].pointer)"')"
for mem in -0.0 1e300; do
    check_eq "resources.memory $mem" "422 /resources/memory" \
        "$(json POST '/v1/jobs?dry_run=true' -d "{\"name\": \"m\", \"command\": [\"true\"], \"resources\": {\"memory\": $mem}}" |
            jq -r '"\(.status) \(.errors[0].pointer)"')"
done

# --- Secret env values ----------------------------------------------------------------------------
READER=$(token reader read)
sec=$(as "$CI" POST /v1/jobs -d '{"name": "sec", "command": ["true"],
  "env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz", "DB": "postgres://u:hunter2@db/x", "LR": "3e-4"}}' | jq -r .id)
seen() { as "$1" GET "/v1/jobs/$sec" | jq -r '"\(.spec.env.HF_TOKEN) \(.spec.env.DB) \(.spec.env.LR)"'; }
check_eq "a read token sees secret env values redacted" "<redacted> <redacted> 3e-4" "$(seen "$READER")"
check_eq "another submitter too" "<redacted> <redacted> 3e-4" "$(seen "$OTHER")"
check "nor in the list" not_in "$(as "$READER" GET '/v1/jobs?limit=100')" 'hf_abcdef|hunter2'
check_eq "the submitter sees them" "hf_abcdefghijklmnopqrstuvwxyz postgres://u:hunter2@db/x 3e-4" "$(seen "$CI")"
check_eq "an admin sees them" "hf_abcdefghijklmnopqrstuvwxyz postgres://u:hunter2@db/x 3e-4" "$(seen "$TOKEN")"

# --- Raw rank logs stay within --log-max-bytes -------------------------------------------------------
# A rank writing 300 MB as fast as it can: the file between the shim and the store must not hold
# more than its budget on disk at any time (the job's 2 MiB, but at least 8 MiB a rank: two of
# the collector's reads), nor keep what was stored.
line=$(printf 'y%.0s' $(seq 1 100))
flood=$(json POST /v1/jobs -d "{\"name\": \"flood\", \"command\": [\"sh\", \"-c\", \"yes $line | head -c 300000000\"]}" | jq -r .id)
raw="$DATA/jobs/$flood/a0/r0/log"
peak=0
for _ in $(seq 1 600); do
    s=$(allocated "$raw")
    [ "$s" -gt "$peak" ] && peak=$s
    [ "$(api GET "/v1/jobs/$flood" | jq -r .state)" = succeeded ] && break
    sleep 0.1
done
check "the raw log never held more than the limit on disk (peak $peak bytes)" \
    test "$peak" -le $((8 * 1024 * 1024 + 256 * 1024))
freed() { [ "$(allocated "$raw")" -le 65536 ]; }
eventually "what was stored is freed from the raw log" 20 freed
check "lines dropped at the limit are counted in a marker line" test \
    "$(api GET "/v1/jobs/$flood/logs/search?q=%22lines+lost%22+%22log-max-bytes%22&limit=1" | jq '.matches | length')" -ge 1

# --- Webhook destinations ---------------------------------------------------------------------------
for u in http://169.254.169.254/latest/meta-data/ http://127.0.0.1:9/x 'http://[::1]/x' \
    'http://[::ffff:169.254.169.254]/x' http://localhost/x http://0.0.0.0/x; do
    check_eq "webhook to $u refused" "422 /url" \
        "$(json POST /v1/webhooks -d "{\"url\": \"$u\"}" | jq -r '"\(.status) \(.errors[0].pointer)"')"
done
# A URL that passed the check when saved but now resolves to loopback (DNS rebinding) is refused
# where the connection goes: saved with --webhook-allow-local, sent without it.
if supports webhook-allow-local; then
    ty_graceful_restart --admin-token-file "$ADMIN_FILE" --local-sandbox off --webhook-allow-local
    wh=$(json POST /v1/webhooks -d "{\"url\": \"$RURL/rebound\", \"events\": [\"job.failed\"]}" | jq -r .id)
    ty_graceful_restart --admin-token-file "$ADMIN_FILE" --local-sandbox off
    json POST "/v1/webhooks/$wh/test" >/dev/null
    eventually "the send is refused at the connection" 15 sh -c \
        "curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/webhooks/$wh/deliveries' | grep -q 'refused to connect to 127.0.0.1'"
    check_eq "the receiver got nothing" 0 "$(received 'select(.path == "/rebound")' | wc -l)"
else
    check "the sender checks the address it connects to (no --webhook-allow-local here)" false
fi

# --- Rotating the admin token file ------------------------------------------------------------------
ty_stop
OLD=$TOKEN
echo ty_identityrotatedtoken0123456789abcd >"$ADMIN_FILE"
TOKEN=$(cat "$ADMIN_FILE")
PORT=${URL##*:}
: >"$WORK/daemon.out"
"$TRAINYARD" serve --listen "127.0.0.1:$PORT" --data-dir "$DATA" --local-slots 8 \
    --admin-token-file "$ADMIN_FILE" --local-sandbox off >"$WORK/daemon.out" 2>>"$WORK/daemon.err" &
PID=$!
for _ in $(seq 1 200); do
    curl -sf "$URL/readyz" >/dev/null 2>&1 && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
done
check "the daemon starts with a rotated --admin-token-file" curl -sf "$URL/readyz"
check_eq "the new admin token works" 200 "$(status GET /v1/tokens)"
check_eq "the old one does not" 401 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $OLD" "$URL/v1/tokens")"
ty_done
