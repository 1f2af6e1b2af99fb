#!/usr/bin/env bash
# Logs of every rank: merged in order and complete, rank-tagged, filtered, paged, searched with
# context, messy output handled on purpose, retention.
source "$(dirname "$0")/lib.sh"
ty_start --log-max-bytes 200Ki

# Four ranks print interleaved numbered lines.
PRINT='for i in $(seq 1 250); do echo "rank=$RANK i=$i"; done; echo "rank=$RANK to stderr" >&2'
id=$(submit "{\"name\":\"four\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$PRINT" '$s')],\"procs_per_node\":4}" | jq -r .id)
wait_state "$id" succeeded
wait_logs_complete "$id"
all=$(api GET "/v1/jobs/$id/logs?format=ndjson&limit=5000")
check_eq "every line of every rank" 1004 "$(echo "$all" | jq -s length)"
check_eq "sequence numbers 1..N" "1004" "$(echo "$all" | jq -s '[.[].seq] | . == [range(1;1005)] | if . then 1004 else 0 end')"
for r in 0 1 2 3; do
    order=$(echo "$all" | jq -r "select(.rank==$r and .stream==\"stdout\") | .line" | sed 's/.*i=//' | paste -sd, )
    check_eq "rank $r lines in order" "$(seq 1 250 | paste -sd,)" "$order"
done
check_eq "line tagged with its rank" "rank=2 i=7" "$(echo "$all" | jq -r 'select(.rank==2) | .line' | sed -n 7p)"
check_eq "text format prefixes the rank" "[rank 1] rank=1 i=1" "$(api GET "/v1/jobs/$id/logs?rank=1&limit=1")"
check_eq "rank range filter" "1,2,3" "$(api GET "/v1/jobs/$id/logs?rank=1-3&format=ndjson&limit=5000" | jq -s -r 'map(.rank) | unique | map(tostring) | join(",")')"
check_eq "stream filter" 4 "$(api GET "/v1/jobs/$id/logs?stream=stderr&format=ndjson" | jq -s length)"
check_eq "tail" "rank=3 to stderr" "$(api GET "/v1/jobs/$id/logs?tail=1&rank=3&format=ndjson" | jq -r .line)"
page=$(curl -s -D "$WORK/h" -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs?limit=100&format=ndjson")
next=$(grep -i '^Trainyard-Next-After:' "$WORK/h" | tr -dc 0-9)
check_eq "a page ends at its limit" 100 "$(echo "$page" | jq -s length)"
check_eq "next page starts after it" "$((next + 1))" "$(api GET "/v1/jobs/$id/logs?after=$next&limit=1&format=ndjson" | jq .seq)"
check_eq "before pages backward" "$(seq 41 50 | paste -sd,)" "$(api GET "/v1/jobs/$id/logs?before=51&limit=10&format=ndjson" | jq -s -r 'map(.seq|tostring) | join(",")')"
mid=$(echo "$all" | jq -r 'select(.seq==500) | .time')
since=$(api GET "/v1/jobs/$id/logs?since=$mid&format=ndjson&limit=5000")
check_eq "since keeps lines from then on" 0 "$(echo "$since" | jq -s --arg t "$mid" 'map(select(.time < $t)) | length')"
check_eq "since drops only earlier lines" "$(echo "$all" | jq -s --arg t "$mid" 'map(select(.time >= $t)) | length')" "$(echo "$since" | jq -s length)"
check_eq "q filter" 4 "$(api GET "/v1/jobs/$id/logs?q=stderr&format=ndjson" | jq -s length)"
check_eq "bad rank parameter" 400 "$(status GET "/v1/jobs/$id/logs?rank=9")"
check_eq "unknown parameter" 400 "$(status GET "/v1/jobs/$id/logs?colour=red")"
check_eq "bad since" 400 "$(status GET "/v1/jobs/$id/logs?since=yesterday")"
check "400 names the parameter" grep -q "rank" <<<"$(api GET "/v1/jobs/$id/logs?rank=x" | jq -r .detail)"
dl=$(curl -s -D "$WORK/dh" -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs/download?rank=0")
check_eq "download has every line of the rank" 251 "$(echo "$dl" | wc -l)"
check "download is an attachment" grep -qi 'Content-Disposition: attachment' "$WORK/dh"

# Search with context.
id2=$(submit '{"name":"nccl","command":["sh","-c","for i in 1 2 3 4 5 6; do echo step $i; done; echo \"NCCL WARN Call to ibv_reg_mr failed\"; echo after-1; echo after-2"]}' | jq -r .id)
wait_state "$id2" succeeded
wait_logs_complete "$id2"
s=$(api GET "/v1/jobs/$id2/logs/search?q=nccl+%22reg_mr+failed%22&context=2")
check_eq "search finds the line" "NCCL WARN Call to ibv_reg_mr failed" "$(echo "$s" | jq -r '.matches[0].line')"
check_eq "context before" "step 5,step 6" "$(echo "$s" | jq -r '.matches[0].before | map(.line) | join(",")')"
check_eq "context after" "after-1,after-2" "$(echo "$s" | jq -r '.matches[0].after | map(.line) | join(",")')"
check_eq "spans for highlighting" "[0,4]" "$(echo "$s" | jq -c '.matches[0].spans[0]')"
check_eq "whole words only" 0 "$(api GET "/v1/jobs/$id2/logs/search?q=ncc" | jq '.matches | length')"
check_eq "search needs q" 400 "$(status GET "/v1/jobs/$id2/logs/search")"

# Messy output: a tqdm bar, a 1 MiB line, invalid UTF-8 and NUL, ANSI colours.
MESSY='for i in $(seq 0 100); do printf "\r%3d%%|bar| %d/100" $i $i; sleep 0.015; done; printf "\n";
head -c 1048576 /dev/zero | tr "\0" x; echo;
printf "bad \377 byte and nul \000 here\n"; printf "\033[31mred\033[0m\n"'
id3=$(submit "{\"name\":\"messy\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$MESSY" '$s')]}" | jq -r .id)
wait_state "$id3" succeeded
wait_logs_complete "$id3"
m=$(api GET "/v1/jobs/$id3/logs?format=ndjson")
check "redraws are not stored one by one" test "$(echo "$m" | jq -s length)" -lt 10
check_eq "final progress line kept" "100%|bar| 100/100" "$(echo "$m" | jq -r 'select(.progress != true) | .line' | head -1)"
check "progress snapshots are marked" test "$(echo "$m" | jq -s 'map(select(.progress == true)) | length')" -ge 1
long=$(echo "$m" | jq -r 'select(.line|startswith("xxx")) | .line')
check "long line capped" test "${#long}" -lt 70000
check "truncation is visible" grep -q '983040 bytes truncated' <<<"$long"
check_eq "invalid UTF-8 and NUL shown escaped" 'bad \xff byte and nul \x00 here' "$(echo "$m" | jq -r 'select(.line|startswith("bad")) | .line')"
check_eq "ANSI kept raw" $'\e[31mred\e[0m' "$(echo "$m" | jq -r 'select(.line|contains("red")) | .line')"
check_eq "ANSI stripped on request" red "$(api GET "/v1/jobs/$id3/logs?format=ndjson&strip_ansi=true&q=red" | jq -r .line)"
check_eq "text format escapes too" '[rank 0] bad \xff byte and nul \x00 here' "$(api GET "/v1/jobs/$id3/logs?q=bad")"

# Retention: a job over --log-max-bytes loses its oldest lines, and says so.
BIG='for i in $(seq 1 6000); do echo "retention line $i padded to be long enough to count ........"; done'
id4=$(submit "{\"name\":\"big\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$BIG" '$s')]}" | jq -r .id)
wait_state "$id4" succeeded
wait_logs_complete "$id4"
for _ in $(seq 1 150); do
    dropped=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id4/logs?limit=1" | grep -i '^Trainyard-Dropped-Lines' | tr -dc 0-9)
    [ -n "$dropped" ] && break
    sleep 0.1
done
check "oldest lines dropped and reported" test "${dropped:-0}" -gt 0
first=$(api GET "/v1/jobs/$id4/logs?limit=1&format=ndjson" | jq .seq)
check_eq "reading starts after the dropped lines" "$((dropped + 1))" "$first"
check_eq "newest lines kept" "retention line 6000 padded to be long enough to count ........" "$(api GET "/v1/jobs/$id4/logs?tail=1&format=ndjson" | jq -r .line)"
check_eq "before pages backward across blocks" "4500 5999 1500" "$(api GET "/v1/jobs/$id4/logs?before=6000&limit=1500&format=ndjson" | jq -s -r '"\(.[0].seq) \(.[-1].seq) \(length)"')"
ty_done
