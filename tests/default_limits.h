/*
 * default_limits: the daemon's default request limits (server/config.c's --max-* defaults), for
 * the tests and fuzz targets that validate specs as a default daemon would.
 */
#ifndef TY_TESTS_DEFAULT_LIMITS_H
#define TY_TESTS_DEFAULT_LIMITS_H

#include "api/api.h"

static const struct api_limits default_limits = {
    .max_body_bytes = 1 << 20,
    .max_json_depth = 32,
    .max_string_bytes = 64 << 10,
    .max_ranks = 4096,
    .max_nodes = 1024,
    .max_procs_per_node = 64,
    .max_env = 256,
    .max_labels = 64,
    .max_args = 4096,
    .max_list_limit = 1000,
    .max_log_limit = 100000,
    .max_followers_per_client = 64,
};

#endif
