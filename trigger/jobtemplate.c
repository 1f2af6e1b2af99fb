/*
 * jobtemplate: validation and substitution of job templates (syntax and rules in the header).
 * One walk over the JSON does both: without values it checks, with values it also builds the
 * substituted copy. This file walks the JSON, knows where each string sits (name, command,
 * args, env, labels, shell scripts) and checks the variables block and the values given; each
 * string is expanded by jobtemplate_subst.c. It does not validate the job spec itself (the
 * spec validator runs on the result) and keeps no state; thread-safe. Results are new jansson
 * references.
 */
#include "trigger/jobtemplate.h"

#include <ctype.h>

#include "core/buf.h"
#include "core/jsonx.h"
#include "trigger/jobtemplate_internal.h"

static void pointer(const struct walk *w, struct buf *out)
{
    for (int i = 0; i < w->ntok; i++) {
        buf_putc(out, '/');
        jsonx_pointer_append(out, w->tok[i]);
    }
    if (w->ntok == 0)
        buf_putc(out, '/');
}

int jobtemplate_problem(struct walk *w, const char *fmt, const char *arg)
{
    struct buf ptr = BUF_INIT;
    pointer(w, &ptr);
    err_field(w->err, ptr.data, fmt, arg);
    buf_release(&ptr);
    return -1;
}

static enum place place_of(const struct walk *w)
{
    const char *t0 = w->ntok > 0 ? w->tok[0] : "";
    const json_t *top = json_object_get(w->tmpl, t0);
    if (w->ntok == 1 && strcmp(t0, "name") == 0)
        return PLACE_NAME;
    if (w->ntok == 1 && strcmp(t0, "command") == 0)
        return PLACE_SCRIPT; /* a one-string command line is run by a shell */
    if (w->ntok == 2 && strcmp(t0, "command") == 0)
        return w->index[1] == w->script_cmd ? PLACE_SCRIPT : PLACE_ARG;
    if (w->ntok == 2 && strcmp(t0, "args") == 0)
        return w->index[1] == w->script_args ? PLACE_SCRIPT : PLACE_ARG;
    if (strcmp(t0, "env") == 0 &&
        ((w->ntok == 2 && json_is_object(top)) ||
         (w->ntok == 3 && json_is_array(top) && strcmp(w->tok[2], "value") == 0)))
        return PLACE_ENV;
    if (w->ntok == 2 && strcmp(t0, "labels") == 0 && json_is_object(top))
        return PLACE_LABEL;
    return PLACE_NONE;
}

/* Where a shell runs a script given as text: "sh -c SCRIPT" (any flag cluster with c) or an
 * interpreter's "-c"/"-e" code, the command's first word. The script is command[i] or, when the
 * command ends with the flag, args[0]. Its text is the shell's: ${HOME} there is the script's
 * own, not an unknown variable of the template. Only a shell run directly is found (not one
 * behind `env` or `timeout`): what keeps values out of scripts is that a variable must be a
 * whole argument (jobtemplate_argv_slot), not this search. */
static void find_script(struct walk *w)
{
    static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ash", "ksh" };
    static const char *const interps[] = { "python", "python3", "perl", "node", "ruby" };
    const json_t *cmd = json_object_get(w->tmpl, "command");
    const char *prog = json_string_value(json_array_get(cmd, 0));
    w->script_cmd = w->script_args = -1;
    if (!prog)
        return;
    const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    bool shell = false, interp = false;
    for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
        shell |= strcmp(base, shells[i]) == 0;
    for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
        interp |= strcmp(base, interps[i]) == 0;
    for (size_t i = 1; (shell || interp) && i < json_array_size(cmd); i++) {
        const char *a = json_string_value(json_array_get(cmd, i));
        if (!a || a[0] != '-' || a[1] == '-')
            break;
        bool flag = shell ? strchr(a, 'c') != NULL : (!strcmp(a, "-c") || !strcmp(a, "-e"));
        if (flag) {
            if (i + 1 < json_array_size(cmd))
                w->script_cmd = (long)i + 1;
            else
                w->script_args = 0;
            return;
        }
    }
}

/* Elements of command; without one the image's entrypoint is the program, one element. */
static long command_len(const struct walk *w)
{
    const json_t *cmd = json_object_get(w->tmpl, "command");
    return json_is_array(cmd) ? (long)json_array_size(cmd) : 1;
}

/* Element i of the argv the job runs (command, then args), or NULL when unknown. */
static const char *argv_at(const struct walk *w, long i)
{
    const json_t *cmd = json_object_get(w->tmpl, "command");
    long ncmd = command_len(w);
    if (i < 0)
        return NULL;
    if (i < ncmd)
        return json_string_value(json_array_get(cmd, (size_t)i));
    return json_string_value(json_array_get(json_object_get(w->tmpl, "args"), (size_t)(i - ncmd)));
}

/* A flag whose next argument is code: -c of shells and python (alone or in a cluster such as
 * -lc, -euc), -e/-E of perl, ruby, node and sed, and the long forms. */
static bool code_flag(const char *a)
{
    static const char *const longs[] = { "--command", "--eval",   "--exec",  "--execute",
                                         "-exec",     "-execdir", "--print", "--init-command" };
    for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++)
        if (strcmp(a, longs[i]) == 0)
            return true;
    size_t len = strlen(a);
    if (len < 2 || len > 5 || a[0] != '-' || a[1] == '-')
        return false;
    for (size_t i = 1; i < len; i++)
        if (!isalpha((unsigned char)a[i]))
            return false;
    return strpbrk(a + 1, "ceE") != NULL;
}

/* An argv element that holds a variable: it must be the whole element (jobtemplate_expand
 * checks that), and not where a program reads code or a program name: the program itself, or
 * the argument of a flag such as -c or -e. */
static int argv_slot(struct walk *w)
{
    long i = w->index[1] + (strcmp(w->tok[0], "args") == 0 ? command_len(w) : 0);
    if (i == 0)
        return jobtemplate_problem(w, "%s",
                                   "a variable cannot be the program: a value would choose what "
                                   "runs");
    const char *prev = argv_at(w, i - 1);
    if (prev && code_flag(prev))
        return jobtemplate_problem(w,
                                   "a variable cannot follow %s: the value would run as code; "
                                   "pass it as its own argument after the script, or in env",
                                   prev);
    return 0;
}

/* Environment variables that programs read as code, options or where to load code from: a
 * value there runs as code as surely as in a script. */
static bool code_env(const char *name)
{
    static const char *const names[] = {
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "PS4",
        "SHELLOPTS",
        "BASHOPTS",
        "IFS",
        "PATH",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "EDITOR",
        "VISUAL",
        "PAGER",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return strncmp(name, "LD_", 3) == 0 || strncmp(name, "BASH_FUNC_", 10) == 0;
}

/* The name of the env variable the walk stands in (object or [{name, value}] form). */
static const char *env_name(const struct walk *w)
{
    const json_t *env = json_object_get(w->tmpl, "env");
    if (json_is_object(env))
        return w->tok[1];
    return json_string_value(json_object_get(json_array_get(env, (size_t)w->index[1]), "name"));
}

static json_t *walk_node(struct walk *w, const json_t *node);

static void push(struct walk *w, const char *key, long index)
{
    if (index >= 0) {
        snprintf(w->idx[w->ntok], sizeof(w->idx[0]), "%ld", index);
        key = w->idx[w->ntok];
    }
    w->tok[w->ntok] = key;
    w->index[w->ntok++] = index;
}

static json_t *walk_object(struct walk *w, const json_t *node)
{
    json_t *out = json_object(), *child;
    const char *key;
    json_object_foreach((json_t *)node, key, child)
    {
        if (w->ntok == 0 && strcmp(key, "variables") == 0)
            continue;
        push(w, key, -1);
        if (jobtemplate_has_ref(key))
            jobtemplate_problem(w, "%s", "variables are not substituted in keys");
        json_object_set_new(out, key, walk_node(w, child));
        w->ntok--;
    }
    return out;
}

static json_t *walk_string(struct walk *w, const json_t *node)
{
    struct buf b = BUF_INIT;
    enum place place = place_of(w);
    const char *s = json_string_value(node);
    const char *name = place == PLACE_ENV ? env_name(w) : NULL;
    bool refs = jobtemplate_has_ref(s);
    if (strlen(s) != json_string_length(node))
        jobtemplate_problem(w, "%s", "contains a NUL character");
    else if (refs && place == PLACE_ARG && argv_slot(w) < 0)
        ; /* reported */
    else if (refs && name && code_env(name))
        jobtemplate_problem(w,
                            "%s is read as code or options by the programs of a job: a "
                            "variable cannot set it",
                            name);
    else if (jobtemplate_expand(w, s, place, &b) == 0 && place == PLACE_NAME)
        jobtemplate_check_name(w, &b);
    else if (!err_is_set(w->err) && place == PLACE_LABEL)
        jobtemplate_finish_label(w, &b);
    json_t *out = json_stringn(buf_cstr(&b), b.len);
    buf_release(&b);
    return out ? out : json_string("");
}

static json_t *walk_node(struct walk *w, const json_t *node)
{
    if (w->ntok >= DEPTH_MAX - 1) {
        jobtemplate_problem(w, "nested deeper than %s levels", "32");
        return json_null();
    }
    if (json_is_object(node))
        return walk_object(w, node);
    if (json_is_array(node)) {
        json_t *out = json_array();
        for (size_t i = 0; i < json_array_size(node); i++) {
            push(w, NULL, (long)i);
            json_array_append_new(out, walk_node(w, json_array_get(node, i)));
            w->ntok--;
        }
        return out;
    }
    if (json_is_string(node))
        return walk_string(w, node);
    return json_deep_copy(node);
}

static void check_variables(struct walk *w)
{
    const char *name;
    json_t *def;
    if (!w->vars)
        return;
    if (!json_is_object(w->vars)) {
        err_field(w->err, "/variables", "must be an object of variable declarations");
        w->vars = NULL;
        return;
    }
    json_object_foreach((json_t *)w->vars, name, def)
    {
        struct buf ptr = BUF_INIT;
        buf_puts(&ptr, "/variables/");
        jsonx_pointer_append(&ptr, name);
        const json_t *d = json_is_object(def) ? json_object_get(def, "default") : def;
        const json_t *desc = json_is_object(def) ? json_object_get(def, "description") : NULL;
        size_t extra =
            json_is_object(def) ? json_object_size(def) - (d != NULL) - (desc != NULL) : 0;
        if (!jobtemplate_valid_name(name))
            err_field(w->err, ptr.data, "not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        else if (jobtemplate_is_builtin(name, strlen(name)))
            err_field(w->err, ptr.data, "%s is built in and cannot be declared", name);
        else if ((d && !json_is_null(d) && !json_is_string(d)) || (desc && !json_is_string(desc)) ||
                 extra > 0)
            err_field(w->err, ptr.data,
                      "must be a default string, null (required), or {\"default\", "
                      "\"description\"}");
        buf_release(&ptr);
    }
}

/* Values given for names the template does not know are typos; refuse them. */
static void check_values(struct walk *w)
{
    for (size_t i = 0; i < w->vals->n; i++) {
        const char *n = w->vals->names[i];
        struct ref r = { .name = n, .nlen = strlen(n) };
        struct buf line = BUF_INIT;
        buf_printf(&line, "\n%s\n", n);
        bool inline_default = strstr(buf_cstr(&w->inline_names), line.data) != NULL;
        if (!jobtemplate_known(w, &r) && !inline_default) {
            char ptr[100];
            snprintf(ptr, sizeof(ptr), "/values/%.80s", n);
            err_field(w->err, ptr, "the template has no variable %s", n);
        }
        buf_release(&line);
    }
}

static json_t *run(const json_t *tmpl, const struct jobtemplate_values *vals, struct err *err)
{
    struct walk w = { .tmpl = tmpl, .vals = vals, .err = err, .inline_names = BUF_INIT };
    struct err local;
    err_init(&local);
    if (!err)
        w.err = &local; /* the walk needs to know whether anything failed */
    if (!json_is_object(tmpl)) {
        err_field(w.err, "/", "a template is a JSON object (a job spec)");
        err_release(&local);
        return NULL;
    }
    buf_putc(&w.inline_names, '\n');
    w.vars = json_object_get(tmpl, "variables");
    check_variables(&w);
    find_script(&w);
    json_t *out = walk_node(&w, tmpl);
    if (vals)
        check_values(&w);
    if (err_is_set(w.err)) {
        json_decref(out);
        out = NULL;
    }
    buf_release(&w.inline_names);
    err_release(&local);
    return out;
}

int jobtemplate_validate(const json_t *tmpl, struct err *err)
{
    json_t *out = run(tmpl, NULL, err);
    json_decref(out);
    return out ? 0 : -1;
}

json_t *jobtemplate_render(const json_t *tmpl, const struct jobtemplate_values *vals,
                           struct err *err)
{
    static const struct jobtemplate_values none = { 0 };
    return run(tmpl, vals ? vals : &none, err);
}
