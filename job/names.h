/*
 * names: the naming rules Kubernetes enforces, checked before anything reaches a cluster (or a
 * shell, or a file name). Each returns NULL when text is valid, else a message a person can act
 * on (static string).
 */
#ifndef TY_NAMES_H
#define TY_NAMES_H

const char *
names_dns1035_label(const char *s); /* job names, Service names: [a-z]([-a-z0-9]*[a-z0-9])? */
const char *names_dns1123_label(const char *s);     /* namespaces: [a-z0-9]([-a-z0-9]*[a-z0-9])? */
const char *names_dns1123_subdomain(const char *s); /* claims, secrets: labels joined by '.' */
const char *names_label_key(const char *s);         /* [prefix/]name */
const char *names_label_value(const char *s);
const char *names_env_var(const char *s);  /* [A-Za-z_][A-Za-z0-9_]* */
const char *names_image(const char *s);    /* an OCI image reference, loosely */
const char *names_abs_path(const char *s); /* /absolute/path without .. */

#endif
