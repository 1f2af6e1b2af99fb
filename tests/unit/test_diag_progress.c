/* Unit tests of server/diag/progparse (each framework's progress line) and server/diag/progress
 * (the per-job tracker: step, total, loss, throughput, ETA, timelines). */
#include "tests/unit/check.h"

#include <math.h>
#include <stdlib.h>

#include "core/clock.h"
#include "server/diag/progress.h"

static struct progparse pp;

/* Parses an exact-size heap copy of line: nothing may read past it (ASan checks). */
static bool parse(const char *line)
{
    size_t n = strlen(line);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, line, n);
    bool ok = progparse_line(copy, n, &pp);
    free(copy);
    return ok;
}

static double val(const char *name)
{
    for (size_t i = 0; i < pp.n; i++)
        if (strcmp(pp.v[i].name, name) == 0)
            return pp.v[i].value;
    return -12345;
}

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static void test_hf(void)
{
    CHECK(parse("{'loss': 1.2345, 'grad_norm': 0.5123, 'learning_rate': 4.9e-05, 'epoch': "
                "0.12}"));
    CHECK_INT(pp.format, PROGPARSE_HF);
    CHECK_INT(pp.n, 4);
    CHECK(near(val("loss"), 1.2345));
    CHECK(near(val("grad_norm"), 0.5123));
    CHECK(near(val("learning_rate"), 4.9e-05));
    CHECK(near(val("epoch"), 0.12));
    CHECK_INT(pp.step, -1);
    CHECK(!pp.final);
    CHECK(parse("{'train_runtime': 1234.5678, 'train_samples_per_second': 12.345, "
                "'train_steps_per_second': 0.772, 'train_loss': 1.8765, 'epoch': 3.0}"));
    CHECK(pp.final);
    CHECK(near(val("train_samples_per_second"), 12.345));
    /* NaN survives parsing: it is what the NaN check looks for. */
    CHECK(parse("{'loss': nan, 'grad_norm': inf, 'learning_rate': 1e-05, 'epoch': 1.5}"));
    CHECK(isnan(val("loss")));
    CHECK(isinf(val("grad_norm")));
    /* tqdm redraws before the dict on the same line. */
    CHECK(parse(" 10%|█         | 100/1000 [00:20<03:00,  5.00it/s]\r{'eval_loss': 1.9, "
                "'eval_runtime': 12.3, 'epoch': 0.1}"));
    CHECK_INT(pp.format, PROGPARSE_HF);
    CHECK(near(val("eval_loss"), 1.9));
    /* JSON-style quotes and a step key. */
    CHECK(parse("{\"step\": 40, \"loss\": 2.5}"));
    CHECK_INT(pp.step, 40);
    /* Dicts that are not training metrics. */
    CHECK(!parse("config: {'model': 'llama', 'layers': 32}"));
    CHECK(!parse("{'a': 1, 'b': 2}"));
}

static void test_megatron(void)
{
    CHECK(parse(" [2024-05-01 12:00:00] iteration      100/  500000 | consumed samples:        "
                "51200 | elapsed time per iteration (ms): 1234.5 | throughput per GPU "
                "(TFLOP/s/GPU): 180.2 | learning rate: 1.500000E-04 | global batch size:   512 | "
                "lm loss: 7.123456E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped "
                "iterations:   0 | number of nan iterations:   0 |"));
    CHECK_INT(pp.format, PROGPARSE_MEGATRON);
    CHECK_INT(pp.step, 100);
    CHECK_INT(pp.total, 500000);
    CHECK(near(val("consumed_samples"), 51200));
    CHECK(near(val("elapsed_time_per_iteration_ms"), 1234.5));
    CHECK(near(val("throughput_per_gpu_tflop_per_s_per_gpu"), 180.2));
    CHECK(near(val("learning_rate"), 1.5e-4));
    CHECK(near(val("lm_loss"), 7.123456));
    CHECK(near(val("loss_scale"), 1.0));
    CHECK(near(val("number_of_nan_iterations"), 0));
    CHECK(!parse("| iteration | loss |"));
}

static void test_deepspeed(void)
{
    CHECK(parse("[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=100, "
                "skipped=2, lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]"));
    CHECK_INT(pp.format, PROGPARSE_DEEPSPEED);
    CHECK_INT(pp.step, 100);
    CHECK(near(val("skipped"), 2));
    CHECK(near(val("lr"), 0.0001));
    CHECK(val("mom") == -12345);
    CHECK(parse("[2024-05-01 12:00:00,124] [INFO] [timer.py:260:stop] "
                "epoch=0/micro_step=400/global_step=100, RunningAvgSamplesPerSec=25.02, "
                "CurrSamplesPerSec=25.70, MemAllocated=4.32GB, MaxMemAllocated=38.49GB"));
    CHECK_INT(pp.format, PROGPARSE_DEEPSPEED);
    CHECK_INT(pp.step, 100); /* global_step, not micro_step */
    CHECK(near(val("running_avg_samples_per_sec"), 25.02));
    CHECK(near(val("curr_samples_per_sec"), 25.70));
    CHECK(near(val("mem_allocated"), 4.32));
    CHECK(near(val("micro_step"), 400));
    CHECK(parse("steps: 100 loss: 2.3456 iter time (s): 0.512 samples/sec: 62.500"));
    CHECK_INT(pp.format, PROGPARSE_DEEPSPEED);
    CHECK_INT(pp.step, 100);
    CHECK(near(val("loss"), 2.3456));
    CHECK(near(val("iter_time_s"), 0.512));
    CHECK(near(val("samples_per_sec"), 62.5));
    CHECK(parse("[Rank 0] step=200, loss=2.1 | samples/sec=512.5 | tokens/sec=1049600"));
    CHECK(near(val("samples_per_sec"), 512.5));
    CHECK(near(val("tokens_per_sec"), 1049600));
}

static void test_tqdm(void)
{
    CHECK(parse(" 45%|████▌     | 450/1000 [01:23<01:40,  5.43it/s]"));
    CHECK_INT(pp.format, PROGPARSE_TQDM);
    CHECK_INT(pp.step, 450);
    CHECK_INT(pp.total, 1000);
    CHECK(near(pp.remaining_s, 100));
    CHECK(near(val("it_per_sec"), 5.43));
    CHECK(parse("Training:  12%|█▏        | 120/1000 [10:00<1:13:20,  5.00s/it, loss=2.31, "
                "lr=1e-4]"));
    CHECK_INT(pp.step, 120);
    CHECK(near(pp.remaining_s, 3600 + 13 * 60 + 20));
    CHECK(near(val("it_per_sec"), 0.2));
    CHECK(near(val("loss"), 2.31));
    CHECK(near(val("lr"), 1e-4));
    CHECK(parse("  0%|          | 0/1000 [00:00<?, ?it/s]"));
    CHECK_INT(pp.step, 0);
    CHECK(pp.remaining_s < 0);
    /* Redraws: the last segment counts. */
    CHECK(parse(" 1%|          | 10/1000 [00:02<03:18, 5.00it/s]\r 2%|▏         | 20/1000 "
                "[00:04<03:16, 5.00it/s]\r"));
    CHECK_INT(pp.step, 20);
    /* Bars that are not the training loop. */
    CHECK(!parse("Map: 100%|██████████| 5000/5000 [00:01<00:00, 3000.00 examples/s]"));
    CHECK(!parse("Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.30s/it]"));
    CHECK(!parse("model.safetensors:  45%|████▌     | 1.23G/2.73G [00:10<00:12, 123MB/s]"));
}

static void test_kv(void)
{
    CHECK(parse("step=100 loss=2.3 lr=1e-4 tokens_per_sec=12000"));
    CHECK_INT(pp.format, PROGPARSE_KV);
    CHECK_INT(pp.step, 100);
    CHECK_INT(pp.n, 3);
    CHECK(near(val("loss"), 2.3));
    CHECK(near(val("tokens_per_sec"), 12000));
    CHECK(parse("2024-05-01 12:00:00 INFO train.py:88 epoch=1 step=250, loss=nan, "
                "step_time=0.95s"));
    CHECK(isnan(val("loss")));
    CHECK(near(val("step_time"), 0.95));
    /* Not progress: one pair, no step or loss, hex, versions. */
    CHECK(!parse("NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth0"));
    CHECK(!parse("step=100"));
    CHECK(!parse("workers=8 batch=32"));
    CHECK(!parse("comm=0x7f3a step=abc"));
    CHECK(!parse("version=1.2.3 build=7"));
    CHECK(!parse("ip-10-0-1-7:4242:4310 [0] NCCL INFO Channel 00/32 :    0   1   2   3"));
    CHECK(!parse(""));
}

static void test_names_numbers(void)
{
    char out[PROGPARSE_NAME_MAX];
    progparse_norm_name("RunningAvgSamplesPerSec", 23, out);
    CHECK_STR(out, "running_avg_samples_per_sec");
    progparse_norm_name(" elapsed time per iteration (ms)", 32, out);
    CHECK_STR(out, "elapsed_time_per_iteration_ms");
    progparse_norm_name("samples/sec", 11, out);
    CHECK_STR(out, "samples_per_sec");
    progparse_norm_name("grad_norm", 9, out);
    CHECK_STR(out, "grad_norm");
    CHECK_INT(progparse_norm_name("()", 2, out), 0);
    double v;
    size_t used;
    CHECK(progparse_number("7.1E+00 |", 9, &v, &used) && near(v, 7.1) && used == 7);
    CHECK(progparse_number("-inf,", 5, &v, &used) && isinf(v) && v < 0);
    CHECK(!progparse_number("abc", 3, &v, &used));
}

static void test_tracker(void)
{
    struct progress *p = progress_new();
    struct progress_sample s[PROGPARSE_VALUES_MAX];
    int64_t t0 = 1714564800 * NS_PER_SEC;
    char line[200];
    /* Two ranks print tqdm (1 step/s); rank 0 also prints HF dicts. */
    for (int i = 0; i <= 10; i++) {
        for (int r = 0; r < 2; r++) {
            snprintf(line, sizeof(line), " %d%%|#    | %d/1000 [00:%02d<16:30,  1.00it/s]", i / 10,
                     i * 10, i);
            progress_feed(p, r, 100 + i * 3 + r, t0 + (int64_t)i * 10 * NS_PER_SEC, line,
                          strlen(line), s, 0);
        }
        snprintf(line, sizeof(line), "{'loss': %.2f, 'learning_rate': 5e-05, 'epoch': 0.%d}",
                 3.0 - i * 0.1, i);
        size_t n = progress_feed(p, 0, 102 + i * 3, t0 + (int64_t)i * 10 * NS_PER_SEC, line,
                                 strlen(line), s, PROGPARSE_VALUES_MAX);
        CHECK_INT(n, 3);
        CHECK_STR(s[0].name, "loss");
        CHECK_INT(s[0].step, i * 10); /* the rank's current tqdm step */
        CHECK_INT(s[0].rank, 0);
        CHECK_INT(s[0].seq, 102 + i * 3);
    }
    /* An evaluation bar (smaller total) does not move the step. */
    const char *eval = " 50%|#####     | 25/50 [00:05<00:05,  5.00it/s]";
    CHECK_INT(progress_feed(p, 0, 200, t0 + 101 * NS_PER_SEC, eval, strlen(eval), s, 4), 0);
    struct progress_state st;
    progress_state(p, &st);
    CHECK_INT(st.step, 100);
    CHECK_INT(st.total, 1000);
    CHECK(st.has_loss && near(st.loss, 2.0));
    CHECK(st.has_throughput && near(st.throughput, 1.0));
    CHECK_STR(st.throughput_unit, "it/s");
    CHECK(near(st.step_seconds, 1.0));
    CHECK_INT(st.eta_ns, 900 * NS_PER_SEC); /* (1000 - 100) steps x 1 s */
    CHECK_INT(st.format, PROGPARSE_HF);
    CHECK(!st.finished);
    /* After a training-bar line, tqdm's own estimate is the ETA. */
    const char *bar = " 10%|#    | 101/1000 [01:41<14:59,  1.00it/s]";
    progress_feed(p, 1, 201, t0 + 101 * NS_PER_SEC, bar, strlen(bar), s, 0);
    progress_state(p, &st);
    CHECK_INT(st.step, 101);
    CHECK_INT(st.eta_ns, 899 * NS_PER_SEC);
    json_t *j = progress_state_json(&st);
    CHECK_INT(json_integer_value(json_object_get(j, "step")), 101);
    CHECK_INT(json_integer_value(json_object_get(j, "total_steps")), 1000);
    CHECK(near(json_real_value(json_object_get(j, "loss")), 2.0));
    CHECK(near(json_real_value(json_object_get(j, "eta_seconds")), 899));
    CHECK_STR(json_string_value(json_object_get(j, "throughput_unit")), "it/s");
    /* Hugging Face prints its tqdm bar beside the dicts: still "hf", the OpenAPI's name */
    CHECK_STR(json_string_value(json_object_get(j, "format")), "hf");
    CHECK(near(json_real_value(json_object_get(j, "epoch")), 0.1)); /* the last dict's */
    json_decref(j);

    struct stall_rank tl[4];
    CHECK_INT(progress_timelines(p, tl, 4), 2);
    CHECK_INT(tl[0].rank, 0);
    CHECK_INT(tl[0].n, 11);
    CHECK_INT(tl[0].steps[10], 100);
    CHECK_INT(tl[0].times[10] - tl[0].times[9], 10 * NS_PER_SEC);
    CHECK_INT(tl[1].n, 12);
    CHECK_INT(tl[1].last_seq, 201);
    CHECK(tl[0].last_len > 0 && memcmp(tl[0].last_line, " 50%", 4) == 0);
    CHECK_INT(progress_nranks(p), 2);
    progress_free(p);
}

static void test_tracker_megatron(void)
{
    struct progress *p = progress_new();
    struct progress_sample s[PROGPARSE_VALUES_MAX];
    int64_t t0 = 1000 * NS_PER_SEC;
    char line[300];
    for (int i = 1; i <= 5; i++) {
        snprintf(line, sizeof(line),
                 " iteration %8d/ 1000 | elapsed time per iteration (ms): 2000.0 | tokens per "
                 "second: 40000.0 | lm loss: %f | number of nan iterations:   0 |",
                 i * 10, 5.0 - i * 0.1);
        CHECK_INT(progress_feed(p, 7, i, t0 + (int64_t)i * 20 * NS_PER_SEC, line, strlen(line), s,
                                PROGPARSE_VALUES_MAX),
                  4);
    }
    struct progress_state st;
    progress_state(p, &st);
    CHECK_INT(st.step, 50);
    CHECK_INT(st.total, 1000);
    CHECK(near(st.loss, 4.5));
    CHECK_STR(st.throughput_unit, "tokens/s");
    CHECK(near(st.step_seconds, 2.0)); /* reported elapsed time per iteration */
    CHECK_INT(st.eta_ns, 950 * 2 * NS_PER_SEC);
    struct progress_sample bad = { .name = "number_of_nan_iterations", .value = 2 };
    CHECK(progress_bad_loss(&bad));
    bad.value = 0;
    CHECK(!progress_bad_loss(&bad));
    struct progress_sample nanloss = { .name = "lm_loss", .value = NAN };
    CHECK(progress_bad_loss(&nanloss));
    struct progress_sample scale = { .name = "loss_scale", .value = INFINITY };
    CHECK(!progress_bad_loss(&scale));
    /* The end-of-training summary finishes the job's progress. */
    const char *fin = "{'train_runtime': 100.0, 'train_samples_per_second': 50.0, 'train_loss': "
                      "4.4, 'epoch': 1.0}";
    progress_feed(p, 0, 99, t0 + 200 * NS_PER_SEC, fin, strlen(fin), s, 0);
    progress_state(p, &st);
    CHECK(st.finished);
    CHECK_INT(st.eta_ns, 0);
    CHECK(near(st.loss, 4.5)); /* the summary's train_loss is a mean, not the last loss */
    CHECK(st.has_epoch && near(st.epoch, 1.0));
    CHECK_INT(progress_feed(p, -1, 1, 1, fin, strlen(fin), s, 4), 0);
    progress_free(p);
    progress_free(NULL);
}

/* Megatron-LM's own line has no samples per second: derived from the global batch size and
 * the time per iteration, as the job's throughput and a series of its own. */
static void test_megatron_throughput(void)
{
    struct progress *p = progress_new();
    struct progress_sample s[PROGPARSE_VALUES_MAX];
    const char *line = " [2024-05-01 12:00:00] iteration      100/  500000 | consumed samples: "
                       "51200 | elapsed time per iteration (ms): 1250.0 | throughput per GPU "
                       "(TFLOP/s/GPU): 180.2 | learning rate: 1.500000E-04 | global batch size: "
                       "  512 | lm loss: 7.123456E+00 | loss scale: 1.0 | grad norm: 1.234 |";
    size_t n = progress_feed(p, 0, 1, NS_PER_SEC, line, strlen(line), s, PROGPARSE_VALUES_MAX);
    bool derived = false;
    for (size_t i = 0; i < n; i++)
        derived |= strcmp(s[i].name, "samples_per_sec") == 0 && near(s[i].value, 409.6);
    CHECK(derived);
    struct progress_state st;
    progress_state(p, &st);
    CHECK(st.has_throughput && near(st.throughput, 409.6));
    CHECK_STR(st.throughput_unit, "samples/s");
    json_t *j = progress_state_json(&st);
    CHECK_STR(json_string_value(json_object_get(j, "format")), "megatron");
    CHECK(json_is_null(json_object_get(j, "epoch")));
    json_decref(j);
    progress_free(p);
}

/* The format names are the OpenAPI enum's. */
static void test_format_names(void)
{
    CHECK_STR(progparse_format_name(PROGPARSE_HF), "hf");
    CHECK_STR(progparse_format_name(PROGPARSE_KV), "kv");
    CHECK_STR(progparse_format_name(PROGPARSE_TQDM), "tqdm");
}

int main(void)
{
    test_megatron_throughput();
    test_format_names();
    test_hf();
    test_megatron();
    test_deepspeed();
    test_tqdm();
    test_kv();
    test_names_numbers();
    test_tracker();
    test_tracker_megatron();
    return check_done();
}
