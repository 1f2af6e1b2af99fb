#!/usr/bin/env bash
# Diagnosis end to end in the local executor: jobs that fail in each way a machine without GPUs
# can produce (a Python traceback, a CUDA OOM cascade over 3 ranks, NCCL watchdog timeouts with
# a hung rank, SIGSEGV, a SIGKILL nobody sent, a real kernel OOM kill in the rank's memory
# cgroup, a spot preemption, a NaN loss) end with the job's reason, message and first_failure
# naming the first cause, and GET /diagnosis shows the findings with evidence line numbers
# that point at the lines in the job's log.
source "$(dirname "$0")/lib.sh"
ty_start

# line_at ID SEQ: the text of the log line with that sequence number.
line_at() { api GET "/v1/jobs/$1/logs?after=$(($2 - 1))&limit=1&format=ndjson" | jq -r .line; }

TB='echo "step=1 loss=2.5"
cat >&2 <<EOT
Traceback (most recent call last):
  File "/workspace/train.py", line 41, in <module>
    main()
  File "/workspace/train.py", line 12, in main
    batch = collate(items)
ValueError: bad batch shape (3, 4)
EOT
exit 1'
tb=$(job traceback "$TB")

OOM='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.11 GiB of which 1.02 GiB is free.'
WD='Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.'
# Rank 1 runs out of GPU memory first but is slow to exit; ranks 0 and 2 hit the NCCL timeout
# it caused, and rank 0 exits first. The first cause, not the first exit, must win.
CASCADE="if [ \$RANK = 1 ]; then echo '$OOM' >&2; sleep 30; exit 1; fi
sleep 0.5; echo \"[E501 12:10:01.123 ProcessGroupNCCL.cpp:616] [Rank \$RANK] $WD\" >&2
[ \$RANK = 0 ] && sleep 1 && exit 1; sleep 30"
cascade=$(job cascade "$CASCADE" '"procs_per_node":3')

# Ranks 0, 1 and 3 time out in the collective; rank 2 never reaches it (hung in its data
# loader): it is the suspect. The timed-out ranks linger before exiting, as torchrun's do, so
# that each has logged its timeout before the first exit stops the others (ranks start up to a
# second apart on a loaded machine).
HUNG="if [ \$RANK = 2 ]; then echo 'loading shard 7'; sleep 30; fi
sleep 0.5; echo \"[E501 12:10:01.123 ProcessGroupNCCL.cpp:616] [Rank \$RANK] $WD\" >&2; sleep 3; exit 6"
hung=$(job hung "$HUNG" '"procs_per_node":4')

segv=$(job segv 'echo "forward pass"; kill -SEGV $$')
killed=$(job killed 'echo "allocating"; kill -KILL $$')
memhog=$(job memhog 'echo "loading the whole dataset"; exec tail -n1 /dev/zero' '"resources":{"memory":"64Mi"}')
spot=$(job spot 'echo "node-agent: EC2 spot interruption notice received, instance terminates at 2024-05-01T12:02:00Z"; kill -TERM $$')
HF="for i in 1 2 3; do echo \"{'loss': 2.\$i, 'learning_rate': 5e-05, 'epoch': 0.\$i}\"; done
echo \"{'loss': nan, 'learning_rate': 5e-05, 'epoch': 0.4}\"; exit 1"
nan=$(job nanloss "$HF")

# A DataLoader worker's KeyError, re-raised by PyTorch in the training process.
DL='cat >&2 <<EOT
Traceback (most recent call last):
  File "/workspace/train.py", line 198, in <module>
    trainer.train()
  File "/opt/venv/lib/python3.11/site-packages/torch/_utils.py", line 722, in reraise
    raise exception
KeyError: Caught KeyError in DataLoader worker process 3.
Original Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 51, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/workspace/data.py", line 88, in __getitem__
    text = row["input_text"]
KeyError: '"'input_text'"'
EOT
exit 1'
dl=$(job dataloader "$DL")
nocmd=$(submit '{"name":"nocmd","command":["/nonexistent/train.py"]}' | jq -r .id)
OFI='echo "gpu-a-02:4242:4400 [0] NCCL WARN NET/OFI Request 0x7f8b0c0f2b38 completed with error. RC: 5. Error: 5 (Input/output error). Completed length: 0" >&2; exit 1'
ofi=$(job ofi "$OFI")
# Every rank times out at the same collective: the logs blame none of them.
ALL="echo \"[E501 12:10:01.123 ProcessGroupNCCL.cpp:616] [Rank \$RANK] $WD\" >&2; sleep 2; exit 6"
alike=$(job alike "$ALL" '"procs_per_node":2')

for id in $tb $cascade $hung $segv $killed $memhog $spot $nan $dl $nocmd $ofi $alike; do
    check "job $id ended" wait_end "$id"
done

# Python traceback: the exception with its frames, evidence at the traceback's lines.
j=$(api GET "/v1/jobs/$tb")
check_eq "traceback: reason" PythonException "$(echo "$j" | jq -r .reason)"
check "traceback: message names the exception and frame" grep -q "ValueError: bad batch shape (3, 4) (train.py:12 in main)" <<<"$(echo "$j" | jq -r .message)"
d=$(api GET "/v1/jobs/$tb/diagnosis")
check_eq "traceback: exception type" ValueError "$(echo "$d" | jq -r '.findings[0].exception.type')"
check_eq "traceback: innermost frame" "main" "$(echo "$d" | jq -r '.findings[0].exception.frames[-1].function')"
ev=$(echo "$d" | jq -r '.summary.evidence | map(tostring) | join(" ")')
check "traceback: evidence lines" test -n "$ev"
first=${ev%% *}
last=${ev##* }
check_eq "traceback: first evidence line" "Traceback (most recent call last):" "$(line_at "$tb" "$first")"
check_eq "traceback: last evidence line" "ValueError: bad batch shape (3, 4)" "$(line_at "$tb" "$last")"
check_eq "first_failure carries the evidence" "$ev" "$(echo "$j" | jq -r '.first_failure.evidence | map(tostring) | join(" ")')"

# Cascade: rank 1's OOM, though ranks 0 and 2 exited first.
j=$(api GET "/v1/jobs/$cascade")
check_eq "cascade: reason" CudaOutOfMemory "$(echo "$j" | jq -r .reason)"
check_eq "cascade: first failing rank" 1 "$(echo "$j" | jq .first_failure.rank)"
check_eq "cascade: kind" cuda_oom "$(echo "$j" | jq -r .first_failure.kind)"
check "cascade: message" grep -q "rank 1 ran out of GPU memory (CUDA OOM: tried to allocate 2.00 GiB) on node localhost" <<<"$(echo "$j" | jq -r .message)"
first_exit=$(echo "$j" | jq -r '[.ranks[] | select(.state=="failed")] | map(.rank) | join(",")')
check_eq "cascade: rank 0 exited first, the others were stopped" 0 "$first_exit"
d=$(api GET "/v1/jobs/$cascade/diagnosis")
check_eq "cascade: NCCL timeouts are consequences of ranks 0 and 2" "0,2" "$(echo "$d" | jq -r '[.findings[] | select(.kind=="nccl_timeout" and .role=="consequence") | .rank] | sort | map(tostring) | join(",")')"
oomseq=$(echo "$d" | jq '.summary.evidence[0]')
check "cascade: evidence is the OOM line" grep -q "CUDA out of memory" <<<"$(line_at "$cascade" "$oomseq")"
check_eq "cascade: the evidence is in rank 1's log" 1 "$(api GET "/v1/jobs/$cascade/logs?after=$((oomseq - 1))&limit=1&format=ndjson" | jq .rank)"

check_eq "cascade: the first failure's ending is rank 1's own, not rank 0's" "$(echo "$j" | jq -c '[.ranks[1].exit_code, .ranks[1].signal]')" "$(echo "$j" | jq -c '[.first_failure.exit_code, .first_failure.signal]')"

j=$(api GET "/v1/jobs/$dl")
check "dataloader: the original KeyError at data.py:88, not the re-raise" grep -q "KeyError: 'input_text' (data.py:88 in __getitem__)" <<<"$(echo "$j" | jq -r .message)"
check_eq "dataloader: the wrapper kept as context" "Caught KeyError in DataLoader worker process 3." "$(api GET "/v1/jobs/$dl/diagnosis" | jq -r '.summary as $s | [.findings[] | select(.exception)][0].exception.context')"
j=$(api GET "/v1/jobs/$nocmd")
check_eq "missing command: the job's reason" "failed CommandNotFound" "$(echo "$j" | jq -r '"\(.state) \(.reason)"')"
check "missing command: the message says so" grep -q "command was not found" <<<"$(echo "$j" | jq -r .message)"
check_eq "NET/OFI warning: an NCCL error, not context" "nccl_error consequence" "$(api GET "/v1/jobs/$ofi/diagnosis" | jq -r '[.findings[] | select(.pattern=="nccl_ofi_warn")][0] | "\(.kind) \(.role)"')"
j=$(api GET "/v1/jobs/$alike")
check_eq "every rank timed out: no rank blamed, nor its ending" "NCCLTimeout null null null" "$(echo "$j" | jq -r '"\(.reason) \(.first_failure.rank) \(.first_failure.exit_code) \(.first_failure.signal)"')"
check "every rank timed out: the message says so" grep -q "timed out on all 2 ranks alike" <<<"$(echo "$j" | jq -r .message)"

# NCCL timeouts everywhere but on rank 2: rank 2 is named.
j=$(api GET "/v1/jobs/$hung")
check_eq "hung: reason" NCCLTimeout "$(echo "$j" | jq -r .reason)"
check_eq "hung: suspect" "[2]" "$(api GET "/v1/jobs/$hung/diagnosis" | jq -c .summary.suspects)"
check "hung: message names rank 2" grep -q "rank 2" <<<"$(echo "$j" | jq -r .message)"

j=$(api GET "/v1/jobs/$segv")
check_eq "segv: reason" SegmentationFault "$(echo "$j" | jq -r .reason)"
check_eq "segv: signal" 11 "$(echo "$j" | jq .first_failure.signal)"

j=$(api GET "/v1/jobs/$killed")
check_eq "sigkill: reason" Killed "$(echo "$j" | jq -r .reason)"
check "sigkill: not sent by trainyard" grep -q "SIGKILL not sent by trainyard" <<<"$(echo "$j" | jq -r '.ranks[0].message')"
check "sigkill: the finding says so too" grep -q "SIGKILL not sent by trainyard" <<<"$(api GET "/v1/jobs/$killed/diagnosis" | jq -r '.findings[0].message')"

# A real OOM kill: needs a memory cgroup the daemon may create (cgroup v1, or v2 delegated).
cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print "/sys/fs/cgroup/memory" $3}' /proc/self/cgroup)
j=$(api GET "/v1/jobs/$memhog")
if [ -n "$cg" ] && [ -w "$cg" ]; then
    check_eq "oom kill: reason" HostOutOfMemory "$(echo "$j" | jq -r .reason)"
    check_eq "oom kill: rank reason" OOMKilled "$(echo "$j" | jq -r '.ranks[0].reason')"
    check_eq "oom kill: SIGKILL" 9 "$(echo "$j" | jq '.ranks[0].signal')"
    check "oom kill: cgroup removed" test -z "$(ls "$cg" | grep "trainyard-$memhog")"
else
    ty_skip_part "oom kill: no writable memory cgroup here"
fi

# Preemption ends in its own state.
j=$(api GET "/v1/jobs/$spot")
check_eq "spot: state" preempted "$(echo "$j" | jq -r .state)"
check_eq "spot: reason" Preempted "$(echo "$j" | jq -r .reason)"
check_eq "spot: decision" preemption "$(api GET "/v1/jobs/$spot/diagnosis" | jq -r .decision.category)"

j=$(api GET "/v1/jobs/$nan")
check_eq "nan: reason" NaNLoss "$(echo "$j" | jq -r .reason)"
check_eq "nan: the nan sample is stored" nan "$(api GET "/v1/jobs/$nan/metrics?name=loss" | jq -r '.series[0].points[-1].value')"

# The diagnosis endpoint: shape, attempts, bad parameters, unknown job.
d=$(api GET "/v1/jobs/$cascade/diagnosis")
check "diagnosis shape" test "$(echo "$d" | jq '[has("summary","findings","findings_dropped","decision","attempts")] | all')" = true
check_eq "one attempt" 1 "$(echo "$d" | jq '.attempts | length')"
check_eq "attempt=0 is the same" cuda_oom "$(api GET "/v1/jobs/$cascade/diagnosis?attempt=0" | jq -r .summary.cause)"
check_eq "no attempt 3" 404 "$(status GET "/v1/jobs/$cascade/diagnosis?attempt=3")"
check_eq "bad attempt" 400 "$(status GET "/v1/jobs/$cascade/diagnosis?attempt=x")"
check_eq "unknown parameter" 400 "$(status GET "/v1/jobs/$cascade/diagnosis?bogus=1")"
check_eq "unknown job" 404 "$(status GET "/v1/jobs/nosuchjob/diagnosis")"
ok=$(job fine 'echo done')
wait_end "$ok"
check_eq "a good job has no summary" null "$(api GET "/v1/jobs/$ok/diagnosis" | jq .summary)"
check_eq "nor a first failure" null "$(api GET "/v1/jobs/$ok" | jq .first_failure)"
ty_done
