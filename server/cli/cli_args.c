/*
 * cli_args: the CLI's command line and settings. Options may come before or after the command
 * ("--opt value", "--opt=value", "-o json"); each names the commands that take it. The server
 * URL, token, CA bundle, output and retry budget come from the first of: flag, environment
 * (TRAINYARD_URL, TRAINYARD_TOKEN, TRAINYARD_CACERT, TRAINYARD_OUTPUT, TRAINYARD_RETRY_FOR),
 * config file (--config, TRAINYARD_CONFIG, $XDG_CONFIG_HOME or ~/.config/trainyard/config.yaml).
 */
#include <stddef.h>
#include <sys/stat.h>

#include "server/cli/cli_args.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "core/yamljson.h"

enum kind { FLAG, VALUE, MULTI };

struct opt {
    const char *name;
    char shrt;
    enum kind kind;
    size_t off;
    const char *cmds; /* " submit wait ": the commands that take it; NULL: every command */
    const char *arg;  /* the value's name in the help, or NULL */
    const char *help;
};

#define A(f) offsetof(struct cli_args, f)
static const struct opt opts[] = {
    { "url", 0, VALUE, A(url), NULL, "URL", "daemon address (TRAINYARD_URL)" },
    { "token", 0, VALUE, A(token), NULL, "TOKEN", "API token (TRAINYARD_TOKEN)" },
    { "config", 0, VALUE, A(config), NULL, "FILE", "config file (TRAINYARD_CONFIG)" },
    { "output", 'o', VALUE, A(output), NULL, "text|json", "for people (default) or scripts" },
    { "cacert", 0, VALUE, A(cacert), NULL, "FILE", "CA bundle to verify the daemon's TLS" },
    { "retry-for", 0, VALUE, A(retry_for), NULL, "DUR", "give up on the daemon after (60s)" },
    { "quiet", 'q', FLAG, A(quiet), NULL, NULL, "no notes on stderr" },
    { "help", 'h', FLAG, A(help), NULL, NULL, "this help" },
    { "set", 0, MULTI, A(sets), " submit ", "PATH=VALUE", "override a spec field (repeatable)" },
    { "template", 0, VALUE, A(template_name), " submit ", "NAME", "submit from a template" },
    { "idempotency-key", 0, VALUE, A(idempotency_key), " submit ", "KEY",
      "same key, same job (default: a new key)" },
    { "dry-run", 0, FLAG, A(dry_run), " submit ", NULL, "validate and render, store nothing" },
    { "follow", 'f', FLAG, A(follow), " submit logs ", NULL, "stream the log until the job ends" },
    { "wait", 'w', FLAG, A(wait), " submit ", NULL, "wait for the end; exit status = result" },
    { "timeout", 0, VALUE, A(timeout), " submit wait ", "DUR", "stop waiting after DUR" },
    { "state", 0, VALUE, A(state), " jobs ", "S,S", "only jobs in these states" },
    { "selector", 'l', VALUE, A(selector), " jobs ", "SEL", "labels: team=nlp,env!=dev" },
    { "name", 0, VALUE, A(name), " jobs ", "NAME", "only jobs with this name" },
    { "limit", 0, VALUE, A(limit), " jobs usage ", "N", "at most N jobs (50) or groups (1000)" },
    { "rank", 0, VALUE, A(rank), " logs ", "R", "only these ranks (0,3-5)" },
    { "attempt", 0, VALUE, A(attempt), " logs ", "N", "only this attempt (0: the first run)" },
    { "since", 0, VALUE, A(since), " logs ", "TIME", "from this time on (RFC 3339, or 10m ago)" },
    { "until", 0, VALUE, A(until), " logs ", "TIME", "before this time (RFC 3339, or 5m ago)" },
    { "grep", 0, VALUE, A(grep), " logs ", "Q", "only lines with these words, \"phrases\"" },
    { "tail", 0, VALUE, A(tail), " logs ", "N", "the last N lines (then on, with -f)" },
    { "stream", 0, VALUE, A(stream), " logs ", "stdout|stderr", "one stream only" },
    { "strip-ansi", 0, FLAG, A(strip_ansi), " logs ", NULL, "remove colour codes" },
    { "timestamps", 't', FLAG, A(timestamps), " logs ", NULL, "show each line's time" },
    /* usage */
    { "from", 0, VALUE, A(from), " usage ", "T", "since T: RFC 3339, 2026-03-01 or 7d ago (30d)" },
    { "to", 0, VALUE, A(to), " usage ", "T", "until T (now)" },
    { "by", 0, VALUE, A(by), " usage ", "G,G",
      "group by owner, queue, executor, instance_type, capacity_type, day, label:KEY (owner)" },
    { "owner", 0, VALUE, A(owner), " usage ", "NAME", "only this owner's jobs" },
    { "queue", 0, VALUE, A(queue), " usage ", "Q", "only this queue's jobs" },
    { "executor", 0, VALUE, A(executor), " usage ", "E", "only local or kubernetes jobs" },
    { "label", 0, VALUE, A(label), " usage ", "K=V", "only jobs with this label" },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static const struct opt *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

static const struct opt *find_short(char c)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (opts[i].shrt == c)
            return &opts[i];
    return NULL;
}

static int store(struct cli_args *a, const struct opt *o, const char *value, struct err *err)
{
    char *field = (char *)a + o->off;
    if (o->kind == FLAG) {
        if (value)
            return err_set(err, ERR_INVALID, "--%s takes no value", o->name);
        *(bool *)field = true;
    } else if (o->kind == VALUE) {
        *(const char **)field = value;
    } else {
        if (a->nsets == CLI_MAX_SETS)
            return err_set(err, ERR_INVALID, "more than %d --%s", CLI_MAX_SETS, o->name);
        a->sets[a->nsets++] = value;
    }
    return 0;
}

/* Parses one option at argv[*i]; advances *i past its value. seen marks the option. */
static int option(int argc, char **argv, int *i, struct cli_args *a, uint64_t *seen,
                  struct err *err)
{
    const char *arg = argv[*i], *value = NULL;
    const struct opt *o;
    if (arg[1] == '-') {
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        o = find_long(arg + 2, len);
        value = eq ? eq + 1 : NULL;
        if (!o)
            return err_set(err, ERR_INVALID, "unknown option --%.*s", (int)len, arg + 2);
    } else {
        o = arg[2] == '\0' ? find_short(arg[1]) : NULL;
        if (!o)
            return err_set(err, ERR_INVALID, "unknown option %s", arg);
    }
    if (o->kind != FLAG && !value) {
        if (*i + 1 >= argc)
            return err_set(err, ERR_INVALID, "--%s needs a value", o->name);
        value = argv[++*i];
    }
    *seen |= 1ULL << (o - opts);
    return store(a, o, value, err);
}

int cli_args_parse(int argc, char **argv, struct cli_args *a, struct err *err)
{
    memset(a, 0, sizeof(*a));
    uint64_t seen = 0;
    bool rest = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!rest && strcmp(arg, "--") == 0) {
            rest = true;
        } else if (!rest && arg[0] == '-' && arg[1] != '\0') {
            if (option(argc, argv, &i, a, &seen, err) < 0)
                return -1;
        } else if (!a->command) {
            a->command = arg;
        } else if (a->npos < CLI_MAX_POS) {
            a->pos[a->npos++] = arg;
        } else {
            return err_set(err, ERR_INVALID, "too many arguments");
        }
    }
    if (!a->command)
        return 0;
    char key[40];
    snprintf(key, sizeof(key), " %s ", a->command);
    for (size_t k = 0; k < NOPTS; k++)
        if ((seen >> k & 1) && opts[k].cmds && !strstr(opts[k].cmds, key))
            return err_set(err, ERR_INVALID, "'%s' does not take --%s", a->command, opts[k].name);
    return 0;
}

void cli_args_help(FILE *out, const char *command)
{
    char key[40];
    snprintf(key, sizeof(key), " %s ", command ? command : "");
    for (size_t k = 0; k < NOPTS; k++) {
        const struct opt *o = &opts[k];
        if (command ? !o->cmds || !strstr(o->cmds, key) : o->cmds != NULL)
            continue;
        char left[64];
        if (o->shrt)
            snprintf(left, sizeof(left), "-%c, --%s %s", o->shrt, o->name, o->arg ? o->arg : "");
        else
            snprintf(left, sizeof(left), "    --%s %s", o->name, o->arg ? o->arg : "");
        fprintf(out, "  %-30s %s\n", left, o->help);
    }
}

/* The config file's path, and whether the user named it (then it must exist). */
static char *config_path(const struct cli_args *a, bool *named)
{
    const char *env = getenv("TRAINYARD_CONFIG"), *xdg = getenv("XDG_CONFIG_HOME"),
               *home = getenv("HOME");
    *named = true;
    if (a->config)
        return xstrdup(a->config);
    if (env && *env)
        return xstrdup(env);
    *named = false;
    if (xdg && *xdg)
        return xasprintf("%s/trainyard/config.yaml", xdg);
    return home && *home ? xasprintf("%s/.config/trainyard/config.yaml", home) : NULL;
}

static int check_config(const char *path, json_t *doc, struct err *err)
{
    static const char *const keys[] = { "url", "token", "cacert", "output", "retry_for" };
    if (!json_is_object(doc))
        return err_set(err, ERR_INVALID, "%s: expected a mapping of settings", path);
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            known |= strcmp(k, keys[i]) == 0;
        if (!known)
            return err_set(err, ERR_INVALID,
                           "%s: unknown setting '%s' (url, token, cacert, output, retry_for)", path,
                           k);
        if (!json_is_string(v))
            return err_set(err, ERR_INVALID, "%s: %s must be a string", path, k);
    }
    return 0;
}

json_t *cli_config_load(const struct cli_args *a, char **warning, struct err *err)
{
    bool named;
    char *path = config_path(a, &named);
    struct stat st;
    json_t *doc = NULL;
    *warning = NULL;
    if (!path || (!named && stat(path, &st) < 0))
        goto out;
    doc = yamljson_load_file(path, 1 << 20, err);
    if (doc && check_config(path, doc, err) < 0) {
        json_decref(doc);
        doc = NULL;
    }
    if (doc && jsonx_str(doc, "token") && stat(path, &st) == 0 && (st.st_mode & 077))
        *warning = xasprintf("%s holds a token and others may read it: chmod 600 %s", path, path);
out:
    free(path);
    return doc;
}

const char *cli_setting(const char *flag, const char *env_name, const json_t *config,
                        const char *key, const char *def)
{
    const char *env = getenv(env_name);
    const char *file = config ? jsonx_str(config, key) : NULL;
    return flag ? flag : env && *env ? env : file ? file : def;
}

int cli_duration_arg(const char *what, const char *text, int64_t *ns, struct err *err)
{
    if (parse_duration(text, ns) < 0 || *ns <= 0)
        return err_set(err, ERR_INVALID, "%s must be a duration such as 30s, 10m or 2h (not %s)",
                       what, text);
    return 0;
}
