/*
 * rankenv: reads the rank variables once at start; the struct is then passed by pointer.
 * No global state; does not modify the environment.
 */
#include "worker/rankenv.h"

#include <stdlib.h>

#include "core/parse.h"

const char *rankenv_get(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int int_var(const char *name, int min, int max, int def, int *out, struct err *err)
{
    const char *v = rankenv_get(name);
    *out = def;
    if (!v)
        return 0;
    if (parse_int(v, min, max, out) < 0)
        return err_set(err, ERR_INVALID, "%s=%s: expected an integer in [%d, %d]", name, v, min,
                       max);
    return 0;
}

int rankenv_load(struct rankenv *re, struct err *err)
{
    memset(re, 0, sizeof(*re));
    if (int_var("WORLD_SIZE", 1, 1 << 20, 1, &re->world_size, err) < 0 ||
        int_var("RANK", 0, (1 << 20) - 1, 0, &re->rank, err) < 0 ||
        int_var("LOCAL_RANK", 0, 1 << 16, 0, &re->local_rank, err) < 0 ||
        int_var("LOCAL_WORLD_SIZE", 0, 1 << 16, 0, &re->local_world_size, err) < 0 ||
        int_var("MASTER_PORT", 1, 65535, 0, &re->master_port, err) < 0)
        return -1;
    if (re->rank >= re->world_size)
        return err_set(err, ERR_INVALID, "RANK=%d is not below WORLD_SIZE=%d", re->rank,
                       re->world_size);
    const char *addr = rankenv_get("MASTER_ADDR");
    if (addr)
        snprintf(re->master_addr, sizeof(re->master_addr), "%s", addr);
    const char *job = rankenv_get("TRAINYARD_JOB_ID");
    if (job)
        snprintf(re->job_id, sizeof(re->job_id), "%s", job);
    return 0;
}
