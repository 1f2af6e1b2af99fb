/*
 * token_cmd: `trainyard token create|list|revoke` on the server's database, for the operator
 * who has the data directory (first admin token, break-glass revocation). It opens the SQLite
 * file next to a running daemon safely (WAL, busy timeout). Output goes to stdout.
 */
#include "server/daemon/token_cmd.h"

#include "api/auth.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "store/tokens.h"

struct token_args {
    const char *data_dir;
    const char *name;
    const char *scope;
    const char *expires_in;
    const char *target;
};

static int token_usage(void)
{
    fprintf(stderr, "usage: trainyard token create --name NAME --scope read|submit|admin "
                    "[--expires-in 90d] [--data-dir DIR]\n"
                    "       trainyard token list [--data-dir DIR]\n"
                    "       trainyard token revoke ID|NAME [--data-dir DIR]\n"
                    "The data directory defaults to $TRAINYARD_DATA_DIR or ./trainyard-data.\n");
    return 2;
}

static int parse_args(int argc, char **argv, struct token_args *a)
{
    const char *env = getenv("TRAINYARD_DATA_DIR");
    a->data_dir = env && *env ? env : "./trainyard-data";
    for (int i = 2; i < argc; i++) {
        const char **slot = NULL;
        if (strcmp(argv[i], "--data-dir") == 0)
            slot = &a->data_dir;
        else if (strcmp(argv[i], "--name") == 0)
            slot = &a->name;
        else if (strcmp(argv[i], "--scope") == 0)
            slot = &a->scope;
        else if (strcmp(argv[i], "--expires-in") == 0)
            slot = &a->expires_in;
        if (slot) {
            if (++i >= argc)
                return -1;
            *slot = argv[i];
        } else if (argv[i][0] != '-' && !a->target) {
            a->target = argv[i];
        } else {
            return -1;
        }
    }
    return 0;
}

static int create(struct store *st, const struct token_args *a, struct err *err)
{
    enum scope scope;
    int64_t ttl = 0;
    if (!a->name || !a->scope || scope_parse(a->scope, &scope) < 0 || scope == SCOPE_WORKER)
        return err_set(err, ERR_INVALID, "create needs --name and --scope read|submit|admin");
    if (a->expires_in && (parse_duration(a->expires_in, &ttl) < 0 || ttl <= 0))
        return err_set(err, ERR_INVALID, "--expires-in must be a duration such as 90d");
    char secret[TOKEN_SECRET_MAX], id[32];
    if (auth_token_create(st, a->name, scope, 0, ttl ? clock_now_ns() + ttl : 0, "cli", secret, id,
                          err) < 0)
        return -1;
    struct audit_entry e = { .actor = "cli", .action = "token.create", .target = id };
    store_audit_add(st, &e, NULL);
    printf("%s\n", secret);
    fprintf(stderr, "token %s (%s, scope %s) created; the secret above is not shown again\n", id,
            a->name, a->scope);
    return 0;
}

static int list(struct store *st, struct err *err)
{
    struct token **t;
    size_t n;
    if (store_token_list(st, &t, &n, err) < 0)
        return -1;
    printf("%-22s %-24s %-7s %-8s %s\n", "ID", "NAME", "SCOPE", "STATE", "LAST USED");
    int64_t now = clock_now_ns();
    for (size_t i = 0; i < n; i++) {
        char used[CLOCK_RFC3339_MAX] = "never";
        if (t[i]->last_used_at)
            clock_format(t[i]->last_used_at, used);
        const char *state = t[i]->revoked_at                              ? "revoked"
                            : t[i]->expires_at && t[i]->expires_at <= now ? "expired"
                                                                          : "active";
        printf("%-22s %-24s %-7s %-8s %s\n", t[i]->id, t[i]->name, t[i]->scope, state, used);
    }
    tokens_free(t, n);
    return 0;
}

int token_main(int argc, char **argv)
{
    struct token_args a = { 0 };
    if (argc < 2 || parse_args(argc, argv, &a) < 0)
        return token_usage();
    struct err err;
    err_init(&err);
    char *path = xasprintf("%s/trainyard.db", a.data_dir);
    struct store_options so = { .sync_full = true, .busy_timeout_ms = 10000, .max_batch = 16 };
    struct store *st = store_open(path, &so, &err);
    free(path);
    int rc = -1;
    if (!st)
        goto out;
    if (strcmp(argv[1], "create") == 0)
        rc = create(st, &a, &err);
    else if (strcmp(argv[1], "list") == 0)
        rc = list(st, &err);
    else if (strcmp(argv[1], "revoke") == 0 && a.target)
        rc = store_token_revoke(st, a.target, clock_now_ns(), &err);
    else
        err_set(&err, ERR_INVALID, "unknown token command (see trainyard token)");
    if (rc == 0 && strcmp(argv[1], "revoke") == 0)
        fprintf(stderr, "token %s revoked\n", a.target);
out:
    if (rc < 0)
        fprintf(stderr, "trainyard token: %s\n", err.msg);
    store_close(st);
    err_release(&err);
    return rc < 0 ? 1 : 0;
}
