#!/usr/bin/env bash
# trainyard logs: pages, filters (--rank, --grep, --tail, --stream), and `logs -f` across a
# kill -9 of the daemon and a restart on the same port: every sequence-numbered line is printed
# exactly once, in order, by a text follower and by an NDJSON follower.
source "$(dirname "$0")/lib.sh"
ty_start
export TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN XDG_CONFIG_HOME=$WORK/xdg HOME=$WORK
unset TRAINYARD_CONFIG TRAINYARD_OUTPUT TRAINYARD_CACERT TRAINYARD_RETRY_FOR
ty() { "$TRAINYARD" "$@"; }

# A finished job: 2 ranks, 1500 lines each (more than one page), some on stderr.
id=$(ty submit - <<<'{"name":"pages","command":["sh","-c","i=1; while [ $i -le 1500 ]; do echo \"r$RANK n$i\"; i=$((i+1)); done; echo \"warn from $RANK\" >&2"],"procs_per_node":2}')
wait_state "$id" succeeded
wait_logs_complete "$id"
ty logs "$id" >"$WORK/all.txt"
check_eq "all lines of all ranks (pages joined)" 3002 "$(wc -l <"$WORK/all.txt")"
check_eq "none twice" 3002 "$(sort -u "$WORK/all.txt" | wc -l)"
check_eq "rank 1's lines in order" "$(seq 1 1500 | sed 's/^/[rank 1] r1 n/')" "$(grep '^\[rank 1\] r1 n' "$WORK/all.txt")"
check_eq "--rank 1" 1501 "$(ty logs "$id" --rank 1 | grep -c '^\[rank 1\]')"
check_eq "--tail 3" "[rank 0] r0 n1500
[rank 0] warn from 0" "$(ty logs "$id" --rank 0 --tail 2)"
check_eq "--stream stderr" 2 "$(ty logs "$id" --stream stderr | grep -c 'warn from')"
check_eq "--grep finds words" "[rank 1] r1 n777" "$(ty logs "$id" --grep n777 --rank 1)"
check "--timestamps" grep -Eq '^20[0-9-]+T[0-9:.]+Z \[rank 0\] r0 n1500$' <<<"$(ty logs "$id" -t --tail 1 --rank 0 --stream stdout)"
ty logs "$id" -o json >"$WORK/all.ndjson"
check "-o json: every line a LogLine" jq -e -s 'length == 3002 and all(.[]; .seq > 0 and (.rank == 0 or .rank == 1) and (.line | type) == "string")' "$WORK/all.ndjson"
check_eq "-o json: sequence numbers unique and increasing" "$(jq .seq "$WORK/all.ndjson" | sort -n | paste -sd,)" "$(jq .seq "$WORK/all.ndjson" | paste -sd,)"
ty logs "$id" --rank 7 >/dev/null 2>"$WORK/e"
check_eq "a rank the job does not have: exit 8" 8 $?
check "the API's message is shown" grep -q "rank" "$WORK/e"
ty logs "$id" --tail x >/dev/null 2>&1
check_eq "--tail not a number: exit 2" 2 $?

# logs -f across kill -9 and a restart on the same port.
PRINT='i=1; while [ $i -le 400 ]; do echo "rank $RANK line $i"; i=$((i+1)); sleep 0.01; done'
id=$(ty submit - --set "command=$(jq -cn --arg s "$PRINT" '["sh","-c",$s]')" <<<'{"name":"follow-k9","procs_per_node":2}')
wait_state "$id" running
ty logs "$id" -f >"$WORK/f.txt" 2>"$WORK/f.err" &
f1=$!
ty logs "$id" -f -o json >"$WORK/f.ndjson" 2>/dev/null &
f2=$!
sleep 1.5
ty_kill9
sleep 1
ty_restart
check "text follower ends with the job" wait $f1
check "json follower ends with the job" wait $f2
check "the follower said it resumed" grep -q "resuming after line" "$WORK/f.err"
expected=$( (seq 1 400 | sed 's/^/[rank 0] rank 0 line /'; seq 1 400 | sed 's/^/[rank 1] rank 1 line /') | sort)
check_eq "across kill -9: every line once (text)" "$expected" "$(sort "$WORK/f.txt")"
check_eq "rank 0 in order" "$(seq 1 400 | sed 's/^/[rank 0] rank 0 line /')" "$(grep '^\[rank 0\]' "$WORK/f.txt")"
check_eq "across kill -9: 800 sequence numbers (json)" 800 "$(jq .seq "$WORK/f.ndjson" | sort -un | wc -l)"
check_eq "across kill -9: none twice (json)" 800 "$(wc -l <"$WORK/f.ndjson")"
check_eq "across kill -9: in sequence order (json)" "$(jq .seq "$WORK/f.ndjson" | sort -n | paste -sd,)" "$(jq .seq "$WORK/f.ndjson" | paste -sd,)"

# -f --tail N starts with the last N lines of a finished job and ends.
check_eq "-f --tail 2 on a finished job" "[rank 1] rank 1 line 399
[rank 1] rank 1 line 400" "$(ty logs "$id" -f --tail 2 --rank 1)"
ty_done
