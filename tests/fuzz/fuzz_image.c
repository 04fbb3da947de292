/* libFuzzer target: image metadata parsing (container/image_parse.c).  The
 * first byte picks the parser (OCI index, manifest, config, docker-archive
 * manifest.json, a config's User against passwd and group texts, a
 * legacy docker-archive's repositories and ID/json members), the rest is
 * the document.  Whatever parses must hold
 * only valid digests and member names, and counts within their bounds;
 * index picking and the name/member checks run on what was parsed. */
#include "image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A legacy archive's members in the input: "NAME\0TEXT\0" pairs. */
struct members {
    const char *p;
    size_t n;
};

static const char *find_member(void *arg, const char *name, size_t *len)
{
    const struct members *m = arg;
    const char *p = m->p, *end = m->p + m->n;
    while (p < end) {
        const char *nz = memchr(p, '\0', (size_t)(end - p));
        if (!nz)
            return NULL;
        const char *t = nz + 1, *tz = t < end ? memchr(t, '\0', (size_t)(end - t)) : NULL;
        const char *te = tz ? tz : end;
        if (strcmp(p, name) == 0) {
            *len = (size_t)(te - t);
            return t;
        }
        p = te + 1;
    }
    return NULL;
}

static void check_desc(const struct mini_descriptor *d)
{
    if (!mini_digest_valid(d->digest) || d->size < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    struct mini_err e;
    switch (data[0] % 7) {
    case 0: {
        struct mini_image_index x;
        if (mini_image_parse_index(p, n, &x, &e) == 0) {
            if (x.n_manifests == 0)
                abort();
            for (size_t i = 0; i < x.n_manifests; i++)
                check_desc(&x.manifests[i]);
            const struct mini_descriptor *d = mini_image_index_pick(&x, NULL, &e);
            if (d && (d < x.manifests || d >= x.manifests + x.n_manifests))
                abort();
            if (x.manifests[0].ref_name)
                (void)mini_image_index_pick(&x, x.manifests[0].ref_name, &e);
        }
        mini_image_index_free(&x);
        break;
    }
    case 1: {
        struct mini_image_manifest m;
        if (mini_image_parse_manifest(p, n, &m, &e) == 0) {
            check_desc(&m.config);
            if (m.n_layers > MINI_IMAGE_MAX_LAYERS)
                abort();
            for (size_t i = 0; i < m.n_layers; i++)
                check_desc(&m.layers[i]);
        }
        mini_image_manifest_free(&m);
        break;
    }
    case 2: {
        struct mini_image_config c;
        if (mini_image_parse_config(p, n, &c, &e) == 0) {
            if (c.n_diff_ids > MINI_IMAGE_MAX_LAYERS)
                abort();
            for (size_t i = 0; i < c.n_diff_ids; i++)
                if (!mini_digest_valid(c.diff_ids[i]))
                    abort();
            for (size_t i = 0; i < c.n_env; i++)
                if (!strchr(c.env[i], '='))
                    abort();
        }
        mini_image_config_free(&c);
        break;
    }
    case 3: {
        struct mini_docker_manifest m;
        if (mini_image_parse_docker_manifest(p, n, &m, &e) == 0) {
            if (!mini_image_member_valid(m.config))
                abort();
            for (size_t i = 0; i < m.n_layers; i++)
                if (!mini_image_member_valid(m.layers[i]) || !strcmp(m.layers[i], ".."))
                    abort();
        }
        mini_docker_manifest_free(&m);
        break;
    }
    case 4: {
        /* an image config's User: "SPEC\0PASSWD\0GROUP" */
        const char *pw = memchr(p, '\0', n) ? p + strlen(p) + 1 : NULL;
        const char *gr = pw && memchr(pw, '\0', n - (size_t)(pw - p)) ? pw + strlen(pw) + 1 : NULL;
        char *spec = strndup(p, n);
        if (!spec)
            return 0;
        struct mini_image_user u;
        size_t plen = pw ? (gr ? (size_t)(gr - pw - 1) : n - (size_t)(pw - p)) : 0;
        size_t glen = gr ? n - (size_t)(gr - p) : 0;
        if (mini_image_user_parse(spec, pw, plen, gr, glen, &u, &e) == 0 &&
            (u.uid == 4294967295u || u.gid == 4294967295u || (!*spec && (u.uid || u.gid))))
            abort();
        free(spec);
        break;
    }
    case 5: {
        /* a legacy docker-archive: "REPOSITORIES\0" then members */
        const char *z = memchr(p, '\0', n);
        size_t rlen = z ? (size_t)(z - p) : n;
        struct members ms = { z ? z + 1 : p + n, z ? n - rlen - 1 : 0 };
        struct mini_docker_manifest m;
        char *name = NULL;
        cJSON *top = NULL;
        if (mini_image_parse_legacy(p, rlen, find_member, &ms, &name, &m, &top, &e) == 0) {
            if (!m.n_layers || m.n_layers > MINI_IMAGE_MAX_LAYERS || !cJSON_IsObject(top) || m.config)
                abort();
            for (size_t i = 0; i < m.n_layers; i++)
                if (!mini_image_member_valid(m.layers[i]))
                    abort();
            if (name && !mini_image_name_valid(name))
                abort();
        }
        cJSON_Delete(top);
        free(name);
        mini_docker_manifest_free(&m);
        break;
    }
    default: {
        /* names and member names: text up to the first NUL */
        char *s = strndup(p, n);
        if (!s)
            return 0;
        if (mini_image_name_valid(s) && (strlen(s) > 300 || s[0] == '/' || strstr(s, "//")))
            abort();
        if (mini_image_member_valid(s) && (s[0] == '/' || !strcmp(s, "..") || !strncmp(s, "../", 3)))
            abort();
        (void)mini_digest_valid(s);
        free(s);
        break;
    }
    }
    return 0;
}
