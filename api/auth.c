/*
 * auth: authentication (bearer token -> principal) and authorisation (principal x route scope).
 * Reads the token on the caller's store connection, with a per-thread cache of recent lookups
 * (see authenticate); never writes on the request path (last-use times are batched by
 * store_token_touch).
 */
#include "api/auth.h"

#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "store/tokens.h"

const char *scope_name(enum scope s)
{
    static const char *const names[] = { "public", "read", "submit", "admin", "worker", "hook" };
    return (unsigned)s <= SCOPE_HOOK ? names[s] : "unknown";
}

int scope_parse(const char *name, enum scope *s)
{
    for (int i = SCOPE_READ; i <= SCOPE_WORKER; i++) {
        if (strcmp(name, scope_name((enum scope)i)) == 0) {
            *s = (enum scope)i;
            return 0;
        }
    }
    return -1;
}

static void anonymous(struct principal *who, enum scope scope)
{
    memset(who, 0, sizeof(*who));
    snprintf(who->name, sizeof(who->name), "anonymous");
    who->scope = scope;
}

/* The secret from "Authorization: Bearer <secret>", or NULL. */
static const char *bearer(struct request *req)
{
    const char *h = request_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    return *h ? h : NULL;
}

/*
 * Recent lookups, per thread: without them every authenticated request pays a SQLite read,
 * the largest part of a small GET. An entry lives AUTH_CACHE_NS and dies at once when this
 * daemon revokes a token or deletes a job (store_tokens_generation); a revocation made by
 * another process (`trainyard token revoke` on the host) takes effect within AUTH_CACHE_NS.
 * Only usable tokens are kept; expiry is checked on every use.
 */
#define AUTH_CACHE_NS    NS_PER_SEC
#define AUTH_CACHE_SLOTS 16

struct cached_token {
    char hash[SHA256_HEX_LEN];
    struct principal who;
    int64_t pk, expires_at, fetched;
    uint64_t generation;
};

static __thread struct cached_token auth_cache[AUTH_CACHE_SLOTS];

static struct cached_token *cache_slot(const char *hash)
{
    return &auth_cache[(unsigned char)hash[0] % AUTH_CACHE_SLOTS];
}

static const struct cached_token *cache_get(struct store *st, const char *hash)
{
    const struct cached_token *c = cache_slot(hash);
    bool fresh = c->fetched && clock_mono_ns() - c->fetched < AUTH_CACHE_NS &&
                 c->generation == store_tokens_generation(st);
    return fresh && strcmp(c->hash, hash) == 0 ? c : NULL;
}

static void cache_put(const char *hash, const struct principal *who, const struct token *t,
                      uint64_t generation)
{
    struct cached_token *c = cache_slot(hash);
    memcpy(c->hash, hash, sizeof(c->hash));
    c->who = *who;
    c->pk = t->pk;
    c->expires_at = t->expires_at;
    c->fetched = clock_mono_ns();
    c->generation = generation;
}

/* Checks a token read from the store and fills who; 0, or -1 with err. */
static int admit(const struct token *t, int64_t now, struct principal *who, struct err *err)
{
    if (t->revoked_at)
        return err_set(err, ERR_UNAUTHORIZED, "the token was revoked");
    if (t->expires_at && t->expires_at <= now)
        return err_set(err, ERR_UNAUTHORIZED, "the token has expired");
    if (scope_parse(t->scope, &who->scope) < 0)
        return err_set(err, ERR_UNAUTHORIZED, "the token has an unknown scope");
    snprintf(who->name, sizeof(who->name), "%s", t->name);
    snprintf(who->token_id, sizeof(who->token_id), "%s", t->id);
    snprintf(who->job_id, sizeof(who->job_id), "%s", t->job_id ? t->job_id : "");
    return 0;
}

static int authenticate(struct request *req, struct err *err)
{
    struct store *st = req->api->store;
    const char *secret = bearer(req);
    if (!secret)
        return err_set(err, ERR_UNAUTHORIZED,
                       "this operation needs a token: send 'Authorization: Bearer <token>'");
    char hash[SHA256_HEX_LEN];
    crypto_sha256_hex(secret, strlen(secret), hash);
    int64_t now = clock_now_ns();
    const struct cached_token *hit = cache_get(st, hash);
    if (hit && (!hit->expires_at || hit->expires_at > now)) {
        req->who = hit->who;
        store_token_touch(st, hit->pk, now);
        return 0;
    }
    uint64_t generation = store_tokens_generation(st); /* read before the row it vouches for */
    struct err lookup;
    err_init(&lookup);
    struct token *t = store_token_by_hash(st, hash, &lookup);
    if (!t) {
        int unknown = lookup.code == ERR_NOT_FOUND;
        err_release(&lookup);
        if (unknown)
            return err_set(err, ERR_UNAUTHORIZED, "the token is not valid");
        return err_set(err, ERR_UNAVAILABLE, "cannot check the token now; try again");
    }
    int rc = admit(t, now, &req->who, err);
    if (rc == 0) {
        cache_put(hash, &req->who, t, generation);
        store_token_touch(st, t->pk, now);
    }
    token_free(t);
    return rc;
}

/* Scopes nest: admin > submit > read. */
static int rank_of(enum scope s)
{
    return s == SCOPE_ADMIN ? 3 : s == SCOPE_SUBMIT ? 2 : s == SCOPE_READ ? 1 : 0;
}

static int authorize(struct request *req, const struct route *route, struct err *err)
{
    enum scope have = req->who.scope;
    if (have == SCOPE_WORKER) {
        bool own_job = route->scope == SCOPE_WORKER && req->nparams > 0 &&
                       strcmp(req->params[0], req->who.job_id) == 0;
        if (own_job)
            return 0;
        return err_set(err, ERR_FORBIDDEN, "a worker token cannot perform %s", route->operation_id);
    }
    enum scope need = route->scope == SCOPE_WORKER ? SCOPE_ADMIN : route->scope;
    if (rank_of(have) >= rank_of(need))
        return 0;
    return err_set(err, ERR_FORBIDDEN, "%s needs a token with scope '%s'; this one has '%s'",
                   route->operation_id, scope_name(need), scope_name(have));
}

int auth_check(struct request *req, const struct route *route, struct err *err)
{
    if (route->scope == SCOPE_PUBLIC || route->scope == SCOPE_HOOK) {
        anonymous(&req->who, SCOPE_PUBLIC);
        return 0;
    }
    if (!req->api->auth_enabled) {
        anonymous(&req->who, SCOPE_ADMIN);
        return 0;
    }
    if (authenticate(req, err) < 0)
        return -1;
    return authorize(req, route, err);
}

int auth_token_create(struct store *st, const char *name, enum scope scope, int64_t job_pk,
                      int64_t expires_at, const char *created_by, char secret[TOKEN_SECRET_MAX],
                      char id_out[32], struct err *err)
{
    char body[41], id[17], hash[SHA256_HEX_LEN];
    crypto_random_id(body, 40);
    crypto_random_id(id, 16);
    snprintf(secret, TOKEN_SECRET_MAX, "ty_%s", body);
    snprintf(id_out, 32, "tok_%s", id);
    crypto_sha256_hex(secret, strlen(secret), hash);
    struct token_new t = { .id = id_out,
                           .name = name,
                           .hash = hash,
                           .scope = scope_name(scope),
                           .job_pk = job_pk,
                           .expires_at = expires_at,
                           .created_by = created_by,
                           .now = clock_now_ns() };
    return store_token_insert(st, &t, err);
}

int auth_token_ensure(struct store *st, const char *name, const char *secret, struct err *err)
{
    char hash[SHA256_HEX_LEN];
    crypto_sha256_hex(secret, strlen(secret), hash);
    struct err lookup;
    err_init(&lookup);
    struct token *t = store_token_by_hash(st, hash, &lookup);
    int found = t && !t->revoked_at && strcmp(t->scope, "admin") == 0;
    token_free(t);
    if (!t && lookup.code != ERR_NOT_FOUND) {
        err_move(err, &lookup);
        return -1;
    }
    err_release(&lookup);
    if (found)
        return 0;
    if (t)
        return err_set(err, ERR_CONFLICT, "the given admin token was revoked or is not admin");
    char id[17], idbuf[32];
    crypto_random_id(id, 16);
    snprintf(idbuf, sizeof(idbuf), "tok_%s", id);
    struct token_new tn = { .id = idbuf,
                            .name = name,
                            .hash = hash,
                            .scope = "admin",
                            .created_by = "bootstrap",
                            .now = clock_now_ns(),
                            .replaces_bootstrap = true };
    return store_token_insert(st, &tn, err);
}
