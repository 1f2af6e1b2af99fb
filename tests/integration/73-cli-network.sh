#!/usr/bin/env bash
# The CLI survives network trouble and finds its settings: it waits for a daemon that comes up
# a few seconds late, gives up with exit 7 after --retry-for, retries a submission whose answer
# was lost (the first attempt reached the daemon) without creating a second job, honours 429 +
# Retry-After, verifies TLS with --cacert, and takes URL and token from flag > environment >
# config file.
source "$(dirname "$0")/lib.sh"
command -v socat >/dev/null || { echo "socat is missing (make test-deps installs it)" >&2; exit 1; }
export XDG_CONFIG_HOME=$WORK/xdg HOME=$WORK
unset TRAINYARD_CONFIG TRAINYARD_OUTPUT TRAINYARD_CACERT TRAINYARD_RETRY_FOR TRAINYARD_URL TRAINYARD_TOKEN
ty() { "$TRAINYARD" "$@"; }
ty_start
export TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 20000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
}

# The daemon is down when the CLI starts and comes up two seconds later.
ty_kill9
ty jobs --retry-for 30s >"$WORK/late.out" 2>"$WORK/late.err" &
c1=$!
echo '{"name":"late-submit","command":["true"]}' >"$WORK/late.json"
ty submit "$WORK/late.json" --retry-for 30s >"$WORK/late-id" 2>/dev/null &
c2=$!
sleep 2
ty_restart
wait $c1
check_eq "jobs waited for the daemon: exit 0" 0 $?
check "it said it was retrying" grep -q "retrying in" "$WORK/late.err"
check "and printed the table" grep -q "^ID  *NAME" "$WORK/late.out"
wait $c2
check_eq "submit waited for the daemon: exit 0" 0 $?
check_eq "one job from the retried submission" 1 "$(api GET '/v1/jobs?name=late-submit' | jq '.items | length')"
check_eq "the id printed is that job's" "$(api GET '/v1/jobs?name=late-submit' | jq -r '.items[0].id')" "$(cat "$WORK/late-id")"

# Nobody answers: exit 7 after about --retry-for, one JSON document with -o json.
dead=$(free_port)
t0=$(date +%s%N)
ty --url "http://127.0.0.1:$dead" --retry-for 2s jobs -o json >"$WORK/dead.json" 2>"$WORK/dead.err"
check_eq "no daemon: exit 7" 7 $?
ms=$((($(date +%s%N) - t0) / 1000000))
check "gave up after about 2 s ($ms ms)" test "$ms" -ge 1000 -a "$ms" -lt 6000
check "lost connection said once" grep -q "lost connection to http://127.0.0.1:$dead" "$WORK/dead.err"
check "json: a lost-connection document" jq -e '.exit_status == 7 and .type == "urn:trainyard:cli:lost-connection"' "$WORK/dead.json"

# The answer to a submission is lost after the daemon stored the job: socat forwards the first
# connection one way only (the request reaches the daemon, the answer never comes back), then a
# normal proxy takes over. The CLI retries with the same Idempotency-Key: still one job.
port=${URL##*:}
proxy=$(free_port)
socat -T1 -u "TCP-LISTEN:$proxy,reuseaddr" "TCP:127.0.0.1:$port" &
s1=$!
echo '{"name":"lost-answer","command":["true"]}' >"$WORK/lost.json"
ty --url "http://127.0.0.1:$proxy" --retry-for 30s submit "$WORK/lost.json" >"$WORK/lost.id" 2>"$WORK/lost.err" &
c3=$!
wait $s1
check_eq "the first attempt reached the daemon" 1 "$(api GET '/v1/jobs?name=lost-answer' | jq '.items | length')"
socat "TCP-LISTEN:$proxy,reuseaddr,fork" "TCP:127.0.0.1:$port" &
s2=$!
wait $c3
check_eq "the retried submission: exit 0" 0 $?
kill $s2 2>/dev/null
wait $s2 2>/dev/null
check_eq "still one job" 1 "$(api GET '/v1/jobs?name=lost-answer' | jq '.items | length')"
check_eq "the id printed is the first attempt's job" "$(api GET '/v1/jobs?name=lost-answer' | jq -r '.items[0].id')" "$(cat "$WORK/lost.id")"
check "the CLI said the daemon already had it" grep -q "already had this submission" "$WORK/lost.err"

# 429 with Retry-After: the CLI waits as told and succeeds.
ty_kill9
ty_restart --rate 1 --rate-burst 1
t0=$(date +%s%N)
ok=0
for _ in 1 2 3 4; do ty jobs >/dev/null 2>>"$WORK/rate.err" && ok=$((ok + 1)); done
ms=$((($(date +%s%N) - t0) / 1000000))
check_eq "every rate-limited call succeeded" 4 "$ok"
check "it was told 429" grep -q "HTTP 429" "$WORK/rate.err"
check "and waited ($ms ms)" test "$ms" -ge 900
ty_kill9

# TLS: verified with --cacert (or TRAINYARD_CACERT); an unknown CA fails at once, exit 7.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
# lib.sh waits with plain curl, so this daemon is started here and checked with its CA.
TRAINYARD_ADMIN_TOKEN=$TOKEN "$TRAINYARD" serve --listen 127.0.0.1:0 --data-dir "$WORK/tls-data" \
    --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" >"$WORK/tls.out" 2>"$WORK/tls-daemon.err" &
tls_pid=$!
for _ in $(seq 1 100); do
    TLS_URL=$(grep -o "https://[0-9.:]*" "$WORK/tls.out" | head -1)
    [ -n "$TLS_URL" ] && curl -sf --cacert "$WORK/cert.pem" "$TLS_URL/readyz" >/dev/null && break
    sleep 0.1
done
check "daemon serves https" grep -q "^https://" <<<"$TLS_URL"
check "--cacert: verified" ty --url "$TLS_URL" --cacert "$WORK/cert.pem" jobs
check "TRAINYARD_CACERT: verified" env TRAINYARD_CACERT="$WORK/cert.pem" "$TRAINYARD" --url "$TLS_URL" jobs
t0=$(date +%s%N)
ty --url "$TLS_URL" --retry-for 30s jobs >/dev/null 2>"$WORK/tls.err"
check_eq "untrusted certificate: exit 7" 7 $?
check "fails at once, no retries" test $((($(date +%s%N) - t0) / 1000000)) -lt 3000
check "says why" grep -qi "certificate" "$WORK/tls.err"
kill $tls_pid
wait $tls_pid 2>/dev/null
ty_restart --rate 0

# Settings: config file, then environment, then flags win.
unset TRAINYARD_URL TRAINYARD_TOKEN
mkdir -p "$WORK/xdg/trainyard"
printf 'url: "%s"\ntoken: "%s"\n' "$URL" "$TOKEN" >"$WORK/xdg/trainyard/config.yaml"
chmod 600 "$WORK/xdg/trainyard/config.yaml"
ty jobs >/dev/null 2>"$WORK/cfg.err"
check_eq "url and token from the config file" 0 $?
check "no warning for a private config file" test ! -s "$WORK/cfg.err"
chmod 644 "$WORK/xdg/trainyard/config.yaml"
ty jobs 2>&1 >/dev/null | grep -q "chmod 600"
check_eq "warning for a token others can read" 0 $?
chmod 600 "$WORK/xdg/trainyard/config.yaml"
ty --token wrong-token jobs >/dev/null 2>"$WORK/e"
check_eq "a flag wins over the config file (bad token: exit 8)" 8 $?
check "401 shown as the API says" grep -q "HTTP 401" "$WORK/e"
TRAINYARD_TOKEN=wrong-token ty jobs >/dev/null 2>&1
check_eq "the environment wins over the config file" 8 $?
printf 'url: "%s"\ntoken: wrong\n' "$URL" >"$WORK/other.yaml"
chmod 600 "$WORK/other.yaml"
TRAINYARD_TOKEN=$TOKEN ty --config "$WORK/other.yaml" jobs >/dev/null 2>&1
check_eq "--config file, token from the environment" 0 $?
ty --config "$WORK/missing.yaml" jobs >/dev/null 2>&1
check_eq "a named config file that is missing: exit 2" 2 $?
printf 'url: x\ncolour: red\n' >"$WORK/bad.yaml"
ty --config "$WORK/bad.yaml" jobs 2>&1 >/dev/null | grep -q "unknown setting 'colour'"
check_eq "unknown config setting: named" 0 $?
TRAINYARD_URL=${URL#http://} ty jobs >/dev/null 2>&1
check_eq "a URL without a scheme means http" 0 $?
ty -o yaml jobs >/dev/null 2>&1
check_eq "--output other than text/json: exit 2" 2 $?
ty_done
