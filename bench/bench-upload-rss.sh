#!/usr/bin/env bash
# The daemon's memory under stalled anonymous uploads (issue 17): N connections (480) each
# declare a 1 MiB body, send all of it but one byte, and stall. Two targets: POST /v1/jobs
# without a token (refused on its headers: nothing of the body is kept), and a hook URL without
# a signature (a hook delivery is authenticated on its body, so those are read, within a budget
# all anonymous uploads share). Prints the daemon's RSS at idle and above idle while the uploads
# stall and after they closed, for each build in turn (ROUNDS times, interleaved).
# Usage: bench/bench-upload-rss.sh [ROUNDS] BUILD_DIR...   (N=480 by default: N=... to change)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rounds_and_builds "$@"
token=ty_benchadmintoken0123456789abcdefghijk
n=${N:-480}
body=1048576

rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

# stall HOST PORT PATH: opens n connections that each send one upload but its last byte; leaves
# their descriptors in the array fds.
stall() {
    local host=$1 p=$2 path=$3 writers=() fd
    fds=()
    for _ in $(seq 1 "$n"); do
        exec {fd}<>"/dev/tcp/$host/$p"
        fds+=("$fd")
        { printf 'POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' "$path"
          printf 'Content-Length: %d\r\n\r\n' "$body"
          head -c $((body - 1)) /dev/zero | tr '\0' ' '; } >&"$fd" 2>/dev/null &
        writers+=($!)
    done
    for _ in $(seq 1 300); do # until each upload is sent, or refused (60 s at most)
        kill -0 "${writers[@]}" 2>/dev/null || break
        sleep 0.2
    done
    kill "${writers[@]}" 2>/dev/null || true
    wait "${writers[@]}" 2>/dev/null || true
}

unstall() {
    local fd
    for fd in "${fds[@]}"; do exec {fd}>&-; done
}

one_run() {
    local build=$1 work hostport host p idle trig during after
    work=$(mktemp -d /tmp/bench-upload-rss.XXXXXX)
    TRAINYARD_ADMIN_TOKEN=$token serve "$work" --per-ip-limit $((n + 64)) --timeout 120
    hostport=${url#http://}
    host=${hostport%:*}
    p=${hostport##*:}
    curl -sf -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d '{"name":"quiet","spec":{"name":"quiet","command":["true"]}}' "$url/v1/templates" >/dev/null
    trig=$(curl -sf -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d '{"name":"t","template":"quiet","sender":"s3","auth":{"mode":"hmac"}}' \
        "$url/v1/triggers" | jq -r .id)
    for _ in $(seq 1 200); do curl -s -o /dev/null "$url/healthz"; done
    sleep 1
    idle=$(rss_mb $pid)
    local target line=""
    for target in /v1/jobs "/v1/hooks/s3/$trig"; do
        stall "$host" "$p" "$target"
        sleep 1
        during=$(rss_mb $pid)
        unstall
        sleep 2
        after=$(rss_mb $pid)
        line="$line $(printf '%-12s +%6.1f MB stalled, +%6.1f MB after' "${target%%/s3/*}" \
            "$(echo "$during $idle" | awk '{print $1 - $2}')" "$(echo "$after $idle" | awk '{print $1 - $2}')")"
    done
    printf '%-28s idle %5.1f MB %s\n' "$build" "$idle" "$line"
    kill $pid
    wait $pid 2>/dev/null || true
    rm -rf "$work"
}

echo "build, RSS at idle; for $n stalled 1 MiB uploads to each target in turn: RSS above idle while they stall and once they closed"
for _ in $(seq 1 "$rounds"); do
    for b in "${builds[@]}"; do
        one_run "$b"
    done
done
