/*
 * log: the daemon's own log, one line per record on stderr:
 *   2026-11-22T02:54:37.123456Z info http: listening on 127.0.0.1:8080
 * Lower layers never log (they return errors); loops and the HTTP layer do. Thread-safe.
 */
#ifndef TY_LOG_H
#define TY_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
/* Parses "debug", "info", "warn", "error"; returns -1 when unknown. */
int log_parse_level(const char *name, enum log_level *level);
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_write(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_write(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

#endif
