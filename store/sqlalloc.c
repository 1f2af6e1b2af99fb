/*
 * sqlalloc: SQLite's memory allocator, malloc with a lock-free byte count. SQLite's own
 * statistics take one process-wide mutex around every allocation and free, which every thread
 * using the database contended for; the count keeps trainyard_sqlite_memory_bytes without it.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "store/internal.h"

static _Atomic int64_t used;
static bool installed;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *mem_malloc(int n)
{
    void *p = malloc((size_t)n);
    if (p)
        atomic_fetch_add_explicit(&used, (int64_t)malloc_usable_size(p), memory_order_relaxed);
    return p;
}

static void mem_free(void *p)
{
    atomic_fetch_sub_explicit(&used, (int64_t)malloc_usable_size(p), memory_order_relaxed);
    free(p);
}

static void *mem_realloc(void *p, int n)
{
    int64_t before = (int64_t)malloc_usable_size(p);
    void *q = realloc(p, (size_t)n);
    if (q)
        atomic_fetch_add_explicit(&used, (int64_t)malloc_usable_size(q) - before,
                                  memory_order_relaxed);
    return q;
}

static int mem_size(void *p)
{
    return (int)malloc_usable_size(p);
}

static int mem_roundup(int n)
{
    return (n + 15) & ~15;
}

static int mem_init(void *arg)
{
    (void)arg;
    return SQLITE_OK;
}

static void mem_shutdown(void *arg)
{
    (void)arg;
}

static void install(void)
{
    static const sqlite3_mem_methods methods = { mem_malloc,  mem_free, mem_realloc,  mem_size,
                                                 mem_roundup, mem_init, mem_shutdown, NULL };
    /* Refused (SQLITE_MISUSE) once SQLite is initialized: then its own statistics stay. */
    installed = sqlite3_config(SQLITE_CONFIG_MALLOC, &methods) == SQLITE_OK &&
                sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
}

void sqlalloc_install(void)
{
    pthread_once(&once, install);
}

uint64_t sqlalloc_used(void)
{
    pthread_once(&once, install); /* orders the read of installed after its write */
    int64_t n =
        installed ? atomic_load_explicit(&used, memory_order_relaxed) : sqlite3_memory_used();
    return n > 0 ? (uint64_t)n : 0;
}
