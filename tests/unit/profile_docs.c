/* The key reference of docs/profiles.md, from the schema table
 * (sandbox/isolation/profile_schema.c).
 *
 *     profile_docs --check docs/profiles.md   exit 1 when a table differs
 *     profile_docs --write docs/profiles.md   regenerate the tables
 *
 * Each generated table sits between
 *     <!-- profile keys: SECTION -->   (SECTION: top, limits, seccomp, ...)
 *     <!-- end profile keys -->
 * and is the table's entries of that section, in the table's order. */
#include "profile_schema.h"
#include "mini/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN "<!-- profile keys: "
#define END "<!-- end profile keys -->"

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "--check") != 0 && strcmp(argv[1], "--write") != 0)) {
        fprintf(stderr, "usage: profile_docs --check|--write FILE\n");
        return 2;
    }
    const char *path = argv[2];
    struct mini_buf in = MINI_BUF_INIT;
    struct mini_err e;
    if (mini_read_file(path, &in, 4u << 20, &e) < 0) {
        fprintf(stderr, "profile_docs: %s\n", e.msg);
        return 2;
    }
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    if (!f)
        return 2;
    const char *s = in.data ? in.data : "";
    const char *end = s + in.len;
    unsigned tables = 0, stale = 0;
    while (s < end) {
        const char *b = strstr(s, BEGIN);
        if (!b) {
            fwrite(s, 1, (size_t)(end - s), f);
            break;
        }
        const char *eol = strchr(b, '\n');
        const char *close = strstr(b, " -->");
        const char *stop = strstr(b, END);
        if (!eol || !close || close > eol || !stop) {
            fprintf(stderr, "profile_docs: %s: a malformed \"%s\" marker\n", path, BEGIN);
            return 2;
        }
        fwrite(s, 1, (size_t)(eol + 1 - s), f);
        char section[64];
        snprintf(section, sizeof section, "%.*s", (int)(close - b - strlen(BEGIN)), b + strlen(BEGIN));
        char *table = NULL;
        size_t table_len = 0;
        FILE *t = open_memstream(&table, &table_len);
        if (!t)
            return 2;
        mini_profile_keys_markdown(t, strcmp(section, "top") == 0 ? "" : section);
        fclose(t);
        if (table_len <= strlen("| key | type | default | meaning |\n|---|---|---|---|\n") + 1) {
            fprintf(stderr, "profile_docs: %s: no keys in section \"%s\"\n", path, section);
            return 2;
        }
        if ((size_t)(stop - (eol + 1)) != table_len || memcmp(eol + 1, table, table_len) != 0) {
            fprintf(stderr, "profile_docs: %s: the table of \"%s\" differs from the schema\n", path, section);
            stale++;
        }
        fwrite(table, 1, table_len, f);
        free(table);
        tables++;
        s = stop;
    }
    fclose(f);
    int rc = 0;
    if (strcmp(argv[1], "--write") == 0) {
        if (stale && mini_write_file_atomic(path, out, out_len, 0644, &e) < 0) {
            fprintf(stderr, "profile_docs: %s\n", e.msg);
            rc = 2;
        } else {
            printf("%s: %u tables, %u rewritten\n", path, tables, stale);
        }
    } else if (stale || !tables) {
        fprintf(stderr, "profile_docs: %s: %u of %u tables differ (regenerate: build/bin/profile_docs --write %s)\n",
                path, stale, tables, path);
        rc = 1;
    } else {
        printf("ok: %s: %u tables match the schema\n", path, tables);
    }
    free(out);
    mini_buf_free(&in);
    return rc;
}
