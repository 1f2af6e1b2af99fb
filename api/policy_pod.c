/*
 * policy_pod: the walk over a manifest and its rules (see policy_pod.h). Every member goes
 * through rule(), which checks what it knows and says whether to walk on below; the path is
 * kept as tokens and rendered as a JSON pointer only for a refusal, so an accepted manifest
 * formats none. Pure; thread-safe.
 */
#include "api/policy_pod.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "api/policy.h"
#include "core/buf.h"
#include "core/jsonx.h"

/* Deeper than any body the daemon parses (--max-json-depth, 32 by default): what cannot be
 * read is refused rather than passed. The rules push a few steps past it. */
#define WALK_MAX 64

struct step {
    const char *key; /* NULL: an array index */
    size_t index;
};

struct walk {
    const struct policy_grants *g;
    struct err *err;
    const char *at;
    int depth;
    struct step path[WALK_MAX + 8];
    bool node_affinity; /* inside a nodeAffinity, match terms select nodes */
    int refused;
};

/* walk_value() stops at WALK_MAX; the rules below it push at most 3 more steps. */
static void push(struct walk *w, const char *key)
{
    assert(w->depth < WALK_MAX + 8);
    w->path[w->depth++] = (struct step){ key, 0 };
}

static void push_index(struct walk *w, size_t i)
{
    assert(w->depth < WALK_MAX + 8);
    w->path[w->depth++] = (struct step){ NULL, i };
}

static void pop(struct walk *w)
{
    w->depth--;
}

/* The current path as a JSON pointer into the submitted document. */
static void pointer(const struct walk *w, struct buf *out)
{
    buf_puts(out, w->at);
    for (int i = 0; i < w->depth; i++) {
        buf_putc(out, '/');
        if (w->path[i].key)
            jsonx_pointer_append(out, w->path[i].key);
        else
            buf_printf(out, "%zu", w->path[i].index);
    }
}

/* A refusal at the current path. */
static void refuse(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct walk *w, const char *fmt, ...)
{
    struct buf ptr = BUF_INIT;
    pointer(w, &ptr);
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    policy_forbid(w->err, ptr.len ? buf_cstr(&ptr) : "/", "%s", msg);
    buf_release(&ptr);
    w->refused++;
}

static bool is(const char *key, const char *name)
{
    return strcasecmp(key, name) == 0;
}

/* Anything but false and null turns a switch on (a string "true" is refused, not guessed). */
static bool on(const json_t *v)
{
    return v && !json_is_false(v) && !json_is_null(v);
}

/* A grant check of the value at the current path. */
static void grant(struct walk *w, enum policy_kind kind, const json_t *v)
{
    char why[ERR_MSG_MAX];
    if (json_is_null(v))
        return;
    if (!json_is_string(v))
        refuse(w, "must be a string");
    else if (policy_grants_refuse(w->g, kind, json_string_value(v), why, sizeof(why)))
        refuse(w, "%s", why);
}

/* Selecting nodes by a label at the current path; value NULL: by any value of it. */
static void node(struct walk *w, const char *key, const char *value)
{
    char why[ERR_MSG_MAX];
    if (policy_grants_refuse_node(w->g, key, value, why, sizeof(why)))
        refuse(w, "%s", why);
}

typedef void (*check_fn)(struct walk *w, const char *key, const json_t *v);

/* Runs fn on each member of obj (none when it is not an object), at its path. */
static void each(struct walk *w, const json_t *obj, check_fn fn)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        push(w, k);
        fn(w, k, v);
        pop(w);
    }
}

static void walk_value(struct walk *w, const json_t *v);

static void add_capability(struct walk *w, const char *key, const json_t *v)
{
    (void)key;
    const char *name = json_string_value(v);
    if (name && strncasecmp(name, "CAP_", 4) == 0)
        name += 4;
    if (!name || !is(name, "IPC_LOCK")) /* EFA registers (pins) memory for RDMA */
        refuse(w, "adding the capability %s is for admin tokens only (jobs may add IPC_LOCK)",
               json_string_value(v) ? json_string_value(v) : "?");
}

static void capabilities(struct walk *w, const char *key, const json_t *v)
{
    if (!is(key, "add") || !on(v))
        return;
    if (!json_is_array(v)) {
        refuse(w, "must be an array of capabilities");
        return;
    }
    size_t i;
    json_t *c;
    json_array_foreach(v, i, c)
    {
        push_index(w, i);
        add_capability(w, NULL, c);
        pop(w);
    }
}

/* seccompProfile, appArmorProfile: any type but Unconfined. */
static void profile(struct walk *w, const char *key, const json_t *v)
{
    if (is(key, "type") && on(v) && (!json_is_string(v) || is(json_string_value(v), "Unconfined")))
        refuse(w, "an Unconfined profile is for admin tokens only");
}

/* What Pod Security's baseline allows: no user or role, a type of the container's. */
static void selinux(struct walk *w, const char *key, const json_t *v)
{
    static const char *const types[] = { "container_t", "container_init_t", "container_kvm_t",
                                         "container_engine_t" };
    const char *s = json_string_value(v);
    bool ok = !on(v) || (s && !*s) || is(key, "level");
    for (size_t i = 0; !ok && s && is(key, "type") && i < sizeof(types) / sizeof(types[0]); i++)
        ok = strcmp(s, types[i]) == 0;
    if (!ok)
        refuse(w, "this SELinux option is for admin tokens only");
}

static void windows(struct walk *w, const char *key, const json_t *v)
{
    if (is(key, "hostProcess") && on(v))
        refuse(w, "host processes are for admin tokens only");
}

static void claim(struct walk *w, const char *key, const json_t *v)
{
    if (is(key, "claimName"))
        grant(w, POLICY_VOLUME_CLAIM, v);
}

static void image_reference(struct walk *w, const char *key, const json_t *v)
{
    if (is(key, "reference"))
        grant(w, POLICY_IMAGE, v);
}

static void selector(struct walk *w, const char *key, const json_t *v)
{
    if (!json_is_string(v))
        refuse(w, "must be a string");
    else
        node(w, key, json_string_value(v));
}

/* One node selector requirement {key, operator, values} of a node affinity term. */
static void requirement(struct walk *w, const json_t *r, bool fields)
{
    const char *key = jsonx_str(r, "key"), *op = jsonx_str(r, "operator");
    if (!key || !op) {
        refuse(w, "must have a key and an operator");
        return;
    }
    if (fields && strcmp(key, "metadata.name") == 0)
        key = "kubernetes.io/hostname"; /* the node's name, as nodeName selects it */
    if (is(op, "NotIn") || is(op, "DoesNotExist"))
        return; /* keeps the pod off nodes: selects none */
    if (!is(op, "In")) {
        push(w, "key");
        node(w, key, NULL);
        pop(w);
        return;
    }
    size_t i;
    json_t *val;
    push(w, "values");
    json_array_foreach(json_object_get(r, "values"), i, val)
    {
        push_index(w, i);
        if (json_is_string(val))
            node(w, key, json_string_value(val));
        else
            refuse(w, "must be a string");
        pop(w);
    }
    pop(w);
}

static void requirements(struct walk *w, const json_t *v, bool fields)
{
    size_t i;
    json_t *r;
    json_array_foreach(v, i, r)
    {
        push_index(w, i);
        requirement(w, r, fields);
        pop(w);
    }
}

static void volume_member(struct walk *w, const char *key, const json_t *v);

/* Each volume: one of the kinds that stay inside the pod's namespace and the node's sandbox. */
static void volumes(struct walk *w, const json_t *v)
{
    size_t i;
    json_t *vol;
    json_array_foreach(v, i, vol)
    {
        push_index(w, i);
        each(w, vol, volume_member);
        pop(w);
    }
}

static void volume_member(struct walk *w, const char *key, const json_t *v)
{
    static const char *const allowed[] = {
        "name",      "configMap",   "secret",    "emptyDir", "persistentVolumeClaim",
        "projected", "downwardAPI", "ephemeral", "csi",      "image"
    };
    bool ok = false;
    for (size_t a = 0; !ok && a < sizeof(allowed) / sizeof(allowed[0]); a++)
        ok = is(key, allowed[a]);
    if (!ok && on(v))
        refuse(w,
               "%s volumes are for admin tokens only (jobs may use configMap, secret, emptyDir, "
               "persistentVolumeClaim, projected, downwardAPI, ephemeral, csi, image)",
               key);
    else if (ok && is(key, "persistentVolumeClaim"))
        each(w, v, claim);
    else if (ok && is(key, "image"))
        each(w, v, image_reference);
    else if (ok)
        walk_value(w, v);
}

/* What the member key (at the current path) asks for; true to walk on below it. */
static bool rule(struct walk *w, const char *key, const json_t *v)
{
    if (is(key, "labels"))
        return false;
    if (is(key, "annotations")) {
        struct buf ptr = BUF_INIT;
        pointer(w, &ptr);
        w->refused += policy_pod_annotations(v, buf_cstr(&ptr), w->err);
        buf_release(&ptr);
        return false;
    }
    if (is(key, "privileged") && on(v))
        refuse(w, "privileged containers are for admin tokens only");
    else if ((is(key, "hostNetwork") || is(key, "hostPID") || is(key, "hostIPC")) && on(v))
        refuse(w, "sharing the node's namespaces is for admin tokens only");
    else if (is(key, "hostPath") && on(v))
        refuse(w, "the node's files (hostPath) are for admin tokens only");
    else if (is(key, "hostPort") && on(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
        refuse(w, "host ports are for admin tokens only");
    else if (is(key, "volumeName") && on(v))
        refuse(w, "binding a claim to a chosen volume is for admin tokens only");
    else if (is(key, "procMount") && on(v) &&
             !(json_is_string(v) && is(json_string_value(v), "Default")))
        refuse(w, "an unmasked /proc is for admin tokens only");
    else if (is(key, "capabilities"))
        each(w, v, capabilities);
    else if (is(key, "seccompProfile") || is(key, "appArmorProfile"))
        each(w, v, profile);
    else if (is(key, "seLinuxOptions"))
        each(w, v, selinux);
    else if (is(key, "windowsOptions"))
        each(w, v, windows);
    else if (is(key, "serviceAccountName") || is(key, "serviceAccount"))
        grant(w, POLICY_SERVICE_ACCOUNT, v);
    else if (is(key, "persistentVolumeClaim"))
        each(w, v, claim);
    else if (is(key, "image") && json_is_object(v))
        each(w, v, image_reference);
    else if (is(key, "image"))
        grant(w, POLICY_IMAGE, v);
    else if (is(key, "nodeName") && json_is_string(v))
        node(w, "kubernetes.io/hostname", json_string_value(v));
    else if (is(key, "nodeSelector") && json_is_object(v))
        each(w, v, selector);
    else if ((is(key, "nodeName") || is(key, "nodeSelector")) && on(v))
        refuse(w, "must be %s", is(key, "nodeName") ? "a string" : "an object of labels");
    else if (is(key, "volumes") && json_is_array(v))
        volumes(w, v);
    else if (w->node_affinity && (is(key, "matchExpressions") || is(key, "matchFields")))
        requirements(w, v, is(key, "matchFields"));
    else if (is(key, "nodeAffinity")) {
        bool was = w->node_affinity;
        w->node_affinity = true;
        walk_value(w, v);
        w->node_affinity = was;
    } else {
        return true;
    }
    return false;
}

/* Kubernetes field names are ASCII; a decoder that folds case the Unicode way (Go's
 * encoding/json: "ſ" is "s") would read "hoſtNetwork" as hostNetwork, so such a name is
 * refused rather than passed unread. */
static bool ascii(const char *key)
{
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (*p >= 0x80)
            return false;
    return true;
}

static void walk_member(struct walk *w, const char *key, const json_t *v)
{
    if (!ascii(key))
        refuse(w, "is not a Kubernetes field name (they are ASCII)");
    else if (rule(w, key, v))
        walk_value(w, v);
}

static void walk_value(struct walk *w, const json_t *v)
{
    if (!json_is_object(v) && !json_is_array(v))
        return;
    if (w->depth >= WALK_MAX) {
        refuse(w, "is nested too deep to be checked");
        return;
    }
    if (json_is_object(v)) {
        each(w, v, walk_member);
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        push_index(w, i);
        walk_value(w, item);
        pop(w);
    }
}

int policy_pod_check(const struct policy_grants *g, const json_t *manifest, const char *at,
                     struct err *err)
{
    struct walk w = { .g = g, .err = err, .at = at ? at : "" };
    walk_value(&w, manifest);
    return w.refused;
}

int policy_pod_annotations(const json_t *annotations, const char *at, struct err *err)
{
    static const char *const apparmor = "container.apparmor.security.beta.kubernetes.io/";
    static const char *const seccomp = "container.seccomp.security.alpha.kubernetes.io/";
    int refused = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)annotations, k, v)
    {
        const char *s = json_string_value(v) ? json_string_value(v) : "";
        bool off = false;
        if (strncasecmp(k, apparmor, strlen(apparmor)) == 0)
            off = strcmp(s, "runtime/default") != 0 && strncmp(s, "localhost/", 10) != 0;
        else if (strncasecmp(k, seccomp, strlen(seccomp)) == 0 ||
                 is(k, "seccomp.security.alpha.kubernetes.io/pod"))
            off = is(s, "unconfined");
        if (!off)
            continue;
        struct buf ptr = BUF_INIT;
        buf_printf(&ptr, "%s/", at);
        jsonx_pointer_append(&ptr, k);
        policy_forbid(err, buf_cstr(&ptr), "unconfined containers are for admin tokens only");
        buf_release(&ptr);
        refused++;
    }
    return refused;
}
