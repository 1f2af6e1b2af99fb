/*
 * kinds: the failure kinds and the small tables that classify non-log signals (see kinds.h).
 * Data only: the log patterns are in patterns.c, the decisions in diag.c and diagsum.c.
 *
 * All tables are const; thread-safe.
 */
#include "server/diag/kinds.h"

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
    [DIAG_PREFLIGHT] = KIND("preflight", "PreflightFailed", DIAG_RETRYABLE, 86, true, true,
                            "{who}: the node failed its preflight checks[ ({detail})][ on node "
                            "{node}]"),
    [DIAG_COMMAND_NOT_FOUND] =
        KIND("command_not_found", "CommandNotFound", DIAG_DETERMINISTIC, 81, false, false,
             "{who}: the command was not found or cannot be run[ "
             "({detail})][ on node {node}]"),
};

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
    { "PreflightFailed", DIAG_PREFLIGHT, DIAG_CAUSE, "node preflight check failed" },
    /* the local executor's reasons for exit codes 127 and 126 (what a shell answers) */
    { "CommandNotFound", DIAG_COMMAND_NOT_FOUND, DIAG_CAUSE, "exit code 127: command not found" },
    { "CommandNotExecutable", DIAG_COMMAND_NOT_FOUND, DIAG_CAUSE,
      "exit code 126: command not executable" },
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

const struct diag_kind_info *kinds_info(enum diag_kind kind)
{
    if ((int)kind < 0 || kind >= DIAG_KIND_COUNT)
        kind = DIAG_KIND_NONE;
    return &kinds[kind];
}

enum diag_kind kinds_parse(const char *name)
{
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        if (name && strcmp(kinds[k].name, name) == 0)
            return (enum diag_kind)k;
    return DIAG_KIND_NONE;
}

const char *kinds_role_name(enum diag_role role)
{
    return (unsigned)role < 4 ? role_names[role] : "info";
}

const char *kinds_retry_name(enum diag_retry retry)
{
    return (unsigned)retry < 4 ? retry_names[retry] : "unknown";
}

enum diag_retry kinds_retry_of(enum diag_kind kind, enum diag_retry retry)
{
    return retry == DIAG_RETRY_KIND ? kinds_info(kind)->retry : retry;
}

const struct diag_xid *kinds_xid(long code)
{
    for (size_t i = 0; i < sizeof(xids) / sizeof(xids[0]); i++)
        if (xids[i].code == code)
            return &xids[i];
    return &xid_unknown;
}

const struct diag_reason *kinds_reason(const char *reason)
{
    if (!reason)
        return NULL;
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(reasons[i].reason, reason) == 0)
            return &reasons[i];
    return NULL;
}

const struct diag_exception *kinds_exception(const char *type, size_t len)
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

const char *kinds_signal_name(int sig)
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
