#!/usr/bin/env bash
# The whole tree is formatted with the pinned .clang-format (clang-format 14): `make format`.
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build*')
bad=$(echo "$files" | xargs clang-format --dry-run 2>&1 | grep -o '^[^:]*:' | sort -u)
if [ -n "$bad" ]; then
    echo "not formatted (run make format):"
    echo "$bad"
    exit 1
fi
echo "1 passed, 0 failed"
