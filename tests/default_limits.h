/*
 * default_limits: the daemon's default request limits, from server/daemon/config.c's option table
 * (not the environment), for the tests and fuzz targets that validate specs as a default daemon
 * would. For single-threaded callers.
 */
#ifndef TY_TESTS_DEFAULT_LIMITS_H
#define TY_TESTS_DEFAULT_LIMITS_H

#include <stdbool.h>

#include "api/api.h"
#include "server/daemon/config.h"

static inline const struct api_limits *default_limits(void)
{
    static struct api_limits limits;
    static bool loaded;
    if (!loaded) {
        struct config cfg;
        config_defaults(&cfg);
        limits = cfg.limits;
        config_release(&cfg);
        loaded = true;
    }
    return &limits;
}

#endif
