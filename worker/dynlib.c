/*
 * dynlib: dlopen/dlsym with the process's signal dispositions kept (see dynlib.h for why).
 * No state of its own; the dynamic loader keeps the handles. The worker never calls
 * setlocale(), so dlerror()'s text is the C locale's and "No such file" tells an absent library.
 */
#include "worker/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

void *dynlib_open(const char *what, const char *soname, struct err *err)
{
    struct sigaction saved[NSIG];
    int have[NSIG];
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int s = 1; s < NSIG; s++)
        have[s] = sigaction(s, NULL, &saved[s]) == 0;
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const char *why = h ? NULL : dlerror();
    for (int s = 1; s < NSIG; s++)
        if (have[s] && s != SIGKILL && s != SIGSTOP)
            sigaction(s, &saved[s], NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (h)
        return h;
    if (!why)
        why = "unknown error";
    if (strstr(why, "No such file"))
        err_set(err, ERR_NOT_FOUND, "%s not found (%s)", what, soname);
    else
        err_set(err, ERR_IO, "%s cannot be loaded (%s)", what, why);
    return NULL;
}

void *dynlib_sym(void *lib, const char *soname, const char *name, struct err *err)
{
    dlerror();
    void *p = dlsym(lib, name);
    if (!p)
        err_set(err, ERR_IO, "%s has no %s (older than the headers the worker was built with?)",
                soname, name);
    return p;
}
