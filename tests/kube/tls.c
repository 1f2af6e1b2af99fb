/*
 * tls: runs `openssl` three times in a private temporary directory (EC P-256 keys, one day of
 * validity), reads the PEM files back and removes the directory. Not thread-safe; called once
 * by main() before serving.
 */
#include "tests/kube/tls.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/xalloc.h"

static int run(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static char *slurp(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_detach(&b, NULL);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int tls_generate(struct tls_material *t, struct err *err)
{
    memset(t, 0, sizeof(*t));
    char dir[] = "/tmp/ks-tls-XXXXXX";
    if (!mkdtemp(dir))
        return err_set(err, ERR_IO, "cannot create a temporary directory");
    char ca_key[300], ca_crt[300], key[300], csr[300], crt[300], ext[300];
    snprintf(ca_key, sizeof(ca_key), "%s/ca.key", dir);
    snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    snprintf(csr, sizeof(csr), "%s/server.csr", dir);
    snprintf(crt, sizeof(crt), "%s/server.crt", dir);
    snprintf(ext, sizeof(ext), "%s/ext.cnf", dir);
    FILE *f = fopen(ext, "w");
    if (f) {
        fputs("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
              "keyUsage=critical,digitalSignature,keyEncipherment\n",
              f);
        fclose(f);
    }
    char *const mk_ca[] = { "openssl",
                            "req",
                            "-x509",
                            "-newkey",
                            "ec",
                            "-pkeyopt",
                            "ec_paramgen_curve:prime256v1",
                            "-nodes",
                            "-days",
                            "1",
                            "-subj",
                            "/CN=testserver-ca",
                            "-keyout",
                            ca_key,
                            "-out",
                            ca_crt,
                            NULL };
    char *const mk_csr[] = { "openssl",
                             "req",
                             "-new",
                             "-newkey",
                             "ec",
                             "-pkeyopt",
                             "ec_paramgen_curve:prime256v1",
                             "-nodes",
                             "-subj",
                             "/CN=kube-apiserver",
                             "-keyout",
                             key,
                             "-out",
                             csr,
                             NULL };
    char *const sign[] = { "openssl", "x509", "-req",     "-in",  csr,
                           "-CA",     ca_crt, "-CAkey",   ca_key, "-CAcreateserial",
                           "-days",   "1",    "-extfile", ext,    "-out",
                           crt,       NULL };
    int rc = -1;
    if (run(mk_ca) < 0 || run(mk_csr) < 0 || run(sign) < 0) {
        err_set(err, ERR_IO, "openssl failed to make the test certificates");
        goto out;
    }
    t->ca_pem = slurp(dir, "ca.crt");
    t->cert_pem = slurp(dir, "server.crt");
    t->key_pem = slurp(dir, "server.key");
    if (!t->ca_pem || !t->cert_pem || !t->key_pem) {
        tls_release(t);
        err_set(err, ERR_IO, "cannot read the test certificates");
        goto out;
    }
    rc = 0;
out:
    remove_dir(dir);
    return rc;
}

void tls_release(struct tls_material *t)
{
    free(t->ca_pem);
    free(t->cert_pem);
    free(t->key_pem);
    memset(t, 0, sizeof(*t));
}
