/* render_template TEMPLATE_FILE [VARS_JSON_FILE]: render a template with
 * mini's engine and write the result to stdout (test helper for
 * tests/template/diff.py).  Exit 1 with the error on stderr.
 *
 * Numbers in the variables are handed over as raw items with their JSON
 * text, so that 3.0 stays a float as in Python (see template.h). */
#include "template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"
#include "mini/io.h"

/* Numbers of the JSON text, in document order, as they are written. */
static size_t number_texts(const char *p, size_t n, char ***out)
{
    size_t count = 0, cap = 0;
    char **v = NULL;
    for (size_t i = 0; i < n;) {
        if (p[i] == '"') {
            for (i++; i < n && p[i] != '"'; i++)
                if (p[i] == '\\')
                    i++;
            i++;
        } else if (p[i] == '-' || (p[i] >= '0' && p[i] <= '9')) {
            size_t j = i;
            while (j < n && p[j] && strchr("0123456789+-.eE", p[j]))
                j++;
            if (count == cap) {
                cap = cap ? cap * 2 : 16;
                char **nv = realloc(v, cap * sizeof *nv);
                if (!nv)
                    abort();
                v = nv;
            }
            v[count] = strndup(p + i, j - i);
            if (!v[count++])
                abort();
            i = j;
        } else {
            i++;
        }
    }
    *out = v;
    return count;
}

/* Turn every number item into a raw item with its text (tree order is
 * document order). */
static void numbers_to_raw(cJSON *item, char **texts, size_t count, size_t *next)
{
    for (; item; item = item->next) {
        if (cJSON_IsNumber(item) && *next < count) {
            item->type = cJSON_Raw;
            item->valuestring = texts[*next];
            texts[(*next)++] = NULL;
        }
        numbers_to_raw(item->child, texts, count, next);
    }
}

static int slurp(const char *path, struct mini_buf *b)
{
    _cleanup_fclose_ FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (mini_buf_append(b, chunk, n) < 0)
            return -1;
    return ferror(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "--version") == 0)) {
        printf("usage: render_template TEMPLATE [VARS.json]\n");
        return 0;
    }
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: render_template TEMPLATE [VARS.json]\n");
        return 2;
    }
    _cleanup_buf_ struct mini_buf src = MINI_BUF_INIT, vars = MINI_BUF_INIT, out = MINI_BUF_INIT;
    if (slurp(argv[1], &src) < 0) {
        fprintf(stderr, "render_template: %s: cannot read\n", argv[1]);
        return 2;
    }
    cJSON *json = NULL;
    if (argc == 3) {
        if (slurp(argv[2], &vars) < 0) {
            fprintf(stderr, "render_template: %s: cannot read\n", argv[2]);
            return 2;
        }
        json = cJSON_ParseWithLength(vars.data ? vars.data : "", vars.len);
        if (!json) {
            fprintf(stderr, "render_template: %s: invalid JSON\n", argv[2]);
            return 2;
        }
        char **texts;
        size_t count = number_texts(vars.data, vars.len, &texts), next = 0;
        numbers_to_raw(json->child, texts, count, &next);
        for (size_t i = 0; i < count; i++)
            free(texts[i]);
        free(texts);
    }
    struct mini_err e;
    int rc = mini_tpl_render(src.data, src.len, json, &out, &e);
    cJSON_Delete(json);
    if (rc < 0) {
        fprintf(stderr, "render_template: %s: %s\n", mini_errc_name(e.code), e.msg);
        return 1;
    }
    if (out.len && fwrite(out.data, 1, out.len, stdout) != out.len)
        return 2;
    return fflush(stdout) == 0 ? 0 : 2;
}
