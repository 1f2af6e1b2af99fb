/*
 * tls: a throw-away certificate authority and a server certificate for 127.0.0.1/localhost,
 * made at start-up with the openssl command line (package openssl), so `--tls` needs no files.
 */
#ifndef KS_TLS_H
#define KS_TLS_H

#include "core/err.h"

struct tls_material {
    char *ca_pem;   /* goes into the kubeconfig's certificate-authority-data */
    char *cert_pem; /* server certificate */
    char *key_pem;  /* server key */
};

/* Fills t (caller releases with tls_release()). ERR_IO when openssl fails. */
int tls_generate(struct tls_material *t, struct err *err);
void tls_release(struct tls_material *t);

#endif
