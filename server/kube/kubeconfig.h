/*
 * kubeconfig: where the Kubernetes API server is and how to prove who we are, found the way
 * kubectl finds it: --kubeconfig, else the first existing file of $KUBECONFIG, else
 * ~/.kube/config, else the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT and the
 * token, CA and namespace files). Supports what `aws eks update-kubeconfig` writes (CA data and
 * an exec credential plugin) and the other common forms: CA file, client certificate and key
 * (data or files), bearer token or token file, insecure-skip-tls-verify.
 *
 * Ownership: struct kube_config lives in the caller's storage (kube_config_release frees its
 * strings). Not thread-safe while loading; read-only afterwards.
 */
#ifndef TY_KUBE_KUBECONFIG_H
#define TY_KUBE_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_exec {
    char *api_version; /* client.authentication.k8s.io/v1beta1, v1 or v1alpha1 */
    char *command;     /* resolved against the kubeconfig's directory when it has a '/' */
    char **args;       /* NULL-terminated */
    char **env;        /* "NAME=value", NULL-terminated */
    bool provide_cluster_info;
};

struct kube_config {
    char *source;  /* the file read, or "in-cluster" */
    char *context; /* the context used ("" in-cluster) */
    char *server;  /* https://host:port, without a trailing '/' */
    char *namespace;
    char *ca_data; /* PEM bytes, or NULL */
    size_t ca_len;
    char *ca_file;
    bool insecure;
    char *cert_data, *key_data; /* PEM, or NULL */
    size_t cert_len, key_len;
    char *cert_file, *key_file;
    char *token;      /* a static bearer token, or NULL */
    char *token_file; /* re-read as it rotates (service account, tokenFile), or NULL */
    struct kube_exec *exec;
};

/* Reads a kubeconfig file; context NULL or "" means current-context. */
int kube_config_load(struct kube_config *cfg, const char *path, const char *context,
                     struct err *err);
/* The in-cluster configuration from the environment and sa_dir (KUBE_SA_DIR in a pod). */
int kube_config_in_cluster(struct kube_config *cfg, const char *sa_dir, struct err *err);
/* kubectl's order: path (--kubeconfig) when given, else $KUBECONFIG, ~/.kube/config, in-cluster.
 * namespace, when given, overrides the context's. */
int kube_config_resolve(struct kube_config *cfg, const char *path, const char *context,
                        const char *namespace, struct err *err);
void kube_config_release(struct kube_config *cfg);

#endif
