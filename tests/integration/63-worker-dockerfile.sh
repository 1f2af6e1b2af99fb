#!/usr/bin/env bash
# The Dockerfile: lints clean with dockerfilelint (from npm; the linter is shown to reject a bad
# file too), has the daemon on slim Debian and the worker on NVIDIA's CUDA devel/runtime images
# with the EFA installer, builds with the same cmake commands as the Makefile, installs every
# build package the Makefile lists, and wraps the pod command in trainyard-worker.
set -u
D="$TY_SRC/Dockerfile"
tools="$TY_BUILD/npm-tools"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

lint="$tools/node_modules/.bin/dockerfilelint"
if [ ! -x "$lint" ]; then
    npm install --silent --no-audit --no-fund --prefix "$tools" dockerfilelint@1.8.0 >/dev/null 2>&1
fi
if [ -x "$lint" ]; then
    "$lint" "$D" > "$tmp/lint" 2>&1 && ok || { ko "dockerfilelint:"; cat "$tmp/lint" >&2; }
    printf 'FROM debian\nRUN apt-get install curl\nADD x.tar.gz /\n' > "$tmp/Dockerfile.bad"
    "$lint" "$tmp/Dockerfile.bad" > /dev/null 2>&1 && ko "the linter accepts anything" || ok
else
    ko "dockerfilelint could not be installed from npm"
fi

stage() { awk -v s="$1" '/^FROM /{on = ($0 ~ ("AS " s "$"))} on' "$D"; }
grep -Eq '^FROM debian:\$\{DEBIAN_VERSION\}-slim AS daemon$' "$D" && ok || ko "daemon stage"
grep -Eq '^FROM nvidia/cuda:\$\{CUDA_VERSION\}-devel-\$\{UBUNTU_VERSION\} AS worker-build$' "$D" &&
    ok || ko "worker build stage on cuda devel"
grep -Eq '^FROM nvidia/cuda:\$\{CUDA_VERSION\}-runtime-\$\{UBUNTU_VERSION\} AS worker$' "$D" &&
    ok || ko "worker stage on cuda runtime"
[ "$(stage worker | grep -c 'efa_installer.sh -y')" = 1 ] &&
    [ "$(stage worker-build | grep -c 'efa_installer.sh -y')" = 1 ] && ok || ko "EFA installer"
stage worker | grep -q 'libnccl2' && ok || ko "NCCL in the worker image"
stage worker | grep -q '^ENTRYPOINT \["/usr/local/bin/trainyard-worker", "run", "--"\]' && ok ||
    ko "worker entrypoint"
stage daemon | grep -q '^USER trainyard' && ok || ko "daemon runs as root"

# Same build commands as the Makefile (which is what CI runs).
grep -q 'cmake -S . -B build ' "$TY_SRC/Makefile" && grep -q 'cmake --build build ' "$TY_SRC/Makefile" &&
    ok || ko "Makefile build commands changed: update the Dockerfile"
stage daemon-build | grep -q 'cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo' && ok ||
    ko "daemon build command"
stage worker-build | grep -q 'cmake --build build .*--target trainyard-worker' && ok ||
    ko "worker build command"
pkgs=$(sed -n '/^BUILD_PKGS/,/[^\\]$/p' "$TY_SRC/Makefile" | sed 's/BUILD_PKGS *:= *//; s/\\//g')
for p in $pkgs; do
    stage daemon-build | grep -qw -- "$p" || ko "Makefile BUILD_PKGS has $p, the Dockerfile does not"
done
ok

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
