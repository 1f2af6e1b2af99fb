#!/usr/bin/env bash
# Browser test of the embedded web page: Debian's Chromium driven by playwright-core (npm),
# against the real daemon in $TY_BUILD. Run by ctest (tests/web/CMakeLists.txt) or by hand:
#   TY_BUILD=build-test tests/web/run.sh
# Exit status: 0 passed, 1 failed, 77 cannot run here (no node/npm/chromium, npm ci failed).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export TY_BUILD=${TY_BUILD:-$here/../../build}
command -v node >/dev/null && command -v npm >/dev/null || { echo "web: node/npm missing (make test-deps)"; exit 77; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "web: /usr/bin/chromium missing (make test-deps)"; exit 77; }
[ -x "$TY_BUILD/trainyard" ] || { echo "web: no daemon at $TY_BUILD/trainyard"; exit 1; }
if [ ! -d "$here/node_modules/playwright-core" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
        { echo "web: npm ci failed (registry unreachable?)"; exit 77; }
fi
exec node "$here/web.test.js"
