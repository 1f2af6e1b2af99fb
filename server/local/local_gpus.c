/*
 * local_gpus: the local executor's GPUs (see gpus.h for how they are found): which rank holds
 * which, handed out lowest index first and given back when the rank ends. A rank names its GPUs
 * in its environment file (CUDA_VISIBLE_DEVICES, by UUID), so a daemon that restarts finds out
 * who holds what from the ranks it adopts.
 *
 * The table and the rank list are written on the controller thread under gpu_lock, which GET
 * /v1/nodes takes to read them.
 */
#include <fcntl.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/jsonx.h"
#include "server/local/local_internal.h"

int local_gpus_per_rank(const struct spec_view *v)
{
    return (int)jsonx_int(v->resources, "gpus", 0);
}

int local_gpus_free(struct local *l)
{
    int n = 0;
    pthread_mutex_lock(&l->gpu_lock);
    for (size_t i = 0; i < l->gpus.n; i++)
        n += l->gpu_job[i] == 0;
    pthread_mutex_unlock(&l->gpu_lock);
    return n;
}

int local_gpus_pick(struct local *l, int n, int *out)
{
    int k = 0;
    pthread_mutex_lock(&l->gpu_lock);
    for (size_t i = 0; i < l->gpus.n && k < n; i++)
        if (l->gpu_job[i] == 0)
            out[k++] = (int)i;
    pthread_mutex_unlock(&l->gpu_lock);
    return k == n ? 0 : -1;
}

void local_gpus_claim(struct local *l, const struct lrank *r)
{
    pthread_mutex_lock(&l->gpu_lock);
    for (int k = 0; k < r->ngpu; k++) {
        int i = r->gpu[k];
        l->gpu_job[i] = r->job_pk;
        snprintf(l->gpu_job_id[i], sizeof(l->gpu_job_id[i]), "%s", r->job_id);
        l->gpu_rank[i] = r->rank;
    }
    pthread_mutex_unlock(&l->gpu_lock);
}

void local_gpus_release(struct local *l, const struct lrank *r)
{
    pthread_mutex_lock(&l->gpu_lock);
    for (int k = 0; k < r->ngpu; k++)
        if (l->gpu_job[r->gpu[k]] == r->job_pk)
            l->gpu_job[r->gpu[k]] = 0;
    pthread_mutex_unlock(&l->gpu_lock);
}

/* The value of NAME= in a NUL-separated environment file's text, or NULL. */
static const char *env_value(const struct buf *text, const char *name)
{
    size_t nlen = strlen(name);
    for (size_t off = 0; off < text->len; off += strlen(text->data + off) + 1)
        if (strncmp(text->data + off, name, nlen) == 0 && text->data[off + nlen] == '=')
            return text->data + off + nlen + 1;
    return NULL;
}

void local_gpus_adopt(struct local *l, struct lrank *r)
{
    char path[PATH_MAX], chunk[65536];
    snprintf(path, sizeof(path), "%s/env", r->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct buf text = BUF_INIT;
    ssize_t n;
    while (text.len < (1u << 20) && (n = read(fd, chunk, sizeof(chunk))) > 0)
        buf_append(&text, chunk, (size_t)n);
    close(fd);
    const char *list = env_value(&text, "CUDA_VISIBLE_DEVICES");
    for (size_t i = 0; list && i < l->gpus.n && r->ngpu < GPUS_MAX; i++) {
        const char *uuid = l->gpus.gpu[i].uuid, *hit = uuid[0] ? strstr(list, uuid) : NULL;
        size_t len = strlen(uuid);
        if (hit && (hit == list || hit[-1] == ',') && (hit[len] == ',' || hit[len] == '\0'))
            r->gpu[r->ngpu++] = (int)i;
    }
    buf_release(&text);
}

static json_t *gpu_json(struct local *l, size_t i)
{
    const struct gpu *g = &l->gpus.gpu[i];
    json_t *o = json_pack("{s:i,s:s,s:s,s:I}", "index", g->index, "uuid", g->uuid, "name", g->name,
                          "memory_bytes", (json_int_t)g->memory_bytes);
    if (l->gpu_job[i])
        json_object_set_new(o, "job",
                            json_pack("{s:s,s:i}", "id", l->gpu_job_id[i], "rank", l->gpu_rank[i]));
    else
        json_object_set_new(o, "job", json_null());
    return o;
}

/* The jobs on the machine, each with its ranks, from the rank list (which GPU each rank holds
 * is in gpu_devices). */
static json_t *jobs_json(struct local *l)
{
    json_t *jobs = json_object();
    for (size_t i = 0; i < l->n; i++) {
        const struct lrank *r = l->ranks[i];
        json_t *ranks = json_object_get(jobs, r->job_id);
        if (!ranks)
            json_object_set_new(jobs, r->job_id, ranks = json_array());
        json_array_append_new(ranks, json_integer(r->rank));
    }
    json_t *out = json_array();
    const char *id;
    json_t *ranks;
    json_object_foreach(jobs, id, ranks)
    {
        json_array_append_new(out, json_pack("{s:s,s:O}", "id", id, "ranks", ranks));
    }
    json_decref(jobs);
    return out;
}

json_t *local_gpus_node(struct local *l)
{
    json_t *devices = json_array();
    int used = 0;
    pthread_mutex_lock(&l->gpu_lock);
    for (size_t i = 0; i < l->gpus.n; i++) {
        json_array_append_new(devices, gpu_json(l, i));
        used += l->gpu_job[i] != 0;
    }
    json_t *jobs = jobs_json(l);
    pthread_mutex_unlock(&l->gpu_lock);
    return json_pack("{s:s,s:s,s:b,s:{s:i,s:i},s:{s:i,s:i},s:o,s:s,s:o}", "name", "localhost",
                     "executor", "local", "ready", 1, "gpus", "capacity", (int)l->gpus.n, "used",
                     used, "slots", "capacity", l->opts.slots, "used", atomic_load(&l->used),
                     "gpu_devices", devices, "gpu_source", l->gpus.source, "jobs", jobs);
}
