# Shared by the bench scripts: source "$(dirname "$0")/lib.sh" (after setting build=BUILD_DIR).
#
# serve DIR [serve flags...]: starts "$build/trainyard serve" on loopback (port $port, or a free
# one) with its data in DIR/data and its output in DIR/out and DIR/err; sets pid and url once it
# answers /readyz. Returns 1 if it has not after 30 s. Environment prefixes (the admin token)
# reach the daemon: TRAINYARD_ADMIN_TOKEN=$token serve "$work".
serve() {
    local dir=$1
    shift
    "$build/trainyard" serve --listen "127.0.0.1:${port:-0}" --data-dir "$dir/data" \
        --log-level warn "$@" >"$dir/out" 2>"$dir/err" &
    pid=$!
    for _ in $(seq 1 1500); do
        url=$(grep -o 'http://[0-9.:]*' "$dir/out" 2>/dev/null | head -1 || true)
        [ -n "$url" ] && curl -sf "$url/readyz" >/dev/null 2>&1 && return 0
        sleep 0.02
    done
    return 1
}

# cpu_ticks: "STEAL TOTAL" CPU ticks from /proc/stat. Steal is the time our vCPUs were ready but
# the hypervisor ran someone else; on a shared machine it explains most of the spread between
# runs. Usage: t=$(cpu_ticks); ...; steal_since "$t"   (prints e.g. "13%")
cpu_ticks() { awk '/^cpu / {print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
steal_since() { echo "$1 $(cpu_ticks)" | awk '{printf "%.0f%%", ($4 > $2) ? 100 * ($3 - $1) / ($4 - $2) : 0}'; }

# rounds_and_builds [ROUNDS] [BUILD...]: the arguments of the scripts that compare builds in
# interleaved rounds; sets rounds (default 3) and the array builds (default $TY_BUILD or build/).
rounds_and_builds() {
    rounds=3
    if [[ ${1:-} =~ ^[0-9]+$ ]]; then
        rounds=$1
        shift
    fi
    builds=("${@:-${TY_BUILD:-$here/../build}}")
}
