#!/bin/bash
# Stops what up.sh DIR started (scheduler, controller-manager, API server, then etcd: the
# reverse order) and removes DIR, or only the etcd data with --keep (logs stay for a look).
set -u
DIR=${1:?usage: down.sh DIR [--keep]}
[ -d "$DIR" ] || exit 0
if [ -f "$DIR/pids" ]; then
    pids=$(tac "$DIR/pids" | awk '{print $2}')
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    for _ in $(seq 1 50); do
        alive=0
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for p in $pids; do kill -KILL "$p" 2>/dev/null; done
    rm -f "$DIR/pids"
fi
if [ "${2:-}" = --keep ]; then
    rm -rf "$DIR/etcd" "$DIR/pv"
else
    rm -rf "$DIR"
fi
