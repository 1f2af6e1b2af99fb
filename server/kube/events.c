/*
 * events: Kubernetes Events -> job timeline entries (see events.h). The time is the Event's
 * latest occurrence (lastTimestamp, else eventTime, else firstTimestamp); repeated Events
 * (count > 1) say so in the message.
 */
#include "server/kube/events.h"

#include "core/clock.h"
#include "core/jsonx.h"

void kube_event_subject(const json_t *ev, const char **kind, const char **name, const char **uid)
{
    const json_t *io = json_object_get(ev, "involvedObject");
    *kind = jsonx_str(io, "kind");
    *name = jsonx_str(io, "name");
    *uid = jsonx_str(io, "uid");
    if (!*kind)
        *kind = "";
    if (!*name)
        *name = "";
    if (!*uid)
        *uid = "";
}

static int64_t event_time(const json_t *ev)
{
    const char *keys[] = { "lastTimestamp", "eventTime", "firstTimestamp" };
    for (size_t i = 0; i < 3; i++) {
        const char *t = jsonx_str(ev, keys[i]);
        int64_t ns;
        if (t && clock_parse(t, &ns) == 0)
            return ns;
    }
    const char *created = jsonx_str(json_object_get(ev, "metadata"), "creationTimestamp");
    int64_t ns;
    return created && clock_parse(created, &ns) == 0 ? ns : clock_now_ns();
}

bool kube_event_convert(const json_t *ev, int rank, struct kube_event *out)
{
    memset(out, 0, sizeof(*out));
    const char *uid = jsonx_str(json_object_get(ev, "metadata"), "uid");
    const char *reason = jsonx_str(ev, "reason"), *msg = jsonx_str(ev, "message");
    const char *type = jsonx_str(ev, "type");
    if (!uid || !reason)
        return false;
    const char *kind, *name, *ouid;
    kube_event_subject(ev, &kind, &name, &ouid);
    int64_t count = jsonx_int(ev, "count", 1);
    snprintf(out->type, sizeof(out->type), "%s",
             type && !strcmp(type, "Warning") ? "kubernetes_warning" : "kubernetes");
    snprintf(out->reason, sizeof(out->reason), "%s", reason);
    if (count > 1)
        snprintf(out->message, sizeof(out->message), "%s %s: %s (%lld times)", kind, name,
                 msg ? msg : "", (long long)count);
    else
        snprintf(out->message, sizeof(out->message), "%s %s: %s", kind, name, msg ? msg : "");
    snprintf(out->ext_id, sizeof(out->ext_id), "k8s-event/%s", uid);
    out->e = (struct job_event){ .type = out->type,
                                 .reason = out->reason,
                                 .message = out->message,
                                 .rank = rank,
                                 .source = "kubernetes",
                                 .time = event_time(ev),
                                 .ext_id = out->ext_id };
    return true;
}
