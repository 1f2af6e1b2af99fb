#!/usr/bin/env bash
# Usage and cost with real jobs on the local executor (resources.gpus is counted per rank; the
# GPUs are fakes): each job's GPU-seconds equal its ranks' own run times (the shim's
# started_at/finished_at) times its GPUs, also for ranks that ended while the daemon was down;
# GET /v1/usage groups them by owner, team label, queue, executor and day with totals; a
# running job counts up to now; usage stays after the job is deleted and across a restart; an
# admin's price table puts a cost on jobs and teams; /metrics counts the same; bad parameters
# and price tables are refused naming what is wrong.
source "$(dirname "$0")/lib.sh"
# Eight fake GPUs (--test-gpus stands in for NVML): the local executor refuses a job asking
# for more GPUs than the machine has.
for i in 0 1 2 3 4 5 6 7; do
    echo "{\"index\":$i,\"uuid\":\"GPU-0000000$i-0000-4000-8000-000000000000\",\"name\":\"Fake GPU\",\"memory_bytes\":85899345920}"
done | jq -s . >"$WORK/gpus.json"
ty_start --test-gpus "$WORK/gpus.json"

# seconds(RFC 3339 with a fraction) in jq
SECS='def secs: (.[0:19] + "Z" | fromdateiso8601) + ("0" + (.[19:-1] | if . == "" then ".0" else . end) | tonumber);'
# ranks_gpu_seconds JOB GPUS: sum over ranks of (finished_at - started_at) x GPUS
ranks_gpu_seconds() {
    api GET "/v1/jobs/$1" | jq "$SECS [.ranks[] | (.finished_at | secs) - (.started_at | secs)] | add * $2"
}
near() { awk -v a="$1" -v b="$2" -v t="${3:-0.002}" 'BEGIN { d = a - b; exit !(d < t && d > -t) }'; }

alice=$(api POST /v1/tokens -H 'Content-Type: application/json' -d '{"name":"alice","scope":"submit"}' | jq -r .token)
as_alice() { curl -s -H "Authorization: Bearer $alice" "$@"; }

a=$(job usage-a 'sleep 1' '"procs_per_node":2,"resources":{"gpus":2},"labels":{"team":"nlp"}')
b=$(as_alice -X POST -H 'Content-Type: application/json' "$URL/v1/jobs" \
    -d '{"name":"usage-b","command":["sh","-c","sleep 1.5"],"resources":{"gpus":1},"labels":{"team":"vision"}}' | jq -r .id)
check "job a succeeds" wait_state "$a" succeeded
check "job b succeeds" wait_state "$b" succeeded

ja=$(api GET "/v1/jobs/$a")
want_a=$(ranks_gpu_seconds "$a" 2)
check "a's GPU-seconds are its ranks' run times x 2 GPUs ($want_a)" near "$(jq .usage.gpu_seconds <<<"$ja")" "$want_a"
check_eq "a's usage: 2 runs in attempt 0, none running" "2 0 0 2" "$(jq -r '[.usage.runs, .usage.running_ranks, .usage.attempts[0].attempt, .usage.attempts[0].runs] | join(" ")' <<<"$ja")"
check_eq "a's GPUs per rank from resources.gpus" 2 "$(jq .usage.gpus_per_rank <<<"$ja")"
check "a's rank-seconds are half its GPU-seconds" near "$(jq '.usage.rank_seconds * 2' <<<"$ja")" "$(jq .usage.gpu_seconds <<<"$ja")"
check "no cost without a price table" jq -e '.usage.cost == null and .usage.currency == null' <<<"$ja"
want_b=$(ranks_gpu_seconds "$b" 1)
gb=$(api GET "/v1/jobs/$b" | jq .usage.gpu_seconds)
check "b's GPU-seconds are its rank's run time ($want_b)" near "$gb" "$want_b"
detail=$(api GET "/v1/usage/jobs/$a")
check_eq "a's runs, each rank's" "0 1" "$(jq -r '[.rank_runs[].rank] | join(" ")' <<<"$detail")"
check "each run is the rank's own start and end" jq -e --argjson j "$ja" \
    '[.rank_runs[] | .started_at] == [$j.ranks[] | .started_at] and [.rank_runs[] | .finished_at] == [$j.ranks[] | .finished_at]' <<<"$detail"

# Grouped: by owner, by team, by queue, executor and day; totals.
u=$(api GET '/v1/usage?from=-1h&group_by=owner')
check_eq "two owners" "admin-bootstrap alice" "$(jq -r '[.groups[].owner] | sort | join(" ")' <<<"$u")"
check "alice's group is her job's usage" near "$(jq '.groups[] | select(.owner == "alice") | .gpu_seconds' <<<"$u")" "$gb"
check "the total is both jobs" near "$(jq .total.gpu_seconds <<<"$u")" "$(jq -n "$want_a + $want_b")" 0.004
check_eq "the total counts 3 runs of 2 jobs" "3 2" "$(jq -r '[.total.runs, .total.jobs] | join(" ")' <<<"$u")"
t=$(api GET '/v1/usage?from=-1h&group_by=label:team')
check "by team: nlp is job a" near "$(jq '.groups[] | select(.labels.team == "nlp") | .gpu_seconds' <<<"$t")" "$want_a"
check "by team: vision is job b" near "$(jq '.groups[] | select(.labels.team == "vision") | .gpu_seconds' <<<"$t")" "$want_b"
q=$(api GET '/v1/usage?from=-1h&group_by=queue,executor')
check_eq "by queue and executor: the default queue, local" "default/local" "$(jq -r '[.groups[] | "\(.queue)/\(.executor)"] | sort | join(" ")' <<<"$q")"
d=$(api GET '/v1/usage?from=-1h&group_by=day')
check "by day: the days add up to the total" near "$(jq '[.groups[].gpu_seconds] | add' <<<"$d")" "$(jq .total.gpu_seconds <<<"$d")"
check_eq "days are UTC dates" "$(date -u +%F)" "$(jq -r '.groups[-1].day' <<<"$d")"
f=$(api GET '/v1/usage?from=-1h&label=team=vision&owner=alice')
check "filters: alice's vision jobs" near "$(jq .total.gpu_seconds <<<"$f")" "$want_b"
check_eq "a range before the jobs is empty" 0 "$(api GET '/v1/usage?from=-2h&to=-1h' | jq .total.runs)"

# A running job counts up to now.
c=$(job usage-c 'sleep 60' '"resources":{"gpus":4}')
wait_state "$c" running
sleep 1
r1=$(api GET "/v1/jobs/$c" | jq .usage)
check_eq "a running rank is counted as running" 1 "$(jq .running_ranks <<<"$r1")"
check "its GPU-seconds grow with time (4 GPUs)" jq -e '.gpu_seconds >= 4 and .runs == 0' <<<"$r1"
check "GET /v1/usage counts it too" jq -e --argjson a "$want_a" --argjson b "$want_b" '.total.gpu_seconds > $a + $b + 3.9' <<<"$(api GET '/v1/usage?from=-1h')"
api POST "/v1/jobs/$c/cancel" >/dev/null
check "the cancelled job ends" wait_end "$c"
check_eq "once ended, its run is counted" "1 0" "$(api GET "/v1/jobs/$c" | jq -r '[.usage.runs, .usage.running_ranks] | join(" ")')"
want_c=$(ranks_gpu_seconds "$c" 4)

# Ranks that end while the daemon is down count their own end, not the daemon's return.
e=$(job usage-e 'sleep 1' '"resources":{"gpus":1}')
wait_state "$e" running
ty_kill9
sleep 2.5
ty_restart
check "the job that ended while the daemon was down succeeds" wait_state "$e" succeeded
want_e=$(ranks_gpu_seconds "$e" 1)
check "its usage is the shim's run time ($want_e s), not the downtime" near "$(api GET "/v1/jobs/$e" | jq .usage.gpu_seconds)" "$want_e"
check "which is about 1 s" near "$want_e" 1 0.5

# Deleted: the job is gone, its usage stays, everywhere.
before=$(api GET '/v1/usage?from=-1h&group_by=label:team')
check_eq "delete job a" 204 "$(status DELETE "/v1/jobs/$a")"
check_eq "job a is gone" 404 "$(status GET "/v1/jobs/$a")"
check "its usage stays" near "$(api GET "/v1/usage/jobs/$a" | jq .gpu_seconds)" "$want_a"
check_eq "the grouped usage did not change" "$(jq -c '.groups' <<<"$before")" "$(api GET '/v1/usage?from=-1h&group_by=label:team' | jq -c '.groups')"
check_eq "an unknown job has no usage" 404 "$(status GET /v1/usage/jobs/nosuchjob)"

# Prices: admin only, checked field by field, then costs everywhere.
PRICES='{"currency":"EUR","local":{"instance_type":"g5.48xlarge"},"prices":[{"instance_type":"g5.48xlarge","gpu_hour":3600},{"instance_type":"*","capacity_type":"spot","gpu_hour":1}]}'
check_eq "a submit token cannot set prices" 403 "$(as_alice -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' -d "$PRICES" "$URL/v1/usage/prices")"
bad=$(api PUT /v1/usage/prices -H 'Content-Type: application/json' -d '{"currency":"euro","prices":[{"instance_type":"g5.48xlarge","gpu_hour":-1}]}')
check_eq "a bad table names each field" "/currency /prices/0/gpu_hour" "$(jq -r '[.errors[].pointer] | join(" ")' <<<"$bad")"
check_eq "set the price table" 200 "$(status PUT /v1/usage/prices -H 'Content-Type: application/json' -d "$PRICES")"
check_eq "read it back" EUR "$(as_alice "$URL/v1/usage/prices" | jq -r .currency)"
cost=$(api GET "/v1/jobs/$b" | jq .usage)
check "job b costs its GPU-seconds at 3600 EUR per GPU-hour" near "$(jq .cost <<<"$cost")" "$want_b"
check_eq "in EUR" EUR "$(jq -r .currency <<<"$cost")"
check "a deleted job's cost" near "$(api GET "/v1/usage/jobs/$a" | jq .cost)" "$want_a"
tc=$(api GET '/v1/usage?from=-1h&group_by=label:team')
check "per team: nlp's cost" near "$(jq '.groups[] | select(.labels.team == "nlp") | .cost' <<<"$tc")" "$want_a"
check "nothing left unpriced" jq -e '.total.unpriced_gpu_seconds == 0 and .currency == "EUR"' <<<"$tc"

# /metrics counts the same GPU-seconds (ended runs) by executor, queue and instance type.
m=$(api GET /metrics | awk '/^trainyard_usage_gpu_seconds_total\{/ { s += $2 } END { print s }')
check "trainyard_usage_gpu_seconds_total is every run's" near "$m" "$(jq -n "$want_a + $want_b + $want_c + $want_e")" 0.01
check "runs by executor and queue" grep -q 'trainyard_usage_runs_total{executor="local",queue="default",instance_type="",capacity_type=""} 5' <(api GET /metrics)

# Bad parameters: 400 naming the parameter.
check_eq "from must be a time" 400 "$(status GET '/v1/usage?from=yesterday')"
check "the 400 says what a time is" grep -q "duration before now" <(api GET '/v1/usage?from=yesterday')
check_eq "from after to" 400 "$(status GET '/v1/usage?from=-1h&to=-2h')"
check_eq "unknown group" 400 "$(status GET '/v1/usage?group_by=team')"
check_eq "two label keys" 400 "$(status GET '/v1/usage?group_by=label:team&label=project=x')"
check_eq "unknown parameter" 400 "$(status GET '/v1/usage?since=1h')"
check_eq "a limit over 10000" 400 "$(status GET '/v1/usage?limit=10001')"
check_eq "over ten years" 400 "$(status GET '/v1/usage?from=2000-01-01&to=2020-01-01')"

# A restart keeps it all.
before=$(api GET '/v1/usage?from=-1h&group_by=owner,label:team' | jq -c '.groups')
ty_graceful_restart
check_eq "usage survives a restart" "$before" "$(api GET '/v1/usage?from=-1h&group_by=owner,label:team' | jq -c '.groups')"
ty_done
