/*
 * ending: classification of rank endings and platform events (see ending.h). A known reason
 * (OOMKilled, Evicted, Preempted...) decides; then a lost rank; then whether trainyard itself
 * stopped it; then the signal; then the exit code. Exit 0 without a reason is a clean end.
 *
 * Pure; thread-safe.
 */
#include "server/diag/ending.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void set(struct ending_class *out, enum diag_kind kind, enum diag_role role)
{
    out->kind = kind;
    out->role = role;
}

static void describe_signal(struct ending_class *out, const struct ending *e, int sig)
{
    const char *name = kinds_signal_name(sig);
    if (e->exited && e->exit_code == 128 + sig)
        snprintf(out->detail, sizeof(out->detail), "exit code %d, %s", e->exit_code,
                 name ? name : "signal");
    else
        snprintf(out->detail, sizeof(out->detail), "signal %d%s%s%s", sig, name ? " (" : "",
                 name ? name : "", name ? ")" : "");
}

static void by_signal(struct ending_class *out, const struct ending *e, int sig)
{
    describe_signal(out, e, sig);
    switch (sig) {
    case SIGSEGV:
        set(out, DIAG_SEGFAULT, DIAG_CAUSE);
        break;
    case SIGBUS:
        set(out, DIAG_BUS_ERROR, DIAG_CAUSE);
        break;
    case SIGKILL:
        set(out, DIAG_KILLED, DIAG_SYMPTOM);
        break;
    case SIGTERM:
    case SIGINT:
    case SIGHUP:
        set(out, DIAG_TERMINATED, DIAG_SYMPTOM);
        break;
    default:
        set(out, DIAG_EXIT, DIAG_SYMPTOM);
        break;
    }
}

static void by_reason(struct ending_class *out, const struct diag_reason *r, const char *message)
{
    set(out, r->kind, r->role);
    out->text = r->text;
    if (message && *message)
        classify_clean(out->detail, sizeof(out->detail), message, strlen(message));
    else
        classify_clean(out->detail, sizeof(out->detail), r->text, strlen(r->text));
}

void ending_classify(const struct ending *e, struct ending_class *out)
{
    memset(out, 0, sizeof(*out));
    int sig = e->signal;
    if (!sig && e->exited && e->exit_code > 128 && e->exit_code < 160)
        sig = e->exit_code - 128;
    out->signal = sig;
    const struct diag_reason *r = kinds_reason(e->pod_reason);
    if (!r)
        r = kinds_reason(e->reason);
    if (r) {
        by_reason(out, r, e->message);
        return;
    }
    if (e->lost) {
        set(out, DIAG_NODE_LOST, DIAG_CAUSE);
        snprintf(out->detail, sizeof(out->detail), "vanished without an exit status");
        return;
    }
    if (e->stopped) {
        if (!sig && e->exited && e->exit_code == 0)
            return;
        set(out, sig == SIGKILL ? DIAG_KILLED : DIAG_TERMINATED, DIAG_CONSEQUENCE);
        snprintf(out->detail, sizeof(out->detail), "stopped by trainyard");
        return;
    }
    if (sig) {
        by_signal(out, e, sig);
        return;
    }
    if (e->exited && (e->exit_code == 127 || e->exit_code == 126)) {
        /* what a shell or a container runtime answers for a missing or non-executable
         * command: the command line is wrong, not the training */
        set(out, DIAG_COMMAND_NOT_FOUND, DIAG_CAUSE);
        snprintf(out->detail, sizeof(out->detail), "exit code %d: command %s", e->exit_code,
                 e->exit_code == 127 ? "not found" : "not executable");
        return;
    }
    if (e->exited && e->exit_code != 0) {
        set(out, DIAG_EXIT, DIAG_SYMPTOM);
        snprintf(out->detail, sizeof(out->detail), "exit code %d", e->exit_code);
    }
}

bool ending_classify_event(const struct ending_event *ev, struct ending_class *out)
{
    memset(out, 0, sizeof(*out));
    const struct diag_reason *r = kinds_reason(ev->reason);
    if (!r)
        return false;
    by_reason(out, r, ev->message);
    return true;
}
