/* Parsing of image metadata: OCI index and manifest, image config,
 * docker-archive manifest.json.  Pure functions of their input (fuzzed by
 * tests/fuzz/fuzz_image.c): every field is type- and range-checked, every
 * digest validated, every count bounded. */
#include "image.h"
#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/str.h"

#include <string.h>
#include <sys/utsname.h>

#define MAX_MANIFESTS 1024
#define MAX_ENV 4096
#define MAX_TAGS 256

bool mini_digest_valid(const char *s)
{
    if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != MINI_DIGEST_LEN)
        return false;
    for (const char *c = s + 7; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

bool mini_image_member_valid(const char *s)
{
    if (!s || !*s || *s == '/' || strlen(s) > 1024)
        return false;
    for (const char *c = s; *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            return false;
    const char *p = s;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!slash)
            return true;
        p = slash + 1;
    }
}

static bool name_part(const char *s, size_t n, bool tag)
{
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (tag && c >= 'A' && c <= 'Z');
        if (i == 0 && !(alnum || (tag && c == '_')))
            return false;
        if (!(alnum || c == '.' || c == '_' || c == '-' || (!tag && c == '/')))
            return false;
    }
    return true;
}

bool mini_image_name_valid(const char *name)
{
    if (!name)
        return false;
    /* NAME@sha256:HEX (a pulled image named by its digest), or NAME[:TAG]
     * where the tag follows the last '/'. */
    size_t len = strlen(name);
    const char *at = strchr(name, '@');
    if (at) {
        if (!mini_digest_valid(at + 1))
            return false;
        len = (size_t)(at - name);
    }
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        colon = name[i] == '/' ? NULL : name[i] == ':' ? name + i : colon;
    if (colon && (at || !name_part(colon + 1, len - (size_t)(colon + 1 - name), true)))
        return false;
    size_t n = colon ? (size_t)(colon - name) : len;
    if (!n || n > 128)
        return false;
    /* A registry's port: HOST:PORT/PATH. */
    const char *first = memchr(name, '/', n);
    const char *port = first ? memchr(name, ':', (size_t)(first - name)) : NULL;
    if (port) {
        if (port == name || first - port < 2 || first - port > 6)
            return false;
        for (const char *c = port + 1; c < first; c++)
            if (*c < '0' || *c > '9')
                return false;
        if (!name_part(name, (size_t)(port - name), false) ||
            !name_part(first + 1, n - (size_t)(first + 1 - name), false))
            return false;
    } else if (!name_part(name, n, false)) {
        return false;
    }
    for (size_t i = 0; i + 1 < n; i++)
        if (name[i] == '/' && name[i + 1] == '/')
            return false;
    return name[n - 1] != '/';
}

const char *mini_image_host_arch(void)
{
    static const char *const map[][2] = {
        { "x86_64", "amd64" }, { "aarch64", "arm64" },   { "armv7l", "arm" },  { "i686", "386" },
        { "i386", "386" },     { "ppc64le", "ppc64le" }, { "s390x", "s390x" }, { "riscv64", "riscv64" },
    };
    static char other[65];
    struct utsname u;
    if (uname(&u) < 0)
        return "unknown";
    for (size_t i = 0; i < MINI_ARRAY_SIZE(map); i++)
        if (strcmp(u.machine, map[i][0]) == 0)
            return map[i][1];
    snprintf(other, sizeof other, "%s", u.machine);
    return other;
}

/* ---- field helpers */

static cJSON *parse_obj(const char *p, size_t len, const char *what, struct mini_err *e)
{
    cJSON *j = mini_json_parse(p, len, e);
    if (!j) {
        mini_err_prefix(e, "%s", what);
        return NULL;
    }
    if (!cJSON_IsObject(j) && !cJSON_IsArray(j)) {
        cJSON_Delete(j);
        mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a JSON object", what);
        return NULL;
    }
    return j;
}

/* An optional string field: 0 (absent: *out stays NULL), 1 (copied), -1. */
static int opt_str(const cJSON *o, const char *key, char **out, const char *where, struct mini_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s.%s: must be a string", where, key);
    free(*out);
    if (!(*out = strdup(v->valuestring)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 1;
}

/* An array of strings, at most max. */
static int str_array(const cJSON *a, char ***out, size_t *n, size_t max, const char *where, struct mini_err *e)
{
    if (!a || cJSON_IsNull(a))
        return 0;
    if (!cJSON_IsArray(a))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: must be an array of strings", where);
    size_t cnt = (size_t)cJSON_GetArraySize(a);
    if (cnt > max)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: more than %zu entries", where, max);
    if (cnt == 0)
        return 0;
    *out = calloc(cnt, sizeof **out);
    if (!*out)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *v;
    cJSON_ArrayForEach (v, a) {
        if (!cJSON_IsString(v))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s[%zu]: must be a string", where, *n);
        if (!((*out)[*n] = strdup(v->valuestring)))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        (*n)++;
    }
    return 0;
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int descriptor(const cJSON *o, struct mini_descriptor *d, const char *where, struct mini_err *e)
{
    if (!cJSON_IsObject(o))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: must be an object", where);
    if (opt_str(o, "mediaType", &d->media_type, where, e) < 0)
        return -1;
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(o, "digest");
    if (!cJSON_IsString(dg))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s.digest: missing", where);
    if (!mini_digest_valid(dg->valuestring))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s.digest: not a sha256 digest: \"%.*s\"", where,
                            MINI_JSON_SHOW(dg->valuestring));
    memcpy(d->digest, dg->valuestring, MINI_DIGEST_LEN + 1);
    if (!mini_json_get_int(cJSON_GetObjectItemCaseSensitive(o, "size"), 0, MINI_JSON_INT_MAX, &d->size))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s.size: must be a non-negative integer", where);
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(o, "annotations");
    if (ann && !cJSON_IsObject(ann) && !cJSON_IsNull(ann))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s.annotations: must be an object", where);
    if (cJSON_IsObject(ann) && opt_str(ann, "org.opencontainers.image.ref.name", &d->ref_name, where, e) < 0)
        return -1;
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(o, "platform");
    if (pl && !cJSON_IsObject(pl) && !cJSON_IsNull(pl))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s.platform: must be an object", where);
    if (cJSON_IsObject(pl) &&
        (opt_str(pl, "os", &d->platform_os, where, e) < 0 ||
         opt_str(pl, "architecture", &d->platform_arch, where, e) < 0))
        return -1;
    return 0;
}

static void descriptor_free(struct mini_descriptor *d)
{
    free(d->media_type);
    free(d->ref_name);
    free(d->platform_os);
    free(d->platform_arch);
}

static int schema2(const cJSON *j, const char *what, struct mini_err *e)
{
    int64_t v;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(j, "schemaVersion");
    if (!mini_json_get_int(sv, 0, 100, &v) || v != 2)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: schemaVersion must be 2", what);
    return 0;
}

/* ---- documents */

int mini_image_parse_index(const char *p, size_t len, struct mini_image_index *out, struct mini_err *e)
{
    memset(out, 0, sizeof *out);
    _cleanup_cjson_ cJSON *j = parse_obj(p, len, "index.json", e);
    if (!j)
        return -1;
    if (!cJSON_IsObject(j))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: not a JSON object");
    if (schema2(j, "index.json", e) < 0)
        return -1;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "manifests");
    if (!cJSON_IsArray(m))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: manifests: must be an array");
    size_t n = (size_t)cJSON_GetArraySize(m);
    if (n == 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: no manifests");
    if (n > MAX_MANIFESTS)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: more than %d manifests", MAX_MANIFESTS);
    if (!(out->manifests = calloc(n, sizeof *out->manifests)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *d;
    cJSON_ArrayForEach (d, m) {
        char where[64];
        snprintf(where, sizeof where, "index.json: manifests[%zu]", out->n_manifests);
        if (descriptor(d, &out->manifests[out->n_manifests++], where, e) < 0)
            return -1;
    }
    return 0;
}

void mini_image_index_free(struct mini_image_index *x)
{
    for (size_t i = 0; i < x->n_manifests; i++)
        descriptor_free(&x->manifests[i]);
    free(x->manifests);
    memset(x, 0, sizeof *x);
}

int mini_image_parse_manifest(const char *p, size_t len, struct mini_image_manifest *out, struct mini_err *e)
{
    memset(out, 0, sizeof *out);
    _cleanup_cjson_ cJSON *j = parse_obj(p, len, "manifest", e);
    if (!j)
        return -1;
    if (!cJSON_IsObject(j))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest: not a JSON object");
    if (schema2(j, "manifest", e) < 0)
        return -1;
    if (descriptor(cJSON_GetObjectItemCaseSensitive(j, "config"), &out->config, "manifest: config", e) < 0)
        return -1;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, "layers");
    if (!cJSON_IsArray(l))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest: layers: must be an array");
    size_t n = (size_t)cJSON_GetArraySize(l);
    if (n > MINI_IMAGE_MAX_LAYERS)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest: more than %d layers", MINI_IMAGE_MAX_LAYERS);
    if (n && !(out->layers = calloc(n, sizeof *out->layers)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *d;
    cJSON_ArrayForEach (d, l) {
        char where[64];
        snprintf(where, sizeof where, "manifest: layers[%zu]", out->n_layers);
        struct mini_descriptor *ld = &out->layers[out->n_layers++];
        if (descriptor(d, ld, where, e) < 0)
            return -1;
        /* Layers are tar streams, compressed or not; foreign or
         * encrypted ones cannot be applied. */
        if (ld->media_type && !strstr(ld->media_type, "tar"))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: unsupported media type %.*s", where,
                                MINI_JSON_SHOW(ld->media_type));
        if (ld->media_type && strstr(ld->media_type, "encrypted"))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: encrypted layers are not supported", where);
    }
    return 0;
}

void mini_image_manifest_free(struct mini_image_manifest *m)
{
    descriptor_free(&m->config);
    for (size_t i = 0; i < m->n_layers; i++)
        descriptor_free(&m->layers[i]);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

int mini_image_parse_config(const char *p, size_t len, struct mini_image_config *out, struct mini_err *e)
{
    memset(out, 0, sizeof *out);
    _cleanup_cjson_ cJSON *j = parse_obj(p, len, "config", e);
    if (!j)
        return -1;
    if (!cJSON_IsObject(j))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "config: not a JSON object");
    if (opt_str(j, "os", &out->os, "config", e) < 0 || opt_str(j, "architecture", &out->architecture, "config", e) < 0)
        return -1;
    if (out->os && strcmp(out->os, "linux") != 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "config: os is %.*s, not linux", MINI_JSON_SHOW(out->os));
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "config");
    if (c && !cJSON_IsNull(c)) {
        if (!cJSON_IsObject(c))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "config.config: must be an object");
        if (str_array(cJSON_GetObjectItemCaseSensitive(c, "Env"), &out->env, &out->n_env, MAX_ENV, "config.config.Env",
                      e) < 0)
            return -1;
        for (size_t i = 0; i < out->n_env; i++) {
            const char *eq = strchr(out->env[i], '=');
            if (!eq || eq == out->env[i])
                return mini_err_set(e, MINI_E_BAD_REQUEST, "config.config.Env[%zu]: not NAME=VALUE", i);
        }
        if (opt_str(c, "WorkingDir", &out->working_dir, "config.config", e) < 0 ||
            opt_str(c, "User", &out->user, "config.config", e) < 0)
            return -1;
        if (out->working_dir && *out->working_dir && out->working_dir[0] != '/')
            return mini_err_set(e, MINI_E_BAD_REQUEST, "config.config.WorkingDir: must be an absolute path");
    }
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "rootfs");
    if (!cJSON_IsObject(r))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "config.rootfs: missing");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "type");
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "layers") != 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "config.rootfs.type: must be \"layers\"");
    if (str_array(cJSON_GetObjectItemCaseSensitive(r, "diff_ids"), &out->diff_ids, &out->n_diff_ids,
                  MINI_IMAGE_MAX_LAYERS, "config.rootfs.diff_ids", e) < 0)
        return -1;
    for (size_t i = 0; i < out->n_diff_ids; i++)
        if (!mini_digest_valid(out->diff_ids[i]))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "config.rootfs.diff_ids[%zu]: not a sha256 digest", i);
    return 0;
}

void mini_image_config_free(struct mini_image_config *c)
{
    free(c->os);
    free(c->architecture);
    free_strs(c->env, c->n_env);
    free(c->working_dir);
    free(c->user);
    free_strs(c->diff_ids, c->n_diff_ids);
    memset(c, 0, sizeof *c);
}

int mini_image_parse_docker_manifest(const char *p, size_t len, struct mini_docker_manifest *out, struct mini_err *e)
{
    memset(out, 0, sizeof *out);
    _cleanup_cjson_ cJSON *j = parse_obj(p, len, "manifest.json", e);
    if (!j)
        return -1;
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) < 1)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest.json: must be a non-empty array");
    const cJSON *m = cJSON_GetArrayItem(j, 0);
    if (!cJSON_IsObject(m))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest.json[0]: must be an object");
    if (opt_str(m, "Config", &out->config, "manifest.json[0]", e) < 0)
        return -1;
    if (!out->config || !mini_image_member_valid(out->config))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest.json[0].Config: missing or not a plain member name");
    if (str_array(cJSON_GetObjectItemCaseSensitive(m, "RepoTags"), &out->repo_tags, &out->n_repo_tags, MAX_TAGS,
                  "manifest.json[0].RepoTags", e) < 0 ||
        str_array(cJSON_GetObjectItemCaseSensitive(m, "Layers"), &out->layers, &out->n_layers, MINI_IMAGE_MAX_LAYERS,
                  "manifest.json[0].Layers", e) < 0)
        return -1;
    for (size_t i = 0; i < out->n_layers; i++)
        if (!mini_image_member_valid(out->layers[i]))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest.json[0].Layers[%zu]: not a plain member name", i);
    return 0;
}

void mini_docker_manifest_free(struct mini_docker_manifest *m)
{
    free(m->config);
    free_strs(m->repo_tags, m->n_repo_tags);
    free_strs(m->layers, m->n_layers);
    memset(m, 0, sizeof *m);
}

const struct mini_descriptor *mini_image_index_pick(const struct mini_image_index *idx, const char *tag,
                                                    struct mini_err *e)
{
    if (tag) {
        for (size_t i = 0; i < idx->n_manifests; i++)
            if (idx->manifests[i].ref_name && strcmp(idx->manifests[i].ref_name, tag) == 0)
                return &idx->manifests[i];
        mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: no manifest is tagged \"%.*s\"", MINI_JSON_SHOW(tag));
        return NULL;
    }
    if (idx->n_manifests == 1)
        return &idx->manifests[0];
    const char *arch = mini_image_host_arch();
    const struct mini_descriptor *found = NULL;
    for (size_t i = 0; i < idx->n_manifests; i++) {
        const struct mini_descriptor *d = &idx->manifests[i];
        if (d->platform_os && strcmp(d->platform_os, "linux") == 0 && d->platform_arch &&
            strcmp(d->platform_arch, arch) == 0) {
            if (found) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: several manifests for linux/%s: name one (SRC:TAG)",
                             arch);
                return NULL;
            }
            found = d;
        }
    }
    if (!found)
        mini_err_set(e, MINI_E_BAD_REQUEST, "index.json: %zu manifests and none for linux/%s: name one (SRC:TAG)",
                     idx->n_manifests, arch);
    return found;
}

/* ---------------------------------------------------------- config User */

/* A decimal id: digits only, at most 4294967294 ((uid_t)-1 is no id). */
static bool parse_id(const char *s, size_t n, uint32_t *out)
{
    uint64_t v;
    if (!mini_parse_decimal(s, n, 4294967294u, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Look name (or, when name is NULL, the id `want`) up in a passwd or group
 * text: lines "name:password:id:..." (passwd: the primary gid follows).
 * True with *id (and *gid for passwd) set when found. */
static bool db_lookup(const char *db, size_t len, const char *name, size_t name_len, uint32_t want, bool passwd,
                      uint32_t *id, uint32_t *gid)
{
    const char *p = db, *end = db ? db + len : NULL;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        /* fields of this line */
        const char *f[4] = { NULL };
        size_t fl[4] = { 0 }, nf = 0;
        const char *q = p;
        while (nf < 4) {
            const char *c = memchr(q, ':', (size_t)(le - q));
            f[nf] = q;
            fl[nf] = (size_t)((c ? c : le) - q);
            nf++;
            if (!c)
                break;
            q = c + 1;
        }
        uint32_t v, g = 0;
        bool ok = nf >= (passwd ? 4u : 3u) && fl[0] > 0 && parse_id(f[2], fl[2], &v) &&
            (!passwd || parse_id(f[3], fl[3], &g));
        if (ok && (name ? fl[0] == name_len && memcmp(f[0], name, name_len) == 0 : v == want)) {
            *id = v;
            if (gid)
                *gid = g;
            return true;
        }
        p = nl ? nl + 1 : NULL;
    }
    return false;
}

static bool user_name_valid(const char *s, size_t n)
{
    if (n == 0 || n > 256)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || s[i] == 0x7f || s[i] == ':')
            return false;
    return true;
}

int mini_image_user_parse(const char *spec, const char *passwd, size_t plen, const char *group, size_t glen,
                          struct mini_image_user *out, struct mini_err *e)
{
    *out = (struct mini_image_user){ 0, 0 };
    if (!spec || !*spec)
        return 0;
    const char *colon = strchr(spec, ':');
    size_t ul = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *gs = colon ? colon + 1 : NULL;
    size_t gl = gs ? strlen(gs) : 0;
    if (!user_name_valid(spec, ul) || (gs && !user_name_valid(gs, gl)))
        return mini_err_set(e, MINI_E_BAD_REQUEST,
                            "user \"%.64s\": not NAME, UID, UID:GID or NAME:GROUP (names of printable "
                            "characters, ids up to 4294967294)",
                            spec);
    uint32_t pgid = 0;
    bool found;
    if (parse_id(spec, ul, &out->uid))
        found = db_lookup(passwd, plen, NULL, 0, out->uid, true, &out->uid, &pgid);
    else if (!(found = db_lookup(passwd, plen, spec, ul, 0, true, &out->uid, &pgid)))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "user \"%.*s\" is not in the image's /etc/passwd%s", (int)ul, spec,
                            passwd ? "" : " (it has none)");
    /* A numeric uid the image does not list: its group is 0, as Docker has it. */
    out->gid = found ? pgid : 0;
    if (!gs || parse_id(gs, gl, &out->gid))
        return 0;
    if (!db_lookup(group, glen, gs, gl, 0, false, &out->gid, NULL))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "group \"%.*s\" is not in the image's /etc/group%s", (int)gl, gs,
                            group ? "" : " (it has none)");
    return 0;
}

/* ---------------------------------------------- legacy docker-archive */

static bool hex_id(const char *s)
{
    if (strlen(s) != 64)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

int mini_image_parse_legacy(const char *repositories, size_t len, mini_member_fn member, void *arg, char **name,
                            struct mini_docker_manifest *m, cJSON **top, struct mini_err *e)
{
    memset(m, 0, sizeof *m);
    *top = NULL;
    _cleanup_cjson_ cJSON *repos = repositories ? cJSON_ParseWithLength(repositories, len) : NULL;
    const cJSON *repo = cJSON_IsObject(repos) ? repos->child : NULL;
    const cJSON *tagj = cJSON_IsObject(repo) ? repo->child : NULL;
    const char *id = cJSON_GetStringValue(tagj);
    if (!id || !hex_id(id))
        return mini_err_set(e, MINI_E_BAD_REQUEST,
                            "repositories: not {\"NAME\": {\"TAG\": \"ID\"}} with a 64-hex-digit ID");
    char *nt = NULL;
    if (!*name && asprintf(&nt, "%s:%s", repo->string, tagj->string) >= 0) {
        if (mini_image_name_valid(nt))
            *name = nt;
        else
            free(nt);
    }
    char ids[MINI_IMAGE_MAX_LAYERS][65], next[65];
    size_t n = 0;
    _cleanup_cjson_ cJSON *first = NULL;
    for (; id; n++) {
        if (!hex_id(id))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "layer %zu: parent \"%.*s\" is not a layer id", n,
                                MINI_JSON_SHOW(id));
        for (size_t i = 0; i < n; i++)
            if (strcmp(ids[i], id) == 0)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "a loop in the layers' parent chain at %.12s", id);
        if (n == MINI_IMAGE_MAX_LAYERS)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "a parent chain longer than %d layers", MINI_IMAGE_MAX_LAYERS);
        memcpy(ids[n], id, 65);
        char name_of[80];
        snprintf(name_of, sizeof name_of, "%s/json", id);
        size_t jlen = 0;
        const char *jt = member(arg, name_of, &jlen);
        _cleanup_cjson_ cJSON *j = jt ? cJSON_ParseWithLength(jt, jlen) : NULL;
        if (!cJSON_IsObject(j))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "no valid member %s (or larger than 1 MiB)", name_of);
        const cJSON *parent = cJSON_GetObjectItemCaseSensitive(j, "parent");
        if (parent && !cJSON_IsString(parent) && !cJSON_IsNull(parent))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: parent is not a string", name_of);
        const char *p = cJSON_GetStringValue(parent);
        id = NULL;
        if (p && *p) {
            if (strlen(p) != 64)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: parent is not a layer id", name_of);
            memcpy(next, p, 65);
            id = next;
        }
        if (!first)
            first = TAKE_PTR(j);
    }
    if (!(m->layers = calloc(n, sizeof *m->layers)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (asprintf(&m->layers[i], "%s/layer.tar", ids[n - 1 - i]) < 0) {
            m->layers[i] = NULL;
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        m->n_layers = i + 1;
    }
    *top = TAKE_PTR(first);
    return 0;
}
