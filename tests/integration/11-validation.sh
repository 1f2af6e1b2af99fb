#!/usr/bin/env bash
# Bad input gets a clear problem+json naming every bad field; nothing bad is stored.
source "$(dirname "$0")/lib.sh"
ty_start --max-body 64Ki

post() { curl -s -o "$WORK/body" -w '%{http_code} %{content_type}' -X POST -H "Authorization: Bearer $TOKEN" "$@" "$URL/v1/jobs"; }

r=$(post -H 'Content-Type: application/json' -d '{"name":"Bad_Name","nodes":0,"procs_per_node":"2","colour":"red","restart":{"policy":"sometimes"},"resources":{"gpus":-1,"memory":"lots"},"env":{"1X":"y","OK":3},"labels":{"a b":"c"}}')
check_eq "invalid spec is 422 problem+json" "422 application/problem+json" "$r"
ptrs=$(jq -r '[.errors[].pointer] | sort | join(" ")' "$WORK/body")
for p in /name /nodes /procs_per_node /colour /restart/policy /resources/gpus /resources/memory /env/1X /env/OK "/labels/a b"; do
    check "error names $p" grep -qF -- "$p" <<<"$ptrs"
done
check "message a person can act on" grep -q "DNS-1035" <<<"$(jq -r '.errors[] | select(.pointer=="/name") | .detail' "$WORK/body")"
check "unknown field says so" grep -q "not a known field" "$WORK/body"
check_eq "missing name" /name "$(post -H 'Content-Type: application/json' -d '{"command":["true"]}' >/dev/null; jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "local executor needs a command" /command "$(post -H 'Content-Type: application/json' -d '{"name":"x"}' >/dev/null; jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "secret env needs kubernetes" /env "$(post -H 'Content-Type: application/json' -d '{"name":"x","command":["true"],"env":{"T":{"secret":"s","key":"k"}}}' >/dev/null; jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "kubernetes executor not enabled" /executor "$(post -H 'Content-Type: application/json' -d '{"name":"x","image":"i","executor":"kubernetes"}' >/dev/null; jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "more ranks than slots" /procs_per_node "$(post -H 'Content-Type: application/json' -d '{"name":"x","command":["true"],"procs_per_node":64}' >/dev/null; jq -r '.errors[0].pointer' "$WORK/body")"
check_eq "array instead of object" "422 application/problem+json" "$(post -H 'Content-Type: application/json' -d '[1,2]')"

check_eq "malformed JSON is 400" "400 application/problem+json" "$(post -H 'Content-Type: application/json' -d '{"name":')"
check "400 says where" grep -q "line 1" "$WORK/body"
check_eq "duplicate keys are 400" "400 application/problem+json" "$(post -H 'Content-Type: application/json' -d '{"name":"a","name":"b"}')"
deep=$(printf '{"a":%.0s' $(seq 1 100))1$(printf '}%.0s' $(seq 1 100))
check_eq "nesting too deep is 400" "400 application/problem+json" "$(post -H 'Content-Type: application/json' -d "$deep")"
check_eq "form body is 415" "415 application/problem+json" "$(post -d 'name=x')"
check_eq "empty body is 400" "400 application/problem+json" "$(post -H 'Content-Type: application/json')"
head -c 100000 /dev/zero | tr '\0' 'a' >"$WORK/big"
check_eq "body over the limit is 413" "413 application/problem+json" "$(post -H 'Content-Type: application/json' --data-binary @"$WORK/big")"
check_eq "NUL in a string is 422" "422 application/problem+json" "$(post -H 'Content-Type: application/json' -d '{"name":"x","command":["a\u0000b"]}')"

# YAML is accepted with its media type, and its errors are reported the same way.
yaml=$'name: from-yaml\ncommand: [sh, -c, "echo hi"]\nprocs_per_node: 2\nlabels:\n  team: ml\n'
check_eq "YAML spec accepted" "201 application/json" "$(post -H 'Content-Type: application/yaml' --data-binary "$yaml")"
check_eq "YAML spec canonical" '["sh","-c","echo hi"]' "$(jq -c .spec.command "$WORK/body")"
check_eq "bad YAML is 400" "400 application/problem+json" "$(post -H 'Content-Type: application/yaml' --data-binary $'name: [x\n')"
check_eq "YAML field errors are 422" "422 application/problem+json" "$(post -H 'Content-Type: application/yaml' --data-binary $'name: x\ncommand: ["true"]\nnodes: lots\n')"
check_eq "YAML error pointer" /nodes "$(jq -r '.errors[0].pointer' "$WORK/body")"
lol=$'a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: &d [*c, *c]\ne: &e [*d, *d]\nf: &f [*e, *e]\ng: &g [*f, *f]\nh: &h [*g, *g]\ni: &i [*h, *h]\nj: &j [*i, *i]\nk: &k [*j, *j]\nl: &l [*k, *k]\nm: &m [*l, *l]\nn: &n [*m, *m]\no: &o [*n, *n]\np: &p [*o, *o]\nq: &q [*p, *p]\nr: &r [*q, *q]\n'
# Aliases count the bytes they expand to: past --max-body, as a body that large would be.
check_eq "YAML alias bomb is 413" "413 application/problem+json" "$(post -H 'Content-Type: application/yaml' --data-binary "$lol")"
check_eq "the refusal names the limit" max-body "$(jq -r .limit "$WORK/body")"

# Names and values that would break YAML, JSON, shell or Kubernetes are rejected or carried safely.
check_eq "shell metacharacters in a name" 422 "$(post -H 'Content-Type: application/json' -d '{"name":"x;rm -rf /","command":["true"]}' | cut -d' ' -f1)"
check_eq "quotes and newlines in env values are carried" 201 "$(post -H 'Content-Type: application/json' -d '{"name":"inj","command":["sh","-c","printf %s \"$V\""],"env":{"V":"a\"b\n'"'"'c; $(id)"}}' | cut -d' ' -f1)"
id=$(jq -r .id "$WORK/body")
wait_state "$id" succeeded
wait_logs_complete "$id"
check_eq "env value reached the rank unchanged" "[\"a\\\"b\",\"'c; \$(id)\"]" "$(api GET "/v1/jobs/$id/logs?format=ndjson" | jq -sc '[.[].line]')"

# Routing errors.
check_eq "unknown path is 404" 404 "$(status GET /v1/nothing)"
check_eq "wrong method is 405" 405 "$(status PUT /v1/jobs)"
allow=$(curl -s -D - -o /dev/null -X PUT -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs" | grep -i '^Allow:' | tr -d '\r')
check "405 lists Allow" grep -q "GET" <<<"$allow"
check "405 lists POST" grep -q "POST" <<<"$allow"
check_eq "unknown job is 404" 404 "$(status GET /v1/jobs/nosuchjob)"
check_eq "bad Idempotency-Key is 400" 400 "$(status POST /v1/jobs -H 'Idempotency-Key: has space' -H 'Content-Type: application/json' -d '{}')"
check_eq "nothing bad was stored" 2 "$(api GET /v1/jobs | jq '.items | length')"
ty_done
