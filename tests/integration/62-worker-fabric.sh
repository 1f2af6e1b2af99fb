#!/usr/bin/env bash
# Several ranks on one machine over libfabric's tcp provider (FI_TCP_IFACE=lo) and shm, meeting
# through a dir rendezvous: the preflight point-to-point test between 2 and 4 ranks, a rank
# that never comes named by the others, and the trainer with 2 and 4 ranks holding identical
# weights at the end (the same on both providers: the all-reduce is deterministic).
set -u
W="$TY_BUILD/trainyard-worker"
DATA="$TY_SRC/examples/corpus.txt"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
export FI_TCP_IFACE=lo MASTER_ADDR=127.0.0.1

# ranks PROVIDER WORLD ABSENT NAME CMD...: starts ranks 0..WORLD-1 except ABSENT, waits, writes
# $tmp/NAME.R.{out,err,rc}.
ranks() {
    local prov=$1 world=$2 absent=$3 name=$4 r pids=()
    shift 4
    for ((r = 0; r < world; r++)); do
        [ "$r" = "$absent" ] && continue
        FI_PROVIDER=$prov RANK=$r LOCAL_RANK=$r WORLD_SIZE=$world MASTER_PORT=29400 \
            TRAINYARD_RENDEZVOUS="dir:$tmp/rdzv-$name" "$W" "$@" \
            > "$tmp/$name.$r.out" 2> "$tmp/$name.$r.err" &
        pids[r]=$!
    done
    for r in "${!pids[@]}"; do
        wait "${pids[r]}"
        echo $? > "$tmp/$name.$r.rc"
    done
}

for world in 2 4; do
    ranks tcp $world -1 pf$world preflight --json --timeout 20s
    for ((r = 0; r < world; r++)); do
        [ "$(cat "$tmp/pf$world.$r.rc")" = 0 ] && ok || ko "preflight rank $r of $world failed"
    done
    n=$(jq '[.checks[] | select((.name | startswith("fabric.p2p.rank")) and .status == "pass")] | length' \
        "$tmp/pf$world.0.out")
    [ "$n" = $((world - 1)) ] && ok || ko "rank 0 measured $n peers of $((world - 1))"
    jq -e '.checks[] | select(.name == "fabric.p2p.rank1") | .data.bandwidth_gbps > 0 and .data.latency_us > 0' \
        "$tmp/pf$world.0.out" > /dev/null && ok || ko "no bandwidth/latency figures"
    jq -e '.checks[] | select(.name == "fabric.p2p") | .status == "pass"' "$tmp/pf$world.1.out" \
        > /dev/null && ok || ko "rank 1 did not answer"
done

# Rank 2 of 3 never starts: the others fail within the timeout and name it.
start=$(date +%s)
ranks tcp 3 2 missing preflight --json --timeout 3s
[ "$(cat "$tmp/missing.0.rc")" = 1 ] && ok || ko "preflight passed with a rank missing"
jq -e '.checks[] | select(.name == "fabric.p2p") | .status == "fail" and (.detail | contains("missing ranks [2]"))' \
    "$tmp/missing.0.out" > /dev/null && ok || ko "missing rank not named: $(grep -o 'missing[^"]*' "$tmp/missing.0.out")"
[ $(( $(date +%s) - start )) -lt 15 ] && ok || ko "missing rank took too long to report"

# The trainer: identical weights on every rank, 2 and 4 ranks, tcp and shm.
for run in "tcp 2" "tcp 4" "shm 2"; do
    set -- $run
    name="train-$1-$2"
    ranks "$1" "$2" -1 "$name" train --data "$DATA" --hidden 32 --batch 8 --steps 30 \
        --log-every 10 --timeout 20
    sums=$(cat "$tmp/$name".*.out | sed -n 's/.*weights sha256 //p' | sort -u)
    count=$(cat "$tmp/$name".*.out | grep -c 'weights sha256')
    [ "$count" = "$2" ] && [ "$(echo "$sums" | wc -l)" = 1 ] && ok ||
        ko "$name: $count ranks reported, weights: $(echo $sums)"
    grep -q "{'loss': " "$tmp/$name.0.out" && ok || ko "$name: rank 0 logged no loss"
    [ "$(grep -c "{'loss': " "$tmp/$name.1.out")" = 0 ] && ok || ko "$name: rank 1 logged too"
    echo "$sums" > "$tmp/$name.sum"
done
cmp -s "$tmp/train-tcp-2.sum" "$tmp/train-shm-2.sum" && ok || ko "tcp and shm runs differ"
cmp -s "$tmp/train-tcp-2.sum" "$tmp/train-tcp-4.sum" && ko "2 and 4 ranks gave the same weights" || ok

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
