#!/usr/bin/env bash
# The checks only a real NVIDIA GPU can make, for a person (or a lent GPU machine) with one GPU,
# the CUDA toolkit and PyTorch and nothing else; CI has no GPU. Under 10 minutes:
#
#   tests/gpu/check.sh [DEBS_DIR]
#
# 1. builds trainyard and trainyard-worker there (the worker with its CUDA and NCCL checks). The
#    Debian libraries they need, where the machine has none, come as .deb files in DEBS_DIR
#    (default: the folder debs beside this script, which git ignores), made beforehand on a Debian 12 machine with tests/gpu/fetch-debs.sh
#    and unpacked here into a prefix with dpkg-deb -x: nothing is installed, nothing is fetched;
# 2. runs `trainyard-worker preflight` on the GPU;
# 3. starts the daemon (local executor, GPUs found through NVML) and runs a short PyTorch training
#    job (a tiny randomly initialised model on random data, no downloads) with resources.gpus 1;
#    checks that the rank saw the GPU it was given in CUDA_VISIBLE_DEVICES, that its progress and
#    loss were parsed from its real output, that a deliberate CUDA out-of-memory is diagnosed as
#    such, and that usage counted the GPU-seconds.
#
# Prints one line per check (PASS/FAIL name: detail) and "N passed, N failed"; exits 77 without
# a GPU, 1 when a check failed.
set -u
cd "$(dirname "$0")/../.."
SRC=$PWD
DEBS=${1:-$SRC/tests/gpu/debs}
WORK=$(mktemp -d /var/tmp/trainyard-gpu.XXXXXX)
PASSED=0 FAILED=0 PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
pass() { PASSED=$((PASSED + 1)); echo "PASS $1${2:+: $2}"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1${2:+: $2}"; }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; fi; }
finish() { echo "$PASSED passed, $FAILED failed"; [ "$FAILED" = 0 ]; exit $?; }

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU here (nvidia-smi -L found none)"
    exit 77
fi
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1)
echo "GPU: $GPU ($(date -u +%Y-%m-%dT%H:%MZ))"
PY=$(command -v python3)

# 1. Build, with the carried libraries where the machine lacks them.
PREFIX=$WORK/prefix
if ls "$DEBS"/*.deb >/dev/null 2>&1; then
    mkdir -p "$PREFIX"
    for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$PREFIX"; done
    LIB=$PREFIX/usr/lib/x86_64-linux-gnu
    export PATH=$PREFIX/usr/bin:$PATH
    export PKG_CONFIG_SYSROOT_DIR=$PREFIX
    export PKG_CONFIG_LIBDIR=$LIB/pkgconfig:$PREFIX/usr/share/pkgconfig
    export LIBRARY_PATH=$LIB${LIBRARY_PATH:+:$LIBRARY_PATH}
    export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export CPATH=$PREFIX/usr/include${CPATH:+:$CPATH}
    pass "libraries unpacked" "$(ls "$DEBS"/*.deb | wc -l) packages from $DEBS into $PREFIX"
fi
B=$WORK/build
if cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTY_MIMALLOC=OFF -DTY_CUDA=ON \
    >"$WORK/cmake.log" 2>&1 && cmake --build "$B" -j "$(nproc)" --target trainyard trainyard-worker \
    >>"$WORK/cmake.log" 2>&1; then
    pass "build" "$(grep -o 'CUDA checks [A-Z]*, NCCL checks [A-Z]*' "$WORK/cmake.log" | head -1)"
else
    fail "build" "$(grep -m3 -iE 'error|not found' "$WORK/cmake.log" | tr '\n' ' ')"
    finish
fi

# 2. Preflight on the GPU.
"$B/trainyard-worker" preflight --json --gpus 1 >"$WORK/preflight.json" 2>"$WORK/preflight.err"
gpu_check=$(jq -r '.checks[] | select(.name == "gpu") | "\(.status) \(.detail)"' "$WORK/preflight.json" 2>/dev/null)
case $gpu_check in
pass*) pass "preflight: gpu" "${gpu_check#pass }" ;;
*) fail "preflight: gpu" "$gpu_check $(head -c 300 "$WORK/preflight.err")" ;;
esac
jq -r '.checks[] | "\(.status) \(.name): \(.detail)"' "$WORK/preflight.json" 2>/dev/null |
    sed 's/^/  preflight /' | head -20

# 3. The daemon and real jobs.
DATA=$WORK/data
"$B/trainyard" serve --listen 127.0.0.1:0 --data-dir "$DATA" --auth=off --local-slots 4 \
    --stop-grace 5s >"$WORK/daemon.out" 2>"$WORK/daemon.err" &
PID=$!
for _ in $(seq 1 100); do
    URL=$(grep -o 'http://[0-9.:]*' "$WORK/daemon.out" 2>/dev/null | head -1)
    [ -n "$URL" ] && curl -sf "$URL/readyz" >/dev/null && break
    sleep 0.1
done
[ -n "$URL" ] || { fail "daemon starts" "$(head -c 500 "$WORK/daemon.err")"; finish; }
node=$(curl -s "$URL/v1/nodes" | jq '.items[] | select(.name == "localhost")')
UUID=$(echo "$node" | jq -r '.gpu_devices[0].uuid')
[ "$(echo "$node" | jq -r .gpu_source)" = nvml ] && [ "$UUID" = "${GPU##*, }" ] &&
    pass "the daemon found the GPU through NVML" "$UUID" ||
    fail "the daemon found the GPU through NVML" "$(echo "$node" | jq -c '{gpus, gpu_source}')"

# Scripts live where a sandboxed rank may read them (its /tmp is its own).
JOBS=$WORK/jobs
mkdir -p "$JOBS" && chmod 755 "$WORK" "$JOBS"
cat >"$JOBS/train.py" <<'EOF'
import os, time, torch
print("visible", os.environ.get("CUDA_VISIBLE_DEVICES"), "count", torch.cuda.device_count(),
      "name", torch.cuda.get_device_name(0), flush=True)
torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(4096, 256, device=dev)
y = (x[:, :8].sum(dim=1, keepdim=True) > 0).float()
steps = 300
for step in range(1, steps + 1):
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 10 == 0:
        print(f"step={step}/{steps} loss={loss.item():.4f} lr=1e-3", flush=True)
    time.sleep(0.01)
print("done", flush=True)
EOF
cat >"$JOBS/oom.py" <<'EOF'
import torch
free, total = torch.cuda.mem_get_info()
print(f"asking for {2 * total // 2**30} GiB of {total // 2**30}", flush=True)
x = torch.empty(2 * total, dtype=torch.uint8, device="cuda")
EOF
submit() { curl -s -X POST "$URL/v1/jobs" -H 'Content-Type: application/json' -d "$1" | jq -r .id; }
wait_end() {
    for _ in $(seq 1 600); do
        case $(curl -s "$URL/v1/jobs/$1" | jq -r .state) in
        succeeded | failed | cancelled) return 0 ;;
        esac
        sleep 0.2
    done
    return 1
}
train=$(submit "{\"name\":\"gpu-train\",\"command\":[\"$PY\",\"$JOBS/train.py\"],\"resources\":{\"gpus\":1}}")
wait_end "$train"
job=$(curl -s "$URL/v1/jobs/$train")
logs=$(curl -s "$URL/v1/jobs/$train/logs")
[ "$(echo "$job" | jq -r .state)" = succeeded ] && pass "the training job succeeded" ||
    fail "the training job succeeded" "$(echo "$job" | jq -c '{state, reason, message}') $(echo "$logs" | tail -3)"
seen=$(echo "$logs" | grep -o 'visible [^ ]* count [0-9]*' | head -1)
[ "$seen" = "visible $UUID count 1" ] && pass "the rank saw its GPU in CUDA_VISIBLE_DEVICES" "$seen" ||
    fail "the rank saw its GPU in CUDA_VISIBLE_DEVICES" "saw [$seen], given $UUID"
prog=$(echo "$job" | jq -c '.progress | {step, total_steps, loss, format}')
[ "$(echo "$job" | jq -r .progress.step)" = 300 ] && [ "$(echo "$job" | jq -r '.progress.loss != null')" = true ] &&
    pass "progress and loss parsed from the real output" "$prog" ||
    fail "progress and loss parsed from the real output" "$prog"
points=$(curl -s "$URL/v1/jobs/$train/metrics?name=loss" | jq '[.series[].points | length] | add')
[ "${points:-0}" -ge 30 ] && pass "the loss series was stored" "$points points" ||
    fail "the loss series was stored" "$points points"
usage=$(curl -s "$URL/v1/jobs/$train" | jq -c '.usage // empty')
gs=$(echo "$usage" | jq -r '.gpu_seconds // 0')
awk "BEGIN { exit !($gs > 1) }" && pass "usage counted the GPU-seconds" "$usage" ||
    fail "usage counted the GPU-seconds" "${usage:-no usage in the job}"

oom=$(submit "{\"name\":\"gpu-oom\",\"command\":[\"$PY\",\"$JOBS/oom.py\"],\"resources\":{\"gpus\":1}}")
wait_end "$oom"
job=$(curl -s "$URL/v1/jobs/$oom")
[ "$(echo "$job" | jq -r .reason)" = CudaOutOfMemory ] && pass "a real CUDA OOM is diagnosed as such" "$(echo "$job" | jq -r .message)" ||
    fail "a real CUDA OOM is diagnosed as such" "$(echo "$job" | jq -c '{state, reason, message}')"
finish
