/*
 * patterns: the failure knowledge tables (see patterns.h). Data only: the matcher is in
 * classify.c, the state machines in traceback.c, the decisions in diag.c.
 *
 * The log table is ordered by precedence: when several rows match one line, the row nearest
 * the top wins, so specific signatures come before generic ones ("CUDA error: out of memory"
 * before "CUDA error: "). Every row carries an example line; tests/unit/test_diag_classify.c
 * checks that each example is classified by its own row.
 *
 * All tables are const; thread-safe.
 */
#include "server/diag/patterns.h"

#include <string.h>

#define KIND(n, r, rt, p, nf, inf, s)                                                              \
    {                                                                                              \
        .name = n, .reason = r, .retry = rt, .priority = p, .node_fault = nf, .infra = inf,        \
        .summary = s                                                                               \
    }

static const struct diag_kind_info kinds[DIAG_KIND_COUNT] = {
    [DIAG_KIND_NONE] = KIND("none", "", DIAG_RETRY_UNKNOWN, 0, false, false, "{who}: no failure"),
    [DIAG_CUDA_OOM] = KIND("cuda_oom", "CudaOutOfMemory", DIAG_DETERMINISTIC, 80, false, false,
                           "{who} ran out of GPU memory (CUDA OOM[: tried to allocate "
                           "{detail}])[ on node {node}]"),
    [DIAG_HOST_OOM] = KIND("host_oom", "HostOutOfMemory", DIAG_DETERMINISTIC, 78, false, false,
                           "{who} ran out of host memory[ ({detail})][ on node {node}]"),
    [DIAG_NCCL_ERROR] = KIND("nccl_error", "NCCLError", DIAG_RETRYABLE, 30, false, false,
                             "{who} hit an NCCL error[: {detail}][ on node {node}]"),
    [DIAG_NCCL_TIMEOUT] = KIND("nccl_timeout", "NCCLTimeout", DIAG_RETRYABLE, 25, false, false,
                               "{who}: an NCCL collective timed out[ ({detail})][ on node {node}]"),
    [DIAG_XID] = KIND("xid", "GPUXidError", DIAG_RETRYABLE, 90, true, false,
                      "{who}: GPU error Xid {num}[ ({text})][ on node {node}]"),
    [DIAG_ECC] = KIND("ecc", "GPUECCError", DIAG_RETRYABLE, 92, true, false,
                      "{who}: uncorrectable GPU memory (ECC) error[ on node {node}]"),
    [DIAG_CUDA_ERROR] = KIND("cuda_error", "CUDAError", DIAG_RETRY_UNKNOWN, 50, false, false,
                             "{who} hit a CUDA error[: {detail}][ on node {node}]"),
    [DIAG_PYTHON_EXCEPTION] = KIND("python_exception", "PythonException", DIAG_DETERMINISTIC, 40,
                                   false, false, "{who} failed with {detail}[ on node {node}]"),
    [DIAG_ASSERTION] = KIND("assertion", "AssertionFailed", DIAG_DETERMINISTIC, 55, false, false,
                            "{who}: assertion failed[: {detail}][ on node {node}]"),
    [DIAG_SEGFAULT] = KIND("segfault", "SegmentationFault", DIAG_RETRY_UNKNOWN, 60, false, false,
                           "{who} crashed with a segmentation fault[ ({detail})][ on node {node}]"),
    [DIAG_BUS_ERROR] = KIND("bus_error", "BusError", DIAG_DETERMINISTIC, 62, false, false,
                            "{who} crashed with a bus error[ ({detail})][ on node {node}]; in a "
                            "container this is usually a too small /dev/shm"),
    [DIAG_NAN_LOSS] = KIND("nan_loss", "NaNLoss", DIAG_DETERMINISTIC, 70, false, false,
                           "{who}: the loss became NaN or infinite[ ({detail})]"),
    [DIAG_DISK_FULL] = KIND("disk_full", "DiskFull", DIAG_DETERMINISTIC, 75, false, false,
                            "{who}: no space left on device[ ({detail})][ on node {node}]"),
    [DIAG_RENDEZVOUS] = KIND("rendezvous", "RendezvousFailed", DIAG_RETRYABLE, 20, false, false,
                             "{who}: rendezvous or store connection failed[: {detail}][ on node "
                             "{node}]"),
    [DIAG_PREEMPTION] = KIND("preemption", "Preempted", DIAG_RETRYABLE, 95, false, true,
                             "{who} was preempted[ ({detail})][ on node {node}]"),
    [DIAG_EVICTION] = KIND("eviction", "Evicted", DIAG_RETRYABLE, 94, false, true,
                           "{who} was evicted[ ({detail})][ from node {node}]"),
    [DIAG_NODE_LOST] = KIND("node_lost", "NodeLost", DIAG_RETRYABLE, 96, true, true,
                            "{who} lost its node[ {node}][ ({detail})]"),
    [DIAG_IMAGE_PULL] = KIND("image_pull", "ImagePullFailed", DIAG_DETERMINISTIC, 85, false, false,
                             "{who}: the container image could not be pulled[ ({detail})]"),
    [DIAG_SCHEDULING] = KIND("scheduling", "Unschedulable", DIAG_DETERMINISTIC, 84, false, false,
                             "{who} could not be scheduled[ ({detail})]"),
    [DIAG_LAUNCH_ERROR] = KIND("launch_error", "LaunchFailed", DIAG_DETERMINISTIC, 83, false, false,
                               "{who} could not be started[ ({detail})]"),
    [DIAG_DEADLINE] = KIND("deadline", "DeadlineExceeded", DIAG_DETERMINISTIC, 82, false, true,
                           "{who} reached its time limit[ ({detail})]"),
    [DIAG_HANG] = KIND("hang", "Stalled", DIAG_RETRY_UNKNOWN, 15, false, false,
                       "{who} stopped making progress[ ({detail})]"),
    [DIAG_KILLED] = KIND("killed", "Killed", DIAG_RETRY_UNKNOWN, 10, false, false,
                         "{who} was killed[ ({detail})][ on node {node}]"),
    [DIAG_TERMINATED] = KIND("terminated", "Terminated", DIAG_RETRY_UNKNOWN, 5, false, false,
                             "{who} was terminated[ ({detail})]"),
    [DIAG_EXIT] = KIND("exit", "Failed", DIAG_RETRY_UNKNOWN, 8, false, false,
                       "{who} failed[ ({detail})][ on node {node}]"),
};

/* Shorthands that keep one row of the table readable. */
#define C DIAG_CAUSE
#define S DIAG_SYMPTOM
#define Q DIAG_CONSEQUENCE
#define I DIAG_INFO

static const struct diag_pattern table[] = {
    /* A traceback is not a finding: it starts the state machine that keeps its frames. */
    { .id = "traceback",
      .role = I,
      .flags = PAT_TRACEBACK,
      .anchor = "Traceback (most recent call last):",
      .example = "Traceback (most recent call last):" },
    { .id = "torchrun_child_failed",
      .role = I,
      .flags = PAT_TORCHRUN,
      .anchor = "ChildFailedError",
      .example = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: " },

    /* GPU memory. */
    { .id = "cuda_oom",
      .kind = DIAG_CUDA_OOM,
      .role = C,
      .anchor = "CUDA out of memory",
      .after = "Tried to allocate ",
      .until = " (|. |;|,",
      .example = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 "
                 "has a total capacity of 79.15 GiB of which 1.19 GiB is free." },
    { .id = "cuda_oom_runtime",
      .kind = DIAG_CUDA_OOM,
      .role = C,
      .anchor = "CUDA error: out of memory",
      .example = "RuntimeError: CUDA error: out of memory" },
    { .id = "cuda_oom_nccl",
      .kind = DIAG_CUDA_OOM,
      .role = C,
      .anchor = "'out of memory'",
      .summary = "{who} ran out of GPU memory inside NCCL (Cuda failure 'out of memory')[ on "
                 "node {node}]",
      .example = "ip-10-0-1-7:4242:4310 [5] NCCL WARN Cuda failure 2 'out of memory'" },
    { .id = "cuda_oom_cublas",
      .kind = DIAG_CUDA_OOM,
      .role = C,
      .anchor = "CUBLAS_STATUS_ALLOC_FAILED",
      .summary = "{who} ran out of GPU memory (cuBLAS could not allocate its workspace)[ on node "
                 "{node}]",
      .example = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                 "`cublasCreate(handle)`" },
    { .id = "cuda_oom_xla",
      .kind = DIAG_CUDA_OOM,
      .role = C,
      .anchor = "RESOURCE_EXHAUSTED: Out of memory",
      .after = "trying to allocate ",
      .until = ".| |,",
      .example = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
                 "trying to allocate 4294967296 bytes." },

    /* GPU hardware. */
    { .id = "ecc_uncorrectable",
      .kind = DIAG_ECC,
      .role = C,
      .flags = PAT_NOCASE,
      .anchor = "uncorrectable ECC error",
      .example = "RuntimeError: CUDA error: uncorrectable ECC error encountered" },
    { .id = "ecc_cuda_enum",
      .kind = DIAG_ECC,
      .role = C,
      .anchor = "ECCUncorrectable",
      .example = "cudaErrorECCUncorrectable: uncorrectable error in device memory" },
    { .id = "xid",
      .kind = DIAG_XID,
      .role = C,
      .flags = PAT_XID,
      .anchor = "NVRM: Xid",
      .after = "(PCI:",
      .until = ")",
      .num = "): ",
      .summary = "{who}: GPU error Xid {num}[ ({text})][ on GPU PCI:{detail}][ on node {node}]",
      .example = "[812345.678901] NVRM: Xid (PCI:0000:53:00): 79, pid=4242, name=python3, GPU "
                 "has fallen off the bus." },
    { .id = "gpu_fallen_off_bus",
      .kind = DIAG_XID,
      .role = C,
      .flags = PAT_XID,
      .anchor = "fallen off the bus",
      .code = 79,
      .example = "NVRM: GPU 0000:53:00.0: GPU has fallen off the bus." },
    { .id = "nvml_driver_mismatch",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .retry = DIAG_RETRYABLE,
      .anchor = "Driver/library version mismatch",
      .node_fault = true,
      .summary = "{who}: the NVIDIA driver on the node does not match its libraries (node needs "
                 "a reboot)[ on node {node}]",
      .example = "Failed to initialize NVML: Driver/library version mismatch" },
    { .id = "cuda_no_device",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .retry = DIAG_RETRYABLE,
      .anchor = "no CUDA-capable device is detected",
      .node_fault = true,
      .example = "RuntimeError: CUDA error: no CUDA-capable device is detected" },
    { .id = "cuda_device_busy",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .retry = DIAG_RETRYABLE,
      .anchor = "busy or unavailable",
      .also = "CUDA",
      .node_fault = true,
      .example = "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable" },

    /* Loss that went bad. */
    { .id = "nan_loss_scale",
      .kind = DIAG_NAN_LOSS,
      .role = C,
      .anchor = "cannot decrease scale anymore",
      .summary = "{who}: the fp16 loss scale hit its minimum (the loss keeps overflowing)",
      .example = "Current loss scale already at minimum - cannot decrease scale anymore. "
                 "Exiting run." },
    { .id = "nan_grad",
      .kind = DIAG_NAN_LOSS,
      .role = C,
      .anchor = "found NaN in",
      .after = "found NaN in ",
      .until = " in | before|.",
      .example = "RuntimeError: Rank 3: found NaN in local grad norm in backward pass before "
                 "data-parallel communication collective." },
    { .id = "nan_loss_text",
      .kind = DIAG_NAN_LOSS,
      .role = C,
      .flags = PAT_NOCASE,
      .anchor = "loss is nan",
      .example = "WARNING train.py:212 Loss is NaN at step 4200" },
    { .id = "inf_loss_text",
      .kind = DIAG_NAN_LOSS,
      .role = C,
      .flags = PAT_NOCASE,
      .anchor = "loss is inf",
      .example = "loss is inf, stopping" },
    { .id = "nan_loss_fairseq",
      .kind = DIAG_NAN_LOSS,
      .role = C,
      .anchor = "became infinite or NaN",
      .example = "FloatingPointError: Loss became infinite or NaN at iteration=1200!" },
    { .id = "nan_autograd",
      .kind = DIAG_NAN_LOSS,
      .role = C,
      .anchor = "returned nan values",
      .after = "Function '",
      .until = "'",
      .example = "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th "
                 "output." },

    /* Collective timeouts: usually the victims of a rank that died or hung. */
    { .id = "nccl_watchdog_timeout",
      .kind = DIAG_NCCL_TIMEOUT,
      .role = Q,
      .flags = PAT_RANKMARK,
      .anchor = "Watchdog caught collective operation timeout",
      .after = "OpType=",
      .until = ",",
      .num = "SeqNum=",
      .summary = "{who}: NCCL collective timed out[ ({detail} #{num})][ on node {node}]",
      .example = "[rank3]:[E501 12:10:01.123456 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog "
                 "caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, "
                 "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before "
                 "timing out." },
    { .id = "nccl_timeout_work",
      .kind = DIAG_NCCL_TIMEOUT,
      .role = Q,
      .flags = PAT_RANKMARK,
      .anchor = "Timeout at NCCL work: ",
      .num = "Timeout at NCCL work: ",
      .summary = "{who}: NCCL collective timed out[ (#{num})][ on node {node}]",
      .example = "[E501 12:10:01.123 ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Timeout at NCCL "
                 "work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: 1233." },
    { .id = "nccl_watchdog_stuck",
      .kind = DIAG_NCCL_TIMEOUT,
      .role = Q,
      .flags = PAT_RANKMARK,
      .anchor = "watchdog got stuck",
      .example = "[E501 12:20:00.000 ProcessGroupNCCL.cpp:1296] [PG 0 Rank 1] ProcessGroupNCCL's "
                 "watchdog got stuck for 480 seconds without making progress in monitoring "
                 "enqueued collectives." },
    { .id = "nccl_heartbeat",
      .kind = DIAG_NCCL_TIMEOUT,
      .role = Q,
      .flags = PAT_RANKMARK,
      .anchor = "Heartbeat monitor timed out",
      .example = "[E501 12:20:00.000 ProcessGroupNCCL.cpp:1352] [PG 0 Rank 6] Heartbeat monitor "
                 "timed out! Process will be terminated after dumping debug info." },

    /* NCCL errors. A rank's own CUDA failing inside NCCL is a cause; the rest are victims. */
    { .id = "nccl_unhandled_cuda",
      .kind = DIAG_NCCL_ERROR,
      .role = C,
      .retry = DIAG_RETRY_UNKNOWN,
      .anchor = "ncclUnhandledCudaError",
      .summary = "{who}: a CUDA call inside NCCL failed (ncclUnhandledCudaError)[ on node "
                 "{node}]",
      .example = "ncclUnhandledCudaError: Call to CUDA function failed." },
    { .id = "nccl_unhandled_cuda_text",
      .kind = DIAG_NCCL_ERROR,
      .role = C,
      .retry = DIAG_RETRY_UNKNOWN,
      .anchor = "unhandled cuda error",
      .summary = "{who}: a CUDA call inside NCCL failed (unhandled cuda error)[ on node {node}]",
      .example = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
                 "c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for "
                 "details), NCCL version 2.20.5" },
    { .id = "nccl_invalid_usage",
      .kind = DIAG_NCCL_ERROR,
      .role = C,
      .retry = DIAG_DETERMINISTIC,
      .flags = PAT_NOCASE,
      .anchor = "invalid usage",
      .also = "NCCL",
      .summary = "{who}: NCCL reports invalid usage (a bug or mismatched collectives in the "
                 "training code)",
      .example = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                 "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3" },
    { .id = "nccl_remote_error",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "remote process exited or there was a network error",
      .summary = "{who}: NCCL lost a peer (remote process exited or network error)[ on node "
                 "{node}]",
      .example = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                 "remote process exited or there was a network error, NCCL version 2.20.5" },
    { .id = "nccl_aborted",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "NCCL communicator was aborted",
      .example = "RuntimeError: NCCL communicator was aborted on rank 4." },
    { .id = "nccl_distbackend_terminate",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "c10::DistBackendError",
      .example = "terminate called after throwing an instance of 'c10::DistBackendError'" },
    { .id = "nccl_ib_completion",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "Got completion from peer",
      .after = "from peer ",
      .until = " with|,",
      .summary = "{who}: InfiniBand/EFA transfer failed[ (peer {detail})][ on node {node}]",
      .example = "ip-10-0-1-7:4242:4400 [2] NCCL WARN NET/IB : Got completion from peer "
                 "10.0.1.8<40112> with error 12, opcode 0, len 0, vendor err 129 (Recv)" },
    { .id = "nccl_system_error",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "ncclSystemError",
      .example = "ncclSystemError: System call (e.g. socket, malloc) or external library call "
                 "failed or device error." },
    { .id = "nccl_remote_enum",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "ncclRemoteError",
      .example = "ncclRemoteError: A call failed possibly due to a network error or a remote "
                 "process exiting prematurely." },
    { .id = "nccl_internal_error",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "ncclInternalError",
      .example = "ncclInternalError: Internal check failed." },
    { .id = "nccl_error",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .flags = PAT_NOCASE,
      .anchor = "NCCL error",
      .after = ", ",
      .until = " (|, NCCL version",
      .example = "RuntimeError: NCCL Error 2: unhandled system error" },
    { .id = "peer_connection_closed",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "Connection closed by",
      .also = "peer",
      .example = "ip-10-0-1-9:5151:5200 [0] NCCL WARN Net : Connection closed by remote peer "
                 "ip-10-0-1-7.ec2.internal<51234>" },
    { .id = "peer_connection_reset",
      .kind = DIAG_NCCL_ERROR,
      .role = Q,
      .anchor = "Connection reset by peer",
      .example = "ip-10-0-1-9:5151:5201 [0] NCCL WARN socketProgress: Connection reset by peer" },
    { .id = "nccl_warn",
      .kind = DIAG_NCCL_ERROR,
      .role = I,
      .anchor = "NCCL WARN",
      .after = "NCCL WARN ",
      .until = "\n",
      .example = "ip-10-0-1-7:4242:4242 [0] NCCL WARN NET/Plugin: Failed to find ncclNetPlugin_v8 "
                 "symbol." },

    /* torch.distributed rendezvous and store. */
    { .id = "socket_bind",
      .kind = DIAG_RENDEZVOUS,
      .role = C,
      .anchor = "server socket has failed to",
      .after = "name: ",
      .until = ",| ",
      .summary = "{who}: the rendezvous port is already in use or cannot be bound[ ({detail})]",
      .example = "torch.distributed.DistNetworkError: The server socket has failed to listen on "
                 "any local network address. port: 29500, useIpv6: 0, code: -98, name: "
                 "EADDRINUSE, message: address already in use" },
    { .id = "rdzv_timeout",
      .kind = DIAG_RENDEZVOUS,
      .role = Q,
      .anchor = "RendezvousTimeoutError",
      .example = "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError" },
    { .id = "rdzv_connection",
      .kind = DIAG_RENDEZVOUS,
      .role = Q,
      .anchor = "RendezvousConnectionError",
      .example = "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The "
                 "connection to the C10d store has failed. See inner exception for details." },
    { .id = "store_waiting_clients",
      .kind = DIAG_RENDEZVOUS,
      .role = Q,
      .anchor = "waiting for clients",
      .after = "waiting for clients. ",
      .until = " clients",
      .summary = "{who}: timed out waiting for all ranks to join[ ({detail} joined)]",
      .example = "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for "
                 "clients. 7/8 clients joined." },
    { .id = "store_barrier",
      .kind = DIAG_RENDEZVOUS,
      .role = Q,
      .anchor = "store based barrier",
      .example = "RuntimeError: Timed out initializing process group in store based barrier on "
                 "rank 3, for key: store_based_barrier_key:1 (world_size=8, "
                 "num_workers_joined=7, timeout=0:30:00)" },
    { .id = "dist_store_error",
      .kind = DIAG_RENDEZVOUS,
      .role = Q,
      .anchor = "DistStoreError",
      .example = "torch.distributed.DistStoreError: Socket Timeout" },
    { .id = "dist_network_error",
      .kind = DIAG_RENDEZVOUS,
      .role = Q,
      .anchor = "DistNetworkError",
      .example = "torch.distributed.DistNetworkError: Connection refused" },

    /* CUDA errors other than memory. */
    { .id = "cuda_device_assert",
      .kind = DIAG_ASSERTION,
      .role = C,
      .anchor = "device-side assert triggered",
      .summary = "{who}: a CUDA kernel assertion failed (device-side assert; often an index out "
                 "of range, e.g. a label >= num_classes)[ on node {node}]",
      .example = "RuntimeError: CUDA error: device-side assert triggered" },
    { .id = "c_assertion",
      .kind = DIAG_ASSERTION,
      .role = C,
      .anchor = "Assertion `",
      .after = "Assertion `",
      .until = "`|'",
      .example = "/opt/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_"
                 "cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < "
                 "n_classes` failed." },
    { .id = "cuda_illegal_address",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .anchor = "illegal memory access",
      .summary = "{who}: a CUDA kernel made an illegal memory access[ on node {node}]",
      .example = "RuntimeError: CUDA error: an illegal memory access was encountered" },
    { .id = "cuda_launch_failure",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .anchor = "unspecified launch failure",
      .example = "RuntimeError: CUDA error: unspecified launch failure" },
    { .id = "cuda_error",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .anchor = "CUDA error: ",
      .after = "CUDA error: ",
      .until = "\n",
      .example = "RuntimeError: CUDA error: misaligned address" },
    { .id = "cudnn_error",
      .kind = DIAG_CUDA_ERROR,
      .role = C,
      .anchor = "CUDNN_STATUS_",
      .after = "CUDNN_STATUS_",
      .until = " |,|.",
      .example = "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED" },

    /* Host memory. */
    { .id = "oom_killer",
      .kind = DIAG_HOST_OOM,
      .role = C,
      .flags = PAT_NOCASE,
      .anchor = "out of memory: Killed process",
      .after = "Killed process ",
      .until = " total-vm|,",
      .summary = "{who}: the kernel OOM killer killed[ process {detail}] (host memory "
                 "exhausted)[ on node {node}]",
      .example = "[901234.567890] Memory cgroup out of memory: Killed process 4242 (python3) "
                 "total-vm:98765432kB, anon-rss:87654321kB, file-rss:123456kB, shmem-rss:0kB" },
    { .id = "dataloader_bus_error",
      .kind = DIAG_BUS_ERROR,
      .role = C,
      .anchor = "is killed by signal: Bus error",
      .summary = "{who}: a DataLoader worker died of a bus error (usually /dev/shm too small)",
      .example = "RuntimeError: DataLoader worker (pid 5123) is killed by signal: Bus error. It "
                 "is possible that dataloader's workers are out of shared memory." },
    { .id = "dataloader_segfault",
      .kind = DIAG_SEGFAULT,
      .role = C,
      .anchor = "is killed by signal: Segmentation fault",
      .summary = "{who}: a DataLoader worker crashed with a segmentation fault",
      .example = "RuntimeError: DataLoader worker (pid 5124) is killed by signal: Segmentation "
                 "fault." },
    { .id = "dataloader_killed",
      .kind = DIAG_HOST_OOM,
      .role = C,
      .anchor = "DataLoader worker (pid",
      .summary = "{who}: a DataLoader worker was killed (usually host memory exhausted)[ on node "
                 "{node}]",
      .example = "RuntimeError: DataLoader worker (pid 5125) is killed by signal: Killed." },
    { .id = "bad_alloc",
      .kind = DIAG_HOST_OOM,
      .role = C,
      .anchor = "std::bad_alloc",
      .example = "terminate called after throwing an instance of 'std::bad_alloc'" },

    /* Crashes. */
    { .id = "shm_bus_error",
      .kind = DIAG_BUS_ERROR,
      .role = C,
      .anchor = "Unexpected bus error",
      .example = "ERROR: Unexpected bus error encountered in worker. This might be caused by "
                 "insufficient shared memory (shm)." },
    { .id = "bus_error",
      .kind = DIAG_BUS_ERROR,
      .role = C,
      .anchor = "Bus error",
      .example = "/bin/bash: line 1:  4242 Bus error               (core dumped) python3 "
                 "train.py" },
    { .id = "sigbus",
      .kind = DIAG_BUS_ERROR,
      .role = C,
      .anchor = "SIGBUS ",
      .example = "*** SIGBUS received at time=1714564801 on cpu 12 ***" },
    { .id = "sigbus_paren",
      .kind = DIAG_BUS_ERROR,
      .role = C,
      .anchor = "(SIGBUS)",
      .example = "Fatal signal 7 (SIGBUS) in dataloader worker 3" },
    { .id = "segfault",
      .kind = DIAG_SEGFAULT,
      .role = C,
      .anchor = "Segmentation fault",
      .example = "Fatal Python error: Segmentation fault" },
    { .id = "sigsegv",
      .kind = DIAG_SEGFAULT,
      .role = C,
      .anchor = "SIGSEGV",
      .example = "*** SIGSEGV received at time=1714564801 on cpu 3 ***" },
    { .id = "kernel_segfault",
      .kind = DIAG_SEGFAULT,
      .role = C,
      .anchor = "]: segfault at ",
      .after = "error ",
      .until = " in",
      .example = "[812345.100000] python3[4242]: segfault at 0 ip 00007f1c2b3d4e5f sp "
                 "00007ffd1a2b3c40 error 4 in libc.so.6[7f1c2b200000+195000]" },
    { .id = "disk_full",
      .kind = DIAG_DISK_FULL,
      .role = C,
      .anchor = "No space left on device",
      .after = "device: '",
      .until = "'",
      .example = "OSError: [Errno 28] No space left on device: '/checkpoints/step_4000/model.pt'" },

    /* The platform ended the rank. */
    { .id = "slurm_preempted",
      .kind = DIAG_PREEMPTION,
      .role = C,
      .anchor = "DUE TO PREEMPTION",
      .example = "slurmstepd: error: *** STEP 4242.0 ON gpu-017 CANCELLED AT 2024-05-01T12:00:00 "
                 "DUE TO PREEMPTION ***" },
    { .id = "slurm_node_fail",
      .kind = DIAG_NODE_LOST,
      .role = C,
      .anchor = "DUE TO NODE FAILURE",
      .example = "slurmstepd: error: *** JOB 4242 ON gpu-017 CANCELLED AT 2024-05-01T12:00:00 "
                 "DUE TO NODE FAILURE ***" },
    { .id = "slurm_time_limit",
      .kind = DIAG_DEADLINE,
      .role = C,
      .anchor = "DUE TO TIME LIMIT",
      .example = "slurmstepd: error: *** JOB 4242 ON gpu-017 CANCELLED AT 2024-05-01T12:00:00 "
                 "DUE TO TIME LIMIT ***" },
    { .id = "spot_interruption",
      .kind = DIAG_PREEMPTION,
      .role = C,
      .flags = PAT_NOCASE,
      .anchor = "spot interruption",
      .summary = "{who}: spot instance interruption[ on node {node}]",
      .example = "node-agent: EC2 spot interruption notice received, instance terminates at "
                 "2024-05-01T12:02:00Z" },
    { .id = "node_shutdown",
      .kind = DIAG_PREEMPTION,
      .role = C,
      .anchor = "imminent node shutdown",
      .example = "Pod was terminated in response to imminent node shutdown." },

    /* Launchers: torchrun, DeepSpeed, shells. */
    { .id = "torchrun_worker_failed",
      .kind = DIAG_EXIT,
      .role = S,
      .flags = PAT_EXITCODE,
      .anchor = "failed (exitcode: ",
      .num = "failed (exitcode: ",
      .after = "local_rank: ",
      .until = " ",
      .summary = "{who}: torchrun reports local rank {detail} failed ({text})",
      .example =
          "E0501 12:00:02.123000 140211 torch/distributed/elastic/multiprocessing/api.py:"
          "826] failed (exitcode: 1) local_rank: 5 (pid: 4320) of binary: /usr/bin/python3" },
    { .id = "torchrun_sigterm",
      .kind = DIAG_TERMINATED,
      .role = Q,
      .anchor = "closing signal SIGTERM",
      .example = "W0501 12:00:02.200000 140211 torch/distributed/elastic/multiprocessing/api.py:"
                 "851] Sending process 4321 closing signal SIGTERM" },
    { .id = "torchrun_death_signal",
      .kind = DIAG_TERMINATED,
      .role = Q,
      .anchor = "death signal, shutting down workers",
      .example = "W0501 12:00:00.000000 140211 torch/distributed/elastic/agent/server/api.py:704]"
                 " Received Signals.SIGTERM death signal, shutting down workers" },
    { .id = "deepspeed_exit",
      .kind = DIAG_EXIT,
      .role = S,
      .flags = PAT_EXITCODE,
      .anchor = "exits with return code = ",
      .num = "exits with return code = ",
      .summary = "{who}: the DeepSpeed launcher reports a worker failed ({text})",
      .example = "[2024-05-01 12:00:03,210] [ERROR] [launch.py:321:sigkill_handler] "
                 "['/usr/bin/python3', '-u', 'train.py', '--local_rank=5'] exits with return code "
                 "= 1" },
    { .id = "deepspeed_killing",
      .kind = DIAG_TERMINATED,
      .role = Q,
      .anchor = "Killing subprocess",
      .example = "[2024-05-01 12:00:03,100] [INFO] [launch.py:315:sigkill_handler] Killing "
                 "subprocess 4321" },
    { .id = "cpp_terminate",
      .kind = DIAG_EXIT,
      .role = S,
      .anchor = "terminate called after throwing",
      .after = "instance of '",
      .until = "'",
      .summary = "{who} aborted on an uncaught C++ exception[ ({detail})]",
      .example = "terminate called after throwing an instance of 'c10::Error'" },
    { .id = "fatal_python_error",
      .kind = DIAG_EXIT,
      .role = S,
      .anchor = "Fatal Python error: ",
      .after = "Fatal Python error: ",
      .until = "\n",
      .example = "Fatal Python error: Aborted" },
    { .id = "shell_killed",
      .kind = DIAG_KILLED,
      .role = S,
      .flags = PAT_WHOLE,
      .anchor = "Killed",
      .summary = "{who} was killed (SIGKILL; often the host OOM killer)",
      .example = "Killed" },
};

#undef C
#undef S
#undef Q
#undef I

/* Xid meanings (NVIDIA's Xid catalogue, summarised). Application-caused Xids are causes that a
 * restart does not fix; the ones that mean broken hardware implicate the node. */
static const struct diag_xid xids[] = {
    { 13, DIAG_CAUSE, DIAG_DETERMINISTIC, false,
      "graphics engine exception, usually an "
      "out-of-range access in a kernel" },
    { 31, DIAG_CAUSE, DIAG_RETRY_UNKNOWN, false,
      "GPU memory page fault, usually an illegal "
      "memory access by the application" },
    { 32, DIAG_CAUSE, DIAG_RETRYABLE, true, "invalid or corrupted push buffer stream" },
    { 38, DIAG_CAUSE, DIAG_RETRYABLE, true, "driver firmware error" },
    { 43, DIAG_CONSEQUENCE, DIAG_RETRY_UNKNOWN, false,
      "GPU stopped processing after an "
      "application error" },
    { 45, DIAG_CONSEQUENCE, DIAG_RETRY_UNKNOWN, false,
      "preemptive cleanup after earlier "
      "errors" },
    { 48, DIAG_CAUSE, DIAG_RETRYABLE, true, "double-bit (uncorrectable) ECC error" },
    { 61, DIAG_CAUSE, DIAG_RETRYABLE, true, "internal micro-controller breakpoint" },
    { 62, DIAG_CAUSE, DIAG_RETRYABLE, true, "internal micro-controller halt" },
    { 63, DIAG_INFO, DIAG_RETRYABLE, false, "ECC page retirement or row remapping recorded" },
    { 64, DIAG_CAUSE, DIAG_RETRYABLE, true, "ECC page retirement or row remapping failed" },
    { 69, DIAG_CAUSE, DIAG_RETRY_UNKNOWN, false, "graphics engine class error" },
    { 74, DIAG_CAUSE, DIAG_RETRYABLE, true, "NVLink error" },
    { 79, DIAG_CAUSE, DIAG_RETRYABLE, true, "GPU has fallen off the bus" },
    { 92, DIAG_INFO, DIAG_RETRYABLE, false, "high single-bit ECC error rate" },
    { 94, DIAG_CAUSE, DIAG_RETRYABLE, false,
      "contained ECC error; the application was "
      "stopped, the GPU is usable" },
    { 95, DIAG_CAUSE, DIAG_RETRYABLE, true, "uncontained ECC error; the GPU needs a reset" },
    { 109, DIAG_CAUSE, DIAG_RETRY_UNKNOWN, false, "context switch timeout" },
    { 119, DIAG_CAUSE, DIAG_RETRYABLE, true, "GSP RPC timeout" },
    { 120, DIAG_CAUSE, DIAG_RETRYABLE, true, "GSP error" },
    { 140, DIAG_CAUSE, DIAG_RETRYABLE, true, "unrecovered ECC error" },
};
static const struct diag_xid xid_unknown = { -1, DIAG_CAUSE, DIAG_RETRY_UNKNOWN, false,
                                             "GPU error" };

/* Container/pod status reasons, Kubernetes event reasons, cloud node events. */
static const struct diag_reason reasons[] = {
    { "OOMKilled", DIAG_HOST_OOM, DIAG_CAUSE, "container memory limit reached (OOMKilled)" },
    { "Evicted", DIAG_EVICTION, DIAG_CAUSE, "evicted by the kubelet" },
    { "EvictionByEvictionAPI", DIAG_EVICTION, DIAG_CAUSE, "evicted through the eviction API" },
    { "TerminationByKubelet", DIAG_EVICTION, DIAG_CAUSE, "terminated by the kubelet" },
    { "Preempted", DIAG_PREEMPTION, DIAG_CAUSE, "preempted" },
    { "Preempting", DIAG_PREEMPTION, DIAG_CAUSE, "preempted by a higher-priority pod" },
    { "PreemptionByScheduler", DIAG_PREEMPTION, DIAG_CAUSE, "preempted by the scheduler" },
    { "PreemptionByKubeScheduler", DIAG_PREEMPTION, DIAG_CAUSE, "preempted by the scheduler" },
    { "SpotInterruption", DIAG_PREEMPTION, DIAG_CAUSE, "spot instance interruption" },
    { "SpotInterrupted", DIAG_PREEMPTION, DIAG_CAUSE, "spot instance interruption" },
    { "NodeShutdown", DIAG_PREEMPTION, DIAG_CAUSE, "node shut down" },
    { "Shutdown", DIAG_PREEMPTION, DIAG_CAUSE, "node shut down" },
    { "NodeLost", DIAG_NODE_LOST, DIAG_CAUSE, "node lost" },
    { "NodeNotReady", DIAG_NODE_LOST, DIAG_CAUSE, "node not ready" },
    { "DeletionByTaintManager", DIAG_NODE_LOST, DIAG_CAUSE, "deleted after a node taint" },
    { "TaintManagerEviction", DIAG_NODE_LOST, DIAG_CAUSE, "evicted after a node taint" },
    { "DeletionByPodGC", DIAG_NODE_LOST, DIAG_CAUSE, "deleted by pod GC (node gone)" },
    { "DeadlineExceeded", DIAG_DEADLINE, DIAG_CAUSE, "active deadline exceeded" },
    { "ImagePullBackOff", DIAG_IMAGE_PULL, DIAG_CAUSE, "image pull back-off" },
    { "ErrImagePull", DIAG_IMAGE_PULL, DIAG_CAUSE, "image pull failed" },
    { "InvalidImageName", DIAG_IMAGE_PULL, DIAG_CAUSE, "invalid image name" },
    { "ErrImageNeverPull", DIAG_IMAGE_PULL, DIAG_CAUSE, "image not present, pull policy Never" },
    { "FailedScheduling", DIAG_SCHEDULING, DIAG_CAUSE, "no node fits" },
    { "Unschedulable", DIAG_SCHEDULING, DIAG_CAUSE, "no node fits" },
    { "CreateContainerConfigError", DIAG_LAUNCH_ERROR, DIAG_CAUSE, "bad container config" },
    { "CreateContainerError", DIAG_LAUNCH_ERROR, DIAG_CAUSE, "container could not be created" },
    { "RunContainerError", DIAG_LAUNCH_ERROR, DIAG_CAUSE, "container could not be run" },
    { "ContainerCannotRun", DIAG_LAUNCH_ERROR, DIAG_CAUSE, "container could not be run" },
    { "StartError", DIAG_LAUNCH_ERROR, DIAG_CAUSE, "container could not be started" },
    { "FailedMount", DIAG_LAUNCH_ERROR, DIAG_CAUSE, "volume mount failed" },
};

static const struct diag_exception exceptions[] = {
    { "OutOfMemoryError", DIAG_CUDA_OOM, DIAG_CAUSE },
    { "MemoryError", DIAG_HOST_OOM, DIAG_CAUSE },
    { "AssertionError", DIAG_ASSERTION, DIAG_CAUSE },
    { "FloatingPointError", DIAG_NAN_LOSS, DIAG_CAUSE },
    { "KeyboardInterrupt", DIAG_TERMINATED, DIAG_CONSEQUENCE },
    { "SystemExit", DIAG_EXIT, DIAG_SYMPTOM },
    { "DistBackendError", DIAG_NCCL_ERROR, DIAG_CONSEQUENCE },
    { "DistStoreError", DIAG_RENDEZVOUS, DIAG_CONSEQUENCE },
    { "DistNetworkError", DIAG_RENDEZVOUS, DIAG_CONSEQUENCE },
    { "RendezvousTimeoutError", DIAG_RENDEZVOUS, DIAG_CONSEQUENCE },
    { "RendezvousConnectionError", DIAG_RENDEZVOUS, DIAG_CONSEQUENCE },
    { "RendezvousClosedError", DIAG_RENDEZVOUS, DIAG_CONSEQUENCE },
    { "ConnectionResetError", DIAG_NCCL_ERROR, DIAG_CONSEQUENCE },
    { "BrokenPipeError", DIAG_NCCL_ERROR, DIAG_CONSEQUENCE },
    { "ConnectionRefusedError", DIAG_RENDEZVOUS, DIAG_CONSEQUENCE },
};

static const char *const role_names[] = { "cause", "symptom", "consequence", "info" };
static const char *const retry_names[] = { "kind", "retryable", "deterministic", "unknown" };

const struct diag_kind_info *patterns_kind(enum diag_kind kind)
{
    if ((int)kind < 0 || kind >= DIAG_KIND_COUNT)
        kind = DIAG_KIND_NONE;
    return &kinds[kind];
}

enum diag_kind patterns_kind_parse(const char *name)
{
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        if (name && strcmp(kinds[k].name, name) == 0)
            return (enum diag_kind)k;
    return DIAG_KIND_NONE;
}

const char *patterns_role_name(enum diag_role role)
{
    return (unsigned)role < 4 ? role_names[role] : "info";
}

const char *patterns_retry_name(enum diag_retry retry)
{
    return (unsigned)retry < 4 ? retry_names[retry] : "unknown";
}

enum diag_retry patterns_retry_of(enum diag_kind kind, enum diag_retry retry)
{
    return retry == DIAG_RETRY_KIND ? patterns_kind(kind)->retry : retry;
}

const struct diag_pattern *patterns_table(size_t *count)
{
    *count = sizeof(table) / sizeof(table[0]);
    return table;
}

const struct diag_xid *patterns_xid(long code)
{
    for (size_t i = 0; i < sizeof(xids) / sizeof(xids[0]); i++)
        if (xids[i].code == code)
            return &xids[i];
    return &xid_unknown;
}

const struct diag_reason *patterns_reason(const char *reason)
{
    if (!reason)
        return NULL;
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(reasons[i].reason, reason) == 0)
            return &reasons[i];
    return NULL;
}

const struct diag_exception *patterns_exception(const char *type, size_t len)
{
    const char *last = type;
    for (size_t i = 0; i < len; i++)
        if (type[i] == '.')
            last = type + i + 1;
    size_t n = len - (size_t)(last - type);
    for (size_t i = 0; i < sizeof(exceptions) / sizeof(exceptions[0]); i++)
        if (strlen(exceptions[i].type) == n && memcmp(exceptions[i].type, last, n) == 0)
            return &exceptions[i];
    return NULL;
}

const char *patterns_signal_name(int sig)
{
    static const char *const names[] = {
        [1] = "SIGHUP",   [2] = "SIGINT",   [3] = "SIGQUIT",  [4] = "SIGILL",   [5] = "SIGTRAP",
        [6] = "SIGABRT",  [7] = "SIGBUS",   [8] = "SIGFPE",   [9] = "SIGKILL",  [10] = "SIGUSR1",
        [11] = "SIGSEGV", [12] = "SIGUSR2", [13] = "SIGPIPE", [14] = "SIGALRM", [15] = "SIGTERM",
    };
    if (sig <= 0 || sig >= (int)(sizeof(names) / sizeof(names[0])))
        return NULL;
    return names[sig];
}
