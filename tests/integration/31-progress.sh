#!/usr/bin/env bash
# Progress and metrics from the ranks' log lines: a 2-rank job printing Hugging Face Trainer
# dicts and a tqdm bar shows its step, total, loss, throughput and ETA in the job while it
# runs and in /metrics per running job; afterwards GET /metrics serves the series by name and
# rank, downsampled on request; and the reference trainer's real output gives the same.
source "$(dirname "$0")/lib.sh"
ty_start

# 40 steps, 0.1 s each; a tqdm bar on stderr, the loss every 5 steps on stdout (rank 1's loss
# is 0.01 higher).
TRAIN='for i in $(seq 1 40); do
  printf "\r%3d%%|###| %d/40 [00:01<00:04, 10.00it/s]" $((i * 100 / 40)) $i >&2
  if [ $((i % 5)) = 0 ]; then
    v=$((300 - i * 5 + RANK)); printf "{'"'"'loss'"'"': %d.%02d, '"'"'learning_rate'"'"': 5e-05, '"'"'epoch'"'"': 0.%02d}\n" $((v / 100)) $((v % 100)) $i
  fi
  sleep 0.25
done
printf "\n" >&2
echo "{'"'"'train_runtime'"'"': 4.0, '"'"'train_samples_per_second'"'"': 80.0, '"'"'train_steps_per_second'"'"': 10.0, '"'"'train_loss'"'"': 2.4, '"'"'epoch'"'"': 1.0}"'
id=$(submit "{\"name\":\"hf\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$TRAIN" '$s')],\"procs_per_node\":2}" | jq -r .id)
wait_state "$id" running
# Wait until the progress shows (a tqdm snapshot is stored at most once per second).
for _ in $(seq 1 40); do
    j=$(api GET "/v1/jobs/$id")
    [ "$(echo "$j" | jq '.progress.step // 0')" -ge 10 ] && [ "$(echo "$j" | jq '.progress.loss != null')" = true ] && break
    sleep 0.1
done
p=$(echo "$j" | jq .progress)
check "running: step" test "$(echo "$p" | jq .step)" -ge 10
check_eq "running: total steps" 40 "$(echo "$p" | jq .total_steps)"
check "running: loss" test "$(echo "$p" | jq '.loss >= 1 and .loss < 3')" = true
check_eq "running: throughput from tqdm" "10 it/s" "$(echo "$p" | jq -r '"\(.throughput) \(.throughput_unit)"')"
check "running: ETA" test "$(echo "$p" | jq '.eta_seconds > 0')" = true
check_eq "running: not stalled" false "$(echo "$j" | jq .stalled)"
check_eq "running: the format is the framework's, not its tqdm bar's" hf "$(echo "$p" | jq -r .format)"
check "running: the epoch of the last dict" test "$(echo "$p" | jq '.epoch > 0 and .epoch < 1')" = true
m=$(api GET /metrics)
check "per-job step in /metrics" grep -q "^trainyard_job_step{job_id=\"$id\",job_name=\"hf\"} [0-9]" <<<"$m"
check "per-job loss in /metrics" grep -qE "^trainyard_job_loss\{job_id=\"$id\",job_name=\"hf\"\} [12](\.[0-9]+)?$" <<<"$m"
check "per-job throughput in /metrics" grep -q "^trainyard_job_throughput{job_id=\"$id\",job_name=\"hf\",unit=\"it/s\"} 10" <<<"$m"
list=$(api GET "/v1/jobs?name=hf")
check "progress in the job list" test "$(echo "$list" | jq '.items[0].progress.step >= 10')" = true

check "finishes" wait_state "$id" succeeded
j=$(api GET "/v1/jobs/$id")
check_eq "finished: last step" 40 "$(echo "$j" | jq .progress.step)"
check_eq "finished: flag" true "$(echo "$j" | jq .progress.finished)"
check_eq "finished: no time left" 0 "$(echo "$j" | jq .progress.eta_seconds)"
check_eq "finished: the last loss printed (1.00 or 1.01), not the summary's mean train_loss" true "$(echo "$j" | jq '.progress.loss < 1.1')"
check "per-job series leave /metrics with the job" test -z "$(api GET /metrics | grep "job_id=\"$id\"")"

# A job that ends before its bar does (fewer epochs than planned, an early stop) has succeeded:
# finished, nothing left to wait for.
early=$(job early 'printf " 50%%|#####     | 20/40 [00:02<00:02, 10.00it/s]\n" >&2; sleep 0.5')
check "early stop succeeds" wait_state "$early" succeeded
check_eq "early stop: finished, no ETA" "true 0" "$(api GET "/v1/jobs/$early" | jq -r '"\(.progress.finished) \(.progress.eta_seconds)"')"

# The series.
all=$(api GET "/v1/jobs/$id/metrics")
check_eq "loss for both ranks" "0,1" "$(echo "$all" | jq -r '[.series[] | select(.name=="loss") | .rank] | map(tostring) | join(",")')"
loss1=$(api GET "/v1/jobs/$id/metrics?name=loss&rank=1")
check_eq "one series" 1 "$(echo "$loss1" | jq '.series | length')"
check_eq "8 points" 8 "$(echo "$loss1" | jq '.series[0].points | length')"
check_eq "rank 1 values" "2.76 1.51 1.01" "$(echo "$loss1" | jq -r '[.series[0].points[0,5,-1].value] | map(tostring) | join(" ")')"
# Dict lines carry no step: theirs is the rank's bar, whose redraws are kept once a second, so
# it trails by at most a second's worth of steps (10 here).
check_eq "steps from the bar" true "$(echo "$loss1" | jq '[.series[0].points | to_entries[] | (.key + 1) * 5 - .value.step] | all(. >= 0 and . <= 11)')"
check "steps never go back" test "$(echo "$loss1" | jq '[.series[0].points[].step] | . == sort')" = true
check "summary metrics kept" test "$(echo "$all" | jq '[.series[] | select(.name=="train_runtime")] | length')" = 2
d=$(api GET "/v1/jobs/$id/metrics?name=loss&rank=0&downsample=3")
check_eq "downsampled" true "$(echo "$d" | jq .series[0].downsampled)"
check "at most 3 buckets" test "$(echo "$d" | jq '.series[0].points | length')" -le 3
check_eq "buckets hold every point" 8 "$(echo "$d" | jq '[.series[0].points[].count] | add')"
check_eq "first bucket's max" 2.75 "$(echo "$d" | jq '.series[0].points[0].max')"
check_eq "last bucket's min" 1 "$(echo "$d" | jq '.series[0].points[-1].min')"
t4=$(echo "$loss1" | jq -r '.series[0].points[4].time')
check_eq "since" 4 "$(api GET "/v1/jobs/$id/metrics?name=loss&rank=1&since=$t4" | jq '.series[0].points | length')"
check_eq "until" 4 "$(api GET "/v1/jobs/$id/metrics?name=loss&rank=1&until=$t4" | jq '.series[0].points | length')"
check_eq "bad rank" 400 "$(status GET "/v1/jobs/$id/metrics?rank=2")"
check_eq "bad downsample" 400 "$(status GET "/v1/jobs/$id/metrics?downsample=0")"
check_eq "bad since" 400 "$(status GET "/v1/jobs/$id/metrics?since=yesterday")"
check_eq "unknown parameter" 400 "$(status GET "/v1/jobs/$id/metrics?step=1")"

# The reference trainer (real output of trainyard-worker train).
W="$TY_BUILD/trainyard-worker"
if [ -x "$W" ]; then
    spec=$(jq -n --arg w "$W" --arg data "$TY_SRC/examples/corpus.txt" --arg ck "$WORK/ck" \
        '{name:"ref", command:[$w,"train","--steps","60","--log-every","10","--data",$data], checkpoint:{path:$ck}}')
    ref=$(submit "$spec" | jq -r .id)
    check "reference trainer succeeds" wait_state "$ref" succeeded 60
    j=$(api GET "/v1/jobs/$ref")
    check_eq "reference: total" 60 "$(echo "$j" | jq .progress.total_steps)"
    check_eq "reference: step" 60 "$(echo "$j" | jq .progress.step)"
    check_eq "reference: finished" true "$(echo "$j" | jq .progress.finished)"
    r=$(api GET "/v1/jobs/$ref/metrics")
    check_eq "reference: loss every 10 steps" "10 20 30 40 50 60" "$(echo "$r" | jq -r '[.series[] | select(.name=="loss") | .points[].step] | map(tostring) | join(" ")')"
    check_eq "reference: eval_loss" 1 "$(echo "$r" | jq '[.series[] | select(.name=="eval_loss") | .points[]] | length')"
    check "reference: loss falls" test "$(echo "$r" | jq '[.series[] | select(.name=="loss") | .points[].value] | .[0] > .[-1]')" = true
else
    ty_skip_part "no trainyard-worker in $TY_BUILD"
fi
ty_done
