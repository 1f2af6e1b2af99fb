#!/usr/bin/env bash
# Downloads, on a Debian 12 machine, the .deb files tests/gpu/check.sh unpacks on a GPU machine
# that lacks trainyard's build libraries (an Ubuntu image with CUDA and PyTorch, say, where nothing
# can be fetched): the -dev packages, their libraries and the libraries those need, except the
# ones every Linux system has. Nothing is installed here either (apt-get download).
#
#   tests/gpu/fetch-debs.sh [DIR]       # default: the folder debs beside this script
set -eu
cd "$(dirname "$0")/../.."
DIR=${1:-$(dirname "$0")/debs}
mkdir -p "$DIR"
WANT="libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev libyaml-dev libzstd-dev
      libssl-dev libgnutls28-dev libfabric-dev pkgconf"
# What any system has (the C library and the compiler's runtime): not carried.
BASE='^(libc6|libc6-dev|libgcc-s1|libstdc\+\+6|zlib1g|libcrypt1|debconf|dpkg|perl-base|tar|coreutils|libselinux1|libpcre2-8-0|linux-libc-dev|libc-dev-bin|rpcsvc-proto|libtirpc.*|libnsl.*|gcc-12-base)$'
deps=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances $WANT | grep -v '^ ' | grep -v '^<' | sort -u | grep -Ev "$BASE")
(cd "$DIR" && apt-get download $deps >/dev/null)
echo "$(ls "$DIR"/*.deb | wc -l) packages, $(du -sh "$DIR" | cut -f1), in $DIR"
