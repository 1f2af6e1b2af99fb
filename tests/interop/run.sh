#!/usr/bin/env bash
# Cross-checks trainyard's signatures with independent npm implementations. Called by
# tests/unit/test_trigger_interop.c, which writes the vectors into DIR and serves the SNS test
# certificate over HTTPS at HOST:
#   tests/interop/run.sh DIR HOST CA_FILE
# Exit status: 0 all agree, 1 a disagreement, 77 cannot run here (no node/npm, npm ci failed).
set -uo pipefail
dir=$1 host=$2 ca=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null && command -v npm >/dev/null || { echo "interop: node/npm missing"; exit 77; }
if [ ! -d "$here/node_modules/standardwebhooks" ] || [ ! -d "$here/node_modules/sns-validator" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
        { echo "interop: npm ci failed (registry unreachable?)"; exit 77; }
fi
cd "$here" || exit 1
rc=0
node sw-check.js "$dir" || rc=1
NODE_EXTRA_CA_CERTS="$ca" node sns-check.js "$dir" "$host" || rc=1
exit $rc
