/*
 * kubeconfig and auth: the kubeconfig forms the daemon must read (what `aws eks
 * update-kubeconfig` writes, client certificates, tokens, CA files relative to the file), the
 * in-cluster configuration, kubectl's lookup order, and the ExecCredential a plugin prints.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "server/kube/auth.h"
#include "server/kube/kubeconfig.h"

static char dir[] = "/tmp/ty-kubeconfig-XXXXXX";

static char *write_file(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* What `aws eks update-kubeconfig --name prod --region us-east-1 --profile ml` writes. */
static const char eks[] =
    "apiVersion: v1\n"
    "clusters:\n"
    "- cluster:\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
    "    server: https://ABCD.gr7.us-east-1.eks.amazonaws.com/\n"
    "  name: arn:aws:eks:us-east-1:123456789012:cluster/prod\n"
    "contexts:\n"
    "- context:\n"
    "    cluster: arn:aws:eks:us-east-1:123456789012:cluster/prod\n"
    "    user: arn:aws:eks:us-east-1:123456789012:cluster/prod\n"
    "  name: arn:aws:eks:us-east-1:123456789012:cluster/prod\n"
    "- context: {cluster: other, user: certs, namespace: ml}\n"
    "  name: other\n"
    "current-context: arn:aws:eks:us-east-1:123456789012:cluster/prod\n"
    "kind: Config\n"
    "preferences: {}\n"
    "users:\n"
    "- name: arn:aws:eks:us-east-1:123456789012:cluster/prod\n"
    "  user:\n"
    "    exec:\n"
    "      apiVersion: client.authentication.k8s.io/v1beta1\n"
    "      args:\n"
    "      - --region\n"
    "      - us-east-1\n"
    "      - eks\n"
    "      - get-token\n"
    "      - --cluster-name\n"
    "      - prod\n"
    "      - --output\n"
    "      - json\n"
    "      command: aws\n"
    "      env:\n"
    "      - name: AWS_PROFILE\n"
    "        value: ml\n"
    "- name: certs\n"
    "  user:\n"
    "    client-certificate-data: Q0VSVA==\n"
    "    client-key-data: S0VZ\n"
    "    token: static-token\n"
    "clusters2: []\n";

static const char other_cluster[] = "- cluster:\n"
                                    "    server: https://10.0.0.1:6443\n"
                                    "    certificate-authority: certs/ca.pem\n"
                                    "    insecure-skip-tls-verify: true\n"
                                    "  name: other\n";

static void eks_shape(void)
{
    char *text = xasprintf("%.*s%s%s", (int)(strstr(eks, "contexts:") - eks), eks, other_cluster,
                           strstr(eks, "contexts:"));
    char *path = write_file("config", text);
    struct kube_config c;
    struct err err;
    err_init(&err);
    CHECK(kube_config_load(&c, path, NULL, &err) == 0);
    CHECK_STR(c.server, "https://ABCD.gr7.us-east-1.eks.amazonaws.com");
    CHECK_STR(c.namespace, "default");
    CHECK(c.ca_data && c.ca_len == 28 &&
          memcmp(c.ca_data, "-----BEGIN CERTIFICATE-----\n", 28) == 0);
    CHECK(c.exec != NULL);
    CHECK_STR(c.exec->command, "aws");
    CHECK_STR(c.exec->api_version, "client.authentication.k8s.io/v1beta1");
    CHECK_STR(c.exec->args[2], "eks");
    CHECK_STR(c.exec->args[7], "json");
    CHECK(c.exec->args[8] == NULL);
    CHECK_STR(c.exec->env[0], "AWS_PROFILE=ml");
    CHECK(c.token == NULL);
    kube_config_release(&c);

    CHECK(kube_config_load(&c, path, "other", &err) == 0);
    CHECK_STR(c.server, "https://10.0.0.1:6443");
    CHECK_STR(c.namespace, "ml");
    char *ca = xasprintf("%s/certs/ca.pem", dir);
    CHECK_STR(c.ca_file, ca); /* relative to the kubeconfig's directory */
    CHECK(c.insecure);
    CHECK(c.cert_len == 4 && memcmp(c.cert_data, "CERT", 4) == 0);
    CHECK(c.key_len == 3 && memcmp(c.key_data, "KEY", 3) == 0);
    CHECK_STR(c.token, "static-token");
    CHECK(c.exec == NULL);
    kube_config_release(&c);

    CHECK(kube_config_load(&c, path, "missing", &err) < 0);
    CHECK(strstr(err.msg, "context \"missing\" not found") != NULL);
    err_release(&err);
    free(ca);
    free(path);
    free(text);
}

static void lookup_order(void)
{
    char *a = write_file("a.yaml", "clusters: [{name: c, cluster: {server: 'http://a:1'}}]\n"
                                   "contexts: [{name: x, context: {cluster: c, namespace: na}}]\n"
                                   "current-context: x\n");
    char *list = xasprintf("%s/nothing-here:%s", dir, a);
    setenv("KUBECONFIG", list, 1);
    struct kube_config c;
    struct err err;
    err_init(&err);
    CHECK(kube_config_resolve(&c, NULL, NULL, NULL, &err) == 0);
    CHECK_STR(c.server, "http://a:1"); /* the first file of KUBECONFIG that exists */
    CHECK_STR(c.namespace, "na");
    kube_config_release(&c);
    CHECK(kube_config_resolve(&c, a, NULL, "override", &err) == 0);
    CHECK_STR(c.namespace, "override"); /* --namespace wins over the context's */
    kube_config_release(&c);
    unsetenv("KUBECONFIG");
    setenv("HOME", dir, 1); /* no ~/.kube/config there: in-cluster */
    unsetenv("KUBERNETES_SERVICE_HOST");
    CHECK(kube_config_resolve(&c, NULL, NULL, NULL, &err) < 0);
    CHECK(strstr(err.msg, "KUBERNETES_SERVICE_HOST") != NULL);
    err_release(&err);
    free(list);
    free(a);
}

static void in_cluster(void)
{
    char *sa = xasprintf("%s/sa", dir);
    mkdir(sa, 0700);
    char *t = write_file("sa/token", "first-token\n");
    char *n = write_file("sa/namespace", "ml-jobs");
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    struct kube_config c;
    struct err err;
    err_init(&err);
    CHECK(kube_config_in_cluster(&c, sa, &err) == 0);
    CHECK_STR(c.server, "https://[fd00::1]:443");
    CHECK_STR(c.namespace, "ml-jobs");
    CHECK_STR(c.token_file, t);
    CHECK(strstr(c.ca_file, "/sa/ca.crt") != NULL);
    struct kube_auth *a = kube_auth_new(&c);
    char *tok = kube_auth_token(a, &err);
    CHECK_STR(tok, "first-token");
    free(tok);
    free(write_file("sa/token", "rotated-token\n"));
    kube_auth_expired(a, "first-token"); /* a 401: read the file again */
    tok = kube_auth_token(a, &err);
    CHECK_STR(tok, "rotated-token");
    free(tok);
    kube_auth_free(a);
    kube_config_release(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    free(sa);
    free(t);
    free(n);
}

static void exec_credential(void)
{
    const char *api = "client.authentication.k8s.io/v1beta1";
    const char ok[] = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
                      "v1beta1\",\"spec\":{},\"status\":{\"expirationTimestamp\":\"2026-11-22T10:"
                      "14:00Z\",\"token\":\"k8s-aws-v1.aHR0cHM6Ly9zdHM\"}}";
    char *tok, *cert, *key;
    int64_t exp, want;
    struct err err;
    err_init(&err);
    CHECK(kube_auth_parse_credential(ok, strlen(ok), api, &tok, &cert, &key, &exp, &err) == 0);
    CHECK_STR(tok, "k8s-aws-v1.aHR0cHM6Ly9zdHM");
    CHECK(clock_parse("2026-11-22T10:14:00Z", &want) == 0 && exp == want);
    CHECK(cert == NULL && key == NULL);
    free(tok);
    CHECK(kube_auth_parse_credential(ok, strlen(ok), "client.authentication.k8s.io/v1", &tok, &cert,
                                     &key, &exp, &err) < 0);
    CHECK(strstr(err.msg, "not client.authentication.k8s.io/v1") != NULL);
    err_release(&err);
    const char certs[] = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication."
                         "k8s.io/v1beta1\",\"status\":{\"clientCertificateData\":\"C\","
                         "\"clientKeyData\":\"K\"}}";
    CHECK(kube_auth_parse_credential(certs, strlen(certs), api, &tok, &cert, &key, &exp, &err) ==
          0);
    CHECK(tok == NULL && exp == 0);
    CHECK_STR(cert, "C");
    CHECK_STR(key, "K");
    free(cert);
    free(key);
    const char empty[] = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication."
                         "k8s.io/v1beta1\",\"status\":{}}";
    CHECK(kube_auth_parse_credential(empty, strlen(empty), api, &tok, &cert, &key, &exp, &err) < 0);
    CHECK(strstr(err.msg, "neither a token") != NULL);
    err_release(&err);
    CHECK(kube_auth_parse_credential("oops", 4, api, &tok, &cert, &key, &exp, &err) < 0);
    err_release(&err);
}

/* A plugin that answers once with a token about to expire, then with a lasting one. */
static void exec_refresh(void)
{
    char *script = write_file(
        "plugin.sh", "#!/bin/sh\n"
                     "n=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "
                     "\"$0.count\"\n"
                     "case \"$KUBERNETES_EXEC_INFO\" in *v1beta1*) ;; *) exit 3;; esac\n"
                     "if [ $n = 1 ]; then exp=$(date -u -d @$(( $(date +%s) + 1 )) "
                     "+%Y-%m-%dT%H:%M:%SZ); else exp=2099-01-01T00:00:00Z; fi\n"
                     "echo \"{\\\"kind\\\":\\\"ExecCredential\\\",\\\"apiVersion\\\":\\\"$API\\\","
                     "\\\"status\\\":{\\\"token\\\":\\\"t$n-$X\\\",\\\"expirationTimestamp\\\":"
                     "\\\"$exp\\\"}}\"\n");
    chmod(script, 0755);
    char *args[] = { NULL };
    char *env[] = { "API=client.authentication.k8s.io/v1beta1", "X=from-env", NULL };
    struct kube_exec e = { .api_version = "client.authentication.k8s.io/v1beta1",
                           .command = script,
                           .args = args,
                           .env = env };
    struct kube_config c = { .exec = &e };
    struct kube_auth *a = kube_auth_new(&c);
    struct err err;
    err_init(&err);
    char *t1 = kube_auth_token(a, &err);
    CHECK_STR(t1, "t1-from-env"); /* the kubeconfig's env reaches the plugin */
    clock_sleep_ms(1100);
    char *t2 = kube_auth_token(a, &err); /* expired: run again */
    CHECK_STR(t2, "t2-from-env");
    char *t3 = kube_auth_token(a, &err); /* cached until shortly before its expiry */
    CHECK_STR(t3, "t2-from-env");
    kube_auth_expired(a, t3); /* a 401 */
    char *t4 = kube_auth_token(a, &err);
    CHECK_STR(t4, "t3-from-env");
    CHECK_INT(kube_auth_plugin_runs(a), 3);
    free(t1);
    free(t2);
    free(t3);
    free(t4);
    kube_auth_free(a);
    free(script);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    eks_shape();
    lookup_order();
    in_cluster();
    exec_credential();
    exec_refresh();
    char *cmd = xasprintf("rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    free(cmd);
    return check_done();
}
