/*
 * banned.h: included before every translation unit (see CMakeLists.txt). It pulls in the libc
 * headers that declare the banned functions, then turns each use into a compile error that names
 * the safe replacement: buf_printf()/snprintf, xstrdup, strtol via parse_int().
 */
#ifndef TY_BANNED_H
#define TY_BANNED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TY_BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) TY_BANNED(strcpy)
#undef strcat
#define strcat(x, y) TY_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) TY_BANNED(strncpy)
#undef sprintf
#define sprintf(...) TY_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) TY_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) TY_BANNED(strtok)
#undef atoi
#define atoi(x) TY_BANNED(atoi)
#undef atol
#define atol(x) TY_BANNED(atol)
#undef gets
#define gets(x) TY_BANNED(gets)

#endif
