/*
 * table: server-side printing (meta.k8s.io/v1 Table), which `kubectl get` asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`. Columns and cell values follow
 * kubernetes/pkg/printers/internalversion for core resources and the CRDs'
 * additionalPrinterColumns (State = last condition type, Age) for the Kubeflow jobs.
 */
#ifndef KS_TABLE_H
#define KS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tests/kube/resource.h"

/* True when the Accept header asks for a Table. */
bool table_wanted(const char *accept);
/* A Table of objs (borrowed). include is the includeObject parameter: "None", "Object" or
 * (default) "Metadata". now is the wall clock for ages. New reference. */
json_t *table_render(const struct resource *res, json_t *const *objs, size_t n, const char *include,
                     int64_t now);
/* kubectl's HumanDuration ("5s", "2m3s", "4h", "3d"); out >= 32 bytes. */
char *table_age(int64_t ns, char *out);

#endif
