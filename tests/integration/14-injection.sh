#!/usr/bin/env bash
# Injection: text that would break YAML, JSON, shell, SQL, HTML or Kubernetes manifests is
# either rejected where it would be dangerous (job names, label keys and values, token names)
# or carried as data byte for byte (env values, arguments, annotations, paths, idempotency keys,
# log lines, query parameters), and served back with a Content-Type that says what it is and
# X-Content-Type-Options: nosniff.
source "$(dirname "$0")/lib.sh"
ty_start

# One string per target language; each must reach a rank unchanged as an env value and as an
# argument, and come back unchanged from the API.
PAYLOADS=(
    "'; DROP TABLE jobs; --"
    "\" OR \"1\"=\"1\" /* x */"
    "--- &a *a !!python/object/apply:os.system [id] {x: y} # not a comment"
    $'first\nsecond\r\n\ttab \x01\x02\x1b[31m\x7f end \\u0000 \\"'
    '$(id) `id` ; && || | > /tmp/pwned * ~ $HOME \ '"'"
    '<script>alert(1)</script><img src=x onerror=alert(1)>&amp;&lt;'
    $'\u2028\u2029 é 漢字 \U0001F600 %s%n%x %00 \\x00'
)
hex() { printf %s "$1" | od -An -v -tx1 | tr -d ' \n'; }
post_as() { # TYPE curl-args: posts a spec, prints the status, leaves the body in $WORK/body
    local type=$1
    shift
    curl -s -o "$WORK/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
        -H "Content-Type: $type" "$@" "$URL/v1/jobs"
}
post_json() { post_as application/json "$@"; }
post_yaml() { post_as application/yaml --data-binary "$@"; }

# --- shell and JSON: every payload as env value and as argument reaches the rank unchanged.
# The rank prints each as hex so that the comparison is on bytes, not on log rendering.
DUMP='printf %s "$V" | od -An -v -tx1 | tr -d " \n"; echo; for a; do printf %s "$a" | od -An -v -tx1 | tr -d " \n"; echo; done'
args='[]'
for p in "${PAYLOADS[@]}"; do args=$(jq -c --arg p "$p" '. + [$p]' <<<"$args"); done
spec=$(jq -n --arg dump "$DUMP" --arg v "${PAYLOADS[0]}" --argjson args "$args" \
    '{name: "inj-args", command: ["sh", "-c", $dump, "sh"], args: $args, env: {V: $v}}')
check_eq "payloads accepted as env and args" 201 "$(post_json -d "$spec")"
id=$(jq -r .id "$WORK/body")
stored=$(api GET "/v1/jobs/$id")
for i in "${!PAYLOADS[@]}"; do
    check_eq "arg $i stored and returned exactly" "$(hex "${PAYLOADS[$i]}")" \
        "$(jq -j ".spec.args[$i]" <<<"$stored" | od -An -v -tx1 | tr -d ' \n')"
done
check "payload job succeeds" wait_state "$id" succeeded
check "its logs are complete" wait_logs_complete "$id"
lines=$(api GET "/v1/jobs/$id/logs?format=ndjson" | jq -r .line)
check_eq "env value reached the rank byte for byte" "$(hex "${PAYLOADS[0]}")" "$(sed -n 1p <<<"$lines")"
for i in "${!PAYLOADS[@]}"; do
    check_eq "argument $i reached the rank byte for byte" "$(hex "${PAYLOADS[$i]}")" \
        "$(sed -n "$((i + 2))p" <<<"$lines")"
done
check "no file was created by the shell payload" test ! -e /tmp/pwned
for i in "${!PAYLOADS[@]}"; do
    spec=$(jq -n --arg v "${PAYLOADS[$i]}" '{name: "inj-env", command: ["sh", "-c", "printf %s \"$V\" | od -An -v -tx1 | tr -d \" \\n\""], env: {V: $v}}')
    post_json -d "$spec" >/dev/null
    ids[$i]=$(jq -r .id "$WORK/body")
done
for i in "${!PAYLOADS[@]}"; do
    wait_state "${ids[$i]}" succeeded >/dev/null && wait_logs_complete "${ids[$i]}"
    check_eq "env payload $i reached the rank byte for byte" "$(hex "${PAYLOADS[$i]}")" \
        "$(api GET "/v1/jobs/${ids[$i]}/logs?format=ndjson" | jq -r .line)"
done

# --- JSON: control characters, escapes and lone surrogates.
check_eq "NUL in an env value is rejected" 422 "$(post_json -d '{"name":"x","command":["true"],"env":{"A":"a\u0000b"}}')"
check_eq "lone surrogate is bad JSON" 400 "$(post_json -d '{"name":"x","command":["true"],"env":{"A":"\ud800"}}')"
check_eq "raw control character in a string is bad JSON" 400 "$(post_json -d $'{"name":"x","command":["true"],"env":{"A":"a\x01b"}}')"
check_eq "escaped control characters are carried" 201 "$(post_json -d '{"name":"ctl","command":["true"],"env":{"A":"\u0001\u001f\u007f\"\\\/"}}')"
check_eq "control characters come back escaped, same value" '"\u0001\u001f\u007f\"\\/"' \
    "$(api GET "/v1/jobs/$(jq -r .id "$WORK/body")" | jq -c .spec.env.A)"

# --- YAML: document separators, anchors, aliases and tags are structure only where YAML says
# so; quoted they are strings. Two documents and executable tags are refused.
yaml=$'name: yaml-inj\ncommand: ["true"]\nenv:\n  A: "--- !!python/object/apply:os.system [id]"\n  B: \'&anchor *alias\'\n  C: "key: value # not a comment"\n  D: &v "shared"\n  E: *v\n  F: "...\\n---\\n"\n'
check_eq "YAML with special characters in quoted values" 201 "$(post_yaml "$yaml")"
check_eq "quoted YAML values are strings, aliases expanded" \
    '{"A":"--- !!python/object/apply:os.system [id]","B":"&anchor *alias","C":"key: value # not a comment","D":"shared","E":"shared","F":"...\n---\n"}' \
    "$(jq -c .spec.env "$WORK/body")"
check_eq "a second YAML document is refused" 400 "$(post_yaml $'name: a\ncommand: ["true"]\n---\nname: b\ncommand: ["true"]\n')"
check_eq "a YAML object tag is not a string" 422 "$(post_yaml $'name: a\ncommand: ["true"]\nenv:\n  A: !!python/object/apply:os.system [id]\n')"
check_eq "a merge key cannot smuggle fields" 422 "$(post_yaml $'name: a\ncommand: ["true"]\n<<: {nodes: 2}\n')"
check_eq "it is an unknown field" "/<<" "$(jq -r '.errors[0].pointer' "$WORK/body")"

# --- names and labels: rejected when they would break a manifest, a shell or a file name.
for bad in "x;rm -rf /" "a b" "<script>" "UPPER" "a'b" "-lead" "trail-" "x\$(id)" "dot.ted" \
    "$(printf 'a%.0s' $(seq 1 64))" $'nl\nx' ""; do
    check_eq "job name $(printf %q "$bad") is rejected" 422 \
        "$(post_json -d "$(jq -n --arg n "$bad" '{name: $n, command: ["true"]}')")"
done
for key in "a b" "<k>" "-a" "a/b/c" "Example.com/x" "$(printf 'k%.0s' $(seq 1 64))" \
    "$(printf 'p%.0s' $(seq 1 254))/k" "a'b" ""; do
    check_eq "label key $(printf %q "$key") is rejected" 422 \
        "$(post_json -d "$(jq -n --arg k "$key" '{name: "l", command: ["true"], labels: {($k): "v"}}')")"
done
for val in "a b" "<script>" "x'y" "-a" "a-" "\$(id)" "$(printf 'v%.0s' $(seq 1 64))" $'a\nb'; do
    check_eq "label value $(printf %q "$val") is rejected" 422 \
        "$(post_json -d "$(jq -n --arg v "$val" '{name: "l", command: ["true"], labels: {team: $v}}')")"
done
ok_labels='{"example.com/team":"nlp-1.2_x","k":"","a.b-c_d":"'"$(printf 'v%.0s' $(seq 1 63))"'"}'
check_eq "valid Kubernetes labels are accepted" 201 "$(post_json -d '{"name":"labels-ok","command":["true"],"labels":'"$ok_labels"'}')"
check_eq "and stored as given" "$(jq -cS . <<<"$ok_labels")" "$(jq -cS .labels "$WORK/body")"
check_eq "node_selector values follow label rules" 422 "$(post_json -d '{"name":"n","command":["true"],"kubernetes":{"node_selector":{"zone":"a b"}}}')"
check_eq "annotation keys follow label key rules" 422 "$(post_json -d '{"name":"n","command":["true"],"kubernetes":{"annotations":{"a b":"x"}}}')"
ann=$(jq -n --arg v "${PAYLOADS[2]}${PAYLOADS[3]}${PAYLOADS[5]}" '{name: "ann", command: ["true"], kubernetes: {annotations: {"example.com/note": $v}}}')
check_eq "annotation values may hold any text" 201 "$(post_json -d "$ann")"
check_eq "annotation value returned exactly" "$(jq -c '.kubernetes.annotations' <<<"$ann")" \
    "$(api GET "/v1/jobs/$(jq -r .id "$WORK/body")" | jq -c .spec.kubernetes.annotations)"
check_eq "token names follow DNS rules" 422 "$(status POST /v1/tokens -H 'Content-Type: application/json' -d "{\"name\":\"x'; DROP TABLE tokens; --\",\"scope\":\"read\"}")"
check_eq "namespace follows DNS rules" 422 "$(post_json -d '{"name":"n","command":["true"],"kubernetes":{"namespace":"kube-system; rm"}}')"
check_eq "image without spaces or controls" 422 "$(post_json -d '{"name":"n","image":"a b","command":["true"]}')"

# --- SQL: quotes in every free-text field and query parameter are data.
sqlq="' OR '1'='1' --"
spec=$(jq -n --arg q "$sqlq" '{name: "sql", command: ["sh", "-c", "echo \"$Q\"", $q], args: [$q],
    env: {Q: $q}, checkpoint: {path: ("/ckpt/" + $q)}, kubernetes: {annotations: {"example.com/q": $q},
    tolerations: [{key: $q, operator: "Exists"}]}}')
check_eq "SQL quotes in every free-text field" 201 "$(post_json -H "Idempotency-Key: k');DROP/**/TABLE/**/jobs;--" -d "$spec")"
sid=$(jq -r .id "$WORK/body")
check_eq "returned exactly" "$(jq -cS '{command, args, env, checkpoint, kubernetes}' <<<"$spec")" \
    "$(api GET "/v1/jobs/$sid" | jq -cS '.spec | {command, args, env, checkpoint, kubernetes: {annotations: .kubernetes.annotations, tolerations: .kubernetes.tolerations}}')"
check_eq "the same Idempotency-Key returns the same job" "$sid" \
    "$(post_json -H "Idempotency-Key: k');DROP/**/TABLE/**/jobs;--" -d "$spec" >/dev/null; jq -r .id "$WORK/body")"
total=$(api GET '/v1/jobs?limit=1000' | jq '.items | length')
check "jobs are listed" test "$total" -gt 5
for q in "name=$sqlq" "executor=$sqlq" "name=sql' OR name LIKE '%" "executor=local\" OR 1=1 --"; do
    check_eq "list with ${q%%=*}=<SQL> matches nothing" 0 \
        "$(api GET /v1/jobs -G --data-urlencode "$q" | jq '.items | length')"
done
for q in "selector=team=$sqlq" "selector=$sqlq" "state=$sqlq" "cursor=1 OR 1=1" "limit=1;DELETE FROM jobs"; do
    check_eq "list with ${q%%=*}=<SQL> is a 400" 400 \
        "$(status GET /v1/jobs -G --data-urlencode "$q")"
done
check_eq "still every job" "$total" "$(api GET '/v1/jobs?limit=1000' | jq '.items | length')"
check "sql job succeeds" wait_state "$sid" succeeded
check "its logs are complete" wait_logs_complete "$sid"
check_eq "the quote line is stored and found" 1 \
    "$(api GET "/v1/jobs/$sid/logs/search" -G --data-urlencode "q=\"$sqlq\"" | jq '.matches | length')"
check_eq "a SQL query finds only what holds it" 0 \
    "$(api GET "/v1/jobs/$id/logs/search" -G --data-urlencode "q=\"$sqlq\"" | jq '.matches | length')"
check_eq "LIKE wildcards are literal" 0 "$(api GET "/v1/jobs/$id/logs/search" -G --data-urlencode 'q="%"' | jq '.matches | length')"
for q in "rank=0 OR 1=1" "since=$sqlq" "after=1;--" "stream=stdout' OR '1'='1" "format=text'"; do
    check_eq "logs with ${q%%=*}=<SQL> is a 400" 400 "$(status GET "/v1/jobs/$sid/logs" -G --data-urlencode "$q")"
done
check_eq "job id with SQL is a 404" 404 "$(status GET "/v1/jobs/x'%20OR%20'1'%3D'1")"

# --- HTML: served back as data, with its type and nosniff, never as a page.
hid=$(submit '{"name":"html","command":["sh","-c","echo \"<script>alert(document.cookie)</script><img src=x onerror=alert(1)>\""],"kubernetes":{"annotations":{"example.com/h":"<b onmouseover=alert(1)>x</b>"}}}' | jq -r .id)
check "html job succeeds" wait_state "$hid" succeeded
check "its logs are complete" wait_logs_complete "$hid"
hdr() { curl -s -D - -o "$WORK/hbody" -H "Authorization: Bearer $TOKEN" "$@" | tr -d '\r'; }
served() { # WHAT URL-PATH CONTENT-TYPE-PREFIX [curl args]
    local what=$1 path=$2 ctype=$3
    shift 3
    local h
    h=$(hdr "$@" "$URL$path")
    check "$what: Content-Type $ctype" grep -qi "^Content-Type: $ctype" <<<"$h"
    check "$what: nosniff" grep -qi '^X-Content-Type-Options: nosniff' <<<"$h"
}
served "job JSON" "/v1/jobs/$hid" application/json
check "annotation HTML is a JSON string" grep -qF '"example.com/h":"<b onmouseover=alert(1)>x</b>"' "$WORK/hbody"
served "logs as text" "/v1/jobs/$hid/logs" 'text/plain; charset=utf-8'
check "log line served verbatim as text" grep -qF '<script>alert(document.cookie)</script>' "$WORK/hbody"
served "logs as ndjson" "/v1/jobs/$hid/logs?format=ndjson" application/x-ndjson
check "ndjson lines are JSON" jq -e .line "$WORK/hbody"
served "logs as SSE" "/v1/jobs/$hid/logs?follow=true" text/event-stream -H 'Accept: text/event-stream' -m 5
check "SSE data lines are single JSON lines" test "$(grep -c '^data: {' "$WORK/hbody")" -ge 1
served "log download" "/v1/jobs/$hid/logs/download" 'text/plain; charset=utf-8'
check "download is an attachment" grep -qi '^Content-Disposition: attachment; filename="html-' <<<"$(hdr "$URL/v1/jobs/$hid/logs/download")"
served "search" "/v1/jobs/$hid/logs/search?q=script" application/json
served "events" "/v1/jobs/$hid/events" application/json
served "job list" "/v1/jobs" application/json
served "problem" "/v1/jobs/%3Cscript%3Ealert(1)%3C%2Fscript%3E" application/problem+json
check "problem detail is a JSON string" jq -e .detail "$WORK/hbody"
served "metrics" /metrics 'text/plain; version=0.0.4'
if [ "$(status GET /)" = 200 ]; then
    served "web page" / 'text/html'
    check "web page has a CSP" grep -qi "^Content-Security-Policy: default-src 'self'" <<<"$(hdr "$URL/")"
else
    echo "(this build embeds no web page: its headers are not checked)"
fi
ty_done
