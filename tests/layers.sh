#!/usr/bin/env bash
# The include graph between folders points one way (docs/architecture.md): each folder may
# include its own headers and those of the folders listed after it, nothing else. A new arrow
# is a design decision: add it here, in the same commit, with the reason in the commit message.
cd "$(dirname "$0")/.."
declare -A may=(
    [core]=""
    [job]="core"
    [store]="core job"
    [trigger]="core job"
    [api]="core job store trigger"
    [server/diag]="core"
    [server/cli]="core"
    [server/http]="core api"
    [server/ingest]="core job store"
    [server/health]="core job store server/diag"
    [server/control]="core job store api server/diag server/health"
    [server/local]="core job store server/control server/ingest"
    [server/kube]="core job store server/control server/ingest server/diag"
    [server/outbound]="core job store trigger api"
    [server/daemon]="core job store trigger api server/diag server/cli server/http server/ingest server/health server/control server/local server/kube server/outbound"
    [worker]="core"
)
fails=0 checked=0
for dir in "${!may[@]}"; do
    for f in $(git ls-files "$dir/*.c" "$dir/*.h"); do
        [ "$(dirname "$f")" = "$dir" ] || continue
        checked=$((checked + 1))
        while read -r inc; do
            to=$(dirname "$inc")
            [ "$to" = "$dir" ] && continue
            case " ${may[$dir]} " in *" $to "*) continue ;; esac
            echo "FAIL $f includes $inc: $dir may include only: ${may[$dir]:-nothing outside it}"
            fails=$((fails + 1))
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
    done
done
# Every source folder is in the table, so a new one gets a place in the order.
for f in $(git ls-files '*.c' | grep -v '^tests/\|^bench/'); do
    d=$(dirname "$f")
    [ -n "${may[$d]+x}" ] || { echo "FAIL $d has no place in tests/layers.sh"; fails=$((fails + 1)); }
done
echo "$checked files checked; $((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
