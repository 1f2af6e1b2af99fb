/*
 * secretenv: the values of a job spec that are secrets, hidden from those who may read the job
 * but did not submit it. The spec's own secret form is `{"secret": NAME, "key": KEY}`, a
 * reference to a Kubernetes Secret whose value trainyard never holds; but people also put
 * tokens in plain env values (`"HF_TOKEN": "hf_..."`, `"DATABASE_URL":
 * "postgres://u:pass@db/x"`), and every read token saw them. Redacted, as CI systems and
 * Airflow do, are:
 *   - env values whose name says secret (SECRET, PASSWORD, TOKEN, API_KEY, ACCESS_KEY,
 *     CREDENTIAL, PRIVATE_KEY, ...), in `env` and in the env lists of `kubernetes.manifest`;
 *   - values, in env or argv (whole, or after "--flag="), that look like a credential: a
 *     well-known token prefix (hf_, ghp_, sk-, AKIA..., ty_) or a URL with a password.
 * A redacted value reads "<redacted>"; names, references and everything else are unchanged.
 * Pure; thread-safe.
 */
#ifndef TY_SECRETENV_H
#define TY_SECRETENV_H

#include <stdbool.h>

#include "core/buf.h"

#define SECRETENV_MARK "<redacted>"

/* True when an env variable of this name holds a secret. */
bool secretenv_name(const char *name);
/* True when the value looks like a credential whatever its name. */
bool secretenv_value(const char *value);

/* Appends to out the spec (canonical JSON text) with its secret values redacted and returns
 * true; returns false, out unchanged, when the spec has nothing to redact (the common case is
 * decided without parsing). */
bool secretenv_redact(const char *spec, struct buf *out);

#endif
