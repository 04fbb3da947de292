/* The profile schema as a table (profile_schema.c): one entry per key,
 * which drives parsing, validation, defaults, JSON output, copies, request
 * overrides and the key reference in docs/profiles.md (profile.c walks it;
 * tests/unit/profile_docs.c writes the reference).  Adding a key is one entry here
 * (and a field in struct mini_profile), plus its use.
 *
 * Shared by profile.c, profile_schema.c and tests/unit/profile_docs.c only. */
#ifndef MINI_PROFILE_SCHEMA_H
#define MINI_PROFILE_SCHEMA_H

#include "mini/profile.h"

#include <stdio.h>

#define MIB (1024u * 1024u)
#define KP_MAX 256          /* key paths in messages */
#define MB_MAX (1ull << 40) /* scaled by MiB, stays far below 2^64 */

/* A key's type, which says how the generic code treats it. */
enum pkey_type {
    PK_SECTION, /* an object whose keys are the entries "PATH.KEY" */
    PK_BOOL,    /* bool at off */
    PK_FLAG,    /* a bool as `bit` of the unsigned at off */
    PK_UINT,    /* uint64_t at off: the JSON integer, in [min, max], times unit */
    PK_NUMBER,  /* double at off: a JSON number in (0, dmax] */
    PK_STRING,  /* char * at off (NULL: absent from the output) */
    PK_ENUM,    /* int at off: one of names (the output writes a number not in it) */
    PK_STRV,    /* char ** at off, its count (size_t) at off_n: an array of items, each made by `item` */
    PK_CUSTOM,  /* parse and emit callbacks; size bytes at off copied as they are */
    PK_ITEMKEY, /* a key of the objects in a list ("filesystem.binds[].path"): known, checked by its owner */
};

/* What a request's overrides may do with a key (mini_profile_apply_overrides). */
enum pkey_override {
    OV_NO,            /* "cannot be overridden" */
    OV_LOWER,         /* PK_UINT, PK_NUMBER: a value not looser (for PK_UINT, 0 is unlimited) */
    OV_TRUE_TO_FALSE, /* PK_BOOL: true -> false only */
    OV_APPEND,        /* PK_STRV: items appended, those already there skipped */
    OV_CUSTOM,        /* the entry's `override` callback */
    OV_SECTION_PARSE, /* PK_SECTION: parsed as a whole, then each key compared (OV_LOWER) */
    OV_SECTION_KEYS,  /* PK_SECTION: key by key, each by its own rule */
};

/* Flags. */
#define PKF_ABSENT 1u     /* parse (a PK_CUSTOM or `parse` callback) and `check` run when the key is absent too */
#define PKF_OV_SUGGEST 2u /* in overrides, an unknown key's suggestion is any key of this section */
#define PKF_OUT_EMPTY 4u  /* PK_STRING: a NULL value is written as "" */

struct pctx {
    const char *origin;  /* message prefix (file name), or NULL */
    enum mini_errc code; /* profile_invalid, or bad_request for overrides */
    struct mini_err *e;
    const cJSON *top; /* the whole profile object being parsed, or NULL */
};

struct mini_prof_pkey_name {
    const char *name;
    int value;
};

struct pkey {
    const char *path; /* "limits.memory_mb"; a top-level key has no dot */
    enum pkey_type type;
    size_t off;                              /* in struct mini_profile */
    size_t size;                             /* PK_CUSTOM: bytes at off copied by mini_profile_dup */
    size_t off_n;                            /* PK_STRV: the count */
    unsigned flags;                          /* PKF_* */
    unsigned bit;                            /* PK_FLAG */
    uint64_t unit, min, max;                 /* PK_UINT */
    double dmax;                             /* PK_NUMBER */
    const struct mini_prof_pkey_name *names; /* PK_ENUM */
    size_t n_names;
    /* the default, in the JSON's units (PK_STRV: a NULL-terminated list) */
    bool dflt_bool;
    uint64_t dflt_uint;
    double dflt_number;
    int dflt_int;
    const char *dflt_str;
    const char *const *dflt_strv;
    /* PK_STRV: what the items are ("syscall names"), and one item from its
     * JSON value (a malloc'd string, or NULL with the error set) */
    const char *items;
    char *(*item)(const struct pctx *c, const cJSON *it, const char *path);
    /* Callbacks; each optional except where the type needs it. */
    int (*parse)(const struct pctx *c, const cJSON *v, const char *path, struct mini_profile *p);
    int (*check)(const struct pctx *c, struct mini_profile *p); /* after the key (or section) is read */
    bool (*emit)(cJSON *parent, const char *key, const struct mini_profile *p);
    bool (*shown)(const struct mini_profile *p); /* whether the output has the key */
    int (*fill)(struct mini_profile *p);         /* the default (-1: no memory) */
    int (*dup)(struct mini_profile *d, const struct mini_profile *p);
    void (*release)(struct mini_profile *p);
    enum pkey_override ov;
    int (*override)(const struct pctx *c, const cJSON *v, const char *path, struct mini_profile *p);
    /* the key reference (docs/profiles.md) */
    const char *type_doc; /* when not derived from the type */
    const char *dflt_doc; /* when not derived from the default */
    const char *doc;
};

extern const struct pkey mini_profile_keys[];
extern const size_t mini_profile_n_keys;

/* The last component of an entry's path ("memory_mb"). */
const char *mini_prof_pkey_name(const struct pkey *k);
/* Whether k is a key of the object at `parent` ("" for the top). */
bool mini_prof_pkey_in(const struct pkey *k, const char *parent);

/* Helpers profile.c defines for the callbacks. */
int mini_prof_pfail(const struct pctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int mini_prof_pnomem(const struct pctx *c);
int mini_prof_ploosens(const struct pctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *mini_prof_kp(char *buf, const char *parent, const char *key);
const char *mini_prof_kpi(char *buf, const char *parent, size_t i);
int mini_prof_check_keys(const struct pctx *c, const cJSON *v, const char *path, const char *parent);
int mini_prof_get_bool(const struct pctx *c, const cJSON *obj, const char *path, const char *key, bool *out);
const char *mini_prof_get_str(const struct pctx *c, const cJSON *obj, const char *path, const char *key, bool *bad);
int mini_prof_get_uint(const struct pctx *c, const cJSON *obj, const char *path, const char *key, uint64_t min,
                       uint64_t max, uint64_t *out);
char *mini_prof_get_path(const struct pctx *c, const cJSON *v, const char *path, bool allow_root);
int mini_prof_push_str(char ***v, size_t *n, const char *s);
void mini_prof_free_strv(char ***v, size_t *n);
bool mini_prof_strv_has(char **v, size_t n, const char *s);
bool mini_prof_add_strv(cJSON *obj, const char *key, char **v, size_t n);
bool mini_prof_json_push(cJSON *arr, cJSON *item);

/* The key reference of section `section` ("" for the top level) as a
 * Markdown table, from the table. */
void mini_profile_keys_markdown(FILE *out, const char *section);

#endif
