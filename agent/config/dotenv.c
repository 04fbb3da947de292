/* .env files, as python-dotenv reads them (see dotenv.h). */
#include "dotenv.h"
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/utf8.h"

static int nomem(struct mini_err *e) { return mini_err_set(e, MINI_E_NOMEM, "out of memory"); }

/* ---- a small string -> pointer hash index ---- */

struct sidx_ent {
    const char *key;
    void *val;
};
struct sidx {
    struct sidx_ent *slots;
    size_t cap, n;
};

static size_t sidx_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

static struct sidx_ent *sidx_slot(struct sidx *x, const char *key)
{
    size_t mask = x->cap - 1;
    for (size_t i = sidx_hash(key) & mask;; i = (i + 1) & mask)
        if (!x->slots[i].key || !strcmp(x->slots[i].key, key))
            return &x->slots[i];
}

static void *sidx_get(struct sidx *x, const char *key)
{
    if (!x->cap)
        return NULL;
    struct sidx_ent *s = sidx_slot(x, key);
    return s->key ? s->val : NULL;
}

/* Insert or update; the key pointer must live as long as the index. */
static int sidx_put(struct sidx *x, const char *key, void *val)
{
    if ((x->n + 1) * 4 > x->cap * 3) {
        size_t ncap = x->cap ? x->cap * 2 : 16;
        struct sidx_ent *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        struct sidx old = *x;
        x->slots = ns;
        x->cap = ncap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].key)
                *sidx_slot(x, old.slots[i].key) = old.slots[i];
        free(old.slots);
    }
    struct sidx_ent *s = sidx_slot(x, key);
    if (!s->key)
        x->n++;
    s->key = key;
    s->val = val;
    return 0;
}

static void sidx_freep(struct sidx *x)
{
    free(x->slots);
    x->slots = NULL;
    x->cap = x->n = 0;
}

/* ---- the syntax ---- */

/* Length of the whitespace character (Python's \s: str.isspace) at s[i],
 * or 0. */
static size_t ws_len(const char *s, size_t n, size_t i)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[i];
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f))
        return 1;
    if (c == 0xc2 && i + 1 < n && (u[i + 1] == 0x85 || u[i + 1] == 0xa0))
        return 2;
    if (i + 2 >= n)
        return 0;
    if (c == 0xe1 && u[i + 1] == 0x9a && u[i + 2] == 0x80)
        return 3;
    if (c == 0xe2 && u[i + 1] == 0x80 &&
        ((u[i + 2] >= 0x80 && u[i + 2] <= 0x8a) || u[i + 2] == 0xa8 || u[i + 2] == 0xa9 || u[i + 2] == 0xaf))
        return 3;
    if (c == 0xe2 && u[i + 1] == 0x81 && u[i + 2] == 0x9f)
        return 3;
    if (c == 0xe3 && u[i + 1] == 0x80 && u[i + 2] == 0x80)
        return 3;
    return 0;
}

/* [^\S\r\n]: whitespace other than a line break. */
static size_t hws_len(const char *s, size_t n, size_t i) { return s[i] == '\n' || s[i] == '\r' ? 0 : ws_len(s, n, i); }

struct dreader {
    const char *s;
    size_t n, pos;
};

static void skip_hws(struct dreader *r)
{
    size_t l;
    while (r->pos < r->n && (l = hws_len(r->s, r->n, r->pos)))
        r->pos += l;
}

/* A quoted value's body: '((?:\\'|[^'])*)' (or with "), including the way
 * the regex backtracks when no unescaped closing quote follows: then the
 * quote of the last \' closes it.  false: no match. */
static bool scan_quoted(struct dreader *r, char q, size_t *start, size_t *end)
{
    size_t i = r->pos + 1, last_pair = SIZE_MAX;
    while (i < r->n) {
        if (r->s[i] == '\\' && i + 1 < r->n && r->s[i + 1] == q) {
            last_pair = i;
            i += 2;
        } else if (r->s[i] != q) {
            i++;
        } else {
            break;
        }
    }
    *start = r->pos + 1;
    if (i < r->n) {
        *end = i;
        r->pos = i + 1;
        return true;
    }
    if (last_pair == SIZE_MAX)
        return false;
    *end = last_pair + 1;
    r->pos = last_pair + 2;
    return true;
}

static int decode_escapes(struct mini_buf *out, const char *s, size_t n, bool dq)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\\' && i + 1 < n) {
            char nx = s[i + 1];
            const char *dmap = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
            const char *hit = NULL;
            for (const char *m = dmap; *m; m += 2)
                if (*m == nx && (dq || nx == '\\' || nx == '\'')) {
                    hit = m;
                    break;
                }
            if (hit) {
                ch = hit[1];
                i++;
            }
        }
        if (mini_buf_putc(out, ch) < 0)
            return -1;
    }
    return 0;
}

enum { DB_END, DB_OK, DB_SKIP };

/* One binding (python-dotenv's parse_binding).  DB_OK with *has_key and
 * *has_val telling what was found; DB_SKIP for a line that does not parse;
 * DB_END at the end; -1 when out of memory. */
static int dotenv_binding(struct dreader *r, struct mini_buf *key, struct mini_buf *val, bool *has_key, bool *has_val)
{
    const char *s = r->s;
    size_t n = r->n, l;
    mini_buf_reset(key);
    mini_buf_reset(val);
    *has_key = *has_val = false;
    while (r->pos < n && (l = ws_len(s, n, r->pos)))
        r->pos += l;
    if (r->pos >= n)
        return DB_END;
    if (n - r->pos > 6 && !memcmp(s + r->pos, "export", 6) && hws_len(s, n, r->pos + 6)) {
        r->pos += 6;
        skip_hws(r);
    }
    if (s[r->pos] == '#') {
        /* a comment: no key */
    } else if (s[r->pos] == '\'') {
        const char *q = memchr(s + r->pos + 1, '\'', n - r->pos - 1);
        if (!q || q == s + r->pos + 1)
            goto skip;
        if (mini_buf_append(key, s + r->pos + 1, (size_t)(q - s) - r->pos - 1) < 0)
            return -1;
        r->pos = (size_t)(q - s) + 1;
        *has_key = true;
    } else {
        size_t start = r->pos;
        while (r->pos < n && s[r->pos] != '=' && s[r->pos] != '#' && !ws_len(s, n, r->pos))
            r->pos++;
        if (r->pos == start)
            goto skip;
        if (mini_buf_append(key, s + start, r->pos - start) < 0)
            return -1;
        *has_key = true;
    }
    skip_hws(r);
    if (r->pos < n && s[r->pos] == '=') {
        r->pos++;
        skip_hws(r);
        *has_val = true;
        char c = r->pos < n ? s[r->pos] : '\0';
        if (c == '\'' || c == '"') {
            size_t b, en;
            if (!scan_quoted(r, c, &b, &en))
                goto skip;
            if (decode_escapes(val, s + b, en - b, c == '"') < 0)
                return -1;
        } else if (r->pos < n && c != '\n' && c != '\r') {
            size_t start = r->pos;
            while (r->pos < n && s[r->pos] != '\n' && s[r->pos] != '\r')
                r->pos++;
            size_t end = r->pos;
            /* re.sub(r"\s+#.*", "", part): cut at the first run of
             * whitespace followed by '#'. */
            for (size_t i = start; i < end;) {
                size_t w = ws_len(s, end, i);
                if (!w) {
                    i++;
                    continue;
                }
                size_t j = i;
                while (j < end && (w = ws_len(s, end, j)))
                    j += w;
                if (j < end && s[j] == '#') {
                    end = i;
                    break;
                }
                i = j;
            }
            /* .rstrip(): trailing whitespace, multi-byte ones included. */
            for (bool more = true; more && end > start;) {
                more = false;
                for (size_t k = 1; k <= 3 && k <= end - start; k++)
                    if (ws_len(s, end, end - k) == k) {
                        end -= k;
                        more = true;
                        break;
                    }
            }
            if (mini_buf_append(val, s + start, end - start) < 0)
                return -1;
        }
    }
    { /* an optional comment, then the end of the line */
        size_t save = r->pos;
        skip_hws(r);
        if (r->pos < n && s[r->pos] == '#')
            while (r->pos < n && s[r->pos] != '\n' && s[r->pos] != '\r')
                r->pos++;
        else
            r->pos = save;
    }
    skip_hws(r);
    if (r->pos < n) {
        if (s[r->pos] == '\r' && r->pos + 1 < n && s[r->pos + 1] == '\n')
            r->pos += 2;
        else if (s[r->pos] == '\n' || s[r->pos] == '\r')
            r->pos++;
        else
            goto skip;
    }
    if (mini_buf_reserve(key, 0) < 0 || mini_buf_reserve(val, 0) < 0)
        return -1;
    return DB_OK;
skip:
    while (r->pos < n && s[r->pos] != '\n' && s[r->pos] != '\r')
        r->pos++;
    if (r->pos < n)
        r->pos++;
    *has_key = *has_val = false;
    return DB_SKIP;
}

/* ${NAME} and ${NAME:-default}, resolved against the process environment
 * first, then the bindings so far (python-dotenv with override=False). */
static int interpolate(struct mini_buf *out, const char *v, size_t n, struct sidx *seen)
{
    size_t i = 0, lit = 0;
    while (i + 1 < n) {
        if (v[i] != '$' || v[i + 1] != '{') {
            i++;
            continue;
        }
        size_t j = i + 2;
        while (j < n && v[j] != '}' && v[j] != ':')
            j++;
        size_t name_end = j, def_start = 0, def_end = 0;
        bool has_def = false;
        if (j + 1 < n && v[j] == ':' && v[j + 1] == '-') {
            def_start = j + 2;
            for (j = def_start; j < n && v[j] != '}'; j++)
                ;
            def_end = j;
            has_def = true;
        }
        if (j >= n || v[j] != '}') {
            i++;
            continue;
        }
        _cleanup_free_ char *name = strndup(v + i + 2, name_end - i - 2);
        if (!name || mini_buf_append(out, v + lit, i - lit) < 0)
            return -1;
        const char *env = name[0] && !strchr(name, '=') ? getenv(name) : NULL;
        cJSON *prev = env ? NULL : sidx_get(seen, name);
        if (env) {
            if (mini_buf_puts(out, env) < 0)
                return -1;
        } else if (prev) {
            if (cJSON_IsString(prev) && mini_buf_puts(out, prev->valuestring) < 0)
                return -1;
        } else if (has_def && mini_buf_append(out, v + def_start, def_end - def_start) < 0) {
            return -1;
        }
        i = lit = j + 1;
    }
    if (mini_buf_append(out, v + lit, n - lit) < 0 || mini_buf_reserve(out, 0) < 0)
        return -1;
    return 0;
}

cJSON *mini_config_parse_dotenv(const char *text, size_t len, size_t *skipped, struct mini_err *e)
{
    if (skipped)
        *skipped = 0;
    if (memchr(text, '\0', len))
        return mini_err_set(e, MINI_E_CONFIG, "contains a NUL byte"), NULL;
    if (!mini_utf8_valid(text, len))
        return mini_err_set(e, MINI_E_CONFIG, "not valid UTF-8"), NULL;
    /* Python reads text files with universal newlines. */
    _cleanup_buf_ struct mini_buf norm = MINI_BUF_INIT;
    if (mini_buf_reserve(&norm, len) < 0)
        return nomem(e), NULL;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\r') {
            if (i + 1 < len && text[i + 1] == '\n')
                i++;
            mini_buf_putc(&norm, '\n');
        } else {
            mini_buf_putc(&norm, text[i]);
        }
    }
    _cleanup_cjson_ cJSON *out = cJSON_CreateObject();
    _cleanup_buf_ struct mini_buf key = MINI_BUF_INIT, val = MINI_BUF_INIT, res = MINI_BUF_INIT;
    _cleanup_(sidx_freep) struct sidx seen = { 0 };
    struct dreader r = { norm.data ? norm.data : "", norm.len, 0 };
    if (!out)
        return nomem(e), NULL;
    for (;;) {
        bool has_key, has_val;
        int rc = dotenv_binding(&r, &key, &val, &has_key, &has_val);
        if (rc < 0)
            return nomem(e), NULL;
        if (rc == DB_END)
            break;
        if (rc == DB_SKIP) {
            if (skipped)
                (*skipped)++;
            continue;
        }
        if (!has_key)
            continue;
        cJSON *item;
        if (has_val) {
            mini_buf_reset(&res);
            if (interpolate(&res, val.data ? val.data : "", val.len, &seen) < 0)
                return nomem(e), NULL;
            item = cJSON_CreateString(res.data);
        } else {
            item = cJSON_CreateNull();
        }
        if (!item)
            return nomem(e), NULL;
        cJSON *prev = sidx_get(&seen, key.data);
        if (prev) {
            item->string = prev->string;
            prev->string = NULL;
            cJSON_ReplaceItemViaPointer(out, prev, item);
            if (sidx_put(&seen, item->string, item) < 0)
                return nomem(e), NULL;
        } else {
            if (!cJSON_AddItemToObject(out, key.data, item) || !item->string) {
                cJSON_Delete(item);
                return nomem(e), NULL;
            }
            if (sidx_put(&seen, item->string, item) < 0)
                return nomem(e), NULL;
        }
    }
    return TAKE_PTR(out);
}

static bool dotenv_disabled(void)
{
    const char *v = getenv("PYTHON_DOTENV_DISABLED");
    if (!v)
        return false;
    static const char *const truthy[] = { "1", "true", "t", "yes", "y" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(truthy); i++)
        if (!strcasecmp(v, truthy[i]))
            return true;
    return false;
}

int mini_config_load_dotenv(const char *path, struct mini_err *e)
{
    if (dotenv_disabled())
        return 0;
    struct stat st;
    if (stat(path, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)))
        return 0;
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (mini_read_file(path, &text, MINI_CONFIG_MAX_BYTES, e) < 0) {
        if (e)
            e->code = MINI_E_CONFIG;
        return -1;
    }
    _cleanup_cjson_ cJSON *vars = mini_config_parse_dotenv(text.data ? text.data : "", text.len, NULL, e);
    if (!vars)
        return mini_err_prefix(e, "%s", path);
    /* Check every name before setting any, so a bad file changes nothing. */
    cJSON *it;
    cJSON_ArrayForEach (it, vars) {
        if (strchr(it->string, '='))
            return mini_err_set(e, MINI_E_CONFIG, "%s: \"%.*s\" is not a valid variable name", path,
                                MINI_JSON_SHOW(it->string));
    }
    int set = 0;
    cJSON_ArrayForEach (it, vars) {
        if (!cJSON_IsString(it) || getenv(it->string))
            continue;
        if (setenv(it->string, it->valuestring, 1) < 0)
            return mini_err_sys(e, MINI_E_CONFIG, errno, "%s: setting %.*s", path, MINI_JSON_SHOW(it->string));
        set++;
    }
    return set;
}

int mini_config_dotenv_edit(const char *text, size_t len, const char *key, const char *value, struct mini_buf *out,
                            bool *found, struct mini_err *e)
{
    *found = false;
    if (memchr(text, '\0', len))
        return mini_err_set(e, MINI_E_CONFIG, "contains a NUL byte");
    if (!mini_utf8_valid(text, len))
        return mini_err_set(e, MINI_E_CONFIG, "not valid UTF-8");
    _cleanup_buf_ struct mini_buf norm = MINI_BUF_INIT, line = MINI_BUF_INIT, k = MINI_BUF_INIT, v = MINI_BUF_INIT;
    for (size_t i = 0; i < len; i++) {
        int rc;
        if (text[i] == '\r') {
            if (i + 1 < len && text[i + 1] == '\n')
                i++;
            rc = mini_buf_putc(&norm, '\n');
        } else {
            rc = mini_buf_putc(&norm, text[i]);
        }
        if (rc < 0)
            return nomem(e);
    }
    if (value) { /* "{}='{}'\n".format(key, value.replace("'", "\\'")) */
        if (mini_buf_printf(&line, "%s='", key) < 0)
            return nomem(e);
        for (const char *c = value; *c; c++)
            if ((*c == '\'' && mini_buf_puts(&line, "\\'") < 0) || (*c != '\'' && mini_buf_putc(&line, *c) < 0))
                return nomem(e);
        if (mini_buf_puts(&line, "'\n") < 0)
            return nomem(e);
    }
    struct dreader r = { norm.data ? norm.data : "", norm.len, 0 };
    bool missing_newline = false;
    for (;;) {
        size_t start = r.pos;
        bool has_key, has_val;
        int rc = r.pos < r.n ? dotenv_binding(&r, &k, &v, &has_key, &has_val) : DB_END;
        if (rc < 0)
            return nomem(e);
        if (rc == DB_END)
            r.pos = r.n; /* trailing whitespace: a binding without a key */
        if (rc == DB_END && start == r.n)
            break;
        const char *orig = r.s + start;
        size_t olen = r.pos - start;
        if (rc == DB_OK && has_key && !strcmp(k.data, key)) {
            *found = true;
            if (value && mini_buf_append(out, line.data, line.len) < 0)
                return nomem(e);
        } else {
            if (mini_buf_append(out, orig, olen) < 0)
                return nomem(e);
            missing_newline = olen == 0 || orig[olen - 1] != '\n';
        }
        if (rc == DB_END)
            break;
    }
    if (value && !*found &&
        ((missing_newline && mini_buf_putc(out, '\n') < 0) || mini_buf_append(out, line.data, line.len) < 0))
        return nomem(e);
    if (mini_buf_reserve(out, 0) < 0)
        return nomem(e);
    out->data[out->len] = '\0';
    return 0;
}
