/*
 * Tests of server/health/dcgm's parsing of Prometheus answers: DCGM exporter series per node and
 * GPU, throttle reasons decoded, the conditions a node gets (Xid, ECC, throttling, idle), labels
 * and values that are not there, and answers that are not a successful vector.
 */
#include "check.h"
#include "core/jsonx.h"
#include "server/health/dcgm.h"

#define LABELS(gpu, host)                                                                          \
    "\"gpu\":\"" gpu "\",\"UUID\":\"GPU-" gpu "\",\"modelName\":\"NVIDIA A100-SXM4-80GB\","        \
    "\"pci_bus_id\":\"00000000:0" gpu ":00.0\",\"Hostname\":\"" host "\""
#define SAMPLE(name, gpu, host, value)                                                             \
    "{\"metric\":{\"__name__\":\"" name                                                            \
    "\"," LABELS(gpu, host) "},\"value\":[1714564800.123,\"" value "\"]}"

static const char answer[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
    "\"result\":[" SAMPLE("DCGM_FI_DEV_GPU_UTIL", "0", "node-a", "99") "," SAMPLE(
        "DCGM_FI_DEV_"
        "GPU_UTIL",
        "1", "node-a",
        "0") "," SAMPLE("DCGM_FI_DEV_GPU_TEMP", "0", "node-a",
                        "71") "," SAMPLE("DCGM_FI_DEV_POWER_USAGE", "0", "node-a",
                                         "402.5") "," SAMPLE("DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                                                             "0", "node-a",
                                                             "4") "," SAMPLE("DCGM_FI_DEV_XID_"
                                                                             "ERRORS",
                                                                             "1", "node-a",
                                                                             "0") "," SAMPLE("DCGM_"
                                                                                             "FI_"
                                                                                             "DEV_"
                                                                                             "GPU_"
                                                                                             "UTIL",
                                                                                             "0",
                                                                                             "node-"
                                                                                             "b",
                                                                                             "97") "," SAMPLE("DCGM_FI_DEV_XID_ERRORS",
                                                                                                              "0",
                                                                                                              "node-b",
                                                                                                              "48") "," SAMPLE("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                                                                                                                               "0",
                                                                                                                               "node-b",
                                                                                                                               "2") "," SAMPLE("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                                                                                                                                               "0",
                                                                                                                                               "node-b",
                                                                                                                                               "64") "," SAMPLE("DCGM_FI_DEV_GPU_TEMP",
                                                                                                                                                                "0",
                                                                                                                                                                "node-b",
                                                                                                                                                                "NaN") "," SAMPLE("DCGM_FI_DEV_FB_USED",
                                                                                                                                                                                  "0",
                                                                                                                                                                                  "node-b",
                                                                                                                                                                                  "1234") ","
                                                                                                                                                                                          "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"gpu\":\"0\"},\"value\":[1,\"5\"]}"
                                                                                                                                                                                          "]}}";

static json_t *conditions(json_t *nodes, const char *node)
{
    return json_object_get(json_object_get(nodes, node), "conditions");
}

static bool has(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

int main(void)
{
    json_t *nodes = dcgm_parse(answer, strlen(answer));
    CHECK(nodes != NULL);
    CHECK_INT(json_object_size(nodes), 2); /* the sample without a Hostname is skipped */
    json_t *a = json_object_get(json_object_get(nodes, "node-a"), "gpus");
    CHECK_INT(json_array_size(a), 2);
    json_t *g0 = json_array_get(a, 0);
    CHECK_INT(jsonx_int(g0, "gpu", -1), 0);
    CHECK_STR(jsonx_str(g0, "model"), "NVIDIA A100-SXM4-80GB");
    CHECK_STR(jsonx_str(g0, "uuid"), "GPU-0");
    CHECK(json_real_value(json_object_get(g0, "utilization")) == 99);
    CHECK(json_real_value(json_object_get(g0, "power_watts")) == 402.5);
    CHECK_STR(json_string_value(json_array_get(json_object_get(g0, "throttle_reasons"), 0)),
              "sw_power_cap");
    /* node-a: a power cap is not a slowdown against the GPU's will; GPU 1 idles. */
    CHECK(has(conditions(nodes, "node-a"), "GPUIdle"));
    CHECK(!has(conditions(nodes, "node-a"), "GPUThrottled"));
    CHECK(!has(conditions(nodes, "node-a"), "GPUXidError"));
    /* node-b: Xid 48, double-bit ECC errors, thermal slowdown. */
    json_t *b0 = json_array_get(json_object_get(json_object_get(nodes, "node-b"), "gpus"), 0);
    CHECK_INT(jsonx_int(b0, "xid", 0), 48);
    CHECK_INT(jsonx_int(b0, "ecc_uncorrectable", 0), 2);
    CHECK(json_object_get(b0, "temperature") == NULL); /* NaN: not a reading */
    CHECK(json_object_get(b0, "fb_used") == NULL);     /* not a metric we ask for */
    CHECK(has(conditions(nodes, "node-b"), "GPUXidError"));
    CHECK(has(conditions(nodes, "node-b"), "GPUECCError"));
    CHECK(has(conditions(nodes, "node-b"), "GPUThrottled"));
    json_decref(nodes);

    const char *bad[] = {
        "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
        "not json",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(dcgm_parse(bad[i], strlen(bad[i])) == NULL);
    const char *empty =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
    nodes = dcgm_parse(empty, strlen(empty));
    CHECK(nodes && json_object_size(nodes) == 0);
    json_decref(nodes);
    return check_done();
}
