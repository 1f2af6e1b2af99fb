#!/usr/bin/env bash
# examples/: the job spec in JSON and YAML say the same, and the job it describes runs: its
# command, args and env, launched as procs_per_node local ranks the way the local executor
# does (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TRAINYARD_CHECKPOINT_DIR), trains
# and ends with the same weights on every rank. Steps are cut down to keep the test short.
set -u
E="$TY_SRC/examples"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

jq -S . "$E/reference-trainer.json" > "$tmp/json" && ok || ko "JSON spec does not parse"
yq -S . "$E/reference-trainer.yaml" > "$tmp/yaml" 2>/dev/null && ok || ko "YAML spec does not parse"
cmp -s "$tmp/json" "$tmp/yaml" && ok || { ko "JSON and YAML specs differ"; diff "$tmp/json" "$tmp/yaml" >&2; }
for f in name command args env nodes procs_per_node resources restart labels; do
    jq -e "has(\"$f\")" "$tmp/json" > /dev/null || ko "spec has no $f"
done
ok
[ "$(jq -r '.command[0]' "$tmp/json")" = trainyard-worker ] && ok || ko "not the reference trainer"
[ -s "$E/corpus.txt" ] && [ "$(stat -c %s "$E/corpus.txt")" -lt 400000 ] && ok || ko "corpus size"

spec="$tmp/json"
n=$(jq -r '.procs_per_node * .nodes' "$spec")
mapfile -t cmd < <(jq -r '.command[1:][], .args[]' "$spec")
mapfile -t envs < <(jq -r '.env | to_entries[] | "\(.key)=\(.value)"' "$spec")
pids=()
for ((r = 0; r < n; r++)); do
    env "${envs[@]}" RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=29450 TRAINYARD_RENDEZVOUS="dir:$tmp/rdzv" \
        TRAINYARD_CHECKPOINT_DIR="$tmp/ckpt" TRAINYARD_DATA="$E/corpus.txt" \
        "$TY_BUILD/trainyard-worker" "${cmd[@]}" --steps 20 --hidden 32 --batch 8 \
        > "$tmp/out.$r" 2> "$tmp/err.$r" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || ko "a rank failed: $(tail -1 "$tmp"/err.*)"; done
[ "$(cat "$tmp"/out.* | sed -n 's/.*weights sha256 //p' | sort -u | wc -l)" = 1 ] &&
    [ "$(cat "$tmp"/out.* | grep -c 'weights sha256')" = "$n" ] && ok || ko "ranks disagree"
ls "$tmp/ckpt" | grep -q '^ckpt-0000000020.bin$' && ok || ko "no checkpoint in TRAINYARD_CHECKPOINT_DIR"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
