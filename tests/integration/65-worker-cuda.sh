#!/usr/bin/env bash
# The GPU code: with the CUDA toolkit on the machine (/usr/local/cuda, as in CI) the worker
# compiles and links the CUDA runtime, cuBLAS and NCCL, and without a GPU says "skipped: no GPU";
# the build-without-CUDA stubs compile too; only the file of each library includes it.
set -u
W="$TY_BUILD/trainyard-worker"
S="$TY_SRC/worker"
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# One file per library.
[ "$(grep -l '#include <cuda_runtime_api.h>\|#include <cublas' "$S"/*.c | xargs -n1 basename | sort | xargs)" = "check_cuda.c check_nccl.c" ] &&
    ok || ko "CUDA included outside check_cuda.c/check_nccl.c"
[ "$(grep -l '#include <nccl.h>' "$S"/*.c | xargs -n1 basename)" = check_nccl.c ] && ok || ko "nccl.h"
[ "$(grep -l '#include <rdma/' "$S"/*.c | xargs -n1 basename)" = fabric.c ] && ok || ko "libfabric"

# The stubs used when CUDA is absent at build time.
for f in check_cuda.c check_nccl.c; do
    gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
        -include "$TY_SRC/server/core/banned.h" -I"$TY_SRC" -fsyntax-only "$S/$f" && ok ||
        ko "$f does not compile without CUDA"
done

toolkit=0
[ -e /usr/local/cuda/include/cuda_runtime_api.h ] && [ -e /usr/local/cuda/include/nccl.h ] &&
    ! grep -q '^TY_CUDA:BOOL=OFF' "$TY_BUILD/CMakeCache.txt" && toolkit=1
if [ $toolkit = 1 ]; then
    libs=$(ldd "$W")
    for l in libcudart libcublas libnccl; do
        echo "$libs" | grep -q "$l" && ok || ko "trainyard-worker does not link $l"
    done
    syms=$(nm -u "$W" 2>/dev/null)
    for s in cublasGemmEx cudaMemGetInfo ncclCommInitRankConfig ncclAllReduce; do
        echo "$syms" | grep -q "$s" && ok || ko "$s not linked"
    done
    out=$("$W" preflight --json)
    if [ ! -e /dev/nvidia0 ]; then
        echo "$out" | jq -e '.checks[0].status == "skip" and (.checks[0].detail | startswith("skipped: no GPU"))' \
            > /dev/null && ok || ko "no GPU not reported: $(echo "$out" | jq -c '.checks[0]')"
        echo "$out" | jq -e '[.checks[] | select(.name == "nccl.allreduce")][0].detail == "skipped: no GPU"' \
            > /dev/null && ok || ko "NCCL without a GPU"
        TRAINYARD_GPUS=8 "$W" preflight --json > /dev/null; [ $? = 1 ] && ok || ko "8 GPUs requested, none, exit 0"
    else
        echo "GPU present: running the real checks"
        "$W" preflight && ok || ko "preflight on a GPU machine"
    fi
else
    echo "SKIP: no CUDA toolkit at /usr/local/cuda; only the stubs were checked"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
