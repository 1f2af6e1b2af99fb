/*
 * webhook: AdmissionReview in, AdmissionReview out. A denial is controller-runtime's Denied:
 * allowed false, status code 403, reason Forbidden, the field errors as its message (the API
 * server adds the "admission webhook ... denied the request: " prefix).
 */
#include "tests/kube/sim/webhook.h"

#include "core/crypto.h"
#include "core/jsonx.h"
#include "tests/kube/admission.h"
#include "tests/kube/world.h"

#define CONFIG_NAME "kubesim-pytorchjob-validator"
#define CONFIG_PATH "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"

int webhook_register(struct kube_client *c, int port, const char *ca_pem, struct err *err)
{
    webhook_unregister(c);
    struct buf ca = BUF_INIT;
    crypto_base64_encode(&ca, ca_pem, strlen(ca_pem));
    char url[200];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, WEBHOOK_PATH);
    json_t *cfg = json_pack(
        "{s:s,s:s,s:{s:s},s:[{s:s,s:{s:s,s:s},s:[{s:[s],s:[s],s:[s,s],s:[s]}],s:s,s:s,s:[s],"
        "s:i}]}",
        "apiVersion", "admissionregistration.k8s.io/v1", "kind", "ValidatingWebhookConfiguration",
        "metadata", "name", CONFIG_NAME, "webhooks", "name",
        "validator.pytorchjob.training-operator.kubeflow.org", "clientConfig", "url", url,
        "caBundle", buf_cstr(&ca), "rules", "apiGroups", "kubeflow.org", "apiVersions", "v1",
        "operations", "CREATE", "UPDATE", "resources", "pytorchjobs", "failurePolicy", "Fail",
        "sideEffects", "None", "admissionReviewVersions", "v1", "timeoutSeconds", 10);
    buf_release(&ca);
    char *body = jsonx_dumps(cfg);
    json_decref(cfg);
    struct kube_request r = { .method = "POST", .path = CONFIG_PATH, .body = body };
    int rc = kube_client_do(c, &r, NULL, err);
    free(body);
    return rc;
}

void webhook_unregister(struct kube_client *c)
{
    struct kube_request r = { .method = "DELETE", .path = CONFIG_PATH "/" CONFIG_NAME };
    struct err err;
    err_init(&err);
    kube_client_do(c, &r, NULL, &err);
    err_release(&err);
}

void webhook_handle(struct request *req, struct reply *rep)
{
    struct err err;
    err_init(&err);
    json_t *review = json_loadb(req->body, req->body_len, 0, NULL);
    const json_t *rq = json_object_get(review, "request");
    if (!json_is_object(rq)) {
        reply_text(rep, 400, "not an AdmissionReview\n", 23);
        json_decref(review);
        return;
    }
    json_t *resp = json_pack("{s:s,s:b}", "uid", kstr(rq, "uid"), "allowed", 1);
    if (admission_pytorchjob(json_object_get(rq, "object"), &err) < 0) {
        const char *msg = strstr(err.msg, "denied the request: ");
        json_object_set_new(resp, "allowed", json_false());
        json_object_set_new(resp, "status",
                            json_pack("{s:i,s:s,s:s}", "code", 403, "reason", "Forbidden",
                                      "message", msg ? msg + 20 : err.msg));
    }
    reply_json(rep, 200,
               json_pack("{s:s,s:s,s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                         "AdmissionReview", "response", resp));
    json_decref(review);
    err_release(&err);
}
