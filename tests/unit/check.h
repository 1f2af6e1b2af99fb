/*
 * check: the unit-test harness. Each tests/unit/test_*.c is its own program; CHECK records a
 * failure with file and line and goes on; check_done() prints "N passed, N failed" and returns
 * the exit status for main().
 */
#ifndef TY_CHECK_H
#define TY_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_passed++;                                                                        \
        } else {                                                                                   \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);                     \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0) {                             \
            check_passed++;                                                                        \
        } else {                                                                                   \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: FAILED: %s == %s\n  got:      \"%s\"\n  expected: \"%s\"\n",   \
                    __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",                    \
                    check_b_ ? check_b_ : "(null)");                                               \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ == check_b_) {                                                                \
            check_passed++;                                                                        \
        } else {                                                                                   \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: FAILED: %s == %s\n  got:      %lld\n  expected: %lld\n",       \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);                               \
        }                                                                                          \
    } while (0)

static inline int check_done(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
