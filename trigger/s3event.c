/*
 * s3event: parsers of S3 notification records, EventBridge "Object Created" events and MinIO
 * webhook bodies into struct s3event. It does not authenticate, match rules or dedupe; those are
 * hookauth, triggerrule and the store. Pure functions, thread-safe; the list owns its strings.
 */
#include "trigger/s3event.h"

#include <ctype.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/utf8.h"
#include "core/xalloc.h"

#define RECORDS_MAX   1000 /* AWS sends one record per message; this only bounds the work */
#define SEQUENCER_MAX 64

void s3event_list_init(struct s3event_list *l)
{
    memset(l, 0, sizeof(*l));
}

static void event_release(struct s3event *e)
{
    free(e->bucket);
    free(e->key);
    free(e->etag);
    free(e->version_id);
    free(e->sequencer);
    free(e->event_name);
    free(e->event_time);
    free(e->region);
    free(e->event_id);
}

void s3event_list_release(struct s3event_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        event_release(&l->items[i]);
    free(l->items);
    s3event_list_init(l);
}

const char *s3event_source_name(enum s3event_source s)
{
    switch (s) {
    case S3EVENT_SOURCE_S3:
        return "s3";
    case S3EVENT_SOURCE_SNS:
        return "sns";
    case S3EVENT_SOURCE_EVENTBRIDGE:
        return "eventbridge";
    case S3EVENT_SOURCE_MINIO:
        return "minio";
    }
    return "unknown";
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

char *s3event_decode_key(const char *encoded, struct err *err)
{
    struct buf b = BUF_INIT;
    for (const char *p = encoded; *p; p++) {
        if (*p == '+') {
            buf_putc(&b, ' ');
        } else if (*p == '%') {
            int hi = hexval((unsigned char)p[1]), lo = hi < 0 ? -1 : hexval((unsigned char)p[2]);
            if (hi < 0 || lo < 0) {
                err_set(err, ERR_INVALID, "bad percent escape at byte %zu", (size_t)(p - encoded));
                goto fail;
            }
            buf_putc(&b, (char)(hi * 16 + lo));
            p += 2;
        } else {
            buf_putc(&b, *p);
        }
    }
    if (b.len == 0 || b.len > S3EVENT_KEY_MAX) {
        err_set(err, ERR_INVALID, "key length %zu is not within 1..%d bytes", b.len,
                S3EVENT_KEY_MAX);
        goto fail;
    }
    /* utf8_valid() also refuses NUL, so "%00" cannot cut the key short downstream. */
    if (!utf8_valid(b.data, b.len)) {
        err_set(err, ERR_INVALID, "key is not valid UTF-8 without NUL once decoded");
        goto fail;
    }
    return buf_detach(&b, NULL);
fail:
    buf_release(&b);
    return NULL;
}

static const char *strip_s3(const char *name)
{
    return strncmp(name, "s3:", 3) == 0 ? name + 3 : name;
}

bool s3event_is_upload(const char *event_name)
{
    static const char *const uploads[] = { "ObjectCreated:Put", "ObjectCreated:Post",
                                           "ObjectCreated:Copy",
                                           "ObjectCreated:CompleteMultipartUpload" };
    const char *n = strip_s3(event_name);
    for (size_t i = 0; i < sizeof(uploads) / sizeof(uploads[0]); i++)
        if (strcmp(n, uploads[i]) == 0)
            return true;
    return false;
}

int s3event_sequencer_norm(const char *seq, char *out, size_t outlen)
{
    size_t n = strlen(seq);
    if (n >= outlen)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (hexval((unsigned char)seq[i]) < 0)
            return -1;
        out[i] = (char)toupper((unsigned char)seq[i]);
    }
    out[n] = '\0';
    return 0;
}

int s3event_sequencer_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), n = la > lb ? la : lb;
    for (size_t i = 0; i < n; i++) {
        int ca = i < la ? toupper((unsigned char)a[i]) : '0';
        int cb = i < lb ? toupper((unsigned char)b[i]) : '0';
        if (ca != cb)
            return ca < cb ? -1 : 1;
    }
    return 0;
}

static void ignore(struct s3event_list *out, const char *fmt, const char *what)
{
    if (out->nignored++ == 0)
        snprintf(out->ignored_reason, sizeof(out->ignored_reason), fmt, what);
}

static struct s3event *push(struct s3event_list *out)
{
    out->items = xrealloc(out->items, (out->n + 1) * sizeof(*out->items));
    struct s3event *e = &out->items[out->n++];
    memset(e, 0, sizeof(*e));
    return e;
}

/* A string member at obj[key]; `required` fails naming where/key when absent. "" when absent. */
static int get_str(const json_t *obj, const char *key, bool required, const char *where,
                   const char **out, struct err *err)
{
    json_t *v = json_object_get(obj, key);
    *out = "";
    if (!v || json_is_null(v)) {
        if (required)
            return err_set(err, ERR_INVALID, "%s/%s: required string is missing", where, key);
        return 0;
    }
    if (!json_is_string(v))
        return err_set(err, ERR_INVALID, "%s/%s: must be a string", where, key);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return err_set(err, ERR_INVALID, "%s/%s: contains a NUL character", where, key);
    *out = json_string_value(v);
    return 0;
}

static int get_obj(const json_t *obj, const char *key, const char *where, json_t **out,
                   struct err *err)
{
    *out = json_object_get(obj, key);
    if (!json_is_object(*out))
        return err_set(err, ERR_INVALID, "%s/%s: required object is missing", where, key);
    return 0;
}

/* Object size: a JSON integer; a string of digits is tolerated (the AWS docs' template shows a
 * string). -1 when absent. */
static int get_size(const json_t *obj, const char *key, const char *where, int64_t *out,
                    struct err *err)
{
    json_t *v = json_object_get(obj, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        long long n = strtoll(s, &end, 10);
        if (*s >= '0' && *s <= '9' && *end == '\0' && n >= 0) {
            *out = n;
            return 0;
        }
    }
    return err_set(err, ERR_INVALID, "%s/%s: must be a non-negative integer", where, key);
}

static int set_time(struct s3event *e, const char *t, const char *field, struct err *err)
{
    if (clock_parse(t, &e->event_time_ns) < 0)
        return err_set(err, ERR_INVALID, "%s: not an ISO-8601 time: \"%.40s\"", field, t);
    e->event_time = xstrdup(t);
    return 0;
}

static int set_sequencer(struct s3event *e, const char *seq, const char *field, struct err *err)
{
    char norm[SEQUENCER_MAX + 1];
    if (s3event_sequencer_norm(seq, norm, sizeof(norm)) < 0)
        return err_set(err, ERR_INVALID, "%s: not a hex sequencer of at most %d digits", field,
                       SEQUENCER_MAX);
    e->sequencer = xstrdup(norm);
    return 0;
}

/* eventVersion "2.x" is the only major version defined; minor versions only add fields. */
static int check_version(const json_t *rec, const char *where, struct err *err)
{
    const char *v;
    if (get_str(rec, "eventVersion", false, where, &v, err) < 0)
        return -1;
    if (*v && (v[0] != '2' || (v[1] != '\0' && v[1] != '.')))
        return err_set(err, ERR_INVALID, "%s/eventVersion: unsupported version \"%.20s\"", where,
                       v);
    return 0;
}

/* Fills e from the `s3` part of one record; e->key is form-decoded. */
static int parse_s3_part(const json_t *rec, struct s3event *e, const char *where, struct err *err)
{
    char path[96];
    json_t *s3, *bucket, *object;
    const char *name, *key, *etag, *version, *seq;
    snprintf(path, sizeof(path), "%s/s3", where);
    if (get_obj(rec, "s3", where, &s3, err) < 0 || get_obj(s3, "bucket", path, &bucket, err) < 0 ||
        get_obj(s3, "object", path, &object, err) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/s3/bucket", where);
    if (get_str(bucket, "name", true, path, &name, err) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/s3/object", where);
    if (get_str(object, "key", true, path, &key, err) < 0 ||
        get_str(object, "eTag", false, path, &etag, err) < 0 ||
        get_str(object, "versionId", false, path, &version, err) < 0 ||
        get_str(object, "sequencer", false, path, &seq, err) < 0 ||
        get_size(object, "size", path, &e->size, err) < 0)
        return -1;
    e->bucket = xstrdup(name);
    e->etag = xstrdup(etag);
    e->version_id = xstrdup(version);
    e->key = s3event_decode_key(key, err);
    if (!e->key)
        return err_wrap(err, "%s/key", path);
    return set_sequencer(e, seq, "sequencer", err) < 0 ? err_wrap(err, "%s", path) : 0;
}

static int parse_record(const json_t *rec, enum s3event_source source, const char *where,
                        struct s3event_list *out, struct err *err)
{
    const char *name, *time, *region;
    if (!json_is_object(rec))
        return err_set(err, ERR_INVALID, "%s: a record must be an object", where);
    if (check_version(rec, where, err) < 0 || get_str(rec, "eventName", true, where, &name, err))
        return -1;
    if (!s3event_is_upload(name)) {
        ignore(out, "event %s is not an upload", name);
        return 0;
    }
    if (get_str(rec, "eventTime", true, where, &time, err) < 0 ||
        get_str(rec, "awsRegion", false, where, &region, err) < 0)
        return -1;
    struct s3event *e = push(out);
    e->source = source;
    e->event_name = xstrdup(strip_s3(name));
    e->region = xstrdup(region);
    e->event_id = xstrdup("");
    char field[96];
    snprintf(field, sizeof(field), "%s/eventTime", where);
    if (set_time(e, time, field, err) < 0 || parse_s3_part(rec, e, where, err) < 0) {
        event_release(e);
        out->n--;
        return -1;
    }
    return 0;
}

int s3event_parse_records(const json_t *doc, enum s3event_source source, const char *where,
                          struct s3event_list *out, struct err *err)
{
    json_t *records = json_object_get(doc, "Records");
    if (!json_is_array(records))
        return err_set(err, ERR_INVALID, "%s/Records: required array is missing", where);
    if (json_array_size(records) > RECORDS_MAX)
        return err_set(err, ERR_TOO_LARGE, "%s/Records: more than %d records", where, RECORDS_MAX);
    for (size_t i = 0; i < json_array_size(records); i++) {
        char path[64];
        snprintf(path, sizeof(path), "%s/Records/%zu", where, i);
        if (parse_record(json_array_get(records, i), source, path, out, err) < 0)
            return -1;
    }
    return 0;
}

/* EventBridge's detail.reason names the S3 API call; map it to the notification event name. */
static const char *eventbridge_name(const char *reason)
{
    static const char *const map[][2] = { { "PutObject", "ObjectCreated:Put" },
                                          { "POST Object", "ObjectCreated:Post" },
                                          { "CopyObject", "ObjectCreated:Copy" },
                                          { "CompleteMultipartUpload",
                                            "ObjectCreated:CompleteMultipartUpload" } };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(reason, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}

static int parse_eb_detail(const json_t *detail, struct s3event *e, struct err *err)
{
    json_t *bucket, *object;
    const char *name, *key, *etag, *version, *seq;
    if (get_obj(detail, "bucket", "/detail", &bucket, err) < 0 ||
        get_obj(detail, "object", "/detail", &object, err) < 0 ||
        get_str(bucket, "name", true, "/detail/bucket", &name, err) < 0 ||
        get_str(object, "key", true, "/detail/object", &key, err) < 0 ||
        get_str(object, "etag", false, "/detail/object", &etag, err) < 0 ||
        get_str(object, "version-id", false, "/detail/object", &version, err) < 0 ||
        get_str(object, "sequencer", false, "/detail/object", &seq, err) < 0 ||
        get_size(object, "size", "/detail/object", &e->size, err) < 0)
        return -1;
    size_t klen = strlen(key);
    if (klen == 0 || klen > S3EVENT_KEY_MAX || !utf8_valid(key, klen))
        return err_set(err, ERR_INVALID, "/detail/object/key: not a valid S3 key");
    e->bucket = xstrdup(name);
    e->key = xstrdup(key);
    e->etag = xstrdup(etag);
    e->version_id = xstrdup(version);
    return set_sequencer(e, seq, "/detail/object/sequencer", err);
}

int s3event_parse_eventbridge(const json_t *doc, struct s3event_list *out, struct err *err)
{
    const char *type, *source, *id, *time, *region, *reason;
    json_t *detail;
    if (get_str(doc, "detail-type", true, "", &type, err) < 0 ||
        get_str(doc, "source", true, "", &source, err) < 0)
        return -1;
    if (strcmp(source, "aws.s3") != 0 || strcmp(type, "Object Created") != 0) {
        ignore(out, "EventBridge event \"%s\" is not an upload", type);
        return 0;
    }
    if (get_str(doc, "id", true, "", &id, err) < 0 ||
        get_str(doc, "time", true, "", &time, err) < 0 ||
        get_str(doc, "region", false, "", &region, err) < 0 ||
        get_obj(doc, "detail", "", &detail, err) < 0 ||
        get_str(detail, "reason", false, "/detail", &reason, err) < 0)
        return -1;
    const char *name = eventbridge_name(reason);
    struct s3event *e = push(out);
    e->source = S3EVENT_SOURCE_EVENTBRIDGE;
    /* An unknown reason is still an "Object Created" event; keep the reason visible. */
    e->event_name = name ? xstrdup(name) : xasprintf("ObjectCreated:%s", *reason ? reason : "Put");
    e->region = xstrdup(region);
    e->event_id = xstrdup(id);
    if (set_time(e, time, "/time", err) < 0 || parse_eb_detail(detail, e, err) < 0) {
        event_release(e);
        out->n--;
        return -1;
    }
    return 0;
}

int s3event_parse_minio(const json_t *doc, struct s3event_list *out, struct err *err)
{
    const char *name, *key;
    size_t first = out->n;
    if (get_str(doc, "EventName", true, "", &name, err) < 0 ||
        get_str(doc, "Key", false, "", &key, err) < 0 ||
        s3event_parse_records(doc, S3EVENT_SOURCE_MINIO, "", out, err) < 0)
        return -1;
    if (out->n != first + 1 || !*key)
        return 0;
    /* MinIO sends one record per body and "Key" as bucket/name unescaped. */
    struct s3event *e = &out->items[first];
    size_t blen = strlen(e->bucket);
    if (strncmp(key, e->bucket, blen) != 0 || key[blen] != '/' || strcmp(key + blen + 1, e->key))
        return err_set(err, ERR_INVALID, "/Key: \"%.80s\" does not name the record's object", key);
    return 0;
}
