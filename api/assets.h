/*
 * assets: files compiled into the binary at build time (api/embed.cmake): the web page under
 * web/ and openapi/openapi.yaml. Read-only, static storage.
 */
#ifndef TY_ASSETS_H
#define TY_ASSETS_H

#include <stddef.h>

struct asset {
    const char *path; /* URL path, e.g. "/index.html" */
    const char *content_type;
    const unsigned char *data;
    size_t size;
};

extern const struct asset assets_table[];
extern const size_t assets_count;

/* Returns the asset served at path, or NULL. */
const struct asset *assets_find(const char *path);

#endif
