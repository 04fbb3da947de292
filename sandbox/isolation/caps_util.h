/* Helpers shared by the capability probe (caps_probe.c), the assessment
 * (caps_assess.c) and cgroup discovery (cgroup.c): bounded text buffers
 * that truncate silently and are always NUL-terminated, small /proc and
 * sysfs files, and JSON built with out-of-memory tracking.  Private to
 * sandbox/isolation/. */
#ifndef MINI_SANDBOX_CAPS_UTIL_H
#define MINI_SANDBOX_CAPS_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/profile.h"

/* Bounded append to a NUL-terminated buffer; truncates silently. */
static inline void appendf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void appendf(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strnlen(buf, size);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* Format into a buffer, truncating silently (always NUL-terminated). */
static inline void setf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void setf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* Copy with truncation; always NUL-terminates. */
static inline void copy_str(char *dst, size_t size, const char *src) { snprintf(dst, size, "%s", src); }

/* Read a small file into buf (NUL-terminated, trailing newline removed).
 * Returns the length, or -1 with errno. */
static inline ssize_t read_small(const char *path, char *buf, size_t size)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    ssize_t n = mini_read_full(fd, buf, size - 1);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return n;
}

static inline bool word_in(const char *list, const char *word, const char *seps)
{
    size_t wl = strlen(word);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, seps);
        if (n == wl && strncmp(p, word, wl) == 0)
            return true;
        p += n;
        if (*p)
            p++;
    }
    return false;
}

static inline bool path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* JSON: every jadd() failure sets oom; the caller checks it once. */
struct jb {
    bool oom;
};

static inline cJSON *jadd(struct jb *j, cJSON *parent, const char *key, cJSON *item)
{
    if (!item) {
        j->oom = true;
        return NULL;
    }
    if (!parent) {
        cJSON_Delete(item);
        j->oom = true;
        return NULL;
    }
    if (key ? !cJSON_AddItemToObject(parent, key, item) : !cJSON_AddItemToArray(parent, item)) {
        cJSON_Delete(item);
        j->oom = true;
        return NULL;
    }
    return item;
}

static inline cJSON *jerr(int err) { return err ? cJSON_CreateString(strerror(err)) : cJSON_CreateNull(); }

static inline cJSON *jstr_or_null(const char *s) { return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

static inline cJSON *jnum_or_null(long v) { return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull(); }

static inline cJSON *features_json(struct jb *j, unsigned bits)
{
    cJSON *a = cJSON_CreateArray();
    for (unsigned i = 0; a && i < MINI_FEAT_COUNT; i++)
        if (bits & (1u << i))
            jadd(j, a, NULL, cJSON_CreateString(mini_feature_name(i)));
    return a;
}

static inline cJSON *words_json(struct jb *j, const char *words)
{
    cJSON *a = cJSON_CreateArray();
    for (const char *p = words; a && *p;) {
        size_t n = strcspn(p, " ");
        if (n) {
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)(n < 63 ? n : 63), p);
            jadd(j, a, NULL, cJSON_CreateString(w));
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    return a;
}

#endif
