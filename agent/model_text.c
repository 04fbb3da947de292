/* Finding actions in replies: action_regex on text (PCRE2, as Python's
 * re.findall(action_regex, content, re.DOTALL) with each match stripped),
 * and bash tool calls (mini-swe-agent's parse_toolcall_actions). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/json.h"

pcre2_code *mini_action_regex_compile(const char *pattern, struct mini_err *e)
{
    int errcode;
    PCRE2_SIZE erroff;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_DOTALL;
#ifdef PCRE2_MATCH_INVALID_UTF
    opts |= PCRE2_MATCH_INVALID_UTF;
#endif
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &errcode, &erroff, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        mini_err_set(e, MINI_E_CONFIG, "action_regex: %s at offset %zu", (const char *)msg, (size_t)erroff);
        return NULL;
    }
    return re;
}

/* Decode the code point at s[i] (valid or not); returns its length (>= 1). */
static size_t utf8_at(const unsigned char *s, size_t len, size_t i, uint32_t *cp)
{
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > len) {
        *cp = 0xFFFD;
        return 1;
    }
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i + k] & 0x3F);
    }
    *cp = v;
    return n;
}

/* Python's str.isspace(). */
static bool py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
        (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

void mini_py_strip(const char *str, size_t len, size_t *start, size_t *end)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t a = 0, b = len;
    uint32_t cp;
    while (a < b) {
        size_t n = utf8_at(s, b, a, &cp);
        if (!py_space(cp))
            break;
        a += n;
    }
    while (b > a) {
        size_t p = b - 1;
        while (p > a && (s[p] & 0xC0) == 0x80 && b - p < 4)
            p--;
        size_t n = utf8_at(s, b, p, &cp);
        if (p + n != b || !py_space(cp))
            break;
        b = p;
    }
    *start = a;
    *end = b;
}

int mini_regex_findall(const pcre2_code *re, const char *content, size_t len, cJSON **found, struct mini_err *e)
{
    if (!*found && !(*found = cJSON_CreateArray()))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    uint32_t ncap = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &ncap);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    int count = 0;
    size_t pos = 0;
    while (pos <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)content, len, pos, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof(msg));
            pcre2_match_data_free(md);
            return mini_err_set(e, MINI_E_MODEL, "action_regex: matching failed: %s", (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        size_t gs = ms, ge = me;
        if (ncap >= 1) {
            if ((uint32_t)rc > 1 && ov[2] != PCRE2_UNSET) {
                gs = ov[2];
                ge = ov[3];
            } else {
                gs = ge = 0; /* an unset group is "" in Python */
            }
        }
        size_t a, b;
        mini_py_strip(content + gs, ge - gs, &a, &b);
        _cleanup_free_ char *copy = strndup(content + gs + a, b - a);
        cJSON *s = copy ? cJSON_CreateString(copy) : NULL;
        if (!s) {
            pcre2_match_data_free(md);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        cJSON_AddItemToArray(*found, s);
        count++;
        if (me > ms) {
            pos = me;
        } else {
            if (me >= len)
                break;
            uint32_t cp;
            pos = me + utf8_at((const unsigned char *)content, len, me, &cp);
        }
    }
    pcre2_match_data_free(md);
    return count;
}

/* Python's json.loads error message for a document it rejects.
 *
 * The walk follows CPython's C scanner (Modules/_json.c, as in 3.11):
 * the same checks in the same order, so the first error found and its
 * position are Python's.  Positions count code points, as Python's str
 * indices do. */
struct pyj {
    const uint32_t *s;
    size_t n;
    const char *msg;
    size_t pos;
};

static bool pyj_ws(uint32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool pyj_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static bool pyj_hex(uint32_t c) { return pyj_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

static int pyj_fail(struct pyj *p, const char *msg, size_t pos)
{
    p->msg = msg;
    p->pos = pos;
    return -1;
}

static size_t pyj_skip_ws(const struct pyj *p, size_t i)
{
    while (i < p->n && pyj_ws(p->s[i]))
        i++;
    return i;
}

static bool pyj_word(const struct pyj *p, size_t i, const char *w)
{
    size_t k = strlen(w);
    if (i + k > p->n)
        return false;
    for (size_t j = 0; j < k; j++)
        if (p->s[i + j] != (unsigned char)w[j])
            return false;
    return true;
}

/* The string whose opening quote is at begin; *end past its closing quote. */
static int pyj_string(struct pyj *p, size_t begin, size_t *end)
{
    size_t i = begin + 1;
    for (;;) {
        while (i < p->n && p->s[i] != '"' && p->s[i] != '\\') {
            if (p->s[i] <= 0x1f)
                return pyj_fail(p, "Invalid control character at", i);
            i++;
        }
        if (i >= p->n)
            return pyj_fail(p, "Unterminated string starting at", begin);
        if (p->s[i] == '"') {
            *end = i + 1;
            return 0;
        }
        i++; /* past the backslash */
        if (i >= p->n)
            return pyj_fail(p, "Unterminated string starting at", begin);
        uint32_t c = p->s[i];
        if (c != 'u') {
            if (c == 0 || c > 0x7f || !strchr("\"\\/bfnrt", (int)c))
                return pyj_fail(p, "Invalid \\escape", i - 1);
            i++;
            continue;
        }
        i++; /* the first hex digit */
        size_t e = i + 4;
        if (e >= p->n)
            return pyj_fail(p, "Invalid \\uXXXX escape", i - 1);
        uint32_t v = 0;
        for (; i < e; i++) {
            if (!pyj_hex(p->s[i]))
                return pyj_fail(p, "Invalid \\uXXXX escape", e - 5);
            v = v << 4 | (pyj_digit(p->s[i]) ? p->s[i] - '0' : (p->s[i] | 0x20) - 'a' + 10);
        }
        /* A high surrogate takes a following \uXXXX with it, whatever it is. */
        if (v >= 0xD800 && v <= 0xDBFF && e + 6 < p->n && p->s[i] == '\\' && p->s[i + 1] == 'u') {
            i += 2;
            e += 6;
            for (; i < e; i++)
                if (!pyj_hex(p->s[i]))
                    return pyj_fail(p, "Invalid \\uXXXX escape", e - 5);
        }
    }
}

static int pyj_value(struct pyj *p, size_t i, size_t *end, int depth);

static int pyj_object(struct pyj *p, size_t i, size_t *end, int depth)
{
    i = pyj_skip_ws(p, i);
    if (i >= p->n || p->s[i] != '}') {
        for (;;) {
            if (i >= p->n || p->s[i] != '"')
                return pyj_fail(p, "Expecting property name enclosed in double quotes", i);
            if (pyj_string(p, i, &i) < 0)
                return -1;
            i = pyj_skip_ws(p, i);
            if (i >= p->n || p->s[i] != ':')
                return pyj_fail(p, "Expecting ':' delimiter", i);
            i = pyj_skip_ws(p, i + 1);
            if (pyj_value(p, i, &i, depth + 1) < 0)
                return -1;
            i = pyj_skip_ws(p, i);
            if (i < p->n && p->s[i] == '}')
                break;
            if (i >= p->n || p->s[i] != ',')
                return pyj_fail(p, "Expecting ',' delimiter", i);
            i = pyj_skip_ws(p, i + 1);
        }
    }
    *end = i + 1;
    return 0;
}

static int pyj_array(struct pyj *p, size_t i, size_t *end, int depth)
{
    i = pyj_skip_ws(p, i);
    if (i >= p->n || p->s[i] != ']') {
        for (;;) {
            if (pyj_value(p, i, &i, depth + 1) < 0)
                return -1;
            i = pyj_skip_ws(p, i);
            if (i < p->n && p->s[i] == ']')
                break;
            if (i >= p->n || p->s[i] != ',')
                return pyj_fail(p, "Expecting ',' delimiter", i);
            i = pyj_skip_ws(p, i + 1);
        }
    }
    *end = i + 1;
    return 0;
}

static int pyj_number(struct pyj *p, size_t start, size_t *end)
{
    size_t i = start;
    if (p->s[i] == '-' && ++i >= p->n)
        return pyj_fail(p, "Expecting value", start);
    if (p->s[i] >= '1' && p->s[i] <= '9') {
        while (i < p->n && pyj_digit(p->s[i]))
            i++;
    } else if (p->s[i] == '0') {
        i++;
    } else {
        return pyj_fail(p, "Expecting value", start);
    }
    if (i + 1 < p->n && p->s[i] == '.' && pyj_digit(p->s[i + 1])) {
        i += 2;
        while (i < p->n && pyj_digit(p->s[i]))
            i++;
    }
    if (i + 1 < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        size_t e = i++;
        if (i + 1 < p->n && (p->s[i] == '-' || p->s[i] == '+'))
            i++;
        while (i < p->n && pyj_digit(p->s[i]))
            i++;
        if (!pyj_digit(p->s[i - 1]))
            i = e;
    }
    *end = i;
    return 0;
}

static int pyj_value(struct pyj *p, size_t i, size_t *end, int depth)
{
    if (i >= p->n)
        return pyj_fail(p, "Expecting value", i);
    if (depth > 900) /* Python: RecursionError; mini's parser has a lower limit */
        return pyj_fail(p, NULL, i);
    switch (p->s[i]) {
    case '"': return pyj_string(p, i, end);
    case '{': return pyj_object(p, i + 1, end, depth);
    case '[': return pyj_array(p, i + 1, end, depth);
    case 'n':
    case 't':
    case 'f':
    case 'N':
    case 'I':
    case '-': {
        static const char *const words[] = { "null", "true", "false", "NaN", "Infinity", "-Infinity" };
        for (size_t k = 0; k < sizeof words / sizeof *words; k++)
            if (p->s[i] == (unsigned char)words[k][0] && pyj_word(p, i, words[k])) {
                *end = i + strlen(words[k]);
                return 0;
            }
        break;
    }
    default: break;
    }
    return pyj_number(p, i, end);
}

char *mini_py_json_error(const char *text, size_t len)
{
    _cleanup_free_ uint32_t *cps = malloc((len + 1) * sizeof *cps);
    if (!cps)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; n++)
        i += utf8_at((const unsigned char *)text, len, i, &cps[n]);
    struct pyj p = { .s = cps, .n = n };
    int rc = 0;
    if (n > 0 && cps[0] == 0xFEFF) {
        rc = pyj_fail(&p, "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    } else {
        size_t end;
        rc = pyj_value(&p, pyj_skip_ws(&p, 0), &end, 0);
        if (rc == 0 && (end = pyj_skip_ws(&p, end)) != n)
            rc = pyj_fail(&p, "Extra data", end);
    }
    if (rc == 0 || !p.msg)
        return NULL;
    /* JSONDecodeError: lineno = count of \n before pos + 1; colno = pos - last \n before pos. */
    size_t line = 1, last_nl = 0;
    bool nl = false;
    for (size_t i = 0; i < p.pos && i < n; i++)
        if (cps[i] == '\n') {
            line++;
            last_nl = i;
            nl = true;
        }
    size_t col = nl ? p.pos - last_nl : p.pos + 1;
    char *out = NULL;
    if (asprintf(&out, "%s: line %zu column %zu (char %zu)", p.msg, line, col, p.pos) < 0)
        return NULL;
    return out;
}

int mini_toolcall_actions(const cJSON *tool_calls, cJSON **actions, char **error)
{
    *actions = NULL;
    *error = NULL;
    if (!cJSON_IsArray(tool_calls) || cJSON_GetArraySize(tool_calls) == 0) {
        *error = strdup("No tool calls found in the response. Every response MUST include at least one tool call.");
        return *error ? 1 : -1;
    }
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return -1;
    const cJSON *tc;
    cJSON_ArrayForEach (tc, tool_calls) {
        _cleanup_buf_ struct mini_buf msg = MINI_BUF_INIT;
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(tc, "id");
        cJSON *parsed = NULL;
        const cJSON *argobj = NULL;
        int rc = 0;
        if (cJSON_IsString(args)) {
            /* json.loads' own message where Python rejects the text; mini's
             * where only mini's stricter parser does (NaN, \u0000, ...). */
            size_t alen = strlen(args->valuestring);
            _cleanup_free_ char *pyerr = mini_py_json_error(args->valuestring, alen);
            struct mini_err pe;
            mini_err_clear(&pe);
            if (!pyerr)
                parsed = mini_json_parse(args->valuestring, alen, &pe);
            if (!parsed)
                rc |= mini_buf_printf(&msg, "Error parsing tool call arguments: %s.", pyerr ? pyerr : pe.msg);
            argobj = parsed;
        } else if (cJSON_IsObject(args)) {
            argobj = args; /* some servers send the object itself */
        } else {
            /* json.loads' TypeError for what the arguments would be in Python */
            const char *type = !args || cJSON_IsNull(args)                              ? "NoneType"
                : cJSON_IsBool(args)                                                    ? "bool"
                : cJSON_IsArray(args)                                                   ? "list"
                : cJSON_IsNumber(args) && args->valuedouble == floor(args->valuedouble) ? "int"
                                                                                        : "float";
            rc |= mini_buf_printf(&msg,
                                  "Error parsing tool call arguments: the JSON object must be str, bytes "
                                  "or bytearray, not %s.",
                                  type);
        }
        /* the whole name, as the f-string shows it (a missing one is None) */
        const char *fname = cJSON_IsString(name) ? name->valuestring : NULL;
        if (!fname || strcmp(fname, "bash") != 0)
            rc |= mini_buf_printf(&msg, "Unknown tool '%s'.", fname ? fname : "None");
        const cJSON *cmd = cJSON_IsObject(argobj) ? cJSON_GetObjectItemCaseSensitive(argobj, "command") : NULL;
        if (!cmd)
            rc |= mini_buf_puts(&msg, "Missing 'command' argument in bash tool call.");
        else if (!cJSON_IsString(cmd))
            rc |= mini_buf_puts(&msg, "The 'command' argument of the bash tool call must be a string.");
        if (rc < 0) {
            cJSON_Delete(parsed);
            cJSON_Delete(out);
            return -1;
        }
        if (msg.len) {
            cJSON_Delete(parsed);
            cJSON_Delete(out);
            size_t a, b;
            mini_py_strip(msg.data, msg.len, &a, &b);
            *error = strndup(msg.data + a, b - a);
            return *error ? 1 : -1;
        }
        cJSON *act = cJSON_CreateObject();
        if (!act || !cJSON_AddStringToObject(act, "command", cmd->valuestring) ||
            !(cJSON_IsString(id) ? cJSON_AddStringToObject(act, "tool_call_id", id->valuestring)
                                 : cJSON_AddNullToObject(act, "tool_call_id"))) {
            cJSON_Delete(act);
            cJSON_Delete(parsed);
            cJSON_Delete(out);
            return -1;
        }
        cJSON_AddItemToArray(out, act);
        cJSON_Delete(parsed);
    }
    *actions = out;
    return 0;
}

int mini_message_actions(struct mini_model *m, const cJSON *msg, cJSON **actions, char **error, struct mini_err *e)
{
    *actions = NULL;
    *error = NULL;
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(msg, "extra");
    const cJSON *saved = cJSON_GetObjectItemCaseSensitive(extra, "actions");
    if (cJSON_IsArray(saved)) {
        const cJSON *a;
        cJSON_ArrayForEach (a, saved) {
            if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "command")))
                return mini_err_set(e, MINI_E_CONFIG, "extra.actions: every action needs a string \"command\"");
        }
        if (!(*actions = cJSON_Duplicate(saved, true)))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return 0;
    }
    const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    /* In tool-call mode a reply without tool calls is "No tool calls found ...",
     * as parse_toolcall_actions says; replay parses whatever the message has. */
    bool toolcall_mode = !m->text_mode && m->kind != MINI_KIND_REPLAY;
    if (toolcall_mode || (cJSON_IsArray(tcs) && cJSON_GetArraySize(tcs) > 0)) {
        int rc = mini_toolcall_actions(tcs, actions, error);
        if (rc < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return rc;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    const char *text = cJSON_IsString(content) ? content->valuestring : "";
    cJSON *found = NULL;
    int n = mini_regex_findall(m->action_re, text, strlen(text), &found, e);
    if (n < 0) {
        cJSON_Delete(found);
        return -1;
    }
    if (n != 1) {
        cJSON_Delete(found);
        char buf[64];
        snprintf(buf, sizeof(buf), "Expected exactly 1 action, found %d.", n);
        *error = strdup(buf);
        return *error ? 1 : mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON *out = cJSON_CreateArray(), *act = cJSON_CreateObject();
    if (!out || !act || !cJSON_AddStringToObject(act, "command", cJSON_GetArrayItem(found, 0)->valuestring)) {
        cJSON_Delete(out);
        cJSON_Delete(act);
        cJSON_Delete(found);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON_AddItemToArray(out, act);
    cJSON_Delete(found);
    *actions = out;
    return 0;
}
