#!/usr/bin/env bash
# `trainyard usage` against the real daemon after real local jobs: the table by owner (the
# default), by team label and day, one job per attempt (also once it is deleted), costs in the
# price table's currency, -o json being the API's document, and refusals with exit status 8
# (the daemon's reason shown) or 2 (a bad command line).
source "$(dirname "$0")/lib.sh"
for i in $(seq 10 25); do # 16 fake GPUs: the local executor refuses jobs asking for more than it has
    echo "{\"index\":$((i - 10)),\"uuid\":\"GPU-000000$i-0000-4000-8000-000000000000\",\"name\":\"Fake GPU\",\"memory_bytes\":85899345920}"
done | jq -s . >"$WORK/gpus.json"
ty_start --test-gpus "$WORK/gpus.json"
export TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN XDG_CONFIG_HOME=$WORK/xdg HOME=$WORK
unset TRAINYARD_CONFIG TRAINYARD_OUTPUT TRAINYARD_CACERT TRAINYARD_RETRY_FOR
ty() { "$TRAINYARD" "$@"; }

# 2 ranks x 4 GPUs for 2 s: about 16 GPU-seconds; 1 rank x 1 GPU for 1 s.
a=$(job cli-usage-a 'sleep 2' '"procs_per_node":2,"resources":{"gpus":4},"labels":{"team":"nlp"}')
b=$(job cli-usage-b 'sleep 1' '"resources":{"gpus":1},"labels":{"team":"vision"}')
check "both jobs succeed" wait_state "$a" succeeded
check "both jobs succeed" wait_state "$b" succeeded

# near A B TOLERANCE
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(d < t && d > -t) }'; }
out=$(ty usage --from 1h)
check "the table's header" grep -Eq '^OWNER +GPU-HOURS +RANK-HOURS +RUNS +JOBS$' <<<"$out"
total=$(api GET '/v1/usage?from=-1h&group_by=owner' | jq '.total.gpu_seconds / 3600')
check "one row per owner: 3 runs of 2 jobs" grep -Eq "^admin-bootstrap +[0-9.]+ +[0-9.]+ +3 +2$" <<<"$out"
check "its GPU-hours are the API's ($total)" near "$(awk '/^admin-bootstrap/ { print $2 }' <<<"$out")" "$total" 0.00006
check "a total row" near "$(awk '/^total/ { print $2 }' <<<"$out")" "$total" 0.00006
check "the range is said" grep -q '^usage from .* to ' <<<"$out"

out=$(ty usage --from 1h --by label:team,day)
check "by team and day: a column each" grep -Eq '^TEAM +DAY +GPU-HOURS' <<<"$out"
check "nlp's row on today's date" grep -Eq "^nlp +$(date -u +%F) " <<<"$out"
check "vision's row" grep -Eq "^vision +$(date -u +%F) " <<<"$out"

json=$(ty usage --from 1h --by label:team -o json)
check_eq "-o json is the API's document" "$(api GET '/v1/usage?from=-1h&group_by=label:team' | jq -c '.groups')" "$(jq -c '.groups' <<<"$json")"
check_eq "--label filters" '["vision"]' "$(ty usage --from 1h --by label:team --label team=vision -o json | jq -c '[.groups[].labels.team]')"

# One job per attempt, also after it is deleted.
one=$(ty usage "$a")
check "a job's line: GPUs per rank and GPU-hours" grep -Eq "^job $a \\(local, 4 GPUs per rank\\): [0-9.]+ GPU-hours$" <<<"$one"
check "its attempts" grep -Eq '^0 +[0-9.]+ +[0-9.]+ +2$' <<<"$one"
check_eq "delete it" 204 "$(status DELETE "/v1/jobs/$a")"
check_eq "its usage outlives it" "$(jq -c . <<<"$(api GET "/v1/usage/jobs/$a")")" "$(ty usage "$a" -o json | jq -c .)"

# Costs in the table's currency; what has no price is said.
api PUT /v1/usage/prices -H 'Content-Type: application/json' \
    -d '{"local":{"instance_type":"g5.48xlarge"},"prices":[{"instance_type":"g5.48xlarge","gpu_hour":36}]}' >/dev/null
out=$(ty usage --from 1h --by label:team)
check "a COST column" grep -Eq '^TEAM +GPU-HOURS +RANK-HOURS +RUNS +JOBS +COST$' <<<"$out"
cost=$(api GET '/v1/usage?from=-1h&label=team=nlp' | jq '.total.cost')
check "nlp's cost in USD" grep -Eq "^nlp .* [0-9.]+ USD$" <<<"$out"
check "the API's ($cost)" near "$(awk '/^nlp/ { print $(NF - 1) }' <<<"$out")" "$cost" 0.00006
check "a job's cost" grep -Eq "^job $b .*, [0-9.]+ USD$" <<<"$(ty usage "$b")"
api PUT /v1/usage/prices -H 'Content-Type: application/json' \
    -d '{"prices":[{"instance_type":"p4d.24xlarge","gpu_hour":4}]}' >/dev/null
check "GPU-hours without a price are said" grep -q '^without a price: [0-9.]* GPU-hours$' <<<"$(ty usage --from 1h)"

# Refusals.
ty usage --by team >"$WORK/out" 2>"$WORK/err"
check_eq "an unknown group: exit 8" 8 $?
check "the daemon's reason is shown" grep -q "group_by 'team' is unknown" "$WORK/err"
ty usage --from yesterday >/dev/null 2>"$WORK/err"
check_eq "a bad time: exit 8" 8 $?
ty usage --bogus >/dev/null 2>&1
check_eq "a bad option: exit 2" 2 $?
ty usage nosuchjob >/dev/null 2>&1
check_eq "an unknown job: exit 8" 8 $?
ty_done
