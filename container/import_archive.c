/* Archives (import_internal.h): docker-archive (docker save, podman
 * save; and the legacy layout of docker save before 1.10), oci-archive,
 * and a root filesystem tarball as a one-layer image.  A file is read
 * twice: a first pass finds its kind and keeps its small members (the
 * stash), the second extracts its layers. */
#include "import_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void mini_imp_stash_free(struct stash *st)
{
    for (size_t i = 0; i < st->n; i++) {
        free(st->name[i]);
        mini_buf_free(&st->data[i]);
    }
    free(st->name);
    free(st->data);
    memset(st, 0, sizeof *st);
}

const struct mini_buf *mini_imp_stash_get(const struct stash *st, const char *name)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->name[i], name) == 0)
            return &st->data[i];
    return NULL;
}

/* Member names of a docker archive, normalised ("./x" -> "x"). */
static const char *member_name(struct archive_entry *ent)
{
    const char *n = archive_entry_pathname(ent);
    while (n && n[0] == '.' && n[1] == '/')
        n += 2;
    return n ? n : "";
}

static bool hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Whether a member name is one an image archive has: docker save's
 * manifest.json, repositories, ID/layer.tar, ID/json, ID/VERSION and
 * HEX.json; skopeo's and podman's HEX.tar (their layers, at the top);
 * an OCI layout's oci-layout, index.json and blobs/sha256/HEX. */
static bool docker_like(const char *n)
{
    static const char *const fixed[] = { "manifest.json", "repositories", "index.json",   "oci-layout",
                                         "blobs",         "blobs/",       "blobs/sha256", "blobs/sha256/" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(fixed); i++)
        if (strcmp(n, fixed[i]) == 0)
            return true;
    if (strncmp(n, "blobs/sha256/", 13) == 0)
        return true;
    const char *slash = strchr(n, '/');
    size_t first = slash ? (size_t)(slash - n) : strlen(n);
    if (hex64(n, first))
        return true;
    return !slash && strlen(n) > 64 && hex64(n, 64) && (strcmp(n + 64, ".json") == 0 || strcmp(n + 64, ".tar") == 0);
}

/* Whether a member shows a root filesystem: bin, usr or etc at the top of
 * the tar, as a directory or a symbolic link (mmdebstrap's bin -> usr/bin),
 * or something under one of them.  A tar without any is no root
 * filesystem, unless --format rootfs says so. */
static bool root_like(const char *n, struct archive_entry *ent)
{
    static const char *const tops[] = { "bin", "usr", "etc" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(tops); i++) {
        size_t l = strlen(tops[i]);
        if (strncmp(n, tops[i], l) != 0 || (n[l] != '\0' && n[l] != '/'))
            continue;
        if (n[l] == '/' && n[l + 1])
            return true;
        mode_t t = archive_entry_filetype(ent);
        return t == AE_IFDIR || t == AE_IFLNK;
    }
    return false;
}

static struct archive *open_outer(const char *path, struct mini_err *e)
{
    struct archive *a = archive_read_new();
    if (!a) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, path, BUF_SIZE) != ARCHIVE_OK) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a tar archive (compressed or not): %s", path,
                     archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    return a;
}

static bool config_like(const char *n)
{
    if (strlen(n) == 69 && hex64(n, 64) && strcmp(n + 64, ".json") == 0)
        return true;
    return strncmp(n, "blobs/sha256/", 13) == 0 && hex64(n + 13, strlen(n + 13));
}

static int read_member(struct archive *a, struct mini_buf *b, const char *what, struct mini_err *e)
{
    struct ar_src s = { a };
    char chunk[65536];
    for (;;) {
        ssize_t k = mini_imp_ar_read(&s, chunk, sizeof chunk, e);
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        if (b->len + (size_t)k > MINI_IMAGE_META_MAX || mini_buf_append(b, chunk, (size_t)k) < 0)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s larger than %u bytes", what, MINI_IMAGE_META_MAX);
    }
}

/* Keep a member of the first pass (see struct stash), when it fits. */
static int stash_add(struct stash *st, struct archive *a, const char *name, int64_t size, size_t max,
                     struct mini_err *e)
{
    if (size < 0 || (uint64_t)size > max || st->n >= STASH_MAX_MEMBERS || st->bytes + (uint64_t)size > STASH_MAX_BYTES)
        return 0;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        char **nn = realloc(st->name, cap * sizeof *nn);
        if (nn)
            st->name = nn;
        struct mini_buf *nd = nn ? realloc(st->data, cap * sizeof *nd) : NULL;
        if (!nd)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        st->data = nd;
        st->cap = cap;
    }
    if (!(st->name[st->n] = strdup(name)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    memset(&st->data[st->n], 0, sizeof st->data[st->n]);
    st->n++;
    if (read_member(a, &st->data[st->n - 1], name, e) < 0)
        return -1;
    st->bytes += st->data[st->n - 1].len;
    return 0;
}

/* First pass over a file: its kind, docker's manifest.json read into
 * manifest, and the small members kept in st.  1 for an image archive;
 * 0 for a root filesystem tarball (AK_ROOTFS: stops at its first bin, usr
 * or etc) or a tar that is neither (AK_UNKNOWN, its first member that no
 * image archive has in *foreign, malloc'ed). */
int mini_imp_sniff_file(const char *path, struct mini_buf *manifest, struct stash *st, enum archive_kind *kind,
                        char **foreign, struct mini_err *e)
{
    _cleanup_archive_ struct archive *a = open_outer(path, e);
    if (!a)
        return -1;
    struct archive_entry *ent;
    bool docker = false, layout = false, repositories = false;
    *kind = AK_ROOTFS;
    *foreign = NULL;
    for (;;) {
        int r = archive_read_next_header(a, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a tar archive: %s", path, archive_error_string(a));
        const char *name = member_name(ent);
        if (!*name || !strcmp(name, "."))
            continue;
        if (root_like(name, ent))
            return 0;
        if (*foreign)
            continue; /* looking for a bin, usr or etc only */
        if (!docker_like(name)) {
            if (!(*foreign = strdup(name)))
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            for (char *c = *foreign; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                    *c = '?'; /* it goes into a message */
            continue;
        }
        int64_t size = archive_entry_size(ent);
        const char *slash = strchr(name, '/');
        if (strcmp(name, "manifest.json") == 0) {
            if (size > (int64_t)MINI_IMAGE_META_MAX)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: manifest.json larger than %u bytes", path,
                                    MINI_IMAGE_META_MAX);
            if (read_member(a, manifest, "manifest.json", e) < 0)
                return -1;
            docker = true;
        } else if (strcmp(name, "oci-layout") == 0) {
            layout = true;
        } else if (strcmp(name, "index.json") == 0 || strcmp(name, "repositories") == 0) {
            repositories |= name[0] == 'r';
            if (stash_add(st, a, name, size, MINI_IMAGE_META_MAX, e) < 0)
                return -1;
        } else if (config_like(name) || (slash && strcmp(slash, "/json") == 0)) {
            if (stash_add(st, a, name, size, 1u << 20, e) < 0)
                return -1;
        }
    }
    if (*foreign) {
        *kind = AK_UNKNOWN;
        return 0;
    }
    if (docker)
        *kind = AK_DOCKER;
    else if (layout && mini_imp_stash_get(st, "index.json"))
        *kind = AK_OCI_ARCHIVE;
    else if (repositories)
        *kind = AK_DOCKER_LEGACY;
    else
        return mini_err_set(e, MINI_E_BAD_REQUEST,
                            "%s: an image archive with neither manifest.json, nor oci-layout and index.json, nor "
                            "repositories",
                            path);
    return 1;
}

/* A legacy archive's member, from the first pass (mini_member_fn). */
static const char *stash_member(void *arg, const char *name, size_t *len)
{
    const struct mini_buf *b = mini_imp_stash_get(arg, name);
    *len = b ? b->len : 0;
    return b ? (b->data ? b->data : "") : NULL;
}

/* The config of a legacy archive's image: the top layer's config, os and
 * architecture, and the diff ids its layers hashed to. */
static int legacy_config(const cJSON *top, char **diff_ids, size_t n, struct mini_buf *config,
                         struct mini_image_config *cfg, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *c = cJSON_CreateObject();
    const char *arch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(top, "architecture"));
    const char *os = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(top, "os"));
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(top, "config");
    cJSON *rfs = cJSON_AddObjectToObject(c, "rootfs");
    cJSON *ids = cJSON_AddArrayToObject(rfs, "diff_ids");
    cJSON_AddStringToObject(c, "architecture", arch ? arch : mini_image_host_arch());
    cJSON_AddStringToObject(c, "os", os ? os : "linux");
    cJSON_AddItemToObject(c, "config", cJSON_IsObject(tc) ? cJSON_Duplicate(tc, true) : cJSON_CreateObject());
    cJSON_AddStringToObject(rfs, "type", "layers");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateString(diff_ids[i]));
    _cleanup_free_ char *text = cJSON_PrintUnformatted(c);
    if (!text || mini_buf_puts(config, text) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_image_parse_config(config->data, config->len, cfg, e);
}

/* The second pass over an image archive: its layers, as m lists them
 * (members of the archive), extracted and checked.  For a docker-archive
 * the config is the member m->config; for an oci-archive it is in config
 * and cfg already (mini_imp_oci_resolve), and sizes are the layers' per their
 * manifest; for a legacy archive (legacy_top: its top layer's json) it is
 * made from the diff ids found.  A member named blobs/sha256/HEX must
 * hash to HEX. */
static int import_archive(struct import *im, const char *path, const struct mini_docker_manifest *mp,
                          const struct stash *st, const int64_t *sizes, const cJSON *legacy_top,
                          struct mini_buf *config, char **name, struct mini_image_config *cfg, struct layers *ls,
                          struct mini_err *e)
{
    const struct mini_docker_manifest m = *mp;
    int rc = -1;
    char(*dirs)[32] = NULL;
    char **got = NULL; /* computed diff ids, per layer */
    struct archive *a = NULL;
    if (m.n_repo_tags && !*name && mini_image_name_valid(m.repo_tags[0]) && !(*name = strdup(m.repo_tags[0]))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    dirs = calloc(m.n_layers + 1, sizeof *dirs);
    got = calloc(m.n_layers + 1, sizeof *got);
    if (!dirs || !got) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    if (!(a = open_outer(path, e)))
        goto out;
    bool have_config = config->len > 0;
    for (size_t i = 0; m.config && !have_config && i < st->n; i++) {
        if (strcmp(st->name[i], m.config) != 0)
            continue;
        if (mini_buf_append(config, st->data[i].data ? st->data[i].data : "", st->data[i].len) < 0) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto out;
        }
        if (mini_image_parse_config(config->data ? config->data : "", config->len, cfg, e) < 0)
            goto out;
        if (cfg->n_diff_ids != m.n_layers) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "config has %zu diff_ids for %zu layers", cfg->n_diff_ids, m.n_layers);
            goto out;
        }
        have_config = true;
    }
    struct archive_entry *ent;
    for (;;) {
        int r = archive_read_next_header(a, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %s", path, archive_error_string(a));
            goto out;
        }
        const char *mn = member_name(ent);
        if (m.config && strcmp(mn, m.config) == 0 && !have_config) {
            if (archive_entry_size(ent) > (int64_t)MINI_IMAGE_META_MAX) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "%s: config larger than %u bytes", path, MINI_IMAGE_META_MAX);
                goto out;
            }
            if (read_member(a, config, "config", e) < 0)
                goto out;
            if (mini_image_parse_config(config->data ? config->data : "", config->len, cfg, e) < 0)
                goto out;
            if (cfg->n_diff_ids != m.n_layers) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "config has %zu diff_ids for %zu layers", cfg->n_diff_ids,
                             m.n_layers);
                goto out;
            }
            have_config = true;
            continue;
        }
        for (size_t i = 0; i < m.n_layers; i++) {
            if (strcmp(mn, m.layers[i]) != 0 || got[i])
                continue;
            if (have_config && mini_imp_layer_stored(im, cfg->diff_ids[i])) {
                ls->shared++;
                if (!(got[i] = strdup(cfg->diff_ids[i]))) {
                    mini_err_set(e, MINI_E_NOMEM, "out of memory");
                    goto out;
                }
                break;
            }
            char what[64];
            snprintf(what, sizeof what, "layer %zu/%zu", i + 1, m.n_layers);
            im->what = what;
            struct ar_src s = { a };
            struct layer l;
            int64_t size = sizes ? sizes[i] : archive_entry_size_is_set(ent) ? archive_entry_size(ent) : -1;
            int x = mini_imp_extract_layer(im, mini_imp_ar_read, &s, size, dirs[i], &l, e);
            if (x == 0 && strncmp(mn, "blobs/sha256/", 13) == 0 && strcmp(mn + 13, l.blob_digest + 7) != 0)
                x = mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the blob %s hashes to %s", what, mn,
                                 l.blob_digest);
            if (x == 0 && !(got[i] = strdup(l.diff_id)))
                x = mini_err_set(e, MINI_E_NOMEM, "out of memory");
            if (x == 0)
                x = mini_imp_write_layer_json(im, &l, dirs[i], e);
            mini_imp_layer_free(&l);
            im->what = "image";
            if (x < 0)
                goto out;
            /* The same member listed twice is one layer twice. */
            for (size_t k = i + 1; k < m.n_layers; k++)
                if (strcmp(m.layers[k], m.layers[i]) == 0 && !got[k])
                    got[k] = strdup(got[i]);
            break;
        }
    }
    for (size_t i = 0; legacy_top && i < m.n_layers; i++)
        if (!got[i]) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (layer %zu of the parent chain)", path, m.layers[i],
                         i + 1);
            goto out;
        }
    if (legacy_top && legacy_config(legacy_top, got, m.n_layers, config, cfg, e) < 0)
        goto out;
    if (!legacy_top && !have_config) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (the config manifest.json names)", path, m.config);
        goto out;
    }
    /* A config named by its digest (NAME.json or blobs/sha256/NAME) is
     * checked against it. */
    if (m.config) {
        const char *base = strrchr(m.config, '/') ? strrchr(m.config, '/') + 1 : m.config;
        char want[MINI_DIGEST_LEN + 1], have[MINI_DIGEST_LEN + 1];
        if (strlen(base) >= 64 && hex64(base, 64)) {
            snprintf(want, sizeof want, "sha256:%.64s", base);
            mini_imp_sha_of(config->data, config->len, have);
            if (strcmp(want, have) != 0) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the config hashes to %s", m.config, have);
                goto out;
            }
        }
    }
    for (size_t i = 0; i < m.n_layers; i++) {
        if (!got[i]) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (layer %zu in manifest.json)", path, m.layers[i],
                         i + 1);
            goto out;
        }
        if (strcmp(got[i], cfg->diff_ids[i]) != 0) {
            mini_err_set(e, MINI_E_BAD_REQUEST,
                         "layer %zu/%zu: diff id mismatch: the layer's tar hashes to %s, the config says %s", i + 1,
                         m.n_layers, got[i], cfg->diff_ids[i]);
            goto out;
        }
    }
    /* Verified: store them. */
    for (size_t i = 0; i < m.n_layers; i++) {
        if (!dirs[i][0])
            continue;
        char dst[128];
        snprintf(dst, sizeof dst, "layers/%s", got[i] + 7);
        if (renameat(im->tmpfd, dirs[i], im->s->dirfd, dst) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
            mini_err_sys(e, MINI_E_IO, errno, "storing %s", dst);
            goto out;
        }
    }
    ls->n = m.n_layers;
    ls->diff_ids = cfg->diff_ids;
    rc = 0;
out:
    if (a)
        archive_read_free(a);
    if (got)
        for (size_t i = 0; i < m.n_layers; i++)
            free(got[i]);
    free(got);
    free(dirs);
    return rc;
}

/* An image archive of any kind (mini_imp_sniff_file): its manifest, then its
 * layers (import_archive). */
int mini_imp_import_image_archive(struct import *im, const char *path, enum archive_kind kind,
                                  const struct mini_buf *dmanifest, const struct stash *st, const char *tag,
                                  struct mini_buf *config, char **name, struct mini_image_config *cfg,
                                  struct layers *ls, const char **format, struct mini_err *e)
{
    struct mini_docker_manifest m;
    struct mini_image_manifest om;
    memset(&om, 0, sizeof om);
    _cleanup_cjson_ cJSON *top = NULL;
    _cleanup_free_ int64_t *sizes = NULL;
    int rc = -1;
    memset(&m, 0, sizeof m);
    if (kind == AK_DOCKER) {
        *format = "docker-archive";
        if (mini_image_parse_docker_manifest(dmanifest->data, dmanifest->len, &m, e) < 0)
            goto out;
    } else if (kind == AK_DOCKER_LEGACY) {
        *format = "docker-archive-legacy";
        const struct mini_buf *rb = mini_imp_stash_get(st, "repositories");
        if (mini_image_parse_legacy(rb ? rb->data : NULL, rb ? rb->len : 0, stash_member, (void *)st, name, &m, &top,
                                    e) < 0) {
            mini_err_prefix(e, "%s", path);
            goto out;
        }
    } else {
        /* oci-archive: the layout's documents from the first pass; its
         * layers are the members blobs/sha256/HEX. */
        *format = "oci-archive";
        struct oci_docs docs = { .dfd = -1, .st = st, .where = path };
        if (mini_imp_oci_resolve(&docs, tag, name, &om, config, cfg, e) < 0)
            goto out;
        if (!(m.layers = calloc(om.n_layers + 1, sizeof *m.layers)) ||
            !(sizes = calloc(om.n_layers + 1, sizeof *sizes))) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < om.n_layers; i++, m.n_layers++) {
            sizes[i] = om.layers[i].size;
            if (asprintf(&m.layers[i], "blobs/sha256/%s", om.layers[i].digest + 7) < 0) {
                m.layers[i] = NULL;
                mini_err_set(e, MINI_E_NOMEM, "out of memory");
                goto out;
            }
        }
    }
    rc = import_archive(im, path, &m, st, sizes, top, config, name, cfg, ls, e);
out:
    mini_docker_manifest_free(&m);
    mini_image_manifest_free(&om);
    return rc;
}

int mini_imp_import_rootfs(struct import *im, const char *path, struct mini_buf *config, struct mini_image_config *cfg,
                           struct layers *ls, struct mini_err *e)
{
    struct fd_src fs = { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) };
    if (fs.fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
    struct stat st;
    int64_t size = fstat(fs.fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
    char dirname[32];
    struct layer l;
    im->what = "root filesystem";
    int r = mini_imp_extract_layer(im, mini_imp_fd_read, &fs, size, dirname, &l, e);
    close(fs.fd);
    if (r == 0)
        r = mini_imp_commit_layer(im, &l, dirname, e);
    char diff_id[MINI_DIGEST_LEN + 1];
    memcpy(diff_id, l.diff_id, sizeof diff_id);
    mini_imp_layer_free(&l);
    im->what = "image";
    if (r < 0)
        return -1;
    /* Its config, made up: same tarball, same config, same id. */
    _cleanup_cjson_ cJSON *c = cJSON_CreateObject();
    cJSON *cc = cJSON_AddObjectToObject(c, "config");
    cJSON *env = cJSON_AddArrayToObject(cc, "Env");
    cJSON_AddItemToArray(env, cJSON_CreateString("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    cJSON_AddStringToObject(c, "architecture", mini_image_host_arch());
    cJSON_AddStringToObject(c, "os", "linux");
    cJSON *rfs = cJSON_AddObjectToObject(c, "rootfs");
    cJSON_AddStringToObject(rfs, "type", "layers");
    cJSON *ids = cJSON_AddArrayToObject(rfs, "diff_ids");
    cJSON_AddItemToArray(ids, cJSON_CreateString(diff_id));
    _cleanup_free_ char *text = cJSON_PrintUnformatted(c);
    if (!text || mini_buf_puts(config, text) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_image_parse_config(config->data, config->len, cfg, e) < 0)
        return -1;
    ls->n = 1;
    ls->diff_ids = cfg->diff_ids;
    return 0;
}
