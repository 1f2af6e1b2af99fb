#!/usr/bin/env bash
# The CLI's submit and read commands against the real daemon: YAML/JSON/stdin specs, --set
# overrides landing in the stored spec, --dry-run storing nothing, validation errors printed with
# their fields, usage errors, idempotency keys, templates, and --output json being one valid JSON
# document for every command.
source "$(dirname "$0")/lib.sh"
ty_start
export TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN XDG_CONFIG_HOME=$WORK/xdg HOME=$WORK
unset TRAINYARD_CONFIG TRAINYARD_OUTPUT TRAINYARD_CACERT TRAINYARD_RETRY_FOR
ty() { "$TRAINYARD" "$@"; }

cat >"$WORK/job.yaml" <<'YAML'
name: cli-yaml
command: [sh, -c, 'echo "lr=$LR rank=$RANK"']
labels:
  owner: ci
YAML

# YAML file with typed overrides.
id=$(ty submit "$WORK/job.yaml" --set nodes=2 --set env.LR=3e-4 --set labels.team=nlp --set procs_per_node=1)
check "submit prints the job id only" grep -Eq '^[a-z0-9]{12}$' <<<"$id"
spec=$(api GET "/v1/jobs/$id" | jq -c .spec)
check_eq "--set nodes=2 is a number" 2 "$(jq .nodes <<<"$spec")"
check_eq "--set env.LR=3e-4 stays a string" '"3e-4"' "$(jq .env.LR <<<"$spec")"
check_eq "--set labels.team joins the file's labels" '{"owner":"ci","team":"nlp"}' "$(jq -c .labels <<<"$spec")"
check "the job ran with the override" wait_state "$id" succeeded
check "its log shows it" grep -q "lr=3e-4 rank=1" <<<"$(ty logs "$id")"

# JSON from standard input; an array override.
id=$(echo '{"name":"cli-stdin","command":["true"]}' | ty submit - --set 'args=["x","y"]')
check_eq "stdin spec with array override" '["x","y"]' "$(api GET "/v1/jobs/$id" | jq -c .spec.args)"

# Dry run: the canonical spec and the executor's object come back, nothing is stored.
before=$(api GET '/v1/jobs?limit=1000' | jq '.items | length')
dry=$(ty submit "$WORK/job.yaml" --dry-run -o json --set nodes=3)
check "dry run prints the canonical spec" jq -e '.spec.name == "cli-yaml" and .spec.nodes == 3' <<<"$dry"
check "dry run prints the executor's object" jq -e '.object != null' <<<"$dry"
check_eq "dry run stores nothing" "$before" "$(api GET '/v1/jobs?limit=1000' | jq '.items | length')"

# Validation errors: the problem as the API says it, each field on its own line, exit 8.
out=$(ty submit "$WORK/job.yaml" --set resources.gpus=100 --set nodes=0 --set colour=red 2>&1)
check_eq "invalid spec exits 8" 8 $?
check "gpus field error shown" grep -qF "/resources/gpus: must be between 0 and 64" <<<"$out"
check "nodes field error shown" grep -q "^  /nodes: " <<<"$out"
check "unknown field shown" grep -q "^  /colour: .*not a known field" <<<"$out"
check "status and title shown" grep -q "HTTP 422" <<<"$out"
ty -o json submit "$WORK/job.yaml" --set resources.gpus=100 >"$WORK/p.json" 2>/dev/null
check "json mode: the problem document with its fields" jq -e '.status == 422 and ([.errors[].pointer] | index("/resources/gpus"))' "$WORK/p.json"

# Usage errors: exit 2, a message, and with -o json still one JSON document.
ty submit >/dev/null 2>"$WORK/e"
check_eq "submit without a file exits 2" 2 $?
ty submit "$WORK/job.yaml" --set nodes >/dev/null 2>"$WORK/e"
check_eq "--set without = exits 2" 2 $?
check "--set error says what is expected" grep -q "expected path=value" "$WORK/e"
printf 'name: [broken\n' >"$WORK/bad.yaml"
ty submit "$WORK/bad.yaml" >/dev/null 2>"$WORK/e"
check_eq "bad YAML exits 2" 2 $?
check "bad YAML names the file and line" grep -q "bad.yaml.*line" "$WORK/e"
ty submit /nonexistent.yaml >/dev/null 2>"$WORK/e"
check_eq "missing file exits 2" 2 $?
ty jobs --tail 3 >/dev/null 2>"$WORK/e"
check_eq "an option of another command exits 2" 2 $?
check "and says which" grep -q "'jobs' does not take --tail" "$WORK/e"
ty frobnicate >/dev/null 2>&1
check_eq "unknown command exits 2" 2 $?
check "unknown command in json mode is a JSON document" jq -e '.exit_status == 2 and .type == "urn:trainyard:cli:usage"' <<<"$(ty -o json frobnicate 2>/dev/null)"
check "help lists the client commands and exit statuses" grep -q "lost connection" <<<"$("$TRAINYARD" --help)"
"$TRAINYARD" >"$WORK/u.out" 2>&1
check "no arguments: daemon and client usage" grep -q "serve.*" "$WORK/u.out"
check "no arguments: client usage too" grep -q "submit FILE" "$WORK/u.out"
check "submit --help names its exit statuses" grep -q "3 the job was cancelled" <<<"$(ty submit --help)"

# Idempotency: the same key is the same job, another spec with it is a conflict.
a=$(ty submit "$WORK/job.yaml" --set name=cli-idem --idempotency-key "ci-run-42")
b=$(ty submit "$WORK/job.yaml" --set name=cli-idem --idempotency-key "ci-run-42" 2>/dev/null)
check_eq "same key, same job" "$a" "$b"
check_eq "one job stored" 1 "$(api GET '/v1/jobs?name=cli-idem' | jq '.items | length')"
ty submit "$WORK/job.yaml" --set name=cli-idem --set nodes=2 --idempotency-key "ci-run-42" >/dev/null 2>"$WORK/e"
check_eq "same key, other spec: exit 8" 8 $?
check "the conflict is explained" grep -q "HTTP 409" "$WORK/e"
c=$(ty submit "$WORK/job.yaml" --set name=cli-idem)
check "without a key each run is a new job" test -n "$c" -a "$c" != "$a"

# Templates: POST /v1/templates/{name}/jobs (issue 8). Until the daemon serves it, the error
# is the API's own plus a hint.
if curl -s "$URL/v1/templates/x/jobs" -X POST | grep -q "no such path"; then
    ty submit --template nightly --set EPOCHS=3 >/dev/null 2>"$WORK/e"
    check_eq "template submit without the route: exit 8" 8 $?
    check "names the missing route" grep -q "no such path: /v1/templates/nightly/jobs" "$WORK/e"
    check "and says why" grep -q "cannot submit from templates" "$WORK/e"
else
    ty submit --template does-not-exist --set EPOCHS=3 >/dev/null 2>"$WORK/e"
    check "template route reached (unknown template refused by the API)" grep -q "HTTP 4" "$WORK/e"
fi
ty submit "$WORK/job.yaml" --template x >/dev/null 2>&1
check_eq "a file and --template together exit 2" 2 $?

# --output json: one valid document per command.
id=$(ty submit "$WORK/job.yaml" --set name=cli-json -o json | jq -r .id)
check "submit -o json prints the job" test -n "$id" -a "$id" != null
wait_state "$id" succeeded
wait_logs_complete "$id"
check "status -o json" jq -e --arg id "$id" '.id == $id and (.ranks | length) == 1' <<<"$(ty status "$id" -o json)"
check "jobs -o json" jq -e '.items | length > 3' <<<"$(ty jobs -o json)"
check "jobs --state --selector -o json" jq -e '(.items | length) == 1 and .items[0].labels.team == "nlp"' <<<"$(ty jobs -o json --state succeeded --selector team=nlp)"
check "events -o json" jq -e '[.items[].type] | index("succeeded")' <<<"$(ty events "$id" -o json)"
check "diagnosis -o json" jq -e 'has("summary")' <<<"$(ty diagnosis "$id" -o json)"
check "logs -o json is NDJSON of log lines" jq -e -s 'length == 1 and .[0].seq > 0 and .[0].rank == 0' <<<"$(ty logs "$id" -o json)"
check "wait -o json" jq -e '.exit_status == 0 and .result == "succeeded"' <<<"$(ty wait "$id" -o json)"
for cmd in nodes templates triggers; do
    out=$(ty $cmd -o json 2>/dev/null)
    rc=$?
    check "$cmd -o json is one JSON document (exit $rc)" jq -e 'type == "object"' <<<"$out"
done
check "cancel of an ended job: JSON problem" jq -e '.status == 409' <<<"$(ty cancel "$id" -o json 2>/dev/null)"
check "status of an unknown job: JSON problem" jq -e '.status == 404' <<<"$(ty status nosuchjob -o json 2>/dev/null)"

# Human tables: aligned columns with a header.
ty jobs --limit 3 >"$WORK/t"
check_eq "jobs --limit 3: header and 3 rows" 4 "$(wc -l <"$WORK/t")"
check "jobs table header" grep -q '^ID  *NAME  *STATE  *RANKS  *RESTARTS  *AGE  *REASON$' "$WORK/t"
check "relative ages" grep -q 'ago\|just now' "$WORK/t"
ty_done
