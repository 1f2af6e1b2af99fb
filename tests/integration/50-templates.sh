#!/usr/bin/env bash
# Job templates: checked when saved (variables, and the job spec they render to), listed and
# read with a read token, managed by admins only, and submitted from (values, overrides,
# dry_run, Idempotency-Key) through the same path as POST /v1/jobs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
ty_start

json() { api "$@" -H 'Content-Type: application/json'; }
token() {
    json POST /v1/tokens -d "{\"name\": \"$1\", \"scope\": \"$2\"}" | jq -r .token
}
as() {
    local t=$1 method=$2 path=$3
    shift 3
    curl -s -X "$method" -H "Authorization: Bearer $t" -H 'Content-Type: application/json' "$@" \
        "$URL$path"
}
code_as() {
    local t=$1 method=$2 path=$3
    shift 3
    curl -s -o /dev/null -w '%{http_code}' -X "$method" -H "Authorization: Bearer $t" \
        -H 'Content-Type: application/json' "$@" "$URL$path"
}
READ=$(token reader read)
SUBMIT=$(token submitter submit)

TEMPLATE='{"name": "train", "description": "retrain on new data",
  "spec": {"name": "train-${RUN}", "command": ["sh", "-c", "echo \"$DATA\" $EPOCHS"],
           "env": {"DATA": "${DATASET}", "EPOCHS": "${EPOCHS}", "LR": "${LR:-0.001}"},
           "labels": {"run": "${RUN}"},
           "variables": {"EPOCHS": {"default": "10", "description": "passes"},
                         "DATASET": null, "RUN": "r1"}}}'

# Saving: valid, duplicate, and what is refused (each problem by pointer).
out=$(json POST /v1/templates -d "$TEMPLATE" -w ' %{http_code}')
check_eq "create answers 201" 201 "${out##* }"
check_eq "spec kept as given" 'train-${RUN}' "$(echo "${out% *}" | jq -r .spec.name)"
check_eq "duplicate name is 409" 409 "$(status POST /v1/templates -H 'Content-Type: application/json' -d "$TEMPLATE")"
bad() { json POST /v1/templates -d "{\"name\": \"bad\", \"spec\": $1}" | jq -r '[.status, (.errors // [] | map(.pointer) | join(","))] | join(" ")'; }
check_eq "unknown variable" "422 /spec/name" "$(bad '{"name": "x-${NOPE}", "command": ["true"]}')"
check_eq "variable outside substitution places" "422 /spec/queue" \
    "$(bad '{"name": "x", "command": ["true"], "queue": "${S3_BUCKET}"}')"
check_eq "variable inside a shell script" "422 /spec/command/2" \
    "$(bad '{"name": "x", "command": ["sh", "-c", "cat ${S3_KEY}"]}')"
check_eq "spec error found without values" "422 /spec/nodes" \
    "$(bad '{"name": "x-${S3_BUCKET}", "command": ["true"], "nodes": "two"}')"
check_eq "missing command found without values" "422 /spec/command" \
    "$(bad '{"name": "x-${S3_KEY}"}')"
check_eq "name that can never be valid" 422 "$(bad '{"name": "9-${S3_KEY}", "command": ["true"]}' | cut -d' ' -f1)"
check_eq "unknown field" "422 /spek" "$(json POST /v1/templates -d '{"name": "u", "spek": {}}' | jq -r '[.status, (.errors | map(.pointer) | .[0])] | join(" ")')"
check_eq "bad name" 422 "$(status POST /v1/templates -H 'Content-Type: application/json' -d '{"name": "Bad Name", "spec": {"command": ["true"]}}')"

# Scopes: read tokens read, only admins manage.
check_eq "read token lists" train "$(as "$READ" GET /v1/templates | jq -r '.items[0].name')"
check_eq "read token gets" 10 "$(as "$READ" GET /v1/templates/train | jq -r .spec.variables.EPOCHS.default)"
check_eq "read token cannot create" 403 "$(code_as "$READ" POST /v1/templates -d "$TEMPLATE")"
check_eq "submit token cannot create" 403 "$(code_as "$SUBMIT" POST /v1/templates -d "$TEMPLATE")"
check_eq "submit token cannot delete" 403 "$(code_as "$SUBMIT" DELETE /v1/templates/train)"
check_eq "read token cannot submit from it" 403 "$(code_as "$READ" POST /v1/templates/train/jobs -d '{}')"
check_eq "unknown template is 404" 404 "$(status GET /v1/templates/nope)"

# Submitting: values, defaults, overrides; the job is an ordinary job of its submitter.
job=$(as "$SUBMIT" POST /v1/templates/train/jobs -d '{"values": {"DATASET": "s3://d/x y.tar", "EPOCHS": 3},
  "overrides": {"priority": 7, "labels": {"team": "nlp"}, "env": {"LR": null}}}')
id=$(echo "$job" | jq -r .id)
check_eq "job from template is created" queued "$(echo "$job" | jq -r .state)"
check_eq "owner is the submitter" submitter "$(echo "$job" | jq -r .owner)"
spec=$(api GET "/v1/jobs/$id" | jq -c .spec)
check_eq "value substituted whole" "s3://d/x y.tar" "$(echo "$spec" | jq -r .env.DATA)"
check_eq "number value as text" 3 "$(echo "$spec" | jq -r .env.EPOCHS)"
check_eq "declared default used" train-r1 "$(echo "$spec" | jq -r .name)"
check_eq "override merged" 7 "$(echo "$spec" | jq -r .priority)"
check_eq "override adds a label" nlp "$(echo "$spec" | jq -r .labels.team)"
check_eq "template label kept" r1 "$(echo "$spec" | jq -r .labels.run)"
check_eq "null override removes" null "$(echo "$spec" | jq -r .env.LR)"
check_eq "no variables block in the job" null "$(echo "$spec" | jq -r .variables)"
check "job listed like any other" sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/jobs?name=train-r1' | jq -r '.items[0].id')\" = '$id' ]"
check "job runs" wait_state "$id" succeeded 30
check_eq "job has the accepted event" accepted "$(api GET "/v1/jobs/$id/events" | jq -r '.items[0].type')"

sub() { as "$SUBMIT" POST /v1/templates/train/jobs "$@"; }
check_eq "required value missing" "422 /env/DATA" "$(sub -d '{}' | jq -r '[.status, .errors[0].pointer] | join(" ")')"
check_eq "unknown value refused" "/values/DATASETT" "$(sub -d '{"values": {"DATASET": "a", "DATASETT": "b"}}' | jq -r '.errors | map(.pointer) | join(",")' | grep -o '/values/DATASETT')"
check_eq "name no longer DNS-1035 after values" 422 "$(sub -d "{\"values\": {\"DATASET\": \"a\", \"RUN\": \"$(printf 'r%.0s' $(seq 70))\"}}" | jq -r .status)"
check_eq "override making an invalid spec" "422 /nodes" "$(sub -d '{"values": {"DATASET": "a"}, "overrides": {"nodes": 0}}' | jq -r '[.status, .errors[0].pointer] | join(" ")')"
check_eq "unknown body field" 422 "$(sub -d '{"value": {}}' | jq -r .status)"
dry=$(as "$SUBMIT" POST "/v1/templates/train/jobs?dry_run=true" -d '{"values": {"DATASET": "q"}}')
check_eq "dry run renders" q "$(echo "$dry" | jq -r .spec.env.DATA)"
check_eq "dry run stores nothing" 1 "$(api GET '/v1/jobs?name=train-r1' | jq '.items | length')"
first=$(sub -H 'Idempotency-Key: k-1' -d '{"values": {"DATASET": "idem"}}' | jq -r .id)
again=$(sub -H 'Idempotency-Key: k-1' -d '{"values": {"DATASET": "idem"}}' -w ' %{http_code}')
check_eq "Idempotency-Key replays the job" "$first 200" "$(echo "${again% *}" | jq -r .id) ${again##* }"
check_eq "same key, other values: 409" 409 "$(code_as "$SUBMIT" POST /v1/templates/train/jobs -H 'Idempotency-Key: k-1' -d '{"values": {"DATASET": "other"}}')"

# Update, rename refused, delete refused while a trigger runs it, audit trail.
upd=$(json PUT /v1/templates/train -d '{"description": "v2", "spec": {"name": "t2", "command": ["true"]}}')
check_eq "update replaces" "v2 t2" "$(echo "$upd" | jq -r '"\(.description) \(.spec.name)"')"
check_eq "rename refused" 422 "$(status PUT /v1/templates/train -H 'Content-Type: application/json' -d '{"name": "other", "spec": {"command": ["true"]}}')"
check_eq "update of a missing template" 404 "$(status PUT /v1/templates/nope -H 'Content-Type: application/json' -d '{"spec": {"command": ["true"]}}')"
make_trigger '{"name": "uses-train", "template": "train", "auth": {"mode": "hmac"}}' >/dev/null
check_eq "template in use cannot go" 409 "$(status DELETE /v1/templates/train)"
check_eq "triggers counted" 1 "$(api GET /v1/templates/train | jq .triggers)"
check_eq "trigger deleted" 204 "$(status DELETE /v1/triggers/uses-train)"
check_eq "template deleted" 204 "$(status DELETE /v1/templates/train)"
check_eq "gone" 404 "$(status GET /v1/templates/train)"
audit=$(api GET '/v1/audit?target=template/train' | jq -r '[.items[].action] | reverse | join(",")')
check_eq "audit trail" "template.create,template.update,template.delete" "$audit"
check_eq "job creation audited for the submitter" submitter "$(api GET "/v1/audit?target=job/$id" | jq -r '.items[0].actor')"
ty_done
