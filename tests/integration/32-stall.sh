#!/usr/bin/env bash
# Hangs and stragglers: a job whose step counter stops while its log keeps going is flagged
# `stalled` within its limit (max(stall_after_seconds, 5 x p90 of its step intervals)), with
# each rank's last line in the timeline and /health, and unflagged when it steps again; with
# on_stall "cancel" it is stopped and fails as Stalled; a job that prints no steps is judged by
# its output (limit: max(startup_seconds, the floor)); a rank reporting slower steps is a
# straggler.
source "$(dirname "$0")/lib.sh"
ty_start

# first_true ID JQ SECONDS: waits until the job JSON satisfies JQ.
first_true() {
    for _ in $(seq 1 $(($3 * 10))); do
        [ "$(api GET "/v1/jobs/$1" | jq "$2")" = true ] && return 0
        sleep 0.1
    done
    return 1
}

# 10 steps 0.2 s apart, then NCCL warnings but no step for 6 s, then 3 more steps.
HANG='for i in $(seq 1 10); do echo "step=$i loss=2.$i"; sleep 0.2; done
for i in $(seq 1 12); do echo "NCCL WARN Net : Connection retry $i"; sleep 0.5; done
for i in 11 12 13; do echo "step=$i loss=1.$i"; sleep 0.2; done; sleep 5'
hang=$(job hang "$HANG" '"health":{"stall_after_seconds":2}')
cancel=$(job cancel 'for i in $(seq 1 10); do echo "step=$i loss=2.$i"; sleep 0.2; done; echo "waiting for the data loader"; sleep 60' '"health":{"stall_after_seconds":2,"on_stall":"cancel"}')
# Two ranks step together; then rank 1 goes silent in its data loader while rank 0 retries NCCL.
QUIET='for i in $(seq 1 10); do echo "step=$i loss=2.$i"; sleep 0.2; done
if [ "$RANK" = 1 ]; then echo "fetching batch 11"; sleep 60; fi
for i in $(seq 1 120); do echo "NCCL WARN Net : Connection retry $i"; sleep 0.5; done'
silent=$(job silent "$QUIET" '"procs_per_node":2,"health":{"stall_after_seconds":2}')
quiet=$(job quiet 'echo "compiling the model"; sleep 60' '"health":{"stall_after_seconds":2,"startup_seconds":2}')
STRAG='for i in $(seq 1 30); do
  t=0.10; [ $RANK = 2 ] && t=0.45
  echo "step=$i loss=2.$i step_time=$t"; sleep 0.1; done; sleep 2'
strag=$(job strag "$STRAG" '"procs_per_node":3')

wait_state "$hang" running
t_last=$(date +%s)
check "hang: flagged stalled" first_true "$hang" .stalled 15
flagged=$(date +%s)
check "hang: not before its limit (2 s after step 10)" test $((flagged - t_last)) -ge 3
ev=$(api GET "/v1/jobs/$hang/events" | jq -c '[.items[] | select(.type=="stalled")][0]')
check_eq "hang: stalled event" Stalled "$(echo "$ev" | jq -r .reason)"
check "hang: event names the last step" grep -q "last step 10" <<<"$(echo "$ev" | jq -r .message)"
check "hang: event has the rank's last line" grep -q "rank 0: NCCL WARN Net : Connection retry" <<<"$(echo "$ev" | jq -r .message)"
h=$(api GET "/v1/jobs/$hang/health")
check_eq "hang: health failing" failing "$(echo "$h" | jq -r .status)"
check "hang: health says why" grep -q "stalled" <<<"$(echo "$h" | jq -r '.reasons[]')"
check "hang: stall verdict with the last line" grep -q "NCCL WARN" <<<"$(echo "$h" | jq -r '.stall.ranks[0].last_line')"
check_eq "hang: basis" steps "$(echo "$h" | jq -r .stall.basis)"
check "hang: in /metrics" grep -q "^trainyard_job_stalled{job_id=\"$hang\",job_name=\"hang\"} 1" <<<"$(api GET /metrics)"
check "hang: progress resumes" first_true "$hang" '.stalled == false' 15
check "hang: progressing event" grep -q progressing <<<"$(api GET "/v1/jobs/$hang/events" | jq -r '.items[].type')"
check_eq "hang: still running" running "$(api GET "/v1/jobs/$hang" | jq -r .state)"
check "hang: the stall is a finding" grep -q hang <<<"$(api GET "/v1/jobs/$hang/diagnosis" | jq -r '.findings[].kind')"

# The stalled job's reason and message name the rank that went quiet and its last line.
check "silent: flagged stalled" first_true "$silent" .stalled 15
j=$(api GET "/v1/jobs/$silent")
check_eq "silent: reason while stalled" "running Stalled" "$(echo "$j" | jq -r '"\(.state) \(.reason)"')"
check "silent: message names rank 1 and its last line" grep -q 'rank 1 went quiet: its last line, at [0-9:]*Z, was "fetching batch 11"' <<<"$(echo "$j" | jq -r .message)"
check_eq "silent: the quiet rank in /health" 1 "$(api GET "/v1/jobs/$silent/health" | jq -r '.stall.quiet | map(tostring) | join(",")')"
api POST "/v1/jobs/$silent/cancel" >/dev/null

# on_stall cancel: stopped, failed as Stalled.
check "cancel: fails" wait_state "$cancel" failed 20
j=$(api GET "/v1/jobs/$cancel")
check_eq "cancel: reason" Stalled "$(echo "$j" | jq -r .reason)"
check "cancel: message" grep -q "stopped making progress" <<<"$(echo "$j" | jq -r .message)"
check_eq "cancel: not restarted" 0 "$(echo "$j" | jq .restarts)"

# No steps at all: the output must keep moving, within startup_seconds.
check "quiet: flagged" first_true "$quiet" .stalled 15
check_eq "quiet: judged by output" output "$(api GET "/v1/jobs/$quiet/health" | jq -r .stall.basis)"
check_eq "quiet: on_stall none leaves it running" running "$(api GET "/v1/jobs/$quiet" | jq -r .state)"
api POST "/v1/jobs/$quiet/cancel" >/dev/null

# Stragglers: rank 2 reports 4.5 times the others' step time.
for _ in $(seq 1 60); do
    s=$(api GET "/v1/jobs/$strag/events" | jq -c '[.items[] | select(.type=="straggler")][0] // empty')
    [ -n "$s" ] && break
    sleep 0.1
done
check_eq "straggler event names rank 2" 2 "$(echo "$s" | jq .rank)"
check "straggler message" grep -q "rank 2 takes 0.45 s per step" <<<"$(echo "$s" | jq -r .message)"
check_eq "straggler in health" "2" "$(api GET "/v1/jobs/$strag/health" | jq -r '[.ranks[] | select(.straggler) | .rank] | map(tostring) | join(",")')"
check "straggler degrades health" grep -q "rank 2 is a straggler" <<<"$(api GET "/v1/jobs/$strag/health" | jq -r '.reasons[]')"
ty_done
