/*
 * policy: the cluster rules a non-admin token's Kubernetes jobs are held to (api/policy.h,
 * policy_grants.h, policy_pod.h), each refusal a 403 naming the field by JSON pointer into
 * what was sent: the daemon's own namespace, service account and volume claim; privileged
 * containers, capabilities, host namespaces, ports and paths, wherever a manifest puts them;
 * and what a policy grants (namespaces, service accounts, claims, registries, node labels).
 */
#include "tests/unit/check.h"

#include <stdlib.h>

#include "api/policy.h"
#include "api/policy_grants.h"
#include "core/jsonx.h"

static const struct api_cluster cluster = { .jobs_namespace = "ml",
                                            .namespace = "trainyard",
                                            .service_accounts = "trainyard",
                                            .volume_claims = "trainyard-data" };

/* JSON written with ' for " (no apostrophes in these cases). */
static json_t *J(const char *text)
{
    char *copy = strdup(text);
    for (char *p = copy; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *v = json_loads(copy, 0, &e);
    if (!v)
        fprintf(stderr, "bad test JSON: %s: %s\n", e.text, copy);
    free(copy);
    return v;
}

static json_t *grants; /* NULL: the built-in default */
static const struct api_cluster *cl = &cluster;

/* Checks spec (a job spec) with its manifest at `at`; err filled (caller releases). */
static int check(const char *spec_text, const char *at, struct err *err)
{
    json_t *spec = J(spec_text);
    if (!spec)
        return -2;
    struct spec_view v;
    spec_view(spec, &v);
    json_t *doc = grants ? json_incref(grants) : policy_grants_default(cl);
    struct policy_grants g = { .name = grants ? "team-a" : "default", .doc = doc, .cluster = cl };
    int rc = policy_kube_check(&g, &v, at, err);
    json_decref(doc);
    json_decref(spec);
    return rc;
}

static bool has_field(const struct err *err, const char *pointer, const char *words)
{
    for (size_t i = 0; i < err->nfields; i++)
        if (!strcmp(err->fields[i].pointer, pointer) &&
            (!words || strstr(err->fields[i].message, words)))
            return true;
    for (size_t i = 0; i < err->nfields; i++)
        fprintf(stderr, "  refused: %s: %s\n", err->fields[i].pointer, err->fields[i].message);
    return false;
}

/* The spec is allowed. */
static bool allowed(const char *spec)
{
    struct err err;
    err_init(&err);
    int rc = check(spec, "/kubernetes/manifest", &err);
    for (size_t i = 0; i < err.nfields; i++)
        fprintf(stderr, "  unexpected: %s: %s\n", err.fields[i].pointer, err.fields[i].message);
    err_release(&err);
    return rc == 0;
}

/* The spec is refused with a 403 naming pointer (and words in its message, when given). */
static bool refused(const char *spec, const char *at, const char *pointer, const char *words)
{
    struct err err;
    err_init(&err);
    int rc = check(spec, at, &err);
    bool ok = rc == -1 && err.code == ERR_FORBIDDEN && has_field(&err, pointer, words);
    err_release(&err);
    return ok;
}

#define NATIVE(extra)                                                                              \
    "{'name':'j','image':'nvcr.io/nvidia/pytorch:24.10','executor':'kubernetes'" extra "}"

/* A PyTorchJob manifest whose Worker pod spec is `pod` (its containers[0] is `c`). */
#define PTJ(pod, c)                                                                                \
    "{'name':'j','executor':'kubernetes','kubernetes':{'manifest':{'apiVersion':'kubeflow.org/"    \
    "v1','kind':'PyTorchJob','metadata':{'name':'j'},'spec':{'pytorchReplicaSpecs':{'Worker':{"    \
    "'replicas':2,'template':{'spec':{'containers':[{'name':'pytorch','image':'nvcr.io/nvidia/"    \
    "pytorch:24.10'" c "}]" pod "}}}}}}}}"
#define WORKER "/spec/pytorchReplicaSpecs/Worker/template/spec"

static void the_daemons_own(void)
{
    CHECK(allowed(NATIVE("")));
    CHECK(refused(NATIVE(",'kubernetes':{'namespace':'trainyard'}"), "", "/kubernetes/namespace",
                  "daemon's own namespace"));
    CHECK(refused(NATIVE(",'kubernetes':{'service_account':'trainyard'}"), "",
                  "/kubernetes/service_account", "daemon's own service account"));
    CHECK(refused(NATIVE(",'checkpoint':{'volume_claim':'trainyard-data','path':'/c'}"), "",
                  "/checkpoint/volume_claim", "its database"));
    CHECK(allowed(NATIVE(",'kubernetes':{'service_account':'default'}")));
    /* A job naming no namespace runs in the jobs namespace; where that is the daemon's own,
     * it is refused too. */
    struct api_cluster same = cluster;
    same.jobs_namespace = "trainyard";
    cl = &same;
    CHECK(refused(NATIVE(""), "", "/kubernetes/namespace", "is not set"));
    same.jobs_namespace = NULL;
    CHECK(refused(NATIVE(""), "", "/kubernetes/namespace", "is required"));
    cl = &cluster;
    /* In a manifest: posted as the body, the pointers are into it. */
    CHECK(refused("{'name':'j','executor':'kubernetes','kubernetes':{'manifest':{'metadata':{"
                  "'name':'j','namespace':'trainyard'}}}}",
                  "", "/metadata/namespace", "daemon's own namespace"));
    CHECK(refused(PTJ(",'serviceAccountName':'trainyard'", ""), "", WORKER "/serviceAccountName",
                  "daemon's own service account"));
    CHECK(refused(PTJ(",'volumes':[{'name':'d','persistentVolumeClaim':{'claimName':"
                      "'trainyard-data'}}]",
                      ""),
                  "", WORKER "/volumes/0/persistentVolumeClaim/claimName", "its database"));
}

#define AT "/kubernetes/manifest"

static void host_and_privilege(void)
{
    CHECK(allowed(PTJ("", "")));
    CHECK(refused(PTJ("", ",'securityContext':{'privileged':true}"), AT,
                  AT WORKER "/containers/0/securityContext/privileged", "privileged"));
    CHECK(refused(PTJ(",'hostNetwork':true", ""), AT, AT WORKER "/hostNetwork", NULL));
    CHECK(refused(PTJ(",'hostPID':true", ""), AT, AT WORKER "/hostPID", NULL));
    CHECK(refused(PTJ(",'hostIPC':true", ""), AT, AT WORKER "/hostIPC", NULL));
    CHECK(refused(PTJ(",'volumes':[{'name':'root','hostPath':{'path':'/'}}]", ""), AT,
                  AT WORKER "/volumes/0/hostPath", "admin tokens only"));
    CHECK(refused(PTJ(",'volumes':[{'name':'n','nfs':{'server':'10.0.0.1','path':'/'}}]", ""), AT,
                  AT WORKER "/volumes/0/nfs", NULL));
    CHECK(allowed(PTJ(",'volumes':[{'name':'s','emptyDir':{'medium':'Memory'}},{'name':'c',"
                      "'configMap':{'name':'x'}}]",
                      "")));
    /* EFA pins memory: IPC_LOCK is the one capability a job may add. */
    CHECK(allowed(PTJ("", ",'securityContext':{'capabilities':{'add':['IPC_LOCK','CAP_IPC_LOCK'],"
                          "'drop':['ALL']}}")));
    CHECK(
        refused(PTJ("", ",'securityContext':{'capabilities':{'add':['IPC_LOCK','cap_sys_admin']}}"),
                AT, AT WORKER "/containers/0/securityContext/capabilities/add/1", "cap_sys_admin"));
    CHECK(refused(PTJ("", ",'ports':[{'containerPort':80,'hostPort':80}]"), AT,
                  AT WORKER "/containers/0/ports/0/hostPort", NULL));
    CHECK(allowed(PTJ("", ",'ports':[{'containerPort':80,'hostPort':0}]")));
    CHECK(refused(PTJ(",'securityContext':{'seccompProfile':{'type':'Unconfined'}}", ""), AT,
                  AT WORKER "/securityContext/seccompProfile/type", NULL));
    CHECK(refused(PTJ(",'securityContext':{'seLinuxOptions':{'type':'spc_t'}}", ""), AT,
                  AT WORKER "/securityContext/seLinuxOptions/type", NULL));
    CHECK(refused(PTJ("", ",'securityContext':{'procMount':'Unmasked'}"), AT,
                  AT WORKER "/containers/0/securityContext/procMount", NULL));
    /* Every container: init containers too. */
    CHECK(refused(PTJ(",'initContainers':[{'name':'i','image':'nvcr.io/nvidia/x','securityContext':"
                      "{'privileged':true}}]",
                      ""),
                  AT, AT WORKER "/initContainers/0/securityContext/privileged", NULL));
    /* Not fooled by case or by a string where a boolean goes. */
    CHECK(refused(PTJ(",'HostNetwork':true", ""), AT, AT WORKER "/HostNetwork", NULL));
    CHECK(refused(PTJ("", ",'securityContext':{'privileged':'true'}"), AT,
                  AT WORKER "/containers/0/securityContext/privileged", NULL));
    CHECK(allowed(PTJ(",'hostNetwork':false", ",'securityContext':{'privileged':false}")));
    CHECK(
        refused(PTJ(",'ho\u017ftNetwork':true", ""), AT, AT WORKER "/ho\xc5\xbftNetwork", "ASCII"));
    /* Annotations that turn AppArmor off, in the manifest and in a native spec. */
    CHECK(refused("{'name':'j','executor':'kubernetes','kubernetes':{'manifest':{'spec':{"
                  "'template':{'metadata':{'annotations':{'container.apparmor.security.beta."
                  "kubernetes.io/pytorch':'unconfined'}}}}}}}",
                  "",
                  "/spec/template/metadata/annotations/"
                  "container.apparmor.security.beta.kubernetes.io~1pytorch",
                  NULL));
    CHECK(refused(NATIVE(",'kubernetes':{'annotations':{'seccomp.security.alpha.kubernetes.io/pod':"
                         "'unconfined'}}"),
                  "", "/kubernetes/annotations/seccomp.security.alpha.kubernetes.io~1pod", NULL));
    /* Labels are names, not settings. */
    CHECK(allowed(PTJ("", ",'env':[{'name':'privileged','value':'true'}]")));
}

/* TrainJob: the pod settings live in runtimePatches (v2.2+) or podSpecOverrides (v2.0). */
static void trainjob(void)
{
    const char *patch =
        "{'name':'t','executor':'kubernetes','kubernetes':{'manifest':{"
        "'apiVersion':'trainer.kubeflow.org/v1alpha1','kind':'TrainJob','metadata'"
        ":{'name':'t'},'spec':{'runtimeRef':{'name':'torch'},'trainer':{'image':"
        "'docker.io/evil/x'},'runtimePatches':[{'manager':'me','trainingRuntimeSpec'"
        ":{'template':{'spec':{'replicatedJobs':[{'name':'node','template':{'spec'"
        ":{'template':{'spec':{'serviceAccountName':'trainyard','hostNetwork':true"
        "}}}}}]}}}}]}}}}";
    const char *deep = "/spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs/0/"
                       "template/spec/template/spec";
    char sa[300], hn[300];
    snprintf(sa, sizeof(sa), "%s/serviceAccountName", deep);
    snprintf(hn, sizeof(hn), "%s/hostNetwork", deep);
    CHECK(refused(patch, "", sa, "daemon's own"));
    CHECK(refused(patch, "", hn, NULL));
    CHECK(refused("{'name':'t','executor':'kubernetes','kubernetes':{'manifest':{'spec':{"
                  "'podSpecOverrides':[{'targetJobs':[{'name':'node'}],'volumes':[{'name':'h',"
                  "'hostPath':{'path':'/var/run'}}]}]}}}}",
                  "", "/spec/podSpecOverrides/0/volumes/0/hostPath", NULL));
}

static void what_a_policy_grants(void)
{
    grants =
        J("{'namespaces':['team-*','*'],'service_accounts':['trainer'],'volume_claims':"
          "['team-a-*'],'image_registries':['nvcr.io/nvidia','registry.example.com:5000/team'],"
          "'node_selectors':{'node.kubernetes.io/instance-type':['p5.*'],"
          "'kubernetes.io/hostname':['ip-10-0-0-1']}}");
    /* "*" grants every namespace but the daemon's own. */
    CHECK(allowed(NATIVE(",'kubernetes':{'namespace':'team-a'}")));
    CHECK(refused(NATIVE(",'kubernetes':{'namespace':'trainyard'}"), "", "/kubernetes/namespace",
                  "daemon's own"));
    json_array_remove(json_object_get(grants, "namespaces"), 1);
    CHECK(refused(NATIVE(",'kubernetes':{'namespace':'other'}"), "", "/kubernetes/namespace",
                  "policy 'team-a' grants team-*"));
    CHECK(refused(NATIVE(""), "", "/kubernetes/namespace", "is not set")); /* "ml" */
#define TEAM(extra) NATIVE(",'kubernetes':{'namespace':'team-a'" extra "}")
    CHECK(allowed(TEAM(",'service_account':'trainer'")));
    CHECK(refused(TEAM(",'service_account':'admin'"), "", "/kubernetes/service_account",
                  "grants trainer"));
    CHECK(allowed(TEAM("},'checkpoint':{'volume_claim':'team-a-ckpt','path':'/c'")));
    CHECK(refused(TEAM("},'checkpoint':{'volume_claim':'team-b-ckpt','path':'/c'"), "",
                  "/checkpoint/volume_claim", "not granted"));
    /* Registries are matched on whole path segments, after the name is spelled out. */
    CHECK(refused("{'name':'j','image':'nvcr.io/nvidia-evil/x:1','executor':'kubernetes',"
                  "'kubernetes':{'namespace':'team-a'}}",
                  "", "/image", "nvcr.io/nvidia-evil/x"));
    CHECK(refused("{'name':'j','image':'pytorch/pytorch:2.4','executor':'kubernetes',"
                  "'kubernetes':{'namespace':'team-a'}}",
                  "", "/image", "docker.io/pytorch/pytorch"));
    CHECK(allowed("{'name':'j','image':'registry.example.com:5000/team/x@sha256:ab','executor':"
                  "'kubernetes','kubernetes':{'namespace':'team-a'}}"));
    /* Node labels: placement and node_selector of a spec, and a manifest's selectors. */
    CHECK(allowed(TEAM("},'placement':{'instance_type':'p5.48xlarge'")));
    CHECK(refused(TEAM("},'placement':{'instance_type':'g5.xlarge','zone':'us-east-1a'"), "",
                  "/placement/instance_type", "node.kubernetes.io/instance-type=g5.xlarge"));
    CHECK(refused(TEAM("},'placement':{'zone':'us-east-1a'"), "", "/placement/zone", NULL));
    CHECK(refused(TEAM(",'node_selector':{'karpenter.sh/nodepool':'reserved'}"), "",
                  "/kubernetes/node_selector/karpenter.sh~1nodepool", NULL));
    const char *at = "/kubernetes/manifest";
#define TEAMPTJ(pod)                                                                               \
    "{'name':'j','executor':'kubernetes','kubernetes':{'namespace':'team-a','manifest':{'spec':{'" \
    "template':{'spec':{'containers':[{'name':'pytorch','image':'nvcr.io/nvidia/x'}]" pod "}}}}}}"
    CHECK(allowed(TEAMPTJ(",'nodeName':'ip-10-0-0-1'")));
    CHECK(refused(TEAMPTJ(",'nodeName':'ip-10-0-0-2'"), at,
                  "/kubernetes/manifest/spec/template/spec/nodeName", NULL));
    CHECK(refused(TEAMPTJ(",'containers':[{'name':'x','image':'docker.io/x'}]"), at,
                  "/kubernetes/manifest/spec/template/spec/containers/0/image", NULL));
#define AFF                                                                                        \
    ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution'"                \
    ":{'nodeSelectorTerms':[{'matchExpressions':[{'key':'node.kubernetes.io/"                      \
    "instance-type','operator':'In','values':['p5.48xlarge','%s']},{'key':"                        \
    "'kubernetes.io/hostname','operator':'NotIn','values':['anything']},{'key'"                    \
    ":'%s','operator':'%s'}]}]}}}"
    char spec[2048], pod[1024];
    snprintf(pod, sizeof(pod), AFF, "p5.4xlarge", "gpu", "DoesNotExist");
    snprintf(spec, sizeof(spec), TEAMPTJ("%s"), pod);
    CHECK(allowed(spec));
    snprintf(pod, sizeof(pod), AFF, "g5.xlarge", "gpu", "Exists");
    snprintf(spec, sizeof(spec), TEAMPTJ("%s"), pod);
    const char *terms = "/kubernetes/manifest/spec/template/spec/affinity/nodeAffinity/"
                        "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
                        "matchExpressions/";
    char p1[400], p2[400];
    snprintf(p1, sizeof(p1), "%s0/values/1", terms);
    snprintf(p2, sizeof(p2), "%s2/key", terms);
    CHECK(refused(spec, at, p1, "g5.xlarge"));
    CHECK(refused(spec, at, p2, "any value"));
    /* Pod affinity selects pods by their labels, not nodes: not a node selector. */
    CHECK(allowed(
        TEAMPTJ(",'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'"
                "labelSelector':{'matchExpressions':[{'key':'app','operator':'In','values':['x']}]}"
                ",'topologyKey':'zone'}]}}")));
    json_decref(grants);
    grants = NULL;
}

static void repositories(void)
{
    const char *cases[][2] = {
        { "ubuntu", "docker.io/library/ubuntu" },
        { "ubuntu:22.04", "docker.io/library/ubuntu" },
        { "pytorch/pytorch:2.4", "docker.io/pytorch/pytorch" },
        { "nvcr.io/nvidia/pytorch:24.10-py3", "nvcr.io/nvidia/pytorch" },
        { "localhost:5000/x:1", "localhost:5000/x" },
        { "index.docker.io/library/x", "docker.io/library/x" },
        { "x@sha256:0123", "docker.io/library/x" },
        { "Registry.Example.COM/A/B:1", "registry.example.com/a/b" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[256];
        policy_grants_repository(cases[i][0], out, sizeof(out));
        CHECK_STR(out, cases[i][1]);
    }
}

static bool invalid(const char *doc, const char *pointer)
{
    json_t *d = J(doc);
    struct err err;
    err_init(&err);
    int rc = policy_grants_validate(d, &err);
    bool ok = rc < 0 && err.code == ERR_VALIDATION && has_field(&err, pointer, NULL);
    err_release(&err);
    json_decref(d);
    return ok;
}

static void validation(void)
{
    json_t *d = J("{'description':'team a','namespaces':['team-a','team-*','*'],"
                  "'service_accounts':['trainer.x'],'volume_claims':['ckpt-*'],"
                  "'image_registries':['nvcr.io','localhost:5000/x','*'],"
                  "'node_selectors':{'*':['*'],'node.kubernetes.io/instance-type':['p5.*']}}");
    CHECK_INT(policy_grants_validate(d, NULL), 0);
    json_decref(d);
    CHECK(invalid("{'namespace':['x']}", "/namespace"));
    CHECK(invalid("{'namespaces':['Team']}", "/namespaces"));
    CHECK(invalid("{'namespaces':'team'}", "/namespaces"));
    CHECK(invalid("{'image_registries':['pytorch']}", "/image_registries"));
    CHECK(invalid("{'image_registries':['nvcr.io/nvidia/pytorch:24.10']}", "/image_registries"));
    CHECK(invalid("{'node_selectors':{'bad key!':['x']}}", "/node_selectors/bad key!"));
    CHECK(invalid("{'node_selectors':{'k':'x'}}", "/node_selectors/k"));
    json_t *many = json_pack("{s:[]}", "volume_claims");
    for (int i = 0; i < 300; i++)
        json_array_append_new(json_object_get(many, "volume_claims"), json_string("c"));
    struct err err;
    err_init(&err);
    CHECK(policy_grants_validate(many, &err) < 0 && has_field(&err, "/volume_claims", "at most"));
    err_release(&err);
    json_decref(many);
}

/* The entry point: admins and the local executor are not held to the cluster rules; without a
 * store, a submit token gets the built-in default. */
static void entry(void)
{
    struct api api = { .cluster = cluster, .local_checkpoint_roots = "" };
    json_t *spec = J(NATIVE(",'kubernetes':{'namespace':'trainyard'}"));
    struct spec_view v;
    spec_view(spec, &v);
    struct err err;
    err_init(&err);
    struct policy_request admin = { .scope = SCOPE_ADMIN };
    CHECK_INT(policy_check(&api, &admin, &v, &err), 0);
    struct policy_request submit = { .scope = SCOPE_SUBMIT, .token_id = "tok_x" };
    CHECK_INT(policy_check(&api, &submit, &v, &err), -1);
    CHECK_INT(err_http_status(err.code), 403);
    CHECK(has_field(&err, "/kubernetes/namespace", NULL));
    CHECK_INT(policy_check(&api, &submit, &v, NULL), -1); /* refused without an err too */
    err_release(&err);
    json_decref(spec);
}

int main(void)
{
    the_daemons_own();
    host_and_privilege();
    trainjob();
    what_a_policy_grants();
    repositories();
    validation();
    entry();
    return check_done();
}
