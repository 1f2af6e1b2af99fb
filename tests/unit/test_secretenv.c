/*
 * Tests of job/secretenv: which env names and values are secrets, and the spec a reader who
 * did not submit the job sees (issue 17: every read token saw env values such as tokens).
 */
#include "check.h"
#include "job/secretenv.h"

static void test_names_and_values(void)
{
    static const char *const secret_names[] = { "HF_TOKEN",        "AWS_SECRET_ACCESS_KEY",
                                                "WANDB_API_KEY",   "db_password",
                                                "GITHUB_APIKEY",   "GOOGLE_CREDENTIALS",
                                                "SSH_PRIVATE_KEY", "MY_PASSPHRASE" };
    for (size_t i = 0; i < sizeof(secret_names) / sizeof(secret_names[0]); i++)
        CHECK(secretenv_name(secret_names[i]));
    static const char *const plain_names[] = { "LR", "EPOCHS", "S3_KEY", "NCCL_DEBUG", "PATH" };
    for (size_t i = 0; i < sizeof(plain_names) / sizeof(plain_names[0]); i++)
        CHECK(!secretenv_name(plain_names[i]));
    CHECK(secretenv_value("hf_abcdefghijklmnopqrstu"));
    CHECK(secretenv_value("--token=ghp_abcdefghijklmnopqrstu"));
    CHECK(secretenv_value("postgres://train:s3cret@db:5432/runs"));
    CHECK(!secretenv_value("postgres://db:5432/runs"));
    CHECK(!secretenv_value("s3://bucket/a@b/c"));
    CHECK(!secretenv_value("sk-1"));
    CHECK(!secretenv_value("3e-4"));
}

static void test_redact(void)
{
    struct buf out = BUF_INIT;
    const char *plain = "{\"name\":\"a\",\"command\":[\"python\",\"train.py\"],\"nodes\":1}";
    CHECK(!secretenv_redact(plain, &out));
    CHECK_INT(out.len, 0);
    const char *no_secret = "{\"name\":\"a\",\"command\":[\"x\"],\"env\":{\"LR\":\"3e-4\"}}";
    CHECK(!secretenv_redact(no_secret, &out));
    const char *spec =
        "{\"name\":\"a\",\"command\":[\"train\",\"--hf=hf_abcdefghijklmnopqrstu\"],"
        "\"env\":{\"LR\":\"3e-4\",\"HF_TOKEN\":\"hf_abcdefghijklmnopqrstu\",\"PW\":"
        "{\"secret\":\"db\",\"key\":\"pw\"},\"DB\":\"mysql://u:p@h/x\"},"
        "\"kubernetes\":{\"manifest\":{\"spec\":{\"containers\":[{\"env\":[{\"name\":"
        "\"WANDB_API_KEY\",\"value\":\"abc\"},{\"name\":\"MODE\",\"value\":\"fast\"}]}]}}}}";
    CHECK(secretenv_redact(spec, &out));
    const char *want =
        "{\"name\":\"a\",\"command\":[\"train\",\"<redacted>\"],"
        "\"env\":{\"LR\":\"3e-4\",\"HF_TOKEN\":\"<redacted>\",\"PW\":"
        "{\"secret\":\"db\",\"key\":\"pw\"},\"DB\":\"<redacted>\"},"
        "\"kubernetes\":{\"manifest\":{\"spec\":{\"containers\":[{\"env\":[{\"name\":"
        "\"WANDB_API_KEY\",\"value\":\"<redacted>\"},{\"name\":\"MODE\",\"value\":\"fast\"}]}]}}}}";
    CHECK_STR(buf_cstr(&out), want);
    buf_release(&out);
}

int main(void)
{
    test_names_and_values();
    test_redact();
    return check_done();
}
