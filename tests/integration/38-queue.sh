#!/usr/bin/env bash
# GPUs, queues and the scheduler on the local executor, with four fake GPUs (--test-gpus: the
# discovery reads a fixture instead of NVML): each rank gets its own GPUs by UUID; a job that
# could never fit is refused; GET /v1/nodes shows who uses which GPU; a waiting job says what it
# waits for and its place; a queue at its quota holds up only itself; a high-priority queue goes
# first; a job behind the head starts when its deadline ends in time, or as a backfill that is
# suspended (SIGTERM, grace, requeued) when the head needs its GPU and resumes afterwards; a
# running job is suspended and resumed by hand, from its checkpoint.
source "$(dirname "$0")/lib.sh"
GPUS="$WORK/gpus.json"
cat >"$GPUS" <<'EOF'
[{"index":0,"uuid":"GPU-00000000-0000-4000-8000-000000000000","name":"NVIDIA H100 80GB HBM3","memory_bytes":85899345920},
 {"index":1,"uuid":"GPU-11111111-1111-4111-8111-111111111111","name":"NVIDIA H100 80GB HBM3","memory_bytes":85899345920},
 {"index":2,"uuid":"GPU-22222222-2222-4222-8222-222222222222","name":"NVIDIA H100 80GB HBM3","memory_bytes":85899345920},
 {"index":3,"uuid":"GPU-33333333-3333-4333-8333-333333333333","name":"NVIDIA H100 80GB HBM3","memory_bytes":85899345920}]
EOF
ty_start --test-gpus "$GPUS"
in_out() { grep -qE "$2" <<<"$1"; }
field() { api GET "/v1/jobs/$1" | jq -r ".$2"; }
gpujob() { # gpujob NAME GPUS SCRIPT [EXTRA]: a 1-rank job with GPUS GPUs
    job "$1" "$3" "\"resources\":{\"gpus\":$2}${4:+,$4}"
}
# Each rank writes the GPUs it was given, then waits for `go` in its checkpoint directory.
HOLD='echo "$CUDA_VISIBLE_DEVICES" > $TRAINYARD_CHECKPOINT_DIR/gpus.$RANK; while [ ! -e $TRAINYARD_CHECKPOINT_DIR/go ]; do sleep 0.1; done'
eventually_eq() { # eventually_eq ID FIELD VALUE: within 30 s
    for _ in $(seq 1 300); do [ "$(field "$1" "$2")" = "$3" ] && return 0; sleep 0.1; done
    echo "job $1: .$2 is [$(field "$1" "$2")], not [$3]" >&2
    return 1
}
eventually_in() { # eventually_in ID FIELD PATTERN
    for _ in $(seq 1 300); do in_out "$(field "$1" "$2")" "$3" && return 0; sleep 0.1; done
    return 1
}
eventually_logs() { # eventually_logs ID PATTERN
    for _ in $(seq 1 300); do in_out "$(api GET "/v1/jobs/$1/logs")" "$2" && return 0; sleep 0.1; done
    return 1
}
# go ID: lets the job's HOLD end (made ahead when the job has not started: it ends at once then).
go() {
    mkdir -p "$(ckpt "$1")" && touch "$(ckpt "$1")/go"
}
wait_file() { for _ in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# GPUs per rank, disjoint between jobs; a CPU job sees none.
a=$(job two-ranks "$HOLD" '"procs_per_node":2,"resources":{"gpus":1}')
b=$(gpujob two-gpus 2 "$HOLD")
c=$(job cpu "$HOLD")
for f in "$(ckpt "$a")/gpus.0" "$(ckpt "$a")/gpus.1" "$(ckpt "$b")/gpus.0"; do
    check "a rank wrote its GPUs ($f)" wait_file "$f"
done
check "a CPU job's rank ran" wait_file "$(ckpt "$c")/gpus.0" || sleep 1
all=$(cat "$(ckpt "$a")"/gpus.* "$(ckpt "$b")/gpus.0" | tr ',' '\n' | sort)
check_eq "four GPUs handed out, each once" 4 "$(echo "$all" | sort -u | grep -c GPU-)"
check_eq "a rank with resources.gpus 1 gets one" 1 "$(tr ',' '\n' <"$(ckpt "$a")/gpus.0" | grep -c GPU-)"
check_eq "a rank with resources.gpus 2 gets two" 2 "$(tr ',' '\n' <"$(ckpt "$b")/gpus.0" | grep -c GPU-)"
check_eq "a CPU job's rank sees no GPU" "" "$(cat "$(ckpt "$c")/gpus.0")"
nodes=$(api GET /v1/nodes | jq '.items[] | select(.name == "localhost")')
check_eq "GET /v1/nodes: the local machine's GPUs" "4 4" "$(echo "$nodes" | jq -r '"\(.gpus.capacity) \(.gpus.used)"')"
check_eq "each GPU names its job" "$a $a $b $b" \
    "$(echo "$nodes" | jq -r '[.gpu_devices[].job.id] | sort | join(" ")')"
check_eq "GPU model and memory" "NVIDIA H100 80GB HBM3 85899345920" \
    "$(echo "$nodes" | jq -r '.gpu_devices[0] | "\(.name) \(.memory_bytes)"')"

# Never fits: refused at once, naming the field.
check_eq "a job needing more GPUs than the machine has is refused" 422 \
    "$(status POST /v1/jobs -H 'Content-Type: application/json' \
        -d '{"name":"big","command":["true"],"procs_per_node":3,"resources":{"gpus":2}}')"
check "the refusal says it could never start" in_out \
    "$(submit '{"name":"big","command":["true"],"procs_per_node":3,"resources":{"gpus":2}}' | jq -r '.errors[].detail')" \
    "6 GPUs .* could never start"

# A waiting job says what it waits for, what is free and its place.
d=$(gpujob waits-1 1 "$HOLD")
e=$(gpujob waits-2 1 "$HOLD")
check "the first waiting job says why" eventually_eq "$d" message \
    "waiting for 1 GPU, 0 free; next to start (jobs behind it cannot delay it); 1st in queue default"
check_eq "its reason" WaitingForResources "$(field "$d" reason)"
check_eq "the second is 2nd" 2 "$(field "$e" queue_position)"
for j in $a $b $c $d $e; do go "$j"; done
for j in $a $b $c; do check "job $j succeeds" wait_state "$j" succeeded 30; done
for j in $d $e; do check "waiting job $j runs and succeeds" wait_state "$j" succeeded 30; done

# Quotas and queue priority.
check_eq "an admin sets a queue's GPU quota" 200 "$(status PUT /v1/queues/research \
    -H 'Content-Type: application/json' -d '{"gpu_quota":1,"description":"the research team"}')"
check_eq "and a queue's priority" 200 "$(status PUT /v1/queues/urgent \
    -H 'Content-Type: application/json' -d '{"priority":10}')"
check_eq "a bad quota is refused by field" /gpu_quota "$(api PUT /v1/queues/x \
    -H 'Content-Type: application/json' -d '{"gpu_quota":-3}' | jq -r '.errors[0].pointer')"
r1=$(gpujob r1 1 "$HOLD" '"queue":"research"')
r2=$(gpujob r2 1 "$HOLD" '"queue":"research"')
f1=$(gpujob f1 1 "$HOLD")
check "research's first job runs" wait_state "$r1" running 30
check "a default job runs beside it" wait_state "$f1" running 30
check_eq "research's second waits for the quota" QueueQuota "$(field "$r2" reason)"
check_eq "and says so" "waiting for queue research's GPU quota: 1 of 1 in use, it needs 1; 1st in queue research" \
    "$(field "$r2" message)"
check "trainyard queues lists them" in_out "$(TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN "$TRAINYARD" queues)" \
    "research +0 +1 +1 +1 +1"
check_eq "GET /v1/queues: research uses 1 GPU, 1 job waits" "1 1 1" \
    "$(api GET /v1/queues | jq -r '.items[] | select(.name == "research") | "\(.gpu_quota) \(.gpus_used) \(.waiting_jobs)"')"
low=$(gpujob low 3 "$HOLD")
high=$(gpujob high 3 "$HOLD" '"queue":"urgent"')
check "the urgent queue's job waits first in line" eventually_in "$high" message "next to start"
check_eq "the older default job waits behind it" WaitingForResources "$(field "$low" reason)"
for j in $r1 $f1; do go "$j"; done
check "urgent's job starts first" wait_state "$high" running 30
check_eq "the older one still waits" queued "$(field "$low" state)"
for j in $r2 $high $low; do go "$j"; done
for j in $r2 $high $low; do check "job $j ends" wait_state "$j" succeeded 30; done

# Backfill: behind a head that waits for a job with no deadline, a 1-GPU job runs as a backfill;
# when the head would fit without it, it is suspended (SIGTERM, its grace) and queued again.
long=$(gpujob long 3 "$HOLD")
check "the long job runs" wait_state "$long" running 30
head=$(gpujob head 4 'exit 0')
TRAP='trap "echo saved at \$(cat $TRAINYARD_CHECKPOINT_DIR/step 2>/dev/null); exit 0" TERM
echo attempt $TRAINYARD_ATTEMPT resumes at $(cat $TRAINYARD_CHECKPOINT_DIR/step 2>/dev/null || echo 0)
i=0; while true; do i=$((i+1)); echo $i > $TRAINYARD_CHECKPOINT_DIR/step; sleep 0.1; done'
bf=$(gpujob backfill 1 "$TRAP")
check "the backfill runs" wait_state "$bf" running 30
check_eq "it is marked as a backfill" true "$(field "$bf" backfill)"
go "$long"
check "the backfill is queued again for the head" eventually_eq "$bf" reason Requeued
check "the head starts and ends" wait_state "$head" succeeded 30
check "the backfill runs again" wait_state "$bf" running 30
logs=$(api GET "/v1/jobs/$bf/logs")
check "it was stopped with SIGTERM and saved" in_out "$logs" "saved at [0-9]+"
check "its next attempt resumed from its checkpoint" in_out "$logs" "attempt 1 resumes at [1-9]"
check_eq "a requeue spends no restart budget (restart.policy never)" running "$(field "$bf" state)"
check "the timeline says why" in_out "$(api GET "/v1/jobs/$bf/events" | jq -r '.items[].message')" \
    "to make room for job $head"
check_eq "cancel the backfill" 202 "$(status POST "/v1/jobs/$bf/cancel")"
check "it is cancelled" wait_state "$bf" cancelled 30

# EASY: a job whose deadline ends before the head can start runs ahead of it, not preemptible.
timed=$(gpujob timed 3 "$HOLD" '"deadline_seconds":3600')
check "the timed job runs" wait_state "$timed" running 30
head2=$(gpujob head2 4 'exit 0')
short=$(gpujob short 1 'sleep 0.5' '"deadline_seconds":60')
check "the short job runs ahead of the head" wait_state "$short" succeeded 30
check_eq "the head still waits" queued "$(field "$head2" state)"
go "$timed"
check "the head runs once the timed job ended" wait_state "$head2" succeeded 30

# Suspend and resume by hand: SIGTERM, the grace period to checkpoint, its GPU back; a new
# attempt from the checkpoint.
sus=$(gpujob suspend-me 4 "$TRAP")
check "the job runs" wait_state "$sus" running 30
sleep 0.5
cli() { TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN "$TRAINYARD" "$@"; }
check "trainyard suspend" in_out "$(cli suspend "$sus")" "job $sus: restarting \(Suspending\)"
check_eq "it is being suspended" true "$(field "$sus" suspended)"
check "it is queued once its rank ended" eventually_eq "$sus" state queued
check_eq "its reason" Suspended "$(field "$sus" reason)"
check_eq "its GPUs are free" 0 "$(api GET /v1/nodes | jq '.items[] | select(.name == "localhost") | .gpus.used')"
check "it saved on SIGTERM" in_out "$(api GET "/v1/jobs/$sus/logs")" "saved at [0-9]+"
check "trainyard resume" in_out "$(cli resume "$sus")" "job $sus: queued"
check "it runs again" wait_state "$sus" running 30
check "from its checkpoint" eventually_logs "$sus" "attempt 1 resumes at [1-9]"
check_eq "suspending a finished job is a conflict" 409 "$(status POST "/v1/jobs/$head/suspend")"
check_eq "cancel it" 202 "$(status POST "/v1/jobs/$sus/cancel")"
check "cancelled" wait_state "$sus" cancelled 30
ty_done
