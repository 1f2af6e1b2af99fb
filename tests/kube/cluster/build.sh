#!/bin/bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler from Debian's `kubernetes`
# source package with Debian's Go, once per machine, into a cache outside the work tree:
#
#   tests/kube/cluster/build.sh          # prints the folder that holds the three binaries
#
# The cache is $TY_KUBE_CACHE (default /var/cache/trainyard/kube when writable, else
# ~/.cache/trainyard/kube), one folder per source version (`<version>/bin`), complete only when
# its `bin/.done` exists. A finished build is reused without the network; TY_KUBE_REFRESH=1
# asks the archive for the current source version again (a new version builds beside the old).
#
# Why a private sources list and state folder: the machine's apt lists are binary-only, and
# pointing apt at a deb-src-only list without moving Dir::State::Lists would replace the
# system's lists. Why reflect2 is swapped: the vendored github.com/modern-go/reflect2 v1.0.1
# crashes under Go >= 1.18 (fatal error: fault in runtime.mapiternext on the first requests);
# Debian's 1.0.2 is the fixed release.
#
# Every step says what it does on stderr; only the bin folder goes to stdout. Exit 1 on failure.
set -euo pipefail

say() { echo "kube-build: $*" >&2; }
die() {
    say "FAILED: $*"
    exit 1
}

if [ -n "${TY_KUBE_CACHE:-}" ]; then
    CACHE=$TY_KUBE_CACHE
elif mkdir -p /var/cache/trainyard/kube 2>/dev/null && [ -w /var/cache/trainyard/kube ]; then
    CACHE=/var/cache/trainyard/kube
else
    CACHE=$HOME/.cache/trainyard/kube
fi
mkdir -p "$CACHE"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
PKGS="golang-go rsync etcd-server golang-github-modern-go-reflect2-dev openssl"
BINS="kube-apiserver kube-controller-manager kube-scheduler"

# A finished build of any version answers at once unless a refresh is asked for: the test run
# must not need the network once the machine has built it.
if [ -z "${TY_KUBE_REFRESH:-}" ]; then
    done_dir=$(ls -1dt "$CACHE"/*/bin/.done 2>/dev/null | head -1 || true)
    if [ -n "$done_dir" ] && command -v etcd >/dev/null; then
        say "using $(dirname "$done_dir") (TY_KUBE_REFRESH=1 checks the archive for a newer source)"
        dirname "$done_dir"
        exit 0
    fi
fi

# Serialise concurrent builds (two test runs on a fresh machine): the second waits and reuses.
exec 9>"$CACHE/.lock"
flock 9

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing Debian packages:$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2 ||
        { $SUDO apt-get update -q >&2 &&
            $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2; } ||
        die "apt-get install$missing"
fi

# The private deb-src list, from the archive the machine already uses.
APT=$CACHE/apt
mkdir -p "$APT/lists/partial"
src_list() {
    local f uris suites comps keyring
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822 stanzas: one deb-src line per stanza of Types: deb.
        awk 'BEGIN{RS=""; FS="\n"}
             { u=""; s=""; c=""; k="";
               for (i = 1; i <= NF; i++) {
                 if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[ \t]*/, "", u) }
                 if ($i ~ /^Suites:/) { s = $i; sub(/^Suites:[ \t]*/, "", s) }
                 if ($i ~ /^Components:/) { c = $i; sub(/^Components:[ \t]*/, "", c) }
                 if ($i ~ /^Signed-By:/) { k = $i; sub(/^Signed-By:[ \t]*/, "", k) } }
               if (u == "" || s == "") next;
               n = split(s, ss, " ");
               for (j = 1; j <= n; j++)
                 printf "deb-src %s%s %s %s\n", (k != "" ? "[signed-by=" k "] " : ""), u, ss[j], c }' "$f"
    done
    [ -f /etc/apt/sources.list ] && sed -n 's/^deb \(.*\)$/deb-src \1/p' /etc/apt/sources.list
    return 0
}
src_list | sort -u >"$APT/src.list"
[ -s "$APT/src.list" ] || die "no Debian archive found in /etc/apt/sources.list{,.d} to take the source from"
APTOPT=(-o Dir::Etc::SourceList="$APT/src.list" -o Dir::Etc::SourceParts=- -o Dir::State::Lists="$APT/lists"
    -o Dir::Cache="$APT/cache" -o Debug::NoLocking=1)
say "reading the source index (private list $APT/src.list)"
apt-get "${APTOPT[@]}" update -q >&2 || die "apt-get update of the private source list"
VERSION=$(apt-cache "${APTOPT[@]}" showsrc kubernetes | sed -n 's/^Version: //p' | sort -V | tail -1)
[ -n "$VERSION" ] || die "no source package 'kubernetes' in the archive"
OUT=$CACHE/$VERSION
if [ -e "$OUT/bin/.done" ] && command -v etcd >/dev/null; then
    say "kubernetes $VERSION is built already: $OUT/bin"
    echo "$OUT/bin"
    exit 0
fi

say "building kubernetes $VERSION into $OUT (once per machine; about 5 min on 2 cores)"
rm -rf "$OUT"
mkdir -p "$OUT/src" "$OUT/bin"
(cd "$OUT/src" && apt-get "${APTOPT[@]}" source --download-only "kubernetes=$VERSION" >&2) ||
    die "downloading the kubernetes source package"
orig=$(ls "$OUT"/src/kubernetes_*.orig.tar.* | head -1)
[ -n "$orig" ] || die "no upstream tarball in the source package"
say "unpacking $(basename "$orig")"
mkdir -p "$OUT/tree"
tar -xf "$orig" -C "$OUT/tree" --strip-components=1
[ -d "$OUT/tree/vendor/github.com/modern-go/reflect2" ] || die "the tree has no vendored reflect2 to replace"
say "replacing vendor/github.com/modern-go/reflect2 with Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
rm -rf "$OUT/tree/vendor/github.com/modern-go/reflect2"
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$OUT/tree/vendor/github.com/modern-go/reflect2"
rm -f "$OUT"/tree/vendor/github.com/modern-go/reflect2/go.mod
mkdir -p "$OUT/gopath/src/k8s.io"
ln -sfn "$OUT/tree" "$OUT/gopath/src/k8s.io/kubernetes"
say "make WHAT=\"cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler\" ($(go version))"
start=$(date +%s)
(cd "$OUT/gopath/src/k8s.io/kubernetes" &&
    GOPATH=$OUT/gopath GOCACHE=$OUT/gocache GOFLAGS= CGO_ENABLED=0 \
        KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean \
        make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" >&2) ||
    die "make (log above)"
for b in $BINS; do
    f=$(ls "$OUT"/tree/_output/local/bin/*/*/"$b" "$OUT"/tree/_output/bin/"$b" 2>/dev/null | head -1)
    [ -n "$f" ] || die "$b was not built"
    cp "$f" "$OUT/bin/$b"
done
say "built in $(($(date +%s) - start)) s; removing the tree and the Go cache"
rm -rf "$OUT/tree" "$OUT/gopath" "$OUT/gocache" "$OUT/src"
touch "$OUT/bin/.done"
echo "$OUT/bin"
