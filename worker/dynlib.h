/*
 * dynlib: the libraries the worker loads when it first needs them (dlopen) instead of at start:
 * the CUDA runtime, cuBLAS, NCCL and libfabric. The binary then starts in milliseconds, runs on
 * machines without them, and `run` or a single-rank `train` never maps them.
 *
 * Loading keeps the process's signal handlers: libfabric pulls in libinfinipath (the psm
 * provider), whose constructor installs handlers for SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGILL
 * and SIGABRT that print a backtrace with malloc, which aborted ranks stopped while starting.
 * Signals stay blocked while a library loads and every disposition is put back afterwards, so a
 * signal that arrives meanwhile reaches the worker's own handler once loading is done.
 *
 * Handles are never closed: CUDA and libfabric do not support being unloaded. Call from one
 * thread at a time (the signal mask is the calling thread's).
 */
#ifndef TY_WORKER_DYNLIB_H
#define TY_WORKER_DYNLIB_H

#include "core/err.h"

/* dlopen(soname, RTLD_NOW | RTLD_LOCAL) with the signal dispositions kept. what names the
 * library in messages ("CUDA runtime"). NULL with ERR_NOT_FOUND, "CUDA runtime not found
 * (libcudart.so.13)", when it is not on the search path; ERR_IO with dlerror()'s text when it is
 * but cannot be loaded (a missing dependency, another architecture). */
void *dynlib_open(const char *what, const char *soname, struct err *err);

/* The address of symbol name in lib (opened as soname); NULL with ERR_IO when it is missing,
 * e.g. a library older than the headers the worker was compiled with. */
void *dynlib_sym(void *lib, const char *soname, const char *name, struct err *err);

/* Two-level stringification: the name a macro such as cublasCreate -> cublasCreate_v2 or
 * cudaMemcpy -> cudaMemcpy_ptds expands to, which is the symbol to look up. */
#define DYNLIB_STR_(x) #x
#define DYNLIB_STR(x)  DYNLIB_STR_(x)

#endif
