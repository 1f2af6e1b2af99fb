/*
 * Every route, every kind of caller: no token, read, submit, admin, and a worker token bound to
 * one job. A caller without the route's scope gets 403 (401 without a token) before any handler
 * runs; a caller with it never does. Driven from api/routes.c, so a new route is covered (and
 * must have a scope) the moment it is added.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/rendezvous.h"
#include "api/routes.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/wakeups.h"
#include "store/jobs.h"
#include "store/store.h"
#include "store/tokens.h"

struct caller {
    const char *what;
    enum scope scope; /* SCOPE_PUBLIC: no token */
    char secret[TOKEN_SECRET_MAX];
};

static const char *current_auth;

static const char *header(struct request *req, const char *name)
{
    (void)req;
    return strcmp(name, "Authorization") == 0 ? current_auth : NULL;
}

static const char *no_query(struct request *req, const char *name)
{
    (void)req;
    (void)name;
    return NULL;
}

/* The route's pattern with every {param} replaced by value. */
static void fill(const char *pattern, const char *value, char *out, size_t size)
{
    struct buf b = BUF_INIT;
    for (const char *p = pattern; *p; p++) {
        if (*p == '{') {
            buf_puts(&b, value);
            p = strchr(p, '}');
        } else {
            buf_putc(&b, *p);
        }
    }
    snprintf(out, size, "%s", buf_cstr(&b));
    buf_release(&b);
}

static bool allowed(enum scope have, const struct route *r, bool own_job)
{
    if (r->scope == SCOPE_PUBLIC || r->scope == SCOPE_HOOK)
        return true;
    if (have == SCOPE_PUBLIC)
        return false;
    if (have == SCOPE_WORKER)
        return r->scope == SCOPE_WORKER && own_job;
    int rank[] = { [SCOPE_READ] = 1, [SCOPE_SUBMIT] = 2, [SCOPE_ADMIN] = 3 };
    enum scope need = r->scope == SCOPE_WORKER ? SCOPE_ADMIN : r->scope;
    return rank[have] >= rank[need];
}

static int call(struct api *api, const struct route *r, const char *path, const char *auth)
{
    struct request req = { .api = api,
                           .method = r->method,
                           .path = path,
                           .header = header,
                           .query = no_query,
                           .body = "",
                           .client_addr = "127.0.0.1" };
    struct response res = { 0 };
    current_auth = auth;
    api_handle(&req, &res);
    int status = res.deferred ? 202 : res.status;
    /* A handler may refuse too (a submit token cancelling someone else's job; a hook, whose
     * trigger authenticates its sender itself): only the refusals of authentication and scope
     * count here. */
    bool own_auth = r->scope == SCOPE_HOOK && status == 401;
    if ((status == 403 || own_auth) && !strstr(buf_cstr(&res.body), "scope") &&
        !strstr(buf_cstr(&res.body), "worker token"))
        status = 200;
    if (res.stream)
        res.stream->free(res.stream), res.stream = NULL;
    response_release(&res);
    return status;
}

static const struct route *route_named(const char *op)
{
    for (size_t i = 0; i < routes_count; i++)
        if (strcmp(routes[i].operation_id, op) == 0)
            return &routes[i];
    abort();
}

static void check_route(struct api *api, const struct route *r, struct caller *callers, size_t n,
                        const char *worker_job)
{
    char own[256], other[256];
    fill(r->pattern, worker_job, own, sizeof(own));
    fill(r->pattern, "someotherjob", other, sizeof(other));
    for (size_t i = 0; i < n; i++) {
        char auth[96];
        snprintf(auth, sizeof(auth), "Bearer %s", callers[i].secret);
        const char *a = callers[i].scope == SCOPE_PUBLIC ? NULL : auth;
        for (int k = 0; k < 2; k++) {
            bool own_job = k == 0 && strchr(r->pattern, '{');
            int status = call(api, r, k == 0 ? own : other, a);
            bool ok = allowed(callers[i].scope, r, own_job);
            bool denied = status == 401 || status == 403;
            if (ok == denied)
                fprintf(stderr, "%s %s as %s: status %d\n", http_method_name(r->method),
                        k == 0 ? own : other, callers[i].what, status);
            CHECK(ok != denied);
            if (!ok && callers[i].scope == SCOPE_PUBLIC)
                CHECK_INT(status, 401);
            if (!ok && callers[i].scope != SCOPE_PUBLIC)
                CHECK_INT(status, 403);
        }
    }
}

int main(void)
{
    char dir[] = "/tmp/test_scopes.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[64];
    snprintf(path, sizeof(path), "%s/db", dir);
    struct err err;
    err_init(&err);
    struct store *st = store_open(path, NULL, &err);
    CHECK(st != NULL);
    struct api api = { .store = st,
                       .wakeups = wakeups_new(),
                       .auth_enabled = true,
                       .default_executor = "local",
                       .local_enabled = true,
                       .local_slots = 8 };
    api.limits = (struct api_limits){ .spec = { .max_string_bytes = 65536,
                                                .max_ranks = 64,
                                                .max_nodes = 8,
                                                .max_procs_per_node = 8,
                                                .max_env = 64,
                                                .max_labels = 64,
                                                .max_args = 64 },
                                      .max_body_bytes = 1 << 20,
                                      .max_json_depth = 32,
                                      .max_list_limit = 100,
                                      .max_log_limit = 1000,
                                      .max_followers_per_client = 4 };
    rendezvous_init(&api);
    struct job_new jn = { .id = "workerjob",
                          .name = "w",
                          .executor = "local",
                          .spec = "{\"name\":\"w\"}",
                          .nranks = 1,
                          .owner = "admin",
                          .now = clock_now_ns() };
    struct job_inserted ins;
    CHECK_INT(store_job_insert(st, &jn, &ins, &err), 0);
    struct caller callers[] = {
        { "nobody", SCOPE_PUBLIC, "" }, { "read", SCOPE_READ, "" },
        { "submit", SCOPE_SUBMIT, "" }, { "admin", SCOPE_ADMIN, "" },
        { "worker", SCOPE_WORKER, "" },
    };
    size_t n = sizeof(callers) / sizeof(callers[0]);
    for (size_t i = 1; i < n; i++) {
        char id[32];
        CHECK_INT(auth_token_create(st, callers[i].what, callers[i].scope,
                                    callers[i].scope == SCOPE_WORKER ? ins.pk : 0, 0, "test",
                                    callers[i].secret, id, &err),
                  0);
    }
    for (size_t r = 0; r < routes_count; r++)
        check_route(&api, &routes[r], callers, n, "workerjob");
    /* Expired and revoked tokens are refused like missing ones. */
    const struct route *list = route_named("jobs_list");
    char secret[TOKEN_SECRET_MAX], id[32], auth[96];
    auth_token_create(st, "short", SCOPE_ADMIN, 0, clock_now_ns() - 1, "test", secret, id, &err);
    snprintf(auth, sizeof(auth), "Bearer %s", secret);
    CHECK_INT(call(&api, list, "/v1/jobs", auth), 401);
    CHECK_INT(store_token_revoke(st, "admin", clock_now_ns(), &err), 0);
    snprintf(auth, sizeof(auth), "Bearer %s", callers[3].secret);
    CHECK_INT(call(&api, list, "/v1/jobs", auth), 401);
    CHECK_INT(call(&api, list, "/v1/jobs", "Bearer ty_notatoken"), 401);
    CHECK_INT(call(&api, list, "/v1/jobs", "Basic dXNlcjpwdw=="), 401);
    /* Issue 17: a new secret in --admin-token-file made the daemon refuse to start (the name
     * was taken). It replaces the old one, which stops working; a revoked secret stays so. */
    const char *first = "ty_firstadminsecret0123456789", *second = "ty_secondadminsecret012345678";
    CHECK_INT(auth_token_ensure(st, "admin-bootstrap", first, &err), 0);
    CHECK_INT(auth_token_ensure(st, "admin-bootstrap", first, &err), 0);
    CHECK_INT(auth_token_ensure(st, "admin-bootstrap", second, &err), 0);
    snprintf(auth, sizeof(auth), "Bearer %s", second);
    CHECK_INT(call(&api, list, "/v1/jobs", auth), 200);
    snprintf(auth, sizeof(auth), "Bearer %s", first);
    CHECK_INT(call(&api, list, "/v1/jobs", auth), 401);
    CHECK_INT(auth_token_ensure(st, "admin-bootstrap", first, &err), -1);
    CHECK_INT(err.code, ERR_CONFLICT);
    err_release(&err);
    err_init(&err);
    rendezvous_release(&api);
    store_close(st);
    wakeups_free(api.wakeups);
    err_release(&err);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    return check_done();
}
