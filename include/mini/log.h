/* Levelled logging to stderr: "program: level: message". */
#ifndef MINI_LOG_H
#define MINI_LOG_H

enum mini_log_level { MINI_LOG_ERROR, MINI_LOG_WARN, MINI_LOG_INFO, MINI_LOG_DEBUG };

void mini_log_init(const char *program, enum mini_log_level level);
/* Parses "error", "warn", "info", "debug"; -1 on anything else. */
int mini_log_level_parse(const char *s);
void mini_log(enum mini_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) mini_log(MINI_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) mini_log(MINI_LOG_WARN, __VA_ARGS__)
#define log_info(...) mini_log(MINI_LOG_INFO, __VA_ARGS__)
#define log_debug(...) mini_log(MINI_LOG_DEBUG, __VA_ARGS__)

#endif
