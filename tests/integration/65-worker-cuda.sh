#!/usr/bin/env bash
# The GPU code: with the CUDA toolkit on the machine (/usr/local/cuda, as in CI) the worker
# compiles against the CUDA runtime, cuBLAS and NCCL headers, loads the libraries at run time
# (none of their functions is linked: 66-worker-startup.sh checks DT_NEEDED), and without a GPU
# says "skipped: no GPU" after resolving every function it uses; the build-without-CUDA stubs
# compile too; only the file of each library includes it.
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
        -include "$TY_SRC/core/banned.h" -I"$TY_SRC" -fsyntax-only "$S/$f" && ok ||
        ko "$f does not compile without CUDA"
done

toolkit=0
[ -e /usr/local/cuda/include/cuda_runtime_api.h ] && [ -e /usr/local/cuda/include/nccl.h ] &&
    ! grep -q '^TY_CUDA:BOOL=OFF' "$TY_BUILD/CMakeCache.txt" && toolkit=1
if [ $toolkit = 1 ]; then
    syms=$(nm -u "$W" 2>/dev/null)
    for s in cublasGemmEx cudaMemGetInfo ncclCommInitRankConfig ncclAllReduce fi_getinfo; do
        echo "$syms" | grep -qw "$s" && ko "$s is linked, not loaded" || ok
    done
    # The names the tables look up are compiled in (dlsym), including macro-renamed ones.
    for s in cublasGemmEx cublasCreate_v2 cudaMemGetInfo ncclCommInitRankConfig ncclAllReduce; do
        grep -qa "$s" "$W" && ok || ko "$s not in the binary's tables"
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
    skipped=1
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ] || exit 1
[ -z "${skipped:-}" ] || exit 77 # a part could not run here: a skip to ctest
