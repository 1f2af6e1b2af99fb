/*
 * config: the daemon's settings. One table (config.c) names each setting once and drives all
 * of its sources, in increasing precedence: the built-in default, the YAML file given with
 * --config, the environment (TRAINYARD_<NAME>), and the command line (--<name>). `serve --help`
 * prints the same table.
 */
#ifndef TY_CONFIG_H
#define TY_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "api/api.h"
#include "core/err.h"

struct config {
    char *config_file;
    char *listen;
    char *data_dir;
    char *executor;
    bool auth;
    char *admin_token_file;
    bool allow_insecure_http;
    char *tls_cert;
    char *tls_key;
    char *tls_client_ca;
    char *public_url;
    char *log_level;
    int http_threads;
    int connection_limit;
    int per_ip_limit;
    int timeout_seconds;
    int header_timeout_seconds;
    bool sync_full;
    int local_slots;
    char *local_gpus;    /* auto, none, or a list */
    char *test_gpus;     /* TESTS ONLY */
    char *local_sandbox; /* auto, required, off */
    int local_uid_base;
    int local_uids;
    int local_pids_max;
    char *local_checkpoint_roots;
    int64_t stop_grace_ns;
    int64_t restart_backoff_ns, restart_backoff_max_ns; /* before the controller's restarts */
    int64_t log_max_bytes;                              /* per job */
    int64_t log_max_age_ns;                             /* per line */
    int64_t log_max_line;                               /* bytes kept of one line */
    int64_t log_poll_ns;                                /* how often rank log files are read */
    char *kubeconfig;
    char *kube_context;
    char *kube_namespace;
    /* The daemon's own in the cluster: no non-admin job may use them (api/policy.h). */
    char *kube_daemon_namespace; /* "": its pod's, when it runs in one */
    char *kube_daemon_service_accounts;
    char *kube_daemon_volume_claims;
    int kube_log_streams;
    bool diagnosis; /* feed every stored log line to the jobs' diagnoses */
    int64_t stall_floor_ns;
    char *prometheus_url;
    int64_t prometheus_interval_ns;
    int64_t hook_max_body;
    bool trigger_submit_paused;
    char *sns_cert_ca;
    char *test_sns_cert_host; /* TESTS ONLY */
    char *test_sns_ca_file;   /* TESTS ONLY */
    int webhook_workers;
    int64_t webhook_timeout_ns;
    int64_t webhook_retry_base_ns;
    int64_t webhook_retry_max_ns;
    int webhook_attempts;
    bool webhook_allow_local;
    struct api_limits limits;
};

/* Every setting at its default, as the option table gives it: no file, environment or flag read.
 * Free with config_release(). */
void config_defaults(struct config *cfg);
/* Fills cfg from defaults, file, environment and argv (argv[0] is the subcommand). Prints
 * help and returns 1 for --help; -1 with err on a bad setting. */
int config_load(struct config *cfg, int argc, char **argv, struct err *err);
void config_release(struct config *cfg);
void config_help(FILE *out);

#endif
