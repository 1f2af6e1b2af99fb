#!/usr/bin/env bash
# The anonymous client and the hostile submitter against the daemon's input bounds (issue 17).
# Each check failed on a daemon that read bodies before the token, expanded YAML aliases by node
# count, kept every spec in list pages, passed selectors and query strings to SQLite and
# libmicrohttpd unbounded, decoded %00 into the path and logged raw path bytes: there, uploads
# without a token held the daemon's memory, a 10 KB YAML body became a 2 MB spec, ~500 query
# parameters got no answer, a path's %0a forged a line of the daemon's log. The new limits are
# set through the environment so that an older daemon starts too (and fails the checks).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
TRAINYARD_HEADER_TIMEOUT=2 TRAINYARD_MAX_SPEC=64Ki TRAINYARD_MAX_PAGE_BYTES=24Ki ty_start
hostport=${URL#http://}
host=${hostport%:*}
port=${hostport##*:}
ci=$(api POST /v1/tokens -H 'Content-Type: application/json' -d '{"name":"ci","scope":"submit"}' |
    jq -r .token)
as_ci() { # as_ci METHOD PATH [curl args]: the body, with "STATUS" on the last line
    local m=$1 p=$2
    shift 2
    curl -s -m 5 -w '\n%{http_code}' -X "$m" -H "Authorization: Bearer $ci" "$@" "$URL$p"
}
code() { tail -1 <<<"$1"; }
doc() { sed '$d' <<<"$1"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }

# --- The anonymous client -------------------------------------------------------------------
# Uploads without a token: answered on their headers, their bodies never buffered. 64
# connections each declare 2 MB, send 1 MB and stall.
before=$(rss_kb)
fds=() writers=()
for _ in $(seq 1 64); do
    exec {fd}<>"/dev/tcp/$host/$port"
    fds+=("$fd")
    { printf 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
      printf 'Content-Length: 2097152\r\n\r\n'
      head -c 1048576 /dev/zero | tr '\0' ' '; } >&"$fd" 2>/dev/null &
    writers+=($!)
done
for _ in $(seq 1 100); do
    kill -0 "${writers[@]}" 2>/dev/null || break
    sleep 0.1
done
sleep 0.5
after=$(rss_kb)
first=$(timeout 2 head -c 12 <&"${fds[0]}" 2>/dev/null)
kill "${writers[@]}" 2>/dev/null
wait "${writers[@]}" 2>/dev/null
for fd in "${fds[@]}"; do exec {fd}>&-; done
check_eq "an upload without a token is answered 401 on its headers" "HTTP/1.1 401" "$first"
check "64 stalled 1 MB uploads without a token: RSS +$(((after - before) / 1024)) MB (< 24 MB)" \
    test $((after - before)) -lt $((24 * 1024))

# Slow headers: a client that sends a byte every half second is cut at the header deadline
# (2 s here), not kept for as long as it keeps sending.
t0=$(date +%s%N)
(
    exec 7<>"/dev/tcp/$host/$port"
    for _ in $(seq 1 16); do printf 'X' >&7 2>/dev/null || break; sleep 0.5; done
    timeout 10 cat <&7 >/dev/null 2>&1
)
ms=$((($(date +%s%N) - t0) / 1000000))
check "a client trickling its headers is cut at the header deadline (${ms} ms)" test "$ms" -lt 5000

# A hook delivery with a wrong secret stores nothing; it is counted in /metrics.
api POST /v1/templates -H 'Content-Type: application/json' \
    -d '{"name":"quiet","spec":{"name":"quiet","command":["true"]}}' >/dev/null
trig=$(make_trigger '{"name":"t-in","template":"quiet","sender":"s3","auth":{"mode":"hmac"}}' |
    jq -r .id)
got=$(hook_hmac "$trig" whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw "$FIX/s3-put.json" | cut -d' ' -f1)
check_eq "a delivery with a wrong secret: 401, and no delivery row" "401 0" \
    "$got $(api GET "/v1/triggers/t-in/deliveries" | jq '.items | length')"
check_eq "... counted in /metrics" 1 "$(api GET /metrics | awk \
    '$1 == "trainyard_http_unauthenticated_total{operation=\"hooks_s3\",code=\"401\"}" {print $2}')"

# A hook path with %0a cannot write a line of its own into the daemon's log.
forged='2026-01-01T00:00:00.000000Z%20error%20FORGED-BY-A-CLIENT'
curl -s -o /dev/null -X POST -d '{}' "$URL/v1/hooks/s3/nosuch%0a$forged"
curl -s -o /dev/null -X POST -d '{}' "$URL/v1/hooks/s3/nosuch%0d%0a$forged"
sleep 0.2
check "no forged line in the daemon's log" sh -c "! grep -q '^2026-01-01T00:00:00.000000Z error FORGED' '$WORK/daemon.err'"

# %00 ends nothing: the path as sent is refused, not served as a shorter one.
id=$(as_ci POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"keep","command":["sleep","30"]}' |
    sed '$d' | jq -r .id)
check_eq "GET /v1/jobs/ID%00/anything is refused" 400 "$(status GET "/v1/jobs/$id%00/anything")"
got=$(status POST "/v1/jobs/$id%00/cancel")
check_eq "POST /v1/jobs/ID%00/cancel is refused, the job not cancelled" "400 false" \
    "$got $(api GET "/v1/jobs/$id" | jq '.state == "cancelled" or .state == "cancelling"')"
api POST "/v1/jobs/$id/cancel" >/dev/null

# ~500 query parameters: an answer at once, naming the limit (it was no answer at all).
q=$(for i in $(seq 1 500); do printf 'p%d=%d&' "$i" "$i"; done)
r=$(curl -s -m 5 -w '\n%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?$q")
check_eq "500 query parameters: 400" 400 "$(code "$r")"
check_eq "... naming max-query-params" max-query-params "$(doc "$r" | jq -r .limit)"
q=$(for _ in $(seq 1 5000); do printf 'a&'; done)
check_eq "5,000 short parameters: 400 too" 400 "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/healthz?$q")"

# Two Content-Length headers that differ (how a request is smuggled past a proxy).
body='{"name":"smuggled","command":["true"]}'
exec 8<>"/dev/tcp/$host/$port"
printf 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nContent-Length: 5\r\nConnection: close\r\n\r\n%s' "$ci" "${#body}" "$body" >&8
line=$(timeout 3 head -1 <&8 | tr -d '\r')
exec 8>&-
check_eq "two Content-Length headers that differ: 400" "HTTP/1.1 400 Bad Request" "$line"
check_eq "... and no job" 0 "$(api GET '/v1/jobs?name=smuggled' | jq '.items | length')"

# --- The hostile submitter ------------------------------------------------------------------
check_eq "a body in UTF-16 is refused, not read as UTF-8" 415 "$(code "$(as_ci POST /v1/jobs \
    -H 'Content-Type: application/json; charset=utf-16' -d '{"name":"u16","command":["true"]}')")"

# YAML aliases count the bytes they expand to: 10 KB of YAML, 2 MB expanded, over --max-body.
big=$(head -c 10000 /dev/zero | tr '\0' x)
{
    printf 'name: bomb\ncommand: ["true"]\nenv:\n  V0: &big "%s"\n' "$big"
    for i in $(seq 1 200); do printf '  V%d: *big\n' "$i"; done
} >"$WORK/bomb.yaml"
r=$(as_ci POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary "@$WORK/bomb.yaml")
check_eq "a YAML alias bomb: 413" 413 "$(code "$r")"
check_eq "... naming max-body" max-body "$(doc "$r" | jq -r .limit)"
check_eq "... and nothing stored" 0 "$(api GET '/v1/jobs?name=bomb' | jq '.items | length')"
# ... and the depth of what they expand to: 20 levels anchored, aliased 20 levels down.
deep=$(for i in $(seq 1 20); do printf '{a: '; done; printf 1; for _ in $(seq 1 20); do printf '}'; done)
r=$(as_ci POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary \
    "$(printf 'name: deep\ncommand: ["true"]\nd: &d %s\nx: %s*d%s\n' "$deep" \
        "$(for _ in $(seq 1 18); do printf '{a: '; done)" "$(for _ in $(seq 1 18); do printf '}'; done)")")
check_eq "aliases nesting past --max-json-depth: 400" 400 "$(code "$r")"
check_eq "... naming max-json-depth" max-json-depth "$(doc "$r" | jq -r .limit)"

# The worker token every rank holds cannot do it through the heartbeat route either.
w=$(job w 'echo "$TRAINYARD_TOKEN" > $TRAINYARD_CHECKPOINT_DIR/tok; sleep 30')
for _ in $(seq 1 100); do [ -s "$(ckpt "$w")/tok" ] && break; sleep 0.1; done
wtok=$(cat "$(ckpt "$w")/tok" 2>/dev/null)
{
    printf 'x: &big "%s"\nmetrics:\n' "$big"
    for i in $(seq 1 200); do printf '  - {name: m%d, value: 1, note: *big}\n' "$i"; done
} >"$WORK/hb.yaml"
r=$(curl -s -m 5 -w '\n%{http_code}' -X POST -H "Authorization: Bearer $wtok" \
    -H 'Content-Type: application/yaml' --data-binary "@$WORK/hb.yaml" "$URL/v1/jobs/$w/ranks/0/heartbeat")
check_eq "a heartbeat YAML bomb with the worker token: 413" 413 "$(code "$r")"
check_eq "... naming max-body" max-body "$(doc "$r" | jq -r .limit)"
api POST "/v1/jobs/$w/cancel" >/dev/null

# A stored spec is at most --max-spec (64 KiB here): 100 KB of env is refused, naming it.
env=$(jq -cn --arg v "$(head -c 50000 /dev/zero | tr '\0' y)" '{A: $v, B: $v}')
r=$(as_ci POST /v1/jobs -H 'Content-Type: application/json' -d "{\"name\":\"fat\",\"command\":[\"true\"],\"env\":$env}")
check_eq "a spec over --max-spec: 413" 413 "$(code "$r")"
check_eq "... naming max-spec" max-spec "$(doc "$r" | jq -r .limit)"

# List pages: items carry the job's size, not its spec, unless asked; a page ends at
# --max-page-bytes (24 KiB here) with a cursor.
env=$(jq -cn --arg v "$(head -c 8000 /dev/zero | tr '\0' z)" '{A: $v}')
for i in 1 2 3 4 5 6; do
    as_ci POST /v1/jobs -H 'Content-Type: application/json' \
        -d "{\"name\":\"page\",\"command\":[\"true\"],\"nodes\":1,\"procs_per_node\":2,\"env\":$env}" >/dev/null
done
page=$(api GET '/v1/jobs?name=page')
check_eq "list items carry no spec" 0 "$(jq '[.items[] | select(has("spec"))] | length' <<<"$page")"
check_eq "... but the job's size" "6 2" "$(jq -r '[.items | length, .[0].spec_size.procs_per_node] | join(" ")' <<<"$page")"
full=$(api GET '/v1/jobs?name=page&include=spec&limit=10')
n1=$(jq '.items | length' <<<"$full")
cursor=$(jq -r .next_cursor <<<"$full")
n2=$(api GET "/v1/jobs?name=page&include=spec&limit=10&cursor=$cursor" | jq '.items | length')
check_eq "include=spec: a page ends early at --max-page-bytes, its cursor leads to the rest" \
    "true 6 8000" "$([ "$n1" -lt 6 ] && echo true || echo false) $((n1 + ${n2:-0})) $(jq '.items[0].spec.env.A | length' <<<"$full")"

# A selector of 1,000 terms: a 400 naming the limit (it was a 500 from SQLite).
sel=$(for _ in $(seq 1 1000); do printf 'a=b,'; done)
r=$(curl -s -m 5 -w '\n%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?selector=${sel%,}")
check_eq "a selector of 1,000 terms: 400" 400 "$(code "$r")"
check_eq "... naming max-selector-terms" max-selector-terms "$(doc "$r" | jq -r .limit)"
ty_done
