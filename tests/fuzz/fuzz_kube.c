/*
 * fuzz_kube: what the Kubernetes API server and the cluster's configuration hand the daemon,
 * outside the watch and log streams' transport: Status error bodies, exec credential plugin
 * output, timestamped log lines, pod objects (container statuses) and kubeconfig files (YAML).
 * The first byte picks the parser; the rest is the input. Built once server/kube/ exists.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "core/jsonx.h"
#include "server/kube/auth.h"
#include "server/kube/client.h"
#include "server/kube/kubeconfig.h"
#include "server/kube/logs.h"
#include "tests/fuzz/fuzz.h"

static void status(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    long code = 400 + (long)(data[0] % 200) * (data[1] & 1 ? 1 : -1);
    struct err err;
    err_init(&err);
    char *body = malloc(size - 2 ? size - 2 : 1); /* exact size */
    memcpy(body, data + 2, size - 2);
    FUZZ_ASSERT(kube_status_err(code, body, size - 2, &err) == -1 && err_is_set(&err));
    free(body);
    err_release(&err);
}

static void credential(const uint8_t *data, size_t size)
{
    static const char *const versions[] = { "client.authentication.k8s.io/v1",
                                            "client.authentication.k8s.io/v1beta1",
                                            "client.authentication.k8s.io/v1alpha1", "bogus" };
    if (size < 1)
        return;
    char *out = malloc(size - 1 ? size - 1 : 1);
    memcpy(out, data + 1, size - 1);
    char *token = NULL, *cert = NULL, *key = NULL;
    int64_t expires = 0;
    struct err err;
    err_init(&err);
    if (kube_auth_parse_credential(out, size - 1, versions[data[0] % 4], &token, &cert, &key,
                                   &expires, &err) < 0)
        FUZZ_ASSERT(err_is_set(&err));
    free(token);
    free(cert);
    free(key);
    free(out);
    err_release(&err);
}

static void logline(const uint8_t *data, size_t size)
{
    char *line = malloc(size ? size : 1);
    memcpy(line, data, size);
    int64_t ts = 0;
    long off = kube_log_parse_ts(line, size, &ts);
    FUZZ_ASSERT(off == -1 || (off >= 0 && (size_t)off <= size));
    free(line);
}

static void pod(const uint8_t *data, size_t size)
{
    json_t *doc = jsonx_loadb((const char *)data, size, 32, NULL);
    if (!doc)
        return;
    struct kube_cstatus st;
    kube_cstatus_from_pod(doc, "pytorch", &st);
    kube_cstatus_from_pod(doc, "node", &st);
    json_decref(doc);
}

static void kubeconfig(const uint8_t *data, size_t size)
{
    int fd = memfd_create("kubeconfig", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    struct kube_config cfg;
    struct err err;
    err_init(&err);
    if (kube_config_load(&cfg, path, NULL, &err) == 0) {
        FUZZ_ASSERT(cfg.server);
        kube_config_release(&cfg);
    }
    err_release(&err);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0:
        status(data + 1, size - 1);
        break;
    case 1:
        credential(data + 1, size - 1);
        break;
    case 2:
        logline(data + 1, size - 1);
        break;
    case 3:
        pod(data + 1, size - 1);
        break;
    default:
        kubeconfig(data + 1, size - 1);
        break;
    }
    return 0;
}
