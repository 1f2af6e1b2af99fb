#!/usr/bin/env bash
# trainyard-worker train: the loss falls, checkpoints are written atomically, a run killed with
# SIGKILL and restarted resumes from its newest checkpoint with the same loss curve and the same
# final weights as an uninterrupted run, SIGTERM saves a checkpoint and exits 143, and the seed
# decides everything.
set -u
W="$TY_BUILD/trainyard-worker"
DATA="$TY_SRC/examples/corpus.txt"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
SMALL=(--data "$DATA" --hidden 64 --batch 16 --log-every 10)
train() { "$W" train "${SMALL[@]}" "$@"; }
losses() { grep -o "'loss': [0-9.]*.*'step': [0-9]*" "$1"; }
sha() { sed -n 's/.*weights sha256 //p' "$1"; }

# A: uninterrupted.
train --steps 300 --checkpoint-dir "$tmp/a" --checkpoint-every 50 > "$tmp/a.log" 2>/dev/null
[ $? -eq 0 ] && ok || ko "uninterrupted run failed"
first=$(losses "$tmp/a.log" | head -1 | sed "s/'loss': \([0-9.]*\).*/\1/")
last=$(losses "$tmp/a.log" | tail -1 | sed "s/'loss': \([0-9.]*\).*/\1/")
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 3.5 && l < f - 1.0) }' && ok ||
    ko "loss did not fall: $first -> $last"
grep -q "{'train_runtime': .*'train_loss': " "$tmp/a.log" && ok || ko "no train summary"
grep -q "{'eval_loss': " "$tmp/a.log" && ok || ko "no eval line"
[ "$(ls "$tmp/a" | grep -c '^ckpt-')" = 3 ] && ok || ko "expected 3 checkpoints kept"
[ -z "$(ls -A "$tmp/a" | grep tmp)" ] && ok || ko "temporary files left behind"

# B: killed hard after its checkpoint at step 100 (or later), then restarted.
# (started directly, not through the function, so that $! is the trainer itself)
"$W" train "${SMALL[@]}" --steps 300 --checkpoint-dir "$tmp/b" --checkpoint-every 50 \
    > "$tmp/b1.log" 2>/dev/null &
pid=$!
for _ in $(seq 600); do ls "$tmp/b" 2>/dev/null | grep -q 'ckpt-0000000100' && break; sleep 0.02; done
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
train --steps 300 --checkpoint-dir "$tmp/b" --checkpoint-every 50 > "$tmp/b2.log" 2>"$tmp/b2.err"
[ $? -eq 0 ] && ok || ko "restarted run failed"
from=$(sed -n 's/.*resumed from .* at step \([0-9]*\)/\1/p' "$tmp/b2.err")
[ -n "$from" ] && [ "$from" -ge 100 ] && [ "$from" -lt 300 ] && ok || ko "did not resume (step '$from')"
losses "$tmp/a.log" | awk -v f="${from:-0}" -F"'step': " '$2 > f' > "$tmp/a.tail"
losses "$tmp/b2.log" > "$tmp/b.tail"
[ -s "$tmp/b.tail" ] && cmp -s "$tmp/a.tail" "$tmp/b.tail" && ok ||
    { ko "resumed loss curve differs"; diff "$tmp/a.tail" "$tmp/b.tail" | head -5 >&2; }
[ -n "$(sha "$tmp/a.log")" ] && [ "$(sha "$tmp/a.log")" = "$(sha "$tmp/b2.log")" ] && ok ||
    ko "resumed run ends with other weights"

# The seed decides the weights.
train --steps 20 --seed 7 > "$tmp/s1.log" 2>/dev/null
train --steps 20 --seed 7 > "$tmp/s2.log" 2>/dev/null
train --steps 20 --seed 8 > "$tmp/s3.log" 2>/dev/null
[ "$(sha "$tmp/s1.log")" = "$(sha "$tmp/s2.log")" ] && ok || ko "same seed, other weights"
[ "$(sha "$tmp/s1.log")" != "$(sha "$tmp/s3.log")" ] && ok || ko "other seed, same weights"

# SIGTERM: stop after the current step, save it, exit 128+15; a restart picks it up.
"$W" train "${SMALL[@]}" --steps 1000000 --checkpoint-dir "$tmp/c" --checkpoint-every 0 \
    > /dev/null 2>"$tmp/c.err" &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/c.err" ] && break; sleep 0.05; done # training has begun
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] && ok || ko "SIGTERM exit status $rc"
stopped=$(sed -n 's/.*stopping after step \([0-9]*\).*/\1/p' "$tmp/c.err")
[ -n "$stopped" ] && [ -e "$tmp/c/ckpt-$(printf %010d "$stopped").bin" ] && ok ||
    ko "no checkpoint of the step it stopped at ($stopped)"
train --steps $(( ${stopped:-0} + 5 )) --checkpoint-dir "$tmp/c" > /dev/null 2>"$tmp/c2.err"
grep -q "at step ${stopped:-x}\$" "$tmp/c2.err" && ok || ko "restart after SIGTERM did not resume"

# A checkpoint of another configuration is refused, not silently mixed in.
train --steps 310 --hidden 32 --checkpoint-dir "$tmp/a" > /dev/null 2>"$tmp/d.err"
[ $? -ne 0 ] && grep -q "another corpus, model" "$tmp/d.err" && ok || ko "foreign checkpoint accepted"
"$W" train --steps 0 2>/dev/null; [ $? -ne 0 ] && ok || ko "--steps 0 accepted"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
